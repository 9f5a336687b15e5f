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

# Two stage_in lines at 1 MiB/s: about 8 s, then 2 s. Each start appends
# its verdict (a job launched twice shows two lines); while $pfs/r/hold
# exists the job stays running after it.
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
echo "\$verdict" >> $out/\$SLURM_JOB_ID.start
for _ in \$(seq 600); do [ -e $pfs/r/hold ] || break; sleep 0.2; done
echo "\$verdict \$SLURM_JOB_ID" > \$ADAFS_MOUNT/verdict.txt
JOB

# A job that runs through every restart below; its result must come out.
write_job bystander.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 1 -t 30
#BB_ADAFS capacity=1G
#BB_ADAFS stage_out source=result.txt destination=$out/bystander.%j type=file
echo "result of \$SLURM_JOB_ID" > \$ADAFS_MOUNT/result.txt
for _ in \$(seq 3000); do [ -e $pfs/r/stop ] && break; sleep 0.5; done
JOB

ctld_log_since() { tail -c +"$(($1 + 1))" "$log"; }
log_size() { stat -c %s "$log"; }
# Slurm saves its job table a few seconds after a change (longer under
# load); a kill -9 before that loses what happened since (Slurm's own state,
# not adafs's). mark_save takes a reference; saved_since waits until the job
# table was written after it.
mark_save() { touch "$ADAFS_CLUSTER_DIR/save.ref"; }
saved_since() {
    for _ in $(seq 600); do
        [ "$ADAFS_CLUSTER_DIR/state/job_state" -nt "$ADAFS_CLUSTER_DIR/save.ref" ] && return 0
        sleep 0.1
    done
    diag "slurmctld did not save its job table within 60 s"; return 1
}
# save_now: makes slurmctld save its job table now (an update schedules a
# save) and waits until it did. The job updated is a held one that never
# runs: the bystander may have ended (its wait is bounded) by the time a
# slow run gets here, and a finished job cannot be updated.
save_now() {
    mark_save
    scontrol update JobId="$anchor" Comment="save $SECONDS" ||
        { diag "cannot update job $anchor to make slurmctld save"; return 1; }
    saved_since
}
start_ctld() { "$cluster" start-ctld && for _ in $(seq 60); do scontrol ping >/dev/null 2>&1 && return 0; sleep 0.5; done; return 1; }

# saved_after_release ID: slurmctld wrote its job table after it released
# the job (the plugin asks for that save, as Slurm's scheduler does when it
# starts a job).
saved_after_release() {
    local at
    at=$(grep -a "JobId=$1 staged in, releasing it" "$log" | tail -1 | sed -n 's/^\[\([^]]*\)\].*/\1/p')
    [ -n "$at" ] && touch -d "${at/T/ }" "$ADAFS_CLUSTER_DIR/release.ref" || return 1
    for _ in $(seq 300); do
        [ "$ADAFS_CLUSTER_DIR/state/job_state" -nt "$ADAFS_CLUSTER_DIR/release.ref" ] && return 0
        sleep 0.1
    done
    diag "slurmctld did not save its job table within 30 s of releasing job $1 (at $at)"; return 1
}

# The job ran once with all of its input, completed, and staged its verdict out.
ran_whole() {  # ran_whole ID WHAT
    local id=$1 what=$2
    check "$what: the job completes" -- wait_job "$id" COMPLETED 180
    check "$what: it started with all its input ($(cat "$out/$id.start" 2>/dev/null))" -- \
        test "$(cat "$out/$id.start" 2>/dev/null)" = whole
    check "$what: its verdict is staged out" -- \
        bash -c "for _ in \$(seq 120); do grep -qx 'whole $id' $out/$id.txt 2>/dev/null && exit 0; sleep 0.5; done; exit 1"
}

