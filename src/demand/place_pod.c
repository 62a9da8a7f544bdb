/*
 * demand/place_pod.c: compiling a pod spec into what placement needs (struct fatia_place_pod).
 *
 * Requests. Node-level (scalar) resources use Kubernetes' effective pod request: per resource,
 * max(the largest regular init container plus the sidecars started before it, the sum of the
 * containers plus every sidecar (init container with restartPolicy Always)) plus spec.overhead;
 * pod-level spec.resources.requests replace the computed value of the resources they name. A
 * container's limits stand in for requests it does not state (the API server's defaulting). Every
 * pod also takes one `pods`.
 *
 * Device resources (those some slice publishes) and fractions are allocated per container:
 * containers and sidecars get their own devices; a regular init container runs before them and
 * reuses theirs, so it may not ask for more of a device resource than they do together (that is
 * reported as unsupported instead of being silently dropped).
 *
 * fatia.dev/gpu-milli must be below 1000 (one fraction of one GPU) or a multiple of 1000 (that
 * many whole GPUs of a fraction pool); fatia.dev/gpu-memory (bytes) is a fraction's memory cap
 * and goes with gpu-milli below 1000 or alone.
 *
 * Constraints: nodeSelector, the required node affinity (kept as terms for place_match.c),
 * tolerations, spec.nodeName, the admitted flavors' node labels and tolerations, and the
 * annotation fatia.dev/nvlink (required | preferred). A malformed affinity is an error here: the
 * model layer keeps affinity untyped, so this is where it is first read.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/hash.h"
#include "base/json.h"
#include "demand/place_internal.h"
#include "model/quantity.h"

struct acc {
    uint16_t *res;
    int64_t *v;
    size_t n, cap;
};

static int acc_slot(struct acc *a, uint16_t res, int64_t **ret)
{
    for (size_t i = 0; i < a->n; i++)
        if (a->res[i] == res) {
            *ret = &a->v[i];
            return 0;
        }
    if (a->n == a->cap) {
        size_t nc = a->cap ? a->cap * 2 : 8;
        uint16_t *nr = fatia_reallocarray(a->res, nc, sizeof(*nr));
        if (!nr)
            return -ENOMEM;
        a->res = nr;
        int64_t *nv = fatia_reallocarray(a->v, nc, sizeof(*nv));
        if (!nv)
            return -ENOMEM;
        a->v = nv;
        a->cap = nc;
    }
    a->res[a->n] = res;
    a->v[a->n] = 0;
    *ret = &a->v[a->n++];
    return 0;
}

static void acc_release(struct acc *a)
{
    fatia_free(a->res);
    fatia_free(a->v);
}

struct cctx {
    struct fatia_place_state *st;
    struct fatia_place_pod *pod;
    char *why;
    size_t why_n;
};

/* requests of one container, limits filling what requests omit: calls fn per resource */
static int container_each(struct cctx *c, const json_t *ctr, const char *path,
                          int (*fn)(struct cctx *, const char *res, const json_t *q,
                                    const char *path, void *ud),
                          void *ud)
{
    const json_t *res = json_object_get(ctr, "resources");
    const json_t *req = json_object_get(res, "requests"), *lim = json_object_get(res, "limits");
    const char *k;
    json_t *q;
    char p[256];
    int r;

    json_object_foreach((json_t *)req, k, q)
    {
        snprintf(p, sizeof(p), "%s.resources.requests[%s]", path, k);
        if ((r = fn(c, k, q, p, ud)) < 0)
            return r;
    }
    json_object_foreach((json_t *)lim, k, q)
    {
        if (json_object_get(req, k))
            continue;
        snprintf(p, sizeof(p), "%s.resources.limits[%s]", path, k);
        if ((r = fn(c, k, q, p, ud)) < 0)
            return r;
    }
    return 0;
}

static int quantity(struct cctx *c, const json_t *q, const char *path, struct fatia_quantity *ret)
{
    char why[128];

    if (fatia_quantity_parse_json(q, ret, why, sizeof(why)) < 0) {
        snprintf(c->why, c->why_n, "%s: %s", path, why);
        return -EINVAL;
    }
    if (fatia_quantity_is_negative(ret)) {
        snprintf(c->why, c->why_n, "%s: must not be negative", path);
        return -EINVAL;
    }
    return 0;
}

