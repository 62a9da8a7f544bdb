/*
 * model/kinds/crd.c: apiextensions.k8s.io/v1 CustomResourceDefinition, as a kind of the registry.
 *
 * Model: fatiad lists the kinds it compiles in that are CRDs on a real cluster (Kueue's,
 * HardwareProfile, InferencePool, fatia.dev's: every group that is not one of Kubernetes' own,
 * apiserver/crd.c decides) as CustomResourceDefinition objects, written by fatiad itself at
 * start. Clients read them: kubectl's default validation lists CRDs before it sends an object
 * whose kind it does not find in the OpenAPI documents (issue 17), and `kubectl get crds` shows
 * what a cluster would. A CRD written by a user is served as a kind of its own
 * (apiserver/crd_serve.c, model/crd_kind.c); fatiad's own CRDs may not be changed.
 *
 * The schema follows apiextensions/v1 types.go for the members clients read (spec.group,
 * spec.names, spec.scope, spec.versions[].name/served/storage) and keeps the rest as it is
 * (the openAPIV3Schema of a version, conversion, status): model/crd_kind.c reads a user's CRD
 * into a kind, and apiserver/crd_serve.c refuses what it cannot serve.
 *
 * Rejected: serving the CRD list as a virtual resource computed per request. Watches, paging,
 * resourceVersions, uids that survive a restart and Table output would all need a second read
 * path; stored objects get every one of them from the cache that serves every other kind.
 */
#include "base/compat.h"

#include "model/kinds/kinds.h"

static const char *const scopes[] = {"Namespaced", "Cluster", NULL};

static const struct fatia_field names_fields[] = {
    {"plural", &fatia_s_dns_label, FATIA_F_REQUIRED, NULL},
    {"singular", &fatia_s_dns_label, 0, NULL},
    {"kind", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {"listKind", &fatia_s_string, 0, NULL},
    {"shortNames", &fatia_s_string_list, 0, NULL},
    {"categories", &fatia_s_string_list, 0, NULL},
    {0}};
static const struct fatia_schema names = {FATIA_T_OBJECT, "The names of the kind",
                                          .fields = names_fields};

static const struct fatia_field version_fields[] = {
    {"name", &fatia_s_dns_label, FATIA_F_REQUIRED, NULL},
    {"served", &fatia_s_bool, FATIA_F_REQUIRED, NULL},
    {"storage", &fatia_s_bool, FATIA_F_REQUIRED, NULL},
    {"deprecated", &fatia_s_bool, 0, NULL},
    {"deprecationWarning", &fatia_s_string, 0, NULL},
    {"schema", &fatia_s_any, 0, NULL},
    {"subresources", &fatia_s_any, 0, NULL},
    {"additionalPrinterColumns", &fatia_s_any, 0, NULL},
    {"selectableFields", &fatia_s_any, 0, NULL},
    {0}};
static const struct fatia_schema version = {FATIA_T_OBJECT, .fields = version_fields};
static const struct fatia_schema versions = {FATIA_T_ARRAY,        "The served versions",
                                             .flags = FATIA_S_MIN, .min = 1,
                                             .items = &version,    .list_key = "name"};

static const struct fatia_field spec_fields[] = {
    {"group", &fatia_s_dns_subdomain, FATIA_F_REQUIRED, NULL},
    {"names", &names, FATIA_F_REQUIRED, NULL},
    {"scope", &(const struct fatia_schema){FATIA_T_STRING, .enums = scopes}, FATIA_F_REQUIRED,
     NULL},
    {"versions", &versions, FATIA_F_REQUIRED, NULL},
    {"conversion", &fatia_s_any, 0, NULL},
    {"preserveUnknownFields", &fatia_s_bool, 0, NULL},
    {0}};

static const struct fatia_field crd_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = spec_fields}, FATIA_F_REQUIRED,
     NULL},
    {"status", &fatia_s_status_any, 0, NULL},
    {0}};

const struct fatia_kind fatia_kind_crd = {
    .group = "apiextensions.k8s.io",
    .version = "v1",
    .kind = "CustomResourceDefinition",
    .plural = "customresourcedefinitions",
    .singular = "customresourcedefinition",
    .short_names = (const char *const[]){"crd", "crds", NULL},
    .categories = (const char *const[]){"api-extensions", NULL},
    .namespaced = false,
    .has_status = false, /* upstream has one; nobody may write it here */
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = crd_fields}};
