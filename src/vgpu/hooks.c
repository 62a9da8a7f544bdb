/*
 * vgpu/hooks.c: libfatia-vgpu.so, the LD_PRELOAD interposer that caps a slice's device memory.
 *
 * Model. A CUDA program reaches the driver three ways, and each is covered:
 *   1. symbols bound at load time (a program linked with -lcuda): this library exports the
 *      wrapped functions under their driver names, and a preloaded object comes first;
 *   2. dlsym(handle, "cu...") on the driver (the CUDA runtime asks for cuGetProcAddress_v2 this
 *      way; other libraries ask for cuLaunchKernel, cuMemAlloc_v2, ...): dlsym itself is
 *      exported here and answers fatia's hook for exactly the names wrapped;
 *   3. cuGetProcAddress (v1, 4 arguments) and cuGetProcAddress_v2 (5 arguments): the hooks call
 *      the driver's own function first, then swap the pointer it returned when it is the address
 *      of a wrapped function. The driver thus still picks the variant for the requested version
 *      and flags (the _ptsz per-thread-stream variants included), and each variant has its own
 *      hook that calls that same variant: ABI and stream semantics stay what the caller asked.
 *      The runtime re-fetches "cuGetProcAddress" itself at 11030 and 12000 and uses those
 *      pointers for every later lookup, so both answers are swapped for the hook of that ABI.
 *      If the driver ever answers with an address not exported under the variant's name, the
 *      variant is found from (name, version, flags) instead (name_fallback).
 *
 * What is charged (DESIGN §7: device memory allocated through the driver; contexts and driver
 * reservations are outside the cap): cuMemAlloc_v2, cuMemAllocPitch_v2 (pitch x height as
 * returned), cuMemAllocManaged, cuMemAllocAsync and cuMemAllocFromPoolAsync (and their _ptsz
 * variants, per allocation), cuMemCreate with a DEVICE location, and CUDA arrays (an estimate
 * from the descriptor). The matching frees subtract exactly what was charged. A request over the
 * cap returns CUDA_ERROR_OUT_OF_MEMORY, the one code PyTorch's allocator treats as "free the
 * cache and retry". cuMemGetInfo_v2, cuDeviceTotalMem_v2 and nvmlDeviceGetMemoryInfo(_v2) report
 * the cap as the total and the slice's usage as used.
 *
 * Invariants: a byte is reserved in the slice's budget before the driver is asked for it and is
 * returned if the driver fails; a free always reaches the driver, known pointer or not; the
 * process-local record of an allocation is removed before the driver frees it (so a thread that
 * gets the same address back at once cannot have its record removed by the freeing thread); with
 * no cap configured the library substitutes nothing anywhere (pure pass-through).
 *
 * Rejected: HAMi's name search that ignores version and flags (it hands the 5-argument hook to a
 * 4-argument caller and turns per-thread-stream calls into legacy-stream ones); forwarding
 * dlsym(RTLD_NEXT, ...) through a C call (the lookup would start after this library instead of
 * after the caller: the x86-64 entry below tail-jumps instead, as HAMi-core PR #315 does);
 * initializing on cuGetExportTable or calling the driver from a constructor (the CUDA 12.8 hang);
 * launch-rate limiting (a compute share): see docs/vgpu.md for why it is left out.
 */
#include "base/compat.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "vgpu/conffile.h"
#include "vgpu/config.h"
#include "vgpu/cuda_abi.h"
#include "vgpu/ptrmap.h"
#include "vgpu/region.h"
#include "vgpu/vlog.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- the wrapped functions ------------------------------------------------------------------ */

enum hook_id {
    H_cuMemAlloc_v2,
    H_cuMemAllocPitch_v2,
    H_cuMemAllocManaged,
    H_cuMemFree_v2,
    H_cuMemAllocAsync,
    H_cuMemAllocAsync_ptsz,
    H_cuMemAllocFromPoolAsync,
    H_cuMemAllocFromPoolAsync_ptsz,
    H_cuMemFreeAsync,
    H_cuMemFreeAsync_ptsz,
    H_cuMemPoolCreate,
    H_cuMemPoolDestroy,
    H_cuMemCreate,
    H_cuMemRelease,
    H_cuArrayCreate_v2,
    H_cuArray3DCreate_v2,
    H_cuArrayDestroy,
    H_cuMipmappedArrayCreate,
    H_cuMipmappedArrayDestroy,
    H_cuMemGetInfo_v2,
    H_cuDeviceTotalMem_v2,
    H_cuGetProcAddress,
    H_cuGetProcAddress_v2,
    H_CUDA_COUNT,
    H_nvmlDeviceGetMemoryInfo = H_CUDA_COUNT,
    H_nvmlDeviceGetMemoryInfo_v2,
    H_COUNT,
};

struct hook {
    const char *name; /* the exported (variant) name */
    const char *base; /* the name cuGetProcAddress is asked for */
    int since;        /* the first cudaVersion that returns this variant */
    bool ptsz;        /* the per-thread default stream variant */
    void *fn;         /* fatia's hook */
};

/* Forward declarations of the exported hooks, for the table. */
#define DECL(ret, name, args) EXPORT ret name args;
DECL(CUresult, cuMemAlloc_v2, (CUdeviceptr *, size_t))
DECL(CUresult, cuMemAllocPitch_v2, (CUdeviceptr *, size_t *, size_t, size_t, unsigned))
DECL(CUresult, cuMemAllocManaged, (CUdeviceptr *, size_t, unsigned))
DECL(CUresult, cuMemFree_v2, (CUdeviceptr))
DECL(CUresult, cuMemAllocAsync, (CUdeviceptr *, size_t, CUstream))
DECL(CUresult, cuMemAllocAsync_ptsz, (CUdeviceptr *, size_t, CUstream))
DECL(CUresult, cuMemAllocFromPoolAsync, (CUdeviceptr *, size_t, CUmemoryPool, CUstream))
DECL(CUresult, cuMemAllocFromPoolAsync_ptsz, (CUdeviceptr *, size_t, CUmemoryPool, CUstream))
DECL(CUresult, cuMemFreeAsync, (CUdeviceptr, CUstream))
DECL(CUresult, cuMemFreeAsync_ptsz, (CUdeviceptr, CUstream))
DECL(CUresult, cuMemPoolCreate, (CUmemoryPool *, const CUmemPoolProps *))
DECL(CUresult, cuMemPoolDestroy, (CUmemoryPool))
DECL(CUresult, cuMemCreate,
     (CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long))
