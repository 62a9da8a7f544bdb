/*
 * controller/llmisvc.c: KServe's LLMInferenceService (serving.kserve.io/v1alpha1), the llm-d
 * based kind, with prefill/decode disaggregation. One LLMInferenceService becomes, as KServe's
 * llmisvc controller names them (pkg/controller/llmisvc/workload_*.go):
 *
 *   Deployment <name>-kserve           the main workload (the decode workload when spec.prefill
 *                                      is set): spec.replicas (default 1) pods of `fatia
 *                                      engine-sim --role decode` (role both without prefill);
 *   Deployment <name>-kserve-prefill   with spec.prefill: spec.prefill.replicas (default 1) pods
 *                                      of `fatia engine-sim --role prefill`;
 *   InferencePool <name>-inference-pool selecting both workloads' pods (app.kubernetes.io/name,
 *                                      part-of llminferenceservice, kserve.io/component workload)
 *                                      with the decode and prefill ports as targetPorts;
 *
 * owned by it (the garbage collector deletes them with it). Pods carry KServe's labels,
 * app.kubernetes.io/component llminferenceservice-workload(-prefill) and llm-d.ai/role
 * decode|prefill (what the gateway's P/D picker reads, gateway/pd.h), each workload's own
 * labels and annotations (spec.annotations / spec.prefill.annotations: the hardware-profile
 * annotation of each, so prefill can run on whole GPUs and decode on smaller slices), and the
 * LLMInferenceService's Kueue queue label: each replica is admitted by Kueue like any pod.
 * Each workload's parallelism.tensor gives --gpus (tensor parallelism), a MIG resource of its
 * template's first container --slice, as for InferenceService (inferenceservice.c); that
 * container's args are appended to the model server's command line (engine-sim's flags: a real
 * vLLM image would take vLLM's there, unverified here) and its resources are the pods'.
 *
 * The container is enginepod.c's (image fatia.dev/engine-sim:1, listening on $(POD_IP)).
 * Processes share the host's network, so each workload has a port of its own (SO_REUSEPORT among
 * its replicas): decode fatia_ctlr_isvc_port (annotation serving.fatia.io/port, else the hash of
 * ns/name), prefill that + 1 (annotation serving.fatia.io/prefill-port); each pod says its port in
 * the annotation serving.fatia.io/port, which the gateway's pool reader honours (one endpoint
 * per workload, with that workload's labels). The pool's annotation serving.fatia.io/model-name
 * names the served model (spec.model.name, else metadata.name) for `fatia gateway
 * --all-inference-pools`, and serving.fatia.io/pd-decider the gateway's P/D decider for it:
 * "always" with spec.prefill, as KServe generates always-disagg-pd-decider (scheduler.go).
 *
 * Status as KServe's: url, addresses, conditions PresetsCombined (True: no presets are merged
 * here), WorkloadsReady (every workload's Deployment Available with its replicas ready),
 * RouterReady (the pool exists), Ready (all three). What is not acted on (router.route,
 * router.gateway, baseRefs, scaling) is kept and named in the message of PresetsCombined.
 *
 * Rejected: an annotation on InferenceService for P/D (KServe's own P/D API is this kind, which
 * RHOAI's distributed inference writes; two replica counts and two hardware profiles do not fit
 * one predictor).
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "controller/ctl_internal.h"
#include "controller/enginepod.h"
#include "controller/isvc_scale.h"

#define COMPONENT     "llminferenceservice-controller"
#define HASH_ANN      "serving.fatia.io/spec-hash"
#define PORT_ANN      "serving.fatia.io/port"
#define PPORT_ANN     "serving.fatia.io/prefill-port"
#define MODEL_ANN     "serving.fatia.io/model"
#define MODELNAME_ANN "serving.fatia.io/model-name"
#define DECIDER_ANN   "serving.fatia.io/pd-decider"
#define QUEUE_LABEL   "kueue.x-k8s.io/queue-name"
#define DEFAULT_SHAPE "llama-3.1-8b"

struct llmisvc_ctl {
    struct ctl *ctl;
    struct wq *q;
    struct informer *objs, *deploys, *pools;
    char bin[4096];
};

static uint32_t fnv1a(const char *s, uint32_t h)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static void add_arg(json_t *cmd, const char *a)
{
    json_array_append_new(cmd, json_string(a));
}

static const char *served_name(const json_t *o)
{
    const char *n = fatia_json_str(fatia_json_path(o, "spec.model"), "name");
    return n && *n ? n : fatia_ctlr_meta_str(o, "name");
}

static const char *model_shape(const json_t *o)
{
    const char *uri = fatia_json_str(fatia_json_path(o, "spec.model"), "uri");
    const char *a = fatia_ctlr_obj_annotation(o, MODEL_ANN);

    if (a && *a)
        return a;
    if (uri && !strncmp(uri, "hf://", 5) && uri[5])
        return uri + 5;
    return DEFAULT_SHAPE;
}

static int prefill_port(const json_t *o)
{
    const char *a = fatia_ctlr_obj_annotation(o, PPORT_ANN);
    int d = fatia_ctlr_isvc_port(o);

    if (a) {
        char *end;
        long p = strtol(a, &end, 10);
        if (!*end && p >= 1 && p <= 65535)
            return (int)p;
    }
    return d < 65535 ? d + 1 : d - 1;
}

/* --slice from a MIG resource of the workload template's first container. */
static void slice_args(json_t *cmd, const json_t *w)
{
    const json_t *c = json_array_get(fatia_json_path(w, "template.containers"), 0);
    const json_t *lists[2] = {fatia_json_path(c, "resources.limits"),
                              fatia_json_path(c, "resources.requests")};

    for (int i = 0; i < 2; i++) {
        const char *k;
        json_t *v;
        if (!json_is_object(lists[i]))
            continue;
        json_object_foreach((json_t *)lists[i], k, v)
        {
            (void)v;
            if (!strncmp(k, "nvidia.com/mig-", 15)) {
                add_arg(cmd, "--slice");
                add_arg(cmd, k + 15);
                return;
            }
        }
    }
}

