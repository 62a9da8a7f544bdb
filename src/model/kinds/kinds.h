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
extern const struct fatia_kind fatia_kind_notebook;
extern const struct fatia_kind fatia_kind_usagerecord;
extern const struct fatia_kind fatia_kind_schedulerconfig;
extern const struct fatia_kind fatia_kind_nodepool;
extern const struct fatia_kind fatia_kind_gpusharingpolicy;
extern const struct fatia_kind fatia_kind_inferencepool;
extern const struct fatia_kind fatia_kind_inferenceservice;    /* kserve.c */
extern const struct fatia_kind fatia_kind_llminferenceservice; /* kserve_llm.c */
extern const struct fatia_kind fatia_kind_servingruntime;
extern const struct fatia_kind fatia_kind_clusterservingruntime;
extern const struct fatia_kind fatia_kind_deviceclass;
extern const struct fatia_kind fatia_kind_resourceslice;
extern const struct fatia_kind fatia_kind_resourceclaim;
extern const struct fatia_kind fatia_kind_resourceclaimtemplate;
extern const struct fatia_kind fatia_kind_crd;
extern const struct fatia_kind fatia_kind_admissioncheck;
extern const struct fatia_kind fatia_kind_provisioningrequestconfig;
extern const struct fatia_kind fatia_kind_topology;

/* resource.k8s.io v1beta2 and v1beta1 beside v1 (dra_versions.c). */
extern const struct fatia_kind_version fatia_kind_dra_class_versions[];
extern const struct fatia_kind_version fatia_kind_dra_claim_versions[];
extern const struct fatia_kind_version fatia_kind_dra_template_versions[];
extern const struct fatia_kind_version fatia_kind_dra_slice_versions[];
extern const struct fatia_kind fatia_kind_lease;

/* The core kinds of issue #18 (config.c, service.c, storage.c, apps.c, rbac.c, policy.c) and the
 * computed cells of their printers (printers_core.c). */
extern const struct fatia_schema fatia_s_job_spec;
/* obj[member] is an integer >= 0 or a percentage "0%".."100%" (IntOrString), else an error. */
void fatia_check_int_or_percent(struct fatia_vctx *ctx, json_t *obj, const char *member);
extern const struct fatia_schema fatia_s_pvc_spec;
extern const struct fatia_schema fatia_s_local_object_refs;
json_t *fatia_print_data_count(const json_t *obj, int64_t now);
json_t *fatia_print_sa_secrets(const json_t *obj, int64_t now);
json_t *fatia_print_service_ports(const json_t *svc, int64_t now);
json_t *fatia_print_service_external_ip(const json_t *svc, int64_t now);
json_t *fatia_print_endpoints(const json_t *ep, int64_t now);
json_t *fatia_print_slice_ports(const json_t *es, int64_t now);
json_t *fatia_print_slice_endpoints(const json_t *es, int64_t now);
json_t *fatia_print_pvc_access_modes(const json_t *pvc, int64_t now);
json_t *fatia_print_pv_access_modes(const json_t *pv, int64_t now);
json_t *fatia_print_pv_claim(const json_t *pv, int64_t now);
json_t *fatia_print_ready_of_replicas(const json_t *obj, int64_t now);
json_t *fatia_print_template_containers(const json_t *obj, int64_t now);
json_t *fatia_print_template_images(const json_t *obj, int64_t now);
json_t *fatia_print_selector(const json_t *obj, int64_t now);
json_t *fatia_print_cronjob_active(const json_t *cj, int64_t now);
json_t *fatia_print_cronjob_timezone(const json_t *cj, int64_t now);
json_t *fatia_print_binding_role(const json_t *rb, int64_t now);
json_t *fatia_print_binding_users(const json_t *rb, int64_t now);
json_t *fatia_print_binding_groups(const json_t *rb, int64_t now);
json_t *fatia_print_binding_sas(const json_t *rb, int64_t now);
json_t *fatia_print_quota_request(const json_t *rq, int64_t now);
json_t *fatia_print_quota_limit(const json_t *rq, int64_t now);
/* status integer counters, 0 when unset */
json_t *fatia_print_st_replicas(const json_t *obj, int64_t now);
json_t *fatia_print_st_ready_replicas(const json_t *obj, int64_t now);
json_t *fatia_print_st_updated_replicas(const json_t *obj, int64_t now);
json_t *fatia_print_st_available_replicas(const json_t *obj, int64_t now);
json_t *fatia_print_st_desired_scheduled(const json_t *obj, int64_t now);
json_t *fatia_print_st_current_scheduled(const json_t *obj, int64_t now);
json_t *fatia_print_st_number_ready(const json_t *obj, int64_t now);
json_t *fatia_print_st_updated_scheduled(const json_t *obj, int64_t now);
json_t *fatia_print_st_number_available(const json_t *obj, int64_t now);
json_t *fatia_print_st_disruptions_allowed(const json_t *obj, int64_t now);
extern const struct fatia_kind fatia_kind_configmap;
extern const struct fatia_kind fatia_kind_secret;
extern const struct fatia_kind fatia_kind_serviceaccount;
extern const struct fatia_kind fatia_kind_service;
extern const struct fatia_kind fatia_kind_endpoints;
extern const struct fatia_kind fatia_kind_endpointslice;
extern const struct fatia_kind fatia_kind_persistentvolumeclaim;
extern const struct fatia_kind fatia_kind_persistentvolume;
extern const struct fatia_kind fatia_kind_storageclass;
extern const struct fatia_kind fatia_kind_deployment;
extern const struct fatia_kind fatia_kind_replicaset;
extern const struct fatia_kind fatia_kind_statefulset;
extern const struct fatia_kind fatia_kind_daemonset;
extern const struct fatia_kind fatia_kind_cronjob;
extern const struct fatia_kind fatia_kind_role;
extern const struct fatia_kind fatia_kind_clusterrole;
extern const struct fatia_kind fatia_kind_rolebinding;
extern const struct fatia_kind fatia_kind_clusterrolebinding;
extern const struct fatia_kind fatia_kind_poddisruptionbudget;
extern const struct fatia_kind fatia_kind_resourcequota;
extern const struct fatia_kind fatia_kind_limitrange;
extern const struct fatia_kind fatia_kind_priorityclass;

#endif
