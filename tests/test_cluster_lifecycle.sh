#!/bin/bash
# The user's view on the mini-cluster: a 4-node job stages a nested tree and
# a list in, computes through the client library, stages results out; ten
# jobs at once never see each other's files; nothing is left on the nodes.
. "${abs_top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
require_cluster

start_cluster

# The "parallel file system": 1,000 files in nested directories, and a list.
as_user_sh "
set -e
mkdir -p $pfs/proj/input $pfs/proj/single $pfs/proj/out
for d in \$(seq 0 9); do
  for s in \$(seq 0 9); do
    mkdir -p $pfs/proj/input/d\$d/s\$s
    for f in \$(seq 0 9); do
      head -c \$(( (d * 100 + s * 10 + f) * 37 % 9000 + 1 )) /dev/urandom > $pfs/proj/input/d\$d/s\$s/f\$f.dat
    done
  done
done
head -c 3000000 /dev/urandom > $pfs/proj/single/big.bin
echo 'list entry one' > $pfs/proj/single/one.txt
printf '%s %s\n' $pfs/proj/single/big.bin listed/big.bin $pfs/proj/single/one.txt listed/one.txt > $pfs/proj/list.txt
"
check "fixture has 1,000 input files" -- test "$(find "$pfs/proj/input" -type f | wc -l)" = 1000

write_job four.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 4 -t 10 -o four-%j.out
#BB_ADAFS capacity=2G chunk=256K
#BB_ADAFS stage_in  source=$pfs/proj/input    destination=input type=directory
#BB_ADAFS stage_in  source=$pfs/proj/list.txt destination=.     type=list
#BB_ADAFS stage_out source=results destination=$pfs/proj/out/%j type=directory verify=yes
set -e
echo "mount=\$ADAFS_MOUNT"
test -n "\$ADAFS_INSTANCE" && test -n "\$LD_PRELOAD"
mkdir -p \$ADAFS_MOUNT/results
# Every node computes on the shared file system through the interposer.
srun -N4 -n4 bash -c 'cd \$ADAFS_MOUNT/input && find . -type f | sort | xargs md5sum > \$ADAFS_MOUNT/results/sums.\$SLURM_PROCID'
cp -r \$ADAFS_MOUNT/input \$ADAFS_MOUNT/results/copy
cat \$ADAFS_MOUNT/listed/big.bin > \$ADAFS_MOUNT/results/big.bin
cp \$ADAFS_MOUNT/listed/one.txt \$ADAFS_MOUNT/results/
ls \$ADAFS_MOUNT/results | wc -l
JOB
id=$(submit four.sh)
ok $? "4-node staging job accepted ($id)"
check "it completes" -- wait_job "$id" COMPLETED 240
out=$pfs/proj/out/$id
check "stage-out copied the tree back byte for byte" -- diff -r "$pfs/proj/input" "$out/copy"
check "the listed big file came back byte for byte" -- cmp "$pfs/proj/single/big.bin" "$out/big.bin"
check "the listed small file came back" -- cmp "$pfs/proj/single/one.txt" "$out/one.txt"
ref=$(cd "$pfs/proj/input" && find . -type f | sort | xargs md5sum)
for r in 0 1 2 3; do
    check "node task $r read every staged file correctly" -- \
        bash -c "diff <(cat '$out/sums.$r') <(echo \"\$0\")" "$ref"
done
check "stage-out files belong to the job user" -- \
    test "$(stat -c %U "$out/big.bin")" = "$test_user"
stat_text=$(scontrol show bbstat "$id")
diag "$(sed 's/^/  /' <<<"$stat_text")"
check "bbstat shows the instance on 4 nodes" -- grep -q "Nodes=4" <<<"$stat_text"
check "bbstat counts 1,002 staged-in files" -- grep -q "StageIn: Files=1002 " <<<"$stat_text"
check "bbstat says stage-out verified what it copied (verify=yes)" -- grep -qE "StageOut: Files=([1-9][0-9]*) .* Verified=\1$" <<<"$stat_text"
check "bbstat shows per-phase timings" -- grep -qE "Timings: Deploy=[0-9]+s StageIn=[0-9]+s Run=[0-9]+s StageOut=[0-9]+s" <<<"$stat_text"
check "nothing is left on the nodes" -- wait_clean 30

# Ten jobs at once: each writes its id and looks for the others' files.
for k in $(seq 1 10); do
    write_job many$k.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 1 -n 1 -t 10 -o many-%j.out
#BB_ADAFS capacity=64M
#BB_ADAFS stage_out source=mine destination=$pfs/many/%j type=directory
mkdir -p \$ADAFS_MOUNT/mine
echo \$SLURM_JOB_ID > \$ADAFS_MOUNT/mine/id.\$SLURM_JOB_ID
sleep 2
ls \$ADAFS_MOUNT/mine > \$ADAFS_MOUNT/mine/listing
JOB
done
as_user_sh "mkdir -p $pfs/many"
ids=()
for k in $(seq 1 10); do ids+=("$(submit many$k.sh)"); done
all_done=0
for id in "${ids[@]}"; do wait_job "$id" COMPLETED 300 || all_done=1; done
ok $all_done "ten burst buffer jobs submitted at once all complete"
isolated=0
for id in "${ids[@]}"; do
    # (ls creates the listing before it lists, so it names itself too)
    [ "$(grep -v '^listing$' "$pfs/many/$id/listing" 2>/dev/null)" = "id.$id" ] || { isolated=1; diag "job $id saw: $(cat "$pfs/many/$id/listing" 2>/dev/null)"; }
done
ok $isolated "each of the ten saw only its own files"
check "nothing is left after the ten" -- wait_clean 60
tap_done
