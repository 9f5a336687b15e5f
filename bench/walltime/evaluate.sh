#!/bin/sh
# Time-ordered replay of both shared traces with the default model, checked
# against the acceptance targets of issue 7, plus the EASY/EASY++ simulation.
#   bench/walltime/evaluate.sh [BUILD_DIR]   (default: the current directory)
# Prints one line per target: "met" or "NOT met", and the raw JSON; then the
# hindsight bounds of walltime_bounds (built by `make -C bench
# walltime/walltime_bounds`) when it is there.
set -u
build=${1:-.}
W=$build/walltime-model/adafs-walltime
B=$build/bench/walltime/walltime_bounds
here=$(cd "$(dirname "$0")" && pwd)
traces=${TRACES:-$here/../../../shared/traces}
status=0
for t in KTH-SP2-1996-2.1-cln CEA-Curie-2011-sample; do
    f=$traces/$t.swf
    [ -r "$f" ] || { echo "$t: trace not found at $f"; status=1; continue; }
    start=$(date +%s.%N)
    json=$("$W" evaluate --swf "$f" --json --simulate easy) || { status=1; continue; }
    end=$(date +%s.%N)
    echo "$json"
    echo "$json" | jq -r --arg t "$t" --arg secs "$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')" '
      .predictors as $p
      | ([$p.last2.mae_s, $p.alea.mae_s] | min) as $best
      | "\($t): replay took \($secs) s, \(.trainings) trainings (\(.train_seconds) s)",
        "  MAE h: request \($p.request.mae_s/3600*1000|round/1000) last2 \($p.last2.mae_s/3600*1000|round/1000) alea \($p.alea.mae_s/3600*1000|round/1000) model \($p.model.mae_s/3600*1000|round/1000) model_safe \($p.model_safe.mae_s/3600*1000|round/1000)",
        "  model MAE <= 0.8 x min(last2, alea) = \(0.8*$best/3600*1000|round/1000) h: \(if $p.model.mae_s <= 0.8*$best then "met" else "NOT met" end)",
        "  model_safe underestimates \($p.model_safe.underestimation_rate*1000|round/10)% <= 5%: \(if $p.model_safe.underestimation_rate <= 0.05 then "met" else "NOT met" end)",
        "  model_safe MAE <= 0.5 x request = \(0.5*$p.request.mae_s/3600*1000|round/1000) h: \(if $p.model_safe.mae_s <= 0.5*$p.request.mae_s then "met" else "NOT met" end)",
        "  EASY avg wait s / bounded slowdown: request \(.simulate_easy.request.avg_wait_s|round) / \(.simulate_easy.request.avg_bounded_slowdown*100|round/100), model \(.simulate_easy.model.avg_wait_s|round) / \(.simulate_easy.model.avg_bounded_slowdown*100|round/100), model_safe \(.simulate_easy.model_safe.avg_wait_s|round) / \(.simulate_easy.model_safe.avg_bounded_slowdown*100|round/100)"'
    if [ -x "$B" ]; then
        "$B" "$f" || status=1
    else
        echo "$t: no $B, hindsight bounds skipped"
    fi
done
exit $status
