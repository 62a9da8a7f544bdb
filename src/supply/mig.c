/*
 * supply/mig.c: the MIG planner (see mig.h for the rules and the pool objective). Pure: no I/O,
 * no clock.
 *
 * Memory slices are bits of a uint32_t mask (at most FATIA_MIG_MAX_SLICES = 16). A placement of
 * profile p at start s occupies bits [s, s + p->memory_slices).
 *
 * Pool DP (fatia_mig_plan_pool): stage g holds the reachable states after deciding GPUs 0..g-1.
 * A state is the supply of each demanded profile so far, capped at its demand, packed in mixed
 * radix into a uint64 key; its value is the lexicographically smallest (reconfigured, stranded)
 * pair that reaches it, with a back pointer (previous entry, option) for reconstruction. Capping
 * is exact: supply beyond demand only adds stranded slices, which the transition accounts for.
 * Options of a GPU are its valid layouts that keep every busy instance, deduplicated by supply
 * vector keeping the cheapest (unchanged layout first, then fewest stranded slices).
 */
#include "base/compat.h"

#include "supply/mig.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/vec.h"

static uint32_t span(const struct fatia_mig_profile *p, unsigned start)
{
    return ((1u << p->memory_slices) - 1u) << start;
}

static bool has_start(const struct fatia_mig_profile *p, unsigned start)
{
    for (unsigned i = 0; i < p->n_starts; i++)
        if (p->starts[i] == start)
            return true;
    return false;
}

static size_t pindex(const struct fatia_mig_geom *g, const struct fatia_mig_profile *p)
{
    return (size_t)(p - g->profiles);
}

static bool in_geom(const struct fatia_mig_geom *g, const struct fatia_mig_profile *p)
{
    return p >= g->profiles && p < g->profiles + g->n_profiles;
}

/* "4g" of "4g.71gb": the compute part the messages use. */
static void short_name(const char *name, char *buf, size_t n)
{
    const char *dot = strchr(name, '.');

    snprintf(buf, n, "%.*s", dot ? (int)(dot - name) : (int)strlen(name), name);
}

static void starts_text(const struct fatia_mig_profile *p, char *buf, size_t n)
{
    size_t len = 0;

    buf[0] = '\0';
    for (unsigned i = 0; i < p->n_starts && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%u", i ? ", " : "", p->starts[i]);
}

int fatia_mig_layout_check(const struct fatia_mig_geom *g, const char *gpu_name,
                           const struct fatia_mig_layout *l, char *why, size_t why_n)
{
    uint8_t count[FATIA_MIG_MAX_PROFILES] = {0};
    uint32_t used = 0;
    unsigned compute = 0;
    unsigned n_me_all = 0, n_not_no_me = 0;

    for (unsigned i = 0; i < l->n; i++) {
        const struct fatia_mig_profile *p = l->v[i].profile;
        unsigned s = l->v[i].start;
        if (!p || !in_geom(g, p)) {
            snprintf(why, why_n, "instance %u is not a profile of %s", i, gpu_name);
            return -FATIA_E_NOFIT;
        }
        if (!has_start(p, s)) {
            char st[64];
            starts_text(p, st, sizeof(st));
            snprintf(why, why_n, "%s cannot start at memory slice %u on %s (starts: %s)", p->name,
                     s, gpu_name, st);
            return -FATIA_E_NOFIT;
        }
        if (used & span(p, s)) {
            snprintf(why, why_n, "overlap: %s at %u:%u shares memory slices with another instance",
                     p->name, s, p->memory_slices);
            return -FATIA_E_NOFIT;
        }
        used |= span(p, s);
        if (++count[pindex(g, p)] > p->max_instances) {
            snprintf(why, why_n, "%s allows at most %u instance%s of %s", gpu_name,
                     p->max_instances, p->max_instances == 1 ? "" : "s", p->name);
            return -FATIA_E_NOFIT;
        }
        compute += p->compute_slices;
        n_me_all += (p->flags & FATIA_MIG_ME_ALL) != 0;
        n_not_no_me += (p->flags & FATIA_MIG_NO_ME) == 0;
    }
    if (compute > g->compute_slices) {
        snprintf(why, why_n, "needs %u compute slices; %s has %u", compute, gpu_name,
                 g->compute_slices);
        return -FATIA_E_NOFIT;
    }
    if (n_me_all && n_not_no_me > 1) {
        snprintf(why, why_n, "a +me.all instance excludes every profile but -me ones");
        return -FATIA_E_NOFIT;
    }
    return 0;
}

static int cmp_placement(const void *a, const void *b)
{
    const struct fatia_mig_placement *x = a, *y = b;

    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->profile->id != y->profile->id)
        return x->profile->id < y->profile->id ? -1 : 1;
    return 0;
}

