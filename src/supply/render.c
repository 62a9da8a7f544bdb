/*
 * supply/render.c: a plan as JSON: the `fatia plan -o json` document, node labels as GPU Feature
 * Discovery sets them, slices with DRA-typed attributes and capacity, and resource.k8s.io/v1
 * ResourceSlices. Pure.
 *
 * Attributes of whole GPUs and MIG devices are exactly the NVIDIA DRA driver's
 * (cmd/gpu-kubelet-plugin/deviceinfo.go, mig.go; reference nvidia-slicing.md §6.2): type, uuid,
 * productName, brand, architecture, cudaComputeCapability, driverVersion, cudaDriverVersion
 * (versions in semver as the driver's Masterminds parse prints them: "9.0" -> "9.0.0",
 * "580.159.04" -> "580.159.4"), resource.kubernetes.io/pciBusID and pcieRoot, and for MIG
 * parentUUID and profile; capacity memory (and for MIG multiprocessors, the engines and
 * memorySlice<i>). Attributes the machine does not tell (driver versions of a simulated fleet)
 * are left out rather than invented. fatia adds fatia.dev/nvlinkIsland to every device, to a MIG
 * device that exists its NVML GPU and compute instance ids (fatia.dev/gpuInstance,
 * fatia.dev/computeInstance: the node's CDI spec names its /dev/nvidia-caps nodes by them, where
 * the DRA driver's kubelet plugin asks NVML on the node), and for
 * its own kinds (time-slice replicas, MPS shares, fraction pools) uses type "timeslice", "mps",
 * "fraction" so that a DeviceClass selecting type == 'gpu' never hands out a replica as a GPU.
 *
 * GFD labels follow the device plugin's labelers (reference nvidia-slicing.md §2.4): product with
 * "-SHARED" when shared and not renamed, "<model>-MIG-<profile>" in the single strategy, memory in
 * MiB, replicas, sharing-strategy, family, compute capability, mig.strategy, and per profile
 * nvidia.com/mig-<profile>.* in the mixed strategy. Node-level labels describe the node's GPUs
 * when they are cut alike; where GPUs of one node differ, fatia.dev/sharing-strategy says "mixed"
 * and the per-strategy GFD labels are left out.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "model/quantity.h"
#include "supply/plan.h"

void fatia_gfd_sanitize(const char *in, char *buf, size_t n)
{
    size_t o = 0;
    bool space = false;

    for (const char *p = in; *p && o + 1 < n; p++) {
        char c = *p;
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_' || c == '.';
        if (c == ' ') {
            space = o > 0;
            continue;
        }
        if (!ok)
            continue;
        if (space && o + 2 < n)
            buf[o++] = '-';
        space = false;
        buf[o++] = c;
    }
    /* a label value is at most 63 characters and ends alphanumeric */
    if (o > 63)
        o = 63;
    while (o > 0 &&
           !((buf[o - 1] >= 'A' && buf[o - 1] <= 'Z') || (buf[o - 1] >= 'a' && buf[o - 1] <= 'z') ||
             (buf[o - 1] >= '0' && buf[o - 1] <= '9')))
        o--;
    buf[o] = '\0';
}

static json_t *qjson(int64_t v, enum fatia_qformat f)
{
    struct fatia_quantity q = fatia_quantity_from_int(v, f);
    char buf[64];

    fatia_quantity_format(&q, buf, sizeof(buf));
    return json_string(buf);
}

static json_t *cap_value(int64_t v, enum fatia_qformat f)
{
    return json_pack("{s:o}", "value", qjson(v, f));
}

/* "580.159.04" -> "580.159.4", "13.0" -> "13.0.0"; false when it is no dotted number. */
static bool semver(const char *in, char *buf, size_t n)
{
    unsigned long part[3] = {0, 0, 0};
    int k = 0;
    const char *p = in;

    if (!in || !*in)
        return false;
    while (*p && k < 3) {
        char *end;
        if (*p < '0' || *p > '9')
            return false;
        part[k++] = strtoul(p, &end, 10);
        p = end;
        if (*p == '.')
            p++;
        else if (*p)
            return false;
    }
    if (*p)
        return false;
    snprintf(buf, n, "%lu.%lu.%lu", part[0], part[1], part[2]);
    return true;
}

static void set_str(json_t *attrs, const char *key, const char *v)
{
    if (v)
        json_object_set_new(attrs, key, json_pack("{s:s}", "string", v));
}

static void set_version(json_t *attrs, const char *key, const char *v)
{
    char buf[64];

    if (semver(v, buf, sizeof(buf)))
        json_object_set_new(attrs, key, json_pack("{s:s}", "version", buf));
}

