#!/bin/bash
# tests/cli/apiserver-kueue-kinds.sh: Kueue's AdmissionCheck, ProvisioningRequestConfig and
# Topology (v1beta2 and v1beta1) served and stored (issue 17 item 4): the Kueue documentation's
# examples (tests/data/upstream/kueue/, unchanged) apply with kubectl 1.27 and 1.33, a second
# apply writes nothing, the objects read back in both versions and appear as CRDs; bad ones are
# refused naming the field (a Topology with a repeated level or 17 levels, an AdmissionCheck
# without controllerName, an unknown podSetMergePolicy).
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
D=tests/data/upstream/kueue

for v in 1.27 1.33; do
    k="$KUBECTL_DIR/kubectl.$v"
    start_fatiad "$TMP/data-$v" || break
    export KUBECONFIG=$KCFG
    for f in provisioning-setup.yaml sample-dra-tas-queues.yaml; do
        expect_rc 0 "$k" apply -f "$D/$f"
    done
    expect_rc 0 "$k" apply -f "$D/provisioning-setup.yaml"
    expect_line "$TMP/out" "admissioncheck.kueue.x-k8s.io/sample-prov unchanged"
    expect_line "$TMP/out" "provisioningrequestconfig.kueue.x-k8s.io/prov-test-config unchanged"
    expect_rc 0 "$k" apply -f "$D/sample-dra-tas-queues.yaml"
    expect_line "$TMP/out" "topology.kueue.x-k8s.io/dra-topology unchanged"
    expect_rc 0 "$k" apply -f "$D/sample-admission-check.yaml"
    expect_line "$TMP/out" "admissioncheck.kueue.x-k8s.io/prov-test created"
    expect_line "$TMP/out" "provisioningrequestconfig.kueue.x-k8s.io/prov-test-config configured"

    expect_rc 0 "$k" get admissionchecks -o name
    expect_line "$TMP/out" "admissioncheck.kueue.x-k8s.io/sample-prov"
    expect_rc 0 "$k" get admissioncheck sample-prov -o jsonpath='{.apiVersion} {.spec.controllerName} {.spec.parameters.kind}'
    expect_line "$TMP/out" "kueue.x-k8s.io/v1beta2 kueue.x-k8s.io/provisioning-request ProvisioningRequestConfig"
    expect_rc 0 "$k" get admissionchecks.v1beta1.kueue.x-k8s.io sample-prov -o jsonpath='{.apiVersion}'
    expect_line "$TMP/out" "kueue.x-k8s.io/v1beta1"
    expect_rc 0 "$k" get provisioningrequestconfig prov-test-config -o jsonpath='{.spec.provisioningClassName} {.spec.parameters.parma1}'
    expect_line "$TMP/out" "test-class value1"
    expect_rc 0 "$k" get topology dra-topology -o jsonpath='{.spec.levels[*].nodeLabel}'
    expect_line "$TMP/out" "cloud.provider.com/topology-block cloud.provider.com/topology-rack kubernetes.io/hostname"
    expect_rc 0 "$k" get crds -o name
    for c in admissionchecks provisioningrequestconfigs topologies; do
        expect_line "$TMP/out" "customresourcedefinition.apiextensions.k8s.io/$c.kueue.x-k8s.io"
    done

    # refusals naming the field
    cat >"$TMP/bad.yaml" <<'YAML'
apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata: {name: dup}
spec:
  levels: [{nodeLabel: a.io/block}, {nodeLabel: a.io/block}]
YAML
    expect_rc 1 "$k" apply -f "$TMP/bad.yaml"
    expect_line "$TMP/err" "spec.levels[1].nodeLabel: must be unique"
    python3 -c 'import json; print(json.dumps({"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"Topology","metadata":{"name":"deep"},"spec":{"levels":[{"nodeLabel":"l%d.io/x" % i} for i in range(17)]}}))' >"$TMP/deep.json"
    expect_rc 1 "$k" apply -f "$TMP/deep.json"
    expect_line "$TMP/err" "spec.levels"
    cat >"$TMP/bad2.yaml" <<'YAML'
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: nocontroller}
spec: {parameters: {apiGroup: kueue.x-k8s.io, kind: ProvisioningRequestConfig, name: x}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ProvisioningRequestConfig
metadata: {name: badpolicy}
spec: {provisioningClassName: c, podSetMergePolicy: Sometimes}
YAML
    expect_rc 1 "$k" apply -f "$TMP/bad2.yaml"
    expect_line "$TMP/err" "spec.controllerName"
    expect_line "$TMP/err" "spec.podSetMergePolicy"
    expect_rc 1 "$k" get topology dup
    stop_fatiad
done
finish
