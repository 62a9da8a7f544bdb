/*
 * controller/inferenceservice.c: KServe's InferenceService (serving.kserve.io/v1beta1) in raw
 * deployment mode, as RHOAI's single-model serving uses it: one InferenceService becomes
 *
 *   Deployment  <name>-predictor   pods running `fatia engine-sim` (the model server), with the
 *                                  InferenceService's Kueue queue label and hardware-profile
 *                                  annotations, so that each pod goes through profile injection
 *                                  and Kueue admission like any workload (webhooks.c, workload.c);
 *   InferencePool <name>           (inference.networking.k8s.io/v1) selecting those pods, which the
 *                                  gateway follows (gateway/kubepool.c): a pod joins when Ready;
 *
 * both owned by the InferenceService (the garbage collector deletes them with it), and the
 * InferenceService's status as KServe reports it: url, address.url, observedGeneration,
 * conditions PredictorReady and Ready (True once the Deployment is Available with minReplicas
 * ready replicas, at least one), modelStatus {transitionStatus, states {activeModelState, targetModelState},
 * copies.totalCopies}.
 *
 * The model server's container (enginepod.c: the image fatia.dev/engine-sim:1, the same spec for
 * containers and processes): fatia engine-sim --listen $(POD_IP):<port> --reuse-port --model <shape> --served-model-name <isvc name> [--slice P]
 * [--gpus N] then predictor.model.args. The shape is storageUri's hf:// id (engine-sim's
 * models.yaml knows Hugging Face ids), else the annotation serving.fatia.io/model, else
 * llama-3.1-8b. The slice comes from the resources: nvidia.com/mig-<profile> gives --slice
 * <profile>, nvidia.com/gpu: N > 1 gives --gpus N. engine-sim sizes itself with the serving
 * planner (gateway/plan.c) for that slice, the same computation `fatia serve plan` prints
 * (--gpu-memory-utilization, --max-model-len, --max-num-seqs): the planner lives in the gateway
 * layer, above this one, so the controller names the slice and the process plans for it.
 *
 * In containers each replica has its own address on its namespace's bridge and the pool has one
 * endpoint per replica. Processes share the host's network (podIP 127.0.0.1, docs/agent.md), so
 * there replicas cannot each have a port of their own under one pod template: they share one
 * port through SO_REUSEPORT (--reuse-port) and the kernel spreads connections between them. The
 * port: annotation serving.fatia.io/port, else 20000 + FNV-1a("ns/name") mod 20000.
 *
 * predictor.model.runtime is checked as KServe does (a ServingRuntime of the namespace, else a
 * ClusterServingRuntime; missing: RuntimeNotRecognized, spec.disabled: RuntimeDisabled, the
 * model's format not in supportedModelFormats: NoSupportingRuntime): such a spec deploys nothing
 * and says why in PredictorReady and modelStatus.lastFailureInfo. Without predictor.model.runtime
 * a runtime is chosen by modelFormat as KServe does (auto_runtime: autoSelect, the namespace's
 * before the cluster's). A runtime whose spec.containers[0] names an image is run as KServe runs
 * it (isvc_runtime.c: its container with predictor.model's container fields merged over it, the
 * {{.Name}} templates expanded, the pool on its first containerPort, else 8080): the pod keeps
 * the queue label and profile annotations, and gets none of engine-sim's flags (--slice/--gpus,
 * --listen, PATH). A runtime without an image, or none, gives the built-in engine-sim container
 * below. A predictor pod that cannot start (ErrImagePull, ErrImageNeverPull, CrashLoopBackOff,
 * ...) puts its reason in PredictorReady (pod_failure). docs/serving.md says how a vLLM image
 * maps onto this (the image itself unverified here).
 *
 * Replicas: predictor.minReplicas (KServe's default 1) when not autoscaled. With maxReplicas >
 * minReplicas or minReplicas 0 the autoscaler (isvc_scale.c, its decision autoscale.c: Knative's
 * KPA on concurrency, queue depth or KV-cache use) sets the count within the bounds; the status
 * then carries autoscaling {desiredReplicas, readyReplicas, pendingAdmission} and the condition
 * ReplicasAdmitted (False, PendingAdmission, while replicas wait in Kueue for quota). Scaled to
 * zero (minReplicas 0, Deployment at 0) is Ready with reason ScaledToZero: the gateway holds a
 * request and asks for a replica (serving.fatia.io/demand).
 *
 * Change detection: the Deployment carries serving.fatia.io/spec-hash, the FNV-1a of the desired
 * replicas and template; a differing hash rewrites spec.replicas and spec.template (the server's
 * defaulting of the stored template would make a tree comparison never settle). A Deployment or
 * pool of that name not owned by the InferenceService is left alone (status says so).
 *
 * Rejected: a Service per InferenceService (the gateway routes to pool members directly, as the
 * GIE gateway does); computing the vLLM flags here (the layer rule above).
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "controller/ctl_internal.h"
#include "controller/enginepod.h"
#include "controller/isvc_runtime.h"
#include "controller/isvc_scale.h"

#define COMPONENT     "inferenceservice-controller"
#define ISVC_LABEL    "serving.kserve.io/inferenceservice"
#define HASH_ANN      "serving.fatia.io/spec-hash"
#define PORT_ANN      "serving.fatia.io/port"
#define MODEL_ANN     "serving.fatia.io/model"
#define QUEUE_LABEL   "kueue.x-k8s.io/queue-name"
#define PROFILE_ANN   "opendatahub.io/hardware-profile-name"
#define PROFILE_NS    "opendatahub.io/hardware-profile-namespace"
#define DEFAULT_SHAPE "llama-3.1-8b"

struct isvc_ctl {
    struct ctl *ctl;
    struct wq *q;
    struct informer *isvcs, *deploys, *pools, *runtimes, *cluster_runtimes, *pods;
    struct isvc_scaler *scaler; /* isvc_scale.c */
    char bin[4096];
};

