/*
 * agent/shim_dirwatch.c: fatia-shim notices that its pod directory was removed (shim_dirwatch.h).
 *
 * Model. The shim is started as `fatia-shim POD_DIR` and outlives fatiad on purpose (a restarted
 * fatiad adopts it, as conmon outlives CRI-O), so "fatiad died" is no reason to stop. "POD_DIR is
 * gone" is: nobody can adopt the pod any more (its spec, logs and status are gone), and its
 * sandbox would otherwise hold its network namespace, and so its CNI lease (cni_reclaim.c counts
 * a lease live while its shim runs), for ever. The shim opens POD_DIR at start and records its
 * device and inode; the directory is gone when that inode is unlinked (st_nlink 0), or when the
 * path fails with ENOENT/ENOTDIR or names another inode (POD_DIR or an ancestor moved away).
 * Nothing else is: an error such as EINTR, ENOMEM, EIO or ESTALE says nothing, and the check is
 * tried again a second later (FATIA_SHIM_DIRWATCH_RETRY_MS).
 *
 * When. The shim has a poll() loop, so an inotify descriptor in it costs nothing while nothing
 * happens: a watch on POD_DIR's parent (DATA/agent/pods) for IN_DELETE and IN_MOVED_FROM of
 * POD_DIR's name, and for the parent's own IN_DELETE_SELF, IN_MOVE_SELF, IN_UNMOUNT and
 * IN_IGNORED; any of those, or a queue overflow, makes the shim check (never the event alone: it
 * only says when to look). A check also runs every FATIA_SHIM_DIRWATCH_PERIOD_S on the loop's
 * timer (the only way to see an ancestor above the parent renamed), and every
 * FATIA_SHIM_DIRWATCH_FALLBACK_S when no inotify instance could be had (fs.inotify.
 * max_user_instances is per user, 128 by default, and every shim of the host runs as root).
 *
 * Invariants: no I/O but fstat/stat/inotify, no clock (the shim owns the timer); the rule
 * (fatia_shim_dir_judge) is pure; every descriptor is close-on-exec (a container inherits none).
 *
 * Rejected: IN_DELETE_SELF on POD_DIR itself. Measured on this kernel (6.18): it never comes
 * while the shim runs, because the shim's own open files in POD_DIR (its lock, the containers'
 * logs, the directory descriptor) keep POD_DIR's dentry referenced, and the kernel sends
 * IN_DELETE_SELF only when the last reference goes, which is when the shim exits. The parent's
 * IN_DELETE comes at rmdir(2) time. Also rejected: polling the path in a hot loop (100 pods on a
 * node would wake 100 processes for nothing), PR_SET_PDEATHSIG or watching fatiad (a fatiad
 * restart must not stop its pods), and the agent killing orphan shims (cni_reclaim.c: a shim of
 * another fatiad, which no agent may end on a guess; the shim itself knows its directory).
 */
#include "base/compat.h"

#include "agent/shim_dirwatch.h"

#include <sys/inotify.h>

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "base/error.h"
#include "base/log.h"

/* ---- the rule (pure) ---- */

enum fatia_shim_dir_verdict fatia_shim_dir_judge(dev_t dev, ino_t ino, int fstat_r,
                                                 const struct stat *opened, int stat_r,
                                                 const struct stat *now, const char **why)
{
    const char *dummy;

    if (!why)
        why = &dummy;
    if (fstat_r == 0 && opened->st_nlink == 0) {
        *why = "it was deleted";
        return FATIA_SHIM_DIR_GONE;
    }
    if (stat_r == -ENOENT || stat_r == -ENOTDIR) {
        *why = "its path names nothing";
        return FATIA_SHIM_DIR_GONE;
    }
    if (stat_r == 0 && (now->st_dev != dev || now->st_ino != ino)) {
        *why = "its path names another directory";
        return FATIA_SHIM_DIR_GONE;
    }
    if (fstat_r < 0 || stat_r < 0) {
        *why = "a check failed";
        return FATIA_SHIM_DIR_UNKNOWN;
    }
    *why = "it is there";
    return FATIA_SHIM_DIR_HERE;
}

/* ---- the watch ---- */

