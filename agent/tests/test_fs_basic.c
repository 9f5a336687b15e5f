/* Basic file system calls against 1, 2 and 4 real servers: create, write,
 * read back, stat (and stat_entry), directories, unlink, truncate. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fstest.h"
#include "tap.h"

static void basic(int nservers)
{
    struct fstest t;
    fstest_start(&t, nservers, "--chunk-size 64K");
    adafs *fs = t.fs;
    char what[128];
#define W(s) (snprintf(what, sizeof(what), "%d servers: %s", nservers, s), what)
    tap_is_int(adafs_server_count(fs), nservers, W("server count from the instance file"));
    tap_is_str(adafs_mount_point(fs), "/mnt/adafs", W("mount point from the instance file"));
    tap_is_int(adafs_mkdir(fs, "/d", 0755), 0, W("mkdir /d"));
    int fd = adafs_open(fs, "/d/f", O_CREAT | O_RDWR, 0644);
    tap_ok(fd >= 0, "%s", W("create /d/f"));
    size_t len = 300000;   /* spans 5 chunks of 64K */
    char *data = malloc(len), *back = malloc(len);
    fstest_fill(data, len, 1);
    tap_is_int(adafs_write(fs, fd, data, len), len, W("write 300000 bytes"));
    tap_is_int(adafs_lseek(fs, fd, 0, SEEK_SET), 0, W("seek to 0"));
    memset(back, 0, len);
    tap_is_int(adafs_read(fs, fd, back, len), len, W("read them back"));
    tap_ok(memcmp(data, back, len) == 0, "%s", W("data intact"));
    tap_is_int(adafs_read(fs, fd, back, len), 0, W("read at end of file is 0"));
    struct stat st;
    tap_is_int(adafs_fstat(fs, fd, &st), 0, W("fstat"));
    tap_ok(S_ISREG(st.st_mode) && st.st_size == (off_t)len, "%s", W("fstat size and type"));
    tap_is_int(adafs_close(fs, fd), 0, W("close"));
    tap_is_int(adafs_close(fs, fd), -EBADF, W("second close is EBADF"));
    tap_is_int(adafs_stat(fs, "/d", &st), 0, W("stat /d"));
    tap_ok(S_ISDIR(st.st_mode), "%s", W("/d is a directory"));
    tap_is_int(adafs_stat(fs, "/nope", &st), -ENOENT, W("stat of a missing path is ENOENT"));
    tap_is_int(adafs_truncate(fs, "/d/f", 1000), 0, W("truncate to 1000"));
    tap_is_int(adafs_stat(fs, "/d/f", &st), 0, W("stat after truncate"));
    tap_is_int(st.st_size, 1000, W("size is 1000"));
    struct stat entry;
    tap_is_int(adafs_stat_entry(fs, "/d/f", &entry), 0, W("stat_entry of /d/f"));
    tap_ok(entry.st_ino == st.st_ino && entry.st_size == 1000, "%s", W("the same file as stat's"));
    tap_is_int(adafs_stat_entry(fs, "/d/nope", &entry), -ENOENT, W("stat_entry of a missing name"));
    /* what the ancestors are is not asked: ENOENT where stat says ENOTDIR */
    tap_is_int(adafs_stat(fs, "/d/f/x", &entry), -ENOTDIR, W("stat of a name under a file"));
    tap_is_int(adafs_stat_entry(fs, "/d/f/x", &entry), -ENOENT, W("stat_entry of it: ENOENT"));
    adafs_dir *dir;
    tap_is_int(adafs_opendir(fs, "/d", &dir), 0, W("opendir /d"));
    struct adafs_dirent ent;
    int n = 0, seen = 0;
    while (adafs_readdir(dir, &ent) == 1) {
        n++;
        seen |= strcmp(ent.name, "f") == 0 && ent.type == DT_REG;
    }
    adafs_closedir(dir);
    tap_ok(n == 3 && seen, "%s", W("listing has ., .. and f"));
    tap_is_int(adafs_unlink(fs, "/d/f"), 0, W("unlink /d/f"));
    tap_is_int(adafs_stat(fs, "/d/f", &st), -ENOENT, W("gone after unlink"));
    tap_is_int(adafs_rmdir(fs, "/d"), 0, W("rmdir /d"));
    free(data);
    free(back);
    fstest_stop(&t);
}

int main(void)
{
    basic(1);
    basic(2);
    basic(4);
    return tap_done();
}
