/*
 * demand/dra.h: Dynamic Resource Allocation: devices from ResourceSlices, DeviceClasses,
 * allocating a ResourceClaim to devices, NVIDIA's sharing configuration, and claims -> quota.
 *
 * Model. An inventory holds the devices of a set of resource.k8s.io/v1 ResourceSlices (the
 * supply layer publishes them; attributes and capacities as NVIDIA's DRA driver names them, plus
 * fatia.dev/nvlinkIsland), keeping only the newest generation of each pool and ordering the
 * devices deterministically: by node name, then driver, pool and device name, names compared
 * "naturally" (gpu-2 before gpu-10). A state says which devices are already allocated to other
 * claims. fatia_dra_allocate is pure: inventory + classes + state + one claim spec -> an
 * allocation or an explanation; the caller commits it into the state, writes it into the
 * claim's status and reserves the claim for its pods.
 *
 * Search order (documented because results must be reproducible): nodes in inventory order
 * (devices without a node, published with allNodes or a nodeSelector, are usable with any node
 * whose labels match); on each node, requests in the claim's order; for a firstAvailable
 * request its subrequests in order; for each request the matching free devices in inventory
 * order, chosen as the lexicographically first combination that satisfies every constraint
 * (depth-first search with backtracking across requests, bounded by opts->max_steps). The first
 * node on which everything fits wins.
 *
 * CEL selector errors (a missing attribute: "no such key") make that device not match and are
 * reported in the explanation; upstream aborts the allocation attempt on that node instead
 * (docs/demand.md). A claim that is already allocated (status.allocation set) is never allocated
 * again: pods sharing it go where its devices are (fatia_dra_claim_node).
 */
#ifndef FATIA_DEMAND_DRA_H
#define FATIA_DEMAND_DRA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "cel/cel.h"

/* ---- devices ---- */

struct fatia_dra_device {
    char *driver, *pool, *name;
    char *node;                  /* the slice's (or device's) nodeName; NULL when not node-local */
    json_t *node_selector;       /* a NodeSelector restricting it, or NULL (owned reference) */
    bool all_nodes;              /* published with allNodes: usable from every node */
    int64_t generation;          /* of its pool */
    struct fatia_cel_device cel; /* the view selectors evaluate */
    struct fatia_cel_attr *attrs;
    struct fatia_cel_capacity *caps;
    struct fatia_semver *versions; /* parsed version attributes, one per attr (unused if not) */
};

struct fatia_dra_node_range {
    const char *node; /* borrowed from its first device */
    size_t first, n;  /* its devices: devs[first .. first + n) */
};

struct fatia_dra_inventory {
    struct fatia_dra_device *devs;
    size_t n, cap;
    bool finished;
    /* set by fatia_dra_inventory_finish: the node-local devices of each node (in node order),
     * and where the devices that are not node-local start (they sort last) */
    struct fatia_dra_node_range *nodes;
    size_t n_nodes;
    size_t first_unbound;
};

void fatia_dra_inventory_init(struct fatia_dra_inventory *inv);
void fatia_dra_inventory_release(struct fatia_dra_inventory *inv);

/* Adds the devices of one ResourceSlice (a validated object, borrowed). 0, -EINVAL (why says
 * what is wrong: no spec.driver, a bad attribute value), -ENOMEM. */
int fatia_dra_inventory_add_slice(struct fatia_dra_inventory *inv, const json_t *slice, char *why,
                                  size_t why_n);

/* Drops devices of superseded pool generations and sorts (see the search order above). Must be
 * called once after the last add and before any lookup or allocation. 0 or -ENOMEM. */
int fatia_dra_inventory_finish(struct fatia_dra_inventory *inv);

/* The node-local devices of node (NULL if it has none). O(log nodes). */
const struct fatia_dra_node_range *fatia_dra_inventory_node(const struct fatia_dra_inventory *inv,
                                                            const char *node);

/* The index of driver/pool/device, or -1. */
long fatia_dra_inventory_find(const struct fatia_dra_inventory *inv, const char *driver,
                              const char *pool, const char *device);

