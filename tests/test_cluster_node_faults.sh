#!/bin/bash
# What an admin meets on real nodes, side by side on four nodes (about 45 s):
# n1's local disk full (a small tmpfs on its storage): the deploy fails with
# ENOSPC naming the image, the job is held, nothing drained, nothing left;
# a stage_out destination that fills up midway (ENOSPC, not EACCES as in
# test_cluster_stageout_keep.sh): kept with the data, copied out once there
# is room; n4's agent killed during a stage-out and started again: the job
# ends at once saying its data was wiped and what was not copied out (its
# record says a stager ran), and the Epilog waits for the new agent instead
# of draining the node; n3's agent killed at the same moment while its job
# runs: the new agent re-adopts the job (its record and server prove it
# intact), and again after a clean restart (SIGTERM, as systemctl restart
# and an upgrade send); the job reads its data back, ends and stages it out.
. "${abs_top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
require_cluster

start_cluster
storage=$ADAFS_CLUSTER_DIR/storage
mounted=()
unmount_all() { for m in "${mounted[@]}"; do umount -l "$m" 2>/dev/null; done; "$cluster" stop >/dev/null 2>&1; }
trap unmount_all EXIT
set_bb_conf AdafsStageOutRetry 2
as_user_sh "rm -rf $pfs/nf && mkdir -p $pfs/nf/dest $pfs/nf/out && head -c 6000000 /dev/urandom > $pfs/nf/in.bin"

# 1. n1's disk: 64 MiB, the job asks 1 GiB (its image: 1.3 GiB).
mkdir -p "$storage/n1"
mount -t tmpfs -o size=64M,mode=0755 adafs-test-full "$storage/n1" && mounted+=("$storage/n1")
write_job full.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 1 -w n1 -t 5
#BB_ADAFS capacity=1G
echo should not run
JOB
full=$(submit full.sh)

# 2. A destination of 4 MB for 6 MB of results, on n2.
mount -t tmpfs -o size=4M,mode=0755,uid="$(id -u "$test_user")" adafs-test-dest "$pfs/nf/dest" &&
    mounted+=("$pfs/nf/dest")
write_job fills.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 1 -w n2 -t 5
#BB_ADAFS capacity=1G
#BB_ADAFS stage_out source=res destination=$pfs/nf/dest/%j type=directory
mkdir \$ADAFS_MOUNT/res
for i in 1 2 3; do head -c 2000000 $pfs/nf/in.bin | tail -c +\$((i * 1000)) > \$ADAFS_MOUNT/res/f\$i; done
image=$storage/n2/job.\$SLURM_JOB_ID.img
sleep 5   # the kernel's lazy inode-table zeroing would have punched holes by now
echo "\$(stat -c '%b %B %s' \$image)" > $pfs/nf/image.\$SLURM_JOB_ID
JOB
fills=$(submit fills.sh)

# 3. n4's agent killed while a 6 MB stage-out runs at 1 MB/s.
write_job killed.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 1 -w n4 -t 5
#BB_ADAFS capacity=1G max_bw=1M
#BB_ADAFS stage_out source=big.bin destination=$pfs/nf/out/%j.bin type=file
cat $pfs/nf/in.bin > \$ADAFS_MOUNT/big.bin
JOB
killed=$(submit killed.sh)

# 4. n3's agent killed while its job runs, between its write and its read.
write_job kept.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 1 -w n3 -t 5
#BB_ADAFS capacity=1G
#BB_ADAFS stage_out source=kept.bin destination=$pfs/nf/out/%j.kept type=file
head -c 3000000 $pfs/nf/in.bin > \$ADAFS_MOUNT/kept.bin
touch $pfs/nf/wrote.\$SLURM_JOB_ID
while [ ! -e $pfs/nf/go.\$SLURM_JOB_ID ]; do sleep 0.2; done
head -c 3000000 $pfs/nf/in.bin | cmp - \$ADAFS_MOUNT/kept.bin && touch $pfs/nf/same.\$SLURM_JOB_ID
echo more > \$ADAFS_MOUNT/more.txt && touch $pfs/nf/after.\$SLURM_JOB_ID
JOB
kept=$(submit kept.sh)

