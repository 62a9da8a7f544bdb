#!/bin/bash
# tests/e2e/serving.sh: a KServe InferenceService end to end (src/controller/inferenceservice.c,
# src/model/kinds/kserve.c), with a real fatiad (controllers and node agent: the model servers are
# real `fatia engine-sim` processes) and the real kubectl:
#   1. bad InferenceServices are refused naming the field (maxReplicas < minReplicas, a framework
#      shortcut without predictor.model, an unknown scaleMetric), and nothing is stored;
#   2. one `kubectl apply -f examples/serving/llama-isvc.yaml`: the Deployment llama-predictor
#      (engine-sim, the served model name, --reuse-port, the hf:// shape), the InferencePool
#      llama, the InferenceService READY True with status.url and modelStatus as KServe's;
#   3. one `fatia gateway --all-inference-pools --api-keys` for every pool: a completion with
#      "model": "llama"; a hostile tenant's InferenceService in another namespace cannot be
#      reached with the first tenant's key (404, as an unknown model), nor the first's with its
#      key; unknown models are 404 naming them; a hostile InferenceService on the first's port
#      neither shares the port nor takes the address; a deleted InferenceService leaves the
#      gateway;
#   3b. prefill/decode disaggregation: an LLMInferenceService with spec.prefill, each workload with
#      its own replica count and hardware profile, reachable through the same gateway via a
#      prefill pod and a decode pod;
#   4. spec.predictor.minReplicas 1 -> 2: two Ready pods, the Deployment follows, the gateway
#      still answers; back to 1;
#   4b. scale-down under load: 12 long completions while minReplicas goes 2 -> 1, none lost (the
#      removed replica drains);
#   4c. (containers) the autoscaler reads each replica at its pod address: load at one replica's
#      address scales 1 -> 2;
#   5. through Kueue: the queue label and hardware-profile annotation reach the pods (the
#      profile's default CPU is injected into them); with a
#      ClusterQueue of 1 CPU one replica of 600m is admitted and the second waits (Workloads: one
#      admitted of two, the InferenceService not Ready), admitted once the quota grows;
#   5b. predictor.model.runtime as KServe checks it: missing (RuntimeNotRecognized) or disabled
#      (RuntimeDisabled) deploys nothing; a ClusterServingRuntime that serves the format does;
#   6. delete: Deployment, pods and pool go.
# SERVING_RUNTIME: the agent's runtime, process (default: the model servers are host processes on
# 127.0.0.1, replicas sharing a port) or oci (e2e_serving_containers: runc containers from the
# image fatia.dev/engine-sim:1, scripts/images/engine-sim, each replica on its own address of the
# namespace's bridge, reached there by the gateway and, for P/D, by the decode pod).
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
find_kubectl
RT=${SERVING_RUNTIME:-process}
if [ "$RT" = oci ]; then
    [ "$(id -u)" = 0 ] || skip "the model servers run in containers: it needs root"
    need_tools runc umoci skopeo busybox
fi
PIDS=""
trap 'for p in $PIDS; do kill -9 $p 2>/dev/null; done
      if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID" 2>/dev/null; fi; rm -rf "$TMP"' EXIT
export HOME=$TMP/home
mkdir -p "$HOME"
chmod 711 "$TMP" # pods run under a uid of their namespace (docs/agent.md)
if [ "$RT" = oci ]; then
    # the image from this build's fatia, into the node's store before fatiad starts
    scripts/images/engine-sim "$TMP/es.tar" "$FATIA" >"$TMP/image.log" 2>&1 ||
        fail "scripts/images/engine-sim: $(cat "$TMP/image.log")"
    "$FATIA" image load -d "$TMP/data" --name fatia.dev/engine-sim:1 "$TMP/es.tar" >/dev/null ||
        fail "image load"
fi
FATIAD_RUNTIME=$RT FATIAD_CONTROLLERS=1 start_fatiad "$TMP/data" || exit 1
export KUBECONFIG=$KCFG
k="$KUBECTL_DIR/kubectl.1.33"
EX=examples/serving/llama-isvc.yaml

wait_for() {
    local desc=$1
    shift
    for _ in $(seq 300); do
        "$@" && return 0
        sleep 0.2
    done
    fail "$desc (60 s): $("$k" get isvc,deploy,pods,inferencepool -n serving 2>&1 | head -20)"
    grep -i "error\|warn" "$TMP/data.log" | tail -20 >&2
    exit 1
}

