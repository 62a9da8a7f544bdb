/*
 * controller/controller.h: fatiad's controllers, as a library (docs/controllers.md).
 *
 * The controllers tie the layers together over the Kubernetes API: they are API clients (the
 * interface of client/client.h; fatiad passes in the API server's in-process client) that
 * watch objects and write the decisions of the pure engines back:
 *
 *   device      supply layer: inventory (NVML or the simulated fleet of the NodePools) + the
 *               GPUSharingPolicies -> plan -> Node and ResourceSlice objects; re-plans when a
 *               policy or a pool changes, never taking a slice from a running pod;
 *   workload    Kueue's job integrations: a Job or Pod labelled kueue.x-k8s.io/queue-name gets a
 *               Workload; admission unsuspends the Job (ungates the Pod), eviction suspends it
 *               (deletes the Pod), the end of the Job marks the Workload Finished;
 *   job         Kubernetes' Job controller: pods per parallelism and completions, counts with the
 *               job-tracking finalizer, backoffLimit, activeDeadlineSeconds, suspension;
 *   admission   the control layer's Kueue engine over the live objects: Workload status
 *               (admission and conditions), evictions, ClusterQueue and LocalQueue status;
 *   placement   the demand layer's placement: binds pods to nodes and slices (spec.nodeName and
 *               the annotations fatia.dev/slices and fatia.dev/devices), frees slices when pods
 *               end, and rebuilds its state from the bound pods before binding anything new;
 *   gc          deletes what an ownerReference ties to a deleted owner (Pods of a Job or a
 *               Notebook, Workloads);
 *   notebook    Kubeflow's notebook controller: a kubeflow.org/v1 Notebook runs as one Kueue pod,
 *               stopped and started by the annotation kubeflow-resource-stopped (notebook.c).
 *
 * fatia_controllers_webhooks describes the admission plugins that belong with them (the tenant
 * rules, hardware profile injection, the quota door, Kueue's Job and Pod defaults);
 * fatia_controllers_tenant_webhooks the tenant rules alone, for a daemon without controllers;
 * the daemon registers one or the other with the API server. The library knows the API only through client/client.h and client/plugin.h: it does
 * not link the API server, the store or SQLite.
 */
#ifndef FATIA_CONTROLLER_CONTROLLER_H
#define FATIA_CONTROLLER_CONTROLLER_H

#include <sys/socket.h>
#include <sys/types.h>

#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/clock.h"
#include "client/client.h"
#include "client/plugin.h"

struct event_base;
struct fatia_controllers;

enum fatia_inventory_choice {
    FATIA_INVENTORY_AUTO, /* NVML when it finds a GPU, else the simulated fleet */
    FATIA_INVENTORY_SIM,
    FATIA_INVENTORY_NVML,
};

struct fatia_controllers_opts {
    enum fatia_inventory_choice inventory;
    const char *catalog;          /* GPU catalog directory; NULL: the default (supply/catalog.h) */
    const char *nvml_lib;         /* NULL: libnvidia-ml.so.1 */
    const char *node_name;        /* nvml: the node's name; NULL: the host name */
    const char *placement_policy; /* binpack (default), bestfit, spread, fragmentation */
    fatia_usec_t job_backoff;     /* first delay before a failed Job pod is replaced; 0: 10 s */
    fatia_usec_t status_interval; /* ClusterQueue/LocalQueue status refresh; 0: 1 s */
    /* workbenches (notebook.c, culler.c): where the Jupyter of Notebook ns/name listens (the
     * daemon's, from the agent: apiserver/nbproxy.h's fatia_nbproxy_upstream_fn: a unix socket
     * with the uid that must serve it, or the pod's address with uid (uid_t)-1); NULL: no
     * culling */
    int (*nb_upstream)(void *arg, const char *ns, const char *name,
                       struct sockaddr_storage *ret_addr, socklen_t *ret_len, uid_t *ret_uid);
    void *nb_upstream_arg;
    fatia_usec_t cull_idle;   /* stop a workbench idle this long; 0: never */
    fatia_usec_t cull_period; /* how often to look; 0: 60 s */
    /* the GPU-idleness policy (gpuidle.c): evict best-effort work whose GPUs were idle this
     * long (0: never); best-effort is a Workload priority below gpu_idle_priority_below (0:
     * 1000) */
    fatia_usec_t gpu_idle_after;
    int64_t gpu_idle_priority_below;
    /* node lifecycle (nodelifecycle.c): a lost node's pods that do not tolerate its taint are
     * evicted after this many seconds (default 300 unless set) */
    int64_t default_toleration_s;
    bool default_toleration_set;
    /* the local-path provisioner (localpath.c): the directory of its volumes, the node agent's
     * pod directory's pv/ (NULL: /var/lib/fatia/pv) */
    const char *local_path_dir;
    /* fatiad's CA certificate (PEM), published as the ConfigMap kube-root-ca.crt (key ca.crt)
     * of every namespace (serviceaccount.c); NULL: none is published */
    const char *root_ca;
};