static void set_int(json_t *attrs, const char *key, int64_t v)
{
    json_object_set_new(attrs, key, json_pack("{s:I}", "int", (json_int_t)v));
}

static const struct fatia_plan_gpu *slice_gpu(const struct fatia_plan *plan,
                                              const struct fatia_slice *s)
{
    return &plan->nodes[s->node].gpus[s->gpu];
}

/* The NVML instance of a MIG slice that exists as planned (its UUID known), or NULL. */
static const struct fatia_inv_mig_instance *mig_instance(const struct fatia_plan *plan,
                                                         const struct fatia_slice *s)
{
    const struct fatia_plan_gpu *g = slice_gpu(plan, s);
    const struct fatia_mig_placement *pl = &g->layout->v[s->mig];

    if (g->state == FATIA_STATE_SIMULATED)
        return NULL;
    for (unsigned i = 0; i < g->inv->n_instances; i++)
        if (g->inv->instances[i].profile == pl->profile &&
            g->inv->instances[i].start == pl->start && g->inv->instances[i].uuid[0])
            return &g->inv->instances[i];
    return NULL;
}

/* A MIG device's UUID: NVML's when it exists as planned, a deterministic one when simulated. */
static bool mig_uuid(const struct fatia_plan *plan, const struct fatia_slice *s, char *buf,
                     size_t n)
{
    const struct fatia_plan_gpu *g = slice_gpu(plan, s);
    const struct fatia_mig_placement *pl = &g->layout->v[s->mig];
    const struct fatia_inv_mig_instance *mi;

    if (g->state == FATIA_STATE_SIMULATED) {
        char key[320];
        snprintf(key, sizeof(key), "fatia-sim/%s/%" PRIu32 "/%d/%u", plan->nodes[s->node].inv->name,
                 g->inv->index, pl->profile->id, pl->start);
        fatia_inventory_sim_uuid("MIG", key, buf, n);
        return true;
    }
    mi = mig_instance(plan, s);
    if (mi)
        snprintf(buf, n, "%s", mi->uuid);
    return mi != NULL;
}

json_t *fatia_plan_slice_attributes(const struct fatia_plan *plan, const struct fatia_slice *s)
{
    const struct fatia_plan_gpu *g = slice_gpu(plan, s);
    const struct fatia_inv_node *n = plan->nodes[s->node].inv;
    const struct fatia_gpu_model *m = g->inv->model;
    const struct fatia_inv_mig_instance *mi;
    json_t *a = json_object();
    char cc[16], uuid[64];

    if (!a)
        return NULL;
    switch (s->kind) {
    case FATIA_SLICE_WHOLE:
        set_str(a, "type", "gpu");
        break;
    case FATIA_SLICE_MIG:
        set_str(a, "type", "mig");
        break;
    default:
        set_str(a, "type", fatia_slice_kind_name(s->kind));
        break;
    }
    if (s->mig != FATIA_NO_MIG) {
        if (mig_uuid(plan, s, uuid, sizeof(uuid)))
            set_str(a, "uuid", uuid);
        set_str(a, "parentUUID", g->inv->uuid);
        set_str(a, "profile", g->layout->v[s->mig].profile->name);
        /* its GPU and compute instance ids (NVML's), for the node's CDI spec: the
         * /dev/nvidia-caps nodes of gpu<minor>/mig/gi<g>/ci<c> (agent/cdi.c) */
        mi = mig_instance(plan, s);
        if (mi) {
            set_int(a, "fatia.dev/gpuInstance", mi->gi_id);
            set_int(a, "fatia.dev/computeInstance", mi->ci_id);
        }
    } else {
        set_str(a, "uuid", g->inv->uuid);
    }
    set_str(a, "productName", m->product);
    set_str(a, "brand", m->brand);
    set_str(a, "architecture", m->architecture);
    snprintf(cc, sizeof(cc), "%u.%u", m->cc_major, m->cc_minor);
    if (m->cc_major)
        set_version(a, "cudaComputeCapability", cc);
    set_version(a, "driverVersion", n->driver_version);
    set_version(a, "cudaDriverVersion", n->cuda_driver_version);
    set_str(a, "resource.kubernetes.io/pciBusID", g->inv->pci_bus_id);
    if (g->inv->pcie_root[0])
        set_str(a, "resource.kubernetes.io/pcieRoot", g->inv->pcie_root);
    set_int(a, "fatia.dev/nvlinkIsland", g->inv->island);
    if (s->kind == FATIA_SLICE_TIMESLICE || s->kind == FATIA_SLICE_MPS)
        set_int(a, "fatia.dev/replica", s->replica);
    return a;
}

