#!/bin/sh
# Every default extractor against this machine itself, checked against
# what other tools say about it.
. "${srcdir:-.}/tests/lib.sh"

# Loop devices come and go while other jobs on this host start and stop
# (adafs gives each job one): the disks are listed before and after the
# collector runs, and it must list those present both times, and only
# disks present at one of them.
nonempty_disks() { for d in /sys/block/*; do [ "$(cat $d/size 2>/dev/null)" != 0 ] && basename $d; done | sort; }
nonempty_disks >"$TMP/disks.before"
./sysmap --print >"$TMP/report.json" 2>"$TMP/err"
nonempty_disks >"$TMP/disks.after"
is "$?:$(cat "$TMP/err")" "0:" "all default extractors run here without error"
r() { jq -r "$1" "$TMP/report.json"; }
is "$(r '.extractors | keys | join(",")')" "block,cpu,ib,kernel,net,pci,storage" "report has every default extractor"
is "$(r .host)" "$(hostname | cut -d. -f1)" "host is the short host name"
is "$(r .extractors.kernel.release)" "$(uname -r)" "kernel release = uname -r"
is "$(r '.extractors.cpu.numa_nodes | length')" "$(ls -d /sys/devices/system/node/node[0-9]* | wc -l)" \
   "cpu NUMA nodes = /sys/devices/system/node"
is "$(r .extractors.cpu.pus)" "$(getconf _NPROCESSORS_ONLN)" "cpu PUs = online processors"
# The NUMA nodes' own MemTotal (this can differ from /proc/meminfo in VMs).
mem_kib=$(cat /sys/devices/system/node/node*/meminfo | awk '/MemTotal:/ { s += $4 } END { print s }')
hw_kib=$(( $(r .extractors.cpu.memory_bytes) / 1024 ))
check "cpu memory within 5% of the NUMA nodes' MemTotal ($hw_kib vs $mem_kib KiB)" \
    test $(( (hw_kib - mem_kib) * 100 / mem_kib )) -le 5 -a $(( (mem_kib - hw_kib) * 100 / mem_kib )) -le 5
is "$(r '[.extractors.net.interfaces[].name] | join(",")')" "$(ls /sys/class/net | sort | tr '\n' , | sed 's/,$//')" \
   "net lists /sys/class/net"
is "$(r '.extractors.pci.devices | length')" "$(ls /sys/bus/pci/devices 2>/dev/null | wc -l)" "pci lists /sys/bus/pci/devices"
is "$(r '.extractors.ib.hcas | length')" "$(ls /sys/class/infiniband 2>/dev/null | wc -l)" "ib lists /sys/class/infiniband"
r '.extractors.block.devices[].name' | sort >"$TMP/disks.got"
missing=$(comm -12 "$TMP/disks.before" "$TMP/disks.after" | comm -23 - "$TMP/disks.got" | tr '\n' ' ')
extra=$(sort -u "$TMP/disks.before" "$TMP/disks.after" | comm -13 - "$TMP/disks.got" | tr '\n' ' ')
is "missing: $missing; extra: $extra" "missing: ; extra: " "block lists the non-empty disks"
# Size of / exactly as df sees it; available bytes (f_bavail) move while
# other work writes to the disk, so within 5 %.
df_line=$(df -P -k / | awk 'NR == 2 { print $2, $4 }')
is "$(r '.extractors.storage.mounts[] | select(.mountpoint == "/") | .size_bytes')" \
   "$(( ${df_line% *} * 1024 ))" "storage: / size matches df"
df_avail=$(( ${df_line#* } * 1024 ))
got=$(r '.extractors.storage.mounts[] | select(.mountpoint == "/") | .available_bytes')
diff=$(( got > df_avail ? got - df_avail : df_avail - got ))
check "storage: / available bytes match df ($got vs $df_avail)" test "$diff" -le $(( df_avail / 20 + 67108864 ))
is "$(r '.extractors.storage.mounts[] | select(.mountpoint == "/") | .fstype')" "$(findmnt -n -o FSTYPE /)" \
   "storage: / type matches findmnt"

./sysmap --db "$TMP/host.db" >/dev/null
is "$?" 0 "sysmap --db FILE stores this machine"
is "$(./sysquery --db "$TMP/host.db" --compact | jq -r '.hosts[0].host')" "$(hostname | cut -d. -f1)" \
   "sysquery finds this machine"
finish
