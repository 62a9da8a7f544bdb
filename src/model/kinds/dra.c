/*
 * model/kinds/dra.c: resource.k8s.io/v1 DeviceClass, ResourceSlice, ResourceClaim and
 * ResourceClaimTemplate (Dynamic Resource Allocation, as in k8s.io/api v0.34 resource/v1 and
 * reference/nvidia-slicing.md §6.4).
 *
 * The rules are upstream's (pkg/apis/resource/validation): a request has exactly one of
 * `exactly` and `firstAvailable` (1..8 subrequests); count is > 0 and defaults to 1 with
 * allocationMode ExactCount, and must be unset with All; at most 32 requests, constraints,
 * configs and selectors; constraint and config `requests` name requests of the claim (or
 * "<request>/<subrequest>"); matchAttribute is a fully qualified name (domain/identifier); a
 * ResourceSlice has exactly one of nodeName, nodeSelector, allNodes and perDeviceNodeSelection,
 * at most 128 devices with unique names, and each device at most 32 attributes and capacities,
 * each attribute exactly one of int, bool, string and version (strings and versions at most 64
 * characters, versions semver 2.0.0).
 *
 * CEL expressions are checked for size here (10 KiB) but compiled by the demand layer's extra
 * checks (fatia_demand_checks, passed to every decode: model/kind.h): the model cannot call the
 * CEL compiler without depending on a layer above it.
 *
 * Feature-gated fields that fatia does not interpret (device taints, consumable capacity,
 * partitionable devices' counters, binding conditions) are accepted and kept as they are.
 */
#include "base/compat.h"

#include "base/error.h"
#include "base/json.h"
#include "model/kinds/kinds.h"
#include "model/labels.h"
#include "model/quantity.h"
#include "model/semver.h"

#define LIM(n) .flags = (FATIA_S_MIN | FATIA_S_MAX), .min = (n), .max
#define ANY(name)                   \
    {                               \
        name, &fatia_s_any, 0, NULL \
    }

#define DRA_MAX_REQUESTS    32
#define DRA_MAX_SELECTORS   32
#define DRA_MAX_SUBREQUESTS 8
#define DRA_MAX_ATTRS       32
#define DRA_MAX_DEVICES     128
#define DRA_CEL_MAX_BYTES   (10 * 1024)
#define DRA_ATTR_MAX_STRING 64

/* ---- names ---- */

static bool is_c_identifier(const char *s, size_t n)
{
    if (n == 0 || n > 32 || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return false;
    }
    return true;
}

/* QualifiedName: an identifier, or "<dns subdomain of at most 63>/<identifier>"; with
 * need_domain, the domain is required (FullyQualifiedName). */
static bool dra_name_ok(const char *s, bool need_domain, char *why, size_t n)
{
    const char *slash = strchr(s, '/');
    char domain[256];

    if (!slash) {
        if (need_domain) {
            snprintf(why, n,
                     "must include a domain (\"<domain>/<name>\", e.g. "
                     "\"gpu.nvidia.com/parentUUID\")");
            return false;
        }
        if (!is_c_identifier(s, strlen(s))) {
            snprintf(why, n,
                     "a name must be a C identifier of at most 32 characters "
                     "(letters, digits, '_', not starting with a digit)");
            return false;
        }
        return true;
    }
    if ((size_t)(slash - s) >= sizeof(domain) || slash - s > 63) {
        snprintf(why, n, "the domain must be no more than 63 characters");
        return false;
    }
    snprintf(domain, sizeof(domain), "%.*s", (int)(slash - s), s);
    if (!fatia_is_dns1123_subdomain(domain, why, n))
        return false;
    if (!is_c_identifier(slash + 1, strlen(slash + 1))) {
        snprintf(why, n,
                 "the name after the domain must be a C identifier of at most 32 "
                 "characters (letters, digits, '_', not starting with a digit)");
        return false;
    }
    return true;
}

