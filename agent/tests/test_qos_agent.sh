#!/bin/bash
# test_qos_agent.sh: I/O quality of service on one node: the agent (as
# root, with its own munged) as local controller, driven by agentd_client
# as adafs-qosd drives it, and real programs under the interposer as a job
# user, with a directory standing for the parallel file system. Checks
# the classification of each call, the shared budget, the static default
# while the agent cannot give one, and the refusals. Needs root and
# munged; skips otherwise.
set -u
builddir=${abs_builddir:-$(pwd)}
client=$builddir/tests/agentd_client
agentd=$builddir/adafs-agentd
preload=${ADAFS_TEST_PRELOAD:-$builddir/.libs/libadafs_preload.so}
. "${srcdir:-.}/tests/agentd_common.sh"

[ "$(id -u)" = 0 ] || skip_all "needs root (the agent runs as root)"
command -v munged >/dev/null && id munge >/dev/null 2>&1 || skip_all "needs munged and the munge user"
command -v setpriv >/dev/null || skip_all "needs setpriv"
[ -x "$client" ] && [ -x "$agentd" ] && [ -e "$preload" ] || skip_all "programs not built"
# Under the sanitizers, programs not built with them need the runtime first.
[ -n "${ADAFS_TEST_ASAN_RT:-}" ] && preload="$ADAFS_TEST_ASAN_RT $preload"

agentd_setup adafs-qos-test
[ -n "${QOS_TEST_KEEP:-}" ] && trap "echo kept $base" EXIT

user=$(id -u nobody)
group=$(id -g nobody)
other=$((user - 1))
as_user() { setpriv --reuid="$user" --regid="$group" --clear-groups "$@"; }
pfs=$base/pfs
mkdir -p "$base/storage" "$base/mnt" "$base/log" "$pfs/sub"
head -c 300000 /dev/zero > "$pfs/data"
echo hello > "$pfs/f"
chown -R "$user:$group" "$pfs"

"$agentd" --node t1 --listen 127.0.0.1:0 --storage-root "$base/storage" --mount-prefix "$base/mnt" \
    --socket "$base/agent.sock" --qos-socket "$base/qos.%n.sock" --slurm-user root \
    --munge-socket "$ADAFS_TEST_MUNGE_SOCKET" --log "$base/agent.log" --log-dir "$base/log" \
    --foreground 2>"$base/agent.err" &
agent_pid=$!
port=
for _ in $(seq 50); do
    port=$(sed -n 's/.*agent listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$base/agent.log" 2>/dev/null)
    [ -n "$port" ] && break
    sleep 0.1
done
check "the agent starts with --qos-socket (%n is the node)" test -n "$port" -a -S "$base/qos.t1.sock"
agent() { "$client" 127.0.0.1 "$port" "$@"; }

# A job's process: the interposer with QoS toward $pfs.
job() {
    as_user env LD_PRELOAD="$preload" ADAFS_QOS_PATHS="$pfs" SLURM_JOB_ID=77 SLURMD_NODENAME=t1 \
        ADAFS_QOS_SOCKET="$base/qos.%n.sock" ADAFS_QOS_DEFAULT="${DEFAULT:-}" "$@"
}
limits="stat=100000"
usage() { agent qos "77:$user:$limits"; }
# used CLASS: the job's total of CLASS on this node now
used() { usage | tr ' ' '\n' | sed -n "s/^$1=//p"; }
seconds() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }

# --- before the agent knows the job: the static default ---
loop='for i in $(seq 40); do [ -e '"$pfs"'/f ]; done'
t=$(DEFAULT=stat=20 seconds job bash -c "$loop")
check "no budget for the job yet: 40 stats at the default 20/s take ${t}s" \
    eval 'echo "$t" | awk "{ exit !(\$1 > 1.4 && \$1 < 10) }"'
t=$(seconds job bash -c 'for i in $(seq 40); do [ -e /tmp/x ]; done')
check "calls elsewhere are not limited (${t}s)" eval 'echo "$t" | awk "{ exit !(\$1 < 1.4) }"'

# --- qosd names the job: a budget, its limit, its usage ---
out=$(usage)
check "the first cycle makes the job's budget ($out)" eval 'echo "$out" | grep -q "^job=77 procs=0 "'
check "and logs it" grep -q "job 77: I/O budget made for uid $user" "$base/agent.log"
t=$(DEFAULT=stat=20 seconds job bash -c "$loop")
check "with the agent's limit of 100000/s the same loop is fast (${t}s)" \
    eval 'echo "$t" | awk "{ exit !(\$1 < 1.4) }"'
