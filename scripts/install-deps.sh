#!/bin/sh
# Installs every Debian package that building, testing and the demo need.
# Idempotent: packages already present are left alone, so a rerun is cheap.
set -eu

PACKAGES="
  build-essential autoconf automake libtool pkg-config clang libclang-rt-14-dev
  slurmctld slurmd slurm-client libslurm-dev munge libmunge-dev
  libsqlite3-dev sqlite3 libcurl4-openssl-dev libhwloc-dev hwloc
  libjansson-dev librocksdb-dev libxxhash-dev libsodium-dev libibnetdisc-dev libibmad-dev libibumad-dev
  dpkg-dev devscripts lintian lowdown man-db fio rsync python3 curl jq time procps psmisc
  util-linux e2fsprogs gnuplot-nox
  openmpi-bin libopenmpi-dev libhwloc-plugins ibverbs-providers
  libfuse3-dev fuse3 git python3-numpy busybox-static
"
# The last line is what compute nodes have beside us (Open MPI and what it
# pulls in: hwloc's plugins, the verbs providers): sysmap, the interposer
# and the sanitizer builds must be tested with them loaded, as in production.

missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing="$missing $p"
done

if [ -z "$missing" ]; then
    echo "install-deps: all packages present"
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: need root to install:$missing" >&2
    exit 1
fi

echo "install-deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
# Package services must not start during install: the mini-cluster starts its
# own munged/slurmctld/slurmd with private configs.
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy"
    chmod 755 "$policy"
    own_policy=1
fi
trap '[ "$own_policy" = 1 ] && rm -f "$policy"' EXIT
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
