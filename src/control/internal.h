/*
 * control/internal.h: the admission engine's data structures, shared by the files of
 * src/control (not a public header).
 *
 * Interning: resource names, flavor names and (flavor, resource) pairs ("fr") are small dense
 * integers, so quota and usage are flat arrays indexed by fr id on every node of the quota tree.
 * Amounts are int64 milli-units (cpu 500m = 500, memory 1Gi = 1073741824000, nvidia.com/gpu 2 =
 * 2000), read with fatia_quantity_milli, and every sum saturates at INT64_MAX / INT64_MIN as
 * Kueue's resources.Amount does (a 9 PiB memory quota saturates; nothing wraps).
 *
 * The quota tree (Kueue pkg/cache/scheduler/resource_node.go): every ClusterQueue and Cohort is a
 * struct ctl_node with per-fr {nominal, borrowingLimit, lendingLimit, subtree quota, usage}.
 * Cohorts referenced by name only are implicit nodes without quota. Usage of a ClusterQueue is the
 * sum of its admitted (and evicting) workloads; a cohort's usage is what its children use past
 * their local (lending-limited) quota. Invariant: after every engine call, each node's usage
 * equals that recomputed from the admitted workloads (fatia_control_check verifies it).
 */
#ifndef FATIA_CONTROL_INTERNAL_H
#define FATIA_CONTROL_INTERNAL_H

#include "base/compat.h"

#include <jansson.h>

#include "base/buf.h"
#include "base/map.h"
#include "base/vec.h"
#include "control/control.h"
#include "model/selector.h"

typedef int64_t amt_t;
#define AMT_NONE INT64_MIN /* an absent limit */
#define AMT_MAX  INT64_MAX

static inline amt_t amt_add(amt_t a, amt_t b)
{
    amt_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN + 1;
    return r;
}

static inline amt_t amt_sub(amt_t a, amt_t b)
{
    amt_t r;
    if (__builtin_sub_overflow(a, b, &r))
        return b < 0 ? INT64_MAX : INT64_MIN + 1;
    return r;
}

static inline amt_t amt_mul(amt_t a, int64_t k)
{
    amt_t r;
    if (__builtin_mul_overflow(a, k, &r))
        return ((a < 0) != (k < 0)) ? INT64_MIN + 1 : INT64_MAX;
    return r;
}

static inline amt_t amt_max(amt_t a, amt_t b)
{
    return a > b ? a : b;
}

static inline amt_t amt_min(amt_t a, amt_t b)
{
    return a < b ? a : b;
}

/* ---- quota tree ---- */

struct ctl_slot {
    amt_t nominal;
    amt_t blimit; /* AMT_NONE: unlimited */
    amt_t llimit; /* AMT_NONE: lends everything */
    amt_t subtree;
    amt_t usage;
    uint32_t users; /* ClusterQueues: admitted (and evicting) workloads with a use of this fr */
};

struct ctl_cq;
struct ctl_cohort;

struct ctl_node {
    struct ctl_node *parent; /* NULL: root (or no cohort, or in a cycle) */
    struct ctl_slot *slot;   /* n_fr_cap entries of the engine */
    uint32_t *frs;           /* fr ids with quota or usage in the subtree, sorted */
    size_t n_frs;
    double weight; /* fairSharing.weight; 1 by default */
    int height;    /* Kueue getNodeHeight: 0 for a ClusterQueue */
    bool is_cq;
    uint64_t epoch; /* bumped whenever usage changes (fair-sharing caches) */
    /* fatia_control_drs_of's cache, two entries (the last value and the one before): an entry
     * is valid while the engine's tree generation is its drs_gen and the usage of every fr in
     * frs equals its drs_use (a search removes and puts back usage, which moves the epoch but
     * not the value); the current entry (drs_cur) also while the epoch is drs_epoch */
    uint64_t drs_epoch, drs_gen[2];
    double drs_ratio[2];
    uint32_t drs_res[2];
    int drs_cur;
    amt_t *drs_use; /* 2 * drs_n: entry e's usage of frs[i] at drs_use[e * drs_n + i] */
    size_t drs_n;
    const char *name;
    amt_t *lend; /* cohorts: per resource id, what a child can reach through this node
                       (Kueue calculateLendable), rebuilt with the tree */
};

/* ---- resource groups, as declared ---- */

struct ctl_rg_quota {
    uint32_t flavor;
    uint32_t res;
    amt_t nominal, blimit, llimit;
};

struct ctl_rg {
    uint32_t *res; /* covered resources, in spec order */
    size_t n_res;
    uint32_t *flavors; /* in spec order */
    size_t n_flavors;
};

struct ctl_quota_spec {
    struct ctl_rg *rgs;
    size_t n_rgs;
    struct ctl_rg_quota *q; /* one per (flavor, covered resource) */
    size_t n_q;
};

/* ---- flavors ---- */

struct ctl_taint {
    char *key, *value, *effect;
};

struct ctl_toleration {
    char *key, *value, *effect;
    bool exists; /* operator Exists */
};

struct ctl_flavor {
    char *name;
    uint32_t id;
    bool defined;   /* a ResourceFlavor object exists */
    json_t *labels; /* nodeLabels (owned reference, may be NULL) */
    struct ctl_taint *taints;
    size_t n_taints;
    struct ctl_toleration *tols;
    size_t n_tols;
};

