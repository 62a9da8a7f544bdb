/*
 * vgpu/cuda_abi.h: the few CUDA driver and NVML declarations the interposer needs.
 *
 * The interposer builds with no CUDA toolkit (CI has none, and the library must not depend on a
 * toolkit version), so it declares by hand the types, constants and struct prefixes it reads.
 * Each one is part of the driver's stable ABI: cuda.h and nvml.h (CUDA 13.0) define them with
 * these exact layouts, and the offsets of the struct fields read here have not moved since the
 * functions appeared. Only leading fields are declared where the interposer reads no others; a
 * struct is never copied or allocated by fatia, only read through the caller's pointer.
 *
 * Rejected: including <cuda.h> when found. Builds would then differ between machines, and the
 * fake driver of the tests (tests/vgpu/) would test another ABI than the one shipped.
 */
#ifndef FATIA_VGPU_CUDA_ABI_H
#define FATIA_VGPU_CUDA_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef unsigned long long cuuint64_t;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef struct CUarray_st *CUarray;
typedef struct CUmipmappedArray_st *CUmipmappedArray;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_SUPPORTED = 801,
};

/* cuGetProcAddress flags and symbol status (cuda.h CUdriverProcAddress_flags,
 * CUdriverProcAddressQueryResult). */
enum {
    CU_GET_PROC_ADDRESS_DEFAULT = 0,
    CU_GET_PROC_ADDRESS_LEGACY_STREAM = 1,
    CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 2,
};

enum {
    CU_GET_PROC_ADDRESS_SUCCESS = 0,
    CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
    CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2,
};

/* CUmemLocationType and CUmemAllocationType. */
enum {
    CU_MEM_LOCATION_TYPE_NONE = 0,
    CU_MEM_LOCATION_TYPE_DEVICE = 1,
    CU_MEM_LOCATION_TYPE_HOST = 2,
    CU_MEM_LOCATION_TYPE_HOST_NUMA = 3,
    CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT = 4,
};

typedef struct {
    int type; /* CUmemLocationType */
    int id;   /* a device ordinal when type is DEVICE */
} CUmemLocation;

/* CUmemAllocationProp (cuMemCreate): leading fields. */
typedef struct {
    int type;                 /* CUmemAllocationType */
    int requestedHandleTypes; /* CUmemAllocationHandleType */
    CUmemLocation location;
    void *win32HandleMetaData;
    /* allocFlags follow; never read */
} CUmemAllocationProp;

/* CUmemPoolProps (cuMemPoolCreate): leading fields. */
typedef struct {
    int allocType;
    int handleTypes;
    CUmemLocation location;
    void *win32SecurityAttributes;
    size_t maxSize;
    /* usage and reserved bytes follow; never read */
} CUmemPoolProps;

typedef struct {
    size_t Width;
    size_t Height;
    int Format; /* CUarray_format */
    unsigned int NumChannels;
} CUDA_ARRAY_DESCRIPTOR;

typedef struct {
    size_t Width;
    size_t Height;
    size_t Depth;
    int Format;
    unsigned int NumChannels;
    unsigned int Flags;
} CUDA_ARRAY3D_DESCRIPTOR;

#define CUDA_ARRAY3D_LAYERED 0x01
#define CUDA_ARRAY3D_CUBEMAP 0x04

/* NVML. */
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
#define NVML_SUCCESS 0

typedef struct {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

typedef struct {
    unsigned int version;
    unsigned long long total;
    unsigned long long reserved;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_v2_t;

#endif
