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
ctl=$build/agent/adafs-ctl mapread=$build/bench/fuse/mapread
preload=$build/agent/.libs/libadafs_preload.so
work=$(mktemp -d "${TMPDIR:-/tmp}/readpairs.XXXXXX")
mkdir -p "$work/mnt"
stop() {
    for m in "$work"/m.*; do umount -l "$m" 2>/dev/null || true; done
    "$ctl" stop --base "$work/inst" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap stop EXIT
"$ctl" start --servers "${SERVERS:-1}" --base "$work/inst" --mount "$work/mnt" >/dev/null 2>&1
inst=$work/inst/instance
pre() { ADAFS_INSTANCE=$inst ADAFS_MOUNT=$work/mnt LD_PRELOAD=$preload "$@"; }
pre "$mapread" write "$work/mnt/big" "${SIZE:-1G}"
names=preload
for v in "$@"; do
    name=${v%%:*} rest=${v#*:}
    bin=${rest%%:*} opts=${rest#"$bin"} opts=${opts#:}
    mkdir -p "$work/m.$name"
    "$bin" --instance "$inst" ${opts:+-o "$opts"} "$work/m.$name"
    # as the node agent sets it for a job's mount (agent/agentd/fusemount.c)
    echo 1024 >"/sys/class/bdi/$(awk -v m="$work/m.$name" '$5 == m { print $3 }' /proc/self/mountinfo)/read_ahead_kb"
    names="$names $name"
done
for r in $(seq "$repeats"); do
    for t in $names; do
        if [ "$t" = preload ]; then
            pre "$mapread" read "$work/mnt/big" ${OFFSET:+"$OFFSET"}
        else
            "$mapread" read "$work/m.$t/big" ${OFFSET:+"$OFFSET"}
        fi | while read -r metric value unit; do echo "r$r $t read.$metric $value"; done
    done
    names=$(echo $names | awk '{ for (i = 2; i <= NF; i++) printf "%s ", $i; print $1 }')
done
