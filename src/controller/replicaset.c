/*
 * controller/replicaset.c: the ReplicaSet controller (apps/v1): keeps spec.replicas pods of the
 * template alive and reports how many are, as kube-controller-manager's ReplicaSetController
 * (pkg/controller/replicaset/replica_set.go, syncReplicaSet / manageReplicas) does.
 *
 * Model: a ReplicaSet's pods are the pods whose controller ownerReference names its uid (the
 * Pod informer's owner index); pods that are terminating or finished (Succeeded, Failed) do not
 * count. Fewer than wanted: create the difference from the template (generateName "<rs>-",
 * the template's labels and annotations, a controller ownerReference), at most BURST per pass
 * (upstream's burstReplicas, 500). More: delete the surplus, those upstream deletes first
 * (controller.ActivePods ordering, simplified): unbound before bound, pending before running,
 * not ready before ready, the newest first. Then status: replicas, fullyLabeledReplicas,
 * readyReplicas, availableReplicas (ready; minReadySeconds is not waited for), observedGeneration.
 *
 * Invariant: no second pass over a key while its writes are in flight (the work queue's
 * begin/end), and a write's answer is folded into the informer before the key is released, so a
 * pass never counts without the pods it just created (upstream's "expectations").
 *
 * Not done: adopting orphans whose labels match (upstream's ControllerRefManager) and releasing
 * owned pods whose labels stopped matching; pods are only ever those this controller created.
 * The garbage collector (gc.c) deletes a ReplicaSet's pods when it goes.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "controller/ctl_internal.h"
#include "model/selector.h"

#define BURST 500

struct replicaset_ctl {
    struct ctl *ctl;
    struct wq *q;
    struct informer *rs, *pods;
};

static bool pod_active(const json_t *pod)
{
    const char *phase = fatia_json_str(json_object_get(pod, "status"), "phase");

    return !fatia_ctlr_obj_deleting(pod) &&
           !(phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")));
}

/* Deletion preference, lower first: unbound 0, pending 1, not ready 2, ready 3. */
static int pod_rank(const json_t *pod)
{
    const char *phase = fatia_json_str(json_object_get(pod, "status"), "phase");

    if (!fatia_json_str(json_object_get(pod, "spec"), "nodeName"))
        return 0;
    if (!phase || !strcmp(phase, "Pending"))
        return 1;
    if (!fatia_ctlr_cond_true(pod, "Ready"))
        return 2;
    return 3;
}

struct owned {
    const json_t *pod;
    int rank;
    const char *created;
};

static int cmp_owned(const void *a, const void *b)
{
    const struct owned *x = a, *y = b;
    int c;

    if (x->rank != y->rank)
        return x->rank - y->rank;
    /* newer first: RFC 3339 UTC times compare as strings */
    c = strcmp(y->created ? y->created : "", x->created ? x->created : "");
    return c;
}

static json_t *pod_from_template(const json_t *rs)
{
    const json_t *tmpl = fatia_json_path(rs, "spec.template");
    const json_t *tmeta = json_object_get(tmpl, "metadata");
    json_t *meta, *pod;
    char prefix[300];

    snprintf(prefix, sizeof(prefix), "%s-", fatia_ctlr_meta_str(rs, "name"));
    meta = json_pack("{s:s,s:s,s:[{s:s,s:s,s:s,s:s,s:b,s:b}]}", "namespace",
                     fatia_ctlr_meta_str(rs, "namespace"), "generateName", prefix,
                     "ownerReferences", "apiVersion", "apps/v1", "kind", "ReplicaSet", "name",
                     fatia_ctlr_meta_str(rs, "name"), "uid", fatia_ctlr_meta_str(rs, "uid"),
                     "controller", 1, "blockOwnerDeletion", 1);
    if (!meta)
        return NULL;
    if (json_object_get(tmeta, "labels"))
        json_object_set_new(meta, "labels", json_deep_copy(json_object_get(tmeta, "labels")));
    if (json_object_get(tmeta, "annotations"))
        json_object_set_new(meta, "annotations",
                            json_deep_copy(json_object_get(tmeta, "annotations")));
    pod = json_pack("{s:s,s:s,s:o,s:o}", "apiVersion", "v1", "kind", "Pod", "metadata", meta,
                    "spec", json_deep_copy(json_object_get(tmpl, "spec")));
    return pod;
}

static void write_status(struct replicaset_ctl *r, const char *key, const json_t *rs, int64_t n,
                         int64_t labeled, int64_t ready)
{
    json_t *st = json_object_get(rs, "status");
    int64_t gen = 0, old;
    json_t *obj, *nst;

    fatia_json_int(json_object_get(rs, "metadata"), "generation", &gen);
    if (fatia_json_int(st, "replicas", &old) && old == n &&
        fatia_json_int(st, "readyReplicas", &old) && old == ready &&
        fatia_json_int(st, "availableReplicas", &old) && old == ready &&
        fatia_json_int(st, "fullyLabeledReplicas", &old) && old == labeled &&
        fatia_json_int(st, "observedGeneration", &old) && old == gen)
        return;
    obj = json_deep_copy(rs);
    if (!obj)
        return;
    nst = json_pack("{s:I,s:I,s:I,s:I,s:I}", "replicas", (json_int_t)n, "fullyLabeledReplicas",
                    (json_int_t)labeled, "readyReplicas", (json_int_t)ready, "availableReplicas",
                    (json_int_t)ready, "observedGeneration", (json_int_t)gen);
    json_object_set_new(obj, "status", nst);
    fatia_ctlr_update_status(
        r->ctl, obj,
        &(struct op_opts){.wq = r->q, .key = key, .quiet_conflict = true, .quiet_missing = true});
    json_decref(obj);
}

