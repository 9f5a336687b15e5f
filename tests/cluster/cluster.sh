#!/bin/bash
# cluster.sh: a local Slurm mini-cluster on this one host, for the demo and the tests.
#
#   cluster.sh start [--clean]   start munged, agents, slurmctld and N slurmd; wait until
#                                idle (--clean: fresh state, logs, jobs, PFS and
#                                storage, persistent instances included)
#   cluster.sh stop              stop every process this harness started (by PID), then
#                                persistent instances' servers (their data stays) and
#                                every mount and loop device under ADAFS_CLUSTER_DIR
#   cluster.sh restart-ctld      restart slurmctld only (state kept)
#   cluster.sh stop-agent K      stop node nK's agent with SIGINT (it wipes its jobs' data)
#   cluster.sh restart-agent K   SIGTERM to node nK's agent (systemctl restart: it leaves its
#                                jobs running) and start it again (it re-adopts them)
#   cluster.sh start-agents      start the agents that are not running
#   cluster.sh start-qosd        start adafs-qosd if burst_buffer.conf sets AdafsQosPaths
#   cluster.sh stop-qosd | kill-qosd   stop adafs-qosd (SIGTERM | SIGKILL)
#   cluster.sh status            print what runs
#   cluster.sh env               print the environment lines clients need
#   cluster.sh check-access      create the test users; fail, saying why, if the Slurm user or the test
#                                user cannot read the build (start checks it too)
#
# Everything lives under $ADAFS_CLUSTER_DIR (default /var/tmp/adafs-cluster):
# its own slurm.conf, state, spool, logs and munge key. The system's
# /etc/slurm and any system munged or slurmctld are never touched. Needs
# root (slurmd must be able to start jobs as other users).
#
# Settings (environment): ADAFS_CLUSTER_DIR, ADAFS_CLUSTER_NODES (4),
# ADAFS_CTLD_PORT (16817), ADAFS_SLURMD_PORT (17001, the first of N),
# ADAFS_AGENT_PORT_OFFSET (1000: node nK's agent listens at its slurmd port + 1000),
# ADAFS_MUNGE_DIR (/run/adafs-cluster-munge: the cluster's own munged; set all of
# these differently to run two clusters side by side),
# ADAFS_BUILD_DIR (the configured adafs build tree with the plugin),
# ADAFS_PREFIX (where adafs programs are installed, if not run from a build:
# /usr for the Debian packages), ADAFS_LIBDIR (default: PREFIX/lib/<multiarch>
# where adafs is installed there, else PREFIX/lib).
set -euo pipefail
# Under set -e a failing command ends the script: say which one.
trap 'echo "cluster.sh: line $LINENO: failed: $BASH_COMMAND" >&2' ERR

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
base=${ADAFS_CLUSTER_DIR:-/var/tmp/adafs-cluster}
nodes=${ADAFS_CLUSTER_NODES:-4}
ctld_port=${ADAFS_CTLD_PORT:-16817}
slurmd_port=${ADAFS_SLURMD_PORT:-17001}
agent_offset=${ADAFS_AGENT_PORT_OFFSET:-1000}
build=${ADAFS_BUILD_DIR:-}
# Later commands (stop, restart-ctld) use the build the cluster started with,
# unless told to use installed programs.
if [ -z "$build" ] && [ -z "${ADAFS_PREFIX:-}" ] && [ -f "$base/env" ]; then
    build=$(sed -n 's/^export ADAFS_BUILD_DIR=//p' "$base/env")
fi
prefix=${ADAFS_PREFIX:-/usr/local}
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
libdir=${ADAFS_LIBDIR:-$prefix/lib}
if [ -z "${ADAFS_LIBDIR:-}" ] && [ -d "$prefix/lib/$multiarch/adafs" ]; then libdir=$prefix/lib/$multiarch; fi
munge_dir=${ADAFS_MUNGE_DIR:-/run/adafs-cluster-munge}
conf=$base/etc/slurm.conf
test_user=${ADAFS_TEST_USER:-adafs-test}
host=$(hostname -s)

