#!/bin/bash
# tests/e2e/creator.sh: usage per user (issue 20): fatia.dev/creator, set by fatiad from the
# authenticated user (src/apiserver/creator.c), carried from a Job to its Workload and into its
# UsageRecord, shown by `fatia usage --by user` and the counter's user label, and kept across a
# restart. Real fatiad with its controllers, the real kubectl, two tenant kubeconfigs from
# `fatia token create` (alice and mallory, both of team-a). No node agent: the test plays it.
#
# Every forgery is an attack that fails the test if it gets through:
#   1. create with the annotation naming alice (mallory's Job, Pod, Notebook, InferenceService):
#      403 naming metadata.annotations[fatia.dev/creator]
#   2. on alice's Job, mallory (who may edit team-a's objects) tries: annotate --overwrite, a
#      merge patch, a JSON patch (replace and remove), a strategic merge patch, a PUT of the
#      object with another value, server-side apply with force; after each the value is still
#      alice (a removal gives it back, any other value is a 403)
#   3. a pod template that names alice: the Job's pod and Workload get mallory, not the template's
#   4. mallory's Job is charged to mallory, alice's to alice: the Workload's annotation, the
#      UsageRecord's spec.user, `fatia usage --by user` (one group each), the counter's label;
#      a restart of fatiad keeps them
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
export FATIAD_CONTROLLERS=1
MK="$E2E_DIR/mkjob"
ANN=fatia.dev/creator

e2e_start $NO_AGENT || { finish; exit 1; }
for u in alice mallory; do
    "$BUILD/bin/fatia" token create --data-dir "$TMP/data" --user $u --namespace team-a \
        >"$TMP/$u.kubeconfig" 2>/dev/null || fail "fatia token create $u"
done
TA="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $TMP/alice.kubeconfig -n team-a"
TM="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $TMP/mallory.kubeconfig -n team-a"

refused() {
    if "$@" >"$TMP/out" 2>"$TMP/err"; then
        fail "ATTACK SUCCEEDED: $*"
        return 1
    fi
    grep -qi forbidden "$TMP/err" || fail "not a 403: $*: $(cat "$TMP/err")"
    grep -qF "metadata.annotations[$ANN]" "$TMP/err" ||
        fail "the refusal of '$*' does not name the field: $(cat "$TMP/err")"
}
creator() { # KIND NAME
    $K get "$1" "$2" -n team-a -o jsonpath="{.metadata.annotations.fatia\.dev/creator}" 2>/dev/null
}
is_creator() { # WANT KIND NAME
    local got
    got=$(creator "$2" "$3")
    [ "$got" = "$1" ] || fail "$2 $3: creator '$got', want '$1'"
}

# ---- 1. forged on create ----
$MK team-a forged notebook-shared "" "true" | sed "s|^  annotations:|  annotations:\n    $ANN: alice|" >"$TMP/forged.yaml"
refused $TM create -f "$TMP/forged.yaml"
printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","annotations":{"%s":"alice"}},"spec":{"containers":[{"name":"m","image":"x"}]}}' \
    $ANN >"$TMP/pod.json"
refused $TM create -f "$TMP/pod.json"
printf '{"apiVersion":"kubeflow.org/v1","kind":"Notebook","metadata":{"name":"nb","annotations":{"%s":"alice"}},"spec":{"template":{"spec":{"containers":[{"name":"nb","image":"x"}]}}}}' \
    $ANN >"$TMP/nb.json"
refused $TM create -f "$TMP/nb.json"
printf '{"apiVersion":"serving.kserve.io/v1beta1","kind":"InferenceService","metadata":{"name":"is","annotations":{"%s":"alice"}},"spec":{"predictor":{"model":{"modelFormat":{"name":"x"},"storageUri":"pvc://m/x"}}}}' \
    $ANN >"$TMP/is.json"
refused $TM create -f "$TMP/is.json"
$K get jobs,pods,notebooks,inferenceservices -n team-a -o name >"$TMP/out" 2>&1
grep -q . "$TMP/out" && fail "a refused create left something: $(cat "$TMP/out")"
# server-side apply is a create too
refused $TM apply --server-side -f "$TMP/pod.json"
# naming oneself is allowed (a manifest exported by its own creator)
sed "s|$ANN: alice|$ANN: mallory|" "$TMP/forged.yaml" | $TM create -f - >"$TMP/out" 2>&1 ||
    fail "mallory naming herself: $(cat "$TMP/out")"
is_creator mallory job forged
$K delete job forged -n team-a >/dev/null 2>&1

# ---- 2. alice's Job; mallory tries to take it over ----
$MK team-a train-alice notebook-shared "" "sleep 600" | $TA create -f - >"$TMP/out" 2>&1 ||
    fail "alice's Job: $(cat "$TMP/out")"
is_creator alice job train-alice
refused $TM annotate --overwrite job train-alice $ANN=mallory
refused $TM patch job train-alice --type merge -p "{\"metadata\":{\"annotations\":{\"$ANN\":\"mallory\"}}}"
refused $TM patch job train-alice --type json -p "[{\"op\":\"replace\",\"path\":\"/metadata/annotations/fatia.dev~1creator\",\"value\":\"mallory\"}]"
refused $TM patch job train-alice --type strategic -p "{\"metadata\":{\"annotations\":{\"$ANN\":\"mallory\"}}}"
$TM get job train-alice -o json | sed "s|\"$ANN\": \"alice\"|\"$ANN\": \"mallory\"|" >"$TMP/put.json"
refused $TM replace -f "$TMP/put.json"
$TM get job train-alice -o json | python3 -c '
import json, sys
j = json.load(sys.stdin)
out = {"apiVersion": "batch/v1", "kind": "Job",
       "metadata": {"name": j["metadata"]["name"], "annotations": {"fatia.dev/creator": "mallory"}}}
