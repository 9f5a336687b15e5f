#!/bin/sh
# The list-file fuzzer, bounded: parsing must never crash or leak, and every
# line is either a pair or an error with its line number.
exec "$(dirname "$0")/../tests/run-fuzzer.sh" ./fuzz_list "list-file fuzzer" 300000 15 256
