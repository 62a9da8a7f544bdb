/*
 * controller/runtime.c: informers, work queues, writes and events (see ctl.h for the model).
 *
 * Informer lifecycle:
 *
 *     ctl_start ──watch(rv 0)──► ADDED xN ──► BOOKMARK (synced: sync hooks run) ──► events ...
 *
 * Work queue key states (a key is in at most one of them; "busy" is orthogonal):
 *
 *            fatia_ctlr_wq_add                       popped by process()
 *     idle ─────────► pending ─────────────────────────────────► reconciling ──► idle
 *       ▲  fatia_ctlr_wq_add_after    ▲                     │ busy (writes in flight): parked
 *       └──► delayed ──────┘ timer               ▼
 *                                         dirty ── fatia_ctlr_wq_end (last write answered) ──► pending
 *
 * A failed write requeues its key after a back-off (100 ms doubling to 30 s, per key, plus a
 * jitter of up to half the delay, reset by a reconcile whose writes all succeed); a conflict (409)
 * requeues it after 20 ms doubling to 30 s (a conflict that keeps coming, e.g. a tenant writing
 * the same object in a loop, must not turn into a busy loop). Failure lines are rate-limited per
 * queue (a burst of 20, then 5 a second; the next line says how many were suppressed). Rejected alternatives: a goroutine-style worker per key
 * (there is one loop and no blocking call), and reconciling straight from watch callbacks (a burst
 * of events for one object would reconcile it once per event).
 */
#include "base/compat.h"

#include <event2/event.h>
#include <stdarg.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/backoff.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "base/str.h"
#include "controller/ctl_internal.h"

/* ---- helpers ---- */

void fatia_ctlr_fatia_bin(char *buf, size_t n)
{
    char exe[4000];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    char *slash;

    if (len <= 0) {
        snprintf(buf, n, "fatia");
        return;
    }
    exe[len] = '\0';
    slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    snprintf(buf, n, "%s/fatia", exe);
}

void fatia_ctlr_make_key(const char *ns, const char *name, char *buf, size_t n)
{
    if (ns && *ns)
        snprintf(buf, n, "%s/%s", ns, name ? name : "");
    else
        snprintf(buf, n, "%s", name ? name : "");
}

void fatia_ctlr_obj_key(const json_t *obj, char *buf, size_t n)
{
    fatia_ctlr_make_key(fatia_ctlr_meta_str(obj, "namespace"), fatia_ctlr_meta_str(obj, "name"),
                        buf, n);
}

const char *fatia_ctlr_split_key(const char *key, char *nsbuf, size_t n)
{
    const char *slash = strchr(key, '/');

    if (!slash) {
        if (n)
            nsbuf[0] = '\0';
        return key;
    }
    snprintf(nsbuf, n, "%.*s", (int)(slash - key), key);
    return slash + 1;
}

const char *fatia_ctlr_meta_str(const json_t *obj, const char *field)
{
    return fatia_json_str(json_object_get(obj, "metadata"), field);
}

const char *fatia_ctlr_obj_label(const json_t *obj, const char *label)
{
    return fatia_json_str(json_object_get(json_object_get(obj, "metadata"), "labels"), label);
}

const char *fatia_ctlr_obj_annotation(const json_t *obj, const char *ann)
{
    return fatia_json_str(json_object_get(json_object_get(obj, "metadata"), "annotations"), ann);
}

bool fatia_ctlr_obj_deleting(const json_t *obj)
{
    return fatia_ctlr_meta_str(obj, "deletionTimestamp") != NULL;
}

bool fatia_ctlr_obj_has_finalizer(const json_t *obj, const char *f)
{
    size_t i;
    json_t *v;

    json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "finalizers"), i, v)
    {
        if (json_is_string(v) && !strcmp(json_string_value(v), f))
            return true;
    }
    return false;
}

json_t *fatia_ctlr_obj_without_finalizer(const json_t *obj, const char *f)
{
    json_t *copy = json_deep_copy(obj);
    json_t *meta = copy ? json_object_get(copy, "metadata") : NULL;
    json_t *fin = json_object_get(meta, "finalizers"), *v;
    size_t i;

    json_array_foreach(fin, i, v)
    {
        if (json_is_string(v) && !strcmp(json_string_value(v), f)) {
            json_array_remove(fin, i);
            break;
        }
    }
    if (fin && !json_array_size(fin))
        json_object_del(meta, "finalizers");
    return copy;
}

