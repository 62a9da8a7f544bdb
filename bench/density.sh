#!/bin/sh
# bench/density.sh BUILD_DIR: the density experiment (docs/sim.md): a day of notebook and
# small-inference users on one 8 x H200 box under whole GPUs 1:1, time-slicing with memory caps,
# MPS, MIG and fractions, compared at equal quality of service (bench/density.py says how).
# Prints a table and `name: value unit` lines. SEED, MAX_WAIT, MAX_SLOWDOWN, SERVED override the
# defaults (7, 120 s, 1.5, 0.95).
set -eu
BUILD=${1:-build}
cmake --build "$BUILD" --target fatia >/dev/null
exec python3 "$(dirname "$0")/density.py" "$BUILD"
