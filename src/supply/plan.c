/*
 * supply/plan.c: the supply planner (see plan.h). Pure: no I/O, no clock; the same code runs in
 * `fatia plan`, in fatiad's device controller and in the simulator.
 *
 * Per node:
 *   1. policies that select the node (a selector that does not read kubernetes.io/hostname is
 *      evaluated once per NodePool: a pool's nodes differ only in their host name);
 *   2. per GPU, the policy of each layer (gpuIndices, deviceFilter), two on one layer = error;
 *   3. the MIG layer: the layout (named config or mig-devices, placed by mig.c, once per policy
 *      and product, preferring what NVML shows exists) or, without a MIG policy on a GPU whose
 *      MIG mode NVML shows enabled, the instances that exist;
 *   4. base devices: the MIG instances, or the whole GPU; each under its resource name
 *      (nvidia.com/gpu; mixed strategy nvidia.com/mig-<profile>);
 *   5. the sharing layer over the base devices: time-slicing replicates the devices whose resource
 *      it names, MPS replicates whole GPUs, fractional makes the GPU one fraction pool;
 *   6. capacity and allocatable per resource.
 * Errors are reported once per (policy, message) however many GPUs repeat them, and make the
 * whole plan fail.
 *
 * Default memory cap of a time-slice replica (DESIGN §7): (device memory - replicas x context
 * reserve) / replicas, rounded down to a MiB; the reserve is the policy's contextReserve, else the
 * catalog's per product (768 MiB on the H200, docs/vgpu.md). MPS defaults are the device plugin's:
 * active threads 100 / replicas percent, pinned memory device memory / replicas (in MiB).
 */
#include "base/compat.h"

#include "supply/plan.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/vec.h"

#define MIB (UINT64_C(1) << 20)

const char *fatia_slice_kind_name(enum fatia_slice_kind k)
{
    static const char *const names[] = {"whole", "timeslice", "mps", "mig", "fraction"};
    return (size_t)k < FATIA_ARRAY_SIZE(names) ? names[k] : "?";
}

const char *fatia_isolation_name(enum fatia_isolation i)
{
    static const char *const names[] = {"none", "memory-capped", "mps", "hardware"};
    return (size_t)i < FATIA_ARRAY_SIZE(names) ? names[i] : "?";
}

const char *fatia_slice_state_name(enum fatia_slice_state s)
{
    static const char *const names[] = {"simulated", "applied", "planned"};
    return (size_t)s < FATIA_ARRAY_SIZE(names) ? names[s] : "?";
}

const char *fatia_mig_strategy_name(enum fatia_mig_strategy s)
{
    static const char *const names[] = {"none", "single", "mixed"};
    return (size_t)s < FATIA_ARRAY_SIZE(names) ? names[s] : "?";
}

void fatia_mig_resource_name(const char *profile, char *buf, size_t n)
{
    snprintf(buf, n, "nvidia.com/mig-%s", profile);
    for (char *p = buf; *p; p++)
        if (*p == '+')
            *p = '.';
}

int fatia_plan_fraction_id(uint32_t minor, uint32_t k, char *buf, size_t n)
{
    return snprintf(buf, n, "gpu-%" PRIu32 "-f%" PRIu32, minor, k);
}

/* The DRA driver's MIG device name: dots dropped, lowercased, [^a-z0-9-.] -> '-', '-' trimmed. */
static size_t dra_profile_name(const char *profile, char *buf, size_t n)
{
    size_t o = 0;

    for (const char *p = profile; *p && o + 1 < n; p++) {
        char c = *p;
        if (c == '.')
            continue;
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
            c = '-';
        buf[o++] = c;
    }
    while (o > 0 && buf[o - 1] == '-')
        o--;
    buf[o] = '\0';
    {
        size_t lead = 0;
        while (buf[lead] == '-')
            lead++;
        if (lead)
            memmove(buf, buf + lead, o - lead + 1);
    }
    return strlen(buf);
}

int fatia_supply_slice_id(uint32_t minor, const struct fatia_mig_placement *mig,
                          enum fatia_slice_kind kind, unsigned replica, char *buf, size_t n)
{
    int len;

    if (mig) {
        char pname[40];
        dra_profile_name(mig->profile->name, pname, sizeof(pname));
        len = snprintf(buf, n, "gpu-%" PRIu32 "-mig-%s-%d-%u", minor, pname, mig->profile->id,
                       mig->start);
    } else {
        len = snprintf(buf, n, "gpu-%" PRIu32, minor);
    }
    if (len < 0 || (size_t)len >= n)
        return len;
    if (kind == FATIA_SLICE_TIMESLICE)
        len += snprintf(buf + len, n - (size_t)len, "-ts%u", replica);
    else if (kind == FATIA_SLICE_MPS)
        len += snprintf(buf + len, n - (size_t)len, "-mps%u", replica);
    return len;
}

