/*
 * rbac/rbac.c: RBAC evaluation and the escalation check (see rbac.h).
 *
 * Model (kube-apiserver's plugin/pkg/auth/authorizer/rbac/rbac.go and
 * pkg/registry/rbac/validation/{rule.go,policy_comparator.go}):
 *   - a request in namespace N is allowed when some ClusterRoleBinding, or some RoleBinding of N,
 *     names the user (User by name, Group by one of the user's groups, ServiceAccount by the
 *     username system:serviceaccount:NS:NAME, NS defaulting to the binding's namespace), and
 *     some rule of the role it refers to allows the request; a request at the cluster scope (or
 *     across every namespace) sees only ClusterRoleBindings;
 *   - a rule allows a resource request when its verbs hold "*" or the verb, its apiGroups "*" or
 *     the group, its resources "*", the resource ("pods"), the resource/subresource
 *     ("pods/status") or "* /subresource" (no space), and its resourceNames are empty or hold the
 *     name; a non-resource request when its verbs match and a nonResourceURL is "*", the path,
 *     or a prefix ending in "*". Comparisons are exact (case included), as upstream's;
 *   - a ClusterRole with an aggregationRule has the rules of every ClusterRole one of its
 *     selectors matches (transitively, as the aggregation controller's repeated passes give),
 *     resolved at evaluation: a ClusterRole labelled to aggregate takes effect at once.
 * Invariant: denying is the default; a malformed rule, a binding to a missing role, a subject of
 * an unknown kind grant nothing. The function reads only its arguments and the source.
 *
 * Choices rejected: caching the resolved rules per user (the source is the cache; a stale copy
 * would keep a revoked grant); a deny list (RBAC has none: tenant rules that no grant lifts are
 * admission plugins above it, controller/tenancy.c).
 */
#include "base/compat.h"

#include "rbac/rbac.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "model/selector.h"

#define SA_PREFIX     "system:serviceaccount:"
#define MAX_AGG_DEPTH 8

static bool nonempty(const char *s)
{
    return s && *s;
}

/* Does the JSON string array hold s? */
static bool has(const json_t *arr, const char *s)
{
    const json_t *v;
    size_t i;

    json_array_foreach(arr, i, v)
    {
        const char *t = json_string_value(v);
        if (t && !strcmp(t, s))
            return true;
    }
    return false;
}

static bool verb_matches(const json_t *rule, const char *verb)
{
    const json_t *verbs = json_object_get(rule, "verbs");

    return has(verbs, "*") || has(verbs, verb);
}

static bool group_matches(const json_t *rule, const char *group)
{
    const json_t *g = json_object_get(rule, "apiGroups");

    return has(g, "*") || has(g, group ? group : "");
}

static bool resource_matches(const json_t *rule, const char *res, const char *sub)
{
    const json_t *v;
    char combined[512];
    size_t i;

    if (nonempty(sub))
        snprintf(combined, sizeof(combined), "%s/%s", res, sub);
    else
        snprintf(combined, sizeof(combined), "%s", res);
    json_array_foreach(json_object_get(rule, "resources"), i, v)
    {
        const char *r = json_string_value(v);
        if (!r)
            continue;
        if (!strcmp(r, "*") || !strcmp(r, combined))
            return true;
        if (nonempty(sub) && !strncmp(r, "*/", 2) && !strcmp(r + 2, sub))
            return true;
    }
    return false;
}

static bool name_matches(const json_t *rule, const char *name)
{
    const json_t *names = json_object_get(rule, "resourceNames");

    if (!json_array_size(names))
        return true;
    return nonempty(name) && has(names, name);
}

static bool url_matches(const json_t *rule, const char *path)
{
    const json_t *v;
    size_t i;

    json_array_foreach(json_object_get(rule, "nonResourceURLs"), i, v)
    {
        const char *u = json_string_value(v);
        size_t n;
        if (!u)
            continue;
        if (!strcmp(u, "*") || !strcmp(u, path))
            return true;
        n = strlen(u);
        if (n && u[n - 1] == '*' && !strncmp(path, u, n - 1))
            return true;
    }
    return false;
}

