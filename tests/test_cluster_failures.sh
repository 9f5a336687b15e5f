#!/bin/bash
# Failures on the mini-cluster: each ends in the expected job state and
# reason, and leaves no server, stager or data on any node.
. "${abs_top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
require_cluster

start_cluster
as_user_sh "mkdir -p $pfs/f/out && head -c 30000000 /dev/urandom > $pfs/f/big.bin && echo small > $pfs/f/small.txt"

# 1. A stage-in source that does not exist: the user's mistake, job held.
write_job missing.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 2 -t 5
#BB_ADAFS capacity=1G
#BB_ADAFS stage_in source=$pfs/f/no-such-dir destination=in type=directory
echo should not run
JOB
id=$(submit missing.sh)
check "missing source: job is held with the path and the errno in its reason" -- \
    wait_reason "$id" "stage.in source=$pfs/f/no-such-dir .*No such file or directory" 60
# (Its nodes are given back first: COMPLETING for a moment.)
check "missing source: the job stays pending (held), not failed" -- wait_job "$id" PENDING 30
check "missing source: held with priority 0" -- test "$(job_field "$id" Priority)" = 0
check "missing source: no node was drained for it" -- bash -c "! sinfo -h -o %t | grep -q drain"
check "missing source: nothing left on the nodes" -- wait_clean 30
scancel "$id"

# 2. A source the user may not read: refused, never copied.
mkdir -p "$pfs/f/secret" && echo "root only" > "$pfs/f/secret/shadow" && chmod 700 "$pfs/f/secret"
chmod 600 "$pfs/f/secret/shadow"
write_job secret.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 1 -t 5
#BB_ADAFS capacity=1G
#BB_ADAFS stage_in source=$pfs/f/secret/shadow destination=stolen type=file
cat \$ADAFS_MOUNT/stolen
JOB
id=$(submit secret.sh)
check "unreadable source: held with Permission denied" -- \
    wait_reason "$id" "stage.in source=$pfs/f/secret/shadow .*Permission denied" 60
check "unreadable source: bbstat shows no file copied in" -- \
    bash -c "scontrol show bbstat $id | grep -q 'StageIn: Files=0 '"
check "unreadable source: nothing left" -- wait_clean 30
scancel "$id"

# 3. A server killed during the job: the application gets EIO, not a hang.
as_user_sh "rm -rf $pfs/kill && mkdir -p $pfs/kill"
write_job kill.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 2 -t 5 -o kill-%j.out
#BB_ADAFS capacity=1G
for i in \$(seq 1 64); do echo \$i > \$ADAFS_MOUNT/file\$i; done
touch $pfs/kill/started
while [ ! -e $pfs/kill/go ]; do sleep 0.2; done
start=\$(date +%s)
bad=0
for i in \$(seq 1 64); do cat \$ADAFS_MOUNT/file\$i >/dev/null 2>>$pfs/kill/errors || bad=\$((bad+1)); done
echo "failed=\$bad seconds=\$(( \$(date +%s) - start ))" > $pfs/kill/result
JOB
id=$(submit kill.sh)
check "kill test: the job is running on its file system" -- wait_file "$pfs/kill/started"
kill_server_check "kill test" "$id" kill 64 60

# Slow staging down so there is time to act during it.
set_bb_conf AdafsMaxBandwidth 3M
sleep 1

# A job may ask to stage more gently than the site allows, never harder.
out=$(printf '#!/bin/bash\n#SBATCH -N 1\n#BB_ADAFS capacity=1G max_bw=10M\nhostname\n' |
      (cd "$ADAFS_CLUSTER_DIR/jobs" && as_user sbatch 2>&1))
check "max_bw above AdafsMaxBandwidth is refused at sbatch, naming both" -- \
    bash -c "grep -qF 'max_bw=10485760 bytes/s is above this site' <<<\"\$0\" && grep -qF '3145728 bytes/s per node (AdafsMaxBandwidth)' <<<\"\$0\"" "$out"

# 4. scancel during stage-in.
write_job slowin.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 2 -t 5
#BB_ADAFS capacity=1G
#BB_ADAFS stage_in source=$pfs/f/big.bin destination=big.bin type=file
echo ran
JOB
id=$(submit slowin.sh)
check "cancel in stage-in: reaches staging_in" -- wait_phase "$id" staging_in 60
check "squeue shows it configuring, waiting for BurstBufferStageIn" -- \
    test "$(squeue -h -j "$id" -o '%t %r')" = "CF BurstBufferStageIn"
check "scontrol shows BurstBufferState=staging-in" -- \
    bash -c "scontrol show job $id | grep -q 'BurstBufferState=staging-in'"
scancel "$id"
check "cancel in stage-in: job cancelled" -- wait_job "$id" CANCELLED 60
check "cancel in stage-in: nothing left" -- wait_clean 60

# 4b. A stage-in longer than StageInTimeout: held, saying so.
set_bb_conf StageInTimeout 3
sleep 1
id=$(submit slowin.sh)
check "StageInTimeout: the job is held saying the stage-in took too long" -- \
    wait_reason "$id" "stage.in source=$pfs/f/big.bin did not finish within StageInTimeout=3 s" 90
