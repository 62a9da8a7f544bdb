#!/usr/bin/env python3
"""tests/e2e/slicecheck.py: replays a history of Pod watch events and checks that no GPU slice
was ever held by two pods at once.

Input: files of JSON lines as the API's watch sends them ({"type": ..., "object": Pod}), in the
order they were received (several files: one per watch, e.g. before and after a restart of
fatiad; events at or below a resourceVersion already seen are skipped, so overlapping watches
are fine). A pod holds the slices named by its annotation fatia.dev/slices from the moment it is
bound (spec.nodeName) until it is Succeeded or Failed, or deleted: the placement contract. A
slice is "node/id". A device the annotation fatia.dev/devices marks with "claim" belongs to that
ResourceClaim rather than to the pod: the pods that share one claim share its devices, and only a
different holder (another pod, another claim) counts as a double booking.

Prints a summary line; exit status 1 (with the offending events) when a slice was held twice, or
when --expect-pods N says how many distinct pods must have held a slice and the count differs.
"""
import json
import sys


def self_test():
    """The checker must catch what it claims to catch: two histories, one clean, one not."""
    import os
    import tempfile

    def pod(name, rv, node, slices, phase="Running", claim=None, uid=None):
        devs = [{"slice": x, "claim": claim} if claim else {"slice": x} for x in slices]
        return json.dumps({"type": "MODIFIED", "object": {
            "metadata": {"name": name, "namespace": "t", "uid": uid or name,
                         "resourceVersion": str(rv),
                         "annotations": {"fatia.dev/slices": ",".join(slices),
                                         "fatia.dev/devices": json.dumps(devs)}},
            "spec": {"nodeName": node}, "status": {"phase": phase}}})
    clean = [pod("a", 1, "n", ["gpu-2"]), pod("a", 2, "n", ["gpu-2"], "Succeeded"),
             pod("b", 3, "n", ["gpu-2"]), pod("c", 4, "n", ["gpu-3"], claim="t/x"),
             pod("d", 5, "n", ["gpu-3"], claim="t/x")]
    dirty = [pod("a", 1, "n", ["gpu-2"]), pod("b", 2, "n", ["gpu-2"])]
    claim_vs_pod = [pod("c", 1, "n", ["gpu-3"], claim="t/x"), pod("e", 2, "n", ["gpu-3"])]
    ok = True
    for lines, want in ((clean, 0), (dirty, 1), (claim_vs_pod, 1)):
        fd, path = tempfile.mkstemp()
        with os.fdopen(fd, "w") as f:
            f.write("\n".join(lines) + "\n")
        got = main([path])
        os.unlink(path)
        ok &= got == want
    print("slicecheck: self-test %s" % ("passed" if ok else "FAILED"))
    return 0 if ok else 1


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    files = []
    expect = None
    i = 0
    while i < len(argv):
        if argv[i] == "--expect-pods":
            expect = int(argv[i + 1])
            i += 2
            continue
        files.append(argv[i])
        i += 1
    owner = {}  # slice -> pod uid
    holds = {}  # pod uid -> (name, set of slices)
    names = {}
    seen_rv = 0
    seen_top = set()  # the lines at seen_rv
    events = 0
    bound_pods = set()
    max_held = 0
    errors = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    ev = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by a killed server
                typ = ev.get("type")
                obj = ev.get("object") or {}
                if typ not in ("ADDED", "MODIFIED", "DELETED"):
                    continue
                meta = obj.get("metadata", {})
                rv = int(meta.get("resourceVersion", "0") or 0)
                # on etcd replicas the ops of one batch share its revision: an event at the
                # newest rv is skipped only if this very event was seen (overlapping watches)
                if rv and (rv < seen_rv or (rv == seen_rv and line in seen_top)):
                    continue
                if rv > seen_rv:
                    seen_top = set()
                seen_top.add(line)
                seen_rv = max(seen_rv, rv)
                events += 1
                uid = meta.get("uid")
                name = "%s/%s" % (meta.get("namespace"), meta.get("name"))
                names[uid] = name
                spec = obj.get("spec", {})
                node = spec.get("nodeName")
                ann = meta.get("annotations", {}) or {}
                phase = (obj.get("status") or {}).get("phase")
                held = {}  # slice -> holder (the pod, or "claim ns/name")
                if typ != "DELETED" and node and phase not in ("Succeeded", "Failed"):
                    claimed = {}
                    try:
                        for d in json.loads(ann.get("fatia.dev/devices") or "[]"):
                            if d.get("claim"):
                                claimed[d.get("slice")] = "claim " + d["claim"]
                    except ValueError:
                        pass
                    for s in (ann.get("fatia.dev/slices") or "").split(","):
                        if s:
                            held["%s/%s" % (node, s)] = claimed.get(s, uid)
                old = holds.get(uid, (name, {}))[1]
                for s in set(old) - set(held):
                    if owner.get(s, (None, set()))[0] == old[s]:
                        users = owner[s][1]
                        users.discard(uid)
                        if not users:
                            del owner[s]
                for s, holder in held.items():
                    if s in old and old[s] == holder:
                        continue
                    cur = owner.get(s)
                    if cur and cur[0] != holder:
                        errors.append("rv %d: slice %s given to %s while %s holds it"
                                      % (rv, s, name if holder == uid else holder,
                                         names.get(cur[0], cur[0])))
                        continue
                    if not cur:
                        owner[s] = (holder, set())
                    owner[s][1].add(uid)
                if held:
                    bound_pods.add(uid)
                    holds[uid] = (name, held)
                else:
                    holds.pop(uid, None)
                max_held = max(max_held, len(owner))
    print("slicecheck: %d events, %d pods held slices, at most %d slices held at once, "
          "%d double bookings" % (events, len(bound_pods), max_held, len(errors)))
    for e in errors[:20]:
        print("  " + e)
    if errors:
        return 1
    if expect is not None and len(bound_pods) != expect:
        print("slicecheck: expected %d pods to hold slices, saw %d" % (expect, len(bound_pods)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
