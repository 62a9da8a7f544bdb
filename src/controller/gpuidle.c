/*
 * controller/gpuidle.c: the GPU-idleness policy for pods other than workbenches: best-effort
 * work whose GPUs sit idle gives them back and waits in its queue again
 * (docs/selfservice.md, "Idle GPUs of other pods").
 *
 * Model. On with fatiad --gpu-idle-after DURATION. Every period, each Running pod that holds
 * slices (fatia.dev/slices), is not a workbench's (the culler handles those), and whose Kueue
 * Workload has a priority below --gpu-idle-priority-below (best-effort; default 1000, the
 * examples' "interactive") is looked at:
 *
 *     utilization (percent)   on the simulated fleet: the pod's annotation
 *                             fatia.dev/synthetic-gpu-utilization (0 when absent); on an NVML
 *                             node (label fatia.dev/inventory=nvml): the pod's status condition
 *                             fatia.dev/GPUUtilization, NVML's per-process SM utilisation that
 *                             the node agent writes (tenants cannot); none, Unknown or older
 *                             than 30 s is unknown, and unknown counts as busy (never evicted on
 *                             a guess): gpuidle_util.c, pure;
 *     below IDLE_PERCENT      idle since the first look that saw it so (in memory: a restart of
 *                             fatiad starts the wait again, which only delays an eviction);
 *     idle for the duration   the Workload is deactivated (spec.active false: Kueue evicts it,
 *                             reason InactiveWorkload; its Job is suspended or its Pod deleted,
 *                             its quota and slices freed) and annotated fatia.dev/gpu-idle-evicted;
 *                             Events GPUIdle on the pod and the Workload, and
 *                             fatia_gpu_idle_evictions_total{namespace, cluster_queue};
 *     evicted and released    (no status.admission any more) the Workload is activated again
 *                             and the annotation removed: it waits in its queue like any other,
 *                             behind higher priorities.
 *
 * Rejected: deleting the pod (a Job's controller would make another at once, in the same
 * admission, holding the same quota); evicting work of any priority (interactive and urgent work
 * may be idle for good reasons: a human thinking).
 */
#include "base/compat.h"

#include "controller/gpuidle.h"

#include <event2/event.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "base/str.h"
#include "controller/ctl_internal.h"
#include "controller/gpuidle_util.h"
#include "controller/kueue.h"
#include "controller/metrics.h"
#include "controller/notebook.h"

#define COMPONENT     "gpu-idleness"
#define IDLE_PERCENT  5
#define ANN_EVICTED   "fatia.dev/gpu-idle-evicted"
#define DEFAULT_BELOW 1000
#define MAX_PERIOD    (10 * FATIA_USEC_PER_SEC)

struct idle_seen {
    fatia_usec_t since;
    char uid[64]; /* the map's key */
};

struct gpuidle {
    struct ctl *ctl;
    struct informer *pods, *wls, *nodes;
    struct event *timer;
    fatia_usec_t after, period;
    int64_t below;
    struct fatia_strmap idle; /* pod uid -> struct idle_seen */
};

/* The Workload that admits pod: its Job's (label job-uid = the Job's uid) or its own. */
static const json_t *workload_of(struct gpuidle *g, const json_t *pod)
{
    const json_t *ref = fatia_ctlr_owner_of_kind(pod, "batch/v1", "Job");
    const char *uid = ref ? fatia_json_str(ref, "uid") : fatia_ctlr_meta_str(pod, "uid");
    const char *ns = fatia_ctlr_meta_str(pod, "namespace");

    INFORMER_FOREACH(g->wls, it)
    {
        const char *wns = fatia_ctlr_meta_str(it->obj, "namespace");
        const char *ju = fatia_ctlr_obj_label(it->obj, KUEUE_LABEL_JOB_UID);
        if (wns && ns && ju && uid && !strcmp(wns, ns) && !strcmp(ju, uid))
            return it->obj;
    }
    return NULL;
}

