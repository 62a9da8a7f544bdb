#!/usr/bin/python3
"""tests/e2e/nbproxy.py: a browser's side of fatiad's workbench proxy, for tests/e2e/nbproxy.sh.

  login    URL CA NS NAME TOKEN          prints the session cookie (checks its attributes)
  get      URL CA PATH COOKIE            prints "STATUS BODY" of a GET
  kernel   URL CA NS NAME COOKIE         starts a kernel, runs print(6*7) over the WebSocket
  bench    URL CA NS NAME COOKIE SOCKET  median added latency of the proxy (ms), median of 5
  run      URL CA NS NAME COOKIE CODE    starts a kernel running CODE, returns once it is busy

Debian's python3 with python3-websocket (scripts/setup).
"""
import http.client
import json
import socket
import ssl
import statistics
import sys
import time
import urllib.parse
import uuid

import websocket


def conn(url, ca):
    u = urllib.parse.urlparse(url)
    ctx = ssl.create_default_context(cafile=ca)
    ctx.check_hostname = False
    return http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=30)


def login(url, ca, ns, name, token):
    c = conn(url, ca)
    body = urllib.parse.urlencode({"token": token})
    c.request("POST", f"/_fatia/login/{ns}/{name}", body,
              {"Content-Type": "application/x-www-form-urlencoded"})
    r = c.getresponse()
    r.read()
    if r.status != 303:
        sys.exit(f"login: status {r.status}")
    sc = r.getheader("Set-Cookie") or ""
    for attr in ("HttpOnly", "SameSite=Strict", "Secure", f"Path=/notebook/{ns}/{name}/"):
        if attr not in sc:
            sys.exit(f"login: Set-Cookie lacks {attr}: {sc}")
    if token in sc:
        sys.exit("login: the cookie carries the token")
    if r.getheader("Location") != f"/notebook/{ns}/{name}/":
        sys.exit(f"login: Location {r.getheader('Location')}")
    print(sc.split(";")[0].split("=", 1)[1])


def get(url, ca, path, cookie):
    c = conn(url, ca)
    h = {"Cookie": f"fatia-nb={cookie}; other=1"} if cookie != "-" else {}
    c.request("GET", path, headers=h)
    r = c.getresponse()
    print(r.status, r.read().decode(errors="replace")[:2000].replace("\n", " "))


def start_code(url, ca, ns, name, cookie, code):
    base = f"/notebook/{ns}/{name}"
    c = conn(url, ca)
    hdr = {"Cookie": f"fatia-nb={cookie}", "Content-Type": "application/json"}
    c.request("POST", f"{base}/api/kernels", json.dumps({"name": "python3"}), hdr)
    r = c.getresponse()
    k = json.loads(r.read())
    if r.status not in (200, 201):
        sys.exit(f"kernel: POST api/kernels: {r.status} {k.get('traceback', k)}")
    u = urllib.parse.urlparse(url)
    ws = websocket.create_connection(
        f"wss://{u.hostname}:{u.port}{base}/api/kernels/{k['id']}/channels",
        header=[f"Cookie: fatia-nb={cookie}"], origin=url,
        sslopt={"ca_certs": ca, "check_hostname": False}, timeout=60)
    # As a notebook UI does, wait for the kernel to be ready before executing: jupyter-server
    # nudges a new connection with kernel_info_requests on the shell and control channels, and
    # Debian's 1.23 takes the control reply's idle as the kernel's state even while a cell runs
    # (docs/selfservice.md, "Kernel state"), so a cell sent before they are answered can read idle.
    ws.settimeout(1)
    seen, end = 0, time.time() + 5
    while seen < 2 and time.time() < end:
        try:
            m = json.loads(ws.recv())
        except websocket.WebSocketTimeoutException:
            continue
        if (m.get("msg_type") == "status" and m["content"].get("execution_state") == "idle"
                and m.get("parent_header", {}).get("msg_type") == "kernel_info_request"):
            seen += 1
    ws.settimeout(60)
    msg_id = uuid.uuid4().hex
    ws.send(json.dumps({
        "header": {"msg_id": msg_id, "username": "t", "session": uuid.uuid4().hex,
                   "msg_type": "execute_request", "version": "5.3", "date": ""},
        "parent_header": {}, "metadata": {}, "channel": "shell",
        "content": {"code": code, "silent": False, "store_history": False,
                    "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}}))
    return ws, msg_id


def kernel(url, ca, ns, name, cookie):
    ws, msg_id = start_code(url, ca, ns, name, cookie, "print(6*7)")
    end = time.time() + 60
    while time.time() < end:
        m = json.loads(ws.recv())
        if m.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        if m["msg_type"] == "stream":
            print("stream:", m["content"]["text"].strip())
            ws.close()
            return
    sys.exit("kernel: no output in 60 s")


def run(url, ca, ns, name, cookie, code):
    ws, msg_id = start_code(url, ca, ns, name, cookie, code)
    end = time.time() + 60
    while time.time() < end:
        m = json.loads(ws.recv())
        if (m.get("parent_header", {}).get("msg_id") == msg_id and m["msg_type"] == "status"
                and m["content"]["execution_state"] == "busy"):
            print("busy")
            ws.close()
            return
    sys.exit("run: the kernel never got busy")


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=30)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)


def one_ms(c, path, headers):
    t = time.perf_counter()
    c.request("GET", path, headers=headers)
    r = c.getresponse()
    r.read()
    if r.status != 200:
        sys.exit(f"bench: {path}: {r.status}")
    return (time.perf_counter() - t) * 1000


def bench(url, ca, ns, name, cookie, sock):
    """Proxied and direct requests alternate (keep-alive both), so that the machine's load falls
    on both alike; a run's added latency is the difference of their medians."""
    path = f"/notebook/{ns}/{name}/api/status"
    proxied = conn(url, ca)
    direct = UnixHTTPConnection(sock)
    host = urllib.parse.urlparse(url).netloc
    ph, dh = {"Cookie": f"fatia-nb={cookie}"}, {"Host": host}
    one_ms(proxied, path, ph)  # the TLS handshake, outside the runs
    added = []
    for _ in range(5):
        p, d = [], []
        for _ in range(300):
            p.append(one_ms(proxied, path, ph))
            d.append(one_ms(direct, path, dh))
        mp, md = statistics.median(p), statistics.median(d)
        added.append(mp - md)
        print(f"run: proxied {mp:.3f} ms, direct {md:.3f} ms, added {mp - md:.3f} ms")
    print(f"median added latency: {statistics.median(added):.3f} ms")


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"login": login, "get": get, "kernel": kernel, "bench": bench, "run": run}[cmd](*args)
