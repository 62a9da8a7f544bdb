/*
 * bench/control_bench.c: the admission engine's benchmark and scenario generator (make
 * bench-control, bench/control.sh).
 *
 * Model: Kueue's scheduler performance runner (test/performance/scheduler, reference/kueue.md
 * §4.1) in virtual time. Workloads arrive at their creation time; an admitted workload runs for
 * its class's runtime and then finishes, freeing its quota; preempted workloads release their
 * quota at once and queue again (their run starts over when admitted again). At each virtual
 * instant the engine runs cycles until one changes nothing, then the clock jumps to the next
 * arrival or completion. Engine time is the monotonic time of its calls (apply, cycle, release,
 * finish), scaled by the process's share of the CPU over the run (the machine is shared); the
 * engine itself reads no clock. BENCH_PHASES=1 splits cycle time by phase through the engine's
 * phase hook. The clock also jumps to the engine's next wakeup (fatia_control_next_wakeup: a
 * requeue backoff, a victim's preemption cooldown or a batched requeue ending). The engine batches
 * the requeue of inadmissible workloads per root cohort as Kueue's requeuer does, with Kueue's 1 s
 * (fatia_control_set_requeue_batch; BENCH_REQUEUE_BATCH_MS=N sets N ms, 0 requeues at each
 * capacity event as the engine did before). A run that preempts more workloads
 * at one instant than there are workloads stops with "preemption loop" (none does: see
 * docs/control.md on the loop guards); one that ends with workloads never finished says so.
 *
 * Scenarios:
 *   main        1,000 ClusterQueues in 100 cohorts: 70 flat cohorts of 10 queues and 10
 *               hierarchical roots (own quota) with 2 child cohorts (lending limit 0) of 15
 *               queues; 4 flavors x 3 resources (cpu, memory, nvidia.com/gpu) per queue, nominal
 *               quota in four sizes, borrowing limits (16 cpu / 64Gi / 4 GPUs, a fifth of the
 *               queues 64 cpu / 256Gi / 8 GPUs), lending limits on a seventh, weights 2 on a tenth,
 *               withinClusterQueue LowerPriority, reclaimWithinCohort Any / LowerPriority /
 *               Never by thirds, whenCanBorrow/whenCanPreempt TryNextFlavor on three quarters;
 *               fair sharing on with both strategies. 100,000 workloads arriving at random over
 *               300 virtual seconds into random queues: 60 % small (1 cpu, 4Gi, priority 50,
 *               20 s), 30 % medium (4 cpu, 16Gi, 1 GPU, priority 100, 30 s), 10 % large (2 pods
 *               of 8 cpu, 32Gi, 2 GPUs, priority 200, 60 s): slightly more than the quota holds
 *               (BENCH_ARRIVAL_S=N spreads the arrivals over N virtual seconds instead: less
 *               contention, fewer preemptions)
 *   baseline    Kueue's configs/baseline: 5 cohorts x 6 ClusterQueues (20 cpu, borrowingLimit
 *               100, reclaim Any, within LowerPriority), per queue 350 small + 100 medium + 50
 *               large = 15,000 workloads
 *   large       Kueue's configs/large-scale as kueue.md §4.1 gives it: 10 cohorts x 100
 *               ClusterQueues, per queue 35 small + 11 medium + 4 large = 50,000 workloads
 *   scale N     N workloads pending at once in the main topology without preemption or fair
 *               sharing, run until all finished: the cost as a function of the number pending
 *   gen N FILE  writes the main scenario with N workloads (all pending) as manifests for
 *               `fatia schedule`
 *
 * Output: `name: value unit` lines (scenario-prefixed), see bench/control.sh.
 */
#include "base/compat.h"

#include <sys/resource.h>

#include <math.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "control/control.h"
#include "model/object.h"

/* ---- timing ---- */

/* The engine's calls are timed with the monotonic clock (a vDSO call: cheap enough to wrap every
 * call, where the process CPU clock is a system call that would cost as much as a small cycle);
 * the total CPU time of the process is reported beside it. */
