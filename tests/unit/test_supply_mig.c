/*
 * tests/unit/test_supply_mig.c: the MIG planner against the catalog's real geometries.
 *
 *   - layout enumeration equals an independent enumeration of every subset of placements;
 *   - fatia_mig_place: the known full layouts of every MIG product place, and invalid layouts of
 *     every MIG product are rejected with the right reason (placements, instance limit, compute
 *     slices, memory slices, unknown profile);
 *   - named configs (all-balanced, all-<profile>, all-<profile>.me) per product;
 *   - the pool planner equals a brute-force optimum on random pools of 1 to 4 GPUs (random
 *     current layouts, busy instances and demand): the brute force enumerates, per GPU, every
 *     valid layout by subsets, and tries every combination of per-GPU supply vectors. Built a
 *     second time with MIG_SLOW for the slow tier: 10x the random pools, and 4-GPU H200 pools
 *     with all 7 profiles demanded.
 */
#include "base/compat.h"

/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "base/error.h"
#include "supply/catalog.h"
#include "supply/mig.h"

static struct fatia_catalog cat;

static int setup(void **state)
{
    struct fatia_diag d;

    (void)state;
    fatia_diag_init(&d);
    fatia_catalog_init(&cat);
    if (fatia_catalog_load(&cat, FATIA_SOURCE_DIR "/data/gpus", &d) < 0) {
        fatia_diag_print(&d, stderr);
        return -1;
    }
    fatia_diag_release(&d);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fatia_catalog_release(&cat);
    return 0;
}

static const struct fatia_gpu_model *model(const char *name)
{
    const struct fatia_gpu_model *m = fatia_catalog_find(&cat, name);

    assert_non_null(m);
    return m;
}

static void counts_of(const struct fatia_mig_geom *g, uint8_t *counts, const char *spec)
{
    /* "3g.71gb=1,2g.35gb=1" */
    char buf[256], *save = NULL;

    memset(counts, 0, FATIA_MIG_MAX_PROFILES);
    snprintf(buf, sizeof(buf), "%s", spec);
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        const struct fatia_mig_profile *p;
        assert_non_null(eq);
        *eq = '\0';
        p = fatia_mig_geom_find(g, tok);
        if (!p)
            fail_msg("no profile %s", tok);
        counts[p - g->profiles] = (uint8_t)strtoul(eq + 1, NULL, 10);
    }
}

/* ---- independent enumeration: every subset of the (profile, start) placements ---- */

struct flat {
    const struct fatia_mig_profile *p[64];
    uint8_t s[64];
    unsigned n;
};

static void flatten(const struct fatia_mig_geom *g, struct flat *f)
{
    f->n = 0;
    for (size_t i = 0; i < g->n_profiles; i++)
        for (unsigned s = 0; s < g->profiles[i].n_starts; s++) {
            f->p[f->n] = &g->profiles[i];
            f->s[f->n++] = g->profiles[i].starts[s];
        }
}

static bool subset_valid(const struct fatia_mig_geom *g, const struct flat *f, uint64_t bits)
{
    uint32_t used = 0;
    unsigned count[FATIA_MIG_MAX_PROFILES] = {0}, compute = 0, me_all = 0, not_no_me = 0;

    for (unsigned i = 0; i < f->n; i++) {
        uint32_t m;
        if (!(bits >> i & 1))
            continue;
        m = ((1u << f->p[i]->memory_slices) - 1) << f->s[i];
        if (used & m)
            return false;
        used |= m;
        if (++count[f->p[i] - g->profiles] > f->p[i]->max_instances)
            return false;
        compute += f->p[i]->compute_slices;
        me_all += strstr(f->p[i]->name, "+me.all") != NULL;
        not_no_me += strstr(f->p[i]->name, "-me") == NULL;
    }
    return compute <= g->compute_slices && !(me_all && not_no_me > 1);
}

