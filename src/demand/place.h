/*
 * demand/place.h: placement of admitted work on concrete nodes and slices (pure).
 *
 * A placement state is a snapshot of the fleet as the supply layer planned it (nodes with their
 * labels, taints and allocatable resources; GPUs with their slices, fraction pools, MIG layouts
 * and NVLink islands) plus what is allocated to which pod. It is built once from a supply plan and
 * then changed incrementally: fatia_place_commit / fatia_place_bind add a pod, fatia_place_unbind
 * removes one, fatia_place_mig_apply changes a GPU's MIG layout. fatiad's placement controller
 * keeps one alive and feeds it binds and unbinds; the simulator does the same in virtual time;
 * `fatia place` builds one, places, and prints.
 *
 * fatia_place_workload places the pods of one admitted workload, all of them or none (gang): it
 * tries pod after pod, each on the best node under the policy, with the allocations of the pods
 * before it in force, and rolls everything back when one pod cannot be placed. It never changes
 * the state: the caller commits the result (or not). With FATIA_PLACE_TEST it ignores every
 * allocation and answers "could this ever fit, and where" on the empty fleet (MIG layouts may then
 * be re-planned freely): the simulator uses it to reject work that can never run, fatiad to mark
 * pods unschedulable instead of waiting forever.
 *
 * What a pod may ask for (place_pod.c compiles a pod spec into struct fatia_place_pod):
 *   - cpu, memory, pods, ephemeral-storage and any other resource the nodes advertise: checked
 *     against the node's allocatable minus what its pods use (Kubernetes' effective requests:
 *     max(init containers, sum of containers) + overhead);
 *   - device resources, per container: a count of slices of a resource the supply plan publishes
 *     (nvidia.com/gpu whole GPUs, nvidia.com/gpu.shared time-slice or MPS replicas,
 *     nvidia.com/mig-1g.18gb MIG instances, renamed resources);
 *   - fractions (DESIGN §7): fatia.dev/gpu-milli (thousandths of one GPU) and/or
 *     fatia.dev/gpu-memory (bytes), packed onto GPUs of a `fractional` policy; gpu-milli of 1000,
 *     2000, ... asks for that many whole GPUs of a fractional pool (GPUs nobody shares);
 *   - nodeSelector, required node affinity (In, NotIn, Exists, DoesNotExist, Gt, Lt, matchFields
 *     metadata.name), tolerations, spec.nodeName, and the node labels and tolerations of the
 *     ResourceFlavors its workload was admitted to;
 *   - annotation fatia.dev/nvlink: "required" puts the GPUs of a multi-GPU container in one NVLink
 *     island (fatia.dev/nvlinkIsland); default "preferred" (one island when possible).
 * MPS serves one uid per GPU at a time (DESIGN §7 trust model): pods of different namespaces never
 * hold MPS shares of the same GPU at once.
 *
 * Policies (how the node and the GPUs are chosen among those that fit; ties go to the node and GPU
 * listed first, so results are reproducible):
 *   binpack        fewest GPUs touched that were untouched, then the fullest node (default);
 *   bestfit        least capacity left on the chosen GPUs, then least left on the node
 *                  (GPU and CPU, each normalised by the largest node, weighted 1/2 each);
 *   spread         most capacity left on the node, fresh GPUs first;
 *   fragmentation  the placement that least increases the node's fragmentation measured against
 *                  the request mix seen so far (FGD, Weng et al., ATC '23; place_frag.c).
 *
 * Dynamic MIG (place_mig.c): with opts.mig = FATIA_PLACE_MIG_FREE, a pod that asks for MIG
 * instances a node lacks may have the node's MIG GPUs re-laid by the supply layer's pool planner
 * (fatia_mig_plan_pool), keeping every busy instance; with FATIA_PLACE_MIG_EVICT, instances held
 * by pods of lower priority may go too, and those pods are returned as victims. The result then
 * carries the layout changes; committing it applies them (fatia_place_mig_apply). MIG is never
 * switched on a real GPU from here: the daemon hands the layouts to the supply layer.
 *
 * Memory: a state borrows the plan (and through it the inventory, the config and the objset); it
 * must not outlive them. Results own their memory. Nothing here reads a clock or does I/O.
 */
