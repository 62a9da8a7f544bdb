/*
 * demand/place_state.c: the placement state: built from a supply plan, changed by binds, unbinds
 * and MIG layout changes (see place.h and place_internal.h).
 *
 * Model. Every GPU of the plan becomes a struct pl_gpu with the slices the plan cut it into (only
 * those that exist are allocatable), or, under a `fractional` policy, a fraction pool of 1000
 * milli-GPUs and its memory. Node resources other than device resources (cpu, memory, pods, ...)
 * become scalar slots, compared in milli-units as Kueue compares them.
 *
 * Invariants (checked by fatia_place_check in tests):
 *   - a slice's owner is a live binding that lists it, and every item of a live binding that names
 *     a slice is owned by that binding;
 *   - per GPU: n_used = slices with an owner; users = live bindings with an item on it;
 *     milli_free = 1000 - the milli of its fractions; mem_free = mem_total - their charges;
 *     shares = number of fractions; fmask has one bit per fraction id in use; mps_ns is the
 *     namespace of the MPS shares in use (0 when none);
 *   - per node: used[slot] = the scalars of its bindings; touched = its GPUs with users > 0.
 *
 * Memory charged to a fraction pool (DESIGN §7, "what a memory cap counts"): a fraction that
 * names fatia.dev/gpu-memory M is capped at M and charged M plus the context reserve (its CUDA
 * context sits outside the cap); one that names only gpu-milli m is charged m/1000 of the GPU's
 * memory, its context included, and capped at that minus the reserve; a whole GPU of a fraction
 * pool is charged everything. So fractions of gpu-milli only never run out of memory before they
 * run out of milli-GPUs, which keeps a trace of gpu_milli requests (Alibaba's) about compute.
 *
 * Rejected: keeping the allocation inside the supply plan's slices (the plan is immutable and
 * shared by every reader), and recomputing counters from bindings on each query (the simulator
 * asks after every event).
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/hash.h"
#include "base/json.h"
#include "demand/place_internal.h"
#include "model/quantity.h"

char *fatia_pl_strprintf(const char *fmt, ...)
{
    va_list ap;
    int n;
    char *s;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !(s = fatia_malloc((size_t)n + 1)))
        return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

/* ---- resources ---- */

int fatia_pl_res_intern(struct pl_restab *t, const char *name, uint8_t kind_hint, uint16_t *ret)
{
    void *v;
    struct pl_res r = {0};

    if (fatia_strmap_has(&t->index, name)) {
        v = fatia_strmap_get(&t->index, name);
        *ret = (uint16_t)(uintptr_t)v;
        return 0;
    }
    if (t->v.n >= UINT16_MAX - 1)
        return -FATIA_E_LIMIT;
    r.name = fatia_strdup(name);
    if (!r.name)
        return -ENOMEM;
    r.kind = kind_hint;
    r.slot = kind_hint == PL_RES_SCALAR ? (int32_t)t->n_scalars : -1;
    if (FATIA_VEC_PUSH(&t->v, r) < 0) {
        fatia_free(r.name);
        return -ENOMEM;
    }
    /* the key must stay where it is: names are separate allocations */
    if (fatia_strmap_put(&t->index, t->v.v[t->v.n - 1].name, (void *)(uintptr_t)(t->v.n - 1)) < 0) {
        fatia_free(r.name);
        t->v.n--;
        return -ENOMEM;
    }
    if (kind_hint == PL_RES_SCALAR)
        t->n_scalars++;
    *ret = (uint16_t)(t->v.n - 1);
    return 0;
}

const struct pl_res *fatia_pl_res_get(const struct fatia_place_state *st, uint16_t id)
{
    return id < st->res->v.n ? &st->res->v.v[id] : NULL;
}

static void restab_free(struct pl_restab *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->v.n; i++)
        fatia_free(t->v.v[i].name);
    FATIA_VEC_RELEASE(&t->v);
    fatia_strmap_release(&t->index);
    fatia_free(t);
}

int fatia_pl_ns_intern(struct fatia_place_state *st, const char *ns, uint32_t *ret)
{
    char *copy;

    if (!ns)
        ns = "";
    if (fatia_strmap_has(&st->ns_index, ns)) {
        *ret = (uint32_t)(uintptr_t)fatia_strmap_get(&st->ns_index, ns);
        return 0;
    }
    copy = fatia_strdup(ns);
    if (!copy)
        return -ENOMEM;
    if (FATIA_VEC_PUSH(&st->namespaces, copy) < 0) {
        fatia_free(copy);
        return -ENOMEM;
    }
    if (fatia_strmap_put(&st->ns_index, copy, (void *)(uintptr_t)st->namespaces.n) < 0) {
        st->namespaces.n--;
        fatia_free(copy);
        return -ENOMEM;
    }
    *ret = (uint32_t)st->namespaces.n;
    return 0;
}

const char *fatia_place_policy_name(enum fatia_place_policy p)
{
    static const char *const names[] = {"binpack", "bestfit", "spread", "fragmentation"};
    return (size_t)p < FATIA_ARRAY_SIZE(names) ? names[p] : "?";
}

int fatia_place_policy_parse(const char *s, enum fatia_place_policy *ret)
{
    static const struct {
        const char *name;
        enum fatia_place_policy p;
    } t[] = {{"binpack", FATIA_PLACE_BINPACK},
             {"bestfit", FATIA_PLACE_BESTFIT},
             {"best-fit", FATIA_PLACE_BESTFIT},
             {"spread", FATIA_PLACE_SPREAD},
             {"fragmentation", FATIA_PLACE_FRAGMENTATION},
             {"fgd", FATIA_PLACE_FRAGMENTATION}};

    for (size_t i = 0; s && i < FATIA_ARRAY_SIZE(t); i++)
        if (!strcmp(s, t[i].name)) {
            *ret = t[i].p;
            return 0;
        }
    return -EINVAL;
}

/* ---- GPU arithmetic ---- */

uint32_t fatia_pl_gpu_total_milli(const struct pl_gpu *g)
{
    (void)g;
    return 1000;
}

