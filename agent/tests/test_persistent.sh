#!/bin/bash
# test_persistent.sh: the node agent's persistent instances (agentd/
# persistent.h): a real adafs-agentd as root with its own munged, a real
# adafsd run as the owner (adafs-test) with --owner, driven by agentd_client
# as the plugin would drive it, written and read through the interposer.
# The instance survives a job's teardown and the agent's kill -9 (server
# alive: kept; server dead and its file system unmounted, as after a
# reboot: started again on the same storage and port); another user with
# the secret is refused by the server; an instance id in a job's START is
# refused; its TEARDOWN (the destroy) wipes it. The servers' key START
# carries is written beside the secret (the owner's, 0600) and kept across
# the restarts; the two servers of a 2-node instance on two agents (t1, t2,
# --fair-policy) find each other in the instance file CONFIGURE puts beside
# their secret and exchange usage under that key. Needs root and munged.
set -u
builddir=${abs_builddir:-$(pwd)}
client=$builddir/tests/agentd_client
agentd=$builddir/adafs-agentd
adafsd=$builddir/adafsd
preload=${ADAFS_TEST_PRELOAD:-$builddir/.libs/libadafs_preload.so}
. "${srcdir:-.}/tests/agentd_common.sh"

[ "$(id -u)" = 0 ] || skip_all "needs root (the agent starts servers as their owners)"
command -v munged >/dev/null && id munge >/dev/null 2>&1 || skip_all "needs munged and the munge user"
command -v setpriv >/dev/null && command -v findmnt >/dev/null || skip_all "needs setpriv and findmnt"
id adafs-test >/dev/null 2>&1 && id adafs-test2 >/dev/null 2>&1 ||
    skip_all "needs the test users adafs-test and adafs-test2 (tests/cluster/cluster.sh check-access creates them)"
[ -x "$client" ] && [ -x "$agentd" ] && [ -x "$adafsd" ] && [ -e "$preload" ] ||
    skip_all "programs not built"
asan_env=
if [ -n "${ADAFS_TEST_ASAN_RT:-}" ]; then
    preload="$ADAFS_TEST_ASAN_RT $preload"
    asan_env=ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0
fi

base=$(mktemp -d /tmp/adafs-persistent-test.XXXXXX)
chmod 755 "$base"
agent_pid= agent2_pid=
pdir=$base/storage/t1/persistent/scratch
server_pid() { cat "$pdir.pid" 2>/dev/null; }
cleanup() {
    [ -n "$agent_pid" ] && kill -9 "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null
    [ -n "$agent2_pid" ] && kill -9 "$agent2_pid" 2>/dev/null && wait "$agent2_pid" 2>/dev/null
    # A test that failed halfway may leave the instances' servers up.
    local pid d
    for d in "$pdir" "$base"/storage/t[12]/persistent/pair; do
        pid=$(cat "$d.pid" 2>/dev/null)
        [ -n "$pid" ] && grep -qF "$d" "/proc/$pid/cmdline" 2>/dev/null && kill -9 "$pid"
    done
    findmnt -n -o TARGET --target "$pdir" 2>/dev/null | grep -qx "$pdir" && umount -l "$pdir"
    stop_munged
    rm -rf "$base"
}
trap cleanup EXIT
start_munged
export ADAFS_MUNGE_SOCKET=$ADAFS_TEST_MUNGE_SOCKET

mkdir -p "$base/storage" "$base/mnt" "$base/log"
owner=adafs-test other=adafs-test2
ouid=$(id -u $owner) ogid=$(id -g $owner)
id=2147483653   # AGENT_PERSIST_ID_BASE + 5
# The servers' key every START carries (the plugin makes one per instance).
skey=ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100
export ADAFS_TEST_SERVER_KEY=$skey

