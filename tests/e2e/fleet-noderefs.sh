#!/bin/bash
# tests/e2e/fleet-noderefs.sh: the Secrets, ConfigMaps and claims of a node role's pods, fetched
# by name (src/daemon/remote.c, docs/fleet.md "The node role"): two `fatiad --role node`
# processes (box-0, box-1; runc containers of the busybox image this test builds) joined to a
# control fatiad (its own agent off, the local-path provisioner on):
#   1. a pod bound to box-0 with env from a Secret, a ConfigMap volume and a claim (local-path)
#      runs in box-0's node role and writes what it sees into its claim: the Secret's value and
#      the ConfigMap's file;
#   2. the ConfigMap changes: the file in the running container follows; again after the control
#      plane restarted past the watches' history (--watch-history 20): each watch of box-0's
#      node role is listed again (410), no object its pod names is dropped;
#   3. hostile, on box-1: a pod of team-b naming the Secret that only box-0's pod (of team-a)
#      uses gets nothing: CreateContainerConfigError 'secret "db" not found', the value nowhere
#      in box-1's node role;
#   4. hostile, on box-0 (whose token may read team-a's claim): a pod of team-b whose claimName
#      is a path into team-a ("../../../namespaces/team-a/persistentvolumeclaims/data") does not
#      get team-a's volume: it waits, 'persistentvolumeclaim ... not found';
#   5. the pods deleted: box-0's node role stops fetching the Secret, the ConfigMap, the claim
#      and its volume (kubelet's managers drop an object no pod names).
# Skipped without root, runc, umoci, skopeo or busybox (scripts/setup installs them).
# NR_WRAP: a command to run each node role under (e.g. "valgrind -q --error-exitcode=9").
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || skip "containers need root"
need_tools runc umoci skopeo busybox
find_kubectl
chmod 711 "$TMP"
export HOME=$TMP/home
mkdir -p "$HOME" "$TMP/fleet" "$TMP/box-0/agent" "$TMP/box-1/agent"
export FATIAD_CONTROLLERS=1
sed 's/^  count: 1$/  count: 2/' examples/fleet/00-box.yaml >"$TMP/fleet/00-box.yaml"
grep -q 'count: 2' "$TMP/fleet/00-box.yaml" || fail "could not make the two-node fleet"

