/*
 * controller/device_inventory.c: the device controller's side of a node's own GPUs: a node role
 * (daemon/node_role.c) reads its host's GPUs through NVML and publishes them in its Node's
 * annotation fatia.dev/gpu-inventory (the format: supply/inventory_json.c); this plans that node
 * from them instead of its NodePool's simulated GPUs (docs/fleet.md, "A node role's own GPUs").
 *
 * Model: before planning, each node of the simulated inventory whose Node carries the annotation
 * gets the published GPUs (real UUIDs, PCI bus ids, memory, MIG mode and instances) and its
 * host's cpu, memory and pods (the annotation's "host"; its other resources, its labels and taints
 * stay its pool's), and the sharing policies apply as to any node. So its
 * ResourceSlices carry the host's UUIDs, placement gives pods those, and the node agent's health
 * annotation (keyed by NVML UUIDs, device_health.c) matches them. A change of the annotation
 * re-plans, as the health one does.
 *
 * Trust: only the node itself (node-restriction holds a node's writes to its own Node,
 * apiserver/nodeauth.c) and the admin may write a Node; the reader still checks every field
 * (inventory_json.c), because a bad value must not take the fleet's plan down. A malformed or
 * absurd annotation is a Warning Event on the Node naming the field (once per value), and the
 * node keeps the last inventory accepted for it (this controller's memory: the last good text
 * per node), or the simulated GPUs when there was none; the other nodes re-plan as usual.
 * Rejected: refusing the whole re-plan (one node's bad annotation would freeze every node's
 * plan), and planning the node with no GPUs (a typo would stop its running pods' slices).
 * The last good text is not persisted: after a control-plane restart a node whose annotation is
 * bad falls back to its simulated GPUs until it publishes a good one.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "controller/ctl.h"
#include "controller/device.h"
#include "supply/inventory.h"

#define COMPONENT "fatia-device-controller"

struct seen {
    char *node; /* the map's key */
    char *good; /* the last text accepted, or NULL */
    char *bad;  /* the last text refused (said once), or NULL */
};

static const char *inventory_text(const json_t *node)
{
    return fatia_json_str(json_object_get(json_object_get(node, "metadata"), "annotations"),
                          FATIA_GPU_INVENTORY_ANNOTATION);
}

static void seen_free(struct seen *s)
{
    if (!s)
        return;
    fatia_free(s->node);
    fatia_free(s->good);
    fatia_free(s->bad);
    fatia_free(s);
}

/* Parses and applies text to n. 0, -ENOMEM, -FATIA_E_INVALID with why. */
static int apply_text(struct fatia_inventory *inv, struct fatia_inv_node *n, const char *text,
                      char *why, size_t why_n)
{
    json_error_t err;
    json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &err);
    int r;

    if (!j) {
        snprintf(why, why_n, "not JSON: %s (at character %d)", err.text, err.position);
        return -FATIA_E_INVALID;
    }
    r = fatia_inventory_node_from_json(inv, n, j, why, why_n);
    json_decref(j);
    return r;
}

int fatia_ctlr_device_inventory_apply(struct ctl *c, struct fatia_strmap *m,
                                      struct fatia_inventory *inv, struct fatia_inv_node *n,
                                      const json_t *node)
{
    const char *text = node ? inventory_text(node) : NULL;
    struct seen *s = fatia_strmap_get(m, n->name);
    char why[300];
    int r;

    if (!text) {
        if (s) { /* no longer published: the pool's GPUs again */
            fatia_strmap_del(m, n->name);
            seen_free(s);
        }
        return 0;
    }
    if (!s) {
        if (!(s = fatia_calloc(1, sizeof(*s))) || !(s->node = fatia_strdup(n->name)) ||
            fatia_strmap_put(m, s->node, s) < 0) {
            seen_free(s);
            return -ENOMEM;
        }
    }
    r = apply_text(inv, n, text, why, sizeof(why));
    if (r == -ENOMEM)
        return r;
    if (r == 0) {
        if (!s->good || strcmp(s->good, text)) {
            char *g = fatia_strdup(text);
            if (!g)
                return -ENOMEM;
            fatia_free(s->good);
            s->good = g;
            fatia_info("device: node %s: planned from its published inventory (%u GPU(s))", n->name,
                       n->n_gpus);
        }
        fatia_free(s->bad);
        s->bad = NULL;
        return 0;
    }
    if (!s->bad || strcmp(s->bad, text)) {
        char *b = fatia_strdup(text);
        if (!b)
            return -ENOMEM;
        fatia_free(s->bad);
        s->bad = b;
        fatia_warn("device: node %s: annotation %s refused: %s", n->name,
                   FATIA_GPU_INVENTORY_ANNOTATION, why);
        fatia_ctlr_event(c, node, COMPONENT, "Warning", "InvalidGPUInventory",
                         "annotation %s refused: %s; the node keeps %s",
                         FATIA_GPU_INVENTORY_ANNOTATION, why,
                         s->good ? "its last valid inventory" : "its NodePool's GPUs");
    }
    if (s->good && apply_text(inv, n, s->good, why, sizeof(why)) == -ENOMEM)
        return -ENOMEM;
    return 0;
}

bool fatia_ctlr_device_inventory_changed(const json_t *old, const json_t *obj)
{
    const char *a = old ? inventory_text(old) : NULL, *b = obj ? inventory_text(obj) : NULL;

    return (a || b) && (!a || !b || strcmp(a, b));
}

void fatia_ctlr_device_inventory_release(struct fatia_strmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key)
            seen_free(m->slots[i].val);
    fatia_strmap_release(m);
}
