#include "bb_config.h"

#include "conf.h"
#include "directive.h"
#include "size.h"
#include "stageout_bounds.h"

#include <stdbool.h>
#include <stddef.h>
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum value_kind { V_SECONDS, V_SIZE, V_PORT, V_INT, V_PERCENT, V_RATE, V_STRING, V_BOOL,
                  V_USERS, V_FLAGS, V_HOSTLIST };

struct key_spec {
    const char *name;
    enum value_kind kind;
    size_t offset;
};

#define KEY(name, kind, field) { name, kind, offsetof(struct bb_config, field) }

static const struct key_spec keys[] = {
    KEY("AllowUsers", V_USERS, allow_users),
    KEY("DenyUsers", V_USERS, deny_users),
    KEY("StageInTimeout", V_SECONDS, stage_in_timeout),
    KEY("StageOutTimeout", V_SECONDS, stage_out_timeout),
    KEY("OtherTimeout", V_SECONDS, other_timeout),
    KEY("Directive", V_STRING, directive),
    KEY("Flags", V_FLAGS, flags),
    KEY("AdafsChunkSize", V_SIZE, chunk_size),
    KEY("AdafsDefaultCapacity", V_SIZE, default_capacity),
    KEY("AdafsNodeCapacity", V_SIZE, node_capacity),
    KEY("AdafsTotalCapacity", V_SIZE, total_capacity),
    KEY("AdafsStoragePath", V_STRING, storage_path),
    KEY("AdafsSysmapDB", V_STRING, sysmap_db),
    KEY("AdafsAgentPort", V_PORT, agent_port),
    KEY("AdafsAgentPortOffset", V_INT, agent_port_offset),
    KEY("AdafsStateDir", V_STRING, state_dir),
    KEY("AdafsServerTimeout", V_SECONDS, server_timeout_ms),
    KEY("AdafsStageOutKeep", V_SECONDS, stage_out_keep),
    KEY("AdafsStageOutRetry", V_SECONDS, stage_out_retry),
    KEY("AdafsStageThreads", V_INT, stage_threads),
    KEY("AdafsStageThreadsPerCpu", V_INT, stage_threads_per_cpu),
    KEY("AdafsMaxMetadataRate", V_SIZE, max_mdops),
    KEY("AdafsMaxBandwidth", V_SIZE, max_bandwidth),
    KEY("AdafsMungeSocket", V_STRING, munge_socket),
    KEY("AdafsPreload", V_STRING, preload),
    KEY("AdafsAccess", V_STRING, access_text),
    KEY("AdafsMountPrefix", V_STRING, mount_prefix),
    KEY("AdafsWalltimeModel", V_STRING, walltime_model),
    KEY("AdafsWalltimeSetTimeMin", V_BOOL, walltime_set_time_min),
    KEY("AdafsWalltimeMargin", V_PERCENT, walltime_margin),
    KEY("AdafsWalltimeMissRate", V_RATE, walltime_miss_rate),
    KEY("AdafsWalltimeComment", V_STRING, walltime_comment),
    KEY("AdafsPersistentNodes", V_HOSTLIST, persistent_nodes_str),
    KEY("AdafsWalltimeLearnInterval", V_SECONDS, walltime_learn_interval),
};

static void set_defaults(struct bb_config *cfg)
{
    *cfg = (struct bb_config){
        .stage_in_timeout = 86400,
        .stage_out_timeout = STAGEOUT_TIMEOUT_DEFAULT_S,
        .other_timeout = 300,
        .directive = strdup(DIRECTIVE_DEFAULT_PREFIX),
        .chunk_size = 512 << 10,
        .default_capacity = 1ULL << 30,
        .node_capacity = 100ULL << 30,
        .storage_path = strdup("/var/lib/adafs"),
        .preload = strdup(ADAFS_PKGLIBDIR "/libadafs_preload.so"),
        .mount_prefix = strdup("/adafs"),
        .access_text = strdup("both"),
        .access = BB_ACCESS_BOTH,
        .walltime_comment = strdup("admin_comment"),
        .agent_port = 6830,
        .server_timeout_ms = 10000,
        .stage_out_keep = STAGEOUT_KEEP_DEFAULT_S,
        .stage_out_retry = 60,
        .stage_threads = 8,
        .stage_threads_per_cpu = 2,
        .walltime_margin = 10,
        .walltime_miss_rate = 0.05,
        .walltime_learn_interval = 30,
    };
    qos_conf_defaults(&cfg->qos);
}

