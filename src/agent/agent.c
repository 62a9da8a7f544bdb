/*
 * agent/agent.c: the node agent's controller (see agent.h; docs/agent.md has the Pod contract).
 *
 * Model. One struct apod per pod this agent serves or ran, keyed by the pod's uid (a pod deleted
 * and created again under its name is another pod). Inputs: the Pod watch (all namespaces; pods
 * bound to a node this agent serves), the shims' status files (inotify on DATA/agent/status, and
 * a one-second tick that also notices dead shims), and the answers of the agent's own writes.
 * Outputs: the finalizer, the pod status (strategic merge patches of the status subresource,
 * one in flight per pod, coalesced), Events, and the shims.
 *
 *            runnable, not terminal,                 finalizer added:
 *            no conflicting slice here               start_pod (dirs, devices, cgroup, spec,
 *   IDLE ------------------------------> ADMIT ---------------------------> ACTIVE
 *    |  ^  slice held by a running pod     |   spawn fatia-shim                |
 *    |  +---------- BLOCKED <--------------+                                   | status file
 *    |   (released)                                                            | "done", or the
 *    | deleted before starting: remove the finalizer                           | shim died (its
 *    v                                                                         v processes are
 *  (forgotten)  <------ pod gone from the API: clean up the state ------ DONE    stopped)
 *                                                       ^ deleted: final status written, then
 *                                                         the finalizer removed
 *
 *   ACTIVE, pod deleted (or gone): stop.json + SIGTERM to the shim (pid + start time), which
 *   signals the pod's process group and SIGKILLs it after the grace period.
 *
 * Invariants:
 *   - never start a pod twice: a pod is started only from IDLE, only when DATA/agent/pods/<uid>
 *     can be created (mkdir is the claim; it survives restarts), only when its API status shows
 *     no container this agent ran before, and the shim refuses a pod whose status file exists;
 *   - a slice is never used by two pods at once on this node: a pod whose slice is held by a pod
 *     that is ADMIT or ACTIVE here waits in BLOCKED (an Event says which pod holds it);
 *   - the finalizer goes only after every process of the pod is gone and the final status is
 *     written;
 *   - every write carries the pod's uid, so a pod created again under the same name is never
 *     touched by writes meant for the old one.
 *
 * Rejected: polling the API for pods (the watch gives order and resumption), keeping pod state
 * in fatiad's memory only (a restart would lose exit codes), and a status update (PUT) with
 * resourceVersion (conflicts with the placement's writes on every bind; a patch of the fields the
 * agent owns never conflicts).
 */
#include "base/compat.h"

#include "agent/agent.h"

#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "agent/cni.h"
#include "agent/computemode.h"
#include "agent/devfilter.h"
#include "agent/gpuhealth_agent.h"
#include "agent/gpuwatch_agent.h"
#include "agent/imgpull.h"
#include "agent/localpath.h"
#include "agent/mps.h"
#include "agent/mps_files.h"
#include "agent/nbhome.h"
#include "agent/oci.h"
#include "agent/oci_pod.h"
#include "agent/podrefs.h"
#include "agent/podspec.h"
#include "agent/podstatus.h"
#include "agent/probe.h"
#include "agent/proc.h"
#include "agent/pullauth.h"
#include "agent/refvol.h"
#include "agent/runtime.h"
#include "agent/shim.h"
#include "agent/vgpu_files.h"
#include "agent/vgpu_ns.h"
#include "agent/vgpu_slice.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "base/str.h"
#include "client/client.h"
#include "client/plugin.h"
#include "model/kinds/kinds.h"
#include "model/quantity.h"
#include "vgpu/region.h"

static void reconcile(struct fatia_agent *a, struct apod *p);
static void push_status(struct fatia_agent *a, struct apod *p);

/* Retries of the agent's writes: 100 ms doubling to 30 s, plus up to half of it as jitter. */
#define RETRY_BASE (100 * FATIA_USEC_PER_MSEC)
#define RETRY_MAX  (30 * FATIA_USEC_PER_SEC)
/* A write the budget refused is tried again after this (plus jitter). */
#define BUDGET_WAIT (50 * FATIA_USEC_PER_MSEC)
/* The agent's share of the event loop: API writes (patches and Events) per second, and the
 * burst; past it writes wait (patches) or are dropped (Events), so that no tenant's pods can make
 * the agent flood fatiad. Warnings: a burst of 20 lines, then 5 a second. */
#define WRITES_PER_SEC 500
#define WRITES_BURST   1000
#define WARN_PER_SEC   5
#define WARN_BURST     20

struct mpsd {
    char uuid[128];
    struct fatia_mps_daemon *d;
    unsigned refs;
    struct mpsd *next;
};

/* ---- options ---- */

int fatia_agent_opts_set(struct fatia_agent_opts *o, const char *kv, char *why, size_t why_n)
{
    const char *eq = strchr(kv, '=');
    const char *v = eq ? eq + 1 : NULL;
    size_t kl = eq ? (size_t)(eq - kv) : strlen(kv);
    int64_t d;
    uint64_t u;
    int r;

#define KEY(s) (kl == strlen(s) && !strncmp(kv, s, kl))
    if (!v) {
        snprintf(why, why_n, "expected KEY=VALUE, got '%s'", kv);
        return -EINVAL;
    }
    if (KEY("nodes"))
        o->nodes = v;
    else if (KEY("shim"))
        o->shim = v;
    else if (KEY("vgpu-lib"))
        o->vgpu_lib = v;
    else if (KEY("uid-map"))
        o->uid_map = v;
    else if (KEY("cgroup"))
        o->cgroup = v;
    else if (KEY("mps-control"))
        o->mps_control = v;
    else if (KEY("vgpu-log"))
        o->vgpu_log = v;
    else if (KEY("gpu-watch-nvml"))
        o->gpu_watch_nvml = v;
    else if (!strncmp(kv, "gpu-health", 10) && fatia_agent_gpuhealth_opt(o, kv, v, why, why_n, &r))
        return r;
    else if (KEY("cdi-root"))
        o->cdi_root = v;
    else if (KEY("vgpu-namespace")) {
        if (strcmp(v, "auto") && strcmp(v, "off")) {
            snprintf(why, why_n, "vgpu-namespace: expected auto or off");
            return -EINVAL;
        }
        o->no_vgpu_namespace = !strcmp(v, "off");
    } else if (KEY("gpu-compute-mode")) {
        if (strcmp(v, "manage") && strcmp(v, "leave")) {
            snprintf(why, why_n, "gpu-compute-mode: expected manage or leave");
            return -EINVAL;
        }
        o->gpu_compute_manage = !strcmp(v, "manage");
    } else if (KEY("gpu-watch")) {
        if (strcmp(v, "auto") && strcmp(v, "off")) {
            if (fatia_parse_duration_usec(v, &d) < 0 || d < 10 * FATIA_USEC_PER_MSEC ||
                d > 250 * FATIA_USEC_PER_MSEC) {
                snprintf(why, why_n,
                         "gpu-watch: expected auto, off or a period from 10ms to "
                         "250ms");
                return -EINVAL;
            }
            o->gpu_watch_ms = (unsigned)(d / FATIA_USEC_PER_MSEC);
        } else {
            o->gpu_watch = v;
        }
    } else if (KEY("storage-check")) {
        if (fatia_parse_duration_usec(v, &d) < 0 || d < 100 * FATIA_USEC_PER_MSEC ||
            d > 600 * FATIA_USEC_PER_SEC) {
            snprintf(why, why_n, "storage-check: expected a period from 100ms to 10m");
            return -EINVAL;
        }
        o->storage_check_ms = (unsigned)(d / FATIA_USEC_PER_MSEC);
    } else if (KEY("gpu-util-every")) {
        if (fatia_parse_duration_usec(v, &d) < 0 || d < 100 * FATIA_USEC_PER_MSEC ||
            d > 10 * FATIA_USEC_PER_SEC) {
            snprintf(why, why_n, "gpu-util-every: expected a period from 100ms to 10s");
            return -EINVAL;
        }
        o->gpu_util_ms = (unsigned)(d / FATIA_USEC_PER_MSEC);
    } else if (KEY("gpu-watch-reserve")) {
        if (fatia_quantity_parse_bytes(v, &u) < 0 || u > (1ull << 36)) {
            snprintf(why, why_n, "gpu-watch-reserve: expected a byte count up to 64Gi");
            return -EINVAL;
        }
        o->gpu_watch_reserve = u;
    } else if (KEY("runc"))
        o->runc = v;
    else if (KEY("host-path-namespaces"))
        o->host_path_namespaces = v;
    else if (KEY("host-network-namespaces"))
        o->host_network_namespaces = v;
    else if (KEY("registry-auth"))
        o->registry_auth = v;
    else if (KEY("image-store-max")) {
        if (fatia_quantity_parse_bytes(v, &u) < 0) {
            snprintf(why, why_n, "image-store-max: expected a size (e.g. 50Gi)");
            return -EINVAL;
        }
        o->image_store_max = u;
    } else if (KEY("image-gc-high-percent") || KEY("image-gc-low-percent")) {
        if (fatia_parse_u64(v, &u) < 0 || u < 1 || u > 100) {
            snprintf(why, why_n, "%.*s: expected 1..100", (int)kl, kv);
            return -EINVAL;
        }
        if (KEY("image-gc-high-percent"))
            o->image_gc_high = (unsigned)u;
        else
            o->image_gc_low = (unsigned)u;
    } else if (KEY("insecure-registries"))
        o->insecure_registries = v;
    else if (KEY("pod-pids-max")) {
        if (fatia_parse_u64(v, &u) < 0 || u < 16 || u > 4194304) {
            snprintf(why, why_n, "pod-pids-max: expected 16..4194304");
            return -EINVAL;
        }
        o->pod_pids_max = (int64_t)u;
    } else if (KEY("runtime")) {
        if (strcmp(v, "process") && strcmp(v, "oci") && strcmp(v, "auto")) {
            snprintf(why, why_n, "runtime: expected process, oci or auto");
            return -EINVAL;
        }
        o->runtime = v;
    } else if (KEY("pod-dir")) {
        if (!v[0] || strlen(v) > 1000) {
            snprintf(why, why_n, "pod-dir: expected a directory (at most 1000 bytes)");
            return -EINVAL;
        }
        o->pod_dir = v;
    } else if (KEY("user")) {
        if (strcmp(v, "auto") && strcmp(v, "namespace") && strcmp(v, "current")) {
            snprintf(why, why_n, "user: expected auto, namespace or current");
            return -EINVAL;
        }
        o->user = v;
    } else if (KEY("uid-base")) {
        if (fatia_parse_u64(v, &u) < 0 || u < 1000 || u > 0x7fff0000u) {
            snprintf(why, why_n, "uid-base: expected 1000..2147418112");
            return -EINVAL;
        }
        o->uid_base = (uint32_t)u;
    } else if (KEY("device-filter")) {
        if (strcmp(v, "on") && strcmp(v, "off")) {
            snprintf(why, why_n, "device-filter: expected on or off");
            return -EINVAL;
        }
        o->no_device_filter = !strcmp(v, "off");
    } else if (KEY("restart-backoff") || KEY("restart-backoff-max")) {
        if (fatia_parse_duration_usec(v, &d) < 0 || d < FATIA_USEC_PER_MSEC ||
            d > 3600 * FATIA_USEC_PER_SEC) {
            snprintf(why, why_n, "%.*s: expected a duration from 1ms to 1h", (int)kl, kv);
            return -EINVAL;
        }
        if (KEY("restart-backoff"))
            o->backoff_initial_ms = d / FATIA_USEC_PER_MSEC;
        else
            o->backoff_max_ms = d / FATIA_USEC_PER_MSEC;
    } else if (KEY("inventory-wait")) {
        if (fatia_parse_duration_usec(v, &d) < 0 || d < 0 || d > 600 * FATIA_USEC_PER_SEC) {
            snprintf(why, why_n, "inventory-wait: expected a duration from 0 to 10m");
            return -EINVAL;
        }
        o->inventory_wait_ms = d / FATIA_USEC_PER_MSEC;
        o->inventory_wait_set = true;
    } else if (KEY("log-max-bytes")) {
        if (fatia_quantity_parse_bytes(v, &u) < 0 || u < 4096 || u > (1ull << 34)) {
            snprintf(why, why_n, "log-max-bytes: expected 4096 to 16Gi");
            return -EINVAL;
        }
        o->log_max_bytes = (int64_t)u;
    } else {
        snprintf(why, why_n, "unknown agent option '%.*s'", (int)kl, kv);
        return -EINVAL;
    }
#undef KEY
    return 0;
}

/* ---- small helpers ---- */

/* A warning, rate-limited (a tenant's pods must not flood the log): the line let through after
 * some were refused says how many. */
static void agent_warn(struct fatia_agent *a, const char *fmt, ...) FATIA_PRINTF(2, 3);

static void agent_warn(struct fatia_agent *a, const char *fmt, ...)
{
    uint64_t sup = 0;
    char msg[1200];
    va_list ap;

    if (!fatia_ratelimit_take(&a->warn, fatia_now_mono_usec(), &sup))
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (sup)
        fatia_warn("%s (%" PRIu64 " agent warnings suppressed before this one)", msg, sup);
    else
        fatia_warn("%s", msg);
}

/* A directory with exactly mode (fatiad's umask is 077), made or found (never through a link).
 * 0 when made, 1 when it existed, or -errno. */
static int mkdir_mode(const char *path, mode_t mode)
{
    struct stat sb;
    int made = mkdir(path, mode) == 0;

    if (!made && errno != EEXIST)
        return -errno;
    if (lstat(path, &sb) < 0)
        return -errno;
    if (!S_ISDIR(sb.st_mode))
        return -ENOTDIR;
    if ((sb.st_mode & 07777) != mode && chmod(path, mode) < 0)
        return -errno;
    return made ? 0 : 1;
}

static int write_durable(const char *path, const char *text)
{
    char tmp[4300], dir[4300], *slash;
    int fd, r = 0;
    size_t n = strlen(text);

    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -errno;
    if (write(fd, text, n) != (ssize_t)n)
        r = -EIO;
    if (r == 0 && fsync(fd) < 0)
        r = -errno;
    close(fd);
    if (r == 0 && rename(tmp, path) < 0)
        r = -errno;
    if (r == 0) {
        snprintf(dir, sizeof(dir), "%s", path);
        slash = strrchr(dir, '/');
        if (slash) {
            *slash = '\0';
            fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (fd >= 0) {
                (void)fsync(fd);
                close(fd);
            }
        }
    }
    return r;
}

/* Removes name under dirfd and everything below it, never following a symbolic link (a pod's
 * own files are removed as root, so a link it planted must not lead elsewhere). */
static void rm_tree_at(int dfd, const char *name, int depth)
{
    int fd;
    DIR *d;
    struct dirent *e;

    if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
        return;
    if (depth > 64)
        return;
    fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        rm_tree_at(dirfd(d), e->d_name, depth + 1);
    }
    closedir(d);
    (void)unlinkat(dfd, name, AT_REMOVEDIR);
}

static void rm_tree(const char *path)
{
    rm_tree_at(AT_FDCWD, path, 0);
}

static const char *fatia_ctlr_meta_str(const json_t *obj, const char *key)
{
    return fatia_json_str(json_object_get(obj, "metadata"), key);
}

static bool has_finalizer(const json_t *pod)
{
    const json_t *f = json_object_get(json_object_get(pod, "metadata"), "finalizers");
    size_t i;
    json_t *v;

    json_array_foreach(f, i, v)
    {
        if (json_string_value(v) && !strcmp(json_string_value(v), FATIA_AGENT_FINALIZER))
            return true;
    }
    return false;
}