const json_t *fatia_ctlr_obj_controller_ref(const json_t *obj)
{
    size_t i;
    json_t *r;

    json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "ownerReferences"), i, r)
    {
        if (fatia_json_bool(r, "controller", false))
            return r;
    }
    return NULL;
}

const json_t *fatia_ctlr_cond_get(const json_t *obj, const char *type)
{
    size_t i;
    json_t *c;

    json_array_foreach(json_object_get(json_object_get(obj, "status"), "conditions"), i, c)
    {
        const char *t = fatia_json_str(c, "type");
        if (t && !strcmp(t, type))
            return c;
    }
    return NULL;
}

bool fatia_ctlr_cond_true(const json_t *obj, const char *type)
{
    const char *s = fatia_json_str(fatia_ctlr_cond_get(obj, type), "status");

    return s && !strcmp(s, "True");
}

json_t *fatia_ctlr_json_time(fatia_usec_t t)
{
    char buf[40];

    fatia_time_format_rfc3339(t, false, buf, sizeof(buf));
    return json_string(buf);
}

bool fatia_ctlr_cond_set(json_t *conds, const char *type, const char *status, const char *reason,
                         const char *message, fatia_usec_t now)
{
    size_t i;
    json_t *c;

    json_array_foreach(conds, i, c)
    {
        const char *t = fatia_json_str(c, "type");
        const char *os, *orr, *om;
        if (!t || strcmp(t, type))
            continue;
        os = fatia_json_str(c, "status");
        orr = fatia_json_str(c, "reason");
        om = fatia_json_str(c, "message");
        if (os && !strcmp(os, status) && orr && !strcmp(orr, reason) && om && !strcmp(om, message))
            return false;
        if (!os || strcmp(os, status))
            json_object_set_new(c, "lastTransitionTime", fatia_ctlr_json_time(now));
        json_object_set_new(c, "status", json_string(status));
        json_object_set_new(c, "reason", json_string(reason));
        json_object_set_new(c, "message", json_string(message));
        return true;
    }
    c = json_pack("{s:s,s:s,s:s,s:s,s:o}", "type", type, "status", status, "reason", reason,
                  "message", message, "lastTransitionTime", fatia_ctlr_json_time(now));
    if (c)
        json_array_append_new(conds, c);
    return true;
}

/* ---- informers ---- */

static void item_free(struct informer_item *it)
{
    if (!it)
        return;
    json_decref(it->obj);
    fatia_free(it->key);
    fatia_free(it);
}

/* ---- the owner index ---- */

struct owner_set {
    char *uid;             /* the key of the set in inf->owners */
    struct fatia_strmap m; /* dependent key -> struct informer_item */
};

static void index_del(struct informer *inf, struct informer_item *it)
{
    size_t i;
    json_t *r;

    if (!inf->index_owners || !it->obj)
        return;
    json_array_foreach(json_object_get(json_object_get(it->obj, "metadata"), "ownerReferences"), i,
                       r)
    {
        const char *uid = fatia_json_str(r, "uid");
        struct owner_set *set = uid ? fatia_strmap_get(&inf->owners, uid) : NULL;
        if (!set)
            continue;
        fatia_strmap_del(&set->m, it->key);
        if (set->m.n == 0) {
            fatia_strmap_del(&inf->owners, set->uid);
            fatia_strmap_release(&set->m);
            fatia_free(set->uid);
            fatia_free(set);
        }
    }
}

static void index_add(struct informer *inf, struct informer_item *it)
{
    size_t i;
    json_t *r;

    if (!inf->index_owners || !it->obj)
        return;
    json_array_foreach(json_object_get(json_object_get(it->obj, "metadata"), "ownerReferences"), i,
                       r)
    {
        const char *uid = fatia_json_str(r, "uid");
        struct owner_set *set;
        if (!uid)
            continue;
        set = fatia_strmap_get(&inf->owners, uid);
        if (!set) {
            set = fatia_calloc(1, sizeof(*set));
            if (!set || !(set->uid = fatia_strdup(uid)) ||
                fatia_strmap_put(&inf->owners, set->uid, set) < 0) {
                if (set)
                    fatia_free(set->uid);
                fatia_free(set);
                fatia_error("informer %s: out of memory indexing owners", inf->kind->plural);
                continue;
            }
        }
        if (fatia_strmap_put(&set->m, it->key, it) < 0)
            fatia_error("informer %s: out of memory indexing owners", inf->kind->plural);
    }
}

