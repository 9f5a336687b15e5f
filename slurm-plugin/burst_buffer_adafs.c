/* burst_buffer_adafs.c: the burst_buffer/adafs plugin's Slurm shim.
 *
 * Only what must touch slurmctld lives here: the bb_p_* entry points, job
 * record fields, locks and packing for scontrol. Parsing and configuration
 * are plain modules (directive.c, bb_config.c) that unit tests call without
 * slurmctld. Symbols such as info() and xmalloc() resolve against slurmctld
 * when it loads us: the plugin does not link libslurmfull.
 *
 * Slurm 22.05 only knows a job's nodes in bb_p_job_begin(), while adafs lives
 * on those very nodes. So nothing is staged before allocation:
 * bb_p_job_test_stage_in() reports "complete" at once, and deployment and
 * stage-in happen from bb_p_job_begin(), holding the job in CONFIGURING. */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"
#include "src/common/log.h"
#include "src/common/pack.h"
#include "src/common/read_config.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/job_scheduler.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#include "bb_config.h"
#include "directive.h"

const char plugin_name[] = "burst_buffer adafs plugin";
const char plugin_type[] = "burst_buffer/adafs";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

static pthread_mutex_t bb_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct bb_config config;
static time_t config_loaded;

/* Loads burst_buffer.conf; on error keeps the previous configuration (at
 * init: refuses to start), so a typo never runs with silent defaults. */
static int load_config(bool at_init)
{
    char *path = get_extra_conf_path("burst_buffer.conf");
    char err[1024];
    struct bb_config fresh;
    int rc = bb_config_load(path, &fresh, err, sizeof(err));
    if (rc < 0) {
        error("%s: %s", plugin_type, err);
        bb_config_free(&fresh);
        xfree(path);
        return at_init ? SLURM_ERROR : SLURM_SUCCESS;
    }
    if (rc == 1)
        info("%s: %s not found, using built-in defaults", plugin_type, path);
    slurm_mutex_lock(&bb_mutex);
    bb_config_free(&config);
    config = fresh;
    config_loaded = time(NULL);
    slurm_mutex_unlock(&bb_mutex);
    xfree(path);
    return SLURM_SUCCESS;
}

extern int init(void)
{
    if (load_config(true) != SLURM_SUCCESS)
        return SLURM_ERROR;
    info("%s: init: adafs %s, directive #%s, chunk %"PRIu64" bytes, agents on port %s%d",
         plugin_type, PACKAGE_VERSION_ADAFS, config.directive, config.chunk_size,
         config.agent_port_offset ? "slurmd+" : "",
         config.agent_port_offset ? config.agent_port_offset : config.agent_port);
    return SLURM_SUCCESS;
}

extern int fini(void)
{
    slurm_mutex_lock(&bb_mutex);
    bb_config_free(&config);
    slurm_mutex_unlock(&bb_mutex);
    return SLURM_SUCCESS;
}

extern uint64_t bb_p_get_system_size(void)
{
    return config.total_capacity / (1024 * 1024);   /* in MB, as Slurm expects */
}

extern int bb_p_load_state(bool init_config)
{
    return SLURM_SUCCESS;
}

extern char *bb_p_get_status(uint32_t argc, char **argv)
{
    char *status = NULL;
    xstrfmtcat(status, "%s: no instances\n", plugin_type);
    return status;
}

extern int bb_p_reconfig(void)
{
    return load_config(false);
}

/* The layout scontrol's unpacking of a burst buffer plugin's state expects:
 * name, configuration, buffers, usage. adafs has one implicit pool. */
extern int bb_p_state_pack(uid_t uid, buf_t *buffer, uint16_t protocol_version)
{
    uint32_t flags = 0;
    slurm_mutex_lock(&bb_mutex);
    if (config.flags & BBCONF_PRIVATE_DATA)
        flags |= BB_FLAG_PRIVATE_DATA;
    if (config.flags & BBCONF_TEARDOWN_FAILURE)
        flags |= BB_FLAG_TEARDOWN_FAILURE;
    packstr("adafs", buffer);
    packstr(config.allow_users_str, buffer);
    packstr(NULL, buffer);                      /* create_buffer */
    packstr(NULL, buffer);                      /* default_pool */
    packstr(config.deny_users_str, buffer);
    packstr(NULL, buffer);                      /* destroy_buffer */
    pack32(flags, buffer);
    packstr(NULL, buffer);                      /* get_sys_state */
    packstr(NULL, buffer);                      /* get_sys_status */
    pack64(config.chunk_size, buffer);          /* granularity */
    pack32(0, buffer);                          /* pool count */
    pack32(config.other_timeout, buffer);
    packstr(NULL, buffer);                      /* start_stage_in */
    packstr(NULL, buffer);                      /* start_stage_out */
    packstr(NULL, buffer);                      /* stop_stage_in */
    packstr(NULL, buffer);                      /* stop_stage_out */
    pack32(config.stage_in_timeout, buffer);
    pack32(config.stage_out_timeout, buffer);
    pack64(config.total_capacity, buffer);      /* total_space */
    pack64(0, buffer);                          /* unfree_space */
    pack64(0, buffer);                          /* used_space */
    pack32(config.other_timeout, buffer);       /* validate_timeout */
    pack32(0, buffer);                          /* buffer records */
    pack32(0, buffer);                          /* usage records */
    slurm_mutex_unlock(&bb_mutex);
    return SLURM_SUCCESS;
}

