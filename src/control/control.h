/*
 * control/control.h: the Kueue-compatible admission engine (docs/control.md).
 *
 * One struct fatia_control holds the admission state of a cluster: ResourceFlavors, the quota
 * tree of ClusterQueues and Cohorts, LocalQueues, WorkloadPriorityClasses, Namespaces (for
 * namespaceSelector), the SchedulerConfig switches, and every Workload with its queue position or
 * its admission. It is fed validated objects (model layer) and events, and asked to run one Kueue
 * scheduling cycle at a time with the caller's clock:
 *
 *     fatia_control_new(&c);
 *     fatia_control_apply(c, obj, now, diag);          // any kind above; add or update
 *     fatia_control_cycle(c, now, &res);               // decisions of one cycle
 *     fatia_control_workload_released(c, ns, n, now); // an evicted workload stopped
 *     fatia_control_workload_finished(c, ns, n, now);
 *     fatia_control_delete(c, "ClusterQueue", NULL, "team-a", now);
 *
 * The engine is pure: it reads no clock and does no I/O; `now` (microseconds since the epoch) is
 * always the caller's. Two drivers use it: the one-shot `fatia schedule` (control/oneshot.c) and
 * fatiad's admission controller, which keeps one engine alive, applies watch events and writes
 * the decisions back as status.admission, conditions and evictions.
 *
 * Workload states (the engine's, drawn with the functions that make each transition):
 *
 *        apply (no admission)                    cycle: admitted
 *     ─────────────────────────► PENDING ────────────────────────────► ADMITTED
 *                                  ▲  ▲                                 │   │
 *        workload_released         │  │ apply (reactivated,             │   │ cycle: preempted,
 *     ┌────────────────────────────┘  │  LQ/CQ appears)                 │   │ CQ/LQ HoldAndDrain,
 *     │                               │                                 │   │ deactivated
 *     │                                                                 │   ▼
 *     └──────────────────────────────────────────────────────────── EVICTING (still holds quota)
 *                                       workload_finished / delete from any state: gone
 *
 * Memory: the result of a cycle belongs to the engine and stays valid until the next call that
 * changes the engine (apply, delete, cycle, released, finished).
 */
#ifndef FATIA_CONTROL_CONTROL_H
#define FATIA_CONTROL_CONTROL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/diag.h"

struct fatia_control;

/* Creates an empty engine (fair sharing off, partial admission on, BlockUndeclared). */
int fatia_control_new(struct fatia_control **ret);
void fatia_control_free(struct fatia_control *c);

/* Adds or replaces a validated object (the storage-version tree of a struct fatia_object) of kind
 * ResourceFlavor, ClusterQueue, Cohort, LocalQueue, WorkloadPriorityClass, AdmissionCheck,
 * Workload, Namespace or SchedulerConfig; other kinds are ignored (returns 0). A Workload that carries
 * status.admission and QuotaReserved=True is taken as admitted (its usage is charged at once);
 * Finished=True is ignored. For a workload the engine already knows, only spec-derived fields
 * change (priority, active, queue); the engine's own admission state stays authoritative.
 * AdmissionCheck objects count by their Active condition; a workload's status.admissionChecks
 * (written by the checks' controllers) is read on every apply: Retry evicts it (reason
 * AdmissionCheck), Rejected deactivates it (DeactivatedDueToAdmissionCheck; control/checks.c).
 * Problems that make an object unusable for admission (a request too large to count, a malformed
 * affinity) are reported to diag (may be NULL) and the object is kept with a pending message.
 * Returns 0, -ENOMEM, or -EINVAL for a tree that is not of a known kind. */
int fatia_control_apply(struct fatia_control *c, const json_t *obj, int64_t now,
                        struct fatia_diag *diag);

/* Removes an object (kind as in apply; ns NULL for cluster-scoped). Deleting an admitted
 * workload frees its quota. -ENOENT if unknown. */
int fatia_control_delete(struct fatia_control *c, const char *kind, const char *ns,
                         const char *name, int64_t now);

/* An admitted workload finished: its quota is freed and it leaves the engine. -ENOENT. */
int fatia_control_workload_finished(struct fatia_control *c, const char *ns, const char *name,
                                    int64_t now);

