#!/bin/sh
# bench/gpuwatch.sh: the GPU memory watchdog's CPU per period at 100 pods (make bench-gpuwatch).
#
#   bench/gpuwatch.sh [BUILD_DIR] [PODS] [PERIODS]
#
# Issue 16's bound: under 1% of a core at 100 pods, one period per 250 ms. The sampling goes
# through the fake NVML (tests/vgpu/fake_nvml.c), which reads a directory where the real one
# makes an ioctl.
set -eu
build=${1:-build}
bin="$build/bench/bench_gpuwatch"
[ -x "$bin" ] || { echo "bench/gpuwatch.sh: $bin is missing (make build)" >&2; exit 2; }
exec "$bin" "$build/tests/vgpu/fake/libnvidia-ml.so.1" "${2:-100}" "${3:-2000}" 250
