#!/bin/sh
# copy SRC DST between ordinary directories: nested trees, empty files, names
# with spaces and UTF-8, 10,000 small files, a 3 GiB sparse file, modes and
# mtimes, symlinks skipped or followed, restart, and bad requests.
. "${srcdir:-.}/tests/lib.sh"
S=$WORK/src D=$WORK/dst
mkdir -p "$S/a/b/c/d/e" "$S/with space/und ümlaut" "$S/many" "$S/ro"
echo nested > "$S/a/b/c/d/e/deep.txt"
: > "$S/empty"; : > "$S/a/b/empty too"
printf 'spaces\n' > "$S/with space/file with spaces.txt"
printf 'utf8\n' > "$S/with space/und ümlaut/日本語 ファイル.dat"
head -c 5000000 /dev/urandom > "$S/a/mid.bin"         # > 1 MiB: streamed, < piece
head -c 9000000 /dev/urandom > "$S/a/b/big.bin"       # split with --piece-size 2M
i=0; while [ $i -lt 100 ]; do mkdir "$S/many/d$i"; i=$((i + 1)); done
seq 0 9999 | awk -v d="$S/many" '{ f = d "/d" ($1 % 100) "/f" $1; printf "%d\n", $1 > f; close(f) }'
truncate -s 3G "$S/sparse3g"
printf 'head' | dd of="$S/sparse3g" conv=notrunc status=none
printf 'tail' | dd of="$S/sparse3g" bs=1 seek=$((3 * 1024 * 1024 * 1024 - 4)) conv=notrunc status=none
echo secret > "$S/ro/readonly.txt"; chmod 0400 "$S/ro/readonly.txt"; chmod 0555 "$S/ro"
chmod 0751 "$S/a"; chmod 0600 "$S/a/mid.bin"; chmod 4755 "$S/empty"
# Bits the umask takes from a new file: the copy must give them back.
echo shared > "$S/a/group-writable"; chmod 0664 "$S/a/group-writable"
umask 022
touch -d '2001-02-03 04:05:06.123456789' "$S/a/mid.bin" "$S/a/b"
ln -s ../a/mid.bin "$S/with space/link-to-mid"
ln -s /etc "$S/link-to-etc"

"$STAGE" copy --json --piece-size 2M "$S" "$D" > "$WORK/out.json" 2> "$WORK/err"
is "copy exits 0" $? 0
is "10,000 small files + 10 others copied" "$(json_field "$WORK/out.json" files)" 10010
is "directories counted (root, 5 nested, 2 spaced, many + 100, ro)" "$(json_field "$WORK/out.json" dirs)" 110
is "two symlinks skipped" "$(json_field "$WORK/out.json" skipped)" 2
is "files over 2 MiB went in pieces (5 + 3 + 1536 for 3 GiB)" "$(json_field "$WORK/out.json" pieces)" 1544
ok "symlink skip is warned about with its path" grep -q "skipping $S/with space/link-to-mid: symbolic link" "$WORK/err"
ok "no symlink in the destination" test ! -e "$D/with space/link-to-mid" -a ! -e "$D/link-to-etc"
tree_listing "$S" > "$WORK/s.lst"; tree_listing "$D" > "$WORK/d.lst"
ok "tree, sizes, modes (incl. setuid, 0400, 0555, 0664 under umask 022) and ns mtimes identical" cmp -s "$WORK/s.lst" "$WORK/d.lst"
ok "contents identical" diff -r --no-dereference "$S/a" "$D/a"
ok "UTF-8 and spaced names copied" cmp -s "$S/with space/und ümlaut/日本語 ファイル.dat" "$D/with space/und ümlaut/日本語 ファイル.dat"
ok "10,000 small files identical" diff -r "$S/many" "$D/many"
is "sparse file keeps its size" "$(stat -c %s "$D/sparse3g")" 3221225472
blocks=$(stat -c %b "$D/sparse3g")
ok "sparse file stays sparse ($blocks blocks allocated)" test "$blocks" -lt 1000
ok "sparse file's data at both ends copied" cmp -s "$S/sparse3g" "$D/sparse3g"
bytes=$(json_field "$WORK/out.json" bytes)
ok "holes are not copied: $bytes bytes written for 3 GiB + 14 MB" test "$bytes" -lt 20000000
ok "... but all data is: at least the non-sparse bytes" test "$bytes" -ge 14000000

# Restart: nothing changed, nothing copied.
"$STAGE" copy --json --piece-size 2M "$S" "$D" > "$WORK/again.json" 2>/dev/null
is "second run: everything unchanged" "$(json_field "$WORK/again.json" unchanged)" 10010
is "second run copies no bytes" "$(json_field "$WORK/again.json" bytes)" 0
# A changed file (same size, new mtime) is copied again, nothing else.
head -c 5000000 /dev/urandom > "$S/a/mid.bin"
"$STAGE" copy --json --piece-size 2M "$S" "$D" > "$WORK/changed.json" 2>/dev/null
is "a changed file is copied again" "$(json_field "$WORK/changed.json" files)" 1
ok "and its new content arrived" cmp -s "$S/a/mid.bin" "$D/a/mid.bin"

