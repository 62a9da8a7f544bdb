/*
 * control/cycle.c: one scheduling cycle (Kueue pkg/scheduler/scheduler.go schedule,
 * fair_sharing_iterator.go; reference/kueue.md §2.2, §2.6 and §2.8).
 *
 *   1. heads: one pop per active ClusterQueue (backoffs that expired and batched requeues that
 *      are due are queued first);
 *   2. nominate: namespace check, then flavor assignment, preemption targets and partial
 *      admission against the tree as it stands (control/assign.c, preempt.c);
 *   3. order: classical (non-borrowing first by borrowing level, higher priority, older) or the
 *      fair-sharing tournament: per root cohort, every child nominates its best entry and the
 *      entries compete at each cohort on (not borrowing on their flavors, lower dominant resource
 *      share with their usage added, higher priority, older);
 *   4. process each entry against the tree mutated by the entries before it: NoFit; Preempt
 *      without targets (and, unless reclaimWithinCohort is Any, a capped reservation so that
 *      later entries cannot take that capacity this cycle); targets overlapping victims of an
 *      earlier entry (skip); no longer fits once this cycle's victims are removed (skip);
 *      otherwise charge the usage and either issue the preemptions (the preemptor waits, sticky
 *      in BestEffortFIFO) or admit;
 *   5. requeue every head not admitted (queue.c decides heap or inadmissible), give it its
 *      message (a failed assignment's reasons, put into words only when read), and take back the usage that was only reserved for this cycle (preemptors and
 *      reservations).
 *
 * The engine's tree is the snapshot: admissions stay, the rest is undone at step 5, which keeps
 * the invariant that every node's usage is that of the workloads holding quota.
 *
 * Fair-sharing values are cached per entry and level with the epochs of the nodes on its path;
 * an entry's value at a level depends only on the nodes below that level (their usage and the
 * static lendable capacity of their parent), so admitting in one ClusterQueue invalidates only
 * the entries that share a node below the root with it.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/str.h"
#include "control/internal.h"

enum estatus {
    ES_NOT_NOMINATED,
    ES_SKIPPED,
    ES_ASSUMED
};

enum rreason {
    RR_GENERIC,
    RR_NAMESPACE_MISMATCH,
    RR_NOFIT,
    RR_NO_CANDIDATES,
    RR_FAILED_AFTER_NOMINATION,
    RR_PENDING_PREEMPTION,
};

#define MAX_LEVELS 32

#define PHASE(p)                            \
    do {                                    \
        if (c->phase_fn)                    \
            c->phase_fn(c->phase_arg, (p)); \
    } while (0)

struct entry {
    struct ctl_wl *w;
    struct ctl_cq *cq;
    struct ctl_assignment a;
    struct ctl_targets t;
    bool nominated;
    enum estatus st;
    enum rreason rr;
    char *msg;
    bool reserved; /* usage charged for this cycle only (a preemptor or a reservation) */
    struct ctl_use *res_use;
    size_t n_res_use;
    bool first;    /* its previous attempt issued preemptions: it goes before the others */
    bool cooldown; /* preempted less than CTL_PREEMPT_COOLDOWN ago: searched no targets */
    uint64_t first_seq;
    /* fair sharing */
    struct ctl_cohort *root; /* NULL: no cohort */
    size_t root_rank;        /* order of the roots by their first ClusterQueue name */
    bool fs_done;
    struct fs_lvl *L; /* fair sharing only (allocated apart: large, and zeroed per cycle) */
};

struct fs_lvl {
    int n_lvl;
    const struct ctl_node *lvl[MAX_LEVELS];
    uint64_t lvl_epoch[MAX_LEVELS];
    struct fatia_control_drs lvl_drs[MAX_LEVELS];
    bool lvl_borrow[MAX_LEVELS];
    bool lvl_valid;
};

/* ---- result ---- */

int fatia_control_result_add_eviction(struct fatia_control *c, const struct ctl_wl *w,
                                      const char *reason, const char *message,
                                      const struct ctl_wl *preemptor, bool pending)
{
    struct fatia_control_eviction e;

    if (pending) {
        /* decided between cycles: kept on the heap until the next cycle's result */
        e.ns = fatia_strdup(w->ns);
        e.name = fatia_strdup(w->name);
        e.key = fatia_strdup(w->key);
        e.cluster_queue = fatia_strdup(w->cq ? w->cq->name : "");
        e.reason = reason;
        e.message = fatia_strdup(message);
        e.preemptor = preemptor ? fatia_strdup(preemptor->key) : NULL;
        if (!e.ns || !e.name || !e.key || !e.cluster_queue || !e.message ||
            (preemptor && !e.preemptor) || FATIA_VEC_PUSH(&c->pending_ev, e) < 0) {
            fatia_free((char *)e.ns);
            fatia_free((char *)e.name);
            fatia_free((char *)e.key);
            fatia_free((char *)e.cluster_queue);
            fatia_free((char *)e.message);
            fatia_free((char *)e.preemptor);
            return -ENOMEM;
        }
        return 0;
    }
    e.ns = fatia_control_arena_strdup(c, w->ns);
    e.name = fatia_control_arena_strdup(c, w->name);
    e.key = fatia_control_arena_strdup(c, w->key);
    e.cluster_queue = fatia_control_arena_strdup(c, w->cq ? w->cq->name : "");
    e.reason = reason;
    e.message = fatia_control_arena_strdup(c, message);
    e.preemptor = preemptor ? fatia_control_arena_strdup(c, preemptor->key) : NULL;
    if (!e.ns || !e.name || !e.key || !e.cluster_queue || !e.message || (preemptor && !e.preemptor))
        return -ENOMEM;
    return FATIA_VEC_PUSH(&c->res_ev, e);
}

