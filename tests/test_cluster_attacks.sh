#!/bin/bash
# Attacks on the node agents by an unprivileged user (adafs-test2) against
# a job of another (adafs-test, the victim), on the mini-cluster. Each
# asserts that nothing was read, crashed, drained or exhausted:
#   - a flood of empty and bogus credentials (the agent survives, its log
#     stays small);
#   - 80 idle connections held open on each agent of a job (the plugin's
#     requests are still served: no drain, the job runs);
#   - the job's own user killing their server while it starts (no drain:
#     tried again, then held);
#   - a process on an agent's port while the agent is down, answering as
#     if it were the agent (it learns nothing, blames no node, the job is
#     held saying why; the agent cannot start until the port is free);
#   - what a job's user can see of the agent: its children's environment
#     and its logs.
. "${abs_top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
require_cluster
client=$ADAFS_BUILD_DIR/agent/tests/agentd_client
probe=$ADAFS_BUILD_DIR/slurm-plugin/agent_probe
[ -x "$client" ] && [ -x "$probe" ] || skip_all "agentd_client or agent_probe not built (make check builds them)"
attacker=adafs-test2
id -u "$attacker" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$attacker"
python=/usr/bin/python3
# As the attacker or the victim; in the background "${attacker_[@]}" CMD &
# so that $! is the process itself.
as() { local u=$1; shift; setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups "$@"; }
attacker_=(setpriv --reuid="$attacker" --regid="$(id -g "$attacker")" --init-groups)
victim_=(setpriv --reuid="$test_user" --regid="$(id -g "$test_user")" --init-groups)

start_cluster
log=$ADAFS_CLUSTER_DIR/log
port1=$(agent_port_of 1) port2=$(agent_port_of 2)
undrained() { ! sinfo -h -o '%t' | grep -q drain; }
held() { wait_job "$1" PENDING 30 && [ "$(job_field "$1" Priority)" = 0 ]; }
agent_pid() { cat "$ADAFS_CLUSTER_DIR/run/agent.n$1.pid" 2>/dev/null; }
work=$(as "$attacker" mktemp -d /tmp/attacker.XXXXXX)
trap '"$cluster" stop >/dev/null 2>&1; rm -rf "$work"' EXIT
as_user_sh "mkdir -p $pfs/atk"

# --- 1. 32 clients sending empty and bogus credentials for 15 s ---------
pid_before=$(agent_pid 1)
size_before=$(stat -c %s "$log/agent.n1.log")
lines_before=$(wc -l < "$log/agent.n1.log")
"${attacker_[@]}" "$client" 127.0.0.1 "$port1" bogus 32 15 > "$work/flood" &
flooder=$!
sleep 5
out=$("$probe" 127.0.0.1 "$port1" ping "$munge_socket" n1)
check "during the flood, slurmctld's kind of request is still served ($out)" -- test "$out" = "status 0: ok"
wait "$flooder"
check "the flood ran ($(cat "$work/flood"))" -- grep -q "bogus hellos sent" "$work/flood"
check "the agent survived it (pid $pid_before)" -- \
    bash -c "[ '$(agent_pid 1)' = '$pid_before' ] && kill -0 $pid_before"
out=$("$probe" 127.0.0.1 "$port1" ping "$munge_socket" n1)
check "and serves ($out)" -- test "$out" = "status 0: ok"
sleep 11   # the last window's summary
grown=$(( $(stat -c %s "$log/agent.n1.log") - size_before ))
lines=$(( $(wc -l < "$log/agent.n1.log") - lines_before ))
check "its log grew by $grown bytes, $lines lines for the flood: bounded" -- \
    test "$grown" -lt 30000 -a "$lines" -lt 100
check "the flood left no node drained" -- undrained

# --- 2. 80 idle connections held on each agent of a job ----------------
"${attacker_[@]}" "$client" 127.0.0.1 "$port1" occupy 80 60 > "$work/occupy1" &
occupier1=$!
"${attacker_[@]}" "$client" 127.0.0.1 "$port2" occupy 80 60 > "$work/occupy2" &
occupier2=$!
sleep 2
rm -f "$pfs/atk/started"
write_job crowded.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 2 -w n1,n2 -t 5 -o crowded-%j.out
#BB_ADAFS capacity=1G
echo "data of $test_user" > \$ADAFS_MOUNT/private.txt
touch $pfs/atk/started
sleep 8
cat \$ADAFS_MOUNT/private.txt
JOB
id=$(submit crowded.sh)
check "with 80 idle connections on each of its agents, the victim's job runs" -- wait_job "$id" RUNNING 60
for _ in $(seq 60); do [ -e "$pfs/atk/started" ] && break; sleep 0.5; done

