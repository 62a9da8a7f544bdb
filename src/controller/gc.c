/*
 * controller/gc.c: the garbage collector of ownerReferences, for the kinds fatiad's controllers
 * create: the Pods of a Job or of a ReplicaSet, the Pod of a Notebook, the Jobs of a CronJob, the
 * ReplicaSets of a Deployment, the Pods of a DaemonSet, the Pods (and, by its retention policy,
 * the claims) of a StatefulSet, the Endpoints and EndpointSlices of a Service, the Workload of a
 * Job or of a Pod, the ResourceClaims made from a Pod's templates, the Deployment and
 * InferencePool of an InferenceService.
 *
 * Model (Kubernetes' garbage collector, background propagation): a dependent whose every owner is
 * gone is deleted. "Gone" is decided against the informers' caches, which are complete once
 * synced: an owner reference whose kind has no informer here counts as alive (never delete what
 * we cannot see). The collector looks at a dependent when one of its owners is deleted (through
 * the owner index of the dependents' informers) and once at start-up (owners deleted while the
 * controllers were not running). It never looks at a dependent merely because it was created:
 * a fresh dependent may name an owner created in the same instant, not yet in our cache.
 *
 * Deletes carry the dependent's uid as a precondition, so a dependent re-created under the same
 * name is never collected by mistake. Foreground deletion and orphaning are not implemented:
 * every delete cascades in the background (kubectl's default).
 *
 * Events expire as kube-apiserver's do (--event-ttl, default 1 h): a sweep every minute deletes
 * the Events whose lastTimestamp (or eventTime, or creationTimestamp) is older, so a long-running
 * fatiad's store does not grow with them.
 */
#include "base/compat.h"

#include <event2/event.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "controller/ctl_internal.h"
#include "controller/kueue.h"

#define GC_MAX_KINDS 16

struct gc_ctl {
    struct ctl *ctl;
    struct wq *q;
    /* owners we can see */
    const struct fatia_kind *owner_kinds[GC_MAX_KINDS];
    struct informer *owners[GC_MAX_KINDS];
    size_t n_owners;
    /* dependents we collect */
    struct informer *deps[GC_MAX_KINDS];
    size_t n_deps;
    /* Events */
    struct informer *events;
    struct event *sweep_ev;
    struct wq *events_q;
};

#define EVENT_TTL   (3600 * FATIA_USEC_PER_SEC)
#define EVENT_SWEEP (60 * FATIA_USEC_PER_SEC)

static void sweep_event(void *arg, const char *key)
{
    struct gc_ctl *g = arg;
    const json_t *ev = fatia_ctlr_informer_get_key(g->events, key);
    const char *ts;
    fatia_usec_t t;
    char nsbuf[300];
    const char *name;

    if (!ev)
        return;
    ts = fatia_json_str(ev, "lastTimestamp");
    if (!ts)
        ts = fatia_json_str(ev, "eventTime");
    if (!ts)
        ts = fatia_ctlr_meta_str(ev, "creationTimestamp");
    if (!ts || fatia_time_parse_rfc3339(ts, &t) < 0 || fatia_ctlr_now(g->ctl) - t < EVENT_TTL)
        return;
    name = fatia_ctlr_split_key(key, nsbuf, sizeof(nsbuf));
    fatia_ctlr_delete(
        g->ctl, g->events->kind, nsbuf, name, fatia_ctlr_meta_str(ev, "uid"),
        &(struct op_opts){
            .wq = g->events_q, .key = key, .quiet_missing = true, .quiet_conflict = true});
}

static void sweep_cb(evutil_socket_t fd, short what, void *arg)
{
    struct gc_ctl *g = arg;

    (void)fd;
    (void)what;
    if (!fatia_ctlr_ready(g->ctl))
        return;
    INFORMER_FOREACH(g->events, it)
    fatia_ctlr_wq_add(g->events_q, it->key);
}

