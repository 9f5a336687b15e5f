#!/bin/bash
# The walltime model fed to the scheduler: slurmctld's plugin loads a model
# trained on a history, records both estimates and the calibration group
# on every submitted job (admin comment and bbstat), and, when the admin
# enables it, sets TimeMin below the job's limit without touching the limit.
# The model follows each job's life across slurmctld restarts: a job in
# flight at a restart is learned from when it finishes after it.
. "${abs_top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
require_cluster
wt=$ADAFS_BUILD_DIR/walltime-model/adafs-walltime

start_cluster
model=$ADAFS_CLUSTER_DIR/state/walltime.model
# A history of the last 20 days: the test user ran 150 jobs asking for 2 h
# on one processor that took about a minute, 3 hours apart; four other
# users ran jobs of 1-8 h that took 10-90% of their request.
history=$ADAFS_CLUSTER_DIR/state/history.swf
awk -v now="$(date +%s)" -v me="$(id -u adafs-test)" 'BEGIN {
        srand(5); base = now - 20 * 86400; print "; UnixStartTime: " base
        for (i = 0; i < 150; i++)
            printf "%d %d 30 %d 1 -1 -1 1 7200 -1 1 %d 1 -1 -1 -1 -1 -1\n",
                   i + 1, i * 10800, 55 + int(10 * rand()), me
        for (i = 0; i < 600; i++) {
            u = 2001 + i % 4; req = 3600 * (1 + i % 8)
            printf "%d %d 60 %d 8 -1 -1 8 %d -1 1 %d 1 -1 -1 -1 -1 -1\n", 1000 + i,
                   i * 2700 + 77, int(req * (0.1 + 0.8 * rand())), req, u }
    }' > "$history"
check "a model trains on the history" -- "$wt" train --swf "$history" --model "$model"
chown "$(stat -c %U "$ADAFS_CLUSTER_DIR/state")" "$model"
set_bb_conf AdafsWalltimeModel "$model"
set_bb_conf AdafsWalltimeSetTimeMin yes
set_bb_conf AdafsWalltimeLearnInterval 2   # not 30 s: the waits below are two passes
check "slurmctld restarts with the model" -- "$cluster" restart-ctld
sleep 1
check "no error loading it" -- bash -c "! grep -q 'walltime predictions are OFF' $ADAFS_CLUSTER_DIR/log/slurmctld.log"

estimates() {  # estimates ID: "median conservative group" from the admin comment
    scontrol show job "$1" | sed -n 's/^ *AdminComment=adafs-walltime: median=\([0-9]*\)s conservative=\([0-9]*\)s group=\([a-z+]*\) *$/\1 \2 \3/p'
}
id=$(submit -N 1 -t 120 --wrap "sleep 1" -o /dev/null)
ok $? "a job without a burst buffer is accepted ($id)"
read -r median conservative group <<<"$(estimates "$id")"
check "its admin comment holds both estimates ($median s, $conservative s) and the group ($group)" -- \
    test -n "$median" -a -n "$conservative" -a -n "$group"
check "estimates never exceed the 7200 s request" -- \
    test "${median:-99999}" -le 7200 -a "${conservative:-99999}" -le 7200
check "from the user's runs of this request and size: far below it, group user+request" -- \
    test "${conservative:-99999}" -lt 1800 -a "$group" = user+request
check "bbstat shows the estimates and the calibration group" -- \
    bash -c "scontrol show bbstat $id | grep -q 'Walltime: Median=${median}s Conservative=${conservative}s Group=$group MissProbability=0\.[0-9]*'"
# TimeMin is the conservative estimate plus the 10% margin, in minutes, and
# only when that is below the limit (120 min).
want=$(( (${conservative:-0} * 110 / 100 + 59) / 60 ))
[ "$want" -lt 1 ] && want=1
expect=$(printf '%02d:%02d:00' $((want / 60)) $((want % 60)))
tmin=$(job_field "$id" TimeMin)
check "TimeMin follows the conservative estimate and margin ($tmin, want $expect)" -- \
    test "$tmin" = "$expect"
check "TimeLimit is untouched" -- test "$(job_field "$id" TimeLimit)" = "02:00:00"
check "the job completes" -- wait_job "$id" COMPLETED 60
sleep 5                        # two passes of the plugin teaching the model
check "the model file is saved by the plugin at shutdown" -- \
    bash -c "before=\$(stat -c %Y $model); sleep 1; '$cluster' restart-ctld && [ \$(stat -c %Y $model) -gt \$before ]"

# Across a restart: a job submitted before it is in the saved file with its
# estimate, and once it finished after the restart it is learned from.
observed() { sed -n 's/^state \([0-9]*\) .*/\1/p' "$model"; }
# The job runs until the test lets it end (not a fixed sleep 20).
as_user_sh "mkdir -p $pfs/wt && rm -f $pfs/wt/go"
id=$(submit -N 1 -t 120 --wrap "for _ in \$(seq 600); do [ -e $pfs/wt/go ] && break; sleep 0.2; done" -o /dev/null)
sleep 2
check "slurmctld restarts with a job in flight ($id)" -- "$cluster" restart-ctld
check "the saved model holds it in flight with the estimate it was given" -- \
    grep -q "^p $id " "$model"
as_user_sh "touch $pfs/wt/go"
before=$(observed)
check "the job completes after the restart" -- wait_job "$id" COMPLETED 90
sleep 5
check "slurmctld restarts again" -- "$cluster" restart-ctld
check "the model learned from it once: $before -> $(observed) jobs, no longer in flight" -- \
    bash -c "[ \$(sed -n 's/^state \([0-9]*\) .*/\1/p' $model) -eq $((before + 1)) ] && ! grep -q '^p $id ' $model"
tap_done
