/*
 * gateway/engine.c: the vLLM replica model (see engine.h for the model and the state diagram).
 *
 * Data: blocks[] is the KV pool; free blocks form a doubly linked queue through prev/next (head
 * evicted first); cached blocks are in an open-addressing table hash -> block. Requests sit on one
 * of two intrusive lists, waiting (FIFO) and running (admission order); each owns an array of its
 * block ids. A step's plan is kept on the requests themselves (sched_n tokens), so step_end needs
 * no allocation.
 */
#include "base/compat.h"

#include "gateway/engine.h"

#include "base/alloc.h"
#include "base/error.h"

#define NIL UINT32_MAX

struct block {
    uint64_t hash;
    uint32_t ref;
    uint32_t prev, next; /* free queue links */
    bool in_free;
    bool cached; /* in the table */
};

enum rstate {
    R_WAITING,
    R_RUNNING,
};

struct fatia_engine_req {
    void *ud;
    enum rstate st;
    struct fatia_engine_req *prev, *next;
    uint32_t prompt_tokens, max_tokens, generated, computed;
    uint64_t *hashes;
    uint32_t n_hashes;
    uint32_t *blocks;
    uint32_t n_blocks, cap_blocks;
    uint32_t sched_n; /* tokens in the planned step */
    bool sched;
    bool remote; /* the prompt's KV was computed elsewhere (a prefill server) and is loaded */
};

struct rlist {
    struct fatia_engine_req *head, *tail;
    uint32_t n;
};

struct fatia_engine {
    struct fatia_engine_config cfg;
    struct block *b;
    uint32_t free_head, free_tail;
    uint64_t n_free;
    uint64_t *t_hash; /* table of cached blocks */
    uint32_t *t_blk;
    size_t t_cap, t_n;
    struct rlist waiting, running;
    struct fatia_engine_stats st;
    bool planned;
};

/* ---- lists ---- */

static void rl_push_tail(struct rlist *l, struct fatia_engine_req *r)
{
    r->next = NULL;
    r->prev = l->tail;
    if (l->tail)
        l->tail->next = r;
    else
        l->head = r;
    l->tail = r;
    l->n++;
}

static void rl_push_head(struct rlist *l, struct fatia_engine_req *r)
{
    r->prev = NULL;
    r->next = l->head;
    if (l->head)
        l->head->prev = r;
    else
        l->tail = r;
    l->head = r;
    l->n++;
}

static void rl_remove(struct rlist *l, struct fatia_engine_req *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        l->head = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else
        l->tail = r->prev;
    r->prev = r->next = NULL;
    l->n--;
}

/* ---- the table of cached blocks ---- */

static size_t tslot(const struct fatia_engine *e, uint64_t h)
{
    return (size_t)((h ^ (h >> 31)) * UINT64_C(0x9E3779B97F4A7C15) >> 20) & (e->t_cap - 1);
}

static uint32_t t_get(const struct fatia_engine *e, uint64_t h)
{
    for (size_t i = tslot(e, h);; i = (i + 1) & (e->t_cap - 1)) {
        if (e->t_blk[i] == NIL)
            return NIL;
        if (e->t_hash[i] == h)
            return e->t_blk[i];
    }
}

static void t_put(struct fatia_engine *e, uint64_t h, uint32_t blk)
{
    size_t i = tslot(e, h);
    while (e->t_blk[i] != NIL)
        i = (i + 1) & (e->t_cap - 1);
    e->t_hash[i] = h;
    e->t_blk[i] = blk;
    e->t_n++;
}

static void t_del(struct fatia_engine *e, uint64_t h)
{
    size_t i = tslot(e, h), j;

    while (e->t_blk[i] != NIL && e->t_hash[i] != h)
        i = (i + 1) & (e->t_cap - 1);
    if (e->t_blk[i] == NIL)
        return;
    e->t_blk[i] = NIL;
    e->t_n--;
    j = i;
    for (;;) {
        size_t k;
        j = (j + 1) & (e->t_cap - 1);
        if (e->t_blk[j] == NIL)
            return;
        k = tslot(e, e->t_hash[j]);
        if ((j > i && (k <= i || k > j)) || (j < i && k <= i && k > j)) {
            e->t_hash[i] = e->t_hash[j];
            e->t_blk[i] = e->t_blk[j];
            e->t_blk[j] = NIL;
            i = j;
        }
    }
}

