#!/bin/sh
# An interrupted copy (SIGKILL mid-way) run again copies only what is
# missing or differs, and ends identical to the source.
. "${srcdir:-.}/tests/lib.sh"
S=$WORK/src D=$WORK/dst
mkdir -p "$S/a" "$S/b/c"
i=0; while [ $i -lt 300 ]; do head -c 65536 /dev/urandom > "$S/$( [ $((i % 2)) = 0 ] && echo a || echo b/c )/f$i"; i=$((i + 1)); done
head -c 8388608 /dev/urandom > "$S/big1"; head -c 8388608 /dev/urandom > "$S/b/big2"
chmod 0500 "$S/b/c"; touch -d '2010-10-10' "$S/a"
total=302

# 35 MB at 8 MB/s (read + write) takes about 9 s: kill it once 50 files
# are done (at most 8 s in).
"$STAGE" copy --max-bw 8M --piece-size 2M --json --progress-json "$WORK/progress" "$S" "$D" \
    > "$WORK/killed.json" 2>/dev/null &
kill_when_done 50 "$WORK/progress" $!
ok "the first run was interrupted before it finished" test ! -s "$WORK/killed.json"
ok "... with part of the tree copied" test -d "$D"
tree_listing "$S" > "$WORK/s.lst"; tree_listing "$D" > "$WORK/d.lst"
ok "... so the destination differs from the source" sh -c "! cmp -s '$WORK/s.lst' '$WORK/d.lst'"

"$STAGE" copy --piece-size 2M --json "$S" "$D" > "$WORK/resumed.json" 2>/dev/null
is "the resumed run exits 0" $? 0
copied=$(json_field "$WORK/resumed.json" files)
unchanged=$(json_field "$WORK/resumed.json" unchanged)
ok "it skipped what was complete ($unchanged unchanged)" test "$unchanged" -gt 0
ok "and copied only the rest ($copied files)" test "$copied" -lt $total
is "copied + unchanged = all files" $((copied + unchanged)) $total
tree_listing "$S" > "$WORK/s.lst"; tree_listing "$D" > "$WORK/d.lst"
ok "sizes, modes and mtimes identical after the resume" cmp -s "$WORK/s.lst" "$WORK/d.lst"
ok "contents identical after the resume" diff -r "$S" "$D"
"$STAGE" copy --piece-size 2M --json "$S" "$D" > "$WORK/third.json" 2>/dev/null
is "a third run copies nothing" "$(json_field "$WORK/third.json" bytes)" 0
chmod -R u+w "$S" "$D"
done_testing
