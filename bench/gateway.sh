#!/bin/bash
# bench/gateway.sh BUILD_DIR: the gateway's benchmarks (make bench-gateway; docs/serving.md).
#
# 1. Routing quality: 8 engine-sims behind the gateway, run --speed times faster than real time
#    with their virtual clocks stamped into every streamed chunk (latencies are engine time, and a
#    loaded machine delays delivery without changing them), streaming 4 tokens a chunk with one
#    time per token (4 times fewer events for the 2 CPUs to carry, inter-token latency exact). For each policy (round-robin,
#    least-request, cache-aware, oracle) and each stage, fresh engines and a fresh gateway:
#      - llm-d's shared-prefix workload (150 groups x 5 prompts, 6,000-token system prompt,
#        1,200-token question, 1,000 output tokens, Poisson arrivals at rising rates), on
#        Qwen3-32B replicas (the model of llm-d's published runs) on whole H200s;
#      - the Azure LLM conversation trace (arrivals and lengths; shared prefixes synthesised),
#        on Llama-3.1-8B replicas, its clock compressed by rising factors.
# 2. Overhead: the gateway and nginx (nginx-light, bench/gateway/nginx-proxy.conf) as
#    round-robin proxies in front of the same minimal upstream (nginx returning a fixed
#    completion, nginx-upstream.conf), and the upstream directly; wrk at fixed rates (Poisson,
#    bench/gateway/paced.lua) and flat out, proxy pinned to CPU 0, wrk and upstream to CPU 1,
#    medians of several runs; then CPU time per request with 100k-token prompts.
#
# Output: tables for people and `name: value unit` lines; raw results in $BENCH_OUT
# (default BUILD_DIR/bench-gateway). Knobs (environment): BENCH_PART=routing|overhead|all,
# BENCH_SPEED (10), BENCH_RATES ("5 6 7 8 9"), BENCH_STAGE_SECONDS (60 engine seconds of
# arrivals per shared-prefix stage), BENCH_POLICIES, BENCH_AZURE_SPEED (4), BENCH_AZURE_SCALES
# ("20"), BENCH_AZURE_REQUESTS (1500), BENCH_REPS (3), BENCH_WRK_SECONDS (5),
# BENCH_FIXED_RATES ("1000 5000").
set -u
BUILD=${1:-build}
cmake --build "$BUILD" --target fatia >/dev/null || exit 1
F=$(cd "$BUILD/bin" && pwd)/fatia
SRC=$(cd "$(dirname "$0")/.." && pwd)
OUT=${BENCH_OUT:-$BUILD/bench-gateway}
PART=${BENCH_PART:-all}
SPEED=${BENCH_SPEED:-10}
RATES=${BENCH_RATES:-5 6 7 8 9}
STAGE=${BENCH_STAGE_SECONDS:-60}
AZ_SPEED=${BENCH_AZURE_SPEED:-4}
AZ_SCALES=${BENCH_AZURE_SCALES:-20}
AZ_REQ=${BENCH_AZURE_REQUESTS:-1500}
REPS=${BENCH_REPS:-3}
WRK_SECS=${BENCH_WRK_SECONDS:-5}
FIXED=${BENCH_FIXED_RATES:-1000 5000}
# BENCH_NICE=-10 runs the overhead part's proxies, upstream and wrk at a higher priority, so that
# other work on a shared machine preempts them less (their p99 is otherwise the scheduler's)
NICE=${BENCH_NICE:-0}
PRIO=""
[ "$NICE" != 0 ] && PRIO="nice -n $NICE"
# the shared data beside the checkout (../shared from the repository root; one more level up
# from a worktree under wt/)
TRACE=${BENCH_TRACE:-$SRC/../shared/data/azure-llm-2023/AzureLLMInferenceTrace_conv.csv}
[ -r "$TRACE" ] || TRACE=$SRC/../../shared/data/azure-llm-2023/AzureLLMInferenceTrace_conv.csv
# cache-aware is GIE's default profile (queue 2, KV 2, prefix 3); cache-aware+inflight adds the
# gateway's own in-flight count (weight 2), which sees load without the scrape's lag
POLICIES=${BENCH_POLICIES:-round-robin least-request cache-aware cache-aware+inflight oracle}
mkdir -p "$OUT"
TMP=$(mktemp -d /tmp/fatia-bench.XXXXXX)
PIDS=""
cleanup() {
    for p in $PIDS; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT

bg() { # bg NAME CMD...: start in the background, remember the pid
    local name=$1
    shift
    "$@" 2>>"$TMP/$name.log" &
    PIDS="$PIDS $!"
    eval "PID_$name=$!"
}

wait_port() {
    for _ in $(seq 300); do
        [ -s "$1" ] && return 0
        sleep 0.02
    done
    echo "bench: $1 never appeared" >&2
    return 1
}

stop_all() {
    for p in $PIDS; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    PIDS=""
}

# usec DURATION: wrk's "123.45us" / "1.23ms" / "2.00s" -> microseconds
usec() {
    awk -v v="$1" 'BEGIN {
        if (v ~ /us$/) { sub(/us$/, "", v); print v + 0 }
        else if (v ~ /ms$/) { sub(/ms$/, "", v); print v * 1000 }
        else if (v ~ /s$/) { sub(/s$/, "", v); print v * 1000000 }
        else print v + 0 }'
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }

# ---- 1. routing quality -------------------------------------------------------------------

# stage LABEL MODEL POLICY SPEED BENCH-ARGS...: fresh engines and gateway, one `fatia serve bench`
stage() {
    local label=$1 model=$2 policy=$3 speed=$4 weights=""
    shift 4
    local eps="" i
    if [ "$policy" = cache-aware+inflight ]; then
        policy=cache-aware
        weights="--weights queue=2,kv=2,prefix=3,inflight=2"
    fi
    for i in 1 2 3 4 5 6 7 8; do
        rm -f "$TMP/e$i.port"
        bg "e$i" "$F" engine-sim --listen 127.0.0.1:0 --port-file "$TMP/e$i.port" \
            --model "$model" --speed "$speed" --engine-timestamps --stream-interval 4
    done
    for i in 1 2 3 4 5 6 7 8; do
        wait_port "$TMP/e$i.port" || return 1
        eps="$eps${eps:+,}http://127.0.0.1:$(cat "$TMP/e$i.port")"
    done
    rm -f "$TMP/gw.port"
    # scrape 50 ms and staleness 2 s of engine time: divided by the speed-up
    bg gw "$F" gateway --listen 127.0.0.1:0 --port-file "$TMP/gw.port" --policy "$policy" \
        $weights --endpoints "$eps" --metrics-interval "$((50000 / speed))us" \
        --metrics-staleness "$((2000000 / speed))us" --health-interval 1s --seed 7
    wait_port "$TMP/gw.port" || return 1
    for _ in $(seq 100); do
        curl -s "127.0.0.1:$(cat "$TMP/gw.port")/metrics" |
            grep -c 'fatia_gateway_endpoint_ready{.*} 1' | grep -q '^8$' && break
        sleep 0.05
    done
    "$F" serve bench --url "http://127.0.0.1:$(cat "$TMP/gw.port")" --model "$model" \
        --speed "$speed" --engines "$eps" --label "$label" "$@" >"$OUT/$label.txt" 2>&1
    # what the gateway decided and what failed
    curl -s "127.0.0.1:$(cat "$TMP/gw.port")/metrics" | awk -v l="$label" '
        /^fatia_gateway_routing_decisions_total/ && $2 > 0 {
            r = $1; sub(/.*reason="/, "", r); sub(/".*/, "", r)
            printf "%s.decisions_%s: %d requests\n", l, r, $2 }
        /^fatia_gateway_errors_total/ { e += $2 }
        /^fatia_gateway_oracle_probe_failures_total/ { printf "%s.probe_failures: %d probes\n", l, $2 }
        END { printf "%s.gateway_errors: %d requests\n", l, e }' >>"$OUT/$label.txt"
    # how late the simulated engines delivered (engine seconds): fidelity of the run
    for i in 1 2 3 4 5 6 7 8; do
        curl -s "127.0.0.1:$(cat "$TMP/e$i.port")/metrics"
    done | awk -v l="$label" '
        /^fatia_engine_sim_step_lag_seconds_sum/ { s += $2 }
        /^fatia_engine_sim_step_lag_seconds_count/ { n += $2 }
        END { if (n) printf "%s.engine_step_lag_mean: %.2f ms\n", l, s / n * 1000 }' \
        >>"$OUT/$label.txt"
    stop_all
}