static uint8_t res_kind(struct cctx *c, const char *name, uint16_t *ret_id)
{
    struct pl_restab *t = c->st->res;

    if (fatia_strmap_has(&t->index, name)) {
        *ret_id = (uint16_t)(uintptr_t)fatia_strmap_get(&t->index, name);
        return t->v.v[*ret_id].kind;
    }
    return 0xff;
}

/* scalar accumulation into `ud` (struct acc) */
static int add_scalar(struct cctx *c, const char *name, const json_t *q, const char *path, void *ud)
{
    struct fatia_quantity v;
    uint16_t id;
    uint8_t kind = res_kind(c, name, &id);
    int64_t *slot;
    int r;

    if (kind != 0xff && kind != PL_RES_SCALAR)
        return 0;
    if (kind == 0xff && !strncmp(name, "nvidia.com/", 11))
        return 0; /* a device resource no GPU publishes now (add_device) */
    if ((r = quantity(c, q, path, &v)) < 0)
        return r;
    if (kind == 0xff) {
        if ((r = fatia_pl_res_intern(c->st->res, name, PL_RES_SCALAR, &id)) < 0)
            return r;
    }
    if ((r = acc_slot(ud, id, &slot)) < 0)
        return r;
    *slot += fatia_quantity_milli(&v);
    return 0;
}

struct devctx {
    uint16_t container;
    int64_t milli;
    uint64_t memory;
    bool has_milli, has_memory;
    struct acc *counts; /* device resource -> count, for this container */
};

static int add_device(struct cctx *c, const char *name, const json_t *q, const char *path, void *ud)
{
    struct devctx *d = ud;
    struct fatia_quantity v;
    uint16_t id;
    uint8_t kind = res_kind(c, name, &id);
    int64_t *slot;
    int r;

    if (kind == 0xff && !strncmp(name, "nvidia.com/", 11)) {
        /* NVIDIA's device resources (a MIG profile no layout has yet, say) */
        if ((r = fatia_pl_res_intern(c->st->res, name, PL_RES_DEVICE, &id)) < 0)
            return r;
        kind = PL_RES_DEVICE;
    }
    if (kind == 0xff || kind == PL_RES_SCALAR)
        return 0;
    if ((r = quantity(c, q, path, &v)) < 0)
        return r;
    if (kind == PL_RES_GPU_MILLI) {
        int64_t m = fatia_quantity_value(&v);
        if (m >= 1000 && m % 1000) {
            snprintf(c->why, c->why_n,
                     "%s: %" PRId64 " is neither below 1000 (a fraction of one GPU) nor a "
                     "multiple of 1000 (whole GPUs)",
                     path, m);
            return -EINVAL;
        }
        if (m > 64000) {
            snprintf(c->why, c->why_n, "%s: %" PRId64 " asks for more than 64 GPUs", path, m);
            return -EINVAL;
        }
        d->milli = m;
        d->has_milli = m > 0;
        return 0;
    }
    if (kind == PL_RES_GPU_MEMORY) {
        int64_t b = fatia_quantity_value(&v);
        d->memory = (uint64_t)b;
        d->has_memory = b > 0;
        return 0;
    }
    if (fatia_quantity_milli(&v) % 1000) {
        snprintf(c->why, c->why_n, "%s: a device count must be a whole number", path);
        return -EINVAL;
    }
    if ((r = acc_slot(d->counts, id, &slot)) < 0)
        return r;
    *slot += fatia_quantity_value(&v);
    if (*slot > 1024) {
        snprintf(c->why, c->why_n, "%s: more than 1024 devices", path);
        return -EINVAL;
    }
    return 0;
}

