/*
 * gateway/gateway.c: the gateway (see gateway.h for the data path and the endpoint states).
 *
 * Ownership: the gateway owns its endpoints; a proxied request (struct gw_req) and an internal
 * fetch (struct gw_fetch: health, metrics, /v1/models fan-out, oracle probes) hold a reference on
 * the endpoint they talk to, so an endpoint that leaves the pool is freed only when its last
 * exchange ends. A gw_req belongs to its client connection: it ends with the response
 * (fatia_httpd_done) or with on_abort when the client goes away, whichever comes first; the
 * upstream exchange is aborted in the second case.
 *
 * Request states (function):
 *   scanned (on_request) -> PROBING (oracle only: probes in flight, probe_done) -> FORWARDING
 *   (forward: exchange started) -> RELAYING (up_head: head sent to the client) -> done (up_done)
 *   FORWARDING --no response byte (up_error)--> FORWARDING on another endpoint (once) | 502/503
 *   RELAYING --upstream failed (up_error)--> client connection closed (no replay)
 */
#include "base/compat.h"

#include "gateway/gateway.h"

#include <sys/uio.h>

#include <event2/event.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "base/str.h"
#include "gateway/hist.h"
#include "gateway/httpd.h"
#include "gateway/netaddr.h"
#include "gateway/pd.h"
#include "gateway/prefix.h"
#include "gateway/prom.h"
#include "gateway/reqbody.h"
#include "gateway/sse.h"
#include "gateway/tenants.h"
#include "gateway/upstream.h"
#include "http/http1.h"
#include "model/selector.h"

enum ep_state {
    EP_PROBING,
    EP_READY,
    EP_DOWN,
};

struct gw_endpoint {
    struct fatia_gateway *g;
    uint32_t id;
    char url[512];
    struct fatia_url u;
    char dest_header[320]; /* "x-gateway-destination-endpoint: host:port\r\n" */
    size_t dest_header_len;
    json_t *labels;
    enum fatia_pd_role role; /* from the llm-d.ai/role label */
    bool pd_cand;            /* scratch of pick_pd: a prefill candidate of the request */
    struct fatia_upstream up;
    enum ep_state state;
    bool removed, matches;
    unsigned refs;
    struct fatia_engine_metrics m;
    fatia_usec_t m_at;
    struct gw_fetch *scrape_f, *health_f;
    uint32_t health_failures; /* consecutive */
    uint32_t inflight;
    uint64_t inflight_tokens;
    uint64_t requests, failures;
    struct event *ev_scrape, *ev_health;
};

struct gw_fetch;
typedef void (*gw_fetch_fn)(struct gw_fetch *f, int err);

struct gw_fetch {
    struct fatia_gateway *g;
    struct gw_endpoint *ep;
    struct fatia_upx *x;
    struct event *ev_timeout;
    char head[512];
    struct iovec iov[2];
    int status;
    struct fatia_buf body;
    gw_fetch_fn cb;
    void *ud;
    size_t slot; /* for fan-outs */
};

enum req_state {
    RQ_PROBING,
    RQ_FORWARDING,
    RQ_RELAYING,
};

/* What a client connection's context points at. */
enum ctx_kind {
    CTX_REQ,
    CTX_MODELS,
};

struct gw_req {
    enum ctx_kind kind; /* CTX_REQ */
    struct fatia_gateway *g;
    struct fatia_httpd_conn *c;
    const struct fatia_http_head *head; /* the client's, valid while the request lives */
    const char *body;
    size_t body_len;
    enum req_state st;
    bool infer; /* one of the scored inference paths */
    struct gw_endpoint *ep;
    struct gw_endpoint *failed; /* the endpoint a retry must avoid */
    struct fatia_upx *x;
    struct fatia_buf uphead; /* rebuilt request head, when the raw one cannot go as is */
    struct fatia_reqbody rb;
    const char *tenant; /* with API keys: the key's tenant (borrowed from the tenants table) */
    uint64_t *hashes;
    size_t n_hashes;
    uint64_t tokens;
    char prefiller[280]; /* P/D: the prefill pod's host:port, sent as x-prefiller-host-port */
    int attempts;
    int same_retries;  /* fresh connections to the same endpoint after a reset (up_error) */
    bool client_close; /* the client response must end with a close */
    bool dechunk;      /* HTTP/1.0 client: strip the chunked coding */
    bool sse;
    bool up_chunked; /* the upstream's answer is chunked and relayed as is: dch tracks framing */
    int fail_err;    /* the last upstream failure before any answer (for the final error) */
    char fail_name[280]; /* its host:port */
    fatia_usec_t t_received, t_dispatched, t_head_in;
    bool added_done; /* the added latency was recorded */
    struct fatia_sse scan;
    struct fatia_http_chunked dch;
    /* oracle probes */
    struct gw_fetch **probes;
    uint32_t *probe_tokens;
    size_t n_probes, probes_left;
    /* held for a pool without a ready replica (scale from zero): in g->held until then */
    bool held, was_held;
    fatia_usec_t hold_deadline;
    struct gw_req *held_prev, *held_next;
};

/* counters of the gateway's own /metrics */
enum {
    ERR_BAD_REQUEST,
    ERR_NO_ENDPOINT,
    ERR_SATURATED,
    ERR_UPSTREAM_CONNECT,
    ERR_UPSTREAM_RESET,
    ERR_UPSTREAM_TIMEOUT,
    ERR_UPSTREAM_PARTIAL,
    ERR_CLIENT_ABORT,
    ERR_N,
};

static const char *const err_names[ERR_N] = {
    "bad_request",    "no_endpoint",      "saturated",        "upstream_connect",
    "upstream_reset", "upstream_timeout", "upstream_partial", "client_abort"};

struct fatia_gateway {
    struct event_base *base;
    struct fatia_gateway_config cfg;
    json_t *idle_pools;  /* [{pool: ns/name, name}] without a ready replica */
    struct gw_req *held; /* requests waiting for one (cfg.hold_timeout) */
    struct event *hold_timer;
    uint64_t held_total, held_expired;
    void (*on_demand)(void *ud, const char *pool);
    void *on_demand_ud;
    struct fatia_selector *selector;
    struct fatia_httpd *httpd;
    struct fatia_prefix_index *index;
    struct gw_endpoint **eps;
    size_t n_eps, cap_eps;
    uint8_t *id_used;
    size_t n_ids;
    uint64_t rng;
    size_t rr;
    /* scratch for scheduling, grown with the pool */
    struct fatia_sched_endpoint *snap;
    uint32_t *match;
    size_t snap_cap;
    uint32_t *by_id;
    size_t by_id_cap;
    struct fatia_buf headbuf; /* scratch for response heads */
    /* metrics */
    uint64_t requests_by_code[6]; /* 2xx 3xx 4xx 5xx other, index 5 = 429 */
    uint64_t codes_503, codes_502, codes_400;
    uint64_t errors[ERR_N];
    uint64_t decisions[FATIA_ROUTE_N];
    uint64_t pfx_matched, pfx_total, retries, streamed_events, probe_failures;
    uint64_t stream_errors; /* SSE error events written on cut streams */
    uint64_t unauthorized;  /* requests refused for want of a valid API key */
    uint64_t pd[3];         /* P/D decisions: disaggregated, decode only, no prefill pod ready */
    struct fatia_hist added;
};

static void ep_unref(struct gw_endpoint *ep);
static void forward(struct gw_req *q);
static int start_upx(struct gw_req *q, unsigned flags);

/* ---- endpoints ---- */

static void ep_free(struct gw_endpoint *ep)
{
    struct fatia_gateway *g = ep->g;

    fatia_upx_release(&ep->up);
    if (ep->ev_scrape)
        event_free(ep->ev_scrape);
    if (ep->ev_health)
        event_free(ep->ev_health);
    json_decref(ep->labels);
    if (ep->id < g->n_ids)
        g->id_used[ep->id] = 0;
    fatia_free(ep);
}

static void ep_unref(struct gw_endpoint *ep)
{
    if (--ep->refs == 0 && ep->removed)
        ep_free(ep);
}

static void ep_set_state(struct gw_endpoint *ep, enum ep_state st, const char *why)
{
    if (ep->state == st)
        return;
    if (st == EP_READY)
        fatia_log(FATIA_LOG_INFO, "gateway: endpoint '%s' is ready", ep->url);
    else if (st == EP_DOWN && ep->state == EP_READY)
        fatia_log(FATIA_LOG_WARNING, "gateway: endpoint '%s' is down: %s, taking it out", ep->url,
                  why);
    ep->state = st;
}

static bool ep_routable(const struct gw_endpoint *ep)
{
    return !ep->removed && ep->matches && ep->state == EP_READY;
}

/* ---- internal fetches ---- */

static void fetch_end(struct gw_fetch *f, int err)
{
    gw_fetch_fn cb = f->cb;

    if (f->ev_timeout)
        event_free(f->ev_timeout);
    f->ev_timeout = NULL;
    f->x = NULL;
    cb(f, err);
    fatia_buf_release(&f->body);
    ep_unref(f->ep);
    fatia_free(f);
}

