#!/bin/sh
# The directive fuzzer, bounded and seeded with both kinds of input: no
# crash, every rejection says where, the canonical form round-trips.
seeds=$(mktemp -d /tmp/directive-fuzz.XXXXXX)
trap 'rm -rf "$seeds"' EXIT
printf '\001#BB_ADAFS capacity=200G chunk=512K\n#BB_ADAFS stage_in source=/p destination=in type=directory\n' > "$seeds/script"
printf '\000capacity=1G\nstage_out source="a b" destination=/x/%%j type=list\n' > "$seeds/bb"
printf '\001#BB_ADAFS create_persistent name=proj_1 capacity=10G nodes=2 access=group:users\n#BB_ADAFS use_persistent name=other\n' > "$seeds/persist"
printf '\000destroy_persistent name=old\ncapacity=1G\n' > "$seeds/destroy"
printf '\001#BB_ADAFS create_persistent name=fs capacity=1G fair_share=user-then-size\n' > "$seeds/fair"
# 2^64-1 bytes: its canonical form (all 20 digits) once did not parse again
printf '\000capacity=18014398509481983.999999K\n' > "$seeds/huge"
"$(dirname "$0")/../tests/run-fuzzer.sh" ./fuzz_directive "directive fuzzer" 200000 20 512 \
    "$seeds/script" "$seeds/bb" "$seeds/persist" "$seeds/destroy" "$seeds/fair" "$seeds/huge"
