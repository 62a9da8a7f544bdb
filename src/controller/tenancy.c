/*
 * controller/tenancy.c: the tenant rules: admission rules that no token grant lifts, and the
 * quota door (docs/apiserver.md, "Roles").
 *
 * Model. Identities are of two kinds:
 *   trusted  system:masters (fatiad's own controllers and node agent, the admin kubeconfig) and
 *            system:nodes (node identities);
 *   tenant   everyone else: a token of `fatia token create`, whatever its namespaces, groups or
 *            access.
 * A tenant's write is held to the rules below whatever its token allows (as Kubernetes'
 * NodeRestriction holds a node whatever RBAC grants it). Each refusal is a 403 whose message
 * names the field path and the rule.
 *
 *   status       no status subresource of any kind (Workload, Job, Pod, LocalQueue,
 *                ResourceClaim, ...): status is what controllers and agents observed;
 *   reserved     no change (on create: no value) of the labels, annotations and finalizers that
 *                fatia and Kueue own: fatia.dev/slices, fatia.dev/devices, fatia.dev/injected,
 *                kueue.x-k8s.io/{managed,podset,job-uid}, the finalizers fatia.dev/agent,
 *                kueue.x-k8s.io/{managed,resource-in-use} and batch.kubernetes.io/job-tracking
 *                (without them a pod could go while its process and its slice stay, and its
 *                quota with it); also in a Job's pod template and a
 *                Workload's pod sets (a template's annotation becomes its pods');
 *   usage        no write of a UsageRecord (the usage controller's record of what was charged:
 *                a tenant that could delete its records would erase its usage);
 *   gate         the scheduling gate kueue.x-k8s.io/admission is never removed by a tenant;
 *   suspend      a Job with a queue label (before or after the write) is never un-suspended by a
 *                tenant: Kueue un-suspends it on admission (this covers the combined patch that
 *                drops the label and un-suspends);
 *   queue        the queue label of a Pod or Job does not change once created (Kueue's webhooks
 *                forbid it once running; fatia also while queued, because the workload was
 *                made for the first queue and would be admitted there); a Workload's
 *                spec.podSets, queueName and priority do not change once it has
 *                status.admission (Kueue's webhook), nor ever when a Job or Pod owns it (it is
 *                that object's spec: a queued Job's Workload cut to count 0 was admitted for
 *                nothing while the Job ran a GPU pod; Kueue would rebuild it, fatia refuses);
 *   bind         spec.nodeName is never set or changed by a tenant on a pod that requests GPUs;
 *   immutable    a tenant's update keeps a GPU pod's containers and their resources and its
 *                resourceClaims (the pod's spec is immutable upstream), and a Job's pod template
 *                (batch/v1: immutable, but for the scheduling directives while suspended: a
 *                queued Job whose template grew would be admitted for its first size);
 *   owner        a tenant's pod that requests GPUs may not name a Job as its controller (only the
 *                Job controller makes those, and Kueue admits the Job, not its pods); a tenant's
 *                Workload has no owners (Kueue makes a Job's or Pod's Workload from its spec: a
 *                hand-made one owned by a Job could be admitted for less than the Job runs), and
 *                a Workload with owners is not deleted by a tenant (Kueue keeps it with its
 *                resource-in-use finalizer while admitted; without the rule, deleting it would
 *                release the quota while the pods hold the GPUs) (deletecollection too);
 *   door         a pod, Job or Notebook (whose pod the notebook controller makes, so it is
 *                held here) that requests a GPU resource (nvidia.com/..., fatia.dev/..., or a DRA
 *                claim) carries a queue label: if it has none and the namespace is managed
 *                (SchedulerConfig spec.manageJobsWithoutQueueName, default true, and
 *                spec.managedJobsNamespaceSelector, default every namespace), it gets the
 *                LocalQueue named "default" when the namespace has one
 *                (spec.localQueueDefaulting, default true), else it is refused with a message
 *                that says which label to set. A write that removes the queue label of such an
 *                object is refused. Without the controllers (fatiad --no-controllers: the door
 *                is registered with no client, so no cache) the door is closed: a tenant's new
 *                pod or Job that requests a GPU resource is refused, queue label or not, with a
 *                message that GPU work needs the controllers (nothing would admit or place it);
 *   runtime      (in the door, which has the caches) a tenant's pod or Job template names the
 *                fatia-process RuntimeClass (host processes, no container) only in a Namespace
 *                annotated fatia.dev/process-runtime: allowed by the admin; else 422 on
 *                spec.runtimeClassName (without the controllers: never);
 *   hostport     (in the door too) a tenant's container port with a non-zero hostPort only in
 *                a Namespace annotated fatia.dev/host-ports: allowed; else 422 on
 *                ...containers[i].ports[j].hostPort. Both template rules hold for the pod
 *                templates of Deployments, ReplicaSets, StatefulSets, DaemonSets and CronJobs
 *                as well: their pods are made by trusted controllers, so the door stands there.
 *
 * Every rule holds in every mode: the daemon registers the three plugins whether or not the
 * controllers run (fatia_controllers_tenant_webhooks without them). tenancy-restrict and
 * tenancy-status read nothing but the request (arg NULL); only the door reads caches.
 *
 * Two plugins, because some rules must see the tenant's own write and others the final object:
 *   tenancy-status (validating, every kind, status writes only): status.
 *   tenancy-restrict (mutating, first of all plugins, Pods, Jobs, Workloads; Notebooks: reserved
 *       only, in their own metadata; their template's reserved keys the notebook controller
 *       drops): reserved, gate,
 *       suspend, queue (the queue rule before the suspend rule: the combined patch that drops
 *       the label and un-suspends is refused as either). It runs before any other plugin so that what the
 *       profile injection or kueue-defaults write (fatia.dev/injected, the managed label, the
 *       gate) is not mistaken for the tenant's; it changes nothing.
 *   quota-door (mutating, after hardware-profile-injection, before kueue-defaults): door, bind,
 *       immutable, owner. After the profile injection because a profile may be what sets the
 *       GPU resources and the queue; before kueue-defaults because the defaulted queue label
 *       must get the gate and the suspension like any other.
 * Both are pure functions of (user, old, new, cached SchedulerConfig, Namespace, LocalQueue):
 * no I/O, no clock.
 *
 * Choices rejected: a validating plugin for everything (it would see the webhooks' own labels
 * and annotations as the tenant's); checking "Admitted" for the suspend rule (Kueue re-suspends
 * a Job whose Workload is not admitted; refusing every tenant un-suspend of a queued Job gives
 * the same outcome without a race between the write and the admission); holding admins to the
 * rules (fatiad's controllers are system:masters, and the tests' fake agents write status as
 * the admin).
 */
