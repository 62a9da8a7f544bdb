#!/bin/bash
# tests/cli/apiserver-eviction.sh: the pods/eviction subresource (src/apiserver/eviction.c) and
# `kubectl drain` with kubectl 1.27 and 1.33. fatiad runs without controllers, so the budgets'
# status is written here by hand (the disruption controller's part is controller/pdb.c's):
#   1. a budget with disruptionsAllowed 0: 429 TooManyRequests with upstream's message and a
#      DisruptionBudget cause; 1: one eviction passes (201 Status Success), the budget is
#      decremented and names the pod in disruptedPods, the next is 429
#   2. a race: eight evictions at once for a budget that allows one: exactly one passes
#   3. a Pending pod is evicted whatever the budget; two budgets over one pod: 500; the Eviction's
#      name must be the pod's; a missing pod is 404
#   4. tenants: admin in the namespace evicts, view does not, nor anyone in another namespace
#   5. kubectl drain: cordons, evicts, skips DaemonSet pods only with --ignore-daemonsets, evicts
#      emptyDir pods only with --delete-emptydir-data, and waits on a budget (its message shown)
#      until --timeout, leaving the protected pods
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
D=$TMP/data
start_fatiad "$D" || { finish; exit 1; }
ADM="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $KCFG"
allowed() { "$@" >"$TMP/out" 2>"$TMP/err" || fail "refused: $*: $(cat "$TMP/err")"; }

NODE=drain-node # no agent serves it: the pods stay as written
cat >"$TMP/node.yaml" <<EOF
apiVersion: v1
kind: Node
metadata: {name: $NODE}
EOF
allowed $ADM create -f "$TMP/node.yaml"
allowed $ADM create namespace web
allowed $ADM create namespace other

# pod NAME [PHASE] [EXTRA-SPEC-YAML]: a pod of app=web on $NODE in web, phase Running by default
pod() {
    cat >"$TMP/pod.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: web, labels: {app: web}}
spec:
  nodeName: $NODE
  containers: [{name: c, image: busybox}]
${3:-}
EOF
    allowed $ADM create -f "$TMP/pod.yaml"
    allowed $ADM patch pod "$1" -n web --subresource=status --type=merge -p "{\"status\":{\"phase\":\"${2:-Running}\"}}"
}
# budget ALLOWED: the status the disruption controller would write
budget() {
    allowed $ADM patch pdb web -n web --subresource=status --type=merge -p \
        "{\"status\":{\"observedGeneration\":1,\"expectedPods\":3,\"currentHealthy\":3,\"desiredHealthy\":2,\"disruptionsAllowed\":$1}}"
}
evict() { # evict POD [NAMESPACE]: POST the Eviction as $AS_TOKEN (default admin)
    api POST "/api/v1/namespaces/${2:-web}/pods/$1/eviction" -H 'Content-Type: application/json' \
        -d "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"$1\",\"namespace\":\"${2:-web}\"}}"
}
gone() { ! $ADM get pod "$1" -n web >/dev/null 2>&1; }

# ---- 1. the budget decides ----
for p in a1 a2 a3; do pod "$p"; done
allowed $ADM create pdb web -n web --selector=app=web --min-available=2
budget 0
evict a1
[ "$CODE" = 429 ] || fail "eviction under a budget at 0: $CODE, want 429"
python3 - "$TMP/body" <<'EOF' || fail "the 429 is not upstream's: $(cat "$TMP/body")"
import json, sys
o = json.load(open(sys.argv[1]))
assert o["reason"] == "TooManyRequests", o
assert o["message"] == "Cannot evict pod as it would violate the pod's disruption budget.", o
c = o["details"]["causes"][0]
assert c["reason"] == "DisruptionBudget", c
assert c["message"] == "The disruption budget web needs 2 healthy pods and has 3 currently", c
EOF
gone a1 && fail "a pod protected by its budget was deleted"
budget 1
evict a1
[ "$CODE" = 201 ] && grep -q '"status":"Success"' "$TMP/body" || fail "eviction allowed by the budget: $CODE $(cat "$TMP/body")"
gone a1 || fail "the evicted pod is still there"
[ "$($ADM get pdb web -n web -o jsonpath='{.status.disruptionsAllowed}')" = 0 ] || fail "the budget was not decremented"
[ -n "$($ADM get pdb web -n web -o jsonpath='{.status.disruptedPods.a1}')" ] || fail "disruptedPods does not name a1"
evict a2
[ "$CODE" = 429 ] || fail "the second eviction: $CODE, want 429"

# ---- 2. a race for the last disruption ----
for i in 1 2 3 4 5 6; do pod "r$i"; done
budget 1
PIDS=
for p in a2 a3 r1 r2 r3 r4 r5 r6; do
    (CODE=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$CA" -X POST -H "Authorization: Bearer $TOKEN" \
        -H 'Content-Type: application/json' \
        -d "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"$p\"}}" \
        "$URL/api/v1/namespaces/web/pods/$p/eviction"); echo "$CODE" >"$TMP/race.$p") &
    PIDS="$PIDS $!"