/* ---- workloads ---- */

struct ctl_req {
    uint32_t res;
    amt_t per_pod;
};

struct fatia_ctlr_placement; /* pod template constraints (match.c) */

struct ctl_podset {
    char *name;
    int32_t count;
    int32_t min_count;   /* == count when the pod set has no minCount */
    struct ctl_req *req; /* sorted by resource name */
    size_t n_req;
    struct fatia_ctlr_placement *place; /* NULL: no tolerations, nodeSelector nor affinity */
};

struct ctl_use {
    uint32_t fr;
    amt_t v;
};

struct ctl_ps_assign {
    int32_t count;
    size_t n;

    struct {
        uint32_t res;
        uint32_t flavor;
        amt_t total;
    } * v;
};

enum ctl_wl_state {
    CTL_WL_PENDING,
    CTL_WL_ADMITTED,
    CTL_WL_EVICTING,
};

enum ctl_qstate {
    CTL_Q_NONE,     /* not queued: admitted, evicting, inactive, or its queue is missing */
    CTL_Q_GROUP,    /* in an equivalence group (active, or parked as inadmissible) */
    CTL_Q_STICKY,   /* the ClusterQueue's sticky preemptor */
    CTL_Q_SINGLE,   /* parked alone (namespace mismatch, invalid) until a capacity event */
    CTL_Q_BACKOFF,  /* waiting for requeueAt */
    CTL_Q_INFLIGHT, /* popped in the running cycle */
};

/* A member of a group's heap, with its workload's order keys (queue.c): copies of ctl_wl's, so
 * that a sift reads the heap array only. */
struct ctl_gent {
    int64_t created;
    uint64_t uid[2], key[2];
    bool uid_long, key_long;
    struct ctl_wl *w;
};

/* Workloads of one ClusterQueue with the same scheduling shape and priority (queue.c). */
struct ctl_group {
    uint64_t hash;
    int32_t priority;
    struct ctl_cq *cq;
    struct ctl_gent *heap; /* by queue-order time, uid, key */
    size_t n, cap;
    /* pairing-heap links, in the active or the parked heap of its ClusterQueue */
    struct ctl_group *child, *sibling, *prev;
    uint64_t parked_gen;   /* == cq->requeue_gen while parked; UINT64_MAX when active */
    struct ctl_wl *parker; /* the member whose failed attempt parked the group */
    size_t map_slot;
};

struct ctl_lq;

struct ctl_wl {
    /* the queue order's keys first, with the heap index: on one or two cache lines, the only
     * ones a heap sift touches (queue.c fatia_control_wl_before) */
    int32_t priority;
    bool sticky;             /* preemptor waiting for its victims (BestEffortFIFO head first) */
    bool uid_long, key_long; /* longer than the 16 bytes in uid_ord / key_ord */
    int64_t created;         /* queue-order timestamp, usec */
    uint64_t uid_ord[2], key_ord[2]; /* first 16 bytes of uid and key, big-endian, 0-padded */
    size_t gidx;                     /* index in the group's heap */

    char *key; /* "ns/name" */
    char *ns, *name;
    char *uid;     /* metadata.uid, "" when absent */
    char *job_uid; /* label kueue.x-k8s.io/job-uid, "" when absent */
    char *queue_name;
    int64_t qr_time;    /* QuotaReserved time, usec; 0 = none */
    int64_t requeue_at; /* requeueState.requeueAt, usec; 0 = none */
    bool active;
    bool evicted_cond; /* Evicted=True (only meaningful while it holds quota) */
    bool preempting;   /* its last attempt issued preemptions: ordered first in the next cycle */
    uint64_t
        pre_seq; /* when it issued them (engine counter): the order of the waiting preemptors */
    struct ctl_assignment *pre_a; /* the assignment it preempted for (cycle.c) */
    struct ctl_cq *pre_cq;
    uint64_t pre_gen;     /* the tree generation of pre_a */
    bool was_preempted;   /* evicted by a preemption at preempted_at (usec) */
    int64_t preempted_at; /* it issues no preemptions until the clock moves past it */
    bool bad;             /* cannot be admitted (see msg) */
    char *bad_msg;
    uint64_t shape_hash; /* scheduling-equivalence hash */
    struct ctl_podset *ps;
    size_t n_ps;

    enum ctl_wl_state state;
    struct ctl_lq *lq; /* NULL when the LocalQueue does not exist */
    struct ctl_cq *cq; /* queue target while pending; admission CQ while holding quota */

    /* admission (ADMITTED / EVICTING) */
    struct ctl_ps_assign *asg; /* n_ps entries */
    struct ctl_use *use;       /* merged usage per fr */
    size_t n_use;
    uint64_t fr_bits; /* bit fr % 64 of every fr in use: a clear bit proves an fr unused */
    bool borrowing;

