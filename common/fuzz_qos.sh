#!/bin/sh
# The QoS decoders and parsers fuzzer, bounded: nothing a peer or user
# hands over may crash them, and what decodes must encode back the same.
exec "$(dirname "$0")/../tests/run-fuzzer.sh" ./fuzz_qos "QoS messages and limits fuzzer" 200000 20 2048
