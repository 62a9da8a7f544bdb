/*
 * gateway/upstream.c: client exchanges and the keep-alive pool (see upstream.h).
 *
 * One struct fatia_upx is both the connection and its current exchange: a pooled connection keeps
 * its struct between exchanges, so a request on a warm connection allocates nothing. Response
 * bytes are read into a per-connection buffer: the head accumulates there until it parses; body
 * bytes are handed on as each read returns them and the buffer is reused.
 */
#include "base/compat.h"

#include "gateway/upstream.h"

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <event2/event.h>
#include <fcntl.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/error.h"

enum ustate {
    U_CONNECTING,
    U_SENDING,
    U_WAITING,
    U_BODY,
    U_IDLE,
};

enum framing {
    F_NONE,
    F_LENGTH,
    F_CHUNKED,
    F_CLOSE,
};

#define READ_CHUNK (64u << 10)

struct fatia_upx {
    struct fatia_upstream *u;
    int fd;
    enum ustate state;
    struct event *ev_read, *ev_write, *ev_timer, *ev_defer;
    bool read_on, write_on, paused;
    struct fatia_upx *next_idle;
    struct fatia_buf rbuf;
    /* the exchange */
    struct fatia_upx_ops ops;
    void *ud;
    struct iovec iov[4];
    int n_iov;
    unsigned flags;
    bool reused, responded, head_done, reusable, active;
    enum framing framing;
    uint64_t remaining;
    struct fatia_http_chunked ch;
    struct fatia_http_head head;
    int defer_err;
};

static void x_close(struct fatia_upx *x)
{
    event_free(x->ev_read);
    event_free(x->ev_write);
    event_free(x->ev_timer);
    event_free(x->ev_defer);
    if (x->fd >= 0)
        close(x->fd);
    fatia_buf_release(&x->rbuf);
    x->u->n_open--;
    fatia_free(x);
}

static void set_read(struct fatia_upx *x, bool on)
{
    if (on == x->read_on)
        return;
    x->read_on = on;
    if (on)
        event_add(x->ev_read, NULL);
    else
        event_del(x->ev_read);
}

static void set_write(struct fatia_upx *x, bool on)
{
    if (on == x->write_on)
        return;
    x->write_on = on;
    if (on)
        event_add(x->ev_write, NULL);
    else
        event_del(x->ev_write);
}

static void set_timer(struct fatia_upx *x, fatia_usec_t t)
{
    struct timeval tv = {(time_t)(t / FATIA_USEC_PER_SEC), (suseconds_t)(t % FATIA_USEC_PER_SEC)};
    if (t > 0)
        event_add(x->ev_timer, &tv);
    else
        event_del(x->ev_timer);
}

/* Fails the exchange: closes the connection, then calls on_error. */
static void fail(struct fatia_upx *x, int err)
{
    struct fatia_upx_ops ops = x->ops;
    void *ud = x->ud;
    bool responded = x->responded, reused = x->reused;

    x->active = false;
    x_close(x);
    if (ops.on_error)
        ops.on_error(ud, err, responded, reused);
}

/* The response ended: pool or close the connection, then on_done. */
static void complete(struct fatia_upx *x)
{
    struct fatia_upx_ops ops = x->ops;
    void *ud = x->ud;
    struct fatia_upstream *u = x->u;

    x->active = false;
    set_timer(x, 0);
    set_write(x, false);
    if (x->reusable && (x->head.flags & FATIA_HTTP_KEEP_ALIVE) && u->n_idle < u->max_idle) {
        x->state = U_IDLE;
        x->paused = false;
        fatia_buf_reset(&x->rbuf);
        x->next_idle = u->idle;
        u->idle = x;
        u->n_idle++;
        set_read(x, true); /* to notice the server closing it */
    } else {
        x_close(x);
    }
    if (ops.on_done)
        ops.on_done(ud);
}

/* Body bytes; returns false when the exchange ended (completed, failed or aborted). */
static bool body_bytes(struct fatia_upx *x, const char *p, size_t n)
{
    size_t used = n;

    switch (x->framing) {
    case F_NONE:
        used = 0;
        break;
    case F_LENGTH:
        used = (size_t)FATIA_MIN((uint64_t)n, x->remaining);
        x->remaining -= used;
        break;
    case F_CHUNKED: {
        ssize_t r = fatia_http_chunked_feed(&x->ch, p, n, x->ops.on_payload, x->ud);
        if (r < 0) {
            fail(x, -FATIA_E_PARSE);
            return false;
        }
        used = (size_t)r;
        break;
    }
    case F_CLOSE:
        break;
    }
    if (used && x->ops.on_body && x->ops.on_body(x->ud, p, used) < 0) {
        x->active = false;
        x_close(x);
        return false;
    }
    if (used && x->framing != F_CHUNKED && x->ops.on_payload)
        x->ops.on_payload(x->ud, p, used);
    if (used < n)
        x->reusable = false; /* bytes after the message: the connection is out of step */
    if (x->framing == F_NONE || (x->framing == F_LENGTH && !x->remaining) ||
        (x->framing == F_CHUNKED && fatia_http_chunked_done(&x->ch))) {
        complete(x);
        return false;
    }
    return true;
}

