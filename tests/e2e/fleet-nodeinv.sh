#!/bin/bash
# tests/e2e/fleet-nodeinv.sh (fast tier): a node role publishes its host's GPUs from NVML and the
# control plane plans that node from them (docs/fleet.md, "A node role's own GPUs"; issue 21).
# One control fatiad (its own agent off) with a two-node NodePool of 8 simulated H200s each; one
# `fatiad --role node` for box-0 whose NVML is the fake libnvidia-ml.so.1 of tests/supply
# replaying the two-GPU H200 host (tests/data/nvml/h200x2.json):
#   1. box-0's Node carries fatia.dev/gpu-inventory; its ResourceSlices list exactly the two
#      recorded UUIDs (box-1 keeps its 8 simulated ones); its capacity is 2 GPUs and its host's
#      cpu, memory and pods (this machine's online CPUs and physical memory, as the kubelet
#      reports them; box-1 keeps its pool's 128 cpu and 2Ti); its labels say
#      fatia.dev/inventory=nvml, no longer simulated; a pod asking for more CPU than the host has
#      is not placed there;
#   2. a pod asking for one GPU on box-0 gets one of those UUIDs (fatia.dev/devices, and
#      NVIDIA_VISIBLE_DEVICES in its process);
#   3. hostile: box-1's node token cannot write box-0's annotation (403), a tenant cannot (403);
#      a malformed annotation (a bad UUID) and one naming a product the catalog lacks each leave
#      the plan as it was and make a Warning Event InvalidGPUInventory on the Node naming the
#      field; the node role puts its own inventory back.
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
find_kubectl
need_python3
FAKE=$BUILD/tests/fake-nvml/libnvidia-ml.so.1
[ -e "$FAKE" ] || { fail "missing $FAKE (build first)"; finish; }
export HOME=$TMP/home
mkdir -p "$HOME" "$TMP/fleet"
export FATIAD_CONTROLLERS=1
sed 's/^  count: 1$/  count: 2/' examples/fleet/00-box.yaml >"$TMP/fleet/00-box.yaml"
start_fatiad "$TMP/data" --fleet "$TMP/fleet/" -f examples/ --no-agent || { finish; exit 1; }
K="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $KCFG"
NR=
trap '[ -n "$NR" ] && kill -CONT $NR 2>/dev/null && kill -9 $NR 2>/dev/null; kill_agent_pods "$TMP"/box-0/agent/status/*.json; if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID"; fi; etcd_cleanup; rm -rf "$TMP"' EXIT
wait_until 20 $K get node box-1 -o name >/dev/null
$K create namespace kube-node-lease >/dev/null 2>&1 || fail "kubectl create namespace kube-node-lease"
for n in box-0 box-1; do
    "$FATIA" token create --data-dir "$TMP/data" --node "$n" >/dev/null 2>&1 || fail "token for $n"
    awk -v u="system:node:$n" '$2 == u {print $1; exit}' "$TMP/data/tokens" >"$TMP/$n.token"
done
U0=GPU-31c2b5b9-3c28-8f92-9f66-01497d3ccaa1
U1=GPU-eb06f796-70a5-0789-36c5-f9d5a56bcecc
FATIA_FAKE_NVML=$PWD/tests/data/nvml/h200x2.json FATIA_FAKE_NVML_STATE= \
    "$FATIAD" --role node --server "$URL" --token "$TMP/box-0.token" --ca "$CA" \
    --node-name box-0 --data-dir "$TMP/box-0" --node-listen off --inventory nvml \
    --nvml-lib "$FAKE" --agent runtime=process --agent user=current >"$TMP/box-0.log" 2>&1 &
NR=$!

# ---- 1. box-0 is planned from its published GPUs ----
uuids() { # NODE: the UUIDs of its ResourceSlices' devices, sorted
    $K get resourceslices -o json | python3 -c 'import json,sys
print(" ".join(sorted(d["attributes"]["uuid"]["string"] for s in json.load(sys.stdin)["items"]
      if s["spec"].get("nodeName") == sys.argv[1] for d in s["spec"]["devices"])))' "$1"
}
ann() { $K get node box-0 -o 'jsonpath={.metadata.annotations.fatia\.dev/gpu-inventory}'; }
t0=$(date +%s%N)
wait_until 20 eval '[ "$(uuids box-0)" = "$U0 $U1" ]' ||
    { fail "box-0's slices: '$(uuids box-0)', want '$U0 $U1'"; tail -5 "$TMP/box-0.log" >&2; }
