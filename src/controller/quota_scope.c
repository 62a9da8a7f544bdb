/*
 * controller/quota_scope.c: which objects a ResourceQuota with scopes or a scopeSelector tracks,
 * as kube-apiserver's pod evaluator (pkg/quota/v1/evaluator/core/pods.go podMatchesScopeFunc and
 * generic.Matches): every scope must match (AND), and only pods can match one (an object of
 * another kind is outside every scoped quota, as upstream's MatchesNoScopeFunc).
 *
 *   Terminating       spec.activeDeadlineSeconds is set (>= 0)
 *   NotTerminating    it is not
 *   BestEffort        no container or init container requests or limits cpu or memory
 *   NotBestEffort     one does
 *   PriorityClass     spec.priorityClassName, by the selector's operator: In / NotIn the values,
 *                     Exists (also `scopes: [PriorityClass]`), DoesNotExist
 *
 * Pure: no I/O. An unknown scope or operator matches nothing (upstream's validation refuses
 * them; CrossNamespacePodAffinity is not served: no pod affinity here).
 */
#include "base/compat.h"

#include "base/json.h"
#include "controller/controller.h"

static bool has_compute(const json_t *list)
{
    size_t i;
    json_t *c;
    const char *which[] = {"requests", "limits"}, *res[] = {"cpu", "memory"};

    json_array_foreach(list, i, c)
    {
        const json_t *r = json_object_get(c, "resources");
        for (int w = 0; w < 2; w++)
            for (int x = 0; x < 2; x++)
                if (json_object_get(json_object_get(r, which[w]), res[x]))
                    return true;
    }
    return false;
}

static bool matches(const char *scope, const char *op, const json_t *values, const json_t *pod)
{
    const json_t *spec = json_object_get(pod, "spec");
    const char *pc = fatia_json_str(spec, "priorityClassName");

    if (!strcmp(scope, "Terminating") || !strcmp(scope, "NotTerminating")) {
        const json_t *d = json_object_get(spec, "activeDeadlineSeconds");
        bool term = json_is_integer(d) && json_integer_value(d) >= 0;
        return !strcmp(scope, "Terminating") ? term : !term;
    }
    if (!strcmp(scope, "BestEffort") || !strcmp(scope, "NotBestEffort")) {
        bool be = !has_compute(json_object_get(spec, "containers")) &&
                  !has_compute(json_object_get(spec, "initContainers"));
        return !strcmp(scope, "BestEffort") ? be : !be;
    }
    if (!strcmp(scope, "PriorityClass")) {
        bool in = false;
        size_t i;
        json_t *v;
        if (pc && !*pc)
            pc = NULL;
        json_array_foreach(values, i, v) if (pc && json_string_value(v) &&
                                             !strcmp(json_string_value(v), pc)) in = true;
        if (!op || !strcmp(op, "Exists"))
            return pc != NULL;
        if (!strcmp(op, "DoesNotExist"))
            return pc == NULL;
        if (!strcmp(op, "In"))
            return in;
        if (!strcmp(op, "NotIn"))
            return !in; /* upstream: a pod without a class is NotIn any list */
    }
    return false;
}

bool fatia_controller_quota_scoped(const json_t *quota)
{
    const json_t *spec = json_object_get(quota, "spec");

    return json_array_size(json_object_get(spec, "scopes")) ||
           json_array_size(
               json_object_get(json_object_get(spec, "scopeSelector"), "matchExpressions"));
}

bool fatia_controller_quota_tracks(const json_t *quota, bool is_pod, const json_t *obj)
{
    const json_t *spec = json_object_get(quota, "spec"), *e;
    size_t i;

    if (!fatia_controller_quota_scoped(quota))
        return true;
    if (!is_pod)
        return false;
    json_array_foreach(json_object_get(spec, "scopes"), i, e)
    {
        if (!json_is_string(e) || !matches(json_string_value(e), NULL, NULL, obj))
            return false;
    }
    json_array_foreach(json_object_get(json_object_get(spec, "scopeSelector"), "matchExpressions"),
                       i, e)
    {
        const char *sn = fatia_json_str(e, "scopeName"), *op = fatia_json_str(e, "operator");
        if (!sn || !op || !matches(sn, op, json_object_get(e, "values"), obj))
            return false;
    }
    return true;
}
