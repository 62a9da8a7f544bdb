/*
 * apiserver/internal.h: what the files of src/apiserver share (not for other layers).
 *
 * Object cache: for each kind a table of entries sorted by key ("ns/name", or "name" for
 * cluster-scoped kinds: the byte order etcd keys have, so lists come out in upstream's order).
 * An entry holds two versions of its object:
 *   committed: durable, what reads, lists and watches serve;
 *   latest:    committed plus the writes queued or in flight, what writes check against (so two
 *              writes in one group commit still see each other: the second gets a 409).
 * A version (struct objver) is immutable once built and reference-counted: the tree, its compact
 * JSON text (served without re-encoding) and its resourceVersion.
 *
 * Writes: a request builds a transaction (struct wtxn) of operations, each of which moves an
 * entry's latest version and takes the next resourceVersion; the transaction joins the batch
 * being filled. One batch at a time is in the store's writer; when it is done, its operations
 * become committed in order (watch events go out), then the next batch is submitted. A failed
 * commit fails its transactions and the ones queued behind it (they were checked against state
 * that never became durable) and rolls every latest back to committed.
 */
#ifndef FATIA_APISERVER_INTERNAL_H
#define FATIA_APISERVER_INTERNAL_H

#include "base/compat.h"

#include <jansson.h>

#include "apiserver/apiserver.h"
#include "apiserver/audit.h"
#include "apiserver/auth.h"
#include "apiserver/client.h"
#include "apiserver/http.h"
#include "apiserver/nodeserve.h"
#include "apiserver/request.h"
#include "base/buf.h"
#include "base/map.h"
#include "base/vec.h"
#include "model/kind.h"
#include "model/selector.h"
#include "store/store.h"

struct event;
struct evbuffer;

/* ---- object versions and the cache ---- */

struct objver {
    unsigned refs;
    uint64_t rv;
    json_t *tree; /* owned; never modified once the version is built */
    char *text;   /* compact JSON of tree; text[-1] is ',' (one allocation starting there) */
    size_t len;
};

/* Builds a version from tree (taken) whose metadata.resourceVersion is set to rv. NULL on OOM
 * (tree is released). */
struct objver *fatia_api_objver_new(json_t *tree, uint64_t rv);
struct objver *fatia_api_objver_ref(struct objver *v);
/* Replica mode: gives a version its committed resourceVersion (etcd's revision), rewriting
 * metadata.resourceVersion and the text. Only for a version nothing has served yet (a write's,
 * between its commit and its publication). 0 or -ENOMEM (the version unchanged). */
int fatia_api_objver_set_rv(struct objver *v, uint64_t rv);
void fatia_api_objver_unref(struct objver *v);

struct entry {
    char *key;      /* "ns/name" or "name" */
    const char *ns; /* "" for cluster-scoped; points into key storage */
    const char *name;
    struct objver *committed;
    struct objver *latest;
    unsigned pending; /* operations queued or in flight */
    /* txn.c, while it sorts a refused replica commit: 1 another replica changed the object,
     * 2 a failing transaction wrote it; either way its ops fail */
    unsigned char doomed;
};

struct watcher;
struct rerun;

/* The cap on objects per namespace (fatia_apiserver_opts.max_namespace_objects) has budgets of
 * the same size: one for the tenant's objects, one for Events (core and events.k8s.io: the
 * system writes them and they outlive their pods for the event TTL, so a busy namespace's Events
 * must not lock its tenant out of creating pods), and none for UsageRecords (the usage
 * controller's, one per run, kept, and never deletable by the tenant: counted, they would lock a
 * namespace out for good after its 50,000th run). */
enum fatia_api_ns_budget {
    FATIA_API_NS_BUDGET_OBJECTS,
    FATIA_API_NS_BUDGET_EVENTS,
    FATIA_API_NS_BUDGET_NONE, /* not counted (and every cluster-scoped kind) */
};

struct rtable {
    const struct fatia_kind *kind;
    enum fatia_api_ns_budget ns_budget; /* of kind (fatia_api_kind_budget), set with it */
    size_t index;                       /* in fatia_kinds[] */
    char resource[128];                 /* "clusterqueues.kueue.x-k8s.io" / "pods", for messages */
    FATIA_VEC(struct entry *) entries;  /* sorted by key */
    size_t n_committed;
    struct watcher *watchers;
    bool gone; /* a custom kind whose CRD was deleted: not served (crd_serve.c) */
};

/* Key of ns/name into buf ("ns/name" or "name"). */
void fatia_api_entry_key(const struct rtable *t, const char *ns, const char *name, char *buf,
                         size_t n);
struct entry *fatia_api_rtable_find(const struct rtable *t, const char *key);
/* Finds or creates the entry for ns/name. NULL on OOM. */
struct entry *fatia_api_rtable_get_or_add(struct rtable *t, const char *ns, const char *name);
/* Drops the entry if nothing holds it (no committed, no latest, nothing pending). */
void fatia_api_rtable_maybe_remove(struct rtable *t, struct entry *e);
/* [lo, hi) of the entries of namespace ns (all entries when ns is NULL or the kind is
 * cluster-scoped). */
