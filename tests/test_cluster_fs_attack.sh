#!/bin/bash
# Another user of the cluster (adafs-test2) against the file system
# servers of a running job of adafs-test: wrong proofs, floods of idle and
# garbage connections, a client with a secret of its own, and a listener
# the victim's client is pointed at (as the plugin once wrote a squatter's
# port into the instance file). Nothing is read, crashed or exhausted: the
# attacker never sees the secret or a byte of the victim's data, the
# servers keep their threads and their log bounded, and the victim's own
# client is served throughout (and refuses the impostor). The victim's own
# reads go through a read-only descriptor of its server's data file; a user
# holding a leaked secret (6), who can read the data with it, still never
# gets one. The job's own user cannot make a spliced READ reply carry
# another file's bytes (7), nor keep its data past teardown by mounting
# over its server root (8).
. "${abs_top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
require_cluster
other=adafs-test2
id -u "$other" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$other"
preload=$ADAFS_BUILD_DIR/agent/.libs/libadafs_preload.so
work=$(runuser -u "$other" -- mktemp -d /tmp/fs-attack.XXXXXX)   # the attacker's
chmod 755 "$work"
start_cluster
trap '"$cluster" stop >/dev/null 2>&1; rm -rf "$work"' EXIT

marker="data of $test_user $RANDOM$RANDOM"
id=$(submit_victim fsattack "$marker" 300)
check "the victim job runs on its file system" -- wait_file "$pfs/fsattack/started"
mount=$ADAFS_CLUSTER_DIR/mnt/$id
instance=$ADAFS_CLUSTER_DIR/mnt/.job.$id.instance
secret=$(sed -n 's/^secret=//p' "$instance")
mapfile -t servers < <(sed -n 's/^server=//p' "$instance")
check "the job has two servers (${servers[*]})" -- test "${#servers[@]}" = 2
host=${servers[0]%:*} port=${servers[0]##*:}
pid=$(pgrep -f "^[^ ]*adafsd .*--index 0 .*$ADAFS_CLUSTER_DIR/.*job.$id" | head -1)
log=$(grep -l "listening on $host:$port" "$ADAFS_CLUSTER_DIR"/adafs-log/adafsd.job"$id".*.log | head -1)
check "server 0 ($host:$port) runs as pid $pid, logs to $log" -- test -n "$pid" -a -n "$log"
refusals() { grep -c "wrong proof of the instance's secret" "$log"; }
refusals0=$(refusals)   # the log may hold an earlier run's job of this id

# The victim reads its file through the interposer: prints its time in ms
# and what it printed, on one line.
victim_reads() {  # victim_reads INSTANCE
    local t0 out
    t0=$(date +%s%N)
    out=$(runuser -u "$test_user" -- env ADAFS_INSTANCE="$1" ADAFS_MOUNT="$mount" \
          LD_PRELOAD="$preload" cat "$mount/secret.txt" 2>&1)
    echo "$(( ($(date +%s%N) - t0) / 1000000 )) $(paste -sd ' ' <<<"$out")"
}

# A reader of a 1 MiB file (written first with WRITE) through the
# interposer, reading it twice in 64 KiB reads: prints how many data file
# descriptors it holds, how many read-only, and the bytes read.
direct_reader() {  # direct_reader USER INSTANCE WRITE(0/1)
    runuser -u "$1" -- env ADAFS_INSTANCE="$2" ADAFS_MOUNT="$mount" LD_PRELOAD="$preload" \
        python3 -c 'import os, sys
path = os.environ["ADAFS_MOUNT"] + "/big.bin"
if sys.argv[1] == "1":
    with open(path, "wb") as f:
        f.write(os.urandom(1 << 20))
fd = os.open(path, os.O_RDONLY)
for _ in range(2):
    off = 0
    while True:
        b = os.pread(fd, 65536, off)
        if not b:
            break
        off += len(b)
held = ro = 0
for e in os.listdir("/proc/self/fd"):
    try:
        if "/data/" not in os.readlink("/proc/self/fd/" + e):
            continue
        flags = [l for l in open("/proc/self/fdinfo/" + e) if l.startswith("flags:")][0]
    except OSError:
        continue
    held += 1
    ro += int(flags.split()[1], 8) & 3 == os.O_RDONLY
print(held, ro, off)' "$3" 2>&1
}
out=$(direct_reader "$test_user" "$instance" 1)
check "the victim's reads of a 1 MiB file go through one read-only data file descriptor ($out)" -- \
    test "$out" = "1 1 1048576"

# 1. Wrong proofs: each is answered EACCES; what the attacker receives
# (greetings and refusals) holds neither the secret nor the data.
refused=$(runuser -u "$other" -- python3 - "$host" "$port" "$work/wrong" <<'PY'
import os, socket, sys
host, port, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
got, refused = b"", 0
for _ in range(50):
    s = socket.create_connection((host, port), timeout=5)
    hello = s.recv(40, socket.MSG_WAITALL)
    s.sendall(os.urandom(64))
    answer = s.recv(36, socket.MSG_WAITALL)
    got += hello + answer
    refused += answer[:4] == (-13 & 0xffffffff).to_bytes(4, "little")
    s.close()
open(out, "wb").write(got)
print(refused)
PY
)
check "50 wrong proofs from $other are refused with EACCES ($refused)" -- test "$refused" = 50
lacks_secret() {  # lacks_secret FILE: neither the secret (hex or raw) nor the data in it
    python3 - "$1" "$secret" "$marker" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
secret = bytes.fromhex(sys.argv[2])
sys.exit(1 if sys.argv[2].encode() in data or secret[:8] in data or sys.argv[3].encode() in data else 0)
PY
}
check "what they received ($(stat -c %s "$work/wrong") bytes) holds no secret and no data" -- \
    lacks_secret "$work/wrong"

# 2. 600 idle connections: no thread, little memory, the victim served.
threads0=$(ls /proc/"$pid"/task | wc -l) rss0=$(awk '/^VmRSS:/ {print $2}' /proc/"$pid"/status)
rm -f "$work/held"
runuser -u "$other" -- python3 - "$host" "$port" "$work/held" <<'PY' &
import socket, sys, time
conns = [socket.create_connection((sys.argv[1], int(sys.argv[2]))) for _ in range(600)]
open(sys.argv[3], "w").write("%d\n" % len(conns))
time.sleep(4)
PY
holder=$!
for _ in $(seq 100); do [ -s "$work/held" ] && break; sleep 0.1; done
check "$other holds 600 idle connections to server 0" -- test "$(cat "$work/held" 2>/dev/null)" = 600
threads=$(ls /proc/"$pid"/task | wc -l) rss=$(awk '/^VmRSS:/ {print $2}' /proc/"$pid"/status)
check "they cost server 0 no thread ($threads threads, $threads0 before)" -- test "$threads" -le $((threads0 + 1))
check "and little memory (RSS $rss kB, $rss0 before)" -- test $((rss - rss0)) -lt 16384
read -r ms out < <(victim_reads "$instance")
check "the victim reads its file meanwhile ($ms ms: $out)" -- test "$out" = "$marker" -a "$ms" -lt 3000
wait "$holder"

# 3. Garbage: 2000 connections; the server's log (root's directory) grows
# by a few lines.
size0=$(stat -c %s "$log")
runuser -u "$other" -- python3 - "$host" "$port" <<'PY'
import socket, sys
for i in range(2000):
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
    s.sendall(b"GET / HTTP/1.0\r\n" * 8)
    s.close()
PY
grown=$(( $(stat -c %s "$log") - size0 ))
check "2000 garbage connections grew the server's log by $grown bytes" -- test "$grown" -lt 8192
check "server 0 still runs" -- kill -0 "$pid"
n=$(( $(refusals) - refusals0 ))
check "its log names the 2050 refusals in a few lines, five per 10 s ($n)" -- \
    test "$n" -ge 1 -a "$n" -le 20

# 4. A client of the attacker with a secret of its own: refused, nothing read.
forged=$work/forged.instance
{ grep -v '^secret=' "$instance"; echo "secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"; } >"$forged"
chown "$other" "$forged"; chmod 600 "$forged"
out=$(runuser -u "$other" -- env ADAFS_INSTANCE="$forged" ADAFS_MOUNT="$mount" LD_PRELOAD="$preload" \
      cat "$mount/secret.txt" 2>&1)
check "a client with a forged secret gets Permission denied, no data ($out)" -- \
    bash -c "grep -q 'Permission denied' <<<\"\$0\" && ! grep -q '$marker' <<<\"\$0\"" "$out"
check "and the interposer says which server refused it" -- \
    bash -c "grep -q 'adafs_preload.*server [01] (.*) refused our proof' <<<\"\$0\"" "$out"

# 5. The victim's client pointed at the attacker's listener (both the TCP
# port and the node-local socket name): it gets an error at once and sends
# only its proof, which the real server does not take from anyone else.
rm -f "$work/squat.ready" "$work/squat.got"
runuser -u "$other" -- python3 - "$host" "$work/squat" <<'PY' &
import os, socket, sys, time
host, out = sys.argv[1], sys.argv[2]
tcp = socket.socket()
tcp.bind((host, 0)); tcp.listen(8)
port = tcp.getsockname()[1]
local = socket.socket(socket.AF_UNIX)
local.bind("\0adafsd/%s:%d" % (host, port)); local.listen(8)
open(out + ".ready", "w").write("%d\n" % port)
tcp.settimeout(20)
c, _ = tcp.accept()
c.settimeout(3)
c.sendall(b"ADFH\x01\x00\x00\x00" + os.urandom(32))   # a HELLO, without the secret
got = b""
try:
    got += c.recv(64, socket.MSG_WAITALL)
    c.sendall(b"\x00" * 4 + os.urandom(32))            # "you are in", any MAC
    while True:
        d = c.recv(65536)
        if not d:
            break
        got += d
except OSError:
    pass
open(out + ".got", "wb").write(got)
PY
squatter=$!
for _ in $(seq 100); do [ -s "$work/squat.ready" ] && break; sleep 0.1; done
squat_port=$(cat "$work/squat.ready")
pointed=$work/pointed.instance
sed "s/^server=${servers[0]}\$/server=$host:$squat_port/" "$instance" >"$pointed"
chown "$test_user" "$pointed"; chmod 600 "$pointed"
read -r ms out < <(victim_reads "$pointed")
check "the victim's client refuses the impostor ($ms ms: $out)" -- \
    bash -c "grep -q 'Operation not permitted' <<<\"\$0\" && [ $ms -lt 5000 ]" "$out"
check "naming the address it was pointed at" -- \
    bash -c "grep -q 'server 0 ($host:$squat_port.*) did not prove it knows' <<<\"\$0\"" "$out"
wait "$squatter"
check "the impostor received only the 64-byte proof: no request" -- \
    test "$(stat -c %s "$work/squat.got")" = 64
check "and no secret, no data" -- lacks_secret "$work/squat.got"
runuser -u "$other" -- python3 - "$host" "$port" "$work/squat.got" <<'PY' >"$work/replay"
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
s.recv(40, socket.MSG_WAITALL)
s.sendall(open(sys.argv[3], "rb").read())
print(s.recv(36, socket.MSG_WAITALL)[:4] == (-13 & 0xffffffff).to_bytes(4, "little"))
PY
check "the captured proof replayed to the real server is refused" -- test "$(cat "$work/replay")" = True
read -r ms out < <(victim_reads "$instance")
check "the victim still reads its file ($out)" -- test "$out" = "$marker"

# 6. A user who got hold of the secret reads through the interposer: the
# secret lets it read over TCP (its client will not talk to a socket of
# another uid), but it never holds a descriptor of the victim's data.
leaked=$work/leaked.instance
cp "$instance" "$leaked"; chown "$other" "$leaked"; chmod 600 "$leaked"
out=$(direct_reader "$other" "$leaked" 0)
check "a user holding a leaked secret holds no data file descriptor ($out)" -- \
    test "$out" = "0 0 1048576"

# 7. Spliced READ replies (adafs-fuse) under a job's own churn: 16 readers
# of a 4 MiB file (more READs than adafs-fuse's 8 pipes) while it is
# truncated, emptied and written again, beside a file of other bytes: no
# reply carries a byte of the other file, none fails, adafs-fuse serves on.
out=$(runuser -u "$test_user" -- python3 - "$mount" <<'PY' 2>&1
import os, random, sys, threading, time
m = sys.argv[1]
a, b = os.path.join(m, "churn.a"), os.path.join(m, "churn.b")
open(a, "wb").write(b"A" * (4 << 20))
open(b, "wb").write(b"B" * (4 << 20))
stop = time.time() + 5
errs, foreign, reads = [], [0], [0]
def reader():
    while time.time() < stop:
        try:
            with open(a, "rb") as f:
                f.seek(random.randrange(0, 4 << 20, 4096))
                d = f.read(1 << 20)
            reads[0] += 1
            foreign[0] += d.strip(b"A\0") != b""
        except OSError as e:
            errs.append(str(e))
def churn():
    while time.time() < stop:
        with open(a, "r+b") as f:
            f.truncate(random.randrange(0, 4 << 20))
            f.truncate(4 << 20)
        os.truncate(a, 0)
        with open(a, "r+b") as f:
            f.write(b"A" * (4 << 20))
ts = [threading.Thread(target=reader) for _ in range(16)] + [threading.Thread(target=churn)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print(reads[0], foreign[0], len(errs), sorted(set(errs))[:2])
PY
)
read -r nreads nforeign nerrs _ <<<"$out"
check "16 readers through the mount during truncates: $nreads reads, none foreign or failed ($out)" -- \
    test "${nreads:-0}" -gt 100 -a "$nforeign" = 0 -a "$nerrs" = 0
out=$(runuser -u "$test_user" -- head -c 5 "$mount/churn.b" 2>&1)
check "and the mount still serves ($out)" -- test "$out" = BBBBB

# 8. The job's user stacks a FUSE mount of their own on their server's
# root (fusermount3 lets a user mount on a directory they own, where
# /dev/fuse is open to users: not in this container, so root makes the
# mount fusermount3 would, user_id= the victim, no allow_other, served by
# nobody). Root cannot look through it (EACCES), so teardown once took
# the root for unmounted: the job's store stayed mounted underneath with
# its data, its loop device held, and the rmdir failed (the node drained).
root0=$(tr '\0' '\n' < /proc/"$pid"/cmdline | sed -n '/^--root$/{n;p}')
mountpoints() { awk -v d="$1" '$5 == d' /proc/self/mountinfo | wc -l; }
out=$(python3 "$abs_top_srcdir/tests/cluster/usermount.py" "$root0" "$(id -u "$test_user")" 2>&1)
check "the job's user has a FUSE mount on its server root $root0 ($out, $(mountpoints "$root0") mounts there)" -- \
    test "$out" = mounted -a "$(mountpoints "$root0")" = 2
image=$root0.img
loops=$(losetup -j "$image" 2>/dev/null | wc -l)
scancel "$id"
check "after the job: nothing is left, data wiped" -- wait_clean 60
check "nothing is mounted on the server root any more ($(mountpoints "$root0"))" -- \
    test "$(mountpoints "$root0")" = 0
check "the store's loop device is released ($loops before: $(losetup -a 2>/dev/null | grep -c "$image"))" -- \
    bash -c "! losetup -a 2>/dev/null | grep -qF '$image'"
check "no node was drained" -- bash -c "! sinfo -h -o '%t' | grep -q drain"
tap_done
