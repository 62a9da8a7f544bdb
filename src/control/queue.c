/*
 * control/queue.c: the pending queues of ClusterQueues (Kueue pkg/cache/queue/cluster_queue.go,
 * reference/kueue.md §2.1 and §2.8).
 *
 * Each ClusterQueue keeps
 *   - an active heap ordered by: the sticky preemptor first (BestEffortFIFO), higher priority,
 *     earlier queue-order time, then UID (metadata.uid, or the workload key when absent);
 *   - the inadmissible list: workloads that did not fit and wait for a capacity event;
 *   - the backoff list: workloads whose status.requeueState.requeueAt is still ahead of `now`.
 * A workload is in at most one of them (wl->q says which; INFLIGHT while a cycle holds it).
 *
 * Queue states of a pending workload and the functions that move it:
 *
 *           ctl_queue_push            ctl_queue_pop (cycle)
 *      ──────────────────────► HEAP ─────────────────────────► INFLIGHT
 *            │ requeueAt > now  ▲ ▲                               │ │
 *            ▼                  │ └── ctl_queue_push (immediate) ─┘ │ ctl_queue_inadmissible
 *         BACKOFF ──────────────┘     requeue                        ▼
 *           (cycle start, expired)          ┌──────────────── INADMISSIBLE
 *                                           └── ctl_queue_requeue_* (capacity event) ──► HEAP
 *
 * StrictFIFO and BestEffortFIFO share the ordering and differ only in where a head goes back
 * after a failed attempt (cycle.c): StrictFIFO puts it back in the heap (head-of-line
 * blocking) except for a namespace mismatch; BestEffortFIFO parks NoFit and no-candidate
 * workloads as inadmissible, unless the inadmissible list was requeued since the pop.
 *
 * Capacity events (a workload finished, was deleted or released its quota; a ClusterQueue,
 * Cohort, ResourceFlavor or Namespace changed) requeue the inadmissible workloads of the whole
 * cohort tree at once. Kueue batches these per root cohort with a one-second delay; the engine
 * requeues at once, since its caller decides when the next cycle runs.
 *
 * Scheduling-equivalence hashing (KEP-9694): in BestEffortFIFO, a workload parked for NoFit
 * records its shape hash (pod sets, requests, counts, placement constraints and priority); the
 * heap workloads with the same hash are parked with it, and new arrivals with that hash go
 * straight to the inadmissible list ("Bypassed scheduling evaluation because an equivalent
 * workload recently failed") until the next requeue clears the record.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "control/internal.h"

bool ctl_wl_before(const struct ctl_cq *cq, const struct ctl_wl *a, const struct ctl_wl *b)
{
    if (cq->strategy == CTL_BEST_EFFORT && a->sticky != b->sticky)
        return a->sticky;
    if (a->priority != b->priority)
        return a->priority > b->priority;
    if (a->created != b->created)
        return a->created < b->created;
    int r = strcmp(a->uid, b->uid);
    if (r)
        return r < 0;
    return strcmp(a->key, b->key) < 0;
}

/* ---- heap ---- */

static void heap_set(struct ctl_cq *cq, size_t i, struct ctl_wl *w)
{
    cq->heap[i] = w;
    w->heap_idx = i;
}

static void sift_up(struct ctl_cq *cq, size_t i)
{
    struct ctl_wl *w = cq->heap[i];

    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!ctl_wl_before(cq, w, cq->heap[p]))
            break;
        heap_set(cq, i, cq->heap[p]);
        i = p;
    }
    heap_set(cq, i, w);
}

static void sift_down(struct ctl_cq *cq, size_t i)
{
    struct ctl_wl *w = cq->heap[i];
    size_t n = cq->heap_n;

    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        struct ctl_wl *best = w;
        if (l < n && ctl_wl_before(cq, cq->heap[l], best)) {
            m = l;
            best = cq->heap[l];
        }
        if (r < n && ctl_wl_before(cq, cq->heap[r], best))
            m = r;
        if (m == i)
            break;
        heap_set(cq, i, cq->heap[m]);
        i = m;
    }
    heap_set(cq, i, w);
}

static int heap_push(struct ctl_cq *cq, struct ctl_wl *w)
{
    if (cq->heap_n == cq->heap_cap) {
        size_t nc = cq->heap_cap ? cq->heap_cap * 2 : 16;
        struct ctl_wl **h = fatia_reallocarray(cq->heap, nc, sizeof(*h));
        if (!h)
            return -ENOMEM;
        cq->heap = h;
        cq->heap_cap = nc;
    }
    heap_set(cq, cq->heap_n++, w);
    sift_up(cq, cq->heap_n - 1);
    return 0;
}

