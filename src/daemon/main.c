/*
 * daemon/main.c: fatiad, the fatia daemon: wiring only.
 *
 * Start-up, in order:
 *   1. the data directory (created 0700) and its lock (one fatiad per directory);
 *   2. on first start, an admin token in DATA/tokens (group system:masters);
 *   3. the store (DATA/store.db), then the API server over it on this thread's event loop, with
 *      the demand layer's validation checks (fatia_demand_checks: what `fatia validate` checks)
 *      and the metrics provider (the store's NOSPACE gauges, then the controllers' metrics once
 *      step 6 made them);
 *   4. the namespace "default" if missing, then the manifests of -f applied (created, or updated
 *      when they exist), every write through the API server's ordinary write path;
 *   5. listening (loopback only, unless --insecure-listen-anywhere), DATA/kubeconfig (0600)
 *      written for the admin token and the address actually bound, and one log line that says
 *      where the API is and where the kubeconfig is;
 *   6. the admission plugins (which the controller library describes) registered here with the
 *      API server before anything is applied, in every mode: the controllers' set, or without
 *      them (--no-controllers) the tenant rules alone, which then refuse a tenant's GPU pod or
 *      Job; then the controllers (src/controller/), unless --no-controllers, which start
 *      watching once it serves. The fleet file
 *      (--fleet, default data/fleets/default.yaml: NodePools and GPUSharingPolicies) is applied
 *      with the manifests, so `kubectl apply` of a policy later re-plans the GPUs;
 *   7. the node agent (src/agent/, docs/agent.md), unless --no-agent: it adopts the pods a former
 *      fatiad started, then runs the pods bound to its nodes; its log provider is registered
 *      here with the API server (`kubectl logs`).
 * `--role node` replaces all of these by node_role.c's: the agent alone, for one node, over
 * HTTPS to a control plane (the default role, "all", is the control plane and a local node).
 * The controllers and the agent link only the client interface (src/client/): this file is the
 * one place that hands them the API server's in-process client and registers what they
 * provide (docs/ARCHITECTURE.md, "How the layers link").
 * SIGTERM and SIGINT stop it cleanly: no new requests, watches ended, writes in flight committed.
 *
 * Manifests applied with -f carry kubectl's last-applied-configuration annotation (the manifest
 * as JSON with sorted keys, as kubectl writes it), so a later `kubectl apply -f` of the same
 * files sees nothing to change.
 *
 * main is these steps as functions (parse_args, open_data_dir, open_api, start_controllers,
 * start_agent, apply_at_start, then the loop and daemon_free); a new option goes into
 * parse_args and struct daemon, a new start-up step into its own function called from main.
 *
 * Threads: the main thread runs the loop; the store's writer thread does the fsyncs.
 */
#include "base/compat.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <event2/event.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/lease.h"
#include "agent/nbhome.h"
#include "apiserver/apiserver.h"
#include "apiserver/auth.h"
#include "apiserver/client.h"
#include "apiserver/nbproxy.h"
#include "apiserver/tls.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/datadir.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "base/str.h"
#include "controller/controller.h"
#include "controller/leader.h"
#include "demand/demand.h"
#include "model/doc.h"
#include "model/kind.h"
#include "model/quantity.h"
#include "node_role.h"
#include "store/store.h"

static const char usage[] =
    "Usage: fatiad --data-dir DIR [--listen HOST:PORT] [-f PATH]... [options]\n"
    "\n"
    "Serves the Kubernetes API over fatia's objects from an embedded SQLite store, or etcd.\n"
    "\n"
    "  -d, --data-dir DIR          store, tokens and kubeconfig live here (created if missing)\n"
    "  -l, --listen HOST:PORT      address to serve on (default 127.0.0.1:6443; port 0 picks a\n"
    "                              free one); non-loopback addresses need the next option\n"
    "      --no-tls                serve plain HTTP (kubectl then sends no token: for local\n"
    "                              tools and benchmarks only)\n"
    "      --insecure-listen-anywhere\n"
    "                              with --no-tls, allow a non-loopback address\n"
    "  -f, --filename PATH         apply the manifests of a file or directory at start (create\n"
    "                              or update); repeatable\n"
    "      --watch-history N       events kept for watches that resume (default 10000)\n"
    "      --sync full|normal      full (default): every commit reaches the disk before it is\n"
    "                              acknowledged; normal: it survives kill -9 of fatiad, a power\n"
    "                              loss may lose the last writes (never corrupts the store)\n"
    "      --max-body-bytes N      largest request body (default 3145728)\n"
    "      --store-reserve BYTES   disk kept in reserve for deletes when the disk fills (the\n"
    "                              NOSPACE alarm; default 64Mi, 0: none)\n"
    "      --store sqlite|etcd     the store: SQLite in DIR (default) or etcd v3 (docs/fleet.md)\n"
    "      --etcd-endpoints URLS   with --store etcd: http(s)://host:port, comma-separated\n"
    "      --etcd-cafile PATH      the CA of etcd's TLS certificates\n"
    "      --etcd-certfile PATH, --etcd-keyfile PATH\n"
    "                              a TLS client certificate for etcd\n"
    "      --etcd-prefix PREFIX    the keys' prefix (default /registry)\n"
    "      --etcd-compaction-interval DURATION\n"
    "                              compact etcd's history this often (default 5m)\n"
    "      --etcd-max-request-bytes BYTES, --etcd-max-txn-ops N\n"
    "                              etcd's own --max-request-bytes and --max-txn-ops (default\n"
    "                              1.5Mi, 128: etcd's): a group commit is cut to fit them\n"
    "      --leader-elect          run the controllers only while holding the Lease\n"
    "                              kube-system/fatia-controller-manager (docs/fleet.md)\n"
    "      --leader-elect-lease-duration, --leader-elect-renew-deadline,\n"
    "      --leader-elect-retry-period DURATION   15s, 10s, 2s (kube-controller-manager's)\n"
    "      --leader-elect-resource-namespace NS, --leader-elect-resource-name NAME\n"
    "      --etcd-replica          one of several fatiads on the etcd prefix: resourceVersion\n"
    "                              = etcd's mod_revision, per-object compare-and-swap, the\n"
    "                              others' writes from etcd's watch (docs/fleet.md)\n"
    "      --service-account-signing-key-file FILE\n"
    "                              the 32-byte key of ServiceAccount tokens (default DIR/\n"
    "                              sa-signing.key, made at first start); give every replica\n"
    "                              the same file, or one's tokens are refused by the others\n"
    "      --root-ca-file FILE     the certificates pods verify the API with (kube-root-ca.crt,\n"
    "                              as kube-controller-manager's flag; default DIR/tls.crt):\n"
    "                              every replica's, so pods can move between them\n"
    "      --max-namespace-objects N\n"
    "                              objects one namespace may hold (default 50000)\n"
    "      --idle-timeout DURATION close idle connections after this long (default 60s)\n"
    "      --watch-backlog N       drop a watcher more than N bytes behind (default 16 MiB)\n";
