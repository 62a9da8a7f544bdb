/*
 * apiserver/rbac_review.c: authorization.k8s.io/v1 reviews, answered from the authorizer chain
 * (authz.c): `kubectl auth can-i` (SelfSubjectAccessReview), `kubectl auth can-i --list`
 * (SelfSubjectRulesReview), and SubjectAccessReview and LocalSubjectAccessReview for those who
 * may create them (cluster-admin; admin in a namespace for the local one, as upstream's roles).
 *
 * Model: a review is a request body in, the same object with its status out (201), never
 * stored. The self reviews ask about the requester (its token's grants included); a
 * SubjectAccessReview asks about spec.user with spec.groups (plus system:authenticated), and
 * counts the tokens-file grants of the first token of that user, so that the answer is the one
 * that user's requests would get. A LocalSubjectAccessReview's spec.resourceAttributes.namespace
 * must be the path's (upstream's 400 otherwise).
 *
 * SelfSubjectRulesReview lists every rule the requester holds in spec.namespace (bindings of the
 * namespace and of the cluster): resource rules and non-resource rules apart, incomplete false
 * (every authorizer of the chain is RBAC or lists its rules: a node authorizer that cannot would
 * have to set it). system:masters gets the two rules of cluster-admin.
 */
#include "base/compat.h"

#include "apiserver/internal.h"
#include "base/error.h"
#include "base/json.h"
#include "rbac/rbac.h"

static const char *opt(const json_t *o, const char *k)
{
    const char *s = fatia_json_str(o, k);
    return s ? s : "";
}

/* The attributes of a review's spec; false when it names neither kind of attributes. */
static bool attrs_of(const json_t *spec, struct fatia_rbac_attrs *a, char *why, size_t why_n)
{
    const json_t *ra = json_object_get(spec, "resourceAttributes");
    const json_t *na = json_object_get(spec, "nonResourceAttributes");

    if (ra && na) {
        snprintf(why, why_n,
                 "spec.resourceAttributes, spec.nonResourceAttributes: cannot "
                 "specify both resourceAttributes and nonResourceAttributes");
        return false;
    }
    if (ra) {
        *a = (struct fatia_rbac_attrs){.verb = opt(ra, "verb"),
                                       .resource_request = true,
                                       .group = opt(ra, "group"),
                                       .resource = opt(ra, "resource"),
                                       .subresource = opt(ra, "subresource"),
                                       .name = opt(ra, "name"),
                                       .ns = opt(ra, "namespace")};
        return true;
    }
    if (na) {
        *a = (struct fatia_rbac_attrs){.verb = opt(na, "verb"), .path = opt(na, "path")};
        return true;
    }
    snprintf(why, why_n,
             "spec.resourceAttributes: exactly one of nonResourceAttributes or "
             "resourceAttributes must be specified");
    return false;
}

static json_t *rules_status(json_t *rules)
{
    json_t *res = json_array(), *nonres = json_array();
    const json_t *r;
    size_t i;

    json_array_foreach(rules, i, r)
    {
        json_t *o;
        if (json_array_size(json_object_get(r, "nonResourceURLs"))) {
            o = json_pack("{s:O,s:O}", "verbs", json_object_get(r, "verbs"), "nonResourceURLs",
                          json_object_get(r, "nonResourceURLs"));
            json_array_append_new(nonres, o);
        }
        if (json_array_size(json_object_get(r, "resources"))) {
            o = json_pack("{s:O}", "verbs", json_object_get(r, "verbs"));
            if (json_object_get(r, "apiGroups"))
                json_object_set(o, "apiGroups", json_object_get(r, "apiGroups"));
            json_object_set(o, "resources", json_object_get(r, "resources"));
            if (json_array_size(json_object_get(r, "resourceNames")))
                json_object_set(o, "resourceNames", json_object_get(r, "resourceNames"));
            json_array_append_new(res, o);
        }
    }
    return json_pack("{s:o,s:o,s:b}", "resourceRules", res, "nonResourceRules", nonres,
                     "incomplete", false);
}

/* may u create this review (a resource of authorization.k8s.io)? */
static bool may_create(struct fatia_apiserver *s, const struct fatia_user *u, const char *res,
                       const char *ns)
{
    struct fatia_rbac_attrs a = {.verb = "create",
                                 .resource_request = true,
                                 .group = "authorization.k8s.io",
                                 .resource = res,
                                 .ns = ns};

    return fatia_api_may(s, u, &a, NULL, 0);
}

