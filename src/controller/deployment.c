/*
 * controller/deployment.c: the Deployment controller (apps/v1), as kube-controller-manager's
 * (pkg/controller/deployment: sync.go, rolling.go, recreate.go, progress.go): a Deployment owns
 * one ReplicaSet per pod template it has had; the one whose template is the Deployment's is the
 * new set, the rest are old; the rollout moves pods from the old sets to the new one.
 *
 * Model, one pass per Deployment key:
 *   1. its ReplicaSets: those whose controller ownerReference is its uid;
 *   2. the new set: the one whose template, less the pod-template-hash label, equals the
 *      Deployment's; none: create "<name>-<hash>" (hash: FNV-1a of the template's canonical JSON,
 *      in upstream's SafeEncodeString alphabet) with the hash label added to its selector,
 *      labels and template, revision = the highest revision + 1; an old template brought back
 *      (`kubectl rollout undo` patches it in) takes the next revision the same way;
 *   3. RollingUpdate: the new set grows to at most replicas + maxSurge pods in all, the old ones
 *      shrink while replicas - maxUnavailable stay available (rollout.c, upstream's arithmetic);
 *      Recreate: the old sets go to 0, and the new one grows only once no old pod is left;
 *      a paused Deployment is not rolled (its sets keep their sizes);
 *   4. old sets at 0 beyond revisionHistoryLimit are deleted, oldest first;
 *   5. the Deployment's annotation deployment.kubernetes.io/revision follows the new set's, and
 *      its status: replicas, updatedReplicas, readyReplicas, availableReplicas,
 *      unavailableReplicas, observedGeneration, conditions Available and Progressing (reason
 *      NewReplicaSetAvailable once complete), which `kubectl rollout status` reads.
 * Each write is one ReplicaSet's spec.replicas (an update carrying resourceVersion: a stale view
 * loses with 409 and the key runs again); the next step waits for the ReplicaSet controller's
 * status (availability), which comes back through the ReplicaSet informer.
 *
 * Not done: progressDeadlineSeconds (no ProgressDeadlineExceeded), minReadySeconds (available =
 * ready), proportional scaling of several old sets during a rollout when replicas change
 * (upstream's scale()), adoption of orphaned ReplicaSets, collisionCount.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "controller/ctl_internal.h"
#include "controller/rollout.h"

#define HASH_LABEL "pod-template-hash"
#define REV_ANN    "deployment.kubernetes.io/revision"
#define MAX_SETS   64

struct deployment_ctl {
    struct ctl *ctl;
    struct wq *q;
    struct informer *deploys, *sets;
};

struct set {
    const json_t *rs;
    int64_t spec, replicas, ready, available, rev;
    const char *created, *name;
};

static int64_t ann_int(const json_t *obj, const char *ann)
{
    const char *s = fatia_ctlr_obj_annotation(obj, ann);
    int64_t v = 0;

    for (; s && *s >= '0' && *s <= '9'; s++)
        v = v * 10 + (*s - '0');
    return v;
}

/* Drops members that are null, {} or [] (what Go's omitempty leaves out: a typed client such as
 * `kubectl rollout undo` sends "resources": {} and "creationTimestamp": null where the stored
 * template has nothing). Only for comparing and hashing: what is stored is never changed. */
static void drop_empty(json_t *v, int depth)
{
    const char *key;
    json_t *m;
    void *tmp;
    size_t i;

    if (depth > 64)
        return;
    if (json_is_array(v)) {
        json_array_foreach(v, i, m) drop_empty(m, depth + 1);
        return;
    }
    json_object_foreach_safe(v, tmp, key, m)
    {
        drop_empty(m, depth + 1);
        if (json_is_null(m) || (json_is_object(m) && !json_object_size(m)) ||
            (json_is_array(m) && !json_array_size(m)))
            json_object_del(v, key);
    }
}