/* The rest (one string would pass the 4095 characters C17 promises to support). */
static const char usage_more[] =
    "      --fleet PATH            NodePools and GPUSharingPolicies to apply at start (file or\n"
    "                              directory; default data/fleets/default.yaml); repeatable\n"
    "      --inventory auto|sim|nvml\n"
    "                              GPUs: NVML when it finds one (auto, default), or the\n"
    "                              simulated fleet of the NodePools; with --role node,\n"
    "                              the GPUs it publishes in its Node (sim: none)\n"
    "      --node-name NAME        with NVML, the node's name (default: the host name)\n"
    "      --catalog DIR           the GPU catalog (default data/gpus)\n"
    "      --nvml-lib PATH         the NVML library (default libnvidia-ml.so.1)\n"
    "      --placement-policy P    binpack (default), bestfit, spread or fragmentation\n"
    "      --job-backoff DURATION  first delay before a failed Job pod is replaced (default 10s)\n"
    "      --no-controllers        serve the API only (no controllers; the tenant rules hold,\n"
    "                              and a tenant's GPU pod or Job is refused)\n"
    "      --audit-log PATH        the audit log of API writes (default DIR/audit.log; '-': none)\n"
    "      --audit-log-maxsize N   rotate the audit log past N bytes (default 100Mi)\n"
    "      --agent KEY=VALUE       a node agent option (docs/agent.md); repeatable\n"
    "      --no-agent              run no node agent: pods are never started here\n"
    "      --role all|node         all (default): the control plane and a local node; node:\n"
    "                              only this host's node agent and Lease, for the control\n"
    "                              plane at --server (docs/fleet.md, \"The node role\")\n"
    "      --server URL[,URL...]   (--role node) the control plane's https:// address; several\n"
    "                              (repeated, or a comma list): replicas of one store, the next\n"
    "                              tried when the current one stops answering\n"
    "      --token FILE            (--role node) the node's token (fatia token create --node)\n"
    "      --ca FILE               (--role node) the control plane's certificate (its\n"
    "                              DIR/tls.crt); default: the system's CAs\n"
    "      --node-listen HOST:PORT (--role node) the node's endpoint for the control plane's\n"
    "                              logs, exec, attach, port-forward (default 0.0.0.0:10250;\n"
    "                              'off': none; needs --ca; docs/fleet.md)\n"
    "      --node-address IP       (--role node) the address published for it (default: the\n"
    "                              HOST of --node-listen, or the one that reaches --server)\n"
    "      --notebook-listen HOST:PORT\n"
    "                              the workbench (Jupyter) proxy's own origin (default\n"
    "                              127.0.0.1:0, a free port; 'off': none; docs/selfservice.md)\n"
    "      --dashboard DIR         the built dashboard served at / (default: BINDIR/../dashboard\n"
    "                              when it holds index.html; 'off': none; docs/dashboard.md)\n"
    "      --cull-idle-time DURATION\n"
    "                              stop a workbench whose Jupyter was idle this long (default:\n"
    "                              never)\n"
    "      --cull-check-period DURATION\n"
    "                              how often the culler asks each Jupyter (default 1m)\n"
    "      --gpu-idle-after DURATION\n"
    "                              evict (and requeue) best-effort work whose GPUs were idle\n"
    "                              this long (default: never; docs/selfservice.md)\n"
    "      --gpu-idle-priority-below N\n"
    "                              best-effort: a workload priority below N (default 1000)\n"
    "      --node-lease-duration S the agent's node leases: valid S seconds, renewed every S/4\n"
    "                              (default 40; docs/fleet.md)\n"
    "      --node-toleration-seconds S\n"
    "                              a lost node's pods are evicted after S seconds unless they\n"
    "                              tolerate node.kubernetes.io/unreachable (default 300)\n"
    "  -v, --verbose               log every request (debug)\n"
    "  -h, --help                  this text\n";

static void print_usage(FILE *f)
{
    fputs(usage, f);
    fputs(usage_more, f);
}

struct daemon {
    struct event_base *base;
    struct fatia_store *store;
    struct fatia_apiserver *api;
    struct fatia_client *client;
    struct fatia_controllers *ctl;
    struct fatia_ctlr_leader *leader; /* --leader-elect */
    struct fatia_client *ctl_client;  /* --leader-elect: the controllers', fenced */
    struct fatia_ctlr_leader_opts leo;
    /* the node agent (agent/agent.h) */
    struct fatia_agent *agent;
    struct fatia_agent_opts agent_opts;
    bool no_agent;
    struct event *sig_term, *sig_int;
    struct event *grace_ev; /* the shutdown's deadline */
    const char *data_dir;
    char host[128];
    uint16_t port;
    char **files;
    size_t n_files;
    struct fatia_docset docs;
    size_t outstanding;
    size_t applied, failed;
    int exit_code;
    bool serving;
    bool tls;
    void *tls_ctx;
    /* from the command line */
    struct fatia_apiserver_opts ao;
    struct fatia_store_opts so;
    struct fatia_controllers_opts co;
    char **fleet; /* --fleet paths, or the default fleet */
    size_t n_fleet;
    bool controllers;                /* false: --no-controllers */
    bool leader_elect;               /* --leader-elect: controllers once elected */
    bool reserve_set;                /* --store-reserve given (else 64 MiB) */
    bool store_etcd;                 /* --store etcd (so.etcd_endpoints) */
    struct fatia_agent_lease *lease; /* the agent's node leases (agent/lease.h) */
    int64_t lease_s;                 /* --node-lease-duration */
    /* --role node (node_role.c): --server, --token, --ca */
    bool role_node;
    const char *server, *token_file, *ca_file;
    char servers[4096]; /* the --server addresses, joined with commas */
    bool help;
    char default_fleet[4096];
    char tokens[4096];        /* DATA/tokens (ao.tokens_path) */
    char root_ca[16384];      /* DATA/tls.crt's PEM: kube-root-ca.crt (co.root_ca) */
    const char *root_ca_file; /* --root-ca-file: kube-root-ca.crt's PEM instead of tls.crt */
    char audit[4096];         /* DATA/audit.log (ao.audit_path) unless --audit-log */
    const char *audit_opt;    /* --audit-log: a path, or "-" for none */
    int lock_fd;              /* DATA/fatiad.lock, held until exit */
    /* the workbench proxy (apiserver/nbproxy.h) */
    struct fatia_nbproxy *nbproxy;
    const char *nb_listen;    /* --notebook-listen; NULL: 127.0.0.1:0; "off": none */
    const char *node_listen;  /* --node-listen (--role node); NULL: 0.0.0.0:10250 */
    const char *node_address; /* --node-address (--role node); NULL: see node_role.h */
    const char *dashboard;    /* --dashboard; NULL: BINDIR/../dashboard if built; "off": none */
    char nb_origin[160];      /* the workbench proxy's origin, for the dashboard; "" when none */
};

static bool is_loopback(const char *host)
{
    return fatia_str_has_prefix(host, "127.") || !strcmp(host, "::1");
}

static int parse_listen(const char *s, char *host, size_t host_n, uint16_t *port)
{
    const char *colon;
    int p;

    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':')
            return -EINVAL;
        snprintf(host, host_n, "%.*s", (int)(close - s - 1), s + 1);
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            return -EINVAL;
        snprintf(host, host_n, "%.*s", (int)(colon - s), s);
    }
    if (!host[0] || !strcmp(host, "localhost"))
        snprintf(host, host_n, "127.0.0.1");
    if (fatia_parse_int(colon + 1, 0, 65535, &p) < 0)
        return -EINVAL;
    *port = (uint16_t)p;
    return 0;
}

static int mkdir_p(const char *path)
{
    char buf[4096];
    size_t n = strlen(path);

    if (n >= sizeof(buf))
        return -ENAMETOOLONG;
    memcpy(buf, path, n + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0700) < 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(buf, 0700) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

/* ---- kubectl's last-applied-configuration ---- */

/* JSON as Go's encoding/json writes an unstructured object: sorted keys, compact, <>& escaped,
 * a final newline. */
static char *go_json(const json_t *v)
{
    struct fatia_buf out = FATIA_BUF_INIT;
    char *raw = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(15));

    if (!raw)
        return NULL;
    for (const char *p = raw; *p; p++) {
        if (*p == '<')
            (void)fatia_buf_puts(&out, "\\u003c");
        else if (*p == '>')
            (void)fatia_buf_puts(&out, "\\u003e");
        else if (*p == '&')
            (void)fatia_buf_puts(&out, "\\u0026");
        else if (!strncmp(p, "\xe2\x80\xa8", 3)) {
            (void)fatia_buf_puts(&out, "\\u2028");
            p += 2;
        } else if (!strncmp(p, "\xe2\x80\xa9", 3)) {
            (void)fatia_buf_puts(&out, "\\u2029");
            p += 2;
        } else
            (void)fatia_buf_putc(&out, *p);
    }
    free(raw);
    (void)fatia_buf_putc(&out, '\n');
    return fatia_buf_steal(&out);
}

/* ---- start-up steps ---- */

static void start_serving(struct daemon *d);
static void stop_all(struct daemon *d);

static void apply_done(void *arg, const struct fatia_client_result *res);

struct apply_item {
    struct daemon *d;
    char what[320];
};

