/* libFuzzer target for the rpc decoder: a header, then a payload walked by
 * a sequence of gets chosen by the input itself. Nothing a peer sends may
 * crash the decoder, read out of bounds or return a string that is not
 * NUL-terminated inside the payload. The same payload then goes to one of
 * agent_proto.h's decoders (also picked by the input): what it accepts must
 * encode, decode and encode again to the same bytes. The seeds are messages
 * of the current form (LLVMFuzzerInitialize), a persistent START among them. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_proto.h"
#include "rpc.h"

/* Encodes what a decoder accepted, decodes that and encodes it again: the
 * two encodings must be the same bytes. */
#define ROUND_TRIP(type, put, get, data, size)                                 \
    do {                                                                       \
        struct type m1, m2;                                                    \
        struct rpc_reader r1;                                                  \
        rpc_reader_init(&r1, data, size);                                      \
        if (get(&r1, &m1) < 0)                                                 \
            break;                                                             \
        struct rpc_writer w1, w2;                                              \
        rpc_writer_init(&w1, NULL, 0);                                         \
        put(&w1, &m1);                                                         \
        struct rpc_reader r2;                                                  \
        rpc_reader_init(&r2, w1.data, w1.len);                                 \
        if (get(&r2, &m2) < 0)                                                 \
            abort();                                                           \
        rpc_writer_init(&w2, NULL, 0);                                         \
        put(&w2, &m2);                                                         \
        if (w1.len != w2.len || memcmp(w1.data, w2.data, w1.len) != 0)         \
            abort();                                                           \
        rpc_writer_free(&w1);                                                  \
        rpc_writer_free(&w2);                                                  \
    } while (0)

static void agent_message(unsigned kind, const uint8_t *data, size_t size)
{
    switch (kind % 8) {
    case 0: ROUND_TRIP(agent_start, agent_start_put, agent_start_get, data, size); break;
    case 1: ROUND_TRIP(agent_started, agent_started_put, agent_started_get, data, size); break;
    case 2: ROUND_TRIP(agent_configure, agent_configure_put, agent_configure_get, data, size); break;
    case 3: ROUND_TRIP(agent_stage, agent_stage_put, agent_stage_get, data, size); break;
    case 4: ROUND_TRIP(agent_stage_status, agent_stage_status_put, agent_stage_status_get, data,
                       size); break;
    case 5: ROUND_TRIP(agent_watch, agent_watch_put, agent_watch_get, data, size); break;
    case 6: ROUND_TRIP(agent_job_ref, agent_job_ref_put, agent_job_ref_get, data, size); break;
    case 7: ROUND_TRIP(agent_instance, agent_instance_put, agent_instance_get, data, size); break;
    }
}

/* One seed: a header, the byte choosing `kind` and no gets, the body. */
static int write_seed(const char *dir, const char *name, unsigned kind, const struct rpc_writer *body)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    uint8_t head[RPC_HEADER_SIZE + 1];
    rpc_header_encode(&(struct rpc_header){ .opcode = AGENT_START, .id = 1,
                                            .length = (uint32_t)body->len }, head);
    head[RPC_HEADER_SIZE] = (uint8_t)(kind * 16);
    int ok = fwrite(head, sizeof(head), 1, f) == 1 && fwrite(body->data, body->len, 1, f) == 1;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* With FUZZ_RPC_SEEDS=DIR: writes seeds there (a job's START, a persistent
 * one, a persistent instance's STATUS answer, an entry of LIST's) and exits. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *dir = getenv("FUZZ_RPC_SEEDS");
    if (!dir)
        return 0;
    struct agent_start job = { .job_id = 7, .uid = 1000, .gid = 1000, .index = 0, .nservers = 2,
                               .chunk_size = 1 << 19, .quota = 1 << 30, .listen_host = "n1",
                               .storage = "/var/lib/adafs", .secret_hex = "00ff", .numa_node = -1,
                               .server_key_hex = "ee11" };
    struct agent_start persistent = job;
    persistent.job_id = AGENT_PERSIST_ID_BASE + 3;
    persistent.flags = AGENT_START_PERSISTENT;
    persistent.persist_name = "scratch_1";
    persistent.access_gid = 1001;
    persistent.fair_policy = "user-then-size";
    struct rpc_writer a, b, c, d;
    rpc_writer_init(&a, NULL, 0);
    rpc_writer_init(&b, NULL, 0);
    rpc_writer_init(&c, NULL, 0);
    rpc_writer_init(&d, NULL, 0);
    agent_start_put(&a, &job);
    agent_start_put(&b, &persistent);
    agent_stage_status_put(&c, &(struct agent_stage_status){ AGENT_OP_NONE, 0, "", "", 1, 40001,
                                                             4242, 1 << 20 });
    agent_instance_put(&d, &(struct agent_instance){ AGENT_PERSIST_ID_BASE + 3, "scratch_1", 1000,
                                                     1001, 40001, 4242, 1 << 20, 1 << 30,
                                                     "/var/lib/adafs/n1/persistent/scratch_1" });
    int rc = write_seed(dir, "start", 0, &a) | write_seed(dir, "start_persistent", 0, &b) |
             write_seed(dir, "status_persistent", 4, &c) | write_seed(dir, "list_entry", 7, &d);
    exit(rc == 0 ? 0 : 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < RPC_HEADER_SIZE + 1)
        return 0;
    struct rpc_header h;
    if (rpc_header_decode(data, &h) == 0 && h.length > RPC_MAX_PAYLOAD)
        abort();
    /* The byte after the header says how many gets to try (low 4 bits)
     * and which agent message the payload is (high 4); the ops come from
     * the following bytes, the payload is the rest. */
    size_t nops = data[RPC_HEADER_SIZE] % 16;
    unsigned kind = data[RPC_HEADER_SIZE] / 16;
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
    agent_message(kind, data + at, size - at);
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
