/*
 * controller/isvc_scale.c: the InferenceService autoscaler's loop. The decision is autoscale.c's
 * (Knative KPA, pure); this file measures, keeps the per-InferenceService state and says why.
 *
 * Model. Every TICK, for each InferenceService that is autoscaled (maxReplicas > minReplicas, or
 * minReplicas 0), the loop takes one sample of the pool's total metric:
 *
 *   no ready replica          0 (nothing serves, nothing is in flight)
 *   R ready replicas          the sum over the ready pods' distinct addresses (status.podIP) of
 *                             GET /metrics on <address>:<port>: one scrape where one pod has the
 *                             address (a container on its namespace's bridge: exact), the mean of
 *                             min(2k, MAX_SCRAPES) scrapes times k where k pods share it
 *
 * In the process mode the replicas share 127.0.0.1 and one port (SO_REUSEPORT,
 * inferenceservice.c): a scrape reaches whichever replica the kernel's hash of the connection
 * picks, so that address's value is an estimate (the per-replica mean times k), exact when the
 * replicas carry equal load, which is what the gateway's balancing aims at. Addresses that do not
 * answer are extrapolated from those that did (the total times R over the pods answered for);
 * beyond MAX_GROUPS addresses the rest are extrapolated the same way. The metric, from engine-sim's (vLLM's) /metrics:
 *
 *   concurrency (scaleMetric, the default)   vllm:num_requests_running + vllm:num_requests_waiting,
 *                                            the in-flight requests KServe's queue-proxy counts;
 *   queue depth (annotation serving.fatia.io/scale-metric: num_requests_waiting)
 *                                            vllm:num_requests_waiting, llm-d's saturation signal;
 *   KV-cache (serving.fatia.io/scale-metric: kv_cache_usage)
 *                                            vllm:kv_cache_usage_perc x 100, the target a percent.
 *
 *   requests per second (scaleMetric: rps)   fatia_engine_sim_request_rate: engine-sim's arrivals
 *                                            per (engine) second, exponentially weighted over
 *                                            10 s; vLLM has no such gauge (Knative counts rps in
 *                                            its queue-proxy), so with a real vLLM image rps
 *                                            would need the gateway's counts.
 *
 * scaleTarget is the target per replica (1 if unset); scaleMetric cpu or memory are not
 * measured here: such an InferenceService keeps minReplicas and gets one Warning Event. Windows and
 * rates come from Knative's annotations, as KServe passes them through:
 * autoscaling.knative.dev/window (the stable window, 60s), panic-window-percentage (10),
 * panic-threshold-percentage (200), target-utilization-percentage (70).
 *
 * Scale from zero: the gateway (gateway/kubepool.c) that holds a request for a pool without a
 * ready replica writes the annotation serving.fatia.io/demand (an RFC 3339 time) on the
 * InferenceService; a demand younger than the stable window keeps at least one replica, as
 * Knative's activator does by reporting the requests it holds.
 *
 * A changed count kicks the InferenceService's work queue, whose reconcile writes the Deployment
 * (fatia_ctlr_isvc_scale_replicas), and gives an Event Scaled (or ScaledToZero) naming the
 * metric, the stable and panic values, the target and the counts. Every replica goes through
 * Kueue like any pod: the gated ones are counted here, and the status says how many wait.
 *
 * The state is in memory: after a restart the count starts from the Deployment's replicas and the
 * windows refill (no data: no scaling). Scrapes are asynchronous bufferevents with a timeout; a
 * tick with scrapes still in flight is skipped for that InferenceService.
 *
 * Rejected: the gateway's own in-flight counts as the signal (the gateway is another process and
 * requests may bypass it); a Workload-like "scale request" object: the Deployment's replicas are
 * what HPA writes too.
 */
#include "base/compat.h"

#include "controller/isvc_scale.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <math.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "base/str.h"
#include "controller/autoscale.h"
#include "controller/ctl_internal.h"
#include "controller/kueue.h"