/* A template as compared: without the hash label and the empty members. Two templates that differ
 * only in an empty member (emptyDir: {} against none) compare equal: accepted, they are a
 * typed client's rendering of one template far more often than two templates. */
static json_t *normalized_template(const json_t *tmpl)
{
    json_t *t = json_deep_copy(tmpl);

    if (!t)
        return NULL;
    json_object_del(fatia_json_path(t, "metadata.labels"), HASH_LABEL);
    drop_empty(t, 0);
    return t;
}

/* FNV-1a 32 of the canonical JSON of the template, as a string of upstream's alphabet */
static void template_hash(const json_t *tmpl, char *buf, size_t n)
{
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    json_t *norm = normalized_template(tmpl);
    char *s = norm ? json_dumps(norm, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
    uint32_t h = 2166136261u;
    char dec[16];
    size_t i;

    for (const char *p = s ? s : ""; *p; p++) {
        h ^= (unsigned char)*p;
        h *= 16777619u;
    }
    free(s);
    json_decref(norm);
    snprintf(dec, sizeof(dec), "%u", h);
    for (i = 0; dec[i] && i + 1 < n; i++)
        buf[i] = alphabet[(unsigned char)dec[i] % (sizeof(alphabet) - 1)];
    buf[i] = '\0';
}

/* Does rs's template, less the hash label, equal the Deployment's (upstream EqualIgnoreHash)? */
static bool template_equal(const json_t *rs, const json_t *d)
{
    json_t *a = normalized_template(fatia_json_path(rs, "spec.template"));
    json_t *b = normalized_template(fatia_json_path(d, "spec.template"));
    bool eq = a && b && json_equal(a, b);

    json_decref(a);
    json_decref(b);
    return eq;
}

static int cmp_sets(const void *a, const void *b)
{
    const struct set *x = a, *y = b;
    int c = strcmp(x->created ? x->created : "", y->created ? y->created : "");

    return c ? c : strcmp(x->name ? x->name : "", y->name ? y->name : "");
}

static void scale_set(struct deployment_ctl *dc, const char *key, const json_t *rs, int64_t to,
                      const json_t *d, int64_t rev)
{
    json_t *obj = json_deep_copy(rs), *ann;
    char buf[32];

    if (!obj)
        return;
    json_object_set_new(json_object_get(obj, "spec"), "replicas", json_integer(to));
    ann = fatia_json_object_ensure(json_object_get(obj, "metadata"), "annotations");
    if (ann) {
        int64_t want = 1;
        fatia_json_int(json_object_get(d, "spec"), "replicas", &want);
        snprintf(buf, sizeof(buf), "%" PRId64, want);
        json_object_set_new(ann, "deployment.kubernetes.io/desired-replicas", json_string(buf));
        if (rev) {
            snprintf(buf, sizeof(buf), "%" PRId64, rev);
            json_object_set_new(ann, REV_ANN, json_string(buf));
        }
    }
    fatia_ctlr_update(
        dc->ctl, obj,
        &(struct op_opts){.wq = dc->q, .key = key, .quiet_conflict = true, .quiet_missing = true});
    json_decref(obj);
}

static void create_set(struct deployment_ctl *dc, const char *key, const json_t *d,
                       const char *hash, int64_t replicas, int64_t rev)
{
    const char *name = fatia_ctlr_meta_str(d, "name"), *ns = fatia_ctlr_meta_str(d, "namespace");
    json_t *tmpl = json_deep_copy(fatia_json_path(d, "spec.template"));
    json_t *sel = json_deep_copy(fatia_json_path(d, "spec.selector"));
    json_t *labels, *rs, *meta;
    char rsname[300], revs[32];

    if (!tmpl || !sel)
        goto out;
    labels = fatia_json_object_ensure(fatia_json_object_ensure(tmpl, "metadata"), "labels");
    if (!labels)
        goto out;
    json_object_set_new(labels, HASH_LABEL, json_string(hash));
    json_object_set_new(fatia_json_object_ensure(sel, "matchLabels"), HASH_LABEL,
                        json_string(hash));
    snprintf(rsname, sizeof(rsname), "%.200s-%s", name, hash);
    snprintf(revs, sizeof(revs), "%" PRId64, rev);
    meta = json_pack("{s:s,s:s,s:o,s:{s:s,s:s},s:[{s:s,s:s,s:s,s:s,s:b,s:b}]}", "name", rsname,
                     "namespace", ns, "labels", json_deep_copy(labels), "annotations", REV_ANN,
                     revs, "deployment.kubernetes.io/desired-replicas", "0", "ownerReferences",
                     "apiVersion", "apps/v1", "kind", "Deployment", "name", name, "uid",
                     fatia_ctlr_meta_str(d, "uid"), "controller", 1, "blockOwnerDeletion", 1);
    rs = meta ? json_pack("{s:s,s:s,s:o,s:{s:I,s:O,s:O}}", "apiVersion", "apps/v1", "kind",
                          "ReplicaSet", "metadata", meta, "spec", "replicas", (json_int_t)replicas,
                          "selector", sel, "template", tmpl)
              : NULL;
    if (rs) {
        int64_t mrs = 0;
        fatia_json_int(fatia_json_path(d, "spec"), "minReadySeconds", &mrs);
        if (mrs)
            json_object_set_new(json_object_get(rs, "spec"), "minReadySeconds", json_integer(mrs));
        fatia_ctlr_create(dc->ctl, rs, &(struct op_opts){.wq = dc->q, .key = key});
        fatia_ctlr_event(dc->ctl, d, "deployment-controller", "Normal", "ScalingReplicaSet",
                         "Scaled up replica set %s from 0 to %" PRId64, rsname, replicas);
    }
    json_decref(rs);
out:
    json_decref(tmpl);
    json_decref(sel);
}

static json_t *condition(const char *type, bool ok, const char *reason, const char *msg,
                         const json_t *old_conds, fatia_usec_t now)
{
    const char *status = ok ? "True" : "False";
    json_t *t = fatia_ctlr_json_time(now), *c;
    json_t *prev = NULL, *x;
    size_t i;

    json_array_foreach(old_conds, i, x)
    {
        const char *tt = fatia_json_str(x, "type");
        if (tt && !strcmp(tt, type))
            prev = x;
    }
    c = json_pack("{s:s,s:s,s:s,s:s,s:O,s:O}", "type", type, "status", status, "reason", reason,
                  "message", msg, "lastUpdateTime", t, "lastTransitionTime", t);
    if (c && prev) {
        const char *ps = fatia_json_str(prev, "status"), *pr = fatia_json_str(prev, "reason");
        if (ps && !strcmp(ps, status) && json_object_get(prev, "lastTransitionTime"))
            json_object_set(c, "lastTransitionTime", json_object_get(prev, "lastTransitionTime"));
        if (ps && !strcmp(ps, status) && pr && !strcmp(pr, reason) &&
            json_object_get(prev, "lastUpdateTime"))
            json_object_set(c, "lastUpdateTime", json_object_get(prev, "lastUpdateTime"));
    }
    json_decref(t);
    return c;
}

static void write_status(struct deployment_ctl *dc, const char *key, const json_t *d,
                         const struct set *sets, size_t n, const struct set *newset,
                         int64_t replicas, int64_t max_unavailable)
{
    int64_t total = 0, ready = 0, avail = 0, updated = newset ? newset->replicas : 0, gen = 0;
    const json_t *old = json_object_get(d, "status");
    json_t *st, *conds, *obj;
    bool complete, available;
    char msg[400];

    for (size_t i = 0; i < n; i++) {
        total += sets[i].replicas;
        ready += sets[i].ready;
        avail += sets[i].available;
    }
    fatia_json_int(json_object_get(d, "metadata"), "generation", &gen);
    available = avail >= replicas - max_unavailable;
    complete = newset && newset->replicas == replicas && newset->available == replicas &&
               total == replicas;
    conds = json_array();
    snprintf(msg, sizeof(msg),
             available ? "Deployment has minimum availability."
                       : "Deployment does not have minimum availability.");
    json_array_append_new(
        conds, condition("Available", available,
                         available ? "MinimumReplicasAvailable" : "MinimumReplicasUnavailable", msg,
                         json_object_get(old, "conditions"), fatia_ctlr_now(dc->ctl)));
    if (complete)
        snprintf(msg, sizeof(msg), "ReplicaSet \"%s\" has successfully progressed.", newset->name);
    else
        snprintf(msg, sizeof(msg), "ReplicaSet \"%s\" is progressing.", newset ? newset->name : "");
    json_array_append_new(conds,
                          condition("Progressing", true,
                                    complete ? "NewReplicaSetAvailable" : "ReplicaSetUpdated", msg,
                                    json_object_get(old, "conditions"), fatia_ctlr_now(dc->ctl)));
    st = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:o}", "observedGeneration", (json_int_t)gen,
                   "replicas", (json_int_t)total, "updatedReplicas", (json_int_t)updated,
                   "readyReplicas", (json_int_t)ready, "availableReplicas", (json_int_t)avail,
                   "unavailableReplicas", (json_int_t)(replicas - avail > 0 ? replicas - avail : 0),
                   "conditions", conds);
    if (!st)
        return;
    if (old && json_equal(st, old)) {
        json_decref(st);
        return;
    }
    obj = json_deep_copy(d);
    if (!obj) {
        json_decref(st);
        return;
    }
    json_object_set_new(obj, "status", st);
    fatia_ctlr_update_status(
        dc->ctl, obj,
        &(struct op_opts){.wq = dc->q, .key = key, .quiet_conflict = true, .quiet_missing = true});
    json_decref(obj);
}

