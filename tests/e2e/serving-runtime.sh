#!/bin/bash
# tests/e2e/serving-runtime.sh: an InferenceService runs its ServingRuntime's container as KServe
# does (src/controller/isvc_runtime.c), in runc containers, with a real fatiad, kubectl and gateway:
#   1. a ServingRuntime naming fatia.dev/engine-sim:1 with its own command, args ({{.Name}} as the
#      served model name, --default-max-tokens 7) and port 9000: an InferenceService naming it
#      serves through the gateway as its own name with 7 tokens by default (the runtime's args,
#      not the built-in server's), the pool targets 9000;
#   2. an InferenceService choosing the runtime by modelFormat (autoSelect) and overriding args
#      (--default-max-tokens 5, appended after the runtime's as KServe concatenates) answers 5;
#   2b. an InferenceService of another namespace cannot use that ServingRuntime (by name:
#      RuntimeNotRecognized; by format: not chosen, the built-in engine-sim container);
#   3. a runtime naming an image that is not there (pull policy Never): the pod ErrImageNeverPull,
#      the InferenceService's PredictorReady False with that reason;
#   4. a runtime with a template fatia does not expand ({{.Spec}}): nothing deployed,
#      PredictorReady False InvalidRuntimeTemplate naming the field.
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
find_kubectl
[ "$(id -u)" = 0 ] || skip "the model servers run in containers: it needs root"
need_tools runc umoci skopeo busybox
PIDS=""
# on a failure too, the containers go before fatiad (which leaves them running when stopped)
trap 'if [ -n "$FATIAD_PID" ]; then "$k" delete isvc --all -A >/dev/null 2>&1
          for _ in $(seq 100); do [ -z "$("$k" get pods -A -o name 2>/dev/null)" ] && break; sleep 0.2; done; fi
      for p in $PIDS; do kill -9 $p 2>/dev/null; done
      if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID" 2>/dev/null; fi; rm -rf "$TMP"' EXIT
export HOME=$TMP/home
mkdir -p "$HOME"
chmod 711 "$TMP"
scripts/images/engine-sim "$TMP/es.tar" "$FATIA" >"$TMP/image.log" 2>&1 ||
    fail "scripts/images/engine-sim: $(cat "$TMP/image.log")"
"$FATIA" image load -d "$TMP/data" --name fatia.dev/engine-sim:1 "$TMP/es.tar" >/dev/null ||
    fail "image load"
FATIAD_RUNTIME=oci FATIAD_CONTROLLERS=1 start_fatiad "$TMP/data" || exit 1
export KUBECONFIG=$KCFG
k="$KUBECTL_DIR/kubectl.1.33"

wait_for() {
    local desc=$1
    shift
    for _ in $(seq 300); do
        "$@" && return 0
        sleep 0.2
    done
    fail "$desc (60 s): $("$k" get isvc,deploy,pods,inferencepool -n rt -o wide 2>&1 | head -20)"
    "$k" get isvc -n rt -o yaml >&2
    exit 1
}

cat >"$TMP/rt.yaml" <<'EOF'
apiVersion: v1
kind: Namespace
metadata: {name: rt}
---
apiVersion: serving.kserve.io/v1alpha1
kind: ServingRuntime
metadata: {name: sim, namespace: rt}
spec:
  supportedModelFormats: [{name: sim, autoSelect: true}]
  containers:
  - name: kserve-container
    image: fatia.dev/engine-sim:1
    command: [/usr/bin/fatia, engine-sim]
    args: [--listen, "0.0.0.0:9000", --served-model-name, "{{.Name}}", --default-max-tokens, "7"]
    ports: [{containerPort: 9000, protocol: TCP}]
    readinessProbe: {httpGet: {path: /health, port: 9000}, periodSeconds: 1}
