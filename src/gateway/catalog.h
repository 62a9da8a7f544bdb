/*
 * gateway/catalog.h: the GPU facts the serving plane needs (memory as the engine sees it,
 * multiprocessors, memory slices of a MIG profile), behind one lookup over the supply layer's GPU
 * catalog (data/gpus).
 */
#ifndef FATIA_GATEWAY_CATALOG_H
#define FATIA_GATEWAY_CATALOG_H

#include "base/compat.h"

struct fatia_serving_device {
    char product[64];             /* canonical product name, "NVIDIA H200" */
    char profile[32];             /* MIG profile ("3g.71gb"), "" for the whole GPU */
    uint64_t memory_bytes;        /* device memory as CUDA reports it to the engine */
    uint32_t multiprocessors;     /* SMs of this slice */
    uint32_t gpu_multiprocessors; /* SMs of the whole GPU */
    uint32_t memory_slices;       /* MIG memory slices of the profile; 8 of 8 for a whole GPU */
    uint32_t gpu_memory_slices;
};

/* product: a catalog name or alias, case-insensitive ("h200", "NVIDIA H200", "nvidia-h200");
 * profile: NULL or "" for the whole GPU, or a MIG profile name. 0, or -ENOENT with a message
 * naming what exists in why (or the catalog's load error). Reads the catalog files: an I/O edge. */
int fatia_serving_device_lookup(const char *product, const char *profile,
                                struct fatia_serving_device *ret, char *why, size_t why_n);

#endif
