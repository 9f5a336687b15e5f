#!/bin/sh
# Stage-in and stage-out through a real 4-server adafs instance on loopback
# (libadafs directly, no LD_PRELOAD): trees, sparse and split files, modes
# and mtimes, restart of stage-out, lists, N workers, and the per-node quota
# giving ENOSPC for exactly the files that are missing.
. "${srcdir:-.}/tests/lib.sh"
CTL=${ADAFS_CTL:-$PWD/../agent/adafs-ctl}
if [ ! -x "$CTL" ]; then echo "1..0 # SKIP $CTL not built"; exit 0; fi
FS=$WORK/fs
start_fs() { "$CTL" start --servers 4 --base "$FS" "$@" > /dev/null 2> "$WORK/ctl.err" ||
    { cat "$WORK/ctl.err" >&2; echo "Bail out! adafs-ctl start failed"; exit 1; }; }
stop_fs() { "$CTL" stop --base "$FS" > /dev/null 2>&1; }
trap 'stop_fs; cleanup' EXIT
I="--allow-root --instance $FS/instance"
S=$WORK/src O=$WORK/out
mkdir -p "$S/a/b/c" "$S/with space/ü"
i=0; while [ $i -lt 500 ]; do head -c $((i * 13)) /dev/urandom > "$S/a/b/f$i"; i=$((i + 1)); done
: > "$S/empty"
echo spaced > "$S/with space/ü/名前 file"
head -c 5000000 /dev/urandom > "$S/a/split"          # 5 pieces of 1 MiB
head -c 1500000 /dev/urandom > "$S/a/stream"         # streamed, > 1 MiB
truncate -s 1G "$S/sparse"; echo end >> "$S/sparse"
chmod 0640 "$S/a/split"; chmod 0750 "$S/a/b/c"; touch -d '2015-05-05 05:05:05.5' "$S/a/stream" "$S/a/b"
start_fs

"$STAGE" in $I --json --piece-size 1M "$S" /in > "$WORK/in.json" 2> "$WORK/in.err"
is "stage-in exits 0" $? 0
is "stage-in: 505 files" "$(json_field "$WORK/in.json" files)" 505
"$STAGE" out $I --json --piece-size 1M /in "$O" > "$WORK/out.json" 2> "$WORK/out.err"
is "stage-out exits 0" $? 0
ok "in + out: contents identical" diff -r "$S" "$O"
tree_listing "$S" > "$WORK/s.lst"; tree_listing "$O" > "$WORK/o.lst"
ok "in + out: sizes, modes and mtimes identical" cmp -s "$WORK/s.lst" "$WORK/o.lst"
ok "sparse file came back sparse" test "$(stat -c %b "$O/sparse")" -lt 1000
"$STAGE" in $I --json --piece-size 1M "$S" "$(sed -n 's/^mount=//p' "$FS/instance")/in" > "$WORK/in2.json" 2>/dev/null
is "stage-in again (path given with the mount point): all unchanged" "$(json_field "$WORK/in2.json" unchanged)" 505

# Stage-in as the job user: a root-only source is refused, never copied.
if [ "$(id -u)" -eq 0 ] && { id adafs-test > /dev/null 2>&1 ||
        useradd --system --no-create-home --shell /usr/sbin/nologin adafs-test; }; then
    install -o adafs-test -m 0600 "$FS/instance" "$WORK/user.instance"
    mkdir -p "$WORK/usrc"; echo mine > "$WORK/usrc/readable"; echo root > "$WORK/usrc/rootonly"
    chmod 0600 "$WORK/usrc/rootonly"
    "$STAGE" in --user adafs-test --instance "$WORK/user.instance" --json "$WORK/usrc" /user \
        > "$WORK/user.json" 2>/dev/null
    is "stage-in as adafs-test with a root-only source: exit 1" $? 1
    ok "root-only source reported with EACCES" grep -q "\"path\":\"$WORK/usrc/rootonly\",\"errno\":13" "$WORK/user.json"
    "$STAGE" out $I --json /user "$WORK/uout" > /dev/null 2>&1
    ok "the readable file was staged in, the root-only one was not" \
        sh -c "cmp -s '$WORK/usrc/readable' '$WORK/uout/readable' && test ! -e '$WORK/uout/rootonly'"
else
    for i in 1 2 3; do n=$((n + 1)); echo "ok $n # SKIP needs root and user adafs-test"; done
fi

# Restart of an interrupted stage-out.
rm -rf "$O"
"$STAGE" out $I --max-bw 2M --piece-size 1M --json --progress-json "$WORK/progress" /in "$O" \
    > "$WORK/killed.json" 2>/dev/null &
