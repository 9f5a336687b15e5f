#!/bin/sh
# bench/fs/run.sh BUILD_DIR [REPEATS]
# bench/fs/run.sh BUILD_DIR REPEATS data1m [OLD_BUILD_DIR]
#
# The file system benchmarks of issue 3 in one run: the transport limits
# (64-byte TCP ping-pong, 1 MiB bulk TCP), mdtest-like create/stat/remove
# and IOR-like sequential/random, file-per-process/shared, 64 KiB/1 MiB
# runs on adafs with 1, 2 and 4 servers (through the LD_PRELOAD interposer,
# and mdtest also through libadafs directly) and on the backing directory,
# plus start and stop times of 4 servers. Each measurement is repeated
# REPEATS times (default 3), interleaved, and the best is kept: on a shared
# machine noise only ever slows a run down. Prints Markdown.
#
# data1m: only the 1 MiB sequential write/read target with 2 servers, each
# repeat measuring bulk TCP and the local directory right before adafs, and
# with OLD_BUILD_DIR also an older build's adafs in the same repeats (the
# two take turns going first), for before/after comparisons, and the
# floor of the design's write path (fsbench floor) in the same repeats. OLD_ENV
# (VAR=value words) goes into the older build's environment: with the same
# build twice, OLD_ENV=ADAFS_TRANSPORT=tcp compares TCP with the servers'
# Unix sockets, which a client on their node uses by default. The whole
# run under ADAFS_TRANSPORT=tcp measures adafs over TCP only.
set -eu
usage="usage: run.sh BUILD_DIR [REPEATS [data1m [OLD_BUILD_DIR]]]"
build=$(cd "${1:?$usage}" && pwd)
repeats=${2:-3}
set_=${3:-all}
old=${4:+$(cd "$4" && pwd)}
case $set_ in all|data1m) ;; *) echo "run.sh: unknown set '$set_'; $usage" >&2; exit 2 ;; esac
for b in $build $old; do
    for f in agent/adafs-ctl bench/fs/fsbench agent/.libs/libadafs_preload.so; do
        test -e "$b/$f" || { echo "run.sh: $b/$f is missing: build first (make -C $b)" >&2; exit 1; }
    done
done
ctl=$build/agent/adafs-ctl
fsb=$build/bench/fs/fsbench
preload=$build/agent/.libs/libadafs_preload.so
work=$(mktemp -d "${TMPDIR:-/tmp}/fsbench.XXXXXX")
results=$work/results
mount=/adafs-bench
files=5000           # per process, mdtest
block=256M           # per process, ior
. "$(dirname "$0")/../vm_memory.sh"
trap 'for b in "$work"/inst*; do test -e "$b/servers" && "$ctl" stop --base "$b" 2>/dev/null; done; rm -rf "$work"; release_free_memory' EXIT
hold_free_memory

# record KEY: reads "name value unit" lines, stores "KEY.name value" and
# "rR.KEY.name value" (R: the repeat, for ratios within one repeat).
record() {
    while read -r name value unit; do
        echo "$1.$name $value" >>"$results"
        echo "r$r.$1.$name $value" >>"$results"
    done
}

# warm: touches and frees 1 GiB before a run that writes data, into
# memory held in the guest (bench/vm_memory.sh); without this, whichever
# run came right after a large free (a deleted file) wrote into cheaper
# memory than the others, the local baseline as often as adafs. WARM=0:
# not.
warm() { warm_memory $((1 << 30)); }

# on TARGET CMD...: runs fsbench against the backing directory ("local") or
# the current instance ("adafsN" through LD_PRELOAD, "apiN" through libadafs).
on() {
    target=$1
    shift
    test "$1" = ior && warm
    case $target in
    local) "$fsb" "$@" --dir "$work/local/d$$" ;;
    api*) ADAFS_INSTANCE=$instance "$fsb" "$@" --api --dir "$mount/d$$" ;;
    *) ADAFS_INSTANCE=$instance LD_PRELOAD=$preload "$fsb" "$@" --dir "$mount/d$$" ;;
    esac
}

workloads() {
    t=$1
    on "$t" mdtest --files $files --procs 1 | record "$t.md1"
    case $t in api*) return ;; esac
    on "$t" mdtest --files $files --procs 2 | record "$t.md2"
    for xfer in 1M 64K; do
        on "$t" ior --xfer $xfer --block $block | record "$t.fpp.seq.$xfer"
        on "$t" ior --xfer $xfer --block $block --random | record "$t.fpp.rand.$xfer"
        on "$t" ior --xfer $xfer --block $block --shared --procs 2 | record "$t.shared.seq.$xfer"
        on "$t" ior --xfer $xfer --block $block --shared --procs 2 --random | record "$t.shared.rand.$xfer"
    done
}

