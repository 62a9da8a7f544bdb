#!/bin/bash
# tests/e2e/gpuutil-forge.sh: a tenant cannot forge the GPU utilisation the GPU-idleness policy
# reads on an NVML node: the pod condition fatia.dev/GPUUtilization (controller/gpuidle_util.c),
# which the node agent writes through the status subresource (agent/gpuutil_agent.c). With the
# walkthrough's fleet and a namespace user of team-a (alice, role edit): her write to pods/status
# is refused (403), and her main-resource update carrying the condition leaves the stored status
# as it was, while the admin's status write (what the agent does) is stored. Her annotation
# fatia.dev/synthetic-gpu-utilization is accepted (tenant-writable by design: only the simulated
# fleet reads it; tests/unit/test_gpuidle_util.c shows an NVML node ignores it).
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
export FATIAD_CONTROLLERS=1
chmod 711 "$TMP"

e2e_start || { finish; exit 1; }
"$FATIA" token create --data-dir "$TMP/data" --user alice --namespace team-a >"$TMP/alice.kubeconfig" 2>/dev/null || fail "token alice"
T="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $TMP/alice.kubeconfig -n team-a"
job() { # NAME PRIORITY-CLASS
    cat <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  name: $1
  namespace: team-a
  labels: {kueue.x-k8s.io/queue-name: gpu, kueue.x-k8s.io/priority-class: $2}
spec:
  template:
    metadata:
      annotations: {fatia.dev/synthetic-gpu-utilization: '100'}
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 2
      containers:
      - name: c
        image: x
        command: [sleep, "600"]
        resources: {limits: {nvidia.com/gpu: 1}}
---
YAML
}
JOBS="hostile"
job hostile batch >"$TMP/jobs.yaml"
$K create -f "$TMP/jobs.yaml" >/dev/null || fail "create jobs"
running_pod() { $K get pods -n team-a -l "batch.kubernetes.io/job-name=$1" --field-selector=status.phase=Running -o jsonpath='{.items[0].metadata.name}' 2>/dev/null; }
all_running() { for j in $JOBS; do [ -n "$(running_pod $j)" ] || return 1; done; }
wait_until 40 all_running || $K get pods,workloads -n team-a >&2
declare -A first
for j in $JOBS; do first[$j]=$(running_pod $j); done

# the condition, as the node agent writes it (status subresource); AGO: seconds in the past
cond() { # POD PERCENT [AGO]
    local when
    when=$(date -u -d "@$(($(date +%s) - ${3:-0}))" +%Y-%m-%dT%H:%M:%SZ)
    $K patch pod "$1" -n team-a --subresource=status --type=strategic -p "{\"status\":{\"conditions\":[{\"type\":\"fatia.dev/GPUUtilization\",\"status\":\"True\",\"reason\":\"Sampled\",\"message\":\"$2% SM utilization (NVML, per process)\",\"lastProbeTime\":\"$when\",\"lastTransitionTime\":\"$when\"}]}}" >/dev/null
}
cond "${first[hostile]}" 0 || fail "the admin cannot write the condition"
# the hostile tenant: its own annotation, then the condition through both paths
$T annotate pod "${first[hostile]}" fatia.dev/synthetic-gpu-utilization=100 --overwrite >/dev/null || fail "alice cannot annotate her pod"
if $T patch pod "${first[hostile]}" --subresource=status --type=strategic -p '{"status":{"conditions":[{"type":"fatia.dev/GPUUtilization","status":"True","message":"100% forged"}]}}' >"$TMP/forge" 2>&1; then
    fail "a tenant wrote pods/status: $(cat "$TMP/forge")"
fi
grep -qi "forbidden" "$TMP/forge" || fail "pods/status: not a 403: $(cat "$TMP/forge")"
$T get pod "${first[hostile]}" -o json | python3 -c '
import json, sys, datetime
p = json.load(sys.stdin)
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
cs = [c for c in p["status"].get("conditions", []) if c["type"] != "fatia.dev/GPUUtilization"]
p["status"]["conditions"] = cs + [{"type": "fatia.dev/GPUUtilization", "status": "True", "message": "100% forged", "lastProbeTime": now}]
json.dump(p, sys.stdout)' >"$TMP/forged.json"
$T replace -f "$TMP/forged.json" >/dev/null 2>&1 # may be refused or may drop the status: either is fine
$T patch pod "${first[hostile]}" --type merge -p '{"status":{"conditions":[{"type":"fatia.dev/GPUUtilization","status":"True","message":"100% forged"}]}}' >/dev/null 2>&1
$K get pod "${first[hostile]}" -n team-a -o jsonpath='{.status.conditions[?(@.type=="fatia.dev/GPUUtilization")].message}' >"$TMP/stored"
grep -q forged "$TMP/stored" && fail "a tenant's main-resource update wrote the condition: $(cat "$TMP/stored")"

grep -q "^0% SM utilization" "$TMP/stored" || fail "the agent's condition was not kept: $(cat "$TMP/stored")"
$K delete jobs --all -n team-a >/dev/null || fail "delete jobs"
no_pods() { [ -z "$($K get pods -n team-a -o name 2>/dev/null)" ]; }
wait_until 60 no_pods
stop_fatiad
finish
