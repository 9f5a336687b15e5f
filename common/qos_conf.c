/* qos_conf: see qos_conf.h. */
#include "qos_conf.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf.h"
#include "qos_client.h"
#include "qos_paths.h"
#include "qos_proto.h"

static const char *const policy_names[] = { "static", "priority", "proportional", "psfa" };

int qos_policy_from_name(const char *name)
{
    for (int i = 0; i < 4; i++)
        if (strcasecmp(name, policy_names[i]) == 0)
            return i;
    return -1;
}

const char *qos_policy_name(int policy)
{
    return policy >= 0 && policy < 4 ? policy_names[policy] : "unknown";
}

void qos_conf_defaults(struct qos_conf *c)
{
    *c = (struct qos_conf){
        .policy = QOS_POLICY_PSFA,
        .period_ms = 1000,
        .weight = QOS_WEIGHT_NODES,
        .jobs = QOS_JOBS_ALL,
        .socket = strdup("/run/adafs/qos.sock"),
        .state_dir = strdup("/var/lib/adafs-qosd"),
        .agent_timeout_ms = 5000,
        .relay_group = 32,
        .directive = strdup("BB_ADAFS"),
        .preload = strdup(ADAFS_PKGLIBDIR "/libadafs_preload.so"),
        .agent_port = 6830,
    };
}

void qos_conf_free(struct qos_conf *c)
{
    free(c->paths);
    free(c->socket);
    free(c->state_dir);
    free(c->directive);
    free(c->preload);
    free(c->munge_socket);
    memset(c, 0, sizeof(*c));
}

/* "1", "0.5", "2s", "100ms": milliseconds. */
static int parse_ms(const char *text, uint32_t *ms)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || v < 0)
        return -1;
    if (strcmp(end, "ms") == 0)
        ;
    else if (*end == '\0' || strcmp(end, "s") == 0)
        v *= 1000;
    else
        return -1;
    if (v > 3600000)
        return -1;
    *ms = (uint32_t)(v + 0.5);
    return 0;
}

static int set_string(char **field, const char *value)
{
    char *copy = strdup(value);
    if (!copy)
        return -1;
    free(*field);
    *field = copy;
    return 0;
}

int qos_conf_set(struct qos_conf *c, const char *key, const char *value, char *err, size_t errlen)
{
    char why[512] = "";
    if (strncasecmp(key, "AdafsQos", 8) != 0)
        return 0;
    const char *k = key + 8;
    if (strcasecmp(k, "Paths") == 0) {
        struct qos_paths p;
        if (*value && qos_paths_parse(value, &p, why, sizeof(why)) < 0)
            goto bad;
        if (set_string(&c->paths, value) < 0)
            goto oom;
        if (!*value) {
            free(c->paths);
            c->paths = NULL;
        }
    } else if (strcasecmp(k, "Policy") == 0) {
        if ((c->policy = qos_policy_from_name(value)) < 0) {
            snprintf(why, sizeof(why), "expected static, priority, proportional or psfa");
            goto bad;
        }
    } else if (strcasecmp(k, "Capacity") == 0 || strcasecmp(k, "Default") == 0 ||
               strcasecmp(k, "Max") == 0) {
        struct qos_limits *l = strcasecmp(k, "Capacity") == 0 ? &c->capacity
                             : strcasecmp(k, "Default") == 0 ? &c->dflt : &c->max;
        if (qos_limits_parse(value, l, why, sizeof(why)) < 0)
            goto bad;
    } else if (strcasecmp(k, "Period") == 0) {
        if (parse_ms(value, &c->period_ms) < 0 || c->period_ms < 100 || c->period_ms > 60000) {
            snprintf(why, sizeof(why), "expected seconds from 0.1 to 60 (e.g. 1, 0.5, 100ms)");
            goto bad;
        }
    } else if (strcasecmp(k, "AgentTimeout") == 0) {
        if (parse_ms(value, &c->agent_timeout_ms) < 0 || c->agent_timeout_ms < 200) {
            snprintf(why, sizeof(why), "expected seconds, at least 0.2");
            goto bad;
        }
    } else if (strcasecmp(k, "RelayGroup") == 0) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(value, &end, 10);
        if (errno || end == value || *end || value[0] == '-' || v == 1 || v > QOS_GROUP_MAX) {
            snprintf(why, sizeof(why), "expected 0 (no relays) or 2 to %d nodes per relay",
                     QOS_GROUP_MAX);
            goto bad;
        }
        c->relay_group = (uint32_t)v;
    } else if (strcasecmp(k, "Weight") == 0) {
        if (strcasecmp(value, "nodes") == 0)
            c->weight = QOS_WEIGHT_NODES;
        else if (strcasecmp(value, "priority") == 0)
            c->weight = QOS_WEIGHT_PRIORITY;
        else {
            snprintf(why, sizeof(why), "expected nodes or priority");
            goto bad;
        }
    } else if (strcasecmp(k, "Jobs") == 0) {
        if (strcasecmp(value, "all") == 0)
            c->jobs = QOS_JOBS_ALL;
        else if (strcasecmp(value, "bb") == 0)
            c->jobs = QOS_JOBS_BB;
        else {
            snprintf(why, sizeof(why), "expected all or bb");
            goto bad;
        }
    } else if (strcasecmp(k, "Socket") == 0 || strcasecmp(k, "StateDir") == 0) {
        if (value[0] != '/') {
            snprintf(why, sizeof(why), "expected an absolute path");
            goto bad;
        }
        if (set_string(strcasecmp(k, "Socket") == 0 ? &c->socket : &c->state_dir, value) < 0)
            goto oom;
    } else {
        snprintf(err, errlen, "unknown key '%s'", key);
        return -1;
    }
    return 1;