void fatia_ctlr_informer_index_owners(struct informer *inf)
{
    inf->index_owners = true;
}

const struct fatia_strmap *fatia_ctlr_informer_owned(const struct informer *inf, const char *uid)
{
    const struct owner_set *set = uid ? fatia_strmap_get(&inf->owners, uid) : NULL;

    return set ? &set->m : NULL;
}

static void notify(struct informer *inf, const json_t *old, const json_t *obj)
{
    for (size_t i = 0; i < inf->handlers.n; i++)
        inf->handlers.v[i].fn(inf->handlers.v[i].arg, old, obj);
}

/* Adds or replaces from obj at rv; calls the handlers when it is new. */
static void upsert(struct informer *inf, const json_t *obj, uint64_t rv)
{
    struct informer_item *it;
    char key[600];
    json_t *old;

    fatia_ctlr_obj_key(obj, key, sizeof(key));
    it = fatia_strmap_get(&inf->items, key);
    /* an equal rv with other content: the later op of one batch on etcd replicas (every op of
     * a batch has the batch's revision) */
    if (it && (it->rv > rv || (it->rv == rv && json_equal(it->obj, obj))))
        return;
    if (!it) {
        it = fatia_calloc(1, sizeof(*it));
        if (!it || !(it->key = fatia_strdup(key)) || fatia_strmap_put(&inf->items, it->key, it)) {
            item_free(it);
            fatia_error("informer %s: out of memory, '%s' is not cached", inf->kind->plural, key);
            return;
        }
    }
    index_del(inf, it);
    old = it->obj;
    it->obj = json_incref((json_t *)obj);
    it->rv = rv;
    index_add(inf, it);
    notify(inf, old, obj);
    json_decref(old);
}

static void remove_item(struct informer *inf, const json_t *obj)
{
    struct informer_item *it;
    char key[600];

    fatia_ctlr_obj_key(obj, key, sizeof(key));
    it = fatia_strmap_get(&inf->items, key);
    if (!it)
        return;
    index_del(inf, it);
    fatia_strmap_del(&inf->items, key);
    notify(inf, it->obj, NULL);
    item_free(it);
}

static uint64_t obj_rv(const json_t *obj)
{
    uint64_t rv = 0;
    const char *s = fatia_ctlr_meta_str(obj, "resourceVersion");

    if (s)
        (void)fatia_parse_u64(s, &rv);
    return rv;
}

static void on_watch(void *arg, enum fatia_watch_event type, const json_t *obj, uint64_t rv)
{
    struct informer *inf = arg;

    switch (type) {
    case FATIA_WATCH_ADDED:
    case FATIA_WATCH_MODIFIED:
        if (!rv)
            rv = obj_rv(obj);
        if (rv > inf->rv)
            inf->rv = rv;
        upsert(inf, obj, rv);
        break;
    case FATIA_WATCH_DELETED:
        if (!rv)
            rv = obj_rv(obj);
        if (rv > inf->rv)
            inf->rv = rv;
        remove_item(inf, obj);
        break;
    case FATIA_WATCH_BOOKMARK:
        if (rv > inf->rv)
            inf->rv = rv;
        if (!inf->synced) {
            inf->synced = true;
            fatia_ctlr_informer_synced(inf->ctl, inf);
        }
        break;
    case FATIA_WATCH_ERROR:
        /* the in-process client never drops a watch; a remote one would: start again */
        fatia_warn("watch of %s ended: %s; watching again", inf->kind->plural,
                   fatia_json_str(obj, "message") ? fatia_json_str(obj, "message") : "error");
        inf->watch = NULL;
        fatia_ctlr_informer_restart(inf->ctl, inf);
        break;
    }
}

