/*
 * apiserver/http.h: HTTP/1.1 server on libevent bufferevents.
 *
 * Model: one connection serves one request at a time (pipelined requests wait in the input
 * buffer); a request is read whole (head, then a Content-Length or chunked body, both bounded)
 * before the handler sees it. The handler answers at once or later (a write waits for its group
 * commit) with fatia_api_http_reply, or streams a chunked answer (watch, logs) with
 * fatia_api_http_stream_*. Every request is finished exactly once by the handler, even when the
 * client went away meanwhile: then the request is detached from its connection and finishing it
 * only frees it; the close callback tells a streaming handler to stop.
 *
 * Limits (struct fatia_api_http_opts): head size (431), body size (413), one deadline for a whole
 * request to arrive after the connection became idle (408, then close: this also closes idle
 * keep-alive connections and slow-loris senders), a write timeout (a client that reads nothing
 * for that long is dropped), and for streams a bound on unsent output (a watcher that falls that
 * far behind is dropped rather than buffered without end).
 *
 * The head parser, the chunked decoder, the reason phrases and what a malformed head is answered
 * are the shared HTTP/1.1 module's (http/http1.h), so this server and the gateway are exactly
 * as strict as each other (RFC 9112: conflicting Content-Length 400, a transfer coding other
 * than chunked 501, a bare LF in the chunked framing 400).
 *
 * Rejected: evhttp (its own HTML error pages for 413/431 where clients expect a metav1.Status,
 * no bound on a stream's output, no request deadline separate from the per-read timeout).
 */
#ifndef FATIA_APISERVER_HTTP_H
#define FATIA_APISERVER_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/str.h"
#include "http/http1.h"

/* ---- server ---- */

struct event_base;
struct fatia_api_http_server;
struct fatia_api_http_req;

struct fatia_api_http_opts {
    size_t max_head_bytes;      /* 0 = 64 KiB */
    size_t max_body_bytes;      /* 0 = 3 MiB (kube-apiserver's limit) */
    fatia_usec_t idle_timeout;  /* 0 = 60 s: a whole request must arrive within it */
    fatia_usec_t write_timeout; /* 0 = 60 s */
    size_t max_stream_backlog;  /* 0 = 16 MiB of unsent stream output */
    size_t max_conns;           /* 0 = 4096 */
    void *tls_ctx;              /* an SSL_CTX (tls.h) to serve HTTPS; NULL = plain HTTP */
};

typedef void (*fatia_api_http_handler_fn)(void *arg, struct fatia_api_http_req *req);

/* Builds a server on base. handler(arg, req) runs for each complete request. 0 or -ENOMEM. */
int fatia_api_http_server_new(struct event_base *base, const struct fatia_api_http_opts *opts,
                              fatia_api_http_handler_fn handler, void *arg,
                              struct fatia_api_http_server **ret);

/* Listens on host:port (port 0: any free port); *ret_port gets the port bound. 0 or -errno. */
int fatia_api_http_server_listen(struct fatia_api_http_server *s, const char *host, uint16_t port,
                                 uint16_t *ret_port);

/* Stops accepting; open connections stay until freed. */
void fatia_api_http_server_stop_listening(struct fatia_api_http_server *s);

/* Closes every connection (detaching their requests, running close callbacks) and frees the
 * server. Requests still held by handlers stay valid until finished. NULL is fine. */
void fatia_api_http_server_free(struct fatia_api_http_server *s);

/* Number of open connections, requests served (for tests and metrics). */
size_t fatia_api_http_server_conns(const struct fatia_api_http_server *s);

/* ---- requests ---- */

const struct fatia_http_head *fatia_api_http_req_head(const struct fatia_api_http_req *r);
/* The body (NUL-terminated; len may be 0). */
const char *fatia_api_http_req_body(const struct fatia_api_http_req *r, size_t *ret_len);
/* The peer's address as text ("127.0.0.1:53422"), for logs. */
const char *fatia_api_http_req_peer(const struct fatia_api_http_req *r);
/* Counts one more rerun of the request by its handler (rerun.c) and returns the count, this one
 * included. */
