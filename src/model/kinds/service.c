/*
 * model/kinds/service.c: core v1 Service and Endpoints, discovery.k8s.io/v1 EndpointSlice
 * (k8s.io/api/core/v1, k8s.io/api/discovery/v1).
 *
 * Rules taken from upstream (pkg/apis/core/validation ValidateService, pkg/apis/discovery/
 * validation): a Service's name is a DNS-1035 label; ports are 1..65535, named when there is
 * more than one, names unique; protocol is TCP, UDP or SCTP (default TCP); targetPort defaults to
 * port (SetDefaults_Service); type defaults to ClusterIP, sessionAffinity to None; an
 * ExternalName service names a host and has no ports requirement; clusterIP "None" makes a
 * headless service. fatiad records the ClusterIP a client sets and leaves it empty otherwise
 * (docs/apiserver.md says how a Service is reached on one box).
 *
 * EndpointSlice addressType is IPv4, IPv6 or FQDN, at most 1000 endpoints and 100 ports, as
 * upstream caps them.
 */
#include "base/compat.h"

#include "base/json.h"
#include "model/kinds/kinds.h"
#include "model/labels.h"

#define ANY(name)                   \
    {                               \
        name, &fatia_s_any, 0, NULL \
    }

static const char *const protocols[] = {"TCP", "UDP", "SCTP", NULL};
static const struct fatia_schema protocol = {FATIA_T_STRING, .enums = protocols};
static const struct fatia_schema port_number = {FATIA_T_INT, .flags = FATIA_S_MIN | FATIA_S_MAX,
                                                .min = 1, .max = 65535};
static const struct fatia_schema node_port = {FATIA_T_INT, .flags = FATIA_S_MIN | FATIA_S_MAX,
                                              .min = 0, .max = 65535};

/* targetPort defaults to port */
static void check_service_port(struct fatia_vctx *ctx, json_t *p)
{
    json_t *tp = json_object_get(p, "targetPort"), *port = json_object_get(p, "port");

    (void)ctx;
    if ((!tp || (json_is_integer(tp) && json_integer_value(tp) == 0)) && json_is_integer(port))
        json_object_set(p, "targetPort", port);
    if (json_is_integer(tp) && (json_integer_value(tp) < 0 || json_integer_value(tp) > 65535))
        fatia_verr_at(ctx, p, "targetPort", "must be between 1 and 65535, inclusive");
}

static const struct fatia_field service_port_fields[] = {
    {"name", &fatia_s_string, 0, NULL},
    {"protocol", &protocol, 0, "\"TCP\""},
    {"appProtocol", &fatia_s_string, 0, NULL},
    {"port", &port_number, FATIA_F_REQUIRED, NULL},
    {"targetPort", &fatia_s_int_or_string, 0, NULL},
    {"nodePort", &node_port, 0, NULL},
    {0}};
static const struct fatia_schema service_ports = {
    FATIA_T_ARRAY, .items = &(const struct fatia_schema){
                       FATIA_T_OBJECT, .fields = service_port_fields, .check = check_service_port}};

static const char *const service_types[] = {"ClusterIP", "NodePort", "LoadBalancer", "ExternalName",
                                            NULL};
static const char *const affinities[] = {"None", "ClientIP", NULL};
static const char *const traffic_policies[] = {"Cluster", "Local", NULL};
static const char *const ip_families[] = {"IPv4", "IPv6", NULL};
static const char *const family_policies[] = {"SingleStack", "PreferDualStack", "RequireDualStack",
                                              NULL};

static void check_service_spec(struct fatia_vctx *ctx, json_t *spec)
{
    const char *type = fatia_json_str(spec, "type");
    json_t *ports = json_object_get(spec, "ports"), *p;
    size_t i, j;
    char path[64];

    if (type && !strcmp(type, "ExternalName")) {
        if (!fatia_json_str(spec, "externalName"))
            fatia_verr_at(ctx, spec, "externalName",
                          "required field is missing (type ExternalName)");
        return;
    }
    json_array_foreach(ports, i, p)
    {
        const char *name = fatia_json_str(p, "name");
        snprintf(path, sizeof(path), "ports[%zu].name", i);
        if (json_array_size(ports) > 1 && (!name || !*name)) {
            fatia_verr_at(ctx, spec, path, "required field is missing (more than one port)");
            continue;
        }
        for (j = 0; name && *name && j < i; j++) {
            const char *o = fatia_json_str(json_array_get(ports, j), "name");
            if (o && !strcmp(o, name))
                fatia_verr_at(ctx, spec, path, "duplicate value \"%s\"", name);
        }
        if (type && !strcmp(type, "ClusterIP") && json_object_get(p, "nodePort") &&
            json_integer_value(json_object_get(p, "nodePort")))
            fatia_verr_at(ctx, spec, path, "nodePort may not be used with type ClusterIP");
    }
}

