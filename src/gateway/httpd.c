/*
 * gateway/httpd.c: the HTTP/1.1 server (see httpd.h for the model and the state diagram).
 *
 * Events per connection: ev_read (persistent while READING; while HANDLING it only peeks for the
 * client's close and is removed if the client pipelines more bytes), ev_write (added while output
 * is queued), ev_timer (idle and request-read timeout, armed while READING), ev_kill (a deferred
 * close, activated by write errors so that handlers never see a callback inside their own call).
 *
 * Pipelining: requests that arrived behind the one being handled wait in `in` (or in the socket)
 * and are served one at a time, in order, once the answer before them is done: finishing a
 * request activates ev_read, whose callback parses what is buffered even when the socket has
 * nothing new (the bug this replaced: a second request read with the first was never answered).
 */
#include "base/compat.h"

#include "gateway/httpd.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/error.h"
#include "base/log.h"
#include "gateway/netaddr.h"

enum cstate {
    C_READING,
    C_HANDLING,
    C_CLOSING,
};

struct fatia_httpd_conn {
    struct fatia_httpd *h;
    int fd;
    enum cstate state;
    struct event *ev_read, *ev_write, *ev_timer, *ev_kill;
    bool read_on, write_on;
    struct fatia_buf in;
    bool have_head;
    size_t req_len; /* head + body of the request being read or handled */
    struct fatia_http_head head;
    struct fatia_buf out;
    size_t out_off;
    bool congested, broken, close_after, req_keep_alive, corked;
    void *ctx;
    struct fatia_httpd_conn *prev, *next;
};

struct fatia_httpd {
    struct event_base *base;
    struct evconnlistener *lis;
    struct fatia_httpd_ops ops;
    void *ud;
    struct fatia_httpd_limits lim;
    struct fatia_httpd_conn *conns;
    size_t n_conns;
    int port;
    bool draining; /* fatia_httpd_drain: no listener, each connection closed after its answer */
};

static void conn_free(struct fatia_httpd_conn *c);
static void conn_process(struct fatia_httpd_conn *c);

static void set_read(struct fatia_httpd_conn *c, bool on)
{
    if (on == c->read_on)
        return;
    c->read_on = on;
    if (on)
        event_add(c->ev_read, NULL);
    else
        event_del(c->ev_read);
}

static void set_write(struct fatia_httpd_conn *c, bool on)
{
    if (on == c->write_on)
        return;
    c->write_on = on;
    if (on)
        event_add(c->ev_write, NULL);
    else
        event_del(c->ev_write);
}

static void arm_timer(struct fatia_httpd_conn *c)
{
    struct timeval tv = {(time_t)(c->h->lim.idle_timeout / FATIA_USEC_PER_SEC),
                         (suseconds_t)(c->h->lim.idle_timeout % FATIA_USEC_PER_SEC)};
    event_add(c->ev_timer, &tv);
}

/* Closes now: calls on_abort when a request was being handled. */
static void conn_close(struct fatia_httpd_conn *c)
{
    if (c->state == C_HANDLING && c->h->ops.on_abort) {
        void *ctx = c->ctx;
        c->state = C_CLOSING;
        c->h->ops.on_abort(c->h->ud, c, ctx);
    }
    conn_free(c);
}

/* Deferred close (from write paths called by handlers). */
static void conn_kill(struct fatia_httpd_conn *c)
{
    if (c->broken)
        return;
    c->broken = true;
    set_read(c, false);
    set_write(c, false);
    event_active(c->ev_kill, EV_TIMEOUT, 0);
}

static void on_kill(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    conn_close(arg);
}

static size_t queued(const struct fatia_httpd_conn *c)
{
    return c->out.len - c->out_off;
}

/* Writes queued output; returns false when the connection was killed. */
static bool flush(struct fatia_httpd_conn *c)
{
    while (queued(c)) {
        ssize_t n = write(c->fd, c->out.p + c->out_off, queued(c));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            conn_kill(c);
            return false;
        }
        c->out_off += (size_t)n;
    }
    if (!queued(c)) {
        fatia_buf_reset(&c->out);
        c->out_off = 0;
    } else if (c->out_off > (64u << 10) && c->out_off * 2 > c->out.len) {
        size_t q = queued(c);
        memmove(c->out.p, c->out.p + c->out_off, q);
        c->out.len = q;
        c->out.p[q] = '\0';
        c->out_off = 0;
    }
    set_write(c, queued(c) > 0);
    return true;
}

