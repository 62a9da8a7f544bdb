# tests/cli/agent.bash: helpers for the node agent's tests. Source after lib.bash and fatiad.bash.
#   agent_setup             a world-writable $SHARED for containers (they run under other uids)
#   k ARGS...               kubectl (the newest) with the test fatiad's kubeconfig
#   wait_for SECS CMD...    retries CMD until it succeeds; fails the test after SECS seconds
#   jp POD PATH             kubectl get pod -o jsonpath={PATH}
#   bound_pod NAME [DEVICES_JSON] [EXTRA_SPEC_YAML]  reads the container list (YAML) on stdin and
#                           creates a pod bound by hand to node-0 (spec.nodeName plus the
#                           fatia.dev/devices annotation of the Pod contract, docs/agent.md): the
#                           devices' slices are added to node-0's inventory (a ResourceSlice, as
#                           the device controller publishes it) and the annotation is bound to the
#                           pod's uid (created behind a gate, annotated, then ungated), as the
#                           placement controller does. BIND_AS_IS=1: the annotation as given
#   add_inventory DEVICES_JSON  adds the entries' slices to node-0's ResourceSlice (a MIG entry's
#                           "gi" and "ci": its fatia.dev/gpuInstance and computeInstance)
#   environ_of PID          the process's environment, one variable a line
agent_setup() {
    chmod 711 "$TMP"
    SHARED=$TMP/shared
    mkdir -p "$SHARED"
    chmod 1777 "$SHARED"
    find_kubectl
    KUBECTL=$KUBECTL_DIR/kubectl.1.33
}

k() {
    "$KUBECTL" --kubeconfig "$KCFG" "$@"
}

wait_for() {
    local secs=$1
    shift
    local end=$((SECONDS + secs))
    while ! "$@" >/dev/null 2>&1; do
        if [ "$SECONDS" -ge "$end" ]; then
            fail "timed out after ${secs}s: $*"
            return 1
        fi
        sleep 0.1
    done
}

jp() {
    k get pod "$1" -o "jsonpath={$2}" 2>/dev/null
}

phase_is() {
    [ "$(jp "$1" .status.phase)" = "$2" ]
}

add_inventory() {
    python3 - "$1" "$TMP/inventory.json" <<'PY' >"$TMP/inventory.yaml"
import json, os, sys
new, path = json.loads(sys.argv[1]), sys.argv[2]
inv = json.load(open(path)) if os.path.exists(path) else {}
for e in new:
    kind = e["kind"]
    attrs = {"type": {"string": "gpu" if kind == "whole" else kind}}
    if kind == "mig":
        attrs["uuid"] = {"string": e["migUuid"]}
        attrs["parentUUID"] = {"string": e["uuid"]}
        if "gi" in e:  # NVML's GPU and compute instance ids, as supply/render.c publishes them
            attrs["fatia.dev/gpuInstance"] = {"int": e["gi"]}
            attrs["fatia.dev/computeInstance"] = {"int": e["ci"]}
    else:
        attrs["uuid"] = {"string": e["uuid"]}
    dev = {"name": e["slice"], "attributes": attrs}
    if e.get("memoryBytes"):
        dev["capacity"] = {"memory": {"value": str(e["memoryBytes"])}}
    inv[e["slice"]] = dev
json.dump(inv, open(path, "w"))
print(json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                  "metadata": {"name": "node-0-gpu.nvidia.com-0"},
                  "spec": {"driver": "gpu.nvidia.com", "nodeName": "node-0",
                           "pool": {"name": "node-0", "generation": 1, "resourceSliceCount": 1},
                           "devices": list(inv.values())}}))
PY
    k apply -f "$TMP/inventory.yaml" >/dev/null || fail "cannot write node-0's ResourceSlice"
}

bound_pod() {
    local name=$1 devices=${2:-} extra=${3:-} uid bound
    {
        echo "apiVersion: v1"
        echo "kind: Pod"
        echo "metadata:"
        echo "  name: $name"
        if [ -n "$devices" ]; then
            echo "  annotations:"
            echo "    fatia.dev/slices: placeholder"
            echo "    fatia.dev/devices: '$devices'"
        fi
        echo "spec:"
        echo "  nodeName: node-0"
        if [ -n "$devices" ] && [ "${BIND_AS_IS:-0}" != 1 ]; then
            echo "  schedulingGates: [{name: test.fatia.dev/bind}]"
        fi
        [ -n "$extra" ] && echo "$extra"
        echo "  containers:"
        cat
    } >"$TMP/$name.yaml"
    k create -f "$TMP/$name.yaml" >/dev/null || fail "cannot create pod $name"
    if [ -n "$devices" ] && [ "${BIND_AS_IS:-0}" != 1 ]; then
        add_inventory "$devices"
        uid=$(k get pod "$name" -o 'jsonpath={.metadata.uid}')
        bound=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); [e.__setitem__("podUID", sys.argv[2]) for e in d]; print(json.dumps(json.dumps(d)))' "$devices" "$uid")
        k patch pod "$name" --type json -p "[{\"op\":\"replace\",\"path\":\"/metadata/annotations/fatia.dev~1devices\",\"value\":$bound},{\"op\":\"remove\",\"path\":\"/spec/schedulingGates\"}]" >/dev/null ||
            fail "cannot bind pod $name"
    fi
}

environ_of() {
    tr '\0' '\n' <"/proc/$1/environ"
}

# Stops every pod process the test's fatiads started, by the ids their shims recorded: each
# pod's process group, then its shim.
agent_cleanup() {
    kill_agent_pods "$TMP"/*/agent/status/*.json
    return 0
}