/* Calls fn for every valid subset; returns how many. Prunes on overlap as it goes. */
static size_t
subsets(const struct fatia_mig_geom *g, const struct flat *f, unsigned i, uint64_t bits,
        uint32_t used,
        void (*fn)(void *, const struct fatia_mig_geom *, const struct flat *, uint64_t), void *arg)
{
    size_t n = 0;
    uint32_t m;

    if (i == f->n) {
        if (!subset_valid(g, f, bits))
            return 0;
        if (fn)
            fn(arg, g, f, bits);
        return 1;
    }
    n += subsets(g, f, i + 1, bits, used, fn, arg);
    m = ((1u << f->p[i]->memory_slices) - 1) << f->s[i];
    if (!(used & m))
        n += subsets(g, f, i + 1, bits | (1ull << i), used | m, fn, arg);
    return n;
}

static void test_enumeration(void **state)
{
    static const char *const products[] = {"H200",      "H100-80GB", "H100-NVL",
                                           "A100-40GB", "A100-80GB", "A30"};

    (void)state;
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(products); i++) {
        const struct fatia_mig_geom *g = model(products[i])->mig;
        struct fatia_mig_layouts ls;
        struct flat f;
        char why[256];
        assert_non_null(g);
        flatten(g, &f);
        assert_int_equal(fatia_mig_enumerate(g, &ls), 0);
        assert_int_equal(ls.n, subsets(g, &f, 0, 0, 0, NULL, NULL));
        for (size_t k = 0; k < ls.n; k++)
            assert_int_equal(fatia_mig_layout_check(g, products[i], &ls.v[k], why, sizeof(why)), 0);
        fatia_mig_layouts_release(&ls);
    }
    /* the H200 count also matches a separate Python enumeration made when designing this */
    {
        struct fatia_mig_layouts ls;
        assert_int_equal(fatia_mig_enumerate(model("H200")->mig, &ls), 0);
        assert_int_equal(ls.n, 2319);
        fatia_mig_layouts_release(&ls);
    }
}

/* ---- placing layouts ---- */

struct place_case {
    const char *product;
    const char *counts;
    const char *want; /* "start:profile ..." or NULL when it must fail */
    const char *why;  /* substring of the reason when it fails */
};