void fatia_mig_layout_sort(struct fatia_mig_layout *l)
{
    qsort(l->v, l->n, sizeof(l->v[0]), cmp_placement);
}

bool fatia_mig_layout_equal(const struct fatia_mig_layout *a, const struct fatia_mig_layout *b)
{
    struct fatia_mig_layout x = *a, y = *b;

    if (a->n != b->n)
        return false;
    fatia_mig_layout_sort(&x);
    fatia_mig_layout_sort(&y);
    for (unsigned i = 0; i < x.n; i++)
        if (x.v[i].profile != y.v[i].profile || x.v[i].start != y.v[i].start)
            return false;
    return true;
}

/* ---- placing a multiset on one GPU ---- */

struct place_search {
    const struct fatia_mig_geom *g;
    const struct fatia_mig_profile *inst[FATIA_MIG_MAX_INSTANCES]; /* to place, in order */
    unsigned n;
    uint8_t cur[FATIA_MIG_MAX_INSTANCES];
    uint8_t best[FATIA_MIG_MAX_INSTANCES];
    int best_open; /* -1: none found */
    uint8_t count[FATIA_MIG_MAX_PROFILES];
    unsigned compute;
    unsigned long visits;
};

/* How many single placements could still be added to a complete layout: the room it leaves. */
static int open_placements(const struct place_search *ps, uint32_t used)
{
    const struct fatia_mig_geom *g = ps->g;
    int open = 0;

    for (size_t i = 0; i < g->n_profiles; i++) {
        const struct fatia_mig_profile *p = &g->profiles[i];
        if (ps->count[i] >= p->max_instances || ps->compute + p->compute_slices > g->compute_slices)
            continue;
        for (unsigned s = 0; s < p->n_starts; s++)
            open += !(used & span(p, p->starts[s]));
    }
    return open;
}

static void place_dfs(struct place_search *ps, unsigned k, uint32_t used)
{
    const struct fatia_mig_profile *p;
    unsigned first = 0;

    if (ps->visits++ > 2000000) /* bounded; the geometries we know need far less */
        return;
    if (k == ps->n) {
        int open = open_placements(ps, used);
        if (open > ps->best_open) {
            ps->best_open = open;
            memcpy(ps->best, ps->cur, sizeof(ps->cur));
        }
        return;
    }
    p = ps->inst[k];
    /* identical instances take ascending starts: no permutations */
    if (k > 0 && ps->inst[k - 1] == p)
        for (first = 0; first < p->n_starts && p->starts[first] <= ps->cur[k - 1]; first++)
            ;
    for (unsigned s = first; s < p->n_starts; s++) {
        uint32_t m = span(p, p->starts[s]);
        if (used & m)
            continue;
        ps->cur[k] = p->starts[s];
        place_dfs(ps, k + 1, used | m);
    }
}

static int cmp_instance_order(const struct fatia_mig_profile *a, const struct fatia_mig_profile *b)
{
    if (a->memory_slices != b->memory_slices)
        return a->memory_slices > b->memory_slices ? -1 : 1;
    if (a->n_starts != b->n_starts)
        return a->n_starts < b->n_starts ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

static void multiset_text(const struct fatia_mig_geom *g, const uint8_t *counts, char *buf,
                          size_t n)
{
    size_t len = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < g->n_profiles && len < n; i++)
        if (counts[i])
            len += (size_t)snprintf(buf + len, n - len, "%s%u x %s", len ? ", " : "", counts[i],
                                    g->profiles[i].name);
}

