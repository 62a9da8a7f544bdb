#!/bin/bash
# tests/cli/controller-statefulset.sh: the StatefulSet controller (src/controller/statefulset.c)
# in a real fatiad with its node agent (restart backoff shortened):
#   - OrderedReady: while pod 0 cannot become Ready (its init container waits for a marker
#     file), pods 1 and 2 are never created; once it is Ready, 1 and then 2 follow, each
#     created no earlier than its predecessor became Ready;
#   - Parallel: all three pods at once, ready or not;
#   - stable identity: pods <name>-<ordinal>, hostname = name, subdomain = serviceName, a claim
#     data-<pod> per pod from volumeClaimTemplates; a deleted pod comes back with its name and
#     the same claim (same uid);
#   - scale down removes the highest ordinals and keeps their claims (retention Retain);
#   - a rolling update (new image) replaces every pod; updateRevision = currentRevision after;
#   - deleting the StatefulSet deletes its pods, not its claims;
#   - the process runtime does not mount the claims, and a Warning Event VolumeNotMounted says so.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
chmod 711 "$TMP"
SHARED=$TMP/shared
mkdir -p "$SHARED"
chmod 1777 "$SHARED"
k="$KUBECTL_DIR/kubectl.1.33"
FATIAD_CONTROLLERS=1 start_fatiad "$TMP/data" --agent restart-backoff=100ms \
    --agent restart-backoff-max=300ms || { finish; exit 1; }
export KUBECONFIG=$KCFG

wait_for() {
    local secs=$1 desc=$2
    shift 2
    for _ in $(seq $((secs * 5))); do
        "$@" && return 0
        sleep 0.2
    done
    fail "$desc ($secs s): $("$k" get sts,pods,pvc -n st-t 2>&1 | head -30)"
    return 1
}

sts() { # NAME POLICY MARKER
    cat <<YAML
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: $1, namespace: st-t}
spec:
  serviceName: $1
  replicas: 3
  podManagementPolicy: $2
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      initContainers:
      - {name: gate, image: busybox, command: [sh, -c, "while [ ! -e $3 ]; do sleep 0.1; done"]}
      containers:
      - {name: c, image: busybox, command: [sleep, "600"]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
YAML
}
{
    printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: st-t}\n'
    sts ord OrderedReady "$SHARED/ord-go"
    sts par Parallel "$SHARED/par-go"
} >"$TMP/sts.yaml"
expect_rc 0 "$k" apply -f "$TMP/sts.yaml"

pods_of() { "$k" get pods -n st-t -l "app=$1" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort | tr '\n' ' '; }
is_pods() { [ "$(pods_of "$1")" = "$2" ]; }
wait_for 20 "Parallel: three pods at once" is_pods par "par-0 par-1 par-2 "
wait_for 20 "OrderedReady: pod 0" is_pods ord "ord-0 "
sleep 3 # pod 0 keeps failing: nothing else may appear
is_pods ord "ord-0 " || fail "OrderedReady created $(pods_of ord) while ord-0 is not Ready"
touch "$SHARED/ord-go"
all_ready() {
    [ "$("$k" get sts "$1" -n st-t -o jsonpath='{.status.readyReplicas}')" = "$2" ]
}
wait_for 40 "OrderedReady: three ready pods" all_ready ord 3
is_pods ord "ord-0 ord-1 ord-2 " || fail "pods: $(pods_of ord)"
# each pod created no earlier than its predecessor became Ready
for i in 1 2; do
    prev=$("$k" get pod "ord-$((i - 1))" -n st-t -o jsonpath='{.status.conditions[?(@.type=="Ready")].lastTransitionTime}')
    made=$("$k" get pod "ord-$i" -n st-t -o jsonpath='{.metadata.creationTimestamp}')
    [ "$(date -u -d "$made" +%s)" -ge "$(date -u -d "$prev" +%s)" ] ||
        fail "ord-$i created at $made, before ord-$((i - 1)) was Ready ($prev)"
done

# identity and claims
expect_rc 0 "$k" get pod ord-1 -n st-t -o jsonpath='{.spec.hostname} {.spec.subdomain} {.spec.volumes[0].persistentVolumeClaim.claimName} {.metadata.labels.statefulset\.kubernetes\.io/pod-name}'
[ "$(cat "$TMP/out")" = "ord-1 ord data-ord-1 ord-1" ] || fail "identity of ord-1: $(cat "$TMP/out")"
# the process runtime mounts no claim: it says so (a Warning Event), never silently
"$k" get events -n st-t --field-selector involvedObject.name=ord-1,reason=VolumeNotMounted \
    -o jsonpath='{.items[0].message}' >"$TMP/ev" 2>&1
grep -q 'persistentVolumeClaim data-ord-1) is not mounted' "$TMP/ev" ||
    fail "no VolumeNotMounted Warning for a process-mode pod's claim: $(cat "$TMP/ev")"
claim_uid=$("$k" get pvc data-ord-1 -n st-t -o jsonpath='{.metadata.uid}')
[ -n "$claim_uid" ] || fail "no claim data-ord-1"
old_uid=$("$k" get pod ord-1 -n st-t -o jsonpath='{.metadata.uid}')
expect_rc 0 "$k" delete pod ord-1 -n st-t --wait=false
back() { [ "$("$k" get pod ord-1 -n st-t -o jsonpath='{.metadata.uid}' 2>/dev/null)" != "$old_uid" ] && all_ready ord 3; }
wait_for 30 "ord-1 made again" back
[ "$("$k" get pvc data-ord-1 -n st-t -o jsonpath='{.metadata.uid}')" = "$claim_uid" ] ||
    fail "ord-1 came back with another claim"

# scale down: the highest ordinals go, their claims stay
expect_rc 0 "$k" scale sts ord -n st-t --replicas=1
wait_for 30 "scaled down to ord-0" is_pods ord "ord-0 "
for i in 0 1 2; do
    "$k" get pvc "data-ord-$i" -n st-t >/dev/null 2>&1 || fail "claim data-ord-$i deleted by a scale down"
done
expect_rc 0 "$k" scale sts ord -n st-t --replicas=3
wait_for 40 "scaled up again" all_ready ord 3

# rolling update: every pod replaced, highest first, revisions converge
expect_rc 0 "$k" set image sts/ord c=busybox:1.36 -n st-t
updated() {
    local st
    st=$("$k" get sts ord -n st-t -o jsonpath='{.status.updatedReplicas} {.status.readyReplicas} {.status.currentRevision} {.status.updateRevision}')
    set -- $st
    [ "$1" = 3 ] && [ "$2" = 3 ] && [ "$3" = "$4" ]
}
wait_for 60 "the rolling update done" updated
for i in 0 1 2; do
    [ "$("$k" get pod "ord-$i" -n st-t -o jsonpath='{.spec.containers[0].image}')" = busybox:1.36 ] ||
        fail "ord-$i not updated"
done

# delete: pods go, claims stay
expect_rc 0 "$k" delete sts ord -n st-t
wait_for 30 "the pods deleted" is_pods ord ""
"$k" get pvc data-ord-0 -n st-t >/dev/null 2>&1 || fail "the claim went with the StatefulSet"
stop_fatiad
finish
