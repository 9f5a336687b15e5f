#!/bin/sh
# bench/fs/mdinstr.sh SERVERS FILES BUILD [BUILD...]
#
# What metadata operations cost the servers in instructions, exact where
# clock ticks are not (a shared 2-core machine cannot resolve 5% of CPU
# time; see bench/fs/cpu_pairs.sh for the time). For each build: its
# SERVERS servers started by its adafs-ctl, each server under valgrind
# --tool=callgrind (an --adafsd wrapper), and the first build's
# bench/fs/mdcpu, 2 processes x FILES files (create, stat, remove) under
# that build's interposer; then the same with 0 files. The difference of
# the servers' summed instructions, divided by the 6 x FILES operations,
# is the cost per operation without start, stop and connections. Printed
# per build: instructions per operation in adafsd's own code (its fsd/
# and common/ functions, self cost) and in all (RocksDB, libc, ld.so...),
# and per object. The callgrind files are kept under OUT (default a new
# directory in /tmp; printed) for callgrind_annotate.
#
# Counts user-space instructions only: the kernel's side of the system
# calls is not in them (strace -c counts those calls).
set -eu
usage="usage: mdinstr.sh SERVERS FILES BUILD [BUILD...]"
servers=${1:?$usage} files=${2:?$usage}
shift 2
[ $# -ge 1 ] || { echo "$usage" >&2; exit 2; }
mdcpu=$(cd "$1" && pwd)/bench/fs/mdcpu
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/mdinstr.XXXXXX")}
mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/mdinstr-run.XXXXXX")
trap 'for b in "$work"/i.*[!l]; do test -e "$b/servers" && stop "$b"; done; rm -rf "$work"' EXIT

# adafs-ctl stop signals only processes named adafsd, and these run as
# valgrind: the servers get SIGTERM here (callgrind writes its file on the
# way out), then adafs-ctl removes what its start made.
stop() {  # stop BASE
    awk '{print $2}' "$1/servers" | while read -r p; do
        kill -TERM "$p" 2>/dev/null || continue
        t=0
        while kill -0 "$p" 2>/dev/null && [ $t -lt 600 ]; do sleep 0.1; t=$((t + 1)); done
    done
    "$1.ctl" stop --base "$1" >/dev/null 2>&1
}

# Sums the self cost (Ir) of a callgrind file per object: a cost line
# after "calls=" is the call's inclusive cost and is skipped.
per_object() {
    awk '
    /^c?ob=\([0-9]+\)/ {   # "ob=(id) name" names id (also in cob= lines), "ob=(id)" uses it
        s = $0; sub(/^c?ob=/, "", s); id = s; sub(/ .*/, "", id)
        if (s != id) { nm = s; sub(/^\([0-9]+\) /, "", nm); name[id] = nm }
        if ($0 ~ /^ob=/) ob = name[id]
        next
    }
    /^calls=/ { skip = 1; next }
    /^[0-9+*-]/ { if (skip) { skip = 0; next } cost[ob] += $NF; next }
    END { for (o in cost) print o, cost[o] }' "$@"
}

instance() {  # instance BUILD N_FILES TAG
    b=$1 n=$2 tag=$3 base=$work/i.$3
    wrap=$work/adafsd.$tag
    printf '#!/bin/sh\nexec valgrind -q --tool=callgrind --callgrind-out-file=%s/%s.%%p.cg %s/agent/adafsd "$@"\n' \
        "$out" "$tag" "$b" >"$wrap"
    chmod +x "$wrap"
    ln -s "$b/agent/adafs-ctl" "$base.ctl"
    inst=$("$b/agent/adafs-ctl" start --servers "$servers" --base "$base" --mount /adafs-bench \
        --adafsd "$wrap" 2>/dev/null)
    pids=$(awk '{print $2}' "$base/servers")
    # shellcheck disable=SC2086  # one argument per server
    ADAFS_INSTANCE=$inst ADAFS_MOUNT=/adafs-bench LD_PRELOAD=$b/agent/.libs/libadafs_preload.so \
        "$mdcpu" /adafs-bench 2 "$n" $pids >"$out/$tag.mdcpu"
    stop "$base"
    per_object "$out/$tag".*.cg >"$out/$tag.objects"
}

k=1
for b in "$@"; do
    b=$(cd "$b" && pwd)
    instance "$b" "$files" "b$k.run"
    instance "$b" 0 "b$k.none"
    echo "build $k: $b" >>"$out/builds"
    k=$((k + 1))
done
echo "callgrind files in $out"
printf '| build | adafsd own code | all | libc | RocksDB | ld.so | other |\n|---|---|---|---|---|---|---|\n'
k=1
for b in "$@"; do
    awk -v ops=$((6 * files)) -v b="$b" '
    { o = $1 ~ /adafsd$/ ? "own" : $1 ~ /libc\.so/ ? "libc" : $1 ~ /rocksdb/ ? "rocksdb" : $1 ~ /\/ld-linux/ ? "ld" : "other"
      v = FILENAME ~ /run\.objects$/ ? $2 : -$2; c[o] += v; all += v }
    END { printf "| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |\n", b, c["own"] / ops, all / ops,
          c["libc"] / ops, c["rocksdb"] / ops, c["ld"] / ops, c["other"] / ops }' \
        "$out/b$k.run.objects" "$out/b$k.none.objects"
    k=$((k + 1))
done