int fatia_mig_place(const struct fatia_mig_geom *g, const char *gpu_name, const uint8_t *counts,
                    const struct fatia_mig_layout *prefer, struct fatia_mig_layout *ret, char *why,
                    size_t why_n)
{
    struct place_search ps;
    unsigned compute = 0, memory = 0, n_me_all = 0, n_not_no_me = 0, total = 0;
    char text[256];

    memset(&ps, 0, sizeof(ps));
    ps.g = g;
    ps.best_open = -1;
    for (size_t i = 0; i < g->n_profiles; i++) {
        const struct fatia_mig_profile *p = &g->profiles[i];
        char sn[16], st[64];
        if (!counts[i])
            continue;
        if (counts[i] > p->n_starts) {
            short_name(p->name, sn, sizeof(sn));
            starts_text(p, st, sizeof(st));
            if (p->n_starts == 1)
                snprintf(why, why_n, "%u x %s: %s has one %s placement (start %s)", counts[i],
                         p->name, gpu_name, sn, st);
            else
                snprintf(why, why_n, "%u x %s: %s has %u %s placements (starts %s)", counts[i],
                         p->name, gpu_name, p->n_starts, sn, st);
            return -FATIA_E_NOFIT;
        }
        if (counts[i] > p->max_instances) {
            snprintf(why, why_n, "%u x %s: %s allows at most %u instance%s of %s", counts[i],
                     p->name, gpu_name, p->max_instances, p->max_instances == 1 ? "" : "s",
                     p->name);
            return -FATIA_E_NOFIT;
        }
        compute += counts[i] * p->compute_slices;
        memory += counts[i] * p->memory_slices;
        total += counts[i];
        if (p->flags & FATIA_MIG_ME_ALL)
            n_me_all += counts[i];
        if (!(p->flags & FATIA_MIG_NO_ME))
            n_not_no_me += counts[i];
    }
    multiset_text(g, counts, text, sizeof(text));
    if (compute > g->compute_slices) {
        snprintf(why, why_n, "%s: needs %u compute slices; %s has %u", text, compute, gpu_name,
                 g->compute_slices);
        return -FATIA_E_NOFIT;
    }
    if (memory > g->memory_slices) {
        snprintf(why, why_n, "%s: needs %u memory slices; %s has %u", text, memory, gpu_name,
                 g->memory_slices);
        return -FATIA_E_NOFIT;
    }
    if (n_me_all && n_not_no_me > 1) {
        snprintf(why, why_n, "%s: a +me.all instance excludes every profile but -me ones", text);
        return -FATIA_E_NOFIT;
    }
    if (total > FATIA_MIG_MAX_INSTANCES) {
        snprintf(why, why_n, "%s: more than %d instances", text, FATIA_MIG_MAX_INSTANCES);
        return -FATIA_E_NOFIT;
    }
    if (prefer) {
        uint8_t pc[FATIA_MIG_MAX_PROFILES] = {0};
        bool same = true;
        char w[8];
        for (unsigned i = 0; i < prefer->n; i++)
            if (in_geom(g, prefer->v[i].profile))
                pc[pindex(g, prefer->v[i].profile)]++;
            else
                same = false;
        for (size_t i = 0; same && i < g->n_profiles; i++)
            same = pc[i] == counts[i];
        if (same && fatia_mig_layout_check(g, gpu_name, prefer, w, sizeof(w)) == 0) {
            *ret = *prefer;
            fatia_mig_layout_sort(ret);
            return 0;
        }
    }
    /* instances, largest first */
    for (size_t i = 0; i < g->n_profiles; i++)
        for (unsigned c = 0; c < counts[i]; c++)
            ps.inst[ps.n++] = &g->profiles[i];
    for (unsigned i = 1; i < ps.n; i++)
        for (unsigned j = i; j > 0 && cmp_instance_order(ps.inst[j], ps.inst[j - 1]) < 0; j--) {
            const struct fatia_mig_profile *t = ps.inst[j];
            ps.inst[j] = ps.inst[j - 1];
            ps.inst[j - 1] = t;
        }
    for (size_t i = 0; i < g->n_profiles; i++)
        ps.count[i] = counts[i];
    ps.compute = compute;
    place_dfs(&ps, 0, 0);
    if (ps.best_open < 0) {
        snprintf(why, why_n,
                 "overlap: %s do not fit together on %s: every arrangement of their placements "
                 "overlaps in memory slices",
                 text, gpu_name);
        return -FATIA_E_NOFIT;
    }
    ret->n = (uint8_t)ps.n;
    for (unsigned i = 0; i < ps.n; i++) {
        ret->v[i].profile = ps.inst[i];
        ret->v[i].start = ps.best[i];
    }
    fatia_mig_layout_sort(ret);
    return 0;
}

int fatia_mig_named_config(const struct fatia_mig_geom *g, const char *gpu_name, const char *config,
                           uint8_t *counts, bool *ret_enabled, char *why, size_t why_n)
{
    char want[40];

    memset(counts, 0, FATIA_MIG_MAX_PROFILES);
    if (!strcmp(config, "all-disabled")) {
        *ret_enabled = false;
        return 0;
    }
    if (!g) {
        snprintf(why, why_n, "%s does not support MIG", gpu_name);
        return -FATIA_E_NOFIT;
    }
    *ret_enabled = true;
    if (!strcmp(config, "all-enabled"))
        return 0;
    if (!strcmp(config, "all-balanced")) {
        memcpy(counts, g->balanced, FATIA_MIG_MAX_PROFILES);
        return 0;
    }
    if (strncmp(config, "all-", 4) != 0) {
        snprintf(why, why_n,
                 "unknown named config \"%s\": expected all-disabled, all-enabled, all-balanced "
                 "or all-<profile>",
                 config);
        return -FATIA_E_NOFIT;
    }
    for (size_t i = 0; i < g->n_profiles; i++) {
        /* mig-parted writes '+' as '.' in config names: all-1g.10gb.me */
        snprintf(want, sizeof(want), "all-%s", g->profiles[i].name);
        for (char *p = want; *p; p++)
            if (*p == '+')
                *p = '.';
        if (!strcmp(want, config)) {
            /* at the instance limit, as the operator's configs; never more than fit */
            counts[i] = FATIA_MIN(g->profiles[i].max_instances, g->profiles[i].n_starts);
            return 0;
        }
    }
    {
        size_t len = 0;
        char list[512];
        list[0] = '\0';
        for (size_t i = 0; i < g->n_profiles && len < sizeof(list); i++)
            len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "",
                                    g->profiles[i].name);
        snprintf(why, why_n, "\"%s\" names no MIG profile of %s (profiles: %s)", config + 4,
                 gpu_name, list);
    }
    return -FATIA_E_NOFIT;
}

