/*
 * apiserver/rerun.c: a write that lost to another replica's change is run again, as
 * kube-apiserver's GuaranteedUpdate does, instead of answering 409 for a conflict the client
 * never asked to be told about.
 *
 * With several replicas (replica.c), each builds a write on its own cache; etcd's compare
 * refuses the commit when another replica changed the object first, and txn.c fails only the
 * writes built on the stale version (retry_innocent). Such an answer carries stale_rv: etcd's
 * revision when it refused the commit. Once this replica's watch has brought that revision (so
 * its cache holds the change that won), the HTTP request is handled again from the start:
 * authentication, authorization, the patch applied to the fresh object, admission, the
 * preconditions. A write with a precondition (metadata.resourceVersion in a PUT body or a
 * patch, DeleteOptions.preconditions) therefore still fails 409 on the rerun, against the
 * fresh object: only unconditional writes succeed, as with GuaranteedUpdate. A create rerun
 * finds the name taken (AlreadyExists) or free.
 *
 *     answer with stale_rv --fatia_api_rerun--> waiting --watch reaches stale_rv, or 1 s-->
 *         handled again (fatia_api_handle_http) --> answered, or waiting again (8 reruns at most)
 *
 * The wait has a deadline so that a revision the watch never shows (a write to etcd outside the
 * prefix) costs a second, not the request. A request whose client went away meanwhile is
 * answered (nobody reads it) instead of run again. Shutdown answers the waiting ones by running
 * them again: the handler refuses them with 503.
 *
 * Only HTTP requests are run again. The leader's controllers write through the local client
 * and requeue on 409 as Kubernetes controllers do; a fenced write (fatia_apiserver_set_fence)
 * that failed because the fence Lease moved never carries stale_rv.
 *
 * Rejected: re-applying the operation itself (the patch bytes and every field of the request
 * context would have to outlive the handler's stack; running the whole request again keeps one
 * path and re-checks authorization as GuaranteedUpdate re-runs admission); retrying at once
 * (the cache still holds the old version, so the compare would fail again); polling etcd for
 * the object (the watch brings it anyway, and the cache must hold it before the patch applies).
 */
#include "base/compat.h"

#include <event2/event.h>

#include "apiserver/internal.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/log.h"

#define RERUN_MAX       8                        /* reruns of one request */
#define RERUN_WAIT_USEC (1 * FATIA_USEC_PER_SEC) /* the longest wait for the watch */

struct rerun {
    struct fatia_apiserver *s;
    struct fatia_api_http_req *req;
    uint64_t rv; /* run again once s->rv_committed reaches it */
    struct event *ev;
    struct rerun *next;
};

static void unlink_rerun(struct fatia_apiserver *s, struct rerun *w)
{
    for (struct rerun **p = &s->reruns; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            return;
        }
}

static void rerun_cb(int fd, short what, void *arg)
{
    struct rerun *w = arg;
    struct fatia_apiserver *s = w->s;
    struct fatia_api_http_req *req = w->req;

    (void)fd;
    unlink_rerun(s, w);
    event_free(w->ev);
    fatia_free(w);
    if (what & EV_TIMEOUT)
        s->rerun_timeouts++;
    if (!fatia_api_http_req_connected(req)) {
        /* the client went away: nobody reads the answer, and the write is not run again */
        fatia_api_http_reply(req, 409, "application/json", NULL, 0);
        return;
    }
    s->reruns_total++;
    fatia_api_handle_http(s, req);
}

bool fatia_api_rerun(struct fatia_apiserver *s, struct fatia_api_http_req *req,
                     const struct opres *r)
{
    struct timeval tv = {RERUN_WAIT_USEC / FATIA_USEC_PER_SEC,
                         RERUN_WAIT_USEC % FATIA_USEC_PER_SEC};
    struct rerun *w;

    if (!r->stale_rv || !s->replica || s->shutting_down || !fatia_api_http_req_connected(req))
        return false;
    if (fatia_api_http_req_count_run(req) > RERUN_MAX) {
        s->rerun_gave_up++;
        return false;
    }
    w = fatia_calloc(1, sizeof(*w));
    if (!w)
        return false;
    *w = (struct rerun){.s = s, .req = req, .rv = r->stale_rv};
    w->ev = event_new(s->base, -1, 0, rerun_cb, w);
    if (!w->ev) {
        fatia_free(w);
        return false;
    }
    w->next = s->reruns;
    s->reruns = w;
    if (s->rv_committed >= w->rv)
        event_active(w->ev, EV_READ, 0); /* from the loop: the answer's caller is mid-commit */
    else
        event_add(w->ev, &tv);
    return true;
}

void fatia_api_rerun_wake(struct fatia_apiserver *s, bool all)
{
    for (struct rerun *w = s->reruns; w; w = w->next)
        if ((all || s->rv_committed >= w->rv) && !event_pending(w->ev, EV_READ, NULL)) {
            event_del(w->ev);
            event_active(w->ev, EV_READ, 0);
        }
}

void fatia_api_rerun_free_all(struct fatia_apiserver *s)
{
    struct rerun *w, *next;

    for (w = s->reruns; w; w = next) {
        next = w->next;
        event_free(w->ev);
        fatia_api_http_reply(w->req, 503, "application/json", NULL, 0);
        fatia_free(w);
    }
    s->reruns = NULL;
}