/* the Deployment's revision annotation follows the new set's */
static bool sync_revision(struct deployment_ctl *dc, const char *key, const json_t *d, int64_t rev)
{
    json_t *obj, *ann;
    char buf[32];

    if (!rev || ann_int(d, REV_ANN) == rev)
        return false;
    obj = json_deep_copy(d);
    ann = obj ? fatia_json_object_ensure(json_object_get(obj, "metadata"), "annotations") : NULL;
    if (!ann) {
        json_decref(obj);
        return false;
    }
    snprintf(buf, sizeof(buf), "%" PRId64, rev);
    json_object_set_new(ann, REV_ANN, json_string(buf));
    fatia_ctlr_update(
        dc->ctl, obj,
        &(struct op_opts){.wq = dc->q, .key = key, .quiet_conflict = true, .quiet_missing = true});
    json_decref(obj);
    return true;
}

static void reconcile(void *arg, const char *key)
{
    struct deployment_ctl *dc = arg;
    const json_t *d = fatia_ctlr_informer_get_key(dc->deploys, key);
    const struct fatia_strmap *owned;
    struct set sets[MAX_SETS];
    struct fatia_rollout_rs olds[MAX_SETS];
    size_t n = 0, n_old = 0, old_idx[MAX_SETS];
    struct set *newset = NULL;
    int64_t replicas = 1, surge, unavail, max_rev = 0, limit = 10, all_spec = 0;
    const char *type;
    bool paused, wrote = false;
    char hash[16];

    if (!d || fatia_ctlr_obj_deleting(d))
        return;
    fatia_json_int(json_object_get(d, "spec"), "replicas", &replicas);
    fatia_json_int(json_object_get(d, "spec"), "revisionHistoryLimit", &limit);
    type = fatia_json_str(fatia_json_path(d, "spec.strategy"), "type");
    paused = json_is_true(fatia_json_path(d, "spec.paused"));
    fatia_ctlr_rollout_fenceposts(fatia_json_path(d, "spec.strategy.rollingUpdate.maxSurge"),
                                  fatia_json_path(d, "spec.strategy.rollingUpdate.maxUnavailable"),
                                  replicas, &surge, &unavail);
    if (type && !strcmp(type, "Recreate"))
        surge = 0, unavail = replicas;
    if (unavail > replicas)
        unavail = replicas;

    owned = fatia_ctlr_informer_owned(dc->sets, fatia_ctlr_meta_str(d, "uid"));
    for (size_t i = 0; owned && i < owned->cap && n < MAX_SETS; i++) {
        const struct informer_item *it;
        const json_t *ref;
        const char *ruid;
        if (!owned->slots[i].key)
            continue;
        it = owned->slots[i].val;
        ref = fatia_ctlr_obj_controller_ref(it->obj);
        ruid = fatia_json_str(ref, "uid");
        if (!ruid || strcmp(ruid, fatia_ctlr_meta_str(d, "uid")) ||
            fatia_ctlr_obj_deleting(it->obj))
            continue;
        struct set *s = &sets[n++];
        *s = (struct set){.rs = it->obj,
                          .rev = ann_int(it->obj, REV_ANN),
                          .created = fatia_ctlr_meta_str(it->obj, "creationTimestamp"),
                          .name = fatia_ctlr_meta_str(it->obj, "name")};
        fatia_json_int(json_object_get(it->obj, "spec"), "replicas", &s->spec);
        fatia_json_int(json_object_get(it->obj, "status"), "replicas", &s->replicas);
        fatia_json_int(json_object_get(it->obj, "status"), "readyReplicas", &s->ready);
        fatia_json_int(json_object_get(it->obj, "status"), "availableReplicas", &s->available);
    }
    qsort(sets, n, sizeof(sets[0]), cmp_sets);
    for (size_t i = 0; i < n; i++) {
        if (sets[i].rev > max_rev)
            max_rev = sets[i].rev;
        all_spec += sets[i].spec;
        if (!newset && template_equal(sets[i].rs, d))
            newset = &sets[i];
    }
    for (size_t i = 0; i < n; i++) {
        if (&sets[i] == newset)
            continue;
        olds[n_old] = (struct fatia_rollout_rs){sets[i].spec, sets[i].available, sets[i].spec};
        old_idx[n_old++] = i;
    }

    if (!paused) {
        if (!newset) {
            int64_t want = 0, old_pods = 0;
            for (size_t i = 0; i < n_old; i++)
                old_pods += sets[old_idx[i]].replicas + sets[old_idx[i]].spec;
            if (type && !strcmp(type, "Recreate"))
                want = old_pods ? 0 : replicas;
            else
                want = fatia_ctlr_rollout_new_replicas(replicas, surge, all_spec, 0);
            template_hash(fatia_json_path(d, "spec.template"), hash, sizeof(hash));
            create_set(dc, key, d, hash, want, max_rev + 1);
            wrote = true;
        } else if (type && !strcmp(type, "Recreate")) {
            int64_t old_pods = 0;
            for (size_t i = 0; i < n_old; i++) {
                struct set *s = &sets[old_idx[i]];
                old_pods += s->replicas + s->spec;
                if (s->spec) {
                    scale_set(dc, key, s->rs, 0, d, 0);
                    wrote = true;
                }
            }
            if (!old_pods && newset->spec != replicas) {
                scale_set(dc, key, newset->rs, replicas, d, 0);
                wrote = true;
            }
        } else {
            int64_t want = fatia_ctlr_rollout_new_replicas(replicas, surge, all_spec, newset->spec);
            int64_t new_rev = newset->rev < max_rev ? max_rev + 1 : 0;
            if (want != newset->spec || new_rev) {
                scale_set(dc, key, newset->rs, want, d, new_rev);
                wrote = true;
            }
            if (!wrote && fatia_ctlr_rollout_scale_old(replicas, unavail, newset->spec,
                                                       newset->available, olds, n_old) > 0) {
                for (size_t i = 0; i < n_old; i++) {
                    if (olds[i].want == olds[i].spec)
                        continue;
                    struct set *s = &sets[old_idx[i]];
                    scale_set(dc, key, s->rs, olds[i].want, d, 0);
                    fatia_ctlr_event(dc->ctl, d, "deployment-controller", "Normal",
                                     "ScalingReplicaSet",
                                     "Scaled down replica set %s from %" PRId64 " to %" PRId64,
                                     s->name, olds[i].spec, olds[i].want);
                    wrote = true;
                }
            }
        }
    }
    /* revision history: old sets at 0 past the limit, oldest first */
    {
        size_t idle = 0;
        for (size_t i = 0; i < n_old; i++) {
            const struct set *s = &sets[old_idx[i]];
            idle += s->spec == 0 && s->replicas == 0;
        }
        for (size_t i = 0; i < n_old && idle > (size_t)(limit < 0 ? 0 : limit); i++) {
            const struct set *s = &sets[old_idx[i]];
            if (s->spec || s->replicas)
                continue;
            fatia_ctlr_delete(dc->ctl, dc->sets->kind, fatia_ctlr_meta_str(s->rs, "namespace"),
                              s->name, fatia_ctlr_meta_str(s->rs, "uid"),
                              &(struct op_opts){.wq = dc->q, .key = key, .quiet_missing = true});
            idle--;
        }
    }
    if (newset && !wrote && sync_revision(dc, key, d, newset->rev))
        return;
    write_status(dc, key, d, sets, n, newset, replicas, unavail);
}

