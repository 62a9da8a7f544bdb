/*
 * tests/vgpu/test_vgpu_hooks.c: the interposer inside one process, against the fake driver.
 *
 * CTest runs this binary three times with libfatia-vgpu.so in LD_PRELOAD (tests/vgpu/
 * CMakeLists.txt), and VGPU_TEST_MODE says which:
 *   capped    FATIA_VGPU_MEMORY_LIMIT=64Mi, device 1 at 16Mi: every path is capped and counted;
 *   distinct  the same, with a driver whose cuGetProcAddress answers aliases (match by name);
 *   uncapped  no limit: the library must change nothing at all.
 * The driver is reached as the CUDA 13 runtime reaches it (fake_cudart.c: dlsym for
 * cuGetProcAddress_v2, then the recorded requests through the re-fetched pointers).
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <sys/wait.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_cudart.h"

#define MiB (UINT64_C(1) << 20)

char next_target(void);
void *next_a_lookup(void);

static bool capped, distinct;
static void *driver;
static uint64_t (*count)(const char *);
static uint64_t (*fake_peak)(int);
static int (*answer)(const char *, int, cuuint64_t, void **, const char **);

static const char *const wrapped[] = {
    "cuMemAlloc_v2",
    "cuMemAllocPitch_v2",
    "cuMemAllocManaged",
    "cuMemFree_v2",
    "cuMemAllocAsync",
    "cuMemAllocAsync_ptsz",
    "cuMemAllocFromPoolAsync",
    "cuMemAllocFromPoolAsync_ptsz",
    "cuMemFreeAsync",
    "cuMemFreeAsync_ptsz",
    "cuMemPoolCreate",
    "cuMemPoolDestroy",
    "cuMemCreate",
    "cuMemRelease",
    "cuArrayCreate_v2",
    "cuArray3DCreate_v2",
    "cuArrayDestroy",
    "cuMipmappedArrayCreate",
    "cuMipmappedArrayDestroy",
    "cuMemGetInfo_v2",
    "cuDeviceTotalMem_v2",
    "cuGetProcAddress",
    "cuGetProcAddress_v2",
};

static bool is_wrapped(const char *name)
{
    for (size_t i = 0; name && i < sizeof(wrapped) / sizeof(wrapped[0]); i++) {
        if (strcmp(wrapped[i], name) == 0)
            return true;
    }
    return false;
}

static void use_device(int dev)
{
    CUcontext ctx;

    assert_int_equal(RT("cuDevicePrimaryCtxRetain", 7000, rt_retain_t)(&ctx, dev), 0);
    assert_int_equal(RT("cuCtxSetCurrent", 4000, rt_ctx_set_t)(ctx), 0);
}

static void get_info(uint64_t *f, uint64_t *t)
{
    size_t fr, to;

    assert_int_equal(RT("cuMemGetInfo", 3020, rt_getinfo_t)(&fr, &to), CUDA_SUCCESS);
    *f = fr;
    *t = to;
}

/* The bytes the slice holds on the current device, as cuMemGetInfo tells it. */
static uint64_t slice_used(void)
{
    uint64_t f, t;

    get_info(&f, &t);
    return t - f;
}

static int setup(void **state)
{
    const char *mode = getenv("VGPU_TEST_MODE");
    int n;

    (void)state;
    capped = mode && strcmp(mode, "uncapped") != 0;
    distinct = mode && strcmp(mode, "distinct") == 0;
    n = fake_rt_init(FAKE_REQUESTS);
    if (n < 0) {
        fprintf(stderr, "runtime init failed at step %d\n", -n);
        return -1;
    }
    driver = fake_rt_driver();
    count = (uint64_t(*)(const char *))dlsym(driver, "fake_cuda_count");
    fake_peak = (uint64_t(*)(int))dlsym(driver, "fake_cuda_peak");
    answer = (int (*)(const char *, int, cuuint64_t, void **, const char **))dlsym(
        driver, "fake_cuda_answer");
    if (!count || !answer || !fake_peak)
        return -1;
    use_device(0);
    return 0;
}

/* An interposed answer must be fatia's hook exactly for the wrapped variants, the driver's own
 * pointer for everything else, with the driver's status and result code. */
