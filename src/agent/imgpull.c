/*
 * agent/imgpull.c: image pulls and unpacks off the event loop (imgpull.h).
 *
 * Model. fatiad's one event loop serves the API and runs the agent; a pull (skopeo) or an
 * unpack (umoci) of a large image takes minutes (92 s for an 8.5 GB layer on the H200, while
 * kubectl got "TLS handshake timeout"). So the agent hands a pod's images to one worker thread
 * before it starts the pod: per image, the pull policy's decision (image.h's store read), the
 * pull, and the unpack for the pod's host id range. The loop learns of the end through an
 * eventfd and calls the agent back on its own thread; the pod waits in ContainerCreating
 * meanwhile and then starts with its images in place (the start's own image reads find them).
 * A pod whose images are all stored and unpacked, with no Always policy, does not wait for the
 * worker at all (fatia_image_puller_ready), so a cached image never queues behind another pod's pull.
 *
 * Invariants: the workers touch only the shared state (a copy of the store's paths, the queues,
 * the finished list) under its mutex, and the store's files through image.c; nothing of the
 * agent's. One job per key at a time. After fatia_image_puller_free no callback runs; the shared state
 * is freed by whichever of the loop and the thread lets go last (a refcount), so a tool that is
 * still running when fatiad stops never writes into freed memory or a reused fd.
 *
 * Lanes: one thread pulls (jobs that reach a registry: a policy Always or an image not stored)
 * and one unpacks (jobs of stored images only), so a stored image never waits for a registry.
 * Each lane runs its jobs in order. Two lanes may unpack one image for one range at once: the
 * temporary directories differ and the second rename finds the first's rootfs (image.c).
 *
 * Rejected: a worker per job (parallel skopeo copies into one layout race on index.json, and
 * kubelet also pulls one image at a time by default: serializeImagePulls); a child process per
 * pull (the tools already are children; the thread only waits on them); pulling inside the
 * pod's start (the former way: the loop, and with it the API, stopped for the whole pull).
 */
#include "base/compat.h"

#include "agent/imgpull.h"

#include <sys/eventfd.h>

#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <unistd.h>

#include "agent/image.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"

struct job {
    char key[128];
    json_t *items;
    char auth[1200];
    uint32_t host_base;
    int r;
    char why[1024];
    struct job *next;
};

/* Two lanes, a thread each: jobs that pull (the network), and jobs of images already stored
 * that only unpack, so that a stored image never waits behind a registry. */
enum {
    LANE_PULL,
    LANE_UNPACK,
    LANES
};

struct lane {
    struct job *queue, *queue_tail; /* not started */
    struct job *running;            /* the thread's (its key stays visible to pending) */
};

/* What the loop and the threads share (refs: 1 + LANES while all hold it). */
struct shared {
    pthread_mutex_t mu;
    pthread_cond_t work;
    struct fatia_image_store store;
    struct lane lanes[LANES];
    struct job *finished; /* for the loop */
    bool stop;
    unsigned refs;
    int efd;
};

struct worker_arg {
    struct shared *sh;
    struct lane *lane;
};

struct fatia_image_puller {
    struct shared *sh;
    struct event *ev;
    fatia_image_puller_done_fn done;
    void *arg;
};

static void job_free(struct job *j)
{
    if (!j)
        return;
    json_decref(j->items);
    fatia_free(j);
}

static void jobs_free(struct job *j)
{
    while (j) {
        struct job *n = j->next;
        job_free(j);
        j = n;
    }
}

static void shared_unref(struct shared *sh)
{
    bool last;

    pthread_mutex_lock(&sh->mu);
    last = --sh->refs == 0;
    pthread_mutex_unlock(&sh->mu);
    if (!last)
        return;
    for (size_t i = 0; i < LANES; i++) {
        jobs_free(sh->lanes[i].queue);
        job_free(sh->lanes[i].running);
    }
    jobs_free(sh->finished);
    if (sh->efd >= 0)
        close(sh->efd);
    pthread_cond_destroy(&sh->work);
    pthread_mutex_destroy(&sh->mu);
    fatia_free(sh);
}

