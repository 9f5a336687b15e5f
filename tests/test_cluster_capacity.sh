#!/bin/bash
# A job's capacity bounds everything it puts on a node: what its user
# writes into the server's storage by hand, data and metadata through the
# file system. Full means ENOSPC, nothing already written is lost, the
# file system takes creates again once something is removed, and another
# job on the same node does not notice.
. "${abs_top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
require_cluster

start_cluster
res=$pfs/cap
as_user_sh "mkdir -p $res"
# 64 MiB of data, plus the reserve instance_space() states (doc/filesystem.md).
image_max=100663296
# du of an image: its blocks (all reserved at deploy) and the backing file
# system's extent blocks of it.
du_max=$((image_max + 65536))

write_job filler.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 1 -w n1 -t 10
#BB_ADAFS capacity=64M
r=$res/\$SLURM_JOB_ID
root=$ADAFS_CLUSTER_DIR/storage/n1/job.\$SLURM_JOB_ID
# 1. Around the file system: straight into the server's storage.
dd if=/dev/zero of=\$root/by-hand bs=1M count=512 2>\$r.hand-err
stat -c %s \$root/by-hand > \$r.hand-bytes
du -B1 \$root.img | cut -f1 > \$r.hand-image
rm -f \$root/by-hand
# 2. Through it: a file to check at the end, then data until full.
head -c 1000000 /dev/urandom > \$r.keep
cp \$r.keep \$ADAFS_MOUNT/keep
dd if=/dev/zero of=\$ADAFS_MOUNT/big bs=1M count=200 2>\$r.fs-err
# 3. Creates with long random names (RocksDB compresses its tables)
# until the metadata has no room either.
mkdir \$ADAFS_MOUNT/d
python3 - \$ADAFS_MOUNT/d \$r <<'PY'
import errno, os, sys
d, r = sys.argv[1], sys.argv[2]
n, err = 0, ''
while n < 2000000:
    try:
        os.close(os.open('%s/%s.%d' % (d, os.urandom(100).hex(), n), os.O_CREAT | os.O_WRONLY, 0o644))
    except OSError as e:
        err = os.strerror(e.errno)
        break
    n += 1
open(r + '.creates', 'w').write('%d\\n' % n)
open(r + '.create-err', 'w').write(err + '\\n')
open(r + '.listed', 'w').write('%d\\n' % len(os.listdir(d)))
PY
du -B1 \$root.img | cut -f1 > \$r.fs-image
# 4. Nothing already written is lost; removing makes room again.
cmp \$r.keep \$ADAFS_MOUNT/keep && echo intact > \$r.kept
rm \$ADAFS_MOUNT/big
ls \$ADAFS_MOUNT/d | head -1000 | while read -r f; do rm "\$ADAFS_MOUNT/d/\$f"; done
( : > \$ADAFS_MOUNT/d/again && echo 12345 > \$ADAFS_MOUNT/d/again &&
  cat \$ADAFS_MOUNT/d/again > \$r.again ) 2>\$r.again-err
touch \$r.done
# Held until the test has looked at the node.
for _ in \$(seq 240); do [ -e $res/stop ] && break; sleep 0.5; done
JOB

write_job neighbour.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 1 -w n1 -t 10
#BB_ADAFS capacity=64M
for _ in \$(seq 240); do [ -e $res/go ] && break; sleep 0.5; done
head -c 20000000 /dev/urandom > $res/n.src
cp $res/n.src \$ADAFS_MOUNT/data && cmp $res/n.src \$ADAFS_MOUNT/data && echo fine > $res/neighbour
JOB

id=$(submit filler.sh)
nb=$(submit neighbour.sh)
check "a 64 MiB job and a neighbour run on n1" -- \
    bash -c "for _ in \$(seq 240); do [ \"\$(squeue -h -j $id,$nb -o %t | sort -u)\" = R ] && exit 0; sleep 0.5; done; exit 1"
check "the filler job goes through its steps" -- \
    bash -c "for _ in \$(seq 480); do [ -e $res/$id.done ] && exit 0; sleep 0.5; done; exit 1"
r=$res/$id
check "by hand: 512 MiB into the server's storage stops with ENOSPC ($(head -1 "$r.hand-err"))" -- \
    grep -q "No space left" "$r.hand-err"
check "by hand: what landed stays within the job's image ($(cat "$r.hand-bytes") bytes written, image $(cat "$r.hand-image") <= $du_max)" -- \
    test "$(cat "$r.hand-image")" -le "$du_max"
check "through the file system: 200 MiB stops with ENOSPC ($(head -1 "$r.fs-err"))" -- \
    grep -q "No space left" "$r.fs-err"
check "creates stop with ENOSPC too, after $(cat "$r.creates") ($(head -1 "$r.create-err"))" -- \
    grep -q "No space left" "$r.create-err"
check "the image never grew beyond its size ($(cat "$r.fs-image") <= $du_max)" -- \
    test "$(cat "$r.fs-image")" -le "$du_max"
check "the file written first is intact" -- test "$(cat "$r.kept" 2>/dev/null)" = intact
check "every file created before it was full is listed" -- \
    test "$(cat "$r.listed")" = "$(cat "$r.creates")"
check "after removing some, creates and writes work again (RocksDB not stopped) $(cat "$r.again-err" 2>/dev/null)" -- \
    test "$(cat "$r.again" 2>/dev/null)" = 12345
image=$ADAFS_CLUSTER_DIR/storage/n1/job.$id.img
check "the node holds one image of at most $image_max bytes for it, reserved ($(du -B1 "$image" | cut -f1), at most $du_max)" -- \
    bash -c "[ \$(du -B1 $image | cut -f1) -ge $image_max ] && [ \$(du -B1 $image | cut -f1) -le $du_max ]"
as_user_sh "touch $res/go"
check "the neighbour on the same node writes and reads its 20 MB" -- \
    bash -c "for _ in \$(seq 240); do [ -e $res/neighbour ] && exit 0; sleep 0.5; done; exit 1"
as_user_sh "touch $res/stop"
both_complete() { wait_job "$id" COMPLETED 120 && wait_job "$nb" COMPLETED 120; }
check "both complete" -- both_complete
check "no node drained" -- bash -c "! sinfo -h -o %t | grep -q drain"
nothing_left() {
    wait_clean 60 && ! ls "$ADAFS_CLUSTER_DIR"/storage/n1/*.img 2>/dev/null &&
        ! findmnt -rn -o TARGET | grep -q "^$ADAFS_CLUSTER_DIR/storage/"
}
check "nothing left: no server, no image, nothing mounted" -- nothing_left
tap_done
