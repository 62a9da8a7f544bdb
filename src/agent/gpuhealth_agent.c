/*
 * agent/gpuhealth_agent.c: GPU health from NVML events in the node agent (gpuhealth_agent.h; the
 * verdicts are gpuhealth.c's, pure).
 *
 * Model, as NVIDIA's device plugin (internal/rm/health.go): NVML is loaded with dlopen; one event
 * set holds every GPU's XidCriticalError, DoubleBitEccError and SingleBitEccError events, masked
 * by what nvmlDeviceGetSupportedEventTypes says (NOT_SUPPORTED: a warning, the GPU is not
 * watched; any other registration error: the GPU is unhealthy from the start). A thread blocks in
 * nvmlEventSetWait_v2 (1 s, so that a stop is quick) and hands each event to the agent's loop
 * through a pipe; the thread does nothing else, so NVML's blocking wait never holds the loop.
 *
 * On the loop, an event judged critical takes its GPU out of service:
 *   1. the Node's annotation fatia.dev/gpu-health lists it (a merge patch of the whole value,
 *      rewritten from this state, retried every second until the API takes it); the device
 *      controller then re-plans the node without the GPU's devices: allocatable drops (capacity
 *      stays, as the kubelet's healthy + unhealthy), its ResourceSlice devices go, placement
 *      stops choosing it;
 *   2. a Warning Event on the Node names the GPU, the XID or ECC error, and what it means; the
 *      gauge fatia_agent_gpu_healthy{uuid} reads 0 and a counter per reason counts the events;
 *   3. eviction policy: every running pod holding a slice of that GPU (its fatia.dev/devices
 *      annotation names the GPU's UUID) is stopped at once, grace 0, phase Failed, reason
 *      GPUUnhealthy, with a Warning Event: a GPU that fell off the bus or holds an uncorrectable
 *      error has lost their work already. Their controllers (Job, ReplicaSet) make replacements,
 *      which placement puts on healthy GPUs. Pods of the node's other GPUs are left alone. The
 *      re-plan that drops the devices waits (ReplanBlocked) until those pods have let go.
 * Every second, a GPU out of service is probed (nvmlDeviceGetHandleByUUID, then
 * nvmlDeviceGetMemoryInfo); once the probe answers and no critical event came for the quiet
 * window (gpu-health-recover, 5 minutes by default) it returns: the annotation entry goes, the
 * devices come back, a Normal Event GPUHealthy says so. The device plugin never recovers
 * without a restart; here a GPU that keeps failing stays out and one that was reset returns.
 *
 * Which Node a GPU belongs to: gpu-health-node, else the ResourceSlice whose device carries the
 * GPU's uuid (or parentUUID), else the Node whose annotation lists it, read from the API client's
 * cache, remembered once found. At start
 * the Node's annotation is read back, so a GPU out of service before a restart stays out until it
 * recovers.
 *
 * Trust: the annotation is a Node's; only the node agent (and the cluster admin) may write a
 * Node, so a tenant can neither take a GPU out nor bring one back (tests/cli/agent-gpuhealth.sh).
 * The application XIDs a tenant's kernel can cause are ignored (gpuhealth.c).
 *
 * Rejected: marking through an in-process hook into the device controller (the node role runs
 * the agent apart from the control plane; the annotation works through the API in both, and is
 * visible to `kubectl describe node`); a Node condition per GPU (conditions are node-wide).
 */
#include "base/compat.h"

#include "agent/gpuhealth_agent.h"

#include <dlfcn.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "agent/gpuhealth.h"
#include "agent/podspec.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "base/str.h"
#include "client/client.h"

#define MAX_GPUS       64
#define NVML_OK        0
#define NVML_NOT_SUPP  3
#define NVML_TIMEOUT   10
#define WAIT_MS        1000
#define DEFAULT_QUIET  (300 * FATIA_USEC_PER_SEC)
#define NO_INSTANCE_ID 0xFFFFFFFFu

typedef int nvret;
typedef struct nvdev *nvdev;
typedef struct nvset *nvset;

