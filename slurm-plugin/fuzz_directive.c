/* libFuzzer target: directive_parse must never crash, leak or overrun on any
 * script or --bb text, must always explain a rejection, and every accepted
 * request must survive formatting: the canonical form parses again to the
 * same canonical form (the plugin stores it and re-parses it at job start
 * and after a restart), persistent-instance lines included. */
#include "directive.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 8192)
        return 0;
    /* The first byte chooses script or --bb, the rest is the text. */
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    const char *body = size ? text + 1 : text;
    int as_script = size && (data[0] & 1);

    char err[512];
    struct bb_request req = { 0 };
    int rc = directive_parse("BB_ADAFS", as_script ? body : NULL, as_script ? NULL : body,
                             &req, err, sizeof(err));
    if (rc < 0 && !strstr(err, "#BB_ADAFS ("))
        abort();   /* a rejection that does not say where */
    if (rc == 1) {
        /* A persistent instance's name ends up in an environment variable's
         * name and a path: nothing but [A-Za-z0-9_] may pass, first a letter. */
        for (size_t i = 0; i < req.npersist; i++) {
            const char *n = req.persist[i].name;
            if (!isalpha((unsigned char)n[0]) || n[strspn(n, "abcdefghijklmnopqrstuvwxyz"
                                                      "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")])
                abort();
        }
        char *canon = bb_request_format("BB_ADAFS", &req);
        struct bb_request again = { 0 };
        if (!canon || directive_parse("BB_ADAFS", NULL, canon, &again, err, sizeof(err)) != 1)
            abort();
        char *canon2 = bb_request_format("BB_ADAFS", &again);
        if (!canon2 || strcmp(canon, canon2) != 0)
            abort();
        free(canon);
        free(canon2);
        bb_request_free(&again);
    }
    bb_request_free(&req);
    free(text);
    return 0;
}
