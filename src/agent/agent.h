/*
 * agent/agent.h: the node agent: runs the Pods bound to the nodes it serves as local processes.
 *
 * fatiad starts one agent on its event loop with its in-process API client (daemon/main.c); the
 * agent knows the API only through client/client.h and client/plugin.h, never the API server. The
 * agent watches Pods, and for each one bound to a node it serves, with no scheduling gates: adds
 * the finalizer fatia.dev/agent, wires the devices the placement recorded in the pod's
 * annotations (docs/agent.md: the Pod contract), starts a fatia-shim that runs the containers,
 * and reports the pod's status, container statuses and Events through the API. Deleting a pod
 * stops its processes (SIGTERM, the grace period, SIGKILL to the pod's process group) before the
 * finalizer goes. It also serves `kubectl logs` (fatia_agent_logs, registered by the daemon). The shims outlive fatiad: a restarted agent finds
 * every pod again from its state directory (DATA/agent) and never starts one twice.
 */
#ifndef FATIA_AGENT_AGENT_H
#define FATIA_AGENT_AGENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct event_base;
struct fatia_client;
struct fatia_agent;
struct fatia_log_req;
struct fatia_log_stream;

struct fatia_agent_opts {
    const char *data_dir;  /* fatiad's data directory; the agent keeps DATA/agent */
    const char *nodes;     /* comma-separated node names served; NULL or "*": every node */
    const char *shim;      /* fatia-shim; NULL: beside the running program */
    const char *vgpu_lib;  /* libfatia-vgpu.so; NULL: ../lib/ beside the running program */
    const char *user;      /* "auto" (NULL), "namespace" (a uid per namespace; needs root) or
                            * "current" (pods run as fatiad's user) */
    const char *uid_map;   /* "NAMESPACE UID[:GID]" lines; NULL: none */
    uint32_t uid_base;     /* first uid given out automatically; 0: 200000 */
    const char *cgroup;    /* "auto" (NULL), "off", or the cgroup v2 directory for pods */
    bool no_device_filter; /* do not attach the cgroup device filter */
    int64_t backoff_initial_ms, backoff_max_ms; /* restart back-off; 0: 10 s, 300 s */
    int64_t log_max_bytes;                      /* per container log file; 0: 10 MiB */
    const char *mps_control;                    /* nvidia-cuda-mps-control; NULL: on PATH */
    const char *vgpu_log;                       /* FATIA_VGPU_LOG for capped pods; NULL: silent */
    const char *pod_dir; /* what pods write (run/: working directories, logs/); NULL: DATA/agent */
    /* the GPU memory watchdog (gpuwatch_agent.c): "auto" (NULL: on when NVML loads) or "off";
     * its period (0: 250 ms), NVML library (NULL: libnvidia-ml.so.1), reserve per process */
    const char *gpu_watch;
    unsigned gpu_watch_ms;
    const char *gpu_watch_nvml;
    uint64_t gpu_watch_reserve;
    /* GPU health from NVML events (gpuhealth_agent.c): "auto" (NULL: on when NVML loads) or
     * "off"; NVML library (NULL: gpu_watch_nvml, else libnvidia-ml.so.1); the Node of the GPUs
     * (NULL: found from the ResourceSlices); the quiet time before a GPU returns (0: 5 min); more
     * XIDs to ignore ("all"/"xids": checks off) and XIDs to act on again */
    const char *gpu_health, *gpu_health_nvml, *gpu_health_node;
    int64_t gpu_health_recover_ms;
    const char *gpu_health_ignore, *gpu_health_enable;
    unsigned gpu_util_ms;      /* gpu-util-every: how often a pod's GPU utilisation is published */
    unsigned storage_check_ms; /* storage-check: how often emptyDir sizeLimits are measured (10s) */
    const char *cdi_root;      /* where the CDI spec's host discovery looks (tests); NULL: / */
    bool gpu_compute_manage;   /* gpu-compute-mode=manage: EXCLUSIVE_PROCESS under MPS daemons */
    bool no_vgpu_namespace;    /* vgpu-namespace=off: no read-only /etc layer in the process mode */
    const char *runtime;       /* "process" (NULL), "oci" or "auto" (oci when runc is installed) */
    const char *runc;          /* runc; NULL: on the default PATH */
    const char *host_path_namespaces;     /* namespaces whose pods may mount hostPath (oci) */
    const char *host_network_namespaces;  /* namespaces whose pods may use hostNetwork (oci) */
    int64_t pod_pids_max;                 /* pids.max of a pod in containers; 0: 4096 */
    const char *registry_auth;            /* the node's registry credentials (auth.json) */
    const char *insecure_registries;      /* "host:port,...": pulled without TLS verification */
    uint64_t image_store_max;             /* the image store's size limit; 0: none */
    unsigned image_gc_high, image_gc_low; /* image GC: filesystem use, percent; 0: 85, 80 */
    /* inventory-wait: how long a pod whose devices name a slice its node's ResourceSlices do not
     * (yet) name waits for them before it is refused (UnexpectedAdmissionError); 0: refused at
     * once, as where the client's cache is the API's own table (the all-in-one fatiad). The node
     * role's default is 30 s (its cache of ResourceSlices is a watch of its own, which may come
     * after the pod's: node_role.c). inventory_wait_set: given by --agent */
    int64_t inventory_wait_ms;
    bool inventory_wait_set;
};