static void after_drain(struct fatia_httpd_conn *c)
{
    if (c->congested && queued(c) <= c->h->lim.out_low) {
        c->congested = false;
        if (c->state == C_HANDLING && c->h->ops.on_drain)
            c->h->ops.on_drain(c->h->ud, c, c->ctx);
    }
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
    struct fatia_httpd_conn *c = arg;

    (void)fd;
    (void)what;
    if (!flush(c))
        return;
    if (c->state == C_CLOSING && !queued(c)) {
        conn_free(c);
        return;
    }
    after_drain(c);
}

int fatia_httpd_writev(struct fatia_httpd_conn *c, const struct iovec *iov, int n_iov)
{
    size_t total = 0, skip = 0;
    int i;

    if (c->broken)
        return -EPIPE;
    for (i = 0; i < n_iov; i++)
        total += iov[i].iov_len;
    if (!total)
        return 0;
    if (!queued(c) && !c->corked) {
        ssize_t n;
        do
            n = writev(c->fd, iov, n_iov);
        while (n < 0 && errno == EINTR);
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            conn_kill(c);
            return -EPIPE;
        }
        skip = n > 0 ? (size_t)n : 0;
        if (skip == total)
            return 0;
    }
    if (queued(c) + total - skip > c->h->lim.out_max) {
        conn_kill(c);
        return -FATIA_E_LIMIT;
    }
    for (i = 0; i < n_iov; i++) {
        size_t len = iov[i].iov_len;
        const char *p = iov[i].iov_base;
        if (skip >= len) {
            skip -= len;
            continue;
        }
        if (fatia_buf_append(&c->out, p + skip, len - skip) < 0) {
            conn_kill(c);
            return -ENOMEM;
        }
        skip = 0;
    }
    if (queued(c) > c->h->lim.out_high)
        c->congested = true;
    if (!c->corked)
        set_write(c, true);
    return 0;
}

void fatia_httpd_cork(struct fatia_httpd_conn *c)
{
    c->corked = true;
}

void fatia_httpd_uncork(struct fatia_httpd_conn *c)
{
    if (!c->corked)
        return;
    c->corked = false;
    if (queued(c) && !c->broken && flush(c) && c->congested && queued(c) <= c->h->lim.out_low)
        c->congested = false; /* flushed at once: no drain event will come */
}

int fatia_httpd_write(struct fatia_httpd_conn *c, const void *p, size_t n)
{
    struct iovec iov = {(void *)p, n};
    return fatia_httpd_writev(c, &iov, 1);
}

bool fatia_httpd_congested(const struct fatia_httpd_conn *c)
{
    return c->congested;
}

size_t fatia_httpd_queued(const struct fatia_httpd_conn *c)
{
    return queued(c);
}

void fatia_httpd_set_ctx(struct fatia_httpd_conn *c, void *req_ctx)
{
    c->ctx = req_ctx;
}

bool fatia_httpd_client_keep_alive(const struct fatia_httpd_conn *c)
{
    return c->req_keep_alive;
}

int fatia_httpd_client_minor(const struct fatia_httpd_conn *c)
{
    return c->head.minor;
}

static int status_head(struct fatia_httpd_conn *c, struct fatia_buf *b, int status,
                       const char *ctype, const char *extra)
{
    fatia_buf_printf(b, "HTTP/1.1 %d %s\r\n", status, fatia_http_reason(status));
    if (ctype)
        fatia_buf_printf(b, "Content-Type: %s\r\n", ctype);
    if (extra)
        fatia_buf_puts(b, extra);
    if (!c->req_keep_alive)
        fatia_buf_puts(b, "Connection: close\r\n");
    else if (c->head.minor == 0)
        fatia_buf_puts(b, "Connection: keep-alive\r\n");
    return 0;
}