uint32_t fatia_pl_gpu_free_slices(const struct pl_gpu *g)
{
    uint32_t free = 0;

    for (uint16_t i = 0; i < g->n_slices; i++)
        if (g->slices[i].exists && g->slices[i].owner == PL_NO_OWNER)
            free += g->slices[i].weight;
    if (g->mig_dynamic && g->model->mig) {
        /* memory slices no instance covers can still be cut into instances */
        unsigned covered = 0, total = g->model->mig->memory_slices;
        for (unsigned i = 0; i < g->layout.n; i++)
            covered += g->layout.v[i].profile->memory_slices;
        if (total > covered)
            free += (uint32_t)((total - covered) * 1000u / total);
    }
    return free > 1000 ? 1000 : free;
}

int fatia_pl_first_free_fraction(const struct pl_gpu *g)
{
    for (unsigned w = 0; w < PL_MAX_FRACTION / 64; w++)
        if (~g->fmask[w])
            return (int)(w * 64 + (unsigned)__builtin_ctzll(~g->fmask[w]));
    return -1;
}

/* ---- counters ---- */

static void gpu_user(struct fatia_place_state *st, struct pl_gpu *g, int sign)
{
    struct pl_node *n = &st->nodes[g->node];

    if (sign > 0) {
        if (g->users++ == 0)
            n->touched++;
    } else {
        FATIA_ASSERT(g->users > 0);
        if (--g->users == 0)
            n->touched--;
    }
}

void fatia_pl_node_summary(struct fatia_place_state *st, uint32_t node)
{
    struct pl_node *nd = &st->nodes[node];
    int32_t best = -1;
    uint32_t whole = 0;

    for (uint32_t i = 0; i < nd->n_gpus; i++) {
        const struct pl_gpu *g = &st->gpus[nd->first_gpu + i];
        if (!g->fractional)
            continue;
        if (g->shares < g->max_shares && g->milli_free > best)
            best = g->milli_free;
        whole += g->users == 0 && g->shares == 0;
    }
    nd->frac_max_free = best;
    nd->frac_whole_free = whole;
}

void fatia_pl_apply_items(struct fatia_place_state *st, uint32_t node, const struct pl_item *items,
                          size_t n, uint32_t ns, int sign)
{
    /* (the node summary is refreshed by bind and unbind only) */
    (void)node;
    for (size_t i = 0; i < n; i++) {
        const struct pl_item *it = &items[i];
        struct pl_gpu *g = &st->gpus[it->gpu];
        bool first = true;

        for (size_t j = 0; j < i; j++)
            first &= items[j].gpu != it->gpu;
        if (it->slice == FATIA_PLACE_FRACTION) {
            if (it->milli >= 1000) {
                g->milli_free -= sign * 1000;
                g->mem_free = sign > 0 ? 0 : g->mem_total;
            } else {
                g->milli_free -= sign * it->milli;
                if (sign > 0)
                    g->mem_free -= it->mem_charge;
                else
                    g->mem_free += it->mem_charge;
                g->shares = (uint16_t)(g->shares + sign);
                if (sign > 0)
                    g->fmask[it->fraction / 64] |= UINT64_C(1) << (it->fraction % 64);
                else
                    g->fmask[it->fraction / 64] &= ~(UINT64_C(1) << (it->fraction % 64));
            }
        } else {
            struct pl_slice *s = &g->slices[it->slice];
            if (s->dra >= 0 && st->dra_st.used && (size_t)s->dra < st->dra_st.n)
                st->dra_st.used[s->dra] = sign > 0;
            if (sign > 0) {
                FATIA_ASSERT(s->owner == PL_NO_OWNER);
                s->owner = INT32_MAX; /* tentative; the binding sets its index */
                g->n_used++;
                if (s->kind == FATIA_SLICE_MPS)
                    g->mps_ns = ns;
            } else {
                s->owner = PL_NO_OWNER;
                g->n_used--;
                if (s->kind == FATIA_SLICE_MPS && g->n_used == 0)
                    g->mps_ns = 0;
            }
        }
        if (first)
            gpu_user(st, g, sign);
    }
}

void fatia_pl_apply_scalars(struct fatia_place_state *st, uint32_t node, const struct pl_scalar *sc,
                            size_t n, int sign)
{
    struct pl_node *nd = &st->nodes[node];

    for (size_t i = 0; i < n; i++) {
        const struct pl_res *r = fatia_pl_res_get(st, sc[i].res);
        if (r && r->slot >= 0 && (size_t)r->slot < nd->n_scalar)
            nd->used[r->slot] += sign * sc[i].milli;
    }
}

/* ---- bindings ---- */

int fatia_pl_bind_items(struct fatia_place_state *st, const char *key, uint32_t node, uint32_t ns,
                        int32_t priority, const struct pl_scalar *sc, size_t n_sc,
                        const struct pl_item *items, size_t n_items)
{
    struct pl_bind b = {0};
    int32_t idx;

    if (fatia_strmap_has(&st->bind_index, key))
        return -FATIA_E_EXISTS;
    b.key = fatia_strdup(key);
    b.scalars = n_sc ? fatia_calloc(n_sc, sizeof(*sc)) : NULL;
    b.items = n_items ? fatia_calloc(n_items, sizeof(*items)) : NULL;
    if (!b.key || (n_sc && !b.scalars) || (n_items && !b.items))
        goto fail;
    if (n_sc)
        memcpy(b.scalars, sc, n_sc * sizeof(*sc));
    if (n_items)
        memcpy(b.items, items, n_items * sizeof(*items));
    b.n_scalars = n_sc;
    b.n_items = n_items;
    b.node = node;
    b.ns = ns;
    b.priority = priority;
    b.next_free = -1;
    if (st->free_bind >= 0) {
        idx = st->free_bind;
        st->free_bind = st->binds.v[idx].next_free;
        st->binds.v[idx] = b;
    } else {
        if (FATIA_VEC_PUSH(&st->binds, b) < 0)
            goto fail;
        idx = (int32_t)(st->binds.n - 1);
    }
    if (fatia_strmap_put(&st->bind_index, st->binds.v[idx].key, (void *)(intptr_t)idx) < 0) {
        st->binds.v[idx].key = NULL;
        st->binds.v[idx].next_free = st->free_bind;
        st->free_bind = idx;
        goto fail;
    }
    fatia_pl_apply_scalars(st, node, sc, n_sc, +1);
    fatia_pl_apply_items(st, node, items, n_items, ns, +1);
    for (size_t i = 0; i < n_items; i++)
        if (items[i].slice != FATIA_PLACE_FRACTION)
            st->gpus[items[i].gpu].slices[items[i].slice].owner = idx;
    fatia_pl_node_changed(st, node);
    fatia_pl_node_summary(st, node);
    st->n_bound++;
    return 0;
fail:
    fatia_free(b.key);
    fatia_free(b.scalars);
    fatia_free(b.items);
    return -ENOMEM;
}

