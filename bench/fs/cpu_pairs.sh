#!/bin/sh
# bench/fs/cpu_pairs.sh SERVERS ROUNDS BUILD [BUILD...]
#
# What metadata operations cost the servers, several builds in rotating
# order (each round starts with the next build, so a shared machine's
# drift hits all alike): per round and build, one fresh instance of that
# build (adafs-ctl start --servers SERVERS) and the first build's
# bench/fs/mdcpu, 2 processes x 10000 files (create, stat, remove) under
# that build's interposer. Prints, per figure, each build's median and the
# median (quartiles) of the per-round ratios of each build to the last.
set -eu
usage="usage: cpu_pairs.sh SERVERS ROUNDS BUILD [BUILD...]"
servers=${1:?$usage} rounds=${2:?$usage}
shift 2
[ $# -ge 1 ] || { echo "$usage" >&2; exit 2; }
mdcpu=$(cd "$1" && pwd)/bench/fs/mdcpu
work=$(mktemp -d "${TMPDIR:-/tmp}/cpu_pairs.XXXXXX")
trap 'for b in "$work"/i*; do test -e "$b/servers" && "$b.ctl" stop --base "$b" >/dev/null 2>&1; done; rm -rf "$work"' EXIT
n=$#
i=1
while [ "$i" -le "$rounds" ]; do
    k=0
    while [ "$k" -lt "$n" ]; do
        idx=$(( (i + k - 1) % n + 1 ))
        eval "b=\${$idx}"
        b=$(cd "$b" && pwd)
        base=$work/i$idx.$i
        ln -s "$b/agent/adafs-ctl" "$base.ctl"
        inst=$("$b/agent/adafs-ctl" start --servers "$servers" --base "$base" --mount /adafs-bench)
        pids=$(awk '{print $2}' "$base/servers")
        echo "round $i" >>"$work/out.$idx"
        # shellcheck disable=SC2086
        ADAFS_INSTANCE=$inst ADAFS_MOUNT=/adafs-bench LD_PRELOAD=$b/agent/.libs/libadafs_preload.so \
            "$mdcpu" /adafs-bench 2 10000 $pids >>"$work/out.$idx"
        "$b/agent/adafs-ctl" stop --base "$base" >/dev/null 2>&1
        k=$((k + 1))
    done
    i=$((i + 1))
done
awk -v n="$n" '
FNR == 1 { split(FILENAME, a, "."); side = a[length(a)] }
$1 == "round" { r = $2; next }
{ v[side, r, $1 " rate"] = $2; v[side, r, $1 " server_us/op"] = $5; names[$1 " rate"]; names[$1 " server_us/op"]; if (r > rounds) rounds = r }
function sort(x, m,   i, j, t) { for (i = 2; i <= m; i++) for (j = i; j > 1 && x[j-1] > x[j]; j--) { t = x[j]; x[j] = x[j-1]; x[j-1] = t } }
function med(x, m) { return m % 2 ? x[(m + 1) / 2] : (x[m / 2] + x[m / 2 + 1]) / 2 }
END {
    for (k in names) {
        line = "| " k
        for (s = 1; s <= n; s++) { m = 0; for (r = 1; r <= rounds; r++) x[++m] = v[s, r, k]; sort(x, m); line = line sprintf(" | %.1f", med(x, m)) }
        for (s = 1; s < n; s++) {
            m = 0; for (r = 1; r <= rounds; r++) if (v[n, r, k] > 0) q[++m] = v[s, r, k] / v[n, r, k]
            sort(q, m); line = line sprintf(" | %.2f (%.2f-%.2f)", med(q, m), q[int(m / 4) + 1], q[int(3 * m / 4)])
        }
        print line " |"
    }
}' "$work"/out.* | sort
