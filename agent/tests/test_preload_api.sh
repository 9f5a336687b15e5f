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
echo "1..$TAP_N"
