#!/bin/sh
# bench/protobuf.sh: Kubernetes protobuf against JSON, encode and decode of a list of 10,000
# pods, the median of 5 runs in one process (make bench-protobuf; bench/protobuf_bench.c).
#   bench/protobuf.sh [BUILD_DIR] [PODS] [RUNS]
set -eu
build=${1:-build}
bin="$build/bench/bench_protobuf"
[ -x "$bin" ] || { echo "bench/protobuf.sh: $bin is missing (make build)" >&2; exit 2; }
exec "$bin" "${2:-10000}" "${3:-5}"
