/*
 * tests/vgpu/fake_cuda.c: a fake CUDA driver, built as libcuda.so.1, for the interposer's tests.
 *
 * It answers cuGetProcAddress the way the real driver does (reference/cuda-interposer.md §6.1):
 * the base name plus cudaVersion select the newest variant introduced at or before that version,
 * flags=2 selects the _ptsz (per-thread default stream) variant where there is one, a version
 * below every variant gives NULL with VERSION_NOT_SUFFICIENT, an unknown name NULL with
 * SYMBOL_NOT_FOUND. Every other name a CUDA 13 runtime asks for (data/cudart-13.0-requests.txt)
 * gets a stub returning CUDA_ERROR_NOT_SUPPORTED, as a driver lacking a feature would.
 *
 * Device memory is simulated: FAKE_CUDA_DEVICES devices (default 2) of FAKE_CUDA_TOTAL bytes
 * (default 80 GiB) each, addresses that are never dereferenced, freed addresses reused first (as
 * the real allocator does, so that races on a reused address show). With FAKE_CUDA_SHM=<file>, the
 * bytes in use and their peak are kept in that file across processes, one "GPU" shared by all, so
 * that a test can check that the slice never held more than its cap at any instant.
 *
 * FAKE_CUDA_DISTINCT_PTRS=1 makes cuGetProcAddress return aliases instead of the exported
 * addresses, to exercise the interposer's match by name.
 *
 * Every entry point counts its calls; fake_cuda_count("cuMemAlloc_v2") reads a counter (tests
 * compare counts to see which variant really ran).
 */
#include <sys/mman.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vgpu/cuda_abi.h"

#define EXPORT  __attribute__((visibility("default")))
#define MAX_DEV 4

/* ---- counters ---------------------------------------------------------------------------------- */

struct counter {
    const char *name;
    _Atomic uint64_t n;
};

static struct counter counters[96];
static _Atomic int n_counters;
static pthread_mutex_t counter_lock = PTHREAD_MUTEX_INITIALIZER;

static _Atomic uint64_t *counter(const char *name)
{
    int n = atomic_load(&n_counters);

    for (int i = 0; i < n; i++) {
        if (strcmp(counters[i].name, name) == 0)
            return &counters[i].n;
    }
    pthread_mutex_lock(&counter_lock);
    n = atomic_load(&n_counters);
    for (int i = 0; i < n; i++) {
        if (strcmp(counters[i].name, name) == 0) {
            pthread_mutex_unlock(&counter_lock);
            return &counters[i].n;
        }
    }
    if (n == (int)(sizeof(counters) / sizeof(counters[0]))) {
        pthread_mutex_unlock(&counter_lock);
        abort();
    }
    counters[n].name = name;
    atomic_store(&counters[n].n, 0);
    atomic_store(&n_counters, n + 1);
    pthread_mutex_unlock(&counter_lock);
    return &counters[n].n;
}

#define COUNT(name) atomic_fetch_add(counter(name), 1)

EXPORT uint64_t fake_cuda_count(const char *name);

uint64_t fake_cuda_count(const char *name)
{
    int n = atomic_load(&n_counters);

    for (int i = 0; i < n; i++) {
        if (strcmp(counters[i].name, name) == 0)
            return atomic_load(&counters[i].n);
    }
    return 0;
}

/* ---- simulated memory ---------------------------------------------------------------------------- */

struct shared_gpu {
    _Atomic uint64_t used[MAX_DEV];
    _Atomic uint64_t peak[MAX_DEV];
};

struct block {
    CUdeviceptr addr;
    uint64_t size;
    int dev;
    bool live;
};

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static struct block *blocks;
static size_t n_blocks, cap_blocks;
static uint64_t next_addr[MAX_DEV];
static uint64_t local_used[MAX_DEV];
static struct shared_gpu local_gpu, *gpu = &local_gpu;
static uint64_t total_bytes = UINT64_C(80) << 30;
static int n_devices = 2;
static bool distinct_ptrs;
static __thread int current_dev;

