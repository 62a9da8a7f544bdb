/*
 * daemon/remote.c: the client interface (client/client.h) over HTTPS to a control plane's API,
 * for `fatiad --role node` (docs/fleet.md, "The node role").
 *
 * Model. Every operation is one HTTP/1.1 request on libcurl's multi interface driven by the
 * daemon's libevent loop (CURLMOPT_SOCKETFUNCTION / TIMERFUNCTION: the sockets are events of the
 * loop, libcurl is never waited on), so done() always runs from the loop, after the operation
 * returned, as the contract asks. Connections are reused by the multi handle (keep-alive).
 * A transport failure (connection refused, TLS, timeout) is answered as a 503 Status whose
 * message names the cause: callers already treat a 5xx as "try again".
 *
 * Several servers (--server URL,URL...: control replicas of one store, docs/fleet.md): every new
 * request goes to the current one; a request that it did not answer (unreachable(): refused,
 * reset, timeout, TLS failure; an HTTP error is an answer) makes the next one current, after
 * the last the first again (fail_over()), only if it went to the current one (so the many
 * requests failing together move it once). Nothing moves back while the current one answers:
 * a replica that returns is not preferred. Callers retry as before, now on the next server; a
 * watch resumes there from its last revision (the replicas share etcd's revisions). Rejected:
 * probing the others in the background (traffic for a choice the next failure makes anyway);
 * trying each request on every server in turn (a write could then be applied twice when the
 * answer, not the request, was lost).
 *
 * A watch with resource_version 0 is a list, ADDED for each item, a BOOKMARK at the list's
 * revision, then the stream (GET ?watch=1&resourceVersion=RV&allowWatchBookmarks=true), read a
 * line (one event) at a time. A stream that ends for any reason other than the consumer's stop
 * or a 410 is opened again from the last revision seen after a second (so a control plane that
 * restarts, or a SIGSTOPped node that wakes, resumes with nothing lost); a 410 (history gone)
 * ends the watch with an ERROR event, and the consumer lists again (client.h).
 *
 * The cache behind cached and cached_each holds Nodes and ResourceSlices, each kept by a watch
 * of its own (the agent reads both synchronously), and the objects the node's pods name, by
 * name, as kubelet's watch-based secret and configmap managers keep them (a node may not list
 * them: apiserver/nodeauth.c). A watch of the node's own pods (fieldSelector
 * spec.nodeName=NODE) gives each pod's references (noderefs.c); each referenced object is a
 * struct ref counted by the pods that name it, made when the first one arrives and dropped
 * when the last one is deleted:
 *   Secret, ConfigMap   a list and watch narrowed to it (fieldSelector metadata.name=NAME),
 *                       which the Node authorizer grants for an object a pod of the node uses,
 *                       so a change reaches the agent's volumes within its next tick;
 *   PVC, and its PV     a GET every POLL_USEC (the authorizer grants get only, as upstream's;
 *                       a claim's binding changes once, and the agent waits for it anyway);
 *                       the claim holds a ref of its spec.volumeName.
 * cached answers a ref's object once fetched, NULL before (the agent's pod waits and tries
 * again: CreateContainerConfigError, as kubelet's) and while it does not exist or is refused
 * (the same error as in the all-in-one daemon). cached_each of these kinds is -ENOTSUP: the
 * client holds only what its pods name, never "every" one (so localpath.c's reclaim of
 * unnamed volume directories never runs on a node role).
 * Rejected: fetching on the agent's first cached() (then nothing says when to stop); a GET
 * per pod start (a ConfigMap volume must follow its object); the single-object watch path
 * (.../secrets/NAME?watch=1), since the list gives the revision the watch starts from even when
 * the object does not exist yet.
 *
 * The pods' ServiceAccount tokens (the kube-api-access volume's, and every projected
 * serviceAccountToken source) are the client's token_request: a POST of the agent's
 * TokenRequest (agent/satoken.c: bound to the pod, the source's audience and expirationSeconds,
 * renewed at 80 % of its life or after 24 h) to .../serviceaccounts/SA/token; the volume's
 * ca.crt and namespace come as in the all-in-one daemon (the kube-root-ca.crt ConfigMap, a
 * projected configMap source fetched by name as above; the downwardAPI from the pod).
 *
 * Stopping a watch from inside its own callback is allowed: the stop marks it and the transfer
 * is aborted (the write callback returns 0), and the watch is freed once libcurl is done with it.
 * Stopped from anywhere else, its stream is removed from the loop's next turn: the stop may run
 * inside another transfer's write callback (a pod's DELETED releasing a ConfigMap's watch), where
 * libcurl forbids removing a handle (that crashed the node role at its exit).
 * Rejected: a thread per watch with blocking curl_easy (the loop would need the events handed
 * over, as the etcd watch does, for one stream; here there is one per kind watched); a
 * hand-written HTTP client on bufferevents (TLS, chunked encoding, keep-alive, redirects: what
 * libcurl already does, and the store already links it).
 */
#include "base/compat.h"

#include "remote.h"

#include <curl/curl.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/log.h"
#include "client/client.h"
#include "model/kinds/kinds.h"
#include "noderefs.h"

#define MAX_BODY   (256u << 20)
#define RETRY_USEC 1000000
#define POLL_USEC  2000000

struct rclient;

struct rreq {
    struct rclient *rc;
    CURL *h;
    struct curl_slist *hdrs;
    char *send; /* the request body, owned */
    struct fatia_buf body;
    char err[CURL_ERROR_SIZE];
    fatia_client_done_fn done;
    void *arg;
    struct fatia_client_watch *w; /* a watch's stream: events from the write callback */
    size_t srv;                   /* the index of the server it went to */
};

struct fatia_client_watch {
    struct rclient *rc;
    const struct fatia_kind *k;
    char *ns, *label, *field;
    fatia_watch_fn fn;
    void *arg;
    uint64_t rv;
    struct rreq *cur; /* the list or the stream in flight; NULL: none */
    struct event *retry;
    unsigned busy; /* inside fn */
    bool stopped, gone;
    struct fatia_buf line;
};

struct cache {
    const struct fatia_kind *k;
    json_t *objs; /* "ns/name" or "name" -> object */
    struct fatia_client_watch *w;
};

