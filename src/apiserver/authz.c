/*
 * apiserver/authz.c: who may do what: the authorizer chain over RBAC, the tokens' grants as
 * bindings, and the escalation check on writes of roles and bindings (docs/apiserver.md,
 * "Authentication and authorization").
 *
 * Model. A request's attributes (verb, API group, resource, subresource, name, namespace, or a
 * non-resource path) go through a chain of authorizers, as kube-apiserver's union authorizer:
 *   1. system:masters is allowed everything (kube-apiserver's privileged-group authorizer; the
 *      admin token and fatiad's own components);
 *   2. the authorizers added with fatia_api_authorizer_add (a node authorizer sits here: it
 *      answers allow, deny or no opinion, and only no opinion goes on);
 *   3. RBAC (rbac/rbac.h) over the cache's committed Roles, ClusterRoles, RoleBindings and
 *      ClusterRoleBindings, plus the bindings a token's own fields make.
 * The user's groups are the token's plus system:authenticated (every authenticated user, as
 * upstream's authenticator adds it) and, for a user named system:serviceaccount:NS:NAME,
 * system:serviceaccounts and system:serviceaccounts:NS.
 *
 * The tokens file's NAMESPACES and ACCESS stay and become bindings, made per request and never
 * stored (the file is their one source: a revoked token's grant goes with it): a token with
 * namespaces gets a RoleBinding "fatia:token:USER" of ClusterRole admin (rw) or view (ro) in each
 * of them; a token with "*" gets a ClusterRoleBinding of the same role; "-" names no namespace
 * (the user's grants are the stored bindings alone). The ClusterRoles are written at start
 * (rbac_defaults.c), with the ClusterRoleBindings that give every authenticated user what a
 * tenant had before RBAC: read access to cluster-scoped objects (fatia:cluster-reader),
 * discovery, /metrics, and self-reviews (system:basic-user).
 *
 * The tenant rules (controller/tenancy.c) are admission plugins and stay on top: a tenant bound
 * to cluster-admin passes RBAC, and is still refused what the tenant rules refuse, because the
 * rules look at the identity's groups (system:masters, system:nodes), not at its grants.
 *
 * Escalation prevention (the admission plugin "rbac-escalation", upstream's
 * pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding}/policybased): a Role or
 * ClusterRole is written only by a user who holds every rule it grants (in its namespace, or at
 * the cluster scope) or may "escalate" it; a ClusterRole with an aggregationRule needs full
 * authority; a binding is written only by a user who holds every rule of the role it refers to
 * (in the binding's namespace) or may "bind" that role. An update that changes none of rules,
 * aggregationRule, roleRef and subjects is not checked (upstream's IsOnlyMutatingGCFields).
 *
 * Choices rejected: writing the tokens' bindings into the store (a revocation would have to find
 * and delete them, and a crash between the two would leave a grant without a token); letting
 * tenants keep every namespaced write as before (a tenant could delete its namespace's
 * ResourceQuota: upstream's admin role reads quotas and limit ranges only).
 */
#include "base/compat.h"

#include "apiserver/internal.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "model/kinds/kinds.h"
#include "rbac/rbac.h"

#define SA_PREFIX     "system:serviceaccount:"
#define MAX_GROUPS    64
#define GROUP_AUTHN   "system:authenticated"
#define GROUP_SAS     "system:serviceaccounts"
#define TOKEN_BINDING "fatia:token:"

/* ---- the user's groups ---- */

struct ident {
    const char *groups[MAX_GROUPS + 4];
    char sa_group[300];
};

static void ident_init(struct ident *id, const struct fatia_user *u)
{
    size_t n = 0;

    for (const char *const *g = u->groups; g && *g && n < MAX_GROUPS; g++)
        id->groups[n++] = *g;
    if (!fatia_user_in_group(u, GROUP_AUTHN))
        id->groups[n++] = GROUP_AUTHN;
    if (u->name && !strncmp(u->name, SA_PREFIX, strlen(SA_PREFIX))) {
        const char *ns = u->name + strlen(SA_PREFIX), *colon = strchr(ns, ':');
        if (colon && colon > ns) {
            snprintf(id->sa_group, sizeof(id->sa_group), GROUP_SAS ":%.*s", (int)(colon - ns), ns);
            if (!fatia_user_in_group(u, GROUP_SAS))
                id->groups[n++] = GROUP_SAS;
            if (!fatia_user_in_group(u, id->sa_group))
                id->groups[n++] = id->sa_group;
        }
    }
    id->groups[n] = NULL;
}

