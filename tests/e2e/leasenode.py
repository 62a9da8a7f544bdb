#!/usr/bin/env python3
"""tests/e2e/leasenode.py URL CA TOKEN NODE DURATION: plays a node agent's heartbeat: renews the
Lease kube-node-lease/NODE (leaseDurationSeconds DURATION) every DURATION/4 seconds, as the
kubelet does, until killed. SIGSTOP it to make the node go silent, SIGCONT to bring it back."""
import datetime
import http.client
import json
import ssl
import sys
import time
from urllib.parse import urlparse

url, ca, token, node, dur = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
u = urlparse(url)
ctx = ssl.create_default_context(cafile=ca)
H = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
BASE = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def call(method, path, body=None):
    c = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=5)
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=H)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, (json.loads(data) if data else None)


call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                    "metadata": {"name": "kube-node-lease"}})
while True:
    try:
        code, obj = call("GET", BASE + "/" + node)
        if code == 404:
            call("POST", BASE, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                "metadata": {"name": node, "namespace": "kube-node-lease"},
                                "spec": {"holderIdentity": node, "leaseDurationSeconds": dur,
                                         "acquireTime": now(), "renewTime": now()}})
        elif code == 200:
            obj["spec"]["renewTime"] = now()
            call("PUT", BASE + "/" + node, obj)
    except (OSError, http.client.HTTPException):
        pass
    time.sleep(dur / 4)
