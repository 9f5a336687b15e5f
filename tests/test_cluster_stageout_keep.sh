#!/bin/bash
# A failed stage-out keeps the job's data (slurm-plugin/stageout_keep.h):
# a job whose stage_out destination is unwritable stays in StageOut with its
# reason and its data on its node; once the user fixes the destination the
# next pass copies it out and the job completes. Past AdafsStageOutKeep, or
# at scancel --hurry, it is torn down and its SystemComment says what was
# lost; scancel --hurry of a stage-out under way stops it the same way.
# Passes every 2 s here (AdafsStageOutRetry), to keep the test short.
. "${abs_top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
require_cluster

start_cluster
set_bb_conf AdafsStageOutRetry 2
as_user_sh "rm -rf $pfs/keep && mkdir -p $pfs/keep/locked && chmod 500 $pfs/keep/locked"
write_job keep.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 1 -t 5
#BB_ADAFS capacity=1G
#BB_ADAFS stage_out source=result.txt destination=$pfs/keep/locked/%j.txt type=file
echo "computed by \$SLURM_JOB_ID" > \$ADAFS_MOUNT/result.txt
JOB

system_comment() { scontrol show job "$1" 2>/dev/null | sed -n 's/^ *SystemComment=//p'; }
# wait_comment ID PATTERN [SECONDS]: until the job's SystemComment matches.
wait_comment() {
    local text=""
    for _ in $(seq $(( ${3:-60} * 2 ))); do
        text=$(system_comment "$1")
        grep -qE -- "$2" <<<"$text" && return 0
        sleep 0.5
    done
    diag "job $1 SystemComment: $text"
    return 1
}
kept_reason() {  # kept_reason ID: the reason of a kept job, as scontrol shows it
    echo "stage.out source=result.txt destination=$pfs/keep/locked/$1.txt on node n[0-9]+: .*Permission denied .kept: the job's data stays on its nodes"
}

# 1. Kept, then fixed by the user: the data gets out, the job completes.
id=$(submit keep.sh)
check "unwritable destination: the job is kept, its reason names the line, node, path and error" -- \
    wait_reason "$id" "$(kept_reason "$id")" 120
state=$(job_state "$id")
check "it stays in stage-out ($state), not COMPLETED" -- \
    bash -c "[ \"\$0\" = STAGE_OUT ] || [ \"\$0\" = COMPLETING ]" "$state"
check "bbstat: staging_out, StageOutKept=yes and the error" -- \
    bash -c "scontrol show bbstat $id | grep -q 'Phase=staging_out' &&
             scontrol show bbstat $id | grep -q 'StageOutKept=yes' &&
             scontrol show bbstat $id | grep -q 'Error=stage_out source=result.txt'"
node=$(scontrol show job "$id" | sed -n 's/^ *NodeList=//p' | head -1)
left=$(leftovers)
check "its data stays on its node $node (its server runs:$left)" -- \
    bash -c "grep -q 'servers:' <<<\"\$0\" && grep -q 'data:.*/$node/job.$id' <<<\"\$0\"" "$left"
check "the node stays with the job (completing, nothing else lands there)" -- \
    bash -c "sinfo -h -n $node -o %t | grep -q comp"
sleep 3
left=$(leftovers)
check "a pass later: still kept, the data still there" -- \
    bash -c "[ \"\$1\" = staging_out ] && grep -q 'servers:' <<<\"\$0\"" "$left" "$(bb_phase "$id")"
check "slurmctld restarted while kept" -- "$cluster" restart-ctld
check "after the restart: still kept with its reason" -- wait_reason "$id" "$(kept_reason "$id")" 60
left=$(leftovers)
check "after the restart: its server still runs" -- grep -q 'servers:' <<<"$left"
as_user_sh "chmod 700 $pfs/keep/locked"
check "destination made writable: the next pass copies the result out" -- \
    bash -c "for _ in \$(seq 60); do grep -qx 'computed by $id' $pfs/keep/locked/$id.txt 2>/dev/null && exit 0; sleep 0.5; done; exit 1"
check "the job completes" -- wait_job "$id" COMPLETED 60
comment=$(system_comment "$id")
check "no failure left in its SystemComment ($comment)" -- test -z "$comment"
check "kept then fixed: nothing left" -- wait_clean 60

# 2. Never fixed: torn down after AdafsStageOutKeep, saying what was lost.
as_user_sh "chmod 500 $pfs/keep/locked"
set_bb_conf AdafsStageOutKeep 6
sleep 1
id=$(submit keep.sh)
check "keep 6 s: kept first" -- wait_reason "$id" "$(kept_reason "$id")" 120
check "after AdafsStageOutKeep: torn down, its SystemComment says what was lost" -- \
    wait_comment "$id" "did not succeed within AdafsStageOutKeep=6 s .*not copied out: stage_out source=result.txt destination=$pfs/keep/locked/$id.txt; last error: .*Permission denied" 60
check "given up: the job completes" -- wait_job "$id" COMPLETED 60
check "given up: nothing left" -- wait_clean 60

# 3. scancel --hurry of a kept job (by its user): torn down at once.
set_bb_conf AdafsStageOutKeep 600
sleep 1
id=$(submit keep.sh)
check "hurry: kept first" -- wait_reason "$id" "$(kept_reason "$id")" 120
as_user scancel --hurry "$id"
check "scancel --hurry: torn down, its SystemComment says what was lost" -- \
    wait_comment "$id" "scancel --hurry while a failed stage_out was kept: .*not copied out: stage_out source=result.txt" 30
check "hurry: nothing left" -- wait_clean 60

# 4. scancel --hurry while a stage-out runs (nothing failed): Slurm's
# convention is that --hurry skips stage-out. 32 MiB at max_bw=1M: 30 s.
as_user_sh "mkdir -p $pfs/keep/slow"
write_job slow.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 1 -t 5
#BB_ADAFS capacity=1G max_bw=1M
#BB_ADAFS stage_out source=big.bin destination=$pfs/keep/slow/%j.bin type=file
head -c 33554432 /dev/urandom > \$ADAFS_MOUNT/big.bin
JOB
id=$(submit slow.sh)
check "a stage-out under way" -- wait_phase "$id" staging_out 120
sleep 2
as_user scancel --hurry "$id"
check "scancel --hurry stops it, its SystemComment says what was not copied out" -- \
    wait_comment "$id" "scancel --hurry stopped the stage_out under way: .*not copied out: stage_out source=big.bin destination=$pfs/keep/slow/$id.bin" 15
size=$(stat -c %s "$pfs/keep/slow/$id.bin" 2>/dev/null || echo none)
check "the copy stopped short of 32 MiB ($size)" -- test "$size" != 33554432
check "hurry under way: the job completes" -- wait_job "$id" COMPLETED 60
check "hurry under way: nothing left" -- wait_clean 60
tap_done
