/*
 * apiserver/stream_portforward.c: `kubectl port-forward` (pods/NAME/portforward): SPDY/3.1
 * streams carrying TCP connections to a port of the pod, opened by the port-forward provider
 * (the node agent, which checks that the pod itself listens there).
 *
 * Protocol (k8s.io/client-go tools/portforward, portforward.k8s.io):
 *   - kubectl 1.27 to 1.30: POST with `Upgrade: SPDY/3.1` and X-Stream-Protocol-Version
 *     portforward.k8s.io, answered 101;
 *   - kubectl 1.31+: GET with `Upgrade: websocket` and the subprotocol
 *     `SPDY/3.1+portforward.k8s.io`: the same SPDY bytes, carried in binary WebSocket
 *     messages (client-go's tunneling connection), falling back to the first form.
 *   Per local connection the client opens an "error" stream and a "data" stream, both with
 *   headers port and requestid; the data stream's bytes are the TCP connection's. When the
 *   connection ends both ways, the data and error streams end (FIN); a failure is written as
 *   text on the error stream first (kubectl prints it and goes on serving).
 *
 * Invariants: a TCP connection is made only for a port the provider accepts (a process of the
 * pod listens on it: in the process mode pods share the host's network, so a bare connect to
 * 127.0.0.1:PORT could reach another tenant's pod or fatiad itself); at most PF_MAX_CONNS
 * connections per session; reading from TCP pauses while the client's output holds over 1 MiB;
 * the session frees itself once the client's connection is gone, closing every TCP connection.
 * Authorization is `create` on pods/portforward in the pod's namespace, before the upgrade
 * (fatia_api_portforward_start); fatia_api_portforward_serve is the session alone, for a pod the
 * caller found (also a node role's own endpoint, nodeserve.c).
 */
#include "base/compat.h"

#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <fcntl.h>
#include <unistd.h>

#include "apiserver/internal.h"
#include "apiserver/stream_spdy.h"
#include "apiserver/stream_ws.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"

#define PF_MAX_CONNS 64
#define PF_OUT_HIGH  (1u << 20)

struct pf_conn {
    bool used;
    char request_id[32];
    int port;
    uint32_t err_sid, data_sid;
    struct bufferevent *tcp;
    bool tcp_eof, client_fin, shut, done;
};

struct pf_sess {
    struct fatia_api_streams sv; /* the loop and the provider (a copy) */
    json_t *pod;
    struct bufferevent *conn;
    struct fatia_ws *ws;         /* the WebSocket tunnel, or NULL for SPDY on the connection */
    struct evbuffer *tin, *tout; /* the tunnel: SPDY bytes in and out */
    struct fatia_spdy *sp;
    struct pf_conn c[PF_MAX_CONNS];
    bool gone;
};

void fatia_apiserver_set_portforward_provider(struct fatia_apiserver *s,
                                              fatia_portforward_provider_fn fn, void *arg)
{
    s->streams.pf = fn;
    s->streams.pf_arg = arg;
}

/* What SPDY wrote goes to the client: as it is, or in WebSocket messages. */
static void flush(struct pf_sess *x)
{
    if (x->gone)
        return;
    if (x->ws && evbuffer_get_length(x->tout)) {
        size_t n = evbuffer_get_length(x->tout);
        (void)fatia_api_ws_send(x->ws, evbuffer_pullup(x->tout, -1), n);
        evbuffer_drain(x->tout, n);
    }
}

static void sess_free(struct pf_sess *x)
{
    for (int i = 0; i < PF_MAX_CONNS; i++)
        if (x->c[i].tcp)
            bufferevent_free(x->c[i].tcp);
    fatia_api_spdy_free(x->sp);
    fatia_api_ws_free(x->ws);
    if (x->tin)
        evbuffer_free(x->tin);
    if (x->tout)
        evbuffer_free(x->tout);
    if (x->conn)
        bufferevent_free(x->conn);
    json_decref(x->pod);
    fatia_free(x);
}

static struct pf_conn *by_request(struct pf_sess *x, const char *rid, bool make)
{
    struct pf_conn *free_slot = NULL;

    for (int i = 0; i < PF_MAX_CONNS; i++) {
        if (x->c[i].used && !strcmp(x->c[i].request_id, rid))
            return &x->c[i];
        if (!x->c[i].used && !free_slot)
            free_slot = &x->c[i];
    }
    if (!make || !free_slot)
        return NULL;
    *free_slot = (struct pf_conn){.used = true};
    snprintf(free_slot->request_id, sizeof(free_slot->request_id), "%s", rid);
    return free_slot;
}

