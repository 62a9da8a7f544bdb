/*
 * agent/shim_storage.h: emptyDir.sizeLimit on disk, as kubelet's eviction manager holds it: the
 * shim measures each limited emptyDir of its pod (every --agent storage-check, 10 s by default)
 * and evicts the pod whose volume holds more than its limit: phase Failed, reason Evicted,
 * message `Usage of EmptyDir volume "NAME" exceeds the limit "LIMIT".` (kubelet's words), no
 * grace period. A medium: Memory emptyDir needs none of this: its tmpfs has the size.
 *
 * Model: usage is the blocks the volume's files hold (st_blocks x 512, as `du` counts; a sparse
 * file counts what it stores), each inode once (hard links), over the volume's own filesystem
 * (no mount point below it is entered) and never through a symbolic link. The walk runs in the
 * shim, the pod's own supervisor, never on fatiad's loop. It is bounded: a tree deeper than
 * FATIA_SHIM_STORAGE_DEPTH, or with more than FATIA_SHIM_STORAGE_ENTRIES entries, is not
 * measured further and counts as over its limit (a tenant cannot hide bytes below the walk's
 * horizon, nor make the walk endless); the message says which.
 *
 * Rejected: filesystem project quotas (kubelet's LocalStorageCapacityIsolationFSQuotaMonitoring):
 * they need a filesystem mounted with prjquota, which no host here has; refusing writes at the
 * limit would be kinder, but Kubernetes evicts, and a pod's users expect what kubelet does.
 */
#ifndef FATIA_AGENT_SHIM_STORAGE_H
#define FATIA_AGENT_SHIM_STORAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FATIA_SHIM_STORAGE_DEPTH   128
#define FATIA_SHIM_STORAGE_ENTRIES 1000000

struct fatia_shim_storage_use {
    uint64_t bytes;   /* blocks x 512, each inode once */
    uint64_t entries; /* directory entries seen */
    bool too_deep;    /* a directory below FATIA_SHIM_STORAGE_DEPTH was not entered */
    bool too_many;    /* the walk stopped at FATIA_SHIM_STORAGE_ENTRIES */
};

/* Measures the tree at path. 0, or -errno when path itself cannot be opened. */
int fatia_shim_storage_measure(const char *path, struct fatia_shim_storage_use *ret);

/* Whether use breaks limit (bytes): over it, or not measurable whole. When it does, the
 * eviction message for volume `name` whose limit reads `limit_text` (the pod's sizeLimit). */
bool fatia_shim_storage_over(const struct fatia_shim_storage_use *use, uint64_t limit,
                             const char *name, const char *limit_text, char *msg, size_t n);

#endif
