#!/usr/bin/env bash
# tests/cli/podman-cdi.sh: the node's CDI spec that the agent writes (src/agent/cdi.c) is read by
# a real CDI consumer, Debian's podman (4.3), as issue 16 promises: `podman run --device
# fatia.dev/gpu=<slice>` outside fatia gives the container exactly that slice's device node (not
# another GPU's), the host's control node and driver files, the slice's env and, for a capped
# slice, its read-only vgpu.conf and ld.so.preload, and for a MIG slice exactly the
# /dev/nvidia-caps nodes of its GPU and compute instance (not another MIG slice's; a MIG slice
# whose caps the host lacks has no spec). The host is a fake root (--agent cdi-root: its /dev
# nodes made with mknod, its /proc/devices and /proc/driver/nvidia/capabilities written); the
# image is scripts/images/busybox, loaded with `podman load`. The MIG slice also runs in fatia's
# own runtime (--agent runtime=oci) from the same spec, its device cgroup checked from the host.
# podman runs in a private mount namespace whose /run is a tmpfs with the spec's directory bound
# at /run/cdi (podman 4.3 reads only /etc/cdi and /run/cdi: no option names another directory),
# with its storage, run root and runc state under $TMP: nothing of the host's podman changes.
# Found by this test: podman 4.3's CDI library refuses cdiVersion 0.6.0 ("invalid version"): the
# agent writes 0.5.0, the lowest version with every field it uses.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
command -v podman >/dev/null || skip "podman not found (scripts/setup installs it)"
[ "$(id -u)" = 0 ] || skip "mknod of the fake host's device nodes and podman's mounts need root"
need_tools runc umoci skopeo busybox unshare
agent_setup
cleanup() {
    agent_cleanup
    [ -n "${FATIAD_PID:-}" ] && kill -9 "$FATIAD_PID" 2>/dev/null
    for c in $(runc --root "$D/agent/runc" list -q 2>/dev/null); do
        runc --root "$D/agent/runc" delete --force "$c" 2>/dev/null
    done
    grep -o " $TMP[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
    rm -rf "$TMP"
}
trap cleanup EXIT

"$SRC/scripts/images/busybox" "$TMP/busybox.tar" >/dev/null || { fail "cannot build the image"; finish; }
R=$TMP/host
mkdir -p "$R/dev" "$R/proc" "$R/usr/lib/x86_64-linux-gnu" "$R/usr/bin"
mknod "$R/dev/nvidiactl" c 195 255
for m in 0 1 2; do mknod "$R/dev/nvidia$m" c 195 $m; done
# GPU 2 is cut into MIG instances: the driver's capabilities and their /dev/nvidia-caps nodes
# (gi7/ci0 of slice -0, gi8/ci0 of slice -1; gi9's compute instance has no access file)
printf 'Character devices:\n  1 mem\n195 nvidia\n241 nvidia-caps\n\nBlock devices:\n  7 loop\n' >"$R/proc/devices"
mkdir -p "$R/dev/nvidia-caps"
cap() { # cap PATH MINOR: the access file under gpu2/mig/ and its node
    mkdir -p "$R/proc/driver/nvidia/capabilities/gpu2/mig/$1"
    printf 'DeviceFileMinor: %s\nDeviceFileMode: 292\nDeviceFileModify: 1\n' "$2" \
        >"$R/proc/driver/nvidia/capabilities/gpu2/mig/$1/access"
    mknod "$R/dev/nvidia-caps/nvidia-cap$2" c 241 "$2"
}
cap gi7 66
cap gi7/ci0 67
cap gi8 75
cap gi8/ci0 76
cap gi9 84
echo "driver 580" >"$R/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04"
ln -s libcuda.so.580.159.04 "$R/usr/lib/x86_64-linux-gnu/libcuda.so.1"
printf '#!/bin/sh\n' >"$R/usr/bin/nvidia-smi"
chmod +x "$R/usr/bin/nvidia-smi"