# While it runs: what its user (or anyone) can see of the agent.
server=$(cat "$ADAFS_CLUSTER_DIR"/storage/n1/job."$id".pid 2>/dev/null)
names=$(tr '\0' '\n' < "/proc/$server/environ" 2>/dev/null | sed 's/=.*//' |
        grep -vE '^(ASAN|UBSAN|LSAN|TSAN)_OPTIONS$' | sort | tr '\n' ' ')
check "its server's environment is only PATH, HOME, USER, LOGNAME, LANG ($names)" -- \
    test "$names" = "HOME LANG LOGNAME PATH USER "
home=$(getent passwd "$test_user" | cut -d: -f6)
check "HOME is the job user's ($home), PATH the stated one, nothing of root's" -- \
    bash -c "tr '\\0' '\\n' < /proc/$server/environ | grep -qx 'HOME=$home' &&
             tr '\\0' '\\n' < /proc/$server/environ | grep -qx 'PATH=/usr/local/bin:/usr/bin:/bin' &&
             ! tr '\\0' '\\n' < /proc/$server/environ | grep -q '/root'"
check "the agent's log is root's alone (mode 600)" -- \
    test "$(stat -c '%U %a' "$log/agent.n1.log")" = "root 600"
as "$attacker" cat "$log/agent.n1.log" >/dev/null 2>&1
ok $(( $? == 0 )) "another user cannot read it"
check "the server's log is root's alone (mode 600)" -- \
    test "$(stat -c '%U %a' "$ADAFS_CLUSTER_DIR/adafs-log/adafsd.job$id.n1.log")" = "root 600"

check "the crowded job completes" -- wait_job "$id" COMPLETED 90
check "and read its own data back" -- \
    bash -c "grep -qx 'data of $test_user' $ADAFS_CLUSTER_DIR/jobs/crowded-$id.out"
kill "$occupier1" "$occupier2" 2>/dev/null
wait "$occupier1" "$occupier2" 2>/dev/null
check "the idle connections were evicted as the plugin came" -- \
    grep -q "unauthenticated connections (16 from its address): evicted the oldest idle one" "$log/agent.n1.log"
check "no node was drained for them" -- undrained
check "nothing of the job is left" -- wait_clean 60

# --- 3. the job's own user kills their server while it starts -----------
write_job own.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 1 -w n1 -t 5 -o own-%j.out
#BB_ADAFS capacity=1G
echo ran
JOB
id=$(submit own.sh)
# Where the victim's killer sees it (the attacker's $work is 0700: there
# the killer never saw it and ran its whole 90 s).
stop=$pfs/atk/stop-killing
rm -f "$stop"
# Every adafsd of the job that is not ready yet (no pid file), killed.
"${victim_[@]}" "$python" - "$ADAFS_CLUSTER_DIR/storage/n1/job.$id" "$stop" 90 > "$work/killed" <<'PY' &
import os, sys, time
root, stop, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
uid, killed, end = os.getuid(), 0, time.time() + seconds
while time.time() < end and not os.path.exists(stop):
    if os.path.exists(root + ".pid"):
        time.sleep(0.01)
        continue
    for p in os.listdir("/proc"):
        try:
            if not p.isdigit() or os.stat("/proc/" + p).st_uid != uid:
                continue
            argv = open("/proc/%s/cmdline" % p, "rb").read().split(b"\0")
            if argv[0].endswith(b"adafsd") and root.encode() in argv:
                os.kill(int(p), 9)
                killed += 1
        except OSError:
            pass
print(killed)
PY
killer=$!
check "a job whose user kills their server as it starts: tried again, then held saying why" -- \
    wait_reason "$id" "node n1: job $id: server did not start.*held after 4 attempts; no node drained" 120
: > "$stop"
wait "$killer"
check "(its user killed $(cat "$work/killed") starting servers)" -- test "$(cat "$work/killed")" -ge 4
check "no node was drained for it" -- undrained
# (Its nodes are given back first: COMPLETING for a moment.)
check "held (priority 0), not requeued by a node failure" -- held "$id"
check "the plugin said it would try again" -- grep -q "job $id: node n1: job $id: server did not start.*trying again in 5 s" "$log/slurmctld.log"
# Held by the plugin (an admin hold): the admin releases it; Slurm would
# start a requeued job only after the credential lifetime: now, for the test.
scontrol release "$id"
start_now "$id"
check "released, it runs to the end" -- wait_job "$id" COMPLETED 120
check "nothing of it is left" -- wait_clean 60