static json_t *selector_labels(const json_t *o, bool prefill)
{
    return json_pack("{s:s,s:s,s:s}", "app.kubernetes.io/component",
                     prefill ? "llminferenceservice-workload-prefill"
                             : "llminferenceservice-workload",
                     "app.kubernetes.io/name", fatia_ctlr_meta_str(o, "name"),
                     "app.kubernetes.io/part-of", "llminferenceservice");
}

/* The pod template of one workload (w: spec, or spec.prefill). */
static json_t *pod_template(struct llmisvc_ctl *lc, const json_t *o, const json_t *w, bool prefill,
                            bool disagg, int port)
{
    const json_t *c0 = json_array_get(fatia_json_path(w, "template.containers"), 0);
    const json_t *res = json_object_get(c0, "resources");
    const char *queue = fatia_ctlr_obj_label(o, QUEUE_LABEL);
    json_t *cmd = json_array(), *labels = selector_labels(o, prefill), *ann, *ctr, *t;
    int64_t tp = 0;
    char buf[32];

    add_arg(cmd, "--model");
    add_arg(cmd, model_shape(o));
    add_arg(cmd, "--served-model-name");
    add_arg(cmd, served_name(o));
    add_arg(cmd, "--role");
    add_arg(cmd, prefill ? "prefill" : disagg ? "decode" : "both");
    if (fatia_json_int(json_object_get(w, "parallelism"), "tensor", &tp) && tp > 1) {
        snprintf(buf, sizeof(buf), "%" PRId64, tp);
        add_arg(cmd, "--gpus");
        add_arg(cmd, buf);
    }
    slice_args(cmd, w);
    {
        /* the main container's args go to the model server, as model.args of InferenceService */
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(c0, "args"), i, v) if (json_is_string(v))
            json_array_append(cmd, v);
    }
    ann = json_is_object(json_object_get(w, "annotations"))
              ? json_deep_copy(json_object_get(w, "annotations"))
              : json_object();
    snprintf(buf, sizeof(buf), "%d", port);
    json_object_set_new(ann, PORT_ANN, json_string(buf));
    if (labels) {
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(w, "labels"), k, v) json_object_set(labels, k, v);
        json_object_set_new(labels, "kserve.io/component", json_string("workload"));
        json_object_set_new(labels, "llm-d.ai/role", json_string(prefill ? "prefill" : "decode"));
        if (queue && !json_object_get(labels, QUEUE_LABEL))
            json_object_set_new(labels, QUEUE_LABEL, json_string(queue));
    }
    ctr = fatia_ctlr_engine_container(lc->bin, "main", port, cmd);
    json_decref(cmd);
    if (ctr && json_is_object(res))
        json_object_set_new(ctr, "resources", json_deep_copy(res));
    t = ctr && labels && ann ? json_pack("{s:{s:O,s:O},s:{s:[O]}}", "metadata", "labels", labels,
                                         "annotations", ann, "spec", "containers", ctr)
                             : NULL;
    json_decref(ctr);
    json_decref(labels);
    json_decref(ann);
    return t;
}

