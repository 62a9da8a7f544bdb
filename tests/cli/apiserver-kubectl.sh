#!/bin/bash
# tests/cli/apiserver-kubectl.sh: the real kubectl, oldest and newest supported (1.27, 1.33),
# default flags, against a real fatiad: apply the examples twice (the second is a no-op), get in
# every output form, watch a change, describe, patch (strategic, merge, JSON, edit), label,
# delete, wait for a deletion, auth can-i. One fresh fatiad per client version.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"

cat >"$TMP/work.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: team-a
  labels: {kueue.x-k8s.io/queue-name: gpu}
spec:
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        env: [{name: A, value: "1"}, {name: B, value: "2"}]
        resources:
          requests: {cpu: 1, nvidia.com/gpu: 1}
          limits: {nvidia.com/gpu: 1}
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: team-a
  labels: {app: web}
spec:
  containers:
  - name: c1
    image: nginx
    env: [{name: X, value: "1"}]
  - name: c2
    image: redis
YAML

for v in 1.27 1.33; do
    k="$KUBECTL_DIR/kubectl.$v"
    start_fatiad "$TMP/data-$v" || break
    export KUBECONFIG=$KCFG

    # apply twice: everything created, then nothing to do
    expect_rc 0 "$k" apply -f examples/
    expect_line "$TMP/out" "namespace/team-a created"
    expect_line "$TMP/out" "clusterqueue.kueue.x-k8s.io/team-a created"
    expect_line "$TMP/out" "hardwareprofile.infrastructure.opendatahub.io/training-2gpu created"
    created=$(grep -c ' created$' "$TMP/out")
    expect_rc 0 "$k" apply -f examples/
    grep -v ' unchanged$' "$TMP/out" >"$TMP/changed"
    [ -s "$TMP/changed" ] && fail "kubectl $v: second apply changed: $(cat "$TMP/changed")"
    [ "$(grep -c ' unchanged$' "$TMP/out")" = "$created" ] || fail "kubectl $v: want $created unchanged"

    # get: table (printer columns), wide, yaml, json, all namespaces, label selectors
    expect_rc 0 "$k" get clusterqueues
    expect_line "$TMP/out" "NAME     COHORT     PENDING WORKLOADS   ADMITTED WORKLOADS   AGE"
    expect_line "$TMP/out" "team-a   research"
    expect_rc 0 "$k" get cq -o wide
    expect_line "$TMP/out" "STRATEGY"
    expect_line "$TMP/out" "BestEffortFIFO"
    expect_rc 0 "$k" get cq team-a -o yaml
    expect_line "$TMP/out" "cohortName: research"
    expect_line "$TMP/out" "resourceVersion:"
    expect_rc 0 "$k" get localqueues -A -o json
    expect_line "$TMP/out" '"clusterQueue": "team-b"'
    expect_rc 0 "$k" get lq -A
    expect_line "$TMP/out" "team-b      gpu    team-b"
    expect_rc 0 "$k" get ns -l fatia.dev/tenant=true -o name
    expect_line "$TMP/out" "namespace/team-a"
    grep -q gpu-catalog "$TMP/out" && fail "kubectl $v: label selector let gpu-catalog through"
    expect_rc 0 "$k" get hwp -n gpu-catalog
    expect_line "$TMP/out" "Standard Inference (MIG 3g)"
    expect_rc 0 "$k" get flavors,cohorts,wpc
    expect_line "$TMP/out" "resourceflavor.kueue.x-k8s.io/h200"
    expect_line "$TMP/out" "workloadpriorityclass.kueue.x-k8s.io/urgent"

    # Pods and Jobs: client-side apply with strategic merge patches (lists merged by name)
    expect_rc 0 "$k" apply -f "$TMP/work.yaml"
    expect_line "$TMP/out" "job.batch/train created"
    sed 's/image: busybox/image: busybox:1.36/; s/value: "2"/value: "3"/' "$TMP/work.yaml" \
        >"$TMP/work2.yaml"
    expect_rc 0 "$k" apply -f "$TMP/work2.yaml"
    expect_line "$TMP/out" "job.batch/train configured"
    expect_line "$TMP/out" "pod/web unchanged"
    expect_rc 0 "$k" get job train -n team-a -o jsonpath='{.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].env[1].value} {.metadata.generation}'
    expect_line "$TMP/out" "busybox:1.36 3 2"
    expect_rc 0 "$k" patch pod web -n team-a -p '{"spec":{"containers":[{"name":"c1","image":"nginx:2"}]}}'
    expect_rc 0 "$k" get pod web -n team-a -o jsonpath='{range .spec.containers[*]}{.name}={.image} {end}'
    expect_line "$TMP/out" "c1=nginx:2 c2=redis"

    # watch sees a later change
    timeout 5 "$k" get cq -w >"$TMP/watch" 2>&1 &
    wpid=$!
    sleep 1
    expect_rc 0 "$k" patch cq team-b --type=merge -p '{"spec":{"queueingStrategy":"StrictFIFO"}}'
    sleep 1
    kill "$wpid" 2>/dev/null
    wait "$wpid" 2>/dev/null
    [ "$(grep -c '^team-b ' "$TMP/watch")" -ge 2 ] || {
        fail "kubectl $v: get -w did not show the change"
        cat "$TMP/watch" >&2
    }
    expect_rc 0 "$k" patch cq team-b --type=json -p '[{"op":"replace","path":"/spec/queueingStrategy","value":"BestEffortFIFO"}]'
    expect_rc 0 "$k" get cq team-b -o jsonpath='{.spec.queueingStrategy}'
    expect_line "$TMP/out" "BestEffortFIFO"

    # edit (the editor is a sed script), label, describe
    printf '#!/bin/sh\nsed -i "s/stopPolicy: None/stopPolicy: Hold/" "$1"\n' >"$TMP/editor"
    chmod +x "$TMP/editor"
    expect_rc 0 env KUBE_EDITOR="$TMP/editor" "$k" edit lq gpu -n team-a
    expect_line "$TMP/out" "localqueue.kueue.x-k8s.io/gpu edited"
    expect_rc 0 "$k" get lq gpu -n team-a -o jsonpath='{.spec.stopPolicy}'
    expect_line "$TMP/out" "Hold"
    expect_rc 0 "$k" label cq team-a env=prod
    expect_rc 0 "$k" get cq -l env=prod -o name
    expect_line "$TMP/out" "clusterqueue.kueue.x-k8s.io/team-a"
    expect_rc 0 "$k" describe cq team-a
    expect_line "$TMP/out" "env=prod"
    expect_line "$TMP/out" "Cohort Name:"
    expect_rc 0 "$k" describe pod web -n team-a
    expect_line "$TMP/out" "nginx:2"

    # a validation error is the model's, with its field path
    expect_rc 1 "$k" patch cq team-a --type=merge -p '{"spec":{"queueingStrategy":"Fast"}}'
    expect_line "$TMP/err" "spec.queueingStrategy"
    expect_line "$TMP/err" "is invalid"

    # delete, wait for deletion, auth
    timeout 15 "$k" wait --for=delete pod/web -n team-a --timeout=10s >"$TMP/wait" 2>&1 &
    wpid=$!
    sleep 0.5
    expect_rc 0 "$k" delete pod web -n team-a --wait=false
    wait "$wpid" || fail "kubectl $v: wait --for=delete failed: $(cat "$TMP/wait")"
    expect_rc 0 "$k" delete -f "$TMP/work2.yaml" --ignore-not-found
    expect_rc 1 "$k" get job train -n team-a
    expect_line "$TMP/err" 'jobs.batch "train" not found'
    expect_rc 0 "$k" auth can-i create pods -n team-a
    expect_line "$TMP/out" "yes"

    # a tenant's kubeconfig: its namespace only, read-only
    expect_rc 0 "$FATIA" token create --data-dir "$TMP/data-$v" --user alice --namespace team-a --read-only
    cp "$TMP/out" "$TMP/alice.kubeconfig"
    expect_rc 0 "$k" --kubeconfig "$TMP/alice.kubeconfig" get lq -n team-a
    expect_line "$TMP/out" "gpu"
    expect_rc 1 "$k" --kubeconfig "$TMP/alice.kubeconfig" get lq -n team-b
    expect_line "$TMP/err" "Forbidden"
    expect_rc 1 "$k" --kubeconfig "$TMP/alice.kubeconfig" auth can-i create pods -n team-a
    expect_line "$TMP/out" "no"

    # deleting a namespace deletes what is in it
    expect_rc 0 "$k" delete ns team-b
    expect_rc 0 "$k" get lq -A -o name
    grep -q team-b "$TMP/out" && fail "kubectl $v: team-b's LocalQueue outlived its namespace"
    stop_fatiad
done
finish