bool fatia_rbac_rule_allows(const json_t *rule, const struct fatia_rbac_attrs *a)
{
    if (!json_is_object(rule) || !a->verb)
        return false;
    if (a->resource_request)
        return a->resource && verb_matches(rule, a->verb) && group_matches(rule, a->group) &&
               resource_matches(rule, a->resource, a->subresource) && name_matches(rule, a->name);
    return a->path && verb_matches(rule, a->verb) && url_matches(rule, a->path);
}

static bool in_groups(const char *const *groups, const char *g)
{
    for (const char *const *p = groups; p && *p; p++)
        if (!strcmp(*p, g))
            return true;
    return false;
}

/* Does subject s apply to the user? ns: the binding's namespace (NULL for a ClusterRoleBinding). */
static bool subject_applies(const json_t *s, const char *ns, const char *user,
                            const char *const *groups)
{
    const char *kind = fatia_json_str(s, "kind"), *name = fatia_json_str(s, "name");

    if (!kind || !name)
        return false;
    if (!strcmp(kind, "User"))
        return user && !strcmp(name, user);
    if (!strcmp(kind, "Group"))
        return in_groups(groups, name);
    if (!strcmp(kind, "ServiceAccount")) {
        const char *sns = fatia_json_str(s, "namespace");
        char want[600];
        if (!nonempty(sns))
            sns = ns;
        if (!nonempty(sns) || !user)
            return false;
        snprintf(want, sizeof(want), SA_PREFIX "%s:%s", sns, name);
        return !strcmp(want, user);
    }
    return false;
}

/* The first subject of the binding that applies, or NULL. */
static const json_t *applying_subject(const json_t *binding, const char *ns, const char *user,
                                      const char *const *groups)
{
    const json_t *s;
    size_t i;

    json_array_foreach(json_object_get(binding, "subjects"), i, s)
    {
        if (subject_applies(s, ns, user, groups))
            return s;
    }
    return NULL;
}

bool fatia_rbac_binding_applies(const json_t *binding, const char *ns, const char *user,
                                const char *const *groups)
{
    return applying_subject(binding, ns, user, groups) != NULL;
}

/* ---- roles and aggregation ---- */

struct agg {
    const struct fatia_rbac_source *src;
    const json_t *selectors; /* the aggregating role's clusterRoleSelectors */
    const json_t *self;
    json_t *out;
    int depth;
    int err;
};

static int role_rules_depth(const struct fatia_rbac_source *src, const json_t *role, json_t *out,
                            int depth);

static int agg_one(void *fa, const json_t *role)
{
    struct agg *g = fa;
    const json_t *labels = json_object_get(json_object_get(role, "metadata"), "labels");
    const json_t *sel;
    size_t i;

    if (role == g->self)
        return 0;
    json_array_foreach(g->selectors, i, sel)
    {
        struct fatia_selector *s = NULL;
        char why[128];
        bool m;
        if (fatia_selector_from_json(sel, &s, why, sizeof(why)) < 0)
            continue; /* a bad selector selects nothing */
        m = fatia_selector_matches(s, labels);
        fatia_selector_free(s);
        if (m) {
            int r = role_rules_depth(g->src, role, g->out, g->depth + 1);
            if (r < 0) {
                g->err = r;
                return 1;
            }
            break;
        }
    }
    return 0;
}

