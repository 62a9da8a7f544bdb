/*
 * base/alloc.h: the one allocation wrapper.
 *
 * OOM policy: the core (model, supply, control, demand, store) is fallible: these functions return
 * NULL and the caller returns -ENOMEM. Only boot and CLI edge code may use the fatia_x*() variants,
 * which print and exit on OOM. fatia_free() and every fatia destructor accept NULL.
 *
 * Tests can make the Nth allocation from now fail (fatia_alloc_fail_at) to prove that error paths
 * release what they took; the counters give live bytes to benchmarks (peak memory) and metrics.
 */
#ifndef FATIA_BASE_ALLOC_H
#define FATIA_BASE_ALLOC_H

#include <stddef.h>
#include <stdint.h>

void *fatia_malloc(size_t n);
void *fatia_calloc(size_t count, size_t size); /* zeroed; overflow-checked */
void *fatia_realloc(void *p, size_t n);
void *fatia_reallocarray(void *p, size_t count, size_t size); /* overflow-checked */
char *fatia_strdup(const char *s);
char *fatia_strndup(const char *s, size_t n);
void fatia_free(void *p);

/* Aborting variants for the edges (CLI start-up, daemon boot). */
void *fatia_xmalloc(size_t n);
void *fatia_xcalloc(size_t count, size_t size);
char *fatia_xstrdup(const char *s);

/* Frees *pp and sets it to NULL. */
#define FATIA_FREE(pp)     \
    do {                   \
        fatia_free(*(pp)); \
        *(pp) = NULL;      \
    } while (0)

/* Fault injection for tests: the nth allocation counted from now (1 = the next one) fails, and
 * so do all after it when sticky is true. n = 0 turns injection off. Not thread-safe. */
void fatia_alloc_fail_at(uint64_t nth, int sticky);

/* Number of allocations made through this wrapper since start (for torture loops). */
uint64_t fatia_alloc_count(void);

#endif
