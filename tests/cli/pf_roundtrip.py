#!/usr/bin/env python3
"""tests/cli/pf_roundtrip.py PORT [BYTES]: a TCP round trip through `kubectl port-forward`:
connects to 127.0.0.1:PORT (retrying while the forward starts), sends BYTES random bytes, closes
its sending half, reads until EOF and checks that the echo server in the pod sent back exactly
what it got. Exits 1 with the reason otherwise."""
import hashlib
import os
import socket
import sys
import time

port = int(sys.argv[1])
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1 << 20
payload = os.urandom(n)
for _ in range(100):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=20)
        break
    except OSError:
        time.sleep(0.1)
else:
    sys.exit("cannot connect to the forwarded port %d" % port)
s.sendall(payload)
s.shutdown(socket.SHUT_WR)
got = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    got += b
if hashlib.sha256(got).digest() != hashlib.sha256(payload).digest():
    sys.exit("the echo differs: sent %d bytes, got %d back" % (n, len(got)))
print("round trip of %d bytes: ok" % n)