    /* queue */
    enum ctl_qstate q;
    struct ctl_group *grp;            /* CTL_Q_HEAP / CTL_Q_INADMISSIBLE in a group */
    struct ctl_wl *prev, *next;       /* single-inadmissible / backoff list links */
    size_t wl_idx, lq_idx;            /* in the engine's and its LocalQueue's vectors */
    struct ctl_wl *ev_prev, *ev_next; /* the engine's list of EVICTING workloads */
    size_t adm_idx;                   /* index in cq->admitted */
    uint64_t pop_gen;                 /* cq->requeue_gen when popped */
    uint64_t preempt_mark;            /* cycle number in which it became a preemption target */

    /* admission check states from status.admissionChecks (checks.c) */
    struct ctl_wl_check *checks;
    size_t n_checks;
    bool rejected; /* deactivated by a Rejected check, until a tree says spec.active=false */

    /* last scheduling attempt (for pending output) */
    const char *reason;           /* static string */
    char *msg;                    /* the message as text; NULL: none, or the one msg_ps gives */
    struct ctl_ps_result *msg_ps; /* a failed flavor assignment's reasons, put into words when
                                     the message is read (fatia_control_wl_msg) */
    size_t msg_n_ps;
    struct ctl_cq *msg_cq;
};

/* ---- queues ---- */

struct ctl_wlist {
    struct ctl_wl *head, *tail;
    size_t n;
};

struct ctl_lq {
    bool defined; /* a LocalQueue object exists (else only named by workloads) */
    char *key;    /* ns/name */
    char *ns, *name;
    char *cq_name;
    bool stopped;                   /* stopPolicy != None */
    bool drain;                     /* HoldAndDrain */
    double weight;                  /* fairSharing.weight */
    struct ctl_cq *cq;              /* resolved */
    FATIA_VEC(struct ctl_wl *) wls; /* every workload naming this queue */
    /* admission fair sharing */
    double *consumed; /* per resource id (n_res_cap), NULL until used */
    double *penalty;
    int64_t afs_last;
    amt_t *usage; /* per fr, admitted; n_fr_cap entries, NULL until used */
    amt_t *reserve;
};

enum ctl_strategy {
    CTL_BEST_EFFORT,
    CTL_STRICT
};

enum ctl_policy {
    CTL_NEVER,
    CTL_LOWER,
    CTL_LOWER_OR_NEWER_EQUAL,
    CTL_ANY
};

enum ctl_fung {
    CTL_MAY_STOP,
    CTL_TRY_NEXT
};

/* the most requested flavor-resources the hopeless test sums per ClusterQueue */
#define CTL_HL_MAX_REQ 4

struct ctl_cq {
    struct ctl_node node;
    char *name;
    bool defined;      /* a ClusterQueue object exists (else a name only, kept for its workloads) */
    char *cohort_name; /* NULL or "" = none */
    struct ctl_quota_spec qs;
    int16_t *rg_of_res; /* per resource id: rg index, -1; n_res_cap entries */
    bool covers_pods;
    uint32_t pods_res;

    enum ctl_strategy strategy;
    struct fatia_selector *ns_sel; /* NULL: no namespace */
    enum ctl_fung when_borrow, when_preempt;
    bool pref_preemption_over_borrowing;
    enum ctl_policy within, reclaim;
    bool borrow_within; /* borrowWithinCohort.policy LowerPriority */
    bool has_threshold;
    int32_t threshold;
    bool stopped, drain;
    struct ctl_check_rule *checks; /* spec.admissionChecksStrategy.admissionChecks (checks.c) */
    size_t n_checks;
    bool afs; /* admissionScope UsageBasedAdmissionFairSharing */

    bool active;
    const char *inactive_reason;
    char *inactive_msg;
    json_t *spec;  /* the spec last applied (owned): an object event with the same spec is the
                    * echo of a status write, and changes nothing (objects.c) */
    int64_t share; /* weightedShare of the last clean tree, reported while it is dirty (status.c) */

    /* queue (queue.c): equivalence groups in two pairing heaps, keyed by their heads */
    struct ctl_group *qactive; /* groups whose head may be popped */
    struct ctl_group *qparked; /* groups made inadmissible since the last requeue */
    struct ctl_group **gmap;   /* (shape hash, priority) -> group, open addressing */
    size_t gmap_cap, gmap_n;
    struct ctl_wl *sticky;    /* BestEffortFIFO preemptor waiting for its victims */
    struct ctl_wlist single;  /* inadmissible on their own (namespace, StrictFIFO) */
    struct ctl_wlist backoff; /* requeueAt in the future */
    uint64_t requeue_gen;     /* bumped each time its inadmissible workloads are requeued */
    int64_t requeue_due;      /* batched requeue of this queue (no cohort) due then; 0: none */
    size_t n_grouped, n_parked, n_inflight;

    FATIA_VEC(struct ctl_wl *) admitted; /* ADMITTED and EVICTING */
    /* adm_bits[i] == admitted.v[i]->fr_bits: the preemption searches test the filter in this
     * dense array and dereference only the workloads that pass it */
    uint64_t *adm_bits;
    size_t adm_bits_cap;
    int32_t min_prio; /* lowest priority in admitted, when min_prio_valid */
    bool min_prio_valid;
    FATIA_VEC(struct ctl_lq *) lqs;

