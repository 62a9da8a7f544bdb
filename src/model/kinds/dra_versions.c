/*
 * model/kinds/dra_versions.c: resource.k8s.io v1beta1 and v1beta2, served beside the storage
 * version v1 and converted as kube-apiserver 1.34 converts them (pkg/apis/resource/v1beta1 and
 * v1beta2 conversion.go).
 *
 * Model: v1beta2 has v1's shape for every DRA kind (it introduced `exactly` and flattened
 * devices), so it converts as the identity. v1beta1 differs in two places:
 *   - a DeviceRequest is flat (deviceClassName, selectors, allocationMode, count, adminAccess,
 *     tolerations, capacity beside name and firstAvailable); v1 moves those into `exactly`.
 *     v1beta1 -> v1: a request without firstAvailable gets them in `exactly` (upstream converts
 *     so even when they are all unset: `exactly` then exists, empty, and validation names what
 *     is missing); v1 -> v1beta1: the members of `exactly` go back into the request.
 *     ResourceClaim spec.devices.requests and ResourceClaimTemplate spec.spec.devices.requests.
 *   - a ResourceSlice device holds its properties in `basic`; v1 has them on the device itself.
 * DeviceClass is the same in every version. Status (allocation results) too.
 *
 * Conversions move members only and never fail (kind.h): a member of the wrong type is left
 * where it is for validation to report. Round trip: v1beta1 -> v1 -> v1beta1 gives back the
 * input for every object that validates (tests/cli/apiserver-dra-versions.sh, on NVIDIA's demo
 * claims).
 */
#include "base/compat.h"

#include "model/kinds/kinds.h"

static const char *const exact_members[] = {"deviceClassName", "selectors",   "allocationMode",
                                            "count",           "adminAccess", "tolerations",
                                            "capacity",        NULL};

static json_t *requests_of(json_t *obj, bool tmpl)
{
    json_t *spec = json_object_get(obj, "spec");

    if (tmpl)
        spec = json_object_get(spec, "spec");
    return json_object_get(json_object_get(spec, "devices"), "requests");
}

static void request_to_v1(json_t *r)
{
    json_t *ex;

    if (!json_is_object(r) || json_object_get(r, "exactly"))
        return;
    if (json_array_size(json_object_get(r, "firstAvailable")))
        return;
    ex = json_object();
    for (const char *const *m = exact_members; *m; m++) {
        json_t *v = json_object_get(r, *m);
        if (v) {
            json_object_set(ex, *m, v);
            json_object_del(r, *m);
        }
    }
    json_object_set_new(r, "exactly", ex);
}

static void request_from_v1(json_t *r)
{
    json_t *ex = json_object_get(r, "exactly");
    const char *k;
    json_t *v;

    if (!json_is_object(r) || !json_is_object(ex))
        return;
    json_incref(ex);
    json_object_del(r, "exactly");
    json_object_foreach(ex, k, v) json_object_set(r, k, v);
    json_decref(ex);
}

static void claims_each(json_t *obj, bool tmpl, void (*fn)(json_t *))
{
    size_t i;
    json_t *r;

    json_array_foreach(requests_of(obj, tmpl), i, r) fn(r);
}

static void claim_to_v1(json_t *obj)
{
    claims_each(obj, false, request_to_v1);
}

static void claim_from_v1(json_t *obj)
{
    claims_each(obj, false, request_from_v1);
}

static void template_to_v1(json_t *obj)
{
    claims_each(obj, true, request_to_v1);
}

static void template_from_v1(json_t *obj)
{
    claims_each(obj, true, request_from_v1);
}

static void slice_to_v1(json_t *obj)
{
    size_t i;
    json_t *d;

    json_array_foreach(json_object_get(json_object_get(obj, "spec"), "devices"), i, d)
    {
        json_t *basic = json_object_get(d, "basic");
        const char *k;
        json_t *v;
        if (!json_is_object(basic))
            continue;
        json_incref(basic);
        json_object_del(d, "basic");
        json_object_foreach(basic, k, v) if (!json_object_get(d, k)) json_object_set(d, k, v);
        json_decref(basic);
    }
}

static void slice_from_v1(json_t *obj)
{
    size_t i;
    json_t *d;

    json_array_foreach(json_object_get(json_object_get(obj, "spec"), "devices"), i, d)
    {
        json_t *basic = json_object();
        const char *k;
        json_t *v;
        void *tmp;
        if (!json_is_object(d))
            continue;
        json_object_foreach_safe(d, tmp, k, v)
        {
            if (!strcmp(k, "name"))
                continue;
            json_object_set(basic, k, v);
            json_object_del(d, k);
        }
        json_object_set_new(d, "basic", basic);
    }
}

const struct fatia_kind_version fatia_kind_dra_class_versions[] = {
    {"v1beta2", NULL, NULL, NULL}, {"v1beta1", NULL, NULL, NULL}, {NULL}};
const struct fatia_kind_version fatia_kind_dra_claim_versions[] = {
    {"v1beta2", NULL, NULL, NULL}, {"v1beta1", claim_to_v1, claim_from_v1, NULL}, {NULL}};
const struct fatia_kind_version fatia_kind_dra_template_versions[] = {
    {"v1beta2", NULL, NULL, NULL}, {"v1beta1", template_to_v1, template_from_v1, NULL}, {NULL}};
const struct fatia_kind_version fatia_kind_dra_slice_versions[] = {
    {"v1beta2", NULL, NULL, NULL}, {"v1beta1", slice_to_v1, slice_from_v1, NULL}, {NULL}};
