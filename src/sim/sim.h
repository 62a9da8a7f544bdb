/*
 * sim/sim.h: `fatia sim`: supply, control and demand together in virtual time.
 *
 * A simulation is a fleet (a supply plan), optional Kueue objects (when there are ClusterQueues,
 * admission goes through the control engine; without, every workload is admitted on arrival), and
 * a trace of submissions. The driver (sim.c) is a discrete-event loop over arrivals and
 * completions; after the events of each instant it runs admission cycles, evicts what the control
 * engine preempted, and places admitted workloads (demand/place.h) in admission order, retrying
 * the ones that did not fit whenever capacity is freed. Dynamic MIG is placement's (opts.mig).
 *
 * Traces (trace.c) are parsed from buffers (the caller reads the files): the Alibaba GPU-sharing
 * trace (cluster-trace-gpu-v2023: pods, and the node list, which becomes a fleet of NodePools
 * under a fractional policy), and fatia's own CSV (docs/sim.md).
 *
 * The fill mode is the FGD paper's experiment: pods drawn at random with replacement (fixed
 * seed) from the trace, arriving one after another with no departures, until the GPUs requested
 * reach fill_pct of the fleet's; the report gives unallocated and fragmented GPUs at each
 * checkpoint of requested load.
 *
 * Nothing here reads a clock or does I/O; the caller measures wall time.
 */
#ifndef FATIA_SIM_SIM_H
#define FATIA_SIM_SIM_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "demand/place.h"
#include "model/diag.h"
#include "model/objset.h"
#include "supply/plan.h"

/* ---- traces ---- */

struct fatia_sim_sub {
    int64_t t;        /* arrival, usec from the start */
    int64_t duration; /* usec; < 0: runs forever */
    char *ns, *name;
    char *queue;      /* LocalQueue name (kueue.x-k8s.io/queue-name), or NULL */
    uint32_t count;   /* pods */
    int32_t priority; /* INT32_MIN: unset */
    json_t *spec;     /* the pod spec of every pod (owned) */
    double duty;      /* GPU duty cycle for the slowdown model (0..1), < 0 unknown */
    double sm;        /* share of the GPU's SMs its kernels occupy while they run (0..1) */
    uint32_t shape;   /* pods with the same spec share a shape (filled by the loader) */
    uint32_t line;    /* of the trace, for messages (0: unknown) */
    char *profile;    /* HardwareProfile "name" or "ns/name" (fatia_sim_trace_profiles), or NULL */
    char *priority_class; /* a profile's Kueue priority class (WorkloadPriorityClass), or NULL */
};

struct fatia_sim_trace {
    char *file; /* for messages */
    struct fatia_sim_sub *v;
    size_t n, cap;
    uint32_t n_shapes;
};

void fatia_sim_trace_init(struct fatia_sim_trace *t);
void fatia_sim_trace_release(struct fatia_sim_trace *t);

/* The Alibaba v2023 pod list (openb_pod_list_*.csv): columns name, cpu_milli, memory_mib, num_gpu,
 * gpu_milli, and optionally gpu_spec, creation_time, deletion_time (seconds). Each row is one pod:
 * requests cpu, memory and fatia.dev/gpu-milli (gpu_milli for one GPU, num_gpu x 1000 for more);
 * gpu_spec restricts it to nodes whose label alibaba.com/gpu-model is one of the listed models.
 * Without creation_time, pods arrive one second apart. Errors name file, line and column. */
int fatia_sim_trace_alibaba(struct fatia_sim_trace *t, const char *file, const char *buf, size_t n,
                            struct fatia_diag *diag);

/* fatia's CSV (docs/sim.md): header with time, namespace, duration, resources or profile, and
 * optionally queue, name, pods, priority, dutyCycle. */
int fatia_sim_trace_fatia(struct fatia_sim_trace *t, const char *file, const char *buf, size_t n,
                          struct fatia_diag *diag);

/* Applies the HardwareProfiles the trace's rows name (profile column) from set: every identifier
 * the row's resources do not name is requested at the profile's defaultCount; a Queue profile
 * gives its LocalQueue (when the row names none) and priority class, a Node profile its node
 * selector and tolerations; a request outside the profile's min..max, a missing or disabled
 * profile is an error naming the row. Shapes are recomputed. 0, -FATIA_E_INVALID, -ENOMEM. */
