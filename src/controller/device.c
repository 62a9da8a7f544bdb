/*
 * controller/device.c: the device controller: the supply layer on the local node(s).
 *
 * Inputs: the NodePools and GPUSharingPolicies of the API (fatiad applies its --fleet file there
 * at start, so `kubectl apply` of a policy re-plans), the GPU catalog, and the inventory
 * (--inventory auto: NVML when it finds a GPU, else the simulated fleet of the NodePools).
 * Output: a plan (docs/supply.md), published as
 *
 *   Node objects     labels (the pool's, fatia.dev labels, GPU Feature Discovery's for this cut),
 *                    spec.taints, status.capacity / allocatable, a Ready condition, nodeInfo;
 *   ResourceSlices   resource.k8s.io/v1, driver gpu.nvidia.com, pool = node, with a generation
 *                    that grows whenever the devices change.
 *
 * Re-planning (a NodePool or GPUSharingPolicy changed; debounced 100 ms):
 *
 *     objects ─► config ─► inventory ─► plan ─┬─ invalid: Warning PlanFailed, the old plan stays
 *                                             ├─ a slice held by a running pod would go or change:
 *                                             │  Warning ReplanBlocked naming the slice and the
 *                                             │  pod; the old plan stays, and the new one is tried
 *                                             │  again whenever a pod lets go of a slice
 *                                             └─ else: swap; the placement controller rebuilds its
 *                                                state on the new plan (binding every bound pod
 *                                                first); Nodes and ResourceSlices are rewritten
 *
 * So a running pod never loses its slice to a re-plan: the change waits, and says why.
 *
 * Publishing is keyed per node: "node:NAME" writes that node's Node and ResourceSlices (and
 * deletes its pool's slices the plan dropped), and is what a change of one Node or ResourceSlice
 * queues; "all" (a new plan, the first sync, a slice of a pool the plan does not have) queues
 * every node's key and deletes the nodes and pools the plan no longer has. Only a node's own key
 * writes its pool, and the work queue never runs a key while its writes are in flight, so two
 * rounds never race on one pool. A node's round visits its own slices only (pool_sets, an index
 * kept from the slice informer's events): a change costs O(slices of one node) and "all" O(N),
 * where one "publish everything" key cost O(N^2) per change and saturated the loop at 1,000
 * nodes (docs/fleet-scale.md).
 *
 * GPU health (device_health.c): the GPUs a Node's fatia.dev/gpu-health annotation lists (the
 * node agent writes it from NVML events) are planned with capacity and no slices; a change of
 * the annotation re-plans. The node agent stops the pods on such a GPU, so the re-plan that a
 * held slice blocks goes through once they let go.
 *
 * A node role's own GPUs (device_inventory.c): a node of the NodePools whose Node carries the
 * annotation fatia.dev/gpu-inventory (the node role writes it from its host's NVML) is planned
 * from those GPUs in place of its pool's simulated ones (real UUIDs in its slices); a change of
 * the annotation re-plans; a refused one is a Warning Event on the Node and the node keeps the
 * last one accepted.
 *
 * Memory: a plan borrows its inventory, config and object set; they live together in a struct
 * fleet, swapped whole and freed only after the placement controller has moved to the new one.
 */
#include "base/compat.h"

#include "controller/device.h"

#include <event2/event.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "base/str.h"
#include "controller/ctl_internal.h"
#include "controller/metrics.h"
#include "controller/nodeinfo.h"
#include "demand/demand.h"
#include "model/object.h"
#include "model/objset.h"
#include "supply/catalog.h"
#include "supply/config.h"
#include "supply/inventory.h"
#include "supply/plan.h"

#define COMPONENT     "fatia-device-controller"
#define DRIVER        "gpu.nvidia.com"
#define LABEL_MANAGED "fatia.dev/inventory"

struct fleet {
    struct fatia_objset set;
    struct fatia_supply_config cfg;
    bool have_cfg;
    struct fatia_inventory inv;
    struct fatia_plan *plan;
    json_t *runtime_taints; /* owned taint arrays the inventory's nodes point at (below) */
};

struct device_ctl {
    struct ctl *ctl;
    struct wq *q; /* keys "all" and "node:NAME" */
    struct informer *pools, *policies, *nodes, *slices;
    /* pool name -> struct pool_set: the names of this driver's slices per pool, kept from the
     * slice informer's events, so that one node's round visits its own slices only */
    struct fatia_strmap pool_sets;
    struct fatia_strmap
        published; /* node -> its gpu-inventory annotation seen (device_inventory.c) */
    struct fatia_catalog cat;
    bool have_catalog;
    char catalog_error[512];
    struct fleet *cur;
    struct event *replan_ev;
    bool replan_wanted; /* a change waits (blocked or debounced) */
    char blocked[2200]; /* why the last re-plan was refused, "" when none */
    uint64_t plans, blocked_count;
    device_check_fn check;
    device_replanned_fn replanned;
    void *hook_arg;
};

