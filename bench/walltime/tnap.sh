#!/bin/sh
# Node allocation prediction (ADA-FS's T_NAP) on both traces: how long
# before its start each job's planned node list already was the one it got,
# in the EASY simulation of `adafs-walltime evaluate --simulate easy`, with
# running jobs' end times taken from the request, the median estimate, the
# conservative one, and - as a bound no estimate reaches - the real run
# times (doc/bench/walltime.md).
#
#   bench/walltime/tnap.sh BUILD_DIR [OUT_DIR]
#
# Prints a markdown table and writes OUT_DIR/walltime-tnap.svg (gnuplot,
# Debian's gnuplot-nox). KTH-SP2 has one
# processor per node; CEA-Curie's thin nodes have 16 cores (a job takes
# whole nodes). Environment: TRACES (default ../shared/traces).
set -eu
build=$(cd "${1:?usage: tnap.sh BUILD_DIR [OUT_DIR]}" && pwd)
out=${2:-.}
here=$(cd "$(dirname "$0")" && pwd)
traces=${TRACES:-$here/../../../shared/traces}
W=$build/walltime-model/adafs-walltime
command -v gnuplot > /dev/null || { echo "tnap.sh: needs gnuplot (apt-get install gnuplot-nox)" >&2; exit 1; }
mkdir -p "$out"
tmp=$(mktemp -d /tmp/walltime-tnap.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

data=$tmp/tnap.dat
: > "$data"
echo "| trace | end times of running jobs from | jobs | started at once | T_NAP <= 1 s | 1 s - 10 min | > 10 min | avg wait s |"
echo "|---|---|---|---|---|---|---|---|"
for spec in KTH-SP2-1996-2.1-cln:1:KTH CEA-Curie-2011-sample:16:CEA; do
    t=${spec%%:*} rest=${spec#*:}
    cpn=${rest%%:*} label=${rest#*:}
    json=$tmp/$t.json
    "$W" evaluate --swf "$traces/$t.swf" --json --simulate easy --cores-per-node "$cpn" \
        > "$json" 2>/dev/null
    for est in request model model_safe exact; do
        name=$(case $est in model) echo median;; model_safe) echo conservative;;
                            exact) echo "real run time";; *) echo "$est";; esac)
        jq -r --arg e "$est" --arg t "$label" --arg n "$name" '
          .simulate_easy[$e] as $s | $s.t_nap as $p | ($s.jobs / 100) as $h
          | "| \($t) | \($n) | \($s.jobs) | \($p.at_once / $h * 10 | round / 10)% | \($p.le_1s / $h * 10 | round / 10)% | \($p.le_10min / $h * 10 | round / 10)% | \($p.gt_10min / $h * 10 | round / 10)% | \($s.avg_wait_s | round) |"' "$json"
        short=$(case $est in model_safe) echo conserv.;; exact) echo "real run";; *) echo "$name";; esac)
        jq -r --arg e "$est" --arg t "$label" --arg n "$short" '
          .simulate_easy[$e] as $s | $s.t_nap as $p | ($s.jobs / 100) as $h
          | "\"\($t)\\n\($n)\" \($p.at_once / $h) \($p.le_1s / $h) \($p.le_10min / $h) \($p.gt_10min / $h)"' \
          "$json" >> "$data"
    done
done

gnuplot <<EOF
set terminal svg size 960,480 font "sans,11" noenhanced
set output "$out/walltime-tnap.svg"
set title "How long before its start a job's nodes were known (T_NAP), EASY planning with each estimate"
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.7
set ylabel "share of jobs (%)"
set yrange [0:100]
set key outside right top
set xtics nomirror font "sans,9"
set bmargin 5
plot "$data" using 2:xtic(1) title "started at once", \
     "" using 3 title "T_NAP <= 1 s", \
     "" using 4 title "1 s - 10 min", \
     "" using 5 title "> 10 min"
EOF
echo
echo "plot: $out/walltime-tnap.svg"