    struct ctl_cohort *cohort;
    size_t index;   /* in the engine's cqs vector */
    bool listed;    /* in the engine's ready list */
    uint64_t stamp; /* scratch marks of one preemption search */
    bool pruned;
    size_t grp, grp_n, grp_pos;
    /* the hopeless test's scratch (preempt.c fits_without_all): the candidates' usage of each
     * requested flavor-resource, summed, valid while hl_stamp is the test's stamp */
    uint64_t hl_stamp;
    amt_t hl_sum[CTL_HL_MAX_REQ];
    void *cycle_entry; /* the head of this queue in the running cycle (fair sharing) */
};

struct ctl_cohort {
    struct ctl_node node;
    char *name;
    char *parent_name;
    bool defined; /* a Cohort object exists */
    json_t *spec; /* the spec last applied (owned), as for a ClusterQueue */
    bool in_cycle;
    struct ctl_quota_spec qs;
    FATIA_VEC(struct ctl_cohort *) child_cohorts;
    FATIA_VEC(struct ctl_cq *) child_cqs;
    struct ctl_cohort *parent;
    size_t n_subtree_cqs;
    uint64_t stamp; /* scratch marks of one preemption search */
    bool pruned;
    uint64_t cand_stamp;  /* == the search's stamp: some ClusterQueue below holds a candidate */
    uint64_t cycle_stamp; /* cycle_rank is valid when this equals the engine's cycle_no */
    size_t cycle_rank;
    int64_t requeue_due; /* batched requeue of this tree (notified as a root) due then; 0: none */
};

/* ---- admission checks (checks.c) ---- */

enum ctl_check_state {
    CTL_CHECK_PENDING,
    CTL_CHECK_READY,
    CTL_CHECK_RETRY,
    CTL_CHECK_REJECTED,
};

struct ctl_check { /* an AdmissionCheck object, or a name a ClusterQueue used */
    char *name;
    bool defined, active; /* active: status.conditions Active=True */
};

struct ctl_check_rule {
    char *name;
    char **on_flavors; /* n_on == 0: every flavor */
    size_t n_on;
};

struct ctl_wl_check {
    char *name;
    enum ctl_check_state state;
    int64_t retry_at; /* lastTransitionTime + requeueAfterSeconds, usec; 0 = none */
};

struct ctl_ns {
    char *name;
    json_t *labels; /* owned; always has kubernetes.io/metadata.name */
};

struct ctl_wpc {
    char *name;
    int32_t value;
};

struct ctl_transform {
    uint32_t input;
    bool replace;
    struct ctl_req *out; /* per unit of input (milli per unit) */
    size_t n_out;
};

struct ctl_config {
    bool fair_sharing;
    int n_strategies;
    int strategies[2]; /* 0 = LessThanOrEqualToFinalShare, 1 = LessThanInitialShare */
    bool partial_admission;
    bool ignore_undeclared;
    bool afs;
    int64_t afs_half_life, afs_interval; /* usec */
    double *afs_weight;                  /* per resource id; default 1 */
    size_t n_afs_weight;
    struct ctl_transform *tr;
    size_t n_tr;
    char **exclude_prefixes;
    size_t n_exclude;
};

/* ---- the result arena of one cycle ---- */

struct ctl_arena {
    char **blocks;
    size_t n, cap;
    size_t used; /* in the current block */
    size_t block_size;
};

struct ctl_preempted {
    struct ctl_wl *wl;
};

struct fatia_control {
    /* interning */
    struct fatia_strmap res_index; /* name -> id + 1 */
    FATIA_VEC(char *) res_names;
    struct fatia_strmap flavor_index; /* name -> struct ctl_flavor * */
    FATIA_VEC(struct ctl_flavor *) flavors;
    int32_t **fr_of; /* [flavor][res] -> fr id or -1; rows sized fr_res_cap */
    size_t fr_rows, fr_res_cap;
    FATIA_VEC(uint32_t) fr_flavor; /* per fr id */
    FATIA_VEC(uint32_t) fr_res;
    size_t n_fr_cap; /* slot arrays are this long */
    size_t n_res_cap;

    /* objects */
    struct fatia_strmap cq_index; /* name -> cq */
    FATIA_VEC(struct ctl_cq *) cqs;
    struct fatia_strmap cohort_index;
    FATIA_VEC(struct ctl_cohort *) cohorts;
    struct fatia_strmap lq_index; /* ns/name -> lq */
    FATIA_VEC(struct ctl_lq *) lqs;
    struct fatia_strmap ns_index;
    FATIA_VEC(struct ctl_ns *) nss;
    struct fatia_strmap wpc_index;
    struct fatia_strmap check_index; /* name -> struct ctl_check * */
    FATIA_VEC(struct ctl_check *) checks;
    FATIA_VEC(struct ctl_wpc *) wpcs;
    struct fatia_strmap wl_index; /* key -> wl */
    FATIA_VEC(struct ctl_wl *) wls;
    struct ctl_config cfg;
    bool tree_dirty; /* structure changed: rebuild before the next cycle */
    /* ClusterQueues that may have a head or workloads backing off (a superset: the heads phase
     * drops those that have neither), so a cycle costs O(ready), not O(ClusterQueues) */
    FATIA_VEC(struct ctl_cq *) ready;
    struct ctl_wl *evicting; /* EVICTING workloads, linked through ev_prev / ev_next */
    size_t n_evicting;
    int64_t now;       /* the latest clock value a caller passed */
    uint64_t tree_gen; /* bumped by every rebuild of the quota tree (node caches) */
    uint64_t pre_seq;  /* counts preemptors issuing preemptions */

