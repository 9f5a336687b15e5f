#!/bin/bash
# A persistent instance's whole life on the mini-cluster (issue 25, point
# 7): adafs-test creates it in one job (shared with a group), on two
# nodes whose servers exchange usage under the servers' key (issue 25's
# fair sharing across servers), and writes to it; slurmctld is killed -9
# and the agents restarted (one killed -9, one stopped), and its data is
# still there; two later jobs at once, one per
# member of the group, read it (the owner's also stages a file in and one
# out through it, named by its variable, beside a file system of its own;
# the member's has one too, and copies between the two, and stages a file
# in and one out through proj); a third user's job, and its stage line into
# proj, are refused at submit,
# and the instance file copied to that user, with the client library
# pointed at the servers, gives no access either; a destroy is refused
# while a job uses it, then goes through, and its storage is wiped. Then
# adafs-persist: root creates one for a user, lists and destroys it.
# Each instance's servers run its own fair-share policy (fair_share=), not
# the agents' --fair-policy (user-fair here), also after a restart.
. "${abs_top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
require_cluster

group=adafs-proj member=adafs-test2 outsider=adafs-persist3
getent group "$group" >/dev/null || groupadd "$group"
for u in "$test_user" "$member" "$outsider"; do
    id -u "$u" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$u"
done
# Before slurmctld starts: its group cache then knows the members.
for u in "$test_user" "$member"; do usermod -aG "$group" "$u"; done
preload=$ADAFS_BUILD_DIR/agent/.libs/libadafs_preload.so
start_cluster
set_bb_conf AdafsPersistentNodes n3,n4
chmod 1777 "$ADAFS_CLUSTER_DIR/jobs" "$pfs"
submit_as() {  # submit_as USER SCRIPT: prints the job id, or sbatch's refusal on stderr
    (cd "$ADAFS_CLUSTER_DIR/jobs" &&
     runuser -u "$1" -- env SLURM_CONF="$SLURM_CONF" sbatch --parsable "$2")
}
storage_of() { find "$ADAFS_CLUSTER_DIR/storage" -path '*/persistent/*' 2>/dev/null; }
servers() { pgrep -f "^[^ ]*adafsd .*$ADAFS_CLUSTER_DIR/.*persistent" | tr '\n' ' '; }
server_of() {  # server_of NAME [NODE]: the pid of instance NAME's server (on NODE)
    pgrep -f "^[^ ]*adafsd .*--root $ADAFS_CLUSTER_DIR/storage/${2:-n[0-9]*}/persistent/$1( |\$)" | head -1
}
policy_of() {  # policy_of NAME [NODE]: the --fair-policy its server runs (none: "")
    local pid; pid=$(server_of "$@")
    [ -n "$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | sed -n 's/.*--fair-policy \([^ ]*\).*/\1/p'
}
marker="persistent data $RANDOM$RANDOM"

# 1. Created by a job of adafs-test, on n3 and n4 (outside the job's allocation),
# mounted by that job, which writes to it.
write_job create.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 1 -w n1 -t 5 -o create-%j.out
#BB_ADAFS create_persistent name=proj capacity=1G nodes=2 access=group:$group fair_share=user-then-size
echo "\$ADAFS_PERSISTENT_proj" > $pfs/create.mount
echo "$marker" > \$ADAFS_PERSISTENT_proj/data.txt && head -c 1048576 /dev/urandom > \$ADAFS_PERSISTENT_proj/big.bin
md5sum < \$ADAFS_PERSISTENT_proj/big.bin > $pfs/create.sum
JOB
id=$(submit_as "$test_user" create.sh)
check "the creating job completes" -- wait_job "$id" COMPLETED 120
check "it saw \$ADAFS_PERSISTENT_proj ($(cat "$pfs/create.mount" 2>/dev/null))" -- \
    test -s "$pfs/create.mount"
check "and wrote its data there" -- test -s "$pfs/create.sum"
burst=$(scontrol show burst)
check "scontrol show burst lists proj, its owner and capacity" -- \
    grep -qE "Name=proj .*Size=1(\.0+)?G.*UserID=$test_user" <<<"$burst"
check "and the pool's TotalSpace and UsedSpace" -- \
    grep -qE "TotalSpace=[1-9].*UsedSpace=[1-9]" <<<"$burst"
grep -E 'Name=proj|TotalSpace' <<<"$burst" | sed 's/^ */# /'
check "scontrol show bbstat lists it ready, shared with the group" -- \
    bash -c "scontrol show bbstat | grep -qE 'Name=proj Owner=$test_user.* Access=group:$group .*State=ready CreatedBy=$id'"
check "its servers run on n3 and n4 ($(servers))" -- test "$(wc -w <<<"$(servers)")" = 2
check "bbstat and show burst give its policy, fair_share=user-then-size" -- bash -c \
    "scontrol show bbstat | grep -q 'Name=proj .*FairShare=user-then-size ' &&
     scontrol show burst | grep 'Name=proj ' | grep -q 'fair_share=user-then-size'"
check "its servers run it, not the agents' user-fair ($(policy_of proj n3), $(policy_of proj n4))" -- \
    test "$(policy_of proj n3) $(policy_of proj n4)" = "user-then-size user-then-size"
log=$(readlink "/proc/$(server_of proj n3)/fd/2")
check "as its log says (${log##*/})" -- \
    bash -c "grep 'listening on' '$log' | tail -1 | grep -q ', fair sharing user-then-size'"
# The agents run persistent instances' servers under a fair-share policy
# (cluster.sh: --fair-policy): with the key START carried, beside the
# secret, they tell each other what each user was served.
exchanging() {  # both servers count the other's reports (logged when that changes)
    local _
    for _ in $(seq 50); do
        [ "$(cat "$ADAFS_CLUSTER_DIR"/adafs-log/adafsd.job*.n[34].log 2>/dev/null |
             grep -c 'the reports of 1 of the 1 other servers count')" -ge 2 ] && return 0
        sleep 0.2
    done
    return 1
}
check "its two servers exchange usage under the servers' key" -- exchanging

# 2. slurmctld killed -9, the agents restarted: n4's killed -9, then stopped.
"$cluster" kill-ctld
"$cluster" start-ctld
for _ in $(seq 60); do scontrol ping >/dev/null 2>&1 && break; sleep 0.5; done
kill -KILL "$(cat "$ADAFS_CLUSTER_DIR/run/agent.n4.pid")" 2>/dev/null
"$cluster" start-agents >/dev/null
"$cluster" stop-agent 4 >/dev/null
# Its server killed while no agent runs there: the agent that starts
# starts it again from its record, policy included.
was=$(server_of proj n4)
[ -n "$was" ] && kill -KILL "$was"
for _ in $(seq 50); do [ -z "$(server_of proj n4)" ] && break; sleep 0.1; done
"$cluster" start-agents >/dev/null
check "after slurmctld's kill -9, proj is still listed" -- \
    bash -c "scontrol show burst | grep -q 'Name=proj '"
check "after n4's agent was killed and stopped, proj's storage is there" -- test -n "$(storage_of)"
for _ in $(seq 50); do [ -n "$(server_of proj n4)" ] && break; sleep 0.2; done
now=$(server_of proj n4)
check "n4's new agent restarted its server killed meanwhile ($was -> $now), with the instance's policy from its record ($(policy_of proj n4))" -- \
    test -n "$was" -a -n "$now" -a "$now" != "$was" -a "$(policy_of proj n4)" = user-then-size

# 3. Two jobs at once, one of the owner and one of a member of its group,
# read it; each stays until both have read (so they overlap).
write_job use.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 1 -t 5 -o use-%j.out
#BB_ADAFS use_persistent name=proj
{ cat \$ADAFS_PERSISTENT_proj/data.txt; md5sum < \$ADAFS_PERSISTENT_proj/big.bin; } > $pfs/use.\$(id -un)
[ -e \$ADAFS_PERSISTENT_proj/staged.txt ] && cat \$ADAFS_PERSISTENT_proj/staged.txt > $pfs/use.staged
for _ in \$(seq 600); do [ -e $pfs/use.go ] && break; sleep 0.2; done
JOB
# The owner's also stages a file in and one out through the instance, a
# further mount beside its own file system: its stage lines name it.
sed "3a #BB_ADAFS capacity=64M access=preload\\
#BB_ADAFS stage_in source=$pfs/in.txt destination=\$ADAFS_PERSISTENT_proj/staged.txt type=file\\
#BB_ADAFS stage_out source=\$ADAFS_PERSISTENT_proj/data.txt destination=$pfs/out.%j.txt type=file" \
    "$ADAFS_CLUSTER_DIR/jobs/use.sh" | write_job use-stage.sh >/dev/null
# The member's has a file system of its own too: one process reaches both
# (cp between them; a rename from one to the other is EXDEV). It stages a
# file of its own into proj and one it wrote there out: its stager proves
# the member's uid to proj's servers with munge, as its processes do.
write_job use-own.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 1 -t 5 -o use-%j.out
#BB_ADAFS capacity=64M access=preload
#BB_ADAFS use_persistent name=proj
#BB_ADAFS stage_in source=$pfs/member-in.txt destination=\$ADAFS_PERSISTENT_proj/member-in.txt type=file
#BB_ADAFS stage_out source=\$ADAFS_PERSISTENT_proj/member-out.txt destination=$pfs/member-out.%j.txt type=file
echo "\$ADAFS_MOUNT \$ADAFS_PERSISTENT_proj \$ADAFS_MOUNTS" > $pfs/use.mounts
{ cat \$ADAFS_PERSISTENT_proj/member-in.txt; stat -c %U \$ADAFS_PERSISTENT_proj/member-in.txt; } > $pfs/use.member-in
echo "member $marker" > \$ADAFS_PERSISTENT_proj/member-out.txt
cp \$ADAFS_PERSISTENT_proj/big.bin \$ADAFS_MOUNT/copy.bin && md5sum < \$ADAFS_MOUNT/copy.bin > $pfs/use.copy
/usr/bin/python3 -c 'import os, sys; os.rename(sys.argv[1], sys.argv[2])' \
    \$ADAFS_MOUNT/copy.bin \$ADAFS_PERSISTENT_proj/moved.bin 2> $pfs/use.exdev
{ cat \$ADAFS_PERSISTENT_proj/data.txt; md5sum < \$ADAFS_PERSISTENT_proj/big.bin; } > $pfs/use.\$(id -un)
for _ in \$(seq 600); do [ -e $pfs/use.go ] && break; sleep 0.2; done
JOB
echo "staged $marker" > "$pfs/in.txt"
# The member's own, readable by no one else.
rm -f "$pfs"/use.* "$pfs"/member-*
echo "member's $marker" | install -m 600 -o "$member" /dev/stdin "$pfs/member-in.txt"
u1=$(submit_as "$test_user" use-stage.sh)
u2=$(submit_as "$member" use-own.sh)
check "two jobs use it at once ($u1 of $test_user, $u2 of $member)" -- \
    bash -c "for _ in \$(seq 240); do [ -s $pfs/use.$test_user ] && [ -s $pfs/use.$member ] && exit 0; sleep 0.5; done; exit 1"
for u in "$test_user" "$member"; do
    check "$u's job reads the data written before the restarts" -- \
        bash -c "head -1 $pfs/use.$u | grep -qx '$marker' && tail -1 $pfs/use.$u | cmp -s - $pfs/create.sum"
done
for _ in $(seq 60); do [ -s "$pfs/use.mounts" ] && break; sleep 0.5; done
check "$member's job has its own file system and proj ($(cat "$pfs/use.mounts" 2>/dev/null))" -- \
    grep -qE "^(/[^ ]*)/$u2 \\1/$u2\\.proj \\1/$u2\\.proj=\\1/\\.job\\.$u2\\.proj\\.instance\$" "$pfs/use.mounts"
check "and copied proj's file into its own, intact" -- cmp -s "$pfs/use.copy" "$pfs/create.sum"
check "a rename from its own into proj is EXDEV ($(tail -1 "$pfs/use.exdev" 2>/dev/null))" -- \
    grep -q "Invalid cross-device link" "$pfs/use.exdev"

# 4. A third user: refused at submit, and with the instance file in hand.
refusal=$(submit_as "$outsider" use.sh 2>&1)
check "$outsider's job is refused at submit ($refusal)" -- \
    grep -q "use_persistent name=proj: owned by $test_user, shared with group $group: not shared" <<<"$refusal"
# Its stage lines into proj: with the use_persistent line, refused as the
# use; without it, for naming an instance the job does not mount.
write_job outsider-stage.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 1 -t 5 -o use-%j.out
#BB_ADAFS capacity=64M access=preload
#BB_ADAFS stage_in source=$pfs/in.txt destination=\$ADAFS_PERSISTENT_proj/intruder.txt type=file
true
JOB
refusal=$(submit_as "$outsider" outsider-stage.sh 2>&1)
check "$outsider's stage_in into proj is refused at submit ($refusal)" -- \
    grep -q "stage_in destination=\$ADAFS_PERSISTENT_proj/intruder.txt: the job mounts no instance proj" <<<"$refusal"
sed '3a #BB_ADAFS use_persistent name=proj' "$ADAFS_CLUSTER_DIR/jobs/outsider-stage.sh" |
    write_job outsider-use-stage.sh >/dev/null
refusal=$(submit_as "$outsider" outsider-use-stage.sh 2>&1)
check "  and with a use_persistent line too ($refusal)" -- \
    grep -q "use_persistent name=proj: owned by $test_user, shared with group $group: not shared" <<<"$refusal"
leak=$(runuser -u "$outsider" -- mktemp /tmp/persist-leak.XXXXXX)
cat "$ADAFS_CLUSTER_DIR/mnt/.job.$u1.proj.instance" > "$leak"
mount=$(sed -n 's/^mount=//p' "$leak")
# With the cluster's munged, as the jobs have it: refused for who they are.
as_outsider() {
    runuser -u "$outsider" -- env ADAFS_INSTANCE="$leak" ADAFS_MOUNT="$mount" \
        ADAFS_MUNGE_SOCKET="$munge_socket" LD_PRELOAD="$preload" "$@"
}
got=$(as_outsider cat "$mount/data.txt" 2>&1)
check "$outsider with a copy of the instance file is refused by the servers ($got)" -- \
    bash -c "! grep -q '$marker' <<<\"\$1\" && grep -q 'refused access to uid' <<<\"\$1\"" _ "$got"
as_outsider bash -c "echo intruder > $mount/intruder.txt" 2>/dev/null
got=$(runuser -u "$test_user" -- env ADAFS_INSTANCE="$ADAFS_CLUSTER_DIR/mnt/.job.$u1.proj.instance" \
      ADAFS_MOUNT="$mount" LD_PRELOAD="$preload" ls "$mount" 2>&1)
check "nor writes a file into it ($(paste -sd ' ' <<<"$got"))" -- \
    bash -c "! grep -q intruder <<<\"\$1\"" _ "$got"
rm -f "$leak"

# 5. Destroy: refused while a job uses it (the job held with the reason),
# then, once released after the users ended, it goes.
write_job destroy.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 1 -t 5 -o destroy-%j.out
#BB_ADAFS destroy_persistent name=proj
true
JOB
d=$(submit_as "$test_user" destroy.sh)
check "a destroy while jobs use it is held, naming them" -- wait_reason "$d" "in use by job\(s\) .*$u1" 60
# The users mount FUSE file systems of their own on their jobs' mount
# points (fusermount3 would, on directories they own; root makes them
# here, user_id= the user, served by nobody): on the member's further one
# (mnt/N.proj) and inside it, and inside the owner's own (mnt/N, access=
# preload: a plain directory). Root cannot lstat through them (EACCES) and
# the wipe does not cross them, so teardown once left the mount points
# (and the mounts) behind.
further=$ADAFS_CLUSTER_DIR/mnt/$u2.proj first=$ADAFS_CLUSTER_DIR/mnt/$u1
mounts_under() { awk -v d="$1" '$5 == d || index($5, d "/") == 1' /proc/self/mountinfo | wc -l; }
usermount() {  # usermount USER DIR
    python3 "$abs_top_srcdir/tests/cluster/usermount.py" "$2" "$(id -u "$1")" 2>&1
}
out="$(runuser -u "$test_user" -- mkdir "$first/sub" 2>&1 && usermount "$test_user" "$first/sub")"
out="$out, $(runuser -u "$member" -- mkdir "$further/sub" 2>&1 && usermount "$member" "$further/sub")"
out="$out, $(usermount "$member" "$further")"
check "the users mount on their jobs' mount points ($out; $(mounts_under "$first") and $(mounts_under "$further") mounts)" -- \
    test "$out" = "mounted, mounted, mounted" -a "$(mounts_under "$first")" = 1 -a "$(mounts_under "$further")" = 2
touch "$pfs/use.go"
check "the jobs that use it complete" -- wait_job "$u1" COMPLETED 120
wait_job "$u2" COMPLETED 120 >/dev/null
# test -e of a mount root cannot answer (EACCES is 'absent'): ls the prefix.
left() { ls -a "$ADAFS_CLUSTER_DIR/mnt" | grep -cxE "$u1|$u2\.proj|\.job\.$u2\.proj\.instance"; }
for _ in $(seq 60); do
    [ "$(left)" = 0 ] && [ "$(mounts_under "$further")" = 0 ] && [ "$(mounts_under "$first")" = 0 ] && break
    sleep 0.5
done
check "the jobs' ends took their mount points and the users' mounts off the node ($(left) entries, $(mounts_under "$first") + $(mounts_under "$further") mounts left)" -- \
    test "$(left)" = 0 -a "$(mounts_under "$further")" = 0 -a "$(mounts_under "$first")" = 0
check "the owner's job staged a file into the instance" -- grep -qx "staged $marker" "$pfs/use.staged"
check "and staged one out of it" -- bash -c "grep -qx '$marker' $pfs/out.$u1.txt"
check "$member's job staged its file into proj, intact, owned by $member ($(paste -sd ' ' "$pfs/use.member-in" 2>/dev/null))" -- \
    bash -c "head -1 $pfs/use.member-in | grep -qx \"member's $marker\" && tail -1 $pfs/use.member-in | grep -qx $member"
check "and one it wrote there out of it, intact, owned by $member" -- \
    bash -c "grep -qx 'member $marker' $pfs/member-out.$u2.txt && test \"\$(stat -c %U $pfs/member-out.$u2.txt)\" = $member"
check "proj outlived them" -- bash -c "scontrol show burst | grep -q 'Name=proj '"
# Slurm calls a job COMPLETED before the plugin's record of it has torn down
# (it may still stage out of proj): until then the destroy would be held again.
for _ in $(seq 120); do
    scontrol show bbstat "$u1" | grep -q "Phase=complete" &&
        scontrol show bbstat "$u2" | grep -q "Phase=complete" && break
    sleep 0.5
done
scontrol release "$d"
check "released, the destroying job completes" -- wait_job "$d" COMPLETED 120
check "proj is gone from scontrol show burst" -- bash -c "! scontrol show burst | grep -q 'Name=proj '"
check "its server stopped" -- bash -c "for _ in \$(seq 60); do [ -z \"\$(pgrep -f '^[^ ]*adafsd .*$ADAFS_CLUSTER_DIR/.*persistent')\" ] && exit 0; sleep 0.5; done; exit 1"
check "its storage is wiped ($(storage_of | head -3 | paste -sd ' '))" -- test -z "$(storage_of)"

# 6. The administrators' command (adafs-persist): root creates one for a
# user and destroys it, through a job of that user; a user may only list.
persist=$ADAFS_BUILD_DIR/slurm-plugin/adafs-persist
got=$(runuser -u "$test_user" -- env SLURM_CONF="$SLURM_CONF" "$persist" create name=adm capacity=1G --owner "$test_user" 2>&1)
check "adafs-persist create is refused to a user ($got)" -- grep -q "only root may create" <<<"$got"
got=$("$persist" create name=adm capacity=1G nodes=1 access=group:$group fair_share=off --owner "$member" 2>&1)
check "root creates adm for $member ($(tail -1 <<<"$got"))" -- \
    grep -qE "^adm +$member +1G " <<<"$got"
check "with fair_share=off: its server shares nothing, whatever the agents' ($(policy_of adm))" -- \
    test "$(policy_of adm)" = off
check "scontrol show burst lists it as $member's" -- \
    bash -c "scontrol show burst | grep -qE 'Name=adm .*UserID=$member'"
got=$(runuser -u "$outsider" -- env SLURM_CONF="$SLURM_CONF" "$persist" list 2>&1)
check "anyone lists it, with its policy ($(grep '^adm' <<<"$got"))" -- \
    grep -qE "^adm +$member +1G +[^ ]+ +off " <<<"$got"
got=$("$persist" create name=adm capacity=1G --owner "$member" 2>&1)
check "a second create of adm is refused ($got)" -- grep -q "adm exists already" <<<"$got"
got=$("$persist" create name=adm2 capacity=1G access=group:nosuchgroup --owner "$member" 2>&1)
check "the plugin's refusal at submit reaches root ($(paste -sd ' ' <<<"$got"))" -- \
    grep -q "access=group:nosuchgroup: no such group" <<<"$got"
# A job the plugin holds is reported with its reason and cancelled: n3
# has a record its agent did not take at start (planted), so the START
# of that name is refused rather than start it afresh over its data.
held=$ADAFS_CLUSTER_DIR/storage/n3/persistent/held
install -d -m 700 -o "$member" "$held" && echo id=garbage > "$held.record"
got=$("$persist" create name=held capacity=1G nodes=1 --owner "$member" 2>&1)
status=$?
hid=$(sed -n 's/^adafs-persist: job \([0-9]*\),.*/\1/p' <<<"$got")
check "a held create is reported with the plugin's reason, exit 1 ($(grep held: <<<"$got"))" -- \
    bash -c "[ $status = 1 ] && grep -q 'job $hid was held: .*held.record is there but was not taken' <<<\"\$1\"" _ "$got"
check "  and its job cancelled" -- \
    bash -c "grep -q 'job $hid cancelled' <<<\"\$1\" && scontrol show job $hid | grep -q JobState=CANCELLED" _ "$got"
rm -rf "$held" "$held.record"
got=$("$persist" destroy name=adm 2>&1)
check "root destroys it ($(tail -1 <<<"$got"))" -- grep -q "destroyed adm" <<<"$got"
check "it is gone, its storage wiped" -- \
    bash -c "! scontrol show burst | grep -q 'Name=adm ' && test -z \"\$(find $ADAFS_CLUSTER_DIR/storage -path '*/persistent/adm*')\""

# 7. The harness: stop leaves nothing of this cluster, a persistent
# instance's server (which outlives its agent) and its file system included.
got=$("$persist" create name=kept capacity=1G nodes=1 --owner "$member" 2>&1)
check "root creates kept ($(tail -1 <<<"$got"))" -- test -n "$(server_of kept)"
ours_left() {  # this cluster's processes, mounts and loop devices
    local d
    for d in /proc/[0-9]*; do
        { tr '\0' ' ' < "$d/cmdline"; } 2>/dev/null | grep -qF "$ADAFS_CLUSTER_DIR/" && echo "pid ${d#/proc/}"
    done
    awk -v b="$ADAFS_CLUSTER_DIR/" 'index($5, b) == 1 { print "mount " $5 }' /proc/self/mountinfo
    losetup -n -l -O NAME,BACK-FILE | awk -v b="$ADAFS_CLUSTER_DIR/" 'index($2, b) == 1 { print "loop " $1 }'
}
"$cluster" stop 2>/dev/null
trap - EXIT
remains=$(ours_left | paste -sd ' ')
check "cluster stop leaves none of its processes, mounts or loop devices (left: ${remains:-none})" -- \
    test -z "$remains"
tap_done
