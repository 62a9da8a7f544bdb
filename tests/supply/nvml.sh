#!/bin/bash
# tests/supply/nvml.sh: the nvml backend's real code against the fake libnvidia-ml.so.1 replaying
# the H200's answers (tests/data/nvml/h200.json):
#   - the inventory (UUID, PCI, memory, MIG profiles from NVML, not the catalog);
#   - a MIG policy on a GPU whose MIG mode is off: planned, not applied, nothing allocatable;
#   - --apply (fake only): enable MIG, create the layout with MIG UUIDs, re-plan applied; change
#     the layout; back to whole; a mode change pending a reset; the refusal on a "real" driver;
#   - an 8-GPU board derived from the recording, with NVLink to two NVSwitch groups: islands;
#   - fatia-nvml-record on the fake gives back the recording (the recorder and the fake agree);
#   - scripts/verify-h200-nvml on the fake and a fake nvidia-smi: all PASS, and a lie is a FAIL.
. "$(dirname "$0")/../cli/lib.bash"
FAKE=$BUILD/tests/fake-nvml/libnvidia-ml.so.1
UNMARKED=$BUILD/tests/fake-nvml-unmarked/libnvidia-ml.so.1
REC=tests/data/nvml/h200.json
export FATIA_FAKE_NVML=$PWD/$REC
unset FATIA_FAKE_NVML_STATE FATIA_FAKE_NVML_RESET_REQUIRED FATIA_ALLOW_MIG_APPLY
plan() { "$FATIA" plan --inventory nvml --nvml-lib "$FAKE" --node-name h200 "$@"; }

cat >"$TMP/balanced.yaml" <<'EOF'
apiVersion: fatia.dev/v1alpha1
kind: GPUSharingPolicy
metadata: {name: balanced}
spec:
  mig: {strategy: mixed, config: all-balanced}
EOF
sed 's/all-balanced/all-1g.18gb/; s/name: balanced/name: small/' "$TMP/balanced.yaml" >"$TMP/small.yaml"
sed 's/all-balanced/all-disabled/; s/name: balanced/name: whole/' "$TMP/balanced.yaml" >"$TMP/off.yaml"

# the inventory
expect_rc 0 plan -o json
python3 - "$TMP/out" <<'PY' || fail "nvml inventory"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["inventory"]["source"] == "nvml", d["inventory"]
g = d["gpus"][0]
assert g["uuid"] == "GPU-b8937736-7a82-9ccb-a2ed-aa52863b565f", g
assert g["pciBusID"] == "0000:00:06.0" and g["pciDeviceId"] == "0x233510DE", g
assert g["memoryBytes"] == 150754820096 and g["multiprocessors"] == 132, g
assert g["mig"]["mode"] == "disabled" and g["verified"] == "nvml", g
m = d["inventory"]["models"][0]
assert m["brand"] == "Nvidia" and m["architecture"] == "Hopper" and m["verified"] == "nvml", m
ids = sorted(p["id"] for p in m["mig"]["profiles"])
assert ids == [0, 5, 9, 14, 15, 19, 20], ids
p15 = [p for p in m["mig"]["profiles"] if p["id"] == 15][0]
assert p15["name"] == "1g.35gb" and p15["placements"] == [0, 2, 4, 6] and p15["index"] == 9, p15
assert m["contextReserveBytes"] == 768 << 20, m   # from the catalog: NVML does not say
s = d["slices"][0]
assert s["id"] == "gpu-0" and s["state"] == "applied" and s["kind"] == "whole", s
assert s["attributes"]["driverVersion"] == {"version": "580.159.4"}, s["attributes"]
assert s["attributes"]["cudaDriverVersion"] == {"version": "13.0.0"}, s["attributes"]
assert d["nodes"][0]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-H200"
PY

# MIG asked on a GPU whose MIG mode is off: planned, not applied
expect_rc 0 plan -f "$TMP/balanced.yaml"
expect_line "$TMP/out" "MIG mixed [2g.35gb    |1g.18|1g.18|3g.71gb                ]   planned"
expect_line "$TMP/out" "pods=110, nvidia.com/mig-2g.35gb=0, nvidia.com/mig-1g.18gb=0, nvidia.com/mig-3g.71gb=0"