static int64_t cpu_usec(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t proc_cpu_usec(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t t_apply, t_cycle, t_release, t_finish;
static int64_t t_phase[FATIA_CONTROL_PHASE_END];
static int64_t phase_start;
static int cur_phase = -1;

static void phase_hook(void *arg, enum fatia_control_phase p)
{
    int64_t t = cpu_usec();

    (void)arg;
    if (cur_phase >= 0)
        t_phase[cur_phase] += t - phase_start;
    cur_phase = p == FATIA_CONTROL_PHASE_END ? -1 : (int)p;
    phase_start = t;
}

/* ---- objects ---- */

static struct fatia_control *eng;
static FILE *gen_out; /* gen mode: write manifests instead of applying */

static json_t *validated(json_t *root)
{
    struct fatia_diag diag;
    struct fatia_object *o = NULL;
    json_t *obj;

    fatia_diag_init(&diag);
    if (fatia_object_decode(root, &(struct fatia_decode_opts){0}, NULL, &diag, &o) < 0) {
        fatia_diag_print(&diag, stderr);
        fprintf(stderr, "control_bench: generated an invalid object\n");
        exit(1);
    }
    obj = json_incref(o->obj);
    fatia_object_free(o);
    fatia_diag_release(&diag);
    json_decref(root);
    return obj;
}

static void emit(json_t *obj, int64_t now)
{
    if (gen_out) {
        char *t = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
        fprintf(gen_out, "---\n%s\n", t);
        free(t);
        return;
    }
    int64_t t0 = cpu_usec();
    if (fatia_control_apply(eng, obj, now, NULL) < 0) {
        fprintf(stderr, "control_bench: apply failed\n");
        exit(1);
    }
    t_apply += cpu_usec() - t0;
}

static void apply_new(json_t *root, int64_t now)
{
    json_t *o = validated(root);
    emit(o, now);
    json_decref(o);
}

static void flavor(const char *name)
{
    apply_new(json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "kueue.x-k8s.io/v1beta2", "kind",
                        "ResourceFlavor", "metadata", "name", name),
              0);
}

/* resource group: covered resources x flavors with the same quota per flavor */
static json_t *groups(const char *const *res, const char *const *quota, const char *const *blim,
                      const char *const *llim, int n_res, const char *const *flv, int n_flv)
{
    json_t *fl = json_array(), *cov = json_array();

    for (int r = 0; r < n_res; r++)
        json_array_append_new(cov, json_string(res[r]));
    for (int f = 0; f < n_flv; f++) {
        json_t *rs = json_array();
        for (int r = 0; r < n_res; r++) {
            json_t *q = json_pack("{s:s,s:s}", "name", res[r], "nominalQuota", quota[r]);
            if (blim && blim[r])
                json_object_set_new(q, "borrowingLimit", json_string(blim[r]));
            if (llim && llim[r])
                json_object_set_new(q, "lendingLimit", json_string(llim[r]));
            json_array_append_new(rs, q);
        }
        json_array_append_new(fl, json_pack("{s:s,s:o}", "name", flv[f], "resources", rs));
    }
    return json_pack("[{s:o,s:o}]", "coveredResources", cov, "flavors", fl);
}

static void cohort(const char *name, const char *parent, json_t *rgs, const char *weight)
{
    json_t *spec = json_object();

    if (parent)
        json_object_set_new(spec, "parentName", json_string(parent));
    if (rgs)
        json_object_set_new(spec, "resourceGroups", rgs);
    if (weight)
        json_object_set_new(spec, "fairSharing", json_pack("{s:s}", "weight", weight));
    apply_new(json_pack("{s:s,s:s,s:{s:s},s:o}", "apiVersion", "kueue.x-k8s.io/v1beta2", "kind",
                        "Cohort", "metadata", "name", name, "spec", spec),
              0);
}

static void cluster_queue(const char *name, const char *cohort_name, json_t *rgs,
                          json_t *preemption, const char *weight, bool try_next)
{
    json_t *spec = json_pack("{s:s,s:{},s:o,s:o}", "cohortName", cohort_name, "namespaceSelector",
                             "resourceGroups", rgs, "preemption", preemption);

    if (try_next)
        json_object_set_new(spec, "flavorFungibility",
                            json_pack("{s:s,s:s}", "whenCanBorrow", "TryNextFlavor",
                                      "whenCanPreempt", "TryNextFlavor"));
    if (weight)
        json_object_set_new(spec, "fairSharing", json_pack("{s:s}", "weight", weight));
    apply_new(json_pack("{s:s,s:s,s:{s:s},s:o}", "apiVersion", "kueue.x-k8s.io/v1beta2", "kind",
                        "ClusterQueue", "metadata", "name", name, "spec", spec),
              0);
    apply_new(json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s}}", "apiVersion", "kueue.x-k8s.io/v1beta2",
                        "kind", "LocalQueue", "metadata", "name", name, "namespace", "bench",
                        "spec", "clusterQueue", name),
              0);
}

