/*
 * sim/sim.c: the discrete-event simulator behind `fatia sim` (see sim.h, docs/sim.md).
 *
 * Virtual time in microseconds from the start; events are arrivals (the trace, in time order)
 * and completions (a heap). After the events of one instant the driver
 *   1. runs admission: with ClusterQueues in the input, Kueue cycles of the control engine until
 *      one admits, evicts and parks nothing (at most 64 per instant); evicted workloads lose their
 *      pods and are released (they queue again, and start from scratch when admitted again);
 *      without ClusterQueues every arrival is admitted at once;
 *   2. places admitted workloads in admission order (gang; demand/place.h), each committed when it
 *      fits; one that does not fit is asked whether it could ever fit (FATIA_PLACE_TEST): if not
 *      it is unplaceable (its quota is given back), else it waits, and waiting workloads are tried
 *      again whenever capacity was freed;
 *   3. schedules the completion of every workload it started.
 *
 * A workload's states (the transitions are made in the function named):
 *
 *             arrive()              admit (cycle or at once)       place_waiting()
 *   FUTURE ──────────────► PENDING ─────────────────────► ADMITTED ──────────────► RUNNING
 *                            ▲                                │                      │
 *                            │ evict(): preempted, released   │ never fits           │ finish()
 *                            └────────────────────────────────┼──────────────────────┤
 *                                                             ▼                      ▼
 *                                                        UNPLACEABLE               DONE
 *
 * Reports: allocation over time (a sample every opts.sample_every), fragmentation (the FGD
 * measure against the mix of pods seen, place_frag.c), per queue the wait from arrival to start
 * (p50/p90/p99), admissions, preemptions and the time-averaged GPUs used against the queue's
 * nominal GPU quota, per sharing strategy the pods per busy GPU (time-averaged), and, when the
 * trace gives duty cycles, each user's slowdown from sharing (the model in docs/sim.md) and
 * whether they were served within opts' bounds.
 *
 * The fill mode (sim.h) is a separate loop: no admission, no departures, pods drawn with
 * replacement by a 64-bit SplitMix generator seeded with opts->seed.
 */
#include "base/compat.h"

#include "sim/sim.h"

#include <math.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "base/map.h"
#include "base/vec.h"
#include "control/control.h"
#include "demand/demand.h"
#include "model/object.h"

#define USEC      1000000.0
#define MAX_CYCLE 64

enum wl_state {
    WL_FUTURE,
    WL_PENDING,
    WL_ADMITTED,
    WL_RUNNING,
    WL_DONE,
    WL_UNPLACEABLE,
};

struct wl {
    const struct fatia_sim_sub *sub;
    uint8_t state;
    uint32_t gen; /* bumped by eviction: older completion events are stale */
    uint32_t queue;
    char *key; /* ns/name */
    char **pod_keys;
    struct fatia_place_pod **pods; /* count pointers to the shape's pod */
    int64_t arrived, started;
    uint64_t gpu_milli; /* of all its pods */
    int64_t wait_first; /* wait of the first start, usec; -1 not started */
    /* slowdown: integral of the stretch over running time */
    double stretch_sum, stretch_now;
    int64_t stretch_since, ran;
    uint32_t *gpus; /* GPUs it uses (one entry per device) */
    double *gpu_sm; /* the SM share of each device */
    size_t n_gpus;
    bool in_wait_list;
};

enum strat {
    PL_STRAT_WHOLE,
    PL_STRAT_TIMESLICE,
    PL_STRAT_MPS,
    PL_STRAT_MIG,
    PL_STRAT_FRACTION,
};

struct u32vec {
    uint32_t *v;
    size_t n, cap;
};

static int u32_push(struct u32vec *v, uint32_t x)
{
    if (fatia_vec_reserve_raw((void **)&v->v, &v->cap, v->n + 1, sizeof(*v->v)) < 0)
        return -ENOMEM;
    v->v[v->n++] = x;
    return 0;
}

struct ev {
    int64_t t;
    uint32_t wl, gen;
};

struct queue_rep {
    char *name;
    FATIA_VEC(double) waits;
    uint64_t admitted, preempted, placed, unplaced;
    double gpu_usec;    /* integral of GPUs used */
    double entitlement; /* nominal GPUs (GPU-equivalents), 0 unknown */
    uint64_t users, served;
    double gpu_now;
};

struct strat_rep {
    double user_usec, busy_usec; /* integrals of pods on busy GPUs and of busy GPUs */
    uint32_t gpus, max_users;
    uint64_t users_now, busy_now;
};

struct sim {
    const struct fatia_sim_opts *o;
    const struct fatia_sim_trace *tr;
    struct fatia_place_state *st;
    struct fatia_place_mix *mix;
    uint64_t ties; /* SplitMix64 state of random tie-breaking (FATIA_SIM_FGD_TIES) */
    struct fatia_control *ctl;
    struct fatia_place_pod **shapes; /* per shape, compiled */
    struct wl *w;
    size_t n_w;
    struct fatia_strmap by_key;
    struct ev *heap;
    size_t n_heap, cap_heap;
    struct u32vec waiting; /* admitted, not placed, in admission order */
    bool freed;            /* capacity was freed since the last placement pass */
    FATIA_VEC(struct queue_rep) queues;
    struct fatia_strmap queue_index;
    struct strat_rep strat[5];
    uint8_t *gpu_strat;
    /* per GPU: the running workloads on it (for the slowdown model) */
    struct u32vec *on_gpu;
    int64_t now, last;
    uint64_t preemptions, placed_pods, unplaced_pods, running_pods, pending_pods;
    uint64_t restarts;
    json_t *series_t, *series_alloc, *series_frag, *series_running, *series_pending;
    int64_t next_sample;
    bool slowdown;          /* the trace has duty cycles */
    uint64_t pass;          /* placement passes */
    uint64_t *shape_failed; /* per shape: the pass a single pod of it last failed in */
    uint8_t *shape_never;   /* per shape: 0 unknown, 1 could fit, 2 never fits */
    struct fatia_diag *diag;
};

/* ---- heap of completions ---- */