static int take_pending_evictions(struct fatia_control *c)
{
    int r = 0;

    for (size_t i = 0; i < c->pending_ev.n; i++) {
        struct fatia_control_eviction *p = &c->pending_ev.v[i], e = *p;
        if (r == 0) {
            e.ns = fatia_control_arena_strdup(c, p->ns);
            e.name = fatia_control_arena_strdup(c, p->name);
            e.key = fatia_control_arena_strdup(c, p->key);
            e.cluster_queue = fatia_control_arena_strdup(c, p->cluster_queue);
            e.message = fatia_control_arena_strdup(c, p->message);
            e.preemptor = p->preemptor ? fatia_control_arena_strdup(c, p->preemptor) : NULL;
            if (!e.ns || !e.name || !e.key || !e.cluster_queue || !e.message ||
                (p->preemptor && !e.preemptor) || FATIA_VEC_PUSH(&c->res_ev, e) < 0)
                r = -ENOMEM;
        }
        fatia_free((char *)p->ns);
        fatia_free((char *)p->name);
        fatia_free((char *)p->key);
        fatia_free((char *)p->cluster_queue);
        fatia_free((char *)p->message);
        fatia_free((char *)p->preemptor);
    }
    c->pending_ev.n = 0;
    return r;
}

static int result_admission(struct fatia_control *c, const struct ctl_wl *w)
{
    struct fatia_control_admission a = {0};
    struct fatia_control_podset *ps;

    a.ns = fatia_control_arena_strdup(c, w->ns);
    a.name = fatia_control_arena_strdup(c, w->name);
    a.key = fatia_control_arena_strdup(c, w->key);
    a.cluster_queue = fatia_control_arena_strdup(c, w->cq->name);
    a.borrowing = w->borrowing;
    a.n_podsets = w->n_ps;
    ps = fatia_control_arena_alloc(c, (w->n_ps ? w->n_ps : 1) * sizeof(*ps));
    if (!a.ns || !a.name || !a.key || !a.cluster_queue || !ps)
        return -ENOMEM;
    for (size_t i = 0; i < w->n_ps; i++) {
        struct fatia_control_flavor_use *u;
        ps[i].name = w->ps[i].name;
        ps[i].count = w->asg[i].count;
        ps[i].n = w->asg[i].n;
        u = fatia_control_arena_alloc(c, (w->asg[i].n ? w->asg[i].n : 1) * sizeof(*u));
        if (!u)
            return -ENOMEM;
        for (size_t k = 0; k < w->asg[i].n; k++) {
            u[k].resource = fatia_control_res_name(c, w->asg[i].v[k].res);
            u[k].flavor = fatia_control_flavor_name(c, w->asg[i].v[k].flavor);
            u[k].milli = w->asg[i].v[k].total;
        }
        ps[i].v = u;
    }
    a.podsets = ps;
    return FATIA_VEC_PUSH(&c->res_adm, a);
}

static int result_pending(struct fatia_control *c, const struct ctl_wl *w)
{
    struct fatia_control_pending p;

    p.ns = fatia_control_arena_strdup(c, w->ns);
    p.name = fatia_control_arena_strdup(c, w->name);
    p.key = fatia_control_arena_strdup(c, w->key);
    p.cluster_queue = w->msg_cq ? fatia_control_arena_strdup(c, w->msg_cq->name) : NULL;
    p.reason = w->reason ? w->reason : "Pending";
    if (!p.ns || !p.name || !p.key || (w->msg_cq && !p.cluster_queue))
        return -ENOMEM;
    return FATIA_VEC_PUSH(&c->res_pend, p);
}

char *fatia_control_pending_message(const struct fatia_control *c,
                                    const struct fatia_control_pending *p)
{
    const struct ctl_wl *w = fatia_strmap_get(&c->wl_index, p->key);
    struct fatia_buf b;
    const char *m;
    char *copy;
    int err;

    if (!w)
        return fatia_strdup("");
    fatia_buf_init(&b, 0);
    m = fatia_control_wl_msg(c, w, &b, &err);
    copy = err ? NULL : fatia_strdup(m ? m : "");
    fatia_buf_release(&b);
    return copy;
}

/* ---- admission ---- */

