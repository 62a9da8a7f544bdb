/*
 * agent/agent_int.h: the node agent's state, shared by agent.c (the controller) and logs.c (the
 * log provider). Not for use outside src/agent.
 */
#ifndef FATIA_AGENT_AGENT_INT_H
#define FATIA_AGENT_AGENT_INT_H

#include <sys/socket.h>
#include <sys/types.h>

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/agent.h"
#include "agent/cgroup.h"
#include "agent/image.h"
#include "agent/uidmap.h"
#include "base/backoff.h"
#include "base/clock.h"
#include "base/map.h"

/* The agent's view of one pod (agent.c draws the state machine). */
enum apod_state {
    AP_IDLE,    /* nothing started here; waiting until the pod may run */
    AP_ADMIT,   /* the finalizer is being added */
    AP_BLOCKED, /* a slice it needs is still held by a pod running here */
    AP_ACTIVE,  /* its shim runs */
    AP_DONE,    /* every process is gone */
};

struct apod {
    char uid[128];
    char ns[256], name[256];
    json_t *pod;     /* the latest Pod seen (reference), NULL until seen */
    uint64_t pod_rv; /* its resourceVersion */
    enum apod_state st;
    bool in_api; /* the Pod exists in the API */
    bool seen;   /* seen since the watch (re)started */
    bool local;  /* its directory exists under DATA/agent/pods */
    pid_t shim_pid;
    uint64_t shim_start;
    bool shim_child; /* spawned by this fatiad: reap it */
    json_t *shim;    /* the shim's status file as last read, or NULL */
    int64_t seq;
    char start_time[40];
    char wait_reason[64], wait_msg[512]; /* before the shim runs */
    bool config_error;                   /* the pod can not be started as it is */
    bool fin_inflight, status_inflight, status_dirty, fin_removing;
    bool stop_sent;
    int64_t stop_grace;
    bool blocked_event;
    char cgroup[4096];
    json_t *slices;   /* slice ids held while active (array of strings) */
    json_t *mps_gpus; /* GPU UUIDs whose MPS daemon this pod uses */
    json_t *acct;     /* accounting files of capped slices: {path: refused count} */
    bool cleaned;
    /* retries of the agent's writes (finalizer add/remove, status): consecutive failures, and
     * the earliest time of the next try (monotonic); one timer per pod wakes it */
    unsigned fin_failures, status_failures;
    fatia_usec_t fin_retry_at, status_retry_at;
    bool status_waiting; /* a status push waits for status_retry_at */
    struct event *retry_ev;
    struct fatia_agent *agent;
    bool evicted; /* over its ephemeral-storage limit: stopped */
    /* image pulls that failed (ErrImagePull): tried again at pull_retry_at (monotonic) */
    unsigned pull_failures;
    fatia_usec_t pull_failed_at, pull_retry_at;
    bool ref_wait; /* waits for a ConfigMap or Secret (CreateContainerConfigError) */
    /* its images were made ready by the puller (imgpull.h) for the start about to run */
    bool prefetched;
    fatia_usec_t pull_started_at;
    json_t *sa_tokens; /* projected ServiceAccount tokens by audience (satoken.c) */
    bool token_wait;   /* waits for its first ServiceAccount token (satoken.c) */
    /* since when its devices name a slice the node's ResourceSlices do not (0: they do) */
    fatia_usec_t inv_wait_since;
    uint32_t net_k1;   /* its CNI network's index + 1 (0: none): the API proxy (apiproxy.c) */
    struct apod *next; /* in the agent's list */
};

struct follower;
struct fatia_agent_apiproxy;

