/*
 * demand/place_frag.c: the request mix and the fragmentation measure of the FGD paper (Weng et
 * al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient
 * Descent", USENIX ATC '23, §3-4), generalised from fraction pools to every slice kind.
 *
 * The measure. A request type m is what a pod asks for: its CPU and memory, and its GPU part: a
 * fraction of d milli-GPUs (one unit), k whole GPUs of a fraction pool (k units of a fully free
 * GPU), or c slices of a device resource (c units, a GPU giving as many units as it has free
 * slices of that resource). For a node n with free GPU capacity R_n (milli-GPUs, place.h) the
 * fragmentation n shows to m is
 *
 *     F_n(m) = R_n                                     if m cannot run on n at all: the node's
 *                                                      filters or taints turn it away, its free
 *                                                      CPU or memory is short, or its GPUs give
 *                                                      fewer than m's units;
 *            = sum of the free capacity of the GPUs    otherwise: what is left on GPUs that cannot
 *              that give m no unit                     hold one unit of m is stranded for m,
 *
 * and against the mix M, F_n(M) = sum over m of p_m F_n(m). Placing a pod changes only its node's
 * F_n; the fragmentation policy (place.c) puts each pod where F_n(M) grows least, choosing the GPU
 * the same way. For fraction pools this is exactly the paper's measure (its Q1/Q2/Q4/no-access
 * cases count everything, Q3 counts the GPUs with less left than the fraction).
 *
 * The mix. Types are recorded as pods arrive (fatia_place_mix_add); the measure uses the "typical"
 * ones, as the authors' artifact does: the most popular types, added ten at a time, until they
 * cover at least coverage_pct of the pods seen (60 by default, their DefaultTypicalPodPopularity-
 * Threshold), with probabilities renormalised over that set. CPU-only pods are not recorded: for
 * them F_n(m) is R_n on every node, a constant that changes no decision.
 *
 * Cost. Per node and typical type the cache keeps the count of usable units and the free capacity
 * of unusable GPUs; it is recomputed when the node changes (its gen) or the typical set changes.
 * F_n(M) is then O(types), and the effect of changing one GPU of a fraction pool is O(types)
 * (pl_frag_node_one), which is what makes the policy fast enough for the Alibaba trace (< 5 s for
 * 8,152 pods on 6,212 GPUs).
 *
 * Worked example (tests/unit/test_place.c): a node with two fraction-pool GPUs left with 600 and
 * 300 milli-GPUs and 8 free CPUs, against a mix of 1/2 "500 milli-GPUs, 4 CPUs" and 1/2 "one whole
 * GPU, 4 CPUs": the first type fits on GPU 0 only, so GPU 1's 300 are stranded: F = 300; the second
 * fits on neither (no fully free GPU), so all 900 are: F = 900; F_n(M) = 0.5 x 300 + 0.5 x 900 =
 * 600.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "demand/place_internal.h"

enum mtype_kind {
    MT_FRAC,  /* one fraction of `milli` (and `memory`) */
    MT_WHOLE, /* `units` whole GPUs of a fraction pool */
    MT_DEV,   /* `units` slices of device resource `res` */
};

struct mtype {
    uint64_t key;
    uint64_t count;
    uint32_t order; /* first seen */
    int64_t cpu, mem;
    uint8_t kind;
    int32_t milli;
    uint64_t memory;
    uint32_t units;
    uint16_t res;
    uint8_t *access;   /* per node: the static filters pass */
    int32_t *usable;   /* per node, cached */
    int64_t *unusable; /* per node, cached */
};

struct fatia_place_mix {
    const struct fatia_place_state *st;
    unsigned coverage;
    struct mtype *t;
    size_t n, cap;
    uint64_t total;
    /* the typical set */
    uint32_t *typ;
    double *p;
    size_t n_typ;
    bool dirty;
    int32_t *s_usable; /* scratch, per type */
    int64_t *s_unusable;
    /* per node cache */
    uint64_t *gen; /* node gen at caching; UINT64_MAX = invalid */
    int64_t *free_total, *cpu_free, *mem_free;
};

int fatia_place_mix_new(const struct fatia_place_state *st, unsigned coverage_pct,
                        struct fatia_place_mix **ret)
{
    struct fatia_place_mix *m = fatia_calloc(1, sizeof(*m));
    size_t n = st->n_nodes ? st->n_nodes : 1;

