"""tests/cli/apiserver-watch-memory.sh's driver: N watchers that never read, big writes, RSS.

Usage: apiserver_watch_memory.py URL TOKEN CA PID WATCHERS WRITES
Prints "before N", "during N", "after N" (RSS in KiB) and exits 1 when a bound is broken:
during <= before + 320 MiB (the 256 MiB watch budget plus slack), after <= before + 64 MiB.
"""
import json, socket, ssl, sys, time, urllib.request

url, token, ca, pid, nwatch, nwrites = sys.argv[1:7]
nwatch, nwrites = int(nwatch), int(nwrites)
host, port = url.split("//")[1].split(":")
port = int(port)
ctx = ssl.create_default_context(cafile=ca)
ctx.check_hostname = False


def rss():
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def call(method, path, body=None):
    req = urllib.request.Request(url + path, method=method, data=body,
                                 headers={"Authorization": "Bearer " + token,
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, context=ctx, timeout=60) as r:
        return json.load(r)


POD = "/api/v1/namespaces/default/pods"
call("POST", POD, json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big"},
                              "spec": {"containers": [{"name": "c", "command": ["true"]}]}}).encode())
time.sleep(0.5)
before = rss()
socks = []
for i in range(nwatch):
    raw = socket.socket()
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.connect((host, port))
    s = ctx.wrap_socket(raw)
    s.sendall(f"GET /api/v1/pods?watch=1&resourceVersion=0 HTTP/1.1\r\nHost: x\r\n"
              f"Authorization: Bearer {token}\r\n\r\n".encode())
    socks.append(s)  # never read
time.sleep(1)
peak = rss()
for i in range(nwrites):
    pod = call("GET", POD + "/big")
    pod["spec"]["containers"][0]["args"] = [("x%d" % i) * 700000]  # 1.4 MB, under the 1.5 MiB object limit
    call("PUT", POD + "/big", json.dumps(pod).encode())
    time.sleep(0.5)
    peak = max(peak, rss())
for _ in range(10):
    time.sleep(0.2)
    peak = max(peak, rss())
# the API still answers while they hang
call("GET", POD + "/big")
for s in socks:
    try:
        s.close()
    except OSError:
        pass
time.sleep(2)
after = rss()
print(f"before {before} KiB, during (peak) {peak} KiB, after {after} KiB")
bad = False
if peak > before + 320 * 1024:
    print(f"FAIL: RSS during {peak} KiB > before + 320 MiB", file=sys.stderr)
    bad = True
if after > before + 64 * 1024:
    print(f"FAIL: RSS after the watchers closed {after} KiB > before + 64 MiB", file=sys.stderr)
    bad = True
sys.exit(1 if bad else 0)
