/*
 * store/etcd_watch.c: an etcd v3 watch stream read on a thread of its own (see etcd_watch.h).
 *
 * Model: etcd's JSON gateway serves Watch as a streaming POST to /v3/watch: the body is one
 * {"create_request": {...}}; over HTTP/1.1 the gateway answers only once that body has ended,
 * then writes one JSON message per line for as long as the connection lives, each
 * {"result": {"header": {"revision"}, "created", "events": [...], "canceled",
 * "compact_revision"}}. A blocking libcurl transfer that never ends does not fit fatiad's event
 * loop, so it runs here, on its own thread, with its own easy handle; the loop sees an eventfd
 * and a queue (as it sees the store's writer, store.c).
 *
 * Invariants:
 *   - Events are queued in revision order and every revision once. next_rev is the first
 *     revision not yet delivered; it moves only after a whole message was queued, and etcd never
 *     splits one revision's events across messages (its watch batches stop at revision
 *     boundaries), so a stream that breaks is opened again from next_rev, on the same endpoint
 *     or the next one, with nothing lost and nothing twice.
 *   - A watch from a compacted revision is created, then canceled with compact_revision: that
 *     becomes one GONE event, and the thread stops reading (the consumer lists again, as a
 *     client of kube-apiserver gets 410 Gone and relists).
 *   - start_revision 0 means "from now": the revision of the creation's header + 1 becomes
 *     next_rev, so a reconnection does not skip what happened in between.
 *   - The queue holds at most queue_max events; beyond that the thread waits for the consumer
 *     (etcd buffers, and catches a slow watcher up from its history) instead of growing.
 *
 * Liveness: a member that dies closes the connection (or TCP keepalive, 5 s idle, finds it
 * gone); the transfer ends and the thread reconnects after 100 ms, doubling to 2 s while no
 * endpoint answers. Stopping is seen by libcurl's progress callback, called about once a second
 * on an idle stream.
 *
 * Rejected: the gateway's WebSocket upgrade (bidirectional, so progress requests and several
 * watches could share one connection; but it needs a WebSocket client and framing here, and one
 * watch on the whole prefix needs no second request); curl multi on the event loop (the loop
 * would parse etcd's stream and every reconnection would be the loop's state machine, for no
 * gain: the consumer wants whole messages anyway); etcd's v2 watch (removed in 3.6).
 */
#include "base/compat.h"

#include "store/etcd_watch.h"

#include <sys/eventfd.h>

#include <curl/curl.h>
#include <inttypes.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "base/str.h"
#include "store/etcd_client.h"

#define MAX_ENDPOINTS 16
#define QUEUE_MAX     65536
#define LINE_MAX_B    (64 * 1024 * 1024) /* one message: a revision's events, with prev_kv */

struct fatia_store_etcdw {
    struct fatia_store_etcdw_opts o;
    char *key;
    size_t key_len;
    char *ep[MAX_ENDPOINTS];
    size_t n_ep, cur;

    pthread_t thread;
    bool started;
    int efd;

    pthread_mutex_t mu;
    pthread_cond_t room; /* the consumer took events */
    struct fatia_store_etcdw_event *head, **tail;
    size_t queued;
    bool stop; /* under mu; read unlocked by the progress callback (a stale read costs 1 s) */
    uint64_t streams, events;

    /* the thread's */
    uint64_t next_rev;
    struct fatia_buf line;
    struct fatia_buf body;
    int parse_err;
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

void fatia_store_etcdw_event_free(struct fatia_store_etcdw_event *ev)
{
    if (!ev)
        return;
    fatia_free(ev->key);
    fatia_free(ev->value);
    fatia_free(ev->prev_value);
    fatia_free(ev);
}

/* Decodes a base64 field of obj into a new NUL-terminated string (*ret NULL when absent). */
static int dup_b64(const json_t *obj, const char *field, char **ret, size_t *ret_len)
{
    const char *s = fatia_json_str(obj, field);
    struct fatia_buf b = FATIA_BUF_INIT;
    int r;

    *ret = NULL;
    *ret_len = 0;
    if (!s)
        return 0;
    r = fatia_buf_reserve(&b, 1);
    if (r == 0)
        r = fatia_store_etcdc_unb64(&b, s);
    if (r < 0) {
        fatia_buf_release(&b);
        return r;
    }
    *ret_len = b.len;
    *ret = fatia_buf_steal(&b);
    return 0;
}

/* Links a message's events onto the queue at once (whole messages only: see the invariants),
 * waiting for room first. false when stopping. */
static bool enqueue(struct fatia_store_etcdw *w, struct fatia_store_etcdw_event *first,
                    struct fatia_store_etcdw_event *last, size_t n)
{
    uint64_t one = 1;
    bool ok;

