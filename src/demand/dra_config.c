/*
 * demand/dra_config.c: NVIDIA's opaque device configuration (resource.nvidia.com/v1beta1
 * GpuConfig, MigDeviceConfig, VfioDeviceConfig; reference/nvidia-slicing.md §6.3).
 *
 * The driver decodes user configs strictly (an unknown field is an error) and then validates
 * them: a sharing strategy of TimeSlicing or MPS; the settings of the other strategy may not be
 * given; time-slice intervals Default | Short | Medium | Long; MPS thread percentage 0..100;
 * pinned-memory limits at least 1 MiB (they are passed to MPS as "<MiB>M"). MigDeviceConfig
 * sharing has no time-slicing settings. fatia checks the same at admission (the demand layer's
 * ResourceClaim check) and again at allocation, where the device type and the fleet's policy
 * are known (a GpuConfig cannot configure a MIG device; the supply layer may forbid MPS).
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "demand/dra.h"
#include "model/quantity.h"

static int bad(char *path, size_t path_n, const char *at, char *why, size_t why_n, const char *fmt,
               ...) FATIA_PRINTF(6, 7);

static int bad(char *path, size_t path_n, const char *at, char *why, size_t why_n, const char *fmt,
               ...)
{
    va_list ap;

    if (path && path_n)
        snprintf(path, path_n, "%s", at);
    if (why && why_n) {
        va_start(ap, fmt);
        vsnprintf(why, why_n, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

/* Strict decoding: every member of obj must be one of allowed. */
static int only_fields(const json_t *obj, const char *const *allowed, const char *prefix,
                       char *path, size_t path_n, char *why, size_t why_n)
{
    const char *key;
    json_t *v;
    char at[256];

    json_object_foreach((json_t *)obj, key, v)
    {
        bool ok = false;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = !strcmp(*a, key);
        if (!ok) {
            snprintf(at, sizeof(at), "%s%s%s", prefix, *prefix ? "." : "", key);
            return bad(path, path_n, at, why, why_n, "unknown field \"%s\"", key);
        }
    }
    return 0;
}

static int parse_limit(const json_t *v, const char *at, uint64_t *ret, char *path, size_t path_n,
                       char *why, size_t why_n)
{
    struct fatia_quantity q;
    char qwhy[128];

    if (fatia_quantity_parse_json(v, &q, qwhy, sizeof(qwhy)) < 0)
        return bad(path, path_n, at, why, why_n, "invalid quantity: %s", qwhy);
    if (q.nano < (fatia_i128)(1 << 20) * FATIA_NANO)
        return bad(path, path_n, at, why, why_n,
                   "must be at least 1Mi (MPS limits are whole "
                   "MiB)");
    *ret = (uint64_t)fatia_quantity_value(&q);
    return 0;
}

static int parse_mps(const json_t *mps, struct fatia_dra_sharing *s, const char *prefix, char *path,
                     size_t path_n, char *why, size_t why_n)
{
    static const char *const fields[] = {"defaultActiveThreadPercentage",
                                         "defaultPinnedDeviceMemoryLimit",
                                         "defaultPerDevicePinnedMemoryLimit", NULL};
    json_t *pct = json_object_get(mps, "defaultActiveThreadPercentage");
    json_t *limit = json_object_get(mps, "defaultPinnedDeviceMemoryLimit");
    json_t *per = json_object_get(mps, "defaultPerDevicePinnedMemoryLimit");
    char at[256];
    int r;

    if (!json_is_object(mps))
        return bad(path, path_n, prefix, why, why_n, "expected an object");
    r = only_fields(mps, fields, prefix, path, path_n, why, why_n);
    if (r < 0)
        return r;
    if (pct) {
        snprintf(at, sizeof(at), "%s.defaultActiveThreadPercentage", prefix);
        if (!json_is_integer(pct))
            return bad(path, path_n, at, why, why_n, "expected an integer");
        if (json_integer_value(pct) < 0 || json_integer_value(pct) > 100)
            return bad(
                path, path_n, at, why, why_n,
                "active thread percentage must be between 0 and 100 (is %" JSON_INTEGER_FORMAT ")",
                json_integer_value(pct));
        s->thread_percentage = (int)json_integer_value(pct);
    }
    if (limit) {
        snprintf(at, sizeof(at), "%s.defaultPinnedDeviceMemoryLimit", prefix);
        r = parse_limit(limit, at, &s->pinned_mem, path, path_n, why, why_n);
        if (r < 0)
            return r;
    }
    if (per) {
        const char *key;
        json_t *v;
        uint64_t ignored;
        if (!json_is_object(per)) {
            snprintf(at, sizeof(at), "%s.defaultPerDevicePinnedMemoryLimit", prefix);
            return bad(path, path_n, at, why, why_n,
                       "expected a map of device index or UUID to "
                       "quantity");
        }
        json_object_foreach(per, key, v)
        {
            snprintf(at, sizeof(at), "%s.defaultPerDevicePinnedMemoryLimit[%s]", prefix, key);
            r = parse_limit(v, at, &ignored, path, path_n, why, why_n);
            if (r < 0)
                return r;
        }
        s->per_device_limits = json_incref(per);
    }
    return 0;
}

