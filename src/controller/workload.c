/*
 * controller/workload.c: Kueue's job integrations (pkg/controller/jobframework, jobs/job,
 * jobs/pod): a Job or a bare Pod labelled kueue.x-k8s.io/queue-name becomes a Kueue Workload,
 * and the Workload's admission drives the Job or Pod.
 *
 * A Job (created suspended by the kueue-defaults webhook):
 *
 *      no Workload ──create──► Workload pending ──admitted──► Job unsuspended (flavor node labels
 *          ▲                        ▲                             │          and tolerations in
 *          │ Workload deleted       │ admission cleared          │ evicted   the pod template)
 *          │ (recreated)            │ (QuotaReserved=False)      ▼
 *          └───────────────────     └──── pods gone ◄──── Job suspended (template restored,
 *                                                           pods deleted by the job controller)
 *      Job Complete / Failed ──► Workload Finished=True (Succeeded / Failed); Job deleted ──► the
 *      garbage collector deletes the Workload.
 *
 * A bare Pod waits behind the scheduling gate kueue.x-k8s.io/admission: admission lifts the gate
 * (and adds the flavors' node labels to its nodeSelector); eviction deletes the pod, as Kueue's
 * pod integration stops pods; a terminated pod finishes its Workload and loses Kueue's finalizer.
 *
 * A StatefulSet's pods (kueue_apps.c gave its template Kueue's pod group: the label
 * kueue.x-k8s.io/pod-group-name and the total count) share one Workload, named by the group
 * label and owned by the StatefulSet (Kueue's owners are the group's pods; the StatefulSet is
 * their controller and outlives each of them, so deleting it collects the Workload): a single
 * podSet "main" of the group's count, from the first pod's template. Admission lifts the gate of
 * every pod of the group, never more than the count (a scale-up past it waits: the Workload is
 * not re-sized); eviction deletes the running ones. A Deployment's pods are plain Pods (one
 * Workload each), as Kueue's deployment integration makes them.
 *
 * Names, labels, owner references and condition reasons are Kueue's, so the Workload of job
 * team-a/train is "job-train-<5 hex>" with the label kueue.x-k8s.io/job-uid. The reconcile of a key
 * is pure in what it decides (cache in, writes out); writes go through ctl ops, and one step is
 * taken per reconcile (the next one is triggered by the watch event of that write).
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "controller/ctl_internal.h"
#include "controller/kueue.h"
#include "controller/metrics.h"

#define COMPONENT "kueue-job-controller"

struct workload_ctl {
    struct ctl *ctl;
    struct wq *q;
    struct informer *jobs, *pods, *wls, *wpcs, *flavors, *ssets;
};

/* Queue keys: "job|ns/name", "pod|ns/name" and "sts|ns/name" (a StatefulSet's pod group). */
static void enqueue(struct workload_ctl *w, const char *type, const json_t *obj)
{
    char key[700], ok[600];

    fatia_ctlr_obj_key(obj, ok, sizeof(ok));
    snprintf(key, sizeof(key), "%s|%s", type, ok);
    fatia_ctlr_wq_add(w->q, key);
}

static bool queued(const json_t *obj)
{
    const char *q = fatia_ctlr_obj_label(obj, KUEUE_LABEL_QUEUE);

    return q && *q;
}

static void on_job(void *arg, const json_t *old, const json_t *obj)
{
    const json_t *o = obj ? obj : old;

    if (queued(o))
        enqueue(arg, "job", o);
}

static void on_pod(void *arg, const json_t *old, const json_t *obj)
{
    struct workload_ctl *w = arg;
    const json_t *o = obj ? obj : old;
    const json_t *ref = fatia_ctlr_owner_of_kind(o, "batch/v1", "Job");

    if (ref) {
        char key[700];
        snprintf(key, sizeof(key), "job|%s/%s", fatia_ctlr_meta_str(o, "namespace"),
                 fatia_json_str(ref, "name"));
        fatia_ctlr_wq_add(w->q, key);
        return;
    }
    ref = fatia_ctlr_owner_of_kind(o, "apps/v1", "StatefulSet");
    if (ref && queued(o) && fatia_ctlr_obj_label(o, KUEUE_LABEL_POD_GROUP)) {
        char key[700];
        snprintf(key, sizeof(key), "sts|%s/%s", fatia_ctlr_meta_str(o, "namespace"),
                 fatia_json_str(ref, "name"));
        fatia_ctlr_wq_add(w->q, key);
        return;
    }
    if (queued(o))
        enqueue(w, "pod", o);
}

