/*
 * agent/gpuwatch.c: the GPU memory watchdog's sampling and verdict (see gpuwatch.h).
 *
 * Model: NVML is loaded with dlopen (never linked, as supply/nvml.c does), its GPUs listed once
 * at open; each sample asks every GPU for its compute processes and its MPS clients, growing the
 * buffer when NVML answers INSUFFICIENT_SIZE (the list changes between calls: retried a few
 * times), then reads each pid's cgroup. Processes in no pod's cgroup (the MPS server, the host's
 * own) are ignored by the verdict.
 *
 * Invariants: a process is counted once per GPU (an MPS client that both lists name counts with
 * the larger of the two figures); a process NVML lists but /proc no longer has counts for no pod (it is gone, and
 * its memory with it); a usage NVML cannot give (NVML_VALUE_NOT_AVAILABLE) counts 0 and the
 * process still counts toward its pod's reserve; the verdict reads only its arguments.
 *
 * Utilisation: nvmlDeviceGetProcessUtilization answers, per GPU, samples (pid, timestamp, SM %)
 * newer than the timestamp it is given; each GPU keeps the newest it saw, so every sample is read
 * once. A process's sm is its highest sample since the previous call (a short burst is not
 * averaged away: the figure feeds an eviction, so it errs towards busy); a process with no
 * sample used no SM in the window (0), as NVML answers NOT_FOUND for a GPU nobody used; a GPU
 * whose call fails otherwise (MIG instances, older GPUs: NOT_SUPPORTED) gives sm -1.
 *
 * Rejected: per-pod NVML accounting mode (nvmlDeviceGetAccountingStats needs accounting mode on,
 * a setting this agent must not change on a lent GPU); matching pids by process tree (a tenant's
 * daemonized child leaves the tree, not the cgroup).
 */
#include "base/compat.h"

#include "agent/gpuwatch.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/error.h"

typedef int nvml_ret;
typedef struct nvml_dev *nvml_dev;

/* nvmlProcessInfo_t (_v2 and _v3 share it; nvml.h, API 12/13) */
struct nvml_proc {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
};

#define NVML_OK                  0
#define NVML_INSUFFICIENT_SIZE   7
#define NVML_VALUE_NOT_AVAILABLE (~0ULL)

/* nvmlProcessUtilizationSample_t */
struct nvml_util {
    unsigned int pid;
    unsigned long long timeStamp;
    unsigned int smUtil, memUtil, encUtil, decUtil;
};

#define NVML_NOT_FOUND 6

typedef nvml_ret (*procs_fn)(nvml_dev, unsigned *, struct nvml_proc *);
typedef nvml_ret (*util_fn)(nvml_dev, struct nvml_util *, unsigned *, unsigned long long);

struct fatia_gpuwatch {
    void *lib;
    nvml_ret (*shutdown)(void);
    procs_fn procs, mps_procs;
    util_fn util;
    unsigned long long util_seen[FATIA_GPUWATCH_MAX_GPUS];
    bool util_ok[FATIA_GPUWATCH_MAX_GPUS];
    struct nvml_util *ubuf;
    unsigned ubuf_n;
    unsigned n_gpus;
    nvml_dev dev[FATIA_GPUWATCH_MAX_GPUS];
    char uuid[FATIA_GPUWATCH_MAX_GPUS][FATIA_GPUWATCH_UUID_MAX];
    struct nvml_proc *buf;
    unsigned buf_n;
    struct fatia_gpuwatch_proc *out;
    size_t out_n, out_cap;
};

static void *sym2(void *lib, const char *a, const char *b)
{
    void *p = dlsym(lib, a);

    return p ? p : dlsym(lib, b);
}