# metric LABEL NAME -> the value of "LABEL.NAME: value unit"
metric() { awk -v k="$1.$2:" '$1 == k { print $2; exit }' "$OUT/$1.txt" 2>/dev/null; }

routing() {
    echo "== routing quality: 8 engine-sims (${SPEED}x real time; the trace at ${AZ_SPEED}x), figures in engine time"
    "$F" engine-sim --model qwen3-32b --print-config >"$OUT/engine-qwen3-32b.json"
    "$F" engine-sim --print-config >"$OUT/engine-llama-3.1-8b.json"
    echo "engine-sim defaults (generated from docs/serving-calibration.json):"
    grep -E '"(kvCacheTokens|maxNumSeqs|maxNumBatchedTokens|flopsPerSecond|hbmBytesPerSecond|kvReadBytesPerSecond|stepOverheadSeconds|calibration)"' \
        "$OUT/engine-llama-3.1-8b.json" | sed 's/^ */  llama-3.1-8b /'
    grep -E '"(kvCacheTokens|maxNumSeqs)"' "$OUT/engine-qwen3-32b.json" | sed 's/^ */  qwen3-32b /'
    for rate in $RATES; do
        n=$(awk -v r="$rate" -v s="$STAGE" 'BEGIN { n = int(r * s); print (n > 750 ? 750 : n) }')
        for p in $POLICIES; do
            echo "  shared-prefix rate $rate, $p ($n requests)" >&2
            stage "sp.$p.r$rate" qwen3-32b "$p" "$SPEED" --workload shared-prefix \
                --rate "$rate" --requests "$n"
        done
    done
    if [ -r "$TRACE" ]; then
        for sc in $AZ_SCALES; do
            for p in $POLICIES; do
                echo "  azure conversation trace x$sc, $p" >&2
                stage "az.$p.x$sc" llama-3.1-8b "$p" "$AZ_SPEED" --workload azure-trace \
                    --trace "$TRACE" --time-scale "$sc" --requests "$AZ_REQ"
            done
        done
    else
        echo "bench: $TRACE not found: the trace run is skipped" >&2
    fi
    report_routing
}