/* ---- the free queue ---- */

static void fq_remove(struct fatia_engine *e, uint32_t i)
{
    struct block *b = &e->b[i];

    if (b->prev != NIL)
        e->b[b->prev].next = b->next;
    else
        e->free_head = b->next;
    if (b->next != NIL)
        e->b[b->next].prev = b->prev;
    else
        e->free_tail = b->prev;
    b->prev = b->next = NIL;
    b->in_free = false;
    e->n_free--;
}

static void fq_push_tail(struct fatia_engine *e, uint32_t i)
{
    struct block *b = &e->b[i];

    b->next = NIL;
    b->prev = e->free_tail;
    if (e->free_tail != NIL)
        e->b[e->free_tail].next = i;
    else
        e->free_head = i;
    e->free_tail = i;
    b->in_free = true;
    e->n_free++;
}

/* Takes a free block, evicting its cached content. NIL when none is free. */
static uint32_t blk_alloc(struct fatia_engine *e)
{
    uint32_t i = e->free_head;

    if (i == NIL)
        return NIL;
    fq_remove(e, i);
    if (e->b[i].cached) {
        t_del(e, e->b[i].hash);
        e->b[i].cached = false;
    }
    e->b[i].ref = 1;
    return i;
}

static void blk_touch(struct fatia_engine *e, uint32_t i)
{
    if (e->b[i].ref++ == 0 && e->b[i].in_free)
        fq_remove(e, i);
}

static void blk_release(struct fatia_engine *e, uint32_t i)
{
    if (--e->b[i].ref == 0)
        fq_push_tail(e, i);
}

static void req_free_blocks(struct fatia_engine *e, struct fatia_engine_req *r)
{
    /* tail first, so a sequence's tail is evicted before its head */
    for (uint32_t k = r->n_blocks; k > 0; k--)
        blk_release(e, r->blocks[k - 1]);
    r->n_blocks = 0;
}

static int req_grow_blocks(struct fatia_engine_req *r, uint32_t need)
{
    if (need <= r->cap_blocks)
        return 0;
    uint32_t cap = r->cap_blocks ? r->cap_blocks : 8;
    while (cap < need)
        cap *= 2;
    uint32_t *v = fatia_reallocarray(r->blocks, cap, sizeof(*v));
    if (!v)
        return -ENOMEM;
    r->blocks = v;
    r->cap_blocks = cap;
    return 0;
}

/* Allocates blocks until r holds enough for `tokens`; false when the pool ran dry (r keeps what
 * it got). */
static bool req_ensure_blocks(struct fatia_engine *e, struct fatia_engine_req *r, uint64_t tokens)
{
    uint32_t need = (uint32_t)((tokens + e->cfg.block_tokens - 1) / e->cfg.block_tokens);

    if (req_grow_blocks(r, need) < 0)
        return false;
    while (r->n_blocks < need) {
        uint32_t b = blk_alloc(e);
        if (b == NIL)
            return false;
        r->blocks[r->n_blocks++] = b;
    }
    return true;
}

static void req_free(struct fatia_engine_req *r)
{
    fatia_free(r->hashes);
    fatia_free(r->blocks);
    fatia_free(r);
}

/* ---- public ---- */

int fatia_engine_new(const struct fatia_engine_config *cfg, struct fatia_engine **ret)
{
    struct fatia_engine *e;
    size_t cap = 1024;

    if (!cfg->num_gpu_blocks || cfg->num_gpu_blocks >= NIL || !cfg->block_tokens ||
        !cfg->max_num_seqs || !cfg->max_num_batched_tokens || !cfg->max_model_len)
        return -EINVAL;
    e = fatia_calloc(1, sizeof(*e));
    if (!e)
        return -ENOMEM;
    e->cfg = *cfg;
    if (!e->cfg.tp)
        e->cfg.tp = 1;
    while (cap < cfg->num_gpu_blocks * 2)
        cap *= 2;
    e->b = fatia_calloc(cfg->num_gpu_blocks, sizeof(*e->b));
    e->t_hash = fatia_calloc(cap, sizeof(*e->t_hash));
    e->t_blk = fatia_malloc(cap * sizeof(*e->t_blk));
    if (!e->b || !e->t_hash || !e->t_blk) {
        fatia_engine_free(e);
        return -ENOMEM;
    }
    memset(e->t_blk, 0xff, cap * sizeof(*e->t_blk));
    e->t_cap = cap;
    e->free_head = e->free_tail = NIL;
    for (uint32_t i = 0; i < cfg->num_gpu_blocks; i++) {
        e->b[i].prev = e->b[i].next = NIL;
        fq_push_tail(e, i);
    }
    *ret = e;
    return 0;
}