static void apply_one(struct daemon *d, json_t *doc, const char *file)
{
    const struct fatia_kind *k;
    const char *av = fatia_json_str(doc, "apiVersion"), *kind = fatia_json_str(doc, "kind");
    json_t *meta = json_object_get(doc, "metadata"), *ann, *obj;
    const json_t *cur;
    struct apply_item *it;
    const char *name, *ns;
    char *last;
    int r;

    k = av && kind ? fatia_kind_find(av, kind, NULL) : NULL;
    name = fatia_json_str(meta, "name");
    if (!k || !json_is_object(meta) || !name) {
        fatia_error("%s: %s%s%s: not an object fatia serves (apiVersion, kind and metadata.name "
                    "are required)",
                    file, kind ? kind : "object", name ? "/" : "", name ? name : "");
        d->failed++;
        return;
    }
    if (k->namespaced && !fatia_json_str(meta, "namespace"))
        json_object_set_new(meta, "namespace", json_string("default"));
    ns = k->namespaced ? fatia_json_str(meta, "namespace") : NULL;
    /* kubectl records the annotations member even when the manifest has none */
    if (!json_object_get(meta, "annotations"))
        json_object_set_new(meta, "annotations", json_object());
    obj = json_deep_copy(doc);
    last = go_json(doc);
    if (!obj || !last) {
        json_decref(obj);
        fatia_free(last);
        d->failed++;
        return;
    }
    ann = fatia_json_object_ensure(json_object_get(obj, "metadata"), "annotations");
    if (ann)
        json_object_set_new(ann, "kubectl.kubernetes.io/last-applied-configuration",
                            json_string(last));
    fatia_free(last);
    it = fatia_xcalloc(1, sizeof(*it));
    it->d = d;
    snprintf(it->what, sizeof(it->what), "%s %s%s%s", k->kind, ns ? ns : "", ns ? "/" : "", name);
    cur = fatia_client_cached(d->client, k, ns, name);
    if (cur) {
        json_t *m = json_object_get(obj, "metadata");
        json_object_set(m, "resourceVersion",
                        json_object_get(json_object_get(cur, "metadata"), "resourceVersion"));
        r = fatia_client_update(d->client, obj, NULL, apply_done, it);
    } else {
        r = fatia_client_create(d->client, obj, NULL, apply_done, it);
    }
    json_decref(obj);
    if (r < 0) {
        fatia_error("%s: %s: %s", file, it->what, fatia_strerror(r));
        fatia_free(it);
        d->failed++;
        return;
    }
    d->outstanding++;
}

static void apply_done(void *arg, const struct fatia_client_result *res)
{
    struct apply_item *it = arg;
    struct daemon *d = it->d;

    if (res->status) {
        fatia_error("applying %s: %s", it->what, fatia_json_str(res->status, "message"));
        d->failed++;
    } else {
        d->applied++;
    }
    fatia_free(it);
    if (--d->outstanding == 0)
        start_serving(d);
}

static int apply_files(struct daemon *d)
{
    struct fatia_diag diag;
    int r = 0;

    fatia_docset_init(&d->docs);
    fatia_diag_init(&diag);
    for (size_t i = 0; i < d->n_files; i++) {
        int rc = fatia_docset_load_path(&d->docs, d->files[i], false, &diag);
        if (rc < 0 && r == 0)
            r = rc;
    }
    if (fatia_diag_has_errors(&diag) || r < 0) {
        fatia_diag_print(&diag, stderr);
        fatia_diag_release(&diag);
        return r < 0 ? r : -FATIA_E_PARSE;
    }
    fatia_diag_release(&diag);
    for (size_t i = 0; i < d->docs.n; i++)
        apply_one(d, d->docs.docs[i].root, d->docs.docs[i].file);
    return 0;
}

static void on_signal(evutil_socket_t sig, short what, void *arg);

static void shutdown_done(void *arg)
{
    struct daemon *d = arg;

    event_base_loopexit(d->base, NULL);
}

static void agent_stopped(void *arg)
{
    struct daemon *d = arg;

    fatia_apiserver_shutdown(d->api, shutdown_done, d);
}

/* The controllers stop watching first: the API server's shutdown ends every watch. The agent
 * stops too (its watch and log streams end, its writes land; the pods keep running). */
static void stop_all(struct daemon *d)
{
    /* no new workbench connections (open ones end with the loop) */
    fatia_api_nbproxy_free(d->nbproxy);
    d->nbproxy = NULL;
    fatia_controllers_stop(d->ctl);
    if (d->agent) {
        /* no new `kubectl logs` for an agent that is ending its streams */
        fatia_apiserver_set_log_provider(d->api, NULL, NULL);
        fatia_apiserver_set_exec_provider(d->api, NULL, NULL);
        fatia_apiserver_set_portforward_provider(d->api, NULL, NULL);
        fatia_agent_stop(d->agent, agent_stopped, d);
    } else
        fatia_apiserver_shutdown(d->api, shutdown_done, d);
}

/* A clean shutdown waits for the writes in flight; whatever keeps it from finishing (a stuck
 * client, a busy subsystem), fatiad stops by this deadline all the same: what was committed is in
 * the store, and pods keep running under their shims. */
#define SHUTDOWN_GRACE_SEC 10

static void on_grace(evutil_socket_t fd, short what, void *arg)
{
    struct daemon *d = arg;

    (void)fd;
    (void)what;
    fatia_warn("the shutdown did not finish within %d s: stopping now", SHUTDOWN_GRACE_SEC);
    event_base_loopbreak(d->base);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct daemon *d = arg;
    struct timeval grace = {SHUTDOWN_GRACE_SEC, 0};

    (void)what;
    fatia_info("%s received, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    event_del(d->sig_term);
    event_del(d->sig_int);
    d->grace_ev = evtimer_new(d->base, on_grace, d);
    if (d->grace_ev)
        evtimer_add(d->grace_ev, &grace);
    stop_all(d);
}

static const char *admin_token(struct daemon *d, char *buf, size_t n)
{
    char path[4096], why[256];
    struct fatia_auth *a;
    const char *t;

    snprintf(path, sizeof(path), "%s/tokens", d->data_dir);
    if (fatia_auth_open(path, &a, why, sizeof(why)) < 0) {
        fatia_error("tokens file '%s': %s", path, why);
        return NULL;
    }
    t = fatia_auth_token_of(a, "admin");
    if (t)
        snprintf(buf, n, "%s", t);
    fatia_auth_free(a);
    return t ? buf : NULL;
}

/* Where a workbench's Jupyter listens (apiserver/nbproxy.h): its pod's own address when it runs
 * in a container here (agent/nbaddr.c), else the socket in its home in the agent's pod
 * directory (agent/nbhome.h). */
static int nb_upstream(void *arg, const char *ns, const char *name,
                       struct sockaddr_storage *ret_addr, socklen_t *ret_len, uid_t *ret_uid)
{
    struct daemon *d = arg;
    struct sockaddr_un *un = (struct sockaddr_un *)ret_addr;
    struct sockaddr_in *in = (struct sockaddr_in *)ret_addr;
    char dir[4096], ip[64];
    int port, r;

    memset(ret_addr, 0, sizeof(*ret_addr));
    if (d->agent && fatia_agent_nb_addr(d->agent, ns, name, ip, sizeof(ip), &port) == 0) {
        if (inet_pton(AF_INET, ip, &in->sin_addr) != 1)
            return -EAFNOSUPPORT;
        in->sin_family = AF_INET;
        in->sin_port = htons((uint16_t)port);
        *ret_len = sizeof(*in);
        *ret_uid = (uid_t)-1;
        return 0;
    }
    if (d->agent_opts.pod_dir) {
        if (!realpath(d->agent_opts.pod_dir, dir))
            return -errno;
    } else {
        char real[4096];
        if (!realpath(d->data_dir, real) || strlen(real) > 4000)
            return -ENOENT;
        snprintf(dir, sizeof(dir), "%.4000s/agent", real);
    }
    un->sun_family = AF_UNIX;
    r = fatia_agent_nb_upstream(dir, ns, name, un->sun_path, sizeof(un->sun_path), ret_uid);
    if (r < 0)
        return r;
    *ret_len = sizeof(*un);
    return 0;
}

/* Step 5b: the workbench proxy on its own port, when the agent runs (its homes hold the
 * sockets) and the API authenticates (its tokens open the sessions). 0 or a negative code. */
static int start_nbproxy(struct daemon *d)
{
    char host[128];
    uint16_t port;
    int r;

    if ((d->nb_listen && !strcmp(d->nb_listen, "off")) || d->no_agent || !d->ao.tokens_path)
        return 0;
    if (parse_listen(d->nb_listen ? d->nb_listen : "127.0.0.1:0", host, sizeof(host), &port) < 0 ||
        !is_loopback(host)) {
        fatia_error("--notebook-listen: expected a loopback HOST:PORT, got '%s'", d->nb_listen);
        return -EINVAL;
    }
    r = fatia_api_nbproxy_new(d->base, d->api, d->client,
                              &(struct fatia_nbproxy_opts){.tls_ctx = d->tls ? d->tls_ctx : NULL,
                                                           .upstream = nb_upstream,
                                                           .arg = d},
                              &d->nbproxy);
    if (r == 0)
        r = fatia_api_nbproxy_listen(d->nbproxy, host, port, &port);
    if (r < 0)
        return fatia_log_errno(FATIA_LOG_ERROR, r, "cannot serve the workbench proxy on %s:%u",
                               host, port);
    fatia_info("serving workbenches at %s://%s:%u/notebook/<namespace>/<name>/",
               d->tls ? "https" : "http", host, port);
    snprintf(d->nb_origin, sizeof(d->nb_origin), "%s://%s:%u", d->tls ? "https" : "http", host,
             port);
    return 0;
}

/* The dashboard's files (apiserver/dashboard.c): --dashboard DIR, else the build's
 * BINDIR/../dashboard (scripts/dashboard-build writes build/dashboard beside build/bin) when it
 * was built. 0 or a negative code (only for a --dashboard that cannot be opened). */
static int start_dashboard(struct daemon *d)
{
    char exe[4096], dir[4200], index[4300];
    const char *use = d->dashboard;
    ssize_t n;
    int r;

    if (use && !strcmp(use, "off"))
        return 0;
    if (!use) {
        n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n <= 0)
            return 0;
        exe[n] = 0;
        if (strrchr(exe, '/'))
            *strrchr(exe, '/') = 0;
        snprintf(dir, sizeof(dir), "%s/../dashboard", exe);
        snprintf(index, sizeof(index), "%s/index.html", dir);
        if (access(index, R_OK) < 0)
            return 0;
        use = dir;
    }
    r = fatia_apiserver_set_dashboard(d->api, use, d->nb_origin[0] ? d->nb_origin : NULL);
    if (r < 0)
        return fatia_log_errno(FATIA_LOG_ERROR, r, "--dashboard: cannot open '%s'", use);
    fatia_info("serving the dashboard at / from %s", use);
    return 0;
}

