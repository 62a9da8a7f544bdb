#!/bin/bash
# tests/e2e/node-lifecycle.sh: node leases and the node-lifecycle controller (docs/fleet.md),
# with a real fatiad, its controllers and kubectl 1.33, on a fleet of two simulated 8-GPU nodes.
# Each node's agent heartbeat is played by one process (leasenode.py, 2 s leases renewed every
# 0.5 s); SIGSTOP of one stops its node's heartbeat, as SIGSTOP of a node agent would:
#   1. both nodes Ready, no taint; a Job's pod is bound to one of them
#   2. its heartbeat stopped: the node goes Ready=Unknown with node.kubernetes.io/unreachable:
#      NoExecute, the pod is evicted after --node-toleration-seconds (2 s), an Event says so, and
#      the Job's replacement is bound to the other node (placement sees the taint)
#   3. a pod that tolerates the taint without tolerationSeconds stays on the lost node; a tenant
#      can neither renew the lost node's lease nor remove its taint
#   4. SIGCONT: the taint goes, the node is Ready again, new pods may land there
#   5. kubectl cordon of both nodes: a new Job's pod stays unbound; uncordon: it binds
# The lease renewal of fatiad's own agent is agent/lease.c (not run here: --no-agent).
. "$(dirname "$0")/../cli/lib.bash"
. "$(dirname "$0")/../cli/fatiad.bash"
. "$(dirname "$0")/lib.bash"
find_kubectl
need_python3
export HOME=$TMP/home
mkdir -p "$HOME" "$TMP/fleet"
export FATIAD_CONTROLLERS=1
MK="$E2E_DIR/mkjob"
sed 's/^  count: 1$/  count: 2/' examples/fleet/00-box.yaml >"$TMP/fleet/00-box.yaml"
grep -q 'count: 2' "$TMP/fleet/00-box.yaml" || fail "could not make the two-node fleet"

start_fatiad "$TMP/data" --fleet "$TMP/fleet/" -f examples/ --job-backoff 200ms \
    --node-toleration-seconds 2 $NO_AGENT || { finish; exit 1; }
K="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $KCFG"
wait_until 20 $K get node box-1 -o name
declare -A HB
for n in box-0 box-1; do
    python3 "$E2E_DIR/leasenode.py" "$URL" "$CA" "$TOKEN" "$n" 2 &
    HB[$n]=$!
done
trap '{ kill -9 ${HB[box-0]} ${HB[box-1]}; wait ${HB[box-0]} ${HB[box-1]}; } 2>/dev/null; if [ -n "$FATIAD_PID" ]; then kill -9 "$FATIAD_PID"; fi; etcd_cleanup; rm -rf "$TMP"' EXIT

ready() { $K get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}'; }
taints() { $K get node "$1" -o jsonpath='{range .spec.taints[*]}{.key}:{.effect}{" "}{end}'; }
out_is() { [ "$("${@:2}")" = "$1" ]; }
has_taint() { taints "$1" | grep -q "$2"; }
no_taint() { ! taints "$1" | grep -q "$2"; }
node_of() { $K get pod "$2" -n "$1" -o jsonpath='{.spec.nodeName}'; }

# ---- 1. both nodes alive; a job's pod bound ----
wait_until 20 $K get lease -n kube-node-lease box-1 -o name
sleep 3 # longer than a lease: both are being renewed
for n in box-0 box-1; do
    expect_rc 0 ready "$n"
    [ "$(cat "$TMP/out")" = True ] || fail "$n is not Ready while its lease is renewed"
    no_taint "$n" unreachable || fail "$n is tainted while its lease is renewed"
