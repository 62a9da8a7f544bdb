/*
 * store/store.c: SQLite object store, watch log and group-commit writer (see store.h).
 *
 * Schema (PRAGMA application_id = "fati", PRAGMA user_version = 1):
 *     objects(id INTEGER PRIMARY KEY, grp, kind, namespace, name, uid, rv, json)
 *         UNIQUE (grp, kind, namespace, name)
 *     log(rv INTEGER PRIMARY KEY, type, grp, kind, namespace, name, json)
 *     meta(key TEXT PRIMARY KEY, value)          -- 'rv': the highest committed rv
 * Rows hold objects of about 2 KB, so objects keeps a rowid (WITHOUT ROWID tables suit small
 * rows only) and a unique index for the identity. Migrations are a list of SQL scripts indexed by
 * the version they lead to; a store newer than this binary is refused rather than guessed at.
 * The migrations and the application_id commit in one transaction, so a store is either what it
 * was or marked and current. identify() tells the cases apart before anything is written:
 *
 *     application_id "fati"                     ours: migrate up to SCHEMA_VERSION (or refuse a newer)
 *     application_id 0, no tables, version 0   new: create and mark
 *     application_id 0, version 1.., our tables a store of an earlier release: mark and migrate
 *     anything else                             refused, saying what it is
 *
 * A zero-length file is refused before SQLite opens it (SQLite would take it for a new database):
 * fatiad's first act on a new store is the switch to WAL, which writes the header, so an empty
 * store.db was truncated or made by something else. (A crash in the instant between SQLite
 * creating the file and that switch leaves an empty one too: the message says to remove it.)
 *
 * Writer thread, the only state machine here:
 *
 *     submit() --> [pending queue] --writer takes all--> BEGIN; ops...; COMMIT (fsync)
 *                                                                |
 *     reap()  <-- [done queue] <-- result set, eventfd written --+
 *
 * On etcd the batches taken are cut into transactions that fit etcd's request limits
 * (fatia_store_fill_add, between batches; SQLite takes them all in one), committed in order.
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
 *
 * NOSPACE (store.h, "Full disk"): the reserve file and the alarm belong to the writer thread
 * (and to whoever holds the connection before it starts); the alarm flag is atomic so that the
 * loop thread can read it, and so is the reserve's allocated size (fatiad's /metrics).
 * Releasing the reserve a quarter at a time, only for deleting batches, keeps most of it for the
 * next delete when a process keeps filling the disk; deleting the whole file at once (etcd's
 * way) would hand it all to the first writer that comes along. Rejected: a statvfs threshold
 * that raises the alarm before SQLite fails (racy, and the space a commit needs is not known in
 * advance); SQLite's max_page_count (limits the database only, not the WAL).
 */
#include "base/compat.h"

#include "store/store.h"

#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "store/etcd.h"

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
    struct fatia_store_etcd *etcd; /* the etcd backend (etcd.h), or NULL: SQLite */
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

    /* NOSPACE: owned by the connection's owner (the writer thread once started) */
    int reserve_fd;                /* -1: no reserve */
    uint64_t reserve_want;         /* opts->reserve_bytes */
    _Atomic uint64_t reserve_have; /* allocated now (written by the owner, read by any thread) */
    atomic_bool nospace;
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

static int db_query_u64(sqlite3 *db, const char *sql, uint64_t *ret)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);

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

static int query_u64(struct fatia_store *s, const char *sql, uint64_t *ret)
{
    return db_query_u64(s->db, sql, ret);
}

/* An empty regular file is no store (see the top). 0 for a file with content, or none. */
static int check_file(const char *path, char *why, size_t why_n)
{
    struct stat st;
    char wal[4200];

    if (!strcmp(path, ":memory:"))
        return 0;
    if (stat(path, &st) < 0)
        return errno == ENOENT ? 0 : -errno;
    if (!S_ISREG(st.st_mode)) {
        say(why, why_n, "'%s' is not a regular file: not a fatia store", path);
        return -FATIA_E_CORRUPT;
    }
    if (st.st_size > 0)
        return 0;
    snprintf(wal, sizeof(wal), "%s-wal", path);
    if (stat(wal, &st) == 0 && st.st_size > 0)
        return 0; /* SQLite's to judge: the WAL may hold the first commits */
    say(why, why_n,
        "'%s' is empty (0 bytes): not a fatia store (a store is never empty once fatiad has "
        "opened it; it was truncated, or made by something else). Restore a backup (fatia "
        "restore), or remove the file to start an empty cluster",
        path);
    return -FATIA_E_CORRUPT;
}

