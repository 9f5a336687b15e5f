#!/bin/sh
# Runs the host list fuzzer for a bounded time: any crash, leak, sanitizer
# report or round-trip mismatch fails the check.
log=fuzz_hostlist.out
if ./fuzz_hostlist -runs=300000 -max_total_time=20 -max_len=64 >"$log" 2>&1; then
    echo "ok 1 - hostlist fuzzer: $(grep -c . "$log") log lines, no crash"
else
    sed 's/^/# /' "$log" | tail -n 40
    echo "not ok 1 - hostlist fuzzer found a failing input"
fi
rm -f "$log"
echo "1..1"
