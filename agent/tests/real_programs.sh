#!/bin/bash
# real_programs.sh: programs that need more than open/read/write, run in one
# directory, their outputs printed as a transcript.
#
#   real_programs.sh DIR SCRATCH [kernel]
#
# DIR is where everything happens (an empty local directory, or one in
# adafs); SCRATCH a local directory for what must be outside it (a
# repository to clone from and into). With "kernel", the kernel sees DIR
# (a local directory, or a FUSE mount of adafs): a static binary (busybox)
# also works on the files there, and two sqlite3 processes use one WAL
# database at once (they need the kernel's locks and shared memory).
# The transcript names DIR as @DIR@ and SCRATCH as @SCRATCH@, so that runs
# in two places can be compared byte for byte (the tests compare an adafs
# run with a run on a local directory). Each step prints "== step" first;
# a command that exits non-zero prints "exit N: ..." (hello exits 3 and
# script.sh 4 on purpose) and the rest goes on.
set -u
DIR=$1
SCRATCH=$2
KERNEL=${3:-}
PYTHON=${PYTHON:-/usr/bin/python3}
BUSYBOX=${BUSYBOX:-/bin/busybox}
export LC_ALL=C TZ=UTC
# Fixed names and dates: commits get the same hashes in every run.
export GIT_AUTHOR_NAME=adafs GIT_AUTHOR_EMAIL=adafs@example.org GIT_AUTHOR_DATE=@1700000000
export GIT_COMMITTER_NAME=adafs GIT_COMMITTER_EMAIL=adafs@example.org
export GIT_COMMITTER_DATE=@1700000000 GIT_CONFIG_NOSYSTEM=1 HOME=$SCRATCH/home
mkdir -p "$HOME"
git config --global init.defaultBranch main
git config --global gc.auto 0
git config --global advice.detachedHead false

step() { echo "== $*"; }
run() { "$@" 2>&1 || echo "exit $?: $*"; }
names() { sed -e "s,$DIR,@DIR@,g" -e "s,$SCRATCH,@SCRATCH@,g"; }

main() {
    if [ -n "$(ls -A "$DIR")" ]; then
        echo "exit 1: $DIR is not empty"
        return
    fi
    step "compile a C program into the directory and run it"
    mkdir -p "$DIR/src" "$DIR/bin"
    cat >"$DIR/src/hello.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    printf("argc=%d argv0=%s exe=%s\n", argc, argv[0], exe);
    for (int i = 1; i < argc; i++)
        printf("arg %d: %s\n", i, argv[i]);
    FILE *f = fopen(argc > 1 ? argv[1] : "/dev/null", "r");
    char line[256];
    if (f && fgets(line, sizeof line, f))
        printf("first line: %s", line);
    return 3;
}
C
    run gcc -O1 -o "$DIR/bin/hello" "$DIR/src/hello.c"
    run "$DIR/bin/hello" "$DIR/src/hello.c" two
    (cd "$DIR/bin" && run ./hello)
    PATH="$DIR/bin:$PATH" run hello from-path
    chmod -x "$DIR/bin/hello"
    "$DIR/bin/hello" 2>/dev/null
    echo "without x: exit status $?"
    chmod +x "$DIR/bin/hello"

    step "scripts with #! stored in the directory"
    printf '#!/bin/sh\necho "sh script $# args: $*"\nexit 4\n' >"$DIR/bin/script.sh"
    printf '#!/usr/bin/env python3\nimport os, sys\nprint("python script", os.path.basename(__file__), sys.argv[1:])\n' \
        >"$DIR/bin/script.py"
    chmod +x "$DIR/bin/script.sh" "$DIR/bin/script.py"
    run "$DIR/bin/script.sh" a b
    PATH="$DIR/bin:$PATH" run script.py x y
    "$PYTHON" -c "import subprocess; r = subprocess.run(['$DIR/bin/script.sh', 'sub'], capture_output=True, text=True); print(r.stdout, end=''); print('status', r.returncode)"
    "$PYTHON" -c "import os; pid = os.posix_spawn('$DIR/bin/hello', ['spawned'], os.environ); print('posix_spawn status', os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))" | names
    # a script whose interpreter is stored in the directory too
    cp /bin/dash "$DIR/bin/mysh"
    printf '#!%s -e\necho "interpreter from the directory: $0"\n' "$DIR/bin/mysh" >"$DIR/bin/inner.sh"
    chmod +x "$DIR/bin/inner.sh"
    run "$DIR/bin/inner.sh" | names

    step "a static binary"
    cp "$BUSYBOX" "$DIR/bin/busybox"
    run "$DIR/bin/busybox" echo "a static binary runs from the directory"
    if [ "$KERNEL" = kernel ]; then
        run "$DIR/bin/busybox" md5sum "$DIR/src/hello.c" | names
        run "$DIR/bin/busybox" sh -c "cd '$DIR/src' && ls && wc -c hello.c && mkdir -p made/by && echo busybox > made/by/it && cat made/by/it"
        run "$DIR/bin/busybox" find "$DIR/src" -type f | sort | names
        rm -rf "$DIR/src/made"
    fi

    step "git init, add, commit, log, status, gc, fsck"
    mkdir -p "$DIR/repo"
    (
        cd "$DIR/repo" || exit 1
        run git init -q
        printf 'line %s\n' $(seq 1 500) >a.txt
        mkdir -p sub && cp "$DIR/src/hello.c" sub/
        run git add .
        run git commit -q -m "first"
        echo more >>a.txt
        git mv sub/hello.c sub/main.c
        run git commit -q -am "second"
        echo untracked >new.txt
        run git status --short
        run git log --format='%H %s'
        run git gc -q
        run git count-objects -v | grep -E '^(count|in-pack|packs)'
        run git fsck --full --no-progress
        run git show --stat --format=%s HEAD
    )

    step "git clone out of the directory, into it, and within it"
    rm -rf "$SCRATCH/out" "$SCRATCH/src-repo" "$DIR/clone-in" "$DIR/clone-within"
    run git clone -q "$DIR/repo" "$SCRATCH/out"
    run git -C "$SCRATCH/out" fsck --full --no-progress
    run git -C "$SCRATCH/out" log --format='%H %s'
    git init -q "$SCRATCH/src-repo"
    echo local >"$SCRATCH/src-repo/l.txt"
    git -C "$SCRATCH/src-repo" add l.txt
    git -C "$SCRATCH/src-repo" commit -q -m local
    run git clone -q "$SCRATCH/src-repo" "$DIR/clone-in"
    run git -C "$DIR/clone-in" fsck --full --no-progress
    run git -C "$DIR/clone-in" log --format='%H %s'
    run cat "$DIR/clone-in/l.txt"
    run git clone -q "$DIR/repo" "$DIR/clone-within"
    run git -C "$DIR/clone-within" fsck --full --no-progress
    run git -C "$DIR/clone-within" status --short --branch

    step "numpy.memmap: write, flush, read back in another process"
    "$PYTHON" - "$DIR/mm.dat" <<'PY' 2>&1