---
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: alpha, namespace: rt}
spec: {predictor: {model: {modelFormat: {name: sim}, runtime: sim}}}
---
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: beta, namespace: rt}
spec: {predictor: {model: {modelFormat: {name: sim}, args: [--default-max-tokens, "5"]}}}
EOF
expect_rc 0 "$k" apply -f "$TMP/rt.yaml"
ready() { [ "$("$k" get isvc "$1" -n rt -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]; }
wait_for "alpha Ready" ready alpha
wait_for "beta Ready" ready beta
"$k" get deploy alpha-predictor -n rt -o json >"$TMP/d.json"
"$k" get inferencepool alpha -n rt -o json >"$TMP/p.json"
python3 - "$TMP/d.json" "$TMP/p.json" <<'EOF' || fail "alpha's Deployment or pool"
import json, sys
d = json.load(open(sys.argv[1]))
c = d["spec"]["template"]["spec"]["containers"][0]
assert c["image"] == "fatia.dev/engine-sim:1" and c["command"] == ["/usr/bin/fatia", "engine-sim"], c
assert c["args"] == ["--listen", "0.0.0.0:9000", "--served-model-name", "alpha", "--default-max-tokens", "7"], c
assert not any(e.get("name") == "POD_IP" for e in c.get("env", [])), c  # nothing of engine-sim's own spec
p = json.load(open(sys.argv[2]))
assert p["spec"]["targetPorts"] == [{"number": 9000}], p["spec"]
EOF

printf 'rt-key-0123456789abcdef rt\n' >"$TMP/keys"
"$FATIA" gateway --listen 127.0.0.1:0 --health-interval 50ms --metrics-interval 20ms \
    --all-inference-pools --api-keys "$TMP/keys" --kubeconfig "$KCFG" --port-file "$TMP/gw.port" \
    >"$TMP/gw.log" 2>&1 &
PIDS="$PIDS $!"
disown $!
for _ in $(seq 250); do [ -s "$TMP/gw.port" ] && break; sleep 0.02; done
G=$(cat "$TMP/gw.port")
# tokens MODEL N: a completion without max_tokens answers as MODEL with N tokens (the runtime's
# --default-max-tokens, or the InferenceService's override)
tokens() {
    curl -s -o "$TMP/c" -H "Authorization: Bearer rt-key-0123456789abcdef" \
        "localhost:$G/v1/completions" -d "{\"model\":\"$1\",\"prompt\":\"hello there\"}" 2>/dev/null &&
        python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["model"]==sys.argv[2] and r["usage"]["completion_tokens"]==int(sys.argv[3])' "$TMP/c" "$1" "$2" 2>/dev/null
}
wait_for "alpha through the gateway with the runtime's 7 tokens: $(cat "$TMP/c" 2>/dev/null)" tokens alpha 7
wait_for "beta (runtime by modelFormat) with its own args' 5 tokens: $(cat "$TMP/c" 2>/dev/null)" tokens beta 5

# 2b. another tenant's namespace cannot use rt's ServingRuntime: by name it does not exist there,
#     by format it is not chosen (the built-in engine-sim container instead)
cat >"$TMP/other.yaml" <<'EOF'
apiVersion: v1
kind: Namespace
metadata: {name: other}
---
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: byname, namespace: other}
spec: {predictor: {minReplicas: 0, model: {modelFormat: {name: sim}, runtime: sim}}}
---
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: byformat, namespace: other}
spec: {predictor: {minReplicas: 0, model: {modelFormat: {name: sim}}}}
EOF
expect_rc 0 "$k" apply -f "$TMP/other.yaml"
notrec() { [ "$("$k" get isvc byname -n other -o jsonpath='{.status.conditions[?(@.type=="PredictorReady")].reason}')" = RuntimeNotRecognized ]; }
wait_for "another namespace's InferenceService naming rt's runtime: RuntimeNotRecognized" notrec
builtin() { [ "$("$k" get deploy byformat-predictor -n other -o jsonpath='{.spec.template.spec.containers[0].command[1]}' 2>/dev/null)" = engine-sim ]; }
wait_for "another namespace's InferenceService by format: the built-in engine-sim" builtin
"$k" get deploy byname-predictor -n other >/dev/null 2>&1 && fail "a Deployment for another namespace's runtime"
expect_rc 0 "$k" delete isvc --all -n other

# 3. an image that is not there
cat >"$TMP/bad.yaml" <<'EOF'
apiVersion: serving.kserve.io/v1alpha1
kind: ServingRuntime
metadata: {name: absent, namespace: rt}
spec:
  supportedModelFormats: [{name: other}]
  containers: [{name: kserve-container, image: "fatia.dev/absent:1", imagePullPolicy: Never}]
---
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: gamma, namespace: rt}
spec: {predictor: {model: {modelFormat: {name: other}, runtime: absent}}}
---
apiVersion: serving.kserve.io/v1alpha1
kind: ServingRuntime
metadata: {name: badtmpl, namespace: rt}
spec:
  supportedModelFormats: [{name: other}]
  containers: [{name: kserve-container, image: "fatia.dev/engine-sim:1", args: ["--x={{.Spec}}"]}]
---
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: delta, namespace: rt}
spec: {predictor: {model: {modelFormat: {name: other}, runtime: badtmpl}}}
EOF
expect_rc 0 "$k" apply -f "$TMP/bad.yaml"
pred() { [ "$("$k" get isvc "$1" -n rt -o jsonpath='{.status.conditions[?(@.type=="PredictorReady")].status} {.status.conditions[?(@.type=="PredictorReady")].reason}')" = "False $2" ]; }
wait_for "gamma PredictorReady False ErrImageNeverPull" pred gamma ErrImageNeverPull
"$k" get pods -n rt -l serving.kserve.io/inferenceservice=gamma \
    -o jsonpath='{.items[0].status.containerStatuses[0].state.waiting.reason}' | grep -qx ErrImageNeverPull ||
    fail "gamma's pod is not ErrImageNeverPull"
wait_for "delta PredictorReady False InvalidRuntimeTemplate" pred delta InvalidRuntimeTemplate
"$k" get isvc delta -n rt -o jsonpath='{.status.conditions[?(@.type=="PredictorReady")].message}' |
    grep -q 'spec.containers\[0\].args\[0\]' || fail "delta's message does not name the field"
"$k" get deploy delta-predictor -n rt >/dev/null 2>&1 && fail "a Deployment for a bad template"

# the containers go with their InferenceServices (fatiad stopping leaves them running)
expect_rc 0 "$k" delete isvc --all -n rt
nopods() { [ -z "$("$k" get pods -n rt -o name 2>/dev/null)" ]; }
wait_for "the predictor pods deleted" nopods
stop_fatiad
finish
