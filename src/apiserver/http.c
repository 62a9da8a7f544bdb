/*
 * apiserver/http.c: the HTTP/1.1 server (see http.h for the model and the limits).
 *
 * A connection's state machine (conn.state), with the function that makes each move:
 *
 *            accept_cb
 *                |
 *                v         read_cb: head+body complete
 *     +----> READING ---------------------------------> BUSY (handler owns the request)
 *     |         |  \--deadline / bad input: error reply--> CLOSING   |        |
 *     |         |                                                    |   stream_start
 *     |         |                                                    |        v
 *     |         |                                      reply         |    STREAMING
 *     +---------+----------- finish_request <------------------------+--------+ stream_end
 *                 (keep-alive: back to READING and parse what is already buffered;
 *                  otherwise CLOSING: free once the output is flushed)
 *
 * EOF, a socket error or the write timeout free the connection in any state; a request the
 * handler still holds is then detached (req->conn = NULL) and its close callback runs.
 *
 * While BUSY or STREAMING the connection keeps reading (so that a client that hangs up is seen
 * at once, which matters for long watches) but does not parse; a read watermark stops a client
 * that floods input meanwhile.
 */
#include "base/compat.h"

#include "apiserver/http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <openssl/ssl.h>
#include <strings.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/log.h"

enum conn_state {
    CONN_READING,
    CONN_BUSY,
    CONN_STREAMING,
    CONN_CLOSING,
};

struct conn;

struct fatia_api_http_req {
    struct conn *conn; /* NULL once detached */
    char *head_text;   /* owned copy of the head; the views of head point into it */
    struct fatia_http_head head;
    struct fatia_buf body;
    struct fatia_buf out_headers; /* extra "Name: value\r\n" lines */
    char peer[64];
    bool keep_alive;
    bool streaming;
    unsigned reruns; /* fatia_api_http_req_count_run */
    void (*close_cb)(void *arg);
    void *close_arg;
};

struct conn {
    struct fatia_api_http_server *srv;
    struct bufferevent *bev;
    struct event *deadline;
    enum conn_state state;
    struct fatia_api_http_req *req; /* the request being read or handled */
    char peer[64];
    /* body reading */
    bool head_done;
    bool draining; /* answered an error: discard input until the client is done or gives up */
    size_t drained;
    bool chunked;
    uint64_t content_length;
    struct fatia_http_chunked chunk;
    bool chunk_full; /* the decoded body passed the limit */
    struct conn *prev, *next;
};

struct fatia_api_http_server {
    struct event_base *base;
    struct fatia_api_http_opts o;
    fatia_api_http_handler_fn handler;
    void *arg;
    struct evconnlistener *listener;
    struct conn *conns;
    size_t n_conns;
};

static void conn_free(struct conn *c);
static void conn_unlink(struct conn *c);
static void process_input(struct conn *c);

static struct timeval to_tv(fatia_usec_t us)
{
    return (struct timeval){.tv_sec = us / FATIA_USEC_PER_SEC,
                            .tv_usec = (suseconds_t)(us % FATIA_USEC_PER_SEC)};
}

/* ---- requests ---- */

static void req_free(struct fatia_api_http_req *r)
{
    if (!r)
        return;
    fatia_free(r->head_text);
    fatia_buf_release(&r->body);
    fatia_buf_release(&r->out_headers);
    fatia_free(r);
}

const struct fatia_http_head *fatia_api_http_req_head(const struct fatia_api_http_req *r)
{
    return &r->head;
}

const char *fatia_api_http_req_body(const struct fatia_api_http_req *r, size_t *ret_len)
{
    *ret_len = r->body.len;
    return r->body.p;
}

const char *fatia_api_http_req_peer(const struct fatia_api_http_req *r)
{
    return r->peer;
}

unsigned fatia_api_http_req_count_run(struct fatia_api_http_req *r)
{
    return ++r->reruns;
}

bool fatia_api_http_req_connected(const struct fatia_api_http_req *r)
{
    return r->conn != NULL;
}