static bool serves_node(const struct fatia_agent *a, const char *node)
{
    const char *p;
    size_t n;

    if (!node || !node[0])
        return false;
    if (!a->o.nodes || !strcmp(a->o.nodes, "*"))
        return true;
    n = strlen(node);
    for (p = a->o.nodes; (p = strstr(p, node)); p += n) {
        if ((p == a->o.nodes || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
            return true;
    }
    return false;
}

static uint64_t rv_of(const json_t *obj)
{
    const char *rv = fatia_ctlr_meta_str(obj, "resourceVersion");
    uint64_t v = 0;

    if (rv)
        (void)fatia_parse_u64(rv, &v);
    return v;
}

void fatia_agent_log_dir(const struct fatia_agent *a, const struct apod *p, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%s_%s_%s", a->logs_dir, p->ns, p->name, p->uid);
}

struct apod *fatia_agent_pod(struct fatia_agent *a, const char *uid)
{
    return uid ? fatia_strmap_get(&a->by_uid, uid) : NULL;
}

const json_t *fatia_agent_pod_object(void *agent, const char *ns, const char *name)
{
    struct fatia_agent *a = agent;

    for (struct apod *p = a->pods; p; p = p->next)
        if (p->pod && p->in_api && !strcmp(p->ns, ns) && !strcmp(p->name, name))
            return p->pod;
    return NULL;
}

static struct apod *pod_new(struct fatia_agent *a, const char *uid, const char *ns,
                            const char *name)
{
    struct apod *p = fatia_calloc(1, sizeof(*p));

    if (!p)
        return NULL;
    snprintf(p->uid, sizeof(p->uid), "%s", uid);
    snprintf(p->ns, sizeof(p->ns), "%s", ns ? ns : "");
    snprintf(p->name, sizeof(p->name), "%s", name ? name : "");
    snprintf(p->wait_reason, sizeof(p->wait_reason), "ContainerCreating");
    p->agent = a;
    if (fatia_strmap_put(&a->by_uid, p->uid, p) < 0) {
        fatia_free(p);
        return NULL;
    }
    p->next = a->pods;
    a->pods = p;
    return p;
}

static void pod_free(struct fatia_agent *a, struct apod *p)
{
    struct apod **pp;

    fatia_strmap_del(&a->by_uid, p->uid);
    for (pp = &a->pods; *pp; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    }
    json_decref(p->pod);
    json_decref(p->shim);
    json_decref(p->slices);
    json_decref(p->mps_gpus);
    json_decref(p->acct);
    json_decref(p->sa_tokens);
    if (p->retry_ev)
        event_free(p->retry_ev);
    fatia_free(p);
}

/* ---- retries ---- */

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    struct apod *p = arg;
    struct fatia_agent *a = p->agent;

    (void)fd;
    (void)what;
    if (a->stopping)
        return;
    if (p->status_waiting && fatia_now_mono_usec() >= p->status_retry_at) {
        p->status_waiting = false;
        push_status(a, p);
    }
    reconcile(a, p); /* last: it may free p */
}

/* Wakes the pod at the earliest retry time still ahead. */
static void arm_retry(struct fatia_agent *a, struct apod *p)
{
    fatia_usec_t now = fatia_now_mono_usec(), at = 0, d;
    struct timeval tv;

    if (p->fin_retry_at > now)
        at = p->fin_retry_at;
    if (p->status_waiting && p->status_retry_at > now && (!at || p->status_retry_at < at))
        at = p->status_retry_at;
    if (!at)
        return;
    if (!p->retry_ev && !(p->retry_ev = evtimer_new(a->base, on_retry, p)))
        return; /* the one-second tick retries instead */
    d = at - now;
    tv.tv_sec = (time_t)(d / FATIA_USEC_PER_SEC);
    tv.tv_usec = (suseconds_t)(d % FATIA_USEC_PER_SEC);
    evtimer_add(p->retry_ev, &tv);
}

/* The time of the next try after `failures` consecutive failures (0: the budget refused). */
static fatia_usec_t retry_time(struct fatia_agent *a, unsigned failures)
{
    uint64_t r = fatia_backoff_rand(&a->rnd);

    if (!failures)
        return fatia_now_mono_usec() + BUDGET_WAIT + (fatia_usec_t)(r % (uint64_t)BUDGET_WAIT);
    return fatia_now_mono_usec() + fatia_backoff_delay(RETRY_BASE, RETRY_MAX, failures, r);
}

/* ---- API writes ---- */

struct op {
    struct fatia_agent *a;
    char uid[128];
    int kind;
};

enum {
    OP_FINALIZER_ADD,
    OP_FINALIZER_REMOVE,
    OP_STATUS,
    OP_EVENT,
    OP_CONDITION /* one condition of the status (fatia_agent_pod_condition): no retry */
};

static struct op *op_new(struct fatia_agent *a, const struct apod *p, int kind)
{
    struct op *o = fatia_calloc(1, sizeof(*o));

    if (!o)
        return NULL;
    o->a = a;
    o->kind = kind;
    if (p)
        snprintf(o->uid, sizeof(o->uid), "%s", p->uid);
    a->outstanding++;
    return o;
}

static void op_end(struct op *o)
{
    struct fatia_agent *a = o->a;

    fatia_free(o);
    if (--a->outstanding == 0 && a->stopping && a->stop_done) {
        void (*done)(void *) = a->stop_done;
        a->stop_done = NULL;
        done(a->stop_arg);
    }
}

static void take_pod(struct apod *p, const json_t *obj)
{
    uint64_t rv = rv_of(obj);

    if (!obj || (p->pod && rv < p->pod_rv))
        return;
    if (!p->name[0] && fatia_ctlr_meta_str(obj, "name")) {
        snprintf(p->ns, sizeof(p->ns), "%s",
                 fatia_ctlr_meta_str(obj, "namespace") ? fatia_ctlr_meta_str(obj, "namespace")
                                                       : "");
        snprintf(p->name, sizeof(p->name), "%s", fatia_ctlr_meta_str(obj, "name"));
    }
    json_decref(p->pod);
    p->pod = json_incref((json_t *)obj);
    p->pod_rv = rv;
}

static void emit_event(struct fatia_agent *a, const struct apod *p, const char *type,
                       const char *reason, const char *container, const char *fmt, ...)
    FATIA_PRINTF(6, 7);

static void event_done(void *arg, const struct fatia_client_result *res)
{
    struct op *o = arg;

    if (res->status)
        fatia_debug("agent: event not recorded: %s", fatia_json_str(res->status, "message"));
    op_end(o);
}

static void emit_event(struct fatia_agent *a, const struct apod *p, const char *type,
                       const char *reason, const char *container, const char *fmt, ...)
{
    const char *node = fatia_json_str(json_object_get(p->pod, "spec"), "nodeName");
    char msg[1024], name[300], now[40], field[300];
    json_t *ev, *inv;
    struct op *o;
    va_list ap;

    if (a->stopping)
        return;
    if (!fatia_ratelimit_take(&a->writes, fatia_now_mono_usec(), NULL)) {
        if (a->events_dropped++ % 1000 == 0)
            agent_warn(a,
                       "agent: over the write budget (%d a second): %" PRIu64 " Events not "
                       "recorded so far",
                       WRITES_PER_SEC, a->events_dropped);
        return;
    }
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fatia_time_format_rfc3339(fatia_now_real_usec(), false, now, sizeof(now));
    snprintf(name, sizeof(name), "%.200s.%" PRIx64 "%04" PRIx64, p->name,
             (uint64_t)fatia_now_real_usec(), ++a->event_seq & 0xffff);
    inv = json_pack("{s:s,s:s,s:s,s:s,s:s}", "apiVersion", "v1", "kind", "Pod", "namespace", p->ns,
                    "name", p->name, "uid", p->uid);
    if (container) {
        snprintf(field, sizeof(field), "spec.containers{%s}", container);
        json_object_set_new(inv, "fieldPath", json_string(field));
    }
    ev = json_pack("{s:s,s:s,s:{s:s,s:s},s:o,s:s,s:s,s:s,s:i,s:s,s:s,s:{s:s,s:s},s:s,s:s}",
                   "apiVersion", "v1", "kind", "Event", "metadata", "name", name, "namespace",
                   p->ns, "involvedObject", inv, "reason", reason, "message", msg, "type", type,
                   "count", 1, "firstTimestamp", now, "lastTimestamp", now, "source", "component",
                   "fatia-agent", "host", node ? node : "", "reportingComponent", "fatia-agent",
                   "reportingInstance", node ? node : "");
    if (!ev)
        return;
    o = op_new(a, p, OP_EVENT);
    if (!o || fatia_client_create(a->client, ev, NULL, event_done, o) < 0) {
        if (o)
            op_end(o);
    }
    json_decref(ev);
}

static void patch_done(void *arg, const struct fatia_client_result *res)
{
    struct op *o = arg;
    struct fatia_agent *a = o->a;
    struct apod *p = fatia_agent_pod(a, o->uid);

    if (!p || a->stopping) {
        op_end(o);
        return;
    }
    if (res->obj)
        take_pod(p, res->obj);
    /* a failed write is tried again after a back-off, never at once: the pod may be deleted
     * under it (a 422 until the watch brings the deletion), and a loop of immediate retries
     * would starve fatiad */
    switch (o->kind) {
    case OP_FINALIZER_ADD:
        p->fin_inflight = false;
        if (p->st == AP_ADMIT)
            p->st = AP_IDLE;
        if (res->status) {
            p->fin_retry_at = retry_time(a, ++p->fin_failures);
            agent_warn(a,
                       "agent: pod %s/%s: cannot add the finalizer (failure %u, next try in "
                       "%" PRId64 " ms): %s",
                       p->ns, p->name, p->fin_failures,
                       (p->fin_retry_at - fatia_now_mono_usec()) / FATIA_USEC_PER_MSEC,
                       fatia_json_str(res->status, "message"));
            if (res->code == 404)
                p->in_api = false;
            arm_retry(a, p);
            break;
        }
        p->fin_failures = 0;
        break;
    case OP_FINALIZER_REMOVE:
        p->fin_removing = false;
        if (res->status && res->code != 404) {
            p->fin_retry_at = retry_time(a, ++p->fin_failures);
            if (res->code != 409)
                agent_warn(a, "agent: pod %s/%s: cannot remove the finalizer (failure %u): %s",
                           p->ns, p->name, p->fin_failures, fatia_json_str(res->status, "message"));
            arm_retry(a, p);
        } else {
            p->fin_failures = 0;
        }
        break;
    case OP_STATUS:
        p->status_inflight = false;
        if (res->status && res->code != 404) {
            p->status_retry_at = retry_time(a, ++p->status_failures);
            if (res->code != 409)
                agent_warn(a, "agent: pod %s/%s: cannot write the status (failure %u): %s", p->ns,
                           p->name, p->status_failures, fatia_json_str(res->status, "message"));
            /* the status is pushed again when the back-off ends */
            p->status_dirty = false;
            p->status_waiting = true;
            arm_retry(a, p);
        } else {
            p->status_failures = 0;
            if (p->status_dirty) {
                p->status_dirty = false;
                push_status(a, p);
            }
        }
        break;
    }
    op_end(o);
    reconcile(a, p);
}

static int send_patch(struct fatia_agent *a, struct apod *p, int kind, const char *sub,
                      json_t *patch)
{
    struct op *o;
    char *text;
    int r;

    if (!fatia_ratelimit_take(&a->writes, fatia_now_mono_usec(), NULL))
        return -EAGAIN;
    /* the uid makes the write a precondition: a new pod under the same name is never touched */
    json_object_set_new(fatia_json_object_ensure(patch, "metadata"), "uid", json_string(p->uid));
    text = json_dumps(patch, JSON_COMPACT);
    if (!text)
        return -ENOMEM;
    o = op_new(a, p, kind);
    if (!o) {
        free(text);
        return -ENOMEM;
    }
    r = fatia_client_patch(a->client, &fatia_kind_pod, p->ns, p->name, sub, FATIA_PATCH_STRATEGIC,
                           text, strlen(text), NULL, patch_done, o);
    free(text);
    if (r < 0)
        op_end(o);
    return r;
}

static void add_finalizer(struct fatia_agent *a, struct apod *p)
{
    json_t *patch = json_pack("{s:{s:[s]}}", "metadata", "finalizers", FATIA_AGENT_FINALIZER);

    int r;

    if (fatia_now_mono_usec() < p->fin_retry_at) {
        arm_retry(a, p);
        json_decref(patch);
        return;
    }
    p->st = AP_ADMIT;
    p->fin_inflight = true;
    r = send_patch(a, p, OP_FINALIZER_ADD, NULL, patch);
    if (r < 0) {
        p->fin_inflight = false;
        p->st = AP_IDLE;
        p->fin_retry_at = retry_time(a, r == -EAGAIN ? 0 : ++p->fin_failures);
        arm_retry(a, p);
    }
    json_decref(patch);
}

static void remove_finalizer(struct fatia_agent *a, struct apod *p)
{
    json_t *patch;

    int r;

    if (p->fin_removing)
        return;
    if (fatia_now_mono_usec() < p->fin_retry_at) {
        arm_retry(a, p);
        return;
    }
    patch = json_pack("{s:{s:[s]}}", "metadata", "$deleteFromPrimitiveList/finalizers",
                      FATIA_AGENT_FINALIZER);
    p->fin_removing = true;
    r = send_patch(a, p, OP_FINALIZER_REMOVE, NULL, patch);
    if (r < 0) {
        p->fin_removing = false;
        p->fin_retry_at = retry_time(a, r == -EAGAIN ? 0 : ++p->fin_failures);
        arm_retry(a, p);
    }
    json_decref(patch);
}

static void push_status(struct fatia_agent *a, struct apod *p)
{
    json_t *st, *patch;
    const json_t *cur;

    if (!p->pod || !p->in_api || a->stopping)
        return;
    if (p->status_inflight) {
        p->status_dirty = true;
        return;
    }
    if (fatia_now_mono_usec() < p->status_retry_at) {
        p->status_waiting = true;
        arm_retry(a, p);
        return;
    }
    if (!p->start_time[0])
        fatia_time_format_rfc3339(fatia_now_real_usec(), false, p->start_time,
                                  sizeof(p->start_time));
    st = fatia_pod_status_build(p->pod, p->shim, p->start_time, p->wait_reason, p->wait_msg,
                                fatia_now_real_usec());
    if (!st)
        return;
    if (fatia_pod_status_same(p->pod, st)) {
        json_decref(st);
        return;
    }
    /* a strategic merge keeps a condition's fields the patch leaves out: clear them */
    {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(st, "conditions"), i, c)
        {
            if (!json_object_get(c, "reason"))
                json_object_set_new(c, "reason", json_null());
            if (!json_object_get(c, "message"))
                json_object_set_new(c, "message", json_null());
        }
    }
    cur = json_object_get(p->pod, "status");
    if (json_object_get(cur, "reason") && !json_object_get(st, "reason"))
        json_object_set_new(st, "reason", json_null());
    if (json_object_get(cur, "message") && !json_object_get(st, "message"))
        json_object_set_new(st, "message", json_null());
    patch = json_pack("{s:o}", "status", st);
    p->status_inflight = true;
    {
        int r = send_patch(a, p, OP_STATUS, "status", patch);
        if (r < 0) {
            p->status_inflight = false;
            p->status_retry_at = retry_time(a, r == -EAGAIN ? 0 : ++p->status_failures);
            p->status_waiting = true;
            arm_retry(a, p);
        }
    }
    json_decref(patch);
}

/* ---- reading the shims ---- */

static void status_path(const struct fatia_agent *a, const char *uid, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%s.json", a->status_dir, uid);
}

static json_t *read_status(const struct fatia_agent *a, const char *uid)
{
    char path[4400];
    json_error_t je;

    status_path(a, uid, path, sizeof(path));
    return json_load_file(path, 0, &je);
}

/* Whether the pod's shim runs: the process this fatiad spawned has not exited, or someone holds
 * the pod's lock (only a live shim does; a lock dies with its holder, pid reuse or not). */
