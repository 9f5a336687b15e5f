#!/bin/sh
# [SERVERS=N] [SIZE=SIZE] [OFFSET=B] [PROCS=1|2] \
#   bench/fuse/readpairs.sh BUILD_DIR REPEATS NAME:ADAFS_FUSE[:OPTIONS]...
#
# 1 MiB read()s of one file (SIZE, default 1 GiB, written once through
# the interposer) on one instance of SERVERS servers (default 1, a job's
# shape), through the interposer ("preload") and through a mount of each
# adafs-fuse build NAME (with -o OPTIONS, may be empty), in a rotating
# order within each repeat: mapread read, its buffer malloc's (16 bytes
# past a page) or OFFSET bytes past a page (0: IOR's); with PROCS=2 two
# readers of the file at once, their figure twice the slower's (all bytes
# over the time until both are done, as IOR's). Only reads, of
# one file in the page cache, so many repeats take little time: for
# paired comparisons of READ paths on a loaded machine. Prints
# options.sh's "rR TARGET read.read VALUE" lines for
# bench/fuse/ratios.awk. Run it as root, under flock /tmp/adafs-bench.lock.
set -eu
usage="usage: readpairs.sh BUILD_DIR REPEATS NAME:ADAFS_FUSE[:OPTIONS]..."
build=$(cd "${1:?$usage}" && pwd)
repeats=${2:?$usage}
shift 2
[ $# -gt 0 ] || { echo "$usage" >&2; exit 2; }
mapread=$build/bench/fuse/mapread
. "$(dirname "$0")/common.sh"
fuse_start readpairs "${SERVERS:-1}"
pre "$mapread" write "$work/mnt/big" "${SIZE:-1G}"
fuse_variants "$@"
# read1 TARGET: one mapread read of TARGET's file.
read1() {
    if [ "$1" = preload ]; then
        pre "$mapread" read "$work/mnt/big" ${OFFSET:+"$OFFSET"}
    else
        "$mapread" read "$work/m.$1/big" ${OFFSET:+"$OFFSET"}
    fi
}
for r in $(seq "$repeats"); do
    for t in $names; do
        if [ "${PROCS:-1}" = 2 ]; then
            read1 "$t" >"$work/p1" &
            read1 "$t" >"$work/p2"
            wait
            cat "$work/p1" "$work/p2" | awk '{ if (!n++ || $2 < min) min = $2 } END { print "read", 2 * min, "MiB/s" }'
        else
            read1 "$t"
        fi | while read -r metric value unit; do echo "r$r $t read.$metric $value"; done
    done
    rotate
done