#include "base/compat.h"

#include "controller/tenancy.h"

#include "base/error.h"
#include "base/json.h"
#include "controller/ctl.h"
#include "controller/kueue.h"
#include "model/kind.h"
#include "model/selector.h"

#define RESTRICT_NAME "tenancy-restrict"
#define STATUS_NAME   "tenancy-status"
#define DOOR_NAME     "quota-door"
#define DEFAULT_LQ    "default"

static const char *const reserved_labels[] = {KUEUE_LABEL_MANAGED,
                                              KUEUE_LABEL_PODSET,
                                              KUEUE_LABEL_JOB_UID,
                                              FATIA_ANN_SLICES,
                                              FATIA_ANN_DEVICES,
                                              "fatia.dev/injected",
                                              NULL};
static const char *const reserved_annotations[] = {FATIA_ANN_SLICES, FATIA_ANN_DEVICES,
                                                   "fatia.dev/injected", KUEUE_LABEL_MANAGED, NULL};
static const char *const reserved_finalizers[] = {AGENT_FINALIZER, KUEUE_FINALIZER_POD,
                                                  KUEUE_FINALIZER_RES, JOB_FINALIZER_TRACK, NULL};

static bool trusted(const struct fatia_user *u)
{
    return !u || fatia_user_in_group(u, FATIA_GROUP_ADMIN) ||
           fatia_user_in_group(u, FATIA_GROUP_NODES);
}

static bool is_kind(const struct fatia_kind *k, const char *group, const char *kind)
{
    return !strcmp(k->group, group) && !strcmp(k->kind, kind);
}

static int deny(struct fatia_admit_attrs *a, const char *path, const char *fmt, ...)
    FATIA_PRINTF(3, 4);

static int deny(struct fatia_admit_attrs *a, const char *path, const char *fmt, ...)
{
    char msg[768];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fatia_diag_add(a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, path, "%s: %s", path, msg);
    return -FATIA_E_FORBIDDEN;
}

static bool str_is(const json_t *v, const char *s)
{
    const char *t = json_string_value(v);

    return t && !strcmp(t, s);
}

