/*
 * control/queue.c: the pending queues of ClusterQueues (Kueue pkg/cache/queue/cluster_queue.go,
 * reference/kueue.md §2.1 and §2.8).
 *
 * Order: the sticky preemptor first (BestEffortFIFO), then higher priority, earlier queue-order
 * time, metadata.uid, and the workload key. Each workload keeps the first 16 bytes of its uid and key as two
 * numbers beside its priority and time (fatia_control_wl_order_init), so that a comparison reads
 * the strings only when those bytes tie and a string is longer: with the uids empty (fatia
 * schedule, the benchmark) and equal times, every comparison of a heap sift came down to
 * strcmp on two keys in memory the sift had not touched (round 7 in docs/control.md). StrictFIFO and BestEffortFIFO share the order and
 * differ only in where a head goes after a failed attempt (cycle.c): StrictFIFO puts it back
 * (head-of-line blocking) except for a namespace mismatch; BestEffortFIFO parks NoFit and
 * no-candidate heads until a capacity event, unless its parked set was requeued since the pop.
 *
 * Structure. Pending workloads of a ClusterQueue are grouped by scheduling shape (pod sets,
 * counts, requests, placement constraints) and priority: Kueue's scheduling-equivalence hash
 * (KEP-9694), which parks every equivalent workload with a head that did not fit and sends new
 * equivalent arrivals straight to the parked set until the next requeue. A group keeps its
 * members in a binary heap by queue-order time (priorities are equal inside a group, so this is
 * the queue order); the groups sit in one of two pairing heaps ordered by their head:
 *
 *        push ──► group ──┐                  requeue (capacity event): meld parked into active
 *                         ▼                    ┌─────────────────────────────────────┐
 *                 cq->qactive (pairing heap) ◄──┘                                     │
 *        pop ◄── head of the best group          park (NoFit, BestEffortFIFO) ──► cq->qparked
 *
 * so that pop and push cost O(log n), parking a whole equivalence class O(log groups), and the
 * requeue of a cohort tree O(1) per ClusterQueue (a meld), independent of how many workloads
 * wait. A group's `parked_gen` equals the ClusterQueue's requeue generation while it is parked;
 * bumping the generation at a requeue makes every group active at once.
 *
 * Capacity events of workloads (finished, deleted, released) requeue the parked workloads of the
 * ClusterQueue's whole cohort tree, at once or, with fatia_control_set_requeue_batch, as Kueue's
 * requeuer does: one request per root cohort (or per ClusterQueue without a cohort), carried out
 * by the first cycle at or after the first event's time + the period (requeue_due; later events
 * join the pending request). Object events requeue at once.
 *
 * Besides groups: `sticky` holds the BestEffortFIFO preemptor waiting for its victims; `single`
 * parks workloads one by one (namespace mismatch, invalid requests), requeued when their namespace
 * matches; `backoff` holds workloads whose status.requeueState.requeueAt is still ahead.
 *
 * Queue states of a pending workload and the functions that move it:
 *
 *           fatia_control_queue_push                         fatia_control_queue_pop (cycle)
 *      ────────────────────► GROUP (active) ───────────────────────────► INFLIGHT
 *            │ requeueAt > now    ▲   ▲                                   │  │
 *            ▼                    │   └─── fatia_control_queue_push (immediate) ────┘  │ fatia_control_queue_inadmissible
 *         BACKOFF ────────────────┘                                          ▼
 *      (cycle start, expired)      ◄── ctl_queue_requeue_* ── GROUP (parked) / SINGLE
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "control/internal.h"

/* The first 16 bytes of s as two big-endian words, 0-padded: comparing them as numbers orders
 * as strcmp does (unsigned bytes; a string's end, 0, before any byte), and equal words decide
 * nothing only when a string is longer than 16 bytes. */
static void order_key(const char *s, uint64_t v[2], bool *is_long)
{
    size_t i;

    v[0] = v[1] = 0;
    for (i = 0; i < 16 && s[i]; i++)
        v[i / 8] |= (uint64_t)(unsigned char)s[i] << (56 - 8 * (i % 8));
    *is_long = i == 16 && s[16];
}

