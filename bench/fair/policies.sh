#!/bin/sh
# bench/fair/policies.sh BUILD [SECONDS] [REPEATS]   (as root: clients run
# as the test users adafs-test and adafs-test2, each in a Slurm-like cgroup
# /slurm_fairbench/uid_UID/job_ID, the way slurmstepd places a job's
# processes, so the server tells the jobs apart as it does under Slurm)
#
# Acceptance 1 of issue 25: one server, --test-service-time 200 (every
# request holds an emulated device 200 us), --fair-slots 2, the jobs' node
# counts from --fair-jobs (as the node agent writes it), every job 4
# processes of stats:
#  size-fair       job 101 (4 nodes) vs job 102 (1 node): ratio 4 +- 10%
#  job-fair        the same jobs: ratio 1 +- 10%
#  user-then-size  user A jobs 201 (4 nodes), 202 (1); user B jobs 203 (2),
#                  204 (2): each user 50% +- 5%
set -eu
usage="usage: policies.sh BUILD [SECONDS] [REPEATS]"
. "$(dirname "$0")/lib.sh"
fair_init "${1:?$usage}" fairpol
secs=${2:-4}
reps=${3:-3}
cg=/sys/fs/cgroup/freezer/slurm_fairbench
cleanup() {
    fair_cleanup
    find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
}
trap cleanup EXIT
test -d /sys/fs/cgroup/freezer || { echo "policies.sh: no cgroup v1 freezer hierarchy here" >&2; exit 1; }

printf '101 4\n102 1\n201 4\n202 1\n203 2\n204 2\n' >"$work/jobs"
chmod 644 "$work/jobs"
start() {  # start POLICY
    fair_start base 1 /adafs-fairpol --fair-policy "$1" --fair-slots 2 --test-service-time 200 \
        --fair-jobs "$work/jobs"
}
stop() { fair_stop base; }
job() {  # job USER JOB: stats of 4 processes in the job's cgroup; prints ops
    d=$cg/uid_$(id -u "$1")/job_$2
    mkdir -p "$d"
    sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$d" \
        runuser -u "$1" -- env ADAFS_INSTANCE="$work/base.$1" \
        "$b/bench/fair/.libs/fairload" stat / 4 "$secs" | awk '{print $2}'
}

r=0
while [ $r -lt "$reps" ]; do
    for pol in size-fair job-fair; do
        start $pol
        job $A 101 >"$work/a" & job $B 102 >"$work/b"; wait
        stop
        echo "$pol: job 101 (4 nodes) $(cat "$work/a") ops, job 102 (1 node) $(cat "$work/b") ops, ratio $(echo "$(cat "$work/a") $(cat "$work/b")" | awk '{printf "%.3f", $1 / $2}')"
    done
    start user-then-size
    job $A 201 >"$work/j1" & job $A 202 >"$work/j2" & job $B 203 >"$work/j3" & job $B 204 >"$work/j4"; wait
    stop
    set -- $(cat "$work/j1" "$work/j2" "$work/j3" "$work/j4")
    echo "$*" | awk '{a = $1 + $2; b = $3 + $4
        printf "user-then-size: user A %.1f%% (jobs 4:1 nodes, ratio %.2f), user B %.1f%% (jobs 2:2, ratio %.2f)\n",
            100 * a / (a + b), $1 / $2, 100 * b / (a + b), $3 / $4}'
    r=$((r + 1))
done
