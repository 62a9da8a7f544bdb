/*
 * controller/pdb.c: a PodDisruptionBudget's status, as kube-controller-manager's disruption
 * controller (pkg/controller/disruption/disruption.go) computes it: expectedPods, currentHealthy,
 * desiredHealthy, disruptionsAllowed, observedGeneration and the DisruptionAllowed condition.
 *
 * Model: the key is ns/name of a budget; a budget is reconciled when it changes and when a Pod of
 * its namespace does. The pods are those of the namespace its selector matches that are not
 * being deleted and have not ended; healthy means the Ready condition. expectedPods is their
 * count (upstream takes the scale of their controllers for a percentage or maxUnavailable: the
 * same number while a Deployment's pods all exist); desiredHealthy is minAvailable (an integer,
 * or a percentage of expectedPods rounded up) or expectedPods - maxUnavailable (a percentage
 * rounded up); disruptionsAllowed = max(0, currentHealthy - desiredHealthy). The eviction
 * subresource (apiserver/eviction.c) reads it, and records each pod it evicts in
 * status.disruptedPods; such a pod counts as not healthy until its deletion is seen (it then
 * leaves the pods counted) or two minutes passed (upstream's DeletionTimeout), so a status
 * written while an evicted pod still terminates does not give its disruption back.
 *
 * Not done: unhealthyPodEvictionPolicy; a requeue when a disruptedPods entry times out (the next
 * event of the namespace's pods recomputes it).
 */
#include "base/compat.h"

#include <math.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "controller/ctl_internal.h"
#include "model/selector.h"

struct pdb_ctl {
    struct ctl *ctl;
    struct wq *q;
    struct informer *pdbs, *pods;
};

struct count_ctx {
    const struct fatia_selector *sel;
    int64_t expected, healthy;
    const json_t *disrupted; /* status.disruptedPods: name -> time of its eviction */
    json_t *keep;            /* the entries still in force */
    fatia_usec_t now;
};

/* upstream's DeletionTimeout: an evicted pod not yet being deleted after this is healthy again */
#define DISRUPTION_TIMEOUT (120 * FATIA_USEC_PER_SEC)

static void count_pod(void *arg, const json_t *pod)
{
    struct count_ctx *cc = arg;
    const char *ph = fatia_json_str(json_object_get(pod, "status"), "phase");

    if (fatia_ctlr_obj_deleting(pod) || (ph && (!strcmp(ph, "Succeeded") || !strcmp(ph, "Failed"))))
        return;
    if (!fatia_selector_matches(cc->sel,
                                json_object_get(json_object_get(pod, "metadata"), "labels")))
        return;
    cc->expected++;
    {
        const char *name = fatia_ctlr_meta_str(pod, "name");
        const char *when = fatia_json_str(cc->disrupted, name ? name : "");
        fatia_usec_t t;
        if (when && fatia_time_parse_rfc3339(when, &t) == 0 && cc->now < t + DISRUPTION_TIMEOUT) {
            /* evicted, its deletion not seen yet: not healthy (upstream's buildDisruptedPodMap) */
            json_object_set_new(cc->keep, name, json_string(when));
            return;
        }
    }
    cc->healthy += fatia_ctlr_cond_true(pod, "Ready");
}

/* an int-or-percent of total, rounded up; -1 when malformed */
static int64_t int_or_pct(const json_t *v, int64_t total)
{
    if (json_is_integer(v))
        return json_integer_value(v);
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        char *end;
        long p = strtol(s, &end, 10);
        if (end != s && !strcmp(end, "%") && p >= 0)
            return (int64_t)ceil((double)p * (double)total / 100.0);
    }
    return -1;
}

