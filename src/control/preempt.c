/*
 * control/preempt.c: choosing preemption targets (Kueue pkg/scheduler/preemption: classical
 * hierarchical preemption and fair-sharing preemption; reference/kueue.md §2.5 and §2.6).
 *
 * Both searches work on the live quota tree as a snapshot: a candidate is "removed" by taking
 * its usage off its ClusterQueue (propagating up the tree) and every removal is undone before
 * the function returns, so the tree is unchanged on every path out (the invariant checks in the
 * tests would catch a leak at once).
 *
 * Classical: candidates in the preemptor's ClusterQueue that withinClusterQueue allows, and, when
 * reclaimWithinCohort allows, candidates in the rest of the cohort tree reached by walking from
 * the parent to the root and descending only into subtrees above their nominal quota on the
 * needed flavor-resources. Each cross-queue candidate is classified: hierarchical reclaim (the
 * preemptor's subtree covers the request), reclaim without borrowing, or reclaim while borrowing
 * (borrowWithinCohort and maxPriorityThreshold). Candidates are ordered (evicted first, other
 * ClusterQueues first, lower priority, most recent quota reservation, UID) and removed greedily
 * until the preemptor fits, with or without borrowing as the attempt allows, then added back in
 * reverse order while it still fits (the minimisation).
 *
 * Fair sharing: candidates are the preemptor's own (withinClusterQueue) and those of every
 * borrowing ClusterQueue of the tree (reclaimWithinCohort); the preemptor's usage is added first
 * so shares are "after admission". Target ClusterQueues are chosen by descending from the root
 * into the child with the highest dominant resource share; a target in the preemptor's queue is
 * preempted unconditionally, a preemptor within its nominal quota reclaims unconditionally
 * (FairSharingPreemptWithinNominal), otherwise the first strategy (LessThanOrEqualToFinalShare:
 * preemptor's new share <= target's share after the removal) decides per candidate, and the
 * rejected ones get one chance per ClusterQueue under the second (LessThanInitialShare).
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "control/internal.h"

enum variant {
    V_NEVER,
    V_WITHIN_CQ,
    V_HIER,
    V_WITHOUT_BORROWING,
    V_WHILE_BORROWING
};

struct cand {
    struct ctl_wl *wl;
    const struct ctl_node *lca;
    enum variant v;
};

struct cands {
    struct cand *v;
    size_t n, cap;
};

struct pctx {
    struct fatia_control *c;
    struct ctl_cq *cq;
    const struct ctl_wl *w;
    const uint32_t *frs;
    size_t n_frs;
    const struct ctl_use *req;
    size_t n_req;
    uint64_t fr_bits; /* ctl_fr_bits(frs, n_frs) */
};

/* ---- targets list ---- */

int fatia_control_targets_push(struct ctl_targets *t, struct ctl_wl *w, const char *reason)
{
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 8;
        struct ctl_target *v = fatia_reallocarray(t->v, nc, sizeof(*v));
        if (!v)
            return -ENOMEM;
        t->v = v;
        t->cap = nc;
    }
    t->v[t->n++] = (struct ctl_target){w, reason};
    return 0;
}

void fatia_control_targets_release(struct ctl_targets *t)
{
    fatia_free(t->v);
    memset(t, 0, sizeof(*t));
}

static int cands_push(struct cands *l, struct cand c)
{
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 16;
        struct cand *v = fatia_reallocarray(l->v, nc, sizeof(*v));
        if (!v)
            return -ENOMEM;
        l->v = v;
        l->cap = nc;
    }
    l->v[l->n++] = c;
    return 0;
}

/* ---- snapshot ---- */

void fatia_control_snapshot_remove(struct fatia_control *c, struct ctl_wl *w)
{
    (void)c;
    fatia_control_remove_uses(&w->cq->node, w->use, w->n_use);
}

void fatia_control_snapshot_add(struct fatia_control *c, struct ctl_wl *w)
{
    (void)c;
    fatia_control_add_uses(&w->cq->node, w->use, w->n_use);
}

static void restore(struct fatia_control *c, const struct ctl_targets *t)
{
    for (size_t i = 0; i < t->n; i++)
        fatia_control_snapshot_add(c, t->v[i].wl);
}

bool fatia_control_wl_uses_frs(const struct ctl_wl *w, const uint32_t *frs, size_t n)
{
    if (!(w->fr_bits & ctl_fr_bits(frs, n)))
        return false;
    for (size_t i = 0; i < w->n_use; i++)
        for (size_t j = 0; j < n; j++)
            if (w->use[i].fr == frs[j])
                return true;
    return false;
}

/* fatia_control_wl_uses_frs for the search's frs, with their filter computed once. */
static bool uses_frs(const struct pctx *p, const struct ctl_wl *w)
{
    if (!(w->fr_bits & p->fr_bits))
        return false;
    for (size_t i = 0; i < w->n_use; i++)
        for (size_t j = 0; j < p->n_frs; j++)
            if (w->use[i].fr == p->frs[j])
                return true;
    return false;
}

/* workloadFits: every request fits the preemptor's ClusterQueue as the snapshot stands. */
static bool workload_fits(const struct pctx *p, bool allow_borrowing);

/* An upper bound that needs no ordering: does the preemptor fit (borrowing allowed) once every
 * candidate is gone? Removing usage never lowers what is available, and every search removes a
 * subset of the candidates, so when this fails no search can succeed and the sorting and the
 * share computations are skipped. */
static bool req_has_fr(const struct pctx *p, uint32_t fr)
{
    for (size_t i = 0; i < p->n_req; i++)
        if (p->req[i].fr == fr)
            return true;
    return false;
}

/* Takes off (sign < 0) or puts back (sign > 0) only the uses of w on the flavor-resources the
 * preemptor requests: workload_fits reads nothing else, and each flavor-resource's slots are
 * updated independently of the others', so the test sees exactly the state a full removal
 * gives, for a third of the tree walks (a workload uses three flavor-resources, the oracle's
 * searches request one). */
