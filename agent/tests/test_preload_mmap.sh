#!/bin/sh
# mmap of adafs files through the interposer (tests/mmap_check.c): first
# on a local directory, which checks the expectations themselves against
# the kernel, then under libadafs_preload.so against 1 and 4 servers.
set -u
. "${srcdir:-.}/tests/preload_common.sh"
CHECK=${abs_builddir:-.}/tests/mmap_check

mkdir -p "$WORK/local"
run_check "local directory" "$CHECK" "$WORK/local" local
# A plain mapping says nothing on stderr (doc/preload.md, mmap).
quiet_mappings() {
    if grep -q "mmap of an adafs file" "$WORK/check.tap"; then
        not_ok "$1: the mappings said nothing on stderr"
        grep "mmap of an adafs file" "$WORK/check.tap" | sed 's/^/#   /'
    else
        ok "$1: the mappings said nothing on stderr"
    fi
}

for n in 1 4; do
    start_instance "m$n" "$n"
    pl mkdir "$MNT/maps"
    run_check "$n servers" pl "$CHECK" "$MNT/maps" preload
    quiet_mappings "$n servers"
done

# The servers' data on a noexec file system, as in a job's store
# (agent/agentd/store.c): mapped directly all the same, mprotect to
# PROT_EXEC through anonymous memory. Mounting a tmpfs takes root.
NOEXEC=""
finish() {
    cleanup
    if [ -n "$NOEXEC" ]; then
        umount -l "$NOEXEC" && rmdir "$NOEXEC"
    fi
}
trap finish EXIT
if [ "$(id -u)" -eq 0 ] && NOEXEC=$(mktemp -d "${TMPDIR:-/tmp}/adafs-noexec.XXXXXX") &&
        mount -t tmpfs -o noexec,nosuid,nodev,size=2g adafs-noexec "$NOEXEC"; then
    save_work=$WORK
    WORK=$NOEXEC
    start_instance noexec 2
    WORK=$save_work
    pl mkdir "$MNT/maps"
    run_check "noexec data directory" pl "$CHECK" "$MNT/maps" preload
    quiet_mappings "noexec data directory"
else
    [ -d "$NOEXEC" ] && rmdir "$NOEXEC"
    NOEXEC=""
    skip "noexec data directory" "mounting a noexec tmpfs takes root"
fi
echo "1..$TAP_N"
