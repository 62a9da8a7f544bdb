#!/usr/bin/env python3
"""tests/e2e/tenantfuzz.py: the quota invariant, and a fuzzer of the tenant rules.

--check: checks once (retrying for a few seconds while the controllers settle) that
  1. no ClusterQueue's admitted usage is below what its pods really hold: for every bound,
     unfinished pod, its GPU requests (nvidia.com/*, fatia.dev/*) counted against the
     ClusterQueue of its queue (its own label, or its Job's), at most what the admitted,
     unfinished Workloads of that ClusterQueue reserve (status.admission's resourceUsage: the
     sum a ClusterQueue's usage is; its status.flavorsUsage is that sum sampled once a second);
  2. no bound GPU pod in a tenant namespace is without a queue;
  3. no pod carries a fatia.dev/devices annotation that placement did not write (the pod's
     fatia.dev/slices must be there too, and every slice is held once).
--fuzz: random writes from the tenant identity (creates, patches of every type, status writes,
  deletes, with random reserved fields, gates, nodeName, suspend, queue labels), and admin steps
  that finish pods (the stand-in for the node agent), with the invariant checked after every
  step. Seeded (--seed), bounded by --steps and --seconds. Exit 1 on the first violation, with
  the seed and the step that broke it.
"""
import argparse
import json
import random
import ssl
import sys
import time
import urllib.error
import urllib.request

GPU_PREFIXES = ("nvidia.com/", "fatia.dev/")


class Api:
    def __init__(self, url, ca, token):
        self.url, self.token = url, token
        self.ctx = ssl.create_default_context(cafile=ca)
        self.ctx.check_hostname = False

    def req(self, method, path, body=None, ctype="application/json"):
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        r = urllib.request.Request(self.url + path, data=data, method=method)
        r.add_header("Authorization", "Bearer " + self.token)
        if data is not None:
            r.add_header("Content-Type", ctype)
        try:
            with urllib.request.urlopen(r, context=self.ctx, timeout=10) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as e:
            try:
                return e.code, json.loads(e.read() or b"null")
            except ValueError:
                return e.code, None

    def items(self, path):
        code, body = self.req("GET", path)
        if code != 200:
            raise RuntimeError("GET %s: %s %s" % (path, code, body))
        return body.get("items") or []


def qty(s):
    s = str(s)
    if s.endswith("m"):
        return float(s[:-1]) / 1000
    for suf, mul in (("Ki", 1 << 10), ("Mi", 1 << 20), ("Gi", 1 << 30), ("k", 1e3), ("M", 1e6), ("G", 1e9)):
        if s.endswith(suf):
            return float(s[: -len(suf)]) * mul
    return float(s)


def pod_gpus(pod):
    spec = pod.get("spec", {})
    out = {}
    for c in spec.get("containers", []):
        res = c.get("resources", {})
        for k in set(res.get("requests", {})) | set(res.get("limits", {})):
            if k.startswith(GPU_PREFIXES):
                v = res.get("requests", {}).get(k, res.get("limits", {}).get(k))
                out[k] = out.get(k, 0) + qty(v)
    for c in spec.get("initContainers", []):
        res = c.get("resources", {})
        for k, v in list(res.get("requests", {}).items()) + list(res.get("limits", {}).items()):
            if k.startswith(GPU_PREFIXES):
                out[k] = max(out.get(k, 0), qty(v))
    return out


