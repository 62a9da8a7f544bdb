#!/bin/bash
# tests/e2e/notebook.sh: kubeflow.org/v1 Notebooks (workbenches) in a real fatiad with its node
# agent and the walkthrough's fleet, driven with the real kubectl, as a tenant of team-b:
#   - a Notebook naming the hardware profile "Notebook (shared slice)" gets the profile injected
#     into its template (the queue label, the shared slice) and runs as pod <name>-0 through Kueue
#     (a Workload, admitted) on a capped time-slice, with Kubeflow's status (readyReplicas,
#     containerState, conditions) and NB_PREFIX;
#   - kubeflow-resource-stopped stops it (the pod goes, its Workload finishes, team-b's quota
#     usage returns to 0) and removing it starts it again: a new pod that finds the file the first
#     one wrote in its HOME (the persistent home);
#   - a hostile tenant: a template carrying fatia.dev/slices, kueue.x-k8s.io/managed and
#     spec.nodeName gets a pod without them; a GPU Notebook without a queue in a namespace
#     without a default LocalQueue is refused; the profile of a running Notebook cannot change;
#     another namespace cannot read the home (0700, another uid) when fatiad runs as root;
#   - usage: each run of the workbench is a UsageRecord (queue, profile, the shared slice, start
#     and end), which the tenant reads and cannot delete, and which survives a restart of fatiad
#     (`fatia usage` over them, the counter in /metrics);
#   - deleting the Notebook deletes its pod.
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
export FATIAD_CONTROLLERS=1
chmod 711 "$TMP"

e2e_start || { finish; exit 1; }
"$FATIA" token create --data-dir "$TMP/data" --user bob --namespace team-b >"$TMP/bob.kubeconfig" \
    2>/dev/null || fail "fatia token create"
T="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $TMP/bob.kubeconfig -n team-b"

cat >"$TMP/nb.yaml" <<'YAML'
apiVersion: kubeflow.org/v1
kind: Notebook
metadata:
  name: lab
  namespace: team-b
  annotations:
    opendatahub.io/hardware-profile-name: notebook-shared
    opendatahub.io/hardware-profile-namespace: gpu-catalog
spec:
  template:
    metadata:
      labels: {app: lab}
    spec:
      containers:
      - name: lab
        image: quay.io/jupyter/base-notebook
        command:
        - sh
        - -c
        - |
          echo "home=$HOME prefix=$NB_PREFIX gpu=$CUDA_VISIBLE_DEVICES cap=${FATIA_VGPU_MEMORY_LIMIT_0:-none}"
          echo "found: $(cat "$HOME/work.txt" 2>/dev/null || echo nothing)"
          echo "written by $(cat /proc/self/stat | cut -d' ' -f1)" > "$HOME/work.txt"
          exec sleep 600
YAML
$T create -f "$TMP/nb.yaml" >/dev/null || fail "the tenant cannot create a Notebook"
# (wait_until runs its command again: the checks are functions, not words expanded once)
phase_is() { [ "$(jp pod "$1" -n team-b -o jsonpath='{.status.phase}')" = "$2" ]; }
ready_is() { [ "$(jp notebook "$1" -n team-b -o jsonpath='{.status.readyReplicas}')" = "$2" ]; }
gone() { [ -z "$(jp "$@" -o name)" ]; }
wait_until 30 phase_is lab-0 Running
wait_until 10 ready_is lab 1
[ "$(jp notebook lab -n team-b -o jsonpath='{.metadata.labels.kueue\.x-k8s\.io/queue-name}')" = gpu ] ||
    fail "the profile did not give the Notebook its queue"
[ "$(jp notebook lab -n team-b -o jsonpath='{.spec.template.spec.containers[0].resources.limits.nvidia\.com/gpu\.shared}')" = 1 ] ||
    fail "the profile did not give the Notebook's template its shared slice"
[ -n "$(jp notebook lab -n team-b -o jsonpath='{.status.containerState.running.startedAt}')" ] ||
    fail "status.containerState lacks running.startedAt: $(jp notebook lab -n team-b -o jsonpath='{.status}')"