static void check_answer(const char *symbol, int version, int flags, void *got, int got_status,
                         CUresult got_result)
{
    void *want;
    const char *name;
    int st = answer(symbol, version, (cuuint64_t)flags, &want, &name);

    assert_int_equal(got_status, st);
    if (version > 13000)
        assert_int_equal(got_result, CUDA_ERROR_INVALID_VALUE);
    if (capped && want && is_wrapped(name)) {
        void *ours = dlsym(RTLD_DEFAULT, name);

        if (got != ours)
            fail_msg("%s/%d/%d: got %p, want fatia's %s %p", symbol, version, flags, got, name,
                     ours);
        assert_ptr_not_equal(got, want);
    } else if (got != want) {
        fail_msg("%s/%d/%d: got %p, want the driver's %p (%s)", symbol, version, flags, got, want,
                 name ? name : "stub");
    }
}

static void test_runtime_requests(void **state)
{
    const struct fake_rt_answer *a;
    int n;

    (void)state;
    a = fake_rt_answers(&n);
    assert_true(n >= 440);
    for (int i = 0; i < n; i++) {
        if (i == 0) {
            assert_null(a[i].fn); /* the empty-name probe */
            continue;
        }
        check_answer(a[i].symbol, a[i].version, a[i].flags, a[i].fn, a[i].status, a[i].result);
    }
    /* The pointers the runtime re-fetched are fatia's hooks of the matching ABI. */
    if (capped) {
        assert_ptr_equal(fake_rt_fn("cuGetProcAddress", 11030, 0),
                         dlsym(RTLD_DEFAULT, "cuGetProcAddress"));
        assert_ptr_equal(fake_rt_fn("cuGetProcAddress", 12000, 0),
                         dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2"));
    }
}

/* Every recorded request again, plus versions below, at and above each variant's introduction,
 * with every flag value, through both the 5-argument and the 4-argument lookup. */
static void test_dispatch_every_version_and_flag(void **state)
{
    static const int versions[] = {0,     1000,  2000,  2020,  3000,  3020,  4000,  5000,
                                   6000,  7000,  9000,  10000, 10020, 11000, 11020, 11030,
                                   11060, 12000, 12080, 13000, 13010, 99999};
    const struct fake_rt_answer *a;
    int n;

    (void)state;
    a = fake_rt_answers(&n);
    for (int i = 1; i < n; i++) {
        for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
            for (int flags = 0; flags <= 2; flags++) {
                void *p = (void *)1;
                int status = -1;
                CUresult r = fake_rt_gpa(a[i].symbol, &p, versions[v], flags, &status);

                if (r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_FOUND)
                    check_answer(a[i].symbol, versions[v], flags, p, status, r);
                else
                    assert_int_equal(r, CUDA_ERROR_INVALID_VALUE);
                p = (void *)1;
                r = fake_rt_gpa_v1(a[i].symbol, &p, versions[v], flags);
                if (r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_FOUND) {
                    void *want;
                    const char *name;
                    status = answer(a[i].symbol, versions[v], (cuuint64_t)flags, &want, &name);
                    check_answer(a[i].symbol, versions[v], flags, p, status, r);
                }
            }
        }
    }
}

static void test_swaps_counted(void **state)
{
    void (*stats)(uint64_t *, uint64_t *) =
        (void (*)(uint64_t *, uint64_t *))dlsym(RTLD_DEFAULT, "fatia_vgpu_stats");
    uint64_t by_address, by_name;

    (void)state;
    assert_non_null(stats);
    stats(&by_address, &by_name);
    if (!capped) {
        assert_int_equal(by_address + by_name, 0);
    } else if (distinct) {
        assert_true(by_name > 0); /* the aliased variants were found by name */
    } else {
        assert_true(by_address > 0);
        assert_int_equal(by_name, 0);
    }
}

static void test_reported_totals(void **state)
{
    size_t t0, t1;
    uint64_t f, t;

    (void)state;
    get_info(&f, &t);
    assert_int_equal(RT("cuDeviceTotalMem", 3020, rt_totalmem_t)(&t0, 0), 0);
    assert_int_equal(RT("cuDeviceTotalMem", 3020, rt_totalmem_t)(&t1, 1), 0);
    if (capped) {
        assert_int_equal(t, 64 * MiB);
        assert_int_equal(f, 64 * MiB);
        assert_int_equal(t0, 64 * MiB);
        assert_int_equal(t1, 16 * MiB);
    } else {
        assert_int_equal(t, UINT64_C(80) << 30);
        assert_int_equal(t0, UINT64_C(80) << 30);
    }
}

