#!/bin/bash
# Security on the mini-cluster: agents take orders only from slurmctld's
# user (and the local Epilog), and one job's file system refuses every other
# user: its instance file is private, its mount point is closed, and its
# servers refuse a client without the instance's secret.
. "${abs_top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
require_cluster
probe=$ADAFS_BUILD_DIR/slurm-plugin/agent_probe
[ -x "$probe" ] || skip_all "agent_probe not built (make check builds it)"
other=adafs-test2
id -u "$other" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$other"

start_cluster
agent_port=$(agent_port_of 1)

out=$(runuser -u "$test_user" -- "$probe" 127.0.0.1 $agent_port start $munge_socket)
check "the agent refuses a session with an ordinary user ($out)" -- \
    bash -c "grep -q 'refused the handshake: node n1: uid $(id -u "$test_user") may not use the agent' <<<\"\$0\"" "$out"
out=$("$probe" 127.0.0.1 $agent_port release $munge_socket n1)
check "the Epilog's release is refused over the network ($out)" -- \
    bash -c "grep -q 'release is not allowed over the network' <<<\"\$0\"" "$out"
out=$("$probe" 127.0.0.1 $agent_port ping $munge_socket n2)
check "a session opened for another node is refused ($out)" -- \
    bash -c "grep -q 'refused the handshake: node n1: the hello is for node n2, this is n1' <<<\"\$0\"" "$out"
out=$("$probe" 127.0.0.1 $agent_port ping $munge_socket n1)
check "and for this node it is served ($out)" -- test "$out" = "status 0: ok"
out=$(runuser -u "$test_user" -- "$probe" 127.0.0.1 $agent_port ping /nonexistent/socket)
check "a request without a valid munge credential goes nowhere ($out)" -- \
    bash -c "grep -qi 'munge' <<<\"\$0\"" "$out"
check "the agent's local socket is root's only" -- \
    test "$(stat -c '%U %a' "$ADAFS_CLUSTER_DIR/run/agent.n1.sock")" = "root 600"

# A user process listening where an agent should be (the agent down, the
# port free) receives the plugin's hello; it must not be able to read it:
# the credential decodes for root only (that root, the agent, decodes it,
# every job of these tests shows). test_cluster_attacks.sh plays the whole
# attack against a job.
squat_port=$(( $(agent_port_of 1) + 998 )) cap=$(runuser -u "$other" -- mktemp /tmp/squat.XXXXXX)
runuser -u "$other" -- python3 - "$squat_port" "$cap" <<'PY' &
import re, socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(1)
s.settimeout(20)
c, _ = s.accept()
c.settimeout(5)
data = b""
while not re.search(rb"MUNGE:[A-Za-z0-9+/=]+:", data):
    d = c.recv(65536)
    if not d:
        break
    data += d
open(sys.argv[2], "wb").write(data)
PY
squatter=$!
sleep 1
"$probe" 127.0.0.1 $squat_port start $munge_socket >/dev/null 2>&1
wait $squatter
cred=$(grep -ao 'MUNGE:[A-Za-z0-9+/=]*:' "$cap" | head -1)
check "a process on the agent's port receives a munge credential" -- test -n "$cred"
out=$(runuser -u "$other" -- unmunge --socket "$munge_socket" <<<"$cred" 2>&1)
check "it cannot decode it: only root may ($(head -1 <<<"$out"))" -- \
    bash -c "grep -qi 'unauthorized' <<<\"\$0\"" "$out"
rm -f "$cap"

id=$(submit_victim sec "data of $test_user" 120)
check "the victim job runs on its file system" -- wait_file "$pfs/sec/started"
mount=$ADAFS_CLUSTER_DIR/mnt/$id
instance=$ADAFS_CLUSTER_DIR/mnt/.job.$id.instance
check "the instance file is the job user's, mode 600" -- \
    test "$(stat -c '%U %a' "$instance")" = "$test_user 600"
check "another user cannot read the instance file" -- \
    bash -c "! runuser -u $other -- cat $instance >/dev/null 2>&1"
check "another user cannot enter the mount point" -- \
    bash -c "! runuser -u $other -- ls $mount >/dev/null 2>&1"
state=$ADAFS_CLUSTER_DIR/state/adafs_state
check "slurmctld's state file, which holds the jobs' secrets, is mode 600" -- \
    test "$(stat -c %a "$state")" = 600

