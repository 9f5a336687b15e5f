#!/bin/sh
# bench/fs/run.sh BUILD_DIR [REPEATS [SET [OLD_BUILD_DIR]]]
#
# The file system benchmarks in one run. SET:
#
# all (default): the transport limits (64-byte TCP ping-pong, 1 MiB bulk
#   TCP), mdtest-like create/stat/remove and IOR-like sequential/random,
#   file-per-process/shared, 64 KiB/1 MiB runs on adafs with 1, 2 and 4
#   servers (through the LD_PRELOAD interposer, and mdtest also through
#   libadafs directly) and on the backing directory, plus start and stop
#   times of 4 servers. The IOR runs go to storage roots on the disk and
#   on tmpfs (ROOTS). Each measurement is repeated REPEATS times (default
#   3), interleaved, and the best is kept: on a shared machine noise only
#   ever slows a run down. With OLD_BUILD_DIR an older build runs every
#   adafs workload too, in the same repeats (rows marked "old", and a
#   table of new / old per repeat). Issue 21's point 3: each repeat also
#   runs fsbench floor with 1, 2 and 4 servers on each root, and the 1 MiB
#   sequential writes are reported against it. FILES (default 5000) and
#   BLOCK (default 256M, in M) shrink the all set for a quick try.
# data1m: only the 1 MiB sequential write/read target with 2 servers, each
#   repeat measuring bulk TCP and the local directory right before adafs,
#   and with OLD_BUILD_DIR also an older build's adafs in the same repeats
#   (the two take turns going first), for before/after comparisons, and
#   the floor of the design's write path (fsbench floor) in the same
#   repeats. OLD_ENV (VAR=value words) goes into the older build's
#   environment: with the same build twice, OLD_ENV=ADAFS_TRANSPORT=tcp
#   compares TCP with the servers' Unix sockets, which a client on their
#   node uses by default. The whole run under ADAFS_TRANSPORT=tcp measures
#   adafs over TCP only.
# data1g: issue 21's targets. One process, a 1 GiB file, storage roots on
#   the disk and on tmpfs (ROOTS), 1, 2 and 4 servers (SERVERS): 1 MiB
#   writes and reads, 64 KiB writes and reads (reads stop after
#   READ_SECONDS, default 10, and count what they read: an old build's
#   reads on tmpfs took minutes), against bulk TCP, the local directory
#   on the same root and the floor of the write path (fsbench floor) with
#   as many servers, all in the same repeat; and the time of a 64 KiB read
#   at offset 0 and at 1 GiB (fsbench offsets, 1 server). Ratios per
#   repeat, medians over the repeats; with OLD_BUILD_DIR the older build
#   in the same repeats, the two taking turns going first.
# fio: Debian's fio (psync engine) through the interposer: sequential and
#   random writes and reads of a 1 GiB file at 4 KiB, 64 KiB and 1 MiB,
#   each job stopped after FIO_SECONDS (default 5), on the local directory
#   and on adafs with 1 and 2 servers (FIO_SERVERS), both roots; with
#   OLD_BUILD_DIR the older build alternating. Medians over the repeats.
#   FIO_JOBS (rw:bs words, e.g. "write:1m randwrite:64k") runs only those.
#
# The tmpfs root is TMPFS_DIR (default /dev/shm); ROOTS="disk" leaves it
# out. Prints Markdown.
set -eu
usage="usage: run.sh BUILD_DIR [REPEATS [all|data1m|data1g|fio [OLD_BUILD_DIR]]]"
build=$(cd "${1:?$usage}" && pwd)
repeats=${2:-3}
set_=${3:-all}
old=${4:+$(cd "$4" && pwd)}
case $set_ in all|data1m|data1g|fio) ;; *) echo "run.sh: unknown set '$set_'; $usage" >&2; exit 2 ;; esac
for b in $build $old; do
    for f in agent/adafs-ctl bench/fs/fsbench agent/.libs/libadafs_preload.so; do
        test -e "$b/$f" || { echo "run.sh: $b/$f is missing: build first (make -C $b)" >&2; exit 1; }
    done
done
if [ "$set_" = fio ] && ! command -v fio >/dev/null; then
    echo "run.sh: fio is not installed (apt-get install fio)" >&2
    exit 1
