#!/bin/sh
# adafs-walltime end to end: evaluate (text, --json, --simulate easy), train,
# predict (one job, a stream, --update), and every usage and input error.
# The real traces are used when present (skipped cleanly if not).
set -u
W=${WALLTIME:-./adafs-walltime}
srcdir=${srcdir:-.}
traces=${TRACES:-$srcdir/../../shared/traces}   # the shared traces, if present
tmp=$(mktemp -d /tmp/walltime-cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); echo "not ok $n - $1"; }
check() { if eval "$2"; then ok "$1"; else nok "$1"; fi; }

# A small synthetic SWF trace: 6 users, 600 jobs, one malformed line.
awk 'BEGIN { srand(1); for (i = 1; i <= 600; i++) {
        u = 1 + i % 6; req = (u % 3 + 1) * 3600; run = int(req * (0.1 + 0.1 * u + 0.05 * rand()))
        printf "%d %d %d %d 4 -1 -1 4 %d -1 1 %d 1 -1 -1 -1 -1 -1\n", i, i * 600, int(300 * rand()), run, req, u
        if (i == 10) print "11 broken" } }' > "$tmp/t.swf"

"$W" evaluate --swf "$tmp/t.swf" > "$tmp/eval.txt" 2> "$tmp/eval.err"
check "evaluate exits 0" '[ $? -eq 0 ]'
check "malformed line reported with its number and skipped" \
    'grep -q "t.swf:11: field 2 (submit time) is not a number: '"'"'broken'"'"' (line skipped)" "$tmp/eval.err"'
check "text report: worst1k is - in a trace shorter than 1,000 jobs, not nan" \
    '! grep -q nan "$tmp/eval.txt" && grep -qE "^request .* - " "$tmp/eval.txt"'
check "text report has the five predictors" \
    '[ "$(grep -cE "^(request|last2|alea|model|model_safe) " "$tmp/eval.txt")" -eq 5 ]'

"$W" evaluate --swf "$tmp/t.swf" --json > "$tmp/eval.json" 2>/dev/null
check "--json output is one JSON object" '[ "$(jq -c type "$tmp/eval.json")" = "\"object\"" ]'
check "--json predictors are exactly request, last2, alea, model, model_safe" \
    '[ "$(jq -c "[.predictors | keys_unsorted[]]" "$tmp/eval.json")" = "[\"request\",\"last2\",\"alea\",\"model\",\"model_safe\"]" ]'
check "--json each predictor has n, mae_s, medae_s, underestimation_rate" \
    '[ "$(jq -c "[.predictors[] | keys_unsorted] | unique" "$tmp/eval.json")" = "[[\"n\",\"mae_s\",\"medae_s\",\"underestimation_rate\"]]" ]'
check "--json counts all 600 jobs and the request never underestimates" \
    '[ "$(jq ".predictors.request.n, .predictors.request.underestimation_rate" "$tmp/eval.json" | tr "\n" " ")" = "600 0 " ]'
check "--json model beats the request on the synthetic trace" \
    'jq -e ".predictors.model.mae_s < .predictors.request.mae_s" "$tmp/eval.json" > /dev/null'
check "--json windows: 1,000 jobs each, rates of every predictor (none in 600 jobs)" \
    'jq -e ".windows.size == 1000 and ([.windows.underestimation_rates[] | (.rates | length) == 0 and .worst == null] | all) and (.windows.underestimation_rates | keys | length) == 5" "$tmp/eval.json" > /dev/null'
check "--json counts the conservative estimates by calibration group" \
    'jq -e "[.conservative_groups[]] | add == 600" "$tmp/eval.json" > /dev/null'

"$W" evaluate --swf "$tmp/t.swf" --simulate easy > "$tmp/sim.txt" 2>/dev/null
check "--simulate easy reports wait and bounded slowdown for request and model" \
    '[ "$(grep -cE "^  (request|model|model_safe) +avg wait .* avg bounded slowdown" "$tmp/sim.txt")" -eq 3 ]'