void fatia_api_http_req_set_close_cb(struct fatia_api_http_req *r, void (*cb)(void *arg), void *arg)
{
    r->close_cb = cb;
    r->close_arg = arg;
}

int fatia_api_http_add_header(struct fatia_api_http_req *r, const char *name, const char *value)
{
    /* Header values come from our code, but never let a CR or LF through. */
    if (strpbrk(name, "\r\n:") || strpbrk(value, "\r\n"))
        return -EINVAL;
    return fatia_buf_printf(&r->out_headers, "%s: %s\r\n", name, value);
}

/* ---- connection ---- */

static void arm_deadline(struct conn *c)
{
    struct timeval tv = to_tv(c->srv->o.idle_timeout);

    evtimer_add(c->deadline, &tv);
}

static void write_status_line(struct evbuffer *out, struct fatia_api_http_req *r, int status,
                              const char *ctype)
{
    evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\n", status, fatia_http_reason(status));
    if (ctype)
        evbuffer_add_printf(out, "Content-Type: %s\r\n", ctype);
    evbuffer_add_printf(out, "Cache-Control: no-cache, private\r\n");
    if (!r->keep_alive)
        evbuffer_add_printf(out, "Connection: close\r\n");
    if (r->out_headers.len)
        evbuffer_add(out, r->out_headers.p, r->out_headers.len);
}