# Another user who knows the servers' addresses, with a secret of their own.
forged=$(runuser -u "$other" -- mktemp /tmp/forged.XXXXXX)
{ grep -v '^secret=' "$instance"; echo "secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"; } |
    runuser -u "$other" -- tee "$forged" >/dev/null
chmod 600 "$forged"
preload=$ADAFS_BUILD_DIR/agent/.libs/libadafs_preload.so
out=$(runuser -u "$other" -- env ADAFS_INSTANCE="$forged" ADAFS_MOUNT="$mount" LD_PRELOAD="$preload" \
      cat "$mount/secret.txt" 2>&1)
status=$?
check "a client with a forged secret is refused by the servers ($out)" -- \
    bash -c "[ $status -ne 0 ] && ! grep -q 'data of' <<<\"\$0\"" "$out"
out=$(runuser -u "$test_user" -- env ADAFS_INSTANCE="$instance" ADAFS_MOUNT="$mount" LD_PRELOAD="$preload" \
      cat "$mount/secret.txt" 2>&1)
check "the job's own user reads it with the real instance file" -- \
    test "$out" = "data of $test_user"
rm -f "$forged"
set_bb_conf Flags PrivateData >/dev/null
sleep 1
out=$(runuser -u "$other" -- env SLURM_CONF="$SLURM_CONF" scontrol show bbstat 2>&1)
check "Flags=PrivateData: bbstat shows no job's user, servers or errors ($(head -c 80 <<<"$out"))" -- \
    bash -c "grep -q 'per-job status is private' <<<\"\$0\" && ! grep -q 'JobId=\|Servers=' <<<\"\$0\"" "$out"
set_bb_conf Flags "" >/dev/null
sleep 1
scancel "$id"
check "after the job: nothing is left, data wiped" -- wait_clean 60

# The per-node share is checked again when the nodes are known: a job
# shrunk after submit (its owner may) cannot take more of one node than
# AdafsNodeCapacity (4G here), and is held saying so.
write_job big.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 2 -t 5 -o big-%j.out
#BB_ADAFS capacity=8G
true
JOB
id=$(submit -H big.sh)
as_user scontrol update jobid="$id" NumNodes=1-1
as_user scontrol release "$id"
for _ in $(seq 60); do job_field "$id" Reason | grep -q AdafsNodeCapacity && break; sleep 0.5; done
reason=$(job_field "$id" Reason)
check "a job shrunk to one node after submit is refused at begin ($reason)" -- \
    bash -c "grep -q 'needs_8589934592_bytes_per_node,_more_than_AdafsNodeCapacity' <<<\"\$0\"" "$reason"
check "and held (priority 0), still pending" -- \
    test "$(job_state "$id") $(job_field "$id" Priority)" = "PENDING 0"
scancel "$id"
# 2^64-1 bytes over 2 nodes: (capacity + nodes - 1) / nodes once wrapped to
# a share of 0, which the servers take for "no quota" (and no store of its
# own): the job could fill the node's disk.
write_job huge.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 2 -t 5 -o huge-%j.out
#BB_ADAFS capacity=18014398509481983.999999K
true
JOB
out=$(submit -H huge.sh 2>&1)
status=$?
check "a capacity of 2^64-1 bytes is refused at submit, not a share of 0 ($out)" -- \
    bash -c "[ $status -ne 0 ] && grep -q 'on each of the job.s 2 node(s), more than .* (AdafsNodeCapacity)' <<<\"\$0\"" "$out"
[ $status -eq 0 ] && scancel "$out"

# The servers and the stager run with the job's group: never root's.
out=$(cd "$ADAFS_CLUSTER_DIR/jobs" && sbatch --parsable --uid="$test_user" --gid=0 victim-sec.sh 2>&1)
status=$?
check "a job with group root is refused at submit ($out)" -- \
    bash -c "[ $status -ne 0 ] && grep -q 'group root (gid 0) can not use adafs' <<<\"\$0\"" "$out"
# Nor with group root among the user's other groups (the agent would
# refuse to start its servers on every node).
rooted=adafs-test3
id -u "$rooted" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash -G root "$rooted"
out=$(cd "$ADAFS_CLUSTER_DIR/jobs" && sbatch --parsable --uid="$rooted" --gid="$rooted" victim-sec.sh 2>&1)
status=$?
check "a user in group root is refused at submit ($out)" -- \
    bash -c "[ $status -ne 0 ] && grep -q 'user $rooted is a member of group root (gid 0)' <<<\"\$0\"" "$out"
tap_done
