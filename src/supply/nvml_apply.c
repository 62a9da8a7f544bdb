/*
 * supply/nvml_apply.c: making GPUs match an nvml plan's MIG layouts (`fatia plan --apply`), the
 * supply layer's only write to hardware.
 *
 * Per GPU whose MIG layer is `planned`:
 *
 *     MIG wanted:   mode off --SetMigMode(1)--> mode on? --no (pending reset)--> report, skip
 *                                                  |yes
 *                   destroy GIs not planned (their CIs first) --> create planned GIs with explicit
 *                   placement --> full-size CI in each --> read the MIG device UUID
 *     MIG unwanted: destroy every GI (CIs first) --> SetMigMode(0)
 *
 * Never resets a GPU (DESIGN §7): a mode change that needs a reset stays pending and is
 * reported. Creating with explicit placement (the DRA driver's way) rather than mig-parted's
 * permutations of unplaced creates means the layout is exactly the planned one.
 *
 * Safety: this never runs against a real driver unless the caller says so (allow_real): tests and
 * CI use the fake library (tests/supply/fake_nvml.c), which exports fatiaFakeNvml. The GPU machine
 * the project is lent is shared, and its MIG mode must not change.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/vec.h"
#include "supply/nvml.h"

void fatia_apply_report_release(struct fatia_apply_report *r)
{
    for (size_t i = 0; i < r->n; i++)
        fatia_free(r->lines[i]);
    fatia_free(r->lines);
    memset(r, 0, sizeof(*r));
}

static void say(struct fatia_apply_report *r, const char *fmt, ...) FATIA_PRINTF(2, 3);

static void say(struct fatia_apply_report *r, const char *fmt, ...)
{
    va_list ap;
    char *line;

    va_start(ap, fmt);
    if (vasprintf(&line, fmt, ap) < 0)
        line = NULL;
    va_end(ap);
    if (!line)
        return;
    if (fatia_vec_reserve_raw((void **)&r->lines, &r->cap, r->n + 1, sizeof(*r->lines)) < 0) {
        fatia_free(line);
        return;
    }
    r->lines[r->n++] = line;
}

/* NVML_COMPUTE_INSTANCE_PROFILE_* index of a compute instance spanning g slices. */
static int ci_index(unsigned slices)
{
    switch (slices) {
    case 1:
        return 0;
    case 2:
        return 1;
    case 3:
        return 2;
    case 4:
        return 3;
    case 7:
        return 4;
    case 8:
        return 5;
    case 6:
        return 6;
    }
    return -1;
}

static bool planned_has(const struct fatia_mig_layout *l, int profile_id, unsigned start)
{
    for (unsigned i = 0; i < l->n; i++)
        if (l->v[i].profile->id == profile_id && l->v[i].start == start)
            return true;
    return false;
}

static int destroy_gi(const struct fatia_nvml *n, nvmlGpuInstance_t gi)
{
    for (unsigned c = 0; c < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; c++) {
        nvmlComputeInstanceProfileInfo_t cp;
        nvmlComputeInstance_t cis[8];
        unsigned cn = 8;
        if (n->GpuInstanceGetComputeInstanceProfileInfo(
                gi, c, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &cp) != NVML_SUCCESS ||
            n->GpuInstanceGetComputeInstances(gi, cp.id, cis, &cn) != NVML_SUCCESS)
            continue;
        for (unsigned k = 0; k < cn; k++) {
            nvmlReturn_t r = n->ComputeInstanceDestroy(cis[k]);
            if (r != NVML_SUCCESS)
                return r;
        }
    }
    return n->GpuInstanceDestroy(gi);
}

static int apply_gpu(const struct fatia_nvml *n, const struct fatia_plan_gpu *pg,
                     struct fatia_apply_report *rep)
{
    const struct fatia_inv_gpu *g = pg->inv;
    const struct fatia_mig_geom *geom = g->model->mig;
    nvmlDevice_t dev;
    unsigned cur = 0, pend = 0;
    nvmlReturn_t r, act = NVML_SUCCESS;
    bool ok = true;

