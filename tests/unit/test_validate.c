/*
 * tests/unit/test_validate.c: every validation rule of every kind, as a table of manifests and
 * the exact diagnostics each must produce (level, line, object, field path, message part).
 *
 * A case lists all the errors and warnings its manifest must give, no more and no fewer, so a
 * rule that starts to fire where it should not fails a case too.
 */
#include "base/compat.h"

/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "base/buf.h"
#include "base/json.h"
#include "demand/demand.h"
#include "model/kinds/kinds.h"
#include "model/objset.h"

struct expect {
    const char *level; /* "error" | "warning" */
    unsigned line;     /* 0 = do not check */
    const char *path;  /* NULL = no path */
    const char *msg;   /* substring */
};

struct vcase {
    const char *name;
    const char *yaml;
    struct expect want[6]; /* terminated by level NULL */
};

#define CQ_HEAD \
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: cq}\nspec:\n"
#define HWP_HEAD                                                            \
    "apiVersion: infrastructure.opendatahub.io/v1\nkind: HardwareProfile\n" \
    "metadata: {name: p, namespace: ns}\nspec:\n"
#define IP_HEAD                                                         \
    "apiVersion: inference.networking.k8s.io/v1\nkind: InferencePool\n" \
    "metadata: {name: pool, namespace: ns}\nspec:\n"
#define ISVC_HEAD                                                     \
    "apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\n" \
    "metadata: {name: llm, namespace: ns}\nspec:\n"
#define POD_HEAD "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec:\n"
#define WL_HEAD                                                                                \
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: w, namespace: ns}\n" \
    "spec:\n"
#define SC_HEAD \
    "apiVersion: fatia.dev/v1alpha1\nkind: SchedulerConfig\nmetadata: {name: default}\nspec:\n"
#define NP_HEAD "apiVersion: fatia.dev/v1alpha1\nkind: NodePool\nmetadata: {name: p}\nspec:\n"
#define GSP_HEAD \
    "apiVersion: fatia.dev/v1alpha1\nkind: GPUSharingPolicy\nmetadata: {name: g}\nspec:\n"
#define CTR_LINE   "  containers: [{name: c, image: x}]\n"
#define CTR_INLINE "containers: [{name: c, image: x}]"
#define HWP_IDS \
    "  identifiers: [{displayName: CPU, identifier: cpu, minCount: 1, defaultCount: 1}]\n"

