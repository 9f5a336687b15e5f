/* cap_client: what a user of an instance shared by several users (adafsd
 * --owner with a server key) could send the servers with raw requests,
 * past every check of libadafs, for test_fs_shared.sh. Run as that user:
 *
 *   cap_client INSTANCE_FILE MODE PATH [FILE]
 *
 * MODE:
 *   write    PATH is a file the user may read, not write: its record
 *            (STAT) gives its data key and a capability; WRITE to chunk 0
 *            with no capability, with that one, and with it claiming write
 *            too; TRUNC_DATA with it. Prints "none=E read=E forged=E
 *            trunc=E" (errno names, OK for success).
 *   steal    a CREATE of a file of the user's own under PATH's data key,
 *            and a PUT of a record of the user's naming that key (a forged
 *            rename), with PATH's capability and with none. Prints
 *            "create=same|other put=E put0=E".
 *   mkin     PATH is a directory the user may list, not write: CREATE of
 *            an entry in it with no capability, with the directory's from
 *            its STAT, with that one claiming write. Prints "none=E
 *            read=E forged=E".
 *   list     LIST of the directory PATH with no capability and with the
 *            one its STAT gave. Prints "none=E cap=E".
 *   capture  STAT of PATH; saves key and capability in FILE, then READs
 *            chunk 0 with them. Prints the READ's status.
 *   replay   READs chunk 0 with what FILE holds. Prints its status. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fstest.h"
#include "hash.h"
#include "proto.h"

static struct instance inst;

static const char *status_name(int st)
{
    return st == 0 ? "OK" : st == 1 ? "IO" : st < 0 ? strerrorname_np(-st) : "?";
}

static int conn(unsigned server)
{
    int fd = fstest_connect(&inst, (int)server, 0);
    if (fd < 0) {
        fprintf(stderr, "cap_client: cannot connect to server %u: %s\n", server, strerror(-fd));
        exit(1);
    }
    return fd;
}

/* Sends the request w holds as op on fd, then frees w and closes fd: the
 * answer's status (fstest_raw_call's), its payload dropped. */
static int call_and_close(int fd, uint16_t op, struct rpc_writer *w)
{
    struct rpc_reader r;
    uint8_t *p = NULL;
    int st = fstest_raw_call(fd, op, w, &r, &p);
    free(p);
    rpc_writer_free(w);
    close(fd);
    return st;
}

/* STAT of path: its record and the capability that came with it. */
static int stat_cap(const char *path, struct fs_record *rec, struct fs_cap *cap)
{
    int fd = conn(hash_place_path(path, inst.nservers));
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    rpc_put_str(&w, path);
    struct rpc_reader r;
    uint8_t *p = NULL;
    int st = fstest_raw_call(fd, FS_STAT, &w, &r, &p);
    if (st == 0) {
        fs_record_get(&r, rec);
        fs_cap_get(&r, cap);
        st = rpc_reader_done(&r) ? 0 : 1;
    }
    free(p);
    rpc_writer_free(&w);
    close(fd);
    return st;
}

static int chunk_call(uint64_t key, uint16_t op, const struct fs_cap *cap)
{
    int fd = conn(hash_place_chunk(key, 0, inst.nservers));
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    rpc_put_u64(&w, key);
    if (op == FS_TRUNC_DATA) {
        rpc_put_u64(&w, 0);
        rpc_put_u64(&w, 1);
        fs_cap_put(&w, cap);
    } else {
        rpc_put_u64(&w, 0);
        rpc_put_u32(&w, 0);
        rpc_put_u32(&w, 5);
        if (op == FS_READ)
            rpc_put_u32(&w, 0);
        fs_cap_put(&w, cap);
        if (op == FS_WRITE)
            rpc_put_raw(&w, "owned", 5);
    }
    return call_and_close(fd, op, &w);
}

/* CREATE_EXCL of path (mode 0600) under data key key, with parent's
 * capability; made, if not NULL, gets the record the server made. */
static int create_req(const char *path, uint64_t key, const struct fs_cap *parent,
                      struct fs_record *made)
{
    int fd = conn(hash_place_path(path, inst.nservers));
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    rpc_put_str(&w, path);
    rpc_put_u32(&w, 0600);
    rpc_put_u32(&w, FS_CREATE_EXCL);
    rpc_put_u64(&w, key);
    fs_cap_put(&w, parent);
    struct rpc_reader r;
    uint8_t *p = NULL;
    int st = fstest_raw_call(fd, FS_CREATE, &w, &r, &p);
    if (st == 0 && made)
        fs_record_get(&r, made);
    free(p);
    rpc_writer_free(&w);
    close(fd);
    return st;
}

static int create_in(const char *dir, const struct fs_cap *parent)
{
    char path[FS_PATH_MAX];
    snprintf(path, sizeof(path), "%s/made%d", dir, (int)getpid());
    return create_req(path, 77, parent, NULL);
}

