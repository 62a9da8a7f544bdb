/*
 * controller/gpuidle_util.c: a pod's GPU utilisation as the GPU-idleness policy reads it
 * (gpuidle.c; docs/selfservice.md, "Idle GPUs of other pods").
 *
 * Model: on a node whose label fatia.dev/inventory is nvml (a real GPU), the figure is the pod's
 * status condition fatia.dev/GPUUtilization, which the node agent writes through the status
 * subresource from NVML's per-process SM utilisation (agent/gpuutil_agent.c): status True, the
 * message starting with "<N>%", lastProbeTime no older than FATIA_CTLR_GPU_UTIL_STALE. On any
 * other node (the simulated fleet) it is the annotation fatia.dev/synthetic-gpu-utilization
 * (0 when absent).
 *
 * Invariants: unknown is -1 and never idle: on an NVML node no condition, status other than True,
 * a message without a leading percentage, a missing or unparsable lastProbeTime, one older than
 * the stale bound or more than the bound in the future; on the simulated fleet an annotation that
 * is not 0..100. The synthetic annotation is never read on an NVML node: tenants can write
 * annotations (by design, so that a test or a demo can simulate load), and tenants cannot write
 * pods/status. Pure: no I/O, the clock is the caller's.
 *
 * Rejected: the annotation on both kinds of node (a tenant would keep an idle pod alive with
 * one write); the agent's sample time from the condition's lastTransitionTime (it moves only
 * with the status).
 */
#include "base/compat.h"

#include "controller/gpuidle_util.h"

#include "base/json.h"
#include "base/str.h"

static const json_t *meta_get(const json_t *obj, const char *map, const char *key)
{
    return json_object_get(json_object_get(json_object_get(obj, "metadata"), map), key);
}

static int from_condition(const json_t *pod, fatia_usec_t now)
{
    const json_t *conds = json_object_get(json_object_get(pod, "status"), "conditions");
    const json_t *c, *found = NULL;
    const char *msg, *probe;
    fatia_usec_t at;
    size_t i;
    int v = 0, digits = 0;

    json_array_foreach(conds, i, c)
    {
        const char *t = fatia_json_str(c, "type");
        if (t && !strcmp(t, FATIA_CTLR_COND_GPU_UTIL))
            found = c;
    }
    if (!found)
        return -1;
    msg = fatia_json_str(found, "message");
    probe = fatia_json_str(found, "lastProbeTime");
    if (!fatia_json_str(found, "status") || strcmp(fatia_json_str(found, "status"), "True") ||
        !msg || !probe || fatia_time_parse_rfc3339(probe, &at) < 0)
        return -1;
    if (at + FATIA_CTLR_GPU_UTIL_STALE < now || at > now + FATIA_CTLR_GPU_UTIL_STALE)
        return -1; /* stale, or from a clock we cannot trust */
    for (; msg[digits] >= '0' && msg[digits] <= '9' && digits < 4; digits++)
        v = v * 10 + (msg[digits] - '0');
    if (digits == 0 || msg[digits] != '%' || v > 100)
        return -1;
    return v;
}

int fatia_ctlr_gpu_util_of(const json_t *pod, const json_t *node, fatia_usec_t now)
{
    const json_t *inv = meta_get(node, "labels", "fatia.dev/inventory");
    const json_t *syn = meta_get(pod, "annotations", FATIA_CTLR_ANN_SYNTHETIC_UTIL);
    int v = 0;

    if (json_is_string(inv) && !strcmp(json_string_value(inv), "nvml"))
        return from_condition(pod, now);
    if (!syn)
        return 0;
    if (!json_is_string(syn) || fatia_parse_int(json_string_value(syn), 0, 100, &v) < 0)
        return -1; /* not a percentage: unknown, so busy */
    return v;
}
