#!/bin/sh
# A stage split over N workers (dist.h) on an uneven tree - one directory
# of 3,000 files, a chain 60 directories deep, a few big files among many
# small ones, many small directories: for N = 2, 4 and 8 the copy is whole
# and the metadata operations on the source, summed over the workers, stay
# within 1.1 x those of one process. Then workers that fail: one killed in
# mid-copy (the others take its work over), one that never starts, and the
# coordinator killed (the others stop and say so).
. "${srcdir:-.}/tests/lib.sh"
S=$WORK/src
mkdir -p "$S/huge" "$S/mixed" "$S/wide"
i=0; while [ $i -lt 3000 ]; do echo "h$i" > "$S/huge/f$i"; i=$((i + 1)); done
p=$S/deep; i=0
while [ $i -lt 60 ]; do p=$p/d$i; mkdir -p "$p"; echo "$i" > "$p/a"; echo "x$i" > "$p/b"; i=$((i + 1)); done
i=0; while [ $i -lt 400 ]; do head -c $((i * 11)) /dev/urandom > "$S/mixed/s$i"; i=$((i + 1)); done
for b in 1 2 3; do head -c 3000000 /dev/urandom > "$S/mixed/big$b"; done
i=0; while [ $i -lt 50 ]; do mkdir "$S/wide/w$i"; j=0
    while [ $j -lt 5 ]; do echo "$i.$j" > "$S/wide/w$i/f$j"; j=$((j + 1)); done; i=$((i + 1)); done
chmod 0750 "$S/wide/w7"; touch -d '2011-11-11' "$S/deep/d0" "$S/mixed/big2"
# What must be preserved (tree_listing without the sizes of directories,
# which depend on the order entries were made in).
listing() { (cd "$1" && find . -mindepth 1 ! -type l \( -type d -printf '%P d %m %T@\n' -o \
    -printf '%P %y %s %m %T@\n' \) | LC_ALL=C sort); }
listing "$S" > "$WORK/s.lst"


"$STAGE" copy --threads 2 --piece-size 1M --json "$S" "$WORK/one" > "$WORK/one.json" 2>/dev/null
one=$(json_field "$WORK/one.json" src_mdops)
files=$(json_field "$WORK/one.json" files)
for nw in 2 4 8; do
    run_workers $nw "$WORK/n$nw" copy --threads 2 --piece-size 1M "$S" "$WORK/d$nw"
    is "$nw workers exit 0" $? 0
    listing "$WORK/d$nw" > "$WORK/d$nw.lst"
    ok "$nw workers: contents, sizes, modes and mtimes identical" \
        sh -c "diff -r '$S' '$WORK/d$nw' > /dev/null && cmp -s '$WORK/s.lst' '$WORK/d$nw.lst'"
    is "$nw workers: every file copied once ($files)" "$(sum "$WORK/n$nw" $nw files)" "$files"
    got=$(sum "$WORK/n$nw" $nw src_mdops)
    ok "$nw workers: source metadata operations $got <= 1.1 x one process's $one" \
        test $((got * 10)) -le $((one * 11))
done

# Failures, on a smaller tree (copied slowly, with a metadata limit, so
# that a kill falls inside the copy): 8 directories of 100 files, 2 split.
F=$WORK/f
i=0; while [ $i -lt 8 ]; do mkdir -p "$F/d$i"; j=0
    while [ $j -lt 100 ]; do echo "$i/$j" > "$F/d$i/f$j"; j=$((j + 1)); done; i=$((i + 1)); done
head -c 3000000 /dev/urandom > "$F/d3/big"; head -c 2500000 /dev/urandom > "$F/d5/big"
touch -d '2010-10-10' "$F/d3" "$F/d5/big"
listing "$F" > "$WORK/f.lst"
slow="--threads 2 --piece-size 1M --max-mdops 300 --peer-timeout 2"

# A worker killed in mid-copy: given up after the peer timeout, its items
# are done by the others and nothing is missing.
for k in 0 1 2; do
    "$STAGE" copy $slow --worker $k/3 --json "$F" "$WORK/kill" > "$WORK/kill.$k.json" 2> "$WORK/kill.$k.err" &
    eval "pid$k=\$!"
done
sleep 1; kill -9 $pid2; wait $pid2 2>/dev/null
wait $pid0; rc0=$?; wait $pid1; rc1=$?
is "worker 2 killed: workers 0 and 1 still exit 0" "$rc0 $rc1" "0 0"
ok "nothing is missing" diff -r "$F" "$WORK/kill"
listing "$WORK/kill" > "$WORK/kill.lst"
ok "attributes too" cmp -s "$WORK/f.lst" "$WORK/kill.lst"
is "worker 0 reports the worker it gave up" "$(json_field "$WORK/kill.0.json" lost_workers)" 1
ok "and says so in its log" grep -q "worker 2 of 3 sent nothing for 2 s" "$WORK/kill.0.err"

# A worker that never starts: the others do its share.
pids=""
for k in 0 1; do
    "$STAGE" copy --threads 2 --peer-timeout 2 --worker $k/3 --json "$F" "$WORK/absent" > "$WORK/absent.$k.json" 2> "$WORK/absent.$k.err" &
    pids="$pids $!"
done
rcs=0; for p in $pids; do wait $p || rcs=$((rcs + 1)); done
is "worker 2 of 3 never started: 0 and 1 exit 0" $rcs 0
ok "nothing is missing" diff -r "$F" "$WORK/absent"
ok "worker 0 says which never joined" grep -q "worker 2 of 3 did not join within 2 s" "$WORK/absent.0.err"

# The coordinator killed: the others stop after the timeout and fail,
# naming it (the plugin then fails the stage).
for k in 0 1 2; do
    "$STAGE" copy $slow --worker $k/3 --json "$F" "$WORK/nohub" > "$WORK/nohub.$k.json" 2> "$WORK/nohub.$k.err" &
    eval "pid$k=\$!"
done
sleep 1; kill -9 $pid0; wait $pid0 2>/dev/null
wait $pid1; rc1=$?; wait $pid2; rc2=$?
is "worker 0 killed: the others exit 1" "$rc1 $rc2" "1 1"
ok "saying that worker 0 went silent" grep -q "worker 0, which hands out the work, sent nothing for 2 s" "$WORK/nohub.1.json"
chmod -R u+w "$WORK"
done_testing
