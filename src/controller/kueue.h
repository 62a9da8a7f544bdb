/*
 * controller/kueue.h: names, labels and conditions of Kueue's job integrations and of the
 * Kubernetes job controller, shared by the workload, job and admission controllers and the
 * webhooks (internal to src/controller).
 */
#ifndef FATIA_CONTROLLER_KUEUE_H
#define FATIA_CONTROLLER_KUEUE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define KUEUE_LABEL_QUEUE    "kueue.x-k8s.io/queue-name"
#define KUEUE_LABEL_PRIORITY "kueue.x-k8s.io/priority-class"
#define KUEUE_LABEL_MANAGED  "kueue.x-k8s.io/managed"
#define KUEUE_LABEL_JOB_UID  "kueue.x-k8s.io/job-uid"
#define KUEUE_LABEL_PODSET   "kueue.x-k8s.io/podset"
#define KUEUE_GATE_ADMISSION "kueue.x-k8s.io/admission"
/* the pod integration's groups (Kueue's pod.GroupNameLabel, GroupTotalCountAnnotation) */
#define KUEUE_LABEL_POD_GROUP "kueue.x-k8s.io/pod-group-name"
#define KUEUE_ANN_GROUP_COUNT "kueue.x-k8s.io/pod-group-total-count"
#define KUEUE_FINALIZER_POD   "kueue.x-k8s.io/managed"
#define KUEUE_FINALIZER_RES   "kueue.x-k8s.io/resource-in-use"
#define JOB_FINALIZER_TRACK   "batch.kubernetes.io/job-tracking"
#define JOB_LABEL_CTRL_UID    "batch.kubernetes.io/controller-uid"
#define JOB_LABEL_NAME        "batch.kubernetes.io/job-name"
#define AGENT_FINALIZER       "fatia.dev/agent"
#define FATIA_ANN_SLICES      "fatia.dev/slices"
#define FATIA_ANN_DEVICES     "fatia.dev/devices"
#define FATIA_ANN_CREATOR     "fatia.dev/creator" /* set by fatiad only: apiserver/creator.c */

/* Kueue's workload name for an owner: lower(kind)-name (truncated) + "-" + the first 5 hex
 * digits of sha1(kind "\n" group "\n" name "\n" uid) (jobframework/workload_names.go). */
void fatia_ctlr_kueue_workload_name(const char *kind, const char *group, const char *name,
                                    const char *uid, char *buf, size_t n);

/* The pod is Succeeded or Failed. */
bool fatia_ctlr_pod_terminal(const json_t *pod);
/* The pod holds no slice any more and runs nothing: terminal, or deleted and never started. */
bool fatia_ctlr_pod_done(const json_t *pod);
/* The owner of obj by controller reference, if of kind (and group/version av), else NULL. */
const json_t *fatia_ctlr_owner_of_kind(const json_t *obj, const char *av, const char *kind);

#endif