void fatia_ctlr_informer_observe(struct informer *inf, const json_t *obj, uint64_t rv)
{
    if (!obj || !json_is_object(obj))
        return;
    if (!rv)
        rv = obj_rv(obj);
    if (rv <= inf->rv)
        return; /* the watch has delivered it, or something newer */
    upsert(inf, obj, rv);
}

int fatia_ctlr_informer_start(struct informer *inf)
{
    struct fatia_watch_opts o = {0};

    return fatia_client_watch(fatia_ctlr_client(inf->ctl), inf->kind, NULL, &o, on_watch, inf,
                              &inf->watch);
}

void fatia_ctlr_informer_free(struct informer *inf)
{
    if (!inf)
        return;
    if (inf->watch)
        fatia_client_watch_stop(fatia_ctlr_client(inf->ctl), inf->watch);
    if (inf->restart_ev)
        event_free(inf->restart_ev);
    for (size_t i = 0; i < inf->items.cap; i++)
        if (inf->items.slots[i].key)
            item_free(inf->items.slots[i].val);
    fatia_strmap_release(&inf->items);
    for (size_t i = 0; i < inf->owners.cap; i++) {
        struct owner_set *set = inf->owners.slots[i].key ? inf->owners.slots[i].val : NULL;
        if (!set)
            continue;
        fatia_strmap_release(&set->m);
        fatia_free(set->uid);
        fatia_free(set);
    }
    fatia_strmap_release(&inf->owners);
    FATIA_VEC_RELEASE(&inf->handlers);
    fatia_free(inf);
}

int fatia_ctlr_informer_on(struct informer *inf, informer_fn fn, void *arg)
{
    return FATIA_VEC_PUSH(&inf->handlers, ((struct informer_handler){fn, arg}));
}

const json_t *fatia_ctlr_informer_get_key(const struct informer *inf, const char *key)
{
    const struct informer_item *it = fatia_strmap_get(&inf->items, key);

    return it ? it->obj : NULL;
}

const json_t *fatia_ctlr_informer_get(const struct informer *inf, const char *ns, const char *name)
{
    char key[600];

    fatia_ctlr_make_key(inf->kind->namespaced ? ns : NULL, name, key, sizeof(key));
    return fatia_ctlr_informer_get_key(inf, key);
}

/* ---- work queues ---- */

struct wq_key {
    char *key;
    bool pending;    /* in the FIFO */
    bool dirty;      /* added while busy */
    unsigned busy;   /* writes in flight */
    bool failed;     /* a write of the current round failed */
    bool conflicted; /* a write of the current round got a conflict */
    bool running;    /* being reconciled now */
    unsigned failures;
    unsigned conflicts;        /* consecutive 409s */
    struct fatia_ratelimit rl; /* reconciles of this key */
    bool linger;               /* kept only for rl; the timer drops it */
    struct event *timer;       /* delayed add */
    struct wq *q;
};

struct wq {
    struct ctl *ctl;
    const char *name;
    wq_fn fn;
    void *arg;
    struct fatia_strmap keys; /* key -> struct wq_key */
    FATIA_VEC(struct wq_key *) fifo;
    size_t head;
    struct event *ev;
    size_t busy_total;
    uint64_t rnd;               /* jitter */
    struct fatia_ratelimit log; /* failure lines */
};

static void wq_process(evutil_socket_t fd, short what, void *arg);

/* Reconciles of one key: a burst of 100, then 50 a second. Past it the key waits: a loop of
 * writes that all succeed (two writers, or a status that flips between two values on each
 * write) cannot take the event loop; it is slowed down, and said once a second per queue. */
#define WQ_KEY_PER_SEC 50
#define WQ_KEY_BURST   100

struct wq *fatia_ctlr_wq_new(struct ctl *c, const char *name, wq_fn fn, void *arg)
{
    struct wq *q = fatia_calloc(1, sizeof(*q));

    if (!q)
        return NULL;
    *q = (struct wq){.ctl = c,
                     .name = name,
                     .fn = fn,
                     .arg = arg,
                     .rnd = (uint64_t)fatia_now_mono_usec() | 1,
                     .log = {.per_sec = 5, .burst = 20}};
    q->ev = event_new(fatia_ctlr_base(c), -1, 0, wq_process, q);
    if (!q->ev) {
        fatia_free(q);
        return NULL;
    }
    fatia_ctlr_register_wq(c, q);
    return q;
}

