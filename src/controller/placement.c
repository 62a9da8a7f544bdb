/*
 * controller/placement.c: the placement controller: the demand layer's placement
 * (demand/place.h) over live Pods, in the role of kube-scheduler plus the device plugin's
 * allocation.
 *
 * The contract with the node agent (docs/controllers.md): a pod is bound by ONE update that sets
 * spec.nodeName and the annotations
 *     fatia.dev/slices   "gpu-0-ts1,gpu-2"               (slice ids, comma-separated)
 *     fatia.dev/devices  [{"container", "slice", "kind", "gpuIndex", "uuid", "migUuid",
 *                          "memoryBytes", "mps": {"threadPercentage", "pinnedMemoryBytes"},
 *                          "gpuMilli"}]
 * then PodScheduled=True is written to its status. A slice is free again when its pod is
 * Succeeded or Failed, or gone.
 *
 * A pod's life here:
 *
 *     unbound, no gates ──place──► committed in the state ──update──► bound (confirmed by the
 *        ▲     │ no fit: PodScheduled=False (Unschedulable)      │ failed: uncommitted, retried
 *        │     ▼ (retried whenever slices are freed)             ▼
 *        └── waiting                          Succeeded / Failed / gone ──► slices freed
 *
 * Safety (no slice ever given to two pods, including after kill -9 of fatiad): the state is
 * built from the device controller's plan and then every bound, unfinished pod is bound into it
 * from its annotations, before any new pod is placed (the manager runs that hook once every cache
 * is synced, and again on every re-plan). A pod is committed into the state before its bind is
 * written and uncommitted only if that write fails; the work queue never places a pod while its
 * previous bind is in flight. A bound pod whose slices are already held by another (which would be
 * a bug) is reported (Warning DoubleBooking, fatia_slice_conflicts_total) and never placed
 * elsewhere. The device controller asks before re-planning (placement_check): a plan that would
 * remove or change a slice a pod holds must wait.
 *
 * Policy: binpack by default (--placement-policy). MIG layouts are never re-laid here (that would
 * change hardware); a pod that asks for a MIG profile the fleet lacks stays Unschedulable with the
 * planner's reason. DRA claims are not placed by this controller yet (docs/controllers.md).
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "base/str.h"
#include "controller/ctl_internal.h"
#include "controller/device.h"
#include "controller/kueue.h"
#include "controller/metrics.h"
#include "demand/dra.h"
#include "demand/place.h"
#include "supply/plan.h"

#define COMPONENT "fatia-scheduler"

struct binding {
    char *key, *uid, *node;
    char **slices; /* "node|id" of each slice held (fractions: "node|gpu-<minor>-f<k>") */
    size_t n_slices;
    bool confirmed; /* the stored pod shows the binding */
};

struct slice_ref {
    uint32_t gpu;   /* state GPU */
    uint16_t slice; /* index in the GPU's slices, or FATIA_PLACE_FRACTION for a fraction pool */
    const struct fatia_slice *ps;
};

struct placement_ctl {
    struct ctl *ctl;
    struct device_ctl *dev;
    struct wq *q;        /* pod keys to place */
    struct wq *status_q; /* pod keys whose PodScheduled condition to write */
    struct informer *pods;
    const struct fatia_plan *plan;
    struct fatia_place_state *st;
    struct fatia_strmap slice_ix; /* "node|id" -> struct slice_ref (this plan) */
    struct fatia_strmap bound;    /* pod key -> struct binding */
    struct fatia_strmap held;     /* "node|id" -> pod key (borrowed from the binding) */
    struct fatia_strmap waiting;  /* pod key -> message (owned) */
    enum fatia_place_policy policy;
    uint64_t binds, unbinds, conflicts;
    /* DRA */
    struct wq *claims_q; /* claim keys whose reservedFor / allocation to tidy */
    struct informer *claims, *templates, *rslices, *classes;
    struct fatia_place_pod *claim_pod; /* an empty pod: what a claim's binding holds besides
                                          its devices (nothing) */
};

/* ---- bindings ---- */

static void binding_free(struct binding *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->n_slices; i++)
        fatia_free(b->slices[i]);
    fatia_free(b->slices);
    fatia_free(b->key);
    fatia_free(b->uid);
    fatia_free(b->node);
    fatia_free(b);
}

static void slice_ix_clear(struct fatia_strmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key) {
            fatia_free((char *)m->slots[i].key);
            fatia_free(m->slots[i].val);
        }
    fatia_strmap_release(m);
}

/* Forgets a binding (the state must be unbound by the caller). */
static void binding_drop(struct placement_ctl *p, const char *key)
{
    struct binding *b = fatia_strmap_get(&p->bound, key);

    if (!b)
        return;
    for (size_t i = 0; i < b->n_slices; i++) {
        const char *holder = fatia_strmap_get(&p->held, b->slices[i]);
        if (holder && !strcmp(holder, b->key))
            fatia_strmap_del(&p->held, b->slices[i]);
    }
    fatia_strmap_del(&p->bound, key);
    binding_free(b);
}

struct waitrec {
    char *key, *msg;
};

static void waiting_drop(struct placement_ctl *p, const char *key)
{
    struct waitrec *w = fatia_strmap_get(&p->waiting, key);

    if (!w)
        return;
    fatia_strmap_del(&p->waiting, key);
    fatia_free(w->key);
    fatia_free(w->msg);
    fatia_free(w);
}

static const char *waiting_msg(struct placement_ctl *p, const char *key)
{
    const struct waitrec *w = fatia_strmap_get(&p->waiting, key);

    return w ? w->msg : NULL;
}

static void waiting_set(struct placement_ctl *p, const char *key, const char *msg)
{
    struct waitrec *w = fatia_calloc(1, sizeof(*w));

    waiting_drop(p, key);
    if (!w || !(w->key = fatia_strdup(key)) || !(w->msg = fatia_strdup(msg)) ||
        fatia_strmap_put(&p->waiting, w->key, w) < 0) {
        if (w) {
            fatia_free(w->key);
            fatia_free(w->msg);
        }
        fatia_free(w);
    }
}

static void retry_waiting(struct placement_ctl *p)
{
    for (size_t i = 0; i < p->waiting.cap; i++)
        if (p->waiting.slots[i].key)
            wq_add(p->q, p->waiting.slots[i].key);
}

/* The pod let go of its slices. */
static void release(struct placement_ctl *p, const char *key)
{
    if (!fatia_strmap_has(&p->bound, key))
        return;
    if (p->st)
        fatia_place_unbind(p->st, key);
    binding_drop(p, key);
    p->unbinds++;
    retry_waiting(p);
    device_ctl_slices_freed(p->dev);
}

/* ---- the slice index of a plan ---- */

static int build_index(const struct fatia_plan *plan, struct fatia_strmap *ix)
{
    uint32_t g = 0;

    for (size_t n = 0; n < plan->n_nodes; n++) {
        const struct fatia_plan_node *pn = &plan->nodes[n];
        for (uint32_t k = 0; k < pn->inv->n_gpus; k++, g++) {
            const struct fatia_plan_gpu *pg = &pn->gpus[k];
            uint16_t si = 0;
            for (uint32_t i = 0; i < pg->n_slices; i++) {
                const struct fatia_slice *s = &plan->slices[pg->first_slice + i];
                struct slice_ref *ref = fatia_calloc(1, sizeof(*ref));
                char id[128], key[300], *kc;
                if (!ref)
                    return -ENOMEM;
                ref->gpu = g;
                ref->ps = s;
                if (s->kind == FATIA_SLICE_FRACTION) {
                    ref->slice = FATIA_PLACE_FRACTION;
                } else {
                    ref->slice = si++;
                }
                fatia_plan_slice_id(plan, s, id, sizeof(id));
                snprintf(key, sizeof(key), "%s|%s", pn->inv->name, id);
                kc = fatia_strdup(key);
                if (!kc || fatia_strmap_put(ix, kc, ref) < 0) {
                    fatia_free(kc);
                    fatia_free(ref);
                    return -ENOMEM;
                }
            }
        }
    }
    return 0;
}

/* ---- annotations ---- */

static const char *container_name(const json_t *spec, uint16_t idx)
{
    const json_t *cs = json_object_get(spec, "containers");
    size_t n = json_array_size(cs);

    if (idx < n)
        return fatia_json_str(json_array_get(cs, idx), "name");
    return fatia_json_str(json_array_get(json_object_get(spec, "initContainers"), idx - n), "name");
}

