#!/bin/bash
# tests/e2e/tenant-attacks.sh: the tenant-attack suite (issue 15 items 2 and 3, and variations),
# with a real fatiad and its controllers, the real kubectl and a tenant kubeconfig from
# `fatia token create`. Every attack is a check that fails the test if the attack succeeds.
# No node agent runs: an attack that got past admission would show as a bound pod, a GPU
# request without a queue, or an un-suspended Job, and the quota invariant
# (tests/e2e/tenantfuzz.py --check) is checked between the groups.
#
#   1. the quota door: a bare Pod (nvidia.com/gpu: 8, other GPU resources, limits only, an init
#      container, a DRA claim, a forged Job owner) is refused with the queue to use; with a
#      LocalQueue "default" it is defaulted onto it and gated; a Job likewise
#   2. binding: spec.nodeName on a GPU pod (create, and patch of a gated pod)
#   3. reserved labels, annotations and finalizers (pods, Job templates, Workloads), every patch
#      type, PUT
#   4. the scheduling gate: JSON patch, merge patch, strategic merge patch, PUT
#   5. un-suspending a queued over-quota Job: merge, strategic, JSON patch, PUT, and the combined
#      patch that drops the queue label; the label alone
#   6. status subresources: Workload (a forged Admitted condition), Job, Pod, LocalQueue,
#      ClusterQueue, ResourceClaim; merge, JSON patch, PUT
#   7. immutability: a gated pod's resources; a running Job's template; an admitted Workload's
#      podSets
#   8. server-side apply goes through the same admission: an apply that un-suspends the queued
#      Job conflicts (409) without force and is refused (403) with force=true
#   9. a race between the tenant's un-suspend and admission: many patches while the Job is
#      being admitted; the invariant holds, and the Job runs only through admission
#  10. the admin is not held to the tenant rules (writes status, binds)
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
export FATIAD_CONTROLLERS=1

e2e_start $NO_AGENT || { finish; exit 1; }
"$BUILD/bin/fatia" token create --data-dir "$TMP/data" --user mallory --namespace team-a \
    >"$TMP/mallory.kubeconfig" 2>/dev/null || fail "fatia token create"
T="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $TMP/mallory.kubeconfig -n team-a"
CHECK="python3 $E2E_DIR/tenantfuzz.py --url $URL --ca $CA --token $TOKEN --check"

# refused CMD... : the tenant's command must fail with a 403 naming what follows in $WANT
refused() {
    "$@" >"$TMP/out" 2>"$TMP/err"
    local rc=$?
    if [ "$rc" = 0 ]; then
        fail "ATTACK SUCCEEDED: $*"
        sed 's/^/  out: /' "$TMP/out" >&2
        return 1
    fi
    grep -qi "forbidden" "$TMP/err" || fail "not a 403: $*: $(cat "$TMP/err")"
    if [ -n "${WANT:-}" ]; then
        grep -qF -- "$WANT" "$TMP/err" || fail "the refusal of '$*' does not name '$WANT': $(cat "$TMP/err")"
    fi
    return 0
}

invariant() {
    $CHECK >"$TMP/inv" 2>&1 || fail "quota invariant broken after $1: $(cat "$TMP/inv")"
}

pod_yaml() { # NAME RESOURCES-JSON [EXTRA-METADATA-JSON] [EXTRA-SPEC-JSON]
    python3 - "$1" "$2" "${3:-null}" "${4:-null}" <<'PY'
import json, sys
name, res, meta, spec = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), json.loads(sys.argv[4])
m = {"name": name, "namespace": "team-a"}
m.update(meta or {})
s = {"restartPolicy": "Never",
     "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "60"], "resources": res}]}
s.update(spec or {})
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": m, "spec": s}))
PY
}
GPU8='{"requests":{"nvidia.com/gpu":"8"},"limits":{"nvidia.com/gpu":"8"}}'
GPU1='{"requests":{"nvidia.com/gpu":"1"},"limits":{"nvidia.com/gpu":"1"}}'
Q='{"labels":{"kueue.x-k8s.io/queue-name":"gpu"}}'