__attribute__((constructor)) static void fake_init(void)
{
    const char *v;

    if ((v = getenv("FAKE_CUDA_TOTAL")))
        total_bytes = strtoull(v, NULL, 10);
    if ((v = getenv("FAKE_CUDA_DEVICES")))
        n_devices = atoi(v) > 0 && atoi(v) <= MAX_DEV ? atoi(v) : 2;
    distinct_ptrs = getenv("FAKE_CUDA_DISTINCT_PTRS") != NULL;
    if ((v = getenv("FAKE_CUDA_SHM"))) {
        int fd = open(v, O_RDWR | O_CREAT, 0600);
        void *m;

        if (fd < 0 || ftruncate(fd, sizeof(struct shared_gpu)) < 0)
            abort();
        m = mmap(NULL, sizeof(struct shared_gpu), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED)
            abort();
        close(fd);
        gpu = m;
    }
    for (int d = 0; d < MAX_DEV; d++)
        next_addr[d] = (UINT64_C(0x7f0000000000) + ((uint64_t)d << 40));
}

/* Takes n bytes of simulated device memory; CUDA_ERROR_OUT_OF_MEMORY when the device is full. */
static CUresult take(int dev, uint64_t n, CUdeviceptr *ret_addr)
{
    uint64_t used, want;
    size_t i;

    if (dev < 0 || dev >= n_devices)
        return CUDA_ERROR_INVALID_VALUE;
    used = atomic_load(&gpu->used[dev]);
    do {
        if (n > total_bytes - used)
            return CUDA_ERROR_OUT_OF_MEMORY;
        want = used + n;
    } while (!atomic_compare_exchange_weak(&gpu->used[dev], &used, want));
    for (uint64_t p = atomic_load(&gpu->peak[dev]);
         p < want && !atomic_compare_exchange_weak(&gpu->peak[dev], &p, want);)
        ;
    pthread_mutex_lock(&mem_lock);
    local_used[dev] += n;
    /* Reuse the most recently freed block of this device that fits, like a real allocator. */
    for (i = n_blocks; i-- > 0;) {
        if (!blocks[i].live && blocks[i].dev == dev && blocks[i].size >= n) {
            blocks[i].live = true;
            blocks[i].size = n;
            *ret_addr = blocks[i].addr;
            pthread_mutex_unlock(&mem_lock);
            return CUDA_SUCCESS;
        }
    }
    if (n_blocks == cap_blocks) {
        size_t cap = cap_blocks ? cap_blocks * 2 : 1024;
        struct block *b = realloc(blocks, cap * sizeof(*b));

        if (!b)
            abort();
        blocks = b;
        cap_blocks = cap;
    }
    blocks[n_blocks] = (struct block){next_addr[dev], n, dev, true};
    *ret_addr = next_addr[dev];
    next_addr[dev] += (n + 0xfffff) & ~UINT64_C(0xfffff);
    n_blocks++;
    pthread_mutex_unlock(&mem_lock);
    return CUDA_SUCCESS;
}

static CUresult give(uint64_t addr)
{
    pthread_mutex_lock(&mem_lock);
    for (size_t i = n_blocks; i-- > 0;) {
        if (blocks[i].addr == addr && blocks[i].live) {
            blocks[i].live = false;
            atomic_fetch_sub(&gpu->used[blocks[i].dev], blocks[i].size);
            local_used[blocks[i].dev] -= blocks[i].size;
            pthread_mutex_unlock(&mem_lock);
            return CUDA_SUCCESS;
        }
    }
    pthread_mutex_unlock(&mem_lock);
    return CUDA_ERROR_INVALID_VALUE;
}

EXPORT uint64_t fake_cuda_used(int dev);
EXPORT uint64_t fake_cuda_peak(int dev);

uint64_t fake_cuda_used(int dev)
{
    return atomic_load(&gpu->used[dev]);
}

uint64_t fake_cuda_peak(int dev)
{
    return atomic_load(&gpu->peak[dev]);
}

/* ---- entry points ------------------------------------------------------------------------------ */

