/*
 * controller/svcproxy.c: how a Service is reached on one box: a TCP proxy in fatiad for every
 * nodePort of a NodePort or LoadBalancer Service, listening on the host's loopback
 * (127.0.0.1:nodePort), forwarding each connection to one ready address of the Service's
 * Endpoints (the endpoints controller lists only ready pods: readiness probes decide), round
 * robin, at the port the Endpoints give for the Service port's name (its targetPort resolved).
 * The bytes are carried by the shared relay (http/relay.c).
 *
 * Model: the key is the Service's ns/name; a pass makes the listeners its nodePorts need and
 * closes those it no longer does (deleted, type changed, port changed). A connection reads the
 * Endpoints at accept time, so a pod that turns unready gets no new connections; open ones go
 * on until either side closes (the relay: at the end of one side the other's pending output is
 * flushed before both close).
 *
 * Choices: loopback only (no other host reaches a node port: one box, and a tenant's pod in its
 * own network namespace does not reach the host's loopback either, so the proxy does not bridge
 * the agent's per-namespace isolation); a nodePort another program holds is reported once
 * (Warning Event FailedToBindNodePort on the Service) and tried again on the next change.
 * Rejected: ClusterIP routing (an address per Service on a host interface plus a listener per
 * ClusterIP:port, or iptables DNAT as kube-proxy does): it changes the host's network for
 * every fatiad on the machine; a Service without a nodePort is reached with `kubectl
 * port-forward svc/NAME`.
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
#include <unistd.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "controller/ctl_internal.h"
#include "http/relay.h"

struct plistener {
    char key[600]; /* ns/name */
    char ns[256], name[256], port_name[64];
    int node_port, port;
    struct evconnlistener *l;
    unsigned rr;
    struct svcproxy_ctl *sp;
    struct plistener *next;
};

struct svcproxy_ctl {
    struct ctl *ctl;
    struct wq *q;
    struct informer *services, *endpoints;
    struct plistener *ls;
    json_t *warned; /* {"ns/name/port": true}: bind failures reported */
};

/* One ready address and its port for l's Service port, round robin; false when none. */
static bool pick(struct plistener *l, struct sockaddr_in *ret)
{
    const json_t *ep = fatia_ctlr_informer_get(l->sp->endpoints, l->ns, l->name), *ss;
    json_t *cands = json_array();
    size_t i, n;
    bool ok = false;

    json_array_foreach(json_object_get(ep, "subsets"), i, ss)
    {
        size_t j;
        json_t *p, *a;
        int64_t port = 0;
        json_array_foreach(json_object_get(ss, "ports"), j, p)
        {
            const char *pn = fatia_json_str(p, "name");
            if ((!l->port_name[0] && (!pn || !pn[0])) || (pn && !strcmp(pn, l->port_name)) ||
                json_array_size(json_object_get(ss, "ports")) == 1)
                (void)fatia_json_int(p, "port", &port);
        }
        if (port <= 0)
            continue;
        json_array_foreach(json_object_get(ss, "addresses"), j, a)
        {
            if (fatia_json_str(a, "ip"))
                json_array_append_new(
                    cands, json_pack("[s,I]", fatia_json_str(a, "ip"), (json_int_t)port));
        }
    }
    n = json_array_size(cands);
    if (n) {
        json_t *c = json_array_get(cands, l->rr++ % n);
        *ret = (struct sockaddr_in){.sin_family = AF_INET,
                                    .sin_port =
                                        htons((uint16_t)json_integer_value(json_array_get(c, 1)))};
        ok = inet_pton(AF_INET, json_string_value(json_array_get(c, 0)), &ret->sin_addr) == 1;
    }
    json_decref(cands);
    return ok;
}

static void on_accept(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa,
                      int salen, void *arg)
{
    struct plistener *l = arg;
    struct event_base *base = evconnlistener_get_base(lis);
    struct sockaddr_in to;
    struct bufferevent *in, *up;

    (void)sa;
    (void)salen;
    if (!pick(l, &to)) {
        close(fd); /* no ready endpoint: refused, as kube-proxy's REJECT */
        return;
    }
    in = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
    up = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (!in || !up || bufferevent_socket_connect(up, (struct sockaddr *)&to, sizeof(to)) < 0) {
        if (in)
            bufferevent_free(in);
        else
            close(fd);
        if (up)
            bufferevent_free(up);
        return;
    }
    (void)fatia_http_relay_new(in, up); /* each connection is a relay of its own (http/relay.c) */
}

static void listener_free(struct plistener *l)
{
    if (l->l)
        evconnlistener_free(l->l);
    fatia_free(l);
}

