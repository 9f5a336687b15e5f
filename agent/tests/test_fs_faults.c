/* What goes wrong: a full node (ENOSPC, nothing lost), a killed or stopped
 * server (EIO within the timeout, never a hang), clients without the
 * instance's secret (refused), bad instance files, and the deployment's
 * promises (roots 0700 while running, wiped at stop). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fstest.h"
#include "hash.h"
#include "handshake.h"
#include "instance.h"
#include "net.h"
#include "proto.h"
#include "rpc.h"
#include "rpc_io.h"
#include "tap.h"

static void quota(void)
{
    struct fstest t;
    fstest_start(&t, 1, "--chunk-size 64K --quota 300000");
    adafs *fs = t.fs;
    char data[200000], back[200010], more[110000];
    fstest_fill(data, sizeof(data), 1);
    fstest_fill(more, sizeof(more), 2);
    int fd = adafs_open(fs, "/a", O_CREAT | O_RDWR, 0600);
    tap_is_int(adafs_write(fs, fd, data, sizeof(data)), sizeof(data), "200000 bytes fit in a 300000 quota");
    int fd2 = adafs_open(fs, "/b", O_CREAT | O_RDWR, 0600);
    tap_is_int(adafs_write(fs, fd2, more, sizeof(more)), 65536,
               "a write passing the quota is short: the chunks that fit");
    tap_is_int(adafs_write(fs, fd2, more + 65536, sizeof(more) - 65536), -ENOSPC,
               "the rest fails with ENOSPC");
    struct stat st;
    adafs_fstat(fs, fd2, &st);
    tap_is_int(st.st_size, 65536, "the file holds what fit, no more");
    tap_is_int(adafs_pwrite(fs, fd, more, 70000, 200000), -ENOSPC, "growing the first file: ENOSPC");
    tap_ok(adafs_pread(fs, fd, back, sizeof(back), 0) == sizeof(data) &&
           memcmp(back, data, sizeof(data)) == 0, "nothing already written is lost, size unchanged");
    tap_is_int(adafs_pwrite(fs, fd, more, 1000, 0), 1000, "overwriting inside the file still works");
    tap_is_int(adafs_create_write(fs, "/c", 0600, more, 50000), -ENOSPC, "create_write past the quota: ENOSPC");
    tap_is_int(adafs_stat(fs, "/c", &st), -ENOENT, "and leaves no half file");
    struct statvfs sv;
    adafs_statvfs(fs, &sv);
    tap_ok(sv.f_blocks == 300000 / 4096 && sv.f_bavail == (300000 - 265536) / 4096,
           "statvfs reports the quota (%lu of %lu blocks free)", (unsigned long)sv.f_bavail,
           (unsigned long)sv.f_blocks);
    adafs_close(fs, fd);
    adafs_unlink(fs, "/a");
    tap_is_int(adafs_pwrite(fs, fd2, more, sizeof(more), 0), sizeof(more), "space comes back after unlink");
    adafs_close(fs, fd2);
    fstest_stop(&t);

    fstest_start(&t, 1, "--quota 0");
    static char big[1 << 20];
    tap_is_int(adafs_create_write(t.fs, "/big", 0600, big, sizeof(big)), 0, "--quota 0 means no bound");
    fstest_stop(&t);
}

static void dead_servers(void)
{
    struct fstest t;
    fstest_start(&t, 2, "--chunk-size 64K --timeout-ms 1000");
    adafs *fs = t.fs;
    /* Files on each server, so both are in use. */
    int found = 0;
    for (int i = 0; i < 64 && found < 2; i++) {
        char p[32];
        snprintf(p, sizeof(p), "/f%d", i);
        adafs_create_write(fs, p, 0600, "x", 1);
    }
    static char big[2 << 20], back[2 << 20];
    fstest_fill(big, sizeof(big), 3);
    tap_is_int(adafs_create_write(fs, "/big", 0600, big, sizeof(big)), 0,
               "a file of 32 chunks, spread over both servers");
    int fd = adafs_open(fs, "/big", O_RDONLY, 0);
    /* A path whose metadata server 1 holds. */
    char on1[32];
    for (int i = 0;; i++) {
        snprintf(on1, sizeof(on1), "/f%d", i);
        if (hash_place_path(on1, 2) == 1)
            break;
    }
    int pid1 = fstest_server_pid(&t, 1);
    if (pid1 <= 0) {
        tap_ok(0, "no pid for server 1");
        fstest_stop(&t);
        return;
    }
    tap_is_int(fstest_sh("${ADAFS_CTL:-./adafs-ctl} status --base %s >%s/status.out", t.base, t.base), 0,
               "adafs-ctl status: all up, exit 0");
    tap_is_int(fstest_stop_process(pid1), 0, "server 1 is stopped (SIGSTOP)");
    double t0 = fstest_now();
    ssize_t n = adafs_pread(fs, fd, back, sizeof(back), 0);
    double waited = fstest_now() - t0;
    tap_is_int(n, -EIO, "a read touching a stopped server gives EIO");
    tap_ok(waited < 3.0, "within the bounded time (%.2f s for a 1 s timeout)", waited);
    struct stat st;
    t0 = fstest_now();
    tap_is_int(adafs_stat(fs, on1, &st), -EIO, "so does a stat of a path it holds");
    waited = fstest_now() - t0;
    tap_ok(waited > 0.5 && waited < 3.0, "after about the timeout (%.2f s)", waited);
    kill(pid1, SIGKILL);
    kill(pid1, SIGCONT);
    t0 = fstest_now();
    int eio = 0, other = 0;
    for (int i = 0; i < 64; i++) {
        char p[32];

        snprintf(p, sizeof(p), "/f%d", i);
        int rc = adafs_stat(fs, p, &st);
        eio += rc == -EIO;
        found += rc == 0;
        other += rc != 0 && rc != -EIO;
    }
    waited = fstest_now() - t0;
    tap_ok(eio > 0 && found > 0 && other == 0,
           "a killed server: its paths give EIO (%d), the others still work (%d)", eio, found);
    tap_ok(waited < 1.0, "at once: connection refused is not a timeout (%.3f s)", waited);
    tap_is_int(fstest_sh("${ADAFS_CTL:-./adafs-ctl} status --base %s >%s/status.out; rc=$?; "
                         "grep -q '^server 1 .* down' %s/status.out && grep -q '^server 0 .* up' "
                         "%s/status.out && exit $rc", t.base, t.base, t.base, t.base), 1,
               "adafs-ctl status names the dead server and exits 1");
    if (fd >= 0)
        adafs_close(fs, fd);
    fstest_stop(&t);
}

