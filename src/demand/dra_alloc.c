/*
 * demand/dra_alloc.c: allocating a ResourceClaim's devices (see dra.h for the search order).
 *
 * Per candidate node: every request alternative (the `exactly` request, or each firstAvailable
 * subrequest) gets its candidate list: the devices usable on that node that its DeviceClass's
 * selectors and its own selectors accept, in inventory order. A depth-first search then fills
 * the requests in claim order, choosing for each the lexicographically first combination of free
 * candidates (positions increase within a request, so a set is tried once, not once per
 * permutation) that keeps every constraint satisfiable:
 *   - matchAttribute: all devices of the constrained requests carry the attribute with the same
 *     type and value (the first device fixes it, the search backtracks past it);
 *   - distinctAttribute: no two of them carry the same value.
 * A request with allocationMode All takes every matching device of the node and fails if one is
 * already allocated (unless adminAccess, whose devices may be in use and are not marked used).
 * The search counts device tries and stops at opts->max_steps, so no claim can make it run
 * unbounded (upstream's allocator has the same exponential worst case and a timeout instead).
 *
 * When nothing fits, the explanation names each node tried and, per request, how many devices
 * match, how many are free and how many were wanted; if each request alone would fit, the
 * constraints are what failed and it says so. Selector runtime errors ("no such key") make the
 * device not match and the first one is quoted.
 *
 * Configuration: the allocation lists the DeviceClass configs of the classes used (source
 * FromClass) then the claim's (FromClaim), as upstream does; NVIDIA sharing configs are parsed,
 * checked against the device type (GpuConfig for GPUs, MigDeviceConfig for MIG devices) and the
 * fleet's policy (opts.sharing_denied), and the effective one per device (the last that applies)
 * is returned for the node agent.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "demand/dra.h"

#define MAX_ALTS          8
#define DEFAULT_MAX_STEPS 200000
#define MAX_EXPLAINED     8 /* nodes explained one by one; the rest are counted */

struct alt {
    const char *name; /* subrequest name, or NULL for `exactly` */
    char full[256];   /* "req" or "req/sub" */
    const struct fatia_dra_class *cls;
    const json_t *selectors; /* the request's own selectors */
    struct fatia_cel_program **progs;
    size_t n_progs;
    bool all, admin;
    int64_t count;
    size_t *cands, n_cands, n_free, cap_cands;
};

struct areq {
    const char *name;
    struct alt alts[MAX_ALTS];
    size_t n_alts;
};

struct cons {
    const json_t *requests; /* names, or NULL/empty = all */
    const char *attr;
    bool distinct;
    const struct fatia_cel_attr *fixed; /* match: the value the first device fixed */
    size_t fixed_refs;
};

struct slot {
    size_t req, alt, dev;
};

struct search {
    const struct fatia_dra_inventory *inv;
    const struct fatia_dra_state *st;
    const struct fatia_dra_alloc_opts *opts;
    struct areq *reqs;
    size_t n_reqs;
    struct cons *cons;
    size_t n_cons;
    size_t *alt_of;
    uint8_t *taken;
    struct slot *slots;
    size_t n_slots, cap_slots;
    uint64_t steps, max_steps;
    char cel_error[1024]; /* the first selector runtime error */
};

static void explainf(struct fatia_buf *b, const char *fmt, ...) FATIA_PRINTF(2, 3);

