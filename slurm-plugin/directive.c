#include "directive.h"

#include "size.h"
#include "strbuf.h"

#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOKENS 16
#define MAX_LINE 4096

/* Where a line came from, for messages the user can act on. */
struct origin {
    const char *what;    /* "batch script" or "--bb" */
    int line;
};

struct parser {
    const char *prefix;
    struct bb_request *req;
    char *err;
    size_t errlen;
};

static int fail(struct parser *p, const struct origin *o, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct parser *p, const struct origin *o, const char *fmt, ...)
{
    if (p->errlen == 0)
        return -1;
    int n = snprintf(p->err, p->errlen, "#%s (%s line %d): ", p->prefix, o->what, o->line);
    if (n >= 0 && (size_t)n < p->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Splits a directive body into tokens in place. Double quotes group words
 * (source="/pfs/my dir"); a backslash escapes the next character inside them. */
static int tokenize(struct parser *p, const struct origin *o, char *s,
                    char **tokens, int *ntokens)
{
    int n = 0;
    while (*s) {
        while (isspace((unsigned char)*s))
            s++;
        if (!*s)
            break;
        if (n == MAX_TOKENS)
            return fail(p, o, "too many words (at most %d)", MAX_TOKENS);
        char *out = s;
        tokens[n++] = out;
        bool quoted = false;
        while (*s && (quoted || !isspace((unsigned char)*s))) {
            if (*s == '"') {
                quoted = !quoted;
                s++;
            } else if (quoted && *s == '\\' && s[1]) {
                *out++ = s[1];
                s += 2;
            } else {
                *out++ = *s++;
            }
        }
        if (quoted)
            return fail(p, o, "unterminated quote in '%s'", tokens[n - 1]);
        if (*s)
            s++;
        *out = '\0';
    }
    *ntokens = n;
    return 0;
}

/* Splits "key=value"; a token without '=' is reported by the caller. */
static char *split_value(char *token)
{
    char *eq = strchr(token, '=');
    if (!eq)
        return NULL;
    *eq = '\0';
    return eq + 1;
}

static int check_symbols(struct parser *p, const struct origin *o,
                         const char *key, const char *value)
{
    for (const char *s = strchr(value, '%'); s; s = strchr(s + 2, '%')) {
        if (!s[1] || !strchr("%juxAaN", s[1]))
            return fail(p, o, "unknown %%-symbol '%%%.1s' in %s=%s (known: %%j %%u %%x %%A %%a %%N %%%%)",
                        s[1] ? s + 1 : "", key, value);
    }
    return 0;
}

const char *directive_inside_instance(const char *path, char name[PERSIST_NAME_MAX + 1])
{
    static const char var[] = DIRECTIVE_PERSISTENT_VAR;
    name[0] = '\0';
    if (strncmp(path, var, sizeof(var) - 1) != 0)
        return path;
    const char *n = path + sizeof(var) - 1;
    size_t len = strcspn(n, "/");
    if (len == 0 || len > PERSIST_NAME_MAX)
        return path;
    memcpy(name, n, len);
    name[len] = '\0';
    if (!persist_name_valid(name)) {
        name[0] = '\0';
        return path;
    }
    n += len;
    while (*n == '/')
        n++;
    return *n ? n : ".";
}

/* A path inside the file system: relative, no "..", no empty value (after
 * a leading $ADAFS_PERSISTENT_<NAME>/, which names the mount). */
static int check_inside_path(struct parser *p, const struct origin *o,
                             const char *key, const char *value)
{
    char name[PERSIST_NAME_MAX + 1];
    if (strncmp(value, DIRECTIVE_PERSISTENT_VAR, sizeof(DIRECTIVE_PERSISTENT_VAR) - 1) == 0 &&
        (value = directive_inside_instance(value, name), !name[0]))
        return fail(p, o, "%s=%s: $ADAFS_PERSISTENT_ must be followed by an instance's name "
                    "and '/'", key, value);
    if (value[0] == '/')
        return fail(p, o, "%s=%s must be relative to the file system (no leading '/')",
                    key, value);
    for (const char *s = value; *s;) {
        size_t len = strcspn(s, "/");
        if (len == 2 && s[0] == '.' && s[1] == '.')
            return fail(p, o, "%s=%s must not contain '..'", key, value);
        s += len;
        while (*s == '/')
            s++;
    }
    return check_symbols(p, o, key, value);
}

static int check_outside_path(struct parser *p, const struct origin *o,
                              const char *key, const char *value)
{
    if (value[0] != '/')
        return fail(p, o, "%s=%s must be an absolute path on the parallel file system",
                    key, value);
    return check_symbols(p, o, key, value);
}

static int parse_size_option(struct parser *p, const struct origin *o,
                             const char *key, const char *value, uint64_t *out)
{
    int rc = size_parse(value, out);
    if (rc == -ERANGE)
        return fail(p, o, "%s=%s is too large", key, value);
    if (rc < 0)
        return fail(p, o, "invalid size '%s' for %s (use a number with K, M, G, T or P)",
                    value, key);
    if (*out == 0)
        return fail(p, o, "%s=%s must be greater than zero", key, value);
    return 0;
}

/* A positive whole number without unit (operations per second). */
static int parse_count_option(struct parser *p, const struct origin *o,
                              const char *key, const char *value, uint64_t *out)
{
    if (!*value)
        return fail(p, o, "%s= is empty", key);
    int rc = count_parse(value, out);
    if (rc == -ERANGE)
        return fail(p, o, "%s=%s is too large", key, value);
    if (rc < 0)
        return fail(p, o, "invalid number '%s' for %s (operations per second, digits only)",
                    value, key);
    if (*out == 0)
        return fail(p, o, "%s=%s must be greater than zero", key, value);
    return 0;
}

const char *bb_access_name(enum bb_access access)
{
    switch (access) {
    case BB_ACCESS_PRELOAD: return "preload";
    case BB_ACCESS_FUSE: return "fuse";
    case BB_ACCESS_BOTH: return "both";
    case BB_ACCESS_UNSET: break;
    }
    return "default";
}

enum bb_access bb_access_parse(const char *text)
{
    return strcmp(text, "preload") == 0 ? BB_ACCESS_PRELOAD
         : strcmp(text, "fuse") == 0    ? BB_ACCESS_FUSE
         : strcmp(text, "both") == 0    ? BB_ACCESS_BOTH : BB_ACCESS_UNSET;
}

/* The words that begin a line of their own. */
static bool is_line_keyword(const char *word)
{
    static const char *const words[] = { "stage_in", "stage_out", "qos", "create_persistent",
                                         "use_persistent", "destroy_persistent" };
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (strcmp(word, words[i]) == 0)
            return true;
    return false;
}

/* A token that belongs on another line: a line keyword written inside
 * one (two lines run together) or a QoS limit outside a qos line. -1 with
 * the message naming where it goes, 0 when it is not one of those. */
static int misplaced(struct parser *p, const struct origin *o, const char *key,
                     const char *value)
{
    if (!value && is_line_keyword(key))
        return fail(p, o, "'%s' must begin a line of its own (with --bb, start a new "
                    "line: --bb $'capacity=1G\\n%s ...')", key, key);
    if (value && (qos_class_from_name(key) >= 0 || strcmp(key, "mdops") == 0 ||
                  strcmp(key, "bw") == 0))
        return fail(p, o, "'%s=%s' is a QoS limit: it goes on a qos line of its own "
                    "(#%s qos %s=%s)", key, value, p->prefix, key, value);
    return 0;
}

static int parse_options(struct parser *p, const struct origin *o,
                         char **tokens, int ntokens)
{
    struct bb_request *req = p->req;
    for (int i = 0; i < ntokens; i++) {
        char *key = tokens[i];
        char *value = split_value(key);
        if (misplaced(p, o, key, value) < 0)
            return -1;
        if (!value)
            return fail(p, o, "'%s' needs a value, as in capacity=SIZE", key);
        if (strcmp(key, "access") == 0) {
            if (req->access)
                return fail(p, o, "access given twice");
            if (!(req->access = bb_access_parse(value)))
                return fail(p, o, "access=%s: expected preload, fuse or both", value);
            continue;
        }
        uint64_t *slot = strcmp(key, "capacity") == 0  ? &req->capacity
                       : strcmp(key, "chunk") == 0     ? &req->chunk_size
                       : strcmp(key, "max_bw") == 0    ? &req->max_bw
                       : strcmp(key, "max_mdops") == 0 ? &req->max_mdops : NULL;
        if (!slot && strcmp(key, "fair_share") == 0)
            return fail(p, o, "fair_share= is an option of create_persistent: a job's own file "
                        "system serves that job alone, so nothing is shared there");
        if (!slot)
            return fail(p, o, "unknown option '%s' (known: capacity, chunk, max_bw, max_mdops, "
                        "access; lines of their own: stage_in, stage_out, qos, "
                        "create_persistent, use_persistent, destroy_persistent)", key);
        /* Every option's value is above zero, so zero means not given yet. */
        if (*slot)
            return fail(p, o, "%s given twice", key);
        uint64_t v;
        if ((slot == &req->max_mdops ? parse_count_option(p, o, key, value, &v)
                                     : parse_size_option(p, o, key, value, &v)) < 0)
            return -1;
        if (slot == &req->chunk_size && (v & (v - 1)))
            return fail(p, o, "chunk=%s must be a power of two", value);
        if (slot == &req->chunk_size && (v < DIRECTIVE_MIN_CHUNK || v > DIRECTIVE_MAX_CHUNK))
            return fail(p, o, "chunk=%s must be between 4K and 64M", value);
        *slot = v;
        struct bb_where *at = slot == &req->capacity ? &req->capacity_at
                            : slot == &req->max_bw   ? &req->max_bw_at
                            : slot == &req->max_mdops ? &req->max_mdops_at : NULL;
        if (at)
            *at = (struct bb_where){ o->what, o->line };
    }
    return 0;
}

static int parse_type(struct parser *p, const struct origin *o, const char *value,
                      enum stage_type *type)
{
    if (stage_type_parse(value, type) < 0)
        return fail(p, o, "unknown type '%s' (known: file, directory, list)", value);
    return 0;
}

static int parse_stage(struct parser *p, const struct origin *o,
                       enum stage_direction dir, char **tokens, int ntokens)
{
    const char *verb = dir == STAGE_IN ? "stage_in" : "stage_out";
    const char *source = NULL, *destination = NULL, *type_text = NULL, *verify = NULL;

    for (int i = 1; i < ntokens; i++) {
        char *key = tokens[i];
        char *value = split_value(key);
        const char **slot;
        if (misplaced(p, o, key, value) < 0)
            return -1;
        if (!value)
            return fail(p, o, "'%s' needs a value, as in source=PATH", key);
        if (strcmp(key, "source") == 0)
            slot = &source;
        else if (strcmp(key, "destination") == 0)
            slot = &destination;
        else if (strcmp(key, "type") == 0)
            slot = &type_text;
        else if (strcmp(key, "verify") == 0)
            slot = &verify;
        else
            return fail(p, o, "unknown %s option '%s' (known: source, destination, type, verify)",
                        verb, key);
        if (*slot)
            return fail(p, o, "%s given twice", key);
        if (!*value)
            return fail(p, o, "%s= is empty", key);
        *slot = value;
    }
    if (!source)
        return fail(p, o, "%s needs source=PATH", verb);
    if (!destination)
        return fail(p, o, "%s needs destination=PATH", verb);
    if (!type_text)
        return fail(p, o, "%s needs type=file|directory|list", verb);

    enum stage_type type = STAGE_FILE;   /* set by parse_type; GCC cannot tell */
    if (parse_type(p, o, type_text, &type) < 0)
        return -1;
    if (verify && strcmp(verify, "yes") != 0 && strcmp(verify, "no") != 0)
        return fail(p, o, "verify=%s: expected yes or no", verify);
    /* A list file always lives on the parallel file system; so does the other
     * end of every copy. */
    int rc;
    if (dir == STAGE_IN)
        rc = check_outside_path(p, o, "source", source) < 0 ||
             check_inside_path(p, o, "destination", destination) < 0;
    else if (type == STAGE_LIST)
        rc = check_outside_path(p, o, "source", source) < 0 ||
             check_outside_path(p, o, "destination", destination) < 0;
    else
        rc = check_inside_path(p, o, "source", source) < 0 ||
             check_outside_path(p, o, "destination", destination) < 0;
    if (rc)
        return -1;

    struct bb_request *req = p->req;
    if (req->nstages == DIRECTIVE_MAX_STAGES)
        return fail(p, o, "too many stage_in/stage_out lines (at most %d)",
                    DIRECTIVE_MAX_STAGES);
    struct stage_spec *grown = realloc(req->stages, (req->nstages + 1) * sizeof(*grown));
    if (!grown)
        return fail(p, o, "out of memory");
    req->stages = grown;
    struct stage_spec *s = &req->stages[req->nstages];
    *s = (struct stage_spec){ .direction = dir, .type = type, .line = o->line,
                              .verify = verify && strcmp(verify, "yes") == 0,
                              .source = strdup(source), .destination = strdup(destination) };
    req->nstages++;
    if (!s->source || !s->destination)
        return fail(p, o, "out of memory");
    return 0;
}

/* qos CLASS=RATE...: the job's demand toward the parallel file system. */
static int parse_qos(struct parser *p, const struct origin *o, char **tokens, int ntokens)
{
    if (ntokens < 2)
        return fail(p, o, "qos needs CLASS=RATE, as in qos mdops=2000 bw=500M");
    char text[MAX_LINE] = "", why[512];
    for (int i = 1; i < ntokens; i++) {
        strncat(text, tokens[i], sizeof(text) - strlen(text) - 2);
        strcat(text, " ");
    }
    struct qos_limits l;
    if (qos_limits_parse(text, &l, why, sizeof(why)) < 0)
        return fail(p, o, "qos: %s", why);
    if (!qos_limits_any(&l))   /* qos "" would be a request that asks for nothing */
        return fail(p, o, "qos needs CLASS=RATE, as in qos mdops=2000 bw=500M");
    for (int c = 0; c < QOS_NCLASSES; c++)
        if (l.v[c] != QOS_NOT_GIVEN && p->req->qos.v[c] != QOS_NOT_GIVEN)
            return fail(p, o, "qos: %s is given again (%s line %d set it already)",
                        qos_class_name(c), p->req->qos_origin, p->req->qos_line);
    qos_limits_merge(&p->req->qos, &l);
    p->req->qos_line = o->line;
    p->req->qos_origin = o->what;
    return 0;
}

const char *persist_op_name(enum persist_op op)
{
    switch (op) {
    case PERSIST_CREATE: return "create_persistent";
    case PERSIST_USE: return "use_persistent";
    case PERSIST_DESTROY: return "destroy_persistent";
    }
    return "?";
}

#define PERSIST_NAME_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"

int persist_name_valid(const char *name)
{
    size_t len = name ? strlen(name) : 0;
    /* ASCII letters whatever the locale: strspn, not isalpha. */
    return len && len <= PERSIST_NAME_MAX && strspn(name, PERSIST_NAME_CHARS) == len &&
           !strchr("0123456789_", name[0]);
}

/* A letter, then letters, digits or '_': it ends up in an environment
 * variable's name, a path and a log line, so nothing else. */
static int check_persist_name(struct parser *p, const struct origin *o, const char *value)
{
    size_t len = strlen(value);
    if (len == 0)
        return fail(p, o, "name= is empty");
    if (len > PERSIST_NAME_MAX)
        return fail(p, o, "name=%s is longer than %d characters", value, PERSIST_NAME_MAX);
    if (!strchr(PERSIST_NAME_CHARS, value[0]) || strchr("0123456789_", value[0]))
        return fail(p, o, "name=%s must start with a letter", value);
    if (!persist_name_valid(value)) {
        char bad = value[strspn(value, PERSIST_NAME_CHARS)];
        return fail(p, o, "name=%s: '%c' is not allowed (letters, digits and '_' only)",
                    value, isprint((unsigned char)bad) ? bad : '?');
    }
    return 0;
}

/* A POSIX portable group name: letters, digits, '.', '_', '-', not first '-'. */
static int check_group_name(struct parser *p, const struct origin *o, const char *group)
{
    size_t len = strlen(group);
    if (len == 0)
        return fail(p, o, "access=group: needs a group name, as in access=group:proj");
    if (len > 32 || group[0] == '-' || group[strspn(group, "abcdefghijklmnopqrstuvwxyz"
                                              "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")])
        return fail(p, o, "access=group:%s is not a valid group name", group);
    return 0;
}

/* create_persistent / use_persistent / destroy_persistent name=NAME ... */
static int parse_persistent(struct parser *p, const struct origin *o, enum persist_op op,
                            char **tokens, int ntokens)
{
    const char *verb = persist_op_name(op);
    struct persist_spec spec = { .op = op, .line = o->line, .origin = o->what };
    const char *name = NULL, *capacity = NULL, *nodes = NULL, *access = NULL, *fair = NULL;

    for (int i = 1; i < ntokens; i++) {
        char *key = tokens[i];
        char *value = split_value(key);
        const char **slot = NULL;
        if (misplaced(p, o, key, value) < 0)
            return -1;
        if (!value)
            return fail(p, o, "'%s' needs a value, as in name=NAME", key);
        if (strcmp(key, "name") == 0)
            slot = &name;
        else if (op == PERSIST_CREATE && strcmp(key, "capacity") == 0)
            slot = &capacity;
        else if (op == PERSIST_CREATE && strcmp(key, "nodes") == 0)
            slot = &nodes;
        else if (op == PERSIST_CREATE && strcmp(key, "access") == 0)
            slot = &access;
        else if (op == PERSIST_CREATE && strcmp(key, "fair_share") == 0)
            slot = &fair;
        else if (strcmp(key, "fair_share") == 0)
            return fail(p, o, "fair_share= is chosen when the instance is created "
                        "(create_persistent ... fair_share=POLICY), not by the jobs that %s it",
                        op == PERSIST_USE ? "use" : "destroy");
        else
            return fail(p, o, "unknown %s option '%s' (known: %s)", verb, key,
                        op == PERSIST_CREATE ? "name, capacity, nodes, access, fair_share" : "name");
        if (*slot)
            return fail(p, o, "%s given twice", key);
        *slot = value;
    }
    if (!name)
        return fail(p, o, "%s needs name=NAME", verb);
    if (check_persist_name(p, o, name) < 0)
        return -1;
    snprintf(spec.name, sizeof(spec.name), "%s", name);
    if (op == PERSIST_CREATE) {
        if (!capacity)
            return fail(p, o, "create_persistent needs capacity=SIZE");
        if (parse_size_option(p, o, "capacity", capacity, &spec.capacity) < 0)
            return -1;
        if (nodes) {
            uint64_t n;
            int rc = count_parse(nodes, &n);
            if (rc < 0 && rc != -ERANGE)
                return fail(p, o, "invalid number '%s' for nodes (a node count, digits only)", nodes);
            if (rc == 0 && n == 0)
                return fail(p, o, "nodes=%s must be greater than zero", nodes);
            if (rc == -ERANGE || n > PERSIST_MAX_NODES)
                return fail(p, o, "nodes=%s is more than %d", nodes, PERSIST_MAX_NODES);
            spec.nodes = (uint32_t)n;
        }
        if (access && strcmp(access, "user") == 0) {
            spec.access = PERSIST_ACCESS_USER;
        } else if (access && strncmp(access, "group:", 6) == 0) {
            if (check_group_name(p, o, access + 6) < 0)
                return -1;
            spec.access = PERSIST_ACCESS_GROUP;
        } else if (access) {
            return fail(p, o, "access=%s: expected user or group:GROUP", access);
        }
        if (fair && fair_policy_parse(fair) < 0)
            return fail(p, o, "fair_share=%s: expected " FAIR_POLICY_NAMES, fair);
        if (fair)
            snprintf(spec.fair_share, sizeof(spec.fair_share), "%s", fair);
    }

    struct bb_request *req = p->req;
    for (size_t i = 0; i < req->npersist; i++) {
        const struct persist_spec *q = &req->persist[i];
        if (strcmp(q->name, spec.name) != 0)
            continue;
        if ((q->op == PERSIST_CREATE && op == PERSIST_DESTROY) ||
            (q->op == PERSIST_DESTROY && op == PERSIST_CREATE))
            return fail(p, o, "name=%s: one job can not both create and destroy a persistent "
                        "instance (line %d)", spec.name, q->line);
        return fail(p, o, "name=%s: already named by %s on line %d", spec.name,
                    persist_op_name(q->op), q->line);
    }
    if (req->npersist == PERSIST_MAX_LINES)
        return fail(p, o, "too many persistent-instance lines (at most %d)", PERSIST_MAX_LINES);
    struct persist_spec *grown = realloc(req->persist, (req->npersist + 1) * sizeof(*grown));
    if (!grown)
        return fail(p, o, "out of memory");
    req->persist = grown;
    if (access && spec.access == PERSIST_ACCESS_GROUP && !(spec.group = strdup(access + 6)))
        return fail(p, o, "out of memory");
    req->persist[req->npersist++] = spec;
    return 0;
}

int bb_request_wants_job_fs(const struct bb_request *req)
{
    return req->capacity || req->chunk_size || req->max_bw || req->max_mdops || req->access ||
           req->nstages;
}

int directive_check_persistent(const char *prefix, const struct bb_request *req,
                               size_t persistent_nodes, char *err, size_t errlen)
{
    struct parser p = { .prefix = prefix, .req = NULL, .err = err, .errlen = errlen };
    for (size_t i = 0; i < req->npersist; i++) {
        const struct persist_spec *s = &req->persist[i];
        struct origin o = { s->origin ? s->origin : "--bb", s->line };
        if (s->op != PERSIST_CREATE)
            continue;
        if (persistent_nodes == 0)
            return fail(&p, &o, "create_persistent name=%s: this site has no nodes for "
                        "persistent instances (AdafsPersistentNodes is not set)", s->name);
        if (s->nodes > persistent_nodes)
            return fail(&p, &o, "create_persistent name=%s nodes=%u: this site has only %zu "
                        "persistent node(s) (AdafsPersistentNodes)", s->name, s->nodes,
                        persistent_nodes);
        if (s->group) {
            struct group gr, *found = NULL;
            char buf[16384];
            int rc = getgrnam_r(s->group, &gr, buf, sizeof(buf), &found);
            if (rc != 0 || !found)
                return fail(&p, &o, "access=group:%s: no such group%s%s", s->group,
                            rc ? ": " : "", rc ? strerror(rc) : "");
            if (found->gr_gid == 0)
                return fail(&p, &o, "access=group:%s: group root can not share a persistent "
                            "instance", s->group);
        }
    }
    return 0;
}

int bb_request_qos_only(const struct bb_request *req)
{
    return qos_limits_any(&req->qos) && !bb_request_wants_job_fs(req) && !req->npersist;
}

static int parse_body(struct parser *p, const struct origin *o, const char *body)
{
    char buf[MAX_LINE];
    snprintf(buf, sizeof(buf), "%s", body);   /* callers pass < MAX_LINE */

    char *tokens[MAX_TOKENS];
    int ntokens = 0;
    if (tokenize(p, o, buf, tokens, &ntokens) < 0)
        return -1;
    if (ntokens == 0)
        return fail(p, o, "empty directive (expected capacity=SIZE, stage_in or stage_out)");
    if (strcmp(tokens[0], "stage_in") == 0)
        return parse_stage(p, o, STAGE_IN, tokens, ntokens);
    if (strcmp(tokens[0], "stage_out") == 0)
        return parse_stage(p, o, STAGE_OUT, tokens, ntokens);
    if (strcmp(tokens[0], "qos") == 0)
        return parse_qos(p, o, tokens, ntokens);
    if (strcmp(tokens[0], "create_persistent") == 0)
        return parse_persistent(p, o, PERSIST_CREATE, tokens, ntokens);
    if (strcmp(tokens[0], "use_persistent") == 0)
        return parse_persistent(p, o, PERSIST_USE, tokens, ntokens);
    if (strcmp(tokens[0], "destroy_persistent") == 0)
        return parse_persistent(p, o, PERSIST_DESTROY, tokens, ntokens);
    if (strchr(tokens[0], '='))
        return parse_options(p, o, tokens, ntokens);
    if (strcmp(tokens[0], "capacity") == 0 || strcmp(tokens[0], "chunk") == 0 ||
        strcmp(tokens[0], "max_bw") == 0)
        return fail(p, o, "'%s' needs a value, as in %s=SIZE", tokens[0], tokens[0]);
    if (strcmp(tokens[0], "max_mdops") == 0)
        return fail(p, o, "'max_mdops' needs a value, as in max_mdops=1000");
    if (strcmp(tokens[0], "access") == 0)
        return fail(p, o, "'access' needs a value, as in access=both");
    return fail(p, o, "unknown keyword '%s' (known: capacity=, chunk=, max_bw=, max_mdops=, "
                "access=, stage_in, stage_out, qos, create_persistent, use_persistent, "
                "destroy_persistent)", tokens[0]);
}

/* If line is "#<prefix>" followed by a blank or its end, returns the body. */
static const char *directive_body(const char *prefix, const char *line)
{
    size_t plen = strlen(prefix);
    if (line[0] != '#' || strncmp(line + 1, prefix, plen) != 0)
        return NULL;
    const char *rest = line + 1 + plen;
    if (*rest && !isspace((unsigned char)*rest))
        return NULL;
    return rest;
}

/* Parses the directive lines of text: 1 if there were any, 0 if none, -1 on
 * the first error. */
static int for_each_line(struct parser *p, const char *text, const char *what,
                         bool script)
{
    int found = 0;
    struct origin o = { what, 0 };
    const char *s = text;
    while (*s) {
        const char *end = strchr(s, '\n');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        o.line++;
        char line[MAX_LINE];
        bool overlong = len >= sizeof(line);
        if (overlong)
            len = sizeof(line) - 1;
        memcpy(line, s, len);
        line[len] = '\0';
        if (len && line[len - 1] == '\r')
            line[len - 1] = '\0';
        s = end ? end + 1 : s + strlen(s);

        const char *trimmed = line;
        while (isspace((unsigned char)*trimmed))
            trimmed++;
        const char *body = directive_body(p->prefix, trimmed);
        if (script) {
            /* Like #SBATCH, directives end at the first command line. */
            if (*trimmed && *trimmed != '#')
                break;
            if (!body)
                continue;
        } else if (!body) {
            if (!*trimmed)
                continue;
            body = trimmed;   /* --bb text may omit the prefix */
        }
        if (overlong)
            return fail(p, &o, "line longer than %d characters", MAX_LINE - 1);
        if (parse_body(p, &o, body) < 0)
            return -1;
        found = 1;
    }
    return found;
}

int directive_parse(const char *prefix, const char *script, const char *bb_option,
                    struct bb_request *req, char *err, size_t errlen)
{
    struct parser p = { .prefix = prefix, .req = req, .err = err, .errlen = errlen };
    if (errlen)
        err[0] = '\0';
    int found = 0, rc;
    if (script) {
        if ((rc = for_each_line(&p, script, "batch script", true)) < 0)
            return -1;
        found |= rc;
    }
    if (bb_option) {
        if ((rc = for_each_line(&p, bb_option, "--bb", false)) < 0)
            return -1;
        found |= rc;
    }
    return found;
}

void bb_request_free(struct bb_request *req)
{
    for (size_t i = 0; i < req->nstages; i++) {
        free(req->stages[i].source);
        free(req->stages[i].destination);
    }
    free(req->stages);
    for (size_t i = 0; i < req->npersist; i++)
        free(req->persist[i].group);
    free(req->persist);
    *req = (struct bb_request){ 0 };
}

/* Quotes a value when it holds what the tokenizer would split at (any
 * isspace character: a quoted path may hold a carriage return), quotes or
 * backslashes. */
static void append_value(struct strbuf *b, const char *key, const char *value)
{
    if (!value[strcspn(value, " \t\n\v\f\r\"\\")]) {
        strbuf_printf(b, " %s=%s", key, value);
        return;
    }
    strbuf_printf(b, " %s=\"", key);
    /* Runs between the characters escaped, each copied at once: this is
     * done under slurmctld's job lock at submit, for up to 64 KiB. */
    for (const char *s = value; *s;) {
        size_t run = strcspn(s, "\"\\");
        if (run)
            strbuf_append(b, s, run);
        s += run;
        if (*s) {
            char escaped[2] = { '\\', *s++ };
            strbuf_append(b, escaped, 2);
        }
    }
    strbuf_printf(b, "\"");
}

char *bb_request_format(const char *prefix, const struct bb_request *req)
{
    struct strbuf b = { 0 };
    char size[32];
    if (req->capacity || req->chunk_size || req->max_bw || req->max_mdops || req->access) {
        strbuf_printf(&b, "#%s", prefix);
        if (req->capacity) {
            size_format(req->capacity, size, sizeof(size));
            strbuf_printf(&b, " capacity=%s", size);
        }
        if (req->chunk_size) {
            size_format(req->chunk_size, size, sizeof(size));
            strbuf_printf(&b, " chunk=%s", size);
        }
        if (req->max_bw) {
            size_format(req->max_bw, size, sizeof(size));
            strbuf_printf(&b, " max_bw=%s", size);
        }
        if (req->max_mdops)
            strbuf_printf(&b, " max_mdops=%llu", (unsigned long long)req->max_mdops);
        if (req->access)
            strbuf_printf(&b, " access=%s", bb_access_name(req->access));
        strbuf_printf(&b, "\n");
    }
    for (size_t i = 0; i < req->nstages; i++) {
        const struct stage_spec *s = &req->stages[i];
        strbuf_printf(&b, "#%s %s", prefix, s->direction == STAGE_IN ? "stage_in" : "stage_out");
        append_value(&b, "source", s->source);
        append_value(&b, "destination", s->destination);
        strbuf_printf(&b, " type=%s%s\n", stage_type_name(s->type), s->verify ? " verify=yes" : "");
    }
    if (qos_limits_any(&req->qos)) {
        char text[1024];
        qos_limits_format(&req->qos, text, sizeof(text));
        strbuf_printf(&b, "#%s qos %s\n", prefix, text);
    }
    for (size_t i = 0; i < req->npersist; i++) {
        const struct persist_spec *s = &req->persist[i];
        strbuf_printf(&b, "#%s %s name=%s", prefix, persist_op_name(s->op), s->name);
        if (s->op == PERSIST_CREATE) {
            size_format(s->capacity, size, sizeof(size));
            strbuf_printf(&b, " capacity=%s", size);
            if (s->nodes)
                strbuf_printf(&b, " nodes=%u", s->nodes);
            if (s->group)
                strbuf_printf(&b, " access=group:%s", s->group);
            if (s->fair_share[0])
                strbuf_printf(&b, " fair_share=%s", s->fair_share);
        }
        strbuf_printf(&b, "\n");
    }
    return strbuf_take(&b);
}

char *directive_expand(const char *text, const struct symbol_values *v)
{
    struct strbuf b = { 0 };
    for (const char *s = text; *s; s++) {
        /* The text up to the next symbol at once (under slurmctld's job
         * lock at a job's begin, up to 64 KiB of paths). */
        size_t run = strcspn(s, "%");
        if (run || !s[1]) {
            run = run ? run : 1;   /* a '%' that ends the text stays */
            strbuf_append(&b, s, run);
            s += run - 1;
            continue;
        }
        switch (*++s) {
        case '%': strbuf_printf(&b, "%%"); break;
        case 'j': strbuf_printf(&b, "%u", v->job_id); break;
        case 'A': strbuf_printf(&b, "%u", v->array_job_id ? v->array_job_id : v->job_id); break;
        case 'a': strbuf_printf(&b, "%u", v->array_job_id ? v->array_task_id : 0); break;
        case 'u': strbuf_printf(&b, "%s", v->user ? v->user : ""); break;
        case 'x': strbuf_printf(&b, "%s", v->job_name ? v->job_name : ""); break;
        case 'N': strbuf_printf(&b, "%s", v->first_node ? v->first_node : ""); break;
        default: strbuf_printf(&b, "%%%c", *s); break;
        }
    }
    return strbuf_take(&b);
}
