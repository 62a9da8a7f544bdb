/*
 * supply/plan.h: the supply planner (pure): inventory + sharing policies -> per node capacity,
 * allocatable and labels, and the slices every GPU is cut into.
 *
 * fatia_supply_plan resolves, for every GPU, at most one policy per layer (MIG layer; sharing
 * layer: time-slicing, MPS or fractions), places MIG layouts with the MIG planner (mig.h) and
 * emits slices in node, GPU, placement, replica order. Any error (a layout a product cannot take,
 * two policies on one layer of a GPU, MPS or fractions on a MIG GPU, replicas that leave no
 * memory, a single strategy on a node that is not uniform) is reported with the policy's object
 * and field path, and no plan is returned: nothing is half-applied.
 *
 * Slice ids are the NVIDIA DRA driver's device names (reference nvidia-slicing.md §6.2, DESIGN
 * §7): gpu-<minor> for a whole GPU, gpu-<minor>-mig-<profile without dots>-<profileId>-<start> for
 * a MIG instance, and fatia's suffixes -ts<k> (time-slice replica), -mps<k> (MPS share). A GPU
 * shared in fractions is one slice, gpu-<minor>, of kind fraction; the fractions the placement
 * cuts from it are named gpu-<minor>-f<k> (fatia_plan_fraction_id).
 *
 * State of a slice: `simulated` (sim inventory: the layout is taken as made), `applied` (NVML
 * shows the GPU already cut this way, or the strategy needs no hardware change), `planned` (the
 * policy asks for a MIG change the GPU does not have yet: see `fatia plan --apply`). Node
 * allocatable counts only slices that exist (simulated or applied); capacity counts all.
 *
 * The plan borrows the inventory, the config and the catalog: it must not outlive them.
 */
#ifndef FATIA_SUPPLY_PLAN_H
#define FATIA_SUPPLY_PLAN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/map.h"
#include "model/diag.h"
#include "supply/config.h"
#include "supply/inventory.h"
#include "supply/mig.h"

enum fatia_slice_kind {
    FATIA_SLICE_WHOLE,
    FATIA_SLICE_TIMESLICE,
    FATIA_SLICE_MPS,
    FATIA_SLICE_MIG,
    FATIA_SLICE_FRACTION,
};

enum fatia_isolation {
    FATIA_ISO_NONE,
    FATIA_ISO_MEMORY_CAPPED, /* time-slice replicas and fractions: the agent's interposer caps */
    FATIA_ISO_MPS,           /* MPS: separate address spaces, shared fault domain */
    FATIA_ISO_HARDWARE,      /* a whole GPU or a MIG instance */
};

enum fatia_slice_state {
    FATIA_STATE_SIMULATED,
    FATIA_STATE_APPLIED,
    FATIA_STATE_PLANNED,
};

#define FATIA_NO_MIG 0xff

struct fatia_slice {
    uint32_t node;              /* index into plan->nodes */
    uint16_t gpu;               /* index into the node's GPUs */
    uint8_t kind;               /* enum fatia_slice_kind */
    uint8_t isolation;          /* enum fatia_isolation */
    uint8_t state;              /* enum fatia_slice_state */
    uint8_t mig;                /* the MIG instance (index into the GPU's layout) it is or shares */
    uint16_t replica;           /* k of -ts<k> / -mps<k> */
    uint16_t resource;          /* index into plan->resources */
    uint16_t thread_percentage; /* MPS active thread percentage; 100 otherwise */
    uint32_t multiprocessors;   /* SMs it may use (an MPS share: SMs x percentage / 100) */
    uint64_t memory_bytes;      /* device memory it may allocate (its cap) */
};

struct fatia_plan_gpu {
    const struct fatia_inv_gpu *inv;
    const struct fatia_policy *mig_policy;   /* NULL: no MIG layer policy */
    const struct fatia_policy *share_policy; /* NULL: not shared */
    uint8_t strategy;                        /* enum fatia_mig_strategy */
    bool mig_enabled;                        /* the planned MIG mode */
    uint8_t state;                           /* enum fatia_slice_state of the MIG layer */
    const struct fatia_mig_layout *layout;   /* planned MIG instances (owned by the plan) */
    uint32_t replicas; /* sharing replicas of the GPU's devices (1: not shared) */
    uint64_t context_reserve;
    uint32_t first_slice, n_slices;
};

struct fatia_plan_cap {
    uint16_t resource;
    int64_t capacity;
    int64_t allocatable;
};

struct fatia_plan_node {
    const struct fatia_inv_node *inv;
    struct fatia_plan_gpu *gpus; /* n = inv->n_gpus */
    uint32_t first_slice, n_slices;
    uint32_t first_cap, n_caps;
};

