#!/bin/bash
# bench/pd.sh BUILD_DIR: aggregated against prefill/decode-disaggregated serving at equal GPU
# count (docs/serving.md, "Prefill/decode disaggregation"). engine-sims run BENCH_SPEED times
# faster than real time with their virtual clocks stamped into every streamed chunk (figures are
# engine time), behind one `fatia gateway` (cache-aware, P/D-aware), `fatia serve bench` the
# client, with goodput under the SLO TTFT <= 2 s and TPOT (mean inter-token latency) <= 100 ms
# (vLLM's --goodput, DistServe's), and the strict attainment: every inter-token gap <= 100 ms.
#
# Configurations of BENCH_GPUS (4) H200s, each a fresh set of engines and a fresh gateway:
#   agg      4 replicas, TP1, prefill and decode in each (role both)
#   pd-2p1d  2 prefill replicas (TP1) + 1 decode replica (TP2): llm-d's shape (prefill: more
#            replicas, less TP; decode: more TP)
#   pd-3p1d  3 prefill replicas (TP1) + 1 decode replica (TP1)
# KV link: NVLink (328 GB/s, 0.5 ms), or BENCH_KV_LINK=rdma.
# Workloads:
#   shared-prefix  llm-d's, scaled to the GPU count: 40 groups x 5 prompts, 6,000-token system
#                  prompt, 1,200-token question, 1,000 output tokens, Qwen3-32B; Poisson rates
#                  BENCH_RATES ("2 3 4") per engine second, BENCH_STAGE_SECONDS (60) of arrivals
#   azure-trace    the Azure LLM conversation trace (../shared/data), BENCH_AZURE_REQUESTS (600)
#                  requests, its clock divided by BENCH_AZURE_SCALES ("10 20"), Llama-3.1-8B
# Seeds BENCH_SEEDS ("1 2 3"). Output: "label.name: value unit" lines per stage in $BENCH_OUT
# (BUILD_DIR/bench-pd), a summary table and $BENCH_OUT/pd.csv (bench/pd_plot.sh draws it).
set -u
BUILD=${1:-build}
cmake --build "$BUILD" --target fatia >/dev/null || exit 1
F=$(cd "$BUILD/bin" && pwd)/fatia
SRC=$(cd "$(dirname "$0")/.." && pwd)
OUT=${BENCH_OUT:-$BUILD/bench-pd}
SPEED=${BENCH_SPEED:-10}
RATES=${BENCH_RATES:-2 3 4}
STAGE=${BENCH_STAGE_SECONDS:-60}
SEEDS=${BENCH_SEEDS:-1 2 3}
AZ_REQ=${BENCH_AZURE_REQUESTS:-600}
AZ_SCALES=${BENCH_AZURE_SCALES:-10 20}
CONFIGS=${BENCH_CONFIGS:-agg pd-2p1d pd-3p1d}
WORKLOADS=${BENCH_WORKLOADS:-shared-prefix azure-trace}
LINK=${BENCH_KV_LINK:-nvlink}
TRACE=${BENCH_TRACE:-$SRC/../shared/data/azure-llm-2023/AzureLLMInferenceTrace_conv.csv}
[ -r "$TRACE" ] || TRACE=$SRC/../../shared/data/azure-llm-2023/AzureLLMInferenceTrace_conv.csv
mkdir -p "$OUT"
TMP=$(mktemp -d /tmp/fatia-bench-pd.XXXXXX)
PIDS=""
stop_all() {
    for p in $PIDS; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    PIDS=""
}
trap 'stop_all; rm -rf "$TMP"' EXIT

wait_port() {
    for _ in $(seq 500); do
        [ -s "$1" ] && return 0
        sleep 0.02
    done
    echo "bench: $1 never appeared" >&2
    return 1
}

# engine NAME MODEL ROLE TP: one engine-sim in the background; its URL#labels appended to $EPS
engine() {
    rm -f "$TMP/$1.port"
    "$F" engine-sim --listen 127.0.0.1:0 --port-file "$TMP/$1.port" --model "$2" --role "$3" \
        --gpus "$4" --kv-link "$LINK" --speed "$SPEED" --engine-timestamps --stream-interval 4 \
        2>>"$TMP/$1.log" &
    PIDS="$PIDS $!"
    NAMES="$NAMES $1"
    ROLES="$ROLES $3"
}

