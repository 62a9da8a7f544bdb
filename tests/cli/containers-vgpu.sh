#!/usr/bin/env bash
# tests/cli/containers-vgpu.sh: a capped GPU slice in a pod's OCI container, end to end through
# the node agent (issue 16: "Limits that hold against the tenant"), against the fake libcuda. A
# pod of a time-sliced slice with a 64 MiB cap runs in runc (--agent runtime=oci) from an image
# this test builds (busybox plus the test worker, the libraries it and the interposer link, and
# the fake driver in the image's ld.so.cache). The agent must give the container:
#   no host LD_PRELOAD or FATIA_VGPU_* in its environment (they name host paths, and any process
#   can drop them); /etc/ld.so.preload, /etc/fatia/vgpu.conf and the interposer as read-only
#   mounts, its own accounting file (the pod's, not the node CDI spec's per-slice one); the device
#   node of its slice from the node's CDI spec (POD_DIR/cdi/node-0/fatia.dev-gpu.json, host at
#   --agent cdi-root), and no other GPU's.
# Then the bypasses, each through `kubectl exec` (runc exec: a second shell that inherits nothing):
# honest within the cap granted; over it refused; env -i; LD_PRELOAD dropped with the tenant's
# own FATIA_VGPU_* caps; a child of env -i while another process of the pod holds memory; writes
# to the configuration and the preload list refused; a second pod of the other half of the GPU
# is not charged for the first's memory.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
[ "$(id -u)" = 0 ] || skip "containers need root"
need_tools runc umoci skopeo busybox ldconfig
BUILD=$(cd "$BUILD" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
LIB=$BUILD/lib/libfatia-vgpu.so
FAKE=$BUILD/tests/vgpu/fake
WORKER=$BUILD/tests/vgpu_worker
for f in "$LIB" "$FAKE/libcuda.so.1" "$WORKER"; do
    [ -e "$f" ] || { fail "missing $f (build first)"; finish; }
done
agent_setup
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
D=$TMP/d
MiB=$((1 << 20))

# ---- the image: busybox, the worker, the libraries, the fake driver in the ld.so cache ----
W=$TMP/img
mkdir -p "$W"
"$SRC/scripts/images/busybox" "$W/base.tar" || { fail "cannot build the busybox image"; finish; }
skopeo --insecure-policy copy -q "oci-archive:$W/base.tar" "oci:$W/layout:img" || { fail "skopeo"; finish; }
umoci unpack --image "$W/layout:img" "$W/b" >/dev/null || { fail "umoci unpack"; finish; }
R=$W/b/rootfs
mkdir -p "$R/usr/bin" "$R/usr/lib/x86_64-linux-gnu" "$R/etc"
cp "$WORKER" "$R/usr/bin/vgpu_worker"
cp -L "$FAKE/libcuda.so.1" "$R/usr/lib/x86_64-linux-gnu/libcuda.so.1"
for f in "$WORKER" "$LIB" "$FAKE/libcuda.so.1"; do
    ldd "$f" 2>/dev/null | awk '/=>/ {print $3} /^\t\/lib/ {print $1}'
done | sort -u | while read -r l; do
    [ -f "$l" ] || continue
    case $l in
    "$BUILD"/*) cp -L "$l" "$R/usr/lib/x86_64-linux-gnu/" ;; # the test's own (the fake runtime)
    *) mkdir -p "$R$(dirname "$l")" && cp -L "$l" "$R$l" ;;
    esac
done
# the runtime's request list, where the worker was built to read it
mkdir -p "$R$SRC/tests/vgpu"
cp -r "$SRC/tests/vgpu/data" "$R$SRC/tests/vgpu/"
printf '%s\n' /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu >"$R/etc/ld.so.conf"
ldconfig -r "$R" 2>/dev/null || fail "ldconfig could not write the image's cache"
umoci repack --image "$W/layout:img" "$W/b" || { fail "umoci repack"; finish; }
skopeo --insecure-policy copy -q "oci:$W/layout:img" "oci-archive:$W/vgpu.tar" || { fail "skopeo"; finish; }
expect_rc 0 "$FATIA" image load -d "$D" --name fatia.dev/vgpu-test:1 "$W/vgpu.tar"

# ---- the node's host: a fake root with the slices' device nodes and the control node ----
H=$TMP/host
mkdir -p "$H/dev"
mknod "$H/dev/nvidiactl" c 195 255
mknod "$H/dev/nvidia1" c 195 1
mknod "$H/dev/nvidia0" c 195 0
start_fatiad "$D" --no-controllers --agent runtime=oci --agent "cdi-root=$H" || finish
grep -q "pods run in OCI containers" "$D.log" || fail "fatiad does not say pods run in containers"

GB=GPU-bbbbbbbb-1111-2222-3333-444444444444
CAP=$((64 * MiB))
add_inventory "[{\"slice\":\"gpu-0\",\"kind\":\"whole\",\"uuid\":\"GPU-aaaaaaaa-1111-2222-3333-444444444444\"},
 {\"slice\":\"gpu-1-ts0\",\"kind\":\"timeslice\",\"uuid\":\"$GB\",\"memoryBytes\":$CAP},
 {\"slice\":\"gpu-1-ts1\",\"kind\":\"timeslice\",\"uuid\":\"$GB\",\"memoryBytes\":$CAP}]"
sleep 1 # the agent's cache of the ResourceSlice
# t0 runs as the image's root (its namespace's host range root), t1 as uid 1000 in it: each
# container's accounting file is its user's
for n in 0 1; do
    bound_pod "t$n" "[{\"slice\":\"gpu-1-ts$n\",\"kind\":\"timeslice\",\"uuid\":\"$GB\",\"memoryBytes\":$CAP}]" "  restartPolicy: Never" <<EOF
  - name: main
    image: fatia.dev/vgpu-test:1
    imagePullPolicy: Never
    command: ["sleep", "600"]
    securityContext: {runAsUser: $((n * 1000)), runAsGroup: $((n * 1000))}
EOF
done
running() { [ -n "$(k get pod "$1" -o 'jsonpath={.status.containerStatuses[0].state.running.startedAt}')" ]; }
for n in 0 1; do
    wait_for 30 running "t$n" ||
        { fail "pod t$n is not running: $(k get pod "t$n" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin).get("status"))')"; tail -20 "$D.log" >&2; finish; }
done
UID0=$(k get pod t0 -o 'jsonpath={.metadata.uid}')
CFG=$(ls "$D"/agent/pods/"$UID0"/*/config.json "$D"/agent/pods/"$UID0"/*/*/config.json 2>/dev/null | head -1)
[ -n "$CFG" ] || CFG=$(grep -rl '"ociVersion"' "$D/agent/pods/$UID0" 2>/dev/null | head -1)
[ -n "$CFG" ] || { fail "no config.json under the pod's directory"; finish; }