static int heap_push(struct sim *s, struct ev e)
{
    size_t i;

    if (s->n_heap == s->cap_heap) {
        size_t nc = s->cap_heap ? s->cap_heap * 2 : 1024;
        struct ev *nh = fatia_reallocarray(s->heap, nc, sizeof(*nh));
        if (!nh)
            return -ENOMEM;
        s->heap = nh;
        s->cap_heap = nc;
    }
    i = s->n_heap++;
    while (i > 0 && s->heap[(i - 1) / 2].t > e.t) {
        s->heap[i] = s->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    s->heap[i] = e;
    return 0;
}

static struct ev heap_pop(struct sim *s)
{
    struct ev top = s->heap[0], last = s->heap[--s->n_heap];
    size_t i = 0;

    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= s->n_heap)
            break;
        if (c + 1 < s->n_heap && s->heap[c + 1].t < s->heap[c].t)
            c++;
        if (s->heap[c].t >= last.t)
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (s->n_heap)
        s->heap[i] = last;
    return top;
}

/* ---- accounting ---- */

static uint32_t queue_of(struct sim *s, const char *name)
{
    struct queue_rep q = {0};

    if (!name)
        name = "default";
    if (fatia_strmap_has(&s->queue_index, name))
        return (uint32_t)(uintptr_t)fatia_strmap_get(&s->queue_index, name);
    q.name = fatia_strdup(name);
    if (!q.name || FATIA_VEC_PUSH(&s->queues, q) < 0) {
        fatia_free(q.name);
        return 0;
    }
    if (fatia_strmap_put(&s->queue_index, s->queues.v[s->queues.n - 1].name,
                         (void *)(uintptr_t)(s->queues.n - 1)) < 0)
        return 0;
    return (uint32_t)(s->queues.n - 1);
}

static const char *const strat_names[] = {"whole", "timeslice", "mps", "mig", "fraction"};

static int strat_index(const char *name)
{
    for (int i = 0; i < 5; i++)
        if (!strcmp(strat_names[i], name))
            return i;
    return 0;
}

/* integrals up to now */
static void advance(struct sim *s, int64_t t)
{
    double dt = (double)(t - s->last);

    if (dt <= 0)
        return;
    for (size_t q = 0; q < s->queues.n; q++)
        s->queues.v[q].gpu_usec += s->queues.v[q].gpu_now * dt;
    for (int k = 0; k < 5; k++) {
        s->strat[k].user_usec += (double)s->strat[k].users_now * dt;
        s->strat[k].busy_usec += (double)s->strat[k].busy_now * dt;
    }
    s->last = t;
}

/* GPU g's contribution to the strategy counters: remove (-1) before a change, add (+1) after */
static void gpu_account(struct sim *s, uint32_t g, int sign)
{
    uint32_t u = fatia_place_gpu_users(s->st, g);
    struct strat_rep *r = &s->strat[s->gpu_strat[g]];

    if (sign > 0) {
        r->users_now += u;
        r->busy_now += u > 0;
        if (u > r->max_users)
            r->max_users = u;
    } else {
        r->users_now -= u;
        r->busy_now -= u > 0;
    }
}

/* ---- the slowdown model (docs/sim.md) ---- */

#define TS_SWITCH_OVERHEAD 1.08 /* 77.5 vs 71.6 loops/s, h200-facts.md */
#define STRETCH_CAP        100.0

static double stretch_of(struct sim *s, uint32_t wi)
{
    const struct wl *w = &s->w[wi];
    double worst = 1;

    if (!s->slowdown || w->sub->duty < 0)
        return 1;
    for (size_t i = 0; i < w->n_gpus; i++) {
        uint32_t g = w->gpus[i];
        uint8_t k = s->gpu_strat[g];
        double sm_i = w->sub->sm > 0 ? w->sub->sm : 1, others = 0, x = 1;
        size_t n_users = s->on_gpu[g].n;
        for (size_t j = 0; j < n_users; j++) {
            const struct wl *o = &s->w[s->on_gpu[g].v[j]];
            double d = o->sub->duty > 0 ? o->sub->duty : 0;
            if (s->on_gpu[g].v[j] == wi)
                continue;
            others += k == PL_STRAT_MPS ? d * (o->sub->sm > 0 ? o->sub->sm : 1) : d;
        }
        switch (k) {
        case PL_STRAT_TIMESLICE:
        case PL_STRAT_FRACTION:
            x = others < 1 ? 1 / (1 - others) : STRETCH_CAP;
            if (n_users > 1)
                x *= TS_SWITCH_OVERHEAD;
            break;
        case PL_STRAT_MPS:
            x = others < 1 ? 1 / (1 - others) : STRETCH_CAP;
            if (sm_i > w->gpu_sm[i])
                x *= sm_i / w->gpu_sm[i];
            break;
        case PL_STRAT_MIG:
            if (sm_i > w->gpu_sm[i])
                x = sm_i / w->gpu_sm[i];
            break;
        default:
            x = 1;
        }
        if (x > worst)
            worst = x;
    }
    return worst > STRETCH_CAP ? STRETCH_CAP : worst;
}

static void stretch_close(struct sim *s, uint32_t wi)
{
    struct wl *w = &s->w[wi];

    if (w->state != WL_RUNNING)
        return;
    w->stretch_sum += w->stretch_now * (double)(s->now - w->stretch_since);
    w->stretch_since = s->now;
}

/* recompute the stretch of every workload on GPUs gs (after a change) */
static void stretch_update(struct sim *s, const uint32_t *gs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < s->on_gpu[gs[i]].n; j++) {
            uint32_t wi = s->on_gpu[gs[i]].v[j];
            stretch_close(s, wi);
            s->w[wi].stretch_now = stretch_of(s, wi);
        }
}

/* ---- workloads ---- */

static int wl_init(struct sim *s, uint32_t i)
{
    struct wl *w = &s->w[i];
    const struct fatia_sim_sub *sub = &s->tr->v[i];
    size_t kn;

    w->sub = sub;
    w->wait_first = -1;
    w->stretch_now = 1;
    kn = strlen(sub->ns) + strlen(sub->name) + 2;
    w->key = fatia_malloc(kn);
    w->pod_keys = fatia_calloc(sub->count, sizeof(*w->pod_keys));
    w->pods = fatia_calloc(sub->count, sizeof(*w->pods));
    if (!w->key || !w->pod_keys || !w->pods)
        return -ENOMEM;
    snprintf(w->key, kn, "%s/%s", sub->ns, sub->name);
    for (uint32_t k = 0; k < sub->count; k++) {
        size_t n = kn + 24;
        if (!(w->pod_keys[k] = fatia_malloc(n)))
            return -ENOMEM;
        snprintf(w->pod_keys[k], n, "%s-%" PRIu32, w->key, k);
        w->pods[k] = s->shapes[sub->shape];
    }
    w->gpu_milli = fatia_place_pod_gpu_milli(s->st, s->shapes[sub->shape]) * (uint64_t)sub->count;
    return 0;
}