/* ---- enumeration ---- */

struct enum_state {
    const struct fatia_mig_geom *g;
    struct fatia_mig_layouts *out;
    struct fatia_mig_layout cur;
    uint8_t count[FATIA_MIG_MAX_PROFILES];
    unsigned compute;
    int err;
};

static void enum_rec(struct enum_state *es, size_t pi, unsigned si, uint32_t used)
{
    const struct fatia_mig_geom *g = es->g;
    char why[8];

    if (es->err)
        return;
    /* record the layout as it stands (every prefix of the placement order is a layout) */
    if (fatia_mig_layout_check(g, "", &es->cur, why, sizeof(why)) == 0) {
        if (FATIA_VEC_PUSH(es->out, es->cur) < 0) {
            es->err = -ENOMEM;
            return;
        }
    }
    for (size_t i = pi; i < g->n_profiles; i++) {
        const struct fatia_mig_profile *p = &g->profiles[i];
        for (unsigned s = (i == pi ? si : 0); s < p->n_starts; s++) {
            uint32_t m = span(p, p->starts[s]);
            if ((used & m) || es->count[i] >= p->max_instances ||
                es->compute + p->compute_slices > g->compute_slices ||
                es->cur.n >= FATIA_MIG_MAX_INSTANCES)
                continue;
            es->cur.v[es->cur.n].profile = p;
            es->cur.v[es->cur.n].start = p->starts[s];
            es->cur.n++;
            es->count[i]++;
            es->compute += p->compute_slices;
            enum_rec(es, i, s + 1, used | m);
            es->compute -= p->compute_slices;
            es->count[i]--;
            es->cur.n--;
        }
    }
}

int fatia_mig_enumerate(const struct fatia_mig_geom *g, struct fatia_mig_layouts *ret)
{
    struct enum_state es;

    memset(&es, 0, sizeof(es));
    memset(ret, 0, sizeof(*ret));
    es.g = g;
    es.out = ret;
    enum_rec(&es, 0, 0, 0);
    if (es.err) {
        fatia_mig_layouts_release(ret);
        return es.err;
    }
    for (size_t i = 0; i < ret->n; i++)
        fatia_mig_layout_sort(&ret->v[i]);
    return 0;
}

void fatia_mig_layouts_release(struct fatia_mig_layouts *ls)
{
    FATIA_VEC_RELEASE(ls);
}

/* ---- pool planning ---- */

#define POOL_CHUNK        4
#define POOL_STAGE_BUDGET (1u << 20) /* states per stage before falling back to chunks */

struct pool_demand {
    size_t n;
    const char *name[FATIA_MIG_MAX_PROFILES];
    uint32_t count[FATIA_MIG_MAX_PROFILES];
    uint32_t w[FATIA_MIG_MAX_PROFILES]; /* compute slices */
    uint32_t m[FATIA_MIG_MAX_PROFILES]; /* memory slices */
};

/* Merges duplicate names, drops zero counts and profiles no GPU of the pool has. */
static int pool_demand_init(struct pool_demand *pd, const struct fatia_mig_pool_gpu *gpus,
                            size_t n_gpus, const struct fatia_mig_demand *d, size_t n_d)
{
    memset(pd, 0, sizeof(*pd));
    for (size_t i = 0; i < n_d; i++) {
        const struct fatia_mig_profile *p = NULL;
        size_t j;
        if (!d[i].profile || !d[i].count)
            continue;
        for (j = 0; j < pd->n; j++)
            if (!strcmp(pd->name[j], d[i].profile))
                break;
        if (j < pd->n) {
            pd->count[j] += d[i].count;
            continue;
        }
        for (size_t g = 0; !p && g < n_gpus; g++)
            p = fatia_mig_geom_find(gpus[g].geom, d[i].profile);
        if (!p)
            continue;
        if (pd->n == FATIA_MIG_MAX_PROFILES)
            return -FATIA_E_LIMIT;
        pd->name[pd->n] = d[i].profile;
        pd->count[pd->n] = d[i].count;
        pd->w[pd->n] = p->compute_slices;
        pd->m[pd->n] = p->memory_slices;
        pd->n++;
    }
    return 0;
}

