/*
 * gateway/prefix.c: prefix hashing and the approximate prefix index (see prefix.h).
 *
 * Layout: entries live in one array (index 0 is a sentinel, "no entry"), each entry is one
 * (block hash, endpoint) pair and sits on two lists:
 *   - the endpoint's LRU list, doubly linked (prev/next), most recent at the head;
 *   - the list of entries with the same hash, singly linked (same), whose head is the value of
 *     an open-addressing table keyed by the hash (linear probing, backward-shift deletion).
 * A hash is held by few endpoints, so walking its list to insert, match or unlink is short.
 * Freed entries go on a free list (through next). Memory: 24 bytes an entry plus 12 bytes a table
 * slot at load <= 1/2; GIE's default 31,250 blocks per endpoint costs about 1.1 MB an endpoint.
 *
 * Rejected: one bitmap of endpoints per hash (GIE's map[hash]set): a per-endpoint LRU then needs
 * a second structure anyway, and the bitmap is large for big pools.
 */
#include "base/compat.h"

#include "gateway/prefix.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/hash.h"

#define NIL 0u

struct entry {
    uint64_t hash;
    uint32_t ep;
    uint32_t prev, next; /* LRU list of ep (next also links the free list) */
    uint32_t same;       /* next entry with the same hash */
};

struct slot {
    uint64_t hash;
    uint32_t head; /* NIL = empty slot */
};

struct ep_lru {
    uint32_t head, tail;
    size_t n, cap;
};

struct fatia_prefix_index {
    struct entry *e;
    size_t n_e, cap_e; /* entries used (including the sentinel) and allocated */
    uint32_t free;     /* free list head */
    size_t live;
    struct slot *t;
    size_t t_cap, t_n; /* power of two */
    struct ep_lru *eps;
    size_t n_eps;
};

uint64_t fatia_prefix_seed(struct fatia_str model, struct fatia_str salt)
{
    uint64_t s = fatia_hash_chain64(model.p ? model.p : "", model.n, 0);
    if (salt.n)
        s = fatia_hash_chain64(salt.p, salt.n, s);
    return s;
}

size_t fatia_prefix_hash(uint64_t seed, const char *text, size_t n, size_t block, uint64_t *out,
                         size_t max)
{
    size_t k = 0;
    uint64_t h = seed;

    if (!block)
        block = FATIA_PREFIX_BLOCK_CHARS;
    for (size_t off = 0; off + block <= n && k < max; off += block) {
        h = fatia_hash_chain64(text + off, block, h);
        out[k++] = h;
    }
    return k;
}

int fatia_prefix_index_new(struct fatia_prefix_index **ret)
{
    struct fatia_prefix_index *x = fatia_calloc(1, sizeof(*x));

    if (!x)
        return -ENOMEM;
    x->cap_e = 1024;
    x->e = fatia_calloc(x->cap_e, sizeof(*x->e));
    x->t_cap = 2048;
    x->t = fatia_calloc(x->t_cap, sizeof(*x->t));
    if (!x->e || !x->t) {
        fatia_prefix_index_free(x);
        return -ENOMEM;
    }
    x->n_e = 1; /* the sentinel */
    *ret = x;
    return 0;
}

void fatia_prefix_index_free(struct fatia_prefix_index *x)
{
    if (!x)
        return;
    fatia_free(x->e);
    fatia_free(x->t);
    fatia_free(x->eps);
    fatia_free(x);
}

static size_t slot_of(const struct fatia_prefix_index *x, uint64_t h)
{
    /* block hashes are already uniform: use the low bits, mixed once for safety */
    uint64_t m = h ^ (h >> 29);
    return (size_t)(m * UINT64_C(0x9E3779B97F4A7C15) >> 17) & (x->t_cap - 1);
}

static uint32_t table_get(const struct fatia_prefix_index *x, uint64_t h, size_t *ret_slot)
{
    size_t i = slot_of(x, h);

    for (;;) {
        if (x->t[i].head == NIL) {
            if (ret_slot)
                *ret_slot = i;
            return NIL;
        }
        if (x->t[i].hash == h) {
            if (ret_slot)
                *ret_slot = i;
            return x->t[i].head;
        }
        i = (i + 1) & (x->t_cap - 1);
    }
}

static void table_del_slot(struct fatia_prefix_index *x, size_t i)
{
    size_t j = i;

    x->t[i].head = NIL;
    x->t_n--;
    for (;;) {
        size_t k;
        j = (j + 1) & (x->t_cap - 1);
        if (x->t[j].head == NIL)
            return;
        k = slot_of(x, x->t[j].hash);
        /* move j back to i when its home k is not in (i, j] cyclically */
        if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) {
            x->t[i] = x->t[j];
            x->t[j].head = NIL;
            i = j;
        }
    }
}

static int table_grow(struct fatia_prefix_index *x)
{
    struct slot *old = x->t;
    size_t old_cap = x->t_cap;
    struct slot *t = fatia_calloc(old_cap * 2, sizeof(*t));

    if (!t)
        return -ENOMEM;
    x->t = t;
    x->t_cap = old_cap * 2;
    for (size_t i = 0; i < old_cap; i++) {
        size_t s;
        if (old[i].head == NIL)
            continue;
        table_get(x, old[i].hash, &s);
        x->t[s] = old[i];
    }
    fatia_free(old);
    return 0;
}

