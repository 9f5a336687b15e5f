#!/bin/sh
# Real, unmodified programs under libadafs_preload.so against real adafsd
# servers (1, 2 and 4 on loopback): every result is compared byte for byte
# with the same operation done on a local directory. test_fuse_programs.sh
# runs it through an adafs-fuse mount instead (ADAFS_TEST_ACCESS=fuse),
# test_both_programs.sh under the interposer with the mount there too.
set -u
. "${srcdir:-.}/tests/preload_common.sh"
FIXTURES=$SRCDIR/tests
for tool in fio sqlite3 tar bash awk sed rsync; do
    if ! command -v "$tool" >/dev/null; then
        echo "Bail out! $tool is not installed (scripts/install-deps.sh installs it)"
        exit 1
    fi
done
if [ ! -x "$PYTHON" ]; then
    echo "Bail out! python3 is not installed (scripts/install-deps.sh installs it)"
    exit 1
fi

# The source tree: sizes around the 64 KiB chunk size of the instances,
# nested and empty directories, a name with a space, many small files.
SRC=$WORK/src
mkdir -p "$SRC/files" "$SRC/d1/d2/d3" "$SRC/empty dir" "$SRC/many"
for size in 0 1 4095 65535 65536 65537 200000 1048576; do
    head -c "$size" /dev/urandom >"$SRC/files/f$size"
done
head -c 3000000 /dev/urandom >"$SRC/big"
echo "deep" >"$SRC/d1/d2/d3/leaf.txt"
echo "spaced" >"$SRC/d1/name with space.bin"
for i in $(seq 1 100); do echo "small $i" >"$SRC/many/s$i.txt"; done
chmod 600 "$SRC/files/f1"
chmod 755 "$SRC/d1/d2"

