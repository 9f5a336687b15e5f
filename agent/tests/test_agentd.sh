#!/bin/bash
# test_agentd.sh: the node agent adafs-agentd as it runs on a node: as root,
# with its own munged, a real adafsd per job and a stand-in stager, driven
# over TCP by agentd_client as the plugin would drive it. Checks what an
# unauthenticated peer may cost the agent, that a job user cannot make
# teardown fail, the bound on stager output kept for STATUS, the stager's
# munged (\$ADAFS_MUNGE_SOCKET) and the uid its credential carries, the checks on
# the storage path, and the FUSE mount of an access=both job (only its user
# enters; teardown takes it off with a process in it and adafs-fuse hung;
# an agent restarted after a crash takes off its predecessor's). Needs root
# and munged; skips otherwise.
set -u
builddir=${abs_builddir:-$(pwd)}
client=$builddir/tests/agentd_client
agentd=$builddir/adafs-agentd
adafsd=$builddir/adafsd
fuse=$builddir/adafs-fuse
. "${srcdir:-.}/tests/agentd_common.sh"

[ "$(id -u)" = 0 ] || skip_all "needs root (the agent starts servers as job users)"
command -v munged >/dev/null && id munge >/dev/null 2>&1 || skip_all "needs munged and the munge user"
command -v setpriv >/dev/null && command -v prlimit >/dev/null || skip_all "needs setpriv and prlimit"
[ -x "$client" ] && [ -x "$agentd" ] && [ -x "$adafsd" ] || skip_all "programs not built"

agentd_setup adafs-agentd-test

# The stand-in stager: more output than the agent keeps for STATUS.
cat > "$base/stage.sh" <<'EOF'
#!/bin/sh
# A source named /slow: a child keeps the output open after a kill.
for arg; do [ "$arg" = /slow ] && sleep 2; done
# A source named /munge: the munged the agent named, and the uid a
# credential made by this process carries, into the destination file.
src= dst=
for arg; do src=$dst dst=$arg; done
if [ "$src" = /munge ]; then
    { echo "socket=${ADAFS_MUNGE_SOCKET:-unset}"
      munge -S "$ADAFS_MUNGE_SOCKET" -n | unmunge -S "$ADAFS_MUNGE_SOCKET"; } > "$dst" 2>&1
    exit 0
fi
head -c 6000000 /dev/zero | tr '\0' 's'
head -c 6000000 /dev/zero | tr '\0' 'e' >&2
EOF
chmod 755 "$base/stage.sh"

mkdir -p "$base/storage" "$base/mnt" "$base/log"
user=$(id -u nobody)
group=$(id -g nobody)
as_user() { setpriv --reuid="$user" --regid="$group" --clear-groups "$@"; }

