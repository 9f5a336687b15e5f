#!/bin/sh
# bench/fs/floor_pairs.sh BUILD [PAIRS]
#
# Issue 21's point 3 (1 MiB writes >= 90% of fsbench floor) one figure at
# a time: fsbench floor and adafs's 1 MiB sequential writes through the
# interposer, back to back in pairs (the order swapped every pair), with
# the same file size, the same number of servers and the same storage
# root, to see how far single repeats spread and why. Per run it also
# records how long it took, how much of the machine's page cache was dirty
# or under writeback right before it (/proc/vmstat), and the load average.
#
# ROOT (disk or tmpfs, default disk: the disk is TMPDIR's), SERVERS
# (default 1), SIZES (MiB, default "256 1024": the all set writes 256 MiB,
# data1g 1 GiB). The adafs instance is started once per size and kept,
# as in run.sh; before every run, as run.sh's warm: sync, and 1 GiB
# touched and freed (WARM=0: neither). Prints one line per run, then per
# size the median of the pair ratios (adafs / floor), their range and how
# many fell below 90%.
set -eu
usage="usage: floor_pairs.sh BUILD [PAIRS]"
build=$(cd "${1:?$usage}" && pwd)
pairs=${2:-8}
root=${ROOT:-disk}
servers=${SERVERS:-1}
sizes=${SIZES:-256 1024}
case $root in
disk) base=$(mktemp -d "${TMPDIR:-/tmp}/floor_pairs.XXXXXX") ;;
tmpfs) base=$(mktemp -d "${TMPFS_DIR:-/dev/shm}/floor_pairs.XXXXXX") ;;
*) echo "floor_pairs.sh: ROOT is disk or tmpfs, not '$root'" >&2; exit 2 ;;
esac
ctl=$build/agent/adafs-ctl
# The floor through libtool's wrapper; adafs's runs call the program
# itself with this build's libadafs (the wrapper would load it before the
# interposer, as run.sh says).
fsb=$build/bench/fs/fsbench
fsb_bin=$build/bench/fs/.libs/fsbench
test -x "$fsb_bin" || fsb_bin=$fsb
mount=/adafs-bench
out=$base/runs
. "$(dirname "$0")/../vm_memory.sh"
trap 'test -e "$base/inst/servers" && "$ctl" stop --base "$base/inst" 2>/dev/null; rm -rf "$base"; release_free_memory' EXIT
hold_free_memory
mkdir -p "$base/local"

warm() {
    test "${WARM:-1}" = 1 || return 0
    sync
    warm_memory $((1 << 30))
}

# timed KIND SIZE PAIR CMD...: one run; appends "KIND SIZE PAIR MiB/s
# seconds dirty_kB writeback_kB load1" to $out.
timed() {
    kind=$1 size=$2 pair=$3
    shift 3
    warm
    dw=$(awk '$1 == "nr_dirty" { d = $2 } $1 == "nr_writeback" { w = $2 } END { print d * 4, w * 4 }' /proc/vmstat)
    t0=$(date +%s%N)
    rate=$("$@" | awk '/_write / { print $2 }')
    test -n "$rate" || { echo "floor_pairs.sh: no rate from: $*" >&2; exit 1; }
    t1=$(date +%s%N)
    echo "$kind $size $pair $rate $(( (t1 - t0) / 1000000 )) $dw $(cut -d' ' -f1 /proc/loadavg)" >>"$out"
}

for size in $sizes; do
    inst=$("$ctl" start --servers "$servers" --base "$base/inst" --mount $mount 2>/dev/null)
    i=1
    while [ "$i" -le "$pairs" ]; do
        order="floor adafs"
        test $((i % 2)) = 0 && order="adafs floor"
        for kind in $order; do
            if [ "$kind" = floor ]; then
                timed floor "$size" "$i" "$fsb" floor --servers "$servers" --mib "$size" --dir "$base/local/f$$"
            else
                timed adafs "$size" "$i" env LD_LIBRARY_PATH="$build/agent/.libs" ADAFS_INSTANCE="$inst" \
                    LD_PRELOAD="$build/agent/.libs/libadafs_preload.so" "$fsb_bin" ior --write-only --xfer 1M \
                    --block "${size}M" --dir "$mount/d$$"
            fi
        done
        i=$((i + 1))
    done
    "$ctl" stop --base "$base/inst" 2>/dev/null
done

echo "Machine: $(nproc) cores, load average at the end $(cut -d' ' -f1-3 /proc/loadavg); root $root ($base), $servers server(s), $build."
echo
echo "| run | MiB | pair | MiB/s | ms (whole command) | dirty kB before | writeback kB before | load |"
echo "|---|---|---|---|---|---|---|---|"
awk '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8 }' "$out"
echo
echo "| MiB | adafs / floor, median of pairs | range | pairs below 90% |"
echo "|---|---|---|---|"
awk '
{ v[$1, $2, $3] = $4; if (!($2 in seen)) { seen[$2] = 1; order[++ns] = $2 } if ($3 > np) np = $3 }
END {
    for (s = 1; s <= ns; s++) {
        size = order[s]; n = 0; low = 0
        for (p = 1; p <= np; p++)
            if (v["floor", size, p] > 0) { r[++n] = v["adafs", size, p] / v["floor", size, p]; if (r[n] < 0.9) low++ }
        for (i = 2; i <= n; i++) for (j = i; j > 1 && r[j-1] > r[j]; j--) { t = r[j]; r[j] = r[j-1]; r[j-1] = t }
        med = n % 2 ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
        printf "| %s | %.0f%% | %.0f-%.0f%% | %d of %d |\n", size, 100 * med, 100 * r[1], 100 * r[n], low, n
    }
}' "$out"
