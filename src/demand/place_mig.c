/*
 * demand/place_mig.c: dynamic MIG: re-laying the MIG GPUs of a node so that a pod's MIG requests
 * can be served, with the supply layer's pool planner (supply/mig.h, fatia_mig_plan_pool).
 *
 * When a pod asks for instances of MIG profiles (nvidia.com/mig-<profile>, the mixed strategy)
 * that no node has free, place.c asks each node that passes the pod's filters whether its
 * re-layable GPUs (MIG, mixed strategy, not time-sliced: pl_gpu.mig_dynamic) could serve the
 * pod's whole MIG demand:
 *   1. FATIA_PLACE_MIG_FREE and first try of _EVICT: every instance in use is busy (must stay);
 *   2. FATIA_PLACE_MIG_EVICT, second try: instances held by pods of lower priority than the
 *      requester are not busy; those the new layouts drop make their pods victims.
 * The planner's objective (most demand served, then fewest GPUs reconfigured, then least stranded
 * capacity) chooses the layouts; the node is usable only when the whole demand is served. The
 * caller prefers nodes with fewer victims, then fewer reconfigured GPUs.
 *
 * Demand is the pod's full request per profile (free instances that already exist count as
 * supply in the planner), so a pod asking for 2 x 1g.18gb on a node with one free 1g.18gb gets a
 * layout with two.
 *
 * Not done here: MIG on GPUs whose MIG mode is off (enabling it needs a GPU reset, which fatia
 * never does: DESIGN §7), the single strategy (every GPU of the node would change together), and
 * time-sliced MIG devices (their replica counts would have to be re-planned).
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "demand/place_internal.h"

/* The MIG profile a device resource names on geometry g ("nvidia.com/mig-1g.18gb.me" is
 * "1g.18gb+me"), or NULL. */
static const struct fatia_mig_profile *profile_of(const struct fatia_mig_geom *g, const char *res)
{
    char name[96];

    for (size_t i = 0; i < g->n_profiles; i++) {
        fatia_mig_resource_name(g->profiles[i].name, name, sizeof(name));
        if (!strcmp(name, res))
            return &g->profiles[i];
    }
    return NULL;
}

static bool kept_in(const struct fatia_mig_layout *l, const struct fatia_mig_placement *pl)
{
    for (unsigned j = 0; j < l->n; j++)
        if (l->v[j].profile == pl->profile && l->v[j].start == pl->start)
            return true;
    return false;
}

/* The binding holding the instance at pl on g now, PL_NO_OWNER when free or new. */
static int32_t owner_of(const struct pl_gpu *g, const struct fatia_mig_placement *pl)
{
    for (uint16_t s = 0; s < g->n_slices; s++) {
        const struct fatia_mig_placement *c;
        if (g->slices[s].mig == FATIA_NO_MIG)
            continue;
        c = &g->layout.v[g->slices[s].mig];
        if (c->profile == pl->profile && c->start == pl->start)
            return g->slices[s].owner;
    }
    return PL_NO_OWNER;
}

static bool is_victim(const struct pl_mig_try *t, int32_t o)
{
    for (size_t v = 0; v < t->n_victims; v++)
        if (t->victims[v] == o)
            return true;
    return false;
}

static int add_victim(struct pl_mig_try *t, int32_t o)
{
    if (is_victim(t, o))
        return 0;
    if (t->n_victims == FATIA_ARRAY_SIZE(t->victims))
        return -FATIA_E_LIMIT;
    t->victims[t->n_victims++] = o;
    return 0;
}