start_agent() {  # start_agent STORAGE_ROOT [WRAPPER...]: in the foreground, in the background
    local root=$1; shift
    "$@" "$agentd" --node t1 --listen 127.0.0.1:0 --storage-root "$root" --mount-prefix "$base/mnt" \
        --socket "$base/agent.sock" --adafsd "$adafsd" --stager "$base/stage.sh" --fuse "$fuse" \
        --slurm-user root --munge-socket "$ADAFS_TEST_MUNGE_SOCKET" --log "$base/agent.log" \
        --log-dir "$base/log" --request-timeout 3 --node-bandwidth 1G --foreground \
        2>"$base/agent.err" &
    agent_pid=$!
    for _ in $(seq 50); do
        port=$(sed -n 's/.*agent listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$base/agent.log" 2>/dev/null)
        [ -n "$port" ] && return 0
        sleep 0.1
    done
    return 1
}
agent() { "$client" 127.0.0.1 "$port" "$@"; }
logged() { grep -q -- "$1" "$base/agent.log"; }

check "the agent starts (storage below the sticky /tmp)" start_agent "$base/storage"

# --- both sides proved, every message sealed ---
out=$(agent ping)
check "a ping in a session for this node (t1) is served ($out)" test "$out" = "ok"
out=$(ADAFS_TEST_SEAL_NODE=t2 agent ping)
check "a hello for another node is refused ($out)" eval 'echo "$out" | grep -qF \
    "refused the handshake: node t1: the hello is for node t2, this is t1 (unauthenticated answer)"'
out=$(agent many 200)
check "one session carries many requests ($out)" test "$out" = "200 of 200 pings served on one session"
out=$(agent tamper)
check "a request changed on the way: the agent ends the session ($out)" \
    test "$out" = "the agent closed the session without an answer"
check "and logs why" logged "session ended: a message did not open (changed, replayed or out of order)"
out=$(agent replay)
check "a request sent twice is served once, then the session ends ($out)" \
    test "$out" = "the request once: served; the agent closed the session without an answer"
out=$(as_user "$client" 127.0.0.1 "$port" ping)
check "an ordinary user's hello is refused, naming the uid ($out)" \
    eval 'echo "$out" | grep -qF "uid $user may not use the agent (only uid 0 and root)"'

# --- an unauthenticated peer's cost is bounded ---
out=$(agent silent)
ms=$(echo "$out" | sed -n 's/closed after \([0-9]*\) ms/\1/p')
check "a silent connection is dropped at the 3 s handshake deadline ($out)" \
    test -n "$ms" -a "${ms:-0}" -ge 2500 -a "${ms:-0}" -lt 6000
check "the drop is logged as a timeout" logged "dropped before a hello: Connection timed out"

out=$(agent drip)
ms=$(echo "$out" | sed -n 's/closed after \([0-9]*\) ms/\1/p')
check "a client dripping a byte every 500 ms is dropped at the deadline too ($out)" \
    test -n "$ms" -a "${ms:-0}" -ge 2500 -a "${ms:-0}" -lt 6000

out=$(agent oversize 8192)
ms=$(echo "$out" | sed -n 's/closed after \([0-9]*\) ms/\1/p')
check "an 8 KiB hello is refused at its header ($out)" test -n "$ms" -a "${ms:-9999}" -lt 1000
check "the refusal is logged" logged "dropped before a hello: Message too long"

out=$(agent crowd 64)
check "64 idle connections do not keep out a client ($out)" \
    test "$out" = "with 64 idle connections held, a ping: served; 49 of them evicted"
check "the evictions are logged" logged "unauthenticated connections (16 from its address): evicted the oldest idle one"
out=$("$client" "$base/agent.sock" 0 localcrowd 80)
check "the local socket (root's Epilog) is never refused ($out)" \
    test "$out" = "local PING 80+1: status 0"
sleep 0.5
check "the agent serves again once they are gone" eval 'agent teardown 4 | grep -qx ok'

# 32 clients sending empty and bogus credentials, each in its own thread
# of the agent (munge contexts are per call: shared, they crashed it).
lines_before=$(wc -l < "$base/agent.log")
out=$(agent bogus 32 15)
# (Those whose hello had not arrived when 16 more came from 127.0.0.1 are
# evicted instead of refused.)
check "32 clients send bogus hellos for 15 s, thousands refused ($out)" \
    eval 'echo "$out" | awk "{ exit !(\$5 > 1000) }"'
check "the agent is alive" kill -0 "$agent_pid"
check "and serves" eval 'agent ping | grep -qx ok'
sleep 10.5   # the last window's summary
lines=$(( $(wc -l < "$base/agent.log") - lines_before ))
# Three budgets of at most 10 lines per 10 s each, and a summary each.
check "its log grew by $lines lines for them, not one per refusal" test "$lines" -lt 100
check "which say how many were left out" logged "similar lines left out in the last 10 s (rate limit)"
check "the log is not world-readable" test "$(stat -c %a "$base/agent.log")" = 600

# --- a job user cannot make teardown fail ---
jobdir=$base/storage/t1/job.1
check "START runs a server as the job user" eval 'agent start 1 $user $group $base/storage | grep -qx ok'
server=$(cat "$jobdir.pid" 2>/dev/null)
names=$(tr '\0' '\n' < "/proc/$server/environ" 2>/dev/null | sed 's/=.*//' |
        grep -vE '^(ASAN|UBSAN|LSAN|TSAN)_OPTIONS$' | sort | tr '\n' ' ')
check "the server's environment is only PATH, HOME, USER, LOGNAME, LANG ($names)" \
    test "$names" = "HOME LANG LOGNAME PATH USER "
check "none of it the agent's (HOME=/nonexistent, nobody's; PATH the stated one)" \
    eval 'tr "\0" "\n" < /proc/$server/environ | grep -qx "HOME=/nonexistent" &&
          tr "\0" "\n" < /proc/$server/environ | grep -qx "PATH=/usr/local/bin:/usr/bin:/bin"'
check "its log is root's alone (mode 600)" \
    test "$(stat -c '%U %a' "$base/log/adafsd.job1.t1.log")" = "root 600"
# --node-bandwidth: the server has its rates from the agent's loop, and
# the agent's word on the job's node count
check "the server was given its rates file and the node counts" \
    eval 'tr "\0" " " < /proc/$server/cmdline |
          grep -qF -- "--bandwidth-file $jobdir.bw/rates --fair-jobs $base/log/jobs.t1.nodes"'
sleep 0.3
check "the agent's loop writes the job its rate (the whole node: it is alone)" \
    test "$(cat "$jobdir.bw/rates" 2>/dev/null)" = "* 1073741824"
check "the node counts list the job (root's, 0644)" eval 'grep -qx "1 1" "$base/log/jobs.t1.nodes" &&
    test "$(stat -c "%U %a" "$base/log/jobs.t1.nodes")" = "root 644"'
check "CONFIGURE makes the mount point" eval 'agent configure 1 $base/mnt/1 | grep -qx ok'
for dir in "$jobdir" "$base/mnt/1"; do
    as_user sh -c "cd '$dir' && mkdir -p ro none/ro2 && touch ro/f none/ro2/f &&
                   chmod 555 ro none/ro2 && chmod 000 none && mkdir wx && chmod 300 wx"
done
check "the job user made a 0555, a 0000 and a 0300 directory"     test -d "$jobdir/none" -a -f "$jobdir/ro/f" -a -f "$base/mnt/1/ro/f"
out=$(agent teardown 1)
check "TEARDOWN wipes them ($out)" test "$out" = ok
check "the job's directory is gone" test ! -e "$jobdir"
check "its rates directory too, and its node count" \
    eval 'test ! -e "$jobdir.bw" && ! grep -q "^1 " "$base/log/jobs.t1.nodes"'
check "the job's mount point is gone" test ! -e "$base/mnt/1"

# --- everything a job puts on the node is bounded by its own file system ---
jobdir=$base/storage/t1/job.11
out=$(ADAFS_TEST_QUOTA=67108864 agent start 11 $user $group $base/storage)
check "START with a 64 MiB quota ($out)" test "$out" = ok
check "the server root is an ext4 file system of its own" \
    test "$(findmnt -n -o FSTYPE --target "$jobdir")" = ext4 -a "$(findmnt -n -o TARGET --target "$jobdir")" = "$jobdir"
check "owned by the job user, 0700, empty but for the server's files" \
    test "$(stat -c '%u %a' "$jobdir")" = "$user 700" -a ! -e "$jobdir/lost+found"
image_size=$(stat -c %s "$jobdir.img")
check "its image is 64 MiB and the stated reserve (96 MiB: $image_size)" test "$image_size" = 100663296
reserved=$(du -B1 "$jobdir.img" | cut -f1)
check "its blocks are reserved at START, not sparse ($reserved of $image_size)" test "$reserved" -ge "$image_size"
as_user dd if=/dev/zero of="$jobdir/by-hand" bs=1M count=512 2>"$base/dd.err"
check "the job user writing 512 MiB into it by hand gets ENOSPC" grep -q "No space left" "$base/dd.err"
used=$(du -B1 "$jobdir.img" | cut -f1)
# (du counts the backing file system's extent blocks of the image too.)
check "and no byte lands beyond the image ($used <= $image_size + 64 KiB)" test "$used" -le $((image_size + 65536))
check "the server still answers STATUS" eval 'agent status 11 | grep -q "^state="'
check "TEARDOWN job 11" eval 'agent teardown 11 | grep -qx ok'
check "its file system is detached and its image gone" \
    test "$(findmnt -n -o TARGET --target "$base/storage/t1")" != "$jobdir" -a ! -e "$jobdir.img" -a ! -e "$jobdir"

# --- what is kept of a stager's output is bounded, and freed at teardown ---
check "START job 2" eval 'agent start 2 $user $group $base/storage | grep -qx ok'
check "STAGE starts the stand-in stager" eval 'agent stage 2 /src /dst | grep -qx ok'
for _ in $(seq 100); do
    out=$(agent status 2)
    case $out in state=2*) break ;; esac
    sleep 0.1
