/*
 * agent/vgpu_ns.h: the process mode's counterpart of a capped container's read-only mounts: the
 * pod's process runs in a private mount namespace whose /etc is the host's with the slice's
 * ld.so.preload and fatia/vgpu.conf laid over it, read-only (an overlay of two lower layers, no
 * upper one: nothing on the host changes, nothing in it can be written).
 *
 * The agent prepares the layer (fatia_agent_vgpu_ns_layer: DATA/agent/pods/<uid>/vgpu/<ctr>.etc/
 * with ld.so.preload naming the library's host path and fatia/vgpu.conf naming the host's
 * accounting file); the shim's child calls fatia_agent_vgpu_ns_enter while still root, before it
 * drops to the pod's uid. A child that cannot enter fails to start (never runs uncapped).
 */
#ifndef FATIA_AGENT_VGPU_NS_H
#define FATIA_AGENT_VGPU_NS_H

#include <stdbool.h>
#include <stddef.h>

#include "agent/vgpu_slice.h"

/* Writes the layer into dir (created 0755; files 0444): dir/ld.so.preload and
 * dir/fatia/vgpu.conf. 0 or -errno. */
int fatia_agent_vgpu_ns_layer(const struct fatia_vgpu_slice *s, const char *dir);

/* In a child, as root: a private mount namespace, then the layer over /etc, read-only. 0 or
 * -errno (async-signal-safe: no allocation, no stdio). */
int fatia_agent_vgpu_ns_enter(const char *layer);

/* In a child, as root: the MPS daemon's private /dev/shm (mps.h) bound over /dev/shm, in a
 * private mount namespace (made here unless in_private_ns says fatia_agent_vgpu_ns_enter made
 * one already), so that the process shares memory with the daemon's servers and with no one
 * else on the host. 0 or -errno (async-signal-safe). */
int fatia_agent_mps_shm_enter(const char *shm, bool in_private_ns);

#endif
