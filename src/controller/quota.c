/*
 * controller/quota.c: the LimitRanger and ResourceQuota admission plugins, as kube-apiserver's
 * (plugin/pkg/admission/limitranger, plugin/pkg/admission/resourcequota with
 * pkg/quota/v1/evaluator/core).
 *
 * Model. LimitRanger (mutating, Pod create): for every LimitRange of the namespace, every item of
 * type Container gives each container (init containers too) the item's default limits and
 * defaultRequest requests it lacks (defaultRequest falls back to min, then default, as upstream's
 * defaulting of LimitRangeItem; default to max), then checks min (request and limit) and max
 * (limit; a missing limit under a max is refused too). ResourceQuota (validating, create and
 * update of every kind): for each quota of the namespace, the usage of the object written is
 * added to what the other objects of the namespace use, and the write is refused with upstream's
 * 403 `exceeded quota: q, requested: r=v, used: r=v, limited: r=v` when a hard limit would be
 * passed. Usage: `pods`/`count/pods` 1 per non-terminal pod; `requests.X` (and `cpu`, `memory`)
 * and `limits.X` the pod's requests and limits (the sum of the app containers, or the largest
 * init container's when larger); `requests.<extended>` (nvidia.com/gpu); `count/<resource>[.
 * <group>]` and the legacy `services`, `configmaps`, `secrets`, `persistentvolumeclaims`,
 * `resourcequotas` 1 per object. A quota on requests.cpu (etc.) refuses a pod whose containers
 * do not say it: `failed quota: q: must specify requests.cpu for: main`.
 *
 * The objects counted are the API's cache as it will be once the writes already admitted are
 * committed (client.h: cached_each), so two creates in a row cannot both pass a quota that holds
 * one; admission and the cache both run on the loop, so there is no interleaving in between.
 * Update counts the difference with the old object: an update or patch that raises a pod's
 * requests is refused the same way (every verb goes through admission).
 *
 * status.used is written by quotastatus.c from fatia_controller_quota_used, the same count.
 *
 * PersistentVolumeClaims: `requests.storage` and, per StorageClass,
 * `<class>.storageclass.storage.k8s.io/requests.storage` and `.../persistentvolumeclaims`
 * (upstream's pvcEvaluator; a claim without a class counts only in the first).
 *
 * Scopes and scopeSelector (quota_scope.c): a scoped quota tracks only the pods its scopes
 * match (Terminating, NotTerminating, BestEffort, NotBestEffort, PriorityClass), in admission and
 * in status.used alike.
 *
 * LimitRange items of type Pod (min over the pod's total requests, max over its total limits:
 * the app containers' sum or the largest init container) and PersistentVolumeClaim (min and max
 * of requests.storage, on create) are checked after every Container item's defaults.
 *
 * Not done (docs/apiserver.md): maxLimitRequestRatio.
 *
 * Rejected: keeping used counters in the quota's status and admitting against them, as upstream
 * does: it needs a write of the quota inside every admission, which the plugins here cannot make
 * (client.h writes are asynchronous); recounting from the cache is exact and, for the object
 * counts a namespace holds (capped by --max-namespace-objects), cheap.
 */
#include "base/compat.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "base/error.h"
#include "base/json.h"
#include "client/client.h"
#include "controller/controller.h"
#include "model/kind.h"
#include "model/quantity.h"

/* ---- a pod's usage ---- */

static bool get_q(const json_t *m, const char *res, struct fatia_quantity *q)
{
    const json_t *v = json_object_get(m, res);
    return v && fatia_quantity_parse_json(v, q, NULL, 0) == 0;
}

static void add_to(json_t *u, const char *res, const struct fatia_quantity *q)
{
    struct fatia_quantity cur = fatia_quantity_from_int(0, q->format), sum;
    char b[64];
    (void)get_q(u, res, &cur);
    if (fatia_quantity_add(&cur, q, &sum) < 0)
        return;
    fatia_quantity_format(&sum, b, sizeof(b));
    json_object_set_new(u, res, json_string(b));
}