mkdir -p "$work/local"

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

for r in $(seq "$repeats"); do
    "$fsb" pingpong --seconds 1 | record net
    "$fsb" bulk --mib 2048 | record net
    workloads local
    for n in 1 2 4; do
        base=$work/inst$n
        instance=$("$ctl" start --servers $n --base "$base" --mount $mount 2>"$work/start.err")
        # The limits again right before the runs the targets compare with
        # them, so each ratio pairs numbers taken under the same load.
        case $n in
        1) "$fsb" pingpong --seconds 1 | record near ;;
        2) "$fsb" bulk --mib 2048 | record near
           warm; "$fsb" ior --dir "$work/local/n$$" --xfer 1M --block $block | record near ;;
        esac
        sed -n 's/.* ready in \([0-9]*\) ms/start\.ms -\1/p' "$work/start.err" | record "srv$n"
        workloads adafs$n
        workloads api$n
        "$ctl" stop --base "$base" 2>"$work/stop.err"
        sed -n 's/.*stopped .* in \([0-9]*\) ms/stop\.ms -\1/p' "$work/stop.err" | record "srv$n"
    done
done

# Best of the repeats (times were stored negated, so the max is the best).
best=$work/best
awk '{ if (!($1 in b) || $2 > b[$1]) b[$1] = $2 } END { for (k in b) print k, b[k] }' \
    "$results" >"$best"
get() { awk -v k="$1" '$1 == k { v = $2 < 0 ? -$2 : $2; print v; f = 1 } END { if (!f) print "n/a" }' "$best"; }

pp=$(get net.pingpong)
bulk=$(get net.bulk)
echo "Machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), \
load average at the end $(cut -d' ' -f1-3 /proc/loadavg); backing directory $work ($(df -T "$work" | awk 'NR == 2 { print $2 }'))."
echo "Best of $repeats interleaved repeats. $files files per mdtest process, $block per IOR process."
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
    for p in 1 2; do
        c=$(get $t.md$p.mdtest_create)
        test "$c" = n/a && continue
        echo "| $t | $p | $c | $(get $t.md$p.mdtest_stat) | $(get $t.md$p.mdtest_remove) |"
    done
done
echo
echo "adafsN: N servers through the LD_PRELOAD interposer; apiN: libadafs called directly."
echo
echo "## Data (IOR-like)"
echo
echo "| target | layout | order | transfer | write MiB/s | read MiB/s |"
echo "|---|---|---|---|---|---|"
for t in local adafs1 adafs2 adafs4; do
    for layout in fpp shared; do
        for order in seq rand; do
            for xfer in 1M 64K; do
                k=$t.$layout.$order.$xfer
                echo "| $t | $layout | $order | $xfer | $(get $k.ior_write) | $(get $k.ior_read) |"
            done
        done
    done
done
echo
echo "fpp: one file per process, 1 process; shared: one file, 2 processes."
echo
echo "## Start and stop"
echo
echo "| servers | ready (ms) | stopped and wiped (ms) |"
echo "|---|---|---|"
for n in 1 2 4; do
    echo "| $n | $(get srv$n.start.ms) | $(get srv$n.stop.ms) |"
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
echo "| stat, LD_PRELOAD, 1 client, 1 server $(target adafs1.md1.mdtest_stat near.pingpong) >= 60% of ping-pong |"
echo "| create, LD_PRELOAD, 1 client, 1 server $(target adafs1.md1.mdtest_create near.pingpong) >= 40% of ping-pong |"
echo "| remove, LD_PRELOAD, 1 client, 1 server $(target adafs1.md1.mdtest_remove near.pingpong) >= 40% of ping-pong |"
echo "| 1 MiB sequential write MiB/s, 2 servers $(target adafs2.fpp.seq.1M.ior_write near.bulk,near.ior_write) >= 70% of min(local, bulk) |"
echo "| 1 MiB sequential read MiB/s, 2 servers $(target adafs2.fpp.seq.1M.ior_read near.bulk,near.ior_read) >= 70% of min(local, bulk) |"
echo "| 4 servers ready (ms) | $(get srv4.start.ms) | | < 100 ms |"
echo "| 4 servers stopped, data wiped (ms) | $(get srv4.stop.ms) | | < 200 ms |"