# --- 4. a process on an agent's port while the agent is down ------------
"$cluster" stop-agent 1
"${attacker_[@]}" "$python" - "$port1" "$work/heard" 150 <<'PY' &
import socket, struct, sys, time
port, heard, seconds = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(16)
s.settimeout(0.5)
out = open(heard, "ab")
# Answers every hello as an agent refusing it would, blaming its node.
lie = b"node n1: storage root unusable: drain this node\0"
# The RPC header (common/rpc.h, version 2): 24 bytes, the payload's length at 16.
reply = struct.pack("<IHHQIi", 0x53464441, 2, 0x100, 0, 4 + len(lie), -5) + \
        struct.pack("<I", len(lie)) + lie
end = time.time() + seconds
while time.time() < end:
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    c.settimeout(2)
    data = b""
    try:
        while len(data) < 24 or len(data) < 24 + struct.unpack_from("<I", data, 16)[0]:
            d = c.recv(65536)
            if not d:
                break
            data += d
        out.write(data)
        out.flush()
        c.sendall(reply)
    except Exception:
        pass
    c.close()
PY
squatter=$!
for _ in $(seq 50); do grep -q ":$(printf %04X "$port1") 00000000:0000 0A" /proc/net/tcp && break; sleep 0.1; done
out=$("$cluster" start-agents 2>&1)
check "the agent cannot start while a user holds its port ($(grep -o 'port [0-9]* is held[^:]*' <<<"$out"))" -- \
    bash -c "grep -qF 'port $port1 is held by another process, uid $(id -u $attacker) ($attacker)' <<<\"\$0\"" "$out"

write_job squat.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 1 -w n1 -t 5 -o squat-%j.out
#BB_ADAFS capacity=1G
echo "ran on its own file system" > \$ADAFS_MOUNT/proof.txt && cat \$ADAFS_MOUNT/proof.txt
JOB
id=$(submit squat.sh)
check "the plugin believes nothing the squatter says: the job is held, naming the node and why" -- \
    wait_reason "$id" "node n1: agent 127.0.0.1:$port1 refused the handshake: .*unauthenticated answer.*held after 4 attempts; no node drained" 150
check "no node was drained (the squatter blamed n1)" -- undrained
check "held (priority 0)" -- held "$id"
kill "$squatter" 2>/dev/null
wait "$squatter" 2>/dev/null
cred=$(grep -ao 'MUNGE:[A-Za-z0-9+/=]*:' "$work/heard" | head -1)
check "the squatter heard $(grep -ao 'MUNGE:' "$work/heard" | wc -l) hellos" -- test -n "$cred"
out=$(as "$attacker" unmunge --socket "$munge_socket" <<<"$cred" 2>&1)
check "none of which it can open ($(head -1 <<<"$out"))" -- bash -c "grep -qi 'unauthorized' <<<\"\$0\"" "$out"
# The job's saved record (bb_job.c: "ABJR", its id, then typed fields)
# holds its secret as 64 hex digits.
secret=$("$python" - "$ADAFS_CLUSTER_DIR/state/adafs_state" "$id" <<'PY'
import re, struct, sys
data = open(sys.argv[1], 'rb').read()
at = data.find(b'ABJR' + struct.pack('<I', int(sys.argv[2])))
end = data.find(b'ABJR', at + 4)
m = re.search(rb'[0-9a-f]{64}', data[at:end if end > 0 else len(data)]) if at >= 0 else None
print(m.group(0).decode() if m else '')
PY
)
check "the job's secret is nowhere in what it heard" -- \
    bash -c "[ -n '$secret' ] && ! grep -qF '$secret' $work/heard"
check "no instance file was written for the job" -- test ! -e "$ADAFS_CLUSTER_DIR/mnt/.job.$id.instance"
check "once the port is free, the agent starts" -- "$cluster" start-agents
scontrol release "$id"
start_now "$id"
check "and the released job runs on its own file system" -- wait_job "$id" COMPLETED 120
check "(its output: $(cat "$ADAFS_CLUSTER_DIR/jobs/squat-$id.out" 2>/dev/null))" -- \
    grep -qx "ran on its own file system" "$ADAFS_CLUSTER_DIR/jobs/squat-$id.out"
check "no node drained at the end" -- undrained
check "nothing is left" -- wait_clean 60
tap_done