static int container_index(const json_t *spec, const char *name)
{
    const json_t *cs = json_object_get(spec, "containers");
    size_t n = json_array_size(cs), i;
    json_t *c;

    json_array_foreach(cs, i, c)
    {
        const char *cn = fatia_json_str(c, "name");
        if (cn && name && !strcmp(cn, name))
            return (int)i;
    }
    json_array_foreach(json_object_get(spec, "initContainers"), i, c)
    {
        const char *cn = fatia_json_str(c, "name");
        if (cn && name && !strcmp(cn, name))
            return (int)(n + i);
    }
    return -1;
}

static const char *attr_string(const json_t *attrs, const char *name)
{
    return fatia_json_str(json_object_get(attrs, name), "string");
}

/* The devices annotation entry of one placed device. */
static json_t *device_json(struct placement_ctl *p, const json_t *spec, const char *node,
                           const struct fatia_place_device *d)
{
    char key[300];
    const struct slice_ref *ref;
    const struct fatia_slice *s;
    const struct fatia_inv_gpu *ig;
    json_t *e, *attrs;

    snprintf(key, sizeof(key), "%s|%s", node, d->slice == FATIA_PLACE_FRACTION ? "" : d->id);
    if (d->slice == FATIA_PLACE_FRACTION) {
        /* the fraction pool's slice is "gpu-<minor>": find it through the GPU */
        ref = NULL;
        for (size_t i = 0; i < p->slice_ix.cap; i++) {
            const struct slice_ref *r = p->slice_ix.slots[i].key ? p->slice_ix.slots[i].val : NULL;
            if (r && r->gpu == d->gpu && r->slice == FATIA_PLACE_FRACTION) {
                ref = r;
                break;
            }
        }
    } else {
        ref = fatia_strmap_get(&p->slice_ix, key);
    }
    if (!ref)
        return NULL;
    s = ref->ps;
    ig = &p->plan->nodes[s->node].inv->gpus[s->gpu];
    attrs = fatia_plan_slice_attributes(p->plan, s);
    e = json_pack("{s:s,s:s,s:s,s:I,s:s}", "container", container_name(spec, d->container), "slice",
                  d->id, "kind", fatia_slice_kind_name(s->kind), "gpuIndex", (json_int_t)ig->index,
                  "uuid", ig->uuid);
    if (!e) {
        json_decref(attrs);
        return NULL;
    }
    switch (s->kind) {
    case FATIA_SLICE_MIG: {
        const char *mu = attr_string(attrs, "uuid");
        if (mu && strcmp(mu, ig->uuid))
            json_object_set_new(e, "migUuid", json_string(mu));
        break;
    }
    case FATIA_SLICE_TIMESLICE:
        json_object_set_new(e, "memoryBytes", json_integer((json_int_t)s->memory_bytes));
        if (s->mig != FATIA_NO_MIG) {
            const char *mu = attr_string(attrs, "uuid");
            if (mu && strcmp(mu, ig->uuid))
                json_object_set_new(e, "migUuid", json_string(mu));
        }
        break;
    case FATIA_SLICE_MPS:
        json_object_set_new(e, "mps",
                            json_pack("{s:i,s:I}", "threadPercentage", (int)s->thread_percentage,
                                      "pinnedMemoryBytes", (json_int_t)s->memory_bytes));
        break;
    case FATIA_SLICE_FRACTION:
        json_object_set_new(e, "memoryBytes", json_integer((json_int_t)d->memory));
        json_object_set_new(e, "gpuMilli", json_integer(d->milli));
        break;
    default:
        break;
    }
    json_decref(attrs);
    return e;
}

/* Reads a pod's devices annotation back into place devices (for a pod already bound).
 * Returns the number of devices, or -EINVAL with why. */
static int parse_devices(struct placement_ctl *p, const json_t *pod, const char *node,
                         struct fatia_place_device **ret, char *why, size_t why_n)
{
    size_t n;
    const char *text = obj_annotation(pod, FATIA_ANN_DEVICES);
    const json_t *spec = json_object_get(pod, "spec");
    json_error_t err;
    json_t *arr;
    struct fatia_place_device *v;
    size_t i;
    json_t *e;

    *ret = NULL;
    if (!text || !*text)
        return 0;
    arr = json_loads(text, 0, &err);
    if (!json_is_array(arr)) {
        snprintf(why, why_n, "annotation %s is not a JSON array", FATIA_ANN_DEVICES);
        json_decref(arr);
        return -EINVAL;
    }
    v = json_array_size(arr) ? fatia_calloc(json_array_size(arr), sizeof(*v)) : NULL;
    if (json_array_size(arr) && !v) {
        json_decref(arr);
        return -ENOMEM;
    }
    n = 0;
    json_array_foreach(arr, i, e)
    {
        const char *sid = fatia_json_str(e, "slice"), *cn = fatia_json_str(e, "container");
        int ci = container_index(spec, cn);
        char key[300];
        const struct slice_ref *ref;
        int64_t x;
        size_t k;
        if (fatia_json_str(e, "claim"))
            continue; /* held by the claim's own binding */
        k = n++;
        if (!sid || ci < 0) {
            snprintf(why, why_n, "device %zu: no slice or unknown container '%s'", i, cn ? cn : "");
            goto bad;
        }
        v[k].container = (uint16_t)ci;
        snprintf(v[k].id, sizeof(v[k].id), "%s", sid);
        snprintf(key, sizeof(key), "%s|%s", node, sid);
        ref = fatia_strmap_get(&p->slice_ix, key);
        if (!ref) {
            /* a fraction "gpu-<minor>-f<k>": its pool is "gpu-<minor>" */
            const char *f = strstr(sid, "-f");
            char pool[128];
            unsigned long fk;
            char *end;
            if (!f) {
                snprintf(why, why_n, "slice %s does not exist on node %s", sid, node);
                goto bad;
            }
            snprintf(pool, sizeof(pool), "%s|%.*s", node, (int)(f - sid), sid);
            ref = fatia_strmap_get(&p->slice_ix, pool);
            fk = strtoul(f + 2, &end, 10);
            if (!ref || ref->slice != FATIA_PLACE_FRACTION || *end) {
                snprintf(why, why_n, "slice %s does not exist on node %s", sid, node);
                goto bad;
            }
            v[k].fraction = (uint16_t)fk;
            v[k].milli = fatia_json_int(e, "gpuMilli", &x) ? (int32_t)x : 0;
            v[k].memory = fatia_json_int(e, "memoryBytes", &x) ? (uint64_t)x : 0;
        } else {
            v[k].memory = ref->ps->memory_bytes;
        }
        v[k].gpu = ref->gpu;
        v[k].slice = ref->slice;
        v[k].kind = ref->ps->kind;
    }
    json_decref(arr);
    *ret = v;
    return (int)n;
bad:
    json_decref(arr);
    fatia_free(v);
    return -EINVAL;
}

/* ---- binding pods that are already bound (start-up, re-plan, pods bound elsewhere) ---- */

static int32_t pod_priority(const json_t *pod)
{
    int64_t v = 0;

    fatia_json_int(json_object_get(pod, "spec"), "priority", &v);
    return (int32_t)v;
}

static size_t node_index(const struct fatia_plan *plan, const char *name)
{
    for (size_t i = 0; i < plan->n_nodes; i++)
        if (!strcmp(plan->nodes[i].inv->name, name))
            return i;
    return SIZE_MAX;
}

static int record_binding(struct placement_ctl *p, const char *key, const json_t *pod,
                          const char *node, const struct fatia_place_device *devs, size_t n,
                          bool confirmed)
{
    struct binding *b = fatia_calloc(1, sizeof(*b));

    if (!b)
        return -ENOMEM;
    b->key = fatia_strdup(key);
    b->uid = fatia_strdup(meta_str(pod, "uid") ? meta_str(pod, "uid") : "");
    b->node = fatia_strdup(node);
    b->slices = n ? fatia_calloc(n, sizeof(char *)) : NULL;
    b->confirmed = confirmed;
    if (!b->key || !b->uid || !b->node || (n && !b->slices))
        goto oom;
    for (size_t i = 0; i < n; i++) {
        char k[300];
        snprintf(k, sizeof(k), "%s|%s", node, devs[i].id);
        if (!(b->slices[i] = fatia_strdup(k)))
            goto oom;
        b->n_slices++;
    }
    if (fatia_strmap_put(&p->bound, b->key, b) < 0)
        goto oom;
    for (size_t i = 0; i < b->n_slices; i++)
        (void)fatia_strmap_put(&p->held, b->slices[i], b->key);
    return 0;
oom:
    binding_free(b);
    return -ENOMEM;
}

