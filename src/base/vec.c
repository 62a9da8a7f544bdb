/*
 * base/vec.c: growth for FATIA_VEC (see vec.h).
 */
#include "base/compat.h"

#include "base/vec.h"

#include "base/error.h"

int fatia_vec_reserve_raw(void **v, size_t *cap, size_t need, size_t elsize)
{
    size_t ncap;
    void *p;

    if (need <= *cap)
        return 0;
    ncap = *cap ? *cap : 8;
    while (ncap < need)
        ncap *= 2;
    p = fatia_reallocarray(*v, ncap, elsize);
    if (!p)
        return -ENOMEM;
    *v = p;
    *cap = ncap;
    return 0;
}
