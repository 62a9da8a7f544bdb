#!/bin/bash
# tests/e2e/controllers.sh: fatiad's controllers end to end, with a real fatiad and the real
# kubectl, on the walkthrough fleet (examples/fleet/) and examples/. No node agent runs here: the
# test plays its part and writes the pods' phases itself, so that every step of the controllers is
# checked on its own (tests/e2e/walkthrough.sh runs the same story with real processes).
#
#   1. the device controller publishes the node (GFD labels, allocatable) and its ResourceSlices
#   2. hardware profiles are injected, and refused outside min..max or when disabled
#   3. a Job: Workload (Kueue's name and owner), admission, unsuspend, placement (the annotations
#      of the pod contract), completion, Finished, quota back to zero
#   4. borrowing, reclamation by the lender, priority preemption inside a ClusterQueue
#   5. a bare Pod behind Kueue's scheduling gate; a MIG slice; a time-slice with its memory cap
#   6. backoffLimit (Failed, BackoffLimitExceeded) and the garbage collector (Job deleted)
#   7. a re-plan that would take a held slice waits (ReplanBlocked), then happens
#   8. kill -9 of fatiad with bound pods: nothing is placed twice after the restart
#   9. a DRA claim from a template (allocated on NVLink-connected GPUs, held against other pods,
#      deallocated when its pod ends, collected with it)
#  10. /metrics (Kueue's names and fatia's slices), and the slice history checker over every pod
#      event of the run
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
export FATIAD_CONTROLLERS=1
MK="$E2E_DIR/mkjob"

e2e_start --job-backoff 200ms $NO_AGENT || { finish; exit 1; }
watch_pods "$TMP/watch1"

# ---- 1. the device controller ----
expect_rc 0 $K get node box-0 -o json
expect_line "$TMP/out" '"nvidia.com/gpu.product": "NVIDIA-H200"'
expect_line "$TMP/out" '"nvidia.com/gpu.shared": "8"'
expect_line "$TMP/out" '"nvidia.com/mig-3g.71gb": "2"'
expect_line "$TMP/out" '"fatia.dev/simulated": "true"'
expect_rc 0 $K get resourceslices -o jsonpath='{range .items[*].spec.devices[*]}{.name}{"\n"}{end}'
[ "$(wc -l <"$TMP/out")" = 20 ] || fail "want 20 devices in the ResourceSlices, got $(wc -l <"$TMP/out")"
expect_line "$TMP/out" "gpu-4-mig-3g71gb-9-4"

# ---- 2. hardware profiles ----
$MK team-a big training-2gpu "" "true" | sed 's/      - name: main/      - name: main\n        resources: {requests: {cpu: "32"}, limits: {cpu: "32"}}/' >"$TMP/big.yaml"
expect_rc 1 $K apply -f "$TMP/big.yaml"
expect_line "$TMP/err" 'above the maximum 16 of hardware profile'
cat >"$TMP/disabled.yaml" <<'YAML'
apiVersion: infrastructure.opendatahub.io/v1
kind: HardwareProfile
metadata:
  name: retired
  namespace: gpu-catalog
  annotations: {opendatahub.io/disabled: "true"}
spec:
  identifiers:
  - {displayName: CPU, identifier: cpu, resourceType: CPU, minCount: 1, defaultCount: 1}
  scheduling: {type: Queue, kueue: {localQueueName: gpu}}
YAML
expect_rc 0 $K apply -f "$TMP/disabled.yaml"
$MK team-a old retired "" "true" >"$TMP/old.yaml"
expect_rc 1 $K apply -f "$TMP/old.yaml"
expect_line "$TMP/err" 'disabled'

# ---- 3. one Job, start to finish ----
$MK team-a train-a1 training-2gpu >"$TMP/a1.yaml"
expect_rc 0 $K apply -f "$TMP/a1.yaml"
wait_until 10 has_bound_pod team-a train-a1
WL=$(wl_of team-a train-a1)
case "$WL" in job-train-a1-?????) ;; *) fail "workload name '$WL' is not Kueue's job-train-a1-<hash>" ;; esac
expect_rc 0 $K get workload "$WL" -n team-a -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name} {.spec.priorityClassRef.name} {.spec.priority} {.status.admission.clusterQueue} {.status.admission.podSetAssignments[0].flavors.nvidia\.com/gpu}'
expect_line "$TMP/out" "Job/train-a1 batch 100 team-a h200"
[ "$(wl_cond team-a "$WL" QuotaReserved)/$(wl_cond team-a "$WL" Admitted)" = True/True ] ||
    fail "workload $WL not QuotaReserved and Admitted"
