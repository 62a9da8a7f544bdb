/*
 * control/assign.c: flavor assignment and partial admission (Kueue
 * pkg/scheduler/flavorassigner/flavorassigner.go assignFlavors, findFlavorForPodSets,
 * fitsResourceQuota, podset_reducer.go; scheduler.go getInitialAssignments; reference/kueue.md
 * §2.4).
 *
 * For each pod set in order, each requested resource takes its resource group, and all resources
 * of that group get one flavor for the pod set: the group's flavors are tried in list order and,
 * for each, every requested resource of the group is classified against the quota tree with the
 * usage of the earlier pod sets of this workload added:
 *
 *     val > potentialAvailable                  noFit ("... > maximum capacity (...)")
 *     val <= available                          fit, at borrowing level h (quota.c)
 *     nominal >= val, or the lowest fitting
 *     subtree is below the root, or the CQ may
 *     preempt while borrowing                   the preemption oracle: reclaim (all targets in
 *                                               other CQs), preempt, or noPreemptionCandidates
 *     otherwise                                 noFit ("insufficient unused quota ... more needed")
 *
 * The flavor's mode is the worst of its resources; the search stops at the first flavor that
 * fits without borrowing, or that borrows with whenCanBorrow MayStopSearch, or that needs
 * preemption with whenCanPreempt MayStopSearch; otherwise the best flavor seen wins, ranked
 * noFit < noPreemptionCandidates < {preempt < reclaim < fit} x borrowing level, in the order
 * BorrowingOverPreemption (default) or PreemptionOverBorrowing says.
 *
 * Deliberate differences from Kueue: resources are visited in name order (Kueue walks a map, so
 * its message lists what it happened to visit before a failing group); the flavor scan starts at
 * the first flavor every cycle (Kueue's FlavorFungibilityPreserveScanProgress resumes after the
 * flavor tried last cycle, which only matters for workloads that are retried with stale
 * assignments); topology-aware scheduling is not part of this engine.
 *
 * Partial admission: when the full assignment neither fits nor has preemption targets, and a pod
 * set has minCount, counts shrink together (count_i - floor(delta_i * k / D)) and a binary search
 * (Go's sort.Search over k in [0, D]) finds the smallest k that fits or has targets.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/buf.h"
#include "base/error.h"
#include "control/internal.h"

/* granular preemption modes, lowest preference first */
enum gmode {
    G_NOFIT,
    G_NO_CANDIDATES,
    G_PREEMPT,
    G_RECLAIM,
    G_FIT
};

struct granular {
    enum gmode mode;
    int borrow;
};

static bool is_preferred(struct granular a, struct granular b, const struct ctl_cq *cq)
{
    bool a_nc, b_nc;

    if (a.mode == G_NOFIT)
        return false;
    if (b.mode == G_NOFIT)
        return true;
    a_nc = a.mode == G_NO_CANDIDATES;
    b_nc = b.mode == G_NO_CANDIDATES;
    if (a_nc != b_nc)
        return !a_nc;
    if (cq->pref_preemption_over_borrowing) {
        if (a.borrow != b.borrow)
            return a.borrow < b.borrow;
        return a.mode > b.mode;
    }
    if (a.mode != b.mode)
        return a.mode > b.mode;
    return a.borrow < b.borrow;
}

static bool should_try_next(struct granular m, const struct ctl_cq *cq)
{
    if (m.mode == G_NOFIT || m.mode == G_NO_CANDIDATES)
        return true;
    if ((m.mode == G_PREEMPT || m.mode == G_RECLAIM) && cq->when_preempt == CTL_TRY_NEXT)
        return true;
    if (m.borrow != 0 && cq->when_borrow == CTL_TRY_NEXT)
        return true;
    return false;
}

static enum ctl_mode api_mode(enum gmode m)
{
    return m == G_FIT ? CTL_FIT : m == G_NOFIT ? CTL_NOFIT : CTL_PREEMPT;
}

