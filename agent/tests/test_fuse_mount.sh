#!/bin/bash
# adafs-fuse under what goes wrong: mmap through the mount as on a local
# disk (tests/mmap_check.c), changes made through the interposer seen
# through the mount at once (tests/fuse_views.py), READ replies spliced
# from the chunk files (only the bytes of the file the reader opened), a
# full quota (ENOSPC), a server killed under a
# reader (EIO within a bound, no process left waiting, the mount still
# unmounts), a hung adafs-fuse and a process sitting in the mount at
# unmount time (lazy unmount, then kill: nothing stays stuck), and another
# user refused at the mount point.
set -u
ADAFS_TEST_ACCESS=fuse
. "${srcdir:-.}/tests/preload_common.sh"
CHECK=${abs_builddir:-.}/tests/mmap_check
TIMEOUT_MS=2000

# state PID: the process's state letter (R, S, D, T, Z), empty if gone
state() { sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null; }

# fuse_pid MNT: the adafs-fuse serving MNT
fuse_pid() {
    for m in $MOUNTS; do
        [ "${m#*:}" = "$1" ] && echo "${m%%:*}"
    done
}

# unmounted MNT: the mount is gone from /proc/mounts within 5 s
unmounted() {
    for _ in $(seq 50); do
        grep -q " $1 fuse.adafs " /proc/mounts || return 0
        sleep 0.1
    done
    return 1
}

# ---- mmap through the kernel's page cache over FUSE, and through the
# interposer with the mount there too (access=both)
for n in 1 4; do
    start_instance "m$n" "$n"
    mkdir "$MNT/maps" "$MNT/both"
    run_check "$n servers" "$CHECK" "$MNT/maps" fuse
    ACCESS=both run_check "$n servers, access=both" pl "$CHECK" "$MNT/both" both
done

# ---- names the kernel keeps (directories', doc/fuse.md) hide nothing
# changed elsewhere: here through the interposer, on the last instance
mkdir -p "$MNT/names/d"
echo one >"$MNT/names/d/f"
stat "$MNT/names/d/f" >/dev/null   # the kernel now holds the names
ACCESS=both pl sh -c "echo grown-longer >>'$MNT/names/d/f'"
check "a stat right after a file grew elsewhere sees its new size" \
    test "$(stat -c %s "$MNT/names/d/f")" = 17
ACCESS=both pl mv "$MNT/names/d" "$MNT/names/e"
check "a directory renamed elsewhere: nothing is found under its old name" \
    test ! -e "$MNT/names/d/f"
check "and the new name holds the file" grep -q grown "$MNT/names/e/f"
ACCESS=both pl mkdir "$MNT/names/d"
ACCESS=both pl sh -c "echo two >'$MNT/names/d/g'"
check "a directory made again at the old name is the new one" \
    test "$(cat "$MNT/names/d/g" 2>&1)" = two

# ---- a lookup's attributes, which the kernel keeps for its clock tick,
# hide nothing a stat, an open or a later fstat must see (doc/fuse.md):
# changes made through the interposer between two calls through the mount
mkdir "$MNT/views"
run_check "attributes" timeout -k 5 60 "$PYTHON" "$SRCDIR/tests/fuse_views.py" "$MNT/views" \
    env LD_PRELOAD="$PRELOAD_LIST" \
    LD_LIBRARY_PATH="$ADAFS_TEST_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    ADAFS_INSTANCE="$INSTANCE" ADAFS_MOUNT="$MNT" "$PYTHON"

# ---- READ replies spliced from the servers' chunk files (doc/fuse.md,
# Speed): exactly the bytes of the file the reader opened, its end inside a
# request, its holes; a chunk file replaced, a truncate and a remove under
# an open reader show at its next read, and never another file's bytes
cat >"$WORK/reader.py" <<'PY'
import os, random, sys
mnt, work, case = sys.argv[1], sys.argv[2], sys.argv[3]
a = open(work + "/a", "rb").read()
b = open(work + "/b", "rb").read()
path = mnt + "/f"
def fail(what):
    print(what)
    sys.exit(1)
if case == "odd":
    fd = os.open(path, os.O_RDONLY)
    rnd = random.Random(7)
    for _ in range(200):
        off = rnd.randrange(0, len(a) + 5000)
        size = rnd.choice([1, 4095, 4097, 65537, 300001, 1 << 20, (1 << 20) + 3])
        got = os.pread(fd, size, off)
        if got != a[off:off + size]:
            fail("pread(%d, %d): %d bytes, not the file's" % (size, off, len(got)))
    sys.exit(0)
fd = os.open(path, os.O_RDONLY)
if os.pread(fd, 1 << 20, 0) != a[:1 << 20]:
    fail("first read")