/* Sets one option from "key=value" (fatiad's --agent KEY=VALUE): nodes, shim, vgpu-lib, user,
 * uid-map, uid-base, cgroup, device-filter (on|off), restart-backoff (a duration, e.g. 10s),
 * restart-backoff-max, log-max-bytes, mps-control, vgpu-log, pod-dir, gpu-watch (auto, off, or a
 * period from 10ms to 250ms), gpu-watch-nvml, gpu-watch-reserve (bytes), gpu-util-every
 * (100ms to 10s, default 10s), cdi-root,
 * gpu-health (auto or off), gpu-health-nvml, gpu-health-node, gpu-health-recover (a duration),
 * gpu-health-ignore-xids, gpu-health-enable-xids,
 * gpu-compute-mode (manage or leave; NVML from gpu-watch-nvml), vgpu-namespace (auto or off), runtime, runc,
 * host-path-namespaces, host-network-namespaces, pod-pids-max, registry-auth,
 * insecure-registries, inventory-wait (a duration, 0 to 10m). Strings are borrowed. 0 or -EINVAL
 * (why says which). */
int fatia_agent_opts_set(struct fatia_agent_opts *o, const char *kv, char *why, size_t why_n);

/* Makes the agent: its state directory, what this machine allows (cgroups, uid switching; logged
 * once, with the guarantees that do not hold), the adoption of the pods a former fatiad started.
 * 0, or -errno / -FATIA_E_* (logged). */
int fatia_agent_new(struct event_base *base, struct fatia_client *client,
                    const struct fatia_agent_opts *opts, struct fatia_agent **ret);

/* The pod log provider (client/plugin.h's fatia_log_provider_fn; arg is the agent): `kubectl
 * logs` of the pods this agent runs. The daemon registers it with the API server after
 * fatia_agent_new and removes it before fatia_agent_stop. */
int fatia_agent_logs(void *agent, const struct fatia_log_req *req, struct fatia_log_stream *stream);

/* Starts watching Pods. 0 or the client's error. */
/* The exec provider (client/plugin.h's fatia_exec_provider_fn; arg is the agent): `kubectl exec`
 * into a running pod of this agent, in the process mode (agent/exec.c). */
struct fatia_exec_req;
int fatia_agent_exec(void *agent, const struct fatia_exec_req *req, int *ret_pid, char *why,
                     size_t why_n);

/* The port-forward provider (client/plugin.h's fatia_portforward_provider_fn): a connection to
 * a port a process of the pod listens on (agent/portforward.c). */
int fatia_agent_portforward(void *agent, const json_t *pod, int port, int *ret_fd, char *why,
                            size_t why_n);

/* The Pod ns/name as this agent last saw it in the API, if it is one of the pods it runs
 * (borrowed until the loop turns), else NULL: the node role's endpoint serves the streams of
 * these pods only (apiserver/nodeserve.c). arg is the agent. */
const json_t *fatia_agent_pod_object(void *agent, const char *ns, const char *name);

int fatia_agent_start(struct fatia_agent *a);

/* Stops watching and ends log streams; pods keep running under their shims. done(arg) runs from
 * the loop once the agent's API writes in flight have answered. */
void fatia_agent_stop(struct fatia_agent *a, void (*done)(void *arg), void *arg);

/* The agent's own metrics (the GPU memory watchdog's counters) for fatiad's /metrics. 0 or
 * -ENOMEM. */
struct fatia_buf;
int fatia_agent_metrics(const struct fatia_agent *a, struct fatia_buf *out);

/* Frees the agent (after stop, once the loop has ended). NULL is fine. */
void fatia_agent_free(struct fatia_agent *a);

/* fatiad's API port, once it listens: pods get KUBERNETES_SERVICE_HOST/PORT, and the agent's
 * proxy on each pod network's gateway forwards it (apiproxy.c). */
void fatia_agent_set_api_port(struct fatia_agent *a, unsigned port);
unsigned fatia_agent_api_port(const struct fatia_agent *a);

/* A node role's: pods reach the API of the control plane at host:port (--server) instead of
 * fatiad's own listener. The first call names the API to pods: the agent's proxy on each pod
 * network's gateway listens at its port, and pods get it as KUBERNETES_SERVICE_PORT (and, on
 * the host's network, host as KUBERNETES_SERVICE_HOST); each call adds one replica, its address
 * resolved once, here, to those the proxy forwards to, tried in order when one refuses or
 * times out (apiproxy.c). 0, -ENOSPC (more than FATIA_AGENT_API_SERVERS), or -EINVAL (host too
 * long, or no address: getaddrinfo's message logged). */
#define FATIA_AGENT_API_SERVERS 8
int fatia_agent_set_api_server(struct fatia_agent *a, const char *host, unsigned port);

#endif
