#!/bin/sh
# The plugin inside a Slurm process (slurm_host: libslurmfull loaded first,
# the plugin dlopen()ed as slurmctld does) with AdafsSysmapDB set: requests
# with capacity= go through sysmap's host lists, which once bound to
# Slurm's hostlist_push and killed slurmctld.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=${abs_top_srcdir:-$here/..}
build=${abs_top_builddir:-..}
plugin=$build/slurm-plugin/.libs/burst_buffer_adafs.so
sysmap=$build/sysmap/sysmap
if [ ! -f "$plugin" ]; then echo "1..0 # SKIP plugin not built"; exit 0; fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/slurm-host.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# n1 and n2 as sysmap records them from the NVMe fixture (/local: 3.5 TB
# available each); n3 is a node sysmap has never seen.
sh "$top/sysmap/tests/make_fixture.sh" "$tmp/fixture" >/dev/null || { echo "Bail out! no fixture"; exit 1; }
for n in n1 n2; do
    "$sysmap" --db "$tmp/sysmap.db" --root "$tmp/fixture" --host "$n" >/dev/null ||
        { echo "Bail out! sysmap --db failed for $n"; exit 1; }
done
mkdir "$tmp/state"
cat >"$tmp/burst_buffer.conf" <<CONF
AdafsSysmapDB=$tmp/sysmap.db
AdafsStateDir=$tmp/state
AdafsNodeCapacity=100P
AdafsPersistentNodes=n[1-2]
CONF
# burst_buffer.conf is found next to \$SLURM_CONF, which need not exist.
SLURM_CONF=$tmp/slurm.conf exec ./slurm_host "$plugin" 'n[1-3]' 1T 10T
