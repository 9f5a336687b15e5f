#!/bin/sh
# [SERVERS=N] bench/fuse/run.sh BUILD_DIR [REPEATS]
#
# The adafs-fuse mount against the LD_PRELOAD interposer and the backing
# directory, in the same run (issue 26): mdtest-like create, stat and
# remove and IOR-like 1 MiB sequential write and read (fsbench), with 1
# and 2 processes (mdtest's 2 share one directory, md2, or have one each,
# md2u, as with mdtest -u), on one instance of SERVERS servers (default 2)
# that is both mounted and preloaded at the same path (as a job's
# access=both); SERVERS=1 is a job's shape (one server per node): with 2 on
# one machine adafs-fuse splices both servers' chunk files while the
# interposer reads only the first piece's server's directly (doc/fuse.md,
# Speed). Then a 1 GiB file read through the interposer's mmap path against
# its read() (mapread), with the mount (access=both) and without it
# (access=preload).
# Each repeat runs the three targets in a rotating order, so none always
# goes first on a shared machine; ratios are taken within each repeat and
# their median, min and max printed, as Markdown. Run it under
# flock /tmp/adafs-bench.lock.
set -eu
usage="usage: run.sh BUILD_DIR [REPEATS]"
build=$(cd "${1:?$usage}" && pwd)
repeats=${2:-5}
fsb=$build/bench/fs/fsbench
fuse=$build/agent/adafs-fuse
mapread=$build/bench/fuse/mapread
. "$(dirname "$0")/common.sh"
for f in "$ctl" "$fsb" "$fuse" "$mapread" "$preload"; do
    test -e "$f" || { echo "run.sh: $f is missing: build first (make -C $build)" >&2; exit 1; }
done
fuse_start fusebench "${SERVERS:-2}"
mount=$work/mnt
results=$work/results
mkdir -p "$work/local"
fuse_mount "$fuse" "$mount"

# on TARGET NAME CMD...: runs CMD's fsbench against TARGET's directory and
# records "rR.TARGET.NAME.metric value".
on() {
    t=$1 name=$2
    shift 2
    case $t in
    local) "$@" --dir "$work/local/$name" ;;
    preload) pre "$@" --dir "$mount/p.$name" ;;
    fuse) "$@" --dir "$mount/f.$name" ;;
    esac | while read -r metric value unit; do
        echo "r$r.$t.$name.$metric $value" >>"$results"
    done
}

workloads() {
    on "$1" md1 "$fsb" mdtest --files 2000 --procs 1
    on "$1" md2 "$fsb" mdtest --files 1000 --procs 2
    on "$1" md2u "$fsb" mdtest --files 1000 --procs 2 --unique
    on "$1" io1 "$fsb" ior --block 256M --procs 1
    on "$1" io2 "$fsb" ior --block 128M --procs 2
}

for r in $(seq "$repeats"); do
    case $((r % 3)) in
    1) order="local preload fuse" ;;
    2) order="preload fuse local" ;;
    0) order="fuse local preload" ;;
    esac
    for t in $order; do workloads "$t"; done
done

# The mmap path: a 1 GiB file, read() and mmap through the interposer in
# turn, first with the kernel mount there (access=both: the interposer maps
# through it), then without it (access=preload: the interposer serves the
# mapping from memory holding the file's bytes: doc/preload.md).
pre "$mapread" write "$mount/big" 1G
maps() {
    for r in $(seq "$repeats"); do
        if [ $((r % 2)) = 1 ]; then ways="read mmap"; else ways="mmap read"; fi
        for w in $ways; do
            pre "$mapread" "$w" "$mount/big" | while read -r metric value unit; do
                echo "r$r.$1.$metric $value" >>"$results"
            done
        done
    done
}
maps both
umount "$mount" 2>/dev/null || fusermount3 -u "$mount"
maps preload

# median of the values on standard input
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
value() { awk -v k="r$1.$2" '$1 == k { print $2 }' "$results"; }

echo "| measure | local | preload | fuse | fuse / preload: median (min-max) |"
echo "|---|---|---|---|---|"
for m in md1.mdtest_create md1.mdtest_stat md1.mdtest_remove md2.mdtest_create md2.mdtest_stat \
         md2.mdtest_remove md2u.mdtest_create md2u.mdtest_stat md2u.mdtest_remove io1.ior_write io1.ior_read io2.ior_write io2.ior_read; do
    line="| $m"
    for t in local preload fuse; do
        line="$line | $(for r in $(seq "$repeats"); do value "$r" "$t.$m"; done | median)"
    done
    ratios=$(for r in $(seq "$repeats"); do
        awk -v f="$(value "$r" "fuse.$m")" -v p="$(value "$r" "preload.$m")" \
            'BEGIN { if (p > 0) printf "%.0f\n", 100 * f / p }'
    done)
    echo "$line | $(echo "$ratios" | median)% ($(echo "$ratios" | sort -n | head -1)-$(echo "$ratios" | sort -n | tail -1)%) |"
done
echo
echo "| 1 GiB through the interposer | read() MiB/s | mmap MiB/s | mmap / read(): median (min-max) |"
echo "|---|---|---|---|"
for a in preload both; do
    ratios=$(for r in $(seq "$repeats"); do
        awk -v m="$(value "$r" "$a.mmap")" -v p="$(value "$r" "$a.read")" \
            'BEGIN { if (p > 0) printf "%.0f\n", 100 * m / p }'
    done)
    echo "| access=$a, $repeats repeats | $(for r in $(seq "$repeats"); do value "$r" "$a.read"; done | median) |" \
         "$(for r in $(seq "$repeats"); do value "$r" "$a.mmap"; done | median) |" \
         "$(echo "$ratios" | median)% ($(echo "$ratios" | sort -n | head -1)-$(echo "$ratios" | sort -n | tail -1)%) |"
done