    /* cycle */
    uint64_t cycle_no;
    struct ctl_arena arena;
    FATIA_VEC(struct fatia_control_admission) res_adm;
    FATIA_VEC(struct fatia_control_eviction) res_ev;
    FATIA_VEC(struct fatia_control_pending) res_pend;
    FATIA_VEC(struct fatia_control_eviction) pending_ev; /* decided outside cycles */
    struct fatia_control_result result;
    bool result_valid;

    bool caches_off; /* fatia_control_set_caches(c, false) */

    /* queue.c: batched requeue of inadmissible workloads after workload capacity events
     * (fatia_control_set_requeue_batch); 0: at once. requeue_next is a lower bound of the
     * earliest requeue_due of a cohort or ClusterQueue (INT64_MAX: none pending). */
    int64_t requeue_batch;
    int64_t requeue_next;
    size_t n_due_cohorts, n_due_cqs; /* at least the number of cohorts / ClusterQueues with a
                                      * pending request (freed ones may leave them high) */

    /* preempt.c: per (root cohort, flavor-resource), the cohort-tree candidates of one
     * nomination phase (the quota tree does not change while heads are nominated); an entry is
     * valid while its gen equals nom_gen, and nom_gen is 0 outside nomination */
    uint64_t nom_gen, nom_gen_next;

    struct ctl_fs_memo {
        const struct ctl_cohort *root;
        uint32_t fr;
        uint64_t gen;

        struct ctl_fs_memo_wl {
            struct ctl_wl *wl;
            const struct ctl_cq *cq;
            int64_t created;
            int32_t priority;
        } * v;

        size_t n, cap;
    } * fs_memo; /* CTL_FS_MEMO_N entries, allocated on first use */

    /* scratch */
    amt_t *scratch_amt;  /* n_fr_cap */
    double *scratch_dbl; /* n_res_cap */
    double *scratch_dbl2;
    struct ctl_cq **hl_cqs; /* the hopeless test's distinct ClusterQueues, hl_cap entries */
    size_t hl_cap;
    /* a cycle's arrays (entries, their order, fair-sharing levels), kept between cycles and
     * zeroed for each: cycle_cap elements of each (cycle.c) */
    void *cycle_entries, *cycle_order, *cycle_lvls;
    size_t cycle_cap;

    uint64_t stamp; /* for the scratch marks on queues and cohorts */
    fatia_control_phase_fn phase_fn;
    void *phase_arg;

    /* counters */
    uint64_t n_cycles, n_admissions, n_evictions, n_preemptions;
    struct fatia_control_phase_counts phases;
};

/* ---- intern.c ---- */
int fatia_control_res_intern(struct fatia_control *c, const char *name, uint32_t *ret);
int fatia_control_res_find(const struct fatia_control *c, const char *name); /* -1 */
int fatia_control_flavor_intern(struct fatia_control *c, const char *name, struct ctl_flavor **ret);
int fatia_control_fr_intern(struct fatia_control *c, uint32_t flavor, uint32_t res, uint32_t *ret);
int fatia_control_fr_find(const struct fatia_control *c, uint32_t flavor, uint32_t res); /* -1 */
const char *fatia_control_res_name(const struct fatia_control *c, uint32_t res);
const char *fatia_control_flavor_name(const struct fatia_control *c, uint32_t flavor);
char *fatia_control_arena_strdup(struct fatia_control *c, const char *s);
void *fatia_control_arena_alloc(struct fatia_control *c, size_t n);
void fatia_control_arena_reset(struct ctl_arena *a);
void fatia_control_arena_release(struct ctl_arena *a);
int fatia_control_grow_scratch(struct fatia_control *c);

/* ---- quota.c ---- */
amt_t fatia_control_local_quota(const struct ctl_node *n, uint32_t fr);
amt_t fatia_control_local_available(const struct ctl_node *n, uint32_t fr);
amt_t fatia_control_available_raw(const struct ctl_node *n, uint32_t fr);
amt_t fatia_control_available(const struct ctl_node *n, uint32_t fr); /* max(0, raw) */
amt_t fatia_control_potential_available(const struct ctl_node *n, uint32_t fr);
void fatia_control_add_usage(struct ctl_node *n, uint32_t fr, amt_t v);
void fatia_control_remove_usage(struct ctl_node *n, uint32_t fr, amt_t v);
void fatia_control_add_uses(struct ctl_node *n, const struct ctl_use *u, size_t k);
void fatia_control_remove_uses(struct ctl_node *n, const struct ctl_use *u, size_t k);
bool fatia_control_borrowing_with(const struct ctl_node *n, uint32_t fr, amt_t v);
int fatia_control_find_height(const struct ctl_cq *cq, uint32_t fr, amt_t v, bool *may_reclaim);
bool fatia_control_fits_in_quota(const struct ctl_node *n, const struct ctl_use *req, size_t k,
                                 struct ctl_use *remaining);
bool fatia_control_within_nominal(const struct ctl_node *n, const uint32_t *frs, size_t k);
int fatia_control_rebuild_tree(struct fatia_control *c);