static const struct vcase cases[] = {
    {"minimal objects are valid",
     "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n" CQ_HEAD "  {}\n",
     {{NULL}}},
    {"missing apiVersion",
     "kind: Namespace\nmetadata: {name: a}\n",
     {{"error", 1, "apiVersion", "required field is missing"}}},
    {"wrong apiVersion",
     "apiVersion: kueue.x-k8s.io/v1\nkind: ClusterQueue\nmetadata: {name: a}\n",
     {{"error", 1, "apiVersion",
       "ClusterQueue is served as kueue.x-k8s.io/v1beta2 or "
       "kueue.x-k8s.io/v1beta1"}}},
    {"unknown kind",
     "apiVersion: v1\nkind: Gadget\nmetadata: {name: a}\n",
     {{"error", 2, "kind", "unknown kind \"Gadget\""}}},
    {"missing name",
     "apiVersion: v1\nkind: Namespace\nmetadata: {labels: {a: b}}\n",
     {{"error", 3, "metadata.name", "required field is missing"}}},
    {"bad namespace name",
     "apiVersion: v1\nkind: Namespace\nmetadata: {name: Team_A}\n",
     {{"error", 3, "metadata.name", "invalid value \"Team_A\""}}},
    {"bad label key and value",
     "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n  labels:\n    \"-x\": y\n"
     "    ok: \"bad value!\"\n",
     {{"error", 6, "metadata.labels[-x]", "invalid key"},
      {"error", 7, "metadata.labels[ok]", "invalid value"}}},
    {"unknown field warns",
     CQ_HEAD "  cohortNme: x\n",
     {{"warning", 5, "spec.cohortNme", "unknown field"}}},
    {"bad quantity",
     CQ_HEAD "  cohortName: c\n  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
             "    - name: f\n      resources:\n      - {name: cpu, nominalQuota: 12x}\n",
     {{"error", 11, "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
       "invalid quantity \"12x\""}}},
    {"negative quota",
     CQ_HEAD "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
             "    - name: f\n      resources:\n      - {name: cpu, nominalQuota: -1}\n",
     {{"error", 10, "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
       "greater than or equal to 0"}}},
    {"enum value",
     CQ_HEAD "  queueingStrategy: Fast\n",
     {{"error", 5, "spec.queueingStrategy",
       "unsupported value \"Fast\": supported values: \"BestEffortFIFO\", \"StrictFIFO\""}}},
    {"wrong type, with the YAML boolean hint",
     CQ_HEAD "  cohortName: yes\n",
     {{"error", 5, "spec.cohortName", "quote the value"}}},
    {"flavor resources must follow coveredResources",
     CQ_HEAD "  resourceGroups:\n  - coveredResources: [cpu, memory]\n    flavors:\n"
             "    - name: f\n      resources:\n      - {name: memory, nominalQuota: 1}\n"
             "      - {name: cpu, nominalQuota: 1}\n",
     {{"error", 10, "spec.resourceGroups[0].flavors[0].resources[0].name", "must be \"cpu\""},
      {"error", 11, "spec.resourceGroups[0].flavors[0].resources[1].name", "must be \"memory\""}}},
    {"flavor lists too few resources",
     CQ_HEAD "  resourceGroups:\n  - coveredResources: [cpu, memory]\n    flavors:\n"
             "    - name: f\n      resources:\n      - {name: cpu, nominalQuota: 1}\n",
     {{"error", 9, "spec.resourceGroups[0].flavors[0].resources", "must list the 2"}}},
    {"resource in two groups, flavor in two groups",
     CQ_HEAD "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
             "    - name: f\n      resources: [{name: cpu, nominalQuota: 1}]\n"
             "  - coveredResources: [cpu]\n    flavors:\n"
             "    - name: f\n      resources: [{name: cpu, nominalQuota: 1}]\n",
     {{"error", 10, "spec.resourceGroups[1].coveredResources[0]", "already covered"},
      {"error", 12, "spec.resourceGroups[1].flavors[0].name", "already used"}}},
    {"limits need a cohort",
     CQ_HEAD "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
             "    - name: f\n      resources: [{name: cpu, nominalQuota: 4, borrowingLimit: 1}]\n",
     {{"error", 9, "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit",
       "must not be set when cohortName is empty"}}},
    {"lendingLimit above nominal",
     CQ_HEAD "  cohortName: c\n  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
             "    - name: f\n      resources: [{name: cpu, nominalQuota: 4, lendingLimit: 5}]\n",
     {{"error", 10, "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit",
       "less than or equal to nominalQuota"}}},
    {"borrowWithinCohort needs reclaim",
     CQ_HEAD "  preemption:\n    borrowWithinCohort: {policy: LowerPriority}\n",
     {{"error", 6, "spec.preemption.borrowWithinCohort.policy",
       "must be Never when reclaimWithinCohort is Never"}}},
    {"fungibility preference needs TryNextFlavor",
     CQ_HEAD "  flavorFungibility: {preference: PreemptionOverBorrowing}\n",
     {{"error", 5, "spec.flavorFungibility.preference", "may only be set"}}},
    {"duplicate flavor in a list",
     CQ_HEAD "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
             "    - {name: f, resources: [{name: cpu, nominalQuota: 1}]}\n"
             "    - {name: f, resources: [{name: cpu, nominalQuota: 1}]}\n",
     {{"error", 9, "spec.resourceGroups[0].flavors[1].name", "duplicate value \"f\""}}},
    {"cohort limits need a parent",
     "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: c}\nspec:\n"
     "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
     "    - name: f\n      resources: [{name: cpu, nominalQuota: 4, lendingLimit: 1}]\n",
     {{"error", 9, "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit",
       "must not be set when parentName is empty"}}},
    {"localqueue needs clusterQueue",
     "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: q, namespace: nb}\n"
     "spec: {}\n",
     {{"error", 4, "spec.clusterQueue", "required field is missing"}}},
    {"priority class needs value",
     "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: p}\n"
     "description: x\n",
     {{"error", 1, "value", "required field is missing"}}},
    {"flavor taint effect",
     "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\nspec:\n"
     "  nodeTaints: [{key: a, effect: Sometimes}]\n",
     {{"error", 5, "spec.nodeTaints[0].effect", "unsupported value \"Sometimes\""}}},
    {"toleration rules",
     "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\nspec:\n"
     "  tolerations:\n  - {operator: Equal, value: x}\n  - {key: k, operator: Exists, value: v}\n"
     "  - {key: k, effect: NoSchedule, tolerationSeconds: 5}\n",
     {{"error", 6, "spec.tolerations[0].operator", "must be Exists when key is empty"},
      {"error", 7, "spec.tolerations[1].value", "must be empty when operator is Exists"},
      {"error", 8, "spec.tolerations[2].tolerationSeconds",
       "only be set when effect is NoExecute"}}},
    {"selector requirement rules",
     CQ_HEAD "  namespaceSelector:\n    matchExpressions:\n    - {key: a, operator: In}\n"
             "    - {key: b, operator: Exists, values: [x]}\n    - {key: c, operator: Near}\n",
     {{"error", 7, "spec.namespaceSelector.matchExpressions[0].values",
       "must be specified when operator is In"},
      {"error", 8, "spec.namespaceSelector.matchExpressions[1].values",
       "may not be specified when operator is Exists"},
      {"error", 9, "spec.namespaceSelector.matchExpressions[2].operator",
       "unsupported value \"Near\""}}},
    {"v1beta1 cluster queue converts",
     "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq}\nspec:\n"
     "  cohort: research\n  flavorFungibility: {whenCanBorrow: Borrow}\n",
     {{"warning", 1, "apiVersion", "v1beta1 is deprecated"}}},
    {"pod needs containers",
     POD_HEAD "  restartPolicy: Never\n",
     {{"error", 4, "spec.containers", "required field is missing"}}},
    {"pod container names",
     POD_HEAD "  containers: [{name: a}, {name: a}, {name: B_}]\n",
     {{"error", 5, "spec.containers[1].name", "duplicate value \"a\""},
      {"error", 5, "spec.containers[2].name", "invalid value \"B_\""}}},
    {"pod extended resources",
     POD_HEAD "  containers:\n  - name: c\n    resources:\n"
              "      requests: {nvidia.com/gpu: 0.5, cpu: \"2\", fatia.dev/gpu-milli: 500}\n"
              "      limits: {cpu: 1, fatia.dev/gpu-milli: 400}\n",
     {{"error", 8, "spec.containers[0].resources.requests[nvidia.com/gpu]", "whole number"},
      {"error", 8, "spec.containers[0].resources.requests[cpu]",
       "less than or equal to the cpu limit"},
      {"error", 8, "spec.containers[0].resources.requests[fatia.dev/gpu-milli]",
       "equal to the limit"}}},
    {"pod claim source",
     POD_HEAD CTR_LINE
     "  resourceClaims:\n  - {name: a, resourceClaimName: a, resourceClaimTemplateName: b}\n",
     {{"error", 7, "spec.resourceClaims[0]", "exactly one of"}}},
    {"container claim must be a pod claim",
     POD_HEAD "  containers:\n  - name: c\n    resources: {claims: [{name: gpu}]}\n"
              "  resourceClaims:\n  - {name: other, resourceClaimName: a}\n",
     {{"error", 7, "spec.containers[0].resources.claims[0].name", "not one of the pod's"}}},
    {"job restart policy",
     "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: nb}\nspec:\n"
     "  template:\n    spec:\n      restartPolicy: Always\n      containers: [{name: c}]\n",
     {{"error", 7, "spec.template.spec.restartPolicy", "must restart Never or OnFailure"}}},
    {"job name too long for its label",
     "apiVersion: batch/v1\nkind: Job\nmetadata: {name: "
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, namespace: nb}\n"
     "spec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: c}]\n",
     {{"error", 3, "metadata.name", "no more than 63"}}},
    {"workload minCount",
     WL_HEAD "  podSets:\n  - {name: a, count: 2, minCount: 3, template: {spec: {" CTR_INLINE
             "}}}\n"
             "  - {name: b, count: 2, minCount: 1, template: {spec: {" CTR_INLINE "}}}\n",
     {{"error", 6, "spec.podSets[0].minCount", "less than or equal to count"},
      {"error", 7, "spec.podSets[1].minCount", "at most one podSet"}}},
    {"workload priority class ref",
     WL_HEAD "  priorityClassRef: {group: kueue.x-k8s.io, kind: PodPriority, name: x}\n"
             "  podSets: [{template: {spec: {" CTR_INLINE "}}}]\n",
     {{"error", 5, "spec.priorityClassRef.kind", "unsupported value \"PodPriority\""}}},
    {"hardware profile counts",
     HWP_HEAD "  identifiers:\n  - {displayName: CPU, identifier: cpu, minCount: 4, defaultCount: "
              "2, maxCount: 8}\n"
              "  - {displayName: GPU, identifier: nvidia.com/gpu, minCount: 1, defaultCount: 3, "
              "maxCount: 2}\n"
              "  - {displayName: X, identifier: cpu, minCount: 1, defaultCount: 1}\n",
     {{"error", 6, "spec.identifiers[0].defaultCount", "greater than or equal to minCount"},
      {"error", 7, "spec.identifiers[1].defaultCount", "less than or equal to maxCount"},
      {"error", 8, "spec.identifiers[2].identifier", "duplicate value \"cpu\""}}},
    {"hardware profile scheduling",
     HWP_HEAD HWP_IDS "  scheduling: {type: Queue, node: {nodeSelector: {a: b}}}\n",
     {{"error", 6, "spec.scheduling.kueue", "required when type is Queue"},
      {"error", 6, "spec.scheduling.node", "must not be set when type is Queue"}}},
    {"hardware profile annotations",
     "apiVersion: infrastructure.opendatahub.io/v1\nkind: HardwareProfile\nmetadata:\n"
     "  name: p\n  namespace: ns\n  annotations:\n    opendatahub.io/disabled: maybe\n"
     "    opendatahub.io/dashboard-feature-visibility: workbench\nspec:\n" HWP_IDS,
     {{"error", 7, "metadata.annotations[opendatahub.io/disabled]", "\"true\" or \"false\""},
      {"error", 8, "metadata.annotations[opendatahub.io/dashboard-feature-visibility]",
       "JSON array"}}},
    {"hardware profile without cpu or memory warns",
     HWP_HEAD "  identifiers: [{displayName: G, identifier: nvidia.com/gpu, minCount: 1, "
              "defaultCount: 1}]\n",
     {{"warning", 5, "spec.identifiers", "neither a cpu nor a memory"}}},
    {"v1alpha1 hardware profile warns",
     "apiVersion: infrastructure.opendatahub.io/v1alpha1\nkind: HardwareProfile\n"
     "metadata: {name: p, namespace: ns}\nspec:\n" HWP_IDS,
     {{"warning", 1, "apiVersion", "deprecated"}}},
    {"inference pool defaults and a valid picker",
     IP_HEAD "  selector: {matchLabels: {app: llm}}\n  targetPorts: [{number: 8000}]\n"
             "  endpointPickerRef: {name: epp, port: {number: 9002}}\n",
     {{NULL}}},
    {"inference service (kserve.c)",
     ISVC_HEAD
     "  predictor:\n    minReplicas: 1\n    maxReplicas: 3\n    scaleMetric: concurrency\n"
     "    scaleTarget: 4\n    serviceAccountName: sa\n"
     "    model: {modelFormat: {name: vLLM}, storageUri: hf://x/y, runtime: vllm-rt,\n"
     "            resources: {limits: {nvidia.com/gpu: 1}}}\n"
     "---\napiVersion: serving.kserve.io/v1alpha1\nkind: ServingRuntime\n"
     "metadata: {name: vllm-rt, namespace: ns}\n"
     "spec: {supportedModelFormats: [{name: vLLM, autoSelect: true}], " CTR_INLINE "}\n"
     "---\napiVersion: serving.kserve.io/v1alpha1\nkind: ClusterServingRuntime\n"
     "metadata: {name: vllm-rt}\nspec: {" CTR_INLINE "}\n",
     {{NULL}}},
    {"inference service replicas, metric, model",
     ISVC_HEAD "  predictor:\n    minReplicas: 3\n    maxReplicas: 2\n    scaleMetric: gpu\n"
               "    scaleTarget: 0\n    model: {modelFormat: {}}\n",
     {{"error", 10, "spec.predictor.model.modelFormat.name", "required field is missing"},
      {"error", 8, "spec.predictor.scaleMetric", "gpu"},
      {"error", 9, "spec.predictor.scaleTarget", "greater than or equal to 1"},
      {"error", 7, "spec.predictor.maxReplicas", "MaxReplicas cannot be less than MinReplicas"}}},
    {"inference service framework shortcut",
     ISVC_HEAD "  predictor: {sklearn: {storageUri: gs://x}}\n",
     {{"error", 5, "spec.predictor.sklearn", "use predictor.model"}}},
    {"inference pool ports and selector",
     IP_HEAD "  selector: {matchLabels: {\"-bad\": x}}\n"
             "  targetPorts: [{number: 8000}, {number: 70000}, {number: 8000}]\n",
     {{"error", 5, "spec.selector.matchLabels[-bad]", "invalid key"},
      {"error", 6, "spec.targetPorts[1].number", "must be less than or equal to 65535"},
      {"error", 6, "spec.targetPorts[2].number", "port number must be unique"}}},
    {"inference pool protocol and picker",
     IP_HEAD "  selector: {matchLabels: {app: x}}\n  targetPorts: [{number: 1}]\n"
             "  appProtocol: grpc\n"
             "  endpointPickerRef: {name: epp, failureMode: Maybe}\n",
     {{"error", 7, "spec.appProtocol", "unsupported value"},
      {"error", 8, "spec.endpointPickerRef.failureMode", "unsupported value"},
      {"error", 8, "spec.endpointPickerRef.port", "port is required when kind is 'Service'"}}},
    {"inference pool needs a selector and ports",
     IP_HEAD "  targetPorts: []\n",
     {{"error", 4, "spec.selector", "required field is missing"},
      {"error", 5, "spec.targetPorts", "at least 1"}}},
    {"duplicate object",
     "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n"
     "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n",
     {{"error", 5, "metadata.name", "also defined at t.yaml:1"}}},
    {"duplicate of an invalid object still found",
     CQ_HEAD "  queueingStrategy: Nope\n---\n" CQ_HEAD "  {}\n",
     {{"error", 5, "spec.queueingStrategy", "unsupported value"},
      {"error", 7, "metadata.name", "also defined at t.yaml:1"}}},
    {"scheduler config: every switch",
     SC_HEAD
     "  fairSharing: {preemptionStrategies: [LessThanOrEqualToFinalShare, "
     "LessThanInitialShare]}\n"
     "  admissionFairSharing: {usageHalfLifeTime: 168h, resourceWeights: "
     "{nvidia.com/gpu: 2}}\n"
     "  partialAdmission: false\n"
     "  resources:\n    quotaCheckStrategy: IgnoreUndeclared\n"
     "    transformations: [{input: nvidia.com/mig-1g.18gb, strategy: Replace, outputs: "
     "{fatia.dev/gpu-equivalent: 143m}}]\n"
     "    deviceClassMappings: [{name: fatia.dev/gpu, deviceClassNames: [gpu.nvidia.com]}]\n",
     {{NULL}}},
    {"scheduler config: strategy order",
     SC_HEAD "  fairSharing: {preemptionStrategies: [LessThanInitialShare, "
             "LessThanOrEqualToFinalShare]}\n",
     {{"error", 5, "spec.fairSharing.preemptionStrategies",
       "must be [LessThanOrEqualToFinalShare]"}}},
    {"scheduler config: unknown strategy",
     SC_HEAD "  fairSharing: {preemptionStrategies: [Fairest]}\n",
     {{"error", 5, "spec.fairSharing.preemptionStrategies[0]", "unsupported value"}}},
    {"scheduler config: durations",
     SC_HEAD "  admissionFairSharing: {usageHalfLifeTime: soon, usageSamplingInterval: -5m}\n",
     {{"error", 5, "spec.admissionFairSharing.usageHalfLifeTime", "invalid duration"},
      {"error", 5, "spec.admissionFairSharing.usageSamplingInterval", "must not be negative"}}},
    {"scheduler config: half-life is required",
     SC_HEAD "  admissionFairSharing: {usageSamplingInterval: 1m}\n",
     {{"error", 5, "spec.admissionFairSharing.usageHalfLifeTime", "required"}}},
    {"scheduler config: negative resource weight",
     SC_HEAD "  admissionFairSharing: {usageHalfLifeTime: 1h, resourceWeights: {cpu: -1}}\n",
     {{"error", 5, "spec.admissionFairSharing.resourceWeights[cpu]", "must not be negative"}}},
    {"scheduler config: quota check strategy",
     SC_HEAD "  resources: {quotaCheckStrategy: Sometimes}\n",
     {{"error", 5, "spec.resources.quotaCheckStrategy", "unsupported value"}}},
    {"scheduler config: transformation of itself and twice",
     SC_HEAD "  resources:\n    transformations:\n    - {input: a.io/x, outputs: {a.io/x: 2}}\n"
             "    - {input: a.io/x, strategy: Keep}\n",
     {{"error", 7, "spec.resources.transformations[0].outputs[a.io/x]", "input resource"},
      {"error", 8, "spec.resources.transformations[1].strategy", "unsupported value"},
      {"error", 8, "spec.resources.transformations[1].input", "duplicate"}}},
    {"scheduler config: a device class mapped twice",
     SC_HEAD "  resources:\n    deviceClassMappings:\n"
             "    - {name: a.io/gpu, deviceClassNames: [gpu.nvidia.com]}\n"
             "    - {name: a.io/mig, deviceClassNames: [mig.nvidia.com, gpu.nvidia.com]}\n",
     {{"error", 8, "spec.resources.deviceClassMappings[1].deviceClassNames[1]",
       "already mapped by [0]"}}},
    {"scheduler config: device class names required",
     SC_HEAD "  resources: {deviceClassMappings: [{name: a.io/gpu, deviceClassNames: []}]}\n",
     {{"error", 5, "spec.resources.deviceClassMappings[0].deviceClassNames", "at least 1"}}},
    {"same name in two namespaces is fine",
     "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: q, namespace: a}\n"
     "spec: {clusterQueue: x}\n---\n"
     "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: q, namespace: b}\n"
     "spec: {clusterQueue: x}\n",
     {{NULL}}},
    /* fatia.dev NodePool and GPUSharingPolicy (model/kinds/fatia_supply.c) */
    {"nodepool and policies are valid",
     NP_HEAD "  count: 2\n  gpus: [{product: H200, count: 8}]\n"
             "  nvlinkIslands: [[0, 1, 2, 3], [4, 5, 6, 7]]\n---\n" GSP_HEAD
             "  gpuIndices: [0, 1]\n  timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: "
             "4}]}\n---\n"
             "apiVersion: fatia.dev/v1alpha1\nkind: GPUSharingPolicy\nmetadata: {name: m}\n"
             "spec:\n  mig: {config: all-balanced}\n  timeSlicing: {resources: [{name: "
             "nvidia.com/mig-1g.18gb, replicas: 2}]}\n",
     {{NULL}}},
    {"nodepool islands name GPUs that exist, once",
     NP_HEAD "  gpus: [{product: H200, count: 4}]\n  nvlinkIslands: [[0, 1], [1, 4]]\n",
     {{"error", 6, "spec.nvlinkIslands[1][0]", "GPU 1 is already in nvlinkIslands[0]"},
      {"error", 6, "spec.nvlinkIslands[1][1]", "GPU index 4 does not exist"}}},
    {"nodepool needs a spec, positive counts and a product",
     NP_HEAD "  count: 0\n  gpus: [{count: 2}]\n",
     {{"error", 5, "spec.count", "greater than or equal to 1"},
      {"error", 6, "spec.gpus[0].product", "required field is missing"}}},
    {"policy replicas >= 2 and one strategy",
     GSP_HEAD "  timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 1}]}\n"
              "  fractional: {}\n",
     {{"error", 5, "spec.timeSlicing.resources[0].replicas", "number of replicas must be >= 2"},
      {"error", 6, "spec.fractional", "exclude each other"}}},
    {"policy: MPS on MIG, and no strategy at all",
     GSP_HEAD "  mig: {config: all-balanced}\n  mps: {resources: [{name: nvidia.com/gpu, "
              "replicas: 2}]}\n---\n"
              "apiVersion: fatia.dev/v1alpha1\nkind: GPUSharingPolicy\nmetadata: {name: q}\n"
              "spec: {gpuIndices: [0]}\n",
     {{"error", 6, "spec.mps", "MPS on MIG is not supported"},
      {"error", 11, "spec", "set one of timeSlicing, mps, mig and fractional"}}},
    {"policy mig needs exactly one layout and a known strategy",
     GSP_HEAD "  mig: {strategy: none, config: all-balanced, mig-devices: {1g.18gb: 1}}\n",
     {{"error", 5, "spec.mig.strategy", "unsupported value \"none\""},
      {"error", 5, "spec.mig", "set exactly one of config"}}},
    {"policy gpuIndices unique",
     GSP_HEAD "  gpuIndices: [3, 3]\n  fractional: {}\n",
     {{"error", 5, "spec.gpuIndices[1]", "duplicate GPU index 3"}}},
};

