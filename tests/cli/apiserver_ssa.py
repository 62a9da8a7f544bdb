#!/usr/bin/env python3
"""tests/cli/apiserver_ssa.py: server-side apply and managedFields over raw HTTP (issue 17 item 2).

Cases transcribed from kube-apiserver's apply integration tests,
kubernetes/kubernetes test/integration/apiserver/apply/apply_test.go (commit
0184c6c4a7c3eb8e300b1552d5957c9fb4387f4a), with fatia's kinds in place of ConfigMap and
Deployment (not served yet): each case names the upstream test it comes from. List and
ownership cases follow structured-merge-diff's merge tests (kubernetes-sigs/structured-merge-diff
merge/multiple_appliers_test.go, merge/key_test.go, merge/set_test.go): two appliers sharing
a keyed list, one removing its item; a set list (finalizers).

    apiserver_ssa.py URL CA ADMIN_TOKEN
"""
import http.client
import json
import ssl
import sys
from urllib.parse import urlparse

URL, CA, ADMIN = sys.argv[1:4]
U = urlparse(URL)
CTX = ssl.create_default_context(cafile=CA)
FAILS = []
KQ = "/apis/kueue.x-k8s.io/v1beta2"
APPLY = "application/apply-patch+yaml"


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


def req(method, path, body=None, ctype="application/json", raw=None):
    c = http.client.HTTPSConnection(U.hostname, U.port, context=CTX, timeout=20)
    h = {"Content-Type": ctype, "Authorization": "Bearer " + ADMIN}
    data = raw if raw is not None else (json.dumps(body) if body is not None else None)
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    text = r.read()
    c.close()
    try:
        return r.status, json.loads(text) if text else None
    except ValueError:
        return r.status, text


def apply(path, obj, manager="apply_test", force=False, raw=None):
    q = "?fieldManager=" + manager if manager else "?"
    if force:
        q += "&force=true"
    return req("PATCH", path + q, obj, ctype=APPLY, raw=raw)


def mf(obj):
    return {(e["manager"], e["operation"]): e.get("fieldsV1")
            for e in obj["metadata"].get("managedFields", [])}


def lq(name, cq="cq-a", labels=None):
    m = {"name": name, "namespace": "ssa"}
    if labels is not None:
        m["labels"] = labels
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": m,
            "spec": {"clusterQueue": cq}}


LQ = KQ + "/namespaces/ssa/localqueues"
PODS = "/api/v1/namespaces/ssa/pods"

st, _ = req("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": "ssa"}})
check(st == 201, "namespace ssa created (%s)" % st)

# TestApplyAlsoCreates: an apply of a missing object creates it (201), one Apply entry
st, o = apply(LQ + "/q1", lq("q1", labels={"test-label": "test"}))
check(st == 201, "apply creates: %s %s" % (st, o))
check(mf(o) == {("apply_test", "Apply"): {"f:metadata": {"f:labels": {"f:test-label": {}}},
                                          "f:spec": {"f:clusterQueue": {}}}},
      "apply creates: managedFields %s" % o["metadata"].get("managedFields"))
# ... and a second manager applying the same configuration gets no conflict (shared ownership)
st, o = apply(LQ + "/q1", lq("q1", labels={"test-label": "test"}), manager="apply_test_2")
check(st == 200 and set(mf(o)) == {("apply_test", "Apply"), ("apply_test_2", "Apply")},
      "same values, another manager: co-owned (%s %s)" % (st, o if st != 200 else mf(o)))

# TestNoOpUpdateSameResourceVersion: applying the same configuration again writes nothing
rv = o["metadata"]["resourceVersion"]
st, o = apply(LQ + "/q1", lq("q1", labels={"test-label": "test"}), manager="apply_test_2")
check(st == 200 and o["metadata"]["resourceVersion"] == rv,
      "no-op apply keeps the resourceVersion (%s -> %s)" % (rv, o["metadata"]["resourceVersion"]))

# TestApplyManagedFields: a merge patch by "updater" takes the field it changes, without conflict
st, o = req("PATCH", LQ + "/q1?fieldManager=updater", {"spec": {"clusterQueue": "cq-b"}},
            ctype="application/merge-patch+json")
m = mf(o) if st == 200 else {}
check(st == 200 and m.get(("updater", "Update")) == {"f:spec": {"f:clusterQueue": {}}},
      "merge patch: updater owns spec.clusterQueue (%s)" % m)
check(m.get(("apply_test", "Apply")) == {"f:metadata": {"f:labels": {"f:test-label": {}}}},
      "merge patch: apply_test keeps only its label (%s)" % m.get(("apply_test", "Apply")))
upd = [e for e in o["metadata"]["managedFields"] if e["manager"] == "updater"]
check(upd and upd[0].get("time") and upd[0]["apiVersion"] == "kueue.x-k8s.io/v1beta2" and
      upd[0]["fieldsType"] == "FieldsV1", "Update entry: time, apiVersion, fieldsType (%s)" % upd)

