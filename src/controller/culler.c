/*
 * controller/culler.c: idle workbenches stopped, as Kubeflow's notebook culler does
 * (components/notebook-controller/pkg/culler) and OpenShift AI's "stop idle workbenches".
 *
 * Model. Every check period, for each running Notebook (not stopped, its pod Ready), the culler
 * asks its Jupyter, where the proxy reaches it (fatia_controllers_opts.nb_upstream: a workbench
 * in a container on its pod's own address, agent/nbaddr.c; in the process mode on the unix
 * socket in its home, the peer's uid checked), for GET <prefix>/api/kernels and GET <prefix>/api/status (with
 * no_track_activity, so that the probe itself is not counted as activity). The pure part,
 * fatia_ctlr_cull_decide:
 *
 *     any kernel busy                       -> active now
 *     last activity = max(status.last_activity, every kernel's last_activity)
 *     now - last activity >= idle time      -> cull
 *
 * A cull writes what Kubeflow writes: the annotation kubeflow-resource-stopped (the time), so the
 * notebook controller deletes the pod and Kueue frees its quota and slice, plus an Event
 * (reason Culled, with the idle time and the last activity) and the counter
 * fatia_notebook_culled_total{namespace}. Each probe also records the annotation
 * notebooks.kubeflow.org/last-activity (what the dashboard shows).
 *
 * A workbench whose Jupyter does not answer (not started yet, not Jupyter, a tenant's server that
 * hangs) is never culled on that ground: the probe times out (PROBE_TIMEOUT), is counted in
 * fatia_notebook_probe_failures_total, and the next period tries again. The probes are
 * asynchronous (bufferevents on the loop), so a hanging server costs a socket, not the loop. The
 * answer is bounded (MAX_ANSWER) and parsed as JSON; a reply the culler cannot read is a failure.
 *
 * Kubeflow's culler reads Jupyter through the cluster's Service (HTTP on the pod's IP); here the
 * pod's IP directly (one node), or the socket in the process mode, where Jupyter has no TCP port.
 * Rejected: polling the proxy's own traffic as activity: a tab left open keeps
 * polling /api/kernels, which Jupyter rightly does not count as activity.
 */
#include "base/compat.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "controller/ctl_internal.h"
#include "controller/kueue.h"
#include "controller/metrics.h"
#include "controller/notebook.h"

#define COMPONENT      "notebook-culler"
#define PROBE_TIMEOUT  5
#define MAX_ANSWER     (1u << 20)
#define DEFAULT_PERIOD (60 * FATIA_USEC_PER_SEC)

struct culler {
    struct ctl *ctl;
    struct informer *nbs, *pods;
    struct event *timer;
    fatia_usec_t idle, period;
    size_t in_flight;
    struct probe *probes; /* in flight, freed with the culler */
};

struct probe {
    struct culler *cu;
    struct bufferevent *bev;
    char ns[64], name[64];
    uid_t uid;
    int step; /* 0: /api/kernels, 1: /api/status */
    json_t *kernels;
    struct probe *prev, *next;
};

bool fatia_ctlr_cull_decide(const json_t *status, const json_t *kernels, fatia_usec_t now,
                            fatia_usec_t idle, fatia_usec_t *ret_last)
{
    fatia_usec_t last = 0, t;
    const char *s = fatia_json_str(status, "last_activity");
    size_t i;
    json_t *k;

    if (s && fatia_time_parse_rfc3339(s, &t) == 0)
        last = t;
    json_array_foreach(kernels, i, k)
    {
        const char *st = fatia_json_str(k, "execution_state");
        const char *la = fatia_json_str(k, "last_activity");
        if (st && !strcmp(st, "busy"))
            last = now;
        else if (la && fatia_time_parse_rfc3339(la, &t) == 0 && t > last)
            last = t;
    }
    *ret_last = last;
    /* no activity known at all (an unreadable answer): never cull on it */
    return last > 0 && now - last >= idle;
}

static void probe_free(struct probe *p)
{
    if (p->prev)
        p->prev->next = p->next;
    else
        p->cu->probes = p->next;
    if (p->next)
        p->next->prev = p->prev;
    if (p->bev)
        bufferevent_free(p->bev);
    json_decref(p->kernels);
    p->cu->in_flight--;
    fatia_free(p);
}

static void probe_failed(struct probe *p, const char *why)
{
    char labels[200];

    fatia_debug("culler: %s/%s: %s", p->ns, p->name, why);
    fatia_ctlr_metric_labels(labels, sizeof(labels), "namespace", p->ns, NULL);
    fatia_ctlr_metric_inc(fatia_ctlr_metrics(p->cu->ctl), "fatia_notebook_probe_failures_total",
                          labels, 1);
    probe_free(p);
}

/* "2 kernels: idle since 2026-12-02T05:50:01Z, starting since ...": what the cull was decided on,
 * for the log (an operator asking why a workbench was stopped). */