    pthread_mutex_lock(&w->mu);
    while (!w->stop && w->queued && w->queued + n > w->o.queue_max)
        pthread_cond_wait(&w->room, &w->mu);
    ok = !w->stop;
    if (ok) {
        *w->tail = first;
        w->tail = &last->next;
        w->queued += n;
        w->events += n;
    }
    pthread_mutex_unlock(&w->mu);
    if (!ok) {
        while (first) {
            struct fatia_store_etcdw_event *next = first->next;
            fatia_store_etcdw_event_free(first);
            first = next;
        }
        return false;
    }
    /* fails only when the counter would overflow: readable then anyway */
    if (write(w->efd, &one, sizeof(one)) < 0) {
    }
    return true;
}

static struct fatia_store_etcdw_event *new_event(enum fatia_store_etcdw_type type, uint64_t rev)
{
    struct fatia_store_etcdw_event *ev = fatia_calloc(1, sizeof(*ev));

    if (ev) {
        ev->type = type;
        ev->revision = rev;
    }
    return ev;
}

/* One event of a message's "events" array. */
static int parse_event(struct fatia_store_etcdw *w, const json_t *je,
                       struct fatia_store_etcdw_event **ret)
{
    const json_t *kv = json_object_get(je, "kv"), *prev = json_object_get(je, "prev_kv");
    const char *type = fatia_json_str(je, "type");
    struct fatia_store_etcdw_event *ev;
    int r;

    (void)w;
    if (!json_is_object(kv))
        return -FATIA_E_CORRUPT;
    /* PUT is the enum's zero value: the gateway omits it */
    ev = new_event(type && !strcmp(type, "DELETE") ? FATIA_STORE_ETCDW_DELETE
                                                   : FATIA_STORE_ETCDW_PUT,
                   fatia_store_etcdc_u64(kv, "mod_revision"));
    if (!ev)
        return -ENOMEM;
    r = dup_b64(kv, "key", &ev->key, &ev->key_len);
    if (r == 0 && !ev->key)
        r = -FATIA_E_CORRUPT;
    if (r == 0 && ev->type == FATIA_STORE_ETCDW_PUT) {
        r = dup_b64(kv, "value", &ev->value, &ev->value_len);
        if (r == 0 && !ev->value)
            ev->value = fatia_strdup(""); /* an empty value is omitted too */
        if (r == 0 && !ev->value)
            r = -ENOMEM;
        ev->create_revision = fatia_store_etcdc_u64(kv, "create_revision");
        ev->version = fatia_store_etcdc_u64(kv, "version");
    }
    if (r == 0 && json_is_object(prev)) {
        r = dup_b64(prev, "value", &ev->prev_value, &ev->prev_len);
        if (r == 0 && !ev->prev_value)
            ev->prev_value = fatia_strdup("");
        if (r == 0 && !ev->prev_value)
            r = -ENOMEM;
        ev->prev_mod_revision = fatia_store_etcdc_u64(prev, "mod_revision");
    }
    if (r < 0 || !ev->revision) {
        fatia_store_etcdw_event_free(ev);
        return r < 0 ? r : -FATIA_E_CORRUPT;
    }
    *ret = ev;
    return 0;
}

/* One line of the stream. Returns 0, or a negative code that ends this stream (-FATIA_E_GONE:
 * compacted, the watch is over). */
static int on_message(struct fatia_store_etcdw *w, const char *p, size_t n)
{
    struct fatia_store_etcdw_event *first = NULL, *last = NULL, *ev;
    json_t *msg, *res, *events, *je;
    uint64_t hrev, top = 0, compact;
    size_t i, count = 0;
    bool created;
    int r = 0;

    msg = json_loadb(p, n, 0, NULL);
    if (!msg) {
        fatia_warn("etcd watch %s: a line of the stream is not JSON", w->ep[w->cur]);
        return -FATIA_E_CORRUPT;
    }
    res = json_object_get(msg, "result");
    if (!json_is_object(res)) {
        const json_t *err = json_object_get(msg, "error");
        const char *m = fatia_json_str(err ? err : msg, "message");
        fatia_warn("etcd watch %s: %s", w->ep[w->cur], m ? m : "a message without a result");
        json_decref(msg);
        return -EIO;
    }
    hrev = fatia_store_etcdc_u64(json_object_get(res, "header"), "revision");
    compact = fatia_store_etcdc_u64(res, "compact_revision");
    created = json_is_true(json_object_get(res, "created"));
    if (json_is_true(json_object_get(res, "canceled"))) {
        json_decref(msg);
        if (!compact) {
            const char *why = fatia_json_str(res, "cancel_reason");
            fatia_warn("etcd watch %s canceled: %s", w->ep[w->cur], why ? why : "no reason given");
            return -EIO; /* opened again */
        }
        ev = new_event(FATIA_STORE_ETCDW_GONE, compact);
        if (!ev)
            return -ENOMEM;
        enqueue(w, ev, ev, 1);
        return -FATIA_E_GONE;
    }
    events = json_object_get(res, "events");
    json_array_foreach(events, i, je)
    {
        r = parse_event(w, je, &ev);
        if (r < 0)
            break;
        if (ev->revision < w->next_rev) {
            /* already delivered (a reconnection that raced its own start revision) */
            fatia_store_etcdw_event_free(ev);
            continue;
        }
        if (ev->revision > top)
            top = ev->revision;
        if (last)
            last->next = ev;
        else
            first = ev;
        last = ev;
        count++;
    }
    json_decref(msg);
    if (r < 0) {
        while (first) {
            ev = first->next;
            fatia_store_etcdw_event_free(first);
            first = ev;
        }
        fatia_warn("etcd watch %s: an event that cannot be read: %s", w->ep[w->cur],
                   fatia_strerror(r));
        return r;
    }
    if (!count) {
        /* A progress notification: etcd is at hrev and this watch has had everything up to it
         * (etcd sends one only to a synced watcher). The creation's header says only where
         * etcd is now: the history from start_revision comes after it, so it moves next_rev
         * only for a watch "from now". */
        if (!hrev || (created && w->next_rev) || hrev + 1 <= w->next_rev)
            return 0;
        w->next_rev = hrev + 1;
        ev = new_event(FATIA_STORE_ETCDW_PROGRESS, hrev);
        if (!ev)
            return -ENOMEM;
        return enqueue(w, ev, ev, 1) ? 0 : -ECANCELED;
    }
    if (!enqueue(w, first, last, count))
        return -ECANCELED;
    w->next_rev = top + 1;
    return 0;
}

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
    struct fatia_store_etcdw *w = arg;
    size_t len = size * n, off = 0;

