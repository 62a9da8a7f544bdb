/*
 * tests/vgpu/vgpu_worker.c: one process of a slice, for the multi-process tests.
 *
 * It reaches the (fake) driver the way the CUDA runtime does (fake_cudart.c) and runs under the
 * interposer that the test puts in LD_PRELOAD. Commands:
 *   alloc BYTES            one cuMemAlloc_v2; prints "rc=<code>"
 *   hold BYTES             allocate, print "held rc=<code>", then wait until killed or stdin closes
 *   retry BYTES MS         retry an allocation until it succeeds or MS pass; prints "rc=<code>
 *                          ms=<elapsed>"
 *   hammer MS THREADS MAX  threads allocate and free random sizes in [1, MAX] for MS; every
 *                          refusal must be CUDA_ERROR_OUT_OF_MEMORY; frees all; prints "ok ..."
 *   info                   prints "free=<bytes> total=<bytes>"
 * Exit status: 0 when the command ran as specified, 1 on a wrong result code, 2 on bad usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_cudart.h"

static rt_alloc_t mem_alloc;
static rt_free_t mem_free;

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct hammer {
    int64_t until;
    uint64_t max;
    unsigned seed;
    _Atomic uint64_t allocs, ooms, bad;
};

static void *hammer_thread(void *arg)
{
    struct hammer *h = arg;
    CUdeviceptr live[32];
    int n = 0;
    unsigned seed = h->seed;

    while (now_ms() < h->until) {
        if (n > 0 && (n == 32 || rand_r(&seed) % 2)) {
            int i = rand_r(&seed) % n;

            if (mem_free(live[i]) != CUDA_SUCCESS)
                atomic_fetch_add(&h->bad, 1);
            live[i] = live[--n];
        } else {
            uint64_t size = 1 + (uint64_t)rand_r(&seed) % h->max;
            CUresult r = mem_alloc(&live[n], size);

            if (r == CUDA_SUCCESS) {
                n++;
                atomic_fetch_add(&h->allocs, 1);
            } else if (r == CUDA_ERROR_OUT_OF_MEMORY) {
                atomic_fetch_add(&h->ooms, 1);
            } else {
                atomic_fetch_add(&h->bad, 1);
            }
        }
    }
    while (n > 0) {
        if (mem_free(live[--n]) != CUDA_SUCCESS)
            atomic_fetch_add(&h->bad, 1);
    }
    return NULL;
}

static int hammer(int ms, int threads, uint64_t max)
{
    pthread_t t[64];
    struct hammer h[64];

    if (threads < 1 || threads > 64)
        return 2;
    for (int i = 0; i < threads; i++) {
        memset(&h[i], 0, sizeof(h[i]));
        h[i].until = now_ms() + ms;
        h[i].max = max;
        h[i].seed = (unsigned)getpid() * 31u + (unsigned)i;
        pthread_create(&t[i], NULL, hammer_thread, &h[i]);
    }
    uint64_t allocs = 0, ooms = 0, bad = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        allocs += h[i].allocs;
        ooms += h[i].ooms;
        bad += h[i].bad;
    }
    printf("ok allocs=%" PRIu64 " ooms=%" PRIu64 " bad=%" PRIu64 "\n", allocs, ooms, bad);
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    CUdeviceptr p;
    CUcontext ctx;
    CUresult r;
    int n;

    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc < 2)
        return 2;
    n = fake_rt_init(FAKE_REQUESTS);
    if (n < 0) {
        fprintf(stderr, "worker: runtime init failed at step %d\n", -n);
        return 2;
    }
    RT("cuDevicePrimaryCtxRetain", 7000, rt_retain_t)(&ctx, 0);
    RT("cuCtxSetCurrent", 4000, rt_ctx_set_t)(ctx);
    mem_alloc = RT("cuMemAlloc", 3020, rt_alloc_t);
    mem_free = RT("cuMemFree", 3020, rt_free_t);
    if (strcmp(argv[1], "alloc") == 0 && argc == 3) {
        r = mem_alloc(&p, strtoull(argv[2], NULL, 10));
        printf("rc=%d\n", r);
        return r == CUDA_SUCCESS || r == CUDA_ERROR_OUT_OF_MEMORY ? 0 : 1;
    }
    if (strcmp(argv[1], "hold") == 0 && argc == 3) {
        char c;

        r = mem_alloc(&p, strtoull(argv[2], NULL, 10));
        printf("held rc=%d\n", r);
        if (r != CUDA_SUCCESS)
            return 1;
        while (read(0, &c, 1) > 0)
            ;
        return mem_free(p) == CUDA_SUCCESS ? 0 : 1;
    }
    if (strcmp(argv[1], "retry") == 0 && argc == 4) {
        int64_t start = now_ms(), limit = strtoll(argv[3], NULL, 10);

        do {
            r = mem_alloc(&p, strtoull(argv[2], NULL, 10));
            if (r != CUDA_ERROR_OUT_OF_MEMORY)
                break;
            usleep(1000);
        } while (now_ms() - start < limit);
        printf("rc=%d ms=%" PRId64 "\n", r, now_ms() - start);
        return r == CUDA_SUCCESS ? 0 : 1;
    }
    if (strcmp(argv[1], "hammer") == 0 && argc == 5)
        return hammer(atoi(argv[2]), atoi(argv[3]), strtoull(argv[4], NULL, 10));
    if (strcmp(argv[1], "info") == 0) {
        size_t f = 0, t = 0;

        r = RT("cuMemGetInfo", 3020, rt_getinfo_t)(&f, &t);
        printf("free=%zu total=%zu\n", f, t);
        return r == CUDA_SUCCESS ? 0 : 1;
    }
    return 2;
}
