#!/bin/sh
# The RPC decoder fuzzer, bounded: decoding must never crash, and what
# decodes must encode back to the same bytes.
exec "$(dirname "$0")/../tests/run-fuzzer.sh" ./fuzz_rpc "rpc decoder fuzzer" 200000 20 512