void fatia_api_rtable_range(const struct rtable *t, const char *ns, size_t *lo, size_t *hi);

enum fatia_api_ns_budget fatia_api_kind_budget(const struct fatia_kind *k);
/* Entries of namespace ns over the kinds of one budget (a binary search per kind). */
size_t fatia_api_ns_objects(const struct fatia_apiserver *s, const char *ns,
                            enum fatia_api_ns_budget budget);

/* limits.c: the look at a request body before parsing (depth, size, members of one map or
 * list). 0, or a negative code with why and *ret_code (the HTTP status) set. */
#define FATIA_API_MAX_MEMBERS 10000
int fatia_api_body_check(const char *p, size_t n, unsigned max_depth, char *why, size_t why_n,
                         int *ret_code);
/* The first entry with key > after, at or after lo. */
size_t fatia_api_rtable_upper_bound(const struct rtable *t, const char *after);

/* ---- watch history ---- */

struct wevent {
    uint64_t rv;
    enum fatia_store_event type;
    struct rtable *t;
    struct objver *obj; /* the object after the event (for DELETED: the last state) */
    struct objver *old; /* the object before (MODIFIED, DELETED); may be NULL */
    struct wline *line; /* cached {"type":..,"object":..}\n in the storage version, shared
                           by every stream that sends it (watch.c) */
};

/* ---- write transactions ---- */

struct wop {
    struct rtable *t;
    struct entry *e;
    enum fatia_store_event type;
    struct objver *ver;  /* the new version (DELETED: the last state, with the delete's rv) */
    struct objver *prev; /* latest before this op; may be NULL */
};

struct wtxn;
typedef void (*wtxn_done_fn)(struct fatia_apiserver *s, struct wtxn *tx, int err);

struct wtxn {
    FATIA_VEC(struct wop) ops;
    wtxn_done_fn done;
    void *arg;
    struct objver *result; /* what to answer with (borrowed from an op) */
    bool fenced;           /* refused unless the fence Lease is ours (fatia_apiserver_set_fence) */
    int err;               /* txn.c: why a refused replica commit fails it */
    uint64_t stale_rv;     /* failed for another replica's change: etcd's revision then (rerun.c) */
    struct wtxn *next;     /* in a batch */
};

struct batch {
    struct fatia_store_batch sb;
    bool reaped; /* replica mode: committed, waiting for its revision on the watch */
    FATIA_VEC(struct fatia_store_op) ops;
    struct wtxn *txns, **txns_tail;
};

/* ---- the server ---- */

struct admission_entry {
    struct fatia_admission p;
};

/* ---- authorization (authz.c) ---- */

struct fatia_rbac_attrs;

/* An authorizer of the chain (a node authorizer sits here, before RBAC): answers for the
 * request's attributes (user and groups filled in, system:authenticated included). */
enum fatia_authz_decision {
    FATIA_AUTHZ_NO_OPINION,
    FATIA_AUTHZ_ALLOW,
    FATIA_AUTHZ_DENY
};

typedef int (*fatia_api_authorizer_fn)(void *arg, const struct fatia_user *u,
                                       const struct fatia_rbac_attrs *a, char *why, size_t why_n);

struct authorizer_entry {
    fatia_api_authorizer_fn fn;
    void *arg;
};

struct fatia_apiserver {
    struct event_base *base;
    struct fatia_store *store;
    const struct fatia_checks *checks; /* extra validation of every write (borrowed) */
    struct fatia_apiserver_opts o;
    struct fatia_api_http_server *http;
    struct event *store_ev;
    struct event *bookmark_ev;
    struct fatia_auth *auth;
    struct fatia_audit *audit;             /* NULL: no audit log */
    struct fatia_api_dashboard *dashboard; /* NULL: no dashboard at / (dashboard.c) */
    char *catalog_ns; /* tenants read its HardwareProfiles (dashboard.c); NULL: none */

    struct rtable *tables; /* one per kind, in fatia_kinds[] order, then the custom kinds' */
    size_t n_tables;
    size_t cap_tables; /* room for FATIA_KIND_MAX_CUSTOM custom kinds: tables never move */
    struct fatia_strmap by_resource; /* "group/plural" -> table */

    uint64_t rv_next;      /* the last resourceVersion handed out */
    uint64_t rv_committed; /* the last one readers see */

