#!/bin/bash
# bench/autoscale.sh BUILD_DIR: autoscaling on a bursty trace (docs/serving.md, "Autoscaling on a
# bursty trace"). A real fatiad (controllers, node agent) serves one KServe InferenceService of
# engine-sim replicas (Llama-3.1-8B on H200s, BENCH_SPEED (10) times faster than real time, the
# Knative KPA autoscaler of isvc_scale.c on concurrency, scaleTarget BENCH_TARGET (2), 1 to
# BENCH_MAX_REPLICAS (6) replicas, stable window BENCH_WINDOW (6s of wall time = 60 s of engine
# time at speed 10)); `fatia gateway --all-inference-pools` in front; `fatia serve bench` replays
# the first BENCH_REQUESTS (1500) requests of the Azure LLM code trace (../shared/data: bursts of
# up to 33 requests per second between idle minutes; prompts of 2,048 tokens on average, answers
# of 28) with the SLO TTFT <= 2 s, TPOT <= 100 ms. The Deployment's replicas (desired and ready)
# are sampled every 0.5 s of wall time. Then the same trace against a fixed deployment of the
# peak's replica count (minReplicas = maxReplicas = the most the autoscaler asked for).
# BENCH_RUNS (3) runs of both, run i with `fatia serve bench --seed i` (the seed draws the
# synthesised prompt texts, so the prefix-cache hits, whose timing then differs run to run; the
# arrivals and lengths are the trace's).
# Output in $BENCH_OUT (BUILD_DIR/bench-autoscale): per run (run<i>/) the bench lines,
# replicas.tsv (engine seconds, desired, ready) and a summary; arrivals.tsv (requests per 10
# engine seconds); replicas.tsv over all runs (per 5 engine seconds: median, min and max of the
# desired replicas, median ready); and summary.txt: the median, min and max over the runs of SLO
# attainment, TTFT/ITL percentiles, GPU-hours (replica-hours of desired replicas, each replica one
# H200) against the fixed deployment's, the saving, the peak and the replica changes.
# bench/autoscale_plot.sh draws the figure.
set -u
BUILD=${1:-build}
SRC=$(cd "$(dirname "$0")/.." && pwd)
cmake --build "$BUILD" --target fatia fatiad >/dev/null || exit 1
BUILD=$(cd "$BUILD" && pwd)
cd "$SRC" || exit 1
. tests/cli/lib.bash "$BUILD"
. tests/cli/fatiad.bash
find_kubectl
OUT=${BENCH_OUT:-$BUILD/bench-autoscale}
SPEED=${BENCH_SPEED:-10}
REQ=${BENCH_REQUESTS:-1500}
WINDOW=${BENCH_WINDOW:-6s}
MAXR=${BENCH_MAX_REPLICAS:-6}
TARGET=${BENCH_TARGET:-2}
RUNS=${BENCH_RUNS:-3}
TRACE=${BENCH_TRACE:-$SRC/../shared/data/azure-llm-2023/AzureLLMInferenceTrace_code.csv}
[ -r "$TRACE" ] || TRACE=$SRC/../../shared/data/azure-llm-2023/AzureLLMInferenceTrace_code.csv
mkdir -p "$OUT"
PIDS=""
trap 'for p in $PIDS; do kill $p 2>/dev/null; done
      if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID" 2>/dev/null; fi; rm -rf "$TMP"' EXIT
export HOME=$TMP/home
mkdir -p "$HOME"
chmod 711 "$TMP"
FATIAD_CONTROLLERS=1 start_fatiad "$TMP/data" || exit 1
k="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $KCFG"
$k create namespace bench >/dev/null

"$FATIA" gateway --listen 127.0.0.1:0 --health-interval 100ms --metrics-interval 10ms \
    --metrics-staleness 200ms --all-inference-pools --kubeconfig "$KCFG" \
    --port-file "$TMP/gw.port" >"$TMP/gw.log" 2>&1 &
PIDS="$PIDS $!"
for _ in $(seq 250); do [ -s "$TMP/gw.port" ] && break; sleep 0.02; done
GW=127.0.0.1:$(cat "$TMP/gw.port")

# the trace's arrivals per 10 s (time 0 = its first request), for the figure
awk -F, -v n="$REQ" 'NR > 1 && NR <= n + 1 {
        split($1, a, " "); split(a[2], t, ":"); s = t[1] * 3600 + t[2] * 60 + t[3]
        if (NR == 2) s0 = s
        b = int((s - s0) / 10); c[b]++; if (b > m) m = b }
    END { for (i = 0; i <= m; i++) printf "%d\t%d\n", i * 10, c[i] + 0 }' "$TRACE" >"$OUT/arrivals.tsv"

