#!/bin/sh
# [SERVERS=N] [BLOCK=SIZE] bench/fuse/readlib.sh BUILD_DIR LIBDIR REPEATS
#
# 1 MiB sequential reads (fsbench ior: BLOCK, default 1 GiB, by 1
# process, half of it each by 2; read from the page cache at 5-15 GiB/s
# here, where run.sh's 256 MiB is a read of 20-50 ms) on one instance of
# SERVERS servers (default 2), through the interposer with BUILD_DIR's
# libadafs ("preload"), through it with the libadafs.so.0 in LIBDIR
# ("var", by LD_LIBRARY_PATH: e.g. a build with
# bench/fuse/pread-every-server.patch) and through adafs-fuse's mount
# ("fuse"), in a rotating order within each repeat. Prints options.sh's
# "rR TARGET WORKLOAD.METRIC VALUE" lines for bench/fuse/ratios.awk (each
# target's ratio to "preload" of the same repeat). With SERVERS=1 "var"
# is the same path as "preload" for that patch: an A/A control. Run it as
# root, under flock /tmp/adafs-bench.lock.
set -eu
usage="usage: readlib.sh BUILD_DIR LIBDIR REPEATS"
build=$(cd "${1:?$usage}" && pwd)
var=$(cd "${2:?$usage}" && pwd)
repeats=${3:?$usage}
block=${BLOCK:-1G}
half=$(( $(numfmt --from=iec "$block") / 2 ))
fsb=$build/bench/fs/fsbench fuse=$build/agent/adafs-fuse
. "$(dirname "$0")/common.sh"
test -e "$var/libadafs.so.0" || { echo "readlib.sh: $var/libadafs.so.0 is missing" >&2; exit 1; }
fuse_start readlib "${SERVERS:-2}"
fuse_mount "$fuse" "$work/fmnt"
on() {
    t=$1 w=$2
    shift 2
    case $t in
    preload) pre "$@" --dir "$work/mnt/p.$w.$r" ;;
    var) LD_LIBRARY_PATH=$var ADAFS_INSTANCE=$inst ADAFS_MOUNT=$work/mnt LD_PRELOAD=$preload \
             "$@" --dir "$work/mnt/v.$w.$r" ;;
    fuse) "$@" --dir "$work/fmnt/f.$w.$r" ;;
    esac | while read -r metric value unit; do echo "r$r $t $w.$metric $value"; done
    # one file set at a time in the servers' page cache; all three
    # targets' directories are the instance's, seen through the mount
    rm -rf "$work/fmnt/${t%"${t#?}"}.$w.$r"
}
names="preload var fuse"
for r in $(seq "$repeats"); do
    for t in $names; do
        on "$t" io1 "$fsb" ior --block "$block" --procs 1
        on "$t" io2 "$fsb" ior --block "$half" --procs 2
    done
    rotate
done