int fatia_place_unbind(struct fatia_place_state *st, const char *key)
{
    struct pl_bind *b;
    int32_t idx;

    if (!fatia_strmap_has(&st->bind_index, key))
        return -ENOENT;
    idx = (int32_t)(intptr_t)fatia_strmap_get(&st->bind_index, key);
    b = &st->binds.v[idx];
    fatia_strmap_del(&st->bind_index, key);
    fatia_pl_apply_scalars(st, b->node, b->scalars, b->n_scalars, -1);
    fatia_pl_apply_items(st, b->node, b->items, b->n_items, b->ns, -1);
    fatia_pl_node_changed(st, b->node);
    fatia_pl_node_summary(st, b->node);
    fatia_free(b->key);
    fatia_free(b->scalars);
    fatia_free(b->items);
    memset(b, 0, sizeof(*b));
    b->next_free = st->free_bind;
    st->free_bind = idx;
    st->n_bound--;
    return 0;
}

bool fatia_place_is_bound(const struct fatia_place_state *st, const char *key)
{
    return fatia_strmap_has(&st->bind_index, key);
}

/* ---- building ---- */

static int parse_taints(struct pl_node *n, const json_t *taints)
{
    size_t i;
    const json_t *t;

    if (!json_is_array(taints) || !json_array_size(taints))
        return 0;
    n->taints = fatia_calloc(json_array_size(taints), sizeof(*n->taints));
    if (!n->taints)
        return -ENOMEM;
    json_array_foreach(taints, i, t)
    {
        struct pl_taint *x = &n->taints[n->n_taints++];
        const char *v = fatia_json_str(t, "value");
        x->key = fatia_strdup(fatia_json_str(t, "key") ? fatia_json_str(t, "key") : "");
        x->value = fatia_strdup(v ? v : "");
        x->effect = fatia_strdup(fatia_json_str(t, "effect") ? fatia_json_str(t, "effect") : "");
        if (!x->key || !x->value || !x->effect)
            return -ENOMEM;
        if (!(x->desc = fatia_pl_strprintf("had untolerated taint {%s: %s}", x->key, x->value)))
            return -ENOMEM;
    }
    return 0;
}

static void node_release(struct pl_node *n)
{
    json_decref(n->labels);
    for (size_t i = 0; i < n->n_taints; i++) {
        fatia_free(n->taints[i].key);
        fatia_free(n->taints[i].value);
        fatia_free(n->taints[i].effect);
        fatia_free(n->taints[i].desc);
    }
    fatia_free(n->taints);
    fatia_free(n->alloc);
    fatia_free(n->used);
}

static uint16_t slice_weight(const struct pl_gpu *g, const struct pl_slice *s)
{
    uint32_t w = 1000;

    if (s->mig != FATIA_NO_MIG && g->model->mig && s->mig < g->layout.n)
        w = (uint32_t)g->layout.v[s->mig].profile->memory_slices * 1000u /
            g->model->mig->memory_slices;
    if (g->replicas > 1)
        w /= g->replicas;
    return (uint16_t)w;
}

static int build_gpu(struct fatia_place_state *st, const struct fatia_plan *plan,
                     const struct fatia_plan_gpu *pg, uint32_t node, struct pl_gpu *g)
{
    int r;

    g->node = node;
    g->index = pg->inv->index;
    g->minor = pg->inv->minor;
    g->island = pg->inv->island;
    g->model = pg->inv->model;
    g->replicas = (uint16_t)(pg->replicas ? pg->replicas : 1);
    g->mig_enabled = pg->mig_enabled;
    if (pg->layout)
        g->layout = *pg->layout;
    g->mig_dynamic = pg->mig_enabled && pg->strategy == FATIA_MIG_STRATEGY_MIXED &&
                     g->replicas <= 1 && g->model->mig;
    g->strategy = PL_GPU_WHOLE;
    if (pg->mig_enabled)
        g->strategy = PL_GPU_MIG;
    else if (pg->share_policy && pg->share_policy->share == FATIA_SHARE_FRACTIONAL)
        g->strategy = PL_GPU_FRACTION;
    else if (pg->share_policy && pg->share_policy->share == FATIA_SHARE_MPS)
        g->strategy = PL_GPU_MPS;
    else if (pg->share_policy && pg->share_policy->share == FATIA_SHARE_TIMESLICE)
        g->strategy = PL_GPU_TIMESLICE;
    if (pg->n_slices > 1024)
        return -FATIA_E_LIMIT;
    g->slices = pg->n_slices ? fatia_calloc(pg->n_slices, sizeof(*g->slices)) : NULL;
    if (pg->n_slices && !g->slices)
        return -ENOMEM;
    for (uint32_t i = 0; i < pg->n_slices; i++) {
        const struct fatia_slice *s = &plan->slices[pg->first_slice + i];
        if (s->kind == FATIA_SLICE_FRACTION) {
            g->fractional = true;
            g->milli_free = 1000;
            g->mem_total = g->mem_free = s->memory_bytes;
            g->mem_per_milli = s->memory_bytes / 1000u;
            g->ctx_reserve = pg->context_reserve;
            g->max_shares =
                (uint16_t)(pg->share_policy && pg->share_policy->max_shares
                               ? FATIA_MIN(pg->share_policy->max_shares, (uint32_t)PL_MAX_FRACTION)
                               : PL_MAX_FRACTION);
            continue;
        }
        struct pl_slice *ps = &g->slices[g->n_slices++];
        if ((r = fatia_pl_res_intern(st->res, plan->resources[s->resource], PL_RES_DEVICE,
                                     &ps->res)) < 0)
            return r;
        ps->kind = s->kind;
        ps->exists = s->state != FATIA_STATE_PLANNED;
        ps->mig = s->mig;
        ps->replica = s->replica;
        ps->memory = s->memory_bytes;
        ps->owner = PL_NO_OWNER;
        ps->dra = -1;
        ps->weight = slice_weight(g, ps);
    }
    return 0;
}

