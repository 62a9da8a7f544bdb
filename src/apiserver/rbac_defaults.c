/*
 * apiserver/rbac_defaults.c: the default ClusterRoles and ClusterRoleBindings, written at start.
 *
 * Model: kube-apiserver's bootstrap policy (plugin/pkg/auth/authorizer/rbac/bootstrappolicy;
 * the rules below are transcribed from its testdata/cluster-roles.yaml at commit 025f2834):
 * cluster-admin, the aggregated admin, edit and view with system:aggregate-to-{admin,edit,view},
 * system:basic-user, system:discovery, system:public-info-viewer and system:monitoring. fatia
 * adds roles generated from the kind table, so that they cannot drift from what is served:
 *   fatia:aggregate-to-edit  every verb but the status subresource's on the namespaced kinds of
 *                            groups upstream's roles do not know (Kueue, fatia.dev, kubeflow,
 *                            KServe, resource.k8s.io, events.k8s.io, ...), aggregated into edit;
 *   fatia:aggregate-to-view  get, list, watch on those kinds and their status, into view;
 *   fatia:cluster-reader     get, list, watch on every cluster-scoped kind (what every tenant
 *                            could read before RBAC: ClusterQueues, Nodes, Namespaces, ...).
 * Bindings: cluster-admin to system:masters; system:basic-user, system:discovery,
 * system:public-info-viewer (and system:unauthenticated), fatia:cluster-reader and
 * fatia:monitoring (ClusterRole system:monitoring: /metrics as before) to system:authenticated.
 *
 * The aggregated roles are stored with their rules filled in, as the aggregation controller
 * writes them (so `kubectl get clusterrole admin -o yaml` reads as upstream's); the authorizer
 * resolves aggregation itself, so a ClusterRole an admin labels aggregate-to-edit counts at once.
 *
 * Sync (one transaction, the first writes after the CRDs'): created when missing; rewritten when
 * the stored one carries rbac.authorization.kubernetes.io/autoupdate: "true" and differs (rules,
 * aggregationRule, labels; roleRef, subjects). An admin who sets the annotation to "false" keeps
 * their edit, as upstream's reconciliation does. Rejected: upstream's union of the stored and the
 * default rules (a rule fatia stops granting would never go away).
 */
#include "base/compat.h"

#include "apiserver/internal.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "model/doc.h"
#include "model/kinds/kinds.h"
#include "rbac/rbac.h"

#define AUTOUPDATE "rbac.authorization.kubernetes.io/autoupdate"