static void explainf(struct fatia_buf *b, const char *fmt, ...)
{
    va_list ap;

    if (!b)
        return;
    va_start(ap, fmt);
    (void)fatia_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

/* ---- reading the claim ---- */

static void free_reqs(struct areq *reqs, size_t n)
{
    for (size_t i = 0; reqs && i < n; i++) {
        for (size_t j = 0; j < reqs[i].n_alts; j++) {
            struct alt *a = &reqs[i].alts[j];
            for (size_t k = 0; k < a->n_progs; k++)
                fatia_cel_program_free(a->progs[k]);
            fatia_free(a->progs);
            fatia_free(a->cands);
        }
    }
    fatia_free(reqs);
}

static int read_alt(struct alt *a, const char *req_name, const json_t *r,
                    const struct fatia_dra_classes *cls, struct fatia_buf *explain)
{
    const char *class_name = fatia_json_str(r, "deviceClassName");
    const char *mode = fatia_json_str(r, "allocationMode");
    const json_t *sels = json_object_get(r, "selectors");
    size_t i;
    json_t *s;

    snprintf(a->full, sizeof(a->full), "%s%s%s", req_name, a->name ? "/" : "",
             a->name ? a->name : "");
    a->cls = class_name ? fatia_dra_classes_get(cls, class_name) : NULL;
    if (!a->cls) {
        explainf(explain, "request '%s': DeviceClass '%s' not found", a->full,
                 class_name ? class_name : "");
        return -FATIA_E_INVALID;
    }
    a->all = mode && !strcmp(mode, "All");
    a->admin = fatia_json_bool(r, "adminAccess", false);
    a->count = 1;
    fatia_json_int(r, "count", &a->count);
    if (!a->all && a->count <= 0) {
        explainf(explain, "request '%s': count must be greater than zero", a->full);
        return -FATIA_E_INVALID;
    }
    a->selectors = sels;
    a->progs = fatia_calloc(json_array_size(sels) + 1, sizeof(*a->progs));
    if (!a->progs)
        return -ENOMEM;
    json_array_foreach(sels, i, s)
    {
        const json_t *e = json_object_get(json_object_get(s, "cel"), "expression");
        char why[400];
        int r2;
        if (!json_is_string(e)) {
            explainf(explain, "request '%s': selectors[%zu] has no cel.expression", a->full, i);
            return -FATIA_E_INVALID;
        }
        r2 = fatia_cel_compile(json_string_value(e), json_string_length(e), &a->progs[a->n_progs],
                               why, sizeof(why));
        if (r2 == -ENOMEM)
            return r2;
        if (r2 < 0) {
            explainf(explain, "request '%s': selectors[%zu].cel.expression: %s", a->full, i, why);
            return -FATIA_E_INVALID;
        }
        a->n_progs++;
    }
    return 0;
}

static int read_claim(const json_t *spec, const struct fatia_dra_classes *cls,
                      struct areq **ret_reqs, size_t *ret_n, struct cons **ret_cons,
                      size_t *ret_n_cons, struct fatia_buf *explain)
{
    const json_t *devs = json_object_get(spec, "devices");
    const json_t *requests = json_object_get(devs, "requests");
    const json_t *constraints = json_object_get(devs, "constraints");
    size_t n = json_array_size(requests), nc = json_array_size(constraints), i, j;
    struct areq *reqs = fatia_calloc(n ? n : 1, sizeof(*reqs));
    struct cons *cons = fatia_calloc(nc ? nc : 1, sizeof(*cons));
    json_t *r, *sub, *c;
    int err = 0;

    if (!reqs || !cons) {
        err = -ENOMEM;
        goto out_free;
    }
    json_array_foreach(requests, i, r)
    {
        struct areq *q = &reqs[i];
        const json_t *exact = json_object_get(r, "exactly");
        const json_t *first = json_object_get(r, "firstAvailable");
        q->name = fatia_json_str(r, "name");
        if (!q->name) {
            explainf(explain, "requests[%zu] has no name", i);
            err = -FATIA_E_INVALID;
            goto out_free;
        }
        if (exact) {
            q->n_alts = 1;
            err = read_alt(&q->alts[0], q->name, exact, cls, explain);
            if (err < 0)
                goto out_free;
            continue;
        }
        json_array_foreach(first, j, sub)
        {
            if (j == MAX_ALTS)
                break;
            q->alts[j].name = fatia_json_str(sub, "name");
            q->n_alts = j + 1;
            err = read_alt(&q->alts[j], q->name, sub, cls, explain);
            if (err < 0)
                goto out_free;
        }
        if (!q->n_alts) {
            explainf(explain, "request '%s' has neither exactly nor firstAvailable", q->name);
            err = -FATIA_E_INVALID;
            goto out_free;
        }
    }
    json_array_foreach(constraints, i, c)
    {
        const char *m = fatia_json_str(c, "matchAttribute");
        const char *d = fatia_json_str(c, "distinctAttribute");
        cons[i].requests = json_object_get(c, "requests");
        cons[i].attr = m ? m : d;
        cons[i].distinct = !m;
        if (!cons[i].attr) {
            explainf(explain, "constraints[%zu] has neither matchAttribute nor distinctAttribute",
                     i);
            err = -FATIA_E_INVALID;
            goto out_free;
        }
    }
    *ret_reqs = reqs;
    *ret_n = n;
    *ret_cons = cons;
    *ret_n_cons = nc;
    return 0;
out_free:
    free_reqs(reqs, n);
    fatia_free(cons);
    return err;
}

/* ---- candidates ---- */

static int selectors_match(struct search *s, struct fatia_cel_program *const *progs, size_t n,
                           const struct fatia_dra_device *d, bool *ret)
{
    for (size_t i = 0; i < n; i++) {
        char why[400];
        bool m = false;
        int r = fatia_cel_eval_device(progs[i], &d->cel, s->opts->cel_cost_limit, &m, NULL, why,
                                      sizeof(why));
        if (r == -ENOMEM)
            return r;
        if (r < 0) {
            if (!s->cel_error[0])
                snprintf(s->cel_error, sizeof(s->cel_error),
                         "selector \"%.200s\" on device "
                         "%.100s/%.63s: %.300s",
                         fatia_cel_program_text(progs[i]), d->pool, d->name, why);
            *ret = false;
            return 0;
        }
        if (!m) {
            *ret = false;
            return 0;
        }
    }
    *ret = true;
    return 0;
}

static int build_candidates(struct search *s, const char *node,
                            const struct fatia_dra_node_range *nr, const json_t *labels)
{
    for (size_t ri = 0; ri < s->n_reqs; ri++) {
        for (size_t ai = 0; ai < s->reqs[ri].n_alts; ai++) {
            struct alt *a = &s->reqs[ri].alts[ai];
            /* at most every device of the node and every unbound one */
            size_t most = (nr ? nr->n : 0) + (s->inv->n - s->inv->first_unbound);
            a->n_cands = a->n_free = 0;
            if (most > a->cap_cands) {
                size_t *v = fatia_reallocarray(a->cands, most, sizeof(*v));
                if (!v)
                    return -ENOMEM;
                a->cands = v;
                a->cap_cands = most;
            }
            /* the node's own devices (a contiguous range), then those not node-local */
            for (size_t i = nr ? nr->first : s->inv->first_unbound; i < s->inv->n; i++) {
                const struct fatia_dra_device *d;
                bool ok;
                int r;
                if (nr && i == nr->first + nr->n && i < s->inv->first_unbound)
                    i = s->inv->first_unbound;
                if (i >= s->inv->n)
                    break;
                d = &s->inv->devs[i];
                if (node ? !fatia_dra_device_on_node(d, node, labels)
                         : d->node != NULL || d->node_selector)
                    continue;
                r = selectors_match(s, a->cls->selectors, a->cls->n_selectors, d, &ok);
                if (r == 0 && ok)
                    r = selectors_match(s, a->progs, a->n_progs, d, &ok);
                if (r < 0)
                    return r;
                if (!ok)
                    continue;
                a->cands[a->n_cands++] = i;
                a->n_free += a->admin || !s->st->used[i];
            }
        }
    }
    return 0;
}

/* ---- constraints ---- */

static bool cons_applies(const struct cons *c, const struct areq *q, const struct alt *a)
{
    size_t i;
    json_t *v;

    if (json_array_size(c->requests) == 0)
        return true;
    json_array_foreach(c->requests, i, v)
    {
        const char *n = json_string_value(v);
        if (n && (!strcmp(n, q->name) || !strcmp(n, a->full)))
            return true;
    }
    return false;
}

static bool attr_equal(const struct fatia_cel_attr *a, const struct fatia_cel_attr *b)
{
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case FATIA_CEL_ATTR_INT:
        return a->i == b->i;
    case FATIA_CEL_ATTR_BOOL:
        return a->b == b->b;
    default:
        return a->s && b->s && !strcmp(a->s, b->s);
    }
}