/* The node's class: everything placement reads of it that does not change, but its name. */
uint64_t fatia_pl_node_class(const struct fatia_place_state *st, const struct pl_node *n)
{
    uint64_t h = 0x51ed270b27a5c3e1ull;
    const char *k;
    json_t *v;

    json_object_foreach(n->labels, k, v)
    {
        if (!strcmp(k, "kubernetes.io/hostname") || !json_is_string(v))
            continue;
        h = fatia_hash_chain64(k, strlen(k) + 1, h);
        h = fatia_hash_chain64(json_string_value(v), strlen(json_string_value(v)) + 1, h);
    }
    for (size_t i = 0; i < n->n_taints; i++)
        h = fatia_hash_chain64(
            n->taints[i].desc, strlen(n->taints[i].desc) + 1,
            fatia_hash_chain64(n->taints[i].effect, strlen(n->taints[i].effect) + 1, h));
    h = fatia_hash_chain64(n->alloc, n->n_scalar * sizeof(*n->alloc), h);
    h = fatia_hash_chain64(&n->n_gpus, sizeof(n->n_gpus), h);
    for (uint32_t i = 0; i < n->n_gpus; i++) {
        const struct pl_gpu *g = &st->gpus[n->first_gpu + i];
        uint64_t x[8] = {(uint64_t)(uintptr_t)g->model,
                         (uint64_t)g->island,
                         g->strategy,
                         g->n_slices,
                         g->fractional,
                         g->mem_total,
                         g->max_shares,
                         g->ctx_reserve};
        h = fatia_hash_chain64(x, sizeof(x), h);
        for (uint16_t s = 0; s < g->n_slices; s++) {
            uint64_t y[4] = {g->slices[s].res, g->slices[s].kind, g->slices[s].weight,
                             g->slices[s].memory};
            h = fatia_hash_chain64(y, sizeof(y), h);
        }
    }
    return h;
}

static int scalar_from(const json_t *q, int64_t *ret)
{
    struct fatia_quantity v;

    if (fatia_quantity_parse_json(q, &v, NULL, 0) < 0)
        return -EINVAL;
    *ret = fatia_quantity_milli(&v);
    return 0;
}

static void state_release(struct fatia_place_state *st)
{
    for (size_t i = 0; i < st->n_nodes; i++)
        node_release(&st->nodes[i]);
    fatia_free(st->nodes);
    for (size_t i = 0; i < st->n_gpus; i++)
        fatia_free(st->gpus[i].slices);
    fatia_free(st->gpus);
    for (size_t i = 0; i < st->binds.n; i++) {
        fatia_free(st->binds.v[i].key);
        fatia_free(st->binds.v[i].scalars);
        fatia_free(st->binds.v[i].items);
    }
    FATIA_VEC_RELEASE(&st->binds);
    fatia_strmap_release(&st->bind_index);
    for (size_t i = 0; i < st->namespaces.n; i++)
        fatia_free(st->namespaces.v[i]);
    FATIA_VEC_RELEASE(&st->namespaces);
    fatia_strmap_release(&st->ns_index);
    if (st->owns_res)
        restab_free(st->res);
    if (st->dra_borrowed) {
        st->dra_inv = NULL;
        fatia_dra_state_release(&st->dra_st);
        fatia_free(st->dra_map);
    } else {
        fatia_pl_dra_release(st);
    }
}

void fatia_place_state_free(struct fatia_place_state *st)
{
    if (!st)
        return;
    fatia_place_state_free(st->twin);
    fatia_free(st->memo);
    state_release(st);
    fatia_free(st);
}

static struct fatia_place_state *state_alloc(void)
{
    struct fatia_place_state *st = fatia_calloc(1, sizeof(*st));

    if (!st)
        return NULL;
    st->free_bind = -1;
    fatia_strmap_init(&st->bind_index);
    fatia_strmap_init(&st->ns_index);
    return st;
}

static int well_known(struct fatia_place_state *st)
{
    int r;

    if ((r = fatia_pl_res_intern(st->res, "cpu", PL_RES_SCALAR, &st->r_cpu)) < 0 ||
        (r = fatia_pl_res_intern(st->res, "memory", PL_RES_SCALAR, &st->r_memory)) < 0 ||
        (r = fatia_pl_res_intern(st->res, "pods", PL_RES_SCALAR, &st->r_pods)) < 0 ||
        (r = fatia_pl_res_intern(st->res, "fatia.dev/gpu-milli", PL_RES_GPU_MILLI,
                                 &st->r_gpu_milli)) < 0 ||
        (r = fatia_pl_res_intern(st->res, "fatia.dev/gpu-memory", PL_RES_GPU_MEMORY,
                                 &st->r_gpu_memory)) < 0)
        return r;
    return 0;
}

