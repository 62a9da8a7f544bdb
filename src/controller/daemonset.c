/*
 * controller/daemonset.c: the DaemonSet controller (apps/v1), as kube-controller-manager's
 * (pkg/controller/daemon/daemon_controller.go): one pod of the template on every node that the
 * template's nodeSelector matches and whose NoSchedule/NoExecute taints the template tolerates.
 *
 * Model, one pass per DaemonSet key: for each Node (a NoSchedule taint keeps new pods away, a
 * NoExecute one evicts, as upstream's NodeShouldRunDaemonPod), the set's pods there (controller
 * ownerReference its uid, labelled for the node by nodeSelector kubernetes.io/hostname, which
 * the placement controller honours as for any pod); an eligible node without a live pod gets one
 * (generateName "<name>-"); extra pods on a node, pods on ineligible or vanished nodes, and
 * finished pods are deleted. RollingUpdate: pods whose controller-revision-hash is not the
 * template's are deleted, at most maxUnavailable of the set's pods unavailable at a time (the
 * replacement follows on the next pass); OnDelete: never. Status: desiredNumberScheduled,
 * currentNumberScheduled, numberReady, numberAvailable, numberUnavailable,
 * updatedNumberScheduled, numberMisscheduled, observedGeneration.
 *
 * Upstream binds daemon pods with a node affinity on metadata.name; fatia's pods have one
 * scheduler, the placement controller, and kubernetes.io/hostname is its node key: the same
 * effect. Not done: maxSurge, minReadySeconds, ControllerRevisions.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "controller/ctl_internal.h"
#include "controller/rollout.h"

#define REV_LABEL  "controller-revision-hash"
#define HOST_LABEL "kubernetes.io/hostname"

struct daemonset_ctl {
    struct ctl *ctl;
    struct wq *q;
    struct informer *sets, *pods, *nodes;
};

static void revision_of(const json_t *ds, char *buf, size_t n)
{
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    char *s = json_dumps(fatia_json_path(ds, "spec.template"), JSON_SORT_KEYS | JSON_COMPACT);
    uint32_t h = 2166136261u;
    char dec[16];
    size_t i;

    for (const char *p = s ? s : ""; *p; p++) {
        h ^= (unsigned char)*p;
        h *= 16777619u;
    }
    free(s);
    snprintf(dec, sizeof(dec), "%u", h);
    for (i = 0; dec[i] && i + 1 < n; i++)
        buf[i] = alphabet[(unsigned char)dec[i] % (sizeof(alphabet) - 1)];
    buf[i] = '\0';
}

static bool tolerates(const json_t *tols, const json_t *taint)
{
    const char *tk = fatia_json_str(taint, "key"), *tv = fatia_json_str(taint, "value");
    const char *te = fatia_json_str(taint, "effect");
    size_t i;
    json_t *t;

    json_array_foreach(tols, i, t)
    {
        const char *k = fatia_json_str(t, "key"), *op = fatia_json_str(t, "operator");
        const char *v = fatia_json_str(t, "value"), *e = fatia_json_str(t, "effect");
        if (e && *e && te && strcmp(e, te))
            continue;
        if (k && *k && (!tk || strcmp(k, tk)))
            continue;
        if (op && !strcmp(op, "Exists"))
            return true; /* the key matched, or an empty key with Exists matches every taint */
        if (!k || !*k)
            continue; /* Equal needs a key */
        if (!strcmp(v ? v : "", tv ? tv : ""))
            return true;
    }
    return false;
}

/* Should a daemon pod run on node (for_new: be created there)? The nodeSelector must match; a
 * NoExecute taint not tolerated evicts, a NoSchedule one only keeps new pods away (upstream
 * NodeShouldRunDaemonPod: shouldRun / shouldContinueRunning). */