# ---- what the container was given (its OCI config, as runc read it) ----
python3 - "$CFG" "$D/agent" "$H" "$UID0" <<'PY' || fail "the container's config: $CFG"
import json, sys
cfg, agent, host, uid = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3], sys.argv[4]
env = cfg["process"]["env"]
bad = [e for e in env if e.startswith(("LD_PRELOAD=", "FATIA_VGPU_"))]
assert not bad, f"host interposer variables in the container's env: {bad}"
assert "CUDA_VISIBLE_DEVICES=GPU-bbbbbbbb-1111-2222-3333-444444444444" in env, env
m = {}
for x in cfg["mounts"]:
    m.setdefault(x["destination"], []).append(x)
for dst in ("/etc/ld.so.preload", "/etc/fatia/vgpu.conf", "/usr/lib/fatia/libfatia-vgpu.so"):
    assert len(m.get(dst, [])) == 1, f"{dst}: {m.get(dst)}"
    assert "ro" in m[dst][0]["options"], m[dst]
acct = m.get("/run/fatia/vgpu/slice.acct", [])
assert len(acct) == 1, f"one accounting file, the pod's: {acct}"
assert acct[0]["source"].endswith(".acct") and "/cdi/" not in acct[0]["source"], acct
assert f"/pods/{uid}/" in m["/etc/fatia/vgpu.conf"][0]["source"], m["/etc/fatia/vgpu.conf"]
# the slice's node from the node's CDI spec, at the fake host's path; no other GPU's
nodes = [x for x in cfg["mounts"] if x["destination"].startswith("/dev/nvidia")]
nodes += [{"destination": d["path"]} for d in cfg["linux"].get("devices", []) if d["path"].startswith("/dev/nvidia")]
dsts = sorted(x["destination"] for x in nodes)
assert dsts == ["/dev/nvidia1", "/dev/nvidiactl"], dsts
allow = [(d.get("major"), d.get("minor")) for d in cfg["linux"]["resources"]["devices"] if d.get("allow")]
assert (195, 1) in allow and (195, 0) not in allow, allow
PY