/* An object the node's pods name (see the top). */
struct ref {
    struct ref *next;
    struct rclient *rc;
    const struct fatia_kind *k;
    char *ns, *name, *key; /* key: "PLURAL/NS/NAME" */
    unsigned users;
    json_t *obj;                  /* the object as last seen; NULL: none (yet) */
    struct fatia_client_watch *w; /* Secret, ConfigMap */
    struct event *poll;           /* PVC, PV: the next GET */
    bool in_flight, dead;         /* a GET outstanding; released meanwhile (freed on answer) */
    char *pv;                     /* a claim's: the key of the PV ref it holds */
};

struct rclient {
    struct fatia_client c;
    struct event_base *base;
    CURLM *multi;
    struct event *timer;
    char *server, *auth, *ca; /* server: servers[cur] (not owned) */
    char **servers;           /* --server's addresses, in order (owned) */
    size_t n_servers, cur;    /* cur: the one every new request goes to */
    struct cache caches[2];
    struct ref *refs;
    json_t *pods, *pods_old; /* "ns/name" -> that pod's refs (noderefs.h); old: during a relist */
    struct fatia_client_watch *pod_w;
};

/* ---- the loop's side of libcurl ---- */

struct sock {
    struct rclient *rc;
    struct event *ev;
};

static void check_done(struct rclient *rc);

static void on_sock(evutil_socket_t fd, short what, void *arg)
{
    struct rclient *rc = arg;
    int running,
        flags = (what & EV_READ ? CURL_CSELECT_IN : 0) | (what & EV_WRITE ? CURL_CSELECT_OUT : 0);

    curl_multi_socket_action(rc->multi, fd, flags, &running);
    check_done(rc);
}