int fatia_plan_slice_id(const struct fatia_plan *plan, const struct fatia_slice *s, char *buf,
                        size_t n)
{
    const struct fatia_plan_gpu *g = &plan->nodes[s->node].gpus[s->gpu];

    return fatia_supply_slice_id(g->inv->minor,
                                 s->mig != FATIA_NO_MIG ? &g->layout->v[s->mig] : NULL,
                                 (enum fatia_slice_kind)s->kind, s->replica, buf, n);
}

/* ---- the plan object ---- */

void fatia_plan_free(struct fatia_plan *plan)
{
    if (!plan)
        return;
    fatia_free(plan->nodes);
    fatia_free(plan->gpu_store);
    fatia_free(plan->slices);
    fatia_free(plan->caps);
    for (size_t i = 0; i < plan->n_resources; i++)
        fatia_free(plan->resources[i]);
    fatia_free(plan->resources);
    fatia_strmap_release(&plan->resource_index);
    for (size_t i = 0; i < plan->n_layouts; i++)
        fatia_free(plan->layouts[i]);
    fatia_free(plan->layouts);
    fatia_free(plan);
}

static int intern(struct fatia_plan *plan, const char *name, uint16_t *ret)
{
    char *copy;

    if (fatia_strmap_has(&plan->resource_index, name)) {
        *ret = (uint16_t)(uintptr_t)fatia_strmap_get(&plan->resource_index, name);
        return 0;
    }
    if (plan->n_resources >= UINT16_MAX)
        return -FATIA_E_LIMIT;
    if (fatia_vec_reserve_raw((void **)&plan->resources, &plan->resources_cap,
                              plan->n_resources + 1, sizeof(*plan->resources)) < 0)
        return -ENOMEM;
    copy = fatia_strdup(name);
    if (!copy)
        return -ENOMEM;
    if (fatia_strmap_put(&plan->resource_index, copy, (void *)(uintptr_t)plan->n_resources) < 0) {
        fatia_free(copy);
        return -ENOMEM;
    }
    plan->resources[plan->n_resources] = copy;
    *ret = (uint16_t)plan->n_resources++;
    return 0;
}

static struct fatia_mig_layout *new_layout(struct fatia_plan *plan)
{
    struct fatia_mig_layout *l;

    if (fatia_vec_reserve_raw((void **)&plan->layouts, &plan->layouts_cap, plan->n_layouts + 1,
                              sizeof(*plan->layouts)) < 0)
        return NULL;
    l = fatia_calloc(1, sizeof(*l));
    if (l)
        plan->layouts[plan->n_layouts++] = l;
    return l;
}

/* ---- planning context ---- */

struct layout_entry {
    const struct fatia_policy *policy;
    const struct fatia_gpu_model *model;
    const struct fatia_mig_layout *layout;
    bool enabled;
    bool failed;
};

struct plan_ctx {
    struct fatia_plan *plan;
    const struct fatia_inventory *inv;
    const struct fatia_supply_config *cfg;
    struct fatia_diag *diag;
    struct fatia_strmap reported; /* "policy|message" keys already reported */
    char **reported_keys;
    size_t n_reported, reported_cap;
    FATIA_VEC(struct layout_entry) layouts;
    json_t **pool_labels; /* per pool (+1 for nodes without a pool): labels to match */
    int8_t *pool_match;   /* [pool][policy]: -1 unknown, 0, 1 */
    uint8_t **res_used;   /* [policy][resource] */
    const struct fatia_mig_layout *empty;
    uint16_t res_gpu;     /* "nvidia.com/gpu", interned */
    int16_t *share_cache; /* [policy][resource < 64]: index into p->res, -1 none, -2 unknown */

    struct profile_res {
        const struct fatia_mig_profile *profile;
        uint16_t res;
    } profile_res[64];

    size_t n_profile_res;
    int err; /* -ENOMEM seen */
};

static size_t pool_slot(const struct plan_ctx *c, const struct fatia_inv_node *n)
{
    return n->pool ? (size_t)(n->pool - c->cfg->pools) : c->cfg->n_pools;
}

/* Reports an error once per (policy, path, dedupe key); the key is the message itself when
 * dedupe is NULL. parent/key locate the field in the file. */
static void vreport(struct plan_ctx *c, const struct fatia_policy *p, const json_t *parent,
                    const char *key, const char *path, const char *dedupe, const char *fmt,
                    va_list ap) FATIA_PRINTF(7, 0);

static void vreport(struct plan_ctx *c, const struct fatia_policy *p, const json_t *parent,
                    const char *key, const char *path, const char *dedupe, const char *fmt,
                    va_list ap)
{
    char msg[768], *k;

    vsnprintf(msg, sizeof(msg), fmt, ap);
    if (asprintf(&k, "%s|%s|%s", p ? p->obj->id : "", path ? path : "", dedupe ? dedupe : msg) <
        0) {
        c->err = -ENOMEM;
        return;
    }
    if (fatia_strmap_has(&c->reported, k)) {
        fatia_free(k);
        return;
    }
    if (fatia_vec_reserve_raw((void **)&c->reported_keys, &c->reported_cap, c->n_reported + 1,
                              sizeof(char *)) < 0 ||
        fatia_strmap_put(&c->reported, k, NULL) < 0) {
        fatia_free(k);
        c->err = -ENOMEM;
        return;
    }
    c->reported_keys[c->n_reported++] = k;
    fatia_supply_error_at(c->diag, c->cfg->map, p ? p->obj : NULL, parent, key, 0, path, "%s", msg);
}

