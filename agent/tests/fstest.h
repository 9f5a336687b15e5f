/* fstest: helpers for the file system integration tests: start a real
 * instance with adafs-ctl on loopback, connect to it, stop it. */
#ifndef ADAFS_FSTEST_H
#define ADAFS_FSTEST_H

#include <stddef.h>

#include "adafs.h"
#include "instance.h"
#include "rpc.h"

/* How long the tests' own exchanges with a server (fstest_connect,
 * fstest_raw_call, a raw request written by a test) wait for it. Long: CI
 * runs the suites under sanitizers on a loaded 2-core machine, where a
 * server has been seen to take over 2 s to answer one request (a test that
 * waited 2 s then failed, test_fs_direct check 16). A healthy server
 * answers in milliseconds, so passing runs do not wait for it; only a
 * test that fails waits this long before it says so. */
#define FSTEST_IO_MS 30000

struct fstest {
    char base[256];
    char instance[300];
    adafs *fs;
};

/* Starts nservers servers (extra: more adafs-ctl arguments or NULL) and
 * connects. Exits the test with a message if that fails. */
void fstest_start(struct fstest *t, int nservers, const char *extra);
void fstest_stop(struct fstest *t);
/* Runs a shell command, returns its exit status. */
int fstest_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The pid of server i of an instance started by fstest_start. */
int fstest_server_pid(const struct fstest *t, int index);
/* Stops (SIGSTOP) a process and returns once the kernel shows it stopped
 * (kill() returns before every thread has stopped). 0, or -1 after 2 s. */
int fstest_stop_process(int pid);
/* A connection to server index of an instance (over its Unix socket if
 * local), authenticated with the instance's secret: the socket, or -errno
 * (the handshake's: -EACCES, -EPERM...). */
int fstest_connect(const struct instance *in, int index, int local);
/* One request written straight to an authenticated connection (for what
 * only a broken or hostile client sends; w may be NULL for no body).
 * Returns the answer's status, or 1 if the exchange itself failed. With
 * payload not NULL the answer's body is left there (malloc'd) and ans
 * reads it. */
int fstest_raw_call(int fd, uint16_t op, const struct rpc_writer *w, struct rpc_reader *ans,
                    uint8_t **payload);
/* A second client of the instance: its own connections and files. Exits
 * the test with a message if it cannot connect. */
adafs *fstest_other_client(const struct fstest *t);
/* Creates or empties path and writes len bytes of data into it: 0, or -1. */
int fstest_put(adafs *fs, const char *path, const void *data, size_t len);
/* 1 if path holds exactly len bytes equal to want. */
int fstest_holds(adafs *fs, const char *path, const void *want, size_t len);
/* Deterministic pseudo-random bytes. */
void fstest_fill(void *buf, size_t len, unsigned seed);
double fstest_now(void);

#endif
