#!/bin/bash
# tests/cli/multigpu.sh: the nvml backend on the answers recorded on a real 2 x H200 host joined
# by NVLink (tests/data/nvml/h200x2.json, issue 10): both GPUs found with their UUIDs and PCI bus
# ids, one NVLink island, and a mixed policy (GPU 0 time-sliced and capped, GPU 1 MIG planned,
# not applied, since MIG mode is off there) cut as expected.
. "$(dirname "$0")/lib.bash"
FAKE=$BUILD/tests/fake-nvml/libnvidia-ml.so.1
[ -e "$FAKE" ] || skip "no fake NVML library in this build"
export FATIA_FAKE_NVML=$PWD/tests/data/nvml/h200x2.json
unset FATIA_FAKE_NVML_STATE

expect_rc 0 "$FATIA" plan --inventory nvml --nvml-lib "$FAKE" -o json
python3 - "$TMP/out" <<'PY' || fail "2-GPU inventory"
import json, sys
d = json.load(open(sys.argv[1]))
gpus = {s["gpu"]["index"]: s for s in d["slices"]}
assert sorted(gpus) == [0, 1], gpus.keys()
uuids = {s["gpu"]["uuid"] for s in gpus.values()}
assert uuids == {"GPU-31c2b5b9-3c28-8f92-9f66-01497d3ccaa1", "GPU-eb06f796-70a5-0789-36c5-f9d5a56bcecc"}, uuids
isl = {s["attributes"]["fatia.dev/nvlinkIsland"]["int"] for s in gpus.values()}
assert len(isl) == 1, isl
assert all(s["attributes"]["productName"]["string"] == "NVIDIA H200" for s in gpus.values())
PY

cat >"$TMP/mixed.yaml" <<'YAML'
apiVersion: fatia.dev/v1alpha1
kind: GPUSharingPolicy
metadata: {name: ts-gpu0}
spec:
  nodeSelector: {}
  gpuIndices: [0]
  timeSlicing:
    resources: [{name: nvidia.com/gpu, replicas: 4}]
---
apiVersion: fatia.dev/v1alpha1
kind: GPUSharingPolicy
metadata: {name: mig-gpu1}
spec:
  nodeSelector: {}
  gpuIndices: [1]
  mig: {strategy: mixed, config: all-balanced}
YAML
expect_rc 0 "$FATIA" plan --inventory nvml --nvml-lib "$FAKE" -f "$TMP/mixed.yaml"
expect_line "$TMP/out" "time-slicing x4, 34.3 GiB each"
expect_line "$TMP/out" "MIG mixed [2g.35gb    |1g.18|1g.18|3g.71gb"
expect_line "$TMP/out" "planned"
finish
