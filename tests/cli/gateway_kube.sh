# tests/cli/gateway_kube.sh: a gateway pool that follows a GIE InferencePool through the
# Kubernetes API (gateway/kubepool.c), against tests/gateway/fake_kube_api.py: pods that become
# ready join, pods that stop being ready or are deleted leave, a watch that expires (410) is
# listed again, credentials come from a kubeconfig or flags, and a wrong token stops the start.
# Engine-sims play the pods on 127.0.0.2 and 127.0.0.3 (one port, as a pool's targetPort).
. "$(dirname "$0")/lib.bash"
PIDS=""
trap 'for p in $PIDS; do kill -9 $p 2>/dev/null; done; rm -rf "$TMP"' EXIT

wait_file() {
    for _ in $(seq 250); do
        [ -s "$1" ] && return 0
        sleep 0.02
    done
    fail "$1 never appeared"
}

bg() {
    "$@" &
    PIDS="$PIDS $!"
    disown $!
}

# wait_metric PORT LINE [absent]
wait_metric() {
    for _ in $(seq 400); do
        if curl -s "localhost:$1/metrics" | grep -qF -- "$2"; then
            [ "${3:-}" != absent ] && return 0
        else
            [ "${3:-}" = absent ] && return 0
        fi
        sleep 0.02
    done
    fail "gateway :$1: ${3:-present} never held for: $2"
}

bg "$FATIA" engine-sim --listen 127.0.0.2:0 --speed 50 --port-file "$TMP/a.port"
wait_file "$TMP/a.port"
P=$(cat "$TMP/a.port")
bg "$FATIA" engine-sim --listen "127.0.0.3:$P" --speed 50
bg python3 tests/gateway/fake_kube_api.py "$TMP/api.port" secret-token "$P"
wait_file "$TMP/api.port"
API=http://127.0.0.1:$(cat "$TMP/api.port")
curl -sf -X POST "$API/_test/pod" -d '{"name":"a","ip":"127.0.0.2","ready":true}' >/dev/null
cat >"$TMP/kubeconfig" <<EOF
apiVersion: v1
kind: Config
current-context: test
contexts:
- name: test
  context: {cluster: fake, user: tester}
clusters:
- name: fake
  cluster: {server: "$API"}
users:
- name: tester
  user: {token: secret-token}
EOF

OPTS="--health-interval 50ms --metrics-interval 20ms"
bg "$FATIA" gateway --listen 127.0.0.1:0 $OPTS --inference-pool ns/pool \
    --kubeconfig "$TMP/kubeconfig" --port-file "$TMP/gw.port"
wait_file "$TMP/gw.port"
G=$(cat "$TMP/gw.port")
A="endpoint=\"127.0.0.2:$P\""
B="endpoint=\"127.0.0.3:$P\""
wait_metric "$G" "fatia_gateway_endpoint_ready{$A} 1"
wait_metric "$G" "$B" absent
expect_rc 0 curl -sf -D "$TMP/h" "localhost:$G/v1/completions" \
    -d '{"model":"llama-3.1-8b","prompt":"hello","max_tokens":2}'
expect_line "$TMP/h" "x-gateway-destination-endpoint: 127.0.0.2:$P"

# a second pod becomes ready: it joins
curl -sf -X POST "$API/_test/pod" -d '{"name":"b","ip":"127.0.0.3","ready":true}' >/dev/null
wait_metric "$G" "fatia_gateway_endpoint_ready{$B} 1"
# a pod without the pool's labels never joins
curl -sf -X POST "$API/_test/pod" \
    -d '{"name":"c","ip":"127.0.0.4","ready":true,"labels":{"app":"other"}}' >/dev/null
# the watch expires: the gateway lists again and keeps following
curl -sf -X POST "$API/_test/expire" -d '{}' >/dev/null
sleep 0.2
curl -sf -X POST "$API/_test/pod" -d '{"name":"b","ip":"127.0.0.3","ready":false}' >/dev/null
wait_metric "$G" "$B" absent
wait_metric "$G" "fatia_gateway_endpoint_ready{$A} 1"
curl -s "localhost:$G/metrics" | grep -q "127.0.0.4" && fail "a pod outside the selector joined"
# the last pod is deleted: nothing is ready
curl -sf -X DELETE "$API/_test/pod/a" >/dev/null
wait_metric "$G" "$A" absent
[ "$(curl -s -o /dev/null -w '%{http_code}' "localhost:$G/health")" = 503 ] ||
    fail "/health must be 503 once the pool is empty"

# the pool from a manifest, credentials from flags
curl -sf -X POST "$API/_test/pod" -d '{"name":"b","ip":"127.0.0.3","ready":true}' >/dev/null
cat >"$TMP/pool.yaml" <<EOF
apiVersion: inference.networking.k8s.io/v1
kind: InferencePool
metadata: {name: pool, namespace: ns}
spec:
  selector: {matchLabels: {app: llm}}
  targetPorts: [{number: $P}]
EOF
bg "$FATIA" gateway --listen 127.0.0.1:0 $OPTS -f "$TMP/pool.yaml" --server "$API" \
    --token secret-token --port-file "$TMP/gw2.port"
wait_file "$TMP/gw2.port"
wait_metric "$(cat "$TMP/gw2.port")" "fatia_gateway_endpoint_ready{$B} 1"

# a wrong token, a missing pool, an invalid pool manifest: the gateway does not start
expect_rc 1 "$FATIA" gateway --listen 127.0.0.1:0 --inference-pool ns/pool --server "$API" \
    --token wrong
expect_line "$TMP/err" "HTTP 401"
expect_rc 1 "$FATIA" gateway --listen 127.0.0.1:0 --inference-pool ns/nope --server "$API" \
    --token secret-token
expect_line "$TMP/err" "inferencepool ns/nope: HTTP 404"
printf 'apiVersion: inference.networking.k8s.io/v1\nkind: InferencePool\nmetadata: {name: p}\nspec:\n  selector: {matchLabels: {app: x}}\n  targetPorts: []\n' >"$TMP/bad.yaml"
expect_rc 1 "$FATIA" gateway --listen 127.0.0.1:0 -f "$TMP/bad.yaml" --server "$API"
expect_line "$TMP/err" "spec.targetPorts"
finish
