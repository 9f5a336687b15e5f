#!/bin/sh
# bench/fair/run.sh BUILD [SECONDS] [PAIRS]   (as root: clients run as the
# test users adafs-test and adafs-test2)
#
# adafsd's fair-share gate with one server on this host. Every run starts a
# fresh server (adafs-ctl, through a wrapper adding the server options);
# the clients come through the node's Unix socket, so the server knows
# their uid from the kernel.
#  shares  --test-service-time 200 (each request holds an emulated device
#          200 us): user A with 8 processes of stats against user B with 4,
#          policy off and user-fair (acceptance 1's 1:1, with users as the
#          entities).
#  cost    --test-service-time 100,2000: A stats (8 processes), B 1 MiB
#          writes (4); the service each user was charged, from the server's
#          log (acceptance 3).
#  bucket  --bandwidth-file bounding the job to 20 MB/s: what 2 writers
#          move (the per-job bucket of acceptance 5).
#  alone   A alone, 4 processes of stats, policy off vs job-fair, in
#          alternating pairs (acceptance 2).
#  adaptbf bench/fair/tbfbench: AdapTBF's allocator alone (acceptance 5's
#          ratios, records and time per job).
#  policies, tbf  bench/fair/policies.sh and bench/fair/tbf.sh (points 1
#          and 5 with real servers), at the end.
#  mdtest  no emulated device: fsbench mdtest (5000 files through the
#          interposer) with the gate off vs job-fair, one client, in
#          alternating pairs (acceptance 6).
set -eu
usage="usage: run.sh BUILD [SECONDS] [PAIRS]"
. "$(dirname "$0")/lib.sh"
fair_init "${1:?$usage}" fairbench
trap fair_cleanup EXIT
secs=${2:-4}
pairs=${3:-5}

start() { fair_start base 1 /adafs-fair "$@"; }  # start OPTIONS...: one server
stop() { fair_stop base; }
load() {  # load USER OP PROCS: ops done in $secs
    runuser -u "$1" -- env ADAFS_INSTANCE="$work/base.$1" \
        "$b/bench/fair/.libs/fairload" "$2" / "$3" "$secs" | awk '{print $2}'
}
two() {  # two OP_A PROCS_A OP_B PROCS_B: "opsA opsB"
    load $A "$1" "$2" >"$work/a" & load $B "$3" "$4" >"$work/b"; wait
    echo "$(cat "$work/a") $(cat "$work/b")"
}
median() { sort -n | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "## adaptbf: the allocator on simulated jobs, and its cost"
"$b/bench/fair/tbfbench"

echo "## shares: user A 8 processes, user B 4, 200 us per request"
for pol in off user-fair; do
    start --fair-policy $pol --fair-slots 2 --test-service-time 200
    set -- $(two stat 8 stat 4)
    stop
    echo "$pol: A $1 ops, B $2 ops, A/B $(echo "$1 $2" | awk '{printf "%.3f", $1 / $2}')"
done

echo "## cost: A stats (8 processes), B 1 MiB writes (4; 2 chunk requests each), 100 us + 2000 us/MiB"
served() {  # served UID: us of service the server charged that user's entity
    key=$(printf '%#x' $(( (1 << 62) | $(id -u "$1") )))
    awk -v k="$key" '$0 ~ "entity " k " was served" {print $(NF - 1)}' "$work/base/server.0.log"
}
for pol in off user-fair; do
    start --fair-policy $pol --fair-slots 2 --test-service-time 100,2000
    set -- $(two stat 8 write 4)
    stop
    if [ $pol = off ]; then
        echo "off: A $1 stats, B $2 writes; emulated device time A/B $(echo "$1 $2" |
            awk '{printf "%.3f", ($1 * 100) / ($2 * (2 * 100 + 2000))}') (no charges kept when off)"
    else
        sa=$(served $A) sb=$(served $B)
        echo "$pol: A $1 stats, B $2 writes; service charged A $sa us, B $sb us, A/B $(echo "$sa $sb" |
            awk '{printf "%.3f", $1 / $2}'); requests A/B $(echo "$1 $2" | awk '{printf "%.1f", $1 / (2 * $2)}')"
    fi
done

echo "## bucket: the instance's job bound to 20 MB/s by --bandwidth-file, 2 writers"
echo "0 20000000" >"$work/bw"
start --bandwidth-file "$work/bw"
bytes=$(runuser -u $A -- env ADAFS_INSTANCE="$work/base.$A" \
    "$b/bench/fair/.libs/fairload" write / 2 "$secs" | awk '{print $4 / $6}')
stop
echo "moved $(echo "$bytes" | awk '{printf "%.2f MB/s, %.3f of the rate", $1 / 1e6, $1 / 20e6}')"

echo "## alone: A alone, 4 processes, 200 us per request; ratio job-fair/off per pair"
i=0
while [ $i -lt "$pairs" ]; do
    for pol in off job-fair; do
        start --fair-policy $pol --test-service-time 200
        eval "ops_$(echo $pol | tr - _)=$(load $A stat 4)"
        stop
    done
    echo "pair $i: off $ops_off, job-fair $ops_job_fair, ratio $(echo "$ops_job_fair $ops_off" |
        awk '{printf "%.4f", $1 / $2}')" | tee -a "$work/alone"
    i=$((i + 1))
done
echo "alone: median ratio job-fair/off $(awk '{print $NF}' "$work/alone" | median)"


echo "## gate: its cost per request, one entity, no contention"
"$b/bench/fair/gatecost"

echo "## mdtest: one client, 5000 files, no emulated device; ratio job-fair/off per pair"
i=0
tick=$(getconf CLK_TCK)
while [ $i -lt "$pairs" ]; do
    if [ $((i % 2)) = 0 ]; then order="off job-fair"; else order="job-fair off"; fi
    for pol in $order; do
        start --fair-policy $pol
        pid=$(awk '{print $2}' "$work/base/servers")
        c0=$(awk '{print $14 + $15}' /proc/"$pid"/stat)
        ADAFS_INSTANCE=$work/base/instance ADAFS_MOUNT=/adafs-fair \
            LD_PRELOAD=$b/agent/.libs/libadafs_preload.so \
            "$b/bench/fs/fsbench" mdtest --dir /adafs-fair/md --files 5000 >"$work/md.$pol"
        c1=$(awk '{print $14 + $15}' /proc/"$pid"/stat)
        echo "server_cpu_us_per_op $(( (c1 - c0) * 1000000 / tick / 15000 ))" >>"$work/md.$pol"
        stop
    done
    paste "$work/md.job-fair" "$work/md.off" |
        awk -v i=$i '{n = NF / 2; printf "pair %d %s job-fair %s off %s ratio %.4f\n", i, $1, $2, $(n + 2), $(n + 2) ? $2 / $(n + 2) : 0}' |
        tee -a "$work/md"
    i=$((i + 1))
done
for f in $(awk '{print $3}' "$work/md" | sort -u); do
    echo "mdtest $f: median ratio job-fair/off $(awk -v f=$f '$3 == f {print $NF}' "$work/md" | median)"
done

echo "## policies: size-fair, job-fair, user-then-size with jobs told apart by cgroup (policies.sh)"
sh "$(dirname "$0")/policies.sh" "$b" "$secs" 1 || echo "policies.sh failed (see above)"
echo "## adaptbf with real servers and the agent's loop (tbf.sh)"
sh "$(dirname "$0")/tbf.sh" "$b"
