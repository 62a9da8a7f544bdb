/*
 * client/client.h: the client interface fatia's controllers and node agent use to read, write
 * and watch objects of fatiad's API (library fatia_client: headers only, no code).
 *
 * Model: a struct fatia_client is a table of operations (struct fatia_client_ops) plus its state.
 * The components above the API server (src/controller, src/agent) see only this table: they do
 * not link the API server, the store or SQLite (docs/ARCHITECTURE.md, "How the layers link"). The
 * daemon makes a client and passes it in: today the in-process client of apiserver/client.h
 * (fatia_client_new_local: the API server's operations called directly, same authorization,
 * admission, store and errors, no HTTP); a client for a remote kube-apiserver (planned) would
 * implement the same table, so a controller written against this header runs unchanged against
 * either.
 *
 * Every operation is asynchronous: it returns 0 once started, and then calls done(arg, res)
 * exactly once from the event loop, never before it returns (the in-process client defers even
 * answers it knows at once), so callers need not guard against re-entrancy. A negative return
 * means the operation did not start and done will not run. Objects in results are in the storage
 * version and borrowed for the duration of the callback (json_incref to keep one; never modify a
 * tree the client gave you: deep-copy it first).
 *
 * Watches deliver events in resourceVersion order from the loop; a watch started with
 * resource_version 0 first delivers an ADDED event for every current object, then a BOOKMARK.
 * If the server drops the watch (its history no longer reaches back far enough), an ERROR event
 * with a 410 Status arrives and the watch is over: list again and restart from the list's rv.
 */
#ifndef FATIA_CLIENT_CLIENT_H
#define FATIA_CLIENT_CLIENT_H

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/kind.h"

enum fatia_field_validation {
    FATIA_FV_WARN, /* unknown fields become Warning headers (upstream's default) */
    FATIA_FV_STRICT,
    FATIA_FV_IGNORE,
};

enum fatia_patch_type {
    FATIA_PATCH_MERGE,     /* application/merge-patch+json, RFC 7386 */
    FATIA_PATCH_JSON,      /* application/json-patch+json, RFC 6902 */
    FATIA_PATCH_STRATEGIC, /* application/strategic-merge-patch+json */
};

struct fatia_client_result {
    int code;             /* HTTP status: 200, 201, 404, 409, 422, ... */
    const json_t *obj;    /* success: the object, or for list a {kind: XList, items} tree */
    const json_t *status; /* failure: the metav1.Status (code, reason, message, details) */
    uint64_t rv;          /* success: the resourceVersion of obj (of the list for list) */
};

typedef void (*fatia_client_done_fn)(void *arg, const struct fatia_client_result *res);

struct fatia_list_opts {
    const char *label_selector; /* NULL: everything */
    const char *field_selector;
    int64_t limit; /* 0: no paging */
    const char *continue_token;
};

struct fatia_write_opts {
    bool dry_run;
    enum fatia_field_validation fv; /* default FATIA_FV_WARN: unknown fields are dropped */
};

struct fatia_delete_opts {
    const char *uid;              /* precondition, or NULL */
    const char *resource_version; /* precondition, or NULL */
    bool dry_run;
};

enum fatia_watch_event {
    FATIA_WATCH_ADDED = 1,
    FATIA_WATCH_MODIFIED = 2,
    FATIA_WATCH_DELETED = 3,
    FATIA_WATCH_BOOKMARK = 4,
    FATIA_WATCH_ERROR = 5,
};

/* obj: the object (storage version; for BOOKMARK NULL; for ERROR the Status), borrowed. */
typedef void (*fatia_watch_fn)(void *arg, enum fatia_watch_event type, const json_t *obj,
                               uint64_t rv);

struct fatia_watch_opts {
    const char *label_selector;
    const char *field_selector;
    uint64_t resource_version; /* 0: ADDED for every current object, then changes */
};

struct fatia_client;
struct fatia_client_watch;