    /* replica mode (replica.c): several fatiads on one etcd prefix */
    bool replica;
    struct event *changes_ev;
    uint64_t own_rv; /* our revision seen on the watch before its batch was reaped; 0: none */
    char *fence_ns, *fence_name, *fence_holder; /* fatia_apiserver_set_fence; NULL: none */
    uint64_t fenced_writes;                     /* refused by the fence */
    /* commits refused for another replica's writes, and their transactions (txn.c) */
    uint64_t commit_conflicts, conflict_failed, conflict_retried;
    /* HTTP writes waiting to run again (rerun.c), and how many ran again, waited the whole
     * second, or were answered 409 after the last rerun */
    struct rerun *reruns;
    uint64_t reruns_total, rerun_timeouts, rerun_gave_up;

    struct batch *filling;  /* accumulating; NULL when empty */
    struct batch *inflight; /* in the store's writer; NULL when idle */

    /* watch history: a ring of the newest events */
    struct wevent *ring;
    size_t ring_cap, ring_head, ring_n;
    uint64_t history_floor; /* every event with rv > floor is in the ring */
    size_t watch_bytes;     /* unsent bytes of every HTTP watch, as of the event being offered */
    bool watch_sweep;       /* some watchers were dropped for the budget: free them */
    struct event *trim_ev;  /* gives freed memory back to the system (watch.c) */

    FATIA_VEC(struct admission_entry) admission;
    struct authorizer_entry authorizers[4]; /* before RBAC, in order (authz.c) */
    size_t n_authorizers;
    unsigned char sa_key[32]; /* the service-account tokens' HMAC key (satoken.c) */
    bool sa_enabled;
    bool sa_automount;                /* pods get the kube-api-access volume (saadmit.c) */
    struct fatia_strmap sa_users;     /* jti -> verified identity */
    struct fatia_strmap nt_users;     /* node name -> a recorded node token's identity */
    struct fatia_api_streams streams; /* the pod streams' providers (nodeserve.h) */
    void *node_client_ctx;            /* the node proxy's SSL_CTX, or NULL (nodeproxy.c) */
    fatia_metrics_provider_fn metrics_provider;
    void *metrics_arg;

    /* cached documents */
    struct fatia_strmap openapi_v3; /* "apis/group/version" -> struct doc */
    char *openapi_v3_root;
    size_t openapi_v3_root_len;
    char *openapi_v2;
    size_t openapi_v2_len;
    char *openapi_v2_pb; /* the same in protocol buffers (openapi_pb.c) */
    size_t openapi_v2_pb_len;

    /* the compiled CEL rules and patterns of CRDs, by text (crd_rules.c) */
    struct fatia_strmap crd_cel;
    bool crd_cel_init;

    bool shutting_down;
    void (*shutdown_done)(void *arg);
    void *shutdown_arg;
    struct watcher *all_watchers_for_shutdown;
};

struct rtable *fatia_api_server_table_for(struct fatia_apiserver *s, const struct fatia_kind *k);
struct rtable *fatia_api_server_table_by_resource(struct fatia_apiserver *s, const char *group,
                                                  const char *plural);

/* ---- results of operations ---- */

/* What an operation answers: an HTTP code and either an object version (success) or a
 * metav1.Status tree (failure, or a Status success). Warnings become Warning headers. */
struct opres {
    int code;
    struct objver *ver; /* ref; NULL when status is set */
    json_t *status;     /* owned */
    /* 409 because another replica changed the object first: the revision the cache must reach
     * before the request can run again on the winner's version (rerun.c); 0 otherwise */
    uint64_t stale_rv;
    char *warnings[8];
    size_t n_warnings;
};

void fatia_api_opres_release(struct opres *r);
void fatia_api_opres_warn(struct opres *r, const char *fmt, ...) FATIA_PRINTF(2, 3);

/* metav1.Status trees (status.c). */
json_t *fatia_api_status_new(int code, const char *reason, const char *message);
json_t *fatia_api_status_success(void);
/* Sets r to a failure. fmt makes the message. */
void fatia_api_opres_fail(struct opres *r, int code, const char *reason, const char *fmt, ...)
    FATIA_PRINTF(4, 5);
/* 404 NotFound for kind/name: `clusterqueues.kueue.x-k8s.io "x" not found`. */
void fatia_api_opres_not_found(struct opres *r, const struct rtable *t, const char *name);
/* 422 Invalid from validation diagnostics. */
void fatia_api_opres_invalid(struct opres *r, const struct rtable *t, const char *name,
                             const struct fatia_diag *diag);
/* Maps an internal error code to a failure (500 for the unexpected). */
void fatia_api_opres_from_errno(struct opres *r, int err, const char *what);
/* "Kind.group" as upstream names a kind in messages ("ClusterQueue.kueue.x-k8s.io"). */
void fatia_api_kind_qualified(const struct fatia_kind *k, char *buf, size_t n);

/* ---- operations (ops.c) ---- */

