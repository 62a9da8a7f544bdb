/*
 * controller/placement_internal.h: what the placement controller's two files share:
 * placement.c (pods, bindings, the placement state, plans) and placement_claims.c (DRA
 * ResourceClaims: finding or creating a pod's claims, allocating them, holding their devices,
 * writing their status before the pod's binding). Internal to src/controller.
 */
#ifndef FATIA_CONTROLLER_PLACEMENT_INTERNAL_H
#define FATIA_CONTROLLER_PLACEMENT_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/map.h"
#include "controller/ctl_internal.h"
#include "controller/device.h"
#include "demand/place.h"
#include "supply/plan.h"

#define COMPONENT "fatia-scheduler"

struct binding {
    char *key, *uid, *node;
    char **slices; /* "node|id" of each slice held (fractions: "node|gpu-<minor>-f<k>") */
    size_t n_slices;
    bool confirmed; /* the stored pod shows the binding */
};

struct slice_ref {
    uint32_t gpu;   /* state GPU */
    uint16_t slice; /* index in the GPU's slices, or FATIA_PLACE_FRACTION for a fraction pool */
    const struct fatia_slice *ps;
};

struct placement_ctl {
    struct ctl *ctl;
    struct device_ctl *dev;
    struct wq *q;        /* pod keys to place */
    struct wq *status_q; /* pod keys whose PodScheduled condition to write */
    struct informer *pods;
    const struct fatia_plan *plan;
    struct fatia_place_state *st;
    struct fatia_strmap slice_ix; /* "node|id" -> struct slice_ref (this plan) */
    struct fatia_strmap bound;    /* pod key -> struct binding */
    struct fatia_strmap held;     /* "node|id" -> pod key (borrowed from the binding) */
    struct fatia_strmap waiting;  /* pod key -> message (owned) */
    enum fatia_place_policy policy;
    uint64_t binds, unbinds, conflicts;
    /* DRA */
    struct wq *claims_q; /* claim keys whose reservedFor / allocation to tidy */
    struct informer *claims, *templates, *rslices, *classes;
    struct fatia_place_pod *claim_pod; /* an empty pod: what a claim's binding holds besides
                                          its devices (nothing) */
};

struct bind_ctx {
    struct placement_ctl *p;
    char key[600];
    char uid[80];
    char node[256];
};

/* ---- DRA claims (placement_claims.c) ---- */

#define CLAIM_PREFIX   "claim:"
#define MAX_POD_CLAIMS 32

struct pod_claim {
    char entry[64]; /* spec.resourceClaims[].name */
    char name[256]; /* the ResourceClaim */
    const json_t *claim;
    json_t *alloc; /* a new status.allocation (owned), when this attempt allocates it */
    struct fatia_place_device devs[16];
    size_t n_devs;
};

struct pod_claims {
    struct pod_claim v[MAX_POD_CLAIMS];
    size_t n;
    char node[256]; /* the node the claims pin, "" when none does */
};

struct claims_write {
    struct placement_ctl *p;
    char key[600];
    json_t *pod_update;
    struct bind_ctx *bc;
    int outstanding;
    bool failed;
};

struct claim_write_one {
    struct claims_write *cw;
    char ckey[700];
    bool fresh; /* allocated by this attempt */
};

/* ---- placement.c, for the claims ---- */

/* Unbinds and forgets a pod's or a claim's binding. */
void fatia_controller_placement_release(struct placement_ctl *p, const char *key);
/* The plan's node of that name, or SIZE_MAX. */
size_t fatia_controller_placement_node_index(const struct fatia_plan *plan, const char *name);
/* Records the binding of key (a pod, or "claim:ns/name") to devs on node. 0 or -ENOMEM. */
int fatia_controller_placement_record(struct placement_ctl *p, const char *key, const json_t *pod,
                                      const char *node, const struct fatia_place_device *devs,
                                      size_t n, bool confirmed);
/* One entry of the fatia.dev/devices annotation; NULL if the device is no slice of the plan. */
json_t *fatia_controller_placement_device_json(struct placement_ctl *p, const json_t *spec,
                                               const char *node,
                                               const struct fatia_place_device *d);
/* Every claim write of cw answered: writes the pod's binding, or gives its slices back. */
void fatia_controller_placement_claims_written(struct claims_write *cw);

/* ---- placement_claims.c ---- */

int fatia_controller_claims_init(struct placement_ctl *p);
bool fatia_controller_claims_pod_has(const json_t *pod);
/* A pod that ended or went away: its claims may release it. */
void fatia_controller_claims_touch(struct placement_ctl *p, const json_t *pod);
void fatia_controller_claims_release(struct pod_claims *pc);
/* A claim the store shows allocated is held in the state. */
void fatia_controller_claims_adopt(struct placement_ctl *p, const json_t *claim);
/* Finds (or creates) the claims of a pod. 0 ready, -EAGAIN (a claim is being created),
 * -ENOENT / -EINVAL with why (unschedulable). */
int fatia_controller_claims_prepare(struct placement_ctl *p, const char *key, const json_t *pod,
                                    struct pod_claims *pc, char *why, size_t why_n);
/* Allocates the pod's unallocated claims, on its pinned node if any. 0, or <0 with why. */
int fatia_controller_claims_allocate(struct placement_ctl *p, struct pod_claims *pc, char *why,
                                     size_t why_n);
/* The devices annotation entries of the pod's claims, one per (container using it, device). */
int fatia_controller_claims_devices_json(struct placement_ctl *p, const json_t *pod,
                                         struct pod_claims *pc, const char *node, json_t *devs,
                                         struct fatia_buf *slices);
int fatia_controller_claims_bind_fresh(struct placement_ctl *p, const char *key, const json_t *pod,
                                       const struct pod_claims *pc, const char *node);
int fatia_controller_claims_write(struct placement_ctl *p, const char *key, const json_t *pod,
                                  const struct pod_claims *pc, json_t *np, struct bind_ctx *bc);

#endif
