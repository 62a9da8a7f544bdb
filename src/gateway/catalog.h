/*
 * gateway/catalog.h: the GPU facts the serving plane needs (memory, multiprocessors, memory
 * slices of a MIG profile), behind one lookup.
 *
 * The supply layer owns fatia's GPU catalog (data/, issue 3). Until the serving plane reads it,
 * this file keeps a minimal table of the one GPU measured here, the H200, and its MIG profiles as
 * the driver reports them (reference/h200-facts.md, mig-profiles.yaml: verified on hardware).
 * fatia_serving_device_lookup() is the only function that reads the table, so switching to the
 * supply catalog is a change in one place.
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

/* product: "h200" (case-insensitive; "nvidia-h200" and "NVIDIA H200" too); profile: NULL or "" for
 * the whole GPU, or a MIG profile name. 0, or -ENOENT with a message naming what exists in why. */
int fatia_serving_device_lookup(const char *product, const char *profile,
                                struct fatia_serving_device *ret, char *why, size_t why_n);

/* The MIG profile names of a product, in table order, NULL-terminated (for help and golden runs);
 * NULL for an unknown product. */
const char *const *fatia_serving_profiles(const char *product);

#endif