[ "$(jp notebook lab -n team-b -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ] ||
    fail "status.conditions lacks the pod's Ready"
[ "$(jp pod lab-0 -n team-b -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.labels.notebook-name}/{.metadata.labels.app}')" = Notebook/lab/lab ] ||
    fail "pod lab-0: owner, notebook-name or template label wrong"
case "$(jp pod lab-0 -n team-b -o jsonpath='{.metadata.annotations.fatia\.dev/slices}')" in
gpu-0-ts* | gpu-1-ts*) ;;
*) fail "pod lab-0 is not on a time-slice: $(jp pod lab-0 -n team-b -o jsonpath='{.metadata.annotations}')" ;;
esac
wl=$(wl_of team-b lab-0)
[ -n "$wl" ] && [ "$(wl_cond team-b "$wl" Admitted)" = True ] || fail "lab-0 has no admitted Workload ($wl)"
logs_have() { $K logs lab-0 -n team-b 2>/dev/null | grep -qF "$1"; }
wait_until 10 logs_have "found: nothing"
$K logs lab-0 -n team-b >"$TMP/log1"
expect_line "$TMP/log1" "prefix=/notebook/team-b/lab"
grep -q "cap=none" "$TMP/log1" && fail "the shared slice has no memory cap: $(cat "$TMP/log1")"
home=$(sed -n 's/^home=\([^ ]*\) .*/\1/p' "$TMP/log1")
[ "$home" = "$TMP/data/agent/homes/team-b/lab" ] || fail "HOME is '$home', want the notebook's home"
uid1=$(jp pod lab-0 -n team-b -o jsonpath='{.metadata.uid}')
$T get notebooks >"$TMP/out" || fail "kubectl get notebooks"
expect_line "$TMP/out" "READY"

# --- stop: the pod goes, the quota is freed ---
$T annotate notebook lab kubeflow-resource-stopped=2026-01-01T00:00:00Z >/dev/null || fail "annotate stopped"
wait_until 60 gone pod lab-0 -n team-b ||
    { $K get pods,workloads,notebooks -n team-b -o wide; $K get events -n team-b; } >&2
wait_until 10 ready_is lab 0
wl_ended() { # the Workload finished, or was collected with its pod
    [ "$(wl_cond team-b "$wl" Finished)" = True ] || [ -z "$(jp workload "$wl" -n team-b -o name)" ]
}
wait_until 10 wl_ended
cq_admitted_is() { [ "$(jp cq team-b -o jsonpath='{.status.admittedWorkloads}')" = "$1" ]; }
wait_until 10 cq_admitted_is 0
$K get events -n team-b --field-selector reason=Stopped >"$TMP/out"
expect_line "$TMP/out" "Workbench stopped"
# the profile may change now (stopped), not while running (below)

# --- usage: the first run's record, closed by the stop ---
rec_closed() { [ -n "$(jp usagerecords -n team-b -o jsonpath='{.items[?(@.spec.end)].spec.end}')" ]; }
wait_until 10 rec_closed
jp usagerecords -n team-b -o json >"$TMP/recs.json"
python3 -c '
import json, sys
items = json.load(open(sys.argv[1]))["items"]
done = [r for r in items if r["spec"].get("end")]
assert len(done) == 1, items
s = done[0]["spec"]
assert s["clusterQueue"] == "team-b" and s["localQueue"] == "gpu", s
assert s["profile"] == "gpu-catalog/notebook-shared", s
assert s["resources"].get("nvidia.com/gpu.shared") == "1", s
assert s["owner"] == "Pod/lab-0" and s["end"] >= s["start"], s
assert s.get("user") == "bob", s  # the creator of the Notebook, through its Pod and Workload
' "$TMP/recs.json" || fail "the usage record of the first run: $(cat "$TMP/recs.json")"
$T get usagerecords >/dev/null || fail "the tenant cannot read its usage"
$T delete usagerecords --all >"$TMP/out" 2>&1 && fail "the tenant deleted its usage records"
expect_line "$TMP/out" "usage records are written by fatia's usage controller only"
# nor create one: UsageRecords count against no namespace budget (apiserver/cache.c), so a tenant
# that could write them could fill the store past its namespace's cap
printf 'apiVersion: fatia.dev/v1alpha1\nkind: UsageRecord\nmetadata: {name: forged}\nspec: {workload: w, workloadUID: u, start: "2026-12-01T10:00:00Z"}\n' >"$TMP/forged.yaml"
$T create -f "$TMP/forged.yaml" >"$TMP/out" 2>&1 && fail "the tenant created a usage record"
expect_line "$TMP/out" "usage records are written by fatia's usage controller only"