/* The `kubernetes` Service of `default`, as kube-apiserver keeps it (its kubernetesservice
 * controller): ClusterIP 172.30.0.1 (the range's first address, which the allocator holds back),
 * port 443 "https" to fatiad's port, no selector, and its Endpoints 127.0.0.1:<port>. The
 * ClusterIP is recorded, not routed: pods reach the API at kubernetes.default.svc through the
 * agent's proxy (agent/apiproxy.c). Made at every start; one left by a former start gets the
 * current port (a merge patch). Failures are logged: serving goes on. */
struct kube_svc {
    struct daemon *d;
    const struct fatia_kind *k;
    char name[16], patch[400];
};

static void kube_svc_done(void *arg, const struct fatia_client_result *res)
{
    struct kube_svc *ks = arg;

    if (res->code == 409 && ks->patch[0]) {
        int r = fatia_client_patch(ks->d->client, ks->k, "default", "kubernetes", NULL,
                                   FATIA_PATCH_MERGE, ks->patch, strlen(ks->patch), NULL,
                                   kube_svc_done, ks);
        ks->patch[0] = '\0';
        if (r == 0)
            return;
    } else if (res->status) {
        fatia_warn("the kubernetes %s of default: %s", ks->name,
                   fatia_json_str(res->status, "message"));
    }
    fatia_free(ks);
}

static void publish_kubernetes_service(struct daemon *d)
{
    for (int i = 0; i < 2; i++) {
        struct kube_svc *ks = fatia_calloc(1, sizeof(*ks));
        json_t *obj;
        if (!ks)
            return;
        ks->d = d;
        ks->k = fatia_kind_find("v1", i ? "Endpoints" : "Service", NULL);
        snprintf(ks->name, sizeof(ks->name), "%s", i ? "Endpoints" : "Service");
        if (i == 0) {
            obj =
                json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s,s:s}},s:{s:s,s:s,s:s,s:[{s:s,s:i,s:s,s:i}]}}",
                          "apiVersion", "v1", "kind", "Service", "metadata", "name", "kubernetes",
                          "namespace", "default", "labels", "component", "apiserver", "provider",
                          "kubernetes", "spec", "type", "ClusterIP", "clusterIP", "172.30.0.1",
                          "sessionAffinity", "None", "ports", "name", "https", "port", 443,
                          "protocol", "TCP", "targetPort", (int)d->port);
            snprintf(ks->patch, sizeof(ks->patch),
                     "{\"spec\":{\"ports\":[{\"name\":\"https\",\"port\":443,"
                     "\"protocol\":\"TCP\",\"targetPort\":%u}]}}",
                     d->port);
        } else {
            obj = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s,s:s}},s:[{s:[{s:s}],s:[{s:s,s:i,s:s}]}]}",
                            "apiVersion", "v1", "kind", "Endpoints", "metadata", "name",
                            "kubernetes", "namespace", "default", "labels",
                            "endpointslice.kubernetes.io/skip-mirror", "true", "provider",
                            "kubernetes", "subsets", "addresses", "ip", "127.0.0.1", "ports",
                            "name", "https", "port", (int)d->port, "protocol", "TCP");
            snprintf(ks->patch, sizeof(ks->patch),
                     "{\"subsets\":[{\"addresses\":[{\"ip\":\"127.0.0.1\"}],\"ports\":"
                     "[{\"name\":\"https\",\"port\":%u,\"protocol\":\"TCP\"}]}]}",
                     d->port);
        }
        if (!ks->k || !obj || fatia_client_create(d->client, obj, NULL, kube_svc_done, ks) < 0)
            fatia_free(ks);
        json_decref(obj);
    }
}

static void start_serving(struct daemon *d)
{
    char url[200], path[4096], token[300];
    char *ca = NULL;
    int r;

    if (d->serving)
        return;
    d->serving = true;
    if (d->failed) {
        fatia_error("%zu manifests could not be applied, stopping", d->failed);
        d->exit_code = 1;
        stop_all(d);
        return;
    }
    r = fatia_apiserver_listen(d->api, d->host, d->port, &d->port);
    if (r < 0) {
        fatia_error("cannot listen on %s:%u: %s%s", d->host, d->port, fatia_strerror(r),
                    r == -EADDRINUSE ? " (try --listen 127.0.0.1:0 for any free port)" : "");
        d->exit_code = 1;
        stop_all(d);
        return;
    }
    /* pods reach the API at this port through the agent (agent/apiproxy.c) */
    fatia_agent_set_api_port(d->agent, d->port);
    publish_kubernetes_service(d);
    if (strchr(d->host, ':'))
        snprintf(url, sizeof(url), "%s://[%s]:%u", d->tls ? "https" : "http", d->host, d->port);
    else
        snprintf(url, sizeof(url), "%s://%s:%u", d->tls ? "https" : "http", d->host, d->port);
    snprintf(path, sizeof(path), "%s/tls.crt", d->data_dir);
    if (d->tls && fatia_tls_ca_data(path, &ca) < 0) {
        fatia_error("cannot read '%s'", path);
        d->exit_code = 1;
        stop_all(d);
        return;
    }
    snprintf(path, sizeof(path), "%s/kubeconfig", d->data_dir);
    if (!admin_token(d, token, sizeof(token)) ||
        (r = fatia_kubeconfig_write(path, url, ca, "admin", token, "default")) < 0) {
        fatia_error("cannot write '%s'", path);
        fatia_free(ca);
        d->exit_code = 1;
        stop_all(d);
        return;
    }
    fatia_free(ca);
    if (start_nbproxy(d) < 0 || start_dashboard(d) < 0) {
        d->exit_code = 1;
        stop_all(d);
        return;
    }
    fatia_info("serving the Kubernetes API at %s (resourceVersion %" PRIu64
               ", %zu manifests applied); kubeconfig: %s",
               url, fatia_apiserver_rv(d->api), d->applied, path);
    if (d->ctl && (r = fatia_controllers_start(d->ctl)) < 0) {
        d->exit_code = 1;
        stop_all(d);
    }
}

/* GET /metrics: the store's NOSPACE gauges (the daemon holds the store), then the
 * controllers' metrics. */
