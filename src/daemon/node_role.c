/*
 * daemon/node_role.c: `fatiad --role node`: this host's node agent and its Lease, speaking to a
 * control plane's API over HTTPS with a node token (docs/fleet.md, "The node role").
 *
 * Model. The same binary as the control role, another start-up: no store, no API server, no
 * controllers; a remote client (remote.c) in place of the in-process one, handed to the agent and
 * the lease renewer unchanged, for one node (--node-name, default the host name, as the
 * kubelet's). The control plane holds the node to its own objects (apiserver/nodeauth.c): the
 * token is `fatia token create --node NAME`, and its user must name the node served. The data
 * directory holds the agent's state (DATA/agent: the shims it adopts after a restart) and the
 * lock that keeps a second fatiad off it. The pods' ServiceAccount tokens are TokenRequests
 * through the same client (remote.c), and their API (KUBERNETES_SERVICE_HOST/PORT) is the
 * --server's, through the agent's proxy on each pod network's gateway (agent/apiproxy.c).
 * --server may list several control replicas (URL,URL...): the remote client fails over among
 * them (remote.c), and so does a pod on a pod network (agent/apiproxy.c); a host-network pod
 * and the address this host publishes use the first. A token valid on every replica is a
 * recorded one (`fatia token create --node NAME --record`, apiserver/nodetoken.c).
 *
 * The node's endpoint (--node-listen, default 0.0.0.0:10250, the kubelet's port): the logs,
 * exec, attach and port-forward streams of its pods for the control plane's node proxy, served
 * by apiserver/nodeserve.c over the agent's view of its pods, to the holder of the --ca
 * certificate only (docs/fleet.md, "Streams of a node role's pods"). Where it serves is
 * published as the kubelet does, in its Node's status: an InternalIP address and
 * daemonEndpoints.kubeletEndpoint.Port, patched (merge, status subresource) whenever the Node
 * lacks them, and the SHA-256 of its serving certificate in the annotation
 * fatia.dev/serving-cert-sha256 (a metadata patch: node-restriction lets no status write carry
 * one), which the control plane's proxy pins; checked every PUBLISH_SEC against the client's cache of Nodes (the control
 * plane's device controller makes the Node and keeps the addresses it does not own).
 *
 * Chosen over a separate binary: the agent's options (--agent KEY=VALUE), the lease flag and the
 * logging are fatiad's already, and one binary is one thing to install on every host.
 *
 * The host's GPUs (docs/fleet.md, "A node role's own GPUs"): read with the supply layer's NVML
 * backend (--inventory auto: when NVML loads and finds a GPU; nvml: it must; sim: never) at
 * start and every INVENTORY_SEC, and published as compact JSON (supply/inventory_json.c) in the
 * Node's annotation fatia.dev/gpu-inventory, a metadata patch whenever the Node's value differs
 * from the last read (so a value someone else wrote is put back within PUBLISH_SEC). The control
 * plane's device controller plans this node from it (controller/device_inventory.c), so its
 * ResourceSlices carry the host's UUIDs. Chosen over running the device controller here (the
 * node writing its own ResourceSlices, as the NVIDIA DRA driver's kubelet plugin does): the
 * plan of a node depends on the fleet's GPUSharingPolicies and on the pods placement holds, both
 * the control plane's, and one planner keeps one place where a re-plan is checked against
 * running pods; the node publishes facts, the control plane decides.
 */
#include "base/compat.h"

#include "node_role.h"

#include <arpa/inet.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <event2/event.h>
#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/lease.h"
#include "apiserver/nodeserve.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "client/client.h"
#include "model/kinds/kinds.h"
#include "remote.h"
#include "supply/catalog.h"
#include "supply/inventory.h"

#define GRACE_SEC     10
#define PUBLISH_SEC   2
#define INVENTORY_SEC 30 /* NVML read again: a GPU gone or MIG changed is published */