void fatia_engine_free(struct fatia_engine *e)
{
    struct fatia_engine_req *r, *n;

    if (!e)
        return;
    for (r = e->waiting.head; r; r = n) {
        n = r->next;
        req_free(r);
    }
    for (r = e->running.head; r; r = n) {
        n = r->next;
        req_free(r);
    }
    fatia_free(e->b);
    fatia_free(e->t_hash);
    fatia_free(e->t_blk);
    fatia_free(e);
}

const struct fatia_engine_config *fatia_engine_config(const struct fatia_engine *e)
{
    return &e->cfg;
}

int fatia_engine_add(struct fatia_engine *e, uint32_t prompt_tokens, uint32_t max_tokens,
                     const uint64_t *hashes, size_t n_hashes, void *ud,
                     struct fatia_engine_req **ret)
{
    struct fatia_engine_req *r;

    if (!prompt_tokens || (uint64_t)prompt_tokens + max_tokens > e->cfg.max_model_len ||
        (uint64_t)prompt_tokens + max_tokens >
            e->cfg.num_gpu_blocks * (uint64_t)e->cfg.block_tokens)
        return -FATIA_E_LIMIT;
    r = fatia_calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    if (n_hashes) {
        r->hashes = fatia_malloc(n_hashes * sizeof(*hashes));
        if (!r->hashes) {
            fatia_free(r);
            return -ENOMEM;
        }
        memcpy(r->hashes, hashes, n_hashes * sizeof(*hashes));
    }
    r->n_hashes = (uint32_t)n_hashes;
    r->ud = ud;
    r->prompt_tokens = prompt_tokens;
    r->max_tokens = max_tokens;
    r->st = R_WAITING;
    rl_push_tail(&e->waiting, r);
    *ret = r;
    return 0;
}

int fatia_engine_add_loaded(struct fatia_engine *e, uint32_t prompt_tokens, uint32_t max_tokens,
                            const uint64_t *hashes, size_t n_hashes, void *ud,
                            struct fatia_engine_req **ret)
{
    int rc = fatia_engine_add(e, prompt_tokens, max_tokens, hashes, n_hashes, ud, ret);

    if (rc == 0)
        (*ret)->remote = max_tokens > 0;
    return rc;
}

void fatia_engine_abort(struct fatia_engine *e, struct fatia_engine_req *r)
{
    if (r->st == R_RUNNING)
        rl_remove(&e->running, r);
    else
        rl_remove(&e->waiting, r);
    req_free_blocks(e, r);
    req_free(r);
}

/* Tokens the request knows (prompt and generated) and must hold in the cache to emit the next. */
static uint64_t known(const struct fatia_engine_req *r)
{
    return (uint64_t)r->prompt_tokens + r->generated;
}

static void preempt(struct fatia_engine *e, struct fatia_engine_req *r)
{
    rl_remove(&e->running, r);
    req_free_blocks(e, r);
    r->computed = 0;
    r->remote = false; /* the loaded KV is gone: recomputed here */
    r->sched = false;
    r->sched_n = 0;
    r->st = R_WAITING;
    rl_push_head(&e->waiting, r);
    e->st.preemptions++;
}