static void on_workload(void *arg, const json_t *old, const json_t *obj)
{
    struct workload_ctl *w = arg;
    const json_t *o = obj ? obj : old;
    const json_t *ref = fatia_ctlr_obj_controller_ref(o);
    const char *kind = fatia_json_str(ref, "kind"), *name = fatia_json_str(ref, "name");
    char key[700];

    if (!kind || !name)
        return;
    if (!strcmp(kind, "Job"))
        snprintf(key, sizeof(key), "job|%s/%s", fatia_ctlr_meta_str(o, "namespace"), name);
    else if (!strcmp(kind, "Pod"))
        snprintf(key, sizeof(key), "pod|%s/%s", fatia_ctlr_meta_str(o, "namespace"), name);
    else if (!strcmp(kind, "StatefulSet"))
        snprintf(key, sizeof(key), "sts|%s/%s", fatia_ctlr_meta_str(o, "namespace"), name);
    else
        return;
    fatia_ctlr_wq_add(w->q, key);
}

/* The Workload whose controller is the object with uid, or NULL. */
static const json_t *owned_workload(struct workload_ctl *w, const char *uid)
{
    const struct fatia_strmap *set = fatia_ctlr_informer_owned(w->wls, uid);

    for (size_t i = 0; set && i < set->cap; i++) {
        const struct informer_item *it = set->slots[i].key ? set->slots[i].val : NULL;
        const json_t *ref = it ? fatia_ctlr_obj_controller_ref(it->obj) : NULL;
        const char *ruid = fatia_json_str(ref, "uid");
        if (ruid && !strcmp(ruid, uid))
            return it->obj;
    }
    return NULL;
}

static bool admitted(const json_t *wl)
{
    return json_object_get(json_object_get(wl, "status"), "admission") &&
           fatia_ctlr_cond_true(wl, "Admitted");
}

static bool has_reservation(const json_t *wl)
{
    return json_object_get(json_object_get(wl, "status"), "admission") != NULL;
}

/* ---- building a Workload ---- */

/* Every tree built here is a deep copy: the informers hold the API server's own (shared,
 * immutable) trees, and the client may change what it is given. */
static json_t *podset_template(const json_t *meta, const json_t *spec)
{
    json_t *t = json_pack("{s:{},s:o}", "metadata", "spec", json_deep_copy(spec));
    json_t *tm = json_object_get(t, "metadata");

    if (!t)
        return NULL;
    if (json_object_get(meta, "labels"))
        json_object_set_new(tm, "labels", json_deep_copy(json_object_get(meta, "labels")));
    if (json_object_get(meta, "annotations"))
        json_object_set_new(tm, "annotations",
                            json_deep_copy(json_object_get(meta, "annotations")));
    /* the gate is Kueue's own, not part of what the workload asks for */
    json_object_del(json_object_get(t, "spec"), "schedulingGates");
    return t;
}

static json_t *new_workload(struct workload_ctl *w, const json_t *owner, const char *av,
                            const char *kind, const char *group, json_t *podsets)
{
    const char *name = fatia_ctlr_meta_str(owner, "name"), *uid = fatia_ctlr_meta_str(owner, "uid");
    const char *prio = fatia_ctlr_obj_label(owner, KUEUE_LABEL_PRIORITY);
    char wlname[300];
    json_t *wl;

    fatia_ctlr_kueue_workload_name(kind, group, name, uid, wlname, sizeof(wlname));
    wl = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s},s:[{s:s,s:s,s:s,s:s,s:b,s:b}]},s:{s:o,s:s}}",
                   "apiVersion", "kueue.x-k8s.io/v1beta2", "kind", "Workload", "metadata", "name",
                   wlname, "namespace", fatia_ctlr_meta_str(owner, "namespace"), "labels",
                   KUEUE_LABEL_JOB_UID, uid, "ownerReferences", "apiVersion", av, "kind", kind,
                   "name", name, "uid", uid, "controller", 1, "blockOwnerDeletion", 1, "spec",
                   "podSets", podsets, "queueName", fatia_ctlr_obj_label(owner, KUEUE_LABEL_QUEUE));
    if (!wl)
        return NULL;
    if (prio && *prio) {
        json_t *spec = json_object_get(wl, "spec");
        const json_t *wpc = fatia_ctlr_informer_get(w->wpcs, NULL, prio);
        json_int_t v;
        json_object_set_new(spec, "priorityClassRef",
                            json_pack("{s:s,s:s,s:s}", "group", "kueue.x-k8s.io", "kind",
                                      "WorkloadPriorityClass", "name", prio));
        if (wpc && json_is_integer(json_object_get(wpc, "value"))) {
            v = json_integer_value(json_object_get(wpc, "value"));
            json_object_set_new(spec, "priority", json_integer(v));
        }
    }
    return wl;
}

