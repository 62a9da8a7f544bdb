/*
 * apiserver/nodeproxy.c: pods/log, exec, attach and portforward of a pod whose node serves its
 * own endpoint (a `fatiad --role node`: nodeserve.c), proxied there, as kube-apiserver proxies
 * them to the kubelet's port 10250.
 *
 * Which node: the pod's spec.nodeName; its Node's status.daemonEndpoints.kubeletEndpoint.Port
 * (published by the node role) says it serves its own, at the first of its status.addresses of
 * type InternalIP, ExternalIP, then Hostname (an IP literal). A Node without a port (this
 * fatiad's own agent, the simulated nodes) is served in this process, by the providers.
 *
 * Order (the caller's): this API server authenticates the user and authorizes the
 * subresource (create on pods/exec, get on pods/log, ...) and finds the pod, then this file
 * connects to the node (TCP, then TLS over it: the failures of each named apart), presenting
 * fatiad's own certificate (DATA/tls.crt, the one the node roles are given as --ca: the node
 * serves only its holder), checks the node's certificate (below), writes the request head as
 * the client sent it (the target unchanged: the node serves the same paths) without the user's
 * credentials, and hands the client's connection and the node's to the shared relay
 * (http/relay.c): the node's answer (101 and the stream, a chunked log, or its Status) goes to
 * the client as it is.
 *
 * Failure: a node that cannot be reached (refused, no route, TLS, CONNECT_TIMEOUT_S without a
 * handshake) is answered here, 503 `node "box-1" is not reachable: ...`, before any byte of the
 * node's; after that the relay only ends both connections.
 *
 * The node's serving certificate (self-signed in its data directory, nodeserve.c) is pinned:
 * the node role publishes its SHA-256 in its Node's annotation fatia.dev/serving-cert-sha256
 * (with its own token: only the node, or an admin, writes its Node), and the request is written
 * only after the handshake showed that certificate; another one (an impostor at the address)
 * is a 503 and gets nothing. Chosen over kube-apiserver's default (it does not check the
 * kubelet's certificate unless --kubelet-certificate-authority is given) and over a CA of the
 * control plane signing node certificates (a CSR flow: docs/fleet.md rejected one for tokens).
 * The user's own token is never forwarded.
 */
#include "base/compat.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/util.h>
#include <inttypes.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "apiserver/internal.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "http/relay.h"
#include "model/kinds/kinds.h"

#define CONNECT_TIMEOUT_S 5

struct nproxy {
    struct fatia_api_http_req *req;
    void *ctx;               /* the SSL_CTX */
    struct bufferevent *tcp; /* connecting */
    struct bufferevent *up;  /* TLS over tcp, once connected */
    struct evbuffer *head;   /* the request for the node, until TLS is set up */
    char node[256], addr[300];
    char pin[65]; /* the SHA-256 (hex) of the certificate the node published */
};

int fatia_apiserver_set_node_client(struct fatia_apiserver *s, const char *cert, const char *key,
                                    char *why, size_t why_n)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

    if (!ctx || SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
        SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
        const char *r = ERR_reason_error_string(ERR_get_error());
        snprintf(why, why_n, "the node proxy's client certificate %s: %s", cert,
                 r ? r : "cannot be loaded");
        SSL_CTX_free(ctx);
        return -FATIA_E_INVALID;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL); /* see the top of the file */
    if (s->node_client_ctx)
        SSL_CTX_free(s->node_client_ctx);
    s->node_client_ctx = ctx;
    return 0;
}

void fatia_api_nodeproxy_free(struct fatia_apiserver *s)
{
    if (s->node_client_ctx)
        SSL_CTX_free(s->node_client_ctx);
    s->node_client_ctx = NULL;
}

