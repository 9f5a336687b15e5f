#!/bin/sh
# Runs the directive fuzzer for a bounded time, seeded with the unit tests'
# kinds of input: any crash, leak, sanitizer report or round-trip mismatch
# fails the check.
corpus=fuzz_directive.corpus
mkdir -p "$corpus"
printf '\001#BB_ADAFS capacity=200G chunk=512K\n#BB_ADAFS stage_in source=/p destination=in type=directory\n' > "$corpus/a"
printf '\000capacity=1G\nstage_out source="a b" destination=/x/%%j type=list\n' > "$corpus/b"
log=fuzz_directive.out
if ./fuzz_directive -runs=200000 -max_total_time=20 -max_len=512 "$corpus" >"$log" 2>&1; then
    echo "ok 1 - directive fuzzer: no crash, every rejection says where, canonical form round-trips"
else
    sed 's/^/# /' "$log" | tail -n 40
    echo "not ok 1 - directive fuzzer found a failing input"
fi
rm -rf "$log" "$corpus"
echo "1..1"