# ---- 1. the quota door ----
WANT='kueue.x-k8s.io/queue-name'
pod_yaml bare "$GPU8" >"$TMP/p.json"
refused $T create -f "$TMP/p.json"
expect_line "$TMP/err" 'rule: door'
expect_line "$TMP/err" 'kubectl get localqueues -n team-a'
pod_yaml bare-lim '{"limits":{"nvidia.com/gpu":"8"}}' >"$TMP/p.json"
refused $T create -f "$TMP/p.json"
pod_yaml bare-mig '{"limits":{"nvidia.com/mig-3g.71gb":"1"}}' >"$TMP/p.json"
refused $T create -f "$TMP/p.json"
pod_yaml bare-fatia '{"limits":{"fatia.dev/gpu-equivalent":"1"}}' >"$TMP/p.json"
refused $T create -f "$TMP/p.json"
pod_yaml bare-init '{}' '{}' '{"initContainers":[{"name":"i","image":"busybox","resources":{"limits":{"nvidia.com/gpu":"8"}}}]}' >"$TMP/p.json"
refused $T create -f "$TMP/p.json"
pod_yaml bare-claim '{}' '{}' '{"resourceClaims":[{"name":"g","resourceClaimTemplateName":"two-gpus"}]}' >"$TMP/p.json"
refused $T create -f "$TMP/p.json"
WANT='metadata.ownerReferences'
pod_yaml fake-job-pod "$GPU8" '{"labels":{"kueue.x-k8s.io/queue-name":"gpu"},"ownerReferences":[{"apiVersion":"batch/v1","kind":"Job","name":"x","uid":"0b3c2d1e-0000-4000-8000-000000000001","controller":true}]}' >"$TMP/p.json"
refused $T create -f "$TMP/p.json"
WANT='kueue.x-k8s.io/queue-name'
cat >"$TMP/job.yaml" <<'EOF'
apiVersion: batch/v1
kind: Job
metadata: {name: bare-job, namespace: team-a}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: c, image: busybox, command: [sleep, "60"], resources: {limits: {nvidia.com/gpu: "8"}}}
EOF
refused $T create -f "$TMP/job.yaml"
$T get pods -o name 2>/dev/null | grep -q . && fail "ATTACK SUCCEEDED: a refused pod exists: $($T get pods -o name)"
# a CPU pod without a queue is not the door's business
pod_yaml cpu-only '{"requests":{"cpu":"100m"}}' >"$TMP/p.json"
expect_rc 0 $T create -f "$TMP/p.json"
# a LocalQueue named default takes such pods: labelled and gated (the admin creates it)
cat >"$TMP/lq.yaml" <<'EOF'
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: default, namespace: team-a}
spec: {clusterQueue: team-a}
EOF
expect_rc 0 $K apply -f "$TMP/lq.yaml"
pod_yaml defaulted "$GPU8" >"$TMP/p.json"
expect_rc 0 $T create -f "$TMP/p.json"
[ "$(jp pod defaulted -n team-a -o jsonpath='{.metadata.labels.kueue\.x-k8s\.io/queue-name}')" = default ] ||
    fail "the bare GPU pod did not get the LocalQueue default"
[ "$(jp pod defaulted -n team-a -o jsonpath='{.spec.schedulingGates[0].name}')" = kueue.x-k8s.io/admission ] ||
    fail "the defaulted pod is not gated"
expect_rc 0 $T create -f "$TMP/job.yaml"
[ "$(jp job bare-job -n team-a -o jsonpath='{.spec.suspend}')" = true ] || fail "the defaulted Job is not suspended"
# the admin's choice: SchedulerConfig turns the door off for namespaces it does not select
cat >"$TMP/sc.yaml" <<'EOF'
apiVersion: fatia.dev/v1alpha1
kind: SchedulerConfig
metadata: {name: default}
spec:
  localQueueDefaulting: false