DECL(CUresult, cuMemRelease, (CUmemGenericAllocationHandle))
DECL(CUresult, cuArrayCreate_v2, (CUarray *, const CUDA_ARRAY_DESCRIPTOR *))
DECL(CUresult, cuArray3DCreate_v2, (CUarray *, const CUDA_ARRAY3D_DESCRIPTOR *))
DECL(CUresult, cuArrayDestroy, (CUarray))
DECL(CUresult, cuMipmappedArrayCreate,
     (CUmipmappedArray *, const CUDA_ARRAY3D_DESCRIPTOR *, unsigned int))
DECL(CUresult, cuMipmappedArrayDestroy, (CUmipmappedArray))
DECL(CUresult, cuMemGetInfo_v2, (size_t *, size_t *))
DECL(CUresult, cuDeviceTotalMem_v2, (size_t *, CUdevice))
DECL(CUresult, cuGetProcAddress, (const char *, void **, int, cuuint64_t))
DECL(CUresult, cuGetProcAddress_v2, (const char *, void **, int, cuuint64_t, int *))
DECL(nvmlReturn_t, nvmlDeviceGetMemoryInfo, (nvmlDevice_t, nvmlMemory_t *))
DECL(nvmlReturn_t, nvmlDeviceGetMemoryInfo_v2, (nvmlDevice_t, nvmlMemory_v2_t *))
#undef DECL

#define HOOK(n, b, v, p) [H_##n] = {#n, b, v, p, (void *)n}
static const struct hook hooks[H_COUNT] = {
    HOOK(cuMemAlloc_v2, "cuMemAlloc", 3020, false),
    HOOK(cuMemAllocPitch_v2, "cuMemAllocPitch", 3020, false),
    HOOK(cuMemAllocManaged, "cuMemAllocManaged", 6000, false),
    HOOK(cuMemFree_v2, "cuMemFree", 3020, false),
    HOOK(cuMemAllocAsync, "cuMemAllocAsync", 11020, false),
    HOOK(cuMemAllocAsync_ptsz, "cuMemAllocAsync", 11020, true),
    HOOK(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 11020, false),
    HOOK(cuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync", 11020, true),
    HOOK(cuMemFreeAsync, "cuMemFreeAsync", 11020, false),
    HOOK(cuMemFreeAsync_ptsz, "cuMemFreeAsync", 11020, true),
    HOOK(cuMemPoolCreate, "cuMemPoolCreate", 11020, false),
    HOOK(cuMemPoolDestroy, "cuMemPoolDestroy", 11020, false),
    HOOK(cuMemCreate, "cuMemCreate", 10020, false),
    HOOK(cuMemRelease, "cuMemRelease", 10020, false),
    HOOK(cuArrayCreate_v2, "cuArrayCreate", 3020, false),
    HOOK(cuArray3DCreate_v2, "cuArray3DCreate", 3020, false),
    HOOK(cuArrayDestroy, "cuArrayDestroy", 2000, false),
    HOOK(cuMipmappedArrayCreate, "cuMipmappedArrayCreate", 5000, false),
    HOOK(cuMipmappedArrayDestroy, "cuMipmappedArrayDestroy", 5000, false),
    HOOK(cuMemGetInfo_v2, "cuMemGetInfo", 3020, false),
    HOOK(cuDeviceTotalMem_v2, "cuDeviceTotalMem", 3020, false),
    HOOK(cuGetProcAddress, "cuGetProcAddress", 11030, false),
    HOOK(cuGetProcAddress_v2, "cuGetProcAddress", 12000, false),
    HOOK(nvmlDeviceGetMemoryInfo, NULL, 0, false),
    HOOK(nvmlDeviceGetMemoryInfo_v2, NULL, 0, false),
};
#undef HOOK

/* ---- state ------------------------------------------------------------------------------------ */

typedef void *(*dlsym_fn)(void *, const char *);
/* Read by the dlsym entry below (assembly), hence not static. */
__attribute__((visibility("hidden"))) dlsym_fn fatia_vgpu_real_dlsym;

static void *real[H_COUNT];
static CUresult (*real_cuCtxGetDevice)(CUdevice *);
static nvmlReturn_t (*real_nvmlDeviceGetUUID)(nvmlDevice_t, char *, unsigned);
static nvmlReturn_t (*real_nvmlDeviceGetIndex)(nvmlDevice_t, unsigned *);

static struct fatia_vgpu_config cfg;
static _Atomic int cfg_state; /* 0: not read, 1: reading, 2: read */
static _Atomic int cuda_state, nvml_state, region_state;
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread bool in_init; /* re-entry from a constructor run by our own dlopen */

static struct fatia_vgpu_region region;
static struct fatia_vgpu_ptrmap allocs;
static bool region_broken; /* the slice's file is set but unusable: fail closed */
static _Atomic int64_t last_reclaim_ns;

/* Counters for the debug log and the tests: how swaps were decided. */
static _Atomic uint64_t n_swap_identity, n_swap_name;

static void *lookup_real_dlsym(void)
{
    void *p = fatia_vgpu_real_dlsym;

    if (p)
        return p;
    p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!p)
        p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    if (!p)
        p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.17"); /* aarch64 */
    fatia_vgpu_real_dlsym = (dlsym_fn)p;
    return p;
}