int fatia_httpd_respond(struct fatia_httpd_conn *c, int status, const char *ctype,
                        const char *extra, const void *body, size_t n)
{
    struct fatia_buf b = FATIA_BUF_INIT;
    struct iovec iov[2];
    int r;

    status_head(c, &b, status, ctype, extra);
    fatia_buf_printf(&b, "Content-Length: %zu\r\n\r\n", n);
    iov[0] = (struct iovec){b.p, b.len};
    iov[1] = (struct iovec){(void *)body, n};
    r = fatia_httpd_writev(c, iov, 2);
    fatia_buf_release(&b);
    fatia_httpd_done(c, true);
    return r;
}

int fatia_httpd_respond_error(struct fatia_httpd_conn *c, int status, const char *type,
                              const char *fmt, ...)
{
    char msg[512], body[1200];
    size_t j = 0;
    va_list ap;
    int n;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* escape the message for JSON */
    char esc[1100];
    for (size_t i = 0; msg[i] && j + 7 < sizeof(esc); i++) {
        unsigned char ch = (unsigned char)msg[i];
        if (ch == '"' || ch == '\\') {
            esc[j++] = '\\';
            esc[j++] = (char)ch;
        } else if (ch < 0x20) {
            j += (size_t)snprintf(esc + j, sizeof(esc) - j, "\\u%04x", ch);
        } else {
            esc[j++] = (char)ch;
        }
    }
    esc[j] = 0;
    n = snprintf(body, sizeof(body),
                 "{\"error\":{\"message\":\"%s\",\"type\":\"%s\",\"param\":null,\"code\":%d}}", esc,
                 type, status);
    if (n < 0 || (size_t)n >= sizeof(body))
        n = (int)strlen(body);
    return fatia_httpd_respond(c, status, "application/json", NULL, body, (size_t)n);
}

int fatia_httpd_stream_start(struct fatia_httpd_conn *c, int status, const char *ctype,
                             const char *extra)
{
    struct fatia_buf b = FATIA_BUF_INIT;
    int r;

    status_head(c, &b, status, ctype, extra);
    fatia_buf_puts(&b, "Transfer-Encoding: chunked\r\n\r\n");
    r = fatia_httpd_write(c, b.p, b.len);
    fatia_buf_release(&b);
    return r;
}

int fatia_httpd_stream_chunk(struct fatia_httpd_conn *c, const void *p, size_t n)
{
    char hdr[24];
    struct iovec iov[3];

    if (!n)
        return 0;
    iov[0] = (struct iovec){hdr, (size_t)snprintf(hdr, sizeof(hdr), "%zx\r\n", n)};
    iov[1] = (struct iovec){(void *)p, n};
    iov[2] = (struct iovec){(void *)"\r\n", 2};
    return fatia_httpd_writev(c, iov, 3);
}

int fatia_httpd_stream_end(struct fatia_httpd_conn *c)
{
    return fatia_httpd_write(c, "0\r\n\r\n", 5);
}

void fatia_httpd_done(struct fatia_httpd_conn *c, bool keep_alive)
{
    if (c->state != C_HANDLING)
        return;
    fatia_httpd_uncork(c);
    c->ctx = NULL;
    if (!keep_alive || !c->req_keep_alive || c->broken || c->h->draining) {
        c->state = C_CLOSING;
        set_read(c, false);
        if (!c->broken && !queued(c)) {
            /* close from the loop, not inside the handler's call */
            c->broken = true;
            event_active(c->ev_kill, EV_TIMEOUT, 0);
        }
        return;
    }
    /* drop the request from the input; keep what the client pipelined after it */
    if (c->in.len > c->req_len) {
        memmove(c->in.p, c->in.p + c->req_len, c->in.len - c->req_len);
        c->in.len -= c->req_len;
    } else {
        c->in.len = 0;
    }
    if (c->in.cap)
        c->in.p[c->in.len] = '\0';
    if (c->in.cap > (256u << 10) && c->in.len < (16u << 10)) {
        /* a big body came and went: give the memory back */
        char *keep = c->in.len ? fatia_malloc(c->in.len) : NULL;
        size_t n = c->in.len;
        if (!n || keep) {
            if (n)
                memcpy(keep, c->in.p, n);
            fatia_buf_release(&c->in);
            if (n) {
                fatia_buf_append(&c->in, keep, n);
                fatia_free(keep);
            }
        }
    }
    c->have_head = false;
    c->req_len = 0;
    c->state = C_READING;
    set_read(c, true);
    arm_timer(c);
    if (c->in.len)
        /* a pipelined request is already here */
        event_active(c->ev_read, EV_READ, 0);
}