/* Pool names: one or more DNS subdomains separated by '/', at most 253 characters. */
static void check_pool_name(struct fatia_vctx *ctx, json_t *v)
{
    const char *s = json_string_value(v);
    char part[256], why[FATIA_WHY_MAX];

    if (!s)
        return;
    if (strlen(s) > 253) {
        fatia_verr_at(ctx, v, "", "must be no more than 253 characters");
        return;
    }
    for (const char *p = s;;) {
        size_t len = strcspn(p, "/");
        snprintf(part, sizeof(part), "%.*s", (int)len, p);
        if (!fatia_is_dns1123_subdomain(part, why, sizeof(why))) {
            fatia_verr_at(ctx, v, "", "invalid value \"%s\": each '/'-separated part: %s", s, why);
            return;
        }
        if (!p[len])
            break;
        p += len + 1;
    }
}

static void check_driver_name(struct fatia_vctx *ctx, json_t *v)
{
    const char *s = json_string_value(v);
    char why[FATIA_WHY_MAX];

    if (!s)
        return;
    if (strlen(s) > 63)
        fatia_verr_at(ctx, v, "", "must be no more than 63 characters");
    else if (!fatia_is_dns1123_subdomain(s, why, sizeof(why)))
        fatia_verr_at(ctx, v, "", "invalid value \"%s\": %s", s, why);
}

static const struct fatia_schema driver_name = {FATIA_T_STRING, .check = check_driver_name};
static const struct fatia_schema pool_name = {FATIA_T_STRING, .check = check_pool_name};

/* ---- core NodeSelector (ResourceSlice.spec.nodeSelector, allocation.nodeSelector) ---- */

static const char *const node_selector_ops[] = {"In", "NotIn", "Exists", "DoesNotExist",
                                                "Gt", "Lt",    NULL};

static void check_ns_requirement(struct fatia_vctx *ctx, json_t *r)
{
    const char *op = fatia_json_str(r, "operator");
    size_t n = json_array_size(json_object_get(r, "values"));

    if (!op)
        return;
    if ((!strcmp(op, "In") || !strcmp(op, "NotIn")) && n == 0)
        fatia_verr_at(ctx, r, "values", "must be specified when operator is %s", op);
    else if ((!strcmp(op, "Exists") || !strcmp(op, "DoesNotExist")) && n > 0)
        fatia_verr_at(ctx, r, "values", "may not be specified when operator is %s", op);
    else if ((!strcmp(op, "Gt") || !strcmp(op, "Lt")) && n != 1)
        fatia_verr_at(ctx, r, "values", "must be a single integer when operator is %s", op);
}

static const struct fatia_field ns_requirement_fields[] = {
    {"key", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {"operator", &(const struct fatia_schema){FATIA_T_STRING, .enums = node_selector_ops},
     FATIA_F_REQUIRED, NULL},
    {"values", &fatia_s_string_list, 0, NULL},
    {0}};
static const struct fatia_schema ns_requirements = {
    FATIA_T_ARRAY,
    .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = ns_requirement_fields,
                                          .check = check_ns_requirement}};
static const struct fatia_field ns_term_fields[] = {{"matchExpressions", &ns_requirements, 0, NULL},
                                                    {"matchFields", &ns_requirements, 0, NULL},
                                                    {0}};
static const struct fatia_field node_selector_fields[] = {
    {"nodeSelectorTerms",
     &(const struct fatia_schema){
         FATIA_T_ARRAY, LIM(1) = 1,
         .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = ns_term_fields}},
     FATIA_F_REQUIRED, NULL},
    {0}};
static const struct fatia_schema node_selector = {FATIA_T_OBJECT, "A node selector (one term)",
                                                  .fields = node_selector_fields};

/* ---- selectors and configuration (shared by classes and claims) ---- */

static void check_cel_size(struct fatia_vctx *ctx, json_t *v)
{
    if (json_is_string(v) && json_string_length(v) > DRA_CEL_MAX_BYTES)
        fatia_verr_at(ctx, v, "", "must be no more than %d bytes (is %zu)", DRA_CEL_MAX_BYTES,
                      json_string_length(v));
}

static const struct fatia_field cel_fields[] = {
    {"expression", &(const struct fatia_schema){FATIA_T_STRING, .check = check_cel_size},
     FATIA_F_REQUIRED, NULL},
    {0}};