/* Writes a copy of an instance file with another secret. */
static void write_with_secret(const char *from, const char *to, const char *secret_hex)
{
    char err[256];
    struct instance in;
    instance_read(from, &in, err, sizeof(err));
    if (secret_hex)
        secret_from_hex(secret_hex, in.secret);
    else
        memset(in.secret, 0, sizeof(in.secret));
    instance_write(to, &in, err, sizeof(err));
    instance_free(&in);
}

static void security(void)
{
    struct fstest t, other;
    fstest_start(&t, 2, NULL);
    fstest_start(&other, 1, NULL);
    adafs_create_write(t.fs, "/secret-data", 0600, "s", 1);
    struct stat st;
    char path[512], err[256];
    snprintf(path, sizeof(path), "%s/root.0", t.base);
    tap_ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0700, "server roots are 0700");
    snprintf(path, sizeof(path), "%s/instance", t.base);
    tap_ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "the instance file is 0600");

    /* Another instance's secret. */
    struct instance oi;
    instance_read(other.instance, &oi, err, sizeof(err));
    char hex[65];
    secret_to_hex(oi.secret, hex);
    instance_free(&oi);
    char forged[512];
    snprintf(forged, sizeof(forged), "%s/forged", t.base);
    write_with_secret(t.instance, forged, hex);
    adafs *fs;
    tap_is_int(adafs_connect(&fs, forged, err, sizeof(err)), 0, "a client with another instance's secret connects lazily");
    tap_is_int(adafs_stat(fs, "/secret-data", &st), -EACCES, "and is refused: EACCES");
    char why[512];
    adafs_last_error(fs, why, sizeof(why));
    tap_ok(strstr(why, "refused our proof of the instance's secret") && strstr(why, "server "),
           "adafs_last_error names the server that refused (%s)", why);
    int fd = adafs_open(fs, "/x", O_CREAT | O_WRONLY, 0600);
    tap_is_int(fd, -EACCES, "it cannot create files either");
    adafs_disconnect(fs);
    write_with_secret(t.instance, forged, NULL);
    adafs_connect(&fs, forged, err, sizeof(err));
    tap_is_int(adafs_stat(fs, "/secret-data", &st), -EACCES, "an all-zero secret is refused");
    adafs_disconnect(fs);
    tap_is_int(adafs_stat(t.fs, "/secret-data", &st), 0, "the right secret still works");

    /* A raw client sending garbage: it is taken for a proof of the secret,
     * refused, and the server lives on. */
    struct instance in;
    instance_read(t.instance, &in, err, sizeof(err));
    int s = net_connect(in.servers[0].host, in.servers[0].port, 1000, err, sizeof(err));
    uint8_t hello[HANDSHAKE_HELLO_SIZE], answer[HANDSHAKE_ANSWER_SIZE];
    tap_is_int(net_read_full(s, hello, sizeof(hello), net_now_ms() + 2000), 0,
               "a new connection is greeted with the handshake's HELLO");
    char junk[100];
    memset(junk, 'J', sizeof(junk));
    net_write_full(s, junk, sizeof(junk), net_now_ms() + 1000);
    char c;
    tap_ok(net_read_full(s, answer, sizeof(answer), net_now_ms() + 2000) == 0 &&
           answer[0] == (uint8_t)-EACCES && answer[4] == 0,
           "garbage for a proof is answered EACCES, without the server's MAC");
    tap_ok(net_read_full(s, &c, 1, net_now_ms() + 2000) == -ECONNRESET,
           "and the server hangs up");
    close(s);
    /* A request header announcing 50 MiB sent without a handshake: its
     * first 64 bytes are a wrong proof; the payload is never waited for
     * (nor allocated). */
    s = net_connect(in.servers[0].host, in.servers[0].port, 1000, err, sizeof(err));
    net_read_full(s, hello, sizeof(hello), net_now_ms() + 2000);
    struct rpc_header h = { .opcode = 2, .id = 9, .length = 50u << 20 };
    uint8_t hdr[HANDSHAKE_PROOF_SIZE] = { 0 };
    rpc_header_encode(&h, hdr);
    net_write_full(s, hdr, sizeof(hdr), net_now_ms() + 1000);
    int got = net_read_full(s, answer, sizeof(answer), net_now_ms() + 2000);
    tap_ok(got == 0 && answer[0] == (uint8_t)-EACCES,
           "a request without the handshake is refused (EACCES) before its payload");
    tap_ok(net_read_full(s, &c, 1, net_now_ms() + 2000) == -ECONNRESET, "and the connection is closed");
    close(s);
    instance_free(&in);
    tap_is_int(adafs_stat(t.fs, "/secret-data", &st), 0, "and the server still serves");

    /* Instance files that must be refused. */
    chmod(forged, 0644);
    tap_is_int(adafs_connect(&fs, forged, err, sizeof(err)), -EPERM, "an instance file readable by others: EPERM");
    tap_ok(strstr(err, "0644") != NULL, "the message names the mode (%s)", err);
    tap_is_int(adafs_connect(&fs, "/nonexistent/instance", err, sizeof(err)), -ENOENT, "missing instance file: ENOENT");
    int bad = open(forged, O_WRONLY | O_TRUNC);
    dprintf(bad, "mount=/x\nchunk_size=12Q\n");
    close(bad);
    chmod(forged, 0600);
    tap_is_int(adafs_connect(&fs, forged, err, sizeof(err)), -EINVAL, "bad chunk size: EINVAL");
    tap_ok(strstr(err, ":2:") != NULL && strstr(err, "chunk_size") != NULL, "names line and key (%s)", err);
    bad = open(forged, O_WRONLY | O_TRUNC);
    dprintf(bad, "mount=/x\nsecret=%s\n", hex);
    close(bad);
    tap_is_int(adafs_connect(&fs, forged, err, sizeof(err)), -EINVAL, "no server lines: EINVAL");
    bad = open(forged, O_WRONLY | O_TRUNC);
    dprintf(bad, "mount=/x\nserver=h:1\nsecret=abc\n");
    close(bad);
    tap_is_int(adafs_connect(&fs, forged, err, sizeof(err)), -EINVAL, "short secret: EINVAL");
    bad = open(forged, O_WRONLY | O_TRUNC);
    dprintf(bad, "mount=/x\nserver=h:1\nsecret=%s\ncolour=blue\n", hex);
    close(bad);
    tap_is_int(adafs_connect(&fs, forged, err, sizeof(err)), -EINVAL, "unknown key: EINVAL");
    unsetenv(ADAFS_ENV_INSTANCE);
    tap_is_int(adafs_connect(&fs, NULL, err, sizeof(err)), -EINVAL, "no file and no $ADAFS_INSTANCE: EINVAL");
    setenv(ADAFS_ENV_INSTANCE, t.instance, 1);
    tap_is_int(adafs_connect(&fs, NULL, err, sizeof(err)), 0, "$ADAFS_INSTANCE names the file");
    adafs_disconnect(fs);

    char base[256];
    snprintf(base, sizeof(base), "%s", t.base);
    adafs_disconnect(t.fs);
    t.fs = NULL;
    double t0 = fstest_now();
    int rc = fstest_sh("${ADAFS_CTL:-./adafs-ctl} stop --base %s 2>/dev/null", base);
    double took = fstest_now() - t0;
    snprintf(path, sizeof(path), "%s/root.0", base);
    tap_ok(rc == 0 && stat(path, &st) < 0 && errno == ENOENT, "stop wipes the server roots (%.0f ms)",
           took * 1000);
    snprintf(path, sizeof(path), "%s/instance", base);
    tap_ok(stat(path, &st) < 0, "and removes the instance file");
    fstest_sh("rm -rf %s", base);
    fstest_stop(&other);
}

