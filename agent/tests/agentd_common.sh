# agentd_common.sh: sourced by the tests that run adafs-agentd as root
# (test_agentd.sh, test_qos_agent.sh) and by other root tests that need
# munge (test_fs_shared.sh, test_fs_exchange.sh, test_persistent.sh): TAP
# lines, and a munged of the test's own under $base, as the cluster
# harness starts one, so that a test never touches the system's munged.
# agentd_setup makes $base, the EXIT trap and munged for the agent's
# tests; the others set base and an EXIT trap that calls stop_munged
# themselves (they have more to clean up).

n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; }
check() {  # check WHAT COMMAND...: one TAP line for a command's success
    local what=$1; shift
    if "$@"; then ok "$what"; else not_ok "$what"; fi
}
skip_all() { echo "1..0 # SKIP $1"; exit 0; }

# start_munged: munged on $base/munge/sock with a fresh key; exports
# ADAFS_TEST_MUNGE_SOCKET; skips the whole test if munged does not start.
start_munged() {
    mkdir -p "$base/munge"
    chown munge:munge "$base/munge"
    chmod 700 "$base/munge"
    dd if=/dev/urandom of="$base/munge/key" bs=1024 count=1 status=none
    chown munge:munge "$base/munge/key"
    chmod 400 "$base/munge/key"
    export ADAFS_TEST_MUNGE_SOCKET=$base/munge/sock
    setpriv --reuid=munge --regid=munge --clear-groups /usr/sbin/munged --force \
        --socket="$ADAFS_TEST_MUNGE_SOCKET" --key-file="$base/munge/key" \
        --pid-file="$base/munge/munged.pid" --log-file="$base/munge/log" \
        --seed-file="$base/munge/seed" 2>"$base/munge/err" ||
        skip_all "munged does not start: $(cat "$base/munge/err")"
    chmod 755 "$base/munge"
}

stop_munged() {
    [ -f "$base/munge/munged.pid" ] && kill "$(cat "$base/munge/munged.pid")" 2>/dev/null
}

# agentd_setup NAME: $base (a new /tmp/NAME.XXXXXX, mode 755), an EXIT trap
# that kills the agent ($agent_pid, if the test set it), stops munged and
# removes $base, and munged started.
agentd_setup() {
    base=$(mktemp -d "/tmp/$1.XXXXXX")
    chmod 755 "$base"
    agent_pid=
    trap agentd_cleanup EXIT
    start_munged
}

agentd_cleanup() {
    # SIGINT: the agent tears its jobs down (SIGTERM would leave them running).
    [ -n "$agent_pid" ] && kill -INT "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null
    stop_munged
    rm -rf "$base"
}
