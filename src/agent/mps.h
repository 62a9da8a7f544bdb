/*
 * agent/mps.h: one MPS control daemon per GPU, started, watched and stopped by the node agent.
 *
 * Each daemon gets private pipe and log directories (<base_dir>/<name>/pipe and .../log), so that
 * daemons of several GPUs, and the clients of each, never meet; CUDA_VISIBLE_DEVICES pins it to
 * its GPU. After start the daemon's defaults are set: the active thread percentage (an SM share
 * per client) and the pinned device memory limit per client. A client process joins the daemon
 * through the variables fatia_mps_client_env() gives (docs/vgpu.md).
 *
 * With private_shm (root only: it mounts) the daemon, and every nvidia-cuda-mps-server it starts,
 * runs in a mount namespace of its own whose /dev/shm is a tmpfs at <base_dir>/<name>/shm, so that
 * the daemon's clients share that tmpfs, never the host's /dev/shm: a client in a container gets
 * it bound as its /dev/shm and the pipe directory read-only at FATIA_MPS_CONTAINER_PIPE
 * (mps_files.h), a client in the process mode gets it bound over /dev/shm in its own mount
 * namespace (runtime_process.c). The tmpfs goes with the daemon, so the next namespace to get the
 * GPU's MPS shares never sees what the last one left there.
 *
 * MPS serves one uid per GPU at a time (DESIGN §7, trust model): the placement must respect it.
 */
#ifndef FATIA_AGENT_MPS_H
#define FATIA_AGENT_MPS_H

#include <stdbool.h>
#include <stdint.h>

#include "agent/envput.h"
#include "base/clock.h"

#define FATIA_MPS_PATH_MAX 256

struct fatia_mps_config {
    /* The control program; NULL: "nvidia-cuda-mps-control" found on PATH. */
    const char *control_bin;
    /* Where the daemons' directories go, e.g. "/run/fatia/mps". */
    const char *base_dir;
    /* This daemon's directory name under base_dir, e.g. "gpu-0" (letters, digits, '-', '_',
     * '.'). */
    const char *name;
    /* CUDA_VISIBLE_DEVICES for the daemon: a GPU index or UUID. */
    const char *gpu;
    /* Default active thread percentage, 1..100; 0 leaves the driver's default (100). */
    int active_thread_pct;
    /* Default pinned device memory limit per client, bytes; 0: none. */
    uint64_t pinned_mem_limit;
    /* Limit for each control command and for start and stop; 0: 10 s. */
    fatia_usec_t timeout;
    /* A /dev/shm of the daemon's own (see above); needs root. */
    bool private_shm;
};

struct fatia_mps_daemon;

/* Starts the daemon (or adopts one already running in its directory, as after an agent restart)
 * and applies the defaults. On failure nothing is left running. 0, -EINVAL (a bad name, path or
 * value), -ETIMEDOUT, -FATIA_E_DRIVER (the control program failed) or -errno. */
int fatia_mps_start(const struct fatia_mps_config *cfg, struct fatia_mps_daemon **ret);

/* Whether the daemon process is alive (a zombie is not). */
bool fatia_mps_alive(struct fatia_mps_daemon *d);

/* Restarts a dead daemon with the same configuration; *ret_restarted says whether it had to.
 * 0 or the error of fatia_mps_start. */
int fatia_mps_ensure(struct fatia_mps_daemon *d, bool *ret_restarted);

/* Sends one command ("get_server_list", "set_default_active_thread_percentage 50", ...) and
 * copies the daemon's answer (stdout) into reply. 0, -FATIA_E_DRIVER when the control program
 * fails (no daemon), -ETIMEDOUT, or -errno. */
int fatia_mps_command(struct fatia_mps_daemon *d, const char *cmd, char *reply, size_t n);

/* Stops the daemon ("quit", then SIGTERM and SIGKILL if it lingers past the timeout) and removes
 * its directories. Idempotent. 0 or -errno. */
int fatia_mps_stop(struct fatia_mps_daemon *d);

/* Stops the daemon if running and frees d. Accepts NULL. */
void fatia_mps_free(struct fatia_mps_daemon *d);

/* Frees d and leaves the daemon running (it outlives the agent; the next fatia_mps_start with the
 * same directory adopts it). Accepts NULL. */
void fatia_mps_forget(struct fatia_mps_daemon *d);

/* The variables a client process of this daemon needs: CUDA_MPS_PIPE_DIRECTORY, and when given
 * (non-zero) CUDA_MPS_ACTIVE_THREAD_PERCENTAGE and CUDA_MPS_PINNED_DEVICE_MEM_LIMIT (for device 0
 * as the client sees it). A client can only lower the daemon's defaults. */
int fatia_mps_client_env(const struct fatia_mps_daemon *d, int active_thread_pct,
                         uint64_t pinned_mem_limit, fatia_env_put_fn put, void *ctx);

/* The daemon's pid (0 if none known), pipe directory, its private /dev/shm's host path (NULL
 * without private_shm) and the number of restarts so far. */
int fatia_mps_pid(const struct fatia_mps_daemon *d);
const char *fatia_mps_pipe_dir(const struct fatia_mps_daemon *d);
const char *fatia_mps_shm_dir(const struct fatia_mps_daemon *d);
unsigned fatia_mps_restarts(const struct fatia_mps_daemon *d);

#endif