/* LIST of dir on every server: the first refusal, else 0. */
static int list_dir(const char *dir, const struct fs_cap *cap)
{
    int first = 0;
    for (int s = 0; s < inst.nservers; s++) {
        int fd = conn((unsigned)s);
        struct rpc_writer w;
        rpc_writer_init(&w, NULL, 0);
        rpc_put_str(&w, dir);
        rpc_put_str(&w, "");
        rpc_put_u32(&w, 100);
        fs_cap_put(&w, cap);
        int st = call_and_close(fd, FS_LIST, &w);
        if (st && !first)
            first = st;
    }
    return first;
}

static int put_forged(const char *path, uint64_t key, const struct fs_cap *cap)
{
    int fd = conn(hash_place_path(path, inst.nservers));
    struct fs_record rec = { .mode = S_IFREG | 0644, .size = 5, .key = key,
                             .uid = (uint32_t)getuid(), .gid = (uint32_t)getgid() };
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    rpc_put_str(&w, path);
    fs_record_put(&w, &rec);
    rpc_put_u32(&w, 0);
    fs_cap_put(&w, cap);
    fs_cap_put(&w, &(struct fs_cap){ 0 });   /* the parent: the root needs none */
    return call_and_close(fd, FS_PUT, &w);
}

int main(int argc, char **argv)
{
    char err[512];
    if (argc < 4 || instance_read(argv[1], &inst, err, sizeof(err)) < 0) {
        fprintf(stderr, "usage: cap_client INSTANCE_FILE MODE PATH [FILE] (%s)\n",
                argc >= 4 ? err : "");
        return 2;
    }
    const char *mode = argv[2], *path = argv[3], *file = argc > 4 ? argv[4] : NULL;
    struct fs_record rec;
    struct fs_cap cap, none = { 0 };
    if (!strcmp(mode, "replay")) {
        uint64_t key;
        FILE *f = file ? fopen(file, "rb") : NULL;
        if (!f || fread(&key, sizeof(key), 1, f) != 1 || fread(&cap, sizeof(cap), 1, f) != 1)
            return fprintf(stderr, "cap_client: cannot read %s\n", file ? file : "(none)"), 1;
        fclose(f);
        puts(status_name(chunk_call(key, FS_READ, &cap)));
        return 0;
    }
    int st = stat_cap(path, &rec, &cap);
    if (st != 0)
        return fprintf(stderr, "cap_client: STAT %s: %s\n", path, status_name(st)), 1;
    if (!strcmp(mode, "write")) {
        struct fs_cap forged = cap;
        forged.rights |= FS_CAP_WRITE;
        printf("none=%s", status_name(chunk_call(rec.key, FS_WRITE, &none)));
        printf(" read=%s", status_name(chunk_call(rec.key, FS_WRITE, &cap)));
        printf(" forged=%s", status_name(chunk_call(rec.key, FS_WRITE, &forged)));
        printf(" trunc=%s\n", status_name(chunk_call(rec.key, FS_TRUNC_DATA, &cap)));
    } else if (!strcmp(mode, "steal")) {
        char mine[FS_PATH_MAX];
        snprintf(mine, sizeof(mine), "%s.stolen%d", path, (int)getpid());
        struct fs_record made = { 0 };
        st = create_req(mine, rec.key, &none, &made);   /* the parent: the root needs none */
        printf("create=%s", st ? status_name(st) : made.key == rec.key ? "same" : "other");
        snprintf(mine, sizeof(mine), "%s.renamed%d", path, (int)getpid());
        printf(" put=%s", status_name(put_forged(mine, rec.key, &cap)));
        printf(" put0=%s\n", status_name(put_forged(mine, rec.key, &none)));
    } else if (!strcmp(mode, "mkin")) {
        struct fs_cap forged = cap;
        forged.rights |= FS_CAP_WRITE;
        printf("none=%s", status_name(create_in(path, &none)));
        printf(" read=%s", status_name(create_in(path, &cap)));
        printf(" forged=%s\n", status_name(create_in(path, &forged)));
    } else if (!strcmp(mode, "list")) {
        printf("none=%s", status_name(list_dir(path, &none)));
        printf(" cap=%s\n", status_name(list_dir(path, &cap)));
    } else if (!strcmp(mode, "capture")) {
        FILE *f = file ? fopen(file, "wb") : NULL;
        if (!f || fwrite(&rec.key, sizeof(rec.key), 1, f) != 1 ||
            fwrite(&cap, sizeof(cap), 1, f) != 1 || fclose(f) != 0)
            return fprintf(stderr, "cap_client: cannot write %s\n", file ? file : "(none)"), 1;
        puts(status_name(chunk_call(rec.key, FS_READ, &cap)));
    } else {
        fprintf(stderr, "cap_client: unknown mode %s\n", mode);
        return 2;
    }
    return 0;
}