bool bb_config_munge_socket_changed(const char *in_use, const struct bb_config *cfg)
{
    return cfg->munge_socket ? !in_use || strcmp(cfg->munge_socket, in_use) != 0
                             : in_use != NULL;
}

uint64_t bb_config_release_needed_s(const struct bb_config *cfg)
{
    uint64_t keep = cfg->flags & BBCONF_TEARDOWN_FAILURE ? 0 : cfg->stage_out_keep;
    return (uint64_t)cfg->stage_out_timeout + keep + STAGEOUT_RELEASE_SLACK_S;
}

uint32_t bb_stage_threads(const struct bb_config *cfg, unsigned cpus)
{
    uint32_t most = cfg->stage_threads ? cfg->stage_threads : 1;
    if (!cfg->stage_threads_per_cpu || !cpus)
        return most;
    uint64_t t = (uint64_t)cfg->stage_threads_per_cpu * cpus;
    return t < most ? (uint32_t)t : most;
}

static int parse_users(const char *text, uid_t **out, size_t *count,
                       char *bad, size_t badlen)
{
    char *copy = strdup(text), *save = NULL;
    if (!copy)
        return -ENOMEM;
    for (char *name = strtok_r(copy, ",:", &save); name; name = strtok_r(NULL, ",:", &save)) {
        uid_t uid;
        char *end;
        unsigned long n = strtoul(name, &end, 10);
        if (*name && !*end && n <= UINT_MAX) {
            uid = (uid_t)n;
        } else {
            struct passwd pw, *found = NULL;
            char buf[4096];
            if (getpwnam_r(name, &pw, buf, sizeof(buf), &found) != 0 || !found) {
                snprintf(bad, badlen, "%s", name);
                free(copy);
                return -ENOENT;
            }
            uid = found->pw_uid;
        }
        uid_t *grown = realloc(*out, (*count + 1) * sizeof(uid_t));
        if (!grown) {
            free(copy);
            return -ENOMEM;
        }
        *out = grown;
        (*out)[(*count)++] = uid;
    }
    free(copy);
    return 0;
}

