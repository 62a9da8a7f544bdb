/*
 * agent/uidmap.c: namespace → uid (see uidmap.h).
 *
 * The state file is append-only ("NAMESPACE UID" lines): a uid once given is never given again,
 * even after its namespace is deleted, so files a former namespace left behind are never readable
 * by a new one. Appends are fsynced before the uid is used.
 *
 * Rejected: a hash of the namespace name into the range (no state, but two names can collide,
 * and a collision is exactly the isolation failure the mapping exists to prevent).
 */
#include "base/compat.h"

#include "agent/uidmap.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/error.h"

static int add(struct fatia_uidmap *m, const char *ns, uint32_t uid, uint32_t gid)
{
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 16;
        struct fatia_uidmap_entry *v = fatia_reallocarray(m->v, cap, sizeof(*v));
        if (!v)
            return -ENOMEM;
        m->v = v;
        m->cap = cap;
    }
    m->v[m->n].ns = fatia_strdup(ns);
    if (!m->v[m->n].ns)
        return -ENOMEM;
    m->v[m->n].uid = uid;
    m->v[m->n].gid = gid;
    m->n++;
    return 0;
}

static int load_file(struct fatia_uidmap *m, const char *path, bool fixed, char *why, size_t why_n)
{
    FILE *f = fopen(path, "re");
    char line[512];
    int lineno = 0, r = 0;

    if (!f) {
        if (!fixed && errno == ENOENT)
            return 0;
        r = -errno;
        snprintf(why, why_n, "'%s': %s", path, fatia_strerror(r));
        return r;
    }
    while (fgets(line, sizeof(line), f)) {
        char ns[300];
        unsigned long uid, gid;
        int n;
        char *hash = strchr(line, '#');

        lineno++;
        if (hash)
            *hash = '\0';
        if (sscanf(line, " %299s", ns) != 1)
            continue;
        n = sscanf(line, " %*s %lu:%lu", &uid, &gid);
        if (n == 1)
            gid = uid;
        if (n < 1 || uid == 0 || uid > 0x7fffffffUL || gid == 0 || gid > 0x7fffffffUL) {
            snprintf(why, why_n, "'%s' line %d: expected NAMESPACE UID[:GID] with ids above 0",
                     path, lineno);
            r = -FATIA_E_PARSE;
            break;
        }
        r = add(m, ns, (uint32_t)uid, (uint32_t)gid);
        if (r < 0)
            break;
    }
    fclose(f);
    return r;
}

int fatia_uidmap_load(struct fatia_uidmap *m, const char *map_file, const char *state_file,
                      uint32_t base, uint32_t count, char *why, size_t why_n)
{
    int r;

    *m = (struct fatia_uidmap){.base = base ? base : FATIA_UIDMAP_DEFAULT_BASE,
                               .count = count ? count : FATIA_UIDMAP_DEFAULT_COUNT};
    snprintf(m->state_path, sizeof(m->state_path), "%s", state_file);
    if (map_file && (r = load_file(m, map_file, true, why, why_n)) < 0)
        goto fail;
    m->n_fixed = m->n;
    if ((r = load_file(m, state_file, false, why, why_n)) < 0)
        goto fail;
    return 0;
fail:
    fatia_uidmap_release(m);
    return r;
}

static bool taken(const struct fatia_uidmap *m, uint32_t uid)
{
    for (size_t i = 0; i < m->n; i++) {
        if (m->v[i].uid == uid || m->v[i].gid == uid)
            return true;
    }
    return false;
}

int fatia_uidmap_get(struct fatia_uidmap *m, const char *ns, uint32_t *ret_uid, uint32_t *ret_gid)
{
    char line[400];
    uint32_t uid = 0;
    int fd, r, n;

    for (size_t i = 0; i < m->n; i++) {
        if (!strcmp(m->v[i].ns, ns)) {
            *ret_uid = m->v[i].uid;
            *ret_gid = m->v[i].gid;
            return 0;
        }
    }
    for (uint32_t k = 0; k < m->count; k++) {
        if (!taken(m, m->base + k)) {
            uid = m->base + k;
            break;
        }
    }
    if (!uid)
        return -ENOSPC;
    n = snprintf(line, sizeof(line), "%s %u\n", ns, uid);
    if (n < 0 || (size_t)n >= sizeof(line))
        return -ENAMETOOLONG;
    fd = open(m->state_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    r = write(fd, line, (size_t)n) == n ? 0 : -EIO;
    if (r == 0 && fsync(fd) < 0)
        r = -errno;
    close(fd);
    if (r < 0)
        return r;
    r = add(m, ns, uid, uid);
    if (r < 0)
        return r;
    *ret_uid = *ret_gid = uid;
    return 0;
}

void fatia_uidmap_release(struct fatia_uidmap *m)
{
    for (size_t i = 0; i < m->n; i++)
        fatia_free(m->v[i].ns);
    fatia_free(m->v);
    m->v = NULL;
    m->n = m->cap = m->n_fixed = 0;
}
