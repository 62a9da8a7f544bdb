/*
 * supply/upstream.h: the NVIDIA GPU Operator's own configs, in and out (pure: text and trees in,
 * trees out; the CLI reads and writes the files).
 *
 * Import: a k8s-device-plugin config (a ConfigMap with one config per data key, as the operator's
 * devicePlugin.config.name points at, or one bare config file) and a mig-parted config (a ConfigMap
 * whose data holds the file, or the bare file) become GPUSharingPolicy objects that select nodes
 * the way the operator does, by node label:
 *   - device-plugin key K -> policy device-plugin-<K>, nodeSelector nvidia.com/device-plugin.config
 *     = K, with the config's sharing (MPS wins over time-slicing, as upstream); the default key
 *     (--device-plugin-default, or the only key) also serves nodes without the label; a bare file
 *     serves every node;
 *   - mig-parted config N, entry i -> policy mig-parted-<N>-<i>[-<K>], nodeSelector
 *     nvidia.com/mig.config = N (and the device-plugin key whose flags.migStrategy gives the MIG
 *     strategy), gpuIndices from `devices`, deviceFilter from `device-filter`, the layout from
 *     `mig-enabled` / `mig-devices`.
 *
 * Export: a plan's policies as those files plus the node labels that select them (NodePools with
 * the labels added, or Node objects for an nvml inventory). Only upstream fields carry the policy
 * (no annotations), so importing the export gives the same slices (tested). What upstream cannot
 * say is refused with the field that says it: fractional sharing, a sharing policy that covers
 * only some GPUs of a node (the device plugin ignores `devices`), memoryPerReplica,
 * contextReserve, activeThreadPercentage, pinnedMemoryLimit, and selectors on the host name of
 * nodes that share a NodePool.
 */
#ifndef FATIA_SUPPLY_UPSTREAM_H
#define FATIA_SUPPLY_UPSTREAM_H

#include <jansson.h>

#include "model/diag.h"
#include "supply/plan.h"

/* Builds GPUSharingPolicy objects (an array of JSON trees to decode) from the two configs; either
 * text may be NULL. Names are used in messages. Returns 0, -FATIA_E_INVALID (diag), -ENOMEM. */
int fatia_upstream_import(const char *dp_name, const char *dp_text, size_t dp_n,
                          const char *dp_default_key, const char *mig_name, const char *mig_text,
                          size_t mig_n, json_t **ret_objects, struct fatia_diag *diag);

/* {"devicePlugin": ConfigMap, "migParted": ConfigMap or null, "fleet": [NodePool or Node ...],
 * "nodeLabels": {node: {label: value}}}. -FATIA_E_UNSUPPORTED with the reasons in diag when the
 * plan's policies cannot be said with upstream fields. */
int fatia_upstream_export(const struct fatia_plan *plan, struct fatia_diag *diag, json_t **ret);

#endif
