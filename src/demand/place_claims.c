/*
 * demand/place_claims.c: DRA ResourceClaims in placement (the demand layer's allocator, dra.h,
 * on the placement state's devices).
 *
 * Devices. fatia_place_set_dra builds a DRA inventory from the plan's ResourceSlices
 * (fatia_plan_resourceslices: driver gpu.nvidia.com, one pool per node, devices named as the
 * slices are) and maps each device to its slice. The allocator's "used" flags mirror the slices'
 * owners: fatia_pl_apply_items sets and clears them, so a device a pod holds through a resource request
 * is taken for claims too, and the other way round. Devices without a slice (fraction pools,
 * which fatia.dev/gpu-milli requests share, and MIG instances a dynamic re-layout removed) are
 * never handed out to claims; MIG instances a re-layout created are not in the inventory (it is
 * the plan's): claims and dynamic MIG do not mix yet.
 *
 * Pods. fatia_place_pod_claims reads spec.resourceClaims: an entry naming a
 * resourceClaimTemplateName gets the template's spec (a claim of its own, "<pod>-<entry>"); one
 * naming a resourceClaimName is that claim, shared by every pod that names it: if it is already
 * allocated (status.allocation) its pods go to its node and take no device; if not, the first pod
 * of the gang that needs it allocates it and the others follow it to that node.
 *
 * On a node, after the containers' devices, each claim is allocated with fatia_dra_allocate on
 * that node (selectors in CEL, counts, constraints such as matchAttribute on
 * fatia.dev/nvlinkIsland, firstAvailable): the allocator chooses the devices (first fit in
 * inventory order, as kube-scheduler's); the policy chooses the node. A claim that does not fit
 * turns the node away ("cannot allocate all claims"). The allocation goes into the result as the
 * claim's status.allocation.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "demand/dra.h"
#include "demand/place_internal.h"

static void dra_free(struct fatia_place_state *st)
{
    if (st->dra_inv) {
        fatia_dra_inventory_release(st->dra_inv);
        fatia_free(st->dra_inv);
        st->dra_inv = NULL;
    }
    fatia_dra_state_release(&st->dra_st);
    memset(&st->dra_st, 0, sizeof(st->dra_st));
    fatia_free(st->dra_map);
    st->dra_map = NULL;
}

void fatia_pl_dra_release(struct fatia_place_state *st)
{
    dra_free(st);
}

/* device <-> slice, and the used flags from the owners */
int fatia_pl_dra_map(struct fatia_place_state *st)
{
    struct fatia_dra_inventory *inv = st->dra_inv;
    char id[128];

    if (!inv)
        return 0;
    if (st->dra_map && st->dra_map_gen == st->layout_gen)
        return 0;
    fatia_free(st->dra_map);
    st->dra_map = fatia_calloc(inv->n ? inv->n : 1, sizeof(*st->dra_map));
    if (!st->dra_map)
        return -ENOMEM;
    for (size_t i = 0; i < inv->n; i++) {
        st->dra_map[i].gpu = UINT32_MAX;
        st->dra_st.used[i] = 1;
    }
    for (size_t gi = 0; gi < st->n_gpus; gi++) {
        struct pl_gpu *g = &st->gpus[gi];
        for (uint16_t s = 0; s < g->n_slices; s++) {
            struct fatia_place_device d = {.gpu = (uint32_t)gi, .slice = s};
            long k;
            g->slices[s].dra = -1;
            fatia_place_device_id(st, &d, id, sizeof(id));
            k = fatia_dra_inventory_find(inv, FATIA_DRA_DRIVER_NVIDIA, st->nodes[g->node].name, id);
            if (k < 0 || !g->slices[s].exists)
                continue;
            g->slices[s].dra = (int32_t)k;
            st->dra_map[k].gpu = (uint32_t)gi;
            st->dra_map[k].slice = s;
            st->dra_st.used[k] = g->slices[s].owner != PL_NO_OWNER;
        }
    }
    st->dra_map_gen = st->layout_gen;
    return 0;
}

int fatia_place_set_dra(struct fatia_place_state *st, const struct fatia_dra_classes *cls,
                        char *why, size_t why_n)
{
    int r;

    dra_free(st);
    st->dra_cls = cls;
    if (!cls)
        return 0;
    st->dra_inv = fatia_calloc(1, sizeof(*st->dra_inv));
    if (!st->dra_inv)
        return -ENOMEM;
    fatia_dra_inventory_init(st->dra_inv);
    for (size_t n = 0; n < st->plan->n_nodes; n++) {
        json_t *slices = fatia_plan_resourceslices(st->plan, n), *sl;
        size_t i;
        if (!slices) {
            dra_free(st);
            return -ENOMEM;
        }
        json_array_foreach(slices, i, sl)
        {
            if ((r = fatia_dra_inventory_add_slice(st->dra_inv, sl, why, why_n)) < 0) {
                json_decref(slices);
                dra_free(st);
                return r;
            }
        }
        json_decref(slices);
    }
    if ((r = fatia_dra_inventory_finish(st->dra_inv)) < 0 ||
        (r = fatia_dra_state_init(&st->dra_st, st->dra_inv)) < 0) {
        dra_free(st);
        return r;
    }
    st->dra_map_gen = UINT64_MAX;
    if ((r = fatia_pl_dra_map(st)) < 0) {
        dra_free(st);
        return r;
    }
    return 0;
}