static void move_requested(const struct pctx *p, const struct ctl_wl *w, int sign)
{
    for (size_t i = 0; i < w->n_use; i++) {
        if (!req_has_fr(p, w->use[i].fr))
            continue;
        if (sign < 0)
            fatia_control_remove_usage(&w->cq->node, w->use[i].fr, w->use[i].v);
        else
            fatia_control_add_usage(&w->cq->node, w->use[i].fr, w->use[i].v);
    }
}

/* Whether a flavor-resource appears twice in the request (the sums would take its uses off
 * twice). */
static bool reqs_repeat(const struct pctx *p)
{
    for (size_t i = 0; i < p->n_req; i++)
        for (size_t j = i + 1; j < p->n_req; j++)
            if (p->req[i].fr == p->req[j].fr)
                return true;
    return false;
}

/* Adds w's uses of the requested flavor-resources to its ClusterQueue's sums; records the
 * ClusterQueue the first time the test (stamp) sees it. */
static int hl_add(const struct pctx *p, const struct ctl_wl *w, uint64_t stamp, size_t *k)
{
    struct fatia_control *c = p->c;
    struct ctl_cq *cq = w->cq;

    if (cq->hl_stamp != stamp) {
        if (*k == c->hl_cap) {
            size_t nc = c->hl_cap ? c->hl_cap * 2 : 64;
            struct ctl_cq **q = fatia_reallocarray(c->hl_cqs, nc, sizeof(*q));
            if (!q)
                return -ENOMEM;
            c->hl_cqs = q;
            c->hl_cap = nc;
        }
        cq->hl_stamp = stamp;
        for (size_t j = 0; j < p->n_req; j++)
            cq->hl_sum[j] = 0;
        c->hl_cqs[(*k)++] = cq;
    }
    for (size_t i = 0; i < w->n_use; i++)
        for (size_t j = 0; j < p->n_req; j++)
            if (w->use[i].fr == p->req[j].fr)
                cq->hl_sum[j] = amt_add(cq->hl_sum[j], w->use[i].v);
    return 0;
}

/* The hopeless test with the candidates' usage summed per ClusterQueue first: one walk up the
 * tree per ClusterQueue and flavor-resource instead of one per candidate. The same state: a
 * node's usage is its own plus what each child holds above its local quota, a function of the
 * ClusterQueues' usage alone, so removing a sum reaches what removing its parts one by one does
 * (and putting it back, in any order, what there was). Returns 1 (fits), 0, or -ENOMEM. */
static int fits_without_all_summed(const struct pctx *p, struct ctl_wl *const *v, size_t n,
                                   const struct cand *cv, size_t cn)
{
    struct fatia_control *c = p->c;
    uint64_t stamp = ++c->stamp;
    size_t k = 0;
    bool fits;

    for (size_t i = 0; i < n; i++)
        if (hl_add(p, v[i], stamp, &k) < 0)
            return -ENOMEM;
    for (size_t i = 0; i < cn; i++)
        if (hl_add(p, cv[i].wl, stamp, &k) < 0)
            return -ENOMEM;
    for (size_t i = 0; i < k; i++)
        for (size_t j = 0; j < p->n_req; j++)
            if (c->hl_cqs[i]->hl_sum[j])
                fatia_control_remove_usage(&c->hl_cqs[i]->node, p->req[j].fr,
                                           c->hl_cqs[i]->hl_sum[j]);
    fits = workload_fits(p, true);
    for (size_t i = k; i-- > 0;)
        for (size_t j = 0; j < p->n_req; j++)
            if (c->hl_cqs[i]->hl_sum[j])
                fatia_control_add_usage(&c->hl_cqs[i]->node, p->req[j].fr, c->hl_cqs[i]->hl_sum[j]);
    return fits;
}

static bool fits_without_all(const struct pctx *p, struct ctl_wl *const *v, size_t n,
                             const struct cand *cv, size_t cn)
{
    bool fits;

    if (!p->c->caches_off && p->n_req <= CTL_HL_MAX_REQ && !reqs_repeat(p)) {
        int r = fits_without_all_summed(p, v, n, cv, cn);
        if (r >= 0)
            return r;
        /* out of memory for the scratch list: the test one candidate at a time */
    }

    for (size_t i = 0; i < n; i++)
        move_requested(p, v[i], -1);
    for (size_t i = 0; i < cn; i++)
        move_requested(p, cv[i].wl, -1);
    fits = workload_fits(p, true);
    for (size_t i = 0; i < cn; i++)
        move_requested(p, cv[i].wl, 1);
    for (size_t i = 0; i < n; i++)
        move_requested(p, v[i], 1);
    return fits;
}

static bool workload_fits(const struct pctx *p, bool allow_borrowing)
{
    for (size_t i = 0; i < p->n_req; i++) {
        uint32_t fr = p->req[i].fr;
        if (!allow_borrowing && fatia_control_borrowing_with(&p->cq->node, fr, p->req[i].v))
            return false;
        if (p->req[i].v > fatia_control_available(&p->cq->node, fr))
            return false;
    }
    return true;
}

static bool cq_is_borrowing(const struct ctl_cq *cq, const uint32_t *frs, size_t n)
{
    if (!cq->node.parent)
        return false;
    for (size_t i = 0; i < n; i++)
        if (fatia_control_borrowing_with(&cq->node, frs[i], 0))
            return true;
    return false;
}

/* ---- ordering (Kueue CandidatesOrdering) ---- */

struct order_ctx {
    const struct ctl_cq *cq;
    int64_t now;
};

static bool evicted(const struct ctl_wl *w)
{
    return w->evicted_cond || w->state == CTL_WL_EVICTING;
}