bad:
    snprintf(err, errlen, "%s=%s: %s", key, value, why);
    return -1;
oom:
    snprintf(err, errlen, "%s: out of memory", key);
    return -1;
}

/* The plugin's keys qosd needs to reach the agents and to read jobs'
 * directives; the plugin itself checks them in full. */
static int plugin_key(struct qos_conf *c, const char *key, const char *value, char *err,
                      size_t errlen)
{
    char *end;
    long v;
    if (strcasecmp(key, "Directive") == 0)
        return set_string(&c->directive, value);
    if (strcasecmp(key, "AdafsPreload") == 0)
        return set_string(&c->preload, value);
    if (strcasecmp(key, "AdafsMungeSocket") == 0)
        return set_string(&c->munge_socket, value);
    if (strcasecmp(key, "AdafsAgentPort") == 0 || strcasecmp(key, "AdafsAgentPortOffset") == 0) {
        v = strtol(value, &end, 10);
        bool port = strcasecmp(key, "AdafsAgentPort") == 0;
        if (*end || !*value || (port ? v < 1 || v > 65535 : v < -65535 || v > 65535)) {
            snprintf(err, errlen, "%s=%s: not a port%s", key, value, port ? "" : " offset");
            return -1;
        }
        if (port)
            c->agent_port = (uint16_t)v;
        else
            c->agent_port_offset = (int)v;
    }
    return 0;
}

int qos_conf_load(const char *path, struct qos_conf *c, char *err, size_t errlen)
{
    qos_conf_defaults(c);
    struct conf conf;
    if (conf_load(path, &conf, err, errlen) < 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < conf.count && rc == 0; i++) {
        char why[600] = "";
        const char *key = conf.entries[i].key, *value = conf.entries[i].value;
        if (qos_conf_set(c, key, value, why, sizeof(why)) < 0 || plugin_key(c, key, value, why,
                                                                             sizeof(why)) < 0) {
            snprintf(err, errlen, "%s line %d: %s", path, conf.entries[i].line, why);
            rc = -1;
        }
    }
    conf_free(&conf);
    return rc;
}

int qos_conf_job_env(const struct qos_conf *c, char *out[3])
{
    int n = 0;
    memset(out, 0, 3 * sizeof(*out));
    if (!c->paths)
        return 0;
    char dflt[1024];
    qos_limits_format(&c->dflt, dflt, sizeof(dflt));
    if (asprintf(&out[n], "%s=%s", QOS_ENV_PATHS, c->paths) > 0)
        n++;
    if (asprintf(&out[n], "%s=%s", QOS_ENV_SOCKET, c->socket) > 0)
        n++;
    if (dflt[0] && asprintf(&out[n], "%s=%s", QOS_ENV_DEFAULT, dflt) > 0)
        n++;
    return n;
}

int qos_directive_find(const char *prefix, const char *text, struct qos_limits *out, char *err,
                       size_t errlen)
{
    size_t plen = strlen(prefix);
    int found = 0;
    memset(out, 0, sizeof(*out));
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *p = line;
        while (p < line + len && (*p == ' ' || *p == '\t'))
            p++;
        if (*p == '#' && (size_t)(line + len - p) > plen && strncmp(p + 1, prefix, plen) == 0) {
            p += 1 + plen;
            while (p < line + len && (*p == ' ' || *p == '\t'))
                p++;
            if ((size_t)(line + len - p) >= 3 && strncmp(p, "qos", 3) == 0 &&
                (p + 3 == line + len || p[3] == ' ' || p[3] == '\t')) {
                char buf[1024], why[512];
                size_t n = (size_t)(line + len - (p + 3));
                if (n >= sizeof(buf))
                    n = sizeof(buf) - 1;
                memcpy(buf, p + 3, n);
                buf[n] = '\0';
                struct qos_limits one;
                if (qos_limits_parse(buf, &one, why, sizeof(why)) < 0) {
                    snprintf(err, errlen, "%s", why);
                    return -1;
                }
                qos_limits_merge(out, &one);
                found = 1;
            }
        }
        line = end ? end + 1 : NULL;
    }
    return found;
}