/* Utilization in percent, or -1 when unknown (gpuidle_util.c). */
static int utilization(struct gpuidle *g, const json_t *pod)
{
    const char *node = fatia_json_str(json_object_get(pod, "spec"), "nodeName");
    const json_t *n = node ? fatia_ctlr_informer_get(g->nodes, NULL, node) : NULL;

    return fatia_ctlr_gpu_util_of(pod, n, fatia_ctlr_now(g->ctl));
}

static void set_active(struct gpuidle *g, const json_t *wl, bool active, fatia_usec_t now)
{
    json_t *copy = json_deep_copy(wl);
    json_t *meta = copy ? json_object_get(copy, "metadata") : NULL;
    json_t *anns = meta ? fatia_json_object_ensure(meta, "annotations") : NULL;

    if (!anns) {
        json_decref(copy);
        return;
    }
    json_object_set_new(json_object_get(copy, "spec"), "active", json_boolean(active));
    if (active)
        json_object_del(anns, ANN_EVICTED);
    else
        json_object_set_new(anns, ANN_EVICTED, fatia_ctlr_json_time(now));
    fatia_ctlr_update(g->ctl, copy, &(struct op_opts){.quiet_conflict = true});
    json_decref(copy);
}

static void look_at_pod(struct gpuidle *g, const json_t *pod, fatia_usec_t now)
{
    const char *slices = fatia_ctlr_obj_annotation(pod, FATIA_ANN_SLICES);
    const char *phase = fatia_json_str(json_object_get(pod, "status"), "phase");
    const char *uid = fatia_ctlr_meta_str(pod, "uid");
    struct idle_seen *s;
    const json_t *wl;
    json_int_t prio;
    int util;

    if (!uid || !slices || !*slices || !phase || strcmp(phase, "Running") ||
        fatia_ctlr_obj_deleting(pod) ||
        fatia_ctlr_owner_of_kind(pod, "kubeflow.org/v1", "Notebook"))
        return;
    wl = workload_of(g, pod);
    if (!wl || !fatia_json_bool(json_object_get(wl, "spec"), "active", true))
        return;
    prio = json_integer_value(fatia_json_path(wl, "spec.priority"));
    util = utilization(g, pod);
    s = fatia_strmap_get(&g->idle, uid);
    if (prio >= g->below || util < 0 || util >= IDLE_PERCENT) {
        if (s) {
            fatia_strmap_del(&g->idle, s->uid);
            fatia_free(s);
        }
        return;
    }
    if (!s) {
        s = fatia_calloc(1, sizeof(*s));
        if (!s)
            return;
        s->since = now;
        snprintf(s->uid, sizeof(s->uid), "%s", uid);
        if (fatia_strmap_put(&g->idle, s->uid, s) < 0)
            fatia_free(s);
        return;
    }
    if (now - s->since < g->after)
        return;
    {
        const char *cq = fatia_json_str(fatia_json_path(wl, "status.admission"), "clusterQueue");
        char labels[300];
        long long secs = (long long)((now - s->since) / FATIA_USEC_PER_SEC);
        fatia_ctlr_event(g->ctl, pod, COMPONENT, "Normal", "GPUIdle",
                         "GPUs idle (utilization %d%% < %d%%) for %lld s on %s; best-effort "
                         "(priority %lld < %lld): evicting workload %s to requeue it",
                         util, IDLE_PERCENT, secs, slices, (long long)prio, (long long)g->below,
                         fatia_ctlr_meta_str(wl, "name"));
        fatia_ctlr_event(g->ctl, wl, COMPONENT, "Normal", "GPUIdle",
                         "Pod %s idle on its GPUs for %lld s: deactivated, to be requeued once "
                         "its quota is released",
                         fatia_ctlr_meta_str(pod, "name"), secs);
        fatia_ctlr_metric_labels(labels, sizeof(labels), "namespace",
                                 fatia_ctlr_meta_str(wl, "namespace"), "cluster_queue",
                                 cq ? cq : "", NULL);
        fatia_ctlr_metric_inc(fatia_ctlr_metrics(g->ctl), "fatia_gpu_idle_evictions_total", labels,
                              1);
        fatia_info("gpu-idleness: %s/%s idle for %lld s: evicting %s",
                   fatia_ctlr_meta_str(pod, "namespace"), fatia_ctlr_meta_str(pod, "name"), secs,
                   fatia_ctlr_meta_str(wl, "name"));
        set_active(g, wl, false, now);
        fatia_strmap_del(&g->idle, s->uid);
        fatia_free(s);
    }
}