static const struct place_case place_cases[] = {
    /* valid full layouts (MIG UG examples and the operator's configs) */
    {"H200", "3g.71gb=1,2g.35gb=1,1g.18gb=2", "0:2g.35gb 2:1g.18gb 3:1g.18gb 4:3g.71gb", NULL},
    {"H200", "4g.71gb=1,3g.71gb=1", "0:4g.71gb 4:3g.71gb", NULL},
    {"H200", "1g.18gb=7", "0:1g.18gb 1:1g.18gb 2:1g.18gb 3:1g.18gb 4:1g.18gb 5:1g.18gb 6:1g.18gb",
     NULL},
    {"H200", "1g.35gb=4", "0:1g.35gb 2:1g.35gb 4:1g.35gb 6:1g.35gb", NULL},
    {"H200", "2g.35gb=3,1g.18gb=1", "0:2g.35gb 2:2g.35gb 4:2g.35gb 6:1g.18gb", NULL},
    {"H200", "7g.141gb=1", "0:7g.141gb", NULL},
    /* a lone 3g goes high, leaving 0-3 open for a 4g later */
    {"H200", "3g.71gb=1", "4:3g.71gb", NULL},
    {"H100-80GB", "3g.40gb=1,2g.20gb=1,1g.10gb=2", "0:2g.20gb 2:1g.10gb 3:1g.10gb 4:3g.40gb", NULL},
    {"H100-NVL", "3g.47gb=2", "0:3g.47gb 4:3g.47gb", NULL},
    {"A100-40GB", "3g.20gb=1,2g.10gb=1,1g.5gb=2", "0:2g.10gb 2:1g.5gb 3:1g.5gb 4:3g.20gb", NULL},
    {"A100-80GB", "1g.10gb=7",
     "0:1g.10gb 1:1g.10gb 2:1g.10gb 3:1g.10gb 4:1g.10gb 5:1g.10gb "
     "6:1g.10gb",
     NULL},
    {"A30", "2g.12gb=1,1g.6gb=2", "0:2g.12gb 2:1g.6gb 3:1g.6gb", NULL},
    {"A30", "4g.24gb=1", "0:4g.24gb", NULL},
    /* invalid, one reason each, for every MIG product */
    {"H200", "4g.71gb=2", NULL, "2 x 4g.71gb: NVIDIA H200 has one 4g placement (start 0)"},
    {"H200", "3g.71gb=3", NULL, "3 x 3g.71gb: NVIDIA H200 has 2 3g placements (starts 0, 4)"},
    {"H200", "1g.18gb+me=2", NULL, "allows at most 1 instance of 1g.18gb+me"},
    {"H200", "3g.71gb=2,1g.18gb=1", NULL, "2 x 3g.71gb: needs 9 memory slices; NVIDIA H200 has 8"},
    {"H200", "4g.71gb=1,2g.35gb=2", NULL, "needs 8 compute slices; NVIDIA H200 has 7"},
    {"H200", "1g.35gb=4,1g.18gb=1", NULL, "needs 9 memory slices; NVIDIA H200 has 8"},
    {"H200", "7g.141gb=1,1g.18gb=1", NULL, "needs 8 compute slices"},
    {"H100-80GB", "4g.40gb=2", NULL, "2 x 4g.40gb: NVIDIA H100 80GB HBM3 has one 4g placement"},
    {"H100-80GB", "2g.20gb=4", NULL, "has 3 2g placements (starts 0, 2, 4)"},
    {"H100-NVL", "1g.12gb+me=2", NULL, "allows at most 1 instance of 1g.12gb+me"},
    {"H100-NVL", "1g.24gb=4,1g.12gb=1", NULL, "needs 9 memory slices"},
    {"A100-40GB", "7g.40gb=2", NULL, "has one 7g placement (start 0)"},
    {"A100-40GB", "3g.20gb=1,4g.20gb=1,1g.5gb=1", NULL, "needs 8 compute slices"},
    {"A100-80GB", "1g.10gb=8", NULL, "8 x 1g.10gb: NVIDIA A100-SXM4-80GB has 7 1g placements"},
    {"A30", "2g.12gb=3", NULL, "3 x 2g.12gb: NVIDIA A30 has 2 2g placements (starts 0, 2)"},
    {"A30", "4g.24gb=1,1g.6gb=1", NULL, "needs 5 compute slices; NVIDIA A30 has 4"},
    {"A30", "2g.12gb+me=2", NULL, "allows at most 1 instance of 2g.12gb+me"},
    {"A30", "1g.6gb+me=1,1g.6gb=4", NULL, "needs 5 compute slices"},
};

static void layout_text(const struct fatia_mig_layout *l, char *buf, size_t n)
{
    size_t len = 0;

    buf[0] = '\0';
    for (unsigned i = 0; i < l->n && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%u:%s", i ? " " : "", l->v[i].start,
                                l->v[i].profile->name);
}

static void test_place(void **state)
{
    (void)state;
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(place_cases); i++) {
        const struct place_case *c = &place_cases[i];
        const struct fatia_gpu_model *m = model(c->product);
        uint8_t counts[FATIA_MIG_MAX_PROFILES];
        struct fatia_mig_layout l;
        char why[256] = "", text[512];
        int r;

        counts_of(m->mig, counts, c->counts);
        r = fatia_mig_place(m->mig, m->product, counts, NULL, &l, why, sizeof(why));
        if (c->want) {
            if (r != 0)
                fail_msg("%s %s: %s", c->product, c->counts, why);
            layout_text(&l, text, sizeof(text));
            if (strcmp(text, c->want))
                fail_msg("%s %s: got %s, want %s", c->product, c->counts, text, c->want);
        } else {
            if (r != -FATIA_E_NOFIT)
                fail_msg("%s %s: placed, want failure '%s'", c->product, c->counts, c->why);
            if (!strstr(why, c->why))
                fail_msg("%s %s: reason '%s' lacks '%s'", c->product, c->counts, why, c->why);
        }
    }
}