die() { echo "cluster.sh: $*" >&2; exit 1; }
log() { echo "cluster.sh: $*" >&2; }

[ "$(id -u)" = 0 ] || die "must run as root (slurmd starts jobs as other users)"

slurm_user() { id -u slurm >/dev/null 2>&1 && echo slurm || echo root; }

. "$here/pid.sh"
pid_of() { [ -f "$1" ] && cat "$1" 2>/dev/null || true; }

# --- daemons that died --------------------------------------------------
# Each daemon is known by its pid file and log. A wait for the cluster stops
# as soon as one it waits for is gone, and says what its log said last.
declare -A log_mark=()   # log file -> its size before this start

mark_log() { log_mark[$1]=$(stat -c %s "$1" 2>/dev/null || echo 0); }

# last_errors LOG: the error lines this start added to LOG (else its last
# new lines).
last_errors() {
    local f=$1 new
    [ -r "$f" ] || { echo "  (no log at $f)"; return 0; }
    new=$(tail -c +"$(( ${log_mark[$f]:-0} + 1 ))" "$f")
    [ -n "$new" ] || { echo "  (nothing new in $f since this start)"; return 0; }
    local errors; errors=$(grep -iE 'error|fatal|fail|denied|cannot|unable' <<<"$new" | tail -n 5 || true)
    [ -n "$errors" ] || errors=$(tail -n 5 <<<"$new")
    sed 's/^/  /' <<<"$errors"
}

died() {  # died WHAT LOG [HOW]: stop, showing the daemon's last errors
    echo "cluster.sh: $1 ${3:-is not running}; last errors in $2:" >&2
    last_errors "$2" >&2
    exit 1
}

# The daemons the cluster runs: "NAME PIDFILE LOG" lines.
daemons() {
    echo "munged $munge_dir/munged.pid $munge_dir/munged.log"
    for i in $(seq "$nodes"); do echo "adafs-agentd_n$i $base/run/agent.n$i.pid $base/log/agent.n$i.log"; done
    echo "slurmctld $base/run/slurmctld.pid $base/log/slurmctld.log"
    for i in $(seq "$nodes"); do echo "slurmd_n$i $base/run/slurmd.n$i.pid $base/log/slurmd.n$i.log"; done
}

# check_alive [NAME-PATTERN]: every started daemon (matching) still runs.
check_alive() {
    local name file logf pid
    while read -r name file logf; do
        # shellcheck disable=SC2053
        [[ $name == ${1:-*} ]] || continue
        pid=$(pid_of "$file")
        [ -n "$pid" ] || continue   # not started (yet): await_pid covers that
        pid_alive "$pid" || died "${name/_/ } (pid $pid)" "$logf" "died"
    done < <(daemons)
}

# child_running PID: our child PID has not exited (an exited child that
# was not waited for is a zombie, which kill -0 still finds).
child_running() { local st; st=$(ps -o stat= -p "$1" 2>/dev/null) && [[ $st != Z* ]]; }

# await_pid NAME PIDFILE LOG [CHILD]: a daemon writes its pid file within
# seconds, or it died starting; CHILD is its pid when we started it in the
# foreground, so its death is seen before it writes the pid file.
await_pid() {
    local stale pid; stale=$(pid_of "$2")   # a pid file left by an earlier run
    for _ in $(seq 100); do
        pid=$(pid_of "$2")
        pid_alive "$pid" && return 0
        # Written since and gone already (a zombie counts as gone): it died
        # starting, as slurmctld does when the plugin refuses its config.
        if [ -n "$pid" ] && [ "$pid" != "$stale" ]; then
            died "$1" "$3" "died starting (pid $pid)"
        fi
        if [ -n "${4:-}" ] && ! child_running "$4"; then
            died "$1" "$3" "exited while starting"
        fi
        sleep 0.1
    done
    died "$1" "$3" "did not start (no live pid in $2 after 10 s)"
}

