/*
 * agent/lease.c: node leases, renewed as the kubelet renews them (see lease.h).
 *
 * Model: a timer every duration/4. Each tick lists the Nodes (so nodes that appear get a lease
 * without a restart), and for each node served writes its Lease: an update of the last version
 * this renewer wrote or read (resourceVersion precondition), or a create when it has none. A
 * 409 (someone else wrote it, or it exists already) makes the next tick read it first (get,
 * then update); a 404 (deleted) makes it create it again. The namespace kube-node-lease is
 * created when a create answers 404 for it. At most one write per node is in flight: a slow API
 * server makes the renewer skip ticks, never pile writes up.
 *
 * Only the time is renewed: holderIdentity is the node's name, leaseDurationSeconds the
 * configured duration. A renewal that fails is logged once per failure streak; the node goes
 * NotReady only if it keeps failing for a whole duration (the controller's judgement, not ours).
 *
 * Rejected: the kubelet's backoff on failures (200 ms doubling to 7 s): the next tick is at most
 * duration/4 away, which is what a renewal needs, and a partition ends either way.
 */
#include "base/compat.h"

#include "agent/lease.h"

#include <event2/event.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "base/map.h"
#include "client/client.h"

#define LEASE_NS "kube-node-lease"

struct node_lease {
    struct fatia_agent_lease *l;
    char *name;
    json_t *last;  /* the Lease as last written or read; NULL: unknown */
    bool inflight; /* a write or read is out */
    bool ns_asked; /* the namespace's create was sent once: a 404 after that is a failure */
    bool failing;  /* logged */
    bool reread;   /* a 409: read the lease before writing it again */
    bool dead;     /* the renewer was freed while a write was out */
};

struct fatia_agent_lease {
    struct event_base *base;
    struct fatia_client *client;
    char *nodes;
    int64_t duration_s;
    struct event *tick;
    struct fatia_strmap by_node; /* name -> struct node_lease */
    bool listing;
    struct alive *alive; /* cleared at free: a list answer in flight sees it */
};

struct alive {
    bool yes;
    struct fatia_agent_lease *l;
};

static const struct fatia_kind *lease_kind(void)
{
    return fatia_kind_find("coordination.k8s.io/v1", "Lease", NULL);
}

static bool serves(const struct fatia_agent_lease *l, const char *node)
{
    size_t n = strlen(node);

    if (!l->nodes || !strcmp(l->nodes, "*"))
        return true;
    for (const char *p = l->nodes; (p = strstr(p, node)); p += n)
        if ((p == l->nodes || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
            return true;
    return false;
}

static void renew(struct node_lease *nl);

static void ns_done(void *arg, const struct fatia_client_result *res)
{
    (void)arg;
    (void)res; /* created, or it exists: the next tick creates the lease */
}

static void wrote(void *arg, const struct fatia_client_result *res)
{
    struct node_lease *nl = arg;

    nl->inflight = false;
    if (nl->dead) {
        json_decref(nl->last);
        fatia_free(nl->name);
        fatia_free(nl);
        return;
    }
    if (!res->status) {
        json_decref(nl->last);
        nl->last = json_deep_copy(res->obj);
        if (nl->failing)
            fatia_info("agent: node %s: lease renewed again", nl->name);
        nl->failing = false;
        return;
    }
    json_decref(nl->last);
    nl->last = NULL;
    nl->reread = res->code == 409;
    if (res->code == 404 && nl->l) {
        /* no namespace yet (the create said so): make it; the first time is no failure (a fresh
         * cluster has none), only a 404 after that is */
        if (!nl->ns_asked) {
            nl->ns_asked = true;
            fatia_info("agent: node %s: creating namespace %s for its lease", nl->name, LEASE_NS);
        } else if (!nl->failing) {
            fatia_warn("agent: node %s: cannot renew its lease: %d %s", nl->name, res->code,
                       fatia_json_str(res->status, "message")
                           ? fatia_json_str(res->status, "message")
                           : "");
            nl->failing = true;
        }
        json_t *ns = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                               "metadata", "name", LEASE_NS);
        if (ns)
            (void)fatia_client_create(nl->l->client, ns, NULL, ns_done, NULL);
        json_decref(ns);
    }
    if (res->code != 409 && res->code != 404 && !nl->failing) {
        fatia_warn("agent: node %s: cannot renew its lease: %d %s", nl->name, res->code,
                   fatia_json_str(res->status, "message") ? fatia_json_str(res->status, "message")
                                                          : "");
        nl->failing = true;
    }
}

static void got(void *arg, const struct fatia_client_result *res)
{
    struct node_lease *nl = arg;

    nl->inflight = false;
    if (nl->dead) {
        wrote(arg, res); /* frees */
        return;
    }
    json_decref(nl->last);
    nl->last = res->status ? NULL : json_deep_copy(res->obj);
    nl->reread = false; /* read (or gone: created next) */
    if (nl->last)
        renew(nl);
}

static void renew(struct node_lease *nl)
{
    struct fatia_agent_lease *l = nl->l;
    char now[64];
    json_t *obj, *spec;
    int r;

    if (nl->inflight)
        return;
    if (fatia_time_format_rfc3339(fatia_now_real_usec(), true, now, sizeof(now)) < 0)
        return;
    if (nl->last) {
        obj = json_deep_copy(nl->last);
        spec = obj ? fatia_json_object_ensure(obj, "spec") : NULL;
        if (!spec) {
            json_decref(obj);
            return;
        }
        json_object_set_new(spec, "holderIdentity", json_string(nl->name));
        json_object_set_new(spec, "leaseDurationSeconds", json_integer(l->duration_s));
        json_object_set_new(spec, "renewTime", json_string(now));
        r = fatia_client_update(l->client, obj, NULL, wrote, nl);
    } else if (nl->reread) {
        /* it may exist: read it first */
        obj = NULL;
        r = fatia_client_get(l->client, lease_kind(), LEASE_NS, nl->name, got, nl);
        if (r == 0)
            nl->inflight = true;
        return;
    } else {
        obj = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s,s:I,s:s,s:s}}", "apiVersion",
                        "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name", nl->name,
                        "namespace", LEASE_NS, "spec", "holderIdentity", nl->name,
                        "leaseDurationSeconds", (json_int_t)l->duration_s, "acquireTime", now,
                        "renewTime", now);
        r = obj ? fatia_client_create(l->client, obj, NULL, wrote, nl) : -ENOMEM;
    }
    json_decref(obj);
    if (r == 0)
        nl->inflight = true;
}

