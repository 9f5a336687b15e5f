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
echo "[bench] data under $BENCH_ROOT ($BENCH_FS)" >&2