# adafs programs: from the build tree when given, else installed.
program() {  # program DIR NAME (installed: daemons root starts in sbin, adafsd in bin)
    if [ -n "$build" ]; then echo "$build/$1/$2"
    elif [ "$2" = adafsd ]; then echo "$prefix/bin/$2"
    else echo "$prefix/sbin/$2"; fi
}
stage_program() { if [ -n "$build" ]; then echo "$build/stager/adafs-stage"; else echo "$prefix/bin/adafs-stage"; fi; }
# adafs-qos is a user's command (bin), adafs-qosd a daemon (sbin).
qos_program() { if [ -n "$build" ]; then echo "$build/qos/$1"; elif [ "$1" = adafs-qos ]; then echo "$prefix/bin/$1"; else echo "$prefix/sbin/$1"; fi; }
fuse_program() { if [ -n "$build" ]; then echo "$build/agent/adafs-fuse"; else echo "$prefix/bin/adafs-fuse"; fi; }
preload_lib() { if [ -n "$build" ]; then echo "$build/agent/.libs/libadafs_preload.so"; else echo "$libdir/adafs/libadafs_preload.so"; fi; }

plugin_dir() {
    # Slurm takes a plugin from the first directory that has it: a build's
    # comes before Slurm's own directory, where the adafs package puts one.
    local dirs=/usr/lib/$multiarch/slurm-wlm
    if [ -n "$build" ] && [ -f "$build/slurm-plugin/.libs/burst_buffer_adafs.so" ]; then
        dirs="$build/slurm-plugin/.libs:$dirs"
    elif [ -n "${ADAFS_PREFIX:-}" ] && [ "$libdir/slurm-wlm" != "/usr/lib/$multiarch/slurm-wlm" ]; then
        dirs="$libdir/slurm-wlm:$dirs"
    fi
    echo "$dirs"
}

