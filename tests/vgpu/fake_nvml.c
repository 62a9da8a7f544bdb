/*
 * tests/vgpu/fake_nvml.c: a fake NVML, built as libnvidia-ml.so.1, with two GPUs of 80 GiB whose
 * UUIDs are GPU-fake-0 and GPU-fake-1 and whose used memory is FAKE_NVML_USED bytes (default 1 GiB,
 * which stands for contexts and other tenants, none of it the slice's). Enough for the
 * interposer's NVML hooks: handles, UUIDs, indices and the two memory queries.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vgpu/cuda_abi.h"

#define EXPORT __attribute__((visibility("default")))

static struct fake_dev {
    int index;
} devs[2] = {{0}, {1}};

static unsigned long long total = 80ULL << 30;

static unsigned long long used(void)
{
    const char *v = getenv("FAKE_NVML_USED");

    return v ? strtoull(v, NULL, 10) : 1ULL << 30;
}

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlShutdown(void)
{
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n)
{
    *n = 2;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d)
{
    if (i >= 2)
        return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    *d = (nvmlDevice_t)&devs[i];
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned *i)
{
    *i = (unsigned)((struct fake_dev *)d)->index;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned n)
{
    snprintf(buf, n, "GPU-fake-%d", ((struct fake_dev *)d)->index);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
    (void)d;
    m->total = total;
    m->used = used();
    m->free = total - m->used;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m)
{
    (void)d;
    m->total = total;
    m->reserved = 512ULL << 20;
    m->used = used();
    m->free = total - m->used - m->reserved;
    return NVML_SUCCESS;
}