static struct ep_lru *lru(struct fatia_prefix_index *x, uint32_t ep)
{
    if (ep >= x->n_eps) {
        size_t n = ep + 1 > x->n_eps * 2 ? ep + 1 : x->n_eps * 2;
        struct ep_lru *v;
        if (ep >= FATIA_PREFIX_MAX_ENDPOINTS)
            return NULL;
        v = fatia_reallocarray(x->eps, n, sizeof(*v));
        if (!v)
            return NULL;
        for (size_t i = x->n_eps; i < n; i++)
            v[i] = (struct ep_lru){NIL, NIL, 0, FATIA_PREFIX_DEFAULT_LRU};
        x->eps = v;
        x->n_eps = n;
    }
    return &x->eps[ep];
}

static void lru_unlink(struct fatia_prefix_index *x, struct ep_lru *l, uint32_t i)
{
    struct entry *e = &x->e[i];

    if (e->prev)
        x->e[e->prev].next = e->next;
    else
        l->head = e->next;
    if (e->next)
        x->e[e->next].prev = e->prev;
    else
        l->tail = e->prev;
    e->prev = e->next = NIL;
}

static void lru_push_head(struct fatia_prefix_index *x, struct ep_lru *l, uint32_t i)
{
    struct entry *e = &x->e[i];

    e->prev = NIL;
    e->next = l->head;
    if (l->head)
        x->e[l->head].prev = i;
    l->head = i;
    if (!l->tail)
        l->tail = i;
}

/* Removes entry i from everything and frees it. */
static void drop(struct fatia_prefix_index *x, uint32_t i)
{
    struct entry *e = &x->e[i];
    struct ep_lru *l = &x->eps[e->ep];
    size_t s;
    uint32_t head = table_get(x, e->hash, &s);

    lru_unlink(x, l, i);
    l->n--;
    if (head == i) {
        if (e->same)
            x->t[s].head = e->same;
        else
            table_del_slot(x, s);
    } else {
        for (uint32_t k = head; k; k = x->e[k].same) {
            if (x->e[k].same == i) {
                x->e[k].same = e->same;
                break;
            }
        }
    }
    e->same = NIL;
    e->next = x->free;
    x->free = i;
    x->live--;
}

static void trim(struct fatia_prefix_index *x, struct ep_lru *l)
{
    while (l->n > l->cap && l->tail)
        drop(x, l->tail);
}

void fatia_prefix_index_set_capacity(struct fatia_prefix_index *x, uint32_t ep, size_t blocks)
{
    struct ep_lru *l = lru(x, ep);

    if (!l)
        return;
    l->cap = blocks ? blocks : FATIA_PREFIX_DEFAULT_LRU;
    trim(x, l);
}

static uint32_t alloc_entry(struct fatia_prefix_index *x)
{
    uint32_t i;

    if (x->free) {
        i = x->free;
        x->free = x->e[i].next;
        return i;
    }
    if (x->n_e == x->cap_e) {
        struct entry *v;
        if (x->cap_e >= UINT32_MAX / 2)
            return NIL;
        v = fatia_reallocarray(x->e, x->cap_e * 2, sizeof(*v));
        if (!v)
            return NIL;
        x->e = v;
        x->cap_e *= 2;
    }
    return (uint32_t)x->n_e++;
}

static int insert_one(struct fatia_prefix_index *x, struct ep_lru *l, uint32_t ep, uint64_t h)
{
    size_t s;
    uint32_t head = table_get(x, h, &s), i;

    for (uint32_t k = head; k; k = x->e[k].same) {
        if (x->e[k].ep == ep) {
            lru_unlink(x, l, k);
            lru_push_head(x, l, k);
            return 0;
        }
    }
    if (!head && (x->t_n + 1) * 2 > x->t_cap) {
        if (table_grow(x) < 0)
            return -ENOMEM;
        table_get(x, h, &s);
    }
    i = alloc_entry(x);
    if (!i)
        return -ENOMEM;
    x->e[i] = (struct entry){.hash = h, .ep = ep, .same = head};
    if (!head) {
        x->t[s].hash = h;
        x->t_n++;
    }
    x->t[s].head = i;
    lru_push_head(x, l, i);
    l->n++;
    x->live++;
    trim(x, l);
    return 0;
}

int fatia_prefix_index_insert(struct fatia_prefix_index *x, uint32_t ep, const uint64_t *h,
                              size_t n)
{
    struct ep_lru *l = lru(x, ep);

    if (!l)
        return -ENOMEM;
    /* last block first, so the first block ends most recent: the tail is evicted first, as
     * vLLM frees a finished sequence's blocks tail first */
    for (size_t k = n; k > 0; k--) {
        int r = insert_one(x, l, ep, h[k - 1]);
        if (r < 0)
            return r;
    }
    return 0;
}

void fatia_prefix_index_match(const struct fatia_prefix_index *x, const uint64_t *h, size_t n,
                              uint32_t *ret_match, size_t n_ep)
{
    memset(ret_match, 0, n_ep * sizeof(*ret_match));
    for (size_t i = 0; i < n; i++) {
        uint32_t head = table_get(x, h[i], NULL);
        bool any = false;
        for (uint32_t k = head; k; k = x->e[k].same) {
            uint32_t ep = x->e[k].ep;
            if (ep < n_ep && ret_match[ep] == i) {
                ret_match[ep] = (uint32_t)i + 1;
                any = true;
            }
        }
        if (!any)
            return;
    }
}

void fatia_prefix_index_remove_endpoint(struct fatia_prefix_index *x, uint32_t ep)
{
    struct ep_lru *l;

    if (ep >= x->n_eps)
        return;
    l = &x->eps[ep];
    while (l->head)
        drop(x, l->head);
}

size_t fatia_prefix_index_size(const struct fatia_prefix_index *x)
{
    return x->live;
}

size_t fatia_prefix_index_endpoint_size(const struct fatia_prefix_index *x, uint32_t ep)
{
    return ep < x->n_eps ? x->eps[ep].n : 0;
}