static int metrics(void *arg, struct fatia_buf *out)
{
    struct daemon *d = arg;
    uint64_t have, want;
    int r;

    fatia_store_reserve(d->store, &have, &want);
    r = fatia_buf_printf(out,
                         "# HELP fatia_store_nospace_alarm 1 while the store's NOSPACE alarm is "
                         "raised (writes other than deletes answer 507), else 0\n"
                         "# TYPE fatia_store_nospace_alarm gauge\n"
                         "fatia_store_nospace_alarm %d\n"
                         "# HELP fatia_store_reserve_bytes Bytes of the store's disk reserve "
                         "allocated now (deletes under the alarm spend it)\n"
                         "# TYPE fatia_store_reserve_bytes gauge\n"
                         "fatia_store_reserve_bytes %" PRIu64 "\n"
                         "# HELP fatia_store_reserve_target_bytes The reserve's full size "
                         "(--store-reserve)\n"
                         "# TYPE fatia_store_reserve_target_bytes gauge\n"
                         "fatia_store_reserve_target_bytes %" PRIu64 "\n",
                         fatia_store_nospace(d->store) ? 1 : 0, have, want);
    if (r < 0)
        return r;
    if (d->api && (r = fatia_apiserver_metrics(d->api, out)) < 0)
        return r;
    if (d->agent && (r = fatia_agent_metrics(d->agent, out)) < 0)
        return r;
    return d->ctl ? fatia_controllers_metrics(d->ctl, out) : 0;
}

static void default_ns_done(void *arg, const struct fatia_client_result *res)
{
    struct daemon *d = arg;

    if (res->status) {
        fatia_error("creating namespace default: %s", fatia_json_str(res->status, "message"));
        d->failed++;
    }
    if (--d->outstanding == 0)
        start_serving(d);
}

/* The admission plugins, registered with the API server before anything is written (the
 * controller library describes them; only the daemon knows the API server): the controllers'
 * set, or without controllers the tenant rules alone (rules no grant lifts hold in every mode;
 * a tenant's GPU pod or Job is then refused). 0 or a negative code (logged). */
static int add_webhooks(struct daemon *d)
{
    struct fatia_admission plugins[FATIA_CONTROLLERS_N_WEBHOOKS];
    size_t n;
    int r = d->controllers ? fatia_controllers_webhooks(d->client, plugins, &n)
                           : fatia_controllers_tenant_webhooks(plugins, &n);

    for (size_t i = 0; r == 0 && i < n; i++)
        r = fatia_apiserver_add_admission(d->api, &plugins[i]);
    if (r < 0)
        fatia_log_errno(FATIA_LOG_ERROR, r, "cannot register the admission plugins");
    return r;
}

static int ensure_tokens(struct daemon *d)
{
    char path[4096], token[FATIA_TOKEN_LEN + 1];
    int r;

    snprintf(path, sizeof(path), "%s/tokens", d->data_dir);
    if (access(path, F_OK) == 0)
        return 0;
    r = fatia_token_generate(token);
    if (r == 0)
        r = fatia_tokens_append(path, token, "admin", (const char *const[]){"system:masters", NULL},
                                NULL, false);
    if (r < 0)
        fatia_log_errno(FATIA_LOG_ERROR, r, "cannot create '%s'", path);
    return r;
}

/* ---- main: the command line, then the start-up steps of the file's comment, in order ---- */

static const struct option long_opts[] = {
    {"data-dir", required_argument, NULL, 'd'},
    {"listen", required_argument, NULL, 'l'},
    {"filename", required_argument, NULL, 'f'},
    {"insecure-listen-anywhere", no_argument, NULL, 'A'},
    {"no-tls", no_argument, NULL, 'T'},
    {"watch-history", required_argument, NULL, 'W'},
    {"sync", required_argument, NULL, 'S'},
    {"max-body-bytes", required_argument, NULL, 'B'},
    {"store-reserve", required_argument, NULL, 'R'},
    {"max-namespace-objects", required_argument, NULL, 'O'},
    {"idle-timeout", required_argument, NULL, 'I'},
    {"watch-backlog", required_argument, NULL, 'K'},
    {"fleet", required_argument, NULL, 'F'},
    {"inventory", required_argument, NULL, 'N'},
    {"node-name", required_argument, NULL, 'n'},
    {"catalog", required_argument, NULL, 'C'},
    {"nvml-lib", required_argument, NULL, 'L'},
    {"placement-policy", required_argument, NULL, 'P'},
    {"job-backoff", required_argument, NULL, 'J'},
    {"no-controllers", no_argument, NULL, 'X'},
    {"audit-log", required_argument, NULL, 'U'},
    {"audit-log-maxsize", required_argument, NULL, 'Z'},
    {"agent", required_argument, NULL, 'a'},
    {"no-agent", no_argument, NULL, 'G'},
    {"notebook-listen", required_argument, NULL, 0x101},
    {"cull-idle-time", required_argument, NULL, 0x102},
    {"dashboard", required_argument, NULL, 0x106},
    {"cull-check-period", required_argument, NULL, 0x103},
    {"gpu-idle-after", required_argument, NULL, 0x104},
    {"gpu-idle-priority-below", required_argument, NULL, 0x105},
    {"store", required_argument, NULL, 1},
    {"etcd-endpoints", required_argument, NULL, 2},
    {"etcd-cafile", required_argument, NULL, 3},
    {"etcd-certfile", required_argument, NULL, 4},
    {"etcd-keyfile", required_argument, NULL, 5},
    {"etcd-prefix", required_argument, NULL, 6},
    {"etcd-compaction-interval", required_argument, NULL, 7},
    {"etcd-max-request-bytes", required_argument, NULL, 0x126},
    {"etcd-max-txn-ops", required_argument, NULL, 0x127},
    {"etcd-replica", no_argument, NULL, 0x110},
    {"leader-elect", no_argument, NULL, 0x111},
    {"leader-elect-lease-duration", required_argument, NULL, 0x112},
    {"leader-elect-renew-deadline", required_argument, NULL, 0x113},
    {"leader-elect-retry-period", required_argument, NULL, 0x114},
    {"leader-elect-resource-namespace", required_argument, NULL, 0x115},
    {"leader-elect-resource-name", required_argument, NULL, 0x116},
    {"service-account-signing-key-file", required_argument, NULL, 0x117},
    {"root-ca-file", required_argument, NULL, 0x118},
    {"node-lease-duration", required_argument, NULL, 8},
    {"node-toleration-seconds", required_argument, NULL, 9},
    {"role", required_argument, NULL, 0x120},
    {"server", required_argument, NULL, 0x121},
    {"token", required_argument, NULL, 0x122},
    {"ca", required_argument, NULL, 0x123},
    {"node-listen", required_argument, NULL, 0x124},
    {"node-address", required_argument, NULL, 0x125},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}};

/* The command line into d. 0 (with d->help for --help: the usage is printed), or -EINVAL after
 * saying what is wrong (exit status 2). */
