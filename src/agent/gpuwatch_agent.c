/*
 * agent/gpuwatch_agent.c: the GPU memory watchdog in the node agent (gpuwatch.h has the model).
 *
 * Every period (--agent gpu-watch, 250 ms by default, never more) a timer on the agent's loop
 * samples NVML, builds the table of watched pods (active, with a cgroup, holding at least one
 * capped slice), and stops every pod over its limit at once (grace 0, as kubelet's eviction):
 * phase Failed, reason GPUMemoryLimitExceeded, a Warning Event naming the slices, the cap and
 * the peak seen; fatia_agent_gpuwatch_kills counts them in /metrics.
 *
 * A pod's caps come from its fatia.dev/devices annotation, which the agent has already checked
 * against its node's inventory (trust_devices): a timeslice or fraction slice caps its GPU at
 * memoryBytes, an MPS slice at its pinned device memory limit; a pod that also holds a slice
 * without a cap on that GPU (whole, MIG) is not capped there. Slices of one pod on one GPU add
 * up. The table is cached by pod uid (the annotation does not change once bound) and rebuilt
 * only for new pods.
 *
 * A pod in containers has no cgroup of the agent's own (p->cgroup is the process mode's): its
 * containers are runc's cgroupsPath /fatia-pods/pod-<uid>/<name> (oci_pod.c), the same path in
 * every hierarchy, the unified one included (runc joins it on a hybrid host too), so the pod is
 * the subtree /fatia-pods/pod-<uid> of the cgroup2 hierarchy, which is how /proc/PID/cgroup's
 * "0::" line names it.
 *
 * The same samples carry each process's SM utilisation: every pod with a GPU device (capped or
 * not: a whole GPU too) is in the table, the verdict skips the uncapped ones, and
 * fatia_gpuwatch_util gives each pod its utilisation; the highest of a window (gpu-util-every,
 * 10 s by default) is published as the pod's condition fatia.dev/GPUUtilization
 * (gpuutil_agent.c), at once when it rises by 10 points or more (a pod that woke up is not left
 * looking idle until the window ends).
 *
 * Invariants: only pods with a cgroup are watched (the pid-to-pod map is the cgroup); a pod is
 * stopped once (stop_sent); the watchdog reads NVML and /proc only, it never changes a GPU's
 * settings.
 *
 * Rejected: SIGKILL to the offending pids only (the pod's other processes would carry on with a
 * broken job, and a tenant could fork a fresh offender each period); a grace period (the memory
 * is taken from a neighbour while it runs).
 */
#include "base/compat.h"

#include "agent/gpuwatch_agent.h"

#include <errno.h>
#include <event2/event.h>

#include "agent/agent_int.h"
#include "agent/gpuwatch.h"
#include "agent/podspec.h"
#include "agent/runtime.h"
#include "agent/vgpu_slice.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"

struct watched {
    char uid[128];
    char cgroup[FATIA_GPUWATCH_CGROUP_MAX];
    char uuids[FATIA_GPUWATCH_MAX_GPUS][FATIA_GPUWATCH_UUID_MAX];
    char slices[FATIA_GPUWATCH_MAX_GPUS][256]; /* the slices on each GPU, comma-separated */
    struct fatia_gpuwatch_pod pod;
    bool seen, capped;
    int win_max, pub_val; /* the window's highest utilisation; the last published */
    unsigned win_n;       /* samples in the window */
    fatia_usec_t pub_at;  /* monotonic time of the last publication; 0: none yet */
    struct watched *next;
};

struct fatia_agent_gpuwatch {
    struct fatia_agent *a;
    struct fatia_gpuwatch *w;
    struct event *ev;
    unsigned period_ms;
    uint64_t reserve;
    unsigned util_ms;
    struct watched *list;
    struct fatia_gpuwatch_pod *tab; /* scratch for the verdict */
    struct watched **tab_of;
    size_t tab_cap;
    uint64_t kills, samples, sample_errors, util_published;
    bool warned;
};

static struct watched *find(struct fatia_agent_gpuwatch *g, const char *uid)
{
    for (struct watched *e = g->list; e; e = e->next) {
        if (!strcmp(e->uid, uid))
            return e;
    }
    return NULL;
}