static void wq_key_free(struct wq_key *k)
{
    if (!k)
        return;
    if (k->timer)
        event_free(k->timer);
    fatia_free(k->key);
    fatia_free(k);
}

void fatia_ctlr_wq_free(struct wq *q)
{
    if (!q)
        return;
    for (size_t i = 0; i < q->keys.cap; i++)
        if (q->keys.slots[i].key)
            wq_key_free(q->keys.slots[i].val);
    fatia_strmap_release(&q->keys);
    FATIA_VEC_RELEASE(&q->fifo);
    event_free(q->ev);
    fatia_free(q);
}

static struct wq_key *wq_key_get(struct wq *q, const char *key)
{
    struct wq_key *k = fatia_strmap_get(&q->keys, key);

    if (k)
        return k;
    k = fatia_calloc(1, sizeof(*k));
    if (!k || !(k->key = fatia_strdup(key)) || fatia_strmap_put(&q->keys, k->key, k)) {
        wq_key_free(k);
        fatia_error("%s: out of memory, '%s' is not queued", q->name, key);
        return NULL;
    }
    k->q = q;
    k->rl = (struct fatia_ratelimit){.per_sec = WQ_KEY_PER_SEC, .burst = WQ_KEY_BURST};
    return k;
}

static void wq_timer(evutil_socket_t fd, short what, void *arg);

/* Drops a key record nobody needs any more. A key reconciled within the last second keeps its
 * record (so that its rate limit holds across rounds) until its timer drops it. */
static void wq_key_maybe_drop(struct wq *q, struct wq_key *k)
{
    if (k->pending || k->dirty || k->busy || k->failures || k->conflicts || k->running ||
        (k->timer && event_pending(k->timer, EV_TIMEOUT, NULL)))
        return;
    if (k->rl.last && fatia_now_mono_usec() - k->rl.last < FATIA_USEC_PER_SEC &&
        (k->timer || (k->timer = evtimer_new(fatia_ctlr_base(q->ctl), wq_timer, k)))) {
        struct timeval later = {1, 100000};
        k->linger = true;
        evtimer_add(k->timer, &later);
        return;
    }
    fatia_strmap_del(&q->keys, k->key);
    wq_key_free(k);
}

static void wq_push(struct wq *q, struct wq_key *k)
{
    if (k->pending)
        return;
    if (q->head > 0 && q->head == q->fifo.n) {
        q->fifo.n = 0;
        q->head = 0;
    }
    if (FATIA_VEC_PUSH(&q->fifo, k) < 0) {
        fatia_error("%s: out of memory, '%s' is not queued", q->name, k->key);
        return;
    }
    k->pending = true;
    event_active(q->ev, EV_TIMEOUT, 0);
}

void fatia_ctlr_wq_add(struct wq *q, const char *key)
{
    struct wq_key *k = wq_key_get(q, key);

    if (!k)
        return;
    if (k->linger) {
        k->linger = false;
        event_del(k->timer);
    }
    if (k->busy) {
        k->dirty = true;
        return;
    }
    wq_push(q, k);
}

static void wq_timer(evutil_socket_t fd, short what, void *arg)
{
    struct wq_key *k = arg;

    (void)fd;
    (void)what;
    if (k->linger) {
        k->linger = false;
        wq_key_maybe_drop(k->q, k);
        return;
    }
    if (k->busy)
        k->dirty = true;
    else
        wq_push(k->q, k);
}

void fatia_ctlr_wq_add_after(struct wq *q, const char *key, fatia_usec_t delay)
{
    struct wq_key *k = wq_key_get(q, key);
    struct timeval tv = {(time_t)(delay / FATIA_USEC_PER_SEC),
                         (suseconds_t)(delay % FATIA_USEC_PER_SEC)};

    if (!k)
        return;
    if (delay <= 0) {
        fatia_ctlr_wq_add(q, key);
        return;
    }
    if (k->linger) {
        k->linger = false;
        event_del(k->timer);
    }
    if (!k->timer && !(k->timer = evtimer_new(fatia_ctlr_base(q->ctl), wq_timer, k))) {
        fatia_ctlr_wq_add(q, key);
        return;
    }
    if (event_pending(k->timer, EV_TIMEOUT, NULL)) {
        /* keep the earlier deadline */
        struct timeval cur, now_tv, want;
        event_pending(k->timer, EV_TIMEOUT, &cur);
        event_base_gettimeofday_cached(fatia_ctlr_base(q->ctl), &now_tv);
        evutil_timeradd(&now_tv, &tv, &want);
        if (evutil_timercmp(&cur, &want, <=))
            return;
    }
    evtimer_add(k->timer, &tv);
}