static int fetch_head(void *ud, const struct fatia_http_head *h, const char *raw, size_t n)
{
    struct gw_fetch *f = ud;
    (void)raw;
    (void)n;
    f->status = h->status;
    return 0;
}

static void fetch_payload(void *ud, const char *p, size_t n)
{
    struct gw_fetch *f = ud;
    if (fatia_buf_append(&f->body, p, n) < 0)
        f->status = -1;
}

static void fetch_done(void *ud)
{
    struct gw_fetch *f = ud;
    fetch_end(f, f->status < 0 ? -FATIA_E_LIMIT : 0);
}

static void fetch_error(void *ud, int err, bool responded, bool reused)
{
    (void)responded;
    (void)reused;
    fetch_end(ud, err);
}

static void fetch_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct gw_fetch *f = arg;
    (void)fd;
    (void)what;
    fatia_upx_abort(f->x);
    fetch_end(f, -ETIMEDOUT);
}

/* Starts GET/POST path on ep; cb is called once (from the loop), with err 0 and f->status,
 * f->body on an answer. body is borrowed until then. */
static int fetch_typed(struct gw_endpoint *ep, const char *method, const char *path,
                       const char *ctype, const char *body, size_t body_len, fatia_usec_t timeout,
                       gw_fetch_fn cb, void *ud, struct gw_fetch **ret)
{
    static const struct fatia_upx_ops ops = {fetch_head, NULL, fetch_payload, fetch_done,
                                             fetch_error};
    struct gw_fetch *f = fatia_calloc(1, sizeof(*f));
    struct timeval tv = {(time_t)(timeout / FATIA_USEC_PER_SEC),
                         (suseconds_t)(timeout % FATIA_USEC_PER_SEC)};
    int n, r;

    if (!f)
        return -ENOMEM;
    f->g = ep->g;
    f->ep = ep;
    f->cb = cb;
    f->ud = ud;
    fatia_buf_init(&f->body, 16u << 20);
    if (body)
        n = snprintf(f->head, sizeof(f->head),
                     "%s %s%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: fatia-gateway\r\n"
                     "Content-Type: %s\r\nContent-Length: %zu\r\n\r\n",
                     method, ep->u.prefix, path, ep->u.hostport, ctype, body_len);
    else
        n = snprintf(f->head, sizeof(f->head),
                     "%s %s%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: fatia-gateway\r\n\r\n", method,
                     ep->u.prefix, path, ep->u.hostport);
    f->iov[0] = (struct iovec){f->head, (size_t)n};
    f->iov[1] = (struct iovec){(void *)body, body ? body_len : 0};
    f->ev_timeout = event_new(ep->g->base, -1, 0, fetch_timeout, f);
    if (!f->ev_timeout) {
        fatia_free(f);
        return -ENOMEM;
    }
    r = fatia_upx_start(&ep->up, f->iov, 2, 0, &ops, f, &f->x);
    if (r < 0) {
        event_free(f->ev_timeout);
        fatia_free(f);
        return r;
    }
    ep->refs++;
    event_add(f->ev_timeout, &tv);
    if (ret)
        *ret = f;
    return 0;
}

static int fetch(struct gw_endpoint *ep, const char *method, const char *path, const char *body,
                 size_t body_len, fatia_usec_t timeout, gw_fetch_fn cb, void *ud,
                 struct gw_fetch **ret)
{
    return fetch_typed(ep, method, path, "application/json", body, body_len, timeout, cb, ud, ret);
}

/* Cancels a fetch without its callback. */
static void fetch_cancel(struct gw_fetch *f)
{
    fatia_upx_abort(f->x);
    event_free(f->ev_timeout);
    fatia_buf_release(&f->body);
    ep_unref(f->ep);
    fatia_free(f);
}

/* ---- health checks and metrics scrapes ---- */

static void arm(struct event *ev, fatia_usec_t t)
{
    struct timeval tv = {(time_t)(t / FATIA_USEC_PER_SEC), (suseconds_t)(t % FATIA_USEC_PER_SEC)};
    event_add(ev, &tv);
}

static void health_done(struct gw_fetch *f, int err)
{
    struct gw_endpoint *ep = f->ep;
    char why[96];

    ep->health_f = NULL;
    fatia_debug("gateway: health of '%s': err %d status %d", ep->url, err, f->status);
    if (ep->removed)
        return;
    if (!err && f->status >= 200 && f->status < 300) {
        ep->health_failures = 0;
        ep_set_state(ep, EP_READY, NULL);
        return;
    }
    /* a ready endpoint goes down after failure_threshold failed checks in a row (a request
     * that fails takes it out at once) */
    if (++ep->health_failures < ep->g->cfg.health_failure_threshold && ep->state == EP_READY)
        return;
    if (err)
        snprintf(why, sizeof(why), "%u health checks failed: %s", ep->health_failures,
                 fatia_strerror(err));
    else
        snprintf(why, sizeof(why), "health check answered %d", f->status);
    ep_set_state(ep, EP_DOWN, why);
}

static void on_health(evutil_socket_t fd, short what, void *arg)
{
    struct gw_endpoint *ep = arg;
    fatia_usec_t t = ep->g->cfg.health_interval;

    (void)fd;
    (void)what;
    if (!ep->health_f)
        fetch(ep, "GET", "/health", NULL, 0, ep->g->cfg.health_timeout, health_done, NULL,
              &ep->health_f);
    arm(ep->ev_health, t);
}

static void scrape_done(struct gw_fetch *f, int err)
{
    struct gw_endpoint *ep = f->ep;
    struct fatia_gateway *g = ep->g;
    struct fatia_engine_metrics m;

    ep->scrape_f = NULL;
    if (ep->removed || err || f->status != 200)
        return;
    fatia_prom_scan_vllm(f->body.p, f->body.len, &m);
    if (!(m.have & (FATIA_PROM_WAITING | FATIA_PROM_KV)))
        return;
    ep->m = m;
    ep->m_at = fatia_now_mono_usec();
    if (!g->cfg.lru_capacity && (m.have & FATIA_PROM_CACHECFG) && m.num_gpu_blocks) {
        /* index blocks are 64 characters, ~16 tokens */
        uint64_t blocks = m.num_gpu_blocks * m.block_size / 16;
        fatia_prefix_index_set_capacity(g->index, ep->id, (size_t)(blocks ? blocks : 1));
    }
}

static void on_scrape(evutil_socket_t fd, short what, void *arg)
{
    struct gw_endpoint *ep = arg;
    const struct fatia_gateway_config *c = &ep->g->cfg;

    (void)fd;
    (void)what;
    if (ep->state == EP_READY && !ep->scrape_f)
        fetch(ep, "GET", "/metrics", NULL, 0, c->metrics_staleness, scrape_done, NULL,
              &ep->scrape_f);
    arm(ep->ev_scrape, c->metrics_interval);
}

static bool fresh(const struct gw_endpoint *ep, fatia_usec_t now)
{
    return ep->m_at && now - ep->m_at <= ep->g->cfg.metrics_staleness;
}

/* ---- the client's answer ---- */

static void count_code(struct fatia_gateway *g, int status)
{
    if (status == 429)
        g->requests_by_code[5]++;
    else if (status >= 200 && status < 600)
        g->requests_by_code[status / 100 - 2]++;
    else
        g->requests_by_code[4]++;
    if (status == 503)
        g->codes_503++;
    if (status == 502)
        g->codes_502++;
    if (status == 400)
        g->codes_400++;
}

static void req_free(struct gw_req *q)
{
    for (size_t i = 0; i < q->n_probes; i++)
        if (q->probes && q->probes[i])
            fetch_cancel(q->probes[i]);
    fatia_free(q->probes);
    fatia_free(q->probe_tokens);
    fatia_free(q->hashes);
    fatia_buf_release(&q->uphead);
    fatia_sse_release(&q->scan);
    fatia_free(q);
}

/* Releases what the request holds on its endpoint. */
static void req_leave_endpoint(struct gw_req *q)
{
    if (!q->ep)
        return;
    q->ep->inflight--;
    q->ep->inflight_tokens -= q->tokens;
    ep_unref(q->ep);
    q->ep = NULL;
}

static void respond_error(struct gw_req *q, int status, int err, const char *type, const char *msg)
{
    struct fatia_httpd_conn *c = q->c;

    if (err >= 0)
        q->g->errors[err]++;
    count_code(q->g, status);
    req_leave_endpoint(q);
    fatia_httpd_set_ctx(c, NULL);
    req_free(q);
    fatia_httpd_respond_error(c, status, type, "%s", msg);
}

/* ---- relaying the upstream answer ---- */

static void up_payload(void *ud, const char *p, size_t n)
{
    struct gw_req *q = ud;

    if (q->sse)
        fatia_sse_feed(&q->scan, p, n);
}

static void dechunked(void *ud, const char *p, size_t n)
{
    struct gw_req *q = ud;
    fatia_httpd_write(q->c, p, n);
}