static int parse_sharing(const json_t *sh, struct fatia_dra_sharing *s, bool mig, char *path,
                         size_t path_n, char *why, size_t why_n)
{
    static const char *const fields[] = {"strategy", "timeSlicingConfig", "mpsConfig", NULL};
    static const char *const intervals[] = {"Default", "Short", "Medium", "Long"};
    const char *strategy = fatia_json_str(sh, "strategy");
    json_t *ts = json_object_get(sh, "timeSlicingConfig"), *mps = json_object_get(sh, "mpsConfig");
    int r;

    if (!json_is_object(sh))
        return bad(path, path_n, "sharing", why, why_n, "expected an object");
    r = only_fields(sh, fields, "sharing", path, path_n, why, why_n);
    if (r < 0)
        return r;
    if (!strategy)
        return bad(path, path_n, "sharing.strategy", why, why_n, "required: TimeSlicing or MPS");
    if (!strcmp(strategy, "TimeSlicing")) {
        s->strategy = FATIA_DRA_SHARE_TIMESLICING;
        if (mps)
            return bad(path, path_n, "sharing.mpsConfig", why, why_n,
                       "must not be set with the TimeSlicing strategy");
        if (ts && mig)
            return bad(path, path_n, "sharing.timeSlicingConfig", why, why_n,
                       "MIG devices have no time-slicing settings");
        if (ts) {
            static const char *const ts_fields[] = {"interval", NULL};
            const char *interval = fatia_json_str(ts, "interval");
            if (!json_is_object(ts))
                return bad(path, path_n, "sharing.timeSlicingConfig", why, why_n,
                           "expected an object");
            r = only_fields(ts, ts_fields, "sharing.timeSlicingConfig", path, path_n, why, why_n);
            if (r < 0)
                return r;
            if (json_object_get(ts, "interval")) {
                s->interval = -1;
                for (int i = 0; interval && i < 4; i++)
                    if (!strcmp(interval, intervals[i]))
                        s->interval = i;
                if (s->interval < 0)
                    return bad(path, path_n, "sharing.timeSlicingConfig.interval", why, why_n,
                               "unknown time-slice interval \"%s\": expected Default, Short, "
                               "Medium or Long",
                               interval ? interval : "");
            }
        }
        return 0;
    }
    if (!strcmp(strategy, "MPS")) {
        s->strategy = FATIA_DRA_SHARE_MPS;
        if (ts)
            return bad(path, path_n, "sharing.timeSlicingConfig", why, why_n,
                       "must not be set with the MPS strategy");
        return mps ? parse_mps(mps, s, "sharing.mpsConfig", path, path_n, why, why_n) : 0;
    }
    return bad(path, path_n, "sharing.strategy", why, why_n,
               "unknown GPU sharing strategy \"%s\": expected TimeSlicing or MPS", strategy);
}

/* VfioDeviceConfig.iommu (NVIDIA's IOMMUConfig, api/nvidia.com/resource/v1beta1/iommu.go):
 * backendPolicy LegacyOnly | PreferIommuFD (the driver defaults an empty one to LegacyOnly),
 * enableAPIDevice a bool; nothing else (the driver decodes strictly). */
