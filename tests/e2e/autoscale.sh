#!/bin/bash
# tests/e2e/autoscale.sh: InferenceService autoscaling end to end (src/controller/isvc_scale.c,
# autoscale.c), with a real fatiad (controllers, node agent: the replicas are real
# `fatia engine-sim` processes), the real kubectl and short Knative windows:
#   1. load: 3 clients keep requests in flight against an InferenceService of scaleTarget 1,
#      minReplicas 1, maxReplicas 3: the Deployment rises to 3 ready replicas, an Event Scaled
#      names the metric (concurrency), its value and the target; status.autoscaling follows;
#   2. the load stops: back to 1 replica after the stable window (an Event says why);
#   2b. scaleMetric rps: a request rate above scaleTarget per replica scales up, the Event names
#      rps;
#   3. quota: with a ClusterQueue of 1 CPU and replicas of 600m, load asks for 2 replicas: the
#      second's Workload is pending (one admitted of two), the InferenceService says so
#      (ReplicasAdmitted False, PendingAdmission; autoscaling.pendingAdmission 1) and no second
#      replica runs; the quota grows: admitted;
#   4. scale to zero: minReplicas 0 and no load: the Deployment goes to 0 replicas (Event
#      ScaledToZero; the InferenceService Ready, reason ScaledToZero); a demand
#      (serving.fatia.io/demand, what the gateway writes) brings one replica back, and once the
#      demand is older than the window, zero again;
#   5. `fatia gateway --all-inference-pools --hold-timeout`: a request for the scaled-to-zero
#      model is held, the gateway writes the demand, a replica starts, the request is answered
#      (200); another tenant's key (--api-keys) gets 404 at once and wakes nothing; one whose
#      replica cannot be admitted (no quota) is 503 after the hold timeout; an unknown model is
#      404 at once.
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
find_kubectl
need_python3
LOADPID=""
GWPID=""
# the node agent keeps pods running across fatiad restarts: delete the replicas before fatiad
# goes, or their engine-sims outlive the test (and hold its ports)
cleanup() {
    [ -n "$LOADPID" ] && kill $LOADPID 2>/dev/null
    [ -n "$GWPID" ] && kill $GWPID 2>/dev/null
    if [ -n "$FATIAD_PID" ] && kill -0 "$FATIAD_PID" 2>/dev/null; then
        "$k" delete isvc --all -n scale --wait=false >/dev/null 2>&1
        for _ in $(seq 100); do
            [ -z "$("$k" get pods -n scale -o name 2>/dev/null)" ] && break
            sleep 0.2
        done
        kill -9 "$FATIAD_PID" 2>/dev/null
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT
export HOME=$TMP/home
mkdir -p "$HOME"
chmod 711 "$TMP" # pods run under a uid of their namespace (docs/agent.md)
FATIAD_CONTROLLERS=1 start_fatiad "$TMP/data" || exit 1
export KUBECONFIG=$KCFG
k="$KUBECTL_DIR/kubectl.1.33"

wait_for() {
    local desc=$1
    shift
    for _ in $(seq 300); do
        "$@" && return 0
        sleep 0.2
    done
    fail "$desc (60 s): $("$k" get isvc,deploy,pods,workloads -n scale 2>&1 | head -20)"
    "$k" get events -n scale 2>&1 | tail -20 >&2
    grep -i "autoscaler\|error" "$TMP/data.log" | tail -20 >&2
    exit 1
}
reps() { "$k" get deploy "$1-predictor" -n scale -o jsonpath='{.spec.replicas}/{.status.readyReplicas}'; }
is_reps() { [ "$(reps "$1")" = "$2" ]; }
zero_reps() { case "$(reps zero)" in 0/ | 0/0) return 0 ;; esac; return 1; }
# load PORT MODEL N: N clients, each keeping one completion in flight, until killed
load() {
    python3 - "$@" <<'PY' &
import json, sys, threading, urllib.request
port, model, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def client():
    while True:
        try:
            req = urllib.request.Request("http://127.0.0.1:%s/v1/completions" % port,
                data=json.dumps({"model": model, "prompt": "hello " * 50,
                                 "max_tokens": 300}).encode(),
                headers={"Content-Type": "application/json"})
            urllib.request.urlopen(req, timeout=60).read()
        except Exception:
            pass
for _ in range(n):
    threading.Thread(target=client, daemon=True).start()
threading.Event().wait()
PY
    LOADPID=$!
}
stop_load() {
    kill "$LOADPID" 2>/dev/null
    wait "$LOADPID" 2>/dev/null
    LOADPID=""
}
events() {
    "$k" get events -n scale --field-selector "involvedObject.name=$1,reason=$2" \
        -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' >"$TMP/ev" 2>&1
}