/* Job pods per Kueue: parallelism, capped by the completions still wanted. */
static int64_t job_count(const json_t *job)
{
    const json_t *spec = json_object_get(job, "spec");
    int64_t par = 1, comp = -1, succ = 0;

    fatia_json_int(spec, "parallelism", &par);
    if (fatia_json_int(spec, "completions", &comp) && comp >= 0) {
        fatia_json_int(json_object_get(job, "status"), "succeeded", &succ);
        if (comp - succ < par)
            par = comp - succ;
    }
    return par < 0 ? 0 : par;
}

/* ---- what admission gives a pod template: the flavors' node labels and tolerations ---- */

static int apply_flavors(struct workload_ctl *w, const json_t *wl, json_t *pod_spec,
                         const char *podset)
{
    const json_t *psas = json_object_get(
        json_object_get(json_object_get(wl, "status"), "admission"), "podSetAssignments");
    size_t i;
    json_t *psa;

    json_array_foreach(psas, i, psa)
    {
        const char *n = fatia_json_str(psa, "name"), *res;
        json_t *fl;
        if (podset && n && strcmp(n, podset))
            continue;
        json_object_foreach(json_object_get(psa, "flavors"), res, fl)
        {
            const json_t *rf = json_is_string(fl) ? fatia_ctlr_informer_get(w->flavors, NULL,
                                                                            json_string_value(fl))
                                                  : NULL;
            const json_t *labels = json_object_get(json_object_get(rf, "spec"), "nodeLabels");
            const json_t *tols = json_object_get(json_object_get(rf, "spec"), "tolerations");
            const char *lk;
            json_t *lv, *t;
            size_t j;
            if (json_object_size(labels)) {
                json_t *ns = fatia_json_object_ensure(pod_spec, "nodeSelector");
                if (!ns)
                    return -ENOMEM;
                json_object_foreach((json_t *)labels, lk, lv)
                    json_object_set_new(ns, lk, json_deep_copy(lv));
            }
            json_array_foreach(tols, j, t)
            {
                json_t *arr = fatia_json_array_ensure(pod_spec, "tolerations");
                bool have = false;
                size_t m;
                json_t *e;
                if (!arr)
                    return -ENOMEM;
                json_array_foreach(arr, m, e) have |= fatia_json_equal(e, t);
                if (!have)
                    json_array_append_new(arr, json_deep_copy(t));
            }
        }
    }
    return 0;
}

static const char *admitting_cq(const json_t *wl)
{
    return fatia_json_str(json_object_get(json_object_get(wl, "status"), "admission"),
                          "clusterQueue");
}

/* ---- Job ---- */

static bool job_finished(const json_t *job, const char **reason, const char **msg)
{
    const json_t *c;

    if ((c = fatia_ctlr_cond_get(job, "Complete")) &&
        !strcmp(fatia_json_str(c, "status"), "True")) {
        *reason = "Succeeded";
        *msg = fatia_json_str(c, "message") ? fatia_json_str(c, "message") : "Job finished";
        return true;
    }
    if ((c = fatia_ctlr_cond_get(job, "Failed")) && !strcmp(fatia_json_str(c, "status"), "True")) {
        *reason = "Failed";
        *msg = fatia_json_str(c, "message") ? fatia_json_str(c, "message") : "Job failed";
        return true;
    }
    return false;
}

