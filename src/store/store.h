/*
 * store/store.h: the durable object store (SQLite, WAL) and its watch log.
 *
 * Model: one row per object (group, kind, namespace, name, uid, resourceVersion, the JSON text of
 * the storage version) and one row per change in the log (resourceVersion, event type, identity,
 * the JSON text after the change, or the last state for a delete). resourceVersions are global,
 * assigned by the caller (the API server), and strictly increase across the batches it commits;
 * the highest committed one is kept in `meta`, so it never goes backwards even when every object
 * is deleted and the log is pruned.
 *
 * Durability: WAL mode with synchronous=FULL, so a commit returns only after the WAL is on disk;
 * an acknowledged write survives kill -9 and power loss, and recovery is SQLite's own (no repair
 * step). Group commit: the writer thread takes every batch submitted while it was busy and
 * commits them in one transaction (one fsync for all), so the API loop never waits on the disk
 * (on etcd: in as few transactions as its request limits allow, fatia_store_fill_add).
 *
 * Threads: the store's connection belongs to whoever opened it until fatia_store_writer_start;
 * from then on only the writer thread touches SQLite. The loop thread submits batches and learns
 * of their completion through an eventfd (fatia_store_done_fd) it watches, then reaps them; this
 * keeps libevent (or any loop) out of this layer. Only src/store includes sqlite3.h.
 *
 * Identity: the database carries SQLite's application_id FATIA_STORE_APPLICATION_ID ("fati")
 * and its schema version in user_version. A file that is empty, not SQLite, or SQLite of another
 * application is refused with a sentence saying which (never opened as an empty cluster); a store
 * of an earlier fatia release (no application_id, user_version 1, fatia's tables) is marked and
 * migrated in place.
 *
 * Full disk (etcd's NOSPACE alarm): the store keeps a preallocated reserve file beside the
 * database. A commit that fails with SQLITE_FULL raises the alarm (fatia_store_nospace); while it
 * is raised the API server refuses every write that does not delete (507), and a failed batch of
 * deleting ops releases a quarter of the reserve and is retried, so deletes go on working while
 * other processes fill the disk. The writer thread looks at the free space every second; once
 * the filesystem has room for the whole reserve and the reserve again, it re-creates the reserve
 * and clears the alarm, by itself. fatiad shows the alarm and the reserve's size
 * (fatia_store_reserve) in /metrics, and answers /readyz with 503 while the alarm is raised.
 *
 *                  commit fails: SQLITE_FULL
 *      ┌────────┐ ───────────────────────────► ┌─────────────────────────────────────────┐
 *      │ normal │                              │ NOSPACE: writes 507, reads go on;       │
 *      │        │ ◄─────────────────────────── │ a delete that fails: reserve -= 1/4,    │
 *      └────────┘  free >= 2 x reserve (1 s    │ retried; a terminating object may not   │
 *                  check): reserve re-created  │ grow                                    │
 *                                              └─────────────────────────────────────────┘
 *
 * Backup: fatia_store_backup copies a store, live or not, with SQLite's online backup API from a
 * read-only connection of its own: one read transaction, so the copy is the state at one commit
 * (WAL readers never block the writer). The copy is written beside its destination, checked,
 * fsynced and renamed into place.
 *
 * Backends: this file's contract has two implementations. SQLite (store.c, the default, all of
 * the above) and etcd v3 (store/etcd.c, when opts->etcd_endpoints is set): objects under
 * kube-apiserver's key layout, one etcd transaction per group commit, fenced by a
 * compare-and-swap on the store's resourceVersion key. The queues, the writer thread and the
 * eventfd are shared; only the commit, the loading and the NOSPACE recovery differ. On etcd the
 * NOSPACE alarm is etcd's own (a refused commit raises ours; the writer polls etcd's alarm list
 * every second and clears ours when etcd's is gone); there is no reserve, and deletes are
 * refused too while etcd's alarm is raised (each commit also writes the log key).
 * fatia_store_backup and fatia_store_check's quick_check are SQLite's (etcdctl snapshot for
 * etcd; check asks etcd's status).
 *
 * Rejected: one transaction per write on the loop thread (an fsync per request blocks the loop:
 * p99 of fdatasync here is about 4 ms); synchronous=NORMAL plus our own fsync of the WAL (works,
 * but outside SQLite's documented contract); a store per kind (one global resourceVersion needs
 * one transaction across kinds).
 */
#ifndef FATIA_STORE_STORE_H
#define FATIA_STORE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Event types, as the watch log records them (and the API serves them). */
enum fatia_store_event {
    FATIA_STORE_ADDED = 1,
    FATIA_STORE_MODIFIED = 2,
    FATIA_STORE_DELETED = 3,
};

/* One change. Strings are borrowed from the caller until the batch is reaped. ns is "" for
 * cluster-scoped objects. json is the object after the change (for DELETED: its last state). */