/* Binds a pod that the store shows bound into the state. */
static void adopt(struct placement_ctl *p, const char *key, const json_t *pod)
{
    const char *node = fatia_json_str(json_object_get(pod, "spec"), "nodeName");
    struct fatia_place_device *devs = NULL;
    struct fatia_place_pod *pp = NULL;
    struct fatia_place_pod_result pr = {0};
    size_t ni;
    char why[512];
    int n, r;

    if (!p->st || !node)
        return;
    ni = node_index(p->plan, node);
    if (ni == SIZE_MAX) {
        fatia_debug("placement: pod %s is bound to '%s', not a node of this fleet", key, node);
        return;
    }
    why[0] = '\0';
    n = parse_devices(p, pod, node, &devs, why, sizeof(why));
    if (n < 0)
        goto conflict;
    r = fatia_place_pod_compile(p->st, meta_str(pod, "namespace"), json_object_get(pod, "metadata"),
                                json_object_get(pod, "spec"), NULL, 0, pod_priority(pod), &pp, why,
                                sizeof(why));
    if (r < 0)
        goto conflict;
    pr.node = (uint32_t)ni;
    pr.n_devices = (size_t)n;
    pr.devices = devs;
    r = fatia_place_bind(p->st, key, pp, &pr, why, sizeof(why));
    if (r < 0)
        goto conflict;
    if (record_binding(p, key, pod, node, devs, (size_t)n, true) < 0) {
        fatia_place_unbind(p->st, key);
        fatia_error("placement: out of memory recording pod %s", key);
    }
    fatia_place_pod_free(pp);
    fatia_free(devs);
    return;
conflict:
    for (int i = 0; i < n; i++) {
        char k[300];
        const char *holder;
        snprintf(k, sizeof(k), "%s|%s", node, devs[i].id);
        holder = fatia_strmap_get(&p->held, k);
        if (holder && strcmp(holder, key))
            snprintf(why, sizeof(why), "slice %s of node %s is held by pod %s", devs[i].id, node,
                     holder);
    }
    p->conflicts++;
    fatia_error("placement: bound pod %s cannot be accounted for: %s", key, why);
    ctl_event(p->ctl, pod, COMPONENT, "Warning", "DoubleBooking",
              "the slices of this pod cannot be accounted for: %s", why);
    fatia_place_pod_free(pp);
    fatia_free(devs);
}

static bool needs_placement(const json_t *pod)
{
    const json_t *spec = json_object_get(pod, "spec");
    const char *sched = fatia_json_str(spec, "schedulerName");

    return !fatia_json_str(spec, "nodeName") &&
           !json_array_size(json_object_get(spec, "schedulingGates")) && !obj_deleting(pod) &&
           !pod_terminal(pod) &&
           (!sched || !strcmp(sched, "default-scheduler") || !strcmp(sched, "fatia"));
}

/* ---- events ---- */

static bool pod_has_claims(const json_t *pod);
static void pod_claims_touch(struct placement_ctl *p, const json_t *pod);

static void on_pod(void *arg, const json_t *old, const json_t *obj)
{
    struct placement_ctl *p = arg;
    char key[600];
    struct binding *b;

    obj_key(obj ? obj : old, key, sizeof(key));
    if (!obj) {
        release(p, key);
        waiting_drop(p, key);
        pod_claims_touch(p, old);
        return;
    }
    if (pod_terminal(obj) && pod_has_claims(obj))
        pod_claims_touch(p, obj);
    b = fatia_strmap_get(&p->bound, key);
    if (b && strcmp(b->uid, meta_str(obj, "uid") ? meta_str(obj, "uid") : "")) {
        release(p, key); /* a new pod under the old name */
        b = NULL;
    }
    if (b) {
        if (pod_terminal(obj))
            release(p, key);
        else if (fatia_json_str(json_object_get(obj, "spec"), "nodeName"))
            b->confirmed = true;
        return;
    }
    if (pod_terminal(obj) || obj_deleting(obj))
        waiting_drop(p, key);
    if (!p->st || !ctl_ready(p->ctl))
        return; /* the sync hook binds every bound pod */
    if (fatia_json_str(json_object_get(obj, "spec"), "nodeName")) {
        if (!pod_terminal(obj))
            adopt(p, key, obj);
        return;
    }
    if (needs_placement(obj))
        wq_add(p->q, key);
}

/* ---- DRA ResourceClaims ----
 *
 * A pod's spec.resourceClaims name ResourceClaims (resourceClaimName) or templates
 * (resourceClaimTemplateName: the claim "<pod>-<entry>" is created from the template, owned by
 * the pod, as kube-controller-manager does). Placing such a pod:
 *
 *   claims exist? ──no──► create from the templates, wait for them
 *        │ yes
 *   unallocated ones ──fatia_dra_allocate──► devices on one node (every claim of the pod on the
 *        │                                   same node; the devices pods and other claims hold
 *        │                                   are taken)
 *   the pod placed on that node; the claims' devices bound into the state under "claim:ns/name"
 *   (a claim shared by several pods holds its devices once), the pod's under its own key
 *        │
 *   claim status written (allocation, reservedFor += pod) ──then──► the pod bound (its devices
 *   annotation lists the claim's devices with "claim": "ns/name" for the containers that use it)
 *
 * A claim's reservedFor loses a pod that ended or is gone; a claim nobody reserves any more is
 * deallocated and its devices freed (claims_reconcile). Allocated claims are bound into the state
 * from their status at every (re)build, like bound pods. */

#define CLAIM_PREFIX   "claim:"
#define MAX_POD_CLAIMS 32

struct pod_claim {
    char entry[64]; /* spec.resourceClaims[].name */
    char name[256]; /* the ResourceClaim */
    const json_t *claim;
    json_t *alloc; /* a new status.allocation (owned), when this attempt allocates it */
    struct fatia_place_device devs[16];
    size_t n_devs;
};

struct pod_claims {
    struct pod_claim v[MAX_POD_CLAIMS];
    size_t n;
    char node[256]; /* the node the claims pin, "" when none does */
};

static void pod_claims_release(struct pod_claims *pc)
{
    for (size_t i = 0; i < pc->n; i++)
        json_decref(pc->v[i].alloc);
    pc->n = 0;
}

static bool pod_has_claims(const json_t *pod)
{
    return json_array_size(json_object_get(json_object_get(pod, "spec"), "resourceClaims")) > 0;
}

/* The place devices of an allocation's results (status.allocation.devices.results). */
static int claim_devices(struct placement_ctl *p, const json_t *alloc, const char *node,
                         struct fatia_place_device *out, size_t max, char *why, size_t why_n)
{
    size_t i, n = 0;
    json_t *r;

    json_array_foreach(json_object_get(json_object_get(alloc, "devices"), "results"), i, r)
    {
        const char *drv = fatia_json_str(r, "driver"), *pool = fatia_json_str(r, "pool");
        const char *dev = fatia_json_str(r, "device");
        const struct slice_ref *ref;
        char key[300];
        if (!drv || strcmp(drv, FATIA_DRA_DRIVER_NVIDIA) || !pool || !dev)
            continue; /* another driver's device: not a GPU slice of ours */
        if (fatia_json_bool(r, "adminAccess", false))
            continue; /* admin access takes nothing */
        if (node && strcmp(pool, node)) {
            snprintf(why, why_n, "device %s of pool %s is not on node %s", dev, pool, node);
            return -EINVAL;
        }
        snprintf(key, sizeof(key), "%s|%s", pool, dev);
        ref = fatia_strmap_get(&p->slice_ix, key);
        if (!ref || ref->slice == FATIA_PLACE_FRACTION) {
            snprintf(why, why_n, "device %s of node %s is not a slice of the plan", dev, pool);
            return -EINVAL;
        }
        if (n == max) {
            snprintf(why, why_n, "more than %zu devices", max);
            return -EINVAL;
        }
        memset(&out[n], 0, sizeof(out[n]));
        out[n].gpu = ref->gpu;
        out[n].slice = ref->slice;
        out[n].kind = ref->ps->kind;
        out[n].memory = ref->ps->memory_bytes;
        snprintf(out[n].id, sizeof(out[n].id), "%s", dev);
        n++;
    }
    return (int)n;
}

/* Binds an allocated claim's devices (alloc, on node; NULL: the claim's stored allocation) into
 * the state under "claim:ns/name". 0, or <0 with why. */