# suite SERVERS: every program once against a fresh instance.
suite() {
    n=$1
    start_instance "s$n" "$n"
    L=$WORK/local.$n
    mkdir -p "$L"

    # mkdir -p (absolute) and the listing find sees afterwards
    mkdir -p "$L/deep/a/b/c"
    pl mkdir -p "$MNT/deep/a/b/c" "$MNT/deep/a/x"
    mkdir -p "$L/deep/a/x"
    (cd "$L" && find deep | LC_ALL=C sort) >"$WORK/exp"
    pl find "$MNT/deep" | sed "s,^$MNT/,," | LC_ALL=C sort >"$WORK/got"
    same "$n servers: mkdir -p then find" "$WORK/exp" "$WORK/got"

    # cp -r in, cp -r back out
    pl cp -r "$SRC" "$MNT/tree"
    pl cp -r "$MNT/tree" "$WORK/back.$n"
    check "$n servers: cp -r into adafs and back is identical" diff -r "$SRC" "$WORK/back.$n"

    # cat, one file and several concatenated
    pl cat "$MNT/tree/big" >"$WORK/got"
    same "$n servers: cat of a 3 MB file" "$SRC/big" "$WORK/got"
    (cd "$SRC/files" && cat f65535 f1 f65537 f0 f200000) >"$WORK/exp"
    (cd "$SRC/files" && pl cat "$MNT/tree/files/f65535" "$MNT/tree/files/f1" \
        "$MNT/tree/files/f65537" "$MNT/tree/files/f0" "$MNT/tree/files/f200000") >"$WORK/got"
    same "$n servers: cat of files across chunk boundaries" "$WORK/exp" "$WORK/got"

    # dd writing into adafs with several block sizes, seeks and notrunc
    # (dd asks aligned_alloc for a page-aligned buffer of any size, which
    # glibc grants and the ASan runtime refuses)
    i=0
    [ -n "${ADAFS_TEST_ASAN_RT:-}" ] && dd_skip=yes || dd_skip=
    for spec in "bs=1k count=100" "bs=64k count=3 seek=2 conv=notrunc" \
                "bs=7000 count=5 seek=3 conv=notrunc" "bs=1M count=1 seek=1" \
                "bs=4096 skip=100 count=10 seek=500 conv=notrunc"; do
        i=$((i + 1))
        if [ -n "$dd_skip" ]; then
            skip "$n servers: dd $spec" "dd cannot run under the ASan runtime"
            continue
        fi
        # shellcheck disable=SC2086 # spec is a list of dd operands
        dd if="$SRC/big" of="$L/dd" $spec status=none
        # shellcheck disable=SC2086
        pl dd if="$SRC/big" of="$MNT/dd" $spec status=none
        pl cat "$MNT/dd" >"$WORK/got"
        same "$n servers: dd $spec" "$L/dd" "$WORK/got"
    done
    dd if="$SRC/big" of="$WORK/exp" bs=4k skip=5 count=70 status=none
    pl dd if="$MNT/tree/big" of="$WORK/got" bs=4k skip=5 count=70 status=none
    same "$n servers: dd reading from adafs with skip" "$WORK/exp" "$WORK/got"

    # tar c of the copy: a canonical archive must be byte-identical
    canon="--sort=name --owner=0 --group=0 --numeric-owner --mtime=@1"
    # shellcheck disable=SC2086
    tar $canon -C "$SRC" -cf "$WORK/exp.tar" .
    # shellcheck disable=SC2086
    pl tar $canon -C "$MNT/tree" -cf "$WORK/got.tar" .
    same "$n servers: tar c of a tree in adafs" "$WORK/exp.tar" "$WORK/got.tar"

    # tar x into adafs keeps contents, modes and times: archive it again
    tar --sort=name -C "$SRC" -cf "$WORK/real.tar" .
    pl mkdir "$MNT/untar"
    pl tar -C "$MNT/untar" -xf "$WORK/real.tar"
    pl tar --sort=name -C "$MNT/untar" -cf "$WORK/again.tar" .
    same "$n servers: tar x then tar c gives the same archive" "$WORK/real.tar" "$WORK/again.tar"

    # ls -l of extracted files (times kept by tar); "total" counts blocks,
    # which depend on the file system, so it is left out
    ls -l --time-style=+%s "$SRC/files" | grep -v '^total' >"$WORK/exp"
    pl ls -l --time-style=+%s "$MNT/untar/files" | grep -v '^total' >"$WORK/got"
    same "$n servers: ls -l" "$WORK/exp" "$WORK/got"

    # find with tests and printf over the extracted tree
    find "$SRC" -printf '%P %y %s %m\n' | LC_ALL=C sort >"$WORK/exp"
    pl find "$MNT/untar" -printf '%P %y %s %m\n' | LC_ALL=C sort >"$WORK/got"
    same "$n servers: find -printf over a tree" "$WORK/exp" "$WORK/got"
    find "$SRC" -name '*.txt' -type f -size -2k | sed "s,^$SRC/,," | LC_ALL=C sort >"$WORK/exp"
    pl find "$MNT/untar" -name '*.txt' -type f -size -2k | sed "s,^$MNT/untar/,," |
        LC_ALL=C sort >"$WORK/got"
    same "$n servers: find -name -type -size" "$WORK/exp" "$WORK/got"

    # rm -r removes the whole tree and nothing else
    pl ls "$MNT" | grep -vx untar >"$WORK/exp"
    pl rm -r "$MNT/untar"
    pl ls "$MNT" >"$WORK/got"
    if pl test -e "$MNT/untar"; then
        echo "untar still exists" >>"$WORK/got"
    fi
    same "$n servers: rm -r removes the tree and nothing else" "$WORK/exp" "$WORK/got"

    # rsync into adafs and back out (it walks to the destination with openat)
    pl rsync -a "$SRC/" "$MNT/rs/"
    pl rsync -a "$MNT/rs/" "$WORK/rsback.$n/"
    check "$n servers: rsync -a into adafs and back is identical" diff -r "$SRC" "$WORK/rsback.$n"

    # python3: file I/O, os.walk, os.fwalk, scandir, shutil copytree/rmtree
    "$PYTHON" "$FIXTURES/preload_walk.py" "$L/py" >"$WORK/exp" 2>&1
    pl mkdir "$MNT/py"
    pl "$PYTHON" "$FIXTURES/preload_walk.py" "$MNT/py" >"$WORK/got" 2>&1
    same "$n servers: python3 file I/O and os.walk" "$WORK/exp" "$WORK/got"

    # sqlite3: build, query, vacuum; then a second process queries it
    sqlite3 "$L/db" <"$FIXTURES/preload_sql.sql" >"$WORK/exp" 2>&1
    pl sqlite3 "$MNT/db" <"$FIXTURES/preload_sql.sql" >"$WORK/got" 2>&1
    same "$n servers: sqlite3 creates and queries a database" "$WORK/exp" "$WORK/got"
    q="SELECT count(*), sum(v) FROM t; PRAGMA integrity_check;"
    sqlite3 "$L/db" "$q" >"$WORK/exp" 2>&1
    pl sqlite3 "$MNT/db" "$q" >"$WORK/got" 2>&1
    same "$n servers: sqlite3 reopens the database" "$WORK/exp" "$WORK/got"

    # fio, psync engine, data verified with crc32c
    pl mkdir "$MNT/fio"
    check "$n servers: fio psync sequential write, verify=crc32c" \
        pl fio --name=seq --directory="$MNT/fio" --ioengine=psync --rw=write --bs=64k \
        --size=4m --verify=crc32c --do_verify=1 --fallocate=none --verify_state_save=0 \
        --minimal
    check "$n servers: fio psync random writes, verify=crc32c, native fallocate" \
        pl fio --name=rand --directory="$MNT/fio" --ioengine=psync --rw=randwrite --bs=4k \
        --size=1m --verify=crc32c --do_verify=1 --randrepeat=1 --verify_state_save=0 \
        --minimal

    # a shell: redirection into adafs (the descriptor crosses exec), cd
    # into adafs then relative paths in the exec'ed programs
    pl sh -c "cat '$SRC/files/f200000' > '$MNT/redir'"
    pl cat "$MNT/redir" >"$WORK/got"
    same "$n servers: sh redirection into adafs reaches the exec'ed program" \
        "$SRC/files/f200000" "$WORK/got"
    pl sh -c "cd '$MNT/tree/files' && cat f65537" >"$WORK/got"
    same "$n servers: cd into adafs, then a relative path in a child" \
        "$SRC/files/f65537" "$WORK/got"

    # bash builtins and stdio-based programs writing to a redirected
    # standard output, and reading a redirected standard input
    pl bash -c "echo builtin > '$MNT/std'; printf '%s\n' x y >> '$MNT/std'; \
        sed 's/[0-9]/#/g' '$SRC/many/s42.txt' >> '$MNT/std'; awk 'END { print NR }' \
        < '$SRC/big' >> '$MNT/std'"
    { echo builtin; printf '%s\n' x y; sed 's/[0-9]/#/g' "$SRC/many/s42.txt"
      awk 'END { print NR }' <"$SRC/big"; } >"$WORK/exp"
    pl cat "$MNT/std" >"$WORK/got"
    same "$n servers: bash builtins, sed and awk write to a redirected stdout" \
        "$WORK/exp" "$WORK/got"
    wc -c <"$SRC/big" >"$WORK/exp"
    pl sh -c "wc -c < '$MNT/tree/big'" >"$WORK/got"
    same "$n servers: a program reads a redirected stdin with stdio" "$WORK/exp" "$WORK/got"

    # relative paths that enter the mount from the kernel directory holding
    # it, and from a sibling with ..
    (cd "$WORK/s$n" && pl cat mnt/tree/files/f4095) >"$WORK/got"
    same "$n servers: a relative path from the mount's parent" "$SRC/files/f4095" "$WORK/got"
    (cd "$SRC" && pl cat "../s$n/mnt/tree/files/f65537") >"$WORK/got"
    same "$n servers: a relative path entering the mount with .." \
        "$SRC/files/f65537" "$WORK/got"

    # a program that leaves the mount without updating PWD: its children
    # must not take the stale PWD for their working directory
    pl sh -c "cd '$MNT/tree' && exec $PYTHON -c 'import os, subprocess
os.chdir(\"$WORK\")
print(subprocess.run([\"pwd\"], capture_output=True, text=True).stdout, end=\"\")
print(subprocess.run([\"test\", \"-f\", \"src/files/f1\"]).returncode)'" >"$WORK/got" 2>&1
    printf '%s\n0\n' "$WORK" >"$WORK/exp"
    same "$n servers: a stale PWD naming the mount is not inherited" "$WORK/exp" "$WORK/got"

    # a shell script using fixed descriptor numbers (exec 3>...), on adafs
    # and local files, while adafs keeps working
    pl bash -c "exec 3> '$MNT/fd3' 4> '$MNT/fd4'; echo three >&3; echo four >&4
        exec 3>&- 4>&-
        for i in 3 4 5 6 7 8 9; do eval \"exec \$i< '$SRC/files/f4095'\"; done
        cat '$MNT/fd3' '$MNT/fd4'; wc -c < '$MNT/tree/files/f65537'" >"$WORK/got" 2>&1
    printf 'three\nfour\n65537\n' >"$WORK/exp"
    same "$n servers: a shell script's exec 3>file and fixed descriptors" "$WORK/exp" "$WORK/got"

    # exec with an emptied environment still sees the mount
    pl env -i /bin/cat "$MNT/tree/files/f4095" >"$WORK/got"
    same "$n servers: env -i keeps the mount visible across exec" \
        "$SRC/files/f4095" "$WORK/got"

    # mv between adafs and a local directory (EXDEV: copy and delete)
    pl mv "$MNT/redir" "$WORK/moved.$n"
    if cmp -s "$SRC/files/f200000" "$WORK/moved.$n" && ! pl test -e "$MNT/redir"; then
        ok "$n servers: mv from adafs to a local directory"
    else
        not_ok "$n servers: mv from adafs to a local directory"
    fi

    if [ -n "$KERNEL_MOUNT" ]; then
        check "$n servers: the mount is still adafs-fuse's" grep -q " $MNT fuse.adafs " /proc/mounts
    else
        # the kernel still sees only the placeholder file at the mount point
        check "$n servers: nothing reached the kernel under the mount point" \
            test -f "$MNT" -a ! -s "$MNT"
    fi
}

for n in 1 2 4; do
    suite "$n"
done

# Programs that map their files or run programs stored in adafs (git, gcc
# and what it builds, #! scripts, numpy.memmap, sqlite3 WAL): the whole
# transcript of tests/real_programs.sh, byte for byte as on a local
# directory.
if command -v git >/dev/null && command -v gcc >/dev/null &&
   "$PYTHON" -c 'import numpy' 2>/dev/null && [ -x /bin/busybox ]; then
    start_instance real 2
    mkdir -p "$WORK/real.local" "$WORK/real.scratch1" "$WORK/real.scratch2"
    # through FUSE the kernel sees the files: static binaries and concurrent
    # sqlite3 processes on them too
    kernel=
    [ -n "$KERNEL_MOUNT" ] && kernel=kernel
    "$SRCDIR/tests/real_programs.sh" "$WORK/real.local" "$WORK/real.scratch1" $kernel \
        >"$WORK/exp" 2>&1
    pl mkdir "$MNT/real"
    pl bash "$SRCDIR/tests/real_programs.sh" "$MNT/real" "$WORK/real.scratch2" $kernel \
        >"$WORK/got" 2>&1
    same "gcc, #! scripts, git, numpy.memmap and sqlite3 WAL in adafs as on a local directory${kernel:+ (and busybox-static, concurrent WAL)}" \
        "$WORK/exp" "$WORK/got"
else
    skip "gcc, #! scripts, git, numpy.memmap and sqlite3 WAL in adafs" \
        "needs git, gcc, python3-numpy and busybox-static (scripts/install-deps.sh)"
fi
echo "1..$TAP_N"