static int up_head(void *ud, const struct fatia_http_head *h, const char *raw, size_t n)
{
    struct gw_req *q = ud;
    struct fatia_buf *bp = &q->g->headbuf, b;
    const struct fatia_str *ct = fatia_http_header_get(h, "content-type");
    bool client_keep = fatia_httpd_client_keep_alive(q->c);
    bool minor0 = fatia_httpd_client_minor(q->c) == 0;
    bool close_delimited =
        !(h->flags & (FATIA_HTTP_CHUNKED | FATIA_HTTP_NO_BODY)) && h->content_length < 0;
    int r;

    q->t_head_in = fatia_now_mono_usec();
    q->st = RQ_RELAYING;
    q->sse = ct && ct->n >= 17 && !strncmp(ct->p, "text/event-stream", 17);
    q->dechunk = minor0 && (h->flags & FATIA_HTTP_CHUNKED);
    q->up_chunked = !q->dechunk && (h->flags & FATIA_HTTP_CHUNKED);
    q->client_close = !client_keep || close_delimited || q->dechunk;
    fatia_http_chunked_init(&q->dch);
    count_code(q->g, h->status);

    /* status line, our header, the upstream's headers minus hop-by-hop ones */
    /* the gateway's scratch buffer: written (or queued by copy) before it is reused */
    fatia_buf_reset(bp);
    b = *bp;
    fatia_buf_reserve(&b, n + 400);
    fatia_buf_append(&b, raw, h->first_line_len);
    fatia_buf_append(&b, q->ep->dest_header, q->ep->dest_header_len);
    if (!(h->flags & FATIA_HTTP_HOP_BY_HOP) && !q->dechunk && n >= 4 &&
        !memcmp(raw + n - 4, "\r\n\r\n", 4)) {
        fatia_buf_append(&b, raw + h->first_line_len, n - h->first_line_len - 2);
    } else {
        for (size_t i = 0; i < h->n_headers; i++) {
            const struct fatia_http_header *hd = &h->headers[i];
            bool te = fatia_str_eqz(hd->name, "transfer-encoding") ||
                      fatia_str_eqz(hd->name, "Transfer-Encoding");
            if (fatia_http_is_hop_by_hop(hd->name) && !(te && !q->dechunk))
                continue;
            fatia_buf_append(&b, hd->name.p, hd->name.n);
            fatia_buf_append(&b, ": ", 2);
            fatia_buf_append(&b, hd->value.p, hd->value.n);
            fatia_buf_append(&b, "\r\n", 2);
        }
    }
    if (q->client_close)
        fatia_buf_puts(&b, "Connection: close\r\n");
    else if (minor0)
        fatia_buf_puts(&b, "Connection: keep-alive\r\n");
    r = fatia_buf_puts(&b, "\r\n");
    /* the head waits for the body bytes of the same read: one write for both */
    fatia_httpd_cork(q->c);
    if (r == 0)
        r = fatia_httpd_write(q->c, b.p, b.len);
    *bp = b;
    if (r < 0)
        return r; /* the client is gone: on_abort follows */
    return 0;     /* congestion is looked at once the read is delivered (up_read_end) */
}

static int up_body(void *ud, const char *p, size_t n)
{
    struct gw_req *q = ud;
    int r;

    if (q->dechunk) {
        if (fatia_http_chunked_feed(&q->dch, p, n, dechunked, q) < 0)
            return -FATIA_E_PARSE;
        r = 0;
    } else {
        /* track the framing relayed (to know where an error event may go); the upstream's own
         * decoder has accepted these bytes already */
        if (q->up_chunked && q->sse)
            fatia_http_chunked_feed(&q->dch, p, n, NULL, NULL);
        r = fatia_httpd_write(q->c, p, n);
    }
    return r < 0 ? r : 0;
}

/* The gateway's own time on a request: request received to written upstream, plus response head
 * read to written to the client (the upstream's service time excluded). */
static void record_added(struct gw_req *q)
{
    if (q->added_done || !q->t_head_in)
        return;
    q->added_done = true;
    fatia_hist_observe(
        &q->g->added,
        (double)((q->t_dispatched - q->t_received) + (fatia_now_mono_usec() - q->t_head_in)) / 1e6);
}

static void up_read_end(void *ud)
{
    struct gw_req *q = ud;

    fatia_httpd_uncork(q->c);
    record_added(q);
    if (fatia_httpd_congested(q->c) && q->x)
        fatia_upx_pause(q->x, true);
}

static void up_done(void *ud)
{
    struct gw_req *q = ud;
    struct fatia_httpd_conn *c = q->c;
    bool keep = !q->client_close;

    q->x = NULL;
    fatia_httpd_uncork(c);
    record_added(q);
    q->g->streamed_events += q->scan.events;
    req_leave_endpoint(q);
    fatia_httpd_set_ctx(c, NULL);
    req_free(q);
    fatia_httpd_done(c, keep);
}

/* Marks ep failed for the error of an exchange. */
static void ep_fail(struct gw_endpoint *ep, int err)
{
    char why[96];

    ep->failures++;
    snprintf(why, sizeof(why), "request failed: %s", fatia_strerror(err));
    ep_set_state(ep, EP_DOWN, why);
}

static int classify(int err)
{
    if (err == -ETIMEDOUT)
        return ERR_UPSTREAM_TIMEOUT;
    if (err == -ECONNREFUSED || err == -EHOSTUNREACH || err == -ENETUNREACH)
        return ERR_UPSTREAM_CONNECT;
    return ERR_UPSTREAM_RESET;
}

/* Answers a request whose upstream failed before answering: 504 for a timeout, 502 otherwise,
 * naming the model server and the limit that ran out. */
static void respond_upstream_failure(struct gw_req *q)
{
    const struct fatia_gateway_config *cfg = &q->g->cfg;
    char msg[512];

    if (q->fail_err == -ETIME || q->fail_err == -ETIMEDOUT) {
        bool conn = q->fail_err == -ETIMEDOUT;
        snprintf(msg, sizeof(msg), "the model server %s %s within %.3gs (--%s-timeout)",
                 q->fail_name, conn ? "did not accept a connection" : "sent no response",
                 (double)(conn ? cfg->connect_timeout : cfg->upstream_timeout) / 1e6,
                 conn ? "connect" : "upstream");
        respond_error(q, 504, -1, "GatewayTimeout", msg);
        return;
    }
    snprintf(msg, sizeof(msg), "the model server %s failed before answering: %s", q->fail_name,
             fatia_strerror(q->fail_err));
    respond_error(q, 502, -1, "BadGateway", msg);
}

/* The upstream cut a streamed (SSE) answer: where the relayed bytes end between events (and,
 * when relayed chunked, between chunks), one more event tells OpenAI-compatible clients what
 * happened, in the shape vLLM and OpenAI stream errors: data: {"error":{...}}. The stream is
 * then closed without its last chunk, so a client reading the framing sees the truncation too.
 * Mid-event (or mid-chunk) nothing can be added that a client would read as an event. */
static void stream_error_event(struct gw_req *q, int err)
{
    char ev[768], chunk[800];
    int n, m;

    if (!fatia_gateway_sse_at_boundary(&q->scan) ||
        (q->up_chunked && !fatia_http_chunked_at_boundary(&q->dch)))
        return;
    n = snprintf(ev, sizeof(ev),
                 "data: {\"error\":{\"object\":\"error\",\"message\":\"the model server %s "
                 "cut the stream: %s\",\"type\":\"BadGateway\",\"param\":null,\"code\":502}}\n\n",
                 q->ep->u.hostport, fatia_strerror(err));
    if (n <= 0 || (size_t)n >= sizeof(ev))
        return;
    if (q->up_chunked) {
        m = snprintf(chunk, sizeof(chunk), "%x\r\n%s\r\n", n, ev);
        if (m > 0 && (size_t)m < sizeof(chunk))
            fatia_httpd_write(q->c, chunk, (size_t)m);
    } else {
        fatia_httpd_write(q->c, ev, (size_t)n);
    }
    q->g->stream_errors++;
}

static void up_error(void *ud, int err, bool responded, bool reused)
{
    struct gw_req *q = ud;
    struct gw_endpoint *ep = q->ep;

    q->x = NULL;
    if (q->st == RQ_RELAYING) {
        /* part of the answer is with the client: no replay; an SSE error event (where the
         * framing allows one) and closing tell it */
        q->g->errors[ERR_UPSTREAM_PARTIAL]++;
        ep_fail(ep, err);
        if (q->sse)
            stream_error_event(q, err);
        req_leave_endpoint(q);
        {
            struct fatia_httpd_conn *c = q->c;
            fatia_httpd_set_ctx(c, NULL);
            req_free(q);
            fatia_httpd_done(c, false);
        }
        return;
    }
    q->fail_err = err;
    snprintf(q->fail_name, sizeof(q->fail_name), "%s", ep->u.hostport);
    if (err == -ETIME) {
        /* no answer within --upstream-timeout: the server may still be working on it, so the
         * request is not sent again elsewhere */
        q->g->errors[ERR_UPSTREAM_TIMEOUT]++;
        ep_fail(ep, err);
        req_leave_endpoint(q);
        respond_upstream_failure(q);
        return;
    }
    if (!responded && (reused || err == -ECONNRESET || err == -EPIPE) && q->same_retries < 2) {
        /* a keep-alive connection the server had closed, or a connection reset before any
         * answer: try again on a fresh one to the same endpoint, before calling it down. The
         * reset is what a draining replica's listener does to the connections still in its
         * accept queue; where replicas share a port (the process mode's SO_REUSEPORT: one
         * endpoint for all of them) the fresh connection reaches a live one, where each has its
         * own endpoint it is refused at once and the request goes to another */
        q->same_retries++;
        q->g->retries++;
        if (start_upx(q, FATIA_UPX_FRESH) == 0)
            return;
    }
    q->g->errors[classify(err)]++;
    ep_fail(ep, err);
    req_leave_endpoint(q);
    if (!responded && q->attempts < 2) {
        q->attempts++;
        q->g->retries++;
        q->failed = ep;
        forward(q);
        return;
    }
    respond_upstream_failure(q);
}