cat >"$TMP/a.yaml" <<'YAML'
apiVersion: v1
kind: Namespace
metadata: {name: scale}
---
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  name: auto
  namespace: scale
  annotations:
    serving.fatia.io/port: "28110"
    autoscaling.knative.dev/window: "6s"
    autoscaling.knative.dev/panic-window-percentage: "20"
    autoscaling.knative.dev/target-utilization-percentage: "100"
spec:
  predictor:
    minReplicas: 1
    maxReplicas: 3
    scaleMetric: concurrency
    scaleTarget: 1
    model:
      modelFormat: {name: vLLM}
YAML
expect_rc 0 "$k" apply -f "$TMP/a.yaml"
wait_for "auto: 1 ready replica" is_reps auto 1/1

# 1. load: up to maxReplicas
load 28110 auto 3
wait_for "auto: 3 ready replicas under load" is_reps auto 3/3
events auto Scaled
expect_line "$TMP/ev" "to 3 replicas: concurrency"
expect_line "$TMP/ev" "target 1 per replica at 100% utilization (bounds 1..3)"
expect_rc 0 "$k" get isvc auto -n scale -o jsonpath='{.status.autoscaling.desiredReplicas}'
[ "$(cat "$TMP/out")" = 3 ] || fail "status.autoscaling.desiredReplicas: $(cat "$TMP/out")"

# 2. no load: back to minReplicas after the stable window
stop_load
wait_for "auto: back to 1 replica without load" is_reps auto 1/1
events auto Scaled
expect_line "$TMP/ev" "to 1 replicas: concurrency"

# 2b. scaleMetric rps: 2 clients sending short completions back to back (tens of requests per
#     second) against scaleTarget 3 per replica: up to maxReplicas 2, the Event names rps
cat >"$TMP/r.yaml" <<'YAML'
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  name: rps
  namespace: scale
  annotations:
    serving.fatia.io/port: "28121"
    autoscaling.knative.dev/window: "6s"
    autoscaling.knative.dev/panic-window-percentage: "20"
    autoscaling.knative.dev/target-utilization-percentage: "100"
spec:
  predictor:
    minReplicas: 1
    maxReplicas: 2
    scaleMetric: rps
    scaleTarget: 3
    model:
      modelFormat: {name: vLLM}
YAML
expect_rc 0 "$k" apply -f "$TMP/r.yaml"
wait_for "rps: 1 ready replica" is_reps rps 1/1
python3 - 28121 <<'PY' &
import json, sys, threading, urllib.request
def client():
    while True:
        try:
            req = urllib.request.Request("http://127.0.0.1:%s/v1/completions" % sys.argv[1],
                data=json.dumps({"model": "rps", "prompt": "hi", "max_tokens": 1}).encode(),
                headers={"Content-Type": "application/json"})
            urllib.request.urlopen(req, timeout=60).read()
        except Exception:
            pass
for _ in range(2):
    threading.Thread(target=client, daemon=True).start()
threading.Event().wait()
PY
LOADPID=$!
wait_for "rps: 2 ready replicas under a request rate" is_reps rps 2/2
events rps Scaled
expect_line "$TMP/ev" "to 2 replicas: rps"
stop_load
expect_rc 0 "$k" delete isvc rps -n scale

# 3. a scale-up beyond the team's quota waits in Kueue
cat >"$TMP/q.yaml" <<'YAML'
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default-flavor}
spec: {}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: scale-cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-flavor
      resources: [{name: cpu, nominalQuota: 1}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: team-a, namespace: scale}
spec: {clusterQueue: scale-cq}
---
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  name: capped
  namespace: scale
  labels: {kueue.x-k8s.io/queue-name: team-a}
  annotations:
    serving.fatia.io/port: "28111"
    autoscaling.knative.dev/window: "6s"
    autoscaling.knative.dev/panic-window-percentage: "20"
    autoscaling.knative.dev/target-utilization-percentage: "100"
spec:
  predictor:
    minReplicas: 1
    maxReplicas: 2
    scaleTarget: 1
    model:
      modelFormat: {name: vLLM}
      resources: {requests: {cpu: 600m}}