EOF
expect_rc 0 $K apply -f "$TMP/sc.yaml"
sleep 0.3
pod_yaml no-default "$GPU8" >"$TMP/p.json"
refused $T create -f "$TMP/p.json"
expect_rc 0 $K delete schedulerconfig default
expect_rc 0 $K delete lq default -n team-a
expect_rc 0 $K delete pod defaulted -n team-a --wait=false
expect_rc 0 $K delete job bare-job -n team-a --wait=false
invariant "the door"

# ---- 2. binding ----
WANT='spec.nodeName'
pod_yaml selfbound "$GPU1" "$Q" '{"nodeName":"box-0"}' >"$TMP/p.json"
refused $T create -f "$TMP/p.json"
expect_line "$TMP/err" 'rule: bind'
pod_yaml gated "$GPU8" '{"labels":{"kueue.x-k8s.io/queue-name":"gpu"},"annotations":{"note":"x"}}' >"$TMP/p.json"
expect_rc 0 $T create -f "$TMP/p.json"
refused $T patch pod gated --type=merge -p '{"spec":{"nodeName":"box-0"}}'
refused $T patch pod gated --type=json -p '[{"op":"add","path":"/spec/nodeName","value":"box-0"}]'
refused $T patch pod gated --type=strategic -p '{"spec":{"nodeName":"box-0"}}'

# ---- 3. reserved labels, annotations, finalizers ----
for kv in 'annotations fatia.dev/devices gpu-9:GPU-0000:0' 'annotations fatia.dev/slices gpu-2' \
    'annotations fatia.dev/injected {}' 'labels kueue.x-k8s.io/managed true' \
    'labels kueue.x-k8s.io/podset main' 'labels kueue.x-k8s.io/job-uid x'; do
    set -- $kv
    WANT="metadata.$1[$2]"
    meta=$(python3 -c "
import json, sys
m = {'labels': {'kueue.x-k8s.io/queue-name': 'gpu'}}
m.setdefault(sys.argv[1], {})[sys.argv[2]] = sys.argv[3]
print(json.dumps(m))" "$1" "$2" "$3")
    pod_yaml reserved "$GPU1" "$meta" >"$TMP/p.json"
    refused $T create -f "$TMP/p.json"
    # a value the gated pod does not have already (kueue-defaults set kueue.x-k8s.io/managed)
    p=$(python3 -c "import json,sys; print(json.dumps({'metadata':{sys.argv[1]:{sys.argv[2]:sys.argv[3]}}}))" "$1" "$2" "$3-x")
    refused $T patch pod gated --type=merge -p "$p"
    refused $T patch pod gated --type=strategic -p "$p"
    key=$(echo "$2" | sed 's,~,~0,g; s,/,~1,g')
    refused $T patch pod gated --type=json -p "[{\"op\":\"add\",\"path\":\"/metadata/$1/$key\",\"value\":\"$3-x\"}]"
done
# a CPU pod may not carry a device annotation either (the agent would open that GPU)
WANT='metadata.annotations[fatia.dev/devices]'
pod_yaml cpudev '{}' '{"annotations":{"fatia.dev/devices":"gpu-2"}}' '{"nodeName":"box-0"}' >"$TMP/p.json"
refused $T create -f "$TMP/p.json"
# PUT with a forged annotation
$T get pod gated -o json | python3 -c "import json,sys; o=json.load(sys.stdin); o['metadata'].setdefault('annotations',{})['fatia.dev/devices']='gpu-2'; print(json.dumps(o))" >"$TMP/put.json"
refused $T replace -f "$TMP/put.json"
# reserved finalizers: removed or added
WANT='metadata.finalizers'
refused $T patch pod gated --type=json -p '[{"op":"remove","path":"/metadata/finalizers"}]'
refused $T patch pod gated --type=merge -p '{"metadata":{"finalizers":null}}'
refused $T patch pod cpu-only --type=merge -p '{"metadata":{"finalizers":["fatia.dev/agent"]}}'
# a Job's pod template and a Workload's pod sets
WANT='spec.template.metadata.annotations[fatia.dev/devices]'
cat >"$TMP/tjob.yaml" <<'EOF'
apiVersion: batch/v1
kind: Job
metadata: {name: tjob, namespace: team-a, labels: {kueue.x-k8s.io/queue-name: gpu}}
spec:
  template:
    metadata: {annotations: {fatia.dev/devices: "gpu-2"}}
    spec:
      restartPolicy: Never
      containers:
      - {name: c, image: busybox, command: [sleep, "60"], resources: {limits: {nvidia.com/gpu: "1"}}}
EOF
refused $T create -f "$TMP/tjob.yaml"
cat >"$TMP/wl.yaml" <<'EOF'
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: forged, namespace: team-a}
spec:
  queueName: gpu
  podSets:
  - name: main
    count: 1
    template:
      metadata: {annotations: {fatia.dev/slices: "gpu-2"}}
      spec:
        containers:
        - {name: c, image: busybox, resources: {requests: {nvidia.com/gpu: "1"}}}
