# lib.sh: TAP helpers for the sysmap shell tests (sourced, not run).
# Tests run in the build directory sysmap/; fixtures are found via $srcdir.
n=0
ok()  { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); echo "not ok $n - $*"; }
# is GOT WANT WHAT
is() {
    if [ "$1" = "$2" ]; then ok "$3"; else nok "$3"; echo "#   got '$1', want '$2'"; fi
}
# check WHAT COMMAND...: passes when the command succeeds
check() {
    what=$1; shift
    if "$@"; then ok "$what"; else nok "$what"; fi
}
finish() { echo "1..$n"; }

SRC=${srcdir:-.}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sysmap-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
FIX=$TMP/node-nvme
sh "$SRC/tests/make_fixture.sh" "$FIX" || echo "Bail out! cannot build the fixture tree in $FIX"
