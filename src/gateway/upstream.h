/*
 * gateway/upstream.h: HTTP/1.1 client exchanges over pooled keep-alive connections to one
 * endpoint, on a libevent loop. Used by the proxy (relaying raw response bytes), by the gateway's
 * health checks, metrics scrapes and fan-outs, and by the benchmark client.
 *
 * An exchange (struct fatia_upx) sends one request and reads one response on a connection taken
 * from the endpoint's idle pool (the most recently used first) or newly connected. It reports:
 *   on_head     the response head (1xx heads are skipped), with the raw head bytes;
 *   on_body     raw body bytes as read (framing included: chunked responses are relayed as is),
 *   on_payload  the decoded body bytes (chunked coding removed), for clients that want content;
 *   on_done     the response ended: the connection goes back to the pool if both sides keep it;
 *   on_error    the exchange failed (-ETIMEDOUT: not connected within connect_timeout; -ETIME:
 *               no response head within response_timeout of the request being sent; else
 *               -errno or -FATIA_E_PARSE); `responded` says whether any response byte had arrived
 *               (a proxy may retry elsewhere only when it had not), `reused` whether the
 *               connection came from the pool (a stale keep-alive connection the server closed).
 * Exactly one of on_done / on_error ends an exchange, never inside fatia_upx_start (failures to
 * connect or to write are reported from the loop), and never after fatia_upx_abort. On a pooled
 * connection the request is written at once, inside fatia_upx_start.
 *
 * Connection states (function):
 *   CONNECTING --connected (on_writable)--> SENDING --all written--> WAITING --head--> BODY
 *   BODY --message complete (body_bytes)--> IDLE (pool; reused by fatia_upx_start) | closed
 *   IDLE --peer closed or sent bytes (on_idle_read)--> closed
 * Backpressure: fatia_upx_pause stops reading the socket (TCP then slows the server).
 */
#ifndef FATIA_GATEWAY_UPSTREAM_H
#define FATIA_GATEWAY_UPSTREAM_H

#include "base/compat.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include "base/clock.h"
#include "http/http1.h"

struct event_base;
struct fatia_upx;

struct fatia_upstream {
    struct event_base *base;
    struct sockaddr_storage addr;
    socklen_t addr_len;
    struct fatia_upx *idle; /* idle pool, most recent first */
    unsigned n_idle, max_idle;
    unsigned n_open; /* connections open (idle or busy) */
    fatia_usec_t connect_timeout;
    fatia_usec_t response_timeout; /* request sent to response head; 0 = none */
};

struct fatia_upx_ops {
    int (*on_head)(void *ud, const struct fatia_http_head *h, const char *raw, size_t n);
    int (*on_body)(void *ud, const char *raw, size_t n);   /* may be NULL */
    void (*on_payload)(void *ud, const char *p, size_t n); /* may be NULL */
    void (*on_done)(void *ud);
    void (*on_error)(void *ud, int err, bool responded, bool reused);
    /* Everything one read returned has been delivered (the exchange goes on). May be NULL. */
    void (*on_read_end)(void *ud);
};

/* Callbacks other than on_done/on_error may return a negative value to abort the exchange
 * (the connection is closed, on_error is not called). */

void fatia_upx_init(struct fatia_upstream *u, struct event_base *base,
                    const struct sockaddr_storage *addr, socklen_t addr_len);
/* Closes the idle connections. Busy ones belong to their exchanges and must be aborted or
 * finished first. */
void fatia_upx_release(struct fatia_upstream *u);

#define FATIA_UPX_HEAD_REQUEST (1u << 0) /* the request was HEAD: no body follows the head */
#define FATIA_UPX_FRESH        (1u << 1) /* do not take a pooled connection */

/* Starts an exchange. The request bytes in iov (at most 4 pieces) are borrowed: they must stay
 * valid until the exchange ends. 0 and *ret, or -ENOMEM / -errno (socket creation). */
int fatia_upx_start(struct fatia_upstream *u, const struct iovec *iov, int n_iov, unsigned flags,
                    const struct fatia_upx_ops *ops, void *ud, struct fatia_upx **ret);
void fatia_upx_pause(struct fatia_upx *x, bool paused);
/* Ends the exchange without callbacks; the connection is closed. */
void fatia_upx_abort(struct fatia_upx *x);

#endif
