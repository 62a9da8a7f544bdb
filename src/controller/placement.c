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
 * So must a plan while a pod's binding is written but not yet in the pod cache (the state is
 * rebuilt from the cache, and would forget it: a double booking the fleet scale run found).
 *
 * Policy: binpack by default (--placement-policy). MIG layouts are never re-laid here (that would
 * change hardware); a pod that asks for a MIG profile the fleet lacks stays Unschedulable with the
 * planner's reason. Pods with DRA ResourceClaims are placed too: the claims' half lives in
 * placement_claims.c (its design comment), which this file calls where a pod has claims.
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
#include "controller/placement_internal.h"
#include "demand/dra.h"
#include "demand/place.h"
#include "supply/plan.h"

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
            fatia_ctlr_wq_add(p->q, p->waiting.slots[i].key);
}

/* The pod let go of its slices. */
void fatia_controller_placement_release(struct placement_ctl *p, const char *key)
{
    if (!fatia_strmap_has(&p->bound, key))
        return;
    if (p->st)
        fatia_place_unbind(p->st, key);
    binding_drop(p, key);
    p->unbinds++;
    retry_waiting(p);
    fatia_ctlr_device_ctl_slices_freed(p->dev);
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
json_t *fatia_controller_placement_device_json(struct placement_ctl *p, const json_t *spec,
                                               const char *node, const struct fatia_place_device *d)
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
    const char *text = fatia_ctlr_obj_annotation(pod, FATIA_ANN_DEVICES);
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

size_t fatia_controller_placement_node_index(const struct fatia_plan *plan, const char *name)
{
    for (size_t i = 0; i < plan->n_nodes; i++)
        if (!strcmp(plan->nodes[i].inv->name, name))
            return i;
    return SIZE_MAX;
}

int fatia_controller_placement_record(struct placement_ctl *p, const char *key, const json_t *pod,
                                      const char *node, const struct fatia_place_device *devs,
                                      size_t n, bool confirmed)
{
    struct binding *b = fatia_calloc(1, sizeof(*b));

    if (!b)
        return -ENOMEM;
    b->key = fatia_strdup(key);
    b->uid = fatia_strdup(fatia_ctlr_meta_str(pod, "uid") ? fatia_ctlr_meta_str(pod, "uid") : "");
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
    ni = fatia_controller_placement_node_index(p->plan, node);
    if (ni == SIZE_MAX) {
        fatia_debug("placement: pod %s is bound to '%s', not a node of this fleet", key, node);
        return;
    }
    why[0] = '\0';
    n = parse_devices(p, pod, node, &devs, why, sizeof(why));
    if (n < 0)
        goto conflict;
    r = fatia_place_pod_compile(p->st, fatia_ctlr_meta_str(pod, "namespace"),
                                json_object_get(pod, "metadata"), json_object_get(pod, "spec"),
                                NULL, 0, pod_priority(pod), &pp, why, sizeof(why));
    if (r < 0)
        goto conflict;
    pr.node = (uint32_t)ni;
    pr.n_devices = (size_t)n;
    pr.devices = devs;
    r = fatia_place_bind(p->st, key, pp, &pr, why, sizeof(why));
    if (r < 0)
        goto conflict;
    if (fatia_controller_placement_record(p, key, pod, node, devs, (size_t)n, true) < 0) {
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
    fatia_ctlr_event(p->ctl, pod, COMPONENT, "Warning", "DoubleBooking",
                     "the slices of this pod cannot be accounted for: %s", why);
    fatia_place_pod_free(pp);
    fatia_free(devs);
}

static bool needs_placement(const json_t *pod)
{
    const json_t *spec = json_object_get(pod, "spec");
    const char *sched = fatia_json_str(spec, "schedulerName");

    return !fatia_json_str(spec, "nodeName") &&
           !json_array_size(json_object_get(spec, "schedulingGates")) &&
           !fatia_ctlr_obj_deleting(pod) && !fatia_ctlr_pod_terminal(pod) &&
           (!sched || !strcmp(sched, "default-scheduler") || !strcmp(sched, "fatia"));
}

/* ---- events ---- */

static void on_pod(void *arg, const json_t *old, const json_t *obj)
{
    struct placement_ctl *p = arg;
    char key[600];
    struct binding *b;

    fatia_ctlr_obj_key(obj ? obj : old, key, sizeof(key));
    if (!obj) {
        fatia_controller_placement_release(p, key);
        waiting_drop(p, key);
        fatia_controller_claims_touch(p, old);
        return;
    }
    if (fatia_ctlr_pod_terminal(obj) && fatia_controller_claims_pod_has(obj))
        fatia_controller_claims_touch(p, obj);
    b = fatia_strmap_get(&p->bound, key);
    if (b &&
        strcmp(b->uid, fatia_ctlr_meta_str(obj, "uid") ? fatia_ctlr_meta_str(obj, "uid") : "")) {
        fatia_controller_placement_release(p, key); /* a new pod under the old name */
        b = NULL;
    }
    if (b) {
        if (fatia_ctlr_pod_terminal(obj))
            fatia_controller_placement_release(p, key);
        else if (fatia_json_str(json_object_get(obj, "spec"), "nodeName")) {
            if (!b->confirmed)
                fatia_ctlr_device_ctl_slices_freed(p->dev); /* a re-plan may wait for it */
            b->confirmed = true;
        }
        return;
    }
    if (fatia_ctlr_pod_terminal(obj) || fatia_ctlr_obj_deleting(obj))
        waiting_drop(p, key);
    if (!p->st || !fatia_ctlr_ready(p->ctl))
        return; /* the sync hook binds every bound pod */
    if (fatia_json_str(json_object_get(obj, "spec"), "nodeName")) {
        if (!fatia_ctlr_pod_terminal(obj))
            adopt(p, key, obj);
        return;
    }
    if (needs_placement(obj))
        fatia_ctlr_wq_add(p->q, key);
}

/* ---- placing ---- */

static void set_unschedulable(struct placement_ctl *p, const char *key, const json_t *pod,
                              const char *msg)
{
    const char *prev = waiting_msg(p, key);
    json_t *np, *conds;

    if (prev && !strcmp(prev, msg))
        return;
    waiting_set(p, key, msg);
    fatia_ctlr_event(p->ctl, pod, COMPONENT, "Warning", "FailedScheduling", "%s", msg);
    fatia_ctlr_metric_inc(fatia_ctlr_metrics(p->ctl), "fatia_placement_attempts_total",
                          "result=\"unschedulable\"", 1);
    np = json_deep_copy(pod);
    conds =
        np ? fatia_json_array_ensure(fatia_json_object_ensure(np, "status"), "conditions") : NULL;
    if (!conds) {
        json_decref(np);
        return;
    }
    if (!fatia_json_str(json_object_get(np, "status"), "phase"))
        json_object_set_new(json_object_get(np, "status"), "phase", json_string("Pending"));
    if (fatia_ctlr_cond_set(conds, "PodScheduled", "False", "Unschedulable", msg,
                            fatia_ctlr_now(p->ctl)))
        fatia_ctlr_update_status(
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
            fatia_ctlr_device_ctl_slices_freed(p->dev);
        }
        fatia_ctlr_wq_add_after(p->q, bc->key, 100 * FATIA_USEC_PER_MSEC);
    } else {
        if (b && !strcmp(b->uid, bc->uid))
            b->confirmed = true;
        p->binds++;
        fatia_ctlr_metric_inc(fatia_ctlr_metrics(p->ctl), "fatia_placement_attempts_total",
                              "result=\"bound\"", 1);
        fatia_ctlr_event(p->ctl, res->obj, COMPONENT, "Normal", "Scheduled",
                         "Successfully assigned %s to %s", bc->key, bc->node);
        fatia_ctlr_wq_add(p->status_q, bc->key);
    }
    fatia_free(bc);
}

void fatia_controller_placement_claims_written(struct claims_write *cw)
{
    struct placement_ctl *p = cw->p;

    if (cw->failed) {
        /* not bound: the pod gives its slices back and tries again */
        if (p->st)
            fatia_place_unbind(p->st, cw->key);
        binding_drop(p, cw->key);
        retry_waiting(p);
        fatia_ctlr_wq_add_after(p->q, cw->key, 100 * FATIA_USEC_PER_MSEC);
        fatia_free(cw->bc);
    } else if (fatia_ctlr_update(p->ctl, cw->pod_update,
                                 &(struct op_opts){.wq = p->q,
                                                   .key = cw->key,
                                                   .then = bind_done,
                                                   .arg = cw->bc,
                                                   .quiet_conflict = true,
                                                   .quiet_missing = true}) < 0) {
        fatia_place_unbind(p->st, cw->key);
        binding_drop(p, cw->key);
        fatia_free(cw->bc);
        fatia_ctlr_wq_add_after(p->q, cw->key, FATIA_USEC_PER_SEC);
    }
    fatia_ctlr_wq_end(p->q, cw->key, false);
    json_decref(cw->pod_update);
    fatia_free(cw);
}

static void place_pod(void *arg, const char *key)
{
    struct placement_ctl *p = arg;
    const json_t *pod = fatia_ctlr_informer_get_key(p->pods, key);
    const json_t *spec = json_object_get(pod, "spec");
    struct fatia_place_pod *pp = NULL;
    struct fatia_place_result *res = NULL;
    struct fatia_place_opts opts = {.policy = p->policy};
    struct fatia_buf slices = FATIA_BUF_INIT;
    json_t *devs = NULL, *np = NULL, *ann, *pinned = NULL;
    struct bind_ctx *bc = NULL;
    struct pod_claims *pc = NULL;
    const char *node;
    char why[1024], *slices_s = NULL, *devs_s = NULL;
    const char *keys[1] = {key};
    int r;

    if (!pod || !needs_placement(pod) || fatia_strmap_has(&p->bound, key) || !p->st)
        return;
    why[0] = '\0';
    if (fatia_controller_claims_pod_has(pod)) {
        pc = fatia_calloc(1, sizeof(*pc));
        if (!pc)
            return;
        r = fatia_controller_claims_prepare(p, key, pod, pc, why, sizeof(why));
        if (r == 0)
            r = fatia_controller_claims_allocate(p, pc, why, sizeof(why));
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
    r = fatia_place_pod_compile(p->st, fatia_ctlr_meta_str(pod, "namespace"),
                                json_object_get(pod, "metadata"), spec, NULL, 0, pod_priority(pod),
                                &pp, why, sizeof(why));
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
        json_t *e = fatia_controller_placement_device_json(p, spec, node, d);
        if (!e) {
            fatia_error("placement: pod %s: device %s has no slice in the plan", key, d->id);
            goto out;
        }
        json_array_append_new(devs, e);
        if (slices.len)
            (void)fatia_buf_putc(&slices, ',');
        (void)fatia_buf_puts(&slices, d->id);
    }
    if (pc && fatia_controller_claims_devices_json(p, pod, pc, node, devs, &slices) < 0) {
        fatia_error("placement: pod %s: a claim's devices are not slices of the plan", key);
        goto out;
    }
    r = fatia_place_commit(p->st, &pp, keys, res);
    if (r < 0) {
        fatia_error("placement: pod %s: commit failed: %s", key, fatia_strerror(r));
        goto out;
    }
    if (fatia_controller_placement_record(p, key, pod, node, res->pods[0].devices,
                                          res->pods[0].n_devices, false) < 0) {
        fatia_place_unbind(p->st, key);
        goto out;
    }
    /* the claims this attempt allocated hold their devices from now on */
    if (pc && fatia_controller_claims_bind_fresh(p, key, pod, pc, node) < 0) {
        fatia_controller_placement_release(p, key);
        goto out;
    }
    waiting_drop(p, key);
    slices_s = fatia_buf_steal(&slices);
    {
        /* bound to this pod: the agent refuses devices placed for another pod (docs/agent.md) */
        size_t i;
        json_t *e;
        json_array_foreach(devs, i, e) json_object_set_new(
            e, "podUID",
            json_string(fatia_ctlr_meta_str(pod, "uid") ? fatia_ctlr_meta_str(pod, "uid") : ""));
    }
    devs_s = json_dumps(devs, JSON_COMPACT);
    np = json_deep_copy(pod);
    ann = np ? fatia_json_object_ensure(json_object_get(np, "metadata"), "annotations") : NULL;
    bc = fatia_calloc(1, sizeof(*bc));
    if (!ann || !devs_s || !bc) {
        fatia_controller_placement_release(p, key);
        fatia_free(bc);
        goto out;
    }
    json_object_set_new(json_object_get(np, "spec"), "nodeName", json_string(node));
    json_object_set_new(ann, FATIA_ANN_SLICES, json_string(slices_s ? slices_s : ""));
    json_object_set_new(ann, FATIA_ANN_DEVICES, json_string(devs_s));
    bc->p = p;
    snprintf(bc->key, sizeof(bc->key), "%s", key);
    snprintf(bc->uid, sizeof(bc->uid), "%s",
             fatia_ctlr_meta_str(pod, "uid") ? fatia_ctlr_meta_str(pod, "uid") : "");
    snprintf(bc->node, sizeof(bc->node), "%s", node);
    fatia_info("placement: %s -> %s [%s]", key, node, slices_s ? slices_s : "");
    if (pc && pc->n) {
        /* the claims' status first (allocation, reservedFor), then the pod */
        if (fatia_controller_claims_write(p, key, pod, pc, np, bc) < 0) {
            fatia_controller_placement_release(p, key);
            fatia_free(bc);
        }
        goto out;
    }
    if (fatia_ctlr_update(p->ctl, np,
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
        fatia_ctlr_wq_add_after(p->q, key, FATIA_USEC_PER_SEC);
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
        fatia_controller_claims_release(pc);
        fatia_free(pc);
    }
}

/* PodScheduled=True on a pod this controller bound. */
static void write_scheduled(void *arg, const char *key)
{
    struct placement_ctl *p = arg;
    const json_t *pod = fatia_ctlr_informer_get_key(p->pods, key);
    struct binding *b = fatia_strmap_get(&p->bound, key);
    json_t *np, *st, *conds;

    if (!pod || !b || !fatia_json_str(json_object_get(pod, "spec"), "nodeName") ||
        fatia_ctlr_cond_true(pod, "PodScheduled") || fatia_ctlr_pod_terminal(pod))
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
    fatia_ctlr_cond_set(conds, "PodScheduled", "True", "", "", fatia_ctlr_now(p->ctl));
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
    fatia_ctlr_update_status(
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

    /* a re-plan rebuilds the state from the cached pods: a binding written but not yet in the
     * cache would be forgotten and its slices given again, so the re-plan waits for it */
    for (size_t i = 0; i < p->bound.cap; i++) {
        const json_t *pod = p->bound.slots[i].key
                                ? fatia_ctlr_informer_get_key(p->pods, p->bound.slots[i].key)
                                : NULL;
        if (p->bound.slots[i].key && !fatia_str_has_prefix(p->bound.slots[i].key, CLAIM_PREFIX) &&
            (!pod || !fatia_json_str(json_object_get(pod, "spec"), "nodeName"))) {
            snprintf(why, n, "a pod's binding is in flight");
            return -EBUSY;
        }
    }
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
    fatia_controller_claims_adopt(p, it->obj);
    INFORMER_FOREACH(p->pods, it)
    {
        const json_t *pod = it->obj;
        if (fatia_json_str(json_object_get(pod, "spec"), "nodeName") &&
            !fatia_ctlr_pod_terminal(pod))
            adopt(p, it->key, pod);
    }
    INFORMER_FOREACH(p->pods, it)
    {
        if (needs_placement(it->obj))
            fatia_ctlr_wq_add(p->q, it->key);
    }
}

/* ---- metrics ---- */

void fatia_ctlr_placement_ctl_metrics(struct placement_ctl *p, struct fatia_buf *out)
{
    const struct fatia_plan *plan = p->plan;
    struct fatia_strmap counts; /* labels -> counts[2] */
    char lab[600];

    fatia_ctlr_metric_header(
        out, "fatia_slices", "gauge",
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
            fatia_ctlr_metric_labels(lab, sizeof(lab), "node", plan->nodes[s->node].inv->name,
                                     "kind", fatia_slice_kind_name(s->kind), "resource",
                                     plan->resources[s->resource], "profile", profile, "state",
                                     st ? "free" : "allocated", NULL);
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
            fatia_ctlr_metric_sample(out, "fatia_slices", keys[i],
                                     *(double *)fatia_strmap_get(&counts, keys[i]));
        fatia_free(keys);
    }
    for (size_t i = 0; i < counts.cap; i++)
        if (counts.slots[i].key) {
            fatia_free((char *)counts.slots[i].key);
            fatia_free(counts.slots[i].val);
        }
    fatia_strmap_release(&counts);
    fatia_ctlr_metric_header(out, "fatia_pods_bound", "gauge",
                             "Pods holding slices or node resources");
    fatia_ctlr_metric_sample(out, "fatia_pods_bound", NULL, (double)p->bound.n);
    fatia_ctlr_metric_header(out, "fatia_pods_unschedulable", "gauge",
                             "Pods waiting for a placement (PodScheduled=False)");
    fatia_ctlr_metric_sample(out, "fatia_pods_unschedulable", NULL, (double)p->waiting.n);
    fatia_ctlr_metric_header(
        out, "fatia_slice_conflicts_total", "counter",
        "Bound pods whose slices were already held by another pod (never expected)");
    fatia_ctlr_metric_sample(out, "fatia_slice_conflicts_total", NULL, (double)p->conflicts);
    fatia_ctlr_metric_header(out, "fatia_pod_unbinds_total", "counter",
                             "Pods that let go of their slices");
    fatia_ctlr_metric_sample(out, "fatia_pod_unbinds_total", NULL, (double)p->unbinds);
}

/* ---- life cycle ---- */

int fatia_ctlr_placement_ctl_new(struct ctl *c, struct device_ctl *dev, struct placement_ctl **ret)
{
    struct placement_ctl *p = fatia_calloc(1, sizeof(*p));
    const char *pol = fatia_ctlr_opts(c)->placement_policy;

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
    p->q = fatia_ctlr_wq_new(c, "placement", place_pod, p);
    p->status_q = fatia_ctlr_wq_new(c, "pod-scheduled", write_scheduled, p);
    p->pods = fatia_ctlr_informer(c, fatia_kind_find("v1", "Pod", NULL));
    if (!p->q || !p->status_q || !p->pods || fatia_controller_claims_init(p) < 0 ||
        fatia_ctlr_informer_on(p->pods, on_pod, p) < 0 ||
        fatia_ctlr_metric_define(fatia_ctlr_metrics(c), "fatia_placement_attempts_total", "counter",
                                 "Placement attempts, per 'result' (bound or unschedulable)", NULL,
                                 0) < 0) {
        fatia_ctlr_placement_ctl_free(p);
        return -ENOMEM;
    }
    fatia_ctlr_device_ctl_set_hooks(dev, check_plan, replanned, p);
    *ret = p;
    return 0;
}

void fatia_ctlr_placement_ctl_free(struct placement_ctl *p)
{
    if (!p)
        return;
    fatia_ctlr_wq_free(p->q);
    fatia_ctlr_wq_free(p->status_q);
    fatia_ctlr_wq_free(p->claims_q);
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
