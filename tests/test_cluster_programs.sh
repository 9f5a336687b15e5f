#!/bin/bash
# Every program on the mini-cluster (issue 26): in a 4-node job with
# access=both, gcc, #! scripts, busybox-static, git, numpy.memmap and
# sqlite3 WAL in $ADAFS_MOUNT give byte for byte what they give in a local
# directory, through the interposer and through the kernel mount alone; a
# program compiled into the file system (and a static one) runs as an srun
# step on 4 nodes; mmap semantics hold; another user cannot enter the
# mount; teardown takes the mount off although a process still sits in
# it. Then a server killed under a reader on the FUSE mount: EIO in a
# bounded time, and the mount still goes. And with access=preload, mappings
# from the noexec store take the fast path without a word on stderr.
. "${abs_top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
require_cluster
[ -e /dev/fuse ] || skip_all "no /dev/fuse (the fuse kernel module)"
command -v git >/dev/null && command -v gcc >/dev/null && [ -x /bin/busybox ] &&
    /usr/bin/python3 -c 'import numpy' 2>/dev/null ||
    skip_all "needs git, gcc, busybox-static and python3-numpy (scripts/install-deps.sh)"
other_user=adafs-test2
id "$other_user" >/dev/null 2>&1 || skip_all "no user $other_user (cluster.sh makes it)"

start_cluster
R=$pfs/programs
as_user_sh "rm -rf $R && mkdir -p $R"
programs=$abs_top_srcdir/agent/tests/real_programs.sh
mmap_check=$abs_top_builddir/agent/tests/mmap_check

write_job programs.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 4 -t 20 -o programs-%j.out
#BB_ADAFS capacity=4G access=both
set -u
scratch=\$(mktemp -d /tmp/adafs-programs.XXXXXX)
mkdir -p \$scratch/local \$scratch/s1 \$scratch/s2 \$scratch/s3 \$ADAFS_MOUNT/pre \$ADAFS_MOUNT/fuse
bash $programs \$scratch/local \$scratch/s1 kernel > $R/local.txt 2>&1
# the shell is preloaded: the interposer's path, the mount for the rest
bash $programs \$ADAFS_MOUNT/pre \$scratch/s2 kernel > $R/both.txt 2>&1
# the kernel mount alone
env -u LD_PRELOAD bash $programs \$ADAFS_MOUNT/fuse \$scratch/s3 kernel > $R/fuse.txt 2>&1
mkdir \$ADAFS_MOUNT/maps
$mmap_check \$ADAFS_MOUNT/maps both > $R/mmap.tap 2>&1
# srun steps: a program compiled into the file system, and a static one
cat > \$ADAFS_MOUNT/step.c <<'C'
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
    FILE *f = fopen(argv[1], "r");
    int lines = 0, c;
    while (f && (c = fgetc(f)) != EOF)
        lines += c == '\n';
    printf("node %s task %s read %d lines\n", getenv("SLURM_NODEID"), getenv("SLURM_PROCID"), lines);
    return 0;
}
C
gcc -o \$ADAFS_MOUNT/step \$ADAFS_MOUNT/step.c
wc -l < \$ADAFS_MOUNT/step.c > $R/lines
srun -N 4 --ntasks-per-node=1 \$ADAFS_MOUNT/step \$ADAFS_MOUNT/step.c | sort > $R/srun.txt 2>&1
srun -N 4 --ntasks-per-node=1 \$ADAFS_MOUNT/pre/bin/busybox wc -l \$ADAFS_MOUNT/step.c \
    > $R/srun-static.txt 2>&1
grep " \$ADAFS_MOUNT fuse.adafs " /proc/mounts > $R/mounts.txt
touch $R/ready
for _ in \$(seq 600); do [ -e $R/go ] && break; sleep 0.1; done
# outlives the job, sitting in the mount with a file open
(setsid sh -c 'echo \$\$ > $R/sitter.pid; cd "\$1" && exec 3<step.c && exec sleep 600' sh \$ADAFS_MOUNT \
    </dev/null >/dev/null 2>&1 &)
for _ in \$(seq 50); do [ -s $R/sitter.pid ] && break; sleep 0.1; done
rm -rf \$scratch
JOB
id=$(submit programs.sh)
ok $? "a 4-node job with access=both is accepted (job $id)"
for _ in $(seq 600); do [ -e "$R/ready" ] && break; sleep 0.5; done
check "the job ran its programs" -- test -e "$R/ready"
mnt=$ADAFS_CLUSTER_DIR/mnt/$id
uid=$(id -u "$test_user")
check "its file system is a FUSE mount of the job's user, nosuid, nodev" -- \
    grep -q "^adafs $mnt fuse.adafs rw,nosuid,nodev.*user_id=$uid," "$R/mounts.txt"
out=$(runuser -u "$other_user" -- ls "$mnt" 2>&1)
check "another user cannot enter it ($out)" -- grep -q "Permission denied" <<<"$out"
out=$(runuser -u "$other_user" -- cat "$mnt/step.c" 2>&1)
check "nor read a file in it ($out)" -- grep -q "Permission denied" <<<"$out"
check "nor may root" -- bash -c "! ls '$mnt' >/dev/null 2>&1"
as_user_sh "touch $R/go"
check "the job completes" -- wait_job "$id" COMPLETED 300

check "gcc, #! scripts, busybox-static, git, numpy.memmap, sqlite3 WAL: the transcript has every step" -- \
    test "$(grep -c '^== ' "$R/local.txt")" = 7