static int demand_index(const struct pool_demand *pd, const struct fatia_mig_profile *p)
{
    for (size_t j = 0; j < pd->n; j++)
        if (!strcmp(pd->name[j], p->name))
            return (int)j;
    return -1;
}

static bool placement_in(const struct fatia_mig_layout *l, const struct fatia_mig_placement *p)
{
    for (unsigned i = 0; i < l->n; i++)
        if (l->v[i].profile == p->profile && l->v[i].start == p->start)
            return true;
    return false;
}

static bool keeps_busy(const struct fatia_mig_pool_gpu *gpu, const struct fatia_mig_layout *l)
{
    for (unsigned i = 0; i < gpu->current.n; i++)
        if ((gpu->busy >> i & 1u) && !placement_in(l, &gpu->current.v[i]))
            return false;
    return true;
}

/* Supply of a layout: free instances per demand entry, and stranded slices of the rest. */
static void layout_supply(const struct fatia_mig_pool_gpu *gpu, const struct pool_demand *pd,
                          const struct fatia_mig_layout *l, uint8_t *v, uint64_t *stranded)
{
    memset(v, 0, FATIA_MIG_MAX_PROFILES);
    *stranded = 0;
    for (unsigned i = 0; i < l->n; i++) {
        int j;
        bool busy = false;
        for (unsigned c = 0; c < gpu->current.n; c++)
            if ((gpu->busy >> c & 1u) && gpu->current.v[c].profile == l->v[i].profile &&
                gpu->current.v[c].start == l->v[i].start)
                busy = true;
        if (busy)
            continue;
        j = demand_index(pd, l->v[i].profile);
        if (j >= 0)
            v[j]++;
        else
            *stranded += l->v[i].profile->memory_slices;
    }
}

int fatia_mig_pool_score_cmp(const struct fatia_mig_pool_score *a,
                             const struct fatia_mig_pool_score *b)
{
    if (a->served_slices != b->served_slices)
        return a->served_slices > b->served_slices ? 1 : -1;
    if (a->served_instances != b->served_instances)
        return a->served_instances > b->served_instances ? 1 : -1;
    if (a->reconfigured != b->reconfigured)
        return a->reconfigured < b->reconfigured ? 1 : -1;
    if (a->stranded_slices != b->stranded_slices)
        return a->stranded_slices < b->stranded_slices ? 1 : -1;
    return 0;
}

int fatia_mig_pool_evaluate(const struct fatia_mig_pool_gpu *gpus, size_t n_gpus,
                            const struct fatia_mig_demand *demand, size_t n_demand,
                            const struct fatia_mig_layout *layouts,
                            struct fatia_mig_pool_score *ret)
{
    struct pool_demand pd;
    uint64_t supply[FATIA_MIG_MAX_PROFILES] = {0};
    struct fatia_mig_pool_score s = {0};
    char why[8];
    int r = pool_demand_init(&pd, gpus, n_gpus, demand, n_demand);

    if (r < 0)
        return r;
    for (size_t g = 0; g < n_gpus; g++) {
        uint8_t v[FATIA_MIG_MAX_PROFILES];
        uint64_t st;
        if (fatia_mig_layout_check(gpus[g].geom, "", &layouts[g], why, sizeof(why)) < 0 &&
            !fatia_mig_layout_equal(&layouts[g], &gpus[g].current))
            return -FATIA_E_NOFIT;
        if (!keeps_busy(&gpus[g], &layouts[g]))
            return -FATIA_E_NOFIT;
        s.reconfigured += !fatia_mig_layout_equal(&layouts[g], &gpus[g].current);
        layout_supply(&gpus[g], &pd, &layouts[g], v, &st);
        s.stranded_slices += st;
        for (size_t j = 0; j < pd.n; j++)
            supply[j] += v[j];
    }
    for (size_t j = 0; j < pd.n; j++) {
        uint64_t served = FATIA_MIN(supply[j], (uint64_t)pd.count[j]);
        s.served_slices += served * pd.w[j];
        s.served_instances += served;
        s.stranded_slices += (supply[j] - served) * pd.m[j];
    }
    *ret = s;
    return 0;
}

/* One GPU's options. */
struct pool_opt {
    uint8_t v[FATIA_MIG_MAX_PROFILES];
    uint64_t stranded;
    uint32_t reconfig;
    const struct fatia_mig_layout *layout; /* into a layouts cache, or the GPU's current */
};

static int cmp_opt(const void *a, const void *b)
{
    const struct pool_opt *x = a, *y = b;
    int c = memcmp(x->v, y->v, sizeof(x->v));

    if (c)
        return c;
    if (x->reconfig != y->reconfig)
        return x->reconfig < y->reconfig ? -1 : 1;
    if (x->stranded != y->stranded)
        return x->stranded < y->stranded ? -1 : 1;
    return x->layout < y->layout ? -1 : x->layout > y->layout;
}