# --follow-symlinks copies targets, as the user's own opens would.
"$STAGE" copy --follow-symlinks "$S/with space" "$WORK/follow" 2>/dev/null
ok "--follow-symlinks copies the target's content" cmp -s "$S/a/mid.bin" "$WORK/follow/link-to-mid"
ok "... as a regular file" test -f "$WORK/follow/link-to-mid" -a ! -L "$WORK/follow/link-to-mid"

# --verify on a clean copy passes and reports no error.
"$STAGE" copy --json --verify --piece-size 2M "$S/a" "$WORK/verified" > "$WORK/v.json" 2>/dev/null
is "--verify copy exits 0" $? 0
is "--verify copy: no errors" "$(json_field "$WORK/v.json" errors)" 0

# type=file, into an existing directory and to a new name.
"$STAGE" copy --type file "$S/a/mid.bin" "$WORK/verified" 2>/dev/null
ok "type=file into an existing directory keeps the name" cmp -s "$S/a/mid.bin" "$WORK/verified/mid.bin"
"$STAGE" copy --type file "$S/empty" "$WORK/newdir/renamed" 2>/dev/null
ok "type=file to a new path creates parents" test -f "$WORK/newdir/renamed"

# On a terminal: a progress bar with rate and ETA (script(1) gives a pty).
if command -v script > /dev/null; then
    mkdir -p "$WORK/slow"; head -c 1000000 /dev/urandom > "$WORK/slow/f"
    script -qec "'$STAGE' copy --max-bw 1M '$WORK/slow' '$WORK/slow-copy'" /dev/null > "$WORK/tty.out" 2>&1
    ok "progress bar with percentage, rate and ETA on a terminal" grep -q '\[[#.]*\] *[0-9]*% .* MiB/s ETA [0-9]*:[0-9][0-9]' "$WORK/tty.out"
else
    n=$((n + 1)); echo "ok $n # SKIP script(1) not installed"
fi
"$STAGE" copy --json "$WORK/slow" "$WORK/slow-copy2" 2>&1 > /dev/null | grep -q ETA
is "no progress bar when not on a terminal" $? 1

# Bad requests.
"$STAGE" copy "$S" "$S/a/inside" 2> "$WORK/err"; rc=$?
is "copy into its own source: exit 2" $rc 2
ok "... says why" grep -q "is inside the source" "$WORK/err"
"$STAGE" copy "$WORK/nonexistent" "$WORK/x" 2> "$WORK/err"; rc=$?
is "missing source: exit 1" $rc 1
ok "... names path, operation and errno" grep -q "FAILED $WORK/nonexistent: open source directory: No such file or directory (errno 2)" "$WORK/err"
is "... in one line, not again in the summary" "$(grep -c nonexistent "$WORK/err")" 1
ok "... which counts it" grep -q "1 errors: NOT everything was copied (the FAILED lines above)" "$WORK/err"
# A request short of an argument says which (not only the usage).
"$STAGE" in /x 2> "$WORK/err"; rc=$?
is "in SRC without DST: exit 2" $rc 2
ok "... names DST as missing" grep -q "^adafs-stage: missing DST after SRC '/x'$" "$WORK/err"
ok "... and the usage in one line, not the whole help" \
    test "$(wc -l < "$WORK/err")" = 2 -a "$(grep -c '^usage: adafs-stage' "$WORK/err")" = 1
"$STAGE" out 2> "$WORK/err"; rc=$?
is "out alone: exit 2" $rc 2
ok "... names SRC and DST" grep -q "^adafs-stage: missing SRC and DST after the action 'out'$" "$WORK/err"
"$STAGE" 2> "$WORK/err"; rc=$?
is "no arguments: exit 2" $rc 2
ok "... names all three" grep -q "^adafs-stage: missing the action (in, out or copy), SRC and DST$" "$WORK/err"
"$STAGE" copy "$S" "$D" extra 2> "$WORK/err"; rc=$?
is "an argument after DST: exit 2" $rc 2
ok "... names it" grep -q "^adafs-stage: 1 argument too many, from 'extra' after DST '$D'$" "$WORK/err"
"$STAGE" copy --worker 3/3 "$S" "$D" 2> "$WORK/err"; rc=$?
is "--worker 3/3: exit 2" $rc 2
ok "... says why" grep -q "expected K/N with 0 <= K < N" "$WORK/err"
"$STAGE" copy --max-bw 12QB "$S" "$D" 2> "$WORK/err"; rc=$?
is "--max-bw 12QB: exit 2" $rc 2
"$STAGE" sideways "$S" "$D" 2> "$WORK/err"; rc=$?
is "unknown action: exit 2" $rc 2
ok "... names it" grep -q "unknown action 'sideways'" "$WORK/err"
chmod -R u+w "$S" "$D" 2>/dev/null
done_testing