kill_when_done 5 "$WORK/progress" $!
ok "stage-out was interrupted in mid-copy" test ! -s "$WORK/killed.json"
"$STAGE" out $I --piece-size 1M --json /in "$O" > "$WORK/resumed.json" 2>/dev/null
is "resumed stage-out exits 0" $? 0
ok "it skipped what was complete" test "$(json_field "$WORK/resumed.json" unchanged)" -gt 0
tree_listing "$O" > "$WORK/o.lst"
ok "resumed stage-out identical to the source" sh -c "cmp -s '$WORK/s.lst' '$WORK/o.lst' && diff -r '$S' '$O'"

# A list, and three workers (which finish the run themselves, and leave no
# mailboxes in the instance).
printf '%s\n' "$S/a/stream staged/stream" "\"$S/with space\" staged/spaced" "$S/nope staged/nope" "bad line here" > "$WORK/list"
"$STAGE" in $I --type list --json "$WORK/list" / > "$WORK/list.json" 2>/dev/null
is "list stage-in: exit 1 for the bad entries" $? 1
"$STAGE" out $I --type file /staged/stream "$WORK/back-stream" 2>/dev/null
ok "list entry staged in (checked by staging it out)" cmp -s "$S/a/stream" "$WORK/back-stream"
ok "missing source and bad line reported" sh -c "grep -q '\"path\":\"$S/nope\",\"errno\":2' '$WORK/list.json' && grep -q 'line 4: unexpected third field' '$WORK/list.json'"
for k in 0 1 2; do "$STAGE" in $I --worker $k/3 --piece-size 1M --json "$S" /w > "$WORK/w$k.json" 2>/dev/null & done; wait
"$STAGE" out $I /w "$WORK/wout" 2>/dev/null
tree_listing "$WORK/wout" > "$WORK/w.lst"
ok "3 workers: identical tree" sh -c "cmp -s '$WORK/s.lst' '$WORK/w.lst' && diff -r '$S' '$WORK/wout'"
t=0; for k in 0 1 2; do t=$((t + $(json_field "$WORK/w$k.json" bytes))); done
is "3 workers wrote each byte once" $t "$(json_field "$WORK/in.json" bytes)"
"$STAGE" out $I --type file /.adafs-stage "$WORK/leftover" 2> "$WORK/leftover.err"
ok "no mailbox directory is left in the instance" grep -q "No such file" "$WORK/leftover.err"

# Stage-out of big files goes from the servers' sockets straight into the
# destination: holes stay holes, old data under them is overwritten with
# zeros (two workers over a stale copy), a full destination gives ENOSPC.
mkdir -p "$WORK/h"; truncate -s 6M "$WORK/h/holey"
printf head | dd of="$WORK/h/holey" conv=notrunc status=none
printf tail | dd of="$WORK/h/holey" bs=1 seek=$((3 * 1024 * 1024)) conv=notrunc status=none
"$STAGE" in $I --piece-size 1M "$WORK/h" /h 2>/dev/null
"$STAGE" out $I --piece-size 1M /h "$WORK/hout" 2>/dev/null
ok "holey file staged out intact and sparse" \
    sh -c "cmp -s '$WORK/h/holey' '$WORK/hout/holey' && test \$(stat -c %b '$WORK/hout/holey') -lt 100"
mkdir -p "$WORK/hstale"; head -c 6M /dev/zero | tr '\0' '\377' > "$WORK/hstale/holey"
for k in 0 1; do "$STAGE" out $I --worker $k/2 --piece-size 1M /h "$WORK/hstale" 2>/dev/null & done; wait
ok "2 workers over a stale copy: its old bytes in the holes became zeros" \
    cmp -s "$WORK/h/holey" "$WORK/hstale/holey"
# Whole files of up to 32 chunks go in one request each, sent from the
# source file; a file with holes takes the way that keeps them.
mkdir -p "$WORK/m"; head -c 3000000 /dev/urandom > "$WORK/m/dense"
truncate -s 3M "$WORK/m/holey"; printf tail >> "$WORK/m/holey"
chmod 0604 "$WORK/m/dense"; touch -d '2016-06-06 06:06:06.25' "$WORK/m/dense"
before=$(du -sk "$FS" | cut -f1)
"$STAGE" in $I "$WORK/m" /m 2>/dev/null
is "3 MB files: stage-in exits 0" $? 0
grown=$(( $(du -sk "$FS" | cut -f1) - before ))
"$STAGE" out $I /m "$WORK/mout" 2>/dev/null
tree_listing "$WORK/m" > "$WORK/m.lst"; tree_listing "$WORK/mout" > "$WORK/mout.lst"
ok "3 MB files staged in and out: contents, modes and mtimes identical" \
    sh -c "diff -r '$WORK/m' '$WORK/mout' && cmp -s '$WORK/m.lst' '$WORK/mout.lst'"