/* ---- routing ---- */

static bool in_subset(const struct gw_req *q, const struct gw_endpoint *ep)
{
    const struct fatia_str *sub =
        fatia_http_header_get(q->head, "x-gateway-destination-endpoint-subset");
    size_t i = 0, n;

    if (!sub)
        return true;
    n = strlen(ep->u.hostport);
    while (i < sub->n) {
        size_t s, e;
        while (i < sub->n && (sub->p[i] == ' ' || sub->p[i] == ','))
            i++;
        s = i;
        while (i < sub->n && sub->p[i] != ',')
            i++;
        e = i;
        while (e > s && sub->p[e - 1] == ' ')
            e--;
        if (e - s == n && !memcmp(sub->p + s, ep->u.hostport, n))
            return true;
    }
    return false;
}

static int grow_scratch(struct fatia_gateway *g)
{
    if (g->snap_cap >= g->n_eps)
        return 0;
    size_t cap = g->n_eps * 2;
    struct fatia_sched_endpoint *s = fatia_reallocarray(g->snap, cap, sizeof(*s));
    if (!s)
        return -ENOMEM;
    g->snap = s;
    uint32_t *m = fatia_reallocarray(g->match, cap, sizeof(*m));
    if (!m)
        return -ENOMEM;
    g->match = m;
    g->snap_cap = cap;
    return 0;
}

/* The request head for the upstream: the client's as is, unless hop-by-hop headers, HTTP/1.0 or
 * the endpoint's path prefix ask for a rebuilt one (only the head is copied, never the body). */
static int build_uphead(struct gw_req *q)
{
    const struct fatia_http_head *h = q->head;
    const char *prefix = q->ep->u.prefix;
    bool host = false;

    fatia_buf_reset(&q->uphead);
    /* with API keys the head is rebuilt without the tenant's key: it is not the model server's;
     * the P/D header is the gateway's alone (a client's would aim a decode server's prefill leg,
     * and its KV pull, at any address it likes) */
    if (!(h->flags & FATIA_HTTP_HOP_BY_HOP) && h->minor >= 1 && !prefix[0] && !q->g->cfg.tenants &&
        !q->prefiller[0] && !fatia_http_header_get(h, FATIA_PD_PREFILLER_HEADER))
        return 0;
    fatia_buf_printf(&q->uphead, "%.*s %s%.*s HTTP/1.1\r\n", (int)h->method.n, h->method.p, prefix,
                     (int)h->target.n, h->target.p);
    for (size_t i = 0; i < h->n_headers; i++) {
        const struct fatia_http_header *hd = &h->headers[i];
        if (fatia_http_is_hop_by_hop(hd->name))
            continue;
        if (q->g->cfg.tenants && hd->name.n == 13 && !strncasecmp(hd->name.p, "authorization", 13))
            continue;
        if (hd->name.n == strlen(FATIA_PD_PREFILLER_HEADER) &&
            !strncasecmp(hd->name.p, FATIA_PD_PREFILLER_HEADER, hd->name.n))
            continue;
        host |= hd->name.n == 4 && !strncasecmp(hd->name.p, "host", 4);
        fatia_buf_printf(&q->uphead, "%.*s: %.*s\r\n", (int)hd->name.n, hd->name.p,
                         (int)hd->value.n, hd->value.p);
    }
    if (!host)
        fatia_buf_printf(&q->uphead, "Host: %s\r\n", q->ep->u.hostport);
    if (q->prefiller[0])
        fatia_buf_printf(&q->uphead, "%s: %s\r\n", FATIA_PD_PREFILLER_HEADER, q->prefiller);
    return fatia_buf_puts(&q->uphead, "\r\n");
}

/* Starts the exchange with q->ep: the head (the client's own bytes, or the rebuilt one) and the
 * body straight from the client's buffer. */
static int start_upx(struct gw_req *q, unsigned flags)
{
    static const struct fatia_upx_ops ops = {up_head, up_body,  up_payload,
                                             up_done, up_error, up_read_end};
    struct iovec iov[2];

    iov[0] = q->uphead.len ? (struct iovec){q->uphead.p, q->uphead.len}
                           : (struct iovec){(void *)q->head->method.p, q->head->head_len};
    iov[1] = (struct iovec){(void *)q->body, q->body_len};
    if (fatia_str_eqz(q->head->method, "HEAD"))
        flags |= FATIA_UPX_HEAD_REQUEST;
    return fatia_upx_start(&q->ep->up, iov, 2, flags, &ops, q, &q->x);
}

/* route_by_model with API keys: a tenant reaches the pools of its own namespace only (tenant =
 * namespace; the pool label is "namespace/name"). */
static bool tenant_reaches(const struct fatia_gateway *g, const char *tenant,
                           const struct gw_endpoint *ep)
{
    const char *p;
    size_t tl;

    if (!g->cfg.route_by_model || !tenant)
        return true;
    p = fatia_json_str(ep->labels, FATIA_GATEWAY_POOL_LABEL);
    tl = strlen(tenant);
    return p && !strncmp(p, tenant, tl) && p[tl] == '/';
}

/* route_by_model: whether ep serves the request's model (its pool's name), for its tenant. */
static bool serves_model(const struct fatia_gateway *g, const struct gw_req *q,
                         const struct gw_endpoint *ep)
{
    const char *m;

    if (!g->cfg.route_by_model)
        return true;
    if (!q->rb.has_model || !tenant_reaches(g, q->tenant, ep))
        return false;
    m = fatia_json_str(ep->labels, FATIA_GATEWAY_MODEL_LABEL);
    return m && fatia_str_eqz(q->rb.model, m);
}

/* ---- scale from zero: requests held for a pool without a ready replica ---- */

/* The idle pool (no ready replica) that serves q's model for its tenant, or NULL. */
static const char *idle_pool_of(const struct gw_req *q)
{
    const struct fatia_gateway *g = q->g;
    size_t i;
    json_t *p;

    if (!q->rb.has_model)
        return NULL;
    json_array_foreach(g->idle_pools, i, p)
    {
        const char *key = fatia_json_str(p, "pool"), *name = fatia_json_str(p, "name");
        size_t tl = q->tenant ? strlen(q->tenant) : 0;
        if (!key || !name || !fatia_str_eqz(q->rb.model, name))
            continue;
        if (q->tenant && (strncmp(key, q->tenant, tl) || key[tl] != '/'))
            continue;
        return key;
    }
    return NULL;
}

static void hold_unlink(struct gw_req *q)
{
    if (!q->held)
        return;
    if (q->held_prev)
        q->held_prev->held_next = q->held_next;
    else
        q->g->held = q->held_next;
    if (q->held_next)
        q->held_next->held_prev = q->held_prev;
    q->held_prev = q->held_next = NULL;
    q->held = false;
}

/* Holds q (returns true) when holding is on, its deadline has not passed, and its model has a
 * pool that is idle (unknown: the model's pool has no ready replica; the demand is signalled) or
 * known but not yet routable (a replica just became Ready, its health not yet probed). */
static bool hold(struct gw_req *q, bool unknown)
{
    struct fatia_gateway *g = q->g;
    fatia_usec_t now = fatia_now_mono_usec();
    const char *pool = NULL;
    struct timeval tv = {0, 100000};

    if (g->cfg.hold_timeout <= 0 || q->fail_err)
        return false;
    if (unknown && !(pool = idle_pool_of(q)))
        return false;
    if (!unknown && !q->was_held && !idle_pool_of(q))
        return false; /* a pool with replicas none of which is routable: 503 now, as before */
    if (!q->was_held) {
        q->was_held = true;
        q->hold_deadline = now + g->cfg.hold_timeout;
        g->held_total++;
    }
    if (now >= q->hold_deadline) {
        g->held_expired++;
        return false;
    }
    if (pool && g->on_demand)
        g->on_demand(g->on_demand_ud, pool);
    q->held = true;
    q->held_next = g->held;
    if (g->held)
        g->held->held_prev = q;
    g->held = q;
    if (g->hold_timer && !evtimer_pending(g->hold_timer, NULL))
        evtimer_add(g->hold_timer, &tv);
    return true;
}

/* Every 100 ms while requests are held: each tries again (and is held again, or answered). */
static void on_hold_timer(evutil_socket_t fd, short what, void *arg)
{
    struct fatia_gateway *g = arg;
    struct gw_req *list = g->held;

    (void)fd;
    (void)what;
    g->held = NULL;
    for (struct gw_req *q = list; q; q = q->held_next)
        q->held = false;
    while (list) {
        struct gw_req *q = list;
        list = q->held_next;
        if (list)
            list->held_prev = NULL;
        q->held_prev = q->held_next = NULL;
        forward(q);
    }
}