expect_rc 0 $K get job train-a1 -n team-a -o jsonpath='{.spec.suspend} {.spec.template.spec.nodeSelector.nvidia\.com/gpu\.product} {.spec.template.spec.containers[0].resources.limits.nvidia\.com/gpu}'
expect_line "$TMP/out" "false NVIDIA-H200 2"
P=$(pod_of_job team-a train-a1)
expect_rc 0 $K get pod "$P" -n team-a -o jsonpath='{.spec.nodeName}|{.metadata.annotations.fatia\.dev/slices}|{.metadata.annotations.fatia\.dev/devices}'
expect_line "$TMP/out" 'box-0|gpu-2,gpu-3|[{"container":"main","slice":"gpu-2","kind":"whole","gpuIndex":2,"uuid":"GPU-'
wait_until 5 is_true $K get pod "$P" -n team-a -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].status}'
expect_rc 0 $K get cq team-a -o jsonpath='{.status.admittedWorkloads}'
wait_until 3 out_is 1 $K get cq team-a -o jsonpath='{.status.admittedWorkloads}'
set_phase team-a "$P" Succeeded
wait_until 10 is_true job_cond team-a train-a1 Complete
wait_until 10 is_true wl_cond team-a "$WL" Finished
expect_rc 0 $K get job train-a1 -n team-a -o jsonpath='{.status.succeeded} {.status.conditions[*].type}'
expect_line "$TMP/out" "1 SuccessCriteriaMet Complete"
wait_until 10 out_empty $K get pod "$P" -n team-a -o jsonpath='{.metadata.finalizers}'
wait_until 5 out_is 0 cq_usage team-a h200 nvidia.com/gpu
expect_rc 0 $K get events -n team-a --field-selector involvedObject.name="$WL" -o jsonpath='{range .items[*]}{.reason}{"\n"}{end}'
expect_line "$TMP/out" "QuotaReserved"
expect_line "$TMP/out" "Admitted"
expect_line "$TMP/out" "FinishedWorkload"

# ---- 4. borrowing, reclamation, priority ----
$MK team-a train-a2 training-2gpu | $K apply -f - >/dev/null
wait_until 10 has_bound_pod team-a train-a2
$MK team-a train-a3 training-2gpu | $K apply -f - >/dev/null
wait_until 10 has_bound_pod team-a train-a3
# team-a now holds all 4 whole GPUs: 2 nominal + 2 borrowed from team-b
wait_until 5 out_is 4 cq_usage team-a h200 nvidia.com/gpu
expect_rc 0 $K get cq team-a -o jsonpath='{.status.flavorsUsage[?(@.name=="h200")].resources[?(@.name=="nvidia.com/gpu")].borrowed}'
expect_line "$TMP/out" "2"
# Kueue reclaims from the newest admission of the borrowing ClusterQueue: train-a3
BORROWER=train-a3
$MK team-b train-b1 training-2gpu | $K apply -f - >/dev/null
wait_until 10 out_nonempty wl_of team-b train-b1
wait_until 10 is_true wl_cond team-a "$(wl_of team-a "$BORROWER")" Evicted
expect_rc 0 $K get workload "$(wl_of team-a "$BORROWER")" -n team-a -o jsonpath='{.status.conditions[?(@.type=="Preempted")].reason}: {.status.conditions[?(@.type=="Evicted")].message}'
expect_line "$TMP/out" "InCohortReclamation: Preempted to accommodate a workload (UID: "
expect_line "$TMP/out" "due to reclamation within the cohort"
# the borrower's job is suspended and its pod deleted; then team-b runs
wait_until 10 out_is true $K get job "$BORROWER" -n team-a -o jsonpath='{.spec.suspend}'
wait_until 10 has_bound_pod team-b train-b1
wait_until 10 out_is False wl_cond team-a "$(wl_of team-a "$BORROWER")" QuotaReserved
# urgent work in team-a preempts its own batch job (withinClusterQueue: LowerPriority)
cat >"$TMP/urgent.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: urgent
  namespace: team-a
  labels: {kueue.x-k8s.io/queue-name: gpu, kueue.x-k8s.io/priority-class: urgent}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["true"]
        resources:
          requests: {cpu: 2, memory: 8Gi, nvidia.com/gpu: 2}
          limits: {nvidia.com/gpu: 2}