static int role_rules_depth(const struct fatia_rbac_source *src, const json_t *role, json_t *out,
                            int depth)
{
    const json_t *agg = json_object_get(role, "aggregationRule");
    const json_t *sels = json_object_get(agg, "clusterRoleSelectors");
    const json_t *rule;
    size_t i;

    if (json_array_size(sels)) {
        struct agg g = {src, sels, role, out, depth, 0};
        if (depth >= MAX_AGG_DEPTH || !src->each_cluster_role)
            return 0;
        src->each_cluster_role(src->arg, agg_one, &g);
        return g.err;
    }
    json_array_foreach(json_object_get(role, "rules"), i, rule)
    {
        if (json_array_append(out, (json_t *)rule) < 0) /* shared: rules are never modified */
            return -ENOMEM;
    }
    return 0;
}

int fatia_rbac_role_rules(const struct fatia_rbac_source *src, const json_t *role, json_t *out)
{
    return role_rules_depth(src, role, out, 0);
}

/* The role a binding refers to (ns: the binding's namespace; NULL for a ClusterRoleBinding). */
static const json_t *binding_role(const struct fatia_rbac_source *src, const json_t *binding,
                                  const char *ns, const char **ret_kind, const char **ret_name)
{
    const json_t *ref = json_object_get(binding, "roleRef");
    const char *kind = fatia_json_str(ref, "kind"), *name = fatia_json_str(ref, "name");

    *ret_kind = kind;
    *ret_name = name;
    if (!kind || !name)
        return NULL;
    if (!strcmp(kind, "ClusterRole"))
        return src->role(src->arg, NULL, name);
    if (!strcmp(kind, "Role") && nonempty(ns))
        return src->role(src->arg, ns, name);
    return NULL;
}

/* ---- evaluation ---- */

struct visit {
    const struct fatia_rbac_source *src;
    const struct fatia_rbac_attrs *a;
    const char *ns; /* of the bindings being visited; NULL for ClusterRoleBindings */
    char *why;
    size_t why_n;
    json_t *collect; /* rules_for: append every rule here instead of testing */
    int err;
};

static int visit_binding(void *fa, const json_t *binding)
{
    struct visit *v = fa;
    const json_t *subject = applying_subject(binding, v->ns, v->a->user, v->a->groups);
    const json_t *role, *rule;
    const char *kind, *name;
    json_t *rules;
    size_t i;
    bool ok = false;

    if (!subject)
        return 0;
    role = binding_role(v->src, binding, v->ns, &kind, &name);
    if (!role)
        return 0;
    rules = json_array();
    if (!rules || fatia_rbac_role_rules(v->src, role, rules) < 0) {
        json_decref(rules);
        v->err = -ENOMEM;
        return 1;
    }
    if (v->collect) {
        int r = json_array_extend(v->collect, rules);
        json_decref(rules);
        if (r < 0) {
            v->err = -ENOMEM;
            return 1;
        }
        return 0;
    }
    json_array_foreach(rules, i, rule)
    {
        if (fatia_rbac_rule_allows(rule, v->a)) {
            ok = true;
            break;
        }
    }
    json_decref(rules);
    if (!ok)
        return 0;
    if (v->why && v->why_n) {
        const char *sk = fatia_json_str(subject, "kind"), *sn = fatia_json_str(subject, "name");
        const char *sns = fatia_json_str(subject, "namespace");
        const char *bname = fatia_json_str(json_object_get(binding, "metadata"), "name");
        char who[600];
        if (!strcmp(sk, "ServiceAccount"))
            snprintf(who, sizeof(who), "%s \"%s/%s\"", sk, nonempty(sns) ? sns : v->ns, sn);
        else
            snprintf(who, sizeof(who), "%s \"%s\"", sk, sn);
        if (v->ns)
            snprintf(v->why, v->why_n, "RBAC: allowed by RoleBinding \"%s/%s\" of %s \"%s\" to %s",
                     v->ns, bname ? bname : "", kind, name, who);
        else
            snprintf(v->why, v->why_n,
                     "RBAC: allowed by ClusterRoleBinding \"%s\" of %s \"%s\" to %s",
                     bname ? bname : "", kind, name, who);
    }
    return 1;
}