static json_t *owner_refs(const json_t *o)
{
    return json_pack("[{s:s,s:s,s:s,s:s,s:b,s:b}]", "apiVersion", "serving.kserve.io/v1alpha1",
                     "kind", "LLMInferenceService", "name", fatia_ctlr_meta_str(o, "name"), "uid",
                     fatia_ctlr_meta_str(o, "uid"), "controller", 1, "blockOwnerDeletion", 1);
}

static bool owned_by(const json_t *obj, const json_t *o)
{
    const json_t *ref = fatia_ctlr_obj_controller_ref(obj);
    const char *uid = fatia_json_str(ref, "uid"), *mine = fatia_ctlr_meta_str(o, "uid");

    return uid && mine && !strcmp(uid, mine);
}

/* Creates or updates one workload's Deployment. Returns false when a Deployment of that name is
 * not ours. */
static bool sync_workload(struct llmisvc_ctl *lc, const char *key, const json_t *o, bool prefill,
                          bool disagg, int port)
{
    const json_t *w = prefill ? fatia_json_path(o, "spec.prefill") : json_object_get(o, "spec");
    const char *name = fatia_ctlr_meta_str(o, "name"), *ns = fatia_ctlr_meta_str(o, "namespace");
    char dname[300], hash[32], *text = NULL;
    const json_t *have;
    json_t *tmpl, *obj = NULL;
    int64_t replicas = 1;
    bool ok = true;

    snprintf(dname, sizeof(dname), "%.200s-kserve%s", name, prefill ? "-prefill" : "");
    have = fatia_ctlr_informer_get(lc->deploys, ns, dname);
    if (have && !owned_by(have, o))
        return false;
    tmpl = pod_template(lc, o, w, prefill, disagg, port);
    if (!tmpl)
        return true;
    fatia_json_int(w, "replicas", &replicas);
    text = json_dumps(tmpl, JSON_SORT_KEYS | JSON_COMPACT);
    snprintf(hash, sizeof(hash), "%08x-%" PRId64, text ? fnv1a(text, 2166136261u) : 0u, replicas);
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
            lc->ctl, obj,
            &(struct op_opts){
                .wq = lc->q, .key = key, .quiet_conflict = true, .quiet_missing = true});
        fatia_ctlr_event(lc->ctl, o, COMPONENT, "Normal", "UpdatedWorkload",
                         "Deployment %s: %" PRId64 " replicas", dname, replicas);
        goto out;
    }
    obj = json_pack("{s:s,s:s,s:{s:s,s:s,s:o,s:{s:s},s:o},s:{s:I,s:{s:o},s:O}}", "apiVersion",
                    "apps/v1", "kind", "Deployment", "metadata", "name", dname, "namespace", ns,
                    "labels", selector_labels(o, prefill), "annotations", HASH_ANN, hash,
                    "ownerReferences", owner_refs(o), "spec", "replicas", (json_int_t)replicas,
                    "selector", "matchLabels", selector_labels(o, prefill), "template", tmpl);
    if (!obj)
        goto out;
    fatia_ctlr_create(lc->ctl, obj, &(struct op_opts){.wq = lc->q, .key = key});
    fatia_ctlr_event(lc->ctl, o, COMPONENT, "Normal", "CreatedWorkload",
                     "Created Deployment %s (%s, %" PRId64 " replicas, port %d)", dname,
                     prefill  ? "prefill"
                     : disagg ? "decode"
                              : "prefill and decode",
                     replicas, port);
out:
    free(text);
    json_decref(obj);
    json_decref(tmpl);
    return ok;
}