static struct pf_conn *by_stream(struct pf_sess *x, uint32_t id)
{
    for (int i = 0; i < PF_MAX_CONNS; i++)
        if (x->c[i].used && (x->c[i].data_sid == id || x->c[i].err_sid == id))
            return &x->c[i];
    return NULL;
}

/* The connection is over: end its streams (with a message on the error stream). */
static void conn_end(struct pf_sess *x, struct pf_conn *pc, const char *msg)
{
    if (pc->done)
        return;
    pc->done = true;
    if (msg && pc->err_sid)
        (void)fatia_api_spdy_data(x->sp, pc->err_sid, msg, strlen(msg), false);
    if (pc->data_sid)
        (void)fatia_api_spdy_data(x->sp, pc->data_sid, NULL, 0, true);
    if (pc->err_sid)
        (void)fatia_api_spdy_data(x->sp, pc->err_sid, NULL, 0, true);
    if (pc->tcp) {
        bufferevent_free(pc->tcp);
        pc->tcp = NULL;
    }
    pc->used = false;
    flush(x);
}

static void pump_tcp(struct pf_sess *x, struct pf_conn *pc)
{
    struct evbuffer *src = bufferevent_get_input(pc->tcp);
    unsigned char chunk[16384];
    int n;

    while ((n = evbuffer_remove(src, chunk, sizeof(chunk))) > 0)
        (void)fatia_api_spdy_data(x->sp, pc->data_sid, chunk, (size_t)n, false);
    flush(x);
    if (!x->gone && evbuffer_get_length(bufferevent_get_output(x->conn)) > PF_OUT_HIGH)
        bufferevent_disable(pc->tcp, EV_READ);
}

static void tcp_cb_read(struct bufferevent *b, void *arg)
{
    struct pf_sess *x = arg;
    for (int i = 0; i < PF_MAX_CONNS; i++)
        if (x->c[i].used && x->c[i].tcp == b)
            pump_tcp(x, &x->c[i]);
}

/* the client's FIN reaches the pod once what it sent before is written */
static void tcp_cb_write(struct bufferevent *b, void *arg)
{
    struct pf_sess *x = arg;

    for (int i = 0; i < PF_MAX_CONNS; i++) {
        struct pf_conn *pc = &x->c[i];
        if (pc->used && pc->tcp == b && pc->client_fin && !pc->shut &&
            !evbuffer_get_length(bufferevent_get_output(b))) {
            pc->shut = true;
            shutdown(bufferevent_getfd(b), SHUT_WR);
        }
    }
}

static void tcp_cb_event(struct bufferevent *b, short what, void *arg)
{
    struct pf_sess *x = arg;

    for (int i = 0; i < PF_MAX_CONNS; i++) {
        struct pf_conn *pc = &x->c[i];
        if (!pc->used || pc->tcp != b)
            continue;
        pump_tcp(x, pc);
        /* the pod closed its side (or failed): the client gets the end of the data */
        pc->tcp_eof = true;
        conn_end(x, pc, (what & BEV_EVENT_ERROR) ? "error reading from the pod's port" : NULL);
        return;
    }
}