    if ((r = n->DeviceGetHandleByIndex(g->index, &dev)) != NVML_SUCCESS ||
        (r = n->DeviceGetMigMode(dev, &cur, &pend)) != NVML_SUCCESS) {
        say(rep, "GPU %" PRIu32 ": cannot read its MIG mode: %s", g->index,
            fatia_nvml_strerror(n, r));
        return -FATIA_E_DRIVER;
    }
    if (pg->mig_enabled && cur != NVML_DEVICE_MIG_ENABLE) {
        r = n->DeviceSetMigMode(dev, NVML_DEVICE_MIG_ENABLE, &act);
        if (r != NVML_SUCCESS) {
            say(rep, "GPU %" PRIu32 ": enabling MIG mode failed: %s", g->index,
                fatia_nvml_strerror(n, r));
            return -FATIA_E_DRIVER;
        }
        n->DeviceGetMigMode(dev, &cur, &pend);
        if (cur != NVML_DEVICE_MIG_ENABLE) {
            say(rep,
                "GPU %" PRIu32 ": MIG mode enable is pending a GPU reset (%s); fatia never resets "
                "a GPU: reset it, then apply again",
                g->index, fatia_nvml_strerror(n, act));
            return -FATIA_E_DRIVER;
        }
        say(rep, "GPU %" PRIu32 ": MIG mode enabled", g->index);
    }
    /* destroy what the plan does not keep (everything when MIG is unwanted) */
    for (size_t pi = 0; geom && cur == NVML_DEVICE_MIG_ENABLE && pi < geom->n_profiles; pi++) {
        nvmlGpuInstance_t gis[FATIA_MIG_MAX_INSTANCES];
        unsigned count = FATIA_MIG_MAX_INSTANCES;
        const struct fatia_mig_profile *p = &geom->profiles[pi];
        if (n->DeviceGetGpuInstances(dev, (unsigned)p->id, gis, &count) != NVML_SUCCESS)
            continue;
        for (unsigned k = 0; k < count; k++) {
            nvmlGpuInstanceInfo_t info;
            if (n->GpuInstanceGetInfo(gis[k], &info) != NVML_SUCCESS)
                continue;
            if (pg->mig_enabled && planned_has(pg->layout, p->id, info.placement.start))
                continue;
            r = destroy_gi(n, gis[k]);
            if (r != NVML_SUCCESS) {
                say(rep, "GPU %" PRIu32 ": destroying %s at %u failed: %s", g->index, p->name,
                    info.placement.start, fatia_nvml_strerror(n, r));
                ok = false;
            } else {
                say(rep, "GPU %" PRIu32 ": destroyed %s at %u", g->index, p->name,
                    info.placement.start);
            }
        }
    }
    if (!ok)
        return -FATIA_E_DRIVER;
    if (!pg->mig_enabled) {
        if (cur == NVML_DEVICE_MIG_ENABLE) {
            r = n->DeviceSetMigMode(dev, NVML_DEVICE_MIG_DISABLE, &act);
            if (r != NVML_SUCCESS) {
                say(rep, "GPU %" PRIu32 ": disabling MIG mode failed: %s", g->index,
                    fatia_nvml_strerror(n, r));
                return -FATIA_E_DRIVER;
            }
            say(rep, "GPU %" PRIu32 ": MIG mode disabled", g->index);
        }
        return 0;
    }
    /* create the planned instances that do not exist yet */
    for (unsigned i = 0; i < pg->layout->n; i++) {
        const struct fatia_mig_placement *pl = &pg->layout->v[i];
        nvmlGpuInstancePlacement_t place = {pl->start, pl->profile->memory_slices};
        nvmlGpuInstance_t gis[FATIA_MIG_MAX_INSTANCES], gi;
        nvmlComputeInstanceProfileInfo_t cp;
        nvmlComputeInstance_t ci;
        nvmlComputeInstanceInfo_t cinfo;
        unsigned count = FATIA_MIG_MAX_INSTANCES;
        bool exists = false;
        char uuid[96] = "";
        int cidx = ci_index(pl->profile->compute_slices);

        if (n->DeviceGetGpuInstances(dev, (unsigned)pl->profile->id, gis, &count) == NVML_SUCCESS)
            for (unsigned k = 0; k < count; k++) {
                nvmlGpuInstanceInfo_t info;
                if (n->GpuInstanceGetInfo(gis[k], &info) == NVML_SUCCESS &&
                    info.placement.start == pl->start)
                    exists = true;
            }
        if (exists)
            continue;
        r = n->DeviceCreateGpuInstanceWithPlacement(dev, (unsigned)pl->profile->id, &place, &gi);
        if (r != NVML_SUCCESS) {
            say(rep, "GPU %" PRIu32 ": creating %s at %u failed: %s", g->index, pl->profile->name,
                pl->start, fatia_nvml_strerror(n, r));
            ok = false;
            continue;
        }
        if (cidx < 0 ||
            (r = n->GpuInstanceGetComputeInstanceProfileInfo(
                 gi, (unsigned)cidx, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &cp)) !=
                NVML_SUCCESS ||
            (r = n->GpuInstanceCreateComputeInstance(gi, cp.id, &ci)) != NVML_SUCCESS) {
            say(rep, "GPU %" PRIu32 ": compute instance in %s at %u failed: %s", g->index,
                pl->profile->name, pl->start, fatia_nvml_strerror(n, cidx < 0 ? 2 : r));
            ok = false;
            continue;
        }
        if (n->ComputeInstanceGetInfo(ci, &cinfo) == NVML_SUCCESS)
            n->DeviceGetUUID(cinfo.device, uuid, sizeof(uuid));
        say(rep, "GPU %" PRIu32 ": created %s at %u%s%s", g->index, pl->profile->name, pl->start,
            uuid[0] ? " as " : "", uuid);
    }
    return ok ? 0 : -FATIA_E_DRIVER;
}