static const struct fatia_field selector_fields[] = {
    {"cel", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = cel_fields}, FATIA_F_REQUIRED,
     NULL},
    {0}};
static const struct fatia_schema selectors = {
    FATIA_T_ARRAY, LIM(0) = DRA_MAX_SELECTORS,
    .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = selector_fields}};

static void check_opaque(struct fatia_vctx *ctx, json_t *o)
{
    json_t *params = json_object_get(o, "parameters");
    struct fatia_buf b;

    if (!params)
        return;
    if (!json_is_object(params)) {
        fatia_verr_at(ctx, o, "parameters", "expected an object, got %s",
                      fatia_json_type_name(params));
        return;
    }
    fatia_buf_init(&b, 10 * 1024);
    if (fatia_json_dump_buf(params, &b, JSON_COMPACT) == -FATIA_E_LIMIT)
        fatia_verr_at(ctx, o, "parameters", "must be no more than 10240 bytes of JSON");
    fatia_buf_release(&b);
}

static const struct fatia_field opaque_fields[] = {
    {"driver", &driver_name, FATIA_F_REQUIRED, NULL},
    {"parameters", &fatia_s_any, FATIA_F_REQUIRED, NULL},
    {0}};
static const struct fatia_schema opaque = {FATIA_T_OBJECT, .fields = opaque_fields,
                                           .check = check_opaque};
static const struct fatia_schema request_names = {FATIA_T_ARRAY, .items = &fatia_s_nonempty_string};

static const struct fatia_field class_config_fields[] = {{"opaque", &opaque, 0, NULL}, {0}};
static const struct fatia_field claim_config_fields[] = {
    {"requests", &request_names, 0, NULL}, {"opaque", &opaque, 0, NULL}, {0}};

static void check_config_one_of(struct fatia_vctx *ctx, json_t *c)
{
    if (!json_object_get(c, "opaque"))
        fatia_verr_at(ctx, c, "opaque",
                      "required field is missing (exactly one kind of "
                      "configuration must be set)");
}

/* ---- DeviceClass ---- */

static const struct fatia_field class_spec_fields[] = {
    {"selectors", &selectors, 0, NULL},
    {"config",
     &(const struct fatia_schema){
         FATIA_T_ARRAY, LIM(0) = DRA_MAX_REQUESTS,
         .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = class_config_fields,
                                               .check = check_config_one_of}},
     0, NULL},
    {"extendedResourceName", &fatia_s_resource_name, 0, NULL},
    {0}};
static const struct fatia_field class_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = class_spec_fields},
     FATIA_F_REQUIRED, NULL},
    {0}};
const struct fatia_kind fatia_kind_deviceclass = {
    .group = "resource.k8s.io",
    .version = "v1",
    .kind = "DeviceClass",
    .plural = "deviceclasses",
    .singular = "deviceclass",
    .namespaced = false,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = class_fields},
    .others = fatia_kind_dra_class_versions};

/* ---- ResourceSlice ---- */

static void check_attribute(struct fatia_vctx *ctx, json_t *a)
{
    static const char *const kinds[] = {"int", "bool", "string", "version"};
    const char *version = fatia_json_str(a, "version");
    const char *str = fatia_json_str(a, "string");
    char why[FATIA_WHY_MAX];
    int n = 0;

    for (size_t i = 0; i < FATIA_ARRAY_SIZE(kinds); i++)
        n += json_object_get(a, kinds[i]) != NULL;
    if (n != 1)
        fatia_verr_at(ctx, a, "",
                      "exactly one of int, bool, string and version must be set "
                      "(%d are)",
                      n);
    if (str && strlen(str) > DRA_ATTR_MAX_STRING)
        fatia_verr_at(ctx, a, "string", "must be no more than %d characters", DRA_ATTR_MAX_STRING);
    if (version) {
        struct fatia_semver v;
        if (strlen(version) > DRA_ATTR_MAX_STRING)
            fatia_verr_at(ctx, a, "version", "must be no more than %d characters",
                          DRA_ATTR_MAX_STRING);
        else if (fatia_semver_parse(version, false, &v, why, sizeof(why)) < 0)
            fatia_verr_at(ctx, a, "version",
                          "invalid value \"%s\": must be a semantic version "
                          "2.0.0: %s",
                          version, why);
    }
}

