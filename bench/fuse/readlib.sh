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
ctl=$build/agent/adafs-ctl fsb=$build/bench/fs/fsbench fuse=$build/agent/adafs-fuse
preload=$build/agent/.libs/libadafs_preload.so
test -e "$var/libadafs.so.0" || { echo "readlib.sh: $var/libadafs.so.0 is missing" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/readlib.XXXXXX")
mkdir -p "$work/mnt" "$work/fmnt"
stop() {
    umount -l "$work/fmnt" 2>/dev/null || true
    "$ctl" stop --base "$work/inst" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap stop EXIT
"$ctl" start --servers "${SERVERS:-2}" --base "$work/inst" --mount "$work/mnt" >/dev/null 2>&1
inst=$work/inst/instance
"$fuse" --instance "$inst" "$work/fmnt"
# as the node agent sets it for a job's mount (agent/agentd/fusemount.c)
echo 1024 >"/sys/class/bdi/$(awk -v m="$work/fmnt" '$5 == m { print $3 }' /proc/self/mountinfo)/read_ahead_kb"
on() {
    t=$1 w=$2
    shift 2
    case $t in
    preload) ADAFS_INSTANCE=$inst ADAFS_MOUNT=$work/mnt LD_PRELOAD=$preload "$@" --dir "$work/mnt/p.$w.$r" ;;
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
    names=$(echo $names | awk '{ for (i = 2; i <= NF; i++) printf "%s ", $i; print $1 }')
done