echo "box-0 planned from its NVML $((($(date +%s%N) - t0) / 1000000)) ms after its node role started"
ann | python3 -c 'import json,sys; j=json.load(sys.stdin); assert [g["uuid"] for g in j["gpus"]] == sys.argv[1:]' "$U0" "$U1" ||
    fail "the annotation: $(ann)"
[ "$($K get node box-0 -o 'jsonpath={.status.capacity.nvidia\.com/gpu}')" = 2 ] ||
    fail "box-0's capacity: $($K get node box-0 -o 'jsonpath={.status.capacity}')"
# the host's capacity (sysconf's online CPUs and physical pages, as nvml.c reads them)
host_cpu=$(getconf _NPROCESSORS_ONLN)
host_mem=$(($(getconf _PHYS_PAGES) * $(getconf PAGESIZE) / 1024))Ki
cap() { $K get node "$1" -o "jsonpath={.status.capacity.cpu}/{.status.capacity.memory}/{.status.allocatable.cpu}"; }
[ "$(cap box-0)" = "$host_cpu/$host_mem/$host_cpu" ] || fail "box-0's cpu/memory/allocatable cpu: $(cap box-0), want the host's $host_cpu/$host_mem/$host_cpu"
[ "$(cap box-1)" = 128/2Ti/128 ] || fail "box-1's cpu/memory: $(cap box-1), want its pool's 128/2Ti/128"
ann | python3 -c 'import json,sys; h=json.load(sys.stdin)["host"]; assert h == {"cpu": sys.argv[1], "memory": sys.argv[2], "pods": "110"}, h' "$host_cpu" "$host_mem" ||
    fail "the annotation's host: $(ann)"
lab() { $K get node "$1" -o "jsonpath={.metadata.labels.fatia\.dev/$2}"; }
wait_until 5 eval '[ "$(lab box-0 inventory)/$(lab box-0 simulated)" = nvml/ ]' ||
    fail "box-0's labels: inventory=$(lab box-0 inventory) simulated=$(lab box-0 simulated), want nvml and none"
[ "$(lab box-1 inventory)/$(lab box-1 simulated)" = sim/true ] || fail "box-1's labels"
[ "$(uuids box-1 | wc -w)" = 8 ] || fail "box-1 (no node role) lost its simulated GPUs: $(uuids box-1)"

# more CPU than the host has: not placed on box-0 (the pool's 128 would have taken it)
$K apply -f - >/dev/null <<EOF || fail "create pod big"
apiVersion: v1
kind: Pod
metadata: {name: big, namespace: team-a}
spec:
  nodeSelector: {kubernetes.io/hostname: box-0}
  automountServiceAccountToken: false
  restartPolicy: Never
  containers:
  - name: main
    image: python:3.12
    command: ["sleep", "600"]
    resources: {requests: {cpu: "$((host_cpu + 1))"}}
EOF
sleep 3
[ -z "$($K get pod big -n team-a -o jsonpath='{.spec.nodeName}')" ] ||
    fail "pod big ($((host_cpu + 1)) cpu) was placed on box-0, whose host has $host_cpu"
$K delete pod big -n team-a --wait=false >/dev/null 2>&1

# ---- 2. a pod on box-0 gets a real UUID ----
$K apply -f - >/dev/null <<EOF || fail "create pod g"
apiVersion: v1
kind: Pod
metadata: {name: g, namespace: team-a}
spec:
  nodeSelector: {kubernetes.io/hostname: box-0}
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  restartPolicy: Never
  containers:
  - name: main
    image: python:3.12
    command: ["sh", "-c", "echo \"\$NVIDIA_VISIBLE_DEVICES\" >$TMP/g.env; sleep 600"]
    resources: {limits: {nvidia.com/gpu: 1}}
