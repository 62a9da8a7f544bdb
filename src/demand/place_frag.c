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
 * The mix. Types are recorded as pods arrive (fatia_place_mix_add); the measure uses the most
 * popular ones, taken one at a time until they at least coverage_pct of the pods seen, with probabilities renormalised over that set.
 * CPU-only pods are not recorded: for them F_n(m) is R_n on every node, which adds p_m x (GPUs the
 * pod takes) to every candidate's growth alike and changes no exact decision. The FGD artifact
 * records them (FATIA_PLACE_MIX_CPU, its isInvolvedCpuPods): they then take part of the typical
 * coverage (fewer GPU types are typical) and shift the growth that its integer sigmoid score
 * rounds (place.c, FATIA_PLACE_FGD_SCORE); both change decisions, so both are kept, switchable.
 *
 * The measure uses every type seen (coverage 100, the default): the mix is then the paper's M,
 * the distribution of the workload's requests; the artifact's "typical pods" cut (the most popular
 * types, one at a time, until they cover 95 % of the pods in its experiment scripts, 60 % in its
 * Go default) is available as coverage_pct, as an approximation. Like the paper's, the measure
 * looks at CPU and GPUs only (a type's memory is checked by placement's filter, not here).
 *
 * Cost. Types that ask the same of GPUs (kind, milli, memory, units, resource, constraints) form
 * a group; they differ in CPU only. Per node and group the cache keeps the usable units and the
 * free capacity of unusable GPUs (recomputed when the node changes, its gen; one block per node,
 * every group's columns side by side, so that measuring a node reads one block); per group the
 * typical members are sorted by CPU with prefix sums of their probabilities, so the members a
 * node has CPU for are a binary search away. F_n(M) is O(groups x log members) (and kept per node
 * until the node or the mix changes: placement asks for it once per node and pod), and so is the
 * effect of changing one GPU of a fraction pool (fatia_pl_frag_node_one), or k of them from a
 * snapshot (fatia_pl_frag_node_many, O(groups x k), GPUs changed alike counted once: a whole-GPU
 * request's GPUs): the Alibaba trace has 24 groups for 126 types. A group the node's filters turn
 * away is all of R_n without reading a GPU.
 *
 * Scarcity (fatia's, fatia_pl_mix_scarcity, for FATIA_PLACE_FGD_SCARCE). FGD's measure sees a
 * GPU model constraint only through the capacity a node strands for the types it turns away, so
 * a pod that may run anywhere goes to the model fewest choosy pods want in absolute terms, even
 * when that model has still fewer GPUs for them. The scarcity of a node class c (pl_node.cls:
 * equal labels, taints, GPUs) is sum over the typical groups g that some class turns away and c
 * admits of p_g x d_g / F(g), d_g the GPU demand of one pod of g (milli), F(g) the free GPU
 * capacity of every class admitting g: g's demand spread over its classes in proportion to what
 * they have free, per free milli-GPU; scaled by (all free capacity) / (sum of p_g x d_g) so that
 * 1 is a class free exactly in proportion to its choosy demand. The classes' free capacity is kept
 * up to date from the state's log of changed nodes (place_internal.h, fatia_pl_node_changed), so
 * a pod costs O(nodes changed since the last pod + choosy groups x the classes each admits), and
 * nothing when no node changed; nothing at all when no typical group is choosy.
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

#define NO_GROUP UINT32_MAX

enum mtype_kind {
    MT_FRAC,  /* one fraction of `milli` (and `memory`) */
    MT_WHOLE, /* `units` whole GPUs of a fraction pool */
    MT_DEV,   /* `units` slices of device resource `res` */
};

struct mtype {
    uint64_t key;
    uint64_t count;
    uint32_t order; /* first seen */
    uint32_t group; /* NO_GROUP: a CPU-only type (FATIA_PLACE_MIX_CPU) */
    int64_t cpu;
};

struct mgroup {
    uint8_t kind;
    int32_t milli;
    uint64_t memory;
    uint32_t units;
    uint16_t res;
    uint64_t cons;    /* the constraints' hash */
    bool in_typ;      /* has typical members: its columns are kept current */
    bool constrained; /* scarcity: some node class turns it away */
    uint8_t *cls_ok;  /* scarcity: per node class, the static filters pass (NULL: not built) */
    uint32_t *ok_cls; /* scarcity: the classes with cls_ok, ascending */
    size_t n_ok;
    /* typical members by CPU: cpu[i] ascending, pcum[i] = sum of p of members 0..i */
    int64_t *cpu;
    double *pcum;
    size_t n_mem, cap_mem;
    double p; /* all typical members */
};

/* A group's columns for one node (fatia_place_mix.col). */
struct gcol {
    int64_t unusable; /* cached */
    int32_t usable;   /* cached */
    uint8_t access;   /* the static filters pass */
};

struct fatia_place_mix {
    const struct fatia_place_state *st;
    unsigned coverage;
    struct mtype *t;
    size_t n, cap;
    struct mgroup *g;
    size_t n_g, cap_g;
    /* per node, the groups' columns: col[n x col_stride + group], so that measuring a node reads
     * one block */
    struct gcol *col;
    size_t col_stride;
    uint64_t total;
    uint32_t *typ; /* types by popularity; the first n_typ are typical */
    size_t n_typ;
    bool dirty;
    unsigned flags; /* FATIA_PLACE_MIX_* */
    bool frozen;    /* fatia_place_mix_freeze */
    double p_cpu;   /* typical CPU-only types (FATIA_PLACE_MIX_CPU): each counts all of R_n */
    /* per node cache */
    uint64_t *gen; /* node gen at caching; UINT64_MAX = invalid */
    int64_t *free_total, *cpu_free;
    /* F_n(M) per node (fatia_pl_frag_node), valid while frag_gen == the node's gen and the mix was
     * not prepared again; UINT64_MAX = invalid */
    double *frag;
    uint64_t *frag_gen;
    /* scarcity (fatia_pl_mix_scarcity): node classes (pl_node.cls), built on first use */
    uint32_t *node_cls; /* per node: index into cls_key */
    uint64_t *cls_key;
    size_t n_cls;
    int64_t *cls_free;  /* per class: free GPU capacity, milli */
    double *cls_press;  /* per class: the pressure (the answer) */
    int64_t *node_free; /* per node: its free GPU capacity as counted in cls_free */
    uint64_t chg_seen;  /* the state's chg_seq when cls_free was last brought up to date */
    bool free_valid;    /* cls_free counts every node (else: rebuilt from every node) */
    bool press_valid;   /* cls_press is current for cls_free and the mix */
    bool scar_stale;    /* the mix was prepared (or groups added): choosy rebuilt */
    size_t scar_ng;     /* groups whose cls_ok is built */
    uint32_t *choosy;   /* the typical groups some class turns away, ascending */
    size_t n_choosy, cap_choosy;
};

int fatia_place_mix_new(const struct fatia_place_state *st, unsigned coverage_pct,
                        struct fatia_place_mix **ret)
{
    struct fatia_place_mix *m = fatia_calloc(1, sizeof(*m));
    size_t n = st->n_nodes ? st->n_nodes : 1;

    if (!m)
        return -ENOMEM;
    m->st = st;
    m->coverage = coverage_pct ? FATIA_MIN(coverage_pct, 100u) : 100u;
    m->gen = fatia_calloc(n, sizeof(*m->gen));
    m->free_total = fatia_calloc(n, sizeof(*m->free_total));
    m->cpu_free = fatia_calloc(n, sizeof(*m->cpu_free));
    m->frag = fatia_calloc(n, sizeof(*m->frag));
    m->frag_gen = fatia_calloc(n, sizeof(*m->frag_gen));
    if (!m->gen || !m->free_total || !m->cpu_free || !m->frag || !m->frag_gen) {
        fatia_place_mix_free(m);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        m->gen[i] = m->frag_gen[i] = UINT64_MAX;
    *ret = m;
    return 0;
}

void fatia_place_mix_free(struct fatia_place_mix *mix)
{
    if (!mix)
        return;
    for (size_t i = 0; i < mix->n_g; i++) {
        fatia_free(mix->g[i].cpu);
        fatia_free(mix->g[i].pcum);
        fatia_free(mix->g[i].cls_ok);
        fatia_free(mix->g[i].ok_cls);
    }
    fatia_free(mix->node_cls);
    fatia_free(mix->cls_key);
    fatia_free(mix->cls_free);
    fatia_free(mix->cls_press);
    fatia_free(mix->node_free);
    fatia_free(mix->choosy);
    fatia_free(mix->g);
    fatia_free(mix->col);
    fatia_free(mix->t);
    fatia_free(mix->typ);
    fatia_free(mix->gen);
    fatia_free(mix->free_total);
    fatia_free(mix->cpu_free);
    fatia_free(mix->frag);
    fatia_free(mix->frag_gen);
    fatia_free(mix);
}

static int64_t pod_scalar(const struct fatia_place_pod *pod, uint16_t res)
{
    for (size_t i = 0; i < pod->n_scalars; i++)
        if (pod->scalars[i].res == res)
            return pod->scalars[i].milli;
    return 0;
}

static uint32_t units(const struct pl_gpu *g, const struct mgroup *t)
{
    switch (t->kind) {
    case MT_FRAC: {
        struct pl_frac f = {0, t->milli, t->memory};
        return fatia_pl_frac_fits(g, &f) ? 1 : 0;
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

/* The group of a pod's GPU request (created when new). */
static int group_of(struct fatia_place_mix *mix, const struct fatia_place_pod *pod, uint32_t *ret)
{
    const struct fatia_place_state *st = mix->st;
    size_t nn = st->n_nodes ? st->n_nodes : 1;
    struct mgroup k = {0}, *g;

    if (pod->n_fracs) {
        const struct pl_frac *f = &pod->fracs[0];
        k.kind = f->milli >= 1000 ? MT_WHOLE : MT_FRAC;
        k.milli = f->milli;
        k.memory = f->memory;
        k.units = f->milli >= 1000 ? (uint32_t)(f->milli / 1000) : 1;
    } else {
        k.kind = MT_DEV;
        k.res = pod->reqs[0].res;
        k.units = pod->reqs[0].count;
    }
    k.cons = pod->cons_hash;
    for (size_t i = 0; i < mix->n_g; i++) {
        g = &mix->g[i];
        if (g->kind == k.kind && g->milli == k.milli && g->memory == k.memory &&
            g->units == k.units && g->res == k.res && g->cons == k.cons) {
            *ret = (uint32_t)i;
            return 0;
        }
    }
    if (mix->n_g == mix->cap_g) {
        size_t nc = mix->cap_g ? mix->cap_g * 2 : 16;
        struct mgroup *ng = fatia_reallocarray(mix->g, nc, sizeof(*ng));
        if (!ng)
            return -ENOMEM;
        mix->g = ng;
        mix->cap_g = nc;
    }
    if (mix->n_g == mix->col_stride) {
        size_t ns = mix->col_stride ? mix->col_stride * 2 : 16;
        struct gcol *nc = fatia_calloc(nn * ns, sizeof(*nc));
        if (!nc)
            return -ENOMEM;
        for (size_t n = 0; mix->col_stride && n < nn; n++)
            memcpy(&nc[n * ns], &mix->col[n * mix->col_stride], mix->col_stride * sizeof(*nc));
        fatia_free(mix->col);
        mix->col = nc;
        mix->col_stride = ns;
    }
    for (size_t n = 0; n < st->n_nodes; n++)
        mix->col[n * mix->col_stride + mix->n_g].access =
            fatia_pl_node_mismatch(st, pod, &st->nodes[n]) == NULL;
    mix->g[mix->n_g] = k;
    *ret = (uint32_t)mix->n_g++;
    return 0;
}

int fatia_place_mix_add(struct fatia_place_mix *mix, const struct fatia_place_pod *pod)
{
    struct mtype *t;
    uint32_t g = NO_GROUP;
    bool cpu_only = !pod->n_fracs && !pod->n_reqs; /* or devices through claims only */
    int r;

    uint64_t key = pod->shape_hash;

    if (mix->frozen || (cpu_only && !(mix->flags & FATIA_PLACE_MIX_CPU)))
        return 0;
    if (mix->flags & FATIA_PLACE_MIX_TYPES) {
        /* the artifact's PodResource: the GPU part (its group) and the CPU, not the memory */
        if (!cpu_only && (r = group_of(mix, pod, &g)) < 0)
            return r;
        key = ((uint64_t)(g + 1u) << 40) |
              ((uint64_t)pod_scalar(pod, mix->st->r_cpu) & ((1ull << 40) - 1));
    }
    for (size_t i = 0; i < mix->n; i++)
        if (mix->t[i].key == key) {
            mix->t[i].count++;
            mix->total++;
            mix->dirty = true;
            return 0;
        }
    if (!cpu_only && g == NO_GROUP && (r = group_of(mix, pod, &g)) < 0)
        return r;
    if (mix->n == mix->cap) {
        size_t nc = mix->cap ? mix->cap * 2 : 16;
        struct mtype *nt = fatia_reallocarray(mix->t, nc, sizeof(*nt));
        uint32_t *ny;
        if (!nt)
            return -ENOMEM;
        mix->t = nt;
        ny = fatia_reallocarray(mix->typ, nc, sizeof(*ny));
        if (!ny)
            return -ENOMEM;
        mix->typ = ny;
        mix->cap = nc;
    }
    t = &mix->t[mix->n];
    memset(t, 0, sizeof(*t));
    t->key = key;
    t->count = 1;
    t->order = (uint32_t)mix->n;
    t->group = g;
    t->cpu = pod_scalar(pod, mix->st->r_cpu);
    mix->n++;
    mix->total++;
    mix->dirty = true;
    return 0;
}

void fatia_place_mix_set_flags(struct fatia_place_mix *mix, unsigned flags)
{
    mix->flags = flags;
    mix->dirty = true;
}

void fatia_place_mix_freeze(struct fatia_place_mix *mix)
{
    mix->frozen = true;
}

bool fatia_pl_mix_frozen(const struct fatia_place_mix *mix)
{
    return mix->frozen;
}

size_t fatia_place_mix_types(const struct fatia_place_mix *mix)
{
    return mix->n;
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

static int cmp_cpu(const void *a, const void *b, void *arg)
{
    const struct fatia_place_mix *mix = arg;
    const struct mtype *x = &mix->t[*(const uint32_t *)a];
    const struct mtype *y = &mix->t[*(const uint32_t *)b];
    if (x->cpu != y->cpu)
        return x->cpu < y->cpu ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

static void group_node(const struct fatia_place_state *st, const struct pl_node *nd,
                       const struct mgroup *g, struct gcol *col)
{
    int32_t usable = 0;
    int64_t unusable = 0;

    for (uint32_t i = 0; col->access && i < nd->n_gpus; i++) {
        const struct pl_gpu *gp = &st->gpus[nd->first_gpu + i];
        uint32_t u = units(gp, g);
        if (u)
            usable += (int32_t)u;
        else
            unusable += fatia_pl_gpu_free_milli(gp);
    }
    col->usable = usable;
    col->unusable = unusable;
}

/* R_n: the node's free GPU capacity, milli */
static int64_t node_free(const struct fatia_place_state *st, const struct pl_node *nd)
{
    int64_t total = 0;

    for (uint32_t g = 0; g < nd->n_gpus; g++)
        total += fatia_pl_gpu_free_milli(&st->gpus[nd->first_gpu + g]);
    return total;
}

static void node_cache(struct fatia_place_mix *mix, uint32_t n)
{
    const struct fatia_place_state *st = mix->st;
    const struct pl_node *nd = &st->nodes[n];
    int32_t cpu = st->res->v.v[st->r_cpu].slot;

    mix->free_total[n] = node_free(st, nd);
    mix->cpu_free[n] = (size_t)cpu < nd->n_scalar ? nd->alloc[cpu] - nd->used[cpu] : 0;
    for (size_t k = 0; k < mix->n_g; k++)
        if (mix->g[k].in_typ)
            group_node(st, nd, &mix->g[k], &mix->col[n * mix->col_stride + k]);
    mix->gen[n] = nd->gen;
}

static int push_member(struct mgroup *g, int64_t cpu, double p)
{
    if (g->n_mem == g->cap_mem) {
        size_t nc = g->cap_mem ? g->cap_mem * 2 : 8;
        int64_t *nc_cpu = fatia_reallocarray(g->cpu, nc, sizeof(*nc_cpu));
        double *nc_p;
        if (!nc_cpu)
            return -ENOMEM;
        g->cpu = nc_cpu;
        nc_p = fatia_reallocarray(g->pcum, nc, sizeof(*nc_p));
        if (!nc_p)
            return -ENOMEM;
        g->pcum = nc_p;
        g->cap_mem = nc;
    }
    g->cpu[g->n_mem] = cpu;
    g->pcum[g->n_mem] = (g->n_mem ? g->pcum[g->n_mem - 1] : 0) + p;
    g->n_mem++;
    return 0;
}

int fatia_pl_mix_prepare(struct fatia_place_mix *mix)
{
    const struct fatia_place_state *st = mix->st;
    uint64_t cum = 0, want;
    uint32_t *sel;
    size_t n_sel;
    int r;

    if (!mix->dirty)
        return 0;
    for (size_t i = 0; i < mix->n; i++)
        mix->typ[i] = (uint32_t)i;
    if (mix->n)
        qsort_r(mix->typ, mix->n, sizeof(*mix->typ), cmp_typ, mix);
    want = (mix->total * mix->coverage + 99) / 100;
    mix->n_typ = 0;
    while (mix->n_typ < mix->n && (cum < want || mix->n_typ == 0))
        cum += mix->t[mix->typ[mix->n_typ++]].count;
    /* per group: its typical members by CPU, with prefix sums of p */
    n_sel = mix->n_typ;
    sel = fatia_calloc(n_sel ? n_sel : 1, sizeof(*sel));
    if (!sel)
        return -ENOMEM;
    if (n_sel) {
        memcpy(sel, mix->typ, n_sel * sizeof(*sel));
        qsort_r(sel, n_sel, sizeof(*sel), cmp_cpu, mix);
    }
    for (size_t k = 0; k < mix->n_g; k++) {
        mix->g[k].n_mem = 0;
        mix->g[k].p = 0;
    }
    mix->p_cpu = 0;
    for (size_t i = 0; i < n_sel; i++) {
        const struct mtype *t = &mix->t[sel[i]];
        struct mgroup *g;
        double p = cum ? (double)t->count / (double)cum : 0;
        if (t->group == NO_GROUP) {
            mix->p_cpu += p;
            continue;
        }
        g = &mix->g[t->group];
        if ((r = push_member(g, t->cpu, p)) < 0) {
            fatia_free(sel);
            return r;
        }
        g->p += p;
    }
    fatia_free(sel);
    /* groups that become typical get their columns, for nodes whose cache is current */
    for (size_t k = 0; k < mix->n_g; k++) {
        struct mgroup *g = &mix->g[k];
        bool now = g->n_mem > 0;
        if (now && !g->in_typ)
            for (size_t n = 0; n < st->n_nodes; n++)
                if (mix->gen[n] == st->nodes[n].gen)
                    group_node(st, &st->nodes[n], g, &mix->col[n * mix->col_stride + k]);
        g->in_typ = now;
    }
    for (size_t n = 0; n < st->n_nodes; n++) /* the measure changed */
        mix->frag_gen[n] = UINT64_MAX;
    mix->scar_stale = true;
    mix->dirty = false;
    return 0;
}

size_t fatia_place_mix_typical(struct fatia_place_mix *mix)
{
    fatia_pl_mix_prepare(mix);
    return mix->n_typ;
}

/* probability of g's typical members with at most `cpu` */
static double hosted_p(const struct mgroup *g, int64_t cpu)
{
    size_t lo = 0, hi = g->n_mem;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (g->cpu[mid] <= cpu)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? g->pcum[lo - 1] : 0;
}

/* f_g = total x P_g when g cannot run here at all, else total x (P_g - H) + unusable x H where
 * H is the probability of the members the node has CPU for */
static double group_frag(const struct mgroup *g, bool access, int64_t total, int64_t cpu,
                         int64_t usable, int64_t unusable)
{
    double h;

    if (!access || usable < (int64_t)g->units)
        return (double)total * g->p;
    h = hosted_p(g, cpu);
    return (double)total * (g->p - h) + (double)unusable * h;
}

double fatia_pl_frag_node(struct fatia_place_mix *mix, uint32_t n)
{
    const struct fatia_place_state *st = mix->st;
    double f = 0;

    if (mix->frag_gen[n] == st->nodes[n].gen)
        return mix->frag[n];
    if (mix->gen[n] != st->nodes[n].gen)
        node_cache(mix, n);
    if (mix->free_total[n]) {
        const struct gcol *col = &mix->col[n * mix->col_stride];
        f = mix->p_cpu * (double)mix->free_total[n];
        for (size_t k = 0; k < mix->n_g; k++) {
            const struct mgroup *g = &mix->g[k];
            if (g->in_typ)
                f += group_frag(g, col[k].access, mix->free_total[n], mix->cpu_free[n],
                                col[k].usable, col[k].unusable);
        }
    }
    mix->frag[n] = f;
    mix->frag_gen[n] = st->nodes[n].gen;
    return f;
}

double fatia_pl_frag_node_now(struct fatia_place_mix *mix, uint32_t n)
{
    const struct fatia_place_state *st = mix->st;
    const struct pl_node *nd = &st->nodes[n];
    int64_t total = 0, cpu;
    int32_t cs = st->res->v.v[st->r_cpu].slot;
    double f = 0;

    for (uint32_t g = 0; g < nd->n_gpus; g++)
        total += fatia_pl_gpu_free_milli(&st->gpus[nd->first_gpu + g]);
    if (!total)
        return 0;
    cpu = (size_t)cs < nd->n_scalar ? nd->alloc[cs] - nd->used[cs] : 0;
    f = mix->p_cpu * (double)total;
    for (size_t k = 0; k < mix->n_g; k++) {
        const struct mgroup *g = &mix->g[k];
        int64_t usable = 0, unusable = 0;
        if (!g->in_typ)
            continue;
        if (!mix->col[n * mix->col_stride + k].access) { /* group_frag's first case: no GPU read */
            f += (double)total * g->p;
            continue;
        }
        for (uint32_t i = 0; i < nd->n_gpus; i++) {
            const struct pl_gpu *gp = &st->gpus[nd->first_gpu + i];
            uint32_t u = units(gp, g);
            if (u)
                usable += u;
            else
                unusable += fatia_pl_gpu_free_milli(gp);
        }
        f += group_frag(g, true, total, cpu, usable, unusable);
    }
    return f;
}

double fatia_pl_frag_node_one(struct fatia_place_mix *mix, uint32_t n, uint32_t gi,
                              const struct pl_gpu *before, int64_t d_cpu, int64_t d_mem)
{
    const struct pl_gpu *now = &mix->st->gpus[gi];
    int64_t a = fatia_pl_gpu_free_milli(before), a2 = fatia_pl_gpu_free_milli(now);
    int64_t total, cpu;
    const struct gcol *col;
    double f = 0;

    (void)d_mem;
    if (mix->gen[n] != mix->st->nodes[n].gen)
        node_cache(mix, n);
    total = mix->free_total[n] - a + a2;
    if (!total)
        return 0;
    cpu = mix->cpu_free[n] - d_cpu;
    f = mix->p_cpu * (double)total;
    col = &mix->col[n * mix->col_stride];
    for (size_t k = 0; k < mix->n_g; k++) {
        const struct mgroup *g = &mix->g[k];
        uint32_t ub, ua;
        if (!g->in_typ)
            continue;
        if (!col[k].access) {
            f += (double)total * g->p;
            continue;
        }
        ub = units(before, g);
        ua = units(now, g);
        f += group_frag(g, true, total, cpu, col[k].usable - (int64_t)ub + (int64_t)ua,
                        col[k].unusable - (ub ? 0 : a) + (ua ? 0 : a2));
    }
    return f;
}

/* Two GPU states the measure cannot tell apart: units() and fatia_pl_gpu_free_milli read nothing
 * else of a fraction pool without device slices. */
static bool same_measured(const struct pl_gpu *a, const struct pl_gpu *b)
{
    return a->fractional && b->fractional && !a->n_slices && !b->n_slices &&
           a->milli_free == b->milli_free && a->mem_free == b->mem_free &&
           a->mem_total == b->mem_total && a->ctx_reserve == b->ctx_reserve &&
           a->mem_per_milli == b->mem_per_milli && a->shares == b->shares &&
           a->max_shares == b->max_shares && a->users == b->users;
}

double fatia_pl_frag_node_many(struct fatia_place_mix *mix, uint32_t n, const uint32_t *gis,
                               const struct pl_gpu *before, size_t k, int64_t d_cpu)
{
    /* the GPUs whose (before, now) pair is the same are measured once, times their number (a
     * whole-GPU request's k GPUs go from free to taken alike): the sums are of integers */
    size_t rep[16], mult[16], n_rep = 0;
    int64_t total, cpu;
    const struct gcol *col;
    double f = 0;

    if (k > FATIA_ARRAY_SIZE(rep))
        return fatia_pl_frag_node_now(mix, n);
    for (size_t i = 0; i < k; i++) {
        const struct pl_gpu *now = &mix->st->gpus[gis[i]];
        size_t j = 0;
        while (j < n_rep && !(same_measured(&before[rep[j]], &before[i]) &&
                              same_measured(&mix->st->gpus[gis[rep[j]]], now)))
            j++;
        if (j == n_rep) {
            rep[n_rep] = i;
            mult[n_rep++] = 0;
        }
        mult[j]++;
    }

    if (mix->gen[n] != mix->st->nodes[n].gen)
        node_cache(mix, n);
    total = mix->free_total[n];
    for (size_t i = 0; i < k; i++)
        total += (int64_t)fatia_pl_gpu_free_milli(&mix->st->gpus[gis[i]]) -
                 (int64_t)fatia_pl_gpu_free_milli(&before[i]);
    if (!total)
        return 0;
    cpu = mix->cpu_free[n] - d_cpu;
    f = mix->p_cpu * (double)total;
    col = &mix->col[n * mix->col_stride];
    for (size_t j = 0; j < mix->n_g; j++) {
        const struct mgroup *g = &mix->g[j];
        int64_t usable, unusable;
        if (!g->in_typ)
            continue;
        if (!col[j].access) {
            f += (double)total * g->p;
            continue;
        }
        usable = col[j].usable;
        unusable = col[j].unusable;
        for (size_t r = 0; r < n_rep; r++) {
            size_t i = rep[r];
            const struct pl_gpu *now = &mix->st->gpus[gis[i]];
            uint32_t ub = units(&before[i], g), ua = units(now, g);
            int64_t m = (int64_t)mult[r];
            usable += m * ((int64_t)ua - (int64_t)ub);
            unusable += m * ((ua ? 0 : (int64_t)fatia_pl_gpu_free_milli(now)) -
                             (ub ? 0 : (int64_t)fatia_pl_gpu_free_milli(&before[i])));
        }
        f += group_frag(g, true, total, cpu, usable, unusable);
    }
    return f;
}

/* ---- scarcity (fatia's, FATIA_PLACE_FGD_SCARCE) ---- */

static int scarcity_classes(struct fatia_place_mix *mix)
{
    const struct fatia_place_state *st = mix->st;
    size_t nn = st->n_nodes ? st->n_nodes : 1;

    mix->node_cls = fatia_calloc(nn, sizeof(*mix->node_cls));
    mix->cls_key = fatia_calloc(nn, sizeof(*mix->cls_key));
    mix->cls_free = fatia_calloc(nn, sizeof(*mix->cls_free));
    mix->cls_press = fatia_calloc(nn, sizeof(*mix->cls_press));
    mix->node_free = fatia_calloc(nn, sizeof(*mix->node_free));
    if (!mix->node_cls || !mix->cls_key || !mix->cls_free || !mix->cls_press || !mix->node_free)
        return -ENOMEM;
    for (size_t n = 0; n < st->n_nodes; n++) {
        uint64_t k = st->nodes[n].cls;
        size_t c = 0;
        while (c < mix->n_cls && mix->cls_key[c] != k)
            c++;
        if (c == mix->n_cls)
            mix->cls_key[mix->n_cls++] = k;
        mix->node_cls[n] = (uint32_t)c;
    }
    return 0;
}

/* The classes a group's static filters let in (nodes of one class pass or fail alike). */
static int scarcity_group(struct fatia_place_mix *mix, size_t k)
{
    const struct fatia_place_state *st = mix->st;
    struct mgroup *g = &mix->g[k];

    g->cls_ok = fatia_calloc(mix->n_cls ? mix->n_cls : 1, 1);
    g->ok_cls = fatia_calloc(mix->n_cls ? mix->n_cls : 1, sizeof(*g->ok_cls));
    if (!g->cls_ok || !g->ok_cls)
        return -ENOMEM;
    for (size_t n = 0; n < st->n_nodes; n++)
        g->cls_ok[mix->node_cls[n]] |= mix->col[n * mix->col_stride + k].access;
    g->constrained = false;
    g->n_ok = 0;
    for (size_t c = 0; c < mix->n_cls; c++) {
        g->constrained |= !g->cls_ok[c];
        if (g->cls_ok[c])
            g->ok_cls[g->n_ok++] = (uint32_t)c;
    }
    return 0;
}

/* The typical groups some class turns away (after a prepare or new groups). */
static int scarcity_choosy(struct fatia_place_mix *mix)
{
    int r;

    for (; mix->scar_ng < mix->n_g; mix->scar_ng++)
        if ((r = scarcity_group(mix, mix->scar_ng)) < 0)
            return r;
    if (mix->cap_choosy < mix->n_g) {
        uint32_t *nc = fatia_reallocarray(mix->choosy, mix->n_g, sizeof(*nc));
        if (!nc)
            return -ENOMEM;
        mix->choosy = nc;
        mix->cap_choosy = mix->n_g;
    }
    mix->n_choosy = 0;
    for (size_t k = 0; k < mix->n_g; k++)
        if (mix->g[k].constrained && mix->g[k].n_mem > 0)
            mix->choosy[mix->n_choosy++] = (uint32_t)k;
    mix->scar_stale = false;
    mix->press_valid = false;
    return 0;
}

/* cls_free brought up to date: from every node the first time (or when the state's log of changed
 * nodes no longer reaches back to the last call), else from the nodes changed since. */
static void scarcity_free(struct fatia_place_mix *mix)
{
    const struct fatia_place_state *st = mix->st;

    if (!mix->free_valid || st->chg_seq - mix->chg_seen > PL_CHANGES) {
        for (size_t c = 0; c < mix->n_cls; c++)
            mix->cls_free[c] = 0;
        for (uint32_t n = 0; n < st->n_nodes; n++) {
            mix->node_free[n] = node_free(st, &st->nodes[n]);
            mix->cls_free[mix->node_cls[n]] += mix->node_free[n];
        }
        mix->free_valid = true;
        mix->press_valid = false;
    } else {
        for (uint64_t i = mix->chg_seen; i < st->chg_seq; i++) {
            uint32_t n = st->chg[i % PL_CHANGES];
            int64_t f = node_free(st, &st->nodes[n]);
            if (f == mix->node_free[n])
                continue;
            mix->cls_free[mix->node_cls[n]] += f - mix->node_free[n];
            mix->node_free[n] = f;
            mix->press_valid = false;
        }
    }
    mix->chg_seen = st->chg_seq;
}

int fatia_pl_mix_scarcity(struct fatia_place_mix *mix, const double **ret_cls,
                          const uint32_t **ret_node_cls)
{
    double demand = 0, all = 0;
    int r;

    *ret_cls = NULL;
    *ret_node_cls = NULL;
    if ((r = fatia_pl_mix_prepare(mix)) < 0)
        return r;
    if (!mix->node_cls && (r = scarcity_classes(mix)) < 0)
        return r;
    if ((mix->scar_stale || mix->scar_ng != mix->n_g) && (r = scarcity_choosy(mix)) < 0)
        return r;
    if (!mix->n_choosy) /* no typical type is choosy: every node alike */
        return 0;
    scarcity_free(mix);
    *ret_cls = mix->cls_press;
    *ret_node_cls = mix->node_cls;
    if (mix->press_valid)
        return 0;
    for (size_t c = 0; c < mix->n_cls; c++) {
        mix->cls_press[c] = 0;
        all += (double)mix->cls_free[c];
    }
    for (size_t i = 0; i < mix->n_choosy; i++) {
        const struct mgroup *g = &mix->g[mix->choosy[i]];
        double d = g->kind == MT_FRAC ? (double)g->milli : 1000.0 * g->units, f = 0;
        demand += g->p * d;
        for (size_t j = 0; j < g->n_ok; j++)
            f += (double)mix->cls_free[g->ok_cls[j]];
        if (f <= 0)
            continue;
        for (size_t j = 0; j < g->n_ok; j++)
            mix->cls_press[g->ok_cls[j]] += g->p * d / f;
    }
    /* in units of the balanced pressure (every class free in proportion to its choosy demand) */
    for (size_t c = 0; c < mix->n_cls; c++)
        mix->cls_press[c] *= demand > 0 ? all / demand : 0;
    mix->press_valid = true;
    return 0;
}

double fatia_place_frag_node(struct fatia_place_mix *mix, size_t node)
{
    if (fatia_pl_mix_prepare(mix) < 0 || node >= mix->st->n_nodes)
        return 0;
    return fatia_pl_frag_node(mix, (uint32_t)node);
}

double fatia_place_frag_total(struct fatia_place_mix *mix)
{
    double f = 0;

    if (fatia_pl_mix_prepare(mix) < 0)
        return 0;
    for (size_t n = 0; n < mix->st->n_nodes; n++)
        f += fatia_pl_frag_node(mix, (uint32_t)n);
    return f;
}
