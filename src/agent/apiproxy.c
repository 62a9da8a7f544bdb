/*
 * agent/apiproxy.c: how a pod in its own network namespace reaches fatiad: a TCP proxy the agent
 * runs on each pod network's gateway (10.<k/256>.<k%256>.1, the host side of the namespace's
 * bridge, agent/cni.c) at fatiad's own port, forwarding every connection to fatiad's listener on
 * loopback. TLS is end to end (the proxy only copies bytes): the pod's client verifies fatiad's
 * certificate against the kube-root-ca.crt it has as ca.crt, and fatiad authenticates the pod's
 * bearer token (its ServiceAccount's, agent/satoken.c) as for any client. Pods name the API
 * https://kubernetes.default.svc:PORT (KUBERNETES_SERVICE_HOST/PORT; the pod's /etc/hosts maps
 * the kubernetes.default.svc names to its gateway: oci_pod.c), and fatiad's certificate names
 * kubernetes.default.svc (apiserver/tls.c).
 *
 * Model: one listener per network index, made once the bridge has its gateway address (the
 * first pod's CNI ADD, by its shim: until then the bind fails with EADDRNOTAVAIL and the tick
 * tries again), kept until fatiad stops, and with it the host's INPUT rule that lets that pod
 * network reach this port of its gateway (cni.c, FATIA-HOSTISOLATE: the host drops all else from
 * pods). Only the API port is proxied: the workbench proxy, the
 * dashboard's origin and node ports stay on loopback, which a pod's network namespace does not
 * reach.
 *
 * Choices and rejected: fatiad itself listening on every gateway (the API server would have to
 * learn the agent's bridges; the agent knows them, and the proxy keeps the layers apart); the
 * gateway's IP as KUBERNETES_SERVICE_HOST (one per namespace: fatiad's certificate, made once and
 * trusted by every kubeconfig, cannot name them all; client-go's InClusterConfig takes a host
 * name as well); the kubernetes Service's ClusterIP routed by an address on a host interface or
 * iptables DNAT (it changes the host's network for every fatiad on the machine; see
 * controller/svcproxy.c). Known: fatiad sees the proxy's 127.0.0.1 as the peer, not the pod.
 *
 * On a node role (`fatiad --role node`, no API of its own) the proxy listens at the first
 * --server URL's port and forwards to the control plane's replicas (fatia_agent_set_api_server,
 * one call per --server, each resolved once at start; a replica that moves to another address
 * needs the node role restarted): a connection goes to the replica that last accepted one, and
 * when the connect is refused or takes over CONNECT_TIMEOUT_S, to the next, each at most once;
 * the pod's bytes are read only once a replica has accepted, so none is lost on the way. A
 * connection already open to a replica that dies ends, as it would to kube-apiserver: the pod's
 * client reconnects, and reaches the next replica. Pods on the host's network name the first
 * replica's host themselves (KUBERNETES_SERVICE_HOST) and get no failover.
 * TLS stays end to end: the pod verifies the control plane's certificate, which names
 * kubernetes.default.svc, against the kube-root-ca.crt the node role fetched for it (the
 * control plane's CA, the one --ca names). Rejected: terminating TLS in the node role and opening a new one with
 * --ca (the node role would see every pod's bearer token, and need a certificate of its own
 * naming kubernetes.default.svc that the pods trust).
 */
#include "base/compat.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netdb.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "agent/cni.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/log.h"

struct fatia_agent_apiproxy {
    uint32_t k;
    bool allowed; /* its FATIA-HOSTISOLATE rule is ours (removed with the listener) */
    struct evconnlistener *l;
    struct fatia_agent *a;
    struct fatia_agent_apiproxy *next;
};

#define CONNECT_TIMEOUT_S 3

struct pconn {
    struct bufferevent *side[2]; /* the pod's, the API server's */
    bool eof[2];
    bool connected; /* side[1] has connected: the pod's side is read from then on */
    struct fatia_agent *a;
    unsigned to, tries; /* the replica side[1] connects to (api_to[to]), connects tried */
};

static void conn_free(struct pconn *c)
{
    for (int i = 0; i < 2; i++)
        if (c->side[i])
            bufferevent_free(c->side[i]);
    fatia_free(c);
}

