#!/bin/bash
# Stager benchmark (issue 22) on the mini-cluster: a 4-node job stages the
# 100,000-file set in and back out (4 workers, one per node, started by the
# agents), against one adafs-stage process staging the same data in and out
# of a 4-server instance on this host, in the same run, in turns.
#
#   bench/stage/cluster.sh BUILD_DIR [WORK_DIR]
#
# Needs root and the cluster settings of the one running it exported
# (ADAFS_CLUSTER_DIR, ADAFS_MUNGE_DIR, ADAFS_CTLD_PORT, ADAFS_SLURMD_PORT);
# starts that cluster afresh and stops it at the end. The cluster (its
# stand-in parallel file system, its servers' storage) runs under
# BENCH_ROOT (root.sh: tmpfs by default), in a directory named as
# ADAFS_CLUSTER_DIR's last component, as does the one process's instance. The job's stage time
# is taken from its agents' logs: from the first worker started to the last
# one finished (the plugin polls its workers five times a second, and
# `scontrol show bbstat` gives whole seconds, shown too). The one process
# runs with its default 8 threads; the job's workers with what the plugin
# gives each node (AdafsStageThreadsPerCpu per CPU the job has there, at
# most AdafsStageThreads: doc/burst_buffer.conf.md), read from the agents'
# logs. Environment: SMALL (100000), REPEAT (3), SETTLE (65), CAPACITY
# (3G: the job's #BB_ADAFS capacity), ONE_QUOTA (the one process's
# servers' --quota; default the job's share per node, capacity / 4, so
# that both sides' servers size RocksDB alike by instance_space(): its
# memtables are quota/48 (quota/256 until run 14, whose 3 MiB ones for a
# 768 MiB share cost the servers 2.5 x the CPU of RocksDB's default 64 MiB
# on this set, doc/benchmarks.md run 14); `none`: no quota, RocksDB's
# defaults, as runs up to 13 compared).
set -euo pipefail
BUILD=$(cd "${1:?usage: cluster.sh BUILD_DIR [WORK_DIR]}" && pwd)
SMALL=${SMALL:-100000} REPEAT=${REPEAT:-3} SETTLE=${SETTLE:-65} CAPACITY=${CAPACITY:-3G}
# the plugin's share per node: capacity / nodes, rounded up (bb_begin.c)
ONE_QUOTA=${ONE_QUOTA:-$(( ($(numfmt --from=iec "$CAPACITY") + 3) / 4 ))}
[ "$ONE_QUOTA" != none ] || ONE_QUOTA=
. "$(dirname "$0")/common.sh" "${2:-}"
R=$W/cluster.$(date +%s)
mkdir -p "$R"
trap '"$cluster" stop > /dev/null 2>&1; "$CTL" stop --base "$R/fs" > /dev/null 2>&1 || true' EXIT

stage_cluster_start

# A fresh instance for each repeat, as each job gets fresh servers: what
# earlier repeats left would make its RocksDB compact more each time.
fresh_instance() {
    "$CTL" stop --base "$R/fs" > /dev/null 2>&1 || true
    "$CTL" start --servers 4 --base "$R/fs" ${ONE_QUOTA:+--quota "$ONE_QUOTA"} > /dev/null
    chmod 755 "$W" "$R"; chmod 711 "$R/fs"; chown "$test_user" "$R/fs/instance"
}
# one DIR SRC DST: one process as the test user; prints its wall seconds
one() {
    local t0 t1
    t0=$(date +%s.%N)
    as_user "$STAGE" "$1" --quiet --instance "$R/fs/instance" "$2" "$3"
    t1=$(date +%s.%N)
    sync
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}

