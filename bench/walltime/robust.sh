#!/bin/sh
# The walltime model's robustness protocol (doc/bench/walltime.md):
#  streams: every stress stream of stress.sh made from both traces, replayed
#     with the default settings: the conservative estimate's miss rate
#     overall and in windows of 1,000 consecutive jobs, its MAE, and the
#     median's MAE against min(last-two, ALEA);
#  heldout: the same for streams added after the settings were fixed
#     (stress.sh: drift, user-flip, and joined - one trace, then the other
#     as a new site);
#  cross: each setting of a small grid replayed on both traces; the setting
#     chosen on one trace (the lowest conservative MAE among those holding
#     the miss-rate targets there; the lowest median MAE) is then read off
#     the other trace, never re-tuned on it.
#
#   bench/walltime/robust.sh BUILD_DIR [streams|heldout|cross|all]
#
# Environment: TRACES (default ../shared/traces), OUT (the JSON of every
# replay, kept and reused; default /tmp/adafs-walltime-robust), JOBS
# (replays at once, default 2). Needs jq. A replay takes 20-40 s; `all`
# runs 26 of them.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
traces=${TRACES:-$here/../../../shared/traces}
out=${OUT:-/tmp/adafs-walltime-robust}
TRACE_NAMES="KTH-SP2-1996-2.1-cln CEA-Curie-2011-sample"

# One replay: robust.sh BUILD_DIR one TRACE STREAM NAME [TUNING...]
if [ "${2:-}" = one ]; then
    W=$1/walltime-model/adafs-walltime t=$3 s=$4 name=$5
    shift 5
    f=$out/$t.$s.swf
    if [ ! -s "$f" ]; then
        other=
        for o in $TRACE_NAMES; do [ "$o" = "$t" ] || other=$traces/$o.swf; done
        sh "$here/stress.sh" "$s" "$traces/$t.swf" $other > "$f.tmp"
        mv "$f.tmp" "$f"
    fi
    "$W" evaluate --swf "$f" --json "$@" > "$out/$t.$s.$name.json.tmp" 2>/dev/null
    mv "$out/$t.$s.$name.json.tmp" "$out/$t.$s.$name.json"
    exit 0
fi

build=$(cd "${1:?usage: robust.sh BUILD_DIR [streams|heldout|cross|all]}" && pwd)
what=${2:-all}
jobs=${JOBS:-2}
mkdir -p "$out"
[ -x "$build/walltime-model/adafs-walltime" ] || { echo "robust.sh: build $build first" >&2; exit 1; }
STREAMS="orig user-longer user-shorter new-users runs-x2 runs-x0.5 default-request"
HELDOUT="drift user-flip joined"
# The grid of the cross-trace protocol: NAME TUNING (default = no options).
GRID="default
fewer-trees --trees 20 --min-leaf 1000
deeper-trees --trees 100 --depth 4 --min-leaf 200
slow-calibration --calib-eta 0.02
fast-calibration --calib-eta 0.1
no-burst-price --inflight-k0 1000000
short-episodes --episode-gap 60"

# Runs the replays listed on stdin ("TRACE STREAM NAME TUNING...") that have
# no result yet, JOBS at a time.
run_all() {
    while read -r t s name tuning; do
        # (no trailing blank: xargs -L would join the next line to it)
        [ -s "$out/$t.$s.$name.json" ] || echo "$t $s $name${tuning:+ $tuning}"
    done | xargs -r -P "$jobs" -L 1 sh "$here/robust.sh" "$build" one || true
}