static int side_of(struct pconn *c, struct bufferevent *bev)
{
    return c->side[0] == bev ? 0 : 1;
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct pconn *c = arg;
    int s = side_of(c, bev);

    evbuffer_add_buffer(bufferevent_get_output(c->side[!s]), bufferevent_get_input(bev));
}

static void on_drained(struct bufferevent *bev, void *arg)
{
    struct pconn *c = arg;

    (void)bev;
    if ((c->eof[0] || c->eof[1]) && evbuffer_get_length(bufferevent_get_output(c->side[0])) == 0 &&
        evbuffer_get_length(bufferevent_get_output(c->side[1])) == 0)
        conn_free(c);
}

static void on_event(struct bufferevent *bev, short what, void *arg);

/* Connects side[1] (a new one) to the replica c->to, or to fatiad's loopback listener. */
static int connect_upstream(struct pconn *c, struct event_base *base)
{
    struct sockaddr_in lo = {.sin_family = AF_INET, .sin_port = htons(c->a->api_port)};
    const struct sockaddr *to = (const struct sockaddr *)&lo;
    socklen_t to_len = sizeof(lo);
    struct timeval tv = {CONNECT_TIMEOUT_S, 0};

    lo.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (c->a->api_to_n) { /* a node role: the control plane's replica c->to */
        to = (const struct sockaddr *)&c->a->api_to[c->to];
        to_len = c->a->api_to_len[c->to];
    }
    if (c->side[1])
        bufferevent_free(c->side[1]);
    c->tries++;
    c->side[1] = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (!c->side[1])
        return -ENOMEM;
    bufferevent_setcb(c->side[1], on_read, NULL, on_event, c);
    bufferevent_set_timeouts(c->side[1], NULL, &tv); /* the write timeout bounds the connect */
    if (bufferevent_socket_connect(c->side[1], (struct sockaddr *)to, (int)to_len) < 0)
        return -ECONNREFUSED;
    return bufferevent_enable(c->side[1], EV_READ | EV_WRITE) < 0 ? -EIO : 0;
}

/* side[1]'s connect failed: the next replica, while one is left untried. */
static bool connect_next(struct pconn *c, struct event_base *base)
{
    while (c->a->api_to_n > 1 && c->tries < c->a->api_to_n) {
        c->to = (c->to + 1) % c->a->api_to_n;
        if (connect_upstream(c, base) == 0)
            return true;
    }
    return false;
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct pconn *c = arg;
    int s = side_of(c, bev);

    if (what & BEV_EVENT_CONNECTED) {
        c->connected = true;
        c->a->api_to_cur = c->to; /* the next connections try this replica first */
        bufferevent_set_timeouts(bev, NULL, NULL);
        bufferevent_enable(c->side[0], EV_READ | EV_WRITE);
        return;
    }
    if (s == 1 && !c->connected && (what & (BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT | BEV_EVENT_EOF))) {
        if (c->a->api_to_n > 1)
            fatia_warn("agent: API replica %u of %u did not accept a pod's connection: trying the "
                       "next",
                       c->to + 1, c->a->api_to_n);
        if (!connect_next(c, bufferevent_get_base(bev)))
            conn_free(c);
        return;
    }
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        on_read(bev, c);
        c->eof[s] = true;
        if (what & BEV_EVENT_ERROR || c->eof[!s] ||
            evbuffer_get_length(bufferevent_get_output(c->side[!s])) == 0) {
            conn_free(c);
            return;
        }
        bufferevent_disable(bev, EV_READ);
        bufferevent_setcb(c->side[!s], on_read, on_drained, on_event, c);
    }
}

static void on_accept(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa,
                      int salen, void *arg)
{
    struct fatia_agent_apiproxy *x = arg;
    struct event_base *base = evconnlistener_get_base(lis);
    struct pconn *c = fatia_calloc(1, sizeof(*c));

    (void)sa;
    (void)salen;
    if (!c) {
        close(fd);
        return;
    }
    c->a = x->a;
    c->to = x->a->api_to_n ? x->a->api_to_cur % x->a->api_to_n : 0;
    c->side[0] = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (!c->side[0]) {
        close(fd);
        conn_free(c);
        return;
    }
    /* the pod's side is enabled once a replica accepted (on_event) */
    bufferevent_setcb(c->side[0], on_read, NULL, on_event, c);
    if (connect_upstream(c, base) < 0 && !connect_next(c, base))
        conn_free(c);
}

