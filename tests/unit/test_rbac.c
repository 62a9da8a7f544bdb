/*
 * tests/unit/test_rbac.c: rbac/rbac.c.
 *
 * Tables transcribed from kubernetes plugin/pkg/auth/authorizer/rbac/rbac_test.go (TestAuthorizer,
 * TestRuleMatches; commit 00bdb3fa) and pkg/registry/rbac/validation/policy_comparator_test.go
 * (every TestCovers* case and TestNonResourceURLCovers), with fatia's own cases after them:
 * ServiceAccount subjects, resourceNames, aggregation (upstream tests it in the aggregation
 * controller: pkg/controller/clusterroleaggregation), and the rule strings of escalation messages.
 * Upstream's newRule("verbs", "groups", "resources", "urls") splits each argument at commas and
 * sets all four fields, even to [""], which the helper below does too.
 */
#include "base/compat.h"

#include <errno.h>
/* cmocka.h needs these before it; keep clang-format from sorting it first. */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <stdio.h>
#include <string.h>

#include "rbac/rbac.h"

/* ---- a source over JSON arrays ---- */

struct tsrc {
    json_t *roles, *role_bindings, *cluster_roles, *cluster_role_bindings;
};

static const char *ns_of(const json_t *o)
{
    const char *s = json_string_value(json_object_get(json_object_get(o, "metadata"), "namespace"));
    return s ? s : "";
}

static const char *name_of(const json_t *o)
{
    const char *s = json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
    return s ? s : "";
}

static int t_each_binding(void *arg, const char *ns, int (*fn)(void *, const json_t *), void *fa)
{
    struct tsrc *t = arg;
    const json_t *b;
    size_t i;

    json_array_foreach(ns ? t->role_bindings : t->cluster_role_bindings, i, b)
    {
        if (ns && strcmp(ns_of(b), ns))
            continue;
        int r = fn(fa, b);
        if (r)
            return r;
    }
    return 0;
}

static const json_t *t_role(void *arg, const char *ns, const char *name)
{
    struct tsrc *t = arg;
    const json_t *r;
    size_t i;

    json_array_foreach(ns ? t->roles : t->cluster_roles, i, r)
    {
        if ((!ns || !strcmp(ns_of(r), ns)) && !strcmp(name_of(r), name))
            return r;
    }
    return NULL;
}

static int t_each_cluster_role(void *arg, int (*fn)(void *, const json_t *), void *fa)
{
    struct tsrc *t = arg;
    const json_t *r;
    size_t i;

    json_array_foreach(t->cluster_roles, i, r)
    {
        int x = fn(fa, r);
        if (x)
            return x;
    }
    return 0;
}

static json_t *split(const char *s)
{
    json_t *a = json_array();
    char buf[512], *save = NULL, *p;

    snprintf(buf, sizeof(buf), "%s", s);
    if (!*s) {
        json_array_append_new(a, json_string(""));
        return a;
    }
    for (p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save))
        json_array_append_new(a, json_string(p));
    return a;
}

/* upstream's newRule */
static json_t *rule(const char *verbs, const char *groups, const char *resources, const char *urls)
{
    return json_pack("{s:o,s:o,s:o,s:o}", "verbs", split(verbs), "apiGroups", split(groups),
                     "resources", split(resources), "nonResourceURLs", split(urls));
}

static json_t *role(const char *name, const char *ns, json_t *rules)
{
    json_t *m = json_pack("{s:s}", "name", name);
    if (ns)
        json_object_set_new(m, "namespace", json_string(ns));
    return json_pack("{s:o,s:o}", "metadata", m, "rules", rules);
}