# --- start again: a new pod, same home ---
$T annotate notebook lab kubeflow-resource-stopped- >/dev/null || fail "remove stopped"
wait_until 60 phase_is lab-0 Running ||
    { $K get pods,workloads,notebooks -n team-b; $K get events -n team-b; } >&2
[ "$(jp pod lab-0 -n team-b -o jsonpath='{.metadata.uid}')" != "$uid1" ] || fail "the pod was not made again"
wait_until 10 logs_have "found: written by"

# --- a hostile tenant ---
$T annotate notebook lab opendatahub.io/hardware-profile-name=training-2gpu --overwrite >"$TMP/out" 2>&1 &&
    fail "a running Notebook changed its hardware profile"
expect_line "$TMP/out" "only while stopped"
cat >"$TMP/evil.yaml" <<'YAML'
apiVersion: kubeflow.org/v1
kind: Notebook
metadata: {name: evil, namespace: team-b}
spec:
  template:
    metadata:
      annotations: {fatia.dev/slices: gpu-2, fatia.dev/devices: '{}'}
      labels: {kueue.x-k8s.io/managed: "true", kueue.x-k8s.io/queue-name: nowhere}
    spec:
      nodeName: node-of-mallory
      containers: [{name: c, image: x, command: [sleep, "600"]}]
YAML
$T create -f "$TMP/evil.yaml" >/dev/null || fail "create a GPU-less Notebook"
wait_until 20 jp pod evil-0 -n team-b -o name
jp pod evil-0 -n team-b -o json >"$TMP/evil.json"
grep -q '"fatia.dev/slices": "gpu-2"\|"nodeName": "node-of-mallory"\|kueue.x-k8s.io/managed\|"nowhere"' "$TMP/evil.json" &&
    fail "the template's reserved keys reached the pod: $(cat "$TMP/evil.json")"
sed -e 's/name: evil, namespace: team-b/name: greedy, namespace: team-b/' -e 's/nodeName: node-of-mallory//' \
    -e 's/command:/resources: {limits: {nvidia.com\/gpu: 1}}, command:/' \
    -e '/annotations: {fatia/d' -e '/labels: {kueue/d' "$TMP/evil.yaml" >"$TMP/greedy.yaml"
$T create -f "$TMP/greedy.yaml" >"$TMP/out" 2>&1 && fail "a GPU Notebook without a queue was let in"
expect_line "$TMP/out" "GPUs are given only through a queue"
if [ "$(id -u)" = 0 ]; then
    stat -c '%a %u' "$TMP/data/agent/homes/team-b/lab" >"$TMP/out"
    [ "$(cut -d' ' -f1 "$TMP/out")" = 700 ] && [ "$(cut -d' ' -f2 "$TMP/out")" != 0 ] ||
        fail "the home is not 0700 and the namespace's: $(cat "$TMP/out")"
fi

# --- delete: the pod goes with the Notebook ---
$T delete notebook lab evil >/dev/null || fail "delete notebooks"
wait_until 30 gone pods -n team-b -l notebook-name
[ -d "$TMP/data/agent/homes/team-b/lab" ] || fail "the home went with the Notebook"

# --- usage survives a restart: two closed runs of lab, on a shared slice ---
stop_fatiad
e2e_start || { finish; exit 1; }
recs_closed2() { [ "$($K get usagerecords -n team-b -o json | python3 -c 'import json,sys; print(sum(1 for r in json.load(sys.stdin)["items"] if r["spec"].get("end") and r["spec"]["workload"].startswith("pod-lab-0")))')" = 2 ]; }
wait_until 20 recs_closed2 || $K get usagerecords -n team-b -o yaml >&2
$K get usagerecords -A -o yaml | "$FATIA" usage -f - --by profile -o csv >"$TMP/out" || fail "fatia usage"
grep -q '^gpu-catalog/notebook-shared,nvidia.com/gpu.shared,[0-9.]*,2$' "$TMP/out" ||
    fail "fatia usage lacks the workbench's two runs: $(cat "$TMP/out"; $K get usagerecords -A -o yaml)"
metrics
grep -q '^fatia_usage_resource_seconds_total{namespace="team-b",cluster_queue="team-b",profile="gpu-catalog/notebook-shared",user="bob",resource="nvidia.com/gpu.shared"} [0-9]' "$TMP/metrics" ||
    fail "no usage counter: $(grep fatia_usage "$TMP/metrics")"
stop_fatiad
finish