static const struct fatia_field service_spec_fields[] = {
    {"type", &(const struct fatia_schema){FATIA_T_STRING, .enums = service_types}, 0,
     "\"ClusterIP\""},
    {"ports", &service_ports, 0, NULL},
    {"selector", &fatia_s_string_map, 0, NULL},
    {"clusterIP", &fatia_s_string, 0, NULL},
    {"clusterIPs", &fatia_s_string_list, 0, NULL},
    {"externalIPs", &fatia_s_string_list, 0, NULL},
    {"externalName", &fatia_s_string, 0, NULL},
    {"sessionAffinity", &(const struct fatia_schema){FATIA_T_STRING, .enums = affinities}, 0,
     "\"None\""},
    {"externalTrafficPolicy",
     &(const struct fatia_schema){FATIA_T_STRING, .enums = traffic_policies}, 0, NULL},
    {"internalTrafficPolicy",
     &(const struct fatia_schema){FATIA_T_STRING, .enums = traffic_policies}, 0, "\"Cluster\""},
    {"ipFamilies",
     &(const struct fatia_schema){
         FATIA_T_ARRAY,
         .items = &(const struct fatia_schema){FATIA_T_STRING, .enums = ip_families}},
     0, NULL},
    {"ipFamilyPolicy", &(const struct fatia_schema){FATIA_T_STRING, .enums = family_policies}, 0,
     NULL},
    {"publishNotReadyAddresses", &fatia_s_bool, 0, NULL},
    {"loadBalancerIP", &fatia_s_string, 0, NULL},
    {"loadBalancerClass", &fatia_s_string, 0, NULL},
    {"loadBalancerSourceRanges", &fatia_s_string_list, 0, NULL},
    {"allocateLoadBalancerNodePorts", &fatia_s_bool, 0, NULL},
    {"healthCheckNodePort", &fatia_s_int, 0, NULL},
    {"trafficDistribution", &fatia_s_string, 0, NULL},
    ANY("sessionAffinityConfig"),
    {0}};
static const struct fatia_field service_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = service_spec_fields,
                                  .check = check_service_spec},
     0, "{}"},
    {"status", &fatia_s_status_any, 0, NULL},
    {0}};

/* A Service's name must be a DNS-1035 label (it becomes a DNS name and an env var prefix). */
static void check_service(struct fatia_vctx *ctx, json_t *svc)
{
    const char *name = fatia_json_str(json_object_get(svc, "metadata"), "name");
    char why[200];

    if (name && !fatia_is_dns1035_label(name, why, sizeof(why)))
        fatia_verr_at(ctx, svc, "metadata.name", "invalid value \"%s\": %s", name, why);
}

static const struct fatia_column service_columns[] = {
    {"Type", "string", ".spec.type", 0, "The type of the service"},
    {"Cluster-IP", "string", ".spec.clusterIP", 0, "The cluster IP of the service"},
    {"External-IP", "string", NULL, 0, "External addresses", fatia_print_service_external_ip},
    {"Port(s)", "string", NULL, 0, "Ports of the service", fatia_print_service_ports},
    {"Age", "date", ".metadata.creationTimestamp", 0, "Time since creation"},
    {"Selector", "string", NULL, 1, "Pods the service targets", fatia_print_selector},
    {NULL}};
const struct fatia_kind fatia_kind_service = {
    .group = "",
    .version = "v1",
    .kind = "Service",
    .plural = "services",
    .singular = "service",
    .short_names = (const char *const[]){"svc", NULL},
    .categories = (const char *const[]){"all", NULL},
    .namespaced = true,
    .has_status = true,
    .name_rule = FATIA_NAME_LABEL,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = service_fields,
                                           .check = check_service},
    .columns = service_columns};

/* ---- Endpoints ---- */

static const struct fatia_field target_ref_fields[] = {
    {"apiVersion", &fatia_s_string, 0, NULL}, {"kind", &fatia_s_string, 0, NULL},
    {"name", &fatia_s_string, 0, NULL},       {"namespace", &fatia_s_string, 0, NULL},
    {"uid", &fatia_s_string, 0, NULL},        {"resourceVersion", &fatia_s_string, 0, NULL},
    {"fieldPath", &fatia_s_string, 0, NULL},  {0}};
