#!/bin/sh
# bench/fs/ior_pairs.sh BUILD OLD_BUILD [PAIRS] -- IOR_ARGS...
#
# One IOR-like figure of the all set (run.sh), this build against an
# older one, in alternating pairs (the order swapped every pair): each
# run a fresh instance of its build (SERVERS, default 1, on ROOT: disk,
# the default, under TMPDIR, or tmpfs under TMPFS_DIR, default /dev/shm)
# and this build's fsbench ior IOR_ARGS (e.g. --xfer 64K --block 256M
# --shared --procs 2 --random --read-seconds 3: an old build's reads on
# tmpfs take minutes) through that build's interposer. Before
# every run, as run.sh's warm: sync, and 1 GiB touched and freed (WARM=0:
# neither). Prints per figure the median of the pair ratios (BUILD /
# OLD_BUILD), their quartiles and range, and each build's median.
set -eu
usage="usage: ior_pairs.sh BUILD OLD_BUILD [PAIRS] -- IOR_ARGS..."
new=$(cd "${1:?$usage}" && pwd)
old=$(cd "${2:?$usage}" && pwd)
shift 2
pairs=8
if [ $# -gt 0 ] && [ "$1" != -- ]; then pairs=$1; shift; fi
if [ $# -eq 0 ] || [ "$1" != -- ]; then echo "$usage" >&2; exit 2; fi
shift
servers=${SERVERS:-1}
root=${ROOT:-disk}
case $root in
disk) work=$(mktemp -d "${TMPDIR:-/tmp}/ior_pairs.XXXXXX") ;;
tmpfs) work=$(mktemp -d "${TMPFS_DIR:-/dev/shm}/ior_pairs.XXXXXX") ;;
*) echo "ior_pairs.sh: ROOT is disk or tmpfs, not '$root'" >&2; exit 2 ;;
esac
# This build's fsbench itself (not libtool's wrapper, which would load
# this build's libadafs before the older build's interposer: run.sh).
fsb=$new/bench/fs/.libs/fsbench
test -x "$fsb" || fsb=$new/bench/fs/fsbench
. "$(dirname "$0")/../vm_memory.sh"
trap 'for b in "$work"/i*; do test -e "$b/servers" && "$new/agent/adafs-ctl" stop --base "$b" 2>/dev/null; done; rm -rf "$work"; release_free_memory' EXIT
hold_free_memory

run() {  # run BUILD OUT IOR_ARGS...
    b=$1 out=$2 base=$work/i.$(date +%s%N)
    shift 2
    inst=$("$b/agent/adafs-ctl" start --servers "$servers" --base "$base" --mount /adafs-bench 2>/dev/null)
    if [ "${WARM:-1}" = 1 ]; then sync; warm_memory $((1 << 30)); fi
    env LD_LIBRARY_PATH="$b/agent/.libs" ADAFS_INSTANCE="$inst" LD_PRELOAD="$b/agent/.libs/libadafs_preload.so" \
        "$fsb" ior "$@" --dir /adafs-bench/d >>"$out"
    "$b/agent/adafs-ctl" stop --base "$base" >/dev/null 2>&1
}

i=1
while [ "$i" -le "$pairs" ]; do
    if [ $((i % 2)) = 0 ]; then order="old new"; else order="new old"; fi
    for w in $order; do
        if [ "$w" = old ]; then b=$old; else b=$new; fi
        echo "round $i" >>"$work/$w"
        run "$b" "$work/$w" "$@"
    done
    i=$((i + 1))
done

echo "ior $*; $servers server(s), root $root; $(nproc) cores, load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| figure | pair ratio median | quartiles | range | median, this build | median, older |\n|---|---|---|---|---|---|\n'
awk '
FNR == 1 { side = FILENAME ~ /new$/ ? "new" : "old" }
$1 == "round" { r = $2; next }
{ v[side, r, $1] = $2; names[$1] = 1; if (r > rounds) rounds = r }
function sort(a, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t } }
function med(a, n) { return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
END {
    for (k in names) {
        n = 0
        for (r = 1; r <= rounds; r++) {
            a = v["new", r, k]; b = v["old", r, k]
            if (b > 0) { q[++n] = a / b; x[n] = a; y[n] = b }
        }
        sort(q, n); sort(x, n); sort(y, n)
        printf "| %s | %.2f | %.2f-%.2f | %.2f-%.2f | %.0f | %.0f |\n", k, med(q, n), q[int(n / 4) + 1],
            q[n - int(n / 4)], q[1], q[n], med(x, n), med(y, n)
    }
}' "$work/new" "$work/old" | sort
