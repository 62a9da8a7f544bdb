/*
 * agent/crilog.c: CRI log files (see crilog.h).
 *
 * Each entry is built in one buffer and written with one write(2) on an O_APPEND descriptor, so
 * a reader never sees half an entry unless the disk fills; readers ignore a last line without
 * '\n' until it completes.
 *
 * Rejected: stdio buffering (a follower would see output late), and one file per stream (the
 * interleaving of stdout and stderr that `kubectl logs` shows would be lost).
 */
#include "base/compat.h"

#include "agent/crilog.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "base/error.h"

int fatia_crilog_open(struct fatia_crilog *l, const char *path, uint64_t max_bytes)
{
    off_t end;

    if (strlen(path) + 3 >= sizeof(l->path))
        return -ENAMETOOLONG;
    l->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0640);
    if (l->fd < 0)
        return -errno;
    end = lseek(l->fd, 0, SEEK_END);
    l->size = end > 0 ? (uint64_t)end : 0;
    l->max_bytes = max_bytes;
    snprintf(l->path, sizeof(l->path), "%s", path);
    return 0;
}

void fatia_crilog_close(struct fatia_crilog *l)
{
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
}

static int rotate(struct fatia_crilog *l)
{
    char old[sizeof(l->path) + 2];
    int fd;

    snprintf(old, sizeof(old), "%s.1", l->path);
    if (rename(l->path, old) < 0)
        return -errno;
    fd = open(l->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0640);
    if (fd < 0)
        return -errno;
    close(l->fd);
    l->fd = fd;
    l->size = 0;
    return 0;
}

int fatia_crilog_write(struct fatia_crilog *l, fatia_usec_t t, const char *stream, const char *msg,
                       size_t n, bool partial)
{
    char buf[FATIA_CRILOG_MAX_LINE + 128];
    size_t len;
    int h;

    if (l->fd < 0)
        return -EBADF;
    if (n > FATIA_CRILOG_MAX_LINE)
        n = FATIA_CRILOG_MAX_LINE;
    h = fatia_time_format_rfc3339(t, true, buf, 64);
    len = (size_t)h;
    len += (size_t)snprintf(buf + len, sizeof(buf) - len, " %s %c ", stream, partial ? 'P' : 'F');
    memcpy(buf + len, msg, n);
    len += n;
    buf[len++] = '\n';
    if (l->max_bytes && l->size > 0 && l->size + len > l->max_bytes) {
        int r = rotate(l);
        if (r < 0)
            return r;
    }
    for (size_t off = 0; off < len;) {
        ssize_t w = write(l->fd, buf + off, len - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        off += (size_t)w;
    }
    l->size += len;
    return 0;
}

int fatia_linebuf_feed(struct fatia_linebuf *lb, struct fatia_crilog *l, const char *stream,
                       fatia_usec_t t, const char *data, size_t n)
{
    int r = 0;

    while (n > 0) {
        const char *nl = memchr(data, '\n', n);
        size_t take = nl ? (size_t)(nl - data) : n;
        size_t room = sizeof(lb->buf) - lb->len;

        if (take >= room) {
            /* the line fills the buffer: write it as a partial entry */
            memcpy(lb->buf + lb->len, data, room);
            r = fatia_crilog_write(l, t, stream, lb->buf, sizeof(lb->buf), true);
            lb->len = 0;
            data += room;
            n -= room;
            if (r < 0)
                return r;
            continue;
        }
        memcpy(lb->buf + lb->len, data, take);
        lb->len += take;
        if (!nl)
            return 0;
        r = fatia_crilog_write(l, t, stream, lb->buf, lb->len, false);
        lb->len = 0;
        data += take + 1;
        n -= take + 1;
        if (r < 0)
            return r;
    }
    return 0;
}

int fatia_linebuf_flush(struct fatia_linebuf *lb, struct fatia_crilog *l, const char *stream,
                        fatia_usec_t t)
{
    int r = 0;

    if (lb->len)
        r = fatia_crilog_write(l, t, stream, lb->buf, lb->len, true);
    lb->len = 0;
    return r;
}

int fatia_crilog_parse(const char *line, size_t n, struct fatia_crilog_entry *ret)
{
    struct fatia_crilog_entry e = {0};
    const char *p = line, *end = line + n, *sp;
    char ts[64];

    sp = memchr(p, ' ', (size_t)(end - p));
    if (!sp || sp == p || (size_t)(sp - p) >= sizeof(ts))
        return -FATIA_E_PARSE;
    e.ts = p;
    e.ts_len = (size_t)(sp - p);
    memcpy(ts, p, e.ts_len);
    ts[e.ts_len] = '\0';
    if (fatia_time_parse_rfc3339(ts, &e.t) < 0)
        return -FATIA_E_PARSE;
    p = sp + 1;
    if (end - p >= 7 && !memcmp(p, "stdout ", 7))
        e.is_stderr = false;
    else if (end - p >= 7 && !memcmp(p, "stderr ", 7))
        e.is_stderr = true;
    else
        return -FATIA_E_PARSE;
    p += 7;
    if (end - p < 1 || (*p != 'F' && *p != 'P'))
        return -FATIA_E_PARSE;
    e.partial = *p == 'P';
    p++;
    if (p < end) {
        if (*p != ' ')
            return -FATIA_E_PARSE;
        p++;
    }
    e.msg = p;
    e.msg_len = (size_t)(end - p);
    *ret = e;
    return 0;
}