/* The Node's endpoint as "ADDR:PORT" ("[ADDR]:PORT" for IPv6); false when it has none. */
static bool node_endpoint(const json_t *node, char *buf, size_t n)
{
    const json_t *st = json_object_get(node, "status"), *a;
    static const char *const types[] = {"InternalIP", "ExternalIP", "Hostname"};
    int64_t port = 0;

    if (!fatia_json_int(json_object_get(json_object_get(st, "daemonEndpoints"), "kubeletEndpoint"),
                        "Port", &port) ||
        port <= 0 || port > 65535)
        return false;
    for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
        size_t i;
        json_array_foreach(json_object_get(st, "addresses"), i, a)
        {
            const char *ty = fatia_json_str(a, "type"), *ad = fatia_json_str(a, "address");
            if (ty && ad && *ad && !strcmp(ty, types[t])) {
                snprintf(buf, n, strchr(ad, ':') ? "[%s]:%" PRId64 : "%s:%" PRId64, ad, port);
                return true;
            }
        }
    }
    return false;
}

static void np_free(struct nproxy *p)
{
    if (p->up)
        bufferevent_free(p->up);
    if (p->tcp)
        bufferevent_free(p->tcp);
    if (p->head)
        evbuffer_free(p->head);
    fatia_free(p);
}

static void reply_unreachable(struct nproxy *p, const char *cause)
{
    json_t *st = fatia_api_status_new(503, "ServiceUnavailable", NULL);
    char msg[700];
    char *body;

    snprintf(msg, sizeof(msg), "node \"%s\" is not reachable: %s (%s)", p->node, cause, p->addr);
    json_object_set_new(st, "message", json_string(msg));
    body = json_dumps(st, JSON_COMPACT);
    json_decref(st);
    fatia_log(FATIA_LOG_WARNING, "node proxy: %s", msg);
    fatia_api_http_req_set_close_cb(p->req, NULL, NULL);
    fatia_api_http_reply(p->req, 503, "application/json", body, body ? strlen(body) : 0);
    free(body);
    np_free(p);
}

/* The client left before the node answered the handshake. */
static void client_gone(void *arg)
{
    struct nproxy *p = arg;

    fatia_api_http_reply(p->req, 503, "application/json", NULL, 0); /* detached: only freed */
    np_free(p);
}

/* The TLS handshake is done: the client's connection and the node's to the relay. */
static void tls_event(struct bufferevent *bev, short what, void *arg)
{
    struct nproxy *p = arg;
    struct bufferevent *client;
    unsigned long e;
    char cause[300];

    if (what & BEV_EVENT_CONNECTED) {
        SSL *ssl = bufferevent_openssl_get_ssl(bev);
        X509 *peer = ssl ? SSL_get1_peer_certificate(ssl) : NULL;
        char got[65] = "";
        (void)fatia_api_cert_sha256(peer, got);
        X509_free(peer);
        if (strcmp(got, p->pin)) {
            reply_unreachable(p, "its certificate is not the one its Node publishes "
                                 "(" FATIA_NODE_CERT_ANNOTATION ")");
            return;
        }
        /* the node is the one that published its endpoint: the request may go */
        evbuffer_add_buffer(bufferevent_get_output(bev), p->head);
        bufferevent_set_timeouts(bev, NULL, NULL); /* a stream may be idle for ever (logs -f) */
        fatia_api_http_req_set_close_cb(p->req, NULL, NULL);
        client = fatia_api_http_take(p->req);
        if (!client) {
            np_free(p);
            return;
        }
        (void)fatia_http_relay_new(client, p->up);
        p->up = NULL;
        np_free(p);
        return;
    }
    e = bufferevent_get_openssl_error(bev);
    if (what & BEV_EVENT_TIMEOUT)
        snprintf(cause, sizeof(cause), "no TLS handshake within %d s", CONNECT_TIMEOUT_S);
    else if (e && ERR_reason_error_string(e))
        snprintf(cause, sizeof(cause), "TLS: %s", ERR_reason_error_string(e));
    else
        snprintf(cause, sizeof(cause), "the connection closed during the TLS handshake");
    reply_unreachable(p, cause);
}

