/*
 * agent/shim_storage.c: an emptyDir's usage against its sizeLimit (see shim_storage.h).
 *
 * The walk holds one directory descriptor per level (openat with O_NOFOLLOW | O_DIRECTORY from
 * its parent's, so a directory swapped for a symbolic link between the listing and the open is
 * refused, not followed); inodes already counted are kept in a small open-addressing set, only
 * for files with more than one link.
 */
#include "base/compat.h"

#include "agent/shim_storage.h"

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "base/alloc.h"

struct walk {
    struct fatia_shim_storage_use *u;
    dev_t dev;
    uint64_t *seen; /* inode numbers of multiply linked files, 0 = empty slot */
    size_t cap, n;
};

/* Whether ino was counted already (and marks it). Out of memory: counted again (over-counts). */
static bool seen_before(struct walk *w, uint64_t ino)
{
    if (ino == 0)
        ino = UINT64_MAX;
    if (w->n * 2 >= w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 1024;
        uint64_t *s = fatia_calloc(cap, sizeof(*s));
        if (!s)
            return false;
        for (size_t i = 0; i < w->cap; i++) {
            if (!w->seen[i])
                continue;
            size_t k = (size_t)(w->seen[i] * 0x9E3779B97F4A7C15ull) & (cap - 1);
            while (s[k])
                k = (k + 1) & (cap - 1);
            s[k] = w->seen[i];
        }
        fatia_free(w->seen);
        w->seen = s;
        w->cap = cap;
    }
    size_t k = (size_t)(ino * 0x9E3779B97F4A7C15ull) & (w->cap - 1);
    while (w->seen[k]) {
        if (w->seen[k] == ino)
            return true;
        k = (k + 1) & (w->cap - 1);
    }
    w->seen[k] = ino;
    w->n++;
    return false;
}

static void walk_dir(struct walk *w, int fd, unsigned depth)
{
    DIR *d = fdopendir(fd);
    struct dirent *e;

    if (!d) {
        close(fd);
        return;
    }
    while ((e = readdir(d))) {
        struct stat st;

        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (++w->u->entries > FATIA_SHIM_STORAGE_ENTRIES) {
            w->u->too_many = true;
            break;
        }
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue; /* gone meanwhile */
        if (st.st_dev != w->dev)
            continue; /* a mount point below the volume: not its bytes */
        if (!S_ISDIR(st.st_mode) && st.st_nlink > 1 && seen_before(w, (uint64_t)st.st_ino))
            continue;
        w->u->bytes += (uint64_t)st.st_blocks * 512;
        if (!S_ISDIR(st.st_mode))
            continue;
        if (depth + 1 >= FATIA_SHIM_STORAGE_DEPTH) {
            w->u->too_deep = true;
            continue;
        }
        int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0)
            walk_dir(w, sub, depth + 1);
        if (w->u->too_many)
            break;
    }
    closedir(d);
}

int fatia_shim_storage_measure(const char *path, struct fatia_shim_storage_use *ret)
{
    struct walk w = {.u = ret};
    struct stat st;
    int fd;

    memset(ret, 0, sizeof(*ret));
    fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0) {
        int r = -errno;
        close(fd);
        return r;
    }
    w.dev = st.st_dev;
    walk_dir(&w, fd, 0);
    fatia_free(w.seen);
    return 0;
}

bool fatia_shim_storage_over(const struct fatia_shim_storage_use *use, uint64_t limit,
                             const char *name, const char *limit_text, char *msg, size_t n)
{
    if (use->too_deep || use->too_many) {
        snprintf(msg, n,
                 "Usage of EmptyDir volume \"%s\" cannot be measured within its limit \"%s\": "
                 "%s.",
                 name, limit_text,
                 use->too_deep ? "its tree is deeper than 128 directories"
                               : "it holds more than 1000000 entries");
        return true;
    }
    if (use->bytes <= limit)
        return false;
    snprintf(msg, n, "Usage of EmptyDir volume \"%s\" exceeds the limit \"%s\".", name, limit_text);
    return true;
}
