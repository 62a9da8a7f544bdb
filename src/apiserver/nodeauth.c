/*
 * apiserver/nodeauth.c: what a node identity may do: the Node authorizer and the admission
 * plugin node-restriction, as Kubernetes has them (plugin/pkg/auth/authorizer/node and
 * plugin/pkg/admission/noderestriction; docs/apiserver.md, "Node identities").
 *
 * Model. A node identity is a user named system:node:NAME in the group system:nodes (a token of
 * `fatia token create --node NAME`). A member of system:nodes with any other name is an unknown
 * node and is refused everything; a user so named outside the group is no node (no opinion, as
 * upstream). For a node the authorizer (slot 2 of authz.c's chain) decides every resource
 * request itself, allow or deny, so no RBAC binding can widen it; non-resource requests
 * (discovery, /healthz, /metrics) get no opinion and go on to RBAC.
 *
 * The graph upstream keeps (pod -> node; secret, configmap, pvc, serviceaccount, resourceclaim
 * -> pod; pv -> pvc) is not kept here: it is read from the cache at each request, by walking the
 * committed Pods whose spec.nodeName is this node (every object a pod names is in the pod; a PV
 * is reached through the PVC's spec.volumeName). A per-request walk over the pods of one
 * namespace (or every pod, for a PV) is cheap beside the request, and it cannot go stale: a
 * pod deleted or moved loses its node the grant at once. Rejected: an index kept by the watch
 * (upstream's graph, needed there at 100k pods; here a second copy of the truth to keep right).
 *
 * Grants of a node NAME (everything not listed is denied):
 *   nodes, nodes/status    read any; write (create, update, patch, delete) its own only
 *   leases                 kube-node-lease/NAME: get, create, update, patch, delete
 *   pods                   read; pods/status update and patch, pods update and patch, delete,
 *                          pods/eviction create: only a pod bound to NAME (admission checks
 *                          the body); pods create and pods/binding: never (a node does not
 *                          bind, and fatia has no mirror pods)
 *   secrets, configmaps    get of one named object used by a pod bound to NAME (also list and
 *                          watch narrowed to that name); nothing else
 *   persistentvolumeclaims get (and status update, patch) of one used by a pod bound to NAME
 *   persistentvolumes      get of one bound to such a claim
 *   resourceclaims         get of one a pod bound to NAME names
 *   serviceaccounts/token  create for a service account of a pod bound to NAME (and
 *                          node-restriction's token rule below)
 *   resourceslices         read; write: admission holds spec.nodeName to NAME
 *   deviceclasses, services, endpoints  read
 *   events (core and events.k8s.io)     create, update, patch
 *
 * node-restriction (validating, main resources and subresources) holds a node's writes to:
 *   Node        its own name; spec.taints unchanged on update; no label under
 *               node-restriction.kubernetes.io/ or any other *.kubernetes.io / *.k8s.io key than
 *               upstream's kubelet labels added or changed (kubernetes.io/{hostname,os,arch},
 *               beta.kubernetes.io/{os,arch,instance-type}, topology.kubernetes.io/,
 *               failure-domain.beta.kubernetes.io/, [*.]kubelet.kubernetes.io/,
 *               [*.]node.kubernetes.io/); no spec.configSource
 *   Pod         bound to NAME before the write and after it (so no pod is bound by a node); an
 *               update of the main resource changes metadata.finalizers only (the agent's
 *               fatia.dev/agent), a status write no label or annotation
 *   Lease       kube-node-lease/NAME
 *   ResourceSlice  spec.nodeName NAME before and after
 *   TokenRequest   (fatia_api_node_token_check, from satoken.c: a TokenRequest is no stored
 *               object and passes no admission chain) bound to a Pod of the request's
 *               namespace: kind Pod, name and uid matching the pod in record, bound to NAME (that
 *               it runs as the service account asked for is satoken.c's, for everyone); every audience named by one of that
 *               pod's projected serviceAccountToken sources (none: the API's own, named by a
 *               source without audience); expirationSeconds no longer than the longest such
 *               source's (fatia's rule: kubelet asks for the source's; upstream has no cap)
 * Rejected: trusting the node for its own pods' specs (a node that could edit a pod's spec could
 * move another tenant's GPU work onto itself).
 */