static void reconcile(void *arg, const char *key)
{
    struct replicaset_ctl *r = arg;
    const json_t *rs = fatia_ctlr_informer_get_key(r->rs, key);
    const struct fatia_strmap *owned;
    struct fatia_selector *sel = NULL;
    struct owned *v = NULL;
    size_t n = 0, cap = 0;
    int64_t want = 1, labeled = 0, ready = 0;
    char why[200];

    if (!rs || fatia_ctlr_obj_deleting(rs))
        return;
    fatia_json_int(json_object_get(rs, "spec"), "replicas", &want);
    if (fatia_selector_from_json(fatia_json_path(rs, "spec.selector"), &sel, why, sizeof(why)) < 0)
        sel = NULL;
    owned = fatia_ctlr_informer_owned(r->pods, fatia_ctlr_meta_str(rs, "uid"));
    for (size_t i = 0; owned && i < owned->cap; i++) {
        const struct informer_item *it;
        const json_t *ref;
        if (!owned->slots[i].key)
            continue;
        it = owned->slots[i].val;
        ref = fatia_ctlr_obj_controller_ref(it->obj);
        if (!ref ||
            strcmp(fatia_json_str(ref, "uid") ? fatia_json_str(ref, "uid") : "",
                   fatia_ctlr_meta_str(rs, "uid")) ||
            !pod_active(it->obj))
            continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            struct owned *nv = fatia_realloc(v, nc * sizeof(*v));
            if (!nv)
                goto out;
            v = nv;
            cap = nc;
        }
        v[n++] = (struct owned){it->obj, pod_rank(it->obj),
                                fatia_ctlr_meta_str(it->obj, "creationTimestamp")};
        labeled += sel && fatia_selector_matches(sel, fatia_json_path(it->obj, "metadata.labels"));
        ready += fatia_ctlr_cond_true(it->obj, "Ready");
    }
    if ((int64_t)n < want && fatia_json_path(rs, "spec.template.spec")) {
        int64_t add = want - (int64_t)n;
        if (add > BURST)
            add = BURST;
        for (int64_t i = 0; i < add; i++) {
            json_t *pod = pod_from_template(rs);
            if (!pod)
                break;
            fatia_ctlr_create(r->ctl, pod, &(struct op_opts){.wq = r->q, .key = key});
            json_decref(pod);
        }
        if (add == BURST)
            fatia_ctlr_wq_add_after(r->q, key, FATIA_USEC_PER_SEC);
    } else if ((int64_t)n > want) {
        qsort(v, n, sizeof(*v), cmp_owned);
        for (size_t i = 0; i < n - (size_t)want && i < BURST; i++)
            fatia_ctlr_delete(r->ctl, r->pods->kind, fatia_ctlr_meta_str(v[i].pod, "namespace"),
                              fatia_ctlr_meta_str(v[i].pod, "name"),
                              fatia_ctlr_meta_str(v[i].pod, "uid"),
                              &(struct op_opts){.wq = r->q, .key = key, .quiet_missing = true});
    }
    write_status(r, key, rs, (int64_t)n, labeled, ready);
out:
    fatia_selector_free(sel);
    fatia_free(v);
}

static void on_rs(void *arg, const json_t *old, const json_t *obj)
{
    struct replicaset_ctl *r = arg;
    char key[600];

    fatia_ctlr_obj_key(obj ? obj : old, key, sizeof(key));
    fatia_ctlr_wq_add(r->q, key);
}

static void on_pod(void *arg, const json_t *old, const json_t *obj)
{
    struct replicaset_ctl *r = arg;
    const json_t *p = obj ? obj : old;
    const json_t *ref = fatia_ctlr_obj_controller_ref(p);
    const char *kind = fatia_json_str(ref, "kind"), *name = fatia_json_str(ref, "name");
    char key[600];

    if (!kind || !name || strcmp(kind, "ReplicaSet"))
        return;
    fatia_ctlr_make_key(fatia_ctlr_meta_str(p, "namespace"), name, key, sizeof(key));
    fatia_ctlr_wq_add(r->q, key);
}

int fatia_ctlr_replicaset_ctl_new(struct ctl *c, struct replicaset_ctl **ret)
{
    struct replicaset_ctl *r = fatia_calloc(1, sizeof(*r));
    int rc;

    if (!r)
        return -ENOMEM;
    r->ctl = c;
    r->q = fatia_ctlr_wq_new(c, "replicaset", reconcile, r);
    r->rs = fatia_ctlr_informer(c, fatia_kind_find("apps/v1", "ReplicaSet", NULL));
    r->pods = fatia_ctlr_informer(c, fatia_kind_find("v1", "Pod", NULL));
    if (!r->q || !r->rs || !r->pods) {
        fatia_ctlr_replicaset_ctl_free(r);
        return -ENOMEM;
    }
    fatia_ctlr_informer_index_owners(r->pods);
    if ((rc = fatia_ctlr_informer_on(r->rs, on_rs, r)) < 0 ||
        (rc = fatia_ctlr_informer_on(r->pods, on_pod, r)) < 0) {
        fatia_ctlr_replicaset_ctl_free(r);
        return rc;
    }
    *ret = r;
    return 0;
}

void fatia_ctlr_replicaset_ctl_free(struct replicaset_ctl *r)
{
    if (!r)
        return;
    fatia_ctlr_wq_free(r->q);
    fatia_free(r);
}