fi
roots=${ROOTS:-disk tmpfs}
tmpfs_dir=${TMPFS_DIR:-/dev/shm}
case " $roots " in
*" tmpfs "*)
    if [ "$(df --output=fstype "$tmpfs_dir" 2>/dev/null | tail -n 1)" != tmpfs ]; then
        echo "run.sh: TMPFS_DIR=$tmpfs_dir is not on tmpfs; set TMPFS_DIR, or ROOTS=disk" >&2
        exit 1
    fi ;;
esac
builds="new${old:+ old}"
ctl=$build/agent/adafs-ctl
fsb=$build/bench/fs/fsbench
work=$(mktemp -d "${TMPDIR:-/tmp}/fsbench.XXXXXX")
results=$work/results
mount=/adafs-bench
files=${FILES:-5000}     # per process, mdtest
block=${BLOCK:-256M}     # per process, ior (and the all set's floor)
# The storage roots: instances, local directories and floor files of
# each kind live under root_dir ROOT.
tmpfs_work=
case " $roots " in *" tmpfs "*) tmpfs_work=$(mktemp -d "$tmpfs_dir/fsbench.XXXXXX") ;; esac
root_dir() {
    case $1 in
    disk) echo "$work" ;;
    tmpfs) echo "$tmpfs_work" ;;
    esac
}
. "$(dirname "$0")/../vm_memory.sh"
trap 'for b in "$work"/inst* ${tmpfs_work:+"$tmpfs_work"/inst*}; do test -e "$b/servers" && "$ctl" stop --base "$b" 2>/dev/null; done; rm -rf "$work" ${tmpfs_work:+"$tmpfs_work"}; release_free_memory' EXIT
hold_free_memory

# record KEY: reads "name value unit" lines, stores "KEY.name value" and
# "rR.KEY.name value" (R: the repeat, for ratios within one repeat).
record() {
    while read -r name value unit; do
        echo "$1.$name $value" >>"$results"
        echo "r$r.$1.$name $value" >>"$results"
    done
}

# warm: writes back what earlier runs left dirty (on the disk root the
# next run otherwise pays for the previous one's writeback: the run after
# the local directory's, whichever build that was), then touches and
# frees 1 GiB, into memory held in the guest (bench/vm_memory.sh);
# without this, whichever run came right after a large free (a deleted
# file) wrote into cheaper memory than the others, the local baseline as
# often as adafs. WARM=0: neither.
warm() {
    test "${WARM:-1}" = 1 || return 0
    sync
    warm_memory $((1 << 30))
}

# use_build new|old: the programs of that build (preload_b, ctl_b), and
# the environment its clients run in (env_b: its libadafs first on the
# library path, and OLD_ENV words for the old build). Both builds' runs
# use this build's fsbench program, run directly (not through the libtool
# wrapper, which would put this build's libadafs first: the interposer
# would then share it, as one soname is loaded once).
fsb_bin=$build/bench/fs/.libs/fsbench
test -x "$fsb_bin" || fsb_bin=$build/bench/fs/fsbench
use_build() {
    b=$build env_b=
    test "$1" = old && b=$old env_b=${OLD_ENV:-}
    env_b="LD_LIBRARY_PATH=$b/agent/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} $env_b"
    preload_b=$b/agent/.libs/libadafs_preload.so ctl_b=$b/agent/adafs-ctl
}

# start_instance BASE N [MORE...]: an instance of the current build (use_build)
# with N servers at BASE; prints its instance file.
start_instance() {
    base=$1 n=$2
    shift 2
    "$ctl_b" start --servers "$n" --base "$base" --mount $mount "$@"
}

# order: the builds, the old one first every other repeat.
order() {
    if [ -n "$old" ] && [ $((r % 2)) = 0 ]; then echo "old new"; else echo "$builds"; fi
}

# pl_fsb INSTANCE CMD...: the current build's fsbench through its interposer.
pl_fsb() {
    inst=$1
    shift
    # shellcheck disable=SC2086  # env_b: VAR=value words
    env $env_b ADAFS_INSTANCE="$inst" LD_PRELOAD="$preload_b" "$fsb_bin" "$@"
}

# on TARGET CMD...: runs fsbench against a backing directory ("local",
# "local.tmpfs") or the current instance ("adafsN[.tmpfs]" through
# LD_PRELOAD, "apiN" through libadafs), of the current build.
on() {
    target=$1
    shift
    test "$1" = ior && warm
    case $target in
    local) "$fsb" "$@" --dir "$work/local/d$$" ;;
    local.tmpfs) "$fsb" "$@" --dir "$(root_dir tmpfs)/local/d$$" ;;
    api*)
        # shellcheck disable=SC2086  # env_b: VAR=value words
        env $env_b ADAFS_INSTANCE="$instance" "$fsb_bin" "$@" --api --dir "$mount/d$$" ;;
    *) pl_fsb "$instance" "$@" --dir "$mount/d$$" ;;
    esac
}

