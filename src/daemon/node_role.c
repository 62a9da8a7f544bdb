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
 *
 * Chosen over a separate binary: the agent's options (--agent KEY=VALUE), the lease flag and the
 * logging are fatiad's already, and one binary is one thing to install on every host. The
 * device controller stays in the control role for now: with the simulated inventory the
 * control plane publishes every node's Node and ResourceSlices from the NodePools; a node role
 * that publishes its own from NVML is not built (docs/fleet.md, "Not done").
 */
#include "base/compat.h"

#include "node_role.h"

#include <sys/file.h>
#include <sys/stat.h>

#include <event2/event.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/lease.h"
#include "base/error.h"
#include "base/log.h"
#include "client/client.h"
#include "remote.h"

#define GRACE_SEC 10

struct node {
    struct event_base *base;
    struct fatia_agent *agent;
    struct event *sig_term, *sig_int, *grace;
};

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
    r = fatia_agent_new(n.base, client, ao, &n.agent);
    /* the pods' API (KUBERNETES_SERVICE_HOST/PORT) is the control plane's (agent/apiproxy.c) */
    if (r == 0) {
        char shost[256];
        unsigned sport;
        r = server_addr(o->server, shost, sizeof(shost), &sport);
        if (r < 0)
            fatia_error("--server %s: no host and port in it", o->server);
        r = r ? r : fatia_agent_set_api_server(n.agent, shost, sport);
    }
    r = r ? r : fatia_agent_start(n.agent);
    r = r ? r : fatia_agent_lease_new(n.base, client, node, o->lease_s, &lease);
    if (r < 0) {
        fatia_log_errno(FATIA_LOG_ERROR, r, "cannot start the node agent");
        goto out;
    }
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
