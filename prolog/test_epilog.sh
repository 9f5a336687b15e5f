#!/bin/bash
# test_epilog.sh: adafs-epilog when the agent cannot be asked. Only a node
# without the agent's socket is released; a socket nobody listens on (an
# agent that crashed) must fail the Epilog, so slurmd drains the node.
set -u
epilog=${abs_builddir:-$(pwd)}/adafs-epilog
top_srcdir=${abs_top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
dir=$(mktemp -d /tmp/adafs-epilog-test.XXXXXX)
trap 'rm -rf "$dir"' EXIT
n=0
check() {  # check WHAT COMMAND...
    local what=$1; shift
    n=$((n + 1))
    if "$@"; then echo "ok $n - $what"; else echo "not ok $n - $what"; fi
}
run() {  # run SOCKET [OPTIONS]: the Epilog of job 7 on node n1; sets rc and err
    SLURM_JOB_ID=7 SLURMD_NODENAME=n1 "$epilog" --socket "$@" 2>"$dir/err"
    rc=$?
    err=$(cat "$dir/err")
}

run "$dir/none.sock"
check "no agent socket: released (rc $rc)" test "$rc" = 0
check "and says so" test "$err" = \
    "adafs-epilog: job 7 on n1: no agent socket $dir/none.sock: nothing to release"

python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$dir/stale.sock"
run "$dir/stale.sock" --restart-wait 0
check "a socket nobody listens on fails the Epilog (rc $rc)" test "$rc" = 1
check "naming the refused connection and the risk" test "$err" = \
    "adafs-epilog: job 7 on n1: cannot reach the agent at $dir/stale.sock: Connection refused (the agent is not running but left its socket: this job's server may still run here)"
# A killed agent's socket: asked again each second for --restart-wait (one
# restarted wipes what its predecessor left), then the Epilog fails.
start=$SECONDS
run "$dir/stale.sock" --restart-wait 2
check "waited --restart-wait 2 for an agent to start again, then failed (rc $rc, $((SECONDS - start)) s)" \
    bash -c "[ $rc = 1 ] && [ $((SECONDS - start)) -ge 2 ] && [ $((SECONDS - start)) -le 5 ]"
check "saying it waited, and for how long" bash -c \
    "grep -q 'Connection refused .*: waiting up to 2 s for the agent to start again' <<<\"\$0\" &&
     grep -q '(no agent answered within --restart-wait)\$' <<<\"\$0\"" "$err"
run "$dir/stale.sock" --prolog
check "as the Prolog it does not fail the job (rc $rc)" test "$rc" = 0

# A job id that is not one (slurmd sets it; anything else is a
# misconfiguration): nothing is asked of any agent, the Epilog fails.
for bad in 7abc 0 4294967296 -1 -18446744073709551615 " 7" "7 " $'7\n8'; do
    SLURM_JOB_ID=$bad SLURMD_NODENAME=n1 "$epilog" --socket "$dir/stale.sock" 2>"$dir/err"
    rc=$?
    check "SLURM_JOB_ID '$(printf %q "$bad")' fails the Epilog (rc $rc)" \
        bash -c "[ $rc = 1 ] && grep -q 'run me as slurmd' '$dir/err'"
done
SLURM_JOB_ID=0 "$epilog" --prolog --socket "$dir/stale.sock" 2>/dev/null
check "as the Prolog it does not fail the job for it (rc $?)" test "$?" = 0

touch "$dir/file"
chmod 600 "$dir/file"
run "$dir/file/x.sock"
check "any other error fails the Epilog (rc $rc)" test "$rc" = 1
check "naming the error" test "$err" = \
    "adafs-epilog: job 7 on n1: cannot reach the agent at $dir/file/x.sock: Not a directory"
# A process of a user listening where the agent's socket should be (a
# misconfigured, user-writable directory): the Epilog tells it nothing.
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
    chmod 777 "$dir"
    setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(1)
s.settimeout(5)
try:
    c, _ = s.accept()
    c.settimeout(1)
    open(sys.argv[2], "wb").write(c.recv(4096))
except Exception:
    pass
' "$dir/user.sock" "$dir/heard" &
    squatter=$!
    for _ in $(seq 50); do [ -S "$dir/user.sock" ] && break; sleep 0.1; done
    run "$dir/user.sock"
    wait "$squatter"
    check "a socket served by a user fails the Epilog (rc $rc)" test "$rc" = 1
    check "naming the listener's uid" test "$err" = \
        "adafs-epilog: job 7 on n1: $dir/user.sock is not served by root (uid $(id -u nobody)): not the agent"
    check "and the user's process heard nothing" test ! -s "$dir/heard"
else
    echo "ok $((n + 1)) # SKIP needs root and the user nobody"; n=$((n + 1))
fi
# What the Epilog asks of the agent: RELEASE with its --timeout, by default
# the longest a default plugin may still want the job's data (StageOutTimeout
# + AdafsStageOutKeep at their defaults + slack, common/stageout_bounds.h),
# so the agent never tears down a kept stage-out before the plugin does.
fake_agent() {  # fake_agent SOCKET BODYFILE: answers one request with success
    /usr/bin/python3 -c '
import socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(1)
s.settimeout(10)
c, _ = s.accept()
c.settimeout(5)
def full(n):
    b = b""
    while len(b) < n:
        m = c.recv(n - len(b))
        if not m:
            raise SystemExit("short read")
        b += m
    return b
head = full(24)
magic, ver, op, rid, length, status = struct.unpack("<IHHQIi", head)
open(sys.argv[2], "wb").write(full(length))
c.sendall(struct.pack("<IHHQIi", magic, ver, op, rid, 0, 0))
' "$1" "$2" &
    agent=$!
    for _ in $(seq 50); do [ -S "$1" ] && break; sleep 0.1; done
}
release_timeout() {  # the u32 timeout the agent heard, after the job id
    od -An -tu4 -j4 -N4 "$1" | tr -d ' '
}
if [ "$(id -u)" = 0 ]; then
    stageout_default=$(sed -n 's/^#define STAGEOUT_TIMEOUT_DEFAULT_S \([0-9]*\).*/\1/p' \
        "$top_srcdir/common/stageout_bounds.h")
    keep_default=$(sed -n 's/^#define STAGEOUT_KEEP_DEFAULT_S \([0-9]*\).*/\1/p' \
        "$top_srcdir/common/stageout_bounds.h")
    conf_doc=$top_srcdir/doc/burst_buffer.conf.md
    check "the bounds are burst_buffer.conf's documented defaults ($stageout_default, $keep_default)" \
        bash -c "grep -q '^\*\*StageOutTimeout\*\* (default: $stageout_default)' '$conf_doc' &&
                 grep -q '^\*\*AdafsStageOutKeep\*\* (default: $keep_default)' '$conf_doc'"
    fake_agent "$dir/agent.sock" "$dir/body"
    run "$dir/agent.sock"
    wait "$agent"
    heard=$(release_timeout "$dir/body")
    check "released (rc $rc)" test "$rc" = 0
    check "by default the agent waits past StageOutTimeout + AdafsStageOutKeep ($heard s)" \
        test "$heard" -gt $((stageout_default + keep_default))
    check "and says so in --help" bash -c "'$epilog' --help | grep -q ': $heard s)'"
    rm -f "$dir/agent.sock"
    fake_agent "$dir/agent.sock" "$dir/body"
    run "$dir/agent.sock" --timeout 120
    wait "$agent"
    check "an explicit --timeout is what the agent hears ($(release_timeout "$dir/body"))" \
        test "$(release_timeout "$dir/body")" = 120
    rm -f "$dir/agent.sock"
else
    echo "ok $((n + 1)) # SKIP the fake agent must be root's"; n=$((n + 1))
fi
for bad in 0 -5 x 2147483648; do
    SLURM_JOB_ID=7 SLURMD_NODENAME=n1 "$epilog" --socket "$dir/none.sock" --timeout "$bad" 2>"$dir/err"
    rc=$?
    check "--timeout '$bad' is refused (rc $rc)" \
        bash -c "[ $rc = 1 ] && grep -q 'expected seconds in 1..2147483647' '$dir/err'"
done
echo "1..$n"