# median_ratio KEY LIMITS: per repeat, KEY over the smallest of the LIMITS
# keys (comma separated) of that repeat; prints "median% (sorted ratios)".
# The all set's times are stored negated; one over another is a ratio of times.
# KEY may also be "A/B" for the ratio of two results of the same repeat.
median_ratio() {
    awk -v key="$1" -v lim="$2" -v n="$repeats" '
        { v[$1] = $2 }
        END {
            m = 0
            for (r = 1; r <= n; r++) {
                x = v["r" r "." key]
                split(lim, parts, ",")
                l = ""
                for (i in parts) {
                    y = v["r" r "." parts[i]]
                    if (y != "" && (l == "" || y + 0 < l)) l = y + 0
                }
                # (times are stored negated: a ratio of two is a ratio of times)
                if (x != "" && l != "" && l != 0) a[++m] = x / l
            }
            if (m == 0) { print "n/a"; exit }
            for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++)
                if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
            s = ""
            for (i = 1; i <= m; i++) s = s sprintf("%s%.0f", i > 1 ? " " : "", 100 * a[i])
            med = m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
            printf "%.0f%% (%s)", 100 * med, s
        }' "$results"
}

# median KEY: the median over the repeats of a result.
median() {
    awk -v key="$1" -v n="$repeats" '
        { v[$1] = $2 }
        END {
            m = 0
            for (r = 1; r <= n; r++) if (v["r" r "." key] != "") a[++m] = v["r" r "." key] + 0
            if (m == 0) { print "n/a"; exit }
            for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++)
                if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
            med = m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
            printf(med >= 100 ? "%.0f" : "%.3g", med)
        }' "$results"
}

mkdir -p "$work/local" ${tmpfs_work:+"$tmpfs_work/local"}

# The data1m set: per repeat, bulk TCP, the local 1 MiB write and read,
# then adafs with 2 servers for each build (new, old), alternating which
# goes first. Ratios pair each result with min(bulk, local) of its repeat.
if [ "$set_" = data1m ]; then
    # The floor of the design (fsbench.c, floor_write): chunks sent to 2
    # server processes that only store them, waiting for each write (as
    # adafs does), with write-behind windows, and striped.
    floors="floor floor_w16 floor_w64 floor_stripe"
    floor_options() {
        case $1 in
        floor_w16) echo --window 16 ;;
        floor_w64) echo --window 64 ;;
        floor_stripe) echo --stripe ;;
        esac
    }
    builds="new${old:+ old}"
    for which in $builds; do
        b=$build
        test "$which" = old && b=$old
        "$b/agent/adafs-ctl" start --servers 2 --base "$work/inst.$which" --mount $mount \
            >"$work/inst.$which.path" 2>/dev/null
    done
    for r in $(seq "$repeats"); do
        "$fsb" bulk --mib 2048 | record net
        warm
        "$fsb" ior --dir "$work/local/n$$" --xfer 1M --block $block | record local
        order=$builds
        test $((r % 2)) = 0 && test -n "$old" && order="old new"
        for which in $order; do
            b=$build extra=
            test "$which" = old && b=$old extra=${OLD_ENV:-}
            warm
            # shellcheck disable=SC2086  # extra: VAR=value words
            env $extra ADAFS_INSTANCE="$(cat "$work/inst.$which.path")" \
                LD_PRELOAD="$b/agent/.libs/libadafs_preload.so" \
                "$b/bench/fs/fsbench" ior --xfer 1M --block $block --dir "$mount/d$$" | record "$which"
        done
        for f in $floors; do
            warm
            # shellcheck disable=SC2046  # the options: words
            "$fsb" floor --servers 2 --mib 256 $(floor_options "$f") --dir "$work/local/f$$" | record "$f"
        done
    done
    for which in $builds; do
        b=$build
        test "$which" = old && b=$old
        "$b/agent/adafs-ctl" stop --base "$work/inst.$which" 2>/dev/null
    done
    if [ -n "$old" ]; then
        echo "new / old, per repeat: write $(median_ratio new.ior_write old.ior_write), read $(median_ratio new.ior_read old.ior_read)."
        echo
    fi
    echo "Machine: $(nproc) cores, load average at the end $(cut -d' ' -f1-3 /proc/loadavg)."
    echo "1 MiB sequential transfers, one process, $block, 2 servers; $repeats repeats; new: $build${old:+, old: $old}${OLD_ENV:+ with $OLD_ENV}."
    echo
    echo "| build | phase | ratios per repeat (to min(bulk, local) of the repeat) | median | best | best MiB/s |"
    echo "|---|---|---|---|---|---|"
    for row in $(for w in $builds; do echo "$w:ior_write $w:ior_read"; done) \
        $(for f in $floors; do echo "$f:floor_write"; done); do
        which=${row%%:*} p=${row#*:}
        awk -v w="$which" -v p="$p" -v lp="ior_${p#*_}" -v n="$repeats" '
            { v[$1] = $2 }
            END {
                for (r = 1; r <= n; r++) {
                    l = v["r" r ".net.bulk"]; x = v["r" r ".local." lp]
                    if (x + 0 < l + 0) l = x
                    a[r] = v["r" r "." w "." p] / l; m[r] = v["r" r "." w "." p]
                }
                for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
                    if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t; t = m[i]; m[i] = m[j]; m[j] = t }
                s = ""
                for (i = 1; i <= n; i++) s = s sprintf("%.0f%% ", 100 * a[i])
                med = n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
                printf "| %s | %s | %s| %.0f%% | %.0f%% | %.0f |\n", w, substr(p, index(p, "_") + 1), s, 100 * med, 100 * a[n], m[n]
            }' "$results"
    done
    exit 0
