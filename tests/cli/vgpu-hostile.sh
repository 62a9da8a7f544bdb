#!/usr/bin/env bash
# tests/cli/vgpu-hostile.sh: a shared slice's memory cap against a tenant that does not cooperate,
# in a real container (runc, Debian's), against the fake libcuda/NVML (issue 16, "Limits that
# hold against the tenant"). The container is laid out as the node agent lays out a capped
# slice's container (docs/agent.md, "Capped slices in a container"): /etc/ld.so.preload naming
# libfatia-vgpu.so and /etc/fatia/vgpu.conf (the caps, the accounting file's path) are read-only
# bind mounts, the accounting directory is the pod's own, the driver's libraries are in the
# container's ld.so.cache as nvidia-ctk's update-ldcache hook leaves them. The tenant is uid 1000
# with no capabilities. Each attack has its expected result asserted:
#   env -i; LD_PRELOAD dropped and FATIA_VGPU_* set by the tenant; children sharing the budget; a
#   second shell started later (runc exec, nothing inherited); rewriting the caps in the
#   accounting file's header; writing the configuration file or ld.so.preload; opening another
#   GPU's device node (the device cgroup allows only the slice's).
# What the interposer cannot see (a static binary, a private copy of the driver) is the watchdog's:
# tests/cli/agent-gpuwatch.sh.
. "$(dirname "$0")/lib.bash"
command -v runc >/dev/null || skip "runc not found (scripts/setup installs it)"
[ "$(id -u)" = 0 ] || skip "runc needs root here"
BUILD=$(cd "$BUILD" && pwd)
LIB=$BUILD/lib/libfatia-vgpu.so
FAKE=$BUILD/tests/vgpu/fake
WORKER=$BUILD/tests/vgpu_worker
SRC=$(cd "$(dirname "$0")/../.." && pwd)
for f in "$LIB" "$FAKE/libcuda.so.1" "$WORKER"; do
    [ -e "$f" ] || { fail "missing $f (build first)"; finish; }
done
ID=fatia-hostile-$$
STATE=$TMP/runc
trap 'runc --root "$STATE" kill "$ID" KILL >/dev/null 2>&1; sleep 0.2; runc --root "$STATE" delete -f "$ID" >/dev/null 2>&1; rm -rf "$TMP"' EXIT

MiB=$((1 << 20))
CAP=$((64 * MiB))
B=$TMP/bundle
R=$B/rootfs
mkdir -p "$R"/{usr,etc/fatia,proc,dev,tmp,run} "$TMP/acct" "$TMP/other"
for l in bin lib lib64 sbin; do ln -s "usr/$l" "$R/$l"; done
cp /etc/passwd /etc/group "$R/etc/"
chown 1000:1000 "$TMP/acct"
chmod 755 "$TMP"
# the driver's libraries in the container's cache, as the CDI update-ldcache hook does
printf '%s\n' /usr/local/lib /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu "$FAKE" >"$TMP/ld.so.conf"
ldconfig -X -C "$R/etc/ld.so.cache" -f "$TMP/ld.so.conf" 2>/dev/null ||
    fail "ldconfig could not write the container's cache"
# what the agent writes (fatia_agent_vgpu_slice_conf, fatia_agent_vgpu_write_ro): root's, 0444
echo "$LIB" >"$TMP/ld.so.preload"
cat >"$TMP/vgpu.conf" <<EOF
# written by the fatia node agent: libfatia-vgpu.so's configuration (docs/vgpu.md)
FATIA_VGPU_SHARED_FILE=/run/fatia/slice.acct
FATIA_VGPU_DEVICE_UUIDS=GPU-fake-0
FATIA_VGPU_MEMORY_LIMIT_0=$CAP
EOF
chmod 0444 "$TMP/ld.so.preload" "$TMP/vgpu.conf"
# another pod's accounting file: not mounted into this one
echo secret >"$TMP/other/x.acct"

python3 - "$B" "$BUILD" "$SRC" "$TMP" <<'PY' || fail "cannot write config.json"
import json, os, sys
b, build, src, tmp = sys.argv[1:]
ro = ["rbind", "ro", "nosuid", "nodev"]
def bind(dst, srcp, opts=ro):
    return {"destination": dst, "type": "none", "source": srcp, "options": opts}