print(json.dumps(out))' >"$TMP/apply.json"
refused $TM apply --server-side --force-conflicts --field-manager=mallory -f "$TMP/apply.json"
is_creator alice job train-alice
# removals: the value comes back (the write itself may pass: it changes nothing else)
$TM patch job train-alice --type merge -p "{\"metadata\":{\"annotations\":{\"$ANN\":null}}}" >/dev/null 2>&1
is_creator alice job train-alice
$TM patch job train-alice --type json -p '[{"op":"remove","path":"/metadata/annotations/fatia.dev~1creator"}]' >/dev/null 2>&1
is_creator alice job train-alice
$TM annotate job train-alice $ANN- >/dev/null 2>&1
is_creator alice job train-alice
# even the admin does not rewrite it
$K annotate --overwrite job train-alice -n team-a $ANN=mallory >"$TMP/out" 2>&1 &&
    fail "the admin changed the creator"
is_creator alice job train-alice

# ---- 3. a template that names alice ----
$MK team-a train-mallory notebook-shared "" "sleep 600" |
    sed "s|^    spec:|    metadata: {annotations: {$ANN: alice}}\n    spec:|" >"$TMP/tmpl.yaml"
grep -q "$ANN: alice" "$TMP/tmpl.yaml" || fail "the template fixture lacks the annotation"
if $TM create -f "$TMP/tmpl.yaml" >"$TMP/out" 2>"$TMP/err"; then
    : # let in (the template is the tenant's): what its pod and Workload get is checked below
else
    grep -qi forbidden "$TMP/err" || fail "the template Job: $(cat "$TMP/err")"
    sed "/metadata: {annotations: {$ANN: alice}}/d" "$TMP/tmpl.yaml" | $TM create -f - >/dev/null 2>&1 ||
        fail "mallory's Job"
fi
is_creator mallory job train-mallory

# ---- 4. the Workloads, their pods, their records ----
wl_alice() { [ -n "$(wl_of team-a train-alice)" ]; }
wl_mallory() { [ -n "$(wl_of team-a train-mallory)" ]; }
wait_until 20 wl_alice
wait_until 20 wl_mallory
is_creator alice workload "$(wl_of team-a train-alice)"
is_creator mallory workload "$(wl_of team-a train-mallory)"
has_pods() { [ -n "$(pod_of_job team-a train-alice)" ] && [ -n "$(pod_of_job team-a train-mallory)" ]; }
wait_until 30 has_pods
is_creator alice pod "$(pod_of_job team-a train-alice)"
is_creator mallory pod "$(pod_of_job team-a train-mallory)"
# the tenant cannot move its pod's or Workload's creator either
refused $TM annotate --overwrite pod "$(pod_of_job team-a train-mallory)" $ANN=alice
refused $TM annotate --overwrite workload "$(wl_of team-a train-mallory)" $ANN=alice

recs() { # the users of the records of train-alice's and train-mallory's Workloads
    $K get usagerecords -n team-a -o jsonpath='{range .items[*]}{.spec.workload} {.spec.user}{"\n"}{end}' 2>/dev/null |
        awk '$1 ~ /^job-train-/ {print $2}' | sort
}
two_recs() { [ "$(recs | tr '\n' ' ')" = "alice mallory " ]; }
wait_until 30 two_recs || $K get usagerecords -n team-a -o yaml >&2

check_usage() {
    $K get usagerecords -A -o yaml | "$FATIA" usage -f - --by user -o csv >"$TMP/usage.csv" ||
        fail "fatia usage --by user"
    grep -q '^alice,nvidia.com/gpu.shared,' "$TMP/usage.csv" || fail "no alice row: $(cat "$TMP/usage.csv")"
    grep -q '^mallory,nvidia.com/gpu.shared,' "$TMP/usage.csv" || fail "no mallory row: $(cat "$TMP/usage.csv")"
    grep -v '^user,' "$TMP/usage.csv" | grep -qv '^\(alice\|mallory\),' &&
        fail "usage of someone else: $(cat "$TMP/usage.csv")"
    metrics
    grep -q "^fatia_usage_resource_seconds_total{namespace=\"team-a\",cluster_queue=\"[^\"]*\",profile=\"[^\"]*\",user=\"alice\",resource=\"nvidia.com/gpu.shared\"} [0-9]" "$TMP/metrics" ||
        fail "no counter for alice: $(grep fatia_usage "$TMP/metrics")"
    grep -q "user=\"mallory\",resource=\"nvidia.com/gpu.shared\"} [0-9]" "$TMP/metrics" ||
        fail "no counter for mallory: $(grep fatia_usage "$TMP/metrics")"
}
check_usage

# ---- a restart keeps the creators and the records ----
stop_fatiad
start_fatiad "$TMP/data" --fleet examples/fleet/ $NO_AGENT || { finish; exit 1; }
K="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $KCFG"
is_creator alice job train-alice
is_creator mallory workload "$(wl_of team-a train-mallory)"
wait_until 20 two_recs
check_usage
stop_fatiad
finish