/* The TCP connection is made (or not): TLS over it, the head waiting in its output. */
static void tcp_event(struct bufferevent *bev, short what, void *arg)
{
    struct nproxy *p = arg;
    SSL *ssl;
    char cause[300];

    if (!(what & BEV_EVENT_CONNECTED)) {
        if (what & BEV_EVENT_TIMEOUT)
            snprintf(cause, sizeof(cause), "no connection within %d s", CONNECT_TIMEOUT_S);
        else
            snprintf(cause, sizeof(cause), "%s", fatia_strerror(-EVUTIL_SOCKET_ERROR()));
        reply_unreachable(p, cause);
        return;
    }
    bufferevent_set_timeouts(bev, NULL, NULL);
    ssl = SSL_new(p->ctx);
    p->up = ssl ? bufferevent_openssl_filter_new(bufferevent_get_base(bev), bev, ssl,
                                                 BUFFEREVENT_SSL_CONNECTING,
                                                 BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS)
                : NULL;
    if (!p->up) {
        if (ssl)
            SSL_free(ssl);
        reply_unreachable(p, "out of memory");
        return;
    }
    p->tcp = NULL; /* the filter's now */
    bufferevent_openssl_set_allow_dirty_shutdown(p->up, 1);
    bufferevent_setcb(p->up, NULL, NULL, tls_event, p);
    bufferevent_set_timeouts(p->up, &(struct timeval){CONNECT_TIMEOUT_S, 0},
                             &(struct timeval){CONNECT_TIMEOUT_S, 0});
    bufferevent_enable(p->up, EV_READ | EV_WRITE);
}

/* Request headers not forwarded: the user's credentials (the node trusts this fatiad, not
 * them), and the ones this file writes itself. */
static bool hop_header(const struct fatia_str *name)
{
    static const char *const drop[] = {"Authorization",       "Cookie",         "Host",
                                       "Connection",          "Content-Length", "Transfer-Encoding",
                                       "Proxy-Authorization", "Keep-Alive",     NULL};

    for (const char *const *d = drop; *d; d++)
        if (name->n == strlen(*d) && !strncasecmp(name->p, *d, name->n))
            return true;
    return name->n >= 12 && !strncasecmp(name->p, "Impersonate-", 12);
}

const json_t *fatia_api_stream_pod(const struct opctx *c, const char *verb, struct opres *err)
{
    const struct entry *e;
    char key[600];

    if (fatia_api_authorize(c, verb, err) < 0)
        return NULL;
    fatia_api_entry_key(c->t, c->ns, c->name, key, sizeof(key));
    e = fatia_api_rtable_find(c->t, key);
    if (!e || !e->committed) {
        fatia_api_opres_not_found(err, c->t, c->name);
        return NULL;
    }
    return e->committed->tree;
}

bool fatia_api_nodeproxy(struct fatia_apiserver *s, const json_t *pod, const char *who,
                         struct fatia_api_http_req *req, struct opres *err)
{
    const char *node = fatia_json_str(json_object_get(pod, "spec"), "nodeName");
    const struct fatia_http_head *h = fatia_api_http_req_head(req);
    struct rtable *t;
    struct entry *e;
    struct nproxy *p;
    struct evbuffer *out;
    struct sockaddr_storage ss;
    int sslen = sizeof(ss);
    const char *body;
    size_t body_n = 0;
    bool upgrade = false;
    char key[600];

