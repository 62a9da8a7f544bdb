#!/bin/bash
# tests/cli/kubectl-explain.sh: `kubectl explain` prints upstream's descriptions for the fields
# of the built-in kinds (src/apiserver/openapi_desc.c, from python3-kubernetes's models by
# scripts/explain-gen) and for the CRD kinds of Kueue (Workload's pod template included),
# OpenDataHub, Kubeflow's Notebook, KServe's InferenceService, ServingRuntime,
# ClusterServingRuntime and LLMInferenceService, and InferencePool (third_party/crd-descriptions,
# from upstream's CRD YAML), and fatia.dev's UsageRecord, NodePool, GPUSharingPolicy and
# SchedulerConfig (fatia's own descriptions), with kubectl 1.27 and 1.33 against a real fatiad;
# the committed table is what the script makes from the installed package and the committed
# descriptions.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
MODELS=/usr/lib/python3/dist-packages/kubernetes/client/models
[ -d "$MODELS" ] || skip "python3-kubernetes is not installed"

"$SRC/scripts/explain-gen" "$MODELS" "$TMP/openapi_desc.c" || fail "explain-gen"
cmp -s "$TMP/openapi_desc.c" "$SRC/src/apiserver/openapi_desc.c" ||
    fail "src/apiserver/openapi_desc.c differs from scripts/explain-gen's output: run it"

# explain_has V PATH TEXT: kubectl V explain PATH prints TEXT (whitespace folded: kubectl wraps)
explain_has() {
    expect_rc 0 "$KUBECTL_DIR/kubectl.$1" explain "$2"
    tr -s ' \n' '  ' <"$TMP/out" | grep -qF -- "$3" ||
        fail "kubectl $1 explain $2: no '$3' in: $(cat "$TMP/out")"
}