static void reconcile(void *arg, const char *key)
{
    struct pdb_ctl *pc = arg;
    const json_t *pdb = fatia_ctlr_informer_get_key(pc->pdbs, key);
    const json_t *spec = json_object_get(pdb, "spec"), *st = json_object_get(pdb, "status");
    const json_t *minav = json_object_get(spec, "minAvailable");
    const json_t *maxun = json_object_get(spec, "maxUnavailable");
    const struct fatia_kind *podk = fatia_kind_by_resource("", "pods");
    struct fatia_selector *sel = NULL;
    struct count_ctx cc = {0};
    int64_t desired = 0, allowed, gen = 0;
    json_t *obj, *nst, *conds;
    char why[256];

    if (!pdb || fatia_ctlr_obj_deleting(pdb) || !podk)
        return;
    if (fatia_selector_from_json(json_object_get(spec, "selector"), &sel, why, sizeof(why)) < 0)
        return;
    cc.sel = sel;
    cc.disrupted = json_object_get(st, "disruptedPods");
    cc.keep = json_object();
    cc.now = fatia_now_real_usec();
    (void)fatia_client_cached_each(fatia_ctlr_client(pc->ctl), podk,
                                   fatia_ctlr_meta_str(pdb, "namespace"), count_pod, &cc);
    fatia_selector_free(sel);
    if (minav)
        desired = int_or_pct(minav, cc.expected);
    else if (maxun) {
        int64_t u = int_or_pct(maxun, cc.expected);
        desired = u < 0 ? -1 : FATIA_MAX(cc.expected - u, 0);
    }
    if (desired < 0) {
        json_decref(cc.keep);
        return;
    }
    allowed = FATIA_MAX(cc.healthy - desired, 0);
    fatia_json_int(json_object_get(pdb, "metadata"), "generation", &gen);
    nst =
        json_pack("{s:I,s:I,s:I,s:I,s:I}", "observedGeneration", (json_int_t)gen, "expectedPods",
                  (json_int_t)cc.expected, "currentHealthy", (json_int_t)cc.healthy,
                  "desiredHealthy", (json_int_t)desired, "disruptionsAllowed", (json_int_t)allowed);
    conds = json_deep_copy(json_object_get(st, "conditions"));
    if (!conds)
        conds = json_array();
    fatia_ctlr_cond_set(conds, "DisruptionAllowed", allowed > 0 ? "True" : "False",
                        allowed > 0 ? "SufficientPods" : "InsufficientPods", "",
                        fatia_now_real_usec());
    json_object_set_new(nst, "conditions", conds);
    if (json_object_size(cc.keep))
        json_object_set(nst, "disruptedPods", cc.keep);
    json_decref(cc.keep);
    if (st &&
        json_equal(json_object_get(st, "disruptionsAllowed"),
                   json_object_get(nst, "disruptionsAllowed")) &&
        json_equal(json_object_get(st, "currentHealthy"), json_object_get(nst, "currentHealthy")) &&
        json_equal(json_object_get(st, "desiredHealthy"), json_object_get(nst, "desiredHealthy")) &&
        json_equal(json_object_get(st, "expectedPods"), json_object_get(nst, "expectedPods")) &&
        json_equal(json_object_get(st, "observedGeneration"),
                   json_object_get(nst, "observedGeneration")) &&
        (json_object_get(st, "disruptedPods")
             ? json_object_size(json_object_get(st, "disruptedPods"))
             : 0) == json_object_size(json_object_get(nst, "disruptedPods"))) {
        json_decref(nst);
        return;
    }
    obj = json_deep_copy(pdb);
    if (obj) {
        json_object_set_new(obj, "status", nst);
        fatia_ctlr_update_status(
            pc->ctl, obj,
            &(struct op_opts){
                .wq = pc->q, .key = key, .quiet_conflict = true, .quiet_missing = true});
        json_decref(obj);
    } else {
        json_decref(nst);
    }
}

static void on_pdb(void *arg, const json_t *old, const json_t *obj)
{
    struct pdb_ctl *pc = arg;
    char key[600];

    (void)old;
    if (!obj)
        return;
    fatia_ctlr_obj_key(obj, key, sizeof(key));
    fatia_ctlr_wq_add(pc->q, key);
}

static void queue_one(void *arg, const json_t *pdb)
{
    struct pdb_ctl *pc = arg;
    char key[600];

    fatia_ctlr_obj_key(pdb, key, sizeof(key));
    fatia_ctlr_wq_add(pc->q, key);
}

static void on_pod(void *arg, const json_t *old, const json_t *obj)
{
    struct pdb_ctl *pc = arg;
    const json_t *o = obj ? obj : old;
    const char *ns = o ? fatia_ctlr_meta_str(o, "namespace") : NULL;
    const struct fatia_kind *k = fatia_kind_by_resource("policy", "poddisruptionbudgets");

    if (ns && k)
        (void)fatia_client_cached_each(fatia_ctlr_client(pc->ctl), k, ns, queue_one, pc);
}

int fatia_ctlr_pdb_ctl_new(struct ctl *c, struct pdb_ctl **ret)
{
    struct pdb_ctl *pc = fatia_calloc(1, sizeof(*pc));
    int rc;

    if (!pc)
        return -ENOMEM;
    pc->ctl = c;
    pc->q = fatia_ctlr_wq_new(c, "disruption", reconcile, pc);
    pc->pdbs = fatia_ctlr_informer(c, fatia_kind_by_resource("policy", "poddisruptionbudgets"));
    pc->pods = fatia_ctlr_informer(c, fatia_kind_by_resource("", "pods"));
    if (!pc->q || !pc->pdbs || !pc->pods) {
        fatia_ctlr_pdb_ctl_free(pc);
        return -ENOMEM;
    }
    if ((rc = fatia_ctlr_informer_on(pc->pdbs, on_pdb, pc)) < 0 ||
        (rc = fatia_ctlr_informer_on(pc->pods, on_pod, pc)) < 0) {
        fatia_ctlr_pdb_ctl_free(pc);
        return rc;
    }
    *ret = pc;
    return 0;
}

void fatia_ctlr_pdb_ctl_free(struct pdb_ctl *pc)
{
    if (!pc)
        return;
    fatia_ctlr_wq_free(pc->q);
    fatia_free(pc);
}