int fatia_nvml_apply(const struct fatia_plan *plan, const char *lib_path, bool allow_real,
                     struct fatia_apply_report *report, struct fatia_diag *diag)
{
    struct fatia_nvml n;
    char why[512];
    int r;

    if (plan->inv->source != FATIA_INV_NVML) {
        fatia_diag_add(diag, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, NULL,
                       "--apply changes real GPUs: it needs --inventory nvml");
        return -EINVAL;
    }
    r = fatia_nvml_open(&n, lib_path, why, sizeof(why));
    if (r < 0) {
        fatia_diag_add(diag, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, NULL, "%s", why);
        return r;
    }
    if (!n.is_fake && !allow_real) {
        fatia_diag_add(diag, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, NULL,
                       "refusing to change MIG on a real GPU (%s): set FATIA_ALLOW_MIG_APPLY=1 "
                       "if this machine is yours to reconfigure",
                       n.path);
        fatia_nvml_close(&n);
        return -EPERM;
    }
    if (!n.DeviceSetMigMode || !n.DeviceCreateGpuInstanceWithPlacement ||
        !n.GpuInstanceCreateComputeInstance || !n.ComputeInstanceDestroy || !n.GpuInstanceDestroy ||
        !n.DeviceGetGpuInstances || !n.GpuInstanceGetInfo ||
        !n.GpuInstanceGetComputeInstanceProfileInfo || !n.GpuInstanceGetComputeInstances ||
        !n.DeviceGetMigMode) {
        fatia_diag_add(diag, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, NULL,
                       "%s lacks the MIG management entry points", n.path);
        fatia_nvml_close(&n);
        return -FATIA_E_UNSUPPORTED;
    }
    r = 0;
    for (size_t ni = 0; ni < plan->n_nodes; ni++)
        for (uint32_t gi = 0; gi < plan->nodes[ni].inv->n_gpus; gi++) {
            const struct fatia_plan_gpu *pg = &plan->nodes[ni].gpus[gi];
            if (pg->state != FATIA_STATE_PLANNED)
                continue;
            if (apply_gpu(&n, pg, report) < 0) {
                report->n_failed++;
                r = -FATIA_E_DRIVER;
            } else {
                report->n_changed++;
            }
        }
    fatia_nvml_close(&n);
    return r;
}