static void describe_kernels(const json_t *kernels, char *out, size_t n)
{
    size_t i, len;
    json_t *k;

    len = (size_t)snprintf(out, n, "%zu kernel(s)", json_array_size(kernels));
    json_array_foreach(kernels, i, k)
    {
        const char *st = fatia_json_str(k, "execution_state");
        const char *la = fatia_json_str(k, "last_activity");
        if (len >= n)
            break;
        len += (size_t)snprintf(out + len, n - len, "%s %s since %s", i ? "," : ":", st ? st : "?",
                                la ? la : "?");
    }
}

static void cull(struct culler *cu, const json_t *nb, const json_t *kernels, fatia_usec_t now,
                 fatia_usec_t last, bool stop)
{
    json_t *copy = json_deep_copy(nb);
    json_t *meta = copy ? json_object_get(copy, "metadata") : NULL;
    json_t *anns = meta ? fatia_json_object_ensure(meta, "annotations") : NULL;
    char t_last[40], labels[200];

    if (!anns) {
        json_decref(copy);
        return;
    }
    fatia_time_format_rfc3339(last, false, t_last, sizeof(t_last));
    json_object_set_new(anns, FATIA_NB_ANN_LAST_ACTIVITY, json_string(t_last));
    if (stop) {
        char t_now[40];
        fatia_time_format_rfc3339(now, false, t_now, sizeof(t_now));
        json_object_set_new(anns, FATIA_NB_ANN_STOPPED, json_string(t_now));
        fatia_ctlr_event(cu->ctl, nb, COMPONENT, "Normal", "Culled",
                         "Workbench idle since %s (for %lld s, the idle time is %lld s): stopped, "
                         "its slice freed",
                         t_last, (long long)((now - last) / FATIA_USEC_PER_SEC),
                         (long long)(cu->idle / FATIA_USEC_PER_SEC));
        fatia_ctlr_metric_labels(labels, sizeof(labels), "namespace",
                                 fatia_ctlr_meta_str(nb, "namespace"), NULL);
        fatia_ctlr_metric_inc(fatia_ctlr_metrics(cu->ctl), "fatia_notebook_culled_total", labels,
                              1);
        char ks[400];
        describe_kernels(kernels, ks, sizeof(ks));
        fatia_info("culler: %s/%s idle since %s (%s): stopped",
                   fatia_ctlr_meta_str(nb, "namespace"), fatia_ctlr_meta_str(nb, "name"), t_last,
                   ks);
    }
    fatia_ctlr_update(cu->ctl, copy, &(struct op_opts){.quiet_conflict = true});
    json_decref(copy);
}

static void send_request(struct probe *p)
{
    bufferevent_write(p->bev, "GET /notebook/", 14);
    evbuffer_add_printf(bufferevent_get_output(p->bev),
                        "%s/%s/api/%s?no_track_activity=1 HTTP/1.0\r\nHost: localhost\r\nAccept: "
                        "application/json\r\n"
                        "\r\n",
                        p->ns, p->name, p->step == 0 ? "kernels" : "status");
}

static int start_connect(struct probe *p);

static void answered(struct probe *p)
{
    struct evbuffer *in = bufferevent_get_input(p->bev);
    size_t n = evbuffer_get_length(in);
    const char *buf = (const char *)evbuffer_pullup(in, (ssize_t)n);
    const char *body = buf ? memmem(buf, n, "\r\n\r\n", 4) : NULL;
    json_t *j;
    int status = 0;

    if (!body || sscanf(buf, "HTTP/1.%*d %d", &status) != 1 || status != 200) {
        probe_failed(p, "no 200 answer");
        return;
    }
    body += 4;
    j = json_loadb(body, n - (size_t)(body - buf), 0, NULL);
    if (!j) {
        probe_failed(p, "the answer is not JSON");
        return;
    }
    bufferevent_free(p->bev);
    p->bev = NULL;
    if (p->step == 0) {
        p->kernels = j;
        p->step = 1;
        if (start_connect(p) < 0)
            probe_failed(p, "cannot connect");
        return;
    }
    {
        struct culler *cu = p->cu;
        const json_t *nb = fatia_ctlr_informer_get(cu->nbs, p->ns, p->name);
        fatia_usec_t now = fatia_ctlr_now(cu->ctl), last;
        bool stop = fatia_ctlr_cull_decide(j, p->kernels, now, cu->idle, &last);
        if (nb && !fatia_ctlr_notebook_stopped(nb) && last > 0)
            cull(cu, nb, p->kernels, now, last, stop);
    }
    json_decref(j);
    probe_free(p);
}

static void probe_read_cb(struct bufferevent *bev, void *arg)
{
    struct probe *p = arg;

    if (evbuffer_get_length(bufferevent_get_input(bev)) > MAX_ANSWER)
        probe_failed(p, "the answer is too large");
}

static void probe_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct probe *p = arg;

    if (what & BEV_EVENT_CONNECTED) {
        struct ucred cred;
        socklen_t cl = sizeof(cred);
        /* a container's address (uid -1): reached on its namespace's bridge, nothing to check */
        if (p->uid != (uid_t)-1 &&
            (getsockopt(bufferevent_getfd(bev), SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0 ||
             cred.uid != p->uid)) {
            probe_failed(p, "the socket is not served by the namespace's uid");
            return;
        }
        send_request(p);
        return;
    }
    if (what & BEV_EVENT_EOF) {
        answered(p);
        return;
    }
    probe_failed(p, (what & BEV_EVENT_TIMEOUT) ? "timed out" : "connection failed");
}

