/*
 * agent/mps_files.h: what a container whose slice is an MPS share mounts, so that its CUDA
 * reaches the GPU's MPS control daemon (mps.h) from inside the container.
 *
 * A daemon listens on named pipes in its pipe directory and its servers share memory with their
 * clients through /dev/shm. Neither is in a container's root. For each such container the agent
 * writes DATA/agent/pods/<pod uid>/vgpu/<container>.mps.json (root's, read-only), the edits in
 * CDI's containerEdits format that the runtime applies after the node's CDI devices (oci_pod.c):
 *   the daemon's pipe directory -> FATIA_MPS_CONTAINER_PIPE, read-only (the client connects
 *                                  to the pipes there; nothing of the container's is written)
 *   the daemon's private /dev/shm -> /dev/shm (read-write, in place of the container's own)
 *   CUDA_MPS_PIPE_DIRECTORY=FATIA_MPS_CONTAINER_PIPE
 * FATIA_MPS_CONTAINER_PIPE is the driver's default pipe directory, so a client that unsets the
 * variable still joins the daemon, with its default thread and memory limits (mps.c sets them
 * to the share's). A client that points the variable elsewhere runs outside MPS; the capped
 * slice's interposer and the GPU memory watchdog still hold it (docs/agent.md's trust table).
 *
 * Rejected: the mounts in the node's CDI spec (cdi.h). The directories exist only while the
 * GPU's daemon runs, and a spec that names them would make `podman run --device` fail whenever
 * none does; the daemon is the agent's, so are the mounts.
 */
#ifndef FATIA_AGENT_MPS_FILES_H
#define FATIA_AGENT_MPS_FILES_H

#include <stddef.h>

#define FATIA_MPS_CONTAINER_PIPE "/tmp/nvidia-mps"

/* Writes dir/<name>.mps.json (dir created 0700 if missing) binding pipe_dir and, when not NULL,
 * shm_dir (host paths). 0, or -errno / -EINVAL with why. */
int fatia_agent_mps_files_write(const char *dir, const char *name, const char *pipe_dir,
                                const char *shm_dir, char *why, size_t why_n);

#endif
