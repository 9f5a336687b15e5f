#!/bin/bash
# test_fs_shared.sh: an adafsd several users share (--owner, --access-group:
# a persistent instance's server), with real users on loopback: the owner
# adafs-test, adafs-test2 in the access group adafs-share, and
# adafs-outsider (made here) who is not. Real programs through the
# interposer, and shared_client playing the handshake every wrong way:
# no secret, right secret but neither owner nor member (over TCP and over
# the Unix socket), forged, tampered, replayed, expired, reused on another
# connection, or made for another purpose munge credentials, and no
# credential at all. Each refusal is checked in the server's log too. A
# private munged (agentd_common.sh). Needs root; skips otherwise.
set -u
builddir=${abs_builddir:-$(pwd)}
ctl=${ADAFS_TEST_CTL:-$builddir/adafs-ctl}
preload=${ADAFS_TEST_PRELOAD:-$builddir/.libs/libadafs_preload.so}
client=$builddir/tests/shared_client
capc=$builddir/tests/cap_client
. "${srcdir:-.}/tests/agentd_common.sh"

[ "$(id -u)" = 0 ] || skip_all "needs root (runs programs as the test users)"
command -v munged >/dev/null && id munge >/dev/null 2>&1 || skip_all "needs munged and the munge user"
command -v setpriv >/dev/null || skip_all "needs setpriv"
id adafs-test >/dev/null 2>&1 && id adafs-test2 >/dev/null 2>&1 ||
    skip_all "needs the test users adafs-test and adafs-test2 (tests/cluster/cluster.sh check-access creates them)"
[ -x "$client" ] && [ -x "$capc" ] && [ -x "$ctl" ] && [ -e "$preload" ] || skip_all "programs not built"
# Under the sanitizers, programs not built with them need the runtime first
# (and their leaks are not this test's).
asan_env=
if [ -n "${ADAFS_TEST_ASAN_RT:-}" ]; then
    preload="$ADAFS_TEST_ASAN_RT $preload"
    asan_env=ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0
fi

owner=adafs-test member=adafs-test2 outsider=adafs-outsider group=adafs-share
getent group "$group" >/dev/null || groupadd "$group"
id -nG "$member" | grep -qw "$group" || usermod -aG "$group" "$member"
id -u "$outsider" >/dev/null 2>&1 || useradd --no-create-home --shell /bin/false "$outsider"

base=$(mktemp -d /tmp/adafs-shared-test.XXXXXX)
chmod 755 "$base"
cleanup() {
    [ -f "$base/fs/instance" ] && setpriv --reuid="$owner" --regid="$owner" --init-groups \
        "$ctl" stop --base "$base/fs" >/dev/null 2>&1
    stop_munged
    rm -rf "$base"
}
trap cleanup EXIT
start_munged
export ADAFS_MUNGE_SOCKET=$ADAFS_TEST_MUNGE_SOCKET

# adafs-ctl starts the servers through a wrapper adding the options the
# node agent gives a persistent instance's servers.
cat > "$base/adafsd" <<WRAP
#!/bin/sh
exec "$builddir/adafsd" "\$@" --owner $(id -u $owner) --access-group $group \
    --munge-socket "$ADAFS_TEST_MUNGE_SOCKET" --log-level info
WRAP
chmod 755 "$base/adafsd"
mkdir "$base/fs" && chown "$owner" "$base/fs"
: > "$base/mnt"
as() {  # as USER COMMAND...: with the user's groups, under the interposer
    local user=$1; shift
    timeout -k 5 30 setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups \
        env LD_PRELOAD="$preload" $asan_env ADAFS_INSTANCE="${inst:-$base/inst-$user}" \
        ADAFS_MOUNT="$base/mnt" "$@"
}
as_plain() { local user=$1; shift
    timeout -k 5 30 setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups "$@"; }