struct node {
    struct event_base *base;
    struct fatia_agent *agent;
    struct event *sig_term, *sig_int, *grace;
    struct fatia_client *client;
    struct fatia_api_node_server *srv;
    struct event *publish;
    const char *name;
    char address[64];
    char pin[65]; /* the serving certificate's SHA-256 */
    uint16_t port;
    bool publishing; /* a patch in flight */
    /* the GPU inventory (fatia.dev/gpu-inventory): NVML read every INVENTORY_SEC, published
     * whenever the Node's annotation differs */
    const struct fatia_node_role_opts *o;
    struct event *inv_publish;
    char *inv_text; /* compact JSON, or NULL before a read found GPUs */
    int inv_ticks;
    bool inv_publishing;
};

/* The first address of a --server list (URL[,URL...]), into buf. */
static const char *first_server(const char *list, char *buf, size_t n)
{
    snprintf(buf, n, "%.*s", (int)strcspn(list, ","), list);
    return buf;
}

/* The source address this host uses toward the control plane's host (a UDP socket connected,
 * nothing sent). 0 or -errno. */
static int address_toward(const char *server, char *buf, size_t n)
{
    const char *h = strstr(server, "://");
    char host[256], port[16] = "443";
    struct addrinfo hints = {.ai_socktype = SOCK_DGRAM}, *ai = NULL;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    size_t hl;
    int fd, rc = 0;

    h = h ? h + 3 : server;
    if (*h == '[') {
        hl = strcspn(++h, "]");
        snprintf(host, sizeof(host), "%.*s", (int)hl, h);
        h += hl + (h[hl] == ']');
    } else {
        hl = strcspn(h, ":/");
        snprintf(host, sizeof(host), "%.*s", (int)hl, h);
        h += hl;
    }
    if (*h == ':')
        snprintf(port, sizeof(port), "%.*s", (int)strcspn(h + 1, "/"), h + 1);
    if (getaddrinfo(host, port, &hints, &ai) || !ai)
        return -EHOSTUNREACH;
    fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 ||
        getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
        rc = -errno;
    else if (!inet_ntop(ss.ss_family,
                        ss.ss_family == AF_INET6 ? (void *)&((struct sockaddr_in6 *)&ss)->sin6_addr
                                                 : (void *)&((struct sockaddr_in *)&ss)->sin_addr,
                        buf, (socklen_t)n))
        rc = -errno;
    if (fd >= 0)
        close(fd);
    freeaddrinfo(ai);
    return rc;
}

static bool pin_published(const struct node *n, const json_t *node)
{
    const char *v =
        fatia_json_str(json_object_get(json_object_get(node, "metadata"), "annotations"),
                       FATIA_NODE_CERT_ANNOTATION);

    return v && !strcmp(v, n->pin);
}

static bool published(const struct node *n, const json_t *node)
{
    const json_t *st = json_object_get(node, "status"), *a;
    int64_t port = 0;
    size_t i;

    if (!fatia_json_int(json_object_get(json_object_get(st, "daemonEndpoints"), "kubeletEndpoint"),
                        "Port", &port) ||
        port != n->port)
        return false;
    json_array_foreach(json_object_get(st, "addresses"), i, a)
    {
        const char *t = fatia_json_str(a, "type"), *ad = fatia_json_str(a, "address");
        if (t && ad && !strcmp(t, "InternalIP") && !strcmp(ad, n->address))
            return true;
    }
    return false;
}

static void publish_done(void *arg, const struct fatia_client_result *res)
{
    struct node *n = arg;

    n->publishing = false;
    if (res->code >= 300)
        fatia_warn("node %s: cannot publish its endpoint %s:%u: %s", n->name, n->address, n->port,
                   fatia_json_str(res->status, "message") ? fatia_json_str(res->status, "message")
                                                          : "error");
    else
        fatia_info("node %s: its endpoint %s:%u published in its Node's status", n->name,
                   n->address, n->port);
}