# unreachable USER PATH: why USER cannot read PATH (the first directory on
# the way it cannot enter, with mode and owner), or nothing. A PATH not
# built yet is judged by the directories that exist on its way.
unreachable() {
    local user=$1 path=$2
    runuser -u "$user" -- test -r "$path" && return 0
    local d="" part IFS=/
    for part in ${path#/}; do
        d=$d/$part
        [ -d "$d" ] || break
        if ! runuser -u "$user" -- test -x "$d"; then
            echo "$d is mode $(stat -c %a "$d") owner $(stat -c %U "$d")"
            return 0
        fi
    done
    [ -e "$path" ] && echo "$path is mode $(stat -c %a "$path") owner $(stat -c %U "$path")"
    return 0
}

# slurmctld (the Slurm user) loads the plugin from the build; servers, the
# stager and the interposer run as the job's user. A build in a private
# directory (mktemp -d makes 0700) would let slurmctld die at start and
# every job fail: refuse at once, saying which directory.
check_access() {
    [ -n "$build" ] || return 0
    local su; su=$(slurm_user)
    local user path why
    while read -r user path; do
        [ -n "$path" ] || continue
        why=$(unreachable "$user" "$path")
        [ -z "$why" ] && continue
        die "user $user cannot read $path: $why. The cluster's daemons and jobs run from the build tree $build: build it in a directory every user can enter (chmod o+x the directory, or configure in another directory, e.g. ADAFS_BUILD=/var/tmp/adafs-build for scripts/check)"
    done <<LIST
$su $build/slurm-plugin/.libs/burst_buffer_adafs.so
$su $(readlink -f "$build/walltime-model/.libs/libadafs_walltime.so" || true)
$test_user $(preload_lib)
$test_user $(program agent adafsd)
$test_user $(stage_program)
LIST
}

# The second user is the group member and the other job's owner of the
# tests that share a file system (agent/tests/test_fs_shared.sh and
# others run before any cluster test, and skip without it).
ensure_test_user() {
    local u
    for u in "$test_user" adafs-test2; do
        if ! id -u "$u" >/dev/null 2>&1; then
            useradd --create-home --shell /bin/bash "$u"
            log "created test user $u"
        fi
    done
}

write_config() {
    local su; su=$(slurm_user)
    mkdir -p "$base"/{etc,state,spool,log,run,jobs,pfs,storage,adafs-log,qos}
    chown root:root "$base/storage" "$base/adafs-log"
    chmod 755 "$base/storage" "$base/adafs-log"
    chmod 755 "$base" "$base"/etc "$base"/log "$base"/run
    chown "$su" "$base/log"
    chown "$su" "$base/state"
    chmod 700 "$base/state"
    # adafs-qosd's state, status and records: slurmctld's user's, as qosd runs.
    chown "$su" "$base/qos"
    chmod 750 "$base/qos"
    # Job output and the stand-in parallel file system belong to the test user.
    chown "$test_user" "$base/jobs" "$base/pfs"
    local last=$((slurmd_port + nodes - 1))
    local prolog_dir=$here/../../prolog
    cat > "$conf" <<CONF
# Written by tests/cluster/cluster.sh: a mini-cluster on $host.
ClusterName=adafs
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$su
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$munge_dir/munge.socket.2
StateSaveLocation=$base/state
SlurmdSpoolDir=$base/spool/%n
SlurmctldPidFile=$base/run/slurmctld.pid
SlurmdPidFile=$base/run/slurmd.%n.pid
SlurmctldLogFile=$base/log/slurmctld.log
SlurmdLogFile=$base/log/slurmd.%n.log
SlurmctldDebug=debug
SlurmdDebug=info
DebugFlags=BurstBuffer
PluginDir=$(plugin_dir)
BurstBufferType=burst_buffer/adafs
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmdTimeout=300
MessageTimeout=30
KillWait=5
MinJobAge=600
InactiveLimit=0
SchedulerParameters=sched_interval=2,bf_interval=5
Epilog=$base/etc/epilog.sh
TaskProlog=$base/etc/taskprolog.sh
PrologFlags=Alloc
${ADAFS_CLUSTER_EXTRA_CONF:-}
NodeName=n[1-$nodes] NodeHostname=$host NodeAddr=127.0.0.1 Port=[$slurmd_port-$last] CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=n[1-$nodes] Default=YES MaxTime=INFINITE State=UP
CONF
    # burst_buffer.conf is read from the directory of slurm.conf.
    if [ ! -f "$base/etc/burst_buffer.conf.keep" ]; then
        cat > "$base/etc/burst_buffer.conf" <<CONF
# Written by tests/cluster/cluster.sh
Directive=BB_ADAFS
StageInTimeout=300
StageOutTimeout=300
OtherTimeout=60
AdafsChunkSize=512K
AdafsDefaultCapacity=1G
AdafsNodeCapacity=4G
AdafsStoragePath=$base/storage
AdafsAgentPortOffset=$agent_offset
AdafsStageOutKeep=60
AdafsMungeSocket=$munge_dir/munge.socket.2
AdafsPreload=$(preload_lib)
AdafsServerTimeout=5
AdafsMountPrefix=$base/mnt
# I/O quality of service (doc/qos.md): off until AdafsQosPaths is set.
AdafsQosSocket=$base/run/qos.%n.sock
AdafsQosStateDir=$base/qos
CONF
    fi
    # slurmd runs the Epilog without arguments; the socket pattern is ours.
    cat > "$base/etc/epilog.sh" <<EPI
#!/bin/sh
exec $(program prolog adafs-epilog) --socket $base/run/agent.%n.sock --timeout 300
EPI
    chmod 755 "$base/etc/epilog.sh"
    # Every task: under I/O quality of service when burst_buffer.conf sets
    # AdafsQosPaths (jobs without a burst buffer too); else prints nothing.
    cat > "$base/etc/taskprolog.sh" <<TPL
#!/bin/sh
exec $(qos_program adafs-qos) --config $base/etc/burst_buffer.conf taskprolog
TPL
    chmod 755 "$base/etc/taskprolog.sh"
    cat > "$base/env" <<ENV
export SLURM_CONF=$conf
export ADAFS_CLUSTER_DIR=$base
export ADAFS_BUILD_DIR=$build
export ADAFS_PREFIX=${ADAFS_PREFIX:-}
export ADAFS_MUNGE_DIR=$munge_dir
export ADAFS_CTLD_PORT=$ctld_port
export ADAFS_SLURMD_PORT=$slurmd_port
export ADAFS_AGENT_PORT_OFFSET=$agent_offset
ENV
}

munge_answers() { munge -S "$munge_dir/munge.socket.2" -n >/dev/null 2>&1; }

start_munge() {
    local pid; pid=$(pid_of "$munge_dir/munged.pid")
    if pid_alive "$pid"; then return 0; fi
    # A munged of an earlier run that lost its pid file still serves the
    # socket: find it by the socket's lock and take it over.
    local holder
    holder=$(pgrep -f "munged .*--socket=$munge_dir/munge.socket.2" | head -1 || true)
    if [ -n "$holder" ]; then
        if munge_answers; then
            echo "$holder" > "$munge_dir/munged.pid"
            return 0
        fi
        kill -KILL "$holder" 2>/dev/null || true
        sleep 0.2
    fi
    mkdir -p "$munge_dir"
    chown munge:munge "$munge_dir"
    chmod 755 "$munge_dir"
    if [ ! -s "$munge_dir/munge.key" ]; then
        dd if=/dev/urandom of="$munge_dir/munge.key" bs=1024 count=1 status=none
        chown munge:munge "$munge_dir/munge.key"
        chmod 400 "$munge_dir/munge.key"
    fi
    mark_log "$munge_dir/munged.log"
    runuser -u munge -- /usr/sbin/munged --socket="$munge_dir/munge.socket.2" \
        --key-file="$munge_dir/munge.key" --pid-file="$munge_dir/munged.pid" \
        --log-file="$munge_dir/munged.log" --seed-file="$munge_dir/munged.seed" ||
        died munged "$munge_dir/munged.log" "failed to start"
    await_pid munged "$munge_dir/munged.pid" "$munge_dir/munged.log"
    for _ in $(seq 50); do
        munge_answers && return 0
        check_alive munged
        sleep 0.1
    done
    died munged "$munge_dir/munged.log" "does not answer on $munge_dir/munge.socket.2"
}

# slurmctld answers, or it died (it loads the plugin after writing its pid).
await_ctld() {
    local f=$base/log/slurmctld.log
    await_pid slurmctld "$base/run/slurmctld.pid" "$f"
    for _ in $(seq 60); do
        SLURM_CONF=$conf timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP' && return 0
        check_alive slurmctld
        sleep 0.5
    done
    died slurmctld "$f" "does not answer scontrol ping after 30 s"
}

start_ctld() {
    local pid; pid=$(pid_of "$base/run/slurmctld.pid")
    if pid_alive "$pid"; then return 0; fi
    rm -f "$base/run/slurmctld.pid"
    mark_log "$base/log/slurmctld.log"
    SLURM_CONF=$conf /usr/sbin/slurmctld ${1:-} || died slurmctld "$base/log/slurmctld.log" "failed to start"
    await_ctld
}

# slurmd runs in the foreground (-D) as our child, in its own session with
# no terminal or pipe of ours: a slurmd that cannot bind its port exits
# before writing its pid file, and we see it at once.
start_slurmds() {
    local -A child=()
    for i in $(seq "$nodes"); do
        local pid; pid=$(pid_of "$base/run/slurmd.n$i.pid")
        pid_alive "$pid" && continue
        mkdir -p "$base/spool/n$i"
        mark_log "$base/log/slurmd.n$i.log"
        (cd / && SLURM_CONF=$conf exec setsid /usr/sbin/slurmd -D -N "n$i" </dev/null >/dev/null 2>&1) &
        child[$i]=$!
    done
    for i in $(seq "$nodes"); do
        await_pid "slurmd n$i" "$base/run/slurmd.n$i.pid" "$base/log/slurmd.n$i.log" "${child[$i]:-}"
    done
}

start_agents() {
    local su; su=$(slurm_user)
    local prog
    for prog in "$(program agent adafs-agentd)" "$(program agent adafsd)" "$(stage_program)" \
                "$(fuse_program)" "$(program prolog adafs-epilog)"; do
        [ -x "$prog" ] || die "$prog not found: build adafs and set ADAFS_BUILD_DIR, or install it (ADAFS_PREFIX)"
    done
    # The nodes share this host's cores: each agent is told its share, so
    # the stage workers of a job on all of them run no more copy threads
    # together than one node's worth (AdafsStageThreadsPerCpu).
    local cpus=$(( $(nproc) / nodes ))
    [ "$cpus" -ge 1 ] || cpus=1
    for i in $(seq "$nodes"); do
        local pid; pid=$(pid_of "$base/run/agent.n$i.pid")
        pid_alive "$pid" && continue
        mark_log "$base/log/agent.n$i.log"
        # --fair-policy: persistent instances' servers share themselves among their users.
        "$(program agent adafs-agentd)" --node "n$i" --cpus "$cpus" \
            --listen "127.0.0.1:$((slurmd_port + i - 1 + agent_offset))" \
            --socket "$base/run/agent.n$i.sock" --storage-root "$base/storage" \
            --qos-socket "$base/run/qos.%n.sock" \
            --mount-prefix "$base/mnt" --fair-policy user-fair \
            --adafsd "$(program agent adafsd)" --stager "$(stage_program)" --fuse "$(fuse_program)" \
            --slurm-user "$su" --munge-socket "$munge_dir/munge.socket.2" \
            --log "$base/log/agent.n$i.log" --log-dir "$base/adafs-log" \
            --pidfile "$base/run/agent.n$i.pid" ||
            died "adafs-agentd n$i" "$base/log/agent.n$i.log" "failed to start"
    done
    for i in $(seq "$nodes"); do
        await_pid "adafs-agentd n$i" "$base/run/agent.n$i.pid" "$base/log/agent.n$i.log"
        for _ in $(seq 50); do
            [ -S "$base/run/agent.n$i.sock" ] && break
            check_alive "adafs-agentd_n$i"
            sleep 0.1
        done
        [ -S "$base/run/agent.n$i.sock" ] ||
            died "adafs-agentd n$i" "$base/log/agent.n$i.log" "did not open $base/run/agent.n$i.sock in 5 s"
    done
}

start_qosd() {
    grep -qi '^ *AdafsQosPaths=' "$base/etc/burst_buffer.conf" 2>/dev/null || return 0
    local pid; pid=$(pid_of "$base/qos/qosd.pid")
    if pid_alive "$pid"; then return 0; fi
    local su; su=$(slurm_user)
    runuser -u "$su" -- env SLURM_CONF="$conf" "$(qos_program adafs-qosd)" \
        --config "$base/etc/burst_buffer.conf" --log "$base/log/qosd.log" \
        --pidfile "$base/qos/qosd.pid" || die "adafs-qosd failed, see $base/log/qosd.log"
    for _ in $(seq 50); do [ -S "$base/qos/qosd.sock" ] && return 0; sleep 0.1; done
    die "adafs-qosd did not come up, see $base/log/qosd.log"
}

# Every node idle within 60 s, or stop at once when a daemon is gone.
wait_idle() {
    local want=$nodes deadline=$((SECONDS + 60))
    while [ $SECONDS -lt $deadline ]; do
        check_alive
        local idle
        idle=$(SLURM_CONF=$conf timeout 5 sinfo -h -N -o '%t' 2>/dev/null | grep -c '^idle' || true)
        [ "$idle" = "$want" ] && return 0
        sleep 0.5
    done
    SLURM_CONF=$conf timeout 5 sinfo -N >&2 || true
    die "nodes not idle after 60 s; see $base/log/"
}

# stop_pidfile FILE NAME [FILE NAME]...: SIGTERM (or $STOP_SIGNAL) to each
# daemon at once, then wait for all (10 s, then SIGKILL). In parallel: each
# takes ~2 s.
stop_pidfile() {
    local sig=${STOP_SIGNAL:-TERM}
    local -a files=() names=() pids=()
    local pid
    while [ $# -ge 2 ]; do
        pid=$(pid_of "$1")
        if pid_alive "$pid"; then
            kill -"$sig" "$pid" 2>/dev/null || true
            files+=("$1"); names+=("$2"); pids+=("$pid")
        else
            rm -f "$1"
        fi
        shift 2
    done
    local i left
    for _ in $(seq 100); do
        left=0
        for i in "${!pids[@]}"; do pid_alive "${pids[$i]}" && left=1; done
        [ $left = 0 ] && break
        sleep 0.1
    done
    for i in "${!pids[@]}"; do
        if pid_alive "${pids[$i]}"; then
            log "${names[$i]} (pid ${pids[$i]}) ignored SIG$sig for 10 s; killing"
            kill -KILL "${pids[$i]}" 2>/dev/null || true
        fi
        rm -f "${files[$i]}"
    done
}

# servers_under: "PID ROOT" of every adafsd whose --root lies under this
# cluster's storage. A persistent instance's server outlives its agent (the
# next agent keeps it, doc/lifecycle.md), so the agents' SIGTERM leaves it;
# a job's server left after its agent stopped is a leftover of a crash.
# Found by its arguments, never by name alone: other clusters run here.
servers_under() {
    local d pid args root
    for d in /proc/[0-9]*; do
        pid=${d#/proc/}
        args=$( { tr '\0' '\n' < "$d/cmdline"; } 2>/dev/null) || continue
        [[ $args == *adafsd* ]] || continue
        root=$(sed -n '/^--root$/{n;p;q}' <<<"$args")
        [[ $root == "$base/storage/"* ]] && [[ $(basename "$(head -1 <<<"$args")") == adafsd ]] &&
            pid_alive "$pid" && echo "$pid $root"
    done
    return 0
}

# mounts_under: this cluster's mount points (servers' file systems under
# storage/, users' and FUSE mounts under mnt/), deepest first.
mounts_under() {
    awk -v b="$base/" 'index($5, b) == 1 { print $5 }' /proc/self/mountinfo | sort -r
}

# loops_under: loop devices whose image lies under this cluster's directory.
loops_under() {
    losetup -n -l -O NAME,BACK-FILE 2>/dev/null | awk -v b="$base/" 'index($2, b) == 1 { print $1 }'
}

# stop_leftovers: after the agents, what they leave: persistent instances'
# servers (their data stays: a later start's agents start them again on
# it), then every mount and loop device of this cluster. Each named; one
# that stays is said and the stop goes on (munged still stops), failing.
stop_leftovers() {
    local failed=0
    local -a pids=()
    local pid root m dev
    while read -r pid root; do
        [ -n "$pid" ] || continue
        log "stopping adafsd pid $pid (--root $root)"
        kill -TERM "$pid" 2>/dev/null || true
        pids+=("$pid")
    done < <(servers_under)
    local left
    for _ in $(seq 100); do
        left=0
        for pid in "${pids[@]}"; do pid_alive "$pid" && left=1; done
        [ $left = 0 ] && break
        sleep 0.1
    done
    for pid in "${pids[@]}"; do
        if pid_alive "$pid"; then
            log "adafsd pid $pid ignored SIGTERM for 10 s; killing"
            kill -KILL "$pid" 2>/dev/null || true
        fi
    done
    for _ in $(seq 50); do
        left=0
        for pid in "${pids[@]}"; do pid_alive "$pid" && left=1; done
        [ $left = 0 ] && break
        sleep 0.1
    done
    while read -r m; do
        [ -n "$m" ] || continue
        log "unmounting $m"
        umount "$m" || { log "cannot unmount $m (fuser -vm $m shows who uses it)"; failed=1; }
    done < <(mounts_under)
    while read -r dev; do
        [ -n "$dev" ] || continue
        log "detaching $dev"
        losetup -d "$dev" || { log "cannot detach $dev ($(losetup -n -O BACK-FILE "$dev"))"; failed=1; }
    done < <(loops_under)
    return $failed
}

cmd_start() {
    local clean=0
    [ "${1:-}" = --clean ] && clean=1
    command -v slurmctld >/dev/null || die "slurmctld not installed: run scripts/install-deps.sh"
    ensure_test_user
    check_access
    if [ -f "$conf" ]; then cmd_stop; else stop_leftovers; fi
    # --clean: also the stand-in parallel file system, job outputs and the
    # nodes' storage (persistent instances: slurmctld's state that knew them
    # goes, so an agent keeping one would refuse its name to a new create),
    # so a test never sees an earlier run's files. stop_leftovers unmounted
    # everything: --one-file-system never reaches into a mount.
    if [ "$clean" = 1 ]; then
        rm -rf --one-file-system "${base:?}"/state "${base:?}"/spool "${base:?}"/log "${base:?}"/pfs \
            "${base:?}"/jobs "${base:?}"/qos "${base:?}"/storage "${base:?}"/mnt
    fi
    write_config
    start_munge
    start_agents
    start_ctld
    start_slurmds
    wait_idle
    start_qosd
    log "up: $nodes nodes; clients need: export SLURM_CONF=$conf"
}

cmd_stop() {
    stop_pidfile "$base/qos/qosd.pid" adafs-qosd
    local -a args=()
    for i in $(seq "$nodes"); do args+=("$base/run/slurmd.n$i.pid" "slurmd n$i"); done
    stop_pidfile "${args[@]}"
    stop_pidfile "$base/run/slurmctld.pid" slurmctld
    # Agents stop their servers and wipe their data on SIGINT (SIGTERM
    # would leave them running for the next agent).
    args=()
    for i in $(seq "$nodes"); do args+=("$base/run/agent.n$i.pid" "adafs-agentd n$i"); done
    STOP_SIGNAL=INT stop_pidfile "${args[@]}"
    local left=0
    stop_leftovers || left=1
    stop_pidfile "$munge_dir/munged.pid" munged
    [ $left = 0 ] || die "stop left mounts or loop devices of $base (above)"
}

cmd_status() {
    local rc=0
    for f in "$munge_dir/munged.pid" "$base/run/slurmctld.pid" "$base"/run/slurmd.*.pid "$base"/run/agent.*.pid \
             "$base/qos/qosd.pid"; do
        [ -f "$f" ] || continue
        local pid; pid=$(pid_of "$f")
        if pid_alive "$pid"; then echo "running $(basename "$f" .pid) $pid"; else echo "dead $(basename "$f" .pid)"; rc=1; fi
    done
    return $rc
}

case "${1:-}" in
    start) shift; cmd_start "$@" ;;
    stop) cmd_stop ;;
    restart-ctld) stop_pidfile "$base/run/slurmctld.pid" slurmctld; start_ctld ;;
    kill-ctld) pid=$(pid_of "$base/run/slurmctld.pid"); pid_alive "$pid" && kill -KILL "$pid"; rm -f "$base/run/slurmctld.pid" ;;
    start-ctld) start_ctld ;;
    stop-agent) STOP_SIGNAL=INT stop_pidfile "$base/run/agent.n${2:?node number}.pid" "adafs-agentd n$2" ;;
    restart-agent) stop_pidfile "$base/run/agent.n${2:?node number}.pid" "adafs-agentd n$2"; start_agents ;;
    start-agents) start_agents ;;   # those not running
    start-qosd) start_qosd ;;
    stop-qosd) stop_pidfile "$base/qos/qosd.pid" adafs-qosd ;;
    kill-qosd) pid=$(pid_of "$base/qos/qosd.pid"); pid_alive "$pid" && kill -KILL "$pid"; rm -f "$base/qos/qosd.pid" ;;
    status) cmd_status ;;
    check-access) ensure_test_user; check_access ;;
    env) cat "$base/env" ;;
    *) echo "usage: $0 start [--clean] | stop | restart-ctld | status | env | check-access" >&2; exit 2 ;;
esac
