#!/bin/sh
# bench/supply.sh BUILD_DIR: the supply planner on 10,000 nodes x 8 GPUs with mixed policies
# (tests/supply/bench_supply.c), pinned to one CPU. Prints `name: value unit` lines; the target is
# supply_plan_ms under 200 ms.
set -eu
BUILD=${1:-build}
cmake --build "$BUILD" --target bench_supply >/dev/null
PIN=""
command -v taskset >/dev/null 2>&1 && PIN="taskset -c 0"
$PIN "$BUILD/bench/bench_supply" "${RUNS:-7}"
