#!/bin/bash
# tests/cli/apiserver-wire.sh: what clients other than fatia's own expect of the wire, against a
# real fatiad with its controllers on:
#   - query booleans as kube-apiserver's (watch=True / TRUE / 1 / empty watch, 0 and any-case
#     false list; nothing is refused);
#   - Node.status.nodeInfo complete and from this host (bootID, machineID, kernelVersion, ...);
#   - `kubectl get events` (1.27 and 1.33) prints kube-apiserver's columns: LAST SEEN, TYPE,
#     REASON, OBJECT as kind/name, MESSAGE; -o wide adds SUBOBJECT SOURCE FIRST SEEN COUNT NAME;
#   - Debian's python3-kubernetes: list, create, watch.Watch() and list_node().
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
need_python3
find_kubectl
# Debian's python3-kubernetes is in the system python, whatever python3 PATH finds first (pyenv)
PYK=/usr/bin/python3
"$PYK" -c 'import kubernetes' 2>/dev/null || skip "python3-kubernetes not installed (scripts/setup)"
export HOME=$TMP/home
mkdir -p "$HOME"

FATIAD_CONTROLLERS=1 start_fatiad "$TMP/data" || exit 1
export KUBECONFIG=$KCFG

# ---- query booleans ----
for v in True TRUE 1 true "" yes; do
    api GET "/api/v1/namespaces?watch=$v&timeoutSeconds=1" -D "$TMP/hdr"
    [ "$CODE" = 200 ] || fail "watch=$v: $CODE $(cat "$TMP/body")"
    grep -q '"type":"ADDED"' "$TMP/body" || fail "watch=$v is not a watch: $(head -c 200 "$TMP/body")"
done
for v in 0 false FALSE False; do
    api GET "/api/v1/namespaces?watch=$v&timeoutSeconds=1"
    [ "$CODE" = 200 ] || fail "watch=$v: $CODE"
    grep -q '"kind":"NamespaceList"' "$TMP/body" || fail "watch=$v is not a list: $(head -c 200 "$TMP/body")"
done
# the first value counts, as Convert_Slice_string_To_bool takes (*in)[0]
api GET "/api/v1/namespaces?watch=0&watch=1"
grep -q '"kind":"NamespaceList"' "$TMP/body" || fail "watch=0&watch=1 is not a list"

# ---- nodeInfo from the host ----
for _ in $(seq 100); do
    api GET /api/v1/nodes/box-0
    [ "$CODE" = 200 ] && grep -q nodeInfo "$TMP/body" && break
    sleep 0.1
done
python3 - "$TMP/body" <<'PY' || fail "nodeInfo"
import json, os, sys
ni = json.load(open(sys.argv[1]))["status"]["nodeInfo"]
want = ["machineID", "systemUUID", "bootID", "kernelVersion", "osImage", "containerRuntimeVersion",
        "kubeletVersion", "kubeProxyVersion", "operatingSystem", "architecture"]
bad = [k for k in want if not isinstance(ni.get(k), str)]
if bad:
    sys.exit(f"nodeInfo lacks {bad}: {ni}")
boot = open("/proc/sys/kernel/random/boot_id").read().strip()
if ni["bootID"] != boot:
    sys.exit(f"bootID {ni['bootID']!r}, host {boot!r}")
if ni["kernelVersion"] != os.uname().release:
    sys.exit(f"kernelVersion {ni['kernelVersion']!r}, host {os.uname().release!r}")
if os.path.exists("/etc/machine-id") and ni["machineID"] != open("/etc/machine-id").read().strip():
    sys.exit(f"machineID {ni['machineID']!r}")
pretty = [l.split("=", 1)[1].strip().strip('"') for l in open("/etc/os-release") if l.startswith("PRETTY_NAME=")]
if pretty and ni["osImage"] != pretty[0]:
    sys.exit(f"osImage {ni['osImage']!r}, want {pretty[0]!r}")