static bool same(const json_t *x, const json_t *y)
{
    if (!x || !y)
        return !x && !y;
    return json_equal(x, y);
}

static const json_t *get(const json_t *obj, const char *key)
{
    return obj ? json_object_get(obj, key) : NULL;
}

/* The GPU resource a pod spec requests ("nvidia.com/gpu", "resourceClaims"), or NULL; with
 * path, also the field that requests it ("spec.containers[0].resources.limits[nvidia.com/gpu]",
 * "spec.resourceClaims"; prefix is the pod spec's own path). */
static const char *gpu_request_at(const json_t *pspec, const char *prefix, char *path, size_t n)
{
    static const char *const lists[] = {"containers", "initContainers", NULL};
    const json_t *c, *claims = get(pspec, "resourceClaims");
    size_t i;

    if (json_array_size(claims)) {
        if (path)
            snprintf(path, n, "%s.resourceClaims", prefix);
        return "resourceClaims";
    }
    for (const char *const *l = lists; *l; l++) {
        json_array_foreach(get(pspec, *l), i, c)
        {
            static const char *const kinds[] = {"requests", "limits", NULL};
            for (const char *const *k = kinds; *k; k++) {
                const char *key;
                const json_t *v;
                json_object_foreach((json_t *)get(get(c, "resources"), *k), key, v)
                {
                    (void)v;
                    if (strncmp(key, "nvidia.com/", 11) && strncmp(key, "fatia.dev/", 10))
                        continue;
                    if (path)
                        snprintf(path, n, "%s.%s[%zu].resources.%s[%s]", prefix, *l, i, *k, key);
                    return key;
                }
            }
        }
    }
    return NULL;
}

static const char *gpu_request(const json_t *pspec)
{
    return gpu_request_at(pspec, "spec", NULL, 0);
}

/* ---- tenancy-restrict ---- */

/* Reserved keys of a metadata-like object (labels and annotations) and finalizers: new must
 * equal old for each. prefix names the place ("metadata", "spec.template.metadata"). */
static int check_reserved(struct fatia_admit_attrs *a, const json_t *nm, const json_t *om,
                          const char *prefix)
{
    char path[256];

    for (const char *const *k = reserved_labels; *k; k++)
        if (!same(get(get(nm, "labels"), *k), get(get(om, "labels"), *k))) {
            snprintf(path, sizeof(path), "%s.labels[%s]", prefix, *k);
            return deny(a, path,
                        "the label is reserved to fatia's controllers (rule: reserved); "
                        "tenants may not set, change or remove it");
        }
    for (const char *const *k = reserved_annotations; *k; k++)
        if (!same(get(get(nm, "annotations"), *k), get(get(om, "annotations"), *k))) {
            snprintf(path, sizeof(path), "%s.annotations[%s]", prefix, *k);
            return deny(a, path,
                        "the annotation is reserved to fatia's controllers (rule: reserved); "
                        "only placement and the profile injection write it");
        }
    for (const char *const *f = reserved_finalizers; *f; f++) {
        bool hn = false, ho = false;
        const json_t *v;
        size_t i;
        json_array_foreach(get(nm, "finalizers"), i, v) hn |= str_is(v, *f);
        json_array_foreach(get(om, "finalizers"), i, v) ho |= str_is(v, *f);
        if (hn != ho) {
            snprintf(path, sizeof(path), "%s.finalizers", prefix);
            return deny(a, path,
                        "the finalizer %s is reserved to fatia's controllers and node agent "
                        "(rule: reserved); tenants may not add or remove it",
                        *f);
        }
    }
    return 0;
}

static bool has_gate(const json_t *pod)
{
    const json_t *g;
    size_t i;

    json_array_foreach(get(get(pod, "spec"), "schedulingGates"), i,
                       g) if (str_is(get(g, "name"), KUEUE_GATE_ADMISSION)) return true;
    return false;
}

static bool suspended(const json_t *job)
{
    return json_is_true(get(get(job, "spec"), "suspend"));
}

static int restrict_pod(struct fatia_admit_attrs *a)
{
    const json_t *old = a->old, *obj = a->obj;

    if (old && has_gate(old) && !has_gate(obj))
        return deny(a, "spec.schedulingGates",
                    "tenants may not remove Kueue's scheduling gate " KUEUE_GATE_ADMISSION
                    " (rule: gate); Kueue lifts it when the pod's workload is admitted");
    return 0;
}