static int admit(struct fatia_control *c, struct entry *e)
{
    struct ctl_wl *w = e->w;
    struct ctl_cq *cq = e->cq;
    struct ctl_ps_assign *asg;
    struct ctl_use *use;

    asg = fatia_calloc(w->n_ps ? w->n_ps : 1, sizeof(*asg));
    use = fatia_calloc(e->a.n_use ? e->a.n_use : 1, sizeof(*use));
    if (!asg || !use) {
        fatia_free(asg);
        fatia_free(use);
        return -ENOMEM;
    }
    for (size_t i = 0; i < w->n_ps && i < e->a.n_ps; i++) {
        const struct ctl_ps_result *p = &e->a.ps[i];
        asg[i].count = p->count;
        asg[i].n = p->n_flv;
        if (p->n_flv) {
            asg[i].v = fatia_calloc(p->n_flv, sizeof(*asg[i].v));
            if (!asg[i].v) {
                for (size_t k = 0; k < i; k++)
                    fatia_free(asg[k].v);
                fatia_free(asg);
                fatia_free(use);
                return -ENOMEM;
            }
        }
        for (size_t k = 0; k < p->n_flv; k++) {
            asg[i].v[k].res = p->flv[k].res;
            asg[i].v[k].flavor = p->flv[k].flavor;
            asg[i].v[k].total = p->flv[k].total;
        }
    }
    if (e->a.n_use)
        memcpy(use, e->a.use, e->a.n_use * sizeof(*use));
    fatia_control_wl_drop_admission(w);
    w->asg = asg;
    w->use = use;
    w->n_use = e->a.n_use;
    w->fr_bits = ctl_use_bits(w->use, w->n_use);
    w->state = CTL_WL_ADMITTED;
    w->qr_time = c->now;
    w->borrowing = e->a.borrowing > 0;
    w->sticky = false;
    w->evicted_cond = false;
    if (w->q == CTL_Q_INFLIGHT) {
        cq->n_inflight--;
        w->q = CTL_Q_NONE;
    }
    /* the node usage was charged by the caller; record the admission */
    if (fatia_control_admitted_push(cq, w) < 0) {
        fatia_control_remove_uses(&cq->node, w->use, w->n_use);
        w->state = CTL_WL_PENDING;
        fatia_control_wl_drop_admission(w);
        return -ENOMEM;
    }
    fatia_control_admitted_note(cq, w, true);
    if (w->lq && w->lq->usage)
        for (size_t i = 0; i < w->n_use; i++)
            w->lq->usage[w->use[i].fr] = amt_add(w->lq->usage[w->use[i].fr], w->use[i].v);
    fatia_control_wl_msg_clear(w);
    w->reason = NULL;
    w->msg_cq = NULL;
    e->st = ES_ASSUMED;
    c->n_admissions++;
    c->result.n_borrowing += w->borrowing;
    return result_admission(c, w);
}

/* ---- ordering ---- */

static int cmp_cq_index(const void *x, const void *y)
{
    const struct ctl_cq *a = *(struct ctl_cq *const *)x, *b = *(struct ctl_cq *const *)y;

    return a->index < b->index ? -1 : a->index > b->index;
}

static int classical_cmp(const void *x, const void *y)
{
    const struct entry *a = *(struct entry *const *)x, *b = *(struct entry *const *)y;
    int r;

    if (a->first != b->first)
        return a->first ? -1 : 1;
    if (a->first && a->first_seq != b->first_seq)
        return a->first_seq < b->first_seq ? -1 : 1;
    if (a->a.borrowing != b->a.borrowing)
        return a->a.borrowing < b->a.borrowing ? -1 : 1;
    if (a->w->priority != b->w->priority)
        return a->w->priority > b->w->priority ? -1 : 1;
    if (a->w->created != b->w->created)
        return a->w->created < b->w->created ? -1 : 1;
    r = strcmp(a->w->uid, b->w->uid);
    return r ? r : strcmp(a->w->key, b->w->key);
}

/* Fair sharing: values of entry e at each level of its path (see the file comment). */
static void fs_levels(struct fatia_control *c, struct entry *e)
{
    const struct ctl_node *n;
    int k = 0;
    bool valid = e->L->lvl_valid;

    if (valid)
        for (int i = 0; i < e->L->n_lvl; i++)
            if (e->L->lvl[i]->epoch != e->L->lvl_epoch[i]) {
                valid = false;
                break;
            }
    if (valid)
        return;
    /* the usage that reaches each node when e's usage is added at its ClusterQueue */
    {
        struct ctl_use ex_a[64], ex_b[64], *ex = ex_a, *nx = ex_b, *tmp;
        size_t m = e->a.n_use < 64 ? e->a.n_use : 64;
        if (m)
            memcpy(ex, e->a.use, m * sizeof(*ex));
        for (n = &e->cq->node; n->parent && k < MAX_LEVELS; n = n->parent, k++) {
            bool borrow = false;
            e->L->lvl[k] = n;
            e->L->lvl_epoch[k] = n->epoch;
            e->L->lvl_drs[k] = fatia_control_drs(c, n, ex, m);
            for (size_t i = 0; i < m; i++)
                borrow |= amt_add(n->slot[ex[i].fr].usage, ex[i].v) > n->slot[ex[i].fr].subtree;
            e->L->lvl_borrow[k] = borrow;
            for (size_t i = 0; i < m; i++) {
                amt_t la = fatia_control_local_available(n, ex[i].fr);
                nx[i].fr = ex[i].fr;
                nx[i].v = ex[i].v > la ? amt_sub(ex[i].v, la) : 0;
            }
            tmp = ex;
            ex = nx;
            nx = tmp;
        }
    }
    e->L->n_lvl = k;
    e->L->lvl_valid = true;
}

