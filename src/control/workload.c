/*
 * control/workload.c: the decoding of a Workload's spec and status into the engine's structs
 * (what objects.c's apply_wl stores), following Kueue pkg/workload/resources.go, workload.go:
 *
 *   - per-pod requests of a pod set: the sum over containers (limits stand for missing
 *     requests), the max with init containers (restartable init containers add to the running
 *     sum), plus overhead; a pod-level spec.resources.requests entry replaces the computed one;
 *     then the SchedulerConfig excludes resource prefixes and applies resource transformations
 *     (Retain keeps the input, Replace drops it; outputs are per unit of input). Requests are
 *     sorted by resource name, so two workloads of one shape have equal arrays;
 *   - the shape hash (priority, counts, requests, and the JSON text of the placement
 *     constraints) that the queues use to skip a workload known not to fit;
 *   - status.admission: each pod set's usage is its resourceUsage, or per-pod requests x count
 *     where resourceUsage lacks the resource; the usage per flavor-resource is summed.
 *
 * Pure: trees in, structs out, names interned in the engine; no clock and no I/O. The trees were
 * validated and defaulted by the model layer, so member types are as the schema promises.
 * Split out of objects.c, which keeps the object events (apply, delete, lifecycle); kept apart
 * so the rules that decide a workload's demand read in one place.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/hash.h"
#include "base/json.h"
#include "base/str.h"
#include "control/internal.h"
#include "model/quantity.h"

void fatia_control_podsets_free(struct ctl_podset *ps, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        fatia_free(ps[i].name);
        fatia_free(ps[i].req);
        fatia_control_placement_free(ps[i].place);
    }
    fatia_free(ps);
}

struct acc {
    struct ctl_req *v;
    size_t n, cap;
};

static int acc_find(struct acc *a, uint32_t res)
{
    for (size_t i = 0; i < a->n; i++)
        if (a->v[i].res == res)
            return (int)i;
    return -1;
}

static int acc_slot(struct acc *a, uint32_t res)
{
    int i = acc_find(a, res);

    if (i >= 0)
        return i;
    if (a->n == a->cap) {
        size_t nc = a->cap ? a->cap * 2 : 8;
        struct ctl_req *p = fatia_reallocarray(a->v, nc, sizeof(*p));
        if (!p)
            return -ENOMEM;
        a->v = p;
        a->cap = nc;
    }
    a->v[a->n] = (struct ctl_req){res, 0};
    return (int)a->n++;
}

/* requests (limits where a request is missing) of one container into a */
static int container_requests(struct fatia_control *c, const json_t *ctr, struct acc *a)
{
    const json_t *req = fatia_json_path(ctr, "resources.requests");
    const json_t *lim = fatia_json_path(ctr, "resources.limits");
    const char *k;
    json_t *q;
    uint32_t res;
    int i;

    json_object_foreach((json_t *)req, k, q)
    {
        if (fatia_control_res_intern(c, k, &res) < 0 || (i = acc_slot(a, res)) < 0)
            return -ENOMEM;
        a->v[i].per_pod = amt_add(a->v[i].per_pod, fatia_control_q_milli(q));
    }
    json_object_foreach((json_t *)lim, k, q)
    {
        if (json_object_get(req, k))
            continue;
        if (fatia_control_res_intern(c, k, &res) < 0 || (i = acc_slot(a, res)) < 0)
            return -ENOMEM;
        a->v[i].per_pod = amt_add(a->v[i].per_pod, fatia_control_q_milli(q));
    }
    return 0;
}

static int cmp_req_name(const void *x, const void *y, void *arg)
{
    const struct fatia_control *c = arg;
    return strcmp(c->res_names.v[((const struct ctl_req *)x)->res],
                  c->res_names.v[((const struct ctl_req *)y)->res]);
}

