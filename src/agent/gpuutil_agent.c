/*
 * agent/gpuutil_agent.c: the pod condition that carries a pod's GPU utilisation on a real node,
 * for the GPU-idleness policy (controller/gpuidle.c; docs/selfservice.md, "Idle GPUs of other
 * pods").
 *
 * Model: the GPU memory watchdog's loop (gpuwatch_agent.c) samples NVML's per-process SM
 * utilisation with the per-process memory, maps pids to pods by cgroup, and, every gpu-util-every
 * (10 s by default) or at once when a pod's utilisation rises, writes the highest figure of the
 * window as the condition
 *
 *     type fatia.dev/GPUUtilization, status True, reason Sampled,
 *     message "<N>% SM utilization (NVML, per process; highest over the pod's GPUs, window W ms)",
 *     lastProbeTime: the sample's time
 *
 * or status Unknown, reason UtilizationUnknown, when NVML cannot tell for one of the pod's GPUs.
 * The condition goes through the status subresource: the default roles give tenants no write on
 * pods/status (rbac_defaults.c), and a pod update through the main resource keeps the stored
 * status, so a tenant cannot forge it. (The simulated fleet's annotation
 * fatia.dev/synthetic-gpu-utilization stays tenant-writable on purpose: gpuidle.c honours it
 * only on simulated nodes.)
 *
 * Invariants: the message starts with the integer percentage and '%' (what gpuidle.c parses);
 * lastProbeTime is wall-clock time, so that the reader can call an old figure stale.
 *
 * Rejected: an annotation (tenants write metadata); a status field of our own (dropped by
 * clients that round-trip the typed PodStatus, protobuf included).
 */
#include "base/compat.h"

#include <jansson.h>

#include "agent/gpuwatch_agent.h"
#include "base/clock.h"

json_t *fatia_agent_gpuutil_condition(int util, unsigned window_ms, int64_t now)
{
    char when[64], msg[200];

    if (fatia_time_format_rfc3339((fatia_usec_t)now, false, when, sizeof(when)) < 0)
        return NULL;
    if (util >= 0)
        snprintf(msg, sizeof(msg),
                 "%d%% SM utilization (NVML, per process; highest over the pod's GPUs, window "
                 "%u ms)",
                 util, window_ms);
    else
        snprintf(msg, sizeof(msg),
                 "NVML cannot tell the utilization of one of the pod's GPUs (per-process "
                 "utilization not supported there)");
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", FATIA_AGENT_COND_GPU_UTIL, "status",
                     util >= 0 ? "True" : "Unknown", "reason",
                     util >= 0 ? "Sampled" : "UtilizationUnknown", "message", msg, "lastProbeTime",
                     when, "lastTransitionTime", when);
}
