#!/bin/bash
# The mini-cluster harness fails within seconds when a daemon it waits for
# dies, showing that daemon's last errors, and refuses at once a build that
# the Slurm user or the job's user cannot read (a clone in `mktemp -d`).
. "${abs_top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
require_cluster
trap '"$cluster" stop >/dev/null 2>&1; [ -n "${holder:-}" ] && kill "$holder" 2>/dev/null' EXIT

etc=$ADAFS_CLUSTER_DIR/etc
holder=""

# hold PORT: a listener on PORT, so the daemon meant for it cannot bind
# (the cluster is stopped first: its own daemon may hold the port).
hold() {
    "$cluster" stop >/dev/null 2>&1
    python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(120)' "$1" &
    holder=$!
    sleep 0.5
}
release() { [ -n "$holder" ] && kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null; holder=""; }

# start_fails WHAT PATTERN...: cluster.sh start fails within 30 s (after
# stopping the previous cluster) and its message matches every PATTERN.
start_fails() {
    local what=$1; shift
    "$cluster" stop >/dev/null 2>&1
    local t0=$SECONDS out status=0
    out=$(timeout 120 "$cluster" start --clean 2>&1) || status=$?
    local took=$((SECONDS - t0)) missing=""
    for p in "$@"; do grep -qE -- "$p" <<<"$out" || missing="$missing '$p'"; done
    [ -z "$missing" ] || diag "the message lacks$missing"
    [ "$status" != 0 ] && [ -z "$missing" ] && [ $took -le 30 ] || sed 's/^/# /' <<<"$out"
    check "$what: start fails in ${took} s, saying why" -- \
        test "$status" != 0 -a -z "$missing" -a $took -le 30
}

# slurmctld exits at once: the plugin refuses a typo in burst_buffer.conf.
"$cluster" start --clean >/dev/null 2>&1 || true   # writes the configuration
sed -i 's/^AdafsChunkSize=.*/AdafsChunkSize=banana/' "$etc/burst_buffer.conf"
touch "$etc/burst_buffer.conf.keep"
start_fails "slurmctld dies loading the plugin" "slurmctld .*died" "invalid value 'banana' for AdafsChunkSize"
rm -f "$etc/burst_buffer.conf.keep"

hold $(( ${ADAFS_SLURMD_PORT:-17001} + 2 ))
start_fails "slurmd n3 cannot bind its port" "slurmd n3 exited" "Address already in use"
release

hold "$(agent_port_of 2)"
start_fails "agent n2 cannot listen" "adafs-agentd n2" "127.0.0.1:$(agent_port_of 2): port $(agent_port_of 2) is held by another process"
release

# A build only root can enter (a clone in mktemp -d, mode 0700).
private=$(mktemp -d)
ln -s "$ADAFS_BUILD_DIR" "$private/build"
"$cluster" stop >/dev/null 2>&1
t0=$SECONDS
out=$(ADAFS_BUILD_DIR=$private/build timeout 60 "$cluster" start --clean 2>&1)
status=$?
sed 's/^/# /' <<<"$out"
check "a private build is refused at once ($((SECONDS - t0)) s)" -- test $status != 0 -a $((SECONDS - t0)) -le 5
check "naming the directory, its mode and the user" -- \
    grep -q "user slurm cannot read $private/build/.*: $private is mode 700" <<<"$out"
rm -rf "$private"
tap_done
