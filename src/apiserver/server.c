/*
 * apiserver/server.c: the server's life: loading the store into the cache, the watch history
 * from the store's log, serving, shutting down.
 *
 * Start: every stored object becomes a committed version (parsed once); the newest log rows
 * (up to the watch history size) become the watch history, so a client that watched before a
 * restart resumes where it was if the history still reaches back that far (otherwise 410 and
 * it lists again). Objects of kinds the registry no longer has are skipped with a warning and
 * stay in the store untouched.
 *
 * Shutdown: stop accepting, end every watch, wait for the batch in the store's writer and the
 * one filling behind it, then report done; nothing acknowledged is lost, nothing half-written.
 */
#include "base/compat.h"

#include <event2/event.h>

#include "apiserver/internal.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "model/crd_kind.h"

struct rtable *fatia_api_server_table_for(struct fatia_apiserver *s, const struct fatia_kind *k)
{
    for (size_t i = 0; i < s->n_tables; i++)
        if (s->tables[i].kind == k)
            return &s->tables[i];
    return NULL;
}

struct rtable *fatia_api_server_table_by_resource(struct fatia_apiserver *s, const char *group,
                                                  const char *plural)
{
    char key[300];

    snprintf(key, sizeof(key), "%s/%s", group, plural);
    return fatia_strmap_get(&s->by_resource, key);
}

static const struct fatia_kind *kind_by_group_kind(const char *group, const char *kind)
{
    for (size_t i = 0; fatia_kind_at(i); i++)
        if (!strcmp(fatia_kind_at(i)->group, group) && !strcmp(fatia_kind_at(i)->kind, kind))
            return fatia_kind_at(i);
    return NULL;
}

struct load_ctx {
    struct fatia_apiserver *s;
    size_t skipped;
    size_t loaded;
};

/* A stored object must be a JSON object whose metadata names the row it is in: anything else
 * is refused at start, naming the row by its key, before the cache is built on it. */
static int check_row_shape(const struct rtable *t, const struct fatia_store_row *row,
                           const json_t *tree, const char *what)
{
    const json_t *meta = json_object_get(tree, "metadata");
    const char *name = fatia_json_str(meta, "name");
    const char *ns = fatia_json_str(meta, "namespace");
    const char *wrong = NULL;

    if (!json_is_object(tree))
        wrong = "the JSON is not an object";
    else if (!json_is_object(meta))
        wrong = "metadata is missing or not an object";
    else if (!name || strcmp(name, row->name))
        wrong = "metadata.name is not the row's name";
    else if (strcmp(ns ? ns : "", row->ns))
        wrong = "metadata.namespace is not the row's namespace";
    if (!wrong)
        return 0;
    fatia_error("store: %s %s %s%s%s (rv %" PRIu64 "): %s", what, t->resource, row->ns,
                row->ns[0] ? "/" : "", row->name, row->rv, wrong);
    return -FATIA_E_CORRUPT;
}

static int load_row(void *arg, const struct fatia_store_row *row)
{
    struct load_ctx *lc = arg;
    struct fatia_apiserver *s = lc->s;
    const struct fatia_kind *k = kind_by_group_kind(row->group, row->kind);
    struct rtable *t = k ? fatia_api_server_table_for(s, k) : NULL;
    json_error_t jerr;
    struct entry *e;
    json_t *tree;

    if (!t) {
        lc->skipped++;
        return 0;
    }
    tree = fatia_json_loadb(row->json, row->json_len, 0, &jerr);
    if (!tree) {
        fatia_error("store: row %s %s/%s (rv %" PRIu64 ") does not parse as JSON: %s", t->resource,
                    row->ns, row->name, row->rv, jerr.text);
        return -FATIA_E_CORRUPT;
    }
    if (check_row_shape(t, row, tree, "row") < 0) {
        json_decref(tree);
        return -FATIA_E_CORRUPT;
    }
    e = fatia_api_rtable_get_or_add(t, row->ns, row->name);
    if (!e) {
        json_decref(tree);
        return -ENOMEM;
    }
    /* replica mode: the row's rv is etcd's mod_revision, not the stored metadata's */
    e->committed = fatia_api_objver_new(tree, s->replica ? row->rv : 0);
    if (!e->committed)
        return -ENOMEM;
    e->committed->rv = row->rv;
    e->latest = fatia_api_objver_ref(e->committed);
    t->n_committed++;
    lc->loaded++;
    return 0;
}

