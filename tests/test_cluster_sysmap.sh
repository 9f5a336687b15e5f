#!/bin/bash
# slurmctld with AdafsSysmapDB: a sysmap database made by the sysmap tools
# for the cluster's nodes places each server on its node's best local
# storage, and a job asking capacity= (which sysmap's host lists check at
# submit) runs to completion with slurmctld alive. Node n4 is one sysmap
# has never seen: it keeps AdafsStoragePath. A request larger than the
# partition's nodes hold by sysmap is refused at submit, twice.
. "${abs_top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
require_cluster
start_cluster

storage=$ADAFS_CLUSTER_DIR/storage
db=$ADAFS_CLUSTER_DIR/etc/sysmap.db
tmp=$(mktemp -d)
trap '"$cluster" stop >/dev/null 2>&1; rm -rf "$tmp"' EXIT

# n1-n3 as the NVMe fixture, with its best local file system (/local,
# 3.5 TB available) mounted where the agents keep their storage here.
fix=$tmp/fixture
sh "$abs_top_srcdir/sysmap/tests/make_fixture.sh" "$fix" >/dev/null
sed -i "s| /local | $storage |" "$fix/proc/self/mounts"
sed -i "s|^/local |$storage |" "$fix/sysmap-statvfs"
rm -f "$db"
for n in n1 n2 n3; do
    "$ADAFS_BUILD_DIR/sysmap/sysmap" --db "$db" --root "$fix" --host "$n" >/dev/null ||
        diag "sysmap --db for $n failed"
done
chmod 644 "$db"
check "sysmap recorded n1-n3 with $storage as their best storage" -- \
    bash -c "'$ADAFS_BUILD_DIR/sysmap/sysquery' --db '$db' --deploy -n n1 | grep -q '\"$storage\"'"
mkdir -p "$storage/adafs"

set_bb_conf AdafsSysmapDB "$db" >/dev/null
check "slurmctld restarts with the sysmap database" -- "$cluster" restart-ctld
check "the plugin opened it" -- bash -c "! grep -q 'sysmap database unusable' '$ADAFS_CLUSTER_DIR/log/slurmctld.log'"

job=$(write_job sysmap.sh <<'EOF'
#!/bin/bash
#BB_ADAFS capacity=2G
echo "placed by sysmap" > "$ADAFS_MOUNT/out.txt"
srun -N 2 -n 2 cat "$ADAFS_MOUNT/out.txt"
EOF
)
id=$(submit -N 2 -w n1,n4 -o "$ADAFS_CLUSTER_DIR/jobs/sysmap.out" "$job")
ok $? "a job with capacity= is accepted ($id)"
ctld_alive() { kill -0 "$(cat "$ADAFS_CLUSTER_DIR/run/slurmctld.pid")" && timeout 5 scontrol ping | grep -q 'is UP'; }
check "slurmctld is alive after the submit" -- ctld_alive
if [ -n "$id" ] && ctld_alive; then
    check "it runs to completion" -- wait_job "$id" COMPLETED 120
else
    ok 1 "it runs to completion (no job, or no slurmctld)"
    grep -E 'fatal|error' "$ADAFS_CLUSTER_DIR/log/slurmctld.log" | tail -3 | sed 's/^/# /'
fi
check "slurmctld is alive when it ended" -- ctld_alive
check "both nodes read the file" -- \
    test "$(grep -c 'placed by sysmap' "$ADAFS_CLUSTER_DIR/jobs/sysmap.out" 2>/dev/null)" = 2
check "n1's server kept its data in sysmap's storage ($storage/adafs)" -- \
    grep -q "job $id: server .* root $storage/adafs/" "$ADAFS_CLUSTER_DIR/log/agent.n1.log"
check "n4, unknown to sysmap, used AdafsStoragePath, and the log says so" -- \
    grep -q "sysmap does not know node n4" "$ADAFS_CLUSTER_DIR/log/slurmctld.log"
check "nothing is left on the nodes" -- wait_clean 30

# A request larger than the partition's nodes hold by sysmap (n1-n3, 3.5 TB
# each; n4 unknown) is refused at submit, the second time from the kept
# totals (slurm-plugin/fit_cache.h). A node may give 100T here, so that
# limit does not refuse it first.
set_bb_conf AdafsNodeCapacity 100T >/dev/null
big=$(write_job big.sh <<'EOF'
#!/bin/bash
#BB_ADAFS capacity=20T
true
EOF
)
for try in first second; do
    out=$(submit -N 2 "$big" 2>&1)
    status=$?
    [ "$status" != 0 ] && grep -q "capacity=20T does not fit: the nodes of partition debug" <<<"$out"
    ok $? "the $try 20T request is refused at submit by the partition's sysmap totals: ${out##*: the nodes of }"
done
check "slurmctld is alive after them" -- ctld_alive
set_bb_conf AdafsNodeCapacity 4G >/dev/null
tap_done
