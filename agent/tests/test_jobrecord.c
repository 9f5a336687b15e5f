/* Unit tests of the agent's record of a job (agentd/jobrecord.h): it comes
 * back as written; a record others may write, or a link, is refused; the
 * server is pinned only while it is the process the record names (its pid
 * and start time in this boot, its uid, the server program). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jobrecord.h"
#include "tap.h"

static char dir[64], err[512];

int main(void)
{
    snprintf(dir, sizeof(dir), "/tmp/adafs-jobrec.XXXXXX");
    if (!mkdtemp(dir))
        return tap_ok(0, "mkdtemp: %m"), tap_done();
    char path[128], link_path[128];
    jobrec_path(path, sizeof(path), dir);
    struct job_rec r = { .id = 42, .uid = 1001, .gid = 1002, .index = 1, .nservers = 3,
                         .port = 4567, .pid = getpid(), .fuse = true };
    uid_t me;
    tap_ok(jobrec_proc_start(getpid(), &r.pid_start, &me) == 0 && r.pid_start > 0 && me == getuid(),
           "a live process's start time and owner");
    tap_ok(jobrec_boot_id(r.boot_id, sizeof(r.boot_id)) == 0 && strlen(r.boot_id) >= 32,
           "this boot's id (%s)", r.boot_id);
    snprintf(r.secret_hex, sizeof(r.secret_hex), "%064d", 7);
    snprintf(r.storage, sizeof(r.storage), "/s");
    snprintf(r.image, sizeof(r.image), "/s/n1/job.42.img");
    tap_ok(jobrec_save(path, &r) == 0, "saved");
    struct stat st;
    tap_ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "0600");
    struct job_rec back;
    int rc = jobrec_load(path, &back, err, sizeof(err));
    bool root = getuid() == 0;
    if (root) {
        tap_ok(rc == 0, "loads: %s", rc ? err : "");
        tap_ok(back.id == 42 && back.uid == 1001 && back.gid == 1002 && back.index == 1 &&
               back.nservers == 3 && back.port == 4567 && back.pid == r.pid &&
               back.pid_start == r.pid_start && back.fuse && !back.staging &&
               strcmp(back.secret_hex, r.secret_hex) == 0 && strcmp(back.image, r.image) == 0 &&
               back.mount[0] == '\0' && strcmp(back.boot_id, r.boot_id) == 0,
               "every field comes back");
        chmod(path, 0644);
        tap_ok(jobrec_load(path, &back, err, sizeof(err)) == -EPERM, "readable by others: refused");
        chmod(path, 0600);
        snprintf(link_path, sizeof(link_path), "%s/link.record", dir);
        tap_ok(symlink(path, link_path) == 0 &&
               jobrec_load(link_path, &back, err, sizeof(err)) < 0, "a link: refused");
        char hard[160];
        snprintf(hard, sizeof(hard), "%s/hard.record", dir);
        tap_ok(link(path, hard) == 0 && jobrec_load(path, &back, err, sizeof(err)) == -EPERM,
               "two links: refused");
        unlink(hard);
        unlink(link_path);
    } else {
        tap_ok(rc == -EPERM, "not root's: refused (%s)", err);
    }

    /* The pin: this test is no adafsd, so a live pid is refused for its
     * program; a dead or recycled one for its start time. */
    r.uid = getuid();
    tap_ok(jobrec_pin_server(&r, err, sizeof(err)) == -EPERM, "not the server program: refused (%s)", err);
    struct job_rec other = r;
    other.pid_start++;
    tap_ok(jobrec_pin_server(&other, err, sizeof(err)) == -ESRCH,
           "another start time (a recycled pid): refused (%s)", err);
    other = r;
    snprintf(other.boot_id, sizeof(other.boot_id), "another-boot");
    tap_ok(jobrec_pin_server(&other, err, sizeof(err)) == -ESRCH, "another boot: refused (%s)", err);
    pid_t child = fork();
    if (child == 0) {
        pause();
        _exit(0);
    }
    other = r;
    other.pid = child;
    tap_ok(jobrec_proc_start(child, &other.pid_start, &me) == 0, "the child's start time");
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    tap_ok(jobrec_pin_server(&other, err, sizeof(err)) == -ESRCH, "a dead server: refused (%s)", err);

    /* Garbage and missing fields. */
    FILE *f = fopen(path, "w");
    fputs("id=42\nuid=0\n", f);
    fclose(f);
    chmod(path, 0600);
    if (root)
        tap_ok(jobrec_load(path, &back, err, sizeof(err)) == -EBADMSG, "fields missing: refused (%s)", err);
    unlink(path);
    rmdir(dir);
    return tap_done();
}
