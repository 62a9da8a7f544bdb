/*
 * apiserver/txn.c: write transactions and group commit (see internal.h for the model).
 *
 * Batches move through three places:
 *
 *     fatia_api_wtxn_commit --> s->filling --kick: writer idle--> s->inflight --store done fd-->
 *         finish_batch: ops become committed in order, watch events, answers; then kick again
 *
 * At most one batch is in the store at a time, so the next one accumulates every write that
 * arrives during a commit (one fsync for all of them) and a failure never has later batches
 * behind it in the store. A batch goes with as many whole transactions as one store commit
 * holds (fatia_store_fill_add: etcd's request limits); the rest stay filling for the next
 * kick. resourceVersions are handed out when an operation joins a transaction, in loop order,
 * so they increase along the batches as the store requires. A failed commit fails its
 * transactions and those filling behind it (fail_batch), except one that etcd refused for
 * another replica's writes: then only the transactions that conflict fail (retry_innocent), and
 * their answers carry the refusal's revision so that an HTTP write runs again (rerun.c).
 */
#include "base/compat.h"

#include <event2/event.h>

#include "apiserver/internal.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "model/kinds/kinds.h"

struct wtxn *fatia_api_wtxn_new(wtxn_done_fn done, void *arg)
{
    struct wtxn *tx = fatia_calloc(1, sizeof(*tx));

    if (!tx)
        return NULL;
    tx->done = done;
    tx->arg = arg;
    return tx;
}

void fatia_api_wtxn_free(struct wtxn *tx)
{
    if (!tx)
        return;
    for (size_t i = 0; i < tx->ops.n; i++) {
        fatia_api_objver_unref(tx->ops.v[i].ver);
        fatia_api_objver_unref(tx->ops.v[i].prev);
    }
    FATIA_VEC_RELEASE(&tx->ops);
    fatia_free(tx);
}

static int add_op(struct fatia_apiserver *s, struct wtxn *tx, struct rtable *t, struct entry *e,
                  enum fatia_store_event type, json_t *tree)
{
    uint64_t rv = s->rv_next + 1;
    struct objver *ver;
    struct wop op;

    if (FATIA_VEC_RESERVE(&tx->ops, tx->ops.n + 1) < 0) {
        json_decref(tree);
        return -ENOMEM;
    }
    ver = fatia_api_objver_new(tree, rv);
    if (!ver)
        return -ENOMEM;
    op = (struct wop){.t = t, .e = e, .type = type, .ver = ver, .prev = e->latest};
    tx->ops.v[tx->ops.n++] = op;
    e->latest = type == FATIA_STORE_DELETED ? NULL : fatia_api_objver_ref(ver);
    e->pending++;
    s->rv_next = rv;
    tx->result = ver;
    return 0;
}

int fatia_api_wtxn_put(struct fatia_apiserver *s, struct wtxn *tx, struct rtable *t,
                       struct entry *e, enum fatia_store_event type, json_t *tree)
{
    FATIA_ASSERT(type != FATIA_STORE_DELETED);
    return add_op(s, tx, t, e, type, tree);
}

int fatia_api_wtxn_delete(struct fatia_apiserver *s, struct wtxn *tx, struct rtable *t,
                          struct entry *e)
{
    json_t *last;

    FATIA_ASSERT(e->latest);
    last = json_deep_copy(e->latest->tree);
    if (!last)
        return -ENOMEM;
    return add_op(s, tx, t, e, FATIA_STORE_DELETED, last);
}

int fatia_api_wtxn_delete_with(struct fatia_apiserver *s, struct wtxn *tx, struct rtable *t,
                               struct entry *e, json_t *last)
{
    FATIA_ASSERT(e->latest);
    return add_op(s, tx, t, e, FATIA_STORE_DELETED, last);
}

