# preload_common.sh: sourced by the test_preload_*.sh and test_fuse_*.sh
# tests.
#
# Starts adafs instances with adafs-ctl (servers on 127.0.0.1), runs
# programs under libadafs_preload.so and prints TAP lines. Every instance
# started is stopped by the EXIT trap, whatever happens to the test. The
# mount point of each instance is a regular file for the kernel, so the
# kernel can never create or find anything below it: whatever a program
# reads back from the mount went through the interposer and adafs. (Its
# parent directory exists, as doc/preload.md asks of a mount point.)
#
# With ADAFS_TEST_ACCESS=fuse the same tests run through adafs-fuse
# instead: the mount point is a directory with the instance mounted there,
# and programs run without the interposer. With ADAFS_TEST_ACCESS=both,
# as a job's access=both: the mount is there and programs run under the
# interposer.

: "${ADAFS_TEST_PRELOAD:?not set: run this test through make check}"
: "${ADAFS_TEST_CTL:?not set: run this test through make check}"
for f in "$ADAFS_TEST_PRELOAD" "$ADAFS_TEST_CTL"; do
    if [ ! -e "$f" ]; then
        echo "Bail out! $f is missing (build agent/ first)"
        exit 1
    fi
done

ACCESS=${ADAFS_TEST_ACCESS:-preload}
KERNEL_MOUNT=
case $ACCESS in fuse|both) KERNEL_MOUNT=yes ;; esac
if [ -n "$KERNEL_MOUNT" ]; then
    : "${ADAFS_TEST_FUSE:?not set: run this test through make check}"
    if [ ! -e "$ADAFS_TEST_FUSE" ]; then
        echo "Bail out! $ADAFS_TEST_FUSE is missing (build agent/ first)"
        exit 1
    fi
    if [ "$(id -u)" != 0 ] && ! [ -r /dev/fuse -a -w /dev/fuse ]; then
        echo "1..0 # SKIP /dev/fuse is not usable here (as root, or with /dev/fuse 0666)"
        exit 0
    fi
fi

SRCDIR=$(cd "${srcdir:-.}" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/adafs-preload.XXXXXX")
cd "$WORK" || exit 1 # programs that drop files in their working directory
INSTANCES=""
MOUNTS=""   # "pid:mountpoint" of each adafs-fuse
cleanup() {
    cd / || true
    for m in $MOUNTS; do
        umount -l "${m#*:}" 2>/dev/null || fusermount3 -u -z "${m#*:}" 2>/dev/null
        kill "${m%%:*}" 2>/dev/null
    done
    for base in $INSTANCES; do
        "$ADAFS_TEST_CTL" stop --base "$base" >/dev/null 2>&1 ||
            echo "# adafs-ctl stop --base $base failed"
    done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP PIPE

PRELOAD_LIST=$ADAFS_TEST_PRELOAD
if [ -n "${ADAFS_TEST_ASAN_RT:-}" ]; then
    # Programs not built with ASan need its runtime loaded first.
    PRELOAD_LIST="$ADAFS_TEST_ASAN_RT $ADAFS_TEST_PRELOAD"
    export ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0
fi

TAP_N=0
ok() { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N - $*"; }
not_ok() { TAP_N=$((TAP_N + 1)); echo "not ok $TAP_N - $*"; }
# skip DESCRIPTION REASON
skip() { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N - $1 # SKIP $2"; }

# check DESCRIPTION COMMAND...: one TAP line; the output of a failing
# command is shown as TAP comments.
check() {
    desc=$1
    shift
    if "$@" >"$WORK/check.out" 2>&1; then
        ok "$desc"
    else
        not_ok "$desc"
        sed 's/^/#   /' "$WORK/check.out" | head -n 30
    fi
}

# same DESCRIPTION EXPECTED_FILE ACTUAL_FILE: byte-for-byte comparison.
same() {
    if cmp "$2" "$3" >"$WORK/cmp.out" 2>&1; then
        ok "$1"
    else
        not_ok "$1"
        sed 's/^/#   /' "$WORK/cmp.out"
        diff "$2" "$3" 2>/dev/null | head -n 20 | sed 's/^/#   /'
    fi
}

# start_instance NAME SERVERS [ADAFS-CTL OPTION...]: sets BASE, MNT and
# INSTANCE (and mounts the instance at MNT with adafs-fuse, for fuse, with
# -o $FUSE_OPTS if set).
start_instance() {
    BASE=$WORK/$1.base
    mkdir -p "$BASE" "$WORK/$1"
    MNT=$WORK/$1/mnt
    INSTANCES="$INSTANCES $BASE"
    n=$2
    shift 2
    if [ -n "$KERNEL_MOUNT" ]; then mkdir "$MNT"; else : >"$MNT"; fi
    if ! "$ADAFS_TEST_CTL" start --servers "$n" --base "$BASE" --mount "$MNT" \
            --chunk-size 64K --timeout-ms 20000 "$@" >"$WORK/ctl.out" 2>&1; then
        echo "Bail out! adafs-ctl start --servers $n failed: $(cat "$WORK/ctl.out")"
        exit 1
    fi
    INSTANCE=$BASE/instance
    if [ -n "$KERNEL_MOUNT" ]; then
        "$ADAFS_TEST_FUSE" --instance "$INSTANCE" --foreground ${FUSE_OPTS:+-o "$FUSE_OPTS"} "$MNT" \
            >"$BASE/fuse.log" 2>&1 &
        MOUNTS="$MOUNTS $!:$MNT"
        for _ in $(seq 100); do
            grep -q " $MNT fuse.adafs " /proc/mounts && return 0
            sleep 0.1
        done
        echo "Bail out! adafs-fuse did not mount $MNT: $(cat "$BASE/fuse.log")"
        exit 1
    fi
}

# pl [NAME=VALUE...] COMMAND...: runs COMMAND under the interposer on the
# current instance (NAME=VALUE override its environment, as for env(1)),
# bounded in time so that a hang fails the test instead of stalling it.
pl() {
    if [ "$ACCESS" = fuse ]; then
        timeout -k 5 60 env "$@"
        return
    fi
    timeout -k 5 60 env LD_PRELOAD="$PRELOAD_LIST" \
        LD_LIBRARY_PATH="$ADAFS_TEST_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        ADAFS_INSTANCE="$INSTANCE" ADAFS_MOUNT="$MNT" "$@"
}

# Python and sqlite3 from the distribution (dynamically linked; a pyenv
# shim would run a whole shell under the interposer first).
PYTHON=/usr/bin/python3
[ -x "$PYTHON" ] || PYTHON=$(command -v python3)

# run_check LABEL COMMAND...: a TAP program's (mmap_check's) output's TAP, renumbered into ours
run_check() {
    label=$1
    shift
    "$@" >"$WORK/check.tap" 2>&1
    status=$?
    while IFS= read -r line; do
        case $line in
        "ok "*) ok "$label: ${line#ok * - }" ;;
        "not ok "*) not_ok "$label: ${line#not ok * - }" ;;
        "1.."*) ;;
        *) echo "# $line" ;;
        esac
    done <"$WORK/check.tap"
    if [ "$status" -ne 0 ] && ! grep -q '^not ok' "$WORK/check.tap"; then
        not_ok "$label: mmap_check exited with status $status"
    fi
}
