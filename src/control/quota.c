/*
 * control/quota.c: the quota tree arithmetic of ClusterQueues and Cohorts (Kueue
 * pkg/cache/scheduler/resource_node.go, reference/kueue.md §2.3) and the dominant resource share
 * (fair_sharing.go, §2.6).
 *
 * Per node and flavor-resource fr:
 *   subtree(CQ)     = nominal
 *   subtree(cohort) = own nominal + sum over children of (child.subtree - child.localQuota)
 *   localQuota(n)   = max(0, subtree - lendingLimit) when lendingLimit is set, else 0: the part
 *                     kept for the subtree and never visible to the parent
 *   usage(cohort)   = sum over children of max(0, child.usage - child.localQuota)
 *   available(n)    = root: subtree - usage; else localAvailable + min(parent's available,
 *                     [with borrowingLimit] subtree - localQuota - max(0, usage - localQuota) +
 *                     borrowingLimit)
 *   potential(n)    = root: subtree; else localQuota + potential(parent), capped by
 *                     subtree + borrowingLimit
 * Adding usage to a node adds the part beyond its remaining local quota to its parent, and
 * removal mirrors it, so the cohort usages stay equal to the formula above (the invariant
 * fatia_control_check verifies after every engine call).
 *
 * The tree is rebuilt from the declared quotas and the admitted workloads whenever a ClusterQueue
 * or Cohort changes (fatia_control_rebuild_tree); between rebuilds only usage moves, incrementally. Cohort
 * cycles are found with a three-colour walk over parent links; every cohort whose chain reaches a
 * cycle is cut from its parent (so no walk loops) and its ClusterQueues are inactive, which is
 * Kueue's "a cycle disables admission in the whole tree".
 */
#include "base/compat.h"

#include <math.h>

#include "base/alloc.h"
#include "base/error.h"
#include "control/internal.h"

amt_t fatia_control_local_quota(const struct ctl_node *n, uint32_t fr)
{
    const struct ctl_slot *s = &n->slot[fr];

    if (s->llimit != AMT_NONE)
        return amt_max(0, amt_sub(s->subtree, s->llimit));
    return 0;
}

amt_t fatia_control_local_available(const struct ctl_node *n, uint32_t fr)
{
    return amt_max(0, amt_sub(fatia_control_local_quota(n, fr), n->slot[fr].usage));
}

amt_t fatia_control_available_raw(const struct ctl_node *n, uint32_t fr)
{
    const struct ctl_slot *s = &n->slot[fr];
    amt_t parent_av, lq;

    if (!n->parent)
        return amt_sub(s->subtree, s->usage);
    parent_av = fatia_control_available_raw(n->parent, fr);
    lq = fatia_control_local_quota(n, fr);
    if (s->blimit != AMT_NONE) {
        amt_t stored = amt_sub(s->subtree, lq);
        amt_t used = amt_max(0, amt_sub(s->usage, lq));
        amt_t with_max = amt_add(amt_sub(stored, used), s->blimit);
        parent_av = amt_min(with_max, parent_av);
    }
    return amt_add(amt_max(0, amt_sub(lq, s->usage)), parent_av);
}

amt_t fatia_control_available(const struct ctl_node *n, uint32_t fr)
{
    return amt_max(0, fatia_control_available_raw(n, fr));
}

amt_t fatia_control_potential_available(const struct ctl_node *n, uint32_t fr)
{
    const struct ctl_slot *s = &n->slot[fr];
    amt_t av;

    if (!n->parent)
        return s->subtree;
    av =
        amt_add(fatia_control_local_quota(n, fr), fatia_control_potential_available(n->parent, fr));
    if (s->blimit != AMT_NONE)
        av = amt_min(amt_add(s->subtree, s->blimit), av);
    return av;
}

void fatia_control_add_usage(struct ctl_node *n, uint32_t fr, amt_t v)
{
    while (n) {
        amt_t la = fatia_control_local_available(n, fr);
        n->slot[fr].usage = amt_add(n->slot[fr].usage, v);
        n->epoch++;
        if (!n->parent || v <= la)
            return;
        v = amt_sub(v, la);
        n = n->parent;
    }
}