EOF
running() { [ "$($K get pod g -n team-a -o jsonpath='{.status.phase}/{.spec.nodeName}')" = Running/box-0 ]; }
wait_until 30 running || fail "pod g is not Running on box-0: $($K get pod g -n team-a -o wide 2>&1 | tail -1)"
dev=$($K get pod g -n team-a -o 'jsonpath={.metadata.annotations.fatia\.dev/devices}' |
    python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["uuid"])' 2>/dev/null)
[ "$dev" = "$U0" ] || [ "$dev" = "$U1" ] || fail "pod g's device: '$dev', not one of the host's"
wait_until 10 test -s "$TMP/g.env"
[ "$(cat "$TMP/g.env" 2>/dev/null)" = "$dev" ] || fail "NVIDIA_VISIBLE_DEVICES '$(cat "$TMP/g.env" 2>/dev/null)', want $dev"

# ---- 3. hostile ----
patch_code() { # TOKEN VALUE: the HTTP status of a merge patch of box-0's annotation
    curl -s -o "$TMP/out" -w '%{http_code}' --cacert "$CA" -H "Authorization: Bearer $1" \
        -H 'Content-Type: application/merge-patch+json' -X PATCH \
        --data-binary "{\"metadata\":{\"annotations\":{\"fatia.dev/gpu-inventory\":$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$2")}}}" \
        "$URL/api/v1/nodes/box-0"
}
GOOD=$(ann)
EVIL=${GOOD//$U0/GPU-00000000-0000-0000-0000-000000000666}
c=$(patch_code "$(cat "$TMP/box-1.token")" "$EVIL")
[ "$c" = 403 ] || fail "box-1's token wrote box-0's inventory: $c ($(cat "$TMP/out"))"
"$FATIA" token create --data-dir "$TMP/data" --user alice --namespace team-a >"$TMP/alice.kc" 2>/dev/null
alice=$(awk '$2 == "alice" {print $1; exit}' "$TMP/data/tokens")
c=$(patch_code "$alice" "$EVIL")
[ "$c" = 403 ] || fail "a tenant wrote box-0's inventory: $c ($(cat "$TMP/out"))"
sleep 0.5
[ "$(uuids box-0)" = "$U0 $U1" ] || fail "box-0's slices after the refused writes: $(uuids box-0)"

# malformed, and a product the catalog lacks: written by the admin (the node could too) while
# the node role is stopped (else it may put its own value back before the controller's debounced
# re-plan reads the bad one); the plan stays, an Event names the field, and the node role, let
# go on, restores its own value
event_has() { $K get events -n default --field-selector involvedObject.kind=Node,involvedObject.name=box-0,reason=InvalidGPUInventory -o jsonpath='{.items[*].message}' | grep -qF "$1"; }
# (on the GPU pod g does not hold: a change of the held one would wait for it anyway)
FREE=$U0
[ "$dev" = "$U0" ] && FREE=$U1
kill -STOP "$NR"
$K annotate node box-0 --overwrite "fatia.dev/gpu-inventory=${GOOD//$FREE/GPU-not-a-uuid}" >/dev/null || fail "admin annotate"
wait_until 10 event_has "].uuid: not a GPU-" || fail "no InvalidGPUInventory Event naming gpus[i].uuid"
[ "$(uuids box-0)" = "$U0 $U1" ] || fail "a malformed annotation changed box-0's slices: $(uuids box-0)"
kill -CONT "$NR"
wait_until 10 eval '[ "$(ann)" = "$GOOD" ]' || fail "the node role did not restore its inventory"
kill -STOP "$NR"
$K annotate node box-0 --overwrite "fatia.dev/gpu-inventory=${GOOD//NVIDIA H200/NVIDIA Z9000}" >/dev/null || fail "admin annotate"
wait_until 10 event_has "gpus[0].product: 'NVIDIA Z9000' is not in the GPU catalog" ||
    fail "no Event saying the product is not in the catalog"
[ "$(uuids box-0)" = "$U0 $U1" ] || fail "an unknown product changed box-0's slices: $(uuids box-0)"
kill -CONT "$NR"
wait_until 10 eval '[ "$(ann)" = "$GOOD" ]' || fail "the node role did not restore its inventory"
running || fail "pod g stopped"

$K delete pod g -n team-a --wait=false >/dev/null 2>&1
kill -TERM "$NR"
wait "$NR" 2>/dev/null
NR=
finish