/* ---- workloads and events ---- */

struct wclass {
    const char *name;
    json_t *tmpl; /* a validated Workload, renamed for each instance */
    int64_t runtime_us;
    int priority;
    /* results */
    uint64_t admitted, wait_sum_us, n;
};

struct wl {
    int cls;
    int cq;
    int64_t created, admitted_at;
    bool counted;
};

static struct wclass classes[8];
static int n_classes;
static struct wl *wls;
static size_t n_wls;
static char **cq_names;
static int n_cqs;

static json_t *workload_template(const json_t *requests, int count, int priority)
{
    return validated(json_pack(
        "{s:s,s:s,s:{s:s,s:s,s:s},s:{s:s,s:i,s:[{s:s,s:i,s:{s:{s:[{s:s,s:s,s:{s:O}}]}}}]}}",
        "apiVersion", "kueue.x-k8s.io/v1beta2", "kind", "Workload", "metadata", "name", "t",
        "namespace", "bench", "creationTimestamp", "2026-01-01T00:00:00Z", "spec", "queueName", "x",
        "priority", priority, "podSets", "name", "main", "count", count, "template", "spec",
        "containers", "name", "c", "image", "x", "resources", "requests", requests));
}

static int add_class(const char *name, json_t *requests, int count, int priority,
                     int64_t runtime_ms)
{
    struct wclass *c = &classes[n_classes];

    c->name = name;
    c->tmpl = workload_template(requests, count, priority);
    c->priority = priority;
    c->runtime_us = runtime_ms * 1000;
    json_decref(requests);
    return n_classes++;
}

static const int64_t EPOCH = INT64_C(1767225600000000); /* 2026-01-01T00:00:00Z */

static void submit(size_t i, int64_t now)
{
    struct wl *w = &wls[i];
    json_t *o = classes[w->cls].tmpl;
    char name[32], ts[64];

    snprintf(name, sizeof(name), "w%zu", i);
    fatia_time_format_rfc3339(EPOCH + w->created, true, ts, sizeof(ts));
    json_object_set_new(json_object_get(o, "metadata"), "name", json_string(name));
    json_object_set_new(json_object_get(o, "metadata"), "creationTimestamp", json_string(ts));
    json_object_set_new(json_object_get(o, "spec"), "queueName", json_string(cq_names[w->cq]));
    emit(o, EPOCH + now);
}

/* completion heap */
struct ev {
    int64_t t;
    size_t wl;
};
static struct ev *heap;
static size_t heap_n, heap_cap;

static void heap_push(int64_t t, size_t wl)
{
    size_t i;

    if (heap_n == heap_cap) {
        heap_cap = heap_cap ? heap_cap * 2 : 1024;
        heap = realloc(heap, heap_cap * sizeof(*heap));
    }
    i = heap_n++;
    while (i > 0 && heap[(i - 1) / 2].t > t) {
        heap[i] = heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    heap[i] = (struct ev){t, wl};
}

static struct ev heap_pop(void)
{
    struct ev top = heap[0], last = heap[--heap_n];
    size_t i = 0;

    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        struct ev *best = &last;
        if (l < heap_n && heap[l].t < best->t) {
            m = l;
            best = &heap[l];
        }
        if (r < heap_n && heap[r].t < best->t)
            m = r;
        if (m == i)
            break;
        heap[i] = heap[m];
        i = m;
    }
    if (heap_n)
        heap[i] = last;
    return top;
}

static int64_t cpu_limit_us; /* BENCH_CPU_LIMIT: stop early and report (diagnosis) */

static int cmp_created(const void *a, const void *b)
{
    int64_t x = ((const struct wl *)a)->created, y = ((const struct wl *)b)->created;
    return x < y ? -1 : x > y;
}

/* ---- the run ---- */

static const char *const preempt_reasons[] = {"InClusterQueue", "InCohortReclamation",
                                              "InCohortReclaimWhileBorrowing",
                                              "InCohortFairSharing"};

struct stats {
    uint64_t cycles, heads, admissions, borrowed, preemptions, evictions, fair, finished;
    uint64_t by_reason[4];
    uint64_t preemptors, skipped;
    int64_t makespan_us;
};