json_t *fatia_api_user_info(const struct fatia_user *u)
{
    json_t *groups = json_array();
    struct ident id;

    ident_init(&id, u);
    for (size_t i = 0; id.groups[i]; i++)
        json_array_append_new(groups, json_string(id.groups[i]));
    return json_pack("{s:s,s:o}", "username", u->name, "groups", groups);
}

/* ---- the source: the cache, and the token's grants ---- */

struct src {
    struct fatia_apiserver *s;
    const struct fatia_user *u; /* whose token grants are added; NULL: none */
};

static const char *token_role(const struct fatia_user *u)
{
    return u->read_only ? "view" : "admin";
}

static bool token_all_ns(const struct fatia_user *u)
{
    if (!u->namespaces)
        return true;
    for (const char *const *n = u->namespaces; *n; n++)
        if (!strcmp(*n, "*"))
            return true;
    return false;
}

static bool token_has_ns(const struct fatia_user *u, const char *ns)
{
    for (const char *const *n = u->namespaces; n && *n; n++)
        if (!strcmp(*n, ns))
            return true;
    return false;
}

static json_t *token_binding(const struct fatia_user *u, const char *ns)
{
    char name[300];

    snprintf(name, sizeof(name), TOKEN_BINDING "%s", u->name);
    json_t *b =
        json_pack("{s:s,s:s,s:{s:s},s:{s:s,s:s,s:s},s:[{s:s,s:s,s:s}]}", "apiVersion",
                  "rbac.authorization.k8s.io/v1", "kind", ns ? "RoleBinding" : "ClusterRoleBinding",
                  "metadata", "name", name, "roleRef", "apiGroup", "rbac.authorization.k8s.io",
                  "kind", "ClusterRole", "name", token_role(u), "subjects", "kind", "User",
                  "apiGroup", "rbac.authorization.k8s.io", "name", u->name);
    if (b && ns)
        json_object_set_new(json_object_get(b, "metadata"), "namespace", json_string(ns));
    return b;
}

static int src_each_binding(void *arg, const char *ns, int (*fn)(void *, const json_t *), void *fa)
{
    struct src *x = arg;
    struct rtable *t = fatia_api_server_table_for(x->s, ns ? &fatia_kind_rolebinding
                                                           : &fatia_kind_clusterrolebinding);
    size_t lo = 0, hi = 0;
    int r;

    if (x->u && x->u->name && (ns ? token_has_ns(x->u, ns) : token_all_ns(x->u))) {
        json_t *b = token_binding(x->u, ns);
        r = b ? fn(fa, b) : 0;
        json_decref(b);
        if (r)
            return r;
    }
    if (!t)
        return 0;
    fatia_api_rtable_range(t, ns, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        const struct entry *e = t->entries.v[i];
        if (!e->committed)
            continue;
        r = fn(fa, e->committed->tree);
        if (r)
            return r;
    }
    return 0;
}

static const json_t *src_role(void *arg, const char *ns, const char *name)
{
    struct src *x = arg;
    struct rtable *t =
        fatia_api_server_table_for(x->s, ns ? &fatia_kind_role : &fatia_kind_clusterrole);
    const struct entry *e;
    char key[600];

    if (!t)
        return NULL;
    fatia_api_entry_key(t, ns, name, key, sizeof(key));
    e = fatia_api_rtable_find(t, key);
    return e && e->committed ? e->committed->tree : NULL;
}

static int src_each_cluster_role(void *arg, int (*fn)(void *, const json_t *), void *fa)
{
    struct src *x = arg;
    struct rtable *t = fatia_api_server_table_for(x->s, &fatia_kind_clusterrole);

    for (size_t i = 0; t && i < t->entries.n; i++) {
        const struct entry *e = t->entries.v[i];
        int r;
        if (!e->committed)
            continue;
        r = fn(fa, e->committed->tree);
        if (r)
            return r;
    }
    return 0;
}

