/*
 * demand/place.c: placing the pods of one workload (gang), choosing nodes and slices by policy.
 *
 * Search. For each pod in order, every node is evaluated (eval_node): the filters (place_match.c),
 * the scalar resources, then the devices of each container in spec order, chosen one request at a
 * time with the counters of the choices before it applied (so two fractions of one pod never take
 * the same capacity twice), then a score; the node with the lowest score wins, ties going to the
 * node listed first. The winner is bound under a temporary key, so the next pod of the gang sees
 * it; when a pod finds no node, everything done for the gang is rolled back (the journal) and the
 * reason is reported in kube-scheduler's words ("0/3 nodes are available: 1 Insufficient
 * nvidia.com/gpu, 2 node(s) had untolerated taint {gpu: true}."). On success the journal is rolled
 * back too: the caller commits the result, or not.
 *
 * Device choice within a node, by policy (place.h): for a fraction, the GPU with the least
 * milli-GPUs left (bestfit), the touched GPU with the least left else the first untouched
 * (binpack), the most left (spread), or the least growth of the node's fragmentation (FGD). For k
 * whole GPUs (k > 1), one NVLink island that has k free: the tightest (binpack, bestfit), the
 * roomiest (spread), or the one whose k GPUs fragment least; without one, "required" fails and
 * "preferred" takes GPUs across islands. For slices (replicas, MPS shares, MIG instances), unit by
 * unit, on the GPU the policy prefers; MPS shares only on GPUs no other namespace uses. FGD
 * measures a unit's candidates only when there are two or more (GPUs of a fraction pool in the same
 * state count once): one is chosen whatever it measures, and the node is measured at the end.
 *
 * Scores (lower is better, compared in order):
 *   binpack        fresh GPUs touched, the node's free GPU capacity after, its free CPU after;
 *   bestfit        free capacity left on the chosen GPUs, then (free CPU / largest node CPU +
 *                  free GPU / largest node GPU) / 2 of the node after;
 *   spread         -(free GPU capacity after), -(free CPU after);
 *   fragmentation  growth of the node's F_n(M) (place_frag.c), or the FGD artifact's integer
 *                  score of it (FATIA_PLACE_FGD_SCORE); with FATIA_PLACE_FGD_PACK then the free
 *                  GPU capacity after, the free CPU after (fatia's improvement); with
 *                  FATIA_PLACE_FGD_SCARCE a GPU pod's first key is raised by SCARCE_WEIGHT x
 *                  the scarcity of the node's class (place_frag.c; it depends on every node, so
 *                  it is added after the memo of node answers, never kept in it); with
 *                  FATIA_PLACE_FGD_FIT its second key is the free capacity left on its GPUs.
 * Ties: the node listed first, or with opts.ties one drawn at random among the tied nodes.
 *
 * Dynamic MIG: when no node fits and the pod asks for MIG instances, nodes that pass the filters
 * and scalars are asked for a new layout (place_mig.c); the node with the fewest victims, then the
 * fewest GPUs re-laid, wins, and its changes enter the journal like binds do.
 *
 * Rejected: scoring all (node, GPU set) combinations (exponential in k), and a separate "filter"
 * pass over nodes before scoring (it would walk every node twice on a large fleet).
 */
#include "base/compat.h"

#include <math.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/hash.h"
#include "demand/place_internal.h"

#define MAX_REASONS 24

/* FATIA_PLACE_FGD_SCARCE: the weight of a node's scarcity (1 = its class is free in proportion to
 * the choosy types' demand on it) against the fragmentation key (the artifact's integer score:
 * 1 = about 40 milli-GPUs of growth). Chosen from 1, 4 and 16 on seed 42 of spec25 (docs/sim.md). */
#define SCARCE_WEIGHT 4.0

/* Why a node was turned away, kept unformatted (it is recorded for every node a pod cannot use,
 * so it must be cheap); the text is made only when a pod is not placed. */
enum why_code {
    WHY_TEXT,         /* arg is the whole text */
    WHY_INSUFFICIENT, /* "Insufficient <arg>" */
    WHY_MPS,          /* "had <arg> shares only on MPS GPUs another namespace uses" */
    WHY_NVLINK,       /* "had no NVLink island with <num> free <arg>" */
};

struct why {
    uint8_t code;
    bool node_prefix; /* "N node(s) <text>" rather than "N <text>" */
    const char *arg;  /* persistent: a static text, a resource name, a taint's description */
    uint32_t num;
};

struct reason {
    struct why w;
    size_t count;
    char *text; /* formatted at the end */
};

enum jtype {
    J_BIND,
    J_UNBIND,
    J_LAYOUT,
};

struct jentry {
    uint8_t type;
    char *key;    /* J_BIND: temp key; J_UNBIND: victim key */
    uint32_t gpu; /* J_LAYOUT */
    struct fatia_mig_layout old, now;
    struct pl_bind saved; /* J_UNBIND: what to bind back */
};

struct pl_ctx {
    struct fatia_place_state *st;
    enum fatia_place_policy policy;
    enum fatia_place_mig mig;
    struct fatia_place_mix *mix;
    unsigned flags;            /* FATIA_PLACE_FGD_SCORE */
    uint64_t *ties;            /* opts->ties */
    uint32_t n_ties;           /* nodes with the best score so far */
    double frag0;              /* F_n of the node being evaluated, before the pod (fgd) */
    const struct pl_gpu *snap; /* its GPUs before the pod (fraction pools only), or NULL */
    const struct fatia_place_pod *pod;
    FATIA_VEC(struct pl_item) items;
    FATIA_VEC(struct pl_item) best;
    double score[3], best_score[3];
    int64_t best_node;
    /* the fragmentation score of a pod's single fraction, computed while choosing */
    bool one_frag_valid;
    double one_frag;
    struct why why; /* why the current node failed */
    struct reason reasons[MAX_REASONS];
    size_t n_reasons;
    size_t n_other;
    FATIA_VEC(struct jentry) journal;
    uint64_t tmp_seq;
    /* claims: of the node being evaluated, of the best node, and per placed pod of the gang */
    json_t *claim_json, *best_claims;
    json_t **pod_claims;

    /* named claims the gang allocated so far: their node */
    struct {
        const char *claim;
        uint32_t node;
    } shared[32];

    size_t n_shared;
};

/* A node in a given state gives a given pod the same answer every time: a cache of answers keyed
 * by (node state, pod shape, namespace, policy) saves evaluating the many nodes that are alike
 * (empty nodes of one pool) or unchanged since the last pod of that shape. The node state is
 * its class and every counter (node_sig, cached per node until it changes); the fragmentation
 * policy's answers also depend on the request mix, so they are keyed by the pod too (an epoch)
 * and only deduplicate equal nodes within one pod (unless the mix is frozen). Direct-mapped, 64
 * entries per node between MEMO_MIN and MEMO_MAX, in the state (st->memo); a colliding entry is
 * overwritten; a later node's entry is prefetched (the table outgrows the caches). */
#define MEMO_ITEMS 4
#define MEMO_MIN   32768 /* entries; 64 per node up to MEMO_MAX (28 MiB at about 216 bytes) */
#define MEMO_MAX   131072
#define MEMO_AHEAD 8 /* nodes ahead whose entry is prefetched */

struct memo {
    uint64_t key;
    int8_t fits;
    uint8_t n_items;
    struct why why;
    double score[3];
    struct pl_item items[MEMO_ITEMS]; /* gpu relative to the node's first */
};

/* ---- reasons ---- */

static void fail_node(struct pl_ctx *c, bool node_prefix, uint8_t code, const char *arg,
                      uint32_t num)
{
    c->why = (struct why){code, node_prefix, arg, num};
}

static void count_reason(struct pl_ctx *c)
{
    for (size_t i = 0; i < c->n_reasons; i++) {
        const struct why *w = &c->reasons[i].w;
        if (w->code == c->why.code && w->node_prefix == c->why.node_prefix &&
            w->num == c->why.num &&
            (w->arg == c->why.arg || (w->code == WHY_TEXT && !strcmp(w->arg, c->why.arg)))) {
            c->reasons[i].count++;
            return;
        }
    }
    if (c->n_reasons == MAX_REASONS) {
        c->n_other++;
        return;
    }
    c->reasons[c->n_reasons].w = c->why;
    c->reasons[c->n_reasons].count = 1;
    c->reasons[c->n_reasons].text = NULL;
    c->n_reasons++;
}

