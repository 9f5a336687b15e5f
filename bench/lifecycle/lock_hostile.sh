#!/bin/bash
# bench/lifecycle/lock_hostile.sh BUILD_DIR: how long an unprivileged user
# (the test user, adafs-test) can make the plugin hold slurmctld's job lock,
# on the mini-cluster (root; tests/cluster; a private cluster's ADAFS_*
# variables as for the cluster tests). It submits NJOBS (24) jobs of 64
# stage_out lines, each of about LINE_BYTES (990: the largest request
# accepted is 64 KiB) into destinations that do not exist, so every
# stage-out fails, is kept and retried every 2 s; one job with a 4 MiB
# script; waits RUN_S (40) seconds, then scancel --hurry of them all.
# QUOTE=1: paths with blanks (written out quoted). Prints the plugin's
# figures (bbstat) and each new longest hold (slurmctld's log: wall and CPU
# time); the log is left in $ADAFS_CLUSTER_DIR/log. Numbers go to
# doc/benchmarks.md ("What holds slurmctld's job lock").
build=$(cd "${1:?usage: lock_hostile.sh BUILD_DIR}" && pwd)
abs_top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
abs_top_builddir=$build
. "$abs_top_srcdir/tests/lib.sh"
require_cluster
start_cluster >/dev/null
set_bb_conf AdafsStageOutRetry 2
set_bb_conf AdafsStageOutKeep 30
seg=$(( (${LINE_BYTES:-990} - 170 - ${#pfs}) / 4 - 2 ))
part=$(printf 'd%.0s' $(seq $seg))
[ -n "${QUOTE:-}" ] && part=$(printf 'd d%.0s' $(seq $((seg / 3))))
dest="$pfs/nothere"; for i in 1 2 3 4; do dest="$dest/$part$i"; done
src=$(printf 's%.0s' $(seq 100))
{
    echo '#!/bin/bash'
    echo '#SBATCH -N 1 -t 5'
    echo '#BB_ADAFS capacity=1G'
    for i in $(seq 64); do
        echo "#BB_ADAFS stage_out source=$src$i destination=\"$dest/f$i\" type=file"
    done
    echo true
} | write_job many.sh >/dev/null
{
    echo '#!/bin/bash'
    echo '#SBATCH -N 1 -t 5'
    echo '#BB_ADAFS capacity=1G'
    yes '# padding padding padding padding padding padding padding padding' |
        head -c $((4 * 1024 * 1024 - 200))
    echo; echo true
} | write_job big.sh >/dev/null
ids=""
for _ in $(seq "${NJOBS:-24}"); do ids="$ids $(submit many.sh)" || exit 1; done
submit big.sh >/dev/null || exit 1
echo "# submitted ${NJOBS:-24} jobs of $(wc -c < "$ADAFS_CLUSTER_DIR/jobs/many.sh") bytes and one of 4 MiB"
sleep "${RUN_S:-40}"
as_user scancel --hurry $ids
sleep 15
scontrol show bbstat | grep -o 'JobLockHeld.*'
grep -a 'the longest yet' "$ADAFS_CLUSTER_DIR/log/slurmctld.log" | sed 's/^\[[^]]*\] [^:]*: /# /'
