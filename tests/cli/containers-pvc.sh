#!/usr/bin/env bash
# tests/cli/containers-pvc.sh: PersistentVolumeClaims with the local-path provisioner
# (src/controller/localpath.c) and the agent's side (src/agent/localpath.c), in containers from
# the busybox image this test builds, with both kubectl versions:
#   - the default StorageClass local-path (WaitForFirstConsumer, Delete) as kubectl shows it;
#   - a claim stays Pending until a pod uses it, then a PV pvc-<uid> is made and both are Bound;
#     the pod's data is kept when the pod goes and read back by the next pod;
#   - a StatefulSet's volumeClaimTemplates claim keeps its data across its pod's deletion;
#   - requests.storage: a pod writing past its claim's size is Evicted;
#   - hostile: a claim of another namespace naming the first one's PV in spec.volumeName gets
#     no data (the pod waits; the PV stays bound to its own claim);
#   - deleting a claim deletes its PV and its directory (Delete); with a Retain class the PV is
#     Released and the data stays.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/agent.bash"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || skip "containers need root"
need_tools runc umoci skopeo busybox
agent_setup
cleanup() {
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
FATIAD_CONTROLLERS=1 start_fatiad "$D" --agent runtime=oci || exit 1
IMG=fatia.dev/busybox:1
K27="$KUBECTL_DIR/kubectl.1.27 --kubeconfig $KCFG"
pvc_phase() { k ${2:+-n $2} get pvc "$1" -o 'jsonpath={.status.phase}' 2>/dev/null; }
pvc_is() { [ "$(pvc_phase "$1" "${3:-}")" = "$2" ]; }
logs_have() { k ${3:+-n $3} logs "$1" 2>/dev/null | grep -qF -- "$2"; }
pod() { # NAME CLAIM COMMAND [NAMESPACE]
    cat >"$TMP/$1.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1${4:+, namespace: $4}}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  volumes: [{name: data, persistentVolumeClaim: {claimName: $2}}]
  containers:
  - name: main
    image: $IMG
    command: ["sh", "-c", "$3"]
    volumeMounts: [{name: data, mountPath: /data}]
EOF
    k create -f "$TMP/$1.yaml" >/dev/null || fail "cannot create pod $1"
}
claim() { # NAME SIZE [CLASS] [NAMESPACE] [VOLUMENAME]
    cat >"$TMP/pvc-$1.yaml" <<EOF
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: $1${4:+, namespace: $4}}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: $2}}
${3:+  storageClassName: $3}
${5:+  volumeName: $5}
EOF
    $K27 create -f "$TMP/pvc-$1.yaml" >/dev/null || fail "kubectl 1.27: cannot create claim $1"
}

# ---- the default class ----
wait_for 20 k get storageclass local-path
k get storageclass >"$TMP/sc.txt"
expect_line "$TMP/sc.txt" "local-path (default)"
expect_line "$TMP/sc.txt" "fatia.dev/local-path"
expect_line "$TMP/sc.txt" "WaitForFirstConsumer"

# ---- a claim, bound at its first consumer; data kept across pods ----
claim data 1Mi
sleep 2
pvc_is data Pending || fail "claim bound before a pod used it: $(pvc_phase data)"
pod writer data "echo hello > /data/f; sync; cat /data/f"
wait_for 40 pvc_is data Bound
PV=$(k get pvc data -o 'jsonpath={.spec.volumeName}')
[ "$PV" = "pvc-$(k get pvc data -o 'jsonpath={.metadata.uid}')" ] || fail "volume name: $PV"
[ "$(k get pv "$PV" -o 'jsonpath={.status.phase}')" = Bound ] || fail "PV $PV is not Bound"
[ "$(k get pv "$PV" -o 'jsonpath={.spec.claimRef.name}')" = data ] || fail "PV claimRef"
[ "$(k get pvc data -o 'jsonpath={.spec.storageClassName}')" = local-path ] || fail "default class not written"
[ "$(k get pvc data -o 'jsonpath={.status.capacity.storage}')" = 1Mi ] || fail "capacity"
$K27 get pvc data >"$TMP/pvc.txt"
expect_line "$TMP/pvc.txt" "Bound"
wait_for 40 phase_is writer Succeeded
k delete pod writer --wait=false >/dev/null
wait_for 30 sh -c "! $KUBECTL --kubeconfig $KCFG get pod writer >/dev/null 2>&1"
[ -f "$D/agent/pv/$PV/f" ] || fail "the claim's directory went with the pod: $(ls -la "$D/agent/pv" 2>&1)"
pod reader data "cat /data/f"
wait_for 40 phase_is reader Succeeded
logs_have reader hello || fail "the next pod did not read the data: $(k logs reader 2>&1)"

# ---- requests.storage: a pod writing past its claim's size is evicted ----
pod filler data "dd if=/dev/zero of=/data/big bs=1024 count=3072; sleep 600"
wait_for 40 sh -c "[ \"\$($KUBECTL --kubeconfig $KCFG get pod filler -o jsonpath='{.status.reason}')\" = Evicted ]"
k get events --field-selector involvedObject.name=filler -o 'jsonpath={.items[*].message}' |
    grep -qF "Usage of PersistentVolumeClaim data exceeds its requests.storage of 1048576 bytes" ||
    fail "no eviction Event for the claim's size"

