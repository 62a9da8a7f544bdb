#!/bin/bash
# tests/cli/controller-endpoints.sh: the endpoints controller (src/controller/endpoints.c) and
# the default ServiceAccount (src/controller/serviceaccount.c) in a real fatiad with its node
# agent:
#   - a new namespace gets its `default` ServiceAccount, and gets it back when it is deleted;
#   - a Service's Endpoints and EndpointSlice list its ready pods (real processes), resolve a
#     named targetPort through the pod's container ports, leave a crash-looping pod out of the
#     ready addresses (notReadyAddresses; ready: false in the slice), drop a deleted pod;
#   - a pod of another namespace with the same labels is never listed;
#   - a Service without a selector keeps the Endpoints its user wrote;
#   - deleting the Service deletes its Endpoints and EndpointSlice.
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
    local desc=$1
    shift
    for _ in $(seq 150); do
        "$@" && return 0
        sleep 0.2
    done
    fail "$desc (30 s): $("$k" get sa,svc,ep,endpointslices,pods -A 2>&1 | grep -v kube-system | head -30)"
    return 1
}

cat >"$TMP/objs.yaml" <<'YAML'
apiVersion: v1
kind: Namespace
metadata: {name: ep-t}
---
apiVersion: v1
kind: Namespace
metadata: {name: ep-other}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: ep-t}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}, {name: named, port: 81, targetPort: metrics}]
---
apiVersion: v1
kind: Pod
metadata: {name: good, namespace: ep-t, labels: {app: web}}
spec:
  containers:
  - name: c
    image: busybox
    command: [sleep, "600"]
    ports: [{name: metrics, containerPort: 9090}]
---
apiVersion: v1
kind: Pod
metadata: {name: plain, namespace: ep-t, labels: {app: web}}
spec:
  containers: [{name: c, image: busybox, command: [sleep, "600"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: crashing, namespace: ep-t, labels: {app: web}}
spec:
  containers: [{name: c, image: busybox, command: [sh, -c, "exit 1"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: elsewhere, namespace: ep-other, labels: {app: web}}
spec:
  containers: [{name: c, image: busybox, command: [sleep, "600"]}]
---
apiVersion: v1
kind: Service
metadata: {name: manual, namespace: ep-t}
spec:
  ports: [{port: 5432}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: manual, namespace: ep-t}
subsets: [{addresses: [{ip: 192.0.2.10}], ports: [{port: 5432}]}]
YAML
expect_rc 0 "$k" apply -f "$TMP/objs.yaml"

has_sa() { "$k" get sa default -n "$1" >/dev/null 2>&1; }
wait_for "the default ServiceAccount of ep-t" has_sa ep-t
wait_for "the default ServiceAccount of ep-other" has_sa ep-other
expect_rc 0 "$k" delete sa default -n ep-t
wait_for "the default ServiceAccount re-created" has_sa ep-t

# ready pods: good (8080 and its named port 9090) and plain (8080 only)
ep_json() { "$k" get ep web -n ep-t -o json 2>/dev/null; }
ready_names() {
    ep_json | python3 -c '
import json, sys
e = json.load(sys.stdin)
ready, notready = set(), set()
for s in e.get("subsets", []):
    ports = sorted(p["port"] for p in s.get("ports", []))
    for a in s.get("addresses", []):
        ready.add("%s:%s" % (a["targetRef"]["name"], ",".join(map(str, ports))))
    for a in s.get("notReadyAddresses", []):
        notready.add(a["targetRef"]["name"])
print(" ".join(sorted(ready)), "|", " ".join(sorted(notready)))'
}
want_ready() { [ "$(ready_names)" = "$1" ]; }
wait_for "endpoints of the ready pods" want_ready "good:8080,9090 plain:8080 | crashing"
slice_ok() {
    "$k" get endpointslices -n ep-t -l kubernetes.io/service-name=web -o json | python3 -c '
import json, sys
items = json.load(sys.stdin)["items"]
assert len(items) == 1, items
s = items[0]
assert s["addressType"] == "IPv4"
assert s["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] == "endpointslice-controller.k8s.io"
r = {e["targetRef"]["name"]: e["conditions"]["ready"] for e in s["endpoints"]}
assert r == {"good": True, "plain": True, "crashing": False}, r
' 2>/dev/null
}
wait_for "the EndpointSlice" slice_ok
expect_rc 0 "$k" get ep web -n ep-t
expect_line "$TMP/out" "127.0.0.1:"

# a deleted pod leaves
expect_rc 0 "$k" delete pod plain -n ep-t --wait=false
wait_for "the deleted pod out of the endpoints" want_ready "good:8080,9090 | crashing"

# the user's Endpoints of a Service without a selector stay
expect_rc 0 "$k" get ep manual -n ep-t -o jsonpath='{.subsets[0].addresses[0].ip}'
[ "$(cat "$TMP/out")" = 192.0.2.10 ] || fail "the manual Endpoints changed: $(cat "$TMP/out")"

# the Service goes, its Endpoints and EndpointSlice too
expect_rc 0 "$k" delete svc web -n ep-t
gone() { [ -z "$("$k" get ep,endpointslices -n ep-t -l kubernetes.io/service-name=web -o name)" ] &&
    ! "$k" get ep web -n ep-t >/dev/null 2>&1; }
wait_for "the Service's endpoints deleted" gone
stop_fatiad
finish
