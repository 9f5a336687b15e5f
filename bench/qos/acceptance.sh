#!/bin/bash
# bench/qos/acceptance.sh [RUNS] [PART...]: issue 24's acceptance runs on the
# mini-cluster (its settings from the environment, as for cluster tests;
# ADAFS_BUILD_DIR the build). A local directory is the parallel file system.
#
#   capacity  what this machine delivers for stat and write, unlimited
#   static    a 4-node job with 4 processes per node held at 1000 stat/s,
#             another at 100 MiB/s of writes: 10 s windows, the first dropped
#   change    a limit changed at run time (1000 -> 2000 stat/s): seconds until
#             every process follows, in periods
#   share     PSFA, then static priority and uniform shares: 3 jobs whose
#             demands are 1:2:3 x capacity/4, arriving 20 s apart, the first
#             idling for 10 s; sum per 1 s window, reaction to the idling,
#             each job against its max-min entitlement, Jain's index, makespan
#             (QOS_SHARE_POLICIES="psfa" runs only the policies named;
#             QOS_RELAY_GROUP sets AdafsQosRelayGroup for every part); a
#             run in which the machine starved a job (analyze.py: a job's
#             unhindered rate under 0.9 x its entitlement in a second the
#             figures count) is reported invalid and run again, up to
#             2 x RUNS tries
# Each part runs RUNS times (default 3); the figures of each run are JSON
# lines in $ADAFS_CLUSTER_DIR/bench/results, medians in doc/bench/qos.md.
# Run it under flock /tmp/adafs-bench.lock: the machine is shared.
set -u
here=$(cd "$(dirname "$0")" && pwd)
abs_top_srcdir=$(cd "$here/../.." && pwd)
. "$abs_top_srcdir/tests/lib.sh"
runs=${1:-3}
shift || true
parts=${*:-capacity static change share}
load=$ADAFS_BUILD_DIR/bench/qos/qosload
qos() { "$ADAFS_BUILD_DIR/qos/adafs-qos" --config "$ADAFS_CLUSTER_DIR/etc/burst_buffer.conf" "$@"; }
B=$ADAFS_CLUSTER_DIR
out=$B/bench
mkdir -p "$out"
results=$out/results
say() { echo "acceptance: $*" >&2; }

