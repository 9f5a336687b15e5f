#!/bin/sh
# bench/lifecycle/run.sh BUILD_DIR [REPEATS]: the plugin's orchestration
# against simulated agents on loopback (bench/lifecycle/lcbench.c), munge
# on both sides. Needs a munged: its socket in MUNGE_SOCKET, or the
# mini-cluster's ($ADAFS_MUNGE_DIR/munge.socket.2, tests/cluster/cluster.sh
# start). SIM_MUNGE_SOCKET: a second munged (same key) for the simulated
# agents, as each node's agent has its node's (tests/cluster: copy the
# cluster's munge.key). Run it under `flock /tmp/adafs-bench.lock`; numbers go to
# doc/benchmarks.md (section "Orchestration").
#
#   1. one job of 512 and of 4,096 nodes, agents answering at once: begin
#      to release, end to teardown (plugin-side wall and CPU time);
#   2. 100 jobs of 4 nodes staging 2 s each, without and with a dead node
#      in job 1, alternated: each other job's phase times, same run;
#   3. 1,000 nodes staging for 20 s: messages and credentials per second.
set -eu
build=${1:?usage: run.sh BUILD_DIR [REPEATS]}
repeats=${2:-3}
bench="$build/bench/lifecycle/lcbench"
socket=${MUNGE_SOCKET:-${ADAFS_MUNGE_DIR:-/run/adafs-cluster-munge}/munge.socket.2}
[ -S "$socket" ] || { echo "run.sh: no munged at $socket (set MUNGE_SOCKET)" >&2; exit 1; }
[ -x "$bench" ] || { echo "run.sh: $bench not built (make -C $build/bench)" >&2; exit 1; }
sim=${SIM_MUNGE_SOCKET:-}
run() { "$bench" --munge-socket "$socket" ${sim:+--sim-munge-socket "$sim"} "$@" 2>/dev/null; }

out=$(mktemp)
trap 'rm -f "$out"' EXIT
{
    echo "# $(date -u +%FT%TZ) $(uname -n) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
    run scale 512 "$repeats"
    run scale 4096 1
    r=0
    while [ "$r" -lt "$repeats" ]; do
        run concurrent 100 4 2000 clean "$r"
        run concurrent 100 4 2000 dead "$r"
        r=$((r + 1))
    done
    run staging 1000 20
} | tee "$out"

# 2.: how much later each phase change of jobs 2..100 came with job 1's
# dead node than in the clean run of the same repeat.
echo "# summary"
awk '
    $1 == "concurrent" && $4 == "job" && $5 != 1 {
        split($2, d, "="); split($3, r, "=")
        for (i = 6; i < NF; i += 2) { at[d[2], r[2], $5, $i] = $(i + 1); phases[$i] = 1 }
        jobs[$5] = 1; reps[r[2]] = 1
    }
    END {
        worst = -1e9
        for (rep in reps) for (j in jobs) for (p in phases) {
            c = at[0, rep, j, p]; x = at[1, rep, j, p]
            if (c > 0 && x > 0 && x - c > worst) { worst = x - c; where = "job " j " " p " repeat " rep }
            if (c > 0 && x <= 0) { missing++ }
        }
        printf "dead node: the latest phase change of another job came %d ms after the clean run (%s); %d never came\n", worst, where, missing
    }' "$out"
