/* instance: the description of one adafs file system instance, shared by
 * everyone who makes or reads one: the plugin (which writes it for a job),
 * the node agent (which puts it on each node), adafs-ctl, the servers and the
 * client library. The instance file (format in agent/adafs.h, one encoder
 * instance_format and one decoder instance_parse), the secret and its hex
 * form, and where a job's files lie on every node.
 *
 * Files holding a secret must be readable by their owner only: readers refuse
 * a file whose mode lets the group or others read it, so a mistake in
 * deployment shows up as an error instead of a leaked secret. No stdio is
 * used, so the client library may call this from inside an LD_PRELOAD
 * interposer. */
#ifndef ADAFS_INSTANCE_H
#define ADAFS_INSTANCE_H

#include "linknames.h"

#include <stddef.h>
#include <stdint.h>

#define INSTANCE_HOST_MAX 256
/* The instance's secret: the key of every handshake (agent/handshake.h,
 * which asserts that its key is this size: common/ cannot include it). */
#define INSTANCE_SECRET_SIZE 32
#define INSTANCE_MAX_SERVERS 4096

struct instance_server {
    char host[INSTANCE_HOST_MAX];
    int port;
};

struct instance {
    char mount[4096];
    uint64_t chunk_size;
    int timeout_ms;
    uint8_t secret[INSTANCE_SECRET_SIZE];
    int nservers;
    struct instance_server *servers;   /* malloc'd, nservers entries */
};

/* Limits every deployer and reader agrees on. */
#define INSTANCE_CHUNK_MIN  4096u
#define INSTANCE_CHUNK_MAX  (64u << 20)

/* The instance file's text (malloc'd, NULL on ENOMEM); job_id, if not 0,
 * is named in its first comment line. */
char *instance_format(const struct instance *in, uint32_t job_id);
/* Parses and checks instance text (name is for messages). Returns 0, or
 * -errno with a message naming name, the line and what is wrong in err. */
int instance_parse(const char *text, const char *name, struct instance *out, char *err,
                   size_t errlen);
/* Reads and checks an instance file (instance_parse). */
int instance_read(const char *path, struct instance *out, char *err, size_t errlen);
/* Writes the instance file atomically (temporary file + rename), mode 0600. */
int instance_write(const char *path, const struct instance *in, char *err, size_t errlen);
void instance_free(struct instance *in);

/* Where a job's instance lies on every node, under the site's mount prefix
 * (the same path on each node, whatever storage each uses):
 *   <prefix>/<job id>                 the mount point: ADAFS_MOUNT
 *   <prefix>/.job.<job id>.instance   the instance file: ADAFS_INSTANCE
 *   <prefix>/.job.<job id>.secret     the secret file the servers read
 * Each returns 0, or -ENAMETOOLONG (out emptied) when it does not fit. */
#define INSTANCE_FILE "instance"
#define INSTANCE_SECRET "secret"
/* The servers' own key (agent/fsd/exchange.h), beside the secret: readable
 * by the servers' user only, never given to a client. */
#define INSTANCE_SERVER_KEY "serverkey"
int instance_mount_path(char *out, size_t len, const char *prefix, uint32_t job_id);
int instance_file_path(char *out, size_t len, const char *prefix, uint32_t job_id,
                       const char *what);
/* A job's further mount, of the persistent instance name (a job that
 * mounts several file systems: agent_configure.name), beside its first:
 *   <prefix>/<job id>.<name>                  its mount point (in ADAFS_MOUNTS)
 *   <prefix>/.job.<job id>.<name>.instance    its instance file
 * An empty name gives the job's first mount's (the two above). */
int instance_named_mount_path(char *out, size_t len, const char *prefix, uint32_t job_id,
                              const char *name);
int instance_named_file_path(char *out, size_t len, const char *prefix, uint32_t job_id,
                             const char *name);

/* The abstract Unix socket name on which the server listed as host:port
 * also takes clients of its own node (who can then pass it descriptors):
 * host as written in the instance, so servers of one node are told apart
 * and a name never stands for a server on another node. */
#define INSTANCE_LOCAL_NAME_MAX (INSTANCE_HOST_MAX + 16)
void instance_local_name(const char *host, int port, char name[INSTANCE_LOCAL_NAME_MAX]);

/* The line a starting server writes when it serves (fsd/main.c): "ready
 * port=P pid=N", optionally ending in a newline. 0 with *port (1-65535)
 * and *pid (> 0), else -EINVAL. Strict, because the agent (root) reads it
 * from a process of the job's user. */
int instance_ready_parse(const char *line, int *port, int *pid);

/* The storage of one server whose data may take quota bytes (the job's
 * share of its capacity on a node). The agent gives each server a file
 * system of its own of `image` bytes, so whatever lands there (chunks,
 * RocksDB, anything the job's user writes into it by hand) is bounded;
 * the server keeps `headroom` of it free for RocksDB, whose flushes and
 * compactions need room to write before they free any (a RocksDB that
 * runs out of space stops taking writes for good), by refusing new data
 * and metadata with ENOSPC below it. RocksDB's files are sized by
 * write_buffer so that bound holds: a flush writes one memtable
 * (write_buffer), a compaction at most 8 of them before it frees its
 * inputs. doc/filesystem.md gives the figures. */
struct instance_space {
    uint64_t write_buffer;   /* RocksDB memtable and table file size: quota/48, 1-64 MiB */
    uint64_t headroom;       /* kept free for RocksDB: 12 write buffers */
    uint64_t image;          /* quota + headroom + metadata (quota/64, at least 16 MiB),
                              * + 1/24 for ext4's own */
};
void instance_space(uint64_t quota, struct instance_space *space);

/* Fills secret with random bytes from the kernel. */
int secret_generate(uint8_t secret[INSTANCE_SECRET_SIZE]);
/* The secret in messages and files: 64 lowercase hex digits. hex must hold
 * INSTANCE_SECRET_HEX bytes (with the NUL). */
#define INSTANCE_SECRET_HEX (2 * INSTANCE_SECRET_SIZE + 1)
void secret_to_hex(const uint8_t secret[INSTANCE_SECRET_SIZE], char *hex);
/* Parses exactly 64 hex digits; -EINVAL otherwise. */
int secret_from_hex(const char *hex, uint8_t secret[INSTANCE_SECRET_SIZE]);
/* A secret file holds the 64 hex digits and a newline, mode 0600. */
int secret_read_file(const char *path, uint8_t secret[INSTANCE_SECRET_SIZE], char *err, size_t errlen);
int secret_write_file(const char *path, const uint8_t secret[INSTANCE_SECRET_SIZE], char *err, size_t errlen);

#endif
