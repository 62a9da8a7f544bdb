/*
 * apiserver/scale.c: the `scale` subresource (autoscaling/v1 Scale) of Deployments, ReplicaSets
 * and StatefulSets, which `kubectl scale` and autoscalers use: GET answers a Scale built from the
 * object (spec.replicas, status.replicas, status.selector as a label selector string); PUT and
 * PATCH (merge, JSON, strategic) change a Scale and write its spec.replicas back into the object
 * through the ordinary update, so admission, tenant rules, resourceVersion preconditions, audit
 * and watches are those of an update of the object (handlers.c routes here).
 *
 * Rejected: a Scale stored of its own. The Scale is a view; upstream keeps no such object.
 */
#include "base/compat.h"

#include "apiserver/internal.h"
#include "base/error.h"
#include "base/json.h"
#include "model/kinds/kinds.h"

bool fatia_api_kind_has_scale(const struct fatia_kind *k)
{
    return !strcmp(k->group, "apps") &&
           (!strcmp(k->kind, "Deployment") || !strcmp(k->kind, "ReplicaSet") ||
            !strcmp(k->kind, "StatefulSet"));
}

json_t *fatia_api_scale_of(const json_t *obj, uint64_t rv)
{
    const json_t *meta = json_object_get(obj, "metadata");
    json_t *sel = fatia_print_selector(obj, 0), *scale;
    int64_t want = 0, have = 0;
    char rvs[24];

    fatia_json_int(json_object_get(obj, "spec"), "replicas", &want);
    fatia_json_int(json_object_get(obj, "status"), "replicas", &have);
    snprintf(rvs, sizeof(rvs), "%" PRIu64, rv);
    scale = json_pack(
        "{s:s,s:s,s:{s:s,s:s,s:s,s:s},s:{s:I},s:{s:I,s:s}}", "kind", "Scale", "apiVersion",
        "autoscaling/v1", "metadata", "name",
        fatia_json_str(meta, "name") ? fatia_json_str(meta, "name") : "", "namespace",
        fatia_json_str(meta, "namespace") ? fatia_json_str(meta, "namespace") : "", "uid",
        fatia_json_str(meta, "uid") ? fatia_json_str(meta, "uid") : "", "resourceVersion", rvs,
        "spec", "replicas", (json_int_t)want, "status", "replicas", (json_int_t)have, "selector",
        json_is_string(sel) && strcmp(json_string_value(sel), "<none>") ? json_string_value(sel)
                                                                        : "");
    if (scale && fatia_json_str(meta, "creationTimestamp"))
        json_object_set_new(json_object_get(scale, "metadata"), "creationTimestamp",
                            json_string(fatia_json_str(meta, "creationTimestamp")));
    json_decref(sel);
    return scale;
}

int fatia_api_scale_apply(const json_t *obj, uint64_t rv, const json_t *scale, json_t **ret,
                          char *why, size_t why_n)
{
    json_t *spec = json_object_get(scale, "spec"), *r = json_object_get(spec, "replicas");
    const char *want_rv = fatia_json_str(json_object_get(scale, "metadata"), "resourceVersion");
    json_t *out;
    char rvs[24];

    if (!json_is_object(scale) || (r && !json_is_integer(r))) {
        snprintf(why, why_n, "spec.replicas: Invalid value: must be an integer");
        return -EINVAL;
    }
    if (r && json_integer_value(r) < 0) {
        snprintf(why, why_n,
                 "spec.replicas: Invalid value: %" JSON_INTEGER_FORMAT
                 ": must be greater than or equal to 0",
                 json_integer_value(r));
        return -EINVAL;
    }
    out = json_deep_copy(obj);
    if (!out)
        return -ENOMEM;
    if (r)
        json_object_set(json_object_get(out, "spec"), "replicas", r);
    snprintf(rvs, sizeof(rvs), "%" PRIu64, rv);
    json_object_set_new(json_object_get(out, "metadata"), "resourceVersion",
                        json_string(want_rv && *want_rv ? want_rv : rvs));
    *ret = out;
    return 0;
}