static void report(struct plan_ctx *c, const struct fatia_policy *p, const json_t *parent,
                   const char *key, const char *path, const char *fmt, ...) FATIA_PRINTF(6, 7);

static void report(struct plan_ctx *c, const struct fatia_policy *p, const json_t *parent,
                   const char *key, const char *path, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vreport(c, p, parent, key, path, NULL, fmt, ap);
    va_end(ap);
}

/* Like report, but once per dedupe key whatever the message says. */
static void report_once(struct plan_ctx *c, const struct fatia_policy *p, const json_t *parent,
                        const char *key, const char *path, const char *dedupe, const char *fmt, ...)
    FATIA_PRINTF(7, 8);

static void report_once(struct plan_ctx *c, const struct fatia_policy *p, const json_t *parent,
                        const char *key, const char *path, const char *dedupe, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vreport(c, p, parent, key, path, dedupe, fmt, ap);
    va_end(ap);
}

static json_t *spec_of(const struct fatia_policy *p)
{
    return json_object_get(p->obj->obj, "spec");
}

static json_t *base_labels(const struct fatia_inv_node *n)
{
    json_t *l = n->labels ? json_deep_copy(n->labels) : json_object();

    if (l && n->pool)
        json_object_set_new(l, "fatia.dev/node-pool", json_string(n->pool->name));
    return l;
}

static bool policy_matches(struct plan_ctx *c, size_t pi, const struct fatia_inv_node *n)
{
    const struct fatia_policy *p = &c->cfg->policies[pi];
    size_t slot = pool_slot(c, n);
    int8_t *m = &c->pool_match[slot * c->cfg->n_policies + pi];
    bool ok;

    if (!p->sel)
        return true;
    if (!p->sel_hostname) {
        if (*m < 0) {
            if (!c->pool_labels[slot])
                c->pool_labels[slot] = base_labels(n);
            if (!c->pool_labels[slot]) {
                c->err = -ENOMEM;
                return false;
            }
            *m = fatia_selector_matches(p->sel, c->pool_labels[slot]);
        }
        return *m;
    }
    {
        json_t *l = base_labels(n);
        if (!l) {
            c->err = -ENOMEM;
            return false;
        }
        json_object_set_new(l, "kubernetes.io/hostname", json_string(n->name));
        ok = fatia_selector_matches(p->sel, l);
        json_decref(l);
    }
    return ok;
}

static bool device_filter_ok(const struct fatia_policy *p, const struct fatia_inv_gpu *g)
{
    if (!p->n_device_filter)
        return true;
    for (size_t i = 0; i < p->n_device_filter; i++)
        if (p->device_filter[i] == g->pci_device_id)
            return true;
    return false;
}

static void conflict(struct plan_ctx *c, const struct fatia_policy *first,
                     const struct fatia_policy *second, const struct fatia_inv_node *n,
                     const struct fatia_inv_gpu *g, const char *layer)
{
    json_t *spec = spec_of(second);
    bool has_sel = json_object_get(spec, "nodeSelector") != NULL;
    char dedupe[400];

    /* once per pair of policies: the first GPU they both take is the example */
    snprintf(dedupe, sizeof(dedupe), "conflict|%s|%s", first->obj->id, layer);
    report_once(c, second, has_sel ? spec : second->obj->obj, has_sel ? "nodeSelector" : "spec",
                has_sel ? "spec.nodeSelector" : "spec", dedupe,
                "GPU %" PRIu32 " of node %s is also configured by %s: one GPU takes one %s "
                "policy (overlapping selectors)",
                g->index, n->name, first->obj->id, layer);
}

/* The MIG layout a policy gives a GPU, cached per (policy, product) when nothing exists on the
 * GPU that the placement should keep. */
