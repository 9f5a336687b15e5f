#!/bin/sh
# Several adafs file systems in one process (a job's own and the persistent
# instances it uses): two instances started by hand, the first at
# $ADAFS_MOUNT, the second listed in $ADAFS_MOUNTS, and real programs
# (cp, cat, find, mv, bash, python3) working across them. Each mount is its
# own file system: a rename or a link between them is EXDEV as between two
# kernel file systems (mv copies then), descriptors keep their mount
# through dup, exec and fork, and a mount inside another wins for what lies
# below it (the longest prefix).
set -u
. "${srcdir:-.}/tests/preload_common.sh"
if [ "$ACCESS" != preload ]; then
    echo "1..0 # SKIP the interposer's own mounts: nothing of a kernel mount"
    exit 0
fi

start_instance a 2
A=$MNT A_INST=$INSTANCE
start_instance b 1
B=$MNT B_INST=$INSTANCE
# A third one, mounted inside A's mount point.
start_instance c 1
C=$A/nested C_INST=$INSTANCE
MNT=$A INSTANCE=$A_INST

# two COMMAND...: runs COMMAND with A as $ADAFS_MOUNT and B (and C) in
# $ADAFS_MOUNTS.
two() {
    pl ADAFS_MOUNTS="$B=$B_INST:$C=$C_INST" "$@"
}

SRC=$WORK/src
mkdir -p "$SRC/d1/d2" "$SRC/many"
head -c 300000 /dev/urandom >"$SRC/big"
echo "deep" >"$SRC/d1/d2/leaf.txt"
for i in $(seq 1 20); do echo "small $i" >"$SRC/many/s$i.txt"; done

# cp into each, then from one to the other, and back out
two cp -r "$SRC" "$A/tree"
two cp -r "$A/tree" "$B/tree"
two cp -r "$B/tree" "$WORK/back"
check "cp -r local -> A -> B -> local is identical" diff -r "$SRC" "$WORK/back"
two cp "$B/tree/big" "$A/big.again"
two cat "$A/big.again" >"$WORK/got"
same "cp of a file B -> A, cat in A" "$SRC/big" "$WORK/got"

# find sees each mount's own files, and nothing of the other
(cd "$SRC" && find . | LC_ALL=C sort) >"$WORK/exp"
two sh -c "cd '$B/tree' && find . | LC_ALL=C sort" >"$WORK/got"
same "find in B lists B's tree" "$WORK/exp" "$WORK/got"
two find "$A" -name big.again >"$WORK/got"
echo "$A/big.again" >"$WORK/exp"
same "find in A finds A's file" "$WORK/exp" "$WORK/got"
check "and B has no such file" test -z "$(two find "$B" -name big.again)"