/* The level index of e's node whose parent is P, or -1. */
static int level_at(const struct entry *e, const struct ctl_node *p)
{
    for (int i = 0; i < e->L->n_lvl; i++)
        if (e->L->lvl[i]->parent == p)
            return i;
    return -1;
}

static bool fs_less(const struct entry *a, const struct entry *b, const struct ctl_node *p)
{
    int ia = level_at(a, p), ib = level_at(b, p), r;

    if (ia >= 0 && ib >= 0) {
        if (a->L->lvl_borrow[ia] != b->L->lvl_borrow[ib])
            return !a->L->lvl_borrow[ia];
        r = fatia_control_drs_cmp(a->L->lvl_drs[ia], b->L->lvl_drs[ib]);
        if (r)
            return r < 0;
    }
    if (a->w->priority != b->w->priority)
        return a->w->priority > b->w->priority;
    if (a->w->created != b->w->created)
        return a->w->created < b->w->created;
    r = strcmp(a->w->uid, b->w->uid);
    return (r ? r : strcmp(a->w->key, b->w->key)) < 0;
}

struct fs_iter {
    struct fatia_control *c;
    struct entry **v; /* the entries of one root cohort, sorted by ClusterQueue name */
    size_t n, left;
    size_t first_left; /* waiting preemptors not yet processed */
};

static struct entry *tournament(struct fs_iter *it, struct ctl_cohort *co, int depth)
{
    struct entry *best = NULL;

    if (depth > 100000)
        return NULL;
    for (size_t i = 0; i < co->child_cohorts.n; i++) {
        struct entry *x = tournament(it, co->child_cohorts.v[i], depth + 1);
        if (x && (!best || fs_less(x, best, &co->node)))
            best = x;
    }
    for (size_t i = 0; i < co->child_cqs.n; i++) {
        struct ctl_cq *cq = co->child_cqs.v[i];
        struct entry *x = cq->cycle_entry;
        if (x && !x->fs_done && (!best || fs_less(x, best, &co->node)))
            best = x;
    }
    return best;
}

/* The next entry of one root's group: the tournament's winner, among the waiting preemptors
 * first (see fatia_control_cycle). */
static struct entry *fs_pop(struct fs_iter *it)
{
    struct entry *e0 = NULL, *win;

    if (!it->left)
        return NULL;
    if (it->first_left) {
        /* waiting preemptors, in the order they issued their preemptions */
        for (size_t i = 0; i < it->n; i++) {
            struct entry *e = it->v[i];
            if (!e->fs_done && e->first && (!e0 || e->first_seq < e0->first_seq))
                e0 = e;
        }
        e0->fs_done = true;
        it->left--;
        it->first_left--;
        return e0;
    }
    for (size_t i = 0; i < it->n && !e0; i++)
        if (!it->v[i]->fs_done)
            e0 = it->v[i];
    if (e0->root) {
        for (size_t i = 0; i < it->n; i++)
            if (!it->v[i]->fs_done)
                fs_levels(it->c, it->v[i]);
        win = tournament(it, e0->root, 0);
        if (!win)
            win = e0;
        it->c->result.n_fair_decisions++;
    } else {
        win = e0;
    }
    win->fs_done = true;
    it->left--;
    return win;
}

/* Fair sharing order of the nominated entries: grouped by root cohort (the roots ordered by their
 * first ClusterQueue name, which is the order in which Kueue's iterator first reaches them; roots
 * share no quota, so interleaving their groups changes no decision), by ClusterQueue name within. */
static int cmp_entry_fs(const void *x, const void *y)
{
    const struct entry *a = *(struct entry *const *)x, *b = *(struct entry *const *)y;

    if (a->root_rank != b->root_rank)
        return a->root_rank < b->root_rank ? -1 : 1;
    return strcmp(a->cq->name, b->cq->name);
}

static int cmp_entry_cq(const void *x, const void *y)
{
    const struct entry *a = *(struct entry *const *)x, *b = *(struct entry *const *)y;
    return strcmp(a->cq->name, b->cq->name);
}

static void fs_group(struct fatia_control *c, struct entry **order, size_t n)
{
    if (n > 1)
        qsort(order, n, sizeof(*order), cmp_entry_cq);
    for (size_t i = 0; i < n; i++) {
        struct entry *e = order[i];
        struct ctl_cohort *r = e->cq->node.parent ? e->cq->cohort : NULL;
        while (r && r->parent)
            r = r->parent;
        e->root = r;
        if (!r) {
            e->root_rank = i;
        } else {
            if (r->cycle_stamp != c->cycle_no) {
                r->cycle_stamp = c->cycle_no;
                r->cycle_rank = i;
            }
            e->root_rank = r->cycle_rank;
        }
        e->cq->cycle_entry = e;
    }
    if (n > 1)
        qsort(order, n, sizeof(*order), cmp_entry_fs);
}

/* ---- processing ---- */

static bool is_marked(const struct fatia_control *c, const struct ctl_wl *w)
{
    return w->preempt_mark == c->cycle_no;
}

static bool targets_overlap(const struct fatia_control *c, const struct entry *e)
{
    for (size_t i = 0; i < e->t.n; i++)
        if (is_marked(c, e->t.v[i].wl))
            return true;
    return false;
}

/* Kueue fits(): the entry's usage fits once this cycle's victims and its own targets (which do
 * not overlap them, checked before) are taken out. */