static const struct fatia_field attribute_fields[] = {{"int", &fatia_s_int, 0, NULL},
                                                      {"bool", &fatia_s_bool, 0, NULL},
                                                      {"string", &fatia_s_string, 0, NULL},
                                                      {"version", &fatia_s_string, 0, NULL},
                                                      {0}};
static const struct fatia_field capacity_fields[] = {
    {"value", &fatia_s_quantity_nonneg, FATIA_F_REQUIRED, NULL}, ANY("requestPolicy"), {0}};

static void check_device(struct fatia_vctx *ctx, json_t *d)
{
    json_t *attrs = json_object_get(d, "attributes"), *caps = json_object_get(d, "capacity");
    const char *key;
    json_t *v;
    char why[FATIA_WHY_MAX], path[320];

    json_object_foreach(attrs, key, v)
    {
        if (!dra_name_ok(key, false, why, sizeof(why))) {
            snprintf(path, sizeof(path), "attributes[%s]", key);
            fatia_verr_at(ctx, d, path, "invalid name: %s", why);
        }
    }
    json_object_foreach(caps, key, v)
    {
        if (!dra_name_ok(key, false, why, sizeof(why))) {
            snprintf(path, sizeof(path), "capacity[%s]", key);
            fatia_verr_at(ctx, d, path, "invalid name: %s", why);
        }
    }
    if (json_object_size(attrs) + json_object_size(caps) > DRA_MAX_ATTRS)
        fatia_verr_at(ctx, d, "",
                      "must have at most %d attributes and capacities combined "
                      "(has %zu)",
                      DRA_MAX_ATTRS, json_object_size(attrs) + json_object_size(caps));
}

static const struct fatia_field device_fields[] = {
    {"name", &fatia_s_dns_label, FATIA_F_REQUIRED, NULL},
    {"attributes",
     &(const struct fatia_schema){FATIA_T_MAP,
                                  .items = &(const struct fatia_schema){FATIA_T_OBJECT,
                                                                        .fields = attribute_fields,
                                                                        .check = check_attribute}},
     0, NULL},
    {"capacity",
     &(const struct fatia_schema){
         FATIA_T_MAP,
         .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = capacity_fields}},
     0, NULL},
    {"nodeName", &fatia_s_string, 0, NULL},
    {"nodeSelector", &node_selector, 0, NULL},
    {"allNodes", &fatia_s_bool, 0, NULL},
    {"bindsToNode", &fatia_s_bool, 0, NULL},
    {"allowMultipleAllocations", &fatia_s_bool, 0, NULL},
    ANY("consumesCounters"),
    ANY("taints"),
    ANY("bindingConditions"),
    ANY("bindingFailureConditions"),
    {0}};
static const struct fatia_schema devices = {
    FATIA_T_ARRAY, LIM(0) = DRA_MAX_DEVICES,
    .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = device_fields,
                                          .check = check_device},
    .list_key = "name"};

static const struct fatia_field pool_fields[] = {
    {"name", &pool_name, FATIA_F_REQUIRED, NULL},
    {"generation", &fatia_s_int_nonneg, FATIA_F_REQUIRED, NULL},
    {"resourceSliceCount",
     &(const struct fatia_schema){FATIA_T_INT, .flags = FATIA_S_MIN, .min = 1}, FATIA_F_REQUIRED,
     NULL},
    {0}};