static int bind_claim(struct placement_ctl *p, const json_t *claim, const json_t *alloc,
                      const char *node, bool confirmed, char *why, size_t why_n)
{
    struct fatia_place_device devs[16];
    struct fatia_place_pod_result pr = {0};
    char key[600];
    size_t ni;
    int n, r;

    if (!alloc) {
        alloc = json_object_get(json_object_get(claim, "status"), "allocation");
        node = fatia_dra_claim_node(claim);
    }
    snprintf(key, sizeof(key), CLAIM_PREFIX "%s/%s", meta_str(claim, "namespace"),
             meta_str(claim, "name"));
    if (!node || (ni = node_index(p->plan, node)) == SIZE_MAX) {
        snprintf(why, why_n, "claim %s: its devices are on no node of this fleet",
                 key + strlen(CLAIM_PREFIX));
        return -EINVAL;
    }
    n = claim_devices(p, alloc, node, devs, 16, why, why_n);
    if (n < 0)
        return n;
    pr.node = (uint32_t)ni;
    pr.n_devices = (size_t)n;
    pr.devices = devs;
    r = fatia_place_bind(p->st, key, p->claim_pod, &pr, why, why_n);
    if (r < 0)
        return r;
    r = record_binding(p, key, claim, node, devs, (size_t)n, confirmed);
    if (r < 0)
        fatia_place_unbind(p->st, key);
    return r;
}

/* A claim the store shows allocated is held in the state. */
static void adopt_claim(struct placement_ctl *p, const json_t *claim)
{
    char key[600], why[512];
    struct binding *b;

    if (!p->st || !fatia_dra_claim_allocated(claim))
        return;
    snprintf(key, sizeof(key), CLAIM_PREFIX "%s/%s", meta_str(claim, "namespace"),
             meta_str(claim, "name"));
    b = fatia_strmap_get(&p->bound, key);
    if (b && !strcmp(b->uid, meta_str(claim, "uid") ? meta_str(claim, "uid") : "")) {
        b->confirmed = true;
        return;
    }
    if (b)
        release(p, key);
    why[0] = '\0';
    if (bind_claim(p, claim, NULL, NULL, true, why, sizeof(why)) < 0) {
        p->conflicts++;
        fatia_error("placement: allocated claim %s cannot be accounted for: %s",
                    key + strlen(CLAIM_PREFIX), why);
        ctl_event(p->ctl, claim, COMPONENT, "Warning", "DoubleBooking",
                  "the devices of this claim cannot be accounted for: %s", why);
    }
}

static const json_t *lookup_template(struct placement_ctl *p, const char *ns, const char *name)
{
    return informer_get(p->templates, ns, name);
}

/* Finds (or creates) the claims of a pod. 0 ready, -EAGAIN (a claim is being created),
 * -ENOENT / -EINVAL with why (unschedulable). */
static int claims_prepare(struct placement_ctl *p, const char *key, const json_t *pod,
                          struct pod_claims *pc, char *why, size_t why_n)
{
    const char *ns = meta_str(pod, "namespace"), *pname = meta_str(pod, "name");
    size_t i;
    json_t *e;
    bool waiting = false;

    memset(pc, 0, sizeof(*pc));
    json_array_foreach(json_object_get(json_object_get(pod, "spec"), "resourceClaims"), i, e)
    {
        struct pod_claim *c;
        const char *entry = fatia_json_str(e, "name");
        const char *named = fatia_json_str(e, "resourceClaimName");
        const char *tname = fatia_json_str(e, "resourceClaimTemplateName");
        const char *cnode;
        if (pc->n == MAX_POD_CLAIMS) {
            snprintf(why, why_n, "more than %d resource claims", MAX_POD_CLAIMS);
            return -EINVAL;
        }
        c = &pc->v[pc->n++];
        snprintf(c->entry, sizeof(c->entry), "%s", entry ? entry : "");
        if (named)
            snprintf(c->name, sizeof(c->name), "%s", named);
        else
            snprintf(c->name, sizeof(c->name), "%s-%s", pname, entry ? entry : "");
        c->claim = informer_get(p->claims, ns, c->name);
        if (!c->claim && named) {
            snprintf(why, why_n, "resourceclaim \"%s\" not found", named);
            return -ENOENT;
        }
        if (!c->claim) {
            const json_t *tmpl = tname ? lookup_template(p, ns, tname) : NULL;
            json_t *copy, *claim = NULL, *meta;
            int r;
            if (!tmpl) {
                snprintf(why, why_n, "resourceclaimtemplate \"%s\" not found", tname ? tname : "");
                return -ENOENT;
            }
            copy = json_deep_copy(tmpl);
            r = copy ? fatia_dra_claim_from_template(copy, pname, c->entry, &claim) : -ENOMEM;
            json_decref(copy);
            if (r < 0) {
                snprintf(why, why_n, "resourceclaimtemplate \"%s\": %s", tname, fatia_strerror(r));
                return r == -ENOMEM ? r : -EINVAL;
            }
            meta = json_object_get(claim, "metadata");
            json_object_set_new(meta, "ownerReferences",
                                json_pack("[{s:s,s:s,s:s,s:s,s:b,s:b}]", "apiVersion", "v1", "kind",
                                          "Pod", "name", pname, "uid", meta_str(pod, "uid"),
                                          "controller", 1, "blockOwnerDeletion", 1));
            ctl_create(p->ctl, claim,
                       &(struct op_opts){.wq = p->q, .key = key, .quiet_conflict = true});
            json_decref(claim);
            waiting = true;
            continue;
        }
        /* a template's claim left by an earlier pod of the same name: wait for the collector */
        if (!named) {
            const json_t *ref = obj_controller_ref(c->claim);
            const char *ruid = fatia_json_str(ref, "uid");
            if (!ruid || strcmp(ruid, meta_str(pod, "uid") ? meta_str(pod, "uid") : "")) {
                waiting = true;
                continue;
            }
        }
        if (!fatia_dra_claim_allocated(c->claim))
            continue;
        cnode = fatia_dra_claim_node(c->claim);
        if (cnode && pc->node[0] && strcmp(cnode, pc->node)) {
            snprintf(why, why_n, "its claims are allocated on different nodes (%s, %s)", pc->node,
                     cnode);
            return -EINVAL;
        }
        if (cnode)
            snprintf(pc->node, sizeof(pc->node), "%s", cnode);
    }
    return waiting ? -EAGAIN : 0;
}

/* Allocates the pod's unallocated claims, on its pinned node if any. 0, or <0 with why. */
static int claims_allocate(struct placement_ctl *p, struct pod_claims *pc, char *why, size_t why_n)
{
    struct fatia_dra_inventory inv;
    struct fatia_dra_classes cls;
    struct fatia_dra_state st = {0};
    struct fatia_buf explain = FATIA_BUF_INIT;
    bool need = false;
    int r = 0;

    for (size_t i = 0; i < pc->n; i++)
        need |= !fatia_dra_claim_allocated(pc->v[i].claim);
    if (!need)
        return 0;
    fatia_dra_inventory_init(&inv);
    fatia_dra_classes_init(&cls);
    INFORMER_FOREACH(p->rslices, it)
    {
        if ((r = fatia_dra_inventory_add_slice(&inv, it->obj, why, why_n)) == -ENOMEM)
            goto out;
        r = 0; /* a slice the inventory refuses is left out */
    }
    if ((r = fatia_dra_inventory_finish(&inv)) < 0)
        goto out;
    INFORMER_FOREACH(p->classes, it)
    {
        if (fatia_dra_classes_add(&cls, it->obj, why, why_n) == -ENOMEM) {
            r = -ENOMEM;
            goto out;
        }
    }
    if ((r = fatia_dra_state_init(&st, &inv)) < 0)
        goto out;
    INFORMER_FOREACH(p->claims, it)
    fatia_dra_state_mark_claim(&st, &inv, it->obj);
    /* everything the pods hold is taken too (a fraction's pool as a whole) */
    for (size_t i = 0; i < p->held.cap; i++) {
        const char *k = p->held.slots[i].key;
        char node[256], dev[128];
        const char *bar = k ? strchr(k, '|') : NULL;
        const char *f;
        long idx;
        if (!bar)
            continue;
        snprintf(node, sizeof(node), "%.*s", (int)(bar - k), k);
        snprintf(dev, sizeof(dev), "%s", bar + 1);
        if ((f = strstr(dev, "-f")) && !strstr(dev, "-mig-"))
            dev[f - dev] = '\0';
        idx = fatia_dra_inventory_find(&inv, FATIA_DRA_DRIVER_NVIDIA, node, dev);
        if (idx >= 0 && (size_t)idx < st.n)
            st.used[idx] = 1;
    }
    for (size_t i = 0; i < pc->n; i++) {
        struct pod_claim *c = &pc->v[i];
        struct fatia_dra_allocation *a = NULL;
        struct fatia_dra_alloc_opts o = {.node = pc->node[0] ? pc->node : NULL};
        if (fatia_dra_claim_allocated(c->claim))
            continue;
        fatia_buf_reset(&explain);
        r = fatia_dra_allocate(&inv, &cls, &st, json_object_get(c->claim, "spec"), &o, &a,
                               &explain);
        if (r < 0) {
            snprintf(why, why_n, "resourceclaim %s: %s", c->name,
                     explain.len ? explain.p : fatia_strerror(r));
            goto out;
        }
        fatia_dra_state_commit(&st, a);
        c->alloc = fatia_dra_allocation_to_json(&inv, a);
        if (a->node && !pc->node[0])
            snprintf(pc->node, sizeof(pc->node), "%s", a->node);
        fatia_dra_allocation_free(a);
        if (!c->alloc) {
            r = -ENOMEM;
            goto out;
        }
        json_object_set_new(c->alloc, "allocationTimestamp", json_time(ctl_now(p->ctl)));
    }
out:
    fatia_buf_release(&explain);
    fatia_dra_state_release(&st);
    fatia_dra_classes_release(&cls);
    fatia_dra_inventory_release(&inv);
    if (r < 0)
        pod_claims_release(pc);
    return r;
}