"$W" evaluate --swf "$tmp/t.swf" --simulate fcfs > /dev/null 2> "$tmp/err"
check "--simulate other than easy is a usage error (exit 2)" \
    '[ $? -eq 2 ] && grep -q "adafs-walltime: --simulate takes only '"'easy'"', not '"'fcfs'"'" "$tmp/err"'

"$W" train --swf "$tmp/t.swf" --model "$tmp/m" > "$tmp/train.txt" 2>/dev/null
check "train writes a model" '[ $? -eq 0 ] && head -1 "$tmp/m" | grep -q "^adafs-walltime-model 5$"'
out=$("$W" predict --model "$tmp/m" --job '{"job_id":5,"uid":2,"req_time":7200,"procs":4,"submit_time":999999}')
check "predict --job answers one JSON line with both estimates <= request" \
    'echo "$out" | jq -e ".job_id == 5 and .median_s <= .conservative_s and .conservative_s <= 7200" > /dev/null'
check "predict --job names the calibration group and the miss probability" \
    'echo "$out" | jq -e "(.group | IN(\"site\", \"user\", \"user+request\")) and .miss_probability >= 0 and .miss_probability <= 1" > /dev/null'
printf '%s\n' '{"job_id":1,"uid":1,"req_time":3600,"submit_time":999999}' \
    '{"job_id":2,"uid":1,"req_time":' \
    '{"job_id":3,"uid":1,"submit_time":999999}' \
    '{"job_id":4,"uid":1,"req_time":3600,"color":"red"}' \
    '{"job_id":6,"uid":1,"req_time":3600,"submit_time":999000,"run_time":100}' \
    '{"job_id":8,"uid":1,"req_time":3600,"submit_time":9000000000000000000}' \
    '{"job_id":9,"uid":1,"req_time":3600,"status":99}' \
    | "$W" predict --model "$tmp/m" > "$tmp/stream.out" 2> "$tmp/stream.err"
check "predict stream: exit 1 when some lines were bad" '[ $? -eq 1 ]'
check "predict stream: one output line per input line" '[ "$(wc -l < "$tmp/stream.out")" -eq 7 ]'
check "predict stream: a time out of range reported with field and value" \
    'grep -q "^adafs-walltime: input line 6: submit time 9000000000000000000 is out of range (-1 for unknown, or 0 to 1099511627776)$" "$tmp/stream.err"'
check "predict stream: a status out of range reported" \
    'grep -q "^adafs-walltime: input line 7: member \"status\" must be -1 to 5, not 99$" "$tmp/stream.err"'
check "predict stream: bad JSON reported with its line number" \
    'grep -q "^adafs-walltime: input line 2: not JSON: " "$tmp/stream.err"'
check "predict stream: missing req_time reported" \
    'grep -q "^adafs-walltime: input line 3: member \"req_time\" (seconds, > 0) is required$" "$tmp/stream.err"'
check "predict stream: unknown member reported" \
    'grep -q "^adafs-walltime: input line 4: unknown member \"color\"$" "$tmp/stream.err"'
check "predict stream: the answer to a bad line says why, as JSON" \
    'sed -n 4p "$tmp/stream.out" | jq -e ".line == 4 and .error == \"bad job: unknown member \\\"color\\\"\"" > /dev/null'
check "predict stream: a line with run_time is learned from" \
    'sed -n 5p "$tmp/stream.out" | jq -e ".job_id == 6 and .observed" > /dev/null'
printf '%s\n' '{"job_id":21,"uid":1,"req_time":3600,"submit_time":999000}' \
    '{"job_id":21,"uid":1,"req_time":3600,"submit_time":999000,"wait_time":10}' \
    '{"job_id":21,"uid":1,"req_time":3600,"submit_time":999000,"wait_time":10,"run_time":100}' \
    | "$W" predict --model "$tmp/m" > "$tmp/life.out" 2>&1
check "predict stream: a job submitted, started (wait_time) and finished (run_time)" \
    '[ "$(jq -c "[.median_s != null, .started, .observed]" "$tmp/life.out" | tr -d "\n")" = "[true,null,null][false,true,null][false,null,true]" ]'
before=$(sed -n 's/^state \([0-9]*\) .*/\1/p' "$tmp/m")
echo '{"job_id":7,"uid":1,"req_time":3600,"submit_time":999000,"run_time":100}' |
    "$W" predict --model "$tmp/m" --update > /dev/null
