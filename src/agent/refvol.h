/*
 * agent/refvol.h: configMap, secret and projected volumes: a pod's files from its ConfigMaps and
 * Secrets, written as kubelet's atomic writer lays them out and kept current.
 */
#ifndef FATIA_AGENT_REFVOL_H
#define FATIA_AGENT_REFVOL_H

#include <sys/types.h>

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct fatia_podrefs;

/* Whether the volume is one of configMap, secret, projected. */
bool fatia_pod_vol_is_ref(const json_t *vol);

/* The volume's files as {path: {"data": bytes as a JSON string, "mode": int}}, new reference in
 * *ret (NULL when an optional source is absent entirely and nothing is to be written: an empty
 * object is returned then). Errors as kubelet's MountVolume.SetUp: -ESRCH (a required object or
 * key is missing: the pod waits), -FATIA_E_INVALID (a bad path, mode or source), -ENOMEM; why
 * names the volume (spec.volumes[vi]) and never a value. */
int fatia_pod_vol_files(const json_t *vol, size_t vi, const struct fatia_podrefs *refs,
                        json_t **ret, char *why, size_t why_n);

/* Makes dir hold exactly files (from fatia_pod_vol_files), atomically: a new hidden directory
 * "..<n>" with the files (owned by uid:gid), the "..data" symlink swapped to it by rename, a
 * top-level symlink per first path component into ..data, and the former directory removed.
 * A reader sees the old set or the new one, never a mix. No-op when the set is unchanged
 * (*ret_changed false). 0 or a negative errno with why. */
int fatia_pod_vol_sync(const char *dir, const json_t *files, uid_t uid, gid_t gid,
                       bool *ret_changed, char *why, size_t why_n);

#endif