done
# 6000000 bytes each way; 4 MiB (4194304) kept.
check "STATUS: the stager finished ($out)" eval 'case $out in "state=2 exit=0 "*) true ;; *) false ;; esac'
check "STATUS keeps the first 4 MiB of stdout and says what it dropped" \
    eval 'echo "$out" | grep -q " summary=4194331 .*summary_end=s*|\.\.\. 1805696 bytes dropped| "'
check "STATUS keeps the first 4 MiB of stderr and says what it dropped" \
    eval 'echo "$out" | grep -q " errors=4194331 .*errors_end=e*|\.\.\. 1805696 bytes dropped|$"'
# A persistent instance's servers ask a stager for munge's word on its uid
# (stage lines of a user other than the instance's owner): the agent names
# its munged, and the credential, made after the drop, is the job user's.
install -d -o "$user" -g "$group" "$base/out"
check "STAGE a stager that makes a munge credential" eval 'agent stage 2 /munge $base/out/munge | grep -qx ok'
for _ in $(seq 100); do case $(agent status 2) in state=2*) break ;; esac; sleep 0.1; done
check "the stager has \$ADAFS_MUNGE_SOCKET, the agent's --munge-socket ($(head -1 "$base/out/munge"))" \
    grep -qx "socket=$ADAFS_TEST_MUNGE_SOCKET" "$base/out/munge"