static int sock_cb(CURL *h, curl_socket_t s, int what, void *userp, void *socketp)
{
    struct rclient *rc = userp;
    struct sock *sk = socketp;
    short ev = (short)((what & CURL_POLL_IN ? EV_READ : 0) | (what & CURL_POLL_OUT ? EV_WRITE : 0));

    (void)h;
    if (what == CURL_POLL_REMOVE) {
        if (sk) {
            event_free(sk->ev);
            fatia_free(sk);
        }
        curl_multi_assign(rc->multi, s, NULL);
        return 0;
    }
    if (!sk) {
        sk = fatia_xcalloc(1, sizeof(*sk));
        sk->rc = rc;
        curl_multi_assign(rc->multi, s, sk);
    } else {
        event_free(sk->ev);
    }
    sk->ev = event_new(rc->base, s, ev | EV_PERSIST, on_sock, rc);
    if (sk->ev)
        event_add(sk->ev, NULL);
    return 0;
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct rclient *rc = arg;
    int running;

    (void)fd;
    (void)what;
    curl_multi_socket_action(rc->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_done(rc);
}

static int timer_cb(CURLM *m, long ms, void *userp)
{
    struct rclient *rc = userp;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    (void)m;
    if (ms < 0)
        evtimer_del(rc->timer);
    else
        evtimer_add(rc->timer, &tv);
    return 0;
}

/* ---- requests ---- */

static void req_free(struct rreq *q)
{
    if (!q)
        return;
    if (q->h) {
        curl_multi_remove_handle(q->rc->multi, q->h);
        curl_easy_cleanup(q->h);
    }
    curl_slist_free_all(q->hdrs);
    fatia_free(q->send);
    fatia_buf_release(&q->body);
    fatia_free(q);
}

static size_t on_body(char *p, size_t size, size_t n, void *arg);

static int path_of(struct fatia_buf *b, const struct rclient *rc, const struct fatia_kind *k,
                   const char *ns, const char *name, const char *sub)
{
    int r = fatia_buf_puts(b, rc->server);

    r = r ? r
          : (*k->group ? fatia_buf_printf(b, "/apis/%s/%s", k->group, k->version)
                       : fatia_buf_printf(b, "/api/%s", k->version));
    if (r == 0 && k->namespaced && ns && *ns)
        r = fatia_buf_printf(b, "/namespaces/%s", ns);
    r = r ? r : fatia_buf_printf(b, "/%s", k->plural);
    if (r == 0 && name && *name)
        r = fatia_buf_printf(b, "/%s", name);
    if (r == 0 && sub && *sub)
        r = fatia_buf_printf(b, "/%s", sub);
    return r;
}

static int query_add(struct fatia_buf *b, CURL *h, const char *key, const char *val)
{
    char *e;
    int r;

    if (!val || !*val)
        return 0;
    e = curl_easy_escape(h, val, 0);
    if (!e)
        return -ENOMEM;
    r = fatia_buf_printf(b, "%c%s=%s", strchr(b->p, '?') ? '&' : '?', key, e);
    curl_free(e);
    return r;
}

/* Starts method on url (taken from b) with body (taken; NULL: none). */
static int req_start(struct rclient *rc, const char *method, struct fatia_buf *url, char *body,
                     const char *content_type, fatia_client_done_fn done, void *arg,
                     struct fatia_client_watch *w, struct rreq **ret)
{
    struct rreq *q = fatia_xcalloc(1, sizeof(*q));
    char ct[128];

    q->rc = rc;
    q->done = done;
    q->arg = arg;
    q->w = w;
    q->send = body;
    fatia_buf_init(&q->body, MAX_BODY);
    q->h = curl_easy_init();
    if (!q->h)
        goto oom;
    q->hdrs = curl_slist_append(NULL, rc->auth);
    q->hdrs = curl_slist_append(q->hdrs, "Accept: application/json");
    if (content_type) {
        snprintf(ct, sizeof(ct), "Content-Type: %s", content_type);
        q->hdrs = curl_slist_append(q->hdrs, ct);
    }
    if (!q->hdrs)
        goto oom;
    curl_easy_setopt(q->h, CURLOPT_URL, url->p);
    q->srv = rc->cur;
    curl_easy_setopt(q->h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(q->h, CURLOPT_HTTPHEADER, q->hdrs);
    curl_easy_setopt(q->h, CURLOPT_PRIVATE, q);
    curl_easy_setopt(q->h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(q->h, CURLOPT_WRITEDATA, q);
    curl_easy_setopt(q->h, CURLOPT_ERRORBUFFER, q->err);
    curl_easy_setopt(q->h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(q->h, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    if (!w)
        curl_easy_setopt(q->h, CURLOPT_TIMEOUT_MS, 60000L);
    else { /* a stream: dead if nothing (not even a bookmark) came for a minute and a half */
        curl_easy_setopt(q->h, CURLOPT_LOW_SPEED_TIME, 90L);
        curl_easy_setopt(q->h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    }
    if (rc->ca)
        curl_easy_setopt(q->h, CURLOPT_CAINFO, rc->ca);
    if (body) {
        curl_easy_setopt(q->h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(q->h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    if (curl_multi_add_handle(rc->multi, q->h) != CURLM_OK)
        goto oom;
    fatia_buf_release(url);
    if (ret)
        *ret = q;
    return 0;
oom:
    fatia_buf_release(url);
    q->send = NULL;
    fatia_free(body);
    req_free(q);
    return -ENOMEM;
}

static uint64_t rv_of(const json_t *obj)
{
    const char *s = fatia_json_str(json_object_get(obj, "metadata"), "resourceVersion");
    return s ? strtoull(s, NULL, 10) : 0;
}

static void finish(struct rreq *q, CURLcode cc)
{
    long code = 0;
    json_t *tree = NULL;
    struct fatia_client_result res = {0};

    curl_easy_getinfo(q->h, CURLINFO_RESPONSE_CODE, &code);
    if (cc == CURLE_OK && q->body.len)
        tree = json_loadb(q->body.p, q->body.len, 0, NULL);
    if (cc != CURLE_OK || !tree) {
        json_decref(tree);
        tree = json_pack("{s:s,s:s,s:{},s:s,s:s,s:I}", "kind", "Status", "apiVersion", "v1",
                         "metadata", "status", "Failure", "message",
                         cc != CURLE_OK ? (q->err[0] ? q->err : curl_easy_strerror(cc))
                                        : "the server's answer is not JSON",
                         "code", (json_int_t)(cc != CURLE_OK ? 503 : code));
        code = cc != CURLE_OK ? 503 : code;
    }
    res.code = (int)code;
    if (code >= 200 && code < 300) {
        res.obj = tree;
        res.rv = rv_of(tree);
    } else {
        res.status = tree;
    }
    if (q->done)
        q->done(q->arg, &res);
    json_decref(tree);
}

/* ---- watches ---- */

static void watch_free(struct fatia_client_watch *w)
{
    if (w->retry)
        event_free(w->retry);
    fatia_free(w->ns);
    fatia_free(w->label);
    fatia_free(w->field);
    fatia_buf_release(&w->line);
    fatia_free(w);
}

static void watch_open(struct fatia_client_watch *w);

static void watch_again(struct fatia_client_watch *w)
{
    struct timeval tv = {0, RETRY_USEC};

    evtimer_add(w->retry, &tv);
}

static void deliver(struct fatia_client_watch *w, enum fatia_watch_event t, const json_t *obj,
                    uint64_t rv)
{
    if (w->stopped)
        return;
    w->busy++;
    w->fn(w->arg, t, obj, rv);
    w->busy--;
}

static void listed(void *arg, const struct fatia_client_result *res)
{
    struct fatia_client_watch *w = arg;
    const json_t *item;
    size_t i;

    w->cur = NULL;
    if (w->stopped) { /* stopped while the list was in flight */
        watch_free(w);
        return;
    }
    if (res->code != 200) {
        if (res->code == 403 || res->code == 401)
            fatia_warn("remote watch of %s: %d: %s", w->k->plural, res->code,
                       fatia_json_str(res->status, "message"));
        watch_again(w);
        return;
    }
    json_array_foreach(json_object_get(res->obj, "items"), i, item)
    {
        json_t *o = json_deep_copy(item);
        /* list items carry no kind */
        json_object_set_new(o, "kind", json_string(w->k->kind));
        json_object_set_new(o, "apiVersion", json_string(fatia_json_str(res->obj, "apiVersion")));
        deliver(w, FATIA_WATCH_ADDED, o, rv_of(o));
        json_decref(o);
    }
    w->rv = res->rv;
    deliver(w, FATIA_WATCH_BOOKMARK, NULL, w->rv);
    if (w->stopped)
        watch_free(w); /* stopped from fn */
    else
        watch_open(w);
}

static int on_line(struct fatia_client_watch *w, const char *p, size_t n)
{
    json_t *ev = json_loadb(p, n, 0, NULL), *obj = json_object_get(ev, "object");
    const char *t = fatia_json_str(ev, "type");
    enum fatia_watch_event type = 0;
    uint64_t rv = rv_of(obj);

    if (!t || !obj) {
        json_decref(ev);
        return 0;
    }
    if (!strcmp(t, "ADDED"))
        type = FATIA_WATCH_ADDED;
    else if (!strcmp(t, "MODIFIED"))
        type = FATIA_WATCH_MODIFIED;
    else if (!strcmp(t, "DELETED"))
        type = FATIA_WATCH_DELETED;
    else if (!strcmp(t, "BOOKMARK"))
        type = FATIA_WATCH_BOOKMARK;
    else if (!strcmp(t, "ERROR"))
        type = FATIA_WATCH_ERROR;
    if (type == FATIA_WATCH_ERROR) {
        json_int_t code = 0;
        code = json_integer_value(json_object_get(obj, "code"));
        if (code == 410) {
            w->gone = true;
            deliver(w, FATIA_WATCH_ERROR, obj, 0);
        }
        json_decref(ev);
        return -1; /* the stream is over either way */
    }
    if (type) {
        if (rv > w->rv)
            w->rv = rv;
        deliver(w, type, type == FATIA_WATCH_BOOKMARK ? NULL : obj, rv);
    }
    json_decref(ev);
    return 0;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    struct rreq *q = arg;
    struct fatia_client_watch *w = q->w;
    size_t len = size * n;

    if (!w)
        return fatia_buf_append(&q->body, p, len) < 0 ? 0 : len;
    if (w->stopped || fatia_buf_append(&w->line, p, len) < 0)
        return 0;
    for (;;) {
        char *nl = memchr(w->line.p, '\n', w->line.len);
        size_t used;
        long code = 0;
        curl_easy_getinfo(q->h, CURLINFO_RESPONSE_CODE, &code);
        if (code != 200)
            return len; /* an error's Status: stream_done looks at the code */
        if (!nl)
            break;
        used = (size_t)(nl - w->line.p) + 1;
        if (on_line(w, w->line.p, used - 1) < 0 || w->stopped)
            return 0;
        memmove(w->line.p, w->line.p + used, w->line.len - used);
        fatia_buf_truncate(&w->line, w->line.len - used);
    }
    return len;
}

static void stream_done(struct fatia_client_watch *w, struct rreq *q)
{
    long code = 0;

    curl_easy_getinfo(q->h, CURLINFO_RESPONSE_CODE, &code);
    w->cur = NULL;
    if (code == 410 && !w->gone && !w->stopped) {
        json_t *st = json_pack("{s:s,s:s,s:s,s:s,s:i}", "kind", "Status", "apiVersion", "v1",
                               "status", "Failure", "reason", "Expired", "code", 410);
        w->gone = true;
        deliver(w, FATIA_WATCH_ERROR, st, 0);
        json_decref(st);
    }
    if (w->stopped)
        watch_free(w);
    else if (!w->gone)
        watch_again(w);
    /* gone: over, until the consumer stops it */
}

static void watch_open(struct fatia_client_watch *w)
{
    struct fatia_buf url = FATIA_BUF_INIT;
    char rv[32];
    CURL *tmp = curl_easy_init();
    int r;

    fatia_buf_reset(&w->line);
    snprintf(rv, sizeof(rv), "%" PRIu64, w->rv);
    r = tmp ? path_of(&url, w->rc, w->k, w->ns, NULL, NULL) : -ENOMEM;
    r = r ? r : fatia_buf_puts(&url, "?watch=1&allowWatchBookmarks=true");
    r = r ? r : query_add(&url, tmp, "resourceVersion", rv);
    r = r ? r : query_add(&url, tmp, "labelSelector", w->label);
    r = r ? r : query_add(&url, tmp, "fieldSelector", w->field);
    curl_easy_cleanup(tmp);
    if (r == 0)
        r = req_start(w->rc, "GET", &url, NULL, NULL, NULL, NULL, w, &w->cur);
    else
        fatia_buf_release(&url);
    if (r < 0)
        watch_again(w);
}

static void watch_list(struct fatia_client_watch *w);

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    struct fatia_client_watch *w = arg;

    (void)fd;
    (void)what;
    if (w->stopped) { /* watch_stop's deferred end of a stream */
        req_free(w->cur);
        w->cur = NULL;
        watch_free(w);
        return;
    }
    if (w->rv)
        watch_open(w);
    else
        watch_list(w);
}

static int rc_list(struct fatia_client *c, const struct fatia_kind *k, const char *ns,
                   const struct fatia_list_opts *o, fatia_client_done_fn done, void *arg);

static void watch_list(struct fatia_client_watch *w)
{
    struct fatia_list_opts lo = {.label_selector = w->label, .field_selector = w->field};
    struct rclient *rc = w->rc;

    if (rc_list(&rc->c, w->k, w->ns, &lo, listed, w) < 0)
        watch_again(w);
    else
        w->cur = (struct rreq *)1; /* a list in flight: the real request is not a stream */
}

/* Did the server not answer (as opposed to answering an error)? */
static bool unreachable(CURLcode cc)
{
    switch (cc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
        return true;
    default:
        return false;
    }
}

/* A request to server srv ended with cc: when that server did not answer and is still the
 * current one, the next of the list becomes current (after the last, the first again). Requests
 * already in flight to it fail on their own and are retried by their callers (a watch reopens
 * after RETRY_USEC, the lease renewer at its next tick), on the new current server. */
static void fail_over(struct rclient *rc, size_t srv, CURLcode cc)
{
    if (rc->n_servers < 2 || !unreachable(cc) || srv != rc->cur)
        return;
    rc->cur = (rc->cur + 1) % rc->n_servers;
    rc->server = rc->servers[rc->cur];
    fatia_warn("remote: %s does not answer (%s): now speaking to %s", rc->servers[srv],
               curl_easy_strerror(cc), rc->server);
}

static void check_done(struct rclient *rc)
{
    CURLMsg *m;
    int left;

    while ((m = curl_multi_info_read(rc->multi, &left))) {
        struct rreq *q = NULL;
        if (m->msg != CURLMSG_DONE)
            continue;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&q);
        fail_over(rc, q->srv, m->data.result);
        if (q->w)
            stream_done(q->w, q);
        else
            finish(q, m->data.result);
        req_free(q);
    }
}

/* ---- the operations ---- */

static int rc_get(struct fatia_client *c, const struct fatia_kind *k, const char *ns,
                  const char *name, fatia_client_done_fn done, void *arg)
{
    struct rclient *rc = (struct rclient *)c;
    struct fatia_buf url = FATIA_BUF_INIT;
    int r = path_of(&url, rc, k, ns, name, NULL);

    if (r < 0) {
        fatia_buf_release(&url);
        return r;
    }
    return req_start(rc, "GET", &url, NULL, NULL, done, arg, NULL, NULL);
}

static int rc_list(struct fatia_client *c, const struct fatia_kind *k, const char *ns,
                   const struct fatia_list_opts *o, fatia_client_done_fn done, void *arg)
{
    struct rclient *rc = (struct rclient *)c;
    struct fatia_buf url = FATIA_BUF_INIT;
    CURL *tmp = curl_easy_init();
    char lim[32];
    int r = tmp ? path_of(&url, rc, k, ns, NULL, NULL) : -ENOMEM;

    snprintf(lim, sizeof(lim), "%" PRId64, o ? o->limit : 0);
    if (o) {
        r = r ? r : query_add(&url, tmp, "labelSelector", o->label_selector);
        r = r ? r : query_add(&url, tmp, "fieldSelector", o->field_selector);
        r = r ? r : query_add(&url, tmp, "limit", o->limit ? lim : NULL);
        r = r ? r : query_add(&url, tmp, "continue", o->continue_token);
    }
    curl_easy_cleanup(tmp);
    if (r < 0) {
        fatia_buf_release(&url);
        return r;
    }
    return req_start(rc, "GET", &url, NULL, NULL, done, arg, NULL, NULL);
}

static int write_query(struct fatia_buf *url, const struct fatia_write_opts *o)
{
    int r = 0;

    if (o && o->dry_run)
        r = fatia_buf_printf(url, "%cdryRun=All", strchr(url->p, '?') ? '&' : '?');
    if (r == 0 && o && o->fv != FATIA_FV_WARN)
        r = fatia_buf_printf(url, "%cfieldValidation=%s", strchr(url->p, '?') ? '&' : '?',
                             o->fv == FATIA_FV_STRICT ? "Strict" : "Ignore");
    return r;
}

static int rc_write(struct fatia_client *c, const char *verb, const json_t *obj,
                    const struct fatia_write_opts *o, fatia_client_done_fn done, void *arg)
{
    struct rclient *rc = (struct rclient *)c;
    const json_t *meta = json_object_get(obj, "metadata");
    const struct fatia_kind *k =
        fatia_kind_find(fatia_json_str(obj, "apiVersion"), fatia_json_str(obj, "kind"), NULL);
    bool create = !strcmp(verb, "create");
    struct fatia_buf url = FATIA_BUF_INIT;
    char *body;
    int r;

    if (!k)
        return -EINVAL;
    r = path_of(&url, rc, k, fatia_json_str(meta, "namespace"),
                create ? NULL : fatia_json_str(meta, "name"),
                !strcmp(verb, "update_status") ? "status" : NULL);
    r = r ? r : write_query(&url, o);
    body = r ? NULL : json_dumps(obj, JSON_COMPACT);
    if (r < 0 || !body) {
        fatia_buf_release(&url);
        free(body);
        return r < 0 ? r : -ENOMEM;
    }
    /* json_dumps's memory is malloc's; req_start frees with fatia_free: copy */
    {
        char *copy = fatia_xstrdup(body);
        free(body);
        body = copy;
    }
    return req_start(rc, create ? "POST" : "PUT", &url, body, "application/json", done, arg, NULL,
                     NULL);
}

static int rc_patch(struct fatia_client *c, const struct fatia_kind *k, const char *ns,
                    const char *name, const char *subresource, enum fatia_patch_type type,
                    const char *patch, size_t n, const struct fatia_write_opts *o,
                    fatia_client_done_fn done, void *arg)
{
    struct rclient *rc = (struct rclient *)c;
    struct fatia_buf url = FATIA_BUF_INIT;
    char *body;
    int r = path_of(&url, rc, k, ns, name, subresource);

    r = r ? r : write_query(&url, o);
    if (r < 0) {
        fatia_buf_release(&url);
        return r;
    }
    body = fatia_xmalloc(n + 1);
    memcpy(body, patch, n);
    body[n] = '\0';
    return req_start(rc, "PATCH", &url, body,
                     type == FATIA_PATCH_MERGE  ? "application/merge-patch+json"
                     : type == FATIA_PATCH_JSON ? "application/json-patch+json"
                                                : "application/strategic-merge-patch+json",
                     done, arg, NULL, NULL);
}

static int rc_del(struct fatia_client *c, const struct fatia_kind *k, const char *ns,
                  const char *name, const struct fatia_delete_opts *o, fatia_client_done_fn done,
                  void *arg)
{
    struct rclient *rc = (struct rclient *)c;
    struct fatia_buf url = FATIA_BUF_INIT;
    json_t *opts = json_pack("{s:s,s:s}", "kind", "DeleteOptions", "apiVersion", "v1");
    char *body = NULL, *copy;
    int r = path_of(&url, rc, k, ns, name, NULL);

    if (o && (o->uid || o->resource_version)) {
        json_t *pre = json_object();
        if (o->uid)
            json_object_set_new(pre, "uid", json_string(o->uid));
        if (o->resource_version)
            json_object_set_new(pre, "resourceVersion", json_string(o->resource_version));
        json_object_set_new(opts, "preconditions", pre);
    }
    if (o && o->dry_run)
        json_object_set_new(opts, "dryRun", json_pack("[s]", "All"));
    body = r ? NULL : json_dumps(opts, JSON_COMPACT);
    json_decref(opts);
    if (!body) {
        fatia_buf_release(&url);
        return r < 0 ? r : -ENOMEM;
    }
    copy = fatia_xstrdup(body);
    free(body);
    return req_start(rc, "DELETE", &url, copy, "application/json", done, arg, NULL, NULL);
}

/* POST .../namespaces/NS/serviceaccounts/SA/token: the TokenRequest the agent's token manager
 * (agent/satoken.c) makes for a pod's projected serviceAccountToken source, bound to the pod;
 * the control plane's node authorizer and node-restriction hold it to the pods of this node
 * (apiserver/nodeauth.c). A name that is not a DNS-1123 subdomain is never put in the URL (see
 * the top: dot segments). */
static int rc_token_request(struct fatia_client *c, const char *ns, const char *sa,
                            const json_t *req, fatia_client_done_fn done, void *arg)
{
    struct rclient *rc = (struct rclient *)c;
    struct fatia_buf url = FATIA_BUF_INIT;
    char *body, *copy;
    int r;

    if (!ns || !sa || !fatia_noderefs_name_ok(ns) || !fatia_noderefs_name_ok(sa))
        return -EINVAL;
    r = path_of(&url, rc, &fatia_kind_serviceaccount, ns, sa, "token");
    body = r ? NULL : json_dumps(req, JSON_COMPACT);
    if (!body) {
        fatia_buf_release(&url);
        return r < 0 ? r : -ENOMEM;
    }
    copy = fatia_xstrdup(body);
    free(body);
    return req_start(rc, "POST", &url, copy, "application/json", done, arg, NULL, NULL);
}

static int rc_watch(struct fatia_client *c, const struct fatia_kind *k, const char *ns,
                    const struct fatia_watch_opts *o, fatia_watch_fn fn, void *arg,
                    struct fatia_client_watch **ret)
{
    struct rclient *rc = (struct rclient *)c;
    struct fatia_client_watch *w = fatia_xcalloc(1, sizeof(*w));

    w->rc = rc;
    w->k = k;
    w->ns = ns ? fatia_xstrdup(ns) : NULL;
    w->label = o && o->label_selector ? fatia_xstrdup(o->label_selector) : NULL;
    w->field = o && o->field_selector ? fatia_xstrdup(o->field_selector) : NULL;
    w->fn = fn;
    w->arg = arg;
    w->rv = o ? o->resource_version : 0;
    fatia_buf_init(&w->line, MAX_BODY);
    w->retry = evtimer_new(rc->base, on_retry, w);
    if (!w->retry) {
        watch_free(w);
        return -ENOMEM;
    }
    /* the first step from the loop, as every answer */
    {
        struct timeval now = {0, 0};
        evtimer_add(w->retry, &now);
    }
    *ret = w;
    return 0;
}

/* now: from outside every libcurl callback (rc_free). Otherwise a stream in flight is removed
 * from the loop (on_retry): this may run inside another transfer's write callback (a pod's
 * event releasing the refs of a ConfigMap's watch), and libcurl forbids removing a handle
 * there. */
static void watch_stop(struct fatia_client_watch *w, bool now)
{
    struct timeval zero = {0, 0};

    if (!w || w->stopped)
        return;
    w->stopped = true;
    evtimer_del(w->retry);
    if (w->cur == (struct rreq *)1)
        return; /* the list's answer finds it stopped; freed then (listed) */
    if (w->busy)
        return; /* inside its own callback: the write callback ends the transfer (stream_done) */
    if (w->cur && !now) {
        evtimer_add(w->retry, &zero);
        return;
    }
    req_free(w->cur);
    w->cur = NULL;
    watch_free(w);
}

static void rc_watch_stop(struct fatia_client_watch *w)
{
    watch_stop(w, false);
}

static void watch_stop_now(struct fatia_client_watch *w)
{
    watch_stop(w, true);
}

/* ---- the cache ---- */

static void cache_key(const json_t *obj, char *buf, size_t n)
{
    const json_t *m = json_object_get(obj, "metadata");
    const char *ns = fatia_json_str(m, "namespace"), *name = fatia_json_str(m, "name");

    snprintf(buf, n, "%s%s%s", ns ? ns : "", ns ? "/" : "", name ? name : "");
}

static void cache_event(void *arg, enum fatia_watch_event t, const json_t *obj, uint64_t rv)
{
    struct cache *ca = arg;
    char key[600];

    (void)rv;
    if (t == FATIA_WATCH_ERROR) { /* history gone: list again */
        json_object_clear(ca->objs);
        ca->w->rv = 0;
        ca->w->gone = false;
        watch_again(ca->w);
        return;
    }
    if (!obj)
        return;
    cache_key(obj, key, sizeof(key));
    if (t == FATIA_WATCH_DELETED)
        json_object_del(ca->objs, key);
    else
        json_object_set_new(ca->objs, key, json_deep_copy(obj));
}

static struct cache *cache_of(struct rclient *rc, const struct fatia_kind *k)
{
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(rc->caches); i++)
        if (rc->caches[i].k == k)
            return &rc->caches[i];
    return NULL;
}

/* ---- the objects the node's pods name ---- */

static bool by_name(const struct fatia_kind *k)
{
    return k == &fatia_kind_secret || k == &fatia_kind_configmap ||
           k == &fatia_kind_persistentvolumeclaim || k == &fatia_kind_persistentvolume;
}

static void ref_key(const struct fatia_kind *k, const char *ns, const char *name, char *buf,
                    size_t n)
{
    snprintf(buf, n, "%s/%s/%s", k->plural, k->namespaced && ns ? ns : "", name);
}

static struct ref *ref_find(struct rclient *rc, const char *key)
{
    for (struct ref *f = rc->refs; f; f = f->next)
        if (!strcmp(f->key, key))
            return f;
    return NULL;
}

static void ref_free(struct ref *f)
{
    if (f->poll)
        event_free(f->poll);
    json_decref(f->obj);
    fatia_free(f->ns);
    fatia_free(f->name);
    fatia_free(f->key);
    fatia_free(f->pv);
    fatia_free(f);
}

static struct ref *ref_hold(struct rclient *rc, const struct fatia_kind *k, const char *ns,
                            const char *name);
static void ref_release(struct rclient *rc, const char *key);

static void ref_set(struct ref *f, const json_t *obj)
{
    json_decref(f->obj);
    f->obj = obj ? json_deep_copy(obj) : NULL;
}

/* A Secret's or ConfigMap's watch, narrowed to its name. */
static void ref_event(void *arg, enum fatia_watch_event t, const json_t *obj, uint64_t rv)
{
    struct ref *f = arg;
    const char *name = fatia_json_str(json_object_get(obj, "metadata"), "name");

    (void)rv;
    if (t == FATIA_WATCH_ERROR) { /* history gone: list again */
        fatia_info("remote: %s: its watch's history is gone: listed again", f->key);
        ref_set(f, NULL);
        f->w->rv = 0;
        f->w->gone = false;
        watch_again(f->w);
        return;
    }
    if (!obj || !name || strcmp(name, f->name))
        return;
    ref_set(f, t == FATIA_WATCH_DELETED ? NULL : obj);
}

static void ref_poll_later(struct ref *f)
{
    struct timeval tv = {POLL_USEC / 1000000, POLL_USEC % 1000000};

    evtimer_add(f->poll, &tv);
}

/* A claim's or volume's GET. */
static void ref_got(void *arg, const struct fatia_client_result *res)
{
    struct ref *f = arg;
    const char *vn;

    f->in_flight = false;
    if (f->dead) {
        ref_free(f);
        return;
    }
    if (res->code == 200)
        ref_set(f, res->obj);
    else if (res->code == 404 || res->code == 403 || res->code == 401)
        ref_set(f, NULL); /* gone, or not this node's any more */
    if (res->code == 403 || res->code == 401)
        fatia_warn("remote get of %s: %d: %s", f->key, res->code,
                   fatia_json_str(res->status, "message"));
    /* 5xx: the last answer stays */
    if (f->k == &fatia_kind_persistentvolumeclaim) {
        char key[600] = "";
        vn = fatia_json_str(json_object_get(f->obj, "spec"), "volumeName");
        if (vn && fatia_noderefs_name_ok(vn))
            ref_key(&fatia_kind_persistentvolume, NULL, vn, key, sizeof(key));
        if (!f->pv || strcmp(f->pv, key)) {
            if (key[0])
                ref_hold(f->rc, &fatia_kind_persistentvolume, NULL, vn);
            if (f->pv)
                ref_release(f->rc, f->pv);
            fatia_free(f->pv);
            f->pv = key[0] ? fatia_xstrdup(key) : NULL;
        }
    }
    ref_poll_later(f);
}

static void ref_poll(evutil_socket_t fd, short what, void *arg)
{
    struct ref *f = arg;

    (void)fd;
    (void)what;
    if (f->in_flight)
        return;
    if (rc_get(&f->rc->c, f->k, f->ns, f->name, ref_got, f) < 0)
        ref_poll_later(f);
    else
        f->in_flight = true;
}

static struct ref *ref_hold(struct rclient *rc, const struct fatia_kind *k, const char *ns,
                            const char *name)
{
    char key[600], fs[600];
    struct ref *f;

    ref_key(k, ns, name, key, sizeof(key));
    f = ref_find(rc, key);
    if (f) {
        f->users++;
        return f;
    }
    f = fatia_xcalloc(1, sizeof(*f));
    f->rc = rc;
    f->k = k;
    f->ns = k->namespaced && ns ? fatia_xstrdup(ns) : NULL;
    f->name = fatia_xstrdup(name);
    f->key = fatia_xstrdup(key);
    f->users = 1;
    if (k == &fatia_kind_secret || k == &fatia_kind_configmap) {
        struct fatia_watch_opts wo = {.field_selector = fs};
        snprintf(fs, sizeof(fs), "metadata.name=%s", name);
        if (rc_watch(&rc->c, k, f->ns, &wo, ref_event, f, &f->w) < 0)
            f->w = NULL; /* out of memory: never fetched, the pod waits */
    } else {
        f->poll = evtimer_new(rc->base, ref_poll, f);
        if (f->poll) {
            struct timeval now = {0, 0};
            evtimer_add(f->poll, &now);
        }
    }
    f->next = rc->refs;
    rc->refs = f;
    fatia_info("remote: %s: named by a pod of the node: fetched by name", f->key);
    return f;
}

static void ref_release(struct rclient *rc, const char *key)
{
    struct ref **pp = &rc->refs, *f;

    while (*pp && strcmp((*pp)->key, key))
        pp = &(*pp)->next;
    f = *pp;
    if (!f || --f->users)
        return;
    *pp = f->next;
    fatia_info("remote: %s: no pod of the node names it any more: no longer fetched", f->key);
    rc_watch_stop(f->w);
    f->w = NULL;
    if (f->poll)
        evtimer_del(f->poll);
    if (f->pv)
        ref_release(rc, f->pv);
    if (f->in_flight)
        f->dead = true; /* ref_got frees it */
    else
        ref_free(f);
}

static const struct fatia_kind *ref_kind(const char *plural)
{
    static const struct fatia_kind *const ks[] = {&fatia_kind_secret, &fatia_kind_configmap,
                                                  &fatia_kind_persistentvolumeclaim};

    for (size_t i = 0; i < FATIA_ARRAY_SIZE(ks); i++)
        if (!strcmp(ks[i]->plural, plural))
            return ks[i];
    return NULL;
}

static void hold_all(struct rclient *rc, const json_t *refs)
{
    const char *key;
    json_t *v;

    json_object_foreach((json_t *)refs, key, v)
    {
        const struct fatia_kind *k = ref_kind(json_string_value(json_array_get(v, 0)));
        if (k)
            ref_hold(rc, k, json_string_value(json_array_get(v, 1)),
                     json_string_value(json_array_get(v, 2)));
    }
}

static void release_all(struct rclient *rc, const json_t *refs)
{
    const char *key;
    json_t *v;

    json_object_foreach((json_t *)refs, key, v)
    {
        if (ref_kind(json_string_value(json_array_get(v, 0))))
            ref_release(rc, key);
    }
}

/* The node's pods: each one's references held while it exists (new ones before old ones are
 * let go, so a ref both name is never dropped in between). */
static void pod_event(void *arg, enum fatia_watch_event t, const json_t *obj, uint64_t rv)
{
    struct rclient *rc = arg;
    const char *key;
    char pk[600];
    json_t *v;

    (void)rv;
    if (t == FATIA_WATCH_ERROR) { /* history gone: list again; the old set goes at the bookmark */
        fatia_info("remote: the node's pods: the watch's history is gone: listed again");
        if (!rc->pods_old) {
            rc->pods_old = rc->pods;
            rc->pods = json_object();
        } else {
            json_object_foreach(rc->pods, key, v)
            {
                release_all(rc, v);
            }
            json_object_clear(rc->pods);
        }
        rc->pod_w->rv = 0;
        rc->pod_w->gone = false;
        watch_again(rc->pod_w);
        return;
    }
    if (t == FATIA_WATCH_BOOKMARK) {
        if (rc->pods_old) {
            json_object_foreach(rc->pods_old, key, v)
            {
                release_all(rc, v);
            }
            json_decref(rc->pods_old);
            rc->pods_old = NULL;
        }
        return;
    }
    if (!obj)
        return;
    cache_key(obj, pk, sizeof(pk));
    if (t == FATIA_WATCH_DELETED) {
        v = json_object_get(rc->pods, pk);
        if (v)
            release_all(rc, v);
        json_object_del(rc->pods, pk);
        return;
    }
    v = json_object();
    if (!v || fatia_noderefs_of_pod(obj, v) < 0) {
        json_decref(v);
        return;
    }
    hold_all(rc, v);
    {
        json_t *old = json_object_get(rc->pods, pk);
        if (old)
            release_all(rc, old);
    }
    json_object_set_new(rc->pods, pk, v);
}

static const json_t *rc_cached(struct fatia_client *c, const struct fatia_kind *k, const char *ns,
                               const char *name)
{
    struct cache *ca = cache_of((struct rclient *)c, k);
    char key[600];

    if (name && by_name(k)) {
        struct ref *f;
        ref_key(k, ns, name, key, sizeof(key));
        f = ref_find((struct rclient *)c, key);
        return f ? f->obj : NULL;
    }
    if (!ca || !name)
        return NULL;
    snprintf(key, sizeof(key), "%s%s%s", k->namespaced && ns ? ns : "",
             k->namespaced && ns ? "/" : "", name);
    return json_object_get(ca->objs, key);
}

static int rc_cached_each(struct fatia_client *c, const struct fatia_kind *k, const char *ns,
                          void (*fn)(void *arg, const json_t *obj), void *arg)
{
    struct cache *ca = cache_of((struct rclient *)c, k);
    const char *key;
    json_t *v;

    json_t *nsv = ns ? json_string(ns) : NULL;

    if (!ca) {
        json_decref(nsv);
        return -ENOTSUP;
    }
    json_object_foreach(ca->objs, key, v)
    {
        if (ns && k->namespaced &&
            !json_equal(json_object_get(json_object_get(v, "metadata"), "namespace"), nsv))
            continue;
        fn(arg, v);
    }
    json_decref(nsv);
    return 0;
}

static void rc_free(struct fatia_client *c)
{
    struct rclient *rc = (struct rclient *)c;

    for (size_t i = 0; i < FATIA_ARRAY_SIZE(rc->caches); i++) {
        watch_stop_now(rc->caches[i].w);
        json_decref(rc->caches[i].objs);
    }
    watch_stop_now(rc->pod_w);
    while (rc->refs) {
        struct ref *f = rc->refs;
        rc->refs = f->next;
        watch_stop_now(f->w);
        ref_free(f); /* a GET in flight is never answered: the multi handle goes below */
    }
    json_decref(rc->pods);
    json_decref(rc->pods_old);
    if (rc->timer)
        event_free(rc->timer);
    if (rc->multi)
        curl_multi_cleanup(rc->multi);
    for (size_t i = 0; i < rc->n_servers; i++)
        fatia_free(rc->servers[i]);
    fatia_free(rc->servers);
    fatia_free(rc->auth);
    fatia_free(rc->ca);
    fatia_free(rc);
}

static const struct fatia_client_ops ops = {
    .get = rc_get,
    .list = rc_list,
    .write = rc_write,
    .patch = rc_patch,
    .del = rc_del,
    .watch = rc_watch,
    .watch_stop = rc_watch_stop,
    .cached = rc_cached,
    .cached_each = rc_cached_each,
    .free = rc_free,
    .token_request = rc_token_request,
};

int fatia_remote_client_new(struct event_base *base, const struct fatia_remote_opts *o,
                            struct fatia_client **ret, char *why, size_t why_n)
{
    struct rclient *rc;
    const char *p;
    size_t n;

    if (!o->server || !o->token || !*o->token) {
        snprintf(why, why_n, "--server must be an https:// URL and the token not empty");
        return -EINVAL;
    }
    for (p = o->server;; p += n + 1) { /* URL[,URL...]: each an https:// URL */
        n = strcspn(p, ",");
        if (n < 9 || strncmp(p, "https://", 8)) {
            snprintf(why, why_n,
                     "--server must be an https:// URL (or several, comma-separated) "
                     "and the token not empty");
            return -EINVAL;
        }
        if (!p[n])
            break;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    rc = fatia_xcalloc(1, sizeof(*rc));
    rc->c.ops = &ops;
    rc->base = base;
    n = 1;
    for (p = o->server; *p; p++)
        n += *p == ',';
    rc->servers = fatia_xcalloc(n, sizeof(*rc->servers));
    for (p = o->server;; p += n + 1) {
        size_t len = n = strcspn(p, ",");
        char *u = fatia_xmalloc(len + 1);
        memcpy(u, p, len);
        u[len] = '\0';
        while (len && u[len - 1] == '/')
            u[--len] = '\0';
        rc->servers[rc->n_servers++] = u;
        if (!p[n])
            break;
    }
    rc->server = rc->servers[0];
    n = strlen(o->token) + 32;
    rc->auth = fatia_xmalloc(n);
    snprintf(rc->auth, n, "Authorization: Bearer %s", o->token);
    rc->ca = o->ca ? fatia_xstrdup(o->ca) : NULL;
    rc->multi = curl_multi_init();
    rc->timer = evtimer_new(base, on_timer, rc);
    if (!rc->multi || !rc->timer) {
        rc_free(&rc->c);
        snprintf(why, why_n, "out of memory");
        return -ENOMEM;
    }
    curl_multi_setopt(rc->multi, CURLMOPT_SOCKETFUNCTION, sock_cb);
    curl_multi_setopt(rc->multi, CURLMOPT_SOCKETDATA, rc);
    curl_multi_setopt(rc->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
    curl_multi_setopt(rc->multi, CURLMOPT_TIMERDATA, rc);
    rc->caches[0].k = &fatia_kind_node;
    rc->caches[1].k = fatia_kind_find("resource.k8s.io/v1", "ResourceSlice", NULL);
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(rc->caches); i++) {
        rc->caches[i].objs = json_object();
        if (!rc->caches[i].k || !rc->caches[i].objs ||
            rc_watch(&rc->c, rc->caches[i].k, NULL, NULL, cache_event, &rc->caches[i],
                     &rc->caches[i].w) < 0) {
            rc_free(&rc->c);
            snprintf(why, why_n, "out of memory");
            return -ENOMEM;
        }
    }
    rc->pods = json_object();
    if (o->node) {
        char fs[400];
        snprintf(fs, sizeof(fs), "spec.nodeName=%s", o->node);
        if (!rc->pods || rc_watch(&rc->c, &fatia_kind_pod, NULL,
                                  &(struct fatia_watch_opts){.field_selector = fs}, pod_event, rc,
                                  &rc->pod_w) < 0) {
            rc_free(&rc->c);
            snprintf(why, why_n, "out of memory");
            return -ENOMEM;
        }
    }
    *ret = &rc->c;
    return 0;
}
