/*
 * apiserver/client.c: the in-process client (see client.h).
 *
 * Each call builds the same operation context an HTTP request would (user, kind, namespace,
 * name, subresource) and runs the same operation; answers are delivered from a zero-delay loop
 * callback so that they never run inside the call (and never inside a commit). Reads come from
 * the committed cache; list items are the cached trees themselves (shared, immutable), so a list
 * of 10,000 objects costs 10,000 reference increments.
 *
 * Freeing the client cancels what it has in flight: every answer still to come (a write waiting
 * for its commit, a deferred answer) holds a reference to the client's life, and one that finds
 * it closed is dropped, its done never called. A leader's controllers stepping down
 * (daemon/main.c) are freed with their client while the loop goes on.
 */
#include "base/compat.h"

#include <event2/event.h>

#include "apiserver/internal.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"

/* Whether the client that started an operation is still there (see the file comment). */
struct life {
    unsigned refs;
    bool closed;
};

struct local_client {
    struct fatia_client base;
    struct fatia_apiserver *s;
    const struct fatia_user *u;
    bool fenced;
    struct life *life;
};

static struct life *life_ref(struct life *l)
{
    l->refs++;
    return l;
}

static void life_unref(struct life *l)
{
    if (--l->refs == 0)
        fatia_free(l);
}

struct fatia_client_watch {
    struct watcher *w;
};

struct deferred {
    struct life *life;
    fatia_client_done_fn done;
    void *arg;
    int code;
    json_t *obj;
    json_t *status;
    uint64_t rv;
};

static void deferred_cb(evutil_socket_t fd, short what, void *arg)
{
    struct deferred *d = arg;
    struct fatia_client_result res = {
        .code = d->code, .obj = d->obj, .status = d->status, .rv = d->rv};

    (void)fd;
    (void)what;
    if (!d->life->closed)
        d->done(d->arg, &res);
    life_unref(d->life);
    json_decref(d->obj);
    json_decref(d->status);
    fatia_free(d);
}

/* Schedules done with the result (obj/status references are taken), unless the client that
 * asked is freed first. */
static void defer(struct fatia_apiserver *s, struct life *life, fatia_client_done_fn done,
                  void *arg, int code, json_t *obj, json_t *status, uint64_t rv)
{
    struct deferred *d = fatia_calloc(1, sizeof(*d));
    struct timeval zero = {0, 0};

    if (d) {
        *d = (struct deferred){life_ref(life), done, arg, code, obj, status, rv};
        if (event_base_once(s->base, -1, EV_TIMEOUT, deferred_cb, d, &zero) == 0)
            return;
        life_unref(life);
        fatia_free(d);
    }
    /* out of memory: answer now rather than never */
    json_decref(obj);
    json_decref(status);
    if (!life->closed) {
        json_t *st = fatia_api_status_new(500, "InternalError", "out of memory");
        struct fatia_client_result res = {.code = 500, .status = st};
        done(arg, &res);
        json_decref(st);
    }
}

struct opwait {
    struct fatia_apiserver *s;
    struct life *life;
    fatia_client_done_fn done;
    void *arg;
};

static void op_done(void *arg, struct opres *r)
{
    struct opwait *w = arg;

    if (r->status)
        defer(w->s, w->life, w->done, w->arg, r->code, NULL, json_incref(r->status), 0);
    else if (r->ver)
        defer(w->s, w->life, w->done, w->arg, r->code, json_incref(r->ver->tree), NULL, r->ver->rv);
    else
        defer(w->s, w->life, w->done, w->arg, 500, NULL,
              fatia_api_status_new(500, "InternalError", "no answer"), 0);
    life_unref(w->life);
    fatia_free(w);
}

static struct opwait *opwait_new(struct local_client *lc, fatia_client_done_fn done, void *arg)
{
    struct opwait *w = fatia_calloc(1, sizeof(*w));

    if (w)
        *w = (struct opwait){lc->s, life_ref(lc->life), done, arg};
    return w;
}