/* {"requests.cpu": "1", ...} of one container list: sums (max: the largest entry instead) */
static void ctr_sum(const json_t *ctrs, bool max, json_t *out)
{
    size_t i;
    json_t *c;
    json_array_foreach(ctrs, i, c)
    {
        const json_t *res = json_object_get(c, "resources");
        const char *which[2] = {"requests", "limits"};
        for (int w = 0; w < 2; w++) {
            const json_t *m = json_object_get(res, which[w]);
            const char *rn;
            json_t *v;
            json_object_foreach((json_t *)m, rn, v)
            {
                char key[300];
                struct fatia_quantity q, cur;
                if (fatia_quantity_parse_json(v, &q, NULL, 0) < 0)
                    continue;
                snprintf(key, sizeof(key), "%s.%s", which[w], rn);
                if (max) {
                    if (!get_q(out, key, &cur) || fatia_quantity_cmp(&q, &cur) > 0) {
                        char b[64];
                        fatia_quantity_format(&q, b, sizeof(b));
                        json_object_set_new(out, key, json_string(b));
                    }
                } else {
                    add_to(out, key, &q);
                }
            }
            /* an extended resource given as a limit only is requested as much (defaulting) */
            if (w == 1) {
                const json_t *rq = json_object_get(res, "requests");
                json_object_foreach((json_t *)m, rn, v)
                {
                    char key[300];
                    struct fatia_quantity q;
                    if (!strchr(rn, '/') || json_object_get(rq, rn) ||
                        fatia_quantity_parse_json(v, &q, NULL, 0) < 0 || max)
                        continue;
                    snprintf(key, sizeof(key), "requests.%s", rn);
                    add_to(out, key, &q);
                }
            }
        }
    }
}

static bool pod_terminal(const json_t *pod)
{
    const char *ph = fatia_json_str(json_object_get(pod, "status"), "phase");
    return ph && (!strcmp(ph, "Succeeded") || !strcmp(ph, "Failed"));
}

/* The object's usage, new reference: counts for every kind, compute resources for pods. */
static json_t *usage_of(const struct fatia_kind *k, const json_t *obj)
{
    json_t *u = json_object();
    char key[300];
    static const char *const legacy[] = {
        "services", "configmaps", "secrets", "persistentvolumeclaims", "resourcequotas", NULL};

    if (!u)
        return NULL;
    if (k->group[0])
        snprintf(key, sizeof(key), "count/%s.%s", k->plural, k->group);
    else
        snprintf(key, sizeof(key), "count/%s", k->plural);
    if (!strcmp(k->plural, "pods") && !k->group[0]) {
        const json_t *spec = json_object_get(obj, "spec");
        json_t *apps, *inits;
        const char *rn;
        json_t *v;
        if (pod_terminal(obj))
            return u; /* a pod that ended uses nothing (upstream's QuotaV1Pod) */
        apps = json_object();
        inits = json_object();
        ctr_sum(json_object_get(spec, "containers"), false, apps);
        ctr_sum(json_object_get(spec, "initContainers"), true, inits);
        json_object_foreach(inits, rn, v)
        {
            struct fatia_quantity a, b;
            if (!get_q(apps, rn, &a) || (get_q(inits, rn, &b) && fatia_quantity_cmp(&b, &a) > 0))
                json_object_set(apps, rn, v);
        }
        json_object_update(u, apps);
        json_decref(apps);
        json_decref(inits);
        if (json_object_get(u, "requests.cpu"))
            json_object_set(u, "cpu", json_object_get(u, "requests.cpu"));
        if (json_object_get(u, "requests.memory"))
            json_object_set(u, "memory", json_object_get(u, "requests.memory"));
        json_object_set_new(u, "pods", json_string("1"));
    }
    if (!strcmp(k->plural, "persistentvolumeclaims") && !k->group[0]) {
        /* upstream's pvcEvaluator: requests.storage, and per class
         * <class>.storageclass.storage.k8s.io/requests.storage and .../persistentvolumeclaims */
        const json_t *spec = json_object_get(obj, "spec");
        const json_t *st = fatia_json_path(spec, "resources.requests.storage");
        const char *cls = fatia_json_str(spec, "storageClassName");
        char ck[400];
        if (st)
            json_object_set(u, "requests.storage", (json_t *)st);
        if (cls && cls[0]) {
            if (st) {
                snprintf(ck, sizeof(ck), "%s.storageclass.storage.k8s.io/requests.storage", cls);
                json_object_set(u, ck, (json_t *)st);
            }
            snprintf(ck, sizeof(ck), "%s.storageclass.storage.k8s.io/persistentvolumeclaims", cls);
            json_object_set_new(u, ck, json_string("1"));
        }
    }
    json_object_set_new(u, key, json_string("1"));
    for (size_t i = 0; legacy[i]; i++)
        if (!k->group[0] && !strcmp(k->plural, legacy[i]))
            json_object_set_new(u, legacy[i], json_string("1"));
    return u;
}

