#!/bin/bash
# Stager benchmark (issue 22): one process against N workers (--worker K/N,
# all started at once on this host, as the agents of a job's nodes start
# them), through one 4-server adafs instance on this host.
#
#   bench/stage/workers.sh BUILD_DIR [WORK_DIR]
#
# For each set (sets.sh), REPEAT times, in turns whose order alternates:
# one process stages the set in (to a fresh directory) and K workers do
# (to another), then both stage it back out (to fresh local directories);
# every copy is checked with diff -r. Then, once, OPS_K workers stage it in
# and out for their metadata operation counts. Ratios are one process's
# time over the workers' (>= 1: the workers are as fast), repeat by repeat
# and their median; operations are summed over the workers (source side of
# stage-in: the parallel file system; destination side of stage-out: the
# same) against one process's in the same run.
#
# Environment: SETS (default "small big uneven"), K (2), OPS_K ("2 4 8"),
# REPEAT (3), THREADS (8, per process), SETTLE (65 s of pause first, as
# run.sh), SMALL, MID, BIG, BIGMIB as run.sh. KEEP=1 leaves the copies.
# Run it under `flock /tmp/adafs-bench.lock` on a shared machine.
set -euo pipefail
BUILD=$(cd "${1:?usage: workers.sh BUILD_DIR [WORK_DIR]}" && pwd)
. "$(dirname "$0")/root.sh"
W=${2:-$BENCH_ROOT}
SMALL=${SMALL:-100000} MID=${MID:-1000} BIG=${BIG:-4} BIGMIB=${BIGMIB:-1024}
SETS=${SETS:-small big uneven} K=${K:-2} OPS_K=${OPS_K:-2 4 8} REPEAT=${REPEAT:-3}
THREADS=${THREADS:-8} SETTLE=${SETTLE:-65} KEEP=${KEEP:-0}
STAGE=$BUILD/stager/adafs-stage CTL=$BUILD/agent/adafs-ctl
export LD_LIBRARY_PATH=$BUILD/agent/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for p in "$STAGE" "$CTL"; do [ -x "$p" ] || { echo "workers.sh: $p not built" >&2; exit 2; }; done
R=$W/workers.$(date +%s)
say() { echo "[$(date +%T)] $*" >&2; }
. "$(dirname "$0")/sets.sh"
. "$(dirname "$0")/../vm_memory.sh"
stop_all() { for b in "$R"/fs-*; do [ -d "$b" ] && { "$CTL" stop --base "$b" > /dev/null 2>&1 || true; }; done; true; }
trap 'stop_all; release_free_memory' EXIT

# stage DIR SRC DST N PREFIX: N processes (N=1: one, no --worker) at once;
# prints the wall seconds; their JSON summaries in PREFIX.K.json.
stage() {
    local dir=$1 src=$2 dst=$3 n=$4 prefix=$5 t0 t1 k pids="" rc=0
    warm_memory $(( BYTES + (1 << 30) ))
    t0=$(date +%s.%N)
    if [ "$n" = 1 ]; then
        "$STAGE" "$dir" --allow-root --json --threads "$THREADS" --instance "$FS/instance" \
            "$src" "$dst" > "$prefix.0.json" || rc=1
    else
        for k in $(seq 0 $((n - 1))); do
            "$STAGE" "$dir" --allow-root --json --threads "$THREADS" --instance "$FS/instance" \
                --worker "$k/$n" "$src" "$dst" > "$prefix.$k.json" &
            pids="$pids $!"
        done
        for p in $pids; do wait "$p" || rc=1; done
    fi
    t1=$(date +%s.%N)
    sync
    [ $rc = 0 ] || { echo "workers.sh: stage $dir of $src with $n processes failed" >&2; exit 1; }
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}

