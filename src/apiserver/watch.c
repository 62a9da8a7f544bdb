/*
 * apiserver/watch.c: the watch history and watchers (HTTP streams and in-process callbacks).
 *
 * History: a ring of the newest committed events (s->ring, capacity opts.watch_history). Every
 * event with rv > history_floor is in the ring; a watch that starts from rv >= floor replays the
 * ring's events after rv and then follows live ones, one that starts further back gets 410 Gone
 * (reason Expired) and must list again, exactly as upstream's watch cache answers.
 *
 * Watchers hang off their kind's table. Each committed event is offered to them in rv order; a
 * watcher with selectors sees upstream's transitions: an object that starts matching arrives as
 * ADDED, one that stops matching as DELETED. An HTTP watcher's events go straight into its
 * connection's output; the HTTP layer drops a client more than max_stream_backlog behind, and the
 * watcher goes with it, so a slow client costs bounded memory and never stalls the others. An
 * in-process watcher's events are queued and delivered from a deferred loop callback, so
 * callbacks never run inside a commit (and may write, or stop the watch, freely).
 *
 * Memory. An event is encoded once (wevent.line, reference-counted) and every HTTP stream that
 * sends it holds a reference in its output instead of a copy, so 50 watchers of a 2.6 MB object
 * cost 2.6 MB, not 130. Besides the per-stream cap (max_stream_backlog), the unsent bytes of all
 * HTTP watches together stay within opts.watch_budget: when an event would take them past it,
 * the watchers furthest behind are dropped first (their connections closed at once, so their
 * memory goes with them) until it fits. Dropped watchers are marked dead and freed once the event
 * has been offered to all (fatia_api_history_publish walks the list). After big drops and closes, freed
 * memory is given back to the system (malloc_trim), so that RSS falls once slow watchers go.
 * Rejected: a budget per namespace (one tenant's slow watchers would still crowd out nobody
 * else's, but the total would grow with tenants), and copying the object per watcher.
 *
 * Watcher life: start (replay) -> live -> ended by timeout (stream ends cleanly, the client
 * re-watches), by the client closing, by being dropped for slowness or for the budget, or by
 * shutdown.
 */
#include "base/compat.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <malloc.h>

#include "apiserver/internal.h"
#include "apiserver/protobuf.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"

struct qevent {
    enum fatia_watch_event type;
    struct objver *obj; /* NULL for BOOKMARK */
    uint64_t rv;
};

struct watcher {
    struct fatia_apiserver *s;
    struct rtable *t;
    char *ns;
    struct filter f;
    const struct fatia_kind_version *ver;
    bool table;
    bool pb; /* the stream is protobuf watch frames (protobuf.h); never with table */
    int include_object;
    bool bookmarks;
    uint64_t rv; /* the newest rv this watcher has been offered */
    /* HTTP */
    struct fatia_api_http_req *req;
    /* in-process */
    fatia_watch_fn fn;
    void *fn_arg;
    struct event *flush_ev;
    FATIA_VEC(struct qevent) queue;
    bool delivering;
    bool stopped;
    bool replaying; /* initial state and history: as long as a list, not bounded by the backlog */
    bool dead;      /* dropped for the budget: its connection is gone, freed by the sweep */

    struct event *timeout_ev;
    struct watcher *prev, *next;
};

static const char *const type_names[] = {"", "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};

/* An encoded event, shared by the streams that send it. */
struct wline {
    size_t refs;
    size_t len;
    char data[];
};

static void wline_unref(struct wline *l)
{
    if (l && --l->refs == 0)
        fatia_free(l);
}

static void wline_unref_cb(const void *data, size_t n, void *arg)
{
    (void)data;
    (void)n;
    wline_unref(arg);
}

/* ---- giving memory back ---- */

static void trim_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    malloc_trim(0);
}

