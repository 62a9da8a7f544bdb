/*
 * controller/placement_claims.c: the placement controller's DRA half: pods whose
 * spec.resourceClaims name ResourceClaims, placed with the demand layer's allocator
 * (demand/dra.h) over the informers' ResourceSlices, DeviceClasses and claims. placement.c calls
 * it where a pod has claims; both share placement_internal.h.
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
 * from their status at every (re)build, like bound pods.
 *
 * Safety is placement.c's: a claim's devices are bound into the same state as pods' (under
 * "claim:ns/name"), committed before its status is written and released if that write fails,
 * so a device is never held by a claim and a pod, or by two claims. Choices rejected: a claims
 * controller of its own (it would need its own copy of the state, or a lock across the two, to
 * keep that guarantee).
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "base/str.h"
#include "controller/ctl_internal.h"
#include "controller/kueue.h"
#include "controller/placement_internal.h"
#include "demand/dra.h"
#include "demand/place.h"

void fatia_controller_claims_release(struct pod_claims *pc)
{
    for (size_t i = 0; i < pc->n; i++)
        json_decref(pc->v[i].alloc);
    pc->n = 0;
}

bool fatia_controller_claims_pod_has(const json_t *pod)
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
    snprintf(key, sizeof(key), CLAIM_PREFIX "%s/%s", fatia_ctlr_meta_str(claim, "namespace"),
             fatia_ctlr_meta_str(claim, "name"));
    if (!node || (ni = fatia_controller_placement_node_index(p->plan, node)) == SIZE_MAX) {
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
    r = fatia_controller_placement_record(p, key, claim, node, devs, (size_t)n, confirmed);
    if (r < 0)
        fatia_place_unbind(p->st, key);
    return r;
}

/* A claim the store shows allocated is held in the state. */
void fatia_controller_claims_adopt(struct placement_ctl *p, const json_t *claim)
{
    char key[600], why[512];
    struct binding *b;

    if (!p->st || !fatia_dra_claim_allocated(claim))
        return;
    snprintf(key, sizeof(key), CLAIM_PREFIX "%s/%s", fatia_ctlr_meta_str(claim, "namespace"),
             fatia_ctlr_meta_str(claim, "name"));
    b = fatia_strmap_get(&p->bound, key);
    if (b && !strcmp(b->uid,
                     fatia_ctlr_meta_str(claim, "uid") ? fatia_ctlr_meta_str(claim, "uid") : "")) {
        b->confirmed = true;
        return;
    }
    if (b)
        fatia_controller_placement_release(p, key);
    why[0] = '\0';
    if (bind_claim(p, claim, NULL, NULL, true, why, sizeof(why)) < 0) {
        p->conflicts++;
        fatia_error("placement: allocated claim %s cannot be accounted for: %s",
                    key + strlen(CLAIM_PREFIX), why);
        fatia_ctlr_event(p->ctl, claim, COMPONENT, "Warning", "DoubleBooking",
                         "the devices of this claim cannot be accounted for: %s", why);
    }
}

static const json_t *lookup_template(struct placement_ctl *p, const char *ns, const char *name)
{
    return fatia_ctlr_informer_get(p->templates, ns, name);
}

/* Finds (or creates) the claims of a pod. 0 ready, -EAGAIN (a claim is being created),
 * -ENOENT / -EINVAL with why (unschedulable). */
int fatia_controller_claims_prepare(struct placement_ctl *p, const char *key, const json_t *pod,
                                    struct pod_claims *pc, char *why, size_t why_n)
{
    const char *ns = fatia_ctlr_meta_str(pod, "namespace"),
               *pname = fatia_ctlr_meta_str(pod, "name");
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
        c->claim = fatia_ctlr_informer_get(p->claims, ns, c->name);
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
                                          "Pod", "name", pname, "uid",
                                          fatia_ctlr_meta_str(pod, "uid"), "controller", 1,
                                          "blockOwnerDeletion", 1));
            fatia_ctlr_create(p->ctl, claim,
                              &(struct op_opts){.wq = p->q, .key = key, .quiet_conflict = true});
            json_decref(claim);
            waiting = true;
            continue;
        }
        /* a template's claim left by an earlier pod of the same name: wait for the collector */
        if (!named) {
            const json_t *ref = fatia_ctlr_obj_controller_ref(c->claim);
            const char *ruid = fatia_json_str(ref, "uid");
            if (!ruid ||
                strcmp(ruid,
                       fatia_ctlr_meta_str(pod, "uid") ? fatia_ctlr_meta_str(pod, "uid") : "")) {
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
int fatia_controller_claims_allocate(struct placement_ctl *p, struct pod_claims *pc, char *why,
                                     size_t why_n)
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
        json_object_set_new(c->alloc, "allocationTimestamp",
                            fatia_ctlr_json_time(fatia_ctlr_now(p->ctl)));
    }
out:
    fatia_buf_release(&explain);
    fatia_dra_state_release(&st);
    fatia_dra_classes_release(&cls);
    fatia_dra_inventory_release(&inv);
    if (r < 0)
        fatia_controller_claims_release(pc);
    return r;
}

