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
#include "client/plugin.h"
#include "model/diag.h"
#include "model/kind.h"

struct event_base;
struct fatia_store;
struct fatia_apiserver;

/* The Kubernetes version fatiad reports (/version): fixed, so clients' skew checks are stable. */
#define FATIA_APISERVER_KUBE_VERSION \
    "v1.34.0" /* resource.k8s.io/v1, the newest API served, is 1.34 */

struct fatia_apiserver_opts {
    const char *tokens_path; /* bearer tokens file (auth.h); NULL = no authentication */
    /* the ServiceAccount tokens' key (satoken.c): a file of 32 bytes that must exist, shared by
     * every replica; NULL = sa-signing.key beside tokens_path, made at first start */
    const char *sa_key_path;
    struct fatia_api_http_opts http; /* limits of the HTTP layer */
    size_t watch_history;            /* events kept for watches that resume; 0 = 10000 */
    size_t watch_budget;             /* unsent bytes of all HTTP watches together; 0 = 256 MiB */
    fatia_usec_t bookmark_interval;  /* periodic BOOKMARK events; 0 = 60 s */
    unsigned max_json_depth;         /* nesting of request bodies; 0 = 64 */
    /* objects one namespace may hold (every namespaced kind together), until ResourceQuota's
     * count/<resource> is served; creates beyond it are refused (403); 0 = 50000 */
    size_t max_namespace_objects;
    const char *audit_path;   /* audit log of HTTP writes (audit.h); NULL = none */
    uint64_t audit_max_bytes; /* rotate past this size; 0 = 100 MiB */
    unsigned audit_keep;      /* rotated files kept; 0 = 5 */
};

/* Builds a server on base over an opened store: loads every object into memory, starts the
 * store's writer thread. The store must outlive the server. checks: the extra validation checks
 * every write is decoded with (model/kind.h; fatiad passes fatia_demand_checks, so its API
 * refuses what `fatia validate` refuses; NULL: the schemas' rules only); borrowed, it must
 * outlive the server. 0, -ENOMEM, -FATIA_E_CORRUPT (a stored object does not parse), or the
 * store's error. */
int fatia_apiserver_new(struct event_base *base, struct fatia_store *store,
                        const struct fatia_checks *checks, const struct fatia_apiserver_opts *opts,
                        struct fatia_apiserver **ret);

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

/* Replica mode: commits the store refused because another replica changed objects they write,
 * and what became of their transactions (failed with 409: they wrote a changed object or built
 * on one that failed; retried: the others, committed again). Appends them to out as Prometheus
 * text. */
int fatia_apiserver_metrics(const struct fatia_apiserver *s, struct fatia_buf *out);

/* ---- identities ---- */

/* True for members of system:masters: every verb on every object. */
bool fatia_user_is_admin(const struct fatia_user *u);

/* The built-in identity of fatiad's own components (controllers): system:masters. */
extern const struct fatia_user fatia_user_system;

/* ---- admission (the plugin interface: client/plugin.h) ---- */

/* Adds a plugin (the struct is copied; kinds and name are borrowed). Plugins of one phase run in
 * the order they were added. 0 or -ENOMEM. */
int fatia_apiserver_add_admission(struct fatia_apiserver *s, const struct fatia_admission *plugin);

/* ---- the dashboard ---- */

/* Serves the built dashboard (web/, scripts/dashboard-build) from dir at `/` (index.html,
 * assets/), without authentication: the pages hold no secret and call the API with the user's
 * token (dashboard.c); notebook_origin (NULL: none) is told to the pages in /config.json. dir
 * NULL: none (404). 0, -ENOMEM or the error of opening dir. */
int fatia_apiserver_set_dashboard(struct fatia_apiserver *s, const char *dir,
                                  const char *notebook_origin);

/* Every authenticated user may read (get, list, watch) the HardwareProfiles of namespace ns, the
 * catalog (NULL: none, the default). 0 or -ENOMEM. */
int fatia_apiserver_set_catalog_namespace(struct fatia_apiserver *s, const char *ns);

/* Pods created from now on get the kube-api-access projected volume (saadmit.c): only where
 * something makes each namespace's `default` ServiceAccount and kube-root-ca.crt ConfigMap (the
 * controllers), and with authentication (service-account tokens need the signing key). */
void fatia_apiserver_set_sa_automount(struct fatia_apiserver *s, bool on);

/* ---- metrics ---- */

/* GET /metrics (client/plugin.h): without a provider, 404. */
/* Fencing of a leader's controllers (--leader-elect): a write of a fenced client
 * (fatia_client_new_local_fenced) is refused (409) unless the Lease ns/name in the cache names
 * holder; in replica mode its commit also compares the Lease's mod_revision in etcd, so a write
 * of a deposed leader whose cache has not yet seen the takeover is refused too. 0 or -ENOMEM. */
int fatia_apiserver_set_fence(struct fatia_apiserver *s, const char *ns, const char *name,
                              const char *holder);

void fatia_apiserver_set_metrics_provider(struct fatia_apiserver *s, fatia_metrics_provider_fn fn,
                                          void *arg);

/* ---- pod logs ---- */

/* GET /api/v1/namespaces/NS/pods/NAME/log (client/plugin.h): without a provider, 503. */
void fatia_apiserver_set_log_provider(struct fatia_apiserver *s, fatia_log_provider_fn fn,
                                      void *arg);

/* pods/NAME/portforward (client/plugin.h; stream_portforward.c): without a provider, 503. */
void fatia_apiserver_set_portforward_provider(struct fatia_apiserver *s,
                                              fatia_portforward_provider_fn fn, void *arg);

/* The TLS client certificate the node proxy presents to a node role's endpoint (nodeproxy.c):
 * fatiad's own pair (DATA/tls.crt, .key), which the node roles trust as --ca. Without it a pod
 * of such a node answers 503. 0, or a negative code with why set. */
int fatia_apiserver_set_node_client(struct fatia_apiserver *s, const char *cert, const char *key,
                                    char *why, size_t why_n);

/* pods/NAME/exec (client/plugin.h; stream_exec.c): without a provider, 503. */
void fatia_apiserver_set_exec_provider(struct fatia_apiserver *s, fatia_exec_provider_fn fn,
                                       void *arg);

#endif