/* Pods of the job that still run or may still run. */
static size_t job_live_pods(struct workload_ctl *w, const json_t *job)
{
    const struct fatia_strmap *set =
        fatia_ctlr_informer_owned(w->pods, fatia_ctlr_meta_str(job, "uid"));
    size_t n = 0;

    for (size_t i = 0; set && i < set->cap; i++) {
        const struct informer_item *it = set->slots[i].key ? set->slots[i].val : NULL;
        if (it && !fatia_ctlr_pod_terminal(it->obj))
            n++;
    }
    return n;
}

static int finish_workload(struct workload_ctl *w, const json_t *wl, const char *qkey,
                           const char *reason, const char *msg)
{
    json_t *nw = json_deep_copy(wl);
    json_t *conds =
        nw ? fatia_json_array_ensure(fatia_json_object_ensure(nw, "status"), "conditions") : NULL;
    int r;

    if (!conds) {
        json_decref(nw);
        return -ENOMEM;
    }
    fatia_ctlr_cond_set(conds, "Finished", "True", reason, msg, fatia_ctlr_now(w->ctl));
    r = fatia_ctlr_update_status(w->ctl, nw, &(struct op_opts){.wq = w->q, .key = qkey});
    if (r == 0)
        fatia_ctlr_event(w->ctl, wl, COMPONENT, "Normal", "FinishedWorkload",
                         "Workload '%s/%s' is declared finished",
                         fatia_ctlr_meta_str(wl, "namespace"), fatia_ctlr_meta_str(wl, "name"));
    json_decref(nw);
    return r;
}

/* Clears the quota reservation of an evicted workload whose pods are gone (Kueue's
 * UnsetQuotaReservationWithCondition): the admission controller then releases its quota. */
static int release_workload(struct workload_ctl *w, const json_t *wl, const char *qkey)
{
    json_t *nw = json_deep_copy(wl);
    json_t *st = nw ? fatia_json_object_ensure(nw, "status") : NULL;
    json_t *conds = st ? fatia_json_array_ensure(st, "conditions") : NULL;
    const char *msg = fatia_json_str(fatia_ctlr_cond_get(wl, "Evicted"), "message");
    fatia_usec_t now = fatia_ctlr_now(w->ctl);
    int r;

    if (!conds) {
        json_decref(nw);
        return -ENOMEM;
    }
    json_object_del(st, "admission");
    fatia_ctlr_cond_set(conds, "QuotaReserved", "False", "Pending",
                        msg ? msg : "The workload was evicted", now);
    if (fatia_ctlr_cond_get(wl, "Admitted"))
        fatia_ctlr_cond_set(conds, "Admitted", "False", "NoReservation",
                            "The workload has no reservation", now);
    r = fatia_ctlr_update_status(w->ctl, nw, &(struct op_opts){.wq = w->q, .key = qkey});
    json_decref(nw);
    return r;
}

static int job_set_suspend(struct workload_ctl *w, const json_t *job, const json_t *wl,
                           bool suspend, const char *qkey)
{
    json_t *nj = json_deep_copy(job);
    json_t *spec = nj ? json_object_get(nj, "spec") : NULL;
    json_t *tspec = spec ? json_object_get(json_object_get(spec, "template"), "spec") : NULL;
    json_t *tmeta;
    int r;

    if (!tspec) {
        json_decref(nj);
        return -ENOMEM;
    }
    json_object_set_new(spec, "suspend", json_boolean(suspend));
    tmeta = fatia_json_object_ensure(json_object_get(spec, "template"), "metadata");
    if (!suspend) {
        json_t *labels = tmeta ? fatia_json_object_ensure(tmeta, "labels") : NULL;
        if (!labels || apply_flavors(w, wl, tspec, NULL) < 0) {
            json_decref(nj);
            return -ENOMEM;
        }
        json_object_set_new(labels, KUEUE_LABEL_PODSET, json_string("main"));
    } else if (wl) {
        /* restore what the workload recorded from the job before admission */
        const json_t *orig = json_object_get(
            json_object_get(
                json_array_get(json_object_get(json_object_get(wl, "spec"), "podSets"), 0),
                "template"),
            "spec");
        const char *f[] = {"nodeSelector", "tolerations"};
        for (size_t i = 0; orig && i < 2; i++) {
            if (json_object_get(orig, f[i]))
                json_object_set_new(tspec, f[i], json_deep_copy(json_object_get(orig, f[i])));
            else
                json_object_del(tspec, f[i]);
        }
        if (tmeta)
            json_object_del(json_object_get(tmeta, "labels"), KUEUE_LABEL_PODSET);
    }
    r = fatia_ctlr_update(w->ctl, nj, &(struct op_opts){.wq = w->q, .key = qkey});
    json_decref(nj);
    return r;
}