/* At submit: reject malformed directives with a message naming the token;
 * replace the job's burst_buffer text with the canonical form. */
extern int bb_p_job_validate(job_desc_msg_t *job_desc, uid_t submit_uid, char **err_msg)
{
    struct bb_request req = { 0 };
    char err[1024];

    slurm_mutex_lock(&bb_mutex);
    char *prefix = xstrdup(config.directive);
    slurm_mutex_unlock(&bb_mutex);

    int found = directive_parse(prefix, job_desc->script, job_desc->burst_buffer,
                                &req, err, sizeof(err));
    int rc = SLURM_SUCCESS;
    if (found < 0) {
        *err_msg = xstrdup(err);
        rc = ESLURM_INVALID_BURST_BUFFER_REQUEST;
        goto out;
    }
    if (found == 0) {
        if (job_desc->burst_buffer && job_desc->burst_buffer[0]) {
            *err_msg = xstrdup_printf("--bb given without a #%s request", prefix);
            rc = ESLURM_INVALID_BURST_BUFFER_REQUEST;
        }
        goto out;
    }
    if (job_desc->user_id == 0) {
        *err_msg = xstrdup("user root can not use adafs burst buffers: submit as the job's user");
        rc = ESLURM_BURST_BUFFER_PERMISSION;
        goto out;
    }
    slurm_mutex_lock(&bb_mutex);
    if (bb_config_check_user(&config, job_desc->user_id, err, sizeof(err)) < 0) {
        *err_msg = xstrdup(err);
        rc = ESLURM_BURST_BUFFER_PERMISSION;
    }
    slurm_mutex_unlock(&bb_mutex);
    if (rc != SLURM_SUCCESS)
        goto out;

    char *canonical = bb_request_format(prefix, &req);
    if (!canonical) {
        *err_msg = xstrdup("out of memory formatting the burst buffer request");
        rc = ESLURM_INVALID_BURST_BUFFER_REQUEST;
        goto out;
    }
    xfree(job_desc->burst_buffer);
    job_desc->burst_buffer = xstrdup(canonical);
    free(canonical);
    debug("%s: accepted request for uid %u:\n%s", plugin_type, job_desc->user_id,
          job_desc->burst_buffer);
out:
    bb_request_free(&req);
    xfree(prefix);
    return rc;
}

extern int bb_p_job_validate2(job_record_t *job_ptr, char **err_msg)
{
    return SLURM_SUCCESS;
}

extern void bb_p_job_set_tres_cnt(job_record_t *job_ptr, uint64_t *tres_cnt, bool locked)
{
}

extern time_t bb_p_job_get_est_start(job_record_t *job_ptr)
{
    return time(NULL);
}

extern int bb_p_job_try_stage_in(List job_queue)
{
    return SLURM_SUCCESS;
}

/* Nothing can be staged before the nodes are known: see the file comment. */
extern int bb_p_job_test_stage_in(job_record_t *job_ptr, bool test_only)
{
    return 1;
}

extern int bb_p_job_begin(job_record_t *job_ptr)
{
    if (!job_ptr->burst_buffer || !job_ptr->burst_buffer[0])
        return SLURM_SUCCESS;
    info("%s: %pJ begins on %s", plugin_type, job_ptr,
         job_ptr->job_resrcs ? job_ptr->job_resrcs->nodes : "?");
    return SLURM_SUCCESS;
}

extern int bb_p_job_revoke_alloc(job_record_t *job_ptr)
{
    return SLURM_SUCCESS;
}

extern int bb_p_job_start_stage_out(job_record_t *job_ptr)
{
    return SLURM_SUCCESS;
}

extern int bb_p_job_test_post_run(job_record_t *job_ptr)
{
    return 1;
}

extern int bb_p_job_test_stage_out(job_record_t *job_ptr)
{
    return 1;
}

extern int bb_p_job_cancel(job_record_t *job_ptr)
{
    return SLURM_SUCCESS;
}

extern int bb_p_run_script(char *func, uint32_t job_id, uint32_t argc, char **argv,
                           char **resp_msg)
{
    *resp_msg = xstrdup_printf("%s: scripts are not supported", plugin_type);
    return SLURM_ERROR;
}

extern char *bb_p_xlate_bb_2_tres_str(char *burst_buffer)
{
    return NULL;
}