struct fatia_agent {
    struct event_base *base;
    struct fatia_client *client;
    struct fatia_agent_opts o;
    char dir[1100], pods_dir[1200], status_dir[1200], logs_dir[1200], run_dir[1200];
    char shim[4096], vgpu_lib[4096];
    bool have_vgpu;
    bool switch_user;
    struct fatia_uidmap uids;
    struct fatia_cgroups cg;
    bool devfilter;             /* the device filter is attached to every pod's cgroup */
    struct fatia_strmap by_uid; /* uid -> struct apod */
    struct apod *pods;          /* every struct apod */
    struct fatia_client_watch *watch;
    bool synced;
    bool stopping;
    pthread_t reclaim; /* the start-up reclaim of gone sandboxes' CNI leases (agent.c) */
    bool reclaim_running;
    size_t outstanding;
    void (*stop_done)(void *arg);
    void *stop_arg;
    struct event *tick;
    struct event *inotify_ev;
    int inotify_fd;
    json_t *mps; /* {gpu uuid: refs} of daemons started (the handles live in mpsd) */
    struct mpsd *mpsd;
    uint64_t event_seq;
    struct follower *followers;
    uint64_t rnd;                  /* jitter of the retries */
    struct fatia_ratelimit warn;   /* the agent's warning lines */
    struct fatia_ratelimit writes; /* the agent's API writes: its budget on the event loop */
    uint64_t events_dropped;       /* Events not sent: over the write budget */
    char pod_dir[1200];            /* run/ and logs/ live here (--agent pod-dir) */
    unsigned storage_ticks;        /* ticks since the last ephemeral-storage check */
    struct fatia_agent_gpuwatch *gpuwatch;   /* the GPU memory watchdog, NULL when off */
    struct fatia_agent_gpuhealth *gpuhealth; /* GPU health from NVML events, NULL when off */
    struct fatia_agent_cdi *cdi;             /* the nodes' CDI specs (cdi_agent.c) */
    /* the OCI runtime (runtime.h): used for pods unless they name the fatia-process
     * RuntimeClass; off when --agent runtime=process or no runc */
    bool oci;
    uint16_t api_port; /* fatiad's port (fatia_agent_set_api_port); 0: not known yet */
    /* where the proxies forward (fatia_agent_set_api_server, a node role: the control plane's
     * --server replicas, in order; api_to_cur the one that last answered); api_to_n 0: fatiad's
     * loopback listener at api_port */
    struct sockaddr_storage api_to[FATIA_AGENT_API_SERVERS];
    socklen_t api_to_len[FATIA_AGENT_API_SERVERS];
    unsigned api_to_n, api_to_cur;
    char api_host[256]; /* what a pod on the host's network names the API by; "": 127.0.0.1 */
    struct fatia_agent_apiproxy *apiproxy; /* the API's proxies on pod gateways (apiproxy.c) */
    char runc[512], runc_root[1200];
    char cdi_dir[1300]; /* POD_DIR/cdi: the CDI specs of the node's slices (cdi.h) */
    struct fatia_image_store images;
    struct fatia_image_puller *pulls; /* pulls and unpacks off the loop (imgpull.h), with oci */
    unsigned image_gc_ticks;
    struct fatia_uidmap ranges; /* namespace -> index k of its host id range k * 65536 */
};

/* cdi_agent.c: keeps <pod dir>/cdi/<node>/fatia.dev-gpu.json current (called every tick). */
void fatia_agent_cdi_tick(struct fatia_agent *a);
/* Brings node's CDI spec (POD_DIR/cdi/<node>/fatia.dev-gpu.json) up to date now. 0 or -errno. */
int fatia_agent_cdi_node(struct fatia_agent *a, const char *node);
void fatia_agent_cdi_free(struct fatia_agent *a);

/* The API proxy on pod network k's gateway (apiproxy.c): made once (0), -EAGAIN before the
 * port is known, -EADDRNOTAVAIL before the bridge exists. */
int fatia_agent_apiproxy_ensure(struct fatia_agent *a, uint32_t k);
void fatia_agent_apiproxy_free(struct fatia_agent *a);
/* A token the pod waited for came (satoken.c): its start goes on (agent.c). */
void fatia_agent_sa_token_arrived(struct fatia_agent *a, struct apod *p);
/* Network k's gateway address (the host side of its bridge). */
void fatia_agent_apiproxy_gateway(uint32_t k, char *ret, size_t n);

/* The pod of that uid, or NULL. */
struct apod *fatia_agent_pod(struct fatia_agent *a, const char *uid);
/* The pod's ServiceAccount token for aud (NULL/"": fatiad's) (satoken.c, podrefs.h's token):
 * borrowed; renewed at 80 % of its life; NULL until the first one arrives. */
const char *fatia_agent_sa_token(struct fatia_agent *a, struct apod *p, const char *aud,
                                 int64_t exp_s);

/* DATA/agent/logs/<ns>_<name>_<uid>. */
void fatia_agent_log_dir(const struct fatia_agent *a, const struct apod *p, char *buf, size_t n);

/* logs.c: the provider (fatia_agent_logs; the daemon registers it), and the end of every stream at stop. */
struct fatia_log_req;
struct fatia_log_stream;
int fatia_agent_logs_provider(void *arg, const struct fatia_log_req *req,
                              struct fatia_log_stream *st);
void fatia_agent_logs_stop_all(struct fatia_agent *a);
/* A pod's shim status changed or the pod went away: followers check whether to end. */
void fatia_agent_logs_poke(struct fatia_agent *a);

#endif