static void wl_release(struct wl *w)
{
    if (w->pod_keys)
        for (uint32_t k = 0; k < w->sub->count; k++)
            fatia_free(w->pod_keys[k]);
    fatia_free(w->pod_keys);
    fatia_free(w->pods);
    fatia_free(w->key);
    fatia_free(w->gpus);
    fatia_free(w->gpu_sm);
}

/* takes the pods off their GPUs (finish or eviction) */
static void unplace(struct sim *s, uint32_t wi)
{
    struct wl *w = &s->w[wi];

    stretch_close(s, wi);
    w->ran += s->now - w->started;
    for (size_t i = 0; i < w->n_gpus; i++)
        gpu_account(s, w->gpus[i], -1);
    for (uint32_t k = 0; k < w->sub->count; k++)
        fatia_place_unbind(s->st, w->pod_keys[k]);
    for (size_t i = 0; i < w->n_gpus; i++) {
        struct u32vec *l = &s->on_gpu[w->gpus[i]];
        for (size_t j = 0; j < l->n; j++)
            if (l->v[j] == wi) {
                l->v[j] = l->v[--l->n];
                break;
            }
    }
    for (size_t i = 0; i < w->n_gpus; i++)
        gpu_account(s, w->gpus[i], +1);
    stretch_update(s, w->gpus, w->n_gpus);
    s->queues.v[w->queue].gpu_now -= (double)w->gpu_milli / 1000.0;
    s->running_pods -= w->sub->count;
    s->freed = true;
}

static unsigned place_flags(const struct sim *s)
{
    return (s->o->fgd & FATIA_SIM_FGD_SCORE ? FATIA_PLACE_FGD_SCORE : 0) |
           (s->o->fgd & FATIA_SIM_FGD_PACK ? FATIA_PLACE_FGD_PACK : 0) |
           (s->o->fgd & FATIA_SIM_FGD_PACK_CPU ? FATIA_PLACE_FGD_PACK_CPU : 0) |
           (s->o->fgd & FATIA_SIM_FGD_SCARCE ? FATIA_PLACE_FGD_SCARCE : 0) |
           (s->o->fgd & FATIA_SIM_FGD_FIT ? FATIA_PLACE_FGD_FIT : 0);
}

static int try_place(struct sim *s, uint32_t wi, bool *ret_placed)
{
    struct wl *w = &s->w[wi];
    struct fatia_place_opts po = {s->o->policy, place_flags(s), s->o->mig, s->mix,
                                  s->o->fgd & FATIA_SIM_FGD_TIES ? &s->ties : NULL};
    struct fatia_place_result *r = NULL;
    size_t nd = 0;
    int x;

    *ret_placed = false;
    if ((x = fatia_place_workload(s->st, w->pods, w->sub->count, &po, &r)) < 0)
        return x;
    if (!r->placed) {
        fatia_place_result_free(r);
        return 0;
    }
    /* victims of a MIG re-layout: evicted like preemptions (their pods restart) */
    for (size_t v = 0; v < r->n_victims; v++) {
        const char *dash = strrchr(r->victims[v], '-');
        char key[512];
        if (!dash)
            continue;
        snprintf(key, sizeof(key), "%.*s", (int)(dash - r->victims[v]), r->victims[v]);
        if (fatia_strmap_has(&s->by_key, key)) {
            uint32_t vi = (uint32_t)(uintptr_t)fatia_strmap_get(&s->by_key, key);
            if (s->w[vi].state == WL_RUNNING) {
                unplace(s, vi);
                s->w[vi].state = WL_ADMITTED;
                s->w[vi].gen++;
                s->restarts++;
                if (u32_push(&s->waiting, vi) < 0) {
                    fatia_place_result_free(r);
                    return -ENOMEM;
                }
            }
        }
    }
    for (size_t p = 0; p < r->n_pods; p++)
        nd += r->pods[p].n_devices;
    fatia_free(w->gpus);
    fatia_free(w->gpu_sm);
    w->gpus = nd ? fatia_calloc(nd, sizeof(*w->gpus)) : NULL;
    w->gpu_sm = nd ? fatia_calloc(nd, sizeof(*w->gpu_sm)) : NULL;
    w->n_gpus = 0;
    if (nd && (!w->gpus || !w->gpu_sm)) {
        fatia_place_result_free(r);
        return -ENOMEM;
    }
    for (size_t p = 0; p < r->n_pods; p++)
        for (size_t d = 0; d < r->pods[p].n_devices; d++) {
            bool seen = false;
            for (size_t j = 0; j < w->n_gpus; j++)
                seen |= w->gpus[j] == r->pods[p].devices[d].gpu;
            if (seen)
                continue;
            w->gpus[w->n_gpus] = r->pods[p].devices[d].gpu;
            w->n_gpus++;
        }
    /* the GPUs a MIG change touches are accounted before and after too */
    for (size_t i = 0; i < w->n_gpus; i++)
        gpu_account(s, w->gpus[i], -1);
    x = fatia_place_commit(s->st, w->pods, (const char *const *)w->pod_keys, r);
    /* SM shares once committed: a device's slice is in the GPU's new MIG layout */
    for (size_t p = 0, k = 0; x >= 0 && p < r->n_pods; p++)
        for (size_t d = 0; d < r->pods[p].n_devices; d++)
            for (k = 0; k < w->n_gpus; k++)
                if (w->gpus[k] == r->pods[p].devices[d].gpu) {
                    w->gpu_sm[k] = fatia_place_device_sm_share(s->st, &r->pods[p].devices[d]);
                    break;
                }
    fatia_place_result_free(r);
    for (size_t i = 0; i < w->n_gpus; i++)
        gpu_account(s, w->gpus[i], +1);
    if (x < 0)
        return x == -ENOMEM ? x : 0;
    for (size_t i = 0; i < w->n_gpus; i++)
        if (u32_push(&s->on_gpu[w->gpus[i]], wi) < 0)
            return -ENOMEM;
    w->state = WL_RUNNING;
    w->started = s->now;
    w->stretch_since = s->now;
    stretch_update(s, w->gpus, w->n_gpus);
    if (w->wait_first < 0) {
        struct queue_rep *q = &s->queues.v[w->queue];
        w->wait_first = s->now - w->arrived;
        if (FATIA_VEC_PUSH(&q->waits, (double)w->wait_first / USEC) < 0)
            return -ENOMEM;
        q->placed += w->sub->count;
        s->placed_pods += w->sub->count;
    }
    s->queues.v[w->queue].gpu_now += (double)w->gpu_milli / 1000.0;
    s->running_pods += w->sub->count;
    if (w->sub->duration >= 0 &&
        heap_push(s, (struct ev){s->now + w->sub->duration, wi, w->gen}) < 0)
        return -ENOMEM;
    *ret_placed = true;
    return 0;
}