# run NAME MIN MAX SEED: one InferenceService, the trace through the gateway, replicas sampled,
# into $RD
run() {
    local name=$1 min=$2 max=$3 seed=$4 t0 sp
    cat >"$TMP/$name.yaml" <<EOF
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  name: $name
  namespace: bench
  annotations:
    autoscaling.knative.dev/window: "$WINDOW"
spec:
  predictor:
    minReplicas: $min
    maxReplicas: $max
    scaleMetric: concurrency
    scaleTarget: $TARGET
    model:
      modelFormat: {name: vLLM}
      storageUri: hf://meta-llama/Llama-3.1-8B-Instruct
      args: ["--speed", "$SPEED", "--engine-timestamps", "--stream-interval", "4"]
EOF
    $k apply -f "$TMP/$name.yaml" >/dev/null
    for _ in $(seq 300); do
        [ "$($k get isvc "$name" -n bench -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ] && break
        sleep 0.2
    done
    for _ in $(seq 300); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "$GW/v1/completions" -d "{\"model\":\"$name\",\"prompt\":\"warm\",\"max_tokens\":1}")" = 200 ] && break
        sleep 0.2
    done
    t0=$(date +%s.%N)
    (
        while :; do
            curl -s --cacert "$CA" -H "Authorization: Bearer $TOKEN" \
                "$URL/apis/apps/v1/namespaces/bench/deployments/$name-predictor" |
                awk -v t0="$t0" -v sp="$SPEED" -v now="$(date +%s.%N)" '
                    { s = s $0 }
                    END {
                        d = s; sub(/.*"spec": *\{"replicas": */, "", d); sub(/[^0-9].*/, "", d)
                        r = s; if (r ~ /"readyReplicas"/) { sub(/.*"readyReplicas": */, "", r); sub(/[^0-9].*/, "", r) } else r = 0
                        printf "%.1f\t%s\t%s\n", (now - t0) * sp, d, r }'
            sleep 0.5
        done
    ) >"$RD/$name.replicas.tsv" &
    sp=$!
    "$FATIA" serve bench --url "http://$GW" --model "$name" --workload azure-trace \
        --trace "$TRACE" --requests "$REQ" --speed "$SPEED" --slo-ttft 2000 --slo-itl 100 \
        --seed "$seed" --label "$name" >"$RD/$name.txt" 2>&1
    sleep 1
    kill "$sp" 2>/dev/null
    wait "$sp" 2>/dev/null
    $k get events -n bench --field-selector involvedObject.name="$name" -o custom-columns=R:.reason,M:.message --no-headers >"$RD/$name.events" 2>/dev/null
    $k delete isvc "$name" -n bench --wait=false >/dev/null
    # the next run's InferenceService of this name starts from nothing
    for _ in $(seq 300); do
        [ -z "$($k get deploy "$name-predictor" -n bench -o name 2>/dev/null)" ] &&
            [ -z "$($k get pods -n bench -l serving.kserve.io/inferenceservice="$name" -o name 2>/dev/null)" ] && break
        sleep 0.2
    done
}

for i in $(seq "$RUNS"); do
    RD=$OUT/run$i
    mkdir -p "$RD"
    run burst 1 "$MAXR" "$i"
    PEAK=$(awk -F'\t' '$2 > m {m = $2} END {print m + 0}' "$RD/burst.replicas.tsv")
    [ "$PEAK" -ge 1 ] || PEAK=$MAXR
    run fixed "$PEAK" "$PEAK" "$i"
    python3 - "$RD" "$PEAK" >"$RD/summary.txt" <<'PY'
import sys
out, peak = sys.argv[1], int(sys.argv[2])
def lines(name):
    d = {}
    for l in open(f"{out}/{name}.txt"):
        p = l.split()
        if len(p) >= 2 and p[0].startswith(name + "."):
            d[p[0][len(name) + 1:-1]] = float(p[1])
    return d
def gpu_hours(name):
    rows = [l.split("\t") for l in open(f"{out}/{name}.replicas.tsv") if l.count("\t") == 2]
    rows = [(float(t), int(d or 0), int(r or 0)) for t, d, r in rows]
    h = sum((b[0] - a[0]) * a[1] for a, b in zip(rows, rows[1:])) / 3600
    return h, rows[-1][0] if rows else 0
b, f = lines("burst"), lines("fixed")
hb, tb = gpu_hours("burst")
hf, tf = gpu_hours("fixed")
print("== autoscaling on the Azure code trace (engine time; SLO TTFT <= 2 s, TPOT <= 100 ms)")
print("%-10s %9s %9s %9s %9s %9s %9s %9s %10s %10s" % ("run", "attain", "strict", "TTFT_p50", "TTFT_p90", "TTFT_p99", "ITL_p99", "E2EL_p90", "GPU-hours", "span_s"))
for n, d, h, t in (("autoscale", b, hb, tb), ("fixed-%d" % peak, f, hf, tf)):
    print("%-10s %9.3f %9.3f %9.1f %9.1f %9.1f %9.1f %9.1f %10.3f %10.0f" % (n, d.get("slo_attainment", 0), d.get("slo_attainment_strict", 0), d.get("ttft_p50", 0), d.get("ttft_p90", 0), d.get("ttft_p99", 0), d.get("itl_p99", 0), d.get("e2el_p90", 0), h, t))
print("autoscale.gpu_hours: %.3f h" % hb)
print("fixed.gpu_hours: %.3f h" % hf)
print("autoscale.gpu_hours_saved: %.1f %%" % ((1 - hb / hf) * 100 if hf else 0))
print("autoscale.peak_replicas: %d replicas" % peak)
PY
    cat "$RD/summary.txt"
done
python3 bench/autoscale_runs.py "$OUT" "$RUNS" | tee "$OUT/summary.txt"
