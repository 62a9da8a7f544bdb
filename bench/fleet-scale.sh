#!/bin/bash
# bench/fleet-scale.sh BUILD [NODES PODS RATE]: the fleet scale run (docs/fleet-scale.md).
# Starts fatiad (controllers on, --no-agent) with a NodePool of NODES simulated nodes x 8 H200
# (the device controller publishes the Nodes and ResourceSlices), one ClusterQueue covering them,
# then bench/fleet_scale.py plays the nodes (leases every 10 s, node status) and drives PODS pods
# at RATE pods/s through Kueue admission and placement, each played as a no-op (bind -> Running
# -> Succeeded -> deleted). BACKEND=sqlite (default) or etcd (one etcd member on loopback, its CPU
# and RSS measured too). The harness uses the admin token (no node role is needed for it).
# BACKEND=etcd only: ETCD_MEMBERS=N (default 1): an N-member etcd cluster on loopback, each member
# its own data dir, all N endpoints given to fatiad; REPLICAS=R (default 1, at most 8): R fatiad
# control replicas (fatiad-a, fatiad-b, ...) on one etcd prefix (--etcd-replica --leader-elect,
# kube-controller-manager's timings, one --service-account-signing-key-file), each its own
# --data-dir and port; the later ones start with a copy of fatiad-a's tokens file and serving
# certificate, so one admin token and one CA serve for all. The harness spreads its connections
# over the replicas (bench/fleet_scale.py's header) and labels every process's CPU and RSS
# (fatiad or fatiad-a.., etcd or etcd-0..); the JSON records the replica that leads.
# Defaults: 1000 nodes, 50000 pods, 100 pods/s. Writes $OUT (default /tmp/fleet-scale-BACKEND.json).
# FLEET_TAIL=S: seconds the run waits past the last arrival for the pods to finish (default 120).
# FATIAD=PATH FATIAD_PREBUILT=1: run that fatiad without building (scripts/fleet-scale-device).
# LOG_OUT=DIR: fatiad's and etcd's logs are copied there at the end (fatiad*.log, etcd-N.log).
set -eu
BUILD=${1:-build}
NODES=${2:-1000}
PODS=${3:-50000}
RATE=${4:-100}
BACKEND=${BACKEND:-sqlite}
REPLICAS=${REPLICAS:-1}
MEMBERS=${ETCD_MEMBERS:-1}
[ "$BACKEND" = etcd ] || [ "$REPLICAS$MEMBERS" = 11 ] ||
    { echo "fleet-scale: REPLICAS and ETCD_MEMBERS need BACKEND=etcd" >&2; exit 2; }
[ "$REPLICAS" -ge 1 ] && [ "$REPLICAS" -le 8 ] || { echo "fleet-scale: REPLICAS 1-8" >&2; exit 2; }
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
LABELS=() # label=pid for the harness's CPU/RSS
if [ "$BACKEND" = etcd ]; then
    declare -a cp pp
    cluster="" urls=""
    for i in $(seq 0 $((MEMBERS - 1))); do
        cp[$i]=$(free_port) pp[$i]=$(free_port)
        cluster="$cluster${cluster:+,}etcd-$i=http://127.0.0.1:${pp[$i]}"
        urls="$urls${urls:+,}http://127.0.0.1:${cp[$i]}"
    done
    for i in $(seq 0 $((MEMBERS - 1))); do
        etcd --name "etcd-$i" --data-dir "$TMP/etcd-$i" --listen-client-urls "http://127.0.0.1:${cp[$i]}" \
            --advertise-client-urls "http://127.0.0.1:${cp[$i]}" --listen-peer-urls "http://127.0.0.1:${pp[$i]}" \
            --initial-advertise-peer-urls "http://127.0.0.1:${pp[$i]}" --initial-cluster "$cluster" \
            --initial-cluster-token "fleet-scale-$$" \
            --max-txn-ops 10240 --max-request-bytes 10485760 --quota-backend-bytes 8589934592 \
            >"$TMP/etcd-$i.log" 2>&1 &
        PIDS+=($!)
        # one member: "etcd", as before; several: etcd-0, etcd-1, ...
        if [ "$MEMBERS" = 1 ]; then LABELS+=("etcd=$!"); else LABELS+=("etcd-$i=$!"); fi
    done
    for _ in $(seq 300); do ETCDCTL_API=3 etcdctl --endpoints "$urls" endpoint health >/dev/null 2>&1 && break; sleep 0.1; done
    ETCDCTL_API=3 etcdctl --endpoints "$urls" endpoint health >/dev/null 2>&1 ||
        { echo "fleet-scale: etcd ($MEMBERS members) not healthy" >&2; exit 1; }
    STORE=(--store etcd --etcd-endpoints "$urls" --etcd-max-request-bytes 10Mi --etcd-max-txn-ops 10240)
    # several replicas: one prefix (the default), --etcd-replica, the controllers under leader
    # election (kube-controller-manager's timings), one ServiceAccount signing key
    if [ "$REPLICAS" -gt 1 ]; then
        head -c 32 /dev/urandom >"$TMP/sa.key"
        STORE+=(--etcd-replica --leader-elect --service-account-signing-key-file "$TMP/sa.key")
    fi