declare -A NR
cleanup() {
    local n c
    for n in "${!NR[@]}"; do kill -9 "${NR[$n]}" 2>/dev/null; done
    kill_agent_pods "$TMP"/box-*/agent/status/*.json
    for n in box-0 box-1; do
        for c in $(runc --root "$TMP/$n/agent/runc" list -q 2>/dev/null); do
            runc --root "$TMP/$n/agent/runc" delete --force "$c" 2>/dev/null
        done
    done
    [ -n "$FATIAD_PID" ] && kill -9 "$FATIAD_PID" 2>/dev/null
    grep -o " ${TMP}[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
    etcd_cleanup
    rm -rf "$TMP"
}
trap cleanup EXIT

"$SRC/scripts/images/busybox" "$TMP/busybox.tar" || { fail "cannot build the image"; finish; }
for n in box-0 box-1; do
    expect_rc 0 "$FATIA" image load -d "$TMP/$n" --name fatia.dev/busybox:1 "$TMP/busybox.tar"
done
IMG=fatia.dev/busybox:1

# the provisioner's volumes are under the control role's pod directory's pv/: in a fleet that
# path must be the node roles' own (docs/fleet.md); here box-0's
start_fatiad "$TMP/data" --fleet "$TMP/fleet/" -f examples/ --no-agent \
    --agent "pod-dir=$TMP/box-0/agent" --watch-history 20 || { finish; exit 1; }
K="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $KCFG"
wait_until 20 $K get node box-1 -o name
$K create namespace kube-node-lease >/dev/null 2>&1 || fail "kubectl create namespace kube-node-lease"

for n in box-0 box-1; do
    "$FATIA" token create --data-dir "$TMP/data" --node "$n" >/dev/null 2>&1 || fail "token for $n"
    awk -v u="system:node:$n" '$2 == u {print $1; exit}' "$TMP/data/tokens" >"$TMP/$n.token"
    ${NR_WRAP:-} "$FATIAD" --role node --server "$URL" --token "$TMP/$n.token" --ca "$CA" --node-name "$n" \
        --data-dir "$TMP/$n" --agent runtime=oci --agent restart-backoff=200ms \
        --agent restart-backoff-max=1s >"$TMP/$n.log" 2>&1 &
    NR[$n]=$!
done
for n in box-0 box-1; do
    wait_until 20 $K get lease -n kube-node-lease "$n" -o name
done

SECRET_VALUE=s3cr3t-Value-4242
$K -n team-a create secret generic db --from-literal=password=$SECRET_VALUE >/dev/null ||
    fail "create secret db"
$K -n team-a create configmap app --from-literal=mode=fast >/dev/null || fail "create configmap app"
$K apply -f - >/dev/null <<EOF || fail "create claim data"
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: team-a}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 10Mi}}
EOF

pod() { # pod NAME NAMESPACE NODE: a pod of the container spec on stdin
    {
        cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: $2}
spec:
  nodeName: $3
  automountServiceAccountToken: false
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
EOF
        cat
    } | $K create -f - >/dev/null || fail "cannot create pod $1"
}
waiting() { # waiting NS POD: the first container's waiting reason and message
    $K get pod "$2" -n "$1" -o \
        jsonpath='{.status.containerStatuses[0].state.waiting.reason}: {.status.containerStatuses[0].state.waiting.message}' 2>/dev/null
}
has() { grep -qF -- "$1" <<<"$("${@:2}")"; }

# ---- 1. env from a Secret, a ConfigMap volume and a claim, on a node role ----
t0=$SECONDS
pod app team-a box-0 <<EOF
  volumes:
  - {name: cfg, configMap: {name: app}}
  - {name: data, persistentVolumeClaim: {claimName: data}}
  containers:
  - name: main
    image: $IMG
    command: ["sh", "-c", "while true; do echo \"P=\$P M=\$(cat /cfg/mode)\" >/data/out.tmp; mv /data/out.tmp /data/out; sleep 0.3; done"]
    env: [{name: P, valueFrom: {secretKeyRef: {name: db, key: password}}}]
    volumeMounts: [{name: cfg, mountPath: /cfg}, {name: data, mountPath: /data}]
EOF
running() { [ "$($K get pod "$2" -n "$1" -o jsonpath='{.status.phase}' 2>/dev/null)" = Running ]; }
wait_until 60 running team-a app || {
    echo "app: $(waiting team-a app)" >&2
    tail -20 "$TMP/box-0.log" >&2
}
echo "pod app Running on box-0's node role $((SECONDS - t0)) s after its creation"
pv=$($K get pvc data -n team-a -o jsonpath='{.spec.volumeName}')
dir=$($K get pv "$pv" -o jsonpath='{.spec.hostPath.path}')
[ -n "$dir" ] || fail "the claim data has no volume: '$pv'"
out() { cat "$dir/out" 2>/dev/null; }
wait_until 20 has "P=$SECRET_VALUE M=fast" out || echo "out: $(out)" >&2
# the container is box-0's node role's, not box-1's
runc --root "$TMP/box-0/agent/runc" list -q | grep -q . || fail "box-0's node role runs no container"
[ -z "$(runc --root "$TMP/box-1/agent/runc" list -q 2>/dev/null)" ] || fail "box-1's node role runs a container"

# ---- 2. the ConfigMap changes: the running container's file follows ----
t0=$SECONDS
$K -n team-a patch configmap app -p '{"data":{"mode":"slow"}}' >/dev/null || fail "patch configmap app"
wait_until 30 has "P=$SECRET_VALUE M=slow" out || echo "out: $(out)" >&2
echo "the ConfigMap's change seen in the container $((SECONDS - t0)) s after the patch"

# ---- 2b. the control plane restarts past the watches' history: listed again, still followed ----
filler() {
    for i in $(seq 60); do
        printf -- '---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: filler-%s, namespace: team-b}\n' "$i"
    done
}
filler | $K apply -f - >/dev/null || fail "the filler ConfigMaps"
port=${URL##*:}
stop_fatiad
start_fatiad "$TMP/data" --fleet "$TMP/fleet/" -f examples/ --no-agent \
    --agent "pod-dir=$TMP/box-0/agent" --watch-history 20 --listen "127.0.0.1:$port" ||
    { finish; exit 1; }
wait_until 30 grep -qF "remote: configmaps/team-a/app: its watch's history is gone: listed again" "$TMP/box-0.log"
wait_until 30 grep -qF "remote: the node's pods: the watch's history is gone: listed again" "$TMP/box-0.log"
$K -n team-a patch configmap app -p '{"data":{"mode":"after"}}' >/dev/null || fail "patch configmap app"
wait_until 30 has "P=$SECRET_VALUE M=after" out || echo "out: $(out)" >&2
grep -F "no pod of the node names it any more" "$TMP/box-0.log" && fail "box-0 dropped an object its pod names"

# ---- 3. hostile: another namespace's Secret, on the other node ----
pod thief team-b box-1 <<EOF
  containers:
  - name: main
    image: $IMG
    command: ["sh", "-c", "echo \$P; sleep 3600"]
    env: [{name: P, valueFrom: {secretKeyRef: {name: db, key: password}}}]
EOF
wait_until 30 has 'CreateContainerConfigError: secret "db" not found' waiting team-b thief ||
    echo "thief: $(waiting team-b thief)" >&2
sleep 2
running team-b thief && fail "ATTACK SUCCEEDED? the pod naming team-a's Secret from team-b runs"
grep -rqsF "$SECRET_VALUE" "$TMP/box-1" "$TMP/box-1.log" &&
    fail "ATTACK SUCCEEDED? team-a's Secret value is in box-1's node role"

# ---- 4. hostile: a claimName that is a path into team-a, on the node that may read it ----
pod thief2 team-b box-0 <<EOF
  volumes: [{name: data, persistentVolumeClaim: {claimName: ../../../namespaces/team-a/persistentvolumeclaims/data}}]
  containers:
  - name: main
    image: $IMG
    command: ["sh", "-c", "cat /data/out; sleep 3600"]
    volumeMounts: [{name: data, mountPath: /data}]
EOF
wait_until 30 has 'not found' waiting team-b thief2 || echo "thief2: $(waiting team-b thief2)" >&2
echo "thief2: $(waiting team-b thief2)"
sleep 2
running team-b thief2 && fail "ATTACK SUCCEEDED? the pod naming a path into team-a's claim runs"

# ---- 5. the pod goes: its objects are no longer fetched (box-0's watches stopped) ----
$K delete pod thief thief2 -n team-b --wait=false >/dev/null 2>&1
$K delete pod app -n team-a --wait=false >/dev/null 2>&1 || fail "delete pod app"
for r in secrets/team-a/db configmaps/team-a/app persistentvolumeclaims/team-a/data \
    "persistentvolumes//$pv"; do
    grep -qF "remote: $r: named by a pod of the node: fetched by name" "$TMP/box-0.log" ||
        fail "box-0's node role did not fetch $r"
    wait_until 20 grep -qF "remote: $r: no pod of the node names it any more" "$TMP/box-0.log"
done
for n in box-0 box-1; do
    kill -TERM "${NR[$n]}"
    wait "${NR[$n]}" || { fail "the node role of $n exited $? after SIGTERM"; tail -5 "$TMP/$n.log" >&2; }
done
NR=()
stop_fatiad
finish
