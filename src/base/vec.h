/*
 * base/vec.h: a typed growable array.
 *
 *     FATIA_VEC(struct slice) slices = {0};
 *     if (FATIA_VEC_PUSH(&slices, s) < 0) return -ENOMEM;
 *     for (size_t i = 0; i < slices.n; i++) use(&slices.v[i]);
 *     FATIA_VEC_RELEASE(&slices);
 *
 * v is NULL while empty. Growth doubles capacity; a failed growth leaves the vector unchanged.
 */
#ifndef FATIA_BASE_VEC_H
#define FATIA_BASE_VEC_H

#include <stddef.h>

#include "base/alloc.h"

#define FATIA_VEC(T) \
    struct {         \
        T *v;        \
        size_t n;    \
        size_t cap;  \
    }

/* Makes room for `need` elements in total. 0 or -ENOMEM. */
int fatia_vec_reserve_raw(void **v, size_t *cap, size_t need, size_t elsize);

#define FATIA_VEC_RESERVE(vec, need) \
    fatia_vec_reserve_raw((void **)&(vec)->v, &(vec)->cap, (need), sizeof(*(vec)->v))

/* Appends one element (an expression of the element type). 0 or -ENOMEM. */
#define FATIA_VEC_PUSH(vec, elem) \
    (FATIA_VEC_RESERVE((vec), (vec)->n + 1) < 0 ? -ENOMEM : ((vec)->v[(vec)->n++] = (elem), 0))

#define FATIA_VEC_RELEASE(vec)     \
    do {                           \
        fatia_free((vec)->v);      \
        (vec)->v = NULL;           \
        (vec)->n = (vec)->cap = 0; \
    } while (0)

#endif