static uint32_t fnv1a(const char *s, uint32_t h)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

int fatia_ctlr_isvc_port(const json_t *isvc)
{
    const char *a = fatia_ctlr_obj_annotation(isvc, PORT_ANN);
    char key[600];
    long p;

    if (a) {
        char *end;
        p = strtol(a, &end, 10);
        if (!*end && p >= 1 && p <= 65535)
            return (int)p;
    }
    fatia_ctlr_obj_key(isvc, key, sizeof(key));
    return 20000 + (int)(fnv1a(key, 2166136261u) % 20000);
}

/* The engine-sim model shape: hf://org/model -> org/model. */
static const char *model_shape(const json_t *isvc, const json_t *model)
{
    const char *uri = fatia_json_str(model, "storageUri");
    const char *a = fatia_ctlr_obj_annotation(isvc, MODEL_ANN);

    if (a && *a)
        return a;
    if (uri && !strncmp(uri, "hf://", 5) && uri[5])
        return uri + 5;
    return DEFAULT_SHAPE;
}

static void add_arg(json_t *cmd, const char *a)
{
    json_array_append_new(cmd, json_string(a));
}

/* The slice flags from the model's resources (limits, else requests). */
static void slice_args(json_t *cmd, const json_t *resources)
{
    const json_t *lists[2] = {json_object_get(resources, "limits"),
                              json_object_get(resources, "requests")};

    for (int i = 0; i < 2; i++) {
        const char *k;
        json_t *v;
        if (!json_is_object(lists[i]))
            continue;
        json_object_foreach((json_t *)lists[i], k, v)
        {
            if (!strncmp(k, "nvidia.com/mig-", 15)) {
                add_arg(cmd, "--slice");
                add_arg(cmd, k + 15);
                return;
            }
            if (!strcmp(k, "nvidia.com/gpu")) {
                long n = json_is_integer(v)  ? (long)json_integer_value(v)
                         : json_is_string(v) ? strtol(json_string_value(v), NULL, 10)
                                             : 1;
                if (n > 1) {
                    char buf[32];
                    snprintf(buf, sizeof(buf), "%ld", n);
                    add_arg(cmd, "--gpus");
                    add_arg(cmd, buf);
                }
                return;
            }
        }
    }
}

static json_t *pod_labels(const json_t *isvc)
{
    const char *name = fatia_ctlr_meta_str(isvc, "name");
    const char *queue = fatia_ctlr_obj_label(isvc, QUEUE_LABEL);
    char app[300];
    json_t *l;

    snprintf(app, sizeof(app), "isvc.%.200s-predictor", name);
    l = json_pack("{s:s,s:s,s:s}", ISVC_LABEL, name, "app", app, "component", "predictor");
    if (l && queue)
        json_object_set_new(l, QUEUE_LABEL, json_string(queue));
    return l;
}