void fatia_control_wl_order_init(struct ctl_wl *w)
{
    order_key(w->uid, w->uid_ord, &w->uid_long);
    order_key(w->key, w->key_ord, &w->key_long);
}

/* strcmp(as, bs) < 0, > 0 or 0 through the order keys: the strings are read only when their
 * first 16 bytes are equal and one is longer */
static int order_cmp(const uint64_t *a, bool a_long, const char *as, const uint64_t *b, bool b_long,
                     const char *bs)
{
    if (a[0] != b[0])
        return a[0] < b[0] ? -1 : 1;
    if (a[1] != b[1])
        return a[1] < b[1] ? -1 : 1;
    if (!a_long && !b_long)
        return 0;
    return strcmp(as, bs);
}

bool fatia_control_wl_before(const struct ctl_cq *cq, const struct ctl_wl *a,
                             const struct ctl_wl *b)
{
    int r;

    if (cq->strategy == CTL_BEST_EFFORT && a->sticky != b->sticky)
        return a->sticky;
    if (a->priority != b->priority)
        return a->priority > b->priority;
    if (a->created != b->created)
        return a->created < b->created;
    r = order_cmp(a->uid_ord, a->uid_long, a->uid, b->uid_ord, b->uid_long, b->uid);
    if (r)
        return r < 0;
    return order_cmp(a->key_ord, a->key_long, a->key, b->key_ord, b->key_long, b->key) < 0;
}

/* ---- a group's member heap ----
 *
 * The entries carry their workload's order keys (the members of a group share its priority and
 * none is sticky, so the order inside it is queue-order time, uid, key): a sift compares entries
 * of the array and touches a workload only to record its new index, or when the keys tie. */

static struct ctl_gent gent_of(struct ctl_wl *w)
{
    return (struct ctl_gent){w->created,
                             {w->uid_ord[0], w->uid_ord[1]},
                             {w->key_ord[0], w->key_ord[1]},
                             w->uid_long,
                             w->key_long,
                             w};
}

/* fatia_control_wl_before(cq, a->w, b->w) for two members of one group */
static bool gbefore(const struct ctl_group *g, const struct ctl_gent *a, const struct ctl_gent *b)
{
    if (a->created != b->created)
        return a->created < b->created;
    if (a->uid[0] != b->uid[0])
        return a->uid[0] < b->uid[0];
    if (a->uid[1] != b->uid[1])
        return a->uid[1] < b->uid[1];
    if (!a->uid_long && !b->uid_long) {
        if (a->key[0] != b->key[0])
            return a->key[0] < b->key[0];
        if (a->key[1] != b->key[1])
            return a->key[1] < b->key[1];
        if (!a->key_long && !b->key_long)
            return false;
    }
    return fatia_control_wl_before(g->cq, a->w, b->w);
}

static void gset(struct ctl_group *g, size_t i, const struct ctl_gent *e)
{
    g->heap[i] = *e;
    e->w->gidx = i;
}

static void gsift_up(struct ctl_group *g, size_t i)
{
    struct ctl_gent e = g->heap[i];

    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!gbefore(g, &e, &g->heap[p]))
            break;
        gset(g, i, &g->heap[p]);
        i = p;
    }
    gset(g, i, &e);
}

static void gsift_down(struct ctl_group *g, size_t i)
{
    struct ctl_gent e = g->heap[i];

    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const struct ctl_gent *best = &e;
        if (l < g->n && gbefore(g, &g->heap[l], best)) {
            m = l;
            best = &g->heap[l];
        }
        if (r < g->n && gbefore(g, &g->heap[r], best))
            m = r;
        if (m == i)
            break;
        gset(g, i, &g->heap[m]);
        i = m;
    }
    gset(g, i, &e);
}

static int gpush(struct ctl_group *g, struct ctl_wl *w)
{
    struct ctl_gent e = gent_of(w);

    if (g->n == g->cap) {
        size_t nc = g->cap ? g->cap * 2 : 4;
        struct ctl_gent *h = fatia_reallocarray(g->heap, nc, sizeof(*h));
        if (!h)
            return -ENOMEM;
        g->heap = h;
        g->cap = nc;
    }
    gset(g, g->n++, &e);
    gsift_up(g, g->n - 1);
    w->grp = g;
    return 0;
}

