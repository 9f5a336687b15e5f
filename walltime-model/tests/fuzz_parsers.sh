#!/bin/sh
# Runs the SWF/sacct line parser fuzzer for a bounded time, seeded with real
# lines of both formats: any crash, sanitizer report or inconsistent job fails.
log=fuzz_parsers.out
corpus=$(mktemp -d /tmp/walltime-fuzz.XXXXXX)
trap 'rm -rf "$corpus" "$log"' EXIT
printf '%s\n' '    5   508960 196680  44155   16     -1    -1   16  53400    -1  1   4   4  -1 -1 -1 -1 -1' > "$corpus/swf"
printf '%s\n' '1|1000|100|a|batch|sim|2024-01-01T00:00:00|2024-01-01T00:01:00|60|1800|4|1|2Gc|CANCELLED by 0' > "$corpus/sacct"
if ./tests/fuzz_parsers -runs=300000 -max_total_time=20 -max_len=256 "$corpus" >"$log" 2>&1; then
    echo "ok 1 - SWF/sacct parser fuzzer: no crash, no inconsistent job"
else
    sed 's/^/# /' "$log" | tail -n 40
    echo "not ok 1 - SWF/sacct parser fuzzer found a failing input"
fi
echo "1..1"
