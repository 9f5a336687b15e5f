#!/bin/bash
# One stage of a set, as one unit for a timer outside (to time pairs of
# runs in turn, e.g. 2 workers against one process):
#
#   bench/stage/once.sh BUILD_DIR N in|out SRC_SET_DIR
#
# N processes (1: one, no --worker; else --worker K/N, all at once;
# THREADS threads each, default 8, as a job's agents give
# AdafsStageThreads) stage SRC_SET_DIR in, or stage /base.NAME (NAME: the
# set directory's name, staged in once by prepare.sh into the instance $FS)
# out into a fresh directory under $OUT. Each process's JSON summary goes
# to $J. Exits 1 if any process failed.
#
# What a stage copied is removed after it, outside its own time and one
# removal at a time, so that copies never pile up in memory (tmpfs):
# - stage-in goes into a 4-server instance of N's own, $FS.in.N, fresh for
#   every run: after the stage it is stopped (its servers wipe their roots,
#   which on tmpfs takes a moment) and started again, in the background.
#   Removing the copy through the preload library instead took 60 s and
#   more per copy; a call of 12 stages piled up 11 such removals and 11 GiB
#   of tmpfs (run 14), likely run 13's running out of memory.
# - stage-out's copy is removed with rm -rf in the background (about 3 s
#   for the 100,000 files on tmpfs, longer than a stage).
# The next run of the same kind and N waits for that removal before it
# starts staging, so at most one copy per N is being removed while the
# other N stages; if it had to wait (the removal outlasted the other
# command's run in between), it says how long in $J/waits, since that wait
# is then inside its time.
set -u
B=$(cd "${1:?usage: once.sh BUILD_DIR N in|out SRC_SET_DIR}" && pwd)
n=${2:?} dir=${3:?} set=${4:?}
ST=$B/stager/adafs-stage CTL=$B/agent/adafs-ctl th=${THREADS:-8}
export LD_LIBRARY_PATH=$B/agent/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
tag=$$.$(date +%s%N) rc=0 pids=""
name=$(basename "$set")
if [ "$dir" = in ]; then inst=$FS.in.$n src=$set dst=/p$tag lock=$FS.in.$n.lock
else inst=$FS src=/base.$name dst=$OUT/p$tag lock=$OUT.rm.$n.lock; fi

# The previous removal of this kind holds the lock until it is done; this
# run holds it from here and hands it to its own removal.
t0=$(date +%s%N)
exec 9> "$lock"
flock -w 300 9 || { echo "once.sh: $lock still held after 300 s (a removal hung?)" >&2; exit 1; }
waited=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$waited" -lt 50 ] || echo "$(date -u +%T) $n $dir waited $waited ms for the previous removal" >> "$J/waits"
if [ ! -f "$inst/instance" ]; then
    # First use of N's instance (the timer's warm-up run): started in a
    # session of its own, so that its servers are not the timer's children.
    echo "$(date -u +%T) $n $dir started $inst" >> "$J/waits"
    # Not fd 9: servers holding the lock would hold it for their lifetime.
    setsid -w "$CTL" start --servers 4 --base "$inst" > /dev/null 2>> "$J/waits" < /dev/null 9>&- || exit 1
fi

if [ "$n" = 1 ]; then
    "$ST" "$dir" --allow-root --json --threads "$th" --instance "$inst/instance" "$src" "$dst" \
        > "$J/$n.$dir.$name.$tag.0.json" || rc=1
else
    for k in $(seq 0 $((n - 1))); do
        "$ST" "$dir" --allow-root --json --threads "$th" --instance "$inst/instance" --worker "$k/$n" \
            "$src" "$dst" > "$J/$n.$dir.$name.$tag.$k.json" &
        pids="$pids $!"
    done
    for p in $pids; do wait "$p" || rc=1; done
fi

# The removal, in a session of its own (outside the timer's process
# group, which the timer may kill once this script ends), holding the lock
# (fd 9) until it is done. It says "up" once it runs in its new session,
# and the command substitution returns only then: no window in which it
# is still in the group.
if [ "$dir" = out ]; then
    up=$(setsid -f sh -c 'echo up; exec > /dev/null; rm -rf "$1"' sh "$dst" 2>> "$J/waits" < /dev/null)
else
    up=$(setsid -f sh -c 'echo up; exec > /dev/null; "$1" stop --base "$2" > /dev/null &&
        "$1" start --servers 4 --base "$2" > /dev/null 9>&-' sh "$CTL" "$inst" 2>> "$J/waits" < /dev/null)
fi
[ "$up" = up ] || { echo "once.sh: the removal of $dst did not start" >&2; rc=1; }
exit $rc
