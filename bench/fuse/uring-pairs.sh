#!/bin/sh
# [RAISED=1] [REPEATS=N] bench/fuse/uring-pairs.sh BUILD_DIR BACKING
#
# FUSE over io_uring against /dev/fuse for 1 MiB reads (doc/fuse.md, "What
# the goal of 60% would take"; doc/benchmarks.md, issue 26, session 21):
# readpairs.sh (REPEATS, default 11) with the interposer, this build's
# adafs-fuse and bench/fuse/uring-standin serving BACKING (a 1 GiB file)
# over /dev/fuse (nothing fetched; spliced from the file's pages) and over
# io_uring (nothing fetched; a pread into the ring entry's payload buffer;
# the payload mapped over the file's pages), 1 process with malloc's
# buffer and with one on a page, 2 processes. RAISED=1: with
# fs.pipe-max-size=2097152 and fs.fuse.max_pages_limit=257 for the run
# (restored after). Needs fuse.enable_uring=Y (the fuse module's
# parameter, root) and root. Run it under flock /tmp/adafs-bench.lock.
set -eu
usage="usage: uring-pairs.sh BUILD_DIR BACKING"
build=$(cd "${1:?$usage}" && pwd)
backing=${2:?$usage}
here=$(dirname "$0")
standin=$build/bench/fuse/uring-standin
[ "$(cat /sys/module/fuse/parameters/enable_uring)" = Y ] ||
    { echo "uring-pairs.sh: fuse.enable_uring is N" >&2; exit 1; }
pipe_max=$(cat /proc/sys/fs/pipe-max-size) pages_max=$(cat /proc/sys/fs/fuse/max_pages_limit)
restore() {
    echo "$pipe_max" >/proc/sys/fs/pipe-max-size
    echo "$pages_max" >/proc/sys/fs/fuse/max_pages_limit
}
trap restore EXIT
if [ "${RAISED:-0}" = 1 ]; then
    echo 2097152 >/proc/sys/fs/pipe-max-size
    echo 257 >/proc/sys/fs/fuse/max_pages_limit
    dev_max_read=1048576
else
    dev_max_read=1032192   # a reply whole in a pipe of 1 MiB, as adafs-fuse's
fi
b=backing=$backing
for shape in "1 " "1 0" "2 "; do
    procs=${shape% *} offset=${shape#* }
    echo "# PROCS=$procs OFFSET=${offset:-malloc} RAISED=${RAISED:-0}"
    PROCS=$procs OFFSET=$offset sh "$here/readpairs.sh" "$build" "${REPEATS:-11}" \
        adafs:"$build/agent/adafs-fuse" \
        devnone:"$standin:$b,transport=dev,data=none,max_read=$dev_max_read" \
        devsplice:"$standin:$b,transport=dev,data=splice,max_read=$dev_max_read" \
        urnone:"$standin:$b,transport=uring,data=none" \
        urpread:"$standin:$b,transport=uring,data=pread" \
        urmmap:"$standin:$b,transport=uring,data=mmap,populate=0"
done