static void fleet_free(struct fleet *f)
{
    if (!f)
        return;
    fatia_plan_free(f->plan);
    fatia_inventory_release(&f->inv);
    json_decref(f->runtime_taints);
    if (f->have_cfg)
        fatia_supply_config_release(&f->cfg);
    fatia_objset_release(&f->set);
    fatia_free(f);
}

const struct fatia_plan *fatia_ctlr_device_ctl_plan(const struct device_ctl *d)
{
    return d->cur ? d->cur->plan : NULL;
}

void fatia_ctlr_device_ctl_set_hooks(struct device_ctl *d, device_check_fn check,
                                     device_replanned_fn replanned, void *arg)
{
    d->check = check;
    d->replanned = replanned;
    d->hook_arg = arg;
}

/* ---- building a plan from the cache ---- */

static int cmp_name(const void *a, const void *b)
{
    const json_t *x = *(const json_t *const *)a, *y = *(const json_t *const *)b;

    return strcmp(fatia_ctlr_meta_str(x, "name"), fatia_ctlr_meta_str(y, "name"));
}

/* Adds the objects of inf, sorted by name (the planner takes policies in input order). */
static int add_objects(struct fatia_objset *set, struct informer *inf, struct fatia_diag *diag)
{
    const json_t **v = NULL;
    size_t n = 0;
    int r = 0;

    if (inf->items.n && !(v = fatia_calloc(inf->items.n, sizeof(*v))))
        return -ENOMEM;
    INFORMER_FOREACH(inf, it)
    v[n++] = it->obj;
    qsort(v, n, sizeof(*v), cmp_name);
    for (size_t i = 0; i < n && r == 0; i++) {
        json_t *copy = json_deep_copy(v[i]);
        struct fatia_object *o = NULL;
        if (!copy) {
            r = -ENOMEM;
            break;
        }
        r = fatia_object_decode(copy, &(struct fatia_decode_opts){.no_defaults = false},
                                &fatia_demand_checks, diag, &o);
        json_decref(copy);
        if (r == -FATIA_E_INVALID) {
            r = 0; /* reported in diag */
            continue;
        }
        if (r == 0)
            r = fatia_objset_add(set, o);
    }
    fatia_free(v);
    return r;
}

static void diag_text(const struct fatia_diag *diag, char *buf, size_t n)
{
    struct fatia_buf b = FATIA_BUF_INIT;
    char *s;

    for (size_t i = 0; i < diag->n && b.len < 1500; i++) {
        if (diag->v[i].level != FATIA_DIAG_ERROR)
            continue;
        if (b.len)
            (void)fatia_buf_puts(&b, "; ");
        (void)fatia_diag_format(&diag->v[i], &b);
    }
    s = fatia_buf_steal(&b);
    snprintf(buf, n, "%s", s ? s : "invalid input");
    for (char *p = buf; *p; p++)
        if (*p == '\n')
            *p = ' ';
    fatia_free(s);
}

static int build_fleet(struct device_ctl *d, struct fleet **ret, char *why, size_t why_n)
{
    const struct fatia_controllers_opts *o = fatia_ctlr_opts(d->ctl);
    struct fleet *f = fatia_calloc(1, sizeof(*f));
    struct fatia_nvml_opts no = {o->nvml_lib, o->node_name, NULL};
    struct fatia_diag diag;
    int r;

    if (!f)
        return -ENOMEM;
    fatia_objset_init(&f->set);
    fatia_inventory_init(&f->inv);
    fatia_diag_init(&diag);
    if (!d->have_catalog) {
        snprintf(why, why_n, "%s", d->catalog_error);
        r = -FATIA_E_INVALID;
        goto fail;
    }
    if ((r = add_objects(&f->set, d->pools, &diag)) < 0 ||
        (r = add_objects(&f->set, d->policies, &diag)) < 0)
        goto fail;
    if (!fatia_diag_has_errors(&diag)) {
        r = fatia_supply_config_load(&f->cfg, &f->set, &diag);
        if (r == -ENOMEM)
            goto fail;
        f->have_cfg = r == 0;
    }
    if (fatia_diag_has_errors(&diag) || !f->have_cfg) {
        diag_text(&diag, why, why_n);
        r = -FATIA_E_INVALID;
        goto fail;
    }
    if (f->cfg.n_pools == 1)
        no.pool = &f->cfg.pools[0];
    switch (o->inventory) {
    case FATIA_INVENTORY_SIM:
        r = fatia_inventory_sim(&f->inv, &f->cfg, &d->cat, &diag);
        break;
    case FATIA_INVENTORY_NVML:
        r = fatia_inventory_nvml(&f->inv, &no, &d->cat, &diag);
        break;
    default:
        r = fatia_inventory_auto(&f->inv, &no, &f->cfg, &d->cat, &diag);
        break;
    }
    /* the Nodes' lifecycle and cordon taints join the pools' for placement (nodelifecycle.c) */
    for (size_t i = 0; r == 0 && i < f->inv.n_nodes; i++) {
        struct fatia_inv_node *n = &f->inv.nodes[i];
        const json_t *node = fatia_ctlr_informer_get(d->nodes, NULL, n->name);
        json_t *rt = fatia_ctlr_node_runtime_taints(node);
        json_t *all;
        /* a node role's own GPUs, from its NVML, in place of the pool's simulated ones */
        if (f->inv.source == FATIA_INV_SIM &&
            (r = fatia_ctlr_device_inventory_apply(d->ctl, &d->published, &f->inv, n, node)) < 0)
            break;
        fatia_ctlr_device_health_apply(n, node); /* GPUs out of service: no slices */
        if (!rt)
            continue;
        all = json_array();
        if (!all || (!f->runtime_taints && !(f->runtime_taints = json_array()))) {
            json_decref(rt);
            json_decref(all);
            r = -ENOMEM;
            break;
        }
        if (n->taints)
            json_array_extend(all, n->taints);
        json_array_extend(all, rt);
        json_decref(rt);
        json_array_append_new(f->runtime_taints, all);
        n->taints = all;
    }
    if (r == 0)
        r = fatia_supply_plan(&f->inv, &f->cfg, &diag, &f->plan);
    if (r < 0) {
        if (r != -ENOMEM)
            diag_text(&diag, why, why_n);
        goto fail;
    }
    fatia_diag_release(&diag);
    *ret = f;
    return 0;
fail:
    if (r == -ENOMEM)
        snprintf(why, why_n, "out of memory");
    fatia_diag_release(&diag);
    fleet_free(f);
    return r;
}