static void tick(evutil_socket_t fd, short what, void *arg)
{
    struct gpuidle *g = arg;
    fatia_usec_t now = fatia_ctlr_now(g->ctl);
    struct timeval tv = {(time_t)(g->period / FATIA_USEC_PER_SEC),
                         (suseconds_t)(g->period % FATIA_USEC_PER_SEC)};

    (void)fd;
    (void)what;
    if (fatia_ctlr_ready(g->ctl)) {
        INFORMER_FOREACH(g->pods, it) look_at_pod(g, it->obj, now);
        /* requeue what this policy evicted, once Kueue released it */
        INFORMER_FOREACH(g->wls, it)
        {
            if (fatia_ctlr_obj_annotation(it->obj, ANN_EVICTED) &&
                !fatia_json_bool(json_object_get(it->obj, "spec"), "active", true) &&
                !fatia_json_path(it->obj, "status.admission") && !fatia_ctlr_obj_deleting(it->obj))
                set_active(g, it->obj, true, now);
        }
    }
    evtimer_add(g->timer, &tv);
}

int fatia_ctlr_gpuidle_new(struct ctl *c, struct gpuidle **ret)
{
    const struct fatia_controllers_opts *o = fatia_ctlr_opts(c);
    struct gpuidle *g;
    struct timeval tv;

    *ret = NULL;
    if (!o->gpu_idle_after)
        return 0;
    g = fatia_calloc(1, sizeof(*g));
    if (!g)
        return -ENOMEM;
    g->ctl = c;
    g->after = o->gpu_idle_after;
    g->below = o->gpu_idle_priority_below ? o->gpu_idle_priority_below : DEFAULT_BELOW;
    g->period = g->after / 4 > MAX_PERIOD ? MAX_PERIOD : g->after / 4;
    if (g->period < FATIA_USEC_PER_SEC / 4)
        g->period = FATIA_USEC_PER_SEC / 4;
    g->pods = fatia_ctlr_informer(c, fatia_kind_find("v1", "Pod", NULL));
    g->wls = fatia_ctlr_informer(c, fatia_kind_find("kueue.x-k8s.io/v1beta2", "Workload", NULL));
    g->nodes = fatia_ctlr_informer(c, fatia_kind_find("v1", "Node", NULL));
    g->timer = evtimer_new(fatia_ctlr_base(c), tick, g);
    if (!g->pods || !g->wls || !g->nodes || !g->timer ||
        fatia_ctlr_metric_define(fatia_ctlr_metrics(c), "fatia_gpu_idle_evictions_total", "counter",
                                 "Best-effort workloads evicted (to be requeued) because their "
                                 "GPUs were idle",
                                 NULL, 0) < 0) {
        fatia_ctlr_gpuidle_free(g);
        return -ENOMEM;
    }
    tv.tv_sec = (time_t)(g->period / FATIA_USEC_PER_SEC);
    tv.tv_usec = (suseconds_t)(g->period % FATIA_USEC_PER_SEC);
    evtimer_add(g->timer, &tv);
    *ret = g;
    return 0;
}

void fatia_ctlr_gpuidle_free(struct gpuidle *g)
{
    if (!g)
        return;
    if (g->timer)
        event_free(g->timer);
    for (size_t i = 0; i < g->idle.cap; i++)
        if (g->idle.slots[i].key)
            fatia_free(g->idle.slots[i].val);
    fatia_strmap_release(&g->idle);
    fatia_free(g);
}
