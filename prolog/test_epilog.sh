#!/bin/bash
# test_epilog.sh: adafs-epilog when the agent cannot be asked. Only a node
# without the agent's socket is released; a socket nobody listens on (an
# agent that crashed) must fail the Epilog, so slurmd drains the node.
set -u
epilog=${abs_builddir:-$(pwd)}/adafs-epilog
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
run "$dir/stale.sock"
check "a socket nobody listens on fails the Epilog (rc $rc)" test "$rc" = 1
check "naming the refused connection and the risk" test "$err" = \
    "adafs-epilog: job 7 on n1: cannot reach the agent at $dir/stale.sock: Connection refused (the agent is not running but left its socket: this job's server may still run here)"
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
echo "1..$n"