/* The prefill Deployment of a spec that no longer asks for one is deleted. */
static void drop_prefill(struct llmisvc_ctl *lc, const char *key, const json_t *o)
{
    const char *name = fatia_ctlr_meta_str(o, "name"), *ns = fatia_ctlr_meta_str(o, "namespace");
    char dname[300];
    const json_t *have;

    snprintf(dname, sizeof(dname), "%.200s-kserve-prefill", name);
    have = fatia_ctlr_informer_get(lc->deploys, ns, dname);
    if (have && owned_by(have, o))
        fatia_ctlr_delete(lc->ctl, fatia_kind_find("apps/v1", "Deployment", NULL), ns, dname,
                          fatia_ctlr_meta_str(have, "uid"),
                          &(struct op_opts){.wq = lc->q, .key = key, .quiet_missing = true});
}

static bool sync_pool(struct llmisvc_ctl *lc, const char *key, const json_t *o, int dport,
                      int pport, bool disagg)
{
    const char *name = fatia_ctlr_meta_str(o, "name"), *ns = fatia_ctlr_meta_str(o, "namespace");
    char pname[300];
    const json_t *have;
    json_t *spec, *obj = NULL;

    const char *decider = disagg ? "always" : "never";

    snprintf(pname, sizeof(pname), "%.200s-inference-pool", name);
    have = fatia_ctlr_informer_get(lc->pools, ns, pname);
    if (have && !owned_by(have, o))
        return false;
    spec = json_pack("{s:{s:{s:s,s:s,s:s}},s:[{s:i}],s:s}", "selector", "matchLabels",
                     "app.kubernetes.io/name", name, "app.kubernetes.io/part-of",
                     "llminferenceservice", "kserve.io/component", "workload", "targetPorts",
                     "number", dport, "appProtocol", "http");
    if (!spec)
        return true;
    if (disagg)
        json_array_append_new(json_object_get(spec, "targetPorts"),
                              json_pack("{s:i}", "number", pport));
    if (have) {
        const json_t *hs = json_object_get(have, "spec");
        const char *mn = fatia_ctlr_obj_annotation(have, MODELNAME_ANN);
        const char *dd = fatia_ctlr_obj_annotation(have, DECIDER_ANN);
        if (!json_equal(json_object_get(hs, "selector"), json_object_get(spec, "selector")) ||
            !json_equal(json_object_get(hs, "targetPorts"), json_object_get(spec, "targetPorts")) ||
            !mn || strcmp(mn, served_name(o)) || !dd || strcmp(dd, decider)) {
            obj = json_deep_copy(have);
            if (obj) {
                json_t *a =
                    fatia_json_object_ensure(json_object_get(obj, "metadata"), "annotations");
                json_object_set(obj, "spec", spec);
                json_object_set_new(a, MODELNAME_ANN, json_string(served_name(o)));
                json_object_set_new(a, DECIDER_ANN, json_string(decider));
                fatia_ctlr_update(
                    lc->ctl, obj,
                    &(struct op_opts){
                        .wq = lc->q, .key = key, .quiet_conflict = true, .quiet_missing = true});
            }
        }
    } else {
        obj = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s},s:{s:s,s:s},s:o},s:O}", "apiVersion",
                        "inference.networking.k8s.io/v1", "kind", "InferencePool", "metadata",
                        "name", pname, "namespace", ns, "labels", "app.kubernetes.io/name", name,
                        "annotations", MODELNAME_ANN, served_name(o), DECIDER_ANN, decider,
                        "ownerReferences", owner_refs(o), "spec", spec);
        if (obj)
            fatia_ctlr_create(lc->ctl, obj, &(struct op_opts){.wq = lc->q, .key = key});
    }
    json_decref(obj);
    json_decref(spec);
    return true;
}

/* Whether a workload's Deployment is Available with its replicas ready; *ready gets them. */
static bool workload_ready(struct llmisvc_ctl *lc, const json_t *o, bool prefill, int64_t *ready)
{
    const json_t *w = prefill ? fatia_json_path(o, "spec.prefill") : json_object_get(o, "spec");
    char dname[300];
    const json_t *d;
    int64_t want = 1, gen = 0, obs = -1;

    snprintf(dname, sizeof(dname), "%.200s-kserve%s", fatia_ctlr_meta_str(o, "name"),
             prefill ? "-prefill" : "");
    d = fatia_ctlr_informer_get(lc->deploys, fatia_ctlr_meta_str(o, "namespace"), dname);
    *ready = 0;
    fatia_json_int(w, "replicas", &want);
    if (!d)
        return false;
    fatia_json_int(json_object_get(d, "status"), "readyReplicas", ready);
    fatia_json_int(json_object_get(d, "metadata"), "generation", &gen);
    fatia_json_int(json_object_get(d, "status"), "observedGeneration", &obs);
    return obs >= gen && *ready >= want && (want == 0 || fatia_ctlr_cond_true(d, "Available"));
}