struct opctx {
    struct fatia_apiserver *s;
    const struct fatia_user *user;
    struct rtable *t;
    const struct fatia_kind_version *ver; /* served version of the request; NULL = storage */
    const char *ns;                       /* NULL for cluster-scoped or all namespaces */
    const char *name;
    const char *subresource; /* NULL or "status" */
    bool dry_run;
    enum fatia_field_validation fv;
    const char
        *manager; /* the field manager (server-side apply, managedFields); NULL: the user's name */
    bool force;   /* apply: take the conflicting fields */
    bool fenced;  /* a leader's controllers write: see fatia_apiserver_set_fence */
};

typedef void (*op_done_fn)(void *arg, struct opres *res);

/* creator.c: whether kind k carries fatia.dev/creator, and the rule that sets it on a write
 * (old NULL: a create) after admission; 0, or a negative code with the answer in r. */
bool fatia_api_creator_stamped(const struct fatia_kind *k);
int fatia_api_creator_stamp(const struct opctx *c, json_t *tree, const json_t *old,
                            struct opres *r);

/* Each runs the write pipeline and calls done(arg, res) exactly once, from the loop (possibly
 * before returning when the answer needs no commit). body is borrowed (a deep copy is made where
 * needed). */
void fatia_api_op_create(const struct opctx *c, json_t *body, op_done_fn done, void *arg);
/* fatia_api_op_create taking body (a fresh tree nobody else holds): no copy (the HTTP path). */
void fatia_api_op_create_take(const struct opctx *c, json_t *body, op_done_fn done, void *arg);
void fatia_api_op_update(const struct opctx *c, json_t *body, op_done_fn done, void *arg);
void fatia_api_op_patch(const struct opctx *c, enum fatia_patch_type type, const char *patch,
                        size_t n, op_done_fn done, void *arg);
void fatia_api_op_delete(const struct opctx *c, const json_t *options, op_done_fn done, void *arg);
void fatia_api_op_delete_collection(const struct opctx *c, const struct fatia_api_query *q,
                                    const json_t *options, op_done_fn done, void *arg);

/* Server-side apply and managedFields (apply.c). on_write: sets tree's managedFields for a
 * write of c (create: old NULL) whose request object carried req_mf (borrowed; NULL none); 0 or
 * a 422 in r. op_apply: PATCH application/apply-patch+yaml with the configuration body. */
int fatia_api_managed_on_write(const struct opctx *c, const json_t *old, json_t *tree,
                               const json_t *req_mf, struct opres *r);
void fatia_api_op_apply(const struct opctx *c, const json_t *body, op_done_fn done, void *arg);
/* ops.c's pieces apply.c reuses: the update of a whole tree (taken, storage version when c->ver
 * is NULL), and the apiVersion/kind check with conversion to the storage version. */
void fatia_api_op_update_tree(const struct opctx *c, json_t *tree, op_done_fn done, void *arg);
int fatia_api_op_convert(const struct opctx *c, json_t *tree, struct opres *r);

/* Authorization (authz.c): 0 or a 403 in r with kube-apiserver's wording. verb: get list watch
 * create update patch delete deletecollection; c->subresource is the request's ("status",
 * "log", "exec", ...). Every operation calls it before it looks at the object, so that a
 * refused user learns nothing about what exists. */
int fatia_api_authorize(const struct opctx *c, const char *verb, struct opres *r);
/* The same for a list or watch of a collection: a field selector that requires metadata.name=X
 * names X in the attributes, as upstream's RequestInfo does (so a node's list or watch of one
 * Secret it may read is allowed; the selector still narrows the answer to X). */
int fatia_api_authorize_collection(const struct opctx *c, const char *verb,
                                   const struct fatia_api_query *q, struct opres *r);
/* u's authentication.k8s.io UserInfo: {username, groups} (system:authenticated and a service
 * account's groups included), as `kubectl auth whoami` prints it. */
json_t *fatia_api_user_info(const struct fatia_user *u);
/* Adds an authorizer before RBAC. 0 or -ENOSPC. */
int fatia_api_authorizer_add(struct fatia_apiserver *s, fatia_api_authorizer_fn fn, void *arg);
/* The chain's answer for u (NULL: fatiad itself) and a (user and groups are u's); why (may be
 * NULL) gets the allowing binding. */
bool fatia_api_may(struct fatia_apiserver *s, const struct fatia_user *u,
                   const struct fatia_rbac_attrs *a, char *why, size_t why_n);
/* The same for a verb on kind k (its group and plural), subresource sub, in ns, on name. */
bool fatia_api_may_resource(struct fatia_apiserver *s, const struct fatia_user *u, const char *verb,
                            const struct fatia_kind *k, const char *sub, const char *ns,
                            const char *name);
/* Every rule u holds in ns (NULL: at the cluster scope), appended to out. 0 or -ENOMEM. */
int fatia_api_rules_of(struct fatia_apiserver *s, const struct fatia_user *u, const char *ns,
                       json_t *out);