static int pod_requests(struct fatia_control *c, const json_t *spec, struct ctl_req **ret,
                        size_t *ret_n)
{
    struct acc sum = {0}, init_max = {0}, restartable = {0}, one = {0};
    const json_t *ctrs = json_object_get(spec, "containers");
    const json_t *inits = json_object_get(spec, "initContainers");
    size_t i;
    json_t *ctr;
    const char *k;
    json_t *q;
    int r = -ENOMEM, j;

    json_array_foreach(ctrs, i, ctr)
    {
        if (container_requests(c, ctr, &sum) < 0)
            goto out;
    }
    json_array_foreach(inits, i, ctr)
    {
        const char *rp = fatia_json_str(ctr, "restartPolicy");
        bool sidecar = rp && !strcmp(rp, "Always");
        one.n = 0;
        if (container_requests(c, ctr, &one) < 0)
            goto out;
        if (sidecar) {
            for (size_t m = 0; m < one.n; m++) {
                if ((j = acc_slot(&restartable, one.v[m].res)) < 0)
                    goto out;
                restartable.v[j].per_pod = amt_add(restartable.v[j].per_pod, one.v[m].per_pod);
            }
            /* this step needs everything restartable so far */
            for (size_t m = 0; m < restartable.n; m++) {
                if ((j = acc_slot(&init_max, restartable.v[m].res)) < 0)
                    goto out;
                init_max.v[j].per_pod = amt_max(init_max.v[j].per_pod, restartable.v[m].per_pod);
            }
        } else {
            for (size_t m = 0; m < restartable.n; m++) {
                if ((j = acc_slot(&one, restartable.v[m].res)) < 0)
                    goto out;
                one.v[j].per_pod = amt_add(one.v[j].per_pod, restartable.v[m].per_pod);
            }
            for (size_t m = 0; m < one.n; m++) {
                if ((j = acc_slot(&init_max, one.v[m].res)) < 0)
                    goto out;
                init_max.v[j].per_pod = amt_max(init_max.v[j].per_pod, one.v[m].per_pod);
            }
        }
    }
    /* running: containers + restartable init containers; effective: max with the init peak */
    for (size_t m = 0; m < restartable.n; m++) {
        if ((j = acc_slot(&sum, restartable.v[m].res)) < 0)
            goto out;
        sum.v[j].per_pod = amt_add(sum.v[j].per_pod, restartable.v[m].per_pod);
    }
    for (size_t m = 0; m < init_max.n; m++) {
        if ((j = acc_slot(&sum, init_max.v[m].res)) < 0)
            goto out;
        sum.v[j].per_pod = amt_max(sum.v[j].per_pod, init_max.v[m].per_pod);
    }
    json_object_foreach(json_object_get(spec, "overhead"), k, q)
    {
        uint32_t res;
        if (fatia_control_res_intern(c, k, &res) < 0 || (j = acc_slot(&sum, res)) < 0)
            goto out;
        sum.v[j].per_pod = amt_add(sum.v[j].per_pod, fatia_control_q_milli(q));
    }
    json_object_foreach(fatia_json_path(spec, "resources.requests"), k, q)
    {
        uint32_t res;
        if (fatia_control_res_intern(c, k, &res) < 0 || (j = acc_slot(&sum, res)) < 0)
            goto out;
        sum.v[j].per_pod = fatia_control_q_milli(q);
    }
    /* SchedulerConfig: excluded prefixes, then transformations */
    for (size_t m = 0; m < sum.n; m++) {
        for (size_t e = 0; e < c->cfg.n_exclude; e++) {
            if (fatia_str_has_prefix(c->res_names.v[sum.v[m].res], c->cfg.exclude_prefixes[e])) {
                sum.v[m--] = sum.v[--sum.n];
                break;
            }
        }
    }
    if (c->cfg.n_tr) {
        size_t n0 = sum.n;
        struct ctl_req *orig = fatia_reallocarray(NULL, n0 ? n0 : 1, sizeof(*orig));
        if (!orig)
            goto out;
        if (n0)
            memcpy(orig, sum.v, n0 * sizeof(*orig));
        for (size_t t = 0; t < c->cfg.n_tr; t++) {
            const struct ctl_transform *tr = &c->cfg.tr[t];
            amt_t in = -1;
            for (size_t m = 0; m < n0; m++)
                if (orig[m].res == tr->input)
                    in = orig[m].per_pod;
            if (in < 0)
                continue;
            for (size_t o = 0; o < tr->n_out; o++) {
                fatia_i128 p = (fatia_i128)in * tr->out[o].per_pod;
                fatia_i128 v = p >= 0 ? (p + 999) / 1000 : p / 1000;
                amt_t add = v > INT64_MAX ? INT64_MAX : v < -INT64_MAX ? -INT64_MAX : (amt_t)v;
                if ((j = acc_slot(&sum, tr->out[o].res)) < 0) {
                    fatia_free(orig);
                    goto out;
                }
                sum.v[j].per_pod = amt_add(sum.v[j].per_pod, add);
            }
            if (tr->replace && (j = acc_find(&sum, tr->input)) >= 0)
                sum.v[j] = sum.v[--sum.n];
        }
        fatia_free(orig);
    }
    if (sum.n > 1)
        qsort_r(sum.v, sum.n, sizeof(*sum.v), cmp_req_name, c);
    *ret = sum.v;
    *ret_n = sum.n;
    sum.v = NULL;
    r = 0;
out:
    fatia_free(sum.v);
    fatia_free(init_max.v);
    fatia_free(restartable.v);
    fatia_free(one.v);
    return r;
}

