/*
 * agent/logs.c: `kubectl logs POD [-c C] [-f] [--tail N] [--previous] [--timestamps]
 * [--since D] [--limit-bytes N]`: the API server's pod log provider over the CRI files the shims
 * write (crilog.h).
 *
 * Which file: the container's current instance is number restartCount (its log is
 * <logs>/<ns>_<pod>_<uid>/<container>/<restartCount>.log, after its rotated part .log.1);
 * --previous is the one before it. A reader is a small state machine driven by a timer on the
 * loop, so a large log is sent in slices (at most 1 MiB per turn of the loop) and a follower
 * polls its file four times a second:
 *
 *   start (tail: count entries, skip all but the last N) -> read .log.1 -> read .log -> EOF:
 *     not following, or the instance ended (restarted, terminated, pod gone) -> end
 *     following -> wait 250 ms (or a poke from the agent) -> file rotated? drain the old
 *     descriptor, open the new file -> read again
 *
 * Only complete lines are sent: a line still being written waits for its '\n'.
 */
#include "base/compat.h"

#include <sys/stat.h>

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "agent/crilog.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "client/plugin.h"

#define CHUNK     (256 * 1024)
#define TURN_MAX  (1024 * 1024)
#define FOLLOW_MS 250

struct follower {
    struct fatia_agent *a;
    struct fatia_log_stream *st;
    char uid[128];
    char container[256];
    int64_t attempt;
    char path[4400]; /* <attempt>.log */
    int fd;
    ino_t ino;
    bool on_rotated; /* reading <attempt>.log.1 */
    struct fatia_buf line;
    bool follow, timestamps;
    int64_t limit_left; /* -1: no limit */
    fatia_usec_t since; /* 0: from the start */
    int64_t skip;       /* entries still to skip (tail) */
    bool cancelled, ended;
    struct event *ev;
    struct follower *next;
};

static void f_free(struct follower *f)
{
    struct follower **pp;

    for (pp = &f->a->followers; *pp; pp = &(*pp)->next) {
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    }
    if (f->fd >= 0)
        close(f->fd);
    if (f->ev)
        event_free(f->ev);
    fatia_buf_release(&f->line);
    fatia_free(f);
}

static void f_end(struct follower *f)
{
    if (!f->ended) {
        f->ended = true;
        fatia_log_stream_end(f->st);
    }
    f_free(f);
}

static void f_cancel(void *arg)
{
    struct follower *f = arg;

    f->cancelled = true;
    event_active(f->ev, EV_TIMEOUT, 0);
}

/* Sends one entry. Returns false when the stream is over (client gone, limit reached). */
static bool emit(struct follower *f, const char *line, size_t n)
{
    struct fatia_crilog_entry e;
    char out[FATIA_CRILOG_MAX_LINE + 128];
    size_t len = 0;

    if (fatia_crilog_parse(line, n, &e) < 0)
        return true; /* not ours: skip */
    if (f->skip > 0) {
        f->skip--;
        return true;
    }
    if (f->since && e.t < f->since)
        return true;
    if (f->timestamps) {
        memcpy(out, e.ts, e.ts_len);
        len = e.ts_len;
        out[len++] = ' ';
    }
    if (e.msg_len > FATIA_CRILOG_MAX_LINE)
        e.msg_len = FATIA_CRILOG_MAX_LINE;
    memcpy(out + len, e.msg, e.msg_len);
    len += e.msg_len;
    if (!e.partial)
        out[len++] = '\n';
    if (f->limit_left >= 0 && (int64_t)len > f->limit_left)
        len = (size_t)f->limit_left;
    if (len && fatia_log_stream_write(f->st, out, len) < 0)
        return false;
    if (f->limit_left >= 0) {
        f->limit_left -= (int64_t)len;
        if (f->limit_left == 0)
            return false;
    }
    return true;
}

/* Reads what the current file has now; returns bytes read (0 at EOF), or -1 when the stream is
 * over. */
