/*
 * gateway/httpd.h: a small HTTP/1.1 server on a libevent loop, shared by the gateway (whose
 * handler proxies) and engine-sim (whose handler streams tokens).
 *
 * Model: one struct fatia_httpd_conn per client connection, with one input buffer (the request's
 * head and body, contiguous, bounded by the head limit plus max_body) and one output buffer
 * (bounded by out_max). A request is handed to the handler only when its head and its whole body
 * are in the input buffer, as views into it (the body is never copied); the views stay valid
 * until the handler ends the response with fatia_httpd_done(), because the connection reads no
 * more input while a request is being handled (it only watches for the client closing).
 *
 * Connection states (the function that makes each transition):
 *
 *            accept                 head + body in            handler calls done()
 *   (new) ----------> READING -----------------------> HANDLING -----------------+
 *                       ^   conn_read / dispatch                 fatia_httpd_done |
 *                       |                                                         |
 *                       +--------- keep-alive: next request (or wait) <-----------+
 *                                                    | close requested / HTTP/1.0
 *   any state: peer closed, write error, timeout     v
 *   ------------------------------------------> CLOSING (flush, then free; on_abort if HANDLING)
 *
 * Writes: fatia_httpd_write() writes to the socket at once when nothing is queued (the fast path:
 * one syscall per relayed chunk) and queues the rest. Queued bytes above out_high make the
 * connection "congested": producers (the proxy's upstream reader, engine-sim's streams) stop and
 * wait for on_drain, called once the queue falls under out_low. A write error never calls back
 * into the handler synchronously: the connection is closed from a deferred event, which then calls
 * on_abort, so handlers can write from anywhere without re-entrancy.
 *
 * Rejected: libevent's evhttp (it re-frames bodies, allocates per header, and hides the raw bytes a
 * transparent proxy must relay unchanged) and bufferevents (their chained evbuffers would need a
 * pullup to scan a request body contiguously).
 */
#ifndef FATIA_GATEWAY_HTTPD_H
#define FATIA_GATEWAY_HTTPD_H

#include "base/compat.h"

#include <sys/uio.h>

#include "base/clock.h"
#include "http/http1.h"

struct event_base;
struct fatia_httpd;
struct fatia_httpd_conn;

struct fatia_httpd_req {
    const struct fatia_http_head *head; /* views into the connection's input buffer */
    const char *body;
    size_t body_len;
    const char *raw; /* head and body exactly as received */
    size_t raw_len;
    fatia_usec_t received; /* monotonic time the last byte of the request arrived */
};

struct fatia_httpd_ops {
    /* A whole request arrived. The handler answers now or later, and ends with done(). */
    void (*on_request)(void *ud, struct fatia_httpd_conn *c, const struct fatia_httpd_req *r);
    /* The connection died while handling a request (client closed, write failed, timeout). c is
     * freed after this returns; req_ctx is what the handler set with fatia_httpd_set_ctx. */
    void (*on_abort)(void *ud, struct fatia_httpd_conn *c, void *req_ctx);
    /* Queued output fell under out_low after the connection was congested. May be NULL. */
    void (*on_drain)(void *ud, struct fatia_httpd_conn *c, void *req_ctx);
};

struct fatia_httpd_limits {
    size_t max_body;           /* 413 beyond; default 32 MiB */
    size_t out_high, out_low;  /* congestion watermarks; defaults 256 KiB / 64 KiB */
    size_t out_max;            /* hard limit of queued output; default 16 MiB */
    fatia_usec_t idle_timeout; /* keep-alive idle and request read timeout; default 60 s */
    unsigned max_conns;        /* default 16384 */
    bool reuse_port;           /* SO_REUSEPORT: replicas of one server share a port */
};

/* Listens on addr ("127.0.0.1:8000", "[::1]:8000", ":8000" for every address). */
int fatia_httpd_new(struct event_base *base, const char *addr, const struct fatia_httpd_ops *ops,
                    void *ud, const struct fatia_httpd_limits *lim, struct fatia_httpd **ret);
/* Graceful stop: closes the listener (with SO_REUSEPORT the kernel then sends the port's new
 * connections to the other servers sharing it), closes the idle keep-alive connections now, and
 * every other connection once the request it carries is answered (a request being read is still
 * answered). */
void fatia_httpd_drain(struct fatia_httpd *h);
/* Closes the listener and every connection (on_abort for those handling a request). */
void fatia_httpd_free(struct fatia_httpd *h);
/* The port actually bound (for ":0"). */
int fatia_httpd_port(const struct fatia_httpd *h);
size_t fatia_httpd_conn_count(const struct fatia_httpd *h);

void fatia_httpd_set_ctx(struct fatia_httpd_conn *c, void *req_ctx);

/* Queues bytes. 0, or -EPIPE when the connection is broken (it will be closed and aborted from a
 * deferred event), or -FATIA_E_LIMIT past out_max (same treatment). */
int fatia_httpd_write(struct fatia_httpd_conn *c, const void *p, size_t n);
int fatia_httpd_writev(struct fatia_httpd_conn *c, const struct iovec *iov, int n_iov);
/* Corking: while corked, writes are queued and not sent; uncork sends all that was queued in one
 * write (a response head and its first body bytes in one segment). */
void fatia_httpd_cork(struct fatia_httpd_conn *c);
void fatia_httpd_uncork(struct fatia_httpd_conn *c);
/* More than out_high bytes queued: stop producing until on_drain. */
bool fatia_httpd_congested(const struct fatia_httpd_conn *c);
/* Bytes queued and not yet written. */
size_t fatia_httpd_queued(const struct fatia_httpd_conn *c);

/* A whole response: status line, Content-Type (if ctype), Content-Length, extra (lines ending in
 * CRLF, or NULL), body. Then done(keep_alive). */
int fatia_httpd_respond(struct fatia_httpd_conn *c, int status, const char *ctype,
                        const char *extra, const void *body, size_t n);
/* A JSON error body {"error":{"message":..,"type":..,"code":status}}, OpenAI's shape. */
int fatia_httpd_respond_error(struct fatia_httpd_conn *c, int status, const char *type,
                              const char *fmt, ...) FATIA_PRINTF(4, 5);

/* Streaming with the chunked coding: start (status line and headers), chunks, end. */
int fatia_httpd_stream_start(struct fatia_httpd_conn *c, int status, const char *ctype,
                             const char *extra);
int fatia_httpd_stream_chunk(struct fatia_httpd_conn *c, const void *p, size_t n);
int fatia_httpd_stream_end(struct fatia_httpd_conn *c);

/* The response is complete (all of it queued). keep_alive false closes after the flush; it is
 * also closed when the request asked for it. The request views are invalid after this. */
void fatia_httpd_done(struct fatia_httpd_conn *c, bool keep_alive);

/* Does the client of this request want keep-alive (HTTP/1.1 without close, or 1.0 keep-alive)? */
bool fatia_httpd_client_keep_alive(const struct fatia_httpd_conn *c);
/* HTTP/1.<minor> of the request being handled. */
int fatia_httpd_client_minor(const struct fatia_httpd_conn *c);

#endif
