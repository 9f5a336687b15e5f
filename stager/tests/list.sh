#!/bin/sh
# type=list: `source destination` pairs; each bad line is reported with its
# number, every good line is still copied, and the exit status says so.
. "${srcdir:-.}/tests/lib.sh"
S=$WORK/src D=$WORK/dst
mkdir -p "$S/tree/sub" "$D"
echo one > "$S/one.txt"; echo two > "$S/two words.txt"; echo three > "$S/tree/sub/three"
echo ü > "$S/ümlaut"
cat > "$WORK/list" <<LIST
# stage-in list
$S/one.txt            one.txt
"$S/two words.txt"    "renamed/two words.txt"
$S/tree               copied-tree
$S/missing-source     nowhere
$S/ümlaut             deep/er/ümlaut
src/one.txt           relative-source.txt
only-a-source
$S/one.txt a b
"$S/unterminated
$S/one.txt            ../escape
LIST
(cd / && "$STAGE" copy --type list --json "$WORK/list" "$D") > "$WORK/out.json" 2> "$WORK/err"
is "bad lines make the exit status 1" $? 1
ok "pair copied" cmp -s "$S/one.txt" "$D/one.txt"
ok "quoted names with spaces, renamed, parents made" cmp -s "$S/two words.txt" "$D/renamed/two words.txt"
ok "a directory source copies the tree" cmp -s "$S/tree/sub/three" "$D/copied-tree/sub/three"
ok "UTF-8 name into new parents" cmp -s "$S/ümlaut" "$D/deep/er/ümlaut"
is "five files copied" "$(json_field "$WORK/out.json" files)" 5
ok "a relative source is taken from the list file's directory" cmp -s "$S/one.txt" "$D/relative-source.txt"
is "five errors" "$(json_field "$WORK/out.json" errors)" 5
ok "missing source named with errno" grep -q "\"path\":\"$S/missing-source\",\"errno\":2" "$WORK/out.json"
ok "line 8 reported: missing destination" grep -q "line 8: missing destination" "$WORK/out.json"
ok "line 9 reported: third field" grep -q "line 9: unexpected third field" "$WORK/out.json"
ok "line 10 reported: unterminated quote" grep -q "line 10: source: unterminated quote" "$WORK/out.json"
ok "line 11 reported: destination leaves DST" grep -q "line 11: destination ../escape leaves $D" "$WORK/out.json"
ok "nothing written outside DST" test ! -e "$WORK/escape"

"$STAGE" copy --type list "$WORK/no-such-list" "$D" 2> "$WORK/err"
is "unreadable list file: exit 2" $? 2
ok "... names the file and the error" grep -q "cannot read list file $WORK/no-such-list: No such file or directory" "$WORK/err"
done_testing
