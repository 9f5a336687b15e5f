/* bb_qos: see bb_qos.h. */
#include "bb_qos.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "qos_proto.h"

static void job_text(FILE *f, const struct qos_status *s, const struct qos_job_status *j)
{
    fprintf(f, "JobId=%u QoS: Policy=%s Nodes=%u Reporting=%u Processes=%u\n", j->job_id, s->policy,
            j->nodes, j->nodes_reporting, j->procs);
    for (int c = 0; c < QOS_NCLASSES; c++) {
        if (!j->usage[c] && j->alloc[c] == QOS_UNLIMITED && !j->asked[c])
            continue;
        char v[4][32];
        qos_value_format(c, j->asked[c], v[0], sizeof(v[0]));
        qos_rate_show(c, j->demand[c], v[1], sizeof(v[1]));
        qos_rate_show(c, j->alloc[c], v[2], sizeof(v[2]));
        qos_rate_show(c, j->usage[c], v[3], sizeof(v[3]));
        fprintf(f, "  %s: Asked=%s Demand=%s Limit=%s Usage=%s (per second, the whole job)\n",
                qos_class_name(c), v[0], v[1], v[2], v[3]);
    }
}

char *bb_qos_text(const char *state_dir, uint32_t job_id)
{
    char path[4200], *data = NULL, *text = NULL;
    size_t len = 0, tlen = 0;
    snprintf(path, sizeof(path), "%s/status", state_dir);
    FILE *f = open_memstream(&text, &tlen);
    if (!f)
        return NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    int rc = fd < 0 ? -errno : fstat(fd, &st) < 0 ? -errno
                                                 : fileio_read_all(fd, (size_t)st.st_size, &data, &len);
    if (fd >= 0)
        close(fd);
    struct qos_status s = { 0 };
    struct rpc_reader r;
    rpc_reader_init(&r, data, len);
    if (rc < 0) {
        fprintf(f, "QoS: no status from adafs-qosd (%s: %s)\n", path, strerror(-rc));
    } else if (rpc_get_u32(&r) != QOS_STATUS_MAGIC || qos_status_get(&r, &s) < 0) {
        fprintf(f, "QoS: %s is not a status of this adafs-qosd\n", path);
    } else {
        long age = (long)(time(NULL) - (time_t)(s.time_ms / 1000));
        if (age * 1000 > 3 * (long)s.period_ms + 2000)
            fprintf(f, "QoS: adafs-qosd's status is %ld s old: it may be down (jobs keep their"
                       " last limits)\n", age);
        int shown = 0;
        for (uint32_t i = 0; i < s.njobs; i++)
            if (!job_id || s.jobs[i].job_id == job_id) {
                job_text(f, &s, &s.jobs[i]);
                shown++;
            }
        if (!shown && job_id)
            fprintf(f, "JobId=%u QoS: not under I/O quality of service (yet)\n", job_id);
    }
    free(s.jobs);
    free(data);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}