json_t *fatia_plan_slice_capacity(const struct fatia_plan *plan, const struct fatia_slice *s)
{
    const struct fatia_plan_gpu *g = slice_gpu(plan, s);
    json_t *c = json_object();

    if (!c)
        return NULL;
    if (s->mig != FATIA_NO_MIG) {
        const struct fatia_mig_placement *pl = &g->layout->v[s->mig];
        const struct fatia_mig_profile *p = pl->profile;
        json_object_set_new(c, "multiprocessors", cap_value(s->multiprocessors, FATIA_Q_BINARY_SI));
        json_object_set_new(c, "copyEngines", cap_value(p->copy_engines, FATIA_Q_BINARY_SI));
        json_object_set_new(c, "decoders", cap_value(p->decoders, FATIA_Q_BINARY_SI));
        json_object_set_new(c, "encoders", cap_value(p->encoders, FATIA_Q_BINARY_SI));
        json_object_set_new(c, "jpegEngines", cap_value(p->jpeg_engines, FATIA_Q_BINARY_SI));
        json_object_set_new(c, "ofaEngines", cap_value(p->ofa_engines, FATIA_Q_BINARY_SI));
        json_object_set_new(c, "memory", cap_value((int64_t)s->memory_bytes, FATIA_Q_BINARY_SI));
        for (unsigned i = pl->start; i < (unsigned)pl->start + p->memory_slices; i++) {
            char key[32];
            snprintf(key, sizeof(key), "memorySlice%u", i);
            json_object_set_new(c, key, cap_value(1, FATIA_Q_BINARY_SI));
        }
        return c;
    }
    json_object_set_new(c, "memory", cap_value((int64_t)s->memory_bytes, FATIA_Q_BINARY_SI));
    if (s->kind == FATIA_SLICE_MPS && s->multiprocessors)
        json_object_set_new(c, "multiprocessors", cap_value(s->multiprocessors, FATIA_Q_BINARY_SI));
    if (s->kind == FATIA_SLICE_FRACTION)
        json_object_set_new(c, "fatia.dev/gpu-milli", cap_value(1000, FATIA_Q_DECIMAL_SI));
    return c;
}

json_t *fatia_plan_slice_json(const struct fatia_plan *plan, const struct fatia_slice *s)
{
    const struct fatia_plan_gpu *g = slice_gpu(plan, s);
    json_t *j, *attrs, *cap;
    char id[128];

    fatia_plan_slice_id(plan, s, id, sizeof(id));
    attrs = fatia_plan_slice_attributes(plan, s);
    cap = fatia_plan_slice_capacity(plan, s);
    j = json_pack(
        "{s:s,s:s,s:{s:I,s:s,s:s},s:s,s:o,s:I,s:I,s:s,s:s,s:s}", "id", id, "node",
        plan->nodes[s->node].inv->name, "gpu", "index", (json_int_t)g->inv->index, "uuid",
        g->inv->uuid, "product", g->inv->model->product, "kind", fatia_slice_kind_name(s->kind),
        "profile",
        s->mig != FATIA_NO_MIG ? json_string(g->layout->v[s->mig].profile->name) : json_null(),
        "memoryBytes", (json_int_t)s->memory_bytes, "multiprocessors",
        (json_int_t)s->multiprocessors, "resource", plan->resources[s->resource], "isolation",
        fatia_isolation_name(s->isolation), "state", fatia_slice_state_name(s->state));
    if (!j || !attrs || !cap) {
        json_decref(j);
        json_decref(attrs);
        json_decref(cap);
        return NULL;
    }
    if (s->kind == FATIA_SLICE_MPS)
        json_object_set_new(j, "threadPercentage", json_integer(s->thread_percentage));
    if (s->kind == FATIA_SLICE_TIMESLICE || s->kind == FATIA_SLICE_MPS ||
        s->kind == FATIA_SLICE_FRACTION)
        json_object_set_new(j, "contextReserveBytes", json_integer((json_int_t)g->context_reserve));
    json_object_set_new(j, "attributes", attrs);
    json_object_set_new(j, "capacity", cap);
    return j;
}

/* ---- GPUs ---- */

static const char *mig_mode_name(uint8_t m)
{
    return m == FATIA_MIG_MODE_ENABLED    ? "enabled"
           : m == FATIA_MIG_MODE_DISABLED ? "disabled"
                                          : "unsupported";
}

