#!/bin/sh
# sysquery's output in every mode validates against doc/sysquery.schema.json,
# and the validator does reject documents that break it.
. "${srcdir:-.}/tests/lib.sh"
SCHEMA=${top_srcdir:-$SRC/..}/doc/sysquery.schema.json
V="python3 $SRC/tests/validate_schema.py $SCHEMA"

# Two reports of the fixture node (the second with less space), this
# machine, and the fabric where libibnetdisc is built in.
./sysmap --db "$TMP/q.db" --root "$FIX" --host node1 --time 1000
cp -R "$FIX" "$TMP/root"
sed 's|^/local .*|/local 3840755982336 1000000000000|' "$FIX/sysmap-statvfs" >"$TMP/root/sysmap-statvfs"
./sysmap --db "$TMP/q.db" --root "$TMP/root" --host node1 --time 2000
./sysmap --db "$TMP/q.db" --host "$(hostname | cut -d. -f1)" --time 1500
if [ "${IBNETDISC:-no}" = yes ] && ./tests/make_ibcache "$TMP/fabric.cache"; then
    ./sysmap --db "$TMP/q.db" -e fabric --ib-cache "$TMP/fabric.cache" --host admin --time 1500
fi

valid() { # valid WHAT SYSQUERY-ARGS...
    what=$1; shift
    ./sysquery --db "$TMP/q.db" "$@" >"$TMP/out.json"
    result=$($V "$TMP/out.json" 2>&1)
    is "$result" valid "$what"
}
valid "all hosts, all extractors" 
valid "compact" --compact
valid "deployment view" --deploy
valid "one extractor of a host list with a missing host" -n 'node[1-2]' -e storage
valid "as of a time" --at 1200
valid "as of an ISO time" --at 1970-01-01T00:20:00Z --deploy
valid "before any report" --at 10

# The second report has /local down to 1 TB, so /scratch (1.9 TB) wins.
deploy() { ./sysquery --db "$TMP/q.db" -n node1 --deploy --compact "$@" |
           jq -r '.hosts[0].deploy | "\(.storage_path) \(.available_bytes) \(.storage_numa_node)"'; }
is "$(deploy)" "/scratch 1900000000000 1" "current value: the second report picks /scratch on NUMA 1"
is "$(deploy --at 1999)" "/local 3500000000000 0" "history: the first report as of 1999"
is "$(deploy --at 2000)" "/scratch 1900000000000 1" "history: the second report from 2000 on"
is "$(./sysquery --db "$TMP/q.db" --at 10 --compact | jq -c '[.at, (.hosts | length)]')" "[10,0]" \
   "before any report: no hosts"
is "$(./sysquery --db "$TMP/q.db" --deploy --compact -n node1,nodeX | jq -c '.missing')" '["nodeX"]' \
   "unknown host listed as missing"

# The validator must catch broken documents, or the checks above prove nothing.
echo '{"hosts": [], "at": null}' >"$TMP/bad1.json"
is "$($V "$TMP/bad1.json")" ": required property missing is missing" "validator: missing property"
./sysquery --db "$TMP/q.db" --deploy --compact -n node1 |
    jq '.hosts[0].deploy.available_bytes = "lots"' >"$TMP/bad2.json"
is "$($V "$TMP/bad2.json")" '/hosts/0/deploy/available_bytes: "lots" is not of type integer' \
   "validator: wrong type"
./sysquery --db "$TMP/q.db" -e storage --compact -n node1 |
    jq '.hosts[0].extractors.storage.value.mounts[0].kind = "cloud"' >"$TMP/bad3.json"
is "$($V "$TMP/bad3.json")" \
   '/hosts/0/extractors/storage/value/mounts/0/kind: "cloud" is not one of ["local", "remote", "memory"]' \
   "validator: value outside an enum"

# sysquery's own errors.
out=$(./sysquery --db "$TMP/q.db" -n 'node[1-' 2>&1); rc=$?
is "$rc:$out" "1:sysquery: hostlist \"node[1-\": position 8: expected a digit, found the end" "bad host list"
out=$(./sysquery --db "$TMP/q.db" -e storag 2>&1); rc=$?
is "$rc:$out" "1:sysquery: $TMP/q.db: no host has reported extractor \"storag\"" "misspelt extractor"
out=$(./sysquery --db "$TMP/q.db" --at yesterday 2>&1); rc=$?
is "$rc:$out" '2:sysquery: --at "yesterday" is neither seconds since the epoch nor YYYY-MM-DDTHH:MM:SS' "bad --at"
out=$(./sysquery --db "$TMP/none.db" 2>&1); rc=$?
is "$rc:$out" "1:sysquery: $TMP/none.db: cannot open database: unable to open database file" "missing database"
echo "not a database" >"$TMP/junk.db"
out=$(./sysquery --db "$TMP/junk.db" 2>&1); rc=$?
is "$rc:$out" "1:sysquery: $TMP/junk.db: cannot prepare \"SELECT value FROM meta WHERE key='schema_version'\": file is not a database" \
   "not a database"
finish
