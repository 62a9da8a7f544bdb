#!/usr/bin/env python3
"""tests/cli/cdi_check.py SPEC.json: checks a CDI spec against the rules of CDI SPEC v1.1.0
(cncf-tags/container-device-interface SPEC.md and its schema, as reference/containers.md §4
summarises them): the required fields, no unknown field at any level (a runtime refuses to load
such a spec), the kind's and the device names' syntax, unique names, absolute paths, device node
types, permissions, hook names, env entries as KEY=VALUE. Prints each violation; exits 1 on any."""
import json
import re
import sys

ERR = []


def err(where, what):
    ERR.append(f"{where}: {what}")


def only(obj, allowed, where):
    if not isinstance(obj, dict):
        err(where, "not an object")
        return False
    for k in obj:
        if k not in allowed:
            err(where, f"unknown field '{k}'")
    return True


def strs(v, where):
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        err(where, "not an array of strings")
        return []
    return v


def abspath(v, where):
    if not isinstance(v, str) or not v.startswith("/"):
        err(where, f"not an absolute path: {v!r}")


def uint32(v, where):
    if not isinstance(v, int) or isinstance(v, bool) or v < 0 or v > 0xFFFFFFFF:
        err(where, f"not a uint32: {v!r}")


HOOKS = {"prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"}


def edits(e, where):
    if not only(e, {"env", "deviceNodes", "mounts", "hooks", "additionalGIDs", "intelRdt", "netDevices"}, where):
        return
    for i, kv in enumerate(strs(e.get("env", []), where + ".env")):
        if "=" not in kv or kv.startswith("="):
            err(f"{where}.env[{i}]", f"not KEY=VALUE: {kv!r}")
    for i, n in enumerate(e.get("deviceNodes", [])):
        w = f"{where}.deviceNodes[{i}]"
        if not only(n, {"path", "hostPath", "type", "major", "minor", "fileMode", "permissions", "uid", "gid"}, w):
            continue
        if "path" not in n:
            err(w, "no path")
        abspath(n.get("path"), w + ".path")
        if "hostPath" in n:
            abspath(n["hostPath"], w + ".hostPath")
        if n.get("type", "c") not in ("b", "c", "u", "p"):
            err(w, f"type {n.get('type')!r}")
        for f in ("major", "minor", "fileMode", "uid", "gid"):
            if f in n:
                uint32(n[f], f"{w}.{f}")
        if "permissions" in n and not re.fullmatch(r"[rwm]{1,3}", n["permissions"]):
            err(w, f"permissions {n['permissions']!r}")
    for i, m in enumerate(e.get("mounts", [])):
        w = f"{where}.mounts[{i}]"
        if not only(m, {"hostPath", "containerPath", "type", "options"}, w):
            continue
        for f in ("hostPath", "containerPath"):
            if f not in m:
                err(w, f"no {f}")
            abspath(m.get(f), f"{w}.{f}")
        if "type" in m and not isinstance(m["type"], str):
            err(w, "type not a string")
        strs(m.get("options", []), w + ".options")
    for i, h in enumerate(e.get("hooks", [])):
        w = f"{where}.hooks[{i}]"
        if not only(h, {"hookName", "path", "args", "env", "timeout"}, w):
            continue
        if h.get("hookName") not in HOOKS:
            err(w, f"hookName {h.get('hookName')!r}")
        abspath(h.get("path"), w + ".path")
        strs(h.get("args", []), w + ".args")
        strs(h.get("env", []), w + ".env")
        if "timeout" in h:
            uint32(h["timeout"], w + ".timeout")
    for i, g in enumerate(e.get("additionalGIDs", [])):
        uint32(g, f"{where}.additionalGIDs[{i}]")


def main():
    spec = json.load(open(sys.argv[1]))
    if only(spec, {"cdiVersion", "kind", "annotations", "devices", "containerEdits"}, "spec"):
        for f in ("cdiVersion", "kind", "devices"):
            if f not in spec:
                err("spec", f"no {f}")
        if not re.fullmatch(r"\d+\.\d+\.\d+", str(spec.get("cdiVersion", ""))):
            err("spec.cdiVersion", repr(spec.get("cdiVersion")))
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*\.[A-Za-z0-9_.-]+/[A-Za-z0-9][A-Za-z0-9_.-]*",
                            str(spec.get("kind", ""))):
            err("spec.kind", repr(spec.get("kind")))
        names = set()
        for i, d in enumerate(spec.get("devices", [])):
            w = f"devices[{i}]"
            if not only(d, {"name", "annotations", "containerEdits"}, w):
                continue
            n = d.get("name", "")
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.:-]*", n):
                err(w + ".name", repr(n))
            if n in names:
                err(w + ".name", f"{n!r} twice")
            names.add(n)
            if "containerEdits" not in d:
                err(w, "no containerEdits")
            else:
                edits(d["containerEdits"], w + ".containerEdits")
        if "containerEdits" in spec:
            edits(spec["containerEdits"], "spec.containerEdits")
    for e in ERR:
        print("cdi_check:", e)
    sys.exit(1 if ERR else 0)


if __name__ == "__main__":
    main()
