/*
 * gateway/kubepool.h: a gateway pool that follows a GIE InferencePool
 * (inference.networking.k8s.io/v1) through the plain Kubernetes REST API, so it works against
 * fatiad's API server and against a kube-apiserver alike.
 *
 * The pool's spec.selector.matchLabels picks Pods in its namespace; every Ready pod with an IP
 * (and no deletionTimestamp) gives one endpoint http://PODIP:PORT per spec.targetPorts entry,
 * labelled with the pod's labels. Pods are listed, then watched from the list's resourceVersion
 * (with bookmarks); a watch that ends is resumed from the last version seen, and a 410 Gone means
 * list again. The InferencePool itself is read once at start (from the pool file or the API).
 *
 * Threads: the API is spoken with libcurl on a thread of its own, so a slow API server never
 * stalls the proxy's loop; each change of the endpoint set is handed to the loop thread
 * (event_active under a mutex), which applies it with fatia_gateway_set_endpoints.
 *
 * Credentials: --server/--token/--token-file/--certificate-authority/--insecure-skip-tls-verify,
 * else the current context of the kubeconfig ($KUBECONFIG, ~/.kube/config): server,
 * certificate-authority(-data), insecure-skip-tls-verify, token, tokenFile, client-certificate(-
 * data) and client-key(-data). Exec plugins are not supported.
 */
#ifndef FATIA_GATEWAY_KUBEPOOL_H
#define FATIA_GATEWAY_KUBEPOOL_H

#include "base/compat.h"

#include <jansson.h>

struct event_base;
struct fatia_gateway;
struct fatia_kubepool;

struct fatia_kube_config {
    const char *server;
    const char *kubeconfig;
    const char *token;
    const char *token_file;
    const char *ca_file;
    bool insecure;
};

/* All-pools mode (ns_name "*"): every InferencePool of the cluster at once, for one gateway
 * routing by model (fatia_gateway_config.route_by_model). The pools and the pods are listed
 * every FATIA_KUBEPOOL_POLL_MS (a poll, not a watch: two LISTs a period, simple and bounded; a
 * watch of both kinds is the way to scale it). Each endpoint is labelled with
 * FATIA_GATEWAY_POOL_LABEL "namespace/name" and FATIA_GATEWAY_MODEL_LABEL "name" (the model
 * name clients send: an InferenceService's served model name is its name). A pool's endpoints come
 * from the pods of its own namespace only; an endpoint several pools claim (the same address:
 * processes share 127.0.0.1) serves the oldest of them (creationTimestamp, then namespace/name),
 * so that a tenant's newer pool can neither take nor share another's model server. */
#define FATIA_KUBEPOOL_POLL_MS 500

/* Starts following a pool: pool_obj (an InferencePool object, borrowed) or ns_name
 * ("NAMESPACE/NAME", read from the API; "*": all pools, above). Returns 0, or < 0 with why (bad kubeconfig, pool not
 * found or invalid, API unreachable at start). */
int fatia_kubepool_start(struct event_base *base, struct fatia_gateway *g,
                         const struct fatia_kube_config *kc, const json_t *pool_obj,
                         const char *ns_name, struct fatia_kubepool **ret, char *why, size_t why_n);
/* Stops the thread and frees everything; NULL is fine. */
void fatia_kubepool_stop(struct fatia_kubepool *kp);

/* The endpoints of a pool for a set of pods (a PodList's items): exposed for tests. Returns a
 * new array of {url, labels}. */
json_t *fatia_kubepool_endpoints(const json_t *pool, const json_t *pods);
/* All-pools mode's endpoints for lists of pools and pods (exposed for tests). */
json_t *fatia_kubepool_all_endpoints(const json_t *pools, const json_t *pods);

#endif
