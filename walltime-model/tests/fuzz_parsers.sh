#!/bin/sh
# The SWF/sacct line parser fuzzer, bounded and seeded with real lines of
# both formats: any crash, sanitizer report or inconsistent job fails.
seeds=$(mktemp -d /tmp/walltime-fuzz.XXXXXX)
trap 'rm -rf "$seeds"' EXIT
printf '%s\n' '    5   508960 196680  44155   16     -1    -1   16  53400    -1  1   4   4  -1 -1 -1 -1 -1' > "$seeds/swf"
printf '%s\n' '1|1000|100|a|batch|sim|2024-01-01T00:00:00|2024-01-01T00:01:00|60|1800|4|1|2Gc|CANCELLED by 0' > "$seeds/sacct"
"$(dirname "$0")/../../tests/run-fuzzer.sh" ./tests/fuzz_parsers "SWF/sacct parser fuzzer" \
    300000 20 256 "$seeds/swf" "$seeds/sacct"
