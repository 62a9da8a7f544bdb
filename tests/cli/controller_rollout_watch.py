#!/usr/bin/env python3
"""tests/cli/controller_rollout_watch.py URL TOKEN CA NS SELECTOR STOPFILE OUT

Polls the pods of SELECTOR in NS (every 20 ms, straight at the API) until STOPFILE exists, and
writes to OUT the fewest Ready pods and the most live (not terminating) pods it saw, and how
many polls it made: "min_ready max_live polls". Used by controller-deployment.sh to show that a
rolling update never has fewer than replicas - maxUnavailable ready pods, nor more than
replicas + maxSurge."""
import json
import os
import ssl
import sys
import time
import urllib.parse
import urllib.request

url, token, ca, ns, sel, stop, out = sys.argv[1:8]
ctx = ssl.create_default_context(cafile=ca)
req = urllib.request.Request(
    f"{url}/api/v1/namespaces/{ns}/pods?labelSelector={urllib.parse.quote(sel)}",
    headers={"Authorization": f"Bearer {token}"})
min_ready, max_live, polls = 10**9, 0, 0
while not os.path.exists(stop):
    with urllib.request.urlopen(req, context=ctx) as r:
        items = json.load(r)["items"]
    live = [p for p in items if not p["metadata"].get("deletionTimestamp")]
    ready = 0
    for p in items:
        for c in p.get("status", {}).get("conditions", []):
            if c.get("type") == "Ready" and c.get("status") == "True":
                ready += 1
    min_ready = min(min_ready, ready)
    max_live = max(max_live, len(live))
    polls += 1
    time.sleep(0.02)
with open(out, "w") as f:
    f.write(f"{min_ready} {max_live} {polls}\n")