void fatia_api_wtxn_abort(struct fatia_apiserver *s, struct wtxn *tx)
{
    while (tx->ops.n) {
        struct wop *op = &tx->ops.v[--tx->ops.n];
        /* only the newest operations can be undone this way */
        FATIA_ASSERT(op->ver->rv == s->rv_next);
        fatia_api_objver_unref(op->e->latest);
        op->e->latest = op->prev;
        op->e->pending--;
        s->rv_next--;
        fatia_api_rtable_maybe_remove(op->t, op->e);
        fatia_api_objver_unref(op->ver);
    }
    fatia_api_wtxn_free(tx);
}

static void batch_free(struct batch *b)
{
    if (!b)
        return;
    FATIA_VEC_RELEASE(&b->ops);
    fatia_free(b);
}

bool fatia_api_server_idle(const struct fatia_apiserver *s)
{
    return !s->inflight && !s->filling;
}

static void fail_batch(struct fatia_apiserver *s, struct batch *b, int err);

/* Replica mode: the revision each object had in the version its first op here was built on
 * (the store compares it). Those versions are committed by now, their revisions etcd's. */
static void set_expected(struct batch *b)
{
    size_t j = 0;

    for (struct wtxn *tx = b->txns; tx; tx = tx->next)
        for (size_t i = 0; i < tx->ops.n; i++, j++)
            b->ops.v[j].expect_rv = tx->ops.v[i].prev ? tx->ops.v[i].prev->rv : 0;
}

/* Cuts b after the transactions that fit in one store commit (at least one: the store answers
 * one too large by itself) and returns a batch of the others, or NULL (also when out of memory:
 * then b goes whole, and the store may refuse it). A transaction is never split. */
static struct batch *cut_batch(struct fatia_apiserver *s, struct batch *b)
{
    struct fatia_store_fill f = {0};
    struct wtxn *tx, *prev = NULL;
    struct batch *rest;
    size_t j = 0;

    for (tx = b->txns; tx; prev = tx, j += tx->ops.n, tx = tx->next)
        if (!fatia_store_fill_add(s->store, &f, &b->ops.v[j], tx->ops.n) && prev)
            break;
    if (!tx)
        return NULL;
    rest = fatia_calloc(1, sizeof(*rest));
    if (!rest || FATIA_VEC_RESERVE(&rest->ops, b->ops.n - j) < 0) {
        fatia_free(rest);
        return NULL;
    }
    memcpy(rest->ops.v, &b->ops.v[j], (b->ops.n - j) * sizeof(*b->ops.v));
    rest->ops.n = b->ops.n - j;
    b->ops.n = j;
    rest->txns = tx;
    rest->txns_tail = b->txns_tail;
    prev->next = NULL;
    b->txns_tail = &prev->next;
    return rest;
}

static void kick(struct fatia_apiserver *s)
{
    struct batch *b = s->filling;
    int r;

    if (s->inflight || !b)
        return;
    /* what does not fit in one commit (etcd's request limits) waits for the next kick */
    s->filling = cut_batch(s, b);
    s->inflight = b;
    if (s->replica) {
        set_expected(b);
        if (fatia_api_fence_op(s, b) < 0) {
            fail_batch(s, b, -ENOMEM);
            return;
        }
    }
    b->sb.ops = b->ops.v;
    b->sb.n = b->ops.n;
    b->sb.user = b;
    r = fatia_store_submit(s->store, &b->sb);
    if (r < 0)
        fail_batch(s, b, r);
}

/* Part of deleting the object (store.h): the op may spend the store's disk reserve. An update
 * of an object being deleted qualifies only if it does not make it larger (but for the room the
 * deletion's own fields take), so that a tenant cannot spend the reserve by rewriting a
 * terminating object it holds with a finalizer. */
static bool op_deleting(const struct wop *op)
{
    if (op->type == FATIA_STORE_DELETED)
        return true;
    if (!json_object_get(json_object_get(op->ver->tree, "metadata"), "deletionTimestamp"))
        return false;
    return !op->prev || op->ver->len <= op->prev->len + 512;
}

