#!/bin/bash
# The demo job: two nodes, a private adafs file system, data staged in from
# the "parallel file system" (PFS, a directory of the mini-cluster) and the
# results staged back out. @PFS@ is replaced by scripts/demo.
#SBATCH -J adafs-demo -N 2 -t 10 -o demo-%j.out
#BB_ADAFS capacity=2G chunk=512K
#BB_ADAFS stage_in  source=@PFS@/demo/input    destination=input  type=directory
#BB_ADAFS stage_in  source=@PFS@/demo/list.txt destination=.      type=list
#BB_ADAFS stage_out source=results destination=@PFS@/demo/out/%j type=directory
set -e
echo "job $SLURM_JOB_ID on $SLURM_JOB_NODELIST; adafs mounted at $ADAFS_MOUNT"
mkdir -p "$ADAFS_MOUNT/results"

# Each node checksums the staged-in tree, reading it through adafs.
srun -N2 -n2 bash -c 'cd "$ADAFS_MOUNT/input" && find . -type f | sort | xargs md5sum \
    > "$ADAFS_MOUNT/results/md5.$SLURMD_NODENAME"'

# Ordinary programs, unmodified: python3 counts words, tar packs the input.
python3 - <<'PY'
import os, collections
root = os.environ["ADAFS_MOUNT"]
words = collections.Counter()
for dirpath, _, files in os.walk(os.path.join(root, "input")):
    for f in files:
        if f.endswith(".txt"):
            with open(os.path.join(dirpath, f)) as fh:
                words.update(fh.read().split())
with open(os.path.join(root, "results", "words.txt"), "w") as out:
    for w, n in words.most_common(10):
        out.write(f"{n} {w}\n")
PY
tar -C "$ADAFS_MOUNT" -cf "$ADAFS_MOUNT/results/input.tar" input
cp "$ADAFS_MOUNT/reference.dat" "$ADAFS_MOUNT/results/"
ls -l "$ADAFS_MOUNT/results"
