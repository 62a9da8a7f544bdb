/*
 * controller/statefulset.c: the StatefulSet controller (apps/v1), as kube-controller-manager's
 * (pkg/controller/statefulset/stateful_set_control.go, stateful_pod_control.go): pods with stable
 * names <name>-<ordinal>, created in order, each with its own claims.
 *
 * Model, one pass per StatefulSet key:
 *   - ordinals spec.ordinals.start .. start+replicas-1 are wanted; the set's pods are those whose
 *     controller ownerReference is its uid; a pod outside the range is condemned;
 *   - revision: "<name>-<hash of the template>" (label controller-revision-hash); status
 *     updateRevision is it, currentRevision the one every pod had before an update began;
 *   - a missing wanted pod is created with hostname = its name, subdomain = serviceName, labels
 *     statefulset.kubernetes.io/pod-name and apps.kubernetes.io/pod-index, and for each
 *     volumeClaimTemplate a volume of the claim "<template>-<pod>", the claim created first when
 *     absent (labels of the selector; owned by the StatefulSet only when
 *     persistentVolumeClaimRetentionPolicy.whenDeleted is Delete: by default claims outlive it,
 *     and a pod deleted and created again gets the same claim back);
 *   - OrderedReady: one step per pass and only when every pod before it is Running and Ready:
 *     create the lowest missing ordinal; else delete the highest condemned; else (RollingUpdate)
 *     delete the highest ordinal >= partition whose revision is old; Parallel: every create and
 *     condemned delete at once; a Failed or Succeeded pod is deleted so that it is made again;
 *   - status: replicas, readyReplicas, availableReplicas (= ready), currentReplicas,
 *     updatedReplicas, currentRevision, updateRevision, observedGeneration.
 * Not done: ControllerRevision objects (the revision lives in the pod label only, so `kubectl
 * rollout undo` of a StatefulSet is not served), whenScaled: Delete, minReadySeconds,
 * maxUnavailable.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "controller/ctl_internal.h"

#define REV_LABEL  "controller-revision-hash"
#define NAME_LABEL "statefulset.kubernetes.io/pod-name"
#define IDX_LABEL  "apps.kubernetes.io/pod-index"
#define MAX_PODS   1024

struct statefulset_ctl {
    struct ctl *ctl;
    struct wq *q;
    struct informer *sets, *pods, *claims;
};

static void revision_of(const json_t *sts, char *buf, size_t n)
{
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    char *s = json_dumps(fatia_json_path(sts, "spec.template"), JSON_SORT_KEYS | JSON_COMPACT);
    uint32_t h = 2166136261u;
    char dec[16], enc[16];
    size_t i;

    for (const char *p = s ? s : ""; *p; p++) {
        h ^= (unsigned char)*p;
        h *= 16777619u;
    }
    free(s);
    snprintf(dec, sizeof(dec), "%u", h);
    for (i = 0; dec[i] && i + 1 < sizeof(enc); i++)
        enc[i] = alphabet[(unsigned char)dec[i] % (sizeof(alphabet) - 1)];
    enc[i] = '\0';
    snprintf(buf, n, "%.200s-%s", fatia_ctlr_meta_str(sts, "name"), enc);
}

static bool pod_ready(const json_t *pod)
{
    const char *phase = fatia_json_str(json_object_get(pod, "status"), "phase");

    return phase && !strcmp(phase, "Running") && fatia_ctlr_cond_true(pod, "Ready") &&
           !fatia_ctlr_obj_deleting(pod);
}

static bool pod_finished(const json_t *pod)
{
    const char *phase = fatia_json_str(json_object_get(pod, "status"), "phase");

    return phase && (!strcmp(phase, "Failed") || !strcmp(phase, "Succeeded"));
}

static json_t *owner_of(const json_t *sts)
{
    return json_pack("[{s:s,s:s,s:s,s:s,s:b,s:b}]", "apiVersion", "apps/v1", "kind", "StatefulSet",
                     "name", fatia_ctlr_meta_str(sts, "name"), "uid",
                     fatia_ctlr_meta_str(sts, "uid"), "controller", 1, "blockOwnerDeletion", 1);
}

/* the claims of pod `name`: created when absent; the volumes added to spec */
static void ensure_claims(struct statefulset_ctl *c, const char *key, const json_t *sts,
                          const char *pod, json_t *spec)
{
    const char *ns = fatia_ctlr_meta_str(sts, "namespace");
    const char *when = fatia_json_str(
        fatia_json_path(sts, "spec.persistentVolumeClaimRetentionPolicy"), "whenDeleted");
    json_t *vols = fatia_json_array_ensure(spec, "volumes"), *t;
    size_t i;

    json_array_foreach(fatia_json_path(sts, "spec.volumeClaimTemplates"), i, t)
    {
        const char *tn = fatia_json_str(json_object_get(t, "metadata"), "name");
        char claim[600];
        json_t *pvc, *meta;
        if (!tn)
            continue;
        snprintf(claim, sizeof(claim), "%s-%s", tn, pod);
        if (vols)
            json_array_append_new(vols, json_pack("{s:s,s:{s:s}}", "name", tn,
                                                  "persistentVolumeClaim", "claimName", claim));
        if (fatia_ctlr_informer_get(c->claims, ns, claim))
            continue;
        meta = json_pack("{s:s,s:s}", "name", claim, "namespace", ns);
        if (!meta)
            continue;
        if (fatia_json_path(sts, "spec.selector.matchLabels"))
            json_object_set_new(meta, "labels",
                                json_deep_copy(fatia_json_path(sts, "spec.selector.matchLabels")));
        if (when && !strcmp(when, "Delete"))
            json_object_set_new(meta, "ownerReferences", owner_of(sts));
        pvc = json_pack("{s:s,s:s,s:o,s:o}", "apiVersion", "v1", "kind", "PersistentVolumeClaim",
                        "metadata", meta, "spec", json_deep_copy(json_object_get(t, "spec")));
        if (pvc)
            fatia_ctlr_create(c->ctl, pvc,
                              &(struct op_opts){.wq = c->q, .key = key, .quiet_conflict = true});
        json_decref(pvc);
    }
}