static bool shim_alive(struct fatia_agent *a, struct apod *p)
{
    char path[4400];
    int fd;
    bool alive;

    if (p->shim_child && p->shim_pid > 0) {
        int status;
        pid_t r = waitpid(p->shim_pid, &status, WNOHANG);
        if (r == 0)
            return true;
        p->shim_child = false;
        if (r == p->shim_pid && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
            fatia_warn("agent: pod %s/%s: fatia-shim (pid %d) ended with %s %d", p->ns, p->name,
                       (int)p->shim_pid, WIFEXITED(status) ? "status" : "signal",
                       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    }
    snprintf(path, sizeof(path), "%s/%s/lock", a->pods_dir, p->uid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    alive = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
    close(fd);
    return alive;
}

static const json_t *find_named(const json_t *arr, const char *name)
{
    size_t i;
    json_t *e;

    json_array_foreach(arr, i, e)
    {
        const char *n = fatia_json_str(e, "name");
        if (n && name && !strcmp(n, name))
            return e;
    }
    return NULL;
}

static const char *state_kind(const json_t *c)
{
    const json_t *st = json_object_get(c, "state");

    if (json_object_get(st, "running"))
        return "running";
    if (json_object_get(st, "terminated"))
        return "terminated";
    return "waiting";
}

/* Whether a terminated record with this containerID is in a shim status (state or lastState of
 * any container): the identity of an ended instance. */
static bool knows_instance(const json_t *st, const char *id)
{
    const char *lists[] = {"initContainers", "containers"};

    if (!id)
        return false;
    for (int k = 0; k < 2; k++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(st, lists[k]), i, c)
        {
            const char *keys[] = {"state", "lastState"};
            for (int j = 0; j < 2; j++) {
                const char *x = fatia_json_str(
                    json_object_get(json_object_get(c, keys[j]), "terminated"), "containerID");
                if (x && !strcmp(x, id))
                    return true;
            }
        }
    }
    return false;
}

static void ended_events(struct fatia_agent *a, struct apod *p, const char *name, const json_t *t)
{
    const char *reason = fatia_json_str(t, "reason"), *msg = fatia_json_str(t, "message");

    if (!reason)
        return;
    if (!strcmp(reason, "StartError"))
        emit_event(a, p, "Warning", "Failed", name, "Error: %s",
                   msg ? msg : "the process did not start");
    else if (!strcmp(reason, "OOMKilled"))
        emit_event(a, p, "Warning", "OOMKilled", name,
                   "Container %s was killed by the kernel's OOM killer (the pod's memory limit)",
                   name);
}

/* kubelet's probe Events: Unhealthy at each failed run, Killing when a probe killed it. */
static void probe_events(struct fatia_agent *a, struct apod *p, const char *name, const json_t *o,
                         const json_t *c)
{
    static const char *const keys[] = {"startup", "liveness", "readiness"};
    const char *killed = fatia_json_str(c, "probeKilled");
    int64_t rc = 0, orc = -1;

    (void)fatia_json_int(c, "restartCount", &rc);
    (void)fatia_json_int(o, "restartCount", &orc);
    if (rc != orc)
        o = NULL; /* a new instance: its counts start again */

    for (int k = 0; k < 3; k++) {
        const json_t *n = json_object_get(json_object_get(c, "probes"), keys[k]);
        const json_t *b = json_object_get(json_object_get(o, "probes"), keys[k]);
        int64_t nf = 0, bf = 0;
        (void)fatia_json_int(n, "failures", &nf);
        (void)fatia_json_int(b, "failures", &bf);
        if (nf > bf)
            emit_event(a, p, "Warning", "Unhealthy", name, "%s probe failed: %s",
                       fatia_agent_probe_kind_name((enum fatia_agent_probe_kind)k),
                       fatia_json_str(n, "message") ? fatia_json_str(n, "message") : "");
    }
    if (killed && !fatia_json_str(o, "probeKilled"))
        emit_event(a, p, "Normal", "Killing", name,
                   "Container %s failed %s probe, will be restarted", name,
                   !strcmp(killed, "Startup") ? "startup" : "liveness");
}

/* Events for what changed between two shim statuses of a pod (old NULL: the first one). */
static void diff_events(struct fatia_agent *a, struct apod *p, const json_t *old, const json_t *st)
{
    const char *lists[] = {"initContainers", "containers"};

    for (int k = 0; k < 2; k++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(st, lists[k]), i, c)
        {
            const char *name = fatia_json_str(c, "name");
            const json_t *o = find_named(json_object_get(old, lists[k]), name);
            const json_t *term = json_object_get(json_object_get(c, "state"), "terminated");
            const json_t *last = json_object_get(json_object_get(c, "lastState"), "terminated");
            const json_t *wait = json_object_get(json_object_get(c, "state"), "waiting");
            const char *wr = fatia_json_str(wait, "reason");
            int64_t rc = 0, orc = -1, pid = 0;

            (void)fatia_json_int(c, "restartCount", &rc);
            if (o)
                (void)fatia_json_int(o, "restartCount", &orc);
            (void)fatia_json_int(c, "pid", &pid);
            if (!strcmp(state_kind(c), "running") &&
                (!o || strcmp(state_kind(o), "running") || rc != orc))
                emit_event(a, p, "Normal", "Started", name,
                           "Started container %s (pid %" PRId64 ", restart %" PRId64 ")", name, pid,
                           rc);
            if (last && !knows_instance(old, fatia_json_str(last, "containerID")))
                ended_events(a, p, name, last);
            if (term && !knows_instance(old, fatia_json_str(term, "containerID")))
                ended_events(a, p, name, term);
            if (wr && !strcmp(wr, "CrashLoopBackOff") &&
                (!o || strcmp(state_kind(o), "waiting") ||
                 !knows_instance(old, fatia_json_str(last, "containerID"))))
                emit_event(a, p, "Warning", "BackOff", name, "%s",
                           fatia_json_str(wait, "message")
                               ? fatia_json_str(wait, "message")
                               : "Back-off restarting failed container");
            probe_events(a, p, name, o, c);
        }
    }
    if (fatia_json_str(st, "reason") && !fatia_json_str(old, "reason") &&
        !strcmp(fatia_json_str(st, "reason"), "DeadlineExceeded"))
        emit_event(a, p, "Warning", "DeadlineExceeded", NULL, "%s",
                   fatia_json_str(st, "message") ? fatia_json_str(st, "message") : "");
}

static void release_resources(struct fatia_agent *a, struct apod *p);

static void take_shim_status(struct fatia_agent *a, struct apod *p, json_t *st, bool quiet)
{
    int64_t seq = 0;

    if (!st)
        return;
    (void)fatia_json_int(st, "seq", &seq);
    if (p->shim && seq <= p->seq) {
        json_decref(st);
        return;
    }
    if (!quiet)
        diff_events(a, p, p->shim, st);
    json_decref(p->shim);
    p->shim = st;
    p->seq = seq;
    if (!p->start_time[0] && fatia_json_str(st, "startTime"))
        snprintf(p->start_time, sizeof(p->start_time), "%s", fatia_json_str(st, "startTime"));
    if (fatia_json_bool(st, "done", false) && p->st != AP_DONE) {
        p->st = AP_DONE;
        release_resources(a, p);
        fatia_info("agent: pod %s/%s: every process is gone (%s)", p->ns, p->name,
                   fatia_json_str(st, "phase") ? fatia_json_str(st, "phase") : "?");
    }
    push_status(a, p);
    fatia_agent_logs_poke(a);
}

/* The shim died before the pod ended (killed, crashed): stop what is left of the pod by pid plus
 * start time, and record the containers as kubelet does for containers it lost. */
static void shim_lost(struct fatia_agent *a, struct apod *p)
{
    json_t *st = read_status(a, p->uid);
    const char *lists[] = {"initContainers", "containers"};
    int64_t pgid = 0, sid = 0, pstart = 0, pid = 0, seq = 0;
    char now[40], msg[300], path[4400];
    char *text;

    if (st && fatia_json_bool(st, "done", false)) {
        take_shim_status(a, p, st, false);
        return;
    }
    fatia_time_format_rfc3339(fatia_now_real_usec(), false, now, sizeof(now));
    if (!st) {
        /* the shim died before it wrote anything: nothing of the pod ever ran */
        st = json_pack("{s:i,s:s,s:I,s:[],s:[]}", "version", FATIA_SHIM_SPEC_VERSION, "uid", p->uid,
                       "seq", (json_int_t)0, "initContainers", "containers");
        if (!st)
            return;
    }
    (void)fatia_json_int(st, "pgid", &pgid);
    (void)fatia_json_int(st, "sid", &sid);
    (void)fatia_json_int(st, "pauseStart", &pstart);
    if (!fatia_json_int(json_object_get(st, "shim"), "pid", &pid) || pid <= 0)
        pid = p->shim_pid;
    for (int k = 0; k < 2; k++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(st, lists[k]), i, c)
        {
            int64_t cp = 0, cs = 0;
            if (strcmp(state_kind(c), "running"))
                continue;
            if (fatia_json_int(c, "pid", &cp) && fatia_json_int(c, "pidStart", &cs))
                (void)fatia_proc_signal((pid_t)cp, (uint64_t)cs, SIGKILL);
            json_object_set_new(
                c, "state",
                json_pack("{s:{s:i,s:s,s:s,s:s}}", "terminated", "exitCode", 137, "reason",
                          "ContainerStatusUnknown", "message",
                          "The container could not be located when the pod was terminated",
                          "finishedAt", now));
            json_object_set_new(c, "started", json_false());
            json_object_set_new(c, "ready", json_false());
            json_object_del(c, "pid");
        }
    }
    if (pgid > 0 && sid > 0)
        (void)fatia_proc_group_signal((pid_t)pgid, (pid_t)sid, (uint64_t)pstart, SIGKILL);
    if (p->cgroup[0])
        fatia_cgroup_kill(p->cgroup);
    {
        /* containers: runc's state, mounts, the address: what the shim would have released */
        char pd[1400];
        snprintf(pd, sizeof(pd), "%s/%.128s", a->pods_dir, p->uid);
        (void)fatia_runtime_oci_release(pd);
    }
    (void)fatia_json_int(st, "seq", &seq);
    snprintf(msg, sizeof(msg),
             "the pod's supervisor (fatia-shim, pid %" PRId64 ") ended before the pod did; its "
             "processes were stopped",
             pid);
    json_object_set_new(st, "seq", json_integer(seq + 1));
    json_object_set_new(st, "phase", json_string("Failed"));
    json_object_set_new(st, "reason", json_string("SupervisorLost"));
    json_object_set_new(st, "message", json_string(msg));
    json_object_set_new(st, "done", json_true());
    fatia_warn("agent: pod %s/%s: %s", p->ns, p->name, msg);
    text = json_dumps(st, JSON_COMPACT);
    status_path(a, p->uid, path, sizeof(path));
    if (text && write_durable(path, text) < 0)
        fatia_warn("agent: cannot write '%s', ignoring", path);
    free(text);
    emit_event(a, p, "Warning", "SupervisorLost", NULL, "%s", msg);
    take_shim_status(a, p, st, true);
}

static void check_shim(struct fatia_agent *a, struct apod *p)
{
    json_t *st;

    if (p->st != AP_ACTIVE)
        return;
    st = read_status(a, p->uid);
    if (st)
        take_shim_status(a, p, st, false);
    if (p->st == AP_ACTIVE && !shim_alive(a, p))
        shim_lost(a, p);
}

/* ---- starting a pod ---- */

static bool slice_held(struct fatia_agent *a, struct apod *self, const char *slice,
                       struct apod **ret)
{
    for (struct apod *q = a->pods; q; q = q->next) {
        size_t i;
        json_t *s;
        if (q == self || (q->st != AP_ACTIVE && q->st != AP_ADMIT))
            continue;
        json_array_foreach(q->slices, i, s)
        {
            if (json_string_value(s) && !strcmp(json_string_value(s), slice)) {
                *ret = q;
                return true;
            }
        }
    }
    return false;
}

/* The slices the pod's annotation names, into p->slices. */
static void collect_slices(struct apod *p)
{
    struct fatia_pod_devices d;
    char why[256];

    json_decref(p->slices);
    p->slices = json_array();
    if (fatia_pod_devices_parse(p->pod, &d, why, sizeof(why)) < 0)
        return;
    for (size_t i = 0; i < d.n; i++) {
        bool dup = false;
        size_t k;
        json_t *s;
        json_array_foreach(p->slices, k, s) dup =
            dup || !strcmp(json_string_value(s), d.v[i].slice);
        if (!dup)
            json_array_append_new(p->slices, json_string(d.v[i].slice));
    }
    fatia_pod_devices_release(&d);
}

/* ---- trusting only placement ---- */

/* The device named `slice` in the ResourceSlices the device controller publishes for node
 * (`<node>-gpu.nvidia.com-<i>`, driver gpu.nvidia.com, spec.nodeName the node), or NULL. */
static const json_t *inventory_device(struct fatia_agent *a, const char *node, const char *slice)
{
    const struct fatia_kind *k = fatia_kind_find("resource.k8s.io/v1", "ResourceSlice", NULL);
    char name[400];

    for (int i = 0; k && i < 64; i++) {
        const json_t *rs, *spec, *dev;
        size_t j;

        snprintf(name, sizeof(name), "%s-gpu.nvidia.com-%d", node, i);
        rs = fatia_client_cached(a->client, k, NULL, name);
        if (!rs)
            break;
        spec = json_object_get(rs, "spec");
        if (!fatia_json_str(spec, "nodeName") || strcmp(fatia_json_str(spec, "nodeName"), node) ||
            !fatia_json_str(spec, "driver") ||
            strcmp(fatia_json_str(spec, "driver"), "gpu.nvidia.com"))
            continue;
        json_array_foreach(json_object_get(spec, "devices"), j, dev)
        {
            const char *n = fatia_json_str(dev, "name");
            if (n && !strcmp(n, slice))
                return dev;
        }
    }
    return NULL;
}

static const char *attr_str(const json_t *dev, const char *name)
{
    return fatia_json_str(json_object_get(json_object_get(dev, "attributes"), name), "string");
}

static int minor_of(const char *slice)
{
    int v = 0, digits = 0;

    if (strncmp(slice, "gpu-", 4))
        return -1;
    for (const char *q = slice + 4; *q >= '0' && *q <= '9' && digits < 6; q++, digits++)
        v = v * 10 + (*q - '0');
    return digits ? v : -1;
}

/* The agent trusts only placement (issue 15): the annotation names slice ids and is bound to the
 * pod's uid (every entry's podUID); UUIDs, MIG UUIDs and minors come from this node's inventory,
 * never from the pod. An entry naming a slice the node does not have, bound to another pod, or
 * whose kind, UUID or minor differs from the inventory's is refused (why names the entry and the
 * field). A capped slice's memoryBytes is at most the inventory's memory. */
static int trust_devices(struct fatia_agent *a, struct apod *p, struct fatia_pod_devices *d,
                         char *why, size_t why_n)
{
    const char *node = fatia_json_str(json_object_get(p->pod, "spec"), "nodeName");

    for (size_t i = 0; i < d->n; i++) {
        struct fatia_pod_device *x = &d->v[i];
        const json_t *e = json_array_get(d->root, i);
        const char *puid = fatia_json_str(e, "podUID");
        const json_t *dev = node ? inventory_device(a, node, x->slice) : NULL;
        const char *type = attr_str(dev, "type"), *uuid = attr_str(dev, "uuid");
        const char *parent = attr_str(dev, "parentUUID"), *want, *mem;
        const char *kind = fatia_dev_kind_name(x->kind);
        int minor = minor_of(x->slice);

        if (!puid || strcmp(puid, p->uid)) {
            snprintf(why, why_n,
                     "annotation %s[%zu].podUID: %s%s%s: the devices were not placed for this pod "
                     "(uid %s)",
                     FATIA_ANN_DEVICES, i, puid ? "'" : "missing", puid ? puid : "",
                     puid ? "'" : "", p->uid);
            return -FATIA_E_INVALID;
        }
        if (!dev) {
            snprintf(why, why_n, "annotation %s[%zu].slice: '%s' is not a slice of node '%s'",
                     FATIA_ANN_DEVICES, i, x->slice, node ? node : "");
            return -ENOENT; /* the only refusal a cache behind the API can cause */
        }
        if (!type || strcmp(!strcmp(type, "gpu") ? "whole" : type, kind)) {
            snprintf(why, why_n,
                     "annotation %s[%zu].kind: '%s', but slice '%s' of node '%s' is of type '%s'",
                     FATIA_ANN_DEVICES, i, kind, x->slice, node, type ? type : "?");
            return -FATIA_E_INVALID;
        }
        want = x->kind == FATIA_DEV_MIG ? parent : uuid;
        if (!want || minor < 0 || (x->kind == FATIA_DEV_MIG && !uuid)) {
            snprintf(why, why_n, "slice '%s' of node '%s' has no UUID or minor in the inventory",
                     x->slice, node);
            return -FATIA_E_INVALID;
        }
        if (x->uuid && strcmp(x->uuid, want)) {
            snprintf(why, why_n,
                     "annotation %s[%zu].uuid: '%s' is not the GPU of slice '%s' on node '%s'",
                     FATIA_ANN_DEVICES, i, x->uuid, x->slice, node);
            return -FATIA_E_INVALID;
        }
        if (x->kind == FATIA_DEV_MIG && x->mig_uuid && strcmp(x->mig_uuid, uuid)) {
            snprintf(why, why_n,
                     "annotation %s[%zu].migUuid: '%s' is not the MIG device of slice '%s' on "
                     "node '%s'",
                     FATIA_ANN_DEVICES, i, x->mig_uuid, x->slice, node);
            return -FATIA_E_INVALID;
        }
        if (x->minor >= 0 && x->minor != minor) {
            snprintf(why, why_n,
                     "annotation %s[%zu].minor: %d is not the device of slice '%s' (minor %d)",
                     FATIA_ANN_DEVICES, i, x->minor, x->slice, minor);
            return -FATIA_E_INVALID;
        }
        /* from here on, only the inventory's values */
        x->uuid = want;
        x->mig_uuid = x->kind == FATIA_DEV_MIG ? uuid : NULL;
        x->minor = minor;
        mem = fatia_json_str(json_object_get(json_object_get(dev, "capacity"), "memory"), "value");
        if ((x->kind == FATIA_DEV_TIMESLICE || x->kind == FATIA_DEV_FRACTION) && mem) {
            uint64_t cap;
            if (fatia_quantity_parse_bytes(mem, &cap) == 0 && x->memory_bytes > cap)
                x->memory_bytes = cap;
        }
    }
    return 0;
}

/* The pod can never run as it is: it fails (phase Failed, the reason), with an Event. */
static void fail_pod(struct fatia_agent *a, struct apod *p, const char *reason, const char *why)
{
    p->config_error = true;
    snprintf(p->wait_msg, sizeof(p->wait_msg), "%s", why);
    agent_warn(a, "agent: pod %s/%s: %s: %s", p->ns, p->name, reason, why);
    json_decref(p->shim);
    p->shim = json_pack("{s:s,s:s,s:s,s:[],s:[],s:b}", "phase", "Failed", "reason", reason,
                        "message", why, "initContainers", "containers", "done", 1);
    p->st = AP_DONE;
    emit_event(a, p, "Warning", reason, NULL, "%s", why);
    push_status(a, p);
}

static bool node_is_real(struct fatia_agent *a, const json_t *pod)
{
    const char *node = fatia_json_str(json_object_get(pod, "spec"), "nodeName");
    const json_t *n = fatia_client_cached(a->client, &fatia_kind_node, NULL, node);
    const char *inv = fatia_json_str(json_object_get(json_object_get(n, "metadata"), "labels"),
                                     "fatia.dev/inventory");

    return inv && !strcmp(inv, "nvml");
}

/* --agent gpu-compute-mode=manage: the mode the GPU had before its MPS daemon, given back. */
static void mps_give_back_mode(struct fatia_agent *a, const char *uuid)
{
    char state[4500], why[512] = "";

    if (!a->o.gpu_compute_manage)
        return;
    snprintf(state, sizeof(state), "%s/mps/%s.compute-mode", a->dir, uuid);
    if (fatia_agent_compute_mode_release(a->o.gpu_watch_nvml, uuid, state, why, sizeof(why)) < 0)
        agent_warn(a, "agent: GPU %s: %s (it stays in EXCLUSIVE_PROCESS)", uuid, why);
}

