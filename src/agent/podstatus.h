/*
 * agent/podstatus.h: a pod's status as kubelet reports it, from what its shim recorded. Pure.
 */
#ifndef FATIA_AGENT_PODSTATUS_H
#define FATIA_AGENT_PODSTATUS_H

#include <jansson.h>
#include <stdbool.h>

#include "base/clock.h"

/* The `status` object for pod: phase, reason, message, startTime, hostIP/podIP, the conditions
 * the node agent owns (PodReadyToStartContainers, Initialized, ContainersReady, Ready; others,
 * such as PodScheduled or DisruptionTarget, are left to whoever writes them), and the container
 * statuses in the order of the spec. shim is the shim's status file (shim.h), or NULL before the
 * shim runs: then every container is waiting with wait_reason / wait_msg and phase is Pending.
 * start_time: RFC 3339. A condition whose status did not change keeps its lastTransitionTime.
 * New reference, NULL on OOM. */
json_t *fatia_pod_status_build(const json_t *pod, const json_t *shim, const char *start_time,
                               const char *wait_reason, const char *wait_msg, fatia_usec_t now);

/* Whether the pod's status already holds everything status says (then no write is needed). */
bool fatia_pod_status_same(const json_t *pod, const json_t *status);

#endif