# row JSON LABEL: one table row; select: 1 if the targets hold
row() {
    jq -r --arg name "$2" '
      .predictors as $p | .windows.underestimation_rates.model_safe as $w
      | ([$p.last2.mae_s, $p.alea.mae_s] | min) as $best
      | ([$w.rates[] | select(. > 0.075)] | length) as $bad
      | ($w.rates | length) as $nw
      | "| \($name) | \($p.model_safe.underestimation_rate * 1000 | round / 10)% | \($bad) of \($nw) (\(if $nw > 0 then (1 - $bad / $nw) * 1000 | round / 10 else 0 end)% <= 7.5%) | \($w.worst.rate * 1000 | round / 10)% | \($p.model_safe.mae_s / 3600 * 1000 | round / 1000) | \($p.model.mae_s / 3600 * 1000 | round / 1000) | \($p.model.mae_s / $best * 1000 | round / 1000) | \(if $p.model_safe.underestimation_rate <= 0.05 and $bad <= $nw * 0.05 then "yes" else "**no**" end) |"' "$1"
}

header() {
    echo "| $1 | miss | windows > 7.5% | worst window | conservative MAE h | median MAE h | median / min(last2, ALEA) | miss targets |"
    echo "|---|---|---|---|---|---|---|---|"
}

# streams LIST: replays and tables of the given streams of both traces
streams() {
    for t in $TRACE_NAMES; do
        for s in $1; do
            echo "$t $s default"
        done
    done | run_all
    for t in $TRACE_NAMES; do
        echo
        header "$t"
        for s in $1; do
            row "$out/$t.$s.default.json" "$s"
        done
    done
}

if [ "$what" = streams ] || [ "$what" = all ]; then
    streams "$STREAMS"
fi
if [ "$what" = heldout ] || [ "$what" = all ]; then
    streams "$HELDOUT"
fi

if [ "$what" = cross ] || [ "$what" = all ]; then
    for t in $TRACE_NAMES; do
        echo "$GRID" | while read -r name tuning; do
            echo "$t orig $name $tuning"
        done
    done | run_all
    for t in $TRACE_NAMES; do
        echo
        header "$t, setting"
        echo "$GRID" | while read -r name tuning; do
            row "$out/$t.orig.$name.json" "$name"
        done
    done
    # Choose on one trace, read off the other.
    echo
    echo "| tuned on | conservative: chosen setting | on the other trace | median: chosen setting | on the other trace |"
    echo "|---|---|---|---|---|"
    set -- $TRACE_NAMES
    for pair in "$1 $2" "$2 $1"; do
        set -- $pair
        names=$(echo "$GRID" | cut -d' ' -f1)
        safe=$(for n in $names; do
                   jq -r --arg n "$n" '.predictors.model_safe as $s
                     | .windows.underestimation_rates.model_safe.rates as $r
                     | select($s.underestimation_rate <= 0.05 and
                              ([$r[] | select(. > 0.075)] | length) <= ($r | length) * 0.05)
                     | "\($s.mae_s) \($n)"' "$out/$1.orig.$n.json"
               done | sort -g | head -1 | cut -d' ' -f2)
        med=$(for n in $names; do
                  jq -r --arg n "$n" '"\(.predictors.model.mae_s) \($n)"' "$out/$1.orig.$n.json"
              done | sort -g | head -1 | cut -d' ' -f2)
        safe_there=$(if [ -n "$safe" ]; then jq -r '.predictors.model_safe as $s
            | .windows.underestimation_rates.model_safe.rates as $r
            | "miss \($s.underestimation_rate * 1000 | round / 10)%, \([$r[] | select(. > 0.075)] | length) of \($r | length) windows > 7.5%, MAE \($s.mae_s / 3600 * 1000 | round / 1000) h"' \
            "$out/$2.orig.$safe.json"; else echo "no setting holds the targets on $1"; fi)
        med_there=$(jq -r '.predictors as $p | ([$p.last2.mae_s, $p.alea.mae_s] | min) as $b
            | "MAE \($p.model.mae_s / 3600 * 1000 | round / 1000) h, \($p.model.mae_s / $b * 1000 | round / 1000) x min(last2, ALEA)"' \
            "$out/$2.orig.$med.json")
        echo "| $1 | ${safe:-none} | $2: $safe_there | $med | $2: $med_there |"
    done
fi