void fatia_gateway_on_demand(struct fatia_gateway *g, void (*fn)(void *ud, const char *pool),
                             void *ud)
{
    g->on_demand = fn;
    g->on_demand_ud = ud;
}

int fatia_gateway_set_idle_pools(struct fatia_gateway *g, const json_t *pools)
{
    json_t *copy = json_deep_copy(pools);

    if (!copy || !json_is_array(copy)) {
        json_decref(copy);
        return -EINVAL;
    }
    json_decref(g->idle_pools);
    g->idle_pools = copy;
    return 0;
}

/* The picker, P/D-aware (pd.h): when a prefill pod is a candidate, the decode profile runs over
 * the decode pods, the decider looks at the decode pick's prefix match, and the prefill profile
 * runs over the prefill pods; q->prefiller is then set (and the prefill pod recorded in the
 * prefix index). Without a prefill pod it is the plain pick. Same returns as fatia_sched_pick,
 * for the decode pod. */
static int pick_pd(struct gw_req *q, const struct fatia_sched_config *sc,
                   const struct fatia_sched_request *sr, struct fatia_sched_result *res)
{
    struct fatia_gateway *g = q->g;
    struct fatia_sched_result pre;
    struct fatia_pd_config pd = g->cfg.pd;
    bool any_prefill = false;
    int r;

    q->prefiller[0] = 0;
    for (size_t i = 0; i < g->n_eps && q->infer; i++)
        any_prefill |= g->snap[i].ready && g->eps[i]->role == FATIA_PD_ROLE_PREFILL;
    if (!any_prefill)
        return fatia_sched_pick(sc, g->snap, g->n_eps, sr, &g->rng, &g->rr, res);
    /* the decode profile: prefill pods out */
    for (size_t i = 0; i < g->n_eps; i++)
        if (g->eps[i]->role == FATIA_PD_ROLE_PREFILL) {
            g->eps[i]->pd_cand = g->snap[i].ready;
            g->snap[i].ready = false;
        } else {
            g->eps[i]->pd_cand = false;
        }
    r = fatia_sched_pick(sc, g->snap, g->n_eps, sr, &g->rng, &g->rr, res);
    if (r < 0)
        return r;
    {
        /* the decode pod's pool may name its own decider (kubepool.c) */
        const char *dl = fatia_json_str(g->eps[res->index]->labels, FATIA_PD_DECIDER_LABEL);
        if (dl)
            fatia_pd_decider_parse(dl, &pd.decider);
    }
    if (!fatia_pd_disaggregate(
            &pd, q->tokens,
            sc->policy == FATIA_POLICY_CACHE_AWARE && q->n_hashes ? g->match[res->index] : 0)) {
        g->pd[1]++;
        return 0;
    }
    /* the prefill profile: only the prefill pods that were candidates */
    for (size_t i = 0; i < g->n_eps; i++)
        g->snap[i].ready = g->eps[i]->pd_cand;
    if (fatia_sched_pick(sc, g->snap, g->n_eps, sr, &g->rng, &g->rr, &pre) < 0) {
        g->pd[2]++;
        return 0; /* the decode pod prefills itself */
    }
    g->pd[0]++;
    snprintf(q->prefiller, sizeof(q->prefiller), "%s", g->eps[pre.index]->u.hostport);
    if (sc->policy == FATIA_POLICY_CACHE_AWARE && q->n_hashes)
        fatia_prefix_index_insert(g->index, g->eps[pre.index]->id, q->hashes, q->n_hashes);
    return 0;
}

/* Picks an endpoint for q and starts the upstream exchange. */
static void forward(struct gw_req *q)
{
    struct fatia_gateway *g = q->g;
    struct fatia_sched_request sr = {(uint32_t)q->n_hashes};
    struct fatia_sched_result res;
    struct fatia_sched_config sc = g->cfg.sched;
    fatia_usec_t now = fatia_now_mono_usec();
    struct gw_endpoint *ep;
    size_t n_ids = 0;
    int r;

    if (!q->infer && sc.policy == FATIA_POLICY_CACHE_AWARE)
        sc.w.prefix = 0;
    if (g->cfg.route_by_model) {
        bool known = false;
        for (size_t i = 0; i < g->n_eps && !known; i++)
            known = serves_model(g, q, g->eps[i]);
        if (!known && hold(q, true))
            return;
        if (!known && q->was_held) {
            respond_error(q, 503, ERR_NO_ENDPOINT, "ServiceUnavailable",
                          "no model server became ready within the hold timeout");
            return;
        }
        if (!known) {
            char msg[400];
            snprintf(msg, sizeof(msg), "The model `%.*s` does not exist.",
                     q->rb.has_model ? (int)FATIA_MIN(q->rb.model.n, 256) : 0,
                     q->rb.has_model ? q->rb.model.p : "");
            respond_error(q, 404, -1, "NotFoundError", msg);
            return;
        }
    }
    if (!q->infer && sc.policy == FATIA_POLICY_ORACLE)
        sc.policy = FATIA_POLICY_LEAST_REQUEST;
    if (grow_scratch(g) < 0) {
        respond_error(q, 500, -1, "InternalServerError", "out of memory");
        return;
    }
    for (size_t i = 0; i < g->n_eps; i++)
        n_ids = FATIA_MAX(n_ids, (size_t)g->eps[i]->id + 1);
    if (q->n_hashes && sc.policy == FATIA_POLICY_CACHE_AWARE) {
        if (n_ids > g->by_id_cap) {
            uint32_t *v = fatia_reallocarray(g->by_id, n_ids * 2, sizeof(*v));
            if (!v) {
                respond_error(q, 500, -1, "InternalServerError", "out of memory");
                return;
            }
            g->by_id = v;
            g->by_id_cap = n_ids * 2;
        }
        fatia_prefix_index_match(g->index, q->hashes, q->n_hashes, g->by_id, n_ids);
        for (size_t i = 0; i < g->n_eps; i++)
            g->match[i] = g->by_id[g->eps[i]->id];
    }
    for (size_t i = 0; i < g->n_eps; i++) {
        struct gw_endpoint *e = g->eps[i];
        struct fatia_sched_endpoint *s = &g->snap[i];
        s->ready = ep_routable(e) && e != q->failed && in_subset(q, e) && serves_model(g, q, e);
        s->fresh = fresh(e, now);
        s->waiting = e->m.waiting;
        s->kv_usage = e->m.kv_usage;
        s->inflight = e->inflight;
        s->inflight_tokens = e->inflight_tokens;
        s->prefix_match = sc.policy == FATIA_POLICY_ORACLE
                              ? (q->probe_tokens ? q->probe_tokens[i] : 0)
                          : sc.policy == FATIA_POLICY_CACHE_AWARE && q->n_hashes ? g->match[i]
                                                                                 : 0;
    }
    r = pick_pd(q, &sc, &sr, &res);
    if (r == -ENOENT && q->fail_err) {
        /* a retry found no other endpoint: say what happened to the one tried */
        respond_upstream_failure(q);
        return;
    }
    if (r == -ENOENT && hold(q, false))
        return;
    if (r == -ENOENT) {
        respond_error(q, 503, ERR_NO_ENDPOINT, "ServiceUnavailable",
                      q->was_held ? "no model server became ready within the hold timeout"
                                  : "no model server is ready");
        return;
    }
    if (r == -FATIA_E_LIMIT) {
        respond_error(q, 429, ERR_SATURATED, "RateLimitError",
                      "every model server is over its queue limit");
        return;
    }
    if (r < 0) {
        respond_error(q, 500, -1, "InternalServerError", "scheduling failed");
        return;
    }
    ep = g->eps[res.index];
    g->decisions[res.reason]++;
    if (q->infer && q->n_hashes) {
        g->pfx_total += q->n_hashes;
        if (sc.policy == FATIA_POLICY_CACHE_AWARE) {
            g->pfx_matched += g->match[res.index];
            fatia_prefix_index_insert(g->index, ep->id, q->hashes, q->n_hashes);
        }
    }
    q->ep = ep;
    ep->refs++;
    ep->inflight++;
    ep->inflight_tokens += q->tokens;
    ep->requests++;
    q->st = RQ_FORWARDING;
    if (build_uphead(q) < 0) {
        respond_error(q, 431, ERR_BAD_REQUEST, "BadRequestError", "request head too large");
        return;
    }
    if (start_upx(q, 0) < 0) {
        respond_error(q, 502, ERR_UPSTREAM_CONNECT, "BadGateway", "cannot open a connection");
        return;
    }
    q->t_dispatched = fatia_now_mono_usec();
}

/* ---- the oracle's probes ---- */

static void probe_done(struct gw_fetch *f, int err)
{
    struct gw_req *q = f->ud;

    q->probes[f->slot] = NULL;
    if (err || f->status != 200)
        q->g->probe_failures++;
    if (!err && f->status == 200) {
        json_t *o = json_loadb(f->body.p, f->body.len, 0, NULL);
        json_t *v = json_object_get(o, "cachedTokens");
        if (json_is_integer(v))
            q->probe_tokens[f->slot] = (uint32_t)json_integer_value(v);
        json_decref(o);
    }
    if (--q->probes_left == 0)
        forward(q);
}