/* Queue keys are "<index of the dependent informer>|<ns/name>". */
static void enqueue(struct gc_ctl *g, size_t dep, const char *key)
{
    char k[700];

    snprintf(k, sizeof(k), "%zu|%s", dep, key);
    fatia_ctlr_wq_add(g->q, k);
}

static struct informer *owner_informer(struct gc_ctl *g, const json_t *ref)
{
    const char *av = fatia_json_str(ref, "apiVersion"), *kind = fatia_json_str(ref, "kind");
    const struct fatia_kind *k = av && kind ? fatia_kind_find(av, kind, NULL) : NULL;

    for (size_t i = 0; k && i < g->n_owners; i++)
        if (g->owner_kinds[i] == k)
            return g->owners[i];
    return NULL;
}

static bool owner_alive(struct gc_ctl *g, const json_t *dep, const json_t *ref)
{
    struct informer *inf = owner_informer(g, ref);
    const json_t *o;
    const char *uid = fatia_json_str(ref, "uid"), *ouid;

    if (!inf)
        return true;
    o = fatia_ctlr_informer_get(inf, fatia_ctlr_meta_str(dep, "namespace"),
                                fatia_json_str(ref, "name"));
    ouid = o ? fatia_ctlr_meta_str(o, "uid") : NULL;
    return o && uid && ouid && !strcmp(uid, ouid);
}

static void reconcile(void *arg, const char *qkey)
{
    struct gc_ctl *g = arg;
    const char *bar = strchr(qkey, '|');
    size_t dep;
    const json_t *obj, *refs, *ref;
    char nsbuf[300];
    const char *name;
    size_t i;

    if (!bar)
        return;
    dep = (size_t)strtoul(qkey, NULL, 10);
    if (dep >= g->n_deps)
        return;
    obj = fatia_ctlr_informer_get_key(g->deps[dep], bar + 1);
    if (!obj || fatia_ctlr_obj_deleting(obj))
        return;
    refs = json_object_get(json_object_get(obj, "metadata"), "ownerReferences");
    if (!json_array_size(refs))
        return;
    json_array_foreach(refs, i, ref)
    {
        if (owner_alive(g, obj, ref))
            return;
    }
    name = fatia_ctlr_split_key(bar + 1, nsbuf, sizeof(nsbuf));
    fatia_debug("gc: deleting %s %s: its owners are gone", g->deps[dep]->kind->singular, bar + 1);
    fatia_ctlr_delete(
        g->ctl, g->deps[dep]->kind, nsbuf[0] ? nsbuf : NULL, name, fatia_ctlr_meta_str(obj, "uid"),
        &(struct op_opts){.wq = g->q, .key = qkey, .quiet_missing = true, .quiet_conflict = true});
}

/* An owner was deleted: look at everything that names it. */
static void on_owner(void *arg, const json_t *old, const json_t *obj)
{
    struct gc_ctl *g = arg;
    const char *uid;

    if (obj || !old)
        return;
    uid = fatia_ctlr_meta_str(old, "uid");
    for (size_t d = 0; d < g->n_deps; d++) {
        const struct fatia_strmap *set = fatia_ctlr_informer_owned(g->deps[d], uid);
        for (size_t i = 0; set && i < set->cap; i++)
            if (set->slots[i].key)
                enqueue(g, d, set->slots[i].key);
    }
}

static void on_synced(void *arg)
{
    struct gc_ctl *g = arg;
    struct timeval tv = {(time_t)(EVENT_SWEEP / FATIA_USEC_PER_SEC), 0};

    event_add(g->sweep_ev, &tv);
    sweep_cb(-1, 0, g);

    for (size_t d = 0; d < g->n_deps; d++) {
        INFORMER_FOREACH(g->deps[d], it)
        {
            if (json_array_size(
                    json_object_get(json_object_get(it->obj, "metadata"), "ownerReferences")))
                enqueue(g, d, it->key);
        }
    }
}

