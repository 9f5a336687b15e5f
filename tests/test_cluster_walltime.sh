#!/bin/bash
# The walltime model fed to the scheduler: slurmctld's plugin loads a model
# trained on a real trace, records both estimates on every submitted job
# (admin comment and bbstat), and, when the admin enables it, sets TimeMin
# below the job's limit without touching the limit.
. "${abs_top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
require_cluster
trace=$abs_top_srcdir/../shared/traces/KTH-SP2-1996-2.1-cln.swf
[ -r "$trace" ] || skip_all "trace $trace not found"
wt=$ADAFS_BUILD_DIR/walltime-model/adafs-walltime

start_cluster
model=$ADAFS_CLUSTER_DIR/state/walltime.model
check "a model trains on the KTH trace" -- "$wt" train --swf "$trace" --model "$model"
chown "$(stat -c %U "$ADAFS_CLUSTER_DIR/state")" "$model"
set_bb_conf AdafsWalltimeModel "$model"
set_bb_conf AdafsWalltimeSetTimeMin yes
check "slurmctld restarts with the model" -- "$cluster" restart-ctld
sleep 1
check "no error loading it" -- bash -c "! grep -q 'walltime predictions are OFF' $ADAFS_CLUSTER_DIR/log/slurmctld.log"

estimates() {  # estimates ID: "median conservative" from the admin comment
    scontrol show job "$1" | sed -n 's/^ *AdminComment=adafs-walltime: median=\([0-9]*\)s conservative=\([0-9]*\)s *$/\1 \2/p'
}
id=$(submit -N 1 -t 120 --wrap "sleep 1" -o /dev/null)
ok $? "a job without a burst buffer is accepted ($id)"
read -r median conservative <<<"$(estimates "$id")"
check "its admin comment holds both estimates ($median s, $conservative s)" -- \
    test -n "$median" -a -n "$conservative"
check "estimates never exceed the 7200 s request" -- \
    test "${median:-99999}" -le 7200 -a "${conservative:-99999}" -le 7200
check "bbstat shows the estimates" -- \
    bash -c "scontrol show bbstat $id | grep -q 'Walltime: Median=${median}s Conservative=${conservative}s'"
check "TimeLimit is untouched" -- test "$(job_field "$id" TimeLimit)" = "02:00:00"
check "the job completes" -- wait_job "$id" COMPLETED 60

# The model learns from the user's finished jobs (the plugin looks every 30 s).
ids=()
for k in 1 2 3; do ids+=("$(submit -N 1 -t 120 --wrap "sleep 1" -o /dev/null)"); done
for j in "${ids[@]}"; do wait_job "$j" COMPLETED 60; done
sleep 35
id=$(submit -N 1 -t 120 --wrap "sleep 1" -o /dev/null)
read -r median2 conservative2 <<<"$(estimates "$id")"
check "after short runs the conservative estimate drops ($conservative -> $conservative2 s)" -- \
    test "${conservative2:-99999}" -lt "${conservative:-0}"
# TimeMin is the conservative estimate plus the 10% margin, in minutes, and
# only when that is below the limit (120 min).
want=$(( (${conservative2:-0} * 110 / 100 + 59) / 60 ))
[ "$want" -lt 1 ] && want=1
if [ "$want" -lt 120 ]; then
    expect=$(printf '%02d:%02d:00' $((want / 60)) $((want % 60)))
else
    expect=N/A
fi
tmin=$(job_field "$id" TimeMin)
check "TimeMin follows the conservative estimate and margin ($tmin, want $expect)" -- \
    test "$tmin" = "$expect"
check "TimeLimit is still untouched" -- test "$(job_field "$id" TimeLimit)" = "02:00:00"
check "the model file is saved by the plugin at shutdown" -- \
    bash -c "before=\$(stat -c %Y $model); sleep 1; '$cluster' restart-ctld && [ \$(stat -c %Y $model) -gt \$before ]"
tap_done
