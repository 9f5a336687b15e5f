/* Unit tests of the rpc framing and codec, the hash placement and the
 * net helpers' argument parsing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hash.h"
#include "net.h"
#include "rpc.h"
#include "tap.h"

static void test_header(void)
{
    struct rpc_header h = { .opcode = 7, .id = 0x1122334455667788ull, .length = 99, .status = -13 };
    uint8_t buf[RPC_HEADER_SIZE];
    rpc_header_encode(&h, buf);
    tap_is_int(buf[0], 'A', "magic starts with 'A' on the wire");
    struct rpc_header d;
    tap_is_int(rpc_header_decode(buf, &d), 0, "header decodes");
    tap_ok(d.opcode == 7 && d.id == h.id && d.length == 99 && d.status == -13,
           "header fields survive the round trip");
    tap_is_int(RPC_HEADER_SIZE, 24, "a header is 24 bytes: no secret rides in it");
    buf[0] ^= 1;
    tap_is_int(rpc_header_decode(buf, &d), -EPROTO, "wrong magic is EPROTO");
    buf[0] ^= 1;
    buf[4] = 9;
    tap_is_int(rpc_header_decode(buf, &d), -EPROTO, "wrong version is EPROTO");
    buf[4] = 1;
    tap_is_int(rpc_header_decode(buf, &d), -EPROTO, "version 1 (secret in the header) is EPROTO");
    buf[4] = RPC_VERSION;
    h.length = RPC_MAX_PAYLOAD + 1;
    rpc_header_encode(&h, buf);
    tap_is_int(rpc_header_decode(buf, &d), -EMSGSIZE, "oversized payload length is EMSGSIZE");
}

static void test_codec(void)
{
    uint8_t small[8];
    struct rpc_writer w;
    rpc_writer_init(&w, small, sizeof(small));
    rpc_put_u32(&w, 0xdeadbeef);
    rpc_put_u64(&w, 1ull << 40);
    rpc_put_i64(&w, -5);
    rpc_put_str(&w, "hello");
    rpc_put_bytes(&w, "\0x\0", 3);
    tap_ok(rpc_writer_ok(&w) && w.data != small, "writer grows from a small buffer onto the heap");
    struct rpc_reader r;
    rpc_reader_init(&r, w.data, w.len);
    tap_ok(rpc_get_u32(&r) == 0xdeadbeef, "u32 round trip");
    tap_ok(rpc_get_u64(&r) == 1ull << 40, "u64 round trip");
    tap_ok(rpc_get_i64(&r) == -5, "i64 round trip");
    tap_is_str(rpc_get_str(&r), "hello", "string round trip");
    const void *p;
    size_t n = rpc_get_bytes(&r, &p);
    tap_ok(n == 3 && memcmp(p, "\0x\0", 3) == 0, "bytes with NULs round trip");
    tap_ok(rpc_reader_done(&r), "reader consumed everything");
    rpc_get_u32(&r);
    tap_ok(!rpc_reader_ok(&r), "reading past the end fails the reader");
    tap_ok(rpc_get_u64(&r) == 0 && !rpc_reader_ok(&r), "and the failure is sticky");

    /* A string whose length runs past the payload. */
    uint8_t bad[8] = { 200, 0, 0, 0, 'a', 'b', 'c', 0 };
    rpc_reader_init(&r, bad, sizeof(bad));
    tap_ok(rpc_get_str(&r) == NULL && !rpc_reader_ok(&r), "length beyond the payload is refused");
    uint8_t nonul[7] = { 3, 0, 0, 0, 'a', 'b', 'c' };
    rpc_reader_init(&r, nonul, sizeof(nonul));
    tap_ok(rpc_get_str(&r) == NULL, "string without its NUL is refused");
    uint8_t inner[8] = { 4, 0, 0, 0, 'a', 0, 'c', 0 };
    rpc_reader_init(&r, inner, sizeof(inner));
    tap_ok(rpc_get_str(&r) == NULL, "string with a NUL inside is refused");
    uint8_t empty[4] = { 0, 0, 0, 0 };
    rpc_reader_init(&r, empty, sizeof(empty));
    tap_ok(rpc_get_str(&r) == NULL, "zero-length string (no NUL) is refused");
    rpc_writer_free(&w);

    rpc_writer_init(&w, NULL, 0);
    uint8_t *hole = rpc_put_raw(&w, NULL, 4);
    rpc_put_u32(&w, 1);
    tap_ok(hole != NULL && w.len == 8, "raw space is reserved for later filling");
    rpc_writer_free(&w);
}

static void test_hash(void)
{
    tap_is_int(hash_place_path("/anything", 1), 0, "one server holds everything");
    unsigned s = hash_place_path("/a/b", 4);
    tap_ok(s < 4 && s == hash_place_path("/a/b", 4), "placement is stable and in range");
    int counts[4] = { 0 };
    for (uint64_t i = 0; i < 4000; i++)
        counts[hash_place_chunk(12345, i, 4)]++;
    int spread = 1;
    for (int i = 0; i < 4; i++)
        spread &= counts[i] > 800 && counts[i] < 1200;
    tap_ok(spread, "chunks of one file spread evenly over 4 servers");
    /* Fixed value: placement must agree across machines and releases. */
    tap_ok(hash_bytes("adafs", 5) == hash_bytes("adafs", 5) && hash_bytes("", 0) != 0,
           "hash of bytes is deterministic");
}

static void test_hostport(void)
{
    char host[64];
    int port;
    tap_is_int(net_parse_hostport("127.0.0.1:4000", host, sizeof(host), &port), 0, "host:port parses");
    tap_ok(strcmp(host, "127.0.0.1") == 0 && port == 4000, "host and port are split");
    tap_is_int(net_parse_hostport("node1", host, sizeof(host), &port), -EINVAL, "missing port is EINVAL");
    tap_is_int(net_parse_hostport(":80", host, sizeof(host), &port), -EINVAL, "empty host is EINVAL");
    tap_is_int(net_parse_hostport("h:70000", host, sizeof(host), &port), -EINVAL, "port above 65535 is EINVAL");
    tap_is_int(net_parse_hostport("h:12x", host, sizeof(host), &port), -EINVAL, "trailing garbage is EINVAL");
    tap_is_int(net_parse_hostport("h:", host, sizeof(host), &port), -EINVAL, "empty port is EINVAL");
    char tiny[4];
    tap_is_int(net_parse_hostport("longhost:1", tiny, sizeof(tiny), &port), -EINVAL, "host too long is EINVAL");
}

static void test_connect_refused(void)
{
    char err[256];
    int bound;
    int lfd = net_listen("127.0.0.1", 0, 4, &bound, err, sizeof(err));
    tap_ok(lfd >= 0 && bound > 0, "listen on port 0 reports the chosen port");
    int fd = net_connect("127.0.0.1", bound, 1000, err, sizeof(err));
    tap_ok(fd >= 0, "connect to a listening port works");
    char byte;
    tap_is_int(net_read_full(fd, &byte, 1, net_now_ms() + 100), -ETIMEDOUT,
               "a read nobody answers times out at the deadline");
    close(fd);
    close(lfd);
    fd = net_connect("127.0.0.1", bound, 1000, err, sizeof(err));
    tap_is_int(fd, -ECONNREFUSED, "connect to a closed port is ECONNREFUSED");
    tap_ok(strstr(err, "127.0.0.1") != NULL, "the error names the peer");
}

int main(void)
{
    test_header();
    test_codec();
    test_hash();
    test_hostport();
    test_connect_refused();
    return tap_done();
}
