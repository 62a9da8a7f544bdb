/*
 * store/etcd.c: the store on etcd v3 (see etcd.h; the client is etcd_client.c).
 *
 * Model: the contract of store.h, kept: the API server owns the state, hands out
 * resourceVersions, and submits batches that must commit atomically and in order; at start it
 * loads every object and the newest log rows. On etcd:
 *
 *     <prefix>/<resource>/[<namespace>/]<name>   the object's JSON (storage version), laid out as
 *                                                kube-apiserver does (layout_of below)
 *     <prefix>_fatia/rv                          the highest committed resourceVersion (decimal)
 *     <prefix>_fatia/log/<rv, 20 digits>         one batch's log rows, keyed by its first rv
 *
 * (prefix: "/registry" by default; "<prefix>_fatia" sorts outside "<prefix>/", so a scan of the
 * objects never sees it.) Each batch is one etcd transaction: compare the rv key's mod_revision
 * with the one this process last wrote (0 = absent, for a new store), then every object put or
 * delete (the last op per key: etcd refuses a key twice in one transaction), the batch's log
 * key, the rv key, and now and then the deletion of log keys older than log_keep rows. The
 * compare is the fence: a second fatiad writing the same prefix makes the other one's next
 * commit fail (-ESTALE, nothing written) instead of interleaving two histories.
 *
 * Unsure outcomes: a transaction that was sent but got no answer (timeout, a member dying) may
 * or may not have been applied. The rv key says which: its value is our batch's last rv if it
 * was. If not, a no-op transaction on the rv key (same compare) moves its mod_revision, so the
 * lost request can never apply later; then the batch is reported failed. If etcd cannot be
 * reached to find out within about 30 s, the process exits (status 75): the API server's cache
 * would otherwise go on from a state the store may not have, and a restart reloads the truth.
 *
 * Log rows: "<rv> <type> <group|-> <kind> <ns|-> <name> <len>\n<json>\n", one after another in
 * the batch's value (names, kinds and groups never hold spaces; an empty group or namespace is
 * "-"). One key per batch keeps the transaction at n + 2 operations.
 *
 * Compaction: etcd keeps every revision until compacted. Every compact_usec (5 min default,
 * kube-apiserver's --etcd-compaction-interval) the writer compacts etcd to the revision it saw
 * at the previous round, so about one interval of etcd history stays; fatia's own watch
 * history is the log (see above), so compaction never costs a client a 410 it would not get on
 * SQLite.
 *
 * Limits: etcd refuses a request over --max-request-bytes (1.5 MiB default) and a transaction
 * of more than --max-txn-ops operations in a list (128 default); fatiad is told them
 * (opts->etcd_max_request_bytes, etcd_max_txn_ops; 0: those defaults), as it cannot ask etcd.
 * A group commit is cut to fit: the writer (store.c) puts as many whole batches in one
 * transaction as fatia_store_etcd_fill_add allows, and the API server does the same with its
 * API transactions inside a batch (apiserver/txn.c), so nothing is ever split inside one API
 * transaction. The measure is an upper bound of the protobuf request etcd counts: every op's
 * key (bounded from its names) and JSON, twice in single-writer mode (the object and its log
 * row), three keys in replica mode (compare, put, failure range), 48 bytes of framing each, and
 * 4 KiB for the commit's own keys; every op counts as an operation (merged keys only make
 * fewer), plus 3 for the log key, the rv key and the prune (replica: the marker, a fence).
 * Each transaction of a cut commit is a whole one as above: its own compare of the rv key (or
 * the marker and every object's revision), its own log key, rv key (or marker) write and
 * unsure-outcome resolution, committed one after another in order. A batch too large alone
 * goes alone and etcd refuses it (-EFBIG, 413 naming the object); should etcd refuse a commit
 * of several batches as too large (fatiad told limits above etcd's), the writer sends them
 * again one at a time, so again only one too large fails. Objects themselves stop at 1.5 MiB
 * (FATIA_STORE_MAX_OBJECT), but a commit holds an object twice: a write of an object over half
 * of --max-request-bytes fails, so etcd is best run with --max-request-bytes 10 MiB (and
 * fatiad told so).
 *
 * Replicas (opts->etcd_replica): several fatiads on one prefix, each with its own cache. Then
 * resourceVersion is etcd's mod_revision, as kube-apiserver has it: a batch commits at one
 * etcd revision and the store sets every op's rv to it (the API server rewrites its versions).
 * There is no rv key and no log: each transaction compares the mod_revision of every object it
 * writes (the first op on each names the revision its writer built on, 0 = absent) instead of
 * a store-wide fence, so replicas writing different objects never refuse each other, and one
 * that lost a race gets -FATIA_E_CONFLICT with nothing written. Each transaction also writes
 * this process's marker key, <prefix>_fatia/writer/<host>-<pid>-<start usec> (its value a
 * sequence number), compared too: it resolves unsure outcomes (the marker holds our number if
 * the request applied; otherwise a "fence-N" write moves its mod_revision so the lost request
 * never applies), and it tells our own revisions apart in the watch. A watch on the whole
 * prefix from the revision loaded + 1 (etcd_watch.c) brings every change; a revision with our
 * marker is handed out as a bare revision (type 0: the API server publishes its own batch
 * then, in revision order with the others), the others as changes with their JSON (a delete's
 * last state from prev_kv). History starts at the revision loaded (a watch from before gets
 * 410, as from a fresh kube-apiserver's cache). Markers of crashed processes stay behind (one
 * small key each). A replica and a single-writer fatiad must not share a prefix.
 *
 * Rejected: storing the log as one key per op (n more operations and a
 * second copy of every object in the request); deriving the log from etcd's history (lost at
 * compaction, and a delete's last state is not the DELETED row the API server wrote).
 */
#include "base/compat.h"

#include "store/etcd.h"

#include <ctype.h>
#include <inttypes.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "base/map.h"
#include "base/str.h"
#include "base/vec.h"
#include "model/kind.h"
#include "store/etcd_client.h"
#include "store/etcd_watch.h"

#define PAGE            500
#define PRUNE_EVERY     1024
#define UNSURE_TRIES    30
#define COMMIT_TRIES    10
#define EXIT_UNSURE     75
#define DEFAULT_COMPACT (5 * 60 * FATIA_USEC_PER_SEC)
#define DEFAULT_MAX_REQ (1536 * 1024) /* etcd's --max-request-bytes default */
#define DEFAULT_MAX_OPS 128           /* etcd's --max-txn-ops default */
#define FIXED_BYTES     4096 /* a commit's own keys: rv, log, prune range, marker, compares */
#define FIXED_OPS       3    /* the log key, the rv key, the prune; replica: the marker, a fence */
#define OP_BYTES        48   /* protobuf framing of one op (tags, lengths) and a log row's header */

/* Where a kind lives: "<prefix>/<path>/" (path as kube-apiserver names it). */
struct layout {
    const struct fatia_kind *kind;
    char path[200];
};

struct fatia_store_etcd {
    struct fatia_store_etcdc *c;
    char prefix[256];
    char rv_key[300];
    char log_prefix[300];
    uint64_t rv_mod;   /* mod_revision of the rv key as we last wrote or read it; 0: absent */
    uint64_t revision; /* etcd's revision at our last commit */
    uint64_t log_keep;
    uint64_t pruned_at;
    fatia_usec_t compact_usec, compact_last;
    uint64_t compact_to; /* the revision seen at the previous compaction round */
    struct layout *layouts;
    size_t n_layouts;
    struct fatia_buf req, tmp, val;
    uint64_t fill_bytes, fill_ops; /* what one transaction may hold ("Limits") */