#ifndef FATIA_DEMAND_PLACE_H
#define FATIA_DEMAND_PLACE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "supply/mig.h"
#include "supply/plan.h"

struct fatia_place_state;
struct fatia_place_pod;
struct fatia_place_mix;
struct fatia_place_device;
struct fatia_dra_classes;

enum fatia_place_policy {
    FATIA_PLACE_BINPACK,
    FATIA_PLACE_BESTFIT,
    FATIA_PLACE_SPREAD,
    FATIA_PLACE_FRAGMENTATION,
};

/* "binpack", "bestfit", "spread", "fragmentation"; parse accepts those and "best-fit", "fgd".
 * Parse returns 0 or -EINVAL. */
const char *fatia_place_policy_name(enum fatia_place_policy p);
int fatia_place_policy_parse(const char *s, enum fatia_place_policy *ret);

/* ---- the state ---- */

/* Builds the state of a plan (nothing allocated). Only slices that exist (simulated or applied)
 * are allocatable; planned MIG instances become allocatable when fatia_place_mig_apply says so.
 * 0, -ENOMEM, -FATIA_E_LIMIT (a GPU with more than 1024 slices). */
int fatia_place_state_new(const struct fatia_plan *plan, struct fatia_place_state **ret);
void fatia_place_state_free(struct fatia_place_state *st);

/* Counts for reports. GPU figures are in thousandths of a GPU (milli-GPUs): a whole GPU, a fraction
 * pool or a MIG GPU counts 1000; a slice counts its share (replicas 1000/n, a MIG instance its
 * memory slices / the GPU's). */
struct fatia_place_stats {
    uint32_t nodes, gpus;
    uint64_t gpu_milli_total;     /* gpus x 1000 */
    uint64_t gpu_milli_allocated; /* held by bound pods */
    uint32_t gpus_untouched;      /* GPUs with nothing allocated */
    uint32_t gpus_full;           /* GPUs with nothing left */
    uint32_t pods;                /* bound pods */
};

void fatia_place_state_stats(const struct fatia_place_state *st, struct fatia_place_stats *ret);

/* Per-GPU use, for the simulator's reports: the number of pods using GPU g now and its sharing
 * strategy ("whole", "timeslice", "mps", "mig", "fraction"). g indexes the state's GPUs in plan
 * order (node by node). */
size_t fatia_place_gpu_count(const struct fatia_place_state *st);
uint32_t fatia_place_gpu_users(const struct fatia_place_state *st, size_t g);
const char *fatia_place_gpu_strategy(const struct fatia_place_state *st, size_t g);
uint32_t fatia_place_gpu_node(const struct fatia_place_state *st, size_t g);
/* Milli-GPUs left on GPU g (see stats). */
uint32_t fatia_place_gpu_free_milli(const struct fatia_place_state *st, size_t g);

/* The share of its GPU's SMs a device may use: a MIG instance its SMs / the GPU's, an MPS share
 * its active thread percentage, anything else 1. */
double fatia_place_device_sm_share(const struct fatia_place_state *st,
                                   const struct fatia_place_device *d);

size_t fatia_place_node_count(const struct fatia_place_state *st);
const char *fatia_place_node_name(const struct fatia_place_state *st, size_t node);

/* ---- pods ---- */

/* A flavor the workload was admitted to: its spec.nodeLabels must be on the node, and its
 * spec.tolerations add to the pod's. Both borrowed, may be NULL. */
struct fatia_place_flavor {
    const json_t *node_labels;
    const json_t *tolerations;
};

/* Compiles a pod: spec is a PodSpec (a Pod's spec, or a pod set template's spec), meta its
 * metadata (annotations; may be NULL), ns its namespace. priority orders victims for MIG
 * eviction. Resource names are interned into the state (a pod is valid for that state only).
 * Returns 0, -EINVAL with why ("spec.containers[0].resources.requests[fatia.dev/gpu-milli]: 1500
 * is neither below 1000 nor a multiple of 1000"), -ENOMEM. */
int fatia_place_pod_compile(struct fatia_place_state *st, const char *ns, const json_t *meta,
                            const json_t *spec, const struct fatia_place_flavor *flavors,
                            size_t n_flavors, int32_t priority, struct fatia_place_pod **ret,
                            char *why, size_t why_n);