static void clear_reasons(struct pl_ctx *c)
{
    for (size_t i = 0; i < c->n_reasons; i++)
        fatia_free(c->reasons[i].text);
    c->n_reasons = 0;
    c->n_other = 0;
}

static char *why_text(const struct why *w)
{
    switch (w->code) {
    case WHY_INSUFFICIENT:
        return fatia_pl_strprintf("Insufficient %s", w->arg);
    case WHY_MPS:
        return fatia_pl_strprintf("had %s shares only on MPS GPUs another namespace uses", w->arg);
    case WHY_NVLINK:
        return fatia_pl_strprintf("had no NVLink island with %" PRIu32 " free %s", w->num, w->arg);
    default:
        return fatia_strdup(w->arg);
    }
}

static int cmp_reason(const void *a, const void *b)
{
    const struct reason *x = a, *y = b;
    return strcmp(x->text ? x->text : "", y->text ? y->text : "");
}

/* "0/N nodes are available: ..." */
static char *format_reasons(struct pl_ctx *c, size_t pod, size_t n_pods)
{
    struct fatia_buf b;
    char *s;

    for (size_t i = 0; i < c->n_reasons; i++)
        if (!(c->reasons[i].text = why_text(&c->reasons[i].w)))
            return NULL;
    fatia_buf_init(&b, 8192);
    if (n_pods > 1)
        fatia_buf_printf(&b, "pod %zu of %zu: ", pod + 1, n_pods);
    fatia_buf_printf(&b, "0/%zu nodes are available", c->st->n_nodes);
    if (c->n_reasons)
        qsort(c->reasons, c->n_reasons, sizeof(*c->reasons), cmp_reason);
    for (size_t i = 0; i < c->n_reasons; i++)
        fatia_buf_printf(&b, "%s%zu %s%s", i ? ", " : ": ", c->reasons[i].count,
                         c->reasons[i].w.node_prefix ? "node(s) " : "", c->reasons[i].text);
    if (c->n_other)
        fatia_buf_printf(&b, ", %zu for other reasons", c->n_other);
    fatia_buf_puts(&b, ".");
    s = fatia_buf_steal(&b);
    fatia_buf_release(&b);
    return s;
}

/* ---- choosing devices on a node ---- */

static int push_apply(struct pl_ctx *c, const struct pl_item *it)
{
    if (FATIA_VEC_PUSH(&c->items, *it) < 0)
        return -ENOMEM;
    fatia_pl_apply_items(c->st, c->st->gpus[it->gpu].node, it, 1, c->pod->ns, +1);
    return 0;
}

/* Reverts the counters of c->items (the list stays: take_best copies it). */
static void revert_items(struct pl_ctx *c)
{
    for (size_t i = c->items.n; i-- > 0;) {
        const struct pl_item *it = &c->items.v[i];
        fatia_pl_apply_items(c->st, c->st->gpus[it->gpu].node, it, 1, c->pod->ns, -1);
    }
}

static bool fgd(const struct pl_ctx *c)
{
    return c->policy == FATIA_PLACE_FRAGMENTATION && c->mix;
}

/* The key (lower is better) of a node or GPU whose F_n goes from c->frag0 to f: the growth, or
 * with FATIA_PLACE_FGD_SCORE minus the artifact's score, int(100 x sigmoid(-growth / 1000)). */
static double frag_key(const struct pl_ctx *c, double f)
{
    if (!(c->flags & FATIA_PLACE_FGD_SCORE))
        return f - c->frag0;
    return -floor(100.0 / (1.0 + exp((f - c->frag0) / 1000.0)));
}