void fatia_ctlr_wq_begin(struct wq *q, const char *key)
{
    struct wq_key *k = wq_key_get(q, key);

    if (!k)
        return;
    k->busy++;
    q->busy_total++;
}

void fatia_ctlr_wq_end(struct wq *q, const char *key, bool failed)
{
    struct wq_key *k = fatia_strmap_get(&q->keys, key);

    if (!k || !k->busy)
        return;
    k->busy--;
    q->busy_total--;
    if (failed)
        k->failed = true;
    if (k->busy)
        return;
    if (k->failed) {
        fatia_usec_t delay = fatia_backoff_delay(100 * FATIA_USEC_PER_MSEC, 30 * FATIA_USEC_PER_SEC,
                                                 ++k->failures, fatia_backoff_rand(&q->rnd));
        k->failed = false;
        k->dirty = false;
        fatia_ctlr_wq_add_after(q, key, delay);
        return;
    }
    k->failures = 0;
    if (!k->conflicted)
        k->conflicts = 0;
    k->conflicted = false;
    if (k->dirty) {
        k->dirty = false;
        wq_push(q, k);
        return;
    }
    wq_key_maybe_drop(q, k);
}

/* A write of the key's round got 409: requeue it after 20 ms doubling (with jitter) per
 * consecutive conflict, up to 30 s. */
static void wq_conflict(struct wq *q, const char *key)
{
    struct wq_key *k = wq_key_get(q, key);

    if (!k)
        return;
    k->conflicted = true;
    fatia_ctlr_wq_add_after(q, key,
                            fatia_backoff_delay(20 * FATIA_USEC_PER_MSEC, 30 * FATIA_USEC_PER_SEC,
                                                ++k->conflicts, fatia_backoff_rand(&q->rnd)));
}

size_t fatia_ctlr_wq_len(const struct wq *q)
{
    return q->fifo.n - q->head;
}

bool fatia_ctlr_wq_idle(const struct wq *q)
{
    return fatia_ctlr_wq_len(q) == 0 && q->busy_total == 0;
}

/* At most this many keys per loop iteration, so that the API stays responsive. */
#define WQ_BATCH 256

static void wq_process(evutil_socket_t fd, short what, void *arg)
{
    struct wq *q = arg;
    size_t done = 0;

    (void)fd;
    (void)what;
    if (!fatia_ctlr_ready(q->ctl))
        return; /* fatia_ctlr_informer_synced activates every queue once all caches are synced */
    while (q->head < q->fifo.n && done < WQ_BATCH) {
        struct wq_key *k = q->fifo.v[q->head++];
        k->pending = false;
        done++;
        if (k->busy) {
            k->dirty = true;
            continue;
        }
        if (!fatia_ratelimit_take(&k->rl, fatia_now_mono_usec(), NULL)) {
            uint64_t sup = 0;
            if (fatia_ratelimit_take(&q->log, fatia_now_mono_usec(), &sup))
                fatia_warn("%s: '%s' is reconciled more than %d times a second: slowed down (a "
                           "loop of writes?)",
                           q->name, k->key, WQ_KEY_PER_SEC);
            fatia_ctlr_wq_add_after(
                q, k->key,
                FATIA_USEC_PER_SEC / WQ_KEY_PER_SEC +
                    (fatia_usec_t)(fatia_backoff_rand(&q->rnd) %
                                   (uint64_t)(FATIA_USEC_PER_SEC / WQ_KEY_PER_SEC)));
            continue;
        }
        k->running = true;
        q->fn(q->arg, k->key);
        k->running = false;
        if (!k->busy)
            k->conflicts = 0; /* a round with nothing to write: the conflict is over */
        /* the reconcile may have started writes (busy) or queued the key again */
        wq_key_maybe_drop(q, k);
    }
    if (q->head == q->fifo.n) {
        q->fifo.n = 0;
        q->head = 0;
    } else {
        event_active(q->ev, EV_TIMEOUT, 0);
    }
}