static int mig_layout(struct plan_ctx *c, const struct fatia_policy *p,
                      const struct fatia_inv_gpu *g, const struct fatia_mig_layout *existing,
                      const struct fatia_mig_layout **ret, bool *ret_enabled)
{
    const struct fatia_gpu_model *m = g->model;
    const struct fatia_mig_geom *geom = m->mig;
    json_t *spec = spec_of(p), *mig = json_object_get(spec, "mig");
    uint8_t counts[FATIA_MIG_MAX_PROFILES] = {0};
    struct fatia_mig_layout *l;
    bool enabled = true, cacheable = !existing || existing->n == 0;
    const char *field = p->mig_config ? "config" : "mig-devices";
    char why[512], path[96];
    int r;

    if (cacheable)
        for (size_t i = 0; i < c->layouts.n; i++)
            if (c->layouts.v[i].policy == p && c->layouts.v[i].model == m) {
                if (c->layouts.v[i].failed)
                    return -FATIA_E_INVALID;
                *ret = c->layouts.v[i].layout;
                *ret_enabled = c->layouts.v[i].enabled;
                return 0;
            }
    snprintf(path, sizeof(path), "spec.mig.%s", field);
    if (p->mig_config) {
        r = fatia_mig_named_config(geom, m->product, p->mig_config, counts, &enabled, why,
                                   sizeof(why));
        if (r < 0) {
            report(c, p, mig, field, path, "%s", why);
            goto failed;
        }
    } else {
        const char *k;
        json_t *v;
        if (!geom) {
            report(c, p, mig, field, path, "%s does not support MIG", m->product);
            goto failed;
        }
        json_object_foreach(p->mig_devices, k, v)
        {
            const struct fatia_mig_profile *prof = fatia_mig_geom_find(geom, k);
            char ppath[96];
            if (!prof) {
                size_t len = 0;
                char list[400];
                list[0] = '\0';
                for (size_t i = 0; i < geom->n_profiles && len < sizeof(list); i++)
                    len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "",
                                            geom->profiles[i].name);
                snprintf(ppath, sizeof(ppath), "spec.mig.mig-devices[%s]", k);
                report(c, p, p->mig_devices, k, ppath,
                       "%s has no MIG profile \"%s\" (profiles: %s)", m->product, k, list);
                goto failed;
            }
            counts[prof - geom->profiles] = (uint8_t)json_integer_value(v);
        }
    }
    l = new_layout(c->plan);
    if (!l)
        return -ENOMEM;
    if (enabled) {
        r = fatia_mig_place(geom, m->product, counts, existing, l, why, sizeof(why));
        if (r < 0) {
            report(c, p, mig, field, path, "%s", why);
            goto failed;
        }
    }
    if (cacheable &&
        FATIA_VEC_PUSH(&c->layouts, ((struct layout_entry){p, m, l, enabled, false})) < 0)
        return -ENOMEM;
    *ret = l;
    *ret_enabled = enabled;
    return 0;
failed:
    if (cacheable &&
        FATIA_VEC_PUSH(&c->layouts, ((struct layout_entry){p, m, NULL, false, true})) < 0)
        return -ENOMEM;
    return -FATIA_E_INVALID;
}

/* Per-node resource counts, merged into plan->caps at the end of the node. */
struct node_caps {
    size_t n;
    struct fatia_plan_cap v[64];
};

static int add_cap(struct node_caps *nc, uint16_t res, int64_t amount, bool exists)
{
    size_t i;

    for (i = 0; i < nc->n; i++)
        if (nc->v[i].resource == res)
            break;
    if (i == nc->n) {
        if (nc->n == FATIA_ARRAY_SIZE(nc->v))
            return -FATIA_E_LIMIT;
        nc->v[nc->n++] = (struct fatia_plan_cap){res, 0, 0};
    }
    nc->v[i].capacity += amount;
    if (exists)
        nc->v[i].allocatable += amount;
    return 0;
}

static int push_slice(struct fatia_plan *plan, const struct fatia_slice *s)
{
    if (plan->n_slices == plan->slices_cap &&
        fatia_vec_reserve_raw((void **)&plan->slices, &plan->slices_cap, plan->n_slices + 1,
                              sizeof(*plan->slices)) < 0)
        return -ENOMEM;
    plan->slices[plan->n_slices++] = *s;
    return 0;
}

static const struct fatia_share_res *find_res(const struct fatia_policy *p, const char *name,
                                              size_t *ret_i)
{
    for (size_t i = 0; p && i < p->n_res; i++)
        if (!strcmp(p->res[i].name, name)) {
            *ret_i = i;
            return &p->res[i];
        }
    return NULL;
}

static void human_bytes(uint64_t b, char *buf, size_t n)
{
    if (b % (UINT64_C(1) << 30) == 0)
        snprintf(buf, n, "%" PRIu64 "Gi", b >> 30);
    else
        snprintf(buf, n, "%" PRIu64 "Mi", b >> 20);
}

/* find_res by interned resource, cached per (policy, resource): the planner asks it for every
 * device of the fleet. */
#define SHARE_CACHE_RES 64

static const struct fatia_share_res *share_res(struct plan_ctx *c, const struct fatia_policy *p,
                                               uint16_t res, size_t *ret_i)
{
    size_t pi = (size_t)(p - c->cfg->policies);
    int16_t *slot = res < SHARE_CACHE_RES ? &c->share_cache[pi * SHARE_CACHE_RES + res] : NULL;
    size_t i;

    if (slot && *slot != -2) {
        *ret_i = (size_t)*slot;
        return *slot >= 0 ? &p->res[*slot] : NULL;
    }
    if (!find_res(p, c->plan->resources[res], &i)) {
        if (slot)
            *slot = -1;
        return NULL;
    }
    if (slot)
        *slot = (int16_t)i;
    *ret_i = i;
    return &p->res[i];
}

