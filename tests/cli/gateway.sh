# tests/cli/gateway.sh: the gateway in front of engine-sims and a byte-exact fake upstream
# (tests/gateway/fake_upstream.py): streamed answers relayed intact and chunk by chunk, an
# endpoint failing mid-stream, health removal and return, 503 and 429, slow clients and slow
# upstreams, keep-alive and pipelining, /v1/models merging, bad requests and request smuggling.
# Everything listens on ephemeral loopback ports; engine-sims run 50 times faster than real time.
. "$(dirname "$0")/lib.bash"
PIDS=""
trap 'for p in $PIDS; do kill -9 $p 2>/dev/null; done; rm -rf "$TMP"' EXIT

# start NAME CMD...: runs CMD in the background with --port-file, waits for its port.
start() {
    name=$1
    shift
    rm -f "$TMP/$name.port"
    "$@" --port-file "$TMP/$name.port" 2>"$TMP/$name.log" &
    eval "PID_$name=$!"
    PIDS="$PIDS $!"
    disown $!
    for _ in $(seq 200); do
        [ -s "$TMP/$name.port" ] && break
        sleep 0.02
    done
    eval "PORT_$name=$(cat "$TMP/$name.port")"
}

# wait_metric PORT LINE: polls the gateway's /metrics until it has LINE (10 s at most: CI machines
# can be loaded).
wait_metric() {
    for _ in $(seq 500); do
        curl -s "localhost:$1/metrics" | grep -qF -- "$2" && return 0
        sleep 0.02
    done
    fail "gateway :$1 never reported: $2"
}

SIM="$FATIA engine-sim --listen 127.0.0.1:0 --speed 50 --gpu h200"
start a $SIM
start b $SIM
python3 tests/gateway/fake_upstream.py "$TMP/fake.port" &
PIDS="$PIDS $!"
disown $!
for _ in $(seq 200); do [ -s "$TMP/fake.port" ] && break; sleep 0.02; done
PORT_fake=$(cat "$TMP/fake.port")
GW_OPTS="--health-interval 50ms --metrics-interval 20ms --connect-timeout 500ms"
start gw $FATIA gateway --listen 127.0.0.1:0 $GW_OPTS --seed 1 \
    --endpoints "http://127.0.0.1:$PORT_a#name=a,http://127.0.0.1:$PORT_b#name=b"
GW=localhost:$PORT_gw
# both say where they listen, with the port bound
expect_line "$TMP/a.log" "fatia engine-sim: listening on http://127.0.0.1:$PORT_a (model llama-3.1-8b"
expect_line "$TMP/gw.log" "fatia gateway: listening on http://127.0.0.1:$PORT_gw (policy"
wait_metric "$PORT_gw" "fatia_gateway_endpoint_ready{endpoint=\"127.0.0.1:$PORT_b\"} 1"
wait_metric "$PORT_gw" "fatia_gateway_endpoint_ready{endpoint=\"127.0.0.1:$PORT_a\"} 1"

# --- answers and headers
PROMPT=$(printf 'system prompt shared by a group of requests, long enough for blocks. %.0s' $(seq 8))
BODY="{\"model\":\"llama-3.1-8b\",\"prompt\":\"$PROMPT\",\"max_tokens\":4}"
expect_rc 0 curl -sf -D "$TMP/h" "$GW/v1/completions" -d "$BODY"
expect_line "$TMP/out" '"completion_tokens":4'
expect_line "$TMP/h" "x-gateway-destination-endpoint: 127.0.0.1:"
first=$(grep -i x-gateway-destination "$TMP/h" | tr -d '\r' | cut -d' ' -f2)
# the same prefix sticks to the same endpoint (prefix affinity)
for i in 1 2 3 4 5; do
    curl -sf -D "$TMP/h" -o /dev/null "$GW/v1/completions" -d "$BODY"
    got=$(grep -i x-gateway-destination "$TMP/h" | tr -d '\r' | cut -d' ' -f2)
    [ "$got" = "$first" ] || fail "request $i went to $got, not $first"
