#!/bin/bash
# A job's file-system server (adafsd) killed while its 2 stagers copy, side
# by side on two jobs (about 40 s): during a stage-in on n1+n2 and during a
# stage-out on n3+n4 (1 MB/s per node, so both are under way). Each stage
# ends within seconds of the kill (not after the stagers' 60 s peer
# timeout), its reason naming the node, the server, its address and its
# node, the path (a file being copied, or the workers' mailbox when no copy
# had failed yet) and EIO; the stage-out is not kept as "fix the destination" (the
# job's own file system broke: torn down, saying what was lost and what the
# user can do), and nothing is left on any node.
. "${abs_top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
require_cluster

start_cluster
set_bb_conf AdafsStageOutRetry 2
as_user_sh "rm -rf $pfs/sf && mkdir -p $pfs/sf/in $pfs/sf/out &&
    for i in \$(seq 1 24); do head -c 500000 /dev/urandom > $pfs/sf/in/f\$i; done"
system_comment() { scontrol show job "$1" 2>/dev/null | sed -n 's/^ *SystemComment=//p'; }
now() { date +%s; }

write_job in.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 2 -w n1,n2 -t 5
#BB_ADAFS capacity=1G max_bw=1M
#BB_ADAFS stage_in source=$pfs/sf/in destination=in type=directory
echo should not run
JOB
write_job out.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 2 -w n3,n4 -t 5
#BB_ADAFS capacity=1G max_bw=1M
#BB_ADAFS stage_out source=res destination=$pfs/sf/out/%j type=directory
mkdir \$ADAFS_MOUNT/res
for i in \$(seq 1 24); do cp $pfs/sf/in/f\$i \$ADAFS_MOUNT/res/; done
JOB
in=$(submit in.sh)
out=$(submit out.sh)

# kill_server ID NODE: SIGKILL the job's adafsd on NODE; prints when.
kill_server() {
    local pid
    pid=$(cat "$ADAFS_CLUSTER_DIR/storage/$2/job.$1.pid" 2>/dev/null)
    [ -n "$pid" ] && kill -KILL "$pid" && now
}
check "stage-in under way" -- wait_phase "$in" staging_in 60
check "stage-out under way" -- wait_phase "$out" staging_out 60
sleep 1
t_in=$(kill_server "$in" n2)
t_out=$(kill_server "$out" n4)
check "n2's server of the stage-in killed" -- test -n "$t_in"
check "n4's server of the stage-out killed" -- test -n "$t_out"

# Both at once: when the stage-in's reason says it failed, when the
# stage-out's job ends.
done_in="" done_out=""
for _ in $(seq 60); do
    [ -z "$done_in" ] && scontrol show job "$in" | grep -q "Reason=.*Input/output" && done_in=$(now)
    [ -z "$done_out" ] && [ "$(job_state "$out")" = COMPLETED ] && done_out=$(now)
    [ -n "$done_in" ] && [ -n "$done_out" ] && break
    sleep 0.5
done
check "stage-in: failed within a bounded time ($(( ${done_in:-999} - t_in )) s after the kill, not the 60 s peer timeout)" -- \
    test -n "$done_in" -a $(( ${done_in:-999} - t_in )) -lt 20
check "stage-out: the job ends, not kept, within a bounded time ($(( ${done_out:-999} - t_out )) s after the kill)" -- \
    test -n "$done_out" -a $(( ${done_out:-999} - t_out )) -lt 20
# The server as libadafs names it ("server K (HOST:PORT)" or "server K:
# cannot connect to HOST:PORT"), EIO, then the node it ran on.
fsfail="the job's file system: server [0-9]+[: ][^)]*:[0-9]+.*Input/output error \\(that server ran on node n[0-9]\\)"
check "stage-in: its reason names the node, the path, the server (its address and node) and EIO" -- \
    wait_reason "$in" "stage.in source=$pfs/sf/in on node n[12]: $pfs/sf/in/f[0-9]+: .*$fsfail" 5
bbstat_error() { scontrol show bbstat "$1" | grep -qE "Error=.*$fsfail"; }
check "stage-in: bbstat shows the same error" -- bbstat_error "$in"
comment=$(system_comment "$out")
check "stage-out: its SystemComment names the line, node, server and EIO ($comment)" -- \
    grep -qE "stage_out source=res destination=$pfs/sf/out/$out on node n[34]: (/res/f[0-9]+|/\.adafs-stage/[^ ]+): .*$fsfail" <<<"$comment"
check "stage-out: and says it is not the destination's fault and what to do" -- \
    bash -c "grep -q 'not the destination' <<<\"\$0\" && grep -q 'run the job again' <<<\"\$0\" && ! grep -q 'fix the destination' <<<\"\$0\"" "$comment"
check "no node was drained" -- bash -c "! sinfo -h -o %t | grep -q drain"
scancel "$in"
check "nothing left on any node" -- wait_clean 60
tap_done