null = os.stat("/dev/null"); kmsg = os.stat("/dev/kmsg")
cfg = {
  "ociVersion": "1.0.2",
  "process": {"terminal": False, "user": {"uid": 1000, "gid": 1000}, "cwd": "/tmp",
              "args": ["sleep", "300"],
              "env": ["PATH=/usr/bin:/bin", "HOME=/tmp"],
              "noNewPrivileges": True,
              "capabilities": {"bounding": [], "effective": [], "permitted": [], "inheritable": [], "ambient": []}},
  "root": {"path": "rootfs", "readonly": True},
  "hostname": "tenant",
  "mounts": [
    {"destination": "/proc", "type": "proc", "source": "proc"},
    {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
    {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=1777"]},
    bind("/usr", "/usr"),
    bind(build, build),
    bind(src + "/tests/vgpu/data", src + "/tests/vgpu/data"),
    bind("/etc/ld.so.preload", tmp + "/ld.so.preload", ["bind", "ro", "nosuid", "nodev"]),
    bind("/etc/fatia/vgpu.conf", tmp + "/vgpu.conf", ["bind", "ro", "nosuid", "nodev"]),
    bind("/run/fatia", tmp + "/acct", ["bind", "rw", "nosuid", "nodev"]),
  ],
  "linux": {
    "namespaces": [{"type": "pid"}, {"type": "mount"}, {"type": "ipc"}, {"type": "uts"}],
    # the slice's GPU and another one (stand-ins: char nodes with other majors/minors)
    "devices": [
      {"path": "/dev/nvidia0", "type": "c", "major": os.major(null.st_rdev), "minor": os.minor(null.st_rdev), "fileMode": 438, "uid": 0, "gid": 0},
      {"path": "/dev/nvidia1", "type": "c", "major": os.major(kmsg.st_rdev), "minor": os.minor(kmsg.st_rdev), "fileMode": 438, "uid": 0, "gid": 0}],
    "resources": {"devices": [
      {"allow": False, "access": "rwm"},
      {"allow": True, "type": "c", "major": os.major(null.st_rdev), "minor": os.minor(null.st_rdev), "access": "rw"}]},
    "maskedPaths": ["/proc/kcore", "/proc/keys", "/sys/firmware"],
    "readonlyPaths": ["/proc/sys", "/proc/sysrq-trigger"]}}
json.dump(cfg, open(os.path.join(b, "config.json"), "w"), indent=1)
PY

runc --root "$STATE" run -d -b "$B" "$ID" </dev/null >"$TMP/run.out" 2>&1 ||
    { fail "runc run: $(cat "$TMP/run.out")"; finish; }

# cexec NAME CMD: runs the shell command in a fresh process of the container (runc exec: a second
# shell that inherits nothing from the first), as the tenant; output in $TMP/NAME
cexec() {
    local name=$1
    shift
    timeout 30 runc --root "$STATE" exec --user 1000:1000 --cwd /tmp --env PATH=/usr/bin:/bin \
        "$ID" sh -c "$*" >"$TMP/$name" 2>&1
}
# refused NAME CMD: the command ran and its allocation got CUDA_ERROR_OUT_OF_MEMORY (rc=2)
refused() {
    local name=$1
    shift
    cexec "$name" "$@"
    grep -qx "rc=2" "$TMP/$name" || fail "$name: not refused: $(tr '\n' ' ' <"$TMP/$name")"
}
granted() {
    local name=$1
    shift
    cexec "$name" "$@"
    grep -qx "rc=0" "$TMP/$name" || fail "$name: not granted: $(tr '\n' ' ' <"$TMP/$name")"
}

# the honest tenant: within the cap granted, over it refused
granted honest "$WORKER alloc $((32 * MiB))"
refused over "$WORKER alloc $((65 * MiB))"
# 1. env -i: no LD_PRELOAD, no FATIA_VGPU_*, no LD_LIBRARY_PATH (the driver from the cache)
refused env_i "env -i $WORKER alloc $((65 * MiB))"
granted env_i_ok "env -i $WORKER alloc $((32 * MiB))"
# 2. LD_PRELOAD dropped, its own caps and accounting file in the environment
refused own_env "env -u LD_PRELOAD FATIA_VGPU_MEMORY_LIMIT=80Gi FATIA_VGPU_MEMORY_LIMIT_0=80Gi FATIA_VGPU_SHARED_FILE= FATIA_VGPU_DEVICE_UUIDS= $WORKER alloc $((65 * MiB))"
# 3. children share the one budget: a child holds 40 MiB, a grandchild of env -i asks 40 more
cexec children "sleep 2 | $WORKER hold $((40 * MiB)) & sleep 0.5; env -i sh -c '$WORKER alloc $((40 * MiB))'; wait"
grep -qx "held rc=0" "$TMP/children" || fail "children: the first child was not granted: $(cat "$TMP/children")"
grep -qx "rc=2" "$TMP/children" || fail "children: the second one was not refused: $(cat "$TMP/children")"
# 4. a second shell while the first holds memory: a long-lived holder in one exec, an env -i
#    shell in another
cexec holder "sleep 4 | $WORKER hold $((48 * MiB))" &
HOLDER=$!
sleep 1
refused second_shell "env -i $WORKER alloc $((20 * MiB))"
granted second_shell_ok "env -i $WORKER alloc $((8 * MiB))"
# 5. the accounting file: the tenant may write it (the slots of its own processes), so it raises
#    the caps in its header to "no limit"; the caps of the read-only file still hold
cexec forge "python3 -c '
import mmap, struct
f = open(\"/run/fatia/slice.acct\", \"r+b\"); m = mmap.mmap(f.fileno(), 0)
hdr = 8 + 4 * 6
for i in range(16):
    m[hdr + 8 * i:hdr + 8 * i + 8] = struct.pack(\"<Q\", 2**64 - 1)
print(\"forged\")'"
grep -qx forged "$TMP/forge" || fail "forge: could not write the header: $(cat "$TMP/forge")"
refused after_forge "env -i $WORKER alloc $((65 * MiB))"
# 6. the configuration and the preload list are read-only; another pod's accounting is not there
cexec write_conf "echo FATIA_VGPU_MEMORY_LIMIT_0=80Gi >/etc/fatia/vgpu.conf; echo rc=\$?"
grep -q "Read-only file system" "$TMP/write_conf" || fail "write_conf: $(cat "$TMP/write_conf")"
cexec write_preload ": >/etc/ld.so.preload; echo rc=\$?; umount /etc/ld.so.preload; echo urc=\$?"
grep -q "Read-only file system" "$TMP/write_preload" || fail "write_preload: $(cat "$TMP/write_preload")"
grep -qx "urc=0" "$TMP/write_preload" && fail "write_preload: the tenant unmounted it"
cexec other_acct "ls $TMP/other/x.acct 2>&1; ls /run/fatia"
grep -q "x.acct$" "$TMP/other_acct" && ! grep -q "No such file" "$TMP/other_acct" &&
    fail "other_acct: another pod's accounting file is visible: $(cat "$TMP/other_acct")"
# 7. another GPU's device node is there (a stand-in) but the device cgroup refuses it; its own opens
# Each probe in a subshell of its own, its verdict printed either way: a failed redirection of
# `exec` ends a POSIX shell (dash), so in one shell the probes after a refused open never ran
# (the mknod check could not fail) and the output held only the refusal's message. On a failure
# the container's device cgroup is shown (runc's cgroup /<id> in the v1 devices hierarchy).
cexec devices "(exec 3</dev/nvidia0) && echo own=ok || echo own=refused; (exec 4</dev/nvidia1) && echo other=opened || echo other=refused; mknod /tmp/n c 195 1 && echo mknod=ok || echo mknod=refused"
dcg() {
    local pid
    pid=$(runc --root "$STATE" state "$ID" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])' 2>/dev/null)
    echo "container pid $pid, $(grep devices "/proc/$pid/cgroup" 2>/dev/null): $(tr '\n' ' ' </sys/fs/cgroup/devices/"$ID"/devices.list 2>/dev/null)"
}
for want in own=ok other=refused mknod=refused; do
    grep -qx "$want" "$TMP/devices" || fail "devices: want $want: $(tr '\n' ' ' <"$TMP/devices"); $(dcg)"
done

wait "$HOLDER"
grep -qx "held rc=0" "$TMP/holder" || fail "holder: $(cat "$TMP/holder")"
for f in honest over env_i own_env children second_shell after_forge write_conf devices; do
    sed "s/^/  $f: /" "$TMP/$f"
done
finish
