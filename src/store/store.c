/*
 * store/store.c: SQLite object store, watch log and group-commit writer (see store.h).
 *
 * Schema (PRAGMA user_version = 1):
 *     objects(id INTEGER PRIMARY KEY, grp, kind, namespace, name, uid, rv, json)
 *         UNIQUE (grp, kind, namespace, name)
 *     log(rv INTEGER PRIMARY KEY, type, grp, kind, namespace, name, json)
 *     meta(key TEXT PRIMARY KEY, value)          -- 'rv': the highest committed rv
 * Rows hold objects of about 2 KB, so objects keeps a rowid (WITHOUT ROWID tables suit small
 * rows only) and a unique index for the identity. Migrations are a list of SQL scripts indexed by
 * the version they lead to; a store newer than this binary is refused rather than guessed at.
 *
 * Writer thread, the only state machine here:
 *
 *     submit() --> [pending queue] --writer takes all--> BEGIN; ops...; COMMIT (fsync)
 *                                                                |
 *     reap()  <-- [done queue] <-- result set, eventfd written --+
 *
 * A failed transaction is rolled back and every batch in it gets the error; the writer goes on
 * with later batches (the API server decides whether to continue). The mutex guards only the two
 * queues and the stop flags; SQLite runs outside it.
 *
 * Checkpoints run on a thread of their own, with a connection of its own: the writer's WAL hook
 * wakes it once the WAL holds CKPT_FRAMES frames, and it copies them into the database with a
 * PASSIVE checkpoint, which never blocks the writer. SQLite's automatic checkpoint would run inside
 * the writer's COMMIT and hold every write behind it for the time of the copy and its fsync (the
 * p99 of creates under load). Should the checkpointer fall far behind (CKPT_FRAMES_MAX), the
 * writer checkpoints itself, as SQLite would, so that the WAL stays bounded.
 */
#include "base/compat.h"

#include "store/store.h"

#include <sys/eventfd.h>

#include <pthread.h>
#include <sqlite3.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/error.h"

#define SCHEMA_VERSION  1
#define CKPT_FRAMES     1000  /* SQLite's own wal_autocheckpoint default */
#define CKPT_FRAMES_MAX 32768 /* 128 MiB of 4 KiB pages: the writer checkpoints itself */

static const char *const migrations[SCHEMA_VERSION + 1] = {
    NULL,
    /* 0 -> 1 */
    "CREATE TABLE objects(id INTEGER PRIMARY KEY, grp TEXT NOT NULL, kind TEXT NOT NULL,"
    " namespace TEXT NOT NULL, name TEXT NOT NULL, uid TEXT NOT NULL, rv INTEGER NOT NULL,"
    " json TEXT NOT NULL);"
    "CREATE UNIQUE INDEX objects_identity ON objects(grp, kind, namespace, name);"
    "CREATE TABLE log(rv INTEGER PRIMARY KEY, type INTEGER NOT NULL, grp TEXT NOT NULL,"
    " kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, json TEXT NOT NULL);"
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value);"
    "INSERT INTO meta(key, value) VALUES ('rv', 0);",
};

enum stmt_id {
    ST_UPSERT,
    ST_DELETE,
    ST_LOG,
    ST_SET_RV,
    ST_PRUNE,
    ST_BEGIN,
    ST_COMMIT,
    ST_ROLLBACK,
    ST_COUNT,
};

static const char *const stmt_sql[ST_COUNT] = {
    [ST_UPSERT] = "INSERT INTO objects(grp, kind, namespace, name, uid, rv, json)"
                  " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
                  " ON CONFLICT(grp, kind, namespace, name) DO UPDATE SET"
                  " uid = excluded.uid, rv = excluded.rv, json = excluded.json",
    [ST_DELETE] = "DELETE FROM objects WHERE grp = ?1 AND kind = ?2 AND namespace = ?3"
                  " AND name = ?4",
    [ST_LOG] = "INSERT INTO log(rv, type, grp, kind, namespace, name, json)"
               " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [ST_SET_RV] = "UPDATE meta SET value = ?1 WHERE key = 'rv'",
    [ST_PRUNE] = "DELETE FROM log WHERE rv <= ?1",
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
};

struct fatia_store {
    sqlite3 *db;
    sqlite3_stmt *st[ST_COUNT];
    uint64_t rv; /* highest committed; written by whoever owns the connection */
    uint64_t log_keep;
    uint64_t pruned_at; /* rv of the last prune */
    bool read_only;

    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    bool thread_running;
    bool stopping;
    struct fatia_store_batch *pending, **pending_tail;
    struct fatia_store_batch *done, **done_tail;
    int done_fd;

