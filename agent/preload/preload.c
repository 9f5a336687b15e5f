/* preload: the interposer's one-time initialisation and small shared
 * helpers (see preload.h for the module map). */
#include "preload.h"
#include "qos.h"
#include "mapping.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

pthread_once_t pl_once = PTHREAD_ONCE_INIT;
static atomic_uint umask_cache = 022;

void pl_log(const char *fmt, ...)
{
    char line[1024];
    int n = snprintf(line, sizeof line, "adafs_preload[%d]: ", (int)getpid());
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    /* A raw write: the wrappers or the libc table may not be usable yet. */
    if (syscall(SYS_write, 2, line, len) < 0)
        return;
}

mode_t pl_umask(void)
{
    return (mode_t)atomic_load_explicit(&umask_cache, memory_order_relaxed);
}

PL_EXPORT mode_t umask(mode_t mask)
{
    pl_ready();
    mode_t old = real.umask(mask);
    atomic_store_explicit(&umask_cache, mask & 0777, memory_order_relaxed);
    return old;
}

/* fork() copies the stream registries; none may be copied locked. */
static void lock_streams(void)
{
    ptrmap_lock(&pl_dir_streams);
    ptrmap_lock(&pl_file_streams);
}

static void unlock_streams(void)
{
    ptrmap_unlock(&pl_file_streams);
    ptrmap_unlock(&pl_dir_streams);
}

void pl_init(void)
{
    real_resolve();
    pl_qos_init(&real);   /* QoS toward the parallel file system (qos.h) */
    ownfd_init();
    mode_t m = real.umask(022);
    real.umask(m);
    atomic_store(&umask_cache, m & 0777);

    const char *mount_from_instance = NULL;
    const char *env_mount = getenv(ADAFS_ENV_MOUNT), *env_instance = getenv(ADAFS_ENV_INSTANCE);
    if ((!env_mount || !*env_mount) && env_instance && *env_instance)
        mount_from_instance = route_connect_for_mount();
    if (pathres_init(mount_from_instance) != 0)
        return;
    route_register_atfork();
    pathres_register_atfork();
    pthread_atfork(lock_streams, unlock_streams, unlock_streams);
    mapping_register_atfork();
    pl_exec_adopt();
}

/* Runs at exit, before glibc's final stdio flush: the counts leave out
 * what that flush writes. */
__attribute__((destructor)) static void pl_destructor(void)
{
    mapping_sync_all();   /* a shared mapping's writes reach the file at exit */
    const char *stats = getenv("ADAFS_PRELOAD_STATS");
    if (stats && *stats && pathres_active())
        route_append_counts(stats);
}

/* Initialise before main() so that $PWD and inherited descriptors are
 * picked up before the program changes anything; wrappers called by other
 * libraries' constructors initialise on their first call instead. */
__attribute__((constructor)) static void pl_constructor(void)
{
    pthread_once(&pl_once, pl_init);
}
