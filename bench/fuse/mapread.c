/* mapread: reads a file through read() or through mmap, for comparing the
 * two (bench/fuse/run.sh).
 *
 *   mapread write FILE SIZE     writes SIZE bytes (1 MiB writes)
 *   mapread read FILE [OFFSET]  reads it with 1 MiB read()s into a buffer
 *                               (malloc's, or OFFSET bytes past a page:
 *                               0 as IOR's)
 *   mapread mmap FILE           maps it whole and copies it out 1 MiB at a
 *                               time into the same buffer
 *
 * Both readers touch every byte once, into a buffer of the same size, and
 * print "<what> <MiB/s>" timed from open to close; the mmap one includes
 * what mmap itself costs (through the interposer: reading the file). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "size.h"

#define XFER (1u << 20)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
    fprintf(stderr, "mapread: %s: %s\n", what, strerror(errno));
    exit(1);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: mapread write FILE SIZE | read FILE [OFFSET] | mmap FILE\n");
        return 2;
    }
    const char *cmd = argv[1], *path = argv[2];
    /* Through a FUSE mount with direct I/O a buffer off a page spans a page
     * more, which may cost the kernel a second request (doc/fuse.md). */
    size_t page = (size_t)sysconf(_SC_PAGESIZE), shift = 0;
    bool placed = strcmp(cmd, "read") == 0 && argc == 4;
    if (placed)
        shift = (size_t)strtoul(argv[3], NULL, 10) % page;
    char *mem = placed ? aligned_alloc(page, XFER + page) : malloc(XFER);
    if (!mem)
        die("malloc");
    char *buf = mem + shift;
    memset(buf, 'm', XFER);
    if (strcmp(cmd, "write") == 0 && argc == 4) {
        uint64_t size;
        if (size_parse(argv[3], &size) < 0) {
            fprintf(stderr, "mapread: '%s' is not a size\n", argv[3]);
            return 2;
        }
        int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
        if (fd < 0)
            die(path);
        for (uint64_t done = 0; done < size; done += XFER)
            if (write(fd, buf, size - done < XFER ? size - done : XFER) < 0)
                die("write");
        return close(fd) == 0 ? 0 : 1;
    }
    double t0 = now();
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        die(path);
    size_t size = (size_t)st.st_size;
    if (strcmp(cmd, "read") == 0) {
        for (size_t done = 0; done < size;) {
            ssize_t n = read(fd, buf, XFER);
            if (n == 0)
                errno = ENODATA;   /* shorter than fstat said */
            if (n <= 0)
                die("read");
            done += (size_t)n;
        }
    } else if (strcmp(cmd, "mmap") == 0) {
        char *p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED)
            die("mmap");
        for (size_t done = 0; done < size; done += XFER)
            memcpy(buf, p + done, size - done < XFER ? size - done : XFER);
        munmap(p, size);
    } else {
        fprintf(stderr, "mapread: unknown command '%s'\n", cmd);
        return 2;
    }
    close(fd);
    double t = now() - t0;
    printf("%s %.0f MiB/s\n", cmd, (double)size / (1 << 20) / t);
    free(mem);
    return 0;
}