    if (!m)
        return -ENOMEM;
    m->st = st;
    m->coverage = coverage_pct ? FATIA_MIN(coverage_pct, 100u) : 60u;
    m->gen = fatia_calloc(n, sizeof(*m->gen));
    m->free_total = fatia_calloc(n, sizeof(*m->free_total));
    m->cpu_free = fatia_calloc(n, sizeof(*m->cpu_free));
    m->mem_free = fatia_calloc(n, sizeof(*m->mem_free));
    if (!m->gen || !m->free_total || !m->cpu_free || !m->mem_free) {
        fatia_place_mix_free(m);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        m->gen[i] = UINT64_MAX;
    *ret = m;
    return 0;
}

void fatia_place_mix_free(struct fatia_place_mix *mix)
{
    if (!mix)
        return;
    for (size_t i = 0; i < mix->n; i++) {
        fatia_free(mix->t[i].access);
        fatia_free(mix->t[i].usable);
        fatia_free(mix->t[i].unusable);
    }
    fatia_free(mix->t);
    fatia_free(mix->typ);
    fatia_free(mix->p);
    fatia_free(mix->s_usable);
    fatia_free(mix->s_unusable);
    fatia_free(mix->gen);
    fatia_free(mix->free_total);
    fatia_free(mix->cpu_free);
    fatia_free(mix->mem_free);
    fatia_free(mix);
}

static int64_t pod_scalar(const struct fatia_place_pod *pod, uint16_t res)
{
    for (size_t i = 0; i < pod->n_scalars; i++)
        if (pod->scalars[i].res == res)
            return pod->scalars[i].milli;
    return 0;
}

int fatia_place_mix_add(struct fatia_place_mix *mix, const struct fatia_place_pod *pod)
{
    const struct fatia_place_state *st = mix->st;
    struct mtype *t;
    size_t nn = st->n_nodes ? st->n_nodes : 1;

    if (fatia_place_pod_is_cpu_only(pod))
        return 0;
    for (size_t i = 0; i < mix->n; i++)
        if (mix->t[i].key == pod->shape_hash) {
            mix->t[i].count++;
            mix->total++;
            mix->dirty = true;
            return 0;
        }
    if (mix->n == mix->cap) {
        size_t nc = mix->cap ? mix->cap * 2 : 16;
        struct mtype *nt = fatia_reallocarray(mix->t, nc, sizeof(*nt));
        uint32_t *ny = NULL;
        double *np = NULL;
        if (!nt)
            return -ENOMEM;
        mix->t = nt;
        ny = fatia_reallocarray(mix->typ, nc, sizeof(*ny));
        if (!ny)
            return -ENOMEM;
        mix->typ = ny;
        np = fatia_reallocarray(mix->p, nc, sizeof(*np));
        if (!np)
            return -ENOMEM;
        mix->p = np;
        int32_t *su = fatia_reallocarray(mix->s_usable, nc, sizeof(*su));
        if (!su)
            return -ENOMEM;
        mix->s_usable = su;
        int64_t *sn = fatia_reallocarray(mix->s_unusable, nc, sizeof(*sn));
        if (!sn)
            return -ENOMEM;
        mix->s_unusable = sn;
        mix->cap = nc;
    }
    t = &mix->t[mix->n];
    memset(t, 0, sizeof(*t));
    t->access = fatia_calloc(nn, 1);
    t->usable = fatia_calloc(nn, sizeof(*t->usable));
    t->unusable = fatia_calloc(nn, sizeof(*t->unusable));
    if (!t->access || !t->usable || !t->unusable) {
        fatia_free(t->access);
        fatia_free(t->usable);
        fatia_free(t->unusable);
        return -ENOMEM;
    }
    t->key = pod->shape_hash;
    t->count = 1;
    t->order = (uint32_t)mix->n;
    t->cpu = pod_scalar(pod, st->r_cpu);
    t->mem = pod_scalar(pod, st->r_memory);
    if (pod->n_fracs) {
        const struct pl_frac *f = &pod->fracs[0];
        t->kind = f->milli >= 1000 ? MT_WHOLE : MT_FRAC;
        t->milli = f->milli;
        t->memory = f->memory;
        t->units = f->milli >= 1000 ? (uint32_t)(f->milli / 1000) : 1;
    } else {
        t->kind = MT_DEV;
        t->res = pod->reqs[0].res;
        t->units = pod->reqs[0].count;
    }
    for (size_t n = 0; n < st->n_nodes; n++)
        t->access[n] = pl_node_mismatch(st, pod, &st->nodes[n]) == NULL;
    mix->n++;
    mix->total++;
    mix->dirty = true;
    return 0;
}

size_t fatia_place_mix_types(const struct fatia_place_mix *mix)
{
    return mix->n;
}

static uint32_t units(const struct pl_gpu *g, const struct mtype *t)
{
    switch (t->kind) {
    case MT_FRAC: {
        struct pl_frac f = {0, t->milli, t->memory};
        return pl_frac_fits(g, &f) ? 1 : 0;
    }
    case MT_WHOLE:
        return g->fractional && g->users == 0 && g->shares == 0 ? 1 : 0;
    default: {
        uint32_t u = 0;
        for (uint16_t i = 0; i < g->n_slices; i++)
            u += g->slices[i].res == t->res && g->slices[i].exists &&
                 g->slices[i].owner == PL_NO_OWNER;
        return u;
    }
    }
}

/* Orders types by count (ties: first seen). */
static int cmp_typ(const void *a, const void *b, void *arg)
{
    const struct fatia_place_mix *mix = arg;
    const struct mtype *x = &mix->t[*(const uint32_t *)a];
    const struct mtype *y = &mix->t[*(const uint32_t *)b];
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

static void node_cache(struct fatia_place_mix *mix, uint32_t n)
{
    const struct fatia_place_state *st = mix->st;
    const struct pl_node *nd = &st->nodes[n];
    int64_t total = 0;
    int32_t cpu = st->res->v.v[st->r_cpu].slot, mem = st->res->v.v[st->r_memory].slot;

    for (uint32_t g = 0; g < nd->n_gpus; g++)
        total += pl_gpu_free_milli(&st->gpus[nd->first_gpu + g]);
    mix->free_total[n] = total;
    mix->cpu_free[n] = (size_t)cpu < nd->n_scalar ? nd->alloc[cpu] - nd->used[cpu] : 0;
    mix->mem_free[n] = (size_t)mem < nd->n_scalar ? nd->alloc[mem] - nd->used[mem] : 0;
    for (size_t k = 0; k < mix->n_typ; k++) {
        struct mtype *t = &mix->t[mix->typ[k]];
        int32_t usable = 0;
        int64_t unusable = 0;
        for (uint32_t g = 0; g < nd->n_gpus; g++) {
            const struct pl_gpu *gp = &st->gpus[nd->first_gpu + g];
            uint32_t u = units(gp, t);
            if (u)
                usable += (int32_t)u;
            else
                unusable += pl_gpu_free_milli(gp);
        }
        t->usable[n] = usable;
        t->unusable[n] = unusable;
    }
    mix->gen[n] = nd->gen;
}

int pl_mix_prepare(struct fatia_place_mix *mix)
{
    size_t old_n = mix->n_typ;
    uint32_t old[64];
    bool same;
    uint64_t cum = 0, want;

    if (!mix->dirty)
        return 0;
    memcpy(old, mix->typ, FATIA_MIN(old_n, FATIA_ARRAY_SIZE(old)) * sizeof(*old));
    for (size_t i = 0; i < mix->n; i++)
        mix->typ[i] = (uint32_t)i;
    qsort_r(mix->typ, mix->n, sizeof(*mix->typ), cmp_typ, mix);
    want = (mix->total * mix->coverage + 99) / 100;
    mix->n_typ = 0;
    while (mix->n_typ < mix->n && (cum < want || mix->n_typ == 0)) {
        size_t step = FATIA_MIN(mix->n_typ + 10, mix->n);
        for (; mix->n_typ < step; mix->n_typ++)
            cum += mix->t[mix->typ[mix->n_typ]].count;
    }
    for (size_t k = 0; k < mix->n_typ; k++)
        mix->p[k] = cum ? (double)mix->t[mix->typ[k]].count / (double)cum : 0;
    /* a different set (or order) of types: every node's cache is stale */
    same = old_n == mix->n_typ && old_n <= FATIA_ARRAY_SIZE(old) &&
           !memcmp(old, mix->typ, old_n * sizeof(*old));
    if (!same)
        for (size_t n = 0; n < mix->st->n_nodes; n++)
            mix->gen[n] = UINT64_MAX;
    mix->dirty = false;
    return 0;
}

size_t fatia_place_mix_typical(struct fatia_place_mix *mix)
{
    pl_mix_prepare(mix);
    return mix->n_typ;
}

static double combine(const struct fatia_place_mix *mix, uint32_t n, int64_t total, int64_t cpu,
                      int64_t mem, const int32_t *usable, const int64_t *unusable)
{
    double f = 0;

    for (size_t k = 0; k < mix->n_typ; k++) {
        const struct mtype *t = &mix->t[mix->typ[k]];
        bool host =
            t->access[n] && t->cpu <= cpu && t->mem <= mem && usable[k] >= (int32_t)t->units;
        f += mix->p[k] * (double)(host ? unusable[k] : total);
    }
    return f;
}

double pl_frag_node(struct fatia_place_mix *mix, uint32_t n)
{
    const struct fatia_place_state *st = mix->st;
    double f = 0;

    if (mix->gen[n] != st->nodes[n].gen)
        node_cache(mix, n);
    if (!mix->free_total[n])
        return 0;
    for (size_t k = 0; k < mix->n_typ; k++) {
        const struct mtype *t = &mix->t[mix->typ[k]];
        bool host = t->access[n] && t->cpu <= mix->cpu_free[n] && t->mem <= mix->mem_free[n] &&
                    t->usable[n] >= (int32_t)t->units;
        f += mix->p[k] * (double)(host ? t->unusable[n] : mix->free_total[n]);
    }
    return f;
}

double pl_frag_node_now(struct fatia_place_mix *mix, uint32_t n)
{
    const struct fatia_place_state *st = mix->st;
    const struct pl_node *nd = &st->nodes[n];
    int32_t *usable = mix->s_usable;
    int64_t *unusable = mix->s_unusable, total = 0, cpu, mem;
    int32_t cs = st->res->v.v[st->r_cpu].slot, ms = st->res->v.v[st->r_memory].slot;
    size_t nt = mix->n_typ;

    for (uint32_t g = 0; g < nd->n_gpus; g++)
        total += pl_gpu_free_milli(&st->gpus[nd->first_gpu + g]);
    if (!total)
        return 0;
    cpu = (size_t)cs < nd->n_scalar ? nd->alloc[cs] - nd->used[cs] : 0;
    mem = (size_t)ms < nd->n_scalar ? nd->alloc[ms] - nd->used[ms] : 0;
    for (size_t k = 0; k < nt; k++) {
        const struct mtype *t = &mix->t[mix->typ[k]];
        usable[k] = 0;
        unusable[k] = 0;
        for (uint32_t g = 0; g < nd->n_gpus; g++) {
            const struct pl_gpu *gp = &st->gpus[nd->first_gpu + g];
            uint32_t u = units(gp, t);
            if (u)
                usable[k] += (int32_t)u;
            else
                unusable[k] += pl_gpu_free_milli(gp);
        }
    }
    return combine(mix, n, total, cpu, mem, usable, unusable);
}

double pl_frag_node_one(struct fatia_place_mix *mix, uint32_t n, uint32_t g,
                        const struct pl_gpu *before, int64_t d_cpu, int64_t d_mem)
{
    const struct pl_gpu *now = &mix->st->gpus[g];
    int64_t a = pl_gpu_free_milli(before), a2 = pl_gpu_free_milli(now);
    int64_t total, cpu, mem;
    double f = 0;

    if (mix->gen[n] != mix->st->nodes[n].gen)
        node_cache(mix, n);
    total = mix->free_total[n] - a + a2;
    if (!total)
        return 0;
    cpu = mix->cpu_free[n] - d_cpu;
    mem = mix->mem_free[n] - d_mem;
    for (size_t k = 0; k < mix->n_typ; k++) {
        const struct mtype *t = &mix->t[mix->typ[k]];
        uint32_t ub = units(before, t), ua = units(now, t);
        int64_t usable = t->usable[n] - (int64_t)ub + (int64_t)ua;
        int64_t unusable = t->unusable[n] - (ub ? 0 : a) + (ua ? 0 : a2);
        bool host = t->access[n] && t->cpu <= cpu && t->mem <= mem && usable >= (int64_t)t->units;
        f += mix->p[k] * (double)(host ? unusable : total);
    }
    return f;
}

double fatia_place_frag_node(struct fatia_place_mix *mix, size_t node)
{
    if (pl_mix_prepare(mix) < 0 || node >= mix->st->n_nodes)
        return 0;
    return pl_frag_node(mix, (uint32_t)node);
}

double fatia_place_frag_total(struct fatia_place_mix *mix)
{
    double f = 0;

    if (pl_mix_prepare(mix) < 0)
        return 0;
    for (size_t n = 0; n < mix->st->n_nodes; n++)
        f += pl_frag_node(mix, (uint32_t)n);
    return f;
}