/* The Node's addresses (its other types kept) and daemonEndpoints, patched when they differ. */
static void on_publish(evutil_socket_t fd, short what, void *arg)
{
    struct node *n = arg;
    const json_t *node = fatia_client_cached(n->client, &fatia_kind_node, NULL, n->name), *a;
    json_t *addrs, *patch;
    char *body;
    size_t i;

    (void)fd;
    (void)what;
    if (!node || n->publishing)
        return;
    if (!pin_published(n, node)) {
        /* metadata: a status write carries no annotation (node-restriction) */
        patch = json_pack("{s:{s:{s:s}}}", "metadata", "annotations", FATIA_NODE_CERT_ANNOTATION,
                          n->pin);
        body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
        json_decref(patch);
        if (body &&
            fatia_client_patch(n->client, &fatia_kind_node, NULL, n->name, NULL, FATIA_PATCH_MERGE,
                               body, strlen(body), NULL, publish_done, n) == 0)
            n->publishing = true;
        free(body);
        return;
    }
    if (published(n, node))
        return;
    addrs = json_array();
    json_array_append_new(addrs,
                          json_pack("{s:s,s:s}", "type", "InternalIP", "address", n->address));
    json_array_foreach(json_object_get(json_object_get(node, "status"), "addresses"), i, a)
    {
        const char *t = fatia_json_str(a, "type");
        if (t && strcmp(t, "InternalIP"))
            json_array_append(addrs, (json_t *)a);
    }
    patch = json_pack("{s:{s:o,s:{s:{s:i}}}}", "status", "addresses", addrs, "daemonEndpoints",
                      "kubeletEndpoint", "Port", (int)n->port);
    body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    json_decref(patch);
    if (body &&
        fatia_client_patch(n->client, &fatia_kind_node, NULL, n->name, "status", FATIA_PATCH_MERGE,
                           body, strlen(body), NULL, publish_done, n) == 0)
        n->publishing = true;
    free(body);
}

/* This host's GPUs as the annotation's text (compact, keys sorted, so equal reads compare
 * equal) into *out (NULL when NVML finds none). 0, or <0 with why (NVML does not load). */
static int inventory_read(const struct node *n, char **out, char *why, size_t why_n)
{
    const struct fatia_node_role_opts *o = n->o;
    struct fatia_nvml_opts no = {o->nvml_lib, n->name, NULL};
    struct fatia_catalog cat;
    struct fatia_inventory inv;
    struct fatia_diag diag;
    char path[1024];
    json_t *j = NULL;
    int r;

    *out = NULL;
    fatia_catalog_init(&cat);
    fatia_inventory_init(&inv);
    fatia_diag_init(&diag);
    fatia_catalog_default_path(o->catalog, path, sizeof(path));
    r = fatia_catalog_load(&cat, path, &diag);
    if (r < 0 || fatia_diag_has_errors(&diag)) {
        snprintf(why, why_n, "the GPU catalog '%.200s' does not load", path);
        r = r < 0 ? r : -FATIA_E_INVALID;
    } else if ((r = fatia_inventory_nvml(&inv, &no, &cat, &diag)) < 0) {
        snprintf(why, why_n, "%s", diag.n ? diag.v[diag.n - 1].msg : "NVML does not answer");
    } else if (inv.n_nodes == 1 && inv.nodes[0].n_gpus) {
        j = fatia_inventory_node_json(&inv.nodes[0]);
        *out = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        r = *out ? 0 : -ENOMEM;
    }
    json_decref(j);
    fatia_inventory_release(&inv);
    fatia_diag_release(&diag);
    fatia_catalog_release(&cat);
    return r;
}

static void inv_done(void *arg, const struct fatia_client_result *res)
{
    struct node *n = arg;

    n->inv_publishing = false;
    if (res->code >= 300)
        fatia_warn("node %s: cannot publish its GPU inventory: %s", n->name,
                   fatia_json_str(res->status, "message") ? fatia_json_str(res->status, "message")
                                                          : "error");
    else
        fatia_info("node %s: its GPU inventory published in its Node (%s)", n->name,
                   FATIA_GPU_INVENTORY_ANNOTATION);
}

/* Reads NVML every INVENTORY_SEC; patches the Node's annotation (metadata: node-restriction
 * holds the patch to this node's own Node) whenever it differs from the last read. */
