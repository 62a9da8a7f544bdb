/*
 * controller/notebook.c: Kubeflow's notebook controller for kubeflow.org/v1 Notebook (a
 * workbench), cut to what one node and Kueue's pod integration need.
 *
 * Model. A Notebook runs as one pod named <notebook>-0 (the name of a one-replica StatefulSet's
 * pod, which is what Kubeflow makes), owned by the Notebook (controller reference, so the garbage
 * collector deletes it with the Notebook), made from spec.template:
 *
 *     Notebook ──(no pod, not stopped)──► create <nb>-0 ──► Kueue: Workload, gate ──► admitted,
 *        ▲                                                   placed on a slice, Running
 *        │ annotation kubeflow-resource-stopped set ──► delete the pod (its Workload finishes,
 *        │                                              its slice and quota are freed)
 *        └─ annotation removed ──► a new pod, through the queue again
 *
 * The pod is a bare Kueue pod: it carries the Notebook's queue (and priority-class) label, so the
 * workload controller gives it a Workload and the kueue-defaults webhook its scheduling gate.
 * The hardware profile is injected into the Notebook's own template (demand/profile_inject.c
 * knows Notebooks) and the quota door holds the Notebook like a Job (controller/tenancy.c), so
 * that what the tenant wrote is checked where the tenant wrote it: the pod is made by this
 * controller (system:masters), which the tenant rules do not hold.
 *
 * Because the pod is written by a trusted identity, nothing of the template that the tenant rules
 * would refuse on a tenant's own pod may pass through: labels and annotations under fatia.dev/
 * and kueue.x-k8s.io/ are dropped from the template's metadata (only the Notebook's own queue
 * and priority labels are carried, and the door has checked those), and spec.nodeName is dropped
 * (placement binds). The pod gets Kubeflow's labels notebook-name and statefulset, NB_PREFIX
 * (/notebook/<ns>/<name>) in its first container, and the annotation fatia.dev/notebook-home
 * naming the Notebook: the node agent keeps that home directory across the pod's lives (under
 * its pod directory, per namespace: docs/selfservice.md, "The persistent home"); a home on a
 * PersistentVolumeClaim is the template's own volume when that kind is served.
 *
 * A pod that ended (Succeeded or Failed: a restartPolicy other than Always) is deleted and made
 * again, as a StatefulSet does, but not sooner than RESTART_DELAY after it was seen ended.
 *
 * Status (Kubeflow's): readyReplicas (1 when the pod is Ready), containerState (the state of the
 * container named like the Notebook, else the first), conditions (the pod's, copied). Written
 * only when it changed.
 *
 * Choices rejected: a StatefulSet object (the core kinds may not be served, and one pod is all a
 * workbench is); re-creating the pod on a template change (Kubeflow's StatefulSet rolls it; here
 * a change takes effect at the next start, which is also when the profile may change).
 */
#include "base/compat.h"

#include "controller/notebook.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "base/str.h"
#include "controller/ctl_internal.h"
#include "controller/kueue.h"

#define COMPONENT     "notebook-controller"
#define RESTART_DELAY (10 * FATIA_USEC_PER_SEC)

struct notebook_ctl {
    struct ctl *ctl;
    struct wq *q;
    struct informer *nbs, *pods;
    struct fatia_strmap ended; /* pod uid -> struct ended (when it was seen ended) */
};

struct ended {
    fatia_usec_t t;
    char uid[64]; /* the map's key */
};

static void on_notebook(void *arg, const json_t *old, const json_t *obj)
{
    struct notebook_ctl *n = arg;
    char key[600];

    fatia_ctlr_obj_key(obj ? obj : old, key, sizeof(key));
    fatia_ctlr_wq_add(n->q, key);
}

static void on_pod(void *arg, const json_t *old, const json_t *obj)
{
    struct notebook_ctl *n = arg;
    const json_t *o = obj ? obj : old;
    const json_t *ref = fatia_ctlr_owner_of_kind(o, "kubeflow.org/v1", "Notebook");
    char key[600];

    if (!ref)
        return;
    if (!obj) {
        struct ended *e = fatia_strmap_get(&n->ended, fatia_ctlr_meta_str(old, "uid"));
        if (e) {
            fatia_strmap_del(&n->ended, e->uid);
            fatia_free(e);
        }
    }
    fatia_ctlr_make_key(fatia_ctlr_meta_str(o, "namespace"), fatia_json_str(ref, "name"), key,
                        sizeof(key));
    fatia_ctlr_wq_add(n->q, key);
}

