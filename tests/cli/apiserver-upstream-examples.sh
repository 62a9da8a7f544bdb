#!/bin/bash
# tests/cli/apiserver-upstream-examples.sh: issue 17 item 6. Real example manifests nobody here
# wrote (the Kueue documentation's, NVIDIA's DRA driver demos, the Gateway API Inference
# Extension's, Kubeflow's Profile CRD and samples; tests/data/upstream/*/, unchanged, sources in
# each SOURCE file) go to fatiad with
# kubectl 1.27 and 1.33, default flags, as their documentation says (`kubectl create` for files
# with generateName, `kubectl apply` for the others): every object of a served kind is created;
# each one of a kind fatiad does not serve is refused by kubectl naming it ("no matches for
# kind"), and the set of those kinds must be tests/data/upstream/UNSERVED exactly (listed, not
# hidden). No other error is allowed.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
U=tests/data/upstream
grep -v '^#' "$U/UNSERVED" | sort >"$TMP/want"

for v in 1.27 1.33; do
    k="$KUBECTL_DIR/kubectl.$v"
    start_fatiad "$TMP/data-$v" || break
    export KUBECONFIG=$KCFG
    : >"$TMP/all.err"
    n_ok=0
    # setup files first (queues, classes), then the workloads that use them
    for f in "$U"/kueue/single-clusterqueue-setup.yaml "$U"/kueue/provisioning-setup.yaml \
        "$U"/kueue/sample-admission-check.yaml "$U"/kueue/sample-dra-tas-queues.yaml \
        "$U"/kueue/sample-job.yaml "$U"/kueue/sample-dra-firstavailable-job.yaml \
        "$U"/kueue/sample-jobset-tas-required.yaml "$U"/nvidia-dra/gpu-test7.yaml \
        "$U"/nvidia-dra/gpu-test-count.yaml \
        "$U"/gie/inference.networking.x-k8s.io_inferencepools.yaml "$U"/gie/inferencepool.yaml \
        "$U"/kubeflow/kubeflow.org_profiles.yaml "$U"/kubeflow/_v1_profile.yaml \
        "$U"/kubeflow/_v1beta1_profile.yaml; do
        verb=apply
        grep -q '^  generateName:' "$f" && verb=create
        "$k" "$verb" -f "$f" >"$TMP/out" 2>"$TMP/err"
        n_ok=$((n_ok + $(grep -cE ' (created|configured|unchanged)$' "$TMP/out")))
        cat "$TMP/err" >>"$TMP/all.err"
    done
    # every error is kubectl's refusal of an unserved kind (or its "ensure CRDs" hint, or a
    # deprecation warning)
    grep -vE '^(error: )?resource mapping not found for name: .* no matches for kind|^ensure CRDs are installed first$|^Warning: .*deprecated' \
        "$TMP/all.err" >"$TMP/other"
    [ -s "$TMP/other" ] && fail "kubectl $v: errors other than unserved kinds: $(cat "$TMP/other")"
    grep -o 'no matches for kind "[^"]*" in version "[^"]*"' "$TMP/all.err" |
        sed 's/no matches for kind "\([^"]*\)" in version "\([^"]*\)"/\2 \1/' | sort -u >"$TMP/got"
    cmp -s "$TMP/want" "$TMP/got" ||
        fail "kubectl $v: unserved kinds differ from $U/UNSERVED: $(diff "$TMP/want" "$TMP/got")"
    [ "$n_ok" -ge 28 ] || fail "kubectl $v: only $n_ok objects applied"
    echo "kubectl $v: $n_ok objects applied, $(wc -l <"$TMP/got") unserved kinds refused by name"
    expect_rc 0 "$k" get jobs -n default -o name
    expect_line "$TMP/out" "job.batch/sample-job-"
    expect_line "$TMP/out" "job.batch/sample-dra-firstavailable-job-"
    expect_rc 0 "$k" get resourceclaimtemplates -A -o name
    expect_line "$TMP/out" "resourceclaimtemplate.resource.k8s.io/single-gpu"
    expect_line "$TMP/out" "resourceclaimtemplate.resource.k8s.io/a100-or-mig"
    # Kubeflow's Profile CRD: served, its samples stored (one in each version)
    expect_rc 0 "$k" get profiles -o name
    expect_line "$TMP/out" "profile.kubeflow.org/test-user-profile"
    expect_line "$TMP/out" "profile.kubeflow.org/profile-sample"
    expect_rc 0 "$k" get profile test-user-profile -o jsonpath='{.spec.owner.name}'
    expect_line "$TMP/out" "test-user@kubeflow.org"
    # GIE's InferencePool v1alpha2, served by GIE's own CRD: stored with the CRD's defaults
    expect_rc 0 "$k" get inferencepools.inference.networking.x-k8s.io my-pool -n default \
        -o jsonpath='{.spec.targetPortNumber} {.spec.extensionRef.failureMode} {.spec.extensionRef.kind}'
    expect_line "$TMP/out" "8000 FailClose Service"
    # and its schema holds: a port out of range is refused naming the field
    expect_rc 1 "$k" patch inferencepools.inference.networking.x-k8s.io my-pool -n default --type=merge \
        -p '{"spec":{"targetPortNumber":70000}}'
    expect_line "$TMP/err" "spec.targetPortNumber"
    stop_fatiad
done
finish