static void gremove(struct ctl_group *g, struct ctl_wl *w)
{
    size_t i = w->gidx;
    struct ctl_gent last;

    FATIA_ASSERT(i < g->n && g->heap[i].w == w);
    last = g->heap[--g->n];
    if (i < g->n) {
        gset(g, i, &last);
        gsift_down(g, i);
        gsift_up(g, last.w->gidx);
    }
    w->grp = NULL;
}

/* ---- pairing heaps of groups ---- */

static bool group_before(const struct ctl_group *a, const struct ctl_group *b)
{
    return fatia_control_wl_before(a->cq, a->heap[0].w, b->heap[0].w);
}

static struct ctl_group *meld(struct ctl_group *a, struct ctl_group *b)
{
    if (!a)
        return b;
    if (!b)
        return a;
    if (group_before(b, a)) {
        struct ctl_group *t = a;
        a = b;
        b = t;
    }
    /* b becomes a's leftmost child */
    b->prev = a;
    b->sibling = a->child;
    if (a->child)
        a->child->prev = b;
    a->child = b;
    a->sibling = a->prev = NULL;
    return a;
}

/* Two-pass merge of a sibling list (iterative: no recursion on long lists). */
static struct ctl_group *merge_pairs(struct ctl_group *first)
{
    struct ctl_group *stack = NULL, *a, *b, *next, *r;

    while (first) {
        a = first;
        b = a->sibling;
        next = b ? b->sibling : NULL;
        a->sibling = a->prev = NULL;
        if (b)
            b->sibling = b->prev = NULL;
        r = meld(a, b);
        r->sibling = stack; /* reuse sibling as the stack link */
        stack = r;
        first = next;
    }
    r = NULL;
    while (stack) {
        next = stack->sibling;
        stack->sibling = NULL;
        r = meld(stack, r);
        stack = next;
    }
    return r;
}

/* Removes node g from the heap rooted at *root. */
static void pheap_remove(struct ctl_group **root, struct ctl_group *g)
{
    struct ctl_group *sub;

    if (*root == g) {
        *root = merge_pairs(g->child);
    } else {
        /* unlink from its parent (prev is the parent for a leftmost child) */
        if (g->prev->child == g)
            g->prev->child = g->sibling;
        else
            g->prev->sibling = g->sibling;
        if (g->sibling)
            g->sibling->prev = g->prev;
        sub = merge_pairs(g->child);
        *root = meld(*root, sub);
    }
    g->child = g->sibling = g->prev = NULL;
}

static void pheap_insert(struct ctl_group **root, struct ctl_group *g)
{
    g->child = g->sibling = g->prev = NULL;
    *root = meld(*root, g);
}

static bool group_parked(const struct ctl_group *g)
{
    return g->parked_gen == g->cq->requeue_gen;
}

static struct ctl_group **group_root(struct ctl_group *g)
{
    return group_parked(g) ? &g->cq->qparked : &g->cq->qactive;
}

/* ---- the group map of a ClusterQueue ---- */

static size_t gslot(const struct ctl_cq *cq, uint64_t hash, int32_t prio)
{
    uint64_t h = hash ^ ((uint64_t)(uint32_t)prio * 0x9E3779B97F4A7C15ULL);
    size_t m = cq->gmap_cap - 1, i = (size_t)(h ^ (h >> 29)) & m;

    while (cq->gmap[i] && (cq->gmap[i]->hash != hash || cq->gmap[i]->priority != prio))
        i = (i + 1) & m;
    return i;
}

static int gmap_grow(struct ctl_cq *cq)
{
    size_t old = cq->gmap_cap, nc = old ? old * 2 : 16;
    struct ctl_group **ov = cq->gmap, **nv = fatia_calloc(nc, sizeof(*nv));

    if (!nv)
        return -ENOMEM;
    cq->gmap = nv;
    cq->gmap_cap = nc;
    for (size_t i = 0; i < old; i++)
        if (ov[i]) {
            size_t j = gslot(cq, ov[i]->hash, ov[i]->priority);
            cq->gmap[j] = ov[i];
            ov[i]->map_slot = j;
        }
    fatia_free(ov);
    return 0;
}