check "  a credential it makes is the job user's uid $user ($(grep '^UID:' "$base/out/munge"))" \
    grep -Eq "^UID: +[^ ]+ \($user\)\$" "$base/out/munge"
check "TEARDOWN job 2" eval 'agent teardown 2 | grep -qx ok'
out=$(agent status 2)
check "the job's record and output are freed at teardown ($out)" \
    eval 'case $out in "status -2 (transient fault): node t1: job 2: not deployed here (this agent runs since "*")") true ;; *) false ;; esac'
check "START of the same job again works" eval 'agent start 2 $user $group $base/storage | grep -qx ok'
check "and once more while it runs (a plugin whose reply was lost)" \
    eval 'agent start 2 $user $group $base/storage | grep -qx ok'
check "which says so" logged "job 2: started again: its server is up on port"
check "and TEARDOWN" eval 'agent teardown 2 | grep -qx ok'
# The plugin's long poll: a WATCH waits for the stager on a session that
# goes on serving meanwhile.
check "START job 6" eval 'agent start 6 $user $group $base/storage | grep -qx ok'
check "STAGE a stager that takes 2 s" eval 'agent stage 6 /slow /dst | grep -qx ok'
out=$(agent watch 6)
check "a WATCH waits for it while a PING on the same session is answered ($out)" test "$out" = \
    "ping id 2 status 0 state 0 after <1000 ms; watch id 1 status 0 state 2 after >=1000 ms"
check "TEARDOWN job 6" eval 'agent teardown 6 | grep -qx ok'
out=$(agent watch 6)
check "a WATCH of a job not deployed is answered at once ($out)" \
    eval 'echo "$out" | grep -q "watch id 1 status -2 state 0 after <1000 ms" &&
          echo "$out" | grep -q "ping id 2 status 0"'
# A record whose stager's output is still open is kept until it ends, and
# does not get in the way of the job's next run.
check "START job 5" eval 'agent start 5 $user $group $base/storage | grep -qx ok'
check "STAGE a stager that is slow to go" eval 'agent stage 5 /slow /dst | grep -qx ok'
check "TEARDOWN while it runs" eval 'agent teardown 5 | grep -qx ok'
check "START job 5 again at once" eval 'agent start 5 $user $group $base/storage | grep -qx ok'
sleep 2.5
out=$(agent status 5)
check "the new run is untouched when the old stager ends ($out)" \
    eval 'case $out in "state=0 exit=0 summary=0 errors=0 "*) true ;; *) false ;; esac'
check "TEARDOWN the new run" eval 'agent teardown 5 | grep -qx ok'