/* Registers r's full prompt blocks [from, to) (block indexes) in the cache table. */
static void cache_blocks(struct fatia_engine *e, struct fatia_engine_req *r, uint32_t from,
                         uint32_t to)
{
    for (uint32_t k = from; k < to && k < r->n_hashes && k < r->n_blocks; k++) {
        struct block *b = &e->b[r->blocks[k]];
        if (e->cfg.prefix_caching && !b->cached && t_get(e, r->hashes[k]) == NIL) {
            b->hash = r->hashes[k];
            b->cached = true;
            t_put(e, b->hash, r->blocks[k]);
        }
    }
}

/* Prefix-cache lookup at admission: touches the cached leading blocks. Returns cached tokens. */
static uint32_t admit_cached(struct fatia_engine *e, struct fatia_engine_req *r)
{
    uint32_t hits = 0, max_hits;

    if (!e->cfg.prefix_caching)
        return 0;
    /* at least one token must be computed to produce logits */
    max_hits = (uint32_t)((known(r) - 1) / e->cfg.block_tokens);
    if (req_grow_blocks(r, FATIA_MIN(r->n_hashes, max_hits)) < 0)
        return 0;
    while (hits < r->n_hashes && hits < max_hits) {
        uint32_t b = t_get(e, r->hashes[hits]);
        if (b == NIL)
            break;
        blk_touch(e, b);
        r->blocks[r->n_blocks++] = b;
        hits++;
    }
    return hits * e->cfg.block_tokens;
}

fatia_usec_t fatia_engine_step_begin(struct fatia_engine *e)
{
    const struct fatia_engine_config *c = &e->cfg;
    uint32_t budget = c->max_num_batched_tokens;
    bool preempted = false;
    uint64_t tokens = 0;
    uint32_t sampled = 0;
    double attn = 0, kv_read = 0, s;
    struct fatia_engine_req *r, *next;

    /* running requests, in admission order */
    for (r = e->running.head; r && budget; r = next) {
        uint32_t n;
        next = r->next;
        n = (uint32_t)FATIA_MIN(known(r) - r->computed, (uint64_t)budget);
        if (!n)
            continue;
        while (!req_ensure_blocks(e, r, r->computed + n)) {
            struct fatia_engine_req *victim = e->running.tail;
            preempted = true;
            if (victim == r) {
                preempt(e, r);
                r = NULL;
                break;
            }
            if (victim == next)
                next = NULL;
            preempt(e, victim);
        }
        if (!r)
            break;
        r->sched = true;
        r->sched_n = n;
        budget -= n;
    }
    /* waiting requests, first come first served */
    while (!preempted && budget && e->waiting.head && e->running.n < c->max_num_seqs) {
        uint32_t cached, n;
        uint32_t local;
        r = e->waiting.head;
        cached = r->computed == 0 ? admit_cached(e, r) : r->computed;
        local = cached;
        /* loaded KV: every prompt token but the last is there; the last is recomputed for its
         * logits (vLLM's NIXL connector does the same) */
        if (r->remote && r->computed == 0 && r->generated == 0 && r->prompt_tokens - 1 > cached)
            cached = r->prompt_tokens - 1;
        n = (uint32_t)FATIA_MIN(known(r) - cached, (uint64_t)budget);
        if (!req_ensure_blocks(e, r, (uint64_t)cached + n)) {
            req_free_blocks(e, r); /* not admitted: give back the hits and the partial grab */
            break;
        }
        e->st.prefix_queries += known(r);
        e->st.prefix_hits += local;
        if (cached > local) {
            e->st.remote_tokens += cached - local;
            cache_blocks(e, r, local / c->block_tokens, cached / c->block_tokens);
        }
        r->computed = cached;
        rl_remove(&e->waiting, r);
        r->st = R_RUNNING;
        rl_push_tail(&e->running, r);
        r->sched = true;
        r->sched_n = n;
        budget -= n;
    }
    /* the step's shape */
    for (r = e->running.head; r; r = r->next) {
        double ctx, n;
        if (!r->sched)
            continue;
        n = r->sched_n;
        ctx = r->computed;
        tokens += r->sched_n;
        if (r->computed + r->sched_n == known(r))
            sampled++;
        attn += 4.0 * c->model.layers * (c->model.heads ? c->model.heads : c->model.kv_heads) *
                c->model.head_dim * n * (ctx + n / 2.0);
        kv_read += ctx + n;
    }
    e->planned = tokens > 0;
    e->st.last_step_tokens = tokens;
    if (!tokens)
        return 0;
    s = fatia_engine_step_seconds(c, tokens, sampled, attn, kv_read);
    return (fatia_usec_t)(s * 1e6) > 0 ? (fatia_usec_t)(s * 1e6) : 1;
}