/* One image: kubelet's policy over the store (as oci_pod.c's ensure_image), then the unpack. */
static int one_image(const struct fatia_image_store *s, const char *image, const char *policy,
                     bool insecure, const char *auth, uint32_t host_base, char *why, size_t why_n)
{
    char digest[128], rootfs[1600];
    json_t *cfg = NULL;
    bool have = fatia_image_get(s, image, UINT32_MAX, digest, sizeof(digest), &cfg, NULL, 0, why,
                                why_n) == 0;
    int r;

    json_decref(cfg);
    cfg = NULL;
    if (!strcmp(policy, "Never") && !have) {
        snprintf(why, why_n,
                 "Container image \"%s\" is not present with pull policy of Never (fatia image "
                 "load puts images on the node)",
                 image);
        return -ENOENT;
    }
    if (!have || !strcmp(policy, "Always")) {
        r = fatia_image_pull(s, image, auth, insecure, why, why_n);
        if (r < 0)
            return r;
    }
    r = fatia_image_get(s, image, host_base, digest, sizeof(digest), &cfg, rootfs, sizeof(rootfs),
                        why, why_n);
    json_decref(cfg);
    return r == -ENOENT ? -EIO : r;
}

static void run_job(const struct fatia_image_store *s, struct job *j)
{
    size_t i;
    json_t *it;

    j->r = 0;
    j->why[0] = '\0';
    json_array_foreach(j->items, i, it)
    {
        const char *image = fatia_json_str(it, "image"), *policy = fatia_json_str(it, "policy");
        j->r = one_image(s, image ? image : "", policy ? policy : "IfNotPresent",
                         fatia_json_bool(it, "insecure", false), j->auth[0] ? j->auth : NULL,
                         j->host_base, j->why, sizeof(j->why));
        if (j->r < 0)
            return;
    }
}

static void *worker(void *arg)
{
    struct worker_arg wa = *(struct worker_arg *)arg;
    struct shared *sh = wa.sh;
    struct lane *l = wa.lane;

    fatia_free(arg);
    pthread_mutex_lock(&sh->mu);
    for (;;) {
        struct job *j;
        while (!sh->stop && !l->queue)
            pthread_cond_wait(&sh->work, &sh->mu);
        if (sh->stop)
            break;
        j = l->queue;
        l->queue = j->next;
        if (!l->queue)
            l->queue_tail = NULL;
        j->next = NULL;
        l->running = j;
        pthread_mutex_unlock(&sh->mu);
        run_job(&sh->store, j); /* the store's copy: never changed after new */
        pthread_mutex_lock(&sh->mu);
        l->running = NULL;
        j->next = sh->finished;
        sh->finished = j;
        if (!sh->stop) {
            uint64_t one = 1;
            (void)!write(sh->efd, &one, sizeof(one));
        }
    }
    pthread_mutex_unlock(&sh->mu);
    shared_unref(sh);
    return NULL;
}

static void on_finished(evutil_socket_t fd, short what, void *arg)
{
    struct fatia_image_puller *q = arg;
    struct job *list, *rev = NULL;
    uint64_t n;

    (void)what;
    (void)!read(fd, &n, sizeof(n));
    pthread_mutex_lock(&q->sh->mu);
    list = q->sh->finished;
    q->sh->finished = NULL;
    pthread_mutex_unlock(&q->sh->mu);
    while (list) { /* oldest first */
        struct job *nx = list->next;
        list->next = rev;
        rev = list;
        list = nx;
    }
    while (rev) {
        struct job *nx = rev->next;
        q->done(q->arg, rev->key, rev->r, rev->why);
        job_free(rev);
        rev = nx;
    }
}

int fatia_image_puller_new(struct event_base *base, const struct fatia_image_store *s,
                           fatia_image_puller_done_fn done, void *arg,
                           struct fatia_image_puller **ret)
{
    struct fatia_image_puller *q = fatia_calloc(1, sizeof(*q));
    struct shared *sh = fatia_calloc(1, sizeof(*sh));
    pthread_t t;
    int r;

    *ret = NULL;
    if (!q || !sh) {
        fatia_free(q);
        fatia_free(sh);
        return -ENOMEM;
    }
    pthread_mutex_init(&sh->mu, NULL);
    pthread_cond_init(&sh->work, NULL);
    sh->store = *s;
    sh->refs = 1;
    sh->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    q->sh = sh;
    q->done = done;
    q->arg = arg;
    if (sh->efd < 0) {
        r = -errno;
        goto fail;
    }
    q->ev = event_new(base, sh->efd, EV_READ | EV_PERSIST, on_finished, q);
    if (!q->ev || event_add(q->ev, NULL) < 0) {
        r = -ENOMEM;
        goto fail;
    }
    for (size_t i = 0; i < LANES; i++) {
        struct worker_arg *wa = fatia_calloc(1, sizeof(*wa));
        if (!wa) {
            r = -ENOMEM;
            goto fail;
        }
        wa->sh = sh;
        wa->lane = &sh->lanes[i];
        pthread_mutex_lock(&sh->mu);
        sh->refs++;
        pthread_mutex_unlock(&sh->mu);
        r = -pthread_create(&t, NULL, worker, wa);
        if (r < 0) {
            fatia_free(wa);
            pthread_mutex_lock(&sh->mu);
            sh->refs--;
            pthread_mutex_unlock(&sh->mu);
            goto fail;
        }
        pthread_detach(t);
    }
    *ret = q;
    return 0;
fail:
    if (q->ev)
        event_free(q->ev);
    pthread_mutex_lock(&sh->mu);
    sh->stop = true; /* a thread already started ends and lets go */
    pthread_cond_broadcast(&sh->work);
    pthread_mutex_unlock(&sh->mu);
    shared_unref(sh);
    fatia_free(q);
    return r;
}

