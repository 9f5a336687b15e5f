#!/bin/bash
# test_packages.sh: the Debian packages on the real mini-cluster.
#
# Installs the packages (apt install ./*.deb), checks every installed
# command's man page, runs the demo job from the installed files only
# (scripts/demo --installed), upgrades the packages to a higher version
# while a job's file system holds data and checks that the job and its data
# survive, then purges them and checks that nothing is left (files listed
# before and after, the system user, dpkg's records).
#
# It installs into /usr, which other builds on the machine must not pick
# up, so it runs only when asked: ADAFS_TEST_PACKAGES=DIR (the .deb files,
# as scripts/build-packages leaves them) or =build (build them first).
# scripts/check does. Needs root; refuses to run where adafs packages are
# installed already.
. "${abs_top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
debs=${ADAFS_TEST_PACKAGES:-}
[ -n "$debs" ] || skip_all "ADAFS_TEST_PACKAGES is not set (scripts/check sets it)"
[ "$(id -u)" = 0 ] || skip_all "needs root to install packages"
[ -z "${ADAFS_SKIP_CLUSTER:-}" ] || skip_all "ADAFS_SKIP_CLUSTER is set"
command -v slurmctld >/dev/null || skip_all "slurmctld not installed"
packages=$(sed -n 's/^Package: //p' "$abs_top_srcdir/debian/control" | xargs)
installed() { dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' $packages 2>/dev/null | grep -v '^un' || true; }
[ -z "$(installed)" ] || skip_all "adafs packages are installed already: $(installed | xargs)"

work=$(mktemp -d /var/tmp/adafs-test-packages.XXXXXX)
unset ADAFS_BUILD_DIR
export ADAFS_PREFIX=/usr
purge() { DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq $packages >"$work/purge.log" 2>&1; }
cleanup() {
    "$cluster" stop >/dev/null 2>&1
    [ -n "$(installed)" ] && purge
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP PIPE

if [ "$debs" = build ]; then
    debs=$("$abs_top_srcdir/scripts/build-packages" "$work/debs" 2>"$work/build.err" | tail -n 1)
    ok $? "scripts/build-packages" || { sed 's/^/# /' "$work/build.err"; tap_done; }
fi
debs=$(cd "$debs" && pwd)
mapfile -t files < <(ls "$debs"/*.deb | grep -v -- -dbgsym_)
version=$(dpkg-deb -f "$debs"/adafs-node_*.deb Version)
diag "packages $version from $debs"

# Everything a package or its daemons could leave: the packages' own
# directories, /etc, state and logs, systemd's enablement, dpkg's records.
# Other developers' activity elsewhere on the machine does not count.
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
snapshot() {
    find /etc /lib/systemd /usr/bin /usr/sbin /usr/include /usr/lib/"$multiarch" \
         /usr/share/doc /usr/share/man /usr/share/lintian /var/lib /var/log /run/adafs /adafs \
         -xdev 2>/dev/null |
        grep -v -E '^/var/lib/(apt|dpkg/(lock|triggers|updates|status|diversions|statoverride|available|info/[^ad])|ucf|systemd/(timers|catalog))|^/var/log/(apt|dpkg\.log|journal)|^/etc/(ld\.so\.cache|passwd-|group-|shadow-|gshadow-)|^/var/lib/dpkg/info/(debconf|dpkg)' |
        sort
    getent passwd _adafs-sysmap
    getent group _adafs-sysmap
}
snapshot >"$work/before"

# --- install ---------------------------------------------------------------
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${files[@]}" >"$work/install.log" 2>&1
ok $? "apt install ./*.deb" || sed 's/^/# /' "$work/install.log"
check "every package is installed at $version" -- \
    test "$(dpkg-query -W -f='${Version}\n' $packages | sort -u)" = "$version"
check "sysmap-server's system user exists" -- getent passwd _adafs-sysmap

# Every installed command has a man page that man finds and renders
# without a warning.
for prog in $(dpkg -L $packages | grep -E '^/usr/s?bin/'); do
    name=$(basename "$prog")
    page=$(man -w "$name" 2>/dev/null)
    warnings=$(MANWIDTH=80 man --warnings "$name" 2>&1 >/dev/null)
    check "man $name: ${page:-no page}${warnings:+: $warnings}" -- test -n "$page" -a -z "$warnings"
done
for page in burst_buffer.conf.adafs; do
    check "man 5 $page" -- test -n "$(man -w 5 "$page" 2>/dev/null)"
done

# libadafs-dev: a program builds against the installed headers and library.
cat >"$work/client.c" <<'C'
#include <adafs.h>
#include <adafs/walltime.h>
int main(void) { return 0; }
C
check "a client builds with pkg-config adafs adafs-walltime" -- \
    bash -c "cc -o '$work/client' '$work/client.c' \$(pkg-config --cflags --libs adafs adafs-walltime) && '$work/client'"

# --- the demo job from the installed files ---------------------------------
"$abs_top_srcdir/scripts/demo" --installed >"$work/demo.log" 2>&1
ok $? "scripts/demo --installed: the demo job runs from the installed files" ||
    tail -30 "$work/demo.log" | sed 's/^/# /'

# --- upgrade while a job's file system holds data ---------------------------
# The same packages with a higher version: dpkg runs the upgrade paths of
# the maintainer scripts and replaces every file, as a real upgrade does.
new=$version+upgradetest1
mkdir -p "$work/new" "$work/unpacked"
for deb in "${files[@]}"; do
    dir=$work/unpacked/$(basename "$deb")
    dpkg-deb -R "$deb" "$dir"
    sed -i -e "s/^Version: .*/Version: $new/" -e "s/(= $version)/(= $new)/g" "$dir/DEBIAN/control"
    dpkg-deb -b "$dir" "$work/new/" >/dev/null
done
# The agent's unit must not be stopped or restarted by an upgrade (where
# systemd runs; here it does not, so the scripts are read).
dpkg-deb -e "$work"/new/adafs-node_*.deb "$work/node-scripts"
check "adafs-node's prerm stops the agent only on remove" -- \
    bash -c "grep -B1 'deb-systemd-invoke stop' '$work/node-scripts/prerm' | grep -q '\"\\\$1\" = remove'"
check "adafs-node's postinst never restarts the agent" -- \
    bash -c "test -s '$work/node-scripts/postinst' && ! grep -E 'deb-systemd-invoke (try-)?restart|_dh_action' '$work/node-scripts/postinst'"

"$cluster" start --clean >"$work/cluster.log" 2>&1
ok $? "the mini-cluster starts from the installed files" || tail -5 "$work/cluster.log" | sed 's/^/# /'
as_user_sh "rm -rf $pfs/upgrade && mkdir -p $pfs/upgrade"
write_job upgrade.sh >/dev/null <<JOB
#!/bin/bash
#SBATCH -N 2 -t 10 -o upgrade-%j.out
#BB_ADAFS capacity=1G
#BB_ADAFS stage_out source=out destination=$pfs/upgrade/%j type=directory
set -e
mkdir -p "\$ADAFS_MOUNT/out"
head -c 24000000 /dev/urandom > "\$ADAFS_MOUNT/out/data.bin"
md5sum < "\$ADAFS_MOUNT/out/data.bin" > $pfs/upgrade/before.md5
touch $pfs/upgrade/written
for i in \$(seq 600); do [ -e $pfs/upgrade/go ] && break; sleep 0.5; done
md5sum < "\$ADAFS_MOUNT/out/data.bin" > "\$ADAFS_MOUNT/out/after.md5"
cmp "\$ADAFS_MOUNT/out/after.md5" $pfs/upgrade/before.md5
JOB
id=$(submit upgrade.sh)
ok $? "a job holding data in its file system is submitted (job $id)"
check "the job wrote 24 MB into its file system" -- wait_file "$pfs/upgrade/written"
agents_before=$(cat "$ADAFS_CLUSTER_DIR"/run/agent.n*.pid | sort | xargs)
servers_before=$(pgrep -f "^[^ ]*adafsd .*$ADAFS_CLUSTER_DIR/" | sort | xargs)
diag "agents $agents_before, the job's servers $servers_before"

DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$work"/new/*.deb >"$work/upgrade.log" 2>&1
ok $? "apt upgrades every package to $new while the job runs" || sed 's/^/# /' "$work/upgrade.log"
check "every package is at $new" -- \
    test "$(dpkg-query -W -f='${Version}\n' $packages | sort -u)" = "$new"
check "the agents kept running (pids $agents_before)" -- \
    test "$(for p in $agents_before; do kill -0 "$p" 2>/dev/null && echo "$p"; done | xargs)" = "$agents_before"
check "the job's servers kept running (pids $servers_before)" -- \
    test -n "$servers_before" -a "$(for p in $servers_before; do kill -0 "$p" 2>/dev/null && echo "$p"; done | xargs)" = "$servers_before"
check "the job is still running" -- test "$(job_state "$id")" = RUNNING
as_user_sh "touch $pfs/upgrade/go"
check "the job completes" -- wait_job "$id" COMPLETED 120
check "it read its data back unchanged after the upgrade" -- \
    cmp -s "$pfs/upgrade/$id/after.md5" "$pfs/upgrade/before.md5"
check "its data was staged out intact" -- \
    bash -c "md5sum < '$pfs/upgrade/$id/data.bin' | cmp -s - '$pfs/upgrade/before.md5'"
"$cluster" stop >/dev/null 2>&1

# --- purge -------------------------------------------------------------------
purge
ok $? "apt purge removes every package" || sed 's/^/# /' "$work/purge.log"
check "none is left installed or with configuration" -- test -z "$(installed)"
snapshot >"$work/after"
left=$(diff "$work/before" "$work/after" | grep '^[<>]' | head -20 | xargs)
check "apt purge leaves nothing behind${left:+: $left}" -- test -z "$left"
tap_done