static struct mpsd *mps_get(struct fatia_agent *a, const struct fatia_pod_device *d, char *why,
                            size_t why_n)
{
    struct fatia_mps_config cfg;
    struct mpsd *m;
    char base[4300];
    int r;

    for (m = a->mpsd; m; m = m->next) {
        if (!strcmp(m->uuid, d->uuid))
            return m;
    }
    m = fatia_calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    snprintf(m->uuid, sizeof(m->uuid), "%s", d->uuid);
    snprintf(base, sizeof(base), "%s/mps", a->dir);
    (void)mkdir_mode(base, 0711);
    /* the directory is named after the GPU's UUID, so a restarted agent finds it again */
    /* as root the daemon gets a /dev/shm of its own, which its clients share (mps.h) */
    cfg = (struct fatia_mps_config){.control_bin = a->o.mps_control,
                                    .base_dir = base,
                                    .name = d->uuid,
                                    .gpu = d->uuid,
                                    .private_shm = geteuid() == 0};
    if (a->o.gpu_compute_manage) {
        /* EXCLUSIVE_PROCESS while the daemon runs: no context beside it (computemode.h) */
        char state[4500];
        snprintf(state, sizeof(state), "%s/%s.compute-mode", base, d->uuid);
        r = fatia_agent_compute_mode_hold(a->o.gpu_watch_nvml, d->uuid, state, why, why_n);
        if (r < 0) {
            fatia_free(m);
            return NULL;
        }
    }
    r = fatia_mps_start(&cfg, &m->d);
    if (r < 0) {
        snprintf(why, why_n, "cannot start the MPS control daemon of GPU %s: %s", d->uuid,
                 fatia_strerror(r));
        mps_give_back_mode(a, d->uuid);
        fatia_free(m);
        return NULL;
    }
    /* pods run under their own uid: mps.c opens the pipe directory to them */
    m->next = a->mpsd;
    a->mpsd = m;
    return m;
}

static void mps_unref(struct fatia_agent *a, const char *uuid)
{
    struct mpsd **pp, *m;

    for (pp = &a->mpsd; (m = *pp); pp = &m->next) {
        if (strcmp(m->uuid, uuid))
            continue;
        if (m->refs > 0 && --m->refs == 0) {
            fatia_info("agent: no pod uses MPS on GPU %s any more: stopping its daemon", uuid);
            fatia_mps_free(m->d);
            mps_give_back_mode(a, uuid);
            *pp = m->next;
            fatia_free(m);
        }
        return;
    }
}

static void release_resources(struct fatia_agent *a, struct apod *p)
{
    size_t i;
    json_t *g;

    json_array_foreach(p->mps_gpus, i, g) mps_unref(a, json_string_value(g));
    json_decref(p->mps_gpus);
    p->mps_gpus = NULL;
    json_array_clear(p->slices);
    /* pods waiting for these slices may go now */
    for (struct apod *q = a->pods; q; q = q->next) {
        if (q->st == AP_BLOCKED)
            event_active(a->tick, EV_TIMEOUT, 0);
    }
}

static void fail_before_start(struct fatia_agent *a, struct apod *p, const char *reason,
                              const char *why)
{
    p->config_error = true;
    /* a missing ConfigMap or Secret (p->ref_wait) is waited for on the same back-off: kubelet
     * retries the pod's sync until it appears */
    if (!strcmp(reason, "ErrImagePull") ||
        (!strcmp(reason, "CreateContainerConfigError") && p->ref_wait)) {
        /* kubelet's image back-off: tried again after the restart back-off (10 s doubling to
         * 5 min), ImagePullBackOff meanwhile */
        int64_t ms = a->o.backoff_initial_ms ? a->o.backoff_initial_ms : 10000;
        int64_t max = a->o.backoff_max_ms ? a->o.backoff_max_ms : 300000;
        for (unsigned i = 0; i < p->pull_failures && ms < max; i++)
            ms *= 2;
        p->pull_failures++;
        p->pull_failed_at = fatia_now_mono_usec();
        p->pull_retry_at = p->pull_failed_at + FATIA_MIN(ms, max) * FATIA_USEC_PER_MSEC;
    }
    snprintf(p->wait_reason, sizeof(p->wait_reason), "%s", reason);
    snprintf(p->wait_msg, sizeof(p->wait_msg), "%s", why);
    fatia_warn("agent: pod %s/%s: %s: %s", p->ns, p->name, reason, why);
    emit_event(a, p, "Warning", "Failed", NULL, "Error: %s", why);
    push_status(a, p);
}

static int chown_path(struct fatia_agent *a, const char *path, uid_t uid, gid_t gid)
{
    if (!a->switch_user)
        return 0;
    return lchown(path, uid, gid) < 0 ? -errno : 0;
}

/* A ConfigMap or Secret of the pod's own namespace from the client's cache (agent/podrefs.h):
 * the namespace is the pod's, never one the pod names. */
struct ref_ctx {
    struct fatia_agent *a;
    const struct apod *p;
    const char *auth_path; /* pull_auth's file; NULL: POD_DIR/<uid>/pull-auth.json */
};

static const json_t *ref_get(void *ctx, bool secret, const char *name)
{
    struct ref_ctx *rc = ctx;
    const struct fatia_kind *k = fatia_kind_by_resource("", secret ? "secrets" : "configmaps");

    return k ? fatia_client_cached(rc->a->client, k, rc->p->ns, name) : NULL;
}

/* The kubernetes Service's variables, as kubelet sets them for every pod (the pod's own env
 * wins): in a pod network the API's names map to its gateway (the agent's proxy:
 * apiproxy.c; fatiad's certificate names kubernetes.default.svc); on the host's network
 * fatiad's loopback listener, or on a node role the control plane's --server host (its
 * certificate names its --listen address). */
static int api_env(struct fatia_agent *a, const struct fatia_oci_pod *op, struct fatia_env *env)
{
    const char *host = op && !op->host_network ? "kubernetes.default.svc"
                       : a->api_host[0]        ? a->api_host
                                               : "127.0.0.1";
    char port[16], url[300], n[5][64];
    const char *vars[9][2];
    int r = 0;

    if (!a->api_port)
        return 0;
    snprintf(port, sizeof(port), "%u", a->api_port);
    snprintf(url, sizeof(url), "tcp://%s:%s", host, port);
    snprintf(n[0], sizeof(n[0]), "KUBERNETES_PORT_%s_TCP", port);
    snprintf(n[1], sizeof(n[1]), "KUBERNETES_PORT_%s_TCP_PROTO", port);
    snprintf(n[2], sizeof(n[2]), "KUBERNETES_PORT_%s_TCP_PORT", port);
    snprintf(n[3], sizeof(n[3]), "KUBERNETES_PORT_%s_TCP_ADDR", port);
    vars[0][0] = "KUBERNETES_SERVICE_HOST", vars[0][1] = host;
    vars[1][0] = "KUBERNETES_SERVICE_PORT", vars[1][1] = port;
    vars[2][0] = "KUBERNETES_SERVICE_PORT_HTTPS", vars[2][1] = port;
    vars[3][0] = "KUBERNETES_PORT", vars[3][1] = url;
    vars[4][0] = n[0], vars[4][1] = url;
    vars[5][0] = n[1], vars[5][1] = "tcp";
    vars[6][0] = n[2], vars[6][1] = port;
    vars[7][0] = n[3], vars[7][1] = host;
    for (size_t i = 0; r == 0 && i < 8; i++)
        if (!fatia_env_get(env, vars[i][0]))
            r = fatia_env_set(env, vars[i][0], vars[i][1]);
    return r;
}

/* podrefs.h's token: the pod's own ServiceAccount token (satoken.c). */
static const char *ref_token(void *ctx, const char *audience, int64_t exp_s)
{
    struct ref_ctx *rc = ctx;

    return fatia_agent_sa_token(rc->a, (struct apod *)rc->p, audience, exp_s);
}

/* oci_pod.h's claim_path: a claim of the pod's own namespace (localpath.h). */
static int claim_path(void *ctx, const char *claim, char *ret, size_t n, char *why, size_t why_n)
{
    struct ref_ctx *rc = ctx;

    return fatia_agent_claim_path(rc->a, rc->p->ns, claim, ret, n, why, why_n);
}

/* oci_pod.h's pull_secrets_auth: the pod's imagePullSecrets (its own namespace's) as an auth
 * file in its directory, 0600 (pullauth.h); ret_path "" when it names none that give one. */
static int pull_auth(void *ctx, const json_t *pod, char *ret_path, size_t n)
{
    struct ref_ctx *rc = ctx;
    struct fatia_podrefs refs = {.get = ref_get, .ctx = rc, .ns = rc->p->ns};
    char skipped[512];
    json_t *doc = fatia_agent_pull_auth(pod, &refs, skipped, sizeof(skipped));
    char *text;
    int r;

    if (skipped[0])
        emit_event(rc->a, rc->p, "Warning", "FailedToRetrieveImagePullSecret", NULL,
                   "Unable to retrieve some image pull secrets (%s); attempting to pull the "
                   "image may not succeed.",
                   skipped);
    ret_path[0] = '\0';
    if (!doc)
        return 0;
    text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    if (!text)
        return -ENOMEM;
    if (rc->auth_path)
        snprintf(ret_path, n, "%s", rc->auth_path);
    else
        snprintf(ret_path, n, "%s/%s/pull-auth.json", rc->a->pods_dir, rc->p->uid);
    r = write_durable(ret_path, text);
    free(text);
    if (r < 0)
        ret_path[0] = '\0';
    return r;
}

static json_t *build_ctrs(struct fatia_agent *a, struct apod *p, const json_t *list,
                          const struct fatia_pod_devices *devs, const char *work,
                          const char *run_dir, bool real, uid_t uid, gid_t gid,
                          const struct fatia_oci_pod *op, char *why, size_t why_n, int *err)
{
    json_t *out = json_array();
    size_t i;
    json_t *c;

    json_array_foreach(list, i, c)
    {
        const char *name = fatia_json_str(c, "name"), *cwd = fatia_json_str(c, "workingDir");
        struct fatia_env env = {0};
        struct fatia_devenv_opts dopt = {.vgpu_lib = a->have_vgpu ? a->vgpu_lib : NULL,
                                         .vgpu_log = a->o.vgpu_log,
                                         .in_container = op != NULL};
        char acct_name[512], acct[4800], pipe_dir[4400] = "", layer[1500] = "", shm[4400] = "";
        json_t *argv = NULL, *envj, *oci = NULL, *probes = NULL;
        int r;

        fatia_pod_devices_acct_name(devs, name, acct_name, sizeof(acct_name));
        if (acct_name[0]) {
            struct fatia_vgpu_slice sl = {.library = dopt.vgpu_lib, .accounting_file = acct};
            snprintf(acct, sizeof(acct), "%s/%s.acct", run_dir, acct_name);
            if (!dopt.vgpu_lib) {
                snprintf(why, why_n,
                         "container '%s' has a memory-capped slice but the "
                         "interposer library '%.300s' is missing",
                         name, a->vgpu_lib);
                *err = -ENOENT;
                goto fail;
            }
            for (size_t k = 0; k < devs->n; k++) {
                const struct fatia_pod_device *d = &devs->v[k];
                if (strcmp(d->container, name) || sl.n_devices >= FATIA_VGPU_MAX_DEVICES)
                    continue;
                sl.uuids[sl.n_devices] = d->kind == FATIA_DEV_MIG ? d->mig_uuid : d->uuid;
                sl.cap[sl.n_devices++] =
                    fatia_pod_device_cap(d) ? fatia_pod_device_cap(d) : FATIA_VGPU_NO_LIMIT;
            }
            if (access(acct, F_OK) < 0) {
                r = fatia_agent_vgpu_slice_prepare(&sl, why, why_n);
                if (r < 0) {
                    *err = r;
                    goto fail;
                }
                (void)chown_path(a, acct, uid, gid);
                json_object_set_new(p->acct, acct, json_integer(0));
            }
            {
                /* what a container runtime mounts so that the cap holds (vgpu_files.h) */
                char vdir[1400];
                snprintf(vdir, sizeof(vdir), "%s/%s/vgpu", a->pods_dir, p->uid);
                r = fatia_agent_vgpu_files_write(&sl, vdir, name, why, why_n);
                if (r < 0) {
                    *err = r;
                    goto fail;
                }
                if (!op && geteuid() == 0 && !a->o.no_vgpu_namespace) {
                    /* the process mode's read-only /etc layer (vgpu_ns.h) */
                    snprintf(layer, sizeof(layer), "%s/%s.etc", vdir, name);
                    r = fatia_agent_vgpu_ns_layer(&sl, layer);
                    if (r < 0) {
                        snprintf(why, why_n, "cannot write '%.300s': %s", layer, fatia_strerror(r));
                        *err = r;
                        goto fail;
                    }
                }
            }
            dopt.acct_file = acct;
        }
        for (size_t k = 0; k < devs->n; k++) {
            const struct fatia_pod_device *d = &devs->v[k];
            if (strcmp(d->container, name) || d->kind != FATIA_DEV_MPS)
                continue;
            if (real) {
                struct mpsd *m = mps_get(a, d, why, why_n);
                if (!m) {
                    *err = -FATIA_E_DRIVER;
                    goto fail;
                }
                m->refs++;
                json_array_append_new(p->mps_gpus, json_string(d->uuid));
                snprintf(pipe_dir, sizeof(pipe_dir), "%s", fatia_mps_pipe_dir(m->d));
                if (fatia_mps_shm_dir(m->d))
                    snprintf(shm, sizeof(shm), "%s", fatia_mps_shm_dir(m->d));
                if (op) {
                    /* the container reaches the daemon through its mounts (mps_files.h) */
                    char vdir[1400];
                    snprintf(vdir, sizeof(vdir), "%s/%s/vgpu", a->pods_dir, p->uid);
                    r = fatia_agent_mps_files_write(vdir, name, pipe_dir, shm[0] ? shm : NULL, why,
                                                    why_n);
                    if (r < 0) {
                        *err = r;
                        goto fail;
                    }
                    snprintf(pipe_dir, sizeof(pipe_dir), "%s", FATIA_MPS_CONTAINER_PIPE);
                }
            } else if (op) {
                /* a simulated GPU in a container: the variables a real one's container has */
                snprintf(pipe_dir, sizeof(pipe_dir), "%s", FATIA_MPS_CONTAINER_PIPE);
            } else {
                /* a simulated GPU has no driver to run a daemon on: same variables, no daemon */
                snprintf(pipe_dir, sizeof(pipe_dir), "%s/mps/%s/pipe", a->dir, d->uuid);
                fatia_info("agent: pod %s/%s: container '%s': GPU %s is simulated, so no MPS "
                           "daemon is started; the MPS variables are set all the same",
                           p->ns, p->name, name, d->uuid);
            }
            break;
        }
        dopt.mps_pipe_dir = pipe_dir[0] ? pipe_dir : NULL;
        {
            struct ref_ctx rc = {a, p};
            struct fatia_podrefs refs = {.get = ref_get,
                                         .ctx = &rc,
                                         .ns = p->ns,
                                         .pod_ip = op && !op->host_network ? FATIA_OCI_POD_IP_MARK
                                                                           : NULL};
            r = fatia_podspec_env_refs(p->pod, c, work, &refs, &env, why, why_n);
            /* a missing ConfigMap or Secret: the pod waits for it, tried again as kubelet */
            p->ref_wait = r == -ESRCH;
            if (r == 0)
                r = api_env(a, op, &env);
        }
        if (r == 0)
            r = fatia_pod_devices_env(devs, name, &dopt, &env, why, why_n);
        if (r == 0 && op)
            r = fatia_oci_ctr_prepare(op, c, &env, &argv, &oci, why, why_n);
        else if (r == 0)
            r = fatia_podspec_argv(c, &env, &argv, why, why_n);
        if (r == 0 && oci && acct_name[0]) {
            /* the accounting file is the container's user's (its host id), as in the process
             * mode it is the pod's uid's: the interposer opens it read-write */
            json_int_t hu = json_integer_value(json_object_get(oci, "hostUid"));
            json_int_t hg = json_integer_value(json_object_get(oci, "hostGid"));
            if (lchown(acct, (uid_t)hu, (gid_t)hg) < 0) {
                snprintf(why, why_n, "container '%s': cannot give its accounting file to uid %lld",
                         name, (long long)hu);
                json_decref(oci);
                json_decref(argv);
                oci = argv = NULL;
                r = -EIO;
            }
        }
        if (r == 0 && list == json_object_get(json_object_get(p->pod, "spec"), "containers"))
            r = fatia_agent_probe_spec(c, i, &probes, why, why_n); /* probe.h: the shim runs them */
        if (r < 0) {
            json_decref(oci);
            json_decref(argv);
            fatia_env_release(&env);
            *err = r == -ENOMEM || r == -ENOENT || r == -EIO ? r : -FATIA_E_INVALID;
            goto fail;
        }
        envj = json_array();
        for (size_t k = 0; k < env.n; k++)
            json_array_append_new(envj, json_string(env.v[k]));
        fatia_env_release(&env);
        json_array_append_new(out, json_pack("{s:s,s:o,s:o,s:s}", "name", name, "argv", argv, "env",
                                             envj, "workingDir", cwd && cwd[0] ? cwd : work));
        if (json_is_true(json_object_get(c, "stdin"))) /* kubectl attach -i (shim_attach.c) */
        {
            json_t *si = json_pack("{s:b,s:b}", "stdin", 1, "stdinOnce",
                                   json_is_true(json_object_get(c, "stdinOnce")));
            json_object_update(json_array_get(out, json_array_size(out) - 1), si);
            json_decref(si);
        }
        if (json_is_true(json_object_get(c, "tty"))) /* kubectl attach -t (shim_attach.c) */
            json_object_set_new(json_array_get(out, json_array_size(out) - 1), "tty", json_true());
        if (layer[0])
            json_object_set_new(json_array_get(out, json_array_size(out) - 1), "vgpuLayer",
                                json_string(layer));
        if (!op && shm[0]) /* the process mode binds the daemon's /dev/shm (runtime_process.c) */
            json_object_set_new(json_array_get(out, json_array_size(out) - 1), "mpsShm",
                                json_string(shm));
        if (oci)
            json_object_set_new(json_array_get(out, json_array_size(out) - 1), "oci", oci);
        if (probes)
            json_object_set_new(json_array_get(out, json_array_size(out) - 1), "probes", probes);
    }
    return out;
fail:
    json_decref(out);
    return NULL;
}

