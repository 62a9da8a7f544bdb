/*
 * controller/manager.c: the controller manager: builds every controller on one client, starts the
 * informers they asked for, and lets the work queues run once every cache is synced.
 *
 * Start-up order matters for safety, not only for speed: no controller acts on a partial view.
 * The placement controller in particular must know every pod that is already bound before it
 * binds a new one (a fatiad restarted after kill -9 must never give a held slice away), so the
 * sync hooks (fatia_ctlr_on_synced) run after the last informer delivered its initial state and before
 * any queue is processed.
 *
 *     new: controllers register informers, handlers, queues, hooks
 *     start: every informer watches from rv 0 ─► ... ─► all synced ─► hooks ─► ready (queues run)
 */
#include "base/compat.h"

#include <event2/event.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/log.h"
#include "controller/ctl_internal.h"
#include "controller/gpuidle.h"
#include "controller/metrics.h"
#include "controller/notebook.h"
#include "controller/usage_ctl.h"

struct sync_hook {
    void (*fn)(void *arg);
    void *arg;
};

struct ctl {
    struct event_base *base;
    struct fatia_client *client;
    struct fatia_controllers_opts opts;
    FATIA_VEC(struct informer *) informers;
    FATIA_VEC(struct wq *) queues;
    FATIA_VEC(struct sync_hook) hooks;
    size_t n_synced;
    bool started, ready, stopped;
    size_t ops_in_flight;
    unsigned seq;
    struct fatia_ctlr_metrics *metrics;
    struct device_ctl *device;
    struct workload_ctl *workload;
    struct job_ctl *job;
    struct admission_ctl *admission;
    struct placement_ctl *placement;
    struct gc_ctl *gc;
    struct notebook_ctl *notebook;
    struct culler *culler;
    struct usage_ctl *usage;
    struct gpuidle *gpuidle;
    struct nodelifecycle_ctl *nodelifecycle;
    struct replicaset_ctl *replicaset;
    struct deployment_ctl *deployment;
    struct sa_ctl *sa;
    struct localpath_ctl *localpath;
    struct svcproxy_ctl *svcproxy;
    struct quotastatus_ctl *quotastatus;
    struct pdb_ctl *pdb;
    struct endpoints_ctl *endpoints;
    struct cronjob_ctl *cronjob;
    struct statefulset_ctl *statefulset;
    struct daemonset_ctl *daemonset;
    struct isvc_ctl *isvc;
    struct llmisvc_ctl *llmisvc;
};

struct fatia_controllers {
    struct ctl *ctl;
};

fatia_usec_t fatia_ctlr_now(struct ctl *c)
{
    (void)c;
    return fatia_now_real_usec();
}

struct event_base *fatia_ctlr_base(struct ctl *c)
{
    return c->base;
}

struct fatia_client *fatia_ctlr_client(struct ctl *c)
{
    return c->client;
}

const struct fatia_controllers_opts *fatia_ctlr_opts(struct ctl *c)
{
    return &c->opts;
}

struct fatia_ctlr_metrics *fatia_ctlr_metrics(struct ctl *c)
{
    return c->metrics;
}

struct device_ctl *fatia_ctlr_device(struct ctl *c)
{
    return c->device;
}

struct admission_ctl *fatia_ctlr_admission(struct ctl *c)
{
    return c->admission;
}

struct placement_ctl *fatia_ctlr_placement(struct ctl *c)
{
    return c->placement;
}

unsigned fatia_ctlr_next_seq(struct ctl *c)
{
    return ++c->seq;
}

void fatia_ctlr_op_started(struct ctl *c)
{
    c->ops_in_flight++;
}

void fatia_ctlr_op_finished(struct ctl *c)
{
    if (c->ops_in_flight)
        c->ops_in_flight--;
}

struct informer *fatia_ctlr_informer_peek(struct ctl *c, const struct fatia_kind *k)
{
    for (size_t i = 0; i < c->informers.n; i++)
        if (c->informers.v[i]->kind == k)
            return c->informers.v[i];
    return NULL;
}

struct informer *fatia_ctlr_informer(struct ctl *c, const struct fatia_kind *k)
{
    struct informer *inf = fatia_ctlr_informer_peek(c, k);

    if (inf)
        return inf;
    inf = fatia_calloc(1, sizeof(*inf));
    if (!inf)
        return NULL;
    inf->ctl = c;
    inf->kind = k;
    if (FATIA_VEC_PUSH(&c->informers, inf) < 0) {
        fatia_free(inf);
        return NULL;
    }
    return inf;
}

void fatia_ctlr_register_wq(struct ctl *c, struct wq *q)
{
    if (FATIA_VEC_PUSH(&c->queues, q) < 0)
        fatia_error("out of memory registering queue");
}

bool fatia_ctlr_ready(struct ctl *c)
{
    return c->ready;
}

int fatia_ctlr_on_synced(struct ctl *c, void (*fn)(void *arg), void *arg)
{
    return FATIA_VEC_PUSH(&c->hooks, ((struct sync_hook){fn, arg}));
}