check "agent killed: the job's stage-out runs" -- wait_phase "$killed" staging_out 60
check "agent killed while a job runs: it wrote its data" -- wait_file "$pfs/nf/wrote.$kept"
sleep 1
kill -KILL "$(cat "$ADAFS_CLUSTER_DIR/run/agent.n4.pid")" "$(cat "$ADAFS_CLUSTER_DIR/run/agent.n3.pid")"
sleep 2
check "agent killed: started again" -- "$cluster" start-agents
check "n3: the new agent re-adopted the running job" -- \
    grep -q "recovery: job $kept: re-adopted" "$ADAFS_CLUSTER_DIR/log/agent.n3.log"
check "n4: the new agent names why it wiped the staging job" -- \
    grep -q "recovery: job $killed: not re-adopted (a stage ran when its agent stopped" \
    "$ADAFS_CLUSTER_DIR/log/agent.n4.log"
# Then a clean restart of n3's agent (systemctl restart, an upgrade: SIGTERM)
# leaves the job running too, and the next agent re-adopts it again.
check "n3: the agent restarted (SIGTERM) under the running job" -- "$cluster" restart-agent 3
check "n3: it stopped leaving its job running" -- \
    grep -q "stopping on Terminated: its jobs left running for the next agent" "$ADAFS_CLUSTER_DIR/log/agent.n3.log"
check "n3: the restarted agent re-adopted the job again" -- \
    bash -c "[ \$(grep -c 'recovery: job $kept: re-adopted' '$ADAFS_CLUSTER_DIR/log/agent.n3.log') -ge 2 ]"
as_user_sh "touch $pfs/nf/go.$kept"
check "re-adopted: the job reads its data back and writes on" -- wait_file "$pfs/nf/after.$kept"
check "re-adopted: its data is byte for byte" -- test -e "$pfs/nf/same.$kept"
check "re-adopted: the job completes" -- wait_job "$kept" COMPLETED 60
check "re-adopted: its stage-out copied the data out" -- \
    cmp <(head -c 3000000 "$pfs/nf/in.bin") "$pfs/nf/out/$kept.kept"
check "agent killed: the job completes at once" -- wait_job "$killed" COMPLETED 30
comment=$(scontrol show job "$killed" | sed -n 's/^ *SystemComment=//p')
check "its SystemComment names the line not copied out and why ($comment)" -- \
    bash -c "grep -q 'stage_out source=big.bin destination=$pfs/nf/out/$killed.bin not copied out: node n4: job $killed: not deployed here (wiped when this agent started at .*: its predecessor stopped without tearing it down)' <<<\"\$0\"" "$comment"
check "n4 is not drained: the Epilog waited for the new agent" -- \
    bash -c "for _ in \$(seq 60); do [ \"\$(sinfo -h -n n4 -o %t)\" = idle ] && exit 0; sleep 0.5; done; sinfo -h -n n4 -o '%t %E' | sed 's/^/# /'; exit 1"

check "full destination: kept, its reason names the line, node and ENOSPC" -- \
    wait_reason "$fills" "stage.out source=res destination=$pfs/nf/dest/$fills on node n2: .*No space left on device .kept: the job's data stays on its nodes" 60
read -r blocks bsize size < "$pfs/nf/image.$fills"
check "its image's blocks are reserved, not sparse ($blocks x $bsize for $size bytes)" -- \
    test $((blocks * bsize)) -ge "$size"
check "full destination: its data stays (its server runs)" -- grep -q "servers:" <<<"$(leftovers)"
mount -o remount,size=32M "$pfs/nf/dest"
check "room made: the next pass copies the results out and the job completes" -- \
    wait_job "$fills" COMPLETED 30
same=0
for i in 1 2 3; do
    cmp -s <(head -c 2000000 "$pfs/nf/in.bin" | tail -c +$((i * 1000))) "$pfs/nf/dest/$fills/f$i" || same=1
done
ok $same "the three results are byte for byte"

check "n1's disk full: held, the reason names the node, the image and ENOSPC" -- \
    wait_reason "$full" "node n1: job $full: storage of [0-9]+ bytes: cannot reserve $storage/n1/job.$full.img: No space left on device .held after 4 attempts; no node drained" 60
check "n1's disk full: held with priority 0" -- test "$(job_field "$full" Priority)" = 0
check "no node was drained" -- bash -c "! sinfo -h -o %t | grep -q drain"
scancel "$full"
check "nothing left on any node" -- wait_clean 60
tap_done