static void create_pod(struct statefulset_ctl *c, const char *key, const json_t *sts,
                       int64_t ordinal, const char *rev)
{
    const json_t *tmpl = fatia_json_path(sts, "spec.template");
    const char *svc = fatia_json_str(json_object_get(sts, "spec"), "serviceName");
    json_t *meta, *labels, *spec, *pod;
    char name[300], idx[24];

    snprintf(name, sizeof(name), "%.200s-%" PRId64, fatia_ctlr_meta_str(sts, "name"), ordinal);
    snprintf(idx, sizeof(idx), "%" PRId64, ordinal);
    labels = json_deep_copy(fatia_json_path(tmpl, "metadata.labels"));
    if (!labels)
        labels = json_object();
    json_object_set_new(labels, NAME_LABEL, json_string(name));
    json_object_set_new(labels, IDX_LABEL, json_string(idx));
    json_object_set_new(labels, REV_LABEL, json_string(rev));
    meta = json_pack("{s:s,s:s,s:o,s:o}", "name", name, "namespace",
                     fatia_ctlr_meta_str(sts, "namespace"), "labels", labels, "ownerReferences",
                     owner_of(sts));
    if (meta && fatia_json_path(tmpl, "metadata.annotations"))
        json_object_set_new(meta, "annotations",
                            json_deep_copy(fatia_json_path(tmpl, "metadata.annotations")));
    spec = json_deep_copy(json_object_get(tmpl, "spec"));
    if (!meta || !spec) {
        json_decref(meta);
        json_decref(spec);
        return;
    }
    json_object_set_new(spec, "hostname", json_string(name));
    if (svc && *svc)
        json_object_set_new(spec, "subdomain", json_string(svc));
    ensure_claims(c, key, sts, name, spec);
    pod = json_pack("{s:s,s:s,s:o,s:o}", "apiVersion", "v1", "kind", "Pod", "metadata", meta,
                    "spec", spec);
    if (pod) {
        fatia_ctlr_create(c->ctl, pod,
                          &(struct op_opts){.wq = c->q, .key = key, .quiet_conflict = true});
        fatia_ctlr_event(c->ctl, sts, "statefulset-controller", "Normal", "SuccessfulCreate",
                         "create Pod %s in StatefulSet %s successful", name,
                         fatia_ctlr_meta_str(sts, "name"));
    }
    json_decref(pod);
}

static void delete_pod(struct statefulset_ctl *c, const char *key, const json_t *pod)
{
    fatia_ctlr_delete(c->ctl, c->pods->kind, fatia_ctlr_meta_str(pod, "namespace"),
                      fatia_ctlr_meta_str(pod, "name"), fatia_ctlr_meta_str(pod, "uid"),
                      &(struct op_opts){.wq = c->q, .key = key, .quiet_missing = true});
}

