#!/bin/sh
# bench/pd_plot.sh PD.csv OUT.svg: the prefill/decode figure of docs/serving.md from bench/pd.sh's
# CSV: on llm-d's shared-prefix workload (Qwen3-32B, 4 H200s), against the Poisson rate, the means
# over the seeds of TTFT p50 and p90, ITL p99, and SLO attainment (TTFT <= 2 s with TPOT <= 100 ms;
# and strict: every inter-token gap <= 100 ms), one line per configuration (agg, pd-2p1d,
# pd-3p1d). Needs gnuplot (Debian: gnuplot-nox); not run in CI.
set -eu
csv=$1
out=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for c in agg pd-2p1d pd-3p1d; do
    awk -F, -v c="$c" 'NR > 1 && $1 == c && $2 == "shared-prefix" {
            n[$3]++; t50[$3] += $5; t90[$3] += $6; i99[$3] += $10; a[$3] += $14; s[$3] += $15 }
        END { for (r in n) printf "%s %f %f %f %f %f\n", r, t50[r] / n[r] / 1000, t90[r] / n[r] / 1000,
                  i99[r] / n[r], a[r] / n[r], s[r] / n[r] }' "$csv" | sort -n >"$tmp/$c.dat"
done
gnuplot <<GP
set terminal svg size 1500,480 dynamic font "sans,12"
set output "$out"
set multiplot layout 1,3 title "Aggregated vs prefill/decode disaggregated at 4 H200s: llm-d's shared-prefix workload, Qwen3-32B (engine-sim, means over 3 seeds)"
set xlabel "Poisson rate (requests per second)"
set grid
set key top left
set xtics 1
set logscale y
set ylabel "TTFT (s, log scale)"
plot "$tmp/agg.dat" u 1:2 w lp lw 2 pt 7 lc 1 t "agg 4x TP1, p50", \
     "$tmp/agg.dat" u 1:3 w lp lw 2 pt 7 dt 2 lc 1 t "agg, p90", \
     "$tmp/pd-2p1d.dat" u 1:2 w lp lw 2 pt 5 lc 2 t "2P TP1 + 1D TP2, p50", \
     "$tmp/pd-2p1d.dat" u 1:3 w lp lw 2 pt 5 dt 2 lc 2 t "2P+1D, p90", \
     "$tmp/pd-3p1d.dat" u 1:2 w lp lw 2 pt 9 lc 3 t "3P TP1 + 1D TP1, p50", \
     "$tmp/pd-3p1d.dat" u 1:3 w lp lw 2 pt 9 dt 2 lc 3 t "3P+1D, p90", \
     2 w l lc rgb "gray" dt 3 t "SLO 2 s"
unset logscale y
set ylabel "ITL p99 (ms)"
set yrange [0:*]
plot "$tmp/agg.dat" u 1:4 w lp lw 2 pt 7 lc 1 t "agg", \
     "$tmp/pd-2p1d.dat" u 1:4 w lp lw 2 pt 5 lc 2 t "2P+1D", \
     "$tmp/pd-3p1d.dat" u 1:4 w lp lw 2 pt 9 lc 3 t "3P+1D", \
     100 w l lc rgb "gray" dt 3 t "100 ms"
set ylabel "SLO attainment"
set yrange [0:1.05]
set key bottom left
plot "$tmp/agg.dat" u 1:5 w lp lw 2 pt 7 lc 1 t "agg (TTFT, TPOT)", \
     "$tmp/agg.dat" u 1:6 w lp lw 2 pt 7 dt 2 lc 1 t "agg (strict: every gap)", \
     "$tmp/pd-2p1d.dat" u 1:5 w lp lw 2 pt 5 lc 2 t "2P+1D (TTFT, TPOT)", \
     "$tmp/pd-2p1d.dat" u 1:6 w lp lw 2 pt 5 dt 2 lc 2 t "2P+1D (strict)", \
     "$tmp/pd-3p1d.dat" u 1:5 w lp lw 2 pt 9 lc 3 t "3P+1D (TTFT, TPOT)", \
     "$tmp/pd-3p1d.dat" u 1:6 w lp lw 2 pt 9 dt 2 lc 3 t "3P+1D (strict)"
unset multiplot
GP
