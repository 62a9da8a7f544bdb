#!/usr/bin/env python3
"""tests/gateway/fake_kube_api.py: the few Kubernetes API calls the gateway's InferencePool
pools make (gateway/kubepool.c), for tests/cli/gateway_kube.sh, until fatiad's API server is
in the tree (then the same test can point at fatiad).

  GET  /apis/inference.networking.k8s.io/v1/namespaces/NS/inferencepools/NAME
  GET  /api/v1/namespaces/NS/pods?labelSelector=k%3Dv      (a PodList with resourceVersion)
  GET  /api/v1/namespaces/NS/pods?...&watch=1&resourceVersion=RV   (chunked JSON lines, held open)
Every request must carry "Authorization: Bearer <TOKEN>" (401 otherwise). The test drives it:
  POST   /_test/pod     {"name", "ip", "ready", "labels"}   creates or replaces a pod
  DELETE /_test/pod/NAME                                     deletes it
  POST   /_test/expire                                       open watches get ERROR 410 and end
Usage: fake_kube_api.py PORTFILE TOKEN POOL_PORT
"""
import json
import os
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORTFILE, TOKEN, POOL_PORT = sys.argv[1], sys.argv[2], int(sys.argv[3])
cv = threading.Condition()
pods = {}      # name -> pod
log = []       # (rv, type, pod)
rv = [100]
expired = [0]  # bumped by /_test/expire
expire_rv = [0]  # watches from before this version are too old (410)

POOL = {
    "apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool",
    "metadata": {"name": "pool", "namespace": "ns", "resourceVersion": "1"},
    "spec": {"selector": {"matchLabels": {"app": "llm"}},
             "targetPorts": [{"number": POOL_PORT}],
             "endpointPickerRef": {"name": "fatia-gateway", "port": {"number": 9002}}},
}


def make_pod(name, ip, ready, labels):
    rv[0] += 1
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "labels": labels,
                         "resourceVersion": str(rv[0])},
            "status": {"podIP": ip, "conditions": [
                {"type": "Ready", "status": "True" if ready else "False"}]}}


def matches(pod, selector):
    labels = pod["metadata"].get("labels", {})
    for term in filter(None, selector.split(",")):
        k, _, v = term.partition("=")
        if labels.get(k) != v:
            return False
    return True


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def authorized(self):
        if self.headers.get("Authorization") != "Bearer " + TOKEN:
            self.reply(401, {"kind": "Status", "code": 401, "reason": "Unauthorized"})
            return False
        return True

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(n) or b"{}")
        with cv:
            if self.path == "/_test/pod":
                kind = "MODIFIED" if body["name"] in pods else "ADDED"
                p = make_pod(body["name"], body["ip"], body.get("ready", True),
                             body.get("labels", {"app": "llm"}))
                pods[body["name"]] = p
                log.append((rv[0], kind, p))
            elif self.path == "/_test/expire":
                expired[0] += 1
                rv[0] += 1
                expire_rv[0] = rv[0]
            cv.notify_all()
        self.reply(200, {})

    def do_DELETE(self):
        name = self.path.rsplit("/", 1)[1]
        with cv:
            p = pods.pop(name, None)
            if p:
                rv[0] += 1
                p = json.loads(json.dumps(p))
                p["metadata"]["resourceVersion"] = str(rv[0])
                log.append((rv[0], "DELETED", p))
            cv.notify_all()
        self.reply(200, {})

    def do_GET(self):
        if not self.authorized():
            return
        url = urllib.parse.urlparse(self.path)
        q = dict(urllib.parse.parse_qsl(url.query))
        if url.path == "/apis/inference.networking.k8s.io/v1/namespaces/ns/inferencepools/pool":
            return self.reply(200, POOL)
        if url.path != "/api/v1/namespaces/ns/pods":
            return self.reply(404, {"kind": "Status", "code": 404})
        sel = q.get("labelSelector", "")
        if q.get("watch") not in ("1", "true"):
            with cv:
                items = [p for p in pods.values() if matches(p, sel)]
                return self.reply(200, {"kind": "PodList", "apiVersion": "v1",
                                        "metadata": {"resourceVersion": str(rv[0])},
                                        "items": items})
        since = int(q.get("resourceVersion", "0"))
        if since < expire_rv[0]:
            return self.reply(410, {"kind": "Status", "code": 410, "reason": "Expired"})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        gen = expired[0]

        def send(obj):
            line = (json.dumps(obj) + "\n").encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
            self.wfile.flush()

        try:
            while True:
                with cv:
                    if expired[0] != gen:
                        ev = [("ERROR", {"kind": "Status", "code": 410, "reason": "Expired"})]
                    else:
                        ev = [(t, p) for (r, t, p) in log if r > since and matches(p, sel)]
                        since = rv[0]
                    if not ev:
                        cv.wait(5)
                        continue
                for t, p in ev:
                    send({"type": t, "object": p})
                if ev[0][0] == "ERROR":
                    self.wfile.write(b"0\r\n\r\n")
                    return
        except (BrokenPipeError, ConnectionResetError):
            return


server = ThreadingHTTPServer(("127.0.0.1", 0), H)
server.daemon_threads = True
with open(PORTFILE + ".tmp", "w") as f:
    f.write("%d\n" % server.server_address[1])
os.rename(PORTFILE + ".tmp", PORTFILE)
server.serve_forever()
