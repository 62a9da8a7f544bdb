/*
 * control/intern.c: interning of resource names, flavors and (flavor, resource) pairs, the
 * arrays sized by them, and the arena that holds one cycle's result.
 *
 * Model: ids are dense and never reused while the engine lives (a deleted flavor keeps its id and
 * becomes "undefined"), so arrays indexed by id never need compaction. Every array whose length
 * follows the number of resources (n_res_cap) or of flavor-resources (n_fr_cap) grows in one
 * place, ctl_grow(), which doubles the capacity and reallocates them all; growth happens only
 * while objects are applied, never inside a cycle, so pointers into slot arrays stay valid during
 * a cycle. A failed growth leaves the old arrays in place (the capacities are raised only after
 * every reallocation succeeded), so the engine stays consistent on -ENOMEM.
 *
 * Rejected: a hash map keyed by (flavor, resource) per node. Flat arrays make available() and
 * add_usage() a few loads per tree level, which is what lets a cycle admit a workload in a few
 * microseconds; the cost is n_fr_cap x 40 bytes per node, small for real clusters (hundreds of
 * flavor-resources) and bounded by the input for fuzzed ones.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "control/internal.h"

/* Grows *p from old_n to new_n elements, filling the new ones with the byte fill; a NULL array
 * is allocated whole (its owner had nothing to size it by). */
static int grow_array(void **p, size_t old_n, size_t new_n, size_t el, int fill)
{
    char *q;

    if (!*p)
        old_n = 0;
    q = fatia_reallocarray(*p, new_n, el);
    if (!q)
        return -ENOMEM;
    memset(q + old_n * el, fill, (new_n - old_n) * el);
    *p = q;
    return 0;
}

static void slot_init(struct ctl_slot *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        s[i] = (struct ctl_slot){0, AMT_NONE, AMT_NONE, 0, 0, 0};
}

static int grow_node(struct ctl_node *n, size_t old_n, size_t new_n)
{
    struct ctl_slot *s = fatia_reallocarray(n->slot, new_n, sizeof(*s));

    if (!s)
        return -ENOMEM;
    slot_init(s + old_n, new_n - old_n);
    n->slot = s;
    return 0;
}

/* Makes every per-fr and per-resource array at least as long as the interned counts. */
static int ctl_grow(struct fatia_control *c)
{
    size_t n_res = c->res_names.n, n_fr = c->fr_flavor.n;
    size_t res_cap = c->n_res_cap, fr_cap = c->n_fr_cap;
    size_t i;

    if (n_res > res_cap) {
        size_t nc = res_cap ? res_cap : 8;
        while (nc < n_res)
            nc *= 2;
        for (i = 0; i < c->cqs.n; i++) {
            if (grow_array((void **)&c->cqs.v[i]->rg_of_res, res_cap, nc, sizeof(int16_t), 0xff))
                return -ENOMEM;
        }
        for (i = 0; i < c->lqs.n; i++) {
            struct ctl_lq *lq = c->lqs.v[i];
            if (grow_array((void **)&lq->consumed, res_cap, nc, sizeof(double), 0) ||
                grow_array((void **)&lq->penalty, res_cap, nc, sizeof(double), 0))
                return -ENOMEM;
        }
        if (c->cfg.afs_weight &&
            grow_array((void **)&c->cfg.afs_weight, res_cap, nc, sizeof(double), 0))
            return -ENOMEM;
        for (i = c->cfg.n_afs_weight; c->cfg.afs_weight && i < nc; i++)
            c->cfg.afs_weight[i] = 1.0;
        if (c->cfg.afs_weight)
            c->cfg.n_afs_weight = nc;
        for (i = 0; i < c->fr_rows; i++) {
            int32_t *row = fatia_reallocarray(c->fr_of[i], nc, sizeof(int32_t));
            if (!row)
                return -ENOMEM;
            for (size_t j = c->fr_res_cap; j < nc; j++)
                row[j] = -1;
            c->fr_of[i] = row;
        }
        c->fr_res_cap = nc;
        c->n_res_cap = nc;
    }
    if (n_fr > fr_cap) {
        size_t nc = fr_cap ? fr_cap : 16;
        while (nc < n_fr)
            nc *= 2;
        for (i = 0; i < c->cqs.n; i++)
            if (grow_node(&c->cqs.v[i]->node, fr_cap, nc))
                return -ENOMEM;
        for (i = 0; i < c->cohorts.n; i++)
            if (grow_node(&c->cohorts.v[i]->node, fr_cap, nc))
                return -ENOMEM;
        for (i = 0; i < c->lqs.n; i++) {
            struct ctl_lq *lq = c->lqs.v[i];
            if (grow_array((void **)&lq->usage, fr_cap, nc, sizeof(amt_t), 0) ||
                grow_array((void **)&lq->reserve, fr_cap, nc, sizeof(amt_t), 0))
                return -ENOMEM;
        }
        c->n_fr_cap = nc;
    }
    return fatia_control_grow_scratch(c);
}