# 1. refusals
echo '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"serving"}}' >"$TMP/ns.json"
expect_rc 0 "$k" apply -f "$TMP/ns.json"
bad() {
    cat >"$TMP/bad.yaml"
    expect_rc 1 "$k" apply -f "$TMP/bad.yaml"
    expect_line "$TMP/err" "$1"
}
bad "MaxReplicas cannot be less than MinReplicas" <<'EOF'
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: bad, namespace: serving}
spec: {predictor: {minReplicas: 3, maxReplicas: 2, model: {modelFormat: {name: vLLM}}}}
EOF
bad "spec.predictor.sklearn" <<'EOF'
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: bad, namespace: serving}
spec: {predictor: {sklearn: {storageUri: "gs://x"}}}
EOF
bad "spec.predictor.scaleMetric" <<'EOF'
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: bad, namespace: serving}
spec: {predictor: {scaleMetric: gpu, model: {modelFormat: {name: vLLM}}}}
EOF
bad "spec.predictor.model.modelFormat.name" <<'EOF'
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: bad, namespace: serving}
spec: {predictor: {model: {modelFormat: {}}}}
EOF
expect_rc 0 "$k" get isvc -n serving -o name
[ -s "$TMP/out" ] && fail "a refused InferenceService was stored: $(cat "$TMP/out")"