static ssize_t read_some(struct follower *f, size_t max)
{
    char buf[CHUNK];
    ssize_t total = 0;

    while ((size_t)total < max) {
        ssize_t n = read(f->fd, buf, sizeof(buf));
        size_t start = 0;

        if (n <= 0)
            break;
        total += n;
        for (size_t i = 0; i < (size_t)n; i++) {
            if (buf[i] != '\n')
                continue;
            if (f->line.len) {
                if (fatia_buf_append(&f->line, buf + start, i - start) < 0)
                    fatia_buf_reset(&f->line);
                if (!emit(f, f->line.p, f->line.len))
                    return -1;
                fatia_buf_reset(&f->line);
            } else if (!emit(f, buf + start, i - start)) {
                return -1;
            }
            start = i + 1;
        }
        if (start < (size_t)n && fatia_buf_append(&f->line, buf + start, (size_t)n - start) < 0)
            fatia_buf_reset(&f->line);
    }
    return total;
}

static int open_file(struct follower *f, const char *path)
{
    struct stat sb;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

    if (fd < 0)
        return -errno;
    if (f->fd >= 0)
        close(f->fd);
    f->fd = fd;
    f->ino = fstat(fd, &sb) == 0 ? sb.st_ino : 0;
    fatia_buf_reset(&f->line);
    return 0;
}

/* Whether the instance this reader follows has ended (or its pod is gone). */
static bool instance_over(struct follower *f)
{
    struct apod *p = fatia_agent_pod(f->a, f->uid);
    const char *lists[] = {"containers", "initContainers"};

    if (!p || !p->shim || p->st == AP_DONE)
        return true;
    for (int k = 0; k < 2; k++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(p->shim, lists[k]), i, c)
        {
            int64_t rc = 0;
            const char *n = fatia_json_str(c, "name");
            if (!n || strcmp(n, f->container))
                continue;
            (void)fatia_json_int(c, "restartCount", &rc);
            return rc != f->attempt || !json_object_get(json_object_get(c, "state"), "running");
        }
    }
    return true;
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct follower *f = arg;
    struct timeval tv = {0, FOLLOW_MS * 1000};
    ssize_t n;

    (void)fd;
    (void)what;
    if (f->cancelled || f->a->stopping) {
        f_end(f);
        return;
    }
    n = f->fd >= 0 ? read_some(f, TURN_MAX) : 0;
    if (n < 0) {
        f_end(f);
        return;
    }
    if (n > 0) {
        /* more may be there: come back at once, after others had a turn */
        event_active(f->ev, EV_TIMEOUT, 0);
        return;
    }
    if (f->on_rotated) {
        f->on_rotated = false;
        if (open_file(f, f->path) < 0 && !f->follow) {
            f_end(f);
            return;
        }
        event_active(f->ev, EV_TIMEOUT, 0);
        return;
    }
    if (!f->follow) {
        f_end(f);
        return;
    }
    {
        struct stat sb;
        if (stat(f->path, &sb) == 0 && sb.st_ino != f->ino) {
            /* rotated: what was written before the rename is read; now the new file */
            if (open_file(f, f->path) == 0) {
                event_active(f->ev, EV_TIMEOUT, 0);
                return;
            }
        }
    }
    if (instance_over(f)) {
        /* one last read: the shim writes the log before it records the exit */
        if (f->fd >= 0 && read_some(f, TURN_MAX) < 0) {
            f_end(f);
            return;
        }
        f_end(f);
        return;
    }
    event_add(f->ev, &tv);
}

/* Entries (lines) in a file, for --tail. */
static int64_t count_entries(const char *path)
{
    char buf[CHUNK];
    int64_t n = 0;
    ssize_t r;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

    if (fd < 0)
        return 0;
    while ((r = read(fd, buf, sizeof(buf))) > 0) {
        for (ssize_t i = 0; i < r; i++)
            n += buf[i] == '\n';
    }
    close(fd);
    return n;
}

