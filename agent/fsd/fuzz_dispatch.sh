#!/bin/sh
# The request fuzzer, bounded: every request adafsd serves goes through the
# real dispatch table to a real server (RocksDB, chunk files), starting from
# one well-formed request per opcode; no handler may crash, leak or answer
# other than 0 or -errno.
seeds=$(mktemp -d /tmp/dispatch-fuzz.XXXXXX)
trap 'rm -rf "$seeds"' EXIT
ADAFS_FUZZ_SEEDS=$seeds ./fuzz_dispatch -runs=0 > /dev/null 2>&1 ||
    { echo "not ok 1 - request fuzzer: could not write its seeds"; echo "1..1"; exit 0; }
"$(dirname "$0")/../../tests/run-fuzzer.sh" ./fuzz_dispatch "request fuzzer" 2000000 20 4096 \
    "$seeds"/op*