static int cand_cmp(const struct ctl_wl *a, const struct ctl_wl *b, const struct order_ctx *o)
{
    bool ae = evicted(a), be = evicted(b), ain = a->cq == o->cq, bin = b->cq == o->cq;
    int64_t ta, tb;
    int r;

    if (ae != be)
        return ae ? -1 : 1;
    if (ain != bin)
        return ain ? 1 : -1;
    if (a->priority != b->priority)
        return a->priority < b->priority ? -1 : 1;
    ta = a->qr_time ? a->qr_time : o->now;
    tb = b->qr_time ? b->qr_time : o->now;
    if (ta != tb)
        return ta > tb ? -1 : 1;
    r = strcmp(a->uid, b->uid);
    if (r)
        return r;
    return strcmp(a->key, b->key);
}

static int cand_qsort_cmp(const void *x, const void *y, void *arg)
{
    return cand_cmp(((const struct cand *)x)->wl, ((const struct cand *)y)->wl, arg);
}

static int wl_qsort_cmp(const void *x, const void *y, void *arg)
{
    return cand_cmp(*(struct ctl_wl *const *)x, *(struct ctl_wl *const *)y, arg);
}

/* cand_cmp is a total order (it ends on the workload key, which is unique), so every sorting
 * algorithm gives the same result: short lists (the usual case) go through an insertion sort,
 * which allocates nothing and calls no comparator through a pointer. */
#define SORT_SHORT 24

