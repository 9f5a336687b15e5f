/* libFuzzer target for every request adafsd serves: the first input byte
 * picks the opcode, the second whether the server is alone or one of two
 * (then about half the keys belong to the other), the rest is the payload,
 * handled by the real dispatch table against a real server (RocksDB
 * metadata and chunk files in a temporary directory, removed at exit) that
 * keeps its state from input to input, as a long-running server does.
 * Nothing a client sends may crash a handler, leak, or be answered with
 * anything but 0 or a negative errno. With ADAFS_FUZZ_SEEDS=DIR it first
 * writes one well-formed request per opcode there (fsd/fuzz_dispatch.sh
 * starts the corpus from them). */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "server.h"

static struct server srv;
static char root[4096];

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st; (void)type; (void)ftw;
    return remove(path);
}

static void remove_root(void)
{
    nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void seed(const char *dir, uint16_t op, const struct rpc_writer *w)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/op%02u", dir, op);
    FILE *f = fopen(path, "we");
    uint8_t head[2] = { (uint8_t)op, 0 };   /* one of two servers */
    if (!f || fwrite(head, 1, 2, f) != 2 || fwrite(w->data, 1, w->len, f) != w->len || fclose(f))
        abort();
}

/* One well-formed request of each opcode, on a few paths and data keys so
 * that the mutations reach past the decoding into the handlers. */
