/* adafs-persist: creates, destroys and lists adafs persistent instances for
 * an administrator (doc/man/adafs-persist.8.md).
 *
 *   adafs-persist create name=NAME capacity=SIZE [nodes=N] [access=user|group:GROUP]
 *                 [fair_share=POLICY] --owner USER [--partition P] [--wait SECONDS]
 *   adafs-persist destroy name=NAME [--partition P] [--wait SECONDS]
 *   adafs-persist list
 *
 * create and destroy submit, as the instance's owner, a one-node job whose
 * burst buffer request is the line (persist_admin.h says why), wait for it
 * and say how it ended: done, or the reason the plugin held it (the job is
 * then cancelled: nothing is left queued). Only root may (Slurm lets only
 * root or SlurmUser submit for another user). list prints the instances of
 * scontrol show burst. */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "agent_proto.h"
#include "persist_admin.h"
#include "size.h"

#define PROG "adafs-persist"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: " PROG " create name=NAME capacity=SIZE [nodes=N] [access=user|group:GROUP]\n"
            "                     [fair_share=POLICY] --owner USER [--partition PARTITION]\n"
            "                     [--wait SECONDS]\n"
            "       " PROG " destroy name=NAME [--partition PARTITION] [--wait SECONDS]\n"
            "       " PROG " list\n"
            "       " PROG " --help\n");
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, PROG ": ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

/* A usage error: named, exit status 2 (the man page's EXIT STATUS). */
static void usage_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void usage_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, PROG ": ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

/* The persistent instances in slurmctld's answer to scontrol show burst:
 * the adafs plugin's buffers that have a name. */
struct listing {
    burst_buffer_info_msg_t *msg;
};

static void list_load(struct listing *l)
{
    if (slurm_load_burst_buffer_info(&l->msg) != SLURM_SUCCESS)
        die("cannot ask slurmctld for its burst buffers: %s", slurm_strerror(slurm_get_errno()));
}

static const burst_buffer_resv_t *list_find(const struct listing *l, const char *name)
{
    for (uint32_t i = 0; l->msg && i < l->msg->record_count; i++) {
        const burst_buffer_info_t *bb = &l->msg->burst_buffer_array[i];
        if (!bb->name || strcmp(bb->name, "adafs") != 0)
            continue;
        for (uint32_t k = 0; k < bb->buffer_count; k++) {
            const burst_buffer_resv_t *r = &bb->burst_buffer_resv_ptr[k];
            if (r->name && (!name || strcmp(r->name, name) == 0))
                return r;
        }
    }
    return NULL;
}

static void print_instance(FILE *out, const burst_buffer_resv_t *r)
{
    struct passwd *pw = getpwuid(r->user_id);
    char created[32] = "?";
    struct tm tm;
    if (r->create_time && localtime_r(&r->create_time, &tm))
        strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%S", &tm);
    /* The plugin puts what its servers hold and their fair-share policy
     * in the pool field: persistent(used=SIZE,fair_share=POLICY). */
    const char *used = r->pool && strncmp(r->pool, "persistent(used=", 16) == 0 ? r->pool + 16 : "?";
    const char *fair = strstr(used, ",fair_share=");
    fair = fair ? fair + 12 : "?";
    char capacity[32];   /* in the unit of USED and of the create line */
    size_format(r->size, capacity, sizeof(capacity));
    fprintf(out, "%-20s %-12s %-10s %-10.*s %-15.*s %s\n", r->name, pw ? pw->pw_name : "?",
            capacity, (int)strcspn(used, ",)"), used, (int)strcspn(fair, ",)"), fair, created);
}

static int cmd_list(void)
{
    struct listing l = { 0 };
    list_load(&l);
    printf("%-20s %-12s %-10s %-10s %-15s %s\n", "NAME", "OWNER", "CAPACITY", "USED", "FAIR_SHARE",
           "CREATED");
    for (uint32_t i = 0; l.msg && i < l.msg->record_count; i++) {
        const burst_buffer_info_t *bb = &l.msg->burst_buffer_array[i];
        for (uint32_t k = 0; bb->name && strcmp(bb->name, "adafs") == 0 && k < bb->buffer_count; k++)
            if (bb->burst_buffer_resv_ptr[k].name)
                print_instance(stdout, &bb->burst_buffer_resv_ptr[k]);
    }
    slurm_free_burst_buffer_info_msg(l.msg);
    return 0;
}

