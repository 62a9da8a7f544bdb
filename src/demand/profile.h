/*
 * demand/profile.h: hardware profiles (infrastructure.opendatahub.io/v1 HardwareProfile): the
 * catalog users pick from, and injection of a profile into the workloads that name it.
 *
 * A Pod, a batch/v1 Job or a Kueue Workload names a profile with the annotation
 * opendatahub.io/hardware-profile-name (and -namespace, which defaults to the workload's own
 * namespace and is written back). Injection, as OpenShift AI's admission webhooks do it
 * (reference/gpuaas-landscape.md §1.6) with fatia's rules (DESIGN §7):
 *   - the target is the first container, or the one the annotation
 *     fatia.dev/hardware-profile-container names (for a Workload: of its first podSet, or
 *     "PODSET/CONTAINER");
 *   - every identifier of the profile the container does not request gets requests = limits =
 *     defaultCount; values the user set are kept, and a request or limit outside
 *     minCount..maxCount is rejected with an error naming the container and the resource;
 *   - Queue scheduling sets the label kueue.x-k8s.io/queue-name and, when the profile has one,
 *     the label kueue.x-k8s.io/priority-class (a Workload gets spec.queueName and
 *     spec.priorityClassRef instead, the fields Kueue reads there); Node scheduling merges the
 *     nodeSelector (the profile wins on a conflict, with a warning) and prepends the tolerations
 *     the workload does not have;
 *   - everything injected is recorded, with its value, in the annotation fatia.dev/injected, so
 *     that switching or removing the profile removes exactly what was injected and still holds
 *     the injected value (what the user changed since stays);
 *   - a Pod is immutable once created, a Job once unsuspended, a Workload once admitted: the
 *     profile may be switched or removed only while the object is mutable;
 *   - a missing profile, or a disabled one (opendatahub.io/disabled: "true"), cannot be used for
 *     new work; an object that keeps the profile it already had is admitted with a warning.
 */
#ifndef FATIA_DEMAND_PROFILE_H
#define FATIA_DEMAND_PROFILE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "model/diag.h"
#include "model/kind.h"
#include "model/quantity.h"

#define FATIA_PROFILE_ANN_NAME       "opendatahub.io/hardware-profile-name"
#define FATIA_PROFILE_ANN_NAMESPACE  "opendatahub.io/hardware-profile-namespace"
#define FATIA_PROFILE_ANN_CONTAINER  "fatia.dev/hardware-profile-container"
#define FATIA_PROFILE_ANN_INJECTED   "fatia.dev/injected"
#define FATIA_PROFILE_LABEL_QUEUE    "kueue.x-k8s.io/queue-name"
#define FATIA_PROFILE_LABEL_PRIORITY "kueue.x-k8s.io/priority-class"

/* ---- the catalog ---- */

struct fatia_profile_identifier {
    char *display_name;
    char *identifier;    /* the resource name: cpu, memory, nvidia.com/gpu, ... */
    char *resource_type; /* CPU | Memory | Accelerator, or NULL */
    struct fatia_quantity min, def, max;
    bool has_max;
};

enum fatia_profile_sched {
    FATIA_PROFILE_SCHED_NONE,
    FATIA_PROFILE_SCHED_QUEUE,
    FATIA_PROFILE_SCHED_NODE,
};

struct fatia_profile {
    char *name, *namespace;
    char *display_name; /* opendatahub.io/display-name, or NULL */
    char *description;  /* opendatahub.io/description, or NULL */
    bool disabled;      /* opendatahub.io/disabled: "true" */
    char **visibility;  /* dashboard-feature-visibility, NULL-terminated; empty = everywhere */
    struct fatia_profile_identifier *ids;
    size_t n_ids;
    enum fatia_profile_sched sched;
    char *local_queue, *priority_class;  /* Queue */
    json_t *node_selector, *tolerations; /* Node (owned references, may be NULL) */
};

/* Reads a validated HardwareProfile object (borrowed). 0, -EINVAL (why: a count that is no
 * quantity, visibility that is no JSON array), -ENOMEM. Free with fatia_profile_free. */
int fatia_profile_parse(const json_t *hwp, struct fatia_profile **ret, char *why, size_t why_n);
void fatia_profile_free(struct fatia_profile *p);

/* Is the profile offered for a dashboard feature ("workbench", "model-serving")? NULL = any. */
bool fatia_profile_visible_in(const struct fatia_profile *p, const char *feature);

/* The profile as a user reads it (what `fatia profiles -o json` prints): {name, namespace,
 * displayName, description, disabled, visibility, resources: [{name, displayName,
 * resourceType, default, min, max}], scheduling: {type, localQueue, priorityClass, nodeSelector,
 * tolerations}}. New reference, NULL on OOM. */
json_t *fatia_profile_to_json(const struct fatia_profile *p);

/* ---- injection ---- */

/* Finds a HardwareProfile by namespace and name: a borrowed, validated object, or NULL. */
typedef const json_t *(*fatia_profile_lookup_fn)(void *ud, const char *ns, const char *name);

/* Admits a Pod, Job or Workload (kind) being created (old NULL) or updated (old = the stored
 * object) under the rules above. obj is the object being written (borrowed, storage version,
 * validated); on success it is the mutated object (changed in place), on failure it is left
 * exactly as it was. Errors and warnings go to diag with the object's id and the field path
 * (metadata.annotations[opendatahub.io/hardware-profile-name],
 * spec.containers[0].resources.requests[nvidia.com/gpu], ...). Returns 0 (also for kinds and
 * objects the rules do not concern), -FATIA_E_INVALID (diag has the errors), -ENOMEM. Pure: no
 * clock, no I/O beyond the lookup. */
int fatia_profile_admit(const struct fatia_kind *kind, const json_t *old, json_t *obj,
                        fatia_profile_lookup_fn lookup, void *ud, struct fatia_diag *diag);

/* The requests a profile gives a workload that sets none itself (its defaultCounts), as a
 * resource list {cpu: "2", memory: "16Gi", ...}: what `fatia sim` charges a trace row that names
 * a profile. New reference, NULL on OOM. */
json_t *fatia_profile_default_requests(const struct fatia_profile *p);

#endif
