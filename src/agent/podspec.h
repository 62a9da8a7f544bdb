/*
 * agent/podspec.h: what the node agent makes of a Pod object, as pure functions (no I/O): the
 * devices the placement gave each container (the fatia.dev/devices annotation, docs/agent.md),
 * each container's environment, command line and working directory, the pod's resource limits,
 * and the device variables of a container.
 */
#ifndef FATIA_AGENT_PODSPEC_H
#define FATIA_AGENT_PODSPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FATIA_ANN_SLICES         "fatia.dev/slices"
#define FATIA_ANN_DEVICES        "fatia.dev/devices"
#define FATIA_AGENT_FINALIZER    "fatia.dev/agent"
#define FATIA_AGENT_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* ---- environments ---- */

/* "NAME=value" strings, in order, names unique. */
struct fatia_env {
    char **v;
    size_t n, cap;
};

/* Sets name=value, replacing an earlier value in place. 0 or -ENOMEM. */
int fatia_env_set(struct fatia_env *e, const char *name, const char *value);
/* The value of name, or NULL. */
const char *fatia_env_get(const struct fatia_env *e, const char *name);
void fatia_env_release(struct fatia_env *e);
/* fatia_env_put_fn (agent/envput.h) over a struct fatia_env. */
int fatia_env_put(void *ctx, const char *name, const char *value);

/* Kubernetes' $(VAR) expansion: $(NAME) becomes NAME's value in env when defined and stays as
 * written otherwise; $$ is a literal $. Returns a new string (fatia_free) or NULL on OOM. */
char *fatia_env_expand(const char *s, const struct fatia_env *env);

/* ---- the devices of a pod ---- */

enum fatia_dev_kind {
    FATIA_DEV_WHOLE,
    FATIA_DEV_TIMESLICE,
    FATIA_DEV_MPS,
    FATIA_DEV_MIG,
    FATIA_DEV_FRACTION,
};

struct fatia_pod_device {
    const char *container; /* borrowed from the annotation's JSON */
    const char *slice;
    enum fatia_dev_kind kind;
    int gpu_index;    /* -1 when not given */
    int minor;        /* /dev/nvidia<minor>: "minor", else from the slice id gpu-<minor>...; -1 */
    const char *uuid; /* GPU-... */
    const char *mig_uuid;
    uint64_t memory_bytes; /* the cap (timeslice, fraction); 0: none */
    int mps_threads;       /* MPS active thread percentage; 0: not set */
    uint64_t mps_pinned;   /* MPS pinned device memory limit, bytes; 0: not set */
    const char *claim;
};

struct fatia_pod_devices {
    json_t *root; /* the parsed annotation, owning the strings */
    struct fatia_pod_device *v;
    size_t n;
};

/* Parses the pod's fatia.dev/devices annotation (absent: no devices). An entry without
 * "container" belongs to the first container. -FATIA_E_INVALID with why naming the entry and
 * field, or -ENOMEM. */
int fatia_pod_devices_parse(const json_t *pod, struct fatia_pod_devices *ret, char *why,
                            size_t why_n);
void fatia_pod_devices_release(struct fatia_pod_devices *d);
const char *fatia_dev_kind_name(enum fatia_dev_kind k);

/* The memory cap the interposer and the watchdog hold a device to, bytes, 0 for none: a
 * timeslice's or fraction's memoryBytes; an MPS share's pinnedMemoryBytes (else its
 * memoryBytes), since MPS's own limit is per client process and a pod may run many; whole GPUs
 * and MIG instances are bounded by the hardware. */
uint64_t fatia_pod_device_cap(const struct fatia_pod_device *x);

/* The name of a container's accounting file for its capped devices ("gpu-0-ts1" or, for several,
 * "gpu-0-ts1+gpu-1-ts0"), or "" when the container has no capped device. Containers of one pod
 * with the same capped devices share the file, so they share the caps. */
void fatia_pod_devices_acct_name(const struct fatia_pod_devices *d, const char *container,
                                 char *buf, size_t n);

/* What the agent decided for the devices of one container. */
struct fatia_devenv_opts {
    const char *vgpu_lib;     /* libfatia-vgpu.so, for capped devices */
    const char *acct_file;    /* the accounting file (fatia_pod_devices_acct_name) */
    const char *mps_pipe_dir; /* the MPS daemon's pipe directory of the container's GPU */
    const char *vgpu_log;     /* FATIA_VGPU_LOG, or NULL */
    bool in_container;        /* an OCI container: the caps come from its read-only files */
};