unsigned fatia_api_http_req_count_run(struct fatia_api_http_req *r);
/* Whether the client is still connected. */
bool fatia_api_http_req_connected(const struct fatia_api_http_req *r);

/* Handler data, and the callback run once if the connection closes before the request is
 * finished (the handler may finish the request inside it). */
void fatia_api_http_req_set_close_cb(struct fatia_api_http_req *r, void (*cb)(void *arg),
                                     void *arg);

/* Adds a response header (before the reply or stream start). 0 or -ENOMEM. */
int fatia_api_http_add_header(struct fatia_api_http_req *r, const char *name, const char *value);

/* Sends a complete response and finishes the request (r is freed). body may be NULL when n is 0.
 * close: ask the connection to close after it. */
void fatia_api_http_reply(struct fatia_api_http_req *r, int status, const char *content_type,
                          const void *body, size_t n);

/* Answers 101 Switching Protocols (with the headers added so far) and hands the connection
 * over: the request is finished, and the returned bufferevent (TLS or not; input that followed
 * the head is in its input buffer) belongs to the caller, which sets its callbacks and frees
 * it. The server counts it no more. NULL when the client is gone already. */
struct bufferevent;
struct bufferevent *fatia_api_http_upgrade(struct fatia_api_http_req *r);
/* The same without writing anything: the caller answers on the connection itself (the node
 * proxy, nodeproxy.c, relays the node's own answer). */
struct bufferevent *fatia_api_http_take(struct fatia_api_http_req *r);
/* The connection's SSL (an OpenSSL SSL *), or NULL (plain HTTP, or the client is gone): a
 * handler that checks the peer's certificate (nodeserve.c). */
void *fatia_api_http_req_ssl(const struct fatia_api_http_req *r);

/* Same, taking the body from an evbuffer (moved, not copied; evbuf is left empty). */
struct evbuffer;
void fatia_api_http_reply_evbuf(struct fatia_api_http_req *r, int status, const char *content_type,
                                struct evbuffer *evbuf);

/* Like fatia_api_http_stream_write (bounded) or _unbounded, but the bytes are not copied: the
 * stream holds them until sent, then calls unref(data, n, arg) (also when the stream goes; the
 * caller counts one reference per successful call). 0, -ENOBUFS (dropped, as the copying write
 * does; unref is not called), -EPIPE or -ENOMEM (unref not called). */
typedef void (*fatia_api_http_unref_fn)(const void *data, size_t n, void *arg);
int fatia_api_http_stream_write_ref(struct fatia_api_http_req *r, const void *data, size_t n,
                                    bool bounded, fatia_api_http_unref_fn unref, void *arg);

/* Drops a stream's connection now, unsent bytes and all (its memory is freed at once; no close
 * callback runs). */
void fatia_api_http_stream_drop(struct fatia_api_http_req *r);

/* Starts a chunked response. */
void fatia_api_http_stream_start(struct fatia_api_http_req *r, int status,
                                 const char *content_type);
/* Appends one chunk. 0; -EPIPE when the client is gone; -ENOBUFS when the client fell more than
 * max_stream_backlog behind: the connection was dropped (no close callback runs for that). The
 * request must still be finished with fatia_api_http_stream_end. */
int fatia_api_http_stream_write(struct fatia_api_http_req *r, const void *data, size_t n);
/* The same without the backlog bound: for output as long as a list answer (a watch's initial
 * state), which the client asked for at once. */
int fatia_api_http_stream_write_unbounded(struct fatia_api_http_req *r, const void *data, size_t n);
/* Unsent bytes of this stream (0 when detached). */
size_t fatia_api_http_stream_backlog(const struct fatia_api_http_req *r);
/* Ends the stream and finishes the request (r is freed). */
void fatia_api_http_stream_end(struct fatia_api_http_req *r);

#endif
