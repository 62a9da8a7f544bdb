#!/bin/sh
# bench/autoscale_plot.sh DIR OUT.svg: the autoscaling figure of docs/serving.md from
# bench/autoscale.sh's output directory: over its runs (DIR/replicas.tsv, bench/autoscale_runs.py),
# the autoscaled InferenceService's desired replicas (median, and the band from the runs' min to
# max) and median ready replicas over engine time, the fixed deployments' counts, against the
# trace's arrivals per 10 s. Needs gnuplot (Debian: gnuplot-nox); not run in CI.
set -eu
dir=$1
out=$2
runs=$(ls -d "$dir"/run* | wc -l)
peak=$(cat "$dir"/run*/fixed.replicas.tsv | awk -F'\t' '$2 > m {m = $2} END {print m + 0}')
gnuplot <<GP
set terminal svg size 1200,460 dynamic font "sans,12"
set output "$out"
set title "Autoscaling (Knative KPA on concurrency) on the Azure LLM code trace, $runs runs: replicas against load (engine time)"
set xlabel "time (engine seconds)"
set ylabel "replicas (one H200 each)"
set y2label "arrivals per 10 s"
set ytics nomirror
set y2tics
set yrange [0:$peak + 1]
set y2range [0:*]
set grid
set key top right
set style fill transparent solid 0.3 noborder
plot "$dir/arrivals.tsv" u 1:2 axes x1y2 w boxes lc rgb "gray" t "arrivals per 10 s (right axis)", \
     "$dir/replicas.tsv" u 1:3:4 w filledcurves lc 1 fs transparent solid 0.2 t "autoscaled: desired, min to max of the runs", \
     "$dir/replicas.tsv" u 1:2 w steps lw 2 lc 1 t "autoscaled: desired, median", \
     "$dir/replicas.tsv" u 1:5 w steps lw 2 dt 2 lc 2 t "autoscaled: ready, median", \
     $peak w l lw 2 lc 3 t "fixed deployment sized for the peak ($peak)"
GP