/* Dominant resource share of a node with optional extra usage (Kueue fair_sharing.go). */
struct fatia_control_drs {
    double ratio;  /* unweighted borrowed x 1000 / lendable, max over resources */
    double weight; /* the node's weight */
    uint32_t res;  /* dominant resource */
};
struct fatia_control_drs fatia_control_drs(struct fatia_control *c, const struct ctl_node *n,
                                           const struct ctl_use *extra, size_t k);
/* fatia_control_drs without extra usage, cached on the node. */
struct fatia_control_drs fatia_control_drs_of(struct fatia_control *c, const struct ctl_node *n);
/* The share of node at once the uses u (one per flavor-resource) of a workload in the
 * ClusterQueue node from (at or below it) are taken off, without taking them off: the value
 * fatia_control_drs_of(c, at) gives after fatia_control_remove_uses(from, u, k). Returns 1 with
 * *ret set, or 0 when the caller must remove and recompute (caches off, or more uses or
 * flavor-resources than the scratch holds). */
#define CTL_DRS_WITHOUT_MAX 16
int fatia_control_drs_without(struct fatia_control *c, const struct ctl_node *at,
                              const struct ctl_node *from, const struct ctl_use *u, size_t k,
                              struct fatia_control_drs *ret);
int fatia_control_drs_cmp(struct fatia_control_drs a, struct fatia_control_drs b);
int64_t fatia_control_drs_rounded(struct fatia_control_drs d);

/* ---- match.c ---- */
int fatia_control_toleration_parse(const json_t *t, struct ctl_toleration *ret);
int fatia_control_placement_parse(const json_t *pod_spec, struct fatia_ctlr_placement **ret,
                                  char *why, size_t n);
void fatia_control_placement_free(struct fatia_ctlr_placement *p);
/* NULL when the pod set may use the flavor, else a reason ("untolerated taint ..."). */
const char *fatia_control_flavor_mismatch(const struct ctl_podset *ps, const struct ctl_flavor *f,
                                          char *buf, size_t n);

/* ---- objects.c ---- */
amt_t fatia_control_q_milli(
    const json_t *v); /* a quantity in milli-units; 0 when absent or malformed */
struct ctl_cq *fatia_control_cq_get(const struct fatia_control *c, const char *name);
void fatia_control_wl_free(struct ctl_wl *w);
void fatia_control_wl_charge(struct fatia_control *c,
                             struct ctl_wl *w); /* add usage to its CQ and LQ */
/* Keeps the admitted-list summaries (slot users, lowest priority) of w's ClusterQueue. */
/* Appends w to cq's admitted list (and its filter to adm_bits). 0 or -ENOMEM (nothing changed). */
int fatia_control_admitted_push(struct ctl_cq *cq, struct ctl_wl *w);
/* Brackets a nomination phase for the preemption searches' memo (preempt.c). */
void fatia_control_nominate_begin(struct fatia_control *c);
void fatia_control_nominate_end(struct fatia_control *c);
void fatia_control_memo_release(struct fatia_control *c);
void fatia_control_admitted_note(struct ctl_cq *cq, const struct ctl_wl *w, bool added);
int32_t fatia_control_cq_min_prio(struct ctl_cq *cq); /* INT32_MAX when nothing is admitted */
void fatia_control_wl_uncharge(struct fatia_control *c, struct ctl_wl *w);
void fatia_control_wl_drop_admission(struct ctl_wl *w);
void fatia_control_wl_drop_preemptor(
    struct ctl_wl *w); /* forgets the assignment it preempted for */
/* Moves w between ADMITTED / PENDING and EVICTING, keeping the engine's evicting list. */
void fatia_control_wl_set_state(struct fatia_control *c, struct ctl_wl *w, enum ctl_wl_state st);
bool fatia_control_ns_matches(const struct fatia_control *c, const struct ctl_cq *cq,
                              const char *ns);
int fatia_control_evict(struct fatia_control *c, struct ctl_wl *w, const char *reason,
                        const char *msg, const struct ctl_wl *preemptor, bool in_cycle);
void fatia_control_resolve_queue(struct fatia_control *c, struct ctl_wl *w);

/* ---- checks.c: AdmissionChecks ---- */
int fatia_control_apply_check(struct fatia_control *c, const json_t *obj, int64_t now);
int fatia_control_delete_check(struct fatia_control *c, const char *name, int64_t now);
void fatia_control_checks_release(struct fatia_control *c);
int fatia_control_cq_parse_checks(struct ctl_cq *cq, const json_t *spec);
void fatia_control_cq_checks_free(struct ctl_cq *cq);
/* True when cq names a missing or inactive check: *ret_reason and msg say which (Kueue's words). */
bool fatia_control_cq_checks_block(const struct fatia_control *c, const struct ctl_cq *cq,
                                   const char **ret_reason, char *msg, size_t msg_n);
int fatia_control_wl_parse_checks(struct ctl_wl *w, const json_t *obj);
void fatia_control_wl_checks_free(struct ctl_wl *w);
void fatia_control_wl_take_checks(struct ctl_wl *dst, struct ctl_wl *src);
void fatia_control_wl_checks_reset(struct ctl_wl *w);
bool fatia_control_wl_check_needed(const struct fatia_control *c, const struct ctl_wl *w,
                                   const struct ctl_check_rule *r);