import sys
import numpy as np
m = np.memmap(sys.argv[1], dtype=np.float64, mode='w+', shape=(512, 1024))
m[:] = np.arange(512 * 1024, dtype=np.float64).reshape(512, 1024)
m[100, 5] = -1.5
m.flush()
del m
r = np.memmap(sys.argv[1], dtype=np.float64, mode='r+', shape=(512, 1024))
r[511, 1023] = 42.0
r.flush()
print("written", r.shape, float(r[100, 5]))
PY
    "$PYTHON" - "$DIR/mm.dat" <<'PY' 2>&1
import sys, hashlib
import numpy as np
r = np.memmap(sys.argv[1], dtype=np.float64, mode='r', shape=(512, 1024))
print("other process: sum", float(r.sum()), "r[100,5]", float(r[100, 5]), "last", float(r[511, 1023]))
print("sha256", hashlib.sha256(r.tobytes()).hexdigest())
PY

    step "sqlite3 in WAL mode"
    rm -f "$DIR/wal.db"
    run sqlite3 "$DIR/wal.db" "PRAGMA journal_mode=WAL; CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT);
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
        INSERT INTO t SELECT i, hex(randomblob(0) || i) FROM n; SELECT count(*) FROM t;"
    run sqlite3 "$DIR/wal.db" "PRAGMA journal_mode; INSERT INTO t(v) VALUES ('again'); SELECT count(*) FROM t;"
    if [ "$KERNEL" = kernel ]; then
        # a reader holds a snapshot open while another process commits
        run sqlite3 "$DIR/wal.db" "BEGIN; SELECT count(*) FROM t;" \
            ".shell sqlite3 '$DIR/wal.db' 'INSERT INTO t(v) VALUES (1); SELECT count(*) FROM t;'" \
            "SELECT count(*) FROM t; COMMIT; SELECT count(*) FROM t; PRAGMA integrity_check;"
    fi
    run sqlite3 "$DIR/wal.db" "PRAGMA wal_checkpoint(TRUNCATE); SELECT count(*), sum(k) FROM t;"
}

main 2>&1 | names