/* Registers the rbac-escalation admission plugin (authz.c). */
int fatia_api_rbac_register(struct fatia_apiserver *s);
/* nodeauth.c: adds the Node authorizer to the chain and the admission plugin node-restriction. */
int fatia_api_node_register(struct fatia_apiserver *s);
/* node-restriction of a TokenRequest (satoken.c calls it once the authorizer allowed it): a
 * node's request for serviceaccounts/sa/token in ns must be bound to a pod (kind Pod, a name and
 * its uid) bound to that node and running as sa, ask only for audiences that pod's projected
 * serviceAccountToken sources name (auds: the request's; NULL or empty: api_aud, the API's own,
 * which a source without audience names) and live no longer than the longest of those sources
 * (exp_s, seconds). 0 (also for a user that is no node), or a code (403, 404) and why. */
int fatia_api_node_token_check(struct fatia_apiserver *s, const struct fatia_user *u,
                               const char *ns, const char *sa, const json_t *ref,
                               const json_t *auds, const char *api_aud, int64_t exp_s, char *why,
                               size_t why_n);
/* Writes the default ClusterRoles and ClusterRoleBindings at start (rbac_defaults.c): created
 * when missing, rewritten when annotated rbac.authorization.kubernetes.io/autoupdate: "true"
 * and different. */
int fatia_api_rbac_sync(struct fatia_apiserver *s);
/* ServiceAccount tokens (satoken.c): the signing key (DIR/sa-signing.key beside the tokens
 * file, made at first start); the identity of a valid token (NULL: not one, or not valid now);
 * the TokenRequest of serviceaccounts/NAME/token (body taken; 201 and *ret, or a code and why). */
int fatia_api_satoken_init(struct fatia_apiserver *s);
void fatia_api_satoken_release(struct fatia_apiserver *s);
const struct fatia_user *fatia_api_satoken_authenticate(struct fatia_apiserver *s,
                                                        const char *token);
/* Node tokens recorded in the store (nodetoken.c): the identity of a token whose record (a
 * kube-system Secret of type FATIA_NODE_TOKEN_TYPE holding its SHA-256) exists, or NULL; the
 * admission plugin that keeps those records to system:masters; the hash (64 hex + NUL). */
#define FATIA_NODE_TOKEN_TYPE "fatia.dev/node-token"
const struct fatia_user *fatia_api_nodetoken_authenticate(struct fatia_apiserver *s,
                                                          const char *token);
int fatia_api_nodetoken_register(struct fatia_apiserver *s);
void fatia_api_nodetoken_release(struct fatia_apiserver *s);
int fatia_api_nodetoken_hash(const char *token, char hex[65]);
/* The ServiceAccount admission plugin of Pods (saadmit.c). */
int fatia_api_saadmit_register(struct fatia_apiserver *s);
/* TokenReview (body taken): 201 and *ret, or a code and why. */
int fatia_api_token_review(struct fatia_apiserver *s, const struct fatia_user *u, json_t *body,
                           json_t **ret, char *why, size_t why_n);
int fatia_api_token_request(struct fatia_apiserver *s, const struct fatia_user *u, const char *ns,
                            const char *name, json_t *body, json_t **ret, char *why, size_t why_n);
/* The answer to an authorization.k8s.io review (rbac_review.c): kind is
 * SelfSubjectAccessReview, SelfSubjectRulesReview, SubjectAccessReview or
 * LocalSubjectAccessReview (ns: the path's namespace); body is the request (taken). 201 and the
 * review with its status, or 4xx with a message in why. */
int fatia_api_review(struct fatia_apiserver *s, const struct fatia_user *u, const char *kind,
                     const char *ns, json_t *body, json_t **ret, char *why, size_t why_n);

/* POST pods/NAME/eviction (eviction.c): a policy/v1 Eviction (body borrowed) that asks the
 * pod's PodDisruptionBudget; 201 Status Success, or 429 with upstream's message. */
void fatia_api_op_evict(const struct opctx *c, const json_t *body, op_done_fn done, void *arg);

/* ---- the scale subresource (scale.c) ---- */

/* Deployment, ReplicaSet, StatefulSet. */
bool fatia_api_kind_has_scale(const struct fatia_kind *k);
/* The autoscaling/v1 Scale of obj (stored at rv). */
json_t *fatia_api_scale_of(const struct fatia_kind *k, const json_t *obj, uint64_t rv);
/* A copy of obj with the Scale's spec.replicas and, as the update's precondition, the Scale's
 * resourceVersion (else rv). -EINVAL with why for a bad Scale. */
int fatia_api_scale_apply(const struct fatia_kind *k, const json_t *obj, uint64_t rv,
                          const json_t *scale, json_t **ret, char *why, size_t why_n);

/* ---- reads (read.c) ---- */

/* Renders an object version for a request: the stored text for the storage version, else a
 * converted copy. Appends to out. */
int fatia_api_render_object(const struct rtable *t, const struct fatia_kind_version *ver,
                            const struct objver *v, struct evbuffer *out);