/* The resource a MIG profile is counted under in the mixed strategy, interned once. */
static int profile_res(struct plan_ctx *c, const struct fatia_mig_profile *p, uint16_t *ret)
{
    char name[96];
    int r;

    for (size_t i = 0; i < c->n_profile_res; i++)
        if (c->profile_res[i].profile == p) {
            *ret = c->profile_res[i].res;
            return 0;
        }
    fatia_mig_resource_name(p->name, name, sizeof(name));
    r = intern(c->plan, name, ret);
    if (r == 0 && c->n_profile_res < FATIA_ARRAY_SIZE(c->profile_res))
        c->profile_res[c->n_profile_res++] = (struct profile_res){p, *ret};
    return r;
}

/* One base device (a whole GPU or one MIG instance) and its sharing. */
struct base_dev {
    uint8_t mig;  /* FATIA_NO_MIG or layout index */
    uint16_t res; /* the resource it is counted under (interned) */
    uint64_t memory;
    uint32_t sms;
    const char *what; /* "NVIDIA H200" or "1g.18gb" for messages */
};

static int emit_device(struct plan_ctx *c, uint32_t ni, uint16_t gi, struct fatia_plan_gpu *pg,
                       const struct base_dev *d, struct node_caps *nc)
{
    struct fatia_plan *plan = c->plan;
    const struct fatia_policy *sp = pg->share_policy;
    const struct fatia_share_res *sr = NULL;
    struct fatia_slice s = {0};
    /* a GPU out of service (inventory.h): counted in capacity, not in allocatable, no slices */
    bool out = pg->inv->unhealthy;
    bool exists = pg->state != FATIA_STATE_PLANNED && !out;
    size_t ri = 0;
    uint16_t res;
    int r;

    s.node = ni;
    s.gpu = gi;
    s.mig = d->mig;
    s.state = pg->state;
    s.thread_percentage = 100;
    s.multiprocessors = d->sms;
    s.memory_bytes = d->memory;
    if (sp && sp->share != FATIA_SHARE_FRACTIONAL)
        sr = share_res(c, sp, d->res, &ri);
    if (sr)
        c->res_used[sp - c->cfg->policies][ri] = 1;
    if (!sr || sp->share == FATIA_SHARE_NONE) {
        if (sp && sp->share == FATIA_SHARE_FRACTIONAL) {
            uint16_t milli, mem;
            s.kind = FATIA_SLICE_FRACTION;
            s.isolation = FATIA_ISO_MEMORY_CAPPED;
            if ((r = intern(plan, "fatia.dev/gpu-milli", &milli)) < 0 ||
                (r = intern(plan, "fatia.dev/gpu-memory", &mem)) < 0)
                return r;
            s.resource = milli;
            if ((r = add_cap(nc, milli, 1000, exists)) < 0 ||
                (r = add_cap(nc, mem, (int64_t)d->memory, exists)) < 0)
                return r;
            return out ? 0 : push_slice(plan, &s);
        }
        s.kind = d->mig == FATIA_NO_MIG ? FATIA_SLICE_WHOLE : FATIA_SLICE_MIG;
        s.isolation = FATIA_ISO_HARDWARE;
        res = d->res;
        s.resource = res;
        if ((r = add_cap(nc, res, 1, exists)) < 0)
            return r;
        return out ? 0 : push_slice(plan, &s);
    }
    /* replicated: time-slicing or MPS */
    {
        json_t *spec = spec_of(sp);
        const char *member = sp->share == FATIA_SHARE_MPS ? "mps" : "timeSlicing";
        json_t *resj =
            json_array_get(json_object_get(json_object_get(spec, member), "resources"), ri);
        uint32_t n = sr->replicas;
        uint64_t reserve = pg->context_reserve, cap;
        char path[96], b1[32], b2[32];

        snprintf(path, sizeof(path), "spec.%s.resources[%zu].replicas", member, ri);
        if ((r = intern(plan, sr->rename ? sr->rename : sr->name, &res)) < 0)
            return r;
        s.resource = res;
        if (sp->share == FATIA_SHARE_MPS) {
            int max = pg->inv->model->mps_max_clients;
            if ((int)n > max) {
                report(c, sp, resj, "replicas", path,
                       "%" PRIu32 " MPS clients exceed the %d that %s allows per device", n, max,
                       pg->inv->model->product);
                return 0;
            }
            s.kind = FATIA_SLICE_MPS;
            s.isolation = FATIA_ISO_MPS;
            s.thread_percentage =
                (uint16_t)(sp->thread_percentage ? sp->thread_percentage : 100 / n);
            s.multiprocessors = d->sms * s.thread_percentage / 100;
            cap = sp->pinned_memory ? sp->pinned_memory : d->memory / n / MIB * MIB;
            if (cap > d->memory) {
                human_bytes(cap, b1, sizeof(b1));
                report(c, sp, json_object_get(spec, "mps"), "pinnedMemoryLimit",
                       "spec.mps.pinnedMemoryLimit", "%s exceeds the %s of %s", b1, d->what,
                       "device memory");
                return 0;
            }
        } else {
            s.kind = FATIA_SLICE_TIMESLICE;
            s.isolation = FATIA_ISO_MEMORY_CAPPED;
            if ((uint64_t)n * reserve >= d->memory) {
                human_bytes(reserve, b1, sizeof(b1));
                report(c, sp, resj, "replicas", path,
                       "%" PRIu32 " replicas of %s leave no memory: each CUDA context holds %s", n,
                       d->what, b1);
                return 0;
            }
            cap = sp->memory_per_replica ? sp->memory_per_replica
                                         : (d->memory - (uint64_t)n * reserve) / n / MIB * MIB;
            if ((uint64_t)n * (cap + reserve) > d->memory) {
                human_bytes(cap, b1, sizeof(b1));
                human_bytes(reserve, b2, sizeof(b2));
                report(c, sp, json_object_get(spec, "timeSlicing"), "memoryPerReplica",
                       "spec.timeSlicing.memoryPerReplica",
                       "%" PRIu32 " replicas x (%s + %s context reserve) exceed the memory of %s",
                       n, b1, b2, d->what);
                return 0;
            }
        }
        s.memory_bytes = cap;
        if ((r = add_cap(nc, res, n, exists)) < 0)
            return r;
        for (uint32_t k = 0; k < n && !out; k++) {
            s.replica = (uint16_t)k;
            if ((r = push_slice(plan, &s)) < 0)
                return r;
        }
        pg->replicas = n;
    }
    return 0;
}

