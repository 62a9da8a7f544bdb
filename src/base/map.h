/*
 * base/map.h: a hash map from NUL-terminated string keys to pointers.
 *
 * Open addressing with linear probing and backward-shift deletion (no tombstones), load <= 0.75.
 * Keys are borrowed: the caller keeps each key alive while it is in the map (usually the key is a
 * field of the value). Values are opaque pointers; NULL is a valid value, so fatia_strmap_get
 * reports presence through its return code. Iteration order is unspecified; use the vector the
 * values also live in when order matters.
 */
#ifndef FATIA_BASE_MAP_H
#define FATIA_BASE_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fatia_strmap_slot {
    const char *key; /* NULL = empty */
    uint64_t hash;
    void *val;
};

struct fatia_strmap {
    struct fatia_strmap_slot *slots;
    size_t cap; /* power of two, or 0 */
    size_t n;
};

void fatia_strmap_init(struct fatia_strmap *m);
void fatia_strmap_release(struct fatia_strmap *m);

/* Inserts or replaces. 0, or -ENOMEM (map unchanged). */
int fatia_strmap_put(struct fatia_strmap *m, const char *key, void *val);
/* The value for key, or NULL when absent (use fatia_strmap_has to tell a stored NULL apart). */
void *fatia_strmap_get(const struct fatia_strmap *m, const char *key);
bool fatia_strmap_has(const struct fatia_strmap *m, const char *key);
/* Removes key; returns true when it was present. */
bool fatia_strmap_del(struct fatia_strmap *m, const char *key);

/* Iteration: for (size_t i = 0; i < m->cap; i++) if (m->slots[i].key) ... */

#endif