bool fatia_rbac_allows(const struct fatia_rbac_source *src, const struct fatia_rbac_attrs *a,
                       char *why, size_t why_n)
{
    struct visit v = {src, a, NULL, why, why_n, NULL, 0};

    if (why && why_n)
        why[0] = '\0';
    if (src->each_binding(src->arg, NULL, visit_binding, &v) && !v.err)
        return true;
    if (v.err || !a->resource_request || !nonempty(a->ns))
        return false;
    v.ns = a->ns;
    return src->each_binding(src->arg, a->ns, visit_binding, &v) && !v.err;
}

int fatia_rbac_rules_for(const struct fatia_rbac_source *src, const char *user,
                         const char *const *groups, const char *ns, json_t *out)
{
    struct fatia_rbac_attrs a = {.user = user, .groups = groups};
    struct visit v = {src, &a, NULL, NULL, 0, out, 0};

    src->each_binding(src->arg, NULL, visit_binding, &v);
    if (v.err || !nonempty(ns))
        return v.err;
    v.ns = ns;
    src->each_binding(src->arg, ns, visit_binding, &v);
    return v.err;
}

/* ---- coverage (escalation) ---- */

static bool covers_all(const json_t *set, const json_t *want)
{
    const json_t *v;
    size_t i;

    if (has(set, "*"))
        return true;
    json_array_foreach(want, i, v)
    {
        const char *s = json_string_value(v);
        if (!s || !has(set, s))
            return false;
    }
    return true;
}

/* upstream's resourceCoversAll */
static bool resources_cover(const json_t *set, const json_t *want)
{
    const json_t *v;
    size_t i;

    if (has(set, "*"))
        return true;
    json_array_foreach(want, i, v)
    {
        const char *p = json_string_value(v), *slash;
        char star[512];
        if (!p)
            return false;
        if (has(set, p))
            continue;
        slash = strchr(p, '/');
        if (!slash)
            return false;
        snprintf(star, sizeof(star), "*/%s", slash + 1);
        if (!has(set, star))
            return false;
    }
    return true;
}

static bool url_covers(const char *owner, const char *sub)
{
    size_t n = strlen(owner);

    if (!strcmp(owner, sub))
        return true;
    return n && owner[n - 1] == '*' && !strncmp(sub, owner, n - 1);
}

static bool urls_cover(const json_t *set, const json_t *want)
{
    const json_t *v, *o;
    size_t i, j;

    json_array_foreach(want, i, v)
    {
        bool ok = false;
        json_array_foreach(set, j, o)
        {
            if (json_string_value(o) && json_string_value(v) &&
                url_covers(json_string_value(o), json_string_value(v))) {
                ok = true;
                break;
            }
        }
        if (!ok)
            return false;
    }
    return true;
}

/* upstream's ruleCovers, for one broken-down servant rule */
static bool rule_covers(const json_t *owner, const json_t *sub)
{
    const json_t *on = json_object_get(owner, "resourceNames");
    const json_t *sn = json_object_get(sub, "resourceNames");
    bool names;

    if (!covers_all(json_object_get(owner, "verbs"), json_object_get(sub, "verbs")))
        return false;
    if (json_array_size(json_object_get(sub, "nonResourceURLs")))
        return urls_cover(json_object_get(owner, "nonResourceURLs"),
                          json_object_get(sub, "nonResourceURLs"));
    if (!json_array_size(json_object_get(owner, "resources")))
        return false;
    names =
        !json_array_size(sn) ? !json_array_size(on) : !json_array_size(on) || covers_all(on, sn);
    return names &&
           covers_all(json_object_get(owner, "apiGroups"), json_object_get(sub, "apiGroups")) &&
           resources_cover(json_object_get(owner, "resources"), json_object_get(sub, "resources"));
}

static json_t *one(const json_t *v)
{
    return json_pack("[O]", v);
}

