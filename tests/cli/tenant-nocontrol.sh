#!/bin/bash
# tests/cli/tenant-nocontrol.sh: the tenant rules hold without the controllers (issue 15,
# "Roles"; docs/apiserver.md). fatiad --no-controllers, a tenant kubeconfig from
# `fatia token create` and the real kubectl; each attack fails the test if it succeeds:
#   1. a status write of a Pod (merge patch, JSON patch, PUT): 403 naming "status"
#   2. fatia.dev/devices set on create and by annotate, fatia.dev/slices by a merge patch: 403
#      naming metadata.annotations[...]
#   3. spec.nodeName on a GPU pod (create; patch of a tenant's own CPU pod is not a GPU pod)
#      : 403 naming spec.nodeName
#   4. a bare GPU pod, one with a queue label, a GPU Job, a DRA claim: 403 naming the field that
#      requests the GPU and saying that GPU work needs the controllers
#   5. the admin's same writes succeed (the admin is not held to the tenant rules)
# The node agent runs (as without --no-agent: it would start what got in). A tenant's pod without
# GPUs is still created (the rules refuse only what they name).
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
trap 'if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID" 2>/dev/null; fi; etcd_cleanup; rm -rf "$TMP"' EXIT

D=$TMP/d
start_fatiad "$D" || exit 1 # the agent runs, as the issue has it: it would start what got in
A="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $KCFG -n team-a"
echo '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a"}}' |
    $KUBECTL_DIR/kubectl.1.33 --kubeconfig "$KCFG" create -f - >"$TMP/out" 2>&1 ||
    fail "admin: create namespace team-a: $(cat "$TMP/out")"
"$BUILD/bin/fatia" token create --data-dir "$D" --user mallory --namespace team-a \
    >"$TMP/mallory.kubeconfig" 2>/dev/null || fail "fatia token create"
T="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $TMP/mallory.kubeconfig -n team-a"

# refused WANT CMD...: the tenant's command fails with a 403 whose message names WANT
refused() {
    local want=$1
    shift
    if "$@" >"$TMP/out" 2>"$TMP/err"; then
        fail "ATTACK SUCCEEDED: $*"
        sed 's/^/  out: /' "$TMP/out" >&2
        return 1
    fi
    grep -qi "forbidden" "$TMP/err" || fail "not a 403: $*: $(cat "$TMP/err")"
    grep -qF -- "$want" "$TMP/err" || fail "the refusal of '$*' does not name '$want': $(cat "$TMP/err")"
    return 0
}
ok() { "$@" >"$TMP/out" 2>"$TMP/err" || fail "refused: $*: $(cat "$TMP/err")"; }

pod() { # NAME RESOURCES-JSON [EXTRA-METADATA-JSON] [EXTRA-SPEC-JSON]
    printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s"%s},"spec":{"restartPolicy":"Never"%s,"containers":[{"name":"main","image":"x","command":["sleep","60"],"resources":%s}]}}' \
        "$1" "${3:+,$3}" "${4:+,$4}" "$2" >"$TMP/$1.json"
    echo "$TMP/$1.json"
}
GPU='{"limits":{"nvidia.com/gpu":"1"}}'
DEV='{"fatia.dev/devices":"{\"podUID\":\"x\",\"devices\":[{\"slice\":\"gpu-0\",\"kind\":\"whole\",\"uuid\":\"GPU-aaaaaaaa-1111-2222-3333-444444444444\"}]}"}'

# a tenant's CPU pod is let in: the rules are not a blanket refusal
ok $T create -f "$(pod cpu '{}')"

# ---- 1. status writes ----
refused "status" $T patch pod cpu --subresource=status --type merge -p '{"status":{"phase":"Running"}}'
refused "status" $T patch pod cpu --subresource=status --type json \
    -p '[{"op":"add","path":"/status","value":{"phase":"Succeeded"}}]'
$T get pod cpu -o json >"$TMP/cpu.json" || fail "tenant: get pod cpu"
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); o.setdefault("status",{})["phase"]="Running"; json.dump(o,open(sys.argv[1],"w"))' "$TMP/cpu.json"
refused "status" $T replace --subresource=status -f "$TMP/cpu.json"
[ "$($A get pod cpu -o jsonpath='{.status.phase}')" != Running ] || fail "the tenant's status write landed"

# ---- 2. reserved annotations ----
refused "metadata.annotations[fatia.dev/devices]" $T create -f "$(pod dev '{}' "\"annotations\":$DEV")"
refused "metadata.annotations[fatia.dev/devices]" $T annotate pod cpu 'fatia.dev/devices={"podUID":"x","devices":[]}'
refused "metadata.annotations[fatia.dev/slices]" $T patch pod cpu --type merge \
    -p '{"metadata":{"annotations":{"fatia.dev/slices":"gpu-0"}}}'
[ -z "$($A get pod cpu -o jsonpath='{.metadata.annotations.fatia\.dev/devices}{.metadata.annotations.fatia\.dev/slices}')" ] || fail "a reserved annotation landed"

# ---- 3. binding a GPU pod ----
refused "spec.nodeName" $T create -f "$(pod bound "$GPU" '' '"nodeName":"box-0"')"
refused "spec.nodeName" $T create -f "$(pod bound2 '{"requests":{"fatia.dev/slice":"1"},"limits":{"fatia.dev/slice":"1"}}' '' '"nodeName":"box-0"')"

# ---- 4. the closed door: GPU work needs the controllers ----
refused "spec.containers[0].resources.limits[nvidia.com/gpu]" $T create -f "$(pod bare "$GPU")"
grep -qF "needs fatia's controllers" "$TMP/err" || fail "the bare GPU pod's refusal does not say why: $(cat "$TMP/err")"
refused "spec.containers[0].resources.limits[nvidia.com/gpu]" \
    $T create -f "$(pod queued "$GPU" '"labels":{"kueue.x-k8s.io/queue-name":"team-a"}')"
refused "spec.resourceClaims" $T create -f "$(pod claim '{}' '' '"resourceClaims":[{"name":"g","resourceClaimName":"c"}]')"
cat >"$TMP/job.yaml" <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: train, labels: {kueue.x-k8s.io/queue-name: team-a}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: main, image: x, command: [sleep, "1"], resources: {limits: {nvidia.com/gpu: "2"}}}
YAML
refused "spec.template.spec.containers[0].resources.limits[nvidia.com/gpu]" $T create -f "$TMP/job.yaml"
$A get pods -o name >"$TMP/pods" || fail "admin: get pods"
[ "$(cat "$TMP/pods")" = pod/cpu ] || fail "pods other than cpu exist: $(cat "$TMP/pods")"

# ---- 5. the admin's same writes succeed ----
ok $A patch pod cpu --subresource=status --type merge -p '{"status":{"phase":"Running"}}'
[ "$($A get pod cpu -o jsonpath='{.status.phase}')" = Running ] || fail "the admin's status write did not land"
ok $A annotate pod cpu 'fatia.dev/devices={"podUID":"x","devices":[]}'
ok $A create -f "$TMP/dev.json"
ok $A create -f "$TMP/bound.json"
[ "$($A get pod bound -o jsonpath='{.spec.nodeName}')" = box-0 ] || fail "the admin's pod is not bound"
ok $A create -f "$TMP/bare.json"
ok $A create -f "$TMP/job.yaml"

stop_fatiad
finish