static void test_prefer_keeps_current(void **state)
{
    const struct fatia_gpu_model *m = model("H200");
    struct fatia_mig_layout cur = {0}, out;
    uint8_t counts[FATIA_MIG_MAX_PROFILES];
    char why[256];

    (void)state;
    /* an existing 3g at 0 and 2g at 4: asking for the same multiset keeps it */
    cur.n = 2;
    cur.v[0] = (struct fatia_mig_placement){fatia_mig_geom_find(m->mig, "3g.71gb"), 0};
    cur.v[1] = (struct fatia_mig_placement){fatia_mig_geom_find(m->mig, "2g.35gb"), 4};
    counts_of(m->mig, counts, "3g.71gb=1,2g.35gb=1");
    assert_int_equal(fatia_mig_place(m->mig, m->product, counts, &cur, &out, why, sizeof(why)), 0);
    assert_true(fatia_mig_layout_equal(&cur, &out));
    /* a different multiset is placed afresh */
    counts_of(m->mig, counts, "3g.71gb=1");
    assert_int_equal(fatia_mig_place(m->mig, m->product, counts, &cur, &out, why, sizeof(why)), 0);
    assert_int_equal(out.n, 1);
    assert_int_equal(out.v[0].start, 4);
}

struct named_case {
    const char *product, *config, *counts; /* counts NULL: must fail with why */
    const char *why;
};

static const struct named_case named_cases[] = {
    {"H200", "all-balanced", "1g.18gb=2,2g.35gb=1,3g.71gb=1", NULL},
    {"H100-80GB", "all-balanced", "1g.10gb=2,2g.20gb=1,3g.40gb=1", NULL},
    {"H100-NVL", "all-balanced", "1g.12gb=2,2g.24gb=1,3g.47gb=1", NULL},
    {"A100-40GB", "all-balanced", "1g.5gb=2,2g.10gb=1,3g.20gb=1", NULL},
    {"A100-80GB", "all-balanced", "1g.10gb=2,2g.20gb=1,3g.40gb=1", NULL},
    {"A30", "all-balanced", "1g.6gb=2,2g.12gb=1", NULL},
    {"H200", "all-1g.18gb", "1g.18gb=7", NULL},
    {"H200", "all-1g.18gb.me", "1g.18gb+me=1", NULL},
    {"H200", "all-3g.71gb", "3g.71gb=2", NULL},
    {"A30", "all-2g.12gb", "2g.12gb=2", NULL},
    {"H200", "all-1g.10gb", NULL, "\"1g.10gb\" names no MIG profile of NVIDIA H200"},
    {"A30", "half-and-half", NULL, "unknown named config \"half-and-half\""},
};

static void test_named(void **state)
{
    (void)state;
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(named_cases); i++) {
        const struct named_case *c = &named_cases[i];
        const struct fatia_gpu_model *m = model(c->product);
        uint8_t got[FATIA_MIG_MAX_PROFILES], want[FATIA_MIG_MAX_PROFILES];
        bool enabled;
        char why[256] = "";
        int r =
            fatia_mig_named_config(m->mig, m->product, c->config, got, &enabled, why, sizeof(why));
        if (!c->counts) {
            assert_int_equal(r, -FATIA_E_NOFIT);
            if (!strstr(why, c->why))
                fail_msg("%s %s: '%s' lacks '%s'", c->product, c->config, why, c->why);
            continue;
        }
        assert_int_equal(r, 0);
        assert_true(enabled);
        counts_of(m->mig, want, c->counts);
        if (memcmp(got, want, sizeof(got)))
            fail_msg("%s %s: wrong counts", c->product, c->config);
    }
    {
        uint8_t got[FATIA_MIG_MAX_PROFILES];
        bool enabled = true;
        char why[64];
        assert_int_equal(fatia_mig_named_config(NULL, "Tesla T4", "all-disabled", got, &enabled,
                                                why, sizeof(why)),
                         0);
        assert_false(enabled);
        assert_int_equal(fatia_mig_named_config(NULL, "Tesla T4", "all-balanced", got, &enabled,
                                                why, sizeof(why)),
                         -FATIA_E_NOFIT);
        assert_string_equal(why, "Tesla T4 does not support MIG");
    }
}

