#!/bin/bash
# tests/cli/controller-deployment.sh: the Deployment controller (src/controller/deployment.c,
# rollout.c) with the ReplicaSet controller and the node agent in a real fatiad, driven by the
# real kubectl 1.27 and 1.33 (one Deployment each, the same steps):
#   - a Deployment of 4 (real processes) rolls out: `kubectl rollout status` succeeds, one
#     ReplicaSet <name>-<hash> of revision 1, READY 4/4;
#   - `kubectl set image` rolls it to a second ReplicaSet while a poller
#     (controller_rollout_watch.py, every 20 ms) sees never fewer than 3 Ready pods
#     (maxUnavailable 25%) nor more than 5 live ones (maxSurge 25%); the old set ends at 0;
#   - `kubectl rollout history` lists revisions 1 and 2; `kubectl rollout undo` brings back the
#     first ReplicaSet itself (revision 3), not a new one;
#   - `kubectl rollout restart` rolls to a new ReplicaSet; revisionHistoryLimit 1 leaves one
#     idle old set;
#   - `kubectl scale` to 2 and to 3 (the scale subresource: PATCH, and GET + PUT with
#     --current-replicas, refused when the count differs), the Scale object read back;
#   - a Recreate Deployment: every old pod gone before a new one is created;
#   - deleting a Deployment deletes its ReplicaSets and pods.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
find_kubectl
need_python3
export HOME=$TMP/home
mkdir -p "$HOME"
chmod 711 "$TMP" # pods run under a uid of their namespace (docs/agent.md)
WATCH=$(dirname "$0")/controller_rollout_watch.py
FATIAD_CONTROLLERS=1 start_fatiad "$TMP/data" || { finish; exit 1; }
export KUBECONFIG=$KCFG

wait_for() {
    local desc=$1
    shift
    for _ in $(seq 300); do
        "$@" && return 0
        sleep 0.2
    done
    fail "$desc (60 s): $("$k" get deploy,rs,pods -n dp-t 2>&1 | head -20)"
    return 1
}

echo '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"dp-t"}}' >"$TMP/ns.json"
"$KUBECTL_DIR/kubectl.1.33" apply -f "$TMP/ns.json" >/dev/null

for v in 1.27 1.33; do
    k="$KUBECTL_DIR/kubectl.$v"
    d=web-${v/./}
    cat >"$TMP/$d.yaml" <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: $d, namespace: dp-t}
spec:
  replicas: 4
  revisionHistoryLimit: 1
  selector: {matchLabels: {app: $d}}
  template:
    metadata: {labels: {app: $d}}
    spec:
      containers: [{name: c, image: busybox, command: [sleep, "600"]}]
YAML
    expect_rc 0 "$k" apply -f "$TMP/$d.yaml"
    expect_rc 0 timeout 60 "$k" rollout status "deploy/$d" -n dp-t
    expect_line "$TMP/out" "successfully rolled out"
    expect_rc 0 "$k" get deploy "$d" -n dp-t
    tr -s ' ' <"$TMP/out" | grep -q "^$d 4/4 4 4 " || fail "kubectl $v: deploy columns: $(cat "$TMP/out")"
    rs1=$("$k" get rs -n dp-t -l "app=$d" -o jsonpath='{.items[0].metadata.name}')
    [[ "$rs1" == "$d-"* ]] || fail "kubectl $v: first ReplicaSet named $rs1"
    [ "$("$k" get rs "$rs1" -n dp-t -o jsonpath='{.metadata.annotations.deployment\.kubernetes\.io/revision}')" = 1 ] ||
        fail "kubectl $v: first ReplicaSet not revision 1"

    # a rolling update watched from outside
    rm -f "$TMP/stop"
    python3 "$WATCH" "$URL" "$TOKEN" "$CA" dp-t "app=$d" "$TMP/stop" "$TMP/watch" &
    wpid=$!
    sleep 0.3
    expect_rc 0 "$k" set image "deploy/$d" c=busybox:1.36 -n dp-t
    expect_rc 0 timeout 60 "$k" rollout status "deploy/$d" -n dp-t
    expect_line "$TMP/out" "successfully rolled out"
    touch "$TMP/stop"
    wait "$wpid"
    read -r min_ready max_live polls <"$TMP/watch"
    echo "kubectl $v rolling update: fewest ready $min_ready, most live $max_live ($polls polls)"
    [ "$min_ready" -ge 3 ] || fail "kubectl $v: only $min_ready ready pods during the rollout (maxUnavailable 1)"
    [ "$max_live" -le 5 ] || fail "kubectl $v: $max_live live pods during the rollout (maxSurge 1)"
    [ "$polls" -ge 5 ] || fail "kubectl $v: the poller ran only $polls times"
    [ "$("$k" get rs "$rs1" -n dp-t -o jsonpath='{.spec.replicas}')" = 0 ] || fail "kubectl $v: old set not at 0"
    expect_rc 0 "$k" rollout history "deploy/$d" -n dp-t
    grep -q "^1 " "$TMP/out" && grep -q "^2 " "$TMP/out" || fail "kubectl $v: history: $(cat "$TMP/out")"

    # undo: the first ReplicaSet comes back as revision 3
    expect_rc 0 "$k" rollout undo "deploy/$d" -n dp-t
    expect_rc 0 timeout 60 "$k" rollout status "deploy/$d" -n dp-t
    [ "$("$k" get rs "$rs1" -n dp-t -o jsonpath='{.spec.replicas} {.metadata.annotations.deployment\.kubernetes\.io/revision}')" = "4 3" ] ||
        fail "kubectl $v: undo did not bring back $rs1 as revision 3: $("$k" get rs -n dp-t -l app=$d 2>&1)"
    [ "$("$k" get deploy "$d" -n dp-t -o jsonpath='{.spec.template.spec.containers[0].image}')" = busybox ] ||
        fail "kubectl $v: undo did not restore the image"

    # restart: a new ReplicaSet; revisionHistoryLimit 1 keeps one idle old set
    expect_rc 0 "$k" rollout restart "deploy/$d" -n dp-t
    expect_rc 0 timeout 60 "$k" rollout status "deploy/$d" -n dp-t
    idle() { [ "$("$k" get rs -n dp-t -l "app=$d" -o jsonpath='{range .items[*]}{.spec.replicas}{"\n"}{end}' | grep -c '^0$')" = 1 ]; }
    wait_for "kubectl $v: one idle old set kept (revisionHistoryLimit 1)" idle
    [ "$("$k" get rs -n dp-t -l "app=$d" -o name | wc -l)" = 2 ] || fail "kubectl $v: sets: $("$k" get rs -n dp-t -l app=$d)"

    # kubectl scale: the scale subresource (a PATCH; with --current-replicas a GET and a PUT)
    expect_rc 0 "$k" scale "deploy/$d" -n dp-t --replicas=2
    expect_line "$TMP/out" "scaled"
    ready_is() { [ "$("$k" get deploy "$d" -n dp-t -o jsonpath='{.status.replicas}/{.status.readyReplicas}')" = "$1" ]; }
    wait_for "kubectl $v: scaled to 2" ready_is 2/2
    expect_rc 1 "$k" scale "deploy/$d" -n dp-t --replicas=3 --current-replicas=7
    expect_line "$TMP/err" "Expected replicas to be 7, was 2"
    expect_rc 0 "$k" scale "deploy/$d" -n dp-t --replicas=3 --current-replicas=2
    wait_for "kubectl $v: scaled to 3" ready_is 3/3
    expect_rc 0 "$k" get --raw "/apis/apps/v1/namespaces/dp-t/deployments/$d/scale"
    python3 -c "import json,sys; s=json.load(open(sys.argv[1])); assert s['kind']=='Scale' and s['apiVersion']=='autoscaling/v1' and s['spec']['replicas']==3 and s['status']['selector']=='app=$d', s" "$TMP/out" ||
        fail "kubectl $v: the Scale: $(cat "$TMP/out")"

    # delete: its sets and pods go
    expect_rc 0 "$k" delete deploy "$d" -n dp-t
    gone() { [ -z "$("$k" get rs,pods -n dp-t -l "app=$d" -o name 2>/dev/null)" ]; }
    wait_for "kubectl $v: the deployment's sets and pods deleted" gone