static void sort_wls(struct ctl_wl **v, size_t n, const struct order_ctx *o)
{
    if (n > SORT_SHORT) {
        qsort_r(v, n, sizeof(*v), wl_qsort_cmp, (void *)o);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        struct ctl_wl *x = v[i];
        size_t j = i;
        for (; j > 0 && cand_cmp(x, v[j - 1], o) < 0; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

static void sort_cands(struct cand *v, size_t n, const struct order_ctx *o)
{
    if (n > SORT_SHORT) {
        qsort_r(v, n, sizeof(*v), cand_qsort_cmp, (void *)o);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        struct cand x = v[i];
        size_t j = i;
        for (; j > 0 && cand_cmp(x.wl, v[j - 1].wl, o) < 0; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

/* ---- policies ---- */

static bool satisfies_policy(const struct pctx *p, const struct ctl_wl *cand)
{
    enum ctl_policy pol = cand->cq == p->cq ? p->cq->within : p->cq->reclaim;
    int32_t in = p->w->priority, cp = cand->priority;

    switch (pol) {
    case CTL_NEVER:
        return false;
    case CTL_LOWER:
        return in > cp;
    case CTL_LOWER_OR_NEWER_EQUAL:
        return in > cp || (in == cp && p->w->created < cand->created);
    case CTL_ANY:
        return true;
    }
    return false;
}

/* Whether cq can hold a candidate at all, from its summaries: some admitted workload uses a
 * needed flavor-resource, and the policy toward cq admits the lowest priority it holds. Exact:
 * the per-workload filters (uses the resources, satisfies the policy) reject every workload of
 * a ClusterQueue this rejects, so skipping it changes nothing but the time. */
static bool cq_may_hold(const struct pctx *p, struct ctl_cq *cq)
{
    enum ctl_policy pol = cq == p->cq ? p->cq->within : p->cq->reclaim;
    bool used = false;

    for (size_t i = 0; i < p->n_frs && !used; i++)
        used = cq->node.slot[p->frs[i]].users > 0;
    if (!used)
        return false;
    switch (pol) {
    case CTL_NEVER:
        return false;
    case CTL_LOWER:
        return fatia_control_cq_min_prio(cq) < p->w->priority;
    case CTL_LOWER_OR_NEWER_EQUAL:
        return fatia_control_cq_min_prio(cq) <= p->w->priority;
    case CTL_ANY:
        return true;
    }
    return false;
}

static enum variant classify(const struct pctx *p, const struct ctl_wl *cand, bool adv)
{
    int32_t in = p->w->priority, cp = cand->priority;

    if (!uses_frs(p, cand))
        return V_NEVER;
    if (!satisfies_policy(p, cand))
        return V_NEVER;
    if (cand->cq == p->cq)
        return V_WITHIN_CQ;
    if (adv)
        return V_HIER;
    if (!p->cq->borrow_within)
        return V_WITHOUT_BORROWING;
    if (cp >= in || (p->cq->has_threshold && cp > p->cq->threshold))
        return V_WITHOUT_BORROWING;
    return V_WHILE_BORROWING;
}

static const char *variant_reason(enum variant v)
{
    switch (v) {
    case V_WITHIN_CQ:
        return "InClusterQueue";
    case V_HIER:
    case V_WITHOUT_BORROWING:
        return "InCohortReclamation";
    case V_WHILE_BORROWING:
        return "InCohortReclaimWhileBorrowing";
    case V_NEVER:
        break;
    }
    return "Unknown";
}

static int cands_from_cq(const struct pctx *p, struct ctl_cq *cq, const struct ctl_node *lca,
                         bool adv, struct cands *out)
{
    if (!cq_may_hold(p, cq))
        return 0;
    for (size_t i = 0; i < cq->admitted.n; i++) {
        enum variant v;
        if (!(cq->adm_bits[i] & p->fr_bits))
            continue;
        v = classify(p, cq->admitted.v[i], adv);
        if (v == V_NEVER)
            continue;
        if (cands_push(out, (struct cand){cq->admitted.v[i], lca, v}) < 0)
            return -ENOMEM;
    }
    p->c->phases.preempt_candidates += cq->admitted.n;
    return 0;
}

static int collect_in_subtree(const struct pctx *p, struct ctl_cohort *cur,
                              const struct ctl_node *root, const struct ctl_cohort *skip, bool adv,
                              struct cands *out)
{
    int r;

    for (size_t i = 0; i < cur->child_cohorts.n; i++) {
        struct ctl_cohort *ch = cur->child_cohorts.v[i];
        if (ch == skip || fatia_control_within_nominal(&ch->node, p->frs, p->n_frs))
            continue;
        r = collect_in_subtree(p, ch, root, skip, adv, out);
        if (r < 0)
            return r;
    }
    for (size_t i = 0; i < cur->child_cqs.n; i++) {
        struct ctl_cq *ch = cur->child_cqs.v[i];
        if (ch == p->cq || fatia_control_within_nominal(&ch->node, p->frs, p->n_frs))
            continue;
        r = cands_from_cq(p, ch, root, adv, out);
        if (r < 0)
            return r;
    }
    return 0;
}

static size_t split_evicted(const struct cands *l)
{
    size_t i = 0;

    while (i < l->n && evicted(l->v[i].wl))
        i++;
    return i;
}

static bool cand_valid(const struct pctx *p, const struct cand *cd, bool borrow)
{
    const struct ctl_cq *cq = cd->wl->cq;

    if (cq == p->cq)
        return true;
    if (borrow && cd->v == V_WITHOUT_BORROWING)
        return false;
    if (fatia_control_within_nominal(&cq->node, p->frs, p->n_frs))
        return false;
    for (const struct ctl_node *n = cq->node.parent; n && n != cd->lca; n = n->parent)
        if (fatia_control_within_nominal(n, p->frs, p->n_frs))
            return false;
    return true;
}

static bool queue_under_nominal(const struct pctx *p)
{
    for (size_t i = 0; i < p->n_frs; i++) {
        const struct ctl_slot *s = &p->cq->node.slot[p->frs[i]];
        if (s->usage >= s->nominal)
            return false;
    }
    return true;
}

static void fill_back(const struct pctx *p, struct ctl_targets *t, bool borrow)
{
    if (t->n < 2)
        return;
    for (size_t i = t->n - 1; i-- > 0;) {
        fatia_control_snapshot_add(p->c, t->v[i].wl);
        if (workload_fits(p, borrow))
            t->v[i] = t->v[--t->n];
        else
            fatia_control_snapshot_remove(p->c, t->v[i].wl);
    }
}

static int classical(const struct pctx *p, struct ctl_targets *ret)
{
    struct cands same = {0}, hier = {0}, prio = {0}, all = {0};
    struct order_ctx o = {p->cq, p->c->now};
    bool forbidden = !p->cq->borrow_within, attempts[2];
    size_t n_attempts, ev_h, ev_p, ev_s;
    int r = 0;

    if (p->cq->within != CTL_NEVER) {
        r = cands_from_cq(p, p->cq, NULL, false, &same);
        if (r < 0)
            goto out;
    }
    if (p->cq->node.parent && p->cq->reclaim != CTL_NEVER) {
        struct ctl_use rem_a[64], rem_b[64], *rem = rem_a, *nxt = rem_b, *tmp;
        const struct ctl_cohort *prev = NULL;
        size_t k = p->n_req < 64 ? p->n_req : 64;
        bool adv = fatia_control_fits_in_quota(&p->cq->node, p->req, k, rem);
        for (struct ctl_cohort *cur = p->cq->cohort; cur; cur = cur->parent) {
            r = collect_in_subtree(p, cur, &cur->node, prev, adv, adv ? &hier : &prio);
            if (r < 0)
                goto out;
            adv = fatia_control_fits_in_quota(&cur->node, rem, k, nxt) || adv;
            tmp = rem;
            rem = nxt;
            nxt = tmp;
            prev = cur;
        }
    }
    p->c->phases.preempt_collected += same.n + hier.n + prio.n;
    if (!same.n && !hier.n && !prio.n)
        goto out;
    {
        /* the three lists are disjoint: take the first two out, test with the third */
        bool possible;
        for (size_t i = 0; i < same.n; i++)
            fatia_control_snapshot_remove(p->c, same.v[i].wl);
        for (size_t i = 0; i < hier.n; i++)
            fatia_control_snapshot_remove(p->c, hier.v[i].wl);
        possible = fits_without_all(p, NULL, 0, prio.v, prio.n);
        for (size_t i = 0; i < hier.n; i++)
            fatia_control_snapshot_add(p->c, hier.v[i].wl);
        for (size_t i = 0; i < same.n; i++)
            fatia_control_snapshot_add(p->c, same.v[i].wl);
        if (!possible) {
            p->c->phases.preempt_hopeless++;
            goto out;
        }
    }
    if (same.n > 1)
        sort_cands(same.v, same.n, &o);
    if (hier.n > 1)
        sort_cands(hier.v, hier.n, &o);
    if (prio.n > 1)
        sort_cands(prio.v, prio.n, &o);
    ev_h = split_evicted(&hier);
    ev_p = split_evicted(&prio);
    ev_s = split_evicted(&same);
    {
        const struct cands *lists[3] = {&hier, &prio, &same};
        const size_t ev[3] = {ev_h, ev_p, ev_s};
        for (int pass = 0; pass < 2; pass++)
            for (int l = 0; l < 3; l++) {
                size_t from = pass ? ev[l] : 0, to = pass ? lists[l]->n : ev[l];
                for (size_t i = from; i < to; i++)
                    if ((r = cands_push(&all, lists[l]->v[i])) < 0)
                        goto out;
            }
    }
    if ((hier.n == 0 && prio.n == 0) || (forbidden && !queue_under_nominal(p))) {
        attempts[0] = true;
        n_attempts = 1;
    } else if (forbidden && hier.n == 0) {
        attempts[0] = false;
        attempts[1] = true;
        n_attempts = 2;
    } else {
        attempts[0] = true;
        attempts[1] = false;
        n_attempts = 2;
    }
    for (size_t a = 0; a < n_attempts; a++) {
        bool borrow = attempts[a];
        ret->n = 0;
        for (size_t i = 0; i < all.n; i++) {
            if (!cand_valid(p, &all.v[i], borrow))
                continue;
            fatia_control_snapshot_remove(p->c, all.v[i].wl);
            if ((r = fatia_control_targets_push(ret, all.v[i].wl, variant_reason(all.v[i].v))) <
                0) {
                fatia_control_snapshot_add(p->c, all.v[i].wl);
                restore(p->c, ret);
                ret->n = 0;
                goto out;
            }
            if (workload_fits(p, borrow)) {
                fill_back(p, ret, borrow);
                restore(p->c, ret);
                goto out;
            }
        }
        restore(p->c, ret);
        ret->n = 0;
    }
out:
    fatia_free(same.v);
    fatia_free(hier.v);
    fatia_free(prio.v);
    fatia_free(all.v);
    return r;
}

/* ---- fair sharing ---- */

struct fs_state {
    const struct pctx *p;
    struct ctl_wl **wls; /* candidates grouped by ClusterQueue, each group in candidate order */
    size_t n;
    uint64_t stamp;
    struct ctl_targets *t;
    bool fits;
};

static struct ctl_cohort *root_of(struct ctl_cq *cq)
{
    struct ctl_cohort *co = cq->cohort;

    while (co && co->parent)
        co = co->parent;
    return co;
}

static bool on_preemptor_path(const struct pctx *p, const struct ctl_cohort *co)
{
    for (const struct ctl_cohort *x = p->cq->cohort; x; x = x->parent)
        if (x == co)
            return true;
    return false;
}

static bool cq_pruned(const struct fs_state *s, const struct ctl_cq *cq)
{
    return cq->stamp == s->stamp && cq->pruned;
}

static bool cq_has_workload(const struct fs_state *s, const struct ctl_cq *cq)
{
    return cq->stamp == s->stamp && cq->grp_pos < cq->grp_n;
}

static void cq_prune(const struct fs_state *s, struct ctl_cq *cq)
{
    if (cq->stamp != s->stamp) {
        cq->stamp = s->stamp;
        cq->grp_n = cq->grp_pos = 0;
    }
    cq->pruned = true;
}

static bool co_pruned(const struct fs_state *s, const struct ctl_cohort *co)
{
    return co->stamp == s->stamp && co->pruned;
}

static void co_prune(const struct fs_state *s, struct ctl_cohort *co)
{
    co->stamp = s->stamp;
    co->pruned = true;
}

/* Builds the per-ClusterQueue groups of a candidate list (already ordered). */
static int fs_groups(struct fs_state *s, struct ctl_wl **list, size_t n)
{
    struct fatia_control *c = s->p->c;
    struct ctl_wl **out;
    size_t k = 0;

    s->stamp = ++c->stamp;
    out = fatia_reallocarray(NULL, n ? n : 1, sizeof(*out));
    if (!out)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        struct ctl_cq *cq = list[i]->cq;
        if (cq->stamp != s->stamp) {
            cq->stamp = s->stamp;
            cq->pruned = false;
            cq->grp_n = 0;
            cq->grp_pos = 0;
            for (struct ctl_cohort *co = cq->cohort; co && co->cand_stamp != s->stamp;
                 co = co->parent)
                co->cand_stamp = s->stamp;
        }
        cq->grp_n++;
    }
    for (size_t i = 0; i < n; i++) {
        struct ctl_cq *cq = list[i]->cq;
        if (cq->grp_pos == 0 && cq->grp_n) {
            cq->grp = k;
            k += cq->grp_n;
            cq->grp_pos = cq->grp_n; /* used as a fill counter below */
        }
    }
    for (size_t i = 0; i < n; i++) {
        struct ctl_cq *cq = list[i]->cq;
        out[cq->grp + (cq->grp_n - cq->grp_pos)] = list[i];
        cq->grp_pos--;
    }
    fatia_free(s->wls);
    s->wls = out;
    s->n = n;
    /* preemptor CQ without candidates still needs its stamp for pruning */
    if (s->p->cq->stamp != s->stamp) {
        s->p->cq->stamp = s->stamp;
        s->p->cq->pruned = false;
        s->p->cq->grp_n = s->p->cq->grp_pos = 0;
    }
    return 0;
}

static struct ctl_wl *cq_pop(struct fs_state *s, struct ctl_cq *cq)
{
    return s->wls[cq->grp + cq->grp_pos++];
}

/* nextTarget: descends from co into the child with the highest share. */
static struct ctl_cq *next_target(struct fs_state *s, struct ctl_cohort *co, int depth)
{
    const struct pctx *p = s->p;
    struct fatia_control *c = p->c;
    struct ctl_cq *best_cq = NULL;
    struct ctl_cohort *best_co = NULL;
    struct fatia_control_drs cq_drs = {0}, co_drs = {0};

    if (depth > 100000)
        return NULL;
    for (size_t i = 0; i < co->child_cqs.n; i++) {
        struct ctl_cq *cq = co->child_cqs.v[i];
        struct fatia_control_drs d;
        if (cq_pruned(s, cq))
            continue;
        /* without a candidate it is pruned whatever its share: skip computing the share */
        if (!cq_has_workload(s, cq)) {
            cq_prune(s, cq);
            continue;
        }
        d = fatia_control_drs_of(c, &cq->node);
        if (d.ratio == 0 && cq != p->cq)
            cq_prune(s, cq);
        else if (!best_cq || fatia_control_drs_cmp(d, cq_drs) >= 0) {
            best_cq = cq;
            cq_drs = d;
        }
    }
    for (size_t i = 0; i < co->child_cohorts.n; i++) {
        struct ctl_cohort *ch = co->child_cohorts.v[i];
        struct fatia_control_drs d;
        if (co_pruned(s, ch))
            continue;
        /* A subtree without candidates would be chosen, descended into, find nothing and be
         * pruned, and the search would pick again: pruning it now gives the same targets. */
        if (ch->cand_stamp != s->stamp) {
            co_prune(s, ch);
            continue;
        }
        d = fatia_control_drs_of(c, &ch->node);
        if (d.ratio == 0 && !on_preemptor_path(p, ch))
            co_prune(s, ch);
        else if (!best_co || fatia_control_drs_cmp(d, co_drs) >= 0) {
            best_co = ch;
            co_drs = d;
        }
    }
    if (!best_cq && !best_co) {
        co_prune(s, co);
        return NULL;
    }
    if (best_co && (!best_cq || fatia_control_drs_cmp(co_drs, cq_drs) >= 0))
        return next_target(s, best_co, depth + 1);
    return best_cq;
}

/* The almost-LCA nodes of (preemptor, target): the children of their lowest common ancestor. */
static void almost_lcas(const struct pctx *p, const struct ctl_cq *target,
                        const struct ctl_node **ret_pre, const struct ctl_node **ret_tgt)
{
    const struct ctl_cohort *lca = NULL;
    const struct ctl_node *prev;

    for (const struct ctl_cohort *x = target->cohort; x && !lca; x = x->parent)
        if (on_preemptor_path(p, x))
            lca = x;
    prev = &p->cq->node;
    for (const struct ctl_cohort *x = p->cq->cohort; x && x != lca; x = x->parent)
        prev = &x->node;
    *ret_pre = prev;
    prev = &target->node;
    for (const struct ctl_cohort *x = target->cohort; x && x != lca; x = x->parent)
        prev = &x->node;
    *ret_tgt = prev;
}

static bool strategy_passes(int strategy, struct fatia_control_drs pnew,
                            struct fatia_control_drs told, struct fatia_control_drs tnew)
{
    if (strategy == 0)
        return fatia_control_drs_cmp(pnew, tnew) <= 0;
    return fatia_control_drs_cmp(pnew, told) < 0;
}

/* Yields one target: the candidate is already removed. Checks whether the preemptor fits. */
static int fs_yield(struct fs_state *s, struct ctl_wl *wl, const char *reason)
{
    const struct pctx *p = s->p;
    int r = fatia_control_targets_push(s->t, wl, reason);

    if (r < 0) {
        fatia_control_snapshot_add(p->c, wl);
        return r;
    }
    fatia_control_remove_uses(&p->cq->node, p->req, p->n_req);
    s->fits = workload_fits(p, true);
    fatia_control_add_uses(&p->cq->node, p->req, p->n_req);
    p->c->phases.preempt_candidates++;
    return 0;
}

static int fs_first(struct fs_state *s, int strategy, struct ctl_wl ***ret_retry,
                    size_t *ret_n_retry)
{
    const struct pctx *p = s->p;
    struct fatia_control *c = p->c;
    struct ctl_wl **retry = NULL;
    size_t n_retry = 0;
    struct ctl_cohort *root = root_of(p->cq);
    bool within_nominal = true;
    int r = 0;

    retry = fatia_reallocarray(NULL, s->n ? s->n : 1, sizeof(*retry));
    if (!retry)
        return -ENOMEM;
    for (size_t i = 0; i < p->n_frs; i++) {
        const struct ctl_slot *sl = &p->cq->node.slot[p->frs[i]];
        if (sl->usage > sl->nominal)
            within_nominal = false;
    }
    for (;;) {
        struct ctl_cq *tq;
        if (!root) {
            tq = cq_has_workload(s, p->cq) ? p->cq : NULL;
            if (!tq)
                break;
        } else {
            if (co_pruned(s, root))
                break;
            tq = next_target(s, root, 0);
            if (!tq)
                continue;
        }
        c->result.n_fair_decisions++;
        if (tq == p->cq) {
            struct ctl_wl *wl = cq_pop(s, tq);
            fatia_control_snapshot_remove(c, wl);
            if ((r = fs_yield(s, wl, "InClusterQueue")) < 0 || s->fits)
                goto out;
            continue;
        }
        if (within_nominal) {
            struct ctl_wl *wl = cq_pop(s, tq);
            fatia_control_snapshot_remove(c, wl);
            if ((r = fs_yield(s, wl, "InCohortReclamation")) < 0 || s->fits)
                goto out;
            continue;
        }
        {
            const struct ctl_node *pa, *ta;
            struct fatia_control_drs pnew, told;
            almost_lcas(p, tq, &pa, &ta);
            pnew = fatia_control_drs_of(c, pa);
            told = fatia_control_drs_of(c, ta);
            while (cq_has_workload(s, tq)) {
                struct ctl_wl *wl = cq_pop(s, tq);
                struct fatia_control_drs tnew;
                /* the target's share after the removal, read without removing: most candidates
                 * fail the strategy and would be put back at once */
                if (fatia_control_drs_without(c, ta, &wl->cq->node, wl->use, wl->n_use, &tnew)) {
                    if (!strategy_passes(strategy, pnew, told, tnew)) {
                        retry[n_retry++] = wl;
                        continue;
                    }
                    fatia_control_snapshot_remove(c, wl);
                } else {
                    fatia_control_snapshot_remove(c, wl);
                    tnew = fatia_control_drs_of(c, ta);
                    if (!strategy_passes(strategy, pnew, told, tnew)) {
                        fatia_control_snapshot_add(c, wl);
                        retry[n_retry++] = wl;
                        continue;
                    }
                }
                if ((r = fs_yield(s, wl, "InCohortFairSharing")) < 0 || s->fits)
                    goto out;
                break;
            }
        }
    }
out:
    *ret_retry = retry;
    *ret_n_retry = n_retry;
    return r;
}

static int fs_second(struct fs_state *s, struct ctl_wl **retry, size_t n_retry)
{
    const struct pctx *p = s->p;
    struct fatia_control *c = p->c;
    struct ctl_cohort *root = root_of(p->cq);
    int r = fs_groups(s, retry, n_retry);

    if (r < 0)
        return r;
    for (;;) {
        struct ctl_cq *tq;
        const struct ctl_node *pa, *ta;
        if (!root) {
            tq = cq_has_workload(s, p->cq) ? p->cq : NULL;
            if (!tq)
                break;
        } else {
            if (co_pruned(s, root))
                break;
            tq = next_target(s, root, 0);
            if (!tq)
                continue;
        }
        c->result.n_fair_decisions++;
        almost_lcas(p, tq, &pa, &ta);
        {
            struct fatia_control_drs pnew = fatia_control_drs_of(c, pa),
                                     told = fatia_control_drs_of(c, ta);
            struct ctl_wl *wl = cq_pop(s, tq);
            if (strategy_passes(1, pnew, told, told)) {
                fatia_control_snapshot_remove(c, wl);
                if ((r = fs_yield(s, wl, "InCohortFairSharing")) < 0 || s->fits)
                    return r;
            }
        }
        cq_prune(s, tq);
        if (!root)
            break;
    }
    return 0;
}

static int collect_fair_tree(const struct pctx *p, struct ctl_cohort *co, struct ctl_wl ***v,
                             size_t *n, size_t *cap, int depth)
{
    if (depth > 100000)
        return 0;
    for (size_t i = 0; i < co->child_cqs.n; i++) {
        struct ctl_cq *cq = co->child_cqs.v[i];
        if (cq == p->cq || !cq_is_borrowing(cq, p->frs, p->n_frs) || !cq_may_hold(p, cq))
            continue;
        for (size_t j = 0; j < cq->admitted.n; j++) {
            struct ctl_wl *x;
            if (!(cq->adm_bits[j] & p->fr_bits))
                continue;
            x = cq->admitted.v[j];
            if (!uses_frs(p, x) || !satisfies_policy(p, x))
                continue;
            if (*n == *cap) {
                size_t nc = *cap ? *cap * 2 : 16;
                struct ctl_wl **q = fatia_reallocarray(*v, nc, sizeof(*q));
                if (!q)
                    return -ENOMEM;
                *v = q;
                *cap = nc;
            }
            (*v)[(*n)++] = x;
        }
        p->c->phases.preempt_candidates += cq->admitted.n;
    }
    for (size_t i = 0; i < co->child_cohorts.n; i++) {
        int r = collect_fair_tree(p, co->child_cohorts.v[i], v, n, cap, depth + 1);
        if (r < 0)
            return r;
    }
    return 0;
}

/* ---- the nomination memo of cohort-tree candidates ---- */

#define CTL_FS_MEMO_N 256

void fatia_control_nominate_begin(struct fatia_control *c)
{
    c->nom_gen = ++c->nom_gen_next;
}

void fatia_control_nominate_end(struct fatia_control *c)
{
    c->nom_gen = 0;
}

void fatia_control_memo_release(struct fatia_control *c)
{
    for (size_t i = 0; c->fs_memo && i < CTL_FS_MEMO_N; i++)
        fatia_free(c->fs_memo[i].v);
    fatia_free(c->fs_memo);
    c->fs_memo = NULL;
}

/* What collect_fair_tree finds for one flavor-resource before the preemptor's own filters:
 * the admitted workloads that use fr in every ClusterQueue of the tree that borrows on fr, in
 * the same order. */
static int memo_fill(const struct pctx *p, const struct ctl_cohort *co, struct ctl_fs_memo *m,
                     int depth)
{
    uint32_t fr = p->frs[0];
    uint64_t bit = ctl_fr_bits(&fr, 1);

    if (depth > 100000)
        return 0;
    for (size_t i = 0; i < co->child_cqs.n; i++) {
        struct ctl_cq *cq = co->child_cqs.v[i];
        if (!cq->node.slot[fr].users || !cq_is_borrowing(cq, &fr, 1))
            continue;
        for (size_t j = 0; j < cq->admitted.n; j++) {
            struct ctl_wl *x;
            if (!(cq->adm_bits[j] & bit))
                continue;
            x = cq->admitted.v[j];
            if (!fatia_control_wl_uses_frs(x, &fr, 1))
                continue;
            if (m->n == m->cap) {
                size_t nc = m->cap ? m->cap * 2 : 64;
                struct ctl_fs_memo_wl *q = fatia_reallocarray(m->v, nc, sizeof(*q));
                if (!q)
                    return -ENOMEM;
                m->v = q;
                m->cap = nc;
            }
            m->v[m->n++] = (struct ctl_fs_memo_wl){x, cq, x->created, x->priority};
        }
    }
    for (size_t i = 0; i < co->child_cohorts.n; i++) {
        int r = memo_fill(p, co->child_cohorts.v[i], m, depth + 1);
        if (r < 0)
            return r;
    }
    return 0;
}

/* collect_fair_tree for a search of one flavor-resource during nomination, from the memo: the
 * tree part does not depend on the preemptor but for its own ClusterQueue (skipped) and its
 * policy (satisfies_policy, applied here per workload from the memo's copies of priority and
 * creation time: neither changes during a nomination phase). cq_may_hold is a shortcut of those
 * same per-workload filters, so leaving it out changes nothing but the time. Returns 1 when it
 * did the collection, 0 when the caller must (memo off or not nominating). */
static int collect_from_memo(const struct pctx *p, const struct ctl_cohort *root,
                             struct ctl_wl ***v, size_t *n, size_t *cap)
{
    struct fatia_control *c = p->c;
    struct ctl_fs_memo *m;
    const enum ctl_policy pol = p->cq->reclaim;
    const int32_t in = p->w->priority;
    const int64_t in_created = p->w->created;
    size_t h;
    int r;

    if (p->n_frs != 1 || !c->nom_gen || c->caches_off)
        return 0;
    if (!c->fs_memo) {
        c->fs_memo = fatia_calloc(CTL_FS_MEMO_N, sizeof(*c->fs_memo));
        if (!c->fs_memo)
            return -ENOMEM;
    }
    h = (((uintptr_t)root >> 4) * 31u + p->frs[0]) % CTL_FS_MEMO_N;
    m = &c->fs_memo[h];
    if (m->gen != c->nom_gen || m->root != root || m->fr != p->frs[0]) {
        m->gen = 0;
        m->root = root;
        m->fr = p->frs[0];
        m->n = 0;
        r = memo_fill(p, root, m, 0);
        if (r < 0)
            return r;
        m->gen = c->nom_gen;
    }
    for (size_t i = 0; i < m->n; i++) {
        const struct ctl_fs_memo_wl *x = &m->v[i];
        bool ok = false;
        if (x->cq == p->cq)
            continue;
        switch (pol) {
        case CTL_NEVER:
            break;
        case CTL_LOWER:
            ok = in > x->priority;
            break;
        case CTL_LOWER_OR_NEWER_EQUAL:
            ok = in > x->priority || (in == x->priority && in_created < x->created);
            break;
        case CTL_ANY:
            ok = true;
            break;
        }
        if (!ok)
            continue;
        if (*n == *cap) {
            size_t nc = *cap ? *cap * 2 : 16;
            struct ctl_wl **q = fatia_reallocarray(*v, nc, sizeof(*q));
            if (!q)
                return -ENOMEM;
            *v = q;
            *cap = nc;
        }
        (*v)[(*n)++] = x->wl;
    }
    c->phases.preempt_candidates += m->n;
    return 1;
}

static int fair(const struct pctx *p, struct ctl_targets *ret)
{
    struct fatia_control *c = p->c;
    struct ctl_wl **cands = NULL, **retry = NULL;
    size_t n = 0, cap = 0, n_retry = 0;
    struct order_ctx o = {p->cq, c->now};
    struct fs_state s = {.p = p, .t = ret};
    int r = 0;

    ret->n = 0;
    if (p->cq->within != CTL_NEVER && cq_may_hold(p, p->cq)) {
        for (size_t j = 0; j < p->cq->admitted.n; j++) {
            struct ctl_wl *x;
            if (!(p->cq->adm_bits[j] & p->fr_bits))
                continue;
            x = p->cq->admitted.v[j];
            if (!uses_frs(p, x) || !satisfies_policy(p, x))
                continue;
            if (n == cap) {
                size_t nc = cap ? cap * 2 : 16;
                struct ctl_wl **q = fatia_reallocarray(cands, nc, sizeof(*q));
                if (!q) {
                    r = -ENOMEM;
                    goto out;
                }
                cands = q;
                cap = nc;
            }
            cands[n++] = x;
        }
    }
    if (p->cq->node.parent && p->cq->reclaim != CTL_NEVER) {
        r = collect_from_memo(p, root_of(p->cq), &cands, &n, &cap);
        if (r == 0)
            r = collect_fair_tree(p, root_of(p->cq), &cands, &n, &cap, 0);
        if (r < 0)
            goto out;
        r = 0;
    }
    c->phases.preempt_collected += n;
    if (!n)
        goto out;
    if (!fits_without_all(p, cands, n, NULL, 0)) {
        c->phases.preempt_hopeless++;
        goto out;
    }
    if (n > 1)
        sort_wls(cands, n, &o);
    fatia_control_add_uses(&p->cq->node, p->req, p->n_req);
    r = fs_groups(&s, cands, n);
    if (r == 0)
        r = fs_first(&s, c->cfg.strategies[0], &retry, &n_retry);
    if (r == 0 && !s.fits && c->cfg.n_strategies > 1)
        r = fs_second(&s, retry, n_retry);
    fatia_control_remove_uses(&p->cq->node, p->req, p->n_req);
    if (r < 0 || !s.fits) {
        restore(c, ret);
        ret->n = 0;
        goto out;
    }
    fill_back(p, ret, true);
    restore(c, ret);
out:
    fatia_free(s.wls);
    fatia_free(cands);
    fatia_free(retry);
    return r;
}

/* A deliberate deviation from Kueue: a workload preempted at time t may take free quota but
 * preempts nobody before t + CTL_PREEMPT_COOLDOWN (1 s). Within-ClusterQueue priority,
 * reclamation and fair sharing can otherwise chain into preemption loops in which victims preempt
 * their way back (kueue#3779, #7101, #14543): with the clock standing still (fatia schedule, a
 * daemon's cycles within one instant) they never end, and with a moving clock they thrash as fast
 * as cycles run (A preempts B in its own ClusterQueue and borrows, C reclaims from A, D preempts
 * C in its own ClusterQueue and borrows, B reclaims from D, ...). The cooldown bounds such a loop
 * to one preemption per victim per second of engine time. */
bool fatia_control_preempt_cooldown(const struct fatia_control *c, const struct ctl_wl *w)
{
    return w->was_preempted && c->now < w->preempted_at + CTL_PREEMPT_COOLDOWN;
}

int fatia_control_get_targets(struct fatia_control *c, struct ctl_cq *cq, const struct ctl_wl *w,
                              const uint32_t *frs_need, size_t n_need, const struct ctl_use *req,
                              size_t n_req, struct ctl_targets *ret)
{
    struct pctx p = {c, cq, w, frs_need, n_need, req, n_req, ctl_fr_bits(frs_need, n_need)};

    ret->n = 0;
    if (!n_need || fatia_control_preempt_cooldown(c, w))
        return 0;
    if (c->cfg.fair_sharing)
        return fair(&p, ret);
    return classical(&p, ret);
}
