/*
 * demand/place_internal.h: the placement state and compiled pods, shared by place*.c only.
 *
 * Layout: nodes own a range of GPUs (first_gpu, n_gpus); a GPU owns its slices (a small array it
 * can replace when its MIG layout changes). A slice is held by at most one binding (owner); a
 * fraction pool is held by any number of bindings, each with its own fraction id. Bindings live in
 * a vector with a free list and are found by key through a hash map; each records exactly what it
 * took (scalars, items), so unbind gives back exactly that.
 *
 * Counters kept per GPU (users, n_used, milli_free, mem_free, shares, mps owner) and per node
 * (scalar use, touched GPUs) are what the policies read; place_check() in tests recomputes them
 * from the bindings.
 */
#ifndef FATIA_DEMAND_PLACE_INTERNAL_H
#define FATIA_DEMAND_PLACE_INTERNAL_H

#include "base/buf.h"
#include "base/map.h"
#include "base/vec.h"
#include "demand/dra.h"
#include "demand/place.h"

#define PL_NO_OWNER     (-1)
#define PL_MAX_FRACTION 256 /* fraction ids per GPU (f0..f255) */
#define PL_CHANGES      256 /* the log of changed nodes (fatia_place_state.chg) */

enum pl_res_kind {
    PL_RES_SCALAR,     /* cpu, memory, pods, ... checked against node allocatable */
    PL_RES_DEVICE,     /* published by slices: nvidia.com/gpu, nvidia.com/mig-1g.18gb, ... */
    PL_RES_GPU_MILLI,  /* fatia.dev/gpu-milli */
    PL_RES_GPU_MEMORY, /* fatia.dev/gpu-memory */
};

struct pl_res {
    char *name;
    uint8_t kind;
    int32_t slot; /* scalars: index into node scalar arrays; -1 otherwise */
};

struct pl_restab {
    FATIA_VEC(struct pl_res) v;
    struct fatia_strmap index;
    size_t n_scalars;
};

struct pl_slice {
    uint16_t res;
    uint8_t kind;   /* enum fatia_slice_kind */
    uint8_t exists; /* allocatable (not a planned MIG instance) */
    uint8_t mig;    /* index into the GPU's layout, or FATIA_NO_MIG */
    uint16_t replica;
    uint16_t weight; /* milli-GPUs this slice is of its GPU */
    uint64_t memory;
    int32_t owner; /* binding index or PL_NO_OWNER */
    int32_t dra;   /* its device in the DRA inventory, or -1 */
};

enum pl_strategy {
    PL_GPU_WHOLE,
    PL_GPU_TIMESLICE,
    PL_GPU_MPS,
    PL_GPU_MIG,
    PL_GPU_FRACTION,
};

struct pl_gpu {
    uint32_t node;
    uint32_t index, minor;
    int island;
    const struct fatia_gpu_model *model;
    uint8_t strategy;  /* enum pl_strategy */
    bool mig_dynamic;  /* MIG, mixed strategy, not time-sliced: may be re-laid */
    bool mig_enabled;  /* MIG mode on (planned or real) */
    uint16_t replicas; /* time-slice / MPS replicas per base device (1: none) */
    struct fatia_mig_layout layout;
    struct pl_slice *slices;
    uint16_t n_slices;
    uint16_t n_used; /* slices with an owner */
    /* fraction pool */
    bool fractional;
    int32_t milli_free;
    uint64_t mem_total, mem_free, ctx_reserve;
    uint64_t mem_per_milli; /* mem_total / 1000 */
    uint16_t shares, max_shares;
    uint64_t fmask[PL_MAX_FRACTION / 64];
    /* MPS: one namespace at a time */
    uint32_t mps_ns; /* interned namespace id + 1; 0 = nobody */
    /* pods using the GPU in any way */
    uint32_t users;
};

struct pl_taint {
    char *key, *value, *effect;
    char *desc; /* "had untolerated taint {key: value}" (kube-scheduler's words) */
};

struct pl_node {
    const char *name; /* borrowed from the inventory */
    json_t *labels;   /* owned */
    struct pl_taint *taints;
    size_t n_taints;
    uint32_t first_gpu, n_gpus;
    size_t n_scalar; /* scalar slots known when the node was built */
    int64_t *alloc;  /* per scalar slot, milli-units */
    int64_t *used;
    uint32_t touched;      /* GPUs of the node with users > 0 */
    uint64_t gen;          /* bumped by every committed change (bind, unbind, layout) */
    uint64_t sig, sig_gen; /* place.c's node_sig, valid while sig_gen == gen */
    /* fraction pools, for a quick "no" (fatia_pl_node_summary): the most milli-GPUs one fraction could
     * get (-1: no pool with room for one more), and the pools nobody uses */
    int32_t frac_max_free;
    uint32_t frac_whole_free;
    uint64_t cls; /* nodes of one class have equal labels (but the host name), taints,
                     allocatable and GPUs: a hash */
};

