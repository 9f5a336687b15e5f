/* munge_cred SOCKET HOST FILE: prints the Authorization value sysmap would
 * send for the body in FILE as HOST, so the server tests can pair a valid
 * credential with a report for another host. */
#include "auth.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: munge_cred SOCKET HOST FILE\n");
        return 2;
    }
    static char body[1 << 20];
    FILE *f = fopen(argv[3], "rb");
    size_t len = f ? fread(body, 1, sizeof(body), f) : 0;
    if (!f) {
        perror(argv[3]);
        return 1;
    }
    fclose(f);
    char *cred, err[512];
    if (auth_munge_encode(argv[1], argv[2], body, len, &cred, err, sizeof(err)) < 0) {
        fprintf(stderr, "munge_cred: %s\n", err);
        return 1;
    }
    printf("Munge %s\n", cred);
    free(cred);
    return 0;
}