ok "the holey one was not written whole (servers grew by $grown KiB for 2930 KiB of data)" \
    test "$grown" -lt 4500
if [ "$(id -u)" -eq 0 ] && mkdir -p "$WORK/tiny" &&
        mount -t tmpfs -o size=2m adafs-stage-test "$WORK/tiny" 2>/dev/null; then
    "$STAGE" out $I --type file --json /in/a/split "$WORK/tiny/split" > "$WORK/tiny.json" 2>/dev/null
    is "stage-out into a full file system: exit 1" $? 1
    ok "reported with ENOSPC and what failed" grep -q '"path":"/in/a/split","errno":28,"error":"No space left on device","what":"copy source to destination"' "$WORK/tiny.json"
    ok "no partial file left behind" test ! -e "$WORK/tiny/split"
    umount "$WORK/tiny"
else
    for i in 1 2 3; do n=$((n + 1)); echo "ok $n # SKIP needs root to mount a small tmpfs"; done
fi
stop_fs

# The quota: a full node gives ENOSPC, with the files that are missing.
rm -rf "$FS"; start_fs --quota 2M
mkdir -p "$WORK/q"; for i in 1 2 3 4 5 6 7 8 9 10 11 12; do head -c 1000000 /dev/urandom > "$WORK/q/f$i"; done
"$STAGE" in $I --threads 1 --json "$WORK/q" /q > "$WORK/q.json" 2>/dev/null
is "over quota: exit 1" $? 1
"$STAGE" out $I --json /q "$WORK/qout" > /dev/null 2>&1
missing=$(for i in 1 2 3 4 5 6 7 8 9 10 11 12; do cmp -s "$WORK/q/f$i" "$WORK/qout/f$i" 2>/dev/null || echo "$WORK/q/f$i"; done | sort)
reported=$(grep -o "\"path\":\"[^\"]*\",\"errno\":28" "$WORK/q.json" | sed 's/"path":"\([^"]*\)".*/\1/' | sort)
ok "some files reported with ENOSPC" test -n "$reported"
is "exactly the missing files are reported with ENOSPC" "$reported" "$missing"

# Small files go in batches (one request per server for many files): a
# quota running out inside a batch still reports exactly the missing files.
mkdir -p "$WORK/qs"; i=0; while [ $i -lt 500 ]; do head -c 20000 /dev/urandom > "$WORK/qs/f$i"; i=$((i + 1)); done
"$STAGE" in $I --json "$WORK/qs" /qs > "$WORK/qs.json" 2>/dev/null
is "small files over quota: exit 1" $? 1
"$STAGE" out $I --json /qs "$WORK/qsout" > /dev/null 2>&1
missing=$(i=0; while [ $i -lt 500 ]; do cmp -s "$WORK/qs/f$i" "$WORK/qsout/f$i" 2>/dev/null || echo "$WORK/qs/f$i"; i=$((i + 1)); done | sort)
reported=$(grep -o "\"path\":\"[^\"]*\",\"errno\":28" "$WORK/qs.json" | sed 's/"path":"\([^"]*\)".*/\1/' | sort)
ok "small files: some reported with ENOSPC" test -n "$reported"
is "small files: exactly the missing ones are reported with ENOSPC" "$reported" "$missing"
stop_fs

# One file's error inside a batch fails only that file: directories stand
# where two of the files should go.
rm -rf "$FS"; start_fs
mkdir -p "$WORK/pre/f7" "$WORK/pre/f300"
"$STAGE" in $I "$WORK/pre" /e 2>/dev/null
"$STAGE" in $I --json "$S/a/b" /e > "$WORK/e.json" 2>/dev/null
is "two files over directories: exit 1" $? 1
reported=$(grep -o "\"path\":\"[^\"]*\",\"errno\":21" "$WORK/e.json" | sed 's/"path":"\([^"]*\)".*/\1/' | sort | tr '\n' ' ')
is "exactly those two are reported with EISDIR" "$reported" "$S/a/b/f300 $S/a/b/f7 "
is "the other 498 files were copied" "$(json_field "$WORK/e.json" files)" 498
"$STAGE" out $I /e "$WORK/eout" 2>/dev/null
ok "and read back intact" sh -c "for i in 0 1 6 8 299 301 499; do cmp -s '$S/a/b/f'\$i '$WORK/eout/f'\$i || exit 1; done"
stop_fs
done_testing
