#!/usr/bin/env bash
# tests/cli/agent-cdi.sh: the node agent's CDI spec (src/agent/cdi.c, issue 16): for node-0's
# slices it writes DATA/agent/cdi/node-0/fatia.dev-gpu.json, which passes the CDI spec's rules
# (tests/cli/cdi_check.py; a checker that the test first shows failing on broken specs), names
# each device by its slice id with exactly its /dev/nvidia<minor> node and UUID, gives a capped
# slice the interposer's read-only mounts and its own files, and gives every container the host's
# control nodes, driver libraries (full versions, and the soname links that name one: mounted at
# the link's path, no ldconfig hook) and nvidia-smi, found in a
# fake host root (--agent cdi-root; device nodes made with mknod). A slice added to the inventory
# appears within seconds. (A device name that is not a CDI name cannot reach the agent: the API
# refuses it in the ResourceSlice; the generator leaves such names out all the same.)
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
[ "$(id -u)" = 0 ] || skip "mknod of the fake host's device nodes needs root"
agent_setup
trap 'agent_cleanup; if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID" 2>/dev/null; fi; rm -rf "$TMP"' EXIT
CHECK=$(dirname "$0")/cdi_check.py

# the checker fails broken specs (so that its "ok" below means something)
echo '{"cdiVersion":"0.6.0","kind":"fatia.dev/gpu","devices":[{"name":"a/b","containerEdits":{"mounts":[{"hostPath":"rel","containerPath":"/x"}],"bogus":1}}]}' >"$TMP/bad.json"
python3 "$CHECK" "$TMP/bad.json" >"$TMP/bad.out" && fail "cdi_check accepted a broken spec"
for want in "name" "unknown field 'bogus'" "not an absolute path"; do
    grep -q "$want" "$TMP/bad.out" || fail "cdi_check missed: $want ($(cat "$TMP/bad.out"))"
done

R=$TMP/host
mkdir -p "$R/dev" "$R/usr/lib/x86_64-linux-gnu" "$R/usr/bin"
mknod "$R/dev/nvidiactl" c 195 255
mknod "$R/dev/nvidia-uvm" c 238 0
for m in 0 1 3; do mknod "$R/dev/nvidia$m" c 195 $m; done # the GPUs' nodes (a slice of another has no spec)
for l in libcuda.so.580.159.04 libnvidia-ml.so.580.159.04 libnvidia-ptxjitcompiler.so.580.159.04; do
    : >"$R/usr/lib/x86_64-linux-gnu/$l"
done
ln -s libcuda.so.580.159.04 "$R/usr/lib/x86_64-linux-gnu/libcuda.so.1"
ln -s libnvidia-gone.so.9.9 "$R/usr/lib/x86_64-linux-gnu/libnvidia-gone.so.1" # dangling: left out
: >"$R/usr/lib/x86_64-linux-gnu/libfoo.so.1.2"
printf '#!/bin/sh\n' >"$R/usr/bin/nvidia-smi"
chmod +x "$R/usr/bin/nvidia-smi"