static void test_alloc_cap_and_oom(void **state)
{
    rt_alloc_t alloc = RT("cuMemAlloc", 3020, rt_alloc_t);
    rt_free_t mfree = RT("cuMemFree", 3020, rt_free_t);
    CUdeviceptr a, b;
    uint64_t calls;

    (void)state;
    assert_int_equal(alloc(&a, 48 * MiB), CUDA_SUCCESS);
    calls = count("cuMemAlloc_v2");
    if (capped) {
        assert_int_equal(slice_used(), 48 * MiB);
        /* Over the cap: exactly CUDA_ERROR_OUT_OF_MEMORY, and the driver is never asked. */
        assert_int_equal(alloc(&b, 17 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
        assert_int_equal(count("cuMemAlloc_v2"), calls);
        assert_int_equal(alloc(&b, 16 * MiB), CUDA_SUCCESS);
        assert_int_equal(alloc(&b, 1), CUDA_ERROR_OUT_OF_MEMORY);
        assert_int_equal(mfree(b), CUDA_SUCCESS);
    } else {
        assert_int_equal(alloc(&b, 17 * MiB), CUDA_SUCCESS);
        assert_int_equal(mfree(b), CUDA_SUCCESS);
    }
    /* Free, then the whole cap again; one byte more is refused. */
    assert_int_equal(mfree(a), CUDA_SUCCESS);
    assert_int_equal(alloc(&a, 64 * MiB), CUDA_SUCCESS);
    assert_int_equal(mfree(a), CUDA_SUCCESS);
    assert_int_equal(alloc(&a, 64 * MiB + 1), capped ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS);
    if (!capped)
        assert_int_equal(mfree(a), CUDA_SUCCESS);
    assert_int_equal(alloc(&a, SIZE_MAX), CUDA_ERROR_OUT_OF_MEMORY);
    if (capped)
        assert_int_equal(slice_used(), 0);
    /* A size of 0 is the driver's to refuse. */
    assert_int_equal(alloc(&a, 0), CUDA_ERROR_INVALID_VALUE);
}

static void test_legacy_entry_point_untouched(void **state)
{
    CUresult (*legacy)(unsigned *, unsigned) = NULL;
    uint64_t before = count("cuMemAlloc");
    unsigned p;
    int status;

    (void)state;
    /* An old runtime asks for the 32-bit cuMemAlloc (before 3020): it is not wrapped. */
    assert_int_equal(fake_rt_gpa("cuMemAlloc", (void **)&legacy, 2000, 0, &status), 0);
    assert_non_null(legacy);
    assert_int_equal(legacy(&p, 1u << 31), CUDA_SUCCESS);
    assert_int_equal(count("cuMemAlloc"), before + 1);
}

static void test_free_unknown_pointer_reaches_driver(void **state)
{
    uint64_t before = count("cuMemFree_v2.invalid");

    (void)state;
    assert_int_equal(RT("cuMemFree", 3020, rt_free_t)(0xdead000), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(count("cuMemFree_v2.invalid"), before + 1);
}

static void test_pitch_uses_returned_pitch(void **state)
{
    CUdeviceptr p;
    size_t pitch;

    (void)state;
    assert_int_equal(RT("cuMemAllocPitch", 3020, rt_pitch_t)(&p, &pitch, 1000, 1000, 4), 0);
    assert_int_equal(pitch, 1024);
    if (capped)
        assert_int_equal(slice_used(), 1024 * 1000);
    assert_int_equal(RT("cuMemFree", 3020, rt_free_t)(p), 0);
    if (capped) {
        assert_int_equal(slice_used(), 0);
        assert_int_equal(RT("cuMemAllocPitch", 3020, rt_pitch_t)(&p, &pitch, 65 * 1024, 1024, 4),
                         CUDA_ERROR_OUT_OF_MEMORY);
    }
}

static void test_managed(void **state)
{
    rt_managed_t managed = RT("cuMemAllocManaged", 6000, rt_managed_t);
    CUdeviceptr p, q;

    (void)state;
    assert_int_equal(managed(&p, 40 * MiB, 1), 0);
    if (capped) {
        assert_int_equal(slice_used(), 40 * MiB);
        assert_int_equal(managed(&q, 40 * MiB, 1), CUDA_ERROR_OUT_OF_MEMORY);
    }
    assert_int_equal(RT("cuMemFree", 3020, rt_free_t)(p), 0);
}

static void test_async_both_stream_variants(void **state)
{
    rt_async_t def = RT("cuMemAllocAsync", 11020, rt_async_t);
    rt_async_t pts = RT_PTSZ("cuMemAllocAsync", 11020, rt_async_t);
    rt_free_async_t free_def = RT("cuMemFreeAsync", 11020, rt_free_async_t);
    rt_free_async_t free_pts = RT_PTSZ("cuMemFreeAsync", 11020, rt_free_async_t);
    uint64_t d0 = count("cuMemAllocAsync"), p0 = count("cuMemAllocAsync_ptsz");
    uint64_t fd0 = count("cuMemFreeAsync"), fp0 = count("cuMemFreeAsync_ptsz");
    CUdeviceptr a, b, c;

    (void)state;
    assert_ptr_not_equal(def, pts);
    assert_int_equal(def(&a, 40 * MiB, NULL), 0);
    assert_int_equal(count("cuMemAllocAsync"), d0 + 1);
    assert_int_equal(count("cuMemAllocAsync_ptsz"), p0);
    if (capped)
        assert_int_equal(pts(&b, 40 * MiB, NULL), CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(pts(&b, 20 * MiB, NULL), 0);
    /* The per-thread request reached the driver's per-thread variant, not the legacy one. */
    assert_int_equal(count("cuMemAllocAsync_ptsz"), p0 + 1);
    assert_int_equal(count("cuMemAllocAsync"), d0 + 1);
    if (capped)
        assert_int_equal(slice_used(), 60 * MiB);
    assert_int_equal(free_pts(a, NULL), 0);
    assert_int_equal(free_def(b, NULL), 0);
    assert_int_equal(count("cuMemFreeAsync_ptsz"), fp0 + 1);
    assert_int_equal(count("cuMemFreeAsync"), fd0 + 1);
    if (capped)
        assert_int_equal(slice_used(), 0);
    /* A stream-ordered allocation can be freed by cuMemFree too. */
    assert_int_equal(def(&c, 8 * MiB, NULL), 0);
    assert_int_equal(RT("cuMemFree", 3020, rt_free_t)(c), 0);
    if (capped)
        assert_int_equal(slice_used(), 0);
}

static void test_pools(void **state)
{
    rt_pool_create_t create = RT("cuMemPoolCreate", 11020, rt_pool_create_t);
    rt_pool_destroy_t destroy = RT("cuMemPoolDestroy", 11020, rt_pool_destroy_t);
    rt_pool_alloc_t from = RT("cuMemAllocFromPoolAsync", 11020, rt_pool_alloc_t);
    rt_pool_alloc_t from_pts = RT_PTSZ("cuMemAllocFromPoolAsync", 11020, rt_pool_alloc_t);
    rt_free_async_t free_async = RT("cuMemFreeAsync", 11020, rt_free_async_t);
    CUmemPoolProps dev1 = {.allocType = 1, .location = {CU_MEM_LOCATION_TYPE_DEVICE, 1}};
    CUmemPoolProps host = {.allocType = 1, .location = {CU_MEM_LOCATION_TYPE_HOST, 0}};
    CUmemoryPool p1, ph;
    CUdeviceptr a, b, h;
    uint64_t f, t;

    (void)state;
    assert_int_equal(create(&p1, &dev1), 0);
    assert_int_equal(create(&ph, &host), 0);
    /* Device 1's cap is 16 MiB, whatever the current device. */
    assert_int_equal(from(&a, 10 * MiB, p1, NULL), 0);
    assert_int_equal(from_pts(&b, 10 * MiB, p1, NULL),
                     capped ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS);
    if (!capped)
        assert_int_equal(free_async(b, NULL), 0);
    /* Host memory is not device memory: never charged. */
    assert_int_equal(from(&h, UINT64_C(1) << 30, ph, NULL), 0);
    if (capped)
        assert_int_equal(slice_used(), 0);
    use_device(1);
    get_info(&f, &t);
    if (capped)
        assert_int_equal(t - f, 10 * MiB);
    use_device(0);
    assert_int_equal(free_async(a, NULL), 0);
    assert_int_equal(free_async(h, NULL), 0);
    assert_int_equal(destroy(p1), 0);
    assert_int_equal(destroy(ph), 0);
    use_device(1);
    assert_int_equal(slice_used(), capped ? 0 : 0);
    use_device(0);
}

static void test_vmm_create_release(void **state)
{
    rt_create_t create = RT("cuMemCreate", 12000, rt_create_t);
    rt_release_t release = RT("cuMemRelease", 12000, rt_release_t);
    CUmemAllocationProp dev0 = {.type = 1, .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    CUmemAllocationProp host = {.type = 1, .location = {CU_MEM_LOCATION_TYPE_HOST_NUMA, 0}};
    CUmemGenericAllocationHandle a, b, h;

    (void)state;
    assert_non_null(create);
    assert_int_equal(create(&a, 32 * MiB, &dev0, 0), 0);
    if (capped) {
        assert_int_equal(slice_used(), 32 * MiB);
        assert_int_equal(create(&b, 48 * MiB, &dev0, 0), CUDA_ERROR_OUT_OF_MEMORY);
    }
    assert_int_equal(create(&h, UINT64_C(1) << 30, &host, 0), 0);
    assert_int_equal(release(h), 0);
    assert_int_equal(release(a), 0);
    if (capped)
        assert_int_equal(slice_used(), 0);
    /* The driver's own errors pass unchanged (a size off the granularity). */
    assert_int_equal(create(&a, 1000, &dev0, 0), CUDA_ERROR_INVALID_VALUE);
    if (capped)
        assert_int_equal(slice_used(), 0);
}

static void test_arrays(void **state)
{
    CUDA_ARRAY_DESCRIPTOR d2 = {.Width = 1024, .Height = 1024, .Format = 0x20, .NumChannels = 4};
    CUDA_ARRAY3D_DESCRIPTOR d3 = {
        .Width = 1024, .Height = 1024, .Depth = 13, .Format = 0x20, .NumChannels = 1};
    CUDA_ARRAY3D_DESCRIPTOR dm = {.Width = 1024, .Height = 1024, .Format = 0x01, .NumChannels = 1};
    CUarray a, b;
    CUmipmappedArray m;

    (void)state;
    assert_int_equal(RT("cuArrayCreate", 3020, rt_array_t)(&a, &d2), 0);
    if (capped) {
        assert_int_equal(slice_used(), 16 * MiB);
        /* 1024 x 1024 x 13 floats = 52 MiB: over what is left of 64. */
        assert_int_equal(RT("cuArray3DCreate", 3020, rt_array3d_t)(&b, &d3),
                         CUDA_ERROR_OUT_OF_MEMORY);
    }
    d3.Depth = 12;
    assert_int_equal(RT("cuArray3DCreate", 3020, rt_array3d_t)(&b, &d3), 0);
    if (capped)
        assert_int_equal(slice_used(), 64 * MiB);
    assert_int_equal(RT("cuArrayDestroy", 2000, rt_array_destroy_t)(a), 0);
    assert_int_equal(RT("cuArrayDestroy", 2000, rt_array_destroy_t)(b), 0);
    /* Mipmaps: 1 MiB + 256 KiB + 64 KiB for three levels of bytes. */
    assert_int_equal(RT("cuMipmappedArrayCreate", 5000, rt_mipmap_t)(&m, &dm, 3), 0);
    if (capped)
        assert_int_equal(slice_used(), MiB + 256 * 1024 + 64 * 1024);
    assert_int_equal(RT("cuMipmappedArrayDestroy", 5000, rt_mipmap_destroy_t)(m), 0);
    if (capped)
        assert_int_equal(slice_used(), 0);
}

static void test_devices_capped_apart(void **state)
{
    rt_alloc_t alloc = RT("cuMemAlloc", 3020, rt_alloc_t);
    rt_free_t mfree = RT("cuMemFree", 3020, rt_free_t);
    CUdeviceptr a, b, c;

    (void)state;
    assert_int_equal(alloc(&c, 60 * MiB), 0);
    use_device(1);
    assert_int_equal(alloc(&a, 16 * MiB), 0);
    assert_int_equal(alloc(&b, 1), capped ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS);
    if (!capped)
        assert_int_equal(mfree(b), 0);
    assert_int_equal(mfree(a), 0);
    use_device(0);
    assert_int_equal(mfree(c), 0);
}

static void test_dlsym(void **state)
{
    void *ours = dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
    void *drv_alloc, *drv_get, *other;
    const char *name;
    char (*next)(void);

    (void)state;
    answer("cuMemAlloc", 3020, 0, &drv_alloc, &name);
    answer("cuDeviceGet", 2000, 0, &drv_get, &name);
    /* On the driver's handle: fatia's hook for a wrapped name, the driver's for the rest. */
    if (capped)
        assert_ptr_equal(dlsym(driver, "cuMemAlloc_v2"), ours);
    else if (!distinct)
        assert_ptr_equal(dlsym(driver, "cuMemAlloc_v2"), drv_alloc);
    assert_ptr_equal(dlsym(driver, "cuDeviceGet"), drv_get);
    assert_null(dlsym(driver, "cuNoSuchFunction"));
    assert_non_null(dlerror());
    /* Another library's own cuMemAlloc_v2 is left alone. */
    other = dlopen("libvgpu_other_cu.so", RTLD_NOW | RTLD_LOCAL);
    assert_non_null(other);
    {
        int (*f)(unsigned long long *, size_t) =
            (int (*)(unsigned long long *, size_t))dlsym(other, "cuMemAlloc_v2");
        unsigned long long p;

        assert_non_null(f);
        assert_int_equal(f(&p, 7), 42);
        assert_int_equal(p, 7);
    }
    dlclose(other);
    /* RTLD_NEXT still means "after the caller": next_a asks, next_b answers. */
    next = (char (*)(void))next_a_lookup();
    assert_non_null(next);
    assert_int_equal(next(), 'B');
    assert_int_equal(next_target(), 'A');
}

static void test_nvml(void **state)
{
    void *nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    nvmlReturn_t (*get_handle)(unsigned, nvmlDevice_t *);
    nvmlReturn_t (*mem)(nvmlDevice_t, nvmlMemory_t *);
    nvmlReturn_t (*mem2)(nvmlDevice_t, nvmlMemory_v2_t *);
    nvmlDevice_t d0, d1;
    nvmlMemory_t m;
    nvmlMemory_v2_t m2;
    CUdeviceptr p;

    (void)state;
    assert_non_null(nvml);
    get_handle =
        (nvmlReturn_t(*)(unsigned, nvmlDevice_t *))dlsym(nvml, "nvmlDeviceGetHandleByIndex_v2");
    mem = (nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_t *))dlsym(nvml, "nvmlDeviceGetMemoryInfo");
    mem2 =
        (nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_v2_t *))dlsym(nvml, "nvmlDeviceGetMemoryInfo_v2");
    assert_non_null(get_handle);
    assert_non_null(mem);
    assert_non_null(mem2);
    assert_int_equal(get_handle(0, &d0), 0);
    assert_int_equal(get_handle(1, &d1), 0);
    assert_int_equal(RT("cuMemAlloc", 3020, rt_alloc_t)(&p, 8 * MiB), 0);
    assert_int_equal(mem(d0, &m), 0);
    assert_int_equal(mem2(d1, &m2), 0);
    if (capped) {
        assert_int_equal(m.total, 64 * MiB);
        assert_int_equal(m.used, 8 * MiB);
        assert_int_equal(m.free, 56 * MiB);
        assert_int_equal(m2.total, 16 * MiB);
        assert_int_equal(m2.used, 0);
        assert_int_equal(m2.free, 16 * MiB);
        assert_int_equal(m2.reserved, 0);
    } else {
        assert_int_equal(m.total, UINT64_C(80) << 30);
        assert_int_equal(m2.reserved, 512 * MiB);
    }
    assert_int_equal(RT("cuMemFree", 3020, rt_free_t)(p), 0);
    dlclose(nvml);
}

struct hammer_arg {
    unsigned seed;
    _Atomic uint64_t *bad;
};

static void *hammer(void *arg)
{
    struct hammer_arg *h = arg;
    rt_alloc_t alloc = RT("cuMemAlloc", 3020, rt_alloc_t);
    rt_free_t mfree = RT("cuMemFree", 3020, rt_free_t);
    CUdeviceptr live[16];
    int n = 0;

    use_device(0);
    for (int i = 0; i < 4000; i++) {
        if (n && (n == 16 || rand_r(&h->seed) % 2)) {
            int k = rand_r(&h->seed) % n;

            if (mfree(live[k]) != CUDA_SUCCESS)
                atomic_fetch_add(h->bad, 1);
            live[k] = live[--n];
        } else {
            CUresult r = alloc(&live[n], 1 + rand_r(&h->seed) % (4 * MiB));

            if (r == CUDA_SUCCESS)
                n++;
            else if (r != CUDA_ERROR_OUT_OF_MEMORY)
                atomic_fetch_add(h->bad, 1);
        }
    }
    while (n)
        if (mfree(live[--n]) != CUDA_SUCCESS)
            atomic_fetch_add(h->bad, 1);
    return NULL;
}

static void test_many_threads(void **state)
{
    pthread_t t[16];
    struct hammer_arg a[16];
    _Atomic uint64_t bad = 0;

    (void)state;
    for (int i = 0; i < 16; i++) {
        a[i].seed = 1234u + (unsigned)i;
        a[i].bad = &bad;
        assert_int_equal(pthread_create(&t[i], NULL, hammer, &a[i]), 0);
    }
    for (int i = 0; i < 16; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(atomic_load(&bad), 0);
    if (capped) {
        /* The simulated GPU never held more than the cap, and everything came back. */
        assert_true(fake_peak(0) <= 64 * MiB);
        assert_int_equal(slice_used(), 0);
    }
}

static void test_fork_child_has_own_budget(void **state)
{
    rt_alloc_t alloc = RT("cuMemAlloc", 3020, rt_alloc_t);
    CUdeviceptr p, q;
    int status;
    pid_t pid;

    (void)state;
    assert_int_equal(alloc(&p, 8 * MiB), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* No shared file: a child accounts alone, from zero. */
        uint64_t f, t;
        size_t fr, to;

        RT("cuMemGetInfo", 3020, rt_getinfo_t)(&fr, &to);
        f = fr;
        t = to;
        if (capped && t - f != 0)
            _exit(3);
        if (capped && alloc(&q, 64 * MiB) != CUDA_SUCCESS)
            _exit(4);
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    if (capped)
        assert_int_equal(slice_used(), 8 * MiB);
    assert_int_equal(RT("cuMemFree", 3020, rt_free_t)(p), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runtime_requests),
        cmocka_unit_test(test_dispatch_every_version_and_flag),
        cmocka_unit_test(test_reported_totals),
        cmocka_unit_test(test_alloc_cap_and_oom),
        cmocka_unit_test(test_legacy_entry_point_untouched),
        cmocka_unit_test(test_free_unknown_pointer_reaches_driver),
        cmocka_unit_test(test_pitch_uses_returned_pitch),
        cmocka_unit_test(test_managed),
        cmocka_unit_test(test_async_both_stream_variants),
        cmocka_unit_test(test_pools),
        cmocka_unit_test(test_vmm_create_release),
        cmocka_unit_test(test_arrays),
        cmocka_unit_test(test_devices_capped_apart),
        cmocka_unit_test(test_dlsym),
        cmocka_unit_test(test_nvml),
        cmocka_unit_test(test_many_threads),
        cmocka_unit_test(test_fork_child_has_own_budget),
        cmocka_unit_test(test_swaps_counted),
    };

    if (!getenv("LD_PRELOAD") || !strstr(getenv("LD_PRELOAD"), "libfatia-vgpu.so")) {
        fprintf(stderr, "test_vgpu_hooks: run it through CTest (LD_PRELOAD is set there)\n");
        return 1;
    }
    return cmocka_run_group_tests(tests, setup, NULL);
}