void fatia_place_pod_free(struct fatia_place_pod *pod);

/* ---- DRA claims (place_claims.c) ---- */

/* Lets pods use ResourceClaims: builds the DRA inventory of the plan's ResourceSlices and the
 * DeviceClasses cls (borrowed: they must outlive the state; NULL turns claims off). 0, -EINVAL
 * (why), -ENOMEM. */
int fatia_place_set_dra(struct fatia_place_state *st, const struct fatia_dra_classes *cls,
                        char *why, size_t why_n);

/* Finds an object (kind "ResourceClaim" or "ResourceClaimTemplate") by namespace and name:
 * borrowed, validated, or NULL. */
typedef const json_t *(*fatia_place_lookup_fn)(void *ud, const char *kind, const char *ns,
                                               const char *name);

/* Reads the pod's spec.resourceClaims (spec is the one given to fatia_place_pod_compile): a
 * template's claim is the pod's own, a named claim is shared (and, when already allocated, ties
 * the pod to its node). 0, -EINVAL (why: a missing claim or template), -ENOMEM. */
int fatia_place_pod_claims(struct fatia_place_state *st, struct fatia_place_pod *pod,
                           const json_t *spec, fatia_place_lookup_fn lookup, void *ud, char *why,
                           size_t why_n);

/* True when the pod asks for nothing a GPU gives. */
bool fatia_place_pod_is_cpu_only(const struct fatia_place_pod *pod);
/* The GPUs the pod asks for, in milli-GPUs (a fraction its gpu-milli, a whole GPU 1000, a
 * replica or a MIG instance its share of a GPU of the fleet's first such slice). */
uint64_t fatia_place_pod_gpu_milli(const struct fatia_place_state *st,
                                   const struct fatia_place_pod *pod);

/* ---- the request mix (for the fragmentation policy and the fragmentation report) ---- */

/* A mix belongs to one state (it caches per-node figures of it). coverage_pct: the measure uses
 * the most popular request types, added 10 at a time, until they cover at least this share of
 * the pods recorded (the FGD authors' "typical pods", 60 in their artifact); 100 uses every type.
 * 0 means 100. */
int fatia_place_mix_new(const struct fatia_place_state *st, unsigned coverage_pct,
                        struct fatia_place_mix **ret);
void fatia_place_mix_free(struct fatia_place_mix *mix);
/* Records one pod of this shape (CPU-only pods are not recorded, unless FATIA_PLACE_MIX_CPU: they
 * leave GPUs as they are, so they change no exact placement score; nothing is recorded once the
 * mix is frozen). 0 or -ENOMEM. */
int fatia_place_mix_add(struct fatia_place_mix *mix, const struct fatia_place_pod *pod);
/* Distinct request types recorded, and those the measure uses now. */
size_t fatia_place_mix_types(const struct fatia_place_mix *mix);
size_t fatia_place_mix_typical(struct fatia_place_mix *mix);
/* The FGD artifact's variants of the mix (kubernetes-scheduler-simulator, GetTypicalPods):
 * FATIA_PLACE_MIX_CPU records CPU-only pods as request types too (its isInvolvedCpuPods: true);
 * such a type shows every node all of its free GPU capacity as fragmented (the artifact's
 * XLSatisfied and XRLackCPU both count), so it takes a share of the typical coverage and adds
 * p x R_n to F_n. fatia_place_mix_freeze: later fatia_place_mix_add calls change nothing (the
 * artifact computes its typical pods once, from the whole pod list, before placing any). */
#define FATIA_PLACE_MIX_CPU (1u << 0)
/* FATIA_PLACE_MIX_TYPES: a request type is what the artifact's PodResource keeps (CPU, GPU request
 * and GPU-model constraint, no memory), not the pod's whole shape: pods that differ only in memory
 * are one type, so the typical cut keeps types (multi-GPU ones among them) that memory would split
 * into many rare ones. */
#define FATIA_PLACE_MIX_TYPES (1u << 1)
void fatia_place_mix_set_flags(struct fatia_place_mix *mix, unsigned flags);
void fatia_place_mix_freeze(struct fatia_place_mix *mix);