static int group_get(struct ctl_cq *cq, const struct ctl_wl *w, struct ctl_group **ret)
{
    struct ctl_group *g;
    size_t i;

    if ((cq->gmap_n + 1) * 4 > cq->gmap_cap * 3 && gmap_grow(cq) < 0)
        return -ENOMEM;
    i = gslot(cq, w->shape_hash, w->priority);
    if (cq->gmap[i]) {
        *ret = cq->gmap[i];
        return 0;
    }
    g = fatia_calloc(1, sizeof(*g));
    if (!g)
        return -ENOMEM;
    g->hash = w->shape_hash;
    g->priority = w->priority;
    g->cq = cq;
    g->parked_gen = UINT64_MAX;
    g->map_slot = i;
    cq->gmap[i] = g;
    cq->gmap_n++;
    *ret = g;
    return 0;
}

/* Deletes an empty group (already out of its pairing heap) from the map: backward-shift. */
static void group_free(struct ctl_cq *cq, struct ctl_group *g)
{
    size_t m = cq->gmap_cap - 1, i = g->map_slot, j = i;

    FATIA_ASSERT(cq->gmap[i] == g && g->n == 0);
    cq->gmap[i] = NULL;
    for (;;) {
        size_t k;
        j = (j + 1) & m;
        if (!cq->gmap[j])
            break;
        k = gslot(cq, cq->gmap[j]->hash, cq->gmap[j]->priority);
        if (k == j)
            continue; /* already where it belongs (i is free, so gslot stops at j itself) */
        cq->gmap[i] = cq->gmap[j];
        cq->gmap[i]->map_slot = i;
        cq->gmap[j] = NULL;
        i = j;
    }
    cq->gmap_n--;
    fatia_free(g->heap);
    fatia_free(g);
}

void fatia_control_queue_release(struct ctl_cq *cq)
{
    for (size_t i = 0; i < cq->gmap_cap; i++)
        if (cq->gmap[i]) {
            fatia_free(cq->gmap[i]->heap);
            fatia_free(cq->gmap[i]);
        }
    fatia_free(cq->gmap);
    cq->gmap = NULL;
    cq->gmap_cap = cq->gmap_n = 0;
    cq->qactive = cq->qparked = NULL;
}

/* ---- the engine's ready list ---- */

int fatia_control_ready_mark(struct fatia_control *c, struct ctl_cq *cq)
{
    if (cq->listed)
        return 0;
    if (FATIA_VEC_PUSH(&c->ready, cq) < 0)
        return -ENOMEM;
    cq->listed = true;
    return 0;
}