static size_t parse_index(const char *name)
{
    return (size_t)strtoull(name + 1, NULL, 10);
}

static void run_sim(struct stats *st)
{
    size_t next = 0;
    int64_t now = 0;
    char name[32];

    memset(st, 0, sizeof(*st));
    qsort(wls, n_wls, sizeof(*wls), cmp_created);
    for (;;) {
        bool progress = true;
        size_t ev_now = 0;
        /* arrivals and completions due now */
        while (next < n_wls && wls[next].created <= now)
            submit(next++, now);
        while (heap_n && heap[0].t <= now) {
            struct ev e = heap_pop();
            int64_t t0;
            /* a completion scheduled before the workload was preempted is void */
            if (wls[e.wl].admitted_at < 0 ||
                wls[e.wl].admitted_at + classes[wls[e.wl].cls].runtime_us != e.t)
                continue;
            wls[e.wl].admitted_at = -1;
            snprintf(name, sizeof(name), "w%zu", e.wl);
            t0 = cpu_usec();
            if (fatia_control_workload_finished(eng, "bench", name, EPOCH + now) == 0)
                st->finished++;
            t_finish += cpu_usec() - t0;
        }
        while (progress) {
            const struct fatia_control_result *res;
            int64_t t0 = cpu_usec();
            if (!fatia_control_has_work(eng, EPOCH + now))
                break;
            if (fatia_control_cycle(eng, EPOCH + now, &res) < 0) {
                fprintf(stderr, "control_bench: cycle failed\n");
                exit(1);
            }
            t_cycle += cpu_usec() - t0;
            st->cycles++;
            st->heads += res->n_heads;
            st->borrowed += res->n_borrowing;
            st->fair += res->n_fair_decisions;
            st->preemptors += res->n_preemptors;
            st->skipped += res->n_skipped;
            for (size_t i = 0; i < res->n_admitted; i++) {
                size_t k = parse_index(res->admitted[i].name);
                struct wl *w = &wls[k];
                st->admissions++;
                w->admitted_at = now;
                heap_push(now + classes[w->cls].runtime_us, k);
                if (!w->counted) {
                    /* time to admission counts the first admission, as Kueue's runner */
                    struct wclass *c = &classes[w->cls];
                    c->admitted++;
                    c->wait_sum_us += (uint64_t)(now - w->created);
                    w->counted = true;
                }
            }
            for (size_t i = 0; i < res->n_evicted; i++) {
                st->evictions++;
                st->preemptions += res->evicted[i].preemptor != NULL;
                for (int k = 0; k < 4; k++)
                    if (!strcmp(res->evicted[i].reason, preempt_reasons[k]))
                        st->by_reason[k]++;
                wls[parse_index(res->evicted[i].name)].admitted_at = -1;
            }
            t0 = cpu_usec();
            if (res->n_evicted && fatia_control_release_all(eng, EPOCH + now) < 0)
                exit(1);
            t_release += cpu_usec() - t0;
            progress = !res->quiet;
            if (getenv("BENCH_DEBUG") && st->cycles % 1000 == 0)
                fprintf(stderr,
                        "t=%.3f cycles=%" PRIu64
                        " heads=%zu adm=%zu ev=%zu pend=%zu adm_total=%" PRIu64 " ev_total=%" PRIu64
                        " (%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 ")\n",
                        (double)now / 1e6, st->cycles, res->n_heads, res->n_admitted,
                        res->n_evicted, res->n_pending, st->admissions, st->evictions,
                        st->by_reason[0], st->by_reason[1], st->by_reason[2], st->by_reason[3]);
            /* the clock stands still while cycles run: more evictions at one instant than there
             * are workloads means workloads preempt each other in a loop */
            ev_now += res->n_evicted;
            if (getenv("BENCH_DEBUG") && ev_now > n_wls + 990) {
                fprintf(stderr, "cycle %" PRIu64 "\n", st->cycles);
                for (size_t i = 0; i < res->n_admitted; i++)
                    fprintf(stderr, "  admitted %s in %s%s\n", res->admitted[i].key,
                            res->admitted[i].cluster_queue,
                            res->admitted[i].borrowing ? " (borrowing)" : "");
                for (size_t i = 0; i < res->n_evicted; i++)
                    fprintf(stderr, "  evicted %s in %s by %s: %s\n", res->evicted[i].key,
                            res->evicted[i].cluster_queue, res->evicted[i].preemptor,
                            res->evicted[i].reason);
                for (size_t i = 0; i < res->n_pending; i++) {
                    char *m = fatia_control_pending_message(eng, &res->pending[i]);
                    fprintf(stderr, "  pending %s in %s: %.150s\n", res->pending[i].key,
                            res->pending[i].cluster_queue, m ? m : "(out of memory)");
                    fatia_free(m);
                }
            }
            if (ev_now > n_wls + 1000) {
                fprintf(stderr, "control_bench: preemption loop at t=%.3f s\n", (double)now / 1e6);
                exit(1);
            }
        }
        if (cpu_limit_us && proc_cpu_usec() > cpu_limit_us)
            break;
        /* the next event */
        {
            int64_t t = INT64_MAX;
            if (next < n_wls)
                t = wls[next].created;
            if (heap_n && heap[0].t < t)
                t = heap[0].t;
            {
                /* a backoff the engine waits on (engine time, usec since the epoch) */
                int64_t w = fatia_control_next_wakeup(eng);
                if (w != INT64_MAX && w - EPOCH < t)
                    t = w - EPOCH > now ? w - EPOCH : now + 1;
            }
            if (t == INT64_MAX)
                break;
            now = t;
        }
    }
    st->makespan_us = now;
    if (st->finished != n_wls && !cpu_limit_us) {
        struct fatia_control_stats es;
        fatia_control_stats(eng, &es);
        fprintf(stderr,
                "control_bench: %" PRIu64 " of %zu workloads finished (engine: %zu pending, %zu "
                "admitted, %zu evicting)\n",
                st->finished, n_wls, es.pending, es.admitted, es.evicting);
        exit(1);
    }
}