static void event_on_policies(struct device_ctl *d, const char *type, const char *reason,
                              const char *msg)
{
    bool any = false;

    INFORMER_FOREACH(d->policies, it)
    {
        fatia_ctlr_event(d->ctl, it->obj, COMPONENT, type, reason, "%s", msg);
        any = true;
    }
    if (!any) {
        INFORMER_FOREACH(d->pools, it)
        fatia_ctlr_event(d->ctl, it->obj, COMPONENT, type, reason, "%s", msg);
    }
}

static void replan(struct device_ctl *d)
{
    struct fleet *f = NULL, *old;
    char why[2000];
    int r;

    d->replan_wanted = false;
    why[0] = '\0';
    r = build_fleet(d, &f, why, sizeof(why));
    if (r < 0) {
        char msg[2100];
        snprintf(msg, sizeof(msg), "the fleet cannot be planned, the current plan stays: %s", why);
        fatia_error("device: %s", msg);
        event_on_policies(d, "Warning", "PlanFailed", msg);
        return;
    }
    if (d->cur && d->check && d->check(d->hook_arg, f->plan, why, sizeof(why)) < 0) {
        char msg[2100];
        snprintf(msg, sizeof(msg),
                 "re-plan waits: %s; the current cut stays until the slice is free", why);
        if (strcmp(d->blocked, msg)) {
            fatia_warn("device: %s", msg);
            event_on_policies(d, "Warning", "ReplanBlocked", msg);
            snprintf(d->blocked, sizeof(d->blocked), "%s", msg);
            d->blocked_count++;
        }
        d->replan_wanted = true;
        fleet_free(f);
        return;
    }
    d->blocked[0] = '\0';
    old = d->cur;
    d->cur = f;
    d->plans++;
    if (d->replanned)
        d->replanned(d->hook_arg, f->plan);
    fleet_free(old);
    fatia_info("device: %s inventory, %zu node(s), %zu slice(s)%s%s",
               f->inv.source == FATIA_INV_NVML ? "nvml" : "simulated", f->plan->n_nodes,
               f->plan->n_slices, f->inv.note[0] ? ": " : "", f->inv.note);
    if (old) {
        char msg[300];
        snprintf(msg, sizeof(msg), "fleet re-planned: %zu node(s), %zu slice(s)", f->plan->n_nodes,
                 f->plan->n_slices);
        event_on_policies(d, "Normal", "Replanned", msg);
    }
    fatia_ctlr_wq_add(d->q, "all");
}

static void replan_cb(evutil_socket_t fd, short what, void *arg)
{
    struct device_ctl *d = arg;

    (void)fd;
    (void)what;
    if (fatia_ctlr_ready(d->ctl))
        replan(d);
}

static void want_replan(struct device_ctl *d)
{
    struct timeval tv = {0, 100000};

    d->replan_wanted = true;
    if (fatia_ctlr_ready(d->ctl))
        evtimer_add(d->replan_ev, &tv);
}

