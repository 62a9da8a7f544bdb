/*
 * apiserver/eviction.c: the pods/eviction subresource (policy/v1 Eviction), so that `kubectl
 * drain` and other evictors ask PodDisruptionBudgets before a pod goes.
 *
 * Model (kube-apiserver's pkg/registry/core/pod/storage/eviction.go):
 *   1. authorized as create on pods/eviction (edit and admin grant it); the Eviction's name must
 *      be the pod's (400 otherwise); a missing pod is 404;
 *   2. a pod that is already being deleted, or has not started (Pending) or has ended
 *      (Succeeded, Failed), is deleted at once: no budget protects it (canIgnorePDB);
 *   3. otherwise the budgets of the pod's namespace whose selector matches its labels decide:
 *      none: the pod is deleted; more than one: 500, as upstream ("This pod has more than one
 *      PodDisruptionBudget, which the eviction subresource does not support."); one: when its
 *      status is older than its spec (observedGeneration < generation) or disruptionsAllowed is
 *      0, 429 TooManyRequests with upstream's message and a DisruptionBudget cause ("The
 *      disruption budget NAME needs N healthy pods and has M currently"); else its status is
 *      written first (disruptionsAllowed - 1, the pod in disruptedPods with the time, against
 *      the budget's resourceVersion: a concurrent change is 429, retry) and the pod is deleted
 *      after, with the Eviction's deleteOptions;
 *   4. success is 201 with a Status Success, as upstream.
 * Invariant: two evictions racing for the last allowed disruption cannot both pass: each reads
 * the budget's latest version (writes queued included), and the second's status write conflicts
 * or sees 0. The disruption controller (controller/pdb.c) counts a pod in disruptedPods as not
 * healthy until it is gone (or two minutes passed), so its next status does not give the
 * disruption back while the evicted pod is still terminating.
 *
 * The budget's status and the pod's deletion are written as fatiad itself (system:masters): the
 * evictor was authorized for the eviction, not for either write, as upstream's registry does.
 * Rejected: one transaction for both writes (the delete path's graceful deletion and finalizers
 * live in ops.c; a crash between the two leaves a budget one disruption short until the
 * controller recomputes it, as upstream's own two writes do). Not done: unhealthyPodEvictionPolicy
 * (an unready pod is protected like a ready one: IfHealthyBudget's strictest reading), and the
 * budgets' maxUnavailable on a scale subresource (controller/pdb.c counts pods).
 */
#include "base/compat.h"

#include "apiserver/internal.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "model/kinds/kinds.h"
#include "model/selector.h"

struct evict {
    struct fatia_apiserver *s;
    struct opctx pod; /* the pod's delete, as fatiad */
    char ns[256], name[256];
    json_t *options;
    op_done_fn done;
    void *arg;
};

static void evict_free(struct evict *ev)
{
    json_decref(ev->options);
    fatia_free(ev);
}

static void deleted(void *arg, struct opres *r)
{
    struct evict *ev = arg;

    if (r->code >= 200 && r->code < 300) {
        struct opres ok = {.code = 201, .status = fatia_api_status_success()};
        json_object_set_new(ok.status, "code", json_integer(201));
        ev->done(ev->arg, &ok);
        fatia_api_opres_release(&ok);
    } else {
        ev->done(ev->arg, r);
    }
    evict_free(ev);
}

static void delete_pod(struct evict *ev)
{
    fatia_api_op_delete(&ev->pod, ev->options, deleted, ev);
}

static void budget_written(void *arg, struct opres *r)
{
    struct evict *ev = arg;

    if (r->code == 409) {
        struct opres busy = {0};
        fatia_api_opres_fail(&busy, 429, "TooManyRequests",
                             "Cannot evict pod as it would violate the pod's disruption budget: "
                             "the budget changed while the eviction was checked; retry");
        ev->done(ev->arg, &busy);
        fatia_api_opres_release(&busy);
        evict_free(ev);
        return;
    }
    if (r->code < 200 || r->code >= 300) {
        ev->done(ev->arg, r);
        evict_free(ev);
        return;
    }
    delete_pod(ev);
}

static void too_many(struct opres *r, const char *cause)
{
    fatia_api_opres_fail(r, 429, "TooManyRequests",
                         "Cannot evict pod as it would violate the pod's disruption budget.");
    if (r->status)
        json_object_set_new(
            r->status, "details",
            json_pack("{s:[{s:s,s:s}]}", "causes", "reason", "DisruptionBudget", "message", cause));
}