static void add_cap(struct watched *e, const struct fatia_pod_device *d, uint64_t cap)
{
    unsigned g;

    for (g = 0; g < e->pod.n_gpus; g++) {
        if (!strcmp(e->uuids[g], d->uuid))
            break;
    }
    if (g == e->pod.n_gpus) {
        if (g == FATIA_GPUWATCH_MAX_GPUS || strlen(d->uuid) >= FATIA_GPUWATCH_UUID_MAX)
            return;
        snprintf(e->uuids[g], sizeof(e->uuids[g]), "%s", d->uuid);
        e->pod.uuid[g] = e->uuids[g];
        e->pod.cap[g] = 0;
        e->slices[g][0] = '\0';
        e->pod.n_gpus++;
    }
    if (d->slice && strstr(e->slices[g], d->slice))
        return; /* one slice, several containers: counted once */
    if (d->slice) {
        size_t l = strlen(e->slices[g]);
        snprintf(e->slices[g] + l, sizeof(e->slices[g]) - l, "%s%s", l ? "," : "", d->slice);
    }
    if (cap == UINT64_MAX || e->pod.cap[g] == UINT64_MAX)
        e->pod.cap[g] = UINT64_MAX;
    else
        e->pod.cap[g] += cap;
}

/* The pod runs in containers: start_pod's rule (the agent's runtime is oci, and the pod does
 * not name the fatia-process RuntimeClass). */
static bool in_containers(const struct fatia_agent *a, const struct apod *p)
{
    const char *rtc = fatia_json_str(json_object_get(p->pod, "spec"), "runtimeClassName");

    return a->oci && !(rtc && !strcmp(rtc, FATIA_RUNTIME_CLASS_PROCESS));
}

/* The pod's entry, built on first sight. NULL: not watched (no cgroup, no GPU device). */
static struct watched *entry_of(struct fatia_agent_gpuwatch *g, struct apod *p)
{
    struct fatia_pod_devices devs = {0};
    struct watched *e = find(g, p->uid);
    char why[256];
    bool capped = false;

    if (e)
        return e;
    if ((!p->cgroup[0] && !in_containers(g->a, p)) || !p->pod ||
        fatia_pod_devices_parse(p->pod, &devs, why, sizeof(why)) < 0)
        return NULL;
    e = fatia_calloc(1, sizeof(*e));
    if (!e)
        goto out;
    snprintf(e->uid, sizeof(e->uid), "%s", p->uid);
    if (!p->cgroup[0])
        snprintf(e->cgroup, sizeof(e->cgroup), "/fatia-pods/pod-%.128s", p->uid);
    else if (fatia_gpuwatch_cgroup_rel(p->cgroup, e->cgroup, sizeof(e->cgroup)) < 0)
        goto drop;
    e->pod.cgroup = e->cgroup;
    for (size_t i = 0; i < devs.n; i++) {
        const struct fatia_pod_device *d = &devs.v[i];
        uint64_t cap = UINT64_MAX;

        if (!d->uuid)
            continue;
        if (fatia_pod_device_cap(d))
            cap = fatia_pod_device_cap(d);
        add_cap(e, d, cap);
    }
    for (unsigned k = 0; k < e->pod.n_gpus; k++)
        capped = capped || e->pod.cap[k] != UINT64_MAX;
    if (e->pod.n_gpus == 0)
        goto drop;
    e->capped = capped;
    e->win_max = e->pub_val = -1;
    e->next = g->list;
    g->list = e;
    goto out;
drop:
    fatia_free(e);
    e = NULL;
out:
    fatia_pod_devices_release(&devs);
    return e;
}

static void stop_pod(struct fatia_agent_gpuwatch *g, struct apod *p, struct watched *e)
{
    int k = e->pod.over;
    char msg[900];

    snprintf(msg, sizeof(msg),
             "slice %s: the pod's processes held %" PRIu64 " bytes of GPU %s, over the slice's "
             "cap of %" PRIu64 " bytes plus a context reserve of %" PRIu64 " bytes for each of "
             "its %u process%s there; the GPU memory watchdog stopped the pod",
             e->slices[k][0] ? e->slices[k] : "?", e->pod.used[k], e->uuids[k], e->pod.cap[k],
             g->reserve, e->pod.procs[k], e->pod.procs[k] == 1 ? "" : "es");
    g->kills++;
    fatia_agent_gpu_exceeded(g->a, p, msg);
}

/* One sample of e's utilisation into its window; publishes the window when it ends, or at once
 * on the first sample and when the figure rises by 10 points or more. */