/* ---- ResourceQuota ---- */

struct sum_ctx {
    const struct fatia_kind *k;
    const char *skip; /* the object written */
    json_t *used;
    const json_t *quota; /* its scopes filter what counts (NULL: everything) */
};

static void sum_one(void *arg, const json_t *obj)
{
    struct sum_ctx *s = arg;
    const char *name = fatia_json_str(json_object_get(obj, "metadata"), "name");
    json_t *u;
    const char *rn;
    json_t *v;

    if (s->skip && name && !strcmp(name, s->skip))
        return;
    if (s->quota && !fatia_controller_quota_tracks(
                        s->quota, !strcmp(s->k->plural, "pods") && !s->k->group[0], obj))
        return;
    u = usage_of(s->k, obj);
    json_object_foreach(u, rn, v)
    {
        struct fatia_quantity q;
        if (get_q(u, rn, &q))
            add_to(s->used, rn, &q);
    }
    json_decref(u);
}

static int forbid(struct fatia_admit_attrs *a, const char *fmt, ...) FATIA_PRINTF(2, 3);

static int forbid(struct fatia_admit_attrs *a, const char *fmt, ...)
{
    char msg[1500];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fatia_diag_add(a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, NULL, "%s", msg);
    return -FATIA_E_FORBIDDEN;
}

static bool compute_res(const char *rn)
{
    return !strcmp(rn, "cpu") || !strcmp(rn, "memory") || !strncmp(rn, "requests.", 9) ||
           !strncmp(rn, "limits.", 7);
}

/* "must specify requests.cpu for: a,b" when a container lacks a compute resource the quota caps */
static bool must_specify(const json_t *pod, const char *rn, char *buf, size_t n)
{
    const char *which = "requests", *res = rn;
    const char *names[2] = {"initContainers", "containers"};
    size_t used = 0;

    if (!strncmp(rn, "requests.", 9))
        res = rn + 9;
    else if (!strncmp(rn, "limits.", 7)) {
        which = "limits";
        res = rn + 7;
    }
    if (strcmp(res, "cpu") && strcmp(res, "memory"))
        return false; /* extended resources: only pods that ask are counted */
    buf[0] = '\0';
    for (int l = 0; l < 2; l++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(json_object_get(pod, "spec"), names[l]), i, c)
        {
            const json_t *m = json_object_get(json_object_get(c, "resources"), which);
            if (json_object_get(m, res))
                continue;
            used += (size_t)snprintf(buf + FATIA_MIN(used, n - 1), n - FATIA_MIN(used, n - 1),
                                     "%s%s", used ? "," : "", fatia_json_str(c, "name"));
        }
    }
    return buf[0] != '\0';
}

static void collect(void *arg, const json_t *obj)
{
    json_array_append((json_t *)arg, (json_t *)obj);
}

static void fmt_list(const json_t *m, const json_t *keys, char *buf, size_t n)
{
    size_t i, used = 0;
    json_t *k;

    buf[0] = '\0';
    json_array_foreach(keys, i, k)
    {
        const char *rn = json_string_value(k), *v = fatia_json_str(m, rn);
        used += (size_t)snprintf(buf + FATIA_MIN(used, n - 1), n - FATIA_MIN(used, n - 1),
                                 "%s%s=%s", i ? "," : "", rn, v ? v : "0");
    }
}