logs() { cat "$base"/fs/*.log 2>/dev/null; }
logged() { logs | grep -qF -- "$1"; }

if ! as_plain "$owner" "$ctl" start --servers 2 --base "$base/fs" --mount "$base/mnt" \
        --adafsd "$base/adafsd" --timeout-ms 10000 >"$base/ctl.out" 2>&1; then
    echo "Bail out! adafs-ctl start failed: $(cat "$base/ctl.out")"
    exit 1
fi
# Every user of the instance holds its secret: a copy of their own (0600).
for u in "$owner" "$member" "$outsider"; do
    install -m 600 -o "$u" "$base/fs/instance" "$base/inst-$u"
done
inst=

# --- the owner and a member of the group get in, by both ways ---
check "the owner writes through its Unix socket" as "$owner" sh -c "echo owned > $base/mnt/a"
check "the owner writes over TCP (munge)" as "$owner" env ADAFS_TRANSPORT=tcp \
    sh -c "echo tcp > $base/mnt/b && cat $base/mnt/a | grep -qx owned"
check "a member of the access group reads over TCP" as "$member" sh -c "grep -qx owned $base/mnt/a"
check "and writes" as "$member" sh -c "echo member > $base/mnt/c"

# --- everyone else is refused, whatever they hold ---
out=$(as "$outsider" cat "$base/mnt/a" 2>&1)
check "the right secret, but neither owner nor member: EACCES ($out)" \
    eval 'echo "$out" | grep -q "Permission denied"'
check "the server's log names the peer and the uid" \
    logged "is neither this instance's owner (uid $(id -u $owner)) nor a member of its access group"
logs | grep -F "uid $(id -u $outsider) ($outsider)" | head -1 | sed 's/^/# /'
check "  (with the uid and name)" logged "uid $(id -u $outsider) ($outsider) is neither"
out=$(as_plain "$outsider" "$client" "$base/inst-$outsider" local)
check "over the server's Unix socket too: denied ($out)" test "$out" = denied
install -m 600 -o "$member" "$base/fs/instance" "$base/wrong"
python3 - "$base/wrong" <<'PY'
import sys, re
p = sys.argv[1]
s = open(p).read()
s = re.sub(r'(secret\s*[= ]\s*)([0-9a-fA-F])', lambda m: m.group(1) + ('1' if m.group(2) != '1' else '2'), s, count=1)
open(p, 'w').write(s)
PY
out=$(inst=$base/wrong as "$member" cat "$base/mnt/a" 2>&1)
check "a member without the instance's secret: EACCES ($out)" \
    eval 'echo "$out" | grep -q "Permission denied"'
check "  logged as a wrong proof" logged "wrong proof of the instance's secret"

# --- per request: who owns what, and who may change it ---
m=$base/mnt
as "$owner" sh -c "echo secret > $m/s600 && chmod 600 $m/s600 && echo pub > $m/p644 &&
    chmod 644 $m/p644 && mkdir $m/d && echo mine > $m/mine"
out=$(as "$member" stat -c '%u:%g %a' "$m/s600")
check "the owner's file is the owner's, seen by another ($out)" \
    test "$out" = "$(id -u $owner):$(id -g $owner) 600"
as "$member" sh -c "echo m > $m/bym"
out=$(as "$owner" stat -c '%u:%g' "$m/bym")
check "what a member creates is the member's uid and gid, stamped by the server ($out)" \
    test "$out" = "$(id -u $member):$(id -g $member)"
check "a member's chmod of the owner's file: refused" eval '! as "$member" chmod 666 "$m/p644"'
out=$(as "$member" stat -c %a "$m/p644")
check "  and the mode stays ($out)" test "$out" = 644
check "a member's utimes of the owner's file: refused" eval '! as "$member" touch -d 2001-01-01 "$m/p644"'
check "a member's unlink of the owner's file: refused" eval '! as "$member" rm -f "$m/p644"'
check "a member's truncate of the owner's 0644 file: refused" eval '! as "$member" truncate -s 0 "$m/p644"'
check "a member's append to it: refused" \
    eval '! as "$member" sh -c "echo x >> $m/p644"'
check "a member's rename of its own file over the owner's: refused" eval '! as "$member" mv "$m/bym" "$m/mine"'
check "a member's rename of the owner's file: refused" eval '! as "$member" mv "$m/mine" "$m/taken"'
as "$member" chown "$member" "$m/mine" 2>/dev/null   # the library's no-op: nothing sends a uid
out=$(as "$member" stat -c %u "$m/mine")
check "a member's chown of the owner's file changes nothing ($out)" test "$out" = "$(id -u $owner)"
out=$(as "$owner" cat "$m/p644" "$m/mine")
check "the owner's files are intact ($(echo $out))" test "$out" = "pub
mine"
check "the owner changes its own file's mode" as "$owner" chmod 640 "$m/p644"
check "a member, not in the file's group, may no longer read it" \
    eval '! as "$member" cat "$m/p644" 2>/dev/null'
as "$owner" chmod 644 "$m/p644"
check "a member reads a 0644 file of the owner" as "$member" grep -qx pub "$m/p644"
check "a member removes its own file" as "$member" rm "$m/bym"
out=$(as "$member" cat "$m/s600" 2>&1)
check "a member reads the owner's 0600 file: EACCES ($out)" eval 'echo "$out" | grep -q "Permission denied"'
key600=$(as "$owner" stat -c %i "$m/s600")
seen600=$(as "$member" stat -c %i "$m/s600")
check "  and its data key is not given to the member ($key600 / $seen600)" test "$key600" != "$seen600"
check "  the owner still reads it" as "$owner" grep -qx secret "$m/s600"

# --- data by key: capabilities (common/fs_cap.h) ---
# The chunk servers serve data only with a capability from the file's
# record server, for the connection's uid; cap_client sends the raw
# requests libadafs never would.
check "the servers check capabilities (server key from adafs-ctl)" \
    logged "data served only with a capability from the file's record server"
out=$(as_plain "$member" "$capc" "$base/inst-$member" write /p644 2>&1)
check "a member who may read the owner's 0644 file, not write it: WRITE to its data with no capability, with its read one, with one claiming write, TRUNC_DATA with it: all refused ($out)" \
    test "$out" = "none=EKEYEXPIRED read=EACCES forged=EACCES trunc=EACCES"
out=$(as "$owner" cat "$m/p644")
check "  the file is intact ($out)" test "$out" = pub
out=$(as_plain "$member" "$capc" "$base/inst-$member" steal /p644 2>&1)
check "a member's file made under the owner's data key gets another key; a forged rename naming it: refused ($out)" \
    test "$out" = "create=other put=EACCES put0=EACCES"
out=$(as_plain "$outsider" "$capc" "$base/inst-$outsider" write /p644 2>&1)
check "  (an outsider does not even connect: $out)" eval 'echo "$out" | grep -q "cannot connect"'
# Directories: making entries needs write on the parent, listing read,
# whichever server holds the parent's record (a capability of the
# directory from its record's server).
as "$owner" sh -c "mkdir $m/ro $m/closed $m/open && chmod 755 $m/ro && chmod 700 $m/closed &&
    chmod 777 $m/open && echo in > $m/ro/in && mkdir $m/ro/sub && echo w > $m/ro/w666 &&
    chmod 666 $m/ro/w666"
out=$(as "$member" sh -c "echo x > $m/ro/new" 2>&1)
check "a member creates a file in the owner's 0755 directory: EACCES ($out)" \
    eval 'echo "$out" | grep -q "Permission denied"'
check "  makes a directory there: refused" eval '! as "$member" mkdir "$m/ro/newdir" 2>/dev/null'
as "$member" sh -c "echo mv > $m/open/tomove"
check "  moves its own file there: refused" eval '! as "$member" mv "$m/open/tomove" "$m/ro/moved" 2>/dev/null'
check "  but lists it" eval 'test "$(as "$member" ls "$m/ro" | xargs)" = "in sub w666"'
check "  and appends to a 0666 file in it (opening what is there needs no write on the directory)" \
    as "$member" sh -c "echo more >> $m/ro/w666 && test \$(wc -l < $m/ro/w666) = 2"
out=$(as_plain "$member" "$capc" "$base/inst-$member" mkin /ro 2>&1)
check "  raw CREATEs in it: no capability, its read one, one claiming write: refused ($out)" \
    test "$out" = "none=EKEYEXPIRED read=EACCES forged=EACCES"
check "a member lists the owner's 0700 directory: refused" eval '! as "$member" ls "$m/closed" 2>/dev/null'
out=$(as_plain "$member" "$capc" "$base/inst-$member" list /closed 2>&1)
check "  raw LIST of it: refused ($out)" test "$out" = "none=EKEYEXPIRED cap=EKEYEXPIRED"
check "the owner makes entries in its 0755 and 0700 directories" as "$owner" sh -c \
    "echo o > $m/ro/o && mkdir $m/closed/d && echo c > $m/closed/d/c && ls $m/closed/d | grep -qx c"
check "a member makes, renames and lists entries in a 0777 directory" as "$member" sh -c \
    "mkdir $m/open/md && echo f > $m/open/md/f && mv $m/open/md/f $m/open/md/g && ls $m/open/md | grep -qx g"

# A capability learnt while a file was readable, after a chmod: still
# good until it expires (FS_CAP_LIFETIME_MS, 10 s), then refused. Checked
# again at the end of this test.
mkdir "$base/caps" "$base/pub" && chown "$member" "$base/caps" && chmod 1777 "$base/pub"
as "$owner" sh -c "echo later > $m/later && chmod 644 $m/later"
out=$(as_plain "$member" "$capc" "$base/inst-$member" capture /later "$base/caps/later" 2>&1)
check "a member reads the owner's 0644 file by its capability ($out)" test "$out" = OK
as "$owner" chmod 600 "$m/later"
chmod_at=$(date +%s%N)
out=$(as_plain "$member" "$capc" "$base/inst-$member" replay /later "$base/caps/later" 2>&1)
check "  after the owner's chmod 600, until it expires, still ($out)" test "$out" = OK
check "  but a new open is refused at once" eval '! as "$member" cat "$m/later" 2>/dev/null'
# The owner and the group go on working, files of many chunks included
# (a new file's key is the server's choice: its chunks after the first go
# out again under it).
check "the owner writes a file of 5 chunks and reads it back" as "$owner" sh -c \
    "head -c 2500000 /dev/urandom > $base/pub/big && cp $base/pub/big $m/big && cmp $base/pub/big $m/big"
check "  a member reads it" as "$member" cmp "$base/pub/big" "$m/big"
check "  the owner overwrites its middle and appends" as "$owner" sh -c \
    "printf XYZ | dd of=$m/big bs=4096 oflag=seek_bytes seek=1000000 conv=notrunc status=none && echo tail >> $m/big"
as "$owner" sh -c "echo grp > $m/g664 && chmod 666 $m/g664"
check "a member writes the owner's 0666 file" as "$member" sh -c \
    "echo member-wrote > $m/g664 && grep -qx member-wrote $m/g664"
check "  the owner reads what the member wrote" as "$owner" grep -qx member-wrote "$m/g664"
check "the owner renames its file and still reads it" as "$owner" sh -c \
    "mv $m/g664 $m/g664.moved && grep -qx member-wrote $m/g664.moved"

# --- munge credentials that are not this connection's own ---
out=$(as_plain "$member" "$client" "$base/inst-$member" honest)
check "shared_client's honest handshake is admitted ($out)" test "$out" = admitted
out=$(as_plain "$member" "$client" "$base/inst-$member" replay)
check "a credential replayed on a new connection: denied ($out)" test "$out" = "first: admitted
denied"
check "  munged saw the replay" logged "Replayed credential"
out=$(as_plain "$member" "$client" "$base/inst-$member" reuse)
check "a credential made for one connection, sent on another: denied ($out)" test "$out" = denied
check "  logged" logged "made for another connection or server"
out=$(as_plain "$member" "$client" "$base/inst-$member" forged)
check "a forged credential: denied ($out)" test "$out" = denied
out=$(as_plain "$member" "$client" "$base/inst-$member" tampered)
check "a real credential with a character changed: denied ($out)" test "$out" = denied
check "  logged as munge's refusal" logged "munge credential refused"
out=$(as_plain "$member" "$client" "$base/inst-$member" purpose)
check "a credential for another purpose: denied ($out)" test "$out" = denied
check "  logged" logged "made for another purpose"
out=$(as_plain "$member" "$client" "$base/inst-$member" expired)
check "an expired credential: denied ($out)" test "$out" = denied
check "  logged" logged "Expired credential"
out=$(as_plain "$member" "$client" "$base/inst-$member" none)
check "no credential at all: no answer ($out)" test "$out" = "hung up"

# --- a slow munged delays only the clients it must answer ---
# A second instance whose munged never answers (a socket that accepts and
# holds): TCP clients' credentials wait on it, on the gate's workers (5
# clients: more than its workers for TCP); meanwhile the owner's
# processes still get in through the Unix socket.
python3 - "$base/stall.sock" <<'PY' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o777)
s.listen(64)
s.settimeout(20)
held = []
try:
    while True:
        held.append(s.accept()[0])
except OSError:
    pass
PY
stall_pid=$!
sed "s|--munge-socket \"[^\"]*\"|--munge-socket \"$base/stall.sock\"|" "$base/adafsd" > "$base/adafsd2"
chmod 755 "$base/adafsd2"
mkdir "$base/fs2" && chown "$owner" "$base/fs2"
for i in 1 2 3 4 5 6 7 8 9 10; do [ -S "$base/stall.sock" ] && break; sleep 0.1; done
if as_plain "$owner" "$ctl" start --servers 1 --base "$base/fs2" --mount "$base/mnt" \
        --adafsd "$base/adafsd2" --timeout-ms 10000 >"$base/ctl2.out" 2>&1; then
    install -m 600 -o "$owner" "$base/fs2/instance" "$base/inst2"
    # More stalled credentials than the gate has workers for TCP clients.
    stalled=
    for i in 1 2 3 4 5; do
        as_plain "$owner" "$client" "$base/inst2" forged >"$base/stalled.$i" 2>&1 &
        stalled="$stalled $!"
    done
    sleep 0.5
    t0=$(date +%s%N)
    inst=$base/inst2 as "$owner" sh -c "echo quick > $base/mnt/q && grep -qx quick $base/mnt/q"
    rc=$? ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    check "while munged stalls on 5 TCP clients' credentials, the owner writes and reads through the Unix socket at once ($ms ms)" \
        eval '[ $rc = 0 ] && [ $ms -lt 2000 ]'
    kill "$stall_pid" 2>/dev/null
    wait $stalled
    check "  the stalled clients are not admitted ($(cat "$base"/stalled.* | sort | uniq -c | xargs))" \
        eval '! cat "$base"/stalled.* | grep -q admitted'
    as_plain "$owner" "$ctl" stop --base "$base/fs2" >/dev/null 2>&1
else
    not_ok "a second shared instance starts: $(cat "$base/ctl2.out")"
fi
kill "$stall_pid" 2>/dev/null

# --- one user cannot take every place of the server (--max-clients) ---
# A third instance, 8 clients at most: a member holding as many
# connections as it can gets a quarter (--max-clients-per-user's default);
# the owner still gets in, and the member again once it lets go. Nor all
# of its memory (--max-buffered-per-user).
sed 's|--log-level info|--log-level info --max-clients 8 --max-buffered-per-user 80M|' "$base/adafsd" > "$base/adafsd3"
chmod 755 "$base/adafsd3"
mkdir "$base/fs3" && chown "$owner" "$base/fs3"
if as_plain "$owner" "$ctl" start --servers 1 --base "$base/fs3" --mount "$base/mnt" \
        --adafsd "$base/adafsd3" --timeout-ms 5000 >"$base/ctl3.out" 2>&1; then
    install -m 600 -o "$member" "$base/fs3/instance" "$base/inst3-$member"
    install -m 600 -o "$owner" "$base/fs3/instance" "$base/inst3-$owner"
    # Not through as_plain: $! must be the holder's own process, to end it.
    setpriv --reuid="$member" --regid="$(id -g "$member")" --init-groups \
        "$client" "$base/inst3-$member" hold 8 20 > "$base/hold.out" 2>&1 &
    hold_pid=$!
    for i in $(seq 50); do [ -s "$base/hold.out" ] && break; sleep 0.1; done
    check "a member holding every connection it can gets 2 of 8 ($(cat "$base/hold.out"))" \
        grep -qx "admitted 2 of 8" "$base/hold.out"
    check "  refused with a line naming the bound" \
        eval 'cat "$base"/fs3/*.log | grep -qF "(--max-clients-per-user)"'
    inst=$base/inst3-$owner check "  the owner still writes and reads meanwhile" \
        as "$owner" sh -c "echo mine > $base/mnt/held && grep -qx mine $base/mnt/held"
    kill "$hold_pid" 2>/dev/null
    wait "$hold_pid" 2>/dev/null
    out=
    for i in $(seq 30); do
        out=$(as_plain "$member" "$client" "$base/inst3-$member" local 2>&1)
        [ "$out" = admitted ] && break
        sleep 0.1
    done
    check "  once it lets go, the member is admitted again ($out)" test "$out" = admitted
    # Requests sent in part hold the server's memory: one user's, at most
    # --max-buffered-per-user (80M here) beyond a request alone.
    pid3=$(awk '$1 == 0 { print $2 }' "$base/fs3/servers")
    rss_mib() { echo $(( $(awk '/^VmRSS/ { print $2 }' "/proc/$pid3/status") / 1024 )); }
    r0=$(rss_mib)
    setpriv --reuid="$member" --regid="$(id -g "$member")" --init-groups \
        "$client" "$base/inst3-$member" partial 2 70 20 > "$base/partial.out" 2>&1 &
    partial_pid=$!
    for i in $(seq 100); do [ -s "$base/partial.out" ] && break; sleep 0.1; done
    r1=$(rss_mib)
    check "a member's two 72 MiB requests sent in part: the server holds one ($r0 -> $r1 MiB; MiB through: $(cat "$base/partial.out"))" \
        test $((r1 - r0)) -lt 110
    inst=$base/inst3-$owner check "  the owner is served meanwhile" \
        as "$owner" grep -qx mine "$base/mnt/held"
    kill "$partial_pid" 2>/dev/null
    wait "$partial_pid" 2>/dev/null
    as_plain "$owner" "$ctl" stop --base "$base/fs3" >/dev/null 2>&1
else
    not_ok "a third shared instance starts: $(cat "$base/ctl3.out")"
fi

# The capability learnt before the chmod, once expired.
left_ms=$(( 10500 - ($(date +%s%N) - chmod_at) / 1000000 ))
[ "$left_ms" -gt 0 ] && sleep "$(printf '%d.%03d' $((left_ms / 1000)) $((left_ms % 1000)))"
out=$(as_plain "$member" "$capc" "$base/inst-$member" replay /later "$base/caps/later" 2>&1)
check "the capability a member learnt before the chmod, 10 s later: refused ($out)" \
    test "$out" = EKEYEXPIRED
out=$(as_plain "$member" "$capc" "$base/inst-$member" capture /later "$base/caps/later2" 2>&1)
check "  and a new one is not given ($out)" test "$out" = EKEYEXPIRED

echo "1..$n"
[ "$fails" = 0 ]
