/*
 * base/alloc.c: allocation wrapper with fault injection (see alloc.h).
 *
 * Counting live bytes would need a size header per block; peak memory is measured from the
 * kernel instead (bench/ reads VmHWM), so the wrapper only counts calls, which fault injection
 * needs. The fault check is one predictable branch on a global.
 */
#include "base/compat.h"

#include "base/alloc.h"

#include <stdatomic.h>

static _Atomic uint64_t n_allocs;
static uint64_t fail_at;
static int fail_sticky;

static int should_fail(void)
{
    uint64_t n = atomic_fetch_add_explicit(&n_allocs, 1, memory_order_relaxed) + 1;

    if (likely(fail_at == 0))
        return 0;
    return fail_sticky ? n >= fail_at : n == fail_at;
}

void fatia_alloc_fail_at(uint64_t nth, int sticky)
{
    fail_at = nth ? atomic_load(&n_allocs) + nth : 0;
    fail_sticky = sticky;
}

uint64_t fatia_alloc_count(void)
{
    return atomic_load(&n_allocs);
}

void *fatia_malloc(size_t n)
{
    if (should_fail())
        return NULL;
    return malloc(n ? n : 1);
}

void *fatia_calloc(size_t count, size_t size)
{
    if (should_fail())
        return NULL;
    return calloc(count ? count : 1, size ? size : 1);
}

void *fatia_realloc(void *p, size_t n)
{
    if (should_fail())
        return NULL;
    return realloc(p, n ? n : 1);
}

void *fatia_reallocarray(void *p, size_t count, size_t size)
{
    if (should_fail())
        return NULL;
    if (count == 0 || size == 0)
        return realloc(p, 1);
    return reallocarray(p, count, size);
}

char *fatia_strdup(const char *s)
{
    return fatia_strndup(s, strlen(s));
}

char *fatia_strndup(const char *s, size_t n)
{
    char *p;
    size_t len = strnlen(s, n);

    p = fatia_malloc(len + 1);
    if (!p)
        return NULL;
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

void fatia_free(void *p)
{
    free(p);
}

static void *oom(size_t n)
{
    fprintf(stderr, "fatia: out of memory allocating %zu bytes\n", n);
    exit(70);
}

void *fatia_xmalloc(size_t n)
{
    void *p = fatia_malloc(n);
    return p ? p : oom(n);
}

void *fatia_xcalloc(size_t count, size_t size)
{
    void *p = fatia_calloc(count, size);
    return p ? p : oom(count * size);
}

char *fatia_xstrdup(const char *s)
{
    char *p = fatia_strdup(s);
    return p ? p : oom(strlen(s) + 1);
}