    if (!node || !*node || !(t = fatia_api_server_table_for(s, &fatia_kind_node)))
        return false;
    fatia_api_entry_key(t, NULL, node, key, sizeof(key));
    e = fatia_api_rtable_find(t, key);
    if (!e || !e->committed)
        return false;
    p = fatia_calloc(1, sizeof(*p));
    if (!p) {
        fatia_api_opres_from_errno(err, -ENOMEM, "node proxy");
        return true;
    }
    if (!node_endpoint(e->committed->tree, p->addr, sizeof(p->addr))) {
        fatia_free(p);
        return false;
    }
    snprintf(p->node, sizeof(p->node), "%s", node);
    {
        const char *pin = fatia_json_str(
            json_object_get(json_object_get(e->committed->tree, "metadata"), "annotations"),
            FATIA_NODE_CERT_ANNOTATION);
        if (!pin || strlen(pin) != 64) {
            fatia_api_opres_fail(err, 503, "ServiceUnavailable",
                                 "node \"%s\" is not reachable: its Node publishes an endpoint "
                                 "(%s) but no certificate (" FATIA_NODE_CERT_ANNOTATION ")",
                                 node, p->addr);
            fatia_free(p);
            return true;
        }
        snprintf(p->pin, sizeof(p->pin), "%s", pin);
    }
    p->req = req;
    if (!s->node_client_ctx) {
        fatia_api_opres_fail(err, 503, "ServiceUnavailable",
                             "node \"%s\" is not reachable: this fatiad has no TLS client "
                             "certificate (--no-tls) to present to its endpoint (%s)",
                             node, p->addr);
        fatia_free(p);
        return true;
    }
    if (evutil_parse_sockaddr_port(p->addr, (struct sockaddr *)&ss, &sslen) < 0) {
        fatia_api_opres_fail(err, 503, "ServiceUnavailable",
                             "node \"%s\" is not reachable: its address %s is not an IP address",
                             node, p->addr);
        fatia_free(p);
        return true;
    }
    p->ctx = s->node_client_ctx;
    p->head = evbuffer_new();
    p->tcp = bufferevent_socket_new(s->base, -1, BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
    if (!p->head || !p->tcp) {
        np_free(p);
        fatia_api_opres_from_errno(err, -ENOMEM, "node proxy");
        return true;
    }

    /* the head, as the client sent it, less its credentials */
    out = p->head;
    evbuffer_add_printf(out, "%.*s %.*s HTTP/1.1\r\nHost: %s\r\n", (int)h->method.n, h->method.p,
                        (int)h->target.n, h->target.p, p->addr);
    for (size_t i = 0; i < h->n_headers; i++) {
        const struct fatia_http_header *hd = &h->headers[i];
        if (hd->name.n == 7 && !strncasecmp(hd->name.p, "Upgrade", 7))
            upgrade = true;
        if (!hop_header(&hd->name))
            evbuffer_add_printf(out, "%.*s: %.*s\r\n", (int)hd->name.n, hd->name.p,
                                (int)hd->value.n, hd->value.p);
    }
    body = fatia_api_http_req_body(req, &body_n);
    evbuffer_add_printf(out, "Connection: %s\r\n", upgrade ? "Upgrade" : "close");
    if (body_n)
        evbuffer_add_printf(out, "Content-Length: %zu\r\n", body_n);
    evbuffer_add_printf(out, "\r\n");
    if (body_n)
        evbuffer_add(out, body, body_n);

    bufferevent_setcb(p->tcp, NULL, NULL, tcp_event, p);
    bufferevent_set_timeouts(p->tcp, &(struct timeval){CONNECT_TIMEOUT_S, 0},
                             &(struct timeval){CONNECT_TIMEOUT_S, 0});
    fatia_api_http_req_set_close_cb(req, client_gone, p);
    if (bufferevent_socket_connect(p->tcp, (struct sockaddr *)&ss, sslen) < 0) {
        reply_unreachable(p, fatia_strerror(-errno));
        return true;
    }
    {
        const char *q = memchr(h->target.p, '?', h->target.n); /* the path only */
        fatia_log(FATIA_LOG_INFO, "node proxy: %.*s %.*s by %s to node %s (%s)", (int)h->method.n,
                  h->method.p, (int)(q ? (size_t)(q - h->target.p) : h->target.n), h->target.p, who,
                  node, p->addr);
    }
    return true;
}