static struct opctx ctx_for(struct local_client *lc, const struct fatia_kind *k, const char *ns,
                            const char *name)
{
    return (struct opctx){.s = lc->s,
                          .user = lc->u,
                          .t = fatia_api_server_table_for(lc->s, k),
                          .ns = k->namespaced ? ns : NULL,
                          .name = name,
                          .fv = FATIA_FV_WARN,
                          .fenced = lc->fenced};
}

static void fail_deferred(struct local_client *lc, fatia_client_done_fn done, void *arg,
                          struct opres *r)
{
    defer(lc->s, lc->life, done, arg, r->code, NULL, json_incref(r->status), 0);
    fatia_api_opres_release(r);
}

static int l_get(struct fatia_client *c, const struct fatia_kind *k, const char *ns,
                 const char *name, fatia_client_done_fn done, void *arg)
{
    struct local_client *lc = (struct local_client *)c;
    struct opctx cx = ctx_for(lc, k, ns, name);
    struct opres r = {0};
    struct entry *e;
    char key[600];

    if (!cx.t)
        return -EINVAL;
    if (fatia_api_authorize(&cx, "get", &r) < 0) {
        fail_deferred(lc, done, arg, &r);
        return 0;
    }
    fatia_api_entry_key(cx.t, cx.ns, name, key, sizeof(key));
    e = fatia_api_rtable_find(cx.t, key);
    if (!e || !e->committed) {
        fatia_api_opres_not_found(&r, cx.t, name);
        fail_deferred(lc, done, arg, &r);
        return 0;
    }
    defer(lc->s, lc->life, done, arg, 200, json_incref(e->committed->tree), NULL, e->committed->rv);
    return 0;
}

static int l_list(struct fatia_client *c, const struct fatia_kind *k, const char *ns,
                  const struct fatia_list_opts *o, fatia_client_done_fn done, void *arg)
{
    struct local_client *lc = (struct local_client *)c;
    struct opctx cx = ctx_for(lc, k, ns, NULL);
    struct fatia_api_query q = {.include_object = 1};
    struct opres r = {0};
    struct filter f;
    json_t *items, *list;
    size_t lo, hi, count = 0;
    char av[160], rvs[24];

    if (!cx.t)
        return -EINVAL;
    if (o) {
        q.label_selector = o->label_selector;
        q.field_selector = o->field_selector;
    }
    if (fatia_api_authorize(&cx, "list", &r) < 0 || fatia_api_filter_from_query(&f, &q, &r) < 0) {
        fail_deferred(lc, done, arg, &r);
        return 0;
    }
    items = json_array();
    if (!items) {
        fatia_api_filter_release(&f);
        return -ENOMEM;
    }
    fatia_api_rtable_range(cx.t, cx.ns, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        struct entry *e = cx.t->entries.v[i];
        if (e->committed && fatia_api_filter_match(&f, e->committed->tree)) {
            json_array_append(items, e->committed->tree);
            count++;
        }
    }
    fatia_api_filter_release(&f);
    fatia_kind_api_version(k, av, sizeof(av));
    snprintf(rvs, sizeof(rvs), "%" PRIu64, lc->s->rv_committed);
    list = json_pack("{s:s+,s:s,s:{s:s},s:o}", "kind", k->kind, "List", "apiVersion", av,
                     "metadata", "resourceVersion", rvs, "items", items);
    if (!list)
        return -ENOMEM;
    (void)count;
    defer(lc->s, lc->life, done, arg, 200, list, NULL, lc->s->rv_committed);
    return 0;
}