    /* replica mode ("Replicas" above); the writer thread's: */
    bool replica;
    char marker_key[400];
    uint64_t marker_mod; /* the marker's mod_revision as we last wrote it; 0: absent */
    uint64_t marker_seq;
    char hold_path[256]; /* FATIA_TEST_ETCD_HOLD: commits wait while this file exists */
    /* the loop thread's: */
    struct fatia_store_etcdw *watch;
    struct fatia_store_etcdw_event *ahead; /* the first event of the next revision */
    struct fatia_store_etcdw_event *group; /* the rest of the revision being handed out */
    struct fatia_store_etcdw_event *cur;   /* the one handed out last */
    json_t *cur_tree;
    char cur_buf[600], cur_group[256], cur_kind[256];
};

static void say(char *why, size_t n, const char *fmt, ...) FATIA_PRINTF(3, 4);

static void say(char *why, size_t n, const char *fmt, ...)
{
    va_list ap;

    if (!why || !n)
        return;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
}

/* Groups whose resources kube-apiserver stores under the bare resource name. */
static bool bare_group(const char *g)
{
    static const char *const bare[] = {
        "",
        "apps",
        "batch",
        "autoscaling",
        "policy",
        "coordination.k8s.io",
        "rbac.authorization.k8s.io",
        "scheduling.k8s.io",
        "storage.k8s.io",
        "resource.k8s.io",
        "networking.k8s.io",
        "node.k8s.io",
        "discovery.k8s.io",
        "events.k8s.io",
        "admissionregistration.k8s.io",
        "certificates.k8s.io",
        "flowcontrol.apiserver.k8s.io",
        NULL,
    };

    for (size_t i = 0; bare[i]; i++)
        if (!strcmp(g, bare[i]))
            return true;
    return false;
}

/* kube-apiserver's path for a kind (test/integration/etcd/data.go): legacy names for nodes,
 * services, endpoints and replication controllers; bare resources for built-in groups; the
 * group first for everything else (CRDs, APIServices, fatia's and Kueue's kinds). */
static void layout_path(const struct fatia_kind *k, char *buf, size_t n)
{
    if (!k->group[0] && !strcmp(k->plural, "nodes"))
        snprintf(buf, n, "minions");
    else if (!k->group[0] && !strcmp(k->plural, "services"))
        snprintf(buf, n, "services/specs");
    else if (!k->group[0] && !strcmp(k->plural, "endpoints"))
        snprintf(buf, n, "services/endpoints");
    else if (!k->group[0] && !strcmp(k->plural, "replicationcontrollers"))
        snprintf(buf, n, "controllers");
    else if (bare_group(k->group))
        snprintf(buf, n, "%s", k->plural);
    else
        snprintf(buf, n, "%s/%s", k->group, k->plural);
}

static int build_layouts(struct fatia_store_etcd *e)
{
    size_t n = 0;

    while (fatia_kinds[n])
        n++;
    e->layouts = fatia_calloc(n ? n : 1, sizeof(*e->layouts));
    if (!e->layouts)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        struct layout *l = &e->layouts[e->n_layouts];
        l->kind = fatia_kinds[i];
        layout_path(l->kind, l->path, sizeof(l->path));
        /* two kinds on one path (core and events.k8s.io Events): the later one takes its
         * group's path, so that every key names one kind */
        for (size_t j = 0; j < e->n_layouts; j++)
            if (!strcmp(e->layouts[j].path, l->path)) {
                snprintf(l->path, sizeof(l->path), "%s/%s", l->kind->group, l->kind->plural);
                break;
            }
        e->n_layouts++;
    }
    return 0;
}

static const struct layout *layout_of(const struct fatia_store_etcd *e, const char *group,
                                      const char *kind)
{
    for (size_t i = 0; i < e->n_layouts; i++)
        if (!strcmp(e->layouts[i].kind->kind, kind) && !strcmp(e->layouts[i].kind->group, group))
            return &e->layouts[i];
    return NULL;
}

/* The key of an object. A kind this binary does not list (a custom resource's dynamic kind)
 * gets "<group>/<kind in lower case>s", kube-apiserver's path when the plural is the regular
 * one; loading takes such an object's kind from its JSON (load_each). */
static int object_key(const struct fatia_store_etcd *e, const struct fatia_store_op *op,
                      struct fatia_buf *out)
{
    const struct layout *l = layout_of(e, op->group, op->kind);
    char path[300];

    if (l) {
        snprintf(path, sizeof(path), "%s", l->path);
    } else {
        size_t n = (size_t)snprintf(path, sizeof(path), "%s/%s", op->group[0] ? op->group : "core",
                                    op->kind);
        for (size_t i = strlen(op->group[0] ? op->group : "core") + 1; i < n && i < sizeof(path);
             i++)
            path[i] = (char)tolower((unsigned char)path[i]);
        if (n + 1 < sizeof(path))
            snprintf(path + n, sizeof(path) - n, "s");
    }
    if (op->ns[0])
        return fatia_buf_printf(out, "%s/%s/%s/%s", e->prefix, path, op->ns, op->name);
    return fatia_buf_printf(out, "%s/%s/%s", e->prefix, path, op->name);
}

/* The kind, namespace and name a key names (ns and name point into key, in buf). */
static const struct layout *parse_key(const struct fatia_store_etcd *e, const char *key, char *buf,
                                      size_t n, const char **ret_ns, const char **ret_name)
{
    size_t plen = strlen(e->prefix);

    if (strncmp(key, e->prefix, plen) || key[plen] != '/')
        return NULL;
    key += plen + 1;
    for (size_t i = 0; i < e->n_layouts; i++) {
        const struct layout *l = &e->layouts[i];
        size_t ll = strlen(l->path);
        const char *rest, *slash;
        if (strncmp(key, l->path, ll) || key[ll] != '/')
            continue;
        rest = key + ll + 1;
        slash = strchr(rest, '/');
        if (l->kind->namespaced != (slash != NULL) || (slash && strchr(slash + 1, '/')))
            continue;
        snprintf(buf, n, "%s", rest);
        if (slash) {
            buf[slash - rest] = '\0';
            *ret_ns = buf;
            *ret_name = buf + (slash - rest) + 1;
        } else {
            *ret_ns = "";
            *ret_name = buf;
        }
        if (!**ret_name || (slash && !**ret_ns))
            continue;
        return l;
    }
    return NULL;
}

/* ---- requests ---- */

static int call(struct fatia_store_etcd *e, const char *path, json_t **ret, bool *unsure)
{
    bool u = false;
    int r = fatia_store_etcdc_call(e->c, path, e->req.p, e->req.len, ret, &u);

    if (unsure)
        *unsure = u;
    return r;
}

static int put_b64_field(struct fatia_buf *b, const char *name, const void *p, size_t n)
{
    int r = fatia_buf_printf(b, "\"%s\":\"", name);

    if (r < 0)
        return r;
    r = fatia_store_etcdc_b64(b, p, n);
    if (r < 0)
        return r;
    return fatia_buf_putc(b, '"');
}

/* The key just past every key that starts with prefix (etcd's range_end for a prefix). */
static int put_prefix_end(struct fatia_buf *b, const char *prefix)
{
    char end[512];
    size_t n = strlen(prefix);

    if (!n || n >= sizeof(end))
        return -EINVAL;
    memcpy(end, prefix, n);
    end[n - 1]++;
    return put_b64_field(b, "range_end", end, n);
}