bool fatia_ctlr_notebook_stopped(const json_t *nb)
{
    return fatia_ctlr_obj_annotation(nb, FATIA_NB_ANN_STOPPED) != NULL;
}

/* A label or annotation key the tenant rules reserve, or that this controller sets itself. */
static bool reserved_key(const char *k)
{
    return fatia_str_has_prefix(k, "fatia.dev/") || fatia_str_has_prefix(k, "kueue.x-k8s.io/") ||
           fatia_str_has_prefix(k, "opendatahub.io/hardware-profile");
}

static json_t *filtered_map(const json_t *m)
{
    json_t *out = json_object();
    const char *k;
    json_t *v;

    if (!out)
        return NULL;
    json_object_foreach((json_t *)m, k, v)
    {
        if (json_is_string(v) && !reserved_key(k))
            json_object_set_new(out, k, json_string(json_string_value(v)));
    }
    return out;
}

static void carry_label(const json_t *nb, json_t *labels, const char *k)
{
    const char *v = fatia_ctlr_obj_label(nb, k);

    if (v && *v)
        json_object_set_new(labels, k, json_string(v));
}

/* NB_PREFIX in the first container, unless the template sets it. */
static int set_prefix(json_t *spec, const char *ns, const char *name)
{
    json_t *c = json_array_get(json_object_get(spec, "containers"), 0);
    json_t *env = c ? fatia_json_array_ensure(c, "env") : NULL, *e;
    char prefix[400];
    size_t i;

    if (!env)
        return -ENOMEM;
    json_array_foreach(env, i, e)
    {
        const char *n = fatia_json_str(e, "name");
        if (n && !strcmp(n, "NB_PREFIX"))
            return 0;
    }
    snprintf(prefix, sizeof(prefix), "/notebook/%s/%s", ns, name);
    return json_array_append_new(env,
                                 json_pack("{s:s,s:s}", "name", "NB_PREFIX", "value", prefix)) < 0
               ? -ENOMEM
               : 0;
}

json_t *fatia_ctlr_notebook_pod(const json_t *nb)
{
    const json_t *tmpl = fatia_json_path(nb, "spec.template");
    const json_t *tmeta = json_object_get(tmpl, "metadata");
    const char *name = fatia_ctlr_meta_str(nb, "name"), *ns = fatia_ctlr_meta_str(nb, "namespace");
    const char *uid = fatia_ctlr_meta_str(nb, "uid");
    json_t *labels = filtered_map(json_object_get(tmeta, "labels"));
    json_t *anns = filtered_map(json_object_get(tmeta, "annotations"));
    json_t *spec = json_deep_copy(json_object_get(tmpl, "spec"));
    json_t *pod = NULL;
    char pname[300];

    if (!name || !ns || !uid || !labels || !anns || !spec)
        goto fail;
    snprintf(pname, sizeof(pname), "%s-0", name);
    json_object_set_new(labels, FATIA_NB_LABEL_NAME, json_string(name));
    json_object_set_new(labels, "statefulset", json_string(name));
    carry_label(nb, labels, KUEUE_LABEL_QUEUE);
    carry_label(nb, labels, KUEUE_LABEL_PRIORITY);
    json_object_set_new(anns, FATIA_NB_ANN_HOME, json_string(name));
    {
        /* which profile the Notebook's template was injected from, for the usage records
         * (informational: the pod is not injected again) */
        const char *pn = fatia_ctlr_obj_annotation(nb, "opendatahub.io/hardware-profile-name");
        const char *pns =
            fatia_ctlr_obj_annotation(nb, "opendatahub.io/hardware-profile-namespace");
        if (pn && *pn) {
            char full[300];
            snprintf(full, sizeof(full), "%s/%s", pns && *pns ? pns : ns, pn);
            json_object_set_new(anns, "fatia.dev/hardware-profile", json_string(full));
        }
    }
    json_object_del(spec, "nodeName");
    if (set_prefix(spec, ns, name) < 0)
        goto fail;
    pod = json_pack("{s:s,s:s,s:{s:s,s:s,s:o,s:o,s:[{s:s,s:s,s:s,s:s,s:b,s:b}]},s:o}", "apiVersion",
                    "v1", "kind", "Pod", "metadata", "name", pname, "namespace", ns, "labels",
                    labels, "annotations", anns, "ownerReferences", "apiVersion", "kubeflow.org/v1",
                    "kind", "Notebook", "name", name, "uid", uid, "controller", 1,
                    "blockOwnerDeletion", 1, "spec", spec);
    return pod;
fail:
    json_decref(labels);
    json_decref(anns);
    json_decref(spec);
    return NULL;
}

