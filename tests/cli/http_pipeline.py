#!/usr/bin/env python3
"""tests/cli/http_pipeline.py: HTTP/1.1 pipelining against a real server (gateway, engine-sim).

Sends three requests in one write on one connection (GET /health, a POST of a completion, GET
/v1/models with Connection: close) and reads the answers: there must be exactly three, in that
order (RFC 9112 §9.3.2), each framed by its Content-Length or chunked coding, the completion's
body holding "choices" and the models' body "data".

    http_pipeline.py HOST PORT MODEL
"""
import socket
import sys

host, port, model = sys.argv[1], int(sys.argv[2]), sys.argv[3]
body = ('{"model":"%s","prompt":"pipelined","max_tokens":2}' % model).encode()
reqs = (b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n" +
        b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body) + body +
        b"GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
s = socket.create_connection((host, port), timeout=10)
s.sendall(reqs)
data = b""
try:
    while True:
        d = s.recv(65536)
        if not d:
            break
        data += d
except OSError as e:
    print("read ended: %s" % e, file=sys.stderr)


def responses(buf):
    out = []
    while buf:
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            break
        head, buf = buf[:end].decode("latin-1").split("\r\n"), buf[end + 4:]
        status = int(head[0].split(" ")[1])
        hdr = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in head[1:]}
        if status == 100:
            continue
        if "content-length" in hdr:
            n = int(hdr["content-length"])
            b, buf = buf[:n], buf[n:]
        elif hdr.get("transfer-encoding") == "chunked":
            b = b""
            while True:
                le = buf.find(b"\r\n")
                n = int(buf[:le].split(b";")[0], 16)
                b, buf = b + buf[le + 2:le + 2 + n], buf[le + 4 + n:]
                if n == 0:
                    buf = buf[buf.find(b"\r\n") + 2:] if not buf.startswith(b"\r\n") else buf[2:]
                    break
        else:
            b, buf = buf, b""
        out.append((status, b))
    return out


got = responses(data)
ok = (len(got) == 3 and all(st == 200 for st, _ in got) and b"choices" in got[1][1] and
      b'"data"' in got[2][1])
for st, b in got:
    print(st, b[:80])
if not ok:
    print("FAIL: %d answers to 3 pipelined requests, want 3 in order" % len(got), file=sys.stderr)
    sys.exit(1)
print("3 pipelined requests answered in order")