/* The devices annotation entries of the pod's claims, one per (container using it, device). */
static int claims_devices_json(struct placement_ctl *p, const json_t *pod, struct pod_claims *pc,
                               const char *node, json_t *devs, struct fatia_buf *slices)
{
    const json_t *spec = json_object_get(pod, "spec");
    const char *ns = meta_str(pod, "namespace");

    for (size_t i = 0; i < pc->n; i++) {
        struct pod_claim *c = &pc->v[i];
        const json_t *alloc =
            c->alloc ? c->alloc
                     : json_object_get(json_object_get(c->claim, "status"), "allocation");
        char why[256], cref[600];
        int n = claim_devices(p, alloc, node, c->devs, 16, why, sizeof(why));
        size_t ci;
        json_t *ctr;
        if (n < 0)
            return -EINVAL;
        c->n_devs = (size_t)n;
        snprintf(cref, sizeof(cref), "%s/%s", ns, c->name);
        for (int d = 0; d < n; d++) {
            if (!strstr(slices->len ? slices->p : "", c->devs[d].id)) {
                if (slices->len)
                    (void)fatia_buf_putc(slices, ',');
                (void)fatia_buf_puts(slices, c->devs[d].id);
            }
        }
        json_array_foreach(json_object_get(spec, "containers"), ci, ctr)
        {
            size_t k;
            json_t *ref;
            json_array_foreach(json_object_get(json_object_get(ctr, "resources"), "claims"), k, ref)
            {
                const char *rn = fatia_json_str(ref, "name");
                if (!rn || strcmp(rn, c->entry))
                    continue;
                for (int d = 0; d < n; d++) {
                    struct fatia_place_device dv = c->devs[d];
                    json_t *e;
                    dv.container = (uint16_t)ci;
                    e = device_json(p, spec, node, &dv);
                    if (!e)
                        return -EINVAL;
                    json_object_set_new(e, "claim", json_string(cref));
                    json_array_append_new(devs, e);
                }
            }
        }
    }
    return 0;
}

/* Keeps a claim's reservedFor to the pods that still use it; deallocates a claim nobody uses. */
static void claims_reconcile(void *arg, const char *key)
{
    struct placement_ctl *p = arg;
    const json_t *claim = informer_get_key(p->claims, key);
    const json_t *st = json_object_get(claim, "status");
    json_t *keep, *nc;
    size_t i;
    json_t *r;

    if (!claim)
        return;
    keep = json_array();
    if (!keep)
        return;
    json_array_foreach(json_object_get(st, "reservedFor"), i, r)
    {
        const char *res = fatia_json_str(r, "resource"), *name = fatia_json_str(r, "name");
        const char *uid = fatia_json_str(r, "uid");
        const json_t *pod = res && !strcmp(res, "pods") && name
                                ? informer_get(p->pods, meta_str(claim, "namespace"), name)
                                : NULL;
        if (res && strcmp(res, "pods")) {
            json_array_append(keep, r); /* not ours to judge */
            continue;
        }
        if (pod && uid && !strcmp(uid, meta_str(pod, "uid") ? meta_str(pod, "uid") : "") &&
            !pod_terminal(pod))
            json_array_append(keep, r);
    }
    if (json_array_size(keep) == json_array_size(json_object_get(st, "reservedFor")) &&
        (json_array_size(keep) || !fatia_dra_claim_allocated(claim))) {
        json_decref(keep);
        return;
    }
    nc = json_deep_copy(claim);
    if (!nc) {
        json_decref(keep);
        return;
    }
    st = fatia_json_object_ensure(nc, "status");
    if (json_array_size(keep)) {
        json_object_set_new((json_t *)st, "reservedFor", json_deep_copy(keep));
    } else {
        json_object_del((json_t *)st, "reservedFor");
        json_object_del((json_t *)st, "allocation");
        fatia_info("placement: claim %s deallocated: no pod uses it any more", key);
    }
    json_decref(keep);
    ctl_update_status(
        p->ctl, nc,
        &(struct op_opts){
            .wq = p->claims_q, .key = key, .quiet_conflict = true, .quiet_missing = true});
    json_decref(nc);
}

static void on_claim(void *arg, const json_t *old, const json_t *obj)
{
    struct placement_ctl *p = arg;
    const json_t *o = obj ? obj : old;
    const json_t *ref = obj_controller_ref(o);
    char key[600], ckey[700];

    obj_key(o, key, sizeof(key));
    snprintf(ckey, sizeof(ckey), CLAIM_PREFIX "%s", key);
    if (!obj || !fatia_dra_claim_allocated(obj)) {
        if (fatia_strmap_has(&p->bound, ckey)) {
            struct binding *b = fatia_strmap_get(&p->bound, ckey);
            /* a claim this controller allocated a moment ago may not show it yet */
            if (!obj || b->confirmed)
                release(p, ckey);
        }
    } else if (ctl_ready(p->ctl)) {
        adopt_claim(p, obj);
    }
    if (obj)
        wq_add(p->claims_q, key);
    /* the pod that waits for its template's claim */
    if (obj && ref && fatia_json_str(ref, "kind") && !strcmp(fatia_json_str(ref, "kind"), "Pod")) {
        char pk[600];
        make_key(meta_str(o, "namespace"), fatia_json_str(ref, "name"), pk, sizeof(pk));
        wq_add(p->q, pk);
    }
}

/* A pod that ended or went away: its claims may release it. */
static void pod_claims_touch(struct placement_ctl *p, const json_t *pod)
{
    size_t i;
    json_t *e;

    json_array_foreach(json_object_get(json_object_get(pod, "spec"), "resourceClaims"), i, e)
    {
        char name[300], key[600];
        const char *named = fatia_json_str(e, "resourceClaimName");
        if (named)
            snprintf(name, sizeof(name), "%s", named);
        else
            snprintf(name, sizeof(name), "%s-%s", meta_str(pod, "name"),
                     fatia_json_str(e, "name") ? fatia_json_str(e, "name") : "");
        make_key(meta_str(pod, "namespace"), name, key, sizeof(key));
        wq_add(p->claims_q, key);
    }
}

/* ---- the writes of a pod with claims: claims first, then the pod ---- */

struct claims_write {
    struct placement_ctl *p;
    char key[600];
    json_t *pod_update;
    struct bind_ctx *bc;
    int outstanding;
    bool failed;
};

struct claim_write_one {
    struct claims_write *cw;
    char ckey[700];
    bool fresh; /* allocated by this attempt */
};

static void claims_written(struct claims_write *cw);

static void claim_write_done(void *arg, const struct fatia_client_result *res)
{
    struct claim_write_one *one = arg;
    struct claims_write *cw = one->cw;
    struct placement_ctl *p = cw->p;

    if (res->status) {
        struct binding *b = fatia_strmap_get(&p->bound, one->ckey);
        cw->failed = true;
        if (one->fresh && b && !b->confirmed)
            release(p, one->ckey);
    }
    fatia_free(one);
    if (--cw->outstanding == 0)
        claims_written(cw);
}