static int load_log_row(void *arg, const struct fatia_store_row *row)
{
    struct fatia_apiserver *s = arg;
    const struct fatia_kind *k = kind_by_group_kind(row->group, row->kind);
    struct rtable *t = k ? fatia_api_server_table_for(s, k) : NULL;
    struct objver *v;
    json_t *tree;

    if (!t)
        return 0;
    tree = fatia_json_loadb(row->json, row->json_len, 0, NULL);
    if (!tree) {
        fatia_error("store: log row %s %s/%s (rv %" PRIu64 ") does not parse as JSON", t->resource,
                    row->ns, row->name, row->rv);
        return -FATIA_E_CORRUPT;
    }
    if (check_row_shape(t, row, tree, "log row") < 0) {
        json_decref(tree);
        return -FATIA_E_CORRUPT;
    }
    v = fatia_api_objver_new(tree, 0);
    if (!v)
        return -ENOMEM;
    v->rv = row->rv;
    fatia_api_history_publish(s, t, row->type, v, NULL);
    fatia_api_objver_unref(v);
    return 0;
}

static void bookmark_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    fatia_api_watch_send_bookmarks(arg);
}

int fatia_apiserver_new(struct event_base *base, struct fatia_store *store,
                        const struct fatia_checks *checks, const struct fatia_apiserver_opts *opts,
                        struct fatia_apiserver **ret)
{
    struct fatia_apiserver *s = fatia_calloc(1, sizeof(*s));
    struct load_ctx lc = {.s = NULL};
    uint64_t first, rv;
    size_t n = 0;
    int r;

    if (!s)
        return -ENOMEM;
    s->base = base;
    s->streams.base = base;
    s->store = store;
    s->checks = checks;
    lc.s = s;
    if (opts)
        s->o = *opts;
    if (!s->o.watch_history)
        s->o.watch_history = 10000;
    if (!s->o.watch_budget)
        s->o.watch_budget = 256 * 1024 * 1024;
    if (!s->o.bookmark_interval)
        s->o.bookmark_interval = 60 * FATIA_USEC_PER_SEC;
    if (!s->o.max_json_depth)
        s->o.max_json_depth = 64;
    fatia_strmap_init(&s->by_resource);
    fatia_strmap_init(&s->sa_users);
    fatia_strmap_init(&s->nt_users);

    while (fatia_kinds[n])
        n++;
    s->tables = fatia_calloc(n + FATIA_KIND_MAX_CUSTOM, sizeof(*s->tables));
    if (!s->tables) {
        r = -ENOMEM;
        goto out_free;
    }
    s->n_tables = n;
    s->cap_tables = n + FATIA_KIND_MAX_CUSTOM;
    for (size_t i = 0; i < n; i++) {
        struct rtable *t = &s->tables[i];
        char key[300];
        t->kind = fatia_kinds[i];
        t->ns_budget = fatia_api_kind_budget(t->kind);
        t->index = i;
        if (t->kind->group[0])
            snprintf(t->resource, sizeof(t->resource), "%s.%s", t->kind->plural, t->kind->group);
        else
            snprintf(t->resource, sizeof(t->resource), "%s", t->kind->plural);
        snprintf(key, sizeof(key), "%s/%s", t->kind->group, t->kind->plural);
        /* the map's keys are borrowed: keep a copy per table in a stable place */
        char *k = fatia_strdup(key);
        if (!k || fatia_strmap_put(&s->by_resource, k, t) < 0) {
            fatia_free(k);
            r = -ENOMEM;
            goto out_free;
        }
    }
    fatia_api_history_init(s);
    s->replica = fatia_store_changes_fd(store) >= 0;

    r = fatia_api_crd_serve_stored(s); /* the custom kinds first: their objects need tables */
    if (r == 0)
        r = fatia_api_crd_add_plugins(s);
    if (r == 0)
        r = fatia_api_crd_rules_add_plugin(s);
    if (r == 0)
        r = fatia_store_load(store, load_row, &lc);
    if (r < 0)
        goto out_free;
    if (lc.skipped)
        fatia_warn("store: %zu objects of kinds fatia no longer serves, ignoring", lc.skipped);
    rv = fatia_store_rv(store);
    s->rv_next = s->rv_committed = rv;
    if (s->replica)
        s->rv_next = FATIA_API_RV_PLACEHOLDER;
    first = fatia_store_log_first(store);
    s->history_floor = rv > s->o.watch_history ? rv - s->o.watch_history : 0;
    if (first && first - 1 > s->history_floor)
        s->history_floor = first - 1;
    r = fatia_store_load_log(store, s->history_floor, load_log_row, s);
    if (r < 0)
        goto out_free;
    /* loading published into the ring: the floor is where the log begins */
    if (s->ring_n)
        s->history_floor = s->ring[s->ring_head].rv - 1;
    else
        s->history_floor = rv;

