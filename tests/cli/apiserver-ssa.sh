#!/bin/bash
# tests/cli/apiserver-ssa.sh: server-side apply and managedFields (issue 17 item 2). The HTTP
# cases transcribed from kube-apiserver's apply tests and structured-merge-diff's
# (tests/cli/apiserver_ssa.py, each case citing its source); then kubectl 1.27 and 1.33 with
# default flags: `apply --server-side` twice is a no-op (same resourceVersions), a conflict with
# kubectl-patch refused naming the field and its manager, --force-conflicts takes it, `diff
# --server-side`, client-side apply then server-side (kubectl's migration of the
# kubectl-client-side-apply entry) and a field dropped from the file afterwards is removed.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
need_python3
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"

start_fatiad "$TMP/data-http" || exit 1
python3 tests/cli/apiserver_ssa.py "$URL" "$CA" "$TOKEN" >"$TMP/ssa.out" 2>&1 ||
    fail "SSA HTTP cases: $(grep FAIL "$TMP/ssa.out")"
stop_fatiad

cat >"$TMP/objs.yaml" <<'YAML'
apiVersion: v1
kind: Namespace
metadata: {name: team-s, labels: {tier: gold}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq-s}
spec:
  cohortName: research
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{name: cpu, nominalQuota: 4}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: team-s}
spec: {clusterQueue: cq-s}
---
apiVersion: batch/v1
kind: Job
metadata: {name: j, namespace: team-s}
spec:
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        env: [{name: A, value: "1"}]
YAML

cat >"$TMP/pod.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: team-s, labels: {app: web, keep: "yes"}}
spec:
  containers:
  - name: c1
    image: nginx
    env: [{name: E1, value: "1"}, {name: E2, value: "2"}]
YAML

rvs() { # resourceVersions of the objects of objs.yaml
    "$k" get -f "$TMP/objs.yaml" -o jsonpath='{range .items[*]}{.kind}/{.metadata.name}={.metadata.resourceVersion} {end}'
}

for v in 1.27 1.33; do
    k="$KUBECTL_DIR/kubectl.$v"
    start_fatiad "$TMP/data-$v" || break
    export KUBECONFIG=$KCFG

    # twice: the second changes nothing
    expect_rc 0 "$k" apply --server-side -f "$TMP/objs.yaml"
    expect_line "$TMP/out" "clusterqueue.kueue.x-k8s.io/cq-s serverside-applied"
    expect_line "$TMP/out" "job.batch/j serverside-applied"
    before=$(rvs)
    expect_rc 0 "$k" apply --server-side -f "$TMP/objs.yaml"
    [ "$(rvs)" = "$before" ] || fail "kubectl $v: a second apply --server-side wrote: $before -> $(rvs)"
    expect_rc 0 "$k" get cq cq-s -o jsonpath='{.metadata.managedFields[0].manager} {.metadata.managedFields[0].operation}'
    expect_line "$TMP/out" "kubectl Apply"
    expect_rc 0 "$k" get job j -n team-s -o jsonpath='{.metadata.managedFields[0].fieldsV1}'
    expect_line "$TMP/out" '"k:{\"name\":\"main\"}":{".":{},"f:env":{"k:{\"name\":\"A\"}"'
    expect_rc 0 "$k" diff --server-side -f "$TMP/objs.yaml"

    # a conflict with another manager: refused naming field and manager, nothing changed
    expect_rc 0 "$k" patch cq cq-s --type=merge -p '{"spec":{"cohortName":"other"}}'
    expect_rc 1 "$k" apply --server-side -f "$TMP/objs.yaml"
    expect_line "$TMP/err" 'Apply failed with 1 conflict: conflict with "kubectl-patch" using kueue.x-k8s.io/v1beta2: .spec.cohortName'
    expect_rc 0 "$k" get cq cq-s -o jsonpath='{.spec.cohortName}'
    expect_line "$TMP/out" "other"
    expect_rc 0 "$k" apply --server-side --force-conflicts -f "$TMP/objs.yaml"
    expect_rc 0 "$k" get cq cq-s -o jsonpath='{.spec.cohortName} {.metadata.managedFields[*].manager}'
    expect_line "$TMP/out" "research kubectl"
    grep -q "kubectl-patch" "$TMP/out" && fail "kubectl $v: kubectl-patch still owns a field"

    # a field dropped from the configuration is removed (the applier owned it alone)
    sed 's/labels: {tier: gold}/labels: {}/' "$TMP/objs.yaml" >"$TMP/objs2.yaml"
    expect_rc 0 "$k" apply --server-side -f "$TMP/objs2.yaml"
    expect_rc 0 "$k" get ns team-s -o jsonpath='{.metadata.labels}'
    grep -q tier "$TMP/out" && fail "kubectl $v: the dropped label stayed: $(cat "$TMP/out")"

    # client-side apply, then server-side: kubectl moves the kubectl-client-side-apply entry to
    # its Apply entry; a field dropped afterwards goes
    expect_rc 0 "$k" apply -f "$TMP/pod.yaml"
    expect_rc 0 "$k" get pod web -n team-s -o jsonpath='{.metadata.managedFields[*].manager}'
    expect_line "$TMP/out" "kubectl-client-side-apply"
    expect_rc 0 "$k" apply -f "$TMP/pod.yaml" # client-side apply keeps working
    expect_line "$TMP/out" "pod/web unchanged"
    expect_rc 0 "$k" apply --server-side -f "$TMP/pod.yaml"
    expect_rc 0 "$k" get pod web -n team-s -o jsonpath='{range .metadata.managedFields[*]}{.manager}:{.operation} {end}'
    expect_line "$TMP/out" "kubectl:Apply"
    grep -q "kubectl-client-side-apply" "$TMP/out" &&
        fail "kubectl $v: the client-side entry was not migrated: $(cat "$TMP/out")"
    sed -e 's/, keep: "yes"//' -e 's/, {name: E2, value: "2"}//' "$TMP/pod.yaml" >"$TMP/pod2.yaml"
    expect_rc 0 "$k" apply --server-side -f "$TMP/pod2.yaml"
    expect_rc 0 "$k" get pod web -n team-s -o jsonpath='{.metadata.labels.keep}/{.spec.containers[0].env[*].name}'
    expect_line "$TMP/out" "/E1"
    grep -q "yes" "$TMP/out" && fail "kubectl $v: a label dropped after the migration stayed"
    stop_fatiad
done
finish
