#!/bin/bash
# I/O quality of service on the mini-cluster: real jobs (with a burst
# buffer, QoS only, and none at all) whose processes run the load program
# bench/qos/qosload under the interposer, adafs-qosd beside slurmctld, the
# agents as local controllers. Checks limits reaching every process, one
# budget per job per node, a change at run time, bbstat, the stager's
# charge, and every failure: adafs-qosd killed mid-run, an agent gone,
# messages refused, malformed directives.
. "${abs_top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
require_cluster
load=$ADAFS_BUILD_DIR/bench/qos/qosload
qos() { "$ADAFS_BUILD_DIR/qos/adafs-qos" --config "$ADAFS_CLUSTER_DIR/etc/burst_buffer.conf" "$@"; }
[ -x "$load" ] || skip_all "bench/qos/qosload not built"

start_cluster
B=$ADAFS_CLUSTER_DIR
as_user_sh "mkdir -p $pfs/q/a $pfs/q/b $pfs/q/c $pfs/q/d $pfs/q/in && head -c 24000000 /dev/urandom > $pfs/q/in/big"
for kv in "AdafsQosPaths=$pfs" "AdafsQosPolicy=static" "AdafsQosDefault=stat=300" \
          "AdafsQosMax=mdops=50000,bw=1G" "AdafsQosPeriod=0.5" "AdafsQosAgentTimeout=2"; do
    echo "$kv" >> "$B/etc/burst_buffer.conf"
done
scontrol reconfigure
check "adafs-qosd starts when burst_buffer.conf sets AdafsQosPaths" -- "$cluster" start-qosd

# rate FROM TO FILES...: operations per second summed over FILES (qosload
# logs, "UNIXTIME COUNT" lines), averaged over seconds [FROM, TO).
rate() {
    local a=$1 b=$2; shift 2
    cat "$@" 2>/dev/null | awk -v a="$a" -v b="$b" '$1 ~ /^[0-9]/ && $1 >= a && $1 < b { s += $2 } END { printf "%.0f", s / (b - a) }'
}
first_second() { cat "$@" 2>/dev/null | awk '$1 ~ /^[0-9]/ && (!m || $1 < m) { m = $1 } END { print m }'; }
within() {  # within VALUE WANT PERCENT
    awk -v v="$1" -v w="$2" -v p="$3" 'BEGIN { exit !(v >= w * (1 - p / 100) && v <= w * (1 + p / 100)) }'
}
logs() { ls "$B/jobs/$1".*.log 2>/dev/null; }

# --- 1. a job without a burst buffer, under the static default ------------
write_job plain.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 2 --ntasks-per-node=2 -t 5 -o plain-%j.out
srun $load stat $pfs/q/a 9 $B/jobs/plain.%r.log
JOB
id=$(submit plain.sh)
check "a job without a burst buffer runs" -- wait_job "$id" COMPLETED 60
t0=$(first_second $(logs plain))
r=$(rate $((t0 + 3)) $((t0 + 8)) $(logs plain))
check "its 4 processes on 2 nodes share the default 300 stats/s per node: $r/s (600 due, +-10%)" -- \
    within "$r" 600 10
r0=$(rate $((t0 + 3)) $((t0 + 8)) "$B/jobs/plain.0.log")
r1=$(rate $((t0 + 3)) $((t0 + 8)) "$B/jobs/plain.1.log")
check "one budget per node: either process may take the node's share ($r0 + $r1 on the first node)" -- \
    within "$((r0 + r1))" 300 12

# --- 2. a QoS-only job: its own limit, changed at run time, in bbstat ------
write_job asks.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 2 --ntasks-per-node=2 -t 5 -o asks-%j.out
#BB_ADAFS qos stat=200
test -z "\$ADAFS_MOUNT" && echo "no file system"
srun $load stat $pfs/q/b 14 $B/jobs/asks.%r.log
JOB
# Edited while adafs-qosd runs: it rereads the file and must still reach
# the agents (their sessions keep the munge socket it started with).
sed -i '1a # edited while adafs-qosd runs' "$B/etc/burst_buffer.conf"
id=$(submit asks.sh)
check "a job asking for QoS only runs" -- wait_job "$id" RUNNING 60
sleep 5
out=$(scontrol show bbstat "$id")
check "bbstat shows its limit and usage per class ($(echo "$out" | grep -m1 'stat:'))" -- \
    eval 'echo "$out" | grep -q "stat: Asked=200 .*Limit=.*Usage="'
