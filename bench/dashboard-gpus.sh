#!/bin/bash
# bench/dashboard-gpus.sh: the dashboard's GPU page with 100 nodes x 8 simulated GPUs in Debian's
# Chromium (web/tests/bench-gpus.mjs has the method): the median of 5 loads from navigation start
# to the last GPU cell (target < 1 s), then 50 changes/s for 10 s, each timed to the screen.
#   bench/dashboard-gpus.sh [BUILD_DIR]       (make bench-dashboard-gpus)
#   NODES=100 RATE=50 SECS=10                 the fleet's size and the load
# fatiad runs without controllers and agent: the bench writes the ResourceSlices and the pods
# holding slices itself, as placement would.
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/cli/lib.bash "${1:-build}"
. tests/cli/fatiad.bash
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || skip "Chromium is not installed (scripts/setup)"
[ -f "$BUILD/dashboard/index.html" ] || { echo "build the dashboard first (cmake --build $BUILD)" >&2; exit 1; }
FATIAD_CONTROLLERS=0 start_fatiad "$TMP/data" --dashboard "$BUILD/dashboard" --no-agent || exit 1
NODE_EXTRA_CA_CERTS=$CA node web/tests/bench-gpus.mjs "$URL" "$TOKEN" || fail "the bench's targets"
stop_fatiad
finish