/* ---- scenarios ---- */

static const char *const res3[] = {"cpu", "memory", "nvidia.com/gpu"};
static const char *const flv4[] = {"f0", "f1", "f2", "f3"};

static uint64_t rng = 42;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void fair_sharing_config(void)
{
    apply_new(json_pack("{s:s,s:s,s:{s:s},s:{s:{s:[s,s]}}}", "apiVersion", "fatia.dev/v1alpha1",
                        "kind", "SchedulerConfig", "metadata", "name", "default", "spec",
                        "fairSharing", "preemptionStrategies", "LessThanOrEqualToFinalShare",
                        "LessThanInitialShare"),
              0);
}

static void new_cq_names(int n)
{
    n_cqs = n;
    cq_names = calloc((size_t)n, sizeof(*cq_names));
    for (int i = 0; i < n; i++) {
        cq_names[i] = malloc(16);
        snprintf(cq_names[i], 16, "cq%d", i);
    }
}

/* 1,000 ClusterQueues in 100 cohorts: 70 flat roots x 10 queues, and 10 hierarchical roots
 * (own quota) each with 2 child cohorts (lending limits) x 15 queues. */
static void build_main_topology(bool fair, bool preempt)
{
    char name[32], parent[32];
    int q = 0;

    if (fair)
        fair_sharing_config();
    apply_new(json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata",
                        "name", "bench"),
              0);
    for (int f = 0; f < 4; f++)
        flavor(flv4[f]);
    new_cq_names(1000);
    for (int co = 0; co < 80; co++) {
        snprintf(name, sizeof(name), "co%d", co);
        if (co < 70) {
            cohort(name, NULL, NULL, NULL);
        } else {
            static const char *const rq[] = {"64", "256Gi", "8"};
            cohort(name, NULL, groups(res3, rq, NULL, NULL, 3, flv4, 4), NULL);
            for (int ch = 0; ch < 2; ch++) {
                static const char *const cq0[] = {"0", "0", "0"};
                static const char *const cll[] = {"0", "0", "0"};
                char child[32];
                snprintf(child, sizeof(child), "co%d-%d", co, ch);
                cohort(child, name, groups(res3, cq0, NULL, cll, 3, flv4, 4), ch ? "2" : NULL);
            }
        }
    }
    for (int co = 0; co < 80; co++) {
        int per = co < 70 ? 10 : 30;
        for (int k = 0; k < per; k++, q++) {
            static const char *const quota[][3] = {
                {"16", "64Gi", "2"}, {"32", "128Gi", "4"}, {"8", "32Gi", "1"}, {"24", "96Gi", "3"}};
            /* every queue may borrow: 16 cpu / 64Gi / 4 GPUs (so that the largest class fits
             * in every queue), a fifth of them 64 cpu / 256Gi / 8 GPUs */
            static const char *const blim[] = {"64", "256Gi", "8"};
            static const char *const blim_small[] = {"16", "64Gi", "4"};
            static const char *const llim[] = {"8", "32Gi", "1"};
            const char *const *qq = quota[q % 4];
            /* reclaimWithinCohort: a third each of Any, LowerPriority and Never (Kueue's
             * default) */
            static const char *const reclaim[] = {"Any", "LowerPriority", "Never"};
            json_t *pre =
                json_pack("{s:s,s:s}", "withinClusterQueue", preempt ? "LowerPriority" : "Never",
                          "reclaimWithinCohort", preempt ? reclaim[q % 3] : "Never");
            if (co < 70) {
                snprintf(parent, sizeof(parent), "co%d", co);
            } else {
                snprintf(parent, sizeof(parent), "co%d-%d", co, k % 2);
            }
            if (!fair && preempt && q % 3 == 0)
                json_object_set_new(
                    pre, "borrowWithinCohort",
                    json_pack("{s:s,s:i}", "policy", "LowerPriority", "maxPriorityThreshold", 100));
            cluster_queue(cq_names[q], parent,
                          groups(res3, qq, q % 5 == 0 ? blim : blim_small, q % 7 == 0 ? llim : NULL,
                                 3, flv4, 4),
                          pre, q % 10 == 0 ? "2" : NULL, q % 4 != 0);
        }
    }
}