/* The limits a transaction meets before it joins a batch: every object within the store's size
 * limit (etcd's 1.5 MiB), and only deletions while the store's NOSPACE alarm is raised. */
static int check_txn(struct fatia_apiserver *s, const struct wtxn *tx)
{
    bool nospace = fatia_store_nospace(s->store);

    for (size_t i = 0; i < tx->ops.n; i++) {
        const struct wop *op = &tx->ops.v[i];
        if (op->type != FATIA_STORE_DELETED && op->ver->len > FATIA_STORE_MAX_OBJECT)
            return -EFBIG;
        if (nospace && !op_deleting(op))
            return -ENOSPC;
    }
    return 0;
}

/* Appends tx to b, with its store ops; b->ops has room for them (FATIA_VEC_RESERVE). */
static void batch_add(struct batch *b, struct wtxn *tx)
{
    for (size_t i = 0; i < tx->ops.n; i++) {
        const struct wop *op = &tx->ops.v[i];
        b->ops.v[b->ops.n++] = (struct fatia_store_op){
            .rv = op->ver->rv,
            .type = op->type,
            .group = op->t->kind->group,
            .kind = op->t->kind->kind,
            .ns = op->e->ns,
            .name = op->e->name,
            .uid = fatia_json_str(json_object_get(op->ver->tree, "metadata"), "uid"),
            .json = op->ver->text,
            .json_len = op->ver->len,
            .deleting = op_deleting(op),
        };
    }
    tx->next = NULL;
    *b->txns_tail = tx;
    b->txns_tail = &tx->next;
}

void fatia_api_wtxn_commit(struct fatia_apiserver *s, struct wtxn *tx)
{
    struct batch *b = s->filling;
    int err = -ENOMEM;

    FATIA_ASSERT(tx->ops.n > 0);
    err = tx->fenced ? fatia_api_fence_check(s) : 0;
    if (err == 0)
        err = check_txn(s, tx);
    if (err < 0)
        goto out_fail;
    err = -ENOMEM;
    if (!b) {
        b = fatia_calloc(1, sizeof(*b));
        if (!b)
            goto out_fail;
        b->txns_tail = &b->txns;
        s->filling = b;
    }
    if (FATIA_VEC_RESERVE(&b->ops, b->ops.n + tx->ops.n) < 0)
        goto out_fail;
    batch_add(b, tx);
    kick(s);
    return;

out_fail:
    /* Refused by a limit, or out of memory, before queueing: undo, and answer. A filling batch
     * with no transactions yet is left for the next commit. */
    {
        wtxn_done_fn done = tx->done;
        void *arg = tx->arg;
        struct wtxn fake = {.done = done, .arg = arg};
        fatia_api_wtxn_abort(s, tx);
        done(s, &fake, err);
    }
}

struct touched {
    struct rtable *t;
    struct entry *e;
};

static int cmp_touched(const void *a, const void *b)
{
    const struct touched *x = a, *y = b;

    return x->e < y->e ? -1 : x->e > y->e;
}

/* tx's ops no longer own entry state (it fails): their versions dropped before its answer. */
static void drop_ops(struct wtxn *tx)
{
    for (size_t i = 0; i < tx->ops.n; i++) {
        fatia_api_objver_unref(tx->ops.v[i].ver);
        fatia_api_objver_unref(tx->ops.v[i].prev);
    }
    tx->ops.n = 0;
    tx->result = NULL;
}

/* Drops the touched entries that nothing holds any more (each once), and the list. */
static void remove_touched(struct touched *v, size_t n)
{
    if (n)
        qsort(v, n, sizeof(*v), cmp_touched);
    for (size_t i = 0; i < n; i++)
        if (i == 0 || v[i].e != v[i - 1].e)
            fatia_api_rtable_maybe_remove(v[i].t, v[i].e);
}

/* A commit failed: every transaction in b and in the filling batch fails (they were checked
 * against latest states that will never be durable), and latest goes back to committed. */
