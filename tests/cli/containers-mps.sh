#!/usr/bin/env bash
# tests/cli/containers-mps.sh: an MPS share in a pod's OCI container (issue 16), against the fake
# NVML (node-0's GPUs are real: label fatia.dev/inventory=nvml) and the fake MPS control program,
# which as its daemon writes /dev/shm/fake-mps-daemon, as a real server writes its shared memory.
# The agent (root) must give the GPU's daemon a /dev/shm of its own (a tmpfs at
# DATA/agent/mps/<uuid>/shm, in a mount namespace of the daemon's) and each MPS container:
#   the daemon's pipe directory, read-only, at /tmp/nvidia-mps (the driver's default, so a client
#   that unsets CUDA_MPS_PIPE_DIRECTORY still finds it) and the variable pointing there;
#   the daemon's /dev/shm as its /dev/shm (one mount there), not the host's, both ways;
#   the interposer's read-only files, capped at the share's pinned memory;
# and a process-mode pod (RuntimeClass fatia-process) the same /dev/shm, for every exec too. When
# the last MPS pod goes the daemon goes, with its tmpfs: the next daemon's /dev/shm is empty.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
[ "$(id -u)" = 0 ] || skip "containers need root"
need_tools runc umoci skopeo busybox unshare
BUILD=$(cd "$BUILD" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
FAKE=$BUILD/tests/vgpu/fake/libnvidia-ml.so.1
MPSCTL=$SRC/tests/vgpu/fake-mps-control
[ -e "$FAKE" ] || { fail "missing $FAKE (build first)"; finish; }
agent_setup
D=$TMP/d
cleanup() {
    agent_cleanup
    [ -n "$FATIAD_PID" ] && kill -9 "$FATIAD_PID" 2>/dev/null
    pkill -f "$D/agent/mps/" 2>/dev/null
    for c in $(runc --root "$D/agent/runc" list -q 2>/dev/null); do
        runc --root "$D/agent/runc" delete --force "$c" 2>/dev/null
    done
    grep -o " ${TMP}[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
    rm -rf "$TMP"
}
trap cleanup EXIT
export FAKE_NVML_STATE=$TMP/nvml-state
mkdir -p "$FAKE_NVML_STATE"
rm -f /dev/shm/fake-mps-daemon

"$SRC/scripts/images/busybox" "$TMP/bb.tar" || { fail "cannot build the busybox image"; finish; }
expect_rc 0 "$FATIA" image load -d "$D" --name fatia.dev/busybox:mps "$TMP/bb.tar"
H=$TMP/host
mkdir -p "$H/dev"
mknod "$H/dev/nvidiactl" c 195 255
mknod "$H/dev/nvidia0" c 195 0
start_fatiad "$D" --no-controllers --agent runtime=oci --agent "cdi-root=$H" \
    --agent "mps-control=$MPSCTL" --agent "gpu-watch-nvml=$FAKE" || finish
k label node node-0 fatia.dev/inventory=nvml --overwrite >/dev/null 2>&1 ||
    k create -f - >/dev/null <<YAML || fail "cannot make node-0 real"
apiVersion: v1
kind: Node
metadata: {name: node-0, labels: {fatia.dev/inventory: nvml}}
YAML
U=GPU-fake-0
mps_dev() { echo "[{\"slice\":\"gpu-0-mps$1\",\"kind\":\"mps\",\"gpuIndex\":0,\"uuid\":\"$U\",\"mps\":{\"threadPercentage\":25,\"pinnedMemoryBytes\":2147483648}}]"; }
mps_pod() { # NAME SHARE [EXTRA]
    bound_pod "$1" "$(mps_dev "$2")" "  restartPolicy: Never${3:+
$3}" <<EOF
  - name: main
    image: fatia.dev/busybox:mps
    imagePullPolicy: Never
    command: ["sleep", "600"]
EOF
}
running() { [ -n "$(jp "$1" '.status.containerStatuses[0].state.running.startedAt')" ]; }
cx() { # POD CMD: CMD in a fresh shell of the pod (kubectl exec), its output
    timeout 30 "$KUBECTL" --kubeconfig "$KCFG" exec "$1" -- sh -c "$2" 2>&1
}
M=$D/agent/mps/$U

mps_pod m1 0
wait_for 30 running m1 || { fail "m1 is not running: $(k get pod m1 -o jsonpath='{.status}')"; tail -20 "$D.log" >&2; finish; }

# ---- the daemon: its own /dev/shm, a tmpfs in a mount namespace of its own ----
grep -q " $M/shm tmpfs " /proc/mounts || fail "no tmpfs at $M/shm: $(grep "$M" /proc/mounts)"
[ "$(cat "$M/shm/fake-mps-daemon" 2>/dev/null)" = "$U" ] || fail "the daemon did not write into its own /dev/shm: $(ls -la "$M/shm" 2>&1)"
[ ! -e /dev/shm/fake-mps-daemon ] || fail "the daemon wrote into the host's /dev/shm"
ns=$(sed -n 's/^MNTNS=//p' "$M/log/control.log")
[ -n "$ns" ] && [ "$ns" != "$(readlink /proc/self/ns/mnt)" ] || fail "the daemon's mount namespace is the host's ('$ns')"