fi
# replica NAME DIR: one fatiad; its URL appended to URLS
URLS=""
replica() {
    local name=$1 dir=$2 pid u
    : >"$TMP/$name.log"
    "$FATIAD" --data-dir "$dir" --listen 127.0.0.1:0 --no-agent --inventory sim "${STORE[@]}" \
        --fleet "$TMP/fleet.yaml" -f "$TMP/queues.yaml" >"$TMP/$name.log" 2>&1 &
    pid=$!
    PIDS+=($pid)
    LABELS+=("$name=$pid")
    for _ in $(seq 600); do grep -q "serving the Kubernetes API at" "$TMP/$name.log" && break; sleep 0.1; done
    u=$(grep -o 'https\?://127.0.0.1:[0-9]*' "$TMP/$name.log" | tail -1)
    [ -n "$u" ] || { echo "fleet-scale: $name did not start" >&2; tail -5 "$TMP/$name.log" >&2; exit 1; }
    URLS="$URLS${URLS:+,}$u"
}
if [ "$REPLICAS" = 1 ]; then
    replica fatiad "$TMP/d"
else
    # every replica gets the first one's admin token and serving certificate (fatiad keeps a
    # tokens file and a certificate it finds), so that one token and one CA serve for all
    replica fatiad-a "$TMP/d"
    letters=(a b c d e f g h)
    for r in $(seq 1 $((REPLICAS - 1))); do
        l=${letters[$r]}
        mkdir -p "$TMP/d-$l" && cp "$TMP/d/tokens" "$TMP/d/tls.crt" "$TMP/d/tls.key" "$TMP/d-$l/"
        replica "fatiad-$l" "$TMP/d-$l"
    done
fi
URL=${URLS%%,*}
TOKEN=$(awk '$2 == "admin" {print $1; exit}' "$TMP/d/tokens")
# the device controller (the leader's) publishes the nodes
for _ in $(seq 600); do
    n=$(curl -s --cacert "$TMP/d/tls.crt" -H "Authorization: Bearer $TOKEN" "$URL/api/v1/nodes" |
        python3 -c 'import json,sys; print(len(json.load(sys.stdin).get("items",[])))' 2>/dev/null || echo 0)
    [ "$n" -ge "$NODES" ] && break
    sleep 0.5
done
[ "$n" -ge "$NODES" ] || { echo "fleet-scale: only $n of $NODES nodes published" >&2; exit 1; }
shape=""
[ "$REPLICAS$MEMBERS" = 11 ] || shape=" ($MEMBERS etcd members, $REPLICAS replicas)"
echo "fleet-scale: $BACKEND$shape, $n nodes published" >&2
FLEET_LEADER=""
if [ "$REPLICAS" -gt 1 ]; then
    FLEET_LEADER=$(grep -l "leads (lease" "$TMP"/fatiad-*.log | head -1 | xargs -r basename | sed 's/\.log$//')
    echo "fleet-scale: the controllers' leader: ${FLEET_LEADER:-none}" >&2
fi
pids=$(IFS=,; echo "${LABELS[*]}")
FLEET_LEADER=$FLEET_LEADER python3 "$(dirname "$0")/fleet_scale.py" "$URLS" "$TOKEN" "$TMP/d/tls.crt" \
    "$NODES" "$PODS" "$RATE" "$OUT" "$pids"
for f in "$TMP"/fatiad*.log; do
    echo "$(basename "$f" .log) log: $(grep -c 'warning\|error' "$f" || true) warning/error lines; the commonest:" >&2
    grep 'warning\|error' "$f" | cut -c29-200 | sort | uniq -c | sort -rn | head -5 >&2 || true
done