static bool cons_ok(struct search *s, size_t ri, size_t ai, size_t dev)
{
    const struct areq *q = &s->reqs[ri];
    const struct alt *a = &q->alts[ai];
    const struct fatia_dra_device *d = &s->inv->devs[dev];

    for (size_t c = 0; c < s->n_cons; c++) {
        const struct cons *k = &s->cons[c];
        const struct fatia_cel_attr *v;
        if (!cons_applies(k, q, a))
            continue;
        v = fatia_dra_device_attr(d, k->attr);
        if (!v)
            return false;
        if (!k->distinct) {
            if (k->fixed && !attr_equal(k->fixed, v))
                return false;
            continue;
        }
        for (size_t i = 0; i < s->n_slots; i++) {
            const struct slot *o = &s->slots[i];
            const struct fatia_cel_attr *ov;
            if (!cons_applies(k, &s->reqs[o->req], &s->reqs[o->req].alts[o->alt]))
                continue;
            ov = fatia_dra_device_attr(&s->inv->devs[o->dev], k->attr);
            if (ov && attr_equal(ov, v))
                return false;
        }
    }
    return true;
}

static int push(struct search *s, size_t ri, size_t ai, size_t dev)
{
    const struct areq *q = &s->reqs[ri];

    if (s->n_slots == s->cap_slots) {
        size_t cap = s->cap_slots ? s->cap_slots * 2 : 16;
        struct slot *v = fatia_reallocarray(s->slots, cap, sizeof(*v));
        if (!v)
            return -ENOMEM;
        s->slots = v;
        s->cap_slots = cap;
    }
    s->slots[s->n_slots++] = (struct slot){ri, ai, dev};
    s->taken[dev] = 1;
    for (size_t c = 0; c < s->n_cons; c++) {
        struct cons *k = &s->cons[c];
        if (k->distinct || !cons_applies(k, q, &q->alts[ai]))
            continue;
        if (!k->fixed_refs++)
            k->fixed = fatia_dra_device_attr(&s->inv->devs[dev], k->attr);
    }
    return 0;
}