static const json_t *find_ctr(const json_t *arr, const char *name)
{
    size_t i;
    json_t *c;

    json_array_foreach(arr, i, c)
    {
        const char *n = fatia_json_str(c, "name");
        if (n && !strcmp(n, name))
            return c;
    }
    return NULL;
}

int fatia_agent_logs_provider(void *arg, const struct fatia_log_req *req,
                              struct fatia_log_stream *st)
{
    struct fatia_agent *a = arg;
    const json_t *spec = json_object_get(req->pod, "spec");
    const char *uid = fatia_json_str(json_object_get(req->pod, "metadata"), "uid");
    const char *name = req->container;
    const json_t *sc;
    struct follower *f;
    struct apod *p;
    char dir[2048], rotated[4500];
    int64_t rc = 0;

    if (!name)
        name = fatia_json_str(json_array_get(json_object_get(spec, "containers"), 0), "name");
    if (!name || (!find_ctr(json_object_get(spec, "containers"), name) &&
                  !find_ctr(json_object_get(spec, "initContainers"), name)))
        return -ENOENT;
    p = fatia_agent_pod(a, uid);
    if (!p || !p->shim || !p->local)
        return -EAGAIN;
    sc = find_ctr(json_object_get(p->shim, "containers"), name);
    if (!sc)
        sc = find_ctr(json_object_get(p->shim, "initContainers"), name);
    if (!sc || !fatia_json_str(sc, "containerID"))
        return -EAGAIN; /* never started */
    (void)fatia_json_int(sc, "restartCount", &rc);
    if (req->previous) {
        rc--;
        if (rc < 0)
            return -ESRCH;
    }
    f = fatia_calloc(1, sizeof(*f));
    if (!f)
        return -ENOMEM;
    f->a = a;
    f->st = st;
    f->fd = -1;
    fatia_buf_init(&f->line, FATIA_CRILOG_MAX_LINE + 256);
    snprintf(f->uid, sizeof(f->uid), "%s", uid);
    snprintf(f->container, sizeof(f->container), "%s", name);
    f->attempt = rc;
    f->follow = req->follow && !req->previous;
    f->timestamps = req->timestamps;
    f->limit_left = req->limit_bytes > 0 ? req->limit_bytes : -1;
    if (req->since_seconds > 0)
        f->since = fatia_now_real_usec() - req->since_seconds * FATIA_USEC_PER_SEC;
    fatia_agent_log_dir(a, p, dir, sizeof(dir));
    snprintf(f->path, sizeof(f->path), "%s/%s/%" PRId64 ".log", dir, name, rc);
    snprintf(rotated, sizeof(rotated), "%s.1", f->path);
    if (access(f->path, F_OK) < 0 && access(rotated, F_OK) < 0) {
        fatia_buf_release(&f->line);
        fatia_free(f);
        return req->previous ? -ESRCH : -EAGAIN;
    }
    if (req->tail_lines >= 0) {
        int64_t total = count_entries(rotated) + count_entries(f->path);
        f->skip = total > req->tail_lines ? total - req->tail_lines : 0;
    }
    if (open_file(f, rotated) == 0)
        f->on_rotated = true;
    else
        (void)open_file(f, f->path);
    f->ev = event_new(a->base, -1, 0, on_timer, f);
    if (!f->ev) {
        if (f->fd >= 0)
            close(f->fd);
        fatia_buf_release(&f->line);
        fatia_free(f);
        return -ENOMEM;
    }
    f->next = a->followers;
    a->followers = f;
    fatia_log_stream_set_cancel(st, f_cancel, f);
    event_active(f->ev, EV_TIMEOUT, 0);
    return 0;
}

void fatia_agent_logs_stop_all(struct fatia_agent *a)
{
    while (a->followers)
        f_end(a->followers);
}

void fatia_agent_logs_poke(struct fatia_agent *a)
{
    for (struct follower *f = a->followers; f; f = f->next) {
        if (f->follow && f->ev)
            event_active(f->ev, EV_TIMEOUT, 0);
    }
}
