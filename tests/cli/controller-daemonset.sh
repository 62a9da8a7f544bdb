#!/bin/bash
# tests/cli/controller-daemonset.sh: the DaemonSet controller (src/controller/daemonset.c) in a
# real fatiad with its node agent, on its one (simulated) node box-0:
#   - a DaemonSet without a nodeSelector runs one pod on the node (a real process), bound there
#     (spec.nodeName box-0), status 1/1;
#   - on a second node made by hand (edge-1): a pod of the DaemonSet without a selector; one with
#     a nodeSelector the node lacks gets none, gets one when the node is labelled, loses it when
#     the label goes; a NoExecute taint not tolerated evicts, a NoSchedule one does not; the
#     node deleted: its pod deleted;
#   - a rolling update (new image) replaces the pod (a new revision label);
#   - deleting the DaemonSet deletes its pods.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
chmod 711 "$TMP"
k="$KUBECTL_DIR/kubectl.1.33"
FATIAD_CONTROLLERS=1 start_fatiad "$TMP/data" || { finish; exit 1; }
export KUBECONFIG=$KCFG

wait_for() {
    local secs=$1 desc=$2
    shift 2
    for _ in $(seq $((secs * 5))); do
        "$@" && return 0
        sleep 0.2
    done
    fail "$desc ($secs s): $("$k" get ds,pods -n ds-t -o wide 2>&1 | head -20)"
    return 1
}
node=box-0
has_node() { "$k" get node "$node" >/dev/null 2>&1; }
wait_for 20 "the node" has_node

cat >"$TMP/ds.yaml" <<'YAML'
apiVersion: v1
kind: Namespace
metadata: {name: ds-t}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: all, namespace: ds-t}
spec:
  selector: {matchLabels: {app: all}}
  template:
    metadata: {labels: {app: all}}
    spec:
      containers: [{name: c, image: busybox, command: [sleep, "600"]}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: sel, namespace: ds-t}
spec:
  selector: {matchLabels: {app: sel}}
  template:
    metadata: {labels: {app: sel}}
    spec:
      nodeSelector: {ds-test: "on"}
      containers: [{name: c, image: busybox, command: [sleep, "600"]}]
YAML
expect_rc 0 "$k" apply -f "$TMP/ds.yaml"
pods_of() { "$k" get pods -n ds-t -l "app=$1" -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName} {.metadata.deletionTimestamp}{"\n"}{end}' | awk '$3 == ""'; }
n_pods() { [ "$(pods_of "$1" | grep -c .)" = "$2" ]; }
ds_ready() { [ "$("$k" get ds "$1" -n ds-t -o jsonpath='{.status.desiredNumberScheduled}/{.status.numberReady}')" = "$2" ]; }
wait_for 20 "one pod of all" n_pods all 1
wait_for 20 "all ready 1/1" ds_ready all 1/1
[ "$(pods_of all | awk '{print $2}')" = "$node" ] || fail "the pod is not on $node: $(pods_of all)"
expect_rc 0 "$k" get ds all -n ds-t
tr -s ' ' <"$TMP/out" | grep -q "^all 1 1 1 1 1 <none> " || fail "ds columns: $(cat "$TMP/out")"
[ "$("$k" get ds sel -n ds-t -o jsonpath='{.status.desiredNumberScheduled}')" = 0 ] || fail "sel wants a pod on box-0"

# nodeSelector and taints, on a node made by hand (box-0 is the device controller's: it keeps
# its labels and taints as its inventory says); its pods stay Pending (no agent there), which
# is enough to count them
cat >"$TMP/edge.yaml" <<'YAML'
apiVersion: v1
kind: Node
metadata: {name: edge-1, labels: {kubernetes.io/hostname: edge-1}}
YAML
expect_rc 0 "$k" apply -f "$TMP/edge.yaml"
on_edge() { [ "$(pods_of "$1" | awk -v n=edge-1 '$2 == n || $2 == ""' | grep -c .)" = "$2" ]; }
on_node_sel() { # DS COUNT: pods of DS whose nodeSelector names edge-1
    [ "$("$k" get pods -n ds-t -l "app=$1" -o jsonpath='{range .items[*]}{.spec.nodeSelector.kubernetes\.io/hostname} {.metadata.deletionTimestamp}{"\n"}{end}' | awk '$1 == "edge-1" && $2 == ""' | grep -c .)" = "$2" ]
}
wait_for 20 "all's pod for edge-1" on_node_sel all 1
sleep 1
on_node_sel sel 0 || fail "sel has a pod for a node without its label"
expect_rc 0 "$k" label node edge-1 ds-test=on
wait_for 20 "sel's pod after the label" on_node_sel sel 1
expect_rc 0 "$k" label node edge-1 ds-test-
wait_for 20 "sel's pod gone with the label" on_node_sel sel 0
# taints: NoSchedule keeps the pod, NoExecute evicts it, removed: back
expect_rc 0 "$k" taint node edge-1 ds-test=x:NoSchedule
sleep 2
on_node_sel all 1 || fail "a NoSchedule taint evicted the daemon pod"
expect_rc 0 "$k" taint node edge-1 ds-test=x:NoSchedule-
expect_rc 0 "$k" taint node edge-1 ds-test=x:NoExecute
wait_for 20 "the NoExecute taint evicts" on_node_sel all 0
expect_rc 0 "$k" taint node edge-1 ds-test=x:NoExecute-
wait_for 20 "the pod back without the taint" on_node_sel all 1
expect_rc 0 "$k" delete node edge-1
wait_for 20 "the pod of a deleted node deleted" on_node_sel all 0

# rolling update
old=$(pods_of all | awk '$2 == "box-0" {print $1}')
expect_rc 0 "$k" set image ds/all c=busybox:1.36 -n ds-t
replaced() { local p; p=$(pods_of all | awk '$2 == "box-0" {print $1}'); [ -n "$p" ] && [ "$p" != "$old" ] && ds_ready all 1/1; }
wait_for 30 "the pod replaced by the update" replaced
[ "$("$k" get ds all -n ds-t -o jsonpath='{.status.updatedNumberScheduled}')" = 1 ] || fail "updatedNumberScheduled"

expect_rc 0 "$k" delete ds all sel -n ds-t
wait_for 20 "the pods deleted with their DaemonSet" n_pods all 0
stop_fatiad
finish