EOF
WANT='spec.podSets[0].template.metadata.annotations[fatia.dev/slices]'
refused $T create -f "$TMP/wl.yaml"
invariant "reserved fields"

# ---- 4. the scheduling gate ----
WANT='spec.schedulingGates'
refused $T patch pod gated --type=json -p '[{"op":"remove","path":"/spec/schedulingGates/0"}]'
refused $T patch pod gated --type=json -p '[{"op":"remove","path":"/spec/schedulingGates"}]'
refused $T patch pod gated --type=merge -p '{"spec":{"schedulingGates":[]}}'
refused $T patch pod gated --type=merge -p '{"spec":{"schedulingGates":null}}'
refused $T patch pod gated --type=strategic -p '{"spec":{"schedulingGates":[{"$patch":"delete","name":"kueue.x-k8s.io/admission"}]}}'
refused $T patch pod gated --type=strategic -p '{"spec":{"$setElementOrder/schedulingGates":[],"schedulingGates":null}}'
$T get pod gated -o json | python3 -c "import json,sys; o=json.load(sys.stdin); o['spec'].pop('schedulingGates',None); print(json.dumps(o))" >"$TMP/put.json"
refused $T replace -f "$TMP/put.json"
[ "$(jp pod gated -n team-a -o jsonpath='{.spec.schedulingGates[0].name}')" = kueue.x-k8s.io/admission ] ||
    fail "ATTACK SUCCEEDED: the gate is gone"
[ -z "$(jp pod gated -n team-a -o jsonpath='{.spec.nodeName}')" ] || fail "ATTACK SUCCEEDED: the over-quota pod is bound"
# nor may its queue change (the workload was made for that queue)
WANT='rule: queue'
refused $T label pod gated kueue.x-k8s.io/queue-name=other --overwrite

# ---- 5. un-suspending a queued Job ----
cat >"$TMP/jq.yaml" <<'EOF'
apiVersion: batch/v1
kind: Job
metadata: {name: jq, namespace: team-a, labels: {kueue.x-k8s.io/queue-name: gpu}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: c, image: busybox, command: [sleep, "60"], resources: {limits: {nvidia.com/gpu: "8"}}}
EOF
expect_rc 0 $T create -f "$TMP/jq.yaml"
# a hand-made Workload for one's own Job (1 GPU for a Job that runs 8)
WANT='metadata.ownerReferences'
JUID=$($T get job jq -o jsonpath='{.metadata.uid}' 2>/dev/null)
cat >"$TMP/wl2.yaml" <<EOF
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: forged-owned
  namespace: team-a
  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: jq, uid: "${JUID:-0b3c2d1e-0000-4000-8000-000000000002}", controller: true}]
spec:
  queueName: gpu
  podSets:
  - name: main
    count: 1
    template:
      spec:
        containers:
        - {name: c, image: busybox, resources: {requests: {nvidia.com/gpu: "1"}}}
