#!/bin/sh
# [SERVERS=N] [SIZE=SIZE] [OFFSET=B] \
#   bench/fuse/readpairs.sh BUILD_DIR REPEATS NAME:ADAFS_FUSE[:OPTIONS]...
#
# 1 MiB read()s of one file (SIZE, default 1 GiB, written once through
# the interposer) on one instance of SERVERS servers (default 1, a job's
# shape), through the interposer ("preload") and through a mount of each
# adafs-fuse build NAME (with -o OPTIONS, may be empty), in a rotating
# order within each repeat: mapread read, its buffer malloc's (16 bytes
# past a page) or OFFSET bytes past a page (0: IOR's). Only reads, of
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
for r in $(seq "$repeats"); do
    for t in $names; do
        if [ "$t" = preload ]; then
            pre "$mapread" read "$work/mnt/big" ${OFFSET:+"$OFFSET"}
        else
            "$mapread" read "$work/m.$t/big" ${OFFSET:+"$OFFSET"}
        fi | while read -r metric value unit; do echo "r$r $t read.$metric $value"; done
    done
    rotate
done