/* How the GPU's devices are shared: "time-slicing", "mps", "fractional" or "none". */
static const char *sharing_name(const struct fatia_plan_gpu *g)
{
    if (g->share_policy && g->replicas > 1)
        return g->share_policy->share == FATIA_SHARE_MPS ? "mps" : "time-slicing";
    if (g->share_policy && g->share_policy->share == FATIA_SHARE_FRACTIONAL)
        return "fractional";
    return "none";
}

json_t *fatia_plan_gpu_json(const struct fatia_plan *plan, size_t node, size_t gpu)
{
    const struct fatia_plan_gpu *g = &plan->nodes[node].gpus[gpu];
    const struct fatia_inv_gpu *ig = g->inv;
    json_t *j, *layout, *mig;
    char cc[16];

    snprintf(cc, sizeof(cc), "%u.%u", ig->model->cc_major, ig->model->cc_minor);
    layout = json_array();
    for (unsigned i = 0; layout && g->mig_enabled && i < g->layout->n; i++)
        json_array_append_new(layout,
                              json_pack("{s:s,s:i,s:i,s:i}", "profile",
                                        g->layout->v[i].profile->name, "profileId",
                                        g->layout->v[i].profile->id, "start", g->layout->v[i].start,
                                        "size", g->layout->v[i].profile->memory_slices));
    mig = json_pack("{s:b,s:s,s:s,s:s,s:s,s:o}", "capable", ig->model->mig != NULL, "mode",
                    mig_mode_name(ig->mig_mode), "planned",
                    g->mig_enabled ? "enabled" : (ig->model->mig ? "disabled" : "unsupported"),
                    "strategy", fatia_mig_strategy_name(g->strategy), "state",
                    fatia_slice_state_name(g->state), "layout", layout);
    j = json_pack("{s:s,s:I,s:I,s:s,s:s,s:I,s:I,s:s,s:i,s:s,s:s,s:s,s:o,s:{s:s,s:I}}", "node",
                  plan->nodes[node].inv->name, "index", (json_int_t)ig->index, "minor",
                  (json_int_t)ig->minor, "uuid", ig->uuid, "product", ig->model->product,
                  "memoryBytes", (json_int_t)ig->model->memory_bytes, "multiprocessors",
                  (json_int_t)ig->model->multiprocessors, "pciBusID", ig->pci_bus_id,
                  "nvlinkIsland", ig->island, "architecture", ig->model->architecture,
                  "cudaComputeCapability", cc, "verified",
                  ig->model->verified ? ig->model->verified : "", "mig", mig, "sharing", "strategy",
                  sharing_name(g), "replicas", (json_int_t)g->replicas);
    if (!j)
        return NULL;
    if (ig->pcie_root[0])
        json_object_set_new(j, "pcieRoot", json_string(ig->pcie_root));
    if (ig->pci_device_id) {
        char id[16];
        snprintf(id, sizeof(id), "0x%08" PRIX32, ig->pci_device_id);
        json_object_set_new(j, "pciDeviceId", json_string(id));
    }
    if (g->mig_policy)
        json_object_set_new(j, "migPolicy", json_string(g->mig_policy->obj->id));
    if (g->share_policy)
        json_object_set_new(j, "sharingPolicy", json_string(g->share_policy->obj->id));
    return j;
}

/* ---- nodes ---- */

static int cap_json(const struct fatia_plan *plan, const struct fatia_plan_node *pn, bool alloc,
                    json_t **ret)
{
    json_t *o = json_object();
    const char *k;
    json_t *v;

    if (!o)
        return -ENOMEM;
    json_object_foreach(pn->inv->resources, k, v)
    {
        struct fatia_quantity q;
        char buf[64];
        if (fatia_quantity_parse_json(v, &q, NULL, 0) == 0) {
            fatia_quantity_format(&q, buf, sizeof(buf));
            json_object_set_new(o, k, json_string(buf));
        }
    }
    for (uint32_t i = 0; i < pn->n_caps; i++) {
        const struct fatia_plan_cap *c = &plan->caps[pn->first_cap + i];
        const char *name = plan->resources[c->resource];
        bool bytes = !strcmp(name, "fatia.dev/gpu-memory");
        json_object_set_new(o, name,
                            qjson(alloc ? c->allocatable : c->capacity,
                                  bytes ? FATIA_Q_BINARY_SI : FATIA_Q_DECIMAL_SI));
    }
    *ret = o;
    return 0;
}

static void set_label(json_t *labels, const char *key, const char *value)
{
    char buf[64];

    fatia_gfd_sanitize(value, buf, sizeof(buf));
    json_object_set_new(labels, key, json_string(buf));
}

