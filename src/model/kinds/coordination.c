/*
 * model/kinds/coordination.c: coordination.k8s.io/v1 Lease, the object node agents renew to say
 * they are alive (namespace kube-node-lease, one Lease per Node, named as the Node) and that
 * leader election holds (docs/fleet.md).
 *
 * Fields as upstream's LeaseSpec (k8s.io/api/coordination/v1): holderIdentity,
 * leaseDurationSeconds (> 0 when set), acquireTime and renewTime (MicroTime: RFC 3339 with
 * microseconds), leaseTransitions (>= 0), strategy and preferredHolder (coordinated leader
 * election, kept but not interpreted). Rules from pkg/apis/coordination/validation: the
 * duration is positive, the transitions are not negative. Rejected: a Lease that expires by
 * itself in the store (etcd-style TTL): upstream's Lease is plain data that readers judge by
 * renewTime + leaseDurationSeconds on their own clock, and so is this one.
 */
#include "base/compat.h"

#include <inttypes.h>

#include "base/json.h"
#include "model/kinds/kinds.h"

static void check_lease_spec(struct fatia_vctx *ctx, json_t *spec)
{
    int64_t v;

    if (fatia_json_int(spec, "leaseDurationSeconds", &v) && v <= 0)
        fatia_verr_at(ctx, spec, "leaseDurationSeconds", "must be greater than 0, got %" PRId64, v);
    if (fatia_json_int(spec, "leaseTransitions", &v) && v < 0)
        fatia_verr_at(ctx, spec, "leaseTransitions", "must be 0 or more, got %" PRId64, v);
}

static const struct fatia_field lease_spec_fields[] = {
    {"holderIdentity", &fatia_s_string, 0, NULL},
    {"leaseDurationSeconds", &fatia_s_int32, 0, NULL},
    {"acquireTime", &fatia_s_time, 0, NULL},
    {"renewTime", &fatia_s_time, 0, NULL},
    {"leaseTransitions", &fatia_s_int32, 0, NULL},
    {"strategy", &fatia_s_string, 0, NULL},
    {"preferredHolder", &fatia_s_string, 0, NULL},
    {0}};
static const struct fatia_field lease_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec",
     &(const struct fatia_schema){FATIA_T_OBJECT, "The lease's holder and times",
                                  .fields = lease_spec_fields, .check = check_lease_spec},
     0, NULL},
    {0}};
static const struct fatia_column lease_columns[] = {
    {"Holder", "string", ".spec.holderIdentity", 0, "The lease's holder"}, {NULL}};
const struct fatia_kind fatia_kind_lease = {
    .group = "coordination.k8s.io",
    .version = "v1",
    .kind = "Lease",
    .plural = "leases",
    .singular = "lease",
    .namespaced = true,
    .has_status = false,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = lease_fields},
    .columns = lease_columns};