# TestApplyUpdateApplyConflictForced: re-applying the old value conflicts with updater (409,
# causes naming the field), force takes it
st, o = apply(LQ + "/q1", lq("q1", labels={"test-label": "test"}))
check(st == 409 and o.get("reason") == "Conflict", "conflict: 409 Conflict (%s %s)" % (st, o))
check(isinstance(o, dict) and o.get("message") ==
      'Apply failed with 1 conflict: conflict with "updater" using kueue.x-k8s.io/v1beta2: '
      '.spec.clusterQueue', "conflict message (%s)" % (o.get("message") if isinstance(o, dict) else o))
causes = (o.get("details") or {}).get("causes", []) if isinstance(o, dict) else []
check(causes and causes[0].get("type") == "FieldManagerConflict" and
      causes[0].get("field") == ".spec.clusterQueue", "conflict causes (%s)" % causes)
st, o2 = req("GET", LQ + "/q1")
check(o2["spec"]["clusterQueue"] == "cq-b", "a refused apply changed nothing")
st, o = apply(LQ + "/q1", lq("q1", labels={"test-label": "test"}), force=True)
m = mf(o) if st == 200 else {}
check(st == 200 and o["spec"]["clusterQueue"] == "cq-a" and ("updater", "Update") not in m,
      "force: the applier takes the field, updater's entry (now empty) goes (%s %s)" % (st, m))

# TestApplyRemovesEmptyManagedFields: an apply owning nothing leaves no entry
st, o = apply(LQ + "/bare", {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                             "metadata": {"name": "bare", "namespace": "ssa"}})
check(st in (201, 422), "bare apply answered (%s)" % st)  # spec.clusterQueue is required
st, o = apply("/api/v1/namespaces/bare-ns", {"apiVersion": "v1", "kind": "Namespace",
                                             "metadata": {"name": "bare-ns"}})
check(st == 201 and "managedFields" not in o["metadata"],
      "apply owning nothing: no managedFields (%s %s)" % (st, o))
st, o = apply("/api/v1/namespaces/bare-ns", {"apiVersion": "v1", "kind": "Namespace",
                                             "metadata": {"name": "bare-ns"}})
check(st == 200 and "managedFields" not in o["metadata"], "twice: still none (%s)" % o)

# TestApplyRequiresFieldManager
st, o = apply(LQ + "/q2", lq("q2"), manager=None)
check(st == 400, "apply without fieldManager: 400 (%s %s)" % (st, o))
st, o = req("GET", LQ + "/q2")
check(st == 404, "... and nothing created (%s)" % st)
st, o = apply(LQ + "/q2", lq("q2"))
check(st == 201, "with fieldManager: created (%s)" % st)

# TestCreateOnApplyFailsWithUID
cfg = lq("q3")
cfg["metadata"]["uid"] = "88e00824-7f0e-11e8-94a1-c8d3ffb15800"
st, o = apply(LQ + "/q3", cfg)
check(st == 409, "create on apply with a uid: 409 (%s %s)" % (st, o))

# TestApplyFailsWithVersionMismatch: an apiVersion not the URL's is a 400
cfg = lq("q2")
cfg["apiVersion"] = "kueue.x-k8s.io/v9"
st, o = apply(LQ + "/q2", cfg)
check(st == 400, "apply with another apiVersion: 400 (%s %s)" % (st, o))

# managedFields may not be set by an apply configuration
cfg = lq("q2")
cfg["metadata"]["managedFields"] = [{"manager": "x", "operation": "Apply"}]
st, o = apply(LQ + "/q2", cfg)
check(st == 400, "apply carrying managedFields: 400 (%s)" % st)

# a YAML body (what the content type names), not only JSON
st, o = apply(LQ + "/q4", None, raw=(
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n"
    "metadata: {name: q4, namespace: ssa}\nspec: {clusterQueue: cq-y}\n"))
check(st == 201 and o["spec"]["clusterQueue"] == "cq-y", "YAML apply body (%s)" % st)

# TestApplyRemoveContainerPort and structured-merge-diff's multiple appliers on a keyed list:
# containers are keyed by name, env by name; an applier that drops its item removes it, and
# leaves the other applier's item alone


def pod(containers):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ssa"},
            "spec": {"containers": containers}}


st, o = apply(PODS + "/p", pod([{"name": "a", "image": "nginx",
                                 "ports": [{"containerPort": 80, "protocol": "TCP"}]}]), "m1")
check(st == 201, "pod applied by m1 (%s %s)" % (st, o))
st, o = apply(PODS + "/p", pod([{"name": "b", "image": "redis"}]), "m2")
names = [c["name"] for c in o["spec"]["containers"]] if st == 200 else []
check(st == 200 and names == ["a", "b"], "m2's container merged by key: %s (%s)" % (names, st))
fs = mf(o).get(("m2", "Apply")) if st == 200 else None
check(fs == {"f:spec": {"f:containers": {'k:{"name":"b"}': {".": {}, "f:name": {},
                                                           "f:image": {}}}}},
      "m2 owns its list item with '.' (%s)" % fs)
