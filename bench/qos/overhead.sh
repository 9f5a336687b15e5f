#!/bin/sh
# bench/qos/overhead.sh BUILD_DIR [REPEATS] [DIR]
#
# Issue 24, acceptance 4: what QoS costs when no limit binds. A stat loop
# on a path of the "parallel file system" (DIR, a local directory, default
# /var/tmp) and 1 MiB sequential writes and reads of a file there, each run
# as a fresh process under the interposer with QoS on (ADAFS_QOS_PATHS=DIR,
# no limit given) and with it off (the same interposer, no QoS variables),
# taking turns (on-off, then off-on) REPEATS times (default 9). Each pair
# gives a ratio on/off measured seconds apart, so a machine whose speed
# drifts moves both; the median of the ratios is the result, min and max
# show the spread. Also the micro-benchmark of the check alone.
# QOS_BENCH_CLOCK=cpu: rates per second of CPU time instead of wall time;
# QOS_BENCH_STATS, QOS_BENCH_MIB: the loops' lengths (300000, 1024).
# Run it under flock /tmp/adafs-bench.lock (the machine is shared).
set -eu
build=$(cd "${1:?usage: overhead.sh BUILD_DIR [REPEATS] [DIR]}" && pwd)
repeats=${2:-9}
base=${3:-/var/tmp}
bench=$build/bench/qos/qosbench
preload=$build/agent/.libs/libadafs_preload.so
for f in "$bench" "$preload"; do
    [ -e "$f" ] || { echo "overhead.sh: $f is missing: build first" >&2; exit 1; }
done
pfs=$(mktemp -d "$base/qos-overhead.XXXXXX")
trap 'rm -rf "$pfs"' EXIT
: > "$pfs/file"
stats=${QOS_BENCH_STATS:-300000}
mib=${QOS_BENCH_MIB:-1024}

run() {  # run on|off ARGS...: one measurement, its figure on stdout
    mode=$1; shift
    if [ "$mode" = on ]; then
        env -u SLURM_JOB_ID ADAFS_QOS_PATHS="$pfs" LD_PRELOAD="$preload" "$bench" "$@"
    else
        env -u SLURM_JOB_ID -u ADAFS_QOS_PATHS LD_PRELOAD="$preload" "$bench" "$@"
    fi
}

# summary: "median min max n" of the on/off ratios of "on off" lines
summary() {
    awk '{ printf "%.6f\n", $1 / $2 }' | sort -n | awk '{ r[NR] = $1 } END {
        m = (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
        printf "%.4f %.4f %.4f %d\n", m, r[1], r[NR], NR }'
}

measure() {  # measure NAME ARGS...: REPEATS pairs, alternating who goes first
    name=$1; shift
    out=$pfs/$name.pairs
    : > "$out"
    i=0
    while [ "$i" -lt "$repeats" ]; do
        if [ $((i % 2)) = 0 ]; then a=$(run on "$@"); b=$(run off "$@")
        else b=$(run off "$@"); a=$(run on "$@"); fi
        echo "$a $b" >> "$out"
        i=$((i + 1))
    done
    set -- $(summary < "$out")
    printf '| %s | %s | %s-%s | %s |\n' "$name" "$1" "$2" "$3" "$4"
    sed 's/^/    /' "$out" >&2
}

echo "## QoS cost, $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, ${QOS_BENCH_CLOCK:-wall} clock"
echo
"$bench" check 2 | sed 's/^/    /'
echo
echo "| loop | on/off median | min-max | pairs |"
echo "|---|---|---|---|"
measure "stat $stats x" stat "$pfs/file" "$stats"
measure "write $mib MiB" write "$pfs/file" "$mib"
measure "read $mib MiB" read "$pfs/file" "$mib"