int fatia_place_state_new(const struct fatia_plan *plan, struct fatia_place_state **ret)
{
    struct fatia_place_state *st = state_alloc();
    json_t **allocs = NULL;
    size_t n_gpus = 0, gi = 0;
    int r = -ENOMEM;

    if (!st)
        return -ENOMEM;
    st->plan = plan;
    st->res = fatia_calloc(1, sizeof(*st->res));
    if (!st->res)
        goto fail;
    st->owns_res = true;
    fatia_strmap_init(&st->res->index);
    if ((r = well_known(st)) < 0)
        goto fail;
    /* device resources first, so that node allocatable does not make them scalars */
    for (size_t i = 0; i < plan->n_resources; i++) {
        uint16_t id;
        const char *name = plan->resources[i];
        uint8_t kind = !strcmp(name, "fatia.dev/gpu-milli") ? PL_RES_GPU_MILLI : PL_RES_DEVICE;
        if ((r = fatia_pl_res_intern(st->res, name, kind, &id)) < 0)
            goto fail;
    }
    for (size_t i = 0; i < plan->n_nodes; i++)
        n_gpus += plan->nodes[i].inv->n_gpus;
    r = -ENOMEM;
    st->nodes = plan->n_nodes ? fatia_calloc(plan->n_nodes, sizeof(*st->nodes)) : NULL;
    st->gpus = n_gpus ? fatia_calloc(n_gpus, sizeof(*st->gpus)) : NULL;
    allocs = plan->n_nodes ? fatia_calloc(plan->n_nodes, sizeof(*allocs)) : NULL;
    if ((plan->n_nodes && (!st->nodes || !allocs)) || (n_gpus && !st->gpus))
        goto fail;
    st->n_nodes = plan->n_nodes;
    /* pass 1: labels, taints, scalar names, GPUs */
    for (size_t i = 0; i < plan->n_nodes; i++) {
        const struct fatia_plan_node *pn = &plan->nodes[i];
        struct pl_node *n = &st->nodes[i];
        json_t *nj = fatia_plan_node_json(plan, i), *v;
        const char *k;
        if (!nj)
            goto fail;
        n->name = pn->inv->name;
        n->sig_gen = UINT64_MAX;
        n->labels = json_incref(json_object_get(nj, "labels"));
        allocs[i] = json_incref(json_object_get(nj, "allocatable"));
        json_decref(nj);
        if ((r = parse_taints(n, pn->inv->taints)) < 0)
            goto fail;
        json_object_foreach(allocs[i], k, v)
        {
            uint16_t id;
            (void)v;
            if ((r = fatia_pl_res_intern(st->res, k, PL_RES_SCALAR, &id)) < 0)
                goto fail;
        }
        n->first_gpu = (uint32_t)gi;
        n->n_gpus = pn->inv->n_gpus;
        for (uint32_t g = 0; g < pn->inv->n_gpus; g++, gi++)
            if ((r = build_gpu(st, plan, &pn->gpus[g], (uint32_t)i, &st->gpus[gi])) < 0)
                goto fail;
        st->max_node_gpus = FATIA_MAX(st->max_node_gpus, n->n_gpus);
    }
    st->n_gpus = n_gpus;
    /* pass 2: scalar arrays */
    r = -ENOMEM;
    for (size_t i = 0; i < plan->n_nodes; i++) {
        struct pl_node *n = &st->nodes[i];
        const char *k;
        json_t *v;
        n->n_scalar = st->res->n_scalars;
        n->alloc = fatia_calloc(n->n_scalar ? n->n_scalar : 1, sizeof(*n->alloc));
        n->used = fatia_calloc(n->n_scalar ? n->n_scalar : 1, sizeof(*n->used));
        if (!n->alloc || !n->used)
            goto fail;
        json_object_foreach(allocs[i], k, v)
        {
            uint16_t id;
            int64_t milli;
            const struct pl_res *res;
            if (fatia_pl_res_intern(st->res, k, PL_RES_SCALAR, &id) < 0)
                goto fail;
            res = fatia_pl_res_get(st, id);
            if (res->kind != PL_RES_SCALAR || scalar_from(v, &milli) < 0)
                continue;
            n->alloc[res->slot] = milli;
        }
        st->max_cpu_milli = FATIA_MAX(st->max_cpu_milli, n->alloc[st->res->v.v[st->r_cpu].slot]);
    }
    for (size_t i = 0; i < plan->n_nodes; i++) {
        json_decref(allocs[i]);
        fatia_pl_node_summary(st, (uint32_t)i);
        st->nodes[i].cls = fatia_pl_node_class(st, &st->nodes[i]);
    }
    fatia_free(allocs);
    *ret = st;
    return 0;
fail:
    for (size_t i = 0; allocs && i < plan->n_nodes; i++)
        json_decref(allocs[i]);
    fatia_free(allocs);
    st->n_gpus = n_gpus;
    fatia_place_state_free(st);
    return r;
}

/* An empty copy sharing the resource table (FATIA_PLACE_TEST). */
static int state_copy_empty(const struct fatia_place_state *src, struct fatia_place_state **ret)
{
    struct fatia_place_state *st = state_alloc();

    if (!st)
        return -ENOMEM;
    st->plan = src->plan;
    st->res = src->res;
    st->owns_res = false;
    st->max_cpu_milli = src->max_cpu_milli;
    st->max_node_gpus = src->max_node_gpus;
    st->r_cpu = src->r_cpu;
    st->r_memory = src->r_memory;
    st->r_pods = src->r_pods;
    st->r_gpu_milli = src->r_gpu_milli;
    st->r_gpu_memory = src->r_gpu_memory;
    st->layout_gen = src->layout_gen;
    st->nodes = src->n_nodes ? fatia_calloc(src->n_nodes, sizeof(*st->nodes)) : NULL;
    st->gpus = src->n_gpus ? fatia_calloc(src->n_gpus, sizeof(*st->gpus)) : NULL;
    if ((src->n_nodes && !st->nodes) || (src->n_gpus && !st->gpus))
        goto fail;
    st->n_nodes = src->n_nodes;
    st->n_gpus = src->n_gpus;
    for (size_t i = 0; i < src->n_nodes; i++) {
        const struct pl_node *s = &src->nodes[i];
        struct pl_node *n = &st->nodes[i];
        n->name = s->name;
        n->cls = s->cls;
        n->sig_gen = UINT64_MAX;
        n->labels = json_incref(s->labels);
        n->first_gpu = s->first_gpu;
        n->n_gpus = s->n_gpus;
        n->n_scalar = s->n_scalar;
        n->alloc = fatia_calloc(s->n_scalar ? s->n_scalar : 1, sizeof(*n->alloc));
        n->used = fatia_calloc(s->n_scalar ? s->n_scalar : 1, sizeof(*n->used));
        if (!n->alloc || !n->used)
            goto fail;
        memcpy(n->alloc, s->alloc, s->n_scalar * sizeof(*n->alloc));
        if (s->n_taints) {
            n->taints = fatia_calloc(s->n_taints, sizeof(*n->taints));
            if (!n->taints)
                goto fail;
            for (size_t t = 0; t < s->n_taints; t++) {
                struct pl_taint *x = &n->taints[n->n_taints++];
                x->key = fatia_strdup(s->taints[t].key);
                x->value = fatia_strdup(s->taints[t].value);
                x->effect = fatia_strdup(s->taints[t].effect);
                if (!x->key || !x->value || !x->effect)
                    goto fail;
                if (!(x->desc = fatia_strdup(s->taints[t].desc)))
                    goto fail;
            }
        }
    }
    for (size_t i = 0; i < src->n_gpus; i++) {
        const struct pl_gpu *s = &src->gpus[i];
        struct pl_gpu *g = &st->gpus[i];
        *g = *s;
        g->slices = NULL;
        g->n_used = 0;
        g->users = 0;
        g->mps_ns = 0;
        g->shares = 0;
        memset(g->fmask, 0, sizeof(g->fmask));
        if (g->fractional) {
            g->milli_free = 1000;
            g->mem_free = g->mem_total;
        }
        if (s->n_slices) {
            g->slices = fatia_calloc(s->n_slices, sizeof(*g->slices));
            if (!g->slices)
                goto fail;
            memcpy(g->slices, s->slices, s->n_slices * sizeof(*g->slices));
            for (uint16_t k = 0; k < g->n_slices; k++)
                g->slices[k].owner = PL_NO_OWNER;
        }
    }
    for (size_t i = 0; i < st->n_nodes; i++)
        fatia_pl_node_summary(st, (uint32_t)i);
    if (src->dra_inv) {
        st->dra_cls = src->dra_cls;
        st->dra_inv = src->dra_inv;
        st->dra_borrowed = true;
        if (fatia_dra_state_init(&st->dra_st, st->dra_inv) < 0)
            goto fail;
        st->dra_map_gen = UINT64_MAX;
        if (fatia_pl_dra_map(st) < 0)
            goto fail;
    }
    *ret = st;
    return 0;
fail:
    fatia_place_state_free(st);
    return -ENOMEM;
}