/* One YAML list per element (a literal of ISO C's 4095 characters at most). */
static const char *const defaults_yaml[] = {
    "- metadata: {name: cluster-admin}\n"
    "  rules:\n"
    "  - {apiGroups: ['*'], resources: ['*'], verbs: ['*']}\n"
    "  - {nonResourceURLs: ['*'], verbs: ['*']}\n",
    "- metadata: {name: admin}\n"
    "  aggregationRule: {clusterRoleSelectors: [{matchLabels: "
    "{rbac.authorization.k8s.io/aggregate-to-admin: 'true'}}]}\n",
    "- metadata: {name: edit, labels: {rbac.authorization.k8s.io/aggregate-to-admin: 'true'}}\n"
    "  aggregationRule: {clusterRoleSelectors: [{matchLabels: "
    "{rbac.authorization.k8s.io/aggregate-to-edit: 'true'}}]}\n",
    "- metadata: {name: view, labels: {rbac.authorization.k8s.io/aggregate-to-edit: 'true'}}\n"
    "  aggregationRule: {clusterRoleSelectors: [{matchLabels: "
    "{rbac.authorization.k8s.io/aggregate-to-view: 'true'}}]}\n",
    "- metadata: {name: 'system:aggregate-to-admin', labels: "
    "{rbac.authorization.k8s.io/aggregate-to-admin: 'true'}}\n"
    "  rules:\n"
    "  - {apiGroups: [authorization.k8s.io], resources: [localsubjectaccessreviews], verbs: "
    "[create]}\n"
    "  - {apiGroups: [rbac.authorization.k8s.io], resources: [rolebindings, roles], verbs: "
    "[create, delete, deletecollection, get, list, patch, update, watch]}\n",
    "- metadata: {name: 'system:aggregate-to-edit', labels: "
    "{rbac.authorization.k8s.io/aggregate-to-edit: 'true'}}\n"
    "  rules:\n"
    "  - {apiGroups: [''], resources: [pods/attach, pods/exec, pods/portforward, pods/proxy, "
    "secrets, services/proxy], verbs: [get, list, watch]}\n"
    "  - {apiGroups: [''], resources: [serviceaccounts], verbs: [impersonate]}\n"
    "  - {apiGroups: [''], resources: [pods, pods/attach, pods/exec, pods/portforward, "
    "pods/proxy], verbs: [create, delete, deletecollection, patch, update]}\n"
    "  - {apiGroups: [''], resources: [pods/eviction], verbs: [create]}\n"
    "  - {apiGroups: [''], resources: [configmaps, events, persistentvolumeclaims, "
    "replicationcontrollers, replicationcontrollers/scale, secrets, serviceaccounts, services, "
    "services/proxy], verbs: [create, delete, deletecollection, patch, update]}\n"
    "  - {apiGroups: [''], resources: [serviceaccounts/token], verbs: [create]}\n"
    "  - {apiGroups: [apps], resources: [daemonsets, deployments, deployments/rollback, "
    "deployments/scale, replicasets, replicasets/scale, statefulsets, statefulsets/scale], "
    "verbs: [create, delete, deletecollection, patch, update]}\n"
    "  - {apiGroups: [autoscaling], resources: [horizontalpodautoscalers], verbs: [create, "
    "delete, deletecollection, patch, update]}\n"
    "  - {apiGroups: [batch], resources: [cronjobs, jobs], verbs: [create, delete, "
    "deletecollection, patch, update]}\n"
    "  - {apiGroups: [extensions], resources: [daemonsets, deployments, deployments/rollback, "
    "deployments/scale, ingresses, networkpolicies, replicasets, replicasets/scale, "
    "replicationcontrollers/scale], verbs: [create, delete, deletecollection, patch, update]}\n"
    "  - {apiGroups: [policy], resources: [poddisruptionbudgets], verbs: [create, delete, "
    "deletecollection, patch, update]}\n"
    "  - {apiGroups: [networking.k8s.io], resources: [ingresses, networkpolicies], verbs: "
    "[create, delete, deletecollection, patch, update]}\n"
    "  - {apiGroups: [coordination.k8s.io], resources: [leases], verbs: [create, delete, "
    "deletecollection, get, list, patch, update, watch]}\n",
    "- metadata: {name: 'system:aggregate-to-view', labels: "
    "{rbac.authorization.k8s.io/aggregate-to-view: 'true'}}\n"
    "  rules:\n"
    "  - {apiGroups: [''], resources: [configmaps, endpoints, persistentvolumeclaims, "
    "persistentvolumeclaims/status, pods, replicationcontrollers, replicationcontrollers/scale, "
    "serviceaccounts, services, services/status], verbs: [get, list, watch]}\n"
    "  - {apiGroups: [''], resources: [bindings, events, limitranges, namespaces/status, "
    "pods/log, pods/status, replicationcontrollers/status, resourcequotas, "
    "resourcequotas/status], verbs: [get, list, watch]}\n"
    "  - {apiGroups: [''], resources: [namespaces], verbs: [get, list, watch]}\n"
    "  - {apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: [get, list, "
    "watch]}\n"
    "  - {apiGroups: [apps], resources: [controllerrevisions, daemonsets, daemonsets/status, "
    "deployments, deployments/scale, deployments/status, replicasets, replicasets/scale, "
    "replicasets/status, statefulsets, statefulsets/scale, statefulsets/status], verbs: [get, "
    "list, watch]}\n"
    "  - {apiGroups: [autoscaling], resources: [horizontalpodautoscalers, "
    "horizontalpodautoscalers/status], verbs: [get, list, watch]}\n"
    "  - {apiGroups: [batch], resources: [cronjobs, cronjobs/status, jobs, jobs/status], verbs: "
    "[get, list, watch]}\n"
    "  - {apiGroups: [extensions], resources: [daemonsets, daemonsets/status, deployments, "
    "deployments/scale, deployments/status, ingresses, ingresses/status, networkpolicies, "
    "replicasets, replicasets/scale, replicasets/status, replicationcontrollers/scale], verbs: "
    "[get, list, watch]}\n"
    "  - {apiGroups: [policy], resources: [poddisruptionbudgets, poddisruptionbudgets/status], "
    "verbs: [get, list, watch]}\n"
    "  - {apiGroups: [networking.k8s.io], resources: [ingresses, ingresses/status, "
    "networkpolicies], verbs: [get, list, watch]}\n",
    "- metadata: {name: 'system:basic-user'}\n"
    "  rules:\n"
    "  - {apiGroups: [authorization.k8s.io], resources: [selfsubjectaccessreviews, "
    "selfsubjectrulesreviews], verbs: [create]}\n"
    "  - {apiGroups: [authentication.k8s.io], resources: [selfsubjectreviews], verbs: [create]}\n",
    "- metadata: {name: 'system:discovery'}\n"
    "  rules:\n"
    "  - {nonResourceURLs: [/api, /api/*, /apis, /apis/*, /healthz, /livez, /openapi, "
    "/openapi/*, /readyz, /version, /version/], verbs: [get]}\n",
    "- metadata: {name: 'system:public-info-viewer'}\n"
    "  rules:\n"
    "  - {nonResourceURLs: [/healthz, /livez, /readyz, /version, /version/], verbs: [get]}\n",
    "- metadata: {name: 'system:monitoring'}\n"
    "  rules:\n"
    "  - {nonResourceURLs: [/healthz, /healthz/*, /livez, /livez/*, /metrics, /metrics/slis, "
    "/readyz, /readyz/*], verbs: [get]}\n",
    NULL};