/* Looks up an attribute of a device by its fully qualified name ("gpu.nvidia.com/parentUUID";
 * an attribute published unqualified belongs to the driver's domain). NULL if absent. */
const struct fatia_cel_attr *fatia_dra_device_attr(const struct fatia_dra_device *d,
                                                   const char *qualified_name);

/* Does the device's node restriction admit node `node` with labels `labels` (may be NULL)? */
bool fatia_dra_device_on_node(const struct fatia_dra_device *d, const char *node,
                              const json_t *labels);

/* ---- device classes ---- */

struct fatia_dra_class {
    char *name;
    struct fatia_cel_program **selectors;
    size_t n_selectors;
    json_t *config; /* spec.config (owned reference), or NULL */
};

struct fatia_dra_classes {
    struct fatia_dra_class *v;
    size_t n, cap;
};

void fatia_dra_classes_init(struct fatia_dra_classes *c);
void fatia_dra_classes_release(struct fatia_dra_classes *c);

/* Adds a DeviceClass (validated object, borrowed), compiling its selectors. 0, -EINVAL with
 * why ("deviceclass/gpu.nvidia.com: spec.selectors[0].cel.expression: 1:3: ..."),
 * -FATIA_E_EXISTS (same name twice), -ENOMEM. */
int fatia_dra_classes_add(struct fatia_dra_classes *c, const json_t *deviceclass, char *why,
                          size_t why_n);

const struct fatia_dra_class *fatia_dra_classes_get(const struct fatia_dra_classes *c,
                                                    const char *name);

/* ---- allocation state ---- */

struct fatia_dra_state {
    uint8_t *used; /* per inventory device: allocated to some claim */
    size_t n;
};

int fatia_dra_state_init(struct fatia_dra_state *st, const struct fatia_dra_inventory *inv);
void fatia_dra_state_release(struct fatia_dra_state *st);

/* Marks the devices of an allocated ResourceClaim (its status.allocation.devices.results) as
 * used; results with adminAccess and devices no longer in the inventory are skipped. Returns
 * the number marked. */
size_t fatia_dra_state_mark_claim(struct fatia_dra_state *st, const struct fatia_dra_inventory *inv,
                                  const json_t *claim);

/* ---- NVIDIA sharing configuration (resource.nvidia.com/v1beta1, nvidia-slicing.md §6.3) ---- */

enum fatia_dra_share {
    FATIA_DRA_SHARE_NONE, /* no config: the driver's default (exclusive, time-sliced default) */
    FATIA_DRA_SHARE_TIMESLICING,
    FATIA_DRA_SHARE_MPS,
};

enum fatia_dra_config_kind {
    FATIA_DRA_CONFIG_GPU,  /* GpuConfig: whole GPUs */
    FATIA_DRA_CONFIG_MIG,  /* MigDeviceConfig: MIG devices */
    FATIA_DRA_CONFIG_VFIO, /* VfioDeviceConfig */
};

struct fatia_dra_sharing {
    enum fatia_dra_config_kind kind;
    enum fatia_dra_share strategy;
    int interval;              /* TimeSlicing: 0 Default, 1 Short, 2 Medium, 3 Long; -1 unset */
    int thread_percentage;     /* MPS defaultActiveThreadPercentage; -1 unset */
    uint64_t pinned_mem;       /* MPS defaultPinnedDeviceMemoryLimit in bytes; 0 unset */
    json_t *per_device_limits; /* MPS defaultPerDevicePinnedMemoryLimit (owned), or NULL */
};

/* Parses and validates the parameters of an opaque config for driver gpu.nvidia.com, as the
 * driver's strict decoder and Validate() do: known apiVersion and kind, no unknown fields, a
 * strategy of TimeSlicing or MPS, no mpsConfig with TimeSlicing (nor timeSlicingConfig with
 * MPS), interval Default|Short|Medium|Long, thread percentage 0..100, memory limits >= 1Mi.
 * Returns 0, or -EINVAL with why and the failing path relative to `parameters` in path ("sharing.
 * mpsConfig.defaultActiveThreadPercentage"). ret may be NULL; release with
 * fatia_dra_sharing_release. */
