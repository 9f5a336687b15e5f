#!/bin/sh
# bench/fair/tbf.sh BUILD [SECONDS] [BYTES_PER_SECOND]   (as root; clients
# run as the test user adafs-test)
#
# AdapTBF with real servers (acceptance 5 of issue 25): two one-server
# instances on this host, job 1 of weight 3 and job 2 of weight 1, each
# adafsd with --bandwidth-file, and the agent's loop (tbf_loop.h, driven
# by bench/fair/tbfloop) sharing BYTES_PER_SECOND (default 80 MB/s, below
# what this host's writes reach, so the buckets are the bottleneck) among
# them every 100 ms. Clients write 1 MiB blocks (2 processes per job).
#  saturating  both jobs all the time: ratio of bytes moved, 3 +- 10%;
#              Jain's index of bytes per weight.
#  bursty      job 1 in 500 ms bursts with 500 ms gaps, job 2 all the
#              time: job 2's part of the node from the 3rd period of each
#              gap on (>= 90%), job 1's part of its due from the 3rd period
#              of each burst on; the lending balances' sum (0); the loop's
#              cost per job and period (reading, dividing, writing).
set -eu
usage="usage: tbf.sh BUILD [SECONDS] [BYTES_PER_SECOND]"
. "$(dirname "$0")/lib.sh"
fair_init "${1:?$usage}" tbfbench
trap fair_cleanup EXIT
secs=${2:-6}
bw=${3:-80000000}

start() {  # start K: instance K, its adafsd bound by $work/bwK/rates
    mkdir -p "$work/bw$1"
    rm -rf "$work/bw$1"/*
    fair_start "base$1" 1 "/adafs-tbf$1" --bandwidth-file "$work/bw$1/rates"
}
stop() { fair_stop "base$1"; }
load() {  # load K SECONDS [ON_MS OFF_MS]
    k=$1; shift
    runuser -u $A -- env ADAFS_INSTANCE="$work/base$k.$A" \
        "$b/bench/fair/.libs/fairload" write / 2 "$@" >/dev/null
}
run() {  # run MODE: the loop's per-period lines in $work/MODE
    start 1; start 2
    "$b/bench/fair/tbfloop" "$bw" "$secs" "1:3:$work/bw1" "2:1:$work/bw2" >"$work/$1" &
    loop=$!
    sleep 0.3
    if [ "$1" = saturating ]; then
        load 1 "$((secs - 1))" & load 2 "$((secs - 1))"
    else
        load 1 "$((secs - 1))" 500 500 & load 2 "$((secs - 1))"
    fi
    wait
    stop 1; stop 2
}

cap=$(echo "$bw" | awk '{print $1 / 10}')
run saturating
# the periods both jobs were moving, less the first 3 (start-up)
awk -v cap="$cap" '$1 == "cost" {next}
    {m[$1, $2] = $3; if ($3 > 0) { if (!first[$2]) first[$2] = $1 + 1; last[$2] = $1 } }
    END {
        lo = (first[1] > first[2] ? first[1] : first[2]) + 2
        hi = last[1] < last[2] ? last[1] : last[2]
        for (p = lo; p <= hi; p++) { a += m[p, 1]; c += m[p, 2] }
        x = a / 3; y = c
        printf "saturating: %d periods, job 1 %.1f MB/s, job 2 %.1f MB/s, ratio %.3f, Jain %.4f\n",
            hi - lo + 1, a / (hi - lo + 1) * 10 / 1e6, c / (hi - lo + 1) * 10 / 1e6, a / c,
            (x + y) * (x + y) / (2 * (x * x + y * y))
    }' "$work/saturating"

run bursty
awk -v cap="$cap" '$1 == "cost" {cost = $2; cpu = $3; next}
    {m[$1, $2] = $3; h[$1, $2] = $4; bal[$1] += $7; if ($1 > np) np = $1
     if ($3 > 0) { if (!first[$2]) first[$2] = $1 + 1; last[$2] = $1 } }
    END {
        lo = first[2] + 1; hi = last[2]
        run = 0
        for (p = lo; p <= hi; p++) {
            busy = m[p, 1] > 0 || h[p, 1]
            if (busy != was) run = 0
            was = busy
            if (run++ < 2) continue
            if (busy) { bn++; bsum += m[p, 1] / (cap * 0.75) }
            else { gn++; gsum += m[p, 2] / cap }
        }
        for (p = 0; p <= np; p++) {
            s = bal[p] < 0 ? -bal[p] : bal[p]
            if (s > maxbal) maxbal = s
        }
        printf "bursty: job 2 in the gaps from their 3rd period: %.3f of the node (%d periods); ", gn ? gsum / gn : 0, gn
        printf "job 1 in its bursts from their 3rd period: %.3f of its due (%d periods)\n", bn ? bsum / bn : 0, bn
        printf "lending: largest |sum of balances| %.3g bytes (capacity %.3g per period)\n", maxbal, cap
        printf "loop: %.1f us elapsed, %.1f us CPU per job and period (usage read, adaptbf, rates written)\n", cost, cpu
    }' "$work/bursty"
echo "allocator alone (bench/fair/tbfbench):"
"$b/bench/fair/tbfbench" | grep -i "per job" || "$b/bench/fair/tbfbench" | tail -3