struct fatia_store_op {
    uint64_t rv;
    enum fatia_store_event type;
    const char *group;
    const char *kind;
    const char *ns;
    const char *name;
    const char *uid;
    const char *json;
    size_t json_len;
    /* Part of deleting the object: the DELETED itself, or an update of an object that carries a
     * deletionTimestamp (marking it, removing finalizers). Only such ops may spend the reserve
     * while the NOSPACE alarm is raised. */
    bool deleting;
    /* Replica mode only (fatia_store_opts.etcd_replica): the resourceVersion (etcd's
     * mod_revision) the object had in the version this op was built on; 0: it must not exist.
     * The commit compares it for the first op on each object in a batch (later ones build on
     * that one) and fails with -FATIA_E_CONFLICT, writing nothing, if another replica changed the
     * object meanwhile. On success the store sets every op's rv to the batch's revision. */
    uint64_t expect_rv;
    /* Replica mode only: an op that only compares expect_rv (a fence on a Lease) and writes
     * nothing; json may be NULL. */
    bool compare_only;
    /* Replica mode only, set by the store when the batch failed with -FATIA_E_CONFLICT: this
     * op's object was not at expect_rv (every op on that object gets it). A conflict with no op
     * marked (the marker key moved) names no culprit. Cleared at every commit. */
    bool conflict;
};

/* A batch of changes committed atomically. The caller owns the memory; between submit and reap
 * the store links it into its queues and the caller must not touch it. */
struct fatia_store_batch {
    struct fatia_store_op *ops;
    size_t n;
    int result; /* set when done: 0 or a negative code (the batch had no effect) */
    void *user; /* the caller's */
    /* replica mode: set when done, the etcd revision it committed at; refused with
     * -FATIA_E_CONFLICT, etcd's revision when it refused (every change that refused it is at or
     * before it) */
    uint64_t revision;
    struct fatia_store_batch *next; /* store-internal */
};

/* A stored row, as fatia_store_load / fatia_store_load_log report it (borrowed for the call). */
struct fatia_store_row {
    uint64_t rv;
    enum fatia_store_event type; /* log rows only */
    const char *group, *kind, *ns, *name, *uid;
    const char *json;
    size_t json_len;
};

struct fatia_store_opts {
    uint64_t log_keep; /* log rows kept (the newest); 0 = 100000 */
    bool read_only;    /* open for inspection (checkers): no migration, no writes */
    /* false (default): every group commit is fsynced before its writes are acknowledged
     * (PRAGMA synchronous=FULL, etcd's guarantee). true: synchronous=NORMAL, the WAL is fsynced
     * at checkpoints only: an acknowledged write survives kill -9 and any crash of the process
     * (it is in the kernel's page cache), a power loss may lose the last ones, and the store is
     * never corrupted either way (SQLite's WAL guarantee). */
    bool sync_normal;
    /* Bytes of disk kept in reserve (the file "<path>.reserve", preallocated) for the NOSPACE
     * alarm; 0: no reserve (":memory:", read-only stores and tests). See "Full disk" above. */
    uint64_t reserve_bytes;
    /* The etcd v3 backend (store/etcd.c) instead of SQLite when etcd_endpoints is set
     * ("http://127.0.0.1:2379,..."); path is then ignored. See "Backends" above. */
    const char *etcd_endpoints;
    const char *etcd_cafile, *etcd_certfile, *etcd_keyfile; /* TLS, or NULL */
    const char *etcd_prefix;                                /* NULL: "/registry" */
    uint64_t etcd_compact_usec; /* etcd compaction interval; 0: 5 minutes */
    /* etcd's request limits (its --max-request-bytes and --max-txn-ops; 0: etcd's defaults,
     * 1.5 MiB and 128). A group commit is cut into commits within them, between batches (the
     * writer) and between API transactions (the API server, fatia_store_fill_add); see "Limits"
     * in store/etcd.c. */
    uint64_t etcd_max_request_bytes;
    uint64_t etcd_max_txn_ops;
    /* Replica mode: several fatiad replicas share etcd_prefix. resourceVersion = etcd's
     * mod_revision (the store assigns it at commit), each commit compares the revision of every
     * object it writes instead of a store-wide fence, no log keys (history starts at the
     * revision loaded), and every other replica's change comes back through
     * fatia_store_next_change, fed by etcd's watch stream. See "Replicas" in store/etcd.c. */
    bool etcd_replica;
    /* Optional: when fatia_store_open fails, a sentence for people saying what is wrong with the
     * file ("... is empty (0 bytes): not a fatia store ..."). */
    char *why;
    size_t why_n;
};

struct fatia_store;

#define FATIA_STORE_APPLICATION_ID 0x66617469    /* "fati" */
#define FATIA_STORE_MAX_OBJECT     (1536 * 1024) /* 1.5 MiB: etcd's default request limit */

/* Opens (creating and migrating as needed) the store at path (":memory:": a store that lives as
 * long as it is open, for tests and fuzzing). Returns 0, -EBUSY (another
 * process holds the write lock), -FATIA_E_CORRUPT (not a fatia store: empty, not SQLite, another
 * application's database, or a newer schema; opts->why says which), -EIO, -ENOMEM. */
int fatia_store_open(const char *path, const struct fatia_store_opts *opts,
                     struct fatia_store **ret);