static const char *state_name(uint32_t state)
{
    switch (state & JOB_STATE_BASE) {
    case JOB_PENDING: return "PENDING";
    case JOB_RUNNING: return "RUNNING";
    case JOB_SUSPENDED: return "SUSPENDED";
    case JOB_COMPLETE: return "COMPLETED";
    case JOB_CANCELLED: return "CANCELLED";
    case JOB_FAILED: return "FAILED";
    case JOB_TIMEOUT: return "TIMEOUT";
    case JOB_NODE_FAIL: return "NODE_FAIL";
    case JOB_PREEMPTED: return "PREEMPTED";
    case JOB_BOOT_FAIL: return "BOOT_FAIL";
    case JOB_DEADLINE: return "DEADLINE";
    case JOB_OOM: return "OUT_OF_MEMORY";
    default: return "?";
    }
}

/* Submits the job that carries the request bb, as uid:gid. */
static uint32_t submit(const char *what, const char *bb, uid_t uid, gid_t gid, const char *partition)
{
    char script[600];
    snprintf(script, sizeof(script), "#!/bin/sh\n# " PROG ": %s (the request is in --bb)\ntrue\n",
             bb);
    char *env[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
    job_desc_msg_t d;
    slurm_init_job_desc_msg(&d);
    d.name = (char *)what;
    d.script = script;
    d.burst_buffer = (char *)bb;
    d.user_id = uid;
    d.group_id = gid;
    d.min_nodes = d.max_nodes = 1;
    d.time_limit = 1;
    d.work_dir = "/";
    d.std_out = d.std_err = "/dev/null";
    d.environment = env;
    d.env_size = 1;
    d.partition = (char *)partition;
    submit_response_msg_t *resp = NULL;
    /* A refusal by the plugin comes with its message, which libslurm
     * prints as an error line before we name the code. */
    if (slurm_submit_batch_job(&d, &resp) != SLURM_SUCCESS || !resp)
        die("the job was refused: %s", slurm_strerror(slurm_get_errno()));
    uint32_t id = resp->job_id;
    slurm_free_submit_response_response_msg(resp);
    return id;
}

/* Waits for job id to end: 0 when it completed; 1 (the reason printed)
 * when it failed, was held (then cancelled) or did not end in wait_s. */
static int await(uint32_t id, int wait_s)
{
    time_t deadline = time(NULL) + wait_s;
    char last[1024] = "";
    for (;;) {
        job_info_msg_t *msg = NULL;
        if (slurm_load_job(&msg, id, SHOW_ALL) != SLURM_SUCCESS) {
            int e = slurm_get_errno();
            if (e == ESLURM_INVALID_JOB_ID)
                return 0;   /* ended and purged already (MinJobAge): the caller checks */
            fprintf(stderr, PROG ": job %u: cannot ask slurmctld: %s (trying again)\n", id,
                    slurm_strerror(e));
        } else if (msg->record_count > 0) {
            const slurm_job_info_t *j = &msg->job_array[0];
            uint32_t state = j->job_state & JOB_STATE_BASE;
            snprintf(last, sizeof(last), "%s%s%s", state_name(j->job_state),
                     j->state_desc ? ": " : "", j->state_desc ? j->state_desc : "");
            bool held = state == JOB_PENDING && j->priority == 0;
            bool failed = state > JOB_COMPLETE;
            slurm_free_job_info_msg(msg);
            if (state == JOB_COMPLETE)
                return 0;
            if (held) {
                fprintf(stderr, PROG ": job %u was held: %s\n", id, last);
                if (slurm_kill_job(id, SIGKILL, 0) == SLURM_SUCCESS)
                    fprintf(stderr, PROG ": job %u cancelled\n", id);
                return 1;
            }
            if (failed) {
                fprintf(stderr, PROG ": job %u ended %s\n", id, last);
                return 1;
            }
        } else {
            slurm_free_job_info_msg(msg);
        }
        if (time(NULL) >= deadline) {
            fprintf(stderr, PROG ": job %u has not ended in %d s (%s): it stays queued; see "
                    "scontrol show job %u\n", id, wait_s, last[0] ? last : "?", id);
            return 1;
        }
        usleep(500 * 1000);
    }
}

static void need_root(const char *cmd)
{
    if (geteuid() != 0)
        die("%s: only root may %s instances here (it submits the job as the instance's "
            "owner); a user does it in a job of their own with a create_persistent or "
            "destroy_persistent burst buffer line", cmd, cmd);
}

int main(int argc, char **argv)
{
    const char *owner = NULL, *partition = NULL;
    int wait_s = 600;
    static const struct option opts[] = {
        { "owner", required_argument, NULL, 'o' }, { "partition", required_argument, NULL, 'p' },
        { "wait", required_argument, NULL, 'w' }, { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'o': owner = optarg; break;
        case 'p': partition = optarg; break;
        case 'w': {
            char *end;
            long s = strtol(optarg, &end, 10);
            if (*end || end == optarg || s < 1 || s > 86400)
                usage_die("--wait %s: expected seconds in 1..86400", optarg);
            wait_s = (int)s;
            break;
        }
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[optind];
    char **words = argv + optind + 1;
    size_t nwords = (size_t)(argc - optind - 1);
    bool create = strcmp(cmd, "create") == 0;
    if (strcmp(cmd, "list") == 0) {
        if (nwords || owner)
            usage_die("list takes no arguments");
        slurm_init(NULL);
        return cmd_list();
    }
    if (!create && strcmp(cmd, "destroy") != 0) {
        usage(stderr);
        usage_die("'%s' is not create, destroy or list", cmd);
    }
    need_root(cmd);
    char bb[512], name[AGENT_PERSIST_NAME_MAX + 1], err[512];
    if (persist_admin_request(create, nwords, words, bb, sizeof(bb), name, sizeof(name), err,
                              sizeof(err)) < 0)
        usage_die("%s", err);
    if (create != (owner != NULL))
        usage_die(create ? "create needs --owner USER: the instance is that user's"
                   : "destroy takes no --owner: the instance's owner destroys it");
    slurm_init(NULL);
    struct listing l = { 0 };
    list_load(&l);
    const burst_buffer_resv_t *found = list_find(&l, name);
    uid_t uid;
    if (create) {
        if (found)
            die("%s exists already", name);
        struct passwd *pw = getpwnam(owner);
        char *end;
        unsigned long n = strtoul(owner, &end, 10);
        if (!pw && !*end && end != owner)
            pw = getpwuid((uid_t)n);
        if (!pw)
            die("--owner %s: no such user", owner);
        uid = pw->pw_uid;
    } else {
        if (!found)
            die("%s: no such persistent instance", name);
        uid = found->user_id;
    }
    slurm_free_burst_buffer_info_msg(l.msg);
    struct passwd *pw = getpwuid(uid);
    if (!pw)
        die("uid %u: no such user on this host", (unsigned)uid);
    if (uid == 0)
        die("root can not own an adafs instance: name another user");
    char user[64];
    snprintf(user, sizeof(user), "%s", pw->pw_name);
    uint32_t id = submit(create ? "adafs-persist-create" : "adafs-persist-destroy", bb, uid,
                         pw->pw_gid, partition);
    printf(PROG ": job %u, as %s: %s\n", id, user, bb);
    fflush(stdout);
    if (await(id, wait_s) != 0)
        return 1;
    l.msg = NULL;
    list_load(&l);
    found = list_find(&l, name);
    int rc = 0;
    if (create && found) {
        printf(PROG ": created %s:\n", name);
        print_instance(stdout, found);
    } else if (!create && !found) {
        printf(PROG ": destroyed %s\n", name);
    } else {
        fprintf(stderr, PROG ": job %u ended, but %s is %s\n", id, name,
                create ? "not listed" : "still listed");
        rc = 1;
    }
    slurm_free_burst_buffer_info_msg(l.msg);
    return rc;
}