static uint64_t tie_draw(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int64_t pod_scalar(const struct fatia_place_state *st, const struct fatia_place_pod *pod,
                          uint16_t res)
{
    (void)st;
    for (size_t i = 0; i < pod->n_scalars; i++)
        if (pod->scalars[i].res == res)
            return pod->scalars[i].milli;
    return 0;
}

static struct pl_item frac_item(const struct pl_gpu *g, uint32_t gi, const struct pl_frac *f)
{
    struct pl_item it = {0};
    uint64_t charge, cap;

    it.gpu = gi;
    it.slice = FATIA_PLACE_FRACTION;
    it.container = f->container;
    it.milli = f->milli >= 1000 ? 1000 : f->milli;
    fatia_pl_frac_charge(g, it.milli, f->memory, &charge, &cap);
    it.mem_charge = charge;
    it.memory = cap;
    if (f->milli < 1000) {
        int k = fatia_pl_first_free_fraction(g);
        it.fraction = (uint16_t)(k < 0 ? 0 : k);
    }
    return it;
}

static double frag_items(struct pl_ctx *c, uint32_t node, const struct pl_gpu *snap,
                         const struct pl_item *extra);

/* The fragmentation the node would show with `it` applied on top of the current items. */
static double frag_with(struct pl_ctx *c, uint32_t node, const struct pl_item *it)
{
    struct fatia_place_state *st = c->st;
    struct pl_gpu *g = &st->gpus[it->gpu];
    double f;

    /* the common case: the pod's only device is this one fraction: O(types) from the cache */
    if (!c->items.n && g->fractional && c->pod->n_fracs + c->pod->n_reqs == 1) {
        struct pl_gpu before = *g;
        fatia_pl_apply_items(st, node, it, 1, c->pod->ns, +1);
        f = fatia_pl_frag_node_one(c->mix, node, it->gpu, &before,
                                   pod_scalar(st, c->pod, st->r_cpu),
                                   pod_scalar(st, c->pod, st->r_memory));
        fatia_pl_apply_items(st, node, it, 1, c->pod->ns, -1);
        return f;
    }
    fatia_pl_apply_items(st, node, it, 1, c->pod->ns, +1);
    f = c->snap ? frag_items(c, node, c->snap, it) : fatia_pl_frag_node_now(c->mix, node);
    fatia_pl_apply_items(st, node, it, 1, c->pod->ns, -1);
    return f;
}

/* F_n with c->items (and extra, when not NULL) applied, every item a fraction (or whole GPUs) of
 * the node's fraction pools, snap the node's GPUs before them: O(groups x GPUs touched) from the cache, where
 * fatia_pl_frag_node_now is O(groups x GPUs) without it. */
static double frag_items(struct pl_ctx *c, uint32_t node, const struct pl_gpu *snap,
                         const struct pl_item *extra)
{
    const struct pl_node *nd = &c->st->nodes[node];
    uint32_t gis[16];
    struct pl_gpu before[16];
    size_t k = 0;

    for (size_t i = 0; i < c->items.n + (extra != NULL); i++) {
        const struct pl_item *it = i < c->items.n ? &c->items.v[i] : extra;
        uint32_t gi = it->gpu;
        bool seen = false;
        if (it->slice != FATIA_PLACE_FRACTION || gi < nd->first_gpu ||
            gi >= nd->first_gpu + nd->n_gpus)
            return fatia_pl_frag_node_now(c->mix, node);
        for (size_t j = 0; j < k && !seen; j++)
            seen = gis[j] == gi;
        if (seen)
            continue;
        if (k == FATIA_ARRAY_SIZE(gis))
            return fatia_pl_frag_node_now(c->mix, node);
        gis[k] = gi;
        before[k] = snap[gi - nd->first_gpu];
        k++;
    }
    return fatia_pl_frag_node_many(c->mix, node, gis, before, k,
                                   pod_scalar(c->st, c->pod, c->st->r_cpu));
}

/* Two GPUs whose choice cannot differ in outcome (same counters, no slices): skip the second. */
static bool same_frac_state(const struct pl_gpu *a, const struct pl_gpu *b)
{
    return a->fractional && b->fractional && a->milli_free == b->milli_free &&
           a->mem_free == b->mem_free && a->shares == b->shares && a->users == b->users &&
           a->mem_total == b->mem_total && a->max_shares == b->max_shares &&
           !memcmp(a->fmask, b->fmask, sizeof(a->fmask));
}

static int choose_fraction(struct pl_ctx *c, const struct pl_node *nd, uint32_t node,
                           const struct pl_frac *f)
{
    struct fatia_place_state *st = c->st;
    int64_t best = -1;
    double best_key[2] = {0, 0};
    double best_frag = 0;

    bool mem_short = false, shares_full = false;

    for (uint32_t i = 0; i < nd->n_gpus; i++) {
        uint32_t gi = nd->first_gpu + i;
        const struct pl_gpu *g = &st->gpus[gi];
        double key[2];
        bool dup = false;
        if (!fatia_pl_frac_fits(g, f)) {
            if (g->fractional && g->milli_free >= f->milli) {
                if (g->shares >= g->max_shares)
                    shares_full = true;
                else
                    mem_short = true;
            }
            continue;
        }
        for (uint32_t j = 0; j < i && !dup; j++)
            dup = same_frac_state(&st->gpus[nd->first_gpu + j], g) &&
                  fatia_pl_frac_fits(&st->gpus[nd->first_gpu + j], f);
        if (dup)
            continue;
        switch (c->policy) {
        case FATIA_PLACE_BINPACK:
            key[0] = g->users ? 0 : 1;
            key[1] = g->milli_free;
            break;
        case FATIA_PLACE_SPREAD:
            key[0] = -(double)g->milli_free;
            key[1] = g->users; /* memory-only fractions leave milli-GPUs alone */
            break;
        case FATIA_PLACE_FRAGMENTATION:
            if (fgd(c)) {
                struct pl_item it = frac_item(g, gi, f);
                key[0] = frag_with(c, node, &it);
                key[1] = frag_key(c, key[0]);
                break;
            }
            FATIA_FALLTHROUGH; /* no mix: best-fit */
        default:               /* bestfit */
            key[0] = g->milli_free;
            key[1] = 0;
        }
        if (fgd(c) && (c->flags & FATIA_PLACE_FGD_SCORE)) {
            /* the artifact's GPU choice: the highest score, ties to the GPU listed first */
            if (best < 0 || key[1] < best_key[1]) {
                best = gi;
                best_key[0] = key[0];
                best_key[1] = key[1];
                best_frag = key[0];
            }
        } else if (best < 0 || key[0] < best_key[0] ||
                   (key[0] == best_key[0] && key[1] < best_key[1])) {
            best = gi;
            best_key[0] = key[0];
            best_key[1] = key[1];
            best_frag = key[0];
        }
    }
    if (best < 0) {
        if (shares_full && !mem_short)
            fail_node(c, true, WHY_TEXT, "had fraction pools at their maxShares", 0);
        else if (mem_short)
            fail_node(c, false, WHY_INSUFFICIENT, "fatia.dev/gpu-memory", 0);
        else
            fail_node(c, false, WHY_INSUFFICIENT, "fatia.dev/gpu-milli", 0);
        return -FATIA_E_NOFIT;
    }
    {
        struct pl_item it = frac_item(&st->gpus[best], (uint32_t)best, f);
        if (fgd(c) && !c->items.n && c->pod->n_fracs + c->pod->n_reqs == 1) {
            c->one_frag_valid = true;
            c->one_frag = best_frag;
        }
        return push_apply(c, &it);
    }
}

/* Free units on GPU g for a request of resource res (UINT16_MAX: whole GPUs of a fraction pool),
 * and the first free slice. */
static uint32_t gpu_units(const struct pl_ctx *c, const struct pl_gpu *g, uint16_t res,
                          int32_t *ret_slice)
{
    uint32_t u = 0;

    *ret_slice = -1;
    if (res == UINT16_MAX)
        return g->fractional && g->users == 0 && g->shares == 0 ? 1 : 0;
    for (uint16_t s = 0; s < g->n_slices; s++) {
        const struct pl_slice *sl = &g->slices[s];
        if (sl->res != res || !sl->exists || sl->owner != PL_NO_OWNER)
            continue;
        if (sl->kind == FATIA_SLICE_MPS && g->mps_ns && g->mps_ns != c->pod->ns)
            continue;
        if (*ret_slice < 0)
            *ret_slice = s;
        u++;
    }
    return u;
}

static struct pl_item unit_item(const struct pl_ctx *c, uint32_t gi, uint16_t res, int32_t slice,
                                uint16_t container)
{
    const struct pl_gpu *g = &c->st->gpus[gi];
    struct pl_item it = {0};

    it.gpu = gi;
    it.container = container;
    if (res == UINT16_MAX) {
        struct pl_frac f = {container, 1000, 0};
        return frac_item(g, gi, &f);
    }
    it.slice = (uint16_t)slice;
    it.memory = g->slices[slice].memory;
    return it;
}

/* Has the node two or more GPUs that FGD's choose_unit would measure (with a unit, GPUs of a
 * fraction pool in the same state counted once)? The state is an equivalence (same_frac_state), so
 * a second one is a GPU with a unit unlike the first. */
static bool unit_choice(const struct pl_ctx *c, const struct pl_node *nd, uint16_t res)
{
    const struct pl_gpu *first = NULL;
    int32_t slice;

    for (uint32_t i = 0; i < nd->n_gpus; i++) {
        const struct pl_gpu *g = &c->st->gpus[nd->first_gpu + i];
        if (!gpu_units(c, g, res, &slice))
            continue;
        if (!first)
            first = g;
        else if (res != UINT16_MAX || !same_frac_state(first, g))
            return true;
    }
    return false;
}

/* One unit on the GPU the policy prefers. */
static int choose_unit(struct pl_ctx *c, const struct pl_node *nd, uint32_t node, uint16_t res,
                       uint16_t container)
{
    struct fatia_place_state *st = c->st;
    int64_t best = -1;
    int32_t best_slice = -1;
    double best_key[2] = {0, 0};
    /* the pod's only device: its measure is the node's (as choose_fraction keeps it) */
    bool only = fgd(c) && !c->items.n && c->pod->n_fracs + c->pod->n_reqs == 1 &&
                (c->pod->n_fracs ? c->pod->fracs[0].milli == 1000 : c->pod->reqs[0].count == 1);
    bool measure = fgd(c);

    /* one candidate is chosen whatever it measures (the first GPU with a unit): FGD measures the
     * node once, at the end */
    if (measure && !only)
        measure = unit_choice(c, nd, res);
    for (uint32_t i = 0; i < nd->n_gpus; i++) {
        uint32_t gi = nd->first_gpu + i;
        const struct pl_gpu *g = &st->gpus[gi];
        int32_t slice;
        uint32_t u = gpu_units(c, g, res, &slice);
        double key[2];
        if (!u)
            continue;
        switch (c->policy) {
        case FATIA_PLACE_BINPACK:
            key[0] = g->users ? 0 : 1;
            key[1] = u;
            break;
        case FATIA_PLACE_SPREAD:
            key[0] = g->users ? 1 : 0;
            key[1] = -(double)u;
            break;
        case FATIA_PLACE_FRAGMENTATION:
            if (fgd(c) && !measure) {
                key[0] = key[1] = 0;
                break;
            }
            if (fgd(c)) {
                struct pl_item it;
                bool dup = false;
                /* whole GPUs of a fraction pool in the same state measure the same: the first */
                for (uint32_t j = 0; res == UINT16_MAX && j < i && !dup; j++) {
                    const struct pl_gpu *h = &st->gpus[nd->first_gpu + j];
                    int32_t s2;
                    dup = same_frac_state(h, g) && gpu_units(c, h, res, &s2);
                }
                if (dup)
                    continue;
                it = unit_item(c, gi, res, slice, container);
                key[0] = frag_with(c, node, &it);
                key[1] = 0;
                break;
            }
            FATIA_FALLTHROUGH;
        default:
            key[0] = u;
            key[1] = fatia_pl_gpu_free_milli(g);
        }
        if (best < 0 || key[0] < best_key[0] || (key[0] == best_key[0] && key[1] < best_key[1])) {
            best = gi;
            best_slice = slice;
            best_key[0] = key[0];
            best_key[1] = key[1];
        }
    }
    if (best < 0)
        return -FATIA_E_NOFIT;
    {
        struct pl_item it = unit_item(c, (uint32_t)best, res, best_slice, container);
        if (only) {
            c->one_frag_valid = true;
            c->one_frag = best_key[0];
        }
        return push_apply(c, &it);
    }
}

static bool whole_kind(const struct pl_ctx *c, const struct pl_node *nd, uint16_t res)
{
    if (res == UINT16_MAX)
        return true;
    for (uint32_t i = 0; i < nd->n_gpus; i++) {
        const struct pl_gpu *g = &c->st->gpus[nd->first_gpu + i];
        for (uint16_t s = 0; s < g->n_slices; s++)
            if (g->slices[s].res == res)
                return g->slices[s].kind == FATIA_SLICE_WHOLE;
    }
    return false;
}

static const char *res_name(const struct pl_ctx *c, uint16_t res)
{
    return res == UINT16_MAX ? "fatia.dev/gpu-milli" : fatia_pl_res_get(c->st, res)->name;
}

/* count units of res (UINT16_MAX: whole GPUs of a fraction pool) for one container */
static int choose_units(struct pl_ctx *c, const struct pl_node *nd, uint32_t node, uint16_t res,
                        uint32_t count, uint16_t container)
{
    struct fatia_place_state *st = c->st;
    uint32_t total = 0, mps_blocked = 0;
    int r;

    for (uint32_t i = 0; i < nd->n_gpus; i++) {
        const struct pl_gpu *g = &st->gpus[nd->first_gpu + i];
        int32_t slice;
        total += gpu_units(c, g, res, &slice);
        if (res != UINT16_MAX && g->mps_ns && g->mps_ns != c->pod->ns)
            for (uint16_t s = 0; s < g->n_slices; s++)
                mps_blocked += g->slices[s].res == res && g->slices[s].kind == FATIA_SLICE_MPS &&
                               g->slices[s].owner == PL_NO_OWNER;
    }
    if (total < count) {
        if (mps_blocked && total + mps_blocked >= count)
            fail_node(c, true, WHY_MPS, res_name(c, res), 0);
        else
            fail_node(c, false, WHY_INSUFFICIENT, res_name(c, res), 0);
        return -FATIA_E_NOFIT;
    }
    if (count > 1 && whole_kind(c, nd, res)) {
        /* one NVLink island with count free GPUs */
        int best_island = INT32_MIN;
        double best_key = 0;
        for (uint32_t i = 0; i < nd->n_gpus; i++) {
            const struct pl_gpu *g = &st->gpus[nd->first_gpu + i];
            uint32_t in = 0;
            int32_t slice;
            bool seen = false;
            double key;
            for (uint32_t j = 0; j < i && !seen; j++)
                seen = st->gpus[nd->first_gpu + j].island == g->island;
            if (seen)
                continue;
            for (uint32_t j = i; j < nd->n_gpus; j++)
                if (st->gpus[nd->first_gpu + j].island == g->island)
                    in += gpu_units(c, &st->gpus[nd->first_gpu + j], res, &slice) ? 1 : 0;
            if (in < count)
                continue;
            if (c->policy == FATIA_PLACE_SPREAD)
                key = -(double)in;
            else if (fgd(c)) {
                /* the first count free GPUs of the island, measured together */
                size_t mark = c->items.n;
                uint32_t took = 0;
                for (uint32_t j = i; j < nd->n_gpus && took < count; j++) {
                    uint32_t gj = nd->first_gpu + j;
                    if (st->gpus[gj].island != g->island ||
                        !gpu_units(c, &st->gpus[gj], res, &slice))
                        continue;
                    struct pl_item it = unit_item(c, gj, res, slice, container);
                    if ((r = push_apply(c, &it)) < 0)
                        return r;
                    took++;
                }
                key = fatia_pl_frag_node_now(c->mix, node);
                while (c->items.n > mark) {
                    const struct pl_item *it = &c->items.v[--c->items.n];
                    fatia_pl_apply_items(st, node, it, 1, c->pod->ns, -1);
                }
            } else
                key = in;
            if (best_island == INT32_MIN || key < best_key) {
                best_island = g->island;
                best_key = key;
            }
        }
        if (best_island != INT32_MIN) {
            uint32_t took = 0;
            for (uint32_t j = 0; j < nd->n_gpus && took < count; j++) {
                uint32_t gj = nd->first_gpu + j;
                int32_t slice;
                if (st->gpus[gj].island != best_island || !gpu_units(c, &st->gpus[gj], res, &slice))
                    continue;
                struct pl_item it = unit_item(c, gj, res, slice, container);
                if ((r = push_apply(c, &it)) < 0)
                    return r;
                took++;
            }
            return 0;
        }
        if (c->pod->nvlink == PL_NVLINK_REQUIRED) {
            fail_node(c, true, WHY_NVLINK, res_name(c, res), count);
            return -FATIA_E_NOFIT;
        }
    }
    for (uint32_t k = 0; k < count; k++) {
        r = choose_unit(c, nd, node, res, container);
        if (r == -FATIA_E_NOFIT)
            fail_node(c, false, WHY_INSUFFICIENT, res_name(c, res), 0);
        if (r < 0)
            return r;
    }
    return 0;
}

static double node_free_gpu(const struct fatia_place_state *st, const struct pl_node *nd)
{
    double f = 0;

    for (uint32_t i = 0; i < nd->n_gpus; i++)
        f += fatia_pl_gpu_free_milli(&st->gpus[nd->first_gpu + i]);
    return f;
}

/* Evaluates node `node` for the pod: 1 and c->items, c->score when it fits; 0 (c->why says why)
 * when it does not; <0 on error. Counters are as before on return. */
/* Allocates the pod's claims on the node, after its other devices: 1 (items pushed, c->claim_json
 * set), 0 (c->why), <0. */
static int choose_claims(struct pl_ctx *c, uint32_t node)
{
    struct fatia_place_state *st = c->st;
    const struct fatia_place_pod *pod = c->pod;
    const struct pl_node *nd = &st->nodes[node];
    int r;

    json_decref(c->claim_json);
    if (!(c->claim_json = json_array()))
        return -ENOMEM;
    for (size_t k = 0; k < pod->n_claims; k++) {
        const struct pl_claim *cl = &pod->claims[k];
        struct fatia_dra_alloc_opts opts = {.node = nd->name, .node_labels = nd->labels};
        struct fatia_dra_allocation *a = NULL;
        json_t *entry;
        bool done = false;
        if (cl->allocated_node) {
            if (*cl->allocated_node && strcmp(cl->allocated_node, nd->name)) {
                fail_node(c, true, WHY_TEXT, "didn't match the node of an allocated ResourceClaim",
                          0);
                return 0;
            }
            done = true;
        }
        for (size_t i = 0; !done && cl->claim && i < c->n_shared; i++)
            if (!strcmp(c->shared[i].claim, cl->claim)) {
                if (c->shared[i].node != node) {
                    fail_node(c, true, WHY_TEXT,
                              "didn't match the node of an allocated ResourceClaim", 0);
                    return 0;
                }
                done = true;
            }
        if (done) {
            entry =
                json_pack("{s:s,s:s?,s:n}", "name", cl->entry, "claim", cl->claim, "allocation");
            if (!entry || json_array_append_new(c->claim_json, entry) < 0)
                return -ENOMEM;
            continue;
        }
        if (!st->dra_inv) {
            fail_node(c, false, WHY_TEXT, "cannot allocate all claims (no DeviceClasses given)", 0);
            return 0;
        }
        if ((r = fatia_pl_dra_map(st)) < 0)
            return r;
        r = fatia_dra_allocate(st->dra_inv, st->dra_cls, &st->dra_st, cl->spec, &opts, &a, NULL);
        if (r == -FATIA_E_NOFIT || r == -FATIA_E_LIMIT) {
            fail_node(c, false, WHY_TEXT, "cannot allocate all claims", 0);
            return 0;
        }
        if (r == -FATIA_E_INVALID) {
            fail_node(c, false, WHY_TEXT,
                      "cannot allocate all claims (unknown DeviceClass or sharing config)", 0);
            return 0;
        }
        if (r < 0)
            return r;
        for (size_t i = 0; i < a->n_results; i++) {
            const struct pl_dra_ref *m = &st->dra_map[a->results[i].device];
            struct pl_item it = {0};
            if (a->results[i].admin_access)
                continue;
            if (m->gpu == UINT32_MAX) { /* cannot happen: such devices are marked used */
                fatia_dra_allocation_free(a);
                fail_node(c, false, WHY_TEXT, "cannot allocate all claims", 0);
                return 0;
            }
            it.gpu = m->gpu;
            it.slice = m->slice;
            it.container = cl->container;
            it.memory = st->gpus[m->gpu].slices[m->slice].memory;
            if ((r = push_apply(c, &it)) < 0) {
                fatia_dra_allocation_free(a);
                return r;
            }
        }
        entry = json_pack("{s:s,s:s?,s:o}", "name", cl->entry, "claim", cl->claim, "allocation",
                          fatia_dra_allocation_to_json(st->dra_inv, a));
        fatia_dra_allocation_free(a);
        if (!entry || json_array_append_new(c->claim_json, entry) < 0)
            return -ENOMEM;
    }
    return 1;
}

/* Does the node have `milli` of scalar resource res left? A node that does not state its `pods`
 * (an NVML node without a NodePool) takes any number, as a kubelet's default would. */
static bool scalar_fits(const struct fatia_place_state *st, const struct pl_node *nd,
                        const struct pl_res *res, int64_t milli)
{
    int64_t free = 0;

    if (res->slot >= 0 && (size_t)res->slot < nd->n_scalar) {
        if (res == fatia_pl_res_get(st, st->r_pods) && !nd->alloc[res->slot])
            return true;
        free = nd->alloc[res->slot] - nd->used[res->slot];
    }
    return free >= milli;
}

/* The cheap part of eval_node: filters, scalars, fraction pools' summary. 1 (go on) or 0 (c->why
 * says why not). */
static int filter_node(struct pl_ctx *c, uint32_t node)
{
    struct fatia_place_state *st = c->st;
    const struct fatia_place_pod *pod = c->pod;
    const struct pl_node *nd = &st->nodes[node];
    const char *why;

    if ((why = fatia_pl_node_mismatch(st, pod, nd))) {
        fail_node(c, true, WHY_TEXT, why, 0);
        return 0;
    }
    for (size_t i = 0; i < pod->n_scalars; i++) {
        const struct pl_res *res = fatia_pl_res_get(st, pod->scalars[i].res);
        if (!scalar_fits(st, nd, res, pod->scalars[i].milli)) {
            fail_node(c, false, WHY_INSUFFICIENT, res->name, 0);
            return 0;
        }
    }
    /* a quick "no" for fractions before any device is tried */
    {
        uint32_t whole = 0;
        for (size_t i = 0; i < pod->n_fracs; i++) {
            if (pod->fracs[i].milli >= 1000)
                whole += (uint32_t)(pod->fracs[i].milli / 1000);
            else if (nd->frac_max_free < pod->fracs[i].milli) {
                bool full = false;
                for (uint32_t g = 0; g < nd->n_gpus; g++) {
                    const struct pl_gpu *gp = &st->gpus[nd->first_gpu + g];
                    full |= gp->fractional && gp->shares >= gp->max_shares &&
                            gp->milli_free >= pod->fracs[i].milli;
                }
                if (full)
                    fail_node(c, true, WHY_TEXT, "had fraction pools at their maxShares", 0);
                else
                    fail_node(c, false, WHY_INSUFFICIENT, "fatia.dev/gpu-milli", 0);
                return 0;
            }
        }
        if (whole > nd->frac_whole_free) {
            fail_node(c, false, WHY_INSUFFICIENT, "fatia.dev/gpu-milli", 0);
            return 0;
        }
    }
    return 1;
}

/* The devices part of eval_node, for a node filter_node accepted. */
static int eval_devices(struct pl_ctx *c, uint32_t node)
{
    struct fatia_place_state *st = c->st;
    const struct fatia_place_pod *pod = c->pod;
    const struct pl_node *nd = &st->nodes[node];
    uint32_t touched0 = nd->touched;
    double frag0 = 0;
    int r = 1;

    c->items.n = 0;
    c->one_frag_valid = false;
    /* the fragmentation measure reads the node's scalars: apply them while choosing */
    struct pl_gpu snap[16]; /* the node's GPUs before the pod, for the measure's fast path */
    bool snapped = false;

    if (fgd(c)) {
        frag0 = fatia_pl_frag_node(c->mix, node);
        c->frag0 = frag0;
        fatia_pl_apply_scalars(st, node, pod->scalars, pod->n_scalars, +1);
        if (nd->n_gpus <= FATIA_ARRAY_SIZE(snap) && !pod->n_reqs && !pod->n_claims) {
            snapped = true;
            for (uint32_t i = 0; i < nd->n_gpus; i++) {
                snap[i] = st->gpus[nd->first_gpu + i];
                snapped &= snap[i].fractional;
            }
        }
        c->snap = snapped ? snap : NULL;
    }
    for (uint16_t ct = 0; r > 0 && ct < pod->n_containers; ct++) {
        for (size_t i = 0; r > 0 && i < pod->n_fracs; i++) {
            const struct pl_frac *f = &pod->fracs[i];
            int x;
            if (f->container != ct)
                continue;
            if (f->milli >= 1000)
                x = choose_units(c, nd, node, UINT16_MAX, (uint32_t)(f->milli / 1000), ct);
            else
                x = choose_fraction(c, nd, node, f);
            if (x == -FATIA_E_NOFIT)
                r = 0;
            else if (x < 0)
                r = x;
        }
        for (size_t i = 0; r > 0 && i < pod->n_reqs; i++) {
            const struct pl_req *q = &pod->reqs[i];
            int x;
            if (q->container != ct)
                continue;
            x = choose_units(c, nd, node, q->res, q->count, ct);
            if (x == -FATIA_E_NOFIT)
                r = 0;
            else if (x < 0)
                r = x;
        }
    }
    if (r > 0 && pod->n_claims)
        r = choose_claims(c, node);
    if (r > 0) {
        double gfree = node_free_gpu(st, nd);
        int32_t cs = st->res->v.v[st->r_cpu].slot;
        double cpu = (size_t)cs < nd->n_scalar ? (double)(nd->alloc[cs] - nd->used[cs]) : 0;
        if (!fgd(c))
            cpu -= (double)pod_scalar(st, pod, st->r_cpu);
        double chosen = 0;
        for (size_t i = 0; i < c->items.n; i++) {
            bool seen = false;
            for (size_t j = 0; j < i; j++)
                seen |= c->items.v[j].gpu == c->items.v[i].gpu;
            if (!seen)
                chosen += fatia_pl_gpu_free_milli(&st->gpus[c->items.v[i].gpu]);
        }
        switch (c->policy) {
        case FATIA_PLACE_BINPACK:
            c->score[0] = (double)(nd->touched - touched0);
            c->score[1] = gfree;
            c->score[2] = st->max_cpu_milli ? cpu / (double)st->max_cpu_milli : 0;
            break;
        case FATIA_PLACE_SPREAD:
            c->score[0] = -gfree;
            c->score[1] = -cpu;
            c->score[2] = 0;
            break;
        case FATIA_PLACE_FRAGMENTATION:
            if (fgd(c)) {
                double f1 = c->one_frag_valid ? c->one_frag
                            : snapped         ? frag_items(c, node, snap, NULL)
                                              : fatia_pl_frag_node_now(c->mix, node);
                bool pack = (c->flags & FATIA_PLACE_FGD_PACK) ||
                            ((c->flags & FATIA_PLACE_FGD_PACK_CPU) && !pod->n_fracs &&
                             !pod->n_reqs && !pod->n_claims);
                c->score[0] = frag_key(c, f1);
                c->score[1] = pack ? gfree : 0;
                c->score[2] = pack && st->max_cpu_milli ? cpu / (double)st->max_cpu_milli : 0;
                if ((c->flags & FATIA_PLACE_FGD_FIT) && !pack && c->items.n)
                    c->score[1] = chosen;
                break;
            }
            FATIA_FALLTHROUGH;
        default:
            c->score[0] = chosen;
            c->score[1] = 0.5 * (st->max_cpu_milli ? cpu / (double)st->max_cpu_milli : 0) +
                          0.5 * (st->max_node_gpus ? gfree / (1000.0 * st->max_node_gpus) : 0);
            c->score[2] = 0;
        }
    }
    revert_items(c);
    c->snap = NULL;
    if (fgd(c))
        fatia_pl_apply_scalars(st, node, pod->scalars, pod->n_scalars, -1);
    return r;
}

static int eval_node(struct pl_ctx *c, uint32_t node)
{
    c->items.n = 0;
    c->one_frag_valid = false;
    if (!filter_node(c, node))
        return 0;
    return eval_devices(c, node);
}

static bool better(const double *a, const double *b)
{
    for (int i = 0; i < 3; i++) {
        if (a[i] < b[i] - 1e-9)
            return true;
        if (a[i] > b[i] + 1e-9)
            return false;
    }
    return false;
}

/* Re-evaluates the chosen node and keeps its items applied as c->items (for binding). */
static int take_best(struct pl_ctx *c)
{
    json_decref(c->best_claims);
    c->best_claims = c->pod->n_claims ? json_incref(c->claim_json) : NULL;
    c->best.n = 0;
    if (FATIA_VEC_RESERVE(&c->best, c->items.n) < 0)
        return -ENOMEM;
    if (c->items.n)
        memcpy(c->best.v, c->items.v, c->items.n * sizeof(*c->items.v));
    c->best.n = c->items.n;
    return 0;
}

/* ---- the journal ---- */

static void jentry_release(struct jentry *j)
{
    fatia_free(j->key);
    fatia_free(j->saved.key);
    fatia_free(j->saved.scalars);
    fatia_free(j->saved.items);
}

static void rollback(struct pl_ctx *c)
{
    struct fatia_place_state *st = c->st;

    while (c->journal.n) {
        struct jentry *j = &c->journal.v[--c->journal.n];
        switch (j->type) {
        case J_BIND:
            fatia_place_unbind(st, j->key);
            break;
        case J_LAYOUT:
            fatia_pl_gpu_set_layout(st, &st->gpus[j->gpu], &j->old);
            break;
        case J_UNBIND: {
            const struct pl_bind *b = &j->saved;
            fatia_pl_bind_items(st, b->key, b->node, b->ns, b->priority, b->scalars, b->n_scalars,
                                b->items, b->n_items);
            break;
        }
        }
        jentry_release(j);
    }
}

static int journal_unbind(struct pl_ctx *c, int32_t idx)
{
    struct fatia_place_state *st = c->st;
    struct pl_bind *b = &st->binds.v[idx];
    struct jentry j = {.type = J_UNBIND};

    j.saved = *b;
    j.saved.key = fatia_strdup(b->key);
    j.saved.scalars = b->n_scalars ? fatia_calloc(b->n_scalars, sizeof(*b->scalars)) : NULL;
    j.saved.items = b->n_items ? fatia_calloc(b->n_items, sizeof(*b->items)) : NULL;
    if (!j.saved.key || (b->n_scalars && !j.saved.scalars) || (b->n_items && !j.saved.items)) {
        jentry_release(&j);
        return -ENOMEM;
    }
    if (b->n_scalars)
        memcpy(j.saved.scalars, b->scalars, b->n_scalars * sizeof(*b->scalars));
    if (b->n_items)
        memcpy(j.saved.items, b->items, b->n_items * sizeof(*b->items));
    if (FATIA_VEC_PUSH(&c->journal, j) < 0) {
        jentry_release(&j);
        return -ENOMEM;
    }
    return fatia_place_unbind(st, j.saved.key);
}

static int journal_layout(struct pl_ctx *c, const struct fatia_place_mig_change *ch)
{
    struct fatia_place_state *st = c->st;
    struct jentry j = {.type = J_LAYOUT};
    int r;

    j.gpu = ch->gpu;
    j.old = st->gpus[ch->gpu].layout;
    j.now = ch->layout;
    if ((r = fatia_pl_gpu_set_layout(st, &st->gpus[ch->gpu], &ch->layout)) < 0)
        return r;
    if (FATIA_VEC_PUSH(&c->journal, j) < 0) {
        fatia_pl_gpu_set_layout(st, &st->gpus[ch->gpu], &j.old);
        return -ENOMEM;
    }
    return 0;
}

/* ---- one pod ---- */

static bool scalars_fit(const struct fatia_place_state *st, const struct fatia_place_pod *pod,
                        const struct pl_node *nd)
{
    for (size_t i = 0; i < pod->n_scalars; i++)
        if (!scalar_fits(st, nd, fatia_pl_res_get(st, pod->scalars[i].res), pod->scalars[i].milli))
            return false;
    return true;
}

static bool wants_mig(const struct fatia_place_state *st, const struct fatia_place_pod *pod)
{
    for (size_t i = 0; i < pod->n_reqs; i++)
        if (!strncmp(fatia_pl_res_get(st, pod->reqs[i].res)->name, "nvidia.com/mig-", 15))
            return true;
    return false;
}

/* Does the pod's answer depend on the node's name (so that equal nodes may differ)? */
static bool name_dependent(const struct fatia_place_pod *pod)
{
    if (pod->node_name)
        return true;
    for (size_t i = 0; i < pod->n_sel; i++)
        if (!strcmp(pod->sel_keys[i], "kubernetes.io/hostname"))
            return true;
    for (size_t t = 0; t < pod->n_terms; t++)
        for (size_t i = 0; i < pod->terms[t].n; i++)
            if (pod->terms[t].e[i].field ||
                !strcmp(pod->terms[t].e[i].key, "kubernetes.io/hostname"))
                return true;
    return false;
}

/* The node's state as placement reads it: its class and every counter (cached until it changes). */
static uint64_t node_sig(struct fatia_place_state *st, struct pl_node *nd)
{
    uint64_t h;

    if (nd->sig_gen == nd->gen && nd->sig_gen != UINT64_MAX)
        return nd->sig;
    h = fatia_hash_chain64(nd->used, nd->n_scalar * sizeof(*nd->used), nd->cls);
    for (uint32_t i = 0; i < nd->n_gpus; i++) {
        const struct pl_gpu *g = &st->gpus[nd->first_gpu + i];
        uint64_t x[8] = {(uint64_t)g->milli_free,
                         g->mem_free,
                         g->shares,
                         g->users,
                         g->n_used,
                         g->mps_ns,
                         g->fmask[0] ^ (g->fmask[1] << 1),
                         g->fmask[2]};
        h = fatia_hash_chain64(x, sizeof(x), h);
        if (g->n_used) {
            uint64_t bits = 0;
            for (uint16_t s = 0; s < g->n_slices; s++) {
                bits = bits << 1 | (g->slices[s].owner != PL_NO_OWNER);
                if ((s & 63) == 63 || s + 1 == g->n_slices) {
                    h = fatia_hash_chain64(&bits, sizeof(bits), h);
                    bits = 0;
                }
            }
        }
    }
    nd->sig = h;
    nd->sig_gen = nd->gen;
    return h;
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

/* Finds the pod's node; 1 (c->best, c->best_node), 0 (reasons counted), <0. */
static int place_pod(struct pl_ctx *c)
{
    struct fatia_place_state *st = c->st;
    bool memo = !name_dependent(c->pod) && !c->pod->n_claims && st->n_nodes > 64;
    uint64_t pod_key;
    struct memo *tab = NULL;
    int r;

    c->best_node = -1;
    st->memo_epoch++;
    pod_key = mix64(c->pod->shape_hash ^ mix64((uint64_t)c->pod->ns << 8 | c->policy));
    /* the measure changes with every pod recorded, so answers are kept for this pod only; a
     * frozen mix does not change: answers are kept across pods like the other policies' (the
     * flags, which change the keys, are part of the pod's key) */
    if (fgd(c) && !fatia_pl_mix_frozen(c->mix))
        pod_key = mix64(pod_key ^ st->memo_epoch);
    if (fgd(c))
        pod_key = mix64(pod_key ^ c->flags);
    if (memo && !st->memo) {
        size_t cap = MEMO_MIN;
        while (cap < MEMO_MAX && cap < (size_t)st->n_nodes * 64)
            cap *= 2;
        if (!(st->memo = fatia_calloc(cap, sizeof(struct memo))))
            return -ENOMEM;
        st->memo_cap = cap;
    }
    tab = memo ? st->memo : NULL;
    /* the scarcity key depends on every node's state: applied after the memo, never kept */
    const double *scarce = NULL;
    const uint32_t *scarce_cls = NULL;
    if (fgd(c) && (c->flags & FATIA_PLACE_FGD_SCARCE) &&
        (c->pod->n_fracs || c->pod->n_reqs || c->pod->n_claims) &&
        (r = fatia_pl_mix_scarcity(c->mix, &scarce, &scarce_cls)) < 0)
        return r;
    for (uint32_t n = 0; n < st->n_nodes; n++) {
        struct memo *m = NULL;
        uint64_t key = 0;
        if (tab) {
            key = mix64(node_sig(st, &st->nodes[n]) ^ pod_key) | 1; /* 0 = empty */
            m = &tab[key & (st->memo_cap - 1)];
            /* the table is larger than the caches: ask for a later node's entry now */
            if (n + MEMO_AHEAD < st->n_nodes)
                __builtin_prefetch(
                    &tab[(mix64(node_sig(st, &st->nodes[n + MEMO_AHEAD]) ^ pod_key) | 1) &
                         (st->memo_cap - 1)]);
        }
        if (m && m->key == key) {
            uint32_t first = st->nodes[n].first_gpu;
            r = m->fits;
            c->why = m->why;
            memcpy(c->score, m->score, sizeof(c->score));
            c->items.n = 0;
            for (uint8_t k = 0; k < m->n_items; k++) {
                struct pl_item it = m->items[k];
                it.gpu += first;
                if (FATIA_VEC_PUSH(&c->items, it) < 0)
                    return -ENOMEM;
            }
        } else {
            r = eval_node(c, n);
            if (r < 0)
                return r;
            if (m && c->items.n <= MEMO_ITEMS) {
                uint32_t first = st->nodes[n].first_gpu;
                m->key = key;
                m->fits = (int8_t)r;
                m->why = c->why;
                memcpy(m->score, c->score, sizeof(c->score));
                m->n_items = r ? (uint8_t)c->items.n : 0;
                for (uint8_t k = 0; k < m->n_items; k++) {
                    m->items[k] = c->items.v[k];
                    m->items[k].gpu -= first;
                }
            }
        }
        if (!r) {
            count_reason(c);
            continue;
        }
        if (scarce)
            c->score[0] += SCARCE_WEIGHT * scarce[scarce_cls[n]];
        if (c->best_node < 0 || better(c->score, c->best_score)) {
            c->n_ties = 1;
        } else if (c->ties && !better(c->best_score, c->score)) {
            /* an equal score: kube-scheduler's reservoir sample over the nodes tied at the top */
            if (tie_draw(c->ties) % ++c->n_ties != 0)
                continue;
        } else {
            continue;
        }
        c->best_node = n;
        memcpy(c->best_score, c->score, sizeof(c->score));
        if ((r = take_best(c)) < 0)
            return r;
    }
    if (c->best_node >= 0)
        return 1;
    /* dynamic MIG */
    if (c->mig != FATIA_PLACE_MIG_OFF && wants_mig(st, c->pod)) {
        struct pl_mig_try t, best_t = {0};
        int64_t best = -1;
        for (uint32_t n = 0; n < st->n_nodes; n++) {
            const struct pl_node *nd = &st->nodes[n];
            if (fatia_pl_node_mismatch(st, c->pod, nd) || !scalars_fit(st, c->pod, nd))
                continue;
            r = fatia_pl_mig_try_node(st, c->pod, n, c->mig, &t);
            if (r == -FATIA_E_NOFIT)
                continue;
            if (r < 0)
                return r;
            if (best < 0 || t.n_victims < best_t.n_victims ||
                (t.n_victims == best_t.n_victims && t.n < best_t.n)) {
                best = n;
                best_t = t;
            }
        }
        if (best >= 0) {
            size_t mark = c->journal.n;
            /* victims first (their instances must be free), then the layouts */
            for (size_t v = 0; v < best_t.n_victims; v++)
                if ((r = journal_unbind(c, best_t.victims[v])) < 0)
                    return r;
            for (size_t i = 0; i < best_t.n; i++)
                if ((r = journal_layout(c, &best_t.ch[i])) < 0)
                    return r;
            r = eval_node(c, (uint32_t)best);
            if (r < 0)
                return r;
            if (r > 0) {
                c->best_node = best;
                return take_best(c) < 0 ? -ENOMEM : 1;
            }
            /* should not happen: undo this pod's MIG changes */
            while (c->journal.n > mark) {
                struct jentry *j = &c->journal.v[--c->journal.n];
                if (j->type == J_LAYOUT)
                    fatia_pl_gpu_set_layout(st, &st->gpus[j->gpu], &j->old);
                else if (j->type == J_UNBIND)
                    fatia_pl_bind_items(st, j->saved.key, j->saved.node, j->saved.ns,
                                        j->saved.priority, j->saved.scalars, j->saved.n_scalars,
                                        j->saved.items, j->saved.n_items);
                jentry_release(j);
            }
        }
    }
    return 0;
}

/* ---- results ---- */

void fatia_place_result_free(struct fatia_place_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_pods; i++) {
        fatia_free(r->pods[i].devices);
        json_decref(r->pods[i].claims);
    }
    fatia_free(r->pods);
    fatia_free(r->mig);
    for (size_t i = 0; i < r->n_victims; i++)
        fatia_free(r->victims[i]);
    fatia_free(r->victims);
    fatia_free(r->reason);
    fatia_free(r);
}

static int collect(struct pl_ctx *c, size_t n_pods, struct fatia_place_result *res)
{
    struct fatia_place_state *st = c->st;
    size_t p = 0;

    res->pods = fatia_calloc(n_pods ? n_pods : 1, sizeof(*res->pods));
    if (!res->pods)
        return -ENOMEM;
    res->n_pods = n_pods;
    for (size_t i = 0; i < c->journal.n; i++) {
        const struct jentry *j = &c->journal.v[i];
        if (j->type == J_BIND) {
            int32_t idx = (int32_t)(intptr_t)fatia_strmap_get(&st->bind_index, j->key);
            const struct pl_bind *b = &st->binds.v[idx];
            struct fatia_place_pod_result *pr = &res->pods[p];
            if (c->pod_claims)
                pr->claims = json_incref(c->pod_claims[p]);
            p++;
            pr->node = b->node;
            pr->devices = b->n_items ? fatia_calloc(b->n_items, sizeof(*pr->devices)) : NULL;
            if (b->n_items && !pr->devices)
                return -ENOMEM;
            pr->n_devices = b->n_items;
            for (size_t k = 0; k < b->n_items; k++) {
                const struct pl_item *it = &b->items[k];
                struct fatia_place_device *d = &pr->devices[k];
                const struct pl_gpu *g = &st->gpus[it->gpu];
                d->container = it->container;
                d->gpu = it->gpu;
                d->slice = it->slice;
                d->fraction = it->fraction;
                d->milli = it->milli;
                d->memory = it->memory;
                fatia_place_device_id(st, d, d->id, sizeof(d->id));
                if (it->slice == FATIA_PLACE_FRACTION) {
                    d->kind = FATIA_SLICE_FRACTION;
                    snprintf(d->resource, sizeof(d->resource), "fatia.dev/gpu-milli");
                } else {
                    d->kind = g->slices[it->slice].kind;
                    snprintf(d->resource, sizeof(d->resource), "%s",
                             fatia_pl_res_get(st, g->slices[it->slice].res)->name);
                }
            }
        } else if (j->type == J_UNBIND) {
            char **nv = fatia_reallocarray(res->victims, res->n_victims + 1, sizeof(*nv));
            if (!nv)
                return -ENOMEM;
            res->victims = nv;
            if (!(nv[res->n_victims] = fatia_strdup(j->saved.key)))
                return -ENOMEM;
            res->n_victims++;
        } else {
            /* the last layout of each GPU */
            size_t m;
            for (m = 0; m < res->n_mig; m++)
                if (res->mig[m].gpu == j->gpu)
                    break;
            if (m == res->n_mig) {
                struct fatia_place_mig_change *nm =
                    fatia_reallocarray(res->mig, res->n_mig + 1, sizeof(*nm));
                if (!nm)
                    return -ENOMEM;
                res->mig = nm;
                res->n_mig++;
            }
            res->mig[m].gpu = j->gpu;
            res->mig[m].layout = j->now;
        }
    }
    return 0;
}

int fatia_place_workload(struct fatia_place_state *st0, struct fatia_place_pod *const *pods,
                         size_t n_pods, const struct fatia_place_opts *opts,
                         struct fatia_place_result **ret)
{
    struct pl_ctx c = {0};
    struct fatia_place_result *res = fatia_calloc(1, sizeof(*res));
    struct fatia_place_state *st = st0;
    int r = 0;

    if (!res)
        return -ENOMEM;
    if (opts && (opts->flags & FATIA_PLACE_TEST)) {
        if ((r = fatia_pl_state_twin(st0, &st)) < 0)
            goto out;
    }
    c.st = st;
    c.policy = opts ? opts->policy : FATIA_PLACE_BINPACK;
    c.mig = opts ? opts->mig : FATIA_PLACE_MIG_OFF;
    c.mix = opts && st == st0 && c.policy == FATIA_PLACE_FRAGMENTATION ? opts->mix : NULL;
    c.flags = opts ? opts->flags : 0;
    c.ties = opts && st == st0 ? opts->ties : NULL;
    if (c.mix && (r = fatia_pl_mix_prepare(c.mix)) < 0)
        goto out;
    for (size_t i = 0; i < n_pods; i++) {
        char key[48];
        c.pod = pods[i];
        clear_reasons(&c);
        if (pods[i]->unknown_res) {
            char pre[96] = "";
            if (n_pods > 1)
                snprintf(pre, sizeof(pre), "pod %zu of %zu: ", i + 1, n_pods);
            res->reason = fatia_pl_strprintf("%s0/%zu nodes are available: %zu Insufficient %s.",
                                             pre, st->n_nodes, st->n_nodes, pods[i]->unknown_res);
            if (!res->reason)
                r = -ENOMEM;
            goto undo;
        }
        r = place_pod(&c);
        if (r < 0)
            goto undo;
        if (!r) {
            res->reason = format_reasons(&c, i, n_pods);
            r = res->reason ? 0 : -ENOMEM;
            goto undo;
        }
        snprintf(key, sizeof(key), "\x01place-%" PRIu64, c.tmp_seq++);
        {
            struct jentry j = {.type = J_BIND};
            j.key = fatia_strdup(key);
            if (!j.key || FATIA_VEC_PUSH(&c.journal, j) < 0) {
                fatia_free(j.key);
                r = -ENOMEM;
                goto undo;
            }
        }
        r = fatia_pl_bind_items(st, key, (uint32_t)c.best_node, pods[i]->ns, pods[i]->priority,
                                pods[i]->scalars, pods[i]->n_scalars, c.best.v, c.best.n);
        if (r < 0) {
            jentry_release(&c.journal.v[--c.journal.n]);
            goto undo;
        }
        /* its claims' allocations, and the named claims the next pods must follow */
        if (pods[i]->n_claims) {
            if (!c.pod_claims && !(c.pod_claims = fatia_calloc(n_pods, sizeof(*c.pod_claims)))) {
                r = -ENOMEM;
                goto undo;
            }
            c.pod_claims[i] = c.best_claims;
            c.best_claims = NULL;
            for (size_t k = 0; k < pods[i]->n_claims; k++) {
                const struct pl_claim *cl = &pods[i]->claims[k];
                bool known = false;
                if (!cl->claim || cl->allocated_node)
                    continue;
                for (size_t x = 0; x < c.n_shared; x++)
                    known |= !strcmp(c.shared[x].claim, cl->claim);
                if (!known && c.n_shared < FATIA_ARRAY_SIZE(c.shared)) {
                    c.shared[c.n_shared].claim = cl->claim;
                    c.shared[c.n_shared++].node = (uint32_t)c.best_node;
                }
            }
        }
    }
    res->placed = true;
    r = collect(&c, n_pods, res);
undo:
    rollback(&c);
out:
    clear_reasons(&c);
    FATIA_VEC_RELEASE(&c.items);
    FATIA_VEC_RELEASE(&c.best);
    FATIA_VEC_RELEASE(&c.journal);
    for (size_t i = 0; c.pod_claims && i < n_pods; i++)
        json_decref(c.pod_claims[i]);
    fatia_free(c.pod_claims);
    json_decref(c.claim_json);
    json_decref(c.best_claims);
    if (r < 0) {
        fatia_place_result_free(res);
        return r;
    }
    *ret = res;
    return 0;
}

/* ---- committing ---- */

static int items_of(struct fatia_place_state *st, const struct fatia_place_pod_result *pr,
                    struct pl_item **ret, char *why, size_t why_n)
{
    struct pl_item *items = pr->n_devices ? fatia_calloc(pr->n_devices, sizeof(*items)) : NULL;

    if (pr->n_devices && !items)
        return -ENOMEM;
    if (pr->node >= st->n_nodes) {
        snprintf(why, why_n, "no node %" PRIu32, pr->node);
        fatia_free(items);
        return -EINVAL;
    }
    for (size_t i = 0; i < pr->n_devices; i++) {
        const struct fatia_place_device *d = &pr->devices[i];
        struct pl_gpu *g;
        if (d->gpu >= st->n_gpus || st->gpus[d->gpu].node != pr->node) {
            snprintf(why, why_n, "device %zu: GPU %" PRIu32 " is not on node %s", i, d->gpu,
                     st->nodes[pr->node].name);
            goto bad;
        }
        g = &st->gpus[d->gpu];
        items[i].gpu = d->gpu;
        items[i].slice = d->slice;
        items[i].container = d->container;
        items[i].fraction = d->fraction;
        items[i].milli = d->milli;
        items[i].memory = d->memory;
        if (d->slice == FATIA_PLACE_FRACTION) {
            struct pl_frac f = {d->container, d->milli, 0};
            uint64_t cap;
            if (!g->fractional) {
                snprintf(why, why_n, "device %zu: GPU %" PRIu32 " is not a fraction pool", i,
                         g->index);
                goto bad;
            }
            /* a fraction's memory: gpu-memory when the cap is not the proportional one */
            fatia_pl_frac_charge(g, d->milli, 0, &items[i].mem_charge, &cap);
            if (d->milli < 1000 && cap != d->memory) {
                f.memory = d->memory;
                fatia_pl_frac_charge(g, d->milli, d->memory, &items[i].mem_charge, &cap);
            }
            if (!fatia_pl_frac_fits(g, &f) ||
                (d->milli < 1000 && d->fraction < PL_MAX_FRACTION &&
                 (g->fmask[d->fraction / 64] >> (d->fraction % 64)) & 1)) {
                snprintf(why, why_n, "device %zu: GPU %" PRIu32 " of node %s has no room for it", i,
                         g->index, st->nodes[pr->node].name);
                goto bad;
            }
            continue;
        }
        if (d->slice >= g->n_slices || !g->slices[d->slice].exists ||
            g->slices[d->slice].owner != PL_NO_OWNER) {
            snprintf(why, why_n,
                     "device %zu: slice %u of GPU %" PRIu32 " of node %s is taken or "
                     "missing",
                     i, d->slice, g->index, st->nodes[pr->node].name);
            goto bad;
        }
        for (size_t j = 0; j < i; j++)
            if (items[j].gpu == d->gpu && items[j].slice == d->slice) {
                snprintf(why, why_n, "device %zu: listed twice", i);
                goto bad;
            }
    }
    *ret = items;
    return 0;
bad:
    fatia_free(items);
    return -EINVAL;
}

int fatia_place_bind(struct fatia_place_state *st, const char *key,
                     const struct fatia_place_pod *pod, const struct fatia_place_pod_result *pr,
                     char *why, size_t why_n)
{
    struct pl_item *items = NULL;
    int r;

    if (fatia_place_is_bound(st, key))
        return -FATIA_E_EXISTS;
    if ((r = items_of(st, pr, &items, why, why_n)) < 0)
        return r;
    r = fatia_pl_bind_items(st, key, pr->node, pod->ns, pod->priority, pod->scalars, pod->n_scalars,
                            items, pr->n_devices);
    fatia_free(items);
    return r;
}

int fatia_place_commit(struct fatia_place_state *st, struct fatia_place_pod *const *pods,
                       const char *const *keys, const struct fatia_place_result *r)
{
    char why[256];
    size_t i;
    int x;

    if (!r->placed)
        return -EINVAL;
    for (i = 0; i < r->n_pods; i++)
        if (fatia_place_is_bound(st, keys[i]))
            return -EINVAL;
    for (i = 0; i < r->n_victims; i++)
        fatia_place_unbind(st, r->victims[i]);
    for (i = 0; i < r->n_mig; i++)
        if ((x = fatia_place_mig_apply(st, &r->mig[i])) < 0)
            return x == -ENOMEM ? x : -EINVAL;
    for (i = 0; i < r->n_pods; i++) {
        x = fatia_place_bind(st, keys[i], pods[i], &r->pods[i], why, sizeof(why));
        if (x < 0) {
            while (i-- > 0)
                fatia_place_unbind(st, keys[i]);
            return x == -ENOMEM ? x : -EINVAL;
        }
    }
    return 0;
}
