/*
 * base/map.c: string-keyed open-addressing hash map (see map.h).
 */
#include "base/compat.h"

#include "base/map.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/hash.h"

void fatia_strmap_init(struct fatia_strmap *m)
{
    m->slots = NULL;
    m->cap = 0;
    m->n = 0;
}

void fatia_strmap_release(struct fatia_strmap *m)
{
    fatia_free(m->slots);
    fatia_strmap_init(m);
}

static size_t find_slot(const struct fatia_strmap *m, const char *key, uint64_t h)
{
    size_t mask = m->cap - 1, i = (size_t)h & mask;

    while (m->slots[i].key && (m->slots[i].hash != h || strcmp(m->slots[i].key, key) != 0))
        i = (i + 1) & mask;
    return i;
}

static int grow(struct fatia_strmap *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 16;
    struct fatia_strmap_slot *old = m->slots;
    size_t ocap = m->cap;

    m->slots = fatia_calloc(ncap, sizeof(*m->slots));
    if (!m->slots) {
        m->slots = old;
        return -ENOMEM;
    }
    m->cap = ncap;
    for (size_t i = 0; i < ocap; i++) {
        if (old[i].key) {
            size_t j = find_slot(m, old[i].key, old[i].hash);
            m->slots[j] = old[i];
        }
    }
    fatia_free(old);
    return 0;
}

int fatia_strmap_put(struct fatia_strmap *m, const char *key, void *val)
{
    uint64_t h = fatia_hash_str(key);
    size_t i;

    if ((m->n + 1) * 4 > m->cap * 3) {
        int r = grow(m);
        if (r < 0)
            return r;
    }
    i = find_slot(m, key, h);
    if (!m->slots[i].key)
        m->n++;
    m->slots[i].key = key;
    m->slots[i].hash = h;
    m->slots[i].val = val;
    return 0;
}

void *fatia_strmap_get(const struct fatia_strmap *m, const char *key)
{
    size_t i;

    if (!m->cap)
        return NULL;
    i = find_slot(m, key, fatia_hash_str(key));
    return m->slots[i].key ? m->slots[i].val : NULL;
}

bool fatia_strmap_has(const struct fatia_strmap *m, const char *key)
{
    return m->cap && m->slots[find_slot(m, key, fatia_hash_str(key))].key != NULL;
}

bool fatia_strmap_del(struct fatia_strmap *m, const char *key)
{
    size_t mask, i, j;

    if (!m->cap)
        return false;
    mask = m->cap - 1;
    i = find_slot(m, key, fatia_hash_str(key));
    if (!m->slots[i].key)
        return false;
    /* Backward-shift deletion: pull later members of the probe run into the hole. */
    j = i;
    for (;;) {
        size_t home;
        j = (j + 1) & mask;
        if (!m->slots[j].key)
            break;
        home = (size_t)m->slots[j].hash & mask;
        if (((j - home) & mask) >= ((j - i) & mask)) {
            m->slots[i] = m->slots[j];
            i = j;
        }
    }
    m->slots[i].key = NULL;
    m->n--;
    return true;
}