check "StageInTimeout: nothing left" -- wait_clean 60
scancel "$id"
set_bb_conf StageInTimeout 300
sleep 1

# 5. scancel --hurry during stage-out.
write_job slowout.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 2 -t 5
#BB_ADAFS capacity=1G
#BB_ADAFS stage_in source=$pfs/f/small.txt destination=small.txt type=file
#BB_ADAFS stage_out source=big.bin destination=$pfs/f/out/%j.bin type=file
head -c 30000000 /dev/zero > \$ADAFS_MOUNT/big.bin
JOB
id=$(submit slowout.sh)
check "hurry in stage-out: reaches staging_out" -- wait_phase "$id" staging_out 120
scancel --hurry "$id"
check "hurry in stage-out: torn down without finishing the copy" -- wait_phase "$id" complete 60
check "hurry in stage-out: nothing left" -- wait_clean 60

# 6. slurmctld restarted while a job stages in: it resumes and the job runs.
write_job restartin.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 2 -t 5
#BB_ADAFS capacity=1G
#BB_ADAFS stage_in source=$pfs/f/big.bin destination=big.bin type=file
#BB_ADAFS stage_out source=big.bin destination=$pfs/f/out/%j.bin type=file
true
JOB
id=$(submit restartin.sh)
check "restart in stage-in: reaches staging_in" -- wait_phase "$id" staging_in 60
check "restart in stage-in: slurmctld restarted" -- "$cluster" restart-ctld
check "restart in stage-in: the job completes after the restart" -- wait_job "$id" COMPLETED 300
check "restart in stage-in: its stage-out is byte for byte" -- \
    bash -c "for _ in \$(seq 240); do cmp -s $pfs/f/big.bin $pfs/f/out/$id.bin && exit 0; sleep 0.5; done; exit 1"
check "restart in stage-in: nothing left" -- wait_clean 60
set_bb_conf AdafsMaxBandwidth ""

# 7. slurmctld restarted while a job runs: stage-out still happens.
write_job restartrun.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 2 -t 5
#BB_ADAFS capacity=1G
#BB_ADAFS stage_out source=result.txt destination=$pfs/f/out/%j.txt type=file
echo "computed by \$SLURM_JOB_ID" > \$ADAFS_MOUNT/result.txt
sleep 6
JOB
id=$(submit restartrun.sh)
check "restart while running: job runs" -- wait_job "$id" RUNNING 120
check "restart while running: slurmctld restarted" -- "$cluster" restart-ctld
check "restart while running: job completes" -- wait_job "$id" COMPLETED 120
check "restart while running: its result is staged out" -- \
    bash -c "for _ in \$(seq 120); do grep -qx 'computed by $id' $pfs/f/out/$id.txt 2>/dev/null && exit 0; sleep 0.5; done; exit 1"
check "restart while running: nothing left" -- wait_clean 60

# 8. A job failing on a second node is held, not requeued again: it cannot
# drain node after node. Storage for n1 and n2 that a user owns makes their
# agents refuse to start servers (a node fault each).
storage=$ADAFS_CLUSTER_DIR/storage
mkdir -p "$storage/n1" "$storage/n2"
chown "$test_user" "$storage/n1" "$storage/n2"
write_job twofail.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 1 -t 5 --exclude=n3,n4
#BB_ADAFS capacity=1G
true
JOB
id=$(submit twofail.sh)
check "first node fault: requeued, not held" -- \
    bash -c "for _ in \$(seq 120); do [ \"\$(scontrol show job $id | grep -o 'Restarts=1 .*')\" ] && exit 0; sleep 0.5; done; exit 1"
check "its priority is left alone ($(job_field "$id" Priority))" -- test "$(job_field "$id" Priority)" != 0
# Slurm lets a requeued job start again after the credential lifetime
# (AuthInfo cred_expire, 20 minutes by default): now, for the test.
wait_job "$id" PENDING 30
start_now "$id"
for _ in $(seq 240); do
    [ "$(job_field "$id" Priority)" = 0 ] && [ "$(job_field "$id" Restarts)" = 2 ] && break
    sleep 0.5
done
check "second node fault: held (Restarts=$(job_field "$id" Restarts), Priority=$(job_field "$id" Priority))" -- \
    test "$(job_state "$id") $(job_field "$id" Restarts) $(job_field "$id" Priority)" = "PENDING 2 0"
reason=$(job_field "$id" Reason)
check "its reason names the storage refused ($reason)" -- \
    bash -c "grep -q 'is_owned_by_uid' <<<\"\$0\"" "$reason"
states=$(sinfo -h -N -n n1,n2 -o '%N %t' | sort | tr '\n' ' ')
check "the two nodes it failed on are drained, no more ($states)" -- \
    bash -c "grep -q 'n1 drain' <<<\"\$0\" && grep -q 'n2 drain' <<<\"\$0\" &&
             ! sinfo -h -n n3,n4 -o %t | grep -q drain" "$states"
scancel "$id"
chown root "$storage/n1" "$storage/n2"
scontrol update nodename=n1,n2 state=resume
check "two node faults: nothing left" -- wait_clean 60
tap_done