struct fatia_client_ops {
    int (*get)(struct fatia_client *c, const struct fatia_kind *k, const char *ns, const char *name,
               fatia_client_done_fn done, void *arg);
    int (*list)(struct fatia_client *c, const struct fatia_kind *k, const char *ns,
                const struct fatia_list_opts *o, fatia_client_done_fn done, void *arg);
    /* verb: "create", "update", "update_status" */
    int (*write)(struct fatia_client *c, const char *verb, const json_t *obj,
                 const struct fatia_write_opts *o, fatia_client_done_fn done, void *arg);
    int (*patch)(struct fatia_client *c, const struct fatia_kind *k, const char *ns,
                 const char *name, const char *subresource, enum fatia_patch_type type,
                 const char *patch, size_t n, const struct fatia_write_opts *o,
                 fatia_client_done_fn done, void *arg);
    int (*del)(struct fatia_client *c, const struct fatia_kind *k, const char *ns, const char *name,
               const struct fatia_delete_opts *o, fatia_client_done_fn done, void *arg);
    int (*watch)(struct fatia_client *c, const struct fatia_kind *k, const char *ns,
                 const struct fatia_watch_opts *o, fatia_watch_fn fn, void *arg,
                 struct fatia_client_watch **ret);
    void (*watch_stop)(struct fatia_client_watch *w);
    /* The current object from a local cache, borrowed until control returns to the loop; NULL
     * when absent (or when the implementation keeps no cache). */
    const json_t *(*cached)(struct fatia_client *c, const struct fatia_kind *k, const char *ns,
                            const char *name);
    /* Calls fn for every object of kind k in namespace ns (NULL: all) from the local cache, each
     * as it will be once the writes already admitted are committed (so that admission counting
     * objects sees the writes before it); borrowed for the call. -ENOTSUP without a cache. */
    int (*cached_each)(struct fatia_client *c, const struct fatia_kind *k, const char *ns,
                       void (*fn)(void *arg, const json_t *obj), void *arg);
    /* Frees the client; the operations it has in flight are cancelled: their done never runs
     * (so their callers may be freed with it while the loop goes on). Stop its watches first. */
    void (*free)(struct fatia_client *c);
    /* POST serviceaccounts/NAME/token: an authentication.k8s.io/v1 TokenRequest (req borrowed);
     * res->obj is the TokenRequest with status.token. NULL where not served. */
    int (*token_request)(struct fatia_client *c, const char *ns, const char *sa, const json_t *req,
                         fatia_client_done_fn done, void *arg);
};

struct fatia_client {
    const struct fatia_client_ops *ops;
};

/* Convenience wrappers over c->ops. */
static inline int fatia_client_get(struct fatia_client *c, const struct fatia_kind *k,
                                   const char *ns, const char *name, fatia_client_done_fn done,
                                   void *arg)
{
    return c->ops->get(c, k, ns, name, done, arg);
}

static inline int fatia_client_list(struct fatia_client *c, const struct fatia_kind *k,
                                    const char *ns, const struct fatia_list_opts *o,
                                    fatia_client_done_fn done, void *arg)
{
    return c->ops->list(c, k, ns, o, done, arg);
}

static inline int fatia_client_create(struct fatia_client *c, const json_t *obj,
                                      const struct fatia_write_opts *o, fatia_client_done_fn done,
                                      void *arg)
{
    return c->ops->write(c, "create", obj, o, done, arg);
}

static inline int fatia_client_update(struct fatia_client *c, const json_t *obj,
                                      const struct fatia_write_opts *o, fatia_client_done_fn done,
                                      void *arg)
{
    return c->ops->write(c, "update", obj, o, done, arg);
}

static inline int fatia_client_update_status(struct fatia_client *c, const json_t *obj,
                                             const struct fatia_write_opts *o,
                                             fatia_client_done_fn done, void *arg)
{
    return c->ops->write(c, "update_status", obj, o, done, arg);
}

static inline int fatia_client_patch(struct fatia_client *c, const struct fatia_kind *k,
                                     const char *ns, const char *name, const char *subresource,
                                     enum fatia_patch_type type, const char *patch, size_t n,
                                     const struct fatia_write_opts *o, fatia_client_done_fn done,
                                     void *arg)
{
    return c->ops->patch(c, k, ns, name, subresource, type, patch, n, o, done, arg);
}

static inline int fatia_client_delete(struct fatia_client *c, const struct fatia_kind *k,
                                      const char *ns, const char *name,
                                      const struct fatia_delete_opts *o, fatia_client_done_fn done,
                                      void *arg)
{
    return c->ops->del(c, k, ns, name, o, done, arg);
}

static inline int fatia_client_watch(struct fatia_client *c, const struct fatia_kind *k,
                                     const char *ns, const struct fatia_watch_opts *o,
                                     fatia_watch_fn fn, void *arg, struct fatia_client_watch **ret)
{
    return c->ops->watch(c, k, ns, o, fn, arg, ret);
}

static inline void fatia_client_watch_stop(struct fatia_client *c, struct fatia_client_watch *w)
{
    c->ops->watch_stop(w);
}

static inline const json_t *fatia_client_cached(struct fatia_client *c, const struct fatia_kind *k,
                                                const char *ns, const char *name)
{
    return c->ops->cached ? c->ops->cached(c, k, ns, name) : NULL;
}

static inline int fatia_client_cached_each(struct fatia_client *c, const struct fatia_kind *k,
                                           const char *ns, void (*fn)(void *arg, const json_t *obj),
                                           void *arg)
{
    return c->ops->cached_each ? c->ops->cached_each(c, k, ns, fn, arg) : -ENOTSUP;
}

static inline void fatia_client_free(struct fatia_client *c)
{
    if (c)
        c->ops->free(c);
}

#endif
