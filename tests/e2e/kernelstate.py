#!/usr/bin/python3
"""tests/e2e/kernelstate.py SOCKET: the culler race on a jupyter-server at a unix socket.

Starts a kernel, runs time.sleep(SLEEP) on the shell channel, sends a kernel_info_request on the
control channel of the same WebSocket while it runs, waits for its reply, then polls /api/kernels
until the sleep ends. Prints one line: the states /api/kernels reported while the cell ran
("busy" or "busy idle" ...), then "after:" and the state once the cell's idle came.
Debian's python3 with python3-websocket (scripts/setup).
"""
import http.client
import json
import socket
import sys
import time
import uuid

import websocket

SLEEP = 5


class Unix(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=30)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)


def api(path, method="GET", body=None):
    c = Unix(SOCK)
    c.request(method, path, body)
    r = c.getresponse()
    data = r.read()
    if r.status >= 300:
        sys.exit(f"{method} {path}: {r.status} {data[:200]!r}")
    return json.loads(data)


def state(kid):
    return api(f"/api/kernels/{kid}")["execution_state"]


def msg(channel, msg_type, content):
    mid = uuid.uuid4().hex
    return mid, json.dumps({
        "header": {"msg_id": mid, "msg_type": msg_type, "username": "t", "session": SESSION,
                   "version": "5.3", "date": ""},
        "parent_header": {}, "metadata": {}, "content": content, "channel": channel,
        "buffers": []})


def wait_for(ws, mid, msg_type, limit=60):
    end = time.time() + limit
    while time.time() < end:
        m = json.loads(ws.recv())
        if m.get("parent_header", {}).get("msg_id") == mid and m["msg_type"] == msg_type:
            return m
    sys.exit(f"no {msg_type} for {mid}")


SOCK = sys.argv[1]
SESSION = uuid.uuid4().hex
kid = api("/api/kernels", "POST", "{}")["id"]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(SOCK)
ws = websocket.create_connection(f"ws://localhost/api/kernels/{kid}/channels?session_id={SESSION}",
                                 socket=s, timeout=30)
# the server's nudge (kernel_info_request on shell and control): let it finish, so that the only
# control request during the cell is ours. The server's IOPub subscription can miss the first
# statuses (a late SUB joiner), so ask on shell until the state is idle.
end = time.time() + 60
while state(kid) != "idle":
    if time.time() > end:
        sys.exit(f"the kernel never got idle: {state(kid)}")
    ki, m = msg("shell", "kernel_info_request", {})
    ws.send(m)
    wait_for(ws, ki, "kernel_info_reply")
    time.sleep(0.3)
time.sleep(1)
ex, m = msg("shell", "execute_request", {"code": f"import time; time.sleep({SLEEP})",
                                         "silent": False, "store_history": False,
                                         "user_expressions": {}, "allow_stdin": False})
ws.send(m)
t0 = time.time()
wait_for(ws, ex, "status")
seen = []
while state(kid) != "busy":
    time.sleep(0.05)
ki, m = msg("control", "kernel_info_request", {})
ws.send(m)
wait_for(ws, ki, "kernel_info_reply")
while time.time() - t0 < SLEEP - 1:
    st = state(kid)
    if not seen or seen[-1] != st:
        seen.append(st)
    time.sleep(0.1)
ws.settimeout(SLEEP + 30)
while True:
    m = json.loads(ws.recv())
    if (m.get("parent_header", {}).get("msg_id") == ex and m["msg_type"] == "status"
            and m["content"]["execution_state"] == "idle"):
        break
time.sleep(0.5)
print(" ".join(seen), "after:", state(kid))
ws.close()
Unix(SOCK).request("DELETE", f"/api/kernels/{kid}")
