#!/bin/sh
# N workers as N processes on this host: each walks the same tree, together
# they copy every file and every piece exactly once; the finalize run then
# sets what several workers shared (split files, directories).
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

k=0; pids=""
while [ $k -lt $N ]; do
    "$STAGE" copy --worker $k/$N --piece-size 1M --json "$S" "$D" > "$WORK/w$k.json" 2>/dev/null &
    pids="$pids $!"; k=$((k + 1))
done
rcs=0; for p in $pids; do wait $p || rcs=$((rcs + 1)); done
is "all $N workers exit 0" $rcs 0
sum() { k=0; t=0; while [ $k -lt $N ]; do t=$((t + $(json_field "$WORK/w$k.json" $1))); k=$((k + 1)); done; echo $t; }
is "bytes over all workers = bytes of one run (nothing twice, nothing missed)" "$(sum bytes)" "$want_bytes"
is "small files over all workers = 240 (each once)" "$(sum files)" 240
is "pieces over all workers = 3 x 5 + 101 (each once)" "$(sum pieces)" 116
busy=0; k=0; while [ $k -lt $N ]; do [ "$(json_field "$WORK/w$k.json" files)" -gt 0 ] && busy=$((busy + 1)); k=$((k + 1)); done
is "every worker had files to copy" $busy $N
ok "contents complete before finalize" diff -r "$S" "$D"
ok "split files are not yet marked complete (mtime not the source's)" \
    test "$(stat -c %Y "$S/x/big1")" != "$(stat -c %Y "$D/x/big1")"

"$STAGE" copy --finalize --worker 0/$N --piece-size 1M --json "$S" "$D" > "$WORK/fin.json" 2>/dev/null
is "finalize exits 0" $? 0
is "finalize completed the 4 split files" "$(json_field "$WORK/fin.json" files)" 4
tree_listing "$S" > "$WORK/s.lst"; tree_listing "$D" > "$WORK/d.lst"
ok "after finalize: sizes, modes, mtimes of files and directories identical" cmp -s "$WORK/s.lst" "$WORK/d.lst"
ok "sparse file stayed sparse across workers" test "$(stat -c %b "$D/z/sparse")" -lt 1000

# Restart with workers: nothing left to do.
k=0; while [ $k -lt $N ]; do "$STAGE" copy --worker $k/$N --piece-size 1M --json "$S" "$D" > "$WORK/r$k.json" 2>/dev/null; k=$((k + 1)); done
is "rerun of all workers writes nothing" "$(k=0; t=0; while [ $k -lt $N ]; do t=$((t + $(json_field "$WORK/r$k.json" bytes))); k=$((k + 1)); done; echo $t)" 0

# A shared list split over workers.
find "$S/x" -maxdepth 1 -type f -printf '%p list/%P\n' > "$WORK/list"
mkdir -p "$WORK/ldst"
for k in 0 1; do "$STAGE" copy --type list --worker $k/2 --piece-size 1M "$WORK/list" "$WORK/ldst" 2>/dev/null & done; wait
"$STAGE" copy --type list --finalize --worker 0/2 --piece-size 1M "$WORK/list" "$WORK/ldst" 2>/dev/null
ok "a list split over 2 workers copies every entry" diff -r "$S/x" "$WORK/ldst/list" -x y
chmod -R u+w "$S" "$D" "$WORK/single"
done_testing