static int64_t ordinal_of(const json_t *pod, const char *set)
{
    const char *name = fatia_ctlr_meta_str(pod, "name");
    size_t n = strlen(set);
    int64_t v = 0;

    if (!name || strncmp(name, set, n) || name[n] != '-' || !name[n + 1])
        return -1;
    for (const char *p = name + n + 1; *p; p++) {
        if (*p < '0' || *p > '9' || v > 100000000)
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v;
}

static void write_status(struct statefulset_ctl *c, const char *key, const json_t *sts, int64_t n,
                         int64_t ready, int64_t current, int64_t updated, const char *cur_rev,
                         const char *rev)
{
    const json_t *old = json_object_get(sts, "status");
    int64_t gen = 0;
    json_t *st, *obj;

    fatia_json_int(json_object_get(sts, "metadata"), "generation", &gen);
    st = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:s,s:s}", "observedGeneration", (json_int_t)gen,
                   "replicas", (json_int_t)n, "readyReplicas", (json_int_t)ready,
                   "availableReplicas", (json_int_t)ready, "currentReplicas", (json_int_t)current,
                   "updatedReplicas", (json_int_t)updated, "currentRevision", cur_rev,
                   "updateRevision", rev);
    if (!st || (old && json_equal(st, old))) {
        json_decref(st);
        return;
    }
    obj = json_deep_copy(sts);
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

static void reconcile(void *arg, const char *key)
{
    struct statefulset_ctl *c = arg;
    const json_t *sts = fatia_ctlr_informer_get_key(c->sets, key);
    const json_t *spec = json_object_get(sts, "spec");
    const struct fatia_strmap *owned;
    const json_t **by_ord = NULL;
    const json_t *condemned[64];
    size_t n_condemned = 0;
    int64_t replicas = 1, start = 0, partition = 0, n = 0, ready = 0, updated = 0, current = 0;
    const char *policy = fatia_json_str(spec, "podManagementPolicy");
    const char *strategy = fatia_json_str(fatia_json_path(sts, "spec.updateStrategy"), "type");
    const char *cur_rev = fatia_json_str(json_object_get(sts, "status"), "currentRevision");
    bool parallel = policy && !strcmp(policy, "Parallel"), acted = false, all_updated = true;
    char rev[300];

    if (!sts || fatia_ctlr_obj_deleting(sts))
        return;
    fatia_json_int(spec, "replicas", &replicas);
    fatia_json_int(fatia_json_path(sts, "spec.ordinals"), "start", &start);
    fatia_json_int(fatia_json_path(sts, "spec.updateStrategy.rollingUpdate"), "partition",
                   &partition);
    if (replicas > MAX_PODS)
        replicas = MAX_PODS;
    revision_of(sts, rev, sizeof(rev));
    by_ord = fatia_calloc((size_t)(replicas ? replicas : 1), sizeof(*by_ord));
    if (!by_ord)
        return;
    owned = fatia_ctlr_informer_owned(c->pods, fatia_ctlr_meta_str(sts, "uid"));
    for (size_t i = 0; owned && i < owned->cap; i++) {
        const struct informer_item *it;
        const char *ruid;
        int64_t o;
        if (!owned->slots[i].key)
            continue;
        it = owned->slots[i].val;
        ruid = fatia_json_str(fatia_ctlr_obj_controller_ref(it->obj), "uid");
        if (!ruid || strcmp(ruid, fatia_ctlr_meta_str(sts, "uid")))
            continue;
        o = ordinal_of(it->obj, fatia_ctlr_meta_str(sts, "name"));
        if (o >= start && o < start + replicas) {
            by_ord[o - start] = it->obj;
        } else if (n_condemned < sizeof(condemned) / sizeof(condemned[0])) {
            condemned[n_condemned++] = it->obj;
        }
    }
    for (int64_t i = 0; i < replicas; i++) {
        const json_t *p = by_ord[i];
        const char *pr;
        if (!p)
            continue;
        n++;
        ready += pod_ready(p);
        pr = fatia_ctlr_obj_label(p, REV_LABEL);
        if (pr && !strcmp(pr, rev))
            updated++;
        else
            all_updated = false;
        if (cur_rev && pr && !strcmp(pr, cur_rev))
            current++;
    }
    /* finished pods are deleted (and made again) */
    for (int64_t i = 0; i < replicas; i++) {
        if (by_ord[i] && pod_finished(by_ord[i]) && !fatia_ctlr_obj_deleting(by_ord[i])) {
            delete_pod(c, key, by_ord[i]);
            acted = true;
        }
    }
    if (!acted) {
        /* create: the lowest missing ordinal (every missing one when Parallel); OrderedReady
         * stops at the first pod that is not Running and Ready */
        for (int64_t i = 0; i < replicas; i++) {
            if (!by_ord[i]) {
                create_pod(c, key, sts, start + i, rev);
                acted = true;
                if (!parallel)
                    break;
            } else if (!parallel && !pod_ready(by_ord[i])) {
                goto status;
            }
        }
    }
    if (!acted && n_condemned) {
        /* condemned: the highest first (all when Parallel), once the rest is ready */
        const json_t *hi = NULL;
        int64_t hio = -1;
        for (size_t i = 0; i < n_condemned; i++) {
            int64_t o = ordinal_of(condemned[i], fatia_ctlr_meta_str(sts, "name"));
            if (fatia_ctlr_obj_deleting(condemned[i]))
                continue;
            if (parallel) {
                delete_pod(c, key, condemned[i]);
                acted = true;
            } else if (o > hio) {
                hio = o;
                hi = condemned[i];
            }
        }
        if (hi && ready == n) {
            delete_pod(c, key, hi);
            acted = true;
        }
        if (hi || acted)
            goto status;
    }
    if (!acted && (!strategy || !strcmp(strategy, "RollingUpdate")) && ready == replicas) {
        /* rolling update: the highest ordinal >= partition of an old revision */
        for (int64_t i = replicas - 1; i >= 0 && i >= partition - start; i--) {
            const char *pr = by_ord[i] ? fatia_ctlr_obj_label(by_ord[i], REV_LABEL) : NULL;
            if (by_ord[i] && (!pr || strcmp(pr, rev))) {
                delete_pod(c, key, by_ord[i]);
                break;
            }
        }
    }
status:
    if (!cur_rev || (all_updated && n == replicas)) {
        cur_rev = rev;
        current = updated;
    }
    write_status(c, key, sts, n, ready, current, updated, cur_rev, rev);
    fatia_free(by_ord);
}