#include "base/compat.h"

#include "apiserver/internal.h"
#include "base/error.h"
#include "base/json.h"
#include "model/diag.h"
#include "model/kinds/kinds.h"
#include "rbac/rbac.h"

#define NODE_PREFIX "system:node:"
#define LEASE_NS    "kube-node-lease"

static bool is_(const char *a, const char *b)
{
    return a && b && !strcmp(a, b);
}

static const char *or_(const char *s, const char *dflt)
{
    return s ? s : dflt;
}

static bool empty(const char *s)
{
    return !s || !*s;
}

/* The node a user is: 1 (a node; its name in *ret), 0 (not a node), -1 (in system:nodes with a
 * name that names no node). */
static int node_of(const struct fatia_user *u, const char **ret)
{
    if (!u || !fatia_user_in_group(u, FATIA_GROUP_NODES))
        return 0;
    if (!u->name || strncmp(u->name, NODE_PREFIX, strlen(NODE_PREFIX)) ||
        !u->name[strlen(NODE_PREFIX)])
        return -1;
    *ret = u->name + strlen(NODE_PREFIX);
    return 1;
}

/* ---- the graph, read from the cache ---- */

enum ref {
    REF_SECRET,
    REF_CONFIGMAP,
    REF_PVC,
    REF_CLAIM,
    REF_SA,
};

static bool name_at(const json_t *obj, const char *key, const char *name)
{
    return is_(fatia_json_str(obj, key), name);
}

static bool container_uses(const json_t *c, enum ref what, const char *name)
{
    const char *key = what == REF_SECRET ? "secretKeyRef" : "configMapKeyRef";
    const char *from = what == REF_SECRET ? "secretRef" : "configMapRef";
    const json_t *e;
    size_t i;

    if (what != REF_SECRET && what != REF_CONFIGMAP)
        return false;
    json_array_foreach(json_object_get(c, "env"), i, e)
    {
        if (name_at(json_object_get(json_object_get(e, "valueFrom"), key), "name", name))
            return true;
    }
    json_array_foreach(json_object_get(c, "envFrom"), i, e)
    {
        if (name_at(json_object_get(e, from), "name", name))
            return true;
    }
    return false;
}

static bool volume_uses(const json_t *pod, const json_t *v, enum ref what, const char *name)
{
    const json_t *src;
    size_t i;

    switch (what) {
    case REF_SECRET:
        if (name_at(json_object_get(v, "secret"), "secretName", name))
            return true;
        break;
    case REF_CONFIGMAP:
        if (name_at(json_object_get(v, "configMap"), "name", name))
            return true;
        break;
    case REF_PVC: {
        char eph[600];
        if (name_at(json_object_get(v, "persistentVolumeClaim"), "claimName", name))
            return true;
        /* a generic ephemeral volume's claim is POD-VOLUME */
        snprintf(eph, sizeof(eph), "%s-%s",
                 or_(fatia_json_str(json_object_get(pod, "metadata"), "name"), ""),
                 or_(fatia_json_str(v, "name"), ""));
        return json_object_get(v, "ephemeral") && is_(eph, name);
    }
    default:
        return false;
    }
    json_array_foreach(json_object_get(json_object_get(v, "projected"), "sources"), i, src)
    {
        if (name_at(json_object_get(src, what == REF_SECRET ? "secret" : "configMap"), "name",
                    name))
            return true;
    }
    return false;
}