changed=$(date +%s)
qos set job "$id" stat=800 >/dev/null
sleep 1
check "adafs-qos status shows the new limit" -- eval "qos status | grep -q ' $id .*stat .* 800 '"
check "adafs-qos names a mistyped command" -- eval "qos stauts 2>&1 | grep -q \"unknown command 'stauts'\""
wait_job "$id" COMPLETED 60 >/dev/null
check "it got no file system" -- grep -q "no file system" "$B/jobs/asks-$id.out"
t0=$(first_second $(logs asks))
r=$(rate $((t0 + 2)) $((changed - 1)) $(logs asks))
check "its 4 processes held the 200 stats/s it asked: $r/s (+-10%)" -- within "$r" 200 10
r=$(rate $((changed + 1)) $((changed + 5)) $(logs asks))
check "the limit set at run time reached every process within 2 periods: $r/s (800 due, +-10%)" -- \
    within "$r" 800 10
# After the rates' window: a set, even for another job, pushes limits at once.
check "adafs-qos set job without limits says what is missing" -- \
    eval "qos set job $id 2>&1 | grep -q 'expected JOBID and LIMITS'"
check "a refused capacity names the bad rate, not 'no class given'" -- \
    eval "qos set capacity stat=10k 2>&1 | grep -q \"refused by adafs-qosd: capacity stat=10k: invalid rate '10k'\""
check "limits for a job not under QoS are set with a warning" -- \
    eval "qos set job 4000000000 stat=10 | grep -q 'not under QoS now'"
qos set job 4000000000 clear >/dev/null
check "adafs-qosd reread burst_buffer.conf edited at run time and kept reaching the agents" -- \
    eval "grep -q 'settings from' '$B/log/qosd.log' && ! grep 'munge' '$B/log/qosd.log'"

# --- 3. adafs-qosd killed mid-run: fail-static; restarted from its state ---
write_job still.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 2 --ntasks-per-node=2 -t 5 -o still-%j.out
#BB_ADAFS qos stat=200
srun $load stat $pfs/q/c 30 $B/jobs/still.%r.log
JOB
id=$(submit still.sh)
wait_job "$id" RUNNING 60 >/dev/null
sleep 4
"$cluster" kill-qosd
killed=$(date +%s)
write_job late.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 1 --ntasks-per-node=2 -t 5 -o late-%j.out
srun $load stat $pfs/q/d 6 $B/jobs/late.%r.log
JOB
late=$(submit late.sh)
check "with adafs-qosd down a new job runs, nothing blocks" -- wait_job "$late" COMPLETED 60
sleep 1
"$cluster" start-qosd
restarted=$(date +%s)
check "the restarted adafs-qosd restores its saved state" -- \
    grep -q "state of cycle [0-9]* restored" "$B/log/qosd.log"
wait_job "$id" COMPLETED 60 >/dev/null
r=$(rate $((killed + 1)) $((restarted - 1)) $(logs still))
check "while adafs-qosd was down the job kept its 200 stats/s: $r/s (+-10%)" -- within "$r" 200 10
r=$(rate $((restarted + 1)) $((restarted + 5)) $(logs still))
check "and after the restart too: $r/s (+-10%)" -- within "$r" 200 10
t0=$(first_second $(logs late))
r=$(rate $((t0 + 1)) $((t0 + 5)) $(logs late))
check "the new job ran at the static default of 300/s per node: $r/s (+-10%)" -- within "$r" 300 10

# --- 4. an agent gone: its node leaves the sums, its jobs go on ------------
write_job gone.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 2 -w n1,n2 --ntasks-per-node=1 -t 5 -o gone-%j.out
#BB_ADAFS qos stat=400
srun $load stat $pfs/q/a 12 $B/jobs/gone.%r.log
JOB
id=$(submit gone.sh)
wait_job "$id" RUNNING 60 >/dev/null
sleep 3
"$cluster" stop-agent 2
sleep 4
out=$(qos status)
check "after the agent timeout its node no longer reports ($(echo "$out" | grep " $id " | head -1))" -- \
    eval "echo \"\$out\" | grep -q ' $id .* 1/2 '"
