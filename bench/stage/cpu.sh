#!/bin/bash
# CPU per file of a stage-in, one process against N workers (issue 22):
# what the stagers and the servers spend, summed, divided by the files.
# Wall time on one small host cannot show how N workers on N nodes scale
# (they share its cores); work per file that stays flat as workers are
# added can, with a model (doc/benchmarks.md, Stager workers, run 10).
#
#   bench/stage/cpu.sh BUILD_DIR SRC_SET_DIR ROUNDS N:T [N:T ...]
#
# N:T is N processes of T threads (1:8 one process; 4:4 four workers as a
# job's agents start them with AdafsStageThreads=4). Every stage runs on a
# fresh 4-server instance (a reused one makes the later runs pay RocksDB's
# flushes and compactions of the earlier runs' data); each round runs the
# configurations in the other order than the round before. Prints per
# stage: wall seconds, the stagers' user + system seconds (getrusage of
# each finished process), the servers' (from /proc: all their threads,
# and apart the share of RocksDB's own background threads), per file, the
# workers' mailbox operations and their threads' waiting for work.
# WORK_DIR (default $BENCH_ROOT/cpu, root.sh) holds the instance.
set -euo pipefail
usage="usage: cpu.sh BUILD_DIR SRC_SET_DIR ROUNDS N:T [N:T ...]"
B=$(cd "${1:?$usage}" && pwd) src=$(cd "${2:?$usage}" && pwd) rounds=${3:?$usage}
shift 3
[ $# -gt 0 ] || { echo "$usage" >&2; exit 2; }
. "$(dirname "$0")/root.sh"
ST=$B/stager/adafs-stage CTL=$B/agent/adafs-ctl W=${WORK_DIR:-$BENCH_ROOT/cpu}
export LD_LIBRARY_PATH=$B/agent/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
FS=$W/fs
mkdir -p "$W"
trap '"$CTL" stop --base "$FS" > /dev/null 2>&1 || true; rm -rf "$FS"' EXIT
nf=$(find "$src" -type f | wc -l)
# Clock ticks of all servers' threads, and of RocksDB's background ones.
servers() {
    local all=0 bg=0 p s
    for p in $(pgrep -f "adafsd.*$FS/"); do
        all=$((all + $(awk '{ print $14 + $15 }' "/proc/$p/stat")))
        for s in /proc/"$p"/task/*/stat; do
            grep -q '(rocksdb' "$s" && bg=$((bg + $(sed 's/.*) //' "$s" | awk '{ print $12 + $13 }')))
        done
    done
    echo "$all:$bg"
}
for _ in $(seq "$rounds"); do
    for c in "$@"; do
        n=${c%:*} t=${c#*:} pids=""
        "$CTL" stop --base "$FS" > /dev/null 2>&1 || true
        rm -rf "$FS" "$W"/t.* "$W"/j.*
        "$CTL" start --servers 4 --base "$FS" > "$W/ctl.log" 2>&1 || { cat "$W/ctl.log" >&2; exit 1; }
        sleep 1
        s0=$(servers) a=$(date +%s.%N)
        for k in $(seq 0 $((n - 1))); do
            w=""
            [ "$n" -gt 1 ] && w="--worker $k/$n"
            # shellcheck disable=SC2086  # w: two words or none
            /usr/bin/time -f "%U %S" -o "$W/t.$k" "$ST" in --allow-root --json --threads "$t" \
                --instance "$FS/instance" $w "$src" /r > "$W/j.$k" 2> /dev/null &
            pids="$pids $!"
        done
        # shellcheck disable=SC2086
        wait $pids
        b=$(date +%s.%N) s1=$(servers)
        python3 - "$n" "$t" "$a" "$b" "$s0" "$s1" "$nf" "$W" "$(getconf CLK_TCK)" <<'PY'
import json, sys
n, t, a, b = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
(s0, g0), (s1, g1) = (map(int, x.split(":")) for x in sys.argv[5:7])
nf, W, hz = int(sys.argv[7]), sys.argv[8], float(sys.argv[9])
cpu, co, idle = [], 0, []
for k in range(n):
    u, s = map(float, open(f"{W}/t.{k}").read().split()[-2:])
    cpu.append(u + s)
    j = json.load(open(f"{W}/j.{k}"))
    co += j["coord_ops"]
    idle.append(100 * j["idle_seconds"] / (t * j["seconds"]))
us = lambda x: 1e6 * x / nf
st, sv, bg = sum(cpu), (s1 - s0) / hz, (g1 - g0) / hz
print(f"{n}x{t} wall {b - a:.2f} s | stagers {us(st):.1f} us/file | servers {us(sv):.1f} "
      f"(RocksDB background {us(bg):.1f}) | total {us(st + sv):.1f} us/file | "
      f"mailbox ops {co} | idle {' '.join('%.0f%%' % i for i in idle)}")
PY
    done
    mapfile -t rev < <(printf '%s\n' "$@" | tac)
    set -- "${rev[@]}"
done