static int push_devices(struct cctx *c, struct devctx *d, const char *path)
{
    struct fatia_place_pod *pod = c->pod;

    if (d->has_memory && d->milli >= 1000) {
        snprintf(c->why, c->why_n,
                 "%s.resources: fatia.dev/gpu-memory caps a fraction (gpu-milli below 1000); "
                 "whole GPUs have all their memory",
                 path);
        return -EINVAL;
    }
    if (d->has_milli || d->has_memory) {
        struct pl_frac *nf = fatia_reallocarray(pod->fracs, pod->n_fracs + 1, sizeof(*nf));
        if (!nf)
            return -ENOMEM;
        pod->fracs = nf;
        pod->fracs[pod->n_fracs++] =
            (struct pl_frac){d->container, (int32_t)d->milli, d->has_memory ? d->memory : 0};
    }
    for (size_t i = 0; i < d->counts->n; i++) {
        struct pl_req *nr;
        if (d->counts->v[i] <= 0)
            continue;
        nr = fatia_reallocarray(pod->reqs, pod->n_reqs + 1, sizeof(*nr));
        if (!nr)
            return -ENOMEM;
        pod->reqs = nr;
        pod->reqs[pod->n_reqs++] =
            (struct pl_req){d->container, d->counts->res[i], (uint32_t)d->counts->v[i]};
    }
    return 0;
}

static char *dup_or_empty(const char *s)
{
    return fatia_strdup(s ? s : "");
}

static int add_sel(struct fatia_place_pod *pod, const char *k, const char *v)
{
    char **nk = fatia_reallocarray(pod->sel_keys, pod->n_sel + 1, sizeof(*nk));
    if (!nk)
        return -ENOMEM;
    pod->sel_keys = nk;
    char **nv = fatia_reallocarray(pod->sel_values, pod->n_sel + 1, sizeof(*nv));
    if (!nv)
        return -ENOMEM;
    pod->sel_values = nv;
    nk[pod->n_sel] = fatia_strdup(k);
    nv[pod->n_sel] = fatia_strdup(v);
    pod->n_sel++;
    return nk[pod->n_sel - 1] && nv[pod->n_sel - 1] ? 0 : -ENOMEM;
}

static int add_tols(struct cctx *c, const json_t *tols, const char *path)
{
    struct fatia_place_pod *pod = c->pod;
    size_t i;
    const json_t *t;

    if (!tols)
        return 0;
    if (!json_is_array(tols)) {
        snprintf(c->why, c->why_n, "%s: expected a list of tolerations", path);
        return -EINVAL;
    }
    json_array_foreach(tols, i, t)
    {
        struct pl_tol *nt = fatia_reallocarray(pod->tols, pod->n_tols + 1, sizeof(*nt));
        const char *op = fatia_json_str(t, "operator");
        if (!nt)
            return -ENOMEM;
        pod->tols = nt;
        struct pl_tol *x = &pod->tols[pod->n_tols++];
        memset(x, 0, sizeof(*x));
        x->key = dup_or_empty(fatia_json_str(t, "key"));
        x->value = dup_or_empty(fatia_json_str(t, "value"));
        x->effect = dup_or_empty(fatia_json_str(t, "effect"));
        x->exists = op && !strcmp(op, "Exists");
        if (!x->key || !x->value || !x->effect)
            return -ENOMEM;
    }
    return 0;
}

static int parse_op(const char *s, uint8_t *ret)
{
    static const char *const ops[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};

    for (size_t i = 0; s && i < FATIA_ARRAY_SIZE(ops); i++)
        if (!strcmp(s, ops[i])) {
            *ret = (uint8_t)i;
            return 0;
        }
    return -EINVAL;
}