static bool pod_uses(const json_t *pod, enum ref what, const char *name)
{
    const json_t *spec = json_object_get(pod, "spec"), *x;
    static const char *const lists[] = {"containers", "initContainers", "ephemeralContainers"};
    size_t i;

    if (what == REF_SA)
        return is_(or_(fatia_json_str(spec, "serviceAccountName"), "default"), name);
    if (what == REF_CLAIM) {
        json_array_foreach(json_object_get(spec, "resourceClaims"), i, x)
        {
            if (name_at(x, "resourceClaimName", name))
                return true;
        }
        json_array_foreach(json_object_get(json_object_get(pod, "status"), "resourceClaimStatuses"),
                           i, x)
        {
            if (name_at(x, "resourceClaimName", name))
                return true;
        }
        return false;
    }
    json_array_foreach(json_object_get(spec, "volumes"), i, x)
    {
        if (volume_uses(pod, x, what, name))
            return true;
    }
    if (what == REF_SECRET) {
        json_array_foreach(json_object_get(spec, "imagePullSecrets"), i, x)
        {
            if (name_at(x, "name", name))
                return true;
        }
    }
    for (size_t l = 0; l < FATIA_ARRAY_SIZE(lists); l++) {
        json_array_foreach(json_object_get(spec, lists[l]), i, x)
        {
            if (container_uses(x, what, name))
                return true;
        }
    }
    return false;
}

static bool bound_to(const json_t *pod, const char *node)
{
    return is_(fatia_json_str(json_object_get(pod, "spec"), "nodeName"), node);
}

static const json_t *committed(struct fatia_apiserver *s, const struct fatia_kind *k,
                               const char *ns, const char *name)
{
    struct rtable *t = fatia_api_server_table_for(s, k);
    const struct entry *e;
    char key[600];

    if (!t || empty(name))
        return NULL;
    fatia_api_entry_key(t, k->namespaced ? ns : NULL, name, key, sizeof(key));
    e = fatia_api_rtable_find(t, key);
    return e && e->committed ? e->committed->tree : NULL;
}

/* Does a pod of namespace ns (NULL: any) bound to node use the object named? */
static bool node_uses(struct fatia_apiserver *s, const char *node, const char *ns, enum ref what,
                      const char *name)
{
    struct rtable *t = fatia_api_server_table_for(s, &fatia_kind_pod);
    size_t lo = 0, hi = 0;

    if (!t || empty(name))
        return false;
    fatia_api_rtable_range(t, ns, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        const struct entry *e = t->entries.v[i];
        if (e->committed && bound_to(e->committed->tree, node) &&
            pod_uses(e->committed->tree, what, name))
            return true;
    }
    return false;
}

/* A PV bound to a claim a pod of node uses. */
static bool node_uses_pv(struct fatia_apiserver *s, const char *node, const char *name)
{
    struct rtable *t = fatia_api_server_table_for(s, &fatia_kind_persistentvolumeclaim);

    for (size_t i = 0; t && !empty(name) && i < t->entries.n; i++) {
        const struct entry *e = t->entries.v[i];
        if (e->committed &&
            is_(fatia_json_str(json_object_get(e->committed->tree, "spec"), "volumeName"), name) &&
            node_uses(s, node, e->ns, REF_PVC, e->name))
            return true;
    }
    return false;
}

/* ---- the authorizer ---- */

static bool verb_in(const char *verb, const char *const *verbs)
{
    for (; *verbs; verbs++)
        if (!strcmp(verb, *verbs))
            return true;
    return false;
}

static const char *const READ[] = {"get", "list", "watch", NULL};
static const char *const WRITE[] = {"create", "update", "patch", "delete", NULL};
static const char *const UPDATE[] = {"update", "patch", NULL};