uint64_t fatia_control_wl_shape_hash(const struct ctl_wl *w, const json_t *podsets)
{
    uint64_t h = fatia_hash64(&w->priority, sizeof(w->priority));

    for (size_t i = 0; i < w->n_ps; i++) {
        const struct ctl_podset *p = &w->ps[i];
        h = h * 1099511628211ULL ^ fatia_hash64(&p->count, sizeof(p->count));
        h = h * 1099511628211ULL ^ fatia_hash64(&p->min_count, sizeof(p->min_count));
        for (size_t k = 0; k < p->n_req; k++) {
            /* field by field: the struct has padding */
            h = h * 1099511628211ULL ^ fatia_hash64(&p->req[k].res, sizeof(p->req[k].res));
            h = h * 1099511628211ULL ^ fatia_hash64(&p->req[k].per_pod, sizeof(p->req[k].per_pod));
        }
        if (p->place) {
            /* placement constraints: hash their JSON text */
            json_t *spec = fatia_json_path(json_array_get(podsets, i), "template.spec");
            const char *keys[] = {"tolerations", "nodeSelector", "affinity"};
            for (size_t k = 0; k < 3; k++) {
                char *t = json_dumps(json_object_get(spec, keys[k]), JSON_SORT_KEYS | JSON_COMPACT);
                if (t) {
                    h = h * 1099511628211ULL ^ fatia_hash_str(t);
                    free(t);
                }
            }
        }
    }
    return h;
}

int fatia_control_wl_parse_podsets(struct fatia_control *c, const json_t *list,
                                   struct ctl_podset **ret, size_t *ret_n, char *why, size_t why_n)
{
    struct ctl_podset *ps;
    size_t i, n = json_array_size(list);
    json_t *p;
    int r;

