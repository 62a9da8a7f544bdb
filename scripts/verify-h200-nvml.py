#!/usr/bin/env python3
# scripts/verify-h200-nvml.py OUTDIR: the comparison half of scripts/verify-h200-nvml. Reads what
# that script saved in OUTDIR (fatia's plan JSON from the nvml backend, nvidia-smi's -q -x, its
# --query-gpu CSV, mig -lgip and -lgipp, and the raw NVML recording) and compares them field by
# field. Prints one line per field: PASS, FAIL (the two values differ, or a side is missing where it
# must not be) or SKIP (nvidia-smi does not report the field here, said why); exits 1 on any FAIL.
# Standard library only: it runs on the GPU machine's stock python3.
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}


def say(status, name, detail):
    counts[status] += 1
    print(f"{status} {name}: {detail}")


def check(name, smi, fatia, equal=None):
    ok = (equal(smi, fatia) if equal else smi == fatia) and smi is not None
    say("PASS" if ok else "FAIL", name, f"nvidia-smi={smi!r} fatia={fatia!r}")


def read(name):
    try:
        with open(os.path.join(OUT, name), encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def rc(name):
    t = read(name + ".rc")
    return int(t.strip()) if t and t.strip().lstrip("-").isdigit() else None


def load_json(name):
    t = read(name)
    if rc(name) != 0 or not t:
        err = (read(name + ".err") or "").strip().splitlines()
        say("FAIL", name, f"exit {rc(name)}: {err[-1] if err else 'no output'}")
        return None
    try:
        return json.loads(t)
    except ValueError as e:
        say("FAIL", name, f"not JSON: {e}")
        return None


def bus_id(s):
    s = (s or "").strip().lower()
    return s[4:] if s.startswith("0000") and s != "0000" and len(s) > 12 else s


# ---- what nvidia-smi says ----
smi = {"gpus": [], "driver": None, "cuda": None}
xml_text = read("smi.xml")
if rc("smi.xml") == 0 and xml_text:
    try:
        root = ET.fromstring(xml_text)
        smi["driver"] = (root.findtext("driver_version") or "").strip() or None
        smi["cuda"] = (root.findtext("cuda_version") or "").strip() or None
        for g in root.findall("gpu"):
            total = (g.findtext("fb_memory_usage/total") or "").split()
            smi["gpus"].append({
                "bus": bus_id(g.findtext("pci/pci_bus_id") or g.get("id")),
                "name": (g.findtext("product_name") or "").strip(),
                "brand": (g.findtext("product_brand") or "").strip() or None,
                "arch": (g.findtext("product_architecture") or "").strip() or None,
                "uuid": (g.findtext("uuid") or "").strip(),
                "minor": (g.findtext("minor_number") or "").strip(),
                "memory_mib": int(total[0]) if total and total[0].isdigit() else None,
                "device_id": (g.findtext("pci/pci_device_id") or "").strip().lower() or None,
                "mig_current": (g.findtext("mig_mode/current_mig") or "").strip() or None,
                "mig_pending": (g.findtext("mig_mode/pending_mig") or "").strip() or None,
            })
    except ET.ParseError as e:
        say("FAIL", "nvidia-smi -q -x", f"cannot parse: {e}")
else:
    say("FAIL", "nvidia-smi -q -x", f"exit {rc('smi.xml')}")

query = {}
qtext = read("smi-query.csv")
if rc("smi-query.csv") == 0 and qtext:
    for line in qtext.strip().splitlines():
        f = [x.strip() for x in line.split(",")]
        if len(f) >= 8:
            query[bus_id(f[4])] = {"index": f[0], "uuid": f[1], "name": f[2], "memory": f[3],
                                   "cc": f[5], "mig": f[6], "driver": f[7]}

lgip = []
ltext = read("lgip.txt") or ""
lines = ltext.splitlines()
for i, line in enumerate(lines):
    m = re.match(r"^\|\s+(\d+)\s+MIG\s+(\S+)\s+(\d+)\s+(\d+)/(\d+)\s+([\d.]+)\s+(\S+)\s+(\d+)\s+(\d+)"
                 r"\s+(\d+)\s+\|", line)
    if not m:
        continue
    row = {"gpu": int(m[1]), "name": m[2], "id": int(m[3]), "total": int(m[5]),
           "gib": m[6], "sm": int(m[8]), "dec": int(m[9]), "enc": int(m[10])}
    n = re.match(r"^\|\s+(\d+)\s+(\d+)\s+(\d+)\s+\|", lines[i + 1]) if i + 1 < len(lines) else None
    if n:
        row.update({"ce": int(n[1]), "jpeg": int(n[2]), "ofa": int(n[3])})
    lgip.append(row)

lgipp = {}
for line in (read("lgipp.txt") or "").splitlines():
    m = re.search(r"GPU\s+(\d+)\s+Profile ID\s+(\d+)\s+Placements?\s*:\s*\{([\d,\s]*)\}:(\d+)", line)
    if m:
        starts = [int(x) for x in m[3].replace(" ", "").split(",") if x]
        lgipp[(int(m[1]), int(m[2]))] = (starts, int(m[4]))

# ---- what fatia says ----
plan = load_json("plan.json")
plan_mig = load_json("plan-mig.json")
recording = load_json("nvml-recording.json")

if plan:
    inv = plan.get("inventory", {})
    check("inventory source", "nvml", inv.get("source"))
    gpus = plan.get("gpus", [])
    models = {m["product"]: m for m in inv.get("models", [])}
    node = (plan.get("nodes") or [{}])[0]
    labels = node.get("labels", {})
    check("GPU count", len(smi["gpus"]), len(gpus))
    check("driver version", smi["driver"], labels.get("nvidia.com/cuda.driver-version.full"))
    if smi["cuda"]:
        check("CUDA driver version", smi["cuda"], labels.get("nvidia.com/cuda.runtime-version.full"))
    else:
        say("SKIP", "CUDA driver version", "nvidia-smi -q -x has no cuda_version")
    for s in smi["gpus"]:
        g = next((x for x in gpus if bus_id(x.get("pciBusID")) == s["bus"]), None)
        tag = f"GPU {s['bus']}"
        if not g:
            say("FAIL", tag, "fatia has no GPU at this PCI address")
            continue
        q = query.get(s["bus"], {})
        check(f"{tag} name", s["name"], g.get("product"))
        check(f"{tag} uuid", s["uuid"], g.get("uuid"))
        check(f"{tag} minor", s["minor"], str(g.get("minor")))
        check(f"{tag} pci bus id", s["bus"], g.get("pciBusID"))
        if s["device_id"]:
            check(f"{tag} pci device id", s["device_id"].replace("0x", ""),
                  (g.get("pciDeviceId") or "").lower().replace("0x", ""))
        check(f"{tag} memory MiB", s["memory_mib"], g.get("memoryBytes", 0) // (1 << 20))
        check(f"{tag} index", q.get("index"), str(g.get("index")))
        if q.get("cc") and re.match(r"^\d+\.\d+$", q["cc"]):
            check(f"{tag} compute capability", q["cc"], g.get("cudaComputeCapability"))
        else:
            say("SKIP", f"{tag} compute capability", f"nvidia-smi gave {q.get('cc')!r}")
        if s["brand"]:
            check(f"{tag} brand", s["brand"].upper(),
                  (models.get(g.get("product"), {}).get("brand") or "").upper())
        if s["arch"]:
            check(f"{tag} architecture", s["arch"], g.get("architecture"))
        check(f"{tag} MIG mode", (s["mig_current"] or "").lower(), g.get("mig", {}).get("mode"))
        # MIG profiles: -lgip rows against the NVML-read geometry
        model = models.get(g.get("product"), {})
        profiles = {p["id"]: p for p in model.get("mig", {}).get("profiles", [])}
        gidx = g.get("index")
        rows = [r for r in lgip if r["gpu"] == gidx]
        if not rows and not profiles:
            say("SKIP", f"{tag} MIG profiles", "no MIG profiles on either side")
        check(f"{tag} MIG profile count", len(rows), len(profiles))
        for r in rows:
            p = profiles.get(r["id"])
            pt = f"{tag} profile {r['id']} ({r['name']})"
            if not p:
                say("FAIL", pt, "fatia does not have this profile id")
                continue
            check(f"{pt} name", r["name"], p["name"])
            check(f"{pt} instances", r["total"], p["instances"])
            check(f"{pt} memory GiB", r["gib"], f"{p['memoryBytes'] / (1 << 30):.2f}")
            check(f"{pt} SMs", r["sm"], p["multiprocessors"])
            check(f"{pt} decoders", r["dec"], p["decoders"])
            check(f"{pt} encoders", r["enc"], p["encoders"])
            if "ce" in r:
                check(f"{pt} copy engines", r["ce"], p["copyEngines"])
                check(f"{pt} jpeg", r["jpeg"], p["jpegEngines"])
                check(f"{pt} ofa", r["ofa"], p["ofaEngines"])
            pp = lgipp.get((gidx, r["id"]))
            if pp:
                check(f"{pt} placement starts", pp[0], p["placements"])
                check(f"{pt} placement size", pp[1], p["memorySlices"])
            else:
                say("FAIL", f"{pt} placements", "not in nvidia-smi mig -lgipp")
        # the whole-GPU slice
        whole = [x for x in plan.get("slices", []) if x["gpu"]["index"] == gidx]
        if whole and whole[0]["kind"] == "whole":
            check(f"{tag} whole slice memory MiB", s["memory_mib"], whole[0]["memoryBytes"] >> 20)
            check(f"{tag} whole slice uuid attribute", s["uuid"],
                  whole[0]["attributes"].get("uuid", {}).get("string"))
            check(f"{tag} whole slice pciBusID attribute", s["bus"],
                  whole[0]["attributes"].get("resource.kubernetes.io/pciBusID", {}).get("string"))

if plan_mig:
    for g in plan_mig.get("gpus", []):
        s = next((x for x in smi["gpus"] if x["bus"] == bus_id(g.get("pciBusID"))), None)
        tag = f"GPU {g.get('pciBusID')} all-balanced"
        mig = g.get("mig", {})
        layout = " ".join(f"{x['profile']}@{x['start']}" for x in mig.get("layout", []))
        if not s:
            continue
        enabled = (s["mig_current"] or "").lower() == "enabled"
        # with MIG off on the GPU, the layout must be planned, not applied
        check(f"{tag} state", "applied" if enabled else "planned", mig.get("state"),
              lambda a, b: enabled or a == b)
        say("PASS" if mig.get("layout") else "FAIL", f"{tag} layout", layout or "none")
        sl = [x for x in plan_mig.get("slices", []) if x["gpu"]["uuid"] == g["uuid"]]
        planned = [x for x in sl if x["state"] == "planned"]
        if not enabled:
            check(f"{tag} slices planned", len(sl), len(planned))
            check(f"{tag} planned slices have no MIG uuid", 0,
                  sum(1 for x in planned if "uuid" in x["attributes"]))
        alloc = plan_mig["nodes"][0]["allocatable"]
        check(f"{tag} allocatable MIG devices while not applied", 0 if not enabled else None,
              sum(int(v) for k, v in alloc.items() if k.startswith("nvidia.com/mig-")),
              lambda a, b: enabled or a == b)

if recording:
    devs = recording.get("devices", [])
    check("recording device count", len(smi["gpus"]), len(devs))
    for d, s in zip(devs, smi["gpus"]):
        check(f"recording GPU {s['bus']} name", s["name"],
              d.get("nvmlDeviceGetName", {}).get("value"))
        mem = d.get("nvmlDeviceGetMemoryInfo", {}).get("value", {}).get("total", 0)
        check(f"recording GPU {s['bus']} memory MiB", s["memory_mib"], mem >> 20)
    if recording.get("fake"):
        say("SKIP", "recording source", "the fake library (a test run, not hardware)")
    else:
        say("PASS", "recording source", recording.get("library", "?"))

print(f"SUMMARY: {counts['PASS']} PASS, {counts['FAIL']} FAIL, {counts['SKIP']} SKIP")
sys.exit(1 if counts["FAIL"] else 0)