int fatia_sim_trace_profiles(struct fatia_sim_trace *t, const struct fatia_objset *set,
                             struct fatia_diag *diag);

/* The Alibaba node list (openb_node_list_gpu_node.csv: sn, cpu_milli, memory_mib, gpu, model) as
 * fatia.dev/v1alpha1 objects: one NodePool per node shape (model, GPU count, CPU, memory), named
 * alibaba-<model>-<gpus>g-<n>, with label alibaba.com/gpu-model, and one GPUSharingPolicy
 * `fractional` over them. Models the catalog lacks (G2, G3) are declared with `memory`. *ret is a
 * JSON array of objects (new reference). */
int fatia_sim_alibaba_fleet(const char *file, const char *buf, size_t n, json_t **ret,
                            struct fatia_diag *diag);

/* ---- running ---- */

/* The pieces of the FGD artifact's scheduler (kubernetes-scheduler-simulator) that fatia's
 * fragmentation policy does differently, each on its own for the ablation (docs/sim.md);
 * FATIA_SIM_FGD_ALL is `--placement fgd` (every type; the artifact cuts at coverage 95). */
#define FATIA_SIM_FGD_SCORE    (1u << 0) /* the integer sigmoid score (FATIA_PLACE_FGD_SCORE) */
#define FATIA_SIM_FGD_TIES     (1u << 1) /* equal scores: a node drawn at random (opts.ties) */
#define FATIA_SIM_FGD_CPU      (1u << 2) /* CPU-only pods are types of the mix */
#define FATIA_SIM_FGD_UPFRONT  (1u << 3) /* fill: the mix of the whole draw, before placing */
#define FATIA_SIM_FGD_TYPES    (1u << 5) /* request types without memory (FATIA_PLACE_MIX_TYPES) */
#define FATIA_SIM_FGD_ALL      0x2fu     /* the five above */
#define FATIA_SIM_FGD_PACK     (1u << 4) /* fatia's improvement: ties packed (FATIA_PLACE_FGD_PACK) */
#define FATIA_SIM_FGD_PACK_CPU (1u << 6) /* the same, CPU-only pods only */
#define FATIA_SIM_FGD_SCARCE   (1u << 7) /* GPU pods: class scarcity (FATIA_PLACE_FGD_SCARCE) */
#define FATIA_SIM_FGD_FIT      (1u << 8) /* GPU pods' ties: best fit of the GPU (FATIA_PLACE_FGD_FIT) */

struct fatia_sim_opts {
    enum fatia_place_policy policy;
    enum fatia_place_mig mig;
    /* fill mode (the FGD experiment): > 0 draws pods until this % of the fleet's GPUs is asked */
    unsigned fill_pct;
    uint64_t seed;
    const unsigned *checkpoints; /* % of requested load to report at (fill mode) */
    size_t n_checkpoints;
    unsigned mix_coverage; /* fatia_place_mix_new's; 0 = 100 (every request type) */
    unsigned fgd;          /* FATIA_SIM_FGD_*: the FGD artifact's choices, one by one */
    int64_t sample_every;  /* usec between samples of the time series; 0 = 200 samples */
    int64_t until;         /* stop at this virtual time (usec); 0 = when everything is done */
    /* the slowdown model and the service bounds (density experiment; docs/sim.md) */
    double max_wait_s;   /* a user waiting longer is not served; 0 = no bound */
    double max_slowdown; /* a user slowed more is not served; 0 = no bound */
};

/* Runs a simulation of trace on plan's fleet, with the Kueue objects of set (may be NULL).
 * *ret is the report (docs/sim.md), a new reference. Returns 0, -FATIA_E_INVALID (a trace entry
 * cannot be compiled or a Kueue object is unusable: diag says which), -ENOMEM. */
int fatia_sim_run(const struct fatia_plan *plan, const struct fatia_objset *set,
                  const struct fatia_sim_trace *trace, const struct fatia_sim_opts *opts,
                  json_t **ret, struct fatia_diag *diag);

#endif