static struct fatia_rbac_source source_of(struct src *x)
{
    return (struct fatia_rbac_source){x, src_each_binding, src_role, src_each_cluster_role};
}

/* ---- the chain ---- */

int fatia_api_authorizer_add(struct fatia_apiserver *s, fatia_api_authorizer_fn fn, void *arg)
{
    if (s->n_authorizers >= FATIA_ARRAY_SIZE(s->authorizers))
        return -ENOSPC;
    s->authorizers[s->n_authorizers++] = (struct authorizer_entry){fn, arg};
    return 0;
}

bool fatia_api_may(struct fatia_apiserver *s, const struct fatia_user *u,
                   const struct fatia_rbac_attrs *a, char *why, size_t why_n)
{
    struct src x = {s, u};
    struct fatia_rbac_source src = source_of(&x);
    struct fatia_rbac_attrs full = *a;
    struct ident id;

    if (why && why_n)
        why[0] = '\0';
    if (!u || fatia_user_is_admin(u)) {
        if (why && why_n)
            snprintf(why, why_n, "allowed: member of %s", FATIA_GROUP_ADMIN);
        return true;
    }
    ident_init(&id, u);
    full.user = u->name;
    full.groups = id.groups;
    for (size_t i = 0; i < s->n_authorizers; i++) {
        int d = s->authorizers[i].fn(s->authorizers[i].arg, u, &full, why, why_n);
        if (d != FATIA_AUTHZ_NO_OPINION)
            return d == FATIA_AUTHZ_ALLOW;
    }
    return fatia_rbac_allows(&src, &full, why, why_n);
}

int fatia_api_rules_of(struct fatia_apiserver *s, const struct fatia_user *u, const char *ns,
                       json_t *out)
{
    struct src x = {s, u};
    struct fatia_rbac_source src = source_of(&x);
    struct ident id;

    if (!u || fatia_user_is_admin(u))
        return json_array_append_new(out, json_pack("{s:[s],s:[s],s:[s]}", "verbs", "*",
                                                    "apiGroups", "*", "resources", "*")) ||
                       json_array_append_new(
                           out, json_pack("{s:[s],s:[s]}", "verbs", "*", "nonResourceURLs", "*"))
                   ? -ENOMEM
                   : 0;
    ident_init(&id, u);
    return fatia_rbac_rules_for(&src, u->name, id.groups, ns, out);
}

/* ---- a request's authorization (the first step of every operation) ---- */

int fatia_api_authorize(const struct opctx *c, const char *verb, struct opres *r)
{
    const struct fatia_kind *k = c->t->kind;
    const char *ns = k->namespaced ? c->ns : NULL;
    const char *sub = c->subresource;
    char what[400], res[300], why[300], tail[310] = "";
    struct fatia_rbac_attrs a = {.verb = verb,
                                 .resource_request = true,
                                 .group = k->group,
                                 .resource = k->plural,
                                 .subresource = sub,
                                 .name = c->name,
                                 .ns = ns};

    if (fatia_api_may(c->s, c->user, &a, why, sizeof(why))) {
        if (fatia_kind_serves_verb(k, verb))
            return 0;
        fatia_api_opres_fail(r, 405, "MethodNotAllowed",
                             "the server does not allow this method on the requested resource "
                             "(%s %s): fatiad serves it read-only (get, list, watch)",
                             verb, c->t->resource);
        return -FATIA_E_FORBIDDEN;
    }
    if (c->name)
        snprintf(what, sizeof(what), "%s \"%s\"", c->t->resource, c->name);
    else
        snprintf(what, sizeof(what), "%s", c->t->resource);
    if (sub && *sub)
        snprintf(res, sizeof(res), "%s/%s", k->plural, sub);
    else
        snprintf(res, sizeof(res), "%s", k->plural);
    /* a denying authorizer's reason, as upstream appends it (RBAC gives none) */
    if (why[0])
        snprintf(tail, sizeof(tail), ": %s", why);
    if (ns)
        fatia_api_opres_fail(
            r, 403, "Forbidden",
            "%s is forbidden: User \"%s\" cannot %s resource \"%s\" in API group \"%s\" in "
            "the namespace \"%s\"%s",
            what, c->user->name, verb, res, k->group, ns, tail);
    else
        fatia_api_opres_fail(
            r, 403, "Forbidden",
            "%s is forbidden: User \"%s\" cannot %s resource \"%s\" in API group \"%s\" at "
            "the cluster scope%s",
            what, c->user->name, verb, res, k->group, tail);
    return -FATIA_E_FORBIDDEN;
}

