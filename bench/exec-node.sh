#!/bin/bash
# bench/exec-node.sh [BUILD_DIR] [N]: bench/exec.sh's echo through `kubectl exec`'s stream, of a
# pod on a node role, so through the control plane's node proxy (make bench-exec-node;
# docs/fleet.md, "Streams of a node role's pods"): a control fatiad (no agent of its own), one
# `fatiad --role node` (box-0, the process runtime) on loopback, a pod on box-0, one WebSocket
# exec of cat, N echo round trips from bench/exec_echo.py: client -> control plane (TLS) ->
# relay -> node (mutual TLS) -> cat, and back.
set -eu
build=${1:-build}
n=${2:-2000}
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d /tmp/fatia-bench-exec-node.XXXXXX)
chmod 711 "$tmp"
pid= npid=
trap '[ -n "$npid" ] && kill "$npid" 2>/dev/null; [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
"$build/bin/fatiad" --data-dir "$tmp/data" --listen 127.0.0.1:0 --fleet "$src/examples/fleet/" \
    --no-agent >"$tmp/log" 2>&1 &
pid=$!
for _ in $(seq 500); do grep -q "serving the Kubernetes API" "$tmp/log" && break; sleep 0.02; done
url=$(grep -o 'https://127.0.0.1:[0-9]*' "$tmp/log" | tail -1)
token=$(awk '$2 == "admin" {print $1; exit}' "$tmp/data/tokens")
api() { curl -sf --cacert "$tmp/data/tls.crt" -H "Authorization: Bearer $token" "$@"; }
api -H 'Content-Type: application/json' -X POST --data '{"metadata":{"name":"kube-node-lease"}}' \
    "$url/api/v1/namespaces" >/dev/null
"$build/bin/fatia" token create --data-dir "$tmp/data" --node box-0 >/dev/null 2>&1
awk '$2 == "system:node:box-0" {print $1; exit}' "$tmp/data/tokens" >"$tmp/box-0.token"
"$build/bin/fatiad" --role node --server "$url" --token "$tmp/box-0.token" --ca "$tmp/data/tls.crt" \
    --node-name box-0 --data-dir "$tmp/box-0" --node-listen 127.0.0.1:0 --agent runtime=process \
    --agent user=current >"$tmp/box-0.log" 2>&1 &
npid=$!
for _ in $(seq 300); do
    api "$url/api/v1/nodes/box-0" | grep -q '"kubeletEndpoint"' && break
    sleep 0.1
done
api -H 'Content-Type: application/json' -X POST --data '{"apiVersion":"v1","kind":"Pod",
 "metadata":{"name":"echo","namespace":"default"},"spec":{"nodeName":"box-0",
 "automountServiceAccountToken":false,"restartPolicy":"Never",
 "containers":[{"name":"c","image":"none","command":["sleep","3600"]}]}}' \
    "$url/api/v1/namespaces/default/pods" >/dev/null
for _ in $(seq 200); do
    api "$url/api/v1/namespaces/default/pods/echo" | grep -q '"running"' && break
    sleep 0.1
done
/usr/bin/python3 "$(dirname "$0")/exec_echo.py" "$url" "$token" "$tmp/data/tls.crt" default echo "$n"
# the pod deleted: its node role stops it (its shim outlives fatiad by design)
api -X DELETE "$url/api/v1/namespaces/default/pods/echo?gracePeriodSeconds=0" >/dev/null
for _ in $(seq 100); do
    api "$url/api/v1/namespaces/default/pods/echo" >/dev/null || break
    sleep 0.1
done
