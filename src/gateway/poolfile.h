/*
 * gateway/poolfile.h: the gateway's pool file (`fatia gateway -f POOL.yaml`).
 *
 * Two shapes, told apart by the document's kind:
 *
 *   1. fatia's static pool (no apiVersion/kind):
 *        endpoints:
 *          - url: http://10.0.0.5:8000
 *            labels: {zone: a}
 *        selector: "zone=a"                 # optional label selector over the endpoints
 *        scheduling:
 *          policy: cache-aware              # round-robin | least-request | oracle
 *          weights: {queue: 2, kvCache: 2, prefix: 3, inflight: 0, tokenLoad: 0}
 *          queueLimit: 0                    # 429 past it; 0 = none
 *          tokenLoadThreshold: 4194304
 *          maxPrefixBlocks: 2048
 *          lruCapacity: 0                   # blocks per endpoint; 0 = from its metrics
 *        metrics: {interval: 50ms, staleness: 2s}
 *        health: {interval: 1s, timeout: 2s, failureThreshold: 3}
 *
 *   2. a GIE InferencePool (inference.networking.k8s.io/v1): its pods are found through the
 *      Kubernetes API (kubepool.h); `scheduling` may then come from the command line.
 *
 * Every error names file:line and the field path.
 */
#ifndef FATIA_GATEWAY_POOLFILE_H
#define FATIA_GATEWAY_POOLFILE_H

#include "base/compat.h"

#include <jansson.h>

#include "gateway/gateway.h"
#include "model/diag.h"

struct fatia_pool_file {
    json_t *endpoints;      /* array of {url, labels}, or NULL; owned */
    json_t *inference_pool; /* the InferencePool object, or NULL; owned */
    char *selector;         /* owned, or NULL */
};

/* Reads path into ret and applies its scheduling, metrics and health settings to cfg. 0,
 * -FATIA_E_INVALID (diag says why), -ENOENT, -ENOMEM. */
int fatia_pool_file_load(const char *path, struct fatia_gateway_config *cfg,
                         struct fatia_pool_file *ret, struct fatia_diag *diag);
void fatia_pool_file_release(struct fatia_pool_file *p);

/* Parses "queue=2,kv=2,prefix=3,inflight=0,tokens=0" (any subset) into w. 0 / -EINVAL. */
int fatia_weights_parse(const char *s, struct fatia_sched_weights *w);

#endif
