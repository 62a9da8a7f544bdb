#!/usr/bin/env bash
# tests/cli/apiserver-limitrange-items.sh: LimitRange items of type Pod and PersistentVolumeClaim
# (controller/quota.c's LimitRanger, as kube-apiserver's), with kubectl 1.33: a Pod item bounds
# the pod's totals (min over the summed requests, max over the summed limits, after a Container
# item's defaults), a PersistentVolumeClaim item bounds requests.storage; refused with upstream's
# 403 wording, several reasons at once in [a, b]; within bounds, created.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
agent_setup
trap '[ -n "$FATIAD_PID" ] && kill -9 "$FATIAD_PID" 2>/dev/null; rm -rf "$TMP"' EXIT
D=$TMP/d
FATIAD_CONTROLLERS=1 start_fatiad "$D" --no-agent || exit 1
k create namespace lr >/dev/null || fail "create namespace lr"
cat <<EOF | k -n lr apply -f - >/dev/null || fail "create the LimitRange"
apiVersion: v1
kind: LimitRange
metadata: {name: l}
spec:
  limits:
  - type: Container
    default: {cpu: 300m}
    defaultRequest: {cpu: 100m}
  - type: Pod
    min: {cpu: 150m}
    max: {cpu: 500m}
  - type: PersistentVolumeClaim
    min: {storage: 1Gi}
    max: {storage: 2Gi}
EOF
pod() { # NAME N_CONTAINERS
    {
        printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  containers:\n' "$1"
        for i in $(seq "$2"); do printf '  - {name: c%s, image: busybox}\n' "$i"; done
    } | k -n lr create -f - >"$TMP/out" 2>"$TMP/err"
}
pvc() { # NAME SIZE
    printf 'apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: %s}\nspec:\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: %s}}\n' "$1" "$2" |
        k -n lr create -f - >"$TMP/out" 2>"$TMP/err"
}
# one container: request 100m < the pod's min 150m
pod one 1 && fail "ATTACK SUCCEEDED: a pod under the Pod item's min"
expect_line "$TMP/err" 'pods "one" is forbidden: minimum cpu usage per Pod is 150m, but request is 100m'
# two: 200m requested, 600m limit > max 500m
pod two 2 && fail "ATTACK SUCCEEDED: a pod over the Pod item's max"
expect_line "$TMP/err" 'pods "two" is forbidden: maximum cpu usage per Pod is 500m, but limit is 600m'
# within bounds: 160m requested, 400m limit
cat <<EOF | k -n lr create -f - >"$TMP/out" 2>"$TMP/err" || fail "a pod within the Pod item's bounds: $(cat "$TMP/err")"
apiVersion: v1
kind: Pod
metadata: {name: fits}
spec:
  containers:
  - {name: a, image: busybox, resources: {requests: {cpu: 80m}, limits: {cpu: 200m}}}
  - {name: b, image: busybox, resources: {requests: {cpu: 80m}, limits: {cpu: 200m}}}
EOF
# claims: under, over, within
pvc small 500Mi && fail "ATTACK SUCCEEDED: a claim under the PVC item's min"
expect_line "$TMP/err" 'persistentvolumeclaims "small" is forbidden: minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi'
pvc big 3Gi && fail "ATTACK SUCCEEDED: a claim over the PVC item's max"
expect_line "$TMP/err" 'persistentvolumeclaims "big" is forbidden: maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 3Gi'
pvc ok 1536Mi || fail "a claim within bounds: $(cat "$TMP/err")"
# nothing refused was written
[ "$(k -n lr get pods -o name | sort | tr '\n' ' ')" = "pod/fits " ] || fail "pods: $(k -n lr get pods -o name)"
[ "$(k -n lr get pvc -o name | tr '\n' ' ')" = "persistentvolumeclaim/ok " ] || fail "claims: $(k -n lr get pvc -o name)"
finish
