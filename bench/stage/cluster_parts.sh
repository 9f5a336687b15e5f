#!/bin/bash
# Where a 4-node job's stage-in differs from one process (issue 22 point
# 3): the same stage-in of the 100,000-file set, in turns, in one run:
#
#   one.ctl   one adafs-stage x 8 threads into `adafs-ctl start --servers 4`
#   one.job   the same into a HELD job's own instance (its 4 servers, as
#             its agents started them)
#   four.ctl  4 workers x 2 threads (--worker K/4), started by hand, into
#             the ctl instance
#   four.job  the same into the held job's instance
#   agents    a 4-node job staging the set in (4 workers started by the
#             agents), its time from the agents' logs as cluster.sh takes it
#
#   bench/stage/cluster_parts.sh BUILD_DIR [WORK_DIR]
#
# Prints, for each, the wall seconds and the stagers' CPU (user + system
# of the processes, from bash's `times`). Needs root and the cluster
# settings exported, like cluster.sh; VARIANTS chooses which run
# (default all five), REPEAT (3), SMALL (100000), SETTLE (10).
set -euo pipefail
BUILD=$(cd "${1:?usage: cluster_parts.sh BUILD_DIR [WORK_DIR]}" && pwd)
SMALL=${SMALL:-100000} REPEAT=${REPEAT:-3} SETTLE=${SETTLE:-10}
VARIANTS=${VARIANTS:-one.ctl one.job four.ctl four.job one.ctlu agents}
. "$(dirname "$0")/common.sh" "${2:-}"
R=$W/parts.$(date +%s)
mkdir -p "$R"
held=
trap '[ -n "$held" ] && scancel "$held" 2>/dev/null; "$cluster" stop > /dev/null 2>&1; "$CTL" stop --base "$R/fs" > /dev/null 2>&1 || true' EXIT

stage_cluster_start

"$CTL" start --servers 4 --base "$R/fs" > /dev/null
chmod 755 "$W" "$R"; chmod 711 "$R/fs"; chown "$test_user" "$R/fs/instance"
mkdir -p "$R/json"; chown "$test_user" "$R/json"
ctl_instance=$R/fs/instance
ctl_servers=$(awk '{ print $2 }' "$R/fs/servers")

# The held job: 4 nodes, a big instance, waiting until told to end.
f=$(write_job held.sh <<JOB
#!/bin/bash
#SBATCH -N 4 -t 60 -o held-%j.out
#BB_ADAFS capacity=16G
echo "\$ADAFS_INSTANCE" > $ADAFS_CLUSTER_DIR/jobs/held.instance
while [ ! -e $ADAFS_CLUSTER_DIR/jobs/held.done ]; do sleep 1; done
JOB
)
rm -f "$ADAFS_CLUSTER_DIR/jobs/held.instance" "$ADAFS_CLUSTER_DIR/jobs/held.done"
held=$(submit "$f")
wait_file "$ADAFS_CLUSTER_DIR/jobs/held.instance" 120 || { echo "held job $held did not start" >&2; exit 1; }
job_instance=$(cat "$ADAFS_CLUSTER_DIR/jobs/held.instance")
say "held job $held: instance $job_instance"
job_servers=$(pgrep -d ' ' -u "$test_user" -x adafsd || true)
for p in $job_servers; do
    say "adafsd pid $p (uid $test_user): $(tr '\0' ' ' < /proc/$p/cmdline | cut -c1-200)"
    say "   $(grep -E 'Cpus_allowed_list|voluntary' /proc/$p/status | tr '\n' ' ') nice $(ps -o ni= -p $p) cgroup $(grep -E 'cpu|^0::' /proc/$p/cgroup | tr '\n' ' ')"
done