static int parse_flags(const char *text, uint32_t *flags, char *bad, size_t badlen)
{
    char *copy = strdup(text), *save = NULL;
    if (!copy)
        return -ENOMEM;
    *flags = 0;
    for (char *f = strtok_r(copy, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
        if (strcasecmp(f, "PrivateData") == 0)
            *flags |= BBCONF_PRIVATE_DATA;
        else if (strcasecmp(f, "TeardownFailure") == 0)
            *flags |= BBCONF_TEARDOWN_FAILURE;
        else {
            snprintf(bad, badlen, "%s", f);
            free(copy);
            return -EINVAL;
        }
    }
    free(copy);
    return 0;
}

static int parse_uint(const char *text, unsigned long long max, unsigned long long *out)
{
    uint64_t n;
    if (count_parse(text, &n) < 0 || n > max)
        return -EINVAL;
    *out = n;
    return 0;
}

/* A share in percent, "5", "2.5" or "5%": more than 0, at most 50. */
static int parse_rate(const char *text, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (*end == '%')
        end++;
    if (errno || end == text || *end || !(v > 0 && v <= 50))
        return -EINVAL;
    *out = v / 100;
    return 0;
}

static int set_value(struct bb_config *cfg, const struct key_spec *k,
                     const struct conf_entry *e, char *err, size_t errlen,
                     const char *path)
{
    char *field = (char *)cfg + k->offset;
    unsigned long long n;
    char bad[256] = "";
    int rc = 0;

    switch (k->kind) {
    case V_SECONDS:
        rc = parse_uint(e->value, UINT32_MAX, &n);
        if (!rc && strcmp(k->name, "AdafsServerTimeout") == 0)
            n *= 1000;   /* stored in milliseconds, written in seconds */
        if (!rc)
            *(uint32_t *)field = (uint32_t)n;
        break;
    case V_PERCENT:
        rc = parse_uint(e->value, 1000, &n);
        if (!rc)
            *(uint32_t *)field = (uint32_t)n;
        break;
    case V_RATE:
        rc = parse_rate(e->value, (double *)field);
        break;
    case V_INT:
        rc = parse_uint(e->value, 65535, &n);
        if (!rc && strncmp(k->name, "AdafsStageThreads", 17) == 0)
            *(uint32_t *)field = (uint32_t)n;
        else if (!rc)
            *(int *)field = (int)n;
        break;
    case V_PORT:
        rc = parse_uint(e->value, 65535, &n);
        if (!rc && n == 0)
            rc = -EINVAL;
        if (!rc)
            *(uint16_t *)field = (uint16_t)n;
        break;
    case V_SIZE: {
        uint64_t size;
        rc = size_parse(e->value, &size);
        if (!rc)
            *(uint64_t *)field = size;
        break;
    }
    case V_BOOL:
        if (strcasecmp(e->value, "yes") == 0 || strcmp(e->value, "1") == 0)
            *(int *)field = 1;
        else if (strcasecmp(e->value, "no") == 0 || strcmp(e->value, "0") == 0)
            *(int *)field = 0;
        else
            rc = -EINVAL;
        break;
    case V_STRING: {
        char *copy = strdup(e->value);
        if (!copy)
            return -1;
        free(*(char **)field);
        *(char **)field = copy;
        break;
    }
    case V_USERS: {
        bool allow = k->offset == offsetof(struct bb_config, allow_users);
        rc = parse_users(e->value, allow ? &cfg->allow_users : &cfg->deny_users,
                         allow ? &cfg->allow_count : &cfg->deny_count, bad, sizeof(bad));
        char **str = allow ? &cfg->allow_users_str : &cfg->deny_users_str;
        free(*str);
        *str = strdup(e->value);
        if (rc == -ENOENT) {
            snprintf(err, errlen, "%s line %d: %s: no such user '%s'", path, e->line, k->name, bad);
            return -1;
        }
        break;
    }
    case V_HOSTLIST: {
        struct hostlist hl = { 0 };
        char why[256];
        if (hostlist_expand(e->value, &hl, why, sizeof(why)) < 0) {
            snprintf(err, errlen, "%s line %d: %s=%s: %s", path, e->line, k->name, e->value, why);
            return -1;
        }
        char *copy = strdup(e->value);
        if (!copy) {
            hostlist_free(&hl);
            return -1;
        }
        hostlist_free(&cfg->persistent_nodes);
        free(cfg->persistent_nodes_str);
        cfg->persistent_nodes = hl;
        cfg->persistent_nodes_str = copy;
        break;
    }
    case V_FLAGS:
        rc = parse_flags(e->value, &cfg->flags, bad, sizeof(bad));
        if (rc == -EINVAL) {
            snprintf(err, errlen, "%s line %d: Flags: unknown flag '%s' (known: PrivateData, TeardownFailure)",
                     path, e->line, bad);
            return -1;
        }
        break;
    }
    if (rc) {
        snprintf(err, errlen, "%s line %d: invalid value '%s' for %s", path, e->line,
                 e->value, k->name);
        return -1;
    }
    return 0;
}

/* Where a key was last set, for a check made once the whole file is read
 * (0 when only its default is wrong, which a default never is). */
static int line_of(const struct conf *conf, const char *key)
{
    int line = 0;
    for (size_t i = 0; i < conf->count; i++)
        if (strcasecmp(conf->entries[i].key, key) == 0)
            line = conf->entries[i].line;
    return line;
}

static const char *value_of(const struct conf *conf, const char *key)
{
    const char *value = "(default)";
    for (size_t i = 0; i < conf->count; i++)
        if (strcasecmp(conf->entries[i].key, key) == 0)
            value = conf->entries[i].value;
    return value;
}

int bb_config_load(const char *path, struct bb_config *cfg, char *err, size_t errlen)
{
    set_defaults(cfg);
    struct conf conf;
    int rc = conf_load(path, &conf, err, errlen);
    if (rc == -ENOENT)
        return 1;
    if (rc)
        return -1;

    for (size_t i = 0; i < conf.count && rc == 0; i++) {
        const struct conf_entry *e = &conf.entries[i];
        const struct key_spec *k = NULL;
        for (size_t j = 0; j < sizeof(keys) / sizeof(keys[0]); j++)
            if (strcasecmp(e->key, keys[j].name) == 0)
                k = &keys[j];
        char why[600];
        int qos = k ? 0 : qos_conf_set(&cfg->qos, e->key, e->value, why, sizeof(why));
        if (qos < 0) {
            snprintf(err, errlen, "%s line %d: %s", path, e->line, why);
            rc = -1;
        } else if (qos > 0) {
            continue;
        } else if (!k) {
            snprintf(err, errlen, "%s line %d: unknown key '%s'", path, e->line, e->key);
            rc = -1;
        } else {
            rc = set_value(cfg, k, e, err, errlen, path);
        }
    }
    if (rc == 0 && (cfg->chunk_size < DIRECTIVE_MIN_CHUNK || cfg->chunk_size > DIRECTIVE_MAX_CHUNK ||
                    (cfg->chunk_size & (cfg->chunk_size - 1)))) {
        snprintf(err, errlen, "%s line %d: AdafsChunkSize=%s must be a power of two between 4K "
                 "and 64M", path, line_of(&conf, "AdafsChunkSize"),
                 value_of(&conf, "AdafsChunkSize"));
        rc = -1;
    }
    if (rc == 0 && (cfg->mount_prefix[0] != '/' || cfg->storage_path[0] != '/')) {
        const char *key = cfg->mount_prefix[0] != '/' ? "AdafsMountPrefix" : "AdafsStoragePath";
        snprintf(err, errlen, "%s line %d: %s=%s must be an absolute path", path,
                 line_of(&conf, key), key, value_of(&conf, key));
        rc = -1;
    }
    if (rc == 0 && strcmp(cfg->walltime_comment, "admin_comment") != 0 &&
        strcmp(cfg->walltime_comment, "comment") != 0 && strcmp(cfg->walltime_comment, "none") != 0) {
        snprintf(err, errlen, "%s line %d: AdafsWalltimeComment=%s must be admin_comment, comment "
                 "or none", path, line_of(&conf, "AdafsWalltimeComment"), cfg->walltime_comment);
        rc = -1;
    }
    if (rc == 0 && cfg->walltime_learn_interval == 0) {
        snprintf(err, errlen, "%s line %d: AdafsWalltimeLearnInterval must be at least 1 second",
                 path, line_of(&conf, "AdafsWalltimeLearnInterval"));
        rc = -1;
    }
    if (rc == 0 && !(cfg->access = bb_access_parse(cfg->access_text))) {
        snprintf(err, errlen, "%s line %d: AdafsAccess=%s: expected preload, fuse or both", path,
                 line_of(&conf, "AdafsAccess"), cfg->access_text);
        rc = -1;
    }
    if (rc == 0 && (!cfg->directive[0] || cfg->directive[strcspn(cfg->directive, " \t#")])) {
        snprintf(err, errlen, "%s line %d: Directive='%s' must be one word without '#'", path,
                 line_of(&conf, "Directive"), cfg->directive);
        rc = -1;
    }
    conf_free(&conf);
    return rc;
}

void bb_config_free(struct bb_config *cfg)
{
    free(cfg->allow_users);
    free(cfg->deny_users);
    free(cfg->allow_users_str);
    free(cfg->deny_users_str);
    free(cfg->directive);
    free(cfg->storage_path);
    free(cfg->sysmap_db);
    free(cfg->state_dir);
    free(cfg->munge_socket);
    free(cfg->preload);
    free(cfg->access_text);
    free(cfg->mount_prefix);
    free(cfg->walltime_model);
    free(cfg->walltime_comment);
    qos_conf_free(&cfg->qos);
    free(cfg->persistent_nodes_str);
    hostlist_free(&cfg->persistent_nodes);
    *cfg = (struct bb_config){ 0 };
}

int bb_config_check_user(const struct bb_config *cfg, uid_t uid, char *err, size_t errlen)
{
    if (cfg->allow_users) {
        bool found = false;
        for (size_t i = 0; i < cfg->allow_count; i++)
            found |= cfg->allow_users[i] == uid;
        if (!found) {
            snprintf(err, errlen, "uid %u is not in burst_buffer.conf AllowUsers", (unsigned)uid);
            return -1;
        }
    }
    for (size_t i = 0; i < cfg->deny_count; i++)
        if (cfg->deny_users[i] == uid) {
            snprintf(err, errlen, "uid %u is in burst_buffer.conf DenyUsers", (unsigned)uid);
            return -1;
        }
    return 0;
}