static void reconcile_job(struct workload_ctl *w, const char *qkey, const char *key)
{
    const json_t *job = fatia_ctlr_informer_get_key(w->jobs, key), *wl;
    const char *reason, *msg;
    bool suspended;

    if (!job || !queued(job))
        return;
    wl = owned_workload(w, fatia_ctlr_meta_str(job, "uid"));
    suspended = fatia_json_bool(json_object_get(job, "spec"), "suspend", false);
    if (job_finished(job, &reason, &msg)) {
        if (wl && !fatia_ctlr_cond_true(wl, "Finished"))
            finish_workload(w, wl, qkey, reason, msg);
        return;
    }
    if (fatia_ctlr_obj_deleting(job))
        return;
    if (!wl) {
        json_t *tmpl = podset_template(
            json_object_get(json_object_get(json_object_get(job, "spec"), "template"), "metadata"),
            json_object_get(json_object_get(json_object_get(job, "spec"), "template"), "spec"));
        json_t *podsets = tmpl ? json_pack("[{s:s,s:o,s:I}]", "name", "main", "template", tmpl,
                                           "count", (json_int_t)job_count(job))
                               : NULL;
        json_t *nw;
        if (!suspended) {
            /* running without a workload (created before the label, or its workload was
               deleted): stop it until it is admitted, as Kueue does */
            job_set_suspend(w, job, NULL, true, qkey);
            json_decref(podsets);
            return;
        }
        nw = podsets ? new_workload(w, job, "batch/v1", "Job", "batch", podsets) : NULL;
        if (!nw) {
            fatia_error("job %s: out of memory building its workload", key);
            return;
        }
        if (fatia_ctlr_create(w->ctl, nw, &(struct op_opts){.wq = w->q, .key = qkey}) == 0)
            fatia_ctlr_event(w->ctl, job, COMPONENT, "Normal", "CreatedWorkload",
                             "Created Workload: %s/%s", fatia_ctlr_meta_str(nw, "namespace"),
                             fatia_ctlr_meta_str(nw, "name"));
        json_decref(nw);
        return;
    }
    if (fatia_ctlr_obj_deleting(wl) || fatia_ctlr_cond_true(wl, "Finished"))
        return;
    if (admitted(wl) && !fatia_ctlr_cond_true(wl, "Evicted")) {
        if (suspended && job_set_suspend(w, job, wl, false, qkey) == 0)
            fatia_ctlr_event(w->ctl, job, COMPONENT, "Normal", "Started",
                             "Admitted by clusterQueue %s",
                             admitting_cq(wl) ? admitting_cq(wl) : "");
        return;
    }
    if (!suspended) {
        const char *why = fatia_ctlr_cond_true(wl, "Evicted")
                              ? fatia_json_str(fatia_ctlr_cond_get(wl, "Evicted"), "message")
                              : "Not admitted by cluster queue";
        if (job_set_suspend(w, job, wl, true, qkey) == 0)
            fatia_ctlr_event(w->ctl, job, COMPONENT, "Normal", "Stopped", "%s",
                             why ? why : "Evicted");
        return;
    }
    /* suspended and evicted: once its pods are gone, the quota may go */
    if (has_reservation(wl) && fatia_ctlr_cond_true(wl, "Evicted") && job_live_pods(w, job) == 0)
        release_workload(w, wl, qkey);
}

/* ---- bare Pods ---- */

static int pod_remove_finalizer(struct workload_ctl *w, const json_t *pod, const char *qkey)
{
    json_t *np = fatia_ctlr_obj_without_finalizer(pod, KUEUE_FINALIZER_POD);
    int r;

    if (!np)
        return -ENOMEM;
    r = fatia_ctlr_update(w->ctl, np,
                          &(struct op_opts){.wq = w->q, .key = qkey, .quiet_missing = true});
    json_decref(np);
    return r;
}