    struct fatia_store_stats stats; /* under lock */

    char *path;       /* for the checkpointer's connection; NULL for ":memory:" */
    sqlite3 *ckpt_db; /* the checkpointer's connection */
    pthread_t ckpt_thread;
    pthread_cond_t ckpt_wake;
    bool ckpt_running, ckpt_wanted; /* under lock */
};

static int map_sqlite(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_DONE:
    case SQLITE_ROW:
        return 0;
    case SQLITE_NOMEM:
        return -ENOMEM;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return -EBUSY;
    case SQLITE_FULL:
        return -ENOSPC;
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
        return -EACCES;
    case SQLITE_CANTOPEN:
        return -ENOENT;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        return -FATIA_E_CORRUPT;
    case SQLITE_CONSTRAINT:
        return -FATIA_E_CONFLICT;
    default:
        return -EIO;
    }
}

static int exec(struct fatia_store *s, const char *sql)
{
    return map_sqlite(sqlite3_exec(s->db, sql, NULL, NULL, NULL));
}

static int query_u64(struct fatia_store *s, const char *sql, uint64_t *ret)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);

    if (rc != SQLITE_OK)
        return map_sqlite(rc);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *ret = (uint64_t)sqlite3_column_int64(st, 0);
    else if (rc == SQLITE_DONE)
        *ret = 0;
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : map_sqlite(rc);
}

static int migrate(struct fatia_store *s)
{
    uint64_t version;
    char sql[64];
    int r;

    r = query_u64(s, "PRAGMA user_version", &version);
    if (r < 0)
        return r;
    if (version > SCHEMA_VERSION)
        return -FATIA_E_CORRUPT;
    if (s->read_only)
        return version == SCHEMA_VERSION ? 0 : -FATIA_E_CORRUPT;
    for (uint64_t v = version + 1; v <= SCHEMA_VERSION; v++) {
        r = exec(s, "BEGIN IMMEDIATE");
        if (r < 0)
            return r;
        snprintf(sql, sizeof(sql), "PRAGMA user_version = %" PRIu64, v);
        r = exec(s, migrations[v]);
        if (r == 0)
            r = exec(s, sql);
        if (r == 0)
            r = exec(s, "COMMIT");
        if (r < 0) {
            exec(s, "ROLLBACK");
            return r;
        }
    }
    return 0;
}

int fatia_store_open(const char *path, const struct fatia_store_opts *opts,
                     struct fatia_store **ret)
{
    struct fatia_store *s = fatia_calloc(1, sizeof(*s));
    int flags, rc, r;

    if (!s)
        return -ENOMEM;
    s->read_only = opts && opts->read_only;
    s->log_keep = opts && opts->log_keep ? opts->log_keep : 100000;
    s->done_fd = -1;
    s->pending_tail = &s->pending;
    s->done_tail = &s->done;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->wake, NULL);
    pthread_cond_init(&s->ckpt_wake, NULL);
    if (!s->read_only && strcmp(path, ":memory:") != 0) {
        s->path = fatia_strdup(path);
        if (!s->path) {
            fatia_store_close(s);
            return -ENOMEM;
        }
    }

    flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE |
            (s->read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    rc = sqlite3_open_v2(path, &s->db, flags, NULL);
    if (rc != SQLITE_OK) {
        r = map_sqlite(rc);
        goto out_close;
    }
    sqlite3_busy_timeout(s->db, 2000);
    if (!s->read_only && strcmp(path, ":memory:") != 0) {
        /* journal_mode answers with a row: the mode it is in now. */
        char **res = NULL;
        int rows = 0, cols = 0;
        rc = sqlite3_get_table(s->db, "PRAGMA journal_mode=WAL", &res, &rows, &cols, NULL);
        if (rc != SQLITE_OK || rows != 1 || strcmp(res[1], "wal") != 0) {
            sqlite3_free_table(res);
            r = rc != SQLITE_OK ? map_sqlite(rc) : -EIO;
            goto out_close;
        }
        sqlite3_free_table(res);
        r = exec(s, opts && opts->sync_normal ? "PRAGMA synchronous=NORMAL"
                                              : "PRAGMA synchronous=FULL");
        if (r < 0)
            goto out_close;
    }
    r = migrate(s);
    if (r < 0)
        goto out_close;
    r = query_u64(s, "SELECT value FROM meta WHERE key = 'rv'", &s->rv);
    if (r < 0)
        goto out_close;
    s->pruned_at = s->rv;
    if (!s->read_only) {
        for (int i = 0; i < ST_COUNT; i++) {
            rc = sqlite3_prepare_v3(s->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->st[i],
                                    NULL);
            if (rc != SQLITE_OK) {
                r = map_sqlite(rc);
                goto out_close;
            }
        }
        s->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (s->done_fd < 0) {
            r = -errno;
            goto out_close;
        }
    }
    *ret = s;
    return 0;

out_close:
    fatia_store_close(s);
    return r;
}