static int spawn_shim(struct fatia_agent *a, struct apod *p, const char *pod_dir)
{
    char *argv[] = {a->shim, (char *)pod_dir, NULL};
    static char path_env[] = "PATH=" FATIA_AGENT_DEFAULT_PATH;
    char *envp[] = {path_env, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none, all;
    char log[4400];
    pid_t pid;
    int r;

    snprintf(log, sizeof(log), "%s/shim.log", pod_dir);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawnattr_init(&at);
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setflags(&at,
                             POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    r = posix_spawn(&pid, a->shim, &fa, &at, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (r != 0)
        return -r;
    p->shim_pid = pid;
    p->shim_child = true;
    (void)fatia_proc_start_time(pid, &p->shim_start);
    return 0;
}

/* The image store's GC (image.h), keeping every image a pod running here uses (the imageIDs in
 * the spec.json of every active pod, the one just started included). After each start in
 * containers and every minute. */
static void image_gc(struct fatia_agent *a)
{
    static const char *const lists[] = {"initContainers", "containers"};
    json_t *in_use;
    unsigned removed = 0;

    if (a->pulls && fatia_image_puller_busy(a->pulls))
        return; /* the next start or minute does it: never beside a pull into the layout */
    in_use = json_array();
    for (struct apod *p = a->pods; p; p = p->next) {
        char path[1400];
        json_t *sp;
        if (p->st != AP_ACTIVE && p->st != AP_ADMIT)
            continue;
        snprintf(path, sizeof(path), "%s/%.128s/spec.json", a->pods_dir, p->uid);
        sp = json_load_file(path, 0, NULL);
        for (size_t l = 0; sp && l < FATIA_ARRAY_SIZE(lists); l++) {
            size_t i;
            json_t *c;
            json_array_foreach(json_object_get(sp, lists[l]), i, c)
            {
                const char *d = fatia_json_str(json_object_get(c, "oci"), "imageID");
                if (d)
                    json_array_append_new(in_use, json_string(d));
            }
        }
        json_decref(sp);
    }
    (void)fatia_image_gc(&a->images, a->o.image_store_max,
                         a->o.image_gc_high ? a->o.image_gc_high : 85,
                         a->o.image_gc_low ? a->o.image_gc_low : 80, in_use, &removed);
    if (removed)
        fatia_info("agent: image GC removed %u unused image%s from %s", removed,
                   removed == 1 ? "" : "s", a->images.dir);
    json_decref(in_use);
}

/* The host id range of the pod's namespace in containers: k * 65536 for its k (recorded for
 * good, never given to another namespace; above every uid of the process mode's range). A
 * hostNetwork pod outside the admin's list is refused here too. */
static int pod_host_base(struct fatia_agent *a, struct apod *p, bool host_net, uint32_t *ret,
                         char *why, size_t why_n)
{
    uint32_t k, g;
    int r;

    if (host_net && !fatia_oci_ns_listed(a->o.host_network_namespaces, p->ns)) {
        snprintf(why, why_n,
                 "spec.hostNetwork: not allowed in namespace %s (the node's admin lists the "
                 "namespaces that may: --agent host-network-namespaces)",
                 p->ns);
        return -FATIA_E_INVALID;
    }
    r = fatia_uidmap_get(&a->ranges, p->ns, &k, &g);
    if (r < 0) {
        snprintf(why, why_n, "no host id range for namespace '%s': %s", p->ns, fatia_strerror(r));
        return r;
    }
    *ret = k * FATIA_OCI_IDS;
    return 0;
}

/* ---- images before the start (imgpull.h) ---- */

/* Whether p must wait for its images: an OCI pod whose images are not all stored and unpacked
 * (or that asks for a pull) is handed to the worker, and reconciled again when it is done. A pod
 * the worker already served (p->prefetched), a process-mode pod, or one whose host range cannot
 * be had (start_pod reports that) goes on at once. */
static bool pull_first(struct fatia_agent *a, struct apod *p)
{
    static const char *const lists[] = {"initContainers", "containers"};
    const json_t *spec = json_object_get(p->pod, "spec");
    const char *rtc = fatia_json_str(spec, "runtimeClassName");
    char why[512], auth[1400], auth_path[1400];
    uint32_t host_base;
    json_t *items;
    int r;

    if (!a->oci || !a->pulls || p->prefetched || (rtc && !strcmp(rtc, FATIA_RUNTIME_CLASS_PROCESS)))
        return false;
    if (fatia_image_puller_pending(a->pulls, p->uid))
        return true;
    if (pod_host_base(a, p, fatia_json_bool(spec, "hostNetwork", false), &host_base, why,
                      sizeof(why)) < 0)
        return false;
    items = json_array();
    for (size_t l = 0; l < FATIA_ARRAY_SIZE(lists); l++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(spec, lists[l]), i, c)
        {
            const char *image = fatia_json_str(c, "image");
            if (!image || !image[0])
                continue; /* start_pod names the field */
            json_array_append_new(items,
                                  json_pack("{s:s,s:s,s:b}", "image", image, "policy",
                                            fatia_oci_pull_policy(c, image), "insecure",
                                            fatia_oci_insecure(a->o.insecure_registries, image)));
        }
    }
    if (fatia_image_puller_ready(&a->images, items, host_base)) {
        json_decref(items);
        p->prefetched = true;
        return false;
    }
    {
        /* the pod's imagePullSecrets now, on the loop (the cache is the loop's) */
        struct ref_ctx rc = {a, p, auth_path};
        snprintf(auth_path, sizeof(auth_path), "%s/pull-auth-%.128s.json", a->dir, p->uid);
        r = pull_auth(&rc, p->pod, auth, sizeof(auth));
        if (r < 0)
            auth[0] = '\0';
    }
    r = fatia_image_puller_submit(a->pulls, p->uid, items, auth[0] ? auth : a->o.registry_auth,
                                  host_base);
    if (r == 0) {
        size_t i;
        json_t *it;
        json_array_foreach(items, i, it)
        {
            if (strcmp(fatia_json_str(it, "policy"), "Never"))
                emit_event(a, p, "Normal", "Pulling", NULL, "Pulling image \"%s\"",
                           fatia_json_str(it, "image"));
        }
        p->pull_started_at = fatia_now_mono_usec();
        /* kubelet's Pending pod while it pulls; a retry keeps the last reason
         * (ImagePullBackOff) until it ends, as kubelet's status keeps its last sync's error */
        if (!p->pull_failures) {
            snprintf(p->wait_reason, sizeof(p->wait_reason), "ContainerCreating");
            p->wait_msg[0] = '\0';
            push_status(a, p);
        }
    }
    json_decref(items);
    if (r < 0) {
        fatia_log_errno(FATIA_LOG_WARNING, r, "agent: pod %s/%s: the image puller refused it",
                        p->ns, p->name);
        return false; /* start_pod pulls in place: slow, never lost */
    }
    return true;
}

/* The worker ended p's job (imgpull.h's done; on the loop). */
static void on_pulled(void *arg, const char *uid, int r, const char *why)
{
    struct fatia_agent *a = arg;
    struct apod *p = fatia_agent_pod(a, uid);
    char path[1400];

    snprintf(path, sizeof(path), "%s/pull-auth-%.128s.json", a->dir, uid);
    (void)unlink(path);
    if (!p || a->stopping)
        return;
    if (r < 0) {
        fail_before_start(a, p,
                          r == -ENOENT ? "ErrImageNeverPull"
                          : r == -EIO  ? "ErrImagePull"
                                       : "CreateContainerError",
                          why[0] ? why : fatia_strerror(r));
        return;
    }
    emit_event(a, p, "Normal", "Pulled", NULL,
               "Images of the pod ready in %.3fs (pulled and unpacked off the API's loop)",
               (double)(fatia_now_mono_usec() - p->pull_started_at) / FATIA_USEC_PER_SEC);
    p->prefetched = true;
    reconcile(a, p);
}

/* Whether every projected serviceAccountToken source of the pod has its token (satoken.c);
 * asks for those missing. A pod waits quietly for them before anything is prepared (the first
 * answer comes on the next loop turn), so that no CreateContainerConfigError flaps by. */
static bool sa_tokens_ready(struct fatia_agent *a, struct apod *p)
{
    size_t i, j;
    json_t *v, *src;
    bool ready = true;

    if (!a->client->ops->token_request)
        return true; /* refvol.c refuses the source: CreateContainerConfigError */
    json_array_foreach(json_object_get(json_object_get(p->pod, "spec"), "volumes"), i, v)
    {
        json_array_foreach(json_object_get(json_object_get(v, "projected"), "sources"), j, src)
        {
            const json_t *t = json_object_get(src, "serviceAccountToken");
            const json_t *e = json_object_get(t, "expirationSeconds");
            const char *aud = fatia_json_str(t, "audience");
            if (t && !fatia_agent_sa_token(a, p, aud && *aud ? aud : NULL,
                                           json_is_integer(e) ? json_integer_value(e) : 3600))
                ready = false;
        }
    }
    return ready;
}

void fatia_agent_sa_token_arrived(struct fatia_agent *a, struct apod *p)
{
    if (p->token_wait && p->st == AP_IDLE)
        reconcile(a, p);
}

static void start_pod(struct fatia_agent *a, struct apod *p)
{
    const json_t *spec = json_object_get(p->pod, "spec");
    char pod_dir[4400], run_dir[4400], work[4500], log_dir[4400], why[1024] = "", spath[4500];
    struct fatia_pod_devices devs = {0};
    struct fatia_pod_limits lim;
    uid_t uid = geteuid();
    gid_t gid = getegid();
    json_t *inits = NULL, *apps = NULL, *sp = NULL, *tmpfs = NULL, *hports = NULL;
    bool real = node_is_real(a, p->pod);
    const char *rtc = fatia_json_str(spec, "runtimeClassName");
    bool oci = a->oci && !(rtc && !strcmp(rtc, FATIA_RUNTIME_CLASS_PROCESS));
    bool host_net = fatia_json_bool(spec, "hostNetwork", false);
    struct fatia_oci_pod op = {0};
    struct ref_ctx rc = {a, p};
    struct fatia_podrefs refs = {
        .get = ref_get,
        .ctx = &rc,
        .ns = p->ns,
        /* a client that cannot make tokens: the volume is refused, never waited on */
        .token = a->client->ops->token_request ? ref_token : NULL,
        .pod = p->pod};
    char cdi_node[1600];
    uint32_t host_base = 0;
    bool nb_home = false;
    int64_t v;
    char *text;
    int r, err = 0;

    p->token_wait = oci && !sa_tokens_ready(a, p);
    if (p->token_wait)
        return; /* fatia_agent_sa_token_arrived starts it */
    r = fatia_pod_devices_parse(p->pod, &devs, why, sizeof(why));
    if (r < 0) {
        fail_before_start(a, p, "CreateContainerConfigError", why);
        return;
    }
    r = trust_devices(a, p, &devs, why, sizeof(why));
    if (r < 0) {
        /* kubelet's reason when a device cannot be given to a pod */
        fail_pod(a, p, "UnexpectedAdmissionError", why);
        goto out;
    }
    if (a->switch_user) {
        uint32_t u, g;
        r = fatia_uidmap_get(&a->uids, p->ns, &u, &g);
        if (r < 0) {
            snprintf(why, sizeof(why), "no uid for namespace '%s': %s", p->ns, fatia_strerror(r));
            fail_before_start(a, p, "CreateContainerConfigError", why);
            goto out;
        }
        uid = u;
        gid = g;
    }
    if (oci) {
        r = pod_host_base(a, p, host_net, &host_base, why, sizeof(why));
        if (r < 0) {
            fail_before_start(a, p, "CreateContainerConfigError", why);
            goto out;
        }
        /* the pod's run directory belongs to its containers' root (host_base) */
        uid = host_base;
        gid = host_base;
    }
    if (oci && !host_net) {
        /* hostPort: published by CNI's portmap (a hostNetwork pod binds its ports itself) */
        r = fatia_pod_host_ports(p->pod, &hports, why, sizeof(why));
        if (r == 0 && json_array_size(hports) > 0 &&
            (access("/usr/lib/cni/bridge", X_OK) != 0 ||
             access("/usr/lib/cni/portmap", X_OK) != 0)) {
            snprintf(why, sizeof(why),
                     "%s: this node cannot publish host ports (the CNI plugins bridge and "
                     "portmap, /usr/lib/cni, are not installed)",
                     fatia_json_str(json_array_get(hports, 0), "field"));
            r = -FATIA_E_INVALID;
        }
        if (r < 0) {
            fail_before_start(a, p, "CreateContainerConfigError", why);
            goto out;
        }
    }
    snprintf(pod_dir, sizeof(pod_dir), "%s/%s", a->pods_dir, p->uid);
    r = mkdir_mode(pod_dir, 0700);
    if (r != 0) {
        /* someone (a former fatiad) already claimed this pod: adopt, never start again */
        fatia_warn("agent: pod %s/%s: '%s' exists, adopting the pod instead of starting it", p->ns,
                   p->name, pod_dir);
        p->local = true;
        p->st = AP_ACTIVE;
        check_shim(a, p);
        goto out;
    }
    p->local = true;
    if (!p->start_time[0])
        fatia_time_format_rfc3339(fatia_now_real_usec(), false, p->start_time,
                                  sizeof(p->start_time));
    snprintf(run_dir, sizeof(run_dir), "%s/%s", a->run_dir, p->uid);
    snprintf(work, sizeof(work), "%s/work", run_dir);
    fatia_agent_log_dir(a, p, log_dir, sizeof(log_dir));
    if (mkdir_mode(run_dir, 0700) < 0 || chown_path(a, run_dir, uid, gid) < 0 ||
        mkdir_mode(work, 0700) < 0 || chown_path(a, work, uid, gid) < 0 ||
        mkdir_mode(log_dir, 0700) < 0) {
        snprintf(why, sizeof(why), "cannot create the pod's directories under '%.300s': %s", a->dir,
                 fatia_strerror(-errno));
        err = -EIO;
        goto fail;
    }
    /* a workbench's pods share a home that outlives each of them (agent/nbhome.c) */
    r = fatia_agent_nb_home(a->pod_dir, p->pod, a->switch_user, uid, gid, work, sizeof(work), why,
                            sizeof(why));
    if (r < 0) {
        err = r;
        goto fail;
    }
    nb_home = r == 1;
    json_decref(p->acct);
    p->acct = json_object();
    json_decref(p->mps_gpus);
    p->mps_gpus = json_array();
    if (oci) {
        const char *node = fatia_json_str(spec, "nodeName");

        /* the node's slices as CDI devices (cdi_agent.c), current before the pod reads them */
        snprintf(cdi_node, sizeof(cdi_node), "%s/%s", a->cdi_dir, node ? node : "");
        if (devs.n && node)
            (void)fatia_agent_cdi_node(a, node);
        op = (struct fatia_oci_pod){.pod = p->pod,
                                    .ns = p->ns,
                                    .pod_dir = pod_dir,
                                    .run_dir = run_dir,
                                    .host_base = host_base,
                                    .images = &a->images,
                                    .host_path_namespaces = a->o.host_path_namespaces,
                                    .host_network = host_net,
                                    .devs = &devs,
                                    .cdi_dir = a->cdi_dir,
                                    .cdi_node_dir = cdi_node,
                                    .auth_file = a->o.registry_auth,
                                    .insecure_registries = a->o.insecure_registries,
                                    .refs = &refs,
                                    .claim_path = claim_path,
                                    .claim_arg = &rc,
                                    .pull_secrets_auth = pull_auth,
                                    .pull_secrets_arg = &rc,
                                    .nb_home = nb_home ? work : NULL,
                                    .prefetched = p->prefetched};
        r = fatia_oci_pod_prepare(&op, &tmpfs, why, sizeof(why));
        p->ref_wait = r == -ESRCH;
        if (r < 0) {
            err = r == -FATIA_E_INVALID || r == -ESRCH ? -FATIA_E_INVALID : -EIO;
            goto fail;
        }
    }
    inits = build_ctrs(a, p, json_object_get(spec, "initContainers"), &devs, work, run_dir, real,
                       uid, gid, oci ? &op : NULL, why, sizeof(why), &err);
    if (inits)
        apps = build_ctrs(a, p, json_object_get(spec, "containers"), &devs, work, run_dir, real,
                          uid, gid, oci ? &op : NULL, why, sizeof(why), &err);
    if (!inits || !apps)
        goto fail;
    fatia_podspec_limits(p->pod, &lim);
    p->cgroup[0] = '\0';
    if (a->cg.enabled && !oci) {
        char cwhy[512] = "";
        r = fatia_cgroup_pod_create(&a->cg, p->uid, &lim, p->cgroup, sizeof(p->cgroup), cwhy,
                                    sizeof(cwhy));
        if (r == 0 && a->devfilter) {
            /* the pod's GPUs, and no other, by their /dev/nvidia<minor> */
            int minors[FATIA_DEVFILTER_MAX_MINORS];
            size_t n = 0;
            for (size_t i = 0; i < devs.n && n < FATIA_DEVFILTER_MAX_MINORS; i++) {
                bool dup = false;
                for (size_t k = 0; k < n; k++)
                    dup = dup || minors[k] == devs.v[i].minor;
                if (devs.v[i].minor >= 0 && !dup)
                    minors[n++] = devs.v[i].minor;
            }
            r = fatia_devfilter_attach(p->cgroup, minors, n, cwhy, sizeof(cwhy));
        }
        if (r < 0) {
            snprintf(why, sizeof(why), "%s", cwhy);
            err = r;
            goto fail;
        }
    }
    sp = json_pack(
        "{s:i,s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:s,s:I,s:s,s:o,s:o,s:O,s:O,s:O}", "version",
        FATIA_SHIM_SPEC_VERSION, "namespace", p->ns, "name", p->name, "uid", p->uid,
        "restartPolicy",
        fatia_json_str(spec, "restartPolicy") ? fatia_json_str(spec, "restartPolicy") : "Always",
        "startTime", p->start_time, "backoffInitialMs",
        (json_int_t)(a->o.backoff_initial_ms ? a->o.backoff_initial_ms : 10000), "backoffMaxMs",
        (json_int_t)(a->o.backoff_max_ms ? a->o.backoff_max_ms : 300000), "logDir", log_dir,
        "logMaxBytes", (json_int_t)(a->o.log_max_bytes ? a->o.log_max_bytes : 10 << 20),
        "statusFile", "", "initContainers", inits, "containers", apps, "slices", p->slices,
        "mpsGpus", p->mps_gpus, "acct", p->acct);
    inits = apps = NULL;
    if (!sp) {
        err = -ENOMEM;
        goto fail;
    }
    status_path(a, p->uid, spath, sizeof(spath));
    json_object_set_new(sp, "statusFile", json_string(spath));
    if (fatia_json_int(spec, "terminationGracePeriodSeconds", &v) && v >= 0)
        json_object_set_new(sp, "terminationGracePeriodSeconds", json_integer(v));
    if (fatia_json_int(spec, "activeDeadlineSeconds", &v) && v > 0)
        json_object_set_new(sp, "activeDeadlineSeconds", json_integer(v));
    if (a->switch_user)
        json_object_set_new(sp, "user", json_pack("{s:i,s:i}", "uid", (int)uid, "gid", (int)gid));
    if (p->cgroup[0])
        json_object_set_new(sp, "cgroup", json_string(p->cgroup));
    json_object_set_new(sp, "node", json_string(fatia_json_str(spec, "nodeName")));
    json_object_set_new(sp, "runtime",
                        json_string(oci ? FATIA_RUNTIME_OCI : FATIA_RUNTIME_PROCESS));
    if (oci) {
        json_object_set_new(sp, "oci",
                            json_pack("{s:s,s:s,s:b,s:o,s:I}", "runc", a->runc, "root",
                                      a->runc_root, "hostNetwork", host_net, "tmpfs", tmpfs,
                                      "hostBase", (json_int_t)host_base));
        if (!host_net && access("/usr/lib/cni/bridge", X_OK) == 0) {
            char st[1300];
            snprintf(st, sizeof(st), "%s/cni", a->dir);
            json_object_set_new(json_object_get(sp, "oci"), "cni",
                                json_pack("{s:I,s:s}", "index",
                                          (json_int_t)(host_base / FATIA_OCI_IDS), "state", st));
            if (json_array_size(hports) > 0)
                json_object_set(json_object_get(json_object_get(sp, "oci"), "cni"), "portMappings",
                                hports);
            p->net_k1 = host_base / FATIA_OCI_IDS + 1; /* the API proxy's (apiproxy.c) */
        }
        json_object_set_new(json_object_get(sp, "oci"), "podPidsMax",
                            json_integer(a->o.pod_pids_max ? a->o.pod_pids_max : 4096));
        {
            /* emptyDir.sizeLimit on disk: the shim measures and evicts (shim_storage.h) */
            json_t *dlim = NULL;
            char lwhy[256];
            if (fatia_oci_pod_disk_limits(p->pod, run_dir, &dlim, lwhy, sizeof(lwhy)) == 0 &&
                json_array_size(dlim)) {
                json_object_set_new(sp, "emptyDirLimits", dlim);
                json_object_set_new(
                    sp, "storageCheckMs",
                    json_integer(a->o.storage_check_ms ? a->o.storage_check_ms : 10000));
            } else {
                json_decref(dlim);
            }
        }
        tmpfs = NULL;
    }
    text = json_dumps(sp, JSON_INDENT(1));
    snprintf(spath, sizeof(spath), "%s/spec.json", pod_dir);
    r = text ? write_durable(spath, text) : -ENOMEM;
    free(text);
    if (r < 0) {
        snprintf(why, sizeof(why), "cannot write '%.300s': %s", spath, fatia_strerror(r));
        err = r;
        goto fail;
    }
    r = spawn_shim(a, p, pod_dir);
    if (r < 0) {
        snprintf(why, sizeof(why), "cannot start '%.300s': %s", a->shim, fatia_strerror(r));
        err = r;
        goto fail;
    }
    p->st = AP_ACTIVE;
    if (oci)
        image_gc(a);
    {
        const char *sl = fatia_json_str(
            json_object_get(json_object_get(p->pod, "metadata"), "annotations"), FATIA_ANN_SLICES);
        fatia_info("agent: pod %s/%s started (fatia-shim pid %d%s%s)", p->ns, p->name,
                   (int)p->shim_pid, sl ? ", slices " : "", sl ? sl : "");
    }
    {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(spec, "containers"), i, c)
        {
            const char *image = fatia_json_str(c, "image");
            if (oci && image && image[0])
                emit_event(a, p, "Normal", "Pulled", fatia_json_str(c, "name"),
                           "Container image \"%s\" already present on machine", image);
            else if (image && image[0])
                emit_event(a, p, "Normal", "ImageNotPulled", fatia_json_str(c, "name"),
                           "fatia runs containers as local processes; image %s recorded, not "
                           "pulled",
                           image);
        }
    }
    if (!oci) {
        /* the process runtime mounts no volume: a claim's data would silently go elsewhere */
        size_t i;
        json_t *vol;
        json_array_foreach(json_object_get(spec, "volumes"), i, vol)
        {
            const char *cn =
                fatia_json_str(json_object_get(vol, "persistentVolumeClaim"), "claimName");
            if (cn)
                emit_event(a, p, "Warning", "VolumeNotMounted", NULL,
                           "volume \"%s\" (spec.volumes[%zu], persistentVolumeClaim %s) is not "
                           "mounted: the process runtime runs the pod on the host's filesystem; "
                           "run it in a container (the OCI runtime) to use the claim",
                           fatia_json_str(vol, "name") ? fatia_json_str(vol, "name") : "", i, cn);
        }
    }
    push_status(a, p);
    goto out;

fail:
    json_decref(inits);
    json_decref(apps);
    {
        /* nothing ran: give the claim back so that nothing is left behind */
        size_t i;
        json_t *g;
        json_array_foreach(p->mps_gpus, i, g) mps_unref(a, json_string_value(g));
        json_array_clear(p->mps_gpus);
        if (p->cgroup[0])
            (void)fatia_cgroup_remove(p->cgroup);
        rm_tree(run_dir);
        rm_tree(pod_dir);
        p->local = false;
    }
    fail_before_start(a, p,
                      err == -ENOENT && oci                                 ? "ErrImageNeverPull"
                      : err == -EIO && oci && strstr(why, "failed to pull") ? "ErrImagePull"
                      : err == -FATIA_E_INVALID ? "CreateContainerConfigError"
                                                : "CreateContainerError",
                      why[0] ? why : fatia_strerror(err));
out:
    json_decref(hports);
    json_decref(tmpfs);
    json_decref(sp);
    fatia_pod_devices_release(&devs);
}

/* ---- stopping and cleaning up ---- */

static void request_stop(struct fatia_agent *a, struct apod *p, int64_t grace, const char *reason,
                         const char *message)
{
    char path[4400], *text;
    json_t *stop;
    int64_t sp = 0, sstart = 0;
    int r;

    if (p->stop_sent && grace >= p->stop_grace)
        return;
    /* a plain deletion gives the pod no reason (as kubelet); eviction or a deadline does */
    stop = reason && strcmp(reason, "Deleted")
               ? json_pack("{s:I,s:s,s:s}", "gracePeriodSeconds", (json_int_t)grace, "reason",
                           reason, "message", message)
               : json_pack("{s:I}", "gracePeriodSeconds", (json_int_t)grace);
    text = stop ? json_dumps(stop, JSON_COMPACT) : NULL;
    json_decref(stop);
    snprintf(path, sizeof(path), "%s/%s/stop.json", a->pods_dir, p->uid);
    r = text ? write_durable(path, text) : -ENOMEM;
    free(text);
    if (r < 0)
        fatia_warn("agent: cannot write '%s': %s, the shim will use the pod's grace period", path,
                   fatia_strerror(r));
    (void)fatia_json_int(json_object_get(p->shim, "shim"), "pid", &sp);
    (void)fatia_json_int(json_object_get(p->shim, "shim"), "start", &sstart);
    if (sp <= 0 && p->shim_pid > 0) {
        sp = p->shim_pid;
        sstart = (int64_t)p->shim_start;
    }
    if (!p->stop_sent) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(p->shim, "containers"), i, c)
        {
            if (!strcmp(state_kind(c), "running"))
                emit_event(a, p, "Normal", "Killing", fatia_json_str(c, "name"),
                           "Stopping container %s (grace period %" PRId64 " s)",
                           fatia_json_str(c, "name"), grace);
        }
    }
    p->stop_sent = true;
    p->stop_grace = grace;
    r = sp > 0 ? fatia_proc_signal((pid_t)sp, (uint64_t)sstart, SIGTERM) : -ESRCH;
    if (r == -ESRCH && p->shim_child && p->shim_pid > 0)
        r = kill(p->shim_pid, SIGTERM) < 0 ? -errno : 0; /* not yet written its status */
    fatia_info("agent: pod %s/%s: stopping (%s, grace period %" PRId64 " s)", p->ns, p->name,
               reason, grace);
    if (r < 0)
        check_shim(a, p);
}

