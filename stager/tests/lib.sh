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
# kill_when_done N PROGRESS PID: SIGKILL PID once its --progress-json FILE
# shows N files done (or after 8 s): an interruption in mid-copy.
kill_when_done() {
    i=0
    while [ $i -lt 80 ]; do
        d=$(tail -n 1 "$2" 2>/dev/null | sed -n 's/.*"files_done":\([0-9]*\).*/\1/p')
        [ "${d:-0}" -ge "$1" ] && break
        sleep 0.1; i=$((i + 1))
    done
    kill -9 "$3"; wait "$3" 2>/dev/null
}
# run_workers N PREFIX ARGS...: N workers of one request at once, as the
# agents start them ("$STAGE" ARGS --worker K/N --json); their summaries in
# PREFIX.K.json, messages in PREFIX.K.err; returns how many failed.
run_workers() {
    rn=$1 rp=$2; shift 2
    k=0; pids=""
    while [ $k -lt $rn ]; do
        "$STAGE" "$@" --worker $k/$rn --json > "$rp.$k.json" 2> "$rp.$k.err" &
        pids="$pids $!"; k=$((k + 1))
    done
    rcs=0; for p in $pids; do wait $p || rcs=$((rcs + 1)); done
    return $rcs
}
# sum PREFIX N FIELD: FIELD summed over PREFIX.0.json .. PREFIX.N-1.json
sum() { k=0; t=0; while [ $k -lt $2 ]; do t=$((t + $(json_field "$1.$k.json" $3))); k=$((k + 1)); done; echo $t; }
WORK=$(mktemp -d /tmp/stager-test.XXXXXX)
chmod 755 "$WORK"
cleanup() { rm -rf "$WORK"; }
trap cleanup EXIT