static void on_inv_publish(evutil_socket_t fd, short what, void *arg)
{
    struct node *n = arg;
    const json_t *node;
    const char *have;
    json_t *patch;
    char *body, *text, why[300];

    (void)fd;
    (void)what;
    if (++n->inv_ticks >= INVENTORY_SEC / PUBLISH_SEC) {
        n->inv_ticks = 0;
        if (inventory_read(n, &text, why, sizeof(why)) == 0 && text &&
            (!n->inv_text || strcmp(text, n->inv_text))) {
            free(n->inv_text);
            n->inv_text = text;
        } else {
            free(text);
        }
    }
    node = fatia_client_cached(n->client, &fatia_kind_node, NULL, n->name);
    if (!node || !n->inv_text || n->inv_publishing)
        return;
    have = fatia_json_str(json_object_get(json_object_get(node, "metadata"), "annotations"),
                          FATIA_GPU_INVENTORY_ANNOTATION);
    if (have && !strcmp(have, n->inv_text))
        return;
    patch = json_pack("{s:{s:{s:s}}}", "metadata", "annotations", FATIA_GPU_INVENTORY_ANNOTATION,
                      n->inv_text);
    body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    json_decref(patch);
    if (body && fatia_client_patch(n->client, &fatia_kind_node, NULL, n->name, NULL,
                                   FATIA_PATCH_MERGE, body, strlen(body), NULL, inv_done, n) == 0)
        n->inv_publishing = true;
    free(body);
}

/* The GPU inventory's first read and its publisher; 0 or -1 after a logged error. */
static int publish_inventory(struct node *n)
{
    const char *mode = n->o->inventory ? n->o->inventory : "auto";
    char why[300] = "";
    int r;

    if (!strcmp(mode, "sim")) {
        fatia_info("node %s: --inventory sim: no GPU inventory published (the control plane "
                   "plans the NodePool's simulated GPUs)",
                   n->name);
        return 0;
    }
    r = inventory_read(n, &n->inv_text, why, sizeof(why));
    if (r < 0 || !n->inv_text) {
        if (!strcmp(mode, "nvml")) {
            fatia_error("node %s: --inventory nvml: %s", n->name,
                        r < 0 ? why : "NVML finds no GPU");
            return -1;
        }
        fatia_info("node %s: no GPU inventory published (%s): the control plane plans the "
                   "NodePool's simulated GPUs",
                   n->name, r < 0 ? why : "NVML finds no GPU");
        return 0;
    }
    n->inv_publish = event_new(n->base, -1, EV_PERSIST, on_inv_publish, n);
    if (!n->inv_publish || event_add(n->inv_publish, &(struct timeval){PUBLISH_SEC, 0}) < 0)
        return -1;
    fatia_info("node %s: publishes its GPU inventory from NVML", n->name);
    return 0;
}

