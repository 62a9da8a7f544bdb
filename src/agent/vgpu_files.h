/*
 * agent/vgpu_files.h: what a container with a capped slice mounts, so that its cap holds
 * whatever the tenant does to its environment (docs/agent.md, "Capped slices in a container").
 *
 * For each such container the agent writes, in DATA/agent/pods/<pod uid>/vgpu/ (root's, 0700):
 *   <container>.conf        the interposer's configuration (vgpu/conffile.h), 0444
 *   ld.so.preload           one line: FATIA_VGPU_CONTAINER_LIB, 0444
 *   <container>.edits.json  the container's edits in CDI's containerEdits format: the mounts
 *                           below and the env, for the runtime to apply to the OCI bundle
 * and the runtime bind-mounts, read-only unless said:
 *   <container>.conf        -> /etc/fatia/vgpu.conf (FATIA_VGPU_CONF_PATH)
 *   ld.so.preload           -> /etc/ld.so.preload
 *   the agent's library     -> /usr/lib/fatia/libfatia-vgpu.so
 *   the accounting file     -> /run/fatia/vgpu/slice.acct (read-write: the slice's processes
 *                              reserve in it; one file per pod, so a tenant writes only its own)
 */
#ifndef FATIA_AGENT_VGPU_FILES_H
#define FATIA_AGENT_VGPU_FILES_H

#include <stddef.h>

#include "agent/vgpu_slice.h"

#define FATIA_VGPU_CONTAINER_LIB  "/usr/lib/fatia/libfatia-vgpu.so"
#define FATIA_VGPU_CONTAINER_ACCT "/run/fatia/vgpu/slice.acct"

/* Writes the three files for container `name` into dir (created 0700 if missing). s->library
 * and s->accounting_file are host paths. 0, or -errno / -EINVAL with why. */
int fatia_agent_vgpu_files_write(const struct fatia_vgpu_slice *s, const char *dir,
                                 const char *name, char *why, size_t why_n);

#endif