    while (off < len) {
        char *nl = memchr(p + off, '\n', len - off);
        size_t take = nl ? (size_t)(nl - (p + off)) : len - off;
        if (w->line.len + take > LINE_MAX_B || fatia_buf_append(&w->line, p + off, take) < 0) {
            w->parse_err = -EFBIG;
            return 0;
        }
        off += take;
        if (!nl)
            break;
        off++; /* the '\n' */
        if (w->line.len) {
            int r = on_message(w, w->line.p, w->line.len);
            fatia_buf_reset(&w->line);
            if (r < 0) {
                w->parse_err = r;
                return 0; /* ends the transfer */
            }
        }
    }
    return len;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    struct fatia_store_etcdw *w = arg;

    (void)dt;
    (void)dn;
    (void)ut;
    (void)un;
    return __atomic_load_n(&w->stop, __ATOMIC_RELAXED) ? 1 : 0;
}

static int build_body(struct fatia_store_etcdw *w)
{
    struct fatia_buf *b = &w->body;
    int r;

    fatia_buf_reset(b);
    r = fatia_buf_puts(b, "{\"create_request\":{\"key\":\"");
    if (r == 0)
        r = fatia_store_etcdc_b64(b, w->key, w->key_len);
    if (r == 0 && w->o.prefix) {
        char *end = fatia_malloc(w->key_len ? w->key_len : 1);
        if (!end)
            return -ENOMEM;
        if (w->key_len) {
            /* the key just past every key with this prefix (a last byte 0xff is not supported:
             * fatia's prefixes end with '/') */
            memcpy(end, w->key, w->key_len);
            end[w->key_len - 1]++;
            r = fatia_buf_puts(b, "\",\"range_end\":\"");
            if (r == 0)
                r = fatia_store_etcdc_b64(b, end, w->key_len);
        } else {
            r = fatia_buf_puts(b, "\",\"range_end\":\"AA=="); /* "\0": every key */
        }
        fatia_free(end);
    }
    if (r == 0)
        r = fatia_buf_puts(b, "\"");
    if (r == 0 && w->next_rev)
        r = fatia_buf_printf(b, ",\"start_revision\":\"%" PRIu64 "\"", w->next_rev);
    if (r == 0 && w->o.prev_kv)
        r = fatia_buf_puts(b, ",\"prev_kv\":true");
    if (r == 0)
        r = fatia_buf_puts(b, ",\"progress_notify\":true}}");
    return r;
}

