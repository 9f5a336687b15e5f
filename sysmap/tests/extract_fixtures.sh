#!/bin/sh
# Every extractor against the fixture tree node-nvme: NVMe disks on NUMA
# nodes 0 and 1, SATA SSDs and an HDD, tmpfs, Lustre and NFS mounts, an
# InfiniBand HCA, two NUMA nodes (hwloc XML); then the error paths.
. "${srcdir:-.}/tests/lib.sh"

run() { # run EXTRACTOR JQ-FILTER: one value from the fixture's report
    ./sysmap --print --root "$FIX" --host node1 -e "$1" | jq -r ".extractors.$1 | $2"
}

is "$(run cpu .packages)" 2 "cpu: 2 packages"
is "$(run cpu .cores)/$(run cpu .pus)" 8/16 "cpu: 8 cores, 16 PUs"
is "$(run cpu '.numa_nodes | length')" 2 "cpu: 2 NUMA nodes"
is "$(run cpu '.numa_nodes[1] | "\(.os_index) \(.memory_bytes) \(.cpus)"')" "1 68719476736 8-15" \
   "cpu: NUMA node 1 has 64 GiB and PUs 8-15"
is "$(run cpu '.caches[] | select(.level == 3) | "\(.size_bytes) x\(.count)"')" "33554432 x2" \
   "cpu: two 32 MiB L3 caches"

dev() { run block ".devices[] | select(.name == \"$1\") | $2"; }
is "$(dev nvme0n1 '"\(.rotational) \(.numa_node) \(.size_bytes) \(.scheduler)"')" \
   "false 0 3840755982336 none" "block: nvme0n1 SSD on NUMA 0, size in bytes, scheduler"
is "$(dev nvme1n1 .numa_node)" 1 "block: nvme1n1 on NUMA node 1 (from hwloc's OS device; sysfs says -1)"
is "$(dev sdc .numa_node)" 0 "block: sdc on NUMA node 0 (hwloc does not list it: from sysfs)"
is "$(dev nvme0n1 .model)" "SAMSUNG MZQL23T8HCLS-00A07" "block: NVMe model via the controller"
is "$(dev sdb '"\(.rotational) \(.model) \(.transport) \(.scheduler)"')" \
   "true ST8000NM000A scsi mq-deadline" "block: SATA HDD is rotational"
is "$(run block '[.devices[].name] | join(",")')" "nvme0n1,nvme1n1,sda,sdb,sdc" "block: all five disks"

mnt() { run storage ".mounts[] | select(.mountpoint == \"$1\") | $2"; }
is "$(mnt /local '"\(.kind) \(.device) \(.fstype) \(.available_bytes) \(.size_bytes)"')" \
   "local nvme0n1 xfs 3500000000000 3840755982336" "storage: /local on nvme0n1 (partition) with f_bavail"
is "$(mnt /scratch .device)" nvme1n1 "storage: /scratch on a whole disk"
is "$(mnt /lustre '"\(.kind) \(.fstype) \(.device)"')" "remote lustre null" "storage: Lustre is remote"
is "$(mnt /home '"\(.kind) \(.fstype)"')" "remote nfs4" "storage: NFS is remote"
is "$(mnt /dev/shm '"\(.kind) \(.available_bytes)"')" "memory 270582939648" "storage: tmpfs is memory"
is "$(mnt /ssd-ro .read_only)" true "storage: ro option seen"
is "$(mnt '/mnt/old disk' .device)" sdb "storage: escaped mount point decoded"
is "$(run storage '[.mounts[] | select(.fstype == "proc" or .fstype == "sysfs")] | length')" 0 \
   "storage: kernel pseudo file systems left out"
# A user's FUSE mount (fusermount3 with fsname=/dev/nvme0n1p1 and
# allow_other, answering any size): not the node's storage, never asked.
is "$(mnt /home/mallory/bb .mountpoint)" "" "storage: a user's FUSE mount left out"

is "$(run pci '[.devices[].address] | join(",")')" \
   "0000:00:02.0,0000:00:03.0,0000:00:17.0,0000:80:02.0,0000:80:03.0" "pci: five devices"
is "$(run pci '.devices[] | select(.address == "0000:80:02.0") | .numa_node')" null "pci: numa_node -1 is null"
is "$(run pci '.devices[] | select(.address == "0000:80:03.0") | "\(.class) \(.vendor) \(.numa_node)"')" \
   "0x020700 0x15b3 1" "pci: HCA class, vendor, NUMA node"