static bool node_eligible(const json_t *ds, const json_t *node, bool for_new)
{
    const json_t *sel = fatia_json_path(ds, "spec.template.spec.nodeSelector");
    const json_t *labels = fatia_json_path(node, "metadata.labels");
    const json_t *tols = fatia_json_path(ds, "spec.template.spec.tolerations");
    const char *k;
    json_t *v, *taint;
    size_t i;

    json_object_foreach((json_t *)sel, k, v)
    {
        const char *lv = fatia_json_str(labels, k);
        if (!json_is_string(v) || !lv || strcmp(lv, json_string_value(v)))
            return false;
    }
    json_array_foreach(fatia_json_path(node, "spec.taints"), i, taint)
    {
        const char *e = fatia_json_str(taint, "effect");
        if (e && (!strcmp(e, "NoExecute") || (for_new && !strcmp(e, "NoSchedule"))) &&
            !tolerates(tols, taint))
            return false;
    }
    return !fatia_ctlr_obj_deleting(node);
}

static json_t *owner_of(const json_t *ds)
{
    return json_pack("[{s:s,s:s,s:s,s:s,s:b,s:b}]", "apiVersion", "apps/v1", "kind", "DaemonSet",
                     "name", fatia_ctlr_meta_str(ds, "name"), "uid", fatia_ctlr_meta_str(ds, "uid"),
                     "controller", 1, "blockOwnerDeletion", 1);
}

static void create_pod(struct daemonset_ctl *c, const char *key, const json_t *ds, const char *node,
                       const char *rev)
{
    const json_t *tmpl = fatia_json_path(ds, "spec.template");
    json_t *labels = json_deep_copy(fatia_json_path(tmpl, "metadata.labels"));
    json_t *spec = json_deep_copy(json_object_get(tmpl, "spec")), *meta, *pod, *ns;
    char prefix[300];

    snprintf(prefix, sizeof(prefix), "%.200s-", fatia_ctlr_meta_str(ds, "name"));
    if (!labels)
        labels = json_object();
    json_object_set_new(labels, REV_LABEL, json_string(rev));
    meta = json_pack("{s:s,s:s,s:o,s:o}", "generateName", prefix, "namespace",
                     fatia_ctlr_meta_str(ds, "namespace"), "labels", labels, "ownerReferences",
                     owner_of(ds));
    ns = spec ? fatia_json_object_ensure(spec, "nodeSelector") : NULL;
    if (!meta || !ns) {
        json_decref(meta);
        json_decref(spec);
        return;
    }
    json_object_set_new(ns, HOST_LABEL, json_string(node));
    pod = json_pack("{s:s,s:s,s:o,s:o}", "apiVersion", "v1", "kind", "Pod", "metadata", meta,
                    "spec", spec);
    if (pod)
        fatia_ctlr_create(c->ctl, pod, &(struct op_opts){.wq = c->q, .key = key});
    json_decref(pod);
}

static void delete_pod(struct daemonset_ctl *c, const char *key, const json_t *pod)
{
    fatia_ctlr_delete(c->ctl, c->pods->kind, fatia_ctlr_meta_str(pod, "namespace"),
                      fatia_ctlr_meta_str(pod, "name"), fatia_ctlr_meta_str(pod, "uid"),
                      &(struct op_opts){.wq = c->q, .key = key, .quiet_missing = true});
}

static const char *pod_node(const json_t *pod)
{
    const char *n = fatia_json_str(json_object_get(pod, "spec"), "nodeName");

    return n ? n : fatia_json_str(fatia_json_path(pod, "spec.nodeSelector"), HOST_LABEL);
}

static bool pod_ready(const json_t *pod)
{
    return fatia_ctlr_cond_true(pod, "Ready") && !fatia_ctlr_obj_deleting(pod);
}

