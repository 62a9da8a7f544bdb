/*
 * vgpu/ptrmap.c: a sharded open-addressing hash map from (kind, key) to the bytes charged.
 *
 * Each shard is a power-of-two table with linear probing and backward-shift deletion (no
 * tombstones, so a long-running process with churn never degrades), grown at 3/4 load. Tables
 * come from calloc: the hooks that call this never run inside malloc, so libc's allocator is safe
 * here (fatia's counting allocator of base/ is not used, as the library depends on libc alone).
 *
 * Rejected: asking the driver for the size at free time (cuMemGetAddressRange costs a driver call
 * per free and knows nothing of VMM handles or arrays); one global lock (threads of a training
 * job allocate concurrently).
 */
#include "base/compat.h"

#include "vgpu/ptrmap.h"

#include <errno.h>

static uint64_t mix(uint64_t x)
{
    /* splitmix64 finalizer: device pointers share their low and high bits. */
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    x ^= x >> 31;
    return x;
}

static uint64_t hash(uint32_t kind, uint64_t key)
{
    return mix(key ^ ((uint64_t)kind << 56));
}

void fatia_vgpu_ptrmap_init(struct fatia_vgpu_ptrmap *m)
{
    for (int i = 0; i < FATIA_VGPU_PTRMAP_SHARDS; i++) {
        pthread_mutex_init(&m->shard[i].lock, NULL);
        m->shard[i].tab = NULL;
        m->shard[i].cap = 0;
        m->shard[i].count = 0;
    }
}

void fatia_vgpu_ptrmap_release(struct fatia_vgpu_ptrmap *m)
{
    for (int i = 0; i < FATIA_VGPU_PTRMAP_SHARDS; i++) {
        free(m->shard[i].tab);
        m->shard[i].tab = NULL;
        m->shard[i].cap = m->shard[i].count = 0;
        pthread_mutex_destroy(&m->shard[i].lock);
    }
}

static struct fatia_vgpu_shard *shard_of(struct fatia_vgpu_ptrmap *m, uint64_t h)
{
    return &m->shard[h >> 58];
}

/* Index of (kind, key) in s, or of the empty slot where it would go. */
static uint32_t find(const struct fatia_vgpu_shard *s, uint64_t h, uint32_t kind, uint64_t key)
{
    uint32_t mask = s->cap - 1;
    uint32_t i = (uint32_t)h & mask;

    while (s->tab[i].kind && !(s->tab[i].kind == kind && s->tab[i].key == key))
        i = (i + 1) & mask;
    return i;
}

static int grow(struct fatia_vgpu_shard *s)
{
    uint32_t cap = s->cap ? s->cap * 2 : 64;
    struct fatia_vgpu_entry *old = s->tab, *tab;
    uint32_t old_cap = s->cap;

    if (cap == 0 || cap > (UINT32_C(1) << 30))
        return -ENOMEM;
    tab = calloc(cap, sizeof(*tab));
    if (!tab)
        return -ENOMEM;
    s->tab = tab;
    s->cap = cap;
    for (uint32_t i = 0; i < old_cap; i++) {
        if (old[i].kind)
            s->tab[find(s, hash(old[i].kind, old[i].key), old[i].kind, old[i].key)] = old[i];
    }
    free(old);
    return 0;
}

int fatia_vgpu_ptrmap_put(struct fatia_vgpu_ptrmap *m, const struct fatia_vgpu_entry *e,
                          struct fatia_vgpu_entry *ret_old)
{
    uint64_t h = hash(e->kind, e->key);
    struct fatia_vgpu_shard *s = shard_of(m, h);
    uint32_t i;
    int ret = 0;

    pthread_mutex_lock(&s->lock);
    if ((s->count + 1) * 4 > s->cap * 3 && grow(s) < 0) {
        pthread_mutex_unlock(&s->lock);
        return -ENOMEM;
    }
    i = find(s, h, e->kind, e->key);
    if (s->tab[i].kind) {
        if (ret_old)
            *ret_old = s->tab[i];
        ret = 1;
    } else {
        s->count++;
    }
    s->tab[i] = *e;
    pthread_mutex_unlock(&s->lock);
    return ret;
}

bool fatia_vgpu_ptrmap_take(struct fatia_vgpu_ptrmap *m, uint32_t kind, uint64_t key,
                            struct fatia_vgpu_entry *ret)
{
    uint64_t h = hash(kind, key);
    struct fatia_vgpu_shard *s = shard_of(m, h);
    uint32_t i, j, mask;

    pthread_mutex_lock(&s->lock);
    if (!s->cap) {
        pthread_mutex_unlock(&s->lock);
        return false;
    }
    i = find(s, h, kind, key);
    if (!s->tab[i].kind) {
        pthread_mutex_unlock(&s->lock);
        return false;
    }
    *ret = s->tab[i];
    /* Backward-shift deletion: move later members of the probe run into the hole. */
    mask = s->cap - 1;
    j = i;
    for (;;) {
        uint32_t home;

        j = (j + 1) & mask;
        if (!s->tab[j].kind)
            break;
        home = (uint32_t)hash(s->tab[j].kind, s->tab[j].key) & mask;
        /* Move j to i unless its home lies cyclically in (i, j]. */
        if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
            continue;
        s->tab[i] = s->tab[j];
        i = j;
    }
    memset(&s->tab[i], 0, sizeof(s->tab[i]));
    s->count--;
    pthread_mutex_unlock(&s->lock);
    return true;
}

bool fatia_vgpu_ptrmap_get(struct fatia_vgpu_ptrmap *m, uint32_t kind, uint64_t key,
                           struct fatia_vgpu_entry *ret)
{
    uint64_t h = hash(kind, key);
    struct fatia_vgpu_shard *s = shard_of(m, h);
    bool found = false;
    uint32_t i;

    pthread_mutex_lock(&s->lock);
    if (s->cap) {
        i = find(s, h, kind, key);
        if (s->tab[i].kind) {
            *ret = s->tab[i];
            found = true;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return found;
}

uint64_t fatia_vgpu_ptrmap_count(struct fatia_vgpu_ptrmap *m)
{
    uint64_t n = 0;

    for (int i = 0; i < FATIA_VGPU_PTRMAP_SHARDS; i++) {
        pthread_mutex_lock(&m->shard[i].lock);
        n += m->shard[i].count;
        pthread_mutex_unlock(&m->shard[i].lock);
    }
    return n;
}

void fatia_vgpu_ptrmap_after_fork(struct fatia_vgpu_ptrmap *m)
{
    for (int i = 0; i < FATIA_VGPU_PTRMAP_SHARDS; i++) {
        pthread_mutex_init(&m->shard[i].lock, NULL);
        m->shard[i].tab = NULL;
        m->shard[i].cap = 0;
        m->shard[i].count = 0;
    }
}