bool fatia_image_puller_ready(const struct fatia_image_store *s, const json_t *items,
                              uint32_t host_base)
{
    size_t i;
    json_t *it;

    json_array_foreach(items, i, it)
    {
        const char *image = fatia_json_str(it, "image"), *policy = fatia_json_str(it, "policy");
        if (!image || !policy || !strcmp(policy, "Always") ||
            !fatia_image_unpacked(s, image, host_base))
            return false;
    }
    return true;
}

static bool key_in(const struct job *j, const char *key)
{
    for (; j; j = j->next) {
        if (!strcmp(j->key, key))
            return true;
    }
    return false;
}

/* Whether a job of items reaches a registry: a policy Always, or an image not stored. */
static bool needs_pull(const struct fatia_image_store *s, const json_t *items)
{
    size_t i;
    json_t *it;

    json_array_foreach(items, i, it)
    {
        const char *image = fatia_json_str(it, "image"), *policy = fatia_json_str(it, "policy");
        char digest[128], why[256];
        json_t *cfg = NULL;
        bool have;
        if (!image || !policy || !strcmp(policy, "Always"))
            return true;
        have = fatia_image_get(s, image, UINT32_MAX, digest, sizeof(digest), &cfg, NULL, 0, why,
                               sizeof(why)) == 0;
        json_decref(cfg);
        if (!have && strcmp(policy, "Never"))
            return true;
    }
    return false;
}

int fatia_image_puller_submit(struct fatia_image_puller *q, const char *key, const json_t *items,
                              const char *auth_file, uint32_t host_base)
{
    struct job *j;
    struct lane *l;

    if (strlen(key) >= sizeof(j->key))
        return -EINVAL;
    if (fatia_image_puller_pending(q, key))
        return -EBUSY;
    j = fatia_calloc(1, sizeof(*j));
    if (!j)
        return -ENOMEM;
    snprintf(j->key, sizeof(j->key), "%s", key);
    snprintf(j->auth, sizeof(j->auth), "%s", auth_file ? auth_file : "");
    j->items = json_deep_copy(items); /* the thread's own: never shared with the loop */
    j->host_base = host_base;
    if (!j->items) {
        job_free(j);
        return -ENOMEM;
    }
    l = &q->sh->lanes[needs_pull(&q->sh->store, items) ? LANE_PULL : LANE_UNPACK];
    pthread_mutex_lock(&q->sh->mu);
    if (l->queue_tail)
        l->queue_tail->next = j;
    else
        l->queue = j;
    l->queue_tail = j;
    pthread_cond_broadcast(&q->sh->work); /* one condition for both lanes */
    pthread_mutex_unlock(&q->sh->mu);
    return 0;
}

bool fatia_image_puller_pending(const struct fatia_image_puller *q, const char *key)
{
    bool in;

    pthread_mutex_lock(&q->sh->mu);
    in = key_in(q->sh->finished, key);
    for (size_t i = 0; i < LANES && !in; i++)
        in = key_in(q->sh->lanes[i].queue, key) || key_in(q->sh->lanes[i].running, key);
    pthread_mutex_unlock(&q->sh->mu);
    return in;
}

bool fatia_image_puller_busy(const struct fatia_image_puller *q)
{
    bool busy;

    pthread_mutex_lock(&q->sh->mu);
    busy = false;
    for (size_t i = 0; i < LANES; i++)
        busy = busy || q->sh->lanes[i].queue || q->sh->lanes[i].running;
    pthread_mutex_unlock(&q->sh->mu);
    return busy;
}

void fatia_image_puller_free(struct fatia_image_puller *q)
{
    if (!q)
        return;
    event_free(q->ev);
    pthread_mutex_lock(&q->sh->mu);
    q->sh->stop = true;
    pthread_cond_broadcast(&q->sh->work);
    pthread_mutex_unlock(&q->sh->mu);
    if (fatia_image_puller_busy(q))
        fatia_info("agent: an image pull or unpack is still running; it is left to finish");
    shared_unref(q->sh);
    fatia_free(q);
}
