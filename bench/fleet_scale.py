#!/usr/bin/env python3
"""bench/fleet_scale.py URLS TOKEN CA NODES PODS RATE OUT.json [PIDS]: the fleet scale harness
(docs/fleet-scale.md), in the manner of KWOK / kubemark: one process plays NODES simulated nodes
through the real API of a running fatiad (started with --no-agent and a NodePool of NODES x 8
simulated H200s, so the device controller publishes the Nodes and ResourceSlices):

  leases       kube-node-lease/<node> created, then renewed every 10 s per node (a merge patch
               of spec.renewTime), spread evenly over the 10 s;
  node status  every 60 s per node a strategic-merge patch of the Ready condition's heartbeat
               (the kubelet's nodeStatusReportFrequency is 5 min; 60 s is harsher);
  pods         RATE pods/s created (each nvidia.com/gpu: 1, Kueue's queue-name label, so each goes
               through Kueue admission and fatia's placement), PODS in all; each pod is played
               as a no-op: once bound (spec.nodeName seen on the watch) its status becomes Running,
               then Succeeded, then it is deleted.

Measured (client side, monotonic clock): every API call's latency per verb; lease renewals per
second; admission-to-bind (the pod seen ungated on the watch -> seen with nodeName) and
bind-to-running (bound seen -> Running seen); CPU and RSS of the PIDS (fatiad, etcd) from /proc.
Writes OUT.json and prints a summary. Only the Python standard library.

Several replicas (bench/fleet-scale.sh REPLICAS=R): URLS is their URLs, comma-separated, one
token and one CA for all; each connection keeps to one replica, URL i mod R: lease thread i,
creator i, worker i; node status on replica 1 mod R; the pod watch and the read load on the
first. Per-verb latencies are then also reported per replica (api_by_replica). PIDS is
LABEL=PID,... (fatiad-a=123,etcd-0=456; a bare PID is labelled by itself); the processes of the
JSON are keyed by label. FLEET_LEADER (env): the label of the replica that leads, recorded.
"""
import http.client
import json
import os
import queue
import ssl
import sys
import threading
import time
import urllib.parse

URLS, TOKEN, CA = sys.argv[1].split(","), sys.argv[2], sys.argv[3]
NODES, PODS, RATE = int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
OUT = sys.argv[7]
PIDS = {}  # label -> pid
for item in (sys.argv[8].split(",") if len(sys.argv) > 8 and sys.argv[8] else []):
    label, _, pid = item.rpartition("=")
    PIDS[label or pid] = int(pid)
NS = "scale"
R = len(URLS)
UP = [urllib.parse.urlparse(x) for x in URLS]
REPLICA_NAMES = [l for l in PIDS if l.startswith("fatiad")][:R]
if len(REPLICA_NAMES) < R:
    REPLICA_NAMES = ["replica-%d" % i for i in range(R)]
ctx = ssl.create_default_context(cafile=CA)
lock = threading.Lock()
lat = {}  # verb -> [seconds]
lat_r = {}  # (replica index, verb) -> [seconds]
errors = {}  # verb -> count
codes = {}  # verb -> {status: count}
retried = {}  # verb -> 409 Conflicts retried (Conn.call)
stop = threading.Event()


def now():
    return time.monotonic()


class Conn:
    def __init__(self, replica=0):
        self.r = replica % R
        self.c = None

    def call(self, verb, method, path, body=None, ctype="application/json"):
        """One call; a 409 of reason Conflict (not AlreadyExists) is retried up to 5 times, as
        a kubelet's status manager retries, each retry counted (retried_conflicts)."""
        for k in range(6):
            st, out = self.call1(verb, method, path, body, ctype)
            if st != 409 or k == 5 or (out or {}).get("reason") != "Conflict":
                return st, out
            with lock:
                retried[verb] = retried.get(verb, 0) + 1
            time.sleep(0.02 * (k + 1))
        return st, out

    def call1(self, verb, method, path, body, ctype):
        data = json.dumps(body).encode() if body is not None else None
        hdr = {"Authorization": "Bearer " + TOKEN, "Content-Type": ctype}
        for attempt in range(2):
            if self.c is None:
                u = UP[self.r]
                self.c = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=30)
            t0 = now()
            try:
                self.c.request(method, path, body=data, headers=hdr)
                r = self.c.getresponse()
                raw = r.read()
            except (OSError, http.client.HTTPException):
                self.c.close()
                self.c = None
                if attempt:
                    with lock:
                        errors[verb] = errors.get(verb, 0) + 1
                    return 0, None
                continue
            dt = now() - t0
            with lock:
                lat.setdefault(verb, []).append(dt)
                lat_r.setdefault((self.r, verb), []).append(dt)
                cv = codes.setdefault(verb, {})
                cv[r.status] = cv.get(r.status, 0) + 1
                if r.status >= 400 and r.status != 404 and r.status != 409:
                    errors[verb] = errors.get(verb, 0) + 1
            try:
                return r.status, json.loads(raw) if raw else None
            except ValueError:
                return r.status, None
        return 0, None