/* ---- reasons ----
 *
 * A failed attempt's reasons are kept in structured form (the two quota reasons: the
 * flavor-resource and the amounts) and put into words only when the message is read
 * (fatia_control_reasons_message: the status writer, `fatia schedule`'s output). Kueue writes
 * the message at every failed attempt; here most attempts' messages are never read before the
 * next attempt replaces them. The text is the same either way. */

static struct ctl_reason *push_reason(struct ctl_ps_result *p)
{
    if (p->n_reasons == p->cap_reasons) {
        size_t nc = p->cap_reasons ? p->cap_reasons * 2 : 4;
        struct ctl_reason *v = fatia_reallocarray(p->reasons, nc, sizeof(*v));
        if (!v)
            return NULL;
        p->reasons = v;
        p->cap_reasons = nc;
    }
    return &p->reasons[p->n_reasons++];
}

static int add_reason_quota(struct ctl_ps_result *p, enum ctl_reason_kind kind, uint32_t fr,
                            amt_t x, amt_t y, amt_t z)
{
    struct ctl_reason *e = push_reason(p);

    if (!e)
        return -ENOMEM;
    *e = (struct ctl_reason){kind, fr, x, y, z, NULL};
    return 0;
}

static int add_reason(struct ctl_ps_result *p, const char *fmt, ...) FATIA_PRINTF(2, 3);

static int add_reason(struct ctl_ps_result *p, const char *fmt, ...)
{
    va_list ap;
    char buf[512], *copy;
    struct ctl_reason *e;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n < 0)
        return -ENOMEM;
    if ((size_t)n < sizeof(buf)) {
        copy = fatia_strdup(buf);
    } else {
        char *m = NULL;
        va_start(ap, fmt);
        n = vasprintf(&m, fmt, ap);
        va_end(ap);
        if (n < 0)
            return -ENOMEM;
        copy = fatia_strdup(m);
        free(m);
    }
    if (!copy)
        return -ENOMEM;
    e = push_reason(p);
    if (!e) {
        fatia_free(copy);
        return -ENOMEM;
    }
    *e = (struct ctl_reason){CTL_REASON_TEXT, 0, 0, 0, 0, copy};
    return 0;
}

static void clear_reasons(struct ctl_ps_result *p, size_t from)
{
    for (size_t i = from; i < p->n_reasons; i++)
        fatia_free(p->reasons[i].text);
    p->n_reasons = from;
}

void fatia_control_ps_results_free(struct ctl_ps_result *ps, size_t n)
{
    for (size_t i = 0; ps && i < n; i++) {
        fatia_free(ps[i].flv);
        clear_reasons(&ps[i], 0);
        fatia_free(ps[i].reasons);
    }
    fatia_free(ps);
}

void fatia_control_assignment_release(struct ctl_assignment *a)
{
    fatia_control_ps_results_free(a->ps, a->n_ps);
    fatia_free(a->use);
    memset(a, 0, sizeof(*a));
}

