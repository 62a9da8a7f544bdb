/*
 * supply/nvml.h: the slice of the NVML C API fatia uses, loaded with dlopen (never linked), and
 * the MIG apply step.
 *
 * Types and struct layouts are NVML's (nvml.h, API version 12/13, as in go-nvml pkg/nvml/nvml.h;
 * reference nvidia-slicing.md §5), declared here so that fatia builds where no driver or CUDA
 * toolkit is installed. Only the entry points below are resolved; optional ones may be NULL (an
 * older driver), and the callers degrade: e.g. without nvmlDeviceGetGpuInstanceProfileInfoV the
 * profile names come from the catalog by profile id.
 *
 * The fake library tests/supply/fake_nvml.c implements the same entry points from a recording of
 * a real H200's answers (tests/data/nvml/h200.json), so CI runs this code.
 */
#ifndef FATIA_SUPPLY_NVML_H
#define FATIA_SUPPLY_NVML_H

#include <stdbool.h>
#include <stdint.h>

#include "model/diag.h"
#include "supply/inventory.h"
#include "supply/plan.h"

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlGpuInstance_st *nvmlGpuInstance_t;
typedef struct nvmlComputeInstance_st *nvmlComputeInstance_t;

#define NVML_SUCCESS                      0
#define NVML_ERROR_UNINITIALIZED          1
#define NVML_ERROR_INVALID_ARGUMENT       2
#define NVML_ERROR_NOT_SUPPORTED          3
#define NVML_ERROR_NO_PERMISSION          4
#define NVML_ERROR_NOT_FOUND              6
#define NVML_ERROR_INSUFFICIENT_SIZE      7
#define NVML_ERROR_RESET_REQUIRED         16
#define NVML_ERROR_IN_USE                 19
#define NVML_ERROR_INSUFFICIENT_RESOURCES 23
#define NVML_ERROR_UNKNOWN                999

#define NVML_INIT_FLAG_NO_GPUS                      1
#define NVML_DEVICE_MIG_DISABLE                     0
#define NVML_DEVICE_MIG_ENABLE                      1
#define NVML_GPU_INSTANCE_PROFILE_COUNT_MAX         0x20 /* enumerate indices below this */
#define NVML_COMPUTE_INSTANCE_PROFILE_COUNT         0x9
#define NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED 0
#define NVML_NVLINK_MAX_LINKS                       36
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE             96