static void reconcile(void *arg, const char *key)
{
    struct svcproxy_ctl *sp = arg;
    char ns[256];
    const char *name = fatia_ctlr_split_key(key, ns, sizeof(ns));
    const json_t *svc = fatia_ctlr_informer_get(sp->services, ns, name), *p;
    const char *type = fatia_json_str(json_object_get(svc, "spec"), "type");
    bool node = svc && type && (!strcmp(type, "NodePort") || !strcmp(type, "LoadBalancer"));
    struct plistener **pp = &sp->ls;
    size_t i;

    /* drop what is no longer wanted */
    while (*pp) {
        struct plistener *l = *pp;
        bool keep = false;
        if (strcmp(l->key, key)) {
            pp = &l->next;
            continue;
        }
        json_array_foreach(node ? fatia_json_path(svc, "spec.ports") : NULL, i, p)
        {
            int64_t np = 0, port = 0;
            const char *pn = fatia_json_str(p, "name");
            (void)fatia_json_int(p, "nodePort", &np);
            (void)fatia_json_int(p, "port", &port);
            if (np == l->node_port && port == l->port && !strcmp(pn ? pn : "", l->port_name))
                keep = true;
        }
        if (keep) {
            pp = &l->next;
            continue;
        }
        *pp = l->next;
        fatia_info("service proxy: %s: closing 127.0.0.1:%d", key, l->node_port);
        listener_free(l);
    }
    if (!node)
        return;
    json_array_foreach(fatia_json_path(svc, "spec.ports"), i, p)
    {
        int64_t np = 0, port = 0;
        const char *pn = fatia_json_str(p, "name"), *proto = fatia_json_str(p, "protocol");
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        struct plistener *l;
        bool have = false;
        char wkey[700];
        if (!fatia_json_int(p, "nodePort", &np) || np <= 0 || (proto && strcmp(proto, "TCP")))
            continue;
        (void)fatia_json_int(p, "port", &port);
        for (l = sp->ls; l; l = l->next)
            have |= !strcmp(l->key, key) && l->node_port == np;
        if (have)
            continue;
        l = fatia_calloc(1, sizeof(*l));
        if (!l)
            return;
        snprintf(l->key, sizeof(l->key), "%s", key);
        snprintf(l->ns, sizeof(l->ns), "%s", ns);
        snprintf(l->name, sizeof(l->name), "%s", name);
        snprintf(l->port_name, sizeof(l->port_name), "%s", pn ? pn : "");
        l->node_port = (int)np;
        l->port = (int)port;
        l->sp = sp;
        sa.sin_port = htons((uint16_t)np);
        l->l = evconnlistener_new_bind(fatia_ctlr_base(sp->ctl), on_accept, l,
                                       LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE |
                                           LEV_OPT_CLOSE_ON_EXEC,
                                       64, (struct sockaddr *)&sa, sizeof(sa));
        snprintf(wkey, sizeof(wkey), "%s/%lld", key, (long long)np);
        if (!l->l) {
            int e = errno;
            if (!json_object_get(sp->warned, wkey)) {
                json_object_set_new(sp->warned, wkey, json_true());
                fatia_ctlr_event(sp->ctl, svc, "service-proxy", "Warning", "FailedToBindNodePort",
                                 "cannot listen on 127.0.0.1:%lld: %s", (long long)np,
                                 fatia_strerror(-e));
            }
            fatia_free(l);
            continue;
        }
        json_object_del(sp->warned, wkey);
        fatia_info("service proxy: %s: port %lld on 127.0.0.1:%lld", key, (long long)port,
                   (long long)np);
        l->next = sp->ls;
        sp->ls = l;
    }
}

static void on_service(void *arg, const json_t *old, const json_t *obj)
{
    struct svcproxy_ctl *sp = arg;
    char key[600];

    fatia_ctlr_obj_key(obj ? obj : old, key, sizeof(key));
    fatia_ctlr_wq_add(sp->q, key);
}

int fatia_ctlr_svcproxy_ctl_new(struct ctl *c, struct svcproxy_ctl **ret)
{
    struct svcproxy_ctl *sp = fatia_calloc(1, sizeof(*sp));
    int rc;

    if (!sp)
        return -ENOMEM;
    sp->ctl = c;
    sp->warned = json_object();
    sp->q = fatia_ctlr_wq_new(c, "service-proxy", reconcile, sp);
    sp->services = fatia_ctlr_informer(c, fatia_kind_find("v1", "Service", NULL));
    sp->endpoints = fatia_ctlr_informer(c, fatia_kind_find("v1", "Endpoints", NULL));
    if (!sp->q || !sp->services || !sp->endpoints || !sp->warned) {
        fatia_ctlr_svcproxy_ctl_free(sp);
        return -ENOMEM;
    }
    if ((rc = fatia_ctlr_informer_on(sp->services, on_service, sp)) < 0) {
        fatia_ctlr_svcproxy_ctl_free(sp);
        return rc;
    }
    *ret = sp;
    return 0;
}

void fatia_ctlr_svcproxy_ctl_free(struct svcproxy_ctl *sp)
{
    if (!sp)
        return;
    while (sp->ls) {
        struct plistener *l = sp->ls;
        sp->ls = l->next;
        listener_free(l);
    }
    fatia_ctlr_wq_free(sp->q);
    json_decref(sp->warned);
    fatia_free(sp);
}