static int check_quota(struct fatia_client *c, struct fatia_admit_attrs *a, const json_t *quota,
                       const json_t *newu, const json_t *oldu)
{
    const char *qname = fatia_json_str(json_object_get(quota, "metadata"), "name");
    const json_t *spec = json_object_get(quota, "spec");
    const json_t *hard = json_object_get(spec, "hard");
    json_t *over = json_array(), *req = json_object(), *empty = json_object();
    struct sum_ctx sc = {.k = a->kind, .skip = a->name, .used = json_object(), .quota = quota};
    bool is_pod = !strcmp(a->kind->plural, "pods") && !a->kind->group[0];
    const char *rn;
    json_t *hv;
    char spec_buf[600];
    int r = 0;

    if (!fatia_controller_quota_tracks(quota, is_pod, a->obj))
        goto out; /* outside the quota's scopes: it adds nothing here */
    if (a->old && !fatia_controller_quota_tracks(quota, is_pod, a->old))
        oldu = empty; /* it enters the scopes now: all of it is new */
    /* a pod that does not say a compute resource the quota caps */
    if (is_pod && a->op == FATIA_ADMIT_CREATE && !json_object_get(newu, "pods")) {
        /* a terminal pod uses nothing */
    } else if (is_pod && a->op == FATIA_ADMIT_CREATE) {
        char all[1200] = "";
        size_t used = 0;
        json_object_foreach((json_t *)hard, rn, hv)
        {
            if (!compute_res(rn) || !must_specify(a->obj, rn, spec_buf, sizeof(spec_buf)))
                continue;
            used += (size_t)snprintf(all + FATIA_MIN(used, sizeof(all) - 1),
                                     sizeof(all) - FATIA_MIN(used, sizeof(all) - 1), "%s%s for: %s",
                                     used ? "; " : "", rn, spec_buf);
        }
        if (all[0]) {
            r = forbid(a, "failed quota: %s: must specify %s", qname ? qname : "", all);
            goto out;
        }
    }
    /* what the write adds: new - old, where positive, for the resources the quota caps */
    json_object_foreach((json_t *)hard, rn, hv)
    {
        struct fatia_quantity nq = fatia_quantity_from_int(0, FATIA_Q_DECIMAL_SI), oq = nq, d;
        char b[64];
        if (!get_q(newu, rn, &nq))
            continue;
        (void)get_q(oldu, rn, &oq);
        if (fatia_quantity_sub(&nq, &oq, &d) < 0 || fatia_quantity_is_negative(&d) ||
            fatia_quantity_is_zero(&d))
            continue;
        fatia_quantity_format(&d, b, sizeof(b));
        json_object_set_new(req, rn, json_string(b));
    }
    if (json_object_size(req) == 0)
        goto out;
    r = fatia_client_cached_each(c, a->kind, a->ns, sum_one, &sc);
    if (r < 0)
        goto out;
    /* used, as upstream's status.used: every other object, and the old version of this one */
    json_object_foreach((json_t *)oldu, rn, hv)
    {
        struct fatia_quantity q;
        if (get_q(oldu, rn, &q))
            add_to(sc.used, rn, &q);
    }
    json_object_foreach((json_t *)hard, rn, hv)
    {
        struct fatia_quantity h, u = fatia_quantity_from_int(0, FATIA_Q_DECIMAL_SI), d, t;
        if (!get_q(req, rn, &d) || fatia_quantity_parse_json(hv, &h, NULL, 0) < 0)
            continue;
        (void)get_q(sc.used, rn, &u);
        if (fatia_quantity_add(&u, &d, &t) < 0 || fatia_quantity_cmp(&t, &h) > 0)
            json_array_append_new(over, json_string(rn));
    }
    if (json_array_size(over)) {
        char rq[600], us[600], li[600];
        fmt_list(req, over, rq, sizeof(rq));
        fmt_list(sc.used, over, us, sizeof(us));
        fmt_list(hard, over, li, sizeof(li));
        r = forbid(a, "exceeded quota: %s, requested: %s, used: %s, limited: %s",
                   qname ? qname : "", rq, us, li);
    }
out:
    json_decref(over);
    json_decref(req);
    json_decref(empty);
    json_decref(sc.used);
    return r;
}

static int quota_admit(void *arg, struct fatia_admit_attrs *a)
{
    struct fatia_client *c = arg;
    const struct fatia_kind *rqk = fatia_kind_by_resource("", "resourcequotas");
    json_t *quotas = NULL, *newu = NULL, *oldu = NULL, *q;
    size_t i;
    int r = 0;

    if (!a->ns || !a->obj || a->subresource || !rqk || !a->kind->namespaced)
        return 0;
    quotas = json_array();
    if (!quotas || fatia_client_cached_each(c, rqk, a->ns, collect, quotas) < 0 ||
        json_array_size(quotas) == 0)
        goto out;
    newu = usage_of(a->kind, a->obj);
    oldu = a->old ? usage_of(a->kind, a->old) : json_object();
    if (!newu || !oldu) {
        r = -ENOMEM;
        goto out;
    }
    json_array_foreach(quotas, i, q)
    {
        r = check_quota(c, a, q, newu, oldu);
        if (r < 0)
            break;
    }
out:
    json_decref(quotas);
    json_decref(newu);
    json_decref(oldu);
    return r;
}

