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
# THREADS (stager threads, 8), REPEAT (timed runs of every tool per set,
# in turns: cp, the others, stage-in, stage-out, then again; the ratios
# are the median of the repeats' own; default 1), SETTLE (seconds of
# pause before the first timed run, 65; see below), LIMIT_BW (bytes/s, 150M), LIMIT_MD (ops/s,
# 4000), SETS (which sets to run: any of "small mid big", default all),
# LIMITS (1: also measure the rate limits, the default; 0: skip them),
# TOOLS (local-to-local tools, default "cp rsync tar stagecopy"; cp is
# what the ratios compare with), KEEP (1: leave the copies in WORK_DIR/run.*
# instead of deleting them at the end; see below), WARM (1: before each
# timed run, touch as much memory as it will write, the default; 0: not;
# see below).
# Prints a Markdown report on stdout; progress on stderr. Under a shared
# machine, run it under `flock /tmp/adafs-bench.lock` so timed runs of
# different people never overlap.
#
# Three things on these VMs decide a comparison if left alone, and the
# run controls them:
# - Memory: freed memory goes back to the host and costs a host fault per
#   page when touched again (see bench/vm_memory.sh). The run holds freed
#   memory in the guest while it lasts, and before each timed run a
#   process touches and frees as much memory as the run will write (and
#   1 GiB more), so every tool writes into memory the host backs.
# - Inodes: on this ext4 (no journal) every create skips, one inode table
#   lookup each, the inodes freed in the last minute (five while their
#   inode table block is dirty): find_inode_bit -> recently_deleted. Right
#   after a mass delete creates are five- to twenty-fold slower, and
#   adafs, which makes a local file per file on each server holding a
#   chunk of it (two for a 1 MiB file), paid twice what cp -r paid.
#   So nothing is deleted between timed runs (every tool writes a fresh
#   directory; all is removed at the end, about 40 GB at the peak with the
#   default sizes), and the run starts with `sync` and a pause of SETTLE
#   seconds (default 65) so that what earlier runs deleted is past that
#   minute. With KEEP=1 nothing of the copies is removed at the end.
# - The first copy: each set is copied once, untimed, before its timed
#   runs (see run_set).
set -euo pipefail
BUILD=$(cd "${1:?usage: run.sh BUILD_DIR [WORK_DIR]}" && pwd)
. "$(dirname "$0")/root.sh"
W=${2:-$BENCH_ROOT}
SMALL=${SMALL:-100000} MID=${MID:-1000} BIG=${BIG:-4} BIGMIB=${BIGMIB:-1024}
THREADS=${THREADS:-8} REPEAT=${REPEAT:-1} SETTLE=${SETTLE:-65} LIMIT_BW=${LIMIT_BW:-150M} LIMIT_MD=${LIMIT_MD:-4000}
SETS=${SETS:-small mid big} LIMITS=${LIMITS:-1} TOOLS=${TOOLS:-cp rsync tar stagecopy}
for set in $SETS; do
    case $set in small|mid|big) ;; *) echo "run.sh: unknown set '$set' in SETS (small mid big)" >&2; exit 2 ;; esac
done
STAGE=$BUILD/stager/adafs-stage CTL=$BUILD/agent/adafs-ctl KEEP=${KEEP:-0}
R=$W/run.$(date +%s)   # this run's copies and instances
export LD_LIBRARY_PATH=$BUILD/agent/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for p in "$STAGE" "$CTL"; do [ -x "$p" ] || { echo "run.sh: $p not built" >&2; exit 2; }; done
for p in rsync tar python3; do command -v $p > /dev/null || { echo "run.sh: $p missing" >&2; exit 2; }; done

mkdir -p "$W"
stop_all() { for b in "$R"/fs-*; do [ -d "$b" ] && { "$CTL" stop --base "$b" > /dev/null 2>&1 || true; }; done; true; }
. "$(dirname "$0")/../vm_memory.sh"
trap 'stop_all; release_free_memory' EXIT
say() { echo "[$(date +%T)] $*" >&2; }

. "$(dirname "$0")/sets.sh"

# Touches and frees the bytes a timed run of the current set will write,
# and 1 GiB more (see the top).
warm() { warm_memory $(( ${BYTES[$CUR_SET]} + (1 << 30) )); }

# seconds of wall time for "$@", after warm
timed() {
    local t0 t1
    warm
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
    eval "R_${1}_${2//[^a-z]/_}+=\" $3\""
    say "$1 $2: $3 s"
}