EXPORT CUresult cuInit(unsigned flags)
{
    (void)flags;
    COUNT("cuInit");
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *v)
{
    *v = 13000;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *n)
{
    *n = n_devices;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    if (ordinal < 0 || ordinal >= n_devices)
        return CUDA_ERROR_INVALID_VALUE;
    *d = ordinal;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice d)
{
    *ctx = (CUcontext)(uintptr_t)(0x1000 + d);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    current_dev = (int)((uintptr_t)ctx - 0x1000);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *ctx)
{
    *ctx = (CUcontext)(uintptr_t)(0x1000 + current_dev);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *d)
{
    COUNT("cuCtxGetDevice");
    *d = current_dev;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice_v2(CUdevice *d, CUcontext ctx)
{
    *d = ctx ? (int)((uintptr_t)ctx - 0x1000) : current_dev;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem(unsigned *bytes, CUdevice d)
{
    (void)d;
    *bytes = 0xffffffffu;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d)
{
    COUNT("cuDeviceTotalMem_v2");
    if (d < 0 || d >= n_devices)
        return CUDA_ERROR_INVALID_VALUE;
    *bytes = total_bytes;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemGetInfo(unsigned *free_bytes, unsigned *total)
{
    *free_bytes = *total = 0xffffffffu;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    COUNT("cuMemGetInfo_v2");
    *total = total_bytes;
    *free_bytes = total_bytes - atomic_load(&gpu->used[current_dev]);
    return CUDA_SUCCESS;
}

/* The legacy 32-bit entry points, which the interposer leaves alone. */
EXPORT CUresult cuMemAlloc(unsigned *dptr, unsigned n)
{
    COUNT("cuMemAlloc");
    (void)n;
    *dptr = 0x1000;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree(unsigned dptr)
{
    (void)dptr;
    COUNT("cuMemFree");
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t n)
{
    COUNT("cuMemAlloc_v2");
    if (n == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return take(current_dev, n, dptr);
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t n, unsigned flags)
{
    (void)flags;
    COUNT("cuMemAllocManaged");
    if (n == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return take(current_dev, n, dptr);
}

EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t w, size_t h,
                                   unsigned elem)
{
    (void)elem;
    COUNT("cuMemAllocPitch_v2");
    if (!w || !h)
        return CUDA_ERROR_INVALID_VALUE;
    *pitch = (w + 511) & ~(size_t)511;
    return take(current_dev, (uint64_t)*pitch * h, dptr);
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
    CUresult r;

    COUNT("cuMemFree_v2");
    r = give(p);
    if (r != CUDA_SUCCESS)
        COUNT("cuMemFree_v2.invalid");
    return r;
}

static CUresult alloc_async(CUdeviceptr *dptr, size_t n)
{
    if (n == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return take(current_dev, n, dptr);
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t n, CUstream s)
{
    (void)s;
    COUNT("cuMemAllocAsync");
    return alloc_async(dptr, n);
}

EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t n, CUstream s)
{
    (void)s;
    COUNT("cuMemAllocAsync_ptsz");
    return alloc_async(dptr, n);
}

/* Pools: handles encode the pool's location so allocations from it land on its device. */
struct fake_pool {
    int type;
    int dev;
};

EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    struct fake_pool *p = malloc(sizeof(*p));

    COUNT("cuMemPoolCreate");
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    p->type = props->location.type;
    p->dev = props->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? props->location.id : -1;
    *pool = (CUmemoryPool)p;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    COUNT("cuMemPoolDestroy");
    free(pool);
    return CUDA_SUCCESS;
}

static struct fake_pool default_pools[MAX_DEV];

EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice d)
{
    default_pools[d].type = CU_MEM_LOCATION_TYPE_DEVICE;
    default_pools[d].dev = d;
    *pool = (CUmemoryPool)&default_pools[d];
    return CUDA_SUCCESS;
}

/* Host-pool allocations are host memory: counted apart, never on a device. */
static _Atomic uint64_t host_pool_bytes;

static CUresult alloc_from_pool(CUdeviceptr *dptr, size_t n, CUmemoryPool pool)
{
    struct fake_pool *p = (struct fake_pool *)pool;

    if (n == 0 || !p)
        return CUDA_ERROR_INVALID_VALUE;
    if (p->dev < 0) {
        atomic_fetch_add(&host_pool_bytes, n);
        *dptr = UINT64_C(0x10000000) + atomic_load(&host_pool_bytes);
        return CUDA_SUCCESS;
    }
    return take(p->dev, n, dptr);
}

EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t n, CUmemoryPool pool, CUstream s)
{
    (void)s;
    COUNT("cuMemAllocFromPoolAsync");
    return alloc_from_pool(dptr, n, pool);
}

EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t n, CUmemoryPool pool,
                                             CUstream s)
{
    (void)s;
    COUNT("cuMemAllocFromPoolAsync_ptsz");
    return alloc_from_pool(dptr, n, pool);
}

static CUresult free_async(CUdeviceptr p)
{
    if (p >= UINT64_C(0x10000000) && p < UINT64_C(0x7f0000000000))
        return CUDA_SUCCESS; /* host pool */
    return give(p);
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
    (void)s;
    COUNT("cuMemFreeAsync");
    return free_async(p);
}

EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s)
{
    (void)s;
    COUNT("cuMemFreeAsync_ptsz");
    return free_async(p);
}