/* ---- placing ---- */

struct bind_ctx {
    struct placement_ctl *p;
    char key[600];
    char uid[80];
    char node[256];
};

static void set_unschedulable(struct placement_ctl *p, const char *key, const json_t *pod,
                              const char *msg)
{
    const char *prev = waiting_msg(p, key);
    json_t *np, *conds;

    if (prev && !strcmp(prev, msg))
        return;
    waiting_set(p, key, msg);
    ctl_event(p->ctl, pod, COMPONENT, "Warning", "FailedScheduling", "%s", msg);
    metric_inc(ctl_metrics(p->ctl), "fatia_placement_attempts_total", "result=\"unschedulable\"",
               1);
    np = json_deep_copy(pod);
    conds =
        np ? fatia_json_array_ensure(fatia_json_object_ensure(np, "status"), "conditions") : NULL;
    if (!conds) {
        json_decref(np);
        return;
    }
    if (!fatia_json_str(json_object_get(np, "status"), "phase"))
        json_object_set_new(json_object_get(np, "status"), "phase", json_string("Pending"));
    if (cond_set(conds, "PodScheduled", "False", "Unschedulable", msg, ctl_now(p->ctl)))
        ctl_update_status(
            p->ctl, np,
            &(struct op_opts){
                .wq = p->status_q, .key = key, .quiet_conflict = true, .quiet_missing = true});
    json_decref(np);
}

static void bind_done(void *arg, const struct fatia_client_result *res)
{
    struct bind_ctx *bc = arg;
    struct placement_ctl *p = bc->p;
    struct binding *b = fatia_strmap_get(&p->bound, bc->key);

    if (res->status) {
        /* not bound: give the slices back (unless the pod was re-bound meanwhile) */
        if (b && !strcmp(b->uid, bc->uid) && !b->confirmed) {
            if (p->st)
                fatia_place_unbind(p->st, bc->key);
            binding_drop(p, bc->key);
            retry_waiting(p);
        }
        wq_add_after(p->q, bc->key, 100 * FATIA_USEC_PER_MSEC);
    } else {
        if (b && !strcmp(b->uid, bc->uid))
            b->confirmed = true;
        p->binds++;
        metric_inc(ctl_metrics(p->ctl), "fatia_placement_attempts_total", "result=\"bound\"", 1);
        ctl_event(p->ctl, res->obj, COMPONENT, "Normal", "Scheduled",
                  "Successfully assigned %s to %s", bc->key, bc->node);
        wq_add(p->status_q, bc->key);
    }
    fatia_free(bc);
}

static void claims_written(struct claims_write *cw)
{
    struct placement_ctl *p = cw->p;

    if (cw->failed) {
        /* not bound: the pod gives its slices back and tries again */
        if (p->st)
            fatia_place_unbind(p->st, cw->key);
        binding_drop(p, cw->key);
        retry_waiting(p);
        wq_add_after(p->q, cw->key, 100 * FATIA_USEC_PER_MSEC);
        fatia_free(cw->bc);
    } else if (ctl_update(p->ctl, cw->pod_update,
                          &(struct op_opts){.wq = p->q,
                                            .key = cw->key,
                                            .then = bind_done,
                                            .arg = cw->bc,
                                            .quiet_conflict = true,
                                            .quiet_missing = true}) < 0) {
        fatia_place_unbind(p->st, cw->key);
        binding_drop(p, cw->key);
        fatia_free(cw->bc);
        wq_add_after(p->q, cw->key, FATIA_USEC_PER_SEC);
    }
    wq_end(p->q, cw->key, false);
    json_decref(cw->pod_update);
    fatia_free(cw);
}

static void place_pod(void *arg, const char *key)
{
    struct placement_ctl *p = arg;
    const json_t *pod = informer_get_key(p->pods, key);
    const json_t *spec = json_object_get(pod, "spec");
    struct fatia_place_pod *pp = NULL;
    struct fatia_place_result *res = NULL;
    struct fatia_place_opts opts = {.policy = p->policy};
    struct fatia_buf slices = FATIA_BUF_INIT;
    json_t *devs = NULL, *np = NULL, *ann, *pinned = NULL;
    struct bind_ctx *bc = NULL;
    struct pod_claims *pc = NULL;
    struct claims_write *cw = NULL;
    const char *node;
    char why[1024], *slices_s = NULL, *devs_s = NULL;
    const char *keys[1] = {key};
    int r;

    if (!pod || !needs_placement(pod) || fatia_strmap_has(&p->bound, key) || !p->st)
        return;
    why[0] = '\0';
    if (pod_has_claims(pod)) {
        pc = fatia_calloc(1, sizeof(*pc));
        if (!pc)
            return;
        r = claims_prepare(p, key, pod, pc, why, sizeof(why));
        if (r == 0)
            r = claims_allocate(p, pc, why, sizeof(why));
        if (r == -EAGAIN)
            goto out; /* a claim is being created: its event brings the pod back */
        if (r < 0) {
            char msg[1200];
            snprintf(msg, sizeof(msg), "0/%zu nodes are available: %s", p->plan->n_nodes,
                     r == -ENOMEM ? "out of memory" : why);
            set_unschedulable(p, key, pod, msg);
            goto out;
        }
        if (pc->node[0]) {
            /* the claims' devices decide the node */
            pinned = json_deep_copy(spec);
            if (!pinned)
                goto out;
            json_object_set_new(pinned, "nodeName", json_string(pc->node));
            spec = pinned;
        }
    }
    r = fatia_place_pod_compile(p->st, meta_str(pod, "namespace"), json_object_get(pod, "metadata"),
                                spec, NULL, 0, pod_priority(pod), &pp, why, sizeof(why));
    if (r < 0) {
        char msg[1200];
        snprintf(msg, sizeof(msg), "0/%zu nodes are available: %s", p->plan->n_nodes,
                 r == -ENOMEM ? "out of memory" : why);
        set_unschedulable(p, key, pod, msg);
        goto out;
    }
    r = fatia_place_workload(p->st, &pp, 1, &opts, &res);
    if (r < 0)
        goto out;
    if (!res->placed) {
        struct fatia_place_result *t = NULL;
        char msg[1400];
        opts.flags = FATIA_PLACE_TEST;
        if (fatia_place_workload(p->st, &pp, 1, &opts, &t) == 0 && !t->placed)
            snprintf(msg, sizeof(msg), "%s (it can never fit this fleet)",
                     res->reason ? res->reason : "no fit");
        else
            snprintf(msg, sizeof(msg), "%s", res->reason ? res->reason : "no fit");
        fatia_place_result_free(t);
        set_unschedulable(p, key, pod, msg);
        goto out;
    }
    spec = json_object_get(pod, "spec");
    node = fatia_place_node_name(p->st, res->pods[0].node);
    devs = json_array();
    if (!devs)
        goto out;
    for (size_t i = 0; i < res->pods[0].n_devices; i++) {
        const struct fatia_place_device *d = &res->pods[0].devices[i];
        json_t *e = device_json(p, spec, node, d);
        if (!e) {
            fatia_error("placement: pod %s: device %s has no slice in the plan", key, d->id);
            goto out;
        }
        json_array_append_new(devs, e);
        if (slices.len)
            (void)fatia_buf_putc(&slices, ',');
        (void)fatia_buf_puts(&slices, d->id);
    }
    if (pc && claims_devices_json(p, pod, pc, node, devs, &slices) < 0) {
        fatia_error("placement: pod %s: a claim's devices are not slices of the plan", key);
        goto out;
    }
    r = fatia_place_commit(p->st, &pp, keys, res);
    if (r < 0) {
        fatia_error("placement: pod %s: commit failed: %s", key, fatia_strerror(r));
        goto out;
    }
    if (record_binding(p, key, pod, node, res->pods[0].devices, res->pods[0].n_devices, false) <
        0) {
        fatia_place_unbind(p->st, key);
        goto out;
    }
    /* the claims this attempt allocated hold their devices from now on */
    for (size_t i = 0; pc && i < pc->n; i++) {
        if (!pc->v[i].alloc)
            continue;
        if (bind_claim(p, pc->v[i].claim, pc->v[i].alloc, node, false, why, sizeof(why)) < 0) {
            char ck[700];
            fatia_error("placement: pod %s: claim %s: %s", key, pc->v[i].name, why);
            for (size_t k = 0; k < i; k++) {
                if (!pc->v[k].alloc)
                    continue;
                snprintf(ck, sizeof(ck), CLAIM_PREFIX "%s/%s", meta_str(pod, "namespace"),
                         pc->v[k].name);
                release(p, ck);
            }
            release(p, key);
            goto out;
        }
    }
    waiting_drop(p, key);
    slices_s = fatia_buf_steal(&slices);
    {
        /* bound to this pod: the agent refuses devices placed for another pod (docs/agent.md) */
        size_t i;
        json_t *e;
        json_array_foreach(devs, i, e) json_object_set_new(
            e, "podUID", json_string(meta_str(pod, "uid") ? meta_str(pod, "uid") : ""));
    }
    devs_s = json_dumps(devs, JSON_COMPACT);
    np = json_deep_copy(pod);
    ann = np ? fatia_json_object_ensure(json_object_get(np, "metadata"), "annotations") : NULL;
    bc = fatia_calloc(1, sizeof(*bc));
    if (!ann || !devs_s || !bc) {
        release(p, key);
        fatia_free(bc);
        goto out;
    }
    json_object_set_new(json_object_get(np, "spec"), "nodeName", json_string(node));
    json_object_set_new(ann, FATIA_ANN_SLICES, json_string(slices_s ? slices_s : ""));
    json_object_set_new(ann, FATIA_ANN_DEVICES, json_string(devs_s));
    bc->p = p;
    snprintf(bc->key, sizeof(bc->key), "%s", key);
    snprintf(bc->uid, sizeof(bc->uid), "%s", meta_str(pod, "uid") ? meta_str(pod, "uid") : "");
    snprintf(bc->node, sizeof(bc->node), "%s", node);
    fatia_info("placement: %s -> %s [%s]", key, node, slices_s ? slices_s : "");
    if (pc && pc->n) {
        /* the claims' status first (allocation, reservedFor), then the pod */
        cw = fatia_calloc(1, sizeof(*cw));
        if (!cw) {
            release(p, key);
            fatia_free(bc);
            goto out;
        }
        cw->p = p;
        snprintf(cw->key, sizeof(cw->key), "%s", key);
        cw->pod_update = json_incref(np);
        cw->bc = bc;
        cw->outstanding = 1; /* held until every write started */
        wq_begin(p->q, key);
        for (size_t i = 0; i < pc->n; i++) {
            struct claim_write_one *one = fatia_calloc(1, sizeof(*one));
            json_t *nc = json_deep_copy(pc->v[i].claim);
            json_t *st = nc ? fatia_json_object_ensure(nc, "status") : NULL;
            if (!one || !st ||
                fatia_dra_claim_reserve(nc, "pods", meta_str(pod, "name"), bc->uid) < 0) {
                fatia_free(one);
                json_decref(nc);
                cw->failed = true;
                continue;
            }
            if (pc->v[i].alloc)
                json_object_set(st, "allocation", pc->v[i].alloc);
            one->cw = cw;
            one->fresh = pc->v[i].alloc != NULL;
            snprintf(one->ckey, sizeof(one->ckey), CLAIM_PREFIX "%s/%s", meta_str(pod, "namespace"),
                     pc->v[i].name);
            cw->outstanding++;
            if (ctl_update_status(p->ctl, nc,
                                  &(struct op_opts){.then = claim_write_done, .arg = one}) < 0) {
                cw->outstanding--;
                cw->failed = true;
                fatia_free(one);
            }
            json_decref(nc);
        }
        if (--cw->outstanding == 0)
            claims_written(cw);
        goto out;
    }
    if (ctl_update(p->ctl, np,
                   &(struct op_opts){.wq = p->q,
                                     .key = key,
                                     .then = bind_done,
                                     .arg = bc,
                                     .quiet_conflict = true,
                                     .quiet_missing = true}) < 0) {
        /* the write never started: op_abort already ran without bind_done */
        fatia_place_unbind(p->st, key);
        binding_drop(p, key);
        fatia_free(bc);
        wq_add_after(p->q, key, FATIA_USEC_PER_SEC);
    }
out:
    fatia_buf_release(&slices);
    fatia_free(slices_s);
    free(devs_s);
    json_decref(devs);
    json_decref(np);
    json_decref(pinned);
    fatia_place_result_free(res);
    fatia_place_pod_free(pp);
    if (pc) {
        pod_claims_release(pc);
        fatia_free(pc);
    }
}

