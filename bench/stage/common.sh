# shellcheck shell=bash
# bench/stage/common.sh: the mini-cluster setup bench/stage's cluster
# scripts (cluster.sh, cluster_parts.sh) share. Sourced by each after it
# sets BUILD (its BUILD_DIR, absolute), SMALL and SETTLE, with its
# WORK_DIR argument (may be empty):
#
#   . "$(dirname "$0")/common.sh" "${2:-}"
#
# Needs root and the cluster settings of the one running it exported
# (ADAFS_CLUSTER_DIR, ADAFS_MUNGE_DIR, ADAFS_CTLD_PORT, ADAFS_SLURMD_PORT).
# Sets W (WORK_DIR, else BENCH_ROOT: root.sh), moves ADAFS_CLUSTER_DIR
# under it (named as its last component), sources tests/lib.sh (the
# cluster's helpers: submit, wait_job, write_job, pfs, as_user_sh) and
# sets STAGE, CTL and the library path; stage_cluster_start then starts
# the cluster afresh with the 100,000-file set in it.
export abs_top_srcdir=$(cd "$(dirname "$0")/../.." && pwd) abs_top_builddir=$BUILD
[ -n "${ADAFS_CLUSTER_DIR:-}" ] ||
    { echo "$(basename "$0"): export your cluster's settings first" >&2; exit 2; }
. "$(dirname "$0")/root.sh"
W=${1:-$BENCH_ROOT}
ADAFS_CLUSTER_DIR=$W/$(basename "$ADAFS_CLUSTER_DIR")
export ADAFS_CLUSTER_DIR
. "$abs_top_srcdir/tests/lib.sh"
STAGE=$BUILD/stager/adafs-stage CTL=$BUILD/agent/adafs-ctl
export LD_LIBRARY_PATH=$BUILD/agent/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
say() { echo "[$(date +%T)] $*" >&2; }

# stage_cluster_start: the cluster started afresh, and in its stand-in
# parallel file system $data: SMALL files of 4 KiB in 100 directories
# (the test user's), read once, written back, then SETTLE seconds of quiet.
stage_cluster_start() {
    "$cluster" start --clean > /dev/null
    data=$pfs/bench/small
    say "generating $SMALL files of 4 KiB in $data"
    as_user_sh "mkdir -p $pfs/bench/out && python3 - $data $SMALL" <<'PY'
import os, sys
root, count = sys.argv[1], int(sys.argv[2])
block = os.urandom(1 << 20)
for i in range(count):
    d = os.path.join(root, "d%03d" % (i % 100))
    if i < 100: os.makedirs(d)
    with open(os.path.join(d, "f%06d" % i), "wb") as f:
        off = (i * 4096) % (1 << 20)
        f.write(block[off:off + 4096])
PY
    find "$data" -type f -exec cat {} + > /dev/null
    sync; sleep "$SETTLE"
}
