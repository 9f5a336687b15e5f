#!/bin/bash
# One stage of a set, as one unit for a timer outside (to time pairs of
# runs in turn, e.g. 2 workers against one process):
#
#   bench/stage/once.sh BUILD_DIR N in|out SRC_SET_DIR
#
# N processes (1: one, no --worker; else --worker K/N, all at once;
# THREADS threads each, default 8, as a job's agents give
# AdafsStageThreads) stage SRC_SET_DIR into a fresh directory of the running
# instance $FS (adafs-ctl start --base $FS --mount $MNT), or stage out
# /base.NAME (NAME: the set directory's name, staged in once beforehand)
# into a fresh directory under $OUT. What it copied is removed afterwards
# in the background, in a session of its own (outside a timer's process
# group, inside the next run's time: pairs in turn share it). Each
# process's JSON summary goes to $J. Exits 1 if any process failed.
set -u
B=$(cd "${1:?usage: once.sh BUILD_DIR N in|out SRC_SET_DIR}" && pwd)
n=${2:?} dir=${3:?} set=${4:?}
ST=$B/stager/adafs-stage th=${THREADS:-8}
export LD_LIBRARY_PATH=$B/agent/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
tag=$$.$(date +%s%N) rc=0 pids=""
name=$(basename "$set")
if [ "$dir" = in ]; then src=$set dst=/p$tag
else src=/base.$name dst=$OUT/p$tag; fi
if [ "$n" = 1 ]; then
    "$ST" "$dir" --allow-root --json --threads "$th" --instance "$FS/instance" "$src" "$dst" \
        > "$J/$n.$dir.$name.$tag.0.json" || rc=1
else
    for k in $(seq 0 $((n - 1))); do
        "$ST" "$dir" --allow-root --json --threads "$th" --instance "$FS/instance" --worker "$k/$n" \
            "$src" "$dst" > "$J/$n.$dir.$name.$tag.$k.json" &
        pids="$pids $!"
    done
    for p in $pids; do wait "$p" || rc=1; done
fi
if [ "$dir" = out ]; then
    setsid -f rm -rf "$dst" > /dev/null 2>&1 < /dev/null
else
    setsid -f env LD_PRELOAD="$B/agent/.libs/libadafs_preload.so" ADAFS_INSTANCE="$FS/instance" \
        rm -rf "$MNT$dst" > /dev/null 2>&1 < /dev/null
fi
exit $rc
