#!/bin/sh
# The RPC decoder fuzzer, bounded: decoding must never crash, what decodes
# must encode back to the same bytes, and so must agent_proto's messages.
# Seeded with messages of the current form (the target writes them: see
# LLVMFuzzerInitialize).
seeds=$(mktemp -d /tmp/rpc-fuzz.XXXXXX)
trap 'rm -rf "$seeds"' EXIT
FUZZ_RPC_SEEDS=$seeds ./fuzz_rpc -runs=0 >/dev/null 2>&1
"$(dirname "$0")/../tests/run-fuzzer.sh" ./fuzz_rpc "rpc decoder fuzzer" 200000 20 512 \
    $(ls "$seeds"/* 2>/dev/null)