static void fail_batch(struct fatia_apiserver *s, struct batch *b, int err)
{
    struct batch *also = s->filling;
    FATIA_VEC(struct touched) touched = {0};
    struct wtxn *txns[2] = {b->txns, also ? also->txns : NULL};

    fatia_error("store commit failed: %s; failing %zu queued operations", fatia_strerror(err),
                b->ops.n + (also ? also->ops.n : 0));
    s->inflight = NULL;
    s->filling = NULL;
    for (int k = 0; k < 2; k++) {
        for (struct wtxn *tx = txns[k]; tx; tx = tx->next) {
            for (size_t i = 0; i < tx->ops.n; i++) {
                struct entry *e = tx->ops.v[i].e;
                e->pending = 0;
                fatia_api_objver_unref(e->latest);
                e->latest = fatia_api_objver_ref(e->committed);
                if (FATIA_VEC_PUSH(&touched, ((struct touched){tx->ops.v[i].t, e})) < 0)
                    FATIA_ASSERT(!"out of memory while rolling back"); /* cannot recover */
            }
        }
    }
    remove_touched(touched.v, touched.n);
    FATIA_VEC_RELEASE(&touched);
    s->rv_next = s->replica ? FATIA_API_RV_PLACEHOLDER : s->rv_committed;
    for (int k = 0; k < 2; k++) {
        struct wtxn *tx = txns[k], *next;
        for (; tx; tx = next) {
            next = tx->next;
            /* refused for another replica's change that the store could not name: each may
             * run again on the fresh cache (rerun.c), but a fenced one (the fence may be why) */
            if (s->replica && err == -FATIA_E_CONFLICT && !tx->fenced)
                tx->stale_rv = b->sb.revision;
            drop_ops(tx);
            tx->done(s, tx, err);
            fatia_api_wtxn_free(tx);
        }
    }
    batch_free(b);
    batch_free(also);
}

/* Replica mode: the commit was refused because objects it writes changed under it (another
 * replica's writes), and the store named them (fatia_store_op.conflict). kube-apiserver never
 * fails a write for another request's conflict, and a group commit must not either: a
 * transaction fails (409) only if it writes a named object, if it writes an object that a
 * failing transaction before it wrote (it was built on that version), or if it is fenced and
 * the fence Lease moved or is no longer ours. The others, of b and of the filling batch, go again
 * in their order as the next batch. Their versions are still valid: each was built on the
 * committed version of its object, which this commit found current on etcd (else the store would
 * have named it), or on a surviving transaction before it; a change that lands meanwhile makes
 * the next commit name it. Each refused commit fails at least one transaction, so the retries
 * end. Returns false (nothing done: fail_batch fails them all) when the store named nothing (the
 * writer's marker moved, or an answer it could not read) or out of memory. */