void fatia_agent_apiproxy_gateway(uint32_t k, char *ret, size_t n)
{
    snprintf(ret, n, "10.%u.%u.1", (k / 256) & 255, k % 256);
}

int fatia_agent_apiproxy_ensure(struct fatia_agent *a, uint32_t k)
{
    struct fatia_agent_apiproxy *x;
    struct sockaddr_in at = {.sin_family = AF_INET};
    char gw[32];

    if (!a->api_port)
        return -EAGAIN;
    for (x = a->apiproxy; x; x = x->next)
        if (x->k == k)
            return 0;
    fatia_agent_apiproxy_gateway(k, gw, sizeof(gw));
    at.sin_port = htons(a->api_port);
    if (inet_pton(AF_INET, gw, &at.sin_addr) != 1)
        return -EINVAL;
    x = fatia_calloc(1, sizeof(*x));
    if (!x)
        return -ENOMEM;
    *x = (struct fatia_agent_apiproxy){.k = k, .a = a};
    x->l = evconnlistener_new_bind(
        a->base, on_accept, x, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
        64, (struct sockaddr *)&at, sizeof(at));
    if (!x->l) {
        int e = errno ? -errno : -EIO;
        fatia_free(x);
        return e; /* EADDRNOTAVAIL: the bridge has no gateway yet */
    }
    x->next = a->apiproxy;
    a->apiproxy = x;
    /* the pod network reaches nothing else of the host (cni.c, FATIA-HOSTISOLATE) */
    x->allowed = fatia_cni_host_allow(k, a->api_port, true) == 0;
    if (!x->allowed)
        fatia_warn("agent: cannot let pod network %u reach %s:%u (iptables INPUT): its pods "
                   "cannot reach the API",
                   k, gw, a->api_port);
    fatia_info("agent: the API is reachable from pod network %u at %s:%u", k, gw, a->api_port);
    return 0;
}

void fatia_agent_apiproxy_free(struct fatia_agent *a)
{
    while (a->apiproxy) {
        struct fatia_agent_apiproxy *x = a->apiproxy;
        a->apiproxy = x->next;
        evconnlistener_free(x->l);
        if (x->allowed)
            (void)fatia_cni_host_allow(x->k, a->api_port, false);
        fatia_free(x);
    }
}

void fatia_agent_set_api_port(struct fatia_agent *a, unsigned port)
{
    if (a)
        a->api_port = (uint16_t)port;
}

unsigned fatia_agent_api_port(const struct fatia_agent *a)
{
    return a ? a->api_port : 0;
}

int fatia_agent_set_api_server(struct fatia_agent *a, const char *host, unsigned port)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    char ps[16];
    int r;

    if (!a || !host || strlen(host) >= sizeof(a->api_host) || !port || port > 65535)
        return -EINVAL;
    if (a->api_to_n == FATIA_AGENT_API_SERVERS)
        return -ENOSPC;
    snprintf(ps, sizeof(ps), "%u", port);
    r = getaddrinfo(host, ps, &hints, &ai);
    if (r != 0 || !ai || ai->ai_addrlen > sizeof(a->api_to[0])) {
        fatia_error("agent: the API server's host '%s': %s", host,
                    r ? gai_strerror(r) : "no address");
        if (ai)
            freeaddrinfo(ai);
        return -EINVAL;
    }
    memcpy(&a->api_to[a->api_to_n], ai->ai_addr, ai->ai_addrlen);
    a->api_to_len[a->api_to_n] = ai->ai_addrlen;
    freeaddrinfo(ai);
    if (a->api_to_n++ == 0) { /* the first names the API to the pods */
        snprintf(a->api_host, sizeof(a->api_host), "%s", host);
        a->api_port = (uint16_t)port;
    }
    return 0;
}
