/*
 * supply/mig.h: the MIG planner (pure): layouts on one GPU, and layout choice across a pool.
 *
 * A layout is a set of GPU instances, each a profile at a placement start (in memory slices, as
 * NVML's nvmlGpuInstancePlacement_t). A layout is valid on a geometry when (reference
 * nvidia-slicing.md §1.4):
 *   1. every start is one of its profile's possible placements;
 *   2. no two instances share a memory slice;
 *   3. per profile, instances <= the profile's instance limit (so one "+me" instance);
 *   4. the compute slices add up to at most the GPU's;
 *   5. a "+me.all" instance excludes every other instance but "-me" ones.
 *
 * fatia_mig_place turns a profile multiset into placements or says why it cannot, naming the
 * first rule broken ("2 x 4g.71gb: NVIDIA H200 has one 4g placement (start 0)"). Among valid
 * placements it picks the one that leaves the most placements open on the free slices (so a
 * partial layout keeps room for the largest later addition), then the first in (start) order.
 *
 * fatia_mig_plan_pool chooses new layouts for a pool of GPUs given demand per profile. Each GPU
 * has a current layout, some of whose instances are busy (in use: they must stay). The objective,
 * compared lexicographically:
 *   1. most demand served, counted in compute slices: sum over profiles p of
 *      min(demand_p, free instances of p) x g_p;
 *   2. then most instances served (the same sum without the weight);
 *   3. then fewest GPUs reconfigured (new layout != current layout);
 *   4. then least stranded capacity: memory slices of free instances that serve no demand.
 * It is an exact dynamic program over GPUs whose state is the supply so far capped at demand (the
 * objective depends only on that and on additive per-GPU costs); per GPU only the distinct supply
 * vectors of its valid layouts matter, with the cheapest layout for each. When the state space
 * exceeds a budget (large pools with large demand) it solves chunks of 4 GPUs exactly in order
 * and says so (exact = false). Pools of up to 4 GPUs always stay within the budget (at most
 * ~50,000 states for an 8-slice GPU): tests compare them with brute force.
 */
#ifndef FATIA_SUPPLY_MIG_H
#define FATIA_SUPPLY_MIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "supply/catalog.h"

struct fatia_mig_placement {
    const struct fatia_mig_profile *profile; /* into the geometry */
    uint8_t start;
};

struct fatia_mig_layout {
    uint8_t n;
    struct fatia_mig_placement v[FATIA_MIG_MAX_INSTANCES];
};

/* 0 when l is valid on g, else -FATIA_E_NOFIT with the broken rule in why. */
int fatia_mig_layout_check(const struct fatia_mig_geom *g, const char *gpu_name,
                           const struct fatia_mig_layout *l, char *why, size_t why_n);

/* Canonical order (start ascending) and equality of layouts as sets. */
void fatia_mig_layout_sort(struct fatia_mig_layout *l);
bool fatia_mig_layout_equal(const struct fatia_mig_layout *a, const struct fatia_mig_layout *b);

/* Places counts[i] instances of g->profiles[i] for every i. When prefer (may be NULL) has
 * exactly that multiset and is valid it is returned unchanged (no needless reconfiguration).
 * Returns 0 and *ret (sorted by start), or -FATIA_E_NOFIT with the reason in why. */
int fatia_mig_place(const struct fatia_mig_geom *g, const char *gpu_name, const uint8_t *counts,
                    const struct fatia_mig_layout *prefer, struct fatia_mig_layout *ret, char *why,
                    size_t why_n);

/* A mig-parted named config as profile counts: "all-disabled" (enabled false), "all-enabled"
 * (MIG on, no instances), "all-balanced", "all-<profile>" with '+' written as '.'
 * ("all-1g.18gb.me"), each profile at its instance limit. -FATIA_E_NOFIT with why for a name
 * that does not fit this GPU. */
int fatia_mig_named_config(const struct fatia_mig_geom *g, const char *gpu_name, const char *config,
                           uint8_t *counts, bool *ret_enabled, char *why, size_t why_n);

/* Every valid layout of g (the empty one included), in a stable order. */
struct fatia_mig_layouts {
    struct fatia_mig_layout *v;
    size_t n, cap;
};

int fatia_mig_enumerate(const struct fatia_mig_geom *g, struct fatia_mig_layouts *ret);
void fatia_mig_layouts_release(struct fatia_mig_layouts *ls);

/* ---- pool planning ---- */

struct fatia_mig_pool_gpu {
    const struct fatia_mig_geom *geom;
    struct fatia_mig_layout current;
    uint32_t busy; /* bit i: current.v[i] is in use and must stay */
};

struct fatia_mig_demand {
    const char *profile; /* "1g.18gb" */
    uint32_t count;
};

struct fatia_mig_pool_score {
    uint64_t served_slices; /* in compute slices */
    uint64_t served_instances;
    uint32_t reconfigured;    /* GPUs whose layout changed */
    uint64_t stranded_slices; /* memory slices of free instances that serve no demand */
};

struct fatia_mig_pool_result {
    struct fatia_mig_layout *layouts; /* one per GPU */
    bool *changed;                    /* one per GPU */
    uint32_t *served;                 /* one per demand entry */
    struct fatia_mig_pool_score score;
    bool exact; /* false when the budget forced chunking */
};

int fatia_mig_plan_pool(const struct fatia_mig_pool_gpu *gpus, size_t n_gpus,
                        const struct fatia_mig_demand *demand, size_t n_demand,
                        struct fatia_mig_pool_result *ret);
void fatia_mig_pool_result_release(struct fatia_mig_pool_result *r);

/* The objective of given layouts (one per GPU); -FATIA_E_NOFIT when a layout is invalid or
 * drops a busy instance. */
int fatia_mig_pool_evaluate(const struct fatia_mig_pool_gpu *gpus, size_t n_gpus,
                            const struct fatia_mig_demand *demand, size_t n_demand,
                            const struct fatia_mig_layout *layouts,
                            struct fatia_mig_pool_score *ret);

/* <0, 0, >0 as a is worse than, equal to, better than b under the objective above. */
int fatia_mig_pool_score_cmp(const struct fatia_mig_pool_score *a,
                             const struct fatia_mig_pool_score *b);

#endif