int fatia_control_grow_scratch(struct fatia_control *c)
{
    amt_t *a;
    double *d, *d2;

    if (c->n_fr_cap) {
        a = fatia_reallocarray(c->scratch_amt, c->n_fr_cap, sizeof(*a));
        if (!a)
            return -ENOMEM;
        c->scratch_amt = a;
    }
    if (c->n_res_cap) {
        d = fatia_reallocarray(c->scratch_dbl, c->n_res_cap, sizeof(*d));
        if (!d)
            return -ENOMEM;
        c->scratch_dbl = d;
        d2 = fatia_reallocarray(c->scratch_dbl2, c->n_res_cap, sizeof(*d2));
        if (!d2)
            return -ENOMEM;
        c->scratch_dbl2 = d2;
    }
    return 0;
}

int fatia_control_res_find(const struct fatia_control *c, const char *name)
{
    uintptr_t v = (uintptr_t)fatia_strmap_get(&c->res_index, name);

    return v ? (int)(v - 1) : -1;
}

int fatia_control_res_intern(struct fatia_control *c, const char *name, uint32_t *ret)
{
    int id = fatia_control_res_find(c, name);
    char *copy;

    if (id >= 0) {
        *ret = (uint32_t)id;
        return 0;
    }
    copy = fatia_strdup(name);
    if (!copy || FATIA_VEC_PUSH(&c->res_names, copy) < 0) {
        fatia_free(copy);
        return -ENOMEM;
    }
    if (fatia_strmap_put(&c->res_index, copy, (void *)(uintptr_t)c->res_names.n) < 0 ||
        ctl_grow(c) < 0) {
        fatia_strmap_del(&c->res_index, copy);
        c->res_names.n--;
        fatia_free(copy);
        return -ENOMEM;
    }
    *ret = (uint32_t)(c->res_names.n - 1);
    return 0;
}

const char *fatia_control_res_name(const struct fatia_control *c, uint32_t res)
{
    return c->res_names.v[res];
}

const char *fatia_control_flavor_name(const struct fatia_control *c, uint32_t flavor)
{
    return c->flavors.v[flavor]->name;
}

int fatia_control_flavor_intern(struct fatia_control *c, const char *name, struct ctl_flavor **ret)
{
    struct ctl_flavor *f = fatia_strmap_get(&c->flavor_index, name);
    int32_t *row = NULL, **rows;

    if (f) {
        *ret = f;
        return 0;
    }
    f = fatia_calloc(1, sizeof(*f));
    if (!f)
        return -ENOMEM;
    f->name = fatia_strdup(name);
    if (c->fr_res_cap) {
        row = fatia_reallocarray(NULL, c->fr_res_cap, sizeof(*row));
        if (row)
            for (size_t j = 0; j < c->fr_res_cap; j++)
                row[j] = -1;
    }
    rows = fatia_reallocarray(c->fr_of, c->fr_rows + 1, sizeof(*rows));
    if (rows)
        c->fr_of = rows;
    if (!f->name || (c->fr_res_cap && !row) || !rows || FATIA_VEC_PUSH(&c->flavors, f) < 0) {
        fatia_free(row);
        fatia_free(f->name);
        fatia_free(f);
        return -ENOMEM;
    }
    f->id = (uint32_t)(c->flavors.n - 1);
    if (fatia_strmap_put(&c->flavor_index, f->name, f) < 0) {
        c->flavors.n--;
        fatia_free(row);
        fatia_free(f->name);
        fatia_free(f);
        return -ENOMEM;
    }
    c->fr_of[c->fr_rows++] = row;
    *ret = f;
    return 0;
}