void fatia_ctlr_device_ctl_slices_freed(struct device_ctl *d)
{
    struct timeval tv = {0, 0};

    if (d->replan_wanted && d->blocked[0] && !evtimer_pending(d->replan_ev, NULL))
        evtimer_add(d->replan_ev, &tv);
}

/* ---- publishing ---- */

static json_t *node_object(const struct fatia_plan *plan, size_t i)
{
    json_t *nj = fatia_plan_node_json(plan, i);
    const char *name = fatia_json_str(nj, "name");
    json_t *node;

    if (!nj || !name) {
        json_decref(nj);
        return NULL;
    }
    node = json_pack(
        "{s:s,s:s,s:{s:s,s:O},s:{},s:{s:O,s:O,s:[{s:s,s:s,s:s,s:s}],s:o*,s:[{s:s,s:s}]}}",
        "apiVersion", "v1", "kind", "Node", "metadata", "name", name, "labels",
        json_object_get(nj, "labels"), "spec", "status", "capacity",
        json_object_get(nj, "capacity"), "allocatable", json_object_get(nj, "allocatable"),
        "conditions", "type", "Ready", "status", "True", "reason", "KubeletReady", "message",
        "fatia's node agent runs the pods of this node", "nodeInfo", fatia_ctlr_nodeinfo_json(),
        "addresses", "type", "Hostname", "address", name);
    if (node && json_array_size(json_object_get(nj, "taints")))
        json_object_set(json_object_get(node, "spec"), "taints", json_object_get(nj, "taints"));
    json_decref(nj);
    return node;
}

static bool node_differs(const json_t *have, const json_t *want)
{
    const json_t *hs = json_object_get(have, "status"), *ws = json_object_get(want, "status");
    const json_t *ht = json_object_get(json_object_get(have, "spec"), "taints");
    json_t *t = fatia_ctlr_node_taints_merge(
        have, json_object_get(json_object_get(want, "spec"), "taints"));
    bool taints_differ =
        t && (json_array_size(t) || json_array_size(ht)) && !fatia_json_equal(ht, t);

    json_decref(t);
    return !fatia_json_equal(json_object_get(json_object_get(have, "metadata"), "labels"),
                             json_object_get(json_object_get(want, "metadata"), "labels")) ||
           taints_differ;
    (void)hs;
    (void)ws;
}

/* The node-lifecycle controller says the node is lost: Ready is its to set. */
static bool node_lost(const json_t *node)
{
    const json_t *t;
    size_t i;

    json_array_foreach(json_object_get(json_object_get(node, "spec"), "taints"), i, t)
    {
        if (fatia_ctlr_lifecycle_taint(t))
            return true;
    }
    return false;
}

static bool node_status_differs(const json_t *have, const json_t *want)
{
    const json_t *hs = json_object_get(have, "status"), *ws = json_object_get(want, "status");
    const json_t *hr = fatia_ctlr_cond_get(have, "Ready");

    if (!node_lost(have) && !hr)
        return true;
    return !fatia_json_equal(json_object_get(hs, "capacity"), json_object_get(ws, "capacity")) ||
           !fatia_json_equal(json_object_get(hs, "allocatable"),
                             json_object_get(ws, "allocatable")) ||
           (!node_lost(have) &&
            (!hr ||
             strcmp(fatia_json_str(hr, "status") ? fatia_json_str(hr, "status") : "", "True"))) ||
           !fatia_json_equal(json_object_get(hs, "nodeInfo"), json_object_get(ws, "nodeInfo"));
}

static bool queue_key(struct device_ctl *d, const char *name);

/* Writes the status of the node once it exists (after a create): its key again. */
static void node_created(void *arg, const struct fatia_client_result *res)
{
    struct device_ctl *d = arg;
    const char *name = res->status ? NULL : fatia_ctlr_meta_str(res->obj, "name");

    if (name && !queue_key(d, name))
        fatia_ctlr_wq_add(d->q, "all");
}