static bool fits_now(struct fatia_control *c, struct entry *e, struct ctl_wl **victims,
                     size_t n_victims)
{
    bool fits = true;

    for (size_t i = 0; i < n_victims; i++)
        fatia_control_snapshot_remove(c, victims[i]);
    for (size_t i = 0; i < e->t.n; i++)
        fatia_control_snapshot_remove(c, e->t.v[i].wl);
    for (size_t i = 0; i < e->a.n_use && fits; i++)
        if (fatia_control_available(&e->cq->node, e->a.use[i].fr) < e->a.use[i].v)
            fits = false;
    for (size_t i = 0; i < e->t.n; i++)
        fatia_control_snapshot_add(c, e->t.v[i].wl);
    for (size_t i = 0; i < n_victims; i++)
        fatia_control_snapshot_add(c, victims[i]);
    return fits;
}

static int reserve(struct entry *e)
{
    struct ctl_cq *cq = e->cq;
    struct ctl_use *u = fatia_calloc(e->a.n_use ? e->a.n_use : 1, sizeof(*u));

    if (!u)
        return -ENOMEM;
    for (size_t i = 0; i < e->a.n_use; i++) {
        const struct ctl_slot *s = &cq->node.slot[e->a.use[i].fr];
        amt_t v = e->a.use[i].v;
        if (e->a.borrowing > 0) {
            if (s->blimit != AMT_NONE)
                v = amt_min(v, amt_sub(amt_add(s->nominal, s->blimit), s->usage));
        } else {
            v = amt_max(0, amt_min(v, amt_sub(s->nominal, s->usage)));
        }
        u[i] = (struct ctl_use){e->a.use[i].fr, v};
    }
    fatia_control_add_uses(&cq->node, u, e->a.n_use);
    e->res_use = u;
    e->n_res_use = e->a.n_use;
    e->reserved = true;
    return 0;
}

static const char *human_reason(const char *reason)
{
    if (!strcmp(reason, "InClusterQueue"))
        return "prioritization in the ClusterQueue";
    if (!strcmp(reason, "InCohortReclamation"))
        return "reclamation within the cohort";
    if (!strcmp(reason, "InCohortFairSharing"))
        return "Fair Sharing within the cohort";
    if (!strcmp(reason, "InCohortReclaimWhileBorrowing"))
        return "reclamation within the cohort while borrowing";
    return "UNKNOWN";
}

static int set_entry_msg(struct entry *e, const char *m)
{
    char *x = fatia_strdup(m);

    if (!x)
        return -ENOMEM;
    fatia_free(e->msg);
    e->msg = x;
    return 0;
}

static int process(struct fatia_control *c, struct entry *e, struct ctl_wl ***victims,
                   size_t *n_victims, size_t *cap_victims)
{
    char buf[512];
    int r;

    if (e->a.mode == CTL_NOFIT) {
        e->rr = RR_NOFIT;
        return 0;
    }
    if (e->a.mode == CTL_PREEMPT && e->t.n == 0) {
        e->rr = RR_NO_CANDIDATES;
        if (e->cq->reclaim != CTL_ANY)
            return reserve(e);
        return 0;
    }
    if (targets_overlap(c, e)) {
        e->st = ES_SKIPPED;
        c->result.n_skipped++;
        return set_entry_msg(e, "Workload has overlapping preemption targets with another "
                                "workload");
    }
    if (!fits_now(c, e, *victims, *n_victims)) {
        e->st = ES_SKIPPED;
        c->result.n_skipped++;
        return set_entry_msg(e, "Workload no longer fits after processing another workload");
    }
    for (size_t i = 0; i < e->t.n; i++) {
        if (*n_victims == *cap_victims) {
            size_t nc = *cap_victims ? *cap_victims * 2 : 16;
            struct ctl_wl **v = fatia_reallocarray(*victims, nc, sizeof(*v));
            if (!v)
                return -ENOMEM;
            *victims = v;
            *cap_victims = nc;
        }
        (*victims)[(*n_victims)++] = e->t.v[i].wl;
        e->t.v[i].wl->preempt_mark = c->cycle_no;
    }
    fatia_control_add_uses(&e->cq->node, e->a.use, e->a.n_use);
    if (e->a.mode == CTL_PREEMPT) {
        size_t n = 0;
        e->reserved = true;
        e->res_use = NULL; /* the assignment's usage itself */
        for (size_t i = 0; i < e->t.n; i++) {
            struct ctl_wl *v = e->t.v[i].wl;
            snprintf(buf, sizeof(buf),
                     "Preempted to accommodate a workload (UID: %s, JobUID: %s) due to %s",
                     *e->w->uid ? e->w->uid : "UNKNOWN", *e->w->job_uid ? e->w->job_uid : "UNKNOWN",
                     human_reason(e->t.v[i].reason));
            r = fatia_control_evict(c, v, e->t.v[i].reason, buf, e->w, true);
            if (r < 0)
                return r;
            n++;
        }
        if (!e->msg && !(e->msg = fatia_control_assignment_message(c, &e->a, e->w)))
            return -ENOMEM;
        snprintf(buf, sizeof(buf), "%s. Pending the preemption of %zu workload(s)", e->msg, n);
        r = set_entry_msg(e, buf);
        if (r < 0)
            return r;
        e->rr = RR_PENDING_PREEMPTION;
        e->w->sticky = true;
        e->w->preempting = true;
        e->w->pre_seq = ++c->pre_seq;
        c->result.n_preemptors++;
        return 0;
    }
    r = admit(c, e);
    if (r < 0) {
        fatia_control_remove_uses(&e->cq->node, e->a.use, e->a.n_use);
        return r;
    }
    return 0;
}