/* upstream's BreakdownRule: one verb, group, resource and name (or URL) each, appended to out */
static int breakdown(const json_t *rule, json_t *out)
{
    const json_t *g, *r, *v, *n;
    size_t gi, ri, vi, ni;
    int e = 0;

    json_array_foreach(json_object_get(rule, "apiGroups"), gi, g)
    {
        json_array_foreach(json_object_get(rule, "resources"), ri, r)
        {
            json_array_foreach(json_object_get(rule, "verbs"), vi, v)
            {
                const json_t *names = json_object_get(rule, "resourceNames");
                if (json_array_size(names)) {
                    json_array_foreach(names, ni, n)
                    {
                        e |= json_array_append_new(
                            out, json_pack("{s:o,s:o,s:o,s:o}", "apiGroups", one(g), "resources",
                                           one(r), "resourceNames", one(n), "verbs", one(v)));
                    }
                } else {
                    e |=
                        json_array_append_new(out, json_pack("{s:o,s:o,s:o}", "apiGroups", one(g),
                                                             "resources", one(r), "verbs", one(v)));
                }
            }
        }
    }
    json_array_foreach(json_object_get(rule, "nonResourceURLs"), ri, r)
    {
        json_array_foreach(json_object_get(rule, "verbs"), vi, v)
        {
            e |= json_array_append_new(
                out, json_pack("{s:o,s:o}", "nonResourceURLs", one(r), "verbs", one(v)));
        }
    }
    return e ? -ENOMEM : 0;
}

bool fatia_rbac_covers(const json_t *owner, const json_t *servant, json_t **ret_missing)
{
    json_t *parts = json_array(), *missing = json_array();
    const json_t *rule, *p, *o;
    size_t i, j;
    bool all = true;

    if (!parts || !missing)
        goto oom;
    json_array_foreach(servant, i, rule)
    {
        if (breakdown(rule, parts) < 0)
            goto oom;
    }
    json_array_foreach(parts, i, p)
    {
        bool ok = false;
        json_array_foreach(owner, j, o)
        {
            if (rule_covers(o, p)) {
                ok = true;
                break;
            }
        }
        if (!ok) {
            all = false;
            json_array_append(missing, (json_t *)p);
        }
    }
    json_decref(parts);
    if (ret_missing)
        *ret_missing = missing;
    else
        json_decref(missing);
    return all;

oom:
    json_decref(parts);
    json_decref(missing);
    if (ret_missing)
        *ret_missing = NULL;
    return false;
}

/* Go's %q of a []string: ["a" "b"] */
static void put_list(char *buf, size_t n, size_t *at, const char *label, const json_t *arr,
                     bool *first)
{
    const json_t *v;
    size_t i;

    if (!json_array_size(arr) || *at >= n)
        return;
    *at += (size_t)snprintf(buf + *at, n - *at, "%s%s:[", *first ? "" : ", ", label);
    *first = false;
    json_array_foreach(arr, i, v)
    {
        if (*at >= n)
            return;
        *at += (size_t)snprintf(buf + *at, n - *at, "%s\"%s\"", i ? " " : "",
                                json_string_value(v) ? json_string_value(v) : "");
    }
    if (*at < n)
        *at += (size_t)snprintf(buf + *at, n - *at, "]");
}

void fatia_rbac_rule_string(const json_t *rule, char *buf, size_t n)
{
    size_t at = 0;
    bool first = true;

    if (!n)
        return;
    at += (size_t)snprintf(buf, n, "{");
    put_list(buf, n, &at, "APIGroups", json_object_get(rule, "apiGroups"), &first);
    put_list(buf, n, &at, "Resources", json_object_get(rule, "resources"), &first);
    put_list(buf, n, &at, "ResourceNames", json_object_get(rule, "resourceNames"), &first);
    put_list(buf, n, &at, "NonResourceURLs", json_object_get(rule, "nonResourceURLs"), &first);
    put_list(buf, n, &at, "Verbs", json_object_get(rule, "verbs"), &first);
    if (at < n)
        snprintf(buf + at, n - at, "}");
}