void fatia_control_remove_usage(struct ctl_node *n, uint32_t fr, amt_t v)
{
    while (n) {
        amt_t stored = amt_sub(n->slot[fr].usage, fatia_control_local_quota(n, fr));
        n->slot[fr].usage = amt_sub(n->slot[fr].usage, v);
        n->epoch++;
        if (stored <= 0 || !n->parent)
            return;
        v = amt_min(v, stored);
        n = n->parent;
    }
}

void fatia_control_add_uses(struct ctl_node *n, const struct ctl_use *u, size_t k)
{
    for (size_t i = 0; i < k; i++)
        fatia_control_add_usage(n, u[i].fr, u[i].v);
}

void fatia_control_remove_uses(struct ctl_node *n, const struct ctl_use *u, size_t k)
{
    for (size_t i = 0; i < k; i++)
        fatia_control_remove_usage(n, u[i].fr, u[i].v);
}

bool fatia_control_borrowing_with(const struct ctl_node *n, uint32_t fr, amt_t v)
{
    return amt_add(n->slot[fr].usage, v) > n->slot[fr].subtree;
}

int fatia_control_find_height(const struct ctl_cq *cq, uint32_t fr, amt_t v, bool *may_reclaim)
{
    const struct ctl_node *n = &cq->node, *t, *root = NULL;
    amt_t remaining;

    if (!n->parent || !fatia_control_borrowing_with(n, fr, v)) {
        *may_reclaim = n->parent != NULL;
        return 0;
    }
    remaining = amt_sub(v, fatia_control_local_available(n, fr));
    for (t = n->parent; t; t = t->parent) {
        if (!fatia_control_borrowing_with(t, fr, remaining)) {
            *may_reclaim = t->parent != NULL;
            return t->height;
        }
        remaining = amt_sub(remaining, fatia_control_local_available(t, fr));
        root = t;
    }
    *may_reclaim = false;
    return root ? root->height : 0;
}

bool fatia_control_fits_in_quota(const struct ctl_node *n, const struct ctl_use *req, size_t k,
                                 struct ctl_use *remaining)
{
    bool fits = true;

    for (size_t i = 0; i < k; i++) {
        const struct ctl_slot *s = &n->slot[req[i].fr];
        if (amt_add(s->usage, req[i].v) > s->subtree)
            fits = false;
        remaining[i].fr = req[i].fr;
        remaining[i].v = amt_max(0, amt_sub(req[i].v, fatia_control_local_available(n, req[i].fr)));
    }
    return fits;
}

bool fatia_control_within_nominal(const struct ctl_node *n, const uint32_t *frs, size_t k)
{
    for (size_t i = 0; i < k; i++)
        if (n->slot[frs[i]].usage > n->slot[frs[i]].subtree)
            return false;
    return true;
}

/* ---- dominant resource share ---- */

/* The share of the node's own usage (no extra) in one pass over its flavor-resources: the
 * borrowed amounts are summed per resource, in the order of frs, in a list of the resources that
 * borrow (usually one or two) instead of the engine-wide scratch array. The same value as the
 * general path below: the maximum ratio over the resources, ties to the smallest name, does not
 * depend on the order the resources are visited in, and each resource's sum adds the same
 * amounts in the same order. */
#define DRS_FAST_MAX 64

/* drs_plain of n with the usage of some flavor-resources replaced (set[i].v the usage of
 * set[i].fr; k 0: the tree's): one pass, the same sums in the same order, so the value is the
 * one drs_plain gives once the tree holds that usage. */
