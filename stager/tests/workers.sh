#!/bin/sh
# N workers as N processes on this host, started at once like the agents
# start them: together they copy every file and every piece exactly once,
# finish the run themselves (modes and mtimes of directories and split
# files included), leave no mailboxes behind, and read the source about
# as often as one process does.
. "${srcdir:-.}/tests/lib.sh"
S=$WORK/src D=$WORK/dst
mkdir -p "$S/x/y" "$S/z"
i=0; while [ $i -lt 240 ]; do head -c $((i * 37)) /dev/urandom > "$S/$(echo x x/y z | cut -d' ' -f$((i % 3 + 1)))/s$i"; i=$((i + 1)); done
for b in 1 2 3; do head -c 5000000 /dev/urandom > "$S/x/big$b"; done
truncate -s 100M "$S/z/sparse"; echo end >> "$S/z/sparse"
chmod 0555 "$S/x/y"; touch -d '2012-12-12' "$S/x" "$S/x/big1"
N=3
"$STAGE" copy --piece-size 1M --json "$S" "$WORK/single" > "$WORK/single.json" 2>/dev/null
want_bytes=$(json_field "$WORK/single.json" bytes)


run_workers $N "$WORK/w" copy --piece-size 1M "$S" "$D"
is "all $N workers exit 0" $? 0
is "bytes over all workers = bytes of one run (nothing twice, nothing missed)" "$(sum "$WORK/w" $N bytes)" "$want_bytes"
is "files over all workers = 244 (each once; split files counted when finalized)" "$(sum "$WORK/w" $N files)" 244
is "pieces over all workers = 3 x 5 + 101 (each once)" "$(sum "$WORK/w" $N pieces)" 116
ok "contents identical" diff -r "$S" "$D"
tree_listing "$S" > "$WORK/s.lst"; tree_listing "$D" > "$WORK/d.lst"
ok "sizes, modes, mtimes of files and directories identical, with no finalize step" cmp -s "$WORK/s.lst" "$WORK/d.lst"
ok "sparse file stayed sparse across workers" test "$(stat -c %b "$D/z/sparse")" -lt 1000
ok "the workers' mailboxes are gone" test ! -e "$WORK/.adafs-stage"
src1=$(json_field "$WORK/single.json" src_mdops)
srcn=$(sum "$WORK/w" $N src_mdops)
ok "source metadata operations of $N workers ($srcn) within 1.1 x one process's ($src1)" \
    test $((srcn * 10)) -le $((src1 * 11))
"$STAGE" copy --finalize --worker 0/$N --json "$S" "$D" > "$WORK/fin.json" 2>/dev/null
is "--finalize (an older plugin's last round) is accepted and does nothing" "$?/$(json_field "$WORK/fin.json" files)" "0/0"

# Restart with workers: nothing left to do.
run_workers $N "$WORK/r" copy --piece-size 1M "$S" "$D"
is "rerun of all workers exits 0" $? 0
is "rerun of all workers writes nothing" "$(sum "$WORK/r" $N bytes)" 0
is "and finds all 244 files unchanged" "$(sum "$WORK/r" $N unchanged)" 244

# A shared list split over workers: entries, a listed directory, a split file.
find "$S/x" -maxdepth 1 -type f -printf '%p list/%P\n' > "$WORK/list"
echo "$S/z list/zdir" >> "$WORK/list"
echo "a bad line" >> "$WORK/list"
mkdir -p "$WORK/ldst"
run_workers 2 "$WORK/l" copy --type list --piece-size 1M "$WORK/list" "$WORK/ldst"
is "a list split over 2 workers, one bad line: one of them fails" $? 1
ok "it copies every entry" diff -r "$S/x" "$WORK/ldst/list" -x y -x zdir
ok "and the listed directory" diff -r "$S/z" "$WORK/ldst/list/zdir"
is "a listed split file gets its mtime" "$(stat -c %Y "$WORK/ldst/list/big1")" "$(stat -c %Y "$S/x/big1")"
is "the list was read once (by worker 0): the bad line reported once" "$(sum "$WORK/l" 2 errors)" 1
ok "naming its line" grep -q "line $(wc -l < "$WORK/list"): unexpected third field" "$WORK/l.0.json"

# A worker started with another N never meets the others: it says so.
"$STAGE" copy --worker 1/2 --peer-timeout 1 --json "$S" "$WORK/alone" > "$WORK/alone.json" 2> "$WORK/alone.err"
is "a worker whose worker 0 never comes fails (exit 1)" $? 1
ok "naming worker 0" grep -q "worker 0 did not start this run" "$WORK/alone.err"
chmod -R u+w "$S" "$D" "$WORK/single" "$WORK/ldst"
done_testing
