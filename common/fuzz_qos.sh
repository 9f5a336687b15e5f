#!/bin/sh
# The QoS decoders and parsers fuzzer, bounded: nothing a peer or user
# hands over may crash them, and what decodes must encode back the same.
# Seeded with a valid message of each kind a peer sends (fuzz_qos.c).
seeds=$(mktemp -d /tmp/qos-fuzz.XXXXXX)
trap 'rm -rf "$seeds"' EXIT
FUZZ_QOS_SEEDS=$seeds ./fuzz_qos -runs=0 >/dev/null 2>&1
"$(dirname "$0")/../tests/run-fuzzer.sh" ./fuzz_qos "QoS messages and limits fuzzer" 200000 20 2048 \
    $(ls "$seeds"/* 2>/dev/null)
