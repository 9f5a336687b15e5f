#!/bin/sh
# The host list fuzzer, bounded: expansion must never crash, leak or overrun,
# and compressing an expansion must give the same set of names.
exec "$(dirname "$0")/../tests/run-fuzzer.sh" ./fuzz_hostlist "hostlist fuzzer" 300000 20 64