/* Three classes; the GPU classes bound the run (see main below). */
static void main_classes(void)
{
    n_classes = 0;
    add_class("small", json_pack("{s:s,s:s}", "cpu", "1", "memory", "4Gi"), 1, 50, 20000);
    add_class("medium",
              json_pack("{s:s,s:s,s:s}", "cpu", "4", "memory", "16Gi", "nvidia.com/gpu", "1"), 1,
              100, 30000);
    add_class("large",
              json_pack("{s:s,s:s,s:s}", "cpu", "8", "memory", "32Gi", "nvidia.com/gpu", "2"), 2,
              200, 60000);
}

/* n workloads spread over the queues; arrivals over `span_us` (0: all at once) */
static void main_workloads(size_t n, int64_t span_us)
{
    n_wls = n;
    wls = calloc(n, sizeof(*wls));
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rnd();
        wls[i].cq = (int)(r % (uint64_t)n_cqs);
        wls[i].cls = (r >> 20) % 10 < 6 ? 0 : (r >> 20) % 10 < 9 ? 1 : 2;
        wls[i].created = span_us ? (int64_t)((r >> 32) % (uint64_t)span_us) : 0;
    }
}

/* Kueue configs/baseline and configs/large-scale */
static void build_kueue(int cohorts, int per_cohort, int n_small, int n_medium, int n_large,
                        int64_t small_rt, int64_t medium_rt, int64_t large_rt, int64_t small_iv,
                        int64_t medium_iv, int64_t large_iv)
{
    static const char *const cpu[] = {"cpu"};
    static const char *const q20[] = {"20"};
    static const char *const bl100[] = {"100"};
    static const char *const def[] = {"default"};
    size_t k = 0;

    apply_new(json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata",
                        "name", "bench"),
              0);
    flavor("default");
    new_cq_names(cohorts * per_cohort);
    for (int i = 0; i < n_cqs; i++) {
        char co[32];
        snprintf(co, sizeof(co), "cohort%d", i / per_cohort);
        cluster_queue(cq_names[i], co, groups(cpu, q20, bl100, NULL, 1, def, 1),
                      json_pack("{s:s,s:s}", "withinClusterQueue", "LowerPriority",
                                "reclaimWithinCohort", "Any"),
                      NULL, false);
    }
    n_classes = 0;
    add_class("small", json_pack("{s:s}", "cpu", "1"), 1, 50, small_rt);
    add_class("medium", json_pack("{s:s}", "cpu", "5"), 1, 100, medium_rt);
    add_class("large", json_pack("{s:s}", "cpu", "20"), 1, 200, large_rt);
    n_wls = (size_t)n_cqs * (size_t)(n_small + n_medium + n_large);
    wls = calloc(n_wls, sizeof(*wls));
    for (int q = 0; q < n_cqs; q++) {
        for (int i = 0; i < n_small; i++)
            wls[k++] = (struct wl){0, q, (int64_t)i * small_iv * 1000, 0, false};
        for (int i = 0; i < n_medium; i++)
            wls[k++] = (struct wl){1, q, (int64_t)i * medium_iv * 1000, 0, false};
        for (int i = 0; i < n_large; i++)
            wls[k++] = (struct wl){2, q, (int64_t)i * large_iv * 1000, 0, false};
    }
}