D=$TMP/d
start_fatiad "$D" --no-controllers --agent "cdi-root=$R" || finish
GA=GPU-aaaaaaaa-1111-2222-3333-444444444444
GB=GPU-bbbbbbbb-1111-2222-3333-444444444444
add_inventory "[{\"slice\":\"gpu-0\",\"kind\":\"whole\",\"uuid\":\"$GA\"},
 {\"slice\":\"gpu-1-ts0\",\"kind\":\"timeslice\",\"uuid\":\"$GB\",\"memoryBytes\":4294967296},
 {\"slice\":\"gpu-1-ts1\",\"kind\":\"timeslice\",\"uuid\":\"$GB\",\"memoryBytes\":4294967296}]"
bound_pod p "[{\"slice\":\"gpu-0\",\"kind\":\"whole\",\"uuid\":\"$GA\"}]" "  restartPolicy: Never" <<YAML
  - name: main
    command: ["sleep", "30"]
YAML
SPEC=$D/agent/cdi/node-0/fatia.dev-gpu.json
wait_for 10 test -s "$SPEC"
python3 "$CHECK" "$SPEC" || fail "the spec breaks CDI's rules: $(cat "$SPEC")"
python3 - "$SPEC" "$GA" "$GB" "$D/agent/cdi/node-0/slices" "$R" <<'PY' || fail "spec content: $(cat "$SPEC")"
import json, os, stat, sys
spec, ga, gb, files, root = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
assert spec["kind"] == "fatia.dev/gpu", spec["kind"]
dev = {d["name"]: d["containerEdits"] for d in spec["devices"]}
assert set(dev) == {"gpu-0", "gpu-1-ts0", "gpu-1-ts1"}, sorted(dev)
# the host is the fake root (--agent cdi-root): its nodes and files are there
assert dev["gpu-0"]["deviceNodes"] == [{"path": "/dev/nvidia0", "hostPath": root + "/dev/nvidia0", "type": "c", "major": 195, "minor": 0, "permissions": "rw"}], dev["gpu-0"]
assert f"CUDA_VISIBLE_DEVICES={ga}" in dev["gpu-0"]["env"], dev["gpu-0"]["env"]
assert "mounts" not in dev["gpu-0"], "a whole GPU gets no interposer"
ts = dev["gpu-1-ts0"]
assert ts["deviceNodes"][0]["path"] == "/dev/nvidia1" and ts["deviceNodes"][0]["minor"] == 1
m = {x["containerPath"]: x for x in ts["mounts"]}
assert set(m) == {"/etc/fatia/vgpu.conf", "/etc/ld.so.preload", "/usr/lib/fatia/libfatia-vgpu.so", "/run/fatia/vgpu/slice.acct"}, m
assert m["/etc/fatia/vgpu.conf"]["hostPath"] == files + "/gpu-1-ts0/vgpu.conf"
assert "ro" in m["/etc/fatia/vgpu.conf"]["options"] and "rw" in m["/run/fatia/vgpu/slice.acct"]["options"]
conf = open(files + "/gpu-1-ts0/vgpu.conf").read()
assert "FATIA_VGPU_MEMORY_LIMIT_0=4294967296\n" in conf and f"FATIA_VGPU_DEVICE_UUIDS={gb}\n" in conf, conf
assert stat.S_IMODE(os.stat(files + "/gpu-1-ts0/vgpu.conf").st_mode) == 0o444
assert os.path.getsize(files + "/gpu-1-ts0/slice.acct") > 0, "no accounting file"
c = spec["containerEdits"]
assert {(n["path"], n["major"], n["minor"]) for n in c["deviceNodes"]} == {("/dev/nvidiactl", 195, 255), ("/dev/nvidia-uvm", 238, 0)}, c["deviceNodes"]
assert all(n["hostPath"] == root + n["path"] for n in c["deviceNodes"]), c["deviceNodes"]
assert all(x["hostPath"] == root + x["containerPath"] for x in c["mounts"]), c["mounts"]
paths = {x["containerPath"] for x in c["mounts"]}
want = {"/usr/lib/x86_64-linux-gnu/" + l for l in ("libcuda.so.580.159.04", "libnvidia-ml.so.580.159.04", "libnvidia-ptxjitcompiler.so.580.159.04", "libcuda.so.1")} | {"/usr/bin/nvidia-smi"}
assert paths == want, paths
assert not c.get("hooks"), c["hooks"]
PY
# a slice added to the inventory appears
add_inventory "[{\"slice\":\"gpu-3\",\"kind\":\"whole\",\"uuid\":\"GPU-dddddddd-1111-2222-3333-444444444444\"}]"
wait_for 10 grep -q '"gpu-3"' "$SPEC"
python3 "$CHECK" "$SPEC" || fail "the updated spec breaks CDI's rules"
stop_fatiad
finish