static int restrict_job(struct fatia_admit_attrs *a)
{
    const json_t *old = a->old, *obj = a->obj;
    const json_t *tn = get(get(get(obj, "spec"), "template"), "metadata");
    const json_t *to = get(get(get(old, "spec"), "template"), "metadata");
    int r = check_reserved(a, tn, to, "spec.template.metadata");

    if (r < 0 || !old)
        return r;
    if ((fatia_ctlr_obj_label(old, KUEUE_LABEL_QUEUE) ||
         fatia_ctlr_obj_label(obj, KUEUE_LABEL_QUEUE)) &&
        suspended(old) && !suspended(obj))
        return deny(a, "spec.suspend",
                    "tenants may not un-suspend a Job managed by Kueue (label " KUEUE_LABEL_QUEUE
                    ", before or after this write) (rule: suspend); Kueue un-suspends it when "
                    "its workload is admitted");
    return 0;
}

static int restrict_workload(struct fatia_admit_attrs *a)
{
    static const char *const frozen[] = {"podSets",           "queueName",           "priority",
                                         "priorityClassName", "priorityClassSource", NULL};
    const json_t *ps, *os = get(a->old, "spec"), *ns = get(a->obj, "spec");
    bool owned;
    size_t i;
    char path[160];

    if (!a->old && json_array_size(get(get(a->obj, "metadata"), "ownerReferences")))
        return deny(a, "metadata.ownerReferences",
                    "a tenant may not create a Workload owned by another object (rule: owner); "
                    "Kueue makes the Workloads of Jobs and Pods from their specs");
    if (a->old && !same(get(get(a->obj, "metadata"), "ownerReferences"),
                        get(get(a->old, "metadata"), "ownerReferences")))
        return deny(a, "metadata.ownerReferences",
                    "a tenant may not change a Workload's owners (rule: owner)");
    json_array_foreach(get(ns, "podSets"), i, ps)
    {
        snprintf(path, sizeof(path), "spec.podSets[%zu].template.metadata", i);
        int r = check_reserved(
            a, get(get(ps, "template"), "metadata"),
            get(get(json_array_get(get(os, "podSets"), i), "template"), "metadata"), path);
        if (r < 0)
            return r;
    }
    if (!a->old)
        return 0;
    owned = json_array_size(get(get(a->old, "metadata"), "ownerReferences")) > 0;
    if (!owned && !get(get(a->old, "status"), "admission"))
        return 0;
    for (const char *const *f = frozen; *f; f++)
        if (!same(get(ns, *f), get(os, *f))) {
            snprintf(path, sizeof(path), "spec.%s", *f);
            return deny(a, path,
                        owned ? "the field of a Workload that Kueue made for a Job or Pod may not "
                                "change: it is that object's spec (rule: queue)"
                              : "the field may not change while the workload is admitted "
                                "(status.admission is set) (rule: queue)");
        }
    return 0;
}

static int status_admit(void *arg, struct fatia_admit_attrs *a)
{
    (void)arg;
    if (trusted(a->user) || !a->subresource || strcmp(a->subresource, "status"))
        return 0;
    return deny(a, "status",
                "tenants may not write the status of a %s%s%s (rule: status); status is "
                "written by fatia's controllers and node agents",
                a->kind->kind, a->kind->group[0] ? "." : "", a->kind->group);
}

static int restrict_admit(void *arg, struct fatia_admit_attrs *a)
{
    int r;

    (void)arg;
    if (trusted(a->user))
        return 0;
    if (is_kind(a->kind, "fatia.dev", "UsageRecord"))
        return deny(a, "metadata",
                    "usage records are written by fatia's usage controller only (rule: usage): "
                    "tenants may read them, not create, change or delete them");
    if (!a->obj) {
        if (is_kind(a->kind, "kueue.x-k8s.io", "Workload") &&
            json_array_size(get(get(a->old, "metadata"), "ownerReferences")))
            return deny(a, "metadata.ownerReferences",
                        "a tenant may not delete a Workload that a Job or Pod owns (rule: owner): "
                        "its pods would keep their GPUs after its quota is released; delete the "
                        "owner instead");
        return 0;
    }
    r = check_reserved(a, get(a->obj, "metadata"), get(a->old, "metadata"), "metadata");
    if (r < 0)
        return r;
    if (is_kind(a->kind, "kubeflow.org", "Notebook"))
        return 0; /* its queue applies at its next start: it may change */
    if (a->old && !is_kind(a->kind, "kueue.x-k8s.io", "Workload") &&
        !same(get(get(get(a->obj, "metadata"), "labels"), KUEUE_LABEL_QUEUE),
              get(get(get(a->old, "metadata"), "labels"), KUEUE_LABEL_QUEUE)))
        return deny(a, "metadata.labels[" KUEUE_LABEL_QUEUE "]",
                    "the queue of a pod or Job does not change once it is created (rule: queue): "
                    "its workload was made for that queue; delete it and create it again");
    if (is_kind(a->kind, "", "Pod"))
        return restrict_pod(a);
    if (is_kind(a->kind, "batch", "Job"))
        return restrict_job(a);
    return restrict_workload(a);
}

