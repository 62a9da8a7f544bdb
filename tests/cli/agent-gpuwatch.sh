#!/usr/bin/env bash
# tests/cli/agent-gpuwatch.sh: the node agent's GPU memory watchdog (issue 16) against the fake
# NVML's per-process lists (tests/vgpu/fake_nvml.c, FAKE_NVML_PROCS). A "static binary" on a
# 4 GiB time-slice of GPU-fake-0 (a process that never loads the interposer and only tells the
# driver it holds 8 GiB) is stopped within a watchdog period or two: phase Failed, reason
# GPUMemoryLimitExceeded, a Warning Event naming the slice, the cap and the peak, and
# fatia_agent_gpuwatch_kills 1 in /metrics. Its neighbour on another slice of the same GPU,
# holding 3 GiB of its 4 (plus its context), keeps running; so does an MPS client under its
# pinned limit; an MPS client over it is stopped; a whole-GPU pod is never capped.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
FAKE=$BUILD/tests/vgpu/fake/libnvidia-ml.so.1
[ -e "$FAKE" ] || { fail "missing $FAKE (build first)"; finish; }
agent_setup
trap 'agent_cleanup; if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID" 2>/dev/null; fi; rm -rf "$TMP"' EXIT

export FAKE_NVML_PROCS=$SHARED/nvml
mkdir -p "$FAKE_NVML_PROCS"
chmod 1777 "$FAKE_NVML_PROCS"
D=$TMP/d
start_fatiad "$D" --no-controllers --agent "gpu-watch-nvml=$FAKE" --agent gpu-watch=100ms || finish
grep -q "GPU memory watchdog on 2 GPUs every 100 ms" "$D.log" || fail "no watchdog: $(grep -i watchdog "$D.log")"
grep -q "pod cgroups under" "$D.log" || skip "no pod cgroups on this machine: the watchdog maps pids by cgroup ($(grep -i cgroup "$D.log" | head -2))"

G=GPU-fake-0
GiB=$((1 << 30))
slice() { # NAME KIND MEMORY
    echo "[{\"slice\":\"$1\",\"kind\":\"$2\",\"gpuIndex\":0,\"uuid\":\"$G\",\"memoryBytes\":$3}]"
}
# a process that holds BYTES on GPU 0 as far as the driver knows, then sleeps (exec: same pid;
# $$$$ is the shell's $$ once Kubernetes has expanded the command)
holds() {
    echo "    command: [\"sh\", \"-c\", \"echo $1 >$FAKE_NVML_PROCS/${2:-}0.\$\$\$\$; exec sleep 120\"]"
}

bound_pod neighbour "$(slice gpu-0-ts0 timeslice $((4 * GiB)))" "  restartPolicy: Never" <<YAML
  - name: main
$(holds $((3 * GiB)))
YAML
bound_pod whole "[{\"slice\":\"gpu-1\",\"kind\":\"whole\",\"gpuIndex\":1,\"uuid\":\"GPU-fake-1\"}]" "  restartPolicy: Never" <<YAML
  - name: main
    command: ["sh", "-c", "echo $((70 * GiB)) >$FAKE_NVML_PROCS/1.\$\$\$\$; exec sleep 120"]
YAML
wait_for 10 phase_is neighbour Running
wait_for 10 phase_is whole Running
# what a container runtime mounts for the capped container (src/agent/vgpu_files.h): the
# interposer's configuration, ld.so.preload and the edits in CDI's containerEdits format
V=$D/agent/pods/$(jp neighbour .metadata.uid)/vgpu
[ "$(stat -c %a "$V/main.conf" 2>/dev/null)" = 444 ] || fail "neighbour: $V/main.conf: $(ls -l "$V" 2>&1)"
grep -qx "FATIA_VGPU_MEMORY_LIMIT_0=$((4 * GiB))" "$V/main.conf" || fail "neighbour: conf: $(cat "$V/main.conf")"
grep -qx "FATIA_VGPU_SHARED_FILE=/run/fatia/vgpu/slice.acct" "$V/main.conf" || fail "neighbour: conf: $(cat "$V/main.conf")"
grep -qx "FATIA_VGPU_DEVICE_UUIDS=$G" "$V/main.conf" || fail "neighbour: conf: $(cat "$V/main.conf")"
grep -qx "/usr/lib/fatia/libfatia-vgpu.so" "$V/ld.so.preload" || fail "neighbour: preload: $(cat "$V/ld.so.preload")"
python3 - "$V/main.edits.json" <<'PY' || fail "neighbour: edits: $(cat "$V/main.edits.json")"
import json, os, sys
e = json.load(open(sys.argv[1]))
m = {x["containerPath"]: x for x in e["mounts"]}
assert set(m) == {"/etc/fatia/vgpu.conf", "/etc/ld.so.preload", "/usr/lib/fatia/libfatia-vgpu.so",
                  "/run/fatia/vgpu/slice.acct"}, m