static void publish_node(struct device_ctl *d, json_t *want, const char *key)
{
    const char *name = fatia_ctlr_meta_str(want, "name");
    const json_t *have = fatia_ctlr_informer_get(d->nodes, NULL, name);
    struct op_opts o = {.wq = d->q, .key = key};

    if (!have) {
        o.then = node_created;
        o.arg = d;
        fatia_ctlr_create(d->ctl, want, &o);
        return;
    }
    if (node_differs(have, want)) {
        json_t *n = json_deep_copy(have);
        json_t *meta = n ? json_object_get(n, "metadata") : NULL;
        if (!meta)
            goto out;
        json_object_set(meta, "labels",
                        json_object_get(json_object_get(want, "metadata"), "labels"));
        {
            json_t *t = fatia_ctlr_node_taints_merge(
                have, json_object_get(json_object_get(want, "spec"), "taints"));
            if (json_array_size(t))
                json_object_set(fatia_json_object_ensure(n, "spec"), "taints", t);
            else
                json_object_del(json_object_get(n, "spec"), "taints");
            json_decref(t);
        }
        fatia_ctlr_update(d->ctl, n, &o);
        json_decref(n);
        return; /* the status follows in the next round */
    }
    if (node_status_differs(have, want)) {
        json_t *n = json_deep_copy(have), *st;
        fatia_usec_t now = fatia_ctlr_now(d->ctl);
        if (!n)
            goto out;
        st = fatia_json_object_ensure(n, "status");
        json_object_set(st, "capacity",
                        json_object_get(json_object_get(want, "status"), "capacity"));
        json_object_set(st, "allocatable",
                        json_object_get(json_object_get(want, "status"), "allocatable"));
        json_object_set(st, "nodeInfo",
                        json_object_get(json_object_get(want, "status"), "nodeInfo"));
        {
            /* ours: the Hostname; the others are the node's own (a node role's InternalIP:
             * daemon/node_role.c), kept */
            json_t *addrs =
                json_deep_copy(json_object_get(json_object_get(want, "status"), "addresses"));
            const json_t *ad;
            size_t i;
            json_array_foreach(json_object_get(json_object_get(have, "status"), "addresses"), i, ad)
            {
                const char *t = fatia_json_str(ad, "type");
                if (addrs && t && strcmp(t, "Hostname"))
                    json_array_append(addrs, (json_t *)ad);
            }
            json_object_set_new(st, "addresses", addrs ? addrs : json_array());
        }
        if (!node_lost(have))
            fatia_ctlr_cond_set(fatia_json_array_ensure(st, "conditions"), "Ready", "True",
                                "KubeletReady", "fatia's node agent runs the pods of this node",
                                now);
        {
            size_t i;
            json_t *c;
            json_array_foreach(json_object_get(st, "conditions"), i, c)
            {
                if (!json_object_get(c, "lastHeartbeatTime"))
                    json_object_set_new(c, "lastHeartbeatTime", fatia_ctlr_json_time(now));
            }
        }
        fatia_ctlr_update_status(d->ctl, n, &o);
        json_decref(n);
    }
out:
    return;
}

/* A pool's slices as published: the highest generation and how many there are. */
struct pool_state {
    int64_t gen;
    size_t count;
};

/* Whether the slice is one of this driver's. */
static bool slice_ours(const json_t *slice)
{
    const char *drv = fatia_json_str(json_object_get(slice, "spec"), "driver");

    return drv && !strcmp(drv, DRIVER);
}

/* The slice's pool name when it is one of this driver's, else NULL. */
static const char *slice_pool(const json_t *slice)
{
    return slice_ours(slice)
               ? fatia_json_str(json_object_get(json_object_get(slice, "spec"), "pool"), "name")
               : NULL;
}

/* ---- the slices of each pool ---- */

struct pool_set {
    char *pool;
    struct fatia_strmap names; /* slice name (owned) -> (void *)1 */
};

static void pool_set_add(struct device_ctl *d, const char *pool, const char *name)
{
    struct pool_set *ps = fatia_strmap_get(&d->pool_sets, pool);
    char *k;

    if (!ps) {
        if (!(ps = fatia_calloc(1, sizeof(*ps))) || !(ps->pool = fatia_strdup(pool)) ||
            fatia_strmap_put(&d->pool_sets, ps->pool, ps) < 0) {
            if (ps)
                fatia_free(ps->pool);
            fatia_free(ps);
            fatia_error("device: out of memory indexing the slices of pool '%s'", pool);
            return;
        }
        fatia_strmap_init(&ps->names);
    }
    if (fatia_strmap_has(&ps->names, name))
        return;
    if (!(k = fatia_strdup(name)) || fatia_strmap_put(&ps->names, k, (void *)1) < 0) {
        fatia_free(k);
        fatia_error("device: out of memory indexing the slices of pool '%s'", pool);
    }
}

static void pool_set_free(struct pool_set *ps)
{
    for (size_t i = 0; i < ps->names.cap; i++)
        fatia_free((char *)ps->names.slots[i].key);
    fatia_strmap_release(&ps->names);
    fatia_free(ps->pool);
    fatia_free(ps);
}

static void pool_set_del(struct device_ctl *d, const char *pool, const char *name)
{
    struct pool_set *ps = fatia_strmap_get(&d->pool_sets, pool);
    char *k = NULL;

    if (!ps)
        return;
    for (size_t i = 0; i < ps->names.cap; i++)
        if (ps->names.slots[i].key && !strcmp(ps->names.slots[i].key, name)) {
            k = (char *)ps->names.slots[i].key;
            break;
        }
    if (!k)
        return;
    fatia_strmap_del(&ps->names, name);
    fatia_free(k);
    if (!ps->names.n) {
        fatia_strmap_del(&d->pool_sets, pool);
        pool_set_free(ps);
    }
}

