/*
 * controller/ctl.h: the runtime the controllers share (internal to src/controller).
 *
 * fatiad's controllers follow the shape of Kubernetes' controller-runtime, cut to what one event
 * loop needs:
 *
 *   informer   one per kind: a watch from resourceVersion 0 feeds a cache of the current objects
 *              (borrowed trees of the API server, kept with json_incref) and calls the handlers of
 *              every controller interested in the kind, with the old and the new object;
 *   workqueue  one per controller: keys to reconcile, deduplicated, processed from the loop a
 *              batch at a time; a key whose writes are in flight is not reconciled again until
 *              they are answered (then it is, once, if it was queued meanwhile), so a controller
 *              never acts twice on the same stale state;
 *   ops        every write goes through fatia_ctlr_create/update/update_status/delete: the answer's object
 *              is folded into the informer at once (write-through: a reconcile that follows sees
 *              its own write even before the watch event arrives), a conflict or a failure queues
 *              the key again (with a back-off on failures);
 *   events     core/v1 Events about objects, fire and forget.
 *
 * Write-through and the watch agree because both are ordered by resourceVersion: an answer is
 * folded in only when it is newer than everything the kind's watch has delivered and than the
 * cached version; the watch then delivers the same version (ignored) and later ones in order.
 *
 * The cached trees are the API server's own committed objects, shared and immutable: nothing may
 * change them. Every write starts from a json_deep_copy (or a tree of one's own), and nothing of
 * a cached tree is linked into one (json_object_set of a cached member would let the client's
 * defaulting change the cache behind the server's back).
 *
 * Everything runs on the loop thread. Nothing here blocks.
 */
#ifndef FATIA_CONTROLLER_CTL_H
#define FATIA_CONTROLLER_CTL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/clock.h"
#include "base/map.h"
#include "base/vec.h"
#include "client/client.h"
#include "controller/controller.h"
#include "model/kind.h"

struct event_base;
struct event;
struct ctl;
struct wq;

/* ---- informers ---- */

/* old: the previous object (NULL when added); obj: the new one (NULL when deleted). Both borrowed
 * for the call. */
typedef void (*informer_fn)(void *arg, const json_t *old, const json_t *obj);

struct informer_handler {
    informer_fn fn;
    void *arg;
};

struct informer_item {
    char *key; /* "ns/name" or "name" */
    json_t *obj;
    uint64_t rv;
};

struct informer {
    struct ctl *ctl;
    const struct fatia_kind *kind;
    struct fatia_client_watch *watch;
    struct event *restart_ev;  /* a watch started again after a 410 or a failure; owned */
    struct fatia_strmap items; /* key -> struct informer_item */
    uint64_t rv;               /* the newest resourceVersion the watch delivered */
    bool synced;               /* the initial state has been delivered */
    FATIA_VEC(struct informer_handler) handlers;
    bool index_owners;          /* keep owners (below) */
    struct fatia_strmap owners; /* ownerReference uid -> struct fatia_strmap (key -> item) */
};