# ---- hostile: another namespace's claim names this PV ----
k create namespace thief >/dev/null
claim steal 1Mi local-path thief "$PV"
pod stealer steal "cat /data/f" thief
sleep 6
[ "$(k -n thief get pod stealer -o 'jsonpath={.status.phase}')" = Pending ] ||
    fail "a pod of another namespace ran on a foreign volume: $(k -n thief logs stealer 2>&1)"
logs_have stealer hello thief && fail "another namespace read the claim's data"
[ "$(k get pv "$PV" -o 'jsonpath={.spec.claimRef.namespace}')" = default ] || fail "the PV changed hands"
k -n thief delete pod stealer --grace-period=0 --wait=false >/dev/null 2>&1

# ---- ResourceQuota requests.storage (and per class) at admission ----
k -n thief create quota storage --hard=requests.storage=3Mi,local-path.storageclass.storage.k8s.io/persistentvolumeclaims=2 >/dev/null ||
    fail "create quota"
sleep 1
claim q1 2Mi local-path thief
sed 's/name: q1/name: q2/' "$TMP/pvc-q1.yaml" >"$TMP/pvc-q2.yaml"
$K27 create -f "$TMP/pvc-q2.yaml" 2>&1 | grep -qF 'exceeded quota: storage, requested: requests.storage=2Mi, used: requests.storage=3Mi, limited: requests.storage=3Mi' ||
    $K27 create -f "$TMP/pvc-q2.yaml" 2>&1 | grep -qF 'exceeded quota: storage' || fail "no quota message: $($K27 create -f "$TMP/pvc-q2.yaml" 2>&1)"
k -n thief get pvc q2 >/dev/null 2>&1 && fail "a claim past requests.storage was admitted"
wait_for 10 sh -c "[ \"\$($KUBECTL --kubeconfig $KCFG -n thief get quota storage -o jsonpath='{.status.used.requests\.storage}')\" = 3Mi ]"

# ---- a StatefulSet's claim keeps its data across the pod's deletion ----
cat >"$TMP/sts.yaml" <<EOF
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: $IMG
        command: ["sh", "-c", "[ -f /var/db/id ] || echo \$(hostname)-\$RANDOM > /var/db/id; echo id=\$(cat /var/db/id); exec sleep 600"]
        volumeMounts: [{name: store, mountPath: /var/db}]
  volumeClaimTemplates:
  - metadata: {name: store}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Mi}}
EOF
k create -f "$TMP/sts.yaml" >/dev/null || fail "create statefulset"
wait_for 60 logs_have db-0 id=db-0-
first=$(k logs db-0 | grep -o 'id=.*')
pvc_is store-db-0 Bound || fail "the StatefulSet's claim is $(pvc_phase store-db-0)"
old_uid=$(k get pod db-0 -o 'jsonpath={.metadata.uid}')
k delete pod db-0 --wait=false >/dev/null
wait_for 60 sh -c "[ \"\$($KUBECTL --kubeconfig $KCFG get pod db-0 -o jsonpath='{.metadata.uid}' 2>/dev/null)\" != '' ] && [ \"\$($KUBECTL --kubeconfig $KCFG get pod db-0 -o jsonpath='{.metadata.uid}')\" != $old_uid ]"
wait_for 60 logs_have db-0 id=
[ "$(k logs db-0 | grep -o 'id=.*')" = "$first" ] || fail "the StatefulSet's data did not survive: $first vs $(k logs db-0)"

# ---- reclaim: Delete removes the PV and the directory; Retain keeps them ----
k delete pod --all --grace-period=1 --wait=false >/dev/null 2>&1
wait_for 60 sh -c "! $KUBECTL --kubeconfig $KCFG get pod reader filler >/dev/null 2>&1"
k delete pvc data >/dev/null
wait_for 30 sh -c "! $KUBECTL --kubeconfig $KCFG get pv $PV >/dev/null 2>&1"
wait_for 60 sh -c "[ ! -e $D/agent/pv/$PV ]"
cat >"$TMP/keep.yaml" <<EOF
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: keep}
provisioner: fatia.dev/local-path
reclaimPolicy: Retain
volumeBindingMode: Immediate
EOF
k create -f "$TMP/keep.yaml" >/dev/null || fail "create class keep"
claim kept 1Mi keep
wait_for 30 pvc_is kept Bound
KPV=$(k get pvc kept -o 'jsonpath={.spec.volumeName}')
pod keeper kept "echo precious > /data/f"
wait_for 40 phase_is keeper Succeeded
k delete pod keeper --wait=false >/dev/null
k delete pvc kept >/dev/null
wait_for 30 sh -c "[ \"\$($KUBECTL --kubeconfig $KCFG get pv $KPV -o jsonpath='{.status.phase}')\" = Released ]"
sleep 3
[ "$(cat "$D/agent/pv/$KPV/f" 2>/dev/null)" = precious ] || fail "a Retain volume's data went"
k delete statefulset db >/dev/null 2>&1
k delete pod --all -A --grace-period=1 --wait=false >/dev/null 2>&1
wait_for 60 sh -c "! $KUBECTL --kubeconfig $KCFG get pods -A -o name 2>/dev/null | grep -q ."
finish