/* Parses heads in rbuf; returns false when the exchange ended. */
static bool try_head(struct fatia_upx *x)
{
    for (;;) {
        int r = fatia_http_parse_response(x->rbuf.p, x->rbuf.len,
                                          (x->flags & FATIA_UPX_HEAD_REQUEST) != 0, &x->head);
        size_t rest;
        if (r == -EAGAIN)
            return true;
        if (r < 0) {
            fail(x, r);
            return false;
        }
        if (x->head.status < 200 && x->head.status != 101) {
            /* 100 Continue and friends: skip */
            memmove(x->rbuf.p, x->rbuf.p + r, x->rbuf.len - (size_t)r);
            x->rbuf.len -= (size_t)r;
            continue;
        }
        x->head_done = true;
        x->state = U_BODY;
        set_timer(x, 0);
        if (x->head.flags & FATIA_HTTP_NO_BODY)
            x->framing = F_NONE;
        else if (x->head.flags & FATIA_HTTP_CHUNKED)
            x->framing = F_CHUNKED;
        else if (x->head.content_length >= 0)
            x->framing = F_LENGTH, x->remaining = (uint64_t)x->head.content_length;
        else
            x->framing = F_CLOSE, x->reusable = false;
        fatia_http_chunked_init(&x->ch);
        if (x->ops.on_head && x->ops.on_head(x->ud, &x->head, x->rbuf.p, (size_t)r) < 0) {
            x->active = false;
            x_close(x);
            return false;
        }
        rest = x->rbuf.len - (size_t)r;
        if (rest) {
            /* body bytes that came with the head: move them out of the way first, the
             * callbacks may take a while and the buffer is reused for the next read */
            memmove(x->rbuf.p, x->rbuf.p + r, rest);
            x->rbuf.len = rest;
            if (!body_bytes(x, x->rbuf.p, rest))
                return false;
        } else if (x->framing == F_NONE || (x->framing == F_LENGTH && !x->remaining)) {
            complete(x);
            return false;
        }
        fatia_buf_reset(&x->rbuf);
        return true;
    }
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    struct fatia_upx *x = arg;
    ssize_t n;

    (void)what;
    if (x->state == U_IDLE) {
        /* the server closed an idle connection (or sent garbage): drop it from the pool */
        struct fatia_upstream *u = x->u;
        struct fatia_upx **pp = &u->idle;
        while (*pp && *pp != x)
            pp = &(*pp)->next_idle;
        if (*pp) {
            *pp = x->next_idle;
            u->n_idle--;
        }
        x_close(x);
        return;
    }
    if (fatia_buf_reserve(&x->rbuf, READ_CHUNK) < 0) {
        fail(x, -FATIA_E_LIMIT);
        return;
    }
    n = read(fd, x->rbuf.p + x->rbuf.len, x->rbuf.cap - x->rbuf.len - 1);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
            return;
        fail(x, -errno);
        return;
    }
    if (n == 0) {
        if (x->head_done && x->framing == F_CLOSE) {
            complete(x);
            return;
        }
        fail(x, -ECONNRESET);
        return;
    }
    x->responded = true;
    x->rbuf.len += (size_t)n;
    if (!x->head_done) {
        if (x->rbuf.len > FATIA_HTTP_MAX_HEAD + READ_CHUNK) {
            fail(x, -FATIA_E_LIMIT);
            return;
        }
        if (try_head(x) && x->head_done && x->ops.on_read_end)
            x->ops.on_read_end(x->ud);
        return;
    }
    if (body_bytes(x, x->rbuf.p, x->rbuf.len)) {
        fatia_buf_reset(&x->rbuf);
        if (x->ops.on_read_end)
            x->ops.on_read_end(x->ud);
    }
}

/* Writes the request; returns false when the exchange ended. Inside fatia_upx_start (deferred)
 * a write error is reported from the loop instead. */
static bool send_more(struct fatia_upx *x, bool deferred)
{
    while (x->n_iov) {
        ssize_t n = writev(x->fd, x->iov, x->n_iov);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                set_write(x, true);
                return true;
            }
            if (deferred) {
                x->defer_err = -errno;
                event_active(x->ev_defer, EV_TIMEOUT, 0);
                return true;
            }
            fail(x, -errno);
            return false;
        }
        /* drop what was written from the front of iov */
        while (n > 0 && x->n_iov) {
            if ((size_t)n >= x->iov[0].iov_len) {
                n -= (ssize_t)x->iov[0].iov_len;
                memmove(x->iov, x->iov + 1, sizeof(x->iov[0]) * (size_t)(x->n_iov - 1));
                x->n_iov--;
            } else {
                x->iov[0].iov_base = (char *)x->iov[0].iov_base + n;
                x->iov[0].iov_len -= (size_t)n;
                n = 0;
            }
        }
    }
    set_write(x, false);
    if (x->state == U_SENDING) {
        x->state = U_WAITING;
        set_timer(x, x->u->response_timeout);
    }
    return true;
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
    struct fatia_upx *x = arg;

    (void)what;
    if (x->state == U_CONNECTING) {
        int err = 0;
        socklen_t el = sizeof(err);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
            err = errno;
        if (err) {
            fail(x, -err);
            return;
        }
        x->state = U_SENDING;
        set_timer(x, 0);
        set_read(x, true);
    }
    send_more(x, false);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct fatia_upx *x = arg;

    (void)fd;
    (void)what;
    /* the timer runs while connecting (connect_timeout) or waiting for the head */
    fail(x, x->state == U_CONNECTING ? -ETIMEDOUT : -ETIME);
}

