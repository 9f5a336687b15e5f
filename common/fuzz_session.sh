#!/bin/sh
# The agent session fuzzer, bounded: hellos, replies, sealed messages and
# handshake frames from a peer never crash the decoders, and nothing opens
# without the key.
exec "$(dirname "$0")/../tests/run-fuzzer.sh" ./fuzz_session "agent session fuzzer" 100000 20 4200