int fatia_control_fr_find(const struct fatia_control *c, uint32_t flavor, uint32_t res)
{
    if (flavor >= c->fr_rows || res >= c->fr_res_cap || !c->fr_of[flavor])
        return -1;
    return c->fr_of[flavor][res];
}

int fatia_control_fr_intern(struct fatia_control *c, uint32_t flavor, uint32_t res, uint32_t *ret)
{
    int id = fatia_control_fr_find(c, flavor, res);

    if (id >= 0) {
        *ret = (uint32_t)id;
        return 0;
    }
    if (!c->fr_of[flavor]) {
        int32_t *row = fatia_reallocarray(NULL, c->fr_res_cap, sizeof(*row));
        if (!row)
            return -ENOMEM;
        for (size_t j = 0; j < c->fr_res_cap; j++)
            row[j] = -1;
        c->fr_of[flavor] = row;
    }
    if (FATIA_VEC_PUSH(&c->fr_flavor, flavor) < 0)
        return -ENOMEM;
    if (FATIA_VEC_PUSH(&c->fr_res, res) < 0 || ctl_grow(c) < 0) {
        c->fr_flavor.n--;
        if (c->fr_res.n > c->fr_flavor.n)
            c->fr_res.n--;
        return -ENOMEM;
    }
    c->fr_of[flavor][res] = (int32_t)(c->fr_flavor.n - 1);
    *ret = (uint32_t)(c->fr_flavor.n - 1);
    return 0;
}

/* ---- arena ---- */

void *fatia_control_arena_alloc(struct fatia_control *c, size_t n)
{
    struct ctl_arena *a = &c->arena;
    void *p;

    n = (n + 15) & ~(size_t)15;
    if (!a->block_size)
        a->block_size = 64 * 1024;
    if (!a->n || a->used + n > a->block_size) {
        size_t sz = n > a->block_size ? n : a->block_size;
        char *b;
        if (a->n == a->cap) {
            size_t nc = a->cap ? a->cap * 2 : 8;
            char **v = fatia_reallocarray(a->blocks, nc, sizeof(*v));
            if (!v)
                return NULL;
            a->blocks = v;
            a->cap = nc;
        }
        b = fatia_malloc(sz);
        if (!b)
            return NULL;
        a->blocks[a->n++] = b;
        a->used = 0;
        if (sz > a->block_size) {
            /* an oversized block is used once; the next allocation opens a new one */
            a->used = a->block_size;
            return b;
        }
    }
    p = a->blocks[a->n - 1] + a->used;
    a->used += n;
    return p;
}

char *fatia_control_arena_strdup(struct fatia_control *c, const char *s)
{
    size_t n;
    char *p;

    if (!s)
        return NULL;
    n = strlen(s) + 1;
    p = fatia_control_arena_alloc(c, n);
    if (p)
        memcpy(p, s, n);
    return p;
}

void fatia_control_arena_reset(struct ctl_arena *a)
{
    /* keep the first block, free the rest */
    for (size_t i = 1; i < a->n; i++)
        fatia_free(a->blocks[i]);
    a->n = a->n ? 1 : 0;
    a->used = 0;
}

void fatia_control_arena_release(struct ctl_arena *a)
{
    for (size_t i = 0; i < a->n; i++)
        fatia_free(a->blocks[i]);
    fatia_free(a->blocks);
    memset(a, 0, sizeof(*a));
}
