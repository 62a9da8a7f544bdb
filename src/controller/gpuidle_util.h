/*
 * controller/gpuidle_util.h: what the GPU-idleness policy reads as a pod's GPU utilisation
 * (gpuidle_util.c). Pure.
 */
#ifndef FATIA_CONTROLLER_GPUIDLE_UTIL_H
#define FATIA_CONTROLLER_GPUIDLE_UTIL_H

#include <jansson.h>

#include "base/clock.h"

#define FATIA_CTLR_ANN_SYNTHETIC_UTIL "fatia.dev/synthetic-gpu-utilization"
#define FATIA_CTLR_COND_GPU_UTIL      "fatia.dev/GPUUtilization" /* agent/gpuwatch_agent.h's */
/* a sample older than this is unknown: the agent publishes every 10 s at most (gpu-util-every) */
#define FATIA_CTLR_GPU_UTIL_STALE (30 * FATIA_USEC_PER_SEC)

/* The utilisation of pod (percent) on node (its Node object, NULL when unknown) at wall-clock
 * time now, or -1 when unknown (the caller treats unknown as busy). */
int fatia_ctlr_gpu_util_of(const json_t *pod, const json_t *node, fatia_usec_t now);

#endif