static void pop(struct search *s)
{
    const struct slot *sl = &s->slots[--s->n_slots];
    const struct areq *q = &s->reqs[sl->req];

    s->taken[sl->dev] = 0;
    for (size_t c = 0; c < s->n_cons; c++) {
        struct cons *k = &s->cons[c];
        if (k->distinct || !cons_applies(k, q, &q->alts[sl->alt]))
            continue;
        if (!--k->fixed_refs)
            k->fixed = NULL;
    }
}

/* ---- the search ---- */

static int try_request(struct search *s, size_t ri);

/* 1 = everything from here on fits, 0 = no, <0 = error. */
static int fill(struct search *s, size_t ri, size_t ai, size_t k, size_t pos)
{
    struct alt *a = &s->reqs[ri].alts[ai];
    size_t need = a->all ? a->n_cands : (size_t)a->count;
    int r;

    if (k == need)
        return try_request(s, ri + 1);
    if (a->all) {
        size_t dev = a->cands[k];
        if (s->taken[dev] || (!a->admin && s->st->used[dev]) || !cons_ok(s, ri, ai, dev))
            return 0;
        if (++s->steps > s->max_steps)
            return -FATIA_E_LIMIT;
        r = push(s, ri, ai, dev);
        if (r < 0)
            return r;
        r = fill(s, ri, ai, k + 1, pos);
        if (r == 0)
            pop(s);
        return r;
    }
    for (size_t p = pos; p + (need - k) <= a->n_cands; p++) {
        size_t dev = a->cands[p];
        if (s->taken[dev] || (!a->admin && s->st->used[dev]) || !cons_ok(s, ri, ai, dev))
            continue;
        if (++s->steps > s->max_steps)
            return -FATIA_E_LIMIT;
        r = push(s, ri, ai, dev);
        if (r < 0)
            return r;
        r = fill(s, ri, ai, k + 1, p + 1);
        if (r != 0)
            return r; /* success keeps the slots */
        pop(s);
    }
    return 0;
}

static int try_request(struct search *s, size_t ri)
{
    if (ri == s->n_reqs)
        return 1;
    for (size_t ai = 0; ai < s->reqs[ri].n_alts; ai++) {
        const struct alt *a = &s->reqs[ri].alts[ai];
        int r;
        if (a->all && a->n_cands == 0)
            continue; /* All means at least one */
        s->alt_of[ri] = ai;
        r = fill(s, ri, ai, 0, 0);
        if (r != 0)
            return r;
    }
    return 0;
}

static void explain_node(struct search *s, const char *node, struct fatia_buf *b)
{
    bool each_fits = true;

    explainf(b, "%snode %s:", b && b->len ? "; " : "", node ? node : "(network-attached devices)");
    for (size_t ri = 0; ri < s->n_reqs; ri++) {
        const struct areq *q = &s->reqs[ri];
        bool fits = false;
        for (size_t ai = 0; ai < q->n_alts; ai++) {
            const struct alt *a = &q->alts[ai];
            size_t want = a->all ? FATIA_MAX(a->n_cands, (size_t)1) : (size_t)a->count;
            bool ok = a->all ? (a->n_cands > 0 && a->n_free == a->n_cands) : a->n_free >= want;
            fits |= ok;
            if (a->all)
                explainf(b,
                         " request '%s' wants all devices of class %s (at least one): %zu "
                         "match, %zu free",
                         a->full, a->cls->name, a->n_cands, a->n_free);
            else
                explainf(b, " request '%s' wants %zu device%s of class %s: %zu match, %zu free",
                         a->full, want, want == 1 ? "" : "s", a->cls->name, a->n_cands, a->n_free);
            explainf(b, "%s", ai + 1 < q->n_alts ? ";" : "");
        }
        each_fits &= fits;
        explainf(b, "%s", ri + 1 < s->n_reqs ? ";" : "");
    }
    if (each_fits && s->n_cons) {
        explainf(b, "; each request fits alone, but not together under the constraints");
        for (size_t c = 0; c < s->n_cons; c++)
            explainf(b, "%s %s '%s'", c ? "," : "",
                     s->cons[c].distinct ? "distinctAttribute" : "matchAttribute", s->cons[c].attr);
    } else if (each_fits) {
        explainf(b, "; each request fits alone, but they need the same devices");
    }
}

