/* qos_limits: see qos_limits.h. */
#include "qos_limits.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "size.h"

static const char *const names[QOS_NCLASSES] = {
    "open", "close", "stat", "readdir", "mkdir", "unlink", "rename", "other", "read", "write",
};

const char *qos_class_name(int c)
{
    return c >= 0 && c < QOS_NCLASSES ? names[c] : NULL;
}

int qos_class_from_name(const char *name)
{
    for (int c = 0; c < QOS_NCLASSES; c++)
        if (strcasecmp(name, names[c]) == 0)
            return c;
    return -1;
}

/* One value for class c (or for every class in [first, last]). A rate
 * may end in "/s" (write=100M/s, stat=500/s): it is one anyway. */
static int parse_value(int c, const char *text, uint64_t *v)
{
    if (strcasecmp(text, "unlimited") == 0) {
        *v = QOS_UNLIMITED;
        return 0;
    }
    char number[64];
    size_t len = strlen(text);
    if (len >= 3 && len < sizeof(number) && strcasecmp(text + len - 2, "/s") == 0) {
        memcpy(number, text, len - 2);
        number[len - 2] = '\0';
        text = number;
    }
    int rc = qos_class_is_data(c) ? size_parse(text, v) : count_parse(text, v);
    if (rc == 0 && (*v == 0 || *v == QOS_UNLIMITED))
        return -EINVAL;   /* a rate of 0 would block for ever: never a limit */
    return rc;
}

/* given: bit c for a class named itself, bits 10 and 11 for mdops and bw;
 * a name given twice is refused (mdops then stat=... overrides one). */
static int parse_item(char *item, struct qos_limits *out, unsigned *given, char *err,
                      size_t errlen)
{
    char *eq = strchr(item, '=');
    if (!eq || eq == item || !eq[1]) {
        snprintf(err, errlen, "'%s': expected CLASS=RATE (e.g. stat=1000, write=100M)", item);
        return -EINVAL;
    }
    *eq = '\0';
    const char *name = item, *value = eq + 1;
    int first, last;
    if (strcasecmp(name, "mdops") == 0) {
        first = 0;
        last = QOS_FIRST_DATA - 1;
    } else if (strcasecmp(name, "bw") == 0) {
        first = QOS_FIRST_DATA;
        last = QOS_NCLASSES - 1;
    } else if ((first = last = qos_class_from_name(name)) < 0) {
        snprintf(err, errlen, "unknown class '%s' in '%s=%s' (classes: open close stat readdir"
                 " mkdir unlink rename other read write, or mdops, bw)", name, name, value);
        return -EINVAL;
    }
    unsigned bit = first != last ? (first == 0 ? 1u << QOS_NCLASSES : 2u << QOS_NCLASSES)
                                 : 1u << first;
    if (*given & bit) {
        snprintf(err, errlen, "%s given twice (in '%s=%s')", name, name, value);
        return -EINVAL;
    }
    *given |= bit;
    uint64_t v;
    int rc = parse_value(first, value, &v);
    if (rc < 0) {
        snprintf(err, errlen, "invalid rate '%s' for %s: expected %s, or unlimited", value, name,
                 qos_class_is_data(first) ? "bytes per second above 0 (e.g. 100M)"
                                          : "operations per second, a whole number above 0");
        return -EINVAL;
    }
    for (int c = first; c <= last; c++)
        out->v[c] = v;
    return 0;
}

int qos_limits_parse(const char *text, struct qos_limits *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (!text)
        return 0;
    char buf[1024];
    if (strlen(text) >= sizeof(buf)) {
        snprintf(err, errlen, "QoS limits too long (%zu characters, at most %zu)", strlen(text),
                 sizeof(buf) - 1);
        return -EINVAL;
    }
    strcpy(buf, text);
    char *save = NULL;
    unsigned given = 0;
    for (char *item = strtok_r(buf, ", \t\n", &save); item; item = strtok_r(NULL, ", \t\n", &save))
        if (parse_item(item, out, &given, err, errlen) < 0)
            return -EINVAL;
    return 0;
}

void qos_value_format(int c, uint64_t v, char *buf, size_t len)
{
    if (v == QOS_NOT_GIVEN)
        snprintf(buf, len, "-");
    else if (v == QOS_UNLIMITED)
        snprintf(buf, len, "unlimited");
    else if (qos_class_is_data(c))
        size_format(v, buf, len);
    else
        snprintf(buf, len, "%llu", (unsigned long long)v);
}

void qos_rate_show(int c, uint64_t v, char *buf, size_t len)
{
    static const char units[] = "KMGTPE";
    if (v == 0 || v == QOS_UNLIMITED || !qos_class_is_data(c) || v < 1024) {
        if (v == 0)
            snprintf(buf, len, "0");
        else
            qos_value_format(c, v, buf, len);
        return;
    }
    char exact[32];
    size_format(v, exact, sizeof(exact));
    if (strlen(exact) <= 5) {   /* "100M", "4K": already short and exact */
        snprintf(buf, len, "%s", exact);
        return;
    }
    double x = (double)v;
    int u = -1;
    while (x >= 1000 && u < (int)sizeof(units) - 2) {   /* 1000: at most 3 digits */
        x /= 1024;
        u++;
    }
    if (u < 0)
        snprintf(buf, len, "%llu", (unsigned long long)v);
    else
        snprintf(buf, len, x < 10 ? "%.2f%c" : x < 100 ? "%.1f%c" : "%.0f%c", x, units[u]);
}

int qos_limits_format(const struct qos_limits *l, char *buf, size_t len)
{
    size_t n = 0;
    if (len)
        buf[0] = '\0';
    for (int c = 0; c < QOS_NCLASSES; c++) {
        if (l->v[c] == QOS_NOT_GIVEN)
            continue;
        char v[32];
        qos_value_format(c, l->v[c], v, sizeof(v));
        int m = snprintf(n < len ? buf + n : NULL, n < len ? len - n : 0, "%s%s=%s",
                         n ? "," : "", names[c], v);
        if (m < 0)
            return m;
        n += (size_t)m;
    }
    return (int)n;
}

void qos_limits_merge(struct qos_limits *dst, const struct qos_limits *src)
{
    for (int c = 0; c < QOS_NCLASSES; c++)
        if (src->v[c] != QOS_NOT_GIVEN)
            dst->v[c] = src->v[c];
}

bool qos_limits_any(const struct qos_limits *l)
{
    for (int c = 0; c < QOS_NCLASSES; c++)
        if (l->v[c] != QOS_NOT_GIVEN)
            return true;
    return false;
}

int qos_limits_check_max(const struct qos_limits *a, const struct qos_limits *max,
                         char *err, size_t errlen)
{
    for (int c = 0; c < QOS_NCLASSES; c++) {
        if (a->v[c] == QOS_NOT_GIVEN || max->v[c] == QOS_NOT_GIVEN || a->v[c] <= max->v[c])
            continue;
        char want[32], most[32];
        qos_value_format(c, a->v[c], want, sizeof(want));
        qos_value_format(c, max->v[c], most, sizeof(most));
        snprintf(err, errlen, "%s=%s is above the site's maximum %s=%s", names[c], want,
                 names[c], most);
        return -E2BIG;
    }
    return 0;
}
