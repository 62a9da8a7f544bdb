/*
 * agent/gpuwatch.h: the GPU memory watchdog's parts: per-process device memory from NVML, the
 * pod a process belongs to (its cgroup), and the verdict (which pods hold more than their caps).
 *
 * The interposer (libfatia-vgpu.so) refuses an allocation before it happens, but only in a
 * process that loads it and reaches the driver through it. A statically linked program, one that
 * dlopens its own copy of the driver with RTLD_DEEPBIND, or one that talks to /dev/nvidia* by
 * ioctl is not seen. The driver sees everything: NVML's per-process lists
 * (nvmlDeviceGetComputeRunningProcesses_v3, and the MPS variant for MPS clients) give every
 * process's device memory by host pid, whatever it ran. The agent (gpuwatch_agent.c) samples
 * them every period (<= 250 ms), maps pids to pods by /proc/PID/cgroup, and stops a pod whose
 * processes hold more on a GPU than the sum of its slices' caps there plus one context reserve
 * per process of the pod on that GPU (contexts are outside the cap, DESIGN §7).
 *
 * The same sample carries each process's SM utilisation (nvmlDeviceGetProcessUtilization, the
 * highest sample since the previous call), from which fatia_gpuwatch_util (pure) gives each pod
 * its utilisation: the GPU-idleness policy's input on a real node (gpuutil_agent.c publishes it).
 *
 * The sampling (fatia_gpuwatch_sample) is I/O; the verdict (fatia_gpuwatch_judge) is pure, so the
 * unit tests and the benchmark drive it with made-up samples.
 */
#ifndef FATIA_AGENT_GPUWATCH_H
#define FATIA_AGENT_GPUWATCH_H

#include <sys/types.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FATIA_GPUWATCH_UUID_MAX   96
#define FATIA_GPUWATCH_MAX_GPUS   16
#define FATIA_GPUWATCH_CGROUP_MAX 512
#define FATIA_GPUWATCH_DEFAULT_MS 250

/* One process on one GPU, as NVML reports it. */
struct fatia_gpuwatch_proc {
    pid_t pid;
    int gpu;        /* index into the watch's GPUs (fatia_gpuwatch_uuid) */
    uint64_t bytes; /* usedGpuMemory */
    bool mps;       /* from the MPS clients' list */
    int sm; /* SM utilisation in percent since the previous sample; -1: the GPU cannot tell */
    char cgroup[FATIA_GPUWATCH_CGROUP_MAX]; /* its cgroup v2 path ("0::" line); "" if gone */
};

/* A pod, as the verdict sees it: its cgroup (relative to the cgroup v2 root, as /proc/PID/cgroup
 * writes it) and its cap per GPU. */
struct fatia_gpuwatch_pod {
    const char *cgroup; /* e.g. "/fatia/pod-<uid>"; processes in it or below belong to the pod */
    unsigned n_gpus;
    const char *uuid[FATIA_GPUWATCH_MAX_GPUS];
    uint64_t cap[FATIA_GPUWATCH_MAX_GPUS]; /* bytes; UINT64_MAX: not capped */
    /* out, from fatia_gpuwatch_judge: */
    uint64_t used[FATIA_GPUWATCH_MAX_GPUS];  /* what its processes hold */
    unsigned procs[FATIA_GPUWATCH_MAX_GPUS]; /* how many of its processes use the GPU */
    int over;                                /* the first GPU over its limit, or -1 */
    int util; /* from fatia_gpuwatch_util: percent, the highest over its GPUs; -1: unknown */
};

struct fatia_gpuwatch;

/* Loads NVML (nvml_path, NULL: libnvidia-ml.so.1) and lists its GPUs. 0, or -FATIA_E_NODRIVER /
 * -FATIA_E_DRIVER with why. */
int fatia_gpuwatch_open(const char *nvml_path, struct fatia_gpuwatch **ret, char *why,
                        size_t why_n);
void fatia_gpuwatch_close(struct fatia_gpuwatch *w);

unsigned fatia_gpuwatch_n_gpus(const struct fatia_gpuwatch *w);
const char *fatia_gpuwatch_uuid(const struct fatia_gpuwatch *w, unsigned gpu);

/* Every compute process on every GPU, plain and MPS lists, with its cgroup read from /proc.
 * *ret_v stays owned by w (valid until the next call). 0, -FATIA_E_DRIVER or -ENOMEM. */
int fatia_gpuwatch_sample(struct fatia_gpuwatch *w, const struct fatia_gpuwatch_proc **ret_v,
                          size_t *ret_n);

/* The cgroup v2 path of a process (the "0::" line of /proc/PID/cgroup). 0 or -errno. */
int fatia_gpuwatch_pid_cgroup(pid_t pid, char *buf, size_t n);

/* The path of an absolute cgroup directory relative to the cgroup v2 mount, as /proc/PID/cgroup
 * names it ("/sys/fs/cgroup/unified/fatia/pod-x" -> "/fatia/pod-x"). 0 or -ENOENT. */
int fatia_gpuwatch_cgroup_rel(const char *abs, char *buf, size_t n);

/* The verdict: fills every pod's used, procs and over from the samples (uuids[] names the
 * samples' GPU indices). A pod is over on a GPU when used > cap + reserve x procs. Pure. Returns
 * how many pods are over. */
size_t fatia_gpuwatch_judge(struct fatia_gpuwatch_pod *pods, size_t n_pods,
                            const struct fatia_gpuwatch_proc *procs, size_t n_procs,
                            const char *const *uuids, unsigned n_uuids, uint64_t reserve);

/* Whether the last sample read GPU gpu's per-process utilisation (false: not supported there, or
 * the query failed; its processes have sm -1). */
bool fatia_gpuwatch_util_ok(const struct fatia_gpuwatch *w, unsigned gpu);

/* Each pod's util: on each of its GPUs the sum of its processes' sm there (a GPU with none of
 * them: 0), capped at 100; the pod's is the highest over its GPUs, or -1 when any of its GPUs
 * is not in uuids[] or not util_ok[] or one of its processes there has sm < 0 (unknown is never
 * read as idle). Pure. */
void fatia_gpuwatch_util(struct fatia_gpuwatch_pod *pods, size_t n_pods,
                         const struct fatia_gpuwatch_proc *procs, size_t n_procs,
                         const char *const *uuids, const bool *util_ok, unsigned n_uuids);

#endif