int fatia_shim_dirwatch_open(struct fatia_shim_dirwatch *w, const char *path)
{
    char parent[4096], *slash;
    struct stat st;
    int r;

    *w = (struct fatia_shim_dirwatch){.dir_fd = -1, .ino_fd = -1};
    snprintf(w->path, sizeof(w->path), "%s", path);
    /* no trailing slash: the name is what the parent's events carry */
    for (size_t n = strlen(w->path); n > 1 && w->path[n - 1] == '/'; n--)
        w->path[n - 1] = '\0';
    slash = strrchr(w->path, '/');
    w->name = slash ? slash + 1 : w->path;
    w->dir_fd = open(w->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (w->dir_fd < 0 || fstat(w->dir_fd, &st) < 0) {
        r = -errno;
        fatia_shim_dirwatch_close(w);
        return fatia_log_errno(FATIA_LOG_ERROR, r, "cannot open the pod directory '%s'", path);
    }
    w->dev = st.st_dev;
    w->ino = st.st_ino;
    if (!slash)
        snprintf(parent, sizeof(parent), ".");
    else if (slash == w->path)
        snprintf(parent, sizeof(parent), "/");
    else
        snprintf(parent, sizeof(parent), "%.*s", (int)(slash - w->path), w->path);
    w->ino_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (w->ino_fd < 0) {
        fatia_log_errno(FATIA_LOG_WARNING, -errno,
                        "no inotify for '%s': checking it every %d s instead", w->path,
                        FATIA_SHIM_DIRWATCH_FALLBACK_S);
        return 0;
    }
    if (inotify_add_watch(w->ino_fd, parent,
                          IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR) <
        0) {
        fatia_log_errno(FATIA_LOG_WARNING, -errno,
                        "cannot watch '%s': checking '%s' every %d s instead", parent, w->path,
                        FATIA_SHIM_DIRWATCH_FALLBACK_S);
        close(w->ino_fd);
        w->ino_fd = -1;
    }
    return 0;
}

void fatia_shim_dirwatch_close(struct fatia_shim_dirwatch *w)
{
    if (w->dir_fd >= 0)
        close(w->dir_fd);
    if (w->ino_fd >= 0)
        close(w->ino_fd);
    w->dir_fd = w->ino_fd = -1;
}

bool fatia_shim_dirwatch_events(struct fatia_shim_dirwatch *w)
{
    char buf[4096];
    bool due = false;
    ssize_t n;

    if (w->ino_fd < 0)
        return false;
    while ((n = read(w->ino_fd, buf, sizeof(buf))) > 0) {
        for (size_t at = 0; at + sizeof(struct inotify_event) <= (size_t)n;) {
            struct inotify_event e;
            const char *name = buf + at + sizeof(e);
            memcpy(&e, buf + at, sizeof(e)); /* the buffer is not aligned for it */
            if (e.mask & (IN_Q_OVERFLOW | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_IGNORED))
                due = true;
            else if ((e.mask & (IN_DELETE | IN_MOVED_FROM)) && e.len > 0 &&
                     at + sizeof(e) + e.len <= (size_t)n && strnlen(name, e.len) < e.len &&
                     !strcmp(name, w->name))
                due = true;
            at += sizeof(e) + e.len;
        }
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR)
        due = true; /* cannot read the events: look */
    return due;
}

enum fatia_shim_dir_verdict fatia_shim_dirwatch_check(const struct fatia_shim_dirwatch *w,
                                                      const char **why)
{
    struct stat opened, now;
    int fr = 0, sr = 0;

    if (w->dir_fd < 0) {
        if (why)
            *why = "not watched";
        return FATIA_SHIM_DIR_UNKNOWN;
    }
    if (fstat(w->dir_fd, &opened) < 0)
        fr = -errno;
    if (stat(w->path, &now) < 0)
        sr = -errno;
    return fatia_shim_dir_judge(w->dev, w->ino, fr, &opened, sr, &now, why);
}

int fatia_shim_dirwatch_period_s(const struct fatia_shim_dirwatch *w)
{
    return w->ino_fd >= 0 ? FATIA_SHIM_DIRWATCH_PERIOD_S : FATIA_SHIM_DIRWATCH_FALLBACK_S;
}