/* What the opened database is (see the top): sets *ret_version and *ret_mark (not marked as
 * ours yet), or refuses with why. */
static int identify(sqlite3 *db, const char *path, uint64_t *ret_version, bool *ret_mark, char *why,
                    size_t why_n)
{
    uint64_t app, version, tables, ours;
    int r;

    r = db_query_u64(db, "PRAGMA application_id", &app);
    if (r == -FATIA_E_CORRUPT) {
        say(why, why_n, "'%s' is not a SQLite database: not a fatia store", path);
        return r;
    }
    if (r == 0)
        r = db_query_u64(db, "PRAGMA user_version", &version);
    if (r == 0)
        r = db_query_u64(db, "SELECT count(*) FROM sqlite_master", &tables);
    if (r == 0)
        r = db_query_u64(db,
                         "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN"
                         " ('objects', 'log', 'meta')",
                         &ours);
    if (r < 0) {
        say(why, why_n, "'%s': cannot read the database's header: %s", path, fatia_strerror(r));
        return r;
    }
    app &= 0xffffffffu;
    if (app == FATIA_STORE_APPLICATION_ID) {
        if (version > SCHEMA_VERSION || version == 0) {
            say(why, why_n,
                "'%s' has store schema version %" PRIu64 "; this fatia knows versions 1 to %d "
                "(%s)",
                path, version, SCHEMA_VERSION,
                version ? "made by a newer fatia release: run that one, or restore a backup"
                        : "damaged header");
            return -FATIA_E_CORRUPT;
        }
        *ret_version = version;
        *ret_mark = false;
        return 0;
    }
    if (app != 0) {
        say(why, why_n,
            "'%s' is the SQLite database of another application (application_id 0x%08" PRIx64
            "), not a fatia store",
            path, app);
        return -FATIA_E_CORRUPT;
    }
    if (tables == 0 && version == 0) {
        *ret_version = 0; /* new */
        *ret_mark = true;
        return 0;
    }
    if (version >= 1 && version <= SCHEMA_VERSION && ours == 3) {
        *ret_version = version; /* an earlier release's, before the application_id */
        *ret_mark = true;
        return 0;
    }
    say(why, why_n,
        "'%s' is a SQLite database but not a fatia store (application_id 0, user_version %" PRIu64
        ", %" PRIu64 " schema objects, not fatia's tables objects, log and meta)",
        path, version, tables);
    return -FATIA_E_CORRUPT;
}

static int migrate(struct fatia_store *s, const char *path, char *why, size_t why_n)
{
    uint64_t version;
    bool mark;
    char sql[64];
    int r;

    r = identify(s->db, path, &version, &mark, why, why_n);
    if (r < 0)
        return r;
    if (s->read_only) {
        if (version == SCHEMA_VERSION)
            return 0;
        say(why, why_n, "'%s' has store schema version %" PRIu64 " and is opened read-only", path,
            version);
        return -FATIA_E_CORRUPT;
    }
    if (version == SCHEMA_VERSION && !mark)
        return 0;
    if (mark && version)
        fatia_info("store: '%s' was made by an earlier fatia release (schema %" PRIu64
                   ", no application_id): marking it and upgrading it in place",
                   path, version);
    r = exec(s, "BEGIN IMMEDIATE");
    if (r < 0)
        goto out_fail;
    for (uint64_t v = version + 1; v <= SCHEMA_VERSION && r == 0; v++)
        r = exec(s, migrations[v]);
    snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", SCHEMA_VERSION);
    if (r == 0)
        r = exec(s, sql);
    snprintf(sql, sizeof(sql), "PRAGMA application_id = %d", FATIA_STORE_APPLICATION_ID);
    if (r == 0)
        r = exec(s, sql);
    if (r == 0)
        r = exec(s, "COMMIT");
    if (r < 0) {
        exec(s, "ROLLBACK");
        goto out_fail;
    }
    return 0;

out_fail:
    say(why, why_n, "'%s': cannot create or upgrade the store's schema: %s", path,
        fatia_strerror(r));
    return r;
}

/* ---- NOSPACE reserve ---- */