YAML
expect_rc 0 $K apply -f "$TMP/urgent.yaml"
wait_until 10 has_bound_pod team-a urgent
VICTIM=train-a2
expect_rc 0 $K get workload "$(wl_of team-a "$VICTIM")" -n team-a -o jsonpath='{.status.conditions[?(@.type=="Preempted")].reason}'
expect_line "$TMP/out" "InClusterQueue"
expect_rc 0 $K get job "$VICTIM" -n team-a -o jsonpath='{.spec.suspend} {.status.conditions[*].type}'
expect_line "$TMP/out" "true Suspended"

# ---- 5. a bare Pod behind the gate; MIG; a capped time-slice ----
cat >"$TMP/nb.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: notebook
  namespace: team-b
  annotations:
    opendatahub.io/hardware-profile-name: notebook-shared
    opendatahub.io/hardware-profile-namespace: gpu-catalog
spec:
  containers:
  - name: lab
    image: jupyter/base-notebook
    command: ["sleep", "3600"]
YAML
expect_rc 0 $K apply -f "$TMP/nb.yaml"
wait_until 10 out_nonempty $K get pod notebook -n team-b -o jsonpath='{.spec.nodeName}'
expect_rc 0 $K get pod notebook -n team-b -o jsonpath='{.metadata.labels.kueue\.x-k8s\.io/managed} {.metadata.finalizers} {.spec.schedulingGates} {.metadata.annotations.fatia\.dev/devices}'
expect_line "$TMP/out" 'true ["kueue.x-k8s.io/managed"]  [{"container":"lab","slice":"gpu-0-ts0","kind":"timeslice","gpuIndex":0,"uuid":"GPU-'
expect_line "$TMP/out" '"memoryBytes":36882612224,"podUID":"'
WN=$(wl_of team-b notebook)
case "$WN" in pod-notebook-?????) ;; *) fail "workload name '$WN' is not Kueue's pod-notebook-<hash>" ;; esac
cat >"$TMP/inf.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: serve
  namespace: team-b
  annotations:
    opendatahub.io/hardware-profile-name: inference-mig-3g
    opendatahub.io/hardware-profile-namespace: gpu-catalog
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: server
        image: vllm/vllm-openai
        command: ["sleep", "3600"]
YAML
expect_rc 0 $K apply -f "$TMP/inf.yaml"
wait_until 10 has_bound_pod team-b serve
expect_rc 0 $K get pod "$(pod_of_job team-b serve)" -n team-b -o jsonpath='{.metadata.annotations.fatia\.dev/devices}'
expect_line "$TMP/out" '"slice":"gpu-4-mig-3g71gb-9-4","kind":"mig","gpuIndex":4,"uuid":"GPU-'
expect_line "$TMP/out" '"migUuid":"MIG-'

# ---- 6. backoffLimit; the garbage collector ----
cat >"$TMP/flaky.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: flaky
  namespace: team-b
  labels: {kueue.x-k8s.io/queue-name: gpu}
spec:
  backoffLimit: 1
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["false"]
        resources: {requests: {cpu: 1}}
YAML
expect_rc 0 $K apply -f "$TMP/flaky.yaml"
for i in 1 2; do
    wait_until 10 out_is "$i" pods_of_job_count team-b flaky
    for p in $(pods_of_job team-b flaky); do
        [ "$($K get pod "$p" -n team-b -o jsonpath='{.status.phase}')" = Failed ] || set_phase team-b "$p" Failed
    done