static struct fatia_control_drs drs_plain_set(struct fatia_control *c, const struct ctl_node *n,
                                              struct fatia_control_drs d, const struct ctl_use *set,
                                              size_t k)
{
    uint32_t rs[DRS_FAST_MAX];
    double bs[DRS_FAST_MAX];
    size_t m = 0;
    const amt_t *lend;

    for (size_t i = 0; i < n->n_frs; i++) {
        uint32_t fr = n->frs[i];
        const struct ctl_slot *sl = &n->slot[fr];
        amt_t u = sl->usage, b;
        uint32_t r;
        size_t j;
        for (j = 0; j < k; j++)
            if (set[j].fr == fr) {
                u = set[j].v;
                break;
            }
        if (u <= sl->subtree)
            continue;
        b = amt_sub(u, sl->subtree);
        if (b <= 0)
            continue;
        r = c->fr_res.v[fr];
        for (j = 0; j < m && rs[j] != r; j++)
            ;
        if (j == m) {
            rs[m] = r;
            bs[m++] = 0;
        }
        bs[j] += (double)b;
    }
    if (!m)
        return d;
    lend = n->parent->lend;
    if (!lend)
        return d;
    for (size_t j = 0; j < m; j++) {
        uint32_t r = rs[j];
        double ratio;
        if (lend[r] <= 0)
            continue;
        ratio = bs[j] * 1000.0 / (double)lend[r];
        if (ratio > d.ratio || (ratio == d.ratio && d.res != UINT32_MAX &&
                                strcmp(c->res_names.v[r], c->res_names.v[d.res]) < 0)) {
            d.ratio = ratio;
            d.res = r;
        }
    }
    return d;
}

static struct fatia_control_drs drs_plain(struct fatia_control *c, const struct ctl_node *n,
                                          struct fatia_control_drs d)
{
    return drs_plain_set(c, n, d, NULL, 0);
}

int fatia_control_drs_without(struct fatia_control *c, const struct ctl_node *at,
                              const struct ctl_node *from, const struct ctl_use *u, size_t k,
                              struct fatia_control_drs *ret)
{
    struct ctl_use set[CTL_DRS_WITHOUT_MAX];
    size_t m = 0;

    if (c->caches_off || k > CTL_DRS_WITHOUT_MAX || at->n_frs > DRS_FAST_MAX)
        return 0;
    for (size_t i = 0; i < k; i++) {
        /* fatia_control_remove_usage's walk, reading only: what reaches at */
        const struct ctl_node *n = from;
        amt_t v = u[i].v;
        for (size_t j = 0; j < i; j++)
            if (u[j].fr == u[i].fr)
                return 0; /* a repeated fr: the walks would interact */
        while (n != at) {
            amt_t stored = amt_sub(n->slot[u[i].fr].usage, fatia_control_local_quota(n, u[i].fr));
            if (stored <= 0 || !n->parent)
                break;
            v = amt_min(v, stored);
            n = n->parent;
        }
        if (n == at)
            set[m++] = (struct ctl_use){u[i].fr, amt_sub(at->slot[u[i].fr].usage, v)};
    }
    *ret = (struct fatia_control_drs){0.0, at->weight, UINT32_MAX};
    if (at->parent)
        *ret = drs_plain_set(c, at, *ret, set, m);
    return 1;
}

struct fatia_control_drs fatia_control_drs(struct fatia_control *c, const struct ctl_node *n,
                                           const struct ctl_use *extra, size_t k)
{
    struct fatia_control_drs d = {0.0, n->weight, UINT32_MAX};
    double *borrowed = c->scratch_dbl;
    amt_t *ex = c->scratch_amt;
    const amt_t *lend;
    bool any = false;
    size_t i;

    if (!n->parent)
        return d;
    if (!k && n->n_frs <= DRS_FAST_MAX)
        return drs_plain(c, n, d);
    if (!k) {
        /* the usual case: a node that borrows nothing has share 0 */
        for (i = 0; i < n->n_frs && !any; i++)
            any = n->slot[n->frs[i]].usage > n->slot[n->frs[i]].subtree;
        if (!any)
            return d;
        any = false;
    }
    for (i = 0; i < n->n_frs; i++)
        borrowed[c->fr_res.v[n->frs[i]]] = 0;
    if (k) {
        for (i = 0; i < n->n_frs; i++)
            ex[n->frs[i]] = 0;
        for (i = 0; i < k; i++)
            ex[extra[i].fr] = 0;
        for (i = 0; i < k; i++)
            ex[extra[i].fr] = amt_add(ex[extra[i].fr], extra[i].v);
    }
    /* borrowed per resource name, over the node's flavor-resources */
    for (i = 0; i < n->n_frs; i++) {
        uint32_t fr = n->frs[i];
        amt_t u = k ? amt_add(ex[fr], n->slot[fr].usage) : n->slot[fr].usage;
        amt_t b = amt_sub(u, n->slot[fr].subtree);
        if (b > 0) {
            borrowed[c->fr_res.v[fr]] += (double)b;
            any = true;
        }
    }
    if (!any)
        return d;
    lend = n->parent->lend;
    for (i = 0; i < n->n_frs; i++) {
        uint32_t r = c->fr_res.v[n->frs[i]];
        double b = borrowed[r], ratio;
        if (b <= 0)
            continue;
        borrowed[r] = -1; /* each resource once */
        if (!lend || lend[r] <= 0)
            continue;
        ratio = b * 1000.0 / (double)lend[r];
        if (ratio > d.ratio || (ratio == d.ratio && d.res != UINT32_MAX &&
                                strcmp(c->res_names.v[r], c->res_names.v[d.res]) < 0)) {
            d.ratio = ratio;
            d.res = r;
        }
    }
    return d;
}

