/*
 * model/kinds/kinds.h: schemas shared between kind tables (internal to src/model).
 *
 * Each file in this directory describes one API group's kinds as static schema tables (see
 * model/schema.h) and exports its struct fatia_kind values, which registry.c lists. The macro
 * FATIA_OBJECT_FIELDS gives the members every object has.
 */
#ifndef FATIA_MODEL_KINDS_KINDS_H
#define FATIA_MODEL_KINDS_KINDS_H

#include "model/kind.h"
#include "model/schema.h"

extern const struct fatia_schema fatia_s_pod_spec;
extern const struct fatia_schema fatia_s_pod_template_spec;
extern const struct fatia_schema fatia_s_container;
extern const struct fatia_schema fatia_s_status_any;

/* apiVersion, kind and metadata: the first three fields of every object schema. */
#define FATIA_OBJECT_FIELDS                                      \
    {"apiVersion", &fatia_s_string, FATIA_F_REQUIRED, NULL},     \
        {"kind", &fatia_s_string, FATIA_F_REQUIRED, NULL},       \
    {                                                            \
        "metadata", &fatia_s_object_meta, FATIA_F_REQUIRED, NULL \
    }

/* Extended resources (not cpu, memory, ephemeral-storage, hugepages-*) must be whole numbers and,
 * when both are set, requests must equal limits; requests never exceed limits. Reports on the
 * resources object v ({requests, limits}). Shared by Pods and the podSets of Workloads. */
void fatia_check_resource_requirements(struct fatia_vctx *ctx, json_t *v);

/* Computed printer columns of kubectl's built-in Node, Pod and Job printers (printers.c). */
json_t *fatia_print_node_status(const json_t *node, int64_t now);
json_t *fatia_print_pod_ready(const json_t *pod, int64_t now);
json_t *fatia_print_pod_status(const json_t *pod, int64_t now);
json_t *fatia_print_pod_restarts(const json_t *pod, int64_t now);
json_t *fatia_print_job_status(const json_t *job, int64_t now);
json_t *fatia_print_job_completions(const json_t *job, int64_t now);
json_t *fatia_print_job_duration(const json_t *job, int64_t now);
/* kubectl's Event printer, the whole row (printers_event.c). */
extern const struct fatia_column fatia_kind_event_columns[];

extern const struct fatia_kind fatia_kind_namespace;
extern const struct fatia_kind fatia_kind_node;
extern const struct fatia_kind fatia_kind_pod;
extern const struct fatia_kind fatia_kind_event;
extern const struct fatia_kind fatia_kind_job;
extern const struct fatia_kind fatia_kind_resourceflavor;
extern const struct fatia_kind fatia_kind_clusterqueue;
extern const struct fatia_kind fatia_kind_cohort;
extern const struct fatia_kind fatia_kind_localqueue;
extern const struct fatia_kind fatia_kind_workloadpriorityclass;
extern const struct fatia_kind fatia_kind_workload;
extern const struct fatia_kind fatia_kind_hardwareprofile;
extern const struct fatia_kind fatia_kind_schedulerconfig;
extern const struct fatia_kind fatia_kind_nodepool;
extern const struct fatia_kind fatia_kind_gpusharingpolicy;
extern const struct fatia_kind fatia_kind_inferencepool;
extern const struct fatia_kind fatia_kind_deviceclass;
extern const struct fatia_kind fatia_kind_resourceslice;
extern const struct fatia_kind fatia_kind_resourceclaim;
extern const struct fatia_kind fatia_kind_resourceclaimtemplate;

#endif