report_routing() {
    local hdr="%-6s %-20s %9s %9s %9s %9s %8s %8s %9s %7s %6s %7s\n"
    echo
    echo "shared-prefix (Qwen3-32B x8 on H200s; ms of engine time; hit = engines' prefix cache)"
    printf "$hdr" rate policy arrived TTFT_p50 TTFT_p90 TTFT_p99 TPOT_p50 ITL_p90 E2EL_p90 tok/s hit lag_ms
    for rate in $RATES; do
        for p in $POLICIES; do
            l=sp.$p.r$rate
            printf "$hdr" "$rate" "$p" \
                "$(metric "$l" arrival_rate)" "$(metric "$l" ttft_p50)" "$(metric "$l" ttft_p90)" \
                "$(metric "$l" ttft_p99)" "$(metric "$l" tpot_p50)" "$(metric "$l" itl_p90)" \
                "$(metric "$l" e2el_p90)" "$(metric "$l" output_throughput | cut -d. -f1)" \
                "$(metric "$l" prefix_hit_ratio | cut -c1-5)" "$(metric "$l" engine_step_lag_mean)"
        done
    done
    if [ -r "$TRACE" ]; then
        echo
        echo "azure conversation trace (Llama-3.1-8B x8 on H200s, $AZ_REQ requests, clock compressed xN)"
        printf "$hdr" scale policy arrived TTFT_p50 TTFT_p90 TTFT_p99 TPOT_p50 ITL_p90 E2EL_p90 tok/s hit lag_ms
        for sc in $AZ_SCALES; do
            for p in $POLICIES; do
                l=az.$p.x$sc
                printf "$hdr" "x$sc" "$p" \
                    "$(metric "$l" arrival_rate)" "$(metric "$l" ttft_p50)" \
                    "$(metric "$l" ttft_p90)" "$(metric "$l" ttft_p99)" "$(metric "$l" tpot_p50)" \
                    "$(metric "$l" itl_p90)" "$(metric "$l" e2el_p90)" \
                    "$(metric "$l" output_throughput | cut -d. -f1)" \
                    "$(metric "$l" prefix_hit_ratio | cut -c1-5)" \
                    "$(metric "$l" engine_step_lag_mean)"
            done
        done
    fi
    echo
    # the highest rate cache-aware sustains: p90 TTFT within a 2 s SLO (engine time)
    best=""
    for rate in $RATES; do
        t=$(metric "sp.cache-aware.r$rate" ttft_p90)
        [ -n "$t" ] && awk -v t="$t" 'BEGIN { exit !(t <= 2000) }' && best=$rate
    done
    if [ -n "$best" ]; then
        rr=$(metric "sp.round-robin.r$best" ttft_p90)
        ca=$(metric "sp.cache-aware.r$best" ttft_p90)
        hca=$(metric "sp.cache-aware.r$best" prefix_hit_ratio)
        hor=$(metric "sp.oracle.r$best" prefix_hit_ratio)
        cai=$(metric "sp.cache-aware+inflight.r$best" ttft_p90)
        hcai=$(metric "sp.cache-aware+inflight.r$best" prefix_hit_ratio)
        awk -v a="$rr" -v b="$cai" 'BEGIN { if (b > 0) printf "shared_prefix.ttft_p90_rr_over_cache_aware_inflight: %.1f x\n", a / b }'
        awk -v a="$hcai" -v b="$hor" 'BEGIN { if (b > 0) printf "shared_prefix.hit_ratio_cache_aware_inflight_over_oracle: %.3f ratio\n", a / b }'
        echo "shared_prefix.sustainable_rate: $best req/s"
        awk -v a="$rr" -v b="$ca" 'BEGIN { printf "shared_prefix.ttft_p90_rr_over_cache_aware: %.1f x\n", a / b }'
        awk -v a="$hca" -v b="$hor" 'BEGIN { printf "shared_prefix.hit_ratio_cache_aware_over_oracle: %.3f ratio\n", a / b }'
    else
        echo "shared_prefix.sustainable_rate: none (cache-aware p90 TTFT over 2 s at every rate)"
    fi
    cat "$OUT"/sp.*.txt "$OUT"/az.*.txt 2>/dev/null | grep -E '\.(ttft_p90|prefix_hit_ratio|output_throughput|arrival_rate|tpot_p50): '
}

# ---- 2. overhead --------------------------------------------------------------------------

# wrk_run TARGET_PORT CONNECTIONS GAP_MS SCRIPT -> "rps p50us p99us"
wrk_run() {
    local port=$1 conns=$2 gap=$3 script=$4 out
    out=$(WRK_GAP_MS=$gap $PRIO taskset -c 1 wrk -t1 -c"$conns" -d"${WRK_SECS}s" --latency \
        -s "$SRC/bench/gateway/$script" "http://127.0.0.1:$port" 2>&1)
    echo "$out" >>"$OUT/wrk.log"
    rps=$(echo "$out" | awk '/^Requests\/sec:/ { print $2 }')
    p50=$(usec "$(echo "$out" | awk '$1 == "50%" { print $2 }')")
    p99=$(usec "$(echo "$out" | awk '$1 == "99%" { print $2 }')")
    errs=$(echo "$out" | awk '/Non-2xx|Socket errors/ { print }')
    [ -n "$errs" ] && echo "bench: $errs" >&2
    echo "$rps $p50 $p99"
}

# hist PORT: the gateway's added-latency buckets, "le count" per line (cumulative)
hist() {
    curl -s "127.0.0.1:$1/metrics" | awk '/^fatia_gateway_added_latency_seconds_bucket/ {
        le = $1; sub(/.*le="/, "", le); sub(/".*/, "", le); print le, $2 }'
}