static void start_probes(struct gw_req *q)
{
    struct fatia_gateway *g = q->g;

    q->probes = fatia_calloc(g->n_eps ? g->n_eps : 1, sizeof(*q->probes));
    q->probe_tokens = fatia_calloc(g->n_eps ? g->n_eps : 1, sizeof(*q->probe_tokens));
    if (!q->probes || !q->probe_tokens) {
        respond_error(q, 500, -1, "InternalServerError", "out of memory");
        return;
    }
    q->n_probes = g->n_eps;
    q->st = RQ_PROBING;
    q->probes_left = 1; /* held until every probe is started */
    for (size_t i = 0; i < g->n_eps; i++) {
        if (!ep_routable(g->eps[i]))
            continue;
        /* the block hashes as they are in memory: the engine answers without parsing JSON */
        if (fetch_typed(g->eps[i], "POST", "/fatia/cache-lookup", "application/octet-stream",
                        (const char *)q->hashes, q->n_hashes * sizeof(*q->hashes),
                        FATIA_USEC_PER_SEC, probe_done, q, &q->probes[i]) == 0) {
            q->probes[i]->slot = i;
            q->probes_left++;
        }
    }
    if (--q->probes_left == 0)
        forward(q);
}

/* ---- requests the gateway answers itself ---- */

static void write_metrics(struct fatia_gateway *g, struct fatia_httpd_conn *c)
{
    static const char *const classes[6] = {"2xx", "3xx", "4xx", "5xx", "other", "429"};
    struct fatia_buf b = FATIA_BUF_INIT;

    fatia_buf_puts(&b, "# HELP fatia_gateway_requests_total Proxied and answered requests by "
                       "status class.\n# TYPE fatia_gateway_requests_total counter\n");
    for (int i = 0; i < 6; i++)
        fatia_buf_printf(&b, "fatia_gateway_requests_total{code=\"%s\"} %" PRIu64 "\n", classes[i],
                         g->requests_by_code[i]);
    fatia_buf_printf(&b,
                     "fatia_gateway_requests_total{code=\"400\"} %" PRIu64 "\n"
                     "fatia_gateway_requests_total{code=\"502\"} %" PRIu64 "\n"
                     "fatia_gateway_requests_total{code=\"503\"} %" PRIu64 "\n",
                     g->codes_400, g->codes_502, g->codes_503);
    fatia_buf_printf(&b,
                     "# HELP fatia_gateway_held_requests_total Requests held for a pool scaled "
                     "to zero (--hold-timeout).\n# TYPE fatia_gateway_held_requests_total "
                     "counter\nfatia_gateway_held_requests_total %" PRIu64 "\n"
                     "# TYPE fatia_gateway_hold_timeouts_total counter\n"
                     "fatia_gateway_hold_timeouts_total %" PRIu64 "\n",
                     g->held_total, g->held_expired);
    fatia_buf_puts(&b, "# HELP fatia_gateway_errors_total Failed requests by reason.\n"
                       "# TYPE fatia_gateway_errors_total counter\n");
    for (int i = 0; i < ERR_N; i++)
        fatia_buf_printf(&b, "fatia_gateway_errors_total{reason=\"%s\"} %" PRIu64 "\n",
                         err_names[i], g->errors[i]);
    fatia_buf_puts(&b, "# HELP fatia_gateway_routing_decisions_total Endpoint picks by what "
                       "decided them.\n# TYPE fatia_gateway_routing_decisions_total counter\n");
    for (int i = 0; i < FATIA_ROUTE_N; i++)
        fatia_buf_printf(&b, "fatia_gateway_routing_decisions_total{reason=\"%s\"} %" PRIu64 "\n",
                         fatia_route_reason_name((enum fatia_route_reason)i), g->decisions[i]);
    fatia_buf_printf(&b,
                     "# HELP fatia_gateway_prefix_matched_blocks_total Prompt blocks the chosen "
                     "endpoint held, by the gateway's index.\n"
                     "# TYPE fatia_gateway_prefix_matched_blocks_total counter\n"
                     "fatia_gateway_prefix_matched_blocks_total %" PRIu64 "\n"
                     "# TYPE fatia_gateway_prefix_blocks_total counter\n"
                     "fatia_gateway_prefix_blocks_total %" PRIu64 "\n"
                     "# HELP fatia_gateway_prefix_hit_ratio Matched over hashed prompt blocks.\n"
                     "# TYPE fatia_gateway_prefix_hit_ratio gauge\n"
                     "fatia_gateway_prefix_hit_ratio %.6f\n"
                     "# TYPE fatia_gateway_prefix_index_entries gauge\n"
                     "fatia_gateway_prefix_index_entries %zu\n"
                     "# TYPE fatia_gateway_retries_total counter\n"
                     "fatia_gateway_retries_total %" PRIu64 "\n"
                     "# TYPE fatia_gateway_streamed_events_total counter\n"
                     "fatia_gateway_streamed_events_total %" PRIu64 "\n"
                     "# HELP fatia_gateway_stream_error_events_total SSE error events sent on "
                     "streams the model server cut.\n"
                     "# TYPE fatia_gateway_stream_error_events_total counter\n"
                     "fatia_gateway_stream_error_events_total %" PRIu64 "\n"
                     "# HELP fatia_gateway_oracle_probe_failures_total Oracle cache probes that "
                     "failed or timed out.\n"
                     "# TYPE fatia_gateway_oracle_probe_failures_total counter\n"
                     "fatia_gateway_oracle_probe_failures_total %" PRIu64 "\n"
                     "# HELP fatia_gateway_added_latency_seconds The gateway's own time on a "
                     "request: received to written upstream, plus response head read to "
                     "written.\n"
                     "# TYPE fatia_gateway_added_latency_seconds histogram\n",
                     g->pfx_matched, g->pfx_total,
                     g->pfx_total ? (double)g->pfx_matched / (double)g->pfx_total : 0.0,
                     fatia_prefix_index_size(g->index), g->retries, g->streamed_events,
                     g->stream_errors, g->probe_failures);
    fatia_hist_write(&g->added, &b, "fatia_gateway_added_latency_seconds", "");
    fatia_buf_printf(&b,
                     "# HELP fatia_gateway_pd_decisions_total Prefill/decode decisions: sent "
                     "through a prefill pod, decode only (the decider), no prefill pod ready.\n"
                     "# TYPE fatia_gateway_pd_decisions_total counter\n"
                     "fatia_gateway_pd_decisions_total{decision=\"disaggregated\"} %" PRIu64 "\n"
                     "fatia_gateway_pd_decisions_total{decision=\"decode_only\"} %" PRIu64 "\n"
                     "fatia_gateway_pd_decisions_total{decision=\"no_prefill\"} %" PRIu64 "\n",
                     g->pd[0], g->pd[1], g->pd[2]);
    if (g->cfg.tenants) {
        const struct fatia_gateway_tenants *t = g->cfg.tenants;
        fatia_buf_printf(&b,
                         "# HELP fatia_gateway_unauthorized_total Requests without a valid API "
                         "key.\n# TYPE fatia_gateway_unauthorized_total counter\n"
                         "fatia_gateway_unauthorized_total %" PRIu64 "\n"
                         "# HELP fatia_gateway_tenant_requests_total Requests admitted per "
                         "tenant.\n# TYPE fatia_gateway_tenant_requests_total counter\n",
                         g->unauthorized);
        for (size_t i = 0; i < t->n; i++)
            fatia_buf_printf(&b, "fatia_gateway_tenant_requests_total{tenant=\"%s\"} %" PRIu64 "\n",
                             t->v[i].name, t->v[i].requests);
        fatia_buf_puts(&b, "# HELP fatia_gateway_tenant_rate_limited_total Requests refused "
                           "(429) for a tenant over its rate.\n"
                           "# TYPE fatia_gateway_tenant_rate_limited_total counter\n");
        for (size_t i = 0; i < t->n; i++)
            fatia_buf_printf(&b,
                             "fatia_gateway_tenant_rate_limited_total{tenant=\"%s\"} %" PRIu64 "\n",
                             t->v[i].name, t->v[i].limited);
    }
    fatia_buf_puts(&b, "# TYPE fatia_gateway_endpoint_ready gauge\n");
    for (size_t i = 0; i < g->n_eps; i++)
        fatia_buf_printf(&b, "fatia_gateway_endpoint_ready{endpoint=\"%s\"} %d\n",
                         g->eps[i]->u.hostport, ep_routable(g->eps[i]));
    fatia_buf_puts(&b, "# TYPE fatia_gateway_endpoint_inflight gauge\n");
    for (size_t i = 0; i < g->n_eps; i++)
        fatia_buf_printf(&b, "fatia_gateway_endpoint_inflight{endpoint=\"%s\"} %u\n",
                         g->eps[i]->u.hostport, g->eps[i]->inflight);
    fatia_buf_puts(&b, "# HELP fatia_gateway_endpoint_waiting Requests queued at the endpoint, as "
                       "last scraped (-1 when its metrics are stale).\n"
                       "# TYPE fatia_gateway_endpoint_waiting gauge\n");
    {
        fatia_usec_t now = fatia_now_mono_usec();
        for (size_t i = 0; i < g->n_eps; i++)
            fatia_buf_printf(&b, "fatia_gateway_endpoint_waiting{endpoint=\"%s\"} %g\n",
                             g->eps[i]->u.hostport,
                             fresh(g->eps[i], now) ? g->eps[i]->m.waiting : -1.0);
    }
    fatia_buf_puts(&b, "# TYPE fatia_gateway_endpoint_requests_total counter\n");
    for (size_t i = 0; i < g->n_eps; i++)
        fatia_buf_printf(&b, "fatia_gateway_endpoint_requests_total{endpoint=\"%s\"} %" PRIu64 "\n",
                         g->eps[i]->u.hostport, g->eps[i]->requests);
    fatia_httpd_respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", NULL, b.p, b.len);
    fatia_buf_release(&b);
}

