/*
 * model/kinds/fatia_usage.c: fatia.dev/v1alpha1 UsageRecord, one run interval of one Kueue
 * Workload, as the usage controller records it (docs/selfservice.md, "Usage metering").
 *
 * Model: from the Workload's admission (start) to its end (Finished, evicted, or deleted while
 * admitted); end absent while it runs. resources is what the admission reserved (the sum of the
 * pod sets' resourceUsage), so the accounting is quota-exact: what the queue charged, for as long
 * as it was charged. The record lives in the Workload's namespace (a tenant reads its own usage)
 * and outlives the Workload (the garbage collector does not own it), so usage survives the
 * deletion of Jobs and restarts of fatiad. Tenants may not write records (controller/tenancy.c).
 */
#include "base/compat.h"

#include "base/clock.h"
#include "base/json.h"
#include "model/kinds/kinds.h"

static void check_spec(struct fatia_vctx *ctx, json_t *spec)
{
    const char *start = fatia_json_str(spec, "start"), *end = fatia_json_str(spec, "end");
    fatia_usec_t a, b;

    /* compared as instants: RFC 3339 allows offsets and fractions, so the text's order is not
     * the time's ("12:30:00+02:00" is before "11:00:00Z"); one that does not parse is the
     * schema's error already */
    if (start && end && fatia_time_parse_rfc3339(start, &a) == 0 &&
        fatia_time_parse_rfc3339(end, &b) == 0 && b < a)
        fatia_verr_at(ctx, spec, "end", "must not be before start (%s)", start);
}

static const struct fatia_field spec_fields[] = {
    {"workload", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {"workloadUID", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {"clusterQueue", &fatia_s_string, 0, NULL},
    {"localQueue", &fatia_s_string, 0, NULL},
    {"profile", &fatia_s_string, 0, NULL},
    {"owner", &fatia_s_string, 0, NULL},
    {"user", &fatia_s_string, 0, NULL},
    {"start", &fatia_s_time, FATIA_F_REQUIRED, NULL},
    {"end", &fatia_s_time, 0, NULL},
    {"resources", &fatia_s_resource_list, 0, NULL},
    {0}};

static const struct fatia_field fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = spec_fields, .check = check_spec},
     FATIA_F_REQUIRED, NULL},
    {0}};

static const struct fatia_column columns[] = {
    {"Queue", "string", ".spec.clusterQueue", 0, "ClusterQueue"},
    {"Profile", "string", ".spec.profile", 0, "Hardware profile"},
    {"User", "string", ".spec.user", 0, "Who created the workload (fatia.dev/creator)"},
    {"Start", "string", ".spec.start", 0, "Admitted at"},
    {"End", "string", ".spec.end", 0, "Ended at (empty: running)"},
    {"Workload", "string", ".spec.workload", 1, "Kueue Workload"},
    {NULL}};

const struct fatia_kind fatia_kind_usagerecord = {
    .group = "fatia.dev",
    .version = "v1alpha1",
    .kind = "UsageRecord",
    .plural = "usagerecords",
    .singular = "usagerecord",
    .short_names = (const char *const[]){"usage", NULL},
    .namespaced = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = fields},
    .columns = columns};