static void write_seeds(const char *dir)
{
    const struct fs_record rec = { .mode = 0100644, .size = 5, .key = 43 };
    const struct fs_cap cap = { 0 };   /* one job's servers take the zero capability */
    for (uint16_t op = FS_PING; op < FS_OP_COUNT; op++) {
        struct rpc_writer w;
        rpc_writer_init(&w, NULL, 0);
        switch (op) {
        case FS_STAT: rpc_put_str(&w, "/d/f"); break;
        case FS_CREATE:
        case FS_MKDIR:
            rpc_put_str(&w, op == FS_MKDIR ? "/d" : "/d/f");
            rpc_put_u32(&w, op == FS_MKDIR ? 040755 : 0100644);
            rpc_put_u32(&w, FS_CREATE_EXCL);
            rpc_put_u64(&w, op == FS_MKDIR ? 0 : 42);
            fs_cap_put(&w, &cap);
            break;
        case FS_REMOVE: rpc_put_str(&w, "/d/f"); rpc_put_u32(&w, 0); rpc_put_u32(&w, 0); break;
        case FS_SIZE:
        case FS_APPEND:
            rpc_put_str(&w, "/d/f"); rpc_put_u64(&w, 42); rpc_put_u64(&w, 70000); break;
        case FS_SIZE_UNDO:
            rpc_put_str(&w, "/d/f"); rpc_put_u64(&w, 42); rpc_put_u64(&w, 70000);
            rpc_put_u64(&w, 5); break;
        case FS_TRUNCATE: rpc_put_str(&w, "/d/f"); rpc_put_u64(&w, 10); break;
        case FS_SETATTR:
            rpc_put_str(&w, "/d/f"); rpc_put_u32(&w, FS_SET_MODE | FS_SET_ATIME | FS_SET_MTIME);
            rpc_put_u32(&w, 0600); rpc_put_i64(&w, 1); rpc_put_i64(&w, 2); break;
        case FS_PUT:
            rpc_put_str(&w, "/d/g"); fs_record_put(&w, &rec); rpc_put_u32(&w, 0);
            fs_cap_put(&w, &cap); fs_cap_put(&w, &cap); break;
        case FS_REMOVE_IF: rpc_put_str(&w, "/d/g"); rpc_put_u64(&w, 43); break;
        case FS_LIST:
            rpc_put_str(&w, "/d"); rpc_put_str(&w, ""); rpc_put_u32(&w, 100);
            fs_cap_put(&w, &cap); break;
        case FS_WRITE:
            rpc_put_u64(&w, 42); rpc_put_u64(&w, 1); rpc_put_u32(&w, 7); rpc_put_u32(&w, 5);
            fs_cap_put(&w, &cap); rpc_put_raw(&w, "hello", 5); break;
        case FS_READ:
            rpc_put_u64(&w, 42); rpc_put_u64(&w, 1); rpc_put_u32(&w, 0); rpc_put_u32(&w, 100);
            rpc_put_u32(&w, FS_READ_HOLES); fs_cap_put(&w, &cap); break;
        case FS_TRUNC_DATA:
            rpc_put_u64(&w, 42); rpc_put_u64(&w, 3); rpc_put_u64(&w, 70000);
            fs_cap_put(&w, &cap); break;
        case FS_CREATE_WRITE:
            rpc_put_str(&w, "/d/h"); rpc_put_u32(&w, 0100644); rpc_put_u32(&w, FS_CREATE_MTIME);
            rpc_put_u64(&w, 44); rpc_put_u64(&w, 5); rpc_put_i64(&w, 7);
            fs_cap_put(&w, &cap); rpc_put_bytes(&w, "hello", 5); break;
        case FS_STAT_READ: rpc_put_str(&w, "/d/h"); rpc_put_u32(&w, 100); break;
        case FS_CREATE_BATCH:
            rpc_put_u32(&w, 2);
            for (int i = 0; i < 2; i++) {
                rpc_put_str(&w, i ? "/d/j" : "/d/i"); rpc_put_u32(&w, 0100644);
                rpc_put_u32(&w, FS_CHECK_PARENT | FS_CREATE_MTIME); rpc_put_u64(&w, 45 + i);
                rpc_put_i64(&w, 9); fs_cap_put(&w, &cap); rpc_put_bytes(&w, "abc", 3);
            }
            break;
        case FS_READ_BATCH:
            rpc_put_u32(&w, 2); rpc_put_u32(&w, 100); rpc_put_str(&w, "/d/h");
            rpc_put_str(&w, "/d/i"); break;
        case FS_LIST_PLUS:
            rpc_put_str(&w, "/d"); rpc_put_str(&w, ""); rpc_put_u32(&w, 10);
            rpc_put_u32(&w, 100); fs_cap_put(&w, &cap); break;
        default: break;                  /* PING, STATFS: no payload */
        }
        if (!rpc_writer_ok(&w))
            abort();
        seed(dir, op, &w);
        rpc_writer_free(&w);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    const char *tmp = getenv("TMPDIR");
    snprintf(root, sizeof(root), "%s/fuzz_dispatch.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(root))
        abort();
    atexit(remove_root);
    /* Refusals are logged as errors; a fuzzer makes millions of them. */
    if (log_open("fuzz_dispatch", LOG_LEVEL_ERROR, "/dev/null") < 0)
        abort();
    srv.index = 0;
    srv.nservers = 2;                /* each input sets it again */
    srv.chunk_size = 64 * 1024;
    srv.quota = 16u << 20;           /* small: ENOSPC paths are reached too */
    for (int i = 0; i < SERVER_STRIPES; i++) {
        pthread_mutex_init(&srv.record_locks[i], NULL);
        pthread_mutex_init(&srv.chunk_locks[i], NULL);
    }
    snprintf(srv.root, sizeof(srv.root), "%s", root);
    char db[4200], err[512];
    snprintf(db, sizeof(db), "%s/db", root);
    if (meta_open(&srv, db, err, sizeof(err)) < 0 || chunks_init(&srv, err, sizeof(err)) < 0) {
        fprintf(stderr, "fuzz_dispatch: %s\n", err);
        abort();
    }
    const char *seeds = getenv("ADAFS_FUZZ_SEEDS");
    if (seeds)
        write_seeds(seeds);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    uint16_t op = data[0] % (FS_OP_COUNT + 1);
    srv.nservers = data[1] & 0x80 ? 1 : 2;
    struct rpc_reader req;
    rpc_reader_init(&req, data + 2, size - 2);
    struct reply rep = { .file = NULL };
    rpc_writer_init(&rep.out, NULL, 0);
    int rc = dispatch(&srv, op, &req, &rep);
    if (rc > 0 || rc < -4095)
        abort();
    if (rep.file)
        datafile_put(rep.file);
    rpc_writer_free(&rep.out);
    return 0;
}