double fatia_engine_step_seconds(const struct fatia_engine_config *c, uint64_t tokens,
                                 uint32_t sampled, double attn_flops, double kv_read_tokens)
{
    const struct fatia_model_spec *m = &c->model;
    double embed = (double)m->vocab * m->hidden * (m->tied_embeddings ? 1 : 2);
    double lin = (double)m->params - (embed < (double)m->params ? embed : 0);
    double head = (double)m->vocab * m->hidden;
    double compute, memory;
    uint32_t tp = c->tp ? c->tp : 1;

    compute = (2.0 * lin * (double)tokens + 2.0 * head * sampled + attn_flops) / (c->flops * tp);
    memory = (double)c->weights_bytes_per_gpu / c->hbm_bw +
             kv_read_tokens * (double)c->kv_bytes_per_token_per_gpu / c->kv_bw;
    return c->step_overhead + (compute > memory ? compute : memory);
}

void fatia_engine_step_end(struct fatia_engine *e, fatia_engine_emit_fn emit, void *cbud)
{
    struct fatia_engine_req *r, *next;
    uint32_t bt = e->cfg.block_tokens;

    if (!e->planned)
        return;
    e->planned = false;
    e->st.steps++;
    for (r = e->running.head; r; r = next) {
        uint32_t full_before, full_after;
        next = r->next;
        if (!r->sched)
            continue;
        r->sched = false;
        full_before = r->computed / bt;
        if (r->computed < r->prompt_tokens)
            e->st.prompt_tokens += FATIA_MIN(r->sched_n, r->prompt_tokens - r->computed);
        r->computed += r->sched_n;
        full_after = r->computed / bt;
        /* newly filled prompt blocks become cached */
        cache_blocks(e, r, full_before, full_after);
        r->sched_n = 0;
        if (r->computed < known(r))
            continue; /* a prefill chunk that did not reach the end */
        if (r->max_tokens == 0) {
            rl_remove(&e->running, r);
            req_free_blocks(e, r);
            emit(cbud, r->ud, 0, true);
            req_free(r);
            continue;
        }
        r->generated++;
        e->st.generation_tokens++;
        if (r->generated >= r->max_tokens) {
            rl_remove(&e->running, r);
            req_free_blocks(e, r);
            emit(cbud, r->ud, r->generated, true);
            req_free(r);
        } else {
            emit(cbud, r->ud, r->generated, false);
        }
    }
}

void fatia_engine_get_stats(const struct fatia_engine *e, struct fatia_engine_stats *ret)
{
    *ret = e->st;
    ret->waiting = e->waiting.n;
    ret->running = e->running.n;
    ret->num_gpu_blocks = e->cfg.num_gpu_blocks;
    ret->free_blocks = e->n_free;
    ret->cached_blocks = e->t_n;
    ret->kv_usage = 1.0 - (double)e->n_free / (double)e->cfg.num_gpu_blocks;
}

static uint32_t common_prefix(const struct fatia_engine_req *r, const uint64_t *h, size_t n)
{
    uint32_t k = 0;
    while (k < n && k < r->n_hashes && r->hashes[k] == h[k])
        k++;
    return k;
}

uint32_t fatia_engine_cached_tokens(const struct fatia_engine *e, const uint64_t *hashes, size_t n,
                                    bool pending)
{
    uint32_t hits = 0;
    const struct fatia_engine_req *r;

    while (hits < n && t_get(e, hashes[hits]) != NIL)
        hits++;
    if (pending) {
        /* blocks of prompts queued or running here will be cached by the time a request sent
         * now is scheduled behind them */
        for (r = e->waiting.head; r; r = r->next)
            hits = FATIA_MAX(hits, common_prefix(r, hashes, n));
        for (r = e->running.head; r; r = r->next)
            hits = FATIA_MAX(hits, common_prefix(r, hashes, n));
    }
    return hits * e->cfg.block_tokens;
}