static int l_write(struct fatia_client *c, const char *verb, const json_t *obj,
                   const struct fatia_write_opts *o, fatia_client_done_fn done, void *arg)
{
    struct local_client *lc = (struct local_client *)c;
    const char *av = fatia_json_str(obj, "apiVersion");
    const char *kind = fatia_json_str(obj, "kind");
    const json_t *meta = json_object_get(obj, "metadata");
    const struct fatia_kind_version *ver = NULL;
    const struct fatia_kind *k;
    struct opwait *w;
    struct opctx cx;

    if (!av || !kind || !json_is_object(meta))
        return -EINVAL;
    k = fatia_kind_find(av, kind, &ver);
    if (!k)
        return -EINVAL;
    cx = ctx_for(lc, k, fatia_json_str(meta, "namespace"), fatia_json_str(meta, "name"));
    cx.ver = ver;
    if (o) {
        cx.dry_run = o->dry_run;
        cx.fv = o->fv;
    }
    if (!cx.t || (strcmp(verb, "create") && !cx.name) || (k->namespaced && !cx.ns))
        return -EINVAL;
    w = opwait_new(lc, done, arg);
    if (!w)
        return -ENOMEM;
    if (!strcmp(verb, "create")) {
        fatia_api_op_create(&cx, (json_t *)obj, op_done, w);
    } else {
        if (!strcmp(verb, "update_status"))
            cx.subresource = "status";
        fatia_api_op_update(&cx, (json_t *)obj, op_done, w);
    }
    return 0;
}

static int l_patch(struct fatia_client *c, const struct fatia_kind *k, const char *ns,
                   const char *name, const char *subresource, enum fatia_patch_type type,
                   const char *patch, size_t n, const struct fatia_write_opts *o,
                   fatia_client_done_fn done, void *arg)
{
    struct local_client *lc = (struct local_client *)c;
    struct opctx cx = ctx_for(lc, k, ns, name);
    struct opwait *w;

    if (!cx.t || !name || (subresource && strcmp(subresource, "status")))
        return -EINVAL;
    cx.subresource = subresource;
    if (o) {
        cx.dry_run = o->dry_run;
        cx.fv = o->fv;
    }
    w = opwait_new(lc, done, arg);
    if (!w)
        return -ENOMEM;
    fatia_api_op_patch(&cx, type, patch, n, op_done, w);
    return 0;
}

static int l_del(struct fatia_client *c, const struct fatia_kind *k, const char *ns,
                 const char *name, const struct fatia_delete_opts *o, fatia_client_done_fn done,
                 void *arg)
{
    struct local_client *lc = (struct local_client *)c;
    struct opctx cx = ctx_for(lc, k, ns, name);
    json_t *opts = NULL;
    struct opwait *w;

    if (!cx.t || !name)
        return -EINVAL;
    if (o) {
        cx.dry_run = o->dry_run;
        opts = json_pack("{s:{}}", "preconditions");
        if (o->uid)
            json_object_set_new(json_object_get(opts, "preconditions"), "uid", json_string(o->uid));
        if (o->resource_version)
            json_object_set_new(json_object_get(opts, "preconditions"), "resourceVersion",
                                json_string(o->resource_version));
    }
    w = opwait_new(lc, done, arg);
    if (!w) {
        json_decref(opts);
        return -ENOMEM;
    }
    fatia_api_op_delete(&cx, opts, op_done, w);
    json_decref(opts);
    return 0;
}

static int l_watch(struct fatia_client *c, const struct fatia_kind *k, const char *ns,
                   const struct fatia_watch_opts *o, fatia_watch_fn fn, void *arg,
                   struct fatia_client_watch **ret)
{
    struct local_client *lc = (struct local_client *)c;
    struct opctx cx = ctx_for(lc, k, ns, NULL);
    struct fatia_api_query q = {0};
    struct fatia_client_watch *cw;
    struct opres r = {0};
    int rc;

    if (!cx.t)
        return -EINVAL;
    if (fatia_api_authorize(&cx, "watch", &r) < 0) {
        fatia_api_opres_release(&r);
        return -FATIA_E_FORBIDDEN;
    }
    if (o) {
        q.label_selector = o->label_selector;
        q.field_selector = o->field_selector;
    }
    cw = fatia_calloc(1, sizeof(*cw));
    if (!cw)
        return -ENOMEM;
    rc = fatia_api_watch_start_local(lc->s, cx.t, cx.ns, &q, o ? o->resource_version : 0, fn, arg,
                                     &cw->w, &r);
    fatia_api_opres_release(&r);
    if (rc < 0) {
        fatia_free(cw);
        return rc;
    }
    *ret = cw;
    return 0;
}