static void check_slice_spec(struct fatia_vctx *ctx, json_t *spec)
{
    json_t *devs = json_object_get(spec, "devices"), *d;
    bool per_device = fatia_json_bool(spec, "perDeviceNodeSelection", false);
    int n = (json_object_get(spec, "nodeName") != NULL) +
            (json_object_get(spec, "nodeSelector") != NULL) +
            fatia_json_bool(spec, "allNodes", false) + per_device;
    size_t i;
    char path[64];

    if (n != 1)
        fatia_verr_at(ctx, spec, "",
                      "exactly one of nodeName, nodeSelector, allNodes and "
                      "perDeviceNodeSelection must be set (%d are)",
                      n);
    json_array_foreach(devs, i, d)
    {
        int m = (json_object_get(d, "nodeName") != NULL) +
                (json_object_get(d, "nodeSelector") != NULL) +
                fatia_json_bool(d, "allNodes", false);
        snprintf(path, sizeof(path), "devices[%zu]", i);
        if (per_device && m != 1)
            fatia_verr_at(ctx, spec, path,
                          "exactly one of nodeName, nodeSelector and allNodes must be set when "
                          "perDeviceNodeSelection is true");
        else if (!per_device && m != 0)
            fatia_verr_at(ctx, spec, path,
                          "nodeName, nodeSelector and allNodes may only be set on a device when "
                          "spec.perDeviceNodeSelection is true");
    }
}

static const struct fatia_field slice_spec_fields[] = {
    {"driver", &driver_name, FATIA_F_REQUIRED, NULL},
    {"pool", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = pool_fields}, FATIA_F_REQUIRED,
     NULL},
    {"nodeName", &fatia_s_dns_subdomain, 0, NULL},
    {"nodeSelector", &node_selector, 0, NULL},
    {"allNodes", &fatia_s_bool, 0, NULL},
    {"perDeviceNodeSelection", &fatia_s_bool, 0, NULL},
    {"devices", &devices, 0, NULL},
    ANY("sharedCounters"),
    {0}};
static const struct fatia_field slice_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = slice_spec_fields,
                                  .check = check_slice_spec},
     FATIA_F_REQUIRED, NULL},
    {0}};
static const struct fatia_column slice_columns[] = {
    {"Node", "string", ".spec.nodeName", 0, "Node that provides the devices"},
    {"Driver", "string", ".spec.driver", 0, "DRA driver"},
    {"Pool", "string", ".spec.pool.name", 0, "Resource pool"},
    {NULL}};
const struct fatia_kind fatia_kind_resourceslice = {
    .group = "resource.k8s.io",
    .version = "v1",
    .kind = "ResourceSlice",
    .plural = "resourceslices",
    .singular = "resourceslice",
    .namespaced = false,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = slice_fields},
    .columns = slice_columns,
    .others = fatia_kind_dra_slice_versions};

/* ---- ResourceClaimSpec ---- */

static const char *const allocation_modes[] = {"ExactCount", "All", NULL};

/* count: > 0 and defaulted to 1 with ExactCount; unset with All. Shared by exactly and by each
 * subrequest. */
static void check_count_mode(struct fatia_vctx *ctx, json_t *r)
{
    const char *mode = fatia_json_str(r, "allocationMode");
    json_t *count = json_object_get(r, "count");
    int64_t n;

    if (mode && !strcmp(mode, "All")) {
        if (count)
            fatia_verr_at(ctx, r, "count", "must not be set when allocationMode is All");
        return;
    }
    if (!count) {
        if (ctx->apply_defaults) {
            if (!mode)
                json_object_set_new(r, "allocationMode", json_string("ExactCount"));
            json_object_set_new(r, "count", json_integer(1));
        }
        return;
    }
    if (fatia_json_int(r, "count", &n) && n <= 0)
        fatia_verr_at(ctx, r, "count", "must be greater than zero");
    if (ctx->apply_defaults && !mode)
        json_object_set_new(r, "allocationMode", json_string("ExactCount"));
}

#define REQUEST_COMMON_FIELDS                                                               \
    {"deviceClassName", &fatia_s_dns_subdomain, FATIA_F_REQUIRED, NULL},                    \
        {"selectors", &selectors, 0, NULL},                                                 \
        {"allocationMode",                                                                  \
         &(const struct fatia_schema){FATIA_T_STRING, .enums = allocation_modes}, 0, NULL}, \
        {"count", &fatia_s_int, 0, NULL}, ANY("tolerations"), ANY("capacity")

static const struct fatia_field exact_fields[] = {
    REQUEST_COMMON_FIELDS, {"adminAccess", &fatia_s_bool, 0, NULL}, {0}};
static const struct fatia_field sub_fields[] = {
    {"name", &fatia_s_dns_label, FATIA_F_REQUIRED, NULL}, REQUEST_COMMON_FIELDS, {0}};