/* Whether this controller may delete a slice of its driver that the plan lacks: the slice names
 * no node, or a node that is gone, or one this controller made (another node agent's are its). */
static bool slice_deletable(struct device_ctl *d, const json_t *slice)
{
    const char *nn = fatia_json_str(json_object_get(slice, "spec"), "nodeName");
    const json_t *node = nn ? fatia_ctlr_informer_get(d->nodes, NULL, nn) : NULL;

    return !node || fatia_ctlr_obj_label(node, LABEL_MANAGED);
}

static void slice_delete(struct device_ctl *d, const char *name, const json_t *slice,
                         const char *key)
{
    fatia_ctlr_delete(d->ctl, d->slices->kind, NULL, name, fatia_ctlr_meta_str(slice, "uid"),
                      &(struct op_opts){.wq = d->q, .key = key, .quiet_missing = true});
}

/* Whether the rendered slices `arr` have one named `name`. */
static bool slices_have(const json_t *arr, const char *name)
{
    size_t i;
    json_t *rs;

    json_array_foreach(arr, i, rs)
    {
        if (!strcmp(fatia_ctlr_meta_str(rs, "name"), name))
            return true;
    }
    return false;
}

/* Compares two ResourceSlice specs ignoring the pool generation. */
static bool slice_same(const json_t *have, const json_t *want)
{
    json_t *a = json_deep_copy(json_object_get(have, "spec"));
    json_t *b = json_deep_copy(json_object_get(want, "spec"));
    bool eq;

    if (!a || !b) {
        json_decref(a);
        json_decref(b);
        return false;
    }
    json_object_del(json_object_get(a, "pool"), "generation");
    json_object_del(json_object_get(b, "pool"), "generation");
    eq = fatia_json_equal(a, b);
    json_decref(a);
    json_decref(b);
    return eq;
}

/*
 * Writes node's ResourceSlices under key and deletes the slices of its pool the plan no longer
 * has. Only this node's key writes its pool, and a key is not reconciled while its writes are in
 * flight: so the informer is never behind this round's own writes, and the generation grows once
 * per change (two rounds writing one pool at once bumped it twice, and the pool was seen half
 * old, half new). It visits the pool's own slices only (d->pool_sets).
 */
static void publish_slices(struct device_ctl *d, const struct fatia_plan *plan, size_t node,
                           const char *key)
{
    json_t *arr = fatia_plan_resourceslices(plan, node);
    const char *pool = plan->nodes[node].inv->name;
    const struct pool_set *set;
    struct pool_state ps = {0, 0};
    bool changed = false;
    size_t i;
    json_t *rs;

    if (!arr) {
        fatia_error("device: out of memory rendering the ResourceSlices of '%s'", pool);
        return;
    }
    set = fatia_strmap_get(&d->pool_sets, pool);
    for (i = 0; set && i < set->names.cap; i++) {
        const char *sn = set->names.slots[i].key;
        const json_t *have = sn ? fatia_ctlr_informer_get(d->slices, NULL, sn) : NULL;
        int64_t v;
        if (!have)
            continue;
        ps.count++;
        if (fatia_json_int(json_object_get(json_object_get(have, "spec"), "pool"), "generation",
                           &v) &&
            v > ps.gen)
            ps.gen = v;
        if (!slices_have(arr, sn)) {
            changed = true; /* fewer slices than before also changes the pool */
            if (slice_deletable(d, have))
                slice_delete(d, sn, have, key);
        }
    }
    json_array_foreach(arr, i, rs)
    {
        const json_t *have =
            fatia_ctlr_informer_get(d->slices, NULL, fatia_ctlr_meta_str(rs, "name"));
        if (!have || !slice_same(have, rs))
            changed = true;
    }
    if (changed || ps.gen == 0)
        ps.gen++;
    json_array_foreach(arr, i, rs)
    {
        const json_t *have =
            fatia_ctlr_informer_get(d->slices, NULL, fatia_ctlr_meta_str(rs, "name"));
        json_t *p = json_object_get(json_object_get(rs, "spec"), "pool");
        json_object_set_new(p, "generation", json_integer(ps.gen));
        if (!have) {
            fatia_ctlr_create(d->ctl, rs, &(struct op_opts){.wq = d->q, .key = key});
        } else if (!fatia_json_equal(json_object_get(have, "spec"), json_object_get(rs, "spec"))) {
            json_t *n = json_deep_copy(have);
            if (n) {
                json_object_set(n, "spec", json_object_get(rs, "spec"));
                fatia_ctlr_update(d->ctl, n, &(struct op_opts){.wq = d->q, .key = key});
                json_decref(n);
            }
        }
    }
    json_decref(arr);
}

/* The plan's index of node `name`, or -1. */
static ssize_t plan_node(const struct fatia_plan *plan, const char *name)
{
    for (size_t i = 0; name && i < plan->n_nodes; i++)
        if (!strcmp(plan->nodes[i].inv->name, name))
            return (ssize_t)i;
    return -1;
}