/* Sets a container's device variables in env (after the pod's own, which they override):
 * CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES (GPU or MIG UUIDs, in the annotation's order;
 * "" and "void" for a container with no device, so that it sees no GPU), FATIA_SLICES; for capped
 * devices the interposer's variables (LD_PRELOAD first, the pod's own LD_PRELOAD kept after it);
 * none of these in a container (in_container: ld.so.preload and vgpu.conf are mounted, and the
 * host's paths mean nothing there); for MPS devices CUDA_MPS_PIPE_DIRECTORY, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE and
 * CUDA_MPS_PINNED_DEVICE_MEM_LIMIT ("<ordinal>=<MiB>M" per MPS device). -EINVAL with why (a
 * capped device without vgpu_lib or acct_file, too many devices), -ENOMEM. */
int fatia_pod_devices_env(const struct fatia_pod_devices *d, const char *container,
                          const struct fatia_devenv_opts *o, struct fatia_env *env, char *why,
                          size_t why_n);

/* ---- containers ---- */

struct fatia_podrefs;

/* The container's environment: PATH (a default unless the pod sets it), HOSTNAME, HOME (home),
 * then envFrom (each ConfigMap's or Secret's data keys, with the source's prefix), then spec env
 * in order with $(VAR) expansion and the downward API (valueFrom.fieldRef: metadata.name,
 * .namespace, .uid, .labels['k'], .annotations['k'], spec.nodeName, spec.serviceAccountName,
 * status.hostIP, status.podIP; valueFrom.resourceFieldRef of cpu and memory;
 * valueFrom.configMapKeyRef and secretKeyRef). ConfigMaps and Secrets come from refs (NULL: there
 * are none), only of the pod's namespace (agent/podrefs.h); a missing one, or a missing key, is
 * skipped when `optional` and otherwise -ESRCH with kubelet's message in why (`configmap "x" not
 * found`, `couldn't find key k in Secret ns/x`): the pod waits with CreateContainerConfigError
 * until it appears. Other errors -FATIA_E_INVALID with why, -ENOMEM. Values are never in why. */
int fatia_podspec_env_refs(const json_t *pod, const json_t *container, const char *home,
                           const struct fatia_podrefs *refs, struct fatia_env *env, char *why,
                           size_t why_n);
/* fatia_podspec_env_refs with no ConfigMaps or Secrets. */
int fatia_podspec_env(const json_t *pod, const json_t *container, const char *home,
                      struct fatia_env *env, char *why, size_t why_n);

/* The command line: command + args with $(VAR) expanded from env; args alone when there is no
 * command (there is no image entrypoint). A JSON array of strings, new reference. -EINVAL with
 * why when both are empty, -ENOMEM. */
int fatia_podspec_argv(const json_t *container, const struct fatia_env *env, json_t **ret,
                       char *why, size_t why_n);

/* The pod's limits for its cgroup: sums over the app containers (or the largest init
 * container's, when larger), each -1 / 0 when some container sets none. */
struct fatia_pod_limits {
    int64_t cpu_limit_milli;   /* -1: no limit */
    int64_t cpu_request_milli; /* 0: none */
    int64_t memory_limit;      /* -1: no limit */
};

void fatia_podspec_limits(const json_t *pod, struct fatia_pod_limits *ret);

/* Whether the pod is bound (spec.nodeName), ungated (no spec.schedulingGates) and not being
 * deleted: the agent may start it. */
bool fatia_pod_runnable(const json_t *pod);

/* "Succeeded" or "Failed". */
bool fatia_pod_terminal(const json_t *pod);

/* ---- host ports ---- */

/* The host ports of a pod's containers[] (ports[] entries with a hostPort), as CNI's
 * portMappings for the portmap plugin: {hostPort, containerPort, protocol "tcp"|"udp", hostIP
 * (absent: every address), field "spec.containers[i].ports[j].hostPort"} in *ret (a new array,
 * possibly empty). Refused with why naming the field: a hostPort or containerPort outside
 * 1..65535, a protocol other than TCP or UDP, a hostIP that is not an IPv4 address, and two
 * entries of the pod that ask for the same port and protocol on overlapping addresses (0.0.0.0
 * overlaps every address). 0 or -FATIA_E_INVALID. */
int fatia_pod_host_ports(const json_t *pod, json_t **ret, char *why, size_t why_n);

#endif