/* PodScheduled=True on a pod this controller bound. */
static void write_scheduled(void *arg, const char *key)
{
    struct placement_ctl *p = arg;
    const json_t *pod = informer_get_key(p->pods, key);
    struct binding *b = fatia_strmap_get(&p->bound, key);
    json_t *np, *st, *conds;

    if (!pod || !b || !fatia_json_str(json_object_get(pod, "spec"), "nodeName") ||
        cond_true(pod, "PodScheduled") || pod_terminal(pod))
        return;
    np = json_deep_copy(pod);
    st = np ? fatia_json_object_ensure(np, "status") : NULL;
    conds = st ? fatia_json_array_ensure(st, "conditions") : NULL;
    if (!conds) {
        json_decref(np);
        return;
    }
    if (!fatia_json_str(st, "phase"))
        json_object_set_new(st, "phase", json_string("Pending"));
    cond_set(conds, "PodScheduled", "True", "", "", ctl_now(p->ctl));
    /* kube-scheduler leaves reason and message empty on success */
    {
        size_t i;
        json_t *c;
        json_array_foreach(conds, i, c)
        {
            const char *t = fatia_json_str(c, "type");
            if (t && !strcmp(t, "PodScheduled")) {
                json_object_del(c, "reason");
                json_object_del(c, "message");
            }
        }
    }
    ctl_update_status(
        p->ctl, np,
        &(struct op_opts){
            .wq = p->status_q, .key = key, .quiet_conflict = true, .quiet_missing = true});
    json_decref(np);
}

/* ---- plans ---- */

static int check_plan(void *arg, const struct fatia_plan *plan, char *why, size_t n)
{
    struct placement_ctl *p = arg;
    struct fatia_strmap ix;
    int r = 0;

    fatia_strmap_init(&ix);
    if (build_index(plan, &ix) < 0) {
        slice_ix_clear(&ix);
        snprintf(why, n, "out of memory");
        return -ENOMEM;
    }
    for (size_t i = 0; i < p->held.cap && r == 0; i++) {
        const char *k = p->held.slots[i].key;
        const char *holder = k ? p->held.slots[i].val : NULL;
        const struct slice_ref *old, *nw;
        if (!k)
            continue;
        old = fatia_strmap_get(&p->slice_ix, k);
        nw = fatia_strmap_get(&ix, k);
        if (!nw && strstr(k, "-f")) {
            /* a fraction: its pool must stay a pool of the same GPU */
            char pool[300];
            const char *f = strstr(k, "-f");
            snprintf(pool, sizeof(pool), "%.*s", (int)(f - k), k);
            old = fatia_strmap_get(&p->slice_ix, pool);
            nw = fatia_strmap_get(&ix, pool);
        }
        if (!nw || !old || nw->ps->kind != old->ps->kind ||
            nw->ps->memory_bytes != old->ps->memory_bytes ||
            strcmp(plan->nodes[nw->ps->node].inv->gpus[nw->ps->gpu].uuid,
                   p->plan->nodes[old->ps->node].inv->gpus[old->ps->gpu].uuid)) {
            const char *bar = strchr(k, '|');
            bool claim = fatia_str_has_prefix(holder, CLAIM_PREFIX);
            snprintf(why, n, "slice %s of node %.*s is held by %s %s and the new plan %s it",
                     bar ? bar + 1 : k, bar ? (int)(bar - k) : 0, k,
                     claim ? "resourceclaim" : "pod",
                     claim ? holder + strlen(CLAIM_PREFIX) : holder, nw ? "changes" : "removes");
            r = -EBUSY;
        }
    }
    slice_ix_clear(&ix);
    return r;
}

