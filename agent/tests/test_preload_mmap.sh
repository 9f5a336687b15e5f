#!/bin/sh
# mmap of adafs files through the interposer (tests/mmap_check.c): first
# on a local directory, which checks the expectations themselves against
# the kernel, then under libadafs_preload.so against 1 and 4 servers.
set -u
. "${srcdir:-.}/tests/preload_common.sh"
CHECK=${abs_builddir:-.}/tests/mmap_check

mkdir -p "$WORK/local"
run_check "local directory" "$CHECK" "$WORK/local" local
for n in 1 4; do
    start_instance "m$n" "$n"
    pl mkdir "$MNT/maps"
    run_check "$n servers" pl "$CHECK" "$MNT/maps" preload
done
echo "1..$TAP_N"
