#!/bin/sh
# The state file fuzzer, bounded, seeded with a table of the current form
# (the target writes it: see LLVMFuzzerInitialize) and one of adafs 0.x.
seeds=$(mktemp -d /tmp/bb-job-fuzz.XXXXXX)
trap 'rm -rf "$seeds"' EXIT
FUZZ_BB_JOB_SEED=$seeds/v2 ./fuzz_bb_job -runs=0 >/dev/null 2>&1
# The first record's fields alone ('R' + what follows its 20-byte frame).
{ printf R; tail -c +33 "$seeds/v2"; } > "$seeds/record"
printf '{"version":1,"jobs":[{"job_id":3,"uid":1,"gid":1,"request":"#X capacity=1G\\n","phase":1,"failure":0,"hurry":false,"released":false,"nodes":[{"name":"n1","agent_host":"h","agent_port":1,"server_port":0,"started":false,"stage_sent":false}],"node_capacity":1,"chunk_size":4096,"secret":"ab","stage_index":0,"finalizing":false,"in":{},"out":{},"t_begin":0,"t_deployed":0,"t_staged_in":0,"t_ended":0,"t_staged_out":0,"t_done":0}]}' > "$seeds/v1"
"$(dirname "$0")/../tests/run-fuzzer.sh" ./fuzz_bb_job "state file fuzzer" 200000 20 4096 \
    $(ls "$seeds"/* 2>/dev/null)