fi

# start_all N_LIST: an instance of each build with each number of
# servers on each root; its instance file's path in
# $work/inst.ROOT.N.BUILD.path.
start_all() {
    for root in $roots; do
        for n in $1; do
            for which in $builds; do
                use_build "$which"
                start_instance "$(root_dir "$root")/inst.$root.$n.$which" "$n" \
                    >"$work/inst.$root.$n.$which.path" 2>/dev/null
            done
        done
    done
}

stop_all() {
    for f in "$work"/inst.*.path; do
        test -e "$f" || continue
        "$ctl" stop --base "$(dirname "$(cat "$f")")" 2>/dev/null || true
    done
}

machine_line() {
    echo "Machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), \
load average at the end $(cut -d' ' -f1-3 /proc/loadavg); roots: disk $work ($(df --output=fstype "$work" | tail -n 1))${tmpfs_work:+, tmpfs $tmpfs_work}."
    echo "$repeats repeats; new: $build${old:+, old: $old}${OLD_ENV:+ with $OLD_ENV}."
}

# The data1g set (issue 21): see the top of this file.
if [ "$set_" = data1g ]; then
    servers=${SERVERS:-1 2 4}
    rs=${READ_SECONDS:-10}
    start_all "$servers"
    for r in $(seq "$repeats"); do
        "$fsb" bulk --mib 2048 | record net
        for root in $roots; do
            d=$(root_dir "$root")
            for x in 1M 64K; do
                warm
                "$fsb" ior --dir "$d/local/l$$" --xfer $x --block 1G | record "local.$root.$x"
                warm
                "$fsb" readfloor --dir "$d/local/r$$" --xfer $x --block 1G | record "rfloor.$root.$x"
            done
            for n in $servers; do
                warm
                "$fsb" floor --servers "$n" --mib 1024 --dir "$d/local/f$$" | record "floor.$root.$n"
                for which in $(order); do
                    use_build "$which"
                    inst=$(cat "$work/inst.$root.$n.$which.path")
                    for x in 1M 64K; do
                        warm
                        pl_fsb "$inst" ior --xfer $x --block 1G --read-seconds "$rs" \
                            --dir "$mount/d$$" | record "$which.$root.$n.$x"
                    done
                done
            done
            case " $servers " in *" 1 "*)
                for which in $(order); do
                    use_build "$which"
                    warm
                    pl_fsb "$(cat "$work/inst.$root.1.$which.path")" offsets --xfer 64K --block 1G \
                        --dir "$mount/o$$" | record "$which.$root.off"
                done ;;
            esac
        done
    done
    stop_all
    machine_line
    echo "One process, a 1 GiB file; reads stop after $rs s (a rate of what they read)."
    echo "Each cell: the median over the repeats (the per-repeat values, sorted, in brackets)."
    echo
    echo "### Reads, to min(local read of the same transfer size, bulk TCP) of each repeat,"
    echo "### and to the read floor (fsbench readfloor: a request/response over a Unix socket)"
    echo
    echo "| root | servers | build | 1 MiB read | / floor | MiB/s | 64 KiB read | / floor | MiB/s |"
    echo "|---|---|---|---|---|---|---|---|---|"
    for root in $roots; do
        for n in $servers; do
            for w in $builds; do
                row="| $root | $n | $w"
                for x in 1M 64K; do
                    row="$row | $(median_ratio "$w.$root.$n.$x.ior_read" "net.bulk,local.$root.$x.ior_read")"
                    row="$row | $(median_ratio "$w.$root.$n.$x.ior_read" "rfloor.$root.$x.floor_read")"
                    row="$row | $(median "$w.$root.$n.$x.ior_read")"
                done
                echo "$row |"
            done
        done
    done
    echo
    echo "### Writes: 1 MiB to the floor of the write path (fsbench floor, as many servers, same root)"
    echo
    echo "| root | servers | build | 1 MiB write / floor | / min(local, bulk) | MiB/s | floor MiB/s | 64 KiB write MiB/s |"
    echo "|---|---|---|---|---|---|---|---|"
    for root in $roots; do
        for n in $servers; do
            for w in $builds; do
                echo "| $root | $n | $w | $(median_ratio "$w.$root.$n.1M.ior_write" "floor.$root.$n.floor_write") \
| $(median_ratio "$w.$root.$n.1M.ior_write" "net.bulk,local.$root.1M.ior_write") | $(median "$w.$root.$n.1M.ior_write") \
| $(median "floor.$root.$n.floor_write") | $(median "$w.$root.$n.64K.ior_write") |"
            done
        done
    done
    echo
    echo "### A 64 KiB read at offset 0 and at 1 GiB of a 1 GiB + 64 KiB file, 1 server (median of 101 each)"
    echo
    echo "| root | build | at 0 (us) | at 1 GiB (us) | at 1 GiB / at 0 |"
    echo "|---|---|---|---|---|"
    for root in $roots; do
        for w in $builds; do
            echo "| $root | $w | $(median "$w.$root.off.read_at_0") | $(median "$w.$root.off.read_at_block") \
| $(median "$w.$root.off.read_offset_ratio") |"
        done
    done
    echo
    echo "Limits (medians): bulk TCP $(median net.bulk) MiB/s; local directories (write / read MiB/s):"
    for root in $roots; do
        echo "$root 1 MiB $(median "local.$root.1M.ior_write") / $(median "local.$root.1M.ior_read"),\
 64 KiB $(median "local.$root.64K.ior_write") / $(median "local.$root.64K.ior_read");\
 read floor 1 MiB $(median "rfloor.$root.1M.floor_read"), 64 KiB $(median "rfloor.$root.64K.floor_read");"
    done
    if [ -n "$old" ]; then
        echo
        echo "### new / old, per repeat (the two builds took turns going first)"
        echo
        echo "| root | servers | 1 MiB write | 1 MiB read | 64 KiB write | 64 KiB read |"
        echo "|---|---|---|---|---|---|"
        for root in $roots; do
            for n in $servers; do
                row="| $root | $n"
                for k in 1M.ior_write 1M.ior_read 64K.ior_write 64K.ior_read; do
                    row="$row | $(median_ratio "new.$root.$n.$k" "old.$root.$n.$k")"
                done
                echo "$row |"
            done
        done
    fi
    exit 0