/* Queues node `name`'s key ("node:NAME"); false when the name does not fit a key. */
static bool queue_key(struct device_ctl *d, const char *name)
{
    char key[300];

    if (snprintf(key, sizeof(key), "node:%s", name) >= (int)sizeof(key))
        return false;
    fatia_ctlr_wq_add(d->q, key);
    return true;
}

/* "all": every node's key, then deletes the nodes and pools the plan no longer has (no node key
 * writes those). */
static void publish_all(struct device_ctl *d, const struct fatia_plan *plan)
{
    struct fatia_strmap nodes;

    fatia_strmap_init(&nodes);
    for (size_t i = 0; i < plan->n_nodes; i++) {
        (void)fatia_strmap_put(&nodes, plan->nodes[i].inv->name, (void *)1);
        if (!queue_key(d, plan->nodes[i].inv->name))
            fatia_error("device: node name '%.40s...' is too long to publish",
                        plan->nodes[i].inv->name);
    }
    INFORMER_FOREACH(d->nodes, it)
    {
        if (fatia_ctlr_obj_label(it->obj, LABEL_MANAGED) && !fatia_strmap_has(&nodes, it->key))
            fatia_ctlr_delete(d->ctl, d->nodes->kind, NULL, it->key,
                              fatia_ctlr_meta_str(it->obj, "uid"),
                              &(struct op_opts){.wq = d->q, .key = "all", .quiet_missing = true});
    }
    INFORMER_FOREACH(d->slices, it)
    {
        const char *pn = slice_pool(it->obj);
        if (slice_ours(it->obj) && (!pn || !fatia_strmap_has(&nodes, pn)) &&
            slice_deletable(d, it->obj))
            slice_delete(d, it->key, it->obj, "all");
    }
    fatia_strmap_release(&nodes);
}

static void publish(void *arg, const char *key)
{
    struct device_ctl *d = arg;
    const struct fatia_plan *plan = fatia_ctlr_device_ctl_plan(d);
    json_t *n;
    ssize_t i;

    if (!plan)
        return;
    if (strncmp(key, "node:", 5)) {
        publish_all(d, plan);
        return;
    }
    i = plan_node(plan, key + 5);
    if (i < 0 || !(n = node_object(plan, (size_t)i)))
        return;
    publish_node(d, n, key);
    json_decref(n);
    publish_slices(d, plan, (size_t)i, key);
}

/* ---- events ---- */

static void on_config(void *arg, const json_t *old, const json_t *obj)
{
    struct device_ctl *d = arg;

    /* only spec changes matter (status and metadata noise would re-plan for nothing) */
    if (old && obj &&
        fatia_json_equal(json_object_get(old, "spec"), json_object_get(obj, "spec")) &&
        fatia_json_equal(json_object_get(json_object_get(old, "metadata"), "labels"),
                         json_object_get(json_object_get(obj, "metadata"), "labels")))
        return;
    want_replan(d);
}

/* Queues the publishing of node `name`: its own key when the plan has it, else "all" (which
 * deletes what the plan no longer has). */
static void queue_node(struct device_ctl *d, const char *name)
{
    const struct fatia_plan *plan = fatia_ctlr_device_ctl_plan(d);

    if (!plan)
        return;
    if (!name || plan_node(plan, name) < 0 || !queue_key(d, name))
        fatia_ctlr_wq_add(d->q, "all");
}

static void on_slice(void *arg, const json_t *old, const json_t *obj)
{
    struct device_ctl *d = arg;
    const char *po = old ? slice_pool(old) : NULL, *pn = obj ? slice_pool(obj) : NULL;
    const char *name = fatia_ctlr_meta_str(obj ? obj : old, "name");

    if (name && po && (!pn || strcmp(po, pn)))
        pool_set_del(d, po, name);
    if (name && pn)
        pool_set_add(d, pn, name);
    if (!d->cur || (!po && !pn))
        return;
    if (po && (!pn || strcmp(po, pn)))
        queue_node(d, po);
    if (pn)
        queue_node(d, pn);
}

/* A Node's lifecycle or cordon taints changed: placement must see them (a re-plan). */
static void on_node(void *arg, const json_t *old, const json_t *obj)
{
    struct device_ctl *d = arg;
    json_t *a = old ? fatia_ctlr_node_runtime_taints(old) : NULL;
    json_t *b = obj ? fatia_ctlr_node_runtime_taints(obj) : NULL;

    if (old && obj &&
        (!fatia_json_equal(a, b) || fatia_ctlr_device_health_changed(old, obj) ||
         fatia_ctlr_device_inventory_changed(old, obj)))
        want_replan(d);
    json_decref(a);
    json_decref(b);
    /* a node the plan lacks matters only when this controller made it (to be deleted) */
    if (fatia_ctlr_device_ctl_plan(d) &&
        (fatia_ctlr_obj_label(obj ? obj : old, LABEL_MANAGED) ||
         plan_node(fatia_ctlr_device_ctl_plan(d), fatia_ctlr_meta_str(obj ? obj : old, "name")) >=
             0))
        queue_node(d, fatia_ctlr_meta_str(obj ? obj : old, "name"));
}

