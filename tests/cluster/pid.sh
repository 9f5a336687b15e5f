# pid.sh: pid_alive, sourced by cluster.sh and tests/lib.sh (bash).
#
# pid_alive PID: the process has not exited. A daemon that exited is
# nobody's child: it stays a zombie, which kill -0 still finds, until init
# reaps it (seen to take up to 2 s here); a zombie holds no port, socket or
# file any more, so it counts as gone.
pid_alive() {
    [ -n "$1" ] && kill -0 "$1" 2>/dev/null || return 1
    local stat; read -r stat < "/proc/$1/stat" 2>/dev/null || return 1
    stat=${stat##*) }
    [ "${stat%% *}" != Z ]
}
