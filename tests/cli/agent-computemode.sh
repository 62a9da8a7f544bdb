#!/usr/bin/env bash
# tests/cli/agent-computemode.sh: --agent gpu-compute-mode=manage (issue 16) against the fake
# NVML (its compute mode kept in FAKE_NVML_STATE, every change logged) and the fake MPS control
# program: an MPS pod on a node whose GPUs are real (label fatia.dev/inventory=nvml) puts its GPU
# in EXCLUSIVE_PROCESS before the daemon starts and the mode it had (PROHIBITED here, to show it
# is remembered, not assumed) comes back when the last MPS pod is gone; the other GPU is never
# touched; without the option nothing is changed. Never run against a real GPU (docs/agent.md).
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
FAKE=$BUILD/tests/vgpu/fake/libnvidia-ml.so.1
MPSCTL=$(cd "$(dirname "$0")/../vgpu" && pwd)/fake-mps-control
[ -e "$FAKE" ] || { fail "missing $FAKE (build first)"; finish; }
agent_setup
trap 'agent_cleanup; [ -n "${MPSPID:-}" ] && kill "$MPSPID" 2>/dev/null; if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID" 2>/dev/null; fi; rm -rf "$TMP"' EXIT
export FAKE_NVML_STATE=$TMP/nvml-state
mkdir -p "$FAKE_NVML_STATE"
echo 2 >"$FAKE_NVML_STATE/compute-mode.0" # PROHIBITED, set by the host's admin
mode() { cat "$FAKE_NVML_STATE/compute-mode.$1" 2>/dev/null || echo 0; }

run_case() { # OPTION: an MPS pod runs and ends under it
    D=$TMP/d-$1
    start_fatiad "$D" --no-controllers --agent "mps-control=$MPSCTL" --agent "gpu-watch-nvml=$FAKE" \
        --agent "gpu-compute-mode=$1" || finish
    k label node node-0 fatia.dev/inventory=nvml --overwrite >/dev/null 2>&1 ||
        k create -f - >/dev/null <<YAML || fail "cannot make node-0 real"
apiVersion: v1
kind: Node
metadata: {name: node-0, labels: {fatia.dev/inventory: nvml}}
YAML
    bound_pod "mps-$1" "[{\"slice\":\"gpu-0-mps0\",\"kind\":\"mps\",\"gpuIndex\":0,\"uuid\":\"GPU-fake-0\",\"mps\":{\"threadPercentage\":25,\"pinnedMemoryBytes\":2147483648}}]" "  restartPolicy: Never" <<YAML
  - name: main
    command: ["sh", "-c", "echo pipe=\$(CUDA_MPS_PIPE_DIRECTORY); sleep 3"]
YAML
    wait_for 15 phase_is "mps-$1" Running
}

# manage: PROHIBITED -> EXCLUSIVE_PROCESS while the daemon runs -> PROHIBITED
run_case manage
grep -q "started\|MPS" "$D.log" || true
[ "$(mode 0)" = 3 ] || fail "manage: GPU 0 in mode $(mode 0) while its MPS daemon runs: $(grep -i 'mps\|compute' "$D.log" | tail -5)"
[ -s "$D/agent/mps/GPU-fake-0.compute-mode" ] || fail "manage: no state file"
[ "$(cat "$D/agent/mps/GPU-fake-0.compute-mode" 2>/dev/null)" = 2 ] || fail "manage: state '$(cat "$D/agent/mps/GPU-fake-0.compute-mode")'"
wait_for 15 phase_is mps-manage Succeeded
k delete pod mps-manage --wait=false >/dev/null
wait_for 15 sh -c "[ \"\$(cat '$FAKE_NVML_STATE/compute-mode.0')\" = 2 ]"
[ ! -e "$D/agent/mps/GPU-fake-0.compute-mode" ] || fail "manage: the state file is left"
[ "$(cat "$FAKE_NVML_STATE/compute-mode.log")" = "0 3
0 2" ] || fail "manage: changes: $(cat "$FAKE_NVML_STATE/compute-mode.log")"
[ "$(mode 1)" = 0 ] && [ ! -e "$FAKE_NVML_STATE/compute-mode.1" ] || fail "GPU 1 was touched"
stop_fatiad
cp "$FAKE_NVML_STATE/compute-mode.log" "$TMP/log-manage"

# leave (the default): nothing changes
run_case leave
[ "$(mode 0)" = 2 ] || fail "leave: GPU 0 in mode $(mode 0)"
wait_for 15 phase_is mps-leave Succeeded
cmp -s "$FAKE_NVML_STATE/compute-mode.log" "$TMP/log-manage" || fail "leave: a change: $(cat "$FAKE_NVML_STATE/compute-mode.log")"
stop_fatiad
finish
