#!/bin/sh
# make_fixture.sh DIR: builds the fixture tree node-nvme in DIR, a node's
# /proc and /sys as the extractors read them:
#   nvme0n1 (partition p1 on /local) on NUMA node 0, nvme1n1 (/scratch) on
#   NUMA node 1; SATA: sda SSD (/, /boot/efi), sdb HDD (/data and a mount
#   point with a space), sdc SSD mounted read-only; tmpfs /dev/shm and /tmp;
#   Lustre /lustre and NFS /home; eth0 on NUMA 0, ib0 and HCA mlx5_0 on
#   NUMA 1; two packages with one NUMA node each (hwloc XML from lstopo,
#   with the NVMe disks, eth0, ib0 and mlx5_0 added as hwloc OS devices).
# The tree is made at test time because sysfs is symlinks, which a
# distribution tarball (tar -h) would flatten.
set -e
F=$1
[ -n "$F" ] || { echo "usage: make_fixture.sh DIR" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$F"
cd "$F"
cp "$HERE/fixtures/node-nvme.hwloc.xml" hwloc.xml

w() { mkdir -p "$(dirname "$1")"; printf '%s\n' "$2" >"$1"; }

w proc/sys/kernel/osrelease "6.1.0-18-amd64"
w proc/version "Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org) #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)"
cat >proc/modules <<'END'
lustre 1036288 2 - Live 0x0000000000000000 (OE)
nvme 53248 3 - Live 0x0000000000000000
mlx5_ib 466944 0 - Live 0x0000000000000000
ib_core 458752 8 mlx5_ib, Live 0x0000000000000000
ahci 49152 2 - Live 0x0000000000000000
nfsv4 1007616 1 - Live 0x0000000000000000
END
mkdir -p proc/self
cat >proc/self/mounts <<'END'
/dev/sda2 / ext4 rw,relatime 0 0
proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0
sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0
/dev/sda1 /boot/efi vfat rw,relatime 0 0
/dev/nvme0n1p1 /local xfs rw,noatime,attr2,inode64 0 0
/dev/nvme1n1 /scratch ext4 rw,relatime 0 0
/dev/sdb1 /data ext4 rw,relatime 0 0
/dev/sdc1 /ssd-ro ext4 ro,relatime 0 0
/dev/sdb2 /mnt/old\040disk ext4 rw,relatime 0 0
tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0
tmpfs /tmp tmpfs rw,nosuid,nodev,size=65536000k 0 0
10.0.0.1@o2ib:/lfs /lustre lustre rw,flock,lazystatfs 0 0
nfs01:/export/home /home nfs4 rw,relatime,vers=4.2,hard,proto=tcp 0 0
/dev/nvme0n1p1 /home/mallory/bb fuse.bb rw,nosuid,nodev,relatime,user_id=1000,group_id=1000,allow_other 0 0
END
# statvfs(2) cannot be asked about mount points that do not exist here:
# MOUNTPOINT SIZE_BYTES AVAILABLE_BYTES (escaped as in /proc/self/mounts).
cat >sysmap-statvfs <<'END'
/ 107374182400 53687091200
/boot/efi 536870912 500000000
/local 3840755982336 3500000000000
/scratch 1920383410176 1900000000000
/data 8001563222016 7000000000000
/ssd-ro 7681501126656 7600000000000
/mnt/old\040disk 1000204886016 900000000000
/dev/shm 270582939648 270582939648
/tmp 67108864000 67108864000
/lustre 1125899906842624 562949953421312
/home 10995116277760 5497558138880
/home/mallory/bb 9007199254740992 9007199254740992
END

D=sys/devices
mkdir -p sys/block sys/bus/pci/devices sys/class/net sys/class/infiniband
pci() { # pci BUS ADDR NUMA CLASS VENDOR DEVICE
    w $D/$1/$2/numa_node $3; w $D/$1/$2/class $4; w $D/$1/$2/vendor $5; w $D/$1/$2/device $6
    ln -s ../../../devices/$1/$2 sys/bus/pci/devices/$2
}

# NVMe: PCI function -> controller nvmeN -> namespace; device links to the controller.
nvme() { # nvme BUS ADDR CTRL DISK NUMA SECTORS
    pci $1 $2 $5 0x010802 0x144d 0xa80a
    c=$D/$1/$2/nvme/$3
    w $c/model "SAMSUNG MZQL23T8HCLS-00A07"
    w $c/$4/size $6; w $c/$4/removable 0
    w $c/$4/queue/rotational 0; w $c/$4/queue/scheduler "[none] mq-deadline kyber bfq"
    w $c/$4/queue/logical_block_size 512
    ln -s ../../$3 $c/$4/device
    ln -s ../devices/$1/$2/nvme/$3/$4 sys/block/$4
}
nvme pci0000:00 0000:00:02.0 nvme0 nvme0n1 0 7501476528
nvme pci0000:80 0000:80:02.0 nvme1 nvme1n1 1 3750738264
w $D/pci0000:00/0000:00:02.0/nvme/nvme0/nvme0n1/nvme0n1p1/partition 1
# sysfs does not know nvme1's node (-1, as when firmware gives no _PXM);
# hwloc.xml places it in package 1, so its NUMA node comes from hwloc.
w $D/pci0000:80/0000:80:02.0/numa_node -1
w $D/pci0000:00/0000:00:02.0/nvme/nvme0/nvme0n1/nvme0n1p1/size 7501474480

# SATA: AHCI function -> ataN/hostN/targetN:0:0/N:0:0:0 (SCSI device with model) -> block/sdX.
pci pci0000:00 0000:00:17.0 0 0x010601 0x8086 0xa352
sata() { # sata N DISK ROTATIONAL SECTORS MODEL
    s=$D/pci0000:00/0000:00:17.0/ata$(($1 + 1))/host$1/target$1:0:0/$1:0:0:0
    w $s/model "$5"; w $s/vendor ATA
    w $s/block/$2/size $4; w $s/block/$2/removable 0
    w $s/block/$2/queue/rotational $3; w $s/block/$2/queue/scheduler "none [mq-deadline] kyber bfq"
    w $s/block/$2/queue/logical_block_size 512
    ln -s ../.. $s/block/$2/device
    ln -s ../${s#sys/}/block/$2 sys/block/$2
}
sata 0 sda 0 937703088 "SAMSUNG MZ7LH480"
sata 1 sdb 1 15628053168 ST8000NM000A
sata 2 sdc 0 15002931888 MZ7L37T6HBLA
for p in sda/sda1 sda/sda2 sdb/sdb1 sdb/sdb2 sdc/sdc1; do
    w "$(cd sys/block/${p%/*} && pwd -P)/${p#*/}/partition" 1
done

# Network: eth0 (NUMA 0), ib0 and mlx5_0 on the HCA (NUMA 1), lo virtual.
netdev() { # netdev DIR NAME TYPE ADDRESS MTU SPEED
    w $1/net/$2/type $3; w $1/net/$2/address $4; w $1/net/$2/mtu $5
    w $1/net/$2/operstate up; w $1/net/$2/speed $6
    ln -s ../.. $1/net/$2/device
    ln -s ../../${1#sys/}/net/$2 sys/class/net/$2
}
pci pci0000:00 0000:00:03.0 0 0x020000 0x8086 0x1593
netdev $D/pci0000:00/0000:00:03.0 eth0 1 b4:96:91:aa:bb:01 9000 25000
pci pci0000:80 0000:80:03.0 1 0x020700 0x15b3 0x101b
netdev $D/pci0000:80/0000:80:03.0 ib0 32 00:00:10:29:fe:80:00:00:00:00:00:00:0c:42:a1:03:00:5e:7a:10 4092 100000
w $D/virtual/net/lo/type 772; w $D/virtual/net/lo/address 00:00:00:00:00:00
w $D/virtual/net/lo/mtu 65536; w $D/virtual/net/lo/operstate unknown
ln -s ../../devices/virtual/net/lo sys/class/net/lo

ib=$D/pci0000:80/0000:80:03.0/infiniband/mlx5_0
w $ib/node_guid 0c42:a103:005e:7a10; w $ib/fw_ver 20.39.1002; w $ib/board_id MT_0000000223
w $ib/ports/1/state "4: ACTIVE"; w $ib/ports/1/phys_state "5: LinkUp"
w $ib/ports/1/rate "100 Gb/sec (4X EDR)"; w $ib/ports/1/lid 0x12; w $ib/ports/1/sm_lid 0x1
w $ib/ports/1/link_layer InfiniBand
ln -s ../.. $ib/device
ln -s ../../devices/pci0000:80/0000:80:03.0/infiniband/mlx5_0 sys/class/infiniband/mlx5_0
