/*
 * agent/cgroup.h: one cgroup v2 directory per pod, where the machine allows it.
 *
 * fatia_cgroups_init finds the cgroup v2 hierarchy (a pure v2 mount, or the "unified" one of a
 * hybrid setup), picks the parent of the pods' cgroups, enables the memory, cpu and pids
 * controllers there when it can, and says in why what does not hold (no v2 mount, not writable,
 * a controller bound to a v1 hierarchy, ...). A pod's cgroup gets memory.max and cpu.max from its
 * limits and cpu.weight from its requests (kubelet's formulas); every process of the pod joins it
 * before exec; cgroup.kill ends them all, including processes that left the pod's process group;
 * memory.events counts OOM kills. The device filter (devfilter.h) attaches to the same directory.
 */
#ifndef FATIA_AGENT_CGROUP_H
#define FATIA_AGENT_CGROUP_H

#include <stdbool.h>
#include <stddef.h>

#include "agent/podspec.h"

struct fatia_cgroups {
    bool enabled;      /* pod cgroups are made */
    bool memory, cpu;  /* the controllers pods get */
    char parent[4096]; /* the pods' cgroups are parent/pod-<uid> */
    char why[512];     /* what does not hold, for the log and docs/agent.md; "" when all does */
};

/* want: NULL or "auto" (detect), "off", or a directory of the cgroup v2 hierarchy to hold the
 * pods' cgroups (created). Never fails: a cgroup that cannot be had leaves enabled false and
 * says why. */
void fatia_cgroups_init(struct fatia_cgroups *cg, const char *want);

/* Creates (or finds, after a restart) the pod's cgroup and sets its limits. 0 or -errno (why). */
int fatia_cgroup_pod_create(const struct fatia_cgroups *cg, const char *pod_uid,
                            const struct fatia_pod_limits *lim, char *path, size_t path_n,
                            char *why, size_t why_n);

/* Kills every process in the cgroup (cgroup.kill, or SIGKILL to each pid of cgroup.procs on
 * kernels before 5.14). */
void fatia_cgroup_kill(const char *path);

/* Whether processes remain in it (cgroup.events "populated 1"). */
bool fatia_cgroup_populated(const char *path);

/* Removes the directory. 0, -EBUSY (processes remain), -errno. */
int fatia_cgroup_remove(const char *path);

/* The cgroup.weight kubelet gives cpu requests: shares = milli * 1024 / 1000 (at least 2), weight
 * = 1 + (shares - 2) * 9999 / 262142. */
unsigned fatia_cgroup_cpu_weight(int64_t request_milli);

#endif