void fatia_ctlr_informer_synced(struct ctl *c, struct informer *inf)
{
    (void)inf;
    if (++c->n_synced < c->informers.n || c->ready || c->stopped)
        return;
    for (size_t i = 0; i < c->hooks.n; i++)
        c->hooks.v[i].fn(c->hooks.v[i].arg);
    c->ready = true;
    fatia_info("controllers: caches synced (%zu kinds), reconciling", c->informers.n);
    for (size_t i = 0; i < c->queues.n; i++)
        fatia_ctlr_wq_kick(c->queues.v[i]);
}

static void restart_cb(evutil_socket_t fd, short what, void *arg)
{
    struct informer *inf = arg;
    int r;

    (void)fd;
    (void)what;
    if (inf->ctl->stopped)
        return;
    r = fatia_ctlr_informer_start(inf);
    if (r < 0) {
        struct timeval tv = {1, 0};
        fatia_warn("watch of %s: %s; retrying in 1 s", inf->kind->plural, fatia_strerror(r));
        event_add(inf->restart_ev, &tv);
    }
}

void fatia_ctlr_informer_restart(struct ctl *c, struct informer *inf)
{
    struct timeval tv = {0, 100000};

    /* a fresh watch from rv 0 re-delivers every object as ADDED; objects deleted meanwhile
     * linger until their key is touched again, which the controllers tolerate (they re-read
     * the cache and act on what is there). The timer is the informer's, freed with it: the
     * controllers may be freed while the loop goes on (a leader stepping down). */
    if (!inf->restart_ev && !(inf->restart_ev = evtimer_new(c->base, restart_cb, inf))) {
        fatia_error("watch of %s: out of memory; not restarted", inf->kind->plural);
        return;
    }
    event_add(inf->restart_ev, &tv);
}

int fatia_controllers_new(struct event_base *base, struct fatia_client *client,
                          const struct fatia_controllers_opts *opts, struct fatia_controllers **ret)
{
    struct fatia_controllers *fc = fatia_calloc(1, sizeof(*fc));
    struct ctl *c = fatia_calloc(1, sizeof(*c));
    int r;

    if (!fc || !c) {
        fatia_free(fc);
        fatia_free(c);
        return -ENOMEM;
    }
    fc->ctl = c;
    c->base = base;
    c->client = client;
    if (opts)
        c->opts = *opts;
    if (!c->opts.job_backoff)
        c->opts.job_backoff = 10 * FATIA_USEC_PER_SEC;
    if (!c->opts.status_interval)
        c->opts.status_interval = FATIA_USEC_PER_SEC;
    c->metrics = fatia_ctlr_metrics_new();
    if (!c->metrics) {
        r = -ENOMEM;
        goto fail;
    }
    if ((r = fatia_ctlr_device_ctl_new(c, &c->device)) < 0 ||
        (r = fatia_ctlr_gc_ctl_new(c, &c->gc)) < 0 ||
        (r = fatia_ctlr_nodelifecycle_ctl_new(c, &c->nodelifecycle)) < 0 ||
        (r = fatia_ctlr_replicaset_ctl_new(c, &c->replicaset)) < 0 ||
        (r = fatia_ctlr_deployment_ctl_new(c, &c->deployment)) < 0 ||
        (r = fatia_ctlr_sa_ctl_new(c, &c->sa)) < 0 ||
        (r = fatia_ctlr_localpath_ctl_new(c, &c->localpath)) < 0 ||
        (r = fatia_ctlr_svcproxy_ctl_new(c, &c->svcproxy)) < 0 ||
        (r = fatia_ctlr_quotastatus_ctl_new(c, &c->quotastatus)) < 0 ||
        (r = fatia_ctlr_pdb_ctl_new(c, &c->pdb)) < 0 ||
        (r = fatia_ctlr_endpoints_ctl_new(c, &c->endpoints)) < 0 ||
        (r = fatia_ctlr_cronjob_ctl_new(c, &c->cronjob)) < 0 ||
        (r = fatia_ctlr_statefulset_ctl_new(c, &c->statefulset)) < 0 ||
        (r = fatia_ctlr_daemonset_ctl_new(c, &c->daemonset)) < 0 ||
        (r = fatia_ctlr_isvc_ctl_new(c, &c->isvc)) < 0 ||
        (r = fatia_ctlr_llmisvc_ctl_new(c, &c->llmisvc)) < 0 ||
        (r = fatia_ctlr_workload_ctl_new(c, &c->workload)) < 0 ||
        (r = fatia_ctlr_job_ctl_new(c, &c->job)) < 0 ||
        (r = fatia_ctlr_admission_ctl_new(c, &c->admission)) < 0 ||
        (r = fatia_ctlr_placement_ctl_new(c, c->device, &c->placement)) < 0 ||
        (r = fatia_ctlr_notebook_ctl_new(c, &c->notebook)) < 0 ||
        (r = fatia_ctlr_culler_new(c, &c->culler)) < 0 ||
        (r = fatia_ctlr_usage_ctl_new(c, &c->usage)) < 0 ||
        (r = fatia_ctlr_gpuidle_new(c, &c->gpuidle)) < 0)
        goto fail;
    for (size_t i = 0; i < c->informers.n; i++)
        if (!c->informers.v[i]) {
            r = -ENOMEM;
            goto fail;
        }
    *ret = fc;
    return 0;
fail:
    fatia_controllers_free(fc);
    return r;
}

