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
# On a virtual machine whose balloon driver reports free memory to the
# host (/sys/module/page_reporting here), memory left free for a while is
# handed back, and the first touch of each page of it costs a fault on the
# host: cp -r of 4 GiB took 3.7-3.9 s into such memory against 1.6-1.9 s
# into memory freed just before. Which tool got which was an accident of
# order (cp, first after the previous run's clean-up, got the warm
# memory). So before each timed run a process touches and frees as much
# memory as the run will write (and 1 GiB more); the run then writes into
# memory the host backs, whichever tool it is.
# Nothing is deleted between timed runs: on this ext4 the creates of the
# first minutes after a mass delete are slowed five- to twenty-fold (perf:
# the inode allocator's find_inode_bit -> recently_deleted skips inodes
# freed in the last 60-300 s, one inode table lookup each), which would
# penalise whichever tool came next. Every tool writes a fresh directory
# and all is removed at the end (about 40 GB at the peak with the default
# sizes); with KEEP=1 nothing is removed, so runs can follow each other
# without waiting five minutes after the previous run's clean-up.
set -euo pipefail
BUILD=$(cd "${1:?usage: run.sh BUILD_DIR [WORK_DIR]}" && pwd)
W=${2:-/tmp/adafs-bench-stage}
SMALL=${SMALL:-100000} MID=${MID:-1000} BIG=${BIG:-4} BIGMIB=${BIGMIB:-1024}
THREADS=${THREADS:-8} LIMIT_BW=${LIMIT_BW:-150M} LIMIT_MD=${LIMIT_MD:-4000}
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
trap 'stop_all' EXIT
say() { echo "[$(date +%T)] $*" >&2; }

# Each set is generated once and reused while its parameters stay the
# same (the stamps live outside the copied trees).
make_set() {
    local set=$1 stamp
    case $set in small) stamp=$SMALL ;; mid) stamp=$MID ;; big) stamp="$BIG $BIGMIB" ;; esac
    mkdir -p "$W/src" "$W/stamps"
    if [ -d "$W/src/$set" ] && [ "$(cat "$W/stamps/$set" 2>/dev/null)" = "$stamp" ]; then
        say "reusing data in $W/src/$set"
        return
    fi
    say "generating data in $W/src/$set"
    rm -rf "$W/src/$set" "$W/stamps/$set"; mkdir -p "$W/src/$set"
    case $set in
    small|mid) python3 - "$W/src" "$set" "$stamp" <<'PY'
import os, sys
root, which, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
block = os.urandom(1 << 20)
for i in range(count):
    if which == "small":
        d = os.path.join(root, "small", "d%03d" % (i % 100))
        if i < 100: os.mkdir(d)
        with open(os.path.join(d, "f%06d" % i), "wb") as f:
            off = (i * 4096) % (1 << 20)
            f.write(block[off:off + 4096])
    else:
        d = os.path.join(root, "mid", "d%02d" % (i % 10))
        if i < 10: os.mkdir(d)
        with open(os.path.join(d, "f%04d" % i), "wb") as f:
            f.write(block[i % 4096:] + block[:i % 4096])
PY
    ;;
    big)
        head -c $((BIGMIB << 20)) /dev/urandom > "$W/src/big/g0"
        for i in $(seq 1 $((BIG - 1))); do cp "$W/src/big/g0" "$W/src/big/g$i"; done
        ;;
    esac
    echo "$stamp" > "$W/stamps/$set"
    sync
}

# Touches and frees the bytes a timed run of the current set will write,
# and 1 GiB more (see the top).
warm() {
    [ "${WARM:-1}" = 1 ] || return 0
    python3 - $(( ${BYTES[$CUR_SET]} + (1 << 30) )) <<'PY'
import mmap, sys
size = int(sys.argv[1]) // 4096 * 4096
m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
for off in range(0, size, 4096):
    m[off] = 1
PY
}

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
    eval "R_${1}_${2//[^a-z]/_}=$3"
    say "$1 $2: $3 s"
}

run_set() {
    local set=$1 src=$W/src/$1 d t fs=$R/fs-$1
    FILES[$set]=$(find "$src" -type f | wc -l)
    BYTES[$set]=$(du -sb --apparent-size "$src" | cut -f1)
    CUR_SET=$set
    for tool in $TOOLS; do
        d=$R/dst-$set-$tool
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
    d=$R/dst-$set-out
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
say "untimed warm-up copy (absorbs earlier deletes)"
first=${SETS%% *}
mkdir -p "$R"; cp -r "$W/src/$first" "$R/warmup"; sync
for set in $SETS; do run_set $set; done
BW_RATES="(not run)" BWOUT_RATES="(not run)" MD_RATES="(not run)" BW_WANT="(not run)"
if [ "$LIMITS" = 1 ]; then
    for set in small big; do make_set $set; done
    limits
fi
stop_all
if [ "$KEEP" = 1 ]; then say "keeping the copies in $R"; else rm -rf "$R"; fi

ratio() { if [ -n "${1:-}" ] && [ -n "${2:-}" ]; then awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; else echo "n/a"; fi; }
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
(SMALL=$SMALL x 4 KiB, MID=$MID x 1 MiB, BIG=$BIG x $BIGMIB MiB, stager threads $THREADS).
Page cache warm (nothing dropped between runs), \`sync\` after every run (not timed),
every tool writes a fresh directory (nothing deleted between timed runs, see run.sh).
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