#define COMPONENT    "inferenceservice-autoscaler"
#define TICK         (500 * FATIA_USEC_PER_MSEC)
#define MAX_SCRAPES  8
#define MAX_GROUPS   16
#define SCRAPE_TMO   2
#define MAX_ANSWER   (256u << 10)
#define METRIC_ANN   "serving.fatia.io/scale-metric"
#define DEMAND_ANN   "serving.fatia.io/demand"
#define KN_WINDOW    "autoscaling.knative.dev/window"
#define KN_PANIC_PCT "autoscaling.knative.dev/panic-window-percentage"
#define KN_PANIC_THR "autoscaling.knative.dev/panic-threshold-percentage"
#define KN_UTIL      "autoscaling.knative.dev/target-utilization-percentage"
#define ISVC_LABEL   "serving.kserve.io/inferenceservice"

enum metric {
    M_CONCURRENCY,
    M_WAITING,
    M_KV,
    M_RPS,
    M_UNSUPPORTED
};

struct scaled {
    struct scaled *next;
    struct isvc_scaler *s;
    char key[600];
    struct fatia_as_state st;
    int desired; /* -1: not decided yet */
    int gated;   /* replicas whose pods wait for Kueue */
    bool warned, seen;
    unsigned pending; /* scrapes in flight */

    struct {
        unsigned answered;
        double sum; /* of the answered scrapes' values */
        int pods;   /* ready pods at the address */
    } g[MAX_GROUPS];

    int ngroups;
    int ready; /* when the scrapes started */
    enum metric metric;
};

struct isvc_scaler {
    struct ctl *ctl;
    struct wq *q;
    struct informer *isvcs, *deploys, *pods;
    struct event *timer;
    struct scaled *list;
    struct scrape *scrapes; /* in flight, freed with the scaler */
};

struct scrape {
    struct scaled *sc;
    int group;
    struct bufferevent *bev;
    struct scrape *prev, *next;
};

static const char *metric_name(enum metric m)
{
    return m == M_CONCURRENCY ? "concurrency"
           : m == M_WAITING   ? "num_requests_waiting"
           : m == M_RPS       ? "rps"
                              : "kv_cache_usage";
}

bool fatia_ctlr_isvc_autoscaled(const json_t *isvc)
{
    const json_t *p = fatia_json_path(isvc, "spec.predictor");
    int64_t min = 1, max = 0;

    fatia_json_int(p, "minReplicas", &min);
    fatia_json_int(p, "maxReplicas", &max);
    return min == 0 || max > min;
}

static void bounds(const json_t *isvc, int *ret_min, int *ret_max)
{
    const json_t *p = fatia_json_path(isvc, "spec.predictor");
    int64_t min = 1, max = 0;

    fatia_json_int(p, "minReplicas", &min);
    fatia_json_int(p, "maxReplicas", &max);
    if (max < min)
        max = min == 0 ? 1 : min; /* KServe: maxReplicas 0 means no bound; one is ours */
    *ret_min = (int)min;
    *ret_max = (int)max;
}

static enum metric metric_of(const json_t *isvc)
{
    const char *a = fatia_ctlr_obj_annotation(isvc, METRIC_ANN);
    const char *m = fatia_json_str(fatia_json_path(isvc, "spec.predictor"), "scaleMetric");

    if (a && !strcmp(a, "num_requests_waiting"))
        return M_WAITING;
    if (a && !strcmp(a, "kv_cache_usage"))
        return M_KV;
    if (a)
        return M_UNSUPPORTED;
    if (m && !strcmp(m, "rps"))
        return M_RPS;
    return !m || !strcmp(m, "concurrency") ? M_CONCURRENCY : M_UNSUPPORTED;
}

static double pct_ann(const json_t *isvc, const char *name, double dflt)
{
    const char *a = fatia_ctlr_obj_annotation(isvc, name);
    double v;

    return a && fatia_parse_double(a, &v) == 0 && v > 0 ? v / 100 : dflt;
}

static void spec_of(const json_t *isvc, struct fatia_as_spec *ret)
{
    const char *w = fatia_ctlr_obj_annotation(isvc, KN_WINDOW);
    int64_t target = 1, win = 0;
    double ppct;

    *ret = (struct fatia_as_spec){0};
    bounds(isvc, &ret->min, &ret->max);
    fatia_json_int(fatia_json_path(isvc, "spec.predictor"), "scaleTarget", &target);
    ret->target = (double)(target > 0 ? target : 1);
    if (w && fatia_parse_duration_usec(w, &win) == 0 && win >= FATIA_USEC_PER_SEC)
        ret->stable_window = win;
    fatia_ctlr_as_defaults(ret);
    ppct = pct_ann(isvc, KN_PANIC_PCT, 0.1);
    ret->panic_window = (fatia_usec_t)((double)ret->stable_window * (ppct > 1 ? 1 : ppct));
    if (ret->panic_window < TICK)
        ret->panic_window = TICK;
    ret->panic_threshold = pct_ann(isvc, KN_PANIC_THR, 2.0);
    ret->utilization = pct_ann(isvc, KN_UTIL, 0.7);
    if (ret->utilization > 1)
        ret->utilization = 1;
}