/* The Deployment's pod template: rctr (the runtime's container, isvc_runtime.c, taken) or the
 * built-in engine-sim container. */
static json_t *pod_template(struct isvc_ctl *ic, const json_t *isvc, int port, json_t *rctr)
{
    const json_t *model = fatia_json_path(isvc, "spec.predictor.model");
    const json_t *res = json_object_get(model, "resources");
    const json_t *args = json_object_get(model, "args");
    const char *prof = fatia_ctlr_obj_annotation(isvc, PROFILE_ANN);
    const char *profns = fatia_ctlr_obj_annotation(isvc, PROFILE_NS);
    json_t *cmd = json_array(), *ann = json_object(), *ctr = rctr, *t;
    size_t i;
    json_t *a;

    if (prof)
        json_object_set_new(ann, PROFILE_ANN, json_string(prof));
    if (profns)
        json_object_set_new(ann, PROFILE_NS, json_string(profns));
    if (ctr) {
        json_decref(cmd);
        goto pack;
    }
    add_arg(cmd, "--model");
    add_arg(cmd, model_shape(isvc, model));
    add_arg(cmd, "--served-model-name");
    add_arg(cmd, fatia_ctlr_meta_str(isvc, "name"));
    slice_args(cmd, res);
    json_array_foreach(args, i, a) if (json_is_string(a)) json_array_append(cmd, a);
    ctr = fatia_ctlr_engine_container(ic->bin, "kserve-container", port, cmd);
    json_decref(cmd);
    if (ctr && json_is_object(res))
        json_object_set_new(ctr, "resources", json_deep_copy(res));
pack:
    t = ctr ? json_pack("{s:{s:o,s:o},s:{s:[o]}}", "metadata", "labels", pod_labels(isvc),
                        "annotations", ann, "spec", "containers", ctr)
            : NULL;
    if (!ctr)
        json_decref(ann);
    return t;
}

static json_t *owner_refs(const json_t *isvc)
{
    return json_pack("[{s:s,s:s,s:s,s:s,s:b,s:b}]", "apiVersion", "serving.kserve.io/v1beta1",
                     "kind", "InferenceService", "name", fatia_ctlr_meta_str(isvc, "name"), "uid",
                     fatia_ctlr_meta_str(isvc, "uid"), "controller", 1, "blockOwnerDeletion", 1);
}

static bool owned_by(const json_t *obj, const json_t *isvc)
{
    const json_t *ref = fatia_ctlr_obj_controller_ref(obj);
    const char *uid = fatia_json_str(ref, "uid"), *mine = fatia_ctlr_meta_str(isvc, "uid");

    return uid && mine && !strcmp(uid, mine);
}