enum ctl_check_state fatia_control_wl_check_state(const struct ctl_wl *w, const char *name);
/* w holds quota and every check its ClusterQueue needs for its flavors is Ready. */
bool fatia_control_wl_checks_ready(const struct fatia_control *c, const struct ctl_wl *w);
/* An ADMITTED w with a needed check in Retry is evicted (AdmissionCheck), one Rejected is
 * deactivated (DeactivatedDueToAdmissionCheck). 0 or -ENOMEM. */
int fatia_control_wl_checks_react(struct fatia_control *c, struct ctl_wl *w);
/* [{name, state}] of the checks w needs, in the ClusterQueue's order. */
int fatia_control_wl_checks_json(const struct fatia_control *c, const struct ctl_wl *w,
                                 json_t **ret);

/* ---- workload.c: a Workload's spec and status decoded ---- */
void fatia_control_podsets_free(struct ctl_podset *ps, size_t n);
/* spec.podSets into *ret (n pod sets): per-pod requests and placement constraints. 0, -ENOMEM,
 * or the placement parser's error (why says which). */
int fatia_control_wl_parse_podsets(struct fatia_control *c, const json_t *list,
                                   struct ctl_podset **ret, size_t *ret_n, char *why, size_t why_n);
/* The hash of w's shape (priority, pod sets) for the queues' "known not to fit" memo. */
uint64_t fatia_control_wl_shape_hash(const struct ctl_wl *w, const json_t *podsets);
/* status.admission into w->asg and w->use (interning flavors as needed). 0 or -ENOMEM (w's
 * admission dropped). */
int fatia_control_wl_parse_admission(struct fatia_control *c, struct ctl_wl *w, const json_t *adm);

/* ---- queue.c ---- */
bool fatia_control_queue_has_head(const struct ctl_cq *cq);
const struct ctl_wl *fatia_control_queue_peek(const struct ctl_cq *cq);
bool fatia_control_queue_bypassed(const struct ctl_wl *w); /* in a parked group, never evaluated */
void fatia_control_queue_release(struct ctl_cq *cq);       /* frees the groups (engine teardown) */
int fatia_control_queue_check(const struct ctl_cq *cq, char *why, size_t n);
/* Sets w's order keys (uid_ord, key_ord) from its uid and key. */
void fatia_control_wl_order_init(struct ctl_wl *w);
bool fatia_control_wl_before(const struct ctl_cq *cq, const struct ctl_wl *a,
                             const struct ctl_wl *b);
int fatia_control_queue_push(struct fatia_control *c, struct ctl_cq *cq, struct ctl_wl *w);
struct ctl_wl *fatia_control_queue_pop(struct fatia_control *c, struct ctl_cq *cq);
void fatia_control_queue_remove(struct fatia_control *c, struct ctl_wl *w);
int fatia_control_queue_inadmissible(struct fatia_control *c, struct ctl_cq *cq, struct ctl_wl *w,
                                     bool record_hash);
int fatia_control_queue_expire_backoff(struct fatia_control *c, struct ctl_cq *cq, int64_t now);
int fatia_control_queue_requeue_inadmissible(struct fatia_control *c, struct ctl_cq *cq,
                                             int64_t now);
int fatia_control_queue_requeue_tree(struct fatia_control *c, struct ctl_cq *cq, int64_t now);
int fatia_control_queue_requeue_all(struct fatia_control *c, int64_t now);
int fatia_control_queue_requeue_due(struct fatia_control *c, int64_t now);
size_t fatia_control_queue_pending(const struct ctl_cq *cq);
int fatia_control_ready_mark(struct fatia_control *c, struct ctl_cq *cq);
int fatia_control_ready_all(struct fatia_control *c);
void fatia_control_wlist_remove(struct ctl_wlist *l, struct ctl_wl *w);
void fatia_control_wlist_append(struct ctl_wlist *l, struct ctl_wl *w);
void fatia_control_set_msg(struct ctl_wl *w, struct ctl_cq *cq, const char *reason, const char *fmt,
                           ...) FATIA_PRINTF(4, 5);
/* A workload's last message: none; the text m (taken over); the reasons of a failed assignment
 * (ps, n_ps, taken over), put into words when read. */
void fatia_control_wl_msg_clear(struct ctl_wl *w);
void fatia_control_wl_msg_text(struct ctl_wl *w, char *m);
void fatia_control_wl_msg_reasons(struct ctl_wl *w, struct ctl_ps_result *ps, size_t n_ps);
bool fatia_control_wl_has_msg(const struct ctl_wl *w);
/* The message in words: w->msg, or the reasons formatted into b (reset first); NULL when it has
 * none or on -ENOMEM (then *err). */
const char *fatia_control_wl_msg(const struct fatia_control *c, const struct ctl_wl *w,
                                 struct fatia_buf *b, int *err);
/* Puts reasons into words now (before the pod sets they name change). 0 or -ENOMEM. */
int fatia_control_wl_msg_freeze(const struct fatia_control *c, struct ctl_wl *w);

/* ---- assign.c ---- */
enum ctl_mode {
    CTL_NOFIT = 0,
    CTL_PREEMPT = 1,
    CTL_FIT = 3
};

