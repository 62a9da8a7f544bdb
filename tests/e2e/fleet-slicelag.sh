#!/bin/bash
# tests/e2e/fleet-slicelag.sh: a node role's agent waits for a slice its ResourceSlices do not
# name yet (agent.c's inventory wait; docs/fleet.md "The node role"). The node role's cache of
# ResourceSlices is a watch of its own: after a re-plan (a GPUSharingPolicy applied) the pod
# placed on a new slice can reach the node before the slice does, and the agent refused it at
# once (UnexpectedAdmissionError: "'gpu-6-mps0' is not a slice of node 'box-0'", seen in
# tests/e2e/fleet-walkthrough-slow.sh's MPS step). Here the lag is made long on purpose: one
# `fatiad --role node` (node-0, the process runtime, --agent inventory-wait=4s) on a control fatiad
# (no controllers, no agent: the test publishes node-0's ResourceSlice and binds pods as the
# device and placement controllers do, tests/cli/agent.bash):
#   1. a pod bound to gpu-1 before node-0's ResourceSlice names it waits (Pending, the node role
#      says so), and once the slice is published it runs with that slice's UUID;
#   2. a pod bound to a slice that never comes is refused as before (Failed,
#      UnexpectedAdmissionError, the same message), after the wait, and nothing of it runs.
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/../cli/agent.bash"
agent_setup
export HOME=$TMP/home
mkdir -p "$HOME"
NR=
trap '[ -n "$NR" ] && kill -9 "$NR" 2>/dev/null; agent_cleanup; if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID" 2>/dev/null; fi; etcd_cleanup; rm -rf "$TMP"' EXIT

start_fatiad "$TMP/data" --no-agent || { finish; exit 1; }
k create namespace kube-node-lease >/dev/null 2>&1 || fail "kubectl create namespace kube-node-lease"
"$FATIA" token create --data-dir "$TMP/data" --node node-0 >/dev/null 2>&1 || fail "token for node-0"
awk '$2 == "system:node:node-0" {print $1; exit}' "$TMP/data/tokens" >"$TMP/node-0.token"
GA=GPU-aaaaaaaa-1111-2222-3333-444444444444
GB=GPU-bbbbbbbb-1111-2222-3333-444444444444
add_inventory "[{\"slice\":\"gpu-0\",\"kind\":\"whole\",\"uuid\":\"$GA\"}]"
"$FATIAD" --role node --server "$URL" --token "$TMP/node-0.token" --ca "$CA" --node-name node-0 \
    --data-dir "$TMP/node-0" --node-listen off --agent runtime=process --agent user=current \
    --agent inventory-wait=4s >"$TMP/node-0.log" 2>&1 &
NR=$!

# a pod behind a gate, its devices bound to its uid (@UID@), then ungated, as placement binds it
make_bound() { # NAME DEVICES_JSON
    BIND_AS_IS=1 bound_pod "$1" "" "  restartPolicy: Never
  schedulingGates: [{name: test.fatia.dev/bind}]" <<YAML
  - name: main
    command: ["sh", "-c", "echo \$CUDA_VISIBLE_DEVICES > $SHARED/$1; sleep 1"]
YAML
    local u
    u=$(jp "$1" .metadata.uid)
    k annotate pod "$1" "fatia.dev/devices=${2//@UID@/$u}" >/dev/null || fail "cannot annotate $1"
    k patch pod "$1" --type json -p '[{"op":"remove","path":"/spec/schedulingGates"}]' >/dev/null ||
        fail "cannot ungate $1"
}

# ---- 1. the slice comes after the pod: the pod waits, then runs on it ----
make_bound late "[{\"slice\":\"gpu-1\",\"kind\":\"whole\",\"uuid\":\"$GB\",\"podUID\":\"@UID@\"}]"
wait_for 10 grep -q "pod default/late: .*'gpu-1' is not a slice of node 'node-0' (yet): waiting" "$TMP/node-0.log"
sleep 1
[ "$(jp late .status.phase)" = Failed ] && fail "late was refused before its slice came: $(jp late .status.message)"
add_inventory "[{\"slice\":\"gpu-1\",\"kind\":\"whole\",\"uuid\":\"$GB\"}]"
wait_for 10 phase_is late Succeeded || fail "late: $(jp late .status.phase) $(jp late .status.message)"
[ "$(cat "$SHARED/late" 2>/dev/null)" = "$GB" ] || fail "late ran with '$(cat "$SHARED/late" 2>/dev/null)', want $GB"

# ---- 2. a slice that never comes: refused after the wait, as before ----
t0=$SECONDS
make_bound forged "[{\"slice\":\"gpu-9\",\"kind\":\"whole\",\"uuid\":\"$GB\",\"minor\":1,\"podUID\":\"@UID@\"}]"
wait_for 15 phase_is forged Failed
echo "forged refused $((SECONDS - t0)) s after its binding (inventory-wait 4 s)"
[ $((SECONDS - t0)) -ge 3 ] || fail "forged was refused without waiting"
[ "$(jp forged .status.reason)" = UnexpectedAdmissionError ] || fail "forged: reason '$(jp forged .status.reason)'"
jp forged .status.message | grep -qF "'gpu-9' is not a slice of node 'node-0'" ||
    fail "forged: message '$(jp forged .status.message)'"
[ -e "$SHARED/forged" ] && fail "forged ran"
kill -TERM "$NR"
wait "$NR" || fail "node-0's node role exited $? after SIGTERM"
NR=
stop_fatiad
finish