# cexec POD NAME CMD: CMD in a fresh process of the pod's container (kubectl exec), output in
# $TMP/NAME
cexec() {
    local pod=$1 name=$2
    shift 2
    timeout 30 "$KUBECTL" --kubeconfig "$KCFG" exec "$pod" -- sh -c "$*" >"$TMP/$name" 2>&1
}
refused() {
    local name=$1
    shift
    cexec t0 "$name" "$@"
    grep -qx "rc=2" "$TMP/$name" || fail "$name: not refused: $(tr '\n' ' ' <"$TMP/$name")"
}
granted() {
    local pod=$1 name=$2
    shift 2
    cexec "$pod" "$name" "$@"
    grep -qx "rc=0" "$TMP/$name" || fail "$name: not granted: $(tr '\n' ' ' <"$TMP/$name")"
}

cexec t0 env_seen "env"
grep -q "^LD_PRELOAD=\|^FATIA_VGPU_" "$TMP/env_seen" && fail "the container's env names the interposer: $(cat "$TMP/env_seen")"
granted t0 honest "vgpu_worker alloc $((32 * MiB))"
refused over "vgpu_worker alloc $((65 * MiB))"
refused env_i "env -i /usr/bin/vgpu_worker alloc $((65 * MiB))"
granted t0 env_i_ok "env -i /usr/bin/vgpu_worker alloc $((32 * MiB))"
refused own_env "env -u LD_PRELOAD FATIA_VGPU_MEMORY_LIMIT=80Gi FATIA_VGPU_MEMORY_LIMIT_0=80Gi FATIA_VGPU_SHARED_FILE=/tmp/x FATIA_VGPU_DEVICE_UUIDS= vgpu_worker alloc $((65 * MiB))"
# a holder in one exec, an env -i grandchild in another: one budget
cexec t0 holder "sleep 5 | vgpu_worker hold $((48 * MiB))" &
HOLDER=$!
sleep 1.5
refused second_shell "env -i sh -c '/usr/bin/vgpu_worker alloc $((20 * MiB))'"
granted t0 second_shell_ok "env -i sh -c '/usr/bin/vgpu_worker alloc $((8 * MiB))'"
# the other half of the GPU is another pod's: its budget is its own
granted t1 neighbour "env -i /usr/bin/vgpu_worker alloc $((60 * MiB))"
cexec t1 neighbour_over "env -i /usr/bin/vgpu_worker alloc $((65 * MiB))"
grep -qx "rc=2" "$TMP/neighbour_over" || fail "neighbour_over (uid 1000): not refused: $(cat "$TMP/neighbour_over")"
wait "$HOLDER"
grep -qx "held rc=0" "$TMP/holder" || fail "holder: $(cat "$TMP/holder")"
cexec t0 write_conf "echo FATIA_VGPU_MEMORY_LIMIT_0=80Gi >/etc/fatia/vgpu.conf; echo rc=\$?"
grep -q "Read-only file system" "$TMP/write_conf" || fail "write_conf: $(cat "$TMP/write_conf")"
cexec t0 write_preload ": >/etc/ld.so.preload; echo rc=\$?; rm -f /etc/ld.so.preload; echo rm=\$?"
grep -q "Read-only file system\|Device or resource busy" "$TMP/write_preload" ||
    fail "write_preload: $(cat "$TMP/write_preload")"
refused after_writes "env -i /usr/bin/vgpu_worker alloc $((65 * MiB))"
# ld.so skips a preload it cannot open with only a message: none may say so
grep -l "cannot be preloaded" "$TMP"/honest "$TMP"/env_i* "$TMP"/neighbour* "$TMP"/second_shell* >/dev/null 2>&1 &&
    fail "the interposer was not preloaded: $(grep -h "cannot be preloaded" "$TMP"/* | head -2)"
for f in honest over env_i own_env second_shell neighbour neighbour_over write_conf write_preload; do
    sed "s/^/  $f: /" "$TMP/$f"
done
finish