static void listed(void *arg, const struct fatia_client_result *res)
{
    struct alive *alive = arg;
    struct fatia_agent_lease *l;
    const json_t *items, *n;
    size_t i;

    if (!alive->yes) {
        fatia_free(alive);
        return;
    }
    l = alive->l;
    l->listing = false;
    if (res->status)
        return;
    items = json_object_get(res->obj, "items");
    json_array_foreach(items, i, n)
    {
        const char *name = fatia_json_str(json_object_get(n, "metadata"), "name");
        struct node_lease *nl;
        if (!name || !serves(l, name))
            continue;
        nl = fatia_strmap_get(&l->by_node, name);
        if (!nl) {
            nl = fatia_calloc(1, sizeof(*nl));
            if (!nl || !(nl->name = fatia_strdup(name)) ||
                fatia_strmap_put(&l->by_node, nl->name, nl) < 0) {
                if (nl)
                    fatia_free(nl->name);
                fatia_free(nl);
                continue;
            }
            nl->l = l;
        }
        renew(nl);
    }
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
    struct fatia_agent_lease *l = arg;

    (void)fd;
    (void)what;
    if (l->listing)
        return;
    if (fatia_client_list(l->client, fatia_kind_find("v1", "Node", NULL), NULL, NULL, listed,
                          l->alive) == 0)
        l->listing = true;
}

int fatia_agent_lease_new(struct event_base *base, struct fatia_client *client, const char *nodes,
                          int64_t duration_s, struct fatia_agent_lease **ret)
{
    struct fatia_agent_lease *l = fatia_calloc(1, sizeof(*l));
    int64_t every;
    struct timeval tv;

    if (!l)
        return -ENOMEM;
    l->base = base;
    l->client = client;
    l->duration_s = duration_s > 0 ? duration_s : 40;
    fatia_strmap_init(&l->by_node);
    /* a flag the list callback can read after the renewer is gone, and the renewer beside it */
    l->alive = fatia_calloc(1, sizeof(*l->alive));
    l->nodes = nodes ? fatia_strdup(nodes) : NULL;
    l->tick = event_new(base, -1, EV_PERSIST, tick_cb, l);
    if (!l->alive || (nodes && !l->nodes) || !l->tick) {
        fatia_agent_lease_free(l);
        return -ENOMEM;
    }
    l->alive->yes = true;
    l->alive->l = l;
    every = l->duration_s * FATIA_USEC_PER_SEC / 4;
    tv = (struct timeval){.tv_sec = every / FATIA_USEC_PER_SEC,
                          .tv_usec = every % FATIA_USEC_PER_SEC};
    event_add(l->tick, &tv);
    event_active(l->tick, EV_TIMEOUT, 0);
    *ret = l;
    return 0;
}

void fatia_agent_lease_free(struct fatia_agent_lease *l)
{
    if (!l)
        return;
    if (l->tick)
        event_free(l->tick);
    for (size_t i = 0; i < l->by_node.cap; i++) {
        struct node_lease *nl = l->by_node.slots[i].key ? l->by_node.slots[i].val : NULL;
        if (!nl)
            continue;
        if (nl->inflight) {
            nl->dead = true; /* freed by its callback */
            nl->l = NULL;
            continue;
        }
        json_decref(nl->last);
        fatia_free(nl->name);
        fatia_free(nl);
    }
    fatia_strmap_release(&l->by_node);
    if (l->alive) {
        if (l->listing)
            l->alive->yes = false; /* freed by the list callback */
        else
            fatia_free(l->alive);
    }
    fatia_free(l->nodes);
    fatia_free(l);
}