/* Some MiB were freed (a big backlog went): give them back to the system soon (coalesced). */
static void schedule_trim(struct fatia_apiserver *s)
{
    struct timeval soon = {0, 200000};

    if (!s->trim_ev && !(s->trim_ev = evtimer_new(s->base, trim_cb, s)))
        return;
    if (!event_pending(s->trim_ev, EV_TIMEOUT, NULL))
        evtimer_add(s->trim_ev, &soon);
}

void fatia_api_history_init(struct fatia_apiserver *s)
{
    s->ring_cap = s->o.watch_history;
    s->ring = fatia_xcalloc(s->ring_cap, sizeof(*s->ring));
    s->ring_head = s->ring_n = 0;
}

static void wevent_release(struct wevent *ev)
{
    fatia_api_objver_unref(ev->obj);
    fatia_api_objver_unref(ev->old);
    wline_unref(ev->line);
    memset(ev, 0, sizeof(*ev));
}

void fatia_api_history_release(struct fatia_apiserver *s)
{
    for (size_t i = 0; i < s->ring_n; i++)
        wevent_release(&s->ring[(s->ring_head + i) % s->ring_cap]);
    fatia_free(s->ring);
    s->ring = NULL;
    s->ring_n = 0;
    if (s->trim_ev)
        event_free(s->trim_ev);
    s->trim_ev = NULL;
}

/* ---- encoding ---- */

/* A JSON event line -> its protobuf watch frame (the object as the JSON form renders it). */
static int pb_reencode(const char *type, struct evbuffer *json_obj, struct evbuffer *out)
{
    struct fatia_buf b = FATIA_BUF_INIT;
    size_t n = evbuffer_get_length(json_obj);
    json_t *obj = fatia_json_loadb((const char *)evbuffer_pullup(json_obj, -1), n, 0, NULL);
    int r = obj ? fatia_api_pb_watch_frame(type, obj, &b) : -ENOMEM;

    if (!r)
        r = evbuffer_add(out, b.p, b.len) < 0 ? -ENOMEM : 0;
    json_decref(obj);
    fatia_buf_release(&b);
    return r;
}

static int encode(struct watcher *w, const char *type, const struct objver *v, struct evbuffer *out)
{
    int r;

    if (w->pb) {
        struct evbuffer *obj = evbuffer_new();
        r = obj ? fatia_api_render_object(w->t, w->ver, v, obj) : -ENOMEM;
        if (r >= 0)
            r = pb_reencode(type, obj, out);
        if (obj)
            evbuffer_free(obj);
        return r < 0 ? r : 0;
    }

    evbuffer_add_printf(out, "{\"type\":\"%s\",\"object\":", type);
    if (w->table) {
        json_t *tbl = json_pack(
            "{s:s,s:s,s:{s:s},s:o,s:[o]}", "kind", "Table", "apiVersion", "meta.k8s.io/v1",
            "metadata", "resourceVersion", "", "columnDefinitions",
            fatia_api_table_columns(w->t->kind), "rows",
            fatia_api_table_row(w->t, w->ver, v, w->include_object, fatia_now_real_usec()));
        char rvs[24];
        if (!tbl)
            return -ENOMEM;
        snprintf(rvs, sizeof(rvs), "%" PRIu64, v->rv);
        json_object_set_new(json_object_get(tbl, "metadata"), "resourceVersion", json_string(rvs));
        r = fatia_api_evbuffer_add_json(out, tbl);
        json_decref(tbl);
    } else {
        r = fatia_api_render_object(w->t, w->ver, v, out);
    }
    if (r < 0)
        return r;
    evbuffer_add(out, "}\n", 2);
    return 0;
}