/* requeueAndUpdate */
static int requeue(struct fatia_control *c, struct entry *e)
{
    struct ctl_wl *w = e->w;
    struct ctl_cq *cq = e->cq;
    bool immediate;

    if (e->st == ES_ASSUMED)
        return 0;
    if (e->st != ES_NOT_NOMINATED && e->rr == RR_GENERIC)
        e->rr = RR_FAILED_AFTER_NOMINATION;
    if (e->st == ES_SKIPPED)
        e->rr = RR_FAILED_AFTER_NOMINATION;
    if (e->msg || !e->a.ps) {
        fatia_control_wl_msg_text(w, e->msg ? e->msg : fatia_strdup(""));
        e->msg = NULL;
    } else {
        /* the assignment's reasons, put into words only if the message is read */
        fatia_control_wl_msg_reasons(w, e->a.ps, e->a.n_ps);
        e->a.ps = NULL;
        e->a.n_ps = 0;
        /* without caches (the invariant tests' twin) in words at once, as Kueue does */
        if (c->caches_off) {
            int r = fatia_control_wl_msg_freeze(c, w);
            if (r < 0)
                return r;
        }
    }
    w->reason = "Pending";
    w->msg_cq = cq;
    if (w->q != CTL_Q_INFLIGHT)
        return 0; /* removed from its queue during the cycle (not expected) */
    if (cq->strategy == CTL_STRICT)
        immediate = e->rr != RR_NAMESPACE_MISMATCH;
    else
        immediate = e->rr == RR_FAILED_AFTER_NOMINATION || e->rr == RR_PENDING_PREEMPTION;
    if (e->rr != RR_PENDING_PREEMPTION) {
        w->sticky = false;
    } else if (e->a.mode == CTL_PREEMPT) {
        /* keep the assignment it preempted for (recorded_assignment) */
        struct ctl_assignment *pa = fatia_malloc(sizeof(*pa));
        fatia_control_wl_drop_preemptor(w);
        w->preempting = true;
        if (pa) {
            *pa = e->a;
            memset(&e->a, 0, sizeof(e->a));
            w->pre_a = pa;
            w->pre_cq = cq;
            w->pre_gen = c->tree_gen;
        }
    }
    if (e->cooldown && e->rr == RR_NO_CANDIDATES) {
        /* it searched no targets only because it was preempted less than the cooldown ago:
         * retried by the first cycle after the cooldown (a backoff), not parked */
        if (w->requeue_at < w->preempted_at + CTL_PREEMPT_COOLDOWN)
            w->requeue_at = w->preempted_at + CTL_PREEMPT_COOLDOWN;
        return fatia_control_queue_push(c, cq, w);
    }
    if (w->requeue_at <= c->now && (immediate || w->pop_gen != cq->requeue_gen))
        return fatia_control_queue_push(c, cq, w);
    c->result.quiet = false;
    return fatia_control_queue_inadmissible(c, cq, w,
                                            e->rr == RR_NOFIT || e->rr == RR_NO_CANDIDATES);
}

/* A waiting preemptor takes the assignment it preempted for when that now fits: the quota its
 * victims released goes to it, not to whichever head the next cycle reaches first (a deviation
 * from Kueue, which retries every flavor and can let a victim or another preemptor take that
 * quota, the preemption loops of kueue#3779 and #14543). */
static bool recorded_assignment(struct fatia_control *c, struct entry *e)
{
    struct ctl_wl *w = e->w;
    struct ctl_assignment *pa = w->pre_a;
    bool ok;

    if (!pa)
        return false;
    w->pre_a = NULL;
    ok = w->pre_cq == e->cq && w->pre_gen == c->tree_gen;
    for (size_t i = 0; ok && i < pa->n_use; i++)
        if (fatia_control_available(&e->cq->node, pa->use[i].fr) < pa->use[i].v)
            ok = false;
    if (!ok) {
        fatia_control_assignment_release(pa);
        fatia_free(pa);
        return false;
    }
    e->a = *pa;
    fatia_free(pa);
    e->a.mode = CTL_FIT;
    e->a.borrowing = 0;
    for (size_t i = 0; i < e->a.n_ps; i++)
        for (size_t j = 0; j < e->a.ps[i].n_flv; j++)
            e->a.ps[i].flv[j].mode = CTL_FIT;
    for (size_t i = 0; i < e->a.n_use; i++) {
        bool mr;
        int h = fatia_control_find_height(e->cq, e->a.use[i].fr, e->a.use[i].v, &mr);
        if (h > e->a.borrowing)
            e->a.borrowing = h;
    }
    return true;
}

static void entry_release(struct entry *e)
{
    fatia_control_assignment_release(&e->a);
    fatia_control_targets_release(&e->t);
    fatia_free(e->msg);
    fatia_free(e->res_use);
}