typedef struct {
    char busIdLegacy[16];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

typedef struct {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

typedef struct {
    unsigned int start;
    unsigned int size;
} nvmlGpuInstancePlacement_t;

typedef struct {
    unsigned int id;
    unsigned int isP2pSupported;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int copyEngineCount;
    unsigned int decoderCount;
    unsigned int encoderCount;
    unsigned int jpegCount;
    unsigned int ofaCount;
    unsigned long long memorySizeMB;
} nvmlGpuInstanceProfileInfo_t;

typedef struct {
    unsigned int version;
    unsigned int id;
    unsigned int isP2pSupported;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int copyEngineCount;
    unsigned int decoderCount;
    unsigned int encoderCount;
    unsigned int jpegCount;
    unsigned int ofaCount;
    unsigned long long memorySizeMB;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
} nvmlGpuInstanceProfileInfo_v2_t;

#define nvmlGpuInstanceProfileInfo_v2 \
    ((unsigned int)(sizeof(nvmlGpuInstanceProfileInfo_v2_t) | (2u << 24)))

typedef struct {
    nvmlDevice_t device;
    unsigned int id;
    unsigned int profileId;
    nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

typedef struct {
    unsigned int id;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int sharedCopyEngineCount;
    unsigned int sharedDecoderCount;
    unsigned int sharedEncoderCount;
    unsigned int sharedJpegCount;
    unsigned int sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;

typedef struct {
    unsigned int start;
    unsigned int size;
} nvmlComputeInstancePlacement_t;

typedef struct {
    nvmlDevice_t device;
    nvmlGpuInstance_t gpuInstance;
    unsigned int id;
    unsigned int profileId;
    nvmlComputeInstancePlacement_t placement;
} nvmlComputeInstanceInfo_t;

/* The entry points, resolved with dlsym. */
struct fatia_nvml {
    void *lib;
    char path[256];
    bool is_fake; /* the library exports fatiaFakeNvml (tests/supply/fake_nvml.c) */
    nvmlReturn_t (*InitWithFlags)(unsigned int);
    nvmlReturn_t (*Init)(void);
    nvmlReturn_t (*Shutdown)(void);
    const char *(*ErrorString)(nvmlReturn_t);
    nvmlReturn_t (*SystemGetDriverVersion)(char *, unsigned int);
    nvmlReturn_t (*SystemGetCudaDriverVersion)(int *);
    nvmlReturn_t (*DeviceGetCount)(unsigned int *);
    nvmlReturn_t (*DeviceGetHandleByIndex)(unsigned int, nvmlDevice_t *);
    nvmlReturn_t (*DeviceGetName)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*DeviceGetUUID)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*DeviceGetMinorNumber)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*DeviceGetBrand)(nvmlDevice_t, int *);
    nvmlReturn_t (*DeviceGetArchitecture)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*DeviceGetCudaComputeCapability)(nvmlDevice_t, int *, int *);
    nvmlReturn_t (*DeviceGetMemoryInfo)(nvmlDevice_t, nvmlMemory_t *);
    nvmlReturn_t (*DeviceGetPciInfo)(nvmlDevice_t, nvmlPciInfo_t *);
    nvmlReturn_t (*DeviceGetMigMode)(nvmlDevice_t, unsigned int *, unsigned int *);
    nvmlReturn_t (*DeviceGetGpuInstanceProfileInfoV)(nvmlDevice_t, unsigned int,
                                                     nvmlGpuInstanceProfileInfo_v2_t *);
    nvmlReturn_t (*DeviceGetGpuInstanceProfileInfo)(nvmlDevice_t, unsigned int,
                                                    nvmlGpuInstanceProfileInfo_t *);
    nvmlReturn_t (*DeviceGetGpuInstancePossiblePlacements)(nvmlDevice_t, unsigned int,
                                                           nvmlGpuInstancePlacement_t *,
                                                           unsigned int *);
    nvmlReturn_t (*DeviceGetGpuInstances)(nvmlDevice_t, unsigned int, nvmlGpuInstance_t *,
                                          unsigned int *);
    nvmlReturn_t (*GpuInstanceGetInfo)(nvmlGpuInstance_t, nvmlGpuInstanceInfo_t *);
    nvmlReturn_t (*GpuInstanceGetComputeInstanceProfileInfo)(nvmlGpuInstance_t, unsigned int,
                                                             unsigned int,
                                                             nvmlComputeInstanceProfileInfo_t *);
    nvmlReturn_t (*GpuInstanceGetComputeInstances)(nvmlGpuInstance_t, unsigned int,
                                                   nvmlComputeInstance_t *, unsigned int *);
    nvmlReturn_t (*ComputeInstanceGetInfo)(nvmlComputeInstance_t, nvmlComputeInstanceInfo_t *);
    nvmlReturn_t (*DeviceGetNvLinkState)(nvmlDevice_t, unsigned int, int *);
    nvmlReturn_t (*DeviceGetNvLinkRemotePciInfo)(nvmlDevice_t, unsigned int, nvmlPciInfo_t *);
    /* changes (fatia plan --apply) */
    nvmlReturn_t (*DeviceSetMigMode)(nvmlDevice_t, unsigned int, nvmlReturn_t *);
    nvmlReturn_t (*DeviceCreateGpuInstanceWithPlacement)(nvmlDevice_t, unsigned int,
                                                         const nvmlGpuInstancePlacement_t *,
                                                         nvmlGpuInstance_t *);
    nvmlReturn_t (*GpuInstanceCreateComputeInstance)(nvmlGpuInstance_t, unsigned int,
                                                     nvmlComputeInstance_t *);
    nvmlReturn_t (*ComputeInstanceDestroy)(nvmlComputeInstance_t);
    nvmlReturn_t (*GpuInstanceDestroy)(nvmlGpuInstance_t);
};

/* Loads the library (path NULL: "libnvidia-ml.so.1") and initializes NVML. -FATIA_E_NODRIVER
 * with why when it cannot. */
int fatia_nvml_open(struct fatia_nvml *n, const char *path, char *why, size_t why_n);
void fatia_nvml_close(struct fatia_nvml *n);
const char *fatia_nvml_strerror(const struct fatia_nvml *n, nvmlReturn_t r);

/* "00000000:18:00.0" -> "0000:18:00.0" (lowercase), as go-nvlib's GetPCIBusID. */
void fatia_nvml_bus_id(const char *nvml_bus_id, char *buf, size_t n);

/* One line per action taken or refused, for the caller to print. */
struct fatia_apply_report {
    char **lines;
    size_t n, cap;
    size_t n_changed, n_failed;
};

void fatia_apply_report_release(struct fatia_apply_report *r);

/* Makes the GPUs of an nvml plan match it: enables MIG mode where the plan needs it (never
 * resetting a GPU: a pending mode change is reported and the GPU skipped), destroys the GPU
 * instances the plan does not keep (compute instances first), creates the planned ones with
 * explicit placements and a full-size compute instance. Refuses to touch a real driver unless
 * allow_real is true (tests only ever run it against the fake library). (nvml_apply.c) */
int fatia_nvml_apply(const struct fatia_plan *plan, const char *lib_path, bool allow_real,
                     struct fatia_apply_report *report, struct fatia_diag *diag);

#endif