/* ---- pool planner vs brute force ---- */

static uint64_t rng = 88172645463325252ull;

static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

struct collect {
    struct fatia_mig_layout *v;
    size_t n, cap;
};

static void collect_fn(void *arg, const struct fatia_mig_geom *g, const struct flat *f,
                       uint64_t bits)
{
    struct collect *c = arg;
    struct fatia_mig_layout l = {0};

    (void)g;
    for (unsigned i = 0; i < f->n; i++)
        if (bits >> i & 1) {
            l.v[l.n].profile = f->p[i];
            l.v[l.n++].start = f->s[i];
        }
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 1024;
        c->v = realloc(c->v, c->cap * sizeof(*c->v));
        assert_non_null(c->v);
    }
    c->v[c->n++] = l;
}

/* A brute-force option: a supply vector over the demanded profiles with its best costs. */
struct bopt {
    uint32_t v[8];
    uint32_t reconfig;
    uint64_t stranded;
};

struct bf {
    size_t n_gpus, n_d;
    struct bopt *opt[4];
    size_t n_opt[4];
    uint32_t d[8], w[8], m[8];
    struct fatia_mig_pool_score best;
    bool have;
};

static bool same_layout(const struct fatia_mig_layout *a, const struct fatia_mig_layout *b)
{
    unsigned hit = 0;

    if (a->n != b->n)
        return false;
    for (unsigned i = 0; i < a->n; i++)
        for (unsigned j = 0; j < b->n; j++)
            hit += a->v[i].profile == b->v[j].profile && a->v[i].start == b->v[j].start;
    return hit == a->n;
}

static void bf_rec(struct bf *b, size_t g, const uint32_t *sum, uint32_t reconfig,
                   uint64_t stranded)
{
    if (g == b->n_gpus) {
        struct fatia_mig_pool_score s = {0, 0, reconfig, stranded};
        for (size_t j = 0; j < b->n_d; j++) {
            uint32_t served = sum[j] < b->d[j] ? sum[j] : b->d[j];
            s.served_slices += (uint64_t)served * b->w[j];
            s.served_instances += served;
            s.stranded_slices += (uint64_t)(sum[j] - served) * b->m[j];
        }
        if (!b->have || fatia_mig_pool_score_cmp(&s, &b->best) > 0) {
            b->best = s;
            b->have = true;
        }
        return;
    }
    for (size_t k = 0; k < b->n_opt[g]; k++) {
        uint32_t next[8];
        for (size_t j = 0; j < b->n_d; j++)
            next[j] = sum[j] + b->opt[g][k].v[j];
        bf_rec(b, g + 1, next, reconfig + b->opt[g][k].reconfig, stranded + b->opt[g][k].stranded);
    }
}