void fatia_ctlr_wq_kick(struct wq *q)
{
    if (fatia_ctlr_wq_len(q))
        event_active(q->ev, EV_TIMEOUT, 0);
}

/* ---- writes ---- */

struct op {
    struct ctl *ctl;
    struct wq *wq;
    char *key;
    op_then_fn then;
    void *arg;
    bool quiet_conflict, quiet_missing;
    char what[200];
};

static void op_done(void *arg, const struct fatia_client_result *res)
{
    struct op *op = arg;
    bool failed = false;

    fatia_ctlr_op_finished(op->ctl);
    if (res->status) {
        const char *msg = fatia_json_str(res->status, "message");
        if (res->code == 409) {
            if (!op->quiet_conflict)
                fatia_debug("%s: conflict: %s", op->what, msg ? msg : "");
            /* try again shortly: the watch brings the newer version meanwhile (an immediate
               retry would read the same stale cache while the newer write commits) */
            if (op->wq && op->key)
                wq_conflict(op->wq, op->key);
        } else if (res->code == 404 && op->quiet_missing) {
            /* gone meanwhile: nothing to do */
        } else {
            uint64_t sup = 0;
            if (!op->wq || fatia_ratelimit_take(&op->wq->log, fatia_now_mono_usec(), &sup)) {
                if (sup)
                    fatia_warn("%s: %d %s (%" PRIu64 " failure lines of %s suppressed before "
                               "this one)",
                               op->what, res->code, msg ? msg : "failed", sup, op->wq->name);
                else
                    fatia_warn("%s: %d %s", op->what, res->code, msg ? msg : "failed");
            }
            failed = true;
        }
    } else if (res->obj) {
        const struct fatia_kind *k = fatia_kind_find(
            fatia_json_str(res->obj, "apiVersion") ? fatia_json_str(res->obj, "apiVersion") : "",
            fatia_json_str(res->obj, "kind") ? fatia_json_str(res->obj, "kind") : "", NULL);
        struct informer *inf = k ? fatia_ctlr_informer_peek(op->ctl, k) : NULL;
        if (inf && !fatia_ctlr_obj_deleting(res->obj))
            fatia_ctlr_informer_observe(inf, res->obj, res->rv);
        else if (inf && fatia_ctlr_obj_deleting(res->obj))
            fatia_ctlr_informer_observe(inf, res->obj, res->rv);
    }
    if (op->then)
        op->then(op->arg, res);
    if (op->wq && op->key)
        fatia_ctlr_wq_end(op->wq, op->key, failed);
    fatia_free(op->key);
    fatia_free(op);
}

static struct op *op_new(struct ctl *c, const struct op_opts *o, const char *verb,
                         const struct fatia_kind *k, const char *ns, const char *name)
{
    struct op *op = fatia_calloc(1, sizeof(*op));

    if (!op)
        return NULL;
    op->ctl = c;
    if (o) {
        op->wq = o->wq;
        op->then = o->then;
        op->arg = o->arg;
        op->quiet_conflict = o->quiet_conflict;
        op->quiet_missing = o->quiet_missing;
        if (o->key && !(op->key = fatia_strdup(o->key))) {
            fatia_free(op);
            return NULL;
        }
    }
    snprintf(op->what, sizeof(op->what), "%s %s %s%s%s", verb, k ? k->singular : "object",
             ns && *ns ? ns : "", ns && *ns ? "/" : "", name ? name : "(generated)");
    if (op->wq && op->key)
        fatia_ctlr_wq_begin(op->wq, op->key);
    fatia_ctlr_op_started(c);
    return op;
}

static void op_abort(struct op *op, int r)
{
    fatia_warn("%s: %s", op->what, fatia_strerror(r));
    fatia_ctlr_op_finished(op->ctl);
    if (op->wq && op->key)
        fatia_ctlr_wq_end(op->wq, op->key, true);
    fatia_free(op->key);
    fatia_free(op);
}

