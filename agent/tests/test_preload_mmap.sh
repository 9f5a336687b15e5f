#!/bin/sh
# mmap of adafs files through the interposer (tests/mmap_check.c): first
# on a local directory, which checks the expectations themselves against
# the kernel, then under libadafs_preload.so against 1 and 4 servers.
set -u
. "${srcdir:-.}/tests/preload_common.sh"
CHECK=${abs_builddir:-.}/tests/mmap_check

# run_check LABEL COMMAND...: the program's TAP, renumbered into ours
run_check() {
    label=$1
    shift
    "$@" >"$WORK/check.tap" 2>&1
    status=$?
    while IFS= read -r line; do
        case $line in
        "ok "*) ok "$label: ${line#ok * - }" ;;
        "not ok "*) not_ok "$label: ${line#not ok * - }" ;;
        "1.."*) ;;
        *) echo "# $line" ;;
        esac
    done <"$WORK/check.tap"
    if [ "$status" -ne 0 ] && ! grep -q '^not ok' "$WORK/check.tap"; then
        not_ok "$label: mmap_check exited with status $status"
    fi
}

mkdir -p "$WORK/local"
run_check "local directory" "$CHECK" "$WORK/local" local
for n in 1 4; do
    start_instance "m$n" "$n"
    pl mkdir "$MNT/maps"
    run_check "$n servers" pl "$CHECK" "$MNT/maps" preload
done
echo "1..$TAP_N"