done
curl -s "$GW/metrics" >"$TMP/m"
expect_line "$TMP/m" 'fatia_gateway_routing_decisions_total{reason="prefix"}'
grep -q 'fatia_gateway_prefix_hit_ratio 0\.[6-9]' "$TMP/m" || fail "prefix hit ratio too low"
# streaming through the gateway: SSE events, [DONE]
expect_rc 0 curl -sfN "$GW/v1/chat/completions" \
    -d '{"model":"llama-3.1-8b","messages":[{"role":"user","content":"hi"}],"max_tokens":7,"stream":true}'
[ "$(grep -c '^data: {' "$TMP/out")" = 7 ] || fail "expected 7 streamed chunks"
expect_line "$TMP/out" "data: [DONE]"
# /v1/models is merged (both engines serve one model: listed once); /health
expect_rc 0 curl -sf "$GW/v1/models"
[ "$(grep -o '"id":"llama-3.1-8b"' "$TMP/out" | wc -l)" = 1 ] || fail "/v1/models not merged"
expect_rc 0 curl -sf "$GW/health"
# keep-alive to the client: two requests, one connection
curl -sv "$GW/health" "$GW/health" >/dev/null 2>"$TMP/v"
expect_line "$TMP/v" "Re-using existing connection"
# pipelining (RFC 9112 §9.3.2): three requests in one write, three answers in order
python3 tests/cli/http_pipeline.py 127.0.0.1 "$PORT_gw" llama-3.1-8b >"$TMP/pipe" 2>&1 ||
    fail "gateway: pipelined requests not all answered: $(cat "$TMP/pipe")"
python3 tests/cli/http_pipeline.py 127.0.0.1 "$PORT_a" llama-3.1-8b >"$TMP/pipe" 2>&1 ||
    fail "engine-sim: pipelined requests not all answered: $(cat "$TMP/pipe")"
# bad requests
expect_rc 22 curl -sf "$GW/v1/completions" -d '{"model": "x", "prompt": "unterminated}'
curl -s "$GW/v1/completions" -d '{"model":' >"$TMP/out"
expect_line "$TMP/out" '"code":400'
curl -s "$GW/v1/completions" -H 'Transfer-Encoding: chunked' -d '{}' >"$TMP/out"
expect_line "$TMP/out" '"code":411'
# request smuggling (RFC 9112, the module fatiad shares): refused, nothing smuggled is served
python3 tests/cli/http_smuggle.py "http://$GW" /v1/completions >"$TMP/smuggle" 2>&1 ||
    fail "a smuggling attack on the gateway was not refused: $(grep FAIL "$TMP/smuggle")"

# --- a static pool file: labels, a selector, scheduling settings; errors name file:line
cat >"$TMP/pool.yaml" <<EOF
endpoints:
  - url: http://127.0.0.1:$PORT_a
    labels: {zone: a}
  - url: http://127.0.0.1:$PORT_b
    labels: {zone: b}
selector: zone=b
scheduling:
  policy: least-request
  weights: {queue: 1, kvCache: 1, prefix: 5}
health: {interval: 50ms, timeout: 1s, failureThreshold: 2}
metrics: {interval: 20ms, staleness: 1s}
EOF
start pf $FATIA gateway --listen 127.0.0.1:0 -f "$TMP/pool.yaml"
wait_metric "$PORT_pf" "fatia_gateway_endpoint_ready{endpoint=\"127.0.0.1:$PORT_b\"} 1"
for i in 1 2 3; do
    curl -sf -D "$TMP/h" -o /dev/null "localhost:$PORT_pf/v1/completions" -d "$BODY"
    expect_line "$TMP/h" "x-gateway-destination-endpoint: 127.0.0.1:$PORT_b"
done
curl -s "localhost:$PORT_pf/metrics" >"$TMP/m"
expect_line "$TMP/m" 'fatia_gateway_routing_decisions_total{reason="only_candidate"} 3'
printf 'endpoints:\n  - url: http://x:1\nscheduling:\n  policy: fastest\n  weights: {speed: 1}\n' \
    >"$TMP/bad.yaml"