static void cleanup(struct fatia_agent *a, struct apod *p)
{
    char path[4400];

    if (!p->local) {
        p->cleaned = true;
        return;
    }
    if (p->cgroup[0] && fatia_cgroup_remove(p->cgroup) == -EBUSY) {
        fatia_cgroup_kill(p->cgroup);
        return; /* the tick tries again */
    }
    snprintf(path, sizeof(path), "%s/%s", a->run_dir, p->uid);
    rm_tree(path);
    fatia_agent_log_dir(a, p, path, sizeof(path));
    rm_tree(path);
    status_path(a, p->uid, path, sizeof(path));
    (void)unlink(path);
    snprintf(path, sizeof(path), "%s/%s", a->pods_dir, p->uid);
    rm_tree(path);
    p->local = false;
    p->cleaned = true;
    fatia_debug("agent: pod %s/%s: state removed", p->ns, p->name);
}

static int64_t grace_of(const json_t *pod)
{
    int64_t v;

    if (fatia_json_int(json_object_get(pod, "metadata"), "deletionGracePeriodSeconds", &v) &&
        v >= 0)
        return v;
    if (fatia_json_int(json_object_get(pod, "spec"), "terminationGracePeriodSeconds", &v) && v >= 0)
        return v;
    return 30;
}

/* Whether the API says this agent ran the pod's containers before (a containerID of ours). */
static bool ran_before(const json_t *pod)
{
    const json_t *st = json_object_get(pod, "status");
    const char *lists[] = {"containerStatuses", "initContainerStatuses"};

    for (int k = 0; k < 2; k++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(st, lists[k]), i, c)
        {
            const char *id = fatia_json_str(c, "containerID");
            if (id && fatia_str_has_prefix(id, "fatia://"))
                return true;
        }
    }
    return false;
}

/* Whether the API holds the status the shim's last record gives. */
static bool status_written(struct apod *p)
{
    json_t *st = fatia_pod_status_build(p->pod, p->shim, p->start_time, p->wait_reason, p->wait_msg,
                                        fatia_now_real_usec());
    bool same = st && fatia_pod_status_same(p->pod, st);

    json_decref(st);
    return same;
}

/* Whether a pod whose devices name a slice the node's ResourceSlices do not name (why) waits for
 * them rather than being refused: for inventory-wait from the first time it was seen so. A
 * remote client's cache of ResourceSlices is fed by a watch of its own, which can deliver a
 * re-plan's new slices after the pod's watch delivered the pod placed on one of them (the device
 * controller publishes the slices, then placement binds the pod). Rejected: comparing the pod's
 * resourceVersion with the slices' watch (it advances only on their events, and bookmarks come a
 * minute apart); a fresh GET of the slices before refusing (the start path is synchronous, and a
 * replica the client just moved to may be behind too). */
static bool inventory_wait(struct fatia_agent *a, struct apod *p, const char *why)
{
    fatia_usec_t now = fatia_now_mono_usec();

    if (a->o.inventory_wait_ms <= 0)
        return false;
    if (!p->inv_wait_since) {
        p->inv_wait_since = now;
        fatia_info("agent: pod %s/%s: %s (yet): waiting up to %lld ms for its ResourceSlices",
                   p->ns, p->name, why, (long long)a->o.inventory_wait_ms);
    }
    return now < p->inv_wait_since + (fatia_usec_t)a->o.inventory_wait_ms * FATIA_USEC_PER_MSEC;
}

static void reconcile(struct fatia_agent *a, struct apod *p)
{
    const json_t *pod = p->pod;
    bool deleting = pod && json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp");
    struct apod *holder = NULL;

    if (a->stopping)
        return;
    switch (p->st) {
    case AP_BLOCKED:
        p->st = AP_IDLE;
        FATIA_FALLTHROUGH;
    case AP_IDLE:
        if (!p->in_api) {
            if (!p->local && !p->fin_inflight)
                pod_free(a, p);
            return;
        }
        if (deleting) {
            if (has_finalizer(pod))
                remove_finalizer(a, p);
            return;
        }
        if (!fatia_pod_runnable(pod) || fatia_pod_terminal(pod) || p->config_error)
            return;
        if (ran_before(pod)) {
            /* started by an agent whose state is gone: never start it again */
            if (!p->config_error) {
                snprintf(p->wait_msg, sizeof(p->wait_msg),
                         "the node agent's state for this pod is gone (its data directory was "
                         "replaced?); it is not started again");
                fatia_warn("agent: pod %s/%s: %s", p->ns, p->name, p->wait_msg);
                p->config_error = true;
                p->shim = json_pack("{s:s,s:s,s:s,s:[],s:[],s:b}", "phase", "Failed", "reason",
                                    "ContainerStatusUnknown", "message", p->wait_msg,
                                    "initContainers", "containers", "done", 1);
                p->st = AP_DONE;
                push_status(a, p);
            }
            return;
        }
        {
            /* devices that placement did not give this pod fail it, before anything else (even
             * before a slice held here makes it wait) */
            struct fatia_pod_devices d;
            char why[1024];
            if (fatia_pod_devices_parse(pod, &d, why, sizeof(why)) == 0) {
                int r = trust_devices(a, p, &d, why, sizeof(why));
                fatia_pod_devices_release(&d);
                if (r == -ENOENT && inventory_wait(a, p, why)) {
                    p->st = AP_BLOCKED; /* the tick looks again */
                    return;
                }
                if (r < 0) {
                    fail_pod(a, p, "UnexpectedAdmissionError", why);
                    return;
                }
            }
            p->inv_wait_since = 0;
        }
        collect_slices(p);
        {
            size_t i;
            json_t *s;
            json_array_foreach(p->slices, i, s)
            {
                if (slice_held(a, p, json_string_value(s), &holder))
                    break;
            }
        }
        if (holder) {
            p->st = AP_BLOCKED;
            if (!p->blocked_event) {
                p->blocked_event = true;
                emit_event(a, p, "Warning", "SliceBusy", NULL,
                           "slice %s is still held by pod %s/%s on this node; waiting until it "
                           "is released",
                           json_string_value(json_array_get(p->slices, 0)), holder->ns,
                           holder->name);
            }
            return;
        }
        if (!has_finalizer(pod)) {
            if (!p->fin_inflight)
                add_finalizer(a, p);
            return;
        }
        if (pull_first(a, p))
            return; /* its images come first, off the loop: ContainerCreating meanwhile */
        start_pod(a, p);
        p->prefetched = false;
        return;
    case AP_ADMIT:
        return;
    case AP_ACTIVE:
        if (!p->in_api)
            request_stop(a, p, p->pod ? grace_of(p->pod) : 30, "Deleted", "the pod was deleted");
        else if (deleting)
            request_stop(a, p, grace_of(pod), "Deleted", "the pod was deleted");
        return;
    case AP_DONE:
        if (!p->in_api) {
            cleanup(a, p);
            if (p->cleaned)
                pod_free(a, p);
            return;
        }
        if (deleting && has_finalizer(pod) && !p->status_inflight && !p->status_dirty &&
            status_written(p)) /* every process is gone and the final status is written */
            remove_finalizer(a, p);
        return;
    }
}

