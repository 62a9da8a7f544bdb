#!/bin/bash
# tests/supply/export.sh: `fatia export gpu-operator` and the import of upstream configs.
#   - round trip: plan(fleet + policies) == plan(exported fleet + exported device-plugin and
#     mig-parted configs), slices and node capacity, with every annotation stripped from the
#     exported files first (only upstream fields may carry the policy);
#   - what the operator cannot express is refused with the field;
#   - hand-written upstream configs (a device-plugin ConfigMap, a bare file, a mig-parted config)
#     import, and their mistakes are reported with mig-parted's and the device plugin's words.
. "$(dirname "$0")/../cli/lib.bash"
FLEET=tests/data/supply/export-fleet.yaml

expect_rc 0 "$FATIA" plan --inventory sim -f "$FLEET" -o json
cp "$TMP/out" "$TMP/before.json"
expect_rc 0 "$FATIA" export gpu-operator -f "$FLEET" -d "$TMP/exp" -o json
expect_line "$TMP/out" "wrote $TMP/exp/device-plugin-config.json"
expect_line "$TMP/out" "wrote $TMP/exp/mig-parted-config.json"
python3 - "$TMP/exp" <<'PY' || fail "stripping annotations"
import json, os, sys
for name in os.listdir(sys.argv[1]):
    path = os.path.join(sys.argv[1], name)
    doc = json.load(open(path))
    for obj in doc.get("items", [doc]):
        obj.get("metadata", {}).pop("annotations", None)
    json.dump(doc, open(path, "w"))
PY
grep -rq '"annotations"' "$TMP/exp" && fail "annotations left"
expect_rc 0 "$FATIA" plan --inventory sim -f "$TMP/exp/fleet.json" \
    --device-plugin-config "$TMP/exp/device-plugin-config.json" \
    --mig-parted-config "$TMP/exp/mig-parted-config.json" -o json
python3 - "$TMP/before.json" "$TMP/out" <<'PY' || fail "round trip changed the plan"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert a["slices"] == b["slices"], "slices differ"
assert [n["capacity"] for n in a["nodes"]] == [n["capacity"] for n in b["nodes"]]
assert len(a["slices"]) == 66, len(a["slices"])
kinds = {s["kind"] for s in a["slices"]}
assert kinds == {"whole", "timeslice", "mps", "mig"}, kinds
labels = b["nodes"][2]["labels"]
assert labels["nvidia.com/mig.config"] == "all-balanced", labels
assert labels["nvidia.com/device-plugin.config"] == "balanced-mig-mixed", labels
PY
# the stream form carries the same ConfigMaps
expect_rc 0 "$FATIA" export gpu-operator -f "$FLEET"
expect_line "$TMP/out" "name: fatia-device-plugin-config"
expect_line "$TMP/out" "  all-balanced:"
expect_line "$TMP/out" "        device-filter: '0x233010DE'"

# not expressible upstream: refused, with the field
cat >"$TMP/frac.yaml" <<'Y'
apiVersion: fatia.dev/v1alpha1
kind: NodePool
metadata: {name: box}
spec:
  gpus: [{product: L4, count: 2}]
---
apiVersion: fatia.dev/v1alpha1
kind: GPUSharingPolicy
metadata: {name: frac}
spec:
  fractional: {}
---
apiVersion: fatia.dev/v1alpha1
kind: GPUSharingPolicy
metadata: {name: nope}
spec:
  nodeSelector: {matchLabels: {none: here}}
  timeSlicing:
    memoryPerReplica: 4Gi
    resources: [{name: nvidia.com/gpu, replicas: 2}]
Y
expect_rc 1 "$FATIA" export gpu-operator -f "$TMP/frac.yaml"
expect_line "$TMP/err" "error: gpusharingpolicy/frac: spec.fractional: fractional sharing has no GPU Operator equivalent"
[ -s "$TMP/out" ] && fail "output despite the refusal"
expect_rc 1 "$FATIA" export gpu-operator -f examples/fleet/
expect_line "$TMP/err" "gpusharingpolicy/timesliced: spec.gpuIndices: the device plugin shares every GPU of a node alike"

# hand-written upstream configs, as the operator's docs write them
cat >"$TMP/dp.yaml" <<'Y'
apiVersion: v1
kind: ConfigMap
metadata: {name: time-slicing-config, namespace: gpu-operator}
data:
  a100-40gb: |-
    version: v1
    flags:
      migStrategy: mixed
    sharing:
      timeSlicing:
        resources:
        - name: nvidia.com/gpu
          replicas: 8
        - name: nvidia.com/mig-1g.5gb
          replicas: 2
  tesla-t4: |-
    version: v1
    sharing:
      timeSlicing:
        resources:
        - name: nvidia.com/gpu
          replicas: 4
Y
cat >"$TMP/mig.yaml" <<'Y'
version: v1
mig-configs:
  all-disabled:
  - devices: all
    mig-enabled: false
  custom-1:
  - devices: [0]
    mig-enabled: true
    mig-devices:
      "1g.5gb": 2
      "2g.10gb": 1
      "3g.20gb": 1
  - devices: [1]
    mig-enabled: false
Y
cat >"$TMP/fleet.yaml" <<'Y'
apiVersion: fatia.dev/v1alpha1
kind: NodePool
metadata: {name: a100}
spec:
  labels: {nvidia.com/device-plugin.config: a100-40gb, nvidia.com/mig.config: custom-1}
  gpus: [{product: A100-40GB, count: 2}]
---
apiVersion: fatia.dev/v1alpha1
kind: NodePool
metadata: {name: t4}
spec:
  gpus: [{product: T4, count: 1}]
Y
expect_rc 0 "$FATIA" plan --inventory sim -f "$TMP/fleet.yaml" --device-plugin-config "$TMP/dp.yaml" \
    --device-plugin-default tesla-t4 --mig-parted-config "$TMP/mig.yaml"
expect_line "$TMP/out" "MIG mixed [2g.10gb    |1g.5g|1g.5g|3g.20gb                ] time-sliced"
expect_line "$TMP/out" "time-slicing x8"
expect_line "$TMP/out" "time-slicing x4"
# mig-parted's and the device plugin's own rules
printf 'version: v1\nmig-configs:\n  bad:\n  - devices: all\n    mig-enabled: false\n    mig-devices: {"1g.5gb": 1}\n' >"$TMP/bad-mig.yaml"
expect_rc 1 "$FATIA" plan --inventory sim -f "$TMP/fleet.yaml" --mig-parted-config "$TMP/bad-mig.yaml"
expect_line "$TMP/err" "mig-configs[bad][0]: MIG devices included when 'mig-enabled' is false"
printf 'version: v2\nsharing: {}\n' >"$TMP/bad-dp.yaml"
expect_rc 1 "$FATIA" plan --inventory sim -f "$TMP/fleet.yaml" --device-plugin-config "$TMP/bad-dp.yaml"
expect_line "$TMP/err" "unknown version \"v2\""
printf 'version: v1\nsharing:\n  timeSlicing:\n    resources: [{name: nvidia.com/gpu, replicas: 1}]\n' >"$TMP/one.yaml"
expect_rc 1 "$FATIA" plan --inventory sim -f "$TMP/fleet.yaml" --device-plugin-config "$TMP/one.yaml"
expect_line "$TMP/err" "gpusharingpolicy/device-plugin-config: spec.timeSlicing.resources[0].replicas: number of replicas must be >= 2"
finish