static void write_status(struct llmisvc_ctl *lc, const char *key, const json_t *o, bool disagg,
                         const char *conflict)
{
    const char *name = fatia_ctlr_meta_str(o, "name"), *ns = fatia_ctlr_meta_str(o, "namespace");
    const json_t *old = json_object_get(o, "status");
    int64_t gen = 0, rd = 0, rp = 0;
    bool dok = workload_ready(lc, o, false, &rd), pok = !disagg || workload_ready(lc, o, true, &rp);
    char pname[300], url[600], msg[400], kept[200] = "";
    bool router = false, wl, ready;
    fatia_usec_t now = fatia_ctlr_now(lc->ctl);
    json_t *conds, *st, *obj;

    snprintf(pname, sizeof(pname), "%.200s-inference-pool", name);
    router = !conflict && fatia_ctlr_informer_get(lc->pools, ns, pname);
    wl = !conflict && dok && pok;
    ready = wl && router;
    fatia_json_int(json_object_get(o, "metadata"), "generation", &gen);
    conds = json_deep_copy(json_object_get(old, "conditions"));
    if (!json_is_array(conds)) {
        json_decref(conds);
        conds = json_array();
    }
    for (const char *const *f = (const char *const[]){"baseRefs", "router", "scaling", NULL}; *f;
         f++)
        if (json_object_get(json_object_get(o, "spec"), *f))
            snprintf(kept + strlen(kept), sizeof(kept) - strlen(kept), "%s%s", kept[0] ? ", " : "",
                     *f);
    if (kept[0])
        snprintf(msg, sizeof(msg), "not acted on (kept as written): spec.%s", kept);
    fatia_ctlr_cond_set(conds, "PresetsCombined", "True", "Combined", kept[0] ? msg : "", now);
    if (conflict)
        snprintf(msg, sizeof(msg), "%s", conflict);
    else if (disagg)
        snprintf(msg, sizeof(msg), "decode: %" PRId64 " ready%s; prefill: %" PRId64 " ready%s", rd,
                 dok ? "" : " (waiting)", rp, pok ? "" : " (waiting)");
    else
        snprintf(msg, sizeof(msg), "%" PRId64 " ready%s", rd, dok ? "" : " (waiting)");
    fatia_ctlr_cond_set(conds, "WorkloadsReady", wl ? "True" : "False",
                        conflict ? "ResourceConflict"
                        : wl     ? "MinimumReplicasAvailable"
                                 : "MinimumReplicasUnavailable",
                        wl ? "" : msg, now);
    fatia_ctlr_cond_set(conds, "RouterReady", router ? "True" : "False",
                        router ? "InferencePoolReady" : "InferencePoolMissing",
                        router ? "" : "the InferencePool is not there yet", now);
    fatia_ctlr_cond_set(conds, "Ready", ready ? "True" : "False",
                        ready ? "Ready"
                        : !wl ? "WorkloadsNotReady"
                              : "RouterNotReady",
                        ready ? "" : msg, now);
    snprintf(url, sizeof(url), "http://%s.%s.svc.cluster.local", name, ns);
    st = json_pack("{s:I,s:s,s:[{s:s}],s:o}", "observedGeneration", (json_int_t)gen, "url", url,
                   "addresses", "url", url, "conditions", conds);
    if (!st || (old && json_equal(st, old))) {
        json_decref(st);
        return;
    }
    obj = json_deep_copy(o);
    if (!obj) {
        json_decref(st);
        return;
    }
    if (ready && !fatia_ctlr_cond_true(o, "Ready"))
        fatia_ctlr_event(lc->ctl, o, COMPONENT, "Normal", "LLMInferenceServiceReady",
                         "LLMInferenceService %s is ready (%s)", name,
                         disagg ? "prefill/decode disaggregated" : "aggregated");
    json_object_set_new(obj, "status", st);
    fatia_ctlr_update_status(
        lc->ctl, obj,
        &(struct op_opts){.wq = lc->q, .key = key, .quiet_conflict = true, .quiet_missing = true});
    json_decref(obj);
}

