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
b=$(cd "${1:?$usage}" && pwd)
secs=${2:-4}
reps=${3:-3}
work=$(mktemp -d /tmp/fairpol.XXXXXX)
chmod 755 "$work"
cg=/sys/fs/cgroup/freezer/slurm_fairbench
A=adafs-test B=adafs-test2
export LD_LIBRARY_PATH=$b/agent/.libs
cleanup() {
    test -e "$work/base/servers" && "$b/agent/adafs-ctl" stop --base "$work/base" >/dev/null 2>&1
    find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
test -d /sys/fs/cgroup/freezer || { echo "policies.sh: no cgroup v1 freezer hierarchy here" >&2; exit 1; }

printf '101 4\n102 1\n201 4\n202 1\n203 2\n204 2\n' >"$work/jobs"
chmod 644 "$work/jobs"
start() {  # start POLICY
    printf '#!/bin/sh\nexec %s --fair-policy %s --fair-slots 2 --test-service-time 200 --fair-jobs %s "$@"\n' \
        "$b/agent/adafsd" "$1" "$work/jobs" >"$work/adafsd"
    chmod 755 "$work/adafsd"
    rm -rf "$work/base"
    ADAFSD=$work/adafsd "$b/agent/adafs-ctl" start --servers 1 --base "$work/base" \
        --mount /adafs-fairpol >/dev/null
    for u in $A $B; do
        install -o $u -m 600 "$work/base/instance" "$work/instance.$u"
    done
}
stop() { "$b/agent/adafs-ctl" stop --base "$work/base" >/dev/null 2>&1; }
job() {  # job USER JOB: stats of 4 processes in the job's cgroup; prints ops
    d=$cg/uid_$(id -u "$1")/job_$2
    mkdir -p "$d"
    sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$d" \
        runuser -u "$1" -- env ADAFS_INSTANCE="$work/instance.$1" \
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
