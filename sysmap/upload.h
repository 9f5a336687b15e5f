/* upload: sending a report to sysmap-server over HTTP (libcurl). */
#ifndef SYSMAP_UPLOAD_H
#define SYSMAP_UPLOAD_H

#include <stddef.h>

struct upload_auth {
    const char *token;          /* shared token, or NULL */
    int munge;                  /* 1: send a munge credential */
    const char *munge_socket;   /* NULL: munge's default */
    const char *host;           /* the host the report is for */
};

/* POSTs body to url. Returns 0 when the server stored it; otherwise a
 * negative errno and err holds the server's or curl's message. */
int upload_report(const char *url, const char *body, size_t len,
                  const struct upload_auth *auth, char *err, size_t errlen);

#endif
