/*
 * controller/endpoints.c: Endpoints and EndpointSlices of Services, as kube-controller-manager's
 * endpoint and endpointslice controllers keep them (pkg/controller/endpoint,
 * pkg/controller/endpointslice): the pods of the Service's namespace that its selector matches,
 * not terminating and with a pod IP, ready ones as addresses, the others as notReadyAddresses
 * (all as addresses with publishNotReadyAddresses); each Service port's targetPort resolved
 * against the pod (a number as is, a name through the pod's container ports: a pod without it is
 * left out of that port, as upstream FindPort does).
 *
 * Model: the key is the Service's "ns/name"; a pass computes both objects from the informers and
 * writes each only when it differs from what is stored (create, or update carrying its
 * resourceVersion). Pods are grouped into one subset per set of resolved ports (upstream's
 * RepackSubsets merges subsets with equal ports the same way). The EndpointSlice is one per
 * Service and address type IPv4, named "<service>-<5 letters of a hash of the name>" with the
 * labels kubernetes.io/service-name and endpointslice.kubernetes.io/managed-by; both carry an
 * ownerReference to the Service, so the garbage collector removes them with it. A Service
 * without a selector is left alone: its Endpoints are the user's (upstream's rule).
 *
 * Pods run as processes on the host in process mode, so every address is the node's (podIP
 * 127.0.0.1 on one box): docs/apiserver.md says how a Service's port is reached there.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "controller/ctl_internal.h"
#include "model/selector.h"

struct endpoints_ctl {
    struct ctl *ctl;
    struct wq *q;
    struct informer *services, *pods, *endpoints, *slices;
};

/* targetPort of sp resolved in pod: >0, or 0 when the pod has no such named port */
static int64_t resolve_port(const json_t *sp, const json_t *pod)
{
    const json_t *tp = json_object_get(sp, "targetPort");
    json_t *c, *p;
    size_t i, j;

    if (json_is_integer(tp))
        return json_integer_value(tp);
    if (!json_is_string(tp)) {
        int64_t port = 0;
        fatia_json_int(sp, "port", &port);
        return port;
    }
    json_array_foreach(fatia_json_path(pod, "spec.containers"), i, c)
    {
        json_array_foreach(json_object_get(c, "ports"), j, p)
        {
            const char *name = fatia_json_str(p, "name");
            int64_t cp = 0;
            if (name && !strcmp(name, json_string_value(tp)) &&
                fatia_json_int(p, "containerPort", &cp))
                return cp;
        }
    }
    return 0;
}

static json_t *target_ref(const json_t *pod)
{
    return json_pack("{s:s,s:s,s:s,s:s}", "kind", "Pod", "namespace",
                     fatia_ctlr_meta_str(pod, "namespace"), "name",
                     fatia_ctlr_meta_str(pod, "name"), "uid", fatia_ctlr_meta_str(pod, "uid"));
}

static json_t *owner_ref(const json_t *svc)
{
    return json_pack("[{s:s,s:s,s:s,s:s,s:b,s:b}]", "apiVersion", "v1", "kind", "Service", "name",
                     fatia_ctlr_meta_str(svc, "name"), "uid", fatia_ctlr_meta_str(svc, "uid"),
                     "controller", 1, "blockOwnerDeletion", 1);
}