/* ---- quota-door ---- */

struct door_cfg {
    bool manage;
    bool defaulting;
    const json_t *selector; /* NULL: every namespace */
};

static void door_cfg_read(struct fatia_client *c, struct door_cfg *cfg)
{
    const struct fatia_kind *k = fatia_kind_find("fatia.dev/v1alpha1", "SchedulerConfig", NULL);
    const json_t *sc = k ? fatia_client_cached(c, k, NULL, "default") : NULL;
    const json_t *spec = get(sc, "spec"), *v;

    *cfg = (struct door_cfg){.manage = true, .defaulting = true};
    if ((v = get(spec, "manageJobsWithoutQueueName")) && json_is_boolean(v))
        cfg->manage = json_is_true(v);
    if ((v = get(spec, "localQueueDefaulting")) && json_is_boolean(v))
        cfg->defaulting = json_is_true(v);
    cfg->selector = get(spec, "managedJobsNamespaceSelector");
}

/* Is namespace ns under the door? A selector that does not compile manages it (fail closed). */
static bool ns_managed(struct fatia_client *c, const struct door_cfg *cfg, const char *ns)
{
    const struct fatia_kind *k = fatia_kind_find("v1", "Namespace", NULL);
    struct fatia_selector *sel = NULL;
    const json_t *nso;
    char why[200];
    bool m;

    if (!cfg->manage)
        return false;
    if (!cfg->selector)
        return true;
    if (fatia_selector_from_json(cfg->selector, &sel, why, sizeof(why)) < 0)
        return true;
    nso = k && ns ? fatia_client_cached(c, k, NULL, ns) : NULL;
    m = fatia_selector_matches(sel, get(get(nso, "metadata"), "labels"));
    fatia_selector_free(sel);
    return m;
}

static bool default_lq_exists(struct fatia_client *c, const char *ns)
{
    const struct fatia_kind *k = fatia_kind_find("kueue.x-k8s.io/v1beta2", "LocalQueue", NULL);

    return k && ns && fatia_client_cached(c, k, ns, DEFAULT_LQ) != NULL;
}

static int set_queue(json_t *obj, const char *q)
{
    json_t *meta = fatia_json_object_ensure(obj, "metadata");
    json_t *labels = meta ? fatia_json_object_ensure(meta, "labels") : NULL;

    if (!labels || json_object_set_new(labels, KUEUE_LABEL_QUEUE, json_string(q)) < 0)
        return -ENOMEM;
    return 0;
}

/* The closed door (no controllers: client NULL): a tenant's new Pod or Job that requests a GPU
 * resource is refused, queue label or not, since nothing would admit or place it; an update
 * is held to the other rules only (the object was let in while the controllers ran). */
static int door_closed(struct fatia_admit_attrs *a, const char *pspec_path)
{
    const json_t *pspec = get(a->obj, "spec");
    char path[256];
    const char *res;

    if (a->old)
        return 0;
    if (!strcmp(pspec_path, "spec.template.spec"))
        pspec = get(get(pspec, "template"), "spec");
    res = gpu_request_at(pspec, pspec_path, path, sizeof(path));
    if (!res)
        return 0;
    return deny(a, path,
                "the %s requests %s, and GPU work needs fatia's controllers (rule: door): this "
                "fatiad runs with --no-controllers, so nothing would admit or place it; "
                "ask the admin to run fatiad with its controllers",
                a->kind->kind, res);
}