static void on_stream(void *arg, uint32_t id, const struct fatia_spdy_hdrs *hd, bool fin)
{
    struct pf_sess *x = arg;
    struct pf_conn *pc;
    long port;
    char *end;
    char why[300] = "";
    int fd = -1, rc;

    (void)fin;
    if (fatia_api_spdy_reply(x->sp, id) < 0)
        return;
    port = strtol(hd->port, &end, 10);
    pc = by_request(x, hd->request_id, true);
    if (!pc) {
        (void)fatia_api_spdy_data(x->sp, id, NULL, 0, true);
        flush(x);
        return;
    }
    if (!strcmp(hd->type, "error")) {
        pc->err_sid = id;
    } else if (!strcmp(hd->type, "data")) {
        pc->data_sid = id;
    } else {
        (void)fatia_api_spdy_data(x->sp, id, NULL, 0, true);
        flush(x);
        return;
    }
    if (!pc->data_sid || !pc->err_sid || pc->tcp)
        return;
    pc->port = (int)port;
    if (*end || port < 1 || port > 65535) {
        conn_end(x, pc, "invalid port");
        return;
    }
    rc = x->sv.pf(x->sv.pf_arg, x->pod, (int)port, &fd, why, sizeof(why));
    if (rc < 0) {
        char msg[400];
        snprintf(msg, sizeof(msg), "%s", why[0] ? why : "cannot connect to the pod's port");
        conn_end(x, pc, msg);
        return;
    }
    (void)evutil_make_socket_nonblocking(fd);
    pc->tcp = bufferevent_socket_new(x->sv.base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (!pc->tcp) {
        close(fd);
        conn_end(x, pc, "out of memory");
        return;
    }
    bufferevent_setcb(pc->tcp, tcp_cb_read, tcp_cb_write, tcp_cb_event, x);
    bufferevent_enable(pc->tcp, EV_READ | EV_WRITE);
}

static void on_data(void *arg, uint32_t id, const uint8_t *p, size_t n, bool fin)
{
    struct pf_sess *x = arg;
    struct pf_conn *pc = by_stream(x, id);

    if (!pc || id != pc->data_sid || !pc->tcp)
        return;
    if (n)
        bufferevent_write(pc->tcp, p, n);
    if (fin) {
        pc->client_fin = true;
        /* the client sends no more: half-close toward the pod once written */
        tcp_cb_write(pc->tcp, x);
    }
}

static void on_reset(void *arg, uint32_t id)
{
    struct pf_sess *x = arg;
    struct pf_conn *pc = id ? by_stream(x, id) : NULL;

    if (pc)
        conn_end(x, pc, NULL);
}

static void conn_lost(struct pf_sess *x)
{
    x->gone = true;
    sess_free(x);
}

static void ws_message(void *arg, bool binary, const uint8_t *p, size_t n)
{
    struct pf_sess *x = arg;

    if (binary)
        evbuffer_add(x->tin, p, n);
}

static void ws_close(void *arg)
{
    (void)arg;
}

static void conn_read_cb(struct bufferevent *b, void *arg)
{
    struct pf_sess *x = arg;
    int rc;

    (void)b;
    if (x->ws) {
        rc = fatia_api_ws_read(x->ws);
        if (!rc)
            rc = fatia_api_spdy_read(x->sp);
        if (!rc && fatia_api_ws_done(x->ws))
            rc = -EPIPE;
    } else {
        rc = fatia_api_spdy_read(x->sp);
    }
    flush(x);
    if (rc < 0)
        conn_lost(x);
}

static void conn_write_cb(struct bufferevent *b, void *arg)
{
    struct pf_sess *x = arg;

    if (evbuffer_get_length(bufferevent_get_output(b)) <= PF_OUT_HIGH / 2)
        for (int i = 0; i < PF_MAX_CONNS; i++)
            if (x->c[i].used && x->c[i].tcp)
                bufferevent_enable(x->c[i].tcp, EV_READ);
}

static void conn_event_cb(struct bufferevent *b, short what, void *arg)
{
    (void)b;
    (void)what;
    conn_lost(arg);
}

void fatia_api_portforward_start(const struct opctx *c, const struct fatia_api_target *tgt,
                                 struct fatia_api_http_req *req, struct opres *err)
{
    const json_t *pod = fatia_api_stream_pod(c, "create", err);

    if (pod && !fatia_api_nodeproxy(c->s, pod, c->user->name, req, err))
        fatia_api_portforward_serve(&c->s->streams, pod, c->user->name, tgt, req, err);
}

void fatia_api_portforward_serve(const struct fatia_api_streams *sv, const json_t *pod,
                                 const char *who, const struct fatia_api_target *tgt,
                                 struct fatia_api_http_req *req, struct opres *err)
{
    const json_t *meta = json_object_get(pod, "metadata");
    const char *pns = fatia_json_str(meta, "namespace"), *pname = fatia_json_str(meta, "name");
    static const char *const ws_protocols[] = {"SPDY/3.1+portforward.k8s.io", NULL};
    static const char *const spdy_protocols[] = {"portforward.k8s.io", NULL};
    const struct fatia_http_head *h = fatia_api_http_req_head(req);
    const struct fatia_str *upgrade = fatia_http_header_get(h, "Upgrade");
    const char *proto = NULL;
    char accept[29];
    bool spdy;
    struct pf_sess *x;

    (void)tgt;
    spdy = upgrade && upgrade->n == 8 && !strncasecmp(upgrade->p, "SPDY/3.1", 8);
    if (spdy) {
        for (size_t i = 0; i < h->n_headers && !proto; i++)
            if (h->headers[i].name.n == 25 &&
                !strncasecmp(h->headers[i].name.p, "X-Stream-Protocol-Version", 25))
                proto =
                    fatia_api_ws_pick(h->headers[i].value.p, h->headers[i].value.n, spdy_protocols);
        if (!proto) {
            fatia_api_http_add_header(req, "X-Accepted-Stream-Protocol-Versions",
                                      "portforward.k8s.io");
            fatia_api_opres_fail(err, 403, "Forbidden",
                                 "portforward: the stream protocol portforward.k8s.io is needed");
            return;
        }
    } else {
        const struct fatia_str *key = fatia_http_header_get(h, "Sec-WebSocket-Key");
        const struct fatia_str *offered = fatia_http_header_get(h, "Sec-WebSocket-Protocol");
        if (!upgrade || upgrade->n != 9 || strncasecmp(upgrade->p, "websocket", 9) || !key ||
            fatia_api_ws_accept(key->p, key->n, accept) < 0) {
            fatia_api_opres_fail(err, 400, "BadRequest",
                                 "portforward: a stream is needed (Upgrade: SPDY/3.1, or "
                                 "websocket with SPDY/3.1+portforward.k8s.io)");
            return;
        }
        proto = offered ? fatia_api_ws_pick(offered->p, offered->n, ws_protocols) : NULL;
        if (!proto) {
            fatia_api_opres_fail(err, 400, "BadRequest",
                                 "portforward: the subprotocol SPDY/3.1+portforward.k8s.io is "
                                 "needed");
            return;
        }
    }
    if (!sv->pf) {
        fatia_api_opres_fail(err, 503, "ServiceUnavailable",
                             "port-forward to pod \"%s\" is not available: no node agent serves "
                             "it in this fatiad",
                             pname ? pname : "");
        return;
    }
    x = fatia_calloc(1, sizeof(*x));
    if (!x) {
        fatia_api_opres_from_errno(err, -ENOMEM, "portforward");
        return;
    }
    x->sv = *sv;
    x->pod = json_incref((json_t *)pod);
    if (spdy) {
        fatia_api_http_add_header(req, "Connection", "Upgrade");
        fatia_api_http_add_header(req, "Upgrade", "SPDY/3.1");
        fatia_api_http_add_header(req, "X-Stream-Protocol-Version", proto);
    } else {
        fatia_api_http_add_header(req, "Upgrade", "websocket");
        fatia_api_http_add_header(req, "Connection", "Upgrade");
        fatia_api_http_add_header(req, "Sec-WebSocket-Accept", accept);
        fatia_api_http_add_header(req, "Sec-WebSocket-Protocol", proto);
    }
    x->conn = fatia_api_http_upgrade(req);
    if (!x->conn) {
        sess_free(x);
        return;
    }
    {
        const struct fatia_spdy_cbs cbs = {on_stream, on_data, on_reset};
        struct evbuffer *in = bufferevent_get_input(x->conn),
                        *out = bufferevent_get_output(x->conn);
        int rc;
        if (!spdy) {
            x->tin = evbuffer_new();
            x->tout = evbuffer_new();
            rc = x->tin && x->tout ? fatia_api_ws_new(&(struct fatia_ws_cbs){ws_message, ws_close},
                                                      x, in, out, 1u << 20, &x->ws)
                                   : -ENOMEM;
            in = x->tin;
            out = x->tout;
        } else {
            rc = 0;
        }
        if (!rc)
            rc = fatia_api_spdy_new(&cbs, x, in, out, &x->sp);
        if (rc < 0) {
            sess_free(x);
            return;
        }
    }
    bufferevent_setcb(x->conn, conn_read_cb, conn_write_cb, conn_event_cb, x);
    bufferevent_enable(x->conn, EV_READ | EV_WRITE);
    fatia_log(FATIA_LOG_INFO, "portforward: %s/%s (%s) by %s", pns ? pns : "", pname ? pname : "",
              proto, who);
    if (evbuffer_get_length(bufferevent_get_input(x->conn)))
        conn_read_cb(x->conn, x);
}