start_agent() {
    "$agentd" --node t1 --listen 127.0.0.1:0 --storage-root "$base/storage" --mount-prefix "$base/mnt" \
        --socket "$base/agent.sock" --adafsd "$adafsd" --stager /bin/true \
        --slurm-user root --munge-socket "$ADAFS_TEST_MUNGE_SOCKET" --log "$base/agent.log" \
        --log-dir "$base/log" --request-timeout 3 --node-bandwidth 1G --fair-policy user-fair \
        --foreground 2>>"$base/agent.err" &
    agent_pid=$!
    local before=$1
    for _ in $(seq 100); do
        port=$(tail -n +"$before" "$base/agent.log" 2>/dev/null |
               sed -n 's/.*agent listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' | tail -1)
        [ -n "$port" ] && return 0
        sleep 0.05
    done
    return 1
}
# A server the killed agent left is nobody's child: once gone it may stay a
# zombie that kill -0 still finds.
running() { [ -n "$1" ] && ! awk '{ exit ($3 == "Z") ? 0 : 1 }' "/proc/$1/stat" 2>/dev/null &&
            [ -e "/proc/$1" ]; }
log_lines() { wc -l < "$base/agent.log" 2>/dev/null || echo 0; }
agent() { "$client" 127.0.0.1 "$port" "$@"; }
kill_agent() { kill -9 "$agent_pid"; wait "$agent_pid" 2>/dev/null; agent_pid=; }
# The instance file a job of the owner gets (CONFIGURE's text): the secret
# and the server.
instance() {  # instance USER SERVER-PORT
    install -m 600 -o "$1" /dev/null "$base/inst-$1"
    printf 'mount=%s\nchunk_size=524288\ntimeout_ms=5000\nsecret=%s\nserver=127.0.0.1:%s\n' \
        "$base/pmnt" 00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff "$2" \
        > "$base/inst-$1"
}
as() {  # as USER COMMAND...: under the interposer, over TCP (munge proves the uid)
    local user=$1; shift
    timeout -k 5 30 setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups \
        env LD_PRELOAD="$preload" $asan_env ADAFS_INSTANCE="$base/inst-$user" \
        ADAFS_MOUNT="$base/pmnt" ADAFS_TRANSPORT=tcp "$@"
}
: > "$base/pmnt"

check "the agent starts" start_agent 1