static void publish_util(struct fatia_agent_gpuwatch *g, struct watched *e, int util)
{
    fatia_usec_t now = fatia_now_mono_usec();
    bool rise;
    struct apod *p;
    json_t *cond;

    if (e->win_n++ == 0)
        e->win_max = util;
    else if (util < 0 || e->win_max < 0)
        e->win_max = -1;
    else if (util > e->win_max)
        e->win_max = util;
    rise = e->pub_val >= 0 && util >= e->pub_val + 10;
    if (e->pub_at && !rise && now - e->pub_at < (fatia_usec_t)g->util_ms * FATIA_USEC_PER_MSEC)
        return;
    p = fatia_agent_pod(g->a, e->uid);
    if (!p)
        return;
    cond = fatia_agent_gpuutil_condition(rise ? util : e->win_max, g->util_ms,
                                         (int64_t)fatia_now_real_usec());
    if (cond && fatia_agent_pod_condition(g->a, p, cond) == 0) {
        e->pub_val = rise ? util : e->win_max;
        e->pub_at = now;
        e->win_n = 0;
        g->util_published++;
    }
    json_decref(cond);
}

static void on_period(evutil_socket_t fd, short what, void *arg)
{
    struct fatia_agent_gpuwatch *g = arg;
    const char *uuids[FATIA_GPUWATCH_MAX_GPUS];
    const struct fatia_gpuwatch_proc *procs;
    struct watched **pp;
    size_t n = 0, n_procs;
    unsigned n_uuids = fatia_gpuwatch_n_gpus(g->w);

    (void)fd;
    (void)what;
    if (g->a->stopping)
        return;
    for (struct watched *e = g->list; e; e = e->next)
        e->seen = false;
    for (struct apod *p = g->a->pods; p; p = p->next) {
        struct watched *e;

        if (p->st != AP_ACTIVE || p->stop_sent)
            continue;
        e = entry_of(g, p);
        if (!e)
            continue;
        e->seen = true;
        if (n == g->tab_cap) {
            size_t cap = g->tab_cap ? 2 * g->tab_cap : 64;
            void *t = fatia_reallocarray(g->tab, cap, sizeof(*g->tab));
            void *o = t ? fatia_reallocarray(g->tab_of, cap, sizeof(*g->tab_of)) : NULL;
            if (t)
                g->tab = t;
            if (!o)
                return;
            g->tab_of = o;
            g->tab_cap = cap;
        }
        g->tab[n] = e->pod;
        g->tab_of[n++] = e;
    }
    /* forget pods gone or stopped */
    for (pp = &g->list; *pp;) {
        struct watched *e = *pp;
        if (e->seen) {
            pp = &e->next;
            continue;
        }
        *pp = e->next;
        fatia_free(e);
    }
    if (n == 0)
        return;
    if (fatia_gpuwatch_sample(g->w, &procs, &n_procs) < 0) {
        if (g->sample_errors++ == 0)
            fatia_warn("agent: GPU memory watchdog: NVML's per-process query failed; pods are "
                       "not watched while it fails");
        return;
    }
    g->samples++;
    for (unsigned i = 0; i < n_uuids; i++)
        uuids[i] = fatia_gpuwatch_uuid(g->w, i);
    {
        bool ok[FATIA_GPUWATCH_MAX_GPUS];
        for (unsigned i = 0; i < n_uuids; i++)
            ok[i] = fatia_gpuwatch_util_ok(g->w, i);
        fatia_gpuwatch_util(g->tab, n, procs, n_procs, uuids, ok, n_uuids);
        for (size_t i = 0; i < n; i++)
            publish_util(g, g->tab_of[i], g->tab[i].util);
    }
    if (fatia_gpuwatch_judge(g->tab, n, procs, n_procs, uuids, n_uuids, g->reserve) == 0)
        return;
    for (size_t i = 0; i < n; i++) {
        struct watched *e = g->tab_of[i];
        struct apod *p;

        if (g->tab[i].over < 0)
            continue;
        e->pod = g->tab[i];
        p = fatia_agent_pod(g->a, e->uid);
        if (p && p->st == AP_ACTIVE && !p->stop_sent)
            stop_pod(g, p, e);
    }
}

