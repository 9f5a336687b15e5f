/* max_read.c: see max_read.h. */
#include "fuse/max_read.h"

#include <stdio.h>
#include <unistd.h>

size_t adafs_fuse_pipe_bytes(unsigned max_read)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t need = ((size_t)max_read + page - 1) / page + 4, pages = 1;
    while (pages < need)
        pages *= 2;
    return pages * page;
}

unsigned adafs_fuse_max_read(void)
{
    FILE *f = fopen("/proc/sys/fs/pipe-max-size", "re");
    unsigned long max = 0;
    if (f) {
        if (fscanf(f, "%lu", &max) != 1)
            max = 0;
        fclose(f);
    }
    return max >= adafs_fuse_pipe_bytes(ADAFS_FUSE_MAX_READ_LARGE) ? ADAFS_FUSE_MAX_READ_LARGE
                                                                   : ADAFS_FUSE_MAX_READ_SMALL;
}
