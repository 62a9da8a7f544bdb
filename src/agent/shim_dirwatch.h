/*
 * agent/shim_dirwatch.h: whether fatia-shim's pod directory is still there (see shim_dirwatch.c).
 * The shim outlives fatiad on purpose (a restarted fatiad adopts it); it must not outlive the pod
 * directory it was started on, whose removal (rm -rf of the data directory) ends the pod.
 */
#ifndef FATIA_AGENT_SHIM_DIRWATCH_H
#define FATIA_AGENT_SHIM_DIRWATCH_H

#include <sys/stat.h>
#include <sys/types.h>

#include <stdbool.h>

/* How often the directory is checked without an event: with the inotify watch (a safety net,
 * and the only way to see an ancestor renamed), and without one (no inotify instance left:
 * fs.inotify.max_user_instances, 128 by default, is per user and every shim runs as root). */
#define FATIA_SHIM_DIRWATCH_PERIOD_S   60
#define FATIA_SHIM_DIRWATCH_FALLBACK_S 5
#define FATIA_SHIM_DIRWATCH_RETRY_MS   1000 /* after a check that could not tell */

enum fatia_shim_dir_verdict {
    FATIA_SHIM_DIR_HERE,    /* the path names the directory opened at start, which is linked */
    FATIA_SHIM_DIR_GONE,    /* removed: unlinked, or its path names nothing or something else */
    FATIA_SHIM_DIR_UNKNOWN, /* a check failed in a way that says nothing (EINTR, ENOMEM, ...) */
};

/*
 * The rule (pure). opened: fstat(2) of the descriptor opened at start (fstat_r 0, or -errno);
 * now: stat(2) of the path (stat_r 0, or -errno); dev/ino: what the descriptor named at start.
 * GONE only for the directory's own removal: st_nlink 0, or the path failing with ENOENT or
 * ENOTDIR, or naming another inode. Any other error is UNKNOWN. *why: a few words for the log.
 */
enum fatia_shim_dir_verdict fatia_shim_dir_judge(dev_t dev, ino_t ino, int fstat_r,
                                                 const struct stat *opened, int stat_r,
                                                 const struct stat *now, const char **why);

struct fatia_shim_dirwatch {
    char path[4096];
    const char *name; /* the last component of path */
    int dir_fd;       /* the directory, opened at start */
    dev_t dev;
    ino_t ino;
    int ino_fd; /* inotify on the parent (and the directory); -1: none (the timer only) */
};

/* Opens path (a directory) and watches it. -errno when it cannot be opened; no inotify is not an
 * error (ino_fd stays -1 and a warning says why). */
int fatia_shim_dirwatch_open(struct fatia_shim_dirwatch *w, const char *path);
void fatia_shim_dirwatch_close(struct fatia_shim_dirwatch *w);

/* Reads the pending inotify events; true when one may be the directory's removal (a check is
 * due). Never blocks. */
bool fatia_shim_dirwatch_events(struct fatia_shim_dirwatch *w);

/* Checks now (fstat, stat: no event needed). */
enum fatia_shim_dir_verdict fatia_shim_dirwatch_check(const struct fatia_shim_dirwatch *w,
                                                      const char **why);

/* Seconds between checks when no event comes. */
int fatia_shim_dirwatch_period_s(const struct fatia_shim_dirwatch *w);

#endif
