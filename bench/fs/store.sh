#!/bin/sh
# bench/fs/store.sh BUILD_DIR [REPEATS]
#
# What a server's file system of its own costs (agent/agentd/store.c):
#  - making and removing one as the agent does (sparse image, mkfs.ext4
#    without a journal, loop mount; detach, unlink) for a 1 GiB and a
#    100 GiB quota (image sizes from instance_space());
#  - adafs with 2 servers whose roots are on one such file system, against
#    the same instance on the backing directory: 1 MiB sequential IOR
#    write/read (256 MiB per process) and mdtest create/stat/remove (5000
#    files), the two taking turns going first in each repeat.
# Best of REPEATS (default 3) per figure; the ratio pairs the two within a
# repeat and the median ratio is printed. Needs root (mount). Markdown.
set -eu
build=$(cd "${1:?usage: store.sh BUILD_DIR [REPEATS]}" && pwd)
repeats=${2:-3}
ctl=$build/agent/adafs-ctl
fsb=$build/bench/fs/fsbench
preload=$build/agent/.libs/libadafs_preload.so
work=$(mktemp -d "${TMPDIR:-/var/tmp}/storebench.XXXXXX")
mount=/adafs-storebench
results=$work/results
img=$work/img
trap 'for b in "$work"/plain "$img"/inst; do test -e "$b/servers" && "$ctl" stop --base "$b" 2>/dev/null; done
      umount "$img" 2>/dev/null; rm -rf "$work"' EXIT

ms() { echo $(( $(date +%s%N) / 1000000 )); }

# One make-and-remove as the agent does it; prints "make_ms remove_ms".
store_cycle() {
    size=$1
    t0=$(ms)
    truncate -s "$size" "$work/x.img"
    mkfs.ext4 -q -F -m 0 -b 4096 -i 16384 -O ^has_journal,^resize_inode \
        -E lazy_itable_init=1,nodiscard,root_owner=0:0 "$work/x.img"
    mkdir -p "$work/x"
    mount -t ext4 -o loop,nosuid,nodev,noexec,noatime "$work/x.img" "$work/x"
    t1=$(ms)
    umount -l "$work/x"
    rm -f "$work/x.img"
    t2=$(ms)
    echo "$((t1 - t0)) $((t2 - t1))"
}

# 1 GiB and 100 GiB quotas: images of 1134 MiB and 106.6 GiB (sparse).
for r in $(seq "$repeats"); do
    for q in 1g:1189085184 100g:114435293184; do
        set -- $(store_cycle "${q#*:}")
        echo "r$r.make.${q%%:*} $1" >>"$results"
        echo "r$r.remove.${q%%:*} $2" >>"$results"
    done
done

# The instance file system: sized for 2 servers of 1 GiB each.
mkdir -p "$img" "$work/plain"
truncate -s 2378170368 "$work/img.file"
mkfs.ext4 -q -F -m 0 -b 4096 -i 16384 -O ^has_journal,^resize_inode \
    -E lazy_itable_init=1,nodiscard "$work/img.file"
mount -t ext4 -o loop,nosuid,nodev,noexec,noatime "$work/img.file" "$img"

run_on() {  # run_on TARGET BASE REPEAT
    instance=$("$ctl" start --servers 2 --base "$2" --mount $mount --quota 1G 2>/dev/null)
    for w in "ior --xfer 1M --block 256M" "mdtest --files 5000 --procs 1"; do
        ADAFS_INSTANCE=$instance LD_PRELOAD=$preload "$fsb" $w --dir "$mount/d$$" |
            while read -r name value unit; do echo "r$3.$1.$name $value" >>"$results"; done
    done
    "$ctl" stop --base "$2" 2>/dev/null
}
for r in $(seq "$repeats"); do
    if [ $((r % 2)) = 1 ]; then
        run_on plain "$work/plain/inst" "$r"; run_on image "$img/inst" "$r"
    else
        run_on image "$img/inst" "$r"; run_on plain "$work/plain/inst" "$r"
    fi
done

# best KEY: the best of the repeats (lowest for times, highest for rates).
best() { sed -n "s/^r[0-9]*\.$1 //p" "$results" | sort -g | if [ "$2" = low ]; then head -1; else tail -1; fi; }
# ratio NAME: image/plain of each repeat (both from the same repeat): the
# median, and the lowest and highest.
ratio() {
    for r in $(seq "$repeats"); do
        a=$(sed -n "s/^r$r\.image\.$1 //p" "$results")
        b=$(sed -n "s/^r$r\.plain\.$1 //p" "$results")
        awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) printf "%.3f\n", a / b }'
    done | sort -g | awk '{ v[NR] = $1 } END { printf "%s (%s-%s)\n", v[int((NR + 1) / 2)], v[1], v[NR] }'
}
echo "Machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo); \
backing directory $work ($(df -T "$work" | awk 'NR == 2 { print $2 }')); best of $repeats."
echo
echo "| per server | 1 GiB quota | 100 GiB quota |"
echo "|---|---|---|"
echo "| make (truncate, mkfs.ext4, mount) | $(best make.1g low) ms | $(best make.100g low) ms |"
echo "| remove (detach, unlink) | $(best remove.1g low) ms | $(best remove.100g low) ms |"
echo
echo "| 2 servers, through LD_PRELOAD | backing directory (best) | own ext4 image (best) | image / directory, per repeat: median (range) |"
echo "|---|---|---|---|"
for k in ior_write ior_read mdtest_create mdtest_stat mdtest_remove; do
    echo "| $k | $(best plain.$k high) | $(best image.$k high) | $(ratio $k) |"
done