static void run_case(const struct vcase *c)
{
    struct fatia_objset set;
    struct fatia_diag diag;
    struct fatia_buf got = FATIA_BUF_INIT;
    size_t n_want = 0;
    bool ok = true;

    fatia_objset_init(&set);
    fatia_diag_init(&diag);
    assert_int_equal(fatia_docset_load_buf(&set.docs, "t.yaml", c->yaml, strlen(c->yaml), &diag),
                     0);
    for (size_t i = 0; i < set.docs.n; i++) {
        const struct fatia_doc *d = &set.docs.docs[i];
        struct fatia_decode_opts o = {.file = d->file, .map = set.docs.map, .pos = d->pos};
        struct fatia_object *obj;
        int r = fatia_object_decode(d->root, &o, &fatia_demand_checks, &diag, &obj);
        if (r == 0 && obj->warning)
            fatia_diag_add(&diag, FATIA_DIAG_WARNING, d->file, d->pos.line, d->pos.col, obj->id,
                           "apiVersion", "%s", obj->warning);
        fatia_objset_check_duplicate(&set, d, &diag);
        if (r == 0)
            fatia_object_free(obj);
    }
    for (const struct expect *w = c->want; w->level; w++)
        n_want++;
    for (size_t i = 0; i < diag.n; i++) {
        fatia_diag_format(&diag.v[i], &got);
        fatia_buf_putc(&got, '\n');
    }
    if (diag.n != n_want)
        ok = false;
    for (size_t i = 0; ok && i < n_want; i++) {
        const struct expect *w = &c->want[i];
        const struct fatia_diag_entry *e = &diag.v[i];
        bool level_ok = !strcmp(w->level, "error") == (e->level == FATIA_DIAG_ERROR);
        bool path_ok = w->path ? e->path && !strcmp(e->path, w->path) : !e->path;
        if (!level_ok || (w->line && w->line != e->line) || !path_ok || !strstr(e->msg, w->msg))
            ok = false;
    }
    if (!ok) {
        struct fatia_buf want = FATIA_BUF_INIT;
        for (const struct expect *w = c->want; w->level; w++)
            fatia_buf_printf(&want, "%s line %u %s: ...%s...\n", w->level, w->line,
                             w->path ? w->path : "-", w->msg);
        fail_msg("case '%s'\nwant:\n%sgot:\n%s", c->name, want.p, got.p);
    }
    fatia_buf_release(&got);
    fatia_diag_release(&diag);
    fatia_objset_release(&set);
}