nic() { run net ".interfaces[] | select(.name == \"$1\") | $2"; }
is "$(nic eth0 '"\(.type) \(.speed_mbps) \(.numa_node) \(.mtu) \(.device)"')" \
   "ether 25000 0 9000 0000:00:03.0" "net: eth0 type, speed, NUMA node, device"
is "$(nic ib0 '"\(.type) \(.speed_mbps) \(.numa_node)"')" "infiniband 100000 1" "net: ib0 on NUMA node 1"
is "$(nic lo '"\(.type) \(.numa_node) \(.speed_mbps)"')" "loopback null null" "net: lo has no device"

is "$(run ib '.hcas[0] | "\(.name) \(.numa_node) \(.node_guid)"')" \
   "mlx5_0 1 0c42:a103:005e:7a10" "ib: HCA, NUMA node, GUID"
is "$(run ib '.hcas[0].ports[0] | "\(.port) \(.state) \(.phys_state) \(.lid) \(.sm_lid) \(.rate)"')" \
   "1 ACTIVE LinkUp 18 1 100 Gb/sec (4X EDR)" "ib: port state, rate, LID"

is "$(run kernel .release)" 6.1.0-18-amd64 "kernel: release"
is "$(run kernel '.modules | join(",")')" "ahci,ib_core,lustre,mlx5_ib,nfsv4,nvme" "kernel: modules, sorted"

# The whole report into a database, then the deployment view.
./sysmap --db "$TMP/fx.db" --root "$FIX" --host node1 --time 1000
is "$?" 0 "sysmap --db stores the fixture report"
view=$(./sysquery --db "$TMP/fx.db" -n node1 --deploy --compact)
is "$(echo "$view" | jq -r '.hosts[0].deploy | "\(.storage_path) \(.device) \(.available_bytes) \(.storage_numa_node) \(.network_adapter) \(.network_numa_node)"')" \
   "/local nvme0n1 3500000000000 0 mlx5_0 1" \
   "deploy: /local (not the bigger HDD, read-only SSD, tmpfs, Lustre or a user's FUSE mount on its device), NUMA 0, HCA on NUMA 1"

# Error paths: each names what was wrong and where.
mkdir -p "$TMP/empty"
out=$(./sysmap --print --root "$TMP/empty" --host x -e storage 2>&1 >/dev/null); rc=$?
is "$rc:$out" "1:sysmap: storage: cannot read $TMP/empty/proc/self/mounts: No such file or directory" \
   "storage without /proc/self/mounts"
out=$(./sysmap --print --root "$TMP/empty" --host x -e kernel 2>&1 >/dev/null)
is "$out" "sysmap: kernel: cannot read $TMP/empty/proc/sys/kernel/osrelease: No such file or directory" \
   "kernel without osrelease"
out=$(./sysmap --print --root "$TMP/empty" --host x -e block 2>&1 >/dev/null)
is "$out" "sysmap: block: cannot list $TMP/empty/sys/block: No such file or directory" "block without /sys/block"
out=$(./sysmap --print --root "$TMP/empty" --host x -e net 2>&1 >/dev/null)
is "$out" "sysmap: net: cannot list $TMP/empty/sys/class/net: No such file or directory" "net without /sys/class/net"
out=$(./sysmap --print --root "$TMP/empty" --host x -e cpu 2>&1 >/dev/null)
is "$out" "sysmap: cpu: cannot use hwloc XML topology $TMP/empty/hwloc.xml: No such file or directory" \
   "cpu without hwloc.xml"
is "$(./sysmap --print --root "$TMP/empty" --host x -e ib -e pci | jq -c .extractors)" \
   '{"ib":{"hcas":[]},"pci":{"devices":[]}}' "no HCA and no PCI bus are empty lists, not errors"
out=$(./sysmap --print -e nope 2>&1); rc=$?
is "$rc:$out" '2:sysmap: unknown extractor "nope" (sysmap -l lists them)' "unknown extractor"
out=$(./sysmap --print --host 'n1;rm' 2>&1); rc=$?
is "$rc:$out" '2:sysmap: --host "n1;rm" is not a valid host name' "bad --host"
is "$(./sysmap -l | cut -d' ' -f1 | tr '\n' ,)" "cpu,block,storage,pci,net,ib,fabric,kernel," "sysmap -l lists the extractors"

# A failing extractor does not lose the others: stored, and exit status 1.
./sysmap --db "$TMP/part.db" --root "$TMP/empty" --host part -e ib -e storage 2>/dev/null; rc=$?
is "$rc:$(./sysquery --db "$TMP/part.db" -n part --compact | jq -c '.hosts[0].extractors | keys')" \
   '1:["ib"]' "partial report stored, failure in the exit status"
finish