/* The devices annotation entries of the pod's claims, one per (container using it, device). */
int fatia_controller_claims_devices_json(struct placement_ctl *p, const json_t *pod,
                                         struct pod_claims *pc, const char *node, json_t *devs,
                                         struct fatia_buf *slices)
{
    const json_t *spec = json_object_get(pod, "spec");
    const char *ns = fatia_ctlr_meta_str(pod, "namespace");

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
                    e = fatia_controller_placement_device_json(p, spec, node, &dv);
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
    const json_t *claim = fatia_ctlr_informer_get_key(p->claims, key);
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
        const json_t *pod =
            res && !strcmp(res, "pods") && name
                ? fatia_ctlr_informer_get(p->pods, fatia_ctlr_meta_str(claim, "namespace"), name)
                : NULL;
        if (res && strcmp(res, "pods")) {
            json_array_append(keep, r); /* not ours to judge */
            continue;
        }
        if (pod && uid &&
            !strcmp(uid, fatia_ctlr_meta_str(pod, "uid") ? fatia_ctlr_meta_str(pod, "uid") : "") &&
            !fatia_ctlr_pod_terminal(pod))
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
    fatia_ctlr_update_status(
        p->ctl, nc,
        &(struct op_opts){
            .wq = p->claims_q, .key = key, .quiet_conflict = true, .quiet_missing = true});
    json_decref(nc);
}

static void on_claim(void *arg, const json_t *old, const json_t *obj)
{
    struct placement_ctl *p = arg;
    const json_t *o = obj ? obj : old;
    const json_t *ref = fatia_ctlr_obj_controller_ref(o);
    char key[600], ckey[700];

    fatia_ctlr_obj_key(o, key, sizeof(key));
    snprintf(ckey, sizeof(ckey), CLAIM_PREFIX "%s", key);
    if (!obj || !fatia_dra_claim_allocated(obj)) {
        if (fatia_strmap_has(&p->bound, ckey)) {
            struct binding *b = fatia_strmap_get(&p->bound, ckey);
            /* a claim this controller allocated a moment ago may not show it yet */
            if (!obj || b->confirmed)
                fatia_controller_placement_release(p, ckey);
        }
    } else if (fatia_ctlr_ready(p->ctl)) {
        fatia_controller_claims_adopt(p, obj);
    }
    if (obj)
        fatia_ctlr_wq_add(p->claims_q, key);
    /* the pod that waits for its template's claim */
    if (obj && ref && fatia_json_str(ref, "kind") && !strcmp(fatia_json_str(ref, "kind"), "Pod")) {
        char pk[600];
        fatia_ctlr_make_key(fatia_ctlr_meta_str(o, "namespace"), fatia_json_str(ref, "name"), pk,
                            sizeof(pk));
        fatia_ctlr_wq_add(p->q, pk);
    }
}

/* A pod that ended or went away: its claims may release it. */
void fatia_controller_claims_touch(struct placement_ctl *p, const json_t *pod)
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
            snprintf(name, sizeof(name), "%s-%s", fatia_ctlr_meta_str(pod, "name"),
                     fatia_json_str(e, "name") ? fatia_json_str(e, "name") : "");
        fatia_ctlr_make_key(fatia_ctlr_meta_str(pod, "namespace"), name, key, sizeof(key));
        fatia_ctlr_wq_add(p->claims_q, key);
    }
}

/* ---- the writes of a pod with claims: claims first, then the pod ---- */

static void claim_write_done(void *arg, const struct fatia_client_result *res)
{
    struct claim_write_one *one = arg;
    struct claims_write *cw = one->cw;
    struct placement_ctl *p = cw->p;

    if (res->status) {
        struct binding *b = fatia_strmap_get(&p->bound, one->ckey);
        cw->failed = true;
        if (one->fresh && b && !b->confirmed)
            fatia_controller_placement_release(p, one->ckey);
    }
    fatia_free(one);
    if (--cw->outstanding == 0)
        fatia_controller_placement_claims_written(cw);
}