/* VMM: a handle is the address of its simulated block (device) or a host token. */
EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t n,
                            const CUmemAllocationProp *prop, unsigned long long flags)
{
    CUdeviceptr addr;
    CUresult r;

    (void)flags;
    COUNT("cuMemCreate");
    if (!prop || n == 0 || (n & 0x1fffff))
        return CUDA_ERROR_INVALID_VALUE;
    if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
        *h = UINT64_C(0x20000000) + n;
        return CUDA_SUCCESS;
    }
    r = take(prop->location.id, n, &addr);
    if (r == CUDA_SUCCESS)
        *h = addr;
    return r;
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle h)
{
    COUNT("cuMemRelease");
    if (h < UINT64_C(0x7f0000000000))
        return CUDA_SUCCESS;
    return give(h);
}

EXPORT CUresult cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *prop,
                                              int option)
{
    (void)prop;
    (void)option;
    *g = 2 << 20;
    return CUDA_SUCCESS;
}

/* Arrays: the fake charges exactly what the interposer estimates for simple formats. */
EXPORT CUresult cuArrayCreate_v2(CUarray *h, const CUDA_ARRAY_DESCRIPTOR *d)
{
    CUdeviceptr addr;
    CUresult r;

    COUNT("cuArrayCreate_v2");
    r = take(current_dev, (uint64_t)d->Width * (d->Height ? d->Height : 1) * d->NumChannels * 4,
             &addr);
    if (r == CUDA_SUCCESS)
        *h = (CUarray)(uintptr_t)addr;
    return r;
}

EXPORT CUresult cuArray3DCreate_v2(CUarray *h, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    CUdeviceptr addr;
    CUresult r;

    COUNT("cuArray3DCreate_v2");
    r = take(current_dev,
             (uint64_t)d->Width * (d->Height ? d->Height : 1) * (d->Depth ? d->Depth : 1) *
                 d->NumChannels * 4,
             &addr);
    if (r == CUDA_SUCCESS)
        *h = (CUarray)(uintptr_t)addr;
    return r;
}

EXPORT CUresult cuArrayDestroy(CUarray h)
{
    COUNT("cuArrayDestroy");
    return give((uint64_t)(uintptr_t)h);
}

EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *h, const CUDA_ARRAY3D_DESCRIPTOR *d,
                                       unsigned levels)
{
    CUdeviceptr addr;
    CUresult r;

    (void)levels;
    COUNT("cuMipmappedArrayCreate");
    r = take(current_dev, (uint64_t)d->Width * (d->Height ? d->Height : 1) * 8, &addr);
    if (r == CUDA_SUCCESS)
        *h = (CUmipmappedArray)(uintptr_t)addr;
    return r;
}

EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray h)
{
    COUNT("cuMipmappedArrayDestroy");
    return give((uint64_t)(uintptr_t)h);
}

