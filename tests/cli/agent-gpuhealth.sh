#!/usr/bin/env bash
# tests/cli/agent-gpuhealth.sh: GPU health from NVML events (issue 21), end to end in a real
# fatiad (controllers on) whose inventory and health watch both read the fake libnvidia-ml.so.1
# of tests/supply, replaying a two-GPU H200 host; events are injected through
# FATIA_FAKE_NVML_EVENTS (tests/supply/fake_nvml.c). Each event kind is injected and its outcomes
# asserted:
#   - the application XIDs 13, 31, 43, 45, 68, 109 (what a tenant's own kernel causes) and a
#     single-bit ECC error: nothing changes, the counters count them;
#   - XID 79 (fallen off the bus): the pod on that GPU is stopped (Failed, GPUUnhealthy, an Event),
#     the pod on the other GPU keeps running, allocatable drops while capacity stays, the
#     ResourceSlice loses the GPU's device, a Warning Event on the Node and the gauge say why, a
#     new pod stays Pending; across a fatiad restart the GPU stays out; it returns only once NVML
#     answers for it again, and the pending pod then runs on it;
#   - a double-bit ECC error: out, then back by itself after the quiet window (NVML answers);
#   - a failed NVML wait: every GPU out, then back.
# Hostile: a tenant with a read-write token cannot write the Node's health annotation (neither
# take a GPU out nor bring one back) nor the node's ResourceSlice.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
FAKE=$BUILD/tests/fake-nvml/libnvidia-ml.so.1
[ -e "$FAKE" ] || { fail "missing $FAKE (build first)"; finish; }
agent_setup
trap 'agent_cleanup; if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID" 2>/dev/null; fi; etcd_cleanup; rm -rf "$TMP"' EXIT
export FATIA_FAKE_NVML=$PWD/tests/data/nvml/h200x2.json FATIA_FAKE_NVML_EVENTS=$TMP/events
unset FATIA_FAKE_NVML_STATE
: >"$FATIA_FAKE_NVML_EVENTS"
U0=GPU-31c2b5b9-3c28-8f92-9f66-01497d3ccaa1
U1=GPU-eb06f796-70a5-0789-36c5-f9d5a56bcecc
D=$TMP/d
start() {
    FATIAD_CONTROLLERS=1 start_fatiad "$D" --inventory nvml --nvml-lib "$FAKE" --node-name h200 \
        --agent "gpu-health-nvml=$FAKE" --agent gpu-health-recover=3s
}
start || finish
grep -q "GPU health watch on 2 GPUs" "$D.log" || { fail "no health watch: $(grep -i health "$D.log")"; finish; }

N="-n ml"
k create namespace ml >/dev/null
pod() { # pod NAME: a pod asking for one whole GPU
    k create $N -f - >/dev/null <<Y || fail "cannot create pod $1"
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  restartPolicy: Never
  containers: [{name: c, image: x, command: [sleep, "600"], resources: {limits: {nvidia.com/gpu: 1}}}]
Y
}
phase() { [ "$(k get pod $N "$1" -o jsonpath='{.status.phase}' 2>/dev/null)" = "$2" ]; }
gpu_of() { k get pod $N "$1" -o 'jsonpath={.metadata.annotations.fatia\.dev/devices}' | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["uuid"])'; }
alloc() { k get node h200 -o 'jsonpath={.status.allocatable.nvidia\.com/gpu}'; }
cap() { k get node h200 -o 'jsonpath={.status.capacity.nvidia\.com/gpu}'; }
alloc_is() { [ "$(alloc)" = "$1" ]; }
slice_uuids() { k get resourceslices -o json | python3 -c 'import json,sys; print(" ".join(sorted(d["attributes"]["uuid"]["string"] for s in json.load(sys.stdin)["items"] for d in s["spec"]["devices"])))'; }
slices_are() { [ "$(slice_uuids)" = "$1" ]; }
metric() { curl -s --cacert "$CA" -H "Authorization: Bearer $TOKEN" "$URL/metrics" | grep -v "^#" | grep -F "$1" | awk '{print $NF}'; }
node_event() { k get events -n default --field-selector "involvedObject.kind=Node,reason=$1" -o name | grep -q .; }
inject() { echo "$*" >>"$FATIA_FAKE_NVML_EVENTS"; }
idx_of() { [ "$1" = "$U0" ] && echo 0 || echo 1; }

pod a
pod b
wait_for 20 phase a Running
wait_for 20 phase b Running
UA=$(gpu_of a)
UB=$(gpu_of b)
[ "$UA" != "$UB" ] && [ -n "$UA" ] && [ -n "$UB" ] || fail "pods a and b share a GPU: $UA $UB"
alloc_is 2 || fail "allocatable $(alloc), want 2"

# ---- hostile: a tenant cannot write the health annotation or the slices ----
"$FATIA" token create --data-dir "$D" --user alice --namespace ml >"$TMP/alice.kc" 2>/dev/null || fail "token"
A() { "$KUBECTL" --kubeconfig "$TMP/alice.kc" "$@"; }
A annotate node h200 "fatia.dev/gpu-health={\"$UA\":{\"reason\":\"x\"}}" >"$TMP/out" 2>&1 &&
    fail "a tenant took a GPU out through the Node's annotation"