struct ctl_flv_asg {
    uint32_t res, flavor, fr;
    enum ctl_mode mode;
    int borrow;
    amt_t total; /* request of the pod set for this resource */
};

/* A reason of a pod set's failed flavor assignment, put into words only when a message is read
 * (assign.c fatia_control_reasons_message). */
enum ctl_reason_kind {
    CTL_REASON_TEXT,         /* text */
    CTL_REASON_MAX_CAPACITY, /* fr: x previously considered + y current > z maximum capacity */
    CTL_REASON_UNUSED_QUOTA, /* fr: x more needed */
};

struct ctl_reason {
    enum ctl_reason_kind kind;
    uint32_t fr;
    amt_t x, y, z;
    char *text; /* CTL_REASON_TEXT only */
};

struct ctl_ps_result {
    int32_t count;
    struct ctl_flv_asg *flv; /* sorted by resource name */
    size_t n_flv, cap_flv;
    bool failed; /* some requested resource got no flavor */
    struct ctl_reason *reasons;
    size_t n_reasons, cap_reasons;
};

struct ctl_assignment {
    struct ctl_ps_result *ps; /* n_ps; only the pod sets processed (NoFit stops early) */
    size_t n_ps;
    int borrowing;
    enum ctl_mode mode;
    struct ctl_use *use; /* merged usage per fr of the whole assignment */
    size_t n_use, cap_use;
};

struct ctl_target {
    struct ctl_wl *wl;
    const char *reason;
};

struct ctl_targets {
    struct ctl_target *v;
    size_t n, cap;
};

int fatia_control_assign(struct fatia_control *c, struct ctl_cq *cq, struct ctl_wl *w,
                         const int32_t *counts, struct ctl_assignment *ret);
void fatia_control_assignment_release(struct ctl_assignment *a);
/* Kueue getInitialAssignments: full assignment, its preemption targets, partial admission. */
int fatia_control_get_assignments(struct fatia_control *c, struct ctl_cq *cq, struct ctl_wl *w,
                                  struct ctl_assignment *ret, struct ctl_targets *targets);
/* "couldn't assign flavors to pod set main: ..." (Kueue Assignment.Message). Caller frees. */
char *fatia_control_assignment_message(const struct fatia_control *c,
                                       const struct ctl_assignment *a, const struct ctl_wl *w);
/* Appends the message of failed pod set results (Kueue's "couldn't assign flavors to pod set
 * ...") to b; pod_sets: the workload's pod sets, for their names. 0 or -ENOMEM. */
int fatia_control_reasons_message(const struct fatia_control *c, const struct ctl_ps_result *ps,
                                  size_t n_ps, const struct ctl_podset *pod_sets,
                                  struct fatia_buf *b);
void fatia_control_ps_results_free(struct ctl_ps_result *ps, size_t n);

/* ---- preempt.c ---- */
int fatia_control_get_targets(struct fatia_control *c, struct ctl_cq *cq, const struct ctl_wl *w,
                              const uint32_t *frs_need, size_t n_need, const struct ctl_use *req,
                              size_t n_req, struct ctl_targets *ret);
void fatia_control_targets_release(struct ctl_targets *t);
/* A victim of a preemption issues no preemptions for CTL_PREEMPT_COOLDOWN after its eviction
 * (preempt.c: the preemption-loop guard, docs/control.md). */
#define CTL_PREEMPT_COOLDOWN INT64_C(1000000) /* usec */
bool fatia_control_preempt_cooldown(const struct fatia_control *c, const struct ctl_wl *w);
int fatia_control_targets_push(struct ctl_targets *t, struct ctl_wl *w, const char *reason);
void fatia_control_snapshot_remove(struct fatia_control *c, struct ctl_wl *w);
void fatia_control_snapshot_add(struct fatia_control *c, struct ctl_wl *w);
bool fatia_control_wl_uses_frs(const struct ctl_wl *w, const uint32_t *frs, size_t n);

/* The fr_bits filter of a set of frs (ctl_wl.fr_bits). */
static inline uint64_t ctl_fr_bits(const uint32_t *frs, size_t n)
{
    uint64_t b = 0;
    for (size_t i = 0; i < n; i++)
        b |= UINT64_C(1) << (frs[i] % 64);
    return b;
}

static inline uint64_t ctl_use_bits(const struct ctl_use *u, size_t n)
{
    uint64_t b = 0;
    for (size_t i = 0; i < n; i++)
        b |= UINT64_C(1) << (u[i].fr % 64);
    return b;
}

/* ---- status.c ---- */
int fatia_control_pending_list(const struct fatia_control *c, json_t *out);

/* ---- cycle.c ---- */
int fatia_control_result_add_eviction(struct fatia_control *c, const struct ctl_wl *w,
                                      const char *reason, const char *message,
                                      const struct ctl_wl *preemptor, bool pending);

/* Cohorts and a ClusterQueue's activity (quota.c). */
void fatia_control_cohort_free(struct ctl_cohort *co);
int fatia_control_cohort_ensure(struct fatia_control *c, const char *name, struct ctl_cohort **ret);
void fatia_control_cq_update_active(struct fatia_control *c, struct ctl_cq *cq);

#endif