static int pod_ungate(struct workload_ctl *w, const json_t *pod, const json_t *wl, const char *qkey)
{
    json_t *np = json_deep_copy(pod);
    json_t *spec = np ? json_object_get(np, "spec") : NULL;
    json_t *gates = spec ? json_object_get(spec, "schedulingGates") : NULL;
    size_t i;
    json_t *g;
    int r;

    if (!spec) {
        json_decref(np);
        return -ENOMEM;
    }
    json_array_foreach(gates, i, g)
    {
        const char *n = fatia_json_str(g, "name");
        if (n && !strcmp(n, KUEUE_GATE_ADMISSION)) {
            json_array_remove(gates, i);
            break;
        }
    }
    if (!json_array_size(gates))
        json_object_del(spec, "schedulingGates");
    if (apply_flavors(w, wl, spec, NULL) < 0) {
        json_decref(np);
        return -ENOMEM;
    }
    r = fatia_ctlr_update(w->ctl, np, &(struct op_opts){.wq = w->q, .key = qkey});
    json_decref(np);
    return r;
}

static bool pod_gated(const json_t *pod)
{
    size_t i;
    json_t *g;

    json_array_foreach(json_object_get(json_object_get(pod, "spec"), "schedulingGates"), i, g)
    {
        const char *n = fatia_json_str(g, "name");
        if (n && !strcmp(n, KUEUE_GATE_ADMISSION))
            return true;
    }
    return false;
}

static void reconcile_pod(struct workload_ctl *w, const char *qkey, const char *key)
{
    const json_t *pod = fatia_ctlr_informer_get_key(w->pods, key), *wl;
    char nsbuf[300];

    if (!pod || !queued(pod) || fatia_ctlr_owner_of_kind(pod, "batch/v1", "Job") ||
        (fatia_ctlr_obj_label(pod, KUEUE_LABEL_POD_GROUP) &&
         fatia_ctlr_owner_of_kind(pod, "apps/v1", "StatefulSet")))
        return; /* a StatefulSet's group: reconcile_group */
    wl = owned_workload(w, fatia_ctlr_meta_str(pod, "uid"));
    if (fatia_ctlr_pod_terminal(pod)) {
        const char *ph = fatia_json_str(json_object_get(pod, "status"), "phase");
        bool ok = ph && !strcmp(ph, "Succeeded");
        if (wl && !fatia_ctlr_cond_true(wl, "Finished")) {
            finish_workload(w, wl, qkey, ok ? "Succeeded" : "Failed",
                            ok ? "Pod succeeded" : "Pod failed");
            return;
        }
        if (fatia_ctlr_obj_has_finalizer(pod, KUEUE_FINALIZER_POD))
            pod_remove_finalizer(w, pod, qkey);
        return;
    }
    if (fatia_ctlr_obj_deleting(pod)) {
        if (fatia_ctlr_pod_done(pod) && fatia_ctlr_obj_has_finalizer(pod, KUEUE_FINALIZER_POD))
            pod_remove_finalizer(w, pod, qkey);
        return;
    }
    if (!wl) {
        json_t *tmpl =
            podset_template(json_object_get(pod, "metadata"), json_object_get(pod, "spec"));
        json_t *podsets =
            tmpl ? json_pack("[{s:s,s:o,s:i}]", "name", "main", "template", tmpl, "count", 1)
                 : NULL;
        json_t *nw = podsets ? new_workload(w, pod, "v1", "Pod", "", podsets) : NULL;
        json_t *tm;
        if (!nw) {
            fatia_error("pod %s: out of memory building its workload", key);
            return;
        }
        /* the template keeps only what the pod asks for */
        tm = json_object_get(
            json_object_get(
                json_array_get(json_object_get(json_object_get(nw, "spec"), "podSets"), 0),
                "template"),
            "metadata");
        json_object_del(json_object_get(tm, "annotations"),
                        "kubectl.kubernetes.io/last-applied-configuration");
        if (fatia_ctlr_create(w->ctl, nw, &(struct op_opts){.wq = w->q, .key = qkey}) == 0)
            fatia_ctlr_event(w->ctl, pod, COMPONENT, "Normal", "CreatedWorkload",
                             "Created Workload: %s/%s", fatia_ctlr_meta_str(nw, "namespace"),
                             fatia_ctlr_meta_str(nw, "name"));
        json_decref(nw);
        return;
    }
    if (fatia_ctlr_obj_deleting(wl) || fatia_ctlr_cond_true(wl, "Finished"))
        return;
    if (admitted(wl) && !fatia_ctlr_cond_true(wl, "Evicted")) {
        if (pod_gated(pod) && pod_ungate(w, pod, wl, qkey) == 0)
            fatia_ctlr_event(w->ctl, pod, COMPONENT, "Normal", "Started",
                             "Admitted by clusterQueue %s",
                             admitting_cq(wl) ? admitting_cq(wl) : "");
        return;
    }
    if (fatia_ctlr_cond_true(wl, "Evicted")) {
        const char *why = fatia_json_str(fatia_ctlr_cond_get(wl, "Evicted"), "message");
        if (pod_gated(pod)) {
            /* never ran: the reservation can go at once, the pod waits for admission again */
            if (has_reservation(wl))
                release_workload(w, wl, qkey);
            return;
        }
        fatia_ctlr_split_key(key, nsbuf, sizeof(nsbuf));
        if (fatia_ctlr_delete(w->ctl, w->pods->kind, nsbuf, fatia_ctlr_meta_str(pod, "name"),
                              fatia_ctlr_meta_str(pod, "uid"),
                              &(struct op_opts){.wq = w->q, .key = qkey, .quiet_missing = true}) ==
            0)
            fatia_ctlr_event(w->ctl, pod, COMPONENT, "Normal", "Stopped", "%s",
                             why ? why : "Evicted");
    }
}