static void reject(struct fatia_httpd_conn *c, int status, const char *why)
{
    c->state = C_HANDLING;
    c->req_keep_alive = false;
    fatia_httpd_respond_error(c, status, "invalid_request_error", "%s", why);
}

static void dispatch(struct fatia_httpd_conn *c)
{
    struct fatia_httpd_req r;

    /* the head's views were taken before the body arrived (the buffer may have moved since) */
    if (fatia_http_parse_request(c->in.p, c->in.len, &c->head) < 0) {
        reject(c, 400, "malformed request head");
        return;
    }
    r.head = &c->head;
    r.body = c->in.p + c->head.head_len;
    r.body_len = c->req_len - c->head.head_len;
    r.raw = c->in.p;
    r.raw_len = c->req_len;
    r.received = fatia_now_mono_usec();
    c->state = C_HANDLING;
    c->ctx = NULL;
    event_del(c->ev_timer);
    c->h->ops.on_request(c->h->ud, c, &r);
}

/* Parses what is in the input; dispatches a complete request. */
static void conn_process(struct fatia_httpd_conn *c)
{
    if (!c->have_head) {
        int r = fatia_http_parse_request(c->in.p, c->in.len, &c->head);
        uint64_t cl;
        if (r == -EAGAIN)
            return;
        if (r < 0) {
            const char *why;
            int status = fatia_http_request_error_status(r, &why);
            reject(c, status, why);
            return;
        }
        c->req_keep_alive = (c->head.flags & FATIA_HTTP_KEEP_ALIVE) != 0;
        if (c->head.flags & FATIA_HTTP_CHUNKED) {
            reject(c, 411, "chunked request bodies are not supported: send Content-Length");
            return;
        }
        cl = c->head.content_length > 0 ? (uint64_t)c->head.content_length : 0;
        if (cl > c->h->lim.max_body) {
            reject(c, 413, "request body too large");
            return;
        }
        c->have_head = true;
        c->req_len = c->head.head_len + (size_t)cl;
        if (c->in.len < c->req_len && (c->head.flags & FATIA_HTTP_EXPECT_100)) {
            if (fatia_httpd_write(c, FATIA_HTTP_100_CONTINUE, sizeof(FATIA_HTTP_100_CONTINUE) - 1) <
                0)
                return;
        }
    }
    if (c->in.len >= c->req_len)
        dispatch(c);
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    struct fatia_httpd_conn *c = arg;
    size_t want;
    ssize_t n;

    (void)what;
    if (c->state == C_HANDLING) {
        char b;
        n = recv(fd, &b, 1, MSG_PEEK);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            conn_close(c); /* the client went away mid-request */
        else if (n > 0)
            set_read(c, false); /* pipelined bytes: read them after this response */
        return;
    }
    if (c->state != C_READING)
        return;
    if (c->in.len < c->req_len) {
        /* the rest of a known body, in one read if the socket has it */
        want = c->req_len - c->in.len;
    } else {
        want = 16u << 10;
    }
    if (want < 4096)
        want = 4096;
    if (fatia_buf_reserve(&c->in, want) < 0) {
        conn_close(c);
        return;
    }
    n = read(fd, c->in.p + c->in.len, c->in.cap - c->in.len - 1);
    if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            /* activated after a response with a pipelined request already buffered (the
             * socket may hold nothing more): serve it */
            if (c->in.len)
                conn_process(c);
            return;
        }
        conn_close(c);
        return;
    }
    c->in.len += (size_t)n;
    c->in.p[c->in.len] = '\0';
    conn_process(c);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct fatia_httpd_conn *c = arg;

    (void)fd;
    (void)what;
    if (c->state == C_READING) {
        if (c->in.len && !queued(c)) {
            reject(c, 408, "request not received in time");
            return;
        }
        conn_free(c);
    }
}

static void conn_free(struct fatia_httpd_conn *c)
{
    struct fatia_httpd *h = c->h;

    if (c->prev)
        c->prev->next = c->next;
    else
        h->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    h->n_conns--;
    event_free(c->ev_read);
    event_free(c->ev_write);
    event_free(c->ev_timer);
    event_free(c->ev_kill);
    close(c->fd);
    fatia_buf_release(&c->in);
    fatia_buf_release(&c->out);
    fatia_free(c);
}