static void on_defer(evutil_socket_t fd, short what, void *arg)
{
    struct fatia_upx *x = arg;

    (void)fd;
    (void)what;
    if (x->defer_err)
        fail(x, x->defer_err);
    else if (x->state == U_SENDING)
        send_more(x, false);
}

void fatia_upx_init(struct fatia_upstream *u, struct event_base *base,
                    const struct sockaddr_storage *addr, socklen_t addr_len)
{
    memset(u, 0, sizeof(*u));
    u->base = base;
    memcpy(&u->addr, addr, addr_len);
    u->addr_len = addr_len;
    u->max_idle = 256;
    u->connect_timeout = 3 * FATIA_USEC_PER_SEC;
}

void fatia_upx_release(struct fatia_upstream *u)
{
    while (u->idle) {
        struct fatia_upx *x = u->idle;
        u->idle = x->next_idle;
        u->n_idle--;
        x_close(x);
    }
}

static struct fatia_upx *new_conn(struct fatia_upstream *u, int *ret_err)
{
    struct fatia_upx *x = fatia_calloc(1, sizeof(*x));
    int one = 1, fd;

    if (!x) {
        *ret_err = -ENOMEM;
        return NULL;
    }
    fd = socket(u->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *ret_err = -errno;
        fatia_free(x);
        return NULL;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    x->u = u;
    x->fd = fd;
    u->n_open++;
    fatia_buf_init(&x->rbuf, FATIA_HTTP_MAX_HEAD + 2 * READ_CHUNK);
    x->ev_read = event_new(u->base, fd, EV_READ | EV_PERSIST, on_read, x);
    x->ev_write = event_new(u->base, fd, EV_WRITE | EV_PERSIST, on_write, x);
    x->ev_timer = event_new(u->base, -1, 0, on_timer, x);
    x->ev_defer = event_new(u->base, -1, 0, on_defer, x);
    if (!x->ev_read || !x->ev_write || !x->ev_timer || !x->ev_defer) {
        x_close(x);
        *ret_err = -ENOMEM;
        return NULL;
    }
    x->state = U_CONNECTING;
    if (connect(fd, (struct sockaddr *)&u->addr, u->addr_len) < 0 && errno != EINPROGRESS) {
        x->defer_err = -errno;
        event_active(x->ev_defer, EV_TIMEOUT, 0);
        return x;
    }
    set_write(x, true);
    set_timer(x, u->connect_timeout);
    return x;
}

int fatia_upx_start(struct fatia_upstream *u, const struct iovec *iov, int n_iov, unsigned flags,
                    const struct fatia_upx_ops *ops, void *ud, struct fatia_upx **ret)
{
    struct fatia_upx *x = NULL;
    int err = 0;

    if (n_iov < 0 || n_iov > 4)
        return -EINVAL;
    if (!(flags & FATIA_UPX_FRESH) && u->idle) {
        x = u->idle;
        u->idle = x->next_idle;
        u->n_idle--;
        x->next_idle = NULL;
        x->reused = true;
        x->state = U_SENDING;
    } else {
        x = new_conn(u, &err);
        if (!x)
            return err;
        x->reused = false;
    }
    x->ops = *ops;
    x->ud = ud;
    x->n_iov = 0;
    for (int i = 0; i < n_iov; i++)
        if (iov[i].iov_len)
            x->iov[x->n_iov++] = iov[i];
    x->flags = flags;
    x->responded = x->head_done = false;
    x->reusable = true;
    x->active = true;
    x->framing = F_NONE;
    x->paused = false;
    fatia_buf_reset(&x->rbuf);
    x->defer_err = 0;
    if (x->state == U_SENDING) {
        /* a pooled connection: write now (a failure is reported from the loop) */
        set_read(x, true);
        send_more(x, true);
    }
    *ret = x;
    return 0;
}

void fatia_upx_pause(struct fatia_upx *x, bool paused)
{
    if (!x->active || paused == x->paused)
        return;
    x->paused = paused;
    if (x->state != U_CONNECTING)
        set_read(x, !paused);
}

void fatia_upx_abort(struct fatia_upx *x)
{
    if (!x)
        return;
    x->active = false;
    x_close(x);
}
