/*
 * vgpu/conffile.c: the interposer's configuration from a read-only file at a fixed path (see
 * conffile.h and docs/vgpu.md, "Configuration file").
 *
 * Model: the node agent writes one file per slice instance with the same KEY=VALUE pairs it would
 * otherwise put in the environment, and the container (or the pod's mount namespace) sees it
 * read-only at FATIA_VGPU_CONF_PATH, next to an /etc/ld.so.preload that names the library. Every
 * process then gets the same caps whatever its environment: `env -i`, a child that drops
 * LD_PRELOAD, an su or ssh session, a process started later. The values go through the same
 * parser as the environment (fatia_vgpu_config_load with a lookup over the file), so both paths
 * accept exactly the same values.
 *
 * Invariants: when the file exists, the environment's FATIA_VGPU_* are never read; a file that
 * exists but cannot be read or parsed, has an unknown key, a key twice or a line without '='
 * caps every device at 0 (fail closed: HAMi's fail-open on an unreadable file is hole #777); a
 * CUDA ordinal the file does not name gets the smallest cap the file names, so that a tenant who
 * renumbers its devices with CUDA_VISIBLE_DEVICES finds no uncapped ordinal. No allocation: the
 * file is read into a fixed buffer (a constructor of any process may run this).
 *
 * Rejected: a path from the environment (the tenant would point it at its own file); the
 * library's own format (JSON would need a parser in every CUDA process for no gain).
 */
#include "base/compat.h"

#include "vgpu/conffile.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

static bool key_known(const char *k)
{
    static const char *const keys[] = {"FATIA_VGPU_MEMORY_LIMIT", "FATIA_VGPU_SHARED_FILE",
                                       "FATIA_VGPU_DEVICE_UUIDS", "FATIA_VGPU_LOG",
                                       "FATIA_VGPU_LOG_FILE"};
    const char *p = "FATIA_VGPU_MEMORY_LIMIT_";
    size_t n = strlen(p);

    for (size_t i = 0; i < FATIA_ARRAY_SIZE(keys); i++) {
        if (strcmp(k, keys[i]) == 0)
            return true;
    }
    if (strncmp(k, p, n) != 0 || !k[n])
        return false;
    if (k[n + 1] == '\0')
        return k[n] >= '0' && k[n] <= '9';
    return k[n] == '1' && k[n + 1] >= '0' && k[n + 1] <= '5' && k[n + 2] == '\0';
}

static int parse_error(struct fatia_vgpu_conffile *f, int line, const char *why)
{
    snprintf(f->error, sizeof(f->error), "line %d: %s", line, why);
    return -EINVAL;
}

int fatia_vgpu_conffile_parse(struct fatia_vgpu_conffile *f)
{
    char *p = f->text, *end = f->text + f->len;
    int line = 0;

    f->n = 0;
    f->error[0] = '\0';
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p)), *eq;

        line++;
        if (!nl)
            nl = end;
        *nl = '\0';
        if (memchr(p, '\0', (size_t)(nl - p)))
            return parse_error(f, line, "NUL byte");
        if (*p == '\0' || *p == '#') {
            p = nl + 1;
            continue;
        }
        eq = strchr(p, '=');
        if (!eq)
            return parse_error(f, line, "expected KEY=VALUE");
        *eq = '\0';
        if (!key_known(p))
            return parse_error(f, line, "unknown key");
        if (fatia_vgpu_conffile_get(f, p))
            return parse_error(f, line, "key given twice");
        if (f->n == FATIA_VGPU_CONF_MAX_KEYS)
            return parse_error(f, line, "too many keys");
        f->key[f->n] = p;
        f->value[f->n] = eq + 1;
        f->n++;
        p = nl + 1;
    }
    return 0;
}

const char *fatia_vgpu_conffile_get(void *ctx, const char *name)
{
    const struct fatia_vgpu_conffile *f = ctx;

    for (int i = 0; i < f->n; i++) {
        if (strcmp(f->key[i], name) == 0)
            return f->value[i];
    }
    return NULL;
}

static int read_all(const char *path, struct fatia_vgpu_conffile *f)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    size_t len = 0;
    int ret = 0;

    if (fd < 0)
        return -errno;
    for (;;) {
        ssize_t n = read(fd, f->text + len, sizeof(f->text) - 1 - len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            ret = -errno;
            goto out;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len == sizeof(f->text) - 1) {
            ret = -EFBIG;
            goto out;
        }
    }
    f->text[len] = '\0';
    f->len = len;
out:
    close(fd);
    return ret;
}

static void cap_all_at_zero(struct fatia_vgpu_config *cfg, const char *path, const char *why)
{
    for (int i = 0; i < FATIA_VGPU_MAX_DEVICES; i++)
        cfg->limit[i] = 0;
    cfg->any_limit = true;
    if (cfg->n_errors++ == 0)
        snprintf(cfg->first_error, sizeof(cfg->first_error),
                 "%.64s: %.80s, capping every device at 0", path, why);
}

int fatia_vgpu_config_load_file(struct fatia_vgpu_config *cfg, const char *path)
{
    static struct fatia_vgpu_conffile f; /* 8 KiB: kept off the stack of arbitrary threads */
    static const uint64_t none = FATIA_VGPU_NO_LIMIT;
    uint64_t smallest = none;
    int r = read_all(path, &f);

    if (r == -ENOENT || r == -ENOTDIR)
        return -ENOENT;
    if (r == 0)
        r = fatia_vgpu_conffile_parse(&f);
    else
        snprintf(f.error, sizeof(f.error), "%s",
                 r == -EACCES  ? "cannot be read (permission denied)"
                 : r == -EFBIG ? "larger than the 8 KiB allowed"
                               : "cannot be read");
    if (r < 0) {
        memset(cfg, 0, sizeof(*cfg));
        cap_all_at_zero(cfg, path, f.error);
        return r;
    }
    fatia_vgpu_config_load(cfg, fatia_vgpu_conffile_get, &f);
    cfg->from_file = true;
    for (int i = 0; i < FATIA_VGPU_MAX_DEVICES; i++) {
        if (cfg->limit[i] < smallest)
            smallest = cfg->limit[i];
    }
    for (int i = 0; i < FATIA_VGPU_MAX_DEVICES; i++) {
        if (cfg->limit[i] == none)
            cfg->limit[i] = smallest;
    }
    return 0;
}