    r = fatia_api_openapi_build(s);
    if (r < 0)
        goto out_free;
    if (s->o.tokens_path) {
        char why[256] = "";
        r = fatia_auth_open(s->o.tokens_path, &s->auth, why, sizeof(why));
        if (r < 0) {
            fatia_error("tokens file '%s': %s", s->o.tokens_path, why);
            goto out_free;
        }
    }
    if (s->o.audit_path) {
        r = fatia_audit_open(s->o.audit_path, s->o.audit_max_bytes, s->o.audit_keep, &s->audit);
        if (r < 0) {
            fatia_error("audit log '%s': %s", s->o.audit_path, fatia_strerror(r));
            goto out_free;
        }
    }
    r = fatia_api_http_server_new(base, &s->o.http, fatia_api_handle_http, s, &s->http);
    if (r < 0)
        goto out_free;
    r = fatia_store_writer_start(store);
    if (r < 0)
        goto out_free;
    s->store_ev = event_new(base, fatia_store_done_fd(store), EV_READ | EV_PERSIST,
                            fatia_api_store_event_cb, s);
    s->bookmark_ev = event_new(base, -1, EV_PERSIST, bookmark_cb, s);
    if (!s->store_ev || !s->bookmark_ev) {
        r = -ENOMEM;
        goto out_free;
    }
    event_add(s->store_ev, NULL);
    if (s->replica) {
        s->changes_ev = event_new(base, fatia_store_changes_fd(store), EV_READ | EV_PERSIST,
                                  fatia_api_changes_cb, s);
        if (!s->changes_ev) {
            r = -ENOMEM;
            goto out_free;
        }
        event_add(s->changes_ev, NULL);
    }
    r = fatia_api_crd_sync(s); /* the first write: before any client's */
    if (r < 0)
        goto out_free;
    r = fatia_api_rbac_sync(s); /* the default roles (authz.c, rbac_defaults.c) */
    if (r < 0)
        goto out_free;
    r = fatia_api_rbac_register(s);
    if (r == 0)
        r = fatia_api_node_register(s); /* the Node authorizer, node-restriction (nodeauth.c) */
    if (r < 0)
        goto out_free;
    r = fatia_api_satoken_init(s);
    if (r < 0) {
        fatia_error("service-account signing key: %s", fatia_strerror(r));
        goto out_free;
    }
    r = fatia_api_saadmit_register(s); /* the kube-api-access volume (saadmit.c) */
    if (r == 0)
        r = fatia_api_nodetoken_register(s); /* node tokens' records (nodetoken.c) */
    if (r < 0)
        goto out_free;
    {
        struct timeval tv = {.tv_sec = s->o.bookmark_interval / FATIA_USEC_PER_SEC,
                             .tv_usec = s->o.bookmark_interval % FATIA_USEC_PER_SEC};
        event_add(s->bookmark_ev, &tv);
    }
    fatia_debug("loaded %zu objects, resourceVersion %" PRIu64, lc.loaded, rv);
    *ret = s;
    return 0;

out_free:
    fatia_apiserver_free(s);
    return r;
}

int fatia_apiserver_listen(struct fatia_apiserver *s, const char *host, uint16_t port,
                           uint16_t *ret_port)
{
    return fatia_api_http_server_listen(s->http, host, port, ret_port);
}

uint64_t fatia_apiserver_rv(const struct fatia_apiserver *s)
{
    return s->rv_committed;
}

