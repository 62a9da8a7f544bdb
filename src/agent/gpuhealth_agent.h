/*
 * agent/gpuhealth_agent.h: GPU health from NVML events, as the node agent runs it
 * (gpuhealth_agent.c; which event means what is gpuhealth.h's).
 */
#ifndef FATIA_AGENT_GPUHEALTH_AGENT_H
#define FATIA_AGENT_GPUHEALTH_AGENT_H

#include <stdbool.h>
#include <stddef.h>

struct fatia_agent;
struct fatia_agent_opts;
struct apod;
struct fatia_buf;
struct fatia_agent_gpuhealth;

/* The Node annotation that lists the node's GPUs out of service: a JSON object
 * {"GPU-uuid": {"reason", "message", "since"}}. Written by the node agent only; the device
 * controller drops those GPUs' devices from the Node's allocatable and its ResourceSlices. */
#define FATIA_GPUHEALTH_ANNOTATION "fatia.dev/gpu-health"

/* Starts the watch (options gpu-health, gpu-health-nvml, gpu-health-node,
 * gpu-health-recover, gpu-health-ignore-xids, gpu-health-enable-xids). *ret NULL (and 0) when
 * it is off or NVML cannot be loaded (logged). 0, -EINVAL (a bad option, logged) or -ENOMEM. */
int fatia_agent_gpuhealth_start(struct fatia_agent *a, struct fatia_agent_gpuhealth **ret);
void fatia_agent_gpuhealth_free(struct fatia_agent_gpuhealth *g);

/* agent.c's option parser: handles kv (value v) when it is a gpu-health* key, *ret_r = 0 or
 * -EINVAL with why; false when the key is not one of them. */
bool fatia_agent_gpuhealth_opt(struct fatia_agent_opts *o, const char *kv, const char *v, char *why,
                               size_t why_n, int *ret_r);

/* Its counters and gauges in the Prometheus text format (g may be NULL: nothing). 0 or -ENOMEM. */
int fatia_agent_gpuhealth_metrics(const struct fatia_agent_gpuhealth *g, struct fatia_buf *out);

/* agent.c: the pod holds a slice of a GPU that left service: a Warning Event GPUUnhealthy with
 * msg, then stopped at once with that reason (phase Failed). */
void fatia_agent_gpu_unhealthy(struct fatia_agent *a, struct apod *p, const char *msg);

#endif