/* Launches: only counted, to tell the default and per-thread variants apart. */
EXPORT CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned shm, CUstream s, void **args,
                               void **extra)
{
    (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shm, (void)s;
    (void)args, (void)extra;
    COUNT("cuLaunchKernel");
    return CUDA_SUCCESS;
}

EXPORT CUresult cuLaunchKernel_ptsz(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                    unsigned by, unsigned bz, unsigned shm, CUstream s, void **args,
                                    void **extra)
{
    (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shm, (void)s;
    (void)args, (void)extra;
    COUNT("cuLaunchKernel_ptsz");
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGetExportTable(const void **table, const void *id)
{
    (void)id;
    *table = NULL;
    COUNT("cuGetExportTable");
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* Stands in for every function a runtime may ask for that the fake does not simulate. */
static CUresult not_supported(void)
{
    COUNT("not_supported");
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* ---- cuGetProcAddress --------------------------------------------------------------------------- */

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags);
EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                    int *status);

/* Aliases: the same behaviour at another address (FAKE_CUDA_DISTINCT_PTRS). */
static CUresult alias_cuMemAlloc_v2(CUdeviceptr *dptr, size_t n)
{
    COUNT("alias");
    return cuMemAlloc_v2(dptr, n);
}

static CUresult alias_cuMemFree_v2(CUdeviceptr p)
{
    COUNT("alias");
    return cuMemFree_v2(p);
}

static CUresult alias_cuMemGetInfo_v2(size_t *f, size_t *t)
{
    COUNT("alias");
    return cuMemGetInfo_v2(f, t);
}

static CUresult alias_cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t n, CUstream s)
{
    COUNT("alias");
    return cuMemAllocAsync_ptsz(dptr, n, s);
}

static CUresult alias_cuMemCreate(CUmemGenericAllocationHandle *h, size_t n,
                                  const CUmemAllocationProp *prop, unsigned long long flags)
{
    COUNT("alias");
    return cuMemCreate(h, n, prop, flags);
}

struct variant {
    const char *base;
    const char *name;
    int since;
    bool ptsz;
    void *fn;
    void *alias;
};

#define V(b, n, s, p)                \
    {                                \
        b, #n, s, p, (void *)n, NULL \
    }
#define VA(b, n, s, p)                            \
    {                                             \
        b, #n, s, p, (void *)n, (void *)alias_##n \
    }
static const struct variant variants[] = {
    V("cuInit", cuInit, 2000, false),
    V("cuDriverGetVersion", cuDriverGetVersion, 2020, false),
    V("cuDeviceGet", cuDeviceGet, 2000, false),
    V("cuDeviceGetCount", cuDeviceGetCount, 2000, false),
    V("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain, 7000, false),
    V("cuCtxSetCurrent", cuCtxSetCurrent, 4000, false),
    V("cuCtxGetCurrent", cuCtxGetCurrent, 4000, false),
    V("cuCtxGetDevice", cuCtxGetDevice, 2000, false),
    V("cuCtxGetDevice", cuCtxGetDevice_v2, 13000, false),
    V("cuDeviceTotalMem", cuDeviceTotalMem, 2000, false),
    V("cuDeviceTotalMem", cuDeviceTotalMem_v2, 3020, false),
    V("cuMemGetInfo", cuMemGetInfo, 2000, false),
    VA("cuMemGetInfo", cuMemGetInfo_v2, 3020, false),
    V("cuMemAlloc", cuMemAlloc, 2000, false),
    VA("cuMemAlloc", cuMemAlloc_v2, 3020, false),
    V("cuMemFree", cuMemFree, 2000, false),
    VA("cuMemFree", cuMemFree_v2, 3020, false),
    V("cuMemAllocPitch", cuMemAllocPitch_v2, 3020, false),
    V("cuMemAllocManaged", cuMemAllocManaged, 6000, false),
    V("cuMemAllocAsync", cuMemAllocAsync, 11020, false),
    VA("cuMemAllocAsync", cuMemAllocAsync_ptsz, 11020, true),
    V("cuMemAllocFromPoolAsync", cuMemAllocFromPoolAsync, 11020, false),
    V("cuMemAllocFromPoolAsync", cuMemAllocFromPoolAsync_ptsz, 11020, true),
    V("cuMemFreeAsync", cuMemFreeAsync, 11020, false),
    V("cuMemFreeAsync", cuMemFreeAsync_ptsz, 11020, true),
    V("cuMemPoolCreate", cuMemPoolCreate, 11020, false),
    V("cuMemPoolDestroy", cuMemPoolDestroy, 11020, false),
    V("cuDeviceGetDefaultMemPool", cuDeviceGetDefaultMemPool, 11020, false),
    VA("cuMemCreate", cuMemCreate, 10020, false),
    V("cuMemRelease", cuMemRelease, 10020, false),
    V("cuMemGetAllocationGranularity", cuMemGetAllocationGranularity, 10020, false),
    V("cuArrayCreate", cuArrayCreate_v2, 3020, false),
    V("cuArray3DCreate", cuArray3DCreate_v2, 3020, false),
    V("cuArrayDestroy", cuArrayDestroy, 2000, false),
    V("cuMipmappedArrayCreate", cuMipmappedArrayCreate, 5000, false),
    V("cuMipmappedArrayDestroy", cuMipmappedArrayDestroy, 5000, false),
    V("cuLaunchKernel", cuLaunchKernel, 4000, false),
    V("cuLaunchKernel", cuLaunchKernel_ptsz, 7000, true),
    V("cuGetExportTable", cuGetExportTable, 3000, false),
    V("cuGetProcAddress", cuGetProcAddress, 11030, false),
    V("cuGetProcAddress", cuGetProcAddress_v2, 12000, false),
};
#undef V
#undef VA

/* The driver's answer, without counting: also exported so tests can compare an interposed
 * answer with the real one. Returns the status; *ret is the function or NULL and *ret_name the
 * variant's exported name (NULL for the stub). */
EXPORT int fake_cuda_answer(const char *symbol, int version, cuuint64_t flags, void **ret,
                            const char **ret_name);

int fake_cuda_answer(const char *symbol, int version, cuuint64_t flags, void **ret,
                     const char **ret_name)
{
    const struct variant *best = NULL;
    bool known = false;
    bool per_thread = flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;

    *ret = NULL;
    *ret_name = NULL;
    if (!symbol || !symbol[0])
        return CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
        const struct variant *v = &variants[i];
        bool has_ptsz = false;

        if (strcmp(v->base, symbol) != 0)
            continue;
        known = true;
        if (v->since > version)
            continue;
        /* A per-thread request takes the _ptsz variant where one exists. */
        for (size_t j = 0; j < sizeof(variants) / sizeof(variants[0]); j++)
            has_ptsz |= strcmp(variants[j].base, symbol) == 0 && variants[j].ptsz &&
                        variants[j].since <= version;
        if (v->ptsz != (per_thread && has_ptsz))
            continue;
        if (!best || v->since > best->since)
            best = v;
    }
    if (best) {
        *ret = distinct_ptrs && best->alias ? best->alias : best->fn;
        *ret_name = best->name;
        return CU_GET_PROC_ADDRESS_SUCCESS;
    }
    if (known)
        return CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    /* Any other cu* name a runtime asks for exists in a real driver: answer with a stub. */
    if (strncmp(symbol, "cu", 2) == 0) {
        *ret = (void *)not_supported;
        return CU_GET_PROC_ADDRESS_SUCCESS;
    }
    return CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                             int *status)
{
    const char *name;
    int st;

    COUNT("cuGetProcAddress_v2");
    if (!pfn)
        return CUDA_ERROR_INVALID_VALUE;
    if (version > 13000)
        return CUDA_ERROR_INVALID_VALUE; /* newer than this driver */
    st = fake_cuda_answer(symbol, version, flags, pfn, &name);
    if (status)
        *status = st;
    return st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND ? CUDA_ERROR_NOT_FOUND : CUDA_SUCCESS;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    const char *name;
    int st;

    COUNT("cuGetProcAddress");
    if (!pfn)
        return CUDA_ERROR_INVALID_VALUE;
    if (version > 13000)
        return CUDA_ERROR_INVALID_VALUE;
    st = fake_cuda_answer(symbol, version, flags, pfn, &name);
    return st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND ? CUDA_ERROR_NOT_FOUND : CUDA_SUCCESS;
}
