#!/bin/bash
# tests/cli/apiserver-crd-list.sh: issue 17 item 1. kubectl's default validation lists
# CustomResourceDefinitions before it lets an object through whose kind the OpenAPI documents
# lack; fatiad serves apiextensions.k8s.io/v1 CRDs (get, list, watch) with its compiled
# non-core kinds as the CRDs a cluster would hold. So `kubectl apply -f` of a file that mixes
# served and unserved kinds applies every served object and refuses each unserved one by name
# with kubectl's own message (1.27 and 1.33, default flags, as the admin and as a tenant).
# Also: the CRDs' content, discovery, watch, the compiled kinds' CRDs read-only (403, nothing
# changed; a user's own CRD is served: apiserver-crd-user.sh), a restart keeps
# their uids and resourceVersions (nothing rewritten).
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"

# served: Namespace, ResourceFlavor (Kueue v1beta1, converted), LocalQueue, Job; unserved: a
# JobSet (a CRD group nobody serves), a ConfigMapX (an unknown kind of the core group), a
# Deployment-like kind in a served built-in group (batch/v1 CronJobX); refused by the server: a
# HardwareProfile with an unknown field (Strict validation, kubectl's default)
cat >"$TMP/mixed.yaml" <<'YAML'
apiVersion: v1
kind: Namespace
metadata: {name: mix-a}
---
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, namespace: mix-a}
spec:
  replicatedJobs:
  - name: workers
    template: {spec: {template: {spec: {containers: [{name: c, image: busybox}]}}}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: mix-flavor}
---
apiVersion: v1
kind: ConfigMapX
metadata: {name: cmx, namespace: mix-a}
data: {a: b}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: mix-a}
spec: {clusterQueue: nowhere}
---
apiVersion: batch/v1
kind: CronJobX
metadata: {name: cj, namespace: mix-a}
spec: {}
---
apiVersion: infrastructure.opendatahub.io/v1
kind: HardwareProfile
metadata: {name: bad, namespace: mix-a}
spec:
  displayName: typo
  identifiers: [{identifier: cpu, displayName: CPU, defaultCount: 1, minCount: 1, resourceType: CPU}]
  scheduling: {type: Node, node: {}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: j, namespace: mix-a}
spec:
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
YAML

check_mixed() { # $1 = label; output of one apply in $TMP/out, $TMP/err
    local v=$1
    grep -q "failed to list CRDs\|failed to check CRD" "$TMP/err" &&
        fail "kubectl $v: validation gave up on the file: $(cat "$TMP/err")"
    for o in "namespace/mix-a" "resourceflavor.kueue.x-k8s.io/mix-flavor" \
        "localqueue.kueue.x-k8s.io/lq" "job.batch/j"; do
        grep -qE "^$o (created|unchanged|configured)$" "$TMP/out" || fail "kubectl $v: $o not applied"
    done
    expect_line "$TMP/err" 'no matches for kind "JobSet" in version "jobset.x-k8s.io/v1alpha2"'
    expect_line "$TMP/err" 'no matches for kind "ConfigMapX" in version "v1"'
    expect_line "$TMP/err" 'no matches for kind "CronJobX" in version "batch/v1"'
    expect_line "$TMP/err" 'resource mapping not found for name: "js" namespace: "mix-a"'
    expect_line "$TMP/err" 'ensure CRDs are installed first'
    expect_line "$TMP/err" 'unknown field "spec.displayName"'
}