/* The pod this Notebook owns (by uid), or NULL. */
static const json_t *owned_pod(struct notebook_ctl *n, const json_t *nb)
{
    const struct fatia_strmap *set =
        fatia_ctlr_informer_owned(n->pods, fatia_ctlr_meta_str(nb, "uid"));

    for (size_t i = 0; set && i < set->cap; i++) {
        const struct informer_item *it = set->slots[i].key ? set->slots[i].val : NULL;
        if (it && fatia_ctlr_owner_of_kind(it->obj, "kubeflow.org/v1", "Notebook"))
            return it->obj;
    }
    return NULL;
}

static const json_t *container_state(const json_t *nb, const json_t *pod)
{
    const json_t *sts = fatia_json_path(pod, "status.containerStatuses"), *s;
    const char *name = fatia_ctlr_meta_str(nb, "name");
    size_t i;

    json_array_foreach(sts, i, s)
    {
        const char *cn = fatia_json_str(s, "name");
        if (cn && name && !strcmp(cn, name))
            return json_object_get(s, "state");
    }
    return json_object_get(json_array_get(sts, 0), "state");
}

json_t *fatia_ctlr_notebook_status(const json_t *nb, const json_t *pod)
{
    const json_t *cs = pod ? container_state(nb, pod) : NULL;
    const json_t *conds = fatia_json_path(pod, "status.conditions");
    bool ready = pod && !fatia_ctlr_obj_deleting(pod) && fatia_ctlr_cond_true(pod, "Ready");

    return json_pack("{s:o,s:i,s:o}", "conditions",
                     json_is_array(conds) ? json_deep_copy(conds) : json_array(), "readyReplicas",
                     ready ? 1 : 0, "containerState", cs ? json_deep_copy(cs) : json_object());
}

static void write_status(struct notebook_ctl *n, const json_t *nb, const json_t *pod,
                         const char *key)
{
    json_t *st = fatia_ctlr_notebook_status(nb, pod), *copy;

    if (!st)
        return;
    if (json_equal(st, json_object_get(nb, "status"))) {
        json_decref(st);
        return;
    }
    copy = json_deep_copy(nb);
    if (copy && json_object_set_new(copy, "status", st) == 0)
        fatia_ctlr_update_status(n->ctl, copy, &(struct op_opts){.wq = n->q, .key = key});
    else
        json_decref(st);
    json_decref(copy);
}

static void delete_pod(struct notebook_ctl *n, const json_t *pod, const char *key)
{
    fatia_ctlr_delete(n->ctl, n->pods->kind, fatia_ctlr_meta_str(pod, "namespace"),
                      fatia_ctlr_meta_str(pod, "name"), fatia_ctlr_meta_str(pod, "uid"),
                      &(struct op_opts){.wq = n->q, .key = key, .quiet_missing = true});
}

/* An ended pod: deleted RESTART_DELAY after it was first seen ended (then made again). */
static void restart_ended(struct notebook_ctl *n, const json_t *pod, const char *key)
{
    const char *puid = fatia_ctlr_meta_str(pod, "uid");
    fatia_usec_t now = fatia_ctlr_now(n->ctl);
    struct ended *e = puid ? fatia_strmap_get(&n->ended, puid) : NULL;

    if (!puid)
        return;
    if (!e) {
        e = fatia_calloc(1, sizeof(*e));
        if (!e)
            return;
        snprintf(e->uid, sizeof(e->uid), "%s", puid);
        e->t = now;
        if (fatia_strmap_put(&n->ended, e->uid, e) < 0) {
            fatia_free(e);
            return;
        }
    }
    if (now - e->t < RESTART_DELAY) {
        fatia_ctlr_wq_add_after(n->q, key, RESTART_DELAY - (now - e->t));
        return;
    }
    fatia_ctlr_event(n->ctl, pod, COMPONENT, "Normal", "Restarting",
                     "Workbench pod ended (%s): deleting it to start a new one",
                     fatia_json_str(json_object_get(pod, "status"), "phase"));
    delete_pod(n, pod, key);
}