# --- START of a persistent instance: its server runs as the owner, --owner ---
out=$(agent pstart $id $ouid $ogid "$base/storage" scratch 0)
sport=${out#port=}; sport=${sport%% *}
check "a persistent START answers with its server ($out)" eval 'case $out in port=*" pid="*) true ;; *) false ;; esac'
spid=$(server_pid)
check "its server runs as the owner with --owner $ouid" \
    eval 'test "$(stat -c %u /proc/$spid)" = "$ouid" && tr "\0" " " < /proc/$spid/cmdline | grep -q -- "--owner $ouid "'
check "its storage is $pdir, its own file system, the owner's" \
    eval 'test "$(findmnt -n -o TARGET --target "$pdir")" = "$pdir" -a "$(stat -c "%u %a" "$pdir")" = "$ouid 700"'
check "its record is root's, 0600, with the port" \
    eval 'test "$(stat -c "%u %a" "$pdir.record")" = "0 600" && grep -qx "port=$sport" "$pdir.record"'
check "the servers' key is beside the secret, the owner's, 0600, and in the record" \
    eval 'test "$(stat -c "%u %a" "$pdir.serverkey")" = "$ouid 600" && grep -qx "$skey" "$pdir.serverkey" &&
          grep -qx "server_key=$skey" "$pdir.record"'
instance $owner "$sport"
instance $other "$sport"
check "the owner writes through the interposer" \
    as $owner sh -c "mkdir $base/pmnt/d && echo kept > $base/pmnt/d/f && head -c 300000 /dev/urandom > $base/pmnt/big"
check "  its server, started by the agent with the servers' key, checks capabilities" \
    grep -q "data served only with a capability from the file.s record server" "$base/log/adafsd.job$id.t1.log"
as $owner cat "$base/pmnt/big" | md5sum > "$base/big.md5"
out=$(agent pstatus $id)
check "STATUS says its port, pid and bytes used ($out)" \
    eval 'case $out in "port=$sport pid=$spid used="[1-9]*) true ;; *) false ;; esac'
out=$("$builddir/adafs-ctl" persistent list --socket "$base/agent.sock" | tail -n +2)
check "adafs-ctl persistent list shows it ($out)" \
    eval 'echo "$out" | grep -Eq "^scratch +$id +$ouid +- +$sport +$spid +[1-9][0-9]* +1073741824 +$pdir\$"'
out=$("$builddir/adafs-ctl" persistnt list 2>&1)
check "adafs-ctl names a mistyped command ($out)" eval 'echo "$out" | grep -q "unknown command .persistnt."'
out=$(agent pstart $id $ouid $ogid "$base/storage" scratch 0)
check "START again (a lost reply) answers the same ($out)" test "$out" = "port=$sport pid=$spid"
out=$(agent pstart $((id + 1)) $ouid $ogid "$base/storage" scratch 0)
check "another id for the same name is refused ($out)" eval 'echo "$out" | grep -q "served here already as instance $id"'

# --- another user, the secret in hand, is refused by the server ---
out=$(as $other cat "$base/pmnt/d/f" 2>&1)
check "$other with the secret: Permission denied ($out)" eval 'echo "$out" | grep -q "Permission denied"'
check "  the server's log names the uid" \
    grep -q "uid $(id -u $other) ($other) is not this instance.s owner (uid $ouid)" "$base/log/adafsd.job$id.t1.log"

# --- an instance id in a job's START, a job id in a persistent one ---
out=$(agent start $id $ouid $ogid "$base/storage")
check "a job's START with id $id is refused ($out)" \
    eval 'echo "$out" | grep -q "ids from 2147483648 on are persistent instances.*refused in a job.s START"'
out=$(agent pstart 77 $ouid $ogid "$base/storage" other 0)
check "a persistent START with a job's id is refused ($out)" eval 'echo "$out" | grep -q "id 77 is a job.s"'

# --- a job's teardown leaves it ---
check "a job starts on the node" eval 'agent start 7 $ouid $ogid "$base/storage" | grep -qx ok'
check "  its servers' key beside its secret: .job.7.serverkey, the user's, 0600" \
    eval 'test "$(stat -c "%u %a" "$base/mnt/.job.7.serverkey")" = "$ouid 600" &&
          grep -qx "$skey" "$base/mnt/.job.7.serverkey"'
check "and is torn down" eval 'agent teardown 7 | grep -qx ok'
check "  its key with it" test ! -e "$base/mnt/.job.7.serverkey"
check "the instance is untouched: same server, data there" \
    eval 'test "$(server_pid)" = "$spid" && as $owner cat "$base/pmnt/d/f" | grep -qx kept'

# --- its server dies while the agent runs: STATUS starts it again ---
kill -9 "$spid"
for _ in $(seq 50); do running "$spid" || break; sleep 0.05; done
out=$(agent pstatus $id)
spid=$(server_pid)
check "STATUS after its server died: started again on the same port ($out)" \
    eval 'running "$spid" && case $out in "port=$sport pid=$spid "*) true ;; *) false ;; esac'
check "  with the data" eval 'as $owner cat "$base/pmnt/big" | md5sum | cmp -s - "$base/big.md5"'

# --- a job that uses it and runs no server here: CONFIGURE only ---
job=41
printf 'mount=%s\nchunk_size=524288\ntimeout_ms=5000\nsecret=%s\nserver=127.0.0.1:%s\n' \
    "$base/mnt/$job" 00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff "$sport" \
    > "$base/use.text"
out=$(ADAFS_TEST_CONFIGURE_AS=$ouid:$ogid agent configure $job "$base/mnt/$job" 0 "$base/use.text")
check "CONFIGURE of a job with no server here, as its user ($out)" test "$out" = ok
check "its mount point and instance file are the user's" \
    eval 'test "$(stat -c "%u %a" "$base/mnt/$job")" = "$ouid 700" -a "$(stat -c "%u %a" "$base/mnt/.job.$job.instance")" = "$ouid 600"'
check "the job reads the instance through them" \
    eval 'timeout -k 5 30 setpriv --reuid=$owner --regid=$ogid --init-groups env LD_PRELOAD="$preload" $asan_env \
        ADAFS_INSTANCE="$base/mnt/.job.$job.instance" ADAFS_TRANSPORT=tcp cat "$base/mnt/$job/d/f" | grep -qx kept'
out=$(ADAFS_TEST_CONFIGURE_AS=$(id -u $other):$(id -g $other) agent configure $job "$base/mnt/$job" 0 "$base/use.text")
check "a CONFIGURE of it for another user is refused ($out)" eval 'echo "$out" | grep -q "CONFIGURE for uid"'
# A further mount of the job (one that mounts several file systems).
sed "s,^mount=.*,mount=$base/mnt/$job.scratch," "$base/use.text" > "$base/use2.text"
out=$(ADAFS_TEST_CONFIGURE_AS=$ouid:$ogid ADAFS_TEST_CONFIGURE_NAME=scratch \
      agent configure $job "$base/mnt/$job.scratch" 0 "$base/use2.text")
check "a CONFIGURE of a further mount, named after its instance ($out)" test "$out" = ok
check "its mount point and instance file are the user's" \
    eval 'test "$(stat -c "%u %a" "$base/mnt/$job.scratch")" = "$ouid 700" -a "$(stat -c "%u %a" "$base/mnt/.job.$job.scratch.instance")" = "$ouid 600"'
check "one process reads through both mounts (\$ADAFS_MOUNTS)" \
    eval 'timeout -k 5 30 setpriv --reuid=$owner --regid=$ogid --init-groups env LD_PRELOAD="$preload" $asan_env \
        ADAFS_INSTANCE="$base/mnt/.job.$job.instance" ADAFS_MOUNTS="$base/mnt/$job.scratch=$base/mnt/.job.$job.scratch.instance" \
        ADAFS_TRANSPORT=tcp cat "$base/mnt/$job/d/f" "$base/mnt/$job.scratch/d/f" | tr "\n" " " | grep -qx "kept kept "'
out=$(ADAFS_TEST_CONFIGURE_AS=$ouid:$ogid ADAFS_TEST_CONFIGURE_NAME=scratch \
      agent configure $job "$base/mnt/$job.other" 0 "$base/use2.text")
check "a further mount elsewhere than its name says is refused ($out)" \
    eval 'echo "$out" | grep -q "mount point $base/mnt/$job.other is not $base/mnt/$job.scratch"'
check "its TEARDOWN" eval 'agent teardown $job | grep -qx ok'
check "takes its mount points and instance files off, the instance stays" \
    eval 'test ! -e "$base/mnt/$job" -a ! -e "$base/mnt/.job.$job.instance" -a ! -e "$base/mnt/$job.scratch" -a ! -e "$base/mnt/.job.$job.scratch.instance" && as $owner cat "$base/pmnt/d/f" | grep -qx kept'
job=42
ADAFS_TEST_CONFIGURE_AS=$ouid:$ogid agent configure $job "$base/mnt/$job" 0 "$base/use.text" >/dev/null
sed "s,^mount=.*,mount=$base/mnt/$job.scratch," "$base/use.text" > "$base/use2.text"
ADAFS_TEST_CONFIGURE_AS=$ouid:$ogid ADAFS_TEST_CONFIGURE_NAME=scratch \
    agent configure $job "$base/mnt/$job.scratch" 0 "$base/use2.text" >/dev/null
kill_agent
start_agent "$(($(log_lines) + 1))"
check "such a job's files are kept when the agent restarts (it may still run)" \
    test -d "$base/mnt/$job" -a -f "$base/mnt/.job.$job.instance" -a -d "$base/mnt/$job.scratch"
check "and go at its TEARDOWN, though the agent no longer lists it" \
    eval 'agent teardown $job | grep -qx ok && test ! -e "$base/mnt/$job" -a ! -e "$base/mnt/.job.$job.instance" -a ! -e "$base/mnt/$job.scratch" -a ! -e "$base/mnt/.job.$job.scratch.instance"'
spid=$(server_pid)

# --- the agent killed and started again: the live server is kept ---
kill_agent
check "the server outlives the agent's kill -9" running "$spid"
check "an agent starts again" start_agent "$(($(log_lines) + 1))"
out=$(agent pstatus $id)
check "it kept the running server: same port and pid ($out)" eval 'case $out in "port=$sport pid=$spid "*) true ;; *) false ;; esac'
check "  (logged)" grep -q "persistent scratch (instance $id): its server is up on port $sport (pid $spid): kept" "$base/agent.log"
check "the data is there" eval 'as $owner cat "$base/pmnt/big" | md5sum | cmp -s - "$base/big.md5"'

# --- agent and server both dead, the file system unmounted (a reboot) ---
kill_agent
kill -9 "$spid"
for _ in $(seq 50); do running "$spid" || break; sleep 0.05; done
for _ in $(seq 50); do umount "$pdir" 2>/dev/null && break; sleep 0.1; done
check "(its file system unmounted, as after a reboot)" eval '! findmnt -n "$pdir" >/dev/null'
check "an agent starts again" start_agent "$(($(log_lines) + 1))"
out=$(agent pstatus $id)
npid=$(server_pid)
check "it started the server again on the same port ($out)" \
    eval 'test "$npid" != "$spid" && case $out in "port=$sport pid=$npid "*) true ;; *) false ;; esac'
check "on the same storage, mounted again" test "$(findmnt -n -o TARGET --target "$pdir")" = "$pdir"
check "  with its servers' key" grep -qx "$skey" "$pdir.serverkey"
check "the data is there (the same client instance file)" \
    eval 'as $owner cat "$base/pmnt/d/f" | grep -qx kept && as $owner cat "$base/pmnt/big" | md5sum | cmp -s - "$base/big.md5"'
out=$(as $other cat "$base/pmnt/d/f" 2>&1)
check "$other is still refused ($out)" eval 'echo "$out" | grep -q "Permission denied"'

# --- an agent's ordinary stop leaves it up too ---
kill "$agent_pid"; wait "$agent_pid" 2>/dev/null; agent_pid=
check "an agent's SIGTERM leaves the server up" running "$npid"
check "an agent starts again and keeps it" start_agent "$(($(log_lines) + 1))"

# --- the destroy ---
out=$(agent teardown $id)
check "TEARDOWN of the instance ($out)" test "$out" = ok
check "its server is gone" eval '! running $npid'
check "its storage, image, record, secret and key are gone" \
    eval 'test ! -e "$pdir" -a ! -e "$pdir.img" -a ! -e "$pdir.record" -a ! -e "$pdir.secret" -a ! -e "$pdir.pid" -a ! -e "$pdir.serverkey"'
out=$(agent pstatus $id)
check "STATUS: not deployed here ($out)" eval 'echo "$out" | grep -q "not deployed here"'
kill_agent
since=$(($(log_lines) + 1))
check "an agent that starts after it has nothing to re-adopt" start_agent $since
check "  (nothing logged of it)" eval '! tail -n +$since "$base/agent.log" | grep -q "persistent scratch"'

# --- a record the agent cannot read: the data is left, never started afresh ---
kill_agent
old=$base/storage/t1/persistent/old
install -d -m 700 -o $owner -g $ogid "$old"
echo precious > "$old/data.txt"; chown $owner "$old/data.txt"
echo "id=garbage" > "$old.record"
since=$(($(log_lines) + 1))
start_agent $since
check "an unreadable record is logged and its instance left as it is" \
    eval 'tail -n +$since "$base/agent.log" | grep -q "not a persistent instance.s record" && test -f "$old/data.txt"'
out=$(agent pstart $((id + 7)) $ouid $ogid "$base/storage" old 0)
check "a START of that name is refused, naming the record ($out)" \
    eval 'echo "$out" | grep -q "old.record is there but was not taken" && test -f "$old/data.txt"'

# --- a 2-node instance on two agents: its servers exchange usage ---
"$agentd" --node t2 --listen 127.0.0.1:0 --storage-root "$base/storage" --mount-prefix "$base/mnt" \
    --socket "$base/agent2.sock" --adafsd "$adafsd" --stager /bin/true \
    --slurm-user root --munge-socket "$ADAFS_TEST_MUNGE_SOCKET" --log "$base/agent2.log" \
    --log-dir "$base/log" --request-timeout 3 --fair-policy user-fair --foreground \
    2>>"$base/agent.err" &
agent2_pid=$!
for _ in $(seq 100); do
    port2=$(sed -n 's/.*agent listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$base/agent2.log" 2>/dev/null)
    [ -n "$port2" ] && break
    sleep 0.05
done
agent2() { ADAFS_TEST_SEAL_NODE=t2 "$client" 127.0.0.1 "${port2:-0}" "$@"; }
pair=$((id + 20))
out0=$(ADAFS_TEST_QUOTA=0 agent pstart $pair $ouid $ogid "$base/storage" pair 0 0 2)
out1=$(ADAFS_TEST_QUOTA=0 agent2 pstart $pair $ouid $ogid "$base/storage" pair 0 1 2)
p0=${out0#port=}; p0=${p0%% *}; p1=${out1#port=}; p1=${p1%% *}
check "a 2-node instance starts on t1 and t2 ($out0; $out1)" \
    eval 'case "$out0 $out1" in port=*" pid="*" port="*" pid="*) true ;; *) false ;; esac'
printf 'mount=/\nchunk_size=524288\ntimeout_ms=5000\nsecret=%s\nserver=127.0.0.1:%s\nserver=127.0.0.1:%s\n' \
    00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff "$p0" "$p1" > "$base/pair.text"
c0=$(agent configure $pair / 0 "$base/pair.text")
c1=$(agent2 configure $pair / 0 "$base/pair.text")
check "CONFIGURE of its servers on both ($c0; $c1)" test "$c0 $c1" = "ok ok"
check "  puts the instance file beside each one's secret and key, the owner's, 0600, no mount" \
    eval '(for t in t1 t2; do d=$base/storage/$t/persistent/pair
               test "$(stat -c "%u %a" "$d.instance")" = "$ouid 600" -a -f "$d.serverkey" || exit 1
           done) && test ! -e "$base/mnt/$pair"'
plog() { cat "$base/log/adafsd.job$pair.t$1.log" 2>/dev/null; }
check "  each server shares itself (--fair-policy user-fair) across 2 servers under the key" \
    eval '(for t in 1 2; do plog $t | grep -q "usage exchanged every 500 ms (peers from $base/storage/t$t/persistent/pair.instance)" || exit 1; done)'
check "  each server checks capabilities under the key (fsd/perm.c)" \
    eval '(for t in 1 2; do plog $t | grep -q "data served only with a capability from the file.s record server" || exit 1; done)'
check "  and counts the other's reports" \
    eval '(for _ in $(seq 100); do [ "$( (plog 1; plog 2) | grep -c "the reports of 1 of the 1 other servers count")" = 2 ] && exit 0; sleep 0.1; done; exit 1)'
printf 'mount=%s\nchunk_size=524288\ntimeout_ms=5000\nsecret=%s\nserver=127.0.0.1:%s\nserver=127.0.0.1:%s\n' \
    "$base/pmnt" 00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff "$p0" "$p1" \
    > "$base/inst-$owner"
check "the owner writes to it through the interposer (a file of 3 chunks across both servers too)" \
    as $owner sh -c "for i in 1 2 3 4 5 6 7 8; do echo \$i > $base/pmnt/f\$i; done; cat $base/pmnt/f8 >/dev/null &&
        t=\$(mktemp) && head -c 1500000 /dev/urandom > \$t && cp \$t $base/pmnt/big3 && cmp \$t $base/pmnt/big3 && rm \$t"
t0=$(agent teardown $pair)
t1=$(agent2 teardown $pair)
check "its destroy on both ($t0; $t1)" test "$t0 $t1" = "ok ok"
check "  and its key and instance file went with it" \
    eval 'test -z "$(ls "$base"/storage/t[12]/persistent/ 2>/dev/null | grep "^pair")"'

echo "1..$n"
[ "$fails" = 0 ]