YAML
expect_rc 0 "$k" apply -f "$TMP/q.yaml"
wait_for "capped: 1 ready replica" is_reps capped 1/1
load 28111 capped 3
wait_for "capped: the autoscaler asks for 2" is_reps capped 2/1
pending() { [ "$("$k" get isvc capped -n scale -o jsonpath='{.status.conditions[?(@.type=="ReplicasAdmitted")].reason}/{.status.autoscaling.pendingAdmission}')" = PendingAdmission/1 ]; }
wait_for "capped: the status says a replica waits for Kueue" pending
expect_rc 0 "$k" get isvc capped -n scale -o jsonpath='{.status.conditions[?(@.type=="ReplicasAdmitted")].message}'
expect_line "$TMP/out" "1 of 2 replicas wait for Kueue admission (queue team-a)"
expect_rc 0 "$k" get workloads -n scale -o json
python3 - "$TMP/out" <<'PY' || fail "workloads: $(cat "$TMP/out")"
import json, sys
ws = json.load(open(sys.argv[1]))["items"]
adm = [w for w in ws if any(c["type"] == "Admitted" and c["status"] == "True"
                            for c in w.get("status", {}).get("conditions", []))]
assert len(ws) == 2 and len(adm) == 1, [(w["metadata"]["name"], w.get("status")) for w in ws]
PY
sleep 2
is_reps capped 2/1 || fail "a replica beyond the quota runs: $(reps capped)"
expect_rc 0 "$k" patch clusterqueue scale-cq --type merge -p '{"spec":{"resourceGroups":[{"coveredResources":["cpu"],"flavors":[{"name":"default-flavor","resources":[{"name":"cpu","nominalQuota":2}]}]}]}}'
wait_for "capped: the second replica admitted once the quota grows" is_reps capped 2/2
admitted() { [ "$("$k" get isvc capped -n scale -o jsonpath='{.status.conditions[?(@.type=="ReplicasAdmitted")].status}')" = True ]; }
wait_for "capped: ReplicasAdmitted True" admitted
stop_load
expect_rc 0 "$k" delete isvc capped -n scale

# 4. scale to zero, and back on demand
cat >"$TMP/z.yaml" <<'YAML'
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  name: zero
  namespace: scale
  annotations:
    serving.fatia.io/port: "28112"
    autoscaling.knative.dev/window: "4s"
spec:
  predictor:
    minReplicas: 0
    maxReplicas: 2
    model:
      modelFormat: {name: vLLM}
YAML
expect_rc 0 "$k" apply -f "$TMP/z.yaml"
wait_for "zero: scaled to zero without load" zero_reps
zready() { [ "$("$k" get isvc zero -n scale -o jsonpath='{.status.conditions[?(@.type=="PredictorReady")].reason}/{.status.conditions[?(@.type=="Ready")].status}')" = ScaledToZero/True ]; }
wait_for "zero: Ready, scaled to zero" zready
events zero ScaledToZero
expect_line "$TMP/ev" "to 0 replicas: concurrency 0.00 over the 4s stable window"
expect_rc 0 "$k" annotate isvc zero -n scale "serving.fatia.io/demand=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
wait_for "zero: one replica on demand" is_reps zero 1/1
events zero ScaledFromZero
expect_line "$TMP/ev" "Scaled from 0 to 1 replicas: the gateway holds a request"
# the demand ages out: zero again
wait_for "zero: back to zero once the demand is older than the window" zero_reps

# 5. through the gateway: a request for zero is held, the gateway signals the demand, a replica
#    starts and the request is answered; one for an InferenceService whose replica cannot be
#    admitted (a ClusterQueue without quota) is 503 after the hold timeout; an unknown model is
#    404 at once
cat >"$TMP/s.yaml" <<'YAML'
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: empty-cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-flavor
      resources: [{name: cpu, nominalQuota: 0}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: starved, namespace: scale}
spec: {clusterQueue: empty-cq}
---
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  name: starved
  namespace: scale
  labels: {kueue.x-k8s.io/queue-name: starved}
  annotations:
    serving.fatia.io/port: "28113"
    autoscaling.knative.dev/window: "2s"
spec:
  predictor:
    minReplicas: 0
    maxReplicas: 1
    model:
      modelFormat: {name: vLLM}
      resources: {requests: {cpu: 600m}}
