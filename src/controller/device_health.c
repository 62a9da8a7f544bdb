/*
 * controller/device_health.c: the device controller's side of GPU health: the GPUs a node agent
 * took out of service (agent/gpuhealth_agent.c) leave the node's plan.
 *
 * Model: the Node annotation fatia.dev/gpu-health holds {"GPU-uuid": {reason, message, since}};
 * every GPU of the inventory whose UUID is a key is marked unhealthy before planning, and the
 * planner (supply/plan.c) gives it capacity but no allocatable and no slices. So the Node's
 * allocatable drops, its ResourceSlices lose the GPU's devices, and placement cannot choose them;
 * when the agent removes the entry the next plan has them again. A malformed annotation marks
 * nothing (and says so once per node change): the agent writes it, and only the agent and the
 * admin may write Nodes.
 */
#include "base/compat.h"

#include "base/json.h"
#include "base/log.h"
#include "controller/ctl.h"
#include "controller/device.h"
#include "supply/inventory.h"

#define ANNOTATION "fatia.dev/gpu-health"

static const char *health_text(const json_t *node)
{
    return fatia_json_str(json_object_get(json_object_get(node, "metadata"), "annotations"),
                          ANNOTATION);
}

void fatia_ctlr_device_health_apply(struct fatia_inv_node *n, const json_t *node)
{
    const char *text = health_text(node);
    json_t *val;

    if (!text)
        return;
    val = json_loads(text, 0, NULL);
    if (!json_is_object(val)) {
        fatia_warn("device: node %s: annotation %s is not a JSON object; no GPU is marked", n->name,
                   ANNOTATION);
        json_decref(val);
        return;
    }
    for (uint32_t i = 0; i < n->n_gpus; i++)
        if (json_object_get(val, n->gpus[i].uuid))
            n->gpus[i].unhealthy = true;
    json_decref(val);
}

bool fatia_ctlr_device_health_changed(const json_t *old, const json_t *obj)
{
    const char *a = old ? health_text(old) : NULL, *b = obj ? health_text(obj) : NULL;

    return (a || b) && (!a || !b || strcmp(a, b));
}