# --apply against the fake, with its state kept in a file
export FATIA_FAKE_NVML_STATE=$TMP/state.json
expect_rc 0 plan -f "$TMP/balanced.yaml" --apply
expect_line "$TMP/err" "apply: GPU 0: MIG mode enabled"
expect_line "$TMP/err" "apply: GPU 0: created 3g.71gb at 4 as MIG-"
expect_line "$TMP/err" "apply: 1 GPU changed, 0 failed"
expect_line "$TMP/out" "MIG mixed [2g.35gb    |1g.18|1g.18|3g.71gb                ]   applied"
expect_rc 0 plan -f "$TMP/balanced.yaml" -o json
python3 - "$TMP/out" <<'PY' || fail "applied layout"
import json, sys
d = json.load(open(sys.argv[1]))
g = d["gpus"][0]
assert g["mig"]["mode"] == "enabled" and g["mig"]["state"] == "applied", g["mig"]
sl = d["slices"]
assert [s["id"] for s in sl] == ["gpu-0-mig-2g35gb-14-0", "gpu-0-mig-1g18gb-19-2",
                                 "gpu-0-mig-1g18gb-19-3", "gpu-0-mig-3g71gb-9-4"], sl
assert all(s["state"] == "applied" and s["attributes"]["uuid"]["string"].startswith("MIG-")
           for s in sl), sl
assert len({s["attributes"]["uuid"]["string"] for s in sl}) == 4
assert d["nodes"][0]["allocatable"]["nvidia.com/mig-1g.18gb"] == "2"
PY
# no policy: what exists is published as it is
expect_rc 0 plan
expect_line "$TMP/out" "MIG mixed [2g.35gb    |1g.18|1g.18|3g.71gb                ]   applied"
# a second apply of the same plan changes nothing
expect_rc 0 plan -f "$TMP/balanced.yaml" --apply
expect_line "$TMP/err" "apply: 0 GPUs changed, 0 failed"
# another layout: what the new one does not keep is destroyed (compute instances first)
expect_rc 0 plan -f "$TMP/small.yaml" --apply
expect_line "$TMP/err" "apply: GPU 0: destroyed 3g.71gb at 4"
expect_line "$TMP/err" "apply: GPU 0: created 1g.18gb at 6"
expect_line "$TMP/out" "MIG mixed [1g.18|1g.18|1g.18|1g.18|1g.18|1g.18|1g.18|.....]   applied"
# back to a whole GPU
expect_rc 0 plan -f "$TMP/off.yaml" --apply
expect_line "$TMP/err" "apply: GPU 0: MIG mode disabled"
expect_line "$TMP/out" "whole   applied"

# a mode change that needs a reset: reported, never forced
export FATIA_FAKE_NVML_STATE=$TMP/state2.json FATIA_FAKE_NVML_RESET_REQUIRED=1
expect_rc 1 plan -f "$TMP/balanced.yaml" --apply
expect_line "$TMP/err" "MIG mode enable is pending a GPU reset"
expect_line "$TMP/out" "planned"
unset FATIA_FAKE_NVML_RESET_REQUIRED

# a library that is not the fake: --apply refuses unless told this machine may be changed
export FATIA_FAKE_NVML_STATE=$TMP/state3.json
expect_rc 1 "$FATIA" plan --inventory nvml --nvml-lib "$UNMARKED" -f "$TMP/balanced.yaml" --apply
expect_line "$TMP/err" "refusing to change MIG on a real GPU"
[ -e "$TMP/state3.json" ] && fail "the refused apply changed the GPU"
FATIA_ALLOW_MIG_APPLY=1 expect_rc 0 "$FATIA" plan --inventory nvml --nvml-lib "$UNMARKED" \
    -f "$TMP/balanced.yaml" --apply
expect_line "$TMP/err" "apply: GPU 0: MIG mode enabled"
unset FATIA_FAKE_NVML_STATE

