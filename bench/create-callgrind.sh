#!/bin/bash
# bench/create-callgrind.sh BUILD [SECS]: instructions per create in fatiad (docs/perf-create.md),
# counted by callgrind: deterministic, so the one figure of a shared machine that does not move
# with its load. fatiad (as bench/create-cost.sh runs it: plain HTTP, no controllers, no node
# agent, --sync full, SQLite, audit log on) under `valgrind --tool=callgrind --instr-atstart=no`;
# 50 warm-up creates, then instrumentation on for wrk's creates of 2 KB LocalQueues
# (bench/api_write.lua, 16 connections, SECS seconds, default 15), off again; the creates counted
# from a list of the namespace. Prints Ir per create, whole and for the parts of a create
# (inclusive), and leaves the profile in $CG_OUT (default /tmp/fatia-create.callgrind).
set -eu
cd "$(dirname "$0")/.."
B=$1 SECS=${2:-15} OUT=${CG_OUT:-/tmp/fatia-create.callgrind}
D=$(mktemp -d /tmp/fatia-cg.XXXXXX)
rm -f "$OUT"
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$OUT" \
    "$B/bin/fatiad" --data-dir "$D/data" --listen 127.0.0.1:0 --no-tls --no-controllers \
    --no-agent --sync full -f examples/ >"$D/log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null || true; rm -rf "$D"' EXIT
for _ in $(seq 1200); do
    grep -q "serving the Kubernetes API" "$D/log" 2>/dev/null && break
    sleep 0.1
done
URL=$(grep -o 'http://127.0.0.1:[0-9]*' "$D/log" | head -1)
[ -n "$URL" ] || { echo "create-callgrind: fatiad did not start:" >&2; cat "$D/log" >&2; exit 1; }
export FATIA_TOKEN
FATIA_TOKEN=$(awk '$2 == "admin" {print $1; exit}' "$D/data/tokens")
for ns in warm cg; do
    curl -sf -o /dev/null -X POST -H "Authorization: Bearer $FATIA_TOKEN" \
        -H 'Content-Type: application/json' "$URL/api/v1/namespaces" \
        -d "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$ns\"}}"
done
wrk -t1 -c1 -d60s -s bench/api_write.lua "$URL" -- warm 0 50 >/dev/null &
WPID=$!
L="$URL/apis/kueue.x-k8s.io/v1beta2/namespaces"
count() {
    curl -sf -H "Authorization: Bearer $FATIA_TOKEN" "$L/$1/localqueues" |
        python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))'
}
until [ "$(count warm)" -ge 50 ]; do sleep 0.5; done
kill $WPID 2>/dev/null || true
wait $WPID 2>/dev/null || true
callgrind_control -i on $PID >/dev/null
wrk -t1 -c16 -d"${SECS}s" -s bench/api_write.lua "$URL" -- cg 0 >/dev/null
callgrind_control -i off $PID >/dev/null
N=$(count cg)
kill -TERM $PID
wait $PID 2>/dev/null || true
trap 'rm -rf "$D"' EXIT
echo "creates=$N"
callgrind_annotate --inclusive=yes "$OUT" 2>/dev/null | awk -v n="$N" '
    /^-+$/ {sep++}
    /PROGRAM TOTALS/ {gsub(",", "", $1); printf "%-60s %10.0f\n", "whole create", $1 / n}
    sep >= 3 && $1 ~ /^[0-9,]+$/ && $NF !~ /\?\?\?/ {
        ir = $1; gsub(",", "", ir)
        fn = $0; sub(/^ *[0-9,]+ *(\([^)]*\))? */, "", fn); sub(/ \[.*$/, "", fn)
        if (ir / n >= 5000 && shown++ < 60) printf "%-60s %10.0f\n", substr(fn, 1, 60), ir / n
    }'
