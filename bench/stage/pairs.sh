#!/bin/bash
# Alternating runs of two builds on one data set, for before/after
# comparisons on a noisy machine:
#
#   bench/stage/pairs.sh NEW_BUILD BASE_BUILD SET [PAIRS] [WORK_DIR]
#
# SET is one of small, mid, big (see run.sh); PAIRS (default 6) pairs of
# run.sh runs (TOOLS=cp, LIMITS=0), the order swapped every other pair so
# neither build always goes first. KEEP as for run.sh.
# NEW_ENV and BASE_ENV (VAR=value words) go into each build's environment:
# with one build for both, BASE_ENV=ADAFS_TRANSPORT=tcp compares a client
# reaching its node's servers over TCP with one using their Unix sockets.
# Prints one line per run: time, build, cp -r / stage-in / stage-out
# seconds and the two ratios to cp -r of the same run. Every run.sh run
# starts with its own pause (SETTLE, see run.sh).
set -euo pipefail
usage="usage: pairs.sh NEW_BUILD BASE_BUILD SET [PAIRS] [WORK_DIR]"
new=${1:?$usage} base=${2:?$usage} set=${3:?$usage} pairs=${4:-6} work=${5:-}
case $set in small|mid|big) ;; *) echo "pairs.sh: unknown set '$set' (small mid big)" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
. "$here/root.sh"
work=${work:-$BENCH_ROOT}
field() { awk -F'|' -v s="$set" -v t="$2" '$2 ~ " "s" " && $3 ~ " "t" " { print $4 + 0 }' <<<"$1"; }
for i in $(seq "$pairs"); do
    order="new base"
    [ $((i % 2)) = 0 ] && order="base new"
    for which in $order; do
        build=$new extra=${NEW_ENV:-}
        [ "$which" = base ] && build=$base extra=${BASE_ENV:-}
        # shellcheck disable=SC2086  # extra: VAR=value words
        out=$(env $extra SETS="$set" TOOLS=cp LIMITS=0 KEEP="${KEEP:-0}" bash "$here/run.sh" "$build" "$work" 2>/dev/null)
        c=$(field "$out" cp) in=$(field "$out" stage_in) o=$(field "$out" stage_out)
        awk -v t="$(date +%T)" -v w="$which" -v s="$set" -v c="$c" -v i="$in" -v o="$o" \
            'BEGIN { printf "%s %s %s cp=%s in=%s out=%s ratio_in=%.2f ratio_out=%.2f\n", t, w, s, c, i, o, c / i, c / o }'
    done
done
