#!/bin/sh
# bench/demand.sh BUILD_DIR: the demand layer's hot paths (tests/demand/bench_demand.c), pinned
# to one CPU: NVIDIA's DeviceClass selector per device, claim allocation on a 1,000-node x 8-GPU
# fleet (NVLink-island pairs, first fit over all nodes and on a named node), hardware profile
# injection per Pod. Prints `name: value unit` lines (medians of RUNS runs).
set -eu
BUILD=${1:-build}
cmake --build "$BUILD" --target bench_demand >/dev/null
PIN=""
command -v taskset >/dev/null 2>&1 && PIN="taskset -c 0"
$PIN "$BUILD/bench/bench_demand" "${RUNS:-5}"
