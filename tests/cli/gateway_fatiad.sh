# tests/cli/gateway_fatiad.sh: the gateway follows an InferencePool served by a real fatiad
# (TLS, the admin kubeconfig fatiad writes: server, CA data, bearer token). Pods are created
# through the API and made Ready through their status subresource, as a node agent would;
# engine-sims play them on 127.0.0.2 and 127.0.0.3.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
PIDS=""
trap 'for p in $PIDS; do kill -9 $p 2>/dev/null; done
      if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID" 2>/dev/null; fi; rm -rf "$TMP"' EXIT

bg() {
    "$@" &
    PIDS="$PIDS $!"
    disown $!
}

wait_file() {
    for _ in $(seq 250); do
        [ -s "$1" ] && return 0
        sleep 0.02
    done
    fail "$1 never appeared"
}

# wait_metric PORT LINE [absent]
wait_metric() {
    for _ in $(seq 400); do
        if curl -s "localhost:$1/metrics" | grep -qF -- "$2"; then
            [ "${3:-}" != absent ] && return 0
        else
            [ "${3:-}" = absent ] && return 0
        fi
        sleep 0.025
    done
    fail "gateway :$1: ${3:-present} never held for: $2"
}

bg "$FATIA" engine-sim --listen 127.0.0.2:0 --speed 50 --port-file "$TMP/a.port"
wait_file "$TMP/a.port"
P=$(cat "$TMP/a.port")
bg "$FATIA" engine-sim --listen "127.0.0.3:$P" --speed 50

cat >"$TMP/pool.yaml" <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: serving}
---
apiVersion: inference.networking.k8s.io/v1
kind: InferencePool
metadata: {name: llama, namespace: serving}
spec:
  selector: {matchLabels: {app: llama}}
  targetPorts: [{number: $P}]
  endpointPickerRef: {name: fatia-gateway, port: {number: 9002}}
EOF
mkdir -p "$TMP/d"
start_fatiad "$TMP/d" -f "$TMP/pool.yaml" || exit 1

# pod NAME IP READY: creates the pod if needed and sets its status
pod() {
    api POST /api/v1/namespaces/serving/pods -H 'Content-Type: application/json' -d \
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"$1\",\"labels\":{\"app\":\"llama\"}},\"spec\":{\"containers\":[{\"name\":\"vllm\",\"image\":\"vllm\"}]}}"
    [ "$CODE" = 201 ] || [ "$CODE" = 409 ] || fail "create pod $1: HTTP $CODE: $(cat "$TMP/body")"
    api PATCH "/api/v1/namespaces/serving/pods/$1/status" \
        -H 'Content-Type: application/merge-patch+json' -d \
        "{\"status\":{\"podIP\":\"$2\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"$3\"}]}}"
    [ "$CODE" = 200 ] || fail "status of pod $1: HTTP $CODE: $(cat "$TMP/body")"
}

pod a 127.0.0.2 True
bg "$FATIA" gateway --listen 127.0.0.1:0 --health-interval 50ms --metrics-interval 20ms \
    --inference-pool serving/llama --kubeconfig "$KCFG" --port-file "$TMP/gw.port"
wait_file "$TMP/gw.port"
G=$(cat "$TMP/gw.port")
A="endpoint=\"127.0.0.2:$P\""
B="endpoint=\"127.0.0.3:$P\""
wait_metric "$G" "fatia_gateway_endpoint_ready{$A} 1"
expect_rc 0 curl -sf -D "$TMP/h" "localhost:$G/v1/completions" \
    -d '{"model":"llama-3.1-8b","prompt":"hello","max_tokens":2}'
expect_line "$TMP/h" "x-gateway-destination-endpoint: 127.0.0.2:$P"
pod b 127.0.0.3 True
wait_metric "$G" "fatia_gateway_endpoint_ready{$B} 1"
pod a 127.0.0.2 False
wait_metric "$G" "$A" absent
api DELETE /api/v1/namespaces/serving/pods/b
wait_metric "$G" "$B" absent
[ "$(curl -s -o /dev/null -w '%{http_code}' "localhost:$G/health")" = 503 ] ||
    fail "/health must be 503 once the pool is empty"
for p in $PIDS; do kill $p 2>/dev/null; done
stop_fatiad
finish
