#!/usr/bin/env bash
# tests/cli/containers.sh: pods in OCI containers (--agent runtime=oci: runc, Debian's), from an
# image this test builds itself (scripts/images/busybox: busybox-static laid out with umoci) and
# loads with `fatia image load`. Checks, from the host's side where the guarantee is the host's:
# the image's Cmd and the pod's command, the user namespace (runAsUser 0 is the namespace's host
# range root, never host root; runAsUser/runAsGroup inside), runAsNonRoot, readOnlyRootFilesystem,
# the default capability set and capabilities.drop, no_new_privs, emptyDir (shared, and medium:
# Memory as a tmpfs with its sizeLimit), hostPath refused, downwardAPI and env fieldRef, init
# containers in order, the sandbox (hostname, one network namespace with only lo, shared by the
# pod's containers; another pod's ports unreachable), imageID, ErrImageNeverPull, deletion with
# nothing left behind (runc state, mounts), the fatia-process RuntimeClass, and kill -9 of fatiad
# while containers run (found again, none started twice).
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || skip "containers need root"
need_tools runc umoci skopeo busybox
agent_setup
cleanup() {
    [ "$FAILS" -gt 0 ] && { mkdir -p /tmp/containers-debug; cp -r "$D.log" "$D/agent/pods" /tmp/containers-debug/ 2>/dev/null; }
    agent_cleanup
    [ -n "$FATIAD_PID" ] && kill -9 "$FATIAD_PID" 2>/dev/null
    for c in $(runc --root "$D/agent/runc" list -q 2>/dev/null); do
        runc --root "$D/agent/runc" delete --force "$c" 2>/dev/null
    done
    grep -o " $TMP[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
    rm -rf "$TMP"
}
trap cleanup EXIT

D=$TMP/d
"$SRC/scripts/images/busybox" "$TMP/busybox.tar" || { fail "cannot build the image"; finish; }
expect_rc 0 "$FATIA" image load -d "$D" --name fatia.dev/busybox:1 "$TMP/busybox.tar"
expect_line "$TMP/out" "Loaded image: fatia.dev/busybox:1"
expect_rc 0 "$FATIA" image ls -d "$D"
expect_line "$TMP/out" "fatia.dev/busybox:1"

start_fatiad "$D" --no-controllers --agent runtime=oci --agent pod-pids-max=32 --agent host-network-namespaces=infra --agent restart-backoff=100ms \
    --agent restart-backoff-max=300ms || exit 1
grep -q "pods run in OCI containers" "$D.log" || fail "fatiad does not say pods run in containers"
IMG=fatia.dev/busybox:1

