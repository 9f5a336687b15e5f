# lib.sh: shared by the stager's shell tests (sourced, not run).
# TAP output: one `ok N - what` per check, the plan at the end.
STAGE=${STAGE:-$PWD/adafs-stage}
n=0
failed=0
ok() {                  # ok "what" command...
    what=$1; shift
    n=$((n + 1))
    if "$@"; then echo "ok $n - $what"; else echo "not ok $n - $what"; failed=$((failed + 1)); fi
}
is() {                  # is "what" got want
    n=$((n + 1))
    if [ "$2" = "$3" ]; then echo "ok $n - $1"
    else echo "not ok $n - $1"; echo "#   got '$2', want '$3'"; failed=$((failed + 1)); fi
}
done_testing() { echo "1..$n"; }
# The tree as text: path, type, size, mode, mtime (ns) - what must be preserved.
tree_listing() { (cd "$1" && find . -mindepth 1 ! -type l -printf '%P %y %s %m %T@\n' | LC_ALL=C sort); }
json_field() {          # json_field FILE KEY: a number or bool from our one-line JSON
    sed -n "s/.*\"$2\":\([^,}]*\).*/\1/p" "$1"
}
WORK=$(mktemp -d /tmp/stager-test.XXXXXX)
chmod 755 "$WORK"
cleanup() { rm -rf "$WORK"; }
trap cleanup EXIT