static void check_request(struct fatia_vctx *ctx, json_t *r)
{
    bool exactly = json_object_get(r, "exactly") != NULL;
    bool first = json_object_get(r, "firstAvailable") != NULL;

    if (exactly == first)
        fatia_verr_at(ctx, r, "", "exactly one of exactly and firstAvailable must be set");
}

static const struct fatia_field request_fields[] = {
    {"name", &fatia_s_dns_label, FATIA_F_REQUIRED, NULL},
    {"exactly",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = exact_fields,
                                  .check = check_count_mode},
     0, NULL},
    {"firstAvailable",
     &(const struct fatia_schema){FATIA_T_ARRAY, LIM(1) = DRA_MAX_SUBREQUESTS,
                                  .items = &(const struct fatia_schema){FATIA_T_OBJECT,
                                                                        .fields = sub_fields,
                                                                        .check = check_count_mode},
                                  .list_key = "name"},
     0, NULL},
    {0}};

static void check_constraint(struct fatia_vctx *ctx, json_t *c)
{
    const char *match = fatia_json_str(c, "matchAttribute");
    const char *distinct = fatia_json_str(c, "distinctAttribute");
    char why[FATIA_WHY_MAX];

    if (!!match == !!distinct)
        fatia_verr_at(ctx, c, "",
                      "exactly one of matchAttribute and distinctAttribute must be "
                      "set");
    if (match && !dra_name_ok(match, true, why, sizeof(why)))
        fatia_verr_at(ctx, c, "matchAttribute", "invalid value \"%s\": %s", match, why);
    if (distinct && !dra_name_ok(distinct, true, why, sizeof(why)))
        fatia_verr_at(ctx, c, "distinctAttribute", "invalid value \"%s\": %s", distinct, why);
}

static const struct fatia_field constraint_fields[] = {
    {"requests", &request_names, 0, NULL},
    {"matchAttribute", &fatia_s_string, 0, NULL},
    {"distinctAttribute", &fatia_s_string, 0, NULL},
    {0}};

/* Is name a request of the claim ("gpu") or a subrequest of one ("gpu/large")? */
static bool request_exists(const json_t *requests, const char *name)
{
    const char *slash = strchr(name, '/');
    size_t n = slash ? (size_t)(slash - name) : strlen(name);
    size_t i, j;
    json_t *r, *sub;

    json_array_foreach(requests, i, r)
    {
        const char *rn = fatia_json_str(r, "name");
        if (!rn || strlen(rn) != n || strncmp(rn, name, n))
            continue;
        if (!slash)
            return true;
        json_array_foreach(json_object_get(r, "firstAvailable"), j, sub)
        {
            const char *sn = fatia_json_str(sub, "name");
            if (sn && !strcmp(sn, slash + 1))
                return true;
        }
    }
    return false;
}

static void check_request_refs(struct fatia_vctx *ctx, json_t *devs, const char *list)
{
    json_t *requests = json_object_get(devs, "requests");
    size_t i, j;
    json_t *item, *ref;
    char path[96];

    json_array_foreach(json_object_get(devs, list), i, item)
    {
        json_array_foreach(json_object_get(item, "requests"), j, ref)
        {
            const char *name = json_string_value(ref);
            if (name && !request_exists(requests, name)) {
                snprintf(path, sizeof(path), "%s[%zu].requests[%zu]", list, i, j);
                fatia_verr_at(ctx, devs, path, "\"%s\" is not a request of this claim", name);
            }
        }
    }
}

static void check_claim_devices(struct fatia_vctx *ctx, json_t *devs)
{
    check_request_refs(ctx, devs, "constraints");
    check_request_refs(ctx, devs, "config");
}