/* Writes the claims' status (allocation, reservedFor += the pod), then, once every write
 * answered, the pod's binding np (fatia_controller_placement_claims_written), which takes bc. 0, or -ENOMEM
 * before anything was written (the caller still owns bc). */
int fatia_controller_claims_write(struct placement_ctl *p, const char *key, const json_t *pod,
                                  const struct pod_claims *pc, json_t *np, struct bind_ctx *bc)
{
    struct claims_write *cw = fatia_calloc(1, sizeof(*cw));

    if (!cw)
        return -ENOMEM;
    cw->p = p;
    snprintf(cw->key, sizeof(cw->key), "%s", key);
    cw->pod_update = json_incref(np);
    cw->bc = bc;
    cw->outstanding = 1; /* held until every write started */
    fatia_ctlr_wq_begin(p->q, key);
    for (size_t i = 0; i < pc->n; i++) {
        struct claim_write_one *one = fatia_calloc(1, sizeof(*one));
        json_t *nc = json_deep_copy(pc->v[i].claim);
        json_t *st = nc ? fatia_json_object_ensure(nc, "status") : NULL;
        if (!one || !st ||
            fatia_dra_claim_reserve(nc, "pods", fatia_ctlr_meta_str(pod, "name"), bc->uid) < 0) {
            fatia_free(one);
            json_decref(nc);
            cw->failed = true;
            continue;
        }
        if (pc->v[i].alloc)
            json_object_set(st, "allocation", pc->v[i].alloc);
        one->cw = cw;
        one->fresh = pc->v[i].alloc != NULL;
        snprintf(one->ckey, sizeof(one->ckey), CLAIM_PREFIX "%s/%s",
                 fatia_ctlr_meta_str(pod, "namespace"), pc->v[i].name);
        cw->outstanding++;
        if (fatia_ctlr_update_status(p->ctl, nc,
                                     &(struct op_opts){.then = claim_write_done, .arg = one}) < 0) {
            cw->outstanding--;
            cw->failed = true;
            fatia_free(one);
        }
        json_decref(nc);
    }
    if (--cw->outstanding == 0)
        fatia_controller_placement_claims_written(cw);
    return 0;
}

/* Binds the claims this attempt allocated (pc's with an allocation) into the state, on node.
 * 0, or -EINVAL (logged) with every claim bound before it released again. */
int fatia_controller_claims_bind_fresh(struct placement_ctl *p, const char *key, const json_t *pod,
                                       const struct pod_claims *pc, const char *node)
{
    char why[1024];

    for (size_t i = 0; i < pc->n; i++) {
        if (!pc->v[i].alloc)
            continue;
        if (bind_claim(p, pc->v[i].claim, pc->v[i].alloc, node, false, why, sizeof(why)) < 0) {
            char ck[700];
            fatia_error("placement: pod %s: claim %s: %s", key, pc->v[i].name, why);
            for (size_t k = 0; k < i; k++) {
                if (!pc->v[k].alloc)
                    continue;
                snprintf(ck, sizeof(ck), CLAIM_PREFIX "%s/%s",
                         fatia_ctlr_meta_str(pod, "namespace"), pc->v[k].name);
                fatia_controller_placement_release(p, ck);
            }
            return -EINVAL;
        }
    }
    return 0;
}

/* The DRA half of fatia_ctlr_placement_ctl_new: the claims' work queue and the informers of the kinds
 * claims are placed from. 0 or -ENOMEM (fatia_ctlr_placement_ctl_free releases what was made). */
int fatia_controller_claims_init(struct placement_ctl *p)
{
    struct ctl *c = p->ctl;

    p->claims_q = fatia_ctlr_wq_new(c, "resourceclaims", claims_reconcile, p);
    p->claims =
        fatia_ctlr_informer(c, fatia_kind_find("resource.k8s.io/v1", "ResourceClaim", NULL));
    p->templates = fatia_ctlr_informer(
        c, fatia_kind_find("resource.k8s.io/v1", "ResourceClaimTemplate", NULL));
    p->rslices =
        fatia_ctlr_informer(c, fatia_kind_find("resource.k8s.io/v1", "ResourceSlice", NULL));
    p->classes = fatia_ctlr_informer(c, fatia_kind_find("resource.k8s.io/v1", "DeviceClass", NULL));
    if (!p->claims_q || !p->claims || !p->templates || !p->rslices || !p->classes ||
        fatia_ctlr_informer_on(p->claims, on_claim, p) < 0)
        return -ENOMEM;
    return 0;
}