/* The door for an object (a Pod or a Job) that requests resource res. */
static int door_queue(struct fatia_client *c, struct fatia_admit_attrs *a, const char *res)
{
    const char *q = fatia_ctlr_obj_label(a->obj, KUEUE_LABEL_QUEUE);
    struct door_cfg cfg;

    if (!c)
        return door_closed(a, is_kind(a->kind, "", "Pod") ? "spec" : "spec.template.spec");
    if (q && *q)
        return 0;
    if (a->old && !fatia_ctlr_obj_label(a->old, KUEUE_LABEL_QUEUE))
        return 0; /* let in without one (a Job's pod, an admin's, an unmanaged namespace) */
    door_cfg_read(c, &cfg);
    if (!ns_managed(c, &cfg, a->ns))
        return 0;
    if (a->old)
        return deny(a, "metadata.labels[" KUEUE_LABEL_QUEUE "]",
                    "the object requests %s and GPUs are given only through a queue: the queue "
                    "label may not be removed (rule: door)",
                    res);
    if (!a->old && cfg.defaulting && default_lq_exists(c, a->ns))
        return set_queue(a->obj, DEFAULT_LQ);
    return deny(a, "metadata.labels[" KUEUE_LABEL_QUEUE "]",
                "the object requests %s and GPUs are given only through a queue (rule: door): "
                "set the label " KUEUE_LABEL_QUEUE " to a LocalQueue of namespace \"%s\" "
                "(kubectl get localqueues -n %s), or have a LocalQueue named \"" DEFAULT_LQ
                "\" there to take such work",
                res, a->ns ? a->ns : "", a->ns ? a->ns : "");
}

static int door_pod(struct fatia_client *c, struct fatia_admit_attrs *a)
{
    const json_t *spec = get(a->obj, "spec"), *ospec = get(a->old, "spec");
    const char *res = gpu_request(spec);
    const char *ores = a->old ? gpu_request(ospec) : NULL;

    if (!res && !ores)
        return 0;
    if (!res)
        res = ores;
    if (!same(get(spec, "nodeName"), get(ospec, "nodeName")))
        return deny(a, "spec.nodeName",
                    "tenants may not bind a pod that requests %s (rule: bind); placement binds "
                    "it once Kueue has admitted it",
                    res);
    if (a->old) {
        static const char *const lists[] = {"containers", "initContainers", NULL};
        char path[96];
        if (!same(get(spec, "resourceClaims"), get(ospec, "resourceClaims")))
            return deny(a, "spec.resourceClaims",
                        "the claims of a pod that requests GPUs may not change (rule: immutable)");
        for (const char *const *l = lists; *l; l++) {
            const json_t *nc = get(spec, *l), *oc = get(ospec, *l), *v;
            size_t i;
            if (json_array_size(nc) != json_array_size(oc)) {
                snprintf(path, sizeof(path), "spec.%s", *l);
                return deny(a, path,
                            "the containers of a pod that requests GPUs may not change "
                            "(rule: immutable)");
            }
            json_array_foreach(
                nc, i, v) if (!same(get(v, "resources"), get(json_array_get(oc, i), "resources")))
            {
                snprintf(path, sizeof(path), "spec.%s[%zu].resources", *l, i);
                return deny(a, path,
                            "the resources of a pod that requests GPUs may not change "
                            "(rule: immutable)");
            }
        }
    } else if (fatia_ctlr_owner_of_kind(a->obj, "batch/v1", "Job")) {
        return deny(a, "metadata.ownerReferences",
                    "a tenant's pod that requests %s may not name a Job as its controller "
                    "(rule: owner); create the Job and let the Job controller make its pods",
                    res);
    }
    return door_queue(c, a, res);
}

/* Equal but for what batch/v1 lets a suspended Job change (the scheduling directives). */
static bool same_but_scheduling(const json_t *x, const json_t *y)
{
    static const char *const free_keys[] = {"nodeSelector", "tolerations", "affinity",
                                            "schedulingGates", NULL};
    json_t *cx = x ? json_deep_copy(x) : NULL, *cy = y ? json_deep_copy(y) : NULL;
    bool eq;

    for (const char *const *k = free_keys; *k; k++) {
        if (cx)
            json_object_del(cx, *k);
        if (cy)
            json_object_del(cy, *k);
    }
    eq = same(cx, cy);
    json_decref(cx);
    json_decref(cy);
    return eq;
}

