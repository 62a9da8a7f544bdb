#!/usr/bin/env python3
"""tests/cli/http_smuggle.py: request-smuggling attacks on a real server over raw sockets.

The API server (fatiad) and the gateway share one HTTP/1.1 module (src/http/http1.c); this
script sends both the ambiguous framings RFC 9112 says a server must refuse, each on a fresh
connection and each followed, in the same write, by a second request smuggled in the body: the
attack fails only when the server answers the refusal status, answers nothing else (the smuggled
request is never served) and closes the connection.

    http_smuggle.py URL PATH [--ca CA] [--token TOKEN] [--chunked-ok]
URL is http:// or https:// (then --ca is the CA file); PATH a POST target. --chunked-ok: the
server accepts chunked request bodies (fatiad), so the bare-LF chunk framings are tried too
(the gateway answers every chunked request 411).
"""
import argparse
import socket
import ssl
import sys
import threading
from urllib.parse import urlparse

ap = argparse.ArgumentParser()
ap.add_argument("url")
ap.add_argument("path")
ap.add_argument("--ca")
ap.add_argument("--token")
ap.add_argument("--chunked-ok", action="store_true")
A = ap.parse_args()
U = urlparse(A.url)
FAILS = []

SMUGGLED = b"GET /smuggled-%d HTTP/1.1\r\nHost: x\r\n\r\n"


def connect():
    s = socket.create_connection((U.hostname, U.port), timeout=10)
    if U.scheme == "https":
        ctx = ssl.create_default_context(cafile=A.ca)
        s = ctx.wrap_socket(s, server_hostname=U.hostname)
    return s


def head(extra):
    h = b"POST " + A.path.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    if A.token:
        h += b"Authorization: Bearer " + A.token.encode() + b"\r\n"
    return h + extra


def attack(i, what, data, want, out):
    s = connect()
    s.sendall(data + SMUGGLED % i)
    got = b""
    closed = False
    try:
        while True:
            d = s.recv(65536)
            if not d:
                closed = True
                break
            got += d
    except (ConnectionResetError, ssl.SSLError):
        closed = True  # closed with our smuggled bytes unread: the kernel sends a reset
    except OSError:
        pass
    s.close()
    answers = got.count(b"HTTP/1.1 ")
    status = got[9:12].decode("latin-1") if got.startswith(b"HTTP/1.1 ") else "none"
    ok = status == str(want) and answers == 1 and closed
    out[i] = (ok, "%s %-46s -> %s, want %d (%d answer(s), %s)" %
              ("ok  " if ok else "FAIL", what, status, want, answers,
               "closed" if closed else "open"))


# Each: (what, bytes, status). The body that follows the head would, read the other way, hold
# the smuggled request: a server that picked the other framing would answer twice.
CASES = [
    ("two different Content-Length", head(b"Content-Length: 2\r\nContent-Length: 40\r\n\r\n{}"),
     400),
    ("Content-Length list '2, 40'", head(b"Content-Length: 2, 40\r\n\r\n{}"), 400),
    ("Content-Length list '2, 2'", head(b"Content-Length: 2, 2\r\n\r\n{}"), 400),
    ("Content-Length '+2'", head(b"Content-Length: +2\r\n\r\n{}"), 400),
    ("space before the colon", head(b"Content-Length : 2\r\n\r\n{}"), 400),
    ("Content-Length and chunked",
     head(b"Content-Length: 7\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"), 400),
    ("Transfer-Encoding: gzip, chunked",
     head(b"Transfer-Encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"), 501),
    ("Transfer-Encoding: chunked, chunked",
     head(b"Transfer-Encoding: chunked, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"), 501),
    ("two Transfer-Encoding: chunked headers",
     head(b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"),
     501),
    ("Transfer-Encoding: identity", head(b"Transfer-Encoding: identity\r\n\r\n{}"), 501),
    ("Transfer-Encoding: xchunked", head(b"Transfer-Encoding: xchunked\r\n\r\n{}"), 501),
    ("obsolete line folding", head(b"Content-Length: 2\r\n X: y\r\n\r\n{}"), 400),
]
if A.chunked_ok:
    TE = b"Transfer-Encoding: chunked\r\n\r\n"
    CASES += [
        ("chunked: bare LF after the size", head(TE + b"2\n{}\r\n0\r\n\r\n"), 400),
        ("chunked: bare LF after an extension", head(TE + b"2;a=b\n{}\r\n0\r\n\r\n"), 400),
        ("chunked: bare LF after the data", head(TE + b"2\r\n{}\n0\r\n\r\n"), 400),
        ("chunked: bare LF after the last chunk", head(TE + b"2\r\n{}\r\n0\n\r\n"), 400),
        ("chunked: bare LF ending the trailers", head(TE + b"2\r\n{}\r\n0\r\n\n"), 400),
        ("chunked: bare LF in a trailer", head(TE + b"2\r\n{}\r\n0\r\nT: x\n\r\n"), 400),
        ("chunked: size that overflows", head(TE + b"fffffffffffffffff\r\n{}\r\n0\r\n\r\n"),
         400),
    ]
else:
    CASES.append(("chunked request body", head(b"Transfer-Encoding: chunked\r\n\r\n"
                                               b"2\r\n{}\r\n0\r\n\r\n"), 411))

# concurrently: a server may linger (read and discard) for its idle timeout before it closes
out = [None] * len(CASES)
threads = [threading.Thread(target=attack, args=(i, w, d, st, out))
           for i, (w, d, st) in enumerate(CASES)]
for t in threads:
    t.start()
for t in threads:
    t.join()
for i, r in enumerate(out):
    ok, line = r if r else (False, "FAIL %s: no result" % CASES[i][0])
    print(line)
    if not ok:
        FAILS.append(CASES[i][0])
if FAILS:
    print("%d smuggling attack(s) not refused" % len(FAILS), file=sys.stderr)
    sys.exit(1)
print("every smuggling attack was refused")