static void pool_case(const char *product, size_t n_gpus, size_t n_profiles_demanded)
{
    const struct fatia_mig_geom *g = model(product)->mig;
    struct fatia_mig_pool_gpu gpus[4];
    struct fatia_mig_demand demand[8];
    struct fatia_mig_pool_result res;
    struct fatia_mig_pool_score got;
    struct collect all = {0};
    struct flat f;
    struct bf b;
    uint32_t zero[8] = {0};

    memset(&b, 0, sizeof(b));
    flatten(g, &f);
    subsets(g, &f, 0, 0, 0, collect_fn, &all);
    /* distinct demanded profiles */
    b.n_d = n_profiles_demanded;
    for (size_t j = 0; j < b.n_d; j++) {
        const struct fatia_mig_profile *p;
        bool dup;
        do {
            p = &g->profiles[rnd((uint32_t)g->n_profiles)];
            dup = false;
            for (size_t k = 0; k < j; k++)
                dup |= !strcmp(demand[k].profile, p->name);
        } while (dup);
        demand[j].profile = p->name;
        demand[j].count = rnd(3 * (uint32_t)n_gpus + 2);
        b.d[j] = demand[j].count;
        b.w[j] = p->compute_slices;
        b.m[j] = p->memory_slices;
    }
    b.n_gpus = n_gpus;
    for (size_t i = 0; i < n_gpus; i++) {
        gpus[i].geom = g;
        gpus[i].current = all.v[rnd((uint32_t)all.n)];
        gpus[i].busy = 0;
        for (unsigned k = 0; k < gpus[i].current.n; k++)
            if (rnd(3) == 0)
                gpus[i].busy |= 1u << k;
        /* brute-force options of this GPU: every valid layout keeping the busy instances */
        b.opt[i] = calloc(all.n, sizeof(struct bopt));
        assert_non_null(b.opt[i]);
        for (size_t l = 0; l < all.n; l++) {
            const struct fatia_mig_layout *lay = &all.v[l];
            struct bopt o = {{0}, 0, 0};
            bool keeps = true;
            size_t k;
            for (unsigned c = 0; c < gpus[i].current.n; c++) {
                bool found = false;
                if (!(gpus[i].busy >> c & 1))
                    continue;
                for (unsigned x = 0; x < lay->n; x++)
                    found |= lay->v[x].profile == gpus[i].current.v[c].profile &&
                             lay->v[x].start == gpus[i].current.v[c].start;
                keeps &= found;
            }
            if (!keeps)
                continue;
            o.reconfig = !same_layout(lay, &gpus[i].current);
            for (unsigned x = 0; x < lay->n; x++) {
                bool busy = false, demanded = false;
                for (unsigned c = 0; c < gpus[i].current.n; c++)
                    busy |= (gpus[i].busy >> c & 1) &&
                            lay->v[x].profile == gpus[i].current.v[c].profile &&
                            lay->v[x].start == gpus[i].current.v[c].start;
                if (busy)
                    continue;
                for (size_t j = 0; j < b.n_d; j++)
                    if (!strcmp(demand[j].profile, lay->v[x].profile->name)) {
                        o.v[j]++;
                        demanded = true;
                    }
                if (!demanded)
                    o.stranded += lay->v[x].profile->memory_slices;
            }
            for (k = 0; k < b.n_opt[i]; k++)
                if (!memcmp(b.opt[i][k].v, o.v, sizeof(o.v)))
                    break;
            if (k == b.n_opt[i])
                b.opt[i][b.n_opt[i]++] = o;
            else if (o.reconfig < b.opt[i][k].reconfig ||
                     (o.reconfig == b.opt[i][k].reconfig && o.stranded < b.opt[i][k].stranded))
                b.opt[i][k] = o;
        }
    }
    bf_rec(&b, 0, zero, 0, 0);
    assert_true(b.have);

    assert_int_equal(fatia_mig_plan_pool(gpus, n_gpus, demand, b.n_d, &res), 0);
    assert_true(res.exact);
    assert_int_equal(fatia_mig_pool_evaluate(gpus, n_gpus, demand, b.n_d, res.layouts, &got), 0);
    if (fatia_mig_pool_score_cmp(&got, &b.best) != 0 ||
        fatia_mig_pool_score_cmp(&res.score, &b.best) != 0)
        fail_msg("%s x%zu: planner (%" PRIu64 ", %" PRIu64 ", %u, %" PRIu64
                 ") != brute force (%" PRIu64 ", %" PRIu64 ", %u, %" PRIu64 ")",
                 product, n_gpus, got.served_slices, got.served_instances, got.reconfigured,
                 got.stranded_slices, b.best.served_slices, b.best.served_instances,
                 b.best.reconfigured, b.best.stranded_slices);
    for (size_t i = 0; i < n_gpus; i++) {
        char why[256];
        /* every chosen layout is valid or is the untouched current layout */
        if (res.changed[i])
            assert_int_equal(fatia_mig_layout_check(g, product, &res.layouts[i], why, sizeof(why)),
                             0);
        free(b.opt[i]);
    }
    fatia_mig_pool_result_release(&res);
    free(all.v);
}

#ifdef MIG_SLOW
/* The slow tier (tests/supply/CMakeLists.txt builds this file again with MIG_SLOW): many more
 * random pools, and 4-GPU H200 pools with every profile demanded, the widest state space. */