int fatia_gpuwatch_open(const char *nvml_path, struct fatia_gpuwatch **ret, char *why, size_t why_n)
{
    const char *path = nvml_path ? nvml_path : "libnvidia-ml.so.1";
    nvml_ret (*init)(void), (*count)(unsigned *), (*handle)(unsigned, nvml_dev *);
    nvml_ret (*uuid)(nvml_dev, char *, unsigned);
    struct fatia_gpuwatch *w = fatia_calloc(1, sizeof(*w));
    unsigned n = 0;
    int r = -FATIA_E_DRIVER;

    if (!w)
        return -ENOMEM;
    w->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!w->lib) {
        const char *e = dlerror();
        snprintf(why, why_n, "cannot load %s: %s", path, e ? e : "unknown error");
        r = -FATIA_E_NODRIVER;
        goto fail;
    }
    *(void **)&init = sym2(w->lib, "nvmlInit_v2", "nvmlInit");
    *(void **)&w->shutdown = dlsym(w->lib, "nvmlShutdown");
    *(void **)&count = sym2(w->lib, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
    *(void **)&handle = sym2(w->lib, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
    *(void **)&uuid = dlsym(w->lib, "nvmlDeviceGetUUID");
    *(void **)&w->procs = sym2(w->lib, "nvmlDeviceGetComputeRunningProcesses_v3",
                               "nvmlDeviceGetComputeRunningProcesses_v2");
    *(void **)&w->mps_procs = sym2(w->lib, "nvmlDeviceGetMPSComputeRunningProcesses_v3",
                                   "nvmlDeviceGetMPSComputeRunningProcesses_v2");
    *(void **)&w->util = dlsym(w->lib, "nvmlDeviceGetProcessUtilization");
    if (!init || !w->shutdown || !count || !handle || !uuid || !w->procs) {
        snprintf(why, why_n,
                 "%s lacks the per-process calls (nvmlDeviceGetComputeRunningProcesses)", path);
        goto fail;
    }
    if (init() != NVML_OK || count(&n) != NVML_OK) {
        snprintf(why, why_n, "%s: nvmlInit or nvmlDeviceGetCount failed", path);
        goto fail;
    }
    if (n > FATIA_GPUWATCH_MAX_GPUS)
        n = FATIA_GPUWATCH_MAX_GPUS;
    for (unsigned i = 0; i < n; i++) {
        if (handle(i, &w->dev[i]) != NVML_OK ||
            uuid(w->dev[i], w->uuid[i], FATIA_GPUWATCH_UUID_MAX) != NVML_OK) {
            snprintf(why, why_n, "%s: GPU %u: no handle or UUID", path, i);
            w->shutdown();
            goto fail;
        }
        w->uuid[i][FATIA_GPUWATCH_UUID_MAX - 1] = '\0';
    }
    w->n_gpus = n;
    w->buf_n = 64;
    w->buf = fatia_calloc(w->buf_n, sizeof(*w->buf));
    if (!w->buf) {
        w->shutdown();
        r = -ENOMEM;
        goto fail;
    }
    *ret = w;
    return 0;
fail:
    if (w->lib)
        dlclose(w->lib);
    fatia_free(w);
    return r;
}

void fatia_gpuwatch_close(struct fatia_gpuwatch *w)
{
    if (!w)
        return;
    w->shutdown();
    dlclose(w->lib);
    fatia_free(w->buf);
    fatia_free(w->ubuf);
    fatia_free(w->out);
    fatia_free(w);
}

unsigned fatia_gpuwatch_n_gpus(const struct fatia_gpuwatch *w)
{
    return w->n_gpus;
}

const char *fatia_gpuwatch_uuid(const struct fatia_gpuwatch *w, unsigned gpu)
{
    return gpu < w->n_gpus ? w->uuid[gpu] : NULL;
}

int fatia_gpuwatch_pid_cgroup(pid_t pid, char *buf, size_t n)
{
    char path[64], text[4096], *p;
    ssize_t len;
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    len = read(fd, text, sizeof(text) - 1);
    close(fd);
    if (len < 0)
        return -errno;
    text[len] = '\0';
    for (p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, "0::", 3) == 0) {
            size_t l = strcspn(p + 3, "\n");
            if (l >= n)
                return -ENAMETOOLONG;
            memcpy(buf, p + 3, l);
            buf[l] = '\0';
            return 0;
        }
    }
    return -ENOENT;
}

int fatia_gpuwatch_cgroup_rel(const char *abs, char *buf, size_t n)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char line[4096];
    int ret = -ENOENT;

    if (!f)
        return -errno;
    while (fgets(line, sizeof(line), f)) {
        char root[1024], mnt[1024];
        const char *sep = strstr(line, " - cgroup2 ");
        size_t ml;

        if (!sep || sscanf(line, "%*s %*s %*s %1023s %1023s", root, mnt) != 2)
            continue;
        ml = strlen(mnt);
        if (strncmp(abs, mnt, ml) != 0 || (abs[ml] != '/' && abs[ml] != '\0'))
            continue;
        if (snprintf(buf, n, "%s%s", strcmp(root, "/") ? root : "", abs[ml] ? abs + ml : "/") >=
            (int)n) {
            ret = -ENAMETOOLONG;
            break;
        }
        ret = 0;
        break;
    }
    fclose(f);
    return ret;
}