static void set_label_u(json_t *labels, const char *key, uint64_t v)
{
    char buf[32];

    snprintf(buf, sizeof(buf), "%" PRIu64, v);
    json_object_set_new(labels, key, json_string(buf));
}

static void version_labels(json_t *labels, const char *prefix, const char *v, bool three)
{
    char key[96], part[3][24] = {"", "", ""};
    int k = 0;
    const char *p = v;

    if (!v)
        return;
    snprintf(key, sizeof(key), "nvidia.com/%s.full", prefix);
    set_label(labels, key, v);
    while (*p && k < 3) {
        size_t len = strcspn(p, ".");
        snprintf(part[k++], sizeof(part[0]), "%.*s", (int)FATIA_MIN(len, (size_t)23), p);
        p += len;
        if (*p == '.')
            p++;
    }
    snprintf(key, sizeof(key), "nvidia.com/%s.major", prefix);
    set_label(labels, key, part[0]);
    snprintf(key, sizeof(key), "nvidia.com/%s.minor", prefix);
    set_label(labels, key, part[1]);
    if (three) {
        snprintf(key, sizeof(key), "nvidia.com/%s.revision", prefix);
        set_label(labels, key, part[2]);
    }
}

/* Replicas of a MIG profile's devices on a node (1: not shared), from its slices. */
static uint32_t profile_replicas(const struct fatia_plan *plan, const struct fatia_plan_node *pn,
                                 const char *profile)
{
    uint32_t most = 1;

    for (uint32_t i = 0; i < pn->n_slices; i++) {
        const struct fatia_slice *s = &plan->slices[pn->first_slice + i];
        const struct fatia_plan_gpu *g = &pn->gpus[s->gpu];
        if (s->mig == FATIA_NO_MIG || strcmp(g->layout->v[s->mig].profile->name, profile))
            continue;
        if (s->kind == FATIA_SLICE_TIMESLICE)
            most = FATIA_MAX(most, (uint32_t)s->replica + 1);
    }
    return most;
}

static const char *gpu_kind(const struct fatia_plan_gpu *g)
{
    const char *sh = sharing_name(g);

    return g->mig_enabled ? "mig" : !strcmp(sh, "none") ? "whole" : sh;
}

