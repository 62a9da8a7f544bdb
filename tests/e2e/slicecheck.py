#!/usr/bin/env python3
"""tests/e2e/slicecheck.py: replays a history of Pod watch events and checks that no GPU slice
was ever held by two pods at once.

Input: files of JSON lines as the API's watch sends them ({"type": ..., "object": Pod}), in the
order they were received (several files: one per watch, e.g. before and after a restart of
fatiad; events at or below a resourceVersion already seen are skipped, so overlapping watches
are fine). A pod holds the slices named by its annotation fatia.dev/slices from the moment it is
bound (spec.nodeName) until it is Succeeded or Failed, or deleted: the placement contract. A
slice is "node/id".

Prints a summary line; exit status 1 (with the offending events) when a slice was held twice, or
when --expect-pods N says how many distinct pods must have held a slice and the count differs.
"""
import json
import sys


def main(argv):
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
                if rv and rv <= seen_rv:
                    continue
                seen_rv = max(seen_rv, rv)
                events += 1
                uid = meta.get("uid")
                name = "%s/%s" % (meta.get("namespace"), meta.get("name"))
                names[uid] = name
                spec = obj.get("spec", {})
                node = spec.get("nodeName")
                ann = meta.get("annotations", {}) or {}
                phase = (obj.get("status") or {}).get("phase")
                held = set()
                if typ != "DELETED" and node and phase not in ("Succeeded", "Failed"):
                    for s in (ann.get("fatia.dev/slices") or "").split(","):
                        if s:
                            held.add("%s/%s" % (node, s))
                old = holds.get(uid, (name, set()))[1]
                for s in old - held:
                    if owner.get(s) == uid:
                        del owner[s]
                for s in held - old:
                    other = owner.get(s)
                    if other and other != uid:
                        errors.append("rv %d: slice %s given to %s while %s holds it"
                                      % (rv, s, name, names.get(other, other)))
                    owner[s] = uid
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
