#!/bin/sh
# Stress streams for the walltime robustness protocol (doc/bench/walltime.md):
# each is a real SWF trace changed in one way a site's workload can change,
# deterministically, so any model can be replayed on it with
# `adafs-walltime evaluate`.
#
#   bench/walltime/stress.sh STREAM TRACE.swf [OTHER.swf] > STREAM.swf
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
# Held-out streams, added after the model's settings were fixed (none of
# them was looked at while choosing them):
#   drift           every run scaled by a factor growing steadily from 0.5
#                   at the first job to 2 at the last (killed at its limit)
#   user-flip       the 5 users with the most jobs: runs 5x longer in every
#                   second block of 100 of their jobs (repeated shifts)
#   joined          TRACE, then OTHER.swf one day after TRACE's last submit,
#                   with OTHER's users as new users: the model meets a site
#                   it has never seen, with its own requests and run times
# Header lines (';') pass unchanged; fields: see ../shared/traces/README.md.
set -eu
[ $# -eq 2 ] || [ $# -eq 3 ] || { echo "usage: $0 STREAM TRACE.swf [OTHER.swf]" >&2; exit 2; }
stream=$1 trace=$2 other=${3:-}
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
function out() { $1 = $1; print }
# top5(n, chosen): the 5 users with the most jobs (n: jobs by user; ties
# to the lowest uid) become the keys of chosen.
function top5(n, chosen,   pick, best, u) {
    for (pick = 0; pick < 5; pick++) {
        best = ""
        for (u in n)
            if (!(u in chosen) && (best == "" || n[u] > n[best] ||
                (n[u] == n[best] && u + 0 < best + 0)))
                best = u
        if (best == "") break
        chosen[best] = 1
    }
}'

case $stream in
orig)
    cat "$trace" ;;
user-longer|user-shorter)
    k=5; [ "$stream" = user-shorter ] && k=0.2
    awk -v k="$k" "$common"'
        FNR == NR { if ($0 !~ /^;/ && NF >= 12) n[$12]++; next }
        FNR == 1 { top5(n, chosen) }
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
drift)
    awk "$common"'
        FNR == NR { if ($0 !~ /^;/ && NF >= 12) n++; next }
        /^;/ || NF < 12 { print; next }
        { k = 0.5 * 4 ^ (n > 1 ? (i++) / (n - 1) : 0); $4 = scale($4, $9, k); out() }' \
        "$trace" "$trace" ;;
user-flip)
    awk "$common"'
        FNR == NR { if ($0 !~ /^;/ && NF >= 12) n[$12]++; next }
        FNR == 1 { top5(n, chosen) }
        /^;/ || NF < 12 { print; next }
        {
            u = $12
            if (u in chosen && int((seen[u]++) / 100) % 2 == 1) $4 = scale($4, $9, 5)
            out()
        }' "$trace" "$trace" ;;
joined)
    [ -r "$other" ] || { echo "$0: joined needs a readable OTHER.swf (got '$other')" >&2; exit 2; }
    awk '
        FNR == NR { if ($0 !~ /^;/ && NF >= 12) { if ($2 > last) last = $2; if ($1 > id) id = $1 }
                    print; next }
        /^;/ || NF < 12 { next }
        !started { started = 1; first = $2 }
        {
            $1 = $1 + id
            $2 = $2 - first + last + 86400
            if ($12 >= 0) $12 = $12 + 1000000
            if ($13 >= 0) $13 = $13 + 1000000
            if ($17 > 0) $17 = $17 + id
            print
        }' "$trace" "$other" ;;
*)
    echo "$0: unknown stream '$stream' (orig user-longer user-shorter new-users runs-x2 runs-x0.5 default-request drift user-flip joined)" >&2
    exit 2 ;;
esac