expect_rc 1 "$FATIA" gateway --listen 127.0.0.1:0 -f "$TMP/bad.yaml"
expect_line "$TMP/err" "bad.yaml:4:11: error: scheduling.policy: expected cache-aware"
expect_line "$TMP/err" "bad.yaml:5:20: error: scheduling.weights.speed: unknown scorer"

# --- the benchmark client: a small shared-prefix run and a trace run, against the gateway
ENGS="http://127.0.0.1:$PORT_a,http://127.0.0.1:$PORT_b"
expect_rc 0 "$FATIA" serve bench --url "http://$GW" --speed 50 --engines "$ENGS" --rate 20 \
    --groups 4 --prompts-per-group 5 --system-tokens 200 --question-tokens 20 \
    --output-tokens 5 --label t
expect_line "$TMP/out" "t.completed: 20 requests"
expect_line "$TMP/out" "t.failed: 0 requests"
awk '$1 == "t.prefix_hit_ratio:" { exit !($2 > 0.3) }' "$TMP/out" ||
    fail "cache-aware routing of 4 groups x 5 prompts should hit the prefix cache"
grep -q '^t.ttft_p90: [0-9]' "$TMP/out" || fail "no TTFT percentiles"
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n%s\n%s\n%s\n%s\n' \
    '2023-11-16 18:15:46.6805900,374,4' '2023-11-16 18:15:46.9951690,396,3' \
    '2023-11-16 18:15:47.2224670,879,5' '2023-11-16 18:15:47.3910170,91,2' >"$TMP/trace.csv"
expect_rc 0 "$FATIA" serve bench --url "http://$GW" --speed 50 --workload azure-trace \
    --trace "$TMP/trace.csv" --tenants 2 --label z
expect_line "$TMP/out" "z.completed: 4 requests"
expect_line "$TMP/out" "z.output_tokens: 14 tokens"
# engine timestamps and a stream interval: every token counted, latencies from the stamps
start st $FATIA engine-sim --listen 127.0.0.1:0 --speed 50 --engine-timestamps --stream-interval 4
expect_rc 0 "$FATIA" serve bench --url "http://127.0.0.1:$PORT_st" --speed 50 --rate 50 \
    --groups 2 --prompts-per-group 3 --system-tokens 100 --question-tokens 10 \
    --output-tokens 9 --label s
expect_line "$TMP/out" "s.output_tokens: 54 tokens"
# decode steps of one 8B sequence on an H200 take 6.4 ms of engine time (the calibration)
awk '$1 == "s.itl_p50:" { exit !($2 > 6 && $2 < 8) }' "$TMP/out" ||
    fail "inter-token latency from the engine's stamps should be one decode step, ~6.4 ms"

# --- a model server fails mid-stream: the client sees the truncation, the endpoint leaves
SUB="x-gateway-destination-endpoint-subset: 127.0.0.1:$PORT_a"
LONG='{"model":"llama-3.1-8b","prompt":"tell me a long story","max_tokens":4000,"stream":true}'
curl -sN -H "$SUB" "$GW/v1/completions" -d "$LONG" >"$TMP/partial" 2>/dev/null &
CURL=$!
for _ in $(seq 250); do
    grep -q '^data: {' "$TMP/partial" 2>/dev/null && break
    sleep 0.02
done
kill -9 "$PID_a"
wait $CURL
rc=$?
[ "$rc" != 0 ] || fail "a stream cut mid-way must not look complete to the client"
grep -q '^data: {' "$TMP/partial" || fail "no partial data before the failure"
grep -q 'DONE' "$TMP/partial" && fail "a cut stream must not end with [DONE]"
# ... and its last event is an error event OpenAI clients raise, naming the model server
tail -c 600 "$TMP/partial" | grep -q "^data: {\"error\":{\"object\":\"error\",\"message\":\"the model server 127.0.0.1:$PORT_a cut the stream" ||
    fail "a cut stream must end with an SSE error event naming the model server: $(tail -c 300 "$TMP/partial")"