struct pl_item {
    uint32_t gpu;
    uint16_t slice; /* or FATIA_PLACE_FRACTION */
    uint16_t container;
    uint16_t fraction;
    int32_t milli;
    uint64_t memory;     /* cap */
    uint64_t mem_charge; /* what the fraction pool was charged */
};

struct pl_scalar {
    uint16_t res;
    int64_t milli;
};

struct pl_bind {
    char *key; /* NULL: a free entry */
    uint32_t node;
    uint32_t ns;
    int32_t priority;
    struct pl_scalar *scalars;
    size_t n_scalars;
    struct pl_item *items;
    size_t n_items;
    int32_t next_free;
};

struct fatia_place_state {
    const struct fatia_plan *plan;
    struct pl_restab *res; /* shared with the test twin */
    bool owns_res;
    struct pl_node *nodes;
    size_t n_nodes;
    struct pl_gpu *gpus;
    size_t n_gpus;
    FATIA_VEC(struct pl_bind) binds;
    int32_t free_bind;
    size_t n_bound;
    struct fatia_strmap bind_index;
    /* namespaces, interned (for MPS ownership) */
    FATIA_VEC(char *) namespaces;
    struct fatia_strmap ns_index;
    /* normalisers of best-fit: the largest node's cpu and GPU count */
    int64_t max_cpu_milli;
    uint32_t max_node_gpus;
    uint64_t layout_gen; /* bumped by every MIG change */
    /* the nodes whose gen moved, oldest first: change i (of chg_seq so far) is chg[i % PL_CHANGES]
     * while i + PL_CHANGES >= chg_seq (fatia_pl_node_changed; place_frag.c's scarcity follows it) */
    uint32_t chg[PL_CHANGES];
    uint64_t chg_seq;
    /* the empty twin for FATIA_PLACE_TEST, rebuilt when layout_gen moved */
    struct fatia_place_state *twin;
    uint64_t twin_gen;
    /* place.c's memo of node evaluations (struct memo, memo_cap entries: a power of two), NULL
     * until used */
    void *memo;
    size_t memo_cap;
    uint64_t memo_epoch;
    /* DRA (place_claims.c): the inventory of the plan's ResourceSlices, its used flags (kept equal
     * to the slices' owners by fatia_pl_apply_items) and device -> slice */
    const struct fatia_dra_classes *dra_cls;
    struct fatia_dra_inventory *dra_inv;
    bool dra_borrowed; /* the test twin shares its original's inventory */
    struct fatia_dra_state dra_st;

    struct pl_dra_ref {
        uint32_t gpu; /* UINT32_MAX: no slice */
        uint16_t slice;
    } * dra_map;

    uint64_t dra_map_gen;
    /* resource ids of well-known names (or UINT16_MAX) */
    uint16_t r_cpu, r_memory, r_pods, r_gpu_milli, r_gpu_memory;
};

/* ---- compiled pods ---- */

struct pl_req {
    uint16_t container;
    uint16_t res;
    uint32_t count;
};

struct pl_frac {
    uint16_t container;
    int32_t milli;   /* < 1000: a fraction; k x 1000: k whole GPUs of a fraction pool */
    uint64_t memory; /* fatia.dev/gpu-memory, 0 = proportional to milli */
};

enum pl_sel_op {
    PL_OP_IN,
    PL_OP_NOT_IN,
    PL_OP_EXISTS,
    PL_OP_DOES_NOT_EXIST,
    PL_OP_GT,
    PL_OP_LT,
};

struct pl_expr {
    char *key;
    uint8_t op;
    bool field; /* matchFields (metadata.name) */
    char **values;
    size_t n_values;
};

struct pl_term {
    struct pl_expr *e;
    size_t n;
};

struct pl_tol {
    char *key, *value, *effect;
    bool exists;
};

struct pl_claim {
    char *entry;          /* spec.resourceClaims[].name */
    char *claim;          /* "ns/name" of a named (shared) claim; NULL for a template's */
    json_t *spec;         /* the ResourceClaimSpec (owned reference) */
    char *allocated_node; /* a named claim already allocated: its node ("" if not node-local) */
    uint16_t container;   /* the first container that uses it */
};