/* ---- configuration ---- */

static int add_config(struct fatia_dra_allocation *al, bool from_class, const json_t *requests,
                      const char *only_request, const json_t *opaque)
{
    struct fatia_dra_config_entry *e;
    size_t n = only_request ? 1 : json_array_size(requests), i;
    json_t *v;

    e = fatia_reallocarray(al->config, al->n_config + 1, sizeof(*e));
    if (!e)
        return -ENOMEM;
    al->config = e;
    e = &al->config[al->n_config];
    memset(e, 0, sizeof(*e));
    e->from_class = from_class;
    e->opaque = json_incref((json_t *)opaque);
    e->requests = fatia_calloc(n + 1, sizeof(*e->requests));
    al->n_config++;
    if (!e->requests)
        return -ENOMEM;
    if (only_request) {
        e->requests[0] = fatia_strdup(only_request);
        return e->requests[0] ? 0 : -ENOMEM;
    }
    json_array_foreach(requests, i, v)
    {
        e->requests[i] = fatia_strdup(json_string_value(v) ? json_string_value(v) : "");
        if (!e->requests[i])
            return -ENOMEM;
    }
    return 0;
}

static const char *device_type(const struct fatia_dra_device *d)
{
    const struct fatia_cel_attr *t = fatia_dra_device_attr(d, "gpu.nvidia.com/type");

    return t && t->type == FATIA_CEL_ATTR_STRING ? t->s : NULL;
}

/* Collects the configs and checks the NVIDIA sharing of every result. */
static int apply_config(struct search *s, const json_t *spec, struct fatia_dra_allocation *al,
                        struct fatia_buf *explain)
{
    const json_t *claim_cfg = fatia_json_path(spec, "devices.config");
    size_t i;
    json_t *c;
    int r;

    for (size_t ri = 0; ri < s->n_reqs; ri++) {
        const struct alt *a = &s->reqs[ri].alts[s->alt_of[ri]];
        json_array_foreach(a->cls->config, i, c)
        {
            const json_t *op = json_object_get(c, "opaque");
            if (op && (r = add_config(al, true, NULL, a->full, op)) < 0)
                return r;
        }
    }
    json_array_foreach(claim_cfg, i, c)
    {
        const json_t *op = json_object_get(c, "opaque");
        if (op && (r = add_config(al, false, json_object_get(c, "requests"), NULL, op)) < 0)
            return r;
    }
    al->sharing = fatia_calloc(al->n_results ? al->n_results : 1, sizeof(*al->sharing));
    if (!al->sharing)
        return -ENOMEM;
    for (size_t k = 0; k < al->n_results; k++) {
        const struct slot *sl = &s->slots[k];
        const struct areq *q = &s->reqs[sl->req];
        const struct alt *a = &q->alts[sl->alt];
        const struct fatia_dra_device *d = &s->inv->devs[sl->dev];
        const char *type = device_type(d);
        struct fatia_dra_sharing *sh = &al->sharing[k];
        sh->interval = -1;
        sh->thread_percentage = -1;
        /* class configs apply to their request, claim configs by their request list; the
         * last one that applies wins */
        for (size_t e = 0; e < al->n_config; e++) {
            const struct fatia_dra_config_entry *ce = &al->config[e];
            const char *drv = fatia_json_str(ce->opaque, "driver");
            struct fatia_dra_sharing parsed;
            char path[128], why[256];
            bool applies = false;
            for (char **rq = ce->requests; *rq && !applies; rq++)
                applies = !strcmp(*rq, q->name) || !strcmp(*rq, a->full);
            applies |= !ce->requests[0];
            if (!applies || !drv || strcmp(drv, d->driver) || strcmp(drv, FATIA_DRA_DRIVER_NVIDIA))
                continue;
            r = fatia_dra_nvidia_config_parse(json_object_get(ce->opaque, "parameters"), &parsed,
                                              path, sizeof(path), why, sizeof(why));
            if (r < 0) {
                explainf(explain, "config for request '%s': parameters%s%s: %s", a->full,
                         path[0] ? "." : "", path, why);
                return -FATIA_E_INVALID;
            }
            if (type && ((parsed.kind == FATIA_DRA_CONFIG_GPU && strcmp(type, "gpu")) ||
                         (parsed.kind == FATIA_DRA_CONFIG_MIG && strcmp(type, "mig")) ||
                         (parsed.kind == FATIA_DRA_CONFIG_VFIO && strcmp(type, "vfio")))) {
                explainf(explain,
                         "config for request '%s': a %s cannot configure device %s, "
                         "whose type is '%s'",
                         a->full,
                         parsed.kind == FATIA_DRA_CONFIG_GPU   ? "GpuConfig"
                         : parsed.kind == FATIA_DRA_CONFIG_MIG ? "MigDeviceConfig"
                                                               : "VfioDeviceConfig",
                         d->name, type);
                fatia_dra_sharing_release(&parsed);
                return -FATIA_E_INVALID;
            }
            if ((parsed.strategy == FATIA_DRA_SHARE_MPS &&
                 (s->opts->sharing_denied & FATIA_DRA_DENY_MPS)) ||
                (parsed.strategy == FATIA_DRA_SHARE_TIMESLICING &&
                 (s->opts->sharing_denied & FATIA_DRA_DENY_TIMESLICING))) {
                explainf(explain,
                         "config for request '%s': %s sharing is not allowed on this "
                         "fleet (its GPU sharing policy)",
                         a->full, parsed.strategy == FATIA_DRA_SHARE_MPS ? "MPS" : "TimeSlicing");
                fatia_dra_sharing_release(&parsed);
                return -FATIA_E_INVALID;
            }
            fatia_dra_sharing_release(sh);
            *sh = parsed;
        }
    }
    return 0;
}