/* The same as a list item: a leading comma unless first; the storage version is referenced, not
 * copied (the version stays alive until the bytes are sent). */
int fatia_api_render_item(const struct rtable *t, const struct fatia_kind_version *ver,
                          struct objver *v, bool first, struct evbuffer *out);
/* The served-version tree of a version (new reference). */
json_t *fatia_api_served_tree(const struct rtable *t, const struct fatia_kind_version *ver,
                              const struct objver *v);

/* Filters (labels, fields) of a list or watch. */
struct filter {
    struct fatia_selector *labels;
    struct fieldsel *fields;
};

void fatia_api_filter_release(struct filter *f);
bool fatia_api_filter_match(const struct filter *f, const json_t *obj);
/* Whether field selector s requires metadata.name to equal a value (upstream's
 * RequiresExactMatch): then the value in buf. */
bool fatia_api_fieldsel_name(const char *s, char *buf, size_t n);
/* Parses the selectors of a query; 0 or a 400 in r. */
int fatia_api_filter_from_query(struct filter *f, const struct fatia_api_query *q, struct opres *r);

/* ---- tables (table.c) ---- */

/* Column definitions of a kind's Table (new reference). */
json_t *fatia_api_table_columns(const struct fatia_kind *k);
/* One row for an object; include: 0 none, 1 metadata, 2 object. */
json_t *fatia_api_table_row(const struct rtable *t, const struct fatia_kind_version *ver,
                            const struct objver *v, int include, fatia_usec_t now);

/* ---- watch (watch.c) ---- */

void fatia_api_history_init(struct fatia_apiserver *s);
void fatia_api_history_release(struct fatia_apiserver *s);
/* Records a committed event and hands it to the matching watchers. Takes refs on obj/old. */
void fatia_api_history_publish(struct fatia_apiserver *s, struct rtable *t,
                               enum fatia_store_event type, struct objver *obj, struct objver *old);
void fatia_api_watch_shutdown_all(struct fatia_apiserver *s);
void fatia_api_watch_send_bookmarks(struct fatia_apiserver *s);

/* ---- transactions (txn.c) ---- */

struct wtxn *fatia_api_wtxn_new(wtxn_done_fn done, void *arg);
void fatia_api_wtxn_free(struct wtxn *tx);
/* Adds an operation on entry e (found or created by the caller): PUT a new tree (taken; its
 * metadata.resourceVersion is set to the next rv) or DELETE (tree NULL: the last state of e with
 * the delete's rv). Moves e->latest. 0 or -ENOMEM (tree released, nothing changed). */
int fatia_api_wtxn_put(struct fatia_apiserver *s, struct wtxn *tx, struct rtable *t,
                       struct entry *e, enum fatia_store_event type, json_t *tree);
int fatia_api_wtxn_delete(struct fatia_apiserver *s, struct wtxn *tx, struct rtable *t,
                          struct entry *e);
/* The same with a given last state (taken): an update that removed the last finalizer. */
int fatia_api_wtxn_delete_with(struct fatia_apiserver *s, struct wtxn *tx, struct rtable *t,
                               struct entry *e, json_t *last);
/* Queues the transaction for group commit; tx->done runs once it is durable (or failed). An
 * empty transaction completes from the loop at once. */
void fatia_api_wtxn_commit(struct fatia_apiserver *s, struct wtxn *tx);
/* Drops an uncommitted transaction, undoing its operations on latest. */
void fatia_api_wtxn_abort(struct fatia_apiserver *s, struct wtxn *tx);
void fatia_api_store_event_cb(int fd, short what, void *arg);
bool fatia_api_server_idle(const struct fatia_apiserver *s);
/* The inflight batch is durable (and, in replica mode, in revision order): its ops become
 * committed, watch events go out, its transactions are answered. Then: the next batch goes to
 * the store, and a shutdown waiting for idle completes. */
void fatia_api_batch_finish(struct fatia_apiserver *s, struct batch *b);
void fatia_api_store_after(struct fatia_apiserver *s);

/* ---- replica mode (replica.c) ---- */

/* Placeholder resourceVersions of writes not yet committed start here in replica mode, far
 * above any etcd revision, so that no client's precondition can ever match one. */
#define FATIA_API_RV_PLACEHOLDER (UINT64_C(1) << 62)
/* Applies the changes etcd's watch has brought, in revision order, up to our own next
 * revision whose batch is not reaped yet. */
void fatia_api_replica_drain(struct fatia_apiserver *s);

/* ---- writes run again after another replica's change (rerun.c) ---- */

/* Takes req over when r is a 409 for another replica's change (r->stale_rv) with reruns left:
 * the request is handled again once the cache reaches r->stale_rv. true: taken (the caller
 * answers nothing and drops its own state); false: answer r. */
bool fatia_api_rerun(struct fatia_apiserver *s, struct fatia_api_http_req *req,
                     const struct opres *r);
