#!/bin/bash
# tests/e2e/gpuidle.sh: the GPU-idleness policy (fatiad --gpu-idle-after) on the simulated fleet,
# with real processes and the real kubectl. Three Jobs of team-a on one whole GPU each:
#   - "idle" (priority batch, 100: best-effort; no synthetic load) is evicted once its GPU was
#     idle for 3 s: Event GPUIdle (why), its Workload deactivated (Kueue: InactiveWorkload), its
#     pod gone, then requeued: a new pod runs; fatia_gpu_idle_evictions_total counts it;
#   - "busy" (batch, annotation fatia.dev/synthetic-gpu-utilization: 80) and "urgent-idle"
#     (priority urgent, 10000: not best-effort) keep their first pod.
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
export FATIAD_CONTROLLERS=1
chmod 711 "$TMP"

e2e_start --gpu-idle-after 3s || { finish; exit 1; }
job() { # NAME PRIORITY-CLASS [UTILIZATION]
    local ann=
    [ -n "${3:-}" ] && ann="fatia.dev/synthetic-gpu-utilization: '$3'"
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
      annotations: {$ann}
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
{ job idle batch; job busy batch 80; job urgent-idle urgent; } >"$TMP/jobs.yaml"
$K create -f "$TMP/jobs.yaml" >/dev/null || fail "create jobs"
running_pod() { $K get pods -n team-a -l "batch.kubernetes.io/job-name=$1" --field-selector=status.phase=Running -o jsonpath='{.items[0].metadata.name}' 2>/dev/null; }
all_running() { [ -n "$(running_pod idle)" ] && [ -n "$(running_pod busy)" ] && [ -n "$(running_pod urgent-idle)" ]; }
wait_until 30 all_running || $K get pods,workloads -n team-a >&2
first_idle=$(running_pod idle)
first_busy=$(running_pod busy)
first_urgent=$(running_pod urgent-idle)

evicted() { $K get events -n team-a --field-selector reason=GPUIdle -o jsonpath='{.items[*].message}' | grep -q "pod $first_idle\|Pod $first_idle"; }
wait_until 20 evicted || $K get events -n team-a >&2
$K get events -n team-a --field-selector reason=GPUIdle,involvedObject.name="$first_idle" -o jsonpath='{.items[0].message}' >"$TMP/msg"
expect_line "$TMP/msg" "GPUs idle (utilization 0% < 5%)"
expect_line "$TMP/msg" "best-effort (priority 100 < 1000): evicting workload"
# Kueue's own Event: the Workload evicted because it was deactivated
inactive() { $K get events -n team-a --field-selector reason=Evicted -o jsonpath='{.items[*].message}' | grep -q "The workload is deactivated"; }
wait_until 20 inactive
requeued() { p=$(running_pod idle); [ -n "$p" ] && [ "$p" != "$first_idle" ]; }
wait_until 40 requeued || $K get pods,workloads -n team-a -o wide >&2
metrics
grep -q '^fatia_gpu_idle_evictions_total{namespace="team-a",cluster_queue="team-a"} [1-9]' "$TMP/metrics" ||
    fail "no eviction counted: $(grep fatia_gpu_idle "$TMP/metrics")"
[ "$(running_pod busy)" = "$first_busy" ] || fail "the busy job was evicted"
[ "$(running_pod urgent-idle)" = "$first_urgent" ] || fail "the urgent job was evicted"
$K get events -n team-a --field-selector reason=GPUIdle -o jsonpath='{.items[*].involvedObject.name}' >"$TMP/who"
[ -n "$first_busy" ] && [ -n "$first_urgent" ] && grep -qE "$first_busy|$first_urgent" "$TMP/who" && fail "GPUIdle for a job that must stay: $(cat "$TMP/who")"

$K delete jobs --all -n team-a >/dev/null || fail "delete jobs"
no_pods() { [ -z "$($K get pods -n team-a -o name 2>/dev/null)" ]; }
wait_until 60 no_pods
stop_fatiad
finish