done
wait_until 10 is_true job_cond team-b flaky Failed
expect_rc 0 $K get job flaky -n team-b -o jsonpath='{.status.failed} {.status.conditions[?(@.type=="Failed")].reason}'
expect_line "$TMP/out" "2 BackoffLimitExceeded"
WF=$(wl_of team-b flaky)
wait_until 5 is_true wl_cond team-b "$WF" Finished
expect_rc 0 $K get workload "$WF" -n team-b -o jsonpath='{.status.conditions[?(@.type=="Finished")].reason}'
expect_line "$TMP/out" "Failed"
expect_rc 0 $K delete job flaky -n team-b
wait_until 10 out_empty $K get workload "$WF" -n team-b -o name
wait_until 10 out_empty pods_of_job team-b flaky

# ---- 7. a re-plan that would take a held slice waits ----
# the notebook holds gpu-0-ts0; two replicas instead of four would change that slice
$K get gpusharingpolicy timesliced -o json | sed 's/"replicas": 4/"replicas": 2/' >"$TMP/ts2.json"
expect_rc 0 $K replace -f "$TMP/ts2.json"
wait_until 10 out_nonempty $K get events -n default --field-selector reason=ReplanBlocked -o name
expect_rc 0 $K get events -n default --field-selector reason=ReplanBlocked -o jsonpath='{.items[0].message}'
expect_line "$TMP/out" "slice gpu-0-ts0 of node box-0 is held by pod team-b/notebook"
expect_rc 0 $K get node box-0 -o jsonpath='{.status.allocatable.nvidia\.com/gpu\.shared}'
expect_line "$TMP/out" "8"
set_phase team-b notebook Succeeded
wait_until 10 out_is 4 $K get node box-0 -o jsonpath='{.status.allocatable.nvidia\.com/gpu\.shared}'
wait_until 10 is_true wl_cond team-b "$WN" Finished
wait_until 10 out_empty $K get pod notebook -n team-b -o jsonpath='{.metadata.finalizers}'

# the counters (they live in memory: a restart starts them again, as Kueue's do)
metrics
for l in 'kueue_admitted_workloads_total{cluster_queue="team-a"}' \
    'kueue_evicted_workloads_total{cluster_queue="team-a",reason="Preempted"}' \
    'kueue_preempted_workloads_total{preempting_cluster_queue="team-b",reason="InCohortReclamation"}' \
    'kueue_preempted_workloads_total{preempting_cluster_queue="team-a",reason="InClusterQueue"}' \
    'kueue_admission_wait_time_seconds_count{cluster_queue="team-a"}' \
    'fatia_device_replans_blocked_total 1' \
    'fatia_device_plans_total 2'; do
    expect_line "$TMP/metrics" "$l"
done

# ---- 8. kill -9 with bound pods ----
held() {
    $K get pods -A -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}={.spec.nodeName}:{.metadata.annotations.fatia\.dev/slices}:{.status.phase}{"\n"}{end}' |
        grep -v ':$' | grep -v ':Succeeded$' | grep -v ':Failed$' | sort
}
before=$(held)
kill -9 "$FATIAD_PID"
wait "$FATIAD_PID" 2>/dev/null
FATIAD_PID=
kill "$WATCH_PID" 2>/dev/null
last_rv=$(tail -n 1 "$TMP/watch1" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["object"]["metadata"]["resourceVersion"])' 2>/dev/null || echo 0)
start_fatiad "$TMP/data" --fleet examples/fleet/ -f examples/ --job-backoff 200ms $NO_AGENT || { finish; exit 1; }
watch_pods "$TMP/watch2" "$last_rv"
# every pod that held slices still holds the same ones
missing=$(comm -23 <(echo "$before") <(held))
[ -z "$missing" ] || fail "bindings lost across kill -9: $missing"
# a new job for two whole GPUs must wait while they are all held
$MK team-b train-b2 training-2gpu | $K apply -f - >/dev/null
sleep 1
# finish everything that runs, so that the queues drain
for round in 1 2 3 4 5; do
    for np in $($K get pods -A -o jsonpath='{range .items[?(@.spec.nodeName)]}{.metadata.namespace}/{.metadata.name}/{.status.phase}{"\n"}{end}'); do
        ns=${np%%/*} rest=${np#*/} p=${rest%%/*} ph=${rest#*/}
        case "$ph" in Succeeded | Failed) ;; *) set_phase "$ns" "$p" Succeeded ;; esac
    done
    sleep 1