/* name, role, groups (NULL-terminated) */
static const struct {
    const char *name, *role;
    const char *groups[3];
} default_bindings[] = {
    {"cluster-admin", "cluster-admin", {FATIA_GROUP_ADMIN}},
    {"system:basic-user", "system:basic-user", {"system:authenticated"}},
    {"system:discovery", "system:discovery", {"system:authenticated"}},
    {"system:public-info-viewer",
     "system:public-info-viewer",
     {"system:authenticated", "system:unauthenticated"}},
    {"fatia:cluster-reader", "fatia:cluster-reader", {"system:authenticated"}},
    {"fatia:monitoring", "system:monitoring", {"system:authenticated"}},
};

/* The groups whose namespaced kinds upstream's aggregate-to-{edit,view} already cover. */
static const char *const upstream_groups[] = {"",
                                              "apps",
                                              "autoscaling",
                                              "batch",
                                              "coordination.k8s.io",
                                              "discovery.k8s.io",
                                              "extensions",
                                              "networking.k8s.io",
                                              "policy",
                                              "rbac.authorization.k8s.io",
                                              NULL};

static bool in(const char *const *v, const char *s)
{
    for (; *v; v++)
        if (!strcmp(*v, s))
            return true;
    return false;
}

/* One rule per API group over the kinds pick() selects. */
static json_t *generated_rules(bool (*pick)(const struct fatia_kind *), bool status,
                               const char *const *verbs)
{
    json_t *rules = json_array(), *by_group = json_object();

    for (size_t i = 0; fatia_kinds[i]; i++) {
        const struct fatia_kind *k = fatia_kinds[i];
        json_t *res;
        if (!pick(k))
            continue;
        res = json_object_get(by_group, k->group);
        if (!res) {
            res = json_array();
            json_object_set_new(by_group, k->group, res);
        }
        json_array_append_new(res, json_string(k->plural));
        if (status && k->has_status) {
            char sub[200];
            snprintf(sub, sizeof(sub), "%s/status", k->plural);
            json_array_append_new(res, json_string(sub));
        }
    }
    {
        const char *g;
        json_t *res;
        json_object_foreach(by_group, g, res)
        {
            json_t *vs = json_array();
            for (const char *const *v = verbs; *v; v++)
                json_array_append_new(vs, json_string(*v));
            json_array_append_new(
                rules, json_pack("{s:[s],s:O,s:o}", "apiGroups", g, "resources", res, "verbs", vs));
        }
    }
    json_decref(by_group);
    return rules;
}

static bool pick_other_namespaced(const struct fatia_kind *k)
{
    return k->namespaced && !in(upstream_groups, k->group);
}

static bool pick_cluster(const struct fatia_kind *k)
{
    return !k->namespaced;
}