/* The endpoint and its publisher; 0 or -1 after a logged error. */
static int serve_endpoint(struct node *n, const struct fatia_node_role_opts *o)
{
    char cert[4096], key[4096], why[300] = "", first[1024];
    const char *h = o->listen_host;
    int r;

    if (!h)
        return 0;
    if (!o->ca) {
        fatia_warn("node %s: no --ca: its endpoint (logs, exec, attach, port-forward through the "
                   "control plane) is not served: it accepts only the certificate --ca names",
                   n->name);
        return 0;
    }
    if (o->address)
        snprintf(n->address, sizeof(n->address), "%s", o->address);
    else if (*h && strcmp(h, "0.0.0.0") && strcmp(h, "::"))
        snprintf(n->address, sizeof(n->address), "%s", h);
    else if ((r = address_toward(first_server(o->server, first, sizeof(first)), n->address,
                                 sizeof(n->address))) < 0) {
        fatia_log_errno(FATIA_LOG_ERROR, r,
                        "--node-address: none given, and no local address reaches %s", o->server);
        return -1;
    }
    snprintf(cert, sizeof(cert), "%s/node-tls.crt", o->data_dir);
    snprintf(key, sizeof(key), "%s/node-tls.key", o->data_dir);
    struct fatia_api_node_server_opts so = {.host = h,
                                            .port = o->listen_port,
                                            .cert = cert,
                                            .key = key,
                                            .peers = o->ca,
                                            .streams = {n->base, fatia_agent_logs, n->agent,
                                                        fatia_agent_exec, n->agent,
                                                        fatia_agent_portforward, n->agent},
                                            .pod = fatia_agent_pod_object,
                                            .pod_arg = n->agent};
    r = fatia_api_node_server_new(n->base, &so, &n->srv, &n->port, why, sizeof(why));
    if (r == -EADDRINUSE && o->listen_default) {
        /* another node role on this host has the kubelet's port: its Node says where */
        fatia_warn("node %s: port %u is taken: its endpoint listens on a free port", n->name,
                   o->listen_port);
        so.port = 0;
        r = fatia_api_node_server_new(n->base, &so, &n->srv, &n->port, why, sizeof(why));
    }
    if (r < 0) {
        fatia_error("--node-listen %s:%u: %s", h, o->listen_port, why);
        return -1;
    }
    fatia_api_node_server_cert_sha256(n->srv, n->pin);
    n->publish = event_new(n->base, -1, EV_PERSIST, on_publish, n);
    if (!n->publish || event_add(n->publish, &(struct timeval){PUBLISH_SEC, 0}) < 0)
        return -1;
    fatia_info("node %s: its endpoint serves the control plane on %s:%u (published as %s)", n->name,
               h, n->port, n->address);
    return 0;
}

static void stopped(void *arg)
{
    struct node *n = arg;

    event_base_loopexit(n->base, NULL);
}

static void on_grace(evutil_socket_t fd, short what, void *arg)
{
    struct node *n = arg;

    (void)fd;
    (void)what;
    fatia_warn("the shutdown did not finish within %d s: stopping now", GRACE_SEC);
    event_base_loopbreak(n->base);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct node *n = arg;
    struct timeval tv = {GRACE_SEC, 0};

    (void)what;
    fatia_info("%s received, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    event_del(n->sig_term);
    event_del(n->sig_int);
    n->grace = evtimer_new(n->base, on_grace, n);
    if (n->grace)
        evtimer_add(n->grace, &tv);
    fatia_api_node_server_free(n->srv); /* no stream starts once the agent stops */
    n->srv = NULL;
    fatia_agent_stop(n->agent, stopped, n);
}

/* The token: the file's first word (a token file, as `fatia token create` prints the token's
 * line's first field). */
static int read_token(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "re");
    size_t len;

    if (!f)
        return -errno;
    if (!fgets(buf, (int)n, f)) {
        fclose(f);
        return -FATIA_E_INVALID;
    }
    fclose(f);
    len = strcspn(buf, " \t\r\n");
    buf[len] = '\0';
    return len ? 0 : -FATIA_E_INVALID;
}

/* The host and port of an https://HOST[:PORT][/...] URL ([V6]:PORT too; default 443). 0, or
 * -FATIA_E_INVALID. */
static int server_addr(const char *url, char *host, size_t n, unsigned *port)
{
    const char *h = url + strlen("https://"), *end;
    size_t len;

    *port = 443;
    if (*h == '[') {
        end = strchr(++h, ']');
        if (!end)
            return -FATIA_E_INVALID;
        len = (size_t)(end - h);
        end++;
    } else {
        len = strcspn(h, ":/");
        end = h + len;
    }
    if (!len || len >= n)
        return -FATIA_E_INVALID;
    memcpy(host, h, len);
    host[len] = '\0';
    if (*end == ':') {
        char *e;
        unsigned long p = strtoul(end + 1, &e, 10);
        if (e == end + 1 || p == 0 || p > 65535 || (*e && *e != '/'))
            return -FATIA_E_INVALID;
        *port = (unsigned)p;
    } else if (*end && *end != '/') {
        return -FATIA_E_INVALID;
    }
    return 0;
}