write_job anchor.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 1 -t 1
true
JOB
anchor=$(submit -H anchor.sh)
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
# first, and slurmctld made to save its job table, so that the job itself
# is saved before it is killed (a submission not yet saved is lost with it,
# burst buffer or not; a fixed sleep was not always enough under load).
id=$(submit -H staging.sh)
save_now
scontrol release "$id"
for _ in $(seq 400); do
    case $(squeue -h -j "$id" -o %t 2>/dev/null) in CF) break ;; esac
    sleep 0.05
done
phase=$(bb_phase "$id")
"$cluster" kill-ctld
sleep 2
check "kill -9 at phase ${phase:-?}: slurmctld starts again" -- start_ctld
# If slurmctld had not saved the release, it lost it (its own state, not
# adafs's): release again.
[ "$(job_field "$id" Reason)" = JobHeldUser ] && scontrol release "$id"
ran_whole "$id" "kill -9 at phase ${phase:-?}"

# 3. kill -9 with the first line in flight, down for a few seconds.
id=$(submit staging.sh)
check "kill -9 in flight: reaches staging_in" -- wait_phase "$id" staging_in 60
save_now
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

# 6. kill -9 after the release, the job running: Slurm saved the launch,
# so the job runs on, launched once (unsaved, a restart brought it back
# pending, aborted its script and ran it again, or configuring, launched it
# again: slurmd refused the "Duplicate jobid" and Slurm drained the node).
# The kill comes once the script runs and the save is seen: a kill in the
# moments between a launch and Slurm's save of it loses the launch with or
# without adafs (doc/lifecycle.md, Restarts).
as_user_sh "touch $pfs/r/hold"
mark=$(log_size)
id=$(submit staging.sh)
check "kill -9 after the release: the job's script runs" -- wait_file "$out/$id.start"
check "kill -9 after the release: slurmctld saved the release" -- saved_after_release "$id"
"$cluster" kill-ctld
sleep 1
check "kill -9 after the release: slurmctld starts again" -- start_ctld
check "kill -9 after the release: the job runs on, not launched again" -- \
    bash -c "[ \"\$(squeue -h -j $id -o %t)\" = R ] &&
             ! tail -c +$((mark + 1)) $log | grep -q 'Duplicate jobid\|Registered PENDING JobId=$id'"
as_user_sh "rm -f $pfs/r/hold"
ran_whole "$id" "kill -9 after the release"

# 7. Names and paths with any bytes Slurm accepts, saved and read back
# through a restart, while another job stages in.
write_job named.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 1 -t 10
#BB_ADAFS capacity=1G
#BB_ADAFS stage_out source=r.txt destination=$out/name-%x type=file
#BB_ADAFS stage_out source=r.txt destination=$out/pct-%j-100%% type=file
#BB_ADAFS stage_out source=r.txt destination=$out/user-%u-%j type=file
echo "ran \$SLURM_JOB_ID" > \$ADAFS_MOUNT/r.txt
for _ in \$(seq 600); do [ -e $pfs/r/stop2 ] && break; sleep 0.5; done
JOB
mark=$(log_size)
n1=$(submit --job-name='x%q' named.sh)
n2=$(submit --job-name=$'two\nlines' named.sh)
check "jobs named x%q and two<newline>lines run" -- \
    bash -c "for _ in \$(seq 240); do [ \"\$(squeue -h -j $n1,$n2 -o %t | sort -u)\" = R ] && exit 0; sleep 0.5; done; exit 1"
id=$(submit staging.sh)
check "names: a job reaches staging_in beside them" -- wait_phase "$id" staging_in 60
check "names: slurmctld restarted" -- "$cluster" restart-ctld
check "names: every saved instance was read back" -- \
    bash -c "! tail -c +$((mark + 1)) $log | grep -q 'unreadable\\|moved it to\\|does not parse'"
ran_whole "$id" "names"
as_user_sh "touch $pfs/r/stop2"
for n in "$n1" "$n2"; do
    check "names: job $n completes" -- wait_job "$n" COMPLETED 120