if case == "rewrite":
    os.system("cp '%s/b' '%s'" % (work, path))
    got = os.pread(fd, 3 << 20, 0)
    if got != b[:3 << 20]:
        fail("after the rewrite: %d bytes, %s" % (len(got), "old" if got == a[:len(got)] else "other"))
elif case == "truncate":
    os.truncate(path, 1000003)
    got = os.pread(fd, 2 << 20, 0)
    if got != a[:1000003]:
        fail("after the truncate: %d bytes" % len(got))
elif case == "replace":
    os.unlink(path)
    os.system("cp '%s/b' '%s'" % (work, path))
    try:
        got = os.pread(fd, 1 << 20, 0)
    except OSError as e:
        sys.exit(0)
    if got and got == b[:len(got)]:
        fail("the new file's bytes through the removed one's descriptor")
PY
# fuse/max_read.h: 1 MiB where a user may make pipes of 2 MiB, else 252 pages
PIPE_MAX=$(cat /proc/sys/fs/pipe-max-size)
if [ "$PIPE_MAX" -ge 2097152 ]; then MAX_READ=1048576; else MAX_READ=1032192; fi
for n in 1 2; do
    start_instance "splice$n" "$n"
    head -c $((3 * 1048576 + 12345)) /dev/urandom >"$WORK/a"
    head -c $((3 * 1048576 + 12345)) /dev/urandom >"$WORK/b"
    cp "$WORK/a" "$MNT/f"
    check "[$n servers] the mount's READs are of max_read=$MAX_READ (a reply fits a pipe of $PIPE_MAX)" \
        grep -q " $MNT fuse.adafs .*max_read=$MAX_READ" /proc/mounts
    check "[$n servers] 1 MiB reads: the file's bytes, its end inside a request" \
        sh -c "dd if='$MNT/f' bs=1M 2>/dev/null | cmp - '$WORK/a'"
    check "[$n servers] and their replies were spliced (adafs-fuse logged no fallback)" \
        test ! -s "$WORK/splice$n.base/fuse.log"
    check "[$n servers] reads at odd offsets and of odd sizes, past the end too" \
        "$PYTHON" "$WORK/reader.py" "$MNT" "$WORK" odd
    truncate -s 5000000 "$WORK/sparse"
    printf 'middle' | dd of="$WORK/sparse" bs=1 seek=2100000 conv=notrunc 2>/dev/null
    truncate -s 5000000 "$MNT/sparse"
    printf 'middle' | dd of="$MNT/sparse" bs=1 seek=2100000 conv=notrunc 2>/dev/null
    check "[$n servers] a sparse file: zeros for its holes" cmp "$WORK/sparse" "$MNT/sparse"
    for case in rewrite truncate replace; do
        cp "$WORK/a" "$MNT/f"
        check "[$n servers] an open reader, the file changed under it ($case): only its bytes" \
            "$PYTHON" "$WORK/reader.py" "$MNT" "$WORK" "$case"
    done
done

# A max_read of 1 MiB chosen (-o) where pipes of 2 MiB cannot be made: the
# READs it brings are answered from the buffer, the reason said once; with
# such pipes, spliced. The bytes are the file's either way, into a buffer
# on a page (dd) and off one (a 1 MiB read() is then 257 pages).
FUSE_OPTS=max_read=1048576 start_instance bigread 1
cp "$WORK/a" "$MNT/f"
check "max_read=1048576: 1 MiB reads on a page, the file's bytes" \
    sh -c "dd if='$MNT/f' bs=1M 2>/dev/null | cmp - '$WORK/a'"
check "max_read=1048576: 1 MiB reads off a page, the file's bytes" \
    "$PYTHON" -c "
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
buf = mmap.mmap(-1, 2 << 20)
view = memoryview(buf)[16:16 + (1 << 20)]
got = bytearray()
while True:
    n = os.readv(fd, [view])
    if n == 0:
        break
    got += view[:n]
sys.exit(0 if bytes(got) == open(sys.argv[2], 'rb').read() else 1)
" "$MNT/f" "$WORK/a"
if [ "$PIPE_MAX" -ge 2097152 ]; then
    check "max_read=1048576 with pipes of 2 MiB allowed: spliced (no fallback logged)" \
        test ! -s "$BASE/fuse.log"
else
    check "max_read=1048576 without pipes of 2 MiB: the fallback said" \
        grep -q "cannot make a pipe of 2048 KiB for the mount's max_read of 1048576" "$BASE/fuse.log"
fi

