#!/usr/bin/env python3
"""tests/cli/durability.py: writer and independent checker for fatiad's crash test.

  durability.py write URL CA TOKEN LOG THREADS STOPFILE
      THREADS threads create, update and delete WorkloadPriorityClasses through the API until
      STOPFILE exists, surviving fatiad's restarts (a request that fails after it was sent is
      logged as UNKNOWN: it may or may not have happened). Every acknowledged write is logged
      (op, name, value, resourceVersion) when its answer arrives.
  durability.py check URL CA TOKEN LOG
      after a restart, a separate process: every acknowledged write is there (value and at least
      that resourceVersion), nothing acknowledged as deleted came back, unknown writes are either
      there or not (never half), resourceVersions never went backwards (per thread, and no rv
      was handed out twice: a server that lost its counter in a crash would reuse one).
"""
import http.client
import json
import os
import random
import ssl
import sys
import threading
import time
from urllib.parse import urlparse

PATH = "/apis/kueue.x-k8s.io/v1beta2/workloadpriorityclasses"


def conn(url, ca):
    u = urlparse(url)
    ctx = ssl.create_default_context(cafile=ca)
    return http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=10)


def request(c, token, method, path, body=None):
    headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    r = c.getresponse()
    data = r.read()
    return r.status, (json.loads(data) if data else None)


def writer(url, ca, token, log, lock, tid, state, stopfile):
    rnd = random.Random(tid * 7919 + os.getpid())
    c = None
    seq = 0
    mine = {}  # name -> (value, rv) of objects this thread believes exist
    pad = "x" * 1500  # objects of about 2 KB
    while True:
        if seq % 16 == 0 and os.path.exists(stopfile):
            return
        if c is None:
            c = conn(url, ca)
        seq += 1
        r = rnd.random()
        if not mine or r < 0.5:
            name = "d%d-%d" % (tid, seq)
            op, method, path = "create", "POST", PATH
            body = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                    "metadata": {"name": name}, "value": seq, "description": pad}
        elif r < 0.85:
            name = rnd.choice(list(mine))
            op, method, path = "update", "PUT", PATH + "/" + name
            body = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                    "metadata": {"name": name}, "value": seq, "description": pad}
        else:
            name = rnd.choice(list(mine))
            op, method, path, body = "delete", "DELETE", PATH + "/" + name, None
        value = body["value"] if body else 0
        try:
            status, obj = request(c, token, method, path, body)
        except ConnectionRefusedError:
            # fatiad is down: nothing was sent
            c.close()
            c = None
            time.sleep(0.02)
            continue
        except (OSError, http.client.HTTPException):
            c.close()
            c = None
            with lock:
                log.write("UNKNOWN %d %s %s %d\n" % (tid, op, name, value))
                log.flush()
            mine.pop(name, None)
            time.sleep(0.01)
            continue
        if status in (200, 201):
            rv = int(obj["metadata"]["resourceVersion"])
            with lock:
                state["acked"] += 1
                log.write("ACK %d %s %s %d %d\n" % (tid, op, name, value, rv))
                log.flush()
            if op == "delete":
                mine.pop(name, None)
            else:
                mine[name] = (value, rv)
        elif status == 404 and op != "create":
            mine.pop(name, None)  # an unknown delete that did happen
        elif status == 409 and op == "create":
            pass  # an unknown create that did happen; leave it alone
        else:
            with lock:
                log.write("ERROR %d %s %s %d %s\n" % (tid, op, name, status, obj))
                log.flush()


def cmd_write(url, ca, token, logpath, threads, stopfile):
    lock = threading.Lock()
    state = {"acked": 0}
    with open(logpath, "a") as log:
        ts = [threading.Thread(target=writer,
                               args=(url, ca, token, log, lock, t, state, stopfile))
              for t in range(int(threads))]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    return 0


def cmd_check(url, ca, token, logpath):
    c = conn(url, ca)
    status, lst = request(c, token, "GET", PATH)
    if status != 200:
        print("check: list failed: %d %s" % (status, lst))
        return 1
    live = {}
    for item in lst["items"]:
        live[item["metadata"]["name"]] = (item["value"], int(item["metadata"]["resourceVersion"]),
                                          len(item.get("description", "")))
    # replay the log: the last acknowledged state of each name, and the unknown tails
    last = {}      # name -> ("exists", value, rv) | ("gone", rv)
    unknown = {}   # name -> set of possible outcomes after the last ack
    per_thread = {}
    seen_rv = {}
    errors = 0
    acks = 0
    for line in open(logpath):
        f = line.split()
        if not f:
            continue
        if f[0] == "ERROR":
            print("check: the writer got an unexpected answer: " + line.strip())
            errors += 1
            continue
        tid, op, name = int(f[1]), f[2], f[3]
        if f[0] == "ACK":
            acks += 1
            value, rv = int(f[4]), int(f[5])
            if rv <= per_thread.get(tid, 0):
                print("check: thread %d: rv %d after %d: went backwards" %
                      (tid, rv, per_thread[tid]))
                errors += 1
            per_thread[tid] = rv
            if rv in seen_rv:
                print("check: rv %d acknowledged twice (%s, then %s): the counter went back" %
                      (rv, seen_rv[rv], name))
                errors += 1
            seen_rv[rv] = name
            last[name] = ("gone", rv) if op == "delete" else ("exists", value, rv)
            unknown.pop(name, None)
        else:
            unknown.setdefault(name, []).append((op, int(f[4])))
    list_rv = int(lst["metadata"]["resourceVersion"])
    if seen_rv and max(seen_rv) > list_rv:
        print("check: the store's rv %d is below an acknowledged %d" % (list_rv, max(seen_rv)))
        errors += 1
    for name, st in last.items():
        alt = unknown.get(name, [])
        have = live.get(name)
        if st[0] == "exists":
            ok = have is not None and have[0] == st[1] and have[1] >= st[2]
            # a later unknown update or delete may have happened
            if not ok:
                ok = (have is None and any(o == "delete" for o, _ in alt)) or \
                     (have is not None and any(o == "update" and v == have[0] for o, v in alt))
            if not ok:
                print("check: %s: acknowledged value %d rv %d, found %s (unknown after: %s)" %
                      (name, st[1], st[2], have, alt))
                errors += 1
        else:
            ok = have is None or any(o in ("create", "update") for o, _ in alt)
            if not ok:
                print("check: %s: acknowledged as deleted at rv %d, found %s" % (name, st[1], have))
                errors += 1
    for name, have in live.items():
        if have[2] != 1500:
            print("check: %s: half-written description (%d bytes)" % (name, have[2]))
            errors += 1
        if name not in last and name not in unknown:
            print("check: %s: exists but was never written" % name)
            errors += 1
    for name, alt in unknown.items():
        if name in last:
            continue
        have = live.get(name)
        if have is not None and not any(v == have[0] for o, v in alt if o != "delete"):
            print("check: %s: unknown writes %s, found value %s" % (name, alt, have[0]))
            errors += 1
    print("check: %d acknowledged writes, %d unknown, %d objects, %d errors" %
          (acks, sum(len(v) for v in unknown.values()), len(live), errors))
    return 1 if errors else 0


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "write" and len(sys.argv) == 8:
        return cmd_write(*sys.argv[2:])
    if len(sys.argv) >= 2 and sys.argv[1] == "check" and len(sys.argv) == 6:
        return cmd_check(*sys.argv[2:])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
