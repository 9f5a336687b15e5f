/* jobnodes: the agent's file of its jobs' node counts (see jobnodes.h). A
 * node runs a handful of jobs: an array under one lock. */
#include "jobnodes.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char file[PATH_MAX];
static struct { uint32_t job, nodes; } *jobs;
static size_t njobs, cap;

static void write_locked(void)
{
    char tmp[PATH_MAX + 16];
    snprintf(tmp, sizeof(tmp), "%s.new", file);
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    FILE *fp = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!fp) {
        log_warn("%s: %s", tmp, strerror(errno));
        if (fd >= 0)
            close(fd);
        return;
    }
    fprintf(fp, "# job nodes (adafs-agentd)\n");
    for (size_t i = 0; i < njobs; i++)
        fprintf(fp, "%u %u\n", jobs[i].job, jobs[i].nodes);
    if (fclose(fp) != 0 || rename(tmp, file) != 0) {
        log_warn("%s: %s", file, strerror(errno));
        unlink(tmp);
    }
}

void jobnodes_init(const char *path)
{
    pthread_mutex_lock(&lock);
    snprintf(file, sizeof(file), "%s", path ? path : "");
    if (file[0])
        write_locked();
    pthread_mutex_unlock(&lock);
}

const char *jobnodes_path(void)
{
    return file[0] ? file : NULL;
}

void jobnodes_set(uint32_t job, uint32_t nodes)
{
    pthread_mutex_lock(&lock);
    if (!file[0]) {
        pthread_mutex_unlock(&lock);
        return;
    }
    size_t i = 0;
    while (i < njobs && jobs[i].job != job)
        i++;
    if (i == njobs) {
        if (njobs == cap) {
            size_t ncap = cap ? 2 * cap : 16;
            void *grown = realloc(jobs, ncap * sizeof(*jobs));
            if (!grown) {
                log_warn("job %u: out of memory for its node count", job);
                pthread_mutex_unlock(&lock);
                return;
            }
            jobs = grown;
            cap = ncap;
        }
        njobs++;
    }
    jobs[i].job = job;
    jobs[i].nodes = nodes ? nodes : 1;
    write_locked();
    pthread_mutex_unlock(&lock);
}

void jobnodes_remove(uint32_t job)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; file[0] && i < njobs; i++)
        if (jobs[i].job == job) {
            jobs[i] = jobs[--njobs];
            write_locked();
            break;
        }
    pthread_mutex_unlock(&lock);
}