/* ---- LimitRanger ---- */

static void set_res(json_t *c, const char *which, const char *rn, const json_t *v)
{
    json_t *res = json_object_get(c, "resources"), *m;
    if (!res) {
        res = json_object();
        json_object_set_new(c, "resources", res);
    }
    m = json_object_get(res, which);
    if (!m) {
        m = json_object();
        json_object_set_new(res, which, m);
    }
    json_object_set(m, rn, (json_t *)v);
}

static void add_err(char *buf, size_t n, size_t *used, const char *fmt, ...) FATIA_PRINTF(4, 5);

static void add_err(char *buf, size_t n, size_t *used, const char *fmt, ...)
{
    va_list ap;
    size_t at = FATIA_MIN(*used, n - 1);

    if (*used)
        at += (size_t)snprintf(buf + at, n - at, ", ");
    at = FATIA_MIN(at, n - 1);
    va_start(ap, fmt);
    at += (size_t)vsnprintf(buf + at, n - at, fmt, ap);
    va_end(ap);
    *used = at;
}

/* A pod's effective request or limit of rn (which: "requests", "limits"): the sum of its app
 * containers or its largest init container, whichever is larger; false when none says it (a
 * pod's limit exists only when every app container's does). */
static bool pod_total(const json_t *pod, const char *which, const char *rn,
                      struct fatia_quantity *ret)
{
    const json_t *spec = json_object_get(pod, "spec");
    struct fatia_quantity sum = fatia_quantity_from_int(0, FATIA_Q_DECIMAL_SI), q, t, init = sum;
    bool all = true, any = false;
    size_t i;
    json_t *c;

    json_array_foreach(json_object_get(spec, "containers"), i, c)
    {
        if (!get_q(json_object_get(json_object_get(c, "resources"), which), rn, &q)) {
            all = false;
            continue;
        }
        any = true;
        if (fatia_quantity_add(&sum, &q, &t) == 0)
            sum = t;
    }
    json_array_foreach(json_object_get(spec, "initContainers"), i, c)
    {
        if (get_q(json_object_get(json_object_get(c, "resources"), which), rn, &q) &&
            fatia_quantity_cmp(&q, &init) > 0)
            init = q;
    }
    *ret = fatia_quantity_cmp(&init, &sum) > 0 ? init : sum;
    return !strcmp(which, "requests") ? any || !fatia_quantity_is_zero(&init) : all && any;
}

/* LimitRange items of type Pod (min and max over the pod's totals) and PersistentVolumeClaim
 * (min and max of spec.resources.requests.storage), as upstream's LimitRanger validates them. */
static void other_item(const struct fatia_admit_attrs *a, const json_t *item, bool is_pod,
                       char *errs, size_t n, size_t *used, size_t *n_err)
{
    const char *type = fatia_json_str(item, "type"), *rn;
    const json_t *req =
        json_object_get(json_object_get(json_object_get(a->obj, "spec"), "resources"), "requests");
    json_t *v;

    for (int bound = 0; bound < 2; bound++)
        json_object_foreach(json_object_get(item, bound ? "max" : "min"), rn, v)
        {
            struct fatia_quantity m, x;
            char vs[64];
            bool have;
            if (fatia_quantity_parse_json(v, &m, NULL, 0) < 0)
                continue;
            if (is_pod)
                have = pod_total(a->obj, bound ? "limits" : "requests", rn, &x);
            else
                have = get_q(req, rn, &x);
            if (!have) {
                add_err(errs, n, used, "%s %s usage per %s is %s.  No %s is specified",
                        bound ? "maximum" : "minimum", rn, type, json_string_value(v),
                        bound && is_pod ? "limit" : "request");
                (*n_err)++;
                continue;
            }
            if (bound ? fatia_quantity_cmp(&x, &m) > 0 : fatia_quantity_cmp(&x, &m) < 0) {
                fatia_quantity_format(&x, vs, sizeof(vs));
                add_err(errs, n, used, "%s %s usage per %s is %s, but %s is %s",
                        bound ? "maximum" : "minimum", rn, type, json_string_value(v),
                        bound && is_pod ? "limit" : "request", vs);
                (*n_err)++;
            }
        }
}

