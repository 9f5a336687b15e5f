#!/bin/sh
# bench/scale/run.sh NEW [OLD [DB]]: the plugin's costs with thousands of
# live instances and a 10,000-node sysmap database (plscale), NEW and OLD
# alternating in the same run, each line prefixed by its name. NEW and OLD
# are plscale programs (BUILD/bench/scale/.libs/plscale); an OLD one is
# built from an older tree with this bench/scale/plscale.c copied in (it
# builds against the table with or without the index). DB: the sysmap
# database (made by plscale if missing; default /var/tmp/plscale-sysmap.db).
# Run at normal priority under `flock /tmp/adafs-bench.lock`. Numbers in
# doc/benchmarks.md (Scale).
set -eu
new=$1
old=${2:-}
db=${3:-/var/tmp/plscale-sysmap.db}
both() {
    "$new" "$@" 2>/dev/null | sed 's/^/new /'
    [ -z "$old" ] || "$old" "$@" 2>/dev/null | sed 's/^/old /'
}
uptime
for n in 500 1000 2000 5000; do both "$n"; done
[ -e "$db" ] || "$new" --sysmap "$db" 1 n00001 >/dev/null
for r in 1 2; do
    both --sysmap "$db" 1000 'n[00001-10000]'
    both --sysmap "$db" 4096 'n[00001-01000]'
done
# A burst of 20 submits to the 10,000-node partition, then 20 more while
# the collectors report between them (fit_cache: the partition summed once).
for r in 1 2 3; do both --fit-burst "$db" 'n[00001-10000]' 20; done
for n in 1000 10000 50000; do "$new" --hostlist "$n" | sed 's/^/new /'; done