static int decide(void *arg, const struct fatia_user *u, const struct fatia_rbac_attrs *a,
                  char *why, size_t why_n)
{
    struct fatia_apiserver *s = arg;
    const char *node = NULL, *res = or_(a->resource, ""), *grp = or_(a->group, ""),
               *sub = or_(a->subresource, ""), *v = or_(a->verb, "");
    int n = node_of(u, &node);
    /* one named object; of a namespace for a namespaced kind (a list of every namespace's
     * objects of that name is not the read of the one a pod uses) */
    bool one = !empty(a->name), one_ns = one && !empty(a->ns);
    const char *reason = "no rule grants it to a node";

#define ALLOW(...)                                                 \
    do {                                                           \
        if (why && why_n)                                          \
            snprintf(why, why_n, "node authorizer: " __VA_ARGS__); \
        return FATIA_AUTHZ_ALLOW;                                  \
    } while (0)

    if (n == 0 || !a->resource_request)
        return n < 0 && a->resource_request ? FATIA_AUTHZ_DENY : FATIA_AUTHZ_NO_OPINION;
    if (n < 0) {
        reason = "unknown node: the user of a member of system:nodes is system:node:NAME";
        goto deny;
    }
    if (!*grp && is_(res, "nodes") && (!*sub || is_(sub, "status"))) {
        if (verb_in(v, READ))
            ALLOW("nodes are readable by nodes");
        if (verb_in(v, WRITE) && (is_(v, "create") || is_(a->name, node)))
            ALLOW("its own Node");
        reason = "a node writes only its own Node";
    } else if (is_(grp, "coordination.k8s.io") && is_(res, "leases") && !*sub) {
        if (is_(a->ns, LEASE_NS) && (verb_in(v, WRITE) || is_(v, "get")) &&
            (is_(v, "create") || is_(a->name, node)))
            ALLOW("its own Lease");
        reason = "a node reaches only its own Lease, " LEASE_NS "/NAME";
    } else if (!*grp && is_(res, "pods")) {
        const json_t *pod = committed(s, &fatia_kind_pod, a->ns, a->name);
        bool mine = pod && bound_to(pod, node);
        if (!*sub && verb_in(v, READ))
            ALLOW("pods are readable by nodes");
        if (mine && ((!*sub && (verb_in(v, UPDATE) || is_(v, "delete"))) ||
                     (is_(sub, "status") && (verb_in(v, UPDATE) || is_(v, "get"))) ||
                     (is_(sub, "eviction") && is_(v, "create"))))
            ALLOW("a pod bound to this node");
        reason = is_(sub, "binding") || (!*sub && is_(v, "create"))
                     ? "a node neither creates nor binds pods"
                     : "a node writes only the pods bound to it";
    } else if (!*grp && (is_(res, "secrets") || is_(res, "configmaps")) && !*sub) {
        if (one_ns && verb_in(v, READ) &&
            node_uses(s, node, a->ns, is_(res, "secrets") ? REF_SECRET : REF_CONFIGMAP, a->name))
            ALLOW("used by a pod bound to this node");
        reason = "a node reads only the objects its pods use, one by name";
    } else if (!*grp && is_(res, "persistentvolumeclaims")) {
        if (one_ns && ((!*sub && is_(v, "get")) || (is_(sub, "status") && verb_in(v, UPDATE))) &&
            node_uses(s, node, a->ns, REF_PVC, a->name))
            ALLOW("used by a pod bound to this node");
        reason = "a node reads only the claims its pods use, one by name";
    } else if (!*grp && is_(res, "persistentvolumes") && !*sub) {
        if (one && is_(v, "get") && node_uses_pv(s, node, a->name))
            ALLOW("bound to a claim a pod of this node uses");
        reason = "a node reads only the volumes of the claims its pods use";
    } else if (is_(grp, "resource.k8s.io") && is_(res, "resourceclaims") && !*sub) {
        if (one_ns && is_(v, "get") && node_uses(s, node, a->ns, REF_CLAIM, a->name))
            ALLOW("named by a pod bound to this node");
        reason = "a node reads only the claims its pods name";
    } else if (!*grp && is_(res, "serviceaccounts") && is_(sub, "token")) {
        if (one_ns && is_(v, "create") && node_uses(s, node, a->ns, REF_SA, a->name))
            ALLOW("the service account of a pod bound to this node");
        reason = "a node asks tokens only for the service accounts of its pods";
    } else if (is_(grp, "resource.k8s.io") && is_(res, "resourceslices") && !*sub) {
        if (verb_in(v, READ) || verb_in(v, WRITE))
            ALLOW("resource slices (node-restriction holds spec.nodeName)");
    } else if ((is_(grp, "resource.k8s.io") && is_(res, "deviceclasses")) ||
               (!*grp && (is_(res, "services") || is_(res, "endpoints")))) {
        if (!*sub && verb_in(v, READ))
            ALLOW("readable by nodes");
    } else if ((!*grp || is_(grp, "events.k8s.io")) && is_(res, "events") && !*sub) {
        if (is_(v, "create") || verb_in(v, UPDATE))
            ALLOW("events");
    }
deny:
    if (why && why_n)
        snprintf(why, why_n, "node authorizer: %s", reason);
    return FATIA_AUTHZ_DENY;
#undef ALLOW
}