typedef struct {
    nvdev device;
    unsigned long long eventType;
    unsigned long long eventData;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvevent;

typedef struct {
    unsigned long long total, free, used;
} nvmem;

struct gpu {
    nvdev dev;
    char uuid[96];
    unsigned index;
    bool watched;   /* its events are registered */
    bool unhealthy; /* out of service */
    char reason[64], msg[600];
    fatia_usec_t last_bad; /* monotonic: the last critical event */
    char since[40];        /* RFC 3339: when it left service */
    char node[256];        /* "" until known */
    uint64_t n_xid_critical, n_xid_ignored, n_dbe, n_sbe, n_evicted;
};

/* One event from the thread to the loop. index -1: the wait failed (data: NVML's code). */
struct msg {
    int index;
    uint64_t type, data;
};

struct alive {
    int refs;
    struct fatia_agent_gpuhealth *g; /* NULL once freed */
};

struct fatia_agent_gpuhealth {
    struct fatia_agent *a;
    void *lib;
    nvret (*init)(void);
    nvret (*shutdown)(void);
    nvret (*count)(unsigned *);
    nvret (*by_index)(unsigned, nvdev *);
    nvret (*by_uuid)(const char *, nvdev *);
    nvret (*get_uuid)(nvdev, char *, unsigned);
    nvret (*mem)(nvdev, nvmem *);
    nvret (*set_create)(nvset *);
    nvret (*set_free)(nvset);
    nvret (*supported)(nvdev, unsigned long long *);
    nvret (*reg)(nvdev, unsigned long long, nvset);
    nvret (*wait)(nvset, nvevent *, unsigned);
    bool inited; /* nvmlInit succeeded: nvmlShutdown at free */
    nvset set;
    struct gpu gpus[MAX_GPUS];
    unsigned n;
    struct fatia_gpuhealth_policy policy;
    fatia_usec_t quiet;
    const char *node_opt;
    pthread_t thread;
    bool thread_on;
    atomic_bool stop;
    int pipe[2];
    struct event *pipe_ev, *tick;
    bool dirty;         /* the annotation of some node differs from this state */
    uint64_t patch_gen; /* bumped at every change; a patch answered for an older one is stale */
    uint64_t wait_errors;
    struct alive *alive;
};

/* ---- NVML ---- */

static void *sym(void *lib, const char *a, const char *b)
{
    void *p = dlsym(lib, a);

    return p || !b ? p : dlsym(lib, b);
}

static int load(struct fatia_agent_gpuhealth *g, const char *path, char *why, size_t why_n)
{
    g->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!g->lib) {
        const char *e = dlerror();
        snprintf(why, why_n, "cannot load %s: %s", path, e ? e : "?");
        return -FATIA_E_NODRIVER;
    }
    *(void **)&g->init = sym(g->lib, "nvmlInit_v2", "nvmlInit");
    *(void **)&g->shutdown = sym(g->lib, "nvmlShutdown", NULL);
    *(void **)&g->count = sym(g->lib, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
    *(void **)&g->by_index =
        sym(g->lib, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
    *(void **)&g->by_uuid = sym(g->lib, "nvmlDeviceGetHandleByUUID", NULL);
    *(void **)&g->get_uuid = sym(g->lib, "nvmlDeviceGetUUID", NULL);
    *(void **)&g->mem = sym(g->lib, "nvmlDeviceGetMemoryInfo", NULL);
    *(void **)&g->set_create = sym(g->lib, "nvmlEventSetCreate", NULL);
    *(void **)&g->set_free = sym(g->lib, "nvmlEventSetFree", NULL);
    *(void **)&g->supported = sym(g->lib, "nvmlDeviceGetSupportedEventTypes", NULL);
    *(void **)&g->reg = sym(g->lib, "nvmlDeviceRegisterEvents", NULL);
    *(void **)&g->wait = sym(g->lib, "nvmlEventSetWait_v2", "nvmlEventSetWait");
    if (!g->init || !g->shutdown || !g->count || !g->by_index || !g->by_uuid || !g->get_uuid ||
        !g->mem || !g->set_create || !g->set_free || !g->supported || !g->reg || !g->wait) {
        snprintf(why, why_n, "%s lacks NVML's event API", path);
        return -FATIA_E_NODRIVER;
    }
    if (g->init() != NVML_OK) {
        snprintf(why, why_n, "%s: nvmlInit failed", path);
        return -FATIA_E_NODRIVER;
    }
    g->inited = true;
    return 0;
}

static void mark(struct fatia_agent_gpuhealth *g, struct gpu *u, const char *reason,
                 const char *msg);

/* Registers every GPU's health events in one set. */
static int watch_all(struct fatia_agent_gpuhealth *g, char *why, size_t why_n)
{
    unsigned n = 0;

    if (g->count(&n) != NVML_OK) {
        snprintf(why, why_n, "nvmlDeviceGetCount failed");
        return -FATIA_E_NODRIVER;
    }
    if (g->set_create(&g->set) != NVML_OK) {
        snprintf(why, why_n, "nvmlEventSetCreate failed");
        return -FATIA_E_NODRIVER;
    }
    for (unsigned i = 0; i < n && g->n < MAX_GPUS; i++) {
        struct gpu *u = &g->gpus[g->n];
        unsigned long long types = 0;
        nvret r;
        if (g->by_index(i, &u->dev) != NVML_OK ||
            g->get_uuid(u->dev, u->uuid, sizeof(u->uuid)) != NVML_OK)
            continue;
        u->index = i;
        g->n++;
        r = g->supported(u->dev, &types);
        types &= FATIA_GPUHEALTH_EV_ALL;
        if (r == NVML_OK && types)
            r = g->reg(u->dev, types, g->set);
        if (r == NVML_OK && types) {
            u->watched = true;
        } else if (r == NVML_NOT_SUPP || (r == NVML_OK && !types)) {
            fatia_warn("agent: GPU health: GPU %u (%s) offers no health events; it is not "
                       "watched",
                       i, u->uuid);
        } else {
            char m[200];
            snprintf(m, sizeof(m), "its health events cannot be registered (NVML code %d)", r);
            mark(g, u, "GPUHealthUnknown", m);
        }
    }
    return 0;
}

static void *wait_thread(void *arg)
{
    struct fatia_agent_gpuhealth *g = arg;

    while (!atomic_load(&g->stop)) {
        nvevent e = {0};
        nvret r = g->wait(g->set, &e, WAIT_MS);
        struct msg m = {-1, 0, (uint64_t)r};
        if (r == NVML_TIMEOUT)
            continue;
        if (r == NVML_OK) {
            m.index = -2; /* an event of a device not ours */
            for (unsigned i = 0; i < g->n; i++)
                if (g->gpus[i].dev == e.device)
                    m.index = (int)i;
            m.type = e.eventType;
            m.data = e.eventData;
        }
        if (write(g->pipe[1], &m, sizeof(m)) != (ssize_t)sizeof(m))
            break;
        if (r != NVML_OK && !atomic_load(&g->stop))
            sleep(1); /* a failing wait must not spin */
    }
    return NULL;
}

/* ---- the Node annotation and Events ---- */

static const struct fatia_kind *node_kind(void)
{
    return fatia_kind_find("v1", "Node", NULL);
}

struct find {
    const char *uuid;
    char *node;
    size_t n;
};

static void find_slice(void *arg, const json_t *obj)
{
    struct find *f = arg;
    const json_t *spec = json_object_get(obj, "spec"), *d;
    const char *nn = fatia_json_str(spec, "nodeName");
    size_t i;

    if (f->node[0] || !nn)
        return;
    json_array_foreach(json_object_get(spec, "devices"), i, d)
    {
        const json_t *at = json_object_get(d, "attributes");
        const char *u = fatia_json_str(json_object_get(at, "uuid"), "string");
        const char *pu = fatia_json_str(json_object_get(at, "parentUUID"), "string");
        if ((u && !strcmp(u, f->uuid)) || (pu && !strcmp(pu, f->uuid))) {
            snprintf(f->node, f->n, "%s", nn);
            return;
        }
    }
}

/* A Node whose annotation names the GPU (its devices are gone from the slices then). */
static void find_node(void *arg, const json_t *obj)
{
    struct find *f = arg;
    const char *text =
        fatia_json_str(json_object_get(json_object_get(obj, "metadata"), "annotations"),
                       FATIA_GPUHEALTH_ANNOTATION);
    const char *name = fatia_json_str(json_object_get(obj, "metadata"), "name");
    json_t *val;

    if (f->node[0] || !text || !name || !strstr(text, f->uuid))
        return;
    val = json_loads(text, 0, NULL);
    if (json_object_get(val, f->uuid))
        snprintf(f->node, f->n, "%s", name);
    json_decref(val);
}

static void adopt(struct fatia_agent_gpuhealth *g, const char *node);

static bool node_of(struct fatia_agent_gpuhealth *g, struct gpu *u)
{
    if (u->node[0])
        return true;
    if (g->node_opt && *g->node_opt) {
        snprintf(u->node, sizeof(u->node), "%s", g->node_opt);
    } else {
        struct find f = {u->uuid, u->node, sizeof(u->node)};
        (void)fatia_client_cached_each(g->a->client,
                                       fatia_kind_find("resource.k8s.io/v1", "ResourceSlice", NULL),
                                       NULL, find_slice, &f);
        if (!u->node[0])
            (void)fatia_client_cached_each(g->a->client, node_kind(), NULL, find_node, &f);
    }
    if (u->node[0])
        adopt(g, u->node);
    return u->node[0] != '\0';
}

static void event_done(void *arg, const struct fatia_client_result *res)
{
    (void)arg;
    if (res->status)
        fatia_debug("agent: GPU health: Event not recorded: %s",
                    fatia_json_str(res->status, "message"));
}

static void node_event(struct fatia_agent_gpuhealth *g, const char *node, const char *type,
                       const char *reason, const char *msg)
{
    char name[400], now[40];
    json_t *ev;

    fatia_time_format_rfc3339(fatia_now_real_usec(), false, now, sizeof(now));
    snprintf(name, sizeof(name), "%.200s.%" PRIx64, node, (uint64_t)fatia_now_real_usec());
    ev = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s,s:s,s:s},s:s,s:s,s:s,s:i,s:s,s:s,s:{s:s,s:s},"
                   "s:s,s:s}",
                   "apiVersion", "v1", "kind", "Event", "metadata", "name", name, "namespace",
                   "default", "involvedObject", "kind", "Node", "name", node, "uid", node, "reason",
                   reason, "message", msg, "type", type, "count", 1, "firstTimestamp", now,
                   "lastTimestamp", now, "source", "component", "fatia-agent", "host", node,
                   "reportingComponent", "fatia-agent", "reportingInstance", node);
    if (!ev || fatia_client_create(g->a->client, ev, NULL, event_done, NULL) < 0)
        fatia_warn("agent: GPU health: the Event %s on node %s was not recorded", reason, node);
    json_decref(ev);
}