struct fatia_plan {
    const struct fatia_inventory *inv;
    const struct fatia_supply_config *cfg;
    struct fatia_plan_node *nodes;
    size_t n_nodes;
    struct fatia_plan_gpu *gpu_store;
    struct fatia_slice *slices;
    size_t n_slices, slices_cap;
    struct fatia_plan_cap *caps;
    size_t n_caps, caps_cap;
    char **resources; /* resource names, interned */
    size_t n_resources, resources_cap;
    struct fatia_strmap resource_index;
    struct fatia_mig_layout **layouts; /* owned layouts the GPUs point at */
    size_t n_layouts, layouts_cap;
};

/* Plans. Returns 0 and *ret, or -FATIA_E_INVALID with every problem in diag (no plan), -ENOMEM. */
int fatia_supply_plan(const struct fatia_inventory *inv, const struct fatia_supply_config *cfg,
                      struct fatia_diag *diag, struct fatia_plan **ret);
void fatia_plan_free(struct fatia_plan *plan);

/* The slice's id ("gpu-0-mig-3g71gb-9-4", "gpu-2-ts3"); returns snprintf's length. */
int fatia_plan_slice_id(const struct fatia_plan *plan, const struct fatia_slice *s, char *buf,
                        size_t n);
/* The one rule for slice ids, from their parts (fatia_plan_slice_id and placement's device ids
 * call it): "gpu-<minor>", then for a MIG instance (mig non-NULL) "-mig-<profile>-<id>-<start>"
 * with the profile as the DRA driver names it (dots dropped, lowercased, any other character but
 * [a-z0-9-] made '-', leading and trailing '-' trimmed, at most 39 bytes: "3g.71gb" -> "3g71gb",
 * "1g.18gb+me" -> "1g18gb-me"), then "-ts<replica>" or "-mps<replica>" for a time-sliced or MPS
 * share. Returns snprintf's length (>= n: truncated). */
int fatia_supply_slice_id(uint32_t minor, const struct fatia_mig_placement *mig,
                          enum fatia_slice_kind kind, unsigned replica, char *buf, size_t n);
/* The id of fraction k of a fractional GPU: "gpu-<minor>-f<k>". */
int fatia_plan_fraction_id(uint32_t minor, uint32_t k, char *buf, size_t n);

/* Names: "whole", "timeslice", "mps", "mig", "fraction"; "none", "memory-capped", "mps",
 * "hardware"; "simulated", "applied", "planned"; "none", "single", "mixed". */
const char *fatia_slice_kind_name(enum fatia_slice_kind k);
const char *fatia_isolation_name(enum fatia_isolation i);
const char *fatia_slice_state_name(enum fatia_slice_state s);
const char *fatia_mig_strategy_name(enum fatia_mig_strategy s);

/* The resource a MIG profile is counted under in the mixed strategy: "nvidia.com/mig-1g.18gb",
 * with '+' written as '.' ("nvidia.com/mig-1g.18gb.me"), as the device plugin names it. */
void fatia_mig_resource_name(const char *profile, char *buf, size_t n);

/* ---- rendering (render.c) ---- */

/* {"inventory": {...}, "nodes": [...], "gpus": [...], "slices": [...]}: the `fatia plan -o json`
 * document (docs/supply.md). NULL on OOM. */
json_t *fatia_plan_to_json(const struct fatia_plan *plan);

/* One node: {"name", "pool", "capacity", "allocatable", "labels", "taints"}. */
json_t *fatia_plan_node_json(const struct fatia_plan *plan, size_t node);
/* The node's labels: its pool's, kubernetes.io/hostname, fatia.dev labels and GPU Feature
 * Discovery's nvidia.com labels as GFD would set them for this cut. Adds to labels. */
int fatia_plan_node_labels(const struct fatia_plan *plan, size_t node, json_t *labels);
/* One GPU of a node: inventory facts, the policies and the MIG layout. */
json_t *fatia_plan_gpu_json(const struct fatia_plan *plan, size_t node, size_t gpu);
/* One slice: {"id", "node", "gpu": {...}, "kind", "profile", "memoryBytes", "multiprocessors",
 * "resource", "isolation", "state", "attributes": {...}, "capacity": {...}}. */
json_t *fatia_plan_slice_json(const struct fatia_plan *plan, const struct fatia_slice *s);
/* The slice's DRA attributes and capacity, typed as a ResourceSlice device's
 * ({"type": {"string": "gpu"}}, {"memory": {"value": "143771Mi"}}). */
json_t *fatia_plan_slice_attributes(const struct fatia_plan *plan, const struct fatia_slice *s);
json_t *fatia_plan_slice_capacity(const struct fatia_plan *plan, const struct fatia_slice *s);
/* resource.k8s.io/v1 ResourceSlices for a node (driver gpu.nvidia.com, pool = node name, at most
 * 128 devices each): a JSON array. */
json_t *fatia_plan_resourceslices(const struct fatia_plan *plan, size_t node);

/* GFD's label sanitizer: drops characters outside [A-Za-z0-9-_. ], joins words with '-'. */
void fatia_gfd_sanitize(const char *in, char *buf, size_t n);

#endif
