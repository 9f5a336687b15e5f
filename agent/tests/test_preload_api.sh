#!/bin/sh
# The interposer's own behaviour, checked from inside a plain C program
# (tests/preload_api.c) that runs under it against 1, 2 and 4 servers:
# descriptors, fork and exec, working directories, stdio, directory
# streams, and every documented refusal with its exact errno.
set -u
. "${srcdir:-.}/tests/preload_common.sh"
API=${abs_builddir:-.}/tests/preload_api
total=0
failed=0
for n in 1 2 4; do
    start_instance "api$n" "$n"
    mkdir -p "$WORK/out$n"
    # each run prints its own TAP; renumber into this script's plan
    pl "$API" "$MNT" "$WORK/out$n" >"$WORK/api$n.tap" 2>&1
    status=$?
    while IFS= read -r line; do
        case $line in
        "ok "*) ok "$n servers: ${line#ok * - }" ;;
        "not ok "*) not_ok "$n servers: ${line#not ok * - }" ;;
        "1.."*) ;;
        *) echo "# $line" ;;
        esac
    done <"$WORK/api$n.tap"
    if [ "$status" -ne 0 ] && ! grep -q '^not ok' "$WORK/api$n.tap"; then
        not_ok "$n servers: preload_api exited with status $status"
    fi
done
# Bad configuration: each case names the problem in one line on stderr.
# stderr_has DESCRIPTION TEXT COMMAND...: COMMAND's stderr contains TEXT.
stderr_has() {
    desc=$1
    text=$2
    shift 2
    "$@" >"$WORK/out" 2>"$WORK/err"
    if grep -qF -- "$text" "$WORK/err"; then
        ok "$desc"
    else
        not_ok "$desc"
        sed 's/^/#   /' "$WORK/err" | head -n 10
    fi
}
pl sh -c "echo kept > '$MNT/kept'"
stderr_has "an unusable instance file is named in one line" \
    "cannot use the adafs instance ADAFS_INSTANCE=$WORK/none" \
    pl ADAFS_INSTANCE="$WORK/none" cat "$MNT/kept"
stderr_has "and calls under the mount fail with EIO" "Input/output error" \
    pl ADAFS_INSTANCE="$WORK/none" cat "$MNT/kept"
pl ADAFS_INSTANCE="$WORK/none" cat "$SRCDIR/tests/preload_sql.sql" >"$WORK/got" 2>/dev/null
same "while calls elsewhere still work" "$SRCDIR/tests/preload_sql.sql" "$WORK/got"
# ADAFS_TRANSPORT: empty is the default; a bad value is named once, and
# every call under the mount fails with EINVAL.
echo kept >"$WORK/exp"
pl ADAFS_TRANSPORT= cat "$MNT/kept" >"$WORK/got" 2>"$WORK/err"
same "ADAFS_TRANSPORT set but empty: the default" "$WORK/exp" "$WORK/got"
if test -s "$WORK/err"; then
    not_ok "and nothing on stderr"
    sed 's/^/#   /' "$WORK/err" | head -n 5
else
    ok "and nothing on stderr"
fi
pl ADAFS_TRANSPORT=udp cat "$MNT/kept" "$MNT/kept" >"$WORK/out" 2>"$WORK/err"
if [ "$(grep -c "ADAFS_TRANSPORT is 'udp'" "$WORK/err")" = 1 ] &&
   [ "$(grep -c "$MNT/kept: Invalid argument" "$WORK/err")" = 2 ]; then
    ok "ADAFS_TRANSPORT=udp: named once on stderr, both opens fail with EINVAL"
else
    not_ok "ADAFS_TRANSPORT=udp: named once on stderr, both opens fail with EINVAL"
    sed 's/^/#   /' "$WORK/err" | head -n 10
fi
stderr_has "a relative ADAFS_MOUNT is refused" \
    "ADAFS_MOUNT=relative/mnt is not an absolute path" \
    pl ADAFS_MOUNT=relative/mnt true
stderr_has "ADAFS_MOUNT=/ is refused" "ADAFS_MOUNT=/ would hide the whole kernel file system" \
    pl ADAFS_MOUNT=/ true
stderr_has "a malformed ADAFS_PRELOAD_FDS is reported" \
    'ignoring malformed ADAFS_PRELOAD_FDS at "12,zz"' \
    pl ADAFS_PRELOAD_FDS=12,zz true
stderr_has "a handed-on descriptor that was not inherited is reported" \
    "names descriptor 77 for /kept, but it was not inherited" \
    pl ADAFS_PRELOAD_FDS=77,0,0,5:/kept true
stderr_has "a handed-on number that is not the adafs reservation is left alone" \
    "names descriptor 0 for /kept, but it is no longer the adafs reservation" \
    pl ADAFS_PRELOAD_FDS=0,0,0,5:/kept true
stderr_has "a handed-on file that is gone is reported" \
    "cannot reopen inherited descriptor 9 ($MNT/gone): No such file or directory" \
    pl bash -c "exec 9> '$MNT/gone'; rm '$MNT/gone'; exec true"
pl cat "$MNT/kept" >"$WORK/got"
echo kept >"$WORK/exp"
same "an instance keeps working for others meanwhile" "$WORK/exp" "$WORK/got"

# every call reaching adafs passes the one door, which counts it
pl ADAFS_PRELOAD_STATS="$WORK/stats" cat "$MNT/kept" >/dev/null
pl ADAFS_PRELOAD_STATS="$WORK/stats" cat "$SRCDIR/tests/preload_sql.sql" >/dev/null
if grep -q ' open=1 close=1 read=2 write=0 seek=0 stat=1 ' "$WORK/stats" &&
   grep -q ' open=0 close=0 read=0 write=0 seek=0 stat=0 ' "$WORK/stats"; then
    ok "ADAFS_PRELOAD_STATS counts what cat did in adafs, and nothing for a local file"
else
    not_ok "ADAFS_PRELOAD_STATS counts what cat did in adafs, and nothing for a local file"
    sed 's/^/#   /' "$WORK/stats"
fi

echo "1..$TAP_N"