int fatia_agent_gpuwatch_start(struct fatia_agent *a, struct fatia_agent_gpuwatch **ret)
{
    struct fatia_agent_gpuwatch *g;
    const char *mode = a->o.gpu_watch;
    unsigned ms = FATIA_GPUWATCH_DEFAULT_MS;
    char why[512] = "";
    struct timeval tv;
    int r;

    *ret = NULL;
    if (mode && !strcmp(mode, "off")) {
        fatia_warn("agent: the GPU memory watchdog is off (--agent gpu-watch=off): a program "
                   "the interposer cannot see (static, RTLD_DEEPBIND, direct ioctls) is not "
                   "held to its slice's cap");
        return 0;
    }
    if (a->o.gpu_watch_ms)
        ms = a->o.gpu_watch_ms;
    g = fatia_calloc(1, sizeof(*g));
    if (!g)
        return -ENOMEM;
    g->a = a;
    g->period_ms = ms;
    g->util_ms = a->o.gpu_util_ms ? a->o.gpu_util_ms : 10000;
    g->reserve = a->o.gpu_watch_reserve ? a->o.gpu_watch_reserve : FATIA_VGPU_CONTEXT_RESERVE_H200;
    r = fatia_gpuwatch_open(a->o.gpu_watch_nvml, &g->w, why, sizeof(why));
    if (r < 0) {
        fatia_free(g);
        /* a node with no driver has no capped slice to watch; say so where it matters */
        fatia_info("agent: no GPU memory watchdog (%s)", why);
        return 0;
    }
    g->ev = event_new(a->base, -1, EV_PERSIST, on_period, g);
    if (!g->ev) {
        fatia_gpuwatch_close(g->w);
        fatia_free(g);
        return -ENOMEM;
    }
    tv.tv_sec = ms / 1000;
    tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
    event_add(g->ev, &tv);
    if (!a->cg.enabled && !a->oci)
        fatia_warn("agent: pods get no cgroup here (%s), so the GPU memory watchdog cannot tell "
                   "their processes apart and watches none",
                   a->cg.why[0] ? a->cg.why : "cgroups off");
    fatia_info("agent: GPU memory watchdog on %u GPU%s every %u ms (NVML per-process memory; "
               "reserve %" PRIu64 " bytes per process); GPU utilization published every %u ms",
               fatia_gpuwatch_n_gpus(g->w), fatia_gpuwatch_n_gpus(g->w) == 1 ? "" : "s", ms,
               g->reserve, g->util_ms);
    *ret = g;
    return 0;
}

void fatia_agent_gpuwatch_free(struct fatia_agent_gpuwatch *g)
{
    if (!g)
        return;
    if (g->ev)
        event_free(g->ev);
    while (g->list) {
        struct watched *e = g->list;
        g->list = e->next;
        fatia_free(e);
    }
    fatia_free(g->tab);
    fatia_free(g->tab_of);
    fatia_gpuwatch_close(g->w);
    fatia_free(g);
}

static size_t count_list(const struct fatia_agent_gpuwatch *g)
{
    size_t n = 0;

    for (const struct watched *e = g->list; e; e = e->next)
        n += e->capped;
    return n;
}

int fatia_agent_gpuwatch_metrics(const struct fatia_agent_gpuwatch *g, struct fatia_buf *out)
{
    return fatia_buf_printf(out,
                            "# HELP fatia_agent_gpuwatch_kills Pods the GPU memory watchdog "
                            "stopped (GPUMemoryLimitExceeded)\n"
                            "# TYPE fatia_agent_gpuwatch_kills counter\n"
                            "fatia_agent_gpuwatch_kills %" PRIu64 "\n"
                            "# HELP fatia_agent_gpuwatch_samples NVML samples taken\n"
                            "# TYPE fatia_agent_gpuwatch_samples counter\n"
                            "fatia_agent_gpuwatch_samples %" PRIu64 "\n"
                            "# HELP fatia_agent_gpuwatch_watched_pods Pods with a capped slice "
                            "the watchdog watches\n"
                            "# TYPE fatia_agent_gpuwatch_watched_pods gauge\n"
                            "fatia_agent_gpuwatch_watched_pods %zu\n"
                            "# HELP fatia_agent_gpu_utilization_published Pod GPU utilization "
                            "conditions written (fatia.dev/GPUUtilization)\n"
                            "# TYPE fatia_agent_gpu_utilization_published counter\n"
                            "fatia_agent_gpu_utilization_published %" PRIu64 "\n",
                            g ? g->kills : 0, g ? g->samples : 0, g ? count_list(g) : 0,
                            g ? g->util_published : 0);
}
