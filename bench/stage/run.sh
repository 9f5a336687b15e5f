#!/bin/bash
# Stager benchmark (issue 5): stage-in and stage-out of three data sets
# through a 4-server adafs instance on this host, against cp -r, rsync -a
# and tar c | tar x between two local directories on the same disk, plus the
# accuracy of the rate limits over 10 s windows.
#
#   bench/stage/run.sh BUILD_DIR [WORK_DIR]
#
# Environment: SMALL (files of 4 KiB, default 100000), MID (files of 1 MiB,
# 1000), BIG (files of 1 GiB, 4), BIGMIB (size of a big file, 1024),
# THREADS (stager threads, 8), LIMIT_BW (bytes/s, 150M), LIMIT_MD (ops/s,
# 4000). Prints a Markdown report on stdout; progress on stderr.
#
# Nothing is deleted between timed runs: on a file system mounted with
# `discard` (as here), the first create-heavy run after a mass delete is
# slowed ten-fold while the kernel discards the freed blocks, which would
# penalise whichever tool came next. Every tool writes a fresh directory,
# an untimed warm-up copy absorbs earlier deletes, and all is removed at
# the end (about 40 GB at the peak with the default sizes).
set -euo pipefail
BUILD=$(cd "${1:?usage: run.sh BUILD_DIR [WORK_DIR]}" && pwd)
W=${2:-/tmp/adafs-bench-stage}
SMALL=${SMALL:-100000} MID=${MID:-1000} BIG=${BIG:-4} BIGMIB=${BIGMIB:-1024}
THREADS=${THREADS:-8} LIMIT_BW=${LIMIT_BW:-150M} LIMIT_MD=${LIMIT_MD:-4000}
STAGE=$BUILD/stager/adafs-stage CTL=$BUILD/agent/adafs-ctl
export LD_LIBRARY_PATH=$BUILD/agent/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for p in "$STAGE" "$CTL"; do [ -x "$p" ] || { echo "run.sh: $p not built" >&2; exit 2; }; done
for p in rsync tar python3; do command -v $p > /dev/null || { echo "run.sh: $p missing" >&2; exit 2; }; done

mkdir -p "$W"
stop_all() { for b in "$W"/fs-*; do [ -d "$b" ] && "$CTL" stop --base "$b" > /dev/null 2>&1; done; true; }
trap 'stop_all' EXIT
say() { echo "[$(date +%T)] $*" >&2; }

make_data() {
    local stamp="$SMALL $MID $BIG $BIGMIB"
    if [ "$(cat "$W/src/.params" 2>/dev/null)" = "$stamp" ]; then
        say "reusing data in $W/src"
        return
    fi
    say "generating data in $W/src"
    rm -rf "$W/src"; mkdir -p "$W/src/small" "$W/src/mid" "$W/src/big"
    python3 - "$W/src" "$SMALL" "$MID" <<'PY'
import os, sys
root, small, mid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
block = os.urandom(1 << 20)
for i in range(small):
    d = os.path.join(root, "small", "d%03d" % (i % 100))
    if i < 100: os.mkdir(d)
    with open(os.path.join(d, "f%06d" % i), "wb") as f:
        off = (i * 4096) % (1 << 20)
        f.write(block[off:off + 4096])
for i in range(mid):
    d = os.path.join(root, "mid", "d%02d" % (i % 10))
    if i < 10: os.mkdir(d)
    with open(os.path.join(d, "f%04d" % i), "wb") as f:
        f.write(block[i % 4096:] + block[:i % 4096])
PY
    head -c $((BIGMIB << 20)) /dev/urandom > "$W/src/big/g0"
    for i in $(seq 1 $((BIG - 1))); do cp "$W/src/big/g0" "$W/src/big/g$i"; done
    echo "$stamp" > "$W/src/.params"
    sync
}

# seconds of wall time for "$@"
timed() {
    local t0 t1
    t0=$(date +%s.%N)
    "$@"
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}

declare -A FILES BYTES
RESULTS=()
record() {              # record SET TOOL SECONDS
    local files=${FILES[$1]} bytes=${BYTES[$1]}
    local fps mibs
    fps=$(awk -v f="$files" -v t="$3" 'BEGIN { print f / t }')
    mibs=$(awk -v b="$bytes" -v t="$3" 'BEGIN { print b / 1048576 / t }')
    RESULTS+=("$(printf '| %s | %s | %.2f | %.0f | %.1f |' "$1" "$2" "$3" "$fps" "$mibs")")
    eval "R_${1}_${2//[^a-z]/_}=$3"
    say "$1 $2: $3 s"
}