int fatia_dra_nvidia_config_parse(const json_t *params, struct fatia_dra_sharing *ret, char *path,
                                  size_t path_n, char *why, size_t why_n);
void fatia_dra_sharing_release(struct fatia_dra_sharing *s);

#define FATIA_DRA_DRIVER_NVIDIA "gpu.nvidia.com"

/* ---- allocation ---- */

/* What the supply layer forbids on this fleet (opts.sharing_denied). */
#define FATIA_DRA_DENY_TIMESLICING (1u << 0) /* TimeSlicing sharing configs */
#define FATIA_DRA_DENY_MPS         (1u << 1) /* MPS sharing configs */

struct fatia_dra_alloc_opts {
    const char *node;          /* only this node (plus network-attached devices); NULL = any */
    const json_t *node_labels; /* labels of `node`, for devices with a nodeSelector; may be NULL */
    unsigned sharing_denied;   /* FATIA_DRA_DENY_* */
    uint64_t max_steps;        /* search budget per node; 0 = 200000 */
    uint64_t cel_cost_limit;   /* per selector evaluation; 0 = FATIA_CEL_COST_LIMIT */
};

struct fatia_dra_result {
    char *request; /* "gpus" or "gpus/large" for a firstAvailable subrequest */
    size_t device; /* index into the inventory */
    bool admin_access;
};

struct fatia_dra_config_entry {
    bool from_class;
    char **requests; /* NULL-terminated; empty = all */
    json_t *opaque;  /* {driver, parameters} (owned reference) */
};

struct fatia_dra_allocation {
    char *node; /* where the devices are; NULL if none is node-local */
    struct fatia_dra_result *results;
    size_t n_results;
    struct fatia_dra_config_entry *config;
    size_t n_config;
    /* per result: the sharing its NVIDIA config asks for (FATIA_DRA_SHARE_NONE if none) */
    struct fatia_dra_sharing *sharing;
};

/* Allocates the devices a ResourceClaimSpec ({devices: {requests, constraints, config}}, a
 * validated tree, borrowed) asks for. Returns 0 and *ret; -FATIA_E_NOFIT when it does not fit
 * (explain says why, per node tried); -FATIA_E_INVALID when the claim cannot be allocated
 * anywhere (unknown DeviceClass, a sharing config the fleet forbids or that does not fit the
 * device type: explain says which); -FATIA_E_LIMIT when the search budget ran out; -ENOMEM.
 * explain may be NULL. */
int fatia_dra_allocate(const struct fatia_dra_inventory *inv, const struct fatia_dra_classes *cls,
                       const struct fatia_dra_state *st, const json_t *claim_spec,
                       const struct fatia_dra_alloc_opts *opts, struct fatia_dra_allocation **ret,
                       struct fatia_buf *explain);

/* Marks the allocation's devices (except adminAccess ones) used. */
void fatia_dra_state_commit(struct fatia_dra_state *st, const struct fatia_dra_allocation *a);

/* The allocation as a ResourceClaim's status.allocation ({devices: {results, config},
 * nodeSelector}: matchFields metadata.name In [node], as kube-scheduler writes it). New
 * reference; NULL on OOM. allocationTimestamp is the caller's (policy code reads no clock). */
json_t *fatia_dra_allocation_to_json(const struct fatia_dra_inventory *inv,
                                     const struct fatia_dra_allocation *a);

void fatia_dra_allocation_free(struct fatia_dra_allocation *a);

/* ---- claims and pods ---- */

/* Is the claim allocated (status.allocation present)? */
bool fatia_dra_claim_allocated(const json_t *claim);

/* The node an allocated claim's devices are on (from status.allocation.nodeSelector), or NULL
 * when it is not allocated or not node-local. Borrowed from the claim. */
