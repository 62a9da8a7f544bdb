/*
 * agent/vgpu_slice.c: the node agent's side of the memory-cap interposer (see vgpu_slice.h).
 *
 * The agent writes the caps twice on purpose: into the accounting file (the authority once it
 * exists, so that a process cannot raise its slice's cap by changing its own environment) and
 * into the environment (which tells the library which devices are capped, and lets a process
 * that starts before the file exists create it with the same caps).
 *
 * The configuration file (fatia_agent_vgpu_slice_conf) carries the same pairs for a container or
 * mount namespace that sees it read-only at FATIA_VGPU_CONF_PATH: there the environment is
 * ignored, so what the tenant does to its environment changes nothing.
 *
 * Rejected: an agent-side daemon that processes ask for memory over a socket (a round trip on
 * every cudaMalloc, and a single point whose death stops every slice on the node).
 */
#include "base/compat.h"

#include "agent/vgpu_slice.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "vgpu/conffile.h"
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

int fatia_agent_vgpu_slice_conf(const struct fatia_vgpu_slice *s, const char *acct_in_container,
                                char *buf, size_t n)
{
    size_t len = 0;
    int r = check(s);

    if (r < 0)
        return r;
    if (!acct_in_container)
        acct_in_container = s->accounting_file;
    if (acct_in_container[0] != '/' || strchr(acct_in_container, '\n') ||
        strlen(acct_in_container) >= FATIA_VGPU_PATH_MAX)
        return -EINVAL;
#define ADD(...)                                                          \
    do {                                                                  \
        int w_ = snprintf(buf + len, len < n ? n - len : 0, __VA_ARGS__); \
        if (w_ < 0 || (size_t)w_ >= (len < n ? n - len : 0))              \
            return -ENAMETOOLONG;                                         \
        len += (size_t)w_;                                                \
    } while (0)
    ADD("# written by the fatia node agent: libfatia-vgpu.so's configuration (docs/vgpu.md)\n");
    ADD("FATIA_VGPU_SHARED_FILE=%s\n", acct_in_container);
    ADD("FATIA_VGPU_DEVICE_UUIDS=");
    for (unsigned i = 0; i < s->n_devices; i++)
        ADD("%s%s", i ? "," : "", s->uuids[i]);
    ADD("\n");
    for (unsigned i = 0; i < s->n_devices; i++) {
        if (s->cap[i] != FATIA_VGPU_NO_LIMIT)
            ADD("FATIA_VGPU_MEMORY_LIMIT_%u=%" PRIu64 "\n", i, s->cap[i]);
    }
    if (s->log_level && s->log_level[0] && !strchr(s->log_level, '\n'))
        ADD("FATIA_VGPU_LOG=%s\n", s->log_level);
#undef ADD
    return 0;
}

int fatia_agent_vgpu_write_ro(const char *path, const char *text)
{
    char tmp[FATIA_VGPU_PATH_MAX + 16];
    size_t len = strlen(text), off = 0;
    int fd, r = 0;

    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
        return -ENAMETOOLONG;
    (void)unlink(tmp);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0444);
    if (fd < 0)
        return -errno;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);

        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            r = -errno;
            break;
        }
        off += (size_t)w;
    }
    if (r == 0 && fchmod(fd, 0444) < 0)
        r = -errno;
    if (close(fd) < 0 && r == 0)
        r = -errno;
    if (r == 0 && rename(tmp, path) < 0)
        r = -errno;
    if (r < 0)
        (void)unlink(tmp);
    return r;
}