static int encode_bookmark(struct watcher *w, uint64_t rv, bool initial_end, struct evbuffer *out)
{
    char av[128];

    if (w->ver)
        snprintf(av, sizeof(av), "%s%s%s", w->t->kind->group, w->t->kind->group[0] ? "/" : "",
                 w->ver->version);
    else
        fatia_kind_api_version(w->t->kind, av, sizeof(av));
    if (w->pb) {
        struct evbuffer *obj = evbuffer_new();
        int r;
        if (!obj)
            return -ENOMEM;
        evbuffer_add_printf(
            obj,
            "{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":{"
            "\"resourceVersion\":\"%" PRIu64 "\"%s}}",
            w->t->kind->kind, av, rv,
            initial_end ? ",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}" : "");
        r = pb_reencode("BOOKMARK", obj, out);
        evbuffer_free(obj);
        return r;
    }
    evbuffer_add_printf(out,
                        "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"%s\",\"apiVersion\":\"%s\","
                        "\"metadata\":{\"resourceVersion\":\"%" PRIu64 "\"%s}}}\n",
                        w->table ? "Table" : w->t->kind->kind, w->table ? "meta.k8s.io/v1" : av, rv,
                        initial_end ? ",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}"
                                    : "");
    return 0;
}

/* ---- lifecycle ---- */

static void watcher_unlink(struct watcher *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else if (w->t->watchers == w)
        w->t->watchers = w->next;
    if (w->next)
        w->next->prev = w->prev;
    w->prev = w->next = NULL;
}

static void watcher_free(struct watcher *w)
{
    if (w->timeout_ev)
        event_free(w->timeout_ev);
    if (w->flush_ev)
        event_free(w->flush_ev);
    for (size_t i = 0; i < w->queue.n; i++)
        fatia_api_objver_unref(w->queue.v[i].obj);
    FATIA_VEC_RELEASE(&w->queue);
    fatia_api_filter_release(&w->f);
    fatia_free(w->ns);
    fatia_free(w);
}

/* Ends an HTTP watcher: unlinks it, ends its stream (if still there) and frees it. */
static void http_watcher_end(struct watcher *w)
{
    struct fatia_api_http_req *req = w->req;

    watcher_unlink(w);
    w->req = NULL;
    if (req) {
        if (fatia_api_http_stream_backlog(req) > 4 * 1024 * 1024)
            schedule_trim(w->s);
        fatia_api_http_req_set_close_cb(req, NULL, NULL);
        fatia_api_http_stream_end(req);
    }
    watcher_free(w);
}

static void http_close_cb(void *arg)
{
    struct watcher *w = arg;

    schedule_trim(w->s); /* the connection goes with its unsent bytes */
    http_watcher_end(w);
}

/* Drops w's connection at once (its unsent bytes freed with it); w stays linked, dead, until
 * the sweep frees it. */
static void watcher_drop(struct watcher *w)
{
    struct fatia_api_http_req *req = w->req;

    w->dead = true;
    w->req = NULL;
    w->s->watch_sweep = true;
    if (req) {
        fatia_api_http_req_set_close_cb(req, NULL, NULL);
        fatia_api_http_stream_drop(req);
        fatia_api_http_stream_end(req); /* frees the request, as after -ENOBUFS */
    }
    schedule_trim(w->s);
}

static void watch_sweep(struct fatia_apiserver *s)
{
    if (!s->watch_sweep)
        return;
    s->watch_sweep = false;
    for (size_t i = 0; i < s->n_tables; i++) {
        struct watcher *w, *next;
        for (w = s->tables[i].watchers; w; w = next) {
            next = w->next;
            if (w->dead) {
                watcher_unlink(w);
                watcher_free(w);
            }
        }
    }
}

/* Unsent bytes of every live HTTP watch. */
static size_t watch_backlog_total(struct fatia_apiserver *s)
{
    size_t sum = 0;

    for (size_t i = 0; i < s->n_tables; i++)
        for (struct watcher *w = s->tables[i].watchers; w; w = w->next)
            if (w->req && !w->dead)
                sum += fatia_api_http_stream_backlog(w->req);
    return sum;
}

/* Makes room for n more bytes: drops the live HTTP watchers furthest behind until the total
 * fits the budget (or none is behind). False when self was dropped. */
static bool enforce_budget(struct fatia_apiserver *s, struct watcher *self, size_t n)
{
    bool self_alive = true;

    while (s->watch_bytes + n > s->o.watch_budget) {
        struct watcher *worst = NULL;
        size_t most = 0;
        for (size_t i = 0; i < s->n_tables; i++)
            for (struct watcher *w = s->tables[i].watchers; w; w = w->next) {
                size_t b;
                if (!w->req || w->dead)
                    continue;
                b = fatia_api_http_stream_backlog(w->req);
                if (b > most) {
                    most = b;
                    worst = w;
                }
            }
        if (!worst)
            break;
        s->watch_bytes = s->watch_bytes > most ? s->watch_bytes - most : 0;
        if (worst == self)
            self_alive = false;
        watcher_drop(worst);
    }
    return self_alive;
}

static void timeout_cb(evutil_socket_t fd, short what, void *arg)
{
    struct watcher *w = arg;

    (void)fd;
    (void)what;
    /* only HTTP watches have a timeout: the client re-watches from where it was */
    if (w->req)
        http_watcher_end(w);
}

/* ---- delivery ---- */

static void local_flush_cb(evutil_socket_t fd, short what, void *arg);

/* Offers one event (already transformed for this watcher) to w. Returns false when w is gone. */
static bool deliver(struct watcher *w, enum fatia_watch_event type, struct objver *v,
                    struct wevent *ev)
{
    if (w->dead)
        return false;
    if (w->req) {
        bool common = ev && (int)type == (int)ev->type && !w->table && !w->ver && !w->pb;
        int r = 0;
        if (common && !ev->line) {
            struct evbuffer *out = evbuffer_new();
            size_t n;
            if (!out)
                return true;
            r = encode(w, type_names[type], v, out);
            n = evbuffer_get_length(out);
            if (r == 0 && (ev->line = fatia_malloc(sizeof(*ev->line) + n))) {
                ev->line->refs = 1; /* the history's */
                ev->line->len = n;
                memcpy(ev->line->data, evbuffer_pullup(out, -1), n);
            }
            evbuffer_free(out);
            if (r < 0 || !ev->line)
                return true;
        }
        if (common) {
            size_t n = ev->line->len;
            if (!w->replaying && !enforce_budget(w->s, w, n))
                return false;
            ev->line->refs++;
            r = fatia_api_http_stream_write_ref(w->req, ev->line->data, n, !w->replaying,
                                                wline_unref_cb, ev->line);
            if (r < 0)
                ev->line->refs--;
            else
                w->s->watch_bytes += n;
        } else {
            struct evbuffer *out = evbuffer_new();
            size_t n;
            if (!out)
                return true;
            r = encode(w, type_names[type], v, out);
            n = evbuffer_get_length(out);
            if (r == 0 && !w->replaying && !enforce_budget(w->s, w, n)) {
                evbuffer_free(out);
                return false;
            }
            if (r == 0) {
                const char *p = (const char *)evbuffer_pullup(out, -1);
                r = w->replaying ? fatia_api_http_stream_write_unbounded(w->req, p, n)
                                 : fatia_api_http_stream_write(w->req, p, n);
                if (r == 0)
                    w->s->watch_bytes += n;
            }
            evbuffer_free(out);
        }
        if (r == -ENOBUFS || r == -EPIPE) {
            if (r == -ENOBUFS)
                schedule_trim(w->s);
            http_watcher_end(w);
            return false;
        }
        return true;
    }
    if (w->stopped)
        return true;
    if (FATIA_VEC_PUSH(&w->queue,
                       ((struct qevent){type, fatia_api_objver_ref(v), v ? v->rv : w->rv})) < 0) {
        fatia_api_objver_unref(v);
        return true;
    }
    event_active(w->flush_ev, EV_TIMEOUT, 0);
    return true;
}

/* Offers a committed event to w with the selector transitions. */
static bool offer(struct watcher *w, struct wevent *ev)
{
    const json_t *nt = ev->obj->tree;
    bool nm, om;

    /* replica mode: the ops of one batch share its etcd revision, so an event at the
     * watcher's rv is the next op of the batch being published, not one it has had */
    if (ev->rv < w->rv || (ev->rv == w->rv && !w->s->replica))
        return true;
    w->rv = ev->rv;
    if (w->ns && w->t->kind->namespaced &&
        strcmp(nz(fatia_json_str(json_object_get(nt, "metadata"), "namespace")), w->ns))
        return true;
    nm = fatia_api_filter_match(&w->f, nt);
    switch (ev->type) {
    case FATIA_STORE_ADDED:
        return nm ? deliver(w, FATIA_WATCH_ADDED, ev->obj, ev) : true;
    case FATIA_STORE_DELETED:
        return nm ? deliver(w, FATIA_WATCH_DELETED, ev->obj, ev) : true;
    case FATIA_STORE_MODIFIED:
        om = ev->old ? fatia_api_filter_match(&w->f, ev->old->tree) : nm;
        if (nm && om)
            return deliver(w, FATIA_WATCH_MODIFIED, ev->obj, ev);
        if (nm)
            return deliver(w, FATIA_WATCH_ADDED, ev->obj, ev);
        if (om)
            return deliver(w, FATIA_WATCH_DELETED, ev->obj, ev);
        return true;
    }
    return true;
}

void fatia_api_history_publish(struct fatia_apiserver *s, struct rtable *t,
                               enum fatia_store_event type, struct objver *obj, struct objver *old)
{
    struct wevent *ev;
    struct watcher *w, *next;

    if (s->ring_n == s->ring_cap) {
        struct wevent *oldest = &s->ring[s->ring_head];
        s->history_floor = oldest->rv;
        wevent_release(oldest);
        s->ring_head = (s->ring_head + 1) % s->ring_cap;
        s->ring_n--;
    }
    ev = &s->ring[(s->ring_head + s->ring_n) % s->ring_cap];
    *ev = (struct wevent){.rv = obj->rv,
                          .type = type,
                          .t = t,
                          .obj = fatia_api_objver_ref(obj),
                          .old = fatia_api_objver_ref(old)};
    s->ring_n++;
    s->watch_bytes = t->watchers ? watch_backlog_total(s) : 0;
    for (w = t->watchers; w; w = next) {
        next = w->next;
        if (!w->dead)
            offer(w, ev);
    }
    watch_sweep(s);
}

static void local_flush_cb(evutil_socket_t fd, short what, void *arg)
{
    struct watcher *w = arg;
    size_t i;

    (void)fd;
    (void)what;
    w->delivering = true;
    for (i = 0; i < w->queue.n && !w->stopped; i++) {
        struct qevent *q = &w->queue.v[i];
        w->fn(w->fn_arg, q->type, q->obj ? q->obj->tree : NULL, q->rv);
    }
    for (size_t j = 0; j < w->queue.n; j++)
        fatia_api_objver_unref(w->queue.v[j].obj);
    w->queue.n = 0;
    w->delivering = false;
    if (w->stopped)
        watcher_free(w);
}

/* ---- starting a watch ---- */

/* The rv a watch asks to start from: 0 for "now, with the current state first". */
static int start_rv(const struct fatia_api_query *q, uint64_t *ret)
{
    if (!q->resource_version || !strcmp(q->resource_version, "0")) {
        *ret = 0;
        return 0;
    }
    return fatia_parse_u64(q->resource_version, ret);
}

/* Sends the current objects as ADDED (sorted, like a list), up to the committed rv. */
static bool send_initial(struct watcher *w)
{
    size_t lo, hi;

    fatia_api_rtable_range(w->t, w->ns, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        struct entry *e = w->t->entries.v[i];
        if (!e->committed || !fatia_api_filter_match(&w->f, e->committed->tree))
            continue;
        if (!deliver(w, FATIA_WATCH_ADDED, e->committed, NULL))
            return false;
    }
    return true;
}

/* Replays the history after w->rv. */
static bool replay(struct watcher *w)
{
    struct fatia_apiserver *s = w->s;

    for (size_t i = 0; i < s->ring_n; i++) {
        struct wevent *ev = &s->ring[(s->ring_head + i) % s->ring_cap];
        if (ev->t != w->t || ev->rv <= w->rv)
            continue;
        if (!offer(w, ev))
            return false;
    }
    w->rv = s->rv_committed > w->rv ? s->rv_committed : w->rv;
    return true;
}

static struct watcher *watcher_new(struct fatia_apiserver *s, struct rtable *t, const char *ns)
{
    struct watcher *w = fatia_calloc(1, sizeof(*w));

    if (!w)
        return NULL;
    w->s = s;
    w->t = t;
    if (ns && !(w->ns = fatia_strdup(ns))) {
        fatia_free(w);
        return NULL;
    }
    return w;
}

static void watcher_link(struct watcher *w)
{
    w->next = w->t->watchers;
    if (w->next)
        w->next->prev = w;
    w->t->watchers = w;
}

void fatia_api_watch_start_http(const struct opctx *c, const struct fatia_api_query *q,
                                const char *name, bool table, struct fatia_api_http_req *req,
                                struct opres *err)
{
    struct fatia_apiserver *s = c->s;
    struct watcher *w;
    uint64_t rv;
    fatia_usec_t timeout;
    struct timeval tv;
    bool initial;
    char fs[1024];
    int r;

    if (fatia_api_authorize_collection(c, "watch", q, err) < 0)
        return;
    if (start_rv(q, &rv) < 0) {
        fatia_api_opres_fail(err, 400, "BadRequest", "invalid resourceVersion \"%s\"",
                             q->resource_version);
        return;
    }
    if (rv && rv < s->history_floor) {
        fatia_api_opres_fail(err, 410, "Expired",
                             "too old resource version: %" PRIu64 " (%" PRIu64 ")", rv,
                             s->history_floor + 1);
        return;
    }
    w = watcher_new(s, c->t, c->ns);
    if (!w) {
        fatia_api_opres_from_errno(err, -ENOMEM, "watch");
        return;
    }
    if (name) {
        /* GET .../NAME?watch=1: a watch of one object */
        struct fatia_api_query one = *q;
        snprintf(fs, sizeof(fs), "metadata.name=%s%s%s", name, q->field_selector ? "," : "",
                 q->field_selector ? q->field_selector : "");
        one.field_selector = fs;
        r = fatia_api_filter_from_query(&w->f, &one, err);
    } else {
        r = fatia_api_filter_from_query(&w->f, q, err);
    }
    if (r < 0) {
        watcher_free(w);
        return;
    }
    w->ver = c->ver;
    w->table = table;
    w->include_object = q->include_object;
    w->bookmarks = q->allow_bookmarks;
    w->req = req;
    w->timeout_ev = evtimer_new(s->base, timeout_cb, w);
    if (!w->timeout_ev) {
        watcher_free(w);
        fatia_api_opres_from_errno(err, -ENOMEM, "watch");
        return;
    }
    fatia_api_http_req_set_close_cb(req, http_close_cb, w);
    {
        const struct fatia_str *acc = fatia_http_header_get(fatia_api_http_req_head(req), "Accept");
        char av[128];
        if (c->ver)
            snprintf(av, sizeof(av), "%s%s%s", c->t->kind->group, c->t->kind->group[0] ? "/" : "",
                     c->ver->version);
        else
            fatia_kind_api_version(c->t->kind, av, sizeof(av));
        w->pb = !table && acc && fatia_api_pb_accepted(acc->p, acc->n) &&
                fatia_api_pb_for_kind(av, c->t->kind->kind);
    }
    fatia_api_http_add_header(req, "Content-Type",
                              w->pb ? FATIA_API_PB_MEDIA ";stream=watch" : "application/json");
    fatia_api_http_stream_start(req, 200, NULL);
    initial = rv == 0;
    w->rv = initial ? s->rv_committed : rv;
    w->replaying = true;
    if (initial && !send_initial(w))
        return;
    if (!initial && !replay(w))
        return;
    w->replaying = false;
    if (q->send_initial_events && w->bookmarks) {
        struct evbuffer *out = evbuffer_new();
        encode_bookmark(w, s->rv_committed, true, out);
        r = fatia_api_http_stream_write(req, evbuffer_pullup(out, -1), evbuffer_get_length(out));
        evbuffer_free(out);
        if (r < 0) {
            http_watcher_end(w);
            return;
        }
    }
    timeout = q->timeout_seconds >= 0 ? q->timeout_seconds * FATIA_USEC_PER_SEC
                                      : 1800 * FATIA_USEC_PER_SEC;
    tv = (struct timeval){.tv_sec = timeout / FATIA_USEC_PER_SEC};
    evtimer_add(w->timeout_ev, &tv);
    watcher_link(w);
}

void fatia_api_watch_send_bookmarks(struct fatia_apiserver *s)
{
    for (size_t i = 0; i < s->n_tables; i++) {
        struct watcher *w, *next;
        for (w = s->tables[i].watchers; w; w = next) {
            next = w->next;
            if (!w->bookmarks)
                continue;
            if (w->req) {
                struct evbuffer *out = evbuffer_new();
                int r;
                if (!out)
                    continue;
                encode_bookmark(w, s->rv_committed, false, out);
                r = fatia_api_http_stream_write(w->req, evbuffer_pullup(out, -1),
                                                evbuffer_get_length(out));
                evbuffer_free(out);
                if (r < 0)
                    http_watcher_end(w);
            } else {
                w->rv = s->rv_committed > w->rv ? s->rv_committed : w->rv;
                deliver(w, FATIA_WATCH_BOOKMARK, NULL, NULL);
            }
        }
    }
}

void fatia_api_watch_shutdown_all(struct fatia_apiserver *s)
{
    for (size_t i = 0; i < s->n_tables; i++) {
        while (s->tables[i].watchers) {
            struct watcher *w = s->tables[i].watchers;
            if (w->req) {
                http_watcher_end(w);
            } else {
                watcher_unlink(w);
                w->stopped = true;
                if (!w->delivering)
                    watcher_free(w);
            }
        }
    }
}

/* ---- in-process watches (client.c) ---- */

struct fatia_client_watch;

int fatia_api_watch_start_local(struct fatia_apiserver *s, struct rtable *t, const char *ns,
                                const struct fatia_api_query *q, uint64_t rv, fatia_watch_fn fn,
                                void *arg, struct watcher **ret, struct opres *err)
{
    struct watcher *w;

    if (rv && rv < s->history_floor) {
        fatia_api_opres_fail(err, 410, "Expired",
                             "too old resource version: %" PRIu64 " (%" PRIu64 ")", rv,
                             s->history_floor + 1);
        return -FATIA_E_GONE;
    }
    w = watcher_new(s, t, ns);
    if (!w)
        return -ENOMEM;
    if (fatia_api_filter_from_query(&w->f, q, err) < 0) {
        watcher_free(w);
        return -EINVAL;
    }
    w->fn = fn;
    w->fn_arg = arg;
    w->bookmarks = true;
    w->flush_ev = event_new(s->base, -1, 0, local_flush_cb, w);
    if (!w->flush_ev) {
        watcher_free(w);
        return -ENOMEM;
    }
    w->rv = rv ? rv : s->rv_committed;
    if (!rv) {
        send_initial(w);
        deliver(w, FATIA_WATCH_BOOKMARK, NULL, NULL);
    } else {
        replay(w);
    }
    watcher_link(w);
    *ret = w;
    return 0;
}

void fatia_api_watch_stop_local(struct watcher *w)
{
    if (w->stopped)
        return;
    watcher_unlink(w);
    w->stopped = true;
    if (!w->delivering)
        watcher_free(w);
}