for v in 1.27 1.33; do
    start_fatiad "$TMP/data-$v" || break
    export KUBECONFIG=$KCFG
    explain_has $v pod.spec.containers "List of containers belonging to the pod. Containers cannot currently be added or removed."
    explain_has $v pod.spec.containers.image "Docker image name."
    explain_has $v deployment.spec.template.spec.restartPolicy "Restart policy for all containers within the pod."
    explain_has $v deployment.spec.replicas "Number of desired pods."
    explain_has $v job.spec.backoffLimit "Specifies the number of retries before marking this job failed."
    explain_has $v cronjob.spec.schedule "The schedule in Cron format"
    explain_has $v configmap.data "Data contains the configuration data."
    explain_has $v namespace.spec.finalizers "Finalizers is an opaque list of values"
    explain_has $v node.spec.unschedulable "Unschedulable controls node schedulability of new pods."
    # an open part (fatia keeps status as is) drawn from upstream's model
    explain_has $v node.status.nodeInfo.bootID "Boot ID reported by the node."
    explain_has $v pod.status.containerStatuses.restartCount "The number of times the container has been restarted"
    explain_has $v pod.metadata.labels "Map of string keys and values that can be used to organize and categorize"
    # the core Event, not events.k8s.io's
    explain_has $v event.reason "This should be a short, machine understandable string"
    # CRD kinds: upstream's CRD descriptions (third_party/crd-descriptions)
    explain_has $v clusterqueue.spec.cohortName "cohortName that this ClusterQueue belongs to. CQs that belong to the same cohort can borrow unused resources from each other."
    explain_has $v clusterqueue.spec.resourceGroups.flavors.resources.nominalQuota "nominalQuota is the quantity of this resource that is available for Workloads admitted by this ClusterQueue"
    explain_has $v clusterqueue.spec.preemption.reclaimWithinCohort "- \`Never\` (default): do not preempt Workloads in the cohort."
    explain_has $v clusterqueue.status.flavorsUsage.resources.borrowed "borrowed is quantity of quota that is borrowed from the cohort."
    explain_has $v localqueue.spec.clusterQueue "clusterQueue is a reference to a clusterQueue that backs this localQueue."
    explain_has $v localqueue.status.conditions.reason "reason contains a programmatic identifier indicating the reason for the condition's last transition."
    explain_has $v resourceflavor.spec.nodeTaints.effect "Required. The effect of the taint on pods that do not tolerate the taint."
    explain_has $v workloadpriorityclass.value "value represents the integer value of this workloadPriorityClass."
    explain_has $v cohort.spec.resourceGroups.flavors.resources.lendingLimit "lendingLimit is the maximum amount of unused quota for the [flavor, resource]"
    explain_has $v admissioncheck.spec.controllerName "controllerName identifies the controller that processes the AdmissionCheck"
    explain_has $v workload.spec.queueName "queueName is the name of the LocalQueue the Workload is associated with."
    explain_has $v workload.spec.podSets.minCount "minCount is the minimum number of pods for the spec acceptable if the workload supports partial admission."
    # a built-in type below a CRD field: python3-kubernetes's pod template rows
    explain_has $v workload.spec.podSets.template.spec.containers.image "Docker image name."
    explain_has $v workload.status.admission.podSetAssignments.flavors "Flavors are the flavors assigned to the workload for each resource."
    explain_has $v workload.status.conditions.type "type of condition in CamelCase or in foo.example.com/CamelCase."
    explain_has $v topology.spec.levels.nodeLabel "nodeLabel indicates the name of the node label for a specific topology level."
    explain_has $v provisioningrequestconfig.spec.retryStrategy.backoffLimitCount "backoffLimitCount defines the maximum number of re-queuing retries."
    explain_has $v provisioningrequestconfig.spec.podSetUpdates.nodeSelector.key "key specifies the key for the NodeSelector."
    explain_has $v hardwareprofile.spec.scheduling.kueue.localQueueName "LocalQueueName specifies the name of the local queue to use for workload scheduling."
    explain_has $v hardwareprofile.spec.identifiers.resourceType "The type of identifier. could be \"CPU\", \"Memory\", or \"Accelerator\"."
    explain_has $v notebook.spec.template "Template describes the notebooks that will be created."
    explain_has $v notebook.spec.template.spec.containers.image "Docker image name."
    # KServe (its Go doc comments, the CRD's descriptions); containers take V1Container's rows
    explain_has $v inferenceservice.spec.predictor.minReplicas "Minimum number of replicas, defaults to 1 but can be set to 0 to enable scale-to-zero."
    explain_has $v inferenceservice.spec.predictor.model.modelFormat.version "Used in validating that a predictor is supported by a runtime."
    explain_has $v inferenceservice.spec.predictor.model.runtime "Specific ClusterServingRuntime/ServingRuntime name to use for deployment."
    explain_has $v servingruntime.spec.supportedModelFormats.autoSelect "Set to true to allow the ServingRuntime to be used for automatic model placement"
    explain_has $v servingruntime.spec.containers.image "Docker image name."
    explain_has $v clusterservingruntime.spec.protocolVersions "Supported protocol versions (i.e. v1 or v2 or grpc-v1 or grpc-v2)"
    explain_has $v llminferenceservice.spec.model.uri "URI of the model, specifying its location, e.g., hf://meta-llama/Llama-4-Scout-17B-16E-Instruct"
    explain_has $v llminferenceservice.spec.prefill.parallelism.tensor "Tensor parallelism size."
    explain_has $v llminferenceservice.spec.replicas "Number of replicas for the deployment."
    explain_has $v llminferenceservice.spec.template.containers.image "Docker image name."
    # the Gateway API Inference Extension's InferencePool
    explain_has $v inferencepool.spec.selector "Selector determines which Pods are members of this inference pool."
    explain_has $v inferencepool.spec.targetPorts.number "Number defines the port number to access the selected model server Pods."
    explain_has $v inferencepool.spec.endpointPickerRef.port "Port is required when the referent is a Kubernetes Service."
    explain_has $v inferencepool.spec.endpointPickerRef.failureMode "When unspecified, defaults to \"FailClose\"."
    # fatia.dev's own kinds: fatia's descriptions (third_party/crd-descriptions/fatia.dev.yaml)
    explain_has $v usagerecord.spec.resources "the sum of the Workload's status.admission.podSetAssignments[].resourceUsage"
    explain_has $v nodepool.spec.nvlinkIslands "GPU indices that share an NVLink fabric"
    explain_has $v nodepool.spec.taints.effect "Required. The effect of the taint on pods that do not tolerate the taint."
    explain_has $v gpusharingpolicy.spec.timeSlicing.resources.replicas "The number of replicas each device of the resource is advertised as"
    explain_has $v gpusharingpolicy.spec.mig.config "A mig-parted named config"
    explain_has $v gpusharingpolicy.spec.nodeSelector.matchLabels "matchLabels is a map of {key,value} pairs."
    explain_has $v schedulerconfig.spec.resources.transformations.strategy "Retain (default) keeps the input resource in the request; Replace drops it."
    explain_has $v schedulerconfig.spec.managedJobsNamespaceSelector.matchLabels "matchLabels is a map of {key,value} pairs."
    stop_fatiad
done
finish