"$cluster" start --clean >/dev/null || { say "the mini-cluster did not start"; exit 1; }
# Jobs first: a job step outlives a stopped slurmd.
trap 'scancel -u "$test_user" 2>/dev/null; sleep 2; "$cluster" stop >/dev/null 2>&1' EXIT
mkdir -p "$out" && chmod 777 "$out"
as_user_sh "mkdir -p $pfs/bench"
conf() {  # conf KEY VALUE...: set QoS keys in burst_buffer.conf; qosd rereads it
    local f=$B/etc/burst_buffer.conf
    while [ $# -ge 2 ]; do sed -i "/^$1=/d" "$f"; [ -n "$2" ] && echo "$1=$2" >> "$f"; shift 2; done
}
conf AdafsQosPaths "$pfs" AdafsQosPeriod 1 AdafsQosMax "mdops=10000000,bw=100G"
# QOS_RELAY_GROUP: AdafsQosRelayGroup (unset: the default, 32: the 4
# nodes one group, relayed when 3 or more are busy; 2: two groups; 0: every
# node direct).
[ -n "${QOS_RELAY_GROUP:-}" ] && conf AdafsQosRelayGroup "$QOS_RELAY_GROUP"
scontrol reconfigure
"$cluster" start-qosd
sleep 1

# job NAME NODES PER_NODE DIRECTIVE COMMAND...: submits a job running
# PER_NODE copies of COMMAND on each node (one task per node forks them: the
# nodes have 2 CPUs, Slurm will not place more tasks); prints the id. "%p"
# in COMMAND's log name keeps the copies apart.
job() {
    local name=$1 nodes=$2 per=$3 directive=$4; shift 4
    write_job "$name.sh" >/dev/null <<JOB
#!/bin/bash
#SBATCH -N $nodes --ntasks-per-node=1 -t 30 -o $out/$name-%j.out
${directive}
srun bash -c 'for i in \$(seq $per); do $* & done; wait'
JOB
    submit "$name.sh"
}
finish() { for id; do wait_job "$id" COMPLETED 600 >/dev/null || say "job $id did not complete"; done; }
logs_of() { ls "$out/$1".*.log | tr '\n' ' '; }

capacity() {
    conf AdafsQosPolicy static AdafsQosDefault "" AdafsQosCapacity ""
    rm -f "$out"/cap*.log
    local a b
    a=$(job capstat 4 2 "" "$load stat $pfs/bench/c 14 $out/capstat.%r.%p.log")
    finish "$a"
    b=$(job capwrite 4 1 "" "$load write $pfs/bench/w.%r 14 $out/capwrite.%r.%p.log")
    finish "$b"
    local s w
    s=$(python3 "$here/analyze.py" static 1 $(logs_of capstat) | python3 -c 'import json,sys; d=json.load(sys.stdin); print(round(sum(d["windows"])/len(d["windows"])))')
    w=$(python3 "$here/analyze.py" static 1 $(logs_of capwrite) | python3 -c 'import json,sys; d=json.load(sys.stdin); print(round(sum(d["windows"])/len(d["windows"])))')
    echo "{\"part\":\"capacity\",\"stat_per_s\":$s,\"write_bytes_per_s\":$w}" | tee -a "$results"
    echo "$s $w" > "$out/capacity"
}

static_run() {
    conf AdafsQosPolicy static AdafsQosDefault "" AdafsQosCapacity ""
    rm -f "$out"/st*.log
    local a b
    a=$(job ststat 4 4 "#BB_ADAFS qos stat=1000" "$load stat $pfs/bench/s 43 $out/ststat.%r.%p.log")
    finish "$a"
    b=$(job stwrite 4 4 "#BB_ADAFS qos write=100M" "$load write $pfs/bench/sw.%r 43 $out/stwrite.%r.%p.log")
    finish "$b"
    echo "{\"part\":\"static\",\"class\":\"stat\",$(python3 "$here/analyze.py" static 1000 $(logs_of ststat) | cut -c2-)" | tee -a "$results"
    echo "{\"part\":\"static\",\"class\":\"write\",$(python3 "$here/analyze.py" static $((100 << 20)) $(logs_of stwrite) | cut -c2-)" | tee -a "$results"
}

change_run() {
    conf AdafsQosPolicy static AdafsQosDefault "" AdafsQosCapacity ""
    rm -f "$out"/ch*.log
    local a at
    a=$(job change 4 4 "#BB_ADAFS qos stat=1000" "$load stat $pfs/bench/x 30 $out/change.%r.%p.log")
    wait_job "$a" RUNNING 60 >/dev/null
    sleep 15
    at=$(date +%s.%N)
    qos set job "$a" stat=2000 >/dev/null
    finish "$a"
    echo "{\"part\":\"change\",$(python3 "$here/analyze.py" change 1000 2000 "$at" 1 $(logs_of change) | cut -c2-)" | tee -a "$results"
}

# share_run POLICY: the three jobs, each 2 processes on 1 node, demands
# 1:2:3 x capacity/4 (together 1.5 x capacity), arriving 20 s apart; the
# first works 70 s at its demand and idles from its 50th second for 10 s
# (while the other two ask 1.25 x capacity), the others 40 s. POLICY psfa,
# priority (static priority: Slurm priorities 3:2:1) or uniform (the
# priority policy with equal weights).
share_run() {
    local policy=$1 cap
    cap=$(awk '{ print int($1 / 2) }' "$out/capacity")
    local unit=$((cap / 4))
    case $policy in
        psfa) conf AdafsQosPolicy psfa AdafsQosWeight "" ;;
        *) conf AdafsQosPolicy priority AdafsQosWeight priority ;;
    esac
    # A job runs at the site default until qosd has measured it (a period
    # or two): a site keeps that default small against Max_R (here 2.5%,
    # so a job arriving adds at most that to one window).
    conf AdafsQosCapacity "stat=$cap" AdafsQosDefault "stat=$((cap / 40))"
    rm -f "$out"/sh*.log
    # The machine while the jobs run (load, runnable threads, /proc/stat's
    # CPU times: steal and niced builds), for analyze.py's report.
    ( while :; do
          read -r l1 _ _ rq _ < /proc/loadavg
          echo "$(date +%s) $l1 ${rq%/*} $(head -1 /proc/stat)"
          sleep 1
      done ) > "$out/machine.log" &
    local sampler=$!
    local ids=() specs=() k work idle idle_at
    for k in 1 2 3; do
        local per=$((unit * k / 2))
        work=40 idle="" idle_at=-1
        [ "$k" = 1 ] && work=70 idle="--idle 50:10" idle_at=50
        ids+=("$(job "sh$k" 1 2 "" "$load stat $pfs/bench/h$k 0 $out/sh$k.%r.%p.log --rate $per --ops $((per * work)) $idle")")
        if [ "$policy" != psfa ]; then
            local pr=$((4 - k))
            [ "$policy" = uniform ] && pr=1
            scontrol update jobid="${ids[-1]}" priority=$((pr * 1000)) >/dev/null 2>&1 ||
                say "could not set job ${ids[-1]}'s priority"
        fi
        specs+=("sh$k:$((unit * k)):$(( (k - 1) * 20 )):$idle_at:10")
        [ "$k" -lt 3 ] && sleep 20
    done
    finish "${ids[@]}"
    kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
    local with_logs=()
    for k in 1 2 3; do
        with_logs+=("${specs[k - 1]}:$(ls "$out"/sh$k.*.log | tr '\n' ',' | sed 's/,$//')")
    done
    local line
    line="{\"part\":\"share\",\"policy\":\"$policy\",$(python3 "$here/analyze.py" share "$cap" 1 "records=$B/qos/records.csv:$(IFS=,; echo "${ids[*]}")" "machine=$out/machine.log" "${with_logs[@]}" | cut -c2-)"
    echo "$line" | tee -a "$results"
    # Each run's logs and qosd's records kept apart, to find out afterwards
    # why a second fell short.
    local keep
    keep=$out/share-$policy-$(date -u +%H%M%S)
    mkdir -p "$keep" && cp "$out"/sh*.log "$out/machine.log" "$keep"/ && cp "$B/qos/records.csv" "$keep"/ 2>/dev/null
    cp "$B/qos/records.csv" "$out/records-$policy.csv" 2>/dev/null
    case $line in *'"valid": false'*) say "run invalid: the machine starved a job (starved_seconds)"; return 1 ;; esac
}

echo "# run of $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$results"
for part in $parts; do
    case $part in
        capacity) capacity ;;
        static|change)
            for _ in $(seq "$runs"); do "${part}_run"; done ;;
        share)
            [ -f "$out/capacity" ] || capacity
            # RUNS valid runs of each policy, at most 2 x RUNS tries: a run
            # the machine starved (analyze.py) does not count.
            declare -A valid=()
            for _ in $(seq $((2 * runs))); do
                for p in ${QOS_SHARE_POLICIES:-psfa priority uniform}; do
                    [ "${valid[$p]:-0}" -ge "$runs" ] && continue
                    share_run "$p" && valid[$p]=$((${valid[$p]:-0} + 1))
                done
            done ;;
    esac
done