/* Appends one GPU's list (plain or MPS) to w->out. */
static int sample_one(struct fatia_gpuwatch *w, unsigned gpu, procs_fn fn, bool mps, size_t first)
{
    unsigned n = 0;
    nvml_ret r = NVML_INSUFFICIENT_SIZE;

    for (int tries = 0; tries < 4 && r == NVML_INSUFFICIENT_SIZE; tries++) {
        n = w->buf_n;
        r = fn(w->dev[gpu], &n, w->buf);
        if (r == NVML_INSUFFICIENT_SIZE) {
            unsigned want = n > w->buf_n ? n + 16 : w->buf_n * 2;
            struct nvml_proc *b = fatia_calloc(want, sizeof(*b));

            if (!b)
                return -ENOMEM;
            fatia_free(w->buf);
            w->buf = b;
            w->buf_n = want;
        }
    }
    if (r != NVML_OK)
        return -FATIA_E_DRIVER;
    for (unsigned i = 0; i < n && i < w->buf_n; i++) {
        struct fatia_gpuwatch_proc *o = NULL;

        if (mps) {
            /* driver 580 lists an MPS client in both lists, with the same memory (seen on the
             * H200: scripts/gpu-hostile): one process, counted once */
            for (size_t k = first; k < w->out_n && !o; k++) {
                if (w->out[k].pid == (pid_t)w->buf[i].pid)
                    o = &w->out[k];
            }
            if (o) {
                uint64_t b = w->buf[i].usedGpuMemory == NVML_VALUE_NOT_AVAILABLE
                                 ? 0
                                 : (uint64_t)w->buf[i].usedGpuMemory;
                if (b > o->bytes)
                    o->bytes = b;
                o->mps = true;
                continue;
            }
        }

        if (w->out_n == w->out_cap) {
            size_t cap = w->out_cap ? 2 * w->out_cap : 64;
            void *o2 = fatia_reallocarray(w->out, cap, sizeof(*w->out));

            if (!o2)
                return -ENOMEM;
            w->out = o2;
            w->out_cap = cap;
        }
        o = &w->out[w->out_n++];
        o->pid = (pid_t)w->buf[i].pid;
        o->gpu = (int)gpu;
        o->bytes = w->buf[i].usedGpuMemory == NVML_VALUE_NOT_AVAILABLE
                       ? 0
                       : (uint64_t)w->buf[i].usedGpuMemory;
        o->mps = mps;
        if (fatia_gpuwatch_pid_cgroup(o->pid, o->cgroup, sizeof(o->cgroup)) < 0)
            o->cgroup[0] = '\0';
    }
    return 0;
}

bool fatia_gpuwatch_util_ok(const struct fatia_gpuwatch *w, unsigned gpu)
{
    return gpu < w->n_gpus && w->util_ok[gpu];
}

/* Fills sm of this GPU's entries out[first..] from its utilisation samples. */
static int sample_util(struct fatia_gpuwatch *w, unsigned gpu, size_t first)
{
    unsigned n = 0;
    nvml_ret r = NVML_INSUFFICIENT_SIZE;
    unsigned long long newest = w->util_seen[gpu];

    w->util_ok[gpu] = false;
    for (size_t k = first; k < w->out_n; k++)
        w->out[k].sm = -1;
    if (!w->util)
        return 0;
    for (int tries = 0; tries < 4 && r == NVML_INSUFFICIENT_SIZE; tries++) {
        n = w->ubuf_n;
        r = w->util(w->dev[gpu], w->ubuf_n ? w->ubuf : NULL, &n, w->util_seen[gpu]);
        if (r == NVML_INSUFFICIENT_SIZE) {
            unsigned want = n > w->ubuf_n ? n + 16 : w->ubuf_n * 2 + 16;
            struct nvml_util *b = fatia_calloc(want, sizeof(*b));

            if (!b)
                return -ENOMEM;
            fatia_free(w->ubuf);
            w->ubuf = b;
            w->ubuf_n = want;
        }
    }
    if (r == NVML_NOT_FOUND)
        n = 0; /* no process used the GPU since util_seen */
    else if (r != NVML_OK)
        return 0;
    w->util_ok[gpu] = true;
    for (size_t k = first; k < w->out_n; k++)
        w->out[k].sm = 0;
    for (unsigned i = 0; i < n && i < w->ubuf_n; i++) {
        const struct nvml_util *u = &w->ubuf[i];
        int sm = u->smUtil > 100 ? 100 : (int)u->smUtil;

        if (u->timeStamp > newest)
            newest = u->timeStamp;
        for (size_t k = first; k < w->out_n; k++) {
            if (w->out[k].pid == (pid_t)u->pid && sm > w->out[k].sm)
                w->out[k].sm = sm;
        }
    }
    w->util_seen[gpu] = newest;
    return 0;
}