fi

# The fio set: see the top of this file. fio_jobs: rw:bs, in the order
# run (the first lays the file out).
fio_jobs="write:1m read:1m randwrite:1m randread:1m write:64k read:64k randwrite:64k randread:64k \
write:4k read:4k randwrite:4k randread:4k"
fio_jobs=${FIO_JOBS:-$fio_jobs}
# fio_target KEY DIR [ENV...]: every job on DIR/fio.dat, recorded under KEY.
fio_target() {
    key=$1 dir=$2
    shift 2
    env "$@" mkdir -p "$dir"
    for job in $fio_jobs; do
        rw=${job%:*} bs=${job#*:}
        warm
        env "$@" fio --name=j --filename="$dir/fio.dat" --size=1g --ioengine=psync --rw="$rw" \
            --bs="$bs" --runtime="${FIO_SECONDS:-5}" --invalidate=0 --fallocate=none \
            --output-format=json 2>"$work/fio.err" >"$work/fio.json" ||
            { echo "run.sh: fio $rw $bs on $dir failed:" >&2; cat "$work/fio.err" >&2; exit 1; }
        python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
d = j["read"] if j["read"]["io_bytes"] else j["write"]
print(sys.argv[2], d["bw_bytes"] / 2**20, "MiB/s")' "$work/fio.json" "$rw.$bs" | record "$key"
    done
    env "$@" rm -rf "$dir"
}

if [ "$set_" = fio ]; then
    servers=${FIO_SERVERS:-1 2}
    start_all "$servers"
    for r in $(seq "$repeats"); do
        for root in $roots; do
            fio_target "local.$root" "$(root_dir "$root")/local/fio$$"
            for n in $servers; do
                for which in $(order); do
                    use_build "$which"
                    # shellcheck disable=SC2086  # env_b: VAR=value words
                    fio_target "$which.$root.$n" "$mount/fio$$" $env_b \
                        ADAFS_INSTANCE="$(cat "$work/inst.$root.$n.$which.path")" LD_PRELOAD="$preload_b"
                done
            done
        done
    done
    stop_all
    machine_line
    echo "fio $(fio --version), psync engine, one job, a 1 GiB file, each job stopped after ${FIO_SECONDS:-5} s;"
    echo "MiB/s, medians over the repeats."
    for root in $roots; do
        echo
        echo "### Storage root on $root"
        echo
        head="| job | local"
        line="|---|---"
        for n in $servers; do
            for w in $builds; do head="$head | adafs $n ($w)"; line="$line|---"; done
            test -n "$old" && { head="$head | $n: new / old"; line="$line|---"; }
        done
        echo "$head |"
        echo "$line|"
        for job in $fio_jobs; do
            k=${job%:*}.${job#*:}
            row="| $k | $(median "local.$root.$k")"
            for n in $servers; do
                for w in $builds; do row="$row | $(median "$w.$root.$n.$k")"; done
                test -n "$old" && row="$row | $(median_ratio "new.$root.$n.$k" "old.$root.$n.$k")"
            done
            echo "$row |"
        done
    done
    exit 0
fi

# The all set: see the top of this file.
md_workloads() {
    t=$1
    on "$t" mdtest --files $files --procs 1 | record "$t.md1"
    case $t in api*) return ;; esac
    on "$t" mdtest --files $files --procs 2 | record "$t.md2"
}

data_workloads() {
    t=$1
    rs=${READ_SECONDS:-10}
    for xfer in 1M 64K; do
        on "$t" ior --xfer $xfer --block $block --read-seconds "$rs" | record "$t.fpp.seq.$xfer"
        on "$t" ior --xfer $xfer --block $block --read-seconds "$rs" --random \
            | record "$t.fpp.rand.$xfer"
        on "$t" ior --xfer $xfer --block $block --read-seconds "$rs" --shared --procs 2 \
            | record "$t.shared.seq.$xfer"
        on "$t" ior --xfer $xfer --block $block --read-seconds "$rs" --shared --procs 2 --random \
            | record "$t.shared.rand.$xfer"
    done
}

has_tmpfs=
case " $roots " in *" tmpfs "*) has_tmpfs=1 ;; esac
use_build new
for r in $(seq "$repeats"); do
    "$fsb" pingpong --seconds 1 | record net
    "$fsb" bulk --mib 2048 | record net
    md_workloads local
    data_workloads local
    test -n "$has_tmpfs" && data_workloads local.tmpfs
    for n in 1 2 4; do
        # The limits again right before the runs the targets compare with
        # them, so each ratio pairs numbers taken under the same load.
        case $n in
        1) "$fsb" pingpong --seconds 1 | record near ;;
        2) "$fsb" bulk --mib 2048 | record near
           warm; "$fsb" ior --dir "$work/local/n$$" --xfer 1M --block $block | record near ;;
        esac
        # The floor of the write path with as many servers on each root
        # (issue 21: 1 MiB writes against it in the same repeat).
        warm; "$fsb" floor --servers $n --mib "${block%M}" --dir "$work/local/f$$" | record "floor$n"
        if [ -n "$has_tmpfs" ]; then
            warm; "$fsb" floor --servers $n --mib "${block%M}" --dir "$(root_dir tmpfs)/local/f$$" | record "floor$n.tmpfs"
        fi
        for which in $(order); do
            use_build "$which"
            sfx=
            test "$which" = old && sfx=.old
            base=$work/inst$n.$which
            instance=$(start_instance "$base" $n 2>"$work/start.err")
            sed -n 's/.* ready in \([0-9]*\) ms/start\.ms -\1/p' "$work/start.err" | record "srv$n$sfx"
            md_workloads "adafs$n$sfx"
            data_workloads "adafs$n$sfx"
            md_workloads "api$n$sfx"
            "$ctl_b" stop --base "$base" 2>"$work/stop.err"
            sed -n 's/.*stopped .* in \([0-9]*\) ms/stop\.ms -\1/p' "$work/stop.err" | record "srv$n$sfx"
            if [ -n "$has_tmpfs" ]; then
                base=$(root_dir tmpfs)/inst$n.$which
                instance=$(start_instance "$base" $n 2>/dev/null)
                data_workloads "adafs$n.tmpfs$sfx"
                "$ctl_b" stop --base "$base" 2>/dev/null
            fi
        done
    done