static int add_owner(struct gc_ctl *g, const char *av, const char *kind)
{
    const struct fatia_kind *k = fatia_kind_find(av, kind, NULL);
    struct informer *inf = k ? fatia_ctlr_informer(g->ctl, k) : NULL;

    if (!inf || g->n_owners == GC_MAX_KINDS)
        return -ENOMEM;
    g->owner_kinds[g->n_owners] = k;
    g->owners[g->n_owners++] = inf;
    return fatia_ctlr_informer_on(inf, on_owner, g);
}

static int add_dep(struct gc_ctl *g, const char *av, const char *kind)
{
    const struct fatia_kind *k = fatia_kind_find(av, kind, NULL);
    struct informer *inf = k ? fatia_ctlr_informer(g->ctl, k) : NULL;

    if (!inf || g->n_deps == GC_MAX_KINDS)
        return -ENOMEM;
    fatia_ctlr_informer_index_owners(inf);
    g->deps[g->n_deps++] = inf;
    return 0;
}

int fatia_ctlr_gc_ctl_new(struct ctl *c, struct gc_ctl **ret)
{
    struct gc_ctl *g = fatia_calloc(1, sizeof(*g));
    int r;

    if (!g)
        return -ENOMEM;
    g->ctl = c;
    g->q = fatia_ctlr_wq_new(c, "gc", reconcile, g);
    g->events_q = fatia_ctlr_wq_new(c, "event-ttl", sweep_event, g);
    g->events = fatia_ctlr_informer(c, fatia_kind_find("v1", "Event", NULL));
    g->sweep_ev = event_new(fatia_ctlr_base(c), -1, EV_PERSIST, sweep_cb, g);
    if (!g->q || !g->events_q || !g->events || !g->sweep_ev) {
        fatia_ctlr_gc_ctl_free(g);
        return -ENOMEM;
    }
    if (!g->q) {
        fatia_free(g);
        return -ENOMEM;
    }
    if ((r = add_owner(g, "batch/v1", "Job")) < 0 || (r = add_owner(g, "v1", "Pod")) < 0 ||
        (r = add_owner(g, "kubeflow.org/v1", "Notebook")) < 0 ||
        (r = add_owner(g, "apps/v1", "ReplicaSet")) < 0 ||
        (r = add_owner(g, "apps/v1", "Deployment")) < 0 ||
        (r = add_dep(g, "apps/v1", "ReplicaSet")) < 0 || (r = add_owner(g, "v1", "Service")) < 0 ||
        (r = add_dep(g, "v1", "Endpoints")) < 0 ||
        (r = add_dep(g, "discovery.k8s.io/v1", "EndpointSlice")) < 0 ||
        (r = add_owner(g, "batch/v1", "CronJob")) < 0 || (r = add_dep(g, "batch/v1", "Job")) < 0 ||
        (r = add_owner(g, "apps/v1", "StatefulSet")) < 0 ||
        (r = add_owner(g, "apps/v1", "DaemonSet")) < 0 ||
        (r = add_dep(g, "v1", "PersistentVolumeClaim")) < 0 || (r = add_dep(g, "v1", "Pod")) < 0 ||
        (r = add_dep(g, "kueue.x-k8s.io/v1beta2", "Workload")) < 0 ||
        (r = add_dep(g, "resource.k8s.io/v1", "ResourceClaim")) < 0 ||
        (r = add_owner(g, "serving.kserve.io/v1beta1", "InferenceService")) < 0 ||
        (r = add_owner(g, "serving.kserve.io/v1alpha1", "LLMInferenceService")) < 0 ||
        (r = add_dep(g, "apps/v1", "Deployment")) < 0 ||
        (r = add_dep(g, "inference.networking.k8s.io/v1", "InferencePool")) < 0 ||
        (r = fatia_ctlr_on_synced(c, on_synced, g)) < 0) {
        fatia_ctlr_gc_ctl_free(g);
        return r;
    }
    *ret = g;
    return 0;
}

void fatia_ctlr_gc_ctl_free(struct gc_ctl *g)
{
    if (!g)
        return;
    fatia_ctlr_wq_free(g->q);
    fatia_ctlr_wq_free(g->events_q);
    if (g->sweep_ev)
        event_free(g->sweep_ev);
    fatia_free(g);
}
