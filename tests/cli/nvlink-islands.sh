#!/bin/bash
# tests/cli/nvlink-islands.sh: a pod that requires NVLink (fatia.dev/nvlink: required) never gets
# GPUs of two NVLink islands (issue 10). Random mixes of 1- to 4-GPU pods, some requiring NVLink,
# some not, on a simulated fleet of nodes with two islands each, under every placement policy and
# several seeds: every placed NVLink pod's GPUs sit in one island of one node, every GPU is given
# once, and an unplaced one says why (no island with enough free GPUs, or no GPUs at all).
. "$(dirname "$0")/lib.bash"

for seed in 1 2 3 4 5; do
    python3 - "$seed" >"$TMP/in-$seed.yaml" <<'PY'
import random, sys
rnd = random.Random(int(sys.argv[1]))
print("""apiVersion: fatia.dev/v1alpha1
kind: NodePool
metadata: {name: box}
spec:
  count: 3
  namePrefix: box
  resources: {cpu: "256", memory: 4Ti, pods: "110"}
  gpus: [{product: H200, count: 8}]
  nvlinkIslands: [[0, 1, 2, 3], [4, 5, 6, 7]]""")
for i in range(18):
    n = rnd.choice([1, 1, 2, 2, 3, 4])
    req = rnd.random() < 0.7
    ann = "annotations: {fatia.dev/nvlink: required}" if req else "annotations: {fatia.dev/nvlink: preferred}"
    print(f"""---
apiVersion: v1
kind: Pod
metadata: {{name: p{i}, namespace: ml, {ann}}}
spec:
  containers: [{{name: main, image: x, resources: {{limits: {{nvidia.com/gpu: {n}}}}}}}]""")
PY
    for policy in binpack bestfit spread fragmentation; do
        expect_rc 0 "$FATIA" place -f "$TMP/in-$seed.yaml" --placement $policy -o json
        python3 - "$TMP/out" "$TMP/in-$seed.yaml" "$seed/$policy" <<'PY' || fail "seed/policy $seed $policy"
import json, re, sys
out = json.load(open(sys.argv[1]))
required = set(re.findall(r"name: (p\d+), namespace: ml, annotations: \{fatia.dev/nvlink: required\}",
                          open(sys.argv[2]).read()))
seen, placed_req, unplaced_req = set(), 0, 0
for p in out["placements"]:
    name = p["workload"].split("/")[1]
    if not p["placed"]:
        if name in required:
            unplaced_req += 1
            assert "island" in p["reason"].lower() or "insufficient" in p["reason"].lower(), p["reason"]
        continue
    for pod in p["pods"]:
        gpus = [(pod["node"], d["gpu"]) for d in pod["devices"]]
        for g in gpus:
            assert g not in seen, f"GPU {g} given twice"
            seen.add(g)
        if name in required:
            placed_req += 1
            islands = {(node, gpu // 4) for node, gpu in gpus}
            assert len(islands) == 1, f"{name} split across islands: {gpus}"
print(f"{sys.argv[3]}: {placed_req} NVLink pods placed in one island, {unplaced_req} refused")
PY
    done
done
finish