/* A StatefulSet's pod group (see the file comment). */
static void reconcile_group(struct workload_ctl *w, const char *qkey, const char *key)
{
    const json_t *sts = fatia_ctlr_informer_get_key(w->ssets, key), *wl, *first = NULL;
    const char *uid = sts ? fatia_ctlr_meta_str(sts, "uid") : NULL;
    const struct fatia_strmap *set = uid ? fatia_ctlr_informer_owned(w->pods, uid) : NULL;
    json_t *live = json_array();
    int64_t count = 0, running = 0;
    char nsbuf[300];

    if (!live)
        return;
    for (size_t i = 0; set && i < set->cap; i++) {
        const struct informer_item *it = set->slots[i].key ? set->slots[i].val : NULL;
        const json_t *pod = it ? it->obj : NULL;
        if (!pod || !fatia_ctlr_obj_label(pod, KUEUE_LABEL_POD_GROUP))
            continue;
        if (fatia_ctlr_pod_terminal(pod) || fatia_ctlr_obj_deleting(pod)) {
            if (fatia_ctlr_obj_has_finalizer(pod, KUEUE_FINALIZER_POD) &&
                (fatia_ctlr_pod_terminal(pod) || fatia_ctlr_pod_done(pod)))
                pod_remove_finalizer(w, pod, qkey);
            continue;
        }
        json_array_append(live, (json_t *)pod);
        if (!pod_gated(pod))
            running++;
        if (!first) {
            const char *c =
                fatia_json_str(json_object_get(json_object_get(pod, "metadata"), "annotations"),
                               KUEUE_ANN_GROUP_COUNT);
            first = pod;
            count = c ? strtoll(c, NULL, 10) : 1;
        }
    }
    wl = uid ? owned_workload(w, uid) : NULL;
    if (!wl && first && count > 0 && queued(sts)) {
        json_t *tmpl =
            podset_template(json_object_get(first, "metadata"), json_object_get(first, "spec"));
        json_t *podsets = tmpl ? json_pack("[{s:s,s:o,s:I}]", "name", "main", "template", tmpl,
                                           "count", (json_int_t)count)
                               : NULL;
        json_t *nw =
            podsets ? new_workload(w, sts, "apps/v1", "StatefulSet", "apps", podsets) : NULL;
        const char *gname = fatia_ctlr_obj_label(first, KUEUE_LABEL_POD_GROUP);
        if (nw && gname && *gname)
            json_object_set_new(json_object_get(nw, "metadata"), "name", json_string(gname));
        if (nw && fatia_ctlr_create(w->ctl, nw, &(struct op_opts){.wq = w->q, .key = qkey}) == 0)
            fatia_ctlr_event(w->ctl, sts, COMPONENT, "Normal", "CreatedWorkload",
                             "Created Workload: %s/%s", fatia_ctlr_meta_str(nw, "namespace"),
                             fatia_ctlr_meta_str(nw, "name"));
        json_decref(nw);
        goto out;
    }
    if (!wl || fatia_ctlr_obj_deleting(wl) || fatia_ctlr_cond_true(wl, "Finished"))
        goto out;
    count = 0;
    fatia_json_int(json_array_get(json_object_get(json_object_get(wl, "spec"), "podSets"), 0),
                   "count", &count);
    if (admitted(wl) && !fatia_ctlr_cond_true(wl, "Evicted")) {
        size_t i;
        json_t *pod;
        json_array_foreach(live, i, pod)
        {
            if (running >= count)
                break; /* past the admitted count: it waits */
            if (pod_gated(pod) && pod_ungate(w, pod, wl, qkey) == 0) {
                running++;
                fatia_ctlr_event(w->ctl, pod, COMPONENT, "Normal", "Started",
                                 "Admitted by clusterQueue %s",
                                 admitting_cq(wl) ? admitting_cq(wl) : "");
            }
        }
    } else if (fatia_ctlr_cond_true(wl, "Evicted")) {
        size_t i;
        json_t *pod;
        if (running == 0) {
            if (has_reservation(wl))
                release_workload(w, wl, qkey);
            goto out;
        }
        fatia_ctlr_split_key(key, nsbuf, sizeof(nsbuf));
        json_array_foreach(live, i, pod)
        {
            if (!pod_gated(pod))
                fatia_ctlr_delete(
                    w->ctl, w->pods->kind, nsbuf, fatia_ctlr_meta_str(pod, "name"),
                    fatia_ctlr_meta_str(pod, "uid"),
                    &(struct op_opts){.wq = w->q, .key = qkey, .quiet_missing = true});
        }
    }
out:
    json_decref(live);
}

