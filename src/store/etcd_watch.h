/*
 * store/etcd_watch.h: an etcd v3 watch stream (a key or a prefix), read by a thread of its own,
 * delivered through a queue and an eventfd (see etcd_watch.c). Private to src/store and its
 * tests; the step towards several fatiad replicas on one etcd prefix, each feeding its watch
 * cache from etcd (issue #21).
 */
#ifndef FATIA_STORE_ETCD_WATCH_H
#define FATIA_STORE_ETCD_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fatia_store_etcdw;

struct fatia_store_etcdw_opts {
    const char *endpoints; /* "http://127.0.0.1:2379,..." as etcd_client.h takes them */
    const char *cafile, *certfile, *keyfile; /* TLS, or NULL */
    const char *key;                         /* the key watched, or the prefix */
    size_t key_len;                          /* 0: strlen(key) */
    bool prefix;                             /* every key that starts with key */
    uint64_t start_revision;                 /* first revision delivered; 0: from now on */
    bool prev_kv;                            /* deliver each change's previous value */
    size_t queue_max; /* events queued before the reader waits for the consumer; 0: 65536 */
};

enum fatia_store_etcdw_type {
    FATIA_STORE_ETCDW_PUT = 1,
    FATIA_STORE_ETCDW_DELETE = 2,
    /* etcd's revision reached ev->revision with nothing more for this watch (a progress
     * notification, or the stream's creation) */
    FATIA_STORE_ETCDW_PROGRESS = 3,
    /* the revisions wanted were compacted (ev->revision: etcd's compact revision); the stream
     * ended and the consumer must list again from a revision >= that one */
    FATIA_STORE_ETCDW_GONE = 4,
};

struct fatia_store_etcdw_event {
    enum fatia_store_etcdw_type type;
    /* PUT, DELETE: the change's revision (the key's mod_revision; for DELETE the revision of
     * the delete). PROGRESS: etcd's revision. GONE: the compact revision. */
    uint64_t revision;
    uint64_t create_revision, version; /* PUT: the key's */
    char *key;                         /* NUL-terminated (keys may hold NULs: key_len) */
    size_t key_len;
    char *value; /* PUT: the new value; NULL otherwise */
    size_t value_len;
    char *prev_value; /* with prev_kv: the value before (NULL for a key's creation) */
    size_t prev_len;
    uint64_t prev_mod_revision;
    struct fatia_store_etcdw_event *next; /* the queue's */
};

/* Starts the reader thread. -EINVAL (bad options, why says which), -ENOMEM, -EAGAIN. The stream
 * is opened by the thread: an unreachable etcd is retried, never reported here. */
int fatia_store_etcdw_start(const struct fatia_store_etcdw_opts *o, struct fatia_store_etcdw **ret,
                            char *why, size_t why_n);

/* A nonblocking eventfd, readable while events are queued. */
int fatia_store_etcdw_fd(const struct fatia_store_etcdw *w);

/* Pops the oldest event (the caller frees it), or NULL; clears the eventfd when the queue is
 * empty. Events come in revision order, every revision once, across reconnections. */
struct fatia_store_etcdw_event *fatia_store_etcdw_next(struct fatia_store_etcdw *w);

/* Waits up to timeout_ms for an event, then pops it as fatia_store_etcdw_next does (tests and
 * tools; a loop watches the fd instead). */
struct fatia_store_etcdw_event *fatia_store_etcdw_wait(struct fatia_store_etcdw *w, int timeout_ms);

void fatia_store_etcdw_event_free(struct fatia_store_etcdw_event *ev);

/* Counters: streams opened (1 + reconnections) and events delivered. Any thread. */
void fatia_store_etcdw_stats(struct fatia_store_etcdw *w, uint64_t *ret_streams,
                             uint64_t *ret_events);

/* Ends the stream (within about a second), joins the thread, frees what is queued. NULL ok. */
void fatia_store_etcdw_stop(struct fatia_store_etcdw *w);

#endif