EOF
refused $T create -f "$TMP/wl2.yaml"
WANT='spec.suspend'
refused $T patch job jq --type=merge -p '{"spec":{"suspend":false}}'
expect_line "$TMP/err" 'rule: suspend'
refused $T patch job jq --type=strategic -p '{"spec":{"suspend":false}}'
refused $T patch job jq --type=json -p '[{"op":"replace","path":"/spec/suspend","value":false}]'
refused $T patch job jq --type=json -p '[{"op":"remove","path":"/spec/suspend"}]'
# the combined patch: refused by the queue rule (the label) or the suspend rule
WANT='rule: '
refused $T patch job jq --type=merge -p '{"metadata":{"labels":{"kueue.x-k8s.io/queue-name":null}},"spec":{"suspend":false}}'
refused $T patch job jq --type=json -p '[{"op":"remove","path":"/metadata/labels/kueue.x-k8s.io~1queue-name"},{"op":"replace","path":"/spec/suspend","value":false}]'
$T get job jq -o json | python3 -c "import json,sys; o=json.load(sys.stdin); o['spec']['suspend']=False; del o['metadata']['labels']['kueue.x-k8s.io/queue-name']; print(json.dumps(o))" >"$TMP/put.json"
refused $T replace -f "$TMP/put.json"
WANT='kueue.x-k8s.io/queue-name'
refused $T patch job jq --type=merge -p '{"metadata":{"labels":{"kueue.x-k8s.io/queue-name":null}}}'
refused $T label job jq kueue.x-k8s.io/queue-name-
[ "$(jp job jq -n team-a -o jsonpath='{.spec.suspend}')" = true ] || fail "ATTACK SUCCEEDED: the queued Job runs"
[ -z "$(pods_of_job team-a jq)" ] || fail "ATTACK SUCCEEDED: the queued Job has pods"
# a queued Job's template may not grow (its workload was made for the first size)
WANT='spec.template.spec'
refused $T patch job jq --type=json -p '[{"op":"replace","path":"/spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu","value":"9"}]'
expect_rc 0 $T patch job jq --type=merge -p '{"spec":{"template":{"spec":{"nodeSelector":{"zone":"a"}}}}}'
# a tenant may suspend its own Job (that is safe)
invariant "un-suspend"

# ---- 6. status subresources ----
WANT='status' # RBAC (edit reads status only) or the tenant rule (rule: status)
wait_until 20 out_nonempty wl_of team-a jq
WL=$(wl_of team-a jq)
# the queued Job's Workload cut to nothing before admission (it would be admitted for 0 GPUs)
WANT='spec.podSets'
refused $T patch workload "$WL" --type=json -p '[{"op":"replace","path":"/spec/podSets/0/count","value":0}]'
refused $T patch workload "$WL" --type=merge -p '{"spec":{"podSets":[{"name":"main","count":1,"template":{"spec":{"containers":[{"name":"c","image":"busybox"}]}}}]}}'
WANT='status' # RBAC (edit reads status only) or the tenant rule (rule: status)
refused $T patch workload "$WL" --subresource=status --type=merge \
    -p '{"status":{"conditions":[{"type":"QuotaReserved","status":"True","reason":"x","message":"x","lastTransitionTime":"2026-01-01T00:00:00Z"},{"type":"Admitted","status":"True","reason":"x","message":"x","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}'
refused $T patch workload "$WL" --subresource=status --type=json \
    -p '[{"op":"add","path":"/status/conditions","value":[{"type":"Admitted","status":"True","reason":"x","message":"x","lastTransitionTime":"2026-01-01T00:00:00Z"}]}]'