int fatia_pl_state_twin(struct fatia_place_state *st, struct fatia_place_state **ret)
{
    int r;

    if (st->twin && st->twin_gen == st->layout_gen && st->twin->n_bound == 0) {
        *ret = st->twin;
        return 0;
    }
    fatia_place_state_free(st->twin);
    st->twin = NULL;
    if ((r = state_copy_empty(st, &st->twin)) < 0)
        return r;
    st->twin_gen = st->layout_gen;
    *ret = st->twin;
    return 0;
}

/* ---- MIG layout changes ---- */

int fatia_pl_gpu_set_layout(struct fatia_place_state *st, struct pl_gpu *g,
                            const struct fatia_mig_layout *layout)
{
    struct pl_slice *ns;
    int32_t *remap;
    uint16_t n = 0;
    int r;

    /* every instance that goes must be free */
    for (uint16_t i = 0; i < g->n_slices; i++) {
        const struct pl_slice *s = &g->slices[i];
        bool kept = false;
        if (s->mig == FATIA_NO_MIG)
            return -EINVAL;
        for (unsigned j = 0; j < layout->n; j++)
            kept |= layout->v[j].profile == g->layout.v[s->mig].profile &&
                    layout->v[j].start == g->layout.v[s->mig].start;
        if (!kept && s->owner != PL_NO_OWNER)
            return -EBUSY;
    }
    ns = layout->n ? fatia_calloc(layout->n, sizeof(*ns)) : NULL;
    remap = g->n_slices ? fatia_calloc(g->n_slices, sizeof(*remap)) : NULL;
    if ((layout->n && !ns) || (g->n_slices && !remap)) {
        fatia_free(ns);
        fatia_free(remap);
        return -ENOMEM;
    }
    for (unsigned j = 0; j < layout->n; j++) {
        struct pl_slice *s = &ns[n++];
        char res[96];
        fatia_mig_resource_name(layout->v[j].profile->name, res, sizeof(res));
        if ((r = fatia_pl_res_intern(st->res, res, PL_RES_DEVICE, &s->res)) < 0) {
            fatia_free(ns);
            fatia_free(remap);
            return r;
        }
        s->kind = FATIA_SLICE_MIG;
        s->exists = 1;
        s->mig = (uint8_t)j;
        s->memory = layout->v[j].profile->memory_bytes;
        s->owner = PL_NO_OWNER;
        s->dra = -1;
        s->weight = (uint16_t)((uint32_t)layout->v[j].profile->memory_slices * 1000u /
                               g->model->mig->memory_slices);
    }
    for (uint16_t i = 0; i < g->n_slices; i++) {
        const struct pl_slice *s = &g->slices[i];
        remap[i] = -1;
        for (unsigned j = 0; j < layout->n; j++)
            if (layout->v[j].profile == g->layout.v[s->mig].profile &&
                layout->v[j].start == g->layout.v[s->mig].start) {
                remap[i] = (int32_t)j;
                ns[j].owner = s->owner;
            }
    }
    /* bindings that hold kept instances follow their new index */
    for (uint16_t i = 0; i < g->n_slices; i++) {
        int32_t o = g->slices[i].owner;
        if (o == PL_NO_OWNER || o == INT32_MAX)
            continue;
        struct pl_bind *b = &st->binds.v[o];
        for (size_t k = 0; k < b->n_items; k++)
            if (&st->gpus[b->items[k].gpu] == g && b->items[k].slice == i)
                b->items[k].slice = (uint16_t)(remap[i] | 0x8000); /* mark: remapped */
    }
    for (size_t bi = 0; bi < st->binds.n; bi++)
        for (size_t k = 0; st->binds.v[bi].key && k < st->binds.v[bi].n_items; k++) {
            struct pl_item *it = &st->binds.v[bi].items[k];
            if (it->slice != FATIA_PLACE_FRACTION && (it->slice & 0x8000))
                it->slice &= 0x7fff;
        }
    fatia_free(remap);
    fatia_free(g->slices);
    g->slices = ns;
    g->n_slices = n;
    g->layout = *layout;
    g->mig_enabled = true;
    fatia_pl_node_changed(st, g->node);
    st->nodes[g->node].cls = fatia_pl_node_class(st, &st->nodes[g->node]);
    fatia_pl_node_summary(st, g->node);
    st->layout_gen++;
    return 0;
}

int fatia_place_mig_apply(struct fatia_place_state *st, const struct fatia_place_mig_change *ch)
{
    struct pl_gpu *g;
    char why[160];

    if (ch->gpu >= st->n_gpus)
        return -EINVAL;
    g = &st->gpus[ch->gpu];
    if (!g->mig_dynamic || !g->model->mig ||
        fatia_mig_layout_check(g->model->mig, g->model->product, &ch->layout, why, sizeof(why)) < 0)
        return -EINVAL;
    return fatia_pl_gpu_set_layout(st, g, &ch->layout);
}

