#!/usr/bin/env python3
"""bench/exec_echo.py URL TOKEN CA NS POD [N]: the latency of an echo through `kubectl exec`'s
stream, from a bench client on loopback: one WebSocket exec of `cat` (v5.channel.k8s.io, as
kubectl 1.33 opens it), then N round trips of a 16-byte line in on stdin (channel 0) and back
on stdout (channel 1), one at a time. Prints p50, p90, p99 and max in milliseconds.
Needs Debian's python3-websocket (websocket-client)."""
import ssl
import sys
import time

import websocket

url, token, ca, ns, pod = sys.argv[1:6]
n = int(sys.argv[6]) if len(sys.argv) > 6 else 2000
ws_url = url.replace("https://", "wss://").replace("http://", "ws://")
ws = websocket.create_connection(
    "%s/api/v1/namespaces/%s/pods/%s/exec?command=cat&stdin=true&stdout=true&stderr=true"
    % (ws_url, ns, pod),
    header=["Authorization: Bearer " + token], subprotocols=["v5.channel.k8s.io"],
    sslopt={"ca_certs": ca, "cert_reqs": ssl.CERT_REQUIRED})
lat = []
for i in range(n + 50):
    line = b"%015d\n" % i
    t0 = time.perf_counter()
    ws.send_binary(b"\x00" + line)
    got = b""
    while not got.endswith(b"\n"):
        m = ws.recv()
        if isinstance(m, str):
            m = m.encode()
        if m[:1] == b"\x01":
            got += m[1:]
    if got != line:
        sys.exit("echo %r, want %r" % (got, line))
    if i >= 50:  # warm-up
        lat.append((time.perf_counter() - t0) * 1000)
ws.send_binary(b"\xff\x00")  # v5: close stdin, cat ends
ws.close()
lat.sort()
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]
print("exec echo round trips: %d" % len(lat))
print("p50: %.3f ms\np90: %.3f ms\np99: %.3f ms\nmax: %.3f ms" % (q(0.5), q(0.9), q(0.99), lat[-1]))
