# lib.sh: TAP output and mini-cluster helpers for the shell tests (sourced).
#
# Each check prints "ok N - what" or "not ok N - what"; tap_done prints the
# plan. Automake's TAP driver counts the lines, and the suite's closing
# "N passed, N failed" line counts checks, not files.

tap_n=0
tap_fail=0

# Each check that comes a second or more after the line before it is
# followed by "# N.N s" (what it and the waits before it took), and
# tap_done says the whole file's time: a suite that grows says where.
tap_now() { local t=${EPOCHREALTIME:-0.0}; t=${t//[.,]/}; tap_t=$((10#$t / 100000)); }  # tenths
tap_now
tap_start=$tap_t
tap_last=$tap_t
tap_took() {  # tap_took TENTHS: "N.N"
    echo "$(($1 / 10)).$(($1 % 10))"
}

ok() {      # ok CONDITION-EXIT-STATUS DESCRIPTION
    local status=$1; shift
    tap_n=$((tap_n + 1))
    if [ "$status" = 0 ]; then
        echo "ok $tap_n - $*"
    else
        echo "not ok $tap_n - $*"
        tap_fail=$((tap_fail + 1))
    fi
    tap_now
    [ $((tap_t - tap_last)) -ge 10 ] && echo "# $(tap_took $((tap_t - tap_last))) s"
    tap_last=$tap_t
}

check() {   # check DESCRIPTION -- COMMAND...: ok if the command succeeds
    local what=$1; shift; [ "$1" = -- ] && shift
    local status=0
    "$@" || status=$?
    ok "$status" "$what"
}

skip_all() { echo "1..0 # SKIP $*"; exit 0; }
skip() { tap_n=$((tap_n + 1)); echo "ok $tap_n # SKIP $*"; }
diag() { echo "# $*"; }
tap_done() { tap_now; echo "# $tap_n checks in $(tap_took $((tap_t - tap_start))) s"; echo "1..$tap_n"; exit 0; }

# --- mini-cluster ---------------------------------------------------------

: "${abs_top_srcdir:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
: "${abs_top_builddir:=$abs_top_srcdir}"
cluster=$abs_top_srcdir/tests/cluster/cluster.sh
test_user=${ADAFS_TEST_USER:-adafs-test}
export ADAFS_BUILD_DIR=${ADAFS_BUILD_DIR:-$abs_top_builddir}
export ADAFS_CLUSTER_DIR=${ADAFS_CLUSTER_DIR:-/var/tmp/adafs-cluster}
export SLURM_CONF=$ADAFS_CLUSTER_DIR/etc/slurm.conf
# Where this cluster's munged and node n1's agent are (cluster.sh's settings).
export ADAFS_MUNGE_DIR=${ADAFS_MUNGE_DIR:-/run/adafs-cluster-munge}
munge_socket=$ADAFS_MUNGE_DIR/munge.socket.2
agent_port_of() {  # agent_port_of K: the TCP port of node nK's agent
    echo $(( ${ADAFS_SLURMD_PORT:-17001} + $1 - 1 + ${ADAFS_AGENT_PORT_OFFSET:-1000} ))
}

# Cluster tests need root, the plugin built, and are not run when the suite
# asks to skip them (sanitizer builds, distcheck).
require_cluster() {
    [ "$(id -u)" = 0 ] || skip_all "needs root to run slurmd"
    [ -z "${ADAFS_SKIP_CLUSTER:-}" ] || skip_all "ADAFS_SKIP_CLUSTER is set"
    [ -f "$ADAFS_BUILD_DIR/slurm-plugin/.libs/burst_buffer_adafs.so" ] ||
        skip_all "plugin not built (configure --with-slurm-source)"
    command -v slurmctld >/dev/null || skip_all "slurmctld not installed"
}

. "$abs_top_srcdir/tests/cluster/pid.sh"   # pid_alive PID: not exited (a zombie is gone)

as_user() { runuser -u "$test_user" -- env SLURM_CONF="$SLURM_CONF" "$@"; }

# Submits a script as the test user from the jobs directory; prints the job id
# or, on rejection, sbatch's messages on stderr and returns 1.
submit() {
    (cd "$ADAFS_CLUSTER_DIR/jobs" && as_user sbatch --parsable "$@")
}

job_state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
job_field() { scontrol show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1; }

# Starts the mini-cluster for a test file; without it nothing else can be
# checked, so a failure bails out instead of waiting through every check.
start_cluster() {
    if "$cluster" start --clean; then
        ok 0 "mini-cluster starts"
    else
        ok 1 "mini-cluster starts"
        echo "Bail out! the mini-cluster did not start (see $ADAFS_CLUSTER_DIR/log)"
        "$cluster" stop >/dev/null 2>&1
        exit 1
    fi
    trap '"$cluster" stop >/dev/null 2>&1' EXIT
    trap 'exit 1' INT TERM HUP PIPE
}

# wait_job ID STATE [SECONDS]: waits until the job reaches STATE or ends.
wait_job() {
    local id=$1 want=$2 limit=${3:-120} state="" unknown=0
    for _ in $(seq $((limit * 2))); do
        state=$(job_state "$id")
        [ "$state" = "$want" ] && return 0
        # slurmctld not answering for 15 s (or no such job): stop waiting.
        if [ -z "$state" ]; then
            unknown=$((unknown + 1))
            [ $unknown -ge 30 ] && break
        else
            unknown=0
        fi
        case "$state" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE) break ;; esac
        sleep 0.5
    done
    diag "job $id is $state, wanted $want"
    scontrol show job "$id" | sed 's/^/# /'
    return 1
}

# start_now ID: let a requeued job start now rather than after the
# credential lifetime (AuthInfo cred_expire, 20 minutes by default). slurmd
# refuses a credential made no later than the second in which it revoked
# the job's last one (slurm_cred.c: ctime <= revoked), and it revoked that
# one with the last run's terminate: a start in that same second fails the
# job at once (FAILED, exit code 1, run time 0). So the job's nodes leave
# COMPLETING first, then the clock moves past that second.
start_now() {
    local id=$1 nodes
    nodes=$(job_field "$id" NodeList)
    for _ in $(seq 120); do
        [ "$(job_state "$id")" != COMPLETING ] &&
            { [ -z "$nodes" ] || [ "$nodes" = "(null)" ] ||
              [ -z "$(sinfo -h -t completing -n "$nodes" -o %N 2>/dev/null)" ]; } && break
        sleep 0.5
    done
    sleep 1.1
    scontrol update jobid="$id" starttime=now
}

write_job() {  # write_job NAME <<EOF ... : a job script the test user can read
    local f=$ADAFS_CLUSTER_DIR/jobs/$1
    cat > "$f"
    chmod 644 "$f"
    echo "$f"
}

# wait_file PATH: waits up to 120 s for a file a job creates to say how far
# it got.
wait_file() {
    for _ in $(seq 240); do [ -e "$1" ] && return 0; sleep 0.5; done
    return 1
}

# submit_victim TAG TEXT SECONDS: a 2-node job of the test user that writes
# TEXT into secret.txt on its file system, creates $pfs/TAG/started and
# stays SECONDS; prints its id. Attack tests aim at it.
submit_victim() {
    local tag=$1 text=$2 secs=$3
    as_user_sh "mkdir -p $pfs/$tag && rm -f $pfs/$tag/started"
    write_job "victim-$tag.sh" >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 2 -t $((secs / 60 + 5)) -o victim-$tag-%j.out
#BB_ADAFS capacity=1G
echo "$text" > \$ADAFS_MOUNT/secret.txt
touch $pfs/$tag/started
sleep $secs
JOB
    submit "victim-$tag.sh"
}

# job_server_pid ID: the pid of one of the job's file system servers.
job_server_pid() {
    local f
    f=$(ls "$ADAFS_CLUSTER_DIR"/storage/n*/job."$1".pid 2>/dev/null | tail -1)
    [ -n "$f" ] && cat "$f"
}

# kill_server_check WHAT ID TAG READS LIMIT: kills one of job ID's servers
# with SIGKILL and lets the job go on ($pfs/TAG/go); the job then reads READS
# files and writes "failed=N seconds=S" to $pfs/TAG/result, errors to
# $pfs/TAG/errors. The reads of the dead server's files must fail with EIO
# within LIMIT seconds (never hang) and teardown must leave nothing.
kill_server_check() {
    local what=$1 id=$2 tag=$3 reads=$4 limit=$5 victim secs
    victim=$(job_server_pid "$id")
    check "$what: found a server of the job ($victim)" -- test -n "$victim"
    kill -KILL "$victim" 2>/dev/null
    as_user_sh "touch $pfs/$tag/go"
    check "$what: the job ends" -- wait_job "$id" COMPLETED 180
    check "$what: reads of files on the dead server failed" -- grep -q "failed=[1-9]" "$pfs/$tag/result"
    check "$what: the failures are EIO" -- grep -q "Input/output error" "$pfs/$tag/errors"
    secs=$(sed -n 's/.*seconds=\([0-9]*\).*/\1/p' "$pfs/$tag/result")
    check "$what: within a bounded time (${secs}s for $reads reads)" -- test "${secs:-999}" -lt "$limit"
    check "$what: nothing left (servers, stagers, data, mount)" -- wait_clean 60
}

# Nothing of a job may be left on any node: no server, no stager, no data.
leftovers() {
    local out="" pids
    # Only this cluster's: other tests on the machine run servers too.
    pids=$(pgrep -f "^[^ ]*adafsd .*$ADAFS_CLUSTER_DIR/" | tr '\n' ' ')
    [ -n "$pids" ] && out="$out servers:$pids"
    pids=$(pgrep -f "^[^ ]*adafs-stage .*$ADAFS_CLUSTER_DIR/" | tr '\n' ' ')
    [ -n "$pids" ] && out="$out stagers:$pids"
    pids=$(pgrep -f "^[^ ]*adafs-fuse .*$ADAFS_CLUSTER_DIR/" | tr '\n' ' ')
    [ -n "$pids" ] && out="$out adafs-fuse:$pids"
    local fuse
    fuse=$(grep " $ADAFS_CLUSTER_DIR/mnt/" /proc/mounts | cut -d' ' -f2 | tr '\n' ' ')
    [ -n "$fuse" ] && out="$out fuse-mounts:$fuse"
    local data
    # A node's persistent/ directory (the agent's, root's) stays once its
    # instances are destroyed: only what is in it is left behind.
    data=$(find "$ADAFS_CLUSTER_DIR/storage" -mindepth 1 \( -name 'job.*' -o -path '*/n*/*' \) \
           ! \( -path '*/n*/persistent' -type d -empty \) 2>/dev/null | head -5)
    [ -n "$data" ] && out="$out data:$data"
    local mounts
    mounts=$(find "$ADAFS_CLUSTER_DIR/mnt" -mindepth 1 2>/dev/null | head -5)
    [ -n "$mounts" ] && out="$out mounts:$mounts"
    echo "$out"
}

# wait_clean [SECONDS]: waits until leftovers is empty; says what remains.
wait_clean() {
    local left=""
    for _ in $(seq $(( ${1:-30} * 4 ))); do
        left=$(leftovers)
        [ -z "$left" ] && return 0
        sleep 0.25
    done
    diag "left behind:$left"
    return 1
}

# wait_reason ID PATTERN [SECONDS]: until the job's reason text matches.
wait_reason() {
    local id=$1 pattern=$2 limit=${3:-60} text=""
    for _ in $(seq $((limit * 2))); do
        text=$(scontrol show job "$id" 2>/dev/null | sed -n 's/.*Reason=\(.*\) Dependency=.*/\1/p' | tr _ " ")
        grep -qE -- "$pattern" <<<"$text" && return 0
        sleep 0.5
    done
    diag "job $id reason: $text"
    return 1
}

bb_phase() { scontrol show bbstat "$1" 2>/dev/null | sed -n 's/.*Phase=\([a-z_]*\).*/\1/p' | head -1; }

# wait_phase ID PHASE [SECONDS]
wait_phase() {
    local id=$1 want=$2 limit=${3:-60} p=""
    for _ in $(seq $((limit * 4))); do
        p=$(bb_phase "$id")
        [ "$p" = "$want" ] && return 0
        sleep 0.25
    done
    diag "job $id burst buffer phase is '$p', wanted $want"
    return 1
}

pfs=${ADAFS_CLUSTER_DIR}/pfs
# as_user_sh CMD: a shell command as the test user (for PFS fixtures).
as_user_sh() { runuser -u "$test_user" -- bash -c "$1"; }

set_bb_conf() {  # set_bb_conf KEY VALUE: change burst_buffer.conf and reconfigure
    local f=$ADAFS_CLUSTER_DIR/etc/burst_buffer.conf
    sed -i "/^$1=/d" "$f"
    [ -n "$2" ] && echo "$1=$2" >> "$f"
    scontrol reconfigure
}