static const char *const verbs_read[] = {"get", "list", "watch", NULL};
static const char *const verbs_write[] = {
    "create", "delete", "deletecollection", "get", "list", "patch", "update", "watch", NULL};

static json_t *labelled(const char *name, const char *label, json_t *rules)
{
    json_t *m = json_pack("{s:s}", "name", name);
    if (label)
        json_object_set_new(m, "labels", json_pack("{s:s}", label, "true"));
    return json_pack("{s:o,s:o}", "metadata", m, "rules", rules);
}

/* ---- a source over the default set, to fill in the aggregated rules ---- */

static const json_t *set_role(void *arg, const char *ns, const char *name)
{
    const json_t *r;
    size_t i;

    if (ns)
        return NULL;
    json_array_foreach((json_t *)arg, i, r)
    {
        if (!strcmp(fatia_json_str(json_object_get(r, "metadata"), "name"), name))
            return r;
    }
    return NULL;
}

static int set_each(void *arg, int (*fn)(void *, const json_t *), void *fa)
{
    const json_t *r;
    size_t i;

    json_array_foreach((json_t *)arg, i, r)
    {
        int x = fn(fa, r);
        if (x)
            return x;
    }
    return 0;
}

static int no_bindings(void *arg, const char *ns, int (*fn)(void *, const json_t *), void *fa)
{
    (void)arg;
    (void)ns;
    (void)fn;
    (void)fa;
    return 0;
}

/* The default ClusterRoles, complete (apiVersion, kind, annotations, labels, rules). */
static json_t *default_roles(void)
{
    json_t *roles = NULL, *r;
    char why[256];
    size_t i;

    roles = json_array();
    for (const char *const *y = defaults_yaml; roles && *y; y++) {
        json_t *part = NULL;
        if (fatia_yaml_parse(*y, strlen(*y), &part, why, sizeof(why)) < 0 ||
            json_array_extend(roles, part) < 0) {
            fatia_error("the default ClusterRoles do not parse: %s", why);
            json_decref(part);
            json_decref(roles);
            return NULL;
        }
        json_decref(part);
    }
    if (!roles)
        return NULL;
    json_array_append_new(
        roles, labelled("fatia:aggregate-to-edit", "rbac.authorization.k8s.io/aggregate-to-edit",
                        generated_rules(pick_other_namespaced, false, verbs_write)));
    json_array_append_new(
        roles, labelled("fatia:aggregate-to-view", "rbac.authorization.k8s.io/aggregate-to-view",
                        generated_rules(pick_other_namespaced, true, verbs_read)));
    json_array_append_new(roles, labelled("fatia:cluster-reader", NULL,
                                          generated_rules(pick_cluster, false, verbs_read)));
    {
        struct fatia_rbac_source src = {roles, no_bindings, set_role, set_each};
        json_array_foreach(roles, i, r)
        {
            json_t *m = json_object_get(r, "metadata");
            json_t *labels = json_object_get(m, "labels");
            json_object_set_new(r, "apiVersion", json_string("rbac.authorization.k8s.io/v1"));
            json_object_set_new(r, "kind", json_string("ClusterRole"));
            json_object_set_new(m, "annotations", json_pack("{s:s}", AUTOUPDATE, "true"));
            if (!labels) {
                labels = json_object();
                json_object_set_new(m, "labels", labels);
            }
            json_object_set_new(labels, "kubernetes.io/bootstrapping",
                                json_string("rbac-defaults"));
        }
        json_array_foreach(roles, i, r)
        {
            if (json_object_get(r, "aggregationRule")) {
                json_t *rules = json_array();
                fatia_rbac_role_rules(&src, r, rules);
                json_object_set_new(r, "rules", rules);
            }
        }
    }
    return roles;
}

static json_t *default_binding(size_t i)
{
    json_t *subj = json_array();

    for (const char *const *g = default_bindings[i].groups; *g; g++)
        json_array_append_new(subj, json_pack("{s:s,s:s,s:s}", "kind", "Group", "apiGroup",
                                              "rbac.authorization.k8s.io", "name", *g));
    return json_pack("{s:s,s:s,s:{s:s,s:{s:s},s:{s:s}},s:{s:s,s:s,s:s},s:o}", "apiVersion",
                     "rbac.authorization.k8s.io/v1", "kind", "ClusterRoleBinding", "metadata",
                     "name", default_bindings[i].name, "annotations", AUTOUPDATE, "true", "labels",
                     "kubernetes.io/bootstrapping", "rbac-defaults", "roleRef", "apiGroup",
                     "rbac.authorization.k8s.io", "kind", "ClusterRole", "name",
                     default_bindings[i].role, "subjects", subj);
}

