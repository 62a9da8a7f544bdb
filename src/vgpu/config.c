/*
 * vgpu/config.c: parsing of the FATIA_VGPU_* variables (see config.h and docs/vgpu.md).
 *
 * Model: every variable is optional. FATIA_VGPU_MEMORY_LIMIT caps every device;
 * FATIA_VGPU_MEMORY_LIMIT_<i> (i = CUDA ordinal 0..15) overrides it for one device. The result is
 * a plain struct with fixed-size buffers: no allocation, no locale, no libc state, so that the
 * library can parse in a constructor of any process, and the fuzz target can call it millions of
 * times.
 *
 * Invariants: limit[i] is FATIA_VGPU_NO_LIMIT or a byte count; any_limit says whether some device
 * is capped; strings are always NUL-terminated; a value that does not fit its buffer is an error
 * (never truncated, since a truncated path would name another file).
 *
 * Rejected: HAMi's "0 means no limit" (a typo would then lift the cap) and strtoul base 0 (hex
 * and octal sizes are surprises, not features).
 */
#include "base/compat.h"

#include "vgpu/config.h"

#include <errno.h>

static void add_error(struct fatia_vgpu_config *cfg, const char *var, const char *value,
                      const char *why)
{
    if (cfg->n_errors++ == 0)
        snprintf(cfg->first_error, sizeof(cfg->first_error), "%s='%.64s': %s", var,
                 value ? value : "", why);
}

int fatia_vgpu_parse_size(const char *s, uint64_t *ret)
{
    static const struct {
        const char *suffix;
        uint64_t mult;
    } units[] = {
        {"", 1},
        {"Ki", UINT64_C(1) << 10},
        {"Mi", UINT64_C(1) << 20},
        {"Gi", UINT64_C(1) << 30},
        {"Ti", UINT64_C(1) << 40},
        {"Pi", UINT64_C(1) << 50},
        {"k", UINT64_C(1000)},
        {"K", UINT64_C(1000)},
        {"M", UINT64_C(1000000)},
        {"G", UINT64_C(1000000000)},
        {"T", UINT64_C(1000000000000)},
        {"P", UINT64_C(1000000000000000)},
    };

    uint64_t v = 0;
    const char *p = s;

    if (!s || *s < '0' || *s > '9')
        return -EINVAL;
    for (; *p >= '0' && *p <= '9'; p++) {
        uint64_t d = (uint64_t)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -ERANGE;
        v = v * 10 + d;
    }
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(units); i++) {
        if (strcmp(p, units[i].suffix) != 0)
            continue;
        if (v > UINT64_MAX / units[i].mult)
            return -ERANGE;
        v *= units[i].mult;
        /* FATIA_VGPU_NO_LIMIT is reserved for "no limit". */
        if (v == FATIA_VGPU_NO_LIMIT)
            return -ERANGE;
        *ret = v;
        return 0;
    }
    return -EINVAL;
}

int fatia_vgpu_parse_log_level(const char *s, enum fatia_vgpu_log_level *ret)
{
    static const char *const names[] = {"off", "error", "warning", "info", "debug"};

    if (!s)
        return -EINVAL;
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(names); i++) {
        if (strcmp(s, names[i]) == 0 || (s[0] == (char)('0' + i) && s[1] == '\0')) {
            *ret = (enum fatia_vgpu_log_level)i;
            return 0;
        }
    }
    if (strcmp(s, "warn") == 0) {
        *ret = FATIA_VGPU_LOG_WARNING;
        return 0;
    }
    return -EINVAL;
}

static int copy_string(char *dst, size_t n, const char *src)
{
    size_t len = strlen(src);

    if (len >= n)
        return -ENAMETOOLONG;
    memcpy(dst, src, len + 1);
    return 0;
}

