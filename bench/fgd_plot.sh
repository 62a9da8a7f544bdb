#!/bin/sh
# bench/fgd_plot.sh RESULTS.csv PAPER.csv OUT.svg: the FGD figure of docs/sim.md. Unallocated GPUs
# (share of the fleet) against arrived workload (share of the fleet's GPUs asked for), fatia's
# policies as lines with their 95 % intervals (RESULTS.csv: bench/fgd_seeds.py --csv, trace
# "default"), the paper's FGD and BestFit (PAPER.csv: docs/fgd-paper-default.csv, from the
# artifact's results) as points with theirs. Needs gnuplot (Debian: gnuplot-nox); not run in CI.
set -eu
res=$1
paper=$2
out=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for p in binpack bestfit fragmentation fgd fgdpack; do
    awk -F, -v p="$p" '$1 == "default" && $2 == p { print $3, $4, $5 }' "$res" >"$tmp/$p.dat"
done
for p in 05-BestFit 06-FGD; do
    awk -F, -v p="$p" '$1 == p { print $2, $4, $5 }' "$paper" >"$tmp/paper-$p.dat"
done
gnuplot <<GP
set terminal svg size 1200,560 dynamic font "sans,12"
set output "$out"
set multiplot layout 1,2 title "FGD experiment, openb default pod list: 10 seeds (42-51), mean and 95 % interval"
set xlabel "arrived workload (% of the fleet's GPUs asked for)"
set ylabel "unallocated GPUs (% of 6,212)"
set grid
set key top right
set xrange [0:132]
set yrange [0:100]
plot "$tmp/binpack.dat" u 1:2:3 w yerrorlines lw 1.5 t "fatia binpack", \
     "$tmp/bestfit.dat" u 1:2:3 w yerrorlines lw 1.5 t "fatia bestfit", \
     "$tmp/fragmentation.dat" u 1:2:3 w yerrorlines lw 1.5 t "fatia fragmentation (before)", \
     "$tmp/fgd.dat" u 1:2:3 w yerrorlines lw 2 t "fatia fgd", \
     "$tmp/fgdpack.dat" u 1:2:3 w yerrorlines lw 2 t "fatia fgdpack (improvement)", \
     "$tmp/paper-06-FGD.dat" u 1:2:3 w yerrorbars pt 7 ps 1.2 t "paper FGD", \
     "$tmp/paper-05-BestFit.dat" u 1:2:3 w yerrorbars pt 5 ps 1.2 t "paper BestFit"
set title "80-130 %"
set xrange [88:132]
set yrange [3.5:9.5]
plot "$tmp/binpack.dat" u 1:2:3 w yerrorlines lw 1.5 t "fatia binpack", \
     "$tmp/bestfit.dat" u 1:2:3 w yerrorlines lw 1.5 t "fatia bestfit", \
     "$tmp/fragmentation.dat" u 1:2:3 w yerrorlines lw 1.5 t "fatia fragmentation (before)", \
     "$tmp/fgd.dat" u 1:2:3 w yerrorlines lw 2 t "fatia fgd", \
     "$tmp/fgdpack.dat" u 1:2:3 w yerrorlines lw 2 t "fatia fgdpack (improvement)", \
     "$tmp/paper-06-FGD.dat" u 1:2:3 w yerrorbars pt 7 ps 1.2 t "paper FGD", \
     "$tmp/paper-05-BestFit.dat" u 1:2:3 w yerrorbars pt 5 ps 1.2 t "paper BestFit"
unset multiplot
GP