/* Reads the rv key (at revision rev, 0 = now): *value (0 if absent), *mod, *header_rev. */
static int read_rv(struct fatia_store_etcd *e, uint64_t rev, uint64_t *value, uint64_t *mod,
                   uint64_t *header_rev)
{
    json_t *reply = NULL, *kvs, *kv;
    int r;

    fatia_buf_reset(&e->req);
    r = fatia_buf_putc(&e->req, '{');
    if (r == 0)
        r = put_b64_field(&e->req, "key", e->rv_key, strlen(e->rv_key));
    if (r == 0 && rev)
        r = fatia_buf_printf(&e->req, ",\"revision\":\"%" PRIu64 "\"", rev);
    if (r == 0)
        r = fatia_buf_putc(&e->req, '}');
    if (r < 0)
        return r;
    r = call(e, "/v3/kv/range", &reply, NULL);
    if (r < 0)
        return r;
    *value = *mod = 0;
    if (header_rev)
        *header_rev = fatia_store_etcdc_u64(json_object_get(reply, "header"), "revision");
    kvs = json_object_get(reply, "kvs");
    kv = json_array_get(kvs, 0);
    if (kv) {
        const char *v = fatia_json_str(kv, "value");
        fatia_buf_reset(&e->val);
        if (!v || fatia_store_etcdc_unb64(&e->val, v) < 0 || fatia_parse_u64(e->val.p, value) < 0) {
            json_decref(reply);
            fatia_error("store: etcd key %s does not hold a resourceVersion", e->rv_key);
            return -FATIA_E_CORRUPT;
        }
        *mod = fatia_store_etcdc_u64(kv, "mod_revision");
    }
    json_decref(reply);
    return 0;
}

int fatia_store_etcd_check(struct fatia_store_etcd *e)
{
    json_t *reply = NULL;
    int r;

    fatia_buf_reset(&e->req);
    r = fatia_buf_puts(&e->req, "{}");
    if (r < 0)
        return r;
    r = call(e, "/v3/maintenance/status", &reply, NULL);
    if (r < 0)
        return r;
    r = json_array_size(json_object_get(reply, "errors")) ? -EIO : 0;
    json_decref(reply);
    return r;
}

/* Replica mode: the marker key this process writes in every commit, and the watch on the
 * whole prefix from the revision loaded on. */
static int replica_open(struct fatia_store_etcd *e, const struct fatia_store_opts *o,
                        uint64_t *ret_rv, char *why, size_t why_n)
{
    struct fatia_store_etcdw_opts wo = {
        .endpoints = o->etcd_endpoints,
        .cafile = o->etcd_cafile,
        .certfile = o->etcd_certfile,
        .keyfile = o->etcd_keyfile,
        .key = e->prefix, /* "<prefix>/..." and "<prefix>_fatia/..." */
        .prefix = true,
        .start_revision = e->revision + 1,
        .prev_kv = true,
    };
    char host[128] = "";

    e->replica = true;
    /* tests: hold the writer so that writes queue up in one group commit (tests/cli) */
    if (getenv("FATIA_TEST_ETCD_HOLD"))
        snprintf(e->hold_path, sizeof(e->hold_path), "%s", getenv("FATIA_TEST_ETCD_HOLD"));
    if (gethostname(host, sizeof(host) - 1) < 0)
        snprintf(host, sizeof(host), "host");
    snprintf(e->marker_key, sizeof(e->marker_key), "%.255s_fatia/writer/%.64s-%d-%" PRIu64,
             e->prefix, host, (int)getpid(), (uint64_t)fatia_now_real_usec());
    *ret_rv = e->revision;
    return fatia_store_etcdw_start(&wo, &e->watch, why, why_n);
}

int fatia_store_etcd_open(const struct fatia_store_opts *o, struct fatia_store_etcd **ret,
                          uint64_t *ret_rv, char *why, size_t why_n)
{
    struct fatia_store_etcdc_opts co = {
        .endpoints = o->etcd_endpoints,
        .cafile = o->etcd_cafile,
        .certfile = o->etcd_certfile,
        .keyfile = o->etcd_keyfile,
    };
    struct fatia_store_etcd *e = fatia_calloc(1, sizeof(*e));
    const char *prefix = o->etcd_prefix && o->etcd_prefix[0] ? o->etcd_prefix : "/registry";
    uint64_t mod = 0;
    int r;

    if (!e)
        return -ENOMEM;
    fatia_buf_init(&e->req, 0);
    fatia_buf_init(&e->tmp, 0);
    fatia_buf_init(&e->val, 0);
    if (prefix[0] != '/' || prefix[strlen(prefix) - 1] == '/' ||
        strlen(prefix) >= sizeof(e->prefix)) {
        say(why, why_n, "--etcd-prefix '%s': must start with '/' and not end with one", prefix);
        r = -EINVAL;
        goto out_free;
    }
    snprintf(e->prefix, sizeof(e->prefix), "%s", prefix);
    snprintf(e->rv_key, sizeof(e->rv_key), "%s_fatia/rv", prefix);
    snprintf(e->log_prefix, sizeof(e->log_prefix), "%s_fatia/log/", prefix);
    e->log_keep = o->log_keep ? o->log_keep : 100000;
    e->compact_usec = o->etcd_compact_usec ? o->etcd_compact_usec : DEFAULT_COMPACT;
    e->compact_last = fatia_now_mono_usec();
    {
        uint64_t mb = o->etcd_max_request_bytes ? o->etcd_max_request_bytes : DEFAULT_MAX_REQ;
        uint64_t mo = o->etcd_max_txn_ops ? o->etcd_max_txn_ops : DEFAULT_MAX_OPS;
        e->fill_bytes = mb > 2 * FIXED_BYTES ? mb - FIXED_BYTES : mb / 2;
        e->fill_ops = mo > FIXED_OPS + 1 ? mo - FIXED_OPS : 1;
    }
    r = build_layouts(e);
    if (r < 0)
        goto out_free;
    r = fatia_store_etcdc_new(&co, &e->c, why, why_n);
    if (r < 0)
        goto out_free;
    r = read_rv(e, 0, ret_rv, &mod, &e->revision);
    if (r < 0) {
        say(why, why_n, "etcd at %s: cannot read %s: %s", o->etcd_endpoints, e->rv_key,
            fatia_strerror(r));
        goto out_free;
    }
    e->rv_mod = mod;
    e->pruned_at = *ret_rv;
    e->compact_to = e->revision;
    if (o->etcd_replica) {
        r = replica_open(e, o, ret_rv, why, why_n);
        if (r < 0)
            goto out_free;
    }
    *ret = e;
    return 0;

out_free:
    fatia_store_etcd_close(e);
    return r;
}

void fatia_store_etcd_close(struct fatia_store_etcd *e)
{
    if (!e)
        return;
    fatia_store_etcdw_stop(e->watch);
    fatia_store_etcdw_event_free(e->ahead);
    fatia_store_etcdw_event_free(e->cur);
    while (e->group) {
        struct fatia_store_etcdw_event *next = e->group->next;
        fatia_store_etcdw_event_free(e->group);
        e->group = next;
    }
    json_decref(e->cur_tree);
    fatia_store_etcdc_free(e->c);
    fatia_free(e->layouts);
    fatia_buf_release(&e->req);
    fatia_buf_release(&e->tmp);
    fatia_buf_release(&e->val);
    fatia_free(e);
}

/* ---- reading ---- */

/* Calls page(arg, key, value, kv) for every key from start up to end (exclusive), at revision
 * rev, PAGE keys per request. */
