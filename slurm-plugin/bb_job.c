/* bb_job: one job's instance record (see bb_job.h); the saved table is
 * bb_job_file.c, one record's fields bb_job_codec.c. */
#include "bb_job.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "persist.h"

static const char *phase_names[] = {
    [PHASE_DEPLOYING] = "deploying", [PHASE_STAGING_IN] = "staging_in",
    [PHASE_RUNNING] = "running", [PHASE_STAGING_OUT] = "staging_out",
    [PHASE_TEARDOWN] = "teardown", [PHASE_COMPLETE] = "complete",
};

const char *bb_phase_name(enum bb_phase phase)
{
    return phase <= PHASE_COMPLETE ? phase_names[phase] : "?";
}

int bb_job_make_secrets(struct bb_job *j)
{
    uint8_t secret[INSTANCE_SECRET_SIZE], key[INSTANCE_SECRET_SIZE];
    int rc = secret_generate(secret);
    if (rc == 0)
        rc = secret_generate(key);
    if (rc == 0) {
        secret_to_hex(secret, j->secret_hex);
        secret_to_hex(key, j->server_key_hex);
    }
    explicit_bzero(secret, sizeof(secret));
    explicit_bzero(key, sizeof(key));
    return rc;
}

struct bb_job *bb_job_find(struct bb_job *head, uint32_t job_id)
{
    for (; head; head = head->next)
        if (head->job_id == job_id)
            return head;
    return NULL;
}

static uint64_t last_key;

void bb_job_keys_above(uint64_t key)
{
    uint64_t seen = __atomic_load_n(&last_key, __ATOMIC_RELAXED);
    while (seen < key &&
           !__atomic_compare_exchange_n(&last_key, &seen, key, false, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
        ;
}

struct bb_job *bb_job_new(uint32_t job_id)
{
    struct bb_job *job = calloc(1, sizeof(*job));
    if (job) {
        job->job_id = job_id;
        job->key = __atomic_add_fetch(&last_key, 1, __ATOMIC_RELAXED);
    }
    return job;
}

void bb_job_free(struct bb_job *job)
{
    if (!job)
        return;
    if (job->calls)
        job->calls->abandon(job->calls);
    for (size_t i = 0; i < job->nnodes; i++) {
        free(job->nodes[i].name);
        free(job->nodes[i].agent_host);
        free(job->nodes[i].storage);
    }
    free(job->nodes);
    bb_request_free(&job->req);
    free(job->user);
    free(job->error);
    free(job->storage);
    free(job->mount);
    free(job->instance_path);
    free(job->unreadable);
    persist_instance_free(job->persist);
    free(job->persist_text);
    for (size_t i = 0; i < job->nfurther; i++)
        free(job->further_text[i]);
    free(job->further_text);
    free(job);
}

void bb_job_remove_key(struct bb_job **head, uint64_t key)
{
    for (struct bb_job **p = head; *p; p = &(*p)->next)
        if ((*p)->key == key) {
            struct bb_job *gone = *p;
            *p = gone->next;
            bb_job_free(gone);
            return;
        }
}

/* Both ways of setting the error (bb_job.h): the formatting once. */
static int put_error(struct bb_job *job, enum bb_failure failure, bool keep_first,
                     const char *fmt, va_list ap)
{
    char *text = NULL;
    if (vasprintf(&text, fmt, ap) < 0)
        return -ENOMEM;
    if (keep_first && job->failure != FAIL_NONE && job->failure != FAIL_CANCELLED) {
        free(text);
        return 0;
    }
    free(job->error);
    job->error = text;
    job->failure = failure;
    return 0;
}

int bb_job_set_error(struct bb_job *job, enum bb_failure failure, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    /* The first failure is the cause; later ones are consequences. */
    int rc = put_error(job, failure, true, fmt, ap);
    va_end(ap);
    return rc;
}

int bb_job_replace_error(struct bb_job *job, enum bb_failure failure, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = put_error(job, failure, false, fmt, ap);
    va_end(ap);
    return rc;
}
