/*
 * apiserver/replica.c: one of several API server replicas on one etcd prefix (the store's
 * replica mode, store.h fatia_store_opts.etcd_replica).
 *
 * Model: each replica keeps its own cache (internal.h) and serves reads and watches from it,
 * as kube-apiserver's watch cache does; the store's watch stream (etcd's, from the revision
 * loaded on) is the cache's only clock. resourceVersions are etcd's revisions:
 *   - A change of another replica is applied when the stream brings it: the entry's committed
 *     version is replaced (its latest too, unless writes of ours are queued on it: those were
 *     built on the version before and the store's compare will refuse them, -FATIA_E_CONFLICT,
 *     409), and a watch event goes out.
 *   - A batch of ours is published when both have happened: the store reaped it (its revision
 *     known) and the stream reached that revision (every change before it applied). Whichever
 *     comes second finishes the batch (txn.c and fatia_api_replica_drain here), so the history
 *     stays in revision order across replicas and a client that reads after its write's answer
 *     sees the write and everything before it.
 *   - Writes join batches with placeholder resourceVersions (FATIA_API_RV_PLACEHOLDER and up);
 *     the batch's revision replaces them at finish, before anyone has seen them.
 * The stream falling behind etcd's compaction (GONE) would need a relist into a cache that
 * serves watchers; fatiad exits 75 instead and a restart loads the state again (as the store
 * does after a write of unknown outcome).
 *
 * Rejected: forwarding writes to one replica (a second hop on every write, and the writer
 * replica still needs the others' caches fed); polling etcd (kine's way: a second of delay on
 * every replica's view); applying our own batch at reap time (a change of another replica at an
 * earlier revision could then come after it in the history).
 */
#include "base/compat.h"

#include <inttypes.h>
#include <unistd.h>

#include "apiserver/internal.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"

#define EXIT_RELOAD 75

static const struct fatia_kind *kind_of(const char *group, const char *kind)
{
    for (size_t i = 0; fatia_kinds[i]; i++)
        if (!strcmp(fatia_kinds[i]->group, group) && !strcmp(fatia_kinds[i]->kind, kind))
            return fatia_kinds[i];
    return NULL;
}

static void advance(struct fatia_apiserver *s, uint64_t rv)
{
    if (rv > s->rv_committed)
        s->rv_committed = rv;
}

/* Another replica's change to one object. */
static void apply_change(struct fatia_apiserver *s, const struct fatia_store_change *c)
{
    const struct fatia_kind *k = kind_of(c->group, c->kind);
    struct rtable *t = k ? fatia_api_server_table_for(s, k) : NULL;
    struct objver *v, *old;
    struct entry *e;
    char key[600];
    json_t *tree;

    if (!t)
        goto out; /* a kind this replica does not serve */
    fatia_api_entry_key(t, c->ns, c->name, key, sizeof(key));
    e = fatia_api_rtable_find(t, key);
    if (c->type == FATIA_STORE_DELETED) {
        if (!e || !e->committed)
            goto out; /* never had it */
        tree = c->json ? fatia_json_loadb(c->json, c->json_len, 0, NULL)
                       : json_deep_copy(e->committed->tree);
    } else {
        tree = fatia_json_loadb(c->json, c->json_len, 0, NULL);
    }
    if (!tree || !json_is_object(json_object_get(tree, "metadata"))) {
        fatia_error("store: a change of %s %s%s%s at revision %" PRIu64 " is not an object; "
                    "ignoring it",
                    t->resource, c->ns, c->ns[0] ? "/" : "", c->name, c->rv);
        json_decref(tree);
        goto out;
    }
    v = fatia_api_objver_new(tree, c->rv);
    if (!v)
        FATIA_ASSERT(!"out of memory applying a change"); /* the cache would go wrong */
    if (!e)
        e = fatia_api_rtable_get_or_add(t, c->ns, c->name);
    if (!e)
        FATIA_ASSERT(!"out of memory applying a change");
    old = e->committed;
    if (c->type == FATIA_STORE_DELETED) {
        e->committed = NULL;
        t->n_committed--;
        if (!e->pending) {
            fatia_api_objver_unref(e->latest);
            e->latest = NULL;
        }
        fatia_api_history_publish(s, t, FATIA_STORE_DELETED, v, old);
    } else {
        e->committed = fatia_api_objver_ref(v);
        if (!old)
            t->n_committed++;
        if (!e->pending) {
            fatia_api_objver_unref(e->latest);
            e->latest = fatia_api_objver_ref(v);
        }
        fatia_api_history_publish(s, t, old ? FATIA_STORE_MODIFIED : FATIA_STORE_ADDED, v, old);
    }
    fatia_api_objver_unref(old);
    fatia_api_objver_unref(v);
    fatia_api_rtable_maybe_remove(t, e);
out:
    advance(s, c->rv);
}