static int scan(struct fatia_store_etcd *e, const char *prefix, uint64_t rev,
                int (*each)(struct fatia_store_etcd *e, const char *key, struct fatia_buf *val,
                            const json_t *kv, void *arg),
                void *arg)
{
    struct fatia_buf from = FATIA_BUF_INIT, key = FATIA_BUF_INIT;
    json_t *reply = NULL;
    bool more = true;
    int r;

    r = fatia_buf_puts(&from, prefix);
    while (r == 0 && more) {
        json_t *kvs, *kv;
        size_t i;
        fatia_buf_reset(&e->req);
        r = fatia_buf_putc(&e->req, '{');
        if (r == 0)
            r = put_b64_field(&e->req, "key", from.p, from.len);
        if (r == 0)
            r = fatia_buf_putc(&e->req, ',');
        if (r == 0)
            r = put_prefix_end(&e->req, prefix);
        if (r == 0)
            r = fatia_buf_printf(&e->req, ",\"limit\":\"%d\",\"revision\":\"%" PRIu64 "\"}", PAGE,
                                 rev);
        if (r < 0)
            break;
        r = call(e, "/v3/kv/range", &reply, NULL);
        if (r < 0)
            break;
        more = json_is_true(json_object_get(reply, "more"));
        kvs = json_object_get(reply, "kvs");
        json_array_foreach(kvs, i, kv)
        {
            const char *k = fatia_json_str(kv, "key");
            const char *v = fatia_json_str(kv, "value");
            fatia_buf_reset(&key);
            fatia_buf_reset(&e->val);
            if (!k || fatia_store_etcdc_unb64(&key, k) < 0 ||
                fatia_store_etcdc_unb64(&e->val, v ? v : "") < 0) {
                r = -FATIA_E_CORRUPT;
                break;
            }
            r = each(e, key.p, &e->val, kv, arg);
            if (r < 0)
                break;
        }
        if (r == 0 && more) {
            /* the next page starts just after the last key */
            fatia_buf_reset(&from);
            r = fatia_buf_append(&from, key.p, key.len);
            if (r == 0)
                r = fatia_buf_putc(&from, '\0');
        }
        json_decref(reply);
        reply = NULL;
    }
    fatia_buf_release(&from);
    fatia_buf_release(&key);
    return r;
}

struct load_arg {
    int (*cb)(void *arg, const struct fatia_store_row *row);
    void *arg;
    uint64_t after;
    size_t foreign;
};

static int load_each(struct fatia_store_etcd *e, const char *key, struct fatia_buf *val,
                     const json_t *kv, void *arg)
{
    struct load_arg *la = arg;
    struct fatia_store_row row = {0};
    char buf[600];
    const struct layout *l = parse_key(e, key, buf, sizeof(buf), &row.ns, &row.name);

    json_t *tree = NULL;
    char group[256] = "", kind[256] = "";
    int r;

    if (l) {
        row.group = l->kind->group;
        row.kind = l->kind->kind;
    } else {
        /* not a listed kind's path: a dynamic kind's object names its kind itself */
        const char *api, *k, *slash;
        tree = json_loadb(val->p, val->len, 0, NULL);
        api = fatia_json_str(tree, "apiVersion");
        k = fatia_json_str(tree, "kind");
        row.ns = fatia_json_str(json_object_get(tree, "metadata"), "namespace");
        row.name = fatia_json_str(json_object_get(tree, "metadata"), "name");
        if (!api || !k || !row.name) {
            json_decref(tree);
            la->foreign++; /* another program's key */
            return 0;
        }
        slash = strchr(api, '/');
        if (slash)
            snprintf(group, sizeof(group), "%.*s", (int)(slash - api), api);
        snprintf(kind, sizeof(kind), "%s", k);
        snprintf(buf, sizeof(buf), "%s", row.name);
        row.name = buf;
        if (!row.ns)
            row.ns = "";
        row.group = group;
        row.kind = kind;
    }
    row.json = val->p;
    row.json_len = val->len;
    if (e->replica) {
        /* replica mode: the key's mod_revision is the resourceVersion */
        row.rv = fatia_store_etcdc_u64(kv, "mod_revision");
        if (!row.rv) {
            json_decref(tree);
            return -FATIA_E_CORRUPT;
        }
        r = la->cb(la->arg, &row);
        json_decref(tree);
        return r;
    }
    /* the object's resourceVersion, as the API server wrote it into metadata */
    if (!tree)
        tree = json_loadb(val->p, val->len, 0, NULL);
    {
        const char *rvs = fatia_json_str(json_object_get(tree, "metadata"), "resourceVersion");
        if (!rvs || fatia_parse_u64(rvs, &row.rv) < 0 || !row.rv) {
            json_decref(tree);
            fatia_error("store: etcd key %s: no metadata.resourceVersion", key);
            return -FATIA_E_CORRUPT;
        }
    }
    r = la->cb(la->arg, &row);
    json_decref(tree);
    return r;
}

int fatia_store_etcd_load(struct fatia_store_etcd *e,
                          int (*cb)(void *arg, const struct fatia_store_row *row), void *arg)
{
    struct load_arg la = {.cb = cb, .arg = arg};
    char prefix[300];
    int r;

    snprintf(prefix, sizeof(prefix), "%s/", e->prefix);
    r = scan(e, prefix, e->revision, load_each, &la);
    if (r == 0 && la.foreign)
        fatia_warn("store: %zu keys under %s name no kind fatia serves, ignoring", la.foreign,
                   prefix);
    return r;
}

/* Parses one log row at *p (end: the value's end); fills row, advances *p. */
static int parse_log_row(char **p, char *end, struct fatia_store_row *row)
{
    char *nl = memchr(*p, '\n', (size_t)(end - *p));
    char *f[7];
    size_t nf = 0;
    uint64_t rv, len;
    int type;

    if (!nl)
        return -FATIA_E_CORRUPT;
    *nl = '\0';
    for (char *s = *p, *save = NULL, *t; nf < 7 && (t = strtok_r(s, " ", &save)); s = NULL)
        f[nf++] = t;
    if (nf != 7 || fatia_parse_u64(f[0], &rv) < 0 || fatia_parse_int(f[1], 1, 3, &type) < 0 ||
        fatia_parse_u64(f[6], &len) < 0 || len > (uint64_t)(end - nl - 1) - 1)
        return -FATIA_E_CORRUPT;
    row->rv = rv;
    row->type = (enum fatia_store_event)type;
    row->group = strcmp(f[2], "-") ? f[2] : "";
    row->kind = f[3];
    row->ns = strcmp(f[4], "-") ? f[4] : "";
    row->name = f[5];
    row->uid = "";
    row->json = nl + 1;
    row->json_len = (size_t)len;
    nl[1 + len] = '\0'; /* the '\n' after the JSON */
    *p = nl + 2 + len;
    return 0;
}

static int log_each(struct fatia_store_etcd *e, const char *key, struct fatia_buf *val,
                    const json_t *kv, void *arg)
{
    struct load_arg *la = arg;
    char *p = val->p, *end = val->p + val->len;

    (void)kv;
    while (p < end) {
        struct fatia_store_row row;
        int r = parse_log_row(&p, end, &row);
        if (r < 0) {
            fatia_error("store: etcd log key %s is not a fatia log batch", key);
            return r;
        }
        if (row.rv <= la->after)
            continue;
        r = la->cb(la->arg, &row);
        if (r < 0)
            return r;
    }
    (void)e;
    return 0;
}

int fatia_store_etcd_load_log(struct fatia_store_etcd *e, uint64_t after,
                              int (*cb)(void *arg, const struct fatia_store_row *row), void *arg)
{
    struct load_arg la = {.cb = cb, .arg = arg, .after = after};

    if (e->replica)
        return 0; /* no log: history starts at the revision loaded */
    return scan(e, e->log_prefix, e->revision, log_each, &la);
}