/* The cache advanced (all: shutdown): the waiting requests whose revision it reached run. */
void fatia_api_rerun_wake(struct fatia_apiserver *s, bool all);
/* Answers every waiting request 503 (the server is freed). */
void fatia_api_rerun_free_all(struct fatia_apiserver *s);
void fatia_api_changes_cb(int fd, short what, void *arg);
/* A fenced transaction may commit: 0, or -FATIA_E_CONFLICT when the cache shows the fence
 * Lease held by another (or by nobody). */
int fatia_api_fence_check(struct fatia_apiserver *s);
/* Replica mode: a batch with fenced transactions compares the Lease's revision too (a
 * compare-only op appended to b->ops). 0 or -ENOMEM. */
int fatia_api_fence_op(struct fatia_apiserver *s, struct batch *b);

/* ---- audit (audit.c) ---- */

/* Begins the audit event of a write (NULL when there is no audit log, or out of memory); the
 * user's strings are copied. uri and agent are not NUL-terminated (their lengths follow). */
json_t *fatia_api_audit_begin(const struct fatia_apiserver *s, const struct fatia_user *u,
                              const char *verb, const char *uri, size_t uri_n, const char *peer,
                              const char *agent, size_t agent_n, const struct fatia_kind *k,
                              const char *version, const char *ns, const char *name,
                              const char *sub);
/* Finishes ev (taken; NULL is fine) with the answer r and writes it. name: the object's name
 * when the request had none (a create), or NULL. */
void fatia_api_audit_end(struct fatia_apiserver *s, json_t *ev, const struct opres *r,
                         const char *name);

/* ---- HTTP handlers ---- */

void fatia_api_handle_http(void *arg, struct fatia_api_http_req *req);
int discovery_init(struct fatia_apiserver *s);
int fatia_api_openapi_build(struct fatia_apiserver *s);
void fatia_api_openapi_release(struct fatia_apiserver *s);

/* JSON text helpers */
int fatia_api_evbuffer_add_json(struct evbuffer *out, const json_t *v);
char *fatia_api_json_dump_compact(const json_t *v, size_t *ret_len);

/* s, or "" for NULL. */
static inline const char *nz(const char *s)
{
    return s ? s : "";
}

/* Random identifiers. */
void fatia_api_random_uid(char out[37]);
void fatia_api_random_suffix(char out[6]);

/* Discovery documents (discovery.c). */
json_t *fatia_api_discovery_version(void);
json_t *fatia_api_discovery_api(const char *address);
json_t *fatia_api_discovery_resources(const char *group, const char *version);
json_t *fatia_api_discovery_groups(void);
json_t *fatia_api_discovery_group(const char *group);

/* The OpenAPI v2 document as kubectl's protobuf (openapi_pb.c). */
int fatia_api_openapi_v2_protobuf(const json_t *doc, struct fatia_buf *out);

/* An in-process watcher's end (watch.c; the in-process client's stop). */
void fatia_api_watch_stop_local(struct watcher *w);

/* The OpenAPI schema of a schema table (new reference; openapi.c): v3 or v2 dialect. */
json_t *fatia_api_openapi_schema(const struct fatia_schema *s, bool v3);

/* CustomResourceDefinitions of the compiled kinds (crd.c). */
/* Is group one of Kubernetes' own API groups (its kinds are built in, not CRDs)? */
bool fatia_api_crd_builtin_group(const char *group);
/* The CRD object a cluster would hold for compiled kind k (new reference; no uid, times or
 * resourceVersion). */
json_t *fatia_api_crd_of_kind(const struct fatia_kind *k);
/* At start: writes the CRD of every compiled kind that is one (created, or updated when the
 * stored one differs), and deletes stored CRDs of compiled kinds fatia no longer has. */
int fatia_api_crd_sync(struct fatia_apiserver *s);

/* User-written CRDs served as kinds (crd_serve.c): the admission plugins of CRD writes; the
 * hook of a committed CRD write (serves, re-serves or unserves its kind, deletes its objects);
 * at start, before the objects are loaded, serves every stored CRD. */
int fatia_api_crd_add_plugins(struct fatia_apiserver *s);
void fatia_api_crd_committed(struct fatia_apiserver *s, enum fatia_store_event type,
                             const json_t *crd);
int fatia_api_crd_serve_stored(struct fatia_apiserver *s);
/* A CRD's patterns and CEL rules (crd_rules.c): the plugin that checks custom objects by them;
 * the check that every one of a CRD (a->obj) compiles, errors into a->diag; the cache's end. */
int fatia_api_crd_rules_add_plugin(struct fatia_apiserver *s);
void fatia_api_crd_rules_check(struct fatia_apiserver *s, struct fatia_admit_attrs *a);
/* The strfmt formats of crd_formats.c (uri, isbn, isbn10, isbn13, creditcard, ssn, hexcolor,
 * rgbcolor): 1 when s has format fmt, 0 when not, -1 when fmt is none of them. */