static int parse_iommu(const json_t *iommu, char *path, size_t path_n, char *why, size_t why_n)
{
    static const char *const fields[] = {"backendPolicy", "enableAPIDevice", NULL};
    const json_t *bp = json_object_get(iommu, "backendPolicy");
    const json_t *api = json_object_get(iommu, "enableAPIDevice");
    int r;

    if (!json_is_object(iommu))
        return bad(path, path_n, "iommu", why, why_n, "expected an object");
    r = only_fields(iommu, fields, "iommu", path, path_n, why, why_n);
    if (r < 0)
        return r;
    if (bp && !json_is_null(bp) &&
        (!json_is_string(bp) ||
         (json_string_length(bp) && strcmp(json_string_value(bp), "LegacyOnly") &&
          strcmp(json_string_value(bp), "PreferIommuFD"))))
        return bad(path, path_n, "iommu.backendPolicy", why, why_n,
                   "unknown IOMMU backend policy %s: supported IOMMU backend policies: LegacyOnly, "
                   "PreferIommuFD",
                   json_is_string(bp) ? json_string_value(bp) : "(not a string)");
    if (api && !json_is_null(api) && !json_is_boolean(api))
        return bad(path, path_n, "iommu.enableAPIDevice", why, why_n, "expected a boolean");
    return 0;
}

int fatia_dra_nvidia_config_parse(const json_t *params, struct fatia_dra_sharing *ret, char *path,
                                  size_t path_n, char *why, size_t why_n)
{
    static const char *const gpu_fields[] = {"apiVersion", "kind", "sharing", NULL};
    static const char *const vfio_fields[] = {"apiVersion", "kind", "iommu", NULL};
    const char *av = fatia_json_str(params, "apiVersion"), *kind = fatia_json_str(params, "kind");
    struct fatia_dra_sharing s = {.interval = -1, .thread_percentage = -1};
    const json_t *sharing;
    int r;

    if (path && path_n)
        path[0] = '\0';
    if (!json_is_object(params))
        return bad(path, path_n, "", why, why_n, "expected an object");
    if (!av || strcmp(av, "resource.nvidia.com/v1beta1"))
        return bad(path, path_n, "apiVersion", why, why_n,
                   "unsupported apiVersion \"%s\": expected resource.nvidia.com/v1beta1",
                   av ? av : "");
    if (!kind)
        return bad(path, path_n, "kind", why, why_n, "required field is missing");
    if (!strcmp(kind, "GpuConfig"))
        s.kind = FATIA_DRA_CONFIG_GPU;
    else if (!strcmp(kind, "MigDeviceConfig"))
        s.kind = FATIA_DRA_CONFIG_MIG;
    else if (!strcmp(kind, "VfioDeviceConfig"))
        s.kind = FATIA_DRA_CONFIG_VFIO;
    else
        return bad(path, path_n, "kind", why, why_n,
                   "unknown kind \"%s\": expected GpuConfig, MigDeviceConfig or VfioDeviceConfig",
                   kind);
    r = only_fields(params, s.kind == FATIA_DRA_CONFIG_VFIO ? vfio_fields : gpu_fields, "", path,
                    path_n, why, why_n);
    if (r < 0)
        return r;
    if (s.kind == FATIA_DRA_CONFIG_VFIO && json_object_get(params, "iommu") &&
        !json_is_null(json_object_get(params, "iommu"))) {
        r = parse_iommu(json_object_get(params, "iommu"), path, path_n, why, why_n);
        if (r < 0)
            return r;
    }
    sharing = json_object_get(params, "sharing");
    if (sharing) {
        r = parse_sharing(sharing, &s, s.kind == FATIA_DRA_CONFIG_MIG, path, path_n, why, why_n);
        if (r < 0) {
            fatia_dra_sharing_release(&s);
            return r;
        }
    }
    if (ret)
        *ret = s;
    else
        fatia_dra_sharing_release(&s);
    return 0;
}

void fatia_dra_sharing_release(struct fatia_dra_sharing *s)
{
    if (!s)
        return;
    json_decref(s->per_device_limits);
    s->per_device_limits = NULL;
}