done
wait_until 20 out_is 0 cq_usage team-a h200 nvidia.com/gpu
wait_until 20 out_is 0 cq_usage team-b h200 nvidia.com/gpu
expect_rc 0 $K get jobs -A -o jsonpath='{range .items[*]}{.metadata.name}={.status.conditions[-1:].type}{"\n"}{end}'
for j in train-a1 train-a2 train-a3 train-b1 train-b2 urgent serve; do
    expect_line "$TMP/out" "$j=Complete"
done

# ---- 8b. DRA: a claim from a template, on NVLink-connected GPUs ----
cat >"$TMP/dra.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: nccl, namespace: team-b}
spec:
  restartPolicy: Never
  resourceClaims: [{name: gpus, resourceClaimTemplateName: two-nvlinked-gpus}]
  containers:
  - name: main
    image: busybox
    command: ["sleep", "3600"]
    resources: {claims: [{name: gpus}]}
YAML
expect_rc 0 $K apply -f "$TMP/dra.yaml"
wait_until 10 out_nonempty $K get pod nccl -n team-b -o jsonpath='{.spec.nodeName}'
expect_rc 0 $K get resourceclaim nccl-gpus -n team-b -o jsonpath='{.metadata.ownerReferences[0].name} {.status.allocation.devices.results[*].device} {.status.reservedFor[0].name}'
expect_line "$TMP/out" "nccl gpu-2 gpu-3 nccl"
expect_rc 0 $K get pod nccl -n team-b -o jsonpath='{.metadata.annotations.fatia\.dev/devices}'
expect_line "$TMP/out" '"slice":"gpu-2","kind":"whole","gpuIndex":2,"uuid":"GPU-'
expect_line "$TMP/out" '"claim":"team-b/nccl-gpus"'
# the claim's GPUs are taken: two pods of two whole GPUs each, one fits, one waits
for n in w1 w2; do
    sed -e "s/name: nccl/name: $n/" -e '/resourceClaims/d' -e 's/resources: {claims: \[{name: gpus}\]}/resources: {limits: {nvidia.com\/gpu: 2}}/' "$TMP/dra.yaml" | $K apply -f - >/dev/null
done
wait_until 10 out_is box-0 $K get pod w1 -n team-b -o jsonpath='{.spec.nodeName}'
expect_rc 0 $K get pod w1 -n team-b -o jsonpath='{.metadata.annotations.fatia\.dev/slices}'
expect_line "$TMP/out" "gpu-6,gpu-7"
wait_until 10 out_is False $K get pod w2 -n team-b -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].status}'
set_phase team-b nccl Succeeded
wait_until 10 out_empty $K get resourceclaim nccl-gpus -n team-b -o jsonpath='{.status.allocation}'
wait_until 10 out_is gpu-2,gpu-3 $K get pod w2 -n team-b -o jsonpath='{.metadata.annotations.fatia\.dev/slices}'
expect_rc 0 $K delete pod nccl -n team-b
wait_until 10 out_empty $K get resourceclaim nccl-gpus -n team-b -o name
set_phase team-b w1 Succeeded
set_phase team-b w2 Succeeded

# ---- 9. metrics and the slice history ----
metrics
for l in 'kueue_cluster_queue_nominal_quota{cohort="research",cluster_queue="team-a",flavor="h200",resource="nvidia.com/gpu"} 2' \
    'kueue_cluster_queue_resource_usage{cohort="research",cluster_queue="team-a",flavor="h200",resource="nvidia.com/gpu"} 0' \
    'kueue_pending_workloads{cluster_queue="team-a",status="active"} 0' \
    'kueue_admitted_workloads_total{cluster_queue="team-a"}' \
    'fatia_slices{node="box-0",kind="mig",resource="nvidia.com/mig-3g.71gb",profile="3g.71gb",state="free"} 2' \
    'fatia_slice_conflicts_total 0'; do
    expect_line "$TMP/metrics" "$l"
done
kill "$WATCH_PID" 2>/dev/null
expect_rc 0 python3 "$E2E_DIR/slicecheck.py" --self-test
if ! python3 "$E2E_DIR/slicecheck.py" "$TMP/watch1" "$TMP/watch2" >"$TMP/check"; then
    fail "slice history: $(cat "$TMP/check")"
fi
cat "$TMP/check"
stop_fatiad
finish