static void heap_remove(struct ctl_cq *cq, struct ctl_wl *w)
{
    size_t i = w->heap_idx;
    struct ctl_wl *last;

    if (i >= cq->heap_n || cq->heap[i] != w)
        return;
    last = cq->heap[--cq->heap_n];
    if (i < cq->heap_n) {
        heap_set(cq, i, last);
        sift_down(cq, i);
        sift_up(cq, last->heap_idx);
    }
}

/* ---- lists ---- */

void ctl_wlist_append(struct ctl_wlist *l, struct ctl_wl *w)
{
    w->prev = l->tail;
    w->next = NULL;
    if (l->tail)
        l->tail->next = w;
    else
        l->head = w;
    l->tail = w;
    l->n++;
}

void ctl_wlist_remove(struct ctl_wlist *l, struct ctl_wl *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        l->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        l->tail = w->prev;
    w->prev = w->next = NULL;
    l->n--;
}

/* ---- equivalence records ---- */

static bool nofit_has(const struct ctl_cq *cq, uint64_t h)
{
    for (size_t i = 0; i < cq->n_nofit; i++)
        if (cq->nofit_hashes[i] == h)
            return true;
    return false;
}

static int nofit_add(struct ctl_cq *cq, uint64_t h)
{
    if (nofit_has(cq, h))
        return 0;
    if (cq->n_nofit == cq->nofit_cap) {
        size_t nc = cq->nofit_cap ? cq->nofit_cap * 2 : 8;
        uint64_t *v = fatia_reallocarray(cq->nofit_hashes, nc, sizeof(*v));
        if (!v)
            return -ENOMEM;
        cq->nofit_hashes = v;
        cq->nofit_cap = nc;
    }
    cq->nofit_hashes[cq->n_nofit++] = h;
    return 0;
}

/* ---- operations ---- */

static const char bypassed[] =
    "Bypassed scheduling evaluation because an equivalent workload recently failed";

int ctl_queue_push(struct fatia_control *c, struct ctl_cq *cq, struct ctl_wl *w)
{
    FATIA_ASSERT(w->q == CTL_Q_NONE || w->q == CTL_Q_INFLIGHT);
    if (w->q == CTL_Q_INFLIGHT)
        cq->n_inflight--;
    w->q = CTL_Q_NONE;
    w->cq = cq;
    if (w->requeue_at > c->now) {
        ctl_wlist_append(&cq->backoff, w);
        w->q = CTL_Q_BACKOFF;
        return 0;
    }
    if (cq->strategy == CTL_BEST_EFFORT && !w->sticky && cq->n_nofit &&
        nofit_has(cq, w->shape_hash)) {
        ctl_wlist_append(&cq->inadm, w);
        w->q = CTL_Q_INADMISSIBLE;
        if (!w->msg)
            ctl_set_msg(w, cq, "Pending", "%s", bypassed);
        return 0;
    }
    if (heap_push(cq, w) < 0)
        return -ENOMEM;
    w->q = CTL_Q_HEAP;
    return 0;
}

struct ctl_wl *ctl_queue_pop(struct fatia_control *c, struct ctl_cq *cq)
{
    struct ctl_wl *w;

    (void)c;
    if (!cq->heap_n)
        return NULL;
    w = cq->heap[0];
    heap_remove(cq, w);
    w->q = CTL_Q_INFLIGHT;
    w->pop_gen = cq->requeue_gen;
    cq->n_inflight++;
    return w;
}

void ctl_queue_remove(struct fatia_control *c, struct ctl_wl *w)
{
    struct ctl_cq *cq = w->cq;

    (void)c;
    switch (w->q) {
    case CTL_Q_HEAP:
        heap_remove(cq, w);
        break;
    case CTL_Q_INADMISSIBLE:
        ctl_wlist_remove(&cq->inadm, w);
        break;
    case CTL_Q_BACKOFF:
        ctl_wlist_remove(&cq->backoff, w);
        break;
    case CTL_Q_INFLIGHT:
        cq->n_inflight--;
        break;
    case CTL_Q_NONE:
        break;
    }
    w->q = CTL_Q_NONE;
}

