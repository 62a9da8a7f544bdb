#!/bin/bash
# tests/cli/supply-plan.sh: `fatia plan` as a user runs it on a box without a GPU: the default
# fleet, the walkthrough fleet in table and JSON form, ResourceSlices, inventory choices, usage.
. "$(dirname "$0")/lib.bash"

# no driver here (CI): auto falls back to the simulated default fleet and says so
expect_rc 0 env -u LD_LIBRARY_PATH "$FATIA" plan --nvml-lib /nonexistent/libnvidia-ml.so.1
expect_line "$TMP/out" "INVENTORY sim (simulated fleet): 1 node, 8 GPUs, 8 slices; simulated fleet:"
expect_line "$TMP/out" "NODE box-0  pool=box  sharing=whole"
expect_line "$TMP/out" "nvidia.com/gpu=8"

# the walkthrough: time-sliced pool, MIG pool, whole GPUs
expect_rc 0 "$FATIA" plan --inventory sim -f examples/fleet/
expect_line "$TMP/out" "nvidia.com/gpu.shared=8, nvidia.com/gpu=4, nvidia.com/mig-2g.35gb=2, nvidia.com/mig-1g.18gb=4, nvidia.com/mig-3g.71gb=2"
expect_line "$TMP/out" "time-slicing x4, 34.3 GiB each"
expect_line "$TMP/out" "MIG mixed [2g.35gb    |1g.18|1g.18|3g.71gb                ]   simulated"
[ "$(grep -c ' whole ' "$TMP/out")" = 4 ] || fail "want 4 whole GPUs"

expect_rc 0 "$FATIA" plan --inventory sim -f examples/fleet/ -o json
python3 - "$TMP/out" <<'PY' || fail "walkthrough JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["inventory"]["source"] == "sim" and d["inventory"]["simulated"] is True
ids = [s["id"] for s in d["slices"]]
assert ids[:4] == ["gpu-0-ts0", "gpu-0-ts1", "gpu-0-ts2", "gpu-0-ts3"], ids
assert "gpu-4-mig-3g71gb-9-4" in ids and "gpu-2" in ids, ids
ts = d["slices"][0]
# (150754820096 - 4 x 530 MiB) / 4, rounded down to a MiB
assert ts["memoryBytes"] == (150754820096 - 4 * 768 * 2**20) // 4 // 2**20 * 2**20, ts
assert ts["isolation"] == "memory-capped" and ts["resource"] == "nvidia.com/gpu.shared"
assert ts["attributes"]["type"] == {"string": "timeslice"}
assert ts["attributes"]["fatia.dev/nvlinkIsland"] == {"int": 0}
mig = [s for s in d["slices"] if s["id"] == "gpu-4-mig-3g71gb-9-4"][0]
assert mig["attributes"]["fatia.dev/nvlinkIsland"] == {"int": 1}
assert mig["capacity"]["memorySlice7"] == {"value": "1"} and "memorySlice3" not in mig["capacity"]
assert d["nodes"][0]["labels"]["nvidia.com/mig.strategy"] == "mixed"
assert all(g["uuid"].startswith("GPU-") for g in d["gpus"])
PY

# the same plan twice: deterministic (UUIDs from node name and index)
"$FATIA" plan --inventory sim -f examples/fleet/ -o json >"$TMP/again"
cmp -s "$TMP/out" "$TMP/again" || fail "plan is not deterministic"

# ResourceSlices
expect_rc 0 "$FATIA" plan --inventory sim -f examples/fleet/ --resourceslices -o yaml
expect_line "$TMP/out" "kind: ResourceSlice"
expect_line "$TMP/out" "driver: gpu.nvidia.com"
expect_line "$TMP/out" "name: gpu-4-mig-1g18gb-19-2"

# bad input: errors on stderr, nothing on stdout
printf 'apiVersion: fatia.dev/v1alpha1\nkind: NodePool\nmetadata: {name: x}\nspec:\n  gpus: [{product: Nope}]\n' >"$TMP/bad.yaml"
expect_rc 1 "$FATIA" plan --inventory sim -f "$TMP/bad.yaml"
[ -s "$TMP/out" ] && fail "stdout not empty on error"
expect_line "$TMP/err" "bad.yaml:5:20: error: nodepool/x: spec.gpus[0].product: unknown GPU product \"Nope\""

# a catalog that does not load is an error with its place
mkdir -p "$TMP/cat" && printf 'product: X\nmemory: 1Gi\n' >"$TMP/cat/x.yaml"
expect_rc 1 "$FATIA" plan --inventory sim --catalog "$TMP/cat"
expect_line "$TMP/err" "x.yaml:1:1: error: gpu/X: multiprocessors: required field is missing"

# nvml requested without a driver: a clear error
expect_rc 1 "$FATIA" plan --inventory nvml --nvml-lib /nonexistent/libnvidia-ml.so.1
expect_line "$TMP/err" "cannot load /nonexistent/libnvidia-ml.so.1"

# usage
expect_rc 2 "$FATIA" plan --inventory gpu
expect_rc 2 "$FATIA" plan -o xml
expect_rc 2 "$FATIA" plan --apply
expect_rc 0 "$FATIA" plan --help
expect_line "$TMP/out" "Usage: fatia plan"
finish
