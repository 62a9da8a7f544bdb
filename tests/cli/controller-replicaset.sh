#!/bin/bash
# tests/cli/controller-replicaset.sh: the ReplicaSet controller (src/controller/replicaset.c) in
# a real fatiad with its controllers and node agent: a ReplicaSet of 3 pods (real processes)
# gets 3 pods owned by it, all Ready, with status.replicas/readyReplicas 3; a pod deleted by hand
# is replaced (a new name); scaling down to 1 (a merge patch of spec.replicas, what `kubectl
# scale` changes) deletes 2; scaling up to 2 creates 1; a pod of the same labels that the
# ReplicaSet did not create is not counted and not deleted; deleting the ReplicaSet deletes its
# pods (the garbage collector) and nothing else.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
chmod 711 "$TMP" # pods run under a uid of their namespace (docs/agent.md)
k="$KUBECTL_DIR/kubectl.1.33"
FATIAD_CONTROLLERS=1 start_fatiad "$TMP/data" || { finish; exit 1; }
export KUBECONFIG=$KCFG

cat >"$TMP/rs.yaml" <<'YAML'
apiVersion: v1
kind: Namespace
metadata: {name: rs-t}
---
apiVersion: v1
kind: Pod
metadata: {name: stranger, namespace: rs-t, labels: {app: web}}
spec:
  containers: [{name: c, image: busybox, command: [sleep, "600"]}]
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web, namespace: rs-t}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: busybox, command: [sleep, "600"]}]
YAML

# owned_pods: names of the pods whose controller is the ReplicaSet, sorted
owned_pods() {
    "$k" get pods -n rs-t -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.ownerReferences[0].kind} {.metadata.deletionTimestamp}{"\n"}{end}' |
        awk '$2 == "ReplicaSet" && $3 == "" {print $1}' | sort
}

# wait_for DESC CMD...: up to 30 s for CMD to succeed
wait_for() {
    local desc=$1
    shift
    for _ in $(seq 150); do
        "$@" && return 0
        sleep 0.2
    done
    fail "$desc (30 s): $("$k" get rs,pods -n rs-t -o wide 2>&1 | head -8)"
    return 1
}

n_owned() { [ "$(owned_pods | wc -l)" = "$1" ]; }
rs_status() {
    [ "$("$k" get rs web -n rs-t -o jsonpath='{.status.replicas}/{.status.readyReplicas}')" = "$1" ]
}

expect_rc 0 "$k" apply -f "$TMP/rs.yaml"
wait_for "3 pods owned by the ReplicaSet" n_owned 3
wait_for "status 3/3 (replicas/ready)" rs_status 3/3
expect_rc 0 "$k" get rs web -n rs-t
tr -s ' ' <"$TMP/out" | grep -q "^web 3 3 3 " || fail "rs columns: $(cat "$TMP/out")"

# a pod deleted by hand is replaced
before=$(owned_pods)
victim=$(echo "$before" | head -1)
expect_rc 0 "$k" delete pod "$victim" -n rs-t --wait=false
wait_for "the deleted pod replaced" bash -c "[ \"\$($(declare -f owned_pods); k='$k'; owned_pods | grep -vx '$victim' | wc -l)\" = 3 ]"
wait_for "status 3/3 after the replacement" rs_status 3/3

# scale down and up (spec.replicas: what kubectl scale writes)
expect_rc 0 "$k" patch rs web -n rs-t --type merge -p '{"spec":{"replicas":1}}'
wait_for "scaled down to 1" n_owned 1
wait_for "status 1/1" rs_status 1/1
expect_rc 0 "$k" patch rs web -n rs-t --type merge -p '{"spec":{"replicas":2}}'
wait_for "scaled up to 2" n_owned 2

# the stranger with the same labels is neither counted nor touched
expect_rc 0 "$k" get pod stranger -n rs-t -o jsonpath='{.metadata.deletionTimestamp}'
[ -z "$(cat "$TMP/out")" ] || fail "the unowned pod was deleted"

# deleting the ReplicaSet deletes its pods, not the stranger
expect_rc 0 "$k" delete rs web -n rs-t
wait_for "the ReplicaSet's pods deleted" n_owned 0
expect_rc 0 "$k" get pod stranger -n rs-t
stop_fatiad
finish
