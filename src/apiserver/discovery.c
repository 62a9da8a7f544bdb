/*
 * apiserver/discovery.c: /version, /api, /api/v1, /apis, /apis/G, /apis/G/V, generated from the
 * kind registry.
 *
 * Discovery is the legacy (unaggregated) form: kubectl 1.27+ asks for aggregated discovery
 * first, sees an application/json answer without the aggregated media type and falls back to
 * the per-group-version documents, which every client understands. Groups and versions come
 * from the registry: a group's preferred version is the storage version of its kinds; other
 * served versions follow. Besides the registry, the authorization.k8s.io group serves
 * selfsubjectaccessreviews (for `kubectl auth can-i`).
 */
#include "base/compat.h"

#include "apiserver/internal.h"
#include "base/error.h"
#include "base/json.h"
#include "model/crd_kind.h"

static const char *const verbs_all[] = {"create", "delete", "deletecollection", "get",
                                        "list",   "patch",  "update",           "watch"};

static json_t *str_array(const char *const *v, size_t n)
{
    json_t *a = json_array();

    for (size_t i = 0; v && (n ? i < n : v[i] != NULL); i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

/* Is kind k served at version v? */
static bool serves(const struct fatia_kind *k, const char *v)
{
    if (!strcmp(k->version, v))
        return true;
    for (const struct fatia_kind_version *o = k->others; o && o->version; o++)
        if (!strcmp(o->version, v))
            return true;
    return false;
}

json_t *fatia_api_discovery_version(void)
{
    return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "major", "1", "minor", "34",
                     "gitVersion", FATIA_APISERVER_KUBE_VERSION, "gitCommit", "fatia",
                     "gitTreeState", "clean", "buildDate", "2025-01-01T00:00:00Z", "goVersion",
                     "none", "compiler", "fatia", "platform", "linux/amd64");
}

json_t *fatia_api_discovery_api(const char *address)
{
    return json_pack("{s:s,s:[s],s:[{s:s,s:s}]}", "kind", "APIVersions", "versions", "v1",
                     "serverAddressByClientCIDRs", "clientCIDR", "0.0.0.0/0", "serverAddress",
                     address ? address : "");
}

json_t *fatia_api_discovery_resources(const char *group, const char *version)
{
    json_t *res = json_array();
    char gv[160];
    bool any = false;

    for (size_t i = 0; fatia_kind_at(i); i++) {
        const struct fatia_kind *k = fatia_kind_at(i);
        json_t *r;
        char sub[160];
        if (strcmp(k->group, group) || !serves(k, version))
            continue;
        any = true;
        r = json_pack("{s:s,s:s,s:b,s:s,s:o}", "name", k->plural, "singularName", k->singular,
                      "namespaced", k->namespaced, "kind", k->kind, "verbs",
                      k->verbs ? str_array(k->verbs, 0)
                               : str_array(verbs_all, FATIA_ARRAY_SIZE(verbs_all)));
        if (k->short_names)
            json_object_set_new(r, "shortNames", str_array(k->short_names, 0));
        if (k->categories)
            json_object_set_new(r, "categories", str_array(k->categories, 0));
        json_array_append_new(res, r);
        if (k->has_status) {
            snprintf(sub, sizeof(sub), "%s/status", k->plural);
            json_array_append_new(res,
                                  json_pack("{s:s,s:s,s:b,s:s,s:[s,s,s]}", "name", sub,
                                            "singularName", "", "namespaced", k->namespaced, "kind",
                                            k->kind, "verbs", "get", "patch", "update"));
        }
        if (fatia_api_kind_has_scale(k)) {
            snprintf(sub, sizeof(sub), "%s/scale", k->plural);
            json_array_append_new(res, json_pack("{s:s,s:s,s:b,s:s,s:s,s:s,s:[s,s,s]}", "name", sub,
                                                 "singularName", "", "namespaced", k->namespaced,
                                                 "group", "autoscaling", "version", "v1", "kind",
                                                 "Scale", "verbs", "get", "patch", "update"));
        }
        if (!k->group[0] && !strcmp(k->kind, "Pod")) {
            json_array_append_new(res, json_pack("{s:s,s:s,s:b,s:s,s:[s]}", "name", "pods/log",
                                                 "singularName", "", "namespaced", true, "kind",
                                                 "Pod", "verbs", "get"));
            /* kubectl drain finds the Eviction's group and version here (eviction.c) */
            json_array_append_new(res, json_pack("{s:s,s:s,s:b,s:s,s:s,s:s,s:[s]}", "name",
                                                 "pods/eviction", "singularName", "", "namespaced",
                                                 true, "group", "policy", "version", "v1", "kind",
                                                 "Eviction", "verbs", "create"));
        }
    }
    if (!strcmp(group, "authorization.k8s.io") && !strcmp(version, "v1")) {
        any = true;
        static const char *const reviews[][3] = {
            {"localsubjectaccessreviews", "localsubjectaccessreview", "LocalSubjectAccessReview"},
            {"selfsubjectaccessreviews", "selfsubjectaccessreview", "SelfSubjectAccessReview"},
            {"selfsubjectrulesreviews", "selfsubjectrulesreview", "SelfSubjectRulesReview"},
            {"subjectaccessreviews", "subjectaccessreview", "SubjectAccessReview"},
        };
        for (size_t i = 0; i < FATIA_ARRAY_SIZE(reviews); i++)
            json_array_append_new(res, json_pack("{s:s,s:s,s:b,s:s,s:[s]}", "name", reviews[i][0],
                                                 "singularName", reviews[i][1], "namespaced",
                                                 i == 0, "kind", reviews[i][2], "verbs", "create"));
    }
    if (!strcmp(group, "authentication.k8s.io") &&
        (!strcmp(version, "v1") || !strcmp(version, "v1beta1"))) {
        any = true;
        json_array_append_new(res,
                              json_pack("{s:s,s:s,s:b,s:s,s:[s]}", "name", "selfsubjectreviews",
                                        "singularName", "selfsubjectreview", "namespaced", false,
                                        "kind", "SelfSubjectReview", "verbs", "create"));
        if (!strcmp(version, "v1"))
            json_array_append_new(res, json_pack("{s:s,s:s,s:b,s:s,s:[s]}", "name", "tokenreviews",
                                                 "singularName", "tokenreview", "namespaced", false,
                                                 "kind", "TokenReview", "verbs", "create"));
    }
    if (!any) {
        json_decref(res);
        return NULL;
    }
    if (group[0])
        snprintf(gv, sizeof(gv), "%s/%s", group, version);
    else
        snprintf(gv, sizeof(gv), "%s", version);
    return json_pack("{s:s,s:s,s:s,s:o}", "kind", "APIResourceList", "apiVersion", "v1",
                     "groupVersion", gv, "resources", res);
}

static void add_version(json_t *versions, const char *group, const char *v)
{
    char gv[160];
    size_t n;
    json_t *e;

    json_array_foreach(versions, n, e) if (!strcmp(fatia_json_str(e, "version"), v)) return;
    snprintf(gv, sizeof(gv), "%s/%s", group, v);
    json_array_append_new(versions, json_pack("{s:s,s:s}", "groupVersion", gv, "version", v));
}

/* The APIGroup of group (NULL when no kind has it). */
json_t *fatia_api_discovery_group(const char *group)
{
    json_t *versions = json_array(), *g;
    const char *preferred = NULL;
    char gv[160];

    if (!strcmp(group, "authorization.k8s.io") || !strcmp(group, "authentication.k8s.io")) {
        json_decref(versions);
        snprintf(gv, sizeof(gv), "%s/v1", group);
        g = json_pack("{s:s,s:s,s:s,s:[{s:s,s:s}],s:{s:s,s:s}}", "kind", "APIGroup", "apiVersion",
                      "v1", "name", group, "versions", "groupVersion", gv, "version", "v1",
                      "preferredVersion", "groupVersion", gv, "version", "v1");
        if (!strcmp(group, "authentication.k8s.io")) /* kubectl 1.27's auth whoami */
            json_array_append_new(json_object_get(g, "versions"),
                                  json_pack("{s:s,s:s}", "groupVersion",
                                            "authentication.k8s.io/v1beta1", "version", "v1beta1"));
        return g;
    }
    /* the storage versions first (the first is preferred), then the others, each once */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; fatia_kind_at(i); i++) {
            const struct fatia_kind *k = fatia_kind_at(i);
            if (strcmp(k->group, group))
                continue;
            if (pass == 0) {
                add_version(versions, group, k->version);
                if (!preferred)
                    preferred = k->version;
            } else {
                for (const struct fatia_kind_version *o = k->others; o && o->version; o++)
                    add_version(versions, group, o->version);
            }
        }
    }
    if (!json_array_size(versions)) {
        json_decref(versions);
        return NULL;
    }
    snprintf(gv, sizeof(gv), "%s/%s", group, preferred);
    g = json_pack("{s:s,s:s,s:s,s:o,s:{s:s,s:s}}", "kind", "APIGroup", "apiVersion", "v1", "name",
                  group, "versions", versions, "preferredVersion", "groupVersion", gv, "version",
                  preferred);
    return g;
}

json_t *fatia_api_discovery_groups(void)
{
    json_t *groups = json_array();

    for (size_t i = 0; fatia_kind_at(i); i++) {
        const char *g = fatia_kind_at(i)->group;
        bool seen = false;
        if (!g[0])
            continue;
        for (size_t j = 0; j < i; j++)
            seen |= !strcmp(fatia_kind_at(j)->group, g);
        if (seen)
            continue;
        json_t *grp = fatia_api_discovery_group(g);
        if (grp) {
            json_object_del(grp, "kind");
            json_object_del(grp, "apiVersion");
            json_array_append_new(groups, grp);
        }
    }
    for (int i = 0; i < 2; i++) {
        json_t *a = fatia_api_discovery_group(i ? "authentication.k8s.io" : "authorization.k8s.io");
        json_object_del(a, "kind");
        json_object_del(a, "apiVersion");
        json_array_append_new(groups, a);
    }
    return json_pack("{s:s,s:s,s:o}", "kind", "APIGroupList", "apiVersion", "v1", "groups", groups);
}