for v in 1.27 1.33; do
    k="$KUBECTL_DIR/kubectl.$v"
    start_fatiad "$TMP/data-$v" || break
    export KUBECONFIG=$KCFG

    # the mixed file: every served object applied, each unserved refused by name (exit 1)
    expect_rc 1 "$k" apply -f "$TMP/mixed.yaml"
    check_mixed "$v"
    expect_rc 0 "$k" get rf mix-flavor -o name
    expect_rc 1 "$k" get hwp bad -n mix-a
    # the same file again: the served objects unchanged, the same refusals
    expect_rc 1 "$k" apply -f "$TMP/mixed.yaml"
    check_mixed "$v (second apply)"
    expect_line "$TMP/out" "localqueue.kueue.x-k8s.io/lq unchanged"

    # the CRDs: every compiled kind of a non-Kubernetes group, no built-in kind
    expect_rc 0 "$k" get crds -o name
    for c in clusterqueues.kueue.x-k8s.io localqueues.kueue.x-k8s.io workloads.kueue.x-k8s.io \
        resourceflavors.kueue.x-k8s.io cohorts.kueue.x-k8s.io workloadpriorityclasses.kueue.x-k8s.io \
        hardwareprofiles.infrastructure.opendatahub.io inferencepools.inference.networking.k8s.io \
        schedulerconfigs.fatia.dev; do
        expect_line "$TMP/out" "customresourcedefinition.apiextensions.k8s.io/$c"
    done
    for c in pods namespaces jobs.batch resourceclaims.resource.k8s.io \
        deviceclasses.resource.k8s.io customresourcedefinitions.apiextensions.k8s.io; do
        grep -qx "customresourcedefinition.apiextensions.k8s.io/$c" "$TMP/out" &&
            fail "kubectl $v: built-in kind $c listed as a CRD"
    done
    expect_rc 0 "$k" get crd workloads.kueue.x-k8s.io -o jsonpath='{.spec.group} {.spec.scope} {.spec.names.kind} {.spec.names.listKind} {.spec.names.shortNames} {.spec.versions[?(@.storage==true)].name} {.spec.versions[?(@.storage==false)].name} {.spec.versions[0].subresources} {.status.storedVersions} {.status.conditions[?(@.type=="Established")].status}'
    expect_line "$TMP/out" 'kueue.x-k8s.io Namespaced Workload WorkloadList ["wl"] v1beta2 v1beta1 {"status":{}} ["v1beta2"] True'
    expect_rc 0 "$k" get crd clusterqueues.kueue.x-k8s.io -o jsonpath='{.spec.scope} {.spec.versions[0].additionalPrinterColumns[0].jsonPath} {.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.queueingStrategy.enum}'
    expect_line "$TMP/out" 'Cluster .spec.cohortName ["BestEffortFIFO","StrictFIFO"]'
    expect_rc 0 "$k" get crds
    expect_line "$TMP/out" "hardwareprofiles.infrastructure.opendatahub.io"
    expect_rc 0 "$k" api-resources --api-group=apiextensions.k8s.io
    expect_line "$TMP/out" "customresourcedefinitions"
    expect_rc 0 "$k" explain crd.spec.names
    expect_line "$TMP/out" "KIND:       CustomResourceDefinition"

    # the compiled kinds' CRDs are read-only: delete and patch answer 403 and change nothing; a
    # user's CRD is accepted (served: apiserver-crd-user.sh)
    rv_before=$("$k" get crd workloads.kueue.x-k8s.io -o jsonpath='{.metadata.resourceVersion}')
    cat >"$TMP/crd.yaml" <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: foos.example.com}
spec:
  group: example.com
  names: {plural: foos, singular: foo, kind: Foo}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
YAML
    expect_rc 0 "$k" apply -f "$TMP/crd.yaml"
    expect_rc 1 "$k" delete crd workloads.kueue.x-k8s.io
    expect_line "$TMP/err" "may not be deleted"
    expect_rc 1 "$k" patch crd workloads.kueue.x-k8s.io --type=merge -p '{"spec":{"scope":"Cluster"}}'
    expect_line "$TMP/err" "may not be changed"
    expect_rc 0 "$k" get crd foos.example.com
    expect_rc 0 "$k" delete crd foos.example.com
    expect_rc 0 "$k" get crd workloads.kueue.x-k8s.io -o jsonpath='{.metadata.resourceVersion} {.spec.scope}'
    expect_line "$TMP/out" "$rv_before Namespaced"

    # a tenant (its namespace, read-write) applies the same file with the same outcome
    expect_rc 0 "$FATIA" token create --data-dir "$TMP/data-$v" --user alice --namespace mix-a
    cp "$TMP/out" "$TMP/alice.kubeconfig"
    expect_rc 1 "$k" --kubeconfig "$TMP/alice.kubeconfig" apply -f "$TMP/mixed.yaml"
    grep -q "failed to list CRDs" "$TMP/err" && fail "kubectl $v: a tenant's validation gave up"
    expect_line "$TMP/err" 'no matches for kind "JobSet" in version "jobset.x-k8s.io/v1alpha2"'
    expect_line "$TMP/out" "localqueue.kueue.x-k8s.io/lq unchanged"
    expect_rc 1 "$k" --kubeconfig "$TMP/alice.kubeconfig" delete crd workloads.kueue.x-k8s.io
    expect_line "$TMP/err" "Forbidden"

    # watch: the initial state (every CRD ADDED) over HTTP
    api GET "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?watch=1&timeoutSeconds=1"
    [ "$CODE" = 200 ] || fail "kubectl $v: watch of CRDs: $CODE"
    grep -c '"type":"ADDED"' "$TMP/body" >"$TMP/n"
    [ "$(cat "$TMP/n")" -ge 9 ] || fail "watch of CRDs: $(cat "$TMP/n") ADDED events"
    api GET "/apis/apiextensions.k8s.io/v1"
    grep -q '"verbs":\["create","delete","deletecollection","get","list","patch","update","watch"\]' "$TMP/body" ||
        fail "discovery verbs: $(cat "$TMP/body")"

    # a restart rewrites nothing: the same uids and resourceVersions
    "$k" get crds -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.uid} {.metadata.resourceVersion}{"\n"}{end}' >"$TMP/crds-before"
    stop_fatiad
    start_fatiad "$TMP/data-$v" || break
    export KUBECONFIG=$KCFG
    "$k" get crds -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.uid} {.metadata.resourceVersion}{"\n"}{end}' >"$TMP/crds-after"
    [ -s "$TMP/crds-before" ] || fail "kubectl $v: no CRDs listed"
    cmp -s "$TMP/crds-before" "$TMP/crds-after" ||
        fail "kubectl $v: a restart changed the CRDs: $(diff "$TMP/crds-before" "$TMP/crds-after")"
    stop_fatiad
done
finish