/* ---- the sync ---- */

static bool is_true_str(const char *s)
{
    return s && !strcmp(s, "true");
}

static void sync_done(struct fatia_apiserver *s, struct wtxn *tx, int err)
{
    (void)s;
    (void)tx;
    if (err < 0)
        fatia_error("the default ClusterRoles and ClusterRoleBindings: not written: %s",
                    fatia_strerror(err));
}

static bool differs(const json_t *old, const json_t *want, const char *const *fields)
{
    for (const char *const *f = fields; *f; f++) {
        const json_t *a = json_object_get(old, *f), *b = json_object_get(want, *f);
        if (!((!a && !b) || (a && b && json_equal(a, b))))
            return true;
    }
    return !json_equal(json_object_get(json_object_get(old, "metadata"), "labels"),
                       json_object_get(json_object_get(want, "metadata"), "labels"));
}

static int sync_one(struct fatia_apiserver *s, struct wtxn *tx, struct rtable *t, json_t *want,
                    const char *const *fields, const char *ts)
{
    json_t *meta = json_object_get(want, "metadata");
    const char *name = fatia_json_str(meta, "name");
    struct entry *e = fatia_api_rtable_get_or_add(t, NULL, name);
    const json_t *old, *om;
    char uid[37];

    if (!e) {
        json_decref(want);
        return -ENOMEM;
    }
    old = e->latest ? e->latest->tree : NULL;
    om = json_object_get(old, "metadata");
    if (old && (!is_true_str(fatia_json_str(json_object_get(om, "annotations"), AUTOUPDATE)) ||
                !differs(old, want, fields))) {
        json_decref(want);
        return 0;
    }
    if (old) {
        json_object_set(meta, "uid", json_object_get(om, "uid"));
        json_object_set(meta, "creationTimestamp", json_object_get(om, "creationTimestamp"));
    } else {
        fatia_api_random_uid(uid);
        json_object_set_new(meta, "uid", json_string(uid));
        json_object_set_new(meta, "creationTimestamp", json_string(ts));
    }
    return fatia_api_wtxn_put(s, tx, t, e, old ? FATIA_STORE_MODIFIED : FATIA_STORE_ADDED, want);
}

int fatia_api_rbac_sync(struct fatia_apiserver *s)
{
    static const char *const role_fields[] = {"rules", "aggregationRule", NULL};
    static const char *const binding_fields[] = {"roleRef", "subjects", NULL};
    struct rtable *rt = fatia_api_server_table_for(s, &fatia_kind_clusterrole);
    struct rtable *bt = fatia_api_server_table_for(s, &fatia_kind_clusterrolebinding);
    json_t *roles, *r;
    struct wtxn *tx;
    char ts[40];
    size_t i;
    int rc = 0;

    if (!rt || !bt)
        return 0;
    roles = default_roles();
    if (!roles)
        return -FATIA_E_PARSE;
    fatia_time_format_rfc3339(fatia_now_real_usec() / FATIA_USEC_PER_SEC * FATIA_USEC_PER_SEC,
                              false, ts, sizeof(ts));
    tx = fatia_api_wtxn_new(sync_done, NULL);
    if (!tx) {
        json_decref(roles);
        return -ENOMEM;
    }
    json_array_foreach(roles, i, r)
    {
        if (rc >= 0)
            rc = sync_one(s, tx, rt, json_incref(r), role_fields, ts);
    }
    json_decref(roles);
    for (i = 0; i < FATIA_ARRAY_SIZE(default_bindings) && rc >= 0; i++)
        rc = sync_one(s, tx, bt, default_binding(i), binding_fields, ts);
    if (rc < 0) {
        fatia_api_wtxn_abort(s, tx);
        return rc;
    }
    if (tx->ops.n)
        fatia_api_wtxn_commit(s, tx);
    else
        fatia_api_wtxn_free(tx);
    return 0;
}