static void stop_writer(struct fatia_store *s)
{
    if (!s->thread_running && !s->ckpt_running)
        return;
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_cond_signal(&s->wake);
    pthread_cond_signal(&s->ckpt_wake);
    pthread_mutex_unlock(&s->lock);
    if (s->thread_running) {
        pthread_join(s->thread, NULL);
        s->thread_running = false;
    }
    if (s->ckpt_running) {
        pthread_join(s->ckpt_thread, NULL);
        s->ckpt_running = false;
    }
}

void fatia_store_close(struct fatia_store *s)
{
    if (!s)
        return;
    stop_writer(s);
    for (int i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(s->st[i]);
    if (s->ckpt_db)
        sqlite3_close(s->ckpt_db);
    if (s->db)
        sqlite3_close(s->db);
    if (s->done_fd >= 0)
        close(s->done_fd);
    fatia_free(s->path);
    pthread_cond_destroy(&s->ckpt_wake);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    fatia_free(s);
}

uint64_t fatia_store_rv(const struct fatia_store *s)
{
    return s->rv;
}

static void fill_row(sqlite3_stmt *st, struct fatia_store_row *row, bool log)
{
    int c = 0;

    memset(row, 0, sizeof(*row));
    if (log) {
        row->rv = (uint64_t)sqlite3_column_int64(st, c++);
        row->type = (enum fatia_store_event)sqlite3_column_int(st, c++);
    }
    row->group = (const char *)sqlite3_column_text(st, c++);
    row->kind = (const char *)sqlite3_column_text(st, c++);
    row->ns = (const char *)sqlite3_column_text(st, c++);
    row->name = (const char *)sqlite3_column_text(st, c++);
    if (!log) {
        row->uid = (const char *)sqlite3_column_text(st, c++);
        row->rv = (uint64_t)sqlite3_column_int64(st, c++);
    }
    row->json = (const char *)sqlite3_column_text(st, c);
    row->json_len = (size_t)sqlite3_column_bytes(st, c);
}

static int walk(struct fatia_store *s, const char *sql, bool log, uint64_t after,
                int (*cb)(void *arg, const struct fatia_store_row *row), void *arg)
{
    struct fatia_store_row row;
    sqlite3_stmt *st;
    int rc, r = 0;

    rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return map_sqlite(rc);
    if (log)
        sqlite3_bind_int64(st, 1, (sqlite3_int64)after);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        fill_row(st, &row, log);
        if (!row.group || !row.kind || !row.ns || !row.name || !row.json) {
            r = sqlite3_errcode(s->db) == SQLITE_NOMEM ? -ENOMEM : -FATIA_E_CORRUPT;
            break;
        }
        r = cb(arg, &row);
        if (r < 0)
            break;
    }
    if (r == 0 && rc != SQLITE_DONE)
        r = map_sqlite(rc);
    sqlite3_finalize(st);
    return r;
}

int fatia_store_load(struct fatia_store *s, int (*cb)(void *arg, const struct fatia_store_row *row),
                     void *arg)
{
    FATIA_ASSERT(!s->thread_running);
    return walk(s,
                "SELECT grp, kind, namespace, name, uid, rv, json FROM objects"
                " ORDER BY grp, kind, namespace, name",
                false, 0, cb, arg);
}

int fatia_store_load_log(struct fatia_store *s, uint64_t after,
                         int (*cb)(void *arg, const struct fatia_store_row *row), void *arg)
{
    FATIA_ASSERT(!s->thread_running);
    return walk(s,
                "SELECT rv, type, grp, kind, namespace, name, json FROM log WHERE rv > ?1"
                " ORDER BY rv",
                true, after, cb, arg);
}