/* subjects: "User:admin" "Group:admins" "ServiceAccount:ns/name" (ns optional) */
static json_t *subjects(const char *const *s)
{
    json_t *a = json_array();
    for (; *s; s++) {
        const char *c = strchr(*s, ':');
        char kind[32];
        snprintf(kind, sizeof(kind), "%.*s", (int)(c - *s), *s);
        json_t *o = json_pack("{s:s}", "kind", kind);
        const char *slash = strchr(c + 1, '/');
        if (!strcmp(kind, "ServiceAccount") && slash) {
            json_object_set_new(o, "namespace", json_stringn(c + 1, (size_t)(slash - c - 1)));
            json_object_set_new(o, "name", json_string(slash + 1));
        } else {
            json_object_set_new(o, "name", json_string(c + 1));
        }
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *binding(const char *ns, const char *kind, const char *role_name,
                       const char *const *subj)
{
    json_t *m = json_pack("{s:s}", "name", "b");
    if (ns)
        json_object_set_new(m, "namespace", json_string(ns));
    return json_pack("{s:o,s:{s:s,s:s,s:s},s:o}", "metadata", m, "roleRef", "apiGroup",
                     "rbac.authorization.k8s.io", "kind", kind, "name", role_name, "subjects",
                     subjects(subj));
}

static struct fatia_rbac_source source(struct tsrc *t)
{
    if (!t->roles)
        t->roles = json_array();
    if (!t->role_bindings)
        t->role_bindings = json_array();
    if (!t->cluster_roles)
        t->cluster_roles = json_array();
    if (!t->cluster_role_bindings)
        t->cluster_role_bindings = json_array();
    return (struct fatia_rbac_source){t, t_each_binding, t_role, t_each_cluster_role};
}

static void tsrc_release(struct tsrc *t)
{
    json_decref(t->roles);
    json_decref(t->role_bindings);
    json_decref(t->cluster_roles);
    json_decref(t->cluster_role_bindings);
}

/* upstream's defaultAttributes{user, groups, verb, resource, subresource, namespace, apiGroup} */
struct dattr {
    const char *user, *groups, *verb, *resource, *sub, *ns, *group;
};

static bool check(const struct fatia_rbac_source *src, const struct dattr *d)
{
    char gbuf[256], *save = NULL, *p;
    const char *groups[8] = {0};
    size_t n = 0;

    snprintf(gbuf, sizeof(gbuf), "%s", d->groups);
    for (p = strtok_r(gbuf, ",", &save); p && n < 7; p = strtok_r(NULL, ",", &save))
        groups[n++] = p;
    struct fatia_rbac_attrs a = {.user = d->user,
                                 .groups = groups,
                                 .verb = d->verb,
                                 .resource_request = true,
                                 .group = d->group,
                                 .resource = d->resource,
                                 .subresource = d->sub,
                                 .ns = d->ns};
    return fatia_rbac_allows(src, &a, NULL, 0);
}

static const char *const admin_subjects[] = {"User:admin", "Group:admins", NULL};

static void expect(const struct fatia_rbac_source *src, const struct dattr *pass, size_t np,
                   const struct dattr *fail, size_t nf, int line)
{
    for (size_t i = 0; i < np; i++)
        if (!check(src, &pass[i])) {
            fprintf(stderr, "line %d: incorrectly restricted %s %s %s/%s in %s\n", line,
                    pass[i].user, pass[i].verb, pass[i].resource, pass[i].sub, pass[i].ns);
            fail_msg("restricted");
        }
    for (size_t i = 0; i < nf; i++)
        if (check(src, &fail[i])) {
            fprintf(stderr, "line %d: incorrectly passed %s %s %s/%s in %s\n", line, fail[i].user,
                    fail[i].verb, fail[i].resource, fail[i].sub, fail[i].ns);
            fail_msg("passed");
        }
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* TestAuthorizer, case 0 */
static void test_authorizer_namespace(void **state)
{
    (void)state;
    struct tsrc t = {0};
    struct fatia_rbac_source s = source(&t);
    json_array_append_new(t.cluster_roles,
                          role("admin", NULL, json_pack("[o]", rule("*", "*", "*", "*"))));
    json_array_append_new(t.role_bindings, binding("ns1", "ClusterRole", "admin", admin_subjects));
    struct dattr pass[] = {
        {"admin", "", "get", "Pods", "", "ns1", ""},
        {"admin", "", "watch", "Pods", "", "ns1", ""},
        {"admin", "group1", "watch", "Foobar", "", "ns1", ""},
        {"joe", "admins", "watch", "Foobar", "", "ns1", ""},
        {"joe", "group1,admins", "watch", "Foobar", "", "ns1", ""},
    };
    struct dattr fail[] = {
        {"admin", "", "GET", "Pods", "", "ns2", ""},
        {"admin", "", "GET", "Nodes", "", "", ""},
        {"admin", "admins", "GET", "Pods", "", "ns2", ""},
        {"admin", "admins", "GET", "Nodes", "", "", ""},
    };
    expect(&s, pass, N(pass), fail, N(fail), __LINE__);
    tsrc_release(&t);
}

static bool nonres(const struct fatia_rbac_source *src, const char *user, const char *group,
                   const char *verb, const char *path)
{
    const char *groups[] = {group, NULL};
    struct fatia_rbac_attrs a = {.user = user, .groups = groups, .verb = verb, .path = path};
    return fatia_rbac_allows(src, &a, NULL, 0);
}

/* TestAuthorizer, case 1: non-resource URLs */
static void test_authorizer_nonresource(void **state)
{
    (void)state;
    struct tsrc t = {0};
    struct fatia_rbac_source s = source(&t);
    json_array_append_new(t.cluster_roles, role("non-resource-url-getter", NULL,
                                                json_pack("[o]", rule("get", "", "", "/apis"))));
    json_array_append_new(t.cluster_roles, role("non-resource-url", NULL,
                                                json_pack("[o]", rule("*", "", "", "/apis"))));
    json_array_append_new(t.cluster_roles, role("non-resource-url-prefix", NULL,
                                                json_pack("[o]", rule("get", "", "", "/apis/*"))));
    json_array_append_new(t.cluster_role_bindings,
                          binding(NULL, "ClusterRole", "non-resource-url-getter",
                                  (const char *const[]){"User:foo", "Group:bar", NULL}));
    json_array_append_new(t.cluster_role_bindings,
                          binding(NULL, "ClusterRole", "non-resource-url",
                                  (const char *const[]){"User:admin", "Group:admin", NULL}));
    json_array_append_new(t.cluster_role_bindings,
                          binding(NULL, "ClusterRole", "non-resource-url-prefix",
                                  (const char *const[]){"User:prefixed", "Group:prefixed", NULL}));
    assert_true(nonres(&s, "foo", NULL, "get", "/apis"));
    assert_true(nonres(&s, "", "bar", "get", "/apis"));
    assert_true(nonres(&s, "admin", NULL, "get", "/apis"));
    assert_true(nonres(&s, "", "admin", "get", "/apis"));
    assert_true(nonres(&s, "admin", NULL, "watch", "/apis"));
    assert_true(nonres(&s, "", "admin", "watch", "/apis"));
    assert_true(nonres(&s, "prefixed", NULL, "get", "/apis/v1"));
    assert_true(nonres(&s, "", "prefixed", "get", "/apis/v1"));
    assert_true(nonres(&s, "prefixed", NULL, "get", "/apis/v1/foobar"));
    assert_true(nonres(&s, "", "prefixed", "get", "/apis/v1/foorbar"));
    /* wrong verb */
    assert_false(nonres(&s, "foo", NULL, "watch", "/apis"));
    assert_false(nonres(&s, "", "bar", "watch", "/apis"));
    /* wrong path */
    assert_false(nonres(&s, "foo", NULL, "get", "/api/v1"));
    assert_false(nonres(&s, "", "bar", "get", "/api/v1"));
    assert_false(nonres(&s, "admin", NULL, "get", "/api/v1"));
    assert_false(nonres(&s, "", "admin", "get", "/api/v1"));
    /* not covered by prefix */
    assert_false(nonres(&s, "prefixed", NULL, "get", "/api/v1"));
    assert_false(nonres(&s, "", "prefixed", "get", "/api/v1"));
    tsrc_release(&t);
}

/* TestAuthorizer, cases 2 and 3: subresource resolution */
static void test_authorizer_subresources(void **state)
{
    (void)state;
    for (int c = 0; c < 2; c++) {
        struct tsrc t = {0};
        struct fatia_rbac_source s = source(&t);
        json_array_append_new(
            t.cluster_roles,
            role("admin", NULL, json_pack("[o]", rule("*", "*", c ? "pods/status" : "pods", "*"))));
        json_array_append_new(t.role_bindings,
                              binding("ns1", "ClusterRole", "admin", admin_subjects));
        struct dattr plain = {"admin", "", "get", "pods", "", "ns1", ""};
        struct dattr status = {"admin", "", "get", "pods", "status", "ns1", ""};
        if (c)
            expect(&s, &status, 1, &plain, 1, __LINE__);
        else
            expect(&s, &plain, 1, &status, 1, __LINE__);
        tsrc_release(&t);
    }
}

static bool rq(const json_t *r, const char *verb, const char *group, const char *res,
               const char *sub)
{
    struct fatia_rbac_attrs a = {.verb = verb,
                                 .resource_request = true,
                                 .group = group,
                                 .resource = res,
                                 .subresource = sub};
    return fatia_rbac_rule_allows(r, &a);
}

static bool nrq(const json_t *r, const char *verb, const char *url)
{
    struct fatia_rbac_attrs a = {.verb = verb, .path = url};
    return fatia_rbac_rule_allows(r, &a);
}

static json_t *mk(const char *verbs, const char *groups, const char *resources, const char *urls)
{
    json_t *r = json_pack("{s:o}", "verbs", split(verbs));
    if (groups)
        json_object_set_new(r, "apiGroups", split(groups));
    if (resources)
        json_object_set_new(r, "resources", split(resources));
    if (urls)
        json_object_set_new(r, "nonResourceURLs", split(urls));
    return r;
}

/* TestRuleMatches */
static void test_rule_matches(void **state)
{
    (void)state;
    json_t *r;
    static const char *const vs[] = {"verb1", "verb2"}, *const gs[] = {"group1", "group2"},
                             *const rs[] = {"resource1", "resource2"};

    /* star verb, exact match other */
    r = mk("*", "group1", "resource1", NULL);
    for (int v = 0; v < 2; v++)
        for (int g = 0; g < 2; g++)
            for (int x = 0; x < 2; x++)
                assert_int_equal(rq(r, vs[v], gs[g], rs[x], NULL), g == 0 && x == 0);
    json_decref(r);
    /* star group, exact match other */
    r = mk("verb1", "*", "resource1", NULL);
    for (int v = 0; v < 2; v++)
        for (int g = 0; g < 2; g++)
            for (int x = 0; x < 2; x++)
                assert_int_equal(rq(r, vs[v], gs[g], rs[x], NULL), v == 0 && x == 0);
    json_decref(r);
    /* star resource, exact match other */
    r = mk("verb1", "group1", "*", NULL);
    for (int v = 0; v < 2; v++)
        for (int g = 0; g < 2; g++)
            for (int x = 0; x < 2; x++)
                assert_int_equal(rq(r, vs[v], gs[g], rs[x], NULL), v == 0 && g == 0);
    json_decref(r);
    /* tuple expansion */
    r = mk("verb1,verb2", "group1,group2", "resource1,resource2", NULL);
    for (int v = 0; v < 2; v++)
        for (int g = 0; g < 2; g++)
            for (int x = 0; x < 2; x++)
                assert_true(rq(r, vs[v], gs[g], rs[x], NULL));
    json_decref(r);
    /* subresource expansion */
    r = mk("*", "*", "resource1/subresource1", NULL);
    for (int v = 0; v < 2; v++) {
        assert_true(rq(r, vs[v], "group1", "resource1", "subresource1"));
        assert_false(rq(r, vs[v], "group2", "resource1", "subresource2"));
        assert_false(rq(r, vs[v], "group1", "resource2", "subresource1"));
        assert_false(rq(r, vs[v], "group2", "resource2", "subresource1"));
    }
    json_decref(r);
    /* star nonresource, exact match other */
    r = mk("verb1", NULL, NULL, "*");
    static const char *const urls[] = {"/foo", "/foo/bar", "/foo/baz", "/foo/bar/one",
                                       "/foo/baz/one"};
    for (size_t i = 0; i < N(urls); i++) {
        assert_true(nrq(r, "verb1", urls[i]));
        assert_false(nrq(r, "verb2", urls[i]));
    }
    json_decref(r);
    /* star nonresource subpath */
    r = mk("verb1", NULL, NULL, "/foo/*");
    assert_false(nrq(r, "verb1", "/foo"));
    assert_true(nrq(r, "verb1", "/foo/bar"));
    assert_true(nrq(r, "verb1", "/foo/baz"));
    assert_true(nrq(r, "verb1", "/foo/bar/one"));
    assert_true(nrq(r, "verb1", "/foo/baz/one"));
    assert_false(nrq(r, "verb1", "/notfoo"));
    assert_false(nrq(r, "verb1", "/notfoo/bar"));
    assert_false(nrq(r, "verb1", "/notfoo/baz"));
    assert_false(nrq(r, "verb1", "/notfoo/bar/one"));
    assert_false(nrq(r, "verb1", "/notfoo/baz/one"));
    json_decref(r);
    /* star verb, exact nonresource */
    r = mk("*", NULL, NULL, "/foo,/foo/bar/one");
    for (int v = 0; v < 2; v++) {
        assert_true(nrq(r, vs[v], "/foo"));
        assert_false(nrq(r, vs[v], "/foo/bar"));
        assert_false(nrq(r, vs[v], "/foo/baz"));
        assert_true(nrq(r, vs[v], "/foo/bar/one"));
        assert_false(nrq(r, vs[v], "/foo/baz/one"));
    }
    json_decref(r);
}

/* ---- policy_comparator_test.go ---- */

struct cover_case {
    const char *name, *owner, *servant;
    bool covered;
    const char *uncovered; /* JSON array */
};

static const struct cover_case cover_cases[] = {
    {"ExactMatch", "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"get\"],\"resources\":[\"builds\"]}]",
     "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"get\"],\"resources\":[\"builds\"]}]", true, "[]"},
    {"MultipleRulesCoveringSingleRule",
     "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"delete\"],\"resources\":[\"deployments\"]},"
     "{\"apiGroups\":[\"v1\"],\"verbs\":[\"delete\"],\"resources\":[\"builds\"]},"
     "{\"apiGroups\":[\"v1\"],\"verbs\":[\"update\"],\"resources\":[\"builds\",\"deployments\"]}]",
     "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"delete\",\"update\"],\"resources\":[\"builds\","
     "\"deployments\"]}]",
     true, "[]"},
    {"MultipleAPIGroupsCoveringSingleRule",
     "[{\"apiGroups\":[\"group1\"],\"verbs\":[\"delete\"],\"resources\":[\"deployments\"]},"
     "{\"apiGroups\":[\"group1\"],\"verbs\":[\"delete\"],\"resources\":[\"builds\"]},"
     "{\"apiGroups\":[\"group1\"],\"verbs\":[\"update\"],\"resources\":[\"builds\",\"deployments\"]"
     "},"
     "{\"apiGroups\":[\"group2\"],\"verbs\":[\"delete\"],\"resources\":[\"deployments\"]},"
     "{\"apiGroups\":[\"group2\"],\"verbs\":[\"delete\"],\"resources\":[\"builds\"]},"
     "{\"apiGroups\":[\"group2\"],\"verbs\":[\"update\"],\"resources\":[\"builds\",\"deployments\"]"
     "}]",
     "[{\"apiGroups\":[\"group1\",\"group2\"],\"verbs\":[\"delete\",\"update\"],\"resources\":["
     "\"builds\",\"deployments\"]}]",
     true, "[]"},
    {"SingleAPIGroupsCoveringMultiple",
     "[{\"apiGroups\":[\"group1\",\"group2\"],\"verbs\":[\"delete\",\"update\"],\"resources\":["
     "\"builds\",\"deployments\"]}]",
     "[{\"apiGroups\":[\"group1\"],\"verbs\":[\"delete\"],\"resources\":[\"deployments\"]},"
     "{\"apiGroups\":[\"group1\"],\"verbs\":[\"delete\"],\"resources\":[\"builds\"]},"
     "{\"apiGroups\":[\"group1\"],\"verbs\":[\"update\"],\"resources\":[\"builds\",\"deployments\"]"
     "},"
     "{\"apiGroups\":[\"group2\"],\"verbs\":[\"delete\"],\"resources\":[\"deployments\"]},"
     "{\"apiGroups\":[\"group2\"],\"verbs\":[\"delete\"],\"resources\":[\"builds\"]},"
     "{\"apiGroups\":[\"group2\"],\"verbs\":[\"update\"],\"resources\":[\"builds\",\"deployments\"]"
     "}]",
     true, "[]"},
    {"MultipleRulesMissingSingleVerbResourceCombination",
     "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"delete\",\"update\"],\"resources\":[\"builds\","
     "\"deployments\"]},{\"apiGroups\":[\"v1\"],\"verbs\":[\"delete\"],\"resources\":[\"pods\"]}]",
     "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"delete\",\"update\"],\"resources\":[\"builds\","
     "\"deployments\",\"pods\"]}]",
     false, "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"update\"],\"resources\":[\"pods\"]}]"},
    {"APIGroupStarCoveringMultiple",
     "[{\"apiGroups\":[\"*\"],\"verbs\":[\"get\"],\"resources\":[\"roles\"]}]",
     "[{\"apiGroups\":[\"group1\",\"group2\"],\"verbs\":[\"get\"],\"resources\":[\"roles\"]}]",
     true, "[]"},
    {"EnumerationNotCoveringAPIGroupStar",
     "[{\"apiGroups\":[\"dummy-group\"],\"verbs\":[\"get\"],\"resources\":[\"roles\"]}]",
     "[{\"apiGroups\":[\"*\"],\"verbs\":[\"get\"],\"resources\":[\"roles\"]}]", false,
     "[{\"apiGroups\":[\"*\"],\"verbs\":[\"get\"],\"resources\":[\"roles\"]}]"},
    {"APIGroupStarCoveringStar",
     "[{\"apiGroups\":[\"*\"],\"verbs\":[\"get\"],\"resources\":[\"roles\"]}]",
     "[{\"apiGroups\":[\"*\"],\"verbs\":[\"get\"],\"resources\":[\"roles\"]}]", true, "[]"},
    {"VerbStarCoveringMultiple",
     "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"*\"],\"resources\":[\"roles\"]}]",
     "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"watch\",\"list\"],\"resources\":[\"roles\"]}]", true,
     "[]"},
    {"EnumerationNotCoveringVerbStar",
     "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"get\",\"list\",\"watch\",\"create\",\"update\","
     "\"delete\",\"exec\"],\"resources\":[\"roles\"]}]",
     "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"*\"],\"resources\":[\"roles\"]}]", false,
     "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"*\"],\"resources\":[\"roles\"]}]"},
    {"VerbStarCoveringStar",
     "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"*\"],\"resources\":[\"roles\"]}]",
     "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"*\"],\"resources\":[\"roles\"]}]", true, "[]"},
    {"ResourceStarCoveringMultiple",
     "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"get\"],\"resources\":[\"*\"]}]",
     "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"get\"],\"resources\":[\"resourcegroup:deployments\"]}]",
     true, "[]"},
    {"EnumerationNotCoveringResourceStar",
     "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"get\"],\"resources\":[\"roles\","
     "\"resourcegroup:deployments\"]}]",
     "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"get\"],\"resources\":[\"*\"]}]", false,
     "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"get\"],\"resources\":[\"*\"]}]"},
    {"ResourceStarCoveringStar",
     "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"get\"],\"resources\":[\"*\"]}]",
     "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"get\"],\"resources\":[\"*\"]}]", true, "[]"},
    {"ResourceNameEmptyCoveringMultiple",
     "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"get\"],\"resources\":[\"pods\"],\"resourceNames\":[]}]",
     "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"get\"],\"resources\":[\"pods\"],\"resourceNames\":["
     "\"foo\",\"bar\"]}]",
     true, "[]"},
    {"EnumerationNotCoveringResourceNameEmpty",
     "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"get\"],\"resources\":[\"pods\"],\"resourceNames\":["
     "\"foo\",\"bar\"]}]",
     "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"get\"],\"resources\":[\"pods\"],\"resourceNames\":[]}]",
     false, "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"get\"],\"resources\":[\"pods\"]}]"},
    {"NonResourceURLs", "[{\"nonResourceURLs\":[\"/apis\"],\"verbs\":[\"*\"]}]",
     "[{\"nonResourceURLs\":[\"/apis\"],\"verbs\":[\"*\"]}]", true, "[]"},
    {"NonResourceURLsStar", "[{\"nonResourceURLs\":[\"*\"],\"verbs\":[\"*\"]}]",
     "[{\"nonResourceURLs\":[\"/apis\",\"/apis/v1\",\"/\"],\"verbs\":[\"*\"]}]", true, "[]"},
    {"NonResourceURLsStarAfterPrefixDoesntCover",
     "[{\"nonResourceURLs\":[\"/apis/*\"],\"verbs\":[\"*\"]}]",
     "[{\"nonResourceURLs\":[\"/apis\",\"/apis/v1\"],\"verbs\":[\"get\"]}]", false,
     "[{\"nonResourceURLs\":[\"/apis\"],\"verbs\":[\"get\"]}]"},
    {"NonResourceURLsStarAfterPrefix", "[{\"nonResourceURLs\":[\"/apis/*\"],\"verbs\":[\"*\"]}]",
     "[{\"nonResourceURLs\":[\"/apis/v1/foo\",\"/apis/v1\"],\"verbs\":[\"get\"]}]", true, "[]"},
    {"NonResourceURLsWithOtherFields",
     "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"get\"],\"resources\":[\"builds\"],\"nonResourceURLs\":["
     "\"/apis\"]}]",
     "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"get\"],\"resources\":[\"builds\"],\"nonResourceURLs\":["
     "\"/apis\"]}]",
     true, "[]"},
    {"NonResourceURLsWithOtherFieldsFailure",
     "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"get\"],\"resources\":[\"builds\"]}]",
     "[{\"apiGroups\":[\"v1\"],\"verbs\":[\"get\"],\"resources\":[\"builds\"],\"nonResourceURLs\":["
     "\"/apis\"]}]",
     false, "[{\"nonResourceURLs\":[\"/apis\"],\"verbs\":[\"get\"]}]"},
};

/* rulesMatch: the same rules in any order */
static bool rules_match(const json_t *want, const json_t *got)
{
    const json_t *w, *g;
    size_t i, j;

    if (json_array_size(want) != json_array_size(got))
        return false;
    json_array_foreach(want, i, w)
    {
        bool found = false;
        json_array_foreach(got, j, g) found |= json_equal(w, g);
        if (!found)
            return false;
    }
    return true;
}

static void test_covers(void **state)
{
    (void)state;
    for (size_t i = 0; i < N(cover_cases); i++) {
        const struct cover_case *c = &cover_cases[i];
        json_t *o = json_loads(c->owner, 0, NULL), *s = json_loads(c->servant, 0, NULL);
        json_t *want = json_loads(c->uncovered, 0, NULL), *missing = NULL;
        assert_non_null(o);
        assert_non_null(s);
        assert_non_null(want);
        bool got = fatia_rbac_covers(o, s, &missing);
        if (got != c->covered || !rules_match(want, missing)) {
            char *m = json_dumps(missing, JSON_COMPACT);
            fprintf(stderr, "TestCovers%s: covered %d, uncovered %s\n", c->name, got, m);
            free(m);
            fail_msg("%s", c->name);
        }
        json_decref(o);
        json_decref(s);
        json_decref(want);
        json_decref(missing);
    }
}

/* TestNonResourceURLCovers, through Covers with one URL each */
static void test_url_covers(void **state)
{
    (void)state;

    static const struct {
        const char *owner, *requested;
        bool want;
    } cases[] = {
        {"*", "/api", true},        {"/api", "/api", true},         {"/apis", "/api", false},
        {"/api/v1", "/api", false}, {"/api/v1", "/api/v1", true},   {"/api/*", "/api/v1", true},
        {"/api/*", "/api", false},  {"/api/*/*", "/api/v1", false}, {"/*/v1/*", "/api/v1", false},
    };

    for (size_t i = 0; i < N(cases); i++) {
        json_t *o = json_pack("[{s:[s],s:[s]}]", "nonResourceURLs", cases[i].owner, "verbs", "get");
        json_t *s =
            json_pack("[{s:[s],s:[s]}]", "nonResourceURLs", cases[i].requested, "verbs", "get");
        if (fatia_rbac_covers(o, s, NULL) != cases[i].want)
            fail_msg("nonResourceURLCovers(%s, %s)", cases[i].owner, cases[i].requested);
        json_decref(o);
        json_decref(s);
    }
}

/* ---- fatia's own cases ---- */

static void test_service_accounts_and_names(void **state)
{
    (void)state;
    struct tsrc t = {0};
    struct fatia_rbac_source s = source(&t);
    json_t *r = json_pack("[{s:[s],s:[s],s:[s],s:[s]}]", "verbs", "get", "apiGroups", "",
                          "resources", "configmaps", "resourceNames", "cfg");
    json_array_append_new(t.roles, role("read-cfg", "ns1", r));
    /* a subject without a namespace is the binding's namespace's service account */
    json_array_append_new(
        t.role_bindings,
        binding("ns1", "Role", "read-cfg", (const char *const[]){"ServiceAccount:bot", NULL}));
    json_array_append_new(t.role_bindings,
                          binding("ns1", "Role", "read-cfg",
                                  (const char *const[]){"ServiceAccount:ns2/other", NULL}));
    /* a Role of another namespace is never found from ns2 */
    json_array_append_new(t.role_bindings, binding("ns2", "Role", "read-cfg",
                                                   (const char *const[]){"User:carol", NULL}));
    struct fatia_rbac_attrs a = {.user = "system:serviceaccount:ns1:bot",
                                 .verb = "get",
                                 .resource_request = true,
                                 .group = "",
                                 .resource = "configmaps",
                                 .name = "cfg",
                                 .ns = "ns1"};
    char why[300];
    assert_true(fatia_rbac_allows(&s, &a, why, sizeof(why)));
    assert_string_equal(why, "RBAC: allowed by RoleBinding \"ns1/b\" of Role \"read-cfg\" to "
                             "ServiceAccount \"ns1/bot\"");
    a.name = "other"; /* resourceNames */
    assert_false(fatia_rbac_allows(&s, &a, NULL, 0));
    a.name = NULL; /* a list has no name: resourceNames never match it */
    assert_false(fatia_rbac_allows(&s, &a, NULL, 0));
    a.name = "cfg";
    a.user = "system:serviceaccount:ns2:bot";
    assert_false(fatia_rbac_allows(&s, &a, NULL, 0));
    a.user = "system:serviceaccount:ns2:other"; /* bound in ns1 by its namespace */
    assert_true(fatia_rbac_allows(&s, &a, NULL, 0));
    a.user = "carol";
    a.ns = "ns2";
    assert_false(fatia_rbac_allows(&s, &a, NULL, 0));
    /* a RoleBinding's grant does not reach the cluster scope nor every namespace */
    a.user = "system:serviceaccount:ns1:bot";
    a.ns = NULL;
    assert_false(fatia_rbac_allows(&s, &a, NULL, 0));
    tsrc_release(&t);
}

static void test_aggregation(void **state)
{
    (void)state;
    struct tsrc t = {0};
    struct fatia_rbac_source s = source(&t);
    json_t *agg = json_pack("{s:{s:s},s:{s:[{s:{s:s}}]}}", "metadata", "name", "edit",
                            "aggregationRule", "clusterRoleSelectors", "matchLabels",
                            "rbac.authorization.k8s.io/aggregate-to-edit", "true");
    json_t *admin = json_pack("{s:{s:s},s:{s:[{s:{s:s}}]}}", "metadata", "name", "admin",
                              "aggregationRule", "clusterRoleSelectors", "matchLabels",
                              "rbac.authorization.k8s.io/aggregate-to-admin", "true");
    json_object_set_new(json_object_get(agg, "metadata"), "labels",
                        json_pack("{s:s}", "rbac.authorization.k8s.io/aggregate-to-admin", "true"));
    json_t *piece = role("fatia:jobs", NULL, json_pack("[o]", mk("create", "batch", "jobs", NULL)));
    json_object_set_new(json_object_get(piece, "metadata"), "labels",
                        json_pack("{s:s}", "rbac.authorization.k8s.io/aggregate-to-edit", "true"));
    json_array_append_new(t.cluster_roles, agg);
    json_array_append_new(t.cluster_roles, admin);
    json_array_append_new(t.cluster_roles, piece);
    json_array_append_new(t.cluster_roles,
                          role("unlabelled", NULL, json_pack("[o]", mk("*", "*", "*", NULL))));
    json_array_append_new(t.role_bindings, binding("ns1", "ClusterRole", "admin",
                                                   (const char *const[]){"User:alice", NULL}));
    struct dattr pass = {"alice", "", "create", "jobs", "", "ns1", "batch"};
    struct dattr fail[] = {{"alice", "", "delete", "jobs", "", "ns1", "batch"},
                           {"alice", "", "create", "jobs", "", "ns2", "batch"}};
    expect(&s, &pass, 1, fail, N(fail), __LINE__); /* admin <- edit <- fatia:jobs */
    json_t *rules = json_array();
    assert_int_equal(fatia_rbac_rules_for(&s, "alice", NULL, "ns1", rules), 0);
    assert_int_equal(json_array_size(rules), 1);
    json_decref(rules);
    tsrc_release(&t);
}

static void test_rule_string(void **state)
{
    (void)state;
    char buf[256];
    json_t *r = json_pack("{s:[s],s:[s,s],s:[s]}", "apiGroups", "", "resources", "pods", "pods/log",
                          "verbs", "*");
    fatia_rbac_rule_string(r, buf, sizeof(buf));
    assert_string_equal(buf,
                        "{APIGroups:[\"\"], Resources:[\"pods\" \"pods/log\"], Verbs:[\"*\"]}");
    json_decref(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_authorizer_namespace),
        cmocka_unit_test(test_authorizer_nonresource),
        cmocka_unit_test(test_authorizer_subresources),
        cmocka_unit_test(test_rule_matches),
        cmocka_unit_test(test_covers),
        cmocka_unit_test(test_url_covers),
        cmocka_unit_test(test_service_accounts_and_names),
        cmocka_unit_test(test_aggregation),
        cmocka_unit_test(test_rule_string),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