static bool can_ignore_budget(const json_t *pod)
{
    const char *phase = fatia_json_str(json_object_get(pod, "status"), "phase");

    if (json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp"))
        return true;
    return phase &&
           (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed") || !strcmp(phase, "Pending"));
}

/* The budgets of ns whose selector matches the pod's labels (latest versions, borrowed). */
static size_t matching_budgets(struct fatia_apiserver *s, const char *ns, const json_t *pod,
                               const struct entry **out, size_t cap)
{
    struct rtable *t = fatia_api_server_table_for(s, &fatia_kind_poddisruptionbudget);
    const json_t *labels = json_object_get(json_object_get(pod, "metadata"), "labels");
    size_t lo = 0, hi = 0, n = 0;

    if (!t)
        return 0;
    fatia_api_rtable_range(t, ns, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        const struct entry *e = t->entries.v[i];
        const json_t *sel =
            e->latest ? json_object_get(json_object_get(e->latest->tree, "spec"), "selector")
                      : NULL;
        struct fatia_selector *cs = NULL;
        char why[128];
        if (!sel || fatia_selector_from_json(sel, &cs, why, sizeof(why)) < 0)
            continue; /* no selector selects nothing */
        if (fatia_selector_matches(cs, labels) && n < cap)
            out[n++] = e;
        fatia_selector_free(cs);
    }
    return n;
}

void fatia_api_op_evict(const struct opctx *c, const json_t *body, op_done_fn done, void *arg)
{
    struct fatia_apiserver *s = c->s;
    struct opres r = {0};
    const struct entry *pe, *budgets[2];
    const char *bname = fatia_json_str(json_object_get(body, "metadata"), "name");
    const char *av = fatia_json_str(body, "apiVersion");
    struct evict *ev;
    struct opctx auth = *c;
    char key[600];
    size_t nb;

    auth.subresource = "eviction";
    if (fatia_api_authorize(&auth, "create", &r) < 0)
        goto answer;
    if (!av || (strcmp(av, "policy/v1") && strcmp(av, "policy/v1beta1")) ||
        strcmp(nz(fatia_json_str(body, "kind")), "Eviction")) {
        fatia_api_opres_fail(&r, 400, "BadRequest",
                             "the body of an eviction is a policy/v1 Eviction, not %s %s", nz(av),
                             nz(fatia_json_str(body, "kind")));
        goto answer;
    }
    if (bname && strcmp(bname, c->name)) {
        fatia_api_opres_fail(&r, 400, "BadRequest",
                             "name in URL does not match name in Eviction object");
        goto answer;
    }
    fatia_api_entry_key(c->t, c->ns, c->name, key, sizeof(key));
    pe = fatia_api_rtable_find(c->t, key);
    if (!pe || !pe->latest) {
        fatia_api_opres_not_found(&r, c->t, c->name);
        goto answer;
    }
    ev = fatia_calloc(1, sizeof(*ev));
    if (!ev) {
        fatia_api_opres_fail(&r, 500, "InternalError", "out of memory");
        goto answer;
    }
    ev->s = s;
    snprintf(ev->ns, sizeof(ev->ns), "%s", c->ns);
    snprintf(ev->name, sizeof(ev->name), "%s", c->name);
    ev->pod = (struct opctx){.s = s,
                             .user = &fatia_user_system,
                             .t = c->t,
                             .ns = ev->ns,
                             .name = ev->name,
                             .dry_run = c->dry_run};
    ev->options = json_is_object(json_object_get(body, "deleteOptions"))
                      ? json_deep_copy(json_object_get(body, "deleteOptions"))
                      : NULL;
    ev->done = done;
    ev->arg = arg;
    if (can_ignore_budget(pe->latest->tree)) {
        delete_pod(ev);
        return;
    }
    nb = matching_budgets(s, c->ns, pe->latest->tree, budgets, 2);
    if (nb > 1) {
        fatia_api_opres_fail(&r, 500, "InternalError",
                             "This pod has more than one PodDisruptionBudget, which the eviction "
                             "subresource does not support.");
        evict_free(ev);
        goto answer;
    }
    if (nb == 0) {
        delete_pod(ev);
        return;
    }
    {
        const json_t *pdb = budgets[0]->latest->tree;
        const json_t *st = json_object_get(pdb, "status");
        const char *pn = fatia_json_str(json_object_get(pdb, "metadata"), "name");
        int64_t gen = 0, obs = 0, allowed = 0, desired = 0, healthy = 0;
        char cause[512], when[40];
        json_t *next, *dp;
        struct opctx bc = {.s = s,
                           .user = &fatia_user_system,
                           .t = fatia_api_server_table_for(s, &fatia_kind_poddisruptionbudget),
                           .ns = ev->ns,
                           .name = pn,
                           .subresource = "status",
                           .dry_run = c->dry_run};
        fatia_json_int(json_object_get(pdb, "metadata"), "generation", &gen);
        fatia_json_int(st, "observedGeneration", &obs);
        fatia_json_int(st, "disruptionsAllowed", &allowed);
        fatia_json_int(st, "desiredHealthy", &desired);
        fatia_json_int(st, "currentHealthy", &healthy);
        if (obs < gen) {
            snprintf(cause, sizeof(cause),
                     "The disruption budget %s is still being processed by the server.", pn);
            too_many(&r, cause);
            evict_free(ev);
            goto answer;
        }
        if (allowed <= 0) {
            snprintf(cause, sizeof(cause),
                     "The disruption budget %s needs %lld healthy pods and has %lld currently", pn,
                     (long long)desired, (long long)healthy);
            too_many(&r, cause);
            evict_free(ev);
            goto answer;
        }
        next = json_deep_copy(pdb);
        st = json_object_get(next, "status");
        json_object_set_new((json_t *)st, "disruptionsAllowed", json_integer(allowed - 1));
        dp = json_object_get(st, "disruptedPods");
        if (!json_is_object(dp)) {
            dp = json_object();
            json_object_set_new((json_t *)st, "disruptedPods", dp);
        }
        fatia_time_format_rfc3339(fatia_now_real_usec() / FATIA_USEC_PER_SEC * FATIA_USEC_PER_SEC,
                                  false, when, sizeof(when));
        json_object_set_new(dp, ev->name, json_string(when));
        fatia_api_op_update(&bc, next, budget_written, ev);
        json_decref(next);
        return;
    }
answer:
    done(arg, &r);
    fatia_api_opres_release(&r);
}