/* ---- inputs ---- */

static bool pod_is_ours(struct fatia_agent *a, const json_t *pod)
{
    return serves_node(a, fatia_json_str(json_object_get(pod, "spec"), "nodeName"));
}

static void on_pod(void *arg, enum fatia_watch_event type, const json_t *obj, uint64_t rv);

static int start_watch(struct fatia_agent *a)
{
    struct fatia_watch_opts wo = {0};

    return fatia_client_watch(a->client, &fatia_kind_pod, NULL, &wo, on_pod, a, &a->watch);
}

static void on_pod(void *arg, enum fatia_watch_event type, const json_t *obj, uint64_t rv)
{
    struct fatia_agent *a = arg;
    const char *uid;
    struct apod *p;

    (void)rv;
    if (a->stopping)
        return;
    if (type == FATIA_WATCH_ERROR) {
        /* the history no longer reaches back: watch again from the current state */
        fatia_warn("agent: pod watch ended (%s), watching again",
                   fatia_json_str(obj, "message") ? fatia_json_str(obj, "message") : "error");
        a->watch = NULL;
        a->synced = false;
        for (p = a->pods; p; p = p->next)
            p->seen = false;
        if (start_watch(a) < 0)
            fatia_error("agent: cannot watch pods");
        return;
    }
    if (type == FATIA_WATCH_BOOKMARK) {
        if (!a->synced) {
            struct apod *next;
            a->synced = true;
            for (p = a->pods; p; p = next) {
                next = p->next;
                if (!p->seen) {
                    p->in_api = false;
                    reconcile(a, p);
                }
            }
        }
        return;
    }
    uid = fatia_ctlr_meta_str(obj, "uid");
    if (!uid)
        return;
    p = fatia_agent_pod(a, uid);
    if (type == FATIA_WATCH_DELETED) {
        if (p) {
            take_pod(p, obj);
            p->in_api = false;
            reconcile(a, p);
            fatia_agent_logs_poke(a);
        }
        return;
    }
    if (!p) {
        if (!pod_is_ours(a, obj))
            return;
        p = pod_new(a, uid, fatia_ctlr_meta_str(obj, "namespace"),
                    fatia_ctlr_meta_str(obj, "name"));
        if (!p)
            return;
    }
    take_pod(p, obj);
    p->in_api = true;
    p->seen = true;
    if (!p->start_time[0] && fatia_json_str(json_object_get(obj, "status"), "startTime"))
        snprintf(p->start_time, sizeof(p->start_time), "%s",
                 fatia_json_str(json_object_get(obj, "status"), "startTime"));
    if (p->st == AP_ACTIVE || p->st == AP_DONE)
        push_status(a, p); /* first sight after a restart, or someone wrote over our fields */
    reconcile(a, p);       /* last: it may free p */
}

static void on_inotify(evutil_socket_t fd, short what, void *arg)
{
    struct fatia_agent *a = arg;
    char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n;

    (void)what;
    while ((n = read(fd, buf, sizeof(buf))) > 0) {
        for (char *q = buf; q + sizeof(struct inotify_event) <= buf + n;) {
            struct inotify_event ev;
            const char *name = q + sizeof(ev);
            memcpy(&ev, q, sizeof(ev));
            q += sizeof(ev) + ev.len;
            if (ev.len && fatia_str_has_suffix(name, ".json") && !a->stopping) {
                char uid[160];
                struct apod *p;
                snprintf(uid, sizeof(uid), "%.*s", (int)(strlen(name) - 5), name);
                p = fatia_agent_pod(a, uid);
                if (p && p->st == AP_ACTIVE) {
                    json_t *st = read_status(a, uid);
                    if (st)
                        take_shim_status(a, p, st, false);
                    reconcile(a, p);
                }
            }
        }
    }
}

/* ---- ephemeral storage ---- */

/* Every STORAGE_CHECK_TICKS ticks (seconds) the pods with an ephemeral-storage limit have their
 * usage measured (their working directory and logs under the pod directory); a pod over its limit
 * is evicted as kubelet does: a Warning Event Evicted, every process killed at once, phase Failed
 * with reason Evicted. */
#define STORAGE_CHECK_TICKS 2

/* Bytes used under name (blocks, so a sparse file counts what it holds), never following a
 * link; stops counting past stop. */
static uint64_t du_at(int dfd, const char *name, int depth, uint64_t stop)
{
    struct stat st;
    uint64_t sum;
    int fd;
    DIR *d;
    struct dirent *e;

    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return 0;
    sum = (uint64_t)st.st_blocks * 512;
    if (!S_ISDIR(st.st_mode) || depth > 64)
        return sum;
    fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return sum;
    d = fdopendir(fd);
    if (!d) {
        close(fd);
        return sum;
    }
    while ((e = readdir(d)) && sum <= stop) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        sum += du_at(dirfd(d), e->d_name, depth + 1, stop - sum);
    }
    closedir(d);
    return sum;
}

/* The pod's ephemeral-storage limit: the sum of its app containers' limits, or the largest init
 * container's if that is more (kubelet's pod-level check); 0: none set. */
static uint64_t storage_limit(const json_t *pod)
{
    const json_t *spec = json_object_get(pod, "spec");
    const char *lists[] = {"containers", "initContainers"};
    uint64_t sum = 0, init_max = 0;

    for (int k = 0; k < 2; k++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(spec, lists[k]), i, c)
        {
            const json_t *v = json_object_get(
                json_object_get(json_object_get(c, "resources"), "limits"), "ephemeral-storage");
            uint64_t b = 0;
            if (json_is_string(v))
                (void)fatia_quantity_parse_bytes(json_string_value(v), &b);
            else if (json_is_integer(v) && json_integer_value(v) > 0)
                b = (uint64_t)json_integer_value(v);
            if (k == 0)
                sum += b;
            else if (b > init_max)
                init_max = b;
        }
    }
    return sum > init_max ? sum : init_max;
}

/* A claim's requests.storage (its volume's capacity): a pod writing a claim's directory past it
 * is evicted, as for ephemeral storage (localpath.c). */
static bool check_claims(struct fatia_agent *a, struct apod *p)
{
    json_t *claims = fatia_agent_pod_claims(a, p->pod), *c;
    char msg[600];
    size_t i;

    json_array_foreach(claims, i, c)
    {
        uint64_t cap = (uint64_t)json_integer_value(json_object_get(c, "capacity"));
        uint64_t used = du_at(AT_FDCWD, fatia_json_str(c, "path"), 0, cap);
        if (used <= cap)
            continue;
        p->evicted = true;
        snprintf(msg, sizeof(msg),
                 "Usage of PersistentVolumeClaim %s exceeds its requests.storage of %" PRIu64
                 " bytes (uses at least %" PRIu64 ")",
                 fatia_json_str(c, "claim"), cap, used);
        emit_event(a, p, "Warning", "Evicted", NULL, "%s", msg);
        agent_warn(a, "agent: pod %s/%s: evicted: %s", p->ns, p->name, msg);
        request_stop(a, p, 0, "Evicted", msg);
        json_decref(claims);
        return true;
    }
    json_decref(claims);
    return false;
}

static void check_storage(struct fatia_agent *a, struct apod *p)
{
    uint64_t limit = storage_limit(p->pod), used;
    char path[4400], msg[300];

    if (p->evicted || p->stop_sent || check_claims(a, p) || !limit)
        return;
    snprintf(path, sizeof(path), "%s/%s", a->run_dir, p->uid);
    used = du_at(AT_FDCWD, path, 0, limit);
    fatia_agent_log_dir(a, p, path, sizeof(path));
    if (used <= limit)
        used += du_at(AT_FDCWD, path, 0, limit - used);
    if (used <= limit)
        return;
    p->evicted = true;
    snprintf(msg, sizeof(msg),
             "Pod ephemeral local storage usage exceeds the total limit of containers %" PRIu64
             " bytes (uses at least %" PRIu64 ")",
             limit, used);
    emit_event(a, p, "Warning", "Evicted", NULL, "%s", msg);
    agent_warn(a, "agent: pod %s/%s: evicted: %s", p->ns, p->name, msg);
    request_stop(a, p, 0, "Evicted", msg);
}

int fatia_agent_pod_condition(struct fatia_agent *a, struct apod *p, json_t *cond)
{
    json_t *patch;
    int r;

    if (!p->pod || !p->in_api || a->stopping || p->stop_sent)
        return -EAGAIN;
    patch = json_pack("{s:{s:[O]}}", "status", "conditions", cond);
    if (!patch)
        return -ENOMEM;
    r = send_patch(a, p, OP_CONDITION, "status", patch);
    json_decref(patch);
    return r;
}

void fatia_agent_gpu_exceeded(struct fatia_agent *a, struct apod *p, const char *msg)
{
    if (p->stop_sent)
        return;
    p->evicted = true;
    emit_event(a, p, "Warning", "GPUMemoryLimitExceeded", NULL, "%s", msg);
    agent_warn(a, "agent: pod %s/%s: %s", p->ns, p->name, msg);
    request_stop(a, p, 0, "GPUMemoryLimitExceeded", msg);
}

int fatia_agent_metrics(const struct fatia_agent *a, struct fatia_buf *out)
{
    int r = fatia_agent_gpuwatch_metrics(a ? a->gpuwatch : NULL, out);

    return r < 0 ? r : fatia_agent_gpuhealth_metrics(a ? a->gpuhealth : NULL, out);
}

void fatia_agent_gpu_unhealthy(struct fatia_agent *a, struct apod *p, const char *msg)
{
    if (p->stop_sent)
        return;
    p->evicted = true;
    emit_event(a, p, "Warning", "GPUUnhealthy", NULL, "%s", msg);
    agent_warn(a, "agent: pod %s/%s: %s", p->ns, p->name, msg);
    request_stop(a, p, 0, "GPUUnhealthy", msg);
}

/* Capped slices: an allocation the cap refused is worth telling the pod's owner once. */
static void check_caps(struct fatia_agent *a, struct apod *p)
{
    const char *path;
    json_t *v;

    json_object_foreach(p->acct, path, v)
    {
        struct fatia_vgpu_region r;
        uint64_t refused, seen = (uint64_t)json_integer_value(v);
        if (fatia_vgpu_region_open(&r, path, NULL, FATIA_VGPU_REGION_READ_ONLY, NULL, 0) < 0)
            continue;
        refused = atomic_load(&r.hdr->n_refused);
        if (refused > seen) {
            const char *base = strrchr(path, '/');
            emit_event(a, p, "Warning", "GPUMemoryCapReached", NULL,
                       "the memory cap of slice %.*s refused %" PRIu64 " allocation%s (CUDA out "
                       "of memory inside the slice; the cap is %" PRIu64 " bytes)",
                       (int)(strlen(base ? base + 1 : path) - 5), base ? base + 1 : path,
                       refused - seen, refused - seen == 1 ? "" : "s",
                       r.hdr->limit[0] == FATIA_VGPU_NO_LIMIT ? 0 : r.hdr->limit[0]);
            json_object_set_new(p->acct, path, json_integer((json_int_t)refused));
        }
        fatia_vgpu_region_close(&r);
    }
}

/* A running pod's configMap, secret and projected volumes follow their objects (refvol.h), as
 * kubelet's periodic sync does: rewritten atomically when the payload changed. A volume whose
 * object went away keeps its last files (kubelet's too); only OCI pods have the directories. */
static void refresh_refvols(struct fatia_agent *a, struct apod *p)
{
    struct ref_ctx rc = {a, p};
    struct fatia_podrefs refs = {
        .get = ref_get,
        .ctx = &rc,
        .ns = p->ns,
        /* a client that cannot make tokens: the volume is refused, never waited on */
        .token = a->client->ops->token_request ? ref_token : NULL,
        .pod = p->pod};
    size_t i;
    json_t *v;

    json_array_foreach(json_object_get(json_object_get(p->pod, "spec"), "volumes"), i, v)
    {
        const char *vn = fatia_json_str(v, "name");
        char dir[4600], why[512];
        json_t *files = NULL;
        bool changed = false;
        struct stat st;
        if (!vn || !fatia_pod_vol_is_ref(v) || strchr(vn, '/') || vn[0] == '.')
            continue;
        snprintf(dir, sizeof(dir), "%s/%s/volumes/%s", a->run_dir, p->uid, vn);
        if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) ||
            fatia_pod_vol_files(v, i, &refs, &files, why, sizeof(why)) < 0)
            continue;
        if (fatia_pod_vol_sync(dir, files, st.st_uid, st.st_gid, &changed, why, sizeof(why)) < 0)
            agent_warn(a, "agent: pod %s/%s: %s", p->ns, p->name, why);
        else if (changed)
            fatia_info("agent: pod %s/%s: volume %s updated", p->ns, p->name, vn);
        json_decref(files);
    }
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct fatia_agent *a = arg;
    struct apod *p, *next;

    (void)fd;
    (void)what;
    bool storage;

    if (a->stopping)
        return;
    fatia_agent_cdi_tick(a);
    if (a->oci && ++a->image_gc_ticks >= 60) {
        a->image_gc_ticks = 0;
        image_gc(a);
    }
    storage = ++a->storage_ticks >= STORAGE_CHECK_TICKS;
    if (storage) {
        a->storage_ticks = 0;
        fatia_agent_localpath_gc(a);
    }
    for (p = a->pods; p; p = next) {
        next = p->next;
        if (storage && p->token_wait && p->st == AP_IDLE)
            reconcile(a, p); /* its token was refused: asked again (satoken.c) */
        if (p->st == AP_ACTIVE && p->net_k1)
            (void)fatia_agent_apiproxy_ensure(a, p->net_k1 - 1); /* once its bridge exists */
        if (p->st == AP_ACTIVE) {
            check_shim(a, p);
            check_caps(a, p);
            if (storage && p->st == AP_ACTIVE && p->pod)
                check_storage(a, p);
            if (storage && p->st == AP_ACTIVE && p->pod)
                refresh_refvols(a, p);
        }
        if (p->st == AP_DONE && p->shim_child)
            (void)shim_alive(a, p); /* reaps it */
        if (p->config_error && p->pull_retry_at && p->st == AP_IDLE) {
            fatia_usec_t now = fatia_now_mono_usec();
            if (now >= p->pull_retry_at) {
                p->config_error = false;
                p->pull_retry_at = 0;
                reconcile(a, p);
                continue;
            }
            if (!strcmp(p->wait_reason, "ErrImagePull") &&
                now >= p->pull_failed_at + FATIA_USEC_PER_SEC) {
                char msg[sizeof(p->wait_msg)];
                snprintf(msg, sizeof(msg), "Back-off pulling image: %.480s", p->wait_msg);
                snprintf(p->wait_reason, sizeof(p->wait_reason), "ImagePullBackOff");
                snprintf(p->wait_msg, sizeof(p->wait_msg), "%s", msg);
                push_status(a, p);
            }
        }
        if (p->st == AP_BLOCKED || (p->st == AP_DONE && (!p->in_api || p->fin_removing == false)))
            reconcile(a, p);
    }
}

/* ---- adoption ---- */

static void adopt_all(struct fatia_agent *a)
{
    DIR *d = opendir(a->pods_dir);
    struct dirent *e;
    size_t n = 0, running = 0;

    if (!d)
        return;
    while ((e = readdir(d))) {
        char path[4500];
        json_error_t je;
        json_t *spec;
        struct apod *p;
        const char *cg;

        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s/spec.json", a->pods_dir, e->d_name);
        if (access(path, F_OK) < 0 && errno == ENOENT) {
            /* claimed, but fatiad died before the spec was written: no shim was ever started
             * (it starts only from a durable spec), so the claim goes and the pod starts as new */
            char dir[4400];
            fatia_info("agent: pod %s was claimed but never started, releasing the claim",
                       e->d_name);
            snprintf(dir, sizeof(dir), "%s/%s", a->run_dir, e->d_name);
            rm_tree(dir);
            snprintf(dir, sizeof(dir), "%s/%s", a->pods_dir, e->d_name);
            rm_tree(dir);
            continue;
        }
        spec = json_load_file(path, 0, &je);
        p = pod_new(a, e->d_name, fatia_json_str(spec, "namespace"), fatia_json_str(spec, "name"));
        if (!p) {
            json_decref(spec);
            continue;
        }
        n++;
        p->local = true;
        p->st = AP_ACTIVE;
        cg = fatia_json_str(spec, "cgroup");
        if (cg)
            snprintf(p->cgroup, sizeof(p->cgroup), "%s", cg);
        if (fatia_json_str(spec, "startTime"))
            snprintf(p->start_time, sizeof(p->start_time), "%s", fatia_json_str(spec, "startTime"));
        p->slices = json_incref(json_object_get(spec, "slices"));
        {
            int64_t k;
            if (fatia_json_int(json_object_get(json_object_get(spec, "oci"), "cni"), "index", &k) &&
                k >= 0)
                p->net_k1 = (uint32_t)k + 1;
        }
        if (!p->slices)
            p->slices = json_array();
        p->acct = json_deep_copy(json_object_get(spec, "acct"));
        if (!p->acct)
            p->acct = json_object();
        p->mps_gpus = json_array();
        {
            /* take our references on the MPS daemons again (fatia_mps_start adopts) */
            size_t i;
            json_t *g;
            json_array_foreach(json_object_get(spec, "mpsGpus"), i, g)
            {
                struct fatia_pod_device dev = {
                    .uuid = json_string_value(g), .gpu_index = -1, .minor = -1};
                char why[256];
                struct mpsd *m = mps_get(a, &dev, why, sizeof(why));
                if (m) {
                    m->refs++;
                    json_array_append(p->mps_gpus, g);
                } else {
                    fatia_warn("agent: pod %s/%s: %s", p->ns, p->name, why);
                }
            }
        }
        if (!spec) {
            fatia_warn("agent: '%s' is unreadable: the pod is treated as lost", path);
        }
        json_decref(spec);
        {
            json_t *st = read_status(a, p->uid);
            if (st)
                take_shim_status(a, p, st, true);
        }
        if (p->st == AP_ACTIVE) {
            if (shim_alive(a, p)) {
                int64_t pid = 0;
                (void)fatia_json_int(json_object_get(p->shim, "shim"), "pid", &pid);
                p->shim_pid = (pid_t)pid;
                running++;
            } else if (!p->shim) {
                /* claimed but the shim never ran (fatiad died in between): nothing ran yet, so
                 * starting the shim now runs the pod once */
                char dir[4400];
                snprintf(dir, sizeof(dir), "%s/%s", a->pods_dir, p->uid);
                if (spawn_shim(a, p, dir) < 0)
                    shim_lost(a, p);
                else
                    running++;
            } else {
                shim_lost(a, p);
            }
        }
    }
    closedir(d);
    if (n)
        fatia_info("agent: found %zu pods from before this start (%zu still running)", n, running);
}