static int parse_exprs(struct cctx *c, const json_t *list, bool field, struct pl_term *t,
                       const char *path)
{
    size_t i;
    const json_t *e;

    if (!list)
        return 0;
    if (!json_is_array(list)) {
        snprintf(c->why, c->why_n, "%s: expected a list", path);
        return -EINVAL;
    }
    json_array_foreach(list, i, e)
    {
        struct pl_expr *ne = fatia_reallocarray(t->e, t->n + 1, sizeof(*ne));
        const json_t *vals = json_object_get(e, "values");
        const char *key = fatia_json_str(e, "key");
        size_t j;
        const json_t *v;
        if (!ne)
            return -ENOMEM;
        t->e = ne;
        struct pl_expr *x = &t->e[t->n++];
        memset(x, 0, sizeof(*x));
        x->field = field;
        if (!key) {
            snprintf(c->why, c->why_n, "%s[%zu].key: required", path, i);
            return -EINVAL;
        }
        if (parse_op(fatia_json_str(e, "operator"), &x->op) < 0) {
            const char *op = fatia_json_str(e, "operator");
            snprintf(c->why, c->why_n,
                     "%s[%zu].operator: unsupported value '%s': expected one of In, NotIn, Exists, "
                     "DoesNotExist, Gt, Lt",
                     path, i, op ? op : "");
            return -EINVAL;
        }
        if (field &&
            (strcmp(key, "metadata.name") || (x->op != PL_OP_IN && x->op != PL_OP_NOT_IN))) {
            snprintf(c->why, c->why_n,
                     "%s[%zu]: matchFields supports metadata.name with In or "
                     "NotIn",
                     path, i);
            return -EINVAL;
        }
        x->key = fatia_strdup(key);
        if (!x->key)
            return -ENOMEM;
        if (vals && !json_is_array(vals)) {
            snprintf(c->why, c->why_n, "%s[%zu].values: expected a list", path, i);
            return -EINVAL;
        }
        if ((x->op == PL_OP_GT || x->op == PL_OP_LT) && json_array_size(vals) != 1) {
            snprintf(c->why, c->why_n, "%s[%zu].values: Gt and Lt take exactly one value", path, i);
            return -EINVAL;
        }
        x->values =
            json_array_size(vals) ? fatia_calloc(json_array_size(vals), sizeof(char *)) : NULL;
        if (json_array_size(vals) && !x->values)
            return -ENOMEM;
        json_array_foreach(vals, j, v)
        {
            if (!json_is_string(v)) {
                snprintf(c->why, c->why_n, "%s[%zu].values[%zu]: expected a string", path, i, j);
                return -EINVAL;
            }
            if (!(x->values[x->n_values++] = fatia_strdup(json_string_value(v))))
                return -ENOMEM;
        }
    }
    return 0;
}

static int parse_affinity(struct cctx *c, const json_t *aff)
{
    const json_t *req = json_object_get(json_object_get(aff, "nodeAffinity"),
                                        "requiredDuringSchedulingIgnoredDuringExecution");
    const json_t *terms = json_object_get(req, "nodeSelectorTerms");
    struct fatia_place_pod *pod = c->pod;
    size_t i;
    const json_t *t;
    char path[160];
    int r;

    if (!req)
        return 0;
    if (!json_is_array(terms) || !json_array_size(terms)) {
        snprintf(c->why, c->why_n,
                 "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
                 "nodeSelectorTerms: must have at least one term");
        return -EINVAL;
    }
    pod->terms = fatia_calloc(json_array_size(terms), sizeof(*pod->terms));
    if (!pod->terms)
        return -ENOMEM;
    json_array_foreach(terms, i, t)
    {
        struct pl_term *pt = &pod->terms[pod->n_terms++];
        snprintf(path, sizeof(path),
                 "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
                 "nodeSelectorTerms[%zu].matchExpressions",
                 i);
        if ((r = parse_exprs(c, json_object_get(t, "matchExpressions"), false, pt, path)) < 0)
            return r;
        snprintf(path, sizeof(path),
                 "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
                 "nodeSelectorTerms[%zu].matchFields",
                 i);
        if ((r = parse_exprs(c, json_object_get(t, "matchFields"), true, pt, path)) < 0)
            return r;
    }
    return 0;
}

void fatia_place_pod_free(struct fatia_place_pod *pod)
{
    if (!pod)
        return;
    fatia_free(pod->ns_name);
    fatia_free(pod->scalars);
    fatia_free(pod->reqs);
    fatia_free(pod->fracs);
    for (size_t i = 0; i < pod->n_sel; i++) {
        fatia_free(pod->sel_keys ? pod->sel_keys[i] : NULL);
        fatia_free(pod->sel_values ? pod->sel_values[i] : NULL);
    }
    fatia_free(pod->sel_keys);
    fatia_free(pod->sel_values);
    for (size_t i = 0; i < pod->n_terms; i++) {
        for (size_t j = 0; j < pod->terms[i].n; j++) {
            struct pl_expr *e = &pod->terms[i].e[j];
            fatia_free(e->key);
            for (size_t k = 0; k < e->n_values; k++)
                fatia_free(e->values[k]);
            fatia_free(e->values);
        }
        fatia_free(pod->terms[i].e);
    }
    fatia_free(pod->terms);
    for (size_t i = 0; i < pod->n_tols; i++) {
        fatia_free(pod->tols[i].key);
        fatia_free(pod->tols[i].value);
        fatia_free(pod->tols[i].effect);
    }
    fatia_free(pod->tols);
    fatia_free(pod->node_name);
    fatia_free(pod->unknown_res);
    fatia_pl_claims_free(pod);
    fatia_free(pod);
}

