/* slurm_host: loads burst_buffer_adafs.so the way slurmctld does and drives
 * its submit path, inside a process where libslurmfull is loaded first.
 *
 *   slurm_host PLUGIN PARTITION_NODES FITS TOO_BIG
 *
 * slurmctld dlopen()s plugins with RTLD_LAZY into a process that already
 * holds libslurmfull and slurmctld's own symbols, so any name the plugin
 * exports that Slurm also defines binds to Slurm's definition (a plugin's
 * hostlist_push once became Slurm's and died in pthread_mutex_lock). This
 * program is such a process: linked to libslurmfull, exporting the few
 * slurmctld symbols the plugin refers to, it loads the plugin with the
 * burst_buffer.conf next to $SLURM_CONF and submits two requests whose
 * capacity sysmap must judge (AdafsSysmapDB): FITS must be accepted, TOO_BIG
 * refused for the partition's storage. The plugin must export exactly what
 * Slurm looks up (src/common/plugin.c, src/slurmctld/burst_buffer.c). */
#include <dlfcn.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"
#include "src/common/list.h"
#include "src/common/xmalloc.h"
#include "src/slurmctld/job_scheduler.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/node_scheduler.h"
#include "src/slurmctld/slurmctld.h"

#include "tap.h"

/* --- what slurmctld itself defines and the plugin refers to -------------
 * Exported (--export-dynamic) so the plugin binds to them as it would to
 * slurmctld's. None of the jobs here reach them but the data. */
#pragma GCC visibility push(default)
List job_list;
part_record_t *default_part_loc;
time_t last_job_update;

void lock_slurmctld(slurmctld_lock_t lock_levels) {}
void unlock_slurmctld(slurmctld_lock_t lock_levels) {}
job_record_t *find_job_record(uint32_t job_id) { return NULL; }
part_record_t *find_part_record(char *name)
{
    return default_part_loc && strcmp(name, default_part_loc->name) == 0 ? default_part_loc : NULL;
}
void build_cg_bitmap(job_record_t *job_ptr) {}
void deallocate_nodes(job_record_t *job_ptr, bool timeout, bool suspended, bool preempted) {}
int drain_nodes(char *nodes, char *reason, uint32_t reason_uid) { return SLURM_ERROR; }
void job_completion_logger(job_record_t *job_ptr, bool requeue) {}
void prolog_running_decr(job_record_t *job_ptr) {}
void schedule_job_save(void) {}
void schedule_node_save(void) {}
bool validate_operator(uid_t uid) { return uid == 0; }
#pragma GCC visibility pop

/* What src/common/plugin.c and src/slurmctld/burst_buffer.c dlsym(). */
static const char *const looked_up[] = {
    "plugin_name", "plugin_type", "plugin_version", "init", "fini",
    "bb_p_get_system_size", "bb_p_load_state", "bb_p_get_status", "bb_p_state_pack",
    "bb_p_reconfig", "bb_p_job_validate", "bb_p_job_validate2", "bb_p_job_set_tres_cnt",
    "bb_p_job_get_est_start", "bb_p_job_try_stage_in", "bb_p_job_test_stage_in",
    "bb_p_job_begin", "bb_p_job_revoke_alloc", "bb_p_job_start_stage_out",
    "bb_p_job_test_post_run", "bb_p_job_test_stage_out", "bb_p_job_cancel", "bb_p_run_script",
    "bb_p_xlate_bb_2_tres_str",
};

typedef int (*validate_fn)(job_desc_msg_t *job_desc, uid_t submit_uid, char **err_msg);

/* Submits a script of directive lines for one node of the default
 * partition as user nobody; returns the plugin's code and message. */
static int submit_text(validate_fn validate, const char *directives, char **err_msg)
{
    struct passwd *pw = getpwnam("nobody");
    job_desc_msg_t job;
    slurm_init_job_desc_msg(&job);
    job.user_id = pw ? pw->pw_uid : 65534;
    job.group_id = pw ? pw->pw_gid : 65534;
    job.min_nodes = 1;
    char script[512];
    snprintf(script, sizeof(script), "#!/bin/sh\n%strue\n", directives);
    job.script = script;
    *err_msg = NULL;
    int rc = validate(&job, job.user_id, err_msg);
    xfree(job.burst_buffer);
    return rc;
}