done

# Best of the repeats (times were stored negated, so the max is the best).
best=$work/best
awk '{ if (!($1 in b) || $2 > b[$1]) b[$1] = $2 } END { for (k in b) print k, b[k] }' \
    "$results" >"$best"
get() { awk -v k="$1" '$1 == k { v = $2 < 0 ? -$2 : $2; print v; f = 1 } END { if (!f) print "n/a" }' "$best"; }
sfxs=
test -n "$old" && sfxs=.old

pp=$(get net.pingpong)
bulk=$(get net.bulk)
echo "Machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), \
load average at the end $(cut -d' ' -f1-3 /proc/loadavg); backing directory $work ($(df -T "$work" | awk 'NR == 2 { print $2 }'))${tmpfs_work:+, tmpfs root $tmpfs_work}."
echo "Best of $repeats interleaved repeats. $files files per mdtest process, $block per IOR process${old:+; "(old)": $old, in the same repeats}."
echo
echo "## Transport limits (same run)"
echo
echo "| limit | value |"
echo "|---|---|"
echo "| 64-byte TCP ping-pong, one connection | $pp round trips/s ($(get net.pingpong_latency) us) |"
echo "| 1 MiB bulk TCP, one connection | $bulk MiB/s |"
echo
echo "## Metadata (mdtest-like: zero-byte files in one directory)"
echo
echo "| target | procs | create/s | stat/s | remove/s |"
echo "|---|---|---|---|---|"
for t in local adafs1 adafs2 adafs4 api1 api2 api4; do
    for s in "" $sfxs; do
        for p in 1 2; do
            c=$(get "$t$s.md$p.mdtest_create")
            test "$c" = n/a && continue
            echo "| $t${s:+ (old)} | $p | $c | $(get "$t$s.md$p.mdtest_stat") | $(get "$t$s.md$p.mdtest_remove") |"
        done
    done