$T get workload "$WL" -o json | python3 -c "import json,sys; o=json.load(sys.stdin); o.setdefault('status',{})['conditions']=[{'type':'Admitted','status':'True','reason':'x','message':'x','lastTransitionTime':'2026-01-01T00:00:00Z'}]; print(json.dumps(o))" >"$TMP/put.json"
refused $T replace --subresource=status -f "$TMP/put.json"
refused $T patch job jq --subresource=status --type=merge -p '{"status":{"active":1}}'
refused $T patch pod gated --subresource=status --type=merge -p '{"status":{"phase":"Running"}}'
refused $T patch pod cpu-only --subresource=status --type=merge -p '{"status":{"phase":"Succeeded"}}'
refused $T patch localqueue gpu --subresource=status --type=merge -p '{"status":{"pendingWorkloads":0}}'
# cluster-scoped status: refused already by the token rules
AS_TOKEN=$(awk '$2 == "mallory" {print $1}' "$TMP/data/tokens") api PATCH \
    /apis/kueue.x-k8s.io/v1beta2/clusterqueues/team-a/status \
    -H 'Content-Type: application/merge-patch+json' -d '{"status":{"admittedWorkloads":0}}'
[ "$CODE" = 403 ] || fail "ATTACK SUCCEEDED: a tenant wrote a ClusterQueue's status ($CODE)"
[ "$(wl_cond team-a "$WL" Admitted)" != True ] || fail "ATTACK SUCCEEDED: the forged Admitted condition stands"
[ "$(jp job jq -n team-a -o jsonpath='{.spec.suspend}')" = true ] || fail "ATTACK SUCCEEDED: the queued Job runs"
invariant "status"

# ---- 7. immutability ----
WANT='resources'
refused $T patch pod gated --type=json -p '[{"op":"replace","path":"/spec/containers/0/resources/limits/nvidia.com~1gpu","value":"1"}]'
# ---- 8. server-side apply: the same admission as every write ----
AS_TOKEN=$(awk '$2 == "mallory" {print $1}' "$TMP/data/tokens") api PATCH \
    "/apis/batch/v1/namespaces/team-a/jobs/jq?fieldManager=m" \
    -H 'Content-Type: application/apply-patch+yaml' --data-binary $'apiVersion: batch/v1\nkind: Job\nmetadata: {name: jq}\nspec: {suspend: false}\n'
[ "$CODE" = 409 ] || [ "$CODE" = 403 ] || fail "ATTACK SUCCEEDED? an apply patch answered $CODE"
AS_TOKEN=$(awk '$2 == "mallory" {print $1}' "$TMP/data/tokens") api PATCH \
    "/apis/batch/v1/namespaces/team-a/jobs/jq?fieldManager=m&force=true" \
    -H 'Content-Type: application/apply-patch+yaml' --data-binary $'apiVersion: batch/v1\nkind: Job\nmetadata: {name: jq}\nspec: {suspend: false}\n'
[ "$CODE" = 403 ] || fail "ATTACK SUCCEEDED? a forced apply patch answered $CODE: $(cat "$TMP/body")"
[ "$(jp job jq -n team-a -o jsonpath='{.spec.suspend}')" = true ] || fail "ATTACK SUCCEEDED: apply un-suspended the Job"
# an apply that creates: a bare GPU pod with spec.nodeName meets the quota door and the bind rule
AS_TOKEN=$(awk '$2 == "mallory" {print $1}' "$TMP/data/tokens") api PATCH \
    "/api/v1/namespaces/team-a/pods/ssa-gpu?fieldManager=m&force=true" \
    -H 'Content-Type: application/apply-patch+yaml' --data-binary $'apiVersion: v1\nkind: Pod\nmetadata: {name: ssa-gpu}\nspec:\n  nodeName: box-0\n  containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: "1"}}}]\n'
[ "$CODE" = 403 ] || fail "ATTACK SUCCEEDED? an apply creating a bound GPU pod answered $CODE: $(cat "$TMP/body")"