static void on_synced(void *arg)
{
    struct device_ctl *d = arg;

    replan(d);
}

/* ---- metrics ---- */

void fatia_ctlr_device_ctl_metrics(struct device_ctl *d, struct fatia_buf *out)
{
    const struct fatia_plan *plan = fatia_ctlr_device_ctl_plan(d);

    fatia_ctlr_metric_header(out, "fatia_device_plans_total", "counter",
                             "Plans the device controller adopted (the first and every re-plan)");
    fatia_ctlr_metric_sample(out, "fatia_device_plans_total", NULL, (double)d->plans);
    fatia_ctlr_metric_header(
        out, "fatia_device_replans_blocked_total", "counter",
        "Re-plans that had to wait because a running pod held a slice they would change");
    fatia_ctlr_metric_sample(out, "fatia_device_replans_blocked_total", NULL,
                             (double)d->blocked_count);
    fatia_ctlr_metric_header(out, "fatia_device_gpus", "gauge", "GPUs of the inventory, per node");
    for (size_t i = 0; plan && i < plan->n_nodes; i++) {
        char lab[300];
        fatia_ctlr_metric_labels(
            lab, sizeof(lab), "node", plan->nodes[i].inv->name, "simulated",
            plan->inv->source == FATIA_INV_SIM && !plan->nodes[i].inv->published ? "true" : "false",
            NULL);
        fatia_ctlr_metric_sample(out, "fatia_device_gpus", lab, (double)plan->nodes[i].inv->n_gpus);
    }
}

/* ---- life cycle ---- */

int fatia_ctlr_device_ctl_new(struct ctl *c, struct device_ctl **ret)
{
    struct device_ctl *d = fatia_calloc(1, sizeof(*d));
    char path[1024];
    struct fatia_diag diag;

    if (!d)
        return -ENOMEM;
    d->ctl = c;
    fatia_strmap_init(&d->pool_sets);
    fatia_strmap_init(&d->published);
    fatia_catalog_init(&d->cat);
    fatia_diag_init(&diag);
    fatia_catalog_default_path(fatia_ctlr_opts(c)->catalog, path, sizeof(path));
    if (fatia_catalog_load(&d->cat, path, &diag) == 0 && !fatia_diag_has_errors(&diag)) {
        d->have_catalog = true;
    } else {
        diag_text(&diag, d->catalog_error, sizeof(d->catalog_error));
        fatia_error("device: GPU catalog '%s': %s", path, d->catalog_error);
    }
    fatia_diag_release(&diag);
    d->q = fatia_ctlr_wq_new(c, "device", publish, d);
    d->pools = fatia_ctlr_informer(c, fatia_kind_find("fatia.dev/v1alpha1", "NodePool", NULL));
    d->policies =
        fatia_ctlr_informer(c, fatia_kind_find("fatia.dev/v1alpha1", "GPUSharingPolicy", NULL));
    d->nodes = fatia_ctlr_informer(c, fatia_kind_find("v1", "Node", NULL));
    d->slices =
        fatia_ctlr_informer(c, fatia_kind_find("resource.k8s.io/v1", "ResourceSlice", NULL));
    d->replan_ev = evtimer_new(fatia_ctlr_base(c), replan_cb, d);
    if (!d->q || !d->pools || !d->policies || !d->nodes || !d->slices || !d->replan_ev ||
        fatia_ctlr_informer_on(d->pools, on_config, d) < 0 ||
        fatia_ctlr_informer_on(d->policies, on_config, d) < 0 ||
        fatia_ctlr_informer_on(d->nodes, on_node, d) < 0 ||
        fatia_ctlr_informer_on(d->slices, on_slice, d) < 0 ||
        fatia_ctlr_on_synced(c, on_synced, d) < 0) {
        fatia_ctlr_device_ctl_free(d);
        return -ENOMEM;
    }
    *ret = d;
    return 0;
}

void fatia_ctlr_device_ctl_free(struct device_ctl *d)
{
    if (!d)
        return;
    if (d->replan_ev)
        event_free(d->replan_ev);
    fatia_ctlr_wq_free(d->q);
    fleet_free(d->cur);
    fatia_catalog_release(&d->cat);
    for (size_t i = 0; i < d->pool_sets.cap; i++)
        if (d->pool_sets.slots[i].key)
            pool_set_free(d->pool_sets.slots[i].val);
    fatia_strmap_release(&d->pool_sets);
    fatia_ctlr_device_inventory_release(&d->published);
    fatia_free(d);
}