int fatia_api_crd_format(const char *fmt, const char *s);
/* The anyOf/allOf/oneOf/not of a CRD schema node (crd_junctors.c): whether js has any; the
 * errors of value v at path against them, each to emit (full path, message); how many. */
bool fatia_api_crd_has_junctors(const json_t *js);
size_t fatia_api_crd_junctors(const json_t *js, const json_t *v, const char *path,
                              void (*emit)(void *arg, const char *path, const char *msg),
                              void *arg);
void fatia_api_crd_rules_release(struct fatia_apiserver *s);

/* The v3 OpenAPI document of "api/v1" / "apis/G/V", or NULL (openapi.c). */
const char *fatia_api_openapi_v3_doc(struct fatia_apiserver *s, const char *key, size_t *ret_len,
                                     const char **ret_hash);

/* Answers a list (JSON or Table) into out. 0, or a failure in r (read.c). */
int fatia_api_op_list(const struct opctx *c, const struct fatia_api_query *q, bool table,
                      struct evbuffer *out, struct opres *r);

/* Watches (watch.c). HTTP: answers the request (an error, or a stream that lives on); local: an
 * in-process watcher for the in-process client. */
struct watcher;
void fatia_api_watch_start_http(const struct opctx *c, const struct fatia_api_query *q,
                                const char *name, bool table, struct fatia_api_http_req *req,
                                struct opres *err);
int fatia_api_watch_start_local(struct fatia_apiserver *s, struct rtable *t, const char *ns,
                                const struct fatia_api_query *q, uint64_t rv, fatia_watch_fn fn,
                                void *arg, struct watcher **ret, struct opres *err);

/* `kubectl logs`: the pod log stream of the log provider (logs.c). */
/* pods/NAME/portforward over SPDY or WebSocket-tunnelled SPDY (stream_portforward.c). */
void fatia_api_portforward_start(const struct opctx *c, const struct fatia_api_target *tgt,
                                 struct fatia_api_http_req *req, struct opres *err);

/* pods/NAME/exec over WebSocket (stream_exec.c): answers req itself (101, or a Status). */
void fatia_api_exec_start(const struct opctx *c, const struct fatia_api_target *tgt,
                          struct fatia_api_http_req *req, struct opres *err);
/* kubectl attach (pods/NAME/attach): exec's session, its process a relay to the container's stdio */
void fatia_api_attach_start(const struct opctx *c, const struct fatia_api_target *tgt,
                            struct fatia_api_http_req *req, struct opres *err);

void fatia_api_logs_start(const struct opctx *c, const struct fatia_api_query *q,
                          struct fatia_api_http_req *req, struct opres *err);

/* The same streams without the API server's authorization and object table: for pod as the
 * caller has it (the API server's committed object, or a node's own view: nodeserve.c); ns and
 * name are the pod's. who names the caller in the log. Each answers req itself or sets err. */
void fatia_api_logs_serve(const struct fatia_api_streams *sv, const json_t *pod,
                          const struct fatia_api_query *q, struct fatia_api_http_req *req,
                          struct opres *err);
void fatia_api_exec_serve(const struct fatia_api_streams *sv, const json_t *pod, const char *who,
                          const struct fatia_api_target *tgt, struct fatia_api_http_req *req,
                          struct opres *err, bool attach);
void fatia_api_portforward_serve(const struct fatia_api_streams *sv, const json_t *pod,
                                 const char *who, const struct fatia_api_target *tgt,
                                 struct fatia_api_http_req *req, struct opres *err);

/* The pod's node serves its own endpoint (Node status.daemonEndpoints.kubeletEndpoint.Port):
 * the request goes there (nodeproxy.c), after the caller's authorization here; true when it
 * was taken (answered later, or err set: the node is not reachable), false to serve it in this
 * process. */
bool fatia_api_nodeproxy(struct fatia_apiserver *s, const json_t *pod, const char *who,
                         struct fatia_api_http_req *req, struct opres *err);
/* The pod a stream (logs, exec, attach, portforward) is for, once the caller may `verb` its
 * subresource; NULL with err set (403, 404) otherwise. Borrowed from the committed entry. */
const json_t *fatia_api_stream_pod(const struct opctx *c, const char *verb, struct opres *err);
void fatia_api_nodeproxy_free(struct fatia_apiserver *s);

/* ---- the dashboard's static files (dashboard.c) ---- */

struct fatia_api_dashboard;
void fatia_api_dashboard_free(struct fatia_api_dashboard *d);
/* Answers a GET the router refused with a dashboard file: true when it answered (the request is
 * finished), false when the target is not a dashboard file (the caller answers 404). */
bool fatia_api_dashboard_serve(struct fatia_apiserver *s, struct fatia_api_http_req *req,
                               const char *method, const struct fatia_api_target *t);

#endif