# ---- 9. a race between un-suspend and admission ----
expect_rc 0 $K delete job jq -n team-a --wait=false
expect_rc 0 $K delete pod gated -n team-a --wait=false
sed 's/name: jq/name: race/; s/nvidia.com\/gpu: "8"/nvidia.com\/gpu: "1"/' "$TMP/jq.yaml" >"$TMP/race.yaml"
: >"$TMP/race.log"
(for _ in $(seq 40); do
    $T patch job race --type=merge -p '{"spec":{"suspend":false}}' >>"$TMP/race.log" 2>&1
done) &
racer=$!
expect_rc 0 $T create -f "$TMP/race.yaml"
wait $racer
# (kubectl says "patched" also when the controller changed the Job between its GET and the
# PATCH, so the outcome is what is checked: the Job runs only once admitted, and the invariant)
wait_until 20 is_true wl_cond team-a "$(wl_of team-a race)" QuotaReserved
# the same race against a Job that never fits: it must stay suspended, with no pod
sed 's/name: jq/name: race-big/' "$TMP/jq.yaml" >"$TMP/race-big.yaml"
(for _ in $(seq 40); do
    $T patch job race-big --type=merge -p '{"spec":{"suspend":false}}' >/dev/null 2>&1
done) &
racer=$!
expect_rc 0 $T create -f "$TMP/race-big.yaml"
wait $racer
[ "$(jp job race-big -n team-a -o jsonpath='{.spec.suspend}')" = true ] ||
    fail "ATTACK SUCCEEDED: a racing un-suspend ran the over-quota Job"
[ -z "$(pods_of_job team-a race-big)" ] || fail "ATTACK SUCCEEDED: the over-quota Job has pods"
wait_until 20 has_bound_pod team-a race
invariant "the race"
# the queue of a running Job may not change
WANT='kueue.x-k8s.io/queue-name'
refused $T label job race kueue.x-k8s.io/queue-name=other --overwrite
# nor the template, nor an admitted Workload's pod sets
WANT='spec.template'
refused $T patch job race --type=json -p '[{"op":"replace","path":"/spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu","value":"2"}]'
WL=$(wl_of team-a race)
WANT='spec.podSets'
refused $T patch workload "$WL" --type=json -p '[{"op":"replace","path":"/spec/podSets/0/count","value":0}]'
# deleting the admitted Workload would release the quota while the pod holds its GPU
WANT='rule: owner'
refused $T delete workload "$WL" --wait=false
refused $T delete workloads --all --wait=false
[ -n "$(wl_of team-a race)" ] || fail "ATTACK SUCCEEDED: the admitted Workload is gone"
# the pod of an admitted Job: no gate to remove, no devices to forge, no status to write
P=$(pod_of_job team-a race)
WANT='metadata.annotations[fatia.dev/devices]'
refused $T annotate pod "$P" fatia.dev/devices=gpu-0:GPU-x --overwrite
WANT='status' # RBAC (edit reads status only) or the tenant rule (rule: status)
refused $T patch pod "$P" --subresource=status --type=merge -p '{"status":{"phase":"Succeeded"}}'
WANT='metadata.finalizers'
refused $T patch pod "$P" --type=json -p '[{"op":"remove","path":"/metadata/finalizers"}]'
invariant "the admitted Job"

# a LocalQueue of one's own that points at another team's ClusterQueue: never admitted there
# (the ClusterQueue's namespaceSelector), so the Job stays suspended
cat >"$TMP/steal.yaml" <<'EOF'
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: steal, namespace: team-a}
spec: {clusterQueue: team-b}
EOF
expect_rc 0 $T create -f "$TMP/steal.yaml"
sed 's/name: jq/name: stealer/; s/queue-name: gpu/queue-name: steal/; s/nvidia.com\/gpu: "8"/nvidia.com\/gpu: "1"/' "$TMP/jq.yaml" >"$TMP/stealer.yaml"
expect_rc 0 $T create -f "$TMP/stealer.yaml"
sleep 3
[ "$(jp job stealer -n team-a -o jsonpath='{.spec.suspend}')" = true ] ||
    fail "ATTACK SUCCEEDED: a Job ran on another team's ClusterQueue through a LocalQueue of its own"
invariant "another team's ClusterQueue"

# ---- 10. the admin is not held to the tenant rules ----
set_phase team-a "$P" Running || fail "the admin could not write a pod's status"
stop_fatiad
finish