static struct scaled *find(struct isvc_scaler *s, const char *key, bool create)
{
    struct scaled *sc;

    for (sc = s->list; sc; sc = sc->next)
        if (!strcmp(sc->key, key))
            return sc;
    if (!create || !(sc = fatia_calloc(1, sizeof(*sc))))
        return NULL;
    sc->s = s;
    sc->desired = -1;
    snprintf(sc->key, sizeof(sc->key), "%s", key);
    sc->next = s->list;
    s->list = sc;
    return sc;
}

int64_t fatia_ctlr_isvc_scale_replicas(struct isvc_scaler *s, const char *key, const json_t *isvc,
                                       const json_t *have)
{
    struct scaled *sc = find(s, key, false);
    int min, max;
    int64_t r = -1;

    bounds(isvc, &min, &max);
    if (sc && sc->desired >= 0)
        r = sc->desired;
    else if (!have || !fatia_json_int(json_object_get(have, "spec"), "replicas", &r))
        r = -1;
    if (r < 0)
        r = min > 0 ? min : 1;
    return r < min ? min : r > max ? max : r;
}

int fatia_ctlr_isvc_scale_gated(struct isvc_scaler *s, const char *key)
{
    struct scaled *sc = find(s, key, false);
    return sc ? sc->gated : 0;
}

/* The value of a Prometheus sample line "name{...} v" or "name v" in text; false if absent. */
static bool prom_value(const char *text, const char *name, double *ret)
{
    size_t n = strlen(name);

    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *v;
        if (strncmp(l, name, n) || (l[n] != '{' && l[n] != ' '))
            continue;
        v = l + n;
        if (*v == '{' && !(v = strchr(v, '}')))
            return false;
        *ret = strtod(v + 1, NULL);
        return isfinite(*ret);
    }
    return false;
}

static double answer_value(enum metric m, const char *body, bool *ret_ok)
{
    double run = 0, wait = 0, kv = 0;
    bool ok;

    switch (m) {
    case M_CONCURRENCY:
        ok = prom_value(body, "vllm:num_requests_running", &run) &&
             prom_value(body, "vllm:num_requests_waiting", &wait);
        *ret_ok = ok;
        return run + wait;
    case M_WAITING:
        *ret_ok = prom_value(body, "vllm:num_requests_waiting", &wait);
        return wait;
    case M_KV:
        *ret_ok = prom_value(body, "vllm:kv_cache_usage_perc", &kv);
        return kv * 100;
    case M_RPS:
        *ret_ok = prom_value(body, "fatia_engine_sim_request_rate", &kv);
        return kv;
    default:
        *ret_ok = false;
        return 0;
    }
}

static void decide(struct scaled *sc, double total);

static void scrape_done(struct scrape *p, bool ok, double v)
{
    struct scaled *sc = p->sc;
    int group = p->group;

    if (p->prev)
        p->prev->next = p->next;
    else
        sc->s->scrapes = p->next;
    if (p->next)
        p->next->prev = p->prev;
    if (p->bev)
        bufferevent_free(p->bev);
    fatia_free(p);
    if (ok) {
        sc->g[group].answered++;
        sc->g[group].sum += v;
    }
    if (--sc->pending)
        return;
    {
        double total = 0;
        int covered = 0;
        for (int i = 0; i < sc->ngroups; i++) {
            if (!sc->g[i].answered)
                continue;
            total += sc->g[i].sum / sc->g[i].answered * sc->g[i].pods;
            covered += sc->g[i].pods;
        }
        if (covered)
            decide(sc, total * sc->ready / covered);
        else
            fatia_debug("autoscaler: %s: no replica answered /metrics", sc->key);
    }
}