/* Whether entry e of n's share cache holds n's current usage. */
static bool drs_entry_same(const struct ctl_node *n, int e)
{
    const amt_t *u = n->drs_use + (size_t)e * n->drs_n;
    size_t i = 0;

    while (i < n->n_frs && n->slot[n->frs[i]].usage == u[i])
        i++;
    return i == n->n_frs;
}

/* The share of a node's own usage, cached. Two entries, because a preemption search moves a
 * node between two states and back (the preemptor's usage added for the search and taken off
 * after it; a candidate removed and put back): with one entry each return to the earlier state
 * recomputed the share. A value is the same function of the same usage either way. */
struct fatia_control_drs fatia_control_drs_of(struct fatia_control *c, const struct ctl_node *n)
{
    struct ctl_node *m = (struct ctl_node *)n; /* the cache is not part of the node's value */
    struct fatia_control_drs d;
    uint64_t gen = c->tree_gen + 1;
    int e = m->drs_cur;

    if (c->caches_off)
        return fatia_control_drs(c, n, NULL, 0);
    if (m->drs_n == n->n_frs) {
        if (m->drs_gen[e] == gen && (m->drs_epoch == m->epoch || drs_entry_same(n, e))) {
            m->drs_epoch = m->epoch;
            return (struct fatia_control_drs){m->drs_ratio[e], m->weight, m->drs_res[e]};
        }
        e = !e;
        if (m->drs_gen[e] == gen && drs_entry_same(n, e)) {
            m->drs_cur = e;
            m->drs_epoch = m->epoch;
            return (struct fatia_control_drs){m->drs_ratio[e], m->weight, m->drs_res[e]};
        }
    }
    d = fatia_control_drs(c, n, NULL, 0);
    if (m->drs_n != n->n_frs) {
        amt_t *u = fatia_reallocarray(m->drs_use, n->n_frs ? 2 * n->n_frs : 1, sizeof(*u));
        if (!u) {
            m->drs_gen[0] = m->drs_gen[1] = 0; /* no cache */
            return d;
        }
        m->drs_use = u;
        m->drs_n = n->n_frs;
        m->drs_gen[0] = m->drs_gen[1] = 0;
        e = 0;
    }
    /* e: the entry not current before this call (the older one), or the first after a resize */
    for (size_t i = 0; i < n->n_frs; i++)
        m->drs_use[(size_t)e * n->n_frs + i] = n->slot[n->frs[i]].usage;
    m->drs_gen[e] = gen;
    m->drs_cur = e;
    m->drs_epoch = m->epoch;
    m->drs_ratio[e] = d.ratio;
    m->drs_res[e] = d.res;
    return d;
}

static bool drs_zero_weight_borrows(struct fatia_control_drs d)
{
    return d.weight == 0 && d.ratio != 0;
}

static double drs_weighted(struct fatia_control_drs d)
{
    if (d.ratio == 0)
        return 0;
    if (d.weight == 0)
        return INFINITY;
    return d.ratio / d.weight;
}

