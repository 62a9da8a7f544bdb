#!/bin/bash
# bench/api.sh BUILD: fatiad's API under load (make bench-api). fatiad runs pinned to core 0
# (plain HTTP: the server's own cost, not TLS's), the load generator (wrk 4.1, or
# bench/api_fanout.c) pinned to core 1. Objects are LocalQueues of about 2 KB. Each figure is the
# median of 3 runs; rates are the achieved ones.
#   creates at about 2,000/s (40 connections, each pausing 19 ms between requests): p50 / p99
#   creates unpaced (32 connections): throughput
#   gets of one object at 2,000/s and unpaced
#   list of 10,000 objects (one connection): p50 / p99
#   watch fan-out of one write to 100 watchers: p50 / p99 per watcher, and until all have it
# BENCH_SYNC=normal runs fatiad with --sync normal (no fsync per commit; default full).
# BENCH_STORE=etcd runs fatiad on a one-member etcd that the script starts (docs/fleet.md).
# BENCH_PREBUILT=1 takes BUILD/bin/fatiad and BUILD/bench_api_fanout as they are (a machine
# without a compiler: scripts/device-bundle packs them, with wrk, for a quiet GPU machine).
set -eu
B=${1:-build}
cd "$(dirname "$0")/.."
if [ -z "${BENCH_PREBUILT:-}" ]; then
    cmake --build "$B" --target fatiad >/dev/null
    cc -O2 -Wall -Isrc -o "$B/bench_api_fanout" bench/api_fanout.c
fi
command -v wrk >/dev/null || { echo "bench-api: wrk not found (scripts/setup installs it)" >&2; exit 1; }

D=$(mktemp -d /tmp/fatia-bench.XXXXXX)
PID=
ETCD_PID=
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    if [ -n "$ETCD_PID" ]; then kill "$ETCD_PID" 2>/dev/null; wait "$ETCD_PID" 2>/dev/null || true; fi
    rm -rf "$D"
}
trap cleanup EXIT
STORE=()
if [ "${BENCH_STORE:-sqlite}" = etcd ]; then
    # BENCH_STORE=etcd: fatiad on a one-member etcd of its own (on core 1, with the load)
    EP=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    PP=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    taskset -c 1 etcd --data-dir "$D/etcd" --listen-client-urls "http://127.0.0.1:$EP" \
        --advertise-client-urls "http://127.0.0.1:$EP" --listen-peer-urls "http://127.0.0.1:$PP" \
        --initial-advertise-peer-urls "http://127.0.0.1:$PP" \
        --initial-cluster "default=http://127.0.0.1:$PP" --max-txn-ops 10240 \
        --max-request-bytes 10485760 --quota-backend-bytes 4294967296 >"$D/etcd.log" 2>&1 &
    ETCD_PID=$!
    for _ in $(seq 100); do
        curl -sf -o /dev/null -X POST "http://127.0.0.1:$EP/v3/maintenance/status" -d '{}' && break
        sleep 0.1
    done
    STORE=(--store etcd --etcd-endpoints "http://127.0.0.1:$EP" --etcd-max-request-bytes 10Mi --etcd-max-txn-ops 10240)
fi
taskset -c 0 "$B/bin/fatiad" --data-dir "$D/data" --listen 127.0.0.1:0 --no-tls --no-controllers \
    --sync "${BENCH_SYNC:-full}" "${STORE[@]}" \
    -f examples/ \
    >"$D/log" 2>&1 &
PID=$!
for _ in $(seq 200); do
    grep -q "serving the Kubernetes API" "$D/log" 2>/dev/null && break
    sleep 0.05
done
# the API's line (the workbench proxy prints its own URL first)
URL=$(grep "serving the Kubernetes API at" "$D/log" | grep -o 'http://127.0.0.1:[0-9]*' | head -1)
PORT=${URL##*:}
export FATIA_TOKEN=$(awk '$2 == "admin" {print $1; exit}' "$D/data/tokens")
# a namespace per create run: one namespace holds at most 50,000 objects (--max-namespace-objects),
# and a fast build passes that within three runs (403s, counted as errors, not as creates)
for ns in bench-list bench-p1 bench-p2 bench-p3 bench-m1 bench-m2 bench-m3; do
    curl -sf -o /dev/null -X POST -H "Authorization: Bearer $FATIA_TOKEN" \
        -H 'Content-Type: application/json' "$URL/api/v1/namespaces" \
        -d "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$ns\"}}"
done
W="taskset -c 1 wrk -t1 --latency"
cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) * 1000 / hz}' "/proc/$PID/stat"; }

# field VALUE-NAME from RESULT lines of several runs -> median
median() {
    grep '^RESULT' | sed -n "s/.* $1=\([0-9.]*\).*/\1/p" | sort -g |
        awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'
}
runs() { # N CMD...
    local n=$1
    shift
    for _ in $(seq "$n"); do "$@"; done
}

