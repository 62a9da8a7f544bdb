#!/bin/bash
# tests/cli/place-mig-nvml.sh: dynamic MIG end to end against the fake libnvidia-ml.so.1 that
# replays the H200's answers (tests/supply): the GPU is cut all-balanced with --apply (its MIG
# slices then carry NVML's GPU and compute instance ids); a pod asks
# for a 7g.141gb instance, which placement can only give by re-laying the GPU (its instances are
# free): `fatia place --dynamic-mig free` proposes the layout [7g.141gb at 0]; the supply layer
# applies it (--apply, a GPUSharingPolicy with that mig-devices); placement then finds the
# instance as it is, with no change to make. With a pod holding an instance, the re-layout is not
# proposed (free) unless its pod may be evicted (evict, lower priority). MIG is never switched on
# a real GPU (DESIGN section 7): the fake only.
. "$(dirname "$0")/lib.bash"
FAKE=$BUILD/tests/fake-nvml/libnvidia-ml.so.1
[ -f "$FAKE" ] || skip "no fake NVML library (tests/supply)"
export FATIA_FAKE_NVML=$PWD/tests/data/nvml/h200.json FATIA_FAKE_NVML_STATE=$TMP/state.json
unset FATIA_FAKE_NVML_RESET_REQUIRED FATIA_ALLOW_MIG_APPLY
nv=(--inventory nvml --nvml-lib "$FAKE" --node-name h200)

cat >"$TMP/balanced.yaml" <<'Y'
apiVersion: fatia.dev/v1alpha1
kind: GPUSharingPolicy
metadata: {name: cut}
spec:
  mig: {strategy: mixed, config: all-balanced}
Y
cat >"$TMP/big.yaml" <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: big, namespace: ml}
spec:
  priority: 100
  containers: [{name: c, image: x, resources: {limits: {nvidia.com/mig-7g.141gb: 1}}}]
Y
cat >"$TMP/small.yaml" <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: small, namespace: ml}
spec:
  nodeName: h200
  containers: [{name: c, image: x, resources: {limits: {nvidia.com/mig-1g.18gb: 1}}}]
Y

expect_rc 0 "$FATIA" plan "${nv[@]}" -f "$TMP/balanced.yaml" --apply
expect_line "$TMP/err" "apply: 1 GPU changed, 0 failed"
# each MIG slice that exists carries NVML's GPU and compute instance ids (the node's CDI spec
# names its /dev/nvidia-caps nodes by them: src/agent/cdi.c), distinct GPU instances
expect_rc 0 "$FATIA" plan "${nv[@]}" -f "$TMP/balanced.yaml" -o json
python3 - "$TMP/out" <<'PY' || fail "MIG instance ids in the slices' attributes"
import json, sys
mig = [s for s in json.load(open(sys.argv[1]))["slices"] if s["attributes"]["type"]["string"] == "mig"]
assert len(mig) == 4, [s["id"] for s in mig]
gis = [s["attributes"]["fatia.dev/gpuInstance"]["int"] for s in mig]
assert len(set(gis)) == len(gis) and all(s["attributes"]["fatia.dev/computeInstance"]["int"] >= 0 for s in mig), mig
PY

# no dynamic MIG: no 7g.141gb anywhere
expect_rc 0 "$FATIA" place "${nv[@]}" -f "$TMP/balanced.yaml" -f "$TMP/big.yaml"
expect_line "$TMP/out" "not placed: 0/1 nodes are available: 1 Insufficient nvidia.com/mig-7g.141gb."
# dynamic MIG: the GPU re-laid
expect_rc 0 "$FATIA" place "${nv[@]}" -f "$TMP/balanced.yaml" -f "$TMP/big.yaml" --dynamic-mig free -o json
python3 - "$TMP/out" <<'PY' || fail "dynamic MIG proposal"
import json, sys
p = json.load(open(sys.argv[1]))["placements"][0]
assert p["placed"], p
assert p["migChanges"] == [{"node": "h200", "gpu": 0, "layout": ["7g.141gb@0"]}], p["migChanges"]
assert p["pods"][0]["devices"][0]["id"] == "gpu-0-mig-7g141gb-0-0", p["pods"][0]
PY
# the supply layer applies the proposal on the (fake) GPU
cat >"$TMP/relaid.yaml" <<'Y'
apiVersion: fatia.dev/v1alpha1
kind: GPUSharingPolicy
metadata: {name: cut}
spec:
  mig:
    strategy: mixed
    mig-devices: {"7g.141gb": 1}
Y
expect_rc 0 "$FATIA" plan "${nv[@]}" -f "$TMP/relaid.yaml" --apply
expect_line "$TMP/err" "apply: GPU 0: created 7g.141gb at 0 as MIG-"
# placement now finds the instance that exists: no change to make
expect_rc 0 "$FATIA" place "${nv[@]}" -f "$TMP/relaid.yaml" -f "$TMP/big.yaml" --dynamic-mig free -o json
python3 - "$TMP/out" <<'PY' || fail "placement on the applied layout"
import json, sys
p = json.load(open(sys.argv[1]))["placements"][0]
assert p["placed"] and "migChanges" not in p, p
assert p["pods"][0]["devices"][0]["id"] == "gpu-0-mig-7g141gb-0-0", p["pods"][0]
PY

# back to all-balanced with a pod on a 1g.18gb: free keeps it, evict takes it (lower priority)
expect_rc 0 "$FATIA" plan "${nv[@]}" -f "$TMP/balanced.yaml" --apply
expect_rc 0 "$FATIA" place "${nv[@]}" -f "$TMP/balanced.yaml" -f "$TMP/small.yaml" -f "$TMP/big.yaml" --dynamic-mig free
expect_line "$TMP/out" "not placed"
expect_rc 0 "$FATIA" place "${nv[@]}" -f "$TMP/balanced.yaml" -f "$TMP/small.yaml" -f "$TMP/big.yaml" --dynamic-mig evict -o json
python3 - "$TMP/out" <<'PY' || fail "dynamic MIG with eviction"
import json, sys
big = json.load(open(sys.argv[1]))["placements"][1]
assert big["placed"] and big["victims"] == ["ml/small"], big
assert big["migChanges"][0]["layout"] == ["7g.141gb@0"], big
PY
finish