uint64_t fatia_store_log_first(struct fatia_store *s)
{
    uint64_t v = 0;

    FATIA_ASSERT(!s->thread_running);
    if (query_u64(s, "SELECT min(rv) FROM log", &v) < 0)
        return 0;
    return v;
}

int fatia_store_check(struct fatia_store *s)
{
    char **res = NULL;
    int rows = 0, cols = 0, rc;
    bool ok;

    rc = sqlite3_get_table(s->db, "PRAGMA quick_check", &res, &rows, &cols, NULL);
    if (rc != SQLITE_OK)
        return map_sqlite(rc);
    ok = rows == 1 && res[1] && !strcmp(res[1], "ok");
    sqlite3_free_table(res);
    return ok ? 0 : -FATIA_E_CORRUPT;
}

static int step_reset(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);

    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc == SQLITE_DONE ? 0 : map_sqlite(rc);
}

static int apply_op(struct fatia_store *s, const struct fatia_store_op *op)
{
    sqlite3_stmt *st;
    int r;

    if (op->type == FATIA_STORE_DELETED) {
        st = s->st[ST_DELETE];
        sqlite3_bind_text(st, 1, op->group, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, op->kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, op->ns, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, op->name, -1, SQLITE_STATIC);
    } else {
        st = s->st[ST_UPSERT];
        sqlite3_bind_text(st, 1, op->group, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, op->kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, op->ns, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, op->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, op->uid ? op->uid : "", -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 6, (sqlite3_int64)op->rv);
        sqlite3_bind_text(st, 7, op->json, (int)op->json_len, SQLITE_STATIC);
    }
    r = step_reset(st);
    if (r < 0)
        return r;
    st = s->st[ST_LOG];
    sqlite3_bind_int64(st, 1, (sqlite3_int64)op->rv);
    sqlite3_bind_int(st, 2, (int)op->type);
    sqlite3_bind_text(st, 3, op->group, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, op->kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, op->ns, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, op->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 7, op->json, (int)op->json_len, SQLITE_STATIC);
    return step_reset(st);
}

/* One transaction over the ops of several batches. On failure nothing is kept and s->rv is
 * unchanged. */
static int commit_ops(struct fatia_store *s, struct fatia_store_batch *first)
{
    uint64_t rv = s->rv;
    int r;

    r = step_reset(s->st[ST_BEGIN]);
    if (r < 0)
        return r;
    for (struct fatia_store_batch *b = first; b; b = b->next) {
        for (size_t i = 0; i < b->n; i++) {
            if (b->ops[i].rv <= rv) {
                r = -EINVAL; /* resourceVersions must increase */
                goto out_rollback;
            }
            r = apply_op(s, &b->ops[i]);
            if (r < 0)
                goto out_rollback;
            rv = b->ops[i].rv;
        }
    }
    if (rv != s->rv) {
        sqlite3_bind_int64(s->st[ST_SET_RV], 1, (sqlite3_int64)rv);
        r = step_reset(s->st[ST_SET_RV]);
        if (r < 0)
            goto out_rollback;
    }
    if (rv > s->log_keep && rv - s->pruned_at >= 1024) {
        sqlite3_bind_int64(s->st[ST_PRUNE], 1, (sqlite3_int64)(rv - s->log_keep));
        r = step_reset(s->st[ST_PRUNE]);
        if (r < 0)
            goto out_rollback;
    }
    r = step_reset(s->st[ST_COMMIT]);
    if (r < 0)
        goto out_rollback;
    if (rv > s->log_keep && rv - s->pruned_at >= 1024)
        s->pruned_at = rv;
    s->rv = rv;
    return 0;

out_rollback:
    (void)step_reset(s->st[ST_ROLLBACK]);
    return r;
}

int fatia_store_commit(struct fatia_store *s, struct fatia_store_op *ops, size_t n)
{
    struct fatia_store_batch b = {.ops = ops, .n = n};

    FATIA_ASSERT(!s->thread_running);
    if (s->read_only)
        return -EROFS;
    return commit_ops(s, &b);
}