static const char *env_get(void *ctx, const char *name)
{
    (void)ctx;
    return getenv(name);
}

static void ensure_config(void)
{
    int expected = 0;

    if (atomic_load_explicit(&cfg_state, memory_order_acquire) == 2)
        return;
    if (!atomic_compare_exchange_strong(&cfg_state, &expected, 1)) {
        /* Another thread is parsing (a few microseconds): wait for it. */
        while (atomic_load(&cfg_state) != 2)
            sched_yield();
        return;
    }
    /* The fixed file, when there is one, is the whole configuration (conffile.h): the tenant
     * controls the environment, not the read-only file. */
    if (fatia_vgpu_config_load_file(&cfg, FATIA_VGPU_CONF_PATH) == -ENOENT)
        fatia_vgpu_config_load(&cfg, env_get, NULL);
    fatia_vgpu_log_setup(cfg.log_level, cfg.log_file);
    fatia_vgpu_ptrmap_init(&allocs);
    if (cfg.n_errors)
        VLOG(FATIA_VGPU_LOG_ERROR, "%d configuration error(s), first: %s", cfg.n_errors,
             cfg.first_error);
    atomic_store_explicit(&cfg_state, 2, memory_order_release);
}

static void resolve_cuda(void)
{
    dlsym_fn ds = (dlsym_fn)lookup_real_dlsym();
    void *h;

    if (!ds)
        return;
    h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) {
        VLOG(FATIA_VGPU_LOG_ERROR, "cannot load libcuda.so.1: %s", dlerror());
        return;
    }
    for (int i = 0; i < H_CUDA_COUNT; i++)
        real[i] = ds(h, hooks[i].name);
    real_cuCtxGetDevice = (CUresult(*)(CUdevice *))ds(h, "cuCtxGetDevice");
    VLOG(FATIA_VGPU_LOG_DEBUG, "driver resolved: cuGetProcAddress_v2 %p, cuMemAlloc_v2 %p",
         real[H_cuGetProcAddress_v2], real[H_cuMemAlloc_v2]);
}

static void resolve_nvml(void)
{
    dlsym_fn ds = (dlsym_fn)lookup_real_dlsym();
    void *h;

    if (!ds)
        return;
    h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        h = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (!h)
        return;
    for (int i = H_CUDA_COUNT; i < H_COUNT; i++)
        real[i] = ds(h, hooks[i].name);
    real_nvmlDeviceGetUUID =
        (nvmlReturn_t(*)(nvmlDevice_t, char *, unsigned))ds(h, "nvmlDeviceGetUUID");
    real_nvmlDeviceGetIndex =
        (nvmlReturn_t(*)(nvmlDevice_t, unsigned *))ds(h, "nvmlDeviceGetIndex");
}

static void open_region(void)
{
    char why[256] = "";
    int r;

    r = fatia_vgpu_region_open(&region, cfg.shared_file, cfg.limit, 0, why, sizeof(why));
    if (r < 0) {
        /* Fail closed: the slice's budget cannot be seen, so nothing can be given. */
        VLOG(FATIA_VGPU_LOG_ERROR,
             "slice accounting unavailable (%s): refusing allocations on "
             "capped devices",
             why);
        region_broken = true;
        return;
    }
    if (cfg.from_file) {
        /* The accounting file is writable by the slice's processes, its header included: the
         * read-only configuration file's caps are the ones that hold. */
        if (region.limits_differ)
            VLOG(FATIA_VGPU_LOG_WARNING, "caps in '%s' differ from %s; using the latter",
                 cfg.shared_file, FATIA_VGPU_CONF_PATH);
        memcpy(region.limit, cfg.limit, sizeof(region.limit));
    } else if (region.limits_differ) {
        VLOG(FATIA_VGPU_LOG_WARNING, "caps in '%s' differ from the environment; using the file's",
             cfg.shared_file);
    }
}

/* Runs fn once, under init_lock; a re-entry from the same thread returns at once. */
static void once(_Atomic int *state, void (*fn)(void))
{
    if (atomic_load_explicit(state, memory_order_acquire) == 2 || in_init)
        return;
    pthread_mutex_lock(&init_lock);
    if (atomic_load(state) != 2) {
        in_init = true;
        fn();
        in_init = false;
        atomic_store_explicit(state, 2, memory_order_release);
    }
    pthread_mutex_unlock(&init_lock);
}

static inline void ensure_cuda(void)
{
    ensure_config();
    once(&cuda_state, resolve_cuda);
}

static inline void ensure_region(void)
{
    once(&region_state, open_region);
}

static void after_fork_child(void)
{
    /* The child holds no device memory and must claim its own slot. */
    fatia_vgpu_ptrmap_after_fork(&allocs);
    if (atomic_load(&region_state) == 2 && !region_broken)
        fatia_vgpu_region_after_fork(&region);
}

__attribute__((constructor)) static void vgpu_init(void)
{
    lookup_real_dlsym();
    ensure_config();
    pthread_atfork(NULL, NULL, after_fork_child);
}

/* ---- accounting helpers ----------------------------------------------------------------------- */

static inline bool capped(int dev)
{
    return dev >= 0 && dev < FATIA_VGPU_MAX_DEVICES && cfg.limit[dev] != FATIA_VGPU_NO_LIMIT;
}

static int current_device(void)
{
    CUdevice d;

    if (!real_cuCtxGetDevice || real_cuCtxGetDevice(&d) != CUDA_SUCCESS)
        return -1;
    return d;
}

static uint64_t limit_of(int dev)
{
    return region_state == 2 && !region_broken ? region.limit[dev] : cfg.limit[dev];
}