int fatia_plan_node_labels(const struct fatia_plan *plan, size_t node, json_t *labels)
{
    const struct fatia_plan_node *pn = &plan->nodes[node];
    const struct fatia_inv_node *n = pn->inv;
    const struct fatia_plan_gpu *g0, *w0 = NULL;
    const char *k;
    json_t *v;
    bool same_kind = true, whole_uniform = true,
         sim = plan->inv->source == FATIA_INV_SIM && !n->published;
    bool any_mig = false;
    uint8_t strategy = FATIA_MIG_STRATEGY_NONE;
    uint64_t n_whole = 0;
    char buf[192];

    json_object_foreach(n->labels, k, v) json_object_set(labels, k, v);
    json_object_set_new(labels, "kubernetes.io/hostname", json_string(n->name));
    if (n->pool)
        json_object_set_new(labels, "fatia.dev/node-pool", json_string(n->pool->name));
    json_object_set_new(labels, "fatia.dev/inventory", json_string(sim ? "sim" : "nvml"));
    if (sim)
        json_object_set_new(labels, "fatia.dev/simulated", json_string("true"));
    if (!n->n_gpus)
        return 0;
    g0 = &pn->gpus[0];
    for (uint32_t i = 0; i < n->n_gpus; i++) {
        const struct fatia_plan_gpu *g = &pn->gpus[i];
        same_kind &= !strcmp(gpu_kind(g), gpu_kind(g0));
        if (g->mig_enabled) {
            any_mig = true;
            strategy = g->strategy;
            continue;
        }
        n_whole++;
        if (!w0)
            w0 = g;
        else if (g->replicas != w0->replicas || strcmp(sharing_name(g), sharing_name(w0)) ||
                 g->inv->model != w0->inv->model || g->share_policy != w0->share_policy)
            whole_uniform = false;
    }
    json_object_set_new(labels, "fatia.dev/sharing-strategy",
                        json_string(same_kind ? gpu_kind(g0) : "mixed"));
    /* GPU Feature Discovery */
    set_label(labels, "nvidia.com/gpu.family",
              fatia_gpu_family(g0->inv->model->cc_major, g0->inv->model->cc_minor));
    if (g0->inv->model->cc_major) {
        set_label_u(labels, "nvidia.com/gpu.compute.major", g0->inv->model->cc_major);
        set_label_u(labels, "nvidia.com/gpu.compute.minor", g0->inv->model->cc_minor);
    }
    json_object_set_new(labels, "nvidia.com/mig.capable",
                        json_string(g0->inv->model->mig ? "true" : "false"));
    json_object_set_new(labels, "nvidia.com/mig.strategy",
                        json_string(fatia_mig_strategy_name(any_mig ? strategy : 0)));
    version_labels(labels, "cuda.driver-version", n->driver_version, true);
    version_labels(labels, "cuda.runtime-version", n->cuda_driver_version, false);
    if (strategy == FATIA_MIG_STRATEGY_SINGLE && g0->mig_enabled && g0->layout->n) {
        const struct fatia_mig_profile *p = g0->layout->v[0].profile;
        uint64_t count = 0;
        uint32_t reps = profile_replicas(plan, pn, p->name);
        for (uint32_t i = 0; i < n->n_gpus; i++)
            count += pn->gpus[i].layout->n;
        snprintf(buf, sizeof(buf), "%s-MIG-%s%s", g0->inv->model->product, p->name,
                 reps > 1 ? "-SHARED" : "");
        set_label(labels, "nvidia.com/gpu.product", buf);
        set_label_u(labels, "nvidia.com/gpu.count", count);
        set_label_u(labels, "nvidia.com/gpu.replicas", reps);
        json_object_set_new(labels, "nvidia.com/gpu.sharing-strategy",
                            json_string(reps > 1 ? "time-slicing" : "none"));
        set_label_u(labels, "nvidia.com/gpu.memory", p->memory_bytes >> 20);
        set_label_u(labels, "nvidia.com/gpu.multiprocessors", p->multiprocessors);
        set_label_u(labels, "nvidia.com/gpu.slices.gi", p->compute_slices);
        set_label_u(labels, "nvidia.com/gpu.slices.ci", p->compute_slices);
        set_label_u(labels, "nvidia.com/gpu.engines.copy", p->copy_engines);
        set_label_u(labels, "nvidia.com/gpu.engines.decoder", p->decoders);
        set_label_u(labels, "nvidia.com/gpu.engines.encoder", p->encoders);
        set_label_u(labels, "nvidia.com/gpu.engines.jpeg", p->jpeg_engines);
        set_label_u(labels, "nvidia.com/gpu.engines.ofa", p->ofa_engines);
        return 0;
    }
    {
        const struct fatia_plan_gpu *m = w0 ? w0 : g0;
        bool shared = w0 && whole_uniform && w0->replicas > 1, renamed = false;
        if (shared && w0->share_policy)
            for (size_t r = 0; r < w0->share_policy->n_res; r++)
                renamed |= w0->share_policy->res[r].rename != NULL &&
                           !strcmp(w0->share_policy->res[r].name, "nvidia.com/gpu");
        snprintf(buf, sizeof(buf), "%s%s", m->inv->model->product,
                 shared && !renamed ? "-SHARED" : "");
        set_label(labels, "nvidia.com/gpu.product", buf);
        set_label_u(labels, "nvidia.com/gpu.count", n_whole);
        set_label_u(labels, "nvidia.com/gpu.memory", m->inv->model->memory_bytes >> 20);
        if (w0 && whole_uniform) {
            const char *sh = sharing_name(w0);
            bool upstream = !strcmp(sh, "mps") || !strcmp(sh, "time-slicing");
            set_label_u(labels, "nvidia.com/gpu.replicas", w0->replicas);
            json_object_set_new(labels, "nvidia.com/gpu.sharing-strategy",
                                json_string(upstream ? sh : "none"));
            json_object_set_new(labels, "nvidia.com/mps.capable",
                                json_string(!strcmp(sh, "mps") ? "true" : "false"));
        }
    }
    if (strategy != FATIA_MIG_STRATEGY_MIXED)
        return 0;
    /* nvidia.com/mig-<profile>.* per profile present on the node */
    for (uint32_t i = 0; i < n->n_gpus; i++) {
        const struct fatia_plan_gpu *g = &pn->gpus[i];
        for (unsigned x = 0; g->mig_enabled && x < g->layout->n; x++) {
            const struct fatia_mig_profile *p = g->layout->v[x].profile;
            char res[96], key[160];
            uint64_t count = 0;
            uint32_t reps;
            fatia_mig_resource_name(p->name, res, sizeof(res));
            snprintf(key, sizeof(key), "%s.count", res);
            if (json_object_get(labels, key))
                continue;
            for (uint32_t a = 0; a < n->n_gpus; a++)
                for (unsigned b = 0; pn->gpus[a].mig_enabled && b < pn->gpus[a].layout->n; b++)
                    count += !strcmp(pn->gpus[a].layout->v[b].profile->name, p->name);
            reps = profile_replicas(plan, pn, p->name);
#define MIG_LABEL(suffix, value)                       \
    do {                                               \
        snprintf(key, sizeof(key), "%s." suffix, res); \
        set_label_u(labels, key, (value));             \
    } while (0)
            MIG_LABEL("count", count);
            MIG_LABEL("memory", p->memory_bytes >> 20);
            MIG_LABEL("multiprocessors", p->multiprocessors);
            MIG_LABEL("slices.gi", p->compute_slices);
            MIG_LABEL("slices.ci", p->compute_slices);
            MIG_LABEL("engines.copy", p->copy_engines);
            MIG_LABEL("engines.decoder", p->decoders);
            MIG_LABEL("engines.encoder", p->encoders);
            MIG_LABEL("engines.jpeg", p->jpeg_engines);
            MIG_LABEL("engines.ofa", p->ofa_engines);
            MIG_LABEL("replicas", reps);
#undef MIG_LABEL
            snprintf(key, sizeof(key), "%s.product", res);
            snprintf(buf, sizeof(buf), "%s-MIG-%s%s", g->inv->model->product, p->name,
                     reps > 1 ? "-SHARED" : "");
            set_label(labels, key, buf);
            snprintf(key, sizeof(key), "%s.sharing-strategy", res);
            json_object_set_new(labels, key, json_string(reps > 1 ? "time-slicing" : "none"));
        }
    }
    return 0;
}