/* The cycle's arrays for n heads, zeroed as calloc would give them: kept in the engine between
 * cycles (grown when a cycle has more heads), so a cycle does not pay the allocator for three
 * arrays of up to a few hundred KiB (the levels are 1.3 KiB an entry). */
static int cycle_arrays(struct fatia_control *c, size_t n)
{
    if (!n)
        n = 1;
    if (n > c->cycle_cap) {
        size_t nc = c->cycle_cap * 2 > n ? c->cycle_cap * 2 : n;
        void *e = fatia_calloc(nc, sizeof(struct entry));
        void *o = fatia_calloc(nc, sizeof(struct entry *));
        void *l = fatia_calloc(nc, sizeof(struct fs_lvl));
        if (!e || !o || !l) {
            fatia_free(e);
            fatia_free(o);
            fatia_free(l);
            return -ENOMEM;
        }
        fatia_free(c->cycle_entries);
        fatia_free(c->cycle_order);
        fatia_free(c->cycle_lvls);
        c->cycle_entries = e;
        c->cycle_order = o;
        c->cycle_lvls = l;
        c->cycle_cap = nc;
        return 0;
    }
    memset(c->cycle_entries, 0, n * sizeof(struct entry));
    memset(c->cycle_order, 0, n * sizeof(struct entry *));
    if (c->cfg.fair_sharing)
        memset(c->cycle_lvls, 0, n * sizeof(struct fs_lvl));
    return 0;
}

int fatia_control_cycle(struct fatia_control *c, int64_t now,
                        const struct fatia_control_result **ret)
{
    struct entry *entries = NULL, **order = NULL;
    struct fs_lvl *lvls = NULL;
    struct ctl_wl **victims = NULL;
    size_t n = 0, n_victims = 0, cap_victims = 0, n_nom = 0;
    int r = 0;

    c->now = now;
    if (c->tree_dirty) {
        r = fatia_control_rebuild_tree(c);
        if (r < 0)
            return r;
    }
    fatia_control_arena_reset(&c->arena);
    c->res_adm.n = c->res_ev.n = c->res_pend.n = 0;
    memset(&c->result, 0, sizeof(c->result));
    c->result.quiet = true;
    c->result_valid = false;
    r = take_pending_evictions(c);
    if (r < 0)
        return r;
    c->n_cycles++;
    c->cycle_no++;
    c->stamp++;

    /* 1. heads: one per ready ClusterQueue, in ClusterQueue order, after the batched requeues
     * that are due (they may list more queues) */
    PHASE(FATIA_CONTROL_PHASE_HEADS);
    if ((r = fatia_control_queue_requeue_due(c, now)) < 0)
        goto out;
    {
        size_t k = 0;
        for (size_t i = 0; i < c->ready.n; i++) {
            struct ctl_cq *cq = c->ready.v[i];
            if (cq->backoff.n && (r = fatia_control_queue_expire_backoff(c, cq, now)) < 0)
                goto out;
            /* a ClusterQueue becomes active only through a rebuild, which lists it again */
            if (cq->defined && cq->active && (fatia_control_queue_has_head(cq) || cq->backoff.n)) {
                c->ready.v[k++] = cq;
                n += fatia_control_queue_has_head(cq);
            } else {
                cq->listed = false;
            }
        }
        c->ready.n = k;
        /* compaction keeps the order, so the list is sorted unless queues were listed since */
        for (size_t i = 1; i < k; i++)
            if (c->ready.v[i - 1]->index > c->ready.v[i]->index) {
                qsort(c->ready.v, k, sizeof(*c->ready.v), cmp_cq_index);
                break;
            }
    }
    if ((r = cycle_arrays(c, n)) < 0)
        goto out;
    entries = c->cycle_entries;
    order = c->cycle_order;
    if (c->cfg.fair_sharing)
        lvls = c->cycle_lvls;
    for (size_t i = 0; lvls && i < n; i++)
        entries[i].L = &lvls[i];
    n = 0;
    for (size_t i = 0; i < c->ready.n; i++) {
        struct ctl_cq *cq = c->ready.v[i];
        if (!fatia_control_queue_has_head(cq))
            continue;
        entries[n].cq = cq;
        entries[n].w = fatia_control_queue_pop(c, cq);
        entries[n].first = entries[n].w->preempting;
        entries[n].first_seq = entries[n].w->pre_seq;
        entries[n].w->preempting = false;
        n++;
    }
    c->result.n_heads = n;

    /* 2. nominate */
    PHASE(FATIA_CONTROL_PHASE_NOMINATE);
    fatia_control_nominate_begin(c);
    for (size_t i = 0; i < n; i++) {
        struct entry *e = &entries[i];
        c->phases.nominate++;
        if (!fatia_control_ns_matches(c, e->cq, e->w->ns)) {
            e->rr = RR_NAMESPACE_MISMATCH;
            r = set_entry_msg(e, "Workload namespace doesn't match ClusterQueue selector");
        } else if (e->w->bad) {
            r = set_entry_msg(e, e->w->bad_msg ? e->w->bad_msg : "invalid workload");
        } else if (e->first && recorded_assignment(c, e)) {
            e->msg = fatia_strdup("");
            if (!e->msg)
                r = -ENOMEM;
            e->nominated = true;
            order[n_nom++] = e;
        } else {
            fatia_control_wl_drop_preemptor(e->w);
            e->cooldown = fatia_control_preempt_cooldown(c, e->w);
            r = fatia_control_get_assignments(c, e->cq, e->w, &e->a, &e->t);
            if (r == 0) {
                /* e->msg stays NULL: the message is the assignment's reasons (requeue) */
                e->nominated = true;
                order[n_nom++] = e;
            }
        }
        if (r < 0)
            goto out;
    }
    fatia_control_nominate_end(c);

    /* 3. order and 4. process */
    PHASE(FATIA_CONTROL_PHASE_PROCESS);
    if (c->cfg.fair_sharing) {
        fs_group(c, order, n_nom);
        for (size_t i = 0, j; i < n_nom; i = j) {
            struct fs_iter it;
            struct entry *e;
            for (j = i + 1; j < n_nom && order[j]->root_rank == order[i]->root_rank; j++)
                ;
            it = (struct fs_iter){c, order + i, j - i, j - i, 0};
            for (size_t k = i; k < j; k++)
                it.first_left += order[k]->first;
            while ((e = fs_pop(&it))) {
                c->phases.process++;
                r = process(c, e, &victims, &n_victims, &cap_victims);
                if (r < 0)
                    goto out;
            }
        }
    } else {
        if (n_nom > 1)
            qsort(order, n_nom, sizeof(*order), classical_cmp);
        for (size_t i = 0; i < n_nom; i++) {
            c->phases.process++;
            r = process(c, order[i], &victims, &n_victims, &cap_victims);
            if (r < 0)
                goto out;
        }
    }

    /* 5. requeue, and take back what was only reserved for this cycle */
    PHASE(FATIA_CONTROL_PHASE_REQUEUE);
    for (size_t i = 0; i < n; i++) {
        struct entry *e = &entries[i];
        if (e->reserved) {
            if (e->res_use)
                fatia_control_remove_uses(&e->cq->node, e->res_use, e->n_res_use);
            else
                fatia_control_remove_uses(&e->cq->node, e->a.use, e->a.n_use);
            e->reserved = false;
        }
    }
    for (size_t i = 0; i < n; i++) {
        struct entry *e = &entries[i];
        c->phases.requeue++;
        if (e->st == ES_ASSUMED)
            continue;
        r = requeue(c, e);
        if (r < 0)
            goto out;
        r = result_pending(c, e->w);
        if (r < 0)
            goto out;
    }
    if (c->res_adm.n || c->res_ev.n)
        c->result.quiet = false;
out:
    fatia_control_nominate_end(c);
    for (size_t i = 0; entries && i < n; i++) {
        entries[i].cq->cycle_entry = NULL;
        if (r < 0 && entries[i].reserved) {
            if (entries[i].res_use)
                fatia_control_remove_uses(&entries[i].cq->node, entries[i].res_use,
                                          entries[i].n_res_use);
            else
                fatia_control_remove_uses(&entries[i].cq->node, entries[i].a.use,
                                          entries[i].a.n_use);
        }
        if (r < 0 && entries[i].w->q == CTL_Q_INFLIGHT)
            fatia_control_queue_push(c, entries[i].cq, entries[i].w);
        entry_release(&entries[i]);
    }
    fatia_free(victims);
    if (r < 0)
        return r;
    c->result.n_admitted = c->res_adm.n;
    c->result.admitted = c->res_adm.v;
    c->result.n_evicted = c->res_ev.n;
    c->result.evicted = c->res_ev.v;
    c->result.n_pending = c->res_pend.n;
    c->result.pending = c->res_pend.v;
    c->result_valid = true;
    *ret = &c->result;
    PHASE(FATIA_CONTROL_PHASE_END);
    return 0;
}