const char *fatia_dra_claim_node(const json_t *claim);

/* Adds a consumer to status.reservedFor (a claim shared by several pods is allocated once and
 * reserved for each). Idempotent per uid. 0, -FATIA_E_LIMIT (256 consumers, upstream's limit),
 * -ENOMEM. */
int fatia_dra_claim_reserve(json_t *claim, const char *resource, const char *name, const char *uid);

/* The ResourceClaim a ResourceClaimTemplate generates for pod pod_name's entry pod_claim_name:
 * named "<pod>-<entry>" in the template's namespace, with the template's labels and
 * annotations, the annotation resource.kubernetes.io/pod-claim-name, and spec = the template's
 * spec.spec (upstream appends a random suffix; fatia's names are deterministic). New reference
 * in *ret. 0, -EINVAL (no spec.spec), -ENOMEM. */
int fatia_dra_claim_from_template(const json_t *tmpl, const char *pod_name,
                                  const char *pod_claim_name, json_t **ret);

/* ---- claims -> quota (Kueue's deviceClassMappings) ---- */

struct fatia_dra_mapping {
    char *resource;        /* the logical resource counted against quota ("nvidia.com/gpu") */
    char **device_classes; /* NULL-terminated */
};

struct fatia_dra_mappings {
    struct fatia_dra_mapping *v;
    size_t n;
};

/* Reads Kueue's deviceClassMappings list ([{name, deviceClassNames: [...]}]); a SchedulerConfig
 * keeps it at spec.resources.deviceClassMappings (fatia_dra_mappings_from_config). A device
 * class may map to one resource only. 0, -EINVAL (why), -ENOMEM. */
int fatia_dra_mappings_parse(const json_t *list, struct fatia_dra_mappings *ret, char *why,
                             size_t why_n);
int fatia_dra_mappings_from_config(const json_t *scheduler_config, struct fatia_dra_mappings *ret,
                                   char *why, size_t why_n);
void fatia_dra_mappings_release(struct fatia_dra_mappings *m);

/* The resource a DeviceClass counts as, or NULL. */
const char *fatia_dra_mappings_lookup(const struct fatia_dra_mappings *m, const char *device_class);

/* Adds what one pod's claims cost to requests (a JSON object resource -> quantity, added to):
 * for each spec.resourceClaims entry naming a ResourceClaimTemplate, each request counts its
 * count (ExactCount) against the resource its DeviceClass maps to; a firstAvailable request
 * counts when all its alternatives map to the same resource with the same count; adminAccess
 * requests count nothing; allocationMode All, an unmapped class or differing alternatives are
 * errors, as in Kueue (pkg/dra/claims.go). Entries naming an existing ResourceClaim are skipped:
 * a shared claim is counted by whoever created it, not per pod. lookup returns the template
 * (borrowed) or NULL. 0, -EINVAL with why ("spec.resourceClaims[0]: ResourceClaimTemplate
 * 'gpu': devices.requests[0].exactly.allocationMode: All is not supported"), -ENOMEM. */
typedef const json_t *(*fatia_dra_template_lookup_fn)(void *ud, const char *ns, const char *name);
int fatia_dra_pod_claim_requests(const struct fatia_dra_mappings *m, const json_t *pod_spec,
                                 const char *ns, fatia_dra_template_lookup_fn lookup, void *ud,
                                 json_t *requests, char *why, size_t why_n);

/* The same for every podSet of a Kueue Workload: *ret maps podSet name -> what one pod of it
 * costs through its claims ({"workers": {"nvidia.com/gpu": "2"}}); podSets without claims are
 * left out. The admission engine adds these to the podSets' container requests (times count).
 * 0 and *ret (new reference), -EINVAL (why is prefixed with "spec.podSets[i].template."),
 * -ENOMEM. */
int fatia_dra_workload_claim_requests(const struct fatia_dra_mappings *m, const json_t *workload,
                                      fatia_dra_template_lookup_fn lookup, void *ud, json_t **ret,
                                      char *why, size_t why_n);

#endif