/* subsets (Endpoints) and endpoints + ports (EndpointSlice) of svc */
static void compute(struct endpoints_ctl *e, const json_t *svc, json_t *subsets, json_t *slice_eps,
                    json_t *slice_ports)
{
    const json_t *ports = fatia_json_path(svc, "spec.ports");
    const char *ns = fatia_ctlr_meta_str(svc, "namespace");
    bool all_ready = json_is_true(fatia_json_path(svc, "spec.publishNotReadyAddresses"));
    struct fatia_selector *sel = NULL;
    json_t *groups = json_object(); /* ports text -> subset */
    char why[200];
    size_t i;
    json_t *sp;

    if (!groups)
        return;
    {
        /* the selector of a Service is a plain map: matchLabels */
        json_t *ls = json_pack("{s:O}", "matchLabels", fatia_json_path(svc, "spec.selector"));
        if (!ls || fatia_selector_from_json(ls, &sel, why, sizeof(why)) < 0)
            sel = NULL;
        json_decref(ls);
    }
    INFORMER_FOREACH(e->pods, it)
    {
        const json_t *pod = it->obj;
        const char *ip = fatia_json_str(json_object_get(pod, "status"), "podIP");
        const char *pns = fatia_ctlr_meta_str(pod, "namespace");
        bool ready;
        json_t *pp, *addr, *sub;
        char *text;
        if (!sel || !pns || strcmp(pns, ns) || !ip || !*ip || fatia_ctlr_obj_deleting(pod) ||
            !fatia_selector_matches(sel, fatia_json_path(pod, "metadata.labels")))
            continue;
        ready = all_ready || fatia_ctlr_cond_true(pod, "Ready");
        pp = json_array();
        json_array_foreach(ports, i, sp)
        {
            int64_t port = resolve_port(sp, pod);
            const char *name = fatia_json_str(sp, "name"), *proto = fatia_json_str(sp, "protocol");
            if (port > 0)
                json_array_append_new(pp, json_pack("{s:s,s:I,s:s}", "name", name ? name : "",
                                                    "port", (json_int_t)port, "protocol",
                                                    proto ? proto : "TCP"));
        }
        addr = json_pack("{s:s,s:o}", "ip", ip, "targetRef", target_ref(pod));
        if (fatia_json_str(json_object_get(pod, "spec"), "nodeName"))
            json_object_set_new(
                addr, "nodeName",
                json_string(fatia_json_str(json_object_get(pod, "spec"), "nodeName")));
        /* the slice: one endpoint per pod */
        json_array_append_new(slice_eps, json_pack("{s:[s],s:{s:b,s:b,s:b},s:o}", "addresses", ip,
                                                   "conditions", "ready", ready, "serving", ready,
                                                   "terminating", 0, "targetRef", target_ref(pod)));
        if (!json_array_size(slice_ports) && json_array_size(pp))
            json_array_extend(slice_ports, pp);
        text = json_dumps(pp, JSON_COMPACT | JSON_SORT_KEYS);
        sub = text ? json_object_get(groups, text) : NULL;
        if (text && !sub) {
            sub = json_pack("{s:[],s:[],s:O}", "addresses", "notReadyAddresses", "ports", pp);
            json_object_set_new(groups, text, sub);
        }
        if (sub)
            json_array_append_new(json_object_get(sub, ready ? "addresses" : "notReadyAddresses"),
                                  addr);
        else
            json_decref(addr);
        free(text);
        json_decref(pp);
    }
    {
        const char *k;
        json_t *sub;
        json_object_foreach(groups, k, sub)
        {
            (void)k;
            if (!json_array_size(json_object_get(sub, "addresses")))
                json_object_del(sub, "addresses");
            if (!json_array_size(json_object_get(sub, "notReadyAddresses")))
                json_object_del(sub, "notReadyAddresses");
            if (!json_array_size(json_object_get(sub, "ports")))
                json_object_del(sub, "ports");
            json_array_append(subsets, sub);
        }
    }
    json_decref(groups);
    fatia_selector_free(sel);
}

static void slice_name(const char *svc, char *buf, size_t n)
{
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz";
    uint32_t h = 2166136261u;
    char suffix[6];

    for (const char *p = svc; *p; p++) {
        h ^= (unsigned char)*p;
        h *= 16777619u;
    }
    for (int i = 0; i < 5; i++, h /= 20)
        suffix[i] = alphabet[h % 20];
    suffix[5] = '\0';
    snprintf(buf, n, "%.200s-%s", svc, suffix);
}

/* writes want unless the stored obj (may be NULL) already has the same fields */
static void put(struct endpoints_ctl *e, const char *key, const json_t *have, json_t *want,
                const char *const *fields)
{
    bool same = have != NULL;

    for (const char *const *f = fields; same && *f; f++) {
        const json_t *a = json_object_get(have, *f), *b = json_object_get(want, *f);
        same = (!a && !b) || (a && b && json_equal(a, b));
    }
    if (same)
        return;
    if (have) {
        const char *rv = fatia_ctlr_meta_str(have, "resourceVersion");
        if (rv)
            json_object_set_new(json_object_get(want, "metadata"), "resourceVersion",
                                json_string(rv));
        fatia_ctlr_update(
            e->ctl, want,
            &(struct op_opts){
                .wq = e->q, .key = key, .quiet_conflict = true, .quiet_missing = true});
    } else {
        fatia_ctlr_create(e->ctl, want,
                          &(struct op_opts){.wq = e->q, .key = key, .quiet_conflict = true});
    }
}