/* ---- public ---- */

void fatia_dra_allocation_free(struct fatia_dra_allocation *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->n_results; i++)
        fatia_free(a->results[i].request);
    fatia_free(a->results);
    for (size_t i = 0; i < a->n_config; i++) {
        for (char **r = a->config[i].requests; r && *r; r++)
            fatia_free(*r);
        fatia_free(a->config[i].requests);
        json_decref(a->config[i].opaque);
    }
    fatia_free(a->config);
    for (size_t i = 0; a->sharing && i < a->n_results; i++)
        fatia_dra_sharing_release(&a->sharing[i]);
    fatia_free(a->sharing);
    fatia_free(a->node);
    fatia_free(a);
}

static int make_allocation(struct search *s, const char *node, const json_t *spec,
                           struct fatia_dra_allocation **ret, struct fatia_buf *explain)
{
    struct fatia_dra_allocation *al = fatia_calloc(1, sizeof(*al));
    const char *dev_node = NULL;
    int r;

    if (!al)
        return -ENOMEM;
    al->results = fatia_calloc(s->n_slots ? s->n_slots : 1, sizeof(*al->results));
    if (!al->results) {
        r = -ENOMEM;
        goto out_free;
    }
    for (size_t i = 0; i < s->n_slots; i++) {
        const struct slot *sl = &s->slots[i];
        const struct alt *a = &s->reqs[sl->req].alts[sl->alt];
        al->results[i].request = fatia_strdup(a->full);
        al->results[i].device = sl->dev;
        al->results[i].admin_access = a->admin;
        al->n_results = i + 1;
        if (!al->results[i].request) {
            r = -ENOMEM;
            goto out_free;
        }
        if (s->inv->devs[sl->dev].node)
            dev_node = s->inv->devs[sl->dev].node;
    }
    if (dev_node || node) {
        al->node = fatia_strdup(dev_node ? dev_node : node);
        if (!al->node) {
            r = -ENOMEM;
            goto out_free;
        }
    }
    r = apply_config(s, spec, al, explain);
    if (r < 0)
        goto out_free;
    *ret = al;
    return 0;
out_free:
    fatia_dra_allocation_free(al);
    return r;
}

int fatia_dra_allocate(const struct fatia_dra_inventory *inv, const struct fatia_dra_classes *cls,
                       const struct fatia_dra_state *st, const json_t *claim_spec,
                       const struct fatia_dra_alloc_opts *opts, struct fatia_dra_allocation **ret,
                       struct fatia_buf *explain)
{
    static const struct fatia_dra_alloc_opts no_opts;
    struct search s = {.inv = inv, .st = st, .opts = opts ? opts : &no_opts};
    const char **nodes = NULL;
    size_t n_nodes = 0, n_reqs = 0, min_need = 0, free_unbound = 0, explained = 0;
    bool has_network = false, limited = false;
    int r;

