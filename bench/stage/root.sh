# root.sh: where the stager benchmarks keep their data (sourced by the
# scripts of bench/stage).
#
# BENCH_ROOT holds the source sets, the adafs instances' storage, the
# stage-out destinations and, for cluster.sh, the mini-cluster with its
# stand-in parallel file system. By default it is on tmpfs (/dev/shm), as
# issue 22 measured: the figures are then the stager's and the servers',
# not the local disk's writeback, which decided stage-out in run 11 (one
# process's stage-out of the same tree took 2.4 s in one run and 21-45 s
# in others, most of it the kernel writing back). BENCH_ROOT=/var/tmp/...
# measures on the disk instead. A WORK_DIR argument, where a script takes
# one, still wins. Each script says which file system it ran on.
BENCH_ROOT=${BENCH_ROOT:-/dev/shm/adafs-bench-stage}
mkdir -p "$BENCH_ROOT"
BENCH_FS=$(stat -f -c %T "$BENCH_ROOT")
# tmpfs is memory: the sets (4 x 1 GiB among them), a copy of each in an
# instance's storage and a stage-out's copy take about 14 GiB at once, and
# a benchmark that fills memory gets its own servers (and everything else
# on the machine) killed by the OOM killer, which then shows as stages
# waiting for the 60 s peer timeout (seen 2026-11-27 12:45-12:55 UTC).
# BENCH_TMPFS_NEED_GIB is what must be free before anything is made there.
if [ "$BENCH_FS" = tmpfs ]; then
    need_gib=${BENCH_TMPFS_NEED_GIB:-16}
    held_kib=$(du -sk "$BENCH_ROOT" 2>/dev/null | cut -f1)
    avail_kib=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
    if [ $(( (avail_kib + ${held_kib:-0}) / 1048576 )) -lt "$need_gib" ]; then
        echo "[bench] $BENCH_ROOT is tmpfs (memory) and the machine has $((avail_kib / 1048576)) GiB available" \
             "besides the $((${held_kib:-0} / 1048576)) GiB already there: the stager sets need about" \
             "${need_gib} GiB (BENCH_TMPFS_NEED_GIB); set BENCH_ROOT to a directory on disk, e.g." \
             "BENCH_ROOT=/var/tmp/adafs-bench-stage" >&2
        exit 1
    fi
fi
echo "[bench] data under $BENCH_ROOT ($BENCH_FS)" >&2