/* The request is done (reply sent or stream ended): free it, go back to reading or close. */
static void finish_request(struct fatia_api_http_req *r)
{
    struct conn *c = r->conn;

    if (c) {
        bool keep = r->keep_alive;
        c->req = NULL;
        if (keep) {
            c->state = CONN_READING;
            c->head_done = false;
            arm_deadline(c);
            req_free(r);
            /* Pipelined input may already hold the next request: parse it from the loop, not
             * from here, so that a handler answering at once does not recurse. */
            if (evbuffer_get_length(bufferevent_get_input(c->bev)))
                bufferevent_trigger(c->bev, EV_READ,
                                    BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
            return;
        }
        c->state = CONN_CLOSING;
        bufferevent_disable(c->bev, EV_READ);
        if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
            conn_free(c);
    }
    req_free(r);
}

void fatia_api_http_reply_evbuf(struct fatia_api_http_req *r, int status, const char *content_type,
                                struct evbuffer *evbuf)
{
    struct conn *c = r->conn;

    FATIA_ASSERT(!r->streaming);
    if (c) {
        struct evbuffer *out = bufferevent_get_output(c->bev);
        write_status_line(out, r, status, content_type);
        evbuffer_add_printf(out, "Content-Length: %zu\r\n\r\n",
                            evbuf ? evbuffer_get_length(evbuf) : 0);
        if (evbuf)
            evbuffer_add_buffer(out, evbuf);
    }
    finish_request(r);
}

void fatia_api_http_reply(struct fatia_api_http_req *r, int status, const char *content_type,
                          const void *body, size_t n)
{
    struct conn *c = r->conn;

    FATIA_ASSERT(!r->streaming);
    if (c) {
        struct evbuffer *out = bufferevent_get_output(c->bev);
        write_status_line(out, r, status, content_type);
        evbuffer_add_printf(out, "Content-Length: %zu\r\n\r\n", n);
        if (n)
            evbuffer_add(out, body, n);
    }
    finish_request(r);
}

void *fatia_api_http_req_ssl(const struct fatia_api_http_req *r)
{
    return r->conn && r->conn->srv->o.tls_ctx ? bufferevent_openssl_get_ssl(r->conn->bev) : NULL;
}

struct bufferevent *fatia_api_http_upgrade(struct fatia_api_http_req *r)
{
    struct evbuffer *out;

    FATIA_ASSERT(!r->streaming);
    if (r->conn) {
        out = bufferevent_get_output(r->conn->bev);
        evbuffer_add_printf(out, "HTTP/1.1 101 Switching Protocols\r\n");
        if (r->out_headers.len)
            evbuffer_add(out, r->out_headers.p, r->out_headers.len);
        evbuffer_add_printf(out, "\r\n");
    }
    return fatia_api_http_take(r);
}

struct bufferevent *fatia_api_http_take(struct fatia_api_http_req *r)
{
    struct conn *c = r->conn;
    struct bufferevent *bev;

    FATIA_ASSERT(!r->streaming);
    if (!c) {
        req_free(r);
        return NULL;
    }
    bev = c->bev;
    /* the connection forgets the socket: its new owner frees the bufferevent */
    bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
    bufferevent_set_timeouts(bev, NULL, NULL);
    bufferevent_setwatermark(bev, EV_READ, 0, 0); /* the new owner bounds what it buffers */
    conn_unlink(c);
    event_free(c->deadline);
    c->req = NULL;
    fatia_free(c);
    req_free(r);
    return bev;
}

void fatia_api_http_stream_start(struct fatia_api_http_req *r, int status, const char *content_type)
{
    struct conn *c = r->conn;

    FATIA_ASSERT(!r->streaming);
    r->streaming = true;
    if (!c)
        return;
    c->state = CONN_STREAMING;
    {
        /* A stream's kernel buffer is bounded too (no autotuning to megabytes), so that a client
         * that stops reading shows up in our backlog soon and costs bounded memory. */
        int sndbuf = 128 * 1024;
        setsockopt(bufferevent_getfd(c->bev), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
    }
    write_status_line(bufferevent_get_output(c->bev), r, status, content_type);
    evbuffer_add_printf(bufferevent_get_output(c->bev), "Transfer-Encoding: chunked\r\n\r\n");
    bufferevent_flush(c->bev, EV_WRITE, BEV_NORMAL);
}

static int stream_write(struct fatia_api_http_req *r, const void *data, size_t n, bool bounded)
{
    struct conn *c = r->conn;
    struct evbuffer *out;

    FATIA_ASSERT(r->streaming);
    if (!c)
        return -EPIPE;
    if (!n)
        return 0;
    out = bufferevent_get_output(c->bev);
    if (bounded && evbuffer_get_length(out) + n > c->srv->o.max_stream_backlog) {
        fatia_info("%s: client fell %zu bytes behind a stream, dropping it", c->peer,
                   evbuffer_get_length(out));
        r->conn = NULL;
        c->req = NULL;
        conn_free(c);
        return -ENOBUFS;
    }
    evbuffer_add_printf(out, "%zx\r\n", n);
    evbuffer_add(out, data, n);
    evbuffer_add(out, "\r\n", 2);
    return 0;
}

int fatia_api_http_stream_write(struct fatia_api_http_req *r, const void *data, size_t n)
{
    return stream_write(r, data, n, true);
}

int fatia_api_http_stream_write_ref(struct fatia_api_http_req *r, const void *data, size_t n,
                                    bool bounded, fatia_api_http_unref_fn unref, void *arg)
{
    struct conn *c = r->conn;
    struct evbuffer *out;

    FATIA_ASSERT(r->streaming);
    if (!c)
        return -EPIPE;
    if (!n)
        return 0;
    out = bufferevent_get_output(c->bev);
    if (bounded && evbuffer_get_length(out) + n > c->srv->o.max_stream_backlog)
        return stream_write(r, data, n, true); /* drops it, as for a copy */
    evbuffer_add_printf(out, "%zx\r\n", n);
    /* the bytes are shared with every other stream that sends them: no copy per client */
    if (evbuffer_add_reference(out, data, n, unref, arg) < 0)
        return -ENOMEM;
    evbuffer_add(out, "\r\n", 2);
    return 0;
}

void fatia_api_http_stream_drop(struct fatia_api_http_req *r)
{
    struct conn *c = r->conn;

    if (!c)
        return;
    fatia_info("%s: a slow stream is dropped (%zu bytes behind) to keep the streams' memory "
               "within its budget",
               c->peer, evbuffer_get_length(bufferevent_get_output(c->bev)));
    r->conn = NULL;
    c->req = NULL;
    conn_free(c);
}

int fatia_api_http_stream_write_unbounded(struct fatia_api_http_req *r, const void *data, size_t n)
{
    return stream_write(r, data, n, false);
}

size_t fatia_api_http_stream_backlog(const struct fatia_api_http_req *r)
{
    return r->conn ? evbuffer_get_length(bufferevent_get_output(r->conn->bev)) : 0;
}

void fatia_api_http_stream_end(struct fatia_api_http_req *r)
{
    FATIA_ASSERT(r->streaming);
    if (r->conn)
        evbuffer_add(bufferevent_get_output(r->conn->bev), "0\r\n\r\n", 5);
    finish_request(r);
}

/* An error the server answers itself (bad framing, limits): a metav1.Status body, then close. */
static void reply_error_and_close(struct conn *c, int status, const char *reason, const char *msg)
{
    struct evbuffer *out = bufferevent_get_output(c->bev);
    char body[512];
    int n;

    n = snprintf(
        body, sizeof(body),
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"%s\",\"reason\":\"%s\",\"code\":%d}",
        msg, reason, status);
    evbuffer_add_printf(out,
                        "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nConnection: close\r\n"
                        "Content-Length: %d\r\n\r\n",
                        status, fatia_http_reason(status), n);
    evbuffer_add(out, body, (size_t)n);
    if (c->req) {
        req_free(c->req);
        c->req = NULL;
    }
    /* Lingering close: a client may still be sending the body we refused; closing now would
     * reset the connection before it reads the answer. Discard its input for up to 2 s. */
    c->state = CONN_CLOSING;
    c->draining = true;
    evbuffer_drain(bufferevent_get_input(c->bev),
                   evbuffer_get_length(bufferevent_get_input(c->bev)));
    {
        struct timeval tv = {.tv_sec = 2};
        evtimer_add(c->deadline, &tv);
    }
}

static void conn_unlink(struct conn *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        c->srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->srv->n_conns--;
}

static void conn_free(struct conn *c)
{
    struct fatia_api_http_req *r = c->req;

    conn_unlink(c);
    bufferevent_free(c->bev);
    event_free(c->deadline);
    c->req = NULL;
    if (r) {
        if (c->state == CONN_READING) {
            req_free(r); /* never reached the handler */
        } else {
            r->conn = NULL;
            if (r->close_cb) {
                void (*cb)(void *) = r->close_cb;
                r->close_cb = NULL;
                cb(r->close_arg);
            }
        }
    }
    fatia_free(c);
}

/* The head is complete: decide how the body is framed. 0, or an error already answered. The
 * shared parser has refused every ambiguous framing (http1.h), so the flags are the answer. */
static int start_body(struct conn *c)
{
    struct fatia_api_http_req *r = c->req;
    uint64_t len;

    r->keep_alive = (r->head.flags & FATIA_HTTP_KEEP_ALIVE) != 0;
    if (r->head.flags & FATIA_HTTP_CHUNKED) {
        c->chunked = true;
        c->chunk_full = false;
        fatia_http_chunked_init(&c->chunk);
        return 0;
    }
    c->chunked = false;
    len = r->head.content_length > 0 ? (uint64_t)r->head.content_length : 0;
    if (len > c->srv->o.max_body_bytes) {
        reply_error_and_close(c, 413, "RequestEntityTooLarge",
                              "the request body is larger than the limit");
        return -FATIA_E_LIMIT;
    }
    c->content_length = len;
    /* curl and others wait (a second) for leave to send a body they announced */
    if (len && (r->head.flags & FATIA_HTTP_EXPECT_100) &&
        evbuffer_get_length(bufferevent_get_input(c->bev)) == 0)
        evbuffer_add(bufferevent_get_output(c->bev), FATIA_HTTP_100_CONTINUE,
                     sizeof(FATIA_HTTP_100_CONTINUE) - 1);
    return 0;
}

/* Chunked payload: appended to the body while it fits. */
static void chunk_payload(void *ud, const char *p, size_t n)
{
    struct conn *c = ud;

    if (!c->chunk_full && fatia_buf_append(&c->req->body, p, n) < 0)
        c->chunk_full = true;
}

/* Reads as much of the body as is buffered. 1 when complete, 0 for more, <0 answered. */
static int read_body(struct conn *c, struct evbuffer *in)
{
    struct fatia_api_http_req *r = c->req;

    if (!c->chunked) {
        size_t have = evbuffer_get_length(in);
        size_t want = (size_t)c->content_length - r->body.len;
        size_t take = FATIA_MIN(have, want);
        if (take) {
            if (fatia_buf_reserve(&r->body, take) < 0) {
                reply_error_and_close(c, 500, "InternalError", "out of memory");
                return -ENOMEM;
            }
            evbuffer_remove(in, r->body.p + r->body.len, take);
            r->body.len += take;
            r->body.p[r->body.len] = '\0';
        }
        return r->body.len == c->content_length ? 1 : 0;
    }
    while (evbuffer_get_length(in)) {
        struct evbuffer_iovec vec;
        size_t used = 0;
        int rc;
        if (evbuffer_peek(in, -1, NULL, &vec, 1) < 1)
            break;
        rc = (int)fatia_http_chunked_feed(&c->chunk, vec.iov_base, vec.iov_len, chunk_payload, c);
        used = rc >= 0 ? (size_t)rc : vec.iov_len;
        evbuffer_drain(in, used);
        if (c->chunk_full) {
            reply_error_and_close(c, 413, "RequestEntityTooLarge",
                                  "the request body is larger than the limit");
            return -FATIA_E_LIMIT;
        }
        if (rc < 0) {
            reply_error_and_close(
                c, 400, "BadRequest",
                "malformed chunked body (RFC 9112 §7.1: every line ends in CRLF)");
            return rc;
        }
        if (fatia_http_chunked_done(&c->chunk))
            return 1;
    }
    return 0;
}

static void dispatch(struct conn *c)
{
    struct fatia_api_http_req *r = c->req;

    evtimer_del(c->deadline);
    c->state = CONN_BUSY;
    snprintf(r->peer, sizeof(r->peer), "%s", c->peer);
    c->srv->handler(c->srv->arg, r);
}

static void process_input(struct conn *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);

    while (c->state == CONN_READING) {
        if (!c->head_done) {
            size_t avail = evbuffer_get_length(in);
            size_t look = FATIA_MIN(avail, c->srv->o.max_head_bytes);
            struct fatia_api_http_req *r;
            struct fatia_http_head head;
            const char *p;
            int n;

            if (!avail)
                return;
            p = (const char *)evbuffer_pullup(in, (ssize_t)look);
            if (!p)
                return;
            n = fatia_http_parse_request(p, look, &head);
            if (n == -EAGAIN) {
                if (avail >= c->srv->o.max_head_bytes)
                    reply_error_and_close(c, 431, "RequestHeaderFieldsTooLarge",
                                          "the request head is larger than the limit");
                return;
            }
            if (n < 0) {
                const char *why;
                int status = fatia_http_request_error_status(n, &why);
                reply_error_and_close(c, status,
                                      status == 431   ? "RequestHeaderFieldsTooLarge"
                                      : status == 501 ? "NotImplemented"
                                                      : "BadRequest",
                                      why);
                return;
            }
            r = fatia_calloc(1, sizeof(*r));
            if (!r || !(r->head_text = fatia_malloc((size_t)n + 1))) {
                fatia_free(r);
                reply_error_and_close(c, 500, "InternalError", "out of memory");
                return;
            }
            fatia_buf_init(&r->body, c->srv->o.max_body_bytes);
            fatia_buf_init(&r->out_headers, 64 * 1024);
            evbuffer_remove(in, r->head_text, (size_t)n);
            r->head_text[n] = '\0';
            /* Reparse in our copy so that the views point into it. */
            if (fatia_http_parse_request(r->head_text, (size_t)n, &r->head) != n) {
                req_free(r);
                reply_error_and_close(c, 400, "BadRequest", "malformed HTTP request");
                return;
            }
            r->conn = c;
            c->req = r;
            c->head_done = true;
            if (start_body(c) < 0)
                return;
        }
        int rc = read_body(c, in);
        if (rc < 0)
            return;
        if (rc == 0)
            return;
        /* c may be gone now (an upgrade or a take hands the connection over and frees it), so
         * it is not read again here: a finished keep-alive request resumes reading from the
         * loop (finish_request) */
        dispatch(c);
        return;
    }
}

static void read_cb(struct bufferevent *bev, void *arg)
{
    struct conn *c = arg;

    if (c->state == CONN_READING) {
        process_input(c);
    } else if (c->state == CONN_CLOSING && c->draining) {
        size_t n = evbuffer_get_length(bufferevent_get_input(bev));
        evbuffer_drain(bufferevent_get_input(bev), n);
        c->drained += n;
        if (c->drained > 64u * 1024 * 1024)
            conn_free(c);
    }
    /* BUSY / STREAMING: input waits; the watermark bounds it. */
}

static void write_cb(struct bufferevent *bev, void *arg)
{
    struct conn *c = arg;

    if (c->state == CONN_CLOSING && !c->draining &&
        evbuffer_get_length(bufferevent_get_output(bev)) == 0)
        conn_free(c);
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct conn *c = arg;

    (void)bev;
    if (what == BEV_EVENT_CONNECTED)
        return; /* the TLS handshake completed */
    if (what & BEV_EVENT_TIMEOUT)
        fatia_debug("%s: write timeout, closing", c->peer);
    conn_free(c);
}

static void deadline_cb(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;

    (void)fd;
    (void)what;
    if (c->state == CONN_CLOSING && c->draining) {
        conn_free(c); /* the lingering close is over */
        return;
    }
    if (c->state != CONN_READING)
        return;
    if (!c->req && evbuffer_get_length(bufferevent_get_input(c->bev)) == 0) {
        conn_free(c); /* idle keep-alive connection: close quietly */
        return;
    }
    reply_error_and_close(c, 408, "Timeout", "the request did not arrive in time");
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
                      void *arg)
{
    struct fatia_api_http_server *s = arg;
    struct timeval wtv = to_tv(s->o.write_timeout);
    struct conn *c;
    int one = 1;

    (void)l;
    if (s->n_conns >= s->o.max_conns) {
        evutil_closesocket(fd);
        return;
    }
    c = fatia_calloc(1, sizeof(*c));
    if (!c) {
        evutil_closesocket(fd);
        return;
    }
    c->srv = s;
    if (s->o.tls_ctx) {
        SSL *ssl = SSL_new(s->o.tls_ctx);
        c->bev = ssl ? bufferevent_openssl_socket_new(s->base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                                      BEV_OPT_CLOSE_ON_FREE)
                     : NULL;
        if (!c->bev)
            SSL_free(ssl);
        else
            bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
    } else {
        c->bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
    }
    c->deadline = evtimer_new(s->base, deadline_cb, c);
    if (!c->bev || !c->deadline) {
        if (c->bev)
            bufferevent_free(c->bev);
        else
            evutil_closesocket(fd);
        if (c->deadline)
            event_free(c->deadline);
        fatia_free(c);
        return;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (sa->sa_family == AF_INET && (size_t)salen >= sizeof(struct sockaddr_in)) {
        char ip[INET_ADDRSTRLEN] = "?";
        struct sockaddr_in in;
        memcpy(&in, sa, sizeof(in));
        inet_ntop(AF_INET, &in.sin_addr, ip, sizeof(ip));
        snprintf(c->peer, sizeof(c->peer), "%s:%u", ip, ntohs(in.sin_port));
    } else if (sa->sa_family == AF_INET6 && (size_t)salen >= sizeof(struct sockaddr_in6)) {
        char ip[INET6_ADDRSTRLEN] = "?";
        struct sockaddr_in6 in;
        memcpy(&in, sa, sizeof(in));
        inet_ntop(AF_INET6, &in.sin6_addr, ip, sizeof(ip));
        snprintf(c->peer, sizeof(c->peer), "[%s]:%u", ip, ntohs(in.sin6_port));
    }
    c->state = CONN_READING;
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->n_conns++;
    bufferevent_setcb(c->bev, read_cb, write_cb, event_cb, c);
    bufferevent_set_timeouts(c->bev, NULL, &wtv);
    /* Input beyond a head plus a body is not read while a request is being handled. */
    bufferevent_setwatermark(c->bev, EV_READ, 0, s->o.max_head_bytes + s->o.max_body_bytes);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    arm_deadline(c);
}

int fatia_api_http_server_new(struct event_base *base, const struct fatia_api_http_opts *opts,
                              fatia_api_http_handler_fn handler, void *arg,
                              struct fatia_api_http_server **ret)
{
    struct fatia_api_http_server *s = fatia_calloc(1, sizeof(*s));

    if (!s)
        return -ENOMEM;
    s->base = base;
    if (opts)
        s->o = *opts;
    if (!s->o.max_head_bytes)
        s->o.max_head_bytes = 64 * 1024;
    if (!s->o.max_body_bytes)
        s->o.max_body_bytes = 3 * 1024 * 1024;
    if (!s->o.idle_timeout)
        s->o.idle_timeout = 60 * FATIA_USEC_PER_SEC;
    if (!s->o.write_timeout)
        s->o.write_timeout = 60 * FATIA_USEC_PER_SEC;
    if (!s->o.max_stream_backlog)
        s->o.max_stream_backlog = 16 * 1024 * 1024;
    if (!s->o.max_conns)
        s->o.max_conns = 4096;
    s->handler = handler;
    s->arg = arg;
    *ret = s;
    return 0;
}

int fatia_api_http_server_listen(struct fatia_api_http_server *s, const char *host, uint16_t port,
                                 uint16_t *ret_port)
{
    union {
        struct sockaddr sa;
        struct sockaddr_in in4;
        struct sockaddr_in6 in6;
        struct sockaddr_storage ss;
    } a;

    socklen_t len;
    int fd, one = 1;

    memset(&a, 0, sizeof(a));
    if (inet_pton(AF_INET, host, &a.in4.sin_addr) == 1) {
        a.in4.sin_family = AF_INET;
        a.in4.sin_port = htons(port);
        len = sizeof(a.in4);
    } else if (inet_pton(AF_INET6, host, &a.in6.sin6_addr) == 1) {
        a.in6.sin6_family = AF_INET6;
        a.in6.sin6_port = htons(port);
        len = sizeof(a.in6);
    } else {
        return -EINVAL;
    }
    fd = socket(a.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, &a.sa, len) < 0 || listen(fd, 511) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    len = sizeof(a);
    if (getsockname(fd, &a.sa, &len) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    s->listener = evconnlistener_new(s->base, accept_cb, s, LEV_OPT_CLOSE_ON_FREE, -1, fd);
    if (!s->listener) {
        close(fd);
        return -ENOMEM;
    }
    if (ret_port)
        *ret_port = ntohs(a.sa.sa_family == AF_INET ? a.in4.sin_port : a.in6.sin6_port);
    return 0;
}

void fatia_api_http_server_stop_listening(struct fatia_api_http_server *s)
{
    if (s->listener) {
        evconnlistener_free(s->listener);
        s->listener = NULL;
    }
}

void fatia_api_http_server_free(struct fatia_api_http_server *s)
{
    if (!s)
        return;
    fatia_api_http_server_stop_listening(s);
    while (s->conns)
        conn_free(s->conns);
    fatia_free(s);
}

size_t fatia_api_http_server_conns(const struct fatia_api_http_server *s)
{
    return s->n_conns;
}