struct models_fanout {
    enum ctx_kind kind; /* CTX_MODELS */
    struct fatia_httpd_conn *c;
    struct fatia_gateway *g;
    json_t *data;
    size_t left;
    struct gw_fetch **fetches;
    size_t n;
};

static void models_finish(struct models_fanout *m)
{
    json_t *out = json_pack("{s:s,s:O}", "object", "list", "data", m->data);
    char *text = json_dumps(out, JSON_COMPACT);

    fatia_httpd_set_ctx(m->c, NULL);
    if (!text)
        fatia_httpd_respond_error(m->c, 500, "InternalServerError", "out of memory");
    else
        fatia_httpd_respond(m->c, 200, "application/json", NULL, text, strlen(text));
    count_code(m->g, text ? 200 : 500);
    free(text);
    json_decref(out);
}

static void models_done(struct gw_fetch *f, int err)
{
    struct models_fanout *m = f->ud;

    m->fetches[f->slot] = NULL;
    if (!err && f->status == 200) {
        json_t *o = json_loadb(f->body.p, f->body.len, 0, NULL), *v;
        size_t i;
        json_array_foreach(json_object_get(o, "data"), i, v)
        {
            const char *id = json_string_value(json_object_get(v, "id"));
            bool seen = false;
            size_t k;
            json_t *w;
            if (!id)
                continue;
            json_array_foreach(m->data, k, w)
            {
                const char *wid = json_string_value(json_object_get(w, "id"));
                seen |= wid && !strcmp(wid, id);
            }
            if (!seen)
                json_array_append(m->data, v);
        }
        json_decref(o);
    }
    if (--m->left == 0) {
        models_finish(m);
        json_decref(m->data);
        fatia_free(m->fetches);
        fatia_free(m);
    }
}

static void serve_models(struct fatia_gateway *g, struct fatia_httpd_conn *c, const char *tenant)
{
    struct models_fanout *m = fatia_calloc(1, sizeof(*m));

    if (!m || !(m->fetches = fatia_calloc(g->n_eps + 1, sizeof(*m->fetches)))) {
        fatia_free(m);
        fatia_httpd_respond_error(c, 500, "InternalServerError", "out of memory");
        return;
    }
    m->kind = CTX_MODELS;
    m->c = c;
    m->g = g;
    m->data = json_array();
    m->n = g->n_eps;
    m->left = 1;
    /* the fan-out is the request's context so that a client that leaves cancels it */
    fatia_httpd_set_ctx(c, NULL);
    for (size_t i = 0; i < g->n_eps; i++) {
        if (!ep_routable(g->eps[i]) || !tenant_reaches(g, tenant, g->eps[i]))
            continue;
        if (fetch(g->eps[i], "GET", "/v1/models", NULL, 0, 2 * FATIA_USEC_PER_SEC, models_done, m,
                  &m->fetches[i]) == 0) {
            m->fetches[i]->slot = i;
            m->left++;
        }
    }
    if (m->left == 1 && !g->n_eps) {
        fatia_free(m->fetches);
        json_decref(m->data);
        fatia_free(m);
        count_code(g, 503);
        fatia_httpd_respond_error(c, 503, "ServiceUnavailable", "no model server is ready");
        return;
    }
    fatia_httpd_set_ctx(c, m);
    if (--m->left == 0) {
        models_finish(m);
        json_decref(m->data);
        fatia_free(m->fetches);
        fatia_free(m);
    }
}

/* ---- httpd callbacks ---- */

static bool is_infer_path(struct fatia_str p)
{
    return fatia_str_eqz(p, "/v1/completions") || fatia_str_eqz(p, "/v1/chat/completions") ||
           fatia_str_eqz(p, "/v1/embeddings");
}

static void on_request(void *ud, struct fatia_httpd_conn *c, const struct fatia_httpd_req *r)
{
    struct fatia_gateway *g = ud;
    const struct fatia_http_head *h = r->head;
    struct fatia_str path = h->target;
    const char *qm = memchr(path.p, '?', path.n);
    bool get = fatia_str_eqz(h->method, "GET"), post = fatia_str_eqz(h->method, "POST");
    struct gw_req *q;
    const char *tenant = NULL;
    char why[128];

    if (qm)
        path.n = (size_t)(qm - path.p);
    if (get && fatia_str_eqz(path, "/health")) {
        bool any = false;
        for (size_t i = 0; i < g->n_eps && !any; i++)
            any = ep_routable(g->eps[i]);
        if (any)
            fatia_httpd_respond(c, 200, "application/json", NULL, "{\"status\":\"ok\"}", 15);
        else
            fatia_httpd_respond_error(c, 503, "ServiceUnavailable", "no model server is ready");
        return;
    }
    if (g->cfg.tenants) {
        /* every path but /health: a tenant's key, within its rate */
        size_t t;
        if (fatia_gateway_tenants_auth(g->cfg.tenants, fatia_http_header_get(h, "authorization"),
                                       &t) < 0) {
            g->unauthorized++;
            count_code(g, 401);
            fatia_httpd_respond_error(c, 401, "invalid_request_error",
                                      "a valid API key is required: Authorization: Bearer KEY");
            return;
        }
        if (!fatia_gateway_tenants_admit(g->cfg.tenants, t, fatia_now_mono_usec())) {
            count_code(g, 429);
            fatia_httpd_respond_error(c, 429, "RateLimitError",
                                      "tenant %s is over its rate of %g requests per second",
                                      g->cfg.tenants->v[t].name, g->cfg.tenants->rate);
            return;
        }
        tenant = g->cfg.tenants->v[t].name;
    }
    if (get && fatia_str_eqz(path, "/metrics")) {
        write_metrics(g, c);
        return;
    }
    if (get && fatia_str_eqz(path, "/v1/models")) {
        serve_models(g, c, tenant);
        return;
    }
    q = fatia_calloc(1, sizeof(*q));
    if (!q) {
        fatia_httpd_respond_error(c, 500, "InternalServerError", "out of memory");
        return;
    }
    fatia_sse_init(&q->scan, NULL, NULL);
    fatia_buf_init(&q->uphead, FATIA_HTTP_MAX_HEAD + 1024);
    q->kind = CTX_REQ;
    q->g = g;
    q->c = c;
    q->tenant = tenant;
    q->head = h;
    q->body = r->body;
    q->body_len = r->body_len;
    q->t_received = r->received;
    q->infer = post && is_infer_path(path);
    fatia_httpd_set_ctx(c, q);
    if (q->infer) {
        if (fatia_reqbody_scan(r->body, r->body_len, &q->rb, why, sizeof(why)) < 0) {
            respond_error(q, 400, ERR_BAD_REQUEST, "BadRequestError", why);
            return;
        }
        q->tokens = q->rb.prompt.n / 4;
        if ((g->cfg.sched.policy == FATIA_POLICY_CACHE_AWARE ||
             g->cfg.sched.policy == FATIA_POLICY_ORACLE) &&
            q->rb.prompt.n >= 64) {
            size_t max = FATIA_MIN(q->rb.prompt.n / FATIA_PREFIX_BLOCK_CHARS,
                                   (size_t)g->cfg.max_prefix_blocks);
            q->hashes = fatia_malloc(max * sizeof(*q->hashes));
            if (!q->hashes) {
                respond_error(q, 500, -1, "InternalServerError", "out of memory");
                return;
            }
            q->n_hashes =
                fatia_prefix_hash(fatia_prefix_seed(q->rb.model, q->rb.cache_salt), q->rb.prompt.p,
                                  q->rb.prompt.n, FATIA_PREFIX_BLOCK_CHARS, q->hashes, max);
        }
    }
    if (q->infer && q->n_hashes && g->cfg.sched.policy == FATIA_POLICY_ORACLE)
        start_probes(q);
    else
        forward(q);
}

