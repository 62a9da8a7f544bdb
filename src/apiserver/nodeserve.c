/*
 * apiserver/nodeserve.c: a node role's own HTTPS endpoint (`fatiad --role node --node-listen`,
 * default port 10250 as the kubelet's): the logs, exec, attach and port-forward streams of the
 * pods this node runs, for the control plane's node proxy (nodeproxy.c) and nobody else.
 *
 * Paths: the API's own (/api/v1/namespaces/NS/pods/NAME/log|exec|attach|portforward, with the
 * same query), so the control plane forwards the target as the client sent it, and this file
 * parses it with the API server's parser (request.h). Rejected: the kubelet's own paths
 * (/containerLogs/NS/POD/CTR, /exec/NS/POD/CTR): a second grammar for the same requests.
 *
 * The streams are the API server's own (logs.c, stream_exec.c, stream_portforward.c: their
 * _serve functions), given the pod as this node's agent has it (o->pod: the agent's view of
 * the pods bound to it, fatia_agent_pod_object) instead of the API server's object table, which
 * a node role has not: a pod the agent does not run is 404 here.
 *
 * Who may call: the holder of a certificate in o->peers (the node role's --ca: the control
 * plane's DATA/tls.crt, whose key never leaves the control host), checked on every request by
 * comparing the TLS peer's certificate with them (the handshake proved the key). No client
 * certificate: 401; another one: 403. A bearer token is never looked at, so a tenant's token or
 * another node's is a 401 as any anonymous request. Chosen over a bearer token checked by
 * TokenReview: the control plane already has this pair and the node already has its
 * certificate (no new credential to make, copy or revoke, no round trip to the API per stream,
 * and the node serves even while the API is slow); as kube-apiserver's
 * --kubelet-client-certificate against the kubelet's --client-ca-file, but pinned to the one
 * certificate rather than every certificate a CA signed. The user was authorized by the
 * control plane (RBAC on the subresource) before it called.
 *
 * The serving certificate is self-signed, made in the node's data directory (DATA/node-tls.crt)
 * by fatia_tls_ensure for the published address; the node role publishes its SHA-256 in its
 * Node's annotation FATIA_NODE_CERT_ANNOTATION (written with the node's own token), which the
 * control plane's proxy requires of the endpoint before it sends the request (nodeproxy.c).
 */
#include "base/compat.h"

#include "apiserver/nodeserve.h"

#include <errno.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdio.h>

#include "apiserver/http.h"
#include "apiserver/internal.h"
#include "apiserver/request.h"
#include "apiserver/tls.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"

#define MAX_PEERS 16

struct fatia_api_node_server {
    struct fatia_api_node_server_opts o;
    struct fatia_api_http_server *http;
    void *tls_ctx;
    X509 *peers[MAX_PEERS];
    size_t n_peers;
};

static void reply(struct fatia_api_http_req *req, int code, const char *reason, const char *msg)
{
    json_t *st = fatia_api_status_new(code, reason, msg);
    char *body = st ? json_dumps(st, JSON_COMPACT) : NULL;

    json_decref(st);
    fatia_api_http_reply(req, code, "application/json", body, body ? strlen(body) : 0);
    free(body);
}

static void reply_opres(struct fatia_api_http_req *req, struct opres *r)
{
    char *body = r->status ? json_dumps(r->status, JSON_COMPACT) : NULL;

    fatia_api_http_reply(req, r->code, "application/json", body, body ? strlen(body) : 0);
    free(body);
}

/* 0: the peer is the control plane; else the HTTP status to answer. */
static int check_peer(struct fatia_api_node_server *s, struct fatia_api_http_req *req)
{
    SSL *ssl = fatia_api_http_req_ssl(req);
    X509 *cert = ssl ? SSL_get1_peer_certificate(ssl) : NULL;
    int rc = 403;

    if (!cert)
        return 401;
    for (size_t i = 0; i < s->n_peers; i++)
        if (!X509_cmp(cert, s->peers[i]))
            rc = 0;
    X509_free(cert);
    return rc;
}