done
echo
echo "adafsN: N servers through the LD_PRELOAD interposer; apiN: libadafs called directly."
echo
echo "## Data (IOR-like)"
echo
echo "| target | layout | order | transfer | write MiB/s | read MiB/s |"
echo "|---|---|---|---|---|---|"
targets="local"
test -n "$has_tmpfs" && targets="$targets local.tmpfs"
for n in 1 2 4; do
    for s in "" $sfxs; do
        targets="$targets adafs$n$s"
        test -n "$has_tmpfs" && targets="$targets adafs$n.tmpfs$s"
    done
done
for t in $targets; do
    for layout in fpp shared; do
        for order in seq rand; do
            for xfer in 1M 64K; do
                k=$t.$layout.$order.$xfer
                label=$(echo "$t" | sed 's/\.old$/ (old)/')
                echo "| $label | $layout | $order | $xfer | $(get "$k.ior_write") | $(get "$k.ior_read") |"
            done
        done
    done
done
echo
echo "fpp: one file per process, 1 process; shared: one file, 2 processes; .tmpfs: storage"
echo "root (or local directory) on tmpfs, else on the disk. Reads stop after ${READ_SECONDS:-10} s (a rate of what they read)."
echo
echo "## Start and stop"
echo
echo "| servers | ready (ms) | stopped and wiped (ms) |"
echo "|---|---|---|"
for n in 1 2 4; do
    for s in "" $sfxs; do
        echo "| $n${s:+ (old)} | $(get "srv$n$s.start.ms") | $(get "srv$n$s.stop.ms") |"
    done