static void on_abort(void *ud, struct fatia_httpd_conn *c, void *ctx)
{
    struct fatia_gateway *g = ud;
    struct gw_req *q = ctx;

    (void)c;
    if (!ctx)
        return;
    g->errors[ERR_CLIENT_ABORT]++;
    if (*(enum ctx_kind *)ctx == CTX_REQ)
        hold_unlink(q);
    if (*(enum ctx_kind *)ctx == CTX_MODELS) {
        /* a /v1/models fan-out: cancel it */
        struct models_fanout *m = ctx;
        for (size_t i = 0; i < m->n; i++)
            if (m->fetches[i])
                fetch_cancel(m->fetches[i]);
        json_decref(m->data);
        fatia_free(m->fetches);
        fatia_free(m);
        return;
    }
    if (q->x)
        fatia_upx_abort(q->x);
    q->x = NULL;
    req_leave_endpoint(q);
    req_free(q);
}

static void on_drain(void *ud, struct fatia_httpd_conn *c, void *ctx)
{
    struct gw_req *q = ctx;

    (void)ud;
    (void)c;
    if (q && q->kind == CTX_REQ && q->x)
        fatia_upx_pause(q->x, false);
}

/* ---- the pool ---- */

static int ep_new(struct fatia_gateway *g, const struct fatia_gateway_endpoint *spec,
                  const struct fatia_url *u, struct gw_endpoint **ret)
{
    struct gw_endpoint *ep = fatia_calloc(1, sizeof(*ep));
    size_t id = 0;

    if (!ep)
        return -ENOMEM;
    while (id < g->n_ids && g->id_used[id])
        id++;
    if (id == g->n_ids) {
        size_t n = g->n_ids ? g->n_ids * 2 : 16;
        uint8_t *v = fatia_realloc(g->id_used, n);
        if (!v) {
            fatia_free(ep);
            return -ENOMEM;
        }
        memset(v + g->n_ids, 0, n - g->n_ids);
        g->id_used = v;
        g->n_ids = n;
    }
    g->id_used[id] = 1;
    ep->g = g;
    ep->id = (uint32_t)id;
    snprintf(ep->url, sizeof(ep->url), "%s", spec->url);
    ep->u = *u;
    ep->dest_header_len = (size_t)snprintf(ep->dest_header, sizeof(ep->dest_header),
                                           "x-gateway-destination-endpoint: %s\r\n", u->hostport);
    ep->labels = spec->labels ? json_deep_copy(spec->labels) : json_object();
    ep->matches = !g->selector || fatia_selector_matches(g->selector, ep->labels);
    ep->role = fatia_pd_role_of(fatia_json_str(ep->labels, FATIA_PD_ROLE_LABEL));
    fatia_upx_init(&ep->up, g->base, &u->addr, u->addr_len);
    ep->up.connect_timeout = g->cfg.connect_timeout;
    ep->up.response_timeout = g->cfg.upstream_timeout;
    ep->ev_health = event_new(g->base, -1, 0, on_health, ep);
    ep->ev_scrape = event_new(g->base, -1, 0, on_scrape, ep);
    if (!ep->labels || !ep->ev_health || !ep->ev_scrape) {
        ep_free(ep);
        return -ENOMEM;
    }
    fatia_prefix_index_remove_endpoint(g->index, ep->id);
    fatia_prefix_index_set_capacity(g->index, ep->id, g->cfg.lru_capacity);
    ep->state = EP_PROBING;
    ep->refs = 1; /* the pool's */
    arm(ep->ev_health, 0);
    arm(ep->ev_scrape, 0);
    *ret = ep;
    return 0;
}

static void ep_remove(struct gw_endpoint *ep)
{
    fatia_log(FATIA_LOG_INFO, "gateway: endpoint '%s' left the pool", ep->url);
    ep->removed = true;
    event_del(ep->ev_health);
    event_del(ep->ev_scrape);
    if (ep->health_f)
        fetch_cancel(ep->health_f);
    if (ep->scrape_f)
        fetch_cancel(ep->scrape_f);
    ep->health_f = ep->scrape_f = NULL;
    fatia_prefix_index_remove_endpoint(ep->g->index, ep->id);
    ep_unref(ep);
}

int fatia_gateway_set_endpoints(struct fatia_gateway *g, const struct fatia_gateway_endpoint *v,
                                size_t n, char *why, size_t why_n)
{
    struct fatia_url *urls = fatia_calloc(n ? n : 1, sizeof(*urls));
    struct gw_endpoint **next = fatia_calloc(n ? n : 1, sizeof(*next));
    bool *kept = fatia_calloc(g->n_eps ? g->n_eps : 1, sizeof(*kept));
    int r = 0;

    if (!urls || !next || !kept) {
        r = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        r = fatia_url_parse(v[i].url, &urls[i], why, why_n);
        if (r < 0)
            goto out;
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < g->n_eps; k++) {
            if (!kept[k] && !strcmp(g->eps[k]->url, v[i].url)) {
                kept[k] = true;
                next[i] = g->eps[k];
                /* labels may change */
                json_decref(next[i]->labels);
                next[i]->labels = v[i].labels ? json_deep_copy(v[i].labels) : json_object();
                next[i]->matches =
                    !g->selector || fatia_selector_matches(g->selector, next[i]->labels);
                next[i]->role =
                    fatia_pd_role_of(fatia_json_str(next[i]->labels, FATIA_PD_ROLE_LABEL));
                break;
            }
        }
        if (!next[i] && (r = ep_new(g, &v[i], &urls[i], &next[i])) < 0) {
            for (size_t k = 0; k < i; k++) {
                bool old = false;
                for (size_t j = 0; j < g->n_eps; j++)
                    old |= g->eps[j] == next[k];
                if (!old)
                    ep_remove(next[k]);
            }
            goto out;
        }
    }
    for (size_t k = 0; k < g->n_eps; k++)
        if (!kept[k])
            ep_remove(g->eps[k]);
    fatia_free(g->eps);
    g->eps = next;
    g->n_eps = n;
    g->cap_eps = n;
    next = NULL;
    if (g->rr >= n)
        g->rr = 0;
out:
    fatia_free(urls);
    fatia_free(next);
    fatia_free(kept);
    return r;
}

void fatia_gateway_config_default(struct fatia_gateway_config *c)
{
    memset(c, 0, sizeof(*c));
    fatia_sched_config_default(&c->sched);
    c->metrics_interval = 50 * FATIA_USEC_PER_MSEC;
    c->metrics_staleness = 2 * FATIA_USEC_PER_SEC;
    c->health_interval = FATIA_USEC_PER_SEC;
    c->health_timeout = 2 * FATIA_USEC_PER_SEC;
    c->health_failure_threshold = 3;
    c->connect_timeout = 2 * FATIA_USEC_PER_SEC;
    c->upstream_timeout = 300 * FATIA_USEC_PER_SEC;
    c->max_prefix_blocks = FATIA_PREFIX_DEFAULT_BLOCKS;
    c->max_body = 32u << 20;
    fatia_pd_config_default(&c->pd);
}

int fatia_gateway_new(struct event_base *base, const struct fatia_gateway_config *cfg,
                      struct fatia_gateway **ret)
{
    static const struct fatia_httpd_ops ops = {on_request, on_abort, on_drain};
    struct fatia_httpd_limits lim = {.max_body = cfg->max_body};
    struct fatia_gateway *g = fatia_calloc(1, sizeof(*g));
    char why[256];
    int r;

    if (!g)
        return -ENOMEM;
    g->base = base;
    g->cfg = *cfg;
    g->rng = cfg->seed ? cfg->seed : (uint64_t)fatia_now_real_usec() | 1;
    fatia_buf_init(&g->headbuf, FATIA_HTTP_MAX_HEAD + 4096);
    fatia_hist_init(&g->added, fatia_hist_overhead_buckets, fatia_hist_overhead_n);
    if (cfg->selector && *cfg->selector) {
        r = fatia_selector_parse(cfg->selector, &g->selector, why, sizeof(why));
        if (r < 0) {
            fatia_log(FATIA_LOG_ERROR, "gateway: invalid selector '%s': %s", cfg->selector, why);
            goto fail;
        }
    }
    r = fatia_prefix_index_new(&g->index);
    if (r < 0)
        goto fail;
    r = fatia_httpd_new(base, cfg->listen, &ops, g, &lim, &g->httpd);
    if (r < 0)
        goto fail;
    g->hold_timer = evtimer_new(base, on_hold_timer, g);
    if (!g->hold_timer) {
        r = -ENOMEM;
        goto fail;
    }
    *ret = g;
    return 0;
fail:
    fatia_gateway_free(g);
    return r;
}

void fatia_gateway_free(struct fatia_gateway *g)
{
    if (!g)
        return;
    /* clients first: their requests release their endpoints */
    fatia_httpd_free(g->httpd);
    if (g->hold_timer)
        event_free(g->hold_timer);
    json_decref(g->idle_pools);
    for (size_t i = 0; i < g->n_eps; i++)
        ep_remove(g->eps[i]);
    fatia_free(g->eps);
    fatia_free(g->snap);
    fatia_free(g->match);
    fatia_free(g->by_id);
    fatia_buf_release(&g->headbuf);
    fatia_prefix_index_free(g->index);
    fatia_selector_free(g->selector);
    fatia_free(g->id_used);
    fatia_free(g);
}

int fatia_gateway_port(const struct fatia_gateway *g)
{
    return fatia_httpd_port(g->httpd);
}