D=$TMP/d
"$FATIA" image load -d "$D" --name fatia.dev/busybox:1 "$TMP/busybox.tar" >/dev/null || fail "fatia image load"
start_fatiad "$D" --no-controllers --agent runtime=oci --agent "cdi-root=$R" --agent nodes=node-0 || finish
GA=GPU-aaaaaaaa-1111-2222-3333-444444444444
GB=GPU-bbbbbbbb-1111-2222-3333-444444444444
GC=GPU-cccccccc-1111-2222-3333-444444444444
M0=MIG-00000000-1111-2222-3333-444444444444
M1=MIG-11111111-1111-2222-3333-444444444444
add_inventory "[{\"slice\":\"gpu-0\",\"kind\":\"whole\",\"uuid\":\"$GA\"},
 {\"slice\":\"gpu-1-ts0\",\"kind\":\"timeslice\",\"uuid\":\"$GB\",\"memoryBytes\":4294967296},
 {\"slice\":\"gpu-2-mig-1g18gb-19-0\",\"kind\":\"mig\",\"uuid\":\"$GC\",\"migUuid\":\"$M0\",\"gi\":7,\"ci\":0},
 {\"slice\":\"gpu-2-mig-1g18gb-19-1\",\"kind\":\"mig\",\"uuid\":\"$GC\",\"migUuid\":\"$M1\",\"gi\":8,\"ci\":0},
 {\"slice\":\"gpu-2-mig-1g18gb-19-2\",\"kind\":\"mig\",\"uuid\":\"$GC\",\"migUuid\":\"MIG-22222222-1111-2222-3333-444444444444\",\"gi\":9,\"ci\":0},
 {\"slice\":\"gpu-2-mig-1g18gb-19-3\",\"kind\":\"mig\",\"uuid\":\"$GC\",\"migUuid\":\"MIG-33333333-1111-2222-3333-444444444444\"}]"
CDI=$D/agent/cdi/node-0
wait_for 10 grep -q '"gpu-2-mig-1g18gb-19-1"' "$CDI/fatia.dev-gpu.json" || finish
python3 "$(dirname "$0")/cdi_check.py" "$CDI/fatia.dev-gpu.json" || fail "the spec breaks CDI's rules"
# a MIG slice whose compute instance's capability is missing, or without instance ids: no spec
for s in gpu-2-mig-1g18gb-19-2 gpu-2-mig-1g18gb-19-3; do
    grep -q "\"$s\"" "$CDI/fatia.dev-gpu.json" && fail "$s is in the spec without its caps"
done

# podman_run OUT ARGS...: podman (private storage, runc) in a mount namespace of its own whose
# /run/cdi is the agent's spec directory
P=$TMP/p
mkdir -p "$P"
podman_run() {
    local out=$1
    shift
    unshare -m --propagation private sh -c '
        set -e
        mount -t tmpfs tmpfs /run
        mkdir /run/cdi
        mount --bind "$1" /run/cdi
        shift
        exec podman --root "$P/storage" --runroot "$P/run" --storage-driver vfs \
            --cgroup-manager cgroupfs --events-backend file --runtime runc "$@"' \
        sh "$CDI" "$@" >"$out" 2>&1
}
export P
podman_run "$TMP/load" load -i "$TMP/busybox.tar" || fail "podman load: $(cat "$TMP/load")"
IMG=$(grep -o 'sha256:[0-9a-f]*' "$TMP/load" | tail -1 | cut -c8-)
[ -n "$IMG" ] || { fail "podman load printed no image: $(cat "$TMP/load")"; finish; }
# podman's default rlimits (nofile 1048576) exceed this machine's hard limits
RUN=(run --rm --network none --ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=4096:4096)
PROBE='ls /dev; echo env: $CUDA_VISIBLE_DEVICES $NVIDIA_VISIBLE_DEVICES; echo lib: $(cat /usr/lib/x86_64-linux-gnu/libcuda.so.1)
ls /usr/bin/nvidia-smi; echo conf: $(grep MEMORY_LIMIT_0 /etc/fatia/vgpu.conf); echo preload: $(cat /etc/ld.so.preload)
if echo x >>/etc/fatia/vgpu.conf; then echo conf-writable; fi'

# the whole GPU: its node and the control node, not the other GPU's; its UUID; the driver's files
podman_run "$TMP/gpu0" "${RUN[@]}" --device fatia.dev/gpu=gpu-0 "$IMG" sh -c "$PROBE" ||
    fail "podman run --device fatia.dev/gpu=gpu-0: $(cat "$TMP/gpu0")"
for want in nvidia0 nvidiactl "env: $GA $GA" "lib: driver 580" /usr/bin/nvidia-smi; do
    grep -qx -- "$want" "$TMP/gpu0" || fail "gpu-0 container lacks '$want': $(cat "$TMP/gpu0")"
done
grep -qx nvidia1 "$TMP/gpu0" && fail "gpu-0 container has the other GPU's /dev/nvidia1"
grep -q "^conf: ." "$TMP/gpu0" && fail "a whole GPU's container got a vgpu.conf: $(cat "$TMP/gpu0")"

# the capped slice: its GPU's node only, its cap and interposer, read-only
podman_run "$TMP/ts" "${RUN[@]}" --device fatia.dev/gpu=gpu-1-ts0 "$IMG" sh -c "$PROBE" ||
    fail "podman run --device fatia.dev/gpu=gpu-1-ts0: $(cat "$TMP/ts")"
for want in nvidia1 nvidiactl "env: $GB $GB" "conf: FATIA_VGPU_MEMORY_LIMIT_0=4294967296" \
    "preload: /usr/lib/fatia/libfatia-vgpu.so"; do
    grep -qx -- "$want" "$TMP/ts" || fail "gpu-1-ts0 container lacks '$want': $(cat "$TMP/ts")"
done
grep -qx nvidia0 "$TMP/ts" && fail "gpu-1-ts0 container has the other GPU's /dev/nvidia0"
grep -qx conf-writable "$TMP/ts" && fail "the slice's vgpu.conf is writable in the container"

# a MIG slice: its GPU's node, exactly its GPU and compute instance's nvidia-caps nodes (not the
# other MIG slice's), its MIG UUID; the device cgroup (v1 here) allows those nodes, not the others
MPROBE='ls /dev; ls /dev/nvidia-caps; echo env: $CUDA_VISIBLE_DEVICES
sed "s/^/cgroup: /" /sys/fs/cgroup/devices/devices.list 2>/dev/null'
podman_run "$TMP/mig" "${RUN[@]}" --device fatia.dev/gpu=gpu-2-mig-1g18gb-19-0 "$IMG" sh -c "$MPROBE" ||
    fail "podman run --device fatia.dev/gpu=gpu-2-mig-1g18gb-19-0: $(cat "$TMP/mig")"
for want in nvidia2 nvidiactl nvidia-cap66 nvidia-cap67 "env: $M0"; do
    grep -qx -- "$want" "$TMP/mig" || fail "MIG container lacks '$want': $(cat "$TMP/mig")"
done
for bad in nvidia0 nvidia1 nvidia-cap75 nvidia-cap76 nvidia-cap84; do
    grep -qx -- "$bad" "$TMP/mig" && fail "MIG container has $bad: $(cat "$TMP/mig")"
done
if grep -q "^cgroup: " "$TMP/mig"; then
    for want in "c 241:66 rw" "c 241:67 rw" "c 195:2 rw"; do
        grep -qx -- "cgroup: $want" "$TMP/mig" || fail "the device cgroup lacks $want: $(grep cgroup: "$TMP/mig")"
    done
    grep -E -q "^cgroup: (a |c 241:(75|76|\*))" "$TMP/mig" && fail "the device cgroup allows another cap: $(grep cgroup: "$TMP/mig")"
elif [ -d /sys/fs/cgroup/devices ]; then
    fail "no devices.list in the MIG container: $(cat "$TMP/mig")"
fi

# the same MIG slice in fatia's own runtime (runc, a user namespace: the nodes are bind mounts):
# the same two caps in /dev, and the container's device cgroup allows them and no other cap
bound_pod mig "[{\"slice\":\"gpu-2-mig-1g18gb-19-0\",\"kind\":\"mig\",\"uuid\":\"$GC\",\"migUuid\":\"$M0\",\"gi\":7,\"ci\":0}]" "" <<EOF
  - name: main
    image: fatia.dev/busybox:1
    command: ["sh", "-c", "ls /dev /dev/nvidia-caps > /tmp/devs; exec sleep 600"]
EOF
ctr_pid() {
    python3 - "$D/agent/status/$(jp "$1" .metadata.uid).json" 2>/dev/null <<'PY'
import json, sys
print(next(c["pid"] for c in json.load(open(sys.argv[1]))["containers"] if "pid" in c))
PY
}
devs_written() { GP=$(ctr_pid mig) && [ -s "/proc/$GP/root/tmp/devs" ]; }
if wait_for 30 devs_written; then
    GP=$(ctr_pid mig)
    [ -n "${DEBUG:-}" ] && cat "/proc/$GP/root/tmp/devs" "/sys/fs/cgroup/devices$(awk -F: '$2 == "devices" {print $3}' "/proc/$GP/cgroup")/devices.list" >&2
    for want in nvidia2 nvidiactl nvidia-cap66 nvidia-cap67; do
        grep -qx "$want" "/proc/$GP/root/tmp/devs" || fail "fatia's MIG container lacks $want: $(tr '\n' ' ' <"/proc/$GP/root/tmp/devs")"
    done
    grep -E -qx "nvidia-cap(75|76|84)|nvidia[01]" "/proc/$GP/root/tmp/devs" &&
        fail "fatia's MIG container has another slice's node: $(tr '\n' ' ' <"/proc/$GP/root/tmp/devs")"
    dl=/sys/fs/cgroup/devices$(awk -F: '$2 == "devices" {print $3}' "/proc/$GP/cgroup")/devices.list
    if [ -f "$dl" ]; then
        for want in "c 241:66 rw" "c 241:67 rw" "c 195:2 rw"; do
            grep -qx "$want" "$dl" || fail "fatia's device cgroup lacks $want: $(tr '\n' ' ' <"$dl")"
        done
        grep -E -q "^(a |c 241:(75|76|84|\*) |c 195:[01] )" "$dl" && fail "fatia's device cgroup allows another slice's node: $(tr '\n' ' ' <"$dl")"
    elif [ -d /sys/fs/cgroup/devices ]; then
        fail "no devices.list for fatia's MIG container ($dl)"
    fi
else
    fail "fatia's MIG pod did not run: $(jp mig .status.containerStatuses)"
fi
k delete pod mig --wait=false >/dev/null 2>&1

# a slice the spec does not have is refused by podman, not run without its device
podman_run "$TMP/none" "${RUN[@]}" --device fatia.dev/gpu=gpu-7 "$IMG" true &&
    fail "podman ran a container with an unknown slice"
grep -q "unresolvable CDI devices fatia.dev/gpu=gpu-7" "$TMP/none" || fail "unknown slice: $(cat "$TMP/none")"
stop_fatiad
finish