done

# the scale subresource refuses what is not a count, and changes nothing then
api PUT /apis/apps/v1/namespaces/dp-t/deployments/rec/scale -H 'Content-Type: application/json' \
    -d '{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"rec","namespace":"dp-t"},"spec":{"replicas":-2}}'
[ "$CODE" = 404 ] || fail "scale of a missing deployment: $CODE"
# Recreate: no new pod while an old one lives
k="$KUBECTL_DIR/kubectl.1.33"
cat >"$TMP/rec.yaml" <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: rec, namespace: dp-t}
spec:
  replicas: 2
  strategy: {type: Recreate}
  selector: {matchLabels: {app: rec}}
  template:
    metadata: {labels: {app: rec}}
    spec:
      containers: [{name: c, image: busybox, command: [sleep, "600"]}]
YAML
expect_rc 0 "$k" apply -f "$TMP/rec.yaml"
expect_rc 0 timeout 60 "$k" rollout status deploy/rec -n dp-t
rm -f "$TMP/stop"
python3 "$WATCH" "$URL" "$TOKEN" "$CA" dp-t "app=rec" "$TMP/stop" "$TMP/watch" &
wpid=$!
sleep 0.3
expect_rc 0 "$k" set image deploy/rec c=busybox:1.36 -n dp-t
expect_rc 0 timeout 60 "$k" rollout status deploy/rec -n dp-t
touch "$TMP/stop"
wait "$wpid"
api PUT /apis/apps/v1/namespaces/dp-t/deployments/rec/scale -H 'Content-Type: application/json' \
    -d '{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"rec","namespace":"dp-t"},"spec":{"replicas":-2}}'
[ "$CODE" = 422 ] || fail "a negative scale: $CODE $(cat "$TMP/body")"
api PATCH /apis/apps/v1/namespaces/dp-t/deployments/rec/scale -H 'Content-Type: application/merge-patch+json' \
    -d '{"spec":{"replicas":"many"}}'
[ "$CODE" = 422 ] || fail "a scale of a string: $CODE $(cat "$TMP/body")"
[ "$("$k" get deploy rec -n dp-t -o jsonpath='{.spec.replicas}')" = 2 ] || fail "a refused scale changed the deployment"
read -r min_ready max_live polls <"$TMP/watch"
echo "Recreate: fewest ready $min_ready, most live $max_live ($polls polls)"
[ "$max_live" -le 2 ] || fail "Recreate: $max_live live pods (old and new together)"
# (the gap between the last old pod and the first new one can be shorter than a poll on a
# loaded machine: the count of live pods above is the property; zero ready is asserted only
# when the polls were dense enough to see the gap)
if [ "$polls" -ge 30 ]; then
    [ "$min_ready" = 0 ] || fail "Recreate: never went down to 0 ready ($min_ready): not a recreate"
fi
stop_fatiad
finish