static int door_job(struct fatia_client *c, struct fatia_admit_attrs *a)
{
    const json_t *t = get(get(a->obj, "spec"), "template");
    const json_t *ot = get(get(a->old, "spec"), "template");
    const char *res = gpu_request(get(t, "spec"));

    if (!res && a->old)
        res = gpu_request(get(ot, "spec"));
    if (a->old && !suspended(a->old) && !same(get(t, "spec"), get(ot, "spec")))
        return deny(a, "spec.template",
                    "the pod template of a Job that is not suspended may not change "
                    "(rule: immutable)");
    if (a->old && !same_but_scheduling(get(t, "spec"), get(ot, "spec")))
        return deny(a, "spec.template.spec",
                    "the pod template of a Job may change only in its scheduling directives "
                    "(nodeSelector, tolerations, affinity, schedulingGates) while suspended "
                    "(rule: immutable); its workload was made from the rest");
    return res ? door_queue(c, a, res) : 0;
}

/* A Notebook (controller/notebook.c) is held like a Job: its pod is made by a trusted
 * controller, so the door stands at the Notebook. Its template may change (it applies at the
 * next start); its queue label may not go while it requests GPUs. */
static int door_notebook(struct fatia_client *c, struct fatia_admit_attrs *a)
{
    const char *res = gpu_request(get(get(get(a->obj, "spec"), "template"), "spec"));

    if (!res && a->old)
        res = gpu_request(get(get(get(a->old, "spec"), "template"), "spec"));
    return res ? door_queue(c, a, res) : 0;
}

/* A namespace the admin annotated key: allowed (the controllers' cache; none: never). */
static bool ns_allows(struct fatia_client *c, struct fatia_admit_attrs *a, const char *key)
{
    const struct fatia_kind *k = fatia_kind_find("v1", "Namespace", NULL);
    const char *ns = fatia_json_str(get(a->obj, "metadata"), "namespace");
    const json_t *nso = c && k && ns ? fatia_client_cached(c, k, NULL, ns) : NULL;

    return str_is(get(get(get(nso, "metadata"), "annotations"), key), "allowed");
}

/* runtime: the fatia-process RuntimeClass (a pod as host processes, outside a container) only
 * in a namespace the admin annotated fatia.dev/process-runtime: allowed; without the caches
 * (no controllers) never. 422, as an invalid field. */
static int runtime_rule(struct fatia_client *c, struct fatia_admit_attrs *a, const json_t *pspec,
                        const char *prefix)
{
    const char *ns = fatia_json_str(get(a->obj, "metadata"), "namespace");
    char path[128];

    if (!str_is(get(pspec, "runtimeClassName"), "fatia-process") ||
        ns_allows(c, a, "fatia.dev/process-runtime"))
        return 0;
    snprintf(path, sizeof(path), "%sruntimeClassName", prefix);
    fatia_diag_add(a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, path,
                   "%s: Unsupported value: \"fatia-process\": pods of namespace %s run in "
                   "containers; the admin allows the process runtime per namespace (annotation "
                   "fatia.dev/process-runtime: allowed)",
                   path, ns ? ns : "");
    return -FATIA_E_INVALID;
}

/* hostport: a container port published on the node's addresses (hostPort, agent/cni.c's
 * portmap) only in a namespace the admin annotated fatia.dev/host-ports: allowed (a sibling of
 * fatia.dev/process-runtime, not that annotation: a host port is much less than host
 * processes); without the caches never. 422 on the first such field. */
static int hostport_rule(struct fatia_client *c, struct fatia_admit_attrs *a, const json_t *pspec,
                         const char *prefix)
{
    static const char *const lists[] = {"initContainers", "containers"};
    const char *ns = fatia_json_str(get(a->obj, "metadata"), "namespace");

    for (size_t l = 0; l < FATIA_ARRAY_SIZE(lists); l++) {
        size_t i, j;
        json_t *ct, *pt;
        json_array_foreach(get(pspec, lists[l]), i, ct)
        {
            json_array_foreach(get(ct, "ports"), j, pt)
            {
                const json_t *hp = get(pt, "hostPort");
                char path[160];
                if (!hp || json_is_null(hp) || (json_is_integer(hp) && !json_integer_value(hp)))
                    continue;
                if (ns_allows(c, a, "fatia.dev/host-ports"))
                    return 0;
                snprintf(path, sizeof(path), "%s%s[%zu].ports[%zu].hostPort", prefix, lists[l], i,
                         j);
                fatia_diag_add(a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, path,
                               "%s: Forbidden: host ports are not allowed in namespace %s; the "
                               "admin allows them per namespace (annotation "
                               "fatia.dev/host-ports: allowed)",
                               path, ns ? ns : "");
                return -FATIA_E_INVALID;
            }
        }
    }
    return 0;
}

