#!/bin/sh
# The workers' record decoder, bounded: nothing crashes or leaks, and what
# is accepted is safe and encodes back to itself.
exec "$(dirname "$0")/../tests/run-fuzzer.sh" ./fuzz_dist_msg "workers' record fuzzer" 300000 15 4096