static void on_deploy(void *arg, const json_t *old, const json_t *obj)
{
    struct deployment_ctl *dc = arg;
    char key[600];

    fatia_ctlr_obj_key(obj ? obj : old, key, sizeof(key));
    fatia_ctlr_wq_add(dc->q, key);
}

static void on_set(void *arg, const json_t *old, const json_t *obj)
{
    struct deployment_ctl *dc = arg;
    const json_t *s = obj ? obj : old;
    const json_t *ref = fatia_ctlr_obj_controller_ref(s);
    const char *kind = fatia_json_str(ref, "kind"), *name = fatia_json_str(ref, "name");
    char key[600];

    if (!kind || !name || strcmp(kind, "Deployment"))
        return;
    fatia_ctlr_make_key(fatia_ctlr_meta_str(s, "namespace"), name, key, sizeof(key));
    fatia_ctlr_wq_add(dc->q, key);
}

int fatia_ctlr_deployment_ctl_new(struct ctl *c, struct deployment_ctl **ret)
{
    struct deployment_ctl *dc = fatia_calloc(1, sizeof(*dc));
    int rc;

    if (!dc)
        return -ENOMEM;
    dc->ctl = c;
    dc->q = fatia_ctlr_wq_new(c, "deployment", reconcile, dc);
    dc->deploys = fatia_ctlr_informer(c, fatia_kind_find("apps/v1", "Deployment", NULL));
    dc->sets = fatia_ctlr_informer(c, fatia_kind_find("apps/v1", "ReplicaSet", NULL));
    if (!dc->q || !dc->deploys || !dc->sets) {
        fatia_ctlr_deployment_ctl_free(dc);
        return -ENOMEM;
    }
    fatia_ctlr_informer_index_owners(dc->sets);
    if ((rc = fatia_ctlr_informer_on(dc->deploys, on_deploy, dc)) < 0 ||
        (rc = fatia_ctlr_informer_on(dc->sets, on_set, dc)) < 0) {
        fatia_ctlr_deployment_ctl_free(dc);
        return rc;
    }
    *ret = dc;
    return 0;
}

void fatia_ctlr_deployment_ctl_free(struct deployment_ctl *dc)
{
    if (!dc)
        return;
    fatia_ctlr_wq_free(dc->q);
    fatia_free(dc);
}