# rename and link between the mounts: EXDEV; mv falls back to copy + unlink
out=$(two "$PYTHON" -c '
import errno, os, sys
a, b = sys.argv[1], sys.argv[2]
for what, call in (("rename", os.rename), ("link", os.link)):
    try:
        call(a, b)
        print(what, "succeeded")
    except OSError as e:
        print(what, errno.errorcode.get(e.errno, e.errno))
' "$A/big.again" "$B/moved" 2>&1)
check "rename and link from A to B give EXDEV ($out)" \
    test "$out" = "$(printf 'rename EXDEV\nlink EXDEV')"
two mv "$A/big.again" "$B/moved"
two cat "$B/moved" >"$WORK/got"
same "mv A -> B copies the file" "$SRC/big" "$WORK/got"
check "and removes it from A" two sh -c "! test -e '$A/big.again'"
two mv "$B/tree/many" "$A/many"
two sh -c "cd '$A/many' && cat \$(ls | LC_ALL=C sort)" >"$WORK/got"
(cd "$SRC/many" && cat $(ls | LC_ALL=C sort)) >"$WORK/exp"
same "mv of a directory B -> A" "$WORK/exp" "$WORK/got"
check "rename inside B still renames" two mv "$B/moved" "$B/renamed"

# each mount is a device of its own
devs=$(two stat -c %d "$A" "$B" "$C" | sort -u | wc -l)
check "stat: A, B and the nested C have three st_dev ($devs)" test "$devs" = 3

# descriptors keep their mount: redirections, dup, and across exec
two bash -c "exec 3<'$B/tree/d1/d2/leaf.txt' 4>'$A/leaf.copy'; cat <&3 >&4; exec 4>&-"
echo deep >"$WORK/exp"
two cat "$A/leaf.copy" >"$WORK/got"
same "bash: cat from B's descriptor to A's, across exec" "$WORK/exp" "$WORK/got"
two "$PYTHON" -c '
import os, sys
r = os.open(sys.argv[1], os.O_RDONLY)
w = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
r2 = os.dup(r)
pid = os.fork()
if pid == 0:
    os.write(w, os.read(r2, 1 << 20))
    os._exit(0)
os.waitpid(pid, 0)
' "$B/tree/big" "$A/forked"
two cat "$A/forked" >"$WORK/got"
same "python: dup of B's descriptor read in a forked child, written to A's" \
    "$SRC/big" "$WORK/got"

# working directory in one mount, paths into the other
two bash -c "cd '$B/tree/d1' && cat d2/leaf.txt > '$A/from_cwd' && cd '$A' && cat from_cwd" \
    >"$WORK/got"
same "cd into B, relative read, write to A, cd into A, relative read" "$WORK/exp" "$WORK/got"

# a mount inside another: the longest prefix wins
two sh -c "echo nested > '$C/n.txt'"
echo nested >"$WORK/exp"
pl ADAFS_MOUNT="$C" ADAFS_INSTANCE="$C_INST" cat "$C/n.txt" >"$WORK/got"
same "a file under the nested mount is in C's file system" "$WORK/exp" "$WORK/got"
check "and not in A's" pl /usr/bin/test ! -e "$A/nested/n.txt"

# programs run from B (exec from a second mount: a private handle)
two cp /bin/echo "$B/echo"
two chmod 755 "$B/echo"
out=$(two bash -c "'$B/echo' run from B" 2>&1)
check "exec of a program stored in B ($out)" test "$out" = "run from B"

# mmap of a file in B
out=$(two "$PYTHON" -c '
import mmap, sys
with open(sys.argv[1], "rb") as f:
    m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    print(m[:4].decode())
' "$B/tree/d1/d2/leaf.txt" 2>&1)
check "mmap of a file in B ($out)" test "$out" = "deep"

# only $ADAFS_MOUNTS: no $ADAFS_MOUNT at all
out=$(pl ADAFS_MOUNT= ADAFS_INSTANCE= ADAFS_MOUNTS="$B=$B_INST" cat "$B/tree/d1/d2/leaf.txt" 2>&1)
check "a mount from \$ADAFS_MOUNTS alone ($out)" test "$out" = "deep"

# a malformed entry is named, the rest still served
echo deep >"$WORK/exp"
pl ADAFS_MOUNTS="nonsense:$B=$B_INST" cat "$B/tree/d1/d2/leaf.txt" >"$WORK/got" 2>"$WORK/err"
same "a malformed \$ADAFS_MOUNTS entry leaves the others served" "$WORK/exp" "$WORK/got"
check "and is named on stderr" grep -q 'ADAFS_MOUNTS: "nonsense" is not MOUNT=INSTANCE_FILE' \
    "$WORK/err"
# an entry whose instance file is unusable: EIO under it alone, named once
out=$(pl ADAFS_MOUNTS="$B=$WORK/none" sh -c "cat '$B/x' 2>&1; cat '$A/leaf.copy'" 2>&1)
case $out in
*"cannot use the adafs instance ADAFS_MOUNTS=$WORK/none (mount $B)"*"Input/output error"*deep)
    ok "an unusable instance in \$ADAFS_MOUNTS: named, EIO under its mount, A still served" ;;
*) not_ok "an unusable instance in \$ADAFS_MOUNTS: named, EIO under its mount, A still served"
   echo "$out" | sed 's/^/#   /' ;;
esac

echo "1..$TAP_N"
