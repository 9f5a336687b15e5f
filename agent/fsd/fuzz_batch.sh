#!/bin/sh
# The batch-request fuzzer, bounded: adafsd's CREATE_BATCH and READ_BATCH
# handlers must never crash or leak on what a client sends, and must answer
# one status per entry or refuse the message.
exec "$(dirname "$0")/../../tests/run-fuzzer.sh" ./fuzz_batch "batch request fuzzer" 200000 15 8192