static bool stopping(struct fatia_store_etcdw *w)
{
    bool s;

    pthread_mutex_lock(&w->mu);
    s = w->stop;
    pthread_mutex_unlock(&w->mu);
    return s;
}

/* Sleeps ms, waking early when stopped. */
static void nap(struct fatia_store_etcdw *w, long ms)
{
    struct timespec until;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&w->mu);
    while (!w->stop && pthread_cond_timedwait(&w->room, &w->mu, &until) == 0) {
    }
    pthread_mutex_unlock(&w->mu);
}

static void *reader(void *arg)
{
    struct fatia_store_etcdw *w = arg;
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/json");
    CURL *h = curl_easy_init();
    char url[1024], errbuf[CURL_ERROR_SIZE];
    long backoff = 100;

    if (!h || !headers) {
        fatia_error("etcd watch: out of memory starting the stream");
        goto out;
    }
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 5L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 2L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, w);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, w);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (w->o.cafile)
        curl_easy_setopt(h, CURLOPT_CAINFO, w->o.cafile);
    if (w->o.certfile)
        curl_easy_setopt(h, CURLOPT_SSLCERT, w->o.certfile);
    if (w->o.keyfile)
        curl_easy_setopt(h, CURLOPT_SSLKEY, w->o.keyfile);

    while (!stopping(w)) {
        uint64_t before = w->next_rev;
        long http = 0;
        CURLcode rc;
        if (build_body(w) < 0) {
            fatia_error("etcd watch: out of memory");
            break;
        }
        snprintf(url, sizeof(url), "%s/v3/watch", w->ep[w->cur]);
        errbuf[0] = '\0';
        w->parse_err = 0;
        fatia_buf_reset(&w->line);
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, w->body.p);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)w->body.len);
        pthread_mutex_lock(&w->mu);
        w->streams++;
        pthread_mutex_unlock(&w->mu);
        rc = curl_easy_perform(h);
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &http);
        if (w->parse_err == -FATIA_E_GONE || w->parse_err == -ECANCELED || stopping(w))
            break;
        if (w->line.len && !w->parse_err && http >= 400) {
            /* an error reply without a newline: the gateway's {"error": ...} */
            (void)on_message(w, w->line.p, w->line.len);
        }
        if (w->next_rev != before)
            backoff = 100; /* it was serving: reconnect quickly */
        if (rc != CURLE_OK && rc != CURLE_WRITE_ERROR)
            fatia_warn("etcd watch %s: %s; opening it again from revision %" PRIu64, url,
                       errbuf[0] ? errbuf : curl_easy_strerror(rc), w->next_rev);
        /* the next endpoint: this one ended the stream or could not be reached */
        w->cur = (w->cur + 1) % w->n_ep;
        nap(w, backoff);
        backoff = backoff * 2 > 2000 ? 2000 : backoff * 2;
    }
out:
    if (h)
        curl_easy_cleanup(h);
    curl_slist_free_all(headers);
    return NULL;
}

static int parse_endpoints(struct fatia_store_etcdw *w, const char *p, char *why, size_t why_n)
{
    while (p && *p) {
        size_t n = strcspn(p, ",");
        if (n) {
            if (w->n_ep == MAX_ENDPOINTS) {
                say(why, why_n, "--etcd-endpoints: more than %d endpoints", MAX_ENDPOINTS);
                return -EINVAL;
            }
            w->ep[w->n_ep] = fatia_strndup(p, n);
            if (!w->ep[w->n_ep])
                return -ENOMEM;
            while (n > 0 && w->ep[w->n_ep][n - 1] == '/')
                w->ep[w->n_ep][--n] = '\0';
            if (!fatia_str_has_prefix(w->ep[w->n_ep], "http://") &&
                !fatia_str_has_prefix(w->ep[w->n_ep], "https://")) {
                say(why, why_n, "--etcd-endpoints: '%s' is not an http:// or https:// URL",
                    w->ep[w->n_ep]);
                w->n_ep++;
                return -EINVAL;
            }
            w->n_ep++;
        }
        p += n;
        if (*p == ',')
            p++;
    }
    if (!w->n_ep) {
        say(why, why_n, "--etcd-endpoints: no endpoint given");
        return -EINVAL;
    }
    return 0;
}