static int limits_admit(void *arg, struct fatia_admit_attrs *a)
{
    struct fatia_client *c = arg;
    const struct fatia_kind *lrk = fatia_kind_by_resource("", "limitranges");
    json_t *lrs = json_array(), *lr;
    char errs[1500] = "";
    size_t i, used = 0, n_err = 0;
    int r = 0;

    bool is_pod = !strcmp(a->kind->plural, "pods") && !a->kind->group[0];

    if (!lrs || !a->ns || !a->obj || a->subresource || !lrk ||
        fatia_client_cached_each(c, lrk, a->ns, collect, lrs) < 0)
        goto out;
    json_array_foreach(lrs, i, lr)
    {
        if (!is_pod)
            break; /* a PersistentVolumeClaim: the second pass only */
        size_t j;
        json_t *item;
        json_array_foreach(json_object_get(json_object_get(lr, "spec"), "limits"), j, item)
        {
            const char *type = fatia_json_str(item, "type");
            const json_t *def = json_object_get(item, "default");
            const json_t *dreq = json_object_get(item, "defaultRequest");
            const json_t *min = json_object_get(item, "min"), *max = json_object_get(item, "max");
            const char *lists[2] = {"initContainers", "containers"};
            json_t *defs, *dreqs;
            const char *rn;
            json_t *v;
            if (!type || strcmp(type, "Container"))
                continue;
            /* upstream's LimitRangeItem defaulting: default from max, defaultRequest from
             * default, then from min */
            defs = def ? json_deep_copy(def) : json_object();
            dreqs = dreq ? json_deep_copy(dreq) : json_object();
            json_object_foreach((json_t *)max, rn, v) if (!json_object_get(defs, rn))
                json_object_set(defs, rn, v);
            json_object_foreach(defs, rn, v) if (!json_object_get(dreqs, rn))
                json_object_set(dreqs, rn, v);
            json_object_foreach((json_t *)min, rn, v) if (!json_object_get(dreqs, rn))
                json_object_set(dreqs, rn, v);
            for (int l = 0; l < 2; l++) {
                size_t k;
                json_t *ctr;
                json_array_foreach(json_object_get(json_object_get(a->obj, "spec"), lists[l]), k,
                                   ctr)
                {
                    const json_t *res = json_object_get(ctr, "resources");
                    json_object_foreach(defs, rn, v)
                    {
                        if (!json_object_get(json_object_get(res, "limits"), rn))
                            set_res(ctr, "limits", rn, v);
                        res = json_object_get(ctr, "resources");
                    }
                    json_object_foreach(dreqs, rn, v)
                    {
                        if (!json_object_get(json_object_get(res, "requests"), rn))
                            set_res(ctr, "requests", rn, v);
                        res = json_object_get(ctr, "resources");
                    }
                    res = json_object_get(ctr, "resources");
                    json_object_foreach((json_t *)min, rn, v)
                    {
                        struct fatia_quantity m, x;
                        char vs[64];
                        if (fatia_quantity_parse_json(v, &m, NULL, 0) < 0)
                            continue;
                        if (get_q(json_object_get(res, "requests"), rn, &x) &&
                            fatia_quantity_cmp(&x, &m) < 0) {
                            fatia_quantity_format(&x, vs, sizeof(vs));
                            add_err(errs, sizeof(errs), &used,
                                    "minimum %s usage per Container is %s, but request is %s", rn,
                                    json_string_value(v), vs);
                            n_err++;
                        }
                    }
                    json_object_foreach((json_t *)max, rn, v)
                    {
                        struct fatia_quantity m, x;
                        char vs[64];
                        if (fatia_quantity_parse_json(v, &m, NULL, 0) < 0)
                            continue;
                        if (!get_q(json_object_get(res, "limits"), rn, &x)) {
                            add_err(errs, sizeof(errs), &used,
                                    "maximum %s usage per Container is %s, no limit is specified",
                                    rn, json_string_value(v));
                            n_err++;
                        } else if (fatia_quantity_cmp(&x, &m) > 0) {
                            fatia_quantity_format(&x, vs, sizeof(vs));
                            add_err(errs, sizeof(errs), &used,
                                    "maximum %s usage per Container is %s, but limit is %s", rn,
                                    json_string_value(v), vs);
                            n_err++;
                        }
                    }
                }
            }
            json_decref(defs);
            json_decref(dreqs);
        }
    }
    /* the second pass, after every Container item's defaults: Pod and PVC items */
    json_array_foreach(lrs, i, lr)
    {
        size_t j;
        json_t *item;
        json_array_foreach(json_object_get(json_object_get(lr, "spec"), "limits"), j, item)
        {
            const char *type = fatia_json_str(item, "type");
            if (type && !strcmp(type, is_pod ? "Pod" : "PersistentVolumeClaim"))
                other_item(a, item, is_pod, errs, sizeof(errs), &used, &n_err);
        }
    }
    if (n_err)
        r = forbid(a, n_err > 1 ? "[%s]" : "%s", errs);
out:
    json_decref(lrs);
    return r;
}