# --- instances of any size start: nothing of the other servers is on a command line ---
for size in 272:300 4095:4096; do
    index=${size%%:*} servers=${size##*:}
    job=$((900 + index % 100))
    out=$(agent start $job $user $group $base/storage $index $servers)
    check "START of server $index of $servers ($out)" test "$out" = ok
    check "its server serves as $index of $servers" \
        grep -q "server $index of $servers listening" "$base/log/adafsd.job$job.t1.log"
    if [ "$servers" = 4096 ]; then
        out=$(agent configure $job $base/mnt/$job 4096)
        check "CONFIGURE with a 4,096-server instance file ($out)" test "$out" = ok
        check "the instance file lists all 4,096 servers" \
            test "$(grep -c '^server=' "$base/mnt/.job.$job.instance")" = 4096
    fi
    check "TEARDOWN it" eval 'agent teardown $job | grep -qx ok'
done
out=$(agent start 998 $user $group $base/storage 0 4097)
check "START of an instance larger than 4,096 servers is refused ($out)" \
    eval 'case $out in "status -7 (job fault): node t1: job 998: 4097 servers, more than the 4096"*) true ;; *) false ;; esac'

# --- one job's slow teardown does not hold up the other jobs ---
ms_now() { echo $(( $(date +%s%N) / 1000000 )); }
check "START jobs 6 and 7" eval 'agent start 6 $user $group $base/storage | grep -qx ok &&
                                 agent start 7 $user $group $base/storage | grep -qx ok'
# A stopped server ignores SIGTERM: the agent waits 10 s, then kills it.
kill -STOP "$(cat "$base/storage/t1/job.6.pid")"
t0=$(ms_now)
agent teardown 6 > "$base/teardown6" &
td=$!
sleep 0.5
s0=$(ms_now); status7=$(agent status 7); start8=$(agent start 8 $user $group $base/storage); s1=$(ms_now)
wait "$td"
t1=$(ms_now)
check "while job 6's server holds up its teardown, STATUS and START of other jobs are served ($((s1 - s0)) ms)" \
    eval 'test "$((s1 - s0))" -lt 2000 && case $status7 in "state=0 exit=0 "*) true ;; *) false ;; esac'
check "and START of job 8 worked ($start8)" test "$start8" = ok
check "job 6's teardown ends once its server is killed ($((t1 - t0)) ms: $(cat "$base/teardown6"))" \
    test "$((t1 - t0))" -ge 9000 -a "$(cat "$base/teardown6")" = ok
check "the kill is logged" logged "job 6: server pid .* ignored SIGTERM for 10000 ms, killing it"
check "TEARDOWN jobs 7 and 8" eval 'agent teardown 7 | grep -qx ok && agent teardown 8 | grep -qx ok'

# --- no user may be able to change a directory on root's way to storage ---
mkdir -p "$base/user/storage" "$base/gw/storage" "$base/storage/sub"
chown "$user" "$base/user" "$base/storage/sub"
chmod 775 "$base/gw"
ln -s storage "$base/link"
refused_root() {  # refused_root ROOT MESSAGE: the agent does not start, saying why
    "$agentd" --node t2 --listen 127.0.0.1:0 --storage-root "$1" --mount-prefix "$base/mnt" \
        --socket "$base/agent2.sock" --slurm-user root --log-dir "$base/log" --foreground \
        2>"$base/agent2.err" && return 1
    grep -qxF "adafs-agentd: --storage-root $1: $2" "$base/agent2.err" ||
        { sed 's/^/# /' "$base/agent2.err"; return 1; }
}
check "a storage root below a user's directory is refused" \
    refused_root "$base/user/storage" "$base/user is owned by uid $user, not root"
check "a storage root below a group-writable directory is refused" \
    refused_root "$base/gw/storage" "$base/gw is group/world-writable and not sticky"
check "a storage root through a symbolic link is refused" \
    refused_root "$base/link/x" "$base/link is a symbolic link"
check "a storage root that is itself world-writable is refused" \
    refused_root "/tmp" "/tmp is group/world-writable"
mkdir -p "$base/user/log"
chown "$user" "$base/user/log"
"$agentd" --node t2 --listen 127.0.0.1:0 --storage-root "$base/storage" --mount-prefix "$base/mnt" \
    --socket "$base/agent2.sock" --slurm-user root --log-dir "$base/user/log" --foreground \
    2>"$base/agent2.err"
check "a log directory a user owns is refused ($(cat "$base/agent2.err"))" \
    grep -qxF "adafs-agentd: --log-dir $base/user/log: $base/user is owned by uid $user, not root" \
    "$base/agent2.err"
out=$(agent start 3 $user $group $base/storage/sub)
check "START refuses storage below a user's directory, the node's fault ($out)" test "$out" = \
    "status -1 (node fault): node t1: job 3: storage $base/storage/sub/t1: $base/storage/sub is owned by uid $user, not root"
check "and creates nothing there" test ! -e "$base/storage/sub/t1"

# --- access=both: the job's file system mounted for its user alone ---
# start_fuse_job ID: START and CONFIGURE it with access=both (2) and the
# instance text the plugin would send.
start_fuse_job() {
    agent start "$1" $user $group $base/storage | grep -qx ok || return 1
    local server_port   # not "port": that is the agent's, agent() uses it
    server_port=$(sed -n "s/.*job $1: server 0 of 1 up as uid .* on port \([0-9]*\).*/\1/p" \
                  "$base/agent.log" | tail -1)
    printf 'mount=%s\nchunk_size=524288\ntimeout_ms=3000\nsecret=%s\nserver=127.0.0.1:%s\n' \
        "$base/mnt/$1" 00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff \
        "$server_port" >"$base/inst$1"
    local out
    out=$(agent configure "$1" "$base/mnt/$1" 2 "$base/inst$1")
    [ "$out" = ok ] || { echo "# CONFIGURE: $out"; sed 's/^/# /' "$base"/log/adafs-fuse.job"$1".* 2>/dev/null; return 1; }
}
fuse_pid() { sed -n 's/^pid //p' "$base/mnt/.job.$1.fuse" 2>/dev/null; }
mounted() { grep -q " $1 fuse.adafs " /proc/mounts; }
state() { sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null; }
if [ -e /dev/fuse ] && [ -x "$fuse" ]; then
    check "START and CONFIGURE access=both job 9" start_fuse_job 9
    check "the job's file system is mounted at its mount point" mounted "$base/mnt/9"
    check "by the job's user, nosuid and nodev" \
        eval 'grep " $base/mnt/9 fuse.adafs " /proc/mounts | grep -q "nosuid,nodev.*user_id=$user,group_id=$group"'
    dev=$(awk -v m="$base/mnt/9" '$5 == m { print $3 }' /proc/self/mountinfo)
    check "mapped files are read ahead 1 MiB at a time (bdi $dev: $(cat /sys/class/bdi/$dev/read_ahead_kb) KiB)" \
        test "$(cat "/sys/class/bdi/$dev/read_ahead_kb")" = 1024
    pid=$(fuse_pid 9)
    check "adafs-fuse (pid $pid) runs as the job's user" test "$(stat -c %u "/proc/$pid")" = "$user"
    if as_user sh -c "echo through > $base/mnt/9/f && cat $base/mnt/9/f" | grep -qx through; then
        ok "the user writes and reads through it"
    else
        sed 's/^/# /' "$base"/log/adafs-fuse.job9.* 2>/dev/null | head -20
        not_ok "the user writes and reads through it"
    fi
    check "the file is in adafs: its server stores it" \
        eval 'test -n "$(find "$base/storage/t1/job.9" -type f 2>/dev/null | head -1)"'
    check "root may not enter it" eval '! ls "$base/mnt/9" >/dev/null 2>&1'
    check "nor may another user" \
        eval '! setpriv --reuid=1 --regid=1 --clear-groups ls "$base/mnt/9" >/dev/null 2>&1'
    # a process sits in the mount, another waits on a hung adafs-fuse
    # as_user is a function, so $! is the subshell running it: the process
    # in the mount is its child. It must not hold the test's output open
    # either, or the harness waits out its sleep after the test ends.
    as_user sh -c "cd '$base/mnt/9' && exec 3<f && exec sleep 300" </dev/null >/dev/null 2>&1 &
    sleep 0.3
    sitter=$(pgrep -P "$!" -x sleep)
    check "a process sits in the mount (pid ${sitter:-none})" test -n "$sitter"
    kill -STOP "$pid"
    as_user cat "$base/mnt/9/f" >/dev/null 2>&1 &
    waiter=$!
    sleep 0.3
    t0=$(ms_now)
    out=$(agent teardown 9)
    t1=$(ms_now)
    check "TEARDOWN with a process in the mount and adafs-fuse hung ($out, $((t1 - t0)) ms)" \
        test "$out" = ok -a "$((t1 - t0))" -lt 15000
    check "the mount is gone" eval '! mounted "$base/mnt/9"'
    check "adafs-fuse is gone" test -z "$(state "$pid")"
    for _ in $(seq 30); do [ -z "$(state "$waiter")" ] && break; sleep 0.1; done
    check "the reader that waited on it was released" test -z "$(state "$waiter")"
    check "the process in the mount is not stuck ($(state "$sitter"))" test "$(state "$sitter")" != D
    kill "$sitter" 2>/dev/null
    check "the data is wiped and the mount point removed" \
        test ! -e "$base/storage/t1/job.9" -a ! -e "$base/mnt/9" -a ! -e "$base/mnt/.job.9.fuse"
    check "adafs-fuse was stopped, not waited for ($(grep -c "adafs-fuse pid $pid ignored" "$base/agent.log") waits)" \
        eval '! logged "adafs-fuse pid $pid ignored SIGTERM"' 
    check "the unmount is logged" logged "unmounted $base/mnt/9"

    # a crashed agent leaves a mount and adafs-fuse, the job's server died
    # with it: the next agent cannot re-adopt the job and takes them off
    check "START and CONFIGURE access=both job 10" start_fuse_job 10
    pid=$(fuse_pid 10)
    kill -9 "$agent_pid" "$(cat "$base/storage/t1/job.10.pid")"
    wait "$agent_pid" 2>/dev/null
    agent_pid=
    check "the agent crashed, its job's mount stays" mounted "$base/mnt/10"
    : >"$base/agent.log"   # start_agent waits for the new agent's line
    check "an agent started after it" start_agent "$base/storage"
    check "takes the mount off" eval '! mounted "$base/mnt/10"'
    # (its exit is reaped by init, which may take a while: a zombie is gone)
    check "stops the orphaned adafs-fuse" eval 'case $(state "$pid") in ""|Z) true ;; *) false ;; esac' 
    check "and wipes the job" test ! -e "$base/storage/t1/job.10" -a ! -e "$base/mnt/10"
    check "naming why, once" test "$(grep -c "recovery: job 10: not re-adopted (its server pid [0-9]* is gone" "$base/agent.log")" = 1
    : >"$base/agent.err"   # the crash's leftovers are not the new agent's
else
    echo "# no /dev/fuse or adafs-fuse: the FUSE checks are skipped"
fi

# --- an agent that crashed leaves a mounted file system: the next one removes it ---
check "START job 12" eval 'agent start 12 $user $group $base/storage | grep -qx ok'
server12=$(cat "$base/storage/t1/job.12.pid")
kill -KILL "$agent_pid"
wait "$agent_pid" 2>/dev/null
agent_pid=
# No record (an agent from before records): not re-adopted, its server
# found by its pid file as before.
rm "$base/storage/t1/job.12.record"
check "after kill -9 of the agent, job 12's file system is still mounted" \
    test "$(findmnt -n -o TARGET --target "$base/storage/t1/job.12")" = "$base/storage/t1/job.12"
# The job's user mounts a FUSE file system of their own on its root (as
# fusermount3 lets them where /dev/fuse is open to users; root makes that
# mount here): root's lstat of it answers EACCES, and recovery once skipped
# the job, its store and data left mounted under it.
usermount=${srcdir:-.}/../tests/cluster/usermount.py
if [ -c /dev/fuse ] && python3 "$usermount" "$base/storage/t1/job.12" "$user" >/dev/null 2>&1; then
    check "a FUSE mount of the job's user is stacked on its root" \
        test "$(awk -v d="$base/storage/t1/job.12" '$5 == d' /proc/self/mountinfo | wc -l)" = 2
fi
: > "$base/agent.log"
check "the agent starts again" start_agent "$base/storage"
gone() { ! kill -0 "$1" 2>/dev/null || grep -q '^[0-9]* ([^)]*) Z' "/proc/$1/stat"; }
# SIGKILLed: it is gone once the kernel has torn it down (slow under load).
gone_within_10s() { for _ in $(seq 100); do gone "$1" && return 0; sleep 0.1; done; return 1; }
check "it stopped the orphaned server" gone_within_10s "$server12"
check "detached its file system and removed the image" \
    eval '[ ! -e $base/storage/t1/job.12.img ] &&
          [ "$(findmnt -n -o TARGET --target $base/storage/t1)" != "$base/storage/t1/job.12" ]'
check "nothing is mounted there any more" \
    test "$(awk -v d="$base/storage/t1/job.12" '$5 == d' /proc/self/mountinfo | wc -l)" = 0
check "and said so, naming the server it stopped" \
    grep -q "recovery: job 12: not re-adopted (.*): wiping $base/storage/t1/job.12, orphaned server pid $server12 stopped" "$base/agent.log"

# --- an agent killed and started again re-adopts the jobs it can prove its own ---
check "START job 13 (a store) and job 14" eval 'agent start 13 $user $group $base/storage | grep -qx ok &&
    agent start 14 $user $group $base/storage | grep -qx ok'
server13=$(cat "$base/storage/t1/job.13.pid")
server14=$(cat "$base/storage/t1/job.14.pid")
check "job 13's record is root's, 0600" test "$(stat -c '%u %a' "$base/storage/t1/job.13.record")" = "0 600"
kill -KILL "$agent_pid"
wait "$agent_pid" 2>/dev/null
agent_pid=
# What job 14's user can write: its secret file (and their servers' /proc).
as_user sh -c "echo 0000 > $base/mnt/.job.14.secret"
: > "$base/agent.log"
check "the agent starts again" start_agent "$base/storage"
check "job 13 re-adopted, its server kept" eval 'logged "recovery: job 13: re-adopted: its server pid $server13" &&
    kill -0 $server13'
check "its file system still mounted" \
    test "$(findmnt -n -o TARGET --target "$base/storage/t1/job.13")" = "$base/storage/t1/job.13"
out=$(agent start 13 $user $group $base/storage)
check "a START again of job 13 answers its server ($out)" test "$out" = ok
check "job 14 (its secret file changed) wiped, naming why" \
    logged "recovery: job 14: not re-adopted (its secret file does not hold its record's secret): wiping .*, its server stopped"
check "job 14's server stopped" gone_within_10s "$server14"
out=$(agent teardown 13)
check "TEARDOWN of the re-adopted job 13 ($out)" test "$out" = ok
check "stops its server and wipes it, record too" eval 'gone_within_10s $server13 &&
    [ ! -e $base/storage/t1/job.13 ] && [ ! -e $base/storage/t1/job.13.record ] &&
    [ ! -e $base/storage/t1/job.13.img ]'

stop_agent() {  # stop_agent [SIGNAL]: TERM by default; checks a clean exit with nothing on stderr
    local sig=${1:-TERM}
    kill -"$sig" "$agent_pid"
    wait "$agent_pid"
    local rc=$?
    agent_pid=
    check "SIG$sig stops the agent cleanly (status $rc)" test "$rc" = 0
    check "nothing on its stderr (no sanitizer reports)" test ! -s "$base/agent.err"
    [ -s "$base/agent.err" ] && sed 's/^/# /' "$base/agent.err" | head -40
}

# --- SIGTERM (systemctl restart, an upgrade) leaves running jobs to the
# next agent; SIGINT, the admin's explicit stop, tears them down ---
check "START job 15" eval 'agent start 15 $user $group $base/storage | grep -qx ok'
server15=$(cat "$base/storage/t1/job.15.pid")
stop_agent TERM
check "SIGTERM left job 15's server running" kill -0 "$server15"
check "  its record, data and file system in place" eval '[ -e $base/storage/t1/job.15.record ] &&
    [ "$(findmnt -n -o TARGET --target $base/storage/t1/job.15)" = "$base/storage/t1/job.15" ]'
check "  and said so" logged "stopping on Terminated: its jobs left running for the next agent"
check "  its socket left (the Epilog, refused, waits for the next agent)" test -S "$base/agent.sock"
: > "$base/agent.log"
check "the agent starts again" start_agent "$base/storage"
check "job 15 re-adopted, its server kept" eval 'logged "recovery: job 15: re-adopted: its server pid $server15" &&
    kill -0 $server15'
out=$(agent start 15 $user $group $base/storage)
check "a START again of job 15 answers its server ($out)" test "$out" = ok
stop_agent INT
check "SIGINT stopped job 15's server" gone_within_10s "$server15"
check "  and wiped it, record too" test ! -e "$base/storage/t1/job.15" -a ! -e "$base/storage/t1/job.15.record"
check "  and said so" logged "stopping on SIGINT: tearing down every instance"

# --- out of file descriptors, the agent waits instead of spinning ---
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$agent_pid/stat"; }
: > "$base/agent.log"
# (16: fewer than the unauthenticated connections one address may hold.)
check "the agent starts with 16 file descriptors" start_agent "$base/storage" prlimit --nofile=16:16
agent hold 48 3 >/dev/null &
holder=$!
sleep 0.5
before=$(cpu_ticks)
sleep 1
after=$(cpu_ticks)
wait "$holder"
check "it uses under 20% of a CPU while accept fails (ticks $before -> $after)" \
    test $((after - before)) -lt 20
# Once per time it runs out (a held connection the agent drops at its
# request timeout frees a descriptor and may start a second one), not once
# per attempt (ten a second).
said=$(grep -c "accepting a network connection: Too many open files: pausing 100 ms between attempts" "$base/agent.log")
check "and says so once per time it runs out, not per attempt ($said)" test "$said" -ge 1 -a "$said" -le 3
stop_agent

# --- the agent's port held by someone else ---
free_port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
setpriv --reuid="$user" --regid="$group" --clear-groups /usr/bin/python3 -c '
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(1)
time.sleep(5)' "$free_port" &
squatter=$!
for _ in $(seq 50); do grep -q ":$(printf %04X "$free_port") 00000000:0000 0A" /proc/net/tcp && break; sleep 0.1; done
"$agentd" --node t2 --listen "127.0.0.1:$free_port" --storage-root "$base/storage" \
    --mount-prefix "$base/mnt" --slurm-user root --log-dir "$base/log" --foreground 2>"$base/agent2.err"
rc=$?
kill "$squatter" 2>/dev/null; wait "$squatter" 2>/dev/null
check "a port a user's process holds: the agent does not start (rc $rc)" test "$rc" = 1
check "and names the port, the holder and what to do ($(head -c 160 "$base/agent2.err"))" \
    grep -qF "port $free_port is held by another process, uid $user (nobody): while the agent was down a user's process may have taken it" "$base/agent2.err"

# Started by systemd with its socket (adafs-agentd.socket), the agent takes
# that socket instead of --listen.
if command -v systemd-socket-activate >/dev/null; then
    free_port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    : > "$base/agent.log"
    systemd-socket-activate -l "127.0.0.1:$free_port" "$agentd" --node t1 \
        --storage-root "$base/storage" --mount-prefix "$base/mnt" --socket "$base/agent.sock" \
        --adafsd "$adafsd" --stager "$base/stage.sh" --slurm-user root \
        --munge-socket "$ADAFS_TEST_MUNGE_SOCKET" --log "$base/agent.log" --log-dir "$base/log" \
        --foreground 2>"$base/agent.err" &
    activator=$!
    sleep 0.5
    port=$free_port
    out=$(agent ping)
    check "socket-activated (no --listen), the agent serves on systemd's socket ($out)" test "$out" = ok
    check "and says where it listens" logged "agent listening on 127.0.0.1:$free_port"
    [ "$out" = ok ] || { sed 's/^/# /' "$base/agent.err"; sed 's/^/# /' "$base/agent.log"; }
    # (It execs the agent in its own process: this stops the agent.)
    kill "$activator" 2>/dev/null
    wait "$activator" 2>/dev/null
else
    ok "# SKIP systemd-socket-activate not installed"
fi

if [ "$fails" -gt 0 ]; then
    echo "# agent log:"; sed 's/^/# /' "$base/agent.log"
fi
echo "1..$n"