static int parse_args(struct daemon *d, int argc, char **argv)
{
    const char *listen_at = "127.0.0.1:6443";
    bool anywhere = false;
    uint64_t u;
    int64_t dur;
    int c;

    d->files = fatia_xcalloc((size_t)argc * 2 + 2, sizeof(char *));
    d->fleet = fatia_xcalloc((size_t)argc + 1, sizeof(char *));
    while ((c = getopt_long(argc, argv, "d:l:f:vh", long_opts, NULL)) != -1) {
        switch (c) {
        case 'd':
            d->data_dir = optarg;
            break;
        case 'l':
            listen_at = optarg;
            break;
        case 'f':
            d->files[d->n_files++] = optarg;
            break;
        case 'A':
            anywhere = true;
            break;
        case 'T':
            d->tls = false;
            break;
        case 'S':
            if (strcmp(optarg, "full") && strcmp(optarg, "normal")) {
                fatia_error("--sync: '%s' is not full or normal", optarg);
                return -EINVAL;
            }
            d->so.sync_normal = !strcmp(optarg, "normal");
            break;
        case 'W':
            if (fatia_parse_u64(optarg, &u) < 0 || u == 0 || u > 10000000) {
                fprintf(stderr, "fatiad: --watch-history: expected 1..10000000\n");
                return -EINVAL;
            }
            d->ao.watch_history = (size_t)u;
            break;
        case 'B':
            if (fatia_parse_u64(optarg, &u) < 0 || u < 1024 || u > (1u << 30)) {
                fprintf(stderr, "fatiad: --max-body-bytes: expected 1024..1073741824\n");
                return -EINVAL;
            }
            d->ao.http.max_body_bytes = (size_t)u;
            break;
        case 'R':
            if (fatia_quantity_parse_bytes(optarg, &u) < 0 || (u && u < 65536)) {
                fprintf(stderr,
                        "fatiad: --store-reserve: expected 0 or bytes >= 64Ki, like 64Mi\n");
                return -EINVAL;
            }
            d->so.reserve_bytes = u;
            d->reserve_set = true;
            break;
        case 'O':
            if (fatia_parse_u64(optarg, &u) < 0 || u == 0 || u > 100000000) {
                fprintf(stderr, "fatiad: --max-namespace-objects: expected 1..100000000\n");
                return -EINVAL;
            }
            d->ao.max_namespace_objects = (size_t)u;
            break;
        case 'I':
            if (fatia_parse_duration_usec(optarg, &dur) < 0 || dur < FATIA_USEC_PER_SEC / 10) {
                fprintf(stderr, "fatiad: --idle-timeout: expected a duration like 30s\n");
                return -EINVAL;
            }
            d->ao.http.idle_timeout = dur;
            break;
        case 'K':
            if (fatia_parse_u64(optarg, &u) < 0 || u < 4096 || u > (1u << 30)) {
                fprintf(stderr, "fatiad: --watch-backlog: expected 4096..1073741824\n");
                return -EINVAL;
            }
            d->ao.http.max_stream_backlog = (size_t)u;
            break;
        case 'F':
            d->fleet[d->n_fleet++] = optarg;
            break;
        case 'N':
            if (!strcmp(optarg, "auto"))
                d->co.inventory = FATIA_INVENTORY_AUTO;
            else if (!strcmp(optarg, "sim"))
                d->co.inventory = FATIA_INVENTORY_SIM;
            else if (!strcmp(optarg, "nvml"))
                d->co.inventory = FATIA_INVENTORY_NVML;
            else {
                fprintf(stderr, "fatiad: --inventory: expected auto, sim or nvml\n");
                return -EINVAL;
            }
            break;
        case 'n':
            d->co.node_name = optarg;
            break;
        case 'C':
            d->co.catalog = optarg;
            break;
        case 'L':
            d->co.nvml_lib = optarg;
            break;
        case 'P':
            d->co.placement_policy = optarg;
            break;
        case 'J':
            if (fatia_parse_duration_usec(optarg, &dur) < 0 || dur < 0) {
                fprintf(stderr, "fatiad: --job-backoff: expected a duration like 10s\n");
                return -EINVAL;
            }
            d->co.job_backoff = dur ? dur : 1;
            break;
        case 'X':
            d->controllers = false;
            break;
        case 'U':
            d->audit_opt = optarg;
            break;
        case 'Z':
            if (fatia_quantity_parse_bytes(optarg, &u) < 0 || u == 0) {
                fprintf(stderr, "fatiad: --audit-log-maxsize: expected bytes, like 100Mi\n");
                return -EINVAL;
            }
            d->ao.audit_max_bytes = u;
            break;
        case 'a': {
            char why[200];
            if (fatia_agent_opts_set(&d->agent_opts, optarg, why, sizeof(why)) < 0) {
                fprintf(stderr, "fatiad: --agent: %s\n", why);
                return -EINVAL;
            }
            break;
        }
        case 'G':
            d->no_agent = true;
            break;
        case 0x120:
            if (strcmp(optarg, "node") && strcmp(optarg, "all")) {
                fprintf(stderr, "fatiad: --role: expected 'node' or 'all'\n");
                return -EINVAL;
            }
            d->role_node = !strcmp(optarg, "node");
            break;
        case 0x121: /* repeated: one comma list, tried in order (remote.c) */
        {
            size_t used = strlen(d->servers);
            int w = snprintf(d->servers + used, sizeof(d->servers) - used, "%s%s", used ? "," : "",
                             optarg);
            if (w < 0 || (size_t)w >= sizeof(d->servers) - used) {
                fprintf(stderr, "fatiad: --server: too many addresses\n");
                return -EINVAL;
            }
            d->server = d->servers;
        } break;
        case 0x122:
            d->token_file = optarg;
            break;
        case 0x123:
            d->ca_file = optarg;
            break;
        case 0x124:
            d->node_listen = optarg;
            break;
        case 0x125:
            d->node_address = optarg;
            break;
        case 0x101:
            d->nb_listen = optarg;
            break;
        case 0x106:
            d->dashboard = optarg;
            break;
        case 0x102:
        case 0x103:
            if (fatia_parse_duration_usec(optarg, &dur) < 0 || dur < 0) {
                fprintf(stderr, "fatiad: --%s: expected a duration (90m, 24h), got '%s'\n",
                        c == 0x102 ? "cull-idle-time" : "cull-check-period", optarg);
                return -EINVAL;
            }
            if (c == 0x102)
                d->co.cull_idle = dur;
            else
                d->co.cull_period = dur ? dur : 1;
            break;
        case 0x104:
            if (fatia_parse_duration_usec(optarg, &dur) < 0 || dur < 0) {
                fprintf(stderr, "fatiad: --gpu-idle-after: expected a duration (30m), got '%s'\n",
                        optarg);
                return -EINVAL;
            }
            d->co.gpu_idle_after = dur;
            break;
        case 0x105: {
            int64_t v;
            if (fatia_parse_i64(optarg, &v) < 0) {
                fprintf(stderr,
                        "fatiad: --gpu-idle-priority-below: expected an integer, got "
                        "'%s'\n",
                        optarg);
                return -EINVAL;
            }
            d->co.gpu_idle_priority_below = v;
            break;
        }
        case 1: /* --store */
            if (strcmp(optarg, "sqlite") && strcmp(optarg, "etcd")) {
                fprintf(stderr, "fatiad: --store: expected sqlite or etcd\n");
                return -EINVAL;
            }
            d->store_etcd = !strcmp(optarg, "etcd");
            break;
        case 2:
            d->so.etcd_endpoints = optarg;
            break;
        case 3:
            d->so.etcd_cafile = optarg;
            break;
        case 4:
            d->so.etcd_certfile = optarg;
            break;
        case 5:
            d->so.etcd_keyfile = optarg;
            break;
        case 6:
            d->so.etcd_prefix = optarg;
            break;
        case 7:
            if (fatia_parse_duration_usec(optarg, &dur) < 0 || dur < FATIA_USEC_PER_SEC) {
                fprintf(stderr, "fatiad: --etcd-compaction-interval: expected a duration >= 1s\n");
                return -EINVAL;
            }
            d->so.etcd_compact_usec = (uint64_t)dur;
            break;
        case 0x126:
            if (fatia_quantity_parse_bytes(optarg, &u) < 0 || u < 16384 || u > (1u << 31)) {
                fprintf(stderr, "fatiad: --etcd-max-request-bytes: expected bytes 16Ki..2Gi, "
                                "like etcd's --max-request-bytes\n");
                return -EINVAL;
            }
            d->so.etcd_max_request_bytes = u;
            break;
        case 0x127:
            if (fatia_parse_u64(optarg, &u) < 0 || u < 8 || u > 1000000) {
                fprintf(stderr, "fatiad: --etcd-max-txn-ops: expected 8..1000000, like etcd's "
                                "--max-txn-ops\n");
                return -EINVAL;
            }
            d->so.etcd_max_txn_ops = u;
            break;
        case 0x110:
            d->so.etcd_replica = true;
            break;
        case 0x111:
            d->leader_elect = true;
            break;
        case 0x112:
        case 0x113:
        case 0x114:
            if (fatia_parse_duration_usec(optarg, &dur) < 0 || dur <= 0) {
                fprintf(stderr, "fatiad: --leader-elect-*: expected a duration, got '%s'\n",
                        optarg);
                return -EINVAL;
            }
            *(c == 0x112   ? &d->leo.timing.lease
              : c == 0x113 ? &d->leo.timing.renew_deadline
                           : &d->leo.timing.retry) = dur;
            break;
        case 0x115:
            d->leo.ns = optarg;
            break;
        case 0x116:
            d->leo.name = optarg;
            break;
        case 0x117:
            d->ao.sa_key_path = optarg;
            break;
        case 0x118:
            d->root_ca_file = optarg;
            break;
        case 8:
            if (fatia_parse_u64(optarg, &u) < 0 || u == 0 || u > 86400) {
                fprintf(stderr, "fatiad: --node-lease-duration: expected seconds, 1..86400\n");
                return -EINVAL;
            }
            d->lease_s = (int64_t)u;
            break;
        case 9:
            if (fatia_parse_u64(optarg, &u) < 0 || u > 86400 * 365) {
                fprintf(stderr, "fatiad: --node-toleration-seconds: expected seconds\n");
                return -EINVAL;
            }
            d->co.default_toleration_s = (int64_t)u;
            d->co.default_toleration_set = true;
            break;
        case 'v':
            fatia_log_set_level(FATIA_LOG_DEBUG);
            break;
        case 'h':
            print_usage(stdout);
            d->help = true;
            return 0;
        default:
            print_usage(stderr);
            return -EINVAL;
        }
    }
    if (!d->data_dir || optind != argc) {
        print_usage(stderr);
        return -EINVAL;
    }
    if (d->store_etcd != (d->so.etcd_endpoints != NULL)) {
        fprintf(stderr, "fatiad: --store etcd and --etcd-endpoints go together\n");
        return -EINVAL;
    }
    {
        char why[200];
        if (fatia_ctlr_leader_timing_check(&d->leo.timing, why, sizeof(why)) < 0) {
            fprintf(stderr, "fatiad: %s\n", why);
            return -EINVAL;
        }
    }
    if (d->so.etcd_replica && !d->store_etcd) {
        fprintf(stderr, "fatiad: --etcd-replica needs --store etcd\n");
        return -EINVAL;
    }
    if (parse_listen(listen_at, d->host, sizeof(d->host), &d->port) < 0) {
        fprintf(stderr, "fatiad: --listen: expected HOST:PORT, got '%s'\n", listen_at);
        return -EINVAL;
    }
    if (!is_loopback(d->host) && !d->tls && !anywhere) {
        fprintf(stderr,
                "fatiad: refusing to listen on '%s' without TLS: the API and its tokens would "
                "travel in clear text. Listen on 127.0.0.1, or pass --insecure-listen-anywhere\n",
                d->host);
        return -EINVAL;
    }
    return 0;
}

