#!/bin/sh
# [SERVERS=N] [OLD=PRELOAD_SO] bench/fuse/maps.sh BUILD_DIR REPEATS
#
# The interposer's mmap path alone (access=preload, no mount), in pairs:
# a 1 GiB file on one instance of SERVERS servers (default 1, a job's
# shape) read by mapread with 1 MiB read()s and through mmap in turn,
# which goes first alternating from pair to pair. Prints
# "rR read|mmap MiB/s" lines; the ratio is taken within each pair. More
# pairs than run.sh's 3, for a path whose single runs vary widely. With
# OLD, another build's libadafs_preload.so (a copy of it: it finds
# BUILD_DIR's libadafs), its mmap runs in the same repeats ("rR mmap-old"),
# the three in turn, so that a change of the mmap path is measured
# against what it replaces. Run it as root, under flock
# /tmp/adafs-bench.lock.
set -eu
usage="usage: maps.sh BUILD_DIR REPEATS"
build=$(cd "${1:?$usage}" && pwd)
repeats=${2:?$usage}
mapread=$build/bench/fuse/mapread
. "$(dirname "$0")/common.sh"
fuse_start maps "${SERVERS:-1}"
pre "$mapread" write "$work/mnt/big" 1G >/dev/null
for r in $(seq "$repeats"); do
    if [ -n "${OLD:-}" ]; then
        case $((r % 3)) in
        1) ways="read mmap mmap-old" ;;
        2) ways="mmap mmap-old read" ;;
        *) ways="mmap-old read mmap" ;;
        esac
    elif [ $((r % 2)) = 1 ]; then ways="read mmap"; else ways="mmap read"; fi
    for w in $ways; do
        case $w in
        mmap-old) lib=$OLD ;;
        *) lib=$preload ;;
        esac
        ADAFS_INSTANCE=$inst ADAFS_MOUNT=$work/mnt LD_PRELOAD=$lib \
            "$mapread" "${w%-old}" "$work/mnt/big" |
            while read -r metric value unit; do echo "r$r $w $value"; done
    done
done