    FATIA_ASSERT(inv->finished && st->n == inv->n);
    s.max_steps = s.opts->max_steps ? s.opts->max_steps : DEFAULT_MAX_STEPS;
    r = read_claim(claim_spec, cls, &s.reqs, &n_reqs, &s.cons, &s.n_cons, explain);
    if (r < 0)
        return r;
    s.n_reqs = n_reqs;
    s.alt_of = fatia_calloc(n_reqs ? n_reqs : 1, sizeof(*s.alt_of));
    s.taken = fatia_calloc(inv->n ? inv->n : 1, 1);
    nodes = fatia_calloc(inv->n + 1, sizeof(*nodes));
    if (!s.alt_of || !s.taken || !nodes) {
        r = -ENOMEM;
        goto out_free;
    }
    /* the nodes to try, in inventory order */
    if (s.opts->node) {
        nodes[n_nodes++] = s.opts->node;
    } else {
        for (size_t i = 0; i < inv->n_nodes; i++)
            nodes[n_nodes++] = inv->nodes[i].node;
        has_network = inv->first_unbound < inv->n;
        if (has_network)
            nodes[n_nodes++] = NULL; /* network-attached devices alone */
    }
    if (n_reqs == 0) {
        /* nothing to allocate: an empty allocation */
        r = make_allocation(&s, s.opts->node, claim_spec, ret, explain);
        goto out_free;
    }
    r = -FATIA_E_NOFIT;
    /* the fewest devices any allocation takes that are not admin access: a node with fewer
     * free devices is skipped without evaluating a selector */
    for (size_t ri = 0; ri < n_reqs; ri++) {
        size_t least = SIZE_MAX;
        for (size_t ai = 0; ai < s.reqs[ri].n_alts; ai++) {
            const struct alt *a = &s.reqs[ri].alts[ai];
            size_t k = a->admin ? 0 : a->all ? 1 : (size_t)a->count;
            least = FATIA_MIN(least, k);
        }
        min_need += least;
    }
    for (size_t i = inv->first_unbound; i < inv->n; i++)
        free_unbound += !st->used[i];
    for (size_t ni = 0; ni < n_nodes; ni++) {
        const char *node = nodes[ni];
        const struct fatia_dra_node_range *nr = s.opts->node
                                                    ? fatia_dra_inventory_node(inv, node)
                                                    : (ni < inv->n_nodes ? &inv->nodes[ni] : NULL);
        size_t free_here = free_unbound;
        int found;
        for (size_t i = 0; nr && i < nr->n; i++)
            free_here += !st->used[nr->first + i];
        if (free_here < min_need && (!explain || explained >= MAX_EXPLAINED)) {
            /* cannot fit: skip without selectors (explained in detail only for the first) */
            explained++;
            continue;
        }
        s.steps = 0;
        r = build_candidates(&s, node, nr, node == s.opts->node ? s.opts->node_labels : NULL);
        if (r < 0)
            goto out_free;
        found = try_request(&s, 0);
        if (found < 0 && found != -FATIA_E_LIMIT) {
            r = found;
            goto out_free;
        }
        if (found == 1) {
            r = make_allocation(&s, node, claim_spec, ret, explain);
            goto out_free;
        }
        if (found == -FATIA_E_LIMIT) {
            limited = true;
            if (explained++ < MAX_EXPLAINED)
                explainf(explain, "%snode %s: search stopped after %" PRIu64 " device tries",
                         explain && explain->len ? "; " : "", node ? node : "(network)",
                         s.max_steps);
            continue;
        }
        if (explained++ < MAX_EXPLAINED)
            explain_node(&s, node, explain);
    }
    if (explained > MAX_EXPLAINED)
        explainf(explain, "; and %zu more node%s", explained - MAX_EXPLAINED,
                 explained - MAX_EXPLAINED == 1 ? "" : "s");
    if (!n_nodes)
        explainf(explain, "no devices are published");
    if (s.cel_error[0])
        explainf(explain, "; %s", s.cel_error);
    r = limited ? -FATIA_E_LIMIT : -FATIA_E_NOFIT;
out_free:
    free_reqs(s.reqs, n_reqs);
    fatia_free(s.cons);
    fatia_free(s.alt_of);
    fatia_free(s.taken);
    fatia_free(s.slots);
    fatia_free(nodes);
    return r;
}

void fatia_dra_state_commit(struct fatia_dra_state *st, const struct fatia_dra_allocation *a)
{
    for (size_t i = 0; i < a->n_results; i++)
        if (!a->results[i].admin_access && a->results[i].device < st->n)
            st->used[a->results[i].device] = 1;
}

