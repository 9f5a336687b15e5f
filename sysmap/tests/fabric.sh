#!/bin/sh
# The fabric extractor on a recorded fabric. This machine has no HCA, so
# tests/make_ibcache writes the cache file with libibnetdisc's own writer
# (ibnd_cache_fabric) and sysmap reads it back with ibnd_load_fabric, as it
# would read a file from `ibnetdiscover --cache FILE`.
. "${srcdir:-.}/tests/lib.sh"

if [ "${IBNETDISC:-no}" != yes ]; then
    out=$(./sysmap --print -e fabric 2>&1 >/dev/null); rc=$?
    is "$rc:$out" "1:sysmap: fabric: this sysmap was built without libibnetdisc (install libibnetdisc-dev and reconfigure)" \
       "without libibnetdisc the fabric extractor says so"
    finish
    exit 0
fi

./tests/make_ibcache "$TMP/fabric.cache"
is "$?" 0 "make_ibcache records a fabric with ibnd_cache_fabric"
./sysmap --print -e fabric --ib-cache "$TMP/fabric.cache" --host admin >"$TMP/f.json"
is "$?" 0 "sysmap -e fabric --ib-cache loads it"
f() { jq -r ".extractors.fabric | $1" "$TMP/f.json"; }
is "$(f '"\(.switches) \(.cas) \(.nodes | length)"')" "3 4 7" "3 switches, 4 CAs"
is "$(f '[.nodes[].links | length] | add')" 12 "6 links, seen from both ends"
is "$(f '.nodes[] | select(.description == "leaf1") | .links[] | select(.port == 2) | "\(.remote_guid):\(.remote_port)"')" \
   "0x0c42a103005e0002:1" "leaf1 port 2 goes to node02's HCA port 1"
is "$(f '.nodes[] | select(.guid == "0x0c42a103005e0004") | "\(.type) \(.description) \(.links[0].lid)"')" \
   "ca node04 mlx5_0 13" "node04 is a CA with LID 13"
is "$(f '[.nodes[].guid] | . == sort')" true "nodes sorted by GUID (same fabric, same value)"

./sysmap --db "$TMP/f.db" -e fabric --ib-cache "$TMP/fabric.cache" --host admin
is "$(./sysquery --db "$TMP/f.db" -e fabric --compact | jq -r '.hosts[0].extractors.fabric.value.switches')" 3 \
   "fabric stored and queried"

out=$(./sysmap --print -e fabric --ib-cache "$TMP/missing.cache" --host admin 2>&1 >/dev/null); rc=$?
is "$rc:$out" "1:sysmap: fabric: cannot load the ibnetdiscover cache $TMP/missing.cache" "missing cache file"
echo "not a cache" >"$TMP/bad.cache"
out=$(./sysmap --print -e fabric --ib-cache "$TMP/bad.cache" --host admin 2>&1 >/dev/null)
is "$out" "sysmap: fabric: cannot load the ibnetdiscover cache $TMP/bad.cache" "garbage cache file"
if [ ! -e /sys/class/infiniband ]; then
    out=$(./sysmap --print -e fabric --host admin 2>&1 >/dev/null)
    is "$out" "sysmap: fabric: no InfiniBand HCA to discover from (/sys/class/infiniband: No such file or directory); give --ib-cache FILE to read a recorded fabric" \
       "no HCA and no cache"
fi
finish