# stage LABEL CONFIG MODEL BENCH-ARGS...
stage() {
    local label=$1 config=$2 model=$3 eps="" urls="" n i name role
    shift 3
    NAMES="" ROLES=""
    case $config in
    agg) for i in 1 2 3 4; do engine "e$i" "$model" both 1; done ;;
    pd-2p1d)
        engine p1 "$model" prefill 1
        engine p2 "$model" prefill 1
        engine d1 "$model" decode 2
        ;;
    pd-3p1d)
        for i in 1 2 3; do engine "p$i" "$model" prefill 1; done
        engine d1 "$model" decode 1
        ;;
    esac
    set -- "$@"
    n=0
    for name in $NAMES; do
        n=$((n + 1))
        role=$(echo $ROLES | cut -d' ' -f$n)
        wait_port "$TMP/$name.port" || return 1
        urls="$urls${urls:+,}http://127.0.0.1:$(cat "$TMP/$name.port")"
        if [ "$role" = both ]; then
            eps="$eps${eps:+,}http://127.0.0.1:$(cat "$TMP/$name.port")"
        else
            eps="$eps${eps:+,}http://127.0.0.1:$(cat "$TMP/$name.port")#llm-d.ai/role=$role"
        fi
    done
    rm -f "$TMP/gw.port"
    "$F" gateway --listen 127.0.0.1:0 --port-file "$TMP/gw.port" --endpoints "$eps" \
        --metrics-interval "$((50000 / SPEED))us" --metrics-staleness "$((2000000 / SPEED))us" \
        --health-interval 1s --seed 7 2>>"$TMP/gw.log" &
    PIDS="$PIDS $!"
    wait_port "$TMP/gw.port" || return 1
    for _ in $(seq 200); do
        [ "$(curl -s "127.0.0.1:$(cat "$TMP/gw.port")/metrics" |
            grep -c 'fatia_gateway_endpoint_ready{.*} 1')" = "$n" ] && break
        sleep 0.05
    done
    "$F" serve bench --url "http://127.0.0.1:$(cat "$TMP/gw.port")" --model "$model" \
        --speed "$SPEED" --engines "$urls" --label "$label" --slo-ttft 2000 --slo-itl 100 \
        "$@" >"$OUT/$label.txt" 2>&1
    curl -s "127.0.0.1:$(cat "$TMP/gw.port")/metrics" | awk -v l="$label" '
        /^fatia_gateway_pd_decisions_total/ {
            r = $1; sub(/.*decision="/, "", r); sub(/".*/, "", r)
            printf "%s.pd_%s: %d requests\n", l, r, $2 }' >>"$OUT/$label.txt"
    for name in $NAMES; do curl -s "127.0.0.1:$(cat "$TMP/$name.port")/metrics"; done |
        awk -v l="$label" '
        /^fatia_engine_sim_kv_transfers_total/ { t += $2 }
        /^fatia_engine_sim_kv_transfer_seconds_total/ { s += $2 }
        /^fatia_engine_sim_kv_transfer_bytes_total/ { b += $2 }
        /^vllm:num_preemptions_total/ { p += $2 }
        /^fatia_engine_sim_step_lag_seconds_sum/ { ls += $2 }
        /^fatia_engine_sim_step_lag_seconds_count/ { ln += $2 }
        END {
            printf "%s.kv_transfers: %d transfers\n%s.preemptions: %d requests\n", l, t, l, p
            if (t) printf "%s.kv_transfer_mean: %.3f ms\n%s.kv_bytes_mean: %.1f MB\n", l, s / t * 1000, l, b / t / 1e6
            if (ln) printf "%s.engine_step_lag_mean: %.2f ms\n", l, ls / ln * 1000 }' >>"$OUT/$label.txt"
    stop_all
}

m() { awk -v k="$1.$2:" '$1 == k { print $2; exit }' "$OUT/$1.txt" 2>/dev/null; }

echo "config,workload,load,seed,ttft_p50,ttft_p90,ttft_p99,itl_p50,itl_p90,itl_p99,tpot_p50,tpot_p99,goodput,attainment,attainment_strict,throughput,completed,failed,hit" >"$OUT/pd.csv"
row() { # row LABEL CONFIG WORKLOAD LOAD SEED
    local l=$1
    echo "$2,$3,$4,$5,$(m $l ttft_p50),$(m $l ttft_p90),$(m $l ttft_p99),$(m $l itl_p50),$(m $l itl_p90),$(m $l itl_p99),$(m $l tpot_p50),$(m $l tpot_p99),$(m $l goodput),$(m $l slo_attainment),$(m $l slo_attainment_strict),$(m $l request_throughput),$(m $l completed),$(m $l failed),$(m $l prefix_hit_ratio)" >>"$OUT/pd.csv"
}

t0=$(date +%s)
for seed in $SEEDS; do
    for c in $CONFIGS; do
        if [[ " $WORKLOADS " == *" shared-prefix "* ]]; then
            for rate in $RATES; do
                l="sp-$c-r$rate-s$seed"
                stage "$l" "$c" qwen3-32b --workload shared-prefix --rate "$rate" --seed "$seed" \
                    --groups 40 --requests "$(awk -v r="$rate" -v s="$STAGE" 'BEGIN { print int(r * s) }')"
                row "$l" "$c" shared-prefix "$rate" "$seed"
            done
        fi
        if [[ " $WORKLOADS " == *" azure-trace "* ]]; then
            for sc in $AZ_SCALES; do
                l="az-$c-x$sc-s$seed"
                stage "$l" "$c" llama-3.1-8b --workload azure-trace --trace "$TRACE" \
                    --time-scale "$sc" --requests "$AZ_REQ" --seed "$seed"
                row "$l" "$c" azure-trace "x$sc" "$seed"
            done
        fi
    done
done
echo "== aggregated vs P/D at ${BENCH_GPUS:-4} GPUs (${SPEED}x real time; ms of engine time; SLO TTFT <= 2 s, TPOT <= 100 ms)"
python3 - "$OUT/pd.csv" <<'PY'
import csv, sys, statistics as st
rows = list(csv.DictReader(open(sys.argv[1])))
keys = sorted({(r["workload"], r["load"], r["config"]) for r in rows})
cols = ["ttft_p50", "ttft_p90", "ttft_p99", "itl_p50", "itl_p90", "itl_p99", "tpot_p50", "goodput", "attainment", "attainment_strict"]
print("%-14s %-5s %-8s %s  seeds" % ("workload", "load", "config", " ".join("%9s" % c for c in cols)))
for k in keys:
    rs = [r for r in rows if (r["workload"], r["load"], r["config"]) == k]
    def mean(c):
        v = [float(r[c]) for r in rs if r[c]]
        return st.mean(v) if v else float("nan")
    print("%-14s %-5s %-8s %s  %d" % (k[0], k[1], k[2], " ".join("%9.3f" % mean(c) if c in ("goodput", "attainment", "attainment_strict") else "%9.1f" % mean(c) for c in cols), len(rs)))
PY
echo "pd.bench_seconds: $(($(date +%s) - t0)) s"
