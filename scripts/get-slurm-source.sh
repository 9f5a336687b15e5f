#!/bin/sh
# Obtains and configures the Slurm source of the installed release, so the
# burst_buffer plugin compiles against exactly the struct layouts slurmctld has.
# Usage: get-slurm-source.sh [DIR]   (default: /var/cache/adafs/slurm-src)
# Prints the configured source directory on its last line.
set -eu

dest=${1:-/var/cache/adafs/slurm-src}
# The release of libslurm-dev, whose headers configure compares with the
# source (slurmctld, where installed, is the same source package's).
installed=$(dpkg-query -W -f='${Version}' libslurm-dev 2>/dev/null ||
            dpkg-query -W -f='${Version}' slurmctld 2>/dev/null || true)
if [ -z "$installed" ]; then
    echo "get-slurm-source: neither libslurm-dev nor slurmctld is installed (run scripts/install-deps.sh)" >&2
    exit 1
fi
upstream=${installed%%-*}             # 22.05.8-4+deb12u1 -> 22.05.8
stamp="$dest/.adafs-configured-$installed"

if [ -f "$stamp" ]; then
    cat "$stamp"
    exit 0
fi

mkdir -p "$dest"
cd "$dest"

if ! ls -d slurm-wlm-"$upstream"/configure >/dev/null 2>&1; then
    codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
    srclist=/etc/apt/sources.list.d/adafs-deb-src.list
    if ! grep -rqs "^deb-src .* $codename " /etc/apt/sources.list /etc/apt/sources.list.d/ &&
       ! grep -rqs "^Types:.*deb-src" /etc/apt/sources.list.d/; then
        echo "get-slurm-source: adding $srclist for $codename" >&2
        echo "deb-src http://deb.debian.org/debian $codename main" > "$srclist"
        echo "deb-src http://deb.debian.org/debian $codename-updates main" >> "$srclist"
        echo "deb-src http://deb.debian.org/debian-security $codename-security main" >> "$srclist"
    fi
    apt-get update -qq
    # Exact version, so a newer source in the archive cannot slip in.
    apt-get source -qq "slurm-wlm=$installed" >&2 ||
        { echo "get-slurm-source: apt-get source slurm-wlm=$installed failed" >&2; exit 1; }
fi

src=$(cd slurm-wlm-"$upstream" && pwd)
cd "$src"
# The flags of Debian's debian/rules (override_dh_auto_configure), less
# --with-pmix: PMIx only builds an MPI plugin and changes no struct that
# slurmctld shares with a burst_buffer plugin.
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
./configure --prefix=/usr --sysconfdir=/etc/slurm --libdir="/usr/lib/$multiarch" \
    --with-munge --enable-pam --without-rpath --disable-debug \
    --enable-multiple-slurmd SUCMD=/bin/su SLEEP_CMD=/bin/sleep \
    > "$dest/configure.log" 2>&1 ||
    { echo "get-slurm-source: configure failed, see $dest/configure.log" >&2; exit 1; }

echo "$src" > "$stamp"
echo "$src"