static const struct fatia_field claim_devices_fields[] = {
    {"requests",
     &(const struct fatia_schema){FATIA_T_ARRAY, LIM(0) = DRA_MAX_REQUESTS,
                                  .items = &(const struct fatia_schema){FATIA_T_OBJECT,
                                                                        .fields = request_fields,
                                                                        .check = check_request},
                                  .list_key = "name"},
     0, NULL},
    {"constraints",
     &(const struct fatia_schema){FATIA_T_ARRAY, LIM(0) = DRA_MAX_REQUESTS,
                                  .items = &(const struct fatia_schema){FATIA_T_OBJECT,
                                                                        .fields = constraint_fields,
                                                                        .check = check_constraint}},
     0, NULL},
    {"config",
     &(const struct fatia_schema){
         FATIA_T_ARRAY, LIM(0) = DRA_MAX_REQUESTS,
         .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = claim_config_fields,
                                               .check = check_config_one_of}},
     0, NULL},
    {0}};
static const struct fatia_field claim_spec_fields[] = {
    {"devices",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = claim_devices_fields,
                                  .check = check_claim_devices},
     0, NULL},
    {0}};
static const struct fatia_schema claim_spec = {FATIA_T_OBJECT, "What devices a claim needs",
                                               .fields = claim_spec_fields};

/* ---- ResourceClaim ---- */

static const struct fatia_field result_fields[] = {
    {"request", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {"driver", &driver_name, FATIA_F_REQUIRED, NULL},
    {"pool", &pool_name, FATIA_F_REQUIRED, NULL},
    {"device", &fatia_s_dns_label, FATIA_F_REQUIRED, NULL},
    {"adminAccess", &fatia_s_bool, 0, NULL},
    ANY("tolerations"),
    ANY("bindingConditions"),
    ANY("bindingFailureConditions"),
    ANY("shareID"),
    ANY("consumedCapacity"),
    {0}};
static const struct fatia_field alloc_devices_fields[] = {
    {"results",
     &(const struct fatia_schema){
         FATIA_T_ARRAY, LIM(0) = DRA_MAX_REQUESTS,
         .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = result_fields}},
     0, NULL},
    ANY("config"),
    {0}};
static const struct fatia_field allocation_fields[] = {
    {"devices", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = alloc_devices_fields}, 0,
     NULL},
    {"nodeSelector", &node_selector, 0, NULL},
    {"allocationTimestamp", &fatia_s_time, 0, NULL},
    {0}};
static const struct fatia_field consumer_fields[] = {
    {"apiGroup", &fatia_s_string, 0, NULL},
    {"resource", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {"name", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {"uid", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {0}};
static const struct fatia_field claim_status_fields[] = {
    {"allocation", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = allocation_fields}, 0,
     NULL},
    {"reservedFor",
     &(const struct fatia_schema){
         FATIA_T_ARRAY, LIM(0) = 256,
         .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = consumer_fields},
         .list_key = "uid"},
     0, NULL},
    ANY("devices"),
    {0}};
static const struct fatia_field claim_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec", &claim_spec, FATIA_F_REQUIRED, NULL},
    {"status", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = claim_status_fields}, 0,
     NULL},
    {0}};
const struct fatia_kind fatia_kind_resourceclaim = {
    .group = "resource.k8s.io",
    .version = "v1",
    .kind = "ResourceClaim",
    .plural = "resourceclaims",
    .singular = "resourceclaim",
    .namespaced = true,
    .has_status = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = claim_fields},
    .others = fatia_kind_dra_claim_versions};

/* ---- ResourceClaimTemplate ---- */

static const struct fatia_field template_meta_fields[] = {
    {"labels", &fatia_s_label_map, 0, NULL},
    {"annotations", &fatia_s_annotation_map, 0, NULL},
    ANY("name"),
    ANY("namespace"),
    ANY("generateName"),
    {0}};
static const struct fatia_field template_spec_fields[] = {
    {"metadata", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = template_meta_fields}, 0,
     NULL},
    {"spec", &claim_spec, FATIA_F_REQUIRED, NULL},
    {0}};
static const struct fatia_field template_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = template_spec_fields},
     FATIA_F_REQUIRED, NULL},
    {0}};
const struct fatia_kind fatia_kind_resourceclaimtemplate = {
    .group = "resource.k8s.io",
    .version = "v1",
    .kind = "ResourceClaimTemplate",
    .plural = "resourceclaimtemplates",
    .singular = "resourceclaimtemplate",
    .namespaced = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = template_fields},
    .others = fatia_kind_dra_template_versions};