#define POOL_ROUNDS 400
#else
#define POOL_ROUNDS 40
#endif

static void test_pool_vs_brute_force(void **state)
{
    static const char *const products[] = {"H200", "A30", "A100-40GB", "H100-80GB"};

    (void)state;
#ifdef MIG_SLOW
    for (int round = 0; round < 3; round++)
        pool_case("H200", 4, 7);
    for (int round = 0; round < 20; round++)
        pool_case("H100-NVL", 1 + rnd(4), 1 + rnd(5));
#endif
    for (int round = 0; round < POOL_ROUNDS; round++)
        for (size_t p = 0; p < FATIA_ARRAY_SIZE(products); p++) {
            size_t n_gpus = 1 + rnd(4);
            size_t n_prof = 1 + rnd(3);
            pool_case(products[p], n_gpus, n_prof);
        }
    /* every profile of an 8-slice GPU demanded at once, 3 GPUs (the widest state space) */
    for (int round = 0; round < 3; round++)
        pool_case("H200", 3, 7);
    for (int round = 0; round < 5; round++)
        pool_case("A30", 4, 5);
}

static void test_pool_basics(void **state)
{
    const struct fatia_mig_geom *g = model("H200")->mig;
    struct fatia_mig_pool_gpu gpus[2] = {{g, {0}, 0}, {g, {0}, 0}};
    struct fatia_mig_demand d[] = {{"3g.71gb", 2}, {"1g.18gb", 3}};
    struct fatia_mig_pool_result r;

    (void)state;
    /* GPU 1 is already 3g+3g: serving 2 x 3g there costs nothing; 1g x3 go on GPU 0 */
    gpus[1].current.n = 2;
    gpus[1].current.v[0] = (struct fatia_mig_placement){fatia_mig_geom_find(g, "3g.71gb"), 0};
    gpus[1].current.v[1] = (struct fatia_mig_placement){fatia_mig_geom_find(g, "3g.71gb"), 4};
    assert_int_equal(fatia_mig_plan_pool(gpus, 2, d, 2, &r), 0);
    assert_true(r.exact);
    assert_int_equal(r.served[0], 2);
    assert_int_equal(r.served[1], 3);
    assert_int_equal(r.score.served_slices, 2 * 3 + 3 * 1);
    assert_int_equal(r.score.reconfigured, 1);
    assert_int_equal(r.score.stranded_slices, 0);
    assert_false(r.changed[1]);
    fatia_mig_pool_result_release(&r);

    /* no demand: nothing changes */
    assert_int_equal(fatia_mig_plan_pool(gpus, 2, NULL, 0, &r), 0);
    assert_int_equal(r.score.reconfigured, 0);
    fatia_mig_pool_result_release(&r);
}

static void test_pool_large_falls_back(void **state)
{
    const struct fatia_mig_geom *g = model("H200")->mig;
    struct fatia_mig_pool_gpu gpus[64];
    struct fatia_mig_demand d[7];
    struct fatia_mig_pool_result r;

    (void)state;
    memset(gpus, 0, sizeof(gpus));
    for (size_t i = 0; i < 64; i++)
        gpus[i].geom = g;
    for (size_t i = 0; i < 7; i++)
        d[i] = (struct fatia_mig_demand){g->profiles[i].name, 40};
    assert_int_equal(fatia_mig_plan_pool(gpus, 64, d, 7, &r), 0);
    assert_false(r.exact);
    /* every GPU is used: 64 GPUs x 7 compute slices of demand can all be served */
    assert_int_equal(r.score.served_slices, 64 * 7);
    fatia_mig_pool_result_release(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_enumeration),           cmocka_unit_test(test_place),
        cmocka_unit_test(test_prefer_keeps_current),  cmocka_unit_test(test_named),
        cmocka_unit_test(test_pool_basics),           cmocka_unit_test(test_pool_vs_brute_force),
        cmocka_unit_test(test_pool_large_falls_back),
    };
    if (getenv("TEST_FILTER"))
        cmocka_set_test_filter(getenv("TEST_FILTER"));
    return cmocka_run_group_tests(tests, setup, teardown);
}
