#!/bin/sh
# [SERVERS=N] [IO_ONLY=1] [BLOCK=SIZE] [IOR_ARGS=...] [READ_AHEAD="NAME=KB ..."] \
#   bench/fuse/options.sh BUILD_DIR REPEATS NAME:ADAFS_FUSE:OPTIONS...
#
# adafs-fuse variants against the LD_PRELOAD interposer, in the same run:
# each NAME mounts one instance of SERVERS servers (default 2; 1 is a
# job's shape) with the program ADAFS_FUSE
# (a build of adafs-fuse, or a script running one) and the -o OPTIONS
# (may be empty), and fsbench's mdtest (1,000 files each: 1 process, 2 in
# one directory, 2 in a directory each; not with IO_ONLY=1) and IOR (1 MiB
# transfers, BLOCK (256 MiB) by 1 process, half of it each by 2; IOR_ARGS
# added to its arguments, e.g. --buffer-offset 16; READ_AHEAD: a mount's
# read_ahead_kb, 1024 (the agent's) unless given for its NAME) run on
# every target in a rotating order within each repeat. Prints
# "rR TARGET WORKLOAD.METRIC VALUE" lines; bench/fuse/ratios.awk turns them
# into each variant's median ratio to the interposer of the same repeat.
# For trying FUSE options and builds before changing adafs-fuse's own
# (run.sh measures what is built). Run it as root, under
# flock /tmp/adafs-bench.lock.
set -eu
usage="usage: options.sh BUILD_DIR REPEATS NAME:ADAFS_FUSE:OPTIONS..."
build=$(cd "${1:?$usage}" && pwd)
repeats=${2:?$usage}
shift 2
[ $# -gt 0 ] || { echo "$usage" >&2; exit 2; }
ctl=$build/agent/adafs-ctl fsb=$build/bench/fs/fsbench
preload=$build/agent/.libs/libadafs_preload.so
work=$(mktemp -d "${TMPDIR:-/tmp}/fuseopts.XXXXXX")
mkdir -p "$work/mnt"
stop() {
    for m in "$work"/m.*; do umount -l "$m" 2>/dev/null || true; done
    "$ctl" stop --base "$work/inst" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap stop EXIT
"$ctl" start --servers "${SERVERS:-2}" --base "$work/inst" --mount "$work/mnt" >/dev/null
inst=$work/inst/instance
block=${BLOCK:-256M}
half=$(( $(numfmt --from=iec "$block") / 2 ))
names=preload
for v in "$@"; do
    name=${v%%:*} rest=${v#*:}
    bin=${rest%%:*} opts=${rest#*:}
    mkdir -p "$work/m.$name"
    "$bin" --instance "$inst" ${opts:+-o "$opts"} "$work/m.$name"
    # as the node agent sets it for a job's mount (agent/agentd/fusemount.c)
    ra=1024
    for kv in ${READ_AHEAD:-}; do [ "${kv%%=*}" = "$name" ] && ra=${kv#*=}; done
    echo "$ra" >"/sys/class/bdi/$(awk -v m="$work/m.$name" '$5 == m { print $3 }' /proc/self/mountinfo)/read_ahead_kb"
    names="$names $name"
done
on() {
    t=$1 w=$2
    shift 2
    if [ "$t" = preload ]; then
        ADAFS_INSTANCE=$inst ADAFS_MOUNT=$work/mnt LD_PRELOAD=$preload "$@" --dir "$work/mnt/p.$w.$r"
    else
        "$@" --dir "$work/m.$t/f.$w.$r"
    fi | while read -r metric value unit; do echo "r$r $t $w.$metric $value"; done
    # one file set at a time in the servers' page cache
    if [ "$t" = preload ]; then
        ADAFS_INSTANCE=$inst ADAFS_MOUNT=$work/mnt LD_PRELOAD=$preload rm -rf "$work/mnt/p.$w.$r"
    else
        rm -rf "$work/m.$t/f.$w.$r"
    fi
}
for r in $(seq "$repeats"); do
    for t in $names; do
        if [ "${IO_ONLY:-0}" != 1 ]; then
            on "$t" md1 "$fsb" mdtest --files 1000 --procs 1
            on "$t" md2 "$fsb" mdtest --files 1000 --procs 2
            on "$t" md2u "$fsb" mdtest --files 1000 --procs 2 --unique
        fi
        # shellcheck disable=SC2086 # IOR_ARGS: words
        on "$t" io1 "$fsb" ior --block "$block" --procs 1 ${IOR_ARGS:-}
        on "$t" io2 "$fsb" ior --block "$half" --procs 2 ${IOR_ARGS:-}
    done
    names=$(echo $names | awk '{ for (i = 2; i <= NF; i++) printf "%s ", $i; print $1 }')
done
