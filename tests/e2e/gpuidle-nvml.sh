#!/bin/bash
# tests/e2e/gpuidle-nvml.sh: the GPU-idleness policy on an NVML node, end to end: fatiad's
# inventory is the fake NVML replaying the 2 x H200 host (tests/data/nvml/h200x2.json, node
# box-0, label fatia.dev/inventory=nvml), the agent's watchdog reads the per-process fake
# (tests/vgpu/fake_nvml.c, renamed to the same UUIDs) and publishes each pod's utilisation as its
# condition fatia.dev/GPUUtilization. Both GPUs time-sliced x4; Jobs of team-a on one slice each,
# every pod annotated fatia.dev/synthetic-gpu-utilization: 100 by its tenant (ignored here); a
# pod's process tells the fake it runs on both GPUs (only its own slice's GPU counts for it):
#   - "idle" (batch, 100: best-effort) at 0 % SM: evicted after --gpu-idle-after 3s and requeued;
#   - "busy" (batch) at 50 % and "urgent-idle" (urgent, 10000) at 0 %: keep their first pod.
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
find_kubectl
INV=$BUILD/tests/fake-nvml/libnvidia-ml.so.1
PROCS_LIB=$BUILD/tests/vgpu/fake/libnvidia-ml.so.1
[ -e "$INV" ] && [ -e "$PROCS_LIB" ] || { fail "missing the fake NVML libraries (build first)"; finish; exit 1; }
export HOME=$TMP/home
mkdir -p "$HOME"
export FATIAD_CONTROLLERS=1
chmod 711 "$TMP"
export FATIA_FAKE_NVML=$PWD/tests/data/nvml/h200x2.json
unset FATIA_FAKE_NVML_STATE
export FAKE_NVML_UUID0=GPU-31c2b5b9-3c28-8f92-9f66-01497d3ccaa1 FAKE_NVML_UUID1=GPU-eb06f796-70a5-0789-36c5-f9d5a56bcecc
export FAKE_NVML_PROCS=$TMP/nvml
mkdir -p "$FAKE_NVML_PROCS"
chmod 1777 "$FAKE_NVML_PROCS"
cat >"$TMP/ts.yaml" <<'YAML'
apiVersion: fatia.dev/v1alpha1
kind: GPUSharingPolicy
metadata: {name: ts}
spec:
  nodeSelector: {}
  timeSlicing:
    renameByDefault: true
    resources: [{name: nvidia.com/gpu, replicas: 4}]
YAML
start_fatiad "$TMP/data" -f examples/ -f "$TMP/ts.yaml" --inventory nvml --nvml-lib "$INV" --node-name box-0 \
    --gpu-idle-after 3s --agent "gpu-watch-nvml=$PROCS_LIB" --agent gpu-util-every=500ms || { finish; exit 1; }
K="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $KCFG"
wait_until 20 $K get node box-0 -o name
[ "$($K get node box-0 -o jsonpath='{.metadata.labels.fatia\.dev/inventory}')" = nvml ] || fail "box-0 is not an NVML node"
grep -q "GPU utilization published every 500 ms" "$TMP/data.log" || fail "no utilization sampling: $(grep -i watchdog "$TMP/data.log")"
grep -q "pod cgroups under" "$TMP/data.log" || skip "no pod cgroups on this machine: the agent maps pids by cgroup"
job() { # NAME PRIORITY-CLASS SM-PERCENT
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
        command: [sh, -c, 'for g in 0 1; do echo 1073741824 >$FAKE_NVML_PROCS/\$g.\$\$\$\$; echo $3 >$FAKE_NVML_PROCS/util.\$g.\$\$\$\$; done; exec sleep 600']
        resources: {limits: {nvidia.com/gpu.shared: 1}}
---
YAML
}
{ job idle batch 0; job busy batch 50; job urgent-idle urgent 0; } >"$TMP/jobs.yaml"
$K create -f "$TMP/jobs.yaml" >/dev/null || fail "create jobs"
running_pod() { $K get pods -n team-a -l "batch.kubernetes.io/job-name=$1" --field-selector=status.phase=Running -o jsonpath='{.items[0].metadata.name}' 2>/dev/null; }
all_running() { [ -n "$(running_pod idle)" ] && [ -n "$(running_pod busy)" ] && [ -n "$(running_pod urgent-idle)" ]; }
wait_until 30 all_running || { $K get pods,workloads -n team-a -o wide >&2; tail -20 "$TMP/data.log" >&2; }
first_idle=$(running_pod idle)
first_busy=$(running_pod busy)
first_urgent=$(running_pod urgent-idle)
cond() { $K get pod "$1" -n team-a -o jsonpath='{.status.conditions[?(@.type=="fatia.dev/GPUUtilization")].message}' 2>/dev/null; }
wait_until 10 sh -c "$K get pod $first_busy -n team-a -o jsonpath='{.status.conditions}' | grep -q '50% SM utilization'" || fail "busy: $(cond "$first_busy")"
evicted() { $K get events -n team-a --field-selector reason=GPUIdle -o jsonpath='{.items[*].message}' | grep -q "Pod $first_idle "; }
wait_until 20 evicted || { $K get events -n team-a >&2; fail "idle: $(cond "$first_idle")"; }
$K get events -n team-a --field-selector reason=GPUIdle,involvedObject.name="$first_idle" -o jsonpath='{.items[0].message}' >"$TMP/msg"
expect_line "$TMP/msg" "GPUs idle (utilization 0% < 5%)"
requeued() { p=$(running_pod idle); [ -n "$p" ] && [ "$p" != "$first_idle" ]; }
wait_until 40 requeued || $K get pods,workloads -n team-a -o wide >&2
[ "$(running_pod busy)" = "$first_busy" ] || fail "the busy job was evicted"
[ "$(running_pod urgent-idle)" = "$first_urgent" ] || fail "the urgent job was evicted"
$K get events -n team-a --field-selector reason=GPUIdle -o jsonpath='{.items[*].involvedObject.name}' >"$TMP/who"
grep -qE "$first_busy|$first_urgent" "$TMP/who" && fail "GPUIdle for a job that must stay: $(cat "$TMP/who")"
$K delete jobs --all -n team-a >/dev/null || fail "delete jobs"
no_pods() { [ -z "$($K get pods -n team-a -o name 2>/dev/null)" ]; }
wait_until 60 no_pods
stop_fatiad
finish