static int first_each(struct fatia_store_etcd *e, const char *key, struct fatia_buf *val,
                      const json_t *kv, void *arg)
{
    uint64_t *first = arg;

    (void)kv;
    (void)val;
    if (!*first && fatia_parse_u64(key + strlen(e->log_prefix), first) < 0)
        *first = 0;
    return -ECANCELED; /* one is enough */
}

uint64_t fatia_store_etcd_log_first(struct fatia_store_etcd *e)
{
    uint64_t first = 0;

    if (e->replica)
        return 0;
    (void)scan(e, e->log_prefix, e->revision, first_each, &first);
    return first;
}

/* ---- writing ---- */

/* An upper bound of an op's key length: the layout's path is at most the group, the kind and a
 * few letters ("minions", "services/endpoints", a plural). */
static uint64_t key_bound(const struct fatia_store_etcd *e, const struct fatia_store_op *op)
{
    return strlen(e->prefix) + strlen(op->group) + strlen(op->kind) + 16 + strlen(op->ns) +
           strlen(op->name) + 3;
}

bool fatia_store_etcd_fill_add(const struct fatia_store_etcd *e, struct fatia_store_fill *f,
                               const struct fatia_store_op *ops, size_t n)
{
    uint64_t bytes = 0;

    for (size_t i = 0; i < n; i++) {
        const struct fatia_store_op *op = &ops[i];
        uint64_t k = key_bound(e, op), j = op->json ? op->json_len : 0;
        if (e->replica) /* a compare, a put and the failure branch's range */
            bytes += 3 * (k + OP_BYTES) + j;
        else /* the put or delete, and the log row (the same JSON, and the names) */
            bytes += 2 * (k + OP_BYTES) + 2 * j;
    }
    /* ops: one each, not merged by key (fewer, never more, reach etcd) */
    if ((f->bytes || f->ops) && (f->bytes + bytes > e->fill_bytes || f->ops + n > e->fill_ops))
        return false;
    f->bytes += bytes;
    f->ops += n;
    return true;
}

static int put_op_json(struct fatia_buf *b, bool *comma, const char *what)
{
    int r = 0;

    if (*comma)
        r = fatia_buf_putc(b, ',');
    *comma = true;
    if (r == 0)
        r = fatia_buf_printf(b, "{\"%s\":{", what);
    return r;
}

static int put_put(struct fatia_buf *b, bool *comma, const char *key, size_t key_len,
                   const void *val, size_t val_len)
{
    int r = put_op_json(b, comma, "request_put");

    if (r == 0)
        r = put_b64_field(b, "key", key, key_len);
    if (r == 0)
        r = fatia_buf_putc(b, ',');
    if (r == 0)
        r = put_b64_field(b, "value", val, val_len);
    if (r == 0)
        r = fatia_buf_puts(b, "}}");
    return r;
}

static int put_delete(struct fatia_buf *b, bool *comma, const char *key, size_t key_len,
                      const char *end, size_t end_len)
{
    int r = put_op_json(b, comma, "request_delete_range");

    if (r == 0)
        r = put_b64_field(b, "key", key, key_len);
    if (r == 0 && end) {
        r = fatia_buf_putc(b, ',');
        if (r == 0)
            r = put_b64_field(b, "range_end", end, end_len);
    }
    if (r == 0)
        r = fatia_buf_puts(b, "}}");
    return r;
}

static int put_compare(struct fatia_buf *b, const struct fatia_store_etcd *e)
{
    int r = fatia_buf_puts(b, "{\"compare\":[{\"target\":\"MOD\",\"result\":\"EQUAL\",");

    if (r == 0)
        r = put_b64_field(b, "key", e->rv_key, strlen(e->rv_key));
    if (r == 0)
        r = fatia_buf_printf(b, ",\"mod_revision\":\"%" PRIu64 "\"}],\"success\":[", e->rv_mod);
    return r;
}

static int append_log_row(struct fatia_buf *b, const struct fatia_store_op *op)
{
    int r = fatia_buf_printf(b, "%" PRIu64 " %d %s %s %s %s %zu\n", op->rv, (int)op->type,
                             op->group[0] ? op->group : "-", op->kind, op->ns[0] ? op->ns : "-",
                             op->name, op->json_len);

    if (r == 0)
        r = fatia_buf_append(b, op->json, op->json_len);
    if (r == 0)
        r = fatia_buf_putc(b, '\n');
    return r;
}

struct keyed {
    char *key;
    const struct fatia_store_op *op;
};

/* Builds the batch's transaction into e->req. */
static int build_txn(struct fatia_store_etcd *e, struct fatia_store_batch *first, uint64_t rv,
                     uint64_t *ret_last, bool *ret_prune)
{
    FATIA_VEC(struct keyed) keys = {0};
    struct fatia_strmap last = {0};
    uint64_t first_rv = 0, prev = rv;
    bool comma = false;
    char num[32];
    int r = 0;

    fatia_strmap_init(&last);
    fatia_buf_reset(&e->tmp);
    for (struct fatia_store_batch *b = first; b && r == 0; b = b->next)
        for (size_t i = 0; i < b->n && r == 0; i++) {
            const struct fatia_store_op *op = &b->ops[i];
            struct fatia_buf k = FATIA_BUF_INIT;
            if (op->rv <= prev) {
                r = -EINVAL; /* resourceVersions must increase */
                break;
            }
            prev = op->rv;
            if (!first_rv)
                first_rv = op->rv;
            r = object_key(e, op, &k);
            if (r == 0)
                r = FATIA_VEC_PUSH(&keys, ((struct keyed){fatia_buf_steal(&k), op}));
            else
                fatia_buf_release(&k);
            if (r == 0)
                r = append_log_row(&e->tmp, op);
        }
    if (r < 0)
        goto out;
    /* the last op on each key is the one etcd gets */
    for (size_t i = 0; i < keys.n && r == 0; i++)
        r = fatia_strmap_put(&last, keys.v[i].key, &keys.v[i]);
    if (r < 0)
        goto out;
    fatia_buf_reset(&e->req);
    r = put_compare(&e->req, e);
    for (size_t i = 0; i < keys.n && r == 0; i++) {
        const struct keyed *kd = &keys.v[i];
        if (fatia_strmap_get(&last, kd->key) != kd)
            continue;
        if (kd->op->type == FATIA_STORE_DELETED)
            r = put_delete(&e->req, &comma, kd->key, strlen(kd->key), NULL, 0);
        else
            r = put_put(&e->req, &comma, kd->key, strlen(kd->key), kd->op->json, kd->op->json_len);
    }
    if (r < 0)
        goto out;
    {
        char lk[400];
        snprintf(lk, sizeof(lk), "%s%020" PRIu64, e->log_prefix, first_rv);
        r = put_put(&e->req, &comma, lk, strlen(lk), e->tmp.p, e->tmp.len);
    }
    snprintf(num, sizeof(num), "%" PRIu64, prev);
    if (r == 0)
        r = put_put(&e->req, &comma, e->rv_key, strlen(e->rv_key), num, strlen(num));
    *ret_prune = prev > e->log_keep && prev - e->pruned_at >= PRUNE_EVERY;
    if (r == 0 && *ret_prune) {
        char from[400], to[400];
        snprintf(from, sizeof(from), "%s", e->log_prefix);
        snprintf(to, sizeof(to), "%s%020" PRIu64, e->log_prefix, prev - e->log_keep);
        r = put_delete(&e->req, &comma, from, strlen(from), to, strlen(to));
    }
    if (r == 0)
        r = fatia_buf_puts(&e->req, "]}");
    *ret_last = prev;
out:
    for (size_t i = 0; i < keys.n; i++)
        fatia_free(keys.v[i].key);
    FATIA_VEC_RELEASE(&keys);
    fatia_strmap_release(&last);
    return r;
}