run_set() {
    local set=$1 src=$W/src/$1 d t fs=$R/fs-$1 rep
    FILES[$set]=$(find "$src" -type f | wc -l)
    BYTES[$set]=$(du -sb --apparent-size "$src" | cut -f1)
    CUR_SET=$set
    # Untimed: the first copy after the pause or another set's runs was
    # two to four times slower than the same copy again (cp -r of the 4 x
    # 1 GiB set 6.1-7.9 s first, 1.7 s after this copy; of the 1 MiB set
    # 1.4-2.4 s and 0.5 s), a cost that fell on whichever tool came first.
    cp -r "$src" "$R/warmup-$set"; sync
    "$CTL" start --servers 4 --base "$fs" > /dev/null
    for rep in $(seq "$REPEAT"); do
        for tool in $TOOLS; do
            d=$R/dst-$set-$tool-$rep
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
        t=$(timed "$STAGE" in --allow-root --quiet --threads "$THREADS" --instance "$fs/instance" "$src" /in$rep)
        sync
        record "$set" stage_in "$t"
        d=$R/dst-$set-out-$rep
        t=$(timed "$STAGE" out --allow-root --quiet --threads "$THREADS" --instance "$fs/instance" /in$rep "$d")
        sync
        diff -rq "$src" "$d" > /dev/null || { echo "run.sh: stage in+out of $set differs" >&2; exit 1; }
        record "$set" stage_out "$t"
    done
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
    local fs=$R/fs-limits bw
    "$CTL" start --servers 4 --base "$fs" > /dev/null
    bw=$(numfmt --from=iec "${LIMIT_BW%B}")
    rm -f "$W/bw.jsonl" "$W/bwout.jsonl" "$W/md.jsonl"
    say "stage-in of big files at --max-bw $LIMIT_BW"
    "$STAGE" in --allow-root --quiet --max-bw "$LIMIT_BW" --progress-json "$W/bw.jsonl" \
        --instance "$fs/instance" "$W/src/big" /limit-bw
    say "stage-out of big files at --max-bw $LIMIT_BW"
    "$STAGE" out --allow-root --quiet --max-bw "$LIMIT_BW" --progress-json "$W/bwout.jsonl" \
        --instance "$fs/instance" /limit-bw "$R/limit-bw-out"
    say "stage-in of small files at --max-mdops $LIMIT_MD"
    "$STAGE" in --allow-root --quiet --max-mdops "$LIMIT_MD" --progress-json "$W/md.jsonl" \
        --instance "$fs/instance" "$W/src/small" /limit-md
    BW_RATES=$(window_rates "$W/bw.jsonl" pfs_bytes)
    BWOUT_RATES=$(window_rates "$W/bwout.jsonl" pfs_bytes)
    MD_RATES=$(window_rates "$W/md.jsonl" pfs_mdops)
    BW_WANT=$bw
}

for set in $SETS; do make_set $set; done
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
hold_free_memory
say "reading the sources into the page cache, then sync and $SETTLE s of pause (see the top)"
for set in $SETS; do find "$W/src/$set" -type f -exec cat {} + > /dev/null; done
mkdir -p "$R"; sync; sleep "$SETTLE"
for set in $SETS; do run_set $set; done
BW_RATES="(not run)" BWOUT_RATES="(not run)" MD_RATES="(not run)" BW_WANT="(not run)"
if [ "$LIMITS" = 1 ]; then
    for set in small big; do make_set $set; done
    limits
fi
stop_all
if [ "$KEEP" = 1 ]; then say "keeping the copies in $R"; else rm -rf "$R"; fi

# ratio "CP_SECONDS..." "TOOL_SECONDS...": cp's time over the tool's, repeat
# by repeat; with several repeats the median and then every repeat's.
ratio() {
    if [ -z "${1:-}" ] || [ -z "${2:-}" ]; then echo "n/a"; return; fi
    awk -v a="$1" -v b="$2" 'BEGIN {
        n = split(a, x, " "); split(b, y, " ")
        for (i = 1; i <= n; i++) r[i] = x[i] / y[i]
        for (i = 2; i <= n; i++) for (j = i; j > 1 && r[j - 1] > r[j]; j--) { t = r[j]; r[j] = r[j - 1]; r[j - 1] = t }
        m = n % 2 ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
        printf "%.2f", m
        if (n > 1) {
            printf " (median of %d:", n
            for (i = 1; i <= n; i++) printf " %.2f", x[i] / y[i]
            printf ")"
        }
    }'
}
ratios() {
    local set name target cp in out copy
    for set in $SETS; do
        cp=R_${set}_cp in=R_${set}_stage_in out=R_${set}_stage_out copy=R_${set}_stagecopy
        case $set in
        small) name="small files" target=" (target >= 1.00)" ;;
        big) name="$BIGMIB MiB files" target=" (target >= 0.80)" ;;
        mid) name="1 MiB files" target="" ;;
        esac
        echo "- $name: stage-in $(ratio "${!cp:-}" "${!in:-}"), stage-out" \
             "$(ratio "${!cp:-}" "${!out:-}")$target; adafs-stage copy $(ratio "${!cp:-}" "${!copy:-}")"
    done
}
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')
cat <<REPORT
## Stager benchmark ($(date -u +%Y-%m-%dT%H:%MZ))

Machine: $(nproc) cores ($cpu), $(free -g | awk '/Mem:/ {print $2}') GiB RAM, work dir $W on
$(df -h --output=source,fstype "$W" | tail -1 | tr -s ' '). Command: \`SETS="$SETS" TOOLS="$TOOLS" LIMITS=$LIMITS bench/stage/run.sh $BUILD $W\`
(load average before the run: $LOAD0)
(SMALL=$SMALL x 4 KiB, MID=$MID x 1 MiB, BIG=$BIG x $BIGMIB MiB, stager threads $THREADS, REPEAT=$REPEAT).
Page cache warm (nothing dropped between runs), \`sync\` after every run (not timed),
every tool writes a fresh directory (nothing deleted between timed runs), $SETTLE s of pause
before the first; freed memory held in the guest, memory touched before each run (see run.sh).
adafs: 4 servers on 127.0.0.1 (adafs-ctl), chunk size 512 KiB.

| set | tool | seconds | files/s | MiB/s |
| --- | --- | --- | --- | --- |
$(printf '%s\n' "${RESULTS[@]}")

Ratios, stager speed / cp -r speed (same data set):
$(ratios)

Rate limits, over 10 s windows of the stager's own per-second progress (--progress-json):
- --max-bw $LIMIT_BW = $BW_WANT B/s; bytes/s read from the parallel fs per window: $BW_RATES
- --max-bw $LIMIT_BW = $BW_WANT B/s; bytes/s written to the parallel fs per window (stage-out): $BWOUT_RATES
- --max-mdops $LIMIT_MD; metadata ops/s toward the parallel fs per window: $MD_RATES
REPORT
