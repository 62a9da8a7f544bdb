/*
 * supply/config.h: the supply layer's input, compiled from objects: the fleet (NodePools) and the
 * sharing policies (GPUSharingPolicies) of a struct fatia_objset.
 *
 * fatia_supply_config_load reads every NodePool and GPUSharingPolicy of the set (already
 * validated by their schemas, model/kinds/fatia_supply.c) into compact structs that keep a pointer
 * to their object, so that the planner's errors can name the object, the field path and its
 * file:line. JSON members (labels, taints, resources, mig-devices) are borrowed from the objects:
 * the config must not outlive the objset.
 *
 * Policies are layered as upstream splits the work (docs/supply.md): a `mig` layer (mig-parted's
 * job) and a sharing layer (`timeSlicing`, `mps`, `fractional`: the device plugin's job, plus
 * fatia's fractions). One GPU takes at most one policy per layer.
 */
#ifndef FATIA_SUPPLY_CONFIG_H
#define FATIA_SUPPLY_CONFIG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/diag.h"
#include "model/objset.h"
#include "model/selector.h"

#define FATIA_NODE_MAX_GPUS 64

struct fatia_pool_gpus {
    const char *product; /* as written */
    uint32_t count;
    uint64_t memory;          /* 0 = the catalog's */
    uint32_t multiprocessors; /* 0 = the catalog's */
};

struct fatia_pool {
    const struct fatia_object *obj;
    const char *name;
    const char *prefix; /* spec.namePrefix, or the pool's name */
    uint32_t count;
    json_t *labels, *taints, *resources; /* borrowed; may be NULL */
    struct fatia_pool_gpus *gpus;
    size_t n_gpus;
    uint32_t total_gpus;                   /* per node */
    int8_t island_of[FATIA_NODE_MAX_GPUS]; /* -1: not in a declared island */
    bool has_islands;
    const char *driver_version, *cuda_driver_version; /* may be NULL */
};

enum fatia_share_kind {
    FATIA_SHARE_NONE,
    FATIA_SHARE_TIMESLICE,
    FATIA_SHARE_MPS,
    FATIA_SHARE_FRACTIONAL,
};

enum fatia_mig_strategy {
    FATIA_MIG_STRATEGY_NONE, /* no MIG layer */
    FATIA_MIG_STRATEGY_SINGLE,
    FATIA_MIG_STRATEGY_MIXED,
};

struct fatia_share_res {
    char *name;   /* "nvidia.com/gpu" (the device plugin adds "nvidia.com/" when missing) */
    char *rename; /* what replicas are advertised as: rename, or <name>.shared by default */
    uint32_t replicas;
};

struct fatia_policy {
    const struct fatia_object *obj;
    const char *name;
    struct fatia_selector *sel; /* NULL: every node */
    bool sel_hostname;          /* the selector reads kubernetes.io/hostname */
    uint64_t gpu_mask;          /* spec.gpuIndices as bits; all ones when absent */
    bool has_gpu_indices;
    uint32_t *device_filter; /* PCI device ids (0x233510DE) */
    size_t n_device_filter;

    /* MIG layer */
    enum fatia_mig_strategy mig_strategy; /* NONE: no mig member */
    const char *mig_config;               /* named config, or NULL */
    json_t *mig_devices;                  /* profile -> count (borrowed), or NULL */

    /* sharing layer */
    enum fatia_share_kind share;
    bool rename_by_default, fail_requests_gt_one;
    struct fatia_share_res *res;
    size_t n_res;
    uint64_t memory_per_replica; /* 0: (memory - replicas x reserve) / replicas */
    bool has_context_reserve;
    uint64_t context_reserve;
    uint32_t thread_percentage; /* MPS; 0: 100 / replicas */
    uint64_t pinned_memory;     /* MPS; 0: memory / replicas */
    uint32_t max_shares;        /* fractional; 0: no limit */
};

struct fatia_supply_config {
    struct fatia_pool *pools;
    size_t n_pools;
    struct fatia_policy *policies;
    size_t n_policies;
    const struct fatia_srcmap *map; /* positions of the objects' members, may be NULL */
};

/* Compiles the NodePools and GPUSharingPolicies of set (in input order). Problems go to diag
 * with the object and field; returns 0, -FATIA_E_INVALID (nothing kept) or -ENOMEM. */
int fatia_supply_config_load(struct fatia_supply_config *cfg, const struct fatia_objset *set,
                             struct fatia_diag *diag);
void fatia_supply_config_release(struct fatia_supply_config *cfg);

/* Reports an error at a member of an object: parent/key (or parent/index when key is NULL)
 * locate the position; path is the field path printed ("spec.gpus[1].product"). */
void fatia_supply_error_at(struct fatia_diag *diag, const struct fatia_srcmap *map,
                           const struct fatia_object *obj, const json_t *parent, const char *key,
                           size_t index, const char *path, const char *fmt, ...) FATIA_PRINTF(8, 9);

#endif