/* ---- life ---- */

/* Pods run under other uids: every directory above DATA must be searchable by others (o+x),
 * or each container fails with "chdir to workingDir ... Permission denied". Said once, at start,
 * naming the directory (fatiad does not change modes above its own data directory). */
static void warn_untraversable(const char *data_dir)
{
    char path[4096], *slash;
    struct stat st;

    if (!realpath(data_dir, path))
        return;
    while ((slash = strrchr(path, '/')) && slash != path) {
        *slash = '\0';
        if (stat(path, &st) == 0 && !(st.st_mode & S_IXOTH)) {
            fatia_warn("agent: '%s' is not searchable by others (mode %03o): pods, which run "
                       "under their namespace's uid, cannot reach their working directory in "
                       "'%s' (chmod o+x '%s', or --agent user=current)",
                       path, (unsigned)(st.st_mode & 0777), data_dir, path);
            return;
        }
    }
}

static void exe_dir(char *buf, size_t n)
{
    ssize_t len = readlink("/proc/self/exe", buf, n - 1);
    char *slash;

    if (len <= 0) {
        snprintf(buf, n, ".");
        return;
    }
    buf[len] = '\0';
    slash = strrchr(buf, '/');
    if (slash)
        *slash = '\0';
}

/* --agent runtime: oci (runc required), auto (the default: oci when runc is there and the agent
 * is root, else process, with the reason logged), process. The
 * image store and the namespaces' host id ranges live under the pod directory and DATA/agent. */
static int oci_setup(struct fatia_agent *a, const char *data_dir)
{
    const char *rt = a->o.runtime ? a->o.runtime : FATIA_RUNTIME_AUTO;
    char why[512] = "", state[1200];
    uint32_t kmin;
    int r;

    (void)data_dir;
    if (!strcmp(rt, FATIA_RUNTIME_PROCESS))
        return 0;
    if (geteuid() != 0 ||
        !fatia_runtime_oci_available(a->o.runc, a->runc, sizeof(a->runc), why, sizeof(why))) {
        if (geteuid() != 0)
            snprintf(why, sizeof(why), "containers need root (fatiad runs as uid %u)",
                     (unsigned)geteuid());
        if (!strcmp(rt, FATIA_RUNTIME_OCI)) {
            fatia_error("agent: --agent runtime=oci: %s", why);
            return -ENOENT;
        }
        fatia_info("agent: pods run as processes: %s", why);
        return 0;
    }
    snprintf(a->runc_root, sizeof(a->runc_root), "%s/runc", a->dir);
    snprintf(a->cdi_dir, sizeof(a->cdi_dir), "%s/cdi", a->pod_dir);
    r = mkdir_mode(a->runc_root, 0700);
    if (r >= 0)
        r = fatia_image_store_open(&a->images, a->pod_dir);
    if (r < 0) {
        fatia_log_errno(FATIA_LOG_ERROR, r, "agent: cannot create '%s' or the image store",
                        a->runc_root);
        return r;
    }
    /* ranges k * 65536 above every uid the process mode gives out */
    kmin =
        ((a->o.uid_base ? a->o.uid_base : FATIA_UIDMAP_DEFAULT_BASE) + FATIA_UIDMAP_DEFAULT_COUNT) /
            FATIA_OCI_IDS +
        1;
    snprintf(state, sizeof(state), "%s/uidranges", a->dir);
    r = fatia_uidmap_load(&a->ranges, NULL, state, kmin, 65535 - kmin, why, sizeof(why));
    if (r < 0) {
        fatia_error("agent: id ranges: %s", why);
        return r;
    }
    r = fatia_image_puller_new(a->base, &a->images, on_pulled, a, &a->pulls);
    if (r < 0) {
        fatia_log_errno(FATIA_LOG_ERROR, r, "agent: cannot start the image puller");
        return r;
    }
    a->oci = true;
    fatia_info("agent: pods run in OCI containers (%s, state in %s, images in %s)", a->runc,
               a->runc_root, a->images.dir);
    return 0;
}

static void *reclaim_main(void *arg)
{
    int r = fatia_cni_reclaim(FATIA_CNI_PLUGIN_DIR, FATIA_CNI_LEASE_DIR, FATIA_CNI_PIN_DIR, -1);

    (void)arg;
    if (r < 0)
        fatia_warn("agent: cannot reclaim the CNI leases of gone sandboxes: %s", fatia_strerror(r));
    return NULL;
}

int fatia_agent_new(struct event_base *base, struct fatia_client *client,
                    const struct fatia_agent_opts *opts, struct fatia_agent **ret)
{
    struct fatia_agent *a;
    char bin[3000], why[512] = "", state[4400], data_dir[4096];
    const char *user;
    int r;

    if (!opts || !opts->data_dir)
        return -EINVAL;
    if (strlen(opts->data_dir) > 1000) {
        fatia_error("agent: the data directory's path is too long (at most 1000 bytes)");
        return -ENAMETOOLONG;
    }
    a = fatia_calloc(1, sizeof(*a));
    if (!a)
        return -ENOMEM;
    a->base = base;
    a->client = client;
    a->o = *opts;
    a->inotify_fd = -1;
    a->rnd = (uint64_t)fatia_now_mono_usec() ^ ((uint64_t)getpid() << 32) ^ 1;
    a->warn = (struct fatia_ratelimit){.per_sec = WARN_PER_SEC, .burst = WARN_BURST};
    a->writes = (struct fatia_ratelimit){.per_sec = WRITES_PER_SEC, .burst = WRITES_BURST};
    fatia_strmap_init(&a->by_uid);
    exe_dir(bin, sizeof(bin));
    snprintf(a->shim, sizeof(a->shim), "%s", opts->shim ? opts->shim : "");
    if (!opts->shim)
        snprintf(a->shim, sizeof(a->shim), "%s/fatia-shim", bin);
    if (opts->vgpu_lib)
        snprintf(a->vgpu_lib, sizeof(a->vgpu_lib), "%s", opts->vgpu_lib);
    else
        snprintf(a->vgpu_lib, sizeof(a->vgpu_lib), "%s/../lib/libfatia-vgpu.so", bin);
    {
        char real[4096];
        if (realpath(a->vgpu_lib, real))
            snprintf(a->vgpu_lib, sizeof(a->vgpu_lib), "%s", real);
    }
    a->have_vgpu = access(a->vgpu_lib, R_OK) == 0;
    if (access(a->shim, X_OK) < 0) {
        fatia_error("agent: '%s' is missing: the node agent needs fatia-shim (or --agent "
                    "shim=PATH)",
                    a->shim);
        fatia_free(a);
        return -ENOENT;
    }
    /* absolute: the shim takes its pod's directory as an absolute path and pods chdir into it
     * (fatiad --data-dir .fatia, as make run starts it, is relative) */
    if (!realpath(opts->data_dir, data_dir) || strlen(data_dir) > 1000)
        snprintf(data_dir, sizeof(data_dir), "%s", opts->data_dir);
    snprintf(a->dir, sizeof(a->dir), "%.1000s/agent", data_dir); /* at most 1000: checked */
    snprintf(a->pods_dir, sizeof(a->pods_dir), "%s/pods", a->dir);
    snprintf(a->status_dir, sizeof(a->status_dir), "%s/status", a->dir);
    /* what pods write lives under the pod directory, which the admin may put on another
     * filesystem than the store's (a pod that fills it cannot stop the API's writes) */
    snprintf(a->pod_dir, sizeof(a->pod_dir), "%s", a->dir);
    if (opts->pod_dir) {
        char real[4096];
        if (mkdir_mode(opts->pod_dir, 0711) < 0 || !realpath(opts->pod_dir, real) ||
            strlen(real) > 1000) {
            r = errno ? -errno : -ENAMETOOLONG;
            fatia_log_errno(FATIA_LOG_ERROR, r, "agent: pod-dir '%s'", opts->pod_dir);
            fatia_free(a);
            return r;
        }
        snprintf(a->pod_dir, sizeof(a->pod_dir), "%.1000s", real);
    }
    snprintf(a->logs_dir, sizeof(a->logs_dir), "%.1000s/logs", a->pod_dir);
    snprintf(a->run_dir, sizeof(a->run_dir), "%.1000s/run", a->pod_dir);
    user = opts->user ? opts->user : "auto";
    a->switch_user = geteuid() == 0 && strcmp(user, "current");
    if (!strcmp(user, "namespace") && geteuid() != 0) {
        fatia_error("agent: --agent user=namespace needs root (fatiad runs as uid %u)",
                    (unsigned)geteuid());
        fatia_free(a);
        return -EPERM;
    }
    if (mkdir_mode(a->dir, 0711) < 0 || mkdir_mode(a->pods_dir, 0700) < 0 ||
        mkdir_mode(a->status_dir, 0700) < 0 || mkdir_mode(a->logs_dir, 0700) < 0 ||
        mkdir_mode(a->run_dir, 0711) < 0) {
        r = -errno;
        fatia_log_errno(FATIA_LOG_ERROR, r, "agent: cannot create '%s'", a->dir);
        fatia_free(a);
        return r;
    }
    if (a->switch_user) {
        /* pods' uids must reach DATA/agent/run/<uid>: traverse-only permission on the way */
        (void)chmod(data_dir, 0711);
        warn_untraversable(data_dir);
        if (opts->pod_dir)
            warn_untraversable(a->pod_dir);
        snprintf(state, sizeof(state), "%s/uids", a->dir);
        r = fatia_uidmap_load(&a->uids, opts->uid_map, state, opts->uid_base, 0, why, sizeof(why));
        if (r < 0) {
            fatia_error("agent: uid map: %s", why);
            fatia_free(a);
            return r;
        }
    }
    r = oci_setup(a, data_dir);
    if (r < 0) {
        fatia_free(a);
        return r;
    }
    fatia_cgroups_init(&a->cg, opts->cgroup);
    if (a->cg.enabled && !opts->no_device_filter) {
        char dwhy[400];
        r = fatia_devfilter_probe(dwhy, sizeof(dwhy));
        a->devfilter = r == 0;
        if (r < 0)
            fatia_warn("agent: no device filter: %s; a pod can open any GPU's device node", dwhy);
    }
    a->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (a->inotify_fd >= 0 &&
        inotify_add_watch(a->inotify_fd, a->status_dir, IN_MOVED_TO | IN_CLOSE_WRITE) >= 0)
        a->inotify_ev = event_new(base, a->inotify_fd, EV_READ | EV_PERSIST, on_inotify, a);
    a->tick = event_new(base, -1, EV_PERSIST, on_tick, a);
    if (!a->tick) {
        fatia_agent_free(a);
        return -ENOMEM;
    }
    /* what holds here, once, for the person who runs fatiad (in containers, the lines after the
     * first are what the process mode's pods get: the fatia-process RuntimeClass) */
    if (a->oci)
        fatia_info("agent: each pod's containers run in a user namespace of its Kubernetes "
                   "namespace's host range, runc's cgroups and device cgroup; the process-mode "
                   "pods (RuntimeClass fatia-process):");
    if (a->switch_user)
        fatia_info("agent: pods run under a uid per namespace (from %u) with no_new_privs",
                   opts->uid_base ? opts->uid_base : FATIA_UIDMAP_DEFAULT_BASE);
    else
        fatia_warn("agent: pods run as uid %u, fatiad's own user (%s): pods of different "
                   "namespaces are not isolated from each other, and a pod can undo its memory "
                   "cap (unset LD_PRELOAD, write the accounting file); caps hold against "
                   "accidents only (docs/agent.md)",
                   (unsigned)geteuid(),
                   geteuid() == 0 ? "--agent user=current" : "fatiad is not root");
    if (a->cg.enabled && !a->cg.why[0])
        fatia_info("agent: pod cgroups under '%s' (memory and cpu limits enforced)", a->cg.parent);
    else
        fatia_warn("agent: %s%s", a->cg.why,
                   a->cg.enabled ? ""
                                 : "; pods get no cgroup: no memory or cpu limits, no device "
                                   "filter");
    if (a->devfilter)
        fatia_info("agent: each pod's cgroup gets a device filter: it opens only its own GPUs "
                   "(/dev/nvidia<minor>)");
    if (!a->have_vgpu)
        fatia_warn("agent: '%s' is missing: pods with memory-capped slices will not start",
                   a->vgpu_lib);
    if (a->oci && access(FATIA_CNI_PLUGIN_DIR "/bridge", X_OK) == 0) {
        /* the leases of sandboxes that are gone (SIGKILLed shims, a crash), whoever's they
         * were (cni_reclaim.c: never a live sandbox of another fatiad), on a thread of its own:
         * each costs a CNI DEL (about 130 ms), and 200 of them held fatiad's start, API
         * included, for 26 s. It needs nothing of this agent's, and a pod's ADD that finds the
         * range exhausted meanwhile reclaims by itself (cni.c), as another fatiad's would. */
        if (pthread_create(&a->reclaim, NULL, reclaim_main, NULL) == 0)
            a->reclaim_running = true;
        else
            (void)reclaim_main(NULL);
    }
    adopt_all(a);
    *ret = a;
    return 0;
}

int fatia_agent_logs(void *agent, const struct fatia_log_req *req, struct fatia_log_stream *stream)
{
    return fatia_agent_logs_provider(agent, req, stream);
}

int fatia_agent_start(struct fatia_agent *a)
{
    struct timeval one = {1, 0};
    int r;

    if (a->inotify_ev)
        event_add(a->inotify_ev, NULL);
    event_add(a->tick, &one);
    r = fatia_agent_gpuwatch_start(a, &a->gpuwatch);
    if (r < 0)
        return fatia_log_errno(FATIA_LOG_ERROR, r, "agent: cannot start the GPU memory watchdog");
    r = fatia_agent_gpuhealth_start(a, &a->gpuhealth);
    if (r < 0)
        return fatia_log_errno(FATIA_LOG_ERROR, r, "agent: cannot start the GPU health watch");
    r = start_watch(a);
    if (r < 0)
        return fatia_log_errno(FATIA_LOG_ERROR, r, "agent: cannot watch pods");
    return 0;
}

void fatia_agent_stop(struct fatia_agent *a, void (*done)(void *arg), void *arg)
{
    a->stopping = true;
    if (a->watch) {
        fatia_client_watch_stop(a->client, a->watch);
        a->watch = NULL;
    }
    if (a->tick)
        event_del(a->tick);
    if (a->inotify_ev)
        event_del(a->inotify_ev);
    fatia_agent_logs_stop_all(a);
    if (a->outstanding == 0) {
        done(arg);
        return;
    }
    a->stop_done = done;
    a->stop_arg = arg;
}

void fatia_agent_free(struct fatia_agent *a)
{
    if (!a)
        return;
    if (a->reclaim_running)
        pthread_join(a->reclaim, NULL);
    fatia_agent_gpuwatch_free(a->gpuwatch);
    fatia_agent_gpuhealth_free(a->gpuhealth);
    fatia_agent_cdi_free(a);
    fatia_image_puller_free(a->pulls);
    fatia_agent_apiproxy_free(a);
    while (a->pods)
        pod_free(a, a->pods);
    while (a->mpsd) {
        struct mpsd *m = a->mpsd;
        a->mpsd = m->next;
        /* MPS daemons outlive fatiad like the pods that use them: free the handle only */
        fatia_mps_forget(m->d);
        fatia_free(m);
    }
    fatia_strmap_release(&a->by_uid);
    fatia_uidmap_release(&a->uids);
    fatia_uidmap_release(&a->ranges);
    if (a->tick)
        event_free(a->tick);
    if (a->inotify_ev)
        event_free(a->inotify_ev);
    if (a->inotify_fd >= 0)
        close(a->inotify_fd);
    fatia_free(a);
}
