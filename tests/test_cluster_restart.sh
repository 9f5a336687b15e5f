#!/bin/bash
# slurmctld restarted, cleanly or by kill -9, at each phase of a job's
# stage-in: the job never starts before every stage_in line is in, and
# another job's stage-out is not lost. Each job checks its own input the
# moment it starts and writes the verdict beside its results.
. "${abs_top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
require_cluster

start_cluster
log=$ADAFS_CLUSTER_DIR/log/slurmctld.log
out=$pfs/r/out
as_user_sh "mkdir -p $out && head -c 8388608 /dev/urandom > $pfs/r/in.bin &&
            head -c 2097152 /dev/urandom > $pfs/r/in2.bin"

# Two stage_in lines at 1 MiB/s: about 8 s, then 2 s.
write_job staging.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 1 -t 10
#BB_ADAFS capacity=1G max_bw=1M
#BB_ADAFS stage_in source=$pfs/r/in.bin destination=in.bin type=file
#BB_ADAFS stage_in source=$pfs/r/in2.bin destination=in2.bin type=file
#BB_ADAFS stage_out source=verdict.txt destination=$out/%j.txt type=file
if cmp -s $pfs/r/in.bin \$ADAFS_MOUNT/in.bin && cmp -s $pfs/r/in2.bin \$ADAFS_MOUNT/in2.bin; then
    verdict=whole
else
    verdict="partial: \$(stat -c %s \$ADAFS_MOUNT/in.bin \$ADAFS_MOUNT/in2.bin 2>&1 | tr '\n' ' ')"
fi
echo "\$verdict" > $out/\$SLURM_JOB_ID.start
echo "\$verdict \$SLURM_JOB_ID" > \$ADAFS_MOUNT/verdict.txt
JOB

# A job that runs through every restart below; its result must come out.
write_job bystander.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 1 -t 10
#BB_ADAFS capacity=1G
#BB_ADAFS stage_out source=result.txt destination=$out/bystander.%j type=file
echo "result of \$SLURM_JOB_ID" > \$ADAFS_MOUNT/result.txt
for _ in \$(seq 600); do [ -e $pfs/r/stop ] && break; sleep 0.5; done
JOB

ctld_log_since() { tail -c +"$(($1 + 1))" "$log"; }
log_size() { stat -c %s "$log"; }
start_ctld() { "$cluster" start-ctld && for _ in $(seq 60); do scontrol ping >/dev/null 2>&1 && return 0; sleep 0.5; done; return 1; }

# The job ran with all of its input, completed, and staged its verdict out.
ran_whole() {  # ran_whole ID WHAT
    local id=$1 what=$2
    check "$what: the job completes" -- wait_job "$id" COMPLETED 180
    check "$what: it started with all its input ($(cat "$out/$id.start" 2>/dev/null))" -- \
        test "$(cat "$out/$id.start" 2>/dev/null)" = whole
    check "$what: its verdict is staged out" -- \
        bash -c "for _ in \$(seq 120); do grep -qx 'whole $id' $out/$id.txt 2>/dev/null && exit 0; sleep 0.5; done; exit 1"
}

by=$(submit bystander.sh)
check "a bystander job runs" -- wait_job "$by" RUNNING 60

# 1. The issue's case: restarted 8 s after submit, in the first line.
mark=$(log_size)
id=$(submit staging.sh)
sleep 8
check "restart in stage-in: slurmctld restarted" -- "$cluster" restart-ctld
ran_whole "$id" "restart in stage-in"
check "restart in stage-in: held again, not let go early" -- \
    bash -c "ctld_log() { tail -c +$((mark + 1)) $log; }; ctld_log | grep -q 'JobId=$id: still staging_in after a slurmctld restart: held' &&
             ! ctld_log | grep -q 'begins while its previous instance'"

# 2. kill -9 while it deploys (the first moment it is CONFIGURING). Held
# first, so that slurmctld has saved the job itself before it is killed
# (a submission not yet saved is lost with it, burst buffer or not).
id=$(submit -H staging.sh)
sleep 3
scontrol release "$id"
for _ in $(seq 400); do
    case $(squeue -h -j "$id" -o %t 2>/dev/null) in CF) break ;; esac
    sleep 0.05
done
phase=$(bb_phase "$id")
"$cluster" kill-ctld
sleep 2
check "kill -9 at phase ${phase:-?}: slurmctld starts again" -- start_ctld
ran_whole "$id" "kill -9 at phase ${phase:-?}"

# 3. kill -9 with the first line in flight, down for a few seconds.
id=$(submit staging.sh)
check "kill -9 in flight: reaches staging_in" -- wait_phase "$id" staging_in 60
sleep 3
"$cluster" kill-ctld
sleep 4
check "kill -9 in flight: slurmctld starts again" -- start_ctld
ran_whole "$id" "kill -9 in flight"

# 4. kill -9 as the second line starts (the agents log each stager).
id=$(submit staging.sh)
for _ in $(seq 600); do
    grep -q "job $id: stage-in worker .*in2.bin" "$ADAFS_CLUSTER_DIR"/log/agent.n*.log 2>/dev/null && break
    sleep 0.05
done
"$cluster" kill-ctld
sleep 1
check "kill -9 between lines: slurmctld starts again" -- start_ctld
ran_whole "$id" "kill -9 between lines"

# 5. Three restarts during one stage-in.
id=$(submit staging.sh)
check "three restarts: reaches staging_in" -- wait_phase "$id" staging_in 60
for i in 1 2 3; do
    sleep 2
    "$cluster" restart-ctld
done
ran_whole "$id" "three restarts"

# 6. kill -9 right after the release: the job runs once, with its input.
id=$(submit staging.sh)
for _ in $(seq 600); do
    grep -q "JobId=$id staged in, releasing it" "$log" && break
    sleep 0.05
done
"$cluster" kill-ctld
sleep 1
check "kill -9 at the release: slurmctld starts again" -- start_ctld
ran_whole "$id" "kill -9 at the release"

# The bystander lived through all of it and its result comes out.
as_user_sh "touch $pfs/r/stop"
check "the bystander completes" -- wait_job "$by" COMPLETED 120
check "the bystander's result is staged out" -- \
    bash -c "for _ in \$(seq 120); do grep -qx 'result of $by' $out/bystander.$by 2>/dev/null && exit 0; sleep 0.5; done; exit 1"
check "no node was drained" -- bash -c "! sinfo -h -o %t | grep -q drain"
check "no job was requeued ($(grep -c 'requeued' "$log") requeues logged)" -- \
    bash -c "! grep -q 'adafs.*requeued\|already deployed' $log"
check "nothing left on the nodes" -- wait_clean 60
tap_done