/* An evicted workload has stopped (its pods are gone): its quota is freed and it is queued
 * again (if still active and its queue exists). -ENOENT, or -EINVAL if it is not evicting. */
int fatia_control_workload_released(struct fatia_control *c, const char *ns, const char *name,
                                    int64_t now);

/* Releases every evicting workload at once (what `fatia schedule` does after each cycle). Returns
 * how many were released. */
int fatia_control_release_all(struct fatia_control *c, int64_t now);

enum fatia_control_wl_state {
    FATIA_CONTROL_PENDING,
    FATIA_CONTROL_ADMITTED,
    FATIA_CONTROL_EVICTING,
};

/* The engine state of a workload (enum fatia_control_wl_state), or -ENOENT. O(1). */
int fatia_control_workload_state(const struct fatia_control *c, const char *ns, const char *name);

/* ---- one scheduling cycle ---- */

struct fatia_control_flavor_use {
    const char *resource;
    const char *flavor;
    int64_t milli; /* total usage of the pod set for this resource, milli-units */
};

struct fatia_control_podset {
    const char *name;
    int32_t count;
    size_t n;
    const struct fatia_control_flavor_use *v; /* sorted by resource name */
};

struct fatia_control_admission {
    const char *ns, *name, *key; /* key: "ns/name" */
    const char *cluster_queue;
    size_t n_podsets;
    const struct fatia_control_podset *podsets; /* in spec order */
    bool borrowing;                             /* admitted above its nominal quota */
};

struct fatia_control_eviction {
    const char *ns, *name, *key;
    const char *cluster_queue; /* where the victim was admitted */
    const char *reason;    /* InClusterQueue, InCohortReclamation, InCohortReclaimWhileBorrowing,
                           InCohortFairSharing; ClusterQueueStopped, LocalQueueStopped,
                           InactiveWorkload for evictions that are not preemptions */
    const char *message;   /* the Evicted condition's message */
    const char *preemptor; /* key of the preempting workload, NULL for other evictions */
};

struct fatia_control_pending {
    const char *ns, *name, *key;
    const char *cluster_queue; /* NULL when unresolved (LocalQueue missing) */
    const char *reason;        /* QuotaReserved=False reason: Pending, WaitingForQuota, ... */
    /* Kueue's inadmissible message: fatia_control_pending_message (put into words on demand) */
};

struct fatia_control_result {
    size_t n_admitted, n_evicted, n_pending;
    const struct fatia_control_admission *admitted; /* in decision order */
    const struct fatia_control_eviction *evicted;   /* in decision order */
    const struct fatia_control_pending *pending;    /* every head considered and not admitted */
    /* counters of this cycle */
    size_t n_heads;          /* workloads popped */
    size_t n_borrowing;      /* admissions above nominal */
    size_t n_preemptors;     /* heads that issued preemptions */
    size_t n_fair_decisions; /* tournament rounds + fair-sharing preemption evaluations */
    size_t n_skipped;        /* entries that no longer fit after earlier ones */
    bool quiet;              /* nothing admitted, evicted, or moved between queues */
};

/* Runs one scheduling cycle at `now` (Kueue scheduler.go schedule: one head per active
 * ClusterQueue, nominate, order, admit or preempt, requeue). Preempted workloads become
 * EVICTING and keep their quota until fatia_control_workload_released. *ret points into the
 * engine (see the memory note above). Returns 0 or -ENOMEM (the engine is then unchanged as far
 * as admissions go: a failed cycle admits nothing). */
int fatia_control_cycle(struct fatia_control *c, int64_t now,
                        const struct fatia_control_result **ret);

/* The message of a pending entry of the last cycle's result (Kueue's inadmissible message, as
 * fatia_control_workload_status gives it to the status writer until the workload is tried
 * again), put into words now: most are never read, so the cycle keeps the reasons and formats
 * none. A new string (fatia_free), NULL on -ENOMEM. p must come from the current result. */
char *fatia_control_pending_message(const struct fatia_control *c,
                                    const struct fatia_control_pending *p);