# the status file's pid of a running container (a host pid)
ctr_pid() {
    local uid
    uid=$(jp "$1" .metadata.uid)
    python3 - "$D/agent/status/$uid.json" "${2:-main}" 2>/dev/null <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
for c in s["containers"] + s["initContainers"]:
    if c["name"] == sys.argv[2] and "pid" in c:
        print(c["pid"])
PY
}
running() { [ "$(jp "$1" '.status.containerStatuses[0].state.running.startedAt')" != "" ]; }
host_field() { awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status"; }

# ---- the image's Cmd, the user namespace, capabilities, no_new_privs ----
bound_pod imgcmd "" "  restartPolicy: Never" <<EOF
  - name: main
    image: $IMG
EOF
bound_pod root "" "  restartPolicy: Never" <<EOF
  - name: main
    image: $IMG
    command: ["sh", "-c", "id -u > /tmp/id; hostname > /tmp/h; exec sleep 600"]
    securityContext: {runAsUser: 0}
EOF
bound_pod user "" "  restartPolicy: Never" <<EOF
  - name: main
    image: $IMG
    command: ["sleep", "600"]
    securityContext:
      runAsUser: 1000
      runAsGroup: 2000
      capabilities: {drop: ["ALL"]}
EOF
bound_pod nonroot "" "  restartPolicy: Never" <<EOF
  - name: main
    image: $IMG
    command: ["true"]
    securityContext: {runAsNonRoot: true}
EOF
wait_for 20 phase_is imgcmd Succeeded || fail "imgcmd: $(jp imgcmd '.status.containerStatuses[0].state')"
wait_for 20 running root
wait_for 20 running user
wait_for 20 phase_is nonroot Pending
[ "$(jp imgcmd '.status.containerStatuses[0].imageID')" = "$(python3 -c 'import json,sys; print([m["digest"] for m in json.load(open(sys.argv[1]))["manifests"] if m["annotations"]["org.opencontainers.image.ref.name"] == "fatia.dev/busybox:1"][0])' "$D/agent/images/oci/index.json")" ] ||
    fail "imageID is not the manifest digest: $(jp imgcmd '.status.containerStatuses[0].imageID')"
BASE=$(awk '$1 == "default" {print $2 * 65536}' "$D/agent/uidranges")
[ -n "$BASE" ] && [ "$BASE" -ge 65536 ] || fail "no host id range for namespace default"
P=$(ctr_pid root)
[ -n "$P" ] || fail "no pid for pod root"
if [ -n "$P" ]; then
    # a pod's root is the range's root on the host, never uid 0
    [ "$(host_field "$P" Uid | head -1)" = "$BASE" ] || fail "runAsUser 0 runs as host uid $(host_field "$P" Uid), want $BASE"
    [ "$(awk '{print $1, $2, $3}' "/proc/$P/uid_map")" = "0 $BASE 65536" ] || fail "uid_map: $(cat "/proc/$P/uid_map")"
    [ "$(host_field "$P" CapEff)" = 00000000a80425fb ] || fail "default capabilities: CapEff $(host_field "$P" CapEff), want 00000000a80425fb"
    [ "$(host_field "$P" NoNewPrivs)" = 1 ] || fail "no_new_privs not set"
    [ "$(readlink "/proc/$P/ns/net")" != "$(readlink /proc/self/ns/net)" ] || fail "pod root shares the host's network namespace"
    [ "$(readlink "/proc/$P/ns/user")" != "$(readlink /proc/self/ns/user)" ] || fail "pod root has no user namespace"
    [ "$(cat "/proc/$P/root/tmp/id")" = 0 ] || fail "id -u inside: $(cat "/proc/$P/root/tmp/id")"
    [ "$(cat "/proc/$P/root/tmp/h")" = root ] || fail "hostname inside: $(cat "/proc/$P/root/tmp/h")"
    # the host's filesystem is not the container's
    [ ! -e "/proc/$P/root$TMP" ] || fail "the container sees the host's $TMP"
fi
P=$(ctr_pid user)
if [ -n "$P" ]; then
    [ "$(host_field "$P" Uid | head -1)" = "$((BASE + 1000))" ] || fail "runAsUser 1000: host uid $(host_field "$P" Uid)"
    [ "$(host_field "$P" Gid | head -1)" = "$((BASE + 2000))" ] || fail "runAsGroup 2000: host gid $(host_field "$P" Gid)"
    [ "$(host_field "$P" CapEff)" = 0000000000000000 ] || fail "drop ALL: CapEff $(host_field "$P" CapEff)"
    [ "$(host_field "$P" CapBnd)" = 0000000000000000 ] || fail "drop ALL: CapBnd $(host_field "$P" CapBnd)"
else
    fail "no pid for pod user"
fi
[ "$(jp nonroot '.status.containerStatuses[0].state.waiting.reason')" = CreateContainerConfigError ] ||
    fail "runAsNonRoot as root: $(jp nonroot '.status.containerStatuses[0].state')"
jp nonroot '.status.containerStatuses[0].state.waiting.message' | grep -q "runAsNonRoot and image will run as root" ||
    fail "runAsNonRoot message: $(jp nonroot '.status.containerStatuses[0].state.waiting.message')"

# ---- the python3 image (scripts/images/python3: Debian's python3, for the walkthrough's jobs) ----
if "$SRC/scripts/images/python3" "$TMP/python3.tar" >"$TMP/py-build.log" 2>&1; then
    expect_rc 0 "$FATIA" image load -d "$D" --name fatia.dev/python3:1 "$TMP/python3.tar"
    bound_pod py "" "  restartPolicy: Never" <<EOF
  - name: main
    image: fatia.dev/python3:1
    command: ["python3", "-c", "import json, hashlib, sys; print(json.dumps({'v': sys.version_info[0], 'h': hashlib.sha256(b'x').hexdigest()[:8]}))"]
EOF
    wait_for 30 phase_is py Succeeded
    [ "$(k logs py 2>/dev/null)" = '{"v": 3, "h": "2d711642"}' ] || fail "python3 in a container: $(k logs py 2>&1)"
else
    fail "scripts/images/python3 failed: $(tail -3 "$TMP/py-build.log")"
fi

# ---- volumes, env, init containers, readOnlyRootFilesystem ----
bound_pod vols "" "  restartPolicy: Never
  volumes:
  - {name: scratch, emptyDir: {}}
  - {name: mem, emptyDir: {medium: Memory, sizeLimit: 8Mi}}
  - name: info
    downwardAPI:
      items: [{path: name, fieldRef: {fieldPath: metadata.name}}]
  initContainers:
  - name: first
    image: $IMG
    command: [\"sh\", \"-c\", \"echo first > /scratch/order\"]
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  - name: second
    image: $IMG
    command: [\"sh\", \"-c\", \"echo second >> /scratch/order\"]
    volumeMounts: [{name: scratch, mountPath: /scratch}]" <<EOF
  - name: main
    image: $IMG
    env:
    - name: MY_NS
      valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
    command: ["sh", "-c", "cat /scratch/order; cat /info/name; echo; echo ns=\$MY_NS; grep ' /mem ' /proc/mounts; if touch /rootfile 2>/dev/null; then echo rootfs-writable; else echo rootfs-readonly; fi; echo x > /mem/f && echo mem-writable; echo y > /scratch/y && echo scratch-writable"]
    securityContext: {readOnlyRootFilesystem: true}
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
    - {name: mem, mountPath: /mem}
    - {name: info, mountPath: /info}
EOF
wait_for 20 phase_is vols Succeeded
k logs vols -c main >"$TMP/vols.log" 2>/dev/null
expect_line "$TMP/vols.log" "first"
[ "$(sed -n 2p "$TMP/vols.log")" = second ] || fail "init containers out of order: $(cat "$TMP/vols.log")"
expect_line "$TMP/vols.log" "vols"
expect_line "$TMP/vols.log" "ns=default"
expect_line "$TMP/vols.log" "tmpfs /mem tmpfs"
expect_line "$TMP/vols.log" "size=8192k"
expect_line "$TMP/vols.log" "rootfs-readonly"
expect_line "$TMP/vols.log" "mem-writable"
expect_line "$TMP/vols.log" "scratch-writable"

bound_pod hostpath "" "  restartPolicy: Never
  volumes: [{name: h, hostPath: {path: /etc}}]" <<EOF
  - name: main
    image: $IMG
    command: ["cat", "/h/shadow"]
    volumeMounts: [{name: h, mountPath: /h}]
EOF
wait_for 20 phase_is hostpath Pending
[ "$(jp hostpath '.status.containerStatuses[0].state.waiting.reason')" = CreateContainerConfigError ] ||
    fail "hostPath: $(jp hostpath '.status.containerStatuses[0].state')"
jp hostpath '.status.containerStatuses[0].state.waiting.message' | grep -q "spec.volumes\[0\].hostPath" ||
    fail "hostPath message: $(jp hostpath '.status.containerStatuses[0].state.waiting.message')"

bound_pod noimage "" "  restartPolicy: Never" <<EOF
  - name: main
    image: fatia.dev/absent:1
    imagePullPolicy: Never
    command: ["true"]
EOF
wait_for 20 phase_is noimage Pending
[ "$(jp noimage '.status.containerStatuses[0].state.waiting.reason')" = ErrImageNeverPull ] ||
    fail "absent image: $(jp noimage '.status.containerStatuses[0].state')"

# ---- the sandbox: one network namespace for the pod, closed to other pods ----
bound_pod net "" "" <<EOF
  - name: server
    image: $IMG
    command: ["sh", "-c", "while true; do echo pong | nc -l -p 8080; done"]
  - name: client
    image: $IMG
    command: ["sh", "-c", "sleep 0.5; nc -w 2 127.0.0.1 8080 > /tmp/got; cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' ' > /tmp/ifs; exec sleep 600"]
EOF
wait_for 20 running net
bound_pod other "" "  restartPolicy: Never" <<EOF
  - name: main
    image: $IMG
    command: ["sh", "-c", "if echo hi | nc -w 1 127.0.0.1 8080; then echo reached; else echo unreachable; fi"]
EOF
wait_for 20 phase_is other Succeeded
k logs other >"$TMP/other.log" 2>/dev/null
expect_line "$TMP/other.log" "unreachable"
CP=
for _ in $(seq 50); do
    CP=$(ctr_pid net client)
    [ -n "$CP" ] && [ -s "/proc/$CP/root/tmp/ifs" ] && break
    sleep 0.1
done
if [ -n "$CP" ]; then
    [ "$(cat "/proc/$CP/root/tmp/got")" = pong ] || fail "the pod's containers do not share localhost: '$(cat "/proc/$CP/root/tmp/got")'"
    [ "$(sort "/proc/$CP/root/tmp/ifs" | tr '\n' ' ')" = "eth0 lo " ] || fail "the pod's interfaces: $(cat "/proc/$CP/root/tmp/ifs")"
    SP=$(ctr_pid net server)
    [ "$(readlink "/proc/$SP/ns/net")" = "$(readlink "/proc/$CP/ns/net")" ] || fail "two containers, two network namespaces"
    [ "$(readlink "/proc/$SP/ns/pid")" != "$(readlink "/proc/$CP/ns/pid")" ] || fail "two containers share a pid namespace"
else
    fail "no pid for net/client"
fi

# ---- the pod network (CNI bridge per namespace): same namespace reaches, another does not ----
NIP=$(cat "$D/agent/pods/$(jp net .metadata.uid)/pod-ip" 2>/dev/null)
case "$NIP" in 10.*) ;; *) fail "pod net has no CNI address: '$NIP'" ;; esac
[ "$(jp net .status.podIP)" = "$NIP" ] || fail "status.podIP $(jp net .status.podIP), the CNI address $NIP"
echo '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-b"}}' | k create -f - >/dev/null ||
    fail "create namespace team-b"
for ns in default team-b; do
    cat >"$TMP/peer-$ns.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: peer, namespace: $ns}
spec:
  nodeName: node-0
  restartPolicy: Never
  containers:
  - name: main
    image: $IMG
    command: ["sh", "-c", "if nc -w 2 $NIP 8080 </dev/null | grep -q pong; then echo reached; else echo unreachable; fi"]
EOF
    k create -f "$TMP/peer-$ns.yaml" >/dev/null || fail "create peer in $ns"
done
peer_b_done() { [ "$(k -n team-b get pod peer -o 'jsonpath={.status.phase}')" = Succeeded ]; }
wait_for 30 peer_b_done
wait_for 30 phase_is peer Succeeded
[ "$(k logs peer 2>/dev/null)" = reached ] || fail "a pod of the same namespace cannot reach pod net at $NIP: $(k logs peer 2>&1)"
k -n team-b logs peer >"$TMP/peer-b.log" 2>&1 || k -n team-b logs peer >"$TMP/peer-b.log" 2>&1
grep -qx unreachable "$TMP/peer-b.log" || fail "ATTACK SUCCEEDED: a pod of namespace team-b reached pod net (default) at $NIP:8080: $(cat "$TMP/peer-b.log")"

# ---- hostNetwork: refused outside the admin's namespaces (--agent host-network-namespaces) ----
bound_pod hostnet "" "  restartPolicy: Never
  hostNetwork: true" <<EOF
  - name: main
    image: $IMG
    command: ["true"]
EOF
echo '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"infra"}}' | k create -f - >/dev/null ||
    fail "create namespace infra"
sed 's/^  name: hostnet$/  name: hostnet\n  namespace: infra/; s/true"\]$/sleep", "600"]/; s/  restartPolicy: Never//' "$TMP/hostnet.yaml" >"$TMP/hostnet-infra.yaml"
k create -f "$TMP/hostnet-infra.yaml" >/dev/null || fail "create infra/hostnet"
wait_for 20 phase_is hostnet Pending
[ "$(jp hostnet '.status.containerStatuses[0].state.waiting.reason')" = CreateContainerConfigError ] ||
    fail "hostNetwork in default: $(jp hostnet '.status.containerStatuses[0].state')"
jp hostnet '.status.containerStatuses[0].state.waiting.message' | grep -q "spec.hostNetwork" ||
    fail "hostNetwork message: $(jp hostnet '.status.containerStatuses[0].state.waiting.message')"
hn_running() { [ -n "$(k -n infra get pod hostnet -o 'jsonpath={.status.containerStatuses[0].state.running.startedAt}')" ]; }
wait_for 20 hn_running
HUID=$(k -n infra get pod hostnet -o 'jsonpath={.metadata.uid}')
HP=$(python3 -c 'import json,sys; print([c["pid"] for c in json.load(open(sys.argv[1]))["containers"] if "pid" in c][0])' "$D/agent/status/$HUID.json" 2>/dev/null)
[ -n "$HP" ] && [ "$(readlink "/proc/$HP/ns/net")" = "$(readlink /proc/self/ns/net)" ] ||
    fail "an allowed hostNetwork pod is not in the host's network namespace"
[ -n "$HP" ] && [ "$(readlink "/proc/$HP/ns/user")" != "$(readlink /proc/self/ns/user)" ] ||
    fail "a hostNetwork pod has no user namespace of its own"
k -n infra delete pod hostnet --grace-period=0 --wait=false >/dev/null

# ---- devices through CDI: exactly the container's slices' nodes, mounts and env ----
mkdir -p "$D/agent/cdi"
echo "cdi for gpu-0" >"$TMP/cdi-lib"
cat >"$D/agent/cdi/fatia-test.json" <<EOF
{"cdiVersion": "0.6.0", "kind": "fatia.dev/gpu",
 "devices": [{"name": "gpu-0", "containerEdits": {
    "env": ["FATIA_CDI_TEST=gpu-0"],
    "deviceNodes": [{"path": "/dev/nvidia0", "hostPath": "/dev/zero"}, {"path": "/dev/fuse"}],
    "mounts": [{"hostPath": "$TMP/cdi-lib", "containerPath": "/usr/lib/fatia/cdi-lib", "options": ["ro", "nosuid", "nodev", "bind"]}]}}],
 "containerEdits": {"env": ["FATIA_CDI_COMMON=1"]}}
EOF
DEV0='[{"slice":"gpu-0","kind":"whole","uuid":"GPU-00000000-0000-0000-0000-000000000000"}]'
# a slice in no CDI spec (the agent's spec of the node has only GPUs whose node the host has)
DEV1='[{"slice":"gpu-1","kind":"whole","uuid":"GPU-11111111-1111-1111-1111-111111111111"}]'
bound_pod gpu "$DEV0" "" <<EOF
  - name: main
    image: $IMG
    command: ["sh", "-c", "head -c 4 /dev/nvidia0 | wc -c > /tmp/n0; ls /dev > /tmp/devs; echo \$FATIA_CDI_TEST \$FATIA_CDI_COMMON > /tmp/env; cat /usr/lib/fatia/cdi-lib > /tmp/lib; if echo x > /usr/lib/fatia/cdi-lib; then echo lib-writable; else echo lib-readonly; fi > /tmp/libw; exec sleep 600"]
EOF
bound_pod gpuless "$DEV1" "  restartPolicy: Never" <<EOF
  - name: main
    image: $IMG
    command: ["true"]
EOF
wait_for 20 running gpu
wait_for 20 phase_is gpuless Pending
GP=
for _ in $(seq 50); do
    GP=$(ctr_pid gpu)
    [ -n "$GP" ] && [ -s "/proc/$GP/root/tmp/libw" ] && break
    sleep 0.1
done
if [ -n "$GP" ]; then
    [ "$(cat "/proc/$GP/root/tmp/n0")" = 4 ] || fail "the CDI device node /dev/nvidia0 cannot be read"
    grep -qx fuse "/proc/$GP/root/tmp/devs" || fail "/dev/fuse (a CDI node) is missing"
    grep -qx nvidia1 "/proc/$GP/root/tmp/devs" && fail "another slice's node is there"
    [ "$(cat "/proc/$GP/root/tmp/env")" = "gpu-0 1" ] || fail "CDI env: $(cat "/proc/$GP/root/tmp/env")"
    [ "$(cat "/proc/$GP/root/tmp/lib")" = "cdi for gpu-0" ] || fail "CDI mount: $(cat "/proc/$GP/root/tmp/lib")"
    [ "$(cat "/proc/$GP/root/tmp/libw")" = lib-readonly ] || fail "a read-only CDI mount is writable"
    dl=/sys/fs/cgroup/devices$(awk -F: '$2 == "devices" {print $3}' "/proc/$GP/cgroup")/devices.list
    if [ -f "$dl" ]; then
        grep -qx "c 1:5 rwm" "$dl" || fail "the device cgroup does not allow the CDI node 1:5: $(tr '\n' ' ' <"$dl")"
        grep -qx "c 10:229 rwm" "$dl" || fail "the device cgroup does not allow /dev/fuse"
        grep -q "^a " "$dl" && fail "the device cgroup allows every device: $(tr '\n' ' ' <"$dl")"
        grep -q "^c 195:" "$dl" && fail "the device cgroup allows a GPU node the container did not get"
    else
        fail "no devices cgroup file for the container ($dl)"
    fi
else
    fail "no pid for pod gpu"
fi
[ "$(jp gpuless '.status.containerStatuses[0].state.waiting.reason')" = CreateContainerError ] ||
    fail "a slice with no CDI spec: $(jp gpuless '.status.containerStatuses[0].state')"
jp gpuless '.status.containerStatuses[0].state.waiting.message' | grep -q "fatia.dev/gpu=gpu-1" ||
    fail "CDI message: $(jp gpuless '.status.containerStatuses[0].state.waiting.message')"

# ---- the fatia-process RuntimeClass: a process on the host ----
bound_pod proc "" "  restartPolicy: Never
  runtimeClassName: fatia-process" <<EOF
  - name: main
    image: $IMG
    command: ["sh", "-c", "test -d $TMP && echo host-fs"]
EOF
wait_for 20 phase_is proc Succeeded
k logs proc >"$TMP/proc.log" 2>/dev/null
expect_line "$TMP/proc.log" "host-fs"

# ---- cgroup limits: the container's memory and cpu, the pod's pids.max (--agent pod-pids-max) ----
bound_pod limits "" "  restartPolicy: Never" <<EOF
  - name: main
    image: $IMG
    command: ["sh", "-c", "sleep 0.3; (n=0; while [ \$n -lt 100 ]; do sleep 30 & n=\$((n+1)); done) 2>/tmp/forkerr; echo done > /tmp/done; exec sleep 600"]
    resources:
      limits: {memory: 32Mi, cpu: 500m}
EOF
wait_for 20 running limits
LP=
for _ in $(seq 100); do
    LP=$(ctr_pid limits)
    [ -n "$LP" ] && [ -s "/proc/$LP/root/tmp/done" ] && break
    sleep 0.1
done
if [ -n "$LP" ]; then
    cg() { echo "/sys/fs/cgroup/$1$(awk -F: -v c="$1" '$2 == c {print $3}' "/proc/$LP/cgroup")"; }
    [ "$(cat "$(cg memory)/memory.limit_in_bytes")" = 33554432 ] || fail "memory limit: $(cat "$(cg memory)/memory.limit_in_bytes")"
    [ "$(cat "$(cg cpu,cpuacct 2>/dev/null)/cpu.cfs_quota_us" 2>/dev/null || cat "$(cg cpu)/cpu.cfs_quota_us")" = 50000 ] ||
        fail "cpu quota: $(cat "$(cg cpu)/cpu.cfs_quota_us")"
    pp=$(dirname "$(cg pids)")
    [ "$(cat "$pp/pids.max")" = 32 ] || fail "the pod's pids.max: $(cat "$pp/pids.max") ($pp)"
    grep -qi "fork\|resource" "/proc/$LP/root/tmp/forkerr" || fail "100 processes under pids.max 32: no fork failed ($(cat "/proc/$LP/root/tmp/forkerr"))"
else
    fail "no pid for pod limits"
fi
k delete pod limits --grace-period=0 --wait=false >/dev/null

# ---- exec (runtime.h's entry, through fatia-shim exec): in the container, stdio and exit code ----
SHIM=$BUILD/bin/fatia-shim
RD=$D/agent/pods/$(jp root .metadata.uid)
echo hello | "$SHIM" exec "$RD" main sh -c 'read x; echo "$x $(id -u) $(hostname)"; test -e /tmp/id && exit 7' >"$TMP/exec.out" 2>"$TMP/exec.err"
rc=$?
[ "$rc" = 7 ] || fail "exec in a container: exit code $rc, want 7 ($(cat "$TMP/exec.err"))"
[ "$(cat "$TMP/exec.out")" = "hello 0 root" ] || fail "exec in a container: '$(cat "$TMP/exec.out")'"
"$SHIM" exec "$RD" nosuch true 2>"$TMP/exec.err"
[ $? = 126 ] || fail "exec into a container that does not exist succeeded"
bound_pod procrun "" "  runtimeClassName: fatia-process" <<EOF
  - name: main
    image: $IMG
    command: ["sleep", "600"]
EOF
wait_for 20 running procrun
"$SHIM" exec "$D/agent/pods/$(jp procrun .metadata.uid)" main sh -c 'echo $HOSTNAME $(id -u); exit 3' >"$TMP/exec.out" 2>"$TMP/exec.err"
rc=$?
[ "$rc" = 3 ] || fail "exec in a process pod: exit code $rc, want 3 ($(cat "$TMP/exec.err"))"
[ "$(cat "$TMP/exec.out")" = "procrun 200000" ] || fail "exec in a process pod: '$(cat "$TMP/exec.out")'"
k delete pod procrun --grace-period=0 --wait=false >/dev/null

# ---- kill -9 of fatiad: running containers are found again, none started twice ----
RP=$(ctr_pid root)
RUID=$(jp root .metadata.uid)
kill -9 "$FATIAD_PID"
wait "$FATIAD_PID" 2>/dev/null
FATIAD_PID=
start_fatiad "$D" --no-controllers --agent runtime=oci || exit 1
sleep 2
[ "$(ctr_pid root)" = "$RP" ] || fail "pod root's container changed across the restart: $RP -> $(ctr_pid root)"
[ -d "/proc/$RP" ] || fail "pod root's container died with fatiad"
[ "$(jp root '.status.containerStatuses[0].restartCount')" = 0 ] || fail "pod root restarted"
n=$(runc --root "$D/agent/runc" list -q | grep -c "^$RUID-")
[ "$n" = 1 ] || fail "pod root has $n runc containers"

# ---- a shim killed with -9: its containers stopped, runc's state and the mounts released ----
bound_pod lost "" "" <<EOF
  - name: main
    image: $IMG
    command: ["sleep", "300"]
EOF
wait_for 20 running lost
LUID=$(jp lost .metadata.uid)
LCP=$(ctr_pid lost)
SHIMPID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["shim"]["pid"])' "$D/agent/status/$LUID.json")
kill -9 "$SHIMPID"
lost_done() { [ "$(jp lost .status.reason)" = SupervisorLost ]; }
wait_for 20 lost_done
# (a zombie is dead: with its shim gone, the host's init reaps it when it does)
[ -n "$LCP" ] && [ -d "/proc/$LCP" ] && [ "$(awk '{print $3}' "/proc/$LCP/stat" 2>/dev/null)" != Z ] &&
    fail "the container of a lost shim still runs (pid $LCP, $(cat "/proc/$LCP/status" 2>/dev/null | head -3 | tr '\n' ' '))"
runc --root "$D/agent/runc" list -q | grep -q "^$LUID-" && fail "runc still has the lost pod's container"
grep -q " $D/agent/run/$LUID" /proc/mounts && fail "the lost pod's mounts are left behind"

# ---- deletion: nothing left behind ----
k delete pod root user net gpu --grace-period=1 --wait=false >/dev/null
wait_for 30 sh -c "! $KUBECTL --kubeconfig $KCFG get pod root user net gpu -o name 2>/dev/null | grep -q ."
[ -d "/proc/$RP" ] && fail "pod root's container outlived its deletion"
left=$(runc --root "$D/agent/runc" list -q | wc -l)
[ "$left" = 0 ] || fail "$left runc containers left after deleting the running pods"
grep -q " $D/agent/run/$RUID" /proc/mounts && fail "mounts left behind"
finish
