#!/bin/bash
# Sets up one paired call of once.sh (a timer outside runs pairs of it in
# turn, e.g. 2 workers against one process, on the same instance):
#
#   bench/stage/prepare.sh BUILD_DIR SET     # small | mid | big | uneven
#   bench/stage/prepare.sh BUILD_DIR stop
#
# Generates SET (sets.sh) under $BENCH_ROOT/src (root.sh: tmpfs by
# default), starts a fresh 4-server instance in $BENCH_ROOT/fs (stopping
# the one before), stages SET into it once as /base.SET for stage-out
# runs, and prints what once.sh needs (FS, MNT, OUT, J) as lines for eval.
# `stop` stops the instance and once.sh's stage-in instances and removes
# them, the copies and the summaries.
set -euo pipefail
B=$(cd "${1:?usage: prepare.sh BUILD_DIR SET|stop}" && pwd) set=${2:?}
here=$(cd "$(dirname "$0")" && pwd)
# Stopping frees memory: root.sh's check of what is free is not for it (it
# refused to stop an instance whose copies filled tmpfs).
[ "$set" = stop ] && BENCH_TMPFS_NEED_GIB=0
. "$here/root.sh"
CTL=$B/agent/adafs-ctl STAGE=$B/stager/adafs-stage
export LD_LIBRARY_PATH=$B/agent/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
FS=$BENCH_ROOT/fs MNT=/adafs-bench-stage OUT=$BENCH_ROOT/out J=$BENCH_ROOT/json
# once.sh's stage-in instances, one per N ($FS.in.N), each after the
# removal in progress (its lock) is done; then the rest.
for inst in "$FS".in.*[0-9]; do
    [ -d "$inst" ] || continue
    flock "$inst.lock" "$CTL" stop --base "$inst" > /dev/null 2>&1 || true
    rm -rf "$inst" "$inst.lock"
done
for lock in "$OUT".rm.*.lock; do [ -e "$lock" ] && flock "$lock" rm -f "$lock"; done
"$CTL" stop --base "$FS" > /dev/null 2>&1 || true
rm -rf "$FS" "$OUT" "$J"
[ "$set" = stop ] && exit 0
W=$BENCH_ROOT SMALL=${SMALL:-100000} MID=${MID:-1000} BIG=${BIG:-4} BIGMIB=${BIGMIB:-1024}
say() { echo "[$(date +%T)] $*" >&2; }
. "$here/sets.sh"
case $set in small|mid|big|uneven) make_set "$set" ;;
*) echo "prepare.sh: unknown set '$set' (small mid big uneven)" >&2; exit 2 ;; esac
mkdir -p "$OUT" "$J"
"$CTL" start --servers 4 --base "$FS" --mount "$MNT" > /dev/null
"$STAGE" in --allow-root --quiet --instance "$FS/instance" "$W/src/$set" "/base.$set"
say "instance $FS holds /base.$set"
echo "export FS=$FS MNT=$MNT OUT=$OUT J=$J SRC=$W/src/$set"