/* Creates or updates the Deployment; *ret_foreign when a Deployment of that name is not ours. */
static void sync_deployment(struct isvc_ctl *ic, const char *key, const json_t *isvc,
                            const json_t *have, int port, json_t *rctr, bool *ret_foreign)
{
    const char *name = fatia_ctlr_meta_str(isvc, "name"),
               *ns = fatia_ctlr_meta_str(isvc, "namespace");
    int64_t replicas = 1;
    json_t *tmpl = pod_template(ic, isvc, port, rctr), *obj = NULL;
    char dname[300], hash[32], *text = NULL;

    *ret_foreign = false;
    if (!tmpl)
        return;
    fatia_json_int(fatia_json_path(isvc, "spec.predictor"), "minReplicas", &replicas);
    if (fatia_ctlr_isvc_autoscaled(isvc))
        replicas = fatia_ctlr_isvc_scale_replicas(ic->scaler, key, isvc, have);
    text = json_dumps(tmpl, JSON_SORT_KEYS | JSON_COMPACT);
    snprintf(hash, sizeof(hash), "%08x-%" PRId64, text ? fnv1a(text, 2166136261u) : 0u, replicas);
    snprintf(dname, sizeof(dname), "%.200s-predictor", name);
    if (have && !owned_by(have, isvc)) {
        *ret_foreign = true;
        goto out;
    }
    if (have) {
        const char *h = fatia_ctlr_obj_annotation(have, HASH_ANN);
        if (h && !strcmp(h, hash))
            goto out;
        obj = json_deep_copy(have);
        if (!obj)
            goto out;
        json_object_set_new(json_object_get(obj, "spec"), "replicas", json_integer(replicas));
        json_object_set(json_object_get(obj, "spec"), "template", tmpl);
        json_object_set_new(
            fatia_json_object_ensure(json_object_get(obj, "metadata"), "annotations"), HASH_ANN,
            json_string(hash));
        fatia_ctlr_update(
            ic->ctl, obj,
            &(struct op_opts){
                .wq = ic->q, .key = key, .quiet_conflict = true, .quiet_missing = true});
        fatia_ctlr_event(ic->ctl, isvc, COMPONENT, "Normal", "UpdatedPredictor",
                         "Deployment %s: %" PRId64 " replicas", dname, replicas);
        goto out;
    }
    obj = json_pack("{s:s,s:s,s:{s:s,s:s,s:o,s:{s:s},s:o},s:{s:I,s:{s:{s:s}},s:O}}", "apiVersion",
                    "apps/v1", "kind", "Deployment", "metadata", "name", dname, "namespace", ns,
                    "labels", json_pack("{s:s,s:s}", ISVC_LABEL, name, "component", "predictor"),
                    "annotations", HASH_ANN, hash, "ownerReferences", owner_refs(isvc), "spec",
                    "replicas", (json_int_t)replicas, "selector", "matchLabels", ISVC_LABEL, name,
                    "template", tmpl);
    if (!obj)
        goto out;
    fatia_ctlr_create(ic->ctl, obj, &(struct op_opts){.wq = ic->q, .key = key});
    fatia_ctlr_event(ic->ctl, isvc, COMPONENT, "Normal", "CreatedPredictor",
                     "Created Deployment %s (%" PRId64 " replicas, port %d)", dname, replicas,
                     port);
out:
    free(text);
    json_decref(obj);
    json_decref(tmpl);
}

static void sync_pool(struct isvc_ctl *ic, const char *key, const json_t *isvc, const json_t *have,
                      int port, bool *ret_foreign)
{
    const char *name = fatia_ctlr_meta_str(isvc, "name"),
               *ns = fatia_ctlr_meta_str(isvc, "namespace");
    json_t *spec = json_pack("{s:{s:{s:s}},s:[{s:i}],s:s}", "selector", "matchLabels", ISVC_LABEL,
                             name, "targetPorts", "number", port, "appProtocol", "http");
    json_t *obj = NULL;

    *ret_foreign = false;
    if (!spec)
        return;
    if (have && !owned_by(have, isvc)) {
        *ret_foreign = true;
    } else if (have) {
        const json_t *hs = json_object_get(have, "spec");
        if (!json_equal(json_object_get(hs, "selector"), json_object_get(spec, "selector")) ||
            !json_equal(json_object_get(hs, "targetPorts"), json_object_get(spec, "targetPorts"))) {
            obj = json_deep_copy(have);
            if (obj)
                json_object_set(obj, "spec", spec);
            if (obj)
                fatia_ctlr_update(
                    ic->ctl, obj,
                    &(struct op_opts){
                        .wq = ic->q, .key = key, .quiet_conflict = true, .quiet_missing = true});
        }
    } else {
        obj = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s},s:o},s:O}", "apiVersion",
                        "inference.networking.k8s.io/v1", "kind", "InferencePool", "metadata",
                        "name", name, "namespace", ns, "labels", ISVC_LABEL, name,
                        "ownerReferences", owner_refs(isvc), "spec", spec);
        if (obj)
            fatia_ctlr_create(ic->ctl, obj, &(struct op_opts){.wq = ic->q, .key = key});
    }
    json_decref(obj);
    json_decref(spec);
}

/* A predictor pod's container that cannot start (kubelet's waiting reasons for an image or a
 * crash): its reason, "pod P: container C: message" in buf; NULL when none. */
