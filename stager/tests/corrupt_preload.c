/* corrupt_preload: a test-only LD_PRELOAD shim that flips one byte of every
 * pwrite() to a file whose path contains $CORRUPT_NAME, as failing storage
 * would. It lets verify.sh prove that --verify catches what it claims to. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off);

static int targeted(int fd)
{
    const char *name = getenv("CORRUPT_NAME");
    char link[64], path[4096];
    if (!name || !*name)
        return 0;
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t len = readlink(link, path, sizeof(path) - 1);
    if (len <= 0)
        return 0;
    path[len] = '\0';
    return strstr(path, name) != NULL;
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    static ssize_t (*real)(int, const void *, size_t, off_t);
    if (!real)
        real = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite64");
    if (n == 0 || !targeted(fd))
        return real(fd, buf, n, off);
    char *copy = malloc(n);
    if (!copy)
        return real(fd, buf, n, off);
    memcpy(copy, buf, n);
    copy[n / 2] ^= 0x20;
    ssize_t r = real(fd, copy, n, off);
    free(copy);
    return r;
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    return pwrite64(fd, buf, n, off);
}