def violations(api, tenant_ns):
    pods = api.items("/api/v1/pods")
    jobs = {(j["metadata"]["namespace"], j["metadata"]["uid"]): j for j in api.items("/apis/batch/v1/jobs")}
    lqs = {(q["metadata"]["namespace"], q["metadata"]["name"]): q for q in api.items("/apis/kueue.x-k8s.io/v1beta2/localqueues")}
    cqs = {c["metadata"]["name"]: c for c in api.items("/apis/kueue.x-k8s.io/v1beta2/clusterqueues")}
    held, bad, slices, who = {}, [], {}, {}
    for p in pods:
        md, spec = p["metadata"], p.get("spec", {})
        ns, name = md["namespace"], md["name"]
        ann = md.get("annotations") or {}
        if "fatia.dev/devices" in ann and "fatia.dev/slices" not in ann:
            bad.append("pod %s/%s has fatia.dev/devices without fatia.dev/slices" % (ns, name))
        if not spec.get("nodeName") or p.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            continue
        for s in filter(None, (ann.get("fatia.dev/slices") or "").split(",")):
            if s in slices:
                bad.append("slice %s held by %s and %s/%s" % (s, slices[s], ns, name))
            slices[s] = "%s/%s" % (ns, name)
        gpus = pod_gpus(p)
        if not gpus:
            continue
        queue = (md.get("labels") or {}).get("kueue.x-k8s.io/queue-name")
        for o in md.get("ownerReferences") or []:
            if o.get("kind") == "Job" and (ns, o.get("uid")) in jobs:
                queue = queue or (jobs[(ns, o["uid"])]["metadata"].get("labels") or {}).get("kueue.x-k8s.io/queue-name")
        if not queue:
            if ns in tenant_ns:
                bad.append("pod %s/%s holds %s without a queue" % (ns, name, gpus))
            continue
        lq = lqs.get((ns, queue))
        if not lq:
            bad.append("pod %s/%s holds %s through a missing LocalQueue %s" % (ns, name, gpus, queue))
            continue
        cq = lq["spec"]["clusterQueue"]
        for k, v in gpus.items():
            held[(cq, k)] = held.get((cq, k), 0) + v
            who.setdefault((cq, k), []).append("%s(%g%s%s)" % (
                name, v, ",deleting" if md.get("deletionTimestamp") else "",
                "," + p.get("status", {}).get("phase", "") if p.get("status", {}).get("phase") else ""))
    # admitted usage: what the admitted, unfinished Workloads reserve (what a ClusterQueue's usage
    # sums; its status.flavorsUsage is that sum sampled at most once a second)
    usage = {}
    for w in api.items("/apis/kueue.x-k8s.io/v1beta2/workloads"):
        st = w.get("status") or {}
        adm = st.get("admission")
        conds = {c.get("type"): c.get("status") for c in st.get("conditions") or []}
        if not adm or conds.get("Finished") == "True" or conds.get("QuotaReserved") != "True":
            continue
        for psa in adm.get("podSetAssignments") or []:
            for k, v in (psa.get("resourceUsage") or {}).items():
                usage[(adm.get("clusterQueue"), k)] = usage.get((adm.get("clusterQueue"), k), 0) + qty(v)
    for (cq, res), v in sorted(held.items()):
        used = usage.get((cq, res), 0)
        if used + 1e-9 < v:
            bad.append("ClusterQueue %s: pods hold %g %s, admitted usage is %g; holders: %s" %
                       (cq, v, res, used, " ".join(who[(cq, res)])))
    if bad:
        for w in api.items("/apis/kueue.x-k8s.io/v1beta2/workloads"):
            st = w.get("status") or {}
            bad.append("  workload %s owner=%s admission=%s conds=%s" % (
                w["metadata"]["name"], [o.get("name") for o in w["metadata"].get("ownerReferences") or []],
                json.dumps((st.get("admission") or {}).get("podSetAssignments")),
                {c.get("type"): c.get("status") for c in st.get("conditions") or []}))
    return bad


def check(api, tenant_ns, settle=5.0):
    end = time.monotonic() + settle
    while True:
        bad = violations(api, tenant_ns)
        if not bad or time.monotonic() >= end:
            return bad
        time.sleep(0.2)


# ---- the fuzzer ----

RESERVED = [("annotations", "fatia.dev/devices", "gpu-3:GPU-ffff:3"), ("annotations", "fatia.dev/slices", "gpu-3"),
            ("annotations", "fatia.dev/injected", "{}"), ("labels", "kueue.x-k8s.io/managed", "true"),
            ("labels", "kueue.x-k8s.io/podset", "main"), ("labels", "kueue.x-k8s.io/job-uid", "x")]
RESOURCES = ["nvidia.com/gpu", "nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-3g.71gb"]
PATCH_TYPES = {"merge": "application/merge-patch+json", "strategic": "application/strategic-merge-patch+json",
               "json": "application/json-patch+json"}


def esc(k):
    return k.replace("~", "~0").replace("/", "~1")


