#include "persist_admin.h"

#include <stdio.h>
#include <string.h>

#include "agent_proto.h"

/* A value that stays one word of one line of the request. */
static bool plain_value(const char *v)
{
    if (!*v)
        return false;
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if (*p <= ' ' || *p == 0x7f || strchr("\"'#\\", *p))
            return false;
    return true;
}

int persist_admin_request(bool create, size_t nwords, char *const *words, char *bb, size_t bblen,
                          char *name, size_t namelen, char *err, size_t errlen)
{
    static const char *const keys[] = { "name", "capacity", "nodes", "access", "fair_share" };
    const size_t nkeys = create ? 5 : 1;
    const char *value[5] = { NULL };
    for (size_t i = 0; i < nwords; i++) {
        const char *eq = strchr(words[i], '=');
        size_t k = 0;
        while (eq && k < nkeys &&
               (strlen(keys[k]) != (size_t)(eq - words[i]) ||
                strncmp(keys[k], words[i], (size_t)(eq - words[i])) != 0))
            k++;
        if (!eq || k == nkeys) {
            snprintf(err, errlen, "'%s': %s takes %s", words[i], create ? "create" : "destroy",
                     create ? "name=, capacity=, nodes=, access= and fair_share=" : "name= only");
            return -1;
        }
        if (value[k]) {
            snprintf(err, errlen, "%s= given twice", keys[k]);
            return -1;
        }
        if (!plain_value(eq + 1)) {
            snprintf(err, errlen, "'%s': the value must be one word without quotes, '#' or '\\'",
                     words[i]);
            return -1;
        }
        value[k] = eq + 1;
    }
    if (!value[0] || (create && !value[1])) {
        snprintf(err, errlen, "%s needs %s", create ? "create" : "destroy",
                 create ? "name= and capacity=" : "name=");
        return -1;
    }
    if (!agent_persist_name_ok(value[0])) {
        snprintf(err, errlen, "name=%s: a name is a letter, then letters, digits or '_', at "
                 "most %d characters", value[0], AGENT_PERSIST_NAME_MAX);
        return -1;
    }
    size_t len = (size_t)snprintf(bb, bblen, "%s_persistent", create ? "create" : "destroy");
    for (size_t k = 0; k < nkeys && len < bblen; k++)
        if (value[k])
            len += (size_t)snprintf(bb + len, bblen - len, " %s=%s", keys[k], value[k]);
    if (len >= bblen || strlen(value[0]) >= namelen) {
        snprintf(err, errlen, "the request is longer than %zu characters", bblen - 1);
        return -1;
    }
    strcpy(name, value[0]);
    return 0;
}
