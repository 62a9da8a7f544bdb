/*
 * controller/quotastatus.c: a ResourceQuota's status (hard copied from spec.hard, used counted),
 * as kube-controller-manager's resourcequota controller keeps it, so that `kubectl describe
 * quota` shows the usage.
 *
 * Model: the key is ns/name of a quota. A quota is reconciled when it changes and when a Pod,
 * ConfigMap, Secret, Service or PersistentVolumeClaim of its namespace does (every quota of the
 * namespace is queued); the used figures come from fatia_controller_quota_used (quota.c), the
 * admission plugin's own count, and are written only when they differ.
 *
 * Not done: objects of other kinds counted by count/<resource> update the status only when the
 * quota itself changes (upstream's controller resyncs every 5 minutes). Admission never reads
 * status.used (it recounts), so a stale status is cosmetic.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "controller/controller.h"
#include "controller/ctl_internal.h"

#define N_WATCHED 5

struct quotastatus_ctl {
    struct ctl *ctl;
    struct wq *q;
    struct informer *quotas;
    struct informer *watched[N_WATCHED];
};

static void reconcile(void *arg, const char *key)
{
    struct quotastatus_ctl *qs = arg;
    const json_t *quota = fatia_ctlr_informer_get_key(qs->quotas, key);
    const json_t *hard = json_object_get(json_object_get(quota, "spec"), "hard");
    const json_t *st = json_object_get(quota, "status");
    json_t *used = NULL, *obj;

    if (!quota || fatia_ctlr_obj_deleting(quota))
        return;
    if (fatia_controller_quota_used(fatia_ctlr_client(qs->ctl), quota, &used) < 0)
        return;
    if (json_equal(used, json_object_get(st, "used")) &&
        json_equal((json_t *)hard, json_object_get(st, "hard"))) {
        json_decref(used);
        return;
    }
    obj = json_deep_copy(quota);
    if (obj) {
        json_object_set_new(
            obj, "status",
            json_pack("{s:O,s:o}", "hard", hard ? hard : json_object(), "used", used));
        fatia_ctlr_update_status(
            qs->ctl, obj,
            &(struct op_opts){
                .wq = qs->q, .key = key, .quiet_conflict = true, .quiet_missing = true});
        json_decref(obj);
    } else {
        json_decref(used);
    }
}

static void on_quota(void *arg, const json_t *old, const json_t *obj)
{
    struct quotastatus_ctl *qs = arg;
    char key[600];

    (void)old;
    if (!obj)
        return;
    fatia_ctlr_obj_key(obj, key, sizeof(key));
    fatia_ctlr_wq_add(qs->q, key);
}

static void queue_one(void *arg, const json_t *quota)
{
    struct quotastatus_ctl *qs = arg;
    char key[600];

    fatia_ctlr_obj_key(quota, key, sizeof(key));
    fatia_ctlr_wq_add(qs->q, key);
}

static void on_counted(void *arg, const json_t *old, const json_t *obj)
{
    struct quotastatus_ctl *qs = arg;
    const json_t *o = obj ? obj : old;
    const char *ns = o ? fatia_ctlr_meta_str(o, "namespace") : NULL;
    const struct fatia_kind *rqk = fatia_kind_by_resource("", "resourcequotas");

    if (ns && rqk)
        (void)fatia_client_cached_each(fatia_ctlr_client(qs->ctl), rqk, ns, queue_one, qs);
}

int fatia_ctlr_quotastatus_ctl_new(struct ctl *c, struct quotastatus_ctl **ret)
{
    static const char *const plurals[N_WATCHED] = {"pods", "configmaps", "secrets", "services",
                                                   "persistentvolumeclaims"};
    struct quotastatus_ctl *qs = fatia_calloc(1, sizeof(*qs));
    int rc;

    if (!qs)
        return -ENOMEM;
    qs->ctl = c;
    qs->q = fatia_ctlr_wq_new(c, "resourcequota", reconcile, qs);
    qs->quotas = fatia_ctlr_informer(c, fatia_kind_by_resource("", "resourcequotas"));
    if (!qs->q || !qs->quotas) {
        fatia_ctlr_quotastatus_ctl_free(qs);
        return -ENOMEM;
    }
    if ((rc = fatia_ctlr_informer_on(qs->quotas, on_quota, qs)) < 0) {
        fatia_ctlr_quotastatus_ctl_free(qs);
        return rc;
    }
    for (size_t i = 0; i < N_WATCHED; i++) {
        const struct fatia_kind *k = fatia_kind_by_resource("", plurals[i]);
        qs->watched[i] = k ? fatia_ctlr_informer(c, k) : NULL;
        if (qs->watched[i] && (rc = fatia_ctlr_informer_on(qs->watched[i], on_counted, qs)) < 0) {
            fatia_ctlr_quotastatus_ctl_free(qs);
            return rc;
        }
    }
    *ret = qs;
    return 0;
}

void fatia_ctlr_quotastatus_ctl_free(struct quotastatus_ctl *qs)
{
    if (!qs)
        return;
    fatia_ctlr_wq_free(qs->q);
    fatia_free(qs);
}