/* The fragmentation of a node against the mix, in milli-GPUs (place_frag.c): the expected
 * amount of the node's free GPU capacity that a pod drawn from the mix could not use. For a
 * request type m and node n, F_n(m) is all of n's free GPU capacity when m cannot be placed on
 * n at all (filters, CPU, memory, or not enough usable GPUs), else the free capacity of the GPUs
 * that cannot hold one of m's GPU units; F_n = sum over m of p_m F_n(m). */
double fatia_place_frag_node(struct fatia_place_mix *mix, size_t node);
/* Sum over every node. */
double fatia_place_frag_total(struct fatia_place_mix *mix);

/* ---- placing ---- */

#define FATIA_PLACE_TEST (1u << 0) /* ignore allocations: could it ever fit, and where */
/* The fragmentation policy scores as the FGD artifact's plugin does (fgd_score.go): a node (and a
 * fraction's GPU) gets int(100 x sigmoid((F_before - F_after) / 1000)), F in milli-GPUs, so
 * growths within about 40 milli-GPUs of each other tie; the highest wins, a GPU tie going to the
 * GPU listed first. */
#define FATIA_PLACE_FGD_SCORE (1u << 1)
/* fatia's improvement on FGD (docs/sim.md, "Beyond FGD"): candidates the fragmentation key ties
 * are ordered by the node's free GPU capacity after the pod, then its free CPU after (least
 * first: pack), before any random draw. A CPU-only pod, which FGD sees as costless on every node
 * where it crosses no type's CPU threshold, then goes where the fewest GPUs are left free: the CPU
 * it takes there could serve no GPU pod anyway. */
#define FATIA_PLACE_FGD_PACK (1u << 2)
/* The same for CPU-only pods only (GPU pods' ties stay as they are). */
#define FATIA_PLACE_FGD_PACK_CPU (1u << 3)
/* fatia's second improvement (docs/sim.md, "Beyond FGD: scarce"): a GPU pod's fragmentation key
 * is raised by the scarcity of the node's class: the demand, per free GPU, of the typical types
 * that only some node classes admit (a GPU model constraint), spread over the classes that admit
 * them (place_frag.c), in units of the balanced value. A pod that may run anywhere then leaves
 * alone the model that choosy pods are short of. Nothing changes where no typical type is choosy. */
#define FATIA_PLACE_FGD_SCARCE (1u << 4)
/* A GPU pod's candidates the fragmentation key ties are ordered by the free capacity left on the
 * GPUs the pod takes (least first: best fit of the GPU), before any random draw. */
#define FATIA_PLACE_FGD_FIT (1u << 5)

enum fatia_place_mig {
    FATIA_PLACE_MIG_OFF,   /* MIG layouts stay as they are */
    FATIA_PLACE_MIG_FREE,  /* re-lay MIG GPUs, keeping every instance in use */
    FATIA_PLACE_MIG_EVICT, /* ... and instances of lower-priority pods, evicting them */
};

struct fatia_place_opts {
    enum fatia_place_policy policy;
    unsigned flags;              /* FATIA_PLACE_* */
    enum fatia_place_mig mig;    /* dynamic MIG */
    struct fatia_place_mix *mix; /* for the fragmentation policy (of this state); NULL: the
                                    policy falls back to bestfit */
    /* non-NULL: nodes with equal scores are drawn at random, each with the same chance (kube-
     * scheduler's selectHost, a reservoir sample), from this SplitMix64 state; NULL: the node
     * listed first wins (reproducible without a seed) */
    uint64_t *ties;
};

#define FATIA_PLACE_FRACTION 0xffffu /* fatia_place_device.slice of a fraction */

/* One device a container gets. */
struct fatia_place_device {
    uint16_t container; /* index in spec.containers; init containers follow (containers + i) */
    uint32_t gpu;       /* state GPU index */
    uint16_t slice;     /* index in the GPU's slices, or FATIA_PLACE_FRACTION */
    uint16_t fraction;  /* k of gpu-<minor>-f<k> */
    int32_t milli;      /* a fraction's gpu-milli (1000 for a whole GPU of a fraction pool) */
    uint64_t memory;    /* its memory cap (a fraction's), else the slice's memory */
    /* filled in by fatia_place_workload (a FATIA_PLACE_TEST result's slices may be in layouts the
     * state does not have): the device's id, kind (enum fatia_slice_kind) and resource */
    char id[64];
    uint8_t kind;
    char resource[64];
};