if ni["architecture"] != {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine):
    sys.exit(f"architecture {ni['architecture']!r}")
PY

# ---- kubectl get events ----
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
cat >"$TMP/ev.yaml" <<YAML
apiVersion: v1
kind: Event
metadata: {name: web.1, namespace: default}
involvedObject: {kind: Pod, name: web, namespace: default, fieldPath: "spec.containers{c1}"}
reason: Preempted
message: "  evicted to make room  "
type: Warning
count: 3
firstTimestamp: "2020-01-01T00:00:00Z"
lastTimestamp: "$now"
source: {component: kueue-admission, host: box-0}
---
apiVersion: v1
kind: Event
metadata: {name: ns.1, namespace: default}
involvedObject: {kind: Namespace}
reason: Hello
message: no timestamps
eventTime: "$(date -u +%Y-%m-%dT%H:%M:%S.000000Z)"
reportingComponent: tester
reportingInstance: here
action: Test
YAML
expect_rc 0 kubectl --kubeconfig "$KCFG" create -f "$TMP/ev.yaml"
for v in 1.27 1.33; do
    k="$KUBECTL_DIR/kubectl.$v"
    expect_rc 0 "$k" get events -n default
    cp "$TMP/out" "$TMP/events"
    head -1 "$TMP/events" | grep -qE '^LAST SEEN +TYPE +REASON +OBJECT +MESSAGE$' ||
        fail "kubectl $v get events header: $(head -1 "$TMP/events")"
    grep -qE '^[0-9]+s +Warning +Preempted +pod/web +evicted to make room$' "$TMP/events" ||
        fail "kubectl $v get events row: $(cat "$TMP/events")"
    grep -qE '^[0-9]+s +Hello +namespace +no timestamps$' "$TMP/events" ||
        fail "kubectl $v: an event with only eventTime: $(cat "$TMP/events")"
    expect_rc 0 "$k" get events -n default -o wide
    head -1 "$TMP/out" | grep -qE '^LAST SEEN +TYPE +REASON +OBJECT +SUBOBJECT +SOURCE +MESSAGE +FIRST SEEN +COUNT +NAME$' ||
        fail "kubectl $v -o wide header: $(head -1 "$TMP/out")"
    grep -qE 'pod/web +spec.containers\{c1\} +kueue-admission, box-0 +evicted to make room +[0-9]+[yd][0-9a-z]* +3 +web.1$' "$TMP/out" ||
        fail "kubectl $v -o wide row: $(cat "$TMP/out")"
    grep -qE 'namespace +tester, here +no timestamps +[0-9]+s +1 +ns.1$' "$TMP/out" ||
        fail "kubectl $v -o wide, reporting fields: $(cat "$TMP/out")"
done

# ---- the Python client ----
"$PYK" - "$KCFG" <<'PY' || fail "python3-kubernetes"
import sys, threading, time
from kubernetes import client, config, watch
config.load_kube_config(sys.argv[1])
v1 = client.CoreV1Api()
names = [n.metadata.name for n in v1.list_namespace().items]
assert "default" in names, names
nodes = v1.list_node().items               # V1NodeSystemInfo refuses a missing field
assert nodes and nodes[0].status.node_info.boot_id, nodes
rv = v1.list_namespace().metadata.resource_version
def later():
    time.sleep(0.5)
    v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="py-made")))
threading.Thread(target=later).start()
seen = None
w = watch.Watch()
for ev in w.stream(v1.list_namespace, resource_version=rv, timeout_seconds=10):
    if ev["object"].metadata.name == "py-made":
        seen = ev["type"]
        w.stop()
assert seen == "ADDED", seen
got = v1.read_namespace("py-made")
assert got.metadata.labels["kubernetes.io/metadata.name"] == "py-made", got.metadata.labels
pods = client.CoreV1Api().list_pod_for_all_namespaces()
print("python client: ok,", len(names), "namespaces,", len(nodes), "nodes")
PY

stop_fatiad
finish