/* ---- report ---- */

/* Engine times: the monotonic time of its calls, scaled by the share of the run's wall time in
 * which this process had a CPU (k = process CPU time / wall time of the run), since the machine is
 * shared. k is printed; on an idle machine it is close to 1. */
static double k_cpu = 1.0;

static double sec(int64_t us)
{
    return (double)us * k_cpu / 1e6;
}

static void report(const char *scen, const struct stats *st, int64_t wall_us)
{
    struct rusage ru;
    double engine_s = sec(t_apply + t_cycle + t_release + t_finish);
    double cycle_s = sec(t_cycle);
    int64_t tp = 0;

    getrusage(RUSAGE_SELF, &ru);
    for (int p = 0; p < FATIA_CONTROL_PHASE_END; p++)
        tp += t_phase[p];
    printf("%s.workloads: %zu count\n", scen, n_wls);
    printf("%s.cluster_queues: %d count\n", scen, n_cqs);
    printf("%s.time_to_quiescence: %.3f s\n", scen, engine_s);
    printf("%s.process_cpu: %.3f s\n", scen, (double)wall_us / 1e6);
    printf("%s.cpu_share: %.2f ratio\n", scen, k_cpu);
    printf("%s.virtual_makespan: %.1f s\n", scen, (double)st->makespan_us / 1e6);
    printf("%s.cycles: %" PRIu64 " count\n", scen, st->cycles);
    printf("%s.admissions: %" PRIu64 " count\n", scen, st->admissions);
    printf("%s.admissions_per_second: %.0f 1/s\n", scen,
           engine_s > 0 ? (double)st->admissions / engine_s : 0);
    printf("%s.admissions_per_cycle_second: %.0f 1/s\n", scen,
           cycle_s > 0 ? (double)st->admissions / cycle_s : 0);
    printf("%s.decisions_per_second: %.0f 1/s\n", scen,
           engine_s > 0 ? (double)(st->heads + st->evictions) / engine_s : 0);
    printf("%s.admissions_borrowing: %" PRIu64 " count (%.1f %%)\n", scen, st->borrowed,
           st->admissions ? 100.0 * (double)st->borrowed / (double)st->admissions : 0);
    printf("%s.preemptions: %" PRIu64 " count (%.1f %% of admissions)\n", scen, st->preemptions,
           st->admissions ? 100.0 * (double)st->preemptions / (double)st->admissions : 0);
    for (int k = 0; k < 4; k++)
        printf("%s.preemptions_%s: %" PRIu64 " count\n", scen, preempt_reasons[k],
               st->by_reason[k]);
    printf("%s.fair_sharing_decisions: %" PRIu64 " count\n", scen, st->fair);
    printf("%s.heads: %" PRIu64 " count\n", scen, st->heads);
    printf("%s.heads_preempting: %" PRIu64 " count\n", scen, st->preemptors);
    printf("%s.heads_skipped: %" PRIu64 " count\n", scen, st->skipped);
    printf("%s.finished: %" PRIu64 " count\n", scen, st->finished);
    printf("%s.time_apply: %.3f s\n", scen, sec(t_apply));
    printf("%s.time_cycles: %.3f s\n", scen, cycle_s);
    static const char *const names[] = {"heads", "nominate", "process", "requeue"};
    for (int p = 0; tp && p < FATIA_CONTROL_PHASE_END; p++)
        printf("%s.time_cycle_%s: %.3f s (%.1f %%)\n", scen, names[p], sec(t_phase[p]),
               tp ? 100.0 * (double)t_phase[p] / (double)tp : 0);
    printf("%s.time_release_finish: %.3f s\n", scen, sec(t_release + t_finish));
    {
        struct fatia_control_phase_counts pc;
        fatia_control_phase_counts(eng, &pc);
        printf("%s.heads_nominated: %" PRIu64 " count\n", scen, pc.nominate);
        printf("%s.preemption_searches: %" PRIu64 " count\n", scen, pc.preempt_searches);
        printf("%s.preemption_searches_hopeless: %" PRIu64 " count\n", scen, pc.preempt_hopeless);
        printf("%s.preemption_candidates_per_search: %.1f count\n", scen,
               pc.preempt_searches ? (double)pc.preempt_collected / (double)pc.preempt_searches
                                   : 0);
    }
    printf("%s.peak_rss: %.1f MiB\n", scen, (double)ru.ru_maxrss / 1024.0);
    for (int c = 0; c < n_classes; c++)
        printf("%s.avg_time_to_admission_%s: %.0f ms\n", scen, classes[c].name,
               classes[c].admitted
                   ? (double)classes[c].wait_sum_us / (double)classes[c].admitted / 1000.0
                   : 0);
}