/* ---- node-restriction ---- */

static int refuse(struct fatia_admit_attrs *a, const char *path, const char *fmt, ...)
    FATIA_PRINTF(3, 4);

static int refuse(struct fatia_admit_attrs *a, const char *path, const char *fmt, ...)
{
    char msg[600];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fatia_diag_add(a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, path, "node \"%s\": %s: %s",
                   a->user->name + strlen(NODE_PREFIX), path, msg);
    return -FATIA_E_FORBIDDEN;
}

static bool same(const json_t *x, const json_t *y)
{
    return (!x && !y) || (x && y && json_equal(x, y));
}

static const json_t *meta(const json_t *o, const char *key)
{
    return json_object_get(json_object_get(o, "metadata"), key);
}

static bool has_suffix(const char *s, size_t n, const char *suffix)
{
    size_t m = strlen(suffix);
    return n >= m && !memcmp(s + n - m, suffix, m);
}

/* Is the domain key[0..n) d or a subdomain of d? */
static bool domain_is(const char *key, size_t n, const char *d)
{
    size_t m = strlen(d);
    return has_suffix(key, n, d) && (n == m || key[n - m - 1] == '.');
}

/* kubelet's well-known labels (kubelet/pkg/apis/well_known_labels.go) and the label domains a
 * node may set on itself */
static bool label_allowed(const char *key)
{
    static const char *const exact[] = {"kubernetes.io/hostname",
                                        "kubernetes.io/os",
                                        "kubernetes.io/arch",
                                        "beta.kubernetes.io/os",
                                        "beta.kubernetes.io/arch",
                                        "beta.kubernetes.io/instance-type",
                                        "node.kubernetes.io/instance-type",
                                        NULL};
    const char *slash = strchr(key, '/');
    size_t n;

    if (!slash)
        return true; /* no prefix: not a reserved domain */
    n = (size_t)(slash - key);
    for (const char *const *e = exact; *e; e++)
        if (!strcmp(key, *e))
            return true;
    if (domain_is(key, n, "node-restriction.kubernetes.io"))
        return false;
    if ((n == strlen("topology.kubernetes.io") && !memcmp(key, "topology.kubernetes.io", n)) ||
        (n == strlen("failure-domain.beta.kubernetes.io") &&
         !memcmp(key, "failure-domain.beta.kubernetes.io", n)))
        return true;
    if (domain_is(key, n, "kubelet.kubernetes.io") || domain_is(key, n, "node.kubernetes.io"))
        return true;
    return !domain_is(key, n, "kubernetes.io") && !domain_is(key, n, "k8s.io");
}