json_t *fatia_dra_allocation_to_json(const struct fatia_dra_inventory *inv,
                                     const struct fatia_dra_allocation *a)
{
    json_t *results = json_array(), *config = json_array(), *out;

    if (!results || !config)
        goto out_oom;
    for (size_t i = 0; i < a->n_results; i++) {
        const struct fatia_dra_device *d = &inv->devs[a->results[i].device];
        json_t *r = json_pack("{s:s,s:s,s:s,s:s}", "request", a->results[i].request, "driver",
                              d->driver, "pool", d->pool, "device", d->name);
        if (!r || json_array_append_new(results, r) < 0)
            goto out_oom;
        if (a->results[i].admin_access && json_object_set_new(r, "adminAccess", json_true()) < 0)
            goto out_oom;
    }
    for (size_t i = 0; i < a->n_config; i++) {
        json_t *reqs = json_array(), *e;
        for (char **r = a->config[i].requests; reqs && r && *r; r++)
            if (json_array_append_new(reqs, json_string(*r)) < 0)
                goto out_oom;
        e = json_pack("{s:s,s:o,s:O}", "source",
                      a->config[i].from_class ? "FromClass" : "FromClaim", "requests", reqs,
                      "opaque", a->config[i].opaque);
        if (!e || json_array_append_new(config, e) < 0)
            goto out_oom;
    }
    out = json_pack("{s:{s:o,s:o}}", "devices", "results", results, "config", config);
    if (!out)
        return NULL;
    if (a->node) {
        json_t *sel = json_pack("{s:[{s:[{s:s,s:s,s:[s]}]}]}", "nodeSelectorTerms", "matchFields",
                                "key", "metadata.name", "operator", "In", "values", a->node);
        if (!sel || json_object_set_new(out, "nodeSelector", sel) < 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
out_oom:
    json_decref(results);
    json_decref(config);
    return NULL;
}

/* ---- claims ---- */

bool fatia_dra_claim_allocated(const json_t *claim)
{
    return json_is_object(fatia_json_path(claim, "status.allocation"));
}

const char *fatia_dra_claim_node(const json_t *claim)
{
    const json_t *terms =
        fatia_json_path(claim, "status.allocation.nodeSelector.nodeSelectorTerms");
    size_t i, j;
    json_t *t, *f;

    json_array_foreach(terms, i, t)
    {
        json_array_foreach(json_object_get(t, "matchFields"), j, f)
        {
            const char *key = fatia_json_str(f, "key"), *op = fatia_json_str(f, "operator");
            const json_t *values = json_object_get(f, "values");
            if (key && op && !strcmp(key, "metadata.name") && !strcmp(op, "In") &&
                json_array_size(values) == 1)
                return json_string_value(json_array_get(values, 0));
        }
    }
    return NULL;
}

int fatia_dra_claim_reserve(json_t *claim, const char *resource, const char *name, const char *uid)
{
    json_t *status = fatia_json_object_ensure(claim, "status"), *list, *e;
    size_t i;

    if (!status)
        return -ENOMEM;
    list = fatia_json_array_ensure(status, "reservedFor");
    if (!list)
        return -ENOMEM;
    json_array_foreach(list, i, e)
    {
        const char *u = fatia_json_str(e, "uid");
        if (u && !strcmp(u, uid))
            return 0;
    }
    if (json_array_size(list) >= 256)
        return -FATIA_E_LIMIT;
    e = json_pack("{s:s,s:s,s:s}", "resource", resource, "name", name, "uid", uid);
    if (!e || json_array_append_new(list, e) < 0)
        return -ENOMEM;
    return 0;
}

int fatia_dra_claim_from_template(const json_t *tmpl, const char *pod_name,
                                  const char *pod_claim_name, json_t **ret)
{
    const json_t *meta = json_object_get(tmpl, "metadata");
    const json_t *spec = fatia_json_path(tmpl, "spec.spec");
    const json_t *tmeta = fatia_json_path(tmpl, "spec.metadata");
    const char *ns = fatia_json_str(meta, "namespace");
    json_t *claim, *cmeta, *ann;
    char name[512];

    if (!json_is_object(spec))
        return -EINVAL;
    snprintf(name, sizeof(name), "%s-%s", pod_name, pod_claim_name);
    claim = json_pack("{s:s,s:s,s:{s:s},s:O}", "apiVersion", "resource.k8s.io/v1", "kind",
                      "ResourceClaim", "metadata", "name", name, "spec", spec);
    if (!claim)
        return -ENOMEM;
    cmeta = json_object_get(claim, "metadata");
    if ((ns && json_object_set_new(cmeta, "namespace", json_string(ns)) < 0) ||
        (json_object_get(tmeta, "labels") &&
         json_object_set_new(cmeta, "labels", json_deep_copy(json_object_get(tmeta, "labels"))) <
             0))
        goto out_oom;
    ann = json_object_get(tmeta, "annotations")
              ? json_deep_copy(json_object_get(tmeta, "annotations"))
              : json_object();
    if (!ann ||
        json_object_set_new(ann, "resource.kubernetes.io/pod-claim-name",
                            json_string(pod_claim_name)) < 0 ||
        json_object_set_new(cmeta, "annotations", ann) < 0)
        goto out_oom;
    *ret = claim;
    return 0;
out_oom:
    json_decref(claim);
    return -ENOMEM;
}
