#!/bin/sh
# bench/fs/md_pairs.sh BUILD OLD_BUILD [PAIRS]
#
# Metadata rates and the cost of a new connection, this build against an
# older one, in alternating pairs (the order swapped every pair) so that
# a shared machine's drift hits both alike. Each run starts one fresh
# server of its build and measures, over TCP and over the server's Unix
# socket: fsbench mdtest (5000 zero-byte files: create, stat, remove)
# through the LD_PRELOAD interposer, the server's CPU per operation
# (utime + stime over the run, clock ticks), and fsbench connect (new
# libadafs handles, each connecting, with the handshake, and stating
# once, for 1.5 s). The older build's fsbench must know `connect` (build
# this fsbench.c against it: its API has not changed). Prints, per
# figure, the median of the pair ratios (BUILD / OLD_BUILD), their
# quartiles, and the best of each build.
#
# SERVERS (default 1) servers per instance, PROCS (default 1) mdtest
# client processes (the all set of run.sh runs 1 and 2), TRANSPORTS
# (default "tcp local") the transports measured; the server CPU is summed
# over all servers. CONNECT=0 leaves out fsbench connect. RAW=FILE keeps
# every run's figures in FILE ("new|old round N" lines, then the figures).
set -eu
usage="usage: md_pairs.sh BUILD OLD_BUILD [PAIRS]"
new=$(cd "${1:?$usage}" && pwd)
old=$(cd "${2:?$usage}" && pwd)
pairs=${3:-16}
servers=${SERVERS:-1}
procs=${PROCS:-1}
transports=${TRANSPORTS:-tcp local}
work=$(mktemp -d "${TMPDIR:-/tmp}/md_pairs.XXXXXX")
trap 'for b in "$work"/i*; do test -e "$b/servers" && "$new/agent/adafs-ctl" stop --base "$b" 2>/dev/null; done; rm -rf "$work"' EXIT

run() {  # run BUILD OUT
    b=$1 out=$2 base=$work/i$$.$(date +%s%N)
    inst=$("$b/agent/adafs-ctl" start --servers "$servers" --base "$base" --mount /adafs-bench 2>/dev/null)
    stats=$(awk '{printf "%s/proc/%s/stat", (NR > 1 ? " " : ""), $2}' "$base/servers")
    tick=$(getconf CLK_TCK)
    for tr in $transports; do
        if [ "$tr" = tcp ]; then export ADAFS_TRANSPORT=tcp; else unset ADAFS_TRANSPORT; fi
        # shellcheck disable=SC2086  # stats: one file per server
        c0=$(awk '{s += $14 + $15} END {print s}' $stats)
        ADAFS_INSTANCE=$inst ADAFS_MOUNT=/adafs-bench LD_PRELOAD=$b/agent/.libs/libadafs_preload.so \
            "$b/bench/fs/fsbench" mdtest --dir /adafs-bench/md"$tr" --files 5000 --procs "$procs" |
            sed "s/^/$tr./" >>"$out"
        # shellcheck disable=SC2086
        c1=$(awk '{s += $14 + $15} END {print s}' $stats)
        echo "$tr.server_cpu_us_per_op $(( (c1 - c0) * 1000000 / tick / (15000 * procs) )) us" >>"$out"
        test "${CONNECT:-1}" = 0 && continue
        ADAFS_INSTANCE=$inst "$b/bench/fs/fsbench" connect --dir /adafs-bench/md"$tr" --seconds 1.5 |
            sed "s/^/$tr./" >>"$out"
    done
    unset ADAFS_TRANSPORT
    "$b/agent/adafs-ctl" stop --base "$base" >/dev/null 2>&1
}

i=1
while [ $i -le "$pairs" ]; do
    if [ $((i % 2)) = 0 ]; then order="old new"; else order="new old"; fi
    for w in $order; do
        if [ $w = old ]; then b=$old; else b=$new; fi
        echo "round $i" >>"$work/$w"
        run "$b" "$work/$w"
    done
    i=$((i + 1))
done

if [ -n "${RAW:-}" ]; then
    for w in new old; do sed "s/^round/$w round/" "$work/$w"; done >"$RAW"
fi

# Pair ratios per figure: median and quartiles; best of each build (the
# highest rate, the lowest CPU).
printf '| figure | pair ratio median | quartiles | best, this build | best, older |\n|---|---|---|---|---|\n'
awk '
FNR == 1 { side = FILENAME ~ /new$/ ? "new" : "old" }
$1 == "round" { r = $2; next }
{ v[side, r, $1] = $2; names[$1] = 1; if (r > rounds) rounds = r }
function sort(a, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t } }
END {
    for (k in names) {
        n = 0; bn = bo = ""
        for (r = 1; r <= rounds; r++) {
            a = v["new", r, k]; b = v["old", r, k]
            if (b > 0) q[++n] = a / b
            low = k ~ /cpu/
            if (bn == "" || (low ? a < bn : a > bn)) bn = a
            if (bo == "" || (low ? b < bo : b > bo)) bo = b
        }
        sort(q, n)
        printf "| %s | %.2f | %.2f-%.2f | %s | %s |\n", k, q[int((n + 1) / 2)], q[int(n / 4) + 1], q[int(3 * n / 4)], bn, bo
    }
}' "$work/new" "$work/old" | sort