static int start_connect(struct probe *p)
{
    const struct fatia_controllers_opts *o = fatia_ctlr_opts(p->cu->ctl);
    struct sockaddr_storage sa = {0};
    socklen_t sl = 0;
    struct timeval tv = {PROBE_TIMEOUT, 0};
    int r;

    r = o->nb_upstream(o->nb_upstream_arg, p->ns, p->name, &sa, &sl, &p->uid);
    if (r < 0)
        return r;
    p->bev = bufferevent_socket_new(fatia_ctlr_base(p->cu->ctl), -1, BEV_OPT_CLOSE_ON_FREE);
    if (!p->bev)
        return -ENOMEM;
    bufferevent_setcb(p->bev, probe_read_cb, NULL, probe_event_cb, p);
    bufferevent_set_timeouts(p->bev, &tv, &tv);
    bufferevent_enable(p->bev, EV_READ | EV_WRITE);
    if (bufferevent_socket_connect(p->bev, (struct sockaddr *)&sa, (int)sl) < 0)
        return -ECONNREFUSED;
    return 0;
}

static void probe_notebook(struct culler *cu, const json_t *nb)
{
    struct probe *p = fatia_calloc(1, sizeof(*p));

    if (!p)
        return;
    p->cu = cu;
    cu->in_flight++;
    p->next = cu->probes;
    if (cu->probes)
        cu->probes->prev = p;
    cu->probes = p;
    snprintf(p->ns, sizeof(p->ns), "%s", fatia_ctlr_meta_str(nb, "namespace"));
    snprintf(p->name, sizeof(p->name), "%s", fatia_ctlr_meta_str(nb, "name"));
    if (start_connect(p) < 0)
        probe_failed(p, "cannot connect");
}

static void tick(evutil_socket_t fd, short what, void *arg)
{
    struct culler *cu = arg;
    struct timeval tv = {(time_t)(cu->period / FATIA_USEC_PER_SEC),
                         (suseconds_t)(cu->period % FATIA_USEC_PER_SEC)};

    (void)fd;
    (void)what;
    if (fatia_ctlr_ready(cu->ctl) && cu->in_flight == 0) {
        INFORMER_FOREACH(cu->nbs, it)
        {
            char pname[300];
            const json_t *pod;
            if (fatia_ctlr_obj_deleting(it->obj) || fatia_ctlr_notebook_stopped(it->obj))
                continue;
            snprintf(pname, sizeof(pname), "%s-0", fatia_ctlr_meta_str(it->obj, "name"));
            pod =
                fatia_ctlr_informer_get(cu->pods, fatia_ctlr_meta_str(it->obj, "namespace"), pname);
            if (pod && fatia_ctlr_cond_true(pod, "Ready") &&
                fatia_ctlr_owner_of_kind(pod, "kubeflow.org/v1", "Notebook"))
                probe_notebook(cu, it->obj);
        }
    }
    evtimer_add(cu->timer, &tv);
}

int fatia_ctlr_culler_new(struct ctl *c, struct culler **ret)
{
    const struct fatia_controllers_opts *o = fatia_ctlr_opts(c);
    struct culler *cu;
    struct timeval tv;

    *ret = NULL;
    if (!o->cull_idle || !o->nb_upstream)
        return 0; /* culling is off */
    cu = fatia_calloc(1, sizeof(*cu));
    if (!cu)
        return -ENOMEM;
    cu->ctl = c;
    cu->idle = o->cull_idle;
    cu->period = o->cull_period ? o->cull_period : DEFAULT_PERIOD;
    cu->nbs = fatia_ctlr_informer(c, fatia_kind_find("kubeflow.org/v1", "Notebook", NULL));
    cu->pods = fatia_ctlr_informer(c, fatia_kind_find("v1", "Pod", NULL));
    cu->timer = evtimer_new(fatia_ctlr_base(c), tick, cu);
    if (!cu->nbs || !cu->pods || !cu->timer ||
        fatia_ctlr_metric_define(fatia_ctlr_metrics(c), "fatia_notebook_culled_total", "counter",
                                 "Workbenches stopped by the culler for idleness", NULL, 0) < 0 ||
        fatia_ctlr_metric_define(
            fatia_ctlr_metrics(c), "fatia_notebook_probe_failures_total", "counter",
            "Activity probes of workbenches that got no usable answer", NULL, 0) < 0) {
        fatia_ctlr_culler_free(cu);
        return -ENOMEM;
    }
    tv.tv_sec = (time_t)(cu->period / FATIA_USEC_PER_SEC);
    tv.tv_usec = (suseconds_t)(cu->period % FATIA_USEC_PER_SEC);
    evtimer_add(cu->timer, &tv);
    *ret = cu;
    return 0;
}

void fatia_ctlr_culler_free(struct culler *cu)
{
    if (!cu)
        return;
    if (cu->timer)
        event_free(cu->timer);
    while (cu->probes)
        probe_free(cu->probes);
    fatia_free(cu);
}