# 2. one apply
expect_rc 0 "$k" apply -f "$EX"
ready() { [ "$("$k" get isvc llama -n serving -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]; }
wait_for "InferenceService llama Ready" ready
expect_rc 0 "$k" get isvc llama -n serving
tr -s ' ' <"$TMP/out" | grep -q "^llama http://llama.serving.svc.cluster.local True" ||
    fail "isvc columns: $(cat "$TMP/out")"
expect_rc 0 "$k" get isvc llama -n serving -o json
python3 - "$TMP/out" <<'EOF' || fail "isvc status: $(cat "$TMP/out")"
import json, sys
s = json.load(open(sys.argv[1]))["status"]
conds = {c["type"]: c["status"] for c in s["conditions"]}
# llama is autoscaled (maxReplicas 4): ReplicasAdmitted too (tests/e2e/autoscale.sh)
assert conds == {"PredictorReady": "True", "Ready": "True", "ReplicasAdmitted": "True"}, conds
m = s["modelStatus"]
assert m["transitionStatus"] == "UpToDate", m
assert m["states"] == {"activeModelState": "Loaded", "targetModelState": "Loaded"}, m
assert m["copies"]["totalCopies"] == 1, m
assert s["address"]["url"] == s["url"]
EOF
expect_rc 0 "$k" get deploy llama-predictor -n serving -o json
python3 - "$TMP/out" <<'EOF' || fail "deployment: $(cat "$TMP/out")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["metadata"]["ownerReferences"][0]["kind"] == "InferenceService"
ctr = d["spec"]["template"]["spec"]["containers"][0]
c = ctr["command"]
assert ctr["image"] == "fatia.dev/engine-sim:1", ctr
# one spec for both runtimes: fatia through PATH (fatiad's directory first, then the image's
# /usr/bin), the address from the downward API (127.0.0.1 for processes, the bridge's in a container)
env = {e["name"]: e for e in ctr["env"]}
assert env["POD_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP", env
assert env["PATH"]["value"].endswith(":/usr/local/bin:/usr/bin:/bin"), env
assert c[0] == "fatia" and c[1] == "engine-sim", c
for a, b in [("--listen", "$(POD_IP):28080"), ("--served-model-name", "llama"),
             ("--model", "meta-llama/Llama-3.1-8B-Instruct"), ("--speed", "50")]:
    assert c[c.index(a) + 1] == b, (a, c)
assert "--reuse-port" in c
EOF
expect_rc 0 "$k" get inferencepool llama -n serving -o jsonpath='{.spec.selector.matchLabels.serving\.kserve\.io/inferenceservice} {.spec.targetPorts[0].number}'
[ "$(cat "$TMP/out")" = "llama 28080" ] || fail "pool: $(cat "$TMP/out")"

# 3. one gateway for every pool, keys per tenant (tenant = namespace): completions routed by
#    "model"; a hostile tenant's InferenceService in another namespace is out of reach of the
#    first tenant's key and the other way round; an unknown model is 404 naming it
cat >"$TMP/hostile.yaml" <<'EOF'
apiVersion: v1
kind: Namespace
metadata: {name: hostile}
---
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: evil, namespace: hostile}
spec: {predictor: {model: {modelFormat: {name: vLLM}, args: ["--speed", "50"]}}}
EOF
expect_rc 0 "$k" apply -f "$TMP/hostile.yaml"
KA=serving-key-0123456789abcdef
KB=hostile-key-0123456789abcdef
printf '%s serving\n%s hostile\n' "$KA" "$KB" >"$TMP/keys"
"$FATIA" gateway --listen 127.0.0.1:0 --health-interval 50ms --metrics-interval 20ms \
    --all-inference-pools --api-keys "$TMP/keys" --kubeconfig "$KCFG" --port-file "$TMP/gw.port" \
    >"$TMP/gw.log" 2>&1 &
PIDS="$PIDS $!"
disown $!
for _ in $(seq 250); do [ -s "$TMP/gw.port" ] && break; sleep 0.02; done
G=$(cat "$TMP/gw.port")
# ask KEY MODEL: HTTP status into $TMP/code, body into $TMP/c
ask() {
    curl -s -o "$TMP/c" -w '%{http_code}' -H "Authorization: Bearer $1" "localhost:$G/v1/completions" \
        -d "{\"model\":\"$2\",\"prompt\":\"hello there\",\"max_tokens\":3}" >"$TMP/code" 2>/dev/null
}
complete() {
    ask "$KA" llama && [ "$(cat "$TMP/code")" = 200 ] &&
        python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["model"]=="llama" and r["choices"][0]["text"]' "$TMP/c" 2>/dev/null
}
wait_for "a completion through the gateway" complete
echo "completion through the gateway: $(cat "$TMP/c")"
evil_ready() { ask "$KB" evil && [ "$(cat "$TMP/code")" = 200 ]; }
wait_for "the hostile tenant's own model" evil_ready
expect_code() { # WANT KEY MODEL [TEXT]
    ask "$2" "$3"
    [ "$(cat "$TMP/code")" = "$1" ] || fail "key $2, model $3: HTTP $(cat "$TMP/code"), want $1: $(cat "$TMP/c")"
    [ -z "${4:-}" ] || grep -qF -- "$4" "$TMP/c" || fail "key $2, model $3: body lacks $4: $(cat "$TMP/c")"
}
expect_code 404 "$KA" serving/llama 'The model `serving/llama` does not exist.'
expect_code 404 "$KA" evil 'The model `evil` does not exist.'
expect_code 404 "$KA" hostile/evil 'The model `hostile/evil` does not exist.'
expect_code 404 "$KB" llama 'The model `llama` does not exist.'
expect_code 404 "$KB" serving/llama
expect_code 404 "$KA" nope 'The model `nope` does not exist.'
expect_code 401 wrong-key-0123456789abcdef llama
# /v1/models lists a tenant's own models only
models() { curl -s -H "Authorization: Bearer $1" "localhost:$G/v1/models" |
    python3 -c 'import json,sys; print(" ".join(sorted(m["id"] for m in json.load(sys.stdin)["data"])))'; }
[ "$(models "$KA")" = llama ] || fail "models of tenant serving: $(models "$KA")"
[ "$(models "$KB")" = evil ] || fail "models of tenant hostile: $(models "$KB")"
# the hostile tenant aims an InferenceService at the first tenant's port: its replica cannot
# share the port (SO_REUSEPORT needs the same uid; each namespace's pods run under their own), its
# pool gets no address of the older pool, and the first tenant's model keeps answering
cat >"$TMP/thief.yaml" <<'EOF'
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: thief, namespace: hostile, annotations: {serving.fatia.io/port: "28080"}}
spec: {predictor: {model: {modelFormat: {name: vLLM}, args: ["--speed", "50"]}}}
EOF
expect_rc 0 "$k" apply -f "$TMP/thief.yaml"
lip=$("$k" get pods -n serving -l serving.kserve.io/inferenceservice=llama -o jsonpath='{.items[0].status.podIP}')
if [ "$RT" = oci ]; then
    # in containers the thief's replica has an address of its own on its namespace's bridge: it
    # answers as itself, from a pod that is not the first tenant's
    thief_up() { ask "$KB" thief && [ "$(cat "$TMP/code")" = 200 ]; }
    wait_for "the thief's own replica" thief_up
    tip=$("$k" get pods -n hostile -l serving.kserve.io/inferenceservice=thief -o jsonpath='{.items[0].status.podIP}')
    [ -n "$tip" ] && [ "$tip" != "$lip" ] || fail "the thief's replica at '$tip', the first tenant's at '$lip'"
else
    sleep 3
fi
for _ in 1 2 3 4 5 6; do
    ask "$KB" thief
    if [ "$RT" = oci ]; then
        grep -q '"model":"thief"' "$TMP/c" || fail "the thief answered as another model: $(cat "$TMP/c")"
    else
        [ "$(cat "$TMP/code")" != 200 ] || fail "the hostile tenant reached a model server on the first tenant's port: $(cat "$TMP/c")"
    fi
    complete || fail "the first tenant's model stopped answering: HTTP $(cat "$TMP/code") $(cat "$TMP/c")"
done
expect_rc 0 "$k" delete isvc thief -n hostile
if [ "$RT" = oci ]; then
    # the hostile tenant's own model server (busybox's nc in the image) aims at the first
    # tenant's replica on the other namespace's bridge, past the gateway and its keys: dropped
    # (agent/cni.c); its own replica's address answers the same request (so the drop is real)
    epod=$("$k" get pods -n hostile -l serving.kserve.io/inferenceservice=evil -o jsonpath='{.items[0].metadata.name}')
    eip=$("$k" get pods -n hostile -l serving.kserve.io/inferenceservice=evil -o jsonpath='{.items[0].status.podIP}')
    eport=$("$k" get inferencepool evil -n hostile -o jsonpath='{.spec.targetPorts[0].number}')
    [ -n "$lip" ] && [ -n "$eip" ] && [ "$lip" != "$eip" ] || fail "pod addresses: '$lip' '$eip'"
    get_from_evil() { "$k" exec -n hostile "$epod" -- sh -c \
        "printf 'GET /v1/models HTTP/1.0\r\n\r\n' | nc -w 3 $1 $2"; }
    expect_rc 0 get_from_evil "$eip" "$eport"
    grep -q '"id"' "$TMP/out" || fail "the hostile pod cannot reach its own replica: $(cat "$TMP/out" "$TMP/err")"
    get_from_evil "$lip" 28080 >"$TMP/out" 2>&1
    grep -q '"id"' "$TMP/out" && fail "the hostile tenant's pod read the first tenant's model server: $(cat "$TMP/out")"
fi

expect_rc 0 "$k" delete isvc evil -n hostile
evil_gone() { ask "$KB" evil && [ "$(cat "$TMP/code")" = 404 ]; }
wait_for "the hostile model leaves the gateway with its InferenceService" evil_gone

# 3b. prefill/decode disaggregation: one LLMInferenceService (examples/serving/llm-pd.yaml, each
#     workload with a hardware profile of its own) gives the Deployments llama-pd-kserve (decode)
#     and llama-pd-kserve-prefill (2 replicas), the pool llama-pd-inference-pool with both ports,
#     Ready as KServe's; a long prompt through the same gateway goes prefill -> KV pull ->
#     decode; refused specs store nothing
bad "replicas and scaling are mutually exclusive" <<'EOF'
apiVersion: serving.kserve.io/v1alpha1
kind: LLMInferenceService
metadata: {name: bad, namespace: serving}
spec: {model: {uri: "hf://x/y"}, replicas: 1, scaling: {maxReplicas: 2}}
EOF
bad "spec.model.uri" <<'EOF'
apiVersion: serving.kserve.io/v1alpha1
kind: LLMInferenceService
metadata: {name: bad, namespace: serving}
spec: {model: {name: x}}
EOF
expect_rc 0 "$k" get llmisvc -n serving -o name
[ -s "$TMP/out" ] && fail "a refused LLMInferenceService was stored: $(cat "$TMP/out")"
cat >"$TMP/pdprof.yaml" <<'EOF'
apiVersion: infrastructure.opendatahub.io/v1
kind: HardwareProfile
metadata: {name: prefill-profile, namespace: serving}
spec:
  identifiers:
  - {displayName: CPU, identifier: cpu, resourceType: CPU, minCount: 100m, defaultCount: 300m, maxCount: 1}
---
apiVersion: infrastructure.opendatahub.io/v1
kind: HardwareProfile
metadata: {name: decode-profile, namespace: serving}
spec:
  identifiers:
  - {displayName: CPU, identifier: cpu, resourceType: CPU, minCount: 100m, defaultCount: 200m, maxCount: 1}
EOF
expect_rc 0 "$k" apply -f "$TMP/pdprof.yaml"
python3 - examples/serving/llm-pd.yaml "$TMP/pd.yaml" <<'EOF'
import sys
s = open(sys.argv[1]).read()
s = s.replace("  # annotations: {opendatahub.io/hardware-profile-name: <decode profile>}   (to the decode pods)",
              "  annotations: {opendatahub.io/hardware-profile-name: decode-profile}")
s = s.replace("    # annotations: {opendatahub.io/hardware-profile-name: <prefill profile>}",
              "    annotations: {opendatahub.io/hardware-profile-name: prefill-profile}")
assert s.count("-profile}") == 2
# the example has a namespace of its own; here it runs in the tenant "serving" of the gateway
s = s.replace("apiVersion: v1\nkind: Namespace\nmetadata: {name: serving-pd}\n---\n", "")
s = s.replace("namespace: serving-pd", "namespace: serving")
assert "serving-pd" not in s
open(sys.argv[2], "w").write(s)
EOF
expect_rc 0 "$k" apply -f "$TMP/pd.yaml"
pdready() { [ "$("$k" get llmisvc llama-pd -n serving -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]; }
wait_for "LLMInferenceService llama-pd Ready" pdready
expect_rc 0 "$k" get llmisvc llama-pd -n serving
tr -s ' ' <"$TMP/out" | grep -q "^llama-pd http://llama-pd.serving.svc.cluster.local True Ready" ||
    fail "llmisvc columns: $(cat "$TMP/out")"
expect_rc 0 "$k" get deploy,pods,inferencepool -n serving -l app.kubernetes.io/name=llama-pd -o json
python3 - "$TMP/out" <<'EOF' || fail "P/D objects: $(head -c 3000 "$TMP/out")"
import json, sys
items = json.load(open(sys.argv[1]))["items"]
deps = {o["metadata"]["name"]: o for o in items if o["kind"] == "Deployment"}
assert set(deps) == {"llama-pd-kserve", "llama-pd-kserve-prefill"}, set(deps)
assert deps["llama-pd-kserve"]["spec"]["replicas"] == 1
assert deps["llama-pd-kserve-prefill"]["spec"]["replicas"] == 2
pods = [o for o in items if o["kind"] == "Pod"]
roles = sorted(p["metadata"]["labels"]["llm-d.ai/role"] for p in pods)
assert roles == ["decode", "prefill", "prefill"], roles
for p in pods:
    c = p["spec"]["containers"][0]
    role = p["metadata"]["labels"]["llm-d.ai/role"]
    cmd = c["command"]
    assert cmd[cmd.index("--role") + 1] == role, cmd
    assert cmd[cmd.index("--served-model-name") + 1] == "llama-pd", cmd
    port = "28100" if role == "decode" else "28101"
    assert cmd[cmd.index("--listen") + 1] == "$(POD_IP):" + port, cmd
    assert p["metadata"]["annotations"]["serving.fatia.io/port"] == port
    # each workload's own hardware profile: its CPU injected
    want = {"decode": "200m", "prefill": "300m"}[role]
    assert c["resources"]["requests"]["cpu"] == want, (role, c["resources"])
pool = [o for o in items if o["kind"] == "InferencePool"]
assert len(pool) == 1 and pool[0]["metadata"]["name"] == "llama-pd-inference-pool", pool
assert [t["number"] for t in pool[0]["spec"]["targetPorts"]] == [28100, 28101], pool[0]["spec"]
EOF
LONG=$(printf 'a document for the disaggregated model, never seen before, part %04d. ' $(seq 150))
pd_complete() {
    curl -s -o "$TMP/c" -w '%{http_code}' -H "Authorization: Bearer $KA" "localhost:$G/v1/completions" \
        -d "{\"model\":\"llama-pd\",\"prompt\":\"$LONG\",\"max_tokens\":3}" >"$TMP/code" 2>/dev/null
    [ "$(cat "$TMP/code")" = 200 ]
}
wait_for "a completion of llama-pd through the gateway" pd_complete
# pod_ips ROLE: the Ready llama-pd pods' addresses of that role
pod_ips() { "$k" get pods -n serving -l "app.kubernetes.io/name=llama-pd,llm-d.ai/role=$1" \
    -o jsonpath='{range .items[*]}{.status.podIP}{"\n"}{end}'; }
pips=$(pod_ips prefill | sort -u)
dip=$(pod_ips decode | head -1)
if [ "$RT" = oci ]; then
    # each replica its own address on the namespace's bridge (not the host's), the decode pod
    # reached the prefill pod there (x-prefiller-host-port carried a pod address)
    [ "$(echo "$pips" | grep -c '^10\.')" = 2 ] && [ "${dip#10.}" != "$dip" ] ||
        fail "P/D pods not on the bridge: prefill '$pips', decode '$dip'"
    legs=$(for ip in $pips; do curl -s "$ip:28101/metrics"; done |
        awk '$1 == "fatia_engine_sim_prefill_legs_total" {m += $2} END {print m + 0}')
else
    # the two prefill replicas share port 28101 (SO_REUSEPORT): each scrape reaches one of them
    legs=$(for _ in $(seq 12); do curl -s localhost:28101/metrics; done |
        awk '$1 == "fatia_engine_sim_prefill_legs_total" && $2 > m {m = $2} END {print m + 0}')
fi
curl -s "${dip:-127.0.0.1}:28100/metrics" >"$TMP/dm"
pulls=$(awk '$1 == "fatia_engine_sim_kv_transfers_total" {print $2}' "$TMP/dm")
fallbacks=$(awk '$1 == "fatia_engine_sim_pd_fallbacks_total" {print $2}' "$TMP/dm")
[ "${legs:-0}" -ge 1 ] && [ "${pulls:-0}" -ge 1 ] && [ "$fallbacks" = 0 ] ||
    fail "llama-pd was not served prefill then decode: prefill legs ${legs:-none}, KV pulls ${pulls:-none}, fallbacks ${fallbacks:-none}"
pdn() {
    curl -s -H "Authorization: Bearer $KA" "localhost:$G/metrics" |
        awk '$1 == "fatia_gateway_pd_decisions_total{decision=\"disaggregated\"}" {print $2}'
}
n1=$(pdn)
[ "${n1:-0}" -ge 1 ] || fail "the gateway made no P/D decision"
# the pool's own decider is KServe's always-disagg: a short prompt goes through prefill too
ask "$KA" llama-pd
[ "$(cat "$TMP/code")" = 200 ] || fail "a short prompt to llama-pd: HTTP $(cat "$TMP/code") $(cat "$TMP/c")"
[ "$(pdn)" = $((n1 + 1)) ] || fail "a short prompt was not disaggregated by the pool's decider: $n1 -> $(pdn)"
# the other tenant cannot reach it
expect_code 404 "$KB" llama-pd 'The model `llama-pd` does not exist.'
expect_rc 0 "$k" delete llmisvc llama-pd -n serving
pdgone() { [ -z "$("$k" get deploy,inferencepool -n serving -l app.kubernetes.io/name=llama-pd -o name 2>/dev/null)" ]; }
wait_for "llama-pd's Deployments and pool deleted with it" pdgone

# 4. scale minReplicas
expect_rc 0 "$k" patch isvc llama -n serving --type merge -p '{"spec":{"predictor":{"minReplicas":2}}}'
two() { [ "$("$k" get deploy llama-predictor -n serving -o jsonpath='{.spec.replicas}/{.status.readyReplicas}')" = 2/2 ] &&
    [ "$("$k" get isvc llama -n serving -o jsonpath='{.status.modelStatus.copies.totalCopies}')" = 2 ]; }
wait_for "two replicas" two
[ "$("$k" get pods -n serving -l serving.kserve.io/inferenceservice=llama -o name | wc -l)" = 2 ] ||
    fail "pods: $("$k" get pods -n serving)"
wait_for "a completion with two replicas" complete
expect_rc 0 "$k" patch isvc llama -n serving --type merge -p '{"spec":{"predictor":{"minReplicas":1}}}'
one() { [ "$("$k" get pods -n serving -l serving.kserve.io/inferenceservice=llama -o name | wc -l)" = 1 ]; }
wait_for "back to one replica" one

# 4b. scale-down under load loses no request: a replica being removed drains (engine-sim on
#     SIGTERM stops taking connections and answers what it holds, docs/serving.md): 12 long
#     completions through the gateway while minReplicas goes 2 -> 1, every one answered in full
cat >"$TMP/drain.yaml" <<'EOF'
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: drainer, namespace: serving, annotations: {serving.fatia.io/port: "28120"}}
spec: {predictor: {minReplicas: 2, model: {modelFormat: {name: vLLM}, args: ["--speed", "50"]}}}
EOF
expect_rc 0 "$k" apply -f "$TMP/drain.yaml"
dtwo() { [ "$("$k" get deploy drainer-predictor -n serving -o jsonpath='{.status.readyReplicas}')" = 2 ]; }
wait_for "drainer with two ready replicas" dtwo
dask() { ask "$KA" drainer && [ "$(cat "$TMP/code")" = 200 ]; }
wait_for "drainer through the gateway" dask
for i in $(seq 12); do
    curl -s -o "$TMP/dr$i.json" -w '%{http_code}' -H "Authorization: Bearer $KA" "localhost:$G/v1/completions" \
        -d "{\"model\":\"drainer\",\"prompt\":\"long answer number $i\",\"max_tokens\":12000}" >"$TMP/dr$i.code" 2>/dev/null &
    eval "DR$i=$!"
done
sleep 0.5
expect_rc 0 "$k" patch isvc drainer -n serving --type merge -p '{"spec":{"predictor":{"minReplicas":1}}}'
for i in $(seq 12); do eval "wait \$DR$i"; done
for i in $(seq 12); do
    [ "$(cat "$TMP/dr$i.code")" = 200 ] && grep -q '"completion_tokens":12000' "$TMP/dr$i.json" ||
        fail "request $i lost in the scale-down: HTTP $(cat "$TMP/dr$i.code") $(head -c 300 "$TMP/dr$i.json")"
done
done_one() { [ "$("$k" get pods -n serving -l serving.kserve.io/inferenceservice=drainer -o name | wc -l)" = 1 ]; }
wait_for "drainer down to one replica" done_one
expect_rc 0 "$k" delete isvc drainer -n serving

if [ "$RT" = oci ]; then
    # 4c. the autoscaler reads each replica at its pod address: 3 clients keep completions in
    #     flight at the one replica's address (not the host's: nothing listens on 127.0.0.1
    #     there), concurrency 3 against scaleTarget 1 gives the second replica
    cat >"$TMP/hot.yaml" <<'EOF'
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  name: hot
  namespace: serving
  annotations: {serving.fatia.io/port: "28130", autoscaling.knative.dev/window: "6s"}
spec: {predictor: {minReplicas: 1, maxReplicas: 2, scaleMetric: concurrency, scaleTarget: 1, model: {modelFormat: {name: vLLM}}}}
EOF
    expect_rc 0 "$k" apply -f "$TMP/hot.yaml"
    hreps() { "$k" get deploy hot-predictor -n serving -o jsonpath='{.spec.replicas}/{.status.readyReplicas}'; }
    hone() { [ "$(hreps)" = 1/1 ]; }
    wait_for "hot: one ready replica" hone
    hip=$("$k" get pods -n serving -l serving.kserve.io/inferenceservice=hot -o jsonpath='{.items[0].status.podIP}')
    python3 - "$hip" <<'PY' &
import json, sys, threading, urllib.request
def client():
    while True:
        try:
            req = urllib.request.Request("http://%s:28130/v1/completions" % sys.argv[1],
                data=json.dumps({"model": "hot", "prompt": "hello " * 50, "max_tokens": 300}).encode(),
                headers={"Content-Type": "application/json"})
            urllib.request.urlopen(req, timeout=60).read()
        except Exception:
            pass
for _ in range(3):
    threading.Thread(target=client, daemon=True).start()
threading.Event().wait()
PY
    HOTLOAD=$!
    PIDS="$PIDS $HOTLOAD"
    htwo() { [ "$(hreps)" = 2/2 ]; }
    wait_for "hot: two ready replicas from its pod's concurrency" htwo
    kill "$HOTLOAD" 2>/dev/null
    "$k" get events -n serving --field-selector involvedObject.name=hot,reason=Scaled \
        -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' >"$TMP/ev" 2>&1
    expect_line "$TMP/ev" "Scaled from 1 to 2 replicas: concurrency"
    expect_rc 0 "$k" delete isvc hot -n serving
fi

# 5. through Kueue: the queue label and hardware-profile annotation reach the pods' template; a
#    ClusterQueue of 1 CPU admits one replica of 600m, a second waits behind the scheduling gate
#    (bounded by quota), and is admitted once the quota grows
cat >"$TMP/q.yaml" <<'EOF'
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default-flavor}
spec: {}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: serving-cq}
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
metadata: {name: team-a, namespace: serving}
spec: {clusterQueue: serving-cq}
---
apiVersion: infrastructure.opendatahub.io/v1
kind: HardwareProfile
metadata: {name: small-gpu, namespace: serving}
spec:
  identifiers:
  - {displayName: CPU, identifier: cpu, resourceType: CPU, minCount: 500m, defaultCount: 600m, maxCount: 1}
  scheduling:
    type: Queue
    kueue: {localQueueName: team-a}
