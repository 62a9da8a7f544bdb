/*
 * apiserver/apiserver.h: fatia's Kubernetes-compatible API server, as a library.
 *
 * Model: the server serves every kind of the model registry (model/kind.h) under its REST names,
 * scope and versions, from an in-memory cache of the store (store/store.h): reads and watches are
 * answered from memory (the stored JSON text is served as is), writes go through one pipeline
 *
 *     decode (conversion to the storage version, defaulting, schema validation)
 *       -> mutating admission plugins -> validation again (if a plugin changed the object)
 *       -> validating admission plugins -> optimistic concurrency and lifecycle rules
 *       -> group commit to the store -> watch events -> answer
 *
 * and a write is answered only once it is durable. HTTP clients (kubectl) and in-process clients
 * (controllers, client.h) take the same pipeline and see the same errors.
 *
 * Threads: everything here runs on the caller's libevent loop, except the store's writer thread.
 * Nothing blocks the loop: no fsync, no DNS, no file reads after start (the tokens file is
 * re-read when its mtime changes, at most once a second; it is small).
 *
 * See docs/apiserver.md for the endpoints, the semantics and the in-process client.
 */
#ifndef FATIA_APISERVER_APISERVER_H
#define FATIA_APISERVER_APISERVER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "apiserver/http.h"
#include "base/clock.h"
#include "model/diag.h"
#include "model/kind.h"

struct event_base;
struct fatia_store;
struct fatia_apiserver;

/* The Kubernetes version fatiad reports (/version): fixed, so clients' skew checks are stable. */
#define FATIA_APISERVER_KUBE_VERSION "v1.33.0"

struct fatia_apiserver_opts {
    const char *tokens_path;         /* bearer tokens file (auth.h); NULL = no authentication */
    struct fatia_api_http_opts http; /* limits of the HTTP layer */
    size_t watch_history;            /* events kept for watches that resume; 0 = 10000 */
    fatia_usec_t bookmark_interval;  /* periodic BOOKMARK events; 0 = 60 s */
    unsigned max_json_depth;         /* nesting of request bodies; 0 = 64 */
    const char *audit_path;          /* audit log of HTTP writes (audit.h); NULL = none */
    uint64_t audit_max_bytes;        /* rotate past this size; 0 = 100 MiB */
    unsigned audit_keep;             /* rotated files kept; 0 = 5 */
};

/* Builds a server on base over an opened store: loads every object into memory, starts the
 * store's writer thread. The store must outlive the server. 0, -ENOMEM, -FATIA_E_CORRUPT (a
 * stored object does not parse), or the store's error. */
int fatia_apiserver_new(struct event_base *base, struct fatia_store *store,
                        const struct fatia_apiserver_opts *opts, struct fatia_apiserver **ret);

/* Starts serving HTTP on host:port (port 0: a free port, reported in *ret_port). */
int fatia_apiserver_listen(struct fatia_apiserver *s, const char *host, uint16_t port,
                           uint16_t *ret_port);

/* Stops accepting and closes watches; calls done(arg) from the loop once no write is in flight
 * (every acknowledged write is then on disk). */
void fatia_apiserver_shutdown(struct fatia_apiserver *s, void (*done)(void *arg), void *arg);

/* Frees the server (after shutdown completed). NULL is fine. */
void fatia_apiserver_free(struct fatia_apiserver *s);

/* The highest resourceVersion visible to readers. */
uint64_t fatia_apiserver_rv(const struct fatia_apiserver *s);

/* ---- identities ---- */

/* Who makes a request. Tokens map to users (auth.h); in-process clients name theirs. */
struct fatia_user {
    const char *name;
    const char *const *groups;     /* NULL-terminated; may be NULL */
    const char *const *namespaces; /* NULL-terminated; NULL or {"*"} = every namespace */
    bool read_only;
};

/* True for members of system:masters: every verb on every object. */
bool fatia_user_is_admin(const struct fatia_user *u);

/* The built-in identity of fatiad's own components (controllers): system:masters. */
extern const struct fatia_user fatia_user_system;

/* ---- admission ---- */