struct geom_cache {
    const struct fatia_mig_geom *geom;
    struct fatia_mig_layouts layouts;
};

struct pool_ctx {
    const struct fatia_mig_pool_gpu *gpus;
    size_t n_gpus;
    struct pool_demand pd;
    struct geom_cache *cache;
    size_t n_cache;
    struct pool_opt **opts; /* per GPU */
    size_t *n_opts;
};

static const struct fatia_mig_layouts *cached_layouts(struct pool_ctx *pc,
                                                      const struct fatia_mig_geom *g, int *err)
{
    for (size_t i = 0; i < pc->n_cache; i++)
        if (pc->cache[i].geom == g)
            return &pc->cache[i].layouts;
    *err = fatia_mig_enumerate(g, &pc->cache[pc->n_cache].layouts);
    if (*err < 0)
        return NULL;
    pc->cache[pc->n_cache].geom = g;
    return &pc->cache[pc->n_cache++].layouts;
}

static int build_options(struct pool_ctx *pc, size_t gi)
{
    const struct fatia_mig_pool_gpu *gpu = &pc->gpus[gi];
    const struct fatia_mig_layouts *ls;
    struct pool_opt *o;
    size_t n = 0, w = 0;
    bool have_current = false;
    int err = 0;

    ls = cached_layouts(pc, gpu->geom, &err);
    if (!ls)
        return err;
    o = fatia_calloc(ls->n + 1, sizeof(*o));
    if (!o)
        return -ENOMEM;
    for (size_t i = 0; i < ls->n; i++) {
        const struct fatia_mig_layout *l = &ls->v[i];
        if (!keeps_busy(gpu, l))
            continue;
        o[n].layout = l;
        o[n].reconfig = !fatia_mig_layout_equal(l, &gpu->current);
        have_current |= !o[n].reconfig;
        layout_supply(gpu, &pc->pd, l, o[n].v, &o[n].stranded);
        n++;
    }
    if (!have_current) { /* the current layout is reality, even if our rules dislike it */
        o[n].layout = &gpu->current;
        o[n].reconfig = 0;
        layout_supply(gpu, &pc->pd, &gpu->current, o[n].v, &o[n].stranded);
        n++;
    }
    qsort(o, n, sizeof(*o), cmp_opt);
    for (size_t i = 0; i < n; i++)
        if (w == 0 || memcmp(o[i].v, o[w - 1].v, sizeof(o[i].v)) != 0)
            o[w++] = o[i];
    pc->opts[gi] = o;
    pc->n_opts[gi] = w;
    return 0;
}

struct dp_entry {
    uint64_t key;
    uint64_t stranded;
    uint32_t reconfig;
    uint32_t prev; /* entry index in the previous stage; UINT32_MAX at stage 0 */
    uint32_t opt;
};

struct dp_table {
    uint32_t *slot; /* entry index + 1; 0 = empty */
    size_t cap;
};

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

/* Doubles the table and re-inserts the entries [begin, end) of the stage being built. */
static int dp_grow(struct dp_table *t, const struct dp_entry *e, size_t begin, size_t end)
{
    size_t cap = t->cap * 2;
    uint32_t *slot = fatia_calloc(cap, sizeof(*slot));

    if (!slot)
        return -ENOMEM;
    for (size_t i = begin; i < end; i++) {
        uint64_t h = mix64(e[i].key) & (cap - 1);
        while (slot[h])
            h = (h + 1) & (cap - 1);
        slot[h] = (uint32_t)(i + 1);
    }
    fatia_free(t->slot);
    t->slot = slot;
    t->cap = cap;
    return 0;
}

static bool better(uint32_t r1, uint64_t s1, uint32_t r2, uint64_t s2)
{
    return r1 < r2 || (r1 == r2 && s1 < s2);
}

/* Solves GPUs [0, n) of gpus against demand d (capped counts) exactly. -E2BIG when the state
 * space passes the budget. Writes the chosen option per GPU and the served count per demand. */
