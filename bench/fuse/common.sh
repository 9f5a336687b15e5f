# shellcheck shell=sh
# bench/fuse/common.sh: the setup bench/fuse's scripts (run.sh, options.sh,
# readpairs.sh, readlib.sh, maps.sh) share, sourced by each after it sets
# `build` (its BUILD_DIR, absolute): one instance of servers in a private work
# directory, the interposer's environment, adafs-fuse mounts read ahead as
# a job's, and the rotation that keeps any target from always going
# first. Everything started here is undone on exit.
ctl=$build/agent/adafs-ctl
preload=$build/agent/.libs/libadafs_preload.so
mounts=

# fuse_start PREFIX SERVERS: a work directory $work, an instance of SERVERS
# servers ($inst) whose interposer path is $work/mnt.
fuse_start() {
    work=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
    trap fuse_stop EXIT
    mkdir -p "$work/mnt"
    "$ctl" start --servers "$2" --base "$work/inst" --mount "$work/mnt" >/dev/null 2>"$work/ctl.err" ||
        { cat "$work/ctl.err" >&2; exit 1; }
    inst=$work/inst/instance
}

fuse_stop() {
    for m in $mounts; do
        umount -l "$m" 2>/dev/null || fusermount3 -u -z "$m" 2>/dev/null || true
    done
    "$ctl" stop --base "$work/inst" >/dev/null 2>&1 || true
    rm -rf "$work"
}

# pre CMD...: CMD through the interposer on the instance.
pre() { ADAFS_INSTANCE=$inst ADAFS_MOUNT=$work/mnt LD_PRELOAD=$preload "$@"; }

# fuse_mount ADAFS_FUSE MOUNTPOINT [OPTIONS [READ_AHEAD_KB]]: the instance
# mounted by the program ADAFS_FUSE (with -o OPTIONS unless empty), its
# read-ahead READ_AHEAD_KB (default 1024).
fuse_mount() {
    mkdir -p "$2"
    mounts="$mounts $2"
    "$1" --instance "$inst" ${3:+-o "$3"} "$2"
    # as the node agent sets it for a job's mount (agent/agentd/fusemount.c)
    echo "${4:-1024}" >"/sys/class/bdi/$(awk -v m="$2" '$5 == m { print $3 }' /proc/self/mountinfo)/read_ahead_kb"
}

# fuse_variants NAME:ADAFS_FUSE[:OPTIONS]...: each mounted at $work/m.NAME,
# with the read-ahead READ_AHEAD ("NAME=KB ...") gives it; names: "preload"
# and the NAMEs, the targets of a repeat.
fuse_variants() {
    names=preload
    for v in "$@"; do
        name=${v%%:*} rest=${v#*:}
        bin=${rest%%:*} opts=${rest#"$bin"} opts=${opts#:}
        ra=1024
        for kv in ${READ_AHEAD:-}; do [ "${kv%%=*}" = "$name" ] && ra=${kv#*=}; done
        fuse_mount "$bin" "$work/m.$name" "$opts" "$ra"
        names="$names $name"
    done
}

# rotate: the next repeat's order of $names (the first goes last).
rotate() {
    # shellcheck disable=SC2086 # names: words
    names=$(echo $names | awk '{ for (i = 2; i <= NF; i++) printf "%s ", $i; print $1 }')
}
