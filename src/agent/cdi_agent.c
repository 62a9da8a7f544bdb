/*
 * agent/cdi_agent.c: the node agent keeps a CDI spec of each node's slices (cdi.h) in
 * <pod dir>/cdi/<node>/fatia.dev-gpu.json, from the node's ResourceSlices (driver
 * gpu.nvidia.com, as the device controller publishes them).
 *
 * Model: every CDI_TICKS ticks (seconds) the spec of each node is built again and written only
 * when it changed; the nodes are --agent nodes when it names them, else the nodes of the pods
 * this agent runs (an agent serving every node runs on the one host those pods share). The host
 * is looked at once, at the first write (--agent cdi-root moves it, for the tests).
 *
 * A container's devices are read from that spec (oci_pod.c): a pod about to start has its node's
 * spec brought up to date first (fatia_agent_cdi_node), so a slice published a moment ago is
 * there; --agent cdi-root is then also where the spec's hostPaths point.
 *
 * A node labelled fatia.dev/inventory=sim (the simulated fleet, src/supply/render.c) gets the simulated
 * spec (cdi.h): its slices are env and interposer mounts, never a host device node, whatever
 * the host has.
 *
 * Rejected: writing on every ResourceSlice event (the agent does not watch them; the client's
 * cache is read instead, and a second of lag changes nothing for a runtime).
 */
#include "base/compat.h"

#include <sys/stat.h>

#include <errno.h>

#include "agent/agent_int.h"
#include "agent/cdi.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "client/client.h"
#include "model/kind.h"
#include "model/kinds/kinds.h"

#define CDI_TICKS 2

struct fatia_agent_cdi {
    struct fatia_cdi_host host;
    bool discovered;
    unsigned ticks;
    json_t *last; /* {node: spec text} */
};

static void add_node(json_t *nodes, const char *n)
{
    if (n && n[0] && !json_object_get(nodes, n) && strlen(n) < 250 && !strchr(n, '/'))
        json_object_set_new(nodes, n, json_true());
}

static json_t *devices_of(struct fatia_agent *a, const char *node)
{
    const struct fatia_kind *k = fatia_kind_find("resource.k8s.io/v1", "ResourceSlice", NULL);
    json_t *all = json_array();
    char name[400];

    for (int i = 0; k && i < 64; i++) {
        const json_t *rs, *spec;

        snprintf(name, sizeof(name), "%s-gpu.nvidia.com-%d", node, i);
        rs = fatia_client_cached(a->client, k, NULL, name);
        if (!rs)
            break;
        spec = json_object_get(rs, "spec");
        if (!fatia_json_str(spec, "nodeName") || strcmp(fatia_json_str(spec, "nodeName"), node))
            continue;
        json_array_extend(all, json_object_get(spec, "devices"));
    }
    return all;
}

/* The node's GPUs are the simulated fleet's (label fatia.dev/inventory=sim); a node without the
 * label (a test's hand-written ResourceSlice) is a host's own. */
static bool node_simulated(struct fatia_agent *a, const char *node)
{
    const json_t *n = fatia_client_cached(a->client, &fatia_kind_node, NULL, node);
    const char *inv = fatia_json_str(json_object_get(json_object_get(n, "metadata"), "labels"),
                                     "fatia.dev/inventory");

    return inv && !strcmp(inv, "sim");
}

static struct fatia_agent_cdi *cdi_of(struct fatia_agent *a)
{
    if (!a->cdi) {
        a->cdi = fatia_calloc(1, sizeof(*a->cdi));
        if (!a->cdi)
            return NULL;
        a->cdi->last = json_object();
        a->cdi->ticks = CDI_TICKS - 1; /* the first tick writes */
    }
    return a->cdi;
}

int fatia_agent_cdi_node(struct fatia_agent *a, const char *node)
{
    struct fatia_agent_cdi *c = cdi_of(a);
    const char *root = a->o.cdi_root ? a->o.cdi_root : "";
    const struct fatia_cdi_host sim = {.simulated = true, .gpu_major = 195}, *host;
    json_t *devs, *spec = NULL;
    char dir[1500], files[1600];
    const char *old;
    char *text = NULL;
    int r = 0;

    if (!c)
        return -ENOMEM;
    if (!node || !node[0] || strlen(node) >= 250 || strchr(node, '/'))
        return -EINVAL;
    if (!c->discovered) {
        fatia_agent_cdi_discover(root, &c->host);
        c->discovered = true;
    }
    host = node_simulated(a, node) ? &sim : &c->host;
    devs = devices_of(a, node);
    snprintf(dir, sizeof(dir), "%s/cdi/%s", a->pod_dir, node);
    snprintf(files, sizeof(files), "%s/slices", dir);
    if (fatia_agent_cdi_spec(host, root, devs, files, a->have_vgpu ? a->vgpu_lib : NULL, &spec) ==
        0)
        text = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);
    old = json_string_value(json_object_get(c->last, node));
    if (text && (!old || strcmp(old, text))) {
        char parent[1300];

        snprintf(parent, sizeof(parent), "%s/cdi", a->pod_dir);
        (void)mkdir(parent, 0755);
        r = fatia_agent_cdi_write(dir, host, root, devs, a->have_vgpu ? a->vgpu_lib : NULL);
        if (r == 0)
            json_object_set_new(c->last, node, json_string(text));
        else
            fatia_warn("agent: cannot write the CDI spec of node %s in '%s': %s", node, dir,
                       fatia_strerror(r));
    } else if (!text) {
        r = -ENOMEM;
    }
    free(text);
    json_decref(spec);
    json_decref(devs);
    return r;
}

void fatia_agent_cdi_tick(struct fatia_agent *a)
{
    struct fatia_agent_cdi *c = cdi_of(a);
    json_t *nodes;
    const char *node;
    json_t *v;

    if (!c || ++c->ticks < CDI_TICKS)
        return;
    c->ticks = 0;
    nodes = json_object();
    if (a->o.nodes && strcmp(a->o.nodes, "*")) {
        const char *p = a->o.nodes;
        while (*p) {
            size_t l = strcspn(p, ",");
            char n[256];
            snprintf(n, sizeof(n), "%.*s", (int)(l < 255 ? l : 255), p);
            add_node(nodes, n);
            p += l + (p[l] == ',');
        }
    } else {
        for (struct apod *p = a->pods; p; p = p->next)
            add_node(nodes, fatia_json_str(json_object_get(p->pod, "spec"), "nodeName"));
    }
    json_object_foreach(nodes, node, v)(void) fatia_agent_cdi_node(a, node);
    json_decref(nodes);
}

void fatia_agent_cdi_free(struct fatia_agent *a)
{
    if (!a->cdi)
        return;
    json_decref(a->cdi->last);
    fatia_free(a->cdi);
    a->cdi = NULL;
}