/* After a structural change (a ClusterQueue may have become active). */
int fatia_control_ready_all(struct fatia_control *c)
{
    for (size_t i = 0; i < c->cqs.n; i++) {
        struct ctl_cq *cq = c->cqs.v[i];
        if ((fatia_control_queue_has_head(cq) || cq->backoff.n) &&
            fatia_control_ready_mark(c, cq) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* Adds w to its group; the group enters or moves in its pairing heap as its head changes. */
static int group_add(struct fatia_control *c, struct ctl_cq *cq, struct ctl_wl *w, bool park)
{
    struct ctl_group *g;
    bool was_empty;
    int r = group_get(cq, w, &g);

    if (r < 0)
        return r;
    was_empty = g->n == 0;
    if (park && !was_empty && !group_parked(g))
        pheap_remove(&cq->qactive, g);
    r = gpush(g, w);
    if (r < 0) {
        if (park && !was_empty && !group_parked(g))
            pheap_insert(&cq->qactive, g);
        if (was_empty)
            group_free(cq, g);
        return r;
    }
    w->q = CTL_Q_GROUP;
    cq->n_grouped++;
    if (park)
        g->parker = w;
    if (park && !group_parked(g)) {
        /* the whole group parks: its earlier members too */
        g->parked_gen = cq->requeue_gen;
        pheap_insert(&cq->qparked, g);
        cq->n_parked += g->n;
        return 0;
    }
    if (was_empty) {
        g->parked_gen = UINT64_MAX;
        pheap_insert(&cq->qactive, g);
    } else if (g->heap[0].w == w) {
        /* a new head: the group's key got better */
        struct ctl_group **root = group_root(g);
        pheap_remove(root, g);
        pheap_insert(root, g);
    }
    if (group_parked(g)) {
        cq->n_parked++;
        return 0;
    }
    return fatia_control_ready_mark(c, cq);
}

static void group_del(struct ctl_cq *cq, struct ctl_wl *w)
{
    struct ctl_group *g = w->grp;
    struct ctl_group **root = group_root(g);
    bool head = g->heap[0].w == w;

    if (group_parked(g))
        cq->n_parked--;
    if (g->parker == w)
        g->parker = NULL;
    if (head)
        pheap_remove(root, g);
    gremove(g, w);
    cq->n_grouped--;
    if (!g->n) {
        if (!head)
            pheap_remove(root, g);
        group_free(cq, g);
    } else if (head) {
        pheap_insert(root, g);
    }
}

/* ---- lists ---- */

void fatia_control_wlist_append(struct ctl_wlist *l, struct ctl_wl *w)
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

void fatia_control_wlist_remove(struct ctl_wlist *l, struct ctl_wl *w)
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

/* ---- operations ---- */

bool fatia_control_queue_has_head(const struct ctl_cq *cq)
{
    return cq->sticky || cq->qactive;
}

const struct ctl_wl *fatia_control_queue_peek(const struct ctl_cq *cq)
{
    if (cq->sticky)
        return cq->sticky;
    return cq->qactive ? cq->qactive->heap[0].w : NULL;
}

bool fatia_control_queue_bypassed(const struct ctl_wl *w)
{
    return w->q == CTL_Q_GROUP && group_parked(w->grp) && w->grp->parker != w;
}

int fatia_control_queue_push(struct fatia_control *c, struct ctl_cq *cq, struct ctl_wl *w)
{
    FATIA_ASSERT(w->q == CTL_Q_NONE || w->q == CTL_Q_INFLIGHT);
    if (w->q == CTL_Q_INFLIGHT)
        cq->n_inflight--;
    w->q = CTL_Q_NONE;
    w->cq = cq;
    if (w->requeue_at > c->now) {
        fatia_control_wlist_append(&cq->backoff, w);
        w->q = CTL_Q_BACKOFF;
        return fatia_control_ready_mark(c, cq);
    }
    if (w->sticky && cq->strategy == CTL_BEST_EFFORT && !cq->sticky) {
        cq->sticky = w;
        w->q = CTL_Q_STICKY;
        return fatia_control_ready_mark(c, cq);
    }
    w->sticky = false;
    return group_add(c, cq, w, false);
}

struct ctl_wl *fatia_control_queue_pop(struct fatia_control *c, struct ctl_cq *cq)
{
    struct ctl_wl *w;

    (void)c;
    if (cq->sticky) {
        w = cq->sticky;
        cq->sticky = NULL;
    } else if (cq->qactive) {
        w = cq->qactive->heap[0].w;
        group_del(cq, w);
    } else {
        return NULL;
    }
    w->q = CTL_Q_INFLIGHT;
    w->pop_gen = cq->requeue_gen;
    cq->n_inflight++;
    return w;
}

void fatia_control_queue_remove(struct fatia_control *c, struct ctl_wl *w)
{
    struct ctl_cq *cq = w->cq;

    (void)c;
    switch (w->q) {
    case CTL_Q_GROUP:
        group_del(cq, w);
        break;
    case CTL_Q_STICKY:
        cq->sticky = NULL;
        break;
    case CTL_Q_SINGLE:
        fatia_control_wlist_remove(&cq->single, w);
        break;
    case CTL_Q_BACKOFF:
        fatia_control_wlist_remove(&cq->backoff, w);
        break;
    case CTL_Q_INFLIGHT:
        cq->n_inflight--;
        break;
    case CTL_Q_NONE:
        break;
    }
    w->q = CTL_Q_NONE;
}

int fatia_control_queue_inadmissible(struct fatia_control *c, struct ctl_cq *cq, struct ctl_wl *w,
                                     bool record_hash)
{
    FATIA_ASSERT(w->q == CTL_Q_INFLIGHT || w->q == CTL_Q_NONE);
    if (w->q == CTL_Q_INFLIGHT)
        cq->n_inflight--;
    w->q = CTL_Q_NONE;
    w->cq = cq;
    w->sticky = false;
    if (record_hash && cq->strategy == CTL_BEST_EFFORT)
        return group_add(c, cq, w, true); /* parks the whole equivalence class */
    fatia_control_wlist_append(&cq->single, w);
    w->q = CTL_Q_SINGLE;
    return 0;
}

static int move_to_groups(struct fatia_control *c, struct ctl_cq *cq, struct ctl_wlist *l,
                          int64_t now, bool single)
{
    struct ctl_wl *w, *next;

    for (w = l->head; w; w = next) {
        next = w->next;
        if (single && !fatia_control_ns_matches(c, cq, w->ns))
            continue;
        if (!single && w->requeue_at > now)
            continue;
        fatia_control_wlist_remove(l, w);
        w->q = CTL_Q_NONE;
        if (group_add(c, cq, w, false) < 0) {
            fatia_control_wlist_append(l, w);
            w->q = single ? CTL_Q_SINGLE : CTL_Q_BACKOFF;
            return -ENOMEM;
        }
    }
    return 0;
}

int fatia_control_queue_requeue_inadmissible(struct fatia_control *c, struct ctl_cq *cq,
                                             int64_t now)
{
    int r;

    /* every parked group becomes active at once: meld, then a new generation */
    if (cq->qparked && fatia_control_ready_mark(c, cq) < 0)
        return -ENOMEM;
    cq->qactive = meld(cq->qactive, cq->qparked);
    cq->qparked = NULL;
    cq->requeue_gen++;
    cq->n_parked = 0;
    r = move_to_groups(c, cq, &cq->single, now, true);
    if (r == 0)
        r = move_to_groups(c, cq, &cq->backoff, now, false);
    return r;
}

/* Backoff expiry alone (cycle start). */
int fatia_control_queue_expire_backoff(struct fatia_control *c, struct ctl_cq *cq, int64_t now)
{
    return move_to_groups(c, cq, &cq->backoff, now, false);
}

static int requeue_cohort(struct fatia_control *c, struct ctl_cohort *co, int64_t now, int depth)
{
    int r;

    if (depth > 100000)
        return 0;
    for (size_t i = 0; i < co->child_cqs.n; i++) {
        r = fatia_control_queue_requeue_inadmissible(c, co->child_cqs.v[i], now);
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

/* A capacity event of cq's tree: requeue the tree now, or request a batched requeue of it
 * (Kueue's notifyRetryInadmissibleWithoutLock: the root cohort, or the ClusterQueue without
 * one; a request already pending keeps its earlier time, as AddAfter of a queued item does). */
int fatia_control_queue_requeue_tree(struct fatia_control *c, struct ctl_cq *cq, int64_t now)
{
    struct ctl_cohort *co = NULL;
    int64_t *due;

    if (c->tree_dirty)
        return fatia_control_queue_requeue_all(c, now);
    if (cq->cohort)
        for (co = cq->cohort; co->parent; co = co->parent)
            ;
    if (c->requeue_batch <= 0)
        return co ? requeue_cohort(c, co, now, 0)
                  : fatia_control_queue_requeue_inadmissible(c, cq, now);
    due = co ? &co->requeue_due : &cq->requeue_due;
    if (!*due) {
        if (co)
            c->n_due_cohorts++;
        else
            c->n_due_cqs++;
        *due = now + c->requeue_batch;
        if (*due < c->requeue_next)
            c->requeue_next = *due;
    }
    return 0;
}

/* Carries out the batched requests due at now (cycle start). A request names the tree it was
 * made for: a cohort that is no longer a root still has its own subtree requeued, as Kueue's
 * requeueWorkloadsCohort looks the name up when the request fires. */
int fatia_control_queue_requeue_due(struct fatia_control *c, int64_t now)
{
    int64_t next = INT64_MAX;
    size_t left = 0;
    int r;

    if (now < c->requeue_next)
        return 0;
    /* the counters bound the pending requests: a loop stops once it has seen them all */
    for (size_t i = 0, seen = 0; i < c->cohorts.n && seen < c->n_due_cohorts; i++) {
        struct ctl_cohort *co = c->cohorts.v[i];
        if (!co->requeue_due)
            continue;
        seen++;
        if (co->requeue_due > now) {
            left++;
            if (co->requeue_due < next)
                next = co->requeue_due;
            continue;
        }
        co->requeue_due = 0;
        if ((r = requeue_cohort(c, co, now, 0)) < 0)
            return r;
    }
    c->n_due_cohorts = left;
    left = 0;
    for (size_t i = 0, seen = 0; i < c->cqs.n && seen < c->n_due_cqs; i++) {
        struct ctl_cq *cq = c->cqs.v[i];
        if (!cq->requeue_due)
            continue;
        seen++;
        if (cq->requeue_due > now) {
            left++;
            if (cq->requeue_due < next)
                next = cq->requeue_due;
            continue;
        }
        cq->requeue_due = 0;
        if ((r = fatia_control_queue_requeue_inadmissible(c, cq, now)) < 0)
            return r;
    }
    c->n_due_cqs = left;
    c->requeue_next = next;
    return 0;
}

int fatia_control_queue_requeue_all(struct fatia_control *c, int64_t now)
{
    for (size_t i = 0; i < c->cqs.n; i++) {
        int r = fatia_control_queue_requeue_inadmissible(c, c->cqs.v[i], now);
        if (r < 0)
            return r;
    }
    return 0;
}

size_t fatia_control_queue_pending(const struct ctl_cq *cq)
{
    return cq->n_grouped + (cq->sticky ? 1 : 0) + cq->single.n + cq->backoff.n + cq->n_inflight;
}

/* ---- consistency (fatia_control_check) ---- */

static int check_pheap(const struct ctl_cq *cq, const struct ctl_group *g,
                       const struct ctl_group *parent, bool parked, size_t *count, char *why,
                       size_t n, int depth)
{
    for (; g; g = g->sibling) {
        if (depth > 1000000) {
            snprintf(why, n, "ClusterQueue %s: group heap too deep", cq->name);
            return -EFAULT;
        }
        if (!g->n || g->cq != cq || group_parked(g) != parked ||
            (parent && group_before(g, parent))) {
            snprintf(why, n, "ClusterQueue %s: group heap is inconsistent", cq->name);
            return -EFAULT;
        }
        for (size_t i = 0; i < g->n; i++) {
            const struct ctl_wl *w = g->heap[i].w;
            const struct ctl_gent *e = &g->heap[i];
            if (w->grp != g || w->gidx != i || w->q != CTL_Q_GROUP || w->cq != cq ||
                w->state != CTL_WL_PENDING || w->priority != g->priority || w->sticky ||
                e->created != w->created || memcmp(e->uid, w->uid_ord, sizeof(e->uid)) ||
                memcmp(e->key, w->key_ord, sizeof(e->key)) ||
                (i && fatia_control_wl_before(cq, w, g->heap[(i - 1) / 2].w))) {
                snprintf(why, n, "ClusterQueue %s: group member %s is inconsistent", cq->name,
                         w->key);
                return -EFAULT;
            }
        }
        *count += g->n;
        if (check_pheap(cq, g->child, g, parked, count, why, n, depth + 1) < 0)
            return -EFAULT;
    }
    return 0;
}

int fatia_control_queue_check(const struct ctl_cq *cq, char *why, size_t n)
{
    size_t count = 0, parked = 0;

    if (check_pheap(cq, cq->qactive, NULL, false, &count, why, n, 0) < 0)
        return -EFAULT;
    parked = count;
    if (check_pheap(cq, cq->qparked, NULL, true, &count, why, n, 0) < 0)
        return -EFAULT;
    parked = count - parked;
    if (count != cq->n_grouped || parked != cq->n_parked) {
        snprintf(why, n, "ClusterQueue %s: %zu grouped (%zu parked), counters say %zu (%zu)",
                 cq->name, count, parked, cq->n_grouped, cq->n_parked);
        return -EFAULT;
    }
    if (cq->n_inflight) {
        snprintf(why, n, "ClusterQueue %s: %zu workloads still in flight", cq->name,
                 cq->n_inflight);
        return -EFAULT;
    }
    return 0;
}