def pct(v, p):
    if not v:
        return None
    s = sorted(v)
    return s[min(len(s) - 1, int(p / 100.0 * len(s)))]


# ---- nodes: leases and status ----
renewals = [0]


def node_names(c):
    st, body = c.call("list", "GET", "/api/v1/nodes")
    return sorted(n["metadata"]["name"] for n in (body or {}).get("items", []))


def lease_loop(names, part, parts):
    c = Conn(part)
    mine = names[part::parts]
    ts = lambda: time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
    c.call("create", "POST", "/api/v1/namespaces",
           {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-node-lease"}})
    for n in mine:
        c.call("create", "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
               {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": n, "namespace": "kube-node-lease"},
                "spec": {"holderIdentity": n, "leaseDurationSeconds": 40, "renewTime": ts()}})
    period = 10.0
    start = now()
    k = 0
    while not stop.is_set():
        n = mine[k % len(mine)]
        due = start + ((k + 1) * period / len(mine))  # the create was the first renewal
        d = due - now()
        if d > 0:
            stop.wait(d)
        st, _ = c.call("patch", "PATCH",
                       "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/" + n,
                       {"spec": {"renewTime": ts()}}, "application/merge-patch+json")
        if st == 200:
            with lock:
                renewals[0] += 1
        k += 1


def status_loop(names):
    c = Conn(1)
    period = 60.0
    start = now()
    k = 0
    while not stop.is_set():
        n = names[k % len(names)]
        d = start + k * period / len(names) - now()
        if d > 0:
            stop.wait(d)
        t = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        c.call("patch", "PATCH", "/api/v1/nodes/%s/status" % n,
               {"status": {"conditions": [{"type": "Ready", "lastHeartbeatTime": t}]}},
               "application/strategic-merge-patch+json")
        k += 1


# ---- pods ----
pods = {}  # name -> dict of times
work = queue.Queue()


def watch_loop(rv):
    u = UP[0]
    while not stop.is_set():
        c = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=3600)
        c.request("GET", "/api/v1/namespaces/%s/pods?watch=1&resourceVersion=%s" % (NS, rv),
                  headers={"Authorization": "Bearer " + TOKEN})
        r = c.getresponse()
        while not stop.is_set():
            line = r.readline()
            if not line:
                break
            ev = json.loads(line)
            o = ev.get("object", {})
            rv = o.get("metadata", {}).get("resourceVersion", rv)
            name = o.get("metadata", {}).get("name")
            t = now()
            with lock:
                p = pods.get(name)
            if p is None or ev.get("type") == "DELETED":
                continue
            spec, st = o.get("spec", {}), o.get("status", {})
            if "ungated" not in p and not spec.get("schedulingGates"):
                p["ungated"] = t
            if "bound" not in p and spec.get("nodeName"):
                p["bound"] = t
                work.put(("run", name))
            if "running" not in p and st.get("phase") == "Running":
                p["running"] = t
                work.put(("succeed", name))
            if "done" not in p and st.get("phase") == "Succeeded":
                p["done"] = t
                work.put(("delete", name))


def worker(part):
    c = Conn(part)
    while True:
        kind, name = work.get()
        if kind is None:
            return
        path = "/api/v1/namespaces/%s/pods/%s" % (NS, name)
        ts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        if kind == "run":
            c.call("patch", "PATCH", path + "/status",
                   {"status": {"phase": "Running", "startTime": ts,
                               "conditions": [{"type": "Ready", "status": "True"}]}},
                   "application/merge-patch+json")
        elif kind == "succeed":
            c.call("patch", "PATCH", path + "/status",
                   {"status": {"phase": "Succeeded",
                               "conditions": [{"type": "Ready", "status": "False"}]}},
                   "application/merge-patch+json")
        else:
            c.call("delete", "DELETE", path)


CREATORS = 8  # open loop: a slow answer must not slow the arrivals


def creator(part, start):
    c = Conn(part)
    for i in range(part, PODS, CREATORS):
        d = start + i / RATE - now()
        if d > 0:
            time.sleep(d)
        name = "p%06d" % i
        with lock:
            pods[name] = {"created": now()}
        c.call("create", "POST", "/api/v1/namespaces/%s/pods" % NS,
               {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": "gpu"}},
                "spec": {"restartPolicy": "Never",
                         "containers": [{"name": "c", "image": "noop",
                                         "resources": {"requests": {"cpu": "100m",
                                                                    "memory": "64Mi"},
                                                       "limits": {"nvidia.com/gpu": "1"}}}]}})


def creators():
    start = now()
    ts = [threading.Thread(target=creator, args=(k, start), daemon=True) for k in range(CREATORS)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return now() - start


def reader():
    """A steady read load: GET of a node and a LIST of the namespace's pods, 5/s."""
    c = Conn()
    names = node_names(c)
    k = 0
    while not stop.is_set():
        c.call("get", "GET", "/api/v1/nodes/" + names[k % len(names)])
        if k % 5 == 0:
            c.call("list", "GET", "/api/v1/namespaces/%s/pods?limit=500" % NS)
        k += 1
        stop.wait(0.2)


def proc_sample(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    rss = 0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
    return ticks / os.sysconf("SC_CLK_TCK"), rss


def main():
    c = Conn()
    names = node_names(c)
    if len(names) < NODES:
        sys.exit("only %d nodes published, want %d" % (len(names), NODES))
    names = names[:NODES]
    st, body = c.call("list", "GET", "/api/v1/namespaces/%s/pods" % NS)
    rv = body["metadata"]["resourceVersion"]
    threads = [threading.Thread(target=watch_loop, args=(rv,), daemon=True)]
    threads += [threading.Thread(target=lease_loop, args=(names, i, 4), daemon=True)
                for i in range(4)]
    threads += [threading.Thread(target=status_loop, args=(names,), daemon=True),
                threading.Thread(target=reader, daemon=True)]
    threads += [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(6)]
    for t in threads:
        t.start()
    cpu0 = {p: proc_sample(pid) for p, pid in PIDS.items()}
    t0 = now()
    peak = {p: 0 for p in PIDS}
    created = [None]
    ct = threading.Thread(target=lambda: created.__setitem__(0, creators()), daemon=True)
    ct.start()
    r0 = renewals[0]
    deadline = t0 + PODS / RATE + float(os.environ.get("FLEET_TAIL", "120"))
    while now() < deadline:
        time.sleep(1)
        for p, pid in PIDS.items():
            try:
                peak[p] = max(peak[p], proc_sample(pid)[1])
            except OSError:
                pass
        with lock:
            done = sum(1 for p in pods.values() if "done" in p)
        if not ct.is_alive() and done >= PODS:
            break
    wall = now() - t0
    renew_rate = (renewals[0] - r0) / wall
    cpu = {p: (proc_sample(pid)[0] - cpu0[p][0]) / wall for p, pid in PIDS.items()}
    stop.set()
    with lock:
        vals = list(pods.values())
        a2b = [p["bound"] - p["ungated"] for p in vals if "bound" in p and "ungated" in p]
        b2r = [p["running"] - p["bound"] for p in vals if "running" in p and "bound" in p]
        c2b = [p["bound"] - p["created"] for p in vals if "bound" in p]
        res = {
            "nodes": NODES, "gpus": NODES * 8, "pods": PODS, "rate": RATE,
            "create_seconds": created[0], "pods_created": len(vals), "wall_seconds": wall,
            "pods_bound": len(c2b), "pods_running": len(b2r),
            "pods_succeeded": sum(1 for p in vals if "done" in p),
            "lease_renewals_per_s": renew_rate,
            "api": {v: {"n": len(x), "p50_ms": 1e3 * pct(x, 50), "p99_ms": 1e3 * pct(x, 99),
                        "max_ms": 1e3 * max(x), "errors": errors.get(v, 0),
                        "retried_conflicts": retried.get(v, 0),
                        "codes": {str(k): n for k, n in sorted(codes.get(v, {}).items())}}
                    for v, x in sorted(lat.items())},
            "admission_to_bind_ms": {"p50": 1e3 * (pct(a2b, 50) or 0),
                                     "p99": 1e3 * (pct(a2b, 99) or 0)},
            "create_to_bind_ms": {"p50": 1e3 * (pct(c2b, 50) or 0),
                                  "p99": 1e3 * (pct(c2b, 99) or 0)},
            "bind_to_running_ms": {"p50": 1e3 * (pct(b2r, 50) or 0),
                                   "p99": 1e3 * (pct(b2r, 99) or 0)},
            "processes": {p: {"pid": PIDS[p], "cpu_cores": cpu[p], "rss_peak_mib": peak[p] / 2**20}
                          for p in PIDS},
        }
        if R > 1:
            res["replicas"] = REPLICA_NAMES
            res["leader"] = os.environ.get("FLEET_LEADER") or None
            res["api_by_replica"] = {
                REPLICA_NAMES[i]: {v: {"n": len(x), "p50_ms": 1e3 * pct(x, 50),
                                       "p99_ms": 1e3 * pct(x, 99)}
                                   for (j, v), x in sorted(lat_r.items()) if j == i}
                for i in range(R)}
    json.dump(res, open(OUT, "w"), indent=1)
    print(json.dumps(res, indent=1))


main()
