#!/bin/bash
# bench/exec.sh [BUILD_DIR] [N]: `kubectl exec`'s stream latency on loopback (make bench-exec):
# a fatiad with its node agent, a pod, one WebSocket exec of cat, N echo round trips from a
# bench client (bench/exec_echo.py). The target: p99 under 5 ms.
set -eu
build=${1:-build}
n=${2:-2000}
tmp=$(mktemp -d /tmp/fatia-bench-exec.XXXXXX)
chmod 711 "$tmp"
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
"$build/bin/fatiad" --data-dir "$tmp/data" --listen 127.0.0.1:0 >"$tmp/log" 2>&1 &
pid=$!
for _ in $(seq 500); do grep -q "serving the Kubernetes API" "$tmp/log" && break; sleep 0.02; done
url=$(grep -o 'https://127.0.0.1:[0-9]*' "$tmp/log" | tail -1)
token=$(awk '$2 == "admin" {print $1; exit}' "$tmp/data/tokens")
cat >"$tmp/pod.json" <<'JSON'
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"echo","namespace":"default"},
 "spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"none","command":["sleep","3600"]}]}}
JSON
curl -sf --cacert "$tmp/data/tls.crt" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -X POST --data @"$tmp/pod.json" "$url/api/v1/namespaces/default/pods" >/dev/null
for _ in $(seq 200); do
    curl -sf --cacert "$tmp/data/tls.crt" -H "Authorization: Bearer $token" \
        "$url/api/v1/namespaces/default/pods/echo" | grep -q '"running"' && break
    sleep 0.1
done
/usr/bin/python3 "$(dirname "$0")/exec_echo.py" "$url" "$token" "$tmp/data/tls.crt" default echo "$n"
