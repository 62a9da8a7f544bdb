#!/bin/sh
# bench/crd_validate.sh: validation (with defaults and pruning) of one 100-field custom object of
# a user-written CRD, the median of 5 runs in microseconds of CPU time (issue 17's target: under 50 us;
# bench/crd_validate_bench.c).
#   bench/crd_validate.sh [BUILD_DIR] [FIELDS] [RUNS]
set -eu
build=${1:-build}
bin="$build/bench/bench_crd_validate"
[ -x "$bin" ] || { echo "bench/crd_validate.sh: $bin is missing (make build)" >&2; exit 2; }
exec "$bin" "${2:-100}" "${3:-5}"
