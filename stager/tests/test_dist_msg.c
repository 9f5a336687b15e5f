/* The records workers of a distributed stage exchange: every type comes
 * back as it was sent, names and paths that could leave their directory
 * are refused, and a mailbox file still being written is told apart from
 * a complete one. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "dist_msg.h"
#include "tap.h"

static int roundtrip(const struct dmsg *in, struct dmsg *out, const char **why)
{
    static uint8_t buf[1 << 16];
    static struct rpc_writer w;
    rpc_writer_init(&w, buf, sizeof(buf));
    dmsg_put(&w, in);
    struct rpc_reader r;
    rpc_reader_init(&r, w.data, w.len);
    int rc = dmsg_get(&r, out, why);
    if (rc == 0 && r.off != r.len)
        rc = -EMSGSIZE;
    return rc;
}

static int refused(const struct dmsg *in)
{
    struct dmsg out;
    const char *why = NULL;
    return roundtrip(in, &out, &why) == -EPROTO && why != NULL;
}

int main(void)
{
    struct dmsg out;
    const char *why;
    struct dloc loc = { "/pfs/in", "/in", "a/b", "a/b" };

    struct dmsg files = { .type = DM_ITEM, .id = 7, .kind = DK_FILES, .dir = 3, .loc = loc,
                          .flags = DF_FRESH, .n = 2, .names = { "x.dat", "y y" },
                          .types = { DT_REG, DT_LNK } };
    tap_is_int(roundtrip(&files, &out, &why), 0, "a batch of files decodes");
    tap_ok(out.id == 7 && out.dir == 3 && out.n == 2 && !strcmp(out.names[1], "y y") &&
           out.types[1] == DT_LNK && !strcmp(out.loc.srel, "a/b") && out.flags == DF_FRESH,
           "with every field as sent");

    struct dmsg pieces = { .type = DM_ITEM, .id = 9, .kind = DK_PIECES, .file = 4, .loc = loc,
                           .sname = "big", .dname = "big", .size = 10 << 20, .mode = 0100644,
                           .mtime = { 1234, 567 }, .piece_size = 1 << 20, .first = 2,
                           .last = 10 };
    tap_is_int(roundtrip(&pieces, &out, &why), 0, "a range of pieces decodes");
    tap_ok(out.file == 4 && out.size == 10 << 20 && out.first == 2 && out.last == 10 &&
           out.mtime.tv_sec == 1234 && out.mtime.tv_nsec == 567 && out.mode == 0100644,
           "with its size, range and attributes");
    pieces.last = 11;
    tap_ok(refused(&pieces), "pieces past the end of the file are refused");
    pieces.last = 10;
    pieces.mtime.tv_nsec = 1000000000;
    tap_ok(refused(&pieces), "an mtime with nanoseconds out of range is refused");

    struct dmsg split = { .type = DM_SPLIT, .dir = 5, .loc = loc, .sname = "s", .dname = "d",
                          .size = 99, .mode = 0100600, .flags = DF_FOLLOW };
    tap_is_int(roundtrip(&split, &out, &why), 0, "a split file decodes");
    tap_ok(out.dir == 5 && !strcmp(out.dname, "d") && out.flags == DF_FOLLOW, "as sent");

    struct dmsg top = { .type = DM_ITEM, .id = 1, .kind = DK_TOP, .dir = 2,
                        .sname = "/pfs/a b", .dname = "input/x", .count = 12 };
    tap_is_int(roundtrip(&top, &out, &why), 0, "a list entry decodes");
    tap_ok(!strcmp(out.sname, "/pfs/a b") && out.count == 12, "as sent");

    const struct dmsg simple[] = {
        { .type = DM_HELLO, .id = 3, .count = 4242, .text = "node7" },
        { .type = DM_WELCOME, .id = 0xabcdef },
        { .type = DM_ACK, .id = 1ull << 63 | 5, .count = 1 },
        { .type = DM_DIRINFO, .dir = 8, .mode = 040755, .dev = 1, .ino = 2, .flags = 3 },
        { .type = DM_SUBDIR, .dir = 8, .sname = "sub", .dname = "sub" },
        { .type = DM_BATCH, .dir = 8, .id = 0, .n = 1, .names = { "f" }, .types = { DT_REG } },
        { .type = DM_ITEM, .kind = DK_DIR, .id = 2, .dir = 9, .loc = loc },
        { .type = DM_ITEM, .kind = DK_FINAL_FILE, .id = 2, .file = 9, .loc = loc,
          .dname = "f", .size = 5 },
        { .type = DM_ITEM, .kind = DK_FINAL_DIR, .id = 2, .dir = 9, .loc = loc, .n = 3 },
        { .type = DM_DONE, .count = 0 },
        { .type = DM_ABORT, .text = "why" },
        { .type = DM_BYE },
        { .type = DM_STEAL, .count = 6 },
        { .type = DM_RETURN, .id = 1ull << 63 | 7 },
        { .type = DM_STOLEN, .count = 2 },
    };
    int all = 1;
    for (size_t i = 0; i < sizeof(simple) / sizeof(*simple); i++)
        all &= roundtrip(&simple[i], &out, &why) == 0 && out.type == simple[i].type;
    tap_ok(all, "every other record type decodes");

    /* Names and paths that would leave their directory. */
    static const char *bad_names[] = { "", ".", "..", "a/b", "/abs" };
    int names = 1;
    for (size_t i = 0; i < sizeof(bad_names) / sizeof(*bad_names); i++) {
        struct dmsg m = { .type = DM_SUBDIR, .dir = 1, .sname = "ok", .dname = bad_names[i] };
        names &= refused(&m);
    }
    tap_ok(names, "subdirectory names '', '.', '..', with '/' are refused");
    static const char *bad_rels[] = { "..", "a/../b", "/a", "a//b", "a/", "./a", "a/." };
    int rels = 1;
    for (size_t i = 0; i < sizeof(bad_rels) / sizeof(*bad_rels); i++) {
        struct dmsg m = files;
        m.loc.drel = bad_rels[i];
        rels &= refused(&m);
    }
    tap_ok(rels, "relative paths with '..', '.', empty components or a leading '/' are refused");
    struct dmsg m = files;
    m.names[1] = "../../etc/passwd";
    tap_ok(refused(&m), "a batch naming a path, not an entry, is refused");
    m = files;
    m.types[0] = DT_DIR;
    tap_ok(refused(&m), "a batch of files holding a directory is refused");
    m = files;
    m.loc.rs = "";
    tap_ok(refused(&m), "an empty root is refused");
    m = (struct dmsg){ .type = DM_ITEM, .kind = DK_FINAL_DIR, .dir = 1, .loc = loc, .n = 4 };
    tap_ok(refused(&m), "finalizing more levels than a path has (above the root) is refused");
    m = (struct dmsg){ .type = 99 };
    tap_ok(refused(&m), "an unknown record type is refused");
    m = (struct dmsg){ .type = DM_ITEM, .kind = 42 };
    tap_ok(refused(&m), "an item of an unknown kind is refused");

    uint8_t buf[256];
    struct rpc_writer w;
    rpc_writer_init(&w, buf, sizeof(buf));
    dmsg_put(&w, &split);
    struct rpc_reader r;
    rpc_reader_init(&r, w.data, w.len - 3);
    tap_is_int(dmsg_get(&r, &out, &why), -EPROTO, "a truncated record is refused");

    /* Mailbox files. */
    char dir[] = "/tmp/test_dist_msg.XXXXXX";
    tap_ok(mkdtemp(dir) != NULL, "temporary directory");
    struct backend b;
    backend_posix_init(&b, NULL, NULL);
    struct bdir *d;
    struct stat st;
    tap_is_int(b.ops->root_open(&b, dir, 0, &d, &st), 0, "opened");
    const char payload[] = "records";
    tap_is_int(mbox_put(d, "m.0", payload, sizeof(payload)), 0, "a message written");
    void *got;
    size_t len;
    tap_is_int(mbox_get(d, "m.0", &got, &len), 0, "and read back");
    tap_ok(len == sizeof(payload) && !memcmp(got, payload, len), "the same bytes");
    free(got);
    tap_is_int(mbox_get(d, "m.1", &got, &len), -ENOENT, "a message not there yet: ENOENT");
    char path[512];
    snprintf(path, sizeof(path), "%s/m.0", dir);
    tap_is_int(truncate(path, 20), 0, "cut short, as while being written");
    tap_is_int(mbox_get(d, "m.0", &got, &len), -EAGAIN, "read again later: EAGAIN");
    tap_is_int(mbox_drop(d, "m.0"), 0, "dropped");
    b.ops->dir_close(d);
    rmdir(dir);
    return tap_done();
}