static int plan_gpu(struct plan_ctx *c, uint32_t ni, uint16_t gi, struct node_caps *nc)
{
    const struct fatia_inv_node *n = &c->inv->nodes[ni];
    const struct fatia_inv_gpu *g = &n->gpus[gi];
    struct fatia_plan_gpu *pg = &c->plan->nodes[ni].gpus[gi];
    struct fatia_mig_layout *existing = NULL;
    bool sim = c->inv->source == FATIA_INV_SIM && !n->published; /* a node role's GPUs are real */
    int r;

    pg->inv = g;
    pg->replicas = 1;
    pg->layout = c->empty;
    pg->first_slice = (uint32_t)c->plan->n_slices;
    /* policies of each layer */
    for (size_t pi = 0; pi < c->cfg->n_policies; pi++) {
        const struct fatia_policy *p = &c->cfg->policies[pi];
        if (gi >= 64 || !(p->gpu_mask >> gi & 1) || !device_filter_ok(p, g) ||
            !policy_matches(c, pi, n))
            continue;
        if (p->mig_strategy != FATIA_MIG_STRATEGY_NONE) {
            if (pg->mig_policy)
                conflict(c, pg->mig_policy, p, n, g, "MIG");
            else
                pg->mig_policy = p;
        }
        if (p->share != FATIA_SHARE_NONE) {
            if (pg->share_policy)
                conflict(c, pg->share_policy, p, n, g, "sharing");
            else
                pg->share_policy = p;
        }
    }
    if (c->err)
        return c->err;
    pg->context_reserve = pg->share_policy && pg->share_policy->has_context_reserve
                              ? pg->share_policy->context_reserve
                              : g->model->context_reserve;
    /* what exists (NVML) */
    if (g->n_instances && g->model->mig) {
        existing = new_layout(c->plan);
        if (!existing)
            return -ENOMEM;
        for (unsigned i = 0; i < g->n_instances && i < FATIA_MIG_MAX_INSTANCES; i++) {
            existing->v[existing->n].profile = g->instances[i].profile;
            existing->v[existing->n++].start = g->instances[i].start;
        }
        fatia_mig_layout_sort(existing);
    }
    /* the MIG layer */
    if (pg->mig_policy) {
        const struct fatia_mig_layout *l = NULL;
        bool enabled = false;
        r = mig_layout(c, pg->mig_policy, g, existing, &l, &enabled);
        if (r == -ENOMEM)
            return r;
        if (r < 0)
            return 0; /* reported */
        pg->mig_enabled = enabled;
        pg->strategy = enabled ? pg->mig_policy->mig_strategy : FATIA_MIG_STRATEGY_NONE;
        pg->layout = enabled ? l : c->empty;
    } else if (g->mig_mode == FATIA_MIG_MODE_ENABLED) {
        /* no policy: keep what the GPU has */
        pg->mig_enabled = true;
        pg->strategy = FATIA_MIG_STRATEGY_MIXED;
        pg->layout = existing ? existing : c->empty;
    }
    if (sim)
        pg->state = FATIA_STATE_SIMULATED;
    else if (pg->mig_enabled)
        pg->state = g->mig_mode == FATIA_MIG_MODE_ENABLED &&
                            fatia_mig_layout_equal(pg->layout, existing ? existing : c->empty)
                        ? FATIA_STATE_APPLIED
                        : FATIA_STATE_PLANNED;
    else
        pg->state =
            g->mig_mode == FATIA_MIG_MODE_ENABLED ? FATIA_STATE_PLANNED : FATIA_STATE_APPLIED;
    /* MPS and fractions share whole GPUs only */
    if (pg->mig_enabled && pg->share_policy &&
        (pg->share_policy->share == FATIA_SHARE_MPS ||
         pg->share_policy->share == FATIA_SHARE_FRACTIONAL)) {
        const struct fatia_policy *sp = pg->share_policy;
        bool mps = sp->share == FATIA_SHARE_MPS;
        char dedupe[400];
        snprintf(dedupe, sizeof(dedupe), "on-mig|%s",
                 pg->mig_policy ? pg->mig_policy->obj->id : "nvml");
        report_once(c, sp, spec_of(sp), mps ? "mps" : "fractional",
                    mps ? "spec.mps" : "spec.fractional", dedupe,
                    "%s: GPU %u of node %s is cut by MIG (%s)",
                    mps ? "MPS on MIG is not supported (the device plugin rejects it)"
                        : "fractional sharing needs whole GPUs",
                    gi, n->name, pg->mig_policy ? pg->mig_policy->obj->id : "its MIG mode is on");
        pg->n_slices = 0;
        return 0;
    }
    /* base devices and their sharing */
    if (pg->mig_enabled) {
        for (unsigned i = 0; i < pg->layout->n; i++) {
            const struct fatia_mig_profile *prof = pg->layout->v[i].profile;
            struct base_dev d = {(uint8_t)i, c->res_gpu, prof->memory_bytes, prof->multiprocessors,
                                 prof->name};
            if (pg->strategy != FATIA_MIG_STRATEGY_SINGLE && (r = profile_res(c, prof, &d.res)) < 0)
                return r;
            if ((r = emit_device(c, ni, gi, pg, &d, nc)) < 0)
                return r;
        }
    } else {
        struct base_dev d = {FATIA_NO_MIG, c->res_gpu, g->model->memory_bytes,
                             g->model->multiprocessors, g->model->product};
        if ((r = emit_device(c, ni, gi, pg, &d, nc)) < 0)
            return r;
    }
    pg->n_slices = (uint32_t)c->plan->n_slices - pg->first_slice;
    return 0;
}