static const char *pod_failure(struct isvc_ctl *ic, const json_t *isvc, char *buf, size_t n)
{
    static const char *const REASONS[] = {"ErrImagePull",
                                          "ErrImageNeverPull",
                                          "ImagePullBackOff",
                                          "InvalidImageName",
                                          "CreateContainerError",
                                          "CrashLoopBackOff",
                                          NULL};
    const char *name = fatia_ctlr_meta_str(isvc, "name"),
               *ns = fatia_ctlr_meta_str(isvc, "namespace");

    INFORMER_FOREACH(ic->pods, it)
    {
        const char *pns = fatia_ctlr_meta_str(it->obj, "namespace");
        const char *owner = fatia_ctlr_obj_label(it->obj, ISVC_LABEL);
        const json_t *cs;
        size_t i;
        if (!pns || !owner || strcmp(pns, ns) || strcmp(owner, name))
            continue;
        json_array_foreach(fatia_json_path(it->obj, "status.containerStatuses"), i, cs)
        {
            const json_t *w = fatia_json_path(cs, "state.waiting");
            const char *r = fatia_json_str(w, "reason"), *m = fatia_json_str(w, "message");
            for (int k = 0; r && REASONS[k]; k++) {
                if (strcmp(r, REASONS[k]))
                    continue;
                snprintf(buf, n, "pod %.200s: container %.100s: %.400s",
                         fatia_ctlr_meta_str(it->obj, "name"),
                         fatia_json_str(cs, "name") ? fatia_json_str(cs, "name") : "", m ? m : r);
                return REASONS[k];
            }
        }
    }
    return NULL;
}

static void write_status(struct isvc_ctl *ic, const char *key, const json_t *isvc,
                         const json_t *dep, const char *reason, const char *blocked)
{
    const char *name = fatia_ctlr_meta_str(isvc, "name"),
               *ns = fatia_ctlr_meta_str(isvc, "namespace");
    const json_t *old = json_object_get(isvc, "status");
    const json_t *ds = json_object_get(dep, "status");
    int64_t gen = 0, ready = 0, want = 1, dgen = 0, dobs = -1, desired = -1;
    json_t *st, *conds, *obj;
    bool avail, is_ready, zero;
    int gated = fatia_ctlr_isvc_scale_gated(ic->scaler, key);
    char url[600], msg[800];
    const char *podwhy = NULL;
    fatia_usec_t now = fatia_ctlr_now(ic->ctl);

    fatia_json_int(json_object_get(isvc, "metadata"), "generation", &gen);
    fatia_json_int(fatia_json_path(isvc, "spec.predictor"), "minReplicas", &want);
    fatia_json_int(ds, "readyReplicas", &ready);
    fatia_json_int(json_object_get(dep, "metadata"), "generation", &dgen);
    fatia_json_int(ds, "observedGeneration", &dobs);
    fatia_json_int(json_object_get(dep, "spec"), "replicas", &desired);
    avail = dep && fatia_ctlr_cond_true(dep, "Available") && dobs >= dgen;
    /* scaled to zero is ready: the gateway holds a request and wakes a replica (isvc_scale.c) */
    zero = !blocked && dep && want == 0 && desired == 0 && dobs >= dgen;
    is_ready = zero || (!blocked && avail && ready >= 1 && ready >= want);
    if (blocked)
        snprintf(msg, sizeof(msg), "%s", blocked);
    else if (want == 0 && !dep)
        snprintf(msg, sizeof(msg), "minReplicas is 0: no replica yet");
    else if (!is_ready && (podwhy = pod_failure(ic, isvc, msg, sizeof(msg))))
        ; /* msg names the pod and its container */
    else
        snprintf(msg, sizeof(msg), "%" PRId64 " of %" PRId64 " replicas ready", ready, want);
    conds = json_deep_copy(json_object_get(old, "conditions"));
    if (!json_is_array(conds)) {
        json_decref(conds);
        conds = json_array();
    }
    fatia_ctlr_cond_set(conds, "PredictorReady", is_ready ? "True" : "False",
                        zero       ? "ScaledToZero"
                        : is_ready ? "MinimumReplicasAvailable"
                        : blocked  ? reason
                        : podwhy   ? podwhy
                                   : "MinimumReplicasUnavailable",
                        is_ready ? "" : msg, now);
    fatia_ctlr_cond_set(conds, "Ready", is_ready ? "True" : "False",
                        is_ready ? "PredictorReady" : "PredictorNotReady", is_ready ? "" : msg,
                        now);
    if (fatia_ctlr_isvc_autoscaled(isvc) && dep) {
        const char *queue = fatia_ctlr_obj_label(isvc, QUEUE_LABEL);
        char amsg[300];
        snprintf(amsg, sizeof(amsg),
                 "%d of %" PRId64 " replicas wait for Kueue admission (queue %s): the scale-up "
                 "waits for quota",
                 gated, desired, queue ? queue : "none");
        fatia_ctlr_cond_set(conds, "ReplicasAdmitted", gated ? "False" : "True",
                            gated ? "PendingAdmission" : "Admitted", gated ? amsg : "", now);
    }
    snprintf(url, sizeof(url), "http://%s.%s.svc.cluster.local", name, ns);
    st = json_pack("{s:I,s:s,s:{s:s},s:s,s:o,s:{s:s,s:{s:s,s:s},s:{s:I}}}", "observedGeneration",
                   (json_int_t)gen, "url", url, "address", "url", url, "deploymentMode",
                   "RawDeployment", "conditions", conds, "modelStatus", "transitionStatus",
                   blocked    ? "InvalidSpec"
                   : is_ready ? "UpToDate"
                              : "InProgress",
                   "states", "activeModelState", is_ready ? "Loaded" : "Pending",
                   "targetModelState", "Loaded", "copies", "totalCopies", (json_int_t)ready);
    if (st && fatia_ctlr_isvc_autoscaled(isvc) && dep)
        json_object_set_new(st, "autoscaling",
                            json_pack("{s:I,s:I,s:i}", "desiredReplicas", (json_int_t)desired,
                                      "readyReplicas", (json_int_t)ready, "pendingAdmission",
                                      gated));
    if (st && blocked)
        json_object_set_new(json_object_get(st, "modelStatus"), "lastFailureInfo",
                            json_pack("{s:s,s:s}", "reason", reason, "message", blocked));
    if (!st || (old && json_equal(st, old))) {
        json_decref(st);
        return;
    }
    obj = json_deep_copy(isvc);
    if (!obj) {
        json_decref(st);
        return;
    }
    if (is_ready && !fatia_ctlr_cond_true(isvc, "Ready"))
        fatia_ctlr_event(ic->ctl, isvc, COMPONENT, "Normal", "InferenceServiceReady",
                         "InferenceService %s is ready (%" PRId64 " replicas)", name, ready);
    json_object_set_new(obj, "status", st);
    fatia_ctlr_update_status(
        ic->ctl, obj,
        &(struct op_opts){.wq = ic->q, .key = key, .quiet_conflict = true, .quiet_missing = true});
    json_decref(obj);
}