static void reconcile(void *arg, const char *qkey)
{
    struct workload_ctl *w = arg;
    const char *bar = strchr(qkey, '|');

    if (!bar)
        return;
    if (!strncmp(qkey, "job|", 4))
        reconcile_job(w, qkey, bar + 1);
    else if (!strncmp(qkey, "pod|", 4))
        reconcile_pod(w, qkey, bar + 1);
    else if (!strncmp(qkey, "sts|", 4))
        reconcile_group(w, qkey, bar + 1);
}

int fatia_ctlr_workload_ctl_new(struct ctl *c, struct workload_ctl **ret)
{
    struct workload_ctl *w = fatia_calloc(1, sizeof(*w));

    if (!w)
        return -ENOMEM;
    w->ctl = c;
    w->q = fatia_ctlr_wq_new(c, "workload", reconcile, w);
    w->jobs = fatia_ctlr_informer(c, fatia_kind_find("batch/v1", "Job", NULL));
    w->pods = fatia_ctlr_informer(c, fatia_kind_find("v1", "Pod", NULL));
    w->wls = fatia_ctlr_informer(c, fatia_kind_find("kueue.x-k8s.io/v1beta2", "Workload", NULL));
    w->wpcs = fatia_ctlr_informer(
        c, fatia_kind_find("kueue.x-k8s.io/v1beta2", "WorkloadPriorityClass", NULL));
    w->flavors =
        fatia_ctlr_informer(c, fatia_kind_find("kueue.x-k8s.io/v1beta2", "ResourceFlavor", NULL));
    w->ssets = fatia_ctlr_informer(c, fatia_kind_find("apps/v1", "StatefulSet", NULL));
    if (!w->q || !w->jobs || !w->pods || !w->wls || !w->wpcs || !w->flavors || !w->ssets ||
        fatia_ctlr_informer_on(w->jobs, on_job, w) < 0 ||
        fatia_ctlr_informer_on(w->pods, on_pod, w) < 0 ||
        fatia_ctlr_informer_on(w->wls, on_workload, w) < 0) {
        fatia_ctlr_workload_ctl_free(w);
        return -ENOMEM;
    }
    fatia_ctlr_informer_index_owners(w->wls);
    fatia_ctlr_informer_index_owners(w->pods);
    *ret = w;
    return 0;
}

void fatia_ctlr_workload_ctl_free(struct workload_ctl *w)
{
    if (!w)
        return;
    fatia_ctlr_wq_free(w->q);
    fatia_free(w);
}