    ps = fatia_calloc(n ? n : 1, sizeof(*ps));
    if (!ps)
        return -ENOMEM;
    json_array_foreach(list, i, p)
    {
        const json_t *spec = fatia_json_path(p, "template.spec");
        int64_t cnt = 1, minc;
        const char *nm = fatia_json_str(p, "name");
        ps[i].name = fatia_strdup(nm ? nm : "main");
        if (!ps[i].name) {
            r = -ENOMEM;
            goto fail;
        }
        fatia_json_int(p, "count", &cnt);
        if (cnt > INT32_MAX)
            cnt = INT32_MAX;
        ps[i].count = (int32_t)cnt;
        ps[i].min_count = ps[i].count;
        if (c->cfg.partial_admission && fatia_json_int(p, "minCount", &minc) && minc < cnt)
            ps[i].min_count = (int32_t)minc;
        r = pod_requests(c, spec, &ps[i].req, &ps[i].n_req);
        if (r < 0)
            goto fail;
        r = fatia_control_placement_parse(spec, &ps[i].place, why, why_n);
        if (r < 0)
            goto fail;
    }
    *ret = ps;
    *ret_n = n;
    return 0;
fail:
    fatia_control_podsets_free(ps, n);
    return r;
}

/* status.admission into w->asg / w->use; interns flavors as needed. */
int fatia_control_wl_parse_admission(struct fatia_control *c, struct ctl_wl *w, const json_t *adm)
{
    const json_t *psas = json_object_get(adm, "podSetAssignments");
    struct acc use = {0};
    size_t i;
    json_t *psa;
    int r = -ENOMEM;

    w->asg = fatia_calloc(w->n_ps ? w->n_ps : 1, sizeof(*w->asg));
    if (!w->asg)
        return -ENOMEM;
    json_array_foreach(psas, i, psa)
    {
        const char *nm = fatia_json_str(psa, "name");
        const json_t *flv = json_object_get(psa, "flavors");
        const json_t *ru = json_object_get(psa, "resourceUsage");
        struct ctl_ps_assign *a = NULL;
        struct ctl_podset *p = NULL;
        int64_t cnt;
        const char *res;
        json_t *fl;
        for (size_t k = 0; k < w->n_ps; k++)
            if (!strcmp(w->ps[k].name, nm ? nm : "main")) {
                a = &w->asg[k];
                p = &w->ps[k];
            }
        if (!a || a->v)
            continue;
        a->count = fatia_json_int(psa, "count", &cnt) ? (int32_t)cnt : p->count;
        if (json_object_size(flv)) {
            a->v = fatia_calloc(json_object_size(flv), sizeof(*a->v));
            if (!a->v)
                goto out;
        }
        json_object_foreach((json_t *)flv, res, fl)
        {
            struct ctl_flavor *f;
            uint32_t rid, fr;
            amt_t total = -1;
            int j;
            if (fatia_control_res_intern(c, res, &rid) < 0 ||
                fatia_control_flavor_intern(c, json_string_value(fl), &f) < 0 ||
                fatia_control_fr_intern(c, f->id, rid, &fr) < 0)
                goto out;
            if (json_object_get(ru, res))
                total = fatia_control_q_milli(json_object_get(ru, res));
            else if (!strcmp(res, "pods"))
                total = amt_mul(1000, a->count);
            else
                for (size_t k = 0; k < p->n_req; k++)
                    if (p->req[k].res == rid)
                        total = amt_mul(p->req[k].per_pod, a->count);
            if (total < 0)
                total = 0;
            a->v[a->n].res = rid;
            a->v[a->n].flavor = f->id;
            a->v[a->n].total = total;
            a->n++;
            if ((j = acc_slot(&use, fr)) < 0)
                goto out;
            use.v[j].per_pod = amt_add(use.v[j].per_pod, total);
        }
    }
    w->use = fatia_calloc(use.n ? use.n : 1, sizeof(*w->use));
    if (!w->use)
        goto out;
    for (i = 0; i < use.n; i++)
        w->use[i] = (struct ctl_use){use.v[i].res, use.v[i].per_pod};
    w->n_use = use.n;
    w->fr_bits = ctl_use_bits(w->use, w->n_use);
    r = 0;
out:
    fatia_free(use.v);
    if (r < 0)
        fatia_control_wl_drop_admission(w);
    return r;
}