int fatia_api_review(struct fatia_apiserver *s, const struct fatia_user *u, const char *kind,
                     const char *ns, json_t *body, json_t **ret, char *why, size_t why_n)
{
    const json_t *spec = json_object_get(body, "spec");
    struct fatia_rbac_attrs a;
    const char *res = !strcmp(kind, "SelfSubjectAccessReview")    ? "selfsubjectaccessreviews"
                      : !strcmp(kind, "SelfSubjectRulesReview")   ? "selfsubjectrulesreviews"
                      : !strcmp(kind, "SubjectAccessReview")      ? "subjectaccessreviews"
                      : !strcmp(kind, "LocalSubjectAccessReview") ? "localsubjectaccessreviews"
                                                                  : NULL;
    char reason[512];
    int code = 201;

    if (!res) {
        code = 404;
        snprintf(why, why_n, "the server could not find the requested resource");
        goto fail;
    }
    if (!may_create(s, u, res, ns)) {
        code = 403;
        if (ns)
            snprintf(why, why_n,
                     "%s.authorization.k8s.io is forbidden: User \"%s\" cannot create resource "
                     "\"%s\" in API group \"authorization.k8s.io\" in the namespace \"%s\"",
                     res, u->name, res, ns);
        else
            snprintf(why, why_n,
                     "%s.authorization.k8s.io is forbidden: User \"%s\" cannot create resource "
                     "\"%s\" in API group \"authorization.k8s.io\" at the cluster scope",
                     res, u->name, res);
        goto fail;
    }
    json_object_set_new(body, "apiVersion", json_string("authorization.k8s.io/v1"));
    json_object_set_new(body, "kind", json_string(kind));
    if (!json_is_object(json_object_get(body, "metadata")))
        json_object_set_new(body, "metadata", json_object());
    if (!strcmp(kind, "SelfSubjectRulesReview")) {
        json_t *rules = json_array();
        const char *rns = fatia_json_str(spec, "namespace");
        if (!rules || fatia_api_rules_of(s, u, rns && *rns ? rns : NULL, rules) < 0) {
            json_decref(rules);
            code = 500;
            snprintf(why, why_n, "out of memory");
            goto fail;
        }
        json_object_set_new(body, "status", rules_status(rules));
        json_decref(rules);
        *ret = body;
        return 201;
    }
    if (!attrs_of(spec, &a, why, why_n)) {
        code = 400;
        goto fail;
    }
    if (!strcmp(kind, "LocalSubjectAccessReview") && a.resource_request && strcmp(a.ns, ns)) {
        code = 400;
        snprintf(why, why_n,
                 "spec.resourceAttributes.namespace must match metadata.namespace: \"%s\" is "
                 "not \"%s\"",
                 a.ns, ns);
        goto fail;
    }
    if (!strcmp(kind, "SubjectAccessReview") || !strcmp(kind, "LocalSubjectAccessReview")) {
        const char *name = fatia_json_str(spec, "user");
        const json_t *gs = json_object_get(spec, "groups"), *g;
        const char *groups[65] = {0};
        const struct fatia_user *tu = NULL;
        const char *tok;
        struct fatia_user who = {0};
        size_t i, n = 0;
        if ((!name || !*name) && !json_array_size(gs)) {
            code = 400;
            snprintf(why, why_n,
                     "spec.user, spec.groups: at least one of user or group must be "
                     "specified");
            goto fail;
        }
        json_array_foreach(gs, i, g)
        {
            if (json_string_value(g) && n < 64)
                groups[n++] = json_string_value(g);
        }
        if (name && s->auth && (tok = fatia_auth_token_of(s->auth, name)))
            tu = fatia_auth_lookup(s->auth, tok);
        who.name = name ? name : "";
        who.groups = groups;
        who.namespaces = tu ? tu->namespaces : (const char *const[]){"-", NULL};
        who.read_only = tu ? tu->read_only : true;
        bool ok = fatia_api_may(s, &who, &a, reason, sizeof(reason));
        json_object_set_new(body, "status",
                            json_pack("{s:b,s:s}", "allowed", ok, "reason", ok ? reason : ""));
        *ret = body;
        return 201;
    }
    {
        bool ok = fatia_api_may(s, u, &a, reason, sizeof(reason));
        json_object_set_new(body, "status",
                            json_pack("{s:b,s:s}", "allowed", ok, "reason", ok ? reason : ""));
    }
    *ret = body;
    return 201;

fail:
    json_decref(body);
    *ret = NULL;
    return code;
}