/* Evictions decided outside cycles (HoldAndDrain, deactivation) since the last cycle are
 * reported in the next cycle's result. */

/* ---- queries ---- */

/* True when a cycle at `now` would pop some workload (one queued, or a backoff expired) or
 * carry out a batched requeue that is due. */
bool fatia_control_has_work(const struct fatia_control *c, int64_t now);

/* The earliest time after which a cycle has work that the clock alone makes ready (a backoff
 * that expires: status.requeueState.requeueAt, or a victim whose search waited for the clock to
 * move; a batched requeue, fatia_control_set_requeue_batch); INT64_MAX when none. A driver that sleeps between events wakes up for it. */
int64_t fatia_control_next_wakeup(const struct fatia_control *c);

/* Engine-wide counts. */
struct fatia_control_stats {
    size_t workloads, pending, admitted, evicting;
    size_t cluster_queues, cohorts, local_queues, flavors;
    uint64_t cycles, admissions, evictions, preemptions;
};

void fatia_control_stats(const struct fatia_control *c, struct fatia_control_stats *ret);

/* Kueue's ClusterQueue status: {pendingWorkloads, reservingWorkloads, admittedWorkloads,
 * flavorsReservation, flavorsUsage, fairSharing: {weightedShare}, conditions: [Active]}. New
 * reference to *ret. -ENOENT if no such ClusterQueue. */
int fatia_control_cq_status(const struct fatia_control *c, const char *name, int64_t now,
                            json_t **ret);
/* Kueue's LocalQueue status: {pendingWorkloads, reservingWorkloads, admittedWorkloads,
 * flavorsReservation, flavorsUsage, conditions: [Active]}. */
int fatia_control_lq_status(const struct fatia_control *c, const char *ns, const char *name,
                            int64_t now, json_t **ret);
/* A workload's status.admission ({clusterQueue, podSetAssignments}) when it holds quota, or its
 * pending state ({clusterQueue, reason, message}) otherwise, plus "state": "Pending" | "Admitted"
 * | "Evicting". Holding quota it also has "checksReady" (every admission check its ClusterQueue
 * needs for its flavors is Ready: only then is it admitted, Kueue's Admitted=True),
 * "admissionChecks" ([{name, state}] of those checks, when its ClusterQueue has any) and
 * "requeueAt" (when a Retry check asked for a delay). */
int fatia_control_workload_status(const struct fatia_control *c, const char *ns, const char *name,
                                  json_t **ret);

/* Usage against quota of every ClusterQueue, for people (the table view of fatia schedule):
 * [{clusterQueue, cohort, flavor, resource, nominal, borrowingLimit, lendingLimit, usage,
 * borrowed}] in milli-units, sorted by ClusterQueue, flavor, resource. */
int fatia_control_usage_table(const struct fatia_control *c, json_t **ret);

/* Checks the engine's invariants (usage of every node equal to the sum of the admissions below
 * it, no double admission, each admission's usage equal to its pod set assignments, queue
 * membership and heap order). With FATIA_CONTROL_CHECK_QUOTA it also checks that no active
 * ClusterQueue and no root cohort uses more than its quota tree allows (true whenever the engine
 * admitted everything itself and quotas never shrank). Returns 0, or -EFAULT with a description
 * in why. With FATIA_CONTROL_CHECK_REQUEUED (right after a cycle) also that no batched requeue
 * is due at the cycle's clock (the cycle carried out every due one). For tests; O(workloads x
 * flavor-resources). */
#define FATIA_CONTROL_CHECK_QUOTA    1u
#define FATIA_CONTROL_CHECK_REQUEUED 2u
int fatia_control_check(const struct fatia_control *c, unsigned flags, char *why, size_t why_n);

/* Formats milli-units of a resource as a Kubernetes quantity ("2", "500m", "1Gi") into buf. */
void fatia_control_format_amount(const char *resource, int64_t milli, char *buf, size_t n);

/* Phases of a cycle, for callers that measure where the time goes: the engine reads no clock,
 * it only calls the hook at the start of each phase (and with FATIA_CONTROL_PHASE_END when the
 * cycle is over), and the caller reads its own clock there. */