static int write_obj(struct ctl *c, const char *verb, json_t *obj, const struct op_opts *o)
{
    const char *av = fatia_json_str(obj, "apiVersion"), *kind = fatia_json_str(obj, "kind");
    const struct fatia_kind *k = av && kind ? fatia_kind_find(av, kind, NULL) : NULL;
    const char *name = fatia_ctlr_meta_str(obj, "name");
    struct op *op = op_new(c, o, verb, k, fatia_ctlr_meta_str(obj, "namespace"),
                           name ? name : fatia_ctlr_meta_str(obj, "generateName"));
    int r;

    if (!op)
        return -ENOMEM;
    if (!strcmp(verb, "create"))
        r = fatia_client_create(fatia_ctlr_client(c), obj, NULL, op_done, op);
    else if (!strcmp(verb, "update"))
        r = fatia_client_update(fatia_ctlr_client(c), obj, NULL, op_done, op);
    else
        r = fatia_client_update_status(fatia_ctlr_client(c), obj, NULL, op_done, op);
    if (r < 0) {
        op_abort(op, r);
        return r;
    }
    return 0;
}

int fatia_ctlr_create(struct ctl *c, json_t *obj, const struct op_opts *o)
{
    return write_obj(c, "create", obj, o);
}

int fatia_ctlr_update(struct ctl *c, json_t *obj, const struct op_opts *o)
{
    return write_obj(c, "update", obj, o);
}

int fatia_ctlr_update_status(struct ctl *c, json_t *obj, const struct op_opts *o)
{
    return write_obj(c, "update status of", obj, o);
}

int fatia_ctlr_delete(struct ctl *c, const struct fatia_kind *k, const char *ns, const char *name,
                      const char *uid, const struct op_opts *o)
{
    struct fatia_delete_opts dopts = {.uid = uid};
    struct op *op = op_new(c, o, "delete", k, ns, name);
    int r;

    if (!op)
        return -ENOMEM;
    r = fatia_client_delete(fatia_ctlr_client(c), k, ns, name, uid ? &dopts : NULL, op_done, op);
    if (r < 0) {
        op_abort(op, r);
        return r;
    }
    return 0;
}

/* ---- events ---- */

static void event_done(void *arg, const struct fatia_client_result *res)
{
    struct ctl *c = arg;

    fatia_ctlr_op_finished(c);
    if (res->status)
        fatia_debug("event not recorded: %s", fatia_json_str(res->status, "message"));
}

void fatia_ctlr_event(struct ctl *c, const json_t *obj, const char *component, const char *type,
                      const char *reason, const char *fmt, ...)
{
    const char *ns = fatia_ctlr_meta_str(obj, "namespace"),
               *name = fatia_ctlr_meta_str(obj, "name");
    const char *kind = fatia_json_str(obj, "kind"), *av = fatia_json_str(obj, "apiVersion");
    char msg[1024], evname[400];
    fatia_usec_t now = fatia_ctlr_now(c);
    json_t *ev, *involved;
    va_list ap;

    if (!name || !kind)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(evname, sizeof(evname), "%.200s.%" PRIx64 "%04x", name, (uint64_t)now,
             fatia_ctlr_next_seq(c) & 0xffff);
    involved = json_pack("{s:s,s:s,s:s?,s:s?,s:s?,s:s?}", "kind", kind, "name", name, "namespace",
                         ns, "apiVersion", av, "uid", fatia_ctlr_meta_str(obj, "uid"),
                         "resourceVersion", fatia_ctlr_meta_str(obj, "resourceVersion"));
    ev = json_pack("{s:s,s:s,s:{s:s,s:s},s:o,s:s,s:s,s:s,s:i,s:o,s:o,s:{s:s},s:s,s:s}",
                   "apiVersion", "v1", "kind", "Event", "metadata", "name", evname, "namespace",
                   ns && *ns ? ns : "default", "involvedObject", involved, "reason", reason,
                   "message", msg, "type", type, "count", 1, "firstTimestamp",
                   fatia_ctlr_json_time(now), "lastTimestamp", fatia_ctlr_json_time(now), "source",
                   "component", component, "reportingComponent", component, "reportingInstance",
                   "fatiad");
    if (!ev)
        return;
    fatia_ctlr_op_started(c);
    if (fatia_client_create(fatia_ctlr_client(c), ev, NULL, event_done, c) < 0)
        fatia_ctlr_op_finished(c);
    json_decref(ev);
}