s=$(used stat)
check "its stats were counted in the budget ($s)" test "${s:-0}" -ge 40

# --- each class, by real programs ---
delta() {  # delta CLASS COMMAND...: what COMMAND added to CLASS
    local c=$1 a b; shift
    a=$(used "$c"); job "$@" >/dev/null 2>&1; b=$(used "$c")
    echo $((b - a))
}
d=$(delta stat stat "$pfs/f");                  check "stat(1) counts as stat ($d)" test "$d" -ge 1
d=$(delta read cat "$pfs/data");                check "cat reads 300000 bytes ($d)" test "$d" -ge 300000 -a "$d" -lt 400000
d=$(delta open cat "$pfs/data");                check "cat opens once ($d)" test "$d" -ge 1 -a "$d" -le 3
d=$(delta close cat "$pfs/data");               check "and closes ($d)" test "$d" -ge 1 -a "$d" -le 3
d=$(delta write dd if=/dev/zero of="$pfs/w" bs=1M count=3)
# (A lease may run one call ahead of what was written: qos_client.h.)
check "dd writes 3 MiB ($d)" test "$d" -ge 3145728 -a "$d" -le 5242880
d=$(delta readdir ls "$pfs");                   check "ls reads the directory ($d)" test "$d" -ge 1
d=$(delta mkdir mkdir "$pfs/d");                check "mkdir ($d)" test "$d" = 1
d=$(delta mkdir rmdir "$pfs/d");                check "rmdir counts with mkdir ($d)" test "$d" = 1
d=$(delta rename mv "$pfs/w" "$pfs/w2");        check "mv renames ($d)" test "$d" -ge 1
d=$(delta unlink rm "$pfs/w2");                 check "rm unlinks ($d)" test "$d" = 1
d=$(delta other chmod 600 "$pfs/f");            check "chmod is other ($d)" test "$d" -ge 1
d=$(delta stat sh -c "cd $pfs/sub && stat ../f");
check "a path relative to a working directory inside is seen ($d)" test "$d" -ge 1
d=$(delta stat find "$pfs" -type f);            check "find's fstatat on directory descriptors ($d)" test "$d" -ge 2
d=$(delta open cat /etc/hostname);              check "files elsewhere are not counted ($d)" test "$d" = 0
d=$(delta stat sh -c "stat $pfs/../pfs/f /proc/self");
check "'..' is normalised; /proc is not the PFS ($d)" test "$d" = 1

# --- one budget for the job's processes on the node ---
limits="stat=200"
usage >/dev/null
t=$(seconds job bash -c "($loop) & ($loop) & ($loop) & wait")
check "3 processes share 200 stats/s: 120 stats take ${t}s (0.6 s due)" \
    eval 'echo "$t" | awk "{ exit !(\$1 > 0.45 && \$1 < 5) }"'
out=$(usage)
check "time spent delayed is reported ($out)" eval 'echo "$out" | grep -q "waited_ms=0,0,[1-9]"'

# --- refusals ---
out=$(setpriv --reuid="$other" --regid="$group" --clear-groups env LD_PRELOAD="$preload" \
      ADAFS_QOS_PATHS="$pfs" SLURM_JOB_ID=77 ADAFS_QOS_SOCKET="$base/qos.t1.sock" stat "$pfs" 2>&1)
sleep 0.3
check "another uid asking for the job's budget is refused and logged" \
    grep -q "uid $other asked for job 77's I/O budget: not its job, refused" "$base/agent.log"
out=$(agent qosbad)
check "a malformed cycle is refused ($out)" eval 'echo "$out" | grep -q "malformed qos request"'
out=$(as_user "$client" 127.0.0.1 "$port" qos "77:$user:stat=1")
check "a job user cannot send cycles (only qosd's uid may) ($out)" \
    eval 'echo "$out" | grep -q "may not use the agent"'
check "the socket is every user's, in a root directory" test "$(stat -c %a "$base/qos.t1.sock")" = 666

# --- qosd asks for the usage alone first, each period ---
before=$(used stat)
for _ in 1 2 3 4; do out=$(agent qosreport); done
check "a report alone gives the job's usage ($out)" \
    eval 'echo "$out" | grep -q "^job=77 .* stat=$before "'
check "and changes nothing: the job is kept past the grace cycles" \
    eval '! grep -q "job 77: I/O budget dropped" "$base/agent.log"'