grep -q "Forbidden\|forbidden" "$TMP/out" || fail "tenant annotate: $(cat "$TMP/out")"
A patch resourceslice h200-gpu.nvidia.com-0 --type merge -p '{"spec":{"devices":[]}}' >"$TMP/out" 2>&1 &&
    fail "a tenant emptied the node's ResourceSlice"
sleep 1
alloc_is 2 || fail "allocatable $(alloc) after the tenant's attempts, want 2"

# ---- the application XIDs and a single-bit ECC error: ignored ----
for x in 13 31 43 45 68 109; do inject "$(idx_of "$UA") xid $x"; done
inject "$(idx_of "$UA") sbe"
# (the metric read at each try: `wait_for 10 test "$(metric ...)" = 6` read it once, and failed
# whenever the agent had not counted all six by then)
ignored_is() { [ "$(metric "uuid=\"$UA\",kind=\"xid-ignored\"")" = "$1" ]; }
sbe_is() { [ "$(metric "uuid=\"$UA\",kind=\"ecc-single-bit\"")" = "$1" ]; }
wait_for 10 ignored_is 6
wait_for 10 sbe_is 1
sleep 1.5
phase a Running || fail "an application XID stopped pod a"
alloc_is 2 || fail "an application XID took a GPU out: allocatable $(alloc)"
[ "$(metric "fatia_agent_gpu_healthy{uuid=\"$UA\"")" = 1 ] || fail "gauge after ignored XIDs"

# ---- XID 79: the GPU of pod b falls off the bus ----
inject "$(idx_of "$UB") lost"
wait_for 10 phase b Failed
[ "$(k get pod $N b -o jsonpath='{.status.reason}')" = GPUUnhealthy ] || fail "pod b: reason $(k get pod $N b -o jsonpath='{.status.reason}')"
k get events $N --field-selector involvedObject.name=b,reason=GPUUnhealthy -o jsonpath='{.items[0].message}' | grep -q "XID 79" ||
    fail "no GPUUnhealthy Event on pod b"
wait_for 10 alloc_is 1
[ "$(cap)" = 2 ] || fail "capacity $(cap), want 2 (healthy + unhealthy, as the kubelet)"
wait_for 10 slices_are "$UA"
wait_for 10 node_event GPUXidCritical
k get events -n default --field-selector involvedObject.kind=Node,reason=GPUXidCritical -o jsonpath='{.items[0].message}' |
    grep -q "$UB.*fallen off the bus" || fail "the Node's Event does not name the GPU and the XID"
[ "$(metric "fatia_agent_gpu_healthy{uuid=\"$UB\"")" = 0 ] || fail "gauge of the lost GPU"
[ "$(metric "uuid=\"$UB\",kind=\"xid-critical\"")" = 1 ] || fail "critical XID not counted"
phase a Running || fail "pod a, on the healthy GPU, was stopped"
pod c
sleep 2
phase c Pending || fail "pod c was placed with one GPU out and one busy: $(k get pod $N c -o wide)"

# ---- restart: the GPU stays out (the annotation is read back; NVML still refuses it) ----
stop_fatiad
start || finish
sleep 5 # more than the quiet window: a lost GPU must not come back by itself
alloc_is 1 || fail "after a restart allocatable $(alloc), want 1"
slices_are "$UA" || fail "after a restart the slices are $(slice_uuids)"
phase c Pending || fail "pod c placed after the restart"

# ---- the GPU answers again: it returns, pod c runs on it ----
inject "$(idx_of "$UB") found"
wait_for 15 alloc_is 2
wait_for 10 node_event GPUHealthy
wait_for 20 phase c Running
[ "$(gpu_of c)" = "$UB" ] || fail "pod c is not on the recovered GPU"
[ -z "$(k get node h200 -o 'jsonpath={.metadata.annotations.fatia\.dev/gpu-health}')" ] ||
    fail "the annotation stays after recovery"

# ---- a double-bit ECC error on pod a's GPU: out, back by itself after the quiet window ----
inject "$(idx_of "$UA") dbe"
wait_for 10 phase a Failed
[ "$(k get pod $N a -o jsonpath='{.status.reason}')" = GPUUnhealthy ] || fail "pod a: reason"
wait_for 10 alloc_is 1
phase c Running || fail "pod c (other GPU) was stopped by pod a's GPU's error"
wait_for 15 alloc_is 2
[ "$(metric "uuid=\"$UA\",kind=\"ecc-double-bit\"")" = 1 ] || fail "double-bit ECC not counted"

# ---- the NVML wait fails: every GPU out, then back ----
inject wait-error
wait_for 10 alloc_is 0
wait_for 10 phase c Failed
[ "$(metric fatia_agent_gpu_health_wait_errors_total)" = 1 ] || fail "wait error not counted"
wait_for 15 alloc_is 2
[ "$(metric fatia_agent_gpu_health_evictions_total)" -ge 1 ] || fail "evictions not counted"
stop_fatiad
finish