static int never_fits(struct sim *s, uint32_t wi, bool *ret)
{
    struct wl *w = &s->w[wi];
    struct fatia_place_opts po = {s->o->policy, FATIA_PLACE_TEST, s->o->mig, NULL};
    struct fatia_place_result *r = NULL;
    int x = fatia_place_workload(s->st, w->pods, w->sub->count, &po, &r);

    if (x < 0)
        return x;
    *ret = !r->placed;
    fatia_place_result_free(r);
    return 0;
}

static void give_up(struct sim *s, uint32_t wi)
{
    struct wl *w = &s->w[wi];

    w->state = WL_UNPLACEABLE;
    s->queues.v[w->queue].unplaced += w->sub->count;
    s->unplaced_pods += w->sub->count;
    if (s->ctl)
        fatia_control_workload_finished(s->ctl, w->sub->ns, w->sub->name, s->now);
}

/* Places waiting workloads: every one when capacity was freed, else only the new ones. A failed
 * placement changes nothing, so within one pass a single pod of a shape that did not fit is not
 * tried again; whether a shape could ever fit is asked once (the empty fleet does not change). */
static int place_waiting(struct sim *s, size_t first_new)
{
    size_t keep = 0, from = s->freed ? 0 : first_new;
    int r = 0;

    s->freed = false;
    s->pass++;
    for (size_t i = 0; i < s->waiting.n; i++) {
        uint32_t wi = s->waiting.v[i];
        const struct fatia_sim_sub *sub = s->w[wi].sub;
        bool single = sub->count == 1, placed = false, never = false, tried = i >= from;
        if (s->w[wi].state != WL_ADMITTED) /* evicted or gone meanwhile */
            continue;
        if (tried && single && s->shape_failed[sub->shape] == s->pass)
            tried = false;
        if (tried && (r = try_place(s, wi, &placed)) < 0)
            return r;
        if (tried && !placed && single)
            s->shape_failed[sub->shape] = s->pass;
        if (tried && !placed) {
            if (single && s->shape_never[sub->shape])
                never = s->shape_never[sub->shape] == 2;
            else if ((r = never_fits(s, wi, &never)) < 0)
                return r;
            if (single)
                s->shape_never[sub->shape] = never ? 2 : 1;
        }
        if (never) {
            give_up(s, wi);
            continue;
        }
        if (!placed)
            s->waiting.v[keep++] = wi;
    }
    s->waiting.n = keep;
    return 0;
}

static int64_t abs_time(int64_t t)
{
    return INT64_C(1767225600) * 1000000 + t; /* 2026-01-01T00:00:00Z + t */
}

/* the Workload object of a submission, for the control engine */
static json_t *workload_json(struct sim *s, uint32_t wi)
{
    const struct fatia_sim_sub *sub = s->w[wi].sub;
    char ts[40];
    json_t *w;

    fatia_time_format_rfc3339(abs_time(sub->t), false, ts, sizeof(ts));
    w = json_pack("{s:s,s:s,s:{s:s,s:s,s:s},s:{s:s,s:[{s:s,s:I,s:{s:O}}]}}", "apiVersion",
                  "kueue.x-k8s.io/v1beta2", "kind", "Workload", "metadata", "name", sub->name,
                  "namespace", sub->ns, "creationTimestamp", ts, "spec", "queueName",
                  sub->queue ? sub->queue : "default", "podSets", "name", "main", "count",
                  (json_int_t)sub->count, "template", "spec", sub->spec);
    if (w && sub->priority != INT32_MIN)
        json_object_set_new(json_object_get(w, "spec"), "priority", json_integer(sub->priority));
    else if (w && sub->priority_class)
        json_object_set_new(json_object_get(w, "spec"), "priorityClassRef",
                            json_pack("{s:s,s:s,s:s}", "group", "kueue.x-k8s.io", "kind",
                                      "WorkloadPriorityClass", "name", sub->priority_class));
    return w;
}

static int arrive(struct sim *s, uint32_t wi)
{
    struct wl *w = &s->w[wi];

    w->arrived = s->now;
    w->state = WL_PENDING;
    s->queues.v[w->queue].users++;
    for (uint32_t k = 0; k < w->sub->count; k++)
        if (fatia_place_mix_add(s->mix, w->pods[k]) < 0)
            return -ENOMEM;
    if (!s->ctl) {
        w->state = WL_ADMITTED;
        s->queues.v[w->queue].admitted++;
        return u32_push(&s->waiting, wi);
    }
    {
        json_t *obj = workload_json(s, wi);
        struct fatia_object *o = NULL;
        struct fatia_decode_opts dopts = {.file = "trace"};
        int r;
        if (!obj)
            return -ENOMEM;
        r = fatia_object_decode(obj, &dopts, &fatia_demand_checks, s->diag, &o);
        json_decref(obj);
        if (r < 0)
            return r == -ENOMEM ? r : -FATIA_E_INVALID;
        r = fatia_control_apply(s->ctl, o->obj, abs_time(s->now), s->diag);
        fatia_object_free(o);
        return r;
    }
}

static void finish(struct sim *s, uint32_t wi)
{
    struct wl *w = &s->w[wi];

    unplace(s, wi);
    w->state = WL_DONE;
    if (s->ctl)
        fatia_control_workload_finished(s->ctl, w->sub->ns, w->sub->name, abs_time(s->now));
}