done
wait $PIDS # not fatiad
PASSED=$(cat "$TMP"/race.* | grep -c 201)
[ "$PASSED" = 1 ] || fail "racing evictions for one allowed disruption: $PASSED passed ($(cat "$TMP"/race.* | tr '\n' ' '))"
[ "$(cat "$TMP"/race.* | grep -vc -e 201 -e 429)" = 0 ] || fail "racing evictions: unexpected codes $(cat "$TMP"/race.* | tr '\n' ' ')"
allowed $ADM delete pods -n web -l app=web --wait=false

# ---- 3. what no budget protects, and malformed requests ----
pod pend Pending
budget 0
evict pend
[ "$CODE" = 201 ] || fail "a Pending pod's eviction: $CODE, want 201"
pod b1
cat >"$TMP/pdb2.yaml" <<'EOF'
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web2, namespace: web}
spec: {maxUnavailable: 1, selector: {matchLabels: {app: web}}}
EOF
allowed $ADM create -f "$TMP/pdb2.yaml"
evict b1
[ "$CODE" = 500 ] && grep -q 'more than one PodDisruptionBudget' "$TMP/body" || fail "two budgets: $CODE $(cat "$TMP/body")"
allowed $ADM delete pdb web2 -n web
api POST /api/v1/namespaces/web/pods/b1/eviction -H 'Content-Type: application/json' \
    -d '{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"other"}}'
[ "$CODE" = 400 ] || fail "an Eviction naming another pod: $CODE, want 400"
evict nope
[ "$CODE" = 404 ] || fail "evicting a missing pod: $CODE, want 404"

# ---- 4. tenants ----
"$FATIA" token create --data-dir "$D" --user alice --namespace web >/dev/null 2>&1 || fail "token alice"
"$FATIA" token create --data-dir "$D" --user rosa --namespace web --read-only >/dev/null 2>&1 || fail "token rosa"
budget 1
AS_TOKEN=$(awk '$2 == "rosa" {print $1}' "$D/tokens") evict b1
[ "$CODE" = 403 ] && grep -q 'cannot create resource \\"pods/eviction\\"' "$TMP/body" || fail "view evicts: $CODE $(cat "$TMP/body")"
AS_TOKEN=$(awk '$2 == "alice" {print $1}' "$D/tokens") evict b1 other
[ "$CODE" = 403 ] || fail "alice evicts in another namespace: $CODE, want 403"
AS_TOKEN=$(awk '$2 == "alice" {print $1}' "$D/tokens") evict b1
[ "$CODE" = 201 ] || fail "alice (admin of web) evicts: $CODE $(cat "$TMP/body")"

# ---- 5. kubectl drain ----
cat >"$TMP/ds.yaml" <<'EOF'
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: web}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: c, image: busybox}]}
EOF
allowed $ADM create -f "$TMP/ds.yaml"
DSUID=$($ADM get ds agent -n web -o jsonpath='{.metadata.uid}')
for V in 1.27 1.33; do
    K="$KUBECTL_DIR/kubectl.$V --kubeconfig $KCFG"
    allowed $ADM delete pods -n web --all --wait=false
    allowed $K uncordon "$NODE"
    pod d1
    pod d2
    pod scratch Running '  volumes: [{name: s, emptyDir: {}}]'
    cat >"$TMP/dspod.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: agent-x
  namespace: web
  labels: {app: agent}
  ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: agent, uid: $DSUID, controller: true}]
spec:
  nodeName: $NODE
  containers: [{name: c, image: busybox}]
EOF
    allowed $ADM create -f "$TMP/dspod.yaml"
    budget 5
    # without the flags drain refuses, naming what it will not delete
    $K drain "$NODE" --force --timeout=20s >"$TMP/drain" 2>&1 && fail "$V: drain without --ignore-daemonsets passed"
    grep -q 'DaemonSet-managed' "$TMP/drain" || fail "$V: drain does not name the DaemonSet pod: $(cat "$TMP/drain")"
    $K drain "$NODE" --force --ignore-daemonsets --timeout=20s >"$TMP/drain" 2>&1 &&
        fail "$V: drain without --delete-emptydir-data passed"
    grep -q 'local storage' "$TMP/drain" || fail "$V: drain does not name the emptyDir pod: $(cat "$TMP/drain")"
    $K drain "$NODE" --force --ignore-daemonsets --delete-emptydir-data --timeout=30s >"$TMP/drain" 2>&1 ||
        fail "$V: drain: $(cat "$TMP/drain")"
    grep -q 'evicting pod web/d1' "$TMP/drain" || fail "$V: drain did not evict d1: $(cat "$TMP/drain")"
    [ "$($K get node "$NODE" -o jsonpath='{.spec.unschedulable}')" = true ] || fail "$V: drain did not cordon"
    for p in d1 d2 scratch; do gone "$p" || fail "$V: drain left $p"; done
    gone agent-x && fail "$V: drain --ignore-daemonsets evicted the DaemonSet's pod"
    # a budget that allows nothing: drain retries until its timeout and the pods stay
    allowed $K uncordon "$NODE"
    pod d3
    budget 0
    $K drain "$NODE" --force --ignore-daemonsets --delete-emptydir-data --timeout=7s >"$TMP/drain" 2>&1 &&
        fail "$V: drain passed a budget at 0"
    grep -q "Cannot evict pod as it would violate the pod's disruption budget" "$TMP/drain" ||
        fail "$V: drain does not show the budget's refusal: $(cat "$TMP/drain")"
    gone d3 && fail "$V: drain deleted a pod its budget protects"
done
stop_fatiad
finish