static void on_set(void *arg, const json_t *old, const json_t *obj)
{
    struct statefulset_ctl *c = arg;
    char key[600];

    fatia_ctlr_obj_key(obj ? obj : old, key, sizeof(key));
    fatia_ctlr_wq_add(c->q, key);
}

static void on_pod(void *arg, const json_t *old, const json_t *obj)
{
    struct statefulset_ctl *c = arg;
    const json_t *p = obj ? obj : old;
    const json_t *ref = fatia_ctlr_obj_controller_ref(p);
    const char *kind = fatia_json_str(ref, "kind"), *name = fatia_json_str(ref, "name");
    char key[600];

    if (!kind || !name || strcmp(kind, "StatefulSet"))
        return;
    fatia_ctlr_make_key(fatia_ctlr_meta_str(p, "namespace"), name, key, sizeof(key));
    fatia_ctlr_wq_add(c->q, key);
}

int fatia_ctlr_statefulset_ctl_new(struct ctl *ctl, struct statefulset_ctl **ret)
{
    struct statefulset_ctl *c = fatia_calloc(1, sizeof(*c));
    int rc;

    if (!c)
        return -ENOMEM;
    c->ctl = ctl;
    c->q = fatia_ctlr_wq_new(ctl, "statefulset", reconcile, c);
    c->sets = fatia_ctlr_informer(ctl, fatia_kind_find("apps/v1", "StatefulSet", NULL));
    c->pods = fatia_ctlr_informer(ctl, fatia_kind_find("v1", "Pod", NULL));
    c->claims = fatia_ctlr_informer(ctl, fatia_kind_find("v1", "PersistentVolumeClaim", NULL));
    if (!c->q || !c->sets || !c->pods || !c->claims) {
        fatia_ctlr_statefulset_ctl_free(c);
        return -ENOMEM;
    }
    fatia_ctlr_informer_index_owners(c->pods);
    if ((rc = fatia_ctlr_informer_on(c->sets, on_set, c)) < 0 ||
        (rc = fatia_ctlr_informer_on(c->pods, on_pod, c)) < 0) {
        fatia_ctlr_statefulset_ctl_free(c);
        return rc;
    }
    *ret = c;
    return 0;
}

void fatia_ctlr_statefulset_ctl_free(struct statefulset_ctl *c)
{
    if (!c)
        return;
    fatia_ctlr_wq_free(c->q);
    fatia_free(c);
}