/* ---- pods ---- */

void fatia_pl_claims_free(struct fatia_place_pod *pod)
{
    for (size_t i = 0; i < pod->n_claims; i++) {
        fatia_free(pod->claims[i].entry);
        fatia_free(pod->claims[i].claim);
        fatia_free(pod->claims[i].allocated_node);
        json_decref(pod->claims[i].spec);
    }
    fatia_free(pod->claims);
    pod->claims = NULL;
    pod->n_claims = 0;
}

static uint16_t first_container(const json_t *spec, const char *entry)
{
    size_t i, j;
    const json_t *c, *ref;
    uint16_t n = 0;

    json_array_foreach(json_object_get(spec, "containers"), i, c)
    {
        json_array_foreach(json_object_get(json_object_get(c, "resources"), "claims"), j,
                           ref) if (fatia_json_str(ref, "name") &&
                                    !strcmp(fatia_json_str(ref, "name"), entry)) return (uint16_t)i;
        n++;
    }
    json_array_foreach(json_object_get(spec, "initContainers"), i, c)
    {
        json_array_foreach(
            json_object_get(json_object_get(c, "resources"), "claims"), j,
            ref) if (fatia_json_str(ref, "name") &&
                     !strcmp(fatia_json_str(ref, "name"), entry)) return (uint16_t)(n + i);
    }
    return 0;
}

int fatia_place_pod_claims(struct fatia_place_state *st, struct fatia_place_pod *pod,
                           const json_t *spec, fatia_place_lookup_fn lookup, void *ud, char *why,
                           size_t why_n)
{
    const json_t *list = json_object_get(spec, "resourceClaims"), *e;
    size_t i;

    (void)st;
    fatia_pl_claims_free(pod);
    if (!json_array_size(list))
        return 0;
    pod->claims = fatia_calloc(json_array_size(list), sizeof(*pod->claims));
    if (!pod->claims)
        return -ENOMEM;
    json_array_foreach(list, i, e)
    {
        struct pl_claim *c = &pod->claims[pod->n_claims];
        const char *entry = fatia_json_str(e, "name");
        const char *tmpl = fatia_json_str(e, "resourceClaimTemplateName");
        const char *named = fatia_json_str(e, "resourceClaimName");
        const json_t *obj;
        if (!entry || (!tmpl == !named)) {
            snprintf(why, why_n,
                     "spec.resourceClaims[%zu]: needs a name and one of resourceClaimName and "
                     "resourceClaimTemplateName",
                     i);
            fatia_pl_claims_free(pod);
            return -EINVAL;
        }
        obj = lookup ? lookup(ud, tmpl ? "ResourceClaimTemplate" : "ResourceClaim", pod->ns_name,
                              tmpl ? tmpl : named)
                     : NULL;
        if (!obj) {
            snprintf(why, why_n, "spec.resourceClaims[%zu]: %s '%s' not found in namespace %s", i,
                     tmpl ? "ResourceClaimTemplate" : "ResourceClaim", tmpl ? tmpl : named,
                     pod->ns_name);
            fatia_pl_claims_free(pod);
            return -EINVAL;
        }
        pod->n_claims++;
        c->entry = fatia_strdup(entry);
        c->container = first_container(spec, entry);
        if (tmpl) {
            c->spec = json_incref(json_object_get(json_object_get(obj, "spec"), "spec"));
        } else {
            c->spec = json_incref(json_object_get(obj, "spec"));
            c->claim = fatia_pl_strprintf("%s/%s", pod->ns_name, named);
            if (fatia_dra_claim_allocated(obj)) {
                const char *node = fatia_dra_claim_node(obj);
                c->allocated_node = fatia_strdup(node ? node : "");
                if (!c->allocated_node)
                    goto oom;
            }
            if (!c->claim)
                goto oom;
        }
        if (!c->entry || !c->spec) {
            if (!c->spec) {
                snprintf(why, why_n, "spec.resourceClaims[%zu]: '%s' has no claim spec", i,
                         tmpl ? tmpl : named);
                fatia_pl_claims_free(pod);
                return -EINVAL;
            }
            goto oom;
        }
    }
    return 0;
oom:
    fatia_pl_claims_free(pod);
    return -ENOMEM;
}