int fatia_api_authorize_collection(const struct opctx *c, const char *verb,
                                   const struct fatia_api_query *q, struct opres *r)
{
    struct opctx one = *c;
    char name[512];

    if (!c->name && q && fatia_api_fieldsel_name(q->field_selector, name, sizeof(name)))
        one.name = name;
    return fatia_api_authorize(&one, verb, r);
}

bool fatia_api_may_resource(struct fatia_apiserver *s, const struct fatia_user *u, const char *verb,
                            const struct fatia_kind *k, const char *sub, const char *ns,
                            const char *name)
{
    struct fatia_rbac_attrs a = {.verb = verb,
                                 .resource_request = true,
                                 .group = k->group,
                                 .resource = k->plural,
                                 .subresource = sub,
                                 .name = name,
                                 .ns = k->namespaced ? ns : NULL};

    return fatia_api_may(s, u, &a, NULL, 0);
}

/* ---- escalation (the rbac-escalation admission plugin) ---- */

static bool same(const json_t *x, const json_t *y)
{
    return (!x && !y) || (x && y && json_equal(x, y));
}

static bool unchanged(const struct fatia_admit_attrs *a, const char *const *fields)
{
    if (!a->old)
        return false;
    for (const char *const *f = fields; *f; f++)
        if (!same(json_object_get(a->obj, *f), json_object_get(a->old, *f)))
            return false;
    return true;
}

/* upstream's message: user "alice" (groups=["g1" "g2"]) is attempting to grant RBAC permissions
 * not currently held:\n{...}\n{...} */
static int refuse(struct fatia_admit_attrs *a, const struct ident *id, const json_t *missing)
{
    struct fatia_buf b = FATIA_BUF_INIT;
    const json_t *m;
    size_t i;
    int r;

    r = fatia_buf_printf(&b, "user \"%s\" (groups=[", a->user->name);
    for (size_t g = 0; r == 0 && id->groups[g]; g++)
        r = fatia_buf_printf(&b, "%s\"%s\"", g ? " " : "", id->groups[g]);
    r = r ? r
          : fatia_buf_puts(&b, "]) is attempting to grant RBAC permissions not currently held:");
    json_array_foreach(missing, i, m)
    {
        char rule[1024];
        if (r || i >= 32)
            break;
        fatia_rbac_rule_string(m, rule, sizeof(rule));
        r = fatia_buf_printf(&b, "\n%s", rule);
    }
    if (r == 0 && json_array_size(missing) > 32)
        r = fatia_buf_printf(&b, "\n(and %zu more)", json_array_size(missing) - 32);
    if (r == 0)
        fatia_diag_add(a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, NULL, "%s", b.p);
    fatia_buf_release(&b);
    return r < 0 ? r : -FATIA_E_FORBIDDEN;
}

/* May the user do verb on the role named (roles in ns, or clusterroles)? */
static bool may_on_role(struct fatia_apiserver *s, const struct fatia_user *u, const char *verb,
                        bool cluster, const char *ns, const char *name)
{
    /* upstream's BindingAuthorized and RoleEscalationAuthorized: the namespace is the binding's
     * (or the role's) even for clusterroles, so a RoleBinding may grant "bind" on a ClusterRole */
    struct fatia_rbac_attrs at = {.verb = verb,
                                  .resource_request = true,
                                  .group = "rbac.authorization.k8s.io",
                                  .resource = cluster ? "clusterroles" : "roles",
                                  .name = name,
                                  .ns = ns};

    return fatia_api_may(s, u, &at, NULL, 0);
}

