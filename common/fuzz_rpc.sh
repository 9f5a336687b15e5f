#!/bin/sh
# Runs the rpc decoder fuzzer for a bounded number of runs: any crash,
# sanitizer report or round-trip mismatch fails the check.
log=fuzz_rpc.out
if ./fuzz_rpc -runs=200000 -max_total_time=20 -max_len=512 >"$log" 2>&1; then
    echo "ok 1 - rpc decoder fuzzer: $(grep -c . "$log") log lines, no crash"
else
    sed 's/^/# /' "$log" | tail -n 40
    echo "not ok 1 - rpc decoder fuzzer found a failing input"
fi
rm -f "$log"
echo "1..1"
