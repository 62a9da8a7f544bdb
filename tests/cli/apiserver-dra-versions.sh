#!/bin/bash
# tests/cli/apiserver-dra-versions.sh: resource.k8s.io v1beta1 and v1beta2 beside v1 (issue 17
# item 4), as kube-apiserver 1.34 converts them: NVIDIA's demo specs (resource.k8s.io/v1beta1,
# tests/data/upstream/nvidia-dra/, unchanged) apply with kubectl 1.27 and 1.33; their
# ResourceClaimTemplates read back in v1 with `exactly`, in v1beta2 the same, and in v1beta1 as
# they were written (round trip); a v1beta1 ResourceSlice's `basic` is flattened in v1 and comes
# back; a v1 claim written with firstAvailable reads in v1beta1 unchanged; discovery lists the
# three versions with v1 preferred; /version says 1.34 (v1 is the newest API served).
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
need_python3
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
D=tests/data/upstream/nvidia-dra

for v in 1.27 1.33; do
    k="$KUBECTL_DIR/kubectl.$v"
    start_fatiad "$TMP/data-$v" || break
    export KUBECONFIG=$KCFG
    for f in gpu-test7.yaml gpu-test-count.yaml; do
        expect_rc 0 "$k" apply -f "$D/$f"
    done
    expect_line "$TMP/out" "resourceclaimtemplate.resource.k8s.io/double-gpu created"
    # again: nothing written. (kubectl may print "configured": requests is an atomic list and
    # the live one carries the defaulted allocationMode, so it sends the list back, as it would
    # to a cluster; the server finds nothing to change.)
    rv=$("$k" get resourceclaimtemplate double-gpu -n gpu-test1 -o jsonpath='{.metadata.resourceVersion}')
    expect_rc 0 "$k" apply -f "$D/gpu-test-count.yaml"
    expect_rc 0 "$k" get resourceclaimtemplate double-gpu -n gpu-test1 -o jsonpath='{.metadata.resourceVersion}'
    [ "$(cat "$TMP/out")" = "$rv" ] || fail "kubectl $v: the second apply wrote ($rv -> $(cat "$TMP/out"))"
    stop_fatiad
done

start_fatiad "$TMP/data-http" || exit 1
export KUBECONFIG=$KCFG
"$KUBECTL_DIR/kubectl.1.33" apply -f "$D/gpu-test-count.yaml" >/dev/null 2>&1
python3 - "$URL" "$CA" "$TOKEN" "$D/gpu-test-count.yaml" <<'PY' || fail "DRA version checks failed"
import http.client, json, ssl, sys
from urllib.parse import urlparse
url, ca, token, src = sys.argv[1:5]
U = urlparse(url)
ctx = ssl.create_default_context(cafile=ca)
fails = []

def req(method, path, body=None):
    c = http.client.HTTPSConnection(U.hostname, U.port, context=ctx, timeout=20)
    c.request(method, path, body=json.dumps(body) if body is not None else None,
              headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    r = c.getresponse()
    t = r.read()
    return r.status, json.loads(t) if t else None

def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        fails.append(what)

T = "/namespaces/gpu-test1/resourceclaimtemplates/double-gpu"
st, v1 = req("GET", "/apis/resource.k8s.io/v1" + T)
r1 = v1["spec"]["spec"]["devices"]["requests"][0]
check(st == 200 and r1.get("exactly", {}).get("deviceClassName") == "gpu.nvidia.com" and
      r1["exactly"].get("count") == 2 and "deviceClassName" not in r1,
      "v1: the request's class and count under exactly (%s)" % r1)
st, b2 = req("GET", "/apis/resource.k8s.io/v1beta2" + T)
check(st == 200 and b2["apiVersion"] == "resource.k8s.io/v1beta2" and
      b2["spec"] == v1["spec"], "v1beta2: v1's shape (%s)" % b2.get("spec"))
st, b1 = req("GET", "/apis/resource.k8s.io/v1beta1" + T)
rb = b1["spec"]["spec"]["devices"]["requests"][0]
check(st == 200 and b1["apiVersion"] == "resource.k8s.io/v1beta1" and
      rb == {"name": "gpu", "deviceClassName": "gpu.nvidia.com", "count": 2,
             "allocationMode": "ExactCount"},
      "v1beta1: flat again, as written (with the default allocationMode) (%s)" % rb)

# a v1beta1 ResourceSlice: basic flattened in v1, back in v1beta1
sl = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice",
      "metadata": {"name": "node-a-gpu"},
      "spec": {"driver": "gpu.nvidia.com", "nodeName": "node-a",
               "pool": {"name": "node-a", "generation": 1, "resourceSliceCount": 1},
               "devices": [{"name": "gpu-0", "basic": {
                   "attributes": {"productName": {"string": "NVIDIA H200"}},
                   "capacity": {"memory": {"value": "141Gi"}}}}]}}
st, o = req("POST", "/apis/resource.k8s.io/v1beta1/resourceslices", sl)
check(st == 201 and o["spec"]["devices"][0].get("basic", {}).get("capacity") ==
      {"memory": {"value": "141Gi"}}, "v1beta1 slice created, answered in v1beta1 (%s %s)" % (st, o))
st, o = req("GET", "/apis/resource.k8s.io/v1/resourceslices/node-a-gpu")
d = o["spec"]["devices"][0]
check(st == 200 and "basic" not in d and d.get("attributes", {}).get("productName") ==
      {"string": "NVIDIA H200"}, "v1: the device flattened (%s)" % d)

# a v1 claim with firstAvailable reads the same in v1beta1 (no exactly to move)
cl = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
      "metadata": {"name": "fa", "namespace": "gpu-test1"},
      "spec": {"devices": {"requests": [{"name": "r", "firstAvailable": [
          {"name": "big", "deviceClassName": "gpu.nvidia.com"},
          {"name": "small", "deviceClassName": "mig.nvidia.com"}]}]}}}
st, o = req("POST", "/apis/resource.k8s.io/v1/namespaces/gpu-test1/resourceclaims", cl)
check(st == 201, "v1 claim with firstAvailable (%s %s)" % (st, o))
st, o = req("GET", "/apis/resource.k8s.io/v1beta1/namespaces/gpu-test1/resourceclaims/fa")
check(st == 200 and [s["name"] for s in o["spec"]["devices"]["requests"][0]["firstAvailable"]] ==
      ["big", "small"] and "exactly" not in o["spec"]["devices"]["requests"][0],
      "v1beta1 view of firstAvailable (%s)" % o.get("spec"))
# a v1beta1 write refused by validation names the v1 path (conversion first, kind.h)
bad = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
       "metadata": {"name": "bad", "namespace": "gpu-test1"},
       "spec": {"devices": {"requests": [{"name": "r", "deviceClassName": "gpu.nvidia.com",
                                          "count": 0}]}}}
st, o = req("POST", "/apis/resource.k8s.io/v1beta1/namespaces/gpu-test1/resourceclaims", bad)
check(st == 422 and "count" in o.get("message", ""), "v1beta1 count 0 refused (%s %s)" % (st, o))

st, g = req("GET", "/apis/resource.k8s.io")
check(st == 200 and g["preferredVersion"]["version"] == "v1" and
      [v["version"] for v in g["versions"]] == ["v1", "v1beta2", "v1beta1"],
      "discovery: v1 preferred, then v1beta2, v1beta1 (%s)" % g)
st, ver = req("GET", "/version")
check(st == 200 and ver["gitVersion"] == "v1.34.0" and ver["minor"] == "34",
      "/version 1.34 (%s)" % ver)
sys.exit(1 if fails else 0)
PY
stop_fatiad
finish