done
landed() { for _ in $(seq 120); do grep -qx "$2" "$1" 2>/dev/null && return 0; sleep 0.5; done; return 1; }
check "names: %x of x%q lands at name-x%q" -- landed "$out/name-x%q" "ran $n1"
check "names: %x of a name with a newline lands at the name with its newline" -- \
    landed "$out/name-two"$'\n'"lines" "ran $n2"
check "names: %% lands as one %" -- landed "$out/pct-$n1-100%" "ran $n1"
check "names: %u lands as the user's name" -- landed "$out/user-$test_user-$n2" "ran $n2"

# 8. A damaged record costs its job only: a running job's is rebuilt from
# Slurm's record (its results still come out); a staging job is held
# saying why; a third job is untouched.
rm -f "$pfs/r/stop"
r1=$(submit bystander.sh)
r2=$(submit bystander.sh)
check "damage: two jobs run" -- \
    bash -c "for _ in \$(seq 240); do [ \"\$(squeue -h -j $r1,$r2 -o %t | sort -u)\" = R ] &&
                   grep -q 'JobId=$r1 staged in, releasing' $log && grep -q 'JobId=$r2 staged in, releasing' $log && exit 0
               sleep 0.5; done; exit 1"
s1=$(submit staging.sh)
check "damage: a third stages in" -- wait_phase "$s1" staging_in 60
save_now   # with r1 and r2 running (released), s1 configuring
"$cluster" kill-ctld
damage() {  # damage JOBID: flips a byte inside the job's last saved record
    # The file is a journal (slurm-plugin/bb_store.h): a later record of a
    # job replaces an earlier one, so the last one is damaged; its frame is
    # 28 bytes.
    python3 - "$ADAFS_CLUSTER_DIR/state/adafs_state" "$1" <<'PY'
import struct, sys
path, job = sys.argv[1], int(sys.argv[2])
data = bytearray(open(path, 'rb').read())
at = data.rfind(b'ABJR' + struct.pack('<I', job))
assert at >= 0, 'no record of job %d' % job
data[at + 28 + 30] ^= 0x5a
open(path, 'wb').write(data)
PY
}
check "damage: records of jobs $r1 and $s1 damaged" -- bash -c "$(declare -f damage); damage $r1 && damage $s1"
mark=$(log_size)
check "damage: slurmctld starts again" -- start_ctld
check "damage: the staging job is held, saying its saved state was unreadable" -- \
    wait_reason "$s1" "saved state of this job could not be read" 90
check "damage: held with priority 0" -- test "$(job_field "$s1" Priority)" = 0
check "damage: the log names only the damaged jobs" -- \
    bash -c "tail -c +$((mark + 1)) $log | grep 'saved record' | grep -q 'JobId=$r1' &&
             ! tail -c +$((mark + 1)) $log | grep 'saved record' | grep -q 'JobId=$r2'"
as_user_sh "touch $pfs/r/stop"
for r in "$r1" "$r2"; do
    check "damage: job $r completes" -- wait_job "$r" COMPLETED 120
    check "damage: job $r's result is staged out" -- landed "$out/bystander.$r" "result of $r"
done
scancel "$s1"

# The bystander lived through all of it and its result comes out.
as_user_sh "touch $pfs/r/stop"
check "the bystander completes" -- wait_job "$by" COMPLETED 120
check "the bystander's result is staged out" -- landed "$out/bystander.$by" "result of $by"
# On failure the reason Slurm recorded and the plugin's log lines about it
# go to the test's log (a drain here was seen once and could not be traced).
check "no node was drained" -- bash -c "! sinfo -h -o %t | grep -q drain ||
    { sinfo -R -h -o '%N: %E' | sed 's/^/# drained /'; grep -i drain $log | tail -5 | sed 's/^/# /'; exit 1; }"
check "no job was requeued ($(grep -c 'requeued' "$log") requeues logged)" -- \
    bash -c "! grep -q 'adafs.*requeued\|already deployed' $log"
scancel "$anchor"
check "nothing left on the nodes" -- wait_clean 60
tap_done
