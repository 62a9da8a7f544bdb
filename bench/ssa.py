#!/usr/bin/env python3
"""bench/ssa.py URL PID: a server-side apply update against a plain update of the same object
(issue 17: "an SSA update costs at most 2x a plain update", median of 5, A/B in one run).

The object: a Pod of 4 containers with 6 env vars each and 6 labels (about 2.5 KB). A plain
update is a merge patch that changes one label; an SSA update is an apply of the whole
configuration with that label changed (what `kubectl apply --server-side` sends). Each round
runs N of one then N of the other on one keep-alive connection; the cost of an update is
fatiad's CPU time (utime + stime of PID, /proc) per request, and the client's wall time per
request. Five rounds; the medians and their ratio are printed."""
import http.client
import json
import os
import statistics
import sys
import time
from urllib.parse import urlparse

URL, PID = sys.argv[1], int(sys.argv[2])
N = int(os.environ.get("BENCH_N", "300"))
TOKEN = os.environ["FATIA_TOKEN"]
U = urlparse(URL)
TICK = os.sysconf("SC_CLK_TCK")
conn = http.client.HTTPConnection(U.hostname, U.port, timeout=30)


def cpu():
    f = open("/proc/%d/stat" % PID).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / TICK


def call(method, path, body, ctype):
    conn.request(method, path, body=body, headers={"Content-Type": ctype,
                                                   "Authorization": "Bearer " + TOKEN})
    r = conn.getresponse()
    data = r.read()
    if r.status >= 300:
        raise SystemExit("%s %s: %d %s" % (method, path, r.status, data[:300]))


def config(v):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "bench", "namespace": "default",
                         "labels": dict({"l%d" % i: "value-%d" % i for i in range(5)}, v=str(v))},
            "spec": {"containers": [{"name": "c%d" % c, "image": "registry.example/img:%d" % c,
                                     "env": [{"name": "E%d" % e, "value": "x" * 40}
                                             for e in range(6)]} for c in range(4)]}}


P = "/api/v1/namespaces/default/pods/bench"
ONLY = os.environ.get("BENCH_ONLY")  # "plain": a fatiad without apply (main's, for the cost of
if ONLY == "plain":                  # managedFields on a plain update)
    call("POST", "/api/v1/namespaces/default/pods", json.dumps(config(0)), "application/json")
else:
    call("PATCH", P + "?fieldManager=bench", json.dumps(config(0)), "application/apply-patch+yaml")


def run(kind, base):
    t0, c0 = time.perf_counter(), cpu()
    for i in range(N):
        v = base + i
        if kind == "plain":
            call("PATCH", P + "?fieldManager=plain",
                 json.dumps({"metadata": {"labels": {"v": str(v)}}}), "application/merge-patch+json")
        else:
            call("PATCH", P + "?fieldManager=bench&force=true", json.dumps(config(v)),
                 "application/apply-patch+yaml")
    return (time.perf_counter() - t0) / N * 1e6, (cpu() - c0) / N * 1e6


res = {"plain": [], "ssa": []}
base = 1
for rnd in range(5):
    for kind in ("plain",) if ONLY == "plain" else ("plain", "ssa"):
        res[kind].append(run(kind, base))
        base += N
size = len(json.dumps(config(0)))
pw = statistics.median(r[0] for r in res["plain"])
pc = statistics.median(r[1] for r in res["plain"])
if ONLY == "plain":
    print("plain update (merge patch): %.0f us wall, %.0f us fatiad CPU (median)" % (pw, pc))
    sys.exit(0)
sw = statistics.median(r[0] for r in res["ssa"])
sc = statistics.median(r[1] for r in res["ssa"])
print("object %d bytes, %d updates per round, 5 rounds (A/B in one run)" % (size, N))
print("plain update (merge patch): %.0f us wall, %.0f us fatiad CPU (median)" % (pw, pc))
print("SSA update (apply, force):  %.0f us wall, %.0f us fatiad CPU (median)" % (sw, sc))
print("ratio SSA / plain: %.2f wall, %.2f CPU (target <= 2)" % (sw / pw, sc / pc if pc else 0))