static void load_uuids(struct fatia_vgpu_config *cfg, const char *v)
{
    const char *p = v;
    int n = 0;

    if (!v || !*v)
        return;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);

        if (len == 0 || len >= FATIA_VGPU_UUID_MAX || n == FATIA_VGPU_MAX_DEVICES) {
            add_error(cfg, "FATIA_VGPU_DEVICE_UUIDS", v,
                      len == 0 ? "empty entry" : "too many or too long entries");
            cfg->n_uuids = 0;
            return;
        }
        for (size_t i = 0; i < len; i++) {
            if (p[i] <= ' ' || p[i] > '~') {
                add_error(cfg, "FATIA_VGPU_DEVICE_UUIDS", v, "bad character");
                cfg->n_uuids = 0;
                return;
            }
        }
        memcpy(cfg->uuids[n], p, len);
        cfg->uuids[n][len] = '\0';
        n++;
        if (!end)
            break;
        p = end + 1;
        if (!*p) {
            add_error(cfg, "FATIA_VGPU_DEVICE_UUIDS", v, "empty entry");
            cfg->n_uuids = 0;
            return;
        }
    }
    cfg->n_uuids = n;
}

void fatia_vgpu_config_load(struct fatia_vgpu_config *cfg, fatia_vgpu_getenv_fn get, void *ctx)
{
    const char *v;
    uint64_t all = FATIA_VGPU_NO_LIMIT;

    memset(cfg, 0, sizeof(*cfg));
    for (int i = 0; i < FATIA_VGPU_MAX_DEVICES; i++)
        cfg->limit[i] = FATIA_VGPU_NO_LIMIT;

    v = get(ctx, "FATIA_VGPU_LOG");
    if (v && *v && fatia_vgpu_parse_log_level(v, &cfg->log_level) < 0) {
        /* Someone asked for logging but misspelled it: show warnings rather than nothing. */
        cfg->log_level = FATIA_VGPU_LOG_WARNING;
        add_error(cfg, "FATIA_VGPU_LOG", v, "expected off|error|warning|info|debug");
    }
    v = get(ctx, "FATIA_VGPU_LOG_FILE");
    if (v && *v && copy_string(cfg->log_file, sizeof(cfg->log_file), v) < 0)
        add_error(cfg, "FATIA_VGPU_LOG_FILE", v, "path too long");

    v = get(ctx, "FATIA_VGPU_MEMORY_LIMIT");
    if (v) {
        if (fatia_vgpu_parse_size(v, &all) < 0) {
            add_error(cfg, "FATIA_VGPU_MEMORY_LIMIT", v, "not a byte count, capping at 0");
            all = 0;
        }
        for (int i = 0; i < FATIA_VGPU_MAX_DEVICES; i++)
            cfg->limit[i] = all;
    }
    for (int i = 0; i < FATIA_VGPU_MAX_DEVICES; i++) {
        char name[40];
        uint64_t one;

        snprintf(name, sizeof(name), "FATIA_VGPU_MEMORY_LIMIT_%d", i);
        v = get(ctx, name);
        if (!v)
            continue;
        if (fatia_vgpu_parse_size(v, &one) < 0) {
            add_error(cfg, name, v, "not a byte count, capping at 0");
            one = 0;
        }
        cfg->limit[i] = one;
    }

    v = get(ctx, "FATIA_VGPU_SHARED_FILE");
    if (v && *v) {
        const char *why = NULL;

        if (v[0] != '/')
            why = "not an absolute path, capping every device at 0";
        else if (copy_string(cfg->shared_file, sizeof(cfg->shared_file), v) < 0)
            why = "path too long, capping every device at 0";
        if (why) {
            /* Accounting alone would let the slice's processes take N times its cap. */
            add_error(cfg, "FATIA_VGPU_SHARED_FILE", v, why);
            cfg->shared_file[0] = '\0';
            for (int i = 0; i < FATIA_VGPU_MAX_DEVICES; i++)
                cfg->limit[i] = 0;
        }
    }
    for (int i = 0; i < FATIA_VGPU_MAX_DEVICES; i++)
        cfg->any_limit |= cfg->limit[i] != FATIA_VGPU_NO_LIMIT;
    load_uuids(cfg, get(ctx, "FATIA_VGPU_DEVICE_UUIDS"));
}