json_t *fatia_plan_node_json(const struct fatia_plan *plan, size_t node)
{
    const struct fatia_plan_node *pn = &plan->nodes[node];
    json_t *cap = NULL, *alloc = NULL, *labels = json_object(), *j;

    if (!labels || cap_json(plan, pn, false, &cap) < 0 || cap_json(plan, pn, true, &alloc) < 0 ||
        fatia_plan_node_labels(plan, node, labels) < 0) {
        json_decref(labels);
        json_decref(cap);
        json_decref(alloc);
        return NULL;
    }
    j = json_pack("{s:s,s:o,s:o,s:o}", "name", pn->inv->name, "capacity", cap, "allocatable", alloc,
                  "labels", labels);
    if (j && pn->inv->pool)
        json_object_set_new(j, "pool", json_string(pn->inv->pool->name));
    if (j && json_array_size(pn->inv->taints))
        json_object_set(j, "taints", pn->inv->taints);
    return j;
}

/* ---- the document ---- */

static json_t *model_json(const struct fatia_gpu_model *m)
{
    json_t *j, *profiles;
    char cc[16];

    snprintf(cc, sizeof(cc), "%u.%u", m->cc_major, m->cc_minor);
    j = json_pack("{s:s,s:I,s:I,s:s,s:s,s:s,s:b,s:I,s:s}", "product", m->product, "memoryBytes",
                  (json_int_t)m->memory_bytes, "multiprocessors", (json_int_t)m->multiprocessors,
                  "architecture", m->architecture, "brand", m->brand, "cudaComputeCapability", cc,
                  "nvlink", m->nvlink, "contextReserveBytes", (json_int_t)m->context_reserve,
                  "verified", m->verified ? m->verified : "");
    if (!j || !m->mig)
        return j;
    profiles = json_array();
    for (size_t i = 0; profiles && i < m->mig->n_profiles; i++) {
        const struct fatia_mig_profile *p = &m->mig->profiles[i];
        json_t *starts = json_array();
        for (unsigned s = 0; starts && s < p->n_starts; s++)
            json_array_append_new(starts, json_integer(p->starts[s]));
        json_array_append_new(
            profiles,
            json_pack("{s:s,s:i,s:i,s:i,s:i,s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o}", "name", p->name,
                      "id", p->id, "computeSlices", p->compute_slices, "memorySlices",
                      p->memory_slices, "instances", p->max_instances, "index", p->nvml_index,
                      "memoryBytes", (json_int_t)p->memory_bytes, "multiprocessors",
                      (json_int_t)p->multiprocessors, "copyEngines", (json_int_t)p->copy_engines,
                      "decoders", (json_int_t)p->decoders, "encoders", (json_int_t)p->encoders,
                      "jpegEngines", (json_int_t)p->jpeg_engines, "ofaEngines",
                      (json_int_t)p->ofa_engines, "placements", starts));
        if (p->verified)
            json_object_set_new(json_array_get(profiles, json_array_size(profiles) - 1), "verified",
                                json_string(p->verified));
    }
    json_object_set_new(j, "mig",
                        json_pack("{s:i,s:i,s:o}", "memorySlices", m->mig->memory_slices,
                                  "computeSlices", m->mig->compute_slices, "profiles", profiles));
    return j;
}