static void l_watch_stop(struct fatia_client_watch *cw)
{
    if (!cw)
        return;
    fatia_api_watch_stop_local(cw->w);
    fatia_free(cw);
}

static const json_t *l_cached(struct fatia_client *c, const struct fatia_kind *k, const char *ns,
                              const char *name)
{
    struct local_client *lc = (struct local_client *)c;
    struct rtable *t = fatia_api_server_table_for(lc->s, k);
    struct entry *e;
    char key[600];

    if (!t || !name)
        return NULL;
    fatia_api_entry_key(t, k->namespaced ? ns : NULL, name, key, sizeof(key));
    e = fatia_api_rtable_find(t, key);
    return e && e->committed ? e->committed->tree : NULL;
}

static int l_cached_each(struct fatia_client *c, const struct fatia_kind *k, const char *ns,
                         void (*fn)(void *arg, const json_t *obj), void *arg)
{
    struct local_client *lc = (struct local_client *)c;
    struct rtable *t = fatia_api_server_table_for(lc->s, k);
    size_t lo, hi;

    if (!t)
        return -ENOENT;
    fatia_api_rtable_range(t, k->namespaced ? ns : NULL, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        const struct entry *e = t->entries.v[i];
        const struct objver *v = e->pending ? e->latest : e->committed;
        if (v && v->tree)
            fn(arg, v->tree);
    }
    return 0;
}

static int l_token_request(struct fatia_client *c, const char *ns, const char *sa,
                           const json_t *req, fatia_client_done_fn done, void *arg)
{
    struct local_client *lc = (struct local_client *)c;
    json_t *body = json_deep_copy(req), *out = NULL;
    char why[600] = "";
    int code;

    if (!body || !ns || !sa) {
        json_decref(body);
        return -EINVAL;
    }
    code = fatia_api_token_request(lc->s, lc->u, ns, sa, body, &out, why, sizeof(why));
    if (code == 201)
        defer(lc->s, lc->life, done, arg, code, out, NULL, 0);
    else
        defer(lc->s, lc->life, done, arg, code, NULL,
              fatia_api_status_new(code, code == 404 ? "NotFound" : "Invalid", why), 0);
    return 0;
}

static void l_free(struct fatia_client *c)
{
    struct local_client *lc = (struct local_client *)c;

    lc->life->closed = true; /* answers still to come are dropped */
    life_unref(lc->life);
    fatia_free(lc);
}

static const struct fatia_client_ops local_ops = {
    .get = l_get,
    .list = l_list,
    .write = l_write,
    .patch = l_patch,
    .del = l_del,
    .watch = l_watch,
    .watch_stop = l_watch_stop,
    .cached = l_cached,
    .cached_each = l_cached_each,
    .free = l_free,
    .token_request = l_token_request,
};

struct fatia_client *fatia_client_new_local(struct fatia_apiserver *s, const struct fatia_user *u)
{
    struct local_client *lc = fatia_calloc(1, sizeof(*lc));

    if (!lc)
        return NULL;
    lc->life = fatia_calloc(1, sizeof(*lc->life));
    if (!lc->life) {
        fatia_free(lc);
        return NULL;
    }
    lc->life->refs = 1;
    lc->base.ops = &local_ops;
    lc->s = s;
    lc->u = u;
    return &lc->base;
}

struct fatia_client *fatia_client_new_local_fenced(struct fatia_apiserver *s,
                                                   const struct fatia_user *u)
{
    struct fatia_client *c = fatia_client_new_local(s, u);

    if (c)
        ((struct local_client *)c)->fenced = true;
    return c;
}