int fatia_controllers_start(struct fatia_controllers *fc)
{
    struct ctl *c = fc->ctl;

    if (c->started)
        return 0;
    c->started = true;
    for (size_t i = 0; i < c->informers.n; i++) {
        int r = fatia_ctlr_informer_start(c->informers.v[i]);
        if (r < 0)
            return fatia_log_errno(FATIA_LOG_ERROR, r, "controllers: cannot watch %s",
                                   c->informers.v[i]->kind->plural);
    }
    return 0;
}

void fatia_controllers_stop(struct fatia_controllers *fc)
{
    struct ctl *c = fc ? fc->ctl : NULL;

    if (!c)
        return;
    c->ready = false;
    c->stopped = true;
    for (size_t i = 0; i < c->informers.n; i++) {
        struct informer *inf = c->informers.v[i];
        if (inf && inf->watch) {
            fatia_client_watch_stop(c->client, inf->watch);
            inf->watch = NULL;
        }
    }
}

void fatia_controllers_free(struct fatia_controllers *fc)
{
    struct ctl *c;

    if (!fc)
        return;
    c = fc->ctl;
    if (c) {
        /* watches first: no handler may run into a freed controller */
        for (size_t i = 0; i < c->informers.n; i++) {
            struct informer *inf = c->informers.v[i];
            if (inf && inf->watch) {
                fatia_client_watch_stop(c->client, inf->watch);
                inf->watch = NULL;
            }
        }
        fatia_ctlr_gpuidle_free(c->gpuidle);
        fatia_ctlr_usage_ctl_free(c->usage);
        fatia_ctlr_culler_free(c->culler);
        fatia_ctlr_notebook_ctl_free(c->notebook);
        fatia_ctlr_placement_ctl_free(c->placement);
        fatia_ctlr_admission_ctl_free(c->admission);
        fatia_ctlr_job_ctl_free(c->job);
        fatia_ctlr_workload_ctl_free(c->workload);
        fatia_ctlr_daemonset_ctl_free(c->daemonset);
        fatia_ctlr_statefulset_ctl_free(c->statefulset);
        fatia_ctlr_cronjob_ctl_free(c->cronjob);
        fatia_ctlr_isvc_ctl_free(c->isvc);
        fatia_ctlr_llmisvc_ctl_free(c->llmisvc);
        fatia_ctlr_endpoints_ctl_free(c->endpoints);
        fatia_ctlr_sa_ctl_free(c->sa);
        fatia_ctlr_localpath_ctl_free(c->localpath);
        fatia_ctlr_svcproxy_ctl_free(c->svcproxy);
        fatia_ctlr_quotastatus_ctl_free(c->quotastatus);
        fatia_ctlr_pdb_ctl_free(c->pdb);
        fatia_ctlr_deployment_ctl_free(c->deployment);
        fatia_ctlr_replicaset_ctl_free(c->replicaset);
        fatia_ctlr_gc_ctl_free(c->gc);
        fatia_ctlr_nodelifecycle_ctl_free(c->nodelifecycle);
        fatia_ctlr_device_ctl_free(c->device);
        for (size_t i = 0; i < c->informers.n; i++)
            fatia_ctlr_informer_free(c->informers.v[i]);
        FATIA_VEC_RELEASE(&c->informers);
        FATIA_VEC_RELEASE(&c->queues);
        FATIA_VEC_RELEASE(&c->hooks);
        fatia_ctlr_metrics_free(c->metrics);
        fatia_free(c);
    }
    fatia_free(fc);
}

bool fatia_controllers_idle(const struct fatia_controllers *fc)
{
    const struct ctl *c = fc->ctl;

    if (c->ops_in_flight)
        return false;
    for (size_t i = 0; i < c->queues.n; i++)
        if (!fatia_ctlr_wq_idle(c->queues.v[i]))
            return false;
    return true;
}

int fatia_controllers_metrics(struct fatia_controllers *fc, struct fatia_buf *out)
{
    struct ctl *c = fc->ctl;

    fatia_ctlr_metrics_render(c->metrics, out);
    if (c->admission)
        fatia_ctlr_admission_ctl_metrics(c->admission, out);
    if (c->device)
        fatia_ctlr_device_ctl_metrics(c->device, out);
    if (c->placement)
        fatia_ctlr_placement_ctl_metrics(c->placement, out);
    fatia_ctlr_usage_ctl_metrics(c->usage, out);
    for (size_t i = 0; i < c->queues.n; i++) {
        (void)0;
    }
    return 0;
}