/* ---- invariants ---- */

int fatia_place_check(const struct fatia_place_state *st, char *why, size_t why_n)
{
    struct pl_gpu *exp = st->n_gpus ? fatia_calloc(st->n_gpus, sizeof(*exp)) : NULL;
    int64_t **used = st->n_nodes ? fatia_calloc(st->n_nodes, sizeof(*used)) : NULL;
    int r = 0;

    if ((st->n_gpus && !exp) || (st->n_nodes && !used)) {
        fatia_free(exp);
        fatia_free(used);
        return -ENOMEM;
    }
    for (size_t n = 0; n < st->n_nodes; n++) {
        used[n] = fatia_calloc(st->nodes[n].n_scalar + 1, sizeof(**used));
        if (!used[n]) {
            r = -ENOMEM;
            goto out;
        }
    }
    for (size_t g = 0; g < st->n_gpus; g++) {
        exp[g].milli_free = 1000;
        exp[g].mem_free = st->gpus[g].mem_total;
    }
    for (size_t b = 0; b < st->binds.n; b++) {
        const struct pl_bind *bd = &st->binds.v[b];
        if (!bd->key)
            continue;
        if ((int32_t)(intptr_t)fatia_strmap_get(&st->bind_index, bd->key) != (int32_t)b) {
            snprintf(why, why_n, "binding %s: not indexed", bd->key);
            r = -EFAULT;
            goto out;
        }
        for (size_t i = 0; i < bd->n_scalars; i++) {
            const struct pl_res *res = fatia_pl_res_get(st, bd->scalars[i].res);
            if (res->slot >= 0 && (size_t)res->slot < st->nodes[bd->node].n_scalar)
                used[bd->node][res->slot] += bd->scalars[i].milli;
        }
        for (size_t i = 0; i < bd->n_items; i++) {
            const struct pl_item *it = &bd->items[i];
            struct pl_gpu *e = &exp[it->gpu];
            bool first = true;
            for (size_t j = 0; j < i; j++)
                first &= bd->items[j].gpu != it->gpu;
            if (first)
                e->users++;
            if (st->gpus[it->gpu].node != bd->node) {
                snprintf(why, why_n, "binding %s: GPU %u is not on its node", bd->key, it->gpu);
                r = -EFAULT;
                goto out;
            }
            if (it->slice == FATIA_PLACE_FRACTION) {
                if (it->milli >= 1000) {
                    e->milli_free -= 1000;
                    e->mem_free = 0;
                } else {
                    e->milli_free -= it->milli;
                    e->mem_free -= it->mem_charge;
                    e->shares++;
                    if ((e->fmask[it->fraction / 64] >> (it->fraction % 64)) & 1) {
                        snprintf(why, why_n, "binding %s: fraction id %u used twice", bd->key,
                                 it->fraction);
                        r = -EFAULT;
                        goto out;
                    }
                    e->fmask[it->fraction / 64] |= UINT64_C(1) << (it->fraction % 64);
                }
            } else {
                if (it->slice >= st->gpus[it->gpu].n_slices ||
                    st->gpus[it->gpu].slices[it->slice].owner != (int32_t)b) {
                    snprintf(why, why_n, "binding %s: slice %u of GPU %u not owned by it", bd->key,
                             it->slice, it->gpu);
                    r = -EFAULT;
                    goto out;
                }
                e->n_used++;
            }
        }
    }
    for (size_t g = 0; g < st->n_gpus; g++) {
        const struct pl_gpu *a = &st->gpus[g];
        const struct pl_gpu *e = &exp[g];
        uint16_t owned = 0;
        for (uint16_t s = 0; s < a->n_slices; s++)
            if (a->slices[s].owner != PL_NO_OWNER) {
                int32_t o = a->slices[s].owner;
                owned++;
                if (o < 0 || (size_t)o >= st->binds.n || !st->binds.v[o].key) {
                    snprintf(why, why_n, "GPU %zu slice %u: owner %d is no binding", g, s, o);
                    r = -EFAULT;
                    goto out;
                }
            }
        if (a->users != e->users || a->n_used != e->n_used || owned != e->n_used ||
            (a->fractional &&
             (a->milli_free != e->milli_free || a->mem_free != e->mem_free ||
              a->shares != e->shares || memcmp(a->fmask, e->fmask, sizeof(a->fmask))))) {
            snprintf(why, why_n,
                     "GPU %zu: users %u/%u used %u/%u milli_free %d/%d mem_free %" PRIu64
                     "/%" PRIu64 " shares %u/%u",
                     g, a->users, e->users, a->n_used, e->n_used, a->milli_free, e->milli_free,
                     a->mem_free, e->mem_free, a->shares, e->shares);
            r = -EFAULT;
            goto out;
        }
    }
    for (size_t n = 0; n < st->n_nodes; n++) {
        const struct pl_node *nd = &st->nodes[n];
        uint32_t touched = 0;
        for (uint32_t g = 0; g < nd->n_gpus; g++)
            touched += st->gpus[nd->first_gpu + g].users > 0;
        if (touched != nd->touched) {
            snprintf(why, why_n, "node %s: touched %u, GPUs in use %u", nd->name, nd->touched,
                     touched);
            r = -EFAULT;
            goto out;
        }
        for (size_t k = 0; k < nd->n_scalar; k++)
            if (nd->used[k] != used[n][k]) {
                snprintf(why, why_n, "node %s: scalar slot %zu used %" PRId64 ", bindings %" PRId64,
                         nd->name, k, nd->used[k], used[n][k]);
                r = -EFAULT;
                goto out;
            }
    }
out:
    for (size_t n = 0; used && n < st->n_nodes; n++)
        fatia_free(used[n]);
    fatia_free(used);
    fatia_free(exp);
    return r;
}

/* ---- queries ---- */

void fatia_place_state_stats(const struct fatia_place_state *st, struct fatia_place_stats *ret)
{
    struct fatia_place_stats s = {0};

    s.nodes = (uint32_t)st->n_nodes;
    s.gpus = (uint32_t)st->n_gpus;
    for (size_t i = 0; i < st->n_gpus; i++) {
        const struct pl_gpu *g = &st->gpus[i];
        uint32_t free = fatia_pl_gpu_free_milli(g);
        s.gpu_milli_total += 1000;
        s.gpu_milli_allocated += 1000 - free;
        s.gpus_untouched += g->users == 0;
        s.gpus_full += free == 0;
    }
    s.pods = (uint32_t)st->n_bound;
    *ret = s;
}

