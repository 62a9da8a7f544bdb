#!/bin/bash
# bench/ssa.sh BUILD: a server-side apply update against a plain update of the same object
# (bench/ssa.py: fatiad's CPU per request and the wall time, median of 5 rounds, A/B in one
# run). fatiad runs with plain HTTP and --sync normal (an fsync would be the same for both and
# hide the difference) pinned to core 0, the client to core 1. BENCH_ONLY=plain BENCH_PREBUILT=1
# with another build's fatiad (main's) measures its plain update alone.
set -eu
B=${1:-build}
cd "$(dirname "$0")/.."
[ -n "${BENCH_PREBUILT:-}" ] || cmake --build "$B" --target fatiad >/dev/null
D=$(mktemp -d /tmp/fatia-bench.XXXXXX)
PID=
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$D"' EXIT
taskset -c 0 "$B/bin/fatiad" --data-dir "$D/data" --listen 127.0.0.1:0 --no-tls \
    --no-controllers --no-agent --sync normal >"$D/log" 2>&1 &
PID=$!
for _ in $(seq 200); do
    grep -q "serving the Kubernetes API" "$D/log" 2>/dev/null && break
    sleep 0.05
done
URL=$(grep -o 'http://127.0.0.1:[0-9]*' "$D/log" | head -1)
export FATIA_TOKEN=$(awk '$2 == "admin" {print $1; exit}' "$D/data/tokens")
taskset -c 1 python3 bench/ssa.py "$URL" "$PID"