static void reconcile(void *arg, const char *key)
{
    struct llmisvc_ctl *lc = arg;
    const json_t *o = fatia_ctlr_informer_get_key(lc->objs, key);
    bool disagg;
    int dport, pport;
    char conflict[400] = "";

    if (!o || fatia_ctlr_obj_deleting(o))
        return;
    disagg = json_is_object(fatia_json_path(o, "spec.prefill"));
    dport = fatia_ctlr_isvc_port(o);
    pport = prefill_port(o);
    if (!sync_workload(lc, key, o, false, disagg, dport))
        snprintf(conflict, sizeof(conflict),
                 "Deployment %.200s-kserve exists and is not owned by this LLMInferenceService",
                 fatia_ctlr_meta_str(o, "name"));
    if (disagg && !sync_workload(lc, key, o, true, true, pport))
        snprintf(conflict, sizeof(conflict),
                 "Deployment %.200s-kserve-prefill exists and is not owned by this "
                 "LLMInferenceService",
                 fatia_ctlr_meta_str(o, "name"));
    if (!disagg)
        drop_prefill(lc, key, o);
    if (!sync_pool(lc, key, o, dport, pport, disagg))
        snprintf(conflict, sizeof(conflict),
                 "InferencePool %.200s-inference-pool exists and is not owned by this "
                 "LLMInferenceService",
                 fatia_ctlr_meta_str(o, "name"));
    write_status(lc, key, o, disagg, conflict[0] ? conflict : NULL);
}

static void on_obj(void *arg, const json_t *old, const json_t *obj)
{
    struct llmisvc_ctl *lc = arg;
    char key[600];

    fatia_ctlr_obj_key(obj ? obj : old, key, sizeof(key));
    fatia_ctlr_wq_add(lc->q, key);
}

static void on_owned(void *arg, const json_t *old, const json_t *obj)
{
    struct llmisvc_ctl *lc = arg;
    const json_t *s = obj ? obj : old;
    const json_t *ref = fatia_ctlr_obj_controller_ref(s);
    const char *kind = fatia_json_str(ref, "kind"), *name = fatia_json_str(ref, "name");
    char key[600];

    if (!kind || !name || strcmp(kind, "LLMInferenceService"))
        return;
    fatia_ctlr_make_key(fatia_ctlr_meta_str(s, "namespace"), name, key, sizeof(key));
    fatia_ctlr_wq_add(lc->q, key);
}

int fatia_ctlr_llmisvc_ctl_new(struct ctl *c, struct llmisvc_ctl **ret)
{
    struct llmisvc_ctl *lc = fatia_calloc(1, sizeof(*lc));
    int rc;

    if (!lc)
        return -ENOMEM;
    lc->ctl = c;
    fatia_ctlr_fatia_bin(lc->bin, sizeof(lc->bin));
    lc->q = fatia_ctlr_wq_new(c, "llminferenceservice", reconcile, lc);
    lc->objs = fatia_ctlr_informer(
        c, fatia_kind_find("serving.kserve.io/v1alpha1", "LLMInferenceService", NULL));
    lc->deploys = fatia_ctlr_informer(c, fatia_kind_find("apps/v1", "Deployment", NULL));
    lc->pools = fatia_ctlr_informer(
        c, fatia_kind_find("inference.networking.k8s.io/v1", "InferencePool", NULL));
    if (!lc->q || !lc->objs || !lc->deploys || !lc->pools) {
        fatia_ctlr_llmisvc_ctl_free(lc);
        return -ENOMEM;
    }
    if ((rc = fatia_ctlr_informer_on(lc->objs, on_obj, lc)) < 0 ||
        (rc = fatia_ctlr_informer_on(lc->deploys, on_owned, lc)) < 0 ||
        (rc = fatia_ctlr_informer_on(lc->pools, on_owned, lc)) < 0) {
        fatia_ctlr_llmisvc_ctl_free(lc);
        return rc;
    }
    *ret = lc;
    return 0;
}

void fatia_ctlr_llmisvc_ctl_free(struct llmisvc_ctl *lc)
{
    if (!lc)
        return;
    fatia_ctlr_wq_free(lc->q);
    fatia_free(lc);
}