---
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  name: queued
  namespace: serving
  labels: {kueue.x-k8s.io/queue-name: team-a}
  annotations: {opendatahub.io/hardware-profile-name: small-gpu, serving.fatia.io/port: "28090"}
spec:
  predictor:
    minReplicas: 2
    model:
      modelFormat: {name: vLLM}
      args: ["--speed", "50"]
EOF
expect_rc 0 "$k" apply -f "$TMP/q.yaml"
tmpl() { "$k" get deploy queued-predictor -n serving -o json >"$TMP/q.json" 2>/dev/null; }
wait_for "Deployment queued-predictor" tmpl
python3 - "$TMP/q.json" <<'EOF' || fail "queued template: $(cat "$TMP/q.json")"
import json, sys
t = json.load(open(sys.argv[1]))["spec"]["template"]
assert t["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a", t
assert t["metadata"]["annotations"]["opendatahub.io/hardware-profile-name"] == "small-gpu", t
EOF
# the profile's default CPU was injected into the pods (the InferenceService names none)
injected() { [ "$("$k" get pods -n serving -l serving.kserve.io/inferenceservice=queued -o jsonpath='{.items[0].spec.containers[0].resources.requests.cpu}')" = 600m ]; }
wait_for "the hardware profile's CPU injected into a replica" injected
qready() { [ "$("$k" get deploy queued-predictor -n serving -o jsonpath='{.status.readyReplicas}')" = "$1" ]; }
wait_for "one queued replica admitted and ready" qready 1
sleep 2
[ "$("$k" get deploy queued-predictor -n serving -o jsonpath='{.status.readyReplicas}')" = 1 ] ||
    fail "a replica beyond the ClusterQueue's quota runs"
expect_rc 0 "$k" get workloads -n serving -o json
python3 - "$TMP/out" <<'EOF' || fail "workloads: $(cat "$TMP/out")"
import json, sys
ws = json.load(open(sys.argv[1]))["items"]
adm = [w for w in ws if any(c["type"] == "Admitted" and c["status"] == "True" for c in w.get("status", {}).get("conditions", []))]
assert len(ws) == 2 and len(adm) == 1, [(w["metadata"]["name"], w.get("status", {}).get("conditions")) for w in ws]
EOF
notready() { [ "$("$k" get isvc queued -n serving -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = False ]; }
wait_for "queued not Ready with 1 of 2 replicas" notready
expect_rc 0 "$k" patch clusterqueue serving-cq --type merge -p '{"spec":{"resourceGroups":[{"coveredResources":["cpu"],"flavors":[{"name":"default-flavor","resources":[{"name":"cpu","nominalQuota":2}]}]}]}}'
wait_for "the second replica admitted once the quota grows" qready 2
qisready() { [ "$("$k" get isvc queued -n serving -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]; }
wait_for "queued Ready" qisready

# 5b. predictor.model.runtime: a missing runtime deploys nothing (RuntimeNotRecognized), a
#     disabled one neither (RuntimeDisabled), one that serves the format is used
cat >"$TMP/rt.yaml" <<'EOF'
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: rt, namespace: serving}
spec: {predictor: {minReplicas: 0, model: {modelFormat: {name: vLLM}, runtime: vllm-runtime}}}
EOF
expect_rc 0 "$k" apply -f "$TMP/rt.yaml"
reason_is() { [ "$("$k" get isvc rt -n serving -o jsonpath='{.status.conditions[?(@.type=="PredictorReady")].reason} {.status.modelStatus.transitionStatus}')" = "$1 InvalidSpec" ]; }
wait_for "runtime not recognized" reason_is RuntimeNotRecognized
"$k" get deploy rt-predictor -n serving >/dev/null 2>&1 && fail "a Deployment for an unknown runtime"
cat >"$TMP/sr.yaml" <<EOF
apiVersion: serving.kserve.io/v1alpha1
kind: ClusterServingRuntime
metadata: {name: vllm-runtime}
spec: {disabled: true, supportedModelFormats: [{name: vLLM, autoSelect: false}], containers: [{name: kserve-container, image: vllm/vllm-openai}]}
EOF
expect_rc 0 "$k" apply -f "$TMP/sr.yaml"
wait_for "runtime disabled" reason_is RuntimeDisabled
sed -i 's/disabled: true/disabled: false/' "$TMP/sr.yaml"
expect_rc 0 "$k" apply -f "$TMP/sr.yaml"
rtdep() { "$k" get deploy rt-predictor -n serving >/dev/null 2>&1; }
wait_for "a Deployment once the runtime serves vLLM" rtdep
expect_rc 0 "$k" delete isvc rt -n serving

# 6. delete: everything goes (the InferenceService alone: the namespace stays)
expect_rc 0 "$k" delete isvc llama -n serving
gone() { [ -z "$("$k" get deploy,pods,inferencepool -n serving -l serving.kserve.io/inferenceservice=llama -o name 2>/dev/null)" ] &&
    ! "$k" get deploy llama-predictor -n serving >/dev/null 2>&1; }
wait_for "llama's Deployment, pods and pool deleted" gone
expect_rc 0 "$k" delete isvc queued -n serving
qgone() { ! "$k" get deploy queued-predictor -n serving >/dev/null 2>&1 &&
    ! "$k" get inferencepool queued -n serving >/dev/null 2>&1; }
wait_for "queued's Deployment and pool deleted" qgone
stop_fatiad
finish
