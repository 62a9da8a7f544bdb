/*
 * gateway/catalog.c: the serving plane's view of a GPU product or MIG profile (see catalog.h),
 * read from the supply layer's GPU catalog (data/gpus, supply/catalog.h).
 *
 * Memory is what the engine sees: vLLM sizes its KV cache as a fraction of the total CUDA reports,
 * which is less than NVML's total by the driver's reservation. That total was measured on the H200
 * by scripts/calibrate-h200 (150,109,880,320 bytes against NVML's 150,754,820,096) and is used for
 * the calibrated product; other products get NVML's total (a few hundred MB optimistic). MIG
 * profile memory is NVML's memorySizeMB of the profile, as the catalog records it.
 */
#include "base/compat.h"

#include "gateway/catalog.h"

#include <strings.h>

#include "base/buf.h"
#include "base/error.h"
#include "gateway/calibration.h"
#include "supply/catalog.h"

int fatia_serving_device_lookup(const char *product, const char *profile,
                                struct fatia_serving_device *ret, char *why, size_t why_n)
{
    struct fatia_serving_device d = {0};
    struct fatia_catalog cat;
    struct fatia_diag diag;
    const struct fatia_gpu_model *m;
    char path[4096];
    int r;

    fatia_catalog_default_path(NULL, path, sizeof(path));
    fatia_catalog_init(&cat);
    fatia_diag_init(&diag);
    r = fatia_catalog_load(&cat, path, &diag);
    if (r < 0) {
        snprintf(why, why_n, "cannot load the GPU catalog '%s'%s%s", path, diag.n ? ": " : "",
                 diag.n ? diag.v[0].msg : "");
        goto out;
    }
    m = fatia_catalog_find(&cat, product);
    if (!m && !strncasecmp(product, "nvidia-", 7))
        m = fatia_catalog_find(&cat, product + 7);
    if (!m) {
        snprintf(why, why_n, "unknown GPU product '%s' (not in the catalog '%s')", product, path);
        r = -ENOENT;
        goto out;
    }
    snprintf(d.product, sizeof(d.product), "%s", m->product);
    d.gpu_multiprocessors = m->multiprocessors;
    d.gpu_memory_slices = m->mig ? m->mig->memory_slices : 1;
    if (!profile || !*profile) {
        d.memory_bytes =
            !strcmp(m->product, FATIA_CALIB_GPU) ? FATIA_CALIB_CUDA_TOTAL_MEMORY : m->memory_bytes;
        d.multiprocessors = m->multiprocessors;
        d.memory_slices = d.gpu_memory_slices;
    } else {
        const struct fatia_mig_profile *p = m->mig ? fatia_mig_geom_find(m->mig, profile) : NULL;
        if (!p) {
            struct fatia_buf names = FATIA_BUF_INIT;
            for (size_t i = 0; m->mig && i < m->mig->n_profiles; i++)
                fatia_buf_printf(&names, "%s%s", i ? ", " : "", m->mig->profiles[i].name);
            snprintf(why, why_n, "unknown MIG profile '%s' for %s%s%s", profile, m->product,
                     names.len ? ": expected one of " : " (not MIG capable)", names.p);
            fatia_buf_release(&names);
            r = -ENOENT;
            goto out;
        }
        snprintf(d.profile, sizeof(d.profile), "%s", p->name);
        d.memory_bytes = p->memory_bytes;
        d.multiprocessors = p->multiprocessors;
        d.memory_slices = p->memory_slices;
    }
    *ret = d;
    r = 0;
out:
    fatia_diag_release(&diag);
    fatia_catalog_release(&cat);
    return r;
}