json_t *fatia_plan_to_json(const struct fatia_plan *plan)
{
    json_t *doc, *nodes = json_array(), *gpus = json_array(), *slices = json_array(),
                 *models = json_array();
    const struct fatia_gpu_model *seen[64];
    size_t n_seen = 0, n_gpus = 0;

    if (!nodes || !gpus || !slices || !models)
        goto fail;
    for (size_t i = 0; i < plan->n_nodes; i++) {
        json_t *nj = fatia_plan_node_json(plan, i);
        if (!nj || json_array_append_new(nodes, nj) < 0)
            goto fail;
        for (size_t g = 0; g < plan->nodes[i].inv->n_gpus; g++) {
            const struct fatia_gpu_model *m = plan->nodes[i].gpus[g].inv->model;
            json_t *gj = fatia_plan_gpu_json(plan, i, g);
            size_t k;
            if (!gj || json_array_append_new(gpus, gj) < 0)
                goto fail;
            n_gpus++;
            for (k = 0; k < n_seen && seen[k] != m; k++)
                ;
            if (k == n_seen && n_seen < FATIA_ARRAY_SIZE(seen)) {
                seen[n_seen++] = m;
                if (json_array_append_new(models, model_json(m)) < 0)
                    goto fail;
            }
        }
    }
    for (size_t i = 0; i < plan->n_slices; i++) {
        json_t *sj = fatia_plan_slice_json(plan, &plan->slices[i]);
        if (!sj || json_array_append_new(slices, sj) < 0)
            goto fail;
    }
    doc = json_pack("{s:{s:s,s:b,s:s,s:I,s:I,s:o},s:o,s:o,s:o}", "inventory", "source",
                    plan->inv->source == FATIA_INV_SIM ? "sim" : "nvml", "simulated",
                    plan->inv->source == FATIA_INV_SIM, "note", plan->inv->note, "nodes",
                    (json_int_t)plan->n_nodes, "gpus", (json_int_t)n_gpus, "models", models,
                    "nodes", nodes, "gpus", gpus, "slices", slices);
    return doc;
fail:
    json_decref(nodes);
    json_decref(gpus);
    json_decref(slices);
    json_decref(models);
    return NULL;
}

json_t *fatia_plan_resourceslices(const struct fatia_plan *plan, size_t node)
{
    const struct fatia_plan_node *pn = &plan->nodes[node];
    json_t *out = json_array(), *devices = NULL;
    size_t n_devices = 0, n_parts = 0;

    if (!out)
        return NULL;
    for (uint32_t i = 0; i < pn->n_slices; i++)
        n_devices += plan->slices[pn->first_slice + i].state != FATIA_STATE_PLANNED;
    n_parts = n_devices ? (n_devices + 127) / 128 : 1;
    for (uint32_t i = 0, k = 0; i <= pn->n_slices; i++) {
        const struct fatia_slice *s = i < pn->n_slices ? &plan->slices[pn->first_slice + i] : NULL;
        if (s && s->state == FATIA_STATE_PLANNED)
            continue;
        if (!devices)
            devices = json_array();
        if (s) {
            char id[128];
            fatia_plan_slice_id(plan, s, id, sizeof(id));
            json_array_append_new(devices,
                                  json_pack("{s:s,s:o,s:o}", "name", id, "attributes",
                                            fatia_plan_slice_attributes(plan, s), "capacity",
                                            fatia_plan_slice_capacity(plan, s)));
        }
        if (!s || json_array_size(devices) == 128) {
            char name[320];
            snprintf(name, sizeof(name), "%s-gpu.nvidia.com-%zu", pn->inv->name,
                     json_array_size(out));
            json_array_append_new(
                out, json_pack("{s:s,s:s,s:{s:s},s:{s:s,s:s,s:{s:s,s:i,s:I},s:o}}", "apiVersion",
                               "resource.k8s.io/v1", "kind", "ResourceSlice", "metadata", "name",
                               name, "spec", "driver", "gpu.nvidia.com", "nodeName", pn->inv->name,
                               "pool", "name", pn->inv->name, "generation", 1, "resourceSliceCount",
                               (json_int_t)n_parts, "devices", devices));
            devices = NULL;
            k++;
            if (!s)
                break;
        }
    }
    json_decref(devices);
    return out;
}