static int admit_node(struct fatia_admit_attrs *a, const char *node)
{
    const json_t *labels = meta(a->obj, "labels"), *oldl = meta(a->old, "labels"), *v;
    const char *key;

    if (!is_(or_(a->name, fatia_json_str(json_object_get(a->obj, "metadata"), "name")), node))
        return refuse(a, "metadata.name", "a node writes only its own Node");
    if (a->op == FATIA_ADMIT_DELETE || is_(a->subresource, "status"))
        return 0;
    if (json_object_get(json_object_get(a->obj, "spec"), "configSource"))
        return refuse(a, "spec.configSource", "a node may not set its configSource");
    if (a->op == FATIA_ADMIT_UPDATE &&
        !same(json_object_get(json_object_get(a->obj, "spec"), "taints"),
              json_object_get(json_object_get(a->old, "spec"), "taints")))
        return refuse(a, "spec.taints", "a node may not change its own taints");
    json_object_foreach((json_t *)labels, key, v)
    {
        if (same(v, json_object_get(oldl, key)) || label_allowed(key))
            continue;
        return refuse(a, "metadata.labels", "a node may not set the label \"%s\"", key);
    }
    json_object_foreach((json_t *)oldl, key, v)
    {
        if (!json_object_get(labels, key) && !label_allowed(key))
            return refuse(a, "metadata.labels", "a node may not remove the label \"%s\"", key);
    }
    return 0;
}

static int admit_pod(struct fatia_admit_attrs *a, const char *node)
{
    static const char *const meta_keys[] = {"labels", "annotations", "ownerReferences", NULL};

    if (a->op == FATIA_ADMIT_CREATE)
        return refuse(a, "spec.nodeName", "a node does not create pods");
    if (!a->old || !bound_to(a->old, node))
        return refuse(a, "spec.nodeName", "the pod is not bound to this node");
    if (a->op == FATIA_ADMIT_DELETE)
        return 0;
    if (!bound_to(a->obj, node))
        return refuse(a, "spec.nodeName", "a node does not move pods");
    for (const char *const *k = meta_keys; *k; k++) {
        if (!same(meta(a->obj, *k), meta(a->old, *k))) {
            char path[64];
            snprintf(path, sizeof(path), "metadata.%s", *k);
            return refuse(a, path, "a node may not change a pod's %s", *k);
        }
    }
    if (!is_(a->subresource, "status") &&
        !same(json_object_get(a->obj, "spec"), json_object_get(a->old, "spec")))
        return refuse(a, "spec", "a node may not change a pod's spec");
    return 0;
}

static int admit(void *arg, struct fatia_admit_attrs *a)
{
    const char *node = NULL, *k = a->kind->kind, *g = a->kind->group;
    const json_t *o = a->obj ? a->obj : a->old;
    (void)arg;

    if (node_of(a->user, &node) <= 0)
        return 0; /* an unknown node was refused by the authorizer */
    if (!*g && is_(k, "Node"))
        return admit_node(a, node);
    if (!*g && is_(k, "Pod"))
        return admit_pod(a, node);
    if (is_(g, "coordination.k8s.io") && is_(k, "Lease")) {
        if (!is_(a->ns, LEASE_NS) ||
            !is_(fatia_json_str(json_object_get(o, "metadata"), "name"), node))
            return refuse(a, "metadata.name", "a node writes only its own Lease, %s/%s", LEASE_NS,
                          node);
    } else if (is_(g, "resource.k8s.io") && is_(k, "ResourceSlice")) {
        if ((a->obj && !is_(fatia_json_str(json_object_get(a->obj, "spec"), "nodeName"), node)) ||
            (a->old && !is_(fatia_json_str(json_object_get(a->old, "spec"), "nodeName"), node)))
            return refuse(a, "spec.nodeName", "a node writes only the ResourceSlices of itself");
    }
    return 0;
}

/* ---- node-restriction of TokenRequests (upstream's admitServiceAccount, with the audience
 * rule of ServiceAccountNodeAudienceRestriction; the expiry cap is fatia's) ---- */

/* The longest expirationSeconds (default 3600) of the pod's serviceAccountToken sources for
 * aud (NULL: the API's own); 0: no source names it. */