static void reconcile(void *arg, const char *key)
{
    static const char *const ep_fields[] = {"subsets", NULL};
    static const char *const slice_fields[] = {"endpoints", "ports", "addressType", NULL};
    struct endpoints_ctl *e = arg;
    const json_t *svc = fatia_ctlr_informer_get_key(e->services, key);
    json_t *subsets, *eps, *ports, *ep, *slice;
    const char *ns, *name;
    char sname[300];

    if (!svc || fatia_ctlr_obj_deleting(svc) ||
        !json_object_size(fatia_json_path(svc, "spec.selector")))
        return;
    ns = fatia_ctlr_meta_str(svc, "namespace");
    name = fatia_ctlr_meta_str(svc, "name");
    subsets = json_array();
    eps = json_array();
    ports = json_array();
    if (!subsets || !eps || !ports)
        goto out;
    compute(e, svc, subsets, eps, ports);
    ep = json_pack("{s:s,s:s,s:{s:s,s:s,s:o},s:O}", "apiVersion", "v1", "kind", "Endpoints",
                   "metadata", "name", name, "namespace", ns, "ownerReferences", owner_ref(svc),
                   "subsets", subsets);
    if (ep)
        put(e, key, fatia_ctlr_informer_get(e->endpoints, ns, name), ep, ep_fields);
    json_decref(ep);
    slice_name(name, sname, sizeof(sname));
    slice = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s,s:s},s:o},s:s,s:O,s:O}", "apiVersion",
                      "discovery.k8s.io/v1", "kind", "EndpointSlice", "metadata", "name", sname,
                      "namespace", ns, "labels", "kubernetes.io/service-name", name,
                      "endpointslice.kubernetes.io/managed-by", "endpointslice-controller.k8s.io",
                      "ownerReferences", owner_ref(svc), "addressType", "IPv4", "endpoints", eps,
                      "ports", ports);
    if (slice)
        put(e, key, fatia_ctlr_informer_get(e->slices, ns, sname), slice, slice_fields);
    json_decref(slice);
out:
    json_decref(subsets);
    json_decref(eps);
    json_decref(ports);
}

static void on_service(void *arg, const json_t *old, const json_t *obj)
{
    struct endpoints_ctl *e = arg;
    char key[600];

    fatia_ctlr_obj_key(obj ? obj : old, key, sizeof(key));
    fatia_ctlr_wq_add(e->q, key);
}

/* a pod's change concerns the Services of its namespace whose selector matches it, before or
 * after */
static void on_pod(void *arg, const json_t *old, const json_t *obj)
{
    struct endpoints_ctl *e = arg;
    const json_t *p = obj ? obj : old;
    const char *ns = fatia_ctlr_meta_str(p, "namespace");

    INFORMER_FOREACH(e->services, it)
    {
        const char *sns = fatia_ctlr_meta_str(it->obj, "namespace");
        const json_t *sel = fatia_json_path(it->obj, "spec.selector");
        bool hit = false;
        const char *k;
        json_t *v;
        if (!ns || !sns || strcmp(ns, sns) || !json_object_size(sel))
            continue;
        for (int pass = 0; pass < 2 && !hit; pass++) {
            const json_t *pod = pass ? old : obj;
            const json_t *labels = fatia_json_path(pod, "metadata.labels");
            bool all = pod != NULL;
            json_object_foreach((json_t *)sel, k, v)
            {
                const char *lv = fatia_json_str(labels, k);
                all &= lv && json_is_string(v) && !strcmp(lv, json_string_value(v));
            }
            hit = all;
        }
        if (hit)
            fatia_ctlr_wq_add(e->q, it->key);
    }
}

int fatia_ctlr_endpoints_ctl_new(struct ctl *c, struct endpoints_ctl **ret)
{
    struct endpoints_ctl *e = fatia_calloc(1, sizeof(*e));
    int rc;

    if (!e)
        return -ENOMEM;
    e->ctl = c;
    e->q = fatia_ctlr_wq_new(c, "endpoints", reconcile, e);
    e->services = fatia_ctlr_informer(c, fatia_kind_find("v1", "Service", NULL));
    e->pods = fatia_ctlr_informer(c, fatia_kind_find("v1", "Pod", NULL));
    e->endpoints = fatia_ctlr_informer(c, fatia_kind_find("v1", "Endpoints", NULL));
    e->slices =
        fatia_ctlr_informer(c, fatia_kind_find("discovery.k8s.io/v1", "EndpointSlice", NULL));
    if (!e->q || !e->services || !e->pods || !e->endpoints || !e->slices) {
        fatia_ctlr_endpoints_ctl_free(e);
        return -ENOMEM;
    }
    if ((rc = fatia_ctlr_informer_on(e->services, on_service, e)) < 0 ||
        (rc = fatia_ctlr_informer_on(e->pods, on_pod, e)) < 0) {
        fatia_ctlr_endpoints_ctl_free(e);
        return rc;
    }
    *ret = e;
    return 0;
}

void fatia_ctlr_endpoints_ctl_free(struct endpoints_ctl *e)
{
    if (!e)
        return;
    fatia_ctlr_wq_free(e->q);
    fatia_free(e);
}