static bool serves_format(const json_t *r, const char *format, bool auto_only)
{
    const json_t *f;
    size_t i;

    json_array_foreach(fatia_json_path(r, "spec.supportedModelFormats"), i, f)
    {
        const char *fn = fatia_json_str(f, "name");
        if (fn && format && !strcasecmp(fn, format) &&
            (!auto_only || json_is_true(json_object_get(f, "autoSelect"))))
            return true;
    }
    return false;
}

/* Without predictor.model.runtime, KServe's choice by modelFormat: an enabled runtime listing the
 * format with autoSelect, the namespace's ServingRuntimes before the ClusterServingRuntimes, the
 * first name in each (a deterministic pick where KServe would sort by priority). NULL: none, the
 * built-in engine-sim server. */
static const json_t *auto_runtime(struct isvc_ctl *ic, const char *ns, const char *format)
{
    struct informer *infs[2] = {ic->runtimes, ic->cluster_runtimes};

    if (!format)
        return NULL;
    for (int k = 0; k < 2; k++) {
        const json_t *best = NULL;
        INFORMER_FOREACH(infs[k], it)
        {
            const char *rns = fatia_ctlr_meta_str(it->obj, "namespace");
            const char *rn = fatia_ctlr_meta_str(it->obj, "name");
            if ((k == 0 && (!rns || strcmp(rns, ns))) || !rn ||
                json_is_true(fatia_json_path(it->obj, "spec.disabled")) ||
                !serves_format(it->obj, format, true))
                continue;
            if (!best || strcmp(rn, fatia_ctlr_meta_str(best, "name")) < 0)
                best = it->obj;
        }
        if (best)
            return best;
    }
    return NULL;
}

/* KServe's runtime checks for predictor.model.runtime: a ServingRuntime of the namespace or a
 * ClusterServingRuntime of that name, not disabled, listing the model's format. 0, or a reason
 * (KServe's) with why in buf. *ret_rt: the runtime (named or chosen by auto_runtime), or NULL. */