# sumf PREFIX N FIELD: FIELD summed over PREFIX.0..N-1.json
sumf() {
    python3 - "$@" <<'PY'
import json, sys
prefix, n, field = sys.argv[1], int(sys.argv[2]), sys.argv[3]
print(sum(json.load(open("%s.%d.json" % (prefix, k)))[field] for k in range(n)))
PY
}
# share PREFIX N: the busiest worker's part of the files and of the bytes
# copied (1/N: even), as "files/bytes"
share() {
    python3 - "$@" <<'PY'
import json, sys
prefix, n = sys.argv[1], int(sys.argv[2])
w = [json.load(open("%s.%d.json" % (prefix, k))) for k in range(n)]
f = [x["files"] for x in w]; b = [x["bytes"] for x in w]
print("%.2f/%.2f" % (max(f) / max(sum(f), 1), max(b) / max(sum(b), 1)))
PY
}
# fin_row SET REP DIR PREFIX SECONDS: finalize's threads' time summed over
# the K workers and its share of all their threads' time (K x THREADS x
# the stage's wall time), worker 0's tail and its share of the wall time.
fin_row() {
    python3 - "$@" "$K" "$THREADS" <<'PY'
import json, sys
s, rep, way, prefix, wall, k, threads = sys.argv[1:8]
w = [json.load(open("%s.%d.json" % (prefix, i))) for i in range(int(k))]
fin = sum(x["finalize_seconds"] for x in w); tail = w[0]["tail_seconds"]; wall = float(wall)
print("| %s | %s | %s | %.3f | %.1f%% | %.3f | %.1f%% | %.3f |" % (s, rep, way, fin,
      100 * fin / (int(k) * int(threads) * wall), tail, 100 * tail / wall, wall))
PY
}
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# Each repeat gets a fresh instance, and what it copied is removed once
# checked (KEEP=1: kept), so the disk holds one repeat's copies at a time.
fresh_fs() { FS=$R/fs-$1; "$CTL" start --servers 4 --base "$FS" > /dev/null; }
drop_fs() {
    "$CTL" stop --base "$FS" > /dev/null
    [ "$KEEP" = 1 ] || rm -rf "$FS" "$@"
}

ROWS=() OPS=() FIN=()
run_set() {
    local set=$1 src=$W/src/$1 rep t1 tk o1 ok in_r out_r ri=() ro=()
    BYTES=$(du -sb --apparent-size "$src" | cut -f1)
    cp -r "$src" "$R/warmup-$set"; sync          # the first copy after a pause (run.sh)
    for rep in $(seq "$REPEAT"); do
        fresh_fs "$set-$rep"
        if [ $((rep % 2)) = 1 ]; then
            t1=$(stage in "$src" /one$rep 1 "$R/$set.in1.$rep")
            tk=$(stage in "$src" /k$rep "$K" "$R/$set.ink.$rep")
            o1=$(stage out /one$rep "$R/out-$set-one$rep" 1 "$R/$set.out1.$rep")
            ok=$(stage out /k$rep "$R/out-$set-k$rep" "$K" "$R/$set.outk.$rep")
        else
            tk=$(stage in "$src" /k$rep "$K" "$R/$set.ink.$rep")
            t1=$(stage in "$src" /one$rep 1 "$R/$set.in1.$rep")
            ok=$(stage out /k$rep "$R/out-$set-k$rep" "$K" "$R/$set.outk.$rep")
            o1=$(stage out /one$rep "$R/out-$set-one$rep" 1 "$R/$set.out1.$rep")
        fi
        for d in "$R/out-$set-one$rep" "$R/out-$set-k$rep"; do
            diff -rq "$src" "$d" > /dev/null || { echo "workers.sh: $d differs from $src" >&2; exit 1; }
        done
        in_r=$(awk -v a="$t1" -v b="$tk" 'BEGIN { printf "%.2f", a / b }')
        out_r=$(awk -v a="$o1" -v b="$ok" 'BEGIN { printf "%.2f", a / b }')
        ri+=("$in_r") ro+=("$out_r")
        drop_fs "$R/out-$set-one$rep" "$R/out-$set-k$rep"
        ROWS+=("| $set | $rep | $t1 | $tk | $in_r | $o1 | $ok | $out_r |")
        FIN+=("$(fin_row "$set" "$rep" in "$R/$set.ink.$rep" "$tk")")
        FIN+=("$(fin_row "$set" "$rep" out "$R/$set.outk.$rep" "$ok")")
        say "$set rep $rep: in $t1 s / $tk s = $in_r, out $o1 s / $ok s = $out_r"
    done
    MED+=("- $set: stage-in $(echo "${ri[*]}" | median) x, stage-out $(echo "${ro[*]}" | median) x (median of $REPEAT; $K workers against one process)")
    local s1 d1 n sn dn cn
    s1=$(sumf "$R/$set.in1.1" 1 src_mdops) d1=$(sumf "$R/$set.out1.1" 1 dst_mdops)
    OPS+=("| $set | 1 | $s1 | 1.000 | $d1 | 1.000 | - | - |")
    for n in $OPS_K; do
        fresh_fs "$set-ops$n"
        stage in "$src" /ops$n "$n" "$R/$set.opsin.$n" > /dev/null
        stage out /ops$n "$R/out-$set-ops$n" "$n" "$R/$set.opsout.$n" > /dev/null
        diff -rq "$src" "$R/out-$set-ops$n" > /dev/null || { echo "workers.sh: ops$n copy differs" >&2; exit 1; }
        drop_fs "$R/out-$set-ops$n"
        sn=$(sumf "$R/$set.opsin.$n" "$n" src_mdops) dn=$(sumf "$R/$set.opsout.$n" "$n" dst_mdops)
        cn=$(( $(sumf "$R/$set.opsin.$n" "$n" coord_ops) + $(sumf "$R/$set.opsout.$n" "$n" coord_ops) ))
        OPS+=("| $set | $n | $sn | $(awk -v a="$sn" -v b="$s1" 'BEGIN { printf "%.3f", a / b }') | $dn | $(awk -v a="$dn" -v b="$d1" 'BEGIN { printf "%.3f", a / b }') | $cn | $(share "$R/$set.opsin.$n" "$n"), $(share "$R/$set.opsout.$n" "$n") |")
    done
    rm -rf "$R/warmup-$set"
}

