/* libFuzzer target for the records workers of a distributed stage read
 * from their mailboxes: any bytes must decode without a crash, leak or
 * sanitizer report, and every record accepted must be safe to act on (its
 * names single entries, its relative paths without '.' or '..') and come
 * back the same when encoded again. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dist_msg.h"

static int same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rpc_reader r;
    rpc_reader_init(&r, data, size);
    while (r.off < r.len) {
        struct dmsg m, again;
        const char *why;
        if (dmsg_get(&r, &m, &why) < 0)
            break;
        if ((m.loc.srel && !dist_rel_ok(m.loc.srel)) || (m.loc.drel && !dist_rel_ok(m.loc.drel)))
            abort();
        if (m.n > DIST_BATCH)
            abort();
        for (uint32_t i = 0; i < m.n; i++)
            if (!dist_name_ok(m.names[i]))
                abort();
        if ((m.type == DM_SUBDIR || m.type == DM_SPLIT || (m.type == DM_ITEM && m.kind == DK_PIECES)) &&
            (!dist_name_ok(m.sname) || !dist_name_ok(m.dname)))
            abort();
        struct rpc_writer w;
        rpc_writer_init(&w, NULL, 0);
        dmsg_put(&w, &m);
        struct rpc_reader r2;
        rpc_reader_init(&r2, w.data, w.len);
        if (!rpc_writer_ok(&w) || dmsg_get(&r2, &again, &why) < 0 || r2.off != w.len ||
            again.type != m.type || again.kind != m.kind || again.id != m.id ||
            again.dir != m.dir || again.file != m.file || again.n != m.n ||
            again.size != m.size || again.first != m.first || again.last != m.last ||
            !same_str(again.sname, m.sname) || !same_str(again.dname, m.dname) ||
            !same_str(again.loc.srel, m.loc.srel) || !same_str(again.loc.drel, m.loc.drel))
            abort();
        rpc_writer_free(&w);
    }
    return 0;
}