wait_metric "$PORT_gw" "fatia_gateway_endpoint_ready{endpoint=\"127.0.0.1:$PORT_a\"} 0"
wait_metric "$PORT_gw" 'fatia_gateway_errors_total{reason="upstream_partial"} 1'
# traffic goes to b only; pinned to a it is 503
for i in 1 2 3; do
    curl -sf -D "$TMP/h" -o /dev/null "$GW/v1/completions" -d "$BODY"
    expect_line "$TMP/h" "x-gateway-destination-endpoint: 127.0.0.1:$PORT_b"
done
expect_rc 0 curl -s -H "$SUB" "$GW/v1/completions" -d "$BODY"
expect_line "$TMP/out" '"code":503'
# a returns on the same port and is taken back after a health check
$SIM --listen "127.0.0.1:$PORT_a" 2>>"$TMP/a.log" &
PID_a=$!
PIDS="$PIDS $PID_a"
disown $!
wait_metric "$PORT_gw" "fatia_gateway_endpoint_ready{endpoint=\"127.0.0.1:$PORT_a\"} 1"
expect_rc 0 curl -sf -H "$SUB" -D "$TMP/h" "$GW/v1/completions" -d "$BODY"
expect_line "$TMP/h" "x-gateway-destination-endpoint: 127.0.0.1:$PORT_a"

# --- no endpoint at all: 503 everywhere
start dead $FATIA gateway --listen 127.0.0.1:0 $GW_OPTS --endpoints "http://127.0.0.1:1"
sleep 0.2
curl -s "localhost:$PORT_dead/v1/completions" -d "$BODY" >"$TMP/out"
expect_line "$TMP/out" '"code":503'
expect_line "$TMP/out" "no model server is ready"
[ "$(curl -s -o /dev/null -w '%{http_code}' "localhost:$PORT_dead/health")" = 503 ] ||
    fail "/health must be 503 without a ready endpoint"

# --- 429: every endpoint queues beyond the limit (engine-sim with one sequence slot)
start slow $FATIA engine-sim --listen 127.0.0.1:0 --speed 1 --max-num-seqs 1
start q $FATIA gateway --listen 127.0.0.1:0 $GW_OPTS --queue-limit 1 \
    --endpoints "http://127.0.0.1:$PORT_slow"
wait_metric "$PORT_q" "fatia_gateway_endpoint_ready{endpoint=\"127.0.0.1:$PORT_slow\"} 1"
for i in 1 2 3 4; do
    curl -s -o /dev/null "localhost:$PORT_q/v1/completions" \
        -d '{"model":"llama-3.1-8b","prompt":"x","max_tokens":2000}' &
    PIDS="$PIDS $!"
    disown $!
done
# the gateway sees the queue (2 or 3 waiting: the last of the four may already be refused)
for _ in $(seq 500); do
    curl -s "localhost:$PORT_q/metrics" |
        awk '/^fatia_gateway_endpoint_waiting/ && $2 >= 2 { f = 1 } END { exit !f }' && break
    sleep 0.02
done
curl -s "localhost:$PORT_q/v1/completions" -d "$BODY" >"$TMP/out"
expect_line "$TMP/out" '"code":429'
kill -9 "$PID_slow"

# --- byte-exact relay, slow upstreams, slow clients, upstream dying (fake upstream)
start f $FATIA gateway --listen 127.0.0.1:0 $GW_OPTS --policy round-robin \
    --endpoints "http://127.0.0.1:$PORT_fake"
wait_metric "$PORT_f" "fatia_gateway_endpoint_ready{endpoint=\"127.0.0.1:$PORT_fake\"} 1"
curl -s --raw "localhost:$PORT_fake/v1/completions?n=300" -d '{}' >"$TMP/direct"
curl -s --raw "localhost:$PORT_f/v1/completions?n=300" -d '{}' >"$TMP/proxied"
cmp -s "$TMP/direct" "$TMP/proxied" || fail "the chunked SSE stream was not relayed byte for byte"
[ "$(stat -c %s "$TMP/direct")" -gt 10000 ] || fail "the direct stream is too short to prove much"
# chunk by chunk: the first event arrives long before the slow stream ends
curl -s -N -o "$TMP/slow" -w '%{time_starttransfer} %{time_total}\n' \
    "localhost:$PORT_f/v1/completions?mode=slow" -d '{}' >"$TMP/t"