enum pl_nvlink {
    PL_NVLINK_PREFERRED,
    PL_NVLINK_REQUIRED,
};

struct fatia_place_pod {
    char *ns_name;
    uint32_t ns; /* interned id + 1 */
    int32_t priority;
    struct pl_scalar *scalars; /* effective requests, scalar resources only */
    size_t n_scalars;
    struct pl_req *reqs;
    size_t n_reqs;
    struct pl_frac *fracs;
    size_t n_fracs;
    uint16_t n_containers; /* containers + init containers */
    /* constraints */
    char **sel_keys, **sel_values; /* nodeSelector and flavor node labels (ANDed) */
    size_t n_sel;
    struct pl_term *terms; /* required node affinity (ORed); NULL = none */
    size_t n_terms;
    struct pl_tol *tols;
    size_t n_tols;
    char *node_name;
    uint8_t nvlink;
    uint64_t cons_hash;  /* hash of the constraints above */
    uint64_t shape_hash; /* hash of the requests */
    char *unknown_res;   /* a requested resource no node has, or NULL */
    struct pl_claim *claims;
    size_t n_claims;
};

/* ---- helpers across files ---- */

/* place_state.c */
char *fatia_pl_strprintf(const char *fmt, ...)
    FATIA_PRINTF(1, 2); /* fatia_free() it; NULL on OOM */
int fatia_pl_res_intern(struct pl_restab *t, const char *name, uint8_t kind_hint, uint16_t *ret);
const struct pl_res *fatia_pl_res_get(const struct fatia_place_state *st, uint16_t id);
int fatia_pl_ns_intern(struct fatia_place_state *st, const char *ns, uint32_t *ret);

/* A committed change of the node (bind, unbind, layout): bumps its gen and logs it. */
static inline void fatia_pl_node_changed(struct fatia_place_state *st, uint32_t node)
{
    st->nodes[node].gen++;
    st->chg[st->chg_seq++ % PL_CHANGES] = node;
}

/* The free capacity, milli-GPUs, of a GPU that is not a fraction pool: its free slices' weights
 * (and, for dynamic MIG, the memory slices no instance covers). */
uint32_t fatia_pl_gpu_free_slices(const struct pl_gpu *g);
uint32_t fatia_pl_gpu_total_milli(const struct pl_gpu *g);

/* The next three are inline: the fragmentation measure (place_frag.c) asks them for every GPU and
 * request group it measures. */

/* A GPU's free capacity, milli-GPUs: a fraction pool's free milli, else its free slices'. */
static inline uint32_t fatia_pl_gpu_free_milli(const struct pl_gpu *g)
{
    if (g->fractional)
        return g->milli_free > 0 ? (uint32_t)g->milli_free : 0;
    return fatia_pl_gpu_free_slices(g);
}

/* The memory a fraction of milli / memory request is charged, and its cap. */
static inline void fatia_pl_frac_charge(const struct pl_gpu *g, int32_t milli, uint64_t memory,
                                        uint64_t *ret_charge, uint64_t *ret_cap)
{
    uint64_t charge, cap;

    if (milli >= 1000) {
        charge = g->mem_total;
        cap = g->mem_total > g->ctx_reserve ? g->mem_total - g->ctx_reserve : 0;
    } else if (memory) {
        charge = memory + g->ctx_reserve;
        cap = memory;
    } else {
        charge = g->mem_per_milli * (uint64_t)milli; /* mem_total / 1000 x milli */
        cap = charge > g->ctx_reserve ? charge - g->ctx_reserve : 0;
    }
    *ret_charge = charge;
    *ret_cap = cap;
}

/* Does one more fraction f (or f's whole GPUs, one of them) fit on fraction pool g? */
static inline bool fatia_pl_frac_fits(const struct pl_gpu *g, const struct pl_frac *f)
{
    uint64_t charge, cap;

    if (!g->fractional)
        return false;
    if (f->milli >= 1000)
        return g->users == 0 && g->shares == 0;
    if (g->milli_free < f->milli || g->shares >= g->max_shares)
        return false;
    fatia_pl_frac_charge(g, f->milli, f->memory, &charge, &cap);
    return charge <= g->mem_free && g->shares < PL_MAX_FRACTION;
}