static void handle(void *arg, struct fatia_api_http_req *req)
{
    struct fatia_api_node_server *s = arg;
    const struct fatia_http_head *h = fatia_api_http_req_head(req);
    struct fatia_api_target tgt;
    struct fatia_api_route rt;
    struct fatia_api_query q;
    struct opres r = {0};
    const json_t *pod;
    char why[300] = "", method[16];
    int rc = check_peer(s, req);

    if (rc == 401) {
        reply(req, 401, "Unauthorized",
              "this node's endpoint serves only the control plane: no client certificate");
        return;
    }
    if (rc) {
        reply(req, 403, "Forbidden",
              "this node's endpoint serves only the control plane: the client certificate is "
              "not the control plane's (--ca)");
        return;
    }
    snprintf(method, sizeof(method), "%.*s", (int)h->method.n, h->method.p);
    if (fatia_api_target_parse(h->target.p, h->target.n, &tgt) < 0) {
        reply(req, 400, "BadRequest", "malformed request target");
        return;
    }
    if (fatia_api_route_parse(&tgt, &rt) < 0 || rt.type != FATIA_ROUTE_RESOURCE || rt.group[0] ||
        strcmp(rt.resource, "pods") || !rt.ns || !rt.name || !rt.sub ||
        (strcmp(rt.sub, "log") && strcmp(rt.sub, "exec") && strcmp(rt.sub, "attach") &&
         strcmp(rt.sub, "portforward"))) {
        reply(req, 404, "NotFound", "the node serves only pods' log, exec, attach and portforward");
        goto out;
    }
    if (fatia_api_query_parse(&tgt, &q, why, sizeof(why)) < 0) {
        reply(req, 400, "BadRequest", why);
        goto out;
    }
    pod = s->o.pod(s->o.pod_arg, rt.ns, rt.name);
    if (!pod) {
        snprintf(why, sizeof(why), "pods \"%s\" not found on this node", rt.name);
        reply(req, 404, "NotFound", why);
        goto out;
    }
    if (!strcmp(rt.sub, "log")) {
        if (strcmp(method, "GET")) {
            reply(req, 405, "MethodNotAllowed", "the log is read with GET");
            goto out;
        }
        fatia_api_logs_serve(&s->o.streams, pod, &q, req, &r);
    } else if (strcmp(method, "GET") && strcmp(method, "POST")) {
        reply(req, 405, "MethodNotAllowed", "a stream is opened with GET or POST");
        goto out;
    } else if (!strcmp(rt.sub, "portforward")) {
        fatia_api_portforward_serve(&s->o.streams, pod, "the control plane", &tgt, req, &r);
    } else {
        fatia_api_exec_serve(&s->o.streams, pod, "the control plane", &tgt, req, &r,
                             !strcmp(rt.sub, "attach"));
    }
    if (r.code)
        reply_opres(req, &r);
    fatia_api_opres_release(&r);
out:
    fatia_api_target_release(&tgt);
}

int fatia_api_cert_sha256(const void *x, char hex[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned n = 0;

    hex[0] = '\0';
    if (!x || X509_digest(x, EVP_sha256(), md, &n) != 1 || n != 32)
        return -ENOMEM;
    for (unsigned i = 0; i < n; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    return 0;
}

void fatia_api_node_server_cert_sha256(const struct fatia_api_node_server *s, char hex[65])
{
    (void)fatia_api_cert_sha256(SSL_CTX_get0_certificate(s->tls_ctx), hex);
}

static int load_peers(struct fatia_api_node_server *s, const char *path, char *why, size_t why_n)
{
    FILE *f = fopen(path, "re");
    X509 *x;

    if (!f) {
        snprintf(why, why_n, "%s: %s", path, fatia_strerror(-errno));
        return -errno;
    }
    while (s->n_peers < MAX_PEERS && (x = PEM_read_X509(f, NULL, NULL, NULL)))
        s->peers[s->n_peers++] = x;
    fclose(f);
    if (!s->n_peers) {
        snprintf(why, why_n, "%s: no certificate", path);
        return -FATIA_E_INVALID;
    }
    return 0;
}

/* Every client may present a certificate; which one is served is check_peer's to say, so that
 * a wrong one is an HTTP 403 rather than a failed handshake. */
static int accept_any(int ok, X509_STORE_CTX *ctx)
{
    (void)ok;
    (void)ctx;
    return 1;
}

int fatia_api_node_server_new(struct event_base *base, const struct fatia_api_node_server_opts *o,
                              struct fatia_api_node_server **ret, uint16_t *ret_port, char *why,
                              size_t why_n)
{
    struct fatia_api_node_server *s = fatia_calloc(1, sizeof(*s));
    int r;

    if (!s)
        return -ENOMEM;
    s->o = *o;
    r = load_peers(s, o->peers, why, why_n);
    r = r ? r : fatia_tls_ensure(o->cert, o->key, o->host, why, why_n);
    r = r ? r : fatia_tls_server_ctx(o->cert, o->key, &s->tls_ctx, why, why_n);
    if (r < 0)
        goto fail;
    SSL_CTX_set_verify(s->tls_ctx, SSL_VERIFY_PEER | SSL_VERIFY_CLIENT_ONCE, accept_any);
    r = fatia_api_http_server_new(base, &(struct fatia_api_http_opts){.tls_ctx = s->tls_ctx},
                                  handle, s, &s->http);
    if (r < 0) {
        snprintf(why, why_n, "%s", fatia_strerror(r));
        goto fail;
    }
    r = fatia_api_http_server_listen(s->http, o->host, o->port, ret_port);
    if (r < 0) {
        snprintf(why, why_n, "listen on %s:%u: %s", o->host, o->port, fatia_strerror(r));
        goto fail;
    }
    *ret = s;
    return 0;
fail:
    fatia_api_node_server_free(s);
    return r;
}

void fatia_api_node_server_free(struct fatia_api_node_server *s)
{
    if (!s)
        return;
    fatia_api_http_server_free(s->http);
    if (s->tls_ctx)
        fatia_tls_ctx_free(s->tls_ctx);
    for (size_t i = 0; i < s->n_peers; i++)
        X509_free(s->peers[i]);
    fatia_free(s);
}