mkdir -p "$W" "$R"
for set in $SETS; do make_set "$set"; done
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
hold_free_memory
say "reading the sources into the page cache, then sync and $SETTLE s of pause"
for set in $SETS; do find "$W/src/$set" -type f -exec cat {} + > /dev/null; done
sync; sleep "$SETTLE"
MED=()
for set in $SETS; do run_set "$set"; done
stop_all
# The workers' JSON summaries stay in $R (small); the copies, with KEEP=1.
if [ "$KEEP" = 1 ]; then say "keeping the copies in $R"; else say "the JSON summaries are in $R"; fi

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')
cat <<REPORT
## Stager workers benchmark ($(date -u +%Y-%m-%dT%H:%MZ))

Machine: $(nproc) cores ($cpu), $(free -g | awk '/Mem:/ {print $2}') GiB RAM, work dir $W on
$(df -h --output=source,fstype "$W" | tail -1 | tr -s ' '). Command: \`SETS="$SETS" K=$K OPS_K="$OPS_K" REPEAT=$REPEAT bench/stage/workers.sh $BUILD $W\`
(load average before the run: $LOAD0; stager threads $THREADS per process; adafs: 4 servers on
127.0.0.1, chunk size 512 KiB; $SETTLE s of pause first, memory held and touched as run.sh does).

Seconds of wall time, one process against $K workers started at once, and the ratio (one's
time / the workers'):

| set | repeat | in, 1 | in, $K | ratio | out, 1 | out, $K | ratio |
| --- | --- | --- | --- | --- | --- | --- | --- |
$(printf '%s\n' "${ROWS[@]}")

$(printf '%s\n' "${MED[@]}")

Metadata operations on the parallel file system summed over the workers (the source of
stage-in, the destination of stage-out), and their ratio to one process's; the workers'
operations on their mailboxes (in the adafs instance) in and out together; the busiest
worker's part of the files and of the bytes, in and out (1/N: even):

| set | workers | source ops (in) | ratio | destination ops (out) | ratio | mailbox ops | busiest in, out |
| --- | --- | --- | --- | --- | --- | --- | --- |
$(printf '%s\n' "${OPS[@]}")

Finalizing, $K workers: threads' time setting the attributes of directories and split files
(summed over the workers; its share of all their threads' time, $K x $THREADS threads x the
stage's wall time), the time from the last copy done to the end (worker 0; its share of the
wall time: what finalizing adds to the stage), and the stage's wall time, in seconds:

| set | repeat | direction | finalize | share | tail | share | stage |
| --- | --- | --- | --- | --- | --- | --- | --- |
$(printf '%s\n' "${FIN[@]}")
REPORT
