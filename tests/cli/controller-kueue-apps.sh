#!/usr/bin/env bash
# tests/cli/controller-kueue-apps.sh: Kueue's integrations for Deployments and StatefulSets
# (controller/kueue_apps.c, workload.c), with kubectl 1.33, in a ClusterQueue of 1 CPU:
#   - a queued Deployment's pods are plain Pods of its queue: one Workload each, admitted one by
#     one while the quota lasts (two of three 400m pods), the rest gated;
#   - a queued StatefulSet's pods are one Kueue pod group: the template carries
#     kueue.x-k8s.io/pod-group-name and the total count, one Workload of count 3 for 3 x 500m;
#     it does not fit, and not one of its pods starts (a gang: never a partial group);
#   - once the quota grows the group is admitted whole and every pod is ungated, the third
#     Deployment pod too;
#   - hostile: scaling the StatefulSet past its admitted count does not start the extra pod.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
agent_setup
trap 'agent_cleanup; [ -n "$FATIAD_PID" ] && kill -9 "$FATIAD_PID" 2>/dev/null; rm -rf "$TMP"' EXIT
D=$TMP/d
FATIAD_CONTROLLERS=1 start_fatiad "$D" || exit 1
quota() {
    cat <<EOF | k apply -f - >/dev/null || fail "apply the queues"
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default-flavor}
spec: {}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: apps-cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-flavor
      resources: [{name: cpu, nominalQuota: $1}]
EOF
}
k create namespace apps >/dev/null || fail "create namespace apps"
quota 1
cat <<EOF | k apply -f - >/dev/null || fail "apply the LocalQueue"
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: apps}
spec: {clusterQueue: apps-cq}
EOF
cat <<EOF | k apply -f - >/dev/null || fail "apply the Deployment and the StatefulSet"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: apps, labels: {kueue.x-k8s.io/queue-name: lq}}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: c, image: busybox, command: [sleep, "600"], resources: {requests: {cpu: 400m}}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: apps, labels: {kueue.x-k8s.io/queue-name: lq}}
spec:
  replicas: 3
  podManagementPolicy: Parallel
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - {name: c, image: busybox, command: [sleep, "600"], resources: {requests: {cpu: 500m}}}
EOF
# the templates carry the queue (and the StatefulSet its pod group)
[ "$(k -n apps get deploy web -o 'jsonpath={.spec.template.metadata.labels.kueue\.x-k8s\.io/queue-name}')" = lq ] ||
    fail "the Deployment's template lacks the queue label"
GROUP=$(k -n apps get sts db -o 'jsonpath={.spec.template.metadata.labels.kueue\.x-k8s\.io/pod-group-name}')
case $GROUP in statefulset-db-?????) ;; *) fail "the StatefulSet's pod group is '$GROUP'" ;; esac
[ "$(k -n apps get sts db -o 'jsonpath={.spec.template.metadata.annotations.kueue\.x-k8s\.io/pod-group-total-count}')" = 3 ] ||
    fail "the StatefulSet's template lacks the group's total count"

gated() { # APP: how many of its pods are behind Kueue's gate / not
    k -n apps get pods -l "app=$1" -o json | python3 -c '
import json, sys
items = json.load(sys.stdin)["items"]
g = sum(1 for p in items if any(x["name"] == "kueue.x-k8s.io/admission" for x in p["spec"].get("schedulingGates", [])))
print(g, len(items) - g)'
}
is() { [ "$(gated "$1")" = "$2" ]; }
wait_for 30 is web "1 2"
wait_for 30 is db "3 0"
sleep 2
[ "$(gated db)" = "3 0" ] || fail "part of the gang started: $(gated db) (gated, started)"
[ "$(gated web)" = "1 2" ] || fail "web: $(gated web) (gated, started), want 1 2"
nwl() { k -n apps get workloads -o json | python3 -c '
import json, sys
items = json.load(sys.stdin)["items"]
kinds = {}
for w in items:
    o = w["metadata"]["ownerReferences"][0]["kind"]
    kinds[o] = kinds.get(o, 0) + 1
print(kinds.get("Pod", 0), kinds.get("StatefulSet", 0))'; }
[ "$(nwl)" = "3 1" ] || fail "Workloads (of pods, of StatefulSets): $(nwl), want 3 1"
[ "$(k -n apps get workload "$GROUP" -o 'jsonpath={.spec.podSets[0].count}')" = 3 ] ||
    fail "the group's Workload is not of count 3"

# the quota grows: the group is admitted whole, and the last web pod
quota 4
wait_for 30 is db "0 3"
wait_for 30 is web "0 3"

# scaling past the admitted count: the fourth pod stays gated
k -n apps scale sts db --replicas=4 >/dev/null || fail "scale the StatefulSet"
four() { [ "$(k -n apps get pods -l app=db -o name | wc -l)" = 4 ]; }
wait_for 30 four
sleep 2
[ "$(gated db)" = "1 3" ] || fail "a pod past the group's admitted count started: $(gated db)"
finish