void fatia_api_replica_drain(struct fatia_apiserver *s)
{
    struct fatia_store_change c;

    while (!s->own_rv && fatia_store_next_change(s->store, &c) == 1) {
        struct batch *b = s->inflight;
        if (c.gone) {
            fatia_error("store: the etcd watch fell behind compaction (revision %" PRIu64
                        "); exiting so that a restart loads the state again",
                        c.rv);
            _exit(EXIT_RELOAD);
        }
        if (c.type) {
            apply_change(s, &c);
            continue;
        }
        /* a revision of ours */
        if (b && !b->reaped) {
            s->own_rv = c.rv; /* the store's answer comes next: txn.c finishes it */
            break;
        }
        if (b && b->sb.revision == c.rv) {
            fatia_api_batch_finish(s, b);
            continue;
        }
        fatia_warn("store: revision %" PRIu64 " is ours but no batch waits for it", c.rv);
        advance(s, c.rv);
    }
    if (s->reruns)
        fatia_api_rerun_wake(s, false);
    fatia_api_store_after(s);
}

void fatia_api_changes_cb(int fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    fatia_api_replica_drain(arg);
}

/* ---- fencing of a leader's controllers ---- */

int fatia_apiserver_set_fence(struct fatia_apiserver *s, const char *ns, const char *name,
                              const char *holder)
{
    fatia_free(s->fence_ns);
    fatia_free(s->fence_name);
    fatia_free(s->fence_holder);
    s->fence_ns = fatia_strdup(ns);
    s->fence_name = fatia_strdup(name);
    s->fence_holder = fatia_strdup(holder);
    if (!s->fence_ns || !s->fence_name || !s->fence_holder)
        return -ENOMEM;
    return 0;
}

static const struct objver *fence_lease(struct fatia_apiserver *s)
{
    const struct fatia_kind *k = kind_of("coordination.k8s.io", "Lease");
    struct rtable *t = k ? fatia_api_server_table_for(s, k) : NULL;
    struct entry *e;
    char key[600];

    if (!t)
        return NULL;
    fatia_api_entry_key(t, s->fence_ns, s->fence_name, key, sizeof(key));
    e = fatia_api_rtable_find(t, key);
    return e ? e->committed : NULL;
}

int fatia_api_fence_check(struct fatia_apiserver *s)
{
    const struct objver *v;
    const char *holder;

    if (!s->fence_holder)
        return 0;
    v = fence_lease(s);
    holder = v ? fatia_json_str(json_object_get(v->tree, "spec"), "holderIdentity") : NULL;
    if (holder && !strcmp(holder, s->fence_holder))
        return 0;
    s->fenced_writes++;
    if (s->fenced_writes == 1 || s->fenced_writes % 100 == 0)
        fatia_warn("fence: a controller write refused: the lease %s/%s is held by %s, not by "
                   "%s (%" PRIu64 " refused so far)",
                   s->fence_ns, s->fence_name, holder ? holder : "nobody", s->fence_holder,
                   s->fenced_writes);
    return -FATIA_E_CONFLICT;
}

int fatia_api_fence_op(struct fatia_apiserver *s, struct batch *b)
{
    const struct objver *v;
    bool any = false;

    if (!s->fence_holder || !s->replica)
        return 0;
    for (struct wtxn *tx = b->txns; tx && !any; tx = tx->next)
        any = tx->fenced;
    if (!any)
        return 0;
    v = fence_lease(s);
    if (FATIA_VEC_RESERVE(&b->ops, b->ops.n + 1) < 0)
        return -ENOMEM;
    b->ops.v[b->ops.n++] = (struct fatia_store_op){
        .rv = 0,
        .type = FATIA_STORE_MODIFIED,
        .group = "coordination.k8s.io",
        .kind = "Lease",
        .ns = s->fence_ns,
        .name = s->fence_name,
        .uid = "",
        .json = NULL,
        .json_len = 0,
        .deleting = true, /* compares only: allowed under the NOSPACE alarm */
        .expect_rv = v ? v->rv : 0,
        .compare_only = true,
    };
    return 0;
}
