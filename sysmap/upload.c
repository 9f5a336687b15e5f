#include "upload.h"
#include "auth.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UPLOAD_TIMEOUT_S 60
#define REPLY_MAX 4096

struct reply { char text[REPLY_MAX]; size_t len; };

static size_t keep_reply(char *data, size_t size, size_t n, void *ctx)
{
    struct reply *r = ctx;
    size_t bytes = size * n, room = sizeof(r->text) - 1 - r->len;
    memcpy(r->text + r->len, data, bytes < room ? bytes : room);
    r->len += bytes < room ? bytes : room;
    r->text[r->len] = '\0';
    return bytes;
}

int upload_report(const char *url, const char *body, size_t len,
                  const struct upload_auth *auth, char *err, size_t errlen)
{
    char header[AUTH_TOKEN_MAX + 64];
    char *cred = NULL;
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/json");
    if (auth->munge) {
        int rc = auth_munge_encode(auth->munge_socket, auth->host, body, len, &cred, err, errlen);
        if (rc) {
            curl_slist_free_all(headers);
            return rc;
        }
        char *h = malloc(strlen(cred) + 32);
        if (h) {
            sprintf(h, "Authorization: Munge %s", cred);
            headers = curl_slist_append(headers, h);
            free(h);
        }
    } else if (auth->token) {
        snprintf(header, sizeof(header), "Authorization: Bearer %s", auth->token);
        headers = curl_slist_append(headers, header);
    }
    CURL *curl = curl_easy_init();
    if (!curl) {
        snprintf(err, errlen, "upload to %s: cannot initialise libcurl", url);
        curl_slist_free_all(headers);
        free(cred);
        return -ENOMEM;
    }
    struct reply reply = { .len = 0 };
    char curl_err[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, (long)UPLOAD_TIMEOUT_S);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, keep_reply);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, curl_err);
    CURLcode cc = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    int rc = 0;
    if (cc != CURLE_OK) {
        snprintf(err, errlen, "upload to %s: %s", url, curl_err[0] ? curl_err : curl_easy_strerror(cc));
        rc = -EIO;
    } else if (status != 200) {
        reply.text[strcspn(reply.text, "\r\n")] = '\0';
        snprintf(err, errlen, "upload to %s: HTTP %ld: %s", url, status, reply.text);
        rc = status == 401 || status == 403 ? -EACCES : -EIO;
    }
    curl_easy_cleanup(curl);
    curl_slist_free_all(headers);
    free(cred);
    return rc;
}
