#!/bin/bash
# bench/fleet-scale.sh BUILD [NODES PODS RATE]: the fleet scale run (docs/fleet-scale.md).
# Starts fatiad (controllers on, --no-agent) with a NodePool of NODES simulated nodes x 8 H200
# (the device controller publishes the Nodes and ResourceSlices), one ClusterQueue covering them,
# then bench/fleet_scale.py plays the nodes (leases every 10 s, node status) and drives PODS pods
# at RATE pods/s through Kueue admission and placement, each played as a no-op (bind -> Running
# -> Succeeded -> deleted). BACKEND=sqlite (default) or etcd (one etcd member on loopback, its CPU
# and RSS measured too). The harness uses the admin token (no node role is needed for it).
# Defaults: 1000 nodes, 50000 pods, 100 pods/s. Writes $OUT (default /tmp/fleet-scale-BACKEND.json).
# FLEET_TAIL=S: seconds the run waits past the last arrival for the pods to finish (default 120).
# FATIAD=PATH FATIAD_PREBUILT=1: run that fatiad without building (scripts/fleet-scale-device).
# LOG_OUT=DIR: fatiad's and etcd's logs are copied there at the end.
set -eu
BUILD=${1:-build}
NODES=${2:-1000}
PODS=${3:-50000}
RATE=${4:-100}
BACKEND=${BACKEND:-sqlite}
OUT=${OUT:-/tmp/fleet-scale-$BACKEND.json}
FATIAD=${FATIAD:-$BUILD/bin/fatiad}
# FATIAD=PATH: a fatiad built elsewhere (the GPU machine runs a carried bundle, no cmake there)
[ -n "${FATIAD_PREBUILT:-}" ] || cmake --build "$BUILD" --target fatiad >/dev/null
TMP=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null
    # LOG_OUT=DIR keeps fatiad's (and etcd's) log
    [ -z "${LOG_OUT:-}" ] || cp "$TMP"/*.log "$LOG_OUT/" 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

cat >"$TMP/fleet.yaml" <<Y
apiVersion: fatia.dev/v1alpha1
kind: NodePool
metadata: {name: sim}
spec:
  count: $NODES
  resources: {cpu: "128", memory: 2Ti, pods: "110"}
  gpus: [{product: NVIDIA H200, count: 8}]
  nvlinkIslands: [[0, 1, 2, 3], [4, 5, 6, 7]]
  driverVersion: "580.159.04"
  cudaDriverVersion: "13.0"
Y
cat >"$TMP/queues.yaml" <<Y
apiVersion: v1
kind: Namespace
metadata: {name: scale}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: h200}
spec: {}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: scale}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: h200
      resources:
      - {name: cpu, nominalQuota: $((NODES * 128))}
      - {name: memory, nominalQuota: $((NODES * 2048))Gi}
      - {name: nvidia.com/gpu, nominalQuota: $((NODES * 8))}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: gpu, namespace: scale}
spec: {clusterQueue: scale}
Y
STORE=()
if [ "$BACKEND" = etcd ]; then
    cp=$(free_port) pp=$(free_port)
    etcd --name s --data-dir "$TMP/etcd" --listen-client-urls "http://127.0.0.1:$cp" \
        --advertise-client-urls "http://127.0.0.1:$cp" --listen-peer-urls "http://127.0.0.1:$pp" \
        --initial-advertise-peer-urls "http://127.0.0.1:$pp" --initial-cluster "s=http://127.0.0.1:$pp" \
        --max-txn-ops 10240 --max-request-bytes 10485760 --quota-backend-bytes 8589934592 \
        >"$TMP/etcd.log" 2>&1 &
    PIDS+=($!)
    ETCD_PID=$!
    for _ in $(seq 200); do ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:$cp" endpoint health >/dev/null 2>&1 && break; sleep 0.1; done
    STORE=(--store etcd --etcd-endpoints "http://127.0.0.1:$cp" --etcd-max-request-bytes 10Mi --etcd-max-txn-ops 10240)
fi
"$FATIAD" --data-dir "$TMP/d" --listen 127.0.0.1:0 --no-agent --inventory sim "${STORE[@]}" \
    --fleet "$TMP/fleet.yaml" -f "$TMP/queues.yaml" >"$TMP/fatiad.log" 2>&1 &
FATIAD_PID=$!
PIDS+=($FATIAD_PID)
for _ in $(seq 600); do grep -q "serving the Kubernetes API at" "$TMP/fatiad.log" && break; sleep 0.1; done
URL=$(grep -o 'https\?://127.0.0.1:[0-9]*' "$TMP/fatiad.log" | tail -1)
TOKEN=$(awk '$2 == "admin" {print $1; exit}' "$TMP/d/tokens")
# the device controller publishes the nodes
for _ in $(seq 600); do
    n=$(curl -s --cacert "$TMP/d/tls.crt" -H "Authorization: Bearer $TOKEN" "$URL/api/v1/nodes" |
        python3 -c 'import json,sys; print(len(json.load(sys.stdin).get("items",[])))' 2>/dev/null || echo 0)
    [ "$n" -ge "$NODES" ] && break
    sleep 0.5
done
[ "$n" -ge "$NODES" ] || { echo "fleet-scale: only $n of $NODES nodes published" >&2; exit 1; }
echo "fleet-scale: $BACKEND, $n nodes published" >&2
pids=$FATIAD_PID
[ "$BACKEND" = etcd ] && pids="$pids,$ETCD_PID"
python3 "$(dirname "$0")/fleet_scale.py" "$URL" "$TOKEN" "$TMP/d/tls.crt" "$NODES" "$PODS" "$RATE" "$OUT" "$pids"
echo "fatiad log: $(grep -c 'warning\|error' "$TMP/fatiad.log" || true) warning/error lines; the commonest:" >&2
grep 'warning\|error' "$TMP/fatiad.log" | cut -c29-200 | sort | uniq -c | sort -rn | head -5 >&2 || true