YAML
expect_rc 0 "$k" apply -f "$TMP/s.yaml"
KS=scale-key-0123456789abcdef
KO=other-key-0123456789abcdef
printf '%s scale\n%s other\n' "$KS" "$KO" >"$TMP/keys"
"$FATIA" gateway --listen 127.0.0.1:0 --health-interval 50ms --all-inference-pools \
    --api-keys "$TMP/keys" --hold-timeout 40s --kubeconfig "$KCFG" --port-file "$TMP/gw.port" \
    >"$TMP/gw.log" 2>&1 &
GWPID=$!
for _ in $(seq 250); do [ -s "$TMP/gw.port" ] && break; sleep 0.02; done
G=$(cat "$TMP/gw.port")
sleep 1 # the gateway's first poll of the pools
KEY=$KS
ask() {
    curl -s -o "$TMP/c" -w '%{http_code}' --max-time 60 -H "Authorization: Bearer $KEY" \
        "localhost:$G/v1/completions" \
        -d "{\"model\":\"$1\",\"prompt\":\"hello there\",\"max_tokens\":3}" 2>/dev/null
}
expect_rc 0 "$k" annotate isvc zero -n scale serving.fatia.io/demand-
wait_for "zero: at zero before the gateway's request" zero_reps
# another tenant cannot wake the model (nor tell it from a model that does not exist): 404 at
# once, no demand written
KEY=$KO
code=$(ask zero)
[ "$code" = 404 ] || fail "another tenant's request for zero: $code, want 404"
sleep 1.5
expect_rc 0 "$k" get isvc zero -n scale -o jsonpath='{.metadata.annotations.serving\.fatia\.io/demand}'
[ -s "$TMP/out" ] && fail "another tenant's request wrote a demand: $(cat "$TMP/out")"
zero_reps || fail "another tenant's request woke zero: $(reps zero)"
KEY=$KS
t0=$(date +%s)
code=$(ask zero)
[ "$code" = 200 ] || fail "a request for a scaled-to-zero model: $code $(cat "$TMP/c"); $(tail -5 "$TMP/gw.log")"
echo "scale from zero through the gateway: $code in $(($(date +%s) - t0)) s"
expect_rc 0 "$k" get isvc zero -n scale -o jsonpath='{.metadata.annotations.serving\.fatia\.io/demand}'
[ -s "$TMP/out" ] || fail "the gateway did not write the demand: $(tail -5 "$TMP/gw.log")"
events zero ScaledFromZero
[ "$(grep -c "the gateway holds a request" "$TMP/ev")" -ge 2 ] ||
    fail "no second ScaledFromZero Event: $(cat "$TMP/ev")"
code=$(ask nosuchmodel)
[ "$code" = 404 ] || fail "an unknown model: $code, want 404 at once"
curl -s -H "Authorization: Bearer $KS" "localhost:$G/metrics" >"$TMP/gm"
expect_line "$TMP/gm" "fatia_gateway_held_requests_total 1"
expect_line "$TMP/gm" "fatia_gateway_hold_timeouts_total 0"
kill "$GWPID"
wait "$GWPID" 2>/dev/null
starved_zero() { case "$(reps starved)" in 0/ | 0/0) return 0 ;; esac; return 1; }
wait_for "starved: at zero" starved_zero
KEY=
"$FATIA" gateway --listen 127.0.0.1:0 --health-interval 50ms --all-inference-pools \
    --hold-timeout 3s --kubeconfig "$KCFG" --port-file "$TMP/gw2.port" >"$TMP/gw2.log" 2>&1 &
GWPID=$!
for _ in $(seq 250); do [ -s "$TMP/gw2.port" ] && break; sleep 0.02; done
G=$(cat "$TMP/gw2.port")
sleep 1
t0=$(date +%s)
code=$(ask starved)
dt=$(($(date +%s) - t0))
[ "$code" = 503 ] || fail "a model whose replica waits for quota: $code, want 503"
grep -q "within the hold timeout" "$TMP/c" || fail "503 body: $(cat "$TMP/c")"
[ "$dt" -ge 2 ] && [ "$dt" -le 10 ] || fail "503 after $dt s, want about the 3 s hold timeout"
kill "$GWPID"
wait "$GWPID" 2>/dev/null
GWPID=""
expect_rc 0 "$k" delete isvc --all -n scale
nopods() { [ -z "$("$k" get pods -n scale -o name 2>/dev/null)" ]; }
wait_for "every replica gone with its InferenceService" nopods
stop_fatiad
finish