size_t fatia_place_gpu_count(const struct fatia_place_state *st)
{
    return st->n_gpus;
}

uint32_t fatia_place_gpu_users(const struct fatia_place_state *st, size_t g)
{
    return g < st->n_gpus ? st->gpus[g].users : 0;
}

const char *fatia_place_gpu_strategy(const struct fatia_place_state *st, size_t g)
{
    static const char *const names[] = {"whole", "timeslice", "mps", "mig", "fraction"};
    return g < st->n_gpus ? names[st->gpus[g].strategy] : "?";
}

uint32_t fatia_place_gpu_node(const struct fatia_place_state *st, size_t g)
{
    return g < st->n_gpus ? st->gpus[g].node : 0;
}

uint32_t fatia_place_gpu_free_milli(const struct fatia_place_state *st, size_t g)
{
    return g < st->n_gpus ? fatia_pl_gpu_free_milli(&st->gpus[g]) : 0;
}

double fatia_place_device_sm_share(const struct fatia_place_state *st,
                                   const struct fatia_place_device *d)
{
    const struct pl_gpu *g;
    const struct pl_slice *s;
    const struct fatia_slice *ps;

    if (d->gpu >= st->n_gpus)
        return 1;
    g = &st->gpus[d->gpu];
    if (d->slice == FATIA_PLACE_FRACTION || d->slice >= g->n_slices)
        return 1;
    s = &g->slices[d->slice];
    if (s->mig != FATIA_NO_MIG && s->mig < g->layout.n && g->model->multiprocessors)
        return (double)g->layout.v[s->mig].profile->multiprocessors /
               (double)g->model->multiprocessors;
    if (s->kind == FATIA_SLICE_MPS) {
        /* the plan's slice carries the thread percentage */
        const struct fatia_plan_node *pn = &st->plan->nodes[g->node];
        const struct fatia_plan_gpu *pg = &pn->gpus[g->index < pn->inv->n_gpus ? g->index : 0];
        if (s->replica < pg->n_slices) {
            ps = &st->plan->slices[pg->first_slice + s->replica];
            return ps->thread_percentage / 100.0;
        }
    }
    return 1;
}

size_t fatia_place_node_count(const struct fatia_place_state *st)
{
    return st->n_nodes;
}

const char *fatia_place_node_name(const struct fatia_place_state *st, size_t node)
{
    return node < st->n_nodes ? st->nodes[node].name : NULL;
}

/* ---- rendering ---- */

int fatia_place_device_id(const struct fatia_place_state *st, const struct fatia_place_device *d,
                          char *buf, size_t n)
{
    const struct pl_gpu *g;
    const struct pl_slice *s;

    if (d->gpu >= st->n_gpus)
        return snprintf(buf, n, "?");
    g = &st->gpus[d->gpu];
    if (d->slice == FATIA_PLACE_FRACTION) {
        if (d->milli >= 1000)
            return snprintf(buf, n, "gpu-%" PRIu32, g->minor);
        return fatia_plan_fraction_id(g->minor, d->fraction, buf, n);
    }
    if (d->slice >= g->n_slices)
        return snprintf(buf, n, "?");
    s = &g->slices[d->slice];
    return fatia_supply_slice_id(
        g->minor, s->mig != FATIA_NO_MIG && s->mig < g->layout.n ? &g->layout.v[s->mig] : NULL,
        (enum fatia_slice_kind)s->kind, s->replica, buf, n);
}

json_t *fatia_place_pod_result_json(const struct fatia_place_state *st,
                                    const struct fatia_place_pod_result *pr,
                                    const char *const *container_names, size_t n_names)
{
    json_t *devs = json_array(), *j;

    if (!devs)
        return NULL;
    for (size_t i = 0; i < pr->n_devices; i++) {
        const struct fatia_place_device *d = &pr->devices[i];
        const struct pl_gpu *g = &st->gpus[d->gpu];
        char idb[128];
        const char *id = d->id, *kind, *res = d->resource;
        json_t *dj;
        if (!*id) {
            fatia_place_device_id(st, d, idb, sizeof(idb));
            id = idb;
        }
        if (d->slice == FATIA_PLACE_FRACTION) {
            kind = "fraction";
            res = "fatia.dev/gpu-milli";
        } else if (*res) {
            kind = fatia_slice_kind_name(d->kind);
        } else {
            kind = fatia_slice_kind_name(g->slices[d->slice].kind);
            res = fatia_pl_res_get(st, g->slices[d->slice].res)->name;
        }
        dj = json_pack("{s:s,s:s,s:s,s:I,s:I}", "id", id, "kind", kind, "resource", res, "gpu",
                       (json_int_t)g->index, "memoryBytes", (json_int_t)d->memory);
        if (!dj)
            goto fail;
        if (d->container < n_names && container_names && container_names[d->container])
            json_object_set_new(dj, "container", json_string(container_names[d->container]));
        else
            json_object_set_new(dj, "container", json_integer(d->container));
        if (d->slice == FATIA_PLACE_FRACTION)
            json_object_set_new(dj, "gpuMilli", json_integer(d->milli));
        if (json_array_append_new(devs, dj) < 0)
            goto fail;
    }
    j = json_pack("{s:s,s:o}", "node", st->nodes[pr->node].name, "devices", devs);
    return j;
fail:
    json_decref(devs);
    return NULL;
}

json_t *fatia_place_mig_change_json(const struct fatia_place_state *st,
                                    const struct fatia_place_mig_change *ch)
{
    const struct pl_gpu *g = &st->gpus[ch->gpu];
    json_t *lay = json_array();
    char buf[64];

    if (!lay)
        return NULL;
    for (unsigned i = 0; i < ch->layout.n; i++) {
        snprintf(buf, sizeof(buf), "%s@%u", ch->layout.v[i].profile->name, ch->layout.v[i].start);
        json_array_append_new(lay, json_string(buf));
    }
    return json_pack("{s:s,s:I,s:o}", "node", st->nodes[g->node].name, "gpu", (json_int_t)g->index,
                     "layout", lay);
}
