#!/bin/sh
# The handshake fuzzer, bounded: no greeting, proof or answer a peer makes
# up crashes either end or passes for a proof of the secret.
exec "$(dirname "$0")/../tests/run-fuzzer.sh" ./fuzz_handshake "handshake fuzzer" 200000 20 256
