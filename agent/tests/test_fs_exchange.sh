#!/bin/bash
# test_fs_exchange.sh: two adafsd on loopback exchange per-entity usage
# (fsd/exchange.h) so that fair sharing holds across them. user-fair, one
# slot, 2 ms of emulated device per request (the servers, not the clients,
# are the bottleneck even on a loaded machine), lambda 100 ms: user A
# (adafs-test) loads both servers, user B (adafs-test2) only server 1.
# Without the exchange A gets 3 times B (unit test); with it, after the
# first periods, both users get about what one server serves. Also: the
# servers' key is not readable by the users, and a report forged by a user
# (right format, no key) is refused and logged. Needs root; skips otherwise.
set -u
builddir=${abs_builddir:-$(pwd)}
ctl=${ADAFS_TEST_CTL:-$builddir/adafs-ctl}
client=$builddir/tests/exchange_client
preload=${ADAFS_TEST_PRELOAD:-$builddir/.libs/libadafs_preload.so}
. "${srcdir:-.}/tests/agentd_common.sh"

[ "$(id -u)" = 0 ] || skip_all "needs root (runs clients as the test users)"
command -v setpriv >/dev/null || skip_all "needs setpriv"
py=/usr/bin/python3
[ -x $py ] || skip_all "needs $py (the test users run it)"
id adafs-test >/dev/null 2>&1 && id adafs-test2 >/dev/null 2>&1 ||
    skip_all "needs the test users adafs-test and adafs-test2 (tests/cluster/cluster.sh check-access creates them)"
[ -x "$client" ] && [ -x "$ctl" ] && [ -e "$preload" ] || skip_all "programs not built"
A=adafs-test B=adafs-test2

base=$(mktemp -d /tmp/adafs-exchange-test.XXXXXX)
chmod 755 "$base"
cleanup() {
    [ -f "$base/fs/servers" ] && "$ctl" stop --base "$base/fs" >/dev/null 2>&1
    rm -rf "$base"
}
trap cleanup EXIT
cat > "$base/adafsd" <<WRAP
#!/bin/sh
exec "$builddir/adafsd" "\$@" --fair-policy user-fair --fair-slots 1 \
    --test-service-time 2000 --fair-exchange 100 --log-level debug
WRAP
chmod 755 "$base/adafsd"
if ! "$ctl" start --servers 2 --base "$base/fs" --adafsd "$base/adafsd" \
        --timeout-ms 10000 >"$base/ctl.out" 2>&1; then
    echo "Bail out! adafs-ctl start failed: $(cat "$base/ctl.out")"
    exit 1
fi
for u in $A $B; do
    install -m 600 -o "$u" "$base/fs/instance" "$base/inst-$u"
done
# The root directory is the servers' user's (root): the users' files go in /pub.
# (Under the sanitizers mkdir, not built with them, needs their runtime first.)
asan_env=
if [ -n "${ADAFS_TEST_ASAN_RT:-}" ]; then
    preload="$ADAFS_TEST_ASAN_RT $preload"
    asan_env=ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0
fi
env LD_PRELOAD="$preload" $asan_env ADAFS_INSTANCE="$base/fs/instance" mkdir -m 1777 /adafs/pub ||
    { echo "Bail out! cannot make /pub for the users"; exit 1; }
logs() { cat "$base"/fs/server.*.log; }
load() {  # load USER SERVER PROCS: "ops N" after a 0.5 s warm-up, over 1.5 s
    timeout -k 5 30 setpriv --reuid="$1" --regid="$(id -g "$1")" --init-groups \
        env ADAFS_INSTANCE="$base/inst-$1" "$client" "$2" "$3" 0.5 1.5 2>>"$base/client.err" | awk '{print $2}'
}

check "both servers exchange usage" eval '[ "$(logs | grep -c "usage exchanged every 100 ms")" = 2 ]'
check "the servers' key is the servers' alone (0600 root)" \
    eval '[ "$(stat -c %a:%U "$base/fs/serverkey")" = 600:root ]'
check "  a user cannot read it" eval '! setpriv --reuid=$A --regid=$A --clear-groups \
    cat "$base/fs/serverkey" 2>/dev/null'

load $A 0 2 >"$base/a0" & load $A 1 2 >"$base/a1" & load $B 1 2 >"$base/b1"; wait
a=$(( $(cat "$base/a0") + $(cat "$base/a1") + 0 )) b=$(( $(cat "$base/b1") + 0 ))
ratio=$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", b ? a / b : 999}')
# About 1.05 on a quiet machine; 1.36 was seen with the machine loaded four
# times over (its clients starved). The bound tells the exchange working
# (near 1) from not working (3) with room for that load, not a tuned figure.
check "A on both servers, B on one: A/B $ratio (A $a, B $b; 3 without the exchange)$(sed "s/^/; /" "$base/client.err" | head -3 | tr -d "\n")" \
    awk -v r="$ratio" 'BEGIN {exit !(r >= 0.67 && r <= 1.5)}'
check "  server 1 applied server 0's reports" eval 'grep -q "applied 1 peers" "$base/fs/server.1.log"'

# A user holds the secret, not the servers' key: a report in the right
# format, sent to server 1's port from server 0's, is refused.
port1=$(awk '$1 == 1 {print $3}' "$base/fs/servers")
setpriv --reuid=$A --regid=$A --clear-groups $py - "$port1" <<'PY'
import os, socket, struct, sys, time
hdr = struct.pack("<IHHHHIIQ", 0x58464441, 1, 0, 1, 1, 0, 2, time.time_ns())
entry = struct.pack("<QdQ", 1 << 62 | os.getuid(), 1.0, 0)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(hdr + entry + os.urandom(32), ("127.0.0.1", int(sys.argv[1])))
PY
sleep 0.3
check "a report forged by a user is refused and logged" \
    eval 'grep -q "refused a usage report not made with this instance.s server key" "$base/fs/server.1.log"'

# Anyone may send datagrams to the port: a flood of such reports (each
# refused only after its MAC is computed) must not keep the server from
# its own periods (it read until none was left, and never sent again).
periods() { grep -c "fair exchange: applied" "$base/fs/server.1.log"; }
before=$(periods)
for i in 1 2 3; do
    setpriv --reuid=$B --regid=$B --clear-groups timeout 3 $py - "$port1" <<'PY' &
import os, socket, struct, sys, time
hdr = struct.pack("<IHHHHIIQ", 0x58464441, 1, 0, 1, 1, 0, 2, time.time_ns())
msg = hdr + struct.pack("<QdQ", 1 << 62 | os.getuid(), 1.0, 0) + os.urandom(32)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setblocking(False)
while True:
    try:
        s.sendto(msg, ("127.0.0.1", int(sys.argv[1])))
    except BlockingIOError:
        pass
PY
done
wait
ran=$(( $(periods) - before ))
check "under 3 s of a user's flood of forged reports, server 1 kept its periods ($ran of about 30)" \
    test "$ran" -ge 10
check "  and logged the flood in a few lines" \
    eval '[ "$(grep -c "fair exchange: refused" "$base/fs/server.1.log")" -le 20 ]'
echo "1..$n"
[ "$fails" = 0 ]