static void test_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(cases); i++)
        run_case(&cases[i]);
}

/* Defaults as upstream documents them. */
static void test_defaults(void **state)
{
    static const char text[] =
        CQ_HEAD "  {}\n---\n" WL_HEAD "  podSets: [{template: {spec: {" CTR_INLINE "}}}]\n"
                "---\napiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: nb}\nspec:\n"
                "  template: {spec: {restartPolicy: Never, " CTR_INLINE "}}\n";
    struct fatia_objset set;
    struct fatia_diag diag;
    struct fatia_object *cq, *wl, *job;
    (void)state;

    fatia_objset_init(&set);
    fatia_diag_init(&diag);
    assert_int_equal(fatia_docset_load_buf(&set.docs, "d.yaml", text, strlen(text), &diag), 0);
    for (size_t i = 0; i < set.docs.n; i++) {
        struct fatia_decode_opts o = {.file = "d.yaml", .map = set.docs.map};
        struct fatia_object *obj;
        assert_int_equal(
            fatia_object_decode(set.docs.docs[i].root, &o, &fatia_demand_checks, &diag, &obj), 0);
        assert_int_equal(fatia_objset_add(&set, obj), 0);
    }
    cq = fatia_objset_get(&set, "ClusterQueue", NULL, "cq");
    wl = fatia_objset_get(&set, "Workload", "ns", "w");
    job = fatia_objset_get(&set, "Job", "nb", "j");
    assert_string_equal(json_string_value(fatia_json_path(cq->obj, "spec.queueingStrategy")),
                        "BestEffortFIFO");
    assert_string_equal(
        json_string_value(fatia_json_path(cq->obj, "spec.flavorFungibility.whenCanBorrow")),
        "MayStopSearch");
    assert_string_equal(
        json_string_value(fatia_json_path(cq->obj, "spec.flavorFungibility.whenCanPreempt")),
        "TryNextFlavor");
    assert_string_equal(
        json_string_value(fatia_json_path(cq->obj, "spec.preemption.withinClusterQueue")), "Never");
    assert_string_equal(
        json_string_value(fatia_json_path(cq->obj, "spec.preemption.borrowWithinCohort.policy")),
        "Never");
    assert_string_equal(json_string_value(fatia_json_path(cq->obj, "spec.stopPolicy")), "None");
    assert_null(fatia_json_path(cq->obj, "spec.namespaceSelector"));
    assert_string_equal(json_string_value(fatia_json_path(wl->obj, "spec.podSets[0].name")),
                        "main");
    assert_int_equal(json_integer_value(fatia_json_path(wl->obj, "spec.podSets[0].count")), 1);
    assert_true(json_is_true(fatia_json_path(wl->obj, "spec.active")));
    assert_int_equal(json_integer_value(fatia_json_path(job->obj, "spec.backoffLimit")), 6);
    assert_int_equal(json_integer_value(fatia_json_path(job->obj, "spec.parallelism")), 1);
    assert_true(json_is_false(fatia_json_path(job->obj, "spec.suspend")));
    fatia_diag_release(&diag);
    fatia_objset_release(&set);
}