/* 0, or -ENOMEM when n bytes on dev would pass the slice's cap. */
static int reserve(int dev, uint64_t n, const char *what)
{
    ensure_region();
    if (!region_broken && fatia_vgpu_region_reserve(&region, dev, n) == 0)
        return 0;
    VLOG(FATIA_VGPU_LOG_INFO,
         "%s: %llu bytes on device %d over the cap (%llu of %llu in use): "
         "CUDA_ERROR_OUT_OF_MEMORY",
         what, (unsigned long long)n, dev,
         (unsigned long long)(region_broken ? 0 : fatia_vgpu_region_used(&region, dev)),
         (unsigned long long)limit_of(dev));
    return -ENOMEM;
}

static void unreserve(int dev, uint64_t n)
{
    if (!region_broken)
        fatia_vgpu_region_release(&region, dev, n);
}

/* Records a successful allocation; on failure the caller frees it and returns OOM. */
static int track(uint32_t kind, uint64_t key, uint64_t size, int dev)
{
    struct fatia_vgpu_entry e = {.key = key, .size = size, .dev = dev, .kind = kind};
    struct fatia_vgpu_entry old;
    int r = fatia_vgpu_ptrmap_put(&allocs, &e, &old);

    if (r == 1) {
        /* The driver reused a key whose free we did not see (a legacy entry point). */
        VLOG(FATIA_VGPU_LOG_DEBUG, "key %#llx reused, releasing its old %llu bytes",
             (unsigned long long)key, (unsigned long long)old.size);
        unreserve(old.dev, old.size);
    }
    return r < 0 ? r : 0;
}

/* After a successful free: subtract what the entry was charged. */
static void untrack_done(const struct fatia_vgpu_entry *e)
{
    if (e->dev >= 0 && e->size)
        unreserve(e->dev, e->size);
}

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Reclaims dead processes' bytes at most every 100 ms, for the usage queries. */
static void reclaim_sometimes(void)
{
    int64_t now = now_ns(), last = atomic_load(&last_reclaim_ns);

    if (now - last < 100000000 || !atomic_compare_exchange_strong(&last_reclaim_ns, &last, now))
        return;
    fatia_vgpu_region_reclaim(&region);
}

/* The slice's view of a device: total = min(cap, physical), used = slice usage. */
static void slice_view(int dev, uint64_t phys_total, uint64_t *ret_total, uint64_t *ret_used)
{
    uint64_t limit, used = 0;

    ensure_region();
    limit = limit_of(dev);
    if (!region_broken) {
        reclaim_sometimes();
        used = fatia_vgpu_region_used(&region, dev);
    }
    *ret_total = limit < phys_total ? limit : phys_total;
    *ret_used = used < *ret_total ? used : *ret_total;
}

static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    if (a && b > UINT64_MAX / a)
        return UINT64_MAX;
    return a * b;
}

/* ---- device pointers -------------------------------------------------------------------------- */

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);

/* The common path: charge n bytes on the current device, call, record. */
#define CHARGE_CALL(what, dev, n, call, dptr)                          \
    do {                                                               \
        CUresult r_;                                                   \
        if (!capped(dev))                                              \
            return (call);                                             \
        if ((n) == 0)                                                  \
            return (call);                                             \
        if (reserve((dev), (n), (what)) < 0)                           \
            return CUDA_ERROR_OUT_OF_MEMORY;                           \
        r_ = (call);                                                   \
        if (r_ != CUDA_SUCCESS) {                                      \
            unreserve((dev), (n));                                     \
            return r_;                                                 \
        }                                                              \
        if (track(FATIA_VGPU_KIND_PTR, *(dptr), (n), (dev)) < 0) {     \
            ((CUresult(*)(CUdeviceptr))real[H_cuMemFree_v2])(*(dptr)); \
            unreserve((dev), (n));                                     \
            return CUDA_ERROR_OUT_OF_MEMORY;                           \
        }                                                              \
        return r_;                                                     \
    } while (0)

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t n)
{
    CUresult (*fn)(CUdeviceptr *, size_t);
    int dev;

    ensure_cuda();
    fn = (CUresult(*)(CUdeviceptr *, size_t))real[H_cuMemAlloc_v2];
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!cfg.any_limit || !dptr)
        return fn(dptr, n);
    dev = current_device();
    CHARGE_CALL("cuMemAlloc", dev, (uint64_t)n, fn(dptr, n), dptr);
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t n, unsigned flags)
{
    CUresult (*fn)(CUdeviceptr *, size_t, unsigned);
    int dev;

    ensure_cuda();
    fn = (CUresult(*)(CUdeviceptr *, size_t, unsigned))real[H_cuMemAllocManaged];
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!cfg.any_limit || !dptr)
        return fn(dptr, n, flags);
    dev = current_device();
    CHARGE_CALL("cuMemAllocManaged", dev, (uint64_t)n, fn(dptr, n, flags), dptr);
}

EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                                   unsigned elem)
{
    CUresult (*fn)(CUdeviceptr *, size_t *, size_t, size_t, unsigned);
    uint64_t est, actual;
    int dev;
    CUresult r;

    ensure_cuda();
    fn = (CUresult(*)(CUdeviceptr *, size_t *, size_t, size_t, unsigned))real[H_cuMemAllocPitch_v2];
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!cfg.any_limit || !dptr || !pitch || !width || !height)
        return fn(dptr, pitch, width, height, elem);
    dev = current_device();
    if (!capped(dev))
        return fn(dptr, pitch, width, height, elem);
    /* The pitch is known only afterwards: reserve a 512-byte-aligned estimate, then settle. */
    est = mul_sat((width + 511) & ~(uint64_t)511, height);
    if (reserve(dev, est, "cuMemAllocPitch") < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    r = fn(dptr, pitch, width, height, elem);
    if (r != CUDA_SUCCESS) {
        unreserve(dev, est);
        return r;
    }
    actual = mul_sat(*pitch, height);
    if (actual > est && reserve(dev, actual - est, "cuMemAllocPitch") < 0) {
        ((CUresult(*)(CUdeviceptr))real[H_cuMemFree_v2])(*dptr);
        unreserve(dev, est);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (actual < est)
        unreserve(dev, est - actual);
    if (track(FATIA_VGPU_KIND_PTR, *dptr, actual, dev) < 0) {
        ((CUresult(*)(CUdeviceptr))real[H_cuMemFree_v2])(*dptr);
        unreserve(dev, actual);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return r;
}

/* Frees through fn(ptr, ...): forget the record first, subtract after the driver's success. */
#define FREE_CALL(kind, key, call)                                  \
    do {                                                            \
        struct fatia_vgpu_entry e_;                                 \
        bool had_;                                                  \
        CUresult r_;                                                \
        if (!cfg.any_limit)                                         \
            return (call);                                          \
        had_ = fatia_vgpu_ptrmap_take(&allocs, (kind), (key), &e_); \
        r_ = (call);                                                \
        if (had_) {                                                 \
            if (r_ == CUDA_SUCCESS)                                 \
                untrack_done(&e_);                                  \
            else                                                    \
                (void)fatia_vgpu_ptrmap_put(&allocs, &e_, NULL);    \
        }                                                           \
        return r_;                                                  \
    } while (0)

EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
    CUresult (*fn)(CUdeviceptr);

    ensure_cuda();
    fn = (CUresult(*)(CUdeviceptr))real[H_cuMemFree_v2];
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    FREE_CALL(FATIA_VGPU_KIND_PTR, p, fn(p));
}

/* ---- stream-ordered allocation and pools ------------------------------------------------------- */

static CUresult alloc_async(enum hook_id id, CUdeviceptr *dptr, size_t n, CUstream s)
{
    CUresult (*fn)(CUdeviceptr *, size_t, CUstream);
    int dev;

    ensure_cuda();
    fn = (CUresult(*)(CUdeviceptr *, size_t, CUstream))real[id];
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!cfg.any_limit || !dptr)
        return fn(dptr, n, s);
    dev = current_device();
    CHARGE_CALL("cuMemAllocAsync", dev, (uint64_t)n, fn(dptr, n, s), dptr);
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t n, CUstream s)
{
    return alloc_async(H_cuMemAllocAsync, dptr, n, s);
}

EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t n, CUstream s)
{
    return alloc_async(H_cuMemAllocAsync_ptsz, dptr, n, s);
}

static CUresult alloc_from_pool(enum hook_id id, CUdeviceptr *dptr, size_t n, CUmemoryPool pool,
                                CUstream s)
{
    CUresult (*fn)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
    struct fatia_vgpu_entry pe;
    int dev;

    ensure_cuda();
    fn = (CUresult(*)(CUdeviceptr *, size_t, CUmemoryPool, CUstream))real[id];
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!cfg.any_limit || !dptr)
        return fn(dptr, n, pool, s);
    /* A pool created here knows its device (or is host memory, -1); any other pool is a device's
     * default or current pool: the current device's. */
    if (fatia_vgpu_ptrmap_get(&allocs, FATIA_VGPU_KIND_POOL, (uint64_t)(uintptr_t)pool, &pe))
        dev = pe.dev;
    else
        dev = current_device();
    CHARGE_CALL("cuMemAllocFromPoolAsync", dev, (uint64_t)n, fn(dptr, n, pool, s), dptr);
}

EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t n, CUmemoryPool pool, CUstream s)
{
    return alloc_from_pool(H_cuMemAllocFromPoolAsync, dptr, n, pool, s);
}

EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t n, CUmemoryPool pool,
                                             CUstream s)
{
    return alloc_from_pool(H_cuMemAllocFromPoolAsync_ptsz, dptr, n, pool, s);
}

static CUresult free_async(enum hook_id id, CUdeviceptr p, CUstream s)
{
    CUresult (*fn)(CUdeviceptr, CUstream);

    ensure_cuda();
    fn = (CUresult(*)(CUdeviceptr, CUstream))real[id];
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    FREE_CALL(FATIA_VGPU_KIND_PTR, p, fn(p, s));
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
    return free_async(H_cuMemFreeAsync, p, s);
}

EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s)
{
    return free_async(H_cuMemFreeAsync_ptsz, p, s);
}

EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    CUresult (*fn)(CUmemoryPool *, const CUmemPoolProps *);
    CUresult r;
    int dev;

    ensure_cuda();
    fn = (CUresult(*)(CUmemoryPool *, const CUmemPoolProps *))real[H_cuMemPoolCreate];
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    r = fn(pool, props);
    if (r != CUDA_SUCCESS || !cfg.any_limit || !pool || !props)
        return r;
    switch (props->location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        dev = props->location.id;
        break;
    case CU_MEM_LOCATION_TYPE_NONE: /* a managed pool with no preferred location */
        dev = current_device();
        break;
    default: /* host memory: not device memory, not charged */
        dev = -1;
        break;
    }
    (void)track(FATIA_VGPU_KIND_POOL, (uint64_t)(uintptr_t)*pool, 0, dev);
    return r;
}

EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    CUresult (*fn)(CUmemoryPool);

    ensure_cuda();
    fn = (CUresult(*)(CUmemoryPool))real[H_cuMemPoolDestroy];
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    FREE_CALL(FATIA_VGPU_KIND_POOL, (uint64_t)(uintptr_t)pool, fn(pool));
}

/* ---- virtual memory management (PyTorch's expandable segments) --------------------------------- */

EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t n,
                            const CUmemAllocationProp *prop, unsigned long long flags)
{
    CUresult (*fn)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                   unsigned long long);
    CUresult r;
    int dev;

    ensure_cuda();
    fn = (CUresult(*)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                      unsigned long long))real[H_cuMemCreate];
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    /* Only device memory is charged; host and NUMA locations pass (HAMi-core#169: never read a
     * device id that the location type does not define). */
    if (!cfg.any_limit || !handle || !prop || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return fn(handle, n, prop, flags);
    dev = prop->location.id;
    if (!capped(dev) || n == 0)
        return fn(handle, n, prop, flags);
    if (reserve(dev, n, "cuMemCreate") < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    r = fn(handle, n, prop, flags);
    if (r != CUDA_SUCCESS) {
        unreserve(dev, n);
        return r;
    }
    if (track(FATIA_VGPU_KIND_HANDLE, *handle, n, dev) < 0) {
        ((CUresult(*)(CUmemGenericAllocationHandle))real[H_cuMemRelease])(*handle);
        unreserve(dev, n);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return r;
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    CUresult (*fn)(CUmemGenericAllocationHandle);

    ensure_cuda();
    fn = (CUresult(*)(CUmemGenericAllocationHandle))real[H_cuMemRelease];
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    FREE_CALL(FATIA_VGPU_KIND_HANDLE, handle, fn(handle));
}

/* ---- arrays ------------------------------------------------------------------------------------ */

static uint64_t format_bytes(int format)
{
    switch (format) {
    case 0x01: /* UNSIGNED_INT8 */
    case 0x08: /* SIGNED_INT8 */
    case 0xc0: /* UNORM_INT8X1 */
    case 0xc6: /* SNORM_INT8X1 */
        return 1;
    case 0x02: /* UNSIGNED_INT16 */
    case 0x09: /* SIGNED_INT16 */
    case 0x10: /* HALF */
    case 0xc1: /* UNORM_INT8X2 */
    case 0xc3: /* UNORM_INT16X1 */
    case 0xc7: /* SNORM_INT8X2 */
    case 0xc9: /* SNORM_INT16X1 */
        return 2;
    case 0xc4: /* UNORM_INT16X2 */
    case 0xca: /* SNORM_INT16X2 */
        return 4;
    case 0xc5: /* UNORM_INT16X4 */
    case 0xcb: /* SNORM_INT16X4 */
        return 8;
    default: /* 32-bit formats, packed and planar video formats: 4 bytes is an upper bound */
        return 4;
    }
}

static uint64_t array_bytes(uint64_t w, uint64_t h, uint64_t d, int format, unsigned channels,
                            unsigned flags)
{
    uint64_t n = mul_sat(w ? w : 1, h ? h : 1);

    if (flags & CUDA_ARRAY3D_CUBEMAP)
        d = d ? d * 6 : 6;
    n = mul_sat(n, d ? d : 1);
    n = mul_sat(n, channels ? channels : 1);
    return mul_sat(n, format_bytes(format));
}

static CUresult array_create(enum hook_id id, uint32_t kind, void *ret_handle, uint64_t bytes,
                             CUresult (*call)(void *, const void *, unsigned), const void *desc,
                             unsigned levels)
{
    CUresult r;
    int dev;

    ensure_cuda();
    if (!real[id])
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!cfg.any_limit || !ret_handle || !desc)
        return call(ret_handle, desc, levels);
    dev = current_device();
    if (!capped(dev))
        return call(ret_handle, desc, levels);
    if (reserve(dev, bytes, hooks[id].base) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    r = call(ret_handle, desc, levels);
    if (r != CUDA_SUCCESS) {
        unreserve(dev, bytes);
        return r;
    }
    if (track(kind, (uint64_t)(uintptr_t) * (void **)ret_handle, bytes, dev) < 0) {
        unreserve(dev, bytes);
        return CUDA_ERROR_OUT_OF_MEMORY; /* rare: the array stays, uncharged */
    }
    return r;
}

static CUresult call_array(void *h, const void *d, unsigned levels)
{
    (void)levels;
    return ((CUresult(*)(CUarray *, const CUDA_ARRAY_DESCRIPTOR *))real[H_cuArrayCreate_v2])(h, d);
}

static CUresult call_array3d(void *h, const void *d, unsigned levels)
{
    (void)levels;
    return ((CUresult(*)(CUarray *, const CUDA_ARRAY3D_DESCRIPTOR *))real[H_cuArray3DCreate_v2])(h,
                                                                                                 d);
}

static CUresult call_mipmap(void *h, const void *d, unsigned levels)
{
    return ((CUresult(*)(CUmipmappedArray *, const CUDA_ARRAY3D_DESCRIPTOR *,
                         unsigned))real[H_cuMipmappedArrayCreate])(h, d, levels);
}

EXPORT CUresult cuArrayCreate_v2(CUarray *h, const CUDA_ARRAY_DESCRIPTOR *d)
{
    uint64_t n = d ? array_bytes(d->Width, d->Height, 1, d->Format, d->NumChannels, 0) : 0;

    return array_create(H_cuArrayCreate_v2, FATIA_VGPU_KIND_ARRAY, h, n, call_array, d, 0);
}

EXPORT CUresult cuArray3DCreate_v2(CUarray *h, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    uint64_t n =
        d ? array_bytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels, d->Flags) : 0;

    return array_create(H_cuArray3DCreate_v2, FATIA_VGPU_KIND_ARRAY, h, n, call_array3d, d, 0);
}

EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *h, const CUDA_ARRAY3D_DESCRIPTOR *d,
                                       unsigned levels)
{
    uint64_t n = 0;

    if (d) {
        uint64_t w = d->Width, ht = d->Height, dp = d->Depth;
        bool layered = d->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP);

        for (unsigned l = 0; l < (levels ? levels : 1) && l < 64; l++) {
            n += array_bytes(w, ht, dp, d->Format, d->NumChannels, d->Flags);
            w = w > 1 ? w / 2 : w;
            ht = ht > 1 ? ht / 2 : ht;
            if (!layered)
                dp = dp > 1 ? dp / 2 : dp;
        }
    }
    return array_create(H_cuMipmappedArrayCreate, FATIA_VGPU_KIND_MIPMAP, h, n, call_mipmap, d,
                        levels);
}