# an 8-GPU board from the recording: NVLink to two NVSwitch groups makes the islands
python3 - "$REC" "$TMP/h200x8.json" <<'PY'
import copy, json, sys
rec = json.load(open(sys.argv[1]))
d0 = rec["devices"][0]
rec["devices"] = []
for i in range(8):
    d = copy.deepcopy(d0)
    d["nvmlDeviceGetUUID"]["value"] = "GPU-b8937736-7a82-9ccb-a2ed-aa52863b56%02x" % i
    d["nvmlDeviceGetIndex"]["value"] = d["nvmlDeviceGetMinorNumber"]["value"] = i
    pci = d["nvmlDeviceGetPciInfo_v3"]["value"]
    pci.update(bus=0x18 + i, device=0, busId="00000000:%02X:00.0" % (0x18 + i),
               busIdLegacy="0000:%02X:00.0" % (0x18 + i))
    sw = 0xa0 if i < 4 else 0xb0  # GPUs 0-3 and 4-7 reach different NVSwitches
    d["nvmlDeviceGetNvLinkState"] = [{"link": k, "ret": 0, "value": 1} for k in range(18)]
    d["nvmlDeviceGetNvLinkRemotePciInfo_v2"] = [
        {"link": k, "ret": 0, "value": {"busId": "00000000:%02X:00.0" % (sw + k % 4),
                                         "pciDeviceId": 0x22a310de}} for k in range(18)]
    rec["devices"].append(d)
rec["system"]["nvmlDeviceGetCount_v2"]["value"] = 8
json.dump(rec, open(sys.argv[2], "w"))
PY
FATIA_FAKE_NVML=$TMP/h200x8.json expect_rc 0 "$FATIA" plan --inventory nvml --nvml-lib "$FAKE" \
    --node-name box-0 -f examples/fleet/ -o json
python3 - "$TMP/out" <<'PY' || fail "8-GPU board"
import json, sys
d = json.load(open(sys.argv[1]))
islands = [g["nvlinkIsland"] for g in d["gpus"]]
assert islands == [0, 0, 0, 0, 1, 1, 1, 1], islands
assert d["nodes"][0]["labels"]["fatia.dev/box"] == "h200x8"  # the pool's labels on the real node
kinds = [g["sharing"]["strategy"] for g in d["gpus"]]
assert kinds[:2] == ["time-slicing"] * 2, kinds
assert [g["mig"]["state"] for g in d["gpus"]][4:6] == ["planned"] * 2
caps = d["nodes"][0]["capacity"]
assert caps["nvidia.com/gpu.shared"] == "8" and caps["nvidia.com/gpu"] == "4", caps
import os
# the host's own cpu and pods, never the pool's (which declares 128 cpu and 2Ti for a simulated box)
assert caps["cpu"] == str(os.sysconf("SC_NPROCESSORS_ONLN")) and caps["pods"] == "110", caps
assert caps["memory"].endswith("Ki") and caps["memory"] != "2Ti", caps
PY

# the recorder and the fake agree: recording the fake gives the recording back
"$BUILD/bin/fatia-nvml-record" "$FAKE" >"$TMP/rerecorded.json" || fail "recorder failed"
python3 - "$REC" "$TMP/rerecorded.json" <<'PY' || fail "recording round trip"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
def subset(x, y):  # everything the recording says, the re-recording says too
    if isinstance(x, dict):
        return isinstance(y, dict) and all(k in y and subset(v, y[k]) for k, v in x.items())
    if isinstance(x, list):
        return isinstance(y, list) and len(x) == len(y) and all(map(subset, x, y))
    return x == y
assert b["fake"] is True
assert subset(a["system"], b["system"]), b["system"]
for k, v in a["devices"][0].items():
    assert subset(v, b["devices"][0].get(k)), (k, v, b["devices"][0].get(k))
PY

# the device verification script, here against the fakes
export FATIA=$FATIA FATIA_NVML_RECORD=$BUILD/bin/fatia-nvml-record \
    NVIDIA_SMI=$PWD/tests/supply/fake-nvidia-smi FATIA_NVML_LIB=$FAKE
expect_rc 0 scripts/verify-h200-nvml "$TMP/verify"
expect_line "$TMP/out" "PASS GPU 0000:00:06.0 profile 15 (1g.35gb) placement starts"
expect_line "$TMP/out" "PASS GPU 0000:00:06.0 all-balanced state: nvidia-smi='planned' fatia='planned'"
expect_line "$TMP/out" ", 0 FAIL,"
[ -s "$TMP/verify.tar.gz" ] || fail "no archive of the verification"
FAKE_SMI_LIE=memory expect_rc 1 scripts/verify-h200-nvml "$TMP/verify2"
expect_line "$TMP/out" "FAIL GPU 0000:00:06.0 memory MiB: nvidia-smi=143772 fatia=143771"
finish