static void test_v1beta1_conversion(void **state)
{
    static const char text[] =
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq}\nspec:\n"
        "  cohort: research\n  admissionChecks: [prov]\n"
        "  flavorFungibility: {whenCanBorrow: Borrow, whenCanPreempt: Preempt}\n---\n"
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: Workload\nmetadata: {name: w, namespace: nb}\n"
        "spec:\n  priorityClassName: high\n  priorityClassSource: "
        "kueue.x-k8s.io/workloadpriorityclass\n"
        "  priority: 7\n  podSets: [{name: main, count: 1, template: {spec: {" CTR_INLINE "}}}]\n";
    struct fatia_objset set;
    struct fatia_diag diag;
    char *paths[1];
    struct fatia_object *cq, *wl;
    FILE *f;
    (void)state;

    f = fopen("/tmp/fatia-test-v1beta1.yaml", "w");
    fputs(text, f);
    fclose(f);
    paths[0] = (char *)"/tmp/fatia-test-v1beta1.yaml";
    fatia_objset_init(&set);
    fatia_diag_init(&diag);
    assert_int_equal(fatia_objset_load(&set, paths, 1, false, &fatia_demand_checks, &diag), 0);
    cq = fatia_objset_get(&set, "ClusterQueue", NULL, "cq");
    wl = fatia_objset_get(&set, "Workload", "nb", "w");
    assert_string_equal(json_string_value(fatia_json_path(cq->obj, "apiVersion")),
                        "kueue.x-k8s.io/v1beta2");
    assert_string_equal(json_string_value(fatia_json_path(cq->obj, "spec.cohortName")), "research");
    assert_null(fatia_json_path(cq->obj, "spec.cohort"));
    assert_string_equal(json_string_value(fatia_json_path(
                            cq->obj, "spec.admissionChecksStrategy.admissionChecks[0].name")),
                        "prov");
    assert_string_equal(
        json_string_value(fatia_json_path(cq->obj, "spec.flavorFungibility.whenCanPreempt")),
        "MayStopSearch");
    assert_string_equal(json_string_value(fatia_json_path(wl->obj, "spec.priorityClassRef.name")),
                        "high");
    assert_string_equal(json_string_value(fatia_json_path(wl->obj, "spec.priorityClassRef.kind")),
                        "WorkloadPriorityClass");
    assert_null(fatia_json_path(wl->obj, "spec.priorityClassName"));
    /* two deprecation warnings, no errors */
    assert_int_equal(diag.n_errors, 0);
    assert_int_equal(diag.n, 2);
    fatia_diag_release(&diag);
    fatia_objset_release(&set);
    remove("/tmp/fatia-test-v1beta1.yaml");
}

