#!/usr/bin/env python3
"""tests/e2e/fakeagent.py URL TOKEN CA [MAX_DELAY_MS]: plays the node agent's part of the pod
contract for tests that run no agent: every pod bound to a node (spec.nodeName, no scheduling
gates) becomes Running, then Succeeded after a random delay (at most MAX_DELAY_MS, default 200);
a bound pod that is deleted loses its fatia.dev/agent finalizer (there is none to lose here: the
fake adds none, so deletion is immediate, as for a pod that never started).

It watches pods (JSON lines of the API's watch), writes through the status subresource with a
merge patch, and retries a write that raced another writer. Stops at EOF of the watch or on
SIGTERM. Prints one line per 100 pods it completed.
"""
import heapq
import http.client
import json
import random
import signal
import ssl
import sys
import threading
import time
import urllib.parse


def main(argv):
    url, token, ca = argv[0], argv[1], argv[2]
    max_delay = int(argv[3]) / 1000.0 if len(argv) > 3 else 0.2
    u = urllib.parse.urlparse(url)
    ctx = ssl.create_default_context(cafile=ca) if u.scheme == "https" else None

    def conn():
        if ctx:
            return http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=30)
        return http.client.HTTPConnection(u.hostname, u.port, timeout=30)

    headers = {"Authorization": "Bearer " + token}
    due = []  # (time, seq, ns, name, uid, phase)
    lock = threading.Condition()
    seen = {}  # uid -> last phase written
    stop = threading.Event()
    done = [0]

    def writer():
        c = conn()
        seq = 0
        while not stop.is_set():
            with lock:
                while not due and not stop.is_set():
                    lock.wait(0.2)
                if stop.is_set():
                    return
                t = due[0][0]
                now = time.time()
                if t > now:
                    lock.wait(t - now)
                    continue
                _, _, ns, name, uid, phase = heapq.heappop(due)
            body = json.dumps({"metadata": {"uid": uid}, "status": {"phase": phase}})
            path = "/api/v1/namespaces/%s/pods/%s/status" % (ns, name)
            for attempt in range(5):
                try:
                    c.request("PATCH", path, body,
                              dict(headers, **{"Content-Type": "application/merge-patch+json"}))
                    r = c.getresponse()
                    r.read()
                except (OSError, http.client.HTTPException):
                    c = conn()
                    time.sleep(0.05)
                    continue
                if r.status in (200, 404):
                    break
                time.sleep(0.02 * (attempt + 1))
            if phase == "Succeeded":
                done[0] += 1
                if done[0] % 100 == 0:
                    print("fakeagent: %d pods completed" % done[0], flush=True)
            seq += 1

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    c = conn()
    c.request("GET", "/api/v1/pods?watch=1&resourceVersion=0", headers=headers)
    r = c.getresponse()
    seq = 0
    while not stop.is_set():
        line = r.readline()
        if not line:
            break
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if ev.get("type") not in ("ADDED", "MODIFIED"):
            continue
        pod = ev["object"]
        meta, spec = pod["metadata"], pod.get("spec", {})
        phase = (pod.get("status") or {}).get("phase")
        uid = meta["uid"]
        if not spec.get("nodeName") or spec.get("schedulingGates") or meta.get("deletionTimestamp"):
            continue
        if phase in ("Succeeded", "Failed") or seen.get(uid):
            continue
        seen[uid] = True
        now = time.time()
        with lock:
            seq += 1
            heapq.heappush(due, (now, seq, meta["namespace"], meta["name"], uid, "Running"))
            seq += 1
            heapq.heappush(due, (now + random.random() * max_delay, seq, meta["namespace"],
                                 meta["name"], uid, "Succeeded"))
            lock.notify()
    stop.set()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