int ctl_queue_inadmissible(struct fatia_control *c, struct ctl_cq *cq, struct ctl_wl *w,
                           bool record_hash)
{
    FATIA_ASSERT(w->q == CTL_Q_INFLIGHT || w->q == CTL_Q_NONE);
    if (w->q == CTL_Q_INFLIGHT)
        cq->n_inflight--;
    w->cq = cq;
    ctl_wlist_append(&cq->inadm, w);
    w->q = CTL_Q_INADMISSIBLE;
    if (record_hash && cq->strategy == CTL_BEST_EFFORT) {
        if (nofit_add(cq, w->shape_hash) < 0)
            return -ENOMEM;
        /* park the heap workloads equivalent to it (linear in the heap; only done when the
         * heap holds something equivalent, which the record tells cheaply on later pushes) */
        for (size_t i = 0; i < cq->heap_n;) {
            struct ctl_wl *x = cq->heap[i];
            if (x->shape_hash == w->shape_hash && !x->sticky) {
                heap_remove(cq, x);
                ctl_wlist_append(&cq->inadm, x);
                x->q = CTL_Q_INADMISSIBLE;
                ctl_set_msg(x, cq, "Pending", "%s", bypassed);
                continue;
            }
            i++;
        }
    }
    (void)c;
    return 0;
}

int ctl_queue_requeue_inadmissible(struct fatia_control *c, struct ctl_cq *cq, int64_t now)
{
    struct ctl_wl *w, *next;

    cq->n_nofit = 0;
    cq->requeue_gen++;
    for (w = cq->inadm.head; w; w = next) {
        next = w->next;
        if (!ctl_ns_matches(c, cq, w->ns))
            continue;
        ctl_wlist_remove(&cq->inadm, w);
        w->q = CTL_Q_NONE;
        if (heap_push(cq, w) < 0) {
            ctl_wlist_append(&cq->inadm, w);
            w->q = CTL_Q_INADMISSIBLE;
            return -ENOMEM;
        }
        w->q = CTL_Q_HEAP;
    }
    for (w = cq->backoff.head; w; w = next) {
        next = w->next;
        if (w->requeue_at > now)
            continue;
        ctl_wlist_remove(&cq->backoff, w);
        w->q = CTL_Q_NONE;
        if (heap_push(cq, w) < 0) {
            ctl_wlist_append(&cq->backoff, w);
            w->q = CTL_Q_BACKOFF;
            return -ENOMEM;
        }
        w->q = CTL_Q_HEAP;
    }
    return 0;
}

/* Backoff expiry alone (cycle start). */
int ctl_queue_expire_backoff(struct fatia_control *c, struct ctl_cq *cq, int64_t now)
{
    struct ctl_wl *w, *next;

    (void)c;
    for (w = cq->backoff.head; w; w = next) {
        next = w->next;
        if (w->requeue_at > now)
            continue;
        ctl_wlist_remove(&cq->backoff, w);
        w->q = CTL_Q_NONE;
        if (heap_push(cq, w) < 0) {
            ctl_wlist_append(&cq->backoff, w);
            w->q = CTL_Q_BACKOFF;
            return -ENOMEM;
        }
        w->q = CTL_Q_HEAP;
    }
    return 0;
}

static int requeue_cohort(struct fatia_control *c, struct ctl_cohort *co, int64_t now, int depth)
{
    int r;

    if (depth > 100000)
        return 0;
    for (size_t i = 0; i < co->child_cqs.n; i++) {
        r = ctl_queue_requeue_inadmissible(c, co->child_cqs.v[i], now);
        if (r < 0)
            return r;
    }
    for (size_t i = 0; i < co->child_cohorts.n; i++) {
        r = requeue_cohort(c, co->child_cohorts.v[i], now, depth + 1);
        if (r < 0)
            return r;
    }
    return 0;
}

int ctl_queue_requeue_tree(struct fatia_control *c, struct ctl_cq *cq, int64_t now)
{
    struct ctl_cohort *co;

    if (c->tree_dirty)
        return ctl_queue_requeue_all(c, now);
    if (!cq->cohort)
        return ctl_queue_requeue_inadmissible(c, cq, now);
    for (co = cq->cohort; co->parent; co = co->parent)
        ;
    return requeue_cohort(c, co, now, 0);
}

int ctl_queue_requeue_all(struct fatia_control *c, int64_t now)
{
    for (size_t i = 0; i < c->cqs.n; i++) {
        int r = ctl_queue_requeue_inadmissible(c, c->cqs.v[i], now);
        if (r < 0)
            return r;
    }
    return 0;
}

size_t ctl_queue_pending(const struct ctl_cq *cq)
{
    return cq->heap_n + cq->inadm.n + cq->backoff.n + cq->n_inflight;
}