/* ---- status.used (quotastatus.c writes it) ---- */

static const struct fatia_kind *kind_of_res(const char *rn)
{
    static const char *const legacy[] = {
        "services", "configmaps", "secrets", "persistentvolumeclaims", "resourcequotas", NULL};
    char plural[200];
    const char *dot;

    if (!strcmp(rn, "requests.storage") || strstr(rn, ".storageclass.storage.k8s.io/"))
        return fatia_kind_by_resource("", "persistentvolumeclaims");
    if (compute_res(rn) || !strcmp(rn, "pods"))
        return fatia_kind_by_resource("", "pods");
    for (size_t i = 0; legacy[i]; i++)
        if (!strcmp(rn, legacy[i]))
            return fatia_kind_by_resource("", rn);
    if (strncmp(rn, "count/", 6))
        return NULL;
    rn += 6;
    dot = strchr(rn, '.');
    snprintf(plural, sizeof(plural), "%.*s", dot ? (int)(dot - rn) : 190, rn);
    return fatia_kind_by_resource(dot ? dot + 1 : "", plural);
}

int fatia_controller_quota_used(struct fatia_client *c, const json_t *quota, json_t **ret)
{
    const json_t *hard = json_object_get(json_object_get(quota, "spec"), "hard");
    const char *ns = fatia_json_str(json_object_get(quota, "metadata"), "namespace");
    json_t *used = json_object(), *hv, *done = json_object();
    const char *rn;
    int r = 0;

    if (!used || !done) {
        json_decref(used);
        json_decref(done);
        return -ENOMEM;
    }
    json_object_foreach((json_t *)hard, rn, hv)
    {
        const struct fatia_kind *k = kind_of_res(rn);
        if (!k || json_object_get(done, k->plural))
            continue;
        struct sum_ctx sc = {.k = k, .skip = NULL, .used = json_object(), .quota = quota};
        r = fatia_client_cached_each(c, k, ns, sum_one, &sc);
        json_object_update(used, sc.used);
        json_decref(sc.used);
        json_object_set_new(done, k->plural, json_true());
        if (r < 0)
            break;
    }
    /* only the resources the quota names, "0" for none used */
    {
        json_t *out = json_object();
        json_object_foreach((json_t *)hard, rn, hv)
        {
            const json_t *v = json_object_get(used, rn);
            json_object_set_new(out, rn, v ? json_deep_copy(v) : json_string("0"));
        }
        json_decref(used);
        used = out;
    }
    json_decref(done);
    if (r < 0) {
        json_decref(used);
        return r;
    }
    *ret = used;
    return 0;
}

int fatia_controller_quota_plugins(struct fatia_client *client, struct fatia_admission out[2])
{
    static const struct fatia_kind *pods[3];

    pods[0] = fatia_kind_find("v1", "Pod", NULL);
    pods[1] = fatia_kind_find("v1", "PersistentVolumeClaim", NULL);
    pods[2] = NULL;
    if (!pods[0] || !pods[1])
        return -EINVAL;
    out[0] = (struct fatia_admission){.name = "LimitRanger",
                                      .phase = FATIA_ADMIT_MUTATING,
                                      .ops = FATIA_ADMIT_CREATE,
                                      .kinds = pods,
                                      .admit = limits_admit,
                                      .arg = client,
                                      .bare_message = true};
    out[1] = (struct fatia_admission){.name = "ResourceQuota",
                                      .phase = FATIA_ADMIT_VALIDATING,
                                      .ops = FATIA_ADMIT_CREATE | FATIA_ADMIT_UPDATE,
                                      .kinds = NULL,
                                      .admit = quota_admit,
                                      .arg = client,
                                      .bare_message = true};
    return 0;
}