int fatia_gpuwatch_sample(struct fatia_gpuwatch *w, const struct fatia_gpuwatch_proc **ret_v,
                          size_t *ret_n)
{
    w->out_n = 0;
    for (unsigned g = 0; g < w->n_gpus; g++) {
        size_t first = w->out_n; /* this GPU's entries start here */
        int r = sample_one(w, g, w->procs, false, first);
        if (r < 0)
            return r;
        /* MPS clients: a driver or GPU without MPS answers NOT_SUPPORTED; nothing to add */
        if (w->mps_procs && sample_one(w, g, w->mps_procs, true, first) == -ENOMEM)
            return -ENOMEM;
        if (sample_util(w, g, first) < 0)
            return -ENOMEM;
    }
    *ret_v = w->out;
    *ret_n = w->out_n;
    return 0;
}

static bool in_cgroup(const char *proc_cg, const char *pod_cg)
{
    size_t l = strlen(pod_cg);

    return l > 1 && strncmp(proc_cg, pod_cg, l) == 0 && (proc_cg[l] == '\0' || proc_cg[l] == '/');
}

size_t fatia_gpuwatch_judge(struct fatia_gpuwatch_pod *pods, size_t n_pods,
                            const struct fatia_gpuwatch_proc *procs, size_t n_procs,
                            const char *const *uuids, unsigned n_uuids, uint64_t reserve)
{
    size_t over = 0;

    for (size_t i = 0; i < n_pods; i++) {
        memset(pods[i].used, 0, sizeof(pods[i].used));
        memset(pods[i].procs, 0, sizeof(pods[i].procs));
        pods[i].over = -1;
    }
    for (size_t k = 0; k < n_procs; k++) {
        const struct fatia_gpuwatch_proc *pr = &procs[k];
        const char *uuid;

        if (!pr->cgroup[0] || pr->gpu < 0 || (unsigned)pr->gpu >= n_uuids)
            continue;
        uuid = uuids[pr->gpu];
        for (size_t i = 0; i < n_pods; i++) {
            struct fatia_gpuwatch_pod *p = &pods[i];

            if (!in_cgroup(pr->cgroup, p->cgroup))
                continue;
            for (unsigned g = 0; g < p->n_gpus; g++) {
                if (strcmp(p->uuid[g], uuid) == 0) {
                    p->used[g] += pr->bytes;
                    p->procs[g]++;
                    break;
                }
            }
            break;
        }
    }
    for (size_t i = 0; i < n_pods; i++) {
        struct fatia_gpuwatch_pod *p = &pods[i];

        for (unsigned g = 0; g < p->n_gpus; g++) {
            uint64_t slack = reserve * p->procs[g], limit;

            if (p->cap[g] == UINT64_MAX)
                continue;
            limit = p->cap[g] > UINT64_MAX - slack ? UINT64_MAX : p->cap[g] + slack;
            if (p->used[g] > limit) {
                p->over = (int)g;
                over++;
                break;
            }
        }
    }
    return over;
}

void fatia_gpuwatch_util(struct fatia_gpuwatch_pod *pods, size_t n_pods,
                         const struct fatia_gpuwatch_proc *procs, size_t n_procs,
                         const char *const *uuids, const bool *util_ok, unsigned n_uuids)
{
    for (size_t i = 0; i < n_pods; i++) {
        struct fatia_gpuwatch_pod *p = &pods[i];
        int sum[FATIA_GPUWATCH_MAX_GPUS] = {0};
        bool unknown = p->n_gpus == 0;

        for (unsigned g = 0; g < p->n_gpus && !unknown; g++) {
            unsigned u;

            for (u = 0; u < n_uuids; u++) {
                if (!strcmp(uuids[u], p->uuid[g]))
                    break;
            }
            if (u == n_uuids || !util_ok[u]) {
                unknown = true;
                break;
            }
            for (size_t k = 0; k < n_procs; k++) {
                const struct fatia_gpuwatch_proc *pr = &procs[k];

                if (pr->gpu != (int)u || !pr->cgroup[0] || !in_cgroup(pr->cgroup, p->cgroup))
                    continue;
                if (pr->sm < 0) {
                    unknown = true;
                    break;
                }
                sum[g] += pr->sm;
            }
        }
        p->util = -1;
        if (unknown)
            continue;
        p->util = 0;
        for (unsigned g = 0; g < p->n_gpus; g++) {
            int v = sum[g] > 100 ? 100 : sum[g];
            if (v > p->util)
                p->util = v;
        }
    }
}