/* Apply (+1) or revert (-1) items and scalars on the counters (no binding). */
void fatia_pl_apply_items(struct fatia_place_state *st, uint32_t node, const struct pl_item *items,
                          size_t n, uint32_t ns, int sign);
void fatia_pl_apply_scalars(struct fatia_place_state *st, uint32_t node, const struct pl_scalar *sc,
                            size_t n, int sign);
int fatia_pl_bind_items(struct fatia_place_state *st, const char *key, uint32_t node, uint32_t ns,
                        int32_t priority, const struct pl_scalar *sc, size_t n_sc,
                        const struct pl_item *items, size_t n_items);
int fatia_pl_state_twin(struct fatia_place_state *st, struct fatia_place_state **ret);
int fatia_pl_gpu_set_layout(struct fatia_place_state *st, struct pl_gpu *g,
                            const struct fatia_mig_layout *layout);
int fatia_pl_first_free_fraction(const struct pl_gpu *g);
void fatia_pl_node_summary(struct fatia_place_state *st, uint32_t node);
uint64_t fatia_pl_node_class(const struct fatia_place_state *st, const struct pl_node *n);

/* place_match.c */
/* NULL when the pod may go to the node, else a reason (kube-scheduler's words). */
const char *fatia_pl_node_mismatch(const struct fatia_place_state *st,
                                   const struct fatia_place_pod *pod, const struct pl_node *node);

/* place_frag.c */
/* Makes the typical types current and every node's cached figures valid. 0 or -ENOMEM. */
int fatia_pl_mix_prepare(struct fatia_place_mix *mix);
/* True once fatia_place_mix_freeze was called: the measure no longer changes between pods, so
 * placement's per-node answers stay valid across pods (keyed by the node's state only). */
bool fatia_pl_mix_frozen(const struct fatia_place_mix *mix);
/* The node's measure (cached). */
double fatia_pl_frag_node(struct fatia_place_mix *mix, uint32_t node);
/* The node's measure with the current counters (nothing cached): after tentative changes. */
double fatia_pl_frag_node_now(struct fatia_place_mix *mix, uint32_t node);
/* The node's measure if GPU g changed from `before` to the current counters of st->gpus[g] and
 * the node's cpu and memory use from the cache by d_cpu, d_mem (milli); uses the cache: valid
 * only for one change on a node whose cache is current. */
double fatia_pl_frag_node_one(struct fatia_place_mix *mix, uint32_t node, uint32_t g,
                              const struct pl_gpu *before, int64_t d_cpu, int64_t d_mem);
/* The same for k GPUs gis[0..k) of the node, distinct, changed from before[0..k), and the node's
 * cpu use by d_cpu: O(groups x distinct changes) from the cache (GPUs changed alike are measured
 * once), valid under the same conditions; k at most 16 (more: fatia_pl_frag_node_now). */
double fatia_pl_frag_node_many(struct fatia_place_mix *mix, uint32_t node, const uint32_t *gis,
                               const struct pl_gpu *before, size_t k, int64_t d_cpu);

/* fatia's scarcity key (FATIA_PLACE_FGD_SCARCE, place.h): per node class, the pressure on it of
 * the typical types that only some classes admit: sum over such groups g admitted by the class of
 * p_g x (g's GPU demand per pod) / (free GPU capacity of every class admitting g). *ret_cls: one
 * per class, *ret_node_cls: each node's class; both NULL when no typical type is choosy (every
 * node alike). Valid until the next call or change. 0 or -ENOMEM. */
int fatia_pl_mix_scarcity(struct fatia_place_mix *mix, const double **ret_cls,
                          const uint32_t **ret_node_cls);

/* place_claims.c */
int fatia_pl_dra_map(struct fatia_place_state *st);
void fatia_pl_dra_release(struct fatia_place_state *st);
void fatia_pl_claims_free(struct fatia_place_pod *pod);

/* place_mig.c */
struct pl_mig_try {
    size_t n;
    struct fatia_place_mig_change ch[FATIA_NODE_MAX_GPUS];
    size_t n_victims;
    int32_t victims[64]; /* binding indices */
};

/* Tries to re-lay the MIG GPUs of a node so that the pod's MIG requests (not met by free
 * instances) can be served. 0 and *ret (changes to make), -FATIA_E_NOFIT, -ENOMEM. */
int fatia_pl_mig_try_node(struct fatia_place_state *st, const struct fatia_place_pod *pod,
                          uint32_t node, enum fatia_place_mig mode, struct pl_mig_try *ret);

#endif