check "adafs-qosd logged the silent agent once" -- \
    test "$(grep -c 'node n2: agent' "$B/log/qosd.log")" = 1
# Back while the job runs (qosd tries a node it cannot reach every 5 s,
# and a node without jobs not at all).
"$cluster" start-agents
check "the job still completes" -- wait_job "$id" COMPLETED 60
check "and the agent is logged back" -- bash -c \
    "for i in \$(seq 30); do grep -q 'node n2: agent answers again' '$B/log/qosd.log' && exit 0; sleep 0.5; done; exit 1"

# --- 5. the stager is charged to the job's budget -------------------------
as_user_sh "head -c 40000000 /dev/urandom > $pfs/q/in/big"
write_job staged.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 1 -t 5 -o staged-%j.out
#BB_ADAFS capacity=1G
#BB_ADAFS qos read=8M
#BB_ADAFS stage_in source=$pfs/q/in destination=in type=directory
cmp $pfs/q/in/big \$ADAFS_MOUNT/in/big && echo same
JOB
id=$(submit staged.sh)
wait_job "$id" COMPLETED 120 >/dev/null
check "the staged job ran" -- grep -q same "$B/jobs/staged-$id.out"
staged=$(scontrol show bbstat "$id" | sed -n 's/.*StageIn: .*Seconds=\([0-9.]*\).*/\1/p' | head -1)
check "the stage-in was held to the job's 8M/s: ${staged}s for 40 MB" -- \
    awk -v s="${staged:-0}" 'BEGIN { exit !(s >= 3.5) }'
# Its records: usage (bytes/s) per period of 0.5 s; the stage-in and cmp
# each read 40 MB.
read_total=$(awk -F, -v j="$id" '$3 == j && $4 == "read" { s += $8 * 0.5 } END { printf "%.0f", s }' \
             "$B/qos/records.csv")
check "adafs-qosd counted the stage-in's reads as the job's: $read_total bytes" -- \
    awk -v v="$read_total" 'BEGIN { exit !(v >= 40000000 * 0.8) }'

# --- 7. through relays (AdafsQosRelayGroup=2: n1-n2 and n3-n4) -------------
# A 4-node job: qosd sends each group's relay one message for both nodes;
# a limit changed at run time reaches every process within 2 periods; the
# relay's agent killed mid-run: the group is served directly, a new relay
# named, and a limit changed afterwards still reaches every process.
echo "AdafsQosRelayGroup=2" >> "$B/etc/burst_buffer.conf"
write_job relayed.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 4 -w n1,n2,n3,n4 --ntasks-per-node=2 -t 5 -o relayed-%j.out
#BB_ADAFS qos stat=400
srun $load stat $pfs/q/b 30 $B/jobs/relayed.%r.log
JOB
id=$(submit relayed.sh)
wait_job "$id" RUNNING 60 >/dev/null
sleep 6
check "qosd names a relay in each group of 2 nodes" -- bash -c \
    "grep -q 'group n1-n2: the agent of n1 relays for it' '$B/log/qosd.log' &&
     grep -q 'group n3-n4: the agent of n3 relays for it' '$B/log/qosd.log'"
check "and the relays' agents take their groups" -- bash -c \
    "grep -q 'relay for a group of 2 nodes (n1-n2' '$B/log/agent.n1.log' &&
     grep -q 'relay for a group of 2 nodes (n3-n4' '$B/log/agent.n3.log'"
changed=$(date +%s)
qos set job "$id" stat=800 >/dev/null
sleep 5
"$cluster" stop-agent 1
killed=$(date +%s)
sleep 5
check "the dead relay's group was served directly, then n2 named its relay" -- bash -c \
    "grep -q 'group n1-n2: served directly' '$B/log/qosd.log' &&
     grep -q 'group n1-n2: the agent of n2 relays for it' '$B/log/qosd.log'"
changed2=$(date +%s)
qos set job "$id" stat=1200 >/dev/null
sleep 5
"$cluster" start-agents
check "the relayed job completes" -- wait_job "$id" COMPLETED 60
t0=$(first_second $(logs relayed))
r=$(rate $((t0 + 2)) $((changed - 1)) $(logs relayed))
check "the job's 8 processes on 4 nodes held its 400 stats/s through the relays: $r/s (+-10%)" -- \
    within "$r" 400 10