int main(int argc, char **argv)
{
    const char *scen = argc > 1 ? argv[1] : "main";
    struct stats st;
    int64_t t0, m0;

    if (!strcmp(scen, "gen")) {
        size_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000;
        gen_out = fopen(argc > 3 ? argv[3] : "/dev/stdout", "w");
        if (!gen_out)
            return 1;
        build_main_topology(true, true);
        main_classes();
        main_workloads(n, 0);
        for (size_t i = 0; i < n_wls; i++)
            submit(i, 0);
        fclose(gen_out);
        return 0;
    }
    if (fatia_control_new(&eng) < 0)
        return 1;
    /* the phase breakdown costs four clock reads per cycle: only on request */
    if (getenv("BENCH_PHASES"))
        fatia_control_set_phase_hook(eng, phase_hook, NULL);
    /* Kueue's batched requeue of inadmissible workloads (1 s, requeueBatchPeriod) unless
     * BENCH_REQUEUE_BATCH_MS says otherwise; 0 requeues at each capacity event */
    fatia_control_set_requeue_batch(
        eng, (getenv("BENCH_REQUEUE_BATCH_MS") ? atoll(getenv("BENCH_REQUEUE_BATCH_MS")) : 1000) *
                 INT64_C(1000));
    t0 = proc_cpu_usec();
    m0 = cpu_usec();
    if (!strcmp(scen, "main")) {
        build_main_topology(true, true);
        main_classes();
        /* 100,000 workloads arriving over 30 virtual seconds; they ask for about 3.3 million
         * GPU-seconds against some 10,000 GPUs of quota, so queues stay deep for minutes */
        main_workloads(argc > 2 ? strtoull(argv[2], NULL, 10) : 100000,
                       (getenv("BENCH_ARRIVAL_S") ? atoll(getenv("BENCH_ARRIVAL_S")) : 300) *
                           INT64_C(1000000));
    } else if (!strcmp(scen, "baseline")) {
        build_kueue(5, 6, 350, 100, 50, 200, 500, 1000, 100, 500, 1200);
    } else if (!strcmp(scen, "large")) {
        build_kueue(10, 100, 35, 11, 4, 150, 350, 700, 60, 300, 600);
    } else if (!strcmp(scen, "scale")) {
        size_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : 10000;
        /* the queue's cost alone: no preemption, so that every run does the same work per
         * admission and only the number of pending workloads changes */
        build_main_topology(false, false);
        main_classes();
        main_workloads(n, 0);
        scen = argc > 2 ? argv[2] : "10000";
    } else {
        fprintf(stderr, "usage: control_bench main|baseline|large|scale N|gen N FILE\n");
        return 2;
    }
    if (getenv("BENCH_CPU_LIMIT"))
        cpu_limit_us = (int64_t)strtoll(getenv("BENCH_CPU_LIMIT"), NULL, 10) * 1000000;
    run_sim(&st);
    {
        int64_t cpu = proc_cpu_usec() - t0, wall = cpu_usec() - m0;
        k_cpu = wall > 0 && cpu < wall ? (double)cpu / (double)wall : 1.0;
    }
    {
        char prefix[64];
        snprintf(prefix, sizeof(prefix), "%s%s",
                 strcmp(argv[1] ? argv[1] : "", "scale") ? "" : "scale_", scen);
        report(prefix, &st, proc_cpu_usec() - t0);
    }
    fatia_control_free(eng);
    return 0;
}
