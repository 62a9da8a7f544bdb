/*
 * tests/vgpu/other_cu.c: a library that is not the driver but exports a function named
 * cuMemAlloc_v2 (a tracing shim, a stub library). dlsym on its handle must return its own
 * function, not the interposer's hook.
 */
#include <stddef.h>

__attribute__((visibility("default"))) int cuMemAlloc_v2(unsigned long long *p, size_t n);

int cuMemAlloc_v2(unsigned long long *p, size_t n)
{
    *p = n;
    return 42;
}