EXPORT CUresult cuArrayDestroy(CUarray h)
{
    CUresult (*fn)(CUarray);

    ensure_cuda();
    fn = (CUresult(*)(CUarray))real[H_cuArrayDestroy];
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    FREE_CALL(FATIA_VGPU_KIND_ARRAY, (uint64_t)(uintptr_t)h, fn(h));
}

EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray h)
{
    CUresult (*fn)(CUmipmappedArray);

    ensure_cuda();
    fn = (CUresult(*)(CUmipmappedArray))real[H_cuMipmappedArrayDestroy];
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    FREE_CALL(FATIA_VGPU_KIND_MIPMAP, (uint64_t)(uintptr_t)h, fn(h));
}

/* ---- what the slice looks like ------------------------------------------------------------------ */

EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes)
{
    CUresult (*fn)(size_t *, size_t *);
    uint64_t total, used, free_now;
    CUresult r;
    int dev;

    ensure_cuda();
    fn = (CUresult(*)(size_t *, size_t *))real[H_cuMemGetInfo_v2];
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    r = fn(free_bytes, total_bytes);
    if (r != CUDA_SUCCESS || !cfg.any_limit || !free_bytes || !total_bytes)
        return r;
    dev = current_device();
    if (!capped(dev))
        return r;
    slice_view(dev, *total_bytes, &total, &used);
    free_now = total - used;
    /* Never promise more than the device really has free (other slices, contexts). */
    if (free_now > *free_bytes)
        free_now = *free_bytes;
    *total_bytes = (size_t)total;
    *free_bytes = (size_t)free_now;
    return r;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    CUresult (*fn)(size_t *, CUdevice);
    uint64_t limit;
    CUresult r;

    ensure_cuda();
    fn = (CUresult(*)(size_t *, CUdevice))real[H_cuDeviceTotalMem_v2];
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    r = fn(bytes, dev);
    if (r != CUDA_SUCCESS || !cfg.any_limit || !bytes || !capped(dev))
        return r;
    ensure_region();
    limit = limit_of(dev);
    if (limit < *bytes)
        *bytes = (size_t)limit;
    return r;
}

/* ---- NVML: nvidia-smi inside the slice ----------------------------------------------------------- */

static bool token_matches(const char *tok, size_t len, const char *uuid, unsigned index)
{
    if (len >= 4 && memcmp(tok, "GPU-", 4) == 0)
        return strncmp(uuid, tok, len) == 0; /* CUDA accepts UUID prefixes */
    if (len > 0 && len < 10) {
        unsigned v = 0;

        for (size_t i = 0; i < len; i++) {
            if (tok[i] < '0' || tok[i] > '9')
                return false;
            v = v * 10 + (unsigned)(tok[i] - '0');
        }
        return v == index;
    }
    return false;
}

/* The CUDA ordinal of an NVML device: its place in FATIA_VGPU_DEVICE_UUIDS, else in
 * CUDA_VISIBLE_DEVICES, else its NVML index. -1 when the device is not visible to CUDA. */
static int nvml_ordinal(nvmlDevice_t d)
{
    char uuid[FATIA_VGPU_UUID_MAX] = "";
    unsigned index = ~0u;
    const char *vis, *p;
    int ord = 0;

    if (real_nvmlDeviceGetUUID)
        (void)real_nvmlDeviceGetUUID(d, uuid, sizeof(uuid));
    if (real_nvmlDeviceGetIndex)
        (void)real_nvmlDeviceGetIndex(d, &index);
    if (cfg.n_uuids) {
        for (int i = 0; i < cfg.n_uuids; i++) {
            if (uuid[0] && strncmp(uuid, cfg.uuids[i], strlen(cfg.uuids[i])) == 0)
                return i;
        }
        return -1;
    }
    vis = getenv("CUDA_VISIBLE_DEVICES");
    if (!vis)
        return index == ~0u ? -1 : (int)index;
    for (p = vis; *p; ord++) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);

        if (token_matches(p, len, uuid, index))
            return ord;
        if (!end)
            break;
        p = end + 1;
    }
    return -1;
}

static nvmlReturn_t nvml_view(nvmlDevice_t d, unsigned long long *total, unsigned long long *used,
                              unsigned long long *free_bytes)
{
    uint64_t t, u;
    int ord = nvml_ordinal(d);

    if (!capped(ord))
        return NVML_SUCCESS;
    slice_view(ord, *total, &t, &u);
    *total = t;
    *used = u;
    *free_bytes = t - u;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
    nvmlReturn_t (*fn)(nvmlDevice_t, nvmlMemory_t *);
    nvmlReturn_t r;

    ensure_config();
    once(&nvml_state, resolve_nvml);
    fn = (nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_t *))real[H_nvmlDeviceGetMemoryInfo];
    if (!fn)
        return 12; /* NVML_ERROR_FUNCTION_NOT_FOUND */
    r = fn(d, m);
    if (r != NVML_SUCCESS || !cfg.any_limit || !m)
        return r;
    return nvml_view(d, &m->total, &m->used, &m->free);
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m)
{
    nvmlReturn_t (*fn)(nvmlDevice_t, nvmlMemory_v2_t *);
    nvmlReturn_t r;

    ensure_config();
    once(&nvml_state, resolve_nvml);
    fn = (nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_v2_t *))real[H_nvmlDeviceGetMemoryInfo_v2];
    if (!fn)
        return 12;
    r = fn(d, m);
    if (r != NVML_SUCCESS || !cfg.any_limit || !m)
        return r;
    r = nvml_view(d, &m->total, &m->used, &m->free);
    if (capped(nvml_ordinal(d)))
        m->reserved = 0; /* contexts and driver reservations are outside the slice */
    return r;
}

/* ---- lookups: cuGetProcAddress and dlsym ---------------------------------------------------- */

/* The newest cudaVersion whose variants of the wrapped functions are known (CUDA 13.0). */
#define CHECKED_ABI_VERSION 13000

