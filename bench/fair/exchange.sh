#!/bin/sh
# bench/fair/exchange.sh BUILD [PAIRS]   (as root: clients run as the test
# users adafs-test and adafs-test2)
#
# Issue 25, acceptance 4: fair sharing across the servers of an instance.
# Two adafsd (adafs-ctl) under user-fair, one slot each, 1 ms of emulated
# device per request (--test-service-time: each server serves 1000
# requests/s whatever the machine's load). User A keeps 2 processes of
# stats on server 0 and 2 on server 1 from the start; user B 2 on server 1
# only, from 2 s on, for 4 s. Globally fair is A = B (each a server's
# worth); without the exchange server 1 splits evenly and A gets 3 times B.
# Each run prints A/B per 250 ms window (half a lambda) of B's first 2 s;
# the summary: A/B over B's last 2 s, and the time from B's start until
# A/B stays within 1 +- 10% (in lambdas, lambda 500 ms; counted from B's
# first whole window). PAIRS (3) pairs
# of runs, exchange off (--fair-exchange 0) and on (500 ms), alternating
# which goes first.
set -eu
usage="usage: exchange.sh BUILD [PAIRS]"
. "$(dirname "$0")/lib.sh"
fair_init "${1:?$usage}" fairxbench
trap fair_cleanup EXIT
pairs=${2:-3}
lambda=500 win=250

start() {  # start LAMBDA_MS: a two-server instance
    fair_start base 2 /adafs-fairx --fair-policy user-fair --fair-slots 1 --test-service-time 1000 \
        --fair-exchange "$1"
    # The root directory is the servers' user's (root): the users work in /pub.
    env LD_PRELOAD="$b/agent/.libs/libadafs_preload.so" ADAFS_INSTANCE="$work/base/instance" \
        mkdir -m 1777 /adafs-fairx/pub
}
stop() { fair_stop base; }
load() {  # load USER SERVER SECONDS OUT: 4 processes' windows
    runuser -u "$1" -- env ADAFS_INSTANCE="$work/base.$1" FAIRLOAD_SERVER="$2" \
        FAIRLOAD_WINDOW_MS=$win "$b/bench/fair/.libs/fairload" stat /pub 2 "$3" >"$4"
}
run() {  # run LAMBDA_MS: "ratio settle_lambdas"
    start "$1"
    load $A 0 6 "$work/a0" & load $A 1 6 "$work/a1" &
    sleep 2
    load $B 1 4 "$work/b1"
    wait
    stop
    if [ -n "${EXCHANGE_DEBUG:-}" ]; then
        for f in a0 a1 b1; do
            awk -v f=$f '$1 == "window" {o[$2] += $4} END {for (k in o) print k, f, o[k]}' "$work/$f"
        done | sort -n >"$EXCHANGE_DEBUG.$1"
        cp "$work"/base/server.*.log "$(dirname "$EXCHANGE_DEBUG")/"
    fi
    # Windows while B ran whole (its first and last are partial).
    awk -v lambda=$lambda -v win=$win '
        FNR == 1 { who = FILENAME ~ /b1$/ ? "B" : "A" }
        $1 == "window" { ops[who, $2] += $4; if (who == "B") { if (!lo || $2 < lo) lo = $2; if ($2 > hi) hi = $2 } }
        END {
            first = lo + 1; last = hi - 1; settled = first
            for (k = first; k <= last; k++) {
                r = ops["B", k] ? ops["A", k] / ops["B", k] : 99
                if (r < 0.9 || r > 1.1) settled = k + 1
            }
            for (k = last - 2000 / win + 1; k <= last; k++) { a += ops["A", k]; b += ops["B", k] }
            for (k = first; k <= first + 7; k++)
                line = line sprintf(" %.2f", ops["B", k] ? ops["A", k] / ops["B", k] : 99)
            printf "%.3f %.2f%s\n", a / b, (settled - first + 1) * win / lambda, line
        }' "$work/a0" "$work/a1" "$work/b1"
}

echo "## exchange: A on both servers, B on server 1 from 2 s on; A/B per 250 ms window"
i=0
while [ $i -lt "$pairs" ]; do
    if [ $((i % 2)) = 0 ]; then order="0 $lambda"; else order="$lambda 0"; fi
    for l in $order; do
        set -- $(run $l)
        ratio=$1 settle=$2; shift 2
        if [ $l = 0 ]; then
            echo "pair $i off: A/B $ratio over B's last 2 s; B's first 2 s by 250 ms:$*"
            echo "$ratio" >>"$work/off"
        else
            echo "pair $i on:  A/B $ratio over B's last 2 s, within 1 +- 10% after $settle lambda; B's first 2 s by 250 ms:$*"
            echo "$ratio $settle" >>"$work/on"
        fi
    done
    i=$((i + 1))
done
median() { sort -n | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "off: median A/B $(median <"$work/off")"
echo "on:  median A/B $(awk '{print $1}' "$work/on" | median), median settling $(awk '{print $2}' "$work/on" | median) lambda, worst $(awk '{print $2}' "$work/on" | sort -n | tail -1) lambda"
