/*
 * tests/vgpu/fake_cudart.h: a stand-in for the CUDA runtime's driver lookups (fake_cudart.c), and
 * the typed shortcuts the tests use to call what it resolved.
 */
#ifndef FATIA_TESTS_VGPU_FAKE_CUDART_H
#define FATIA_TESTS_VGPU_FAKE_CUDART_H

#include "vgpu/cuda_abi.h"

struct fake_rt_answer {
    char symbol[128];
    int version;
    int flags;
    int status;
    CUresult result;
    void *fn;
};

/* Opens libcuda.so.1 and replays the request file as the CUDA 13 runtime does. Returns the
 * number of requests made, or a negative step number on failure. */
int fake_rt_init(const char *requests_path);

/* The driver handle the "runtime" holds. */
void *fake_rt_driver(void);

/* The pointer the runtime got for (symbol, version, flags), or NULL. */
void *fake_rt_fn(const char *symbol, int version, int flags);

/* Every answer, in request order. */
const struct fake_rt_answer *fake_rt_answers(int *ret_n);

/* New lookups through the pointers the runtime holds (12000 / 11030 ABIs), as
 * cudaGetDriverEntryPointByVersion and an old runtime would make them. */
CUresult fake_rt_gpa(const char *symbol, void **pfn, int version, int flags, int *status);
CUresult fake_rt_gpa_v1(const char *symbol, void **pfn, int version, int flags);

/* The functions as the runtime would call them (flags 0 unless the name says ptsz). */
#define RT(sym, ver, type)      ((type)fake_rt_fn(sym, ver, 0))
#define RT_PTSZ(sym, ver, type) ((type)fake_rt_fn(sym, ver, 2))

typedef CUresult (*rt_alloc_t)(CUdeviceptr *, size_t);
typedef CUresult (*rt_free_t)(CUdeviceptr);
typedef CUresult (*rt_getinfo_t)(size_t *, size_t *);
typedef CUresult (*rt_totalmem_t)(size_t *, CUdevice);
typedef CUresult (*rt_pitch_t)(CUdeviceptr *, size_t *, size_t, size_t, unsigned);
typedef CUresult (*rt_managed_t)(CUdeviceptr *, size_t, unsigned);
typedef CUresult (*rt_async_t)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*rt_pool_alloc_t)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
typedef CUresult (*rt_free_async_t)(CUdeviceptr, CUstream);
typedef CUresult (*rt_pool_create_t)(CUmemoryPool *, const CUmemPoolProps *);
typedef CUresult (*rt_pool_destroy_t)(CUmemoryPool);
typedef CUresult (*rt_create_t)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                                unsigned long long);
typedef CUresult (*rt_release_t)(CUmemGenericAllocationHandle);
typedef CUresult (*rt_array_t)(CUarray *, const CUDA_ARRAY_DESCRIPTOR *);
typedef CUresult (*rt_array3d_t)(CUarray *, const CUDA_ARRAY3D_DESCRIPTOR *);
typedef CUresult (*rt_array_destroy_t)(CUarray);
typedef CUresult (*rt_mipmap_t)(CUmipmappedArray *, const CUDA_ARRAY3D_DESCRIPTOR *, unsigned);
typedef CUresult (*rt_mipmap_destroy_t)(CUmipmappedArray);
typedef CUresult (*rt_ctx_set_t)(CUcontext);
typedef CUresult (*rt_retain_t)(CUcontext *, CUdevice);

#endif