static void *writer_main(void *arg)
{
    struct fatia_store *s = arg;
    struct fatia_store_batch *batch, *last;
    uint64_t one = 1;
    size_t nb, nops;
    int r;

    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->pending && !s->stopping)
            pthread_cond_wait(&s->wake, &s->lock);
        if (!s->pending)
            break; /* stopping, and nothing left to commit */
        batch = s->pending;
        s->pending = NULL;
        s->pending_tail = &s->pending;
        pthread_mutex_unlock(&s->lock);

        r = commit_ops(s, batch);
        nb = nops = 0;
        for (last = batch;; last = last->next) {
            last->result = r;
            nb++;
            nops += last->n;
            if (!last->next)
                break;
        }

        pthread_mutex_lock(&s->lock);
        *s->done_tail = batch;
        s->done_tail = &last->next;
        s->stats.transactions++;
        s->stats.batches += nb;
        s->stats.ops += nops;
        /* An eventfd write fails only when the counter would overflow: it is readable then. */
        (void)!write(s->done_fd, &one, sizeof(one));
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* The writer's WAL hook, called after each commit with the WAL's size in frames. */
static int wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
    struct fatia_store *s = arg;

    if (frames >= CKPT_FRAMES_MAX || !s->ckpt_running) {
        /* far behind (or no checkpointer): copy here, as SQLite's autocheckpoint does */
        if (frames >= CKPT_FRAMES)
            sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        return SQLITE_OK;
    }
    if (frames >= CKPT_FRAMES) {
        pthread_mutex_lock(&s->lock);
        s->ckpt_wanted = true;
        pthread_cond_signal(&s->ckpt_wake);
        pthread_mutex_unlock(&s->lock);
    }
    return SQLITE_OK;
}

static void *ckpt_main(void *arg)
{
    struct fatia_store *s = arg;

    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->ckpt_wanted && !s->stopping)
            pthread_cond_wait(&s->ckpt_wake, &s->lock);
        if (s->stopping)
            break; /* closing the writer's connection checkpoints what is left */
        s->ckpt_wanted = false;
        pthread_mutex_unlock(&s->lock);
        /* PASSIVE: copies the frames no reader needs, never waits on the writer; a busy or
           failed checkpoint leaves the WAL as it was, and the next wake tries again */
        sqlite3_wal_checkpoint_v2(s->ckpt_db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        pthread_mutex_lock(&s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* Opens the checkpointer's connection and starts it; on any failure the writer checkpoints
 * itself (wal_hook), so this only ever makes commits faster. */
static void start_checkpointer(struct fatia_store *s)
{
    int flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE | SQLITE_OPEN_READWRITE;

    sqlite3_wal_hook(s->db, wal_hook, s);
    if (!s->path || sqlite3_open_v2(s->path, &s->ckpt_db, flags, NULL) != SQLITE_OK)
        return;
    sqlite3_busy_timeout(s->ckpt_db, 100);
    if (sqlite3_exec(s->ckpt_db, "PRAGMA synchronous=FULL", NULL, NULL, NULL) != SQLITE_OK)
        return;
    s->ckpt_running = pthread_create(&s->ckpt_thread, NULL, ckpt_main, s) == 0;
}

int fatia_store_writer_start(struct fatia_store *s)
{
    int r;

    if (s->read_only)
        return -EROFS;
    if (s->thread_running)
        return 0;
    if (s->path)
        start_checkpointer(s);
    r = pthread_create(&s->thread, NULL, writer_main, s);
    if (r != 0)
        return -r;
    s->thread_running = true;
    return 0;
}

int fatia_store_submit(struct fatia_store *s, struct fatia_store_batch *b)
{
    FATIA_ASSERT(s->thread_running);
    pthread_mutex_lock(&s->lock);
    if (s->stopping) {
        pthread_mutex_unlock(&s->lock);
        return -ESHUTDOWN;
    }
    b->next = NULL;
    b->result = 0;
    *s->pending_tail = b;
    s->pending_tail = &b->next;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    return 0;
}

int fatia_store_done_fd(const struct fatia_store *s)
{
    return s->done_fd;
}

struct fatia_store_batch *fatia_store_reap(struct fatia_store *s)
{
    struct fatia_store_batch *b;
    uint64_t n;

    pthread_mutex_lock(&s->lock);
    b = s->done;
    if (b) {
        s->done = b->next;
        if (!s->done)
            s->done_tail = &s->done;
        b->next = NULL;
    }
    if (!s->done)
        (void)!read(s->done_fd, &n, sizeof(n)); /* drain; EAGAIN when already empty */
    pthread_mutex_unlock(&s->lock);
    return b;
}

void fatia_store_get_stats(struct fatia_store *s, struct fatia_store_stats *ret)
{
    pthread_mutex_lock(&s->lock);
    *ret = s->stats;
    pthread_mutex_unlock(&s->lock);
}
