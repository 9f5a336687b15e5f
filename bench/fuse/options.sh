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
fsb=$build/bench/fs/fsbench
. "$(dirname "$0")/common.sh"
fuse_start fuseopts "${SERVERS:-2}"
block=${BLOCK:-256M}
half=$(( $(numfmt --from=iec "$block") / 2 ))
fuse_variants "$@"
on() {
    t=$1 w=$2
    shift 2
    if [ "$t" = preload ]; then
        pre "$@" --dir "$work/mnt/p.$w.$r"
    else
        "$@" --dir "$work/m.$t/f.$w.$r"
    fi | while read -r metric value unit; do echo "r$r $t $w.$metric $value"; done
    # one file set at a time in the servers' page cache
    if [ "$t" = preload ]; then
        pre rm -rf "$work/mnt/p.$w.$r"
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
    rotate
done