/* Builds the controllers on base over client (borrowed; both must outlive the controllers).
 * Nothing runs until fatia_controllers_start. 0 or -ENOMEM. */
int fatia_controllers_new(struct event_base *base, struct fatia_client *client,
                          const struct fatia_controllers_opts *opts,
                          struct fatia_controllers **ret);

/* Starts the watches; the controllers act once their caches are synced. 0 or a negative code
 * (a watch could not start). */
int fatia_controllers_start(struct fatia_controllers *c);

/* Stops watching and acting (writes in flight still complete): call before shutting the API
 * server down, whose shutdown ends every watch. Idempotent. */
void fatia_controllers_stop(struct fatia_controllers *c);

void fatia_controllers_free(struct fatia_controllers *c);

/* Prometheus metrics (text exposition format 0.0.4) appended to out. 0 or -ENOMEM. */
int fatia_controllers_metrics(struct fatia_controllers *c, struct fatia_buf *out);

/* True when every work queue is empty and no write is in flight (for tests and shutdown). */
bool fatia_controllers_idle(const struct fatia_controllers *c);

/* The admission plugins of the controllers, in the order they must be registered (plugins of one
 * phase run in registration order): the tenant rules (tenancy-restrict, mutating, first; and
 * tenancy-status, validating: controller/tenancy.h), hardware-profile injection
 * (demand/profile.h) for Pods, Jobs and Workloads, the quota door, then Kueue's defaults (a queued Job is created suspended, a queued Pod gets the
 * scheduling gate kueue.x-k8s.io/admission), then LimitRanger and ResourceQuota (quota.c, as
 * kube-apiserver's: LimitRange defaults and min/max, ResourceQuota hard limits), then the Service
 * ClusterIP and nodePort allocator (svcalloc.c), then kueue-apps (kueue_apps.c: a queued
 * Deployment's or StatefulSet's pod template gets the queue and, for a StatefulSet, Kueue's pod
 * group). Their admit functions read HardwareProfiles from
 * client's cache (borrowed: it must outlive the plugins). The daemon registers out[0..*ret_n)
 * with the API server before anything is written. 0, or -EINVAL when a kind they act on is not
 * in the registry. */
#define FATIA_CONTROLLERS_N_WEBHOOKS 9
int fatia_controllers_webhooks(struct fatia_client *client,
                               struct fatia_admission out[FATIA_CONTROLLERS_N_WEBHOOKS],
                               size_t *ret_n);

/* The tenant rules alone, for a daemon without controllers (--no-controllers): tenancy-restrict,
 * tenancy-status and the closed quota door (a tenant's new Pod or Job that requests a GPU
 * resource is refused: nothing would admit it). They read no cache. The rules no grant lifts
 * hold in every mode: the daemon registers these when it does not register
 * fatia_controllers_webhooks. 0 or -EINVAL. */
#define FATIA_CONTROLLERS_N_TENANT_WEBHOOKS 3

/* LimitRanger (mutating, Pod create) and ResourceQuota (validating, create and update of every
 * namespaced kind), reading LimitRanges, ResourceQuotas and the objects counted from client's
 * cache (controller/quota.c). 0 or -EINVAL. */
int fatia_controller_quota_plugins(struct fatia_client *client, struct fatia_admission out[2]);
/* service-ip-allocator (mutating, Service create and update): the ClusterIP and nodePorts, free
 * by client's cache (controller/svcalloc.c). 0 or -EINVAL. */
int fatia_controller_svcalloc_plugin(struct fatia_client *client, struct fatia_admission *out);
/* ResourceQuota scopes and scopeSelector (quota_scope.c, pure): whether quota has any, and
 * whether it tracks obj (is_pod: obj is a Pod; every other kind is outside a scoped quota). */
bool fatia_controller_quota_scoped(const json_t *quota);
bool fatia_controller_quota_tracks(const json_t *quota, bool is_pod, const json_t *obj);
/* kueue-apps (mutating, Deployment and StatefulSet create and update: controller/kueue_apps.c).
 * 0 or -EINVAL. */
int fatia_controller_kueue_apps_plugin(struct fatia_admission *ret);
/* What quota's namespace uses of each resource in spec.hard, counted from client's cache as the
 * admission plugin counts: {"requests.cpu": "250m", "pods": "2", ...}, new reference. */
int fatia_controller_quota_used(struct fatia_client *client, const json_t *quota, json_t **ret);
int fatia_controllers_tenant_webhooks(
    struct fatia_admission out[FATIA_CONTROLLERS_N_TENANT_WEBHOOKS], size_t *ret_n);

#endif