class Fuzz:
    def __init__(self, admin, tenant, ns, rng):
        self.admin, self.tenant, self.ns, self.rng = admin, tenant, ns, rng
        self.n = 0

    def pod(self):
        r = self.rng
        self.n += 1
        res = r.choice(RESOURCES)
        meta = {"name": "fz-p%d" % self.n, "namespace": self.ns, "labels": {}}
        if r.random() < 0.7:
            meta["labels"]["kueue.x-k8s.io/queue-name"] = r.choice(["gpu", "gpu", "nope"])
        spec = {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "60"],
                                "resources": {"limits": {res: str(r.randint(0, 4))}}}]}
        if r.random() < 0.2:
            spec["nodeName"] = "box-0"
        if r.random() < 0.2:
            place, k, v = r.choice(RESERVED)
            meta.setdefault(place, {})[k] = v
        return "create pod", self.tenant.req("POST", "/api/v1/namespaces/%s/pods" % self.ns,
                                             {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})

    def job(self):
        r = self.rng
        self.n += 1
        meta = {"name": "fz-j%d" % self.n, "namespace": self.ns, "labels": {}}
        if r.random() < 0.8:
            meta["labels"]["kueue.x-k8s.io/queue-name"] = "gpu"
        tmeta = {}
        if r.random() < 0.15:
            place, k, v = r.choice(RESERVED)
            tmeta[place] = {k: v}
        spec = {"suspend": r.random() < 0.5, "template": {"metadata": tmeta, "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "60"],
                            "resources": {"limits": {"nvidia.com/gpu": str(r.randint(1, 3))}}}]}}}
        return "create job", self.tenant.req("POST", "/apis/batch/v1/namespaces/%s/jobs" % self.ns,
                                             {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec})

    def mutation(self, kind, obj):
        """(description, patch type, body, subresource)"""
        r = self.rng
        choices = ["label-", "label", "reserved", "finalizers", "status"]
        if kind == "pods":
            choices += ["gate", "gate", "nodeName", "resources"]
        if kind == "jobs":
            choices += ["unsuspend", "unsuspend", "unsuspend+label-", "template"]
        if kind == "workloads":
            choices += ["podsets", "admitted"]
        m = r.choice(choices)
        t = r.choice(list(PATCH_TYPES))
        q = "kueue.x-k8s.io/queue-name"
        if m == "label-":
            return m, t, ([{"op": "remove", "path": "/metadata/labels/" + esc(q)}] if t == "json"
                          else {"metadata": {"labels": {q: None}}}), None
        if m == "label":
            v = r.choice(["gpu", "other"])
            return m, t, ([{"op": "add", "path": "/metadata/labels/" + esc(q), "value": v}] if t == "json"
                          else {"metadata": {"labels": {q: v}}}), None
        if m == "reserved":
            place, k, v = r.choice(RESERVED)
            return m + " " + k, t, ([{"op": "add", "path": "/metadata/%s/%s" % (place, esc(k)), "value": v}] if t == "json"
                                    else {"metadata": {place: {k: v}}}), None
        if m == "finalizers":
            return m, t, ([{"op": "remove", "path": "/metadata/finalizers"}] if t == "json"
                          else {"metadata": {"finalizers": None}}), None
        if m == "status":
            st = {"pods": {"phase": "Running"}, "jobs": {"active": 1},
                  "workloads": {"conditions": []}}[kind]
            return m, "merge", {"status": st}, "status"
        if m == "gate":
            return m, t, ([{"op": "remove", "path": "/spec/schedulingGates"}] if t == "json"
                          else {"spec": {"schedulingGates": None}}), None
        if m == "nodeName":
            return m, t, ([{"op": "add", "path": "/spec/nodeName", "value": "box-0"}] if t == "json"
                          else {"spec": {"nodeName": "box-0"}}), None
        if m == "resources":
            return m, "json", [{"op": "replace", "path": "/spec/containers/0/resources",
                                "value": {"limits": {"nvidia.com/gpu": "8"}}}], None
        if m == "unsuspend":
            return m, t, ([{"op": "replace", "path": "/spec/suspend", "value": False}] if t == "json"
                          else {"spec": {"suspend": False}}), None
        if m == "unsuspend+label-":
            return m, t, ([{"op": "remove", "path": "/metadata/labels/" + esc(q)},
                           {"op": "replace", "path": "/spec/suspend", "value": False}] if t == "json"
                          else {"metadata": {"labels": {q: None}}, "spec": {"suspend": False}}), None
        if m == "template":
            return m, "json", [{"op": "replace", "path": "/spec/template/spec/containers/0/resources",
                                "value": {"limits": {"nvidia.com/gpu": "4"}}}], None
        if m == "podsets":
            return m, "json", [{"op": "replace", "path": "/spec/podSets/0/count", "value": 0}], None
        now = "2026-01-01T00:00:00Z"
        return m, "merge", {"status": {"conditions": [
            {"type": t_, "status": "True", "reason": "Forged", "message": "x", "lastTransitionTime": now}
            for t_ in ("QuotaReserved", "Admitted")]}}, "status"

    def patch(self):
        kind = self.rng.choice(["pods", "pods", "jobs", "jobs", "workloads"])
        base = {"pods": "/api/v1", "jobs": "/apis/batch/v1", "workloads": "/apis/kueue.x-k8s.io/v1beta2"}[kind]
        objs = self.admin.items("%s/namespaces/%s/%s" % (base, self.ns, kind))
        if not objs:
            return self.pod()
        o = self.rng.choice(objs)
        desc, t, body, sub = self.mutation(kind, o)
        path = "%s/namespaces/%s/%s/%s%s" % (base, self.ns, kind, o["metadata"]["name"], "/" + sub if sub else "")
        return ("patch %s %s (%s, %s)" % (kind, o["metadata"]["name"], desc, t),
                self.tenant.req("PATCH", path, body, PATCH_TYPES[t]))

    def delete(self):
        kind = self.rng.choice(["pods", "jobs", "workloads"])
        base = {"pods": "/api/v1", "jobs": "/apis/batch/v1", "workloads": "/apis/kueue.x-k8s.io/v1beta2"}[kind]
        objs = self.tenant.items("%s/namespaces/%s/%s" % (base, self.ns, kind))
        if not objs:
            return self.job()
        o = self.rng.choice(objs)
        return ("delete %s %s" % (kind, o["metadata"]["name"]),
                self.tenant.req("DELETE", "%s/namespaces/%s/%s/%s?propagationPolicy=Background" % (base, self.ns, kind, o["metadata"]["name"])))

    def finish_pod(self):
        """the admin, as the node agent: a bound pod ends"""
        for p in self.admin.items("/api/v1/namespaces/%s/pods" % self.ns):
            if p.get("spec", {}).get("nodeName") and p.get("status", {}).get("phase") not in ("Succeeded", "Failed"):
                return ("finish pod %s" % p["metadata"]["name"],
                        self.admin.req("PATCH", "/api/v1/namespaces/%s/pods/%s/status" % (self.ns, p["metadata"]["name"]),
                                       {"status": {"phase": "Succeeded"}}, PATCH_TYPES["merge"]))
        return self.pod()

    def step(self):
        x = self.rng.random()
        if x < 0.2:
            return self.pod()
        if x < 0.35:
            return self.job()
        if x < 0.85:
            return self.patch()
        if x < 0.93:
            return self.finish_pod()
        return self.delete()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--ca", required=True)
    ap.add_argument("--token", required=True, help="the admin's token (to read everything)")
    ap.add_argument("--tenant-token")
    ap.add_argument("--namespace", default="team-a")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--fuzz", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=90)
    a = ap.parse_args()
    admin = Api(a.url, a.ca, a.token)
    tenant_ns = {a.namespace}
    if a.check:
        bad = check(admin, tenant_ns)
        for b in bad:
            print("VIOLATION:", b)
        return 1 if bad else 0
    if not a.fuzz or not a.tenant_token:
        ap.error("--check, or --fuzz with --tenant-token")
    rng = random.Random(a.seed)
    fz = Fuzz(admin, Api(a.url, a.ca, a.tenant_token), a.namespace, rng)
    start = time.monotonic()
    codes = {}
    for i in range(a.steps):
        if time.monotonic() - start > a.seconds:
            break
        desc, (code, body) = fz.step()
        codes[code] = codes.get(code, 0) + 1
        if code >= 500:
            print("seed %d step %d: %s answered %d: %s" % (a.seed, i, desc, code, body))
            return 1
        bad = check(admin, tenant_ns, settle=3.0)
        if bad:
            print("seed %d step %d: after %s (%d):" % (a.seed, i, desc, code))
            for b in bad:
                print("  VIOLATION:", b)
            return 1
    print("seed %d: %d steps in %.1fs, answers %s, invariant held" %
          (a.seed, i + 1, time.monotonic() - start, dict(sorted(codes.items()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
