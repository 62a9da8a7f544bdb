/*
 * gateway/catalog.c: the minimal GPU table of the serving plane (see catalog.h).
 *
 * Whole-GPU memory is what CUDA reports as total (torch.cuda.get_device_properties().total_memory,
 * recorded by scripts/calibrate-h200: 150,109,880,320 bytes), because vLLM sizes its KV cache as a
 * fraction of that total. NVML reports 645 MB more (143,771 MiB); the difference is the driver's
 * reservation. MIG profile memory is NVML's memorySizeMB for the profile (read on the H200 with
 * driver 580.159.04): what CUDA shows inside an instance is a little less, not measured here.
 */
#include "base/compat.h"

#include "gateway/catalog.h"

#include <strings.h>

#include "base/error.h"
#include "gateway/calibration.h"

struct profile_row {
    const char *name;
    uint32_t mem_mib;
    uint32_t sms;
    uint32_t memory_slices;
};

struct gpu_row {
    const char *product;
    const char *const *names; /* accepted spellings, lowercase */
    uint64_t memory_bytes;
    uint32_t sms;
    uint32_t memory_slices;
    const struct profile_row *profiles;
    const char *const *profile_names;
};

static const struct profile_row h200_profiles[] = {
    {"1g.18gb", 16384, 16, 1},    {"1g.18gb+me", 16384, 16, 1},
    {"1g.35gb", 33280, 26, 2},    {"2g.35gb", 33280, 32, 2},
    {"3g.71gb", 71424, 60, 4},    {"4g.71gb", 71424, 64, 4},
    {"7g.141gb", 143360, 132, 8}, {NULL, 0, 0, 0}};
static const char *const h200_profile_names[] = {"1g.18gb", "1g.18gb+me", "1g.35gb",  "2g.35gb",
                                                 "3g.71gb", "4g.71gb",    "7g.141gb", NULL};

static const struct gpu_row gpus[] = {
    {"NVIDIA H200", (const char *const[]){"h200", "nvidia-h200", "nvidia h200", "h200-141gb", NULL},
     FATIA_CALIB_CUDA_TOTAL_MEMORY, FATIA_CALIB_MULTIPROCESSORS, 8, h200_profiles,
     h200_profile_names},
};

static const struct gpu_row *find_gpu(const char *product)
{
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(gpus); i++)
        for (size_t j = 0; gpus[i].names[j]; j++)
            if (!strcasecmp(product, gpus[i].names[j]))
                return &gpus[i];
    return NULL;
}

const char *const *fatia_serving_profiles(const char *product)
{
    const struct gpu_row *g = find_gpu(product);
    return g ? g->profile_names : NULL;
}

int fatia_serving_device_lookup(const char *product, const char *profile,
                                struct fatia_serving_device *ret, char *why, size_t why_n)
{
    const struct gpu_row *g = find_gpu(product);
    struct fatia_serving_device d = {0};

    if (!g) {
        snprintf(why, why_n, "unknown GPU product '%s': the serving plane knows h200", product);
        return -ENOENT;
    }
    snprintf(d.product, sizeof(d.product), "%s", g->product);
    d.gpu_multiprocessors = g->sms;
    d.gpu_memory_slices = g->memory_slices;
    if (!profile || !*profile) {
        d.memory_bytes = g->memory_bytes;
        d.multiprocessors = g->sms;
        d.memory_slices = g->memory_slices;
        *ret = d;
        return 0;
    }
    for (const struct profile_row *p = g->profiles; p->name; p++) {
        if (strcasecmp(p->name, profile))
            continue;
        snprintf(d.profile, sizeof(d.profile), "%s", p->name);
        d.memory_bytes = (uint64_t)p->mem_mib << 20;
        d.multiprocessors = p->sms;
        d.memory_slices = p->memory_slices;
        *ret = d;
        return 0;
    }
    snprintf(why, why_n,
             "unknown MIG profile '%s' for %s: expected one of 1g.18gb, 1g.18gb+me, "
             "1g.35gb, 2g.35gb, 3g.71gb, 4g.71gb, 7g.141gb",
             profile, g->product);
    return -ENOENT;
}