static uint64_t reserve_allocated(int fd)
{
    struct stat st;

    return fstat(fd, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
}

/* Grows the reserve to its full size. 0, or -ENOSPC (what could be had is kept). */
static int reserve_fill(struct fatia_store *s)
{
    int e = posix_fallocate(s->reserve_fd, 0, (off_t)s->reserve_want);

    if (e == 0) {
        s->reserve_have = s->reserve_want;
        return 0;
    }
    s->reserve_have = reserve_allocated(s->reserve_fd);
    if (s->reserve_have > s->reserve_want)
        s->reserve_have = s->reserve_want;
    return -e;
}

static int reserve_open(struct fatia_store *s, const char *path, char *why, size_t why_n)
{
    char rpath[4200];
    int r;

    snprintf(rpath, sizeof(rpath), "%s.reserve", path);
    s->reserve_fd = open(rpath, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (s->reserve_fd < 0) {
        r = -errno;
        say(why, why_n, "cannot create the store's disk reserve '%s': %s", rpath,
            fatia_strerror(r));
        return r;
    }
    r = reserve_fill(s);
    if (r == -ENOSPC) {
        fatia_warn("store: no space for the %" PRIu64 " bytes of the disk reserve '%s' (%" PRIu64
                   " had): NOSPACE alarm raised, only deletes are accepted until space is freed",
                   s->reserve_want, rpath, s->reserve_have);
        atomic_store(&s->nospace, true);
        return 0;
    }
    if (r < 0)
        say(why, why_n, "cannot allocate the store's disk reserve '%s': %s", rpath,
            fatia_strerror(r));
    return r;
}

/* Gives back a quarter of the reserve (at least a page) for a deleting batch. false when empty. */
static bool reserve_release(struct fatia_store *s)
{
    uint64_t chunk = s->reserve_want / 4 > 4096 ? s->reserve_want / 4 : 4096;
    uint64_t left = s->reserve_have > chunk ? s->reserve_have - chunk : 0;

    if (s->reserve_fd < 0 || s->reserve_have == 0)
        return false;
    if (ftruncate(s->reserve_fd, (off_t)left) < 0)
        return false;
    fatia_warn("store: out of disk space: released %" PRIu64 " bytes of the reserve for a delete "
               "(%" PRIu64 " left)",
               s->reserve_have - left, left);
    s->reserve_have = left;
    return true;
}

/* While the alarm is raised: once the filesystem has room for the missing part of the reserve
 * and the whole reserve again, refills it and clears the alarm. */
static void reserve_try_recover(struct fatia_store *s)
{
    struct statvfs v;
    uint64_t avail;

    if (s->etcd && atomic_load(&s->nospace)) {
        /* etcd's alarm is etcd's: ours follows it */
        if (fatia_store_etcd_check(s->etcd) == 0) {
            atomic_store(&s->nospace, false);
            fatia_info("store: etcd raises no alarm any more: NOSPACE cleared, writes accepted");
        }
        return;
    }
    if (s->reserve_fd < 0 || !atomic_load(&s->nospace) || fstatvfs(s->reserve_fd, &v) < 0)
        return;
    avail = (uint64_t)v.f_bavail * v.f_frsize;
    if (avail < s->reserve_want - s->reserve_have + s->reserve_want)
        return;
    if (reserve_fill(s) < 0)
        return;
    atomic_store(&s->nospace, false);
    fatia_info("store: disk space is back (%" PRIu64 " bytes free): the reserve is whole again, "
               "NOSPACE alarm cleared, writes are accepted",
               avail);
}

bool fatia_store_nospace(const struct fatia_store *s)
{
    return atomic_load(&((struct fatia_store *)s)->nospace);
}

void fatia_store_reserve(const struct fatia_store *s, uint64_t *have, uint64_t *want)
{
    struct fatia_store *m = (struct fatia_store *)s;

    *have = m->reserve_fd < 0 ? 0 : atomic_load(&m->reserve_have);
    *want = m->reserve_fd < 0 ? 0 : m->reserve_want;
}

int fatia_store_open(const char *path, const struct fatia_store_opts *opts,
                     struct fatia_store **ret)
{
    struct fatia_store *s = fatia_calloc(1, sizeof(*s));
    char *why = opts ? opts->why : NULL;
    size_t why_n = opts ? opts->why_n : 0;
    int flags, rc, r;

    if (why && why_n)
        why[0] = '\0';
    if (!s)
        return -ENOMEM;
    s->read_only = opts && opts->read_only;
    s->log_keep = opts && opts->log_keep ? opts->log_keep : 100000;
    s->done_fd = -1;
    s->reserve_fd = -1;
    atomic_init(&s->nospace, false);
    s->pending_tail = &s->pending;
    s->done_tail = &s->done;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->wake, NULL);
    pthread_cond_init(&s->ckpt_wake, NULL);
    if (opts && opts->etcd_endpoints) {
        r = fatia_store_etcd_open(opts, &s->etcd, &s->rv, why, why_n);
        if (r < 0)
            goto out_close;
        if (!s->read_only) {
            s->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
            if (s->done_fd < 0) {
                r = -errno;
                goto out_close;
            }
        }
        *ret = s;
        return 0;
    }
    if (!s->read_only && strcmp(path, ":memory:") != 0) {
        s->path = fatia_strdup(path);
        if (!s->path) {
            fatia_store_close(s);
            return -ENOMEM;
        }
    }

    r = check_file(path, why, why_n);
    if (r < 0)
        goto out_close;
    flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE |
            (s->read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    rc = sqlite3_open_v2(path, &s->db, flags, NULL);
    if (rc != SQLITE_OK) {
        r = map_sqlite(rc);
        say(why, why_n, "cannot open '%s': %s", path, sqlite3_errstr(rc));
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
            if (r == -FATIA_E_CORRUPT)
                say(why, why_n, "'%s' is not a SQLite database: not a fatia store", path);
            else
                say(why, why_n, "'%s': cannot switch to WAL mode: %s", path, fatia_strerror(r));
            goto out_close;
        }
        sqlite3_free_table(res);
        r = exec(s, opts && opts->sync_normal ? "PRAGMA synchronous=NORMAL"
                                              : "PRAGMA synchronous=FULL");
        if (r < 0)
            goto out_close;
    }
    r = migrate(s, path, why, why_n);
    if (r < 0)
        goto out_close;
    r = query_u64(s, "SELECT value FROM meta WHERE key = 'rv'", &s->rv);
    if (r < 0) {
        say(why, why_n, "'%s': cannot read the store's resourceVersion (meta 'rv'): %s", path,
            fatia_strerror(r));
        goto out_close;
    }
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
        if (s->path && opts && opts->reserve_bytes) {
            s->reserve_want = opts->reserve_bytes;
            r = reserve_open(s, path, why, why_n);
            if (r < 0)
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
    fatia_store_etcd_close(s->etcd);
    for (int i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(s->st[i]);
    if (s->ckpt_db)
        sqlite3_close(s->ckpt_db);
    if (s->db)
        sqlite3_close(s->db);
    if (s->done_fd >= 0)
        close(s->done_fd);
    if (s->reserve_fd >= 0)
        close(s->reserve_fd);
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
            if (r == -FATIA_E_CORRUPT)
                fatia_error("store: %s row %s/%s %s/%s (rv %" PRIu64 "): a column is NULL",
                            log ? "log" : "objects", row.group ? row.group : "(null)",
                            row.kind ? row.kind : "(null)", row.ns ? row.ns : "(null)",
                            row.name ? row.name : "(null)", row.rv);
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
    if (s->etcd)
        return fatia_store_etcd_load(s->etcd, cb, arg);
    return walk(s,
                "SELECT grp, kind, namespace, name, uid, rv, json FROM objects"
                " ORDER BY grp, kind, namespace, name",
                false, 0, cb, arg);
}

int fatia_store_load_log(struct fatia_store *s, uint64_t after,
                         int (*cb)(void *arg, const struct fatia_store_row *row), void *arg)
{
    FATIA_ASSERT(!s->thread_running);
    if (s->etcd)
        return fatia_store_etcd_load_log(s->etcd, after, cb, arg);
    return walk(s,
                "SELECT rv, type, grp, kind, namespace, name, json FROM log WHERE rv > ?1"
                " ORDER BY rv",
                true, after, cb, arg);
}

uint64_t fatia_store_log_first(struct fatia_store *s)
{
    uint64_t v = 0;

    FATIA_ASSERT(!s->thread_running);
    if (s->etcd)
        return fatia_store_etcd_log_first(s->etcd);
    if (query_u64(s, "SELECT min(rv) FROM log", &v) < 0)
        return 0;
    return v;
}

int fatia_store_changes_fd(const struct fatia_store *s)
{
    return s->etcd ? fatia_store_etcd_changes_fd(s->etcd) : -1;
}

int fatia_store_next_change(struct fatia_store *s, struct fatia_store_change *ret)
{
    return s->etcd ? fatia_store_etcd_next_change(s->etcd, ret) : 0;
}

int fatia_store_check(struct fatia_store *s)
{
    char **res = NULL;
    int rows = 0, cols = 0, rc;
    bool ok;

    if (s->etcd)
        return fatia_store_etcd_check(s->etcd);
    rc = sqlite3_get_table(s->db, "PRAGMA quick_check", &res, &rows, &cols, NULL);
    if (rc != SQLITE_OK)
        return map_sqlite(rc);
    ok = rows == 1 && res[1] && !strcmp(res[1], "ok");
    sqlite3_free_table(res);
    return ok ? 0 : -FATIA_E_CORRUPT;
}

/* ---- backup ---- */

static int fsync_path(const char *path, bool dir)
{
    int fd = open(path, (dir ? O_RDONLY | O_DIRECTORY : O_RDWR) | O_CLOEXEC);
    int r = 0;

    if (fd < 0)
        return -errno;
    if (fsync(fd) < 0)
        r = -errno;
    close(fd);
    return r;
}

int fatia_store_backup(const char *src, const char *dst, char *why, size_t why_n)
{
    int flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE;
    sqlite3 *from = NULL, *to = NULL;
    sqlite3_backup *b;
    char tmp[4200], dir[4200], *slash;
    uint64_t version;
    bool mark;
    int rc, r;

    if (why && why_n)
        why[0] = '\0';
    r = check_file(src, why, why_n);
    if (r < 0)
        return r;
    /* read-write but never written: a read-only connection cannot create the -shm of a store
     * that no fatiad holds open, and a WAL reader needs it */
    rc = sqlite3_open_v2(src, &from, flags | SQLITE_OPEN_READWRITE, NULL);
    if (rc != SQLITE_OK) {
        say(why, why_n, "cannot open '%s': %s", src, sqlite3_errstr(rc));
        r = map_sqlite(rc);
        goto out;
    }
    sqlite3_busy_timeout(from, 5000);
    r = identify(from, src, &version, &mark, why, why_n);
    if (r < 0)
        goto out;
    if (version == 0) {
        say(why, why_n, "'%s' holds no store (a new, empty database)", src);
        r = -FATIA_E_CORRUPT;
        goto out;
    }
    snprintf(tmp, sizeof(tmp), "%s.tmp", dst);
    (void)unlink(tmp);
    rc = sqlite3_open_v2(tmp, &to, flags | SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc != SQLITE_OK) {
        say(why, why_n, "cannot create '%s': %s", tmp, sqlite3_errstr(rc));
        r = map_sqlite(rc);
        goto out;
    }
    /* the copy is a plain rollback-journal file: one file, whatever the source's journal mode */
    b = sqlite3_backup_init(to, "main", from, "main");
    if (!b) {
        r = map_sqlite(sqlite3_errcode(to));
        say(why, why_n, "cannot copy '%s': %s", src, sqlite3_errmsg(to));
        goto out;
    }
    do
        rc = sqlite3_backup_step(b, -1); /* one read transaction: the state at one commit */
    while (rc == SQLITE_BUSY || rc == SQLITE_LOCKED);
    sqlite3_backup_finish(b);
    if (rc != SQLITE_DONE) {
        r = map_sqlite(rc);
        say(why, why_n, "copying '%s' to '%s': %s", src, tmp, sqlite3_errstr(rc));
        goto out;
    }
    if (sqlite3_exec(to, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL) != SQLITE_OK) {
        r = -EIO;
        say(why, why_n, "'%s': %s", tmp, sqlite3_errmsg(to));
        goto out;
    }
    {
        char **res = NULL;
        int rows = 0, cols = 0;
        bool ok;
        rc = sqlite3_get_table(to, "PRAGMA quick_check", &res, &rows, &cols, NULL);
        ok = rc == SQLITE_OK && rows == 1 && res[1] && !strcmp(res[1], "ok");
        sqlite3_free_table(res);
        if (!ok) {
            r = -FATIA_E_CORRUPT;
            say(why, why_n, "the copy '%s' fails SQLite's quick_check", tmp);
            goto out;
        }
    }
    sqlite3_close(to);
    to = NULL;
    r = fsync_path(tmp, false);
    if (r == 0 && rename(tmp, dst) < 0)
        r = -errno;
    if (r < 0) {
        say(why, why_n, "cannot put the copy in place as '%s': %s", dst, fatia_strerror(r));
        goto out;
    }
    snprintf(dir, sizeof(dir), "%s", dst);
    slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    (void)fsync_path(slash ? dir : ".", true);

out:
    if (to) {
        sqlite3_close(to);
        (void)unlink(tmp);
    }
    sqlite3_close(from);
    return r;
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

    if (s->etcd)
        return fatia_store_etcd_commit(s->etcd, first, &s->rv);
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

/* Every op of the batches is part of a deletion (store.h, fatia_store_op.deleting). */
static bool batch_deleting(const struct fatia_store_batch *b)
{
    for (; b; b = b->next)
        for (size_t i = 0; i < b->n; i++)
            if (!b->ops[i].deleting && b->ops[i].type != FATIA_STORE_DELETED)
                return false;
    return true;
}

bool fatia_store_fill_add(const struct fatia_store *s, struct fatia_store_fill *f,
                          const struct fatia_store_op *ops, size_t n)
{
    if (!s->etcd)
        return true; /* SQLite: one transaction takes any number of batches */
    return fatia_store_etcd_fill_add(s->etcd, f, ops, n);
}

/* Cuts the chain from first after the batches that fit in one commit (at least one; solo: only
 * one) and returns the rest, or NULL. */
static struct fatia_store_batch *cut_commit(const struct fatia_store *s,
                                            struct fatia_store_batch *first, bool solo)
{
    struct fatia_store_fill f = {0};
    struct fatia_store_batch *b = first, *rest;

    (void)fatia_store_fill_add(s, &f, b->ops, b->n);
    while (b->next && !solo && fatia_store_fill_add(s, &f, b->next->ops, b->next->n))
        b = b->next;
    rest = b->next;
    b->next = NULL;
    return rest;
}

static void *writer_main(void *arg)
{
    struct fatia_store *s = arg;
    struct fatia_store_batch *batch, *last, *todo = NULL;
    uint64_t one = 1;
    size_t nb, nops, solo = 0;
    int r;

    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!todo && !s->pending && !s->stopping) {
            if (atomic_load(&s->nospace)) {
                /* the alarm: look at the free space every second */
                fatia_usec_t t = fatia_now_real_usec() + FATIA_USEC_PER_SEC;
                struct timespec ts = {.tv_sec = t / FATIA_USEC_PER_SEC,
                                      .tv_nsec = (long)(t % FATIA_USEC_PER_SEC) * 1000};
                pthread_cond_timedwait(&s->wake, &s->lock, &ts);
                pthread_mutex_unlock(&s->lock);
                reserve_try_recover(s);
                pthread_mutex_lock(&s->lock);
            } else {
                pthread_cond_wait(&s->wake, &s->lock);
            }
        }
        if (!todo) {
            if (!s->pending)
                break; /* stopping, and nothing left to commit */
            todo = s->pending;
            s->pending = NULL;
            s->pending_tail = &s->pending;
        }
        pthread_mutex_unlock(&s->lock);

        /* etcd: as many batches as one request may hold (SQLite: all); the rest next round */
        batch = todo;
        todo = cut_commit(s, batch, solo > 0);
        if (solo)
            solo--;
        reserve_try_recover(s);
        r = commit_ops(s, batch);
        if (r == -EFBIG && s->etcd && batch->next) {
            /* refused as too large, nothing written: the limits fatiad was given are above
             * etcd's. These batches go again one at a time, so only one too large fails. */
            for (last = batch, nb = 0; last->next; last = last->next)
                nb++;
            fatia_warn("store: etcd refused a commit of %zu batches as too large; committing them "
                       "one by one (is --etcd-max-request-bytes or --etcd-max-txn-ops above "
                       "etcd's own limit?)",
                       nb + 1);
            last->next = todo;
            todo = batch;
            solo = nb + 1;
            pthread_mutex_lock(&s->lock);
            continue;
        }
        if (r == -ENOSPC && (s->reserve_fd >= 0 || s->etcd)) {
            if (!atomic_exchange(&s->nospace, true))
                fatia_warn("store: out of disk space: NOSPACE alarm raised; reads and deletes "
                           "go on, other writes are refused until space is freed");
            while (r == -ENOSPC && batch_deleting(batch) && reserve_release(s))
                r = commit_ops(s, batch);
        }
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
