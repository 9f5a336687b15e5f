#!/bin/sh
# A destination on a full file system: ENOSPC is reported for exactly the
# files that are missing, partial files are removed, the rest is complete.
. "${srcdir:-.}/tests/lib.sh"
if [ "$(id -u)" -ne 0 ]; then echo "1..0 # SKIP needs root to mount a small tmpfs"; exit 0; fi
S=$WORK/src M=$WORK/full
mkdir -p "$S" "$M"
mount -t tmpfs -o size=4m,nr_inodes=1000 adafs-stage-test "$M" || { echo "1..0 # SKIP cannot mount tmpfs"; exit 0; }
trap 'umount "$M"; cleanup' EXIT
for i in 1 2 3 4 5 6 7 8; do head -c 1000000 /dev/urandom > "$S/f$i"; done
"$STAGE" copy --threads 1 --json "$S" "$M/dst" > "$WORK/out.json" 2> "$WORK/err"
is "exit status 1 when the destination fills up" $? 1
copied=$(json_field "$WORK/out.json" files)
errors=$(json_field "$WORK/out.json" errors)
ok "some files fit ($copied), some did not ($errors)" test "$copied" -ge 1 -a "$errors" -ge 1
is "every file is either copied or reported" $((copied + errors)) 8
missing=$(for i in 1 2 3 4 5 6 7 8; do cmp -s "$S/f$i" "$M/dst/f$i" || echo "$S/f$i"; done | sort)
reported=$(grep -o "\"path\":\"[^\"]*\",\"errno\":28" "$WORK/out.json" | sed 's/"path":"\([^"]*\)".*/\1/' | sort)
is "the files reported with ENOSPC (errno 28) are exactly the missing ones" "$reported" "$missing"
ok "no partial file left behind" sh -c "for f in $(echo $missing | sed "s|$S/|$M/dst/|g"); do test ! -e \$f || exit 1; done"
"$STAGE" copy --threads 1 "$S" "$M/dst" 2> "$WORK/err"
ok "the text summary says No space left on device" grep -q "No space left on device (errno 28)" "$WORK/err"
ok "... and that not everything was copied" grep -q "NOT everything was copied" "$WORK/err"
done_testing