int fatia_apiserver_metrics(const struct fatia_apiserver *s, struct fatia_buf *out)
{
    if (!s->replica)
        return 0;
    return fatia_buf_printf(
        out,
        "# HELP fatia_apiserver_commit_conflicts_total Group commits etcd refused because "
        "another replica changed objects they write\n"
        "# TYPE fatia_apiserver_commit_conflicts_total counter\n"
        "fatia_apiserver_commit_conflicts_total %" PRIu64 "\n"
        "# HELP fatia_apiserver_conflict_transactions_total Their transactions: failed (409: "
        "they wrote a changed object, or built on one that failed) or retried (committed again)\n"
        "# TYPE fatia_apiserver_conflict_transactions_total counter\n"
        "fatia_apiserver_conflict_transactions_total{outcome=\"failed\"} %" PRIu64 "\n"
        "fatia_apiserver_conflict_transactions_total{outcome=\"retried\"} %" PRIu64 "\n"
        "# HELP fatia_apiserver_write_reruns_total HTTP writes that failed for another "
        "replica's change and ran again on its version (GuaranteedUpdate's retry)\n"
        "# TYPE fatia_apiserver_write_reruns_total counter\n"
        "fatia_apiserver_write_reruns_total %" PRIu64 "\n"
        "# HELP fatia_apiserver_write_rerun_timeouts_total Reruns whose wait for the watch to "
        "bring the winning change ran out (1 s)\n"
        "# TYPE fatia_apiserver_write_rerun_timeouts_total counter\n"
        "fatia_apiserver_write_rerun_timeouts_total %" PRIu64 "\n"
        "# HELP fatia_apiserver_write_reruns_exhausted_total Writes answered 409 after their "
        "last rerun\n"
        "# TYPE fatia_apiserver_write_reruns_exhausted_total counter\n"
        "fatia_apiserver_write_reruns_exhausted_total %" PRIu64 "\n",
        s->commit_conflicts, s->conflict_failed, s->conflict_retried, s->reruns_total,
        s->rerun_timeouts, s->rerun_gave_up);
}

static void shutdown_now_cb(evutil_socket_t fd, short what, void *arg)
{
    struct fatia_apiserver *s = arg;
    void (*done)(void *) = s->shutdown_done;

    (void)fd;
    (void)what;
    s->shutdown_done = NULL;
    if (done)
        done(s->shutdown_arg);
}

void fatia_apiserver_shutdown(struct fatia_apiserver *s, void (*done)(void *arg), void *arg)
{
    s->shutting_down = true;
    s->shutdown_done = done;
    s->shutdown_arg = arg;
    if (s->http)
        fatia_api_http_server_stop_listening(s->http);
    fatia_api_watch_shutdown_all(s);
    fatia_api_rerun_wake(s, true); /* each is refused 503 */
    if (s->bookmark_ev)
        event_del(s->bookmark_ev);
    if (fatia_api_server_idle(s))
        event_base_once(s->base, -1, EV_TIMEOUT, shutdown_now_cb, s, NULL);
}

void fatia_apiserver_free(struct fatia_apiserver *s)
{
    if (!s)
        return;
    if (s->http)
        fatia_api_watch_shutdown_all(s);
    fatia_api_rerun_free_all(s);
    fatia_api_http_server_free(s->http);
    fatia_api_dashboard_free(s->dashboard);
    fatia_api_nodeproxy_free(s);
    fatia_free(s->catalog_ns);
    if (s->store_ev)
        event_free(s->store_ev);
    if (s->bookmark_ev)
        event_free(s->bookmark_ev);
    if (s->changes_ev)
        event_free(s->changes_ev);
    fatia_free(s->fence_ns);
    fatia_free(s->fence_name);
    fatia_free(s->fence_holder);
    fatia_api_history_release(s);
    for (size_t i = 0; i < s->n_tables; i++) {
        struct rtable *t = &s->tables[i];
        for (size_t j = 0; j < t->entries.n; j++) {
            fatia_api_objver_unref(t->entries.v[j]->committed);
            fatia_api_objver_unref(t->entries.v[j]->latest);
            fatia_free(t->entries.v[j]->key);
            fatia_free(t->entries.v[j]);
        }
        FATIA_VEC_RELEASE(&t->entries);
    }
    for (size_t i = 0; i < s->by_resource.cap; i++)
        if (s->by_resource.slots[i].key)
            fatia_free((char *)s->by_resource.slots[i].key);
    fatia_strmap_release(&s->by_resource);
    fatia_free(s->tables);
    FATIA_VEC_RELEASE(&s->admission);
    fatia_api_openapi_release(s);
    fatia_auth_free(s->auth);
    fatia_api_satoken_release(s);
    fatia_api_nodetoken_release(s);
    fatia_audit_free(s->audit);
    fatia_api_crd_rules_release(s);
    fatia_free(s);
    fatia_kind_custom_free_all();
}

int fatia_apiserver_add_admission(struct fatia_apiserver *s, const struct fatia_admission *plugin)
{
    if (!plugin->admit || !plugin->name)
        return -EINVAL;
    return FATIA_VEC_PUSH(&s->admission, ((struct admission_entry){*plugin}));
}
