#!/bin/bash
# What a job's server storage costs a stage-in (issue 22 point 3): one
# adafs-stage process (8 threads) stages SET into a fresh 4-server
# `adafs-ctl` instance whose servers are given, in turns,
#
#   tmpfs        a directory on tmpfs, no quota (adafs-ctl's default)
#   tmpfs.quota  the same with --quota QUOTA (the RocksDB sizing of
#                instance_space(): what a job's server gets)
#   ext4.quota   --quota QUOTA and storage on ext4 without a journal on a
#                loop device over a file on tmpfs, as the agent makes a
#                job's server storage (agentd/store.h)
#   ext4         the same without the quota
#
#   bench/stage/store_ab.sh BUILD_DIR SET_DIR [WORK_DIR]
#
# Prints per stage: variant, wall seconds, the stager's CPU, its servers'
# CPU, and the whole host's busy CPU seconds (/proc/stat: loop and ext4
# kernel threads included; other users' work too). As root. Environment:
# REPEAT (3), QUOTA (768M: a 3 GiB job on 4 nodes), VARIANTS.
set -euo pipefail
B=$(cd "${1:?usage: store_ab.sh BUILD_DIR SET_DIR [WORK_DIR]}" && pwd)
SET=${2:?}
W=${3:-/dev/shm/adafs-bench-store}
REPEAT=${REPEAT:-3} QUOTA=${QUOTA:-768M}
VARIANTS=${VARIANTS:-tmpfs tmpfs.quota ext4.quota ext4}
CTL=$B/agent/adafs-ctl ST=$B/stager/adafs-stage
export LD_LIBRARY_PATH=$B/agent/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$W"
mnt=$W/ext4 img=$W/ext4.img
cleanup() {
    "$CTL" stop --base "$W/fs" > /dev/null 2>&1 || true
    mountpoint -q "$mnt" && umount "$mnt"
    rm -f "$img"
}
trap cleanup EXIT
busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
hz=$(getconf CLK_TCK)
for rep in $(seq "$REPEAT"); do
    vs=($VARIANTS)
    k=$(( (rep - 1) % ${#vs[@]} ))
    for v in "${vs[@]:$k}" "${vs[@]:0:$k}"; do
        base=$W/fs q=()
        case $v in *quota) q=(--quota "$QUOTA") ;; esac
        case $v in ext4*)
            truncate -s 4G "$img"
            mkfs.ext4 -q -F -O ^has_journal "$img"
            mkdir -p "$mnt"; mount -o loop,nosuid,nodev,noexec "$img" "$mnt"
            base=$mnt/fs ;;
        esac
        "$CTL" start --servers 4 --base "$base" "${q[@]}" > /dev/null 2>&1
        pids=$(awk '{ print $2 }' "$base/servers")
        b0=$(busy) t0=$EPOCHREALTIME
        ( "$ST" in --allow-root --quiet --instance "$base/instance" "$SET" /x; times > "$W/times" )
        t1=$EPOCHREALTIME b1=$(busy)
        srv=0; for p in $pids; do srv=$((srv + $(awk '{ print $14 + $15 }' /proc/$p/stat))); done
        st=$(sed -n 2p "$W/times" | awk '{ n = split($0, f, " "); s = 0; for (i = 1; i <= n; i++) { split(f[i], p, "m"); sub("s", "", p[2]); s += p[1] * 60 + p[2] } printf "%.2f", s }')
        "$CTL" stop --base "$base" > /dev/null 2>&1
        case $v in ext4*) umount "$mnt"; rm -f "$img" ;; *) rm -rf "$base" ;; esac
        awk -v v="$v" -v r="$rep" -v a="$t0" -v b="$t1" -v st="$st" -v srv="$srv" -v hz="$hz" \
            -v b0="$b0" -v b1="$b1" -v l="$(cut -d' ' -f1 /proc/loadavg)" \
            'BEGIN { printf "%d %-12s wall %.3f stager %.2f servers %.2f host %.2f load %s\n", r, v, b - a, st, srv / hz, (b1 - b0) / hz, l }'
    done
done