void fatia_control_set_phase_hook(struct fatia_control *c, fatia_control_phase_fn fn, void *arg)
{
    c->phase_fn = fn;
    c->phase_arg = arg;
}

int64_t fatia_control_next_wakeup(const struct fatia_control *c)
{
    int64_t t = c->requeue_next; /* a batched requeue (queue.c) */

    /* every ClusterQueue with backoffs is in the ready list (queue.c) */
    for (size_t i = 0; i < c->ready.n; i++)
        for (const struct ctl_wl *w = c->ready.v[i]->backoff.head; w; w = w->next)
            if (w->requeue_at < t)
                t = w->requeue_at;
    return t;
}

bool fatia_control_has_work(const struct fatia_control *c, int64_t now)
{
    if (c->requeue_next <= now)
        return true; /* a batched requeue is due: the cycle carries it out */
    if (c->tree_dirty) {
        /* a rebuild may activate any ClusterQueue */
        for (size_t i = 0; i < c->cqs.n; i++)
            if (c->cqs.v[i]->defined && fatia_control_queue_has_head(c->cqs.v[i]))
                return true;
        return false;
    }
    for (size_t i = 0; i < c->ready.n; i++) {
        const struct ctl_cq *cq = c->ready.v[i];
        if (!cq->defined || !cq->active)
            continue;
        if (fatia_control_queue_has_head(cq))
            return true;
        for (const struct ctl_wl *w = cq->backoff.head; w; w = w->next)
            if (w->requeue_at <= now)
                return true;
    }
    return false;
}
