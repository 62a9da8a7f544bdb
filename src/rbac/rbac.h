/*
 * rbac/rbac.h: Kubernetes RBAC evaluation (library fatia_rbac; pure policy: no I/O, no clock).
 *
 * The authorizer answers one question: may this user (a name and groups) do this verb on this
 * resource (API group, resource, subresource, name, namespace) or non-resource URL? It is
 * kube-apiserver's plugin/pkg/auth/authorizer/rbac (RBACAuthorizer.Authorize and RuleAllows) over
 * roles and bindings that a source gives it: the API server's cache, a unit test's table, or
 * anything else with the three callbacks below. Denying is the default: no rule, no access.
 *
 * Escalation prevention is upstream's pkg/registry/rbac/validation (ConfirmNoEscalation and
 * Covers): a rule set covers another when every one of the other's rules, broken down into one
 * verb, group, resource and resource name each, is matched by some rule of the set.
 */
#ifndef FATIA_RBAC_RBAC_H
#define FATIA_RBAC_RBAC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* What a request asks (upstream's authorizer.Attributes). */
struct fatia_rbac_attrs {
    const char *user;
    const char *const *groups; /* NULL-terminated; NULL = none */
    const char *verb;          /* get list watch create update patch delete deletecollection,
                                  bind escalate impersonate use ... */
    bool resource_request;     /* false: path is a non-resource URL ("/metrics") */
    const char *group;         /* API group; "" core */
    const char *resource;      /* plural */
    const char *subresource;   /* NULL or "" none; "status", "log", "eviction" ... */
    const char *name;          /* NULL or "": no name (list, create) */
    const char *ns;            /* NULL or "": cluster scope, or every namespace */
    const char *path;
};

/* Where roles and bindings come from. Each returns borrowed trees (rbac.authorization.k8s.io/v1
 * objects as stored) valid for the call. */
struct fatia_rbac_source {
    void *arg;
    /* Calls fn for each ClusterRoleBinding (ns NULL) or each RoleBinding of ns; stops at fn's
     * first non-zero return and returns it (0 when fn never stopped it). */
    int (*each_binding)(void *arg, const char *ns, int (*fn)(void *fa, const json_t *binding),
                        void *fa);
    /* The Role ns/name, or the ClusterRole name (ns NULL); NULL when there is none. */
    const json_t *(*role)(void *arg, const char *ns, const char *name);
    /* Calls fn for each ClusterRole (for aggregation), as each_binding. */
    int (*each_cluster_role)(void *arg, int (*fn)(void *fa, const json_t *role), void *fa);
};

/* Does one PolicyRule allow the request? (upstream's RuleAllows) */
bool fatia_rbac_rule_allows(const json_t *rule, const struct fatia_rbac_attrs *a);

/* Does a binding (RoleBinding of namespace ns, or ClusterRoleBinding: ns NULL) name the user
 * among its subjects? */
bool fatia_rbac_binding_applies(const json_t *binding, const char *ns, const char *user,
                                const char *const *groups);

/* May the request be done? On true, why (when not NULL) says which binding allowed it as upstream
 * words it (`RBAC: allowed by ClusterRoleBinding "x" of ClusterRole "y" to User "alice"`). */
bool fatia_rbac_allows(const struct fatia_rbac_source *src, const struct fatia_rbac_attrs *a,
                       char *why, size_t why_n);

/* The rules of a role tree (a Role, or a ClusterRole with its aggregation resolved against the
 * source: the rules of every ClusterRole its selectors match, transitively, as the aggregation
 * controller writes them), appended to out (a JSON array of shared references: never modify
 * them). 0 or -ENOMEM. */
int fatia_rbac_role_rules(const struct fatia_rbac_source *src, const json_t *role, json_t *out);

/* Every rule the user holds in namespace ns (ns NULL: at the cluster scope; a namespace also
 * counts the ClusterRoleBindings), appended to out. 0 or -ENOMEM. */
int fatia_rbac_rules_for(const struct fatia_rbac_source *src, const char *user,
                         const char *const *groups, const char *ns, json_t *out);

/* Do the owner rules cover every servant rule? On false, *ret_missing (when not NULL) gets the
 * broken-down rules not covered (a new JSON array). */
bool fatia_rbac_covers(const json_t *owner, const json_t *servant, json_t **ret_missing);

/* Upstream's PolicyRule.CompactString: {APIGroups:[""], Resources:["pods"], Verbs:["get"]}.
 * Appends to buf (NUL-terminated, truncated to n). */
void fatia_rbac_rule_string(const json_t *rule, char *buf, size_t n);

#endif