enum fatia_admit_op {
    FATIA_ADMIT_CREATE = 1u << 0,
    FATIA_ADMIT_UPDATE = 1u << 1,
    FATIA_ADMIT_DELETE = 1u << 2,
};

enum fatia_admit_phase {
    FATIA_ADMIT_MUTATING,   /* may change obj; runs after defaulting, before validation */
    FATIA_ADMIT_VALIDATING, /* must not change obj; runs after validation */
};

/* What a plugin sees. obj is the storage-version object being written (defaulted); a mutating
 * plugin edits it in place. old is the current object on update and delete (read only), NULL on
 * create. A plugin rejects by returning -FATIA_E_INVALID with errors added to diag (they become
 * the field causes of a 422 Invalid) or -FATIA_E_FORBIDDEN (403; the first diag message is the
 * reason). Any other negative return is a 500. */
struct fatia_admit_attrs {
    enum fatia_admit_op op;
    const struct fatia_kind *kind;
    const char *ns;          /* NULL for cluster-scoped kinds */
    const char *name;        /* NULL on create with generateName, until the name is chosen */
    const char *subresource; /* NULL, or "status" */
    const struct fatia_user *user;
    bool dry_run;
    json_t *obj;       /* NULL on delete */
    const json_t *old; /* NULL on create */
    struct fatia_diag *diag;
};

struct fatia_admission {
    const char *name; /* for messages: "hardware-profile-injection" */
    enum fatia_admit_phase phase;
    unsigned ops;                          /* mask of enum fatia_admit_op */
    const struct fatia_kind *const *kinds; /* NULL-terminated; NULL = every kind */
    bool subresources;                     /* also for status writes (default: main resource) */
    int (*admit)(void *arg, struct fatia_admit_attrs *a);
    void *arg;
};

/* Adds a plugin (the struct is copied; kinds and name are borrowed). Plugins of one phase run in
 * the order they were added. 0 or -ENOMEM. */
int fatia_apiserver_add_admission(struct fatia_apiserver *s, const struct fatia_admission *plugin);

/* ---- metrics ---- */

/* GET /metrics (any authenticated user, as kube-apiserver's nonResourceURL): the provider
 * appends Prometheus text (format 0.0.4) to out. Without a provider: 404. */
struct fatia_buf;
typedef int (*fatia_metrics_provider_fn)(void *arg, struct fatia_buf *out);

void fatia_apiserver_set_metrics_provider(struct fatia_apiserver *s, fatia_metrics_provider_fn fn,
                                          void *arg);

/* ---- pod logs ---- */

/* GET /api/v1/namespaces/NS/pods/NAME/log: the node agent provides the bytes. */
struct fatia_log_req {
    const char *ns, *name;
    const char *container; /* NULL: the pod's only (or first) container */
    bool follow;
    bool previous;
    bool timestamps;
    int64_t tail_lines;    /* -1: all */
    int64_t limit_bytes;   /* -1: none */
    int64_t since_seconds; /* -1: none */
    const json_t *pod;     /* the Pod (borrowed for the call) */
};

struct fatia_log_stream;

/* The provider starts writing to the stream (now or later, from the loop) and ends it. When the
 * client goes away, cancel(arg) is called once, after which the provider must not write (it
 * still calls fatia_log_stream_end). Returns 0, or a negative code before anything was written
 * (-ENOENT: no such container; -EAGAIN: not started yet; -ESRCH: no previous instance, with
 * previous; other: 500); then the provider must not use the stream. */
typedef int (*fatia_log_provider_fn)(void *arg, const struct fatia_log_req *req,
                                     struct fatia_log_stream *stream);

void fatia_apiserver_set_log_provider(struct fatia_apiserver *s, fatia_log_provider_fn fn,
                                      void *arg);
/* Bytes of log text. 0, or -EPIPE once the client went away (stop and end the stream). */
int fatia_log_stream_write(struct fatia_log_stream *st, const void *data, size_t n);
void fatia_log_stream_set_cancel(struct fatia_log_stream *st, void (*cancel)(void *arg), void *arg);
/* Ends the stream (st is freed). */
void fatia_log_stream_end(struct fatia_log_stream *st);

#endif