/* The informer of a kind (created on first use; started by ctl_start). */
struct informer *fatia_ctlr_informer(struct ctl *c, const struct fatia_kind *k);
int fatia_ctlr_informer_on(struct informer *inf, informer_fn fn, void *arg);
const json_t *fatia_ctlr_informer_get(const struct informer *inf, const char *ns, const char *name);
const json_t *fatia_ctlr_informer_get_key(const struct informer *inf, const char *key);
/* Indexes objects by the uids of their ownerReferences (call before ctl_start). */
void fatia_ctlr_informer_index_owners(struct informer *inf);
/* The objects that name uid as an owner: a map key -> struct informer_item, or NULL. */
const struct fatia_strmap *fatia_ctlr_informer_owned(const struct informer *inf, const char *uid);
/* Folds a write's answer in (see the file comment). */
void fatia_ctlr_informer_observe(struct informer *inf, const json_t *obj, uint64_t rv);
/* Iterate: for (size_t i = 0; i < inf->items.cap; i++) if (inf->items.slots[i].key) ... */
#define INFORMER_FOREACH(inf, it)                                                        \
    for (size_t it##_i = 0; it##_i < (inf)->items.cap; it##_i++)                         \
        for (const struct informer_item *it =                                            \
                 (inf)->items.slots[it##_i].key ? (inf)->items.slots[it##_i].val : NULL; \
             it; it = NULL)

/* ---- work queues ---- */

/* Reconciles one key; runs from the loop. */
typedef void (*wq_fn)(void *arg, const char *key);

struct wq *fatia_ctlr_wq_new(struct ctl *c, const char *name, wq_fn fn, void *arg);
void fatia_ctlr_wq_free(struct wq *q);
void fatia_ctlr_wq_add(struct wq *q, const char *key);
/* Adds key after delay (an earlier pending add wins). */
void fatia_ctlr_wq_add_after(struct wq *q, const char *key, fatia_usec_t delay);
/* In-flight writes of a key: while any is, the key is not reconciled. */
void fatia_ctlr_wq_begin(struct wq *q, const char *key);
void fatia_ctlr_wq_end(struct wq *q, const char *key, bool requeue);
size_t fatia_ctlr_wq_len(const struct wq *q);
bool fatia_ctlr_wq_idle(const struct wq *q);

/* ---- writes ---- */

/* then (may be NULL) runs with the answer before the key is released. */
typedef void (*op_then_fn)(void *arg, const struct fatia_client_result *res);

struct op_opts {
    struct wq *wq;   /* the queue whose key this write belongs to (may be NULL) */
    const char *key; /* that key */
    op_then_fn then;
    void *arg;
    bool quiet_conflict; /* a 409 is expected (a race with another writer): debug, not warning */
    bool quiet_missing;  /* a 404 is fine (the object went away) */
};

/* obj is borrowed (the client may change the tree: pass one of your own). */
int fatia_ctlr_create(struct ctl *c, json_t *obj, const struct op_opts *o);
int fatia_ctlr_update(struct ctl *c, json_t *obj, const struct op_opts *o);
int fatia_ctlr_update_status(struct ctl *c, json_t *obj, const struct op_opts *o);
int fatia_ctlr_delete(struct ctl *c, const struct fatia_kind *k, const char *ns, const char *name,
                      const char *uid, const struct op_opts *o);

/* ---- events ---- */

/* Records an Event (type "Normal" or "Warning") about obj, from component. */
void fatia_ctlr_event(struct ctl *c, const json_t *obj, const char *component, const char *type,
                      const char *reason, const char *fmt, ...) FATIA_PRINTF(6, 7);

/* ---- helpers ---- */

fatia_usec_t fatia_ctlr_now(struct ctl *c);
struct event_base *fatia_ctlr_base(struct ctl *c);
struct fatia_client *fatia_ctlr_client(struct ctl *c);
const struct fatia_controllers_opts *fatia_ctlr_opts(struct ctl *c);

/* The fatia binary beside this process's own (the model servers' program), or "fatia" when
 * /proc/self/exe cannot be read. */
void fatia_ctlr_fatia_bin(char *buf, size_t n);
/* "ns/name" or "name" into buf. */
void fatia_ctlr_obj_key(const json_t *obj, char *buf, size_t n);
void fatia_ctlr_make_key(const char *ns, const char *name, char *buf, size_t n);
/* Splits "ns/name": ns into nsbuf, returns name (a pointer into key). ns "" when cluster-scoped. */
const char *fatia_ctlr_split_key(const char *key, char *nsbuf, size_t n);

const char *fatia_ctlr_meta_str(const json_t *obj, const char *field); /* metadata.<field> */
const char *fatia_ctlr_obj_label(const json_t *obj, const char *label);
const char *fatia_ctlr_obj_annotation(const json_t *obj, const char *ann);
bool fatia_ctlr_obj_deleting(const json_t *obj); /* metadata.deletionTimestamp set */
bool fatia_ctlr_obj_has_finalizer(const json_t *obj, const char *f);
/* A copy of obj without finalizer f (metadata.finalizers dropped when it empties), to update
 * with; NULL when out of memory. */
json_t *fatia_ctlr_obj_without_finalizer(const json_t *obj, const char *f);
/* The ownerReference with controller: true, or NULL. */
const json_t *fatia_ctlr_obj_controller_ref(const json_t *obj);

/* A condition of status.conditions by type, or NULL. */
const json_t *fatia_ctlr_cond_get(const json_t *obj, const char *type);
bool fatia_ctlr_cond_true(const json_t *obj, const char *type);
/* Sets a condition in conds (a JSON array) in place: lastTransitionTime changes only with the
 * status. Returns true when anything changed. */
bool fatia_ctlr_cond_set(json_t *conds, const char *type, const char *status, const char *reason,
                         const char *message, fatia_usec_t now);

/* RFC 3339 "now" as a JSON string. */
json_t *fatia_ctlr_json_time(fatia_usec_t t);

/* ---- the controllers (each file's entry points) ---- */

struct fatia_ctlr_metrics;
struct fatia_ctlr_metrics *fatia_ctlr_metrics(struct ctl *c);

struct device_ctl;
struct workload_ctl;
struct job_ctl;
struct admission_ctl;
struct placement_ctl;
struct gc_ctl;
struct nodelifecycle_ctl;
struct replicaset_ctl;
struct deployment_ctl;
struct sa_ctl;
struct endpoints_ctl;
struct cronjob_ctl;
struct statefulset_ctl;
struct daemonset_ctl;
struct isvc_ctl;
struct llmisvc_ctl;

/* inferenceservice.c: KServe InferenceService -> Deployment + InferencePool + status. */
int fatia_ctlr_isvc_ctl_new(struct ctl *c, struct isvc_ctl **ret);
void fatia_ctlr_isvc_ctl_free(struct isvc_ctl *ic);
/* llmisvc.c: KServe LLMInferenceService -> decode and prefill Deployments + InferencePool. */
int fatia_ctlr_llmisvc_ctl_new(struct ctl *c, struct llmisvc_ctl **ret);
void fatia_ctlr_llmisvc_ctl_free(struct llmisvc_ctl *lc);
int fatia_ctlr_device_ctl_new(struct ctl *c, struct device_ctl **ret);
void fatia_ctlr_device_ctl_free(struct device_ctl *d);
int fatia_ctlr_workload_ctl_new(struct ctl *c, struct workload_ctl **ret);
void fatia_ctlr_workload_ctl_free(struct workload_ctl *w);
int fatia_ctlr_job_ctl_new(struct ctl *c, struct job_ctl **ret);
void fatia_ctlr_job_ctl_free(struct job_ctl *j);
int fatia_ctlr_admission_ctl_new(struct ctl *c, struct admission_ctl **ret);
void fatia_ctlr_admission_ctl_free(struct admission_ctl *a);
int fatia_ctlr_placement_ctl_new(struct ctl *c, struct device_ctl *dev, struct placement_ctl **ret);
void fatia_ctlr_placement_ctl_free(struct placement_ctl *p);
int fatia_ctlr_gc_ctl_new(struct ctl *c, struct gc_ctl **ret);
void fatia_ctlr_gc_ctl_free(struct gc_ctl *g);
int fatia_ctlr_nodelifecycle_ctl_new(struct ctl *c, struct nodelifecycle_ctl **ret);
void fatia_ctlr_nodelifecycle_ctl_free(struct nodelifecycle_ctl *n);
/* Taints the node-lifecycle controller owns (node.kubernetes.io/unreachable, not-ready). */
bool fatia_ctlr_lifecycle_taint(const json_t *t);
/* What placement must see of a Node beyond its pool's taints: its lifecycle taints, and
 * node.kubernetes.io/unschedulable:NoSchedule for spec.unschedulable (cordon). NULL: none. */
json_t *fatia_ctlr_node_runtime_taints(const json_t *node);
/* The taints to publish on Node have: want_taints without node.kubernetes.io/ ones, then have's
 * lifecycle taints, then the cordon taint if have is unschedulable. A new array. */
json_t *fatia_ctlr_node_taints_merge(const json_t *have, const json_t *want_taints);
int fatia_ctlr_replicaset_ctl_new(struct ctl *c, struct replicaset_ctl **ret);
void fatia_ctlr_replicaset_ctl_free(struct replicaset_ctl *r);
int fatia_ctlr_deployment_ctl_new(struct ctl *c, struct deployment_ctl **ret);
void fatia_ctlr_deployment_ctl_free(struct deployment_ctl *d);
int fatia_ctlr_sa_ctl_new(struct ctl *c, struct sa_ctl **ret);
struct quotastatus_ctl;
int fatia_ctlr_quotastatus_ctl_new(struct ctl *c, struct quotastatus_ctl **ret);
void fatia_ctlr_quotastatus_ctl_free(struct quotastatus_ctl *qs);
struct pdb_ctl;
int fatia_ctlr_pdb_ctl_new(struct ctl *c, struct pdb_ctl **ret);
void fatia_ctlr_pdb_ctl_free(struct pdb_ctl *pc);
void fatia_ctlr_sa_ctl_free(struct sa_ctl *a);
/* localpath.c: the local-path provisioner and the default StorageClass. */
struct localpath_ctl;
int fatia_ctlr_localpath_ctl_new(struct ctl *c, struct localpath_ctl **ret);
void fatia_ctlr_localpath_ctl_free(struct localpath_ctl *lc);
/* svcproxy.c: a Service's nodePorts on 127.0.0.1, forwarded to its ready endpoints. */
struct svcproxy_ctl;
int fatia_ctlr_svcproxy_ctl_new(struct ctl *c, struct svcproxy_ctl **ret);
void fatia_ctlr_svcproxy_ctl_free(struct svcproxy_ctl *sp);
int fatia_ctlr_endpoints_ctl_new(struct ctl *c, struct endpoints_ctl **ret);
void fatia_ctlr_endpoints_ctl_free(struct endpoints_ctl *e);
int fatia_ctlr_cronjob_ctl_new(struct ctl *c, struct cronjob_ctl **ret);
void fatia_ctlr_cronjob_ctl_free(struct cronjob_ctl *cj);
int fatia_ctlr_statefulset_ctl_new(struct ctl *c, struct statefulset_ctl **ret);
void fatia_ctlr_statefulset_ctl_free(struct statefulset_ctl *s);
int fatia_ctlr_daemonset_ctl_new(struct ctl *c, struct daemonset_ctl **ret);
void fatia_ctlr_daemonset_ctl_free(struct daemonset_ctl *d);

struct device_ctl *fatia_ctlr_device(struct ctl *c);
struct admission_ctl *fatia_ctlr_admission(struct ctl *c);
struct placement_ctl *fatia_ctlr_placement(struct ctl *c);

/* Metrics each controller renders (Prometheus text format). */
struct fatia_buf;
void fatia_ctlr_admission_ctl_metrics(struct admission_ctl *a, struct fatia_buf *out);
void fatia_ctlr_placement_ctl_metrics(struct placement_ctl *p, struct fatia_buf *out);
void fatia_ctlr_device_ctl_metrics(struct device_ctl *d, struct fatia_buf *out);

#endif