/* After an unsure transaction: was it applied? 1 yes, 0 no (and it never will be), or exits. */
static int resolve_unsure(struct fatia_store_etcd *e, uint64_t last_rv)
{
    for (int i = 0; i < UNSURE_TRIES; i++) {
        uint64_t value, mod, hrev;
        json_t *reply = NULL;
        bool unsure = false;
        int r;
        if (i)
            sleep(1);
        r = read_rv(e, 0, &value, &mod, &hrev);
        if (r < 0)
            continue;
        if (value == last_rv && mod != e->rv_mod) {
            e->rv_mod = mod;
            e->revision = hrev;
            return 1;
        }
        if (mod != e->rv_mod) {
            fatia_error("store: etcd key %s changed under us (another writer?)", e->rv_key);
            return -ESTALE;
        }
        /* not applied: move the rv key's mod_revision so that the lost request never will be */
        {
            char num[32];
            bool comma = false;
            snprintf(num, sizeof(num), "%" PRIu64, value);
            fatia_buf_reset(&e->req);
            r = put_compare(&e->req, e);
            if (r == 0)
                r = put_put(&e->req, &comma, e->rv_key, strlen(e->rv_key), num, strlen(num));
            if (r == 0)
                r = fatia_buf_puts(&e->req, "]}");
        }
        if (r < 0)
            return r;
        r = call(e, "/v3/kv/txn", &reply, &unsure);
        if (r < 0)
            continue; /* sure or not, the next round reads the key again */
        if (json_is_true(json_object_get(reply, "succeeded"))) {
            e->revision = fatia_store_etcdc_u64(json_object_get(reply, "header"), "revision");
            e->rv_mod = e->revision;
            json_decref(reply);
            return 0;
        }
        json_decref(reply);
    }
    fatia_error("store: etcd (%s) unreachable for %d s after a write whose outcome is unknown; "
                "exiting so that a restart reloads the state from etcd",
                fatia_store_etcdc_endpoint(e->c), UNSURE_TRIES);
    _exit(EXIT_UNSURE);
}

static void maybe_compact(struct fatia_store_etcd *e)
{
    fatia_usec_t now = fatia_now_mono_usec();
    json_t *reply = NULL;
    int r;

    if (now - e->compact_last < e->compact_usec)
        return;
    e->compact_last = now;
    if (e->compact_to) {
        fatia_buf_reset(&e->req);
        if (fatia_buf_printf(&e->req, "{\"revision\":\"%" PRIu64 "\"}", e->compact_to) < 0)
            return;
        r = call(e, "/v3/kv/compaction", &reply, NULL);
        if (r == 0)
            fatia_info("store: etcd compacted to revision %" PRIu64, e->compact_to);
        else if (r != -FATIA_E_GONE) /* already compacted there: fine */
            fatia_warn("store: etcd compaction to %" PRIu64 " failed: %s", e->compact_to,
                       fatia_strerror(r));
        json_decref(reply);
    }
    e->compact_to = e->revision;
}

/* ---- replica mode: per-object compare-and-swap ---- */

/* Reads the marker key now: its value into e->val ("" if absent), *mod (0 if absent). */
static int read_marker(struct fatia_store_etcd *e, uint64_t *mod)
{
    json_t *reply = NULL, *kv;
    int r;

    fatia_buf_reset(&e->req);
    r = fatia_buf_putc(&e->req, '{');
    if (r == 0)
        r = put_b64_field(&e->req, "key", e->marker_key, strlen(e->marker_key));
    if (r == 0)
        r = fatia_buf_putc(&e->req, '}');
    if (r == 0)
        r = call(e, "/v3/kv/range", &reply, NULL);
    if (r < 0)
        return r;
    *mod = 0;
    fatia_buf_reset(&e->val);
    kv = json_array_get(json_object_get(reply, "kvs"), 0);
    if (kv) {
        const char *v = fatia_json_str(kv, "value");
        *mod = fatia_store_etcdc_u64(kv, "mod_revision");
        if (v && fatia_store_etcdc_unb64(&e->val, v) < 0)
            r = -FATIA_E_CORRUPT;
    }
    json_decref(reply);
    return r;
}

static int put_mod_compare(struct fatia_buf *b, bool *comma, const char *key, uint64_t mod)
{
    int r = fatia_buf_puts(b, *comma ? "," : "");

    *comma = true;
    if (r == 0)
        r = fatia_buf_puts(b, "{\"target\":\"MOD\",\"result\":\"EQUAL\",");
    if (r == 0)
        r = put_b64_field(b, "key", key, strlen(key));
    if (r == 0)
        r = fatia_buf_printf(b, ",\"mod_revision\":\"%" PRIu64 "\"}", mod);
    return r;
}

static int put_range_keys_only(struct fatia_buf *b, bool *comma, const char *key)
{
    int r = put_op_json(b, comma, "request_range");

    if (r == 0)
        r = put_b64_field(b, "key", key, strlen(key));
    if (r == 0)
        r = fatia_buf_puts(b, ",\"keys_only\":true}}");
    return r;
}

/* A transaction of build_txn_replica failed: sets conflict on every op of an object whose
 * revision (the failure branch's ranges, in the order of the first ops) is not the one its first
 * op expected. The number of objects marked, or a negative code. */
static int mark_conflicts(struct fatia_store_etcd *e, struct fatia_store_batch *first,
                          json_t *reply)
{
    json_t *resps = json_object_get(reply, "responses");
    FATIA_VEC(char *) keys = {0};
    struct fatia_strmap firsts = {0}, bad = {0};
    size_t idx = 0;
    int r = 0, n = 0;

    fatia_strmap_init(&firsts);
    fatia_strmap_init(&bad);
    for (struct fatia_store_batch *b = first; b && r == 0; b = b->next)
        for (size_t i = 0; i < b->n && r == 0; i++) {
            const struct fatia_store_op *op = &b->ops[i];
            struct fatia_buf k = FATIA_BUF_INIT;
            json_t *kv;
            uint64_t mod;
            r = object_key(e, op, &k);
            if (r == 0)
                r = FATIA_VEC_PUSH(&keys, fatia_buf_steal(&k));
            else
                fatia_buf_release(&k);
            if (r < 0 || fatia_strmap_has(&firsts, keys.v[keys.n - 1]))
                continue;
            r = fatia_strmap_put(&firsts, keys.v[keys.n - 1], NULL);
            kv = json_array_get(
                json_object_get(json_object_get(json_array_get(resps, idx++), "response_range"),
                                "kvs"),
                0);
            mod = kv ? fatia_store_etcdc_u64(kv, "mod_revision") : 0;
            if (r == 0 && mod != op->expect_rv) {
                r = fatia_strmap_put(&bad, keys.v[keys.n - 1], NULL);
                n++;
            }
        }
    if (r == 0 && idx != json_array_size(resps))
        r = -EPROTO; /* not the answer to our failure branch */
    idx = 0;
    for (struct fatia_store_batch *b = first; b && r == 0; b = b->next)
        for (size_t i = 0; i < b->n; i++)
            b->ops[i].conflict = fatia_strmap_has(&bad, keys.v[idx++]);
    for (size_t i = 0; i < keys.n; i++)
        fatia_free(keys.v[i]);
    FATIA_VEC_RELEASE(&keys);
    fatia_strmap_release(&firsts);
    fatia_strmap_release(&bad);
    return r < 0 ? r : n;
}