static void replanned(void *arg, const struct fatia_plan *plan)
{
    struct placement_ctl *p = arg;
    struct fatia_place_state *st = NULL;
    int r;

    /* forget the old state entirely: every binding is rebuilt from the stored pods */
    fatia_place_pod_free(p->claim_pod);
    p->claim_pod = NULL;
    fatia_place_state_free(p->st);
    p->st = NULL;
    slice_ix_clear(&p->slice_ix);
    fatia_strmap_init(&p->slice_ix);
    for (size_t i = 0; i < p->bound.cap; i++)
        if (p->bound.slots[i].key)
            binding_free(p->bound.slots[i].val);
    fatia_strmap_release(&p->bound);
    fatia_strmap_release(&p->held);
    p->plan = plan;
    r = fatia_place_state_new(plan, &st);
    if (r < 0 || build_index(plan, &p->slice_ix) < 0) {
        fatia_log_errno(FATIA_LOG_ERROR, r < 0 ? r : -ENOMEM,
                        "placement: cannot build the placement state; nothing is placed");
        fatia_place_state_free(st);
        return;
    }
    p->st = st;
    fatia_place_pod_free(p->claim_pod);
    p->claim_pod = NULL;
    {
        json_t *empty = json_pack("{s:[{s:s}]}", "containers", "name", "claim");
        char why[256];
        if (!empty || fatia_place_pod_compile(st, "", NULL, empty, NULL, 0, 0, &p->claim_pod, why,
                                              sizeof(why)) < 0)
            fatia_error("placement: cannot compile the claim placeholder: %s", why);
        json_decref(empty);
    }
    INFORMER_FOREACH(p->claims, it)
    adopt_claim(p, it->obj);
    INFORMER_FOREACH(p->pods, it)
    {
        const json_t *pod = it->obj;
        if (fatia_json_str(json_object_get(pod, "spec"), "nodeName") && !pod_terminal(pod))
            adopt(p, it->key, pod);
    }
    INFORMER_FOREACH(p->pods, it)
    {
        if (needs_placement(it->obj))
            wq_add(p->q, it->key);
    }
}

/* ---- metrics ---- */

void placement_ctl_metrics(struct placement_ctl *p, struct fatia_buf *out)
{
    const struct fatia_plan *plan = p->plan;
    struct fatia_strmap counts; /* labels -> counts[2] */
    char lab[600];

    metric_header(out, "fatia_slices", "gauge",
                  "GPU slices of the fleet, per 'node', 'kind', 'resource', 'profile' and "
                  "'state' (allocated or free)");
    fatia_strmap_init(&counts);
    for (size_t i = 0; plan && i < plan->n_slices; i++) {
        const struct fatia_slice *s = &plan->slices[i];
        const struct fatia_plan_gpu *pg = &plan->nodes[s->node].gpus[s->gpu];
        const char *profile = "";
        char id[128], key[300];
        bool held;
        if (s->state == FATIA_STATE_PLANNED)
            continue;
        if (s->mig != FATIA_NO_MIG && pg->layout && s->mig < pg->layout->n)
            profile = pg->layout->v[s->mig].profile->name;
        fatia_plan_slice_id(plan, s, id, sizeof(id));
        snprintf(key, sizeof(key), "%s|%s", plan->nodes[s->node].inv->name, id);
        held = fatia_strmap_has(&p->held, key);
        if (s->kind == FATIA_SLICE_FRACTION) {
            /* a pool is allocated when any fraction of it is */
            char pre[310];
            snprintf(pre, sizeof(pre), "%s-f", key);
            for (size_t k = 0; !held && k < p->held.cap; k++)
                held = p->held.slots[k].key && fatia_str_has_prefix(p->held.slots[k].key, pre);
        }
        for (int st = 0; st < 2; st++) {
            metric_labels(lab, sizeof(lab), "node", plan->nodes[s->node].inv->name, "kind",
                          fatia_slice_kind_name(s->kind), "resource", plan->resources[s->resource],
                          "profile", profile, "state", st ? "free" : "allocated", NULL);
            if (!fatia_strmap_has(&counts, lab)) {
                char *k = fatia_strdup(lab);
                double *c = fatia_calloc(1, sizeof(double));
                if (!k || !c || fatia_strmap_put(&counts, k, c) < 0) {
                    fatia_free(k);
                    fatia_free(c);
                    continue;
                }
            }
            if ((st == 1) != held)
                *(double *)fatia_strmap_get(&counts, lab) += 1;
        }
    }
    {
        /* sorted output */
        const char **keys = counts.n ? fatia_calloc(counts.n, sizeof(char *)) : NULL;
        size_t n = 0;
        for (size_t i = 0; keys && i < counts.cap; i++)
            if (counts.slots[i].key)
                keys[n++] = counts.slots[i].key;
        for (size_t i = 1; i < n; i++)
            for (size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
                const char *t = keys[j];
                keys[j] = keys[j - 1];
                keys[j - 1] = t;
            }
        for (size_t i = 0; i < n; i++)
            metric_sample(out, "fatia_slices", keys[i],
                          *(double *)fatia_strmap_get(&counts, keys[i]));
        fatia_free(keys);
    }
    for (size_t i = 0; i < counts.cap; i++)
        if (counts.slots[i].key) {
            fatia_free((char *)counts.slots[i].key);
            fatia_free(counts.slots[i].val);
        }
    fatia_strmap_release(&counts);
    metric_header(out, "fatia_pods_bound", "gauge", "Pods holding slices or node resources");
    metric_sample(out, "fatia_pods_bound", NULL, (double)p->bound.n);
    metric_header(out, "fatia_pods_unschedulable", "gauge",
                  "Pods waiting for a placement (PodScheduled=False)");
    metric_sample(out, "fatia_pods_unschedulable", NULL, (double)p->waiting.n);
    metric_header(out, "fatia_slice_conflicts_total", "counter",
                  "Bound pods whose slices were already held by another pod (never expected)");
    metric_sample(out, "fatia_slice_conflicts_total", NULL, (double)p->conflicts);
    metric_header(out, "fatia_pod_unbinds_total", "counter", "Pods that let go of their slices");
    metric_sample(out, "fatia_pod_unbinds_total", NULL, (double)p->unbinds);
}

/* ---- life cycle ---- */

int placement_ctl_new(struct ctl *c, struct device_ctl *dev, struct placement_ctl **ret)
{
    struct placement_ctl *p = fatia_calloc(1, sizeof(*p));
    const char *pol = ctl_opts(c)->placement_policy;

    if (!p)
        return -ENOMEM;
    p->ctl = c;
    p->dev = dev;
    p->policy = FATIA_PLACE_BINPACK;
    if (pol && fatia_place_policy_parse(pol, &p->policy) < 0) {
        fatia_error("placement: unknown policy '%s'", pol);
        fatia_free(p);
        return -EINVAL;
    }
    p->q = wq_new(c, "placement", place_pod, p);
    p->status_q = wq_new(c, "pod-scheduled", write_scheduled, p);
    p->pods = ctl_informer(c, fatia_kind_find("v1", "Pod", NULL));
    p->claims_q = wq_new(c, "resourceclaims", claims_reconcile, p);
    p->claims = ctl_informer(c, fatia_kind_find("resource.k8s.io/v1", "ResourceClaim", NULL));
    p->templates =
        ctl_informer(c, fatia_kind_find("resource.k8s.io/v1", "ResourceClaimTemplate", NULL));
    p->rslices = ctl_informer(c, fatia_kind_find("resource.k8s.io/v1", "ResourceSlice", NULL));
    p->classes = ctl_informer(c, fatia_kind_find("resource.k8s.io/v1", "DeviceClass", NULL));
    if (!p->q || !p->status_q || !p->pods || !p->claims_q || !p->claims || !p->templates ||
        !p->rslices || !p->classes || informer_on(p->claims, on_claim, p) < 0 ||
        informer_on(p->pods, on_pod, p) < 0 ||
        metric_define(ctl_metrics(c), "fatia_placement_attempts_total", "counter",
                      "Placement attempts, per 'result' (bound or unschedulable)", NULL, 0) < 0) {
        placement_ctl_free(p);
        return -ENOMEM;
    }
    device_ctl_set_hooks(dev, check_plan, replanned, p);
    *ret = p;
    return 0;
}

void placement_ctl_free(struct placement_ctl *p)
{
    if (!p)
        return;
    wq_free(p->q);
    wq_free(p->status_q);
    wq_free(p->claims_q);
    fatia_place_pod_free(p->claim_pod);
    fatia_place_state_free(p->st);
    slice_ix_clear(&p->slice_ix);
    for (size_t i = 0; i < p->bound.cap; i++)
        if (p->bound.slots[i].key)
            binding_free(p->bound.slots[i].val);
    fatia_strmap_release(&p->bound);
    fatia_strmap_release(&p->held);
    for (size_t i = 0; i < p->waiting.cap; i++)
        if (p->waiting.slots[i].key) {
            struct waitrec *w = p->waiting.slots[i].val;
            fatia_free(w->key);
            fatia_free(w->msg);
            fatia_free(w);
        }
    fatia_strmap_release(&p->waiting);
    fatia_free(p);
}