static int try_once(struct fatia_place_state *st, const struct fatia_place_pod *pod,
                    const struct pl_node *nd, bool evict, struct pl_mig_try *ret)
{
    struct fatia_mig_pool_gpu pool[FATIA_NODE_MAX_GPUS];
    uint32_t idx[FATIA_NODE_MAX_GPUS];
    struct fatia_mig_demand demand[16];
    size_t n = 0, n_d = 0;
    struct fatia_mig_pool_result res = {0};
    int r;

    for (uint32_t i = 0; i < nd->n_gpus && n < FATIA_NODE_MAX_GPUS; i++) {
        struct pl_gpu *g = &st->gpus[nd->first_gpu + i];
        if (!g->mig_dynamic)
            continue;
        pool[n].geom = g->model->mig;
        pool[n].current = g->layout;
        pool[n].busy = 0;
        for (uint16_t s = 0; s < g->n_slices; s++) {
            int32_t o = g->slices[s].owner;
            bool busy = o != PL_NO_OWNER;
            if (busy && evict && o != INT32_MAX && st->binds.v[o].priority < pod->priority)
                busy = false;
            if (busy && g->slices[s].mig != FATIA_NO_MIG)
                pool[n].busy |= 1u << g->slices[s].mig;
        }
        idx[n++] = nd->first_gpu + i;
    }
    if (!n)
        return -FATIA_E_NOFIT;
    /* the demand: per profile, what the pod asks for */
    for (size_t q = 0; q < pod->n_reqs; q++) {
        const struct pl_res *rs = fatia_pl_res_get(st, pod->reqs[q].res);
        const struct fatia_mig_profile *p = NULL;
        size_t d;
        for (size_t i = 0; !p && i < n; i++)
            p = profile_of(pool[i].geom, rs->name);
        if (!p)
            continue;
        for (d = 0; d < n_d; d++)
            if (!strcmp(demand[d].profile, p->name))
                break;
        if (d == n_d) {
            if (n_d == FATIA_ARRAY_SIZE(demand))
                return -FATIA_E_NOFIT;
            demand[n_d++] = (struct fatia_mig_demand){p->name, 0};
        }
        demand[d].count += pod->reqs[q].count;
    }
    if (!n_d)
        return -FATIA_E_NOFIT;
    if ((r = fatia_mig_plan_pool(pool, n, demand, n_d, &res)) < 0)
        return r;
    for (size_t d = 0; d < n_d; d++)
        if (res.served[d] < demand[d].count) {
            fatia_mig_pool_result_release(&res);
            return -FATIA_E_NOFIT;
        }
    memset(ret, 0, sizeof(*ret));
    for (size_t i = 0; i < n; i++) {
        const struct pl_gpu *g = &st->gpus[idx[i]];
        if (res.changed[i]) {
            ret->ch[ret->n].gpu = idx[i];
            ret->ch[ret->n].layout = res.layouts[i];
            ret->n++;
        }
        /* victims: owners of instances the new layout drops */
        for (uint16_t s = 0; s < g->n_slices; s++) {
            int32_t o = g->slices[s].owner;
            if (o == PL_NO_OWNER || g->slices[s].mig == FATIA_NO_MIG ||
                kept_in(&res.layouts[i], &g->layout.v[g->slices[s].mig]))
                continue;
            if (o == INT32_MAX || !evict || add_victim(ret, o) < 0) {
                fatia_mig_pool_result_release(&res);
                return -FATIA_E_NOFIT;
            }
        }
    }
    /* with eviction, the planner counted instances held by lower-priority pods as free: those
     * the demand needs beyond the really free ones are taken from their pods too */
    for (size_t d = 0; evict && d < n_d; d++) {
        uint32_t free = 0;
        for (size_t i = 0; i < n; i++) {
            const struct pl_gpu *g = &st->gpus[idx[i]];
            for (unsigned j = 0; j < res.layouts[i].n; j++) {
                int32_t o = owner_of(g, &res.layouts[i].v[j]);
                free += strcmp(res.layouts[i].v[j].profile->name, demand[d].profile) == 0 &&
                        (o == PL_NO_OWNER || is_victim(ret, o));
            }
        }
        for (size_t i = 0; free < demand[d].count && i < n; i++) {
            const struct pl_gpu *g = &st->gpus[idx[i]];
            for (unsigned j = 0; free < demand[d].count && j < res.layouts[i].n; j++) {
                int32_t o = owner_of(g, &res.layouts[i].v[j]);
                if (strcmp(res.layouts[i].v[j].profile->name, demand[d].profile) ||
                    o == PL_NO_OWNER || is_victim(ret, o))
                    continue;
                if (o == INT32_MAX || st->binds.v[o].priority >= pod->priority ||
                    add_victim(ret, o) < 0) {
                    fatia_mig_pool_result_release(&res);
                    return -FATIA_E_NOFIT;
                }
                /* its other instances of this profile are freed too */
                free = 0;
                for (size_t i2 = 0; i2 < n; i2++)
                    for (unsigned j2 = 0; j2 < res.layouts[i2].n; j2++) {
                        int32_t o2 = owner_of(&st->gpus[idx[i2]], &res.layouts[i2].v[j2]);
                        free +=
                            strcmp(res.layouts[i2].v[j2].profile->name, demand[d].profile) == 0 &&
                            (o2 == PL_NO_OWNER || is_victim(ret, o2));
                    }
            }
        }
        if (free < demand[d].count) {
            fatia_mig_pool_result_release(&res);
            return -FATIA_E_NOFIT;
        }
    }
    fatia_mig_pool_result_release(&res);
    return ret->n || ret->n_victims ? 0 : -FATIA_E_NOFIT;
}

int fatia_pl_mig_try_node(struct fatia_place_state *st, const struct fatia_place_pod *pod,
                          uint32_t node, enum fatia_place_mig mode, struct pl_mig_try *ret)
{
    const struct pl_node *nd = &st->nodes[node];
    int r;

    if (mode == FATIA_PLACE_MIG_OFF)
        return -FATIA_E_NOFIT;
    r = try_once(st, pod, nd, false, ret);
    if (r == -FATIA_E_NOFIT && mode == FATIA_PLACE_MIG_EVICT)
        r = try_once(st, pod, nd, true, ret);
    return r;
}