run_set() {
    local set=$1 src=$W/src/$1 d t fs=$W/fs-$1
    FILES[$set]=$(find "$src" -type f | wc -l)
    BYTES[$set]=$(du -sb --apparent-size "$src" | cut -f1)
    for tool in cp rsync tar stagecopy; do
        d=$W/dst-$set-$tool
        case $tool in
        cp) t=$(timed cp -r "$src" "$d") ;;
        rsync) t=$(timed rsync -a "$src/" "$d/") ;;
        tar) mkdir -p "$d"; t=$(timed sh -c "tar -C '$src' -cf - . | tar -C '$d' -xf -") ;;
        stagecopy) t=$(timed "$STAGE" copy --quiet --threads "$THREADS" "$src" "$d") ;;
        esac
        sync
        diff -rq "$src" "$d" > /dev/null || { echo "run.sh: $tool copy of $set differs" >&2; exit 1; }
        record "$set" "$tool" "$t"
    done
    "$CTL" start --servers 4 --base "$fs" > /dev/null
    t=$(timed "$STAGE" in --allow-root --quiet --threads "$THREADS" --instance "$fs/instance" "$src" /in)
    sync
    record "$set" stage_in "$t"
    d=$W/dst-$set-out
    t=$(timed "$STAGE" out --allow-root --quiet --threads "$THREADS" --instance "$fs/instance" /in "$d")
    sync
    diff -rq "$src" "$d" > /dev/null || { echo "run.sh: stage in+out of $set differs" >&2; exit 1; }
    record "$set" stage_out "$t"
}

# Rates over 10 s windows from the per-second progress lines: the first
# second is start-up, then windows [1,11) and [11,21) ... as far as it ran.
window_rates() {        # window_rates FILE FIELD
    python3 - "$1" "$2" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
field = sys.argv[2]
out = []
start = 1.0
# Only whole windows that end before the last sample: the copy may end
# anywhere inside its final second.
last = rows[-1]["seconds"] if rows else 0
while True:
    a = [r for r in rows if r["seconds"] >= start]
    b = [r for r in rows if r["seconds"] >= start + 10 and r["seconds"] < last]
    if not a or not b: break
    a, b = a[0], b[0]
    out.append((b[field] - a[field]) / (b["seconds"] - a["seconds"]))
    start += 10
print(" ".join("%.0f" % x for x in out))
PY
}

limits() {
    local fs=$W/fs-limits bw
    "$CTL" start --servers 4 --base "$fs" > /dev/null
    bw=$(numfmt --from=iec "${LIMIT_BW%B}")
    rm -f "$W/bw.jsonl" "$W/md.jsonl"
    say "stage-in of big files at --max-bw $LIMIT_BW"
    "$STAGE" in --allow-root --quiet --max-bw "$LIMIT_BW" --progress-json "$W/bw.jsonl" \
        --instance "$fs/instance" "$W/src/big" /limit-bw
    say "stage-in of small files at --max-mdops $LIMIT_MD"
    "$STAGE" in --allow-root --quiet --max-mdops "$LIMIT_MD" --progress-json "$W/md.jsonl" \
        --instance "$fs/instance" "$W/src/small" /limit-md
    BW_RATES=$(window_rates "$W/bw.jsonl" pfs_bytes)
    MD_RATES=$(window_rates "$W/md.jsonl" pfs_mdops)
    BW_WANT=$bw
}

make_data
say "untimed warm-up copy (absorbs earlier deletes)"
cp -r "$W/src/small" "$W/warmup"; sync
for set in small mid big; do run_set $set; done
limits
stop_all
say "removing copies"
rm -rf "$W"/dst-* "$W"/fs-* "$W/warmup"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')
cat <<REPORT
## Stager benchmark ($(date -u +%Y-%m-%dT%H:%MZ))

Machine: $(nproc) cores ($cpu), $(free -g | awk '/Mem:/ {print $2}') GiB RAM, work dir $W on
$(df -h --output=source,fstype "$W" | tail -1 | tr -s ' '). Command: \`bench/stage/run.sh $BUILD $W\`
(SMALL=$SMALL x 4 KiB, MID=$MID x 1 MiB, BIG=$BIG x $BIGMIB MiB, stager threads $THREADS).
Page cache warm (nothing dropped between runs), \`sync\` after every run (not timed),
every tool writes a fresh directory (nothing deleted between timed runs, see run.sh).
adafs: 4 servers on 127.0.0.1 (adafs-ctl), chunk size 512 KiB.

| set | tool | seconds | files/s | MiB/s |
| --- | --- | --- | --- | --- |
$(printf '%s\n' "${RESULTS[@]}")

Ratios, stager speed / cp -r speed (same data set):
- small files: stage-in $(ratio "$R_small_cp" "$R_small_stage_in"), stage-out $(ratio "$R_small_cp" "$R_small_stage_out") (target >= 1.00)
- 1 GiB files: stage-in $(ratio "$R_big_cp" "$R_big_stage_in"), stage-out $(ratio "$R_big_cp" "$R_big_stage_out") (target >= 0.80)
- 1 MiB files: stage-in $(ratio "$R_mid_cp" "$R_mid_stage_in"), stage-out $(ratio "$R_mid_cp" "$R_mid_stage_out")
- adafs-stage copy (local to local): small $(ratio "$R_small_cp" "$R_small_stagecopy"), mid $(ratio "$R_mid_cp" "$R_mid_stagecopy"), big $(ratio "$R_big_cp" "$R_big_stagecopy")

Rate limits, over 10 s windows of the stager's own per-second progress (--progress-json):
- --max-bw $LIMIT_BW = $BW_WANT B/s; bytes/s read from the parallel fs per window: $BW_RATES
- --max-mdops $LIMIT_MD; metadata ops/s toward the parallel fs per window: $MD_RATES
REPORT