static int dp_solve(struct pool_ctx *pc, size_t first, size_t n, const uint32_t *d,
                    bool bounded_only, uint32_t *ret_opt, uint32_t *ret_served)
{
    const struct pool_demand *pd = &pc->pd;
    uint64_t mult[FATIA_MIG_MAX_PROFILES], radix_prod = 1;
    uint32_t cap[FATIA_MIG_MAX_PROFILES];
    FATIA_VEC(struct dp_entry) e = {0};
    struct dp_table t = {0};
    size_t stage_begin = 0, stage_end;
    int r = 0;

    for (size_t j = 0; j < pd->n; j++) {
        uint64_t most = 0;
        for (size_t g = first; g < first + n; g++) {
            uint32_t mx = 0;
            for (size_t k = 0; k < pc->n_opts[g]; k++)
                mx = FATIA_MAX(mx, pc->opts[g][k].v[j]);
            most += mx;
        }
        cap[j] = (uint32_t)FATIA_MIN((uint64_t)d[j], most);
        mult[j] = radix_prod;
        if (radix_prod > (UINT64_C(1) << 62) / (cap[j] + 1))
            return -E2BIG;
        radix_prod *= cap[j] + 1;
    }
    /* Past POOL_CHUNK GPUs, try the exact DP only when its state space is bounded by the
     * budget: finding out the hard way costs seconds on large pools. */
    if (bounded_only && radix_prod > POOL_STAGE_BUDGET)
        return -E2BIG;
    if (FATIA_VEC_PUSH(&e, ((struct dp_entry){0, 0, 0, UINT32_MAX, 0})) < 0)
        return -ENOMEM;
    stage_end = 1;
    for (size_t g = first; g < first + n; g++) {
        if (t.cap == 0) {
            t.cap = 1024;
            t.slot = fatia_calloc(t.cap, sizeof(*t.slot));
            if (!t.slot) {
                r = -ENOMEM;
                goto out;
            }
        } else {
            memset(t.slot, 0, t.cap * sizeof(*t.slot));
        }
        for (size_t si = stage_begin; si < stage_end; si++) {
            uint32_t c[FATIA_MIG_MAX_PROFILES];
            uint64_t k = e.v[si].key;
            for (size_t j = pd->n; j-- > 0;) {
                c[j] = (uint32_t)(k / mult[j]);
                k %= mult[j];
            }
            for (size_t oi = 0; oi < pc->n_opts[g]; oi++) {
                const struct pool_opt *o = &pc->opts[g][oi];
                uint64_t key = 0, stranded = e.v[si].stranded + o->stranded, h;
                uint32_t reconfig = e.v[si].reconfig + o->reconfig;
                for (size_t j = 0; j < pd->n; j++) {
                    uint32_t sum = c[j] + o->v[j], nc = FATIA_MIN(sum, cap[j]);
                    stranded += (uint64_t)(sum - nc) * pd->m[j];
                    key += nc * mult[j];
                }
                for (h = mix64(key) & (t.cap - 1);; h = (h + 1) & (t.cap - 1)) {
                    uint32_t idx = t.slot[h];
                    if (!idx) {
                        if (e.n - stage_end >= POOL_STAGE_BUDGET) {
                            r = -E2BIG;
                            goto out;
                        }
                        if (FATIA_VEC_PUSH(&e, ((struct dp_entry){key, stranded, reconfig,
                                                                  (uint32_t)si, (uint32_t)oi})) <
                            0) {
                            r = -ENOMEM;
                            goto out;
                        }
                        t.slot[h] = (uint32_t)e.n;
                        if (2 * (e.n - stage_end) > t.cap) {
                            r = dp_grow(&t, e.v, stage_end, e.n);
                            if (r < 0)
                                goto out;
                        }
                        break;
                    }
                    if (e.v[idx - 1].key == key) {
                        struct dp_entry *x = &e.v[idx - 1];
                        if (better(reconfig, stranded, x->reconfig, x->stranded)) {
                            x->reconfig = reconfig;
                            x->stranded = stranded;
                            x->prev = (uint32_t)si;
                            x->opt = (uint32_t)oi;
                        }
                        break;
                    }
                }
            }
        }
        stage_begin = stage_end;
        stage_end = e.n;
    }
    {
        size_t best = SIZE_MAX;
        uint64_t bw = 0, bn = 0;
        for (size_t si = stage_begin; si < stage_end; si++) {
            uint64_t k = e.v[si].key, w = 0, cnt = 0;
            for (size_t j = pd->n; j-- > 0;) {
                uint64_t cj = k / mult[j];
                k %= mult[j];
                w += cj * pd->w[j];
                cnt += cj;
            }
            if (best == SIZE_MAX || w > bw || (w == bw && cnt > bn) ||
                (w == bw && cnt == bn &&
                 (better(e.v[si].reconfig, e.v[si].stranded, e.v[best].reconfig,
                         e.v[best].stranded) ||
                  (e.v[si].reconfig == e.v[best].reconfig &&
                   e.v[si].stranded == e.v[best].stranded && e.v[si].key < e.v[best].key)))) {
                best = si;
                bw = w;
                bn = cnt;
            }
        }
        {
            uint64_t k = e.v[best].key;
            for (size_t j = pd->n; j-- > 0;) {
                ret_served[j] = (uint32_t)(k / mult[j]);
                k %= mult[j];
            }
        }
        for (size_t g = first + n, si = best; g-- > first;) {
            ret_opt[g] = e.v[si].opt;
            si = e.v[si].prev;
        }
    }
out:
    fatia_free(t.slot);
    FATIA_VEC_RELEASE(&e);
    return r;
}

