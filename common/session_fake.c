#include "session_fake.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long next_serial = 1;
static unsigned long *opened;
static size_t nopened, capopened;

static int seal(const struct session_auth *a, const void *payload, size_t len, uid_t reader,
                char **cred, char *err, size_t errlen)
{
    const struct session_fake *id = a->data;
    pthread_mutex_lock(&lock);
    unsigned long serial = next_serial++;
    pthread_mutex_unlock(&lock);
    char *text = malloc(64 + 2 * len + 1);
    if (!text) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    int n = sprintf(text, "FAKE:%u:%u:%lu:", (unsigned)id->me, (unsigned)reader, serial);
    for (size_t i = 0; i < len; i++)
        n += sprintf(text + n, "%02x", ((const unsigned char *)payload)[i]);
    *cred = text;
    return 0;
}

static int remember(unsigned long serial)
{
    pthread_mutex_lock(&lock);
    int rc = 0;
    for (size_t i = 0; i < nopened && rc == 0; i++)
        if (opened[i] == serial)
            rc = -EEXIST;
    if (rc == 0 && nopened == capopened) {
        size_t cap = capopened ? 2 * capopened : 64;
        unsigned long *grown = realloc(opened, cap * sizeof(*grown));
        if (grown) {
            opened = grown;
            capopened = cap;
        }
    }
    if (rc == 0 && nopened < capopened)
        opened[nopened++] = serial;
    pthread_mutex_unlock(&lock);
    return rc;
}

static int open_cred(const struct session_auth *a, const char *cred, void **payload, size_t *len,
                     uid_t *uid, char *err, size_t errlen)
{
    const struct session_fake *id = a->data;
    unsigned sealer, reader;
    unsigned long serial;
    int at = 0;
    *payload = NULL;
    *len = 0;
    if (sscanf(cred, "FAKE:%u:%u:%lu:%n", &sealer, &reader, &serial, &at) != 3 || at == 0) {
        snprintf(err, errlen, "credential refused: malformed");
        return -EACCES;
    }
    if (reader != (unsigned)id->me) {
        snprintf(err, errlen, "credential refused: Unauthorized credential for client UID=%u",
                 (unsigned)id->me);
        return -EACCES;
    }
    const char *hex = cred + at;
    size_t digits = strlen(hex);
    if (digits % 2 || strspn(hex, "0123456789abcdef") != digits) {
        snprintf(err, errlen, "credential refused: malformed payload");
        return -EACCES;
    }
    /* As munge: a replayed credential still opens, reported apart. */
    int replayed = remember(serial) < 0;
    unsigned char *buf = malloc(digits / 2 + 1);
    if (!buf) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    for (size_t i = 0; i < digits / 2; i++) {
        unsigned byte;
        sscanf(hex + 2 * i, "%2x", &byte);
        buf[i] = (unsigned char)byte;
    }
    *payload = buf;
    *len = digits / 2;
    *uid = sealer;
    if (replayed)
        snprintf(err, errlen, "credential replayed");
    return replayed ? -EALREADY : 0;
}

void session_fake_init(struct session_auth *a, struct session_fake *id, uid_t me)
{
    id->me = me;
    *a = (struct session_auth){ .seal = seal, .open = open_cred, .data = id };
}

void session_fake_forget(void)
{
    pthread_mutex_lock(&lock);
    nopened = 0;
    pthread_mutex_unlock(&lock);
}