done
echo
echo "## Targets"
echo
echo "Each ratio pairs a result with the limit measured right before it in"
echo "the same repeat; the repeat with the best ratio is shown."
echo
# target KEY LIMIT_EXPR: the best per-repeat ratio of KEY to the limit.
target() {
    awk -v key="$1" -v lim="$2" -v n="$repeats" '
        { v[$1] = $2 }
        END {
            best = -1
            for (r = 1; r <= n; r++) {
                x = v["r" r "." key]
                split(lim, parts, ",")
                l = -1
                for (i in parts) {
                    y = v["r" r "." parts[i]]
                    if (y != "" && (l < 0 || y + 0 < l)) l = y + 0
                }
                if (x != "" && l > 0 && x / l > best) { best = x / l; bx = x; bl = l }
            }
            if (best < 0) print "| n/a | n/a |"
            else printf "| %.0f | %.0f%% of %.0f |\n", bx, 100 * best, bl
        }' "$results"
}
echo "| target | measured | ratio | goal |"
echo "|---|---|---|---|"
for s in "" $sfxs; do
    o=${s:+ (old)}
    echo "| stat, LD_PRELOAD, 1 client, 1 server$o $(target "adafs1$s.md1.mdtest_stat" near.pingpong) >= 60% of ping-pong |"
    echo "| create, LD_PRELOAD, 1 client, 1 server$o $(target "adafs1$s.md1.mdtest_create" near.pingpong) >= 40% of ping-pong |"
    echo "| remove, LD_PRELOAD, 1 client, 1 server$o $(target "adafs1$s.md1.mdtest_remove" near.pingpong) >= 40% of ping-pong |"
    echo "| 1 MiB sequential write MiB/s, 2 servers$o $(target "adafs2$s.fpp.seq.1M.ior_write" near.bulk,near.ior_write) >= 70% of min(local, bulk) |"
    echo "| 1 MiB sequential read MiB/s, 2 servers$o $(target "adafs2$s.fpp.seq.1M.ior_read" near.bulk,near.ior_read) >= 70% of min(local, bulk) |"
    echo "| 4 servers ready (ms)$o | $(get "srv4$s.start.ms") | | < 100 ms |"
    echo "| 4 servers stopped, data wiped (ms)$o | $(get "srv4$s.stop.ms") | | < 200 ms |"
done
echo
echo "## 1 MiB sequential writes to the floor of the write path (issue 21)"
echo
echo "fsbench floor with as many servers on the same root, measured in the same repeat"
echo "($block); the median over the repeats (per-repeat ratios, sorted, in brackets)."
echo
echo "| root | servers | build | 1 MiB write / floor | floor MiB/s (median) |"
echo "|---|---|---|---|---|"
for root in disk $(test -n "$has_tmpfs" && echo tmpfs); do
    rs=
    test "$root" = tmpfs && rs=.tmpfs
    for n in 1 2 4; do
        for s in "" $sfxs; do
            echo "| $root | $n | $(test -n "$s" && echo old || echo new) | $(median_ratio "adafs$n$rs$s.fpp.seq.1M.ior_write" "floor$n$rs.floor_write") \
| $(median "floor$n$rs.floor_write") |"
        done
    done
done
test -n "$old" || exit 0
echo
echo "## new / old, per repeat (the builds took turns going first)"
echo
echo "Median of the per-repeat ratios (sorted, in brackets); rates: above 100% is"
echo "faster; start and stop are times: above 100% is slower."
echo
echo "| figure | new / old |"
echo "|---|---|"
for t in adafs1 adafs2 adafs4 api1 api2 api4; do
    for p in 1 2; do
        for op in create stat remove; do
            k=md$p.mdtest_$op
            grep -q "^r1\.$t\.$k " "$results" || continue
            echo "| $t mdtest $p proc $op | $(median_ratio "$t.$k" "$t.old.$k") |"
        done
    done
done
for n in 1 2 4; do
    for rs in "" $(test -n "$has_tmpfs" && echo .tmpfs); do
        for layout in fpp shared; do
            for ord in seq rand; do
                for xfer in 1M 64K; do
                    for ph in write read; do
                        k=$layout.$ord.$xfer.ior_$ph
                        echo "| adafs$n$rs $layout $ord $xfer $ph | $(median_ratio "adafs$n$rs.$k" "adafs$n$rs.old.$k") |"
                    done
                done
            done
        done
    done
    echo "| $n servers ready (time) | $(median_ratio "srv$n.start.ms" "srv$n.old.start.ms") |"
    echo "| $n servers stopped (time) | $(median_ratio "srv$n.stop.ms" "srv$n.old.stop.ms") |"
done