done
$MK team-a victim training-2gpu "" "sleep 3600" | $K apply -f - >/dev/null
wait_until 30 has_bound_pod team-a victim
p1=$(pod_of_job team-a victim)
lost=$(node_of team-a "$p1")
other=box-0
[ "$lost" = box-0 ] && other=box-1
set_phase team-a "$p1" Running
# a pod that tolerates the taint forever, pinned to the same node
cat <<YAML | $K apply -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: stayer, namespace: team-a}
spec:
  nodeName: $lost
  tolerations: [{key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute}]
  containers: [{name: main, image: busybox, command: [sleep, "3600"]}]
YAML

# ---- 2. the node goes silent ----
kill -STOP "${HB[$lost]}"
t0=$SECONDS
wait_until 15 has_taint "$lost" "node.kubernetes.io/unreachable:NoExecute"
echo "node $lost tainted $((SECONDS - t0)) s after its heartbeat stopped (lease 2 s)"
wait_until 10 out_is Unknown ready "$lost"
wait_until 15 eval "! $K get pod $p1 -n team-a -o name"
echo "pod $p1 evicted $((SECONDS - t0)) s after the heartbeat stopped (toleration 2 s)"
expect_rc 0 $K get events -n team-a --field-selector reason=TaintManagerEviction -o name
[ -s "$TMP/out" ] || fail "no TaintManagerEviction event"
wait_until 30 has_bound_pod team-a victim
p2=$(pod_of_job team-a victim)
[ "$p2" != "$p1" ] || fail "no replacement pod"
[ "$(node_of team-a "$p2")" = "$other" ] || fail "the replacement $p2 went to $(node_of team-a "$p2"), not $other"
expect_rc 0 $K get pod stayer -n team-a -o name
# a hostile tenant (edit on team-a) tries to bring the node back by renewing its lease, or by
# removing its taint: both refused, and the node stays lost
"$BUILD/bin/fatia" token create --data-dir "$TMP/data" --user mallory --namespace team-a \
    >"$TMP/mallory.kubeconfig" 2>/dev/null || fail "fatia token create"
MAL=$(awk '$2 == "mallory" {print $1}' "$TMP/data/tokens")
[ -n "$MAL" ] || fail "no token for mallory"
MAL=${MAL:-none}
AS_TOKEN=$MAL api GET "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/$lost"
[ "$CODE" = 403 ] || fail "a tenant read the node's lease: $CODE"
api GET "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/$lost"
python3 -c 'import json,sys,datetime; o=json.load(open(sys.argv[1])); o["spec"]["renewTime"]=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"); print(json.dumps(o))' "$TMP/body" >"$TMP/spoof.json"
AS_TOKEN=$MAL api PUT "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/$lost" \
    -H 'Content-Type: application/json' --data-binary @"$TMP/spoof.json"
[ "$CODE" = 403 ] || fail "a tenant renewed a lost node's lease: $CODE"
AS_TOKEN=$MAL api PATCH "/api/v1/nodes/$lost" -H 'Content-Type: application/merge-patch+json' \
    -d '{"spec":{"taints":[]}}'
[ "$CODE" = 403 ] || fail "a tenant removed a lost node's taints: $CODE"
sleep 1.5
has_taint "$lost" unreachable || fail "the node came back without its heartbeat"
[ "$(ready "$other")" = True ] || fail "the other node $other went NotReady"

# ---- 4. it comes back ----
kill -CONT "${HB[$lost]}"
wait_until 15 no_taint "$lost" unreachable
wait_until 15 out_is True ready "$lost"

# ---- 5. cordon / uncordon ----
expect_rc 0 $K cordon box-0
expect_rc 0 $K cordon box-1
wait_until 10 has_taint box-0 "node.kubernetes.io/unschedulable:NoSchedule"
$MK team-b cordoned training-2gpu "" "sleep 3600" | $K apply -f - >/dev/null
sleep 3
has_bound_pod team-b cordoned && fail "a pod was bound to a cordoned node"
expect_rc 0 $K uncordon box-0
expect_rc 0 $K uncordon box-1
wait_until 10 no_taint box-0 unschedulable
wait_until 30 has_bound_pod team-b cordoned
stop_fatiad
finish