# A max_read of GiBs (a user's own mount): no pipe holds its replies, and
# adafs-fuse says so once and answers from its buffer (the pipe's size
# past INT_MAX, cast to F_SETPIPE_SZ's int, was once taken for a pipe
# made, and every READ failed in the middle of its splice).
FUSE_OPTS=max_read=1610612736 start_instance hugeread 1
cp "$WORK/a" "$MNT/f"
check "max_read=1610612736: 1 MiB reads, the file's bytes" \
    sh -c "dd if='$MNT/f' bs=1M 2>/dev/null | cmp - '$WORK/a'"
check "max_read=1610612736: no pipe of 2 GiB made, said once" \
    grep -q "cannot make a pipe of 2097152 KiB for the mount's max_read of 1610612736" "$BASE/fuse.log"

# ---- quota: ENOSPC through the mount, and nothing written before is lost
start_instance quota 1 --quota 1M
head -c 300000 /dev/urandom >"$WORK/small"
cp "$WORK/small" "$MNT/small"
dd if=/dev/zero of="$MNT/big" bs=64k count=64 2>"$WORK/dd.err"
check "a write past the quota fails with ENOSPC" grep -q "No space left on device" "$WORK/dd.err"
check "a file written before is intact" cmp "$WORK/small" "$MNT/small"

# ---- a server killed (or stopped: it never answers) under a reader
for how in KILL STOP; do
    start_instance "kill$how" 2 --timeout-ms "$TIMEOUT_MS"
    head -c 20000000 /dev/urandom >"$MNT/data"
    # a reader that reads the file over and over, until it fails
    rm -f "$WORK/reader.end"
    (while cat "$MNT/data" >/dev/null 2>"$WORK/reader.err"; do :; done
     echo done >"$WORK/reader.end") &
    reader=$!
    sleep 0.5
    server=$(awk 'NR == 2 { print $2 }' "$BASE/servers")
    kill -"$how" "$server"
    killed_at=$(date +%s)
    for _ in $(seq 300); do
        [ -e "$WORK/reader.end" ] && break
        sleep 0.1
    done
    took=$(( $(date +%s) - killed_at ))
    check "SIG$how to a server: the reader fails" test -e "$WORK/reader.end"
    check "SIG$how: with EIO" grep -q "Input/output error" "$WORK/reader.err"
    check "SIG$how: within a bounded time (${took} s, the timeout is ${TIMEOUT_MS} ms)" \
        test "$took" -le 10
    kill "$reader" 2>/dev/null
    start=$(date +%s)
    stat "$MNT/data" >/dev/null 2>&1
    ls "$MNT" >/dev/null 2>&1
    check "SIG$how: stat and ls answer within a bound too ($(( $(date +%s) - start )) s)" \
        test $(( $(date +%s) - start )) -le 15
    umount "$MNT"
    check "SIG$how: the mount unmounts" unmounted "$MNT"
    kill -CONT "$server" 2>/dev/null
done

# ---- a process in the mount and a hung adafs-fuse: lazy unmount, then kill
start_instance hung 1
echo held >"$MNT/held"
sh -c 'cd "$1" && exec 3<held && exec sleep 600' sh "$MNT" &
sitter=$!
trap 'kill "$sitter" 2>/dev/null; cleanup' EXIT
pid=$(fuse_pid "$MNT")
kill -STOP "$pid"
cat "$MNT/held" >/dev/null 2>&1 &
waiter=$!
sleep 0.5
check "a reader waits on the hung adafs-fuse" test -n "$(state "$waiter")"
check "umount -l of the busy mount succeeds at once" timeout 5 umount -l "$MNT"
check "the mount is gone" unmounted "$MNT"
kill -KILL "$pid"
for _ in $(seq 50); do
    [ -z "$(state "$waiter")" ] && break
    sleep 0.1
done
check "killing adafs-fuse releases the waiting reader" test -z "$(state "$waiter")"
check "the process sitting in the mount is not stuck (state $(state "$sitter"))" \
    test "$(state "$sitter")" != D
kill "$sitter" 2>/dev/null
check "the mount point is an ordinary empty directory again" \
    test -d "$MNT" -a -z "$(ls -A "$MNT")"

# ---- only the mounting user enters (no allow_other)
start_instance others 1
echo private >"$MNT/secret"
other=${ADAFS_TEST_USER:-adafs-test}
if id "$other" >/dev/null 2>&1; then
    chmod 755 "$WORK" "$WORK/others"
    runuser -u "$other" -- ls "$MNT" >"$WORK/other.out" 2>&1
    check "another user cannot list the mount" grep -q "Permission denied" "$WORK/other.out"
    runuser -u "$other" -- cat "$MNT/secret" >"$WORK/other.out" 2>&1
    check "nor read a file in it" grep -q "Permission denied" "$WORK/other.out"
else
    skip "another user cannot enter the mount" "no user $other (tests/cluster/cluster.sh makes it)"
fi

echo "1..$TAP_N"