static int64_t source_exp(const json_t *pod, const char *aud, const char *api_aud)
{
    const json_t *v, *src;
    size_t i, j;
    int64_t best = 0;

    json_array_foreach(json_object_get(json_object_get(pod, "spec"), "volumes"), i, v)
    {
        json_array_foreach(json_object_get(json_object_get(v, "projected"), "sources"), j, src)
        {
            const json_t *t = json_object_get(src, "serviceAccountToken"), *e;
            const char *sa = t ? fatia_json_str(t, "audience") : NULL;
            int64_t x;
            if (!t)
                continue;
            if (empty(sa))
                sa = api_aud;
            if (!is_(sa, aud ? aud : api_aud))
                continue;
            e = json_object_get(t, "expirationSeconds");
            x = json_is_integer(e) && json_integer_value(e) > 0 ? json_integer_value(e) : 3600;
            if (x > best)
                best = x;
        }
    }
    return best;
}

int fatia_api_node_token_check(struct fatia_apiserver *s, const struct fatia_user *u,
                               const char *ns, const char *sa, const json_t *ref,
                               const json_t *auds, const char *api_aud, int64_t exp_s, char *why,
                               size_t why_n)
{
    const char *node = NULL, *pname = fatia_json_str(ref, "name"),
               *uid = fatia_json_str(ref, "uid");
    const char *api = fatia_json_str(ref, "apiVersion");
    const json_t *pod, *a;
    int64_t cap = 0;
    size_t i;

    if (node_of(u, &node) <= 0)
        return 0; /* an unknown node was refused by the authorizer */
    if (!ref || !is_(fatia_json_str(ref, "kind"), "Pod") || (api && !is_(api, "v1")) ||
        empty(pname)) {
        snprintf(why, why_n, "node \"%s\": node requested token not bound to a pod", node);
        return 403;
    }
    if (empty(uid)) {
        snprintf(why, why_n, "node \"%s\": node requested token with a pod binding without a uid",
                 node);
        return 403;
    }
    pod = committed(s, &fatia_kind_pod, ns, pname);
    if (!pod) {
        snprintf(why, why_n, "pods \"%s\" not found", pname);
        return 404;
    }
    if (!is_(fatia_json_str(json_object_get(pod, "metadata"), "uid"), uid)) {
        snprintf(why, why_n,
                 "node \"%s\": the UID in the bound object reference (%s) does not match the UID "
                 "in record. The object might have been deleted and then recreated",
                 node, uid);
        return 403;
    }
    if (!bound_to(pod, node)) {
        snprintf(why, why_n,
                 "node \"%s\": node requested token bound to a pod scheduled on a different node",
                 node);
        return 403;
    }
    if (!json_array_size(auds)) {
        cap = source_exp(pod, NULL, api_aud);
        if (!cap) {
            snprintf(why, why_n,
                     "node \"%s\": serviceaccount %s/%s does not have access to the audience "
                     "\"%s\"",
                     node, ns, sa, api_aud);
            return 403;
        }
    }
    json_array_foreach(auds, i, a)
    {
        int64_t x = json_is_string(a) ? source_exp(pod, json_string_value(a), api_aud) : 0;
        if (!x) {
            snprintf(why, why_n,
                     "node \"%s\": serviceaccount %s/%s does not have access to the audience "
                     "\"%s\"",
                     node, ns, sa, json_is_string(a) ? json_string_value(a) : "");
            return 403;
        }
        if (!cap || x < cap)
            cap = x;
    }
    if (exp_s > cap) {
        snprintf(why, why_n,
                 "node \"%s\": expirationSeconds %lld is longer than the pod's projection asks "
                 "for (%lld)",
                 node, (long long)exp_s, (long long)cap);
        return 403;
    }
    return 0;
}

int fatia_api_node_register(struct fatia_apiserver *s)
{
    int r = fatia_api_authorizer_add(s, decide, s);

    return r ? r
             : fatia_apiserver_add_admission(
                   s, &(struct fatia_admission){
                          .name = "node-restriction",
                          .phase = FATIA_ADMIT_VALIDATING,
                          .ops = FATIA_ADMIT_CREATE | FATIA_ADMIT_UPDATE | FATIA_ADMIT_DELETE,
                          .subresources = true,
                          .admit = admit,
                      });
}