# ---- the container: the pipe directory read-only at the default path, the daemon's /dev/shm ----
[ "$(cx m1 'echo $CUDA_MPS_PIPE_DIRECTORY')" = /tmp/nvidia-mps ] || fail "CUDA_MPS_PIPE_DIRECTORY: $(cx m1 'echo $CUDA_MPS_PIPE_DIRECTORY')"
[ "$(cx m1 'cat /tmp/nvidia-mps/nvidia-cuda-mps-control.pid')" = "$(cat "$M/pipe/nvidia-cuda-mps-control.pid")" ] ||
    fail "the container does not see the daemon's pipe directory: $(cx m1 'ls -la /tmp/nvidia-mps')"
out=$(cx m1 'echo x >/tmp/nvidia-mps/planted && echo WROTE')
case $out in *WROTE*) fail "the container wrote into the daemon's pipe directory" ;; esac
[ ! -e "$M/pipe/planted" ] || fail "a file planted in the pipe directory"
out=$(cx m1 'rm -f /tmp/nvidia-mps/nvidia-cuda-mps-control.pid && echo REMOVED')
case $out in *REMOVED*) fail "the container removed the daemon's pid file" ;; esac
[ -s "$M/pipe/nvidia-cuda-mps-control.pid" ] || fail "the daemon's pid file is gone"
[ "$(cx m1 'env -i /bin/cat /dev/shm/fake-mps-daemon')" = "$U" ] || fail "the container's /dev/shm is not the daemon's: $(cx m1 'ls -la /dev/shm')"
cx m1 'echo from-m1 >/dev/shm/from-pod' >/dev/null
[ "$(cat "$M/shm/from-pod" 2>/dev/null)" = from-m1 ] || fail "what the container wrote in /dev/shm is not in the daemon's"
[ ! -e /dev/shm/from-pod ] || fail "the container wrote into the host's /dev/shm"
UID1=$(jp m1 .metadata.uid)
CFG=$(grep -rl '"ociVersion"' "$D/agent/pods/$UID1" 2>/dev/null | head -1)
python3 - "$CFG" "$M" <<'PY' || fail "the container's config: $CFG"
import json, sys
cfg, m = json.load(open(sys.argv[1])), sys.argv[2]
shm = [x for x in cfg["mounts"] if x["destination"] == "/dev/shm"]
assert len(shm) == 1 and shm[0]["source"] == m + "/shm", shm
pipe = [x for x in cfg["mounts"] if x["destination"] == "/tmp/nvidia-mps"]
assert len(pipe) == 1 and pipe[0]["source"] == m + "/pipe" and "ro" in pipe[0]["options"], pipe
# capped by the interposer too (MPS's own limit is per process): its read-only files
for dst in ("/etc/ld.so.preload", "/etc/fatia/vgpu.conf"):
    x = [y for y in cfg["mounts"] if y["destination"] == dst]
    assert len(x) == 1 and "ro" in x[0]["options"], (dst, x)
PY

# ---- a second share of the GPU, and a process-mode pod: one daemon, one /dev/shm ----
mps_pod m2 1
wait_for 30 running m2 || fail "m2 is not running"
[ "$(cx m2 'cat /dev/shm/from-pod')" = from-m1 ] || fail "m2 does not share the daemon's /dev/shm"
[ "$(grep -c "^CUDA_VISIBLE_DEVICES" "$M/log/control.log")" = 1 ] || fail "a second daemon: $(cat "$M/log/control.log")"
mps_pod p1 2 "  runtimeClassName: fatia-process"
if wait_for 30 phase_is p1 Running; then
    [ "$(cx p1 'cat /dev/shm/from-pod')" = from-m1 ] || fail "the process-mode pod's exec does not see the daemon's /dev/shm: $(cx p1 'ls /dev/shm | head')"
    UIDP=$(jp p1 .metadata.uid)
    PID=$(for p in $(pgrep -x sleep); do grep -q "$UIDP" "/proc/$p/cgroup" 2>/dev/null && echo "$p"; done | head -1)
    [ -n "$PID" ] && [ "$(cat "/proc/$PID/root/dev/shm/fake-mps-daemon" 2>/dev/null)" = "$U" ] ||
        fail "the process-mode pod's process ($PID) does not have the daemon's /dev/shm"
else
    fail "the process-mode MPS pod does not run: $(k get pod p1 -o jsonpath='{.status}')"
fi

# ---- the last MPS pod gone: the daemon and its tmpfs go; the next daemon starts empty ----
k delete pod m1 m2 p1 --grace-period=1 >/dev/null
wait_for 30 sh -c "! grep -q ' $M/shm ' /proc/mounts && [ ! -e '$M' ]" || fail "the daemon's /dev/shm is left: $(grep "$M" /proc/mounts; ls -la "$M" 2>&1)"
mps_pod m3 0
wait_for 30 running m3 || fail "m3 is not running"
[ "$(cx m3 'ls /dev/shm')" = fake-mps-daemon ] || fail "the next daemon's /dev/shm holds what the last left: $(cx m3 'ls /dev/shm')"
k delete pod m3 --grace-period=1 >/dev/null
wait_for 30 sh -c "[ ! -e '$M' ]" || fail "the daemon's directory is left"
stop_fatiad
finish