/* Steps 1-2 and the certificate: the data directory, its lock (held until exit), the tokens
 * file, TLS. 0 or a negative code (logged). */
static int open_data_dir(struct daemon *d)
{
    char path[4096];
    int r = mkdir_p(d->data_dir);

    if (r < 0)
        return fatia_log_errno(FATIA_LOG_ERROR, r, "cannot create '%s'", d->data_dir);
    snprintf(path, sizeof(path), "%s/fatiad.lock", d->data_dir);
    d->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (d->lock_fd < 0 || flock(d->lock_fd, LOCK_EX | LOCK_NB) < 0) {
        fatia_error("'%s' is in use by another fatiad (lock '%s')", d->data_dir, path);
        return -EBUSY;
    }
    r = ensure_tokens(d);
    if (r < 0)
        return r;
    if (d->so.etcd_replica && !d->ao.sa_key_path)
        fatia_warn("--etcd-replica without --service-account-signing-key-file: the "
                   "ServiceAccount tokens this replica makes are refused by the others");
    if (d->tls) {
        char cert[4096], key[4096], why[300];
        snprintf(cert, sizeof(cert), "%s/tls.crt", d->data_dir);
        snprintf(key, sizeof(key), "%s/tls.key", d->data_dir);
        if (fatia_tls_ensure(cert, key, d->host, why, sizeof(why)) < 0 ||
            fatia_tls_server_ctx(cert, key, &d->tls_ctx, why, sizeof(why)) < 0) {
            fatia_error("TLS: %s", why);
            return -FATIA_E_INVALID;
        }
        d->ao.http.tls_ctx = d->tls_ctx;
        /* the CA pods trust (the kube-root-ca.crt ConfigMaps: controller/serviceaccount.c):
         * our certificate, or --root-ca-file's (every replica's, for pods that move between
         * them: agent/apiproxy.c) */
        const char *ca = d->root_ca_file ? d->root_ca_file : cert;
        FILE *f = fopen(ca, "re");
        size_t n = f ? fread(d->root_ca, 1, sizeof(d->root_ca) - 1, f) : 0;
        bool more = f && n == sizeof(d->root_ca) - 1 && fgetc(f) != EOF;
        if (f)
            fclose(f);
        if (d->root_ca_file && (!n || more || !strstr(d->root_ca, "-----BEGIN CERTIFICATE"))) {
            d->root_ca[n] = '\0';
            fatia_error("--root-ca-file '%s': %s", ca,
                        !f     ? "cannot be read"
                        : more ? "larger than 16 KiB"
                               : "no PEM certificate in it");
            return -FATIA_E_INVALID;
        }
        d->root_ca[n] = '\0';
        d->co.root_ca = n ? d->root_ca : NULL;
    }
    snprintf(d->tokens, sizeof(d->tokens), "%s/tokens", d->data_dir);
    d->ao.tokens_path = d->tokens;
    snprintf(d->audit, sizeof(d->audit), "%s/audit.log", d->data_dir);
    d->ao.audit_path = !d->audit_opt ? d->audit : strcmp(d->audit_opt, "-") ? d->audit_opt : NULL;
    return 0;
}

/* Step 3: the loop, the store, the API server over it and the in-process client that the
 * controllers and the agent get. 0 or a negative code (logged). */
static int open_api(struct daemon *d)
{
    char path[4096], store_why[600] = "";
    int r;

    d->base = event_base_new();
    if (!d->base) {
        fatia_error("cannot create the event loop");
        return -ENOMEM;
    }
    /* the log keeps twice the watch history: enough to reload it at start, bounded on disk */
    d->so.log_keep = 2 * (d->ao.watch_history ? d->ao.watch_history : 10000);
    snprintf(path, sizeof(path), "%s/store.db", d->data_dir);
    if (!d->reserve_set && !d->store_etcd)
        d->so.reserve_bytes = 64u << 20;
    d->so.why = store_why;
    d->so.why_n = sizeof(store_why);
    r = fatia_store_open(path, &d->so, &d->store);
    d->so.why = NULL; /* the message buffer lives on this frame */
    if (r < 0) {
        if (store_why[0]) {
            fatia_error("cannot open the store: %s", store_why);
            return r;
        }
        return fatia_log_errno(FATIA_LOG_ERROR, r, "cannot open the store '%s'",
                               d->store_etcd ? d->so.etcd_endpoints : path);
    }
    r = fatia_apiserver_new(d->base, d->store, &fatia_demand_checks, &d->ao, &d->api);
    if (r < 0) {
        fatia_log_errno(FATIA_LOG_ERROR, r, "cannot start the API server");
        fatia_store_close(d->store);
        return r;
    }
    /* the store's gauges always; the controllers' metrics once they run (--no-controllers:
     * none) */
    if (d->tls) {
        /* what the node proxy presents to the node roles' endpoints (their --ca) */
        char cert[4096], key[4096], why[300];
        snprintf(cert, sizeof(cert), "%s/tls.crt", d->data_dir);
        snprintf(key, sizeof(key), "%s/tls.key", d->data_dir);
        if (fatia_apiserver_set_node_client(d->api, cert, key, why, sizeof(why)) < 0)
            fatia_warn("the node proxy has no client certificate: %s", why);
    }
    fatia_apiserver_set_metrics_provider(d->api, metrics, d);
    /* the examples' catalog namespace: tenants read its HardwareProfiles (the dashboard's
     * catalog, apiserver/dashboard.c) */
    if (fatia_apiserver_set_catalog_namespace(d->api, "gpu-catalog") < 0)
        fatia_warn("the catalog namespace is not readable by tenants: out of memory");
    d->client = fatia_client_new_local(d->api, &fatia_user_system);
    /* the controllers make what the pods' kube-api-access volume needs (the default
     * ServiceAccount, kube-root-ca.crt) */
    fatia_apiserver_set_sa_automount(d->api, d->controllers);
    return 0;
}

/* --leader-elect: elected, the controllers start; deposed, they are freed with their client
 * (so nothing of theirs runs again: an answer they still await is dropped) and a fresh client
 * waits for the next term, while the API server goes on serving (controller/leader.c). */
static void leader_started(void *arg)
{
    struct daemon *d = arg;
    int r = fatia_controllers_new(d->base, d->ctl_client, &d->co, &d->ctl);

    if (r == 0 && d->serving)
        r = fatia_controllers_start(d->ctl); /* else start_serving starts them */
    if (r < 0) {
        fatia_log_errno(FATIA_LOG_ERROR, r, "cannot start the controllers");
        _exit(1);
    }
}

static void leader_stopped(void *arg)
{
    struct daemon *d = arg;

    fatia_warn("leader election lost: the controllers stop; the API goes on serving");
    fatia_controllers_free(d->ctl);
    d->ctl = NULL;
    fatia_client_free(d->ctl_client);
    d->ctl_client = fatia_client_new_local_fenced(d->api, &fatia_user_system);
    if (!d->ctl_client) {
        fatia_error("out of memory after stepping down: exiting");
        _exit(1);
    }
}

