#!/usr/bin/env python3
"""tests/cli/store_check.py URL CA TOKEN STORE.DB: every object of the store file is served by
fatiad with the same uid and resourceVersion (found through discovery). Prints the count;
exits 1 naming each object that is missing or differs. The `kubernetes` Service of `default` and
its Endpoints are fatiad's own, written again at each start with the port it listens on (as
kube-apiserver reconciles them): for those only the uid must match."""
import json
import sqlite3
import ssl
import sys
import urllib.request

url, ca, token, db = sys.argv[1:5]
ctx = ssl.create_default_context(cafile=ca)
ctx.check_hostname = False


def get(path):
    req = urllib.request.Request(url + path, headers={"Authorization": "Bearer " + token})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, None


kinds = {}  # (group, kind) -> (prefix, plural, namespaced)
groups = [("", "/api/v1")]
_, apis = get("/apis")
for g in apis["groups"]:
    groups.append((g["name"], "/apis/" + g["preferredVersion"]["groupVersion"]))
for group, prefix in groups:
    _, res = get(prefix)
    for r in res["resources"]:
        if "/" not in r["name"]:
            kinds[(group, r["kind"])] = (prefix, r["name"], r["namespaced"])

RECONCILED = {("", "Service", "default", "kubernetes"), ("", "Endpoints", "default", "kubernetes")}
con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
bad = n = 0
for grp, kind, ns, name, uid, rv in con.execute(
        "SELECT grp, kind, namespace, name, uid, rv FROM objects"):
    n += 1
    if (grp, kind) not in kinds:
        print("not served: %s/%s %s/%s" % (grp, kind, ns, name))
        bad += 1
        continue
    prefix, plural, namespaced = kinds[(grp, kind)]
    path = "%s/namespaces/%s/%s/%s" % (prefix, ns, plural, name) if namespaced else \
        "%s/%s/%s" % (prefix, plural, name)
    code, obj = get(path)
    if code != 200:
        print("%s: %d" % (path, code))
        bad += 1
    elif obj["metadata"].get("uid", "") != uid or (
            obj["metadata"]["resourceVersion"] != str(rv) and (grp, kind, ns, name) not in RECONCILED):
        print("%s: uid %s rv %s, the store has %s %s" %
              (path, obj["metadata"].get("uid"), obj["metadata"]["resourceVersion"], uid, rv))
        bad += 1
print("%d objects checked, %d wrong" % (n, bad))
sys.exit(1 if bad or n == 0 else 0)