static void etcdw_free(struct fatia_store_etcdw *w)
{
    struct fatia_store_etcdw_event *ev = w->head;

    while (ev) {
        struct fatia_store_etcdw_event *next = ev->next;
        fatia_store_etcdw_event_free(ev);
        ev = next;
    }
    for (size_t i = 0; i < w->n_ep; i++)
        fatia_free(w->ep[i]);
    if (w->efd >= 0)
        close(w->efd);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->room);
    fatia_buf_release(&w->line);
    fatia_buf_release(&w->body);
    fatia_free(w->key);
    fatia_free(w);
}

int fatia_store_etcdw_start(const struct fatia_store_etcdw_opts *o, struct fatia_store_etcdw **ret,
                            char *why, size_t why_n)
{
    struct fatia_store_etcdw *w;
    int r;

    *ret = NULL;
    if (!o->key) {
        say(why, why_n, "etcd watch: no key");
        return -EINVAL;
    }
    w = fatia_calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->o = *o;
    w->o.queue_max = o->queue_max ? o->queue_max : QUEUE_MAX;
    w->efd = -1;
    w->tail = &w->head;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->room, NULL);
    fatia_buf_init(&w->line, 0);
    fatia_buf_init(&w->body, 0);
    w->key_len = o->key_len ? o->key_len : strlen(o->key);
    w->key = fatia_malloc(w->key_len + 1);
    if (!w->key) {
        r = -ENOMEM;
        goto out_free;
    }
    memcpy(w->key, o->key, w->key_len);
    w->key[w->key_len] = '\0';
    w->next_rev = o->start_revision;
    /* the options' strings are the caller's; only endpoints are kept past start */
    w->o.key = NULL;
    r = parse_endpoints(w, o->endpoints, why, why_n);
    if (r < 0)
        goto out_free;
    w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (w->efd < 0) {
        r = -errno;
        goto out_free;
    }
    /* curl_global_init is done once by etcd_client.c's first handle, before any thread; a
     * watch alone initialises libcurl here (not thread-safe before 7.84: start watches from
     * one thread) */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (pthread_create(&w->thread, NULL, reader, w) != 0) {
        r = -EAGAIN;
        goto out_free;
    }
    w->started = true;
    *ret = w;
    return 0;

out_free:
    etcdw_free(w);
    return r;
}

int fatia_store_etcdw_fd(const struct fatia_store_etcdw *w)
{
    return w->efd;
}

struct fatia_store_etcdw_event *fatia_store_etcdw_next(struct fatia_store_etcdw *w)
{
    struct fatia_store_etcdw_event *ev;
    uint64_t v;

    pthread_mutex_lock(&w->mu);
    ev = w->head;
    if (ev) {
        w->head = ev->next;
        if (!w->head)
            w->tail = &w->head;
        w->queued--;
        ev->next = NULL;
        pthread_cond_broadcast(&w->room);
    }
    if (!w->head) {
        /* empty: clear the eventfd under the lock, so that a concurrent enqueue's write
         * (after it unlocks) is not lost */
        if (read(w->efd, &v, sizeof(v)) < 0) {
        }
    }
    pthread_mutex_unlock(&w->mu);
    return ev;
}

struct fatia_store_etcdw_event *fatia_store_etcdw_wait(struct fatia_store_etcdw *w, int timeout_ms)
{
    struct fatia_store_etcdw_event *ev = fatia_store_etcdw_next(w);
    struct pollfd p = {.fd = w->efd, .events = POLLIN};

    if (ev)
        return ev;
    if (poll(&p, 1, timeout_ms) <= 0)
        return NULL;
    return fatia_store_etcdw_next(w);
}

void fatia_store_etcdw_stats(struct fatia_store_etcdw *w, uint64_t *ret_streams,
                             uint64_t *ret_events)
{
    pthread_mutex_lock(&w->mu);
    *ret_streams = w->streams;
    *ret_events = w->events;
    pthread_mutex_unlock(&w->mu);
}

void fatia_store_etcdw_stop(struct fatia_store_etcdw *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    __atomic_store_n(&w->stop, true, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&w->room);
    pthread_mutex_unlock(&w->mu);
    if (w->started)
        pthread_join(w->thread, NULL);
    etcdw_free(w);
}