static void reconcile(void *arg, const char *key)
{
    struct notebook_ctl *n = arg;
    const json_t *nb = fatia_ctlr_informer_get_key(n->nbs, key), *pod, *other;
    char pname[300];

    if (!nb || fatia_ctlr_obj_deleting(nb))
        return; /* the garbage collector deletes its pod */
    pod = owned_pod(n, nb);
    if (fatia_ctlr_notebook_stopped(nb)) {
        if (pod && !fatia_ctlr_obj_deleting(pod)) {
            fatia_ctlr_event(n->ctl, nb, COMPONENT, "Normal", "Stopped",
                             "Workbench stopped (annotation " FATIA_NB_ANN_STOPPED
                             "): deleting pod %s",
                             fatia_ctlr_meta_str(pod, "name"));
            delete_pod(n, pod, key);
        }
        write_status(n, nb, pod, key);
        return;
    }
    if (pod) {
        if (fatia_ctlr_pod_terminal(pod) && !fatia_ctlr_obj_deleting(pod))
            restart_ended(n, pod, key);
        write_status(n, nb, pod, key);
        return;
    }
    snprintf(pname, sizeof(pname), "%s-0", fatia_ctlr_meta_str(nb, "name"));
    other = fatia_ctlr_informer_get(n->pods, fatia_ctlr_meta_str(nb, "namespace"), pname);
    if (other) {
        /* a pod of that name that is not ours (or our previous one, still going) */
        if (!fatia_ctlr_obj_deleting(other))
            fatia_ctlr_event(n->ctl, nb, COMPONENT, "Warning", "FailedCreate",
                             "pod %s exists and is not this workbench's: delete it or rename "
                             "the workbench",
                             pname);
        write_status(n, nb, NULL, key);
        return;
    }
    {
        json_t *np = fatia_ctlr_notebook_pod(nb);
        if (!np) {
            fatia_error("notebook %s: out of memory building its pod", key);
            return;
        }
        if (fatia_ctlr_create(n->ctl, np, &(struct op_opts){.wq = n->q, .key = key}) == 0)
            fatia_ctlr_event(n->ctl, nb, COMPONENT, "Normal", "SuccessfulCreate",
                             "Created pod %s for workbench %s", pname,
                             fatia_ctlr_meta_str(nb, "name"));
        json_decref(np);
    }
    write_status(n, nb, NULL, key);
}

int fatia_ctlr_notebook_ctl_new(struct ctl *c, struct notebook_ctl **ret)
{
    const struct fatia_kind *k = fatia_kind_find("kubeflow.org/v1", "Notebook", NULL);
    struct notebook_ctl *n;

    if (!k)
        return -EINVAL;
    n = fatia_calloc(1, sizeof(*n));
    if (!n)
        return -ENOMEM;
    n->ctl = c;
    n->q = fatia_ctlr_wq_new(c, "notebook", reconcile, n);
    n->nbs = fatia_ctlr_informer(c, k);
    n->pods = fatia_ctlr_informer(c, fatia_kind_find("v1", "Pod", NULL));
    if (!n->q || !n->nbs || !n->pods || fatia_ctlr_informer_on(n->nbs, on_notebook, n) < 0 ||
        fatia_ctlr_informer_on(n->pods, on_pod, n) < 0) {
        fatia_ctlr_notebook_ctl_free(n);
        return -ENOMEM;
    }
    fatia_ctlr_informer_index_owners(n->pods);
    *ret = n;
    return 0;
}

void fatia_ctlr_notebook_ctl_free(struct notebook_ctl *n)
{
    if (!n)
        return;
    fatia_ctlr_wq_free(n->q);
    for (size_t i = 0; i < n->ended.cap; i++)
        if (n->ended.slots[i].key)
            fatia_free(n->ended.slots[i].val);
    fatia_strmap_release(&n->ended);
    fatia_free(n);
}