# quantile BEFORE AFTER Q: from two snapshots, the Q quantile in us (linear within a bucket)
quantile() {
    paste "$1" "$2" | awk -v q="$3" '{ le[NR] = $1; c[NR] = $4 - $2 } END {
        n = c[NR]; if (!n) { print "nan"; exit }
        want = q * n; prev_le = 0; prev_c = 0
        for (i = 1; i <= NR; i++) {
            if (c[i] >= want) {
                hi = (le[i] == "+Inf") ? prev_le : le[i]
                f = (c[i] > prev_c) ? (want - prev_c) / (c[i] - prev_c) : 1
                printf "%.0f\n", (prev_le + f * (hi - prev_le)) * 1000000; exit }
            prev_le = le[i]; prev_c = c[i] } }'
}

cpu_of() { awk '{ printf "%.0f\n", ($14 + $15) * 1000000 / 100 }' "/proc/$1/stat"; }

overhead() {
    local up1=19401 up2=19402 px=19410 gwp=19420 sys
    echo "== overhead: gateway vs nginx vs direct (proxy on CPU 0, wrk and upstream on CPU 1)"
    for f in nginx-upstream nginx-proxy; do
        sed -e "s|@DIR@|$TMP|g; s|@UP1@|$up1|g; s|@UP2@|$up2|g; s|@PORT@|$px|g" \
            "$SRC/bench/gateway/$f.conf" >"$TMP/$f.conf"
    done
    mkdir -p "$TMP/proxy-body" "$TMP/proxy-temp" "$TMP/upstream-body"
    bg up $PRIO taskset -c 1 nginx -c "$TMP/nginx-upstream.conf" -p "$TMP" -g 'daemon off;'
    bg px $PRIO taskset -c 0 nginx -c "$TMP/nginx-proxy.conf" -p "$TMP" -g 'daemon off;'
    bg gw $PRIO taskset -c 0 "$F" gateway --listen "127.0.0.1:$gwp" --policy round-robin \
        --endpoints "http://127.0.0.1:$up1,http://127.0.0.1:$up2" --health-interval 1s
    sleep 1.5
    for t in $up1 $px $gwp; do
        curl -sf "127.0.0.1:$t/v1/completions" -d '{}' >/dev/null ||
            { echo "bench: nothing answers on port $t" >&2; return 1; }
    done
    sys=$(uptime | sed 's/.*load average: //')
    echo "load average before: $sys (2 CPUs, shared); nice $NICE"
    : >"$OUT/overhead.tsv"
    for rep in $(seq "$REPS"); do
        for name in direct nginx gateway; do
            port=$up1
            [ $name = nginx ] && port=$px
            [ $name = gateway ] && port=$gwp
            for rate in $FIXED; do
                # 20 connections, each Poisson with mean gap 20000/rate ms
                gap=$(awk -v r="$rate" 'BEGIN { printf "%.3f", 20 * 1000 / r }')
                [ $name = gateway ] && hist $gwp >"$TMP/h0"
                echo "$name fixed$rate $(wrk_run $port 20 "$gap" paced.lua)" >>"$OUT/overhead.tsv"
                if [ $name = gateway ]; then
                    hist $gwp >"$TMP/h1"
                    echo "fixed$rate $(quantile "$TMP/h0" "$TMP/h1" 0.5)" \
                        "$(quantile "$TMP/h0" "$TMP/h1" 0.99)" >>"$TMP/internal"
                fi
            done
            echo "$name max $(wrk_run $port 64 0 paced.lua)" >>"$OUT/overhead.tsv"
        done
    done
    echo
    printf "%-9s %-10s %11s %9s %9s %11s %11s\n" target load req/s p50_us p99_us added_p50 added_p99
    for load in $(for r in $FIXED; do echo "fixed$r"; done) max; do
        for name in direct nginx gateway; do
            rps=$(awk -v n=$name -v l=$load '$1 == n && $2 == l { print $3 }' "$OUT/overhead.tsv" | median)
            p50=$(awk -v n=$name -v l=$load '$1 == n && $2 == l { print $4 }' "$OUT/overhead.tsv" | median)
            p99=$(awk -v n=$name -v l=$load '$1 == n && $2 == l { print $5 }' "$OUT/overhead.tsv" | median)
            eval "R_${name}_$load=$rps P50_${name}_$load=$p50 P99_${name}_$load=$p99"
            d50=$(awk -v a="$p50" -v b="$(eval echo \$P50_direct_$load)" 'BEGIN { printf "%.0f", a - b }')
            d99=$(awk -v a="$p99" -v b="$(eval echo \$P99_direct_$load)" 'BEGIN { printf "%.0f", a - b }')
            printf "%-9s %-10s %11.0f %9.0f %9.0f %11s %11s\n" $name $load "$rps" "$p50" "$p99" \
                "$d50" "$d99"
            echo "overhead.$name.$load.rps: $rps req/s" >>"$OUT/overhead.lines"
            echo "overhead.$name.$load.added_p50: $d50 us" >>"$OUT/overhead.lines"
            echo "overhead.$name.$load.added_p99: $d99 us" >>"$OUT/overhead.lines"
        done
    done
    # spread of the repetitions: how noisy the shared machine was
    awk '{ k = $1 "." $2; n[k]++; s[k] += $3; ss[k] += $3 * $3 }
         END { for (k in n) if (n[k] > 1) { m = s[k] / n[k]; v = ss[k] / n[k] - m * m;
               printf "overhead.spread.%s: %.1f %% (rps, stddev/mean over %d runs)\n",
               k, (v > 0 ? sqrt(v) : 0) / m * 100, n[k] } }' \
        "$OUT/overhead.tsv" | sort >>"$OUT/overhead.lines"
    # the gateway's own time per request (its histogram), free of the machine's scheduling
    for rate in $FIXED; do
        a=$(awk -v l="fixed$rate" '$1 == l { print $2 }' "$TMP/internal" | median)
        b=$(awk -v l="fixed$rate" '$1 == l { print $3 }' "$TMP/internal" | median)
        echo "overhead.gateway.fixed$rate.own_time_p50: $a us" >>"$OUT/overhead.lines"
        echo "overhead.gateway.fixed$rate.own_time_p99: $b us" >>"$OUT/overhead.lines"
    done
    awk -v g="$R_gateway_max" -v n="$R_nginx_max" \
        'BEGIN { printf "overhead.max_throughput_gateway_over_nginx: %.2f ratio\n", g / n }' \
        >>"$OUT/overhead.lines"
    # CPU per request with 100k-token prompts (400 KB bodies), cache-aware hashing on
    stop_all
    bg up $PRIO taskset -c 1 nginx -c "$TMP/nginx-upstream.conf" -p "$TMP" -g 'daemon off;'
    bg px $PRIO taskset -c 0 nginx -c "$TMP/nginx-proxy.conf" -p "$TMP" -g 'daemon off;'
    bg gw $PRIO taskset -c 0 "$F" gateway --listen "127.0.0.1:$gwp" --policy cache-aware \
        --endpoints "http://127.0.0.1:$up1,http://127.0.0.1:$up2" --health-interval 1s
    sleep 1.5
    for name in gateway nginx; do
        port=$gwp
        pid=$PID_gw
        if [ $name = nginx ]; then
            port=$px
            pid=$(pgrep -P "$PID_px" | head -1) # the worker
        fi
        for rep in $(seq "$REPS"); do
            c0=$(cpu_of "$pid")
            res=$(wrk_run $port 4 40 bigprompt.lua)
            c1=$(cpu_of "$pid")
            n=$(echo "$res" | awk -v s="$WRK_SECS" '{ printf "%.0f", $1 * s }')
            awk -v c=$((c1 - c0)) -v n="$n" 'BEGIN { if (n > 0) printf "%.1f\n", c / n }' \
                >>"$TMP/cpu.$name"
        done
        v=$(median <"$TMP/cpu.$name")
        echo "overhead.cpu_per_100k_token_request.$name: $v us" >>"$OUT/overhead.lines"
    done
    stop_all
    echo "load average after: $(uptime | sed 's/.*load average: //')"
    cat "$OUT/overhead.lines"
    rm -f "$OUT/overhead.lines"
}

[ "$PART" = all ] || [ "$PART" = routing ] && routing
[ "$PART" = all ] || [ "$PART" = overhead ] && overhead
echo "bench.wall_time: $SECONDS s"
exit 0