enum fatia_control_phase {
    FATIA_CONTROL_PHASE_HEADS,    /* pop one head per ClusterQueue */
    FATIA_CONTROL_PHASE_NOMINATE, /* flavor assignment, preemption targets, partial admission */
    FATIA_CONTROL_PHASE_PROCESS,  /* order (or tournament) and admit / preempt */
    FATIA_CONTROL_PHASE_REQUEUE,  /* requeue the rest, build the result */
    FATIA_CONTROL_PHASE_END,
};

typedef void (*fatia_control_phase_fn)(void *arg, enum fatia_control_phase phase);
void fatia_control_set_phase_hook(struct fatia_control *c, fatia_control_phase_fn fn, void *arg);

/* Work counters of the cycles so far (the engine reads no clock, so time per phase is for its
 * callers to measure; these say how many times each phase ran). */
struct fatia_control_phase_counts {
    uint64_t nominate, assign_flavors, preempt_searches, preempt_candidates, process, requeue;
    uint64_t preempt_collected; /* candidates gathered over all searches */
    uint64_t preempt_hopeless;  /* searches stopped early: no fit even without every candidate */
};

void fatia_control_phase_counts(const struct fatia_control *c,
                                struct fatia_control_phase_counts *ret);

/* The engine's caches (dominant resource shares per node, the nomination memo) are on
 * by default. Turning them off changes no decision and no message, only the cost: the invariant
 * tests run an engine without them next to one with them and compare every cycle's result. */
void fatia_control_set_caches(struct fatia_control *c, bool on);

/* Batched requeue (Kueue pkg/cache/queue/inadmissible_workloads.go, NotifyRetryInadmissible and
 * workqueueRequeuer): a workload capacity event (a workload finished, deleted or released) at
 * time t requests a requeue of the inadmissible workloads of its ClusterQueue's root cohort (or
 * of the ClusterQueue, without a cohort), carried out by the first cycle at or after t + period;
 * further events of that tree before then join the same request. Kueue's period is 1 s
 * (requeueBatchPeriod). 0, the default, requeues at the event, as Kueue's unit tests do
 * (testInadmissibleWorkloadRequeuer processes the requests before each cycle). Object events
 * (queues, cohorts, flavors, namespaces, checks) requeue at once either way. has_work reports a
 * due request and next_wakeup the earliest pending one. period in usec, as `now`. */
void fatia_control_set_requeue_batch(struct fatia_control *c, int64_t period);

/* ---- the one-shot driver (`fatia schedule`) ---- */

struct fatia_objset;

#define FATIA_SCHEDULE_MAX_CYCLES 1000

struct fatia_schedule_opts {
    int cycles;            /* exactly this many cycles; 0 = until nothing changes (at most 1,000) */
    bool have_now;         /* else: the latest timestamp in the input */
    int64_t now;           /* usec since the epoch */
    int64_t requeue_batch; /* usec; fatia_control_set_requeue_batch (0: requeue at once) */
};

struct fatia_schedule_report {
    json_t *result; /* {"admitted": [...], "preempted": [...], "pending": [...]} */
    json_t *usage;  /* fatia_control_usage_table at the end */
    int cycles_run;
    bool capped; /* stopped at FATIA_SCHEDULE_MAX_CYCLES with work left */
    int64_t now;
    struct fatia_control_stats stats;
};

/* Builds an engine from the objects of set (SchedulerConfig, Namespaces, priority classes,
 * flavors, cohorts, cluster queues, local queues, then workloads), runs cycles at a fixed clock,
 * releasing each cycle's evictions at once (their quota is freed and they requeue), and reports
 * the outcome in the format of `fatia schedule -o json`. Objects the engine cannot use are
 * reported to diag. Returns 0, -ENOMEM, or -EINVAL (diag says why; e.g. two SchedulerConfigs).
 * The caller releases ret->result and ret->usage. */
int fatia_control_schedule(const struct fatia_objset *set, const struct fatia_schedule_opts *opts,
                           struct fatia_schedule_report *ret, struct fatia_diag *diag);

#endif