/* The device plugin's single strategy: every GPU of the node MIG-enabled, one profile type. */
static void check_single(struct plan_ctx *c, uint32_t ni)
{
    const struct fatia_plan_node *pn = &c->plan->nodes[ni];
    const struct fatia_policy *p = NULL;
    const struct fatia_mig_profile *type = NULL;
    const char *node = c->inv->nodes[ni].name;
    bool mixed = false;

    for (uint32_t g = 0; g < pn->inv->n_gpus; g++) {
        if (pn->gpus[g].strategy == FATIA_MIG_STRATEGY_SINGLE && !p)
            p = pn->gpus[g].mig_policy;
        mixed |= pn->gpus[g].strategy == FATIA_MIG_STRATEGY_MIXED && pn->gpus[g].mig_policy;
    }
    if (!p)
        return;
    for (uint32_t g = 0; g < pn->inv->n_gpus; g++) {
        const struct fatia_plan_gpu *pg = &pn->gpus[g];
        json_t *mig = json_object_get(spec_of(p), "mig");
        if (mixed && pg->strategy == FATIA_MIG_STRATEGY_MIXED) {
            report(c, p, mig, "strategy", "spec.mig.strategy",
                   "node %s mixes the single and mixed strategies (GPU %" PRIu32 " is mixed, "
                   "by %s): a node has one MIG strategy",
                   node, g, pg->mig_policy ? pg->mig_policy->obj->id : "its MIG mode");
            return;
        }
        if (!pg->mig_enabled || pg->layout->n == 0) {
            report(c, p, mig, "strategy", "spec.mig.strategy",
                   "the single strategy needs every GPU of node %s MIG-enabled with MIG devices "
                   "(GPU %" PRIu32 " is not)",
                   node, g);
            return;
        }
        for (unsigned i = 0; i < pg->layout->n; i++) {
            const struct fatia_mig_profile *t = pg->layout->v[i].profile;
            if (type && strcmp(type->name, t->name)) {
                report(c, p, mig, "strategy", "spec.mig.strategy",
                       "the single strategy needs one MIG profile type on node %s (has %s and %s): "
                       "use mixed",
                       node, type->name, t->name);
                return;
            }
            type = t;
        }
    }
}

static int check_unused_resources(struct plan_ctx *c)
{
    for (size_t pi = 0; pi < c->cfg->n_policies; pi++) {
        const struct fatia_policy *p = &c->cfg->policies[pi];
        const char *member = p->share == FATIA_SHARE_MPS ? "mps" : "timeSlicing";
        bool any_gpu = false;
        if (p->share != FATIA_SHARE_TIMESLICE && p->share != FATIA_SHARE_MPS)
            continue;
        for (size_t i = 0; i < p->n_res; i++)
            any_gpu |= c->res_used[pi][i];
        for (size_t i = 0; any_gpu && i < p->n_res; i++) {
            json_t *arr = json_object_get(json_object_get(spec_of(p), member), "resources");
            char path[96];
            if (c->res_used[pi][i])
                continue;
            snprintf(path, sizeof(path), "spec.%s.resources[%zu].name", member, i);
            report(c, p, json_array_get(arr, i), "name", path,
                   "no GPU this policy selects has a device counted as %s", p->res[i].name);
        }
    }
    return c->err;
}

