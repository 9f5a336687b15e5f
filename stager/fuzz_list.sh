#!/bin/sh
# Runs the list-file fuzzer for a bounded time: any crash, leak, sanitizer
# report or broken invariant fails the check.
log=fuzz_list.out
if ./fuzz_list -runs=300000 -max_total_time=15 -max_len=256 >"$log" 2>&1; then
    echo "ok 1 - list-file fuzzer: $(grep -c . "$log") log lines, no crash"
else
    sed 's/^/# /' "$log" | tail -n 40
    echo "not ok 1 - list-file fuzzer found a failing input"
fi
rm -f "$log"
echo "1..1"