void fatia_mig_pool_result_release(struct fatia_mig_pool_result *r)
{
    if (!r)
        return;
    fatia_free(r->layouts);
    fatia_free(r->changed);
    fatia_free(r->served);
    memset(r, 0, sizeof(*r));
}

int fatia_mig_plan_pool(const struct fatia_mig_pool_gpu *gpus, size_t n_gpus,
                        const struct fatia_mig_demand *demand, size_t n_demand,
                        struct fatia_mig_pool_result *ret)
{
    struct pool_ctx pc;
    struct fatia_mig_pool_result res = {0};
    uint32_t *choice = NULL, rem[FATIA_MIG_MAX_PROFILES], served[FATIA_MIG_MAX_PROFILES];
    int r;

    memset(&pc, 0, sizeof(pc));
    pc.gpus = gpus;
    pc.n_gpus = n_gpus;
    r = pool_demand_init(&pc.pd, gpus, n_gpus, demand, n_demand);
    if (r < 0)
        return r;
    pc.cache = fatia_calloc(n_gpus + 1, sizeof(*pc.cache));
    pc.opts = fatia_calloc(n_gpus + 1, sizeof(*pc.opts));
    pc.n_opts = fatia_calloc(n_gpus + 1, sizeof(*pc.n_opts));
    choice = fatia_calloc(n_gpus + 1, sizeof(*choice));
    res.layouts = fatia_calloc(n_gpus + 1, sizeof(*res.layouts));
    res.changed = fatia_calloc(n_gpus + 1, sizeof(*res.changed));
    res.served = fatia_calloc(n_demand + 1, sizeof(*res.served));
    if (!pc.cache || !pc.opts || !pc.n_opts || !choice || !res.layouts || !res.changed ||
        !res.served) {
        r = -ENOMEM;
        goto out;
    }
    for (size_t g = 0; g < n_gpus; g++) {
        r = build_options(&pc, g);
        if (r < 0)
            goto out;
    }
    for (size_t j = 0; j < pc.pd.n; j++)
        rem[j] = pc.pd.count[j];
    res.exact = true;
    r = dp_solve(&pc, 0, n_gpus, rem, n_gpus > POOL_CHUNK, choice, served);
    if (r == -E2BIG) {
        /* too large to solve at once: exact chunks of POOL_CHUNK GPUs, in order */
        res.exact = false;
        for (size_t first = 0; first < n_gpus; first += POOL_CHUNK) {
            size_t n = FATIA_MIN((size_t)POOL_CHUNK, n_gpus - first);
            r = dp_solve(&pc, first, n, rem, false, choice, served);
            if (r < 0)
                goto out;
            for (size_t j = 0; j < pc.pd.n; j++)
                rem[j] -= served[j];
        }
    }
    if (r < 0)
        goto out;
    for (size_t g = 0; g < n_gpus; g++) {
        res.layouts[g] = *pc.opts[g][choice[g]].layout;
        res.changed[g] = pc.opts[g][choice[g]].reconfig != 0;
    }
    r = fatia_mig_pool_evaluate(gpus, n_gpus, demand, n_demand, res.layouts, &res.score);
    if (r < 0)
        goto out;
    /* served per caller's demand entry: hand out each profile's supply in entry order */
    {
        uint32_t left[FATIA_MIG_MAX_PROFILES] = {0};
        for (size_t g = 0; g < n_gpus; g++) {
            uint8_t v[FATIA_MIG_MAX_PROFILES];
            uint64_t st;
            layout_supply(&gpus[g], &pc.pd, &res.layouts[g], v, &st);
            for (size_t j = 0; j < pc.pd.n; j++)
                left[j] += v[j];
        }
        for (size_t i = 0; i < n_demand; i++) {
            for (size_t j = 0; j < pc.pd.n; j++) {
                if (demand[i].profile && !strcmp(demand[i].profile, pc.pd.name[j])) {
                    res.served[i] = FATIA_MIN(left[j], demand[i].count);
                    left[j] -= res.served[i];
                }
            }
        }
    }
    *ret = res;
    memset(&res, 0, sizeof(res));
out:
    for (size_t i = 0; pc.cache && i < pc.n_cache; i++)
        fatia_mig_layouts_release(&pc.cache[i].layouts);
    for (size_t g = 0; pc.opts && g < n_gpus; g++)
        fatia_free(pc.opts[g]);
    fatia_free(pc.cache);
    fatia_free(pc.opts);
    fatia_free(pc.n_opts);
    fatia_free(choice);
    fatia_mig_pool_result_release(&res);
    return r;
}