static void scrape_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct scrape *p = arg;

    if (what & BEV_EVENT_CONNECTED) {
        evbuffer_add_printf(bufferevent_get_output(bev),
                            "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n");
        return;
    }
    if (what & BEV_EVENT_EOF) {
        struct evbuffer *in = bufferevent_get_input(bev);
        size_t n = evbuffer_get_length(in);
        char *buf = fatia_malloc(n + 1), *body;
        int status = 0;
        bool ok = false;
        double v = 0;
        if (buf) {
            evbuffer_remove(in, buf, n);
            buf[n] = '\0';
            body = strstr(buf, "\r\n\r\n");
            if (body && sscanf(buf, "HTTP/1.%*d %d", &status) == 1 && status == 200)
                v = answer_value(p->sc->metric, body + 4, &ok);
            fatia_free(buf);
        }
        scrape_done(p, ok, v);
        return;
    }
    scrape_done(p, false, 0);
}

static void scrape_read_cb(struct bufferevent *bev, void *arg)
{
    if (evbuffer_get_length(bufferevent_get_input(bev)) > MAX_ANSWER)
        scrape_done(arg, false, 0);
}

static void scrape_start(struct scaled *sc, int group, struct in_addr addr, int port)
{
    struct scrape *p = fatia_calloc(1, sizeof(*p));
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    struct timeval tv = {SCRAPE_TMO, 0};

    if (!p)
        return;
    p->sc = sc;
    p->group = group;
    sc->pending++;
    p->next = sc->s->scrapes;
    if (p->next)
        p->next->prev = p;
    sc->s->scrapes = p;
    sa.sin_addr = addr;
    p->bev = bufferevent_socket_new(fatia_ctlr_base(sc->s->ctl), -1, BEV_OPT_CLOSE_ON_FREE);
    if (!p->bev) {
        scrape_done(p, false, 0);
        return;
    }
    bufferevent_setcb(p->bev, scrape_read_cb, NULL, scrape_event_cb, p);
    bufferevent_set_timeouts(p->bev, &tv, &tv);
    bufferevent_enable(p->bev, EV_READ | EV_WRITE);
    if (bufferevent_socket_connect(p->bev, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        scrape_done(p, false, 0);
}

/* A demand from the gateway younger than the window. */
static bool demanded(const json_t *isvc, fatia_usec_t now, fatia_usec_t window)
{
    const char *a = fatia_ctlr_obj_annotation(isvc, DEMAND_ANN);
    fatia_usec_t t;

    return a && fatia_time_parse_rfc3339(a, &t) == 0 && now - t < window && t - now < window;
}

static void decide(struct scaled *sc, double total)
{
    struct isvc_scaler *s = sc->s;
    const json_t *isvc = fatia_ctlr_informer_get_key(s->isvcs, sc->key);
    fatia_usec_t now = fatia_ctlr_now(s->ctl);
    struct fatia_as_spec spec;
    struct fatia_as_decision d;
    int before;
    bool demand;

    if (!isvc)
        return;
    spec_of(isvc, &spec);
    fatia_ctlr_as_record(&sc->st, now, total);
    fatia_ctlr_as_decide(&spec, &sc->st, now, sc->ready, &d);
    demand = demanded(isvc, now, spec.stable_window);
    if (demand && d.desired < 1)
        d.desired = 1;
    before = sc->desired >= 0 ? sc->desired : sc->ready;
    if (!d.have_data || d.desired == before) {
        if (sc->desired < 0 && d.have_data)
            sc->desired = d.desired;
        return;
    }
    sc->desired = d.desired;
    if (demand && before == 0)
        fatia_ctlr_event(s->ctl, isvc, COMPONENT, "Normal", "ScaledFromZero",
                         "Scaled from 0 to %d replicas: the gateway holds a request (%s at %s)",
                         d.desired, DEMAND_ANN, fatia_ctlr_obj_annotation(isvc, DEMAND_ANN));
    else
        fatia_ctlr_event(
            s->ctl, isvc, COMPONENT, "Normal", d.desired == 0 ? "ScaledToZero" : "Scaled",
            "Scaled from %d to %d replicas: %s %.2f over the %llds stable window, "
            "%.2f over the %.1fs panic window%s, target %.0f per replica at %.0f%% "
            "utilization (bounds %d..%d)",
            before, d.desired, metric_name(sc->metric), d.stable,
            (long long)(spec.stable_window / FATIA_USEC_PER_SEC), d.panicking,
            (double)spec.panic_window / FATIA_USEC_PER_SEC, d.panic ? " (panic mode)" : "",
            spec.target, spec.utilization * 100, spec.min, spec.max);
    fatia_info("autoscaler: %s: %d -> %d replicas (%s stable %.2f panic %.2f)", sc->key, before,
               d.desired, metric_name(sc->metric), d.stable, d.panicking);
    fatia_ctlr_wq_add(s->q, sc->key);
}

static int count_gated(struct isvc_scaler *s, const json_t *isvc)
{
    const char *ns = fatia_ctlr_meta_str(isvc, "namespace"),
               *name = fatia_ctlr_meta_str(isvc, "name");
    int n = 0;

    INFORMER_FOREACH(s->pods, it)
    {
        const char *pns = fatia_ctlr_meta_str(it->obj, "namespace");
        const char *l = fatia_ctlr_obj_label(it->obj, ISVC_LABEL);
        size_t i;
        json_t *g;
        if (!pns || !l || strcmp(pns, ns) || strcmp(l, name) || fatia_ctlr_obj_deleting(it->obj))
            continue;
        json_array_foreach(fatia_json_path(it->obj, "spec.schedulingGates"), i, g)
        {
            const char *gn = fatia_json_str(g, "name");
            if (gn && !strcmp(gn, KUEUE_GATE_ADMISSION)) {
                n++;
                break;
            }
        }
    }
    return n;
}

static bool pod_is_ready(const json_t *pod)
{
    json_t *c;
    size_t i;

    json_array_foreach(fatia_json_path(pod, "status.conditions"), i, c)
    {
        const char *t = fatia_json_str(c, "type"), *st = fatia_json_str(c, "status");
        if (t && st && !strcmp(t, "Ready"))
            return !strcmp(st, "True");
    }
    return false;
}

/* The distinct IPv4 addresses of the InferenceService's ready pods into addrs (at most
 * MAX_GROUPS), each one's pod count into sc->g[].pods; the number of addresses. */
static int ready_addrs(struct isvc_scaler *s, const json_t *isvc, struct in_addr *addrs,
                       struct scaled *sc)
{
    const char *ns = fatia_ctlr_meta_str(isvc, "namespace"),
               *name = fatia_ctlr_meta_str(isvc, "name");
    int n = 0;

    INFORMER_FOREACH(s->pods, it)
    {
        const char *pns = fatia_ctlr_meta_str(it->obj, "namespace");
        const char *l = fatia_ctlr_obj_label(it->obj, ISVC_LABEL);
        const char *ip = fatia_json_str(json_object_get(it->obj, "status"), "podIP");
        struct in_addr a;
        int i;
        if (!pns || !l || !ip || strcmp(pns, ns) || strcmp(l, name) ||
            fatia_ctlr_obj_deleting(it->obj) || !pod_is_ready(it->obj) ||
            inet_pton(AF_INET, ip, &a) != 1)
            continue;
        for (i = 0; i < n && addrs[i].s_addr != a.s_addr; i++)
            ;
        if (i == n) {
            if (n == MAX_GROUPS)
                continue; /* extrapolated (file comment) */
            addrs[n] = a;
            sc->g[n++].pods = 0;
        }
        sc->g[i].pods++;
    }
    return n;
}

static void tick_one(struct isvc_scaler *s, const char *key, const json_t *isvc)
{
    struct scaled *sc = find(s, key, true);
    char dname[300];
    const json_t *dep;
    int64_t ready = 0;
    int gated, n;

    if (!sc)
        return;
    sc->seen = true;
    gated = count_gated(s, isvc);
    if (gated != sc->gated) {
        sc->gated = gated;
        fatia_ctlr_wq_add(s->q, key);
    }
    sc->metric = metric_of(isvc);
    if (sc->metric == M_UNSUPPORTED) {
        const char *m = fatia_json_str(fatia_json_path(isvc, "spec.predictor"), "scaleMetric");
        if (!sc->warned)
            fatia_ctlr_event(s->ctl, isvc, COMPONENT, "Warning", "MetricNotMeasured",
                             "scaleMetric %s is not measured here (concurrency, rps, or the "
                             "annotation "
                             "%s: num_requests_waiting or kv_cache_usage): replicas stay at "
                             "minReplicas",
                             m ? m : fatia_ctlr_obj_annotation(isvc, METRIC_ANN), METRIC_ANN);
        sc->warned = true;
        return;
    }
    if (sc->pending)
        return;
    snprintf(dname, sizeof(dname), "%.200s-predictor", fatia_ctlr_meta_str(isvc, "name"));
    dep = fatia_ctlr_informer_get(s->deploys, fatia_ctlr_meta_str(isvc, "namespace"), dname);
    fatia_json_int(json_object_get(dep, "status"), "readyReplicas", &ready);
    sc->ready = (int)ready;
    if (sc->desired < 0 && dep) {
        int64_t r = -1;
        fatia_json_int(json_object_get(dep, "spec"), "replicas", &r);
        if (r >= 0)
            sc->desired = (int)r;
    }
    if (ready <= 0) {
        decide(sc, 0);
        return;
    }
    {
        struct in_addr addrs[MAX_GROUPS];
        int port = fatia_ctlr_isvc_port(isvc);
        /* the predictor container's port: a ServingRuntime's own (isvc_runtime.c) or the above */
        const json_t *c0 = json_array_get(fatia_json_path(dep, "spec.template.spec.containers"), 0);
        int64_t cp;
        if (fatia_json_int(json_array_get(json_object_get(c0, "ports"), 0), "containerPort", &cp) &&
            cp >= 1 && cp <= 65535)
            port = (int)cp;
        sc->ngroups = ready_addrs(s, isvc, addrs, sc);
        if (!sc->ngroups) {
            /* Ready in the Deployment, no pod with an address seen yet: the old estimate */
            addrs[0].s_addr = htonl(INADDR_LOOPBACK);
            sc->g[0].pods = (int)ready;
            sc->ngroups = 1;
        }
        for (int i = 0; i < sc->ngroups; i++) {
            n = sc->g[i].pods > 1 ? sc->g[i].pods * 2 : 1;
            n = n > MAX_SCRAPES ? MAX_SCRAPES : n;
            sc->g[i].answered = 0;
            sc->g[i].sum = 0;
            for (int k = 0; k < n; k++)
                scrape_start(sc, i, addrs[i], port);
        }
    }
}

static void tick(evutil_socket_t fd, short what, void *arg)
{
    struct isvc_scaler *s = arg;
    struct timeval tv = {0, (suseconds_t)TICK};
    struct scaled **pp;

    (void)fd;
    (void)what;
    if (fatia_ctlr_ready(s->ctl)) {
        for (struct scaled *sc = s->list; sc; sc = sc->next)
            sc->seen = false;
        INFORMER_FOREACH(s->isvcs, it)
        {
            if (!fatia_ctlr_obj_deleting(it->obj) && fatia_ctlr_isvc_autoscaled(it->obj))
                tick_one(s, it->key, it->obj);
        }
        /* forget the InferenceServices gone or no longer autoscaled (none in flight) */
        for (pp = &s->list; *pp;) {
            struct scaled *sc = *pp;
            if (!sc->seen && !sc->pending) {
                *pp = sc->next;
                fatia_free(sc);
            } else {
                pp = &sc->next;
            }
        }
    }
    evtimer_add(s->timer, &tv);
}

int fatia_ctlr_isvc_scaler_new(struct ctl *c, struct wq *q, struct informer *isvcs,
                               struct informer *deploys, struct informer *pods,
                               struct isvc_scaler **ret)
{
    struct isvc_scaler *s = fatia_calloc(1, sizeof(*s));
    struct timeval tv = {0, (suseconds_t)TICK};

    if (!s)
        return -ENOMEM;
    *s = (struct isvc_scaler){.ctl = c, .q = q, .isvcs = isvcs, .deploys = deploys, .pods = pods};
    s->timer = evtimer_new(fatia_ctlr_base(c), tick, s);
    if (!s->timer) {
        fatia_free(s);
        return -ENOMEM;
    }
    evtimer_add(s->timer, &tv);
    *ret = s;
    return 0;
}

void fatia_ctlr_isvc_scaler_free(struct isvc_scaler *s)
{
    if (!s)
        return;
    if (s->timer)
        event_free(s->timer);
    while (s->scrapes) {
        struct scrape *p = s->scrapes;
        s->scrapes = p->next;
        if (p->bev)
            bufferevent_free(p->bev);
        fatia_free(p);
    }
    while (s->list) {
        struct scaled *sc = s->list;
        s->list = sc->next;
        fatia_free(sc);
    }
    fatia_free(s);
}