/* Stops the writer thread (after it finishes the batch in progress; queued batches still
 * commit), closes the database. Reap what is done before freeing the batches. NULL is fine. */
void fatia_store_close(struct fatia_store *s);

/* The highest committed resourceVersion (0 for a new store). Before fatia_store_writer_start
 * only: the writer thread owns it afterwards. */
uint64_t fatia_store_rv(const struct fatia_store *s);

/* Calls cb for every object, ordered by (group, kind, namespace, name); a negative return from
 * cb stops the walk and is returned. Before fatia_store_writer_start only. */
int fatia_store_load(struct fatia_store *s, int (*cb)(void *arg, const struct fatia_store_row *row),
                     void *arg);

/* Calls cb for every log row with rv > after, in rv order. Same rules. */
int fatia_store_load_log(struct fatia_store *s, uint64_t after,
                         int (*cb)(void *arg, const struct fatia_store_row *row), void *arg);

/* The lowest rv still in the log, or 0 when the log is empty. */
uint64_t fatia_store_log_first(struct fatia_store *s);

/* Commits one batch synchronously (tools and tests; before the writer starts). Every op's rv must
 * exceed fatia_store_rv(). Returns 0 or a negative code; on failure nothing changed. */
int fatia_store_commit(struct fatia_store *s, struct fatia_store_op *ops, size_t n);

/* Runs PRAGMA quick_check; 0 when the database is sound, -FATIA_E_CORRUPT otherwise. */
int fatia_store_check(struct fatia_store *s);

/* Copies the store at src (a running fatiad's or not) to dst consistently: the state at one
 * commit. dst is written as dst.tmp, checked, fsynced and renamed; an existing dst is replaced.
 * src must be a fatia store (or one of an earlier release). 0 or a negative code with why set. */
int fatia_store_backup(const char *src, const char *dst, char *why, size_t why_n);

/* True while the NOSPACE alarm is raised (any thread). */
bool fatia_store_nospace(const struct fatia_store *s);

/* The reserve's bytes allocated now (*have: less than *want after deletes under the alarm) and
 * its full size (*want); both 0 without a reserve. Any thread. */
void fatia_store_reserve(const struct fatia_store *s, uint64_t *have, uint64_t *want);

/* ---- group commit ---- */

/* Starts the writer thread. 0, -EAGAIN, -ENOMEM. */
int fatia_store_writer_start(struct fatia_store *s);

/* Queues a batch for the writer. Batches commit in submission order: those queued while the
 * writer was busy in one transaction, or on etcd in as few as fatia_store_fill_add allows (a
 * batch is never split; each of those transactions succeeds or fails on its own). 0, or
 * -ESHUTDOWN once closing. */
int fatia_store_submit(struct fatia_store *s, struct fatia_store_batch *b);

/* A nonblocking eventfd that becomes readable when batches are done. The loop watches it, then
 * calls fatia_store_reap until it returns NULL. */
int fatia_store_done_fd(const struct fatia_store *s);

/* Pops the oldest completed batch (b->result set), or NULL. Clears the eventfd when empty. */
struct fatia_store_batch *fatia_store_reap(struct fatia_store *s);

/* ---- the size of one commit ---- */

/* What a commit being filled holds, in the backend's measure (start from {0}). */
struct fatia_store_fill {
    uint64_t bytes, ops;
};

/* Adds n ops, a unit never to be split (a batch, an API transaction), to the commit f if they
 * fit beside what it holds within the backend's request limits, and returns true; else returns
 * false and leaves f alone (the commit must end before them). An empty f takes any unit: one
 * over the limits goes alone, and the backend answers it (etcd: -EFBIG). SQLite has no limit.
 * Reads only what open set: any thread. */
bool fatia_store_fill_add(const struct fatia_store *s, struct fatia_store_fill *f,
                          const struct fatia_store_op *ops, size_t n);

/* ---- replica mode: the changes etcd's watch stream brings (loop thread) ---- */

struct fatia_store_change {
    uint64_t rv; /* the change's etcd revision */
    /* 0: rv is a revision of this store's own commits (the batch committed at rv, reaped or
     * about to be, is now in revision order with every other replica's changes) */
    enum fatia_store_event type;
    const char *group, *kind, *ns, *name; /* borrowed until the next call */
    const char *json;                     /* ADDED/MODIFIED: the object; DELETED: its last state */
    size_t json_len;
    bool gone; /* the watch fell behind etcd's compaction (rv: the compact revision) */
};

/* A nonblocking eventfd readable while changes wait, or -1 when not in replica mode. */
int fatia_store_changes_fd(const struct fatia_store *s);

/* The next change in revision order (1), or 0 when none waits. Changes of one revision come
 * one after another. Keys under the prefix that name no kind are skipped. */
int fatia_store_next_change(struct fatia_store *s, struct fatia_store_change *ret);

/* Counters for benchmarks and /metrics. */
struct fatia_store_stats {
    uint64_t transactions; /* commits (each one fsync) */
    uint64_t batches;
    uint64_t ops;
};

void fatia_store_get_stats(struct fatia_store *s, struct fatia_store_stats *ret);

#endif
