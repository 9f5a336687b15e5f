#!/bin/bash
# The foundation on the real mini-cluster: the plugin loads, a valid request
# runs on 2 nodes, malformed requests are refused by sbatch naming the token,
# and the harness stops everything it started.
. "${abs_top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
require_cluster

start_cluster

check "slurmctld log shows the plugin's init line" -- \
    grep -q "burst_buffer/adafs: init" "$ADAFS_CLUSTER_DIR/log/slurmctld.log"
check "scontrol show burst answers for adafs" -- \
    bash -c "scontrol show burst | grep -q '^Name=adafs'"

write_job valid.sh >/dev/null <<'JOB'
#!/bin/bash
#SBATCH -N 2 -t 5 -o valid-%j.out
#BB_ADAFS capacity=1G chunk=512K
srun hostname
JOB
id=$(submit valid.sh)
ok $? "valid 2-node job is accepted (job $id)"
check "valid job completes" -- wait_job "$id" COMPLETED 120
check "it ran on 2 nodes" -- test "$(job_field "$id" NumNodes)" = 2
check "its output has two lines from srun" -- \
    test "$(wc -l < "$ADAFS_CLUSTER_DIR/jobs/valid-$id.out")" = 2

rejects() {  # rejects DESCRIPTION TOKEN DIRECTIVE... : sbatch must refuse, naming TOKEN
    local what=$1 token=$2; shift 2
    local out
    out=$( { printf '#!/bin/bash\n#SBATCH -N 1\n'; printf '%s\n' "$@"; echo hostname; } |
           (cd "$ADAFS_CLUSTER_DIR/jobs" && as_user sbatch 2>&1) )
    local status=$?
    if [ $status -ne 0 ] && grep -qF -- "$token" <<<"$out"; then
        ok 0 "$what"
    else
        ok 1 "$what"; diag "sbatch said (exit $status): $out"
    fi
}
rejects "unknown keyword rejected at submit, naming it" "'capacty'" "#BB_ADAFS capacty=1G"
rejects "bad size rejected at submit, naming it" "'12QB'" "#BB_ADAFS capacity=12QB"
rejects "missing '=' rejected at submit, naming it" "'capacity' needs a value" "#BB_ADAFS capacity 10G"
# Persistent instances (issue 25): a bad name, a create on a cluster without
# AdafsPersistentNodes, and one job creating and destroying one name.
rejects "a bad persistent name is refused at submit, naming it" "name=a-b: '-' is not allowed" \
    "#BB_ADAFS use_persistent name=a-b"
rejects "create_persistent without AdafsPersistentNodes is refused, naming the key" \
    "(batch script line 3): create_persistent name=p: this site has no nodes for persistent instances" \
    "#BB_ADAFS create_persistent name=p capacity=1G"
rejects "create and destroy of one name in one job is refused" \
    "line 4): name=p: one job can not both create and destroy" \
    "#BB_ADAFS create_persistent name=p capacity=1G" "#BB_ADAFS destroy_persistent name=p"

out=$(cd "$ADAFS_CLUSTER_DIR/jobs" && as_user sbatch --bb "capacity=1Q" --wrap hostname 2>&1)
status=$?
ok $(( status != 0 ? 0 : 1 )) "malformed --bb rejected at submit"
check "the --bb error names the token and says --bb" -- \
    bash -c "grep -qF \"(--bb line 1): invalid size '1Q'\" <<<\"\$0\"" "$out"

id=$(submit --bb "capacity=2G" --wrap "hostname" -o bb-%j.out)
ok $? "a valid --bb request is accepted"
check "--bb job completes" -- wait_job "$id" COMPLETED 120

as_root=$(cd "$ADAFS_CLUSTER_DIR/jobs" && SLURM_CONF=$SLURM_CONF sbatch --uid=0 --bb "capacity=1G" --wrap hostname 2>&1)
check "root's burst buffer request is refused" -- bash -c "grep -q 'root can not use' <<<\"\$0\"" "$as_root"

pids=$(cat "$ADAFS_CLUSTER_DIR"/run/*.pid $ADAFS_MUNGE_DIR/munged.pid 2>/dev/null)
"$cluster" stop
trap - EXIT
left=""
for p in $pids; do pid_alive "$p" && left="$left $p"; done
ok "$([ -z "$left" ] && echo 0 || echo 1)" "cluster stop leaves none of its processes (left:${left:- none})"
# Other clusters may run beside this one: a slurmd is this cluster's if its
# environment names this cluster's slurm.conf.
ours=""
for p in $(pgrep -x slurmd); do
    tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "SLURM_CONF=$SLURM_CONF" && ours="$ours $p"
done
ok "$([ -z "$ours" ] && echo 0 || echo 1)" "no slurmd of this cluster remains (left:${ours:- none})"
tap_done