static uint64_t hash_str(uint64_t h, const char *s)
{
    return fatia_hash_chain64(s, strlen(s) + 1, h);
}

static void compute_hashes(const struct fatia_place_state *st, struct fatia_place_pod *pod)
{
    uint64_t h = 0x9e3779b97f4a7c15ull;

    for (size_t i = 0; i < pod->n_sel; i++)
        h = hash_str(hash_str(h, pod->sel_keys[i]), pod->sel_values[i]);
    for (size_t i = 0; i < pod->n_terms; i++) {
        h = fatia_hash_chain64("|", 1, h);
        for (size_t j = 0; j < pod->terms[i].n; j++) {
            const struct pl_expr *e = &pod->terms[i].e[j];
            h = fatia_hash_chain64(&e->op, 1, hash_str(h, e->key));
            h = fatia_hash_chain64(&e->field, 1, h);
            for (size_t k = 0; k < e->n_values; k++)
                h = hash_str(h, e->values[k]);
        }
    }
    for (size_t i = 0; i < pod->n_tols; i++)
        h = fatia_hash_chain64(&pod->tols[i].exists, 1,
                               hash_str(hash_str(hash_str(h, pod->tols[i].key), pod->tols[i].value),
                                        pod->tols[i].effect));
    h = hash_str(h, pod->node_name ? pod->node_name : "");
    h = fatia_hash_chain64(&pod->nvlink, 1, h);
    pod->cons_hash = h;
    h = pod->cons_hash;
    for (size_t i = 0; i < pod->n_scalars; i++) {
        h = hash_str(h, st->res->v.v[pod->scalars[i].res].name);
        h = fatia_hash_chain64(&pod->scalars[i].milli, sizeof(int64_t), h);
    }
    for (size_t i = 0; i < pod->n_reqs; i++) {
        h = hash_str(h, st->res->v.v[pod->reqs[i].res].name);
        h = fatia_hash_chain64(&pod->reqs[i].count, sizeof(uint32_t), h);
    }
    for (size_t i = 0; i < pod->n_fracs; i++) {
        h = fatia_hash_chain64(&pod->fracs[i].milli, sizeof(int32_t), h);
        h = fatia_hash_chain64(&pod->fracs[i].memory, sizeof(uint64_t), h);
    }
    pod->shape_hash = h;
}

static int cmp_scalar(const void *a, const void *b)
{
    const struct pl_scalar *x = a, *y = b;
    return (x->res > y->res) - (x->res < y->res);
}

