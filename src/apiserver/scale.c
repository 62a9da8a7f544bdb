/*
 * apiserver/scale.c: the `scale` subresource (autoscaling/v1 Scale) of Deployments, ReplicaSets
 * and StatefulSets, and of custom kinds whose CRD declares one (its specReplicasPath,
 * statusReplicasPath, labelSelectorPath), which `kubectl scale` and autoscalers use: GET answers
 * a Scale built from the object (spec.replicas, status.replicas, status.selector as a label
 * selector string); PUT and
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
    if (k->scale)
        return true;
    return !strcmp(k->group, "apps") &&
           (!strcmp(k->kind, "Deployment") || !strcmp(k->kind, "ReplicaSet") ||
            !strcmp(k->kind, "StatefulSet"));
}

/* A CRD's path (".spec.replicas") as fatia_json_path's ("spec.replicas"). */
static const char *crd_path(const char *p)
{
    return p && p[0] == '.' ? p + 1 : p ? p : "";
}

static int64_t int_at(const json_t *obj, const char *path)
{
    const json_t *v = fatia_json_path(obj, crd_path(path));

    return json_is_integer(v) ? json_integer_value(v) : 0;
}

json_t *fatia_api_scale_of(const struct fatia_kind *k, const json_t *obj, uint64_t rv)
{
    const json_t *meta = json_object_get(obj, "metadata");
    json_t *sel, *scale;
    int64_t want = 0, have = 0;
    char rvs[24];

    if (k->scale) {
        const json_t *ls = k->scale->label_selector
                               ? fatia_json_path(obj, crd_path(k->scale->label_selector))
                               : NULL;
        want = int_at(obj, k->scale->spec_replicas);
        have = int_at(obj, k->scale->status_replicas);
        sel = json_string(json_is_string(ls) ? json_string_value(ls) : "");
    } else {
        sel = fatia_print_selector(obj, 0);
        fatia_json_int(json_object_get(obj, "spec"), "replicas", &want);
        fatia_json_int(json_object_get(obj, "status"), "replicas", &have);
    }
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

/* Sets the member at a CRD's dotted path (".spec.replicas"), creating the objects on the way. */
static int set_at(json_t *obj, const char *path, json_t *v)
{
    char buf[256], *p = buf, *dot;
    json_t *cur = obj;

    snprintf(buf, sizeof(buf), "%s", crd_path(path));
    while ((dot = strchr(p, '.'))) {
        *dot = '\0';
        cur = fatia_json_object_ensure(cur, p);
        if (!cur)
            return -EINVAL;
        p = dot + 1;
    }
    return json_object_set(cur, p, v) < 0 ? -ENOMEM : 0;
}

int fatia_api_scale_apply(const struct fatia_kind *k, const json_t *obj, uint64_t rv,
                          const json_t *scale, json_t **ret, char *why, size_t why_n)
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
    if (r && k->scale) {
        if (set_at(out, k->scale->spec_replicas, r) < 0) {
            json_decref(out);
            snprintf(why, why_n, "%s: cannot be set in this object", k->scale->spec_replicas);
            return -EINVAL;
        }
    } else if (r) {
        json_object_set(json_object_get(out, "spec"), "replicas", r);
    }
    snprintf(rvs, sizeof(rvs), "%" PRIu64, rv);
    json_object_set_new(json_object_get(out, "metadata"), "resourceVersion",
                        json_string(want_rv && *want_rv ? want_rv : rvs));
    *ret = out;
    return 0;
}