# run NAME INSTANCE N THREADS DST: N processes (as the test user; as root
# with --allow-root into the ctl instance, whose servers, run by root
# without --owner, make every file root's: a worker K > 0 of the test user
# cannot open worker 0's mailboxes there); prints "wall cpu servers-cpu"
# (cpu: the stagers' user + system seconds; servers-cpu: their servers')
run() {
    local inst=$2 n=$3 th=$4 dst=$5 who=() extra=() srv s0 s1
    if [ "$inst" = "$ctl_instance" ]; then extra=(--allow-root); srv=$ctl_servers
    else who=(runuser -u "$test_user" --); srv=$job_servers; fi
    s0=$(cpu_pids $srv)
    local perf=
    if [ -n "${PERF_DIR:-}" ] && [ "${1##*.}" = 1 ]; then
        perf record -q -g -o "$PERF_DIR/$1.servers.data" -p "$(echo $srv | tr ' ' ,)" > /dev/null 2>&1 &
        perf=$!; sleep 0.5
    fi
    "${who[@]}" env LD_LIBRARY_PATH="$LD_LIBRARY_PATH" bash -c '
        st=$1 inst=$2 n=$3 th=$4 src=$5 dst=$6 out=$7 extra=$8
        t0=$EPOCHREALTIME
        if [ "$n" = 1 ]; then
            "$st" in $extra --json --threads "$th" --instance "$inst" "$src" "$dst" > "$out.0" || exit 1
        else
            for k in $(seq 0 $((n - 1))); do
                "$st" in $extra --json --threads "$th" --instance "$inst" --worker "$k/$n" "$src" "$dst" > "$out.$k" &
            done
            wait
        fi
        t1=$EPOCHREALTIME
        times > "$out.times"
        awk -v a="$t0" -v b="$t1" "BEGIN { printf \"%.3f\", b - a }"
    ' _ "$STAGE" "$inst" "$n" "$th" "$data" "$dst" "$R/json/$1" "${extra[*]}" || return 1
    s1=$(cpu_pids $srv)
    [ -z "$perf" ] || { kill -INT "$perf"; wait "$perf" || true; }
    echo " $(cpu_of "$R/json/$1.times") $(awk -v a="$s0" -v b="$s1" 'BEGIN { printf "%.2f", b - a }')"
}
# the user + system seconds of processes PID...
cpu_pids() { local t=0 p; for p in "$@"; do t=$((t + $(awk '{ print $14 + $15 }' /proc/$p/stat))); done
             awk -v t="$t" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", t / hz }'; }
# bash's `times`, second line: the children's user and system time as NmN.NNNs
cpu_of() { sed -n 2p "$1" | awk '{ n = split($0, f, " "); s = 0; for (i = 1; i <= n; i++) { split(f[i], p, "m"); sub("s", "", p[2]); s += p[1] * 60 + p[2] } printf "%.2f", s }'; }

span() {
    python3 - "$1" "$ADAFS_CLUSTER_DIR"/log/agent.n*.log <<'PY'
import datetime, json, re, sys
job, logs = sys.argv[1], sys.argv[2:]
t = lambda line: datetime.datetime.strptime(line[:23], "%Y-%m-%dT%H:%M:%S.%f").timestamp()
starts, pids, ends, secs = [], {}, [], []
for name in logs:
    for line in open(name, errors="replace"):
        m = re.search(r"job %s: stage-in worker (\d+)/\d+ started \(pid (\d+)" % job, line)
        if m:
            starts.append(t(line)); pids[(name, m.group(2))] = True
            continue
        m = re.search(r"job %s: stager pid (\d+) finished with status (\d+)(: (\{.*\}))?" % job, line)
        if m and (name, m.group(1)) in pids:
            ends.append(t(line))
            if m.group(4):
                secs.append(json.loads(m.group(4))["seconds"])
print("%.3f starts-spread %.3f own-seconds %s" % (max(ends) - min(starts), max(starts) - min(starts),
      ",".join("%.2f" % s for s in secs)))
PY
}
# the one process as cluster.sh runs it: as the test user, into the ctl instance
one_user() {
    local t0=$EPOCHREALTIME
    as_user "$STAGE" in --json --instance "$ctl_instance" "$data" "$2" > /dev/null
    awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }'
}
agents() {
    local f id
    f=$(write_job "in$1.sh" <<JOB
#!/bin/bash
#SBATCH -N 4 -t 30 -o in-%j.out
#BB_ADAFS capacity=3G
#BB_ADAFS stage_in  source=$data destination=in type=directory
true
JOB
)
    id=$(submit "$f")
    # what the agents' stagers run with (affinity, nice, policy, cgroup)
    [ "$1" = 1 ] && ( for _ in $(seq 300); do
        ps=$(pgrep -u "$test_user" -x adafs-stage || true)
        if [ -n "$ps" ]; then
            for p in $ps; do
                say "agents' stager $p: $(grep -E 'Cpus_allowed_list' /proc/$p/status | tr -s '\t' ' ') nice $(ps -o ni= -p $p)" \
                    "$(chrt -p $p 2>/dev/null | head -1) cgroup $(grep -E 'cpu|^0::' /proc/$p/cgroup | tr '\n' ' ')" \
                    "args $(tr '\0' ' ' < /proc/$p/cmdline | cut -c1-160)"
            done
            break
        fi
        sleep 0.05
    done ) &
    wait_job "$id" COMPLETED 900 > /dev/null || { echo "job $id did not complete" >&2; exit 1; }
    echo "$(span "$id") job $id"
}

# The held job occupies the 4 nodes: the agents' jobs wait for it. So
# the agents' variant runs after the held job ends, in its own turns
# against one.ctl.
vs=() ; for v in $VARIANTS; do [ "$v" = agents ] || vs+=("$v"); done
for rep in $(seq "$REPEAT"); do
    # rotate the order each repeat
    k=$(( (rep - 1) % ${#vs[@]} ))
    order=("${vs[@]:$k}" "${vs[@]:0:$k}")
    for v in "${order[@]}"; do
        case $v in
            one.ctl) r=$(run "$v.$rep" "$ctl_instance" 1 8 "/o$rep") ;;
            one.job) r=$(run "$v.$rep" "$job_instance" 1 8 "/o$rep") ;;
            four.ctl) r=$(run "$v.$rep" "$ctl_instance" 4 2 "/f$rep") ;;
            four.job) r=$(run "$v.$rep" "$job_instance" 4 2 "/f$rep") ;;
            one.ctlu) r=$(one_user "$v.$rep" "/u$rep") ;;
        esac
        say "rep $rep $v: wall cpu $r load $(cut -d' ' -f1 /proc/loadavg)"
        echo "$rep $v $r"
    done
done
touch "$ADAFS_CLUSTER_DIR/jobs/held.done"
wait_job "$held" COMPLETED 120 > /dev/null || true
held=
case " $VARIANTS " in *" agents "*)
    for rep in $(seq "$REPEAT"); do
        if [ $((rep % 2)) = 1 ]; then
            a=$(agents "$rep"); say "rep $rep agents: $a"; echo "$rep agents $a"
            r=$(one_user "one.ctl2.$rep" "/p$rep"); say "rep $rep one.ctl: $r"; echo "$rep one.ctl2 $r"
        else
            r=$(one_user "one.ctl2.$rep" "/p$rep"); say "rep $rep one.ctl: $r"; echo "$rep one.ctl2 $r"
            a=$(agents "$rep"); say "rep $rep agents: $a"; echo "$rep agents $a"
        fi
    done ;;
esac