static const char *check_runtime(struct isvc_ctl *ic, const json_t *isvc, const char *ns, char *buf,
                                 size_t n, const json_t **ret_rt)
{
    const json_t *model = fatia_json_path(isvc, "spec.predictor.model");
    const char *rt = fatia_json_str(model, "runtime");
    const char *format = fatia_json_str(json_object_get(model, "modelFormat"), "name");
    const json_t *r;

    *ret_rt = NULL;
    if (!rt) {
        *ret_rt = auto_runtime(ic, ns, format);
        return NULL;
    }
    r = fatia_ctlr_informer_get(ic->runtimes, ns, rt);
    if (!r)
        r = fatia_ctlr_informer_get(ic->cluster_runtimes, NULL, rt);
    if (!r) {
        snprintf(buf, n, "specified runtime %.200s does not exist", rt);
        return "RuntimeNotRecognized";
    }
    if (json_is_true(fatia_json_path(r, "spec.disabled"))) {
        snprintf(buf, n, "specified runtime %.200s is disabled", rt);
        return "RuntimeDisabled";
    }
    if (!serves_format(r, format, false)) {
        snprintf(buf, n, "specified runtime %.200s does not support model format %.100s", rt,
                 format ? format : "");
        return "NoSupportingRuntime";
    }
    *ret_rt = r;
    return NULL;
}

static void reconcile(void *arg, const char *key)
{
    struct isvc_ctl *ic = arg;
    const json_t *isvc = fatia_ctlr_informer_get_key(ic->isvcs, key);
    char ns[300], dname[300], blocked[700] = "";
    const char *name;
    const json_t *dep, *pool, *rt;
    const char *reason;
    bool fd = false, fp = false;
    json_t *rctr = NULL;
    int port, rc;

    if (!isvc || fatia_ctlr_obj_deleting(isvc))
        return; /* the garbage collector deletes what it owned */
    name = fatia_ctlr_split_key(key, ns, sizeof(ns));
    snprintf(dname, sizeof(dname), "%.200s-predictor", name);
    dep = fatia_ctlr_informer_get(ic->deploys, ns, dname);
    pool = fatia_ctlr_informer_get(ic->pools, ns, name);
    if ((reason = check_runtime(ic, isvc, ns, blocked, sizeof(blocked), &rt))) {
        /* as KServe: nothing is deployed for a spec it cannot serve */
        write_status(ic, key, isvc, NULL, reason, blocked);
        return;
    }
    port = fatia_ctlr_isvc_port(isvc);
    if (rt && (rc = fatia_ctlr_isvc_runtime_container(rt, isvc, blocked, sizeof(blocked), &rctr,
                                                      &port)) < 0) {
        if (rc == -EINVAL)
            write_status(ic, key, isvc, NULL, "InvalidRuntimeTemplate", blocked);
        return;
    }
    if (!rctr)
        port = fatia_ctlr_isvc_port(isvc);
    sync_deployment(ic, key, isvc, dep, port, rctr, &fd);
    sync_pool(ic, key, isvc, pool, port, &fp);
    if (fd || fp)
        snprintf(blocked, sizeof(blocked),
                 "%s %.300s exists and is not owned by this InferenceService",
                 fd ? "Deployment" : "InferencePool", fd ? dname : name);
    write_status(ic, key, isvc, fd ? NULL : dep, "ResourceConflict", blocked[0] ? blocked : NULL);
}

static void on_isvc(void *arg, const json_t *old, const json_t *obj)
{
    struct isvc_ctl *ic = arg;
    char key[600];

    fatia_ctlr_obj_key(obj ? obj : old, key, sizeof(key));
    fatia_ctlr_wq_add(ic->q, key);
}

/* A Deployment or pool of an InferenceService: its owner's key. */
static void on_owned(void *arg, const json_t *old, const json_t *obj)
{
    struct isvc_ctl *ic = arg;
    const json_t *s = obj ? obj : old;
    const json_t *ref = fatia_ctlr_obj_controller_ref(s);
    const char *kind = fatia_json_str(ref, "kind"), *name = fatia_json_str(ref, "name");
    char key[600];

    if (!kind || !name || strcmp(kind, "InferenceService"))
        return;
    fatia_ctlr_make_key(fatia_ctlr_meta_str(s, "namespace"), name, key, sizeof(key));
    fatia_ctlr_wq_add(ic->q, key);
}

