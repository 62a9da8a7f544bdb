/*
 * agent/gpuwatch_agent.h: the GPU memory watchdog as the node agent runs it (gpuwatch_agent.c;
 * the sampling and the verdict are gpuwatch.h's).
 */
#ifndef FATIA_AGENT_GPUWATCH_AGENT_H
#define FATIA_AGENT_GPUWATCH_AGENT_H

#include <stdint.h>

#define FATIA_AGENT_COND_GPU_UTIL "fatia.dev/GPUUtilization"

struct fatia_agent;
struct apod;
struct fatia_buf;
struct fatia_agent_gpuwatch;

/* Starts the watchdog on the agent's loop (options gpu-watch, gpu-watch-nvml,
 * gpu-watch-reserve). *ret NULL (and 0) when it is off or NVML cannot be loaded (logged). 0 or
 * -ENOMEM. */
int fatia_agent_gpuwatch_start(struct fatia_agent *a, struct fatia_agent_gpuwatch **ret);
void fatia_agent_gpuwatch_free(struct fatia_agent_gpuwatch *g);

/* Its counters in the Prometheus text format (g may be NULL: zeros). 0 or -ENOMEM. */
int fatia_agent_gpuwatch_metrics(const struct fatia_agent_gpuwatch *g, struct fatia_buf *out);

/* agent.c: the pod is over its GPU memory limit: a Warning Event GPUMemoryLimitExceeded with
 * msg, then stopped at once with that reason (phase Failed). */
void fatia_agent_gpu_exceeded(struct fatia_agent *a, struct apod *p, const char *msg);

/* agent.c: writes one condition into the pod's status (a strategic merge through the status
 * subresource, which only the node agent may write: tenants cannot forge it). Best effort: a
 * failed write is not retried (the next one replaces it). 0 or a negative code. */
struct json_t;
int fatia_agent_pod_condition(struct fatia_agent *a, struct apod *p, struct json_t *cond);

/* gpuutil_agent.c: the condition fatia.dev/GPUUtilization for util (percent, -1: unknown)
 * sampled at now over window_ms. New reference, NULL on OOM. */
struct json_t *fatia_agent_gpuutil_condition(int util, unsigned window_ms, int64_t now);

#endif