int fatia_control_drs_cmp(struct fatia_control_drs a, struct fatia_control_drs b)
{
    bool za = drs_zero_weight_borrows(a), zb = drs_zero_weight_borrows(b);
    double x, y;

    if (za && zb) {
        x = a.ratio;
        y = b.ratio;
    } else if (za) {
        return 1;
    } else if (zb) {
        return -1;
    } else {
        x = drs_weighted(a);
        y = drs_weighted(b);
    }
    return x < y ? -1 : x > y ? 1 : 0;
}

int64_t fatia_control_drs_rounded(struct fatia_control_drs d)
{
    double w;

    if (drs_zero_weight_borrows(d))
        return INT64_MAX;
    w = ceil(drs_weighted(d));
    if (w >= 9.2e18)
        return INT64_MAX;
    return (int64_t)w;
}

/* ---- rebuild ---- */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Appends fr to a growable list (duplicates removed later). */
static int frs_push(uint32_t **v, size_t *n, size_t *cap, uint32_t fr)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        uint32_t *p = fatia_reallocarray(*v, nc, sizeof(*p));
        if (!p)
            return -ENOMEM;
        *v = p;
        *cap = nc;
    }
    (*v)[(*n)++] = fr;
    return 0;
}

static void frs_uniq(uint32_t *v, size_t *n)
{
    size_t j = 0;

    if (*n < 2)
        return;
    qsort(v, *n, sizeof(*v), cmp_u32);
    for (size_t i = 1; i < *n; i++)
        if (v[i] != v[j])
            v[++j] = v[i];
    *n = j + 1;
}

static void apply_quota_spec(struct ctl_node *n, const struct ctl_quota_spec *qs,
                             struct fatia_control *c, bool cq)
{
    for (size_t i = 0; i < c->n_fr_cap; i++)
        n->slot[i] = (struct ctl_slot){
            0, AMT_NONE, AMT_NONE, 0, cq ? n->slot[i].usage : 0, cq ? n->slot[i].users : 0};
    for (size_t i = 0; i < qs->n_q; i++) {
        int fr = fatia_control_fr_find(c, qs->q[i].flavor, qs->q[i].res);
        if (fr < 0)
            continue;
        n->slot[fr].nominal = qs->q[i].nominal;
        n->slot[fr].blimit = qs->q[i].blimit;
        n->slot[fr].llimit = qs->q[i].llimit;
        n->slot[fr].subtree = qs->q[i].nominal;
    }
}