/* Does the user hold every rule of servant in ns (NULL: the cluster scope)? */
static int confirm_no_escalation(struct fatia_apiserver *s, struct fatia_admit_attrs *a,
                                 const char *ns, const json_t *servant)
{
    json_t *owner = json_array(), *missing = NULL;
    struct ident id;
    int r = 0;

    if (!owner)
        return -ENOMEM;
    ident_init(&id, a->user);
    r = fatia_api_rules_of(s, a->user, ns, owner);
    if (r == 0 && !fatia_rbac_covers(owner, servant, &missing))
        r = missing ? refuse(a, &id, missing) : -ENOMEM;
    json_decref(owner);
    json_decref(missing);
    return r;
}

static int admit_escalation(void *arg, struct fatia_admit_attrs *a)
{
    static const char *const role_fields[] = {"rules", "aggregationRule", NULL};
    static const char *const binding_fields[] = {"roleRef", "subjects", NULL};
    struct fatia_apiserver *s = arg;
    const struct fatia_kind *k = a->kind;
    bool cluster = k == &fatia_kind_clusterrole || k == &fatia_kind_clusterrolebinding;
    const char *ns = cluster ? NULL : a->ns;

    if (!a->user || fatia_user_is_admin(a->user) || !a->obj || a->subresource)
        return 0;
    if (k == &fatia_kind_role || k == &fatia_kind_clusterrole) {
        const json_t *rules = json_object_get(a->obj, "rules");
        if (unchanged(a, role_fields))
            return 0;
        if (may_on_role(s, a->user, "escalate", cluster, ns, a->name))
            return 0;
        if (cluster && json_object_get(a->obj, "aggregationRule")) {
            /* upstream: an aggregating ClusterRole may gather anything: full authority */
            json_t *all =
                json_pack("[{s:[s],s:[s],s:[s]},{s:[s],s:[s]}]", "verbs", "*", "apiGroups", "*",
                          "resources", "*", "verbs", "*", "nonResourceURLs", "*");
            int r = all ? confirm_no_escalation(s, a, NULL, all) : -ENOMEM;
            json_decref(all);
            return r;
        }
        return rules ? confirm_no_escalation(s, a, ns, rules) : 0;
    }
    if (k == &fatia_kind_rolebinding || k == &fatia_kind_clusterrolebinding) {
        const json_t *ref = json_object_get(a->obj, "roleRef");
        const char *rk = fatia_json_str(ref, "kind"), *rn = fatia_json_str(ref, "name");
        bool to_cluster = rk && !strcmp(rk, "ClusterRole");
        struct src x = {s, NULL};
        struct fatia_rbac_source src = source_of(&x);
        const json_t *role;
        json_t *rules;
        int r;
        if (unchanged(a, binding_fields) || !rk || !rn)
            return 0;
        if (may_on_role(s, a->user, "bind", to_cluster, ns, rn))
            return 0;
        role = src_role(&x, to_cluster ? NULL : ns, rn);
        if (!role) {
            fatia_diag_add(a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, "roleRef",
                           "%s \"%s\" not found: a binding to it cannot be checked against "
                           "the permissions user \"%s\" holds",
                           to_cluster ? "clusterroles.rbac.authorization.k8s.io"
                                      : "roles.rbac.authorization.k8s.io",
                           rn, a->user->name);
            return -FATIA_E_FORBIDDEN;
        }
        rules = json_array();
        if (!rules || fatia_rbac_role_rules(&src, role, rules) < 0) {
            json_decref(rules);
            return -ENOMEM;
        }
        r = confirm_no_escalation(s, a, ns, rules);
        json_decref(rules);
        return r;
    }
    return 0;
}

static const struct fatia_kind *const rbac_kinds[] = {&fatia_kind_role, &fatia_kind_clusterrole,
                                                      &fatia_kind_rolebinding,
                                                      &fatia_kind_clusterrolebinding, NULL};

int fatia_api_rbac_register(struct fatia_apiserver *s)
{
    return fatia_apiserver_add_admission(s, &(struct fatia_admission){
                                                .name = "rbac-escalation",
                                                .phase = FATIA_ADMIT_VALIDATING,
                                                .ops = FATIA_ADMIT_CREATE | FATIA_ADMIT_UPDATE,
                                                .kinds = rbac_kinds,
                                                .admit = admit_escalation,
                                                .arg = s,
                                                .bare_message = true,
                                            });
}
