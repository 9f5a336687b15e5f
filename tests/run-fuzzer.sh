#!/bin/sh
# run-fuzzer.sh: runs one libFuzzer target for a bounded time as a TAP check.
#
#   run-fuzzer.sh PROGRAM WHAT RUNS SECONDS MAX_LEN [SEED_FILE...]
#
# Any crash, leak, sanitizer report or broken invariant (the target aborts)
# fails the check, and the end of the fuzzer's log is shown. Seed files, if
# given, start the corpus.
#
# ADAFS_SKIP_FUZZ set: skipped. scripts/check sets it for the sanitizer and
# distcheck passes: a fuzzer is built the same way (libFuzzer, ASan, UBSan)
# whatever the build's configuration, so the plain pass has already run it.
[ $# -ge 5 ] || { echo "usage: $0 PROGRAM WHAT RUNS SECONDS MAX_LEN [SEED...]" >&2; exit 2; }
[ -z "${ADAFS_SKIP_FUZZ:-}" ] || { echo "1..0 # SKIP ADAFS_SKIP_FUZZ is set"; exit 0; }
program=$1 what=$2 runs=$3 seconds=$4 max_len=$5
shift 5
name=$(basename "$program")
log=$name.out
corpus=$name.corpus
rm -rf "$corpus"
mkdir -p "$corpus"
for seed in "$@"; do cp "$seed" "$corpus/"; done
if "$program" -runs="$runs" -max_total_time="$seconds" -max_len="$max_len" "$corpus" >"$log" 2>&1; then
    echo "ok 1 - $what: no crash or broken invariant in $(grep -c . "$log") log lines"
else
    sed 's/^/# /' "$log" | tail -n 40
    echo "not ok 1 - $what found a failing input"
fi
rm -rf "$log" "$corpus"
echo "1..1"
