/* http: the little HTTP/1.1 that sysmap-server speaks.
 *
 * One request per connection, Content-Length bodies only (no chunked
 * encoding), "Expect: 100-continue" honoured, every read and write bounded
 * by a deadline so a slow or silent client cannot hold the server. This is
 * all a collector's POST needs, which is why the server does not pull in
 * libmicrohttpd (see doc/sysmap.md). */
#ifndef SYSMAP_HTTP_H
#define SYSMAP_HTTP_H

#include <stddef.h>

#define HTTP_HEADER_MAX 16384

struct http_request {
    char method[16];
    char path[256];
    long long content_length;      /* -1 when absent */
    int expect_continue;
    int chunked;
    char authorization[8192];
    char *body;                    /* malloc'd, NUL-terminated */
    size_t body_len;
};

/* Reads the request line and headers from fd before deadline_ms (a
 * CLOCK_MONOTONIC time in ms). Returns 0, or an HTTP status for a bad
 * request (400, 408, 431) with why in err. */
int http_read_head(int fd, long long deadline_ms, struct http_request *req,
                   char *err, size_t errlen);

/* Reads exactly content_length body bytes (after 100 Continue if asked). */
int http_read_body(int fd, long long deadline_ms, struct http_request *req,
                   char *err, size_t errlen);

/* Sends a complete response with a JSON body and "Connection: close",
 * taking at least one more second even when the deadline has passed. */
void http_respond(int fd, long long deadline_ms, int status, const char *json_body);

long long http_now_ms(void);

void http_request_free(struct http_request *req);

#endif