int fatia_place_pod_compile(struct fatia_place_state *st, const char *ns, const json_t *meta,
                            const json_t *spec, const struct fatia_place_flavor *flavors,
                            size_t n_flavors, int32_t priority, struct fatia_place_pod **ret,
                            char *why, size_t why_n)
{
    struct fatia_place_pod *pod = fatia_calloc(1, sizeof(*pod));
    struct cctx c = {st, pod, why, why_n};
    struct acc sum = {0}, init_max = {0}, sidecars = {0}, devsum = {0};
    const json_t *ctrs = json_object_get(spec, "containers");
    const json_t *inits = json_object_get(spec, "initContainers");
    const json_t *ctr, *sel;
    const char *k, *nv;
    json_t *v;
    size_t i;
    char path[96];
    int r = -ENOMEM;

    if (!pod)
        return -ENOMEM;
    if (why_n)
        why[0] = '\0';
    pod->priority = priority;
    pod->ns_name = fatia_strdup(ns ? ns : "");
    if (!pod->ns_name || (r = fatia_pl_ns_intern(st, ns, &pod->ns)) < 0)
        goto fail;
    pod->n_containers = (uint16_t)(json_array_size(ctrs) + json_array_size(inits));
    /* containers: scalars summed, devices per container */
    json_array_foreach(ctrs, i, ctr)
    {
        struct acc counts = {0};
        struct devctx d = {.container = (uint16_t)i, .counts = &counts};
        snprintf(path, sizeof(path), "spec.containers[%zu]", i);
        r = container_each(&c, ctr, path, add_scalar, &sum);
        if (r >= 0)
            r = container_each(&c, ctr, path, add_device, &d);
        if (r >= 0)
            r = push_devices(&c, &d, path);
        for (size_t j = 0; r >= 0 && j < counts.n; j++) {
            int64_t *slot;
            if ((r = acc_slot(&devsum, counts.res[j], &slot)) >= 0)
                *slot += counts.v[j];
        }
        acc_release(&counts);
        if (r < 0)
            goto fail;
    }
    /* init containers: sidecars add up, regular ones take the max with the sidecars before */
    json_array_foreach(inits, i, ctr)
    {
        const char *rp = fatia_json_str(ctr, "restartPolicy");
        bool sidecar = rp && !strcmp(rp, "Always");
        struct acc one = {0}, counts = {0};
        struct devctx d = {.container = (uint16_t)(json_array_size(ctrs) + i), .counts = &counts};
        snprintf(path, sizeof(path), "spec.initContainers[%zu]", i);
        r = container_each(&c, ctr, path, add_scalar, &one);
        if (r >= 0)
            r = container_each(&c, ctr, path, add_device, &d);
        if (r >= 0 && sidecar)
            r = push_devices(&c, &d, path);
        if (r >= 0 && !sidecar) {
            if (d.has_milli || d.has_memory) {
                snprintf(why, why_n,
                         "%s: fractions for init containers are not supported (they would reuse "
                         "the containers' devices)",
                         path);
                r = -EINVAL;
            }
            for (size_t j = 0; r >= 0 && j < counts.n; j++) {
                int64_t *slot;
                if ((r = acc_slot(&devsum, counts.res[j], &slot)) < 0)
                    break;
                if (counts.v[j] > *slot) {
                    snprintf(why, why_n,
                             "%s: asks for %" PRId64 " %s, more than the containers do (%" PRId64
                             "): an init container reuses their devices",
                             path, counts.v[j], st->res->v.v[counts.res[j]].name, *slot);
                    r = -EINVAL;
                }
            }
        }
        for (size_t j = 0; r >= 0 && j < one.n; j++) {
            int64_t *slot, *sc;
            if ((r = acc_slot(&init_max, one.res[j], &slot)) < 0)
                break;
            if (sidecar) {
                if ((r = acc_slot(&sidecars, one.res[j], &sc)) < 0)
                    break;
                *sc += one.v[j];
            } else {
                int64_t with = one.v[j];
                if ((r = acc_slot(&sidecars, one.res[j], &sc)) < 0)
                    break;
                with += *sc;
                if (with > *slot)
                    *slot = with;
            }
        }
        acc_release(&one);
        acc_release(&counts);
        if (r < 0)
            goto fail;
    }
    for (size_t j = 0; j < sidecars.n; j++) {
        int64_t *slot;
        if ((r = acc_slot(&sum, sidecars.res[j], &slot)) < 0)
            goto fail;
        *slot += sidecars.v[j];
    }
    for (size_t j = 0; j < init_max.n; j++) {
        int64_t *slot;
        if ((r = acc_slot(&sum, init_max.res[j], &slot)) < 0)
            goto fail;
        if (init_max.v[j] > *slot)
            *slot = init_max.v[j];
    }
    json_object_foreach(json_object_get(spec, "overhead"), k, v)
    {
        snprintf(path, sizeof(path), "spec.overhead[%s]", k);
        if ((r = add_scalar(&c, k, v, path, &sum)) < 0)
            goto fail;
    }
    json_object_foreach(json_object_get(json_object_get(spec, "resources"), "requests"), k, v)
    {
        struct acc one = {0};
        int64_t *slot;
        snprintf(path, sizeof(path), "spec.resources.requests[%s]", k);
        r = add_scalar(&c, k, v, path, &one);
        for (size_t j = 0; r >= 0 && j < one.n; j++)
            if ((r = acc_slot(&sum, one.res[j], &slot)) >= 0)
                *slot = one.v[j];
        acc_release(&one);
        if (r < 0)
            goto fail;
    }
    {
        int64_t *slot;
        if ((r = acc_slot(&sum, st->r_pods, &slot)) < 0)
            goto fail;
        *slot += 1000;
    }
    r = -ENOMEM;
    pod->scalars = fatia_calloc(sum.n ? sum.n : 1, sizeof(*pod->scalars));
    if (!pod->scalars)
        goto fail;
    for (size_t j = 0; j < sum.n; j++)
        if (sum.v[j] > 0)
            pod->scalars[pod->n_scalars++] = (struct pl_scalar){sum.res[j], sum.v[j]};
    if (pod->n_scalars)
        qsort(pod->scalars, pod->n_scalars, sizeof(*pod->scalars), cmp_scalar);
    /* a scalar no node was built with: remember its name for the reason */
    for (size_t j = 0; j < pod->n_scalars; j++) {
        const struct pl_res *res = fatia_pl_res_get(st, pod->scalars[j].res);
        if (st->n_nodes && (size_t)res->slot >= st->nodes[0].n_scalar && !pod->unknown_res) {
            pod->unknown_res = fatia_strdup(res->name);
            if (!pod->unknown_res)
                goto fail;
        }
    }
    /* constraints */
    sel = json_object_get(spec, "nodeSelector");
    json_object_foreach((json_t *)sel, k, v)
    {
        if (!json_is_string(v)) {
            snprintf(why, why_n, "spec.nodeSelector[%s]: expected a string", k);
            r = -EINVAL;
            goto fail;
        }
        if ((r = add_sel(pod, k, json_string_value(v))) < 0)
            goto fail;
    }
    for (size_t f = 0; f < n_flavors; f++) {
        json_object_foreach((json_t *)flavors[f].node_labels, k, v)
        {
            if (json_is_string(v) && (r = add_sel(pod, k, json_string_value(v))) < 0)
                goto fail;
        }
        if ((r = add_tols(&c, flavors[f].tolerations, "flavor spec.tolerations")) < 0)
            goto fail;
    }
    if ((r = parse_affinity(&c, json_object_get(spec, "affinity"))) < 0 ||
        (r = add_tols(&c, json_object_get(spec, "tolerations"), "spec.tolerations")) < 0)
        goto fail;
    if ((nv = fatia_json_str(spec, "nodeName")) && *nv && !(pod->node_name = fatia_strdup(nv))) {
        r = -ENOMEM;
        goto fail;
    }
    nv = fatia_json_str(json_object_get(meta, "annotations"), "fatia.dev/nvlink");
    if (nv && !strcmp(nv, "required"))
        pod->nvlink = PL_NVLINK_REQUIRED;
    else if (nv && strcmp(nv, "preferred")) {
        snprintf(why, why_n,
                 "metadata.annotations[fatia.dev/nvlink]: unsupported value '%s': expected "
                 "required or preferred",
                 nv);
        r = -EINVAL;
        goto fail;
    }
    compute_hashes(st, pod);
    acc_release(&sum);
    acc_release(&init_max);
    acc_release(&sidecars);
    acc_release(&devsum);
    *ret = pod;
    return 0;
fail:
    if (r == -ENOMEM && why_n)
        snprintf(why, why_n, "out of memory");
    acc_release(&sum);
    acc_release(&init_max);
    acc_release(&sidecars);
    acc_release(&devsum);
    fatia_place_pod_free(pod);
    return r;
}

bool fatia_place_pod_is_cpu_only(const struct fatia_place_pod *pod)
{
    return !pod->n_reqs && !pod->n_fracs && !pod->n_claims;
}

uint64_t fatia_place_pod_gpu_milli(const struct fatia_place_state *st,
                                   const struct fatia_place_pod *pod)
{
    uint64_t m = 0;

    for (size_t i = 0; i < pod->n_fracs; i++)
        m += (uint64_t)pod->fracs[i].milli;
    for (size_t i = 0; i < pod->n_reqs; i++) {
        uint32_t w = 1000;
        /* the weight of the first slice of that resource in the fleet */
        for (size_t g = 0; g < st->n_gpus; g++) {
            const struct pl_gpu *gp = &st->gpus[g];
            bool found = false;
            for (uint16_t s = 0; s < gp->n_slices; s++)
                if (gp->slices[s].res == pod->reqs[i].res) {
                    w = gp->slices[s].weight;
                    found = true;
                    break;
                }
            if (found)
                break;
        }
        m += (uint64_t)w * pod->reqs[i].count;
    }
    return m;
}