int fatia_supply_plan(const struct fatia_inventory *inv, const struct fatia_supply_config *cfg,
                      struct fatia_diag *diag, struct fatia_plan **ret)
{
    struct plan_ctx c;
    struct fatia_plan *plan;
    size_t n_gpus = 0, gpus_done = 0, errors = diag->n_errors;
    int r = -ENOMEM;

    memset(&c, 0, sizeof(c));
    plan = fatia_calloc(1, sizeof(*plan));
    if (!plan)
        return -ENOMEM;
    fatia_strmap_init(&plan->resource_index);
    fatia_strmap_init(&c.reported);
    plan->inv = inv;
    plan->cfg = cfg;
    c.plan = plan;
    c.inv = inv;
    c.cfg = cfg;
    c.diag = diag;
    for (size_t i = 0; i < inv->n_nodes; i++)
        n_gpus += inv->nodes[i].n_gpus;
    plan->nodes = fatia_calloc(inv->n_nodes + 1, sizeof(*plan->nodes));
    plan->gpu_store = fatia_calloc(n_gpus + 1, sizeof(*plan->gpu_store));
    c.pool_labels = fatia_calloc(cfg->n_pools + 1, sizeof(*c.pool_labels));
    c.pool_match = fatia_malloc((cfg->n_pools + 1) * (cfg->n_policies + 1));
    c.res_used = fatia_calloc(cfg->n_policies + 1, sizeof(*c.res_used));
    if (!plan->nodes || !plan->gpu_store || !c.pool_labels || !c.pool_match || !c.res_used)
        goto out;
    memset(c.pool_match, -1, (cfg->n_pools + 1) * (cfg->n_policies + 1));
    for (size_t pi = 0; pi < cfg->n_policies; pi++) {
        c.res_used[pi] = fatia_calloc(cfg->policies[pi].n_res + 1, 1);
        if (!c.res_used[pi])
            goto out;
    }
    c.empty = new_layout(plan);
    if (!c.empty)
        goto out;
    c.share_cache = fatia_malloc((cfg->n_policies + 1) * SHARE_CACHE_RES * sizeof(int16_t));
    if (!c.share_cache)
        goto out;
    for (size_t i = 0; i < (cfg->n_policies + 1) * SHARE_CACHE_RES; i++)
        c.share_cache[i] = -2;
    r = intern(plan, "nvidia.com/gpu", &c.res_gpu);
    if (r < 0)
        goto out;
    r = -ENOMEM;
    /* a first guess: one slice per GPU, several per shared one */
    if (fatia_vec_reserve_raw((void **)&plan->slices, &plan->slices_cap, n_gpus * 2 + 16,
                              sizeof(*plan->slices)) < 0)
        goto out;
    for (uint32_t ni = 0; ni < inv->n_nodes; ni++) {
        struct fatia_plan_node *pn = &plan->nodes[ni];
        struct node_caps nc = {0};
        pn->inv = &inv->nodes[ni];
        pn->gpus = &plan->gpu_store[gpus_done];
        gpus_done += pn->inv->n_gpus;
        pn->first_slice = (uint32_t)plan->n_slices;
        for (uint16_t gi = 0; gi < pn->inv->n_gpus; gi++) {
            r = plan_gpu(&c, ni, gi, &nc);
            if (r < 0)
                goto out;
        }
        check_single(&c, ni);
        pn->n_slices = (uint32_t)plan->n_slices - pn->first_slice;
        if (fatia_vec_reserve_raw((void **)&plan->caps, &plan->caps_cap, plan->n_caps + nc.n,
                                  sizeof(*plan->caps)) < 0) {
            r = -ENOMEM;
            goto out;
        }
        pn->first_cap = (uint32_t)plan->n_caps;
        pn->n_caps = (uint32_t)nc.n;
        if (nc.n)
            memcpy(plan->caps + plan->n_caps, nc.v, nc.n * sizeof(nc.v[0]));
        plan->n_caps += nc.n;
        if (c.err) {
            r = c.err;
            goto out;
        }
    }
    plan->n_nodes = inv->n_nodes;
    r = check_unused_resources(&c);
    if (r < 0)
        goto out;
    if (diag->n_errors > errors) {
        r = -FATIA_E_INVALID;
        goto out;
    }
    *ret = plan;
    plan = NULL;
    r = 0;
out:
    fatia_plan_free(plan);
    for (size_t i = 0; c.pool_labels && i <= cfg->n_pools; i++)
        json_decref(c.pool_labels[i]);
    fatia_free(c.pool_labels);
    fatia_free(c.pool_match);
    fatia_free(c.share_cache);
    for (size_t pi = 0; c.res_used && pi < cfg->n_policies; pi++)
        fatia_free(c.res_used[pi]);
    fatia_free(c.res_used);
    for (size_t i = 0; i < c.n_reported; i++)
        fatia_free(c.reported_keys[i]);
    fatia_free(c.reported_keys);
    fatia_strmap_release(&c.reported);
    FATIA_VEC_RELEASE(&c.layouts);
    return r;
}