agent qosreport 9 >/dev/null
out=$(QOS_CYCLE=9 agent qos "77:$user:$limits")
check "the limits of the cycle just reported are answered with no jobs ($out)" test "$out" = "no jobs"
out=$(QOS_CYCLE=10 agent qos "77:$user:$limits")
check "those of another cycle with every job's usage ($out)" eval 'echo "$out" | grep -q "^job=77 "'

# --- the limits apply at once; the usage comes back when it is due (a long poll) ---
before=$(used stat)
QOS_CYCLE=11 QOS_ANSWER_IN=3000 agent qos "77:$user:stat=20" > "$base/poll.out" &
poll=$!
sleep 0.3
t=$(seconds job bash -c "$loop")
wait $poll
got=$(tr ' ' '\n' < "$base/poll.out" | sed -n 's/^stat=//p')
check "the new limit holds before the answer (40 stats at 20/s: ${t}s)" \
    eval 'echo "$t" | awk "{ exit !(\$1 > 1.2) }"'
check "the answer, 3 s later, has the usage of that time ($before -> $got)" \
    test "${got:-0}" -ge $((before + 40))

# --- limits of an older cycle than the last applied are ignored (a member
# may hear its relay and qosd at once while a relay fails over) ---
QOS_CYCLE=10 agent qos "77:$user:stat=100000" >/dev/null
t=$(seconds job bash -c "$loop")
check "the limits of cycle 10 after those of 11 are ignored: still 20/s (40 stats: ${t}s)" \
    eval 'echo "$t" | awk "{ exit !(\$1 > 1.2) }"'

# --- the agent as its group's relay (AGENT_QOS_GROUP; SlurmUser is root here) ---
out=$(QOS_CYCLE=16 agent qosgroup "77:$user:stat=20")
check "as a relay of a group of one it applies its own part and answers the group report ($(echo $out))" \
    eval 'echo "$out" | grep -q "^member 0: status 0" && echo "$out" | grep -q "^job=77 "'
check "and says which group it relays for" grep -q "relay for a group of 1 nodes (t1-t1" "$base/agent.log"

# --- another user's connections that never ask hold up no one ---
# (agent/agentd/qos.c: requests not yet come are awaited in the beat
# thread's poll, 4 per uid at most; each was awaited in turn for 200 ms,
# so such connections filled the backlog and the job's process got none.)
setpriv --reuid="$other" --regid="$group" --clear-groups /usr/bin/python3 - "$base/qos.t1.sock" <<'PY' &
import socket, sys, time
held, end = [], time.time() + 4
while time.time() < end:
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.setblocking(False)
        s.connect(sys.argv[1])
        held.append(s)
    except OSError:
        pass
    time.sleep(0.01)
PY
flood=$!
sleep 1
t0=$(date +%s%N)
d=$(delta stat stat "$pfs/f")
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
wait $flood
check "while another uid floods the budget socket with silent connections, the job's process still gets its budget ($d stat counted, $ms ms)" \
    eval '[ "$d" -ge 1 ] && [ $ms -lt 2000 ]'

# --- the job's processes write their budget: the agent trusts none of it ---
# A process of the job maps its budget (as the interposer does) and writes
# a slot count far beyond the segment into its header: the root agent
# summed slots and unmapped by that count.
cat > "$base/scribble.py" <<'PY'
import array, mmap, os, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.send(struct.pack("<III", 0x54415141, 1, int(sys.argv[2])))
fds = array.array("i")
msg, anc, _, _ = s.recvmsg(12, socket.CMSG_LEN(4))
for level, kind, data in anc:
    fds.frombytes(data[:4])
status = struct.unpack("<IIi", msg)[2]
if status != 0 or not fds:
    sys.exit("no budget: status %d" % status)
m = mmap.mmap(fds[0], os.fstat(fds[0]).st_size)
m[12:16] = struct.pack("<I", 0xFFFFFFFF)
print("nslots written")
PY
out=$(as_user /usr/bin/python3 "$base/scribble.py" "$base/qos.t1.sock" 77 2>&1)
check "a process of the job writes its budget's slot count: 2^32-1 ($out)" test "$out" = "nslots written"
out=$(agent qosreport 2>&1)
check "  the agent still reports the job's usage ($out)" eval 'echo "$out" | grep -q "^job=77 "'
check "  and lives" kill -0 "$agent_pid"

# --- a job qosd no longer names is dropped after the grace cycles ---
for c in 17 18 19 20; do QOS_CYCLE=$c agent qos >/dev/null; done
check "dropped after 3 cycles without it" grep -q "job 77: I/O budget dropped" "$base/agent.log"

echo "1..$n"
[ "$fails" = 0 ]