for x in e["mounts"]:
    assert os.path.exists(x["hostPath"]), x
    assert ("rw" in x["options"]) == (x["containerPath"] == "/run/fatia/vgpu/slice.acct"), x
assert e["env"] == ["CUDA_VISIBLE_DEVICES=GPU-fake-0"], e["env"]
PY

bound_pod static "$(slice gpu-0-ts1 timeslice $((4 * GiB)))" "  restartPolicy: Never" <<YAML
  - name: main
$(holds $((8 * GiB)))
YAML
wait_for 10 phase_is static Failed
[ "$(jp static .status.reason)" = GPUMemoryLimitExceeded ] || fail "static: reason '$(jp static .status.reason)'"
# how long it ran: from the container's start to its end, at most a few watchdog periods
started=$(jp static '.status.containerStatuses[0].state.terminated.startedAt')
ended=$(jp static '.status.containerStatuses[0].state.terminated.finishedAt')
echo "static: started $started, finished $ended"
# from the agent's "started" line to the watchdog's verdict, from fatiad's log timestamps
held_ms=$(python3 - "$D.log" <<'PY'
import datetime, sys
t0 = t1 = None
for line in open(sys.argv[1]):
    ts = line.split(" ", 1)[0]
    if "pod default/static started" in line and t0 is None:
        t0 = ts
    if "pod default/static: slice gpu-0-ts1" in line and t1 is None:
        t1 = ts
p = lambda s: datetime.datetime.strptime(s.rstrip("Z"), "%Y-%m-%dT%H:%M:%S.%f")
print(int((p(t1) - p(t0)).total_seconds() * 1000) if t0 and t1 else -1)
PY
)
echo "static: stopped ${held_ms} ms after the agent started it (watchdog period 100 ms)"
[ "$held_ms" -ge 0 ] && [ "$held_ms" -le 2000 ] || fail "static: held for ${held_ms} ms"
wait_for 5 sh -c "'$KUBECTL' --kubeconfig '$KCFG' get events --field-selector involvedObject.name=static,reason=GPUMemoryLimitExceeded -o jsonpath='{.items[0].message}' | grep -q 'slice gpu-0-ts1: the pod.s processes held $((8 * GiB)) bytes of GPU $G, over the slice.s cap of $((4 * GiB)) bytes'"
k get events --field-selector involvedObject.name=static,reason=GPUMemoryLimitExceeded -o jsonpath='{.items[0].message}'
echo
metric() {
    api GET /metrics
    awk -v n="$1" '$1 == n { v = $2 } END { print (v == "" ? "missing" : v) }' "$TMP/body"
}
[ "$(metric fatia_agent_gpuwatch_kills)" = 1 ] || fail "kills: $(metric fatia_agent_gpuwatch_kills)"

# MPS: the pinned device memory limit is the cap; the MPS clients' list is read
mps() { # NAME SLICE
    echo "[{\"slice\":\"$2\",\"kind\":\"mps\",\"gpuIndex\":0,\"uuid\":\"$G\",\"mps\":{\"threadPercentage\":25,\"pinnedMemoryBytes\":$((2 * GiB))}}]"
}
bound_pod mpsok "$(mps mpsok gpu-0-mps0)" "  restartPolicy: Never" <<YAML
  - name: main
$(holds $((GiB + GiB / 2)) mps.)
YAML
bound_pod mpsover "$(mps mpsover gpu-0-mps1)" "  restartPolicy: Never" <<YAML
  - name: main
$(holds $((6 * GiB)) mps.)
YAML
wait_for 10 phase_is mpsover Failed
[ "$(jp mpsover .status.reason)" = GPUMemoryLimitExceeded ] || fail "mpsover: reason '$(jp mpsover .status.reason)'"
[ "$(metric fatia_agent_gpuwatch_kills)" = 2 ] || fail "kills: $(metric fatia_agent_gpuwatch_kills)"

# the honest ones still run, after many periods
sleep 1
for p in neighbour whole mpsok; do
    [ "$(jp $p .status.phase)" = Running ] || fail "$p: $(jp $p .status.phase) $(jp $p .status.reason)"
done
[ "$(metric fatia_agent_gpuwatch_watched_pods)" = 2 ] || fail "watched: $(metric fatia_agent_gpuwatch_watched_pods)"
stop_fatiad
finish