/* The hook that replaces p, the driver's answer for (symbol, version, flags), or p itself. */
static void *swap(const char *symbol, void *p, int version, cuuint64_t flags)
{
    bool per_thread = false;
    int best = -1;

    if (!p || !cfg.any_limit)
        return p;
    for (int i = 0; i < H_CUDA_COUNT; i++) {
        if (real[i] == p) {
            atomic_fetch_add_explicit(&n_swap_identity, 1, memory_order_relaxed);
            return hooks[i].fn;
        }
    }
    /* Not an exported address: decide by name, version and flags as the driver does, but only
     * for versions whose variants this table was checked against (cuda.h 13.0): a later version
     * may select a variant with another ABI, which must then be matched by address or left. */
    if (!symbol || version > CHECKED_ABI_VERSION)
        return p;
    /* A per-thread-stream request gets the _ptsz variant where the function has one. */
    for (int i = 0; i < H_CUDA_COUNT; i++) {
        if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && hooks[i].ptsz &&
            strcmp(hooks[i].base, symbol) == 0 && hooks[i].since <= version)
            per_thread = true;
    }
    for (int i = 0; i < H_CUDA_COUNT; i++) {
        const struct hook *h = &hooks[i];

        if (strcmp(h->base, symbol) != 0 || h->since > version || !real[i])
            continue;
        if (h->ptsz != per_thread)
            continue;
        if (best < 0 || h->since > hooks[best].since)
            best = i;
    }
    if (best < 0)
        return p;
    atomic_fetch_add_explicit(&n_swap_name, 1, memory_order_relaxed);
    VLOG(FATIA_VGPU_LOG_DEBUG, "cuGetProcAddress('%s', %d, %llu): matched %s by name", symbol,
         version, (unsigned long long)flags, hooks[best].name);
    return hooks[best].fn;
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                    int *status)
{
    CUresult (*fn)(const char *, void **, int, cuuint64_t, int *);
    CUresult r;

    ensure_cuda();
    fn = (CUresult(*)(const char *, void **, int, cuuint64_t, int *))real[H_cuGetProcAddress_v2];
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    r = fn(symbol, pfn, version, flags, status);
    if (r == CUDA_SUCCESS && pfn)
        *pfn = swap(symbol, *pfn, version, flags);
    return r;
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    CUresult (*fn)(const char *, void **, int, cuuint64_t);
    CUresult r;

    ensure_cuda();
    fn = (CUresult(*)(const char *, void **, int, cuuint64_t))real[H_cuGetProcAddress];
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    r = fn(symbol, pfn, version, flags);
    if (r == CUDA_SUCCESS && pfn)
        *pfn = swap(symbol, *pfn, version, flags);
    return r;
}

static int hook_by_name(const char *name)
{
    for (int i = 0; i < H_COUNT; i++) {
        if (strcmp(hooks[i].name, name) == 0)
            return i;
    }
    return -1;
}

/* Called by the dlsym entry: fatia's hook for a wrapped driver or NVML function, or NULL to let
 * the real dlsym answer (it is then entered with the caller's own return address). */
__attribute__((visibility("hidden"))) void *fatia_vgpu_dlsym_decide(void *handle, const char *name);

void *fatia_vgpu_dlsym_decide(void *handle, const char *name)
{
    dlsym_fn ds = (dlsym_fn)lookup_real_dlsym();
    int i;
    void *p;

    if (!name || !ds)
        return NULL;
    if (!(name[0] == 'c' && name[1] == 'u') && strncmp(name, "nvml", 4) != 0)
        return NULL;
    ensure_config();
    if (!cfg.any_limit)
        return NULL;
    i = hook_by_name(name);
    if (i < 0)
        return NULL;
    if (i < H_CUDA_COUNT)
        once(&cuda_state, resolve_cuda);
    else
        once(&nvml_state, resolve_nvml);
    if (!real[i])
        return NULL;
    if (handle == RTLD_NEXT || handle == RTLD_DEFAULT)
        return hooks[i].fn;
    /* Only the driver's own function is replaced, not a same-named one of another library. */
    p = ds(handle, name);
    return p == real[i] ? hooks[i].fn : NULL;
}

#if defined(__x86_64__)
/*
 * dlsym(handle, name): ask fatia_vgpu_dlsym_decide; when it declines, jump (not call) to the real
 * dlsym with the registers and the return address the caller left, so glibc sees the caller's
 * return address and RTLD_NEXT keeps meaning "after the caller".
 */
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        ".p2align 4\n"
        "dlsym:\n"
        "    .cfi_startproc\n"
        "    endbr64\n"
        "    pushq %rdi\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    pushq %rsi\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    subq $8, %rsp\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    call fatia_vgpu_dlsym_decide\n"
        "    addq $8, %rsp\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    popq %rsi\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    popq %rdi\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    testq %rax, %rax\n"
        "    jz 1f\n"
        "    ret\n"
        "1:\n"
        "    jmp *fatia_vgpu_real_dlsym(%rip)\n"
        "    .cfi_endproc\n"
        ".size dlsym, .-dlsym\n");
#else
/* Other architectures: a plain call. RTLD_NEXT lookups of unwrapped names then start after this
 * library rather than after the caller (docs/vgpu.md lists this limitation). */
EXPORT void *dlsym(void *handle, const char *name)
{
    void *p = fatia_vgpu_dlsym_decide(handle, name);

    return p ? p : fatia_vgpu_real_dlsym(handle, name);
}
#endif

/* For the tests: how many cuGetProcAddress answers were swapped by address and by name. */
EXPORT void fatia_vgpu_stats(uint64_t *ret_identity, uint64_t *ret_name);

void fatia_vgpu_stats(uint64_t *ret_identity, uint64_t *ret_name)
{
    *ret_identity = atomic_load(&n_swap_identity);
    *ret_name = atomic_load(&n_swap_name);
}