static void reconcile(void *arg, const char *key)
{
    struct daemonset_ctl *c = arg;
    const json_t *ds = fatia_ctlr_informer_get_key(c->sets, key);
    const struct fatia_strmap *owned;
    int64_t desired = 0, current = 0, ready = 0, updated = 0, mis = 0, unavailable = 0, gen = 0;
    int64_t surge, max_unavail;
    const char *strategy;
    char rev[16];
    json_t *st, *obj;

    if (!ds || fatia_ctlr_obj_deleting(ds))
        return;
    revision_of(ds, rev, sizeof(rev));
    strategy = fatia_json_str(fatia_json_path(ds, "spec.updateStrategy"), "type");
    owned = fatia_ctlr_informer_owned(c->pods, fatia_ctlr_meta_str(ds, "uid"));

    /* pods on nodes that are gone or ineligible, and finished ones */
    for (size_t i = 0; owned && i < owned->cap; i++) {
        const struct informer_item *it;
        const json_t *node;
        const char *phase;
        if (!owned->slots[i].key)
            continue;
        it = owned->slots[i].val;
        if (fatia_ctlr_obj_deleting(it->obj))
            continue;
        node =
            pod_node(it->obj) ? fatia_ctlr_informer_get(c->nodes, NULL, pod_node(it->obj)) : NULL;
        phase = fatia_json_str(json_object_get(it->obj, "status"), "phase");
        if (!node || !node_eligible(ds, node, false)) {
            mis++;
            delete_pod(c, key, it->obj);
        } else if (phase && (!strcmp(phase, "Failed") || !strcmp(phase, "Succeeded"))) {
            delete_pod(c, key, it->obj);
        }
    }
    INFORMER_FOREACH(c->nodes, nit)
    {
        const char *nname = fatia_ctlr_meta_str(nit->obj, "name");
        const json_t *keep = NULL;
        bool can_new;
        if (!nname || !node_eligible(ds, nit->obj, false))
            continue;
        can_new = node_eligible(ds, nit->obj, true);
        for (size_t i = 0; owned && i < owned->cap; i++) {
            const struct informer_item *it;
            const char *pn, *phase;
            if (!owned->slots[i].key)
                continue;
            it = owned->slots[i].val;
            pn = pod_node(it->obj);
            phase = fatia_json_str(json_object_get(it->obj, "status"), "phase");
            if (!pn || strcmp(pn, nname) || fatia_ctlr_obj_deleting(it->obj) ||
                (phase && (!strcmp(phase, "Failed") || !strcmp(phase, "Succeeded"))))
                continue;
            if (!keep)
                keep = it->obj;
            else
                delete_pod(c, key, it->obj); /* one per node */
        }
        if (!keep) {
            if (can_new) {
                desired++;
                create_pod(c, key, ds, nname, rev);
                unavailable++;
            }
            continue;
        }
        desired++;
        current++;
        if (pod_ready(keep))
            ready++;
        else
            unavailable++;
        if (fatia_ctlr_obj_label(keep, REV_LABEL) &&
            !strcmp(fatia_ctlr_obj_label(keep, REV_LABEL), rev))
            updated++;
    }
    /* rolling update: old pods deleted while no more than maxUnavailable are unavailable */
    if (!strategy || !strcmp(strategy, "RollingUpdate")) {
        fatia_ctlr_rollout_fenceposts(
            fatia_json_path(ds, "spec.updateStrategy.rollingUpdate.maxSurge"),
            fatia_json_path(ds, "spec.updateStrategy.rollingUpdate.maxUnavailable"), desired,
            &surge, &max_unavail);
        for (size_t i = 0; owned && i < owned->cap && unavailable < max_unavail; i++) {
            const struct informer_item *it;
            const char *r;
            if (!owned->slots[i].key)
                continue;
            it = owned->slots[i].val;
            r = fatia_ctlr_obj_label(it->obj, REV_LABEL);
            if (fatia_ctlr_obj_deleting(it->obj) || (r && !strcmp(r, rev)) || !pod_ready(it->obj))
                continue;
            delete_pod(c, key, it->obj);
            unavailable++;
        }
    }
    fatia_json_int(json_object_get(ds, "metadata"), "generation", &gen);
    st = json_pack(
        "{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "observedGeneration", (json_int_t)gen,
        "desiredNumberScheduled", (json_int_t)desired, "currentNumberScheduled",
        (json_int_t)current, "numberReady", (json_int_t)ready, "numberAvailable", (json_int_t)ready,
        "numberUnavailable", (json_int_t)(desired - ready > 0 ? desired - ready : 0),
        "updatedNumberScheduled", (json_int_t)updated, "numberMisscheduled", (json_int_t)mis);
    if (!st || json_equal(st, json_object_get(ds, "status"))) {
        json_decref(st);
        return;
    }
    obj = json_deep_copy(ds);
    if (obj) {
        json_object_set_new(obj, "status", st);
        fatia_ctlr_update_status(
            c->ctl, obj,
            &(struct op_opts){
                .wq = c->q, .key = key, .quiet_conflict = true, .quiet_missing = true});
    } else {
        json_decref(st);
    }
    json_decref(obj);
}