check "predict --update saves what it learned" \
    '[ "$(sed -n "s/^state \([0-9]*\) .*/\1/p" "$tmp/m")" -eq $((before + 1)) ]'

"$W" > /dev/null 2>&1
check "no command is a usage error" '[ $? -eq 2 ]'
"$W" frobnicate 2> "$tmp/err"
check "unknown command named" '[ $? -eq 2 ] && grep -q "adafs-walltime: unknown command '"'frobnicate'"'" "$tmp/err"'
"$W" evaluate 2> "$tmp/err"
check "evaluate without a trace is a usage error" \
    '[ $? -eq 2 ] && grep -q "give exactly one of --swf FILE or --sacct FILE" "$tmp/err"'
"$W" evaluate --swf "$tmp/none.swf" 2> "$tmp/err"
check "missing trace file named with errno" \
    '[ $? -eq 1 ] && grep -q "cannot open trace $tmp/none.swf: No such file or directory" "$tmp/err"'
"$W" evaluate --swf "$tmp/t.swf" --trees 0 2> "$tmp/err"
check "out-of-range tuning value refused" \
    '[ $? -eq 2 ] && grep -q "trees must be a number in \[1, 1000\], not '"'0'"'" "$tmp/err"'
"$W" train --swf "$tmp/t.swf" 2> "$tmp/err"
check "train without --model is a usage error" '[ $? -eq 2 ] && grep -q "train needs --model OUT" "$tmp/err"'
"$W" predict --model "$tmp/none.model" --job '{}' 2> "$tmp/err"
check "predict with a missing model file names it" \
    '[ $? -eq 1 ] && grep -q "cannot open model file $tmp/none.model" "$tmp/err"'

# sacct input: the same command, with a malformed line.
cat > "$tmp/s.txt" <<'EOS'
1|1000|100|a|batch|sim|2024-01-01T00:00:00|2024-01-01T00:01:00|60|1800|4|1|1G|COMPLETED
1.batch|1000|100|a|batch|batch|2024-01-01T00:00:00|2024-01-01T00:01:00|60|1800|4|1|1G|COMPLETED
2|1000|100|a|batch|sim|2024-01-01T02:00:00|2024-01-01T02:00:00|60|1700|4|1|1G|COMPLETED
3|1000|100|a|batch|sim|2024-01-01T04:00:00|2024-01-01T04:00:00|60|bad|4|1|1G|COMPLETED
4|1000|100|a|batch|sim|2024-01-01T06:00:00|2024-01-01T06:00:00|60|1750|4|1|1G|TIMEOUT
EOS
"$W" evaluate --sacct "$tmp/s.txt" --json > "$tmp/s.json" 2> "$tmp/err"
check "sacct trace: malformed line reported and skipped" \
    'grep -q "s.txt:4: field 10 (ElapsedRaw) is not a non-negative integer: '"'bad'"' (line skipped)" "$tmp/err"'
check "sacct trace: 3 jobs evaluated, last2 of job 4 is (1800+1700)/2" \
    'jq -e ".predictors.request.n == 3 and .jobs == 3" "$tmp/s.json" > /dev/null'

# The real traces: the replay runs end to end (targets are in bench/walltime).
for t in KTH-SP2-1996-2.1-cln CEA-Curie-2011-sample; do
    if [ -r "$traces/$t.swf" ]; then
        "$W" evaluate --swf "$traces/$t.swf" --json --retrain-every 5000 > "$tmp/real.json" 2>/dev/null
        check "$t: replay of the real trace evaluates every job" \
            'jq -e ".skipped == 0 and .predictors.model.n == .jobs and .jobs > 28000" "$tmp/real.json" > /dev/null'
        check "$t: 28 or more windows of 1,000 jobs, the worst one named" \
            'jq -e ".windows.underestimation_rates.model_safe | (.rates | length) >= 28 and .rates[.worst.index] == .worst.rate" "$tmp/real.json" > /dev/null'
    else
        n=$((n + 1)); echo "ok $n # SKIP $traces/$t.swf not present"
    fi
done
echo "1..$n"