struct fatia_place_pod_result {
    uint32_t node;
    size_t n_devices;
    struct fatia_place_device *devices; /* claims' devices included */
    /* the pod's claims: [{"name": entry, "claim": "ns/name" (named claims) or null,
     * "allocation": status.allocation, or null when the claim was allocated before or by an
     * earlier pod of the workload}], or NULL without claims */
    json_t *claims;
};

/* A MIG layout change a placement needs. */
struct fatia_place_mig_change {
    uint32_t gpu;
    struct fatia_mig_layout layout; /* the new layout */
};

struct fatia_place_result {
    bool placed;
    size_t n_pods;
    struct fatia_place_pod_result *pods; /* per pod, in request order (when placed) */
    size_t n_mig;
    struct fatia_place_mig_change *mig; /* layout changes to apply first */
    size_t n_victims;
    char **victims; /* keys of bound pods the MIG changes evict */
    char *reason;   /* why not (when not placed): "pod 1/4: 0/3 nodes are available: ..." */
};

/* Places the pods of one workload (gang). Returns 0 with *ret (placed or not: see ret->placed
 * and ret->reason), -ENOMEM. The state is not changed. */
int fatia_place_workload(struct fatia_place_state *st, struct fatia_place_pod *const *pods,
                         size_t n_pods, const struct fatia_place_opts *opts,
                         struct fatia_place_result **ret);
void fatia_place_result_free(struct fatia_place_result *r);

/* Commits a placed result: applies its MIG changes (after unbinding the victims, which the caller
 * must also stop), then binds pod i under keys[i] ("ns/name", copied). 0, -EINVAL (not placed, a
 * key already bound, or the result no longer fits the state), -ENOMEM (nothing changed). */
int fatia_place_commit(struct fatia_place_state *st, struct fatia_place_pod *const *pods,
                       const char *const *keys, const struct fatia_place_result *r);

/* Binds one pod to explicit devices on a node (a pod the daemon finds already bound). The devices
 * must be free. 0, -EINVAL (why says which device is taken or missing), -FATIA_E_EXISTS (key
 * bound), -ENOMEM. */
int fatia_place_bind(struct fatia_place_state *st, const char *key,
                     const struct fatia_place_pod *pod, const struct fatia_place_pod_result *pr,
                     char *why, size_t why_n);

/* Releases everything a pod holds. 0 or -ENOENT. */
int fatia_place_unbind(struct fatia_place_state *st, const char *key);
bool fatia_place_is_bound(const struct fatia_place_state *st, const char *key);

/* Applies a MIG layout change to a GPU whose changed instances are all free. 0, -EBUSY (an
 * instance in use would go), -EINVAL (layout invalid for the GPU), -ENOMEM. */
int fatia_place_mig_apply(struct fatia_place_state *st, const struct fatia_place_mig_change *ch);

/* Checks the state's invariants (place_state.c): every counter equals what the bindings hold.
 * 0, or -EFAULT with the first difference in why. For tests; O(bindings + GPUs + slices). */
int fatia_place_check(const struct fatia_place_state *st, char *why, size_t why_n);

/* ---- rendering ---- */

/* The id of a device ("gpu-3", "gpu-0-ts2", "gpu-4-mig-1g18gb-19-2", "gpu-6-f1"). */
int fatia_place_device_id(const struct fatia_place_state *st, const struct fatia_place_device *d,
                          char *buf, size_t n);

/* One pod's placement as JSON: {"node": N, "devices": [{"container", "id", "kind", "resource",
 * "gpu", "memoryBytes", "gpuMilli"?}]}. container_names (may be NULL) name containers by index. */
json_t *fatia_place_pod_result_json(const struct fatia_place_state *st,
                                    const struct fatia_place_pod_result *pr,
                                    const char *const *container_names, size_t n_names);

/* A MIG change as JSON: {"node", "gpu", "layout": ["1g.18gb@0", ...]}. */
json_t *fatia_place_mig_change_json(const struct fatia_place_state *st,
                                    const struct fatia_place_mig_change *ch);

#endif
