/*
 * agent/vgpu_slice.c: the node agent's side of the memory-cap interposer (see vgpu_slice.h).
 *
 * The agent writes the caps twice on purpose: into the accounting file (the authority once it
 * exists, so that a process cannot raise its slice's cap by changing its own environment) and
 * into the environment (which tells the library which devices are capped, and lets a process
 * that starts before the file exists create it with the same caps).
 *
 * Rejected: an agent-side daemon that processes ask for memory over a socket (a round trip on
 * every cudaMalloc, and a single point whose death stops every slice on the node).
 */
#include "base/compat.h"

#include "agent/vgpu_slice.h"

#include <errno.h>

#include "vgpu/region.h"

uint64_t fatia_agent_vgpu_default_cap(uint64_t gpu_memory, unsigned replicas, uint64_t reserve)
{
    uint64_t all;

    if (replicas == 0 || reserve > gpu_memory / replicas)
        return 0;
    all = gpu_memory - (uint64_t)replicas * reserve;
    return (all / replicas) & ~((UINT64_C(2) << 20) - 1);
}

static int check(const struct fatia_vgpu_slice *s)
{
    if (!s->accounting_file || s->accounting_file[0] != '/' ||
        strlen(s->accounting_file) >= FATIA_VGPU_PATH_MAX || !s->library || !s->library[0] ||
        strchr(s->library, ':') || strchr(s->library, ' ') || s->n_devices == 0 ||
        s->n_devices > FATIA_VGPU_MAX_DEVICES)
        return -EINVAL;
    for (unsigned i = 0; i < s->n_devices; i++) {
        const char *u = s->uuids[i];

        if (!u || !u[0] || strlen(u) >= FATIA_VGPU_UUID_MAX || strchr(u, ','))
            return -EINVAL;
        for (const char *p = u; *p; p++) {
            if (*p <= ' ' || *p > '~')
                return -EINVAL;
        }
    }
    return 0;
}

int fatia_agent_vgpu_slice_prepare(const struct fatia_vgpu_slice *s, char *why, size_t why_len)
{
    uint64_t limit[FATIA_VGPU_MAX_DEVICES];
    int r = check(s);

    if (r < 0) {
        if (why && why_len)
            snprintf(why, why_len, "invalid slice description");
        return r;
    }
    for (unsigned i = 0; i < FATIA_VGPU_MAX_DEVICES; i++)
        limit[i] = i < s->n_devices ? s->cap[i] : FATIA_VGPU_NO_LIMIT;
    return fatia_vgpu_region_create(s->accounting_file, limit, why, why_len);
}

int fatia_agent_vgpu_slice_env(const struct fatia_vgpu_slice *s, fatia_env_put_fn put, void *ctx)
{
    char list[FATIA_VGPU_MAX_DEVICES * FATIA_VGPU_UUID_MAX];
    char preload[2 * FATIA_VGPU_PATH_MAX];
    size_t len = 0;
    int r = check(s);

    if (r < 0)
        return r;
    for (unsigned i = 0; i < s->n_devices; i++)
        len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i ? "," : "", s->uuids[i]);
    if (s->ld_preload && s->ld_preload[0])
        r = snprintf(preload, sizeof(preload), "%s:%s", s->library, s->ld_preload);
    else
        r = snprintf(preload, sizeof(preload), "%s", s->library);
    if (r < 0 || (size_t)r >= sizeof(preload))
        return -EINVAL;
    if ((r = put(ctx, "LD_PRELOAD", preload)) < 0 ||
        (r = put(ctx, "CUDA_VISIBLE_DEVICES", list)) < 0 ||
        (r = put(ctx, "FATIA_VGPU_DEVICE_UUIDS", list)) < 0 ||
        (r = put(ctx, "FATIA_VGPU_SHARED_FILE", s->accounting_file)) < 0)
        return r;
    for (unsigned i = 0; i < s->n_devices; i++) {
        char name[40], value[32];

        if (s->cap[i] == FATIA_VGPU_NO_LIMIT)
            continue;
        snprintf(name, sizeof(name), "FATIA_VGPU_MEMORY_LIMIT_%u", i);
        snprintf(value, sizeof(value), "%" PRIu64, s->cap[i]);
        r = put(ctx, name, value);
        if (r < 0)
            return r;
    }
    if (s->log_level && s->log_level[0])
        return put(ctx, "FATIA_VGPU_LOG", s->log_level);
    return 0;
}

int fatia_agent_vgpu_slice_usage(const char *accounting_file, unsigned dev, uint64_t *ret_used)
{
    struct fatia_vgpu_region r;
    int ret;

    if (dev >= FATIA_VGPU_MAX_DEVICES)
        return -EINVAL;
    /* Read-write if allowed, so that dead processes' bytes are reclaimed before the sum. */
    ret = fatia_vgpu_region_open(&r, accounting_file, NULL, 0, NULL, 0);
    if (ret == 0) {
        fatia_vgpu_region_reclaim(&r);
    } else {
        ret =
            fatia_vgpu_region_open(&r, accounting_file, NULL, FATIA_VGPU_REGION_READ_ONLY, NULL, 0);
        if (ret < 0)
            return ret;
    }
    *ret_used = fatia_vgpu_region_used(&r, (int)dev);
    fatia_vgpu_region_close(&r);
    return 0;
}