/* What only a broken or hostile client sends: each is refused with its own
 * error, and the connection goes on serving. */
static void protocol_errors(void)
{
    struct fstest t;
    fstest_start(&t, 1, "--chunk-size 64K");
    char err[256];
    struct instance in;
    instance_read(t.instance, &in, err, sizeof(err));
    int fd = fstest_connect(&in, 0, 0);
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    tap_is_int(fstest_raw_call(fd, FS_PING, NULL, NULL, NULL), 0, "raw ping");
    tap_is_int(fstest_raw_call(fd, 999, NULL, NULL, NULL), -EOPNOTSUPP, "unknown opcode: EOPNOTSUPP");
    tap_is_int(fstest_raw_call(fd, FS_STAT, NULL, NULL, NULL), -EBADMSG, "stat without a path: EBADMSG");
    rpc_put_str(&w, "relative");
    tap_is_int(fstest_raw_call(fd, FS_STAT, &w, NULL, NULL), -EINVAL, "relative path: EINVAL");
    w.len = 0;
    rpc_put_str(&w, "/a/../b");
    tap_is_int(fstest_raw_call(fd, FS_STAT, &w, NULL, NULL), -EINVAL, "path with ..: EINVAL");
    w.len = 0;
    rpc_put_str(&w, "/a/");
    tap_is_int(fstest_raw_call(fd, FS_STAT, &w, NULL, NULL), -EINVAL, "path ending in /: EINVAL");
    w.len = 0;
    rpc_put_str(&w, "/x");
    rpc_put_u32(&w, 0);
    tap_is_int(fstest_raw_call(fd, FS_STAT, &w, NULL, NULL), -EBADMSG, "trailing bytes: EBADMSG");
    w.len = 0;
    rpc_put_u64(&w, 7);
    rpc_put_u64(&w, 0);
    rpc_put_u32(&w, 65530);
    rpc_put_u32(&w, 10);
    fs_cap_put(&w, &(struct fs_cap){ 0 });
    rpc_put_raw(&w, "0123456789", 10);
    tap_is_int(fstest_raw_call(fd, FS_WRITE, &w, NULL, NULL), -EINVAL, "write past the chunk's end: EINVAL");
    w.len = 0;
    rpc_put_u64(&w, 7);
    rpc_put_u64(&w, 0);
    rpc_put_u32(&w, 0);
    rpc_put_u32(&w, 100);   /* announces 100 bytes, sends 3 */
    fs_cap_put(&w, &(struct fs_cap){ 0 });
    rpc_put_raw(&w, "abc", 3);
    tap_is_int(fstest_raw_call(fd, FS_WRITE, &w, NULL, NULL), -EBADMSG, "write whose data is short: EBADMSG");
    w.len = 0;
    rpc_put_u64(&w, 7);
    rpc_put_u64(&w, 0);
    rpc_put_u32(&w, 0);
    rpc_put_u32(&w, 1 << 20);
    rpc_put_u32(&w, 0);
    fs_cap_put(&w, &(struct fs_cap){ 0 });
    tap_is_int(fstest_raw_call(fd, FS_READ, &w, NULL, NULL), -EINVAL, "read past the chunk's end: EINVAL");
    w.len = 0;
    rpc_put_str(&w, "/");
    rpc_put_str(&w, "");
    rpc_put_u32(&w, 10);
    fs_cap_put(&w, &(struct fs_cap){ 0 });
    tap_is_int(fstest_raw_call(fd, FS_LIST, &w, NULL, NULL), 0, "and the connection still serves");
    rpc_writer_free(&w);
    close(fd);
    instance_free(&in);
    fstest_stop(&t);
}

