/* libFuzzer target for the rpc decoder: a header, then a payload walked by
 * a sequence of gets chosen by the input itself. Nothing a peer sends may
 * crash the decoder, read out of bounds or return a string that is not
 * NUL-terminated inside the payload. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < RPC_HEADER_SIZE + 1)
        return 0;
    struct rpc_header h;
    if (rpc_header_decode(data, &h) == 0 && h.length > RPC_MAX_PAYLOAD)
        abort();
    /* The byte after the header says how many gets to try; the ops come
     * from the following bytes, the payload is the rest. */
    size_t nops = data[RPC_HEADER_SIZE] % 16;
    size_t at = RPC_HEADER_SIZE + 1;
    if (size - at < nops)
        return 0;
    const uint8_t *ops = data + at;
    at += nops;
    struct rpc_reader r;
    rpc_reader_init(&r, data + at, size - at);
    for (size_t i = 0; i < nops; i++) {
        const void *p;
        size_t before = r.off;
        switch (ops[i] % 5) {
        case 0: rpc_get_u32(&r); break;
        case 1: rpc_get_u64(&r); break;
        case 2: rpc_get_i64(&r); break;
        case 3: {
            size_t n = rpc_get_bytes(&r, &p);
            if (rpc_reader_ok(&r) && n && (const uint8_t *)p + n > data + size)
                abort();
            break;
        }
        case 4: {
            const char *s = rpc_get_str(&r);
            if (s && strlen(s) + 1 > r.off - before)
                abort();
            break;
        }
        }
        if (r.off > r.len)
            abort();
    }
    /* Re-encode what the writer side would produce and read it back. */
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    rpc_put_bytes(&w, data, size < 4096 ? size : 4096);
    struct rpc_reader back;
    rpc_reader_init(&back, w.data, w.len);
    const void *p;
    size_t n = rpc_get_bytes(&back, &p);
    if (!rpc_reader_done(&back) || n != (size < 4096 ? size : 4096) || memcmp(p, data, n) != 0)
        abort();
    rpc_writer_free(&w);
    return 0;
}