r=$(rate $((changed + 1)) $((killed - 1)) $(logs relayed))
check "a limit set at run time reached every process through the relays within 2 periods: $r/s (800 due, +-10%)" -- \
    within "$r" 800 10
# n1's processes keep the limits their dead agent last set (fail-static);
# the job's limit is shared by the nodes that report: n2-n4's 6 processes.
others=$(for r in 2 3 4 5 6 7; do echo "$B/jobs/relayed.$r.log"; done)
r=$(rate $((changed2 + 1)) $((changed2 + 5)) $others)
check "after the relay died a limit set at run time reached every process on n2-n4 within 2 periods: $r/s (1200 due, +-10%)" -- \
    within "$r" 1200 10

# --- 6. refusals -----------------------------------------------------------
printf '#!/bin/bash\n#SBATCH -N 1\n#BB_ADAFS qos stat=lots\ntrue\n' > "$B/jobs/bad1.sh"
out=$(submit "$B/jobs/bad1.sh" 2>&1)
check "sbatch refuses a malformed qos line, naming the token and line ($out)" -- \
    eval 'echo "$out" | grep -q "line 3): qos: invalid rate .lots. for stat"'
printf '#!/bin/bash\n#SBATCH -N 1\n#BB_ADAFS qos stat=60000\ntrue\n' > "$B/jobs/bad2.sh"
out=$(submit "$B/jobs/bad2.sh" 2>&1)
check "and one above AdafsQosMax ($out)" -- \
    eval 'echo "$out" | grep -q "(batch script line 3): qos: stat=60000 is above the site.s maximum stat=50000 (AdafsQosMax)"'
out=$(as_user "$ADAFS_BUILD_DIR/qos/adafs-qos" --config "$B/etc/burst_buffer.conf" status 2>&1)
check "a user may not talk to adafs-qosd's socket ($out)" -- eval 'echo "$out" | grep -q "cannot reach\|Permission denied\|only root"'
out=$(runuser -u "$test_user" -- env SLURM_CONF="$SLURM_CONF" ADAFS_TEST_MUNGE_SOCKET="$munge_socket" \
      ADAFS_TEST_SEAL_NODE=n1 "$ADAFS_BUILD_DIR/agent/tests/agentd_client" 127.0.0.1 "$(agent_port_of 1)" \
      qos "99:1000:stat=1" 2>&1)
check "a user cannot send an agent limits ($out)" -- eval 'echo "$out" | grep -q "may not use the agent"'
out=$(runuser -u "$test_user" -- env SLURM_CONF="$SLURM_CONF" ADAFS_TEST_MUNGE_SOCKET="$munge_socket" \
      ADAFS_TEST_SEAL_NODE=n1 "$ADAFS_BUILD_DIR/agent/tests/agentd_client" 127.0.0.1 "$(agent_port_of 1)" \
      qosgroup "99:1000:stat=1" 2>&1)
check "nor make it a relay (a group of one, itself: AGENT_QOS_GROUP) ($out)" -- \
    eval 'echo "$out" | grep -q "may not use the agent"'
out=$(env SLURM_CONF="$SLURM_CONF" ADAFS_TEST_MUNGE_SOCKET="$munge_socket" ADAFS_TEST_SEAL_NODE=n1 \
      "$ADAFS_BUILD_DIR/agent/tests/agentd_client" 127.0.0.1 "$(agent_port_of 1)" qosgroup "99:1000:stat=1" 2>&1)
check "root on a node cannot make an agent a relay: only SlurmUser's adafs-qosd ($out)" -- \
    eval 'echo "$out" | grep -q "only SlurmUser.s (uid [0-9]*) adafs-qosd makes this agent a relay"'
check "adafs-qosd logged no error of its own" -- bash -c "! grep -q ': error: ' '$B/log/qosd.log'"
png=$B/jobs/qos.png
check "adafs-qos plot draws the records" -- qos plot --class stat -o "$png"
check "as a PNG" -- bash -c "file '$png' | grep -q 'PNG image'"

tap_done