static void on_set(void *arg, const json_t *old, const json_t *obj)
{
    struct daemonset_ctl *c = arg;
    char key[600];

    fatia_ctlr_obj_key(obj ? obj : old, key, sizeof(key));
    fatia_ctlr_wq_add(c->q, key);
}

static void on_pod(void *arg, const json_t *old, const json_t *obj)
{
    struct daemonset_ctl *c = arg;
    const json_t *p = obj ? obj : old;
    const json_t *ref = fatia_ctlr_obj_controller_ref(p);
    const char *kind = fatia_json_str(ref, "kind"), *name = fatia_json_str(ref, "name");
    char key[600];

    if (!kind || !name || strcmp(kind, "DaemonSet"))
        return;
    fatia_ctlr_make_key(fatia_ctlr_meta_str(p, "namespace"), name, key, sizeof(key));
    fatia_ctlr_wq_add(c->q, key);
}

/* a node's change (labels, taints, a new node) concerns every DaemonSet */
static void on_node(void *arg, const json_t *old, const json_t *obj)
{
    struct daemonset_ctl *c = arg;

    (void)old;
    (void)obj;
    INFORMER_FOREACH(c->sets, it)
    fatia_ctlr_wq_add(c->q, it->key);
}

int fatia_ctlr_daemonset_ctl_new(struct ctl *ctl, struct daemonset_ctl **ret)
{
    struct daemonset_ctl *c = fatia_calloc(1, sizeof(*c));
    int rc;

    if (!c)
        return -ENOMEM;
    c->ctl = ctl;
    c->q = fatia_ctlr_wq_new(ctl, "daemonset", reconcile, c);
    c->sets = fatia_ctlr_informer(ctl, fatia_kind_find("apps/v1", "DaemonSet", NULL));
    c->pods = fatia_ctlr_informer(ctl, fatia_kind_find("v1", "Pod", NULL));
    c->nodes = fatia_ctlr_informer(ctl, fatia_kind_find("v1", "Node", NULL));
    if (!c->q || !c->sets || !c->pods || !c->nodes) {
        fatia_ctlr_daemonset_ctl_free(c);
        return -ENOMEM;
    }
    fatia_ctlr_informer_index_owners(c->pods);
    if ((rc = fatia_ctlr_informer_on(c->sets, on_set, c)) < 0 ||
        (rc = fatia_ctlr_informer_on(c->pods, on_pod, c)) < 0 ||
        (rc = fatia_ctlr_informer_on(c->nodes, on_node, c)) < 0) {
        fatia_ctlr_daemonset_ctl_free(c);
        return rc;
    }
    *ret = c;
    return 0;
}

void fatia_ctlr_daemonset_ctl_free(struct daemonset_ctl *c)
{
    if (!c)
        return;
    fatia_ctlr_wq_free(c->q);
    fatia_free(c);
}