/* The batch's transaction into e->req: the marker's and every object's revision compared (the
 * first op on each object names the revision it was built on), then the last op on each object
 * and the marker written (value: mark). */
static int build_txn_replica(struct fatia_store_etcd *e, struct fatia_store_batch *first,
                             const char *mark)
{
    FATIA_VEC(struct keyed) keys = {0};
    struct fatia_strmap last = {0}, firsts = {0};
    bool comma = false;
    int r = 0;

    fatia_strmap_init(&last);
    fatia_strmap_init(&firsts);
    for (struct fatia_store_batch *b = first; b && r == 0; b = b->next)
        for (size_t i = 0; i < b->n && r == 0; i++) {
            struct fatia_buf k = FATIA_BUF_INIT;
            r = object_key(e, &b->ops[i], &k);
            if (r == 0)
                r = FATIA_VEC_PUSH(&keys, ((struct keyed){fatia_buf_steal(&k), &b->ops[i]}));
            else
                fatia_buf_release(&k);
        }
    for (size_t i = 0; i < keys.n && r == 0; i++) {
        if (!keys.v[i].op->compare_only)
            r = fatia_strmap_put(&last, keys.v[i].key, &keys.v[i]);
        if (r == 0 && !fatia_strmap_get(&firsts, keys.v[i].key))
            r = fatia_strmap_put(&firsts, keys.v[i].key, &keys.v[i]);
    }
    fatia_buf_reset(&e->req);
    if (r == 0)
        r = fatia_buf_puts(&e->req, "{\"compare\":[");
    if (r == 0)
        r = put_mod_compare(&e->req, &comma, e->marker_key, e->marker_mod);
    for (size_t i = 0; i < keys.n && r == 0; i++)
        if (fatia_strmap_get(&firsts, keys.v[i].key) == &keys.v[i])
            r = put_mod_compare(&e->req, &comma, keys.v[i].key, keys.v[i].op->expect_rv);
    if (r == 0)
        r = fatia_buf_puts(&e->req, "],\"success\":[");
    comma = false;
    for (size_t i = 0; i < keys.n && r == 0; i++) {
        const struct keyed *kd = &keys.v[i];
        if (fatia_strmap_get(&last, kd->key) != kd)
            continue;
        if (kd->op->type == FATIA_STORE_DELETED)
            r = put_delete(&e->req, &comma, kd->key, strlen(kd->key), NULL, 0);
        else
            r = put_put(&e->req, &comma, kd->key, strlen(kd->key), kd->op->json, kd->op->json_len);
    }
    if (r == 0)
        r = put_put(&e->req, &comma, e->marker_key, strlen(e->marker_key), mark, strlen(mark));
    /* on failure, every compared object's revision now, in the compares' order (after the
     * marker's): mark_conflicts learns from them which objects conflicted */
    if (r == 0)
        r = fatia_buf_puts(&e->req, "],\"failure\":[");
    comma = false;
    for (size_t i = 0; i < keys.n && r == 0; i++)
        if (fatia_strmap_get(&firsts, keys.v[i].key) == &keys.v[i])
            r = put_range_keys_only(&e->req, &comma, keys.v[i].key);
    if (r == 0)
        r = fatia_buf_puts(&e->req, "]}");
    for (size_t i = 0; i < keys.n; i++)
        fatia_free(keys.v[i].key);
    FATIA_VEC_RELEASE(&keys);
    fatia_strmap_release(&last);
    fatia_strmap_release(&firsts);
    return r;
}

/* After an unsure transaction that wrote mark: 1 applied (e->revision is its revision), 0 not
 * applied and fenced (the marker moved, so the lost request can never apply), or exits. */
static int resolve_unsure_replica(struct fatia_store_etcd *e, const char *mark)
{
    for (int i = 0; i < UNSURE_TRIES; i++) {
        json_t *reply = NULL;
        bool unsure = false, comma = false;
        char fence[48];
        uint64_t mod;
        int r;
        if (i)
            sleep(1);
        if (read_marker(e, &mod) < 0)
            continue;
        if (mod != e->marker_mod && !strcmp(e->val.p, mark)) {
            e->marker_mod = e->revision = mod;
            return 1;
        }
        if (mod != e->marker_mod) {
            fatia_error("store: etcd key %s changed under us (another process?)", e->marker_key);
            return -ESTALE;
        }
        snprintf(fence, sizeof(fence), "fence-%" PRIu64, ++e->marker_seq);
        fatia_buf_reset(&e->req);
        r = fatia_buf_puts(&e->req, "{\"compare\":[");
        if (r == 0)
            r = put_mod_compare(&e->req, &comma, e->marker_key, e->marker_mod);
        comma = false;
        if (r == 0)
            r = fatia_buf_puts(&e->req, "],\"success\":[");
        if (r == 0)
            r = put_put(&e->req, &comma, e->marker_key, strlen(e->marker_key), fence,
                        strlen(fence));
        if (r == 0)
            r = fatia_buf_puts(&e->req, "]}");
        if (r < 0)
            return r;
        if (call(e, "/v3/kv/txn", &reply, &unsure) < 0)
            continue;
        if (json_is_true(json_object_get(reply, "succeeded"))) {
            e->marker_mod = e->revision =
                fatia_store_etcdc_u64(json_object_get(reply, "header"), "revision");
            json_decref(reply);
            return 0;
        }
        json_decref(reply);
    }
    fatia_error("store: etcd (%s) unreachable for %d s after a write whose outcome is unknown; "
                "exiting so that a restart reloads the state from etcd",
                fatia_store_etcdc_endpoint(e->c), UNSURE_TRIES);
    _exit(EXIT_UNSURE);
}

/* FATIA_TEST_ETCD_HOLD (tests only): the writer waits while the file exists. */
static void hold(const struct fatia_store_etcd *e)
{
    while (e->hold_path[0] && access(e->hold_path, F_OK) == 0)
        usleep(10 * 1000);
}

static int commit_replica(struct fatia_store_etcd *e, struct fatia_store_batch *first, uint64_t *rv)
{
    uint64_t hrev = 0;
    int r = -EIO;

    for (int attempt = 0; attempt < COMMIT_TRIES; attempt++) {
        json_t *reply = NULL;
        bool unsure = false, ok;
        char mark[32];
        if (attempt)
            usleep(200 * 1000);
        snprintf(mark, sizeof(mark), "%" PRIu64, ++e->marker_seq);
        for (struct fatia_store_batch *b = first; b; b = b->next)
            for (size_t i = 0; i < b->n; i++)
                b->ops[i].conflict = false;
        hold(e);
        r = build_txn_replica(e, first, mark);
        if (r < 0)
            return r;
        r = call(e, "/v3/kv/txn", &reply, &unsure);
        if (r < 0 && unsure) {
            r = resolve_unsure_replica(e, mark);
            if (r < 0)
                return r;
            if (r == 0) {
                r = -EIO;
                continue;
            }
            hrev = e->revision;
            r = 0;
            break;
        }
        if (r == -ECONNREFUSED)
            continue;
        if (r < 0)
            return r;
        ok = json_is_true(json_object_get(reply, "succeeded"));
        hrev = fatia_store_etcdc_u64(json_object_get(reply, "header"), "revision");
        if (!ok) {
            /* an object changed since its writer read it: say which (none marked: the marker
             * moved, or an answer we cannot read; the API server then fails them all) */
            r = mark_conflicts(e, first, reply);
            json_decref(reply);
            if (r < 0)
                fatia_warn("store: cannot tell which objects conflicted: %s", fatia_strerror(r));
            for (struct fatia_store_batch *b = first; b; b = b->next)
                b->revision = hrev; /* the changes that refused it are at or before hrev */
            return -FATIA_E_CONFLICT;
        }
        json_decref(reply);
        e->marker_mod = e->revision = hrev;
        break;
    }
    if (r < 0)
        return r;
    for (struct fatia_store_batch *b = first; b; b = b->next) {
        b->revision = hrev;
        for (size_t i = 0; i < b->n; i++)
            b->ops[i].rv = hrev;
    }
    *rv = hrev;
    maybe_compact(e);
    return 0;
}