static void test_examples_valid(void **state)
{
    struct fatia_objset set;
    struct fatia_diag diag;
    char *paths[] = {(char *)"examples"};
    (void)state;

    fatia_objset_init(&set);
    fatia_diag_init(&diag);
    if (fatia_objset_load(&set, paths, 1, false, &fatia_demand_checks, &diag) != 0 || diag.n) {
        fatia_diag_print(&diag, stderr);
        fail_msg("examples/ must validate without errors or warnings");
    }
    assert_true(set.n >= 12);
    fatia_diag_release(&diag);
    fatia_objset_release(&set);
}

/* printer cells computed as kubectl's built-in printers do (model/kinds/printers.c) */
static void expect_cell(json_t *(*f)(const json_t *, int64_t), const char *obj, int64_t now,
                        const char *want)
{
    json_t *o = json_loads(obj, 0, NULL), *c;

    assert_non_null(o);
    c = f(o, now);
    if (!want)
        assert_null(c);
    else
        assert_string_equal(json_string_value(c), want);
    json_decref(c);
    json_decref(o);
}

static void test_printers(void **state)
{
    (void)state;
    expect_cell(fatia_print_node_status,
                "{\"status\":{\"conditions\":[{\"type\":\"Ready\","
                "\"status\":\"True\"}]}}",
                0, "Ready");
    expect_cell(fatia_print_node_status,
                "{\"spec\":{\"unschedulable\":true},\"status\":"
                "{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}}",
                0, "NotReady,SchedulingDisabled");
    expect_cell(fatia_print_node_status, "{}", 0, "Unknown");
    expect_cell(fatia_print_pod_ready,
                "{\"spec\":{\"containers\":[{},{}]},\"status\":"
                "{\"containerStatuses\":[{\"ready\":true},{\"ready\":false}]}}",
                0, "1/2");
    expect_cell(fatia_print_pod_status, "{\"status\":{\"phase\":\"Running\"}}", 0, "Running");
    expect_cell(fatia_print_pod_status,
                "{\"spec\":{\"schedulingGates\":[{\"name\":\"g\"}]},"
                "\"status\":{\"phase\":\"Pending\"}}",
                0, "SchedulingGated");
    expect_cell(fatia_print_pod_status,
                "{\"status\":{\"phase\":\"Failed\",\"containerStatuses\":"
                "[{\"state\":{\"terminated\":{\"exitCode\":3}}}]}}",
                0, "ExitCode:3");
    expect_cell(fatia_print_pod_status,
                "{\"status\":{\"phase\":\"Succeeded\",\"containerStatuses\":"
                "[{\"state\":{\"terminated\":{\"exitCode\":0,\"reason\":\"Completed\"}}}]}}",
                0, "Completed");
    expect_cell(fatia_print_pod_status,
                "{\"metadata\":{\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"},"
                "\"status\":{\"phase\":\"Running\"}}",
                0, "Terminating");
    expect_cell(fatia_print_job_completions,
                "{\"spec\":{\"completions\":4},\"status\":"
                "{\"succeeded\":3}}",
                0, "3/4");
    expect_cell(fatia_print_job_completions, "{\"spec\":{\"parallelism\":2}}", 0, "0/1 of 2");
    expect_cell(fatia_print_job_status, "{\"spec\":{\"suspend\":true}}", 0, "Suspended");
    expect_cell(fatia_print_job_status,
                "{\"status\":{\"conditions\":[{\"type\":\"Complete\","
                "\"status\":\"True\"}]}}",
                0, "Complete");
    /* 2026-01-01T00:00:00Z = 1767225600 s */
    expect_cell(fatia_print_job_duration, "{\"status\":{\"startTime\":\"2026-01-01T00:00:00Z\"}}",
                (1767225600 + 125) * INT64_C(1000000), "2m5s");
    expect_cell(fatia_print_job_duration,
                "{\"status\":{\"startTime\":\"2026-01-01T00:00:00Z\","
                "\"completionTime\":\"2026-01-01T00:00:42Z\"}}",
                INT64_MAX, "42s");
    expect_cell(fatia_print_job_duration, "{}", 0, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_v1beta1_conversion),
        cmocka_unit_test(test_examples_valid),
        cmocka_unit_test(test_printers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
