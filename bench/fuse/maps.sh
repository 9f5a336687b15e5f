#!/bin/sh
# [SERVERS=N] bench/fuse/maps.sh BUILD_DIR REPEATS
#
# The interposer's mmap path alone (access=preload, no mount), in pairs:
# a 1 GiB file on one instance of SERVERS servers (default 1, a job's
# shape) read by mapread with 1 MiB read()s and through mmap in turn,
# which goes first alternating from pair to pair. Prints
# "rR read|mmap MiB/s" lines; the ratio is taken within each pair. More
# pairs than run.sh's 3, for a path whose single runs vary widely. Run it
# as root, under flock /tmp/adafs-bench.lock.
set -eu
usage="usage: maps.sh BUILD_DIR REPEATS"
build=$(cd "${1:?$usage}" && pwd)
repeats=${2:?$usage}
ctl=$build/agent/adafs-ctl mapread=$build/bench/fuse/mapread
preload=$build/agent/.libs/libadafs_preload.so
work=$(mktemp -d "${TMPDIR:-/tmp}/maps.XXXXXX")
mkdir -p "$work/mnt"
stop() {
    "$ctl" stop --base "$work/inst" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap stop EXIT
"$ctl" start --servers "${SERVERS:-1}" --base "$work/inst" --mount "$work/mnt" >/dev/null 2>&1
pre() { ADAFS_INSTANCE=$work/inst/instance ADAFS_MOUNT=$work/mnt LD_PRELOAD=$preload "$@"; }
pre "$mapread" write "$work/mnt/big" 1G >/dev/null
for r in $(seq "$repeats"); do
    if [ $((r % 2)) = 1 ]; then ways="read mmap"; else ways="mmap read"; fi
    for w in $ways; do
        pre "$mapread" "$w" "$work/mnt/big" | while read -r metric value unit; do echo "r$r $metric $value"; done
    done
done