static int start_elector(struct daemon *d)
{
    int r;

    d->leo.started = leader_started;
    d->leo.stopped = leader_stopped;
    d->leo.arg = d;
    /* the controllers write through a client of their own, fenced: refused unless the
     * Lease is ours (in the cache, and in etcd on replicas) */
    d->ctl_client = fatia_client_new_local_fenced(d->api, &fatia_user_system);
    if (!d->ctl_client)
        return -ENOMEM;
    r = fatia_ctlr_leader_new(d->base, d->client, &d->leo, &d->leader);
    if (r == 0)
        r = fatia_apiserver_set_fence(d->api, d->leo.ns ? d->leo.ns : "kube-system",
                                      d->leo.name ? d->leo.name : "fatia-controller-manager",
                                      fatia_ctlr_leader_identity(d->leader));
    if (r < 0)
        return fatia_log_errno(FATIA_LOG_ERROR, r, "cannot start the leader election");
    return 0;
}

/* Step 6's first half: the fleet goes first among the files to apply (so that the manifests
 * of -f see the GPUs' resources), the controllers are made (add_webhooks ran before).
 * 0 or a negative code (logged). */
static int start_controllers(struct daemon *d)
{
    int r;

    if (!d->n_fleet) {
        fatia_data_path(d->default_fleet, sizeof(d->default_fleet), "fleets/default.yaml");
        d->fleet[d->n_fleet++] = d->default_fleet;
    }
    memmove(d->files + d->n_fleet, d->files, d->n_files * sizeof(char *));
    memcpy(d->files, d->fleet, d->n_fleet * sizeof(char *));
    d->n_files += d->n_fleet;
    if (!d->no_agent) {
        /* the culler reaches each Jupyter as the proxy does */
        d->co.nb_upstream = nb_upstream;
        d->co.nb_upstream_arg = d;
    }
    {
        /* the local-path provisioner's volumes: the agent's pod directory's pv/ */
        static char pv_dir[4200];
        char real[4096];
        if (d->agent_opts.pod_dir && realpath(d->agent_opts.pod_dir, real))
            snprintf(pv_dir, sizeof(pv_dir), "%.4000s/pv", real);
        else if (realpath(d->data_dir, real))
            snprintf(pv_dir, sizeof(pv_dir), "%.4000s/agent/pv", real);
        d->co.local_path_dir = pv_dir[0] ? pv_dir : NULL;
    }
    if (d->leader_elect)
        return start_elector(d); /* the controllers come once elected */
    r = fatia_controllers_new(d->base, d->client, &d->co, &d->ctl);
    if (r < 0)
        return fatia_log_errno(FATIA_LOG_ERROR, r, "cannot start the controllers");
    return 0;
}

/* Step 7: the node agent, and its log provider registered with the API server. 0 or a
 * negative code (logged). */
static int start_agent(struct daemon *d)
{
    int r;

    d->agent_opts.data_dir = d->data_dir;
    r = fatia_agent_new(d->base, d->client, &d->agent_opts, &d->agent);
    if (r == 0) {
        fatia_apiserver_set_log_provider(d->api, fatia_agent_logs, d->agent);
        fatia_apiserver_set_exec_provider(d->api, fatia_agent_exec, d->agent);
        fatia_apiserver_set_portforward_provider(d->api, fatia_agent_portforward, d->agent);
        r = fatia_agent_start(d->agent);
    }
    if (r == 0)
        r = fatia_agent_lease_new(d->base, d->client, d->agent_opts.nodes, d->lease_s, &d->lease);
    if (r < 0)
        fatia_error("cannot start the node agent (--no-agent runs without one)");
    return r;
}

/* Step 4: the namespace "default", then -f; serving starts (step 5) once they are committed. */
static void apply_at_start(struct daemon *d)
{
    d->outstanding = 1; /* held until everything is queued */
    if (!fatia_client_cached(d->client, fatia_kind_by_resource("", "namespaces"), NULL,
                             "default")) {
        json_t *ns = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                               "metadata", "name", "default");
        if (fatia_client_create(d->client, ns, NULL, default_ns_done, d) == 0)
            d->outstanding++;
        json_decref(ns);
    }
    if (d->n_files && apply_files(d) < 0) {
        d->failed++;
    }
    if (--d->outstanding == 0)
        start_serving(d);
}

static void daemon_free(struct daemon *d)
{
    fatia_api_nbproxy_free(d->nbproxy);
    fatia_ctlr_leader_free(d->leader);
    fatia_controllers_free(d->ctl);
    fatia_client_free(d->ctl_client);
    fatia_agent_lease_free(d->lease);
    fatia_agent_free(d->agent);
    fatia_client_free(d->client);
    fatia_apiserver_free(d->api);
    fatia_store_close(d->store);
    event_free(d->sig_term);
    event_free(d->sig_int);
    if (d->grace_ev)
        event_free(d->grace_ev);
    event_base_free(d->base);
    fatia_docset_release(&d->docs);
    fatia_free(d->files);
    fatia_free(d->fleet);
    fatia_tls_ctx_free(d->tls_ctx);
    close(d->lock_fd);
}

int main(int argc, char **argv)
{
    struct daemon d = {.exit_code = 0,
                       .tls = true,
                       .controllers = true,
                       .lock_fd = -1,
                       .leo.timing = {.lease = 15 * FATIA_USEC_PER_SEC,
                                      .renew_deadline = 10 * FATIA_USEC_PER_SEC,
                                      .retry = 2 * FATIA_USEC_PER_SEC}};

    umask(077);
    fatia_log_set_ident("fatiad");
    fatia_log_set_timestamps(true);
    fatia_log_set_level(FATIA_LOG_INFO);
    if (fatia_log_level_from_env() < 0)
        fprintf(stderr, "fatiad: unknown FATIA_LOG level, ignoring\n");
    if (parse_args(&d, argc, argv) < 0)
        return 2;
    if (d.help)
        return 0;
    if (d.role_node) {
        if (!d.server || !d.token_file) {
            fprintf(stderr, "fatiad: --role node needs --server URL and --token FILE\n");
            return 2;
        }
        char nl_host[256];
        uint16_t nl_port = 10250;
        bool nl_off = d.node_listen && !strcmp(d.node_listen, "off");
        snprintf(nl_host, sizeof(nl_host), "0.0.0.0");
        if (d.node_listen && !nl_off &&
            parse_listen(d.node_listen, nl_host, sizeof(nl_host), &nl_port) < 0) {
            fprintf(stderr, "fatiad: --node-listen: expected HOST:PORT or off, got '%s'\n",
                    d.node_listen);
            return 2;
        }
        return fatia_node_role_run(
            &(struct fatia_node_role_opts){.data_dir = d.data_dir,
                                           .listen_host = nl_off ? NULL : nl_host,
                                           .listen_port = nl_port,
                                           .listen_default = !d.node_listen,
                                           .address = d.node_address,
                                           .server = d.server,
                                           .token_file = d.token_file,
                                           .ca = d.ca_file,
                                           .node_name = d.co.node_name,
                                           .lease_s = d.lease_s,
                                           .inventory =
                                               d.co.inventory == FATIA_INVENTORY_SIM    ? "sim"
                                               : d.co.inventory == FATIA_INVENTORY_NVML ? "nvml"
                                                                                        : "auto",
                                           .nvml_lib = d.co.nvml_lib,
                                           .catalog = d.co.catalog},
            &d.agent_opts);
    }
    if (open_data_dir(&d) < 0)
        return 1;
    signal(SIGPIPE, SIG_IGN);
    if (open_api(&d) < 0)
        return 1;
    if (d.client && add_webhooks(&d) < 0)
        return 1;
    if (d.controllers && d.client && start_controllers(&d) < 0)
        return 1;
    d.sig_term = evsignal_new(d.base, SIGTERM, on_signal, &d);
    d.sig_int = evsignal_new(d.base, SIGINT, on_signal, &d);
    if (!d.client || !d.sig_term || !d.sig_int) {
        fatia_error("out of memory");
        return 1;
    }
    event_add(d.sig_term, NULL);
    event_add(d.sig_int, NULL);
    if (!d.no_agent && start_agent(&d) < 0)
        return 1;
    apply_at_start(&d);

    event_base_dispatch(d.base);

    daemon_free(&d);
    if (d.exit_code == 0)
        fatia_info("stopped");
    return d.exit_code;
}