static bool retry_innocent(struct fatia_apiserver *s, struct batch *b)
{
    struct batch *also = s->filling, *next;
    struct wtxn *lists[2] = {b->txns, also ? also->txns : NULL};
    struct wtxn *failed = NULL, **failed_tail = &failed, *tx, *txnext;
    FATIA_VEC(struct touched) touched = {0};
    size_t j = 0, nops = 0, nfailed = 0, nretried = 0, named = 0;
    bool fence_moved = false;

    for (tx = b->txns; tx; tx = tx->next)
        for (size_t i = 0; i < tx->ops.n; i++, j++)
            if (b->ops.v[j].conflict && !tx->ops.v[i].e->doomed) {
                tx->ops.v[i].e->doomed = 1;
                named++;
            }
    if (j < b->ops.n && b->ops.v[j].compare_only && b->ops.v[j].conflict) {
        fence_moved = true;
        named++;
    }
    for (int k = 0; k < 2; k++)
        for (tx = lists[k]; tx; tx = tx->next) {
            nops += tx->ops.n;
            for (size_t i = 0; i < tx->ops.n; i++)
                if (FATIA_VEC_PUSH(&touched, ((struct touched){tx->ops.v[i].t, tx->ops.v[i].e})) <
                    0)
                    goto out_undo;
        }
    next = named ? fatia_calloc(1, sizeof(*next)) : NULL;
    if (!next || FATIA_VEC_RESERVE(&next->ops, nops) < 0) {
        if (next)
            batch_free(next);
        goto out_undo;
    }
    next->txns_tail = &next->txns;

    /* sort: in commit order, so that a transaction built on a failing one fails too */
    for (int k = 0; k < 2; k++)
        for (tx = lists[k]; tx; tx = txnext) {
            bool fenced_out = tx->fenced && (fence_moved || fatia_api_fence_check(s) < 0);
            bool fail = fenced_out;
            txnext = tx->next;
            tx->err = -FATIA_E_CONFLICT;
            for (size_t i = 0; i < tx->ops.n; i++) {
                const struct wop *op = &tx->ops.v[i];
                fail = fail || op->e->doomed;
                /* a create that lost to another replica's: the name is taken */
                if (op->e->doomed == 1 && op->type == FATIA_STORE_ADDED && !op->prev)
                    tx->err = -FATIA_E_EXISTS;
            }
            if (!fail) {
                batch_add(next, tx);
                nretried++;
                continue;
            }
            for (size_t i = 0; i < tx->ops.n; i++)
                if (!tx->ops.v[i].e->doomed)
                    tx->ops.v[i].e->doomed = 2;
            /* built on a version another replica replaced: it may run again on the winner's
             * (rerun.c), not when the fence moved (a deposed leader's write) */
            if (!fenced_out && tx->err == -FATIA_E_CONFLICT)
                tx->stale_rv = b->sb.revision;
            tx->next = NULL;
            *failed_tail = tx;
            failed_tail = &tx->next;
            nfailed++;
        }

    /* every touched entry: back to committed, then the surviving ops replayed on it */
    for (size_t i = 0; i < touched.n; i++) {
        struct entry *e = touched.v[i].e;
        e->pending = 0;
        e->doomed = 0;
        fatia_api_objver_unref(e->latest);
        e->latest = fatia_api_objver_ref(e->committed);
    }
    for (tx = next->txns; tx; tx = tx->next)
        for (size_t i = 0; i < tx->ops.n; i++) {
            struct wop *op = &tx->ops.v[i];
            op->e->pending++;
            fatia_api_objver_unref(op->e->latest);
            op->e->latest = op->type == FATIA_STORE_DELETED ? NULL : fatia_api_objver_ref(op->ver);
        }
    /* the failed ops no longer own entry state: drop them, then the entries nothing holds */
    for (tx = failed; tx; tx = tx->next)
        drop_ops(tx);
    remove_touched(touched.v, touched.n);
    FATIA_VEC_RELEASE(&touched);

    s->commit_conflicts++;
    s->conflict_failed += nfailed;
    s->conflict_retried += nretried;
    if (s->commit_conflicts == 1 || s->commit_conflicts % 100 == 0)
        fatia_warn("store: a commit was refused, %zu object%s changed by another replica: %zu "
                   "transaction%s failed (409), %zu go again (%" PRIu64 " such commits so far)",
                   named, named == 1 ? "" : "s", nfailed, nfailed == 1 ? "" : "s", nretried,
                   s->commit_conflicts);
    s->inflight = NULL;
    s->filling = next->txns ? next : NULL;
    if (!next->txns)
        batch_free(next);
    batch_free(b);
    batch_free(also);
    /* answered last: an answer may start writes, which join the new filling batch */
    for (tx = failed; tx; tx = txnext) {
        txnext = tx->next;
        tx->done(s, tx, tx->err);
        fatia_api_wtxn_free(tx);
    }
    return true;

out_undo:
    FATIA_VEC_RELEASE(&touched);
    for (tx = b->txns; tx; tx = tx->next)
        for (size_t i = 0; i < tx->ops.n; i++)
            tx->ops.v[i].e->doomed = 0;
    return false;
}