static const struct fatia_schema target_ref = {FATIA_T_OBJECT, .fields = target_ref_fields};
static const struct fatia_field address_fields[] = {
    {"ip", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {"hostname", &fatia_s_string, 0, NULL},
    {"nodeName", &fatia_s_string, 0, NULL},
    {"targetRef", &target_ref, 0, NULL},
    {0}};
static const struct fatia_schema addresses = {
    FATIA_T_ARRAY, .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = address_fields}};
static const struct fatia_field ep_port_fields[] = {{"name", &fatia_s_string, 0, NULL},
                                                    {"port", &port_number, FATIA_F_REQUIRED, NULL},
                                                    {"protocol", &protocol, 0, "\"TCP\""},
                                                    {"appProtocol", &fatia_s_string, 0, NULL},
                                                    {0}};
static const struct fatia_schema ep_ports = {
    FATIA_T_ARRAY, .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = ep_port_fields}};
static const struct fatia_field subset_fields[] = {{"addresses", &addresses, 0, NULL},
                                                   {"notReadyAddresses", &addresses, 0, NULL},
                                                   {"ports", &ep_ports, 0, NULL},
                                                   {0}};
static const struct fatia_field endpoints_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"subsets",
     &(const struct fatia_schema){
         FATIA_T_ARRAY,
         .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = subset_fields}},
     0, NULL},
    {0}};
static const struct fatia_column endpoints_columns[] = {
    {"Endpoints", "string", NULL, 0, "Ready addresses and ports", fatia_print_endpoints}, {NULL}};
const struct fatia_kind fatia_kind_endpoints = {
    .group = "",
    .version = "v1",
    .kind = "Endpoints",
    .plural = "endpoints",
    .singular = "endpoints",
    .short_names = (const char *const[]){"ep", NULL},
    .namespaced = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = endpoints_fields},
    .columns = endpoints_columns};

/* ---- EndpointSlice ---- */

static const char *const address_types[] = {"IPv4", "IPv6", "FQDN", NULL};
static const struct fatia_field conditions_fields[] = {{"ready", &fatia_s_bool, 0, NULL},
                                                       {"serving", &fatia_s_bool, 0, NULL},
                                                       {"terminating", &fatia_s_bool, 0, NULL},
                                                       {0}};
static const struct fatia_field endpoint_fields[] = {
    {"addresses",
     &(const struct fatia_schema){FATIA_T_ARRAY, .flags = FATIA_S_MIN | FATIA_S_MAX, .min = 1,
                                  .max = 100, .items = &fatia_s_nonempty_string},
     FATIA_F_REQUIRED, NULL},
    {"conditions", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = conditions_fields}, 0,
     NULL},
    {"hostname", &fatia_s_string, 0, NULL},
    {"targetRef", &target_ref, 0, NULL},
    {"nodeName", &fatia_s_string, 0, NULL},
    {"zone", &fatia_s_string, 0, NULL},
    {"deprecatedTopology", &fatia_s_string_map, 0, NULL},
    ANY("hints"),
    {0}};
static const struct fatia_field slice_port_fields[] = {
    {"name", &fatia_s_string, 0, NULL},
    {"port",
     &(const struct fatia_schema){FATIA_T_INT, .flags = FATIA_S_MIN | FATIA_S_MAX, .min = 0,
                                  .max = 65535},
     0, NULL},
    {"protocol", &protocol, 0, "\"TCP\""},
    {"appProtocol", &fatia_s_string, 0, NULL},
    {0}};
static const struct fatia_field slice_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"addressType", &(const struct fatia_schema){FATIA_T_STRING, .enums = address_types},
     FATIA_F_REQUIRED, NULL},
    {"endpoints",
     &(const struct fatia_schema){
         FATIA_T_ARRAY, .flags = FATIA_S_MAX, .max = 1000,
         .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = endpoint_fields}},
     0, NULL},
    {"ports",
     &(const struct fatia_schema){
         FATIA_T_ARRAY, .flags = FATIA_S_MAX, .max = 100,
         .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = slice_port_fields}},
     0, NULL},
    {0}};
static const struct fatia_column slice_columns[] = {
    {"AddressType", "string", ".addressType", 0, "Type of the addresses"},
    {"Ports", "string", NULL, 0, "Port numbers", fatia_print_slice_ports},
    {"Endpoints", "string", NULL, 0, "Addresses", fatia_print_slice_endpoints},
    {NULL}};
const struct fatia_kind fatia_kind_endpointslice = {
    .group = "discovery.k8s.io",
    .version = "v1",
    .kind = "EndpointSlice",
    .plural = "endpointslices",
    .singular = "endpointslice",
    .namespaced = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = slice_fields},
    .columns = slice_columns};
