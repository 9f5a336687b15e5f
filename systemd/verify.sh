#!/bin/bash
# verify.sh: systemd-analyze verify on every unit `make install` installs,
# with the programs it names present (installed into a scratch DESTDIR;
# the units' paths are pointed there). Skipped without systemd-analyze.
set -u
. "$abs_top_srcdir/tests/lib.sh"
command -v systemd-analyze >/dev/null || skip_all "systemd-analyze not installed (Debian package systemd)"

dest=$(mktemp -d "${TMPDIR:-/tmp}/adafs-units.XXXXXX")
trap 'rm -rf "$dest"' EXIT
if ! make -s -C "$abs_top_builddir" install DESTDIR="$dest" >"$dest/install.log" 2>&1; then
    sed 's/^/# /' "$dest/install.log"
    ok 1 "make install DESTDIR=$dest"
    tap_done
fi
units=$(cd "$dest$systemdunitdir" && ls)
[ -n "$units" ] || { ok 1 "units installed in $systemdunitdir"; tap_done; }
mkdir "$dest/verify"
for unit in $units; do
    sed -e "s|$sbindir/|$dest$sbindir/|g" -e "s|$bindir/|$dest$bindir/|g" \
        "$dest$systemdunitdir/$unit" >"$dest/verify/$unit"
done
for unit in $units; do
    # MANPATH: verify also opens each Documentation=man: page.
    # Only what it says about our unit counts: the host's own units may
    # have complaints of their own.
    out=$(cd "$dest/verify" && MANPATH=$dest$mandir systemd-analyze verify "$unit" 2>&1)
    rc=$?
    mine=$(grep -F "$unit" <<<"$out" | tr '\n' ' ')
    check "systemd-analyze verify $unit${mine:+: $mine}" -- test "$rc" = 0 -a -z "$mine"
done
for unit in $units; do
    grep -q "^Documentation=man:" "$dest/verify/$unit"
    ok $? "$unit names its man page (Documentation=man:...)"
done
for file in "$dest$sysconfdir"/default/*; do
    name=$(basename "$file")
    grep -q "EnvironmentFile=-$sysconfdir/default/$name\$" "$dest/verify/$name".service
    ok $? "$sysconfdir/default/$name is read by $name.service"
done
tap_done