# span JOB DIR: seconds from the first of the job's stage-DIR workers started
# to the last finished, from the agents' logs.
span() {
    python3 - "$1" "$2" "$ADAFS_CLUSTER_DIR"/log/agent.n*.log <<'PY'
import datetime, json, re, sys
job, direction, logs = sys.argv[1], sys.argv[2], sys.argv[3:]
summaries = []
def t(line):
    return datetime.datetime.strptime(line[:23], "%Y-%m-%dT%H:%M:%S.%f").timestamp()
starts, pids, ends, threads = [], {}, [], {}
for name in logs:
    for line in open(name, errors="replace"):
        m = re.search(r"job %s: stage-%s worker (\d+)/\d+ started \(pid (\d+)(, (\d+) threads)?\)"
                      % (job, direction), line)
        if m:
            starts.append(t(line)); pids[(name, m.group(2))] = True
            threads[int(m.group(1))] = int(m.group(4) or 4)
            continue
        m = re.search(r"job %s: stager pid (\d+) finished with status (\d+)(: (\{.*\}))?" % job, line)
        if m and (name, m.group(1)) in pids:
            ends.append(t(line))
            if m.group(4):
                summaries.append(json.loads(m.group(4)))
if len(starts) != 4 or len(ends) != 4:
    sys.exit("cluster.sh: job %s stage-%s: %d workers started, %d finished" % (job, direction, len(starts), len(ends)))
print("%.3f" % (max(ends) - min(starts)))
# Each worker's own time and its threads' waiting for work (of which
# before their first task: the start), from the summaries the agents
# log, and each worker's threads.
summaries.sort(key=lambda x: x["worker"])
share = lambda x, k: 100 * x.get(k, 0) / (threads.get(x["worker"], 4) * x["seconds"])
print("job %s stage-%s workers: threads %s, seconds %s, idle %s (at the start %s)" % (job, direction,
      " ".join(str(threads.get(x["worker"], "?")) for x in summaries),
      " ".join("%.2f" % x["seconds"] for x in summaries),
      " ".join("%.0f%%" % share(x, "idle_seconds") for x in summaries if x["seconds"] > 0),
      " ".join("%.0f%%" % share(x, "idle_start_seconds") for x in summaries if x["seconds"] > 0)),
      file=sys.stderr)
PY
}

ROWS=() RIN=() ROUT=()
for rep in $(seq "$REPEAT"); do
    job_rep() {
        local f id
        f=$(write_job "bench$rep.sh" <<JOB
#!/bin/bash
#SBATCH -N 4 -t 30 -o bench-%j.out
#BB_ADAFS capacity=$CAPACITY
#BB_ADAFS stage_in  source=$data destination=in type=directory
#BB_ADAFS stage_out source=in destination=$pfs/bench/out/%j type=directory
true
JOB
)
        id=$(submit "$f")
        wait_job "$id" COMPLETED 900 > /dev/null || { echo "cluster.sh: job $id did not complete" >&2; exit 1; }
        diff -rq "$data" "$pfs/bench/out/$id" > /dev/null ||
            { echo "cluster.sh: job $id staged out something else" >&2; exit 1; }
        jin=$(span "$id" in) jout=$(span "$id" out)
        bb=$(scontrol show bbstat "$id" | grep -o 'StageIn=[0-9]*s.*StageOut=[0-9]*s' | sed 's/ Run=[0-9]*s//')
        say "job $id: stage-in $jin s, stage-out $jout s ($bb)"
    }
    one_rep() {
        fresh_instance
        oin=$(one in "$data" "/in$rep")
        oout=$(one out "/in$rep" "$pfs/bench/out/one$rep")
        diff -rq "$data" "$pfs/bench/out/one$rep" > /dev/null ||
            { echo "cluster.sh: one process staged out something else" >&2; exit 1; }
        say "one process: stage-in $oin s, stage-out $oout s"
    }
    if [ $((rep % 2)) = 1 ]; then job_rep; one_rep; else one_rep; job_rep; fi
    ri=$(awk -v a="$oin" -v b="$jin" 'BEGIN { printf "%.2f", a / b }')
    ro=$(awk -v a="$oout" -v b="$jout" 'BEGIN { printf "%.2f", a / b }')
    RIN+=("$ri") ROUT+=("$ro")
    ROWS+=("| $rep | $jin | $oin | $ri | $jout | $oout | $ro | $bb |")
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
cat <<REPORT
## Stager on the mini-cluster ($(date -u +%Y-%m-%dT%H:%MZ))

$(nproc) cores, 4 nodes of one host (tests/cluster/cluster.sh), data and storage on $BENCH_FS
($W). $SMALL files of 4 KiB in 100 directories. Job: \`#BB_ADAFS capacity=$CAPACITY\`, \`stage_in\` and \`stage_out\`
of the tree, 4 workers with the plugin's threads per node (in the log above); one process: \`adafs-stage in|out\` (8 threads) through \`adafs-ctl start
--servers 4${ONE_QUOTA:+ --quota $ONE_QUOTA}\`, as the same user, in turns with the job. Seconds, and one process's time over
the job's (>= 1: the job is as fast):

| repeat | job in | one in | ratio | job out | one out | ratio | bbstat |
| --- | --- | --- | --- | --- | --- | --- | --- |
$(printf '%s\n' "${ROWS[@]}")

Median ratio: stage-in $(echo "${RIN[*]}" | median), stage-out $(echo "${ROUT[*]}" | median).
REPORT