for i in 1 2 3; do $W -c40 -d10s -s bench/api_write.lua "$URL" -- "bench-p$i" 19; done >"$D/create-paced"
c0=$(cpu_ms)
for i in 1 2 3; do $W -c32 -d5s -s bench/api_write.lua "$URL" -- "bench-m$i" 0; done >"$D/create-max"
c1=$(cpu_ms)
NCREATE=$(sed -n 's/^ *\([0-9]*\) requests in.*/\1/p' "$D/create-max" | awk '{s += $1} END {print s}')
NCREATE=$((NCREATE - $(sed -n 's/.*non2xx=\([0-9]*\) errors=\([0-9]*\).*/\1 \2/p' "$D/create-max" |
    awk '{s += $1 + $2} END {print s + 0}')))
CREATE_CPU=$(awk -v a="$c0" -v b="$c1" -v n="$NCREATE" 'BEGIN {printf "%.0f", (b - a) * 1000 / n}')
runs 3 $W -c40 -d5s -s bench/api_read.lua "$URL" -- \
    /apis/kueue.x-k8s.io/v1beta2/clusterqueues/team-a 19 >"$D/get-paced"
runs 3 $W -c32 -d5s -s bench/api_read.lua "$URL" -- \
    /apis/kueue.x-k8s.io/v1beta2/clusterqueues/team-a 0 >"$D/get-max"
count_list() {
    curl -sf -H "Authorization: Bearer $FATIA_TOKEN" \
        "$URL/apis/kueue.x-k8s.io/v1beta2/namespaces/bench-list/localqueues" |
        python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))'
}
N=0
for _ in 1 2 3 4 5 6; do # fill to exactly 10,000 however loaded the machine is
    $W -c16 -d8s -s bench/api_write.lua "$URL" -- bench-list 0 $((10000 - N)) >"$D/fill"
    N=$(count_list)
    [ "$N" -ge 10000 ] && break
done
runs 3 $W -c1 -d5s -s bench/api_read.lua "$URL" -- \
    /apis/kueue.x-k8s.io/v1beta2/namespaces/bench-list/localqueues 0 >"$D/list"
# fatiad's own CPU time per list (user + system, from /proc), apart from the transfer and the
# client's parsing, which dominate on a loaded machine
c0=$(cpu_ms)
for _ in $(seq 20); do
    curl -sf -o /dev/null -H "Authorization: Bearer $FATIA_TOKEN" \
        "$URL/apis/kueue.x-k8s.io/v1beta2/namespaces/bench-list/localqueues"
done
c1=$(cpu_ms)
LIST_CPU=$(awk -v a="$c0" -v b="$c1" 'BEGIN {printf "%.1f", (b - a) / 20}')
# the same bytes over loopback without fatiad: the floor of any list of this size here
BYTES=$(curl -sf -H "Authorization: Bearer $FATIA_TOKEN" \
    "$URL/apis/kueue.x-k8s.io/v1beta2/namespaces/bench-list/localqueues" | wc -c)
for _ in 1 2 3; do
    taskset -c 1 "$B/bench_api_fanout" 127.0.0.1 "$PORT" "$FATIA_TOKEN" 100 20
done >"$D/fanout"
fan() { grep "^$1:" "$D/fanout" | awk '{print $2}' | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

echo "api_create_fixed_rate: $(median rps <"$D/create-paced") req/s"
echo "api_create_p50_at_fixed_rate: $(median p50 <"$D/create-paced") ms"
echo "api_create_p99_at_fixed_rate: $(median p99 <"$D/create-paced") ms"
echo "api_create_max_rate: $(median rps <"$D/create-max") req/s"
echo "api_create_p99_at_max_rate: $(median p99 <"$D/create-max") ms"
echo "api_create_server_cpu: $CREATE_CPU us"
echo "api_get_fixed_rate: $(median rps <"$D/get-paced") req/s"
echo "api_get_p99_at_fixed_rate: $(median p99 <"$D/get-paced") ms"
echo "api_get_max_rate: $(median rps <"$D/get-max") req/s"
echo "api_list_objects: $N objects"
echo "api_list_p50: $(median p50 <"$D/list") ms"
echo "api_list_p99: $(median p99 <"$D/list") ms"
echo "api_list_bytes: $BYTES bytes"
echo "api_list_server_cpu: $LIST_CPU ms"
echo "watch_fanout_watchers: 100"
echo "watch_fanout_p50: $(fan watch_fanout_p50) ms"
echo "watch_fanout_p99: $(fan watch_fanout_p99) ms"
echo "watch_fanout_all_delivered: $(fan watch_fanout_all_delivered_median) ms"
errs=$(cat "$D"/create-* "$D"/get-* "$D"/list | sed -n 's/.*non2xx=\([0-9]*\) errors=\([0-9]*\).*/\1 \2/p' |
    awk '{s += $1 + $2} END {print s + 0}')
echo "api_errors: $errs requests"
echo "load_average_during_run: $(cut -d' ' -f1-3 /proc/loadavg)"