/* The pod spec an object of the door's kinds makes pods of, and its field path. */
static const json_t *pod_spec_of(const struct fatia_admit_attrs *a, const char **prefix)
{
    const json_t *spec = get(a->obj, "spec");

    if (is_kind(a->kind, "", "Pod")) {
        *prefix = "spec.";
        return spec;
    }
    if (is_kind(a->kind, "batch", "CronJob")) {
        *prefix = "spec.jobTemplate.spec.template.spec.";
        return get(get(get(get(spec, "jobTemplate"), "spec"), "template"), "spec");
    }
    *prefix = "spec.template.spec.";
    return get(get(spec, "template"), "spec");
}

static int door_admit(void *arg, struct fatia_admit_attrs *a)
{
    struct fatia_client *c = arg;
    const char *prefix;
    const json_t *pspec;
    int r;

    if (trusted(a->user) || !a->obj)
        return 0;
    pspec = pod_spec_of(a, &prefix);
    r = runtime_rule(c, a, pspec, prefix);
    if (r == 0)
        r = hostport_rule(c, a, pspec, prefix);
    if (r < 0)
        return r;
    if (is_kind(a->kind, "", "Pod"))
        return door_pod(c, a);
    if (is_kind(a->kind, "batch", "Job"))
        return door_job(c, a);
    if (is_kind(a->kind, "kubeflow.org", "Notebook"))
        return door_notebook(c, a);
    return 0; /* the workload controllers: only the template's rules */
}

int fatia_controller_tenancy_restrict(struct fatia_admission out[2])
{
    static const struct fatia_kind *kinds[6];

    kinds[0] = fatia_kind_find("v1", "Pod", NULL);
    kinds[1] = fatia_kind_find("batch/v1", "Job", NULL);
    kinds[2] = fatia_kind_find("kueue.x-k8s.io/v1beta2", "Workload", NULL);
    kinds[3] = fatia_kind_find("kubeflow.org/v1", "Notebook", NULL);
    kinds[4] = fatia_kind_find("fatia.dev/v1alpha1", "UsageRecord", NULL);
    kinds[5] = NULL;
    if (!kinds[0] || !kinds[1] || !kinds[2] || !kinds[3] || !kinds[4])
        return -EINVAL;
    out[0] = (struct fatia_admission){.name = RESTRICT_NAME,
                                      .phase = FATIA_ADMIT_MUTATING,
                                      .ops = FATIA_ADMIT_CREATE | FATIA_ADMIT_UPDATE |
                                             FATIA_ADMIT_DELETE,
                                      .kinds = kinds,
                                      .admit = restrict_admit,
                                      .arg = NULL};
    /* validating, so that it costs controllers' status writes no second decode */
    out[1] = (struct fatia_admission){.name = STATUS_NAME,
                                      .phase = FATIA_ADMIT_VALIDATING,
                                      .ops = FATIA_ADMIT_CREATE | FATIA_ADMIT_UPDATE,
                                      .kinds = NULL,
                                      .subresources = true,
                                      .admit = status_admit,
                                      .arg = NULL};
    return 0;
}

int fatia_controller_quota_door(struct fatia_client *client, struct fatia_admission *out)
{
    static const char *const names[][2] = {
        {"v1", "Pod"},
        {"batch/v1", "Job"},
        {"kubeflow.org/v1", "Notebook"},
        /* their pods are made by trusted controllers: the template's rules hold here */
        {"apps/v1", "Deployment"},
        {"apps/v1", "ReplicaSet"},
        {"apps/v1", "StatefulSet"},
        {"apps/v1", "DaemonSet"},
        {"batch/v1", "CronJob"},
    };
    static const struct fatia_kind *kinds[FATIA_ARRAY_SIZE(names) + 1];

    for (size_t i = 0; i < FATIA_ARRAY_SIZE(names); i++) {
        kinds[i] = fatia_kind_find(names[i][0], names[i][1], NULL);
        if (!kinds[i])
            return -EINVAL;
    }
    kinds[FATIA_ARRAY_SIZE(names)] = NULL;
    *out = (struct fatia_admission){.name = DOOR_NAME,
                                    .phase = FATIA_ADMIT_MUTATING,
                                    .ops = FATIA_ADMIT_CREATE | FATIA_ADMIT_UPDATE,
                                    .kinds = kinds,
                                    .admit = door_admit,
                                    .arg = client};
    return 0;
}