static void on_accept(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa,
                      int salen, void *arg)
{
    struct fatia_httpd *h = arg;
    struct fatia_httpd_conn *c;
    int one = 1;

    (void)lis;
    (void)sa;
    (void)salen;
    if (h->n_conns >= h->lim.max_conns || !(c = fatia_calloc(1, sizeof(*c)))) {
        close(fd);
        return;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->h = h;
    c->fd = fd;
    fatia_buf_init(&c->in, FATIA_HTTP_MAX_HEAD + h->lim.max_body + 1);
    fatia_buf_init(&c->out, 0);
    c->ev_read = event_new(h->base, fd, EV_READ | EV_PERSIST, on_read, c);
    c->ev_write = event_new(h->base, fd, EV_WRITE | EV_PERSIST, on_write, c);
    c->ev_timer = event_new(h->base, -1, 0, on_timer, c);
    c->ev_kill = event_new(h->base, -1, 0, on_kill, c);
    c->next = h->conns;
    if (h->conns)
        h->conns->prev = c;
    h->conns = c;
    h->n_conns++;
    if (!c->ev_read || !c->ev_write || !c->ev_timer || !c->ev_kill) {
        conn_free(c);
        return;
    }
    set_read(c, true);
    arm_timer(c);
}

int fatia_httpd_new(struct event_base *base, const char *addr, const struct fatia_httpd_ops *ops,
                    void *ud, const struct fatia_httpd_limits *lim, struct fatia_httpd **ret)
{
    struct fatia_httpd *h;
    struct sockaddr_storage ss;
    socklen_t sslen;
    int r;

    r = fatia_netaddr_parse(addr, true, &ss, &sslen);
    if (r < 0)
        return r;
    h = fatia_calloc(1, sizeof(*h));
    if (!h)
        return -ENOMEM;
    h->base = base;
    h->ops = *ops;
    h->ud = ud;
    if (lim)
        h->lim = *lim;
    if (!h->lim.max_body)
        h->lim.max_body = 32u << 20;
    if (!h->lim.out_high)
        h->lim.out_high = 256u << 10;
    if (!h->lim.out_low)
        h->lim.out_low = 64u << 10;
    if (!h->lim.out_max)
        h->lim.out_max = 16u << 20;
    if (!h->lim.idle_timeout)
        h->lim.idle_timeout = 60 * FATIA_USEC_PER_SEC;
    if (!h->lim.max_conns)
        h->lim.max_conns = 16384;
    h->lis =
        evconnlistener_new_bind(base, on_accept, h,
                                LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC |
                                    (h->lim.reuse_port ? LEV_OPT_REUSEABLE_PORT : 0),
                                1024, (struct sockaddr *)&ss, (int)sslen);
    if (!h->lis) {
        r = -errno ? -errno : -EADDRINUSE;
        fatia_free(h);
        return r;
    }
    {
        struct sockaddr_storage b;
        socklen_t bl = sizeof(b);
        if (getsockname(evconnlistener_get_fd(h->lis), (struct sockaddr *)&b, &bl) == 0)
            h->port = b.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&b)->sin6_port)
                                              : ntohs(((struct sockaddr_in *)&b)->sin_port);
    }
    *ret = h;
    return 0;
}

void fatia_httpd_free(struct fatia_httpd *h)
{
    if (!h)
        return;
    if (h->lis)
        evconnlistener_free(h->lis);
    while (h->conns)
        conn_close(h->conns);
    fatia_free(h);
}

void fatia_httpd_drain(struct fatia_httpd *h)
{
    struct fatia_httpd_conn *c, *next;

    if (h->draining)
        return;
    h->draining = true;
    if (h->lis) {
        evconnlistener_free(h->lis);
        h->lis = NULL;
    }
    /* a connection with no request in it (kept alive between requests) goes now; one whose
     * request is being read or answered goes after its answer */
    for (c = h->conns; c; c = next) {
        next = c->next;
        if (c->state == C_READING && c->in.len == 0)
            conn_close(c);
    }
}

int fatia_httpd_port(const struct fatia_httpd *h)
{
    return h->port;
}

size_t fatia_httpd_conn_count(const struct fatia_httpd *h)
{
    return h->n_conns;
}