/* One reason in words (Kueue flavorassigner.go fitsResourceQuota's messages). */
static char *reason_text(const struct fatia_control *c, const struct ctl_reason *e)
{
    char b1[64], b2[64], b3[64];
    const char *res, *flv;
    struct fatia_buf b;
    int r;

    if (e->kind == CTL_REASON_TEXT)
        return fatia_strdup(e->text);
    res = fatia_control_res_name(c, c->fr_res.v[e->fr]);
    flv = fatia_control_flavor_name(c, c->fr_flavor.v[e->fr]);
    fatia_control_format_amount(res, e->x, b1, sizeof(b1));
    fatia_buf_init(&b, 0);
    if (e->kind == CTL_REASON_UNUSED_QUOTA) {
        r = fatia_buf_printf(&b, "insufficient unused quota for %s in flavor %s, %s more needed",
                             res, flv, b1);
    } else {
        fatia_control_format_amount(res, e->y, b2, sizeof(b2));
        fatia_control_format_amount(res, e->z, b3, sizeof(b3));
        r = fatia_buf_printf(&b,
                             "insufficient quota for %s in flavor %s, previously considered "
                             "podsets requests (%s) + current podset request (%s) > maximum "
                             "capacity (%s)",
                             res, flv, b1, b2, b3);
    }
    if (r < 0) {
        fatia_buf_release(&b);
        return NULL;
    }
    return fatia_buf_steal(&b);
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

int fatia_control_reasons_message(const struct fatia_control *c, const struct ctl_ps_result *ps,
                                  size_t n_ps, const struct ctl_podset *pod_sets,
                                  struct fatia_buf *b)
{
    size_t start = b->len;

    for (size_t i = 0; i < n_ps; i++) {
        const struct ctl_ps_result *p = &ps[i];
        char *one[8], **v;
        int r = 0;
        if (!p->n_reasons)
            continue;
        v = p->n_reasons <= FATIA_ARRAY_SIZE(one) ? one : fatia_calloc(p->n_reasons, sizeof(*v));
        if (!v)
            return -ENOMEM;
        for (size_t j = 0; j < p->n_reasons; j++) {
            v[j] = reason_text(c, &p->reasons[j]);
            if (!v[j]) {
                for (size_t k = 0; k < j; k++)
                    fatia_free(v[k]);
                if (v != one)
                    fatia_free(v);
                return -ENOMEM;
            }
        }
        if (p->n_reasons > 1)
            qsort(v, p->n_reasons, sizeof(*v), cmp_str);
        if (b->len > start)
            r |= fatia_buf_puts(b, "; ");
        r |= fatia_buf_puts(b, "couldn't assign flavors to pod set ");
        r |= fatia_buf_puts(b, pod_sets[i].name);
        r |= fatia_buf_puts(b, ": ");
        for (size_t j = 0; j < p->n_reasons; j++) {
            if (j)
                r |= fatia_buf_puts(b, ", ");
            r |= fatia_buf_puts(b, v[j]);
            fatia_free(v[j]);
        }
        if (v != one)
            fatia_free(v);
        if (r)
            return -ENOMEM;
    }
    return 0;
}

char *fatia_control_assignment_message(const struct fatia_control *c,
                                       const struct ctl_assignment *a, const struct ctl_wl *w)
{
    struct fatia_buf b;

    fatia_buf_init(&b, 0);
    if (fatia_control_reasons_message(c, a->ps, a->n_ps, w->ps, &b) < 0) {
        fatia_buf_release(&b);
        return NULL;
    }
    return fatia_buf_steal(&b);
}

/* ---- usage accumulation ---- */

static amt_t use_get(const struct ctl_assignment *a, uint32_t fr)
{
    for (size_t i = 0; i < a->n_use; i++)
        if (a->use[i].fr == fr)
            return a->use[i].v;
    return 0;
}

static int use_add(struct ctl_assignment *a, uint32_t fr, amt_t v)
{
    for (size_t i = 0; i < a->n_use; i++)
        if (a->use[i].fr == fr) {
            a->use[i].v = amt_add(a->use[i].v, v);
            return 0;
        }
    if (a->n_use == a->cap_use) {
        size_t nc = a->cap_use ? a->cap_use * 2 : 8;
        struct ctl_use *u = fatia_reallocarray(a->use, nc, sizeof(*u));
        if (!u)
            return -ENOMEM;
        a->use = u;
        a->cap_use = nc;
    }
    a->use[a->n_use++] = (struct ctl_use){fr, v};
    return 0;
}

/* ---- the preemption oracle (Kueue preemption_oracle.go) ---- */

static int simulate_preemption(struct fatia_control *c, struct ctl_cq *cq, struct ctl_wl *w,
                               uint32_t fr, amt_t val, enum gmode *ret_mode, int *ret_borrow)
{
    struct ctl_targets t = {0};
    struct ctl_use req = {fr, val};
    bool same = false, mr;
    int r;

    r = fatia_control_get_targets(c, cq, w, &fr, 1, &req, 1, &t);
    if (r < 0)
        return r;
    if (!t.n) {
        *ret_mode = G_NO_CANDIDATES;
        *ret_borrow = fatia_control_find_height(cq, fr, val, &mr);
        fatia_control_targets_release(&t);
        return 0;
    }
    for (size_t i = 0; i < t.n; i++)
        fatia_control_snapshot_remove(c, t.v[i].wl);
    *ret_borrow = fatia_control_find_height(cq, fr, val, &mr);
    for (size_t i = 0; i < t.n; i++) {
        fatia_control_snapshot_add(c, t.v[i].wl);
        same |= t.v[i].wl->cq == cq;
    }
    *ret_mode = same ? G_PREEMPT : G_RECLAIM;
    fatia_control_targets_release(&t);
    return 0;
}

static bool can_preempt_while_borrowing(const struct fatia_control *c, const struct ctl_cq *cq)
{
    return cq->borrow_within || (c->cfg.fair_sharing && cq->reclaim != CTL_NEVER);
}

/* fitsResourceQuota: classifies one flavor-resource request; may add a reason to p. */
static int fits_resource_quota(struct fatia_control *c, struct ctl_cq *cq, struct ctl_wl *w,
                               uint32_t fr, amt_t assumed, amt_t request, struct ctl_ps_result *p,
                               struct granular *ret)
{
    amt_t available = fatia_control_available(&cq->node, fr);
    amt_t max_cap = fatia_control_potential_available(&cq->node, fr);
    amt_t val = amt_add(assumed, request);
    bool may_reclaim;
    int borrow, r;

    if (val > max_cap) {
        *ret = (struct granular){G_NOFIT, 0};
        return add_reason_quota(p, CTL_REASON_MAX_CAPACITY, fr, assumed, request, max_cap);
    }
    borrow = fatia_control_find_height(cq, fr, val, &may_reclaim);
    if (val <= available) {
        *ret = (struct granular){G_FIT, borrow};
        return 0;
    }
    r = add_reason_quota(p, CTL_REASON_UNUSED_QUOTA, fr, amt_sub(val, available), 0, 0);
    if (r < 0)
        return r;
    if (cq->node.slot[fr].nominal >= val || may_reclaim || can_preempt_while_borrowing(c, cq)) {
        enum gmode m;
        int b;
        c->phases.preempt_searches++;
        r = simulate_preemption(c, cq, w, fr, val, &m, &b);
        if (r < 0)
            return r;
        *ret = (struct granular){m, b};
        return 0;
    }
    *ret = (struct granular){G_NOFIT, borrow};
    return 0;
}

/* ---- one pod set ---- */

struct req_list {
    struct ctl_req v[64];
    size_t n;
    struct ctl_req *big; /* when more than 64 */
};

static int ps_push_flv(struct ctl_ps_result *p, struct ctl_flv_asg a)
{
    if (p->n_flv == p->cap_flv) {
        size_t nc = p->cap_flv ? p->cap_flv * 2 : 4;
        struct ctl_flv_asg *v = fatia_reallocarray(p->flv, nc, sizeof(*v));
        if (!v)
            return -ENOMEM;
        p->flv = v;
        p->cap_flv = nc;
    }
    p->flv[p->n_flv++] = a;
    return 0;
}

static bool ps_has_res(const struct ctl_ps_result *p, uint32_t res)
{
    for (size_t i = 0; i < p->n_flv; i++)
        if (p->flv[i].res == res)
            return true;
    return false;
}

/* findFlavorForPodSets for the group of `res`; appends the chosen assignments to p, or sets
 * p->failed. reqs: the pod set's requests (total for its count), sorted by name. */
static int find_flavor(struct fatia_control *c, struct ctl_cq *cq, struct ctl_wl *w, size_t psi,
                       const struct ctl_req *reqs, size_t n_reqs, int rg_idx,
                       struct ctl_assignment *a, struct ctl_ps_result *p)
{
    const struct ctl_rg *rg = &cq->qs.rgs[rg_idx];
    struct granular best = {G_NOFIT, INT32_MAX};
    struct ctl_flv_asg best_v[64], cur_v[64];
    size_t best_n = 0, reasons_from = p->n_reasons;
    bool have_best = false;
    char buf[512];
    int r;

    for (size_t fi = 0; fi < rg->n_flavors; fi++) {
        const struct ctl_flavor *f = c->flavors.v[rg->flavors[fi]];
        struct granular rep = {G_FIT, 0};
        size_t cur_n = 0;
        const char *why = fatia_control_flavor_mismatch(&w->ps[psi], f, buf, sizeof(buf));
        if (why) {
            r = add_reason(p, "%s", why);
            if (r < 0)
                return r;
            continue;
        }
        for (size_t k = 0; k < n_reqs; k++) {
            uint32_t res = reqs[k].res;
            struct granular m;
            int fr;
            if (res >= c->n_res_cap || cq->rg_of_res[res] != rg_idx)
                continue;
            fr = fatia_control_fr_find(c, f->id, res);
            if (fr < 0) {
                m = (struct granular){G_NOFIT, 0};
            } else {
                r = fits_resource_quota(c, cq, w, (uint32_t)fr, use_get(a, (uint32_t)fr),
                                        reqs[k].per_pod, p, &m);
                if (r < 0)
                    return r;
            }
            if (is_preferred(rep, m, cq))
                rep = m;
            if (rep.mode == G_NOFIT)
                continue;
            if (cur_n < 64)
                cur_v[cur_n++] = (struct ctl_flv_asg){
                    res, f->id, (uint32_t)fr, api_mode(m.mode), m.borrow, reqs[k].per_pod};
        }
        if (!should_try_next(rep, cq)) {
            memcpy(best_v, cur_v, cur_n * sizeof(*cur_v));
            best_n = cur_n;
            best = rep;
            have_best = true;
            break;
        }
        if (is_preferred(rep, best, cq)) {
            memcpy(best_v, cur_v, cur_n * sizeof(*cur_v));
            best_n = cur_n;
            best = rep;
            have_best = true;
        }
    }
    if (have_best && best.mode == G_FIT)
        clear_reasons(p, reasons_from); /* a fit reports no status */
    if (!have_best || best_n == 0) {
        /* the pod set's status is the failing group's alone */
        size_t k = 0;
        for (size_t i = 0; i < reasons_from; i++)
            fatia_free(p->reasons[i].text);
        for (size_t i = reasons_from; i < p->n_reasons; i++)
            p->reasons[k++] = p->reasons[i];
        p->n_reasons = k;
        p->failed = true;
        return 0;
    }
    for (size_t k = 0; k < best_n; k++) {
        r = ps_push_flv(p, best_v[k]);
        if (r < 0)
            return r;
    }
    return 0;
}

static int cmp_flv_res(const void *x, const void *y, void *arg)
{
    const struct fatia_control *c = arg;
    return strcmp(c->res_names.v[((const struct ctl_flv_asg *)x)->res],
                  c->res_names.v[((const struct ctl_flv_asg *)y)->res]);
}

int fatia_control_assign(struct fatia_control *c, struct ctl_cq *cq, struct ctl_wl *w,
                         const int32_t *counts, struct ctl_assignment *a)
{
    struct ctl_req stack_reqs[65], *reqs;
    int r = 0;

    memset(a, 0, sizeof(*a));
    c->phases.assign_flavors++;
    a->ps = fatia_calloc(w->n_ps ? w->n_ps : 1, sizeof(*a->ps));
    if (!a->ps)
        return -ENOMEM;
    a->mode = CTL_FIT;
    for (size_t i = 0; i < w->n_ps; i++) {
        const struct ctl_podset *ps = &w->ps[i];
        struct ctl_ps_result *p = &a->ps[i];
        int32_t count = counts ? counts[i] : ps->count;
        size_t n = 0;
        a->n_ps = i + 1;
        p->count = count;
        reqs = ps->n_req + 1 <= 65 ? stack_reqs
                                   : fatia_reallocarray(NULL, ps->n_req + 1, sizeof(*reqs));
        if (!reqs)
            return -ENOMEM;
        /* totals for the count, with `pods` when the ClusterQueue covers it, by name */
        for (size_t k = 0; k < ps->n_req; k++) {
            if (cq->covers_pods && ps->req[k].res == cq->pods_res)
                continue;
            reqs[n++] = (struct ctl_req){ps->req[k].res, amt_mul(ps->req[k].per_pod, count)};
        }
        if (cq->covers_pods) {
            size_t at = n;
            const char *pn = fatia_control_res_name(c, cq->pods_res);
            for (size_t k = 0; k < n; k++)
                if (strcmp(fatia_control_res_name(c, reqs[k].res), pn) > 0) {
                    at = k;
                    break;
                }
            memmove(&reqs[at + 1], &reqs[at], (n - at) * sizeof(*reqs));
            reqs[at] = (struct ctl_req){cq->pods_res, amt_mul(1000, count)};
            n++;
        }
        for (size_t k = 0; k < n && !p->failed; k++) {
            uint32_t res = reqs[k].res;
            int rg = res < c->n_res_cap && cq->rg_of_res ? cq->rg_of_res[res] : -1;
            if (rg < 0) {
                if (reqs[k].per_pod == 0 || c->cfg.ignore_undeclared)
                    continue;
                clear_reasons(p, 0);
                r = add_reason(p, "resource %s unavailable in ClusterQueue",
                               fatia_control_res_name(c, res));
                if (r < 0)
                    goto out;
                p->failed = true;
                break;
            }
            if (ps_has_res(p, res))
                continue;
            r = find_flavor(c, cq, w, i, reqs, n, rg, a, p);
            if (r < 0)
                goto out;
        }
        if (p->failed) {
            /* Kueue drops the flavors of a failed pod set */
            p->n_flv = 0;
        }
        if (p->n_flv > 1)
            qsort_r(p->flv, p->n_flv, sizeof(*p->flv), cmp_flv_res, c);
        for (size_t k = 0; k < p->n_flv; k++) {
            struct ctl_flv_asg *fa = &p->flv[k];
            if (fa->borrow > a->borrowing)
                a->borrowing = fa->borrow;
            if (fa->total != 0 && use_add(a, fa->fr, fa->total) < 0) {
                r = -ENOMEM;
                goto out;
            }
            if (fa->mode == CTL_PREEMPT && a->mode == CTL_FIT)
                a->mode = CTL_PREEMPT;
        }
        if (reqs != stack_reqs)
            fatia_free(reqs);
        reqs = NULL;
        if (p->failed) {
            a->mode = CTL_NOFIT;
            return 0;
        }
        continue;
out:
        if (reqs != stack_reqs)
            fatia_free(reqs);
        return r;
    }
    return 0;
}

/* ---- getInitialAssignments ---- */

static bool can_be_partially_admitted(const struct fatia_control *c, const struct ctl_wl *w)
{
    if (!c->cfg.partial_admission)
        return false;
    for (size_t i = 0; i < w->n_ps; i++)
        if (w->ps[i].min_count < w->ps[i].count)
            return true;
    return false;
}

static void frs_needing_preemption(const struct ctl_assignment *a, uint32_t *frs, size_t *n,
                                   size_t cap)
{
    *n = 0;
    for (size_t i = 0; i < a->n_ps; i++)
        for (size_t k = 0; k < a->ps[i].n_flv; k++) {
            const struct ctl_flv_asg *f = &a->ps[i].flv[k];
            bool dup = false;
            if (f->mode != CTL_PREEMPT)
                continue;
            for (size_t j = 0; j < *n; j++)
                dup |= frs[j] == f->fr;
            if (!dup && *n < cap)
                frs[(*n)++] = f->fr;
        }
}

static int targets_for(struct fatia_control *c, struct ctl_cq *cq, struct ctl_wl *w,
                       const struct ctl_assignment *a, struct ctl_targets *t)
{
    uint32_t frs[256];
    size_t n;

    frs_needing_preemption(a, frs, &n, 256);
    return fatia_control_get_targets(c, cq, w, frs, n, a->use, a->n_use, t);
}

int fatia_control_get_assignments(struct fatia_control *c, struct ctl_cq *cq, struct ctl_wl *w,
                                  struct ctl_assignment *ret, struct ctl_targets *targets)
{
    struct ctl_assignment full, try, good;
    struct ctl_targets t = {0}, good_t = {0};
    int32_t *counts = NULL;
    int64_t total = 0;
    bool have_good = false;
    int r;

    targets->n = 0;
    r = fatia_control_assign(c, cq, w, NULL, &full);
    if (r < 0) {
        fatia_control_assignment_release(&full);
        return r;
    }
    if (full.mode == CTL_FIT) {
        *ret = full;
        return 0;
    }
    if (full.mode == CTL_PREEMPT) {
        r = targets_for(c, cq, w, &full, targets);
        if (r < 0)
            goto fail;
        if (targets->n) {
            *ret = full;
            return 0;
        }
    }
    if (!can_be_partially_admitted(c, w)) {
        *ret = full;
        return 0;
    }
    counts = fatia_calloc(w->n_ps, sizeof(*counts));
    if (!counts) {
        r = -ENOMEM;
        goto fail;
    }
    for (size_t i = 0; i < w->n_ps; i++)
        total += w->ps[i].count - w->ps[i].min_count;
    {
        /* sort.Search(total+1, fits): the smallest k that fits */
        int64_t lo = 0, hi = total + 1, last_good = -1;
        memset(&good, 0, sizeof(good));
        while (lo < hi) {
            int64_t h = (int64_t)((uint64_t)(lo + hi) >> 1);
            bool fits = false;
            for (size_t i = 0; i < w->n_ps; i++) {
                int64_t d = w->ps[i].count - w->ps[i].min_count;
                counts[i] = (int32_t)(w->ps[i].count - (total ? d * h / total : 0));
            }
            r = fatia_control_assign(c, cq, w, counts, &try);
            if (r < 0) {
                fatia_control_assignment_release(&try);
                goto fail;
            }
            t.n = 0;
            if (try.mode == CTL_FIT) {
                fits = true;
            } else if (try.mode == CTL_PREEMPT) {
                r = targets_for(c, cq, w, &try, &t);
                if (r < 0) {
                    fatia_control_assignment_release(&try);
                    goto fail;
                }
                fits = t.n > 0;
            }
            if (fits) {
                struct ctl_targets x;
                if (have_good)
                    fatia_control_assignment_release(&good);
                good = try;
                x = good_t;
                good_t = t;
                t = x;
                t.n = 0;
                have_good = true;
                last_good = h;
                hi = h;
            } else {
                fatia_control_assignment_release(&try);
                lo = h + 1;
            }
        }
        if (have_good && lo == last_good) {
            fatia_control_assignment_release(&full);
            fatia_control_targets_release(targets);
            *targets = good_t;
            good_t = (struct ctl_targets){0};
            *ret = good;
            fatia_control_targets_release(&t);
            fatia_free(counts);
            return 0;
        }
        if (have_good)
            fatia_control_assignment_release(&good);
    }
    fatia_control_targets_release(&t);
    fatia_control_targets_release(&good_t);
    fatia_free(counts);
    targets->n = 0;
    *ret = full;
    return 0;
fail:
    fatia_control_targets_release(&t);
    fatia_control_targets_release(&good_t);
    fatia_free(counts);
    fatia_control_assignment_release(&full);
    return r;
}