static int admission(struct sim *s)
{
    for (int c = 0; s->ctl && c < MAX_CYCLE; c++) {
        const struct fatia_control_result *res;
        char **evicted = NULL;
        size_t n_ev = 0;
        bool progress;
        int r;
        if (!fatia_control_has_work(s->ctl, abs_time(s->now)))
            break;
        if ((r = fatia_control_cycle(s->ctl, abs_time(s->now), &res)) < 0)
            return r;
        for (size_t i = 0; i < res->n_admitted; i++) {
            const char *k = res->admitted[i].key;
            uint32_t wi;
            if (!fatia_strmap_has(&s->by_key, k))
                continue;
            wi = (uint32_t)(uintptr_t)fatia_strmap_get(&s->by_key, k);
            s->w[wi].state = WL_ADMITTED;
            s->queues.v[s->w[wi].queue].admitted++;
            if (u32_push(&s->waiting, wi) < 0)
                return -ENOMEM;
        }
        if (res->n_evicted) {
            evicted = fatia_calloc(res->n_evicted, sizeof(*evicted));
            if (!evicted)
                return -ENOMEM;
            for (size_t i = 0; i < res->n_evicted; i++)
                if (!(evicted[n_ev++] = fatia_strdup(res->evicted[i].key)))
                    r = -ENOMEM;
        }
        progress = res->n_admitted || res->n_evicted || !res->quiet;
        for (size_t i = 0; i < n_ev; i++) {
            uint32_t wi;
            if (evicted[i] && fatia_strmap_has(&s->by_key, evicted[i])) {
                struct wl *w;
                wi = (uint32_t)(uintptr_t)fatia_strmap_get(&s->by_key, evicted[i]);
                w = &s->w[wi];
                if (w->state == WL_RUNNING)
                    unplace(s, wi);
                w->state = WL_PENDING;
                w->gen++;
                s->queues.v[w->queue].preempted++;
                s->preemptions++;
                fatia_control_workload_released(s->ctl, w->sub->ns, w->sub->name, abs_time(s->now));
            }
            fatia_free(evicted[i]);
        }
        fatia_free(evicted);
        if (!progress)
            break;
    }
    return 0;
}

static int sample(struct sim *s)
{
    struct fatia_place_stats st;
    double frag;

    fatia_place_state_stats(s->st, &st);
    frag = fatia_place_frag_total(s->mix) / 1000.0;
    s->pending_pods = 0;
    for (size_t i = 0; i < s->waiting.n; i++)
        s->pending_pods += s->w[s->waiting.v[i]].sub->count;
    if (json_array_append_new(s->series_t, json_real((double)s->now / USEC)) < 0 ||
        json_array_append_new(s->series_alloc, json_real((double)st.gpu_milli_allocated / 1000.0)) <
            0 ||
        json_array_append_new(s->series_frag, json_real(frag)) < 0 ||
        json_array_append_new(s->series_running, json_integer((json_int_t)s->running_pods)) < 0 ||
        json_array_append_new(s->series_pending, json_integer((json_int_t)s->pending_pods)) < 0)
        return -ENOMEM;
    return 0;
}

/* ---- setup ---- */

static int cmp_sub_time(const void *a, const void *b, void *arg)
{
    const struct fatia_sim_trace *t = arg;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (t->v[x].t != t->v[y].t)
        return t->v[x].t < t->v[y].t ? -1 : 1;
    return (x > y) - (x < y);
}

static int load_control(struct sim *s, const struct fatia_objset *set)
{
    static const char *const kinds[] = {"SchedulerConfig", "Namespace", "WorkloadPriorityClass",
                                        "ResourceFlavor",  "Cohort",    "ClusterQueue",
                                        "LocalQueue",      NULL};
    bool any = false;
    int r;

    for (size_t i = 0; set && i < set->n; i++)
        any |= !strcmp(set->v[i]->kind->kind, "ClusterQueue");
    if (!any)
        return 0;
    if ((r = fatia_control_new(&s->ctl)) < 0)
        return r;
    for (size_t k = 0; kinds[k]; k++)
        for (size_t i = 0; i < set->n; i++)
            if (!strcmp(set->v[i]->kind->kind, kinds[k]) &&
                (r = fatia_control_apply(s->ctl, set->v[i]->obj, abs_time(0), s->diag)) < 0)
                return r;
    return 0;
}

/* Nominal GPUs per ClusterQueue (GPU-equivalents: nvidia.com/gpu and fatia.dev/gpu-equivalent
 * count 1, fatia.dev/gpu-milli 1/1000), read from the engine once its quota tree is built. */
static int entitlements(struct sim *s)
{
    if (!s->ctl)
        return 0;
    for (size_t q = 0; q < s->queues.n; q++)
        s->queues.v[q].entitlement = 0;
    {
        json_t *tab = NULL;
        size_t i;
        json_t *row;
        if (fatia_control_usage_table(s->ctl, &tab) < 0)
            return -ENOMEM;
        json_array_foreach(tab, i, row)
        {
            const char *cq = fatia_json_str(row, "clusterQueue");
            const char *res = fatia_json_str(row, "resource");
            json_int_t nominal = json_integer_value(json_object_get(row, "nominal"));
            double g = 0;
            if (!cq || !res)
                continue;
            if (!strcmp(res, "nvidia.com/gpu") || !strcmp(res, "fatia.dev/gpu-equivalent"))
                g = (double)nominal / 1000.0;
            else if (!strcmp(res, "fatia.dev/gpu-milli"))
                g = (double)nominal / 1e6;
            if (g > 0) {
                uint32_t q = queue_of(s, cq); /* may move s->queues.v */
                s->queues.v[q].entitlement += g;
            }
        }
        json_decref(tab);
    }
    return 0;
}

