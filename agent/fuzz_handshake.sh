#!/bin/sh
# The handshake fuzzer, bounded: no greeting, proof, identity or answer a
# peer makes up crashes either end or passes for a proof of the secret.
# Inputs up to 1100 bytes: an IDENTITY of the longest credential taken.
exec "$(dirname "$0")/../tests/run-fuzzer.sh" ./fuzz_handshake "handshake fuzzer" 200000 20 1100
