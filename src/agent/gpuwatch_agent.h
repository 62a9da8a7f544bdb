/*
 * agent/gpuwatch_agent.h: the GPU memory watchdog as the node agent runs it (gpuwatch_agent.c;
 * the sampling and the verdict are gpuwatch.h's).
 */
#ifndef FATIA_AGENT_GPUWATCH_AGENT_H
#define FATIA_AGENT_GPUWATCH_AGENT_H

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

#endif