/* A pod of an InferenceService (its label): the owner's key, for pod_failure. */
static void on_pod(void *arg, const json_t *old, const json_t *obj)
{
    struct isvc_ctl *ic = arg;
    const json_t *p = obj ? obj : old;
    const char *name = fatia_ctlr_obj_label(p, ISVC_LABEL);
    char key[600];

    if (!name)
        return;
    fatia_ctlr_make_key(fatia_ctlr_meta_str(p, "namespace"), name, key, sizeof(key));
    fatia_ctlr_wq_add(ic->q, key);
}

/* A runtime changed: the InferenceServices that name it or may choose it by format (few; a scan
 * of the cache). */
static void on_runtime(void *arg, const json_t *old, const json_t *obj)
{
    struct isvc_ctl *ic = arg;
    const json_t *r = obj ? obj : old;
    const char *rname = fatia_ctlr_meta_str(r, "name"), *rns = fatia_ctlr_meta_str(r, "namespace");

    INFORMER_FOREACH(ic->isvcs, it)
    {
        const char *want =
            fatia_json_str(fatia_json_path(it->obj, "spec.predictor.model"), "runtime");
        const char *ns = fatia_ctlr_meta_str(it->obj, "namespace");
        if ((!want || (rname && !strcmp(want, rname))) && (!rns || (ns && !strcmp(ns, rns))))
            fatia_ctlr_wq_add(ic->q, it->key);
    }
}

int fatia_ctlr_isvc_ctl_new(struct ctl *c, struct isvc_ctl **ret)
{
    struct isvc_ctl *ic = fatia_calloc(1, sizeof(*ic));
    int rc;

    if (!ic)
        return -ENOMEM;
    ic->ctl = c;
    fatia_ctlr_fatia_bin(ic->bin, sizeof(ic->bin));
    ic->q = fatia_ctlr_wq_new(c, "inferenceservice", reconcile, ic);
    ic->isvcs = fatia_ctlr_informer(
        c, fatia_kind_find("serving.kserve.io/v1beta1", "InferenceService", NULL));
    ic->deploys = fatia_ctlr_informer(c, fatia_kind_find("apps/v1", "Deployment", NULL));
    ic->pools = fatia_ctlr_informer(
        c, fatia_kind_find("inference.networking.k8s.io/v1", "InferencePool", NULL));
    ic->runtimes = fatia_ctlr_informer(
        c, fatia_kind_find("serving.kserve.io/v1alpha1", "ServingRuntime", NULL));
    ic->cluster_runtimes = fatia_ctlr_informer(
        c, fatia_kind_find("serving.kserve.io/v1alpha1", "ClusterServingRuntime", NULL));
    ic->pods = fatia_ctlr_informer(c, fatia_kind_find("v1", "Pod", NULL));
    if (!ic->q || !ic->isvcs || !ic->deploys || !ic->pools || !ic->runtimes ||
        !ic->cluster_runtimes || !ic->pods ||
        fatia_ctlr_isvc_scaler_new(c, ic->q, ic->isvcs, ic->deploys, ic->pods, &ic->scaler) < 0) {
        fatia_ctlr_isvc_ctl_free(ic);
        return -ENOMEM;
    }
    if ((rc = fatia_ctlr_informer_on(ic->isvcs, on_isvc, ic)) < 0 ||
        (rc = fatia_ctlr_informer_on(ic->deploys, on_owned, ic)) < 0 ||
        (rc = fatia_ctlr_informer_on(ic->pools, on_owned, ic)) < 0 ||
        (rc = fatia_ctlr_informer_on(ic->runtimes, on_runtime, ic)) < 0 ||
        (rc = fatia_ctlr_informer_on(ic->cluster_runtimes, on_runtime, ic)) < 0 ||
        (rc = fatia_ctlr_informer_on(ic->pods, on_pod, ic)) < 0) {
        fatia_ctlr_isvc_ctl_free(ic);
        return rc;
    }
    *ret = ic;
    return 0;
}

void fatia_ctlr_isvc_ctl_free(struct isvc_ctl *ic)
{
    if (!ic)
        return;
    fatia_ctlr_isvc_scaler_free(ic->scaler);
    fatia_ctlr_wq_free(ic->q);
    fatia_free(ic);
}