static void ctl_errors(void)
{
    /* A port that was free a moment ago, for --port-base. */
    char err[256];
    int port = 0;
    int l = net_listen("127.0.0.1", 0, 1, &port, err, sizeof(err));
    close(l);
    tap_ok(fstest_sh("d=$(mktemp -d) && ${ADAFS_CTL:-./adafs-ctl} start --servers 1 --base $d "
                     "--port-base %d >/dev/null 2>&1 && grep -q '^server=127.0.0.1:%d$' $d/instance; "
                     "r=$?; ${ADAFS_CTL:-./adafs-ctl} stop --base $d 2>/dev/null; rm -rf $d; exit $r",
                     port, port) == 0,
           "--port-base puts the servers on the given ports");
    tap_ok(fstest_sh("${ADAFS_CTL:-./adafs-ctl} start --servers 0 --base /tmp/x 2>/dev/null") == 2,
           "adafs-ctl refuses --servers 0");
    tap_ok(fstest_sh("${ADAFS_CTL:-./adafs-ctl} start --servers 1 2>/dev/null") == 2,
           "adafs-ctl wants --base");
    tap_ok(fstest_sh("${ADAFS_CTL:-./adafs-ctl} stop --base /nonexistent 2>/dev/null") == 1,
           "stop without an instance fails");
    tap_ok(fstest_sh("d=$(mktemp -d) && ${ADAFS_CTL:-./adafs-ctl} start --servers 1 --base $d "
                     "--adafsd /bin/false 2>$d/err; rc=$?; grep -q 'did not start' $d/err && "
                     "test $rc = 1 && test ! -e $d/instance; r=$?; rm -rf $d; exit $r") == 0,
           "a server that cannot start fails start with a message, leaving no instance");
    tap_ok(fstest_sh("d=$(mktemp -d) && ./adafsd --index 0 --hosts 127.0.0.1:0 --root $d/r "
                     "--secret-file $d/none --foreground 2>$d/err; rc=$?; grep -q 'cannot open' $d/err "
                     "&& test $rc = 1; r=$?; rm -rf $d; exit $r") == 0,
           "adafsd without its secret file fails naming it");
    tap_ok(fstest_sh("d=$(mktemp -d) && ./adafsd --index 3 --hosts 127.0.0.1:0 --root $d/r "
                     "--secret-file $d/none --foreground 2>$d/err; rc=$?; grep -q 'out of range' $d/err "
                     "&& test $rc = 1; r=$?; rm -rf $d; exit $r") == 0,
           "adafsd with an index beyond --hosts fails");
}

/* The agent (root) reads this line from a process of the job's user. */
static void ready_lines(void)
{
    int port = 0, pid = 0;
    tap_ok(instance_ready_parse("ready port=6830 pid=42\n", &port, &pid) == 0 && port == 6830 &&
           pid == 42, "ready line: port and pid read");
    static const char *const bad[] = {
        "ready port=0 pid=42", "ready port=65536 pid=42", "ready port=-1 pid=42",
        "ready port=99999999999999999999 pid=42", "ready port=6830 pid=0",
        "ready port=6830 pid=2147483648", "ready port=6830", "ready port=6830 pid=42 extra",
        "ready port= 6830 pid=42", "ready port=+6830 pid=42", "error cannot bind", "",
    };
    int refused = 0;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        refused += instance_ready_parse(bad[i], &port, &pid) == -EINVAL;
    tap_is_int(refused, (int)(sizeof(bad) / sizeof(bad[0])),
               "ready line: out-of-range, signed, partial or trailing numbers refused");
    tap_ok(port == 6830 && pid == 42, "ready line: a refused line leaves port and pid alone");
}

int main(void)
{
    ready_lines();
    quota();
    dead_servers();
    security();
    protocol_errors();
    ctl_errors();
    return tap_done();
}
