#include "http.h"

#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

long long http_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for fd to become ready for events until the deadline: 1 ready,
 * 0 timed out, -1 error. */
static int wait_fd(int fd, short events, long long deadline_ms)
{
    for (;;) {
        long long left = deadline_ms - http_now_ms();
        if (left <= 0)
            return 0;
        struct pollfd p = { .fd = fd, .events = events };
        int n = poll(&p, 1, (int)left);
        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 ? -1 : n;
    }
}

static ssize_t read_some(int fd, char *buf, size_t len, long long deadline_ms)
{
    int ready = wait_fd(fd, POLLIN, deadline_ms);
    if (ready <= 0)
        return ready == 0 ? -2 : -1;
    ssize_t n;
    do
        n = recv(fd, buf, len, 0);
    while (n < 0 && errno == EINTR);
    return n;
}

static int write_all(int fd, const char *buf, size_t len, long long deadline_ms)
{
    while (len) {
        if (wait_fd(fd, POLLOUT, deadline_ms) <= 0)
            return -1;
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static int parse_header(struct http_request *req, char *line, char *err, size_t errlen)
{
    char *colon = strchr(line, ':');
    if (!colon) {
        snprintf(err, errlen, "header line without ':': \"%.60s\"", line);
        return 400;
    }
    *colon = '\0';
    char *value = colon + 1;
    while (*value == ' ' || *value == '\t')
        value++;
    if (strcasecmp(line, "Content-Length") == 0) {
        char *end;
        errno = 0;
        long long n = strtoll(value, &end, 10);
        if (!isdigit((unsigned char)*value) || *end || errno || req->content_length >= 0) {
            snprintf(err, errlen, "bad or repeated Content-Length \"%.40s\"", value);
            return 400;
        }
        req->content_length = n;
    } else if (strcasecmp(line, "Transfer-Encoding") == 0) {
        req->chunked = 1;
    } else if (strcasecmp(line, "Expect") == 0) {
        req->expect_continue = strcasecmp(value, "100-continue") == 0;
    } else if (strcasecmp(line, "Authorization") == 0) {
        if (strlen(value) >= sizeof(req->authorization)) {
            snprintf(err, errlen, "Authorization header longer than %zu bytes",
                     sizeof(req->authorization) - 1);
            return 431;
        }
        strcpy(req->authorization, value);
    }
    return 0;
}

int http_read_head(int fd, long long deadline_ms, struct http_request *req,
                   char *err, size_t errlen)
{
    memset(req, 0, sizeof(*req));
    req->content_length = -1;
    char head[HTTP_HEADER_MAX + 1];
    size_t len = 0;
    char *end = NULL;
    /* Reads byte-wise up to the blank line so no body byte is consumed. */
    while (!end) {
        if (len == HTTP_HEADER_MAX) {
            snprintf(err, errlen, "request head longer than %d bytes", HTTP_HEADER_MAX);
            return 431;
        }
        ssize_t n = read_some(fd, head + len, 1, deadline_ms);
        if (n == -2) {
            snprintf(err, errlen, "timed out reading the request head");
            return 408;
        }
        if (n <= 0) {
            snprintf(err, errlen, "connection closed in the request head");
            return 400;
        }
        len++;
        head[len] = '\0';
        if (len >= 4 && memcmp(head + len - 4, "\r\n\r\n", 4) == 0)
            end = head + len - 4;
    }
    *end = '\0';
    char *save, *line = strtok_r(head, "\r\n", &save);
    char version[16];
    if (!line || sscanf(line, "%15s %255s %15s", req->method, req->path, version) != 3 ||
        strncmp(version, "HTTP/1.", 7) != 0) {
        snprintf(err, errlen, "bad request line \"%.80s\"", line ? line : "");
        return 400;
    }
    while ((line = strtok_r(NULL, "\r\n", &save))) {
        int status = parse_header(req, line, err, errlen);
        if (status)
            return status;
    }
    return 0;
}

int http_read_body(int fd, long long deadline_ms, struct http_request *req,
                   char *err, size_t errlen)
{
    if (req->expect_continue) {
        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
        if (write_all(fd, cont, sizeof(cont) - 1, deadline_ms) < 0) {
            snprintf(err, errlen, "cannot send 100 Continue");
            return 400;
        }
    }
    size_t want = (size_t)req->content_length;
    req->body = malloc(want + 1);
    if (!req->body) {
        snprintf(err, errlen, "out of memory for a %zu byte body", want);
        return 500;
    }
    while (req->body_len < want) {
        ssize_t n = read_some(fd, req->body + req->body_len, want - req->body_len, deadline_ms);
        if (n == -2) {
            snprintf(err, errlen, "timed out after %zu of %zu body bytes", req->body_len, want);
            return 408;
        }
        if (n <= 0) {
            snprintf(err, errlen, "connection closed after %zu of %zu body bytes",
                     req->body_len, want);
            return 400;
        }
        req->body_len += (size_t)n;
    }
    req->body[want] = '\0';
    return 0;
}

static const char *reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default:  return "Internal Server Error";
    }
}

void http_respond(int fd, long long deadline_ms, int status, const char *json_body)
{
    /* A client that used up the deadline (408) still gets told so. */
    long long floor_ms = http_now_ms() + 1000;
    if (deadline_ms < floor_ms)
        deadline_ms = floor_ms;
    char head[256];
    size_t blen = strlen(json_body);
    int n = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n", status, reason(status),
                     blen + 1);
    if (write_all(fd, head, (size_t)n, deadline_ms) == 0 &&
        write_all(fd, json_body, blen, deadline_ms) == 0)
        write_all(fd, "\n", 1, deadline_ms);
}

void http_request_free(struct http_request *req)
{
    free(req->body);
    req->body = NULL;
}
