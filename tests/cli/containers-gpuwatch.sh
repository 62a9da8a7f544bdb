#!/usr/bin/env bash
# tests/cli/containers-gpuwatch.sh: the GPU memory watchdog over pods in runc containers
# (--agent runtime=oci; issue 16). A container's processes are in runc's cgroup
# /fatia-pods/pod-<uid>/<name>, not in a cgroup of the agent's own, and NVML reports their host
# pids: the watchdog must map them to the pod all the same. Against the fake NVML's per-process
# lists (FAKE_NVML_PROCS, written here for the container's host pid, read from runc's state): a
# "static binary" on a 4 GiB time-slice (a process the interposer never sees that the driver says
# holds 8 GiB) is stopped within a few periods (Failed, GPUMemoryLimitExceeded, the Event, the
# kills counter, no runc container left); its neighbour on the other half of the GPU, holding
# 3 GiB of its 4, keeps running. With the container mapping taken out of gpuwatch_agent.c the
# static pod keeps running and the test fails.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
[ "$(id -u)" = 0 ] || skip "containers need root"
need_tools runc umoci skopeo busybox
FAKE=$BUILD/tests/vgpu/fake/libnvidia-ml.so.1
[ -e "$FAKE" ] || { fail "missing $FAKE (build first)"; finish; }
SRC=$(cd "$(dirname "$0")/../.." && pwd)
agent_setup
D=$TMP/d
cleanup() {
    agent_cleanup
    [ -n "$FATIAD_PID" ] && kill -9 "$FATIAD_PID" 2>/dev/null
    for c in $(runc --root "$D/agent/runc" list -q 2>/dev/null); do
        runc --root "$D/agent/runc" delete --force "$c" 2>/dev/null
    done
    grep -o " ${TMP}[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
    rm -rf "$TMP"
}
trap cleanup EXIT

"$SRC/scripts/images/busybox" "$TMP/busybox.tar" || { fail "cannot build the busybox image"; finish; }
expect_rc 0 "$FATIA" image load -d "$D" --name fatia.dev/busybox:1 "$TMP/busybox.tar"
H=$TMP/host
mkdir -p "$H/dev"
mknod "$H/dev/nvidiactl" c 195 255
mknod "$H/dev/nvidia0" c 195 0
export FAKE_NVML_PROCS=$SHARED/nvml
mkdir -p "$FAKE_NVML_PROCS"
start_fatiad "$D" --no-controllers --agent runtime=oci --agent "cdi-root=$H" \
    --agent "gpu-watch-nvml=$FAKE" --agent gpu-watch=100ms || finish
grep -q "pods run in OCI containers" "$D.log" || fail "fatiad does not say pods run in containers"
grep -q "GPU memory watchdog on 2 GPUs every 100 ms" "$D.log" || fail "no watchdog: $(grep -i watchdog "$D.log")"

G=GPU-fake-0
GiB=$((1 << 30))
slice() { echo "[{\"slice\":\"$1\",\"kind\":\"timeslice\",\"gpuIndex\":0,\"uuid\":\"$G\",\"memoryBytes\":$((4 * GiB))}]"; }
ctr() {
    cat <<YAML
  - name: main
    image: fatia.dev/busybox:1
    imagePullPolicy: Never
    command: ["sleep", "120"]
YAML
}
# host_pid POD: the container's init, as runc knows it
host_pid() {
    runc --root "$D/agent/runc" state "$(jp "$1" .metadata.uid)-main" 2>/dev/null |
        python3 -c 'import json,sys; s = json.load(sys.stdin); print(s["pid"]) if s["status"] == "running" else sys.exit(1)' 2>/dev/null
}
running() { [ -n "$(jp "$1" '.status.containerStatuses[0].state.running.startedAt')" ] && host_pid "$1" >/dev/null; }

ctr | bound_pod neighbour "$(slice gpu-0-ts0)" "  restartPolicy: Never"
ctr | bound_pod static "$(slice gpu-0-ts1)" "  restartPolicy: Never"
for p in neighbour static; do
    wait_for 30 running $p || { fail "$p is not running: $(jp $p .status)"; tail -20 "$D.log" >&2; finish; }
done
NP=$(host_pid neighbour)
SP=$(host_pid static)
grep -q "^0::/fatia-pods/pod-$(jp static .metadata.uid)/main$" "/proc/$SP/cgroup" ||
    fail "static's host pid $SP is not in runc's cgroup of the pod: $(cat "/proc/$SP/cgroup")"
echo $((3 * GiB)) >"$FAKE_NVML_PROCS/0.$NP"
sleep 0.5 # several periods with the honest one alone
phase_is neighbour Running || fail "neighbour under its cap: $(jp neighbour .status.phase) $(jp neighbour .status.reason)"
echo $((8 * GiB)) >"$FAKE_NVML_PROCS/0.$SP"
t0=$(date +%s%N)
wait_for 10 phase_is static Failed
echo "static: Failed $((($(date +%s%N) - t0) / 1000000)) ms after the driver reported 8 GiB (period 100 ms)"
[ "$(jp static .status.reason)" = GPUMemoryLimitExceeded ] || fail "static: reason '$(jp static .status.reason)'"
wait_for 5 sh -c "'$KUBECTL' --kubeconfig '$KCFG' get events --field-selector involvedObject.name=static,reason=GPUMemoryLimitExceeded -o jsonpath='{.items[0].message}' | grep -q 'slice gpu-0-ts1: the pod.s processes held $((8 * GiB)) bytes of GPU $G, over the slice.s cap of $((4 * GiB)) bytes'"
wait_for 10 sh -c "! kill -0 $SP 2>/dev/null"
wait_for 10 sh -c "! runc --root '$D/agent/runc' list -q | grep -q '^$(jp static .metadata.uid)-'"
api GET /metrics
grep -qx "fatia_agent_gpuwatch_kills 1" "$TMP/body" || fail "kills: $(grep gpuwatch_kills "$TMP/body")"
sleep 0.5
phase_is neighbour Running || fail "neighbour: $(jp neighbour .status.phase) $(jp neighbour .status.reason)"
kill -0 "$NP" 2>/dev/null || fail "the neighbour's container process is gone"
k delete pod neighbour static --grace-period=1 --wait=false >/dev/null
wait_for 30 sh -c "[ -z \"\$(runc --root '$D/agent/runc' list -q)\" ]"
stop_fatiad
finish
