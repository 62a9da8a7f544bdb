/*
 * tests/vgpu/next_a.c and next_b.c: two libraries that both define next_target(), to check that
 * dlsym(RTLD_NEXT, ...) called from next_a still finds next_b's definition (the one after the
 * caller) with the interposer's dlsym in front. A dlsym that forwarded RTLD_NEXT through an
 * ordinary call would search after the interposer instead and find next_a's own.
 */
#include <dlfcn.h>

__attribute__((visibility("default"))) char next_target(void);
__attribute__((visibility("default"))) void *next_a_lookup(void);

char next_target(void)
{
    return 'A';
}

void *next_a_lookup(void)
{
    return dlsym(RTLD_NEXT, "next_target");
}
