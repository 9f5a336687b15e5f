#!/bin/sh
# Stress streams for the walltime robustness protocol (doc/bench/walltime.md):
# each is a real SWF trace changed in one way a site's workload can change,
# deterministically, so any model can be replayed on it with
# `adafs-walltime evaluate`.
#
#   bench/walltime/stress.sh STREAM TRACE.swf > STREAM.swf
#
# STREAM:
#   orig            the trace unchanged
#   user-longer     the 5 users with the most jobs: from their middle job on,
#                   every run 5x longer (a job is still killed at its limit:
#                   at most its request, or its original run if that was longer)
#   user-shorter    the same users' runs 5x shorter from their middle job on
#   new-users       every user becomes a new one after each 50 of their jobs
#                   (a stream of users without history)
#   runs-x2         every run 2x longer (killed at its limit as above)
#   runs-x0.5       every run half as long
#   default-request every request replaced by the site default, the trace's
#                   longest request (users who never set a limit)
# Header lines (';') pass unchanged; fields: see ../shared/traces/README.md.
set -eu
[ $# -eq 2 ] || { echo "usage: $0 STREAM TRACE.swf" >&2; exit 2; }
stream=$1 trace=$2
[ -r "$trace" ] || { echo "$0: cannot read $trace" >&2; exit 1; }

# scale(run, req, k): the run k times as long, killed at its limit.
common='
function scale(run, req, k,   r, cap) {
    if (run < 0) return run
    r = int(run * k + 0.5)
    cap = req > run ? req : run
    if (k > 1 && req > 0 && r > cap) r = cap
    return r
}
function out() { $1 = $1; print }'

case $stream in
orig)
    cat "$trace" ;;
user-longer|user-shorter)
    k=5; [ "$stream" = user-shorter ] && k=0.2
    awk -v k="$k" "$common"'
        FNR == NR { if ($0 !~ /^;/ && NF >= 12) n[$12]++; next }
        FNR == 1 {
            for (pick = 0; pick < 5; pick++) {
                best = ""
                for (u in n)
                    if (!(u in chosen) && (best == "" || n[u] > n[best] ||
                        (n[u] == n[best] && u + 0 < best + 0)))
                        best = u
                if (best == "") break
                chosen[best] = 1
            }
        }
        /^;/ || NF < 12 { print; next }
        {
            u = $12
            if (u in chosen && (seen[u]++) >= int(n[u] / 2)) $4 = scale($4, $9, k)
            out()
        }' "$trace" "$trace" ;;
new-users)
    awk "$common"'
        /^;/ || NF < 12 { print; next }
        { u = $12; if (u >= 0) $12 = sprintf("%d", u * 100000 + int((seen[u]++) / 50)); out() }' "$trace" ;;
runs-x2|runs-x0.5)
    k=${stream#runs-x}
    awk -v k="$k" "$common"'
        /^;/ || NF < 12 { print; next }
        { $4 = scale($4, $9, k); out() }' "$trace" ;;
default-request)
    awk "$common"'
        FNR == NR { if ($0 !~ /^;/ && $9 > max) max = $9; next }
        /^;/ || NF < 12 { print; next }
        { $9 = max; out() }' "$trace" "$trace" ;;
*)
    echo "$0: unknown stream '$stream' (orig user-longer user-shorter new-users runs-x2 runs-x0.5 default-request)" >&2
    exit 2 ;;
esac
