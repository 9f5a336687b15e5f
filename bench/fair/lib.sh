# shellcheck shell=sh
# bench/fair/lib.sh: what the fair-sharing benchmarks (run.sh,
# policies.sh, exchange.sh, tbf.sh) share, sourced by each: the build, a
# work directory the test users can enter, and test instances whose
# adafsd runs with the benchmark's server options.
#
# fair_init BUILD PREFIX: sets b (BUILD, absolute), work (a new directory
#   /tmp/PREFIX.XXXXXX, mode 755), A and B (the test users adafs-test and
#   adafs-test2) and exports LD_LIBRARY_PATH (the build's libadafs). The
#   caller's EXIT trap calls fair_cleanup.
# fair_start NAME SERVERS MOUNT [OPTION...]: a fresh instance at
#   $work/NAME (adafs-ctl start) of SERVERS servers mounted at MOUNT,
#   each adafsd run with the OPTIONs ahead of adafs-ctl's own arguments
#   (through a wrapper, $work/NAME.adafsd, named by ADAFSD); the instance
#   file copied for each test user to $work/NAME.USER (theirs, mode 600).
# fair_stop NAME: stops that instance.
# fair_cleanup: stops every instance still running, removes $work.

fair_init() {
    b=$(cd "$1" && pwd)
    work=$(mktemp -d "/tmp/$2.XXXXXX")
    chmod 755 "$work"
    A=adafs-test B=adafs-test2
    LD_LIBRARY_PATH=$b/agent/.libs
    export LD_LIBRARY_PATH
}

fair_start() {
    name=$1 servers=$2 mount=$3
    shift 3
    printf '#!/bin/sh\nexec %s %s "$@"\n' "$b/agent/adafsd" "$*" >"$work/$name.adafsd"
    chmod 755 "$work/$name.adafsd"
    rm -rf "${work:?}/$name"
    ADAFSD=$work/$name.adafsd "$b/agent/adafs-ctl" start --servers "$servers" \
        --base "$work/$name" --mount "$mount" >/dev/null
    for u in $A $B; do
        install -o "$u" -m 600 "$work/$name/instance" "$work/$name.$u"
    done
}

fair_stop() { "$b/agent/adafs-ctl" stop --base "$work/$1" >/dev/null 2>&1; }

fair_cleanup() {
    for s in "$work"/*/servers; do
        test -e "$s" && "$b/agent/adafs-ctl" stop --base "$(dirname "$s")" >/dev/null 2>&1
    done
    rm -rf "$work"
}
