#!/bin/sh
# The model file reader's fuzzer, bounded, seeded with a model trained on a
# small synthetic trace, with jobs in flight.
seeds=$(mktemp -d /tmp/walltime-fuzz-model.XXXXXX)
trap 'rm -rf "$seeds"' EXIT
awk 'BEGIN { srand(3); for (i = 1; i <= 120; i++) {
        u = 1 + i % 3; req = 3600 * u; run = int(req * (0.1 + 0.2 * rand()))
        printf "%d %d %d %d 4 -1 -1 4 %d -1 1 %d 1 -1 -1 -1 -1 -1\n", i, i * 300, 60, run, req, u } }' \
    > "$seeds/t.swf"
./adafs-walltime train --swf "$seeds/t.swf" --model "$seeds/m" --trees 2 > /dev/null
printf '%s\n' '{"job_id":900,"uid":1,"req_time":3600,"submit_time":99000,"procs":4}' \
    '{"job_id":900,"uid":1,"req_time":3600,"submit_time":99000,"procs":4,"wait_time":5}' \
    '{"job_id":901,"uid":2,"req_time":7200,"submit_time":99010,"procs":4}' |
    ./adafs-walltime predict --model "$seeds/m" --update > /dev/null
"$(dirname "$0")/../../tests/run-fuzzer.sh" ./tests/fuzz_model "model file fuzzer" \
    200000 20 65536 "$seeds/m"