static int node_frs_from_spec(struct fatia_control *c, struct ctl_node *n,
                              const struct ctl_quota_spec *qs, size_t *cap)
{
    for (size_t i = 0; i < qs->n_q; i++) {
        int fr = fatia_control_fr_find(c, qs->q[i].flavor, qs->q[i].res);
        if (fr >= 0 && frs_push(&n->frs, &n->n_frs, cap, (uint32_t)fr) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* Post-order: fills subtree, usage, frs and height of cohort co from its children. */
static int accumulate(struct fatia_control *c, struct ctl_cohort *co, int depth)
{
    struct ctl_node *n = &co->node;
    size_t cap = 0;
    int r;

    if (depth > 100000)
        return -ELOOP;
    fatia_free(n->frs);
    n->frs = NULL;
    n->n_frs = 0;
    apply_quota_spec(n, &co->qs, c, false);
    r = node_frs_from_spec(c, n, &co->qs, &cap);
    if (r < 0)
        return r;
    n->height = (co->child_cohorts.n + co->child_cqs.n) ? 1 : 0;
    co->n_subtree_cqs = co->child_cqs.n;
    for (size_t i = 0; i < co->child_cohorts.n; i++) {
        struct ctl_cohort *ch = co->child_cohorts.v[i];
        r = accumulate(c, ch, depth + 1);
        if (r < 0)
            return r;
        if (ch->node.height + 1 > n->height)
            n->height = ch->node.height + 1;
        co->n_subtree_cqs += ch->n_subtree_cqs;
    }
    for (int pass = 0; pass < 2; pass++) {
        size_t m = pass ? co->child_cqs.n : co->child_cohorts.n;
        for (size_t i = 0; i < m; i++) {
            struct ctl_node *ch = pass ? &co->child_cqs.v[i]->node : &co->child_cohorts.v[i]->node;
            for (size_t j = 0; j < ch->n_frs; j++) {
                uint32_t fr = ch->frs[j];
                amt_t lq = fatia_control_local_quota(ch, fr);
                n->slot[fr].subtree =
                    amt_add(n->slot[fr].subtree, amt_sub(ch->slot[fr].subtree, lq));
                n->slot[fr].usage =
                    amt_add(n->slot[fr].usage, amt_max(0, amt_sub(ch->slot[fr].usage, lq)));
                if (frs_push(&n->frs, &n->n_frs, &cap, fr) < 0)
                    return -ENOMEM;
            }
        }
    }
    frs_uniq(n->frs, &n->n_frs);
    n->epoch++;
    return 0;
}

static int compute_lend(struct fatia_control *c, struct ctl_cohort *co, const struct ctl_node *root)
{
    struct ctl_node *n = &co->node;
    amt_t *l = fatia_reallocarray(n->lend, c->n_res_cap ? c->n_res_cap : 1, sizeof(*l));

    if (!l)
        return -ENOMEM;
    n->lend = l;
    memset(l, 0, (c->n_res_cap ? c->n_res_cap : 1) * sizeof(*l));
    for (size_t i = 0; i < root->n_frs; i++) {
        uint32_t fr = root->frs[i];
        uint32_t r = c->fr_res.v[fr];
        l[r] = amt_add(l[r], fatia_control_potential_available(n, fr));
    }
    for (size_t i = 0; i < co->child_cohorts.n; i++) {
        int rr = compute_lend(c, co->child_cohorts.v[i], root);
        if (rr < 0)
            return rr;
    }
    return 0;
}

static int cmp_cohort_name(const void *a, const void *b)
{
    return strcmp((*(struct ctl_cohort *const *)a)->name, (*(struct ctl_cohort *const *)b)->name);
}

static int cmp_cq_name(const void *a, const void *b)
{
    return strcmp((*(struct ctl_cq *const *)a)->name, (*(struct ctl_cq *const *)b)->name);
}

/* Recomputes one ClusterQueue's usage and flavor-resource list from its admitted workloads. */
static int cq_recompute(struct fatia_control *c, struct ctl_cq *cq)
{
    struct ctl_node *n = &cq->node;
    size_t cap = 0;
    int r;

    fatia_free(n->frs);
    n->frs = NULL;
    n->n_frs = 0;
    for (size_t i = 0; i < c->n_fr_cap; i++) {
        n->slot[i].usage = 0;
        n->slot[i].users = 0;
    }
    cq->min_prio_valid = false;
    apply_quota_spec(n, &cq->qs, c, true);
    r = node_frs_from_spec(c, n, &cq->qs, &cap);
    if (r < 0)
        return r;
    for (size_t i = 0; i < cq->admitted.n; i++) {
        struct ctl_wl *w = cq->admitted.v[i];
        for (size_t j = 0; j < w->n_use; j++) {
            n->slot[w->use[j].fr].usage = amt_add(n->slot[w->use[j].fr].usage, w->use[j].v);
            n->slot[w->use[j].fr].users++;
            if (frs_push(&n->frs, &n->n_frs, &cap, w->use[j].fr) < 0)
                return -ENOMEM;
        }
    }
    frs_uniq(n->frs, &n->n_frs);
    n->height = 0;
    n->epoch++;
    return 0;
}

int fatia_control_rebuild_tree(struct fatia_control *c)
{
    size_t i;
    int r;

    c->tree_gen++;
    bool changed;
    uint8_t *color;

    /* 1. every referenced cohort exists; unreferenced implicit ones go */
    for (i = 0; i < c->cqs.n; i++) {
        struct ctl_cq *cq = c->cqs.v[i];
        cq->cohort = NULL;
        if (cq->cohort_name && *cq->cohort_name) {
            r = fatia_control_cohort_ensure(c, cq->cohort_name, &cq->cohort);
            if (r < 0)
                return r;
        }
    }
    for (i = 0; i < c->cohorts.n; i++) {
        struct ctl_cohort *co = c->cohorts.v[i];
        co->parent = NULL;
        if (co->defined && co->parent_name && *co->parent_name) {
            r = fatia_control_cohort_ensure(c, co->parent_name, &co->parent);
            if (r < 0)
                return r;
        }
    }
    do {
        changed = false;
        for (i = 0; i < c->cohorts.n; i++) {
            struct ctl_cohort *co = c->cohorts.v[i];
            bool used = co->defined;
            for (size_t j = 0; !used && j < c->cqs.n; j++)
                used = c->cqs.v[j]->cohort == co;
            for (size_t j = 0; !used && j < c->cohorts.n; j++)
                used = c->cohorts.v[j]->parent == co;
            if (!used) {
                fatia_strmap_del(&c->cohort_index, co->name);
                c->cohorts.v[i] = c->cohorts.v[--c->cohorts.n];
                fatia_control_cohort_free(co);
                changed = true;
                i--;
            }
        }
    } while (changed);

    /* 2. cycles: every cohort whose parent chain enters a cycle is cut off */
    color = fatia_calloc(c->cohorts.n + 1, 1);
    if (!color)
        return -ENOMEM;
    for (i = 0; i < c->cohorts.n; i++) {
        c->cohorts.v[i]->node.height = (int)i; /* index, temporarily */
        c->cohorts.v[i]->in_cycle = false;
    }
    for (i = 0; i < c->cohorts.n; i++) {
        struct ctl_cohort *co = c->cohorts.v[i], *p;
        bool bad;
        if (color[i])
            continue;
        for (p = co; p && !color[p->node.height]; p = p->parent)
            color[p->node.height] = 1; /* on the current path */
        bad = p && (color[p->node.height] == 1 || p->in_cycle);
        for (p = co; p && color[p->node.height] == 1; p = p->parent) {
            color[p->node.height] = 2;
            p->in_cycle = bad;
        }
    }
    fatia_free(color);
    for (i = 0; i < c->cohorts.n; i++) {
        struct ctl_cohort *co = c->cohorts.v[i];
        co->child_cohorts.n = 0;
        co->child_cqs.n = 0;
        if (co->in_cycle)
            co->parent = NULL;
        co->node.parent = co->parent ? &co->parent->node : NULL;
    }

    /* 3. children lists, sorted by name */
    for (i = 0; i < c->cohorts.n; i++) {
        struct ctl_cohort *co = c->cohorts.v[i];
        if (co->parent && FATIA_VEC_PUSH(&co->parent->child_cohorts, co) < 0)
            return -ENOMEM;
    }
    for (i = 0; i < c->cqs.n; i++) {
        struct ctl_cq *cq = c->cqs.v[i];
        cq->node.parent = cq->cohort ? &cq->cohort->node : NULL;
        if (cq->cohort && FATIA_VEC_PUSH(&cq->cohort->child_cqs, cq) < 0)
            return -ENOMEM;
    }
    for (i = 0; i < c->cohorts.n; i++) {
        struct ctl_cohort *co = c->cohorts.v[i];
        if (co->child_cohorts.n > 1)
            qsort(co->child_cohorts.v, co->child_cohorts.n, sizeof(*co->child_cohorts.v),
                  cmp_cohort_name);
        if (co->child_cqs.n > 1)
            qsort(co->child_cqs.v, co->child_cqs.n, sizeof(*co->child_cqs.v), cmp_cq_name);
    }

    /* 4. quotas and usages, bottom-up from each root */
    for (i = 0; i < c->cqs.n; i++) {
        r = cq_recompute(c, c->cqs.v[i]);
        if (r < 0)
            return r;
    }
    for (i = 0; i < c->cohorts.n; i++) {
        struct ctl_cohort *co = c->cohorts.v[i];
        if (co->parent)
            continue;
        r = accumulate(c, co, 0);
        if (r < 0)
            return r;
        r = compute_lend(c, co, &co->node);
        if (r < 0)
            return r;
    }
    for (i = 0; i < c->cqs.n; i++)
        fatia_control_cq_update_active(c, c->cqs.v[i]);
    c->tree_dirty = false;
    return fatia_control_ready_all(c);
}