struct patch_ctx {
    struct alive *alive;
    uint64_t gen;
};

static void alive_put(struct alive *al)
{
    if (--al->refs == 0)
        fatia_free(al);
}

static void patched(void *arg, const struct fatia_client_result *res)
{
    struct patch_ctx *pc = arg;
    struct fatia_agent_gpuhealth *g = pc->alive->g;

    if (g && res->status) {
        g->dirty = true; /* retried at the next tick */
        fatia_debug("agent: GPU health: annotation not written: %s",
                    fatia_json_str(res->status, "message"));
    }
    alive_put(pc->alive);
    fatia_free(pc);
}

/* Rewrites the annotation of every node that has GPUs here, from this state. */
static void write_annotations(struct fatia_agent_gpuhealth *g)
{
    g->dirty = false;
    for (unsigned i = 0; i < g->n; i++) {
        const char *node = g->gpus[i].node;
        json_t *val, *patch;
        bool first = true, any = false;
        char *text = NULL, *body = NULL;
        if (!node[0]) {
            if (g->gpus[i].unhealthy)
                g->dirty = true; /* its node is not known yet */
            continue;
        }
        for (unsigned k = 0; k < i; k++)
            if (!strcmp(g->gpus[k].node, node))
                first = false;
        if (!first)
            continue;
        val = json_object();
        for (unsigned k = i; val && k < g->n; k++) {
            const struct gpu *u = &g->gpus[k];
            if (!u->unhealthy || strcmp(u->node, node))
                continue;
            any = true;
            json_object_set_new(val, u->uuid,
                                json_pack("{s:s,s:s,s:s}", "reason", u->reason, "message", u->msg,
                                          "since", u->since));
        }
        if (val && any)
            text = json_dumps(val, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(val);
        patch = json_pack("{s:{s:{s:o}}}", "metadata", "annotations", FATIA_GPUHEALTH_ANNOTATION,
                          text ? json_string(text) : json_null());
        body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
        json_decref(patch);
        free(text);
        if (body) {
            struct patch_ctx *pc = fatia_calloc(1, sizeof(*pc));
            if (pc) {
                pc->alive = g->alive;
                pc->gen = g->patch_gen;
                g->alive->refs++;
                if (fatia_client_patch(g->a->client, node_kind(), NULL, node, NULL,
                                       FATIA_PATCH_MERGE, body, strlen(body), NULL, patched,
                                       pc) < 0) {
                    alive_put(pc->alive);
                    fatia_free(pc);
                    g->dirty = true;
                }
            }
        } else {
            g->dirty = true;
        }
        free(body);
    }
}

/* ---- the policy applied ---- */

static bool holds_gpu(const json_t *pod, const char *uuid)
{
    struct fatia_pod_devices devs;
    char why[256];
    bool yes = false;

    if (fatia_pod_devices_parse(pod, &devs, why, sizeof(why)) < 0)
        return false;
    for (size_t i = 0; i < devs.n && !yes; i++)
        yes = devs.v[i].uuid && !strcmp(devs.v[i].uuid, uuid);
    fatia_pod_devices_release(&devs);
    return yes;
}

static void evict_on(struct fatia_agent_gpuhealth *g, struct gpu *u)
{
    for (struct apod *p = g->a->pods; p; p = p->next) {
        char m[900];
        if (p->st != AP_ACTIVE || p->stop_sent || !p->pod || !holds_gpu(p->pod, u->uuid))
            continue;
        snprintf(m, sizeof(m),
                 "GPU %u (%s) left service: %s; the pod held a slice of it and was stopped",
                 u->index, u->uuid, u->msg);
        u->n_evicted++;
        fatia_agent_gpu_unhealthy(g->a, p, m);
    }
}

static void mark(struct fatia_agent_gpuhealth *g, struct gpu *u, const char *reason,
                 const char *msg)
{
    char m[800];

    u->last_bad = fatia_now_mono_usec();
    if (u->unhealthy)
        return;
    u->unhealthy = true;
    snprintf(u->reason, sizeof(u->reason), "%s", reason);
    snprintf(u->msg, sizeof(u->msg), "%s", msg);
    fatia_time_format_rfc3339(fatia_now_real_usec(), false, u->since, sizeof(u->since));
    snprintf(m, sizeof(m), "GPU %u (%s) is unhealthy: %s; its slices leave the node's allocatable",
             u->index, u->uuid, msg);
    fatia_warn("agent: %s", m);
    g->patch_gen++;
    g->dirty = true;
    if (g->a && node_of(g, u))
        node_event(g, u->node, "Warning", reason, m);
    if (g->a)
        evict_on(g, u);
}

/* The Node's annotation as it was before this process: GPUs out of service stay out. */
static void adopt(struct fatia_agent_gpuhealth *g, const char *node)
{
    const json_t *n = fatia_client_cached(g->a->client, node_kind(), NULL, node);
    const char *text = fatia_json_str(
        json_object_get(json_object_get(n, "metadata"), "annotations"), FATIA_GPUHEALTH_ANNOTATION);
    json_t *val = text ? json_loads(text, 0, NULL) : NULL;
    const char *uuid;
    json_t *e;

    json_object_foreach(val, uuid, e)
    {
        for (unsigned i = 0; i < g->n; i++) {
            struct gpu *u = &g->gpus[i];
            if (strcmp(u->uuid, uuid) || u->unhealthy)
                continue;
            snprintf(u->node, sizeof(u->node), "%s", node);
            u->unhealthy = true;
            u->last_bad = fatia_now_mono_usec();
            snprintf(u->reason, sizeof(u->reason), "%s",
                     fatia_json_str(e, "reason") ? fatia_json_str(e, "reason") : "GPUUnhealthy");
            snprintf(u->msg, sizeof(u->msg), "%s",
                     fatia_json_str(e, "message") ? fatia_json_str(e, "message") : "");
            snprintf(u->since, sizeof(u->since), "%s",
                     fatia_json_str(e, "since") ? fatia_json_str(e, "since") : "");
            fatia_info("agent: GPU health: GPU %u (%s) stays out of service (%s) until it "
                       "recovers",
                       u->index, u->uuid, u->reason);
        }
    }
    json_decref(val);
}

static void on_msg(evutil_socket_t fd, short what, void *arg)
{
    struct fatia_agent_gpuhealth *g = arg;
    struct msg m;
    char reason[64], msg[600];

    (void)what;
    while (read(fd, &m, sizeof(m)) == (ssize_t)sizeof(m)) {
        if (m.index == -1) {
            g->wait_errors++;
            fatia_gpuhealth_wait_failed((int)m.data, reason, sizeof(reason), msg, sizeof(msg));
            if (!g->policy.off)
                for (unsigned i = 0; i < g->n; i++)
                    mark(g, &g->gpus[i], reason, msg);
            continue;
        }
        if (m.index < 0 || (unsigned)m.index >= g->n)
            continue;
        {
            struct gpu *u = &g->gpus[m.index];
            enum fatia_gpuhealth_verdict v = fatia_gpuhealth_judge(
                &g->policy, m.type, m.data, reason, sizeof(reason), msg, sizeof(msg));
            if (m.type == FATIA_GPUHEALTH_EV_XID)
                *(v == FATIA_GPUHEALTH_UNHEALTHY ? &u->n_xid_critical : &u->n_xid_ignored) += 1;
            else if (m.type == FATIA_GPUHEALTH_EV_DBE)
                u->n_dbe++;
            else if (m.type == FATIA_GPUHEALTH_EV_SBE)
                u->n_sbe++;
            if (v == FATIA_GPUHEALTH_UNHEALTHY)
                mark(g, u, reason, msg);
            else
                fatia_info("agent: GPU health: GPU %u (%s): %s", u->index, u->uuid, msg);
        }
    }
    if (g->dirty)
        write_annotations(g);
}

static bool probe(struct fatia_agent_gpuhealth *g, const struct gpu *u)
{
    nvdev d;
    nvmem m;

    return g->by_uuid(u->uuid, &d) == NVML_OK && g->mem(d, &m) == NVML_OK && m.total > 0;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct fatia_agent_gpuhealth *g = arg;
    fatia_usec_t now = fatia_now_mono_usec();

    (void)fd;
    (void)what;
    if (g->a->stopping)
        return;
    for (unsigned i = 0; i < g->n; i++) {
        struct gpu *u = &g->gpus[i];
        bool known = node_of(g, u);
        if (!u->unhealthy)
            continue;
        if (fatia_gpuhealth_may_recover(u->last_bad, now, g->quiet, probe(g, u))) {
            char m[400];
            u->unhealthy = false;
            snprintf(m, sizeof(m),
                     "GPU %u (%s) is healthy again (NVML answers, no critical event for %" PRId64
                     " s); its slices return",
                     u->index, u->uuid, (int64_t)(g->quiet / FATIA_USEC_PER_SEC));
            fatia_info("agent: %s", m);
            if (known)
                node_event(g, u->node, "Normal", "GPUHealthy", m);
            g->patch_gen++;
            g->dirty = true;
            continue;
        }
        evict_on(g, u); /* pods that started on it before the devices went */
    }
    if (g->dirty)
        write_annotations(g);
}

/* ---- options ---- */

bool fatia_agent_gpuhealth_opt(struct fatia_agent_opts *o, const char *kv, const char *v, char *why,
                               size_t why_n, int *ret_r)
{
    size_t kl = (size_t)(v - 1 - kv);
    struct fatia_gpuhealth_policy t;
    int64_t d;

#define HKEY(s) (kl == strlen(s) && !strncmp(kv, s, kl))
    *ret_r = 0;
    fatia_gpuhealth_policy_init(&t);
    if (HKEY("gpu-health")) {
        if (strcmp(v, "auto") && strcmp(v, "off")) {
            snprintf(why, why_n, "gpu-health: expected auto or off");
            *ret_r = -EINVAL;
        }
        o->gpu_health = v;
    } else if (HKEY("gpu-health-nvml")) {
        o->gpu_health_nvml = v;
    } else if (HKEY("gpu-health-node")) {
        o->gpu_health_node = v;
    } else if (HKEY("gpu-health-recover")) {
        if (fatia_parse_duration_usec(v, &d) < 0 || d < FATIA_USEC_PER_MSEC ||
            d > 24 * 3600 * FATIA_USEC_PER_SEC) {
            snprintf(why, why_n, "gpu-health-recover: expected a duration from 1ms to 24h");
            *ret_r = -EINVAL;
        } else {
            o->gpu_health_recover_ms = d / FATIA_USEC_PER_MSEC;
        }
    } else if (HKEY("gpu-health-ignore-xids")) {
        *ret_r = fatia_gpuhealth_policy_disable(&t, v, why, why_n);
        o->gpu_health_ignore = v;
    } else if (HKEY("gpu-health-enable-xids")) {
        *ret_r = fatia_gpuhealth_policy_enable(&t, v, why, why_n);
        o->gpu_health_enable = v;
    } else {
        return false;
    }
#undef HKEY
    return true;
}

/* ---- life cycle ---- */

int fatia_agent_gpuhealth_start(struct fatia_agent *a, struct fatia_agent_gpuhealth **ret)
{
    struct fatia_agent_gpuhealth *g;
    const char *path = a->o.gpu_health_nvml  ? a->o.gpu_health_nvml
                       : a->o.gpu_watch_nvml ? a->o.gpu_watch_nvml
                                             : "libnvidia-ml.so.1";
    char why[512] = "";
    struct timeval tv = {1, 0};
    int r;

    *ret = NULL;
    if (a->o.gpu_health && !strcmp(a->o.gpu_health, "off")) {
        fatia_warn("agent: GPU health checks are off (--agent gpu-health=off): a GPU that fails "
                   "keeps its slices and its pods");
        return 0;
    }
    g = fatia_calloc(1, sizeof(*g));
    if (!g)
        return -ENOMEM;
    g->a = a;
    g->pipe[0] = g->pipe[1] = -1;
    g->node_opt = a->o.gpu_health_node;
    g->quiet = a->o.gpu_health_recover_ms ? a->o.gpu_health_recover_ms * 1000 : DEFAULT_QUIET;
    fatia_gpuhealth_policy_init(&g->policy);
    if ((a->o.gpu_health_ignore && fatia_gpuhealth_policy_disable(
                                       &g->policy, a->o.gpu_health_ignore, why, sizeof(why)) < 0) ||
        (a->o.gpu_health_enable &&
         fatia_gpuhealth_policy_enable(&g->policy, a->o.gpu_health_enable, why, sizeof(why)) < 0)) {
        fatia_error("agent: --agent %s", why);
        fatia_free(g);
        return -EINVAL;
    }
    if (!(g->alive = fatia_calloc(1, sizeof(*g->alive)))) {
        fatia_free(g);
        return -ENOMEM;
    }
    g->alive->refs = 1;
    g->alive->g = g;
    r = load(g, path, why, sizeof(why));
    if (r == 0) {
        g->a = NULL; /* no Events or evictions before the loop runs */
        r = watch_all(g, why, sizeof(why));
        g->a = a;
    }
    if (r < 0) {
        fatia_info("agent: no GPU health watch (%s)", why);
        fatia_agent_gpuhealth_free(g);
        return 0;
    }
    if (pipe2(g->pipe, O_CLOEXEC | O_NONBLOCK) < 0 ||
        !(g->pipe_ev = event_new(a->base, g->pipe[0], EV_READ | EV_PERSIST, on_msg, g)) ||
        !(g->tick = event_new(a->base, -1, EV_PERSIST, on_tick, g))) {
        fatia_agent_gpuhealth_free(g);
        return -ENOMEM;
    }
    /* the thread's end of the pipe blocks: an event is never dropped */
    (void)fcntl(g->pipe[1], F_SETFL, 0);
    event_add(g->pipe_ev, NULL);
    event_add(g->tick, &tv);
    if (pthread_create(&g->thread, NULL, wait_thread, g) != 0) {
        fatia_agent_gpuhealth_free(g);
        return -ENOMEM;
    }
    g->thread_on = true;
    fatia_info("agent: GPU health watch on %u GPU%s (NVML events: critical XIDs except the "
               "ignored ones, double-bit ECC; recovery after %" PRId64 " s quiet)",
               g->n, g->n == 1 ? "" : "s", (int64_t)(g->quiet / FATIA_USEC_PER_SEC));
    *ret = g;
    return 0;
}

void fatia_agent_gpuhealth_free(struct fatia_agent_gpuhealth *g)
{
    if (!g)
        return;
    atomic_store(&g->stop, true);
    if (g->thread_on) {
        char buf[256];
        /* the thread may block writing a full pipe: drain it while it ends */
        while (pthread_tryjoin_np(g->thread, NULL) == EBUSY) {
            while (read(g->pipe[0], buf, sizeof(buf)) > 0) {
            }
            usleep(10000);
        }
    }
    if (g->pipe_ev)
        event_free(g->pipe_ev);
    if (g->tick)
        event_free(g->tick);
    if (g->pipe[0] >= 0)
        close(g->pipe[0]);
    if (g->pipe[1] >= 0)
        close(g->pipe[1]);
    if (g->set)
        g->set_free(g->set);
    if (g->inited)
        g->shutdown();
    if (g->lib)
        dlclose(g->lib);
    if (g->alive) {
        g->alive->g = NULL;
        alive_put(g->alive);
    }
    fatia_free(g);
}

int fatia_agent_gpuhealth_metrics(const struct fatia_agent_gpuhealth *g, struct fatia_buf *out)
{
    int r = 0;

    if (!g)
        return 0;
    r |= fatia_buf_puts(out, "# HELP fatia_agent_gpu_healthy 1 while the GPU is in service, 0 "
                             "once a health event took it out\n"
                             "# TYPE fatia_agent_gpu_healthy gauge\n");
    for (unsigned i = 0; i < g->n; i++)
        r |= fatia_buf_printf(out, "fatia_agent_gpu_healthy{uuid=\"%s\",reason=\"%s\"} %d\n",
                              g->gpus[i].uuid, g->gpus[i].unhealthy ? g->gpus[i].reason : "",
                              !g->gpus[i].unhealthy);
    r |= fatia_buf_puts(out, "# HELP fatia_agent_gpu_health_events_total NVML health events "
                             "seen, by kind\n"
                             "# TYPE fatia_agent_gpu_health_events_total counter\n");
    for (unsigned i = 0; i < g->n; i++) {
        const struct gpu *u = &g->gpus[i];
        r |= fatia_buf_printf(
            out,
            "fatia_agent_gpu_health_events_total{uuid=\"%s\",kind=\"xid-critical\"} %" PRIu64 "\n"
            "fatia_agent_gpu_health_events_total{uuid=\"%s\",kind=\"xid-ignored\"} %" PRIu64 "\n"
            "fatia_agent_gpu_health_events_total{uuid=\"%s\",kind=\"ecc-double-bit\"} %" PRIu64 "\n"
            "fatia_agent_gpu_health_events_total{uuid=\"%s\",kind=\"ecc-single-bit\"} %" PRIu64
            "\n",
            u->uuid, u->n_xid_critical, u->uuid, u->n_xid_ignored, u->uuid, u->n_dbe, u->uuid,
            u->n_sbe);
    }
    r |= fatia_buf_puts(out, "# HELP fatia_agent_gpu_health_evictions_total Pods stopped "
                             "because their GPU left service\n"
                             "# TYPE fatia_agent_gpu_health_evictions_total counter\n");
    {
        uint64_t n = 0;
        for (unsigned i = 0; i < g->n; i++)
            n += g->gpus[i].n_evicted;
        r |= fatia_buf_printf(out, "fatia_agent_gpu_health_evictions_total %" PRIu64 "\n", n);
    }
    r |= fatia_buf_printf(out,
                          "# HELP fatia_agent_gpu_health_wait_errors_total NVML event waits "
                          "that failed\n"
                          "# TYPE fatia_agent_gpu_health_wait_errors_total counter\n"
                          "fatia_agent_gpu_health_wait_errors_total %" PRIu64 "\n",
                          g->wait_errors);
    return r ? -ENOMEM : 0;
}