read -r first total <"$TMP/t"
awk -v f="$first" -v t="$total" 'BEGIN { exit !(t - f >= 0.35 && t >= 0.45) }' ||
    fail "slow upstream: first byte at ${first}s, total ${total}s: the stream was buffered"
expect_line "$TMP/slow" "data: [DONE]"
# a slow client gets a 2 MiB answer intact (backpressure, bounded buffers)
curl -s --limit-rate 4M "localhost:$PORT_f/v1/completions?mode=big" -d '{}' | md5sum >"$TMP/m1"
curl -s "localhost:$PORT_fake/v1/completions?mode=big" -d '{}' | md5sum >"$TMP/m2"
cmp -s "$TMP/m1" "$TMP/m2" || fail "the big answer to a slow client was not intact"
# the upstream dies mid-chunk: the client sees an incomplete chunked stream
curl -s -N "localhost:$PORT_f/v1/completions?mode=die" -d '{}' >"$TMP/out" 2>/dev/null
rc=$?
[ "$rc" = 18 ] || [ "$rc" = 56 ] || fail "a dying upstream gave curl exit $rc, want 18 or 56"
expect_line "$TMP/out" 'data: {"i":4'
# an upstream whose chunked framing has bare LFs (RFC 9112 §7.1): nothing of it is relayed
wait_metric "$PORT_f" "fatia_gateway_endpoint_ready{endpoint=\"127.0.0.1:$PORT_fake\"} 1"
curl -s -N "localhost:$PORT_f/v1/completions?mode=barelf" -d '{}' >"$TMP/out" 2>/dev/null
rc=$?
[ "$rc" != 0 ] || fail "an answer framed with bare LFs must not look complete"
grep -q SMUGGLED "$TMP/out" && fail "bytes framed with bare LFs were relayed"
# connections reset before any answer (what a draining replica's closed listener does to those
# in its accept queue; in the process mode the replicas of a model share one endpoint): tried
# again on fresh connections to the same endpoint, the answer arrives whole
wait_metric "$PORT_f" "fatia_gateway_endpoint_ready{endpoint=\"127.0.0.1:$PORT_fake\"} 1"
code=$(curl -s -N -o "$TMP/out" -w '%{http_code}' "localhost:$PORT_f/v1/completions?mode=reset2" -d '{}')
[ "$code" = 200 ] || fail "a request whose connection was reset twice got $code: $(head -c 300 "$TMP/out")"
expect_line "$TMP/out" "data: [DONE]"
# first-byte timeout: a model server that never answers gets 504 naming it, not "no model
# server is ready" (and the request is not replayed elsewhere)
start ft $FATIA gateway --listen 127.0.0.1:0 $GW_OPTS --upstream-timeout 300ms \
    --endpoints "http://127.0.0.1:$PORT_fake"
wait_metric "$PORT_ft" "fatia_gateway_endpoint_ready{endpoint=\"127.0.0.1:$PORT_fake\"} 1"
code=$(curl -s -o "$TMP/out" -w '%{http_code}' "localhost:$PORT_ft/v1/completions?mode=hang" -d '{}')
[ "$code" = 504 ] || fail "a model server that never answers: HTTP $code, want 504"
expect_line "$TMP/out" "the model server 127.0.0.1:$PORT_fake sent no response within 0.3s (--upstream-timeout)"
wait_metric "$PORT_ft" 'fatia_gateway_errors_total{reason="upstream_timeout"} 1'
# the timeouts are on by default
"$FATIA" gateway --help >"$TMP/help" 2>&1
expect_line "$TMP/help" "--upstream-timeout D        request sent to response head (default 5m; then 504)"
finish