int fatia_node_role_run(const struct fatia_node_role_opts *o, struct fatia_agent_opts *ao)
{
    struct node n = {0};
    struct fatia_client *client = NULL;
    struct fatia_agent_lease *lease = NULL;
    char path[4096], token[512], why[300] = "", host[256];
    const char *node = o->node_name;
    int lock_fd = -1, r, rc = 1;

    if (!node) {
        if (gethostname(host, sizeof(host)) < 0)
            snprintf(host, sizeof(host), "localhost");
        host[sizeof(host) - 1] = '\0';
        node = host;
    }
    if (mkdir(o->data_dir, 0700) < 0 && errno != EEXIST) {
        fatia_log_errno(FATIA_LOG_ERROR, -errno, "cannot create '%s'", o->data_dir);
        return 1;
    }
    snprintf(path, sizeof(path), "%s/fatiad.lock", o->data_dir);
    lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock_fd < 0 || flock(lock_fd, LOCK_EX | LOCK_NB) < 0) {
        fatia_error("'%s' is in use by another fatiad (lock '%s')", o->data_dir, path);
        goto out;
    }
    r = read_token(o->token_file, token, sizeof(token));
    if (r < 0) {
        fatia_log_errno(FATIA_LOG_ERROR, r, "--token '%s': no token read", o->token_file);
        goto out;
    }
    n.base = event_base_new();
    if (!n.base)
        goto out;
    r = fatia_remote_client_new(
        n.base,
        &(struct fatia_remote_opts){.server = o->server, .token = token, .ca = o->ca, .node = node},
        &client, why, sizeof(why));
    if (r < 0) {
        fatia_error("--server %s: %s", o->server ? o->server : "(none)", why);
        goto out;
    }
    ao->data_dir = o->data_dir;
    ao->nodes = node;
    if (!ao->inventory_wait_set) /* its ResourceSlices come on a watch of their own */
        ao->inventory_wait_ms = 30 * 1000;
    r = fatia_agent_new(n.base, client, ao, &n.agent);
    /* the pods' API (KUBERNETES_SERVICE_HOST/PORT) is the control plane's (agent/apiproxy.c) */
    for (const char *at = o->server; r == 0 && at && *at;) { /* every replica, in order */
        char shost[256], one[1024];
        unsigned sport;
        size_t len = strcspn(at, ",");
        snprintf(one, sizeof(one), "%.*s", (int)len, at);
        at += len + (at[len] == ',');
        if (!*one)
            continue;
        r = server_addr(one, shost, sizeof(shost), &sport);
        if (r < 0)
            fatia_error("--server %s: no host and port in it", one);
        r = r ? r : fatia_agent_set_api_server(n.agent, shost, sport);
    }
    r = r ? r : fatia_agent_start(n.agent);
    r = r ? r : fatia_agent_lease_new(n.base, client, node, o->lease_s, &lease);
    if (r < 0) {
        fatia_log_errno(FATIA_LOG_ERROR, r, "cannot start the node agent");
        goto out;
    }
    n.client = client;
    n.name = node;
    n.o = o;
    if (serve_endpoint(&n, o) < 0 || publish_inventory(&n) < 0)
        goto out;
    signal(SIGPIPE, SIG_IGN);
    n.sig_term = evsignal_new(n.base, SIGTERM, on_signal, &n);
    n.sig_int = evsignal_new(n.base, SIGINT, on_signal, &n);
    if (!n.sig_term || !n.sig_int)
        goto out;
    event_add(n.sig_term, NULL);
    event_add(n.sig_int, NULL);
    fatia_info("node %s: running its pods for the control plane at %s", node, o->server);
    event_base_dispatch(n.base);
    fatia_info("stopped");
    rc = 0;
out:
    fatia_api_node_server_free(n.srv);
    if (n.publish)
        event_free(n.publish);
    if (n.inv_publish)
        event_free(n.inv_publish);
    free(n.inv_text);
    fatia_agent_lease_free(lease);
    fatia_agent_free(n.agent);
    fatia_client_free(client);
    if (n.sig_term)
        event_free(n.sig_term);
    if (n.sig_int)
        event_free(n.sig_int);
    if (n.grace)
        event_free(n.grace);
    if (n.base)
        event_base_free(n.base);
    if (lock_fd >= 0)
        close(lock_fd);
    return rc;
}