int fatia_store_etcd_commit(struct fatia_store_etcd *e, struct fatia_store_batch *first,
                            uint64_t *rv)
{
    uint64_t last = *rv;
    bool prune = false;
    int r = 0;

    if (e->replica)
        return commit_replica(e, first, rv);
    /* A batch that surely did not apply (no endpoint reachable, or an unsure one found not
     * applied and fenced) is sent again: a member's death costs a client nothing. */
    for (int attempt = 0; attempt < COMMIT_TRIES; attempt++) {
        json_t *reply = NULL;
        bool unsure = false, ok;
        uint64_t hrev;
        if (attempt)
            usleep(200 * 1000);
        r = build_txn(e, first, *rv, &last, &prune);
        if (r < 0)
            return r;
        if (last == *rv)
            return 0; /* nothing to write */
        r = call(e, "/v3/kv/txn", &reply, &unsure);
        if (r < 0 && unsure) {
            r = resolve_unsure(e, last);
            if (r < 0)
                return r;
            if (r == 0) {
                r = -EIO;
                continue;
            }
            break; /* applied */
        }
        if (r == -ECONNREFUSED)
            continue;
        if (r < 0)
            return r;
        ok = json_is_true(json_object_get(reply, "succeeded"));
        hrev = fatia_store_etcdc_u64(json_object_get(reply, "header"), "revision");
        json_decref(reply);
        if (!ok) {
            fatia_error("store: etcd key %s is not at the revision this fatiad wrote (%" PRIu64
                        "): another fatiad writes prefix %s; refusing to write",
                        e->rv_key, e->rv_mod, e->prefix);
            return -ESTALE;
        }
        e->rv_mod = e->revision = hrev;
        r = 0;
        break;
    }
    if (r < 0)
        return r;
    if (prune)
        e->pruned_at = last;
    *rv = last;
    maybe_compact(e);
    return 0;
}

/* ---- replica mode: the changes of the watch stream (loop thread) ---- */

int fatia_store_etcd_changes_fd(const struct fatia_store_etcd *e)
{
    return e->watch ? fatia_store_etcdw_fd(e->watch) : -1;
}

static void free_events(struct fatia_store_etcdw_event *ev)
{
    while (ev) {
        struct fatia_store_etcdw_event *next = ev->next;
        fatia_store_etcdw_event_free(ev);
        ev = next;
    }
}

/* The change an event of an object key makes; false for keys that name no object. */
static bool translate(struct fatia_store_etcd *e, const struct fatia_store_etcdw_event *ev,
                      struct fatia_store_change *ret)
{
    size_t plen = strlen(e->prefix);
    const struct layout *l;
    bool put = ev->type == FATIA_STORE_ETCDW_PUT;
    const char *json = put ? ev->value : ev->prev_value;
    size_t json_len = put ? ev->value_len : ev->prev_len;

    *ret = (struct fatia_store_change){0};
    if (strncmp(ev->key, e->prefix, plen) || ev->key[plen] != '/')
        return false; /* fatia's own keys, or another prefix that starts like ours */
    l = parse_key(e, ev->key, e->cur_buf, sizeof(e->cur_buf), &ret->ns, &ret->name);
    if (l) {
        ret->group = l->kind->group;
        ret->kind = l->kind->kind;
    } else {
        /* a dynamic kind's object names its kind itself (as load_each reads it) */
        const json_t *meta;
        const char *api, *k, *name, *ns, *slash;
        if (!json)
            return false;
        e->cur_tree = json_loadb(json, json_len, 0, NULL);
        meta = json_object_get(e->cur_tree, "metadata");
        api = fatia_json_str(e->cur_tree, "apiVersion");
        k = fatia_json_str(e->cur_tree, "kind");
        name = fatia_json_str(meta, "name");
        ns = fatia_json_str(meta, "namespace");
        if (!api || !k || !name)
            return false;
        slash = strchr(api, '/');
        snprintf(e->cur_group, sizeof(e->cur_group), "%.*s", slash ? (int)(slash - api) : 0, api);
        snprintf(e->cur_kind, sizeof(e->cur_kind), "%s", k);
        snprintf(e->cur_buf, sizeof(e->cur_buf), "%s", name);
        ret->group = e->cur_group;
        ret->kind = e->cur_kind;
        ret->name = e->cur_buf;
        ret->ns = ns ? ns : "";
    }
    ret->rv = ev->revision;
    ret->type = !put               ? FATIA_STORE_DELETED
                : ev->version == 1 ? FATIA_STORE_ADDED
                                   : FATIA_STORE_MODIFIED;
    ret->json = json; /* NULL for a delete whose last state etcd did not send */
    ret->json_len = json ? json_len : 0;
    return true;
}

int fatia_store_etcd_next_change(struct fatia_store_etcd *e, struct fatia_store_change *ret)
{
    if (!e->watch)
        return 0;
    for (;;) {
        struct fatia_store_etcdw_event *ev;
        fatia_store_etcdw_event_free(e->cur);
        e->cur = NULL;
        json_decref(e->cur_tree);
        e->cur_tree = NULL;
        if (!e->group) {
            struct fatia_store_etcdw_event **tail, *n;
            bool own = false, fence = false;
            ev = e->ahead ? e->ahead : fatia_store_etcdw_next(e->watch);
            e->ahead = NULL;
            if (!ev)
                return 0;
            if (ev->type == FATIA_STORE_ETCDW_PROGRESS) {
                fatia_store_etcdw_event_free(ev);
                continue;
            }
            if (ev->type == FATIA_STORE_ETCDW_GONE) {
                *ret = (struct fatia_store_change){.rv = ev->revision, .gone = true};
                fatia_store_etcdw_event_free(ev);
                return 1;
            }
            /* the whole revision: the watch queues a revision's events at once */
            e->group = ev;
            tail = &ev->next;
            while ((n = fatia_store_etcdw_next(e->watch))) {
                if (n->revision != ev->revision || n->type == FATIA_STORE_ETCDW_PROGRESS ||
                    n->type == FATIA_STORE_ETCDW_GONE) {
                    e->ahead = n;
                    break;
                }
                *tail = n;
                tail = &n->next;
            }
            for (n = e->group; n; n = n->next)
                if (!strcmp(n->key, e->marker_key)) {
                    own = true;
                    fence = n->value && !strncmp(n->value, "fence", 5);
                }
            if (own) {
                uint64_t rv = e->group->revision;
                free_events(e->group);
                e->group = NULL;
                if (fence)
                    continue; /* an unsure commit's fence: nothing was written */
                *ret = (struct fatia_store_change){.rv = rv};
                return 1;
            }
        }
        ev = e->group;
        e->group = ev->next;
        ev->next = NULL;
        e->cur = ev;
        if (translate(e, ev, ret))
            return 1;
    }
}