/* Submits "#BB_ADAFS capacity=CAPACITY". */
static int submit(validate_fn validate, const char *capacity, char **err_msg)
{
    char line[128];
    snprintf(line, sizeof(line), "#BB_ADAFS capacity=%s\n", capacity);
    return submit_text(validate, line, err_msg);
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: slurm_host PLUGIN PARTITION_NODES FITS TOO_BIG\n");
        return 2;
    }
    void *plugin = dlopen(argv[1], RTLD_LAZY);   /* as plugin_load_from_file() */
    if (!tap_ok(plugin != NULL, "slurmctld's way of loading the plugin works")) {
        printf("# %s\n", dlerror());
        return tap_done();
    }
    size_t missing = 0;
    for (size_t i = 0; i < sizeof(looked_up) / sizeof(looked_up[0]); i++)
        if (!dlsym(plugin, looked_up[i])) {
            printf("# no %s\n", looked_up[i]);
            missing++;
        }
    tap_is_int(missing, 0, "every symbol Slurm looks up is there");
    const uint32_t *version = dlsym(plugin, "plugin_version");
    tap_ok(version && *version == SLURM_VERSION_NUMBER, "built for this Slurm release");

    job_list = list_create(NULL);
    part_record_t part = { .name = "debug", .nodes = argv[2] };
    default_part_loc = &part;
    int (*init)(void) = (int (*)(void))dlsym(plugin, "init");
    int (*fini)(void) = (int (*)(void))dlsym(plugin, "fini");
    validate_fn validate = (validate_fn)dlsym(plugin, "bb_p_job_validate");
    if (!tap_ok(init && fini && validate && init() == SLURM_SUCCESS,
                "init() loads burst_buffer.conf and the sysmap database"))
        return tap_done();

    char *err = NULL;
    int rc = submit(validate, argv[3], &err);
    if (!tap_ok(rc == SLURM_SUCCESS, "a request that fits the partition is accepted"))
        printf("# rc %d: %s\n", rc, err ? err : "(no message)");
    xfree(err);
    rc = submit(validate, argv[4], &err);
    tap_is_int(rc, ESLURM_BURST_BUFFER_LIMIT, "a request above what sysmap counts is refused");
    tap_ok(err && strstr(err, "does not fit") && strstr(err, "partition debug"),
           "naming the partition's storage: %s", err ? err : "(no message)");
    xfree(err);

    /* Persistent instances: what the parser cannot know is checked at
     * submit (burst_buffer.conf here has AdafsPersistentNodes=n[1-2]). */
    rc = submit_text(validate, "#BB_ADAFS capacity=1G\n"
                     "#BB_ADAFS create_persistent name=p capacity=1G nodes=3\n", &err);
    tap_is_int(rc, ESLURM_INVALID_BURST_BUFFER_REQUEST, "nodes= beyond AdafsPersistentNodes is refused");
    tap_ok(err && strstr(err, "line 3") && strstr(err, "nodes=3") &&
           strstr(err, "only 2 persistent node(s)"), "naming line, token and key: %s",
           err ? err : "(no message)");
    xfree(err);
    rc = submit_text(validate, "#BB_ADAFS create_persistent name=p capacity=1G "
                     "access=group:nosuchgroup_adafs\n", &err);
    tap_ok(rc == ESLURM_INVALID_BURST_BUFFER_REQUEST && err &&
           strstr(err, "group:nosuchgroup_adafs: no such group"), "an unknown group is refused: %s",
           err ? err : "(no message)");
    xfree(err);
    rc = submit_text(validate, "#BB_ADAFS use_persistent name=p\n", &err);
    tap_ok(rc == ESLURM_BURST_BUFFER_PERMISSION && err &&
           strstr(err, "(batch script line 2): use_persistent name=p: no such persistent instance"),
           "using an instance that does not exist is refused: %s", err ? err : "(no message)");
    xfree(err);
    rc = submit_text(validate, "#BB_ADAFS capacity=1G access=fuse\n"
                     "#BB_ADAFS use_persistent name=p\n", &err);
    tap_ok(rc == ESLURM_BURST_BUFFER_PERMISSION && err && strstr(err, "line 3") &&
           strstr(err, "a job that mounts several file systems") && strstr(err, "access=preload"),
           "a job file system and an instance through a kernel mount are refused: %s",
           err ? err : "(no message)");
    xfree(err);
    rc = submit_text(validate, "#BB_ADAFS destroy_persistent name=p\n", &err);
    tap_ok(rc == ESLURM_BURST_BUFFER_PERMISSION && err &&
           strstr(err, "destroy_persistent name=p: no such persistent instance"),
           "destroying an instance that does not exist is refused: %s", err ? err : "(no message)");
    xfree(err);

    tap_is_int(fini(), SLURM_SUCCESS, "fini()");
    dlclose(plugin);
    FREE_NULL_LIST(job_list);
    return tap_done();
}