check "through the interposer (access=both) as in a local directory" -- cmp "$R/local.txt" "$R/both.txt"
diff "$R/local.txt" "$R/both.txt" | head -20 | sed 's/^/# /'
check "through the kernel mount alone as in a local directory" -- cmp "$R/local.txt" "$R/fuse.txt"
diff "$R/local.txt" "$R/fuse.txt" | head -20 | sed 's/^/# /'
# and the baseline itself did what each step is for
for want in "argc=3 argv0=@DIR@/bin/hello exe=@DIR@/bin/hello" "sh script 2 args: a b" \
            "python script script.py ['x', 'y']" "interpreter from the directory: @DIR@/bin/inner.sh" \
            "a static binary runs from the directory" "@DIR@/src/made/by/it" " second" \
            "other process: sum" "## main...origin/main" "ok"; do
    check "the local run shows: $want" -- grep -qF -- "$want" "$R/local.txt"
done
check "and no step failed unexpectedly (only hello's exit 3 and script.sh's 4)" -- \
    test "$(grep '^exit ' "$R/local.txt" | grep -vc '^exit [34]: ')" = 0
check "mmap: SIGBUS beyond the end, truncation, write-back, as on a local disk (mmap_check)" -- \
    bash -c "grep -q '^1\\.\\.' '$R/mmap.tap' && ! grep -q '^not ok' '$R/mmap.tap'"
grep '^not ok' "$R/mmap.tap" | sed 's/^/# /'
lines=$(cat "$R/lines")
want=$(printf "node %s task %s read $lines lines\n" 0 0 1 1 2 2 3 3)
check "a program compiled into \$ADAFS_MOUNT runs as an srun step on 4 nodes" -- \
    test "$(cat "$R/srun.txt")" = "$want"
sed 's/^/# /' "$R/srun.txt"
check "so does a static binary, on a file there" -- \
    test "$(grep -c "^$lines $mnt/step.c\$" "$R/srun-static.txt")" = 4
sed 's/^/# /' "$R/srun-static.txt"

sitter=$(cat "$R/sitter.pid" 2>/dev/null)
check "a process outlived the job in the mount (pid $sitter)" -- kill -0 "${sitter:-0}"
check "teardown took everything away nonetheless: mount, adafs-fuse, data" -- wait_clean 60
state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$sitter/status" 2>/dev/null)
check "the process is not stuck in the mount it sat in (state $state)" -- test "$state" != D
[ -n "$sitter" ] && kill "$sitter" 2>/dev/null

# access=preload: mappings through the interposer alone. The servers'
# data sit in the job's store, mounted noexec (agent/agentd/store.c); a
# mapping not asking for PROT_EXEC is mapped from the data files all the
# same (the fast path, doc/preload.md) and says nothing on stderr.
as_user_sh "rm -rf $pfs/pmaps && mkdir -p $pfs/pmaps"
write_job pmaps.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 2 -t 5 -o pmaps-%j.out
#BB_ADAFS capacity=1G access=preload
mkdir \$ADAFS_MOUNT/maps
$mmap_check \$ADAFS_MOUNT/maps preload > $pfs/pmaps/mmap.tap 2> $pfs/pmaps/stderr
touch $pfs/pmaps/done
JOB
id=$(submit pmaps.sh)
check "access=preload: the mapping job completes (job $id)" -- wait_job "$id" COMPLETED 120
check "its mappings behave as on a local disk, pages mapped from the noexec store (mmap_check)" -- \
    bash -c "grep -q '^1\\.\\.' '$pfs/pmaps/mmap.tap' && ! grep -q '^not ok' '$pfs/pmaps/mmap.tap'"
grep '^not ok' "$pfs/pmaps/mmap.tap" | sed 's/^/# /'
check "and say nothing on stderr" -- test -e "$pfs/pmaps/done" -a ! -s "$pfs/pmaps/stderr"
sed 's/^/# /' "$pfs/pmaps/stderr" 2>/dev/null | head -5
check "teardown after it is clean" -- wait_clean 60

# A server killed under a reader on the FUSE mount (access=fuse: no
# interposer at all): EIO within a bounded time, and the mount still goes.
as_user_sh "rm -rf $pfs/fkill && mkdir -p $pfs/fkill"
write_job fkill.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 2 -t 5 -o fkill-%j.out
#BB_ADAFS capacity=1G access=fuse
for i in \$(seq 1 32); do head -c 300000 /dev/urandom > \$ADAFS_MOUNT/file\$i; done
echo "\${LD_PRELOAD:-none}" > $pfs/fkill/preload
touch $pfs/fkill/started
while [ ! -e $pfs/fkill/go ]; do sleep 0.2; done
start=\$(date +%s)
bad=0
for i in \$(seq 1 32); do /bin/busybox cat \$ADAFS_MOUNT/file\$i >/dev/null 2>>$pfs/fkill/errors || bad=\$((bad+1)); done
echo "failed=\$bad seconds=\$(( \$(date +%s) - start ))" > $pfs/fkill/result
JOB
id=$(submit fkill.sh)
check "FUSE kill test: the job runs on the mount" -- wait_file "$pfs/fkill/started"
check "access=fuse: the job has no LD_PRELOAD" -- grep -qx none "$pfs/fkill/preload"
kill_server_check "FUSE kill test" "$id" fkill 32 90

tap_done