void fatia_api_batch_finish(struct fatia_apiserver *s, struct batch *b)
{
    struct wtxn *tx, *next;

    s->inflight = NULL;
    if (b->sb.result == -FATIA_E_CONFLICT && s->replica && retry_innocent(s, b))
        return;
    if (b->sb.result < 0) {
        fail_batch(s, b, b->sb.result);
        return;
    }
    if (s->replica)
        /* the versions get etcd's revision before anyone sees them */
        for (tx = b->txns; tx; tx = tx->next)
            for (size_t i = 0; i < tx->ops.n; i++)
                if (fatia_api_objver_set_rv(tx->ops.v[i].ver, b->sb.revision) < 0)
                    FATIA_ASSERT(!"out of memory giving a version its revision");
    for (tx = b->txns; tx; tx = tx->next) {
        for (size_t i = 0; i < tx->ops.n; i++) {
            struct wop *op = &tx->ops.v[i];
            struct entry *e = op->e;
            struct objver *old = e->committed;
            e->committed = op->type == FATIA_STORE_DELETED ? NULL : fatia_api_objver_ref(op->ver);
            if (!old && e->committed)
                op->t->n_committed++;
            else if (old && !e->committed)
                op->t->n_committed--;
            s->rv_committed = op->ver->rv;
            fatia_api_history_publish(s, op->t, op->type, op->ver, old);
            if (op->t->kind == &fatia_kind_crd)
                fatia_api_crd_committed(s, op->type, op->ver->tree);
            fatia_api_objver_unref(old);
            e->pending--;
        }
    }
    /* Entries are dropped only after every op of the batch ran: a later op may name one. */
    for (tx = b->txns; tx; tx = tx->next)
        for (size_t i = 0; i < tx->ops.n; i++)
            if (tx->ops.v[i].e && !tx->ops.v[i].e->pending && !tx->ops.v[i].e->committed &&
                !tx->ops.v[i].e->latest) {
                struct entry *e = tx->ops.v[i].e;
                /* forget the pointer in later ops before freeing */
                for (struct wtxn *u = tx; u; u = u->next)
                    for (size_t j = 0; j < u->ops.n; j++)
                        if (u->ops.v[j].e == e)
                            u->ops.v[j].e = NULL;
                fatia_api_rtable_maybe_remove(tx->ops.v[i].t, e);
            }
    for (tx = b->txns; tx; tx = next) {
        next = tx->next;
        tx->done(s, tx, 0);
        fatia_api_wtxn_free(tx);
    }
    batch_free(b);
}

void fatia_api_store_after(struct fatia_apiserver *s)
{
    kick(s);
    if (s->shutting_down && fatia_api_server_idle(s) && s->shutdown_done) {
        void (*done)(void *) = s->shutdown_done;
        s->shutdown_done = NULL;
        done(s->shutdown_arg);
    }
}

void fatia_api_store_event_cb(int fd, short what, void *arg)
{
    struct fatia_apiserver *s = arg;
    struct fatia_store_batch *sb;

    (void)fd;
    (void)what;
    while ((sb = fatia_store_reap(s->store))) {
        struct batch *b = sb->user;
        if (!s->replica || sb->result < 0) {
            fatia_api_batch_finish(s, b);
            continue;
        }
        /* replica mode: published once the watch has brought every revision before it */
        b->reaped = true;
        if (s->own_rv == sb->revision) {
            s->own_rv = 0;
            fatia_api_batch_finish(s, b);
        }
    }
    if (s->replica) {
        fatia_api_replica_drain(s);
        return; /* the drain ran fatia_api_store_after */
    }
    kick(s);
    if (s->shutting_down && fatia_api_server_idle(s) && s->shutdown_done) {
        void (*done)(void *) = s->shutdown_done;
        s->shutdown_done = NULL;
        done(s->shutdown_arg);
    }
}