static double percentile(double *v, size_t n, double p)
{
    size_t k;

    if (!n)
        return 0;
    k = (size_t)ceil(p / 100.0 * (double)n);
    if (k < 1)
        k = 1;
    return v[k - 1];
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static json_t *report_common(struct sim *s, const char *mode)
{
    struct fatia_place_stats st;
    json_t *j, *queues = json_object(), *conc = json_object();
    double total;

    fatia_place_state_stats(s->st, &st);
    total = (double)st.gpu_milli_total / 1000.0;
    if (entitlements(s) < 0)
        goto oom;
    for (size_t q = 0; q < s->queues.n; q++) {
        struct queue_rep *r = &s->queues.v[q];
        json_t *qj;
        if (r->waits.n)
            qsort(r->waits.v, r->waits.n, sizeof(double), cmp_double);
        qj = json_pack("{s:{s:f,s:f,s:f},s:I,s:I,s:I,s:I}", "waitSeconds", "p50",
                       percentile(r->waits.v, r->waits.n, 50), "p90",
                       percentile(r->waits.v, r->waits.n, 90), "p99",
                       percentile(r->waits.v, r->waits.n, 99), "admitted", (json_int_t)r->admitted,
                       "preempted", (json_int_t)r->preempted, "placedPods", (json_int_t)r->placed,
                       "unplacedPods", (json_int_t)r->unplaced);
        if (!qj)
            goto oom;
        if (r->entitlement > 0 && s->now > 0)
            json_object_set_new(qj, "shareOfEntitlement",
                                json_real(r->gpu_usec / (double)s->now / r->entitlement));
        else
            json_object_set_new(qj, "shareOfEntitlement", json_null());
        json_object_set_new(qj, "meanGpus",
                            json_real(s->now > 0 ? r->gpu_usec / (double)s->now : 0));
        if (s->slowdown)
            json_object_set_new(qj, "users",
                                json_pack("{s:I,s:I}", "total", (json_int_t)r->users, "served",
                                          (json_int_t)r->served));
        json_object_set_new(queues, r->name, qj);
    }
    for (int k = 0; k < 5; k++) {
        struct strat_rep *r = &s->strat[k];
        if (!r->gpus)
            continue;
        json_object_set_new(
            conc, strat_names[k],
            json_pack("{s:I,s:f,s:f,s:I}", "gpus", (json_int_t)r->gpus, "podsPerBusyGpu",
                      r->busy_usec > 0 ? r->user_usec / r->busy_usec : 0, "podsPerGpu",
                      s->now > 0 ? r->user_usec / (double)s->now / r->gpus : 0, "maxPods",
                      (json_int_t)r->max_users));
    }
    j = json_pack(
        "{s:s,s:s,s:I,s:I,s:I,s:f,s:f,s:f,s:I,s:f,s:o,s:o}", "mode", mode, "policy",
        fatia_place_policy_name(s->o->policy), "totalGpus", (json_int_t)st.gpus, "placedPods",
        (json_int_t)s->placed_pods, "unplacedPods", (json_int_t)s->unplaced_pods,
        "gpuAllocationRate", total > 0 ? (double)st.gpu_milli_allocated / 1000.0 / total : 0,
        "unallocatedGpus", total - (double)st.gpu_milli_allocated / 1000.0, "fragmentedGpus",
        fatia_place_frag_total(s->mix) / 1000.0, "preemptions", (json_int_t)s->preemptions,
        "endSeconds", (double)s->now / USEC, "queues", queues, "concurrency", conc);
    return j;
oom:
    json_decref(queues);
    json_decref(conc);
    return NULL;
}

static void sim_release(struct sim *s)
{
    for (size_t i = 0; s->w && i < s->n_w; i++)
        if (s->w[i].sub)
            wl_release(&s->w[i]);
    fatia_free(s->w);
    for (size_t i = 0; s->shapes && i < s->tr->n_shapes; i++)
        fatia_place_pod_free(s->shapes[i]);
    fatia_free(s->shapes);
    fatia_free(s->shape_failed);
    fatia_free(s->shape_never);
    fatia_strmap_release(&s->by_key);
    fatia_free(s->heap);
    fatia_free(s->waiting.v);
    for (size_t q = 0; q < s->queues.n; q++) {
        fatia_free(s->queues.v[q].name);
        FATIA_VEC_RELEASE(&s->queues.v[q].waits);
    }
    FATIA_VEC_RELEASE(&s->queues);
    fatia_strmap_release(&s->queue_index);
    if (s->on_gpu)
        for (size_t g = 0; g < fatia_place_gpu_count(s->st); g++)
            fatia_free(s->on_gpu[g].v);
    fatia_free(s->on_gpu);
    fatia_free(s->gpu_strat);
    json_decref(s->series_t);
    json_decref(s->series_alloc);
    json_decref(s->series_frag);
    json_decref(s->series_running);
    json_decref(s->series_pending);
    fatia_control_free(s->ctl);
    fatia_place_mix_free(s->mix);
    fatia_place_state_free(s->st);
}

static int compile_shapes(struct sim *s)
{
    size_t n = s->tr->n_shapes ? s->tr->n_shapes : 1;

    s->shapes = fatia_calloc(n, sizeof(*s->shapes));
    s->shape_failed = fatia_calloc(n, sizeof(*s->shape_failed));
    s->shape_never = fatia_calloc(n, sizeof(*s->shape_never));
    if (!s->shapes || !s->shape_failed || !s->shape_never)
        return -ENOMEM;
    for (size_t i = 0; i < s->tr->n; i++) {
        const struct fatia_sim_sub *sub = &s->tr->v[i];
        char why[512];
        int r;
        if (s->shapes[sub->shape])
            continue;
        r = fatia_place_pod_compile(s->st, sub->ns, NULL, sub->spec, NULL, 0,
                                    sub->priority == INT32_MIN ? 0 : sub->priority,
                                    &s->shapes[sub->shape], why, sizeof(why));
        if (r == -EINVAL) {
            fatia_diag_add(s->diag, FATIA_DIAG_ERROR, "trace", 0, 0, sub->name, NULL, "%s", why);
            return -FATIA_E_INVALID;
        }
        if (r < 0)
            return r;
    }
    return 0;
}

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The FGD experiment: draws with replacement, no departures, checkpoints of requested load. */
static int run_fill(struct sim *s, json_t **ret)
{
    struct fatia_place_stats st;
    uint64_t rng = s->o->seed, requested = 0, total, drawn = 0;
    struct fatia_place_opts po = {s->o->policy, place_flags(s), s->o->mig, s->mix,
                                  s->o->fgd & FATIA_SIM_FGD_TIES ? &s->ties : NULL};
    json_t *cps = json_array(), *j;
    size_t ci = 0;
    int r = 0;

    fatia_place_state_stats(s->st, &st);
    total = st.gpu_milli_total;
    if (!cps || !s->tr->n)
        return -ENOMEM;
    if (s->o->fgd & FATIA_SIM_FGD_UPFRONT) {
        /* the artifact's typical pods: from the whole pod list, before the first placement (the
         * draws do not depend on placement, so a first pass over the same sequence gives it) */
        uint64_t x = rng, req = 0;
        while (req * 100 < (uint64_t)s->o->fill_pct * total) {
            struct fatia_place_pod *pod = s->shapes[s->tr->v[splitmix(&x) % s->tr->n].shape];
            req += fatia_place_pod_gpu_milli(s->st, pod);
            if ((r = fatia_place_mix_add(s->mix, pod)) < 0) {
                json_decref(cps);
                return r;
            }
        }
        fatia_place_mix_freeze(s->mix);
    }
    while (requested * 100 < (uint64_t)s->o->fill_pct * total) {
        uint32_t i = (uint32_t)(splitmix(&rng) % s->tr->n);
        const struct fatia_sim_sub *sub = &s->tr->v[i];
        struct fatia_place_pod *pod = s->shapes[sub->shape];
        struct fatia_place_result *res = NULL;
        char key[32];
        const char *kp = key;
        requested += fatia_place_pod_gpu_milli(s->st, pod);
        drawn++;
        if ((r = fatia_place_mix_add(s->mix, pod)) < 0)
            break;
        if ((r = fatia_place_workload(s->st, &pod, 1, &po, &res)) < 0)
            break;
        snprintf(key, sizeof(key), "p/%" PRIu64, drawn);
        if (res->placed) {
            r = fatia_place_commit(s->st, &pod, &kp, res);
            s->placed_pods++;
        } else {
            s->unplaced_pods++;
        }
        fatia_place_result_free(res);
        if (r < 0)
            break;
        while (ci < s->o->n_checkpoints && requested * 100 >= s->o->checkpoints[ci] * total) {
            double alloc, unalloc;
            fatia_place_state_stats(s->st, &st);
            alloc = (double)st.gpu_milli_allocated / 1000.0;
            unalloc = (double)total / 1000.0 - alloc;
            j = json_pack("{s:I,s:f,s:f,s:f,s:f,s:f,s:I,s:I}", "loadPct",
                          (json_int_t)s->o->checkpoints[ci], "requestedGpus",
                          (double)requested / 1000.0, "allocatedGpus", alloc, "unallocatedGpus",
                          unalloc, "unallocatedShare", unalloc / ((double)total / 1000.0),
                          "fragmentedGpus", fatia_place_frag_total(s->mix) / 1000.0, "placedPods",
                          (json_int_t)s->placed_pods, "unplacedPods", (json_int_t)s->unplaced_pods);
            if (!j || json_array_append_new(cps, j) < 0) {
                r = -ENOMEM;
                break;
            }
            ci++;
        }
        if (r < 0)
            break;
    }
    if (r < 0) {
        json_decref(cps);
        return r;
    }
    s->now = (int64_t)drawn * 1000000;
    j = report_common(s, "fill");
    if (!j) {
        json_decref(cps);
        return -ENOMEM;
    }
    json_object_set_new(j, "checkpoints", cps);
    json_object_set_new(j, "drawnPods", json_integer((json_int_t)drawn));
    json_object_set_new(j, "seed", json_integer((json_int_t)s->o->seed));
    json_object_set_new(j, "typicalTypes",
                        json_integer((json_int_t)fatia_place_mix_typical(s->mix)));
    json_object_set_new(j, "requestTypes", json_integer((json_int_t)fatia_place_mix_types(s->mix)));
    *ret = j;
    return 0;
}

static int run_replay(struct sim *s, json_t **ret)
{
    uint32_t *order = fatia_calloc(s->tr->n ? s->tr->n : 1, sizeof(*order));
    size_t next = 0;
    int64_t end = 0, step;
    json_t *j;
    int r = 0;

    if (!order)
        return -ENOMEM;
    for (size_t i = 0; i < s->tr->n; i++)
        order[i] = (uint32_t)i;
    if (s->tr->n)
        qsort_r(order, s->tr->n, sizeof(*order), cmp_sub_time, (void *)s->tr);
    for (size_t i = 0; i < s->tr->n; i++)
        if (s->tr->v[i].t > end)
            end = s->tr->v[i].t;
    if (!s->o->sample_every) {
        int64_t horizon = s->o->until ? s->o->until : end;
        for (size_t i = 0; i < s->tr->n; i++)
            if (s->tr->v[i].duration > 0 && s->tr->v[i].t + s->tr->v[i].duration > horizon &&
                !s->o->until)
                horizon = s->tr->v[i].t + s->tr->v[i].duration;
        s->next_sample = 0;
        step = horizon / 200 > 0 ? horizon / 200 : 1000000;
    } else {
        step = s->o->sample_every;
    }
    for (;;) {
        int64_t t = INT64_MAX;
        size_t first_new = s->waiting.n;
        if (next < s->tr->n)
            t = s->tr->v[order[next]].t;
        if (s->n_heap && s->heap[0].t < t)
            t = s->heap[0].t;
        if (t == INT64_MAX)
            break;
        if (s->o->until && t > s->o->until) {
            t = s->o->until;
            while (s->next_sample <= t) {
                advance(s, s->next_sample);
                s->now = s->next_sample;
                if ((r = sample(s)) < 0)
                    goto out;
                s->next_sample += step;
            }
            break;
        }
        while (s->next_sample <= t) {
            advance(s, s->next_sample);
            s->now = s->next_sample;
            if ((r = sample(s)) < 0)
                goto out;
            s->next_sample += step;
        }
        advance(s, t);
        s->now = t;
        while (s->n_heap && s->heap[0].t == t) {
            struct ev e = heap_pop(s);
            if (s->w[e.wl].gen == e.gen && s->w[e.wl].state == WL_RUNNING)
                finish(s, e.wl);
        }
        while (next < s->tr->n && s->tr->v[order[next]].t == t)
            if ((r = arrive(s, order[next++])) < 0)
                goto out;
        if ((r = admission(s)) < 0 || (r = place_waiting(s, first_new)) < 0)
            goto out;
    }
    /* close the slowdown integrals and count served users */
    for (size_t i = 0; i < s->n_w; i++) {
        struct wl *w = &s->w[i];
        struct queue_rep *q = &s->queues.v[w->queue];
        double mean;
        if (w->state == WL_RUNNING) {
            stretch_close(s, (uint32_t)i);
            w->ran += s->now - w->started;
        }
        if (!s->slowdown || w->state == WL_FUTURE)
            continue;
        mean = w->ran > 0 ? w->stretch_sum / (double)w->ran : 1;
        if (w->wait_first >= 0 &&
            (s->o->max_wait_s <= 0 || (double)w->wait_first / USEC <= s->o->max_wait_s) &&
            (s->o->max_slowdown <= 0 || mean <= s->o->max_slowdown))
            q->served++;
    }
    j = report_common(s, "replay");
    if (!j) {
        r = -ENOMEM;
        goto out;
    }
    json_object_set_new(j, "series",
                        json_pack("{s:O,s:O,s:O,s:O,s:O}", "t", s->series_t, "allocatedGpus",
                                  s->series_alloc, "fragmentedGpus", s->series_frag, "runningPods",
                                  s->series_running, "pendingPods", s->series_pending));
    {
        double alloc = 0;
        size_t n = json_array_size(s->series_alloc);
        for (size_t i = 0; i < n; i++)
            alloc += json_real_value(json_array_get(s->series_alloc, i));
        json_object_set_new(j, "meanAllocatedGpus", json_real(n ? alloc / (double)n : 0));
    }
    json_object_set_new(j, "restartedByMig", json_integer((json_int_t)s->restarts));
    if (s->slowdown) {
        uint64_t users = 0, served = 0;
        double conc = 0;
        for (size_t q = 0; q < s->queues.n; q++) {
            users += s->queues.v[q].users;
            served += s->queues.v[q].served;
        }
        for (size_t i = 0; i < json_array_size(s->series_running); i++)
            conc += (double)json_integer_value(json_array_get(s->series_running, i));
        json_object_set_new(j, "users",
                            json_pack("{s:I,s:I,s:f,s:f}", "total", (json_int_t)users, "served",
                                      (json_int_t)served, "servedShare",
                                      users ? (double)served / (double)users : 0, "meanConcurrent",
                                      json_array_size(s->series_running)
                                          ? conc / (double)json_array_size(s->series_running)
                                          : 0));
    }
    *ret = j;
out:
    fatia_free(order);
    return r;
}

int fatia_sim_run(const struct fatia_plan *plan, const struct fatia_objset *set,
                  const struct fatia_sim_trace *trace, const struct fatia_sim_opts *opts,
                  json_t **ret, struct fatia_diag *diag)
{
    struct sim s = {0};
    size_t n_gpus;
    int r;

    s.o = opts;
    s.tr = trace;
    s.diag = diag;
    fatia_strmap_init(&s.by_key);
    fatia_strmap_init(&s.queue_index);
    if ((r = fatia_place_state_new(plan, &s.st)) < 0)
        return r;
    r = -ENOMEM;
    if (fatia_place_mix_new(s.st, opts->mix_coverage, &s.mix) < 0)
        goto out;
    fatia_place_mix_set_flags(s.mix,
                              (opts->fgd & FATIA_SIM_FGD_CPU ? FATIA_PLACE_MIX_CPU : 0) |
                                  (opts->fgd & FATIA_SIM_FGD_TYPES ? FATIA_PLACE_MIX_TYPES : 0));
    s.ties = opts->seed ^ 0x5851f42d4c957f2dull;
    n_gpus = fatia_place_gpu_count(s.st);
    s.gpu_strat = fatia_calloc(n_gpus ? n_gpus : 1, 1);
    s.on_gpu = fatia_calloc(n_gpus ? n_gpus : 1, sizeof(*s.on_gpu));
    s.series_t = json_array();
    s.series_alloc = json_array();
    s.series_frag = json_array();
    s.series_running = json_array();
    s.series_pending = json_array();
    if (!s.gpu_strat || !s.on_gpu || !s.series_t || !s.series_alloc || !s.series_frag ||
        !s.series_running || !s.series_pending)
        goto out;
    for (size_t g = 0; g < n_gpus; g++) {
        s.gpu_strat[g] = (uint8_t)strat_index(fatia_place_gpu_strategy(s.st, g));
        s.strat[s.gpu_strat[g]].gpus++;
    }
    if ((r = compile_shapes(&s)) < 0 || (r = load_control(&s, set)) < 0)
        goto out;
    if (fatia_diag_has_errors(diag)) {
        r = -FATIA_E_INVALID;
        goto out;
    }
    if (opts->fill_pct) {
        r = run_fill(&s, ret);
        goto out;
    }
    r = -ENOMEM;
    s.n_w = trace->n;
    s.w = fatia_calloc(trace->n ? trace->n : 1, sizeof(*s.w));
    if (!s.w)
        goto out;
    for (size_t i = 0; i < trace->n; i++) {
        if ((r = wl_init(&s, (uint32_t)i)) < 0)
            goto out;
        if (fatia_strmap_has(&s.by_key, s.w[i].key)) {
            fatia_diag_add(diag, FATIA_DIAG_ERROR, "trace", 0, 0, s.w[i].key, NULL,
                           "workload named twice in the trace");
            r = -FATIA_E_INVALID;
            goto out;
        }
        if (fatia_strmap_put(&s.by_key, s.w[i].key, (void *)(uintptr_t)i) < 0) {
            r = -ENOMEM;
            goto out;
        }
        s.slowdown |= trace->v[i].duty >= 0;
        /* report per ClusterQueue when admission runs (the LocalQueue's), else per trace queue
         * (or namespace) */
        {
            const char *qn = trace->v[i].queue ? trace->v[i].queue : trace->v[i].ns;
            if (s.ctl) {
                const struct fatia_object *lq =
                    fatia_objset_get(set, "LocalQueue", trace->v[i].ns,
                                     trace->v[i].queue ? trace->v[i].queue : "default");
                const char *cq =
                    lq ? fatia_json_str(json_object_get(lq->obj, "spec"), "clusterQueue") : NULL;
                if (cq)
                    qn = cq;
            }
            s.w[i].queue = queue_of(&s, qn);
        }
    }
    r = run_replay(&s, ret);
out:
    sim_release(&s);
    return r;
}