st, o = apply(PODS + "/p", pod([{"name": "a", "image": "nginx"}]), "m1")
c0 = o["spec"]["containers"][0] if st == 200 else {}
check(st == 200 and not c0.get("ports"), "m1 dropping its port removes it (%s)" % c0)
st, o = apply(PODS + "/p", pod([{"name": "a", "image": "nginx:2"}]), "m2")
check(st == 409 and '.spec.containers[name="a"].image' in o.get("message", ""),
      "m2 changing m1's image: conflict naming the keyed path (%s)" % o.get("message"))
st, o = apply(PODS + "/p", {"apiVersion": "v1", "kind": "Pod",
                            "metadata": {"name": "p", "namespace": "ssa"},
                            "spec": {"containers": [{"name": "a", "image": "nginx"}]}}, "m1")
st, o = apply(PODS + "/p", {"apiVersion": "v1", "kind": "Pod",
                            "metadata": {"name": "p", "namespace": "ssa"},
                            "spec": {"containers": [{"name": "b", "image": "redis"}]}}, "m1")
names = [c["name"] for c in o["spec"]["containers"]] if st == 200 else []
check(st == 200 and names == ["b"],
      "m1 dropping container a (owned by m1 alone) removes it; b stays: %s" % names)

# a set list (finalizers, merged as a set): two appliers each add one; neither removes the other's
ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ssa-set"}}
apply("/api/v1/namespaces/ssa-set", dict(ns, metadata={"name": "ssa-set",
                                                       "finalizers": ["x.io/a"]}), "s1")
st, o = apply("/api/v1/namespaces/ssa-set", dict(ns, metadata={"name": "ssa-set",
                                                               "finalizers": ["x.io/b"]}), "s2")
check(st == 200 and o["metadata"].get("finalizers") == ["x.io/a", "x.io/b"],
      "set list: both items (%s)" % o["metadata"].get("finalizers"))
check(mf(o).get(("s2", "Apply")) == {"f:metadata": {"f:finalizers": {'v:"x.io/b"': {}}}},
      "set item owned as v: (%s)" % mf(o).get(("s2", "Apply")))
st, o = apply("/api/v1/namespaces/ssa-set", ns, "s1")
check(st == 200 and o["metadata"].get("finalizers") == ["x.io/b"],
      "s1 dropping its item: only s2's stays (%s)" % o["metadata"].get("finalizers"))

# Update entries for every write: a create, a PUT, a status write
st, o = req("POST", LQ + "?fieldManager=creator", lq("u1"))
# (defaults applied to the request are the creator's too, as upstream: spec.stopPolicy)
check(st == 201 and mf(o).get(("creator", "Update"), {}).get("f:spec", {}).get("f:clusterQueue")
      == {}, "create: Update entry (%s)" % o.get("metadata", {}).get("managedFields"))
o["metadata"]["labels"] = {"x": "1"}
st, o = req("PUT", LQ + "/u1?fieldManager=putter", o)
check(st == 200 and mf(o).get(("putter", "Update")) ==
      {"f:metadata": {"f:labels": {".": {}, "f:x": {}}}},
      "PUT: the new labels map is the putter's, '.' included (%s)" % mf(o))
st, o = req("PUT", LQ + "/u1/status?fieldManager=ctl", dict(o, status={"pendingWorkloads": 1}))
ent = [e for e in o["metadata"]["managedFields"] if e["manager"] == "ctl"] if st == 200 else []
check(ent and ent[0].get("subresource") == "status" and
      ent[0]["fieldsV1"] == {"f:status": {".": {}, "f:pendingWorkloads": {}}},
      "status write: an entry with subresource status (%s)" % ent)
# without fieldManager: the User-Agent up to its first '/'
c = http.client.HTTPSConnection(U.hostname, U.port, context=CTX, timeout=20)
c.request("PATCH", LQ + "/u1", body=json.dumps({"metadata": {"labels": {"y": "2"}}}),
          headers={"Content-Type": "application/merge-patch+json",
                   "Authorization": "Bearer " + ADMIN, "User-Agent": "my-tool/1.0 (linux)"})
o = json.loads(c.getresponse().read())
check(("my-tool", "Update") in mf(o), "manager from the User-Agent (%s)" % list(mf(o)))
# a write that sets other managedFields takes them as given (kubectl's migration does this)
given = [{"manager": "mover", "operation": "Apply", "apiVersion": "kueue.x-k8s.io/v1beta2",
          "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:clusterQueue": {}}}}]
st, o = req("PATCH", LQ + "/u1", [{"op": "replace", "path": "/metadata/managedFields",
                                   "value": given}], ctype="application/json-patch+json")
check(st == 200 and o["metadata"]["managedFields"] == given,
      "JSON patch of managedFields: taken as given (%s)" % o["metadata"].get("managedFields"))
bad = [{"manager": "x", "operation": "Steal"}]
st, o = req("PATCH", LQ + "/u1", [{"op": "replace", "path": "/metadata/managedFields",
                                   "value": bad}], ctype="application/json-patch+json")
check(st == 422 and "metadata.managedFields[0]" in json.dumps(o),
      "invalid managedFields: 422 naming the entry (%s)" % st)

print("%d check(s) failed" % len(FAILS) if FAILS else "all SSA checks passed")
sys.exit(1 if FAILS else 0)
