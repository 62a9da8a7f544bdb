/*
 * controller/job.c: Kubernetes' Job controller (pkg/controller/job), minimal but real.
 *
 * Pods: a running Job keeps min(parallelism, completions - succeeded) pods that are not finished
 * (parallelism alone when completions is unset, until a pod succeeds), named <job>-<5 random>,
 * with the job's template, its labels plus batch.kubernetes.io/controller-uid and job-name, an
 * ownerReference to the Job and the finalizer batch.kubernetes.io/job-tracking. A failed pod is
 * replaced after a back-off (10 s doubling, at most 6 min, as upstream; fatiad --job-backoff sets
 * the first step).
 *
 * Counting (upstream's tracking with finalizers, so no pod is counted twice or lost across a
 * restart of fatiad): a pod that ended is first written into status.uncountedTerminatedPods
 * (succeeded or failed, by uid); then its finalizer is removed; then, once the pod no longer
 * carries the finalizer (or is gone), its uid moves from the uncounted lists to the counts. Each
 * step is a write that the next reconcile sees.
 *
 *        pod ended ──► uid in uncountedTerminatedPods ──► finalizer removed ──► counted
 *
 * A pod deleted before it ended (eviction of the Job by Kueue, a user's delete) is done once the
 * node agent let go of it; it counts as failed unless the Job is suspended.
 *
 * Conditions, as in Kubernetes 1.33: Suspended (JobSuspended); SuccessCriteriaMet then Complete
 * (CompletionsReached); FailureTarget then Failed (BackoffLimitExceeded, DeadlineExceeded). One
 * difference: a resumed Job loses its Suspended condition instead of turning it False, so that
 * `kubectl get jobs` (whose Status column shows the newest condition) does not read "Suspended"
 * for a running Job. The terminal condition is written once no pod of the Job runs any more;
 * completionTime with Complete. A suspended Job deletes its running pods; startTime restarts when
 * it resumes (activeDeadlineSeconds counts from there).
 *
 * Orphans: a pod whose Job is gone or being deleted loses the tracking finalizer (work-queue key
 * "orphan:<ns>/<pod>"), as upstream's orphan-pod handling does, so the garbage collector's
 * deletion of a deleted Job's pods completes.
 *
 * Defaults kube-apiserver gives a Job at creation and fatia's does not (they need its uid, which
 * admission plugins do not see): the first reconcile sets spec.selector (matchLabels
 * batch.kubernetes.io/controller-uid) and the template's labels, so that `kubectl logs job/x`
 * and `kubectl describe job` find its pods.
 *
 * One reconcile (reconcile_job) is a struct jobrun and a step per concern, in the order of
 * upstream's syncJob: collect_pods (by state), track_ended (the counting above), drive
 * (suspension; for a running Job check_running: resumption, startTime, deadline, backoff limit;
 * then finish_job or scale), write_status. Each step edits the copy of the Job's status in the
 * jobrun; only write_status writes it.
 *
 * Not implemented: Indexed completion mode (pods run as NonIndexed), podFailurePolicy,
 * successPolicy, backoffLimitPerIndex, podReplacementPolicy (terminating pods are never replaced
 * before they are gone: a GPU slice is never asked for twice), ttlSecondsAfterFinished.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "controller/ctl_internal.h"
#include "controller/kueue.h"
#include "controller/metrics.h"

#define COMPONENT "job-controller"
/* work-queue keys of pods that may be orphans: "orphan:<ns>/<pod>" (Jobs' keys are "<ns>/<job>") */
#define ORPHAN_PREFIX "orphan:"

struct job_ctl {
    struct ctl *ctl;
    struct wq *q;
    struct informer *jobs, *pods;
    struct fatia_strmap last_failure; /* job uid -> fatia_usec_t* (when a failure was counted) */
};

static void on_job(void *arg, const json_t *old, const json_t *obj)
{
    struct job_ctl *j = arg;
    char key[600];

    fatia_ctlr_obj_key(obj ? obj : old, key, sizeof(key));
    if (!obj) {
        fatia_usec_t *t = fatia_strmap_get(&j->last_failure, fatia_ctlr_meta_str(old, "uid"));
        if (t) {
            /* the map's key is stored right after the time */
            fatia_strmap_del(&j->last_failure, fatia_ctlr_meta_str(old, "uid"));
            fatia_free(t);
        }
        return;
    }
    fatia_ctlr_wq_add(j->q, key);
}

static void on_pod(void *arg, const json_t *old, const json_t *obj)
{
    struct job_ctl *j = arg;
    const json_t *o = obj ? obj : old;
    const json_t *ref = fatia_ctlr_owner_of_kind(o, "batch/v1", "Job");
    char key[600];

    if (!ref)
        return;
    fatia_ctlr_make_key(fatia_ctlr_meta_str(o, "namespace"), fatia_json_str(ref, "name"), key,
                        sizeof(key));
    fatia_ctlr_wq_add(j->q, key);
    if (obj && fatia_ctlr_obj_has_finalizer(obj, JOB_FINALIZER_TRACK)) {
        /* perhaps an orphan (its Job deleted): reconcile_orphan decides once caches are synced */
        const json_t *job = fatia_ctlr_informer_get_key(j->jobs, key);
        if (!job || strcmp(fatia_ctlr_meta_str(job, "uid"), fatia_json_str(ref, "uid")) ||
            fatia_ctlr_obj_deleting(job)) {
            char pk[620];
            snprintf(pk, sizeof(pk), "%s%s/%s", ORPHAN_PREFIX,
                     fatia_ctlr_meta_str(obj, "namespace"), fatia_ctlr_meta_str(obj, "name"));
            fatia_ctlr_wq_add(j->q, pk);
        }
    }
}

static bool uid_in(const json_t *arr, const char *uid)
{
    size_t i;
    json_t *v;

    json_array_foreach(arr, i, v)
    {
        if (json_is_string(v) && !strcmp(json_string_value(v), uid))
            return true;
    }
    return false;
}

static void uid_remove(json_t *arr, const char *uid)
{
    size_t i;
    json_t *v;

    json_array_foreach(arr, i, v)
    {
        if (json_is_string(v) && !strcmp(json_string_value(v), uid)) {
            json_array_remove(arr, i);
            return;
        }
    }
}

static int64_t get_int(const json_t *o, const char *k, int64_t def)
{
    int64_t v;

    return fatia_json_int(o, k, &v) ? v : def;
}

static void set_int(json_t *o, const char *k, int64_t v, bool omit_zero)
{
    if (omit_zero && v == 0)
        json_object_del(o, k);
    else
        json_object_set_new(o, k, json_integer(v));
}

struct podview {
    const json_t *pod;
    const char *uid;
};

static void note_failure(struct job_ctl *j, const char *uid, fatia_usec_t now)
{
    fatia_usec_t *t = fatia_strmap_get(&j->last_failure, uid);

    if (!t) {
        size_t n = strlen(uid) + 1;
        t = fatia_malloc(sizeof(*t) + n);
        if (!t)
            return;
        memcpy((char *)(t + 1), uid, n);
        if (fatia_strmap_put(&j->last_failure, (char *)(t + 1), t) < 0) {
            fatia_free(t);
            return;
        }
    }
    *t = now;
}

static int remove_tracking(struct job_ctl *j, const json_t *pod, const char *key)
{
    json_t *np = fatia_ctlr_obj_without_finalizer(pod, JOB_FINALIZER_TRACK);
    int r;

    if (!np)
        return -ENOMEM;
    r = fatia_ctlr_update(
        j->ctl, np,
        &(struct op_opts){.wq = j->q, .key = key, .quiet_missing = true, .quiet_conflict = true});
    json_decref(np);
    return r;
}

static void set_selector(struct job_ctl *j, const json_t *job, const char *key)
{
    const char *uid = fatia_ctlr_meta_str(job, "uid"), *name = fatia_ctlr_meta_str(job, "name");
    json_t *nj = json_deep_copy(job);
    json_t *spec = nj ? json_object_get(nj, "spec") : NULL;
    json_t *tmeta, *labels;

    if (!spec || !uid || !name) {
        json_decref(nj);
        return;
    }
    json_object_set_new(spec, "selector",
                        json_pack("{s:{s:s}}", "matchLabels", JOB_LABEL_CTRL_UID, uid));
    tmeta = fatia_json_object_ensure(fatia_json_object_ensure(spec, "template"), "metadata");
    labels = tmeta ? fatia_json_object_ensure(tmeta, "labels") : NULL;
    if (labels) {
        json_object_set_new(labels, JOB_LABEL_CTRL_UID, json_string(uid));
        json_object_set_new(labels, JOB_LABEL_NAME, json_string(name));
        json_object_set_new(labels, "controller-uid", json_string(uid));
        json_object_set_new(labels, "job-name", json_string(name));
    }
    fatia_ctlr_update(j->ctl, nj, &(struct op_opts){.wq = j->q, .key = key});
    json_decref(nj);
}

static json_t *new_pod(const json_t *job)
{
    const json_t *tmpl = json_object_get(json_object_get(job, "spec"), "template");
    const json_t *tmeta = json_object_get(tmpl, "metadata");
    const char *name = fatia_ctlr_meta_str(job, "name"), *uid = fatia_ctlr_meta_str(job, "uid");
    char gen[300];
    json_t *pod, *labels;

    snprintf(gen, sizeof(gen), "%.57s-", name);
    pod = json_pack("{s:s,s:s,s:{s:s,s:s,s:{},s:[{s:s,s:s,s:s,s:s,s:b,s:b}],s:[s]},s:o}",
                    "apiVersion", "v1", "kind", "Pod", "metadata", "generateName", gen, "namespace",
                    fatia_ctlr_meta_str(job, "namespace"), "labels", "ownerReferences",
                    "apiVersion", "batch/v1", "kind", "Job", "name", name, "uid", uid, "controller",
                    1, "blockOwnerDeletion", 1, "finalizers", JOB_FINALIZER_TRACK, "spec",
                    json_deep_copy(json_object_get(tmpl, "spec")));
    if (!pod)
        return NULL;
    labels = json_object_get(json_object_get(pod, "metadata"), "labels");
    if (json_is_object(json_object_get(tmeta, "labels"))) {
        json_t *copy = json_deep_copy(json_object_get(tmeta, "labels"));
        json_object_update(labels, copy);
        json_decref(copy);
    }
    json_object_set_new(labels, JOB_LABEL_CTRL_UID, json_string(uid));
    json_object_set_new(labels, JOB_LABEL_NAME, json_string(name));
    json_object_set_new(labels, "controller-uid", json_string(uid));
    json_object_set_new(labels, "job-name", json_string(name));
    if (json_is_object(json_object_get(tmeta, "annotations")))
        json_object_set_new(json_object_get(pod, "metadata"), "annotations",
                            json_deep_copy(json_object_get(tmeta, "annotations")));
    return pod;
}

/* A pod whose Job is gone or being deleted loses the tracking finalizer (upstream's orphan pod
 * handling), or it would stay Terminating for ever once the garbage collector deletes it. */
static void reconcile_orphan(struct job_ctl *j, const char *key)
{
    const char *pkey = key + strlen(ORPHAN_PREFIX);
    const json_t *pod = fatia_ctlr_informer_get_key(j->pods, pkey);
    const json_t *ref = pod ? fatia_ctlr_owner_of_kind(pod, "batch/v1", "Job") : NULL;
    const json_t *job;
    char jkey[600];

    if (!ref || !fatia_ctlr_obj_has_finalizer(pod, JOB_FINALIZER_TRACK))
        return;
    fatia_ctlr_make_key(fatia_ctlr_meta_str(pod, "namespace"), fatia_json_str(ref, "name"), jkey,
                        sizeof(jkey));
    job = fatia_ctlr_informer_get_key(j->jobs, jkey);
    if (job && !strcmp(fatia_ctlr_meta_str(job, "uid"), fatia_json_str(ref, "uid")) &&
        !fatia_ctlr_obj_deleting(job))
        return;
    (void)remove_tracking(j, pod, key);
}

/* One reconcile of one Job: what it read and what it is about to write (nj, a copy of the Job
 * whose status the steps edit). The steps below each do one of the concerns of upstream's
 * syncJob, in its order: the pods by state, their counting, suspension, the end of the Job,
 * the pod count; then one status write. */
struct jobrun {
    struct job_ctl *j;
    const char *key;
    const json_t *job;
    json_t *nj, *st, *unc, *us, *uf, *conds; /* nj's status, its uncounted lists, conditions */
    FATIA_VEC(struct podview) active;
    FATIA_VEC(struct podview) ended;
    size_t terminating, ready;
    fatia_usec_t now;
    int64_t par, comp, backoff, ads;
    int64_t succeeded, failed; /* counted, then (after track_ended) with the uncounted too */
    bool has_comp, suspended, finished;
};

/* A Job deleted in the foreground waits for its pods: they lose the tracking finalizer. */
static void release_pods_of_deleted(struct job_ctl *j, const json_t *job)
{
    const struct fatia_strmap *owned =
        fatia_ctlr_informer_owned(j->pods, fatia_ctlr_meta_str(job, "uid"));

    for (size_t i = 0; owned && i < owned->cap; i++) {
        const struct informer_item *it = owned->slots[i].key ? owned->slots[i].val : NULL;
        char pk[620];
        if (!it || !fatia_ctlr_obj_has_finalizer(it->obj, JOB_FINALIZER_TRACK))
            continue;
        snprintf(pk, sizeof(pk), "%s%s/%s", ORPHAN_PREFIX,
                 fatia_ctlr_meta_str(it->obj, "namespace"), fatia_ctlr_meta_str(it->obj, "name"));
        fatia_ctlr_wq_add(j->q, pk);
    }
}

/* The Job's pods, by state: ended, terminating (counted only), active (and how many Ready). */
static int collect_pods(struct jobrun *r)
{
    const struct fatia_strmap *set =
        fatia_ctlr_informer_owned(r->j->pods, fatia_ctlr_meta_str(r->job, "uid"));

    for (size_t i = 0; set && i < set->cap; i++) {
        const struct informer_item *it = set->slots[i].key ? set->slots[i].val : NULL;
        const json_t *ref;
        struct podview pv;
        if (!it)
            continue;
        ref = fatia_ctlr_owner_of_kind(it->obj, "batch/v1", "Job");
        if (!ref || strcmp(fatia_json_str(ref, "uid"), fatia_ctlr_meta_str(r->job, "uid")))
            continue;
        pv = (struct podview){it->obj, fatia_ctlr_meta_str(it->obj, "uid")};
        if (fatia_ctlr_pod_done(it->obj)) {
            if (FATIA_VEC_PUSH(&r->ended, pv) < 0)
                return -ENOMEM;
        } else if (fatia_ctlr_obj_deleting(it->obj)) {
            r->terminating++;
        } else {
            if (FATIA_VEC_PUSH(&r->active, pv) < 0)
                return -ENOMEM;
            if (fatia_ctlr_cond_true(it->obj, "Ready"))
                r->ready++;
        }
    }
    return 0;
}

/* Counting with the tracking finalizer (the file's comment): ended pods into the uncounted lists
 * (true: the status must be written before anything else is decided); else finalizers off
 * recorded pods, and recorded uids whose pod let go are counted. */
static bool track_ended(struct jobrun *r)
{
    bool status_write = false;

    /* 1. ended pods that still carry the finalizer go into the uncounted lists */
    for (size_t i = 0; i < r->ended.n; i++) {
        const json_t *p = r->ended.v[i].pod;
        const char *ph = fatia_json_str(json_object_get(p, "status"), "phase");
        const char *uid = r->ended.v[i].uid;
        if (!fatia_ctlr_obj_has_finalizer(p, JOB_FINALIZER_TRACK) || uid_in(r->us, uid) ||
            uid_in(r->uf, uid))
            continue;
        if (ph && !strcmp(ph, "Succeeded")) {
            json_array_append_new(r->us, json_string(uid));
        } else if (r->suspended && fatia_ctlr_obj_deleting(p)) {
            /* stopped by the suspension (Kueue's eviction): not a failure; let it go */
            (void)remove_tracking(r->j, p, r->key);
            continue;
        } else {
            json_array_append_new(r->uf, json_string(uid));
            note_failure(r->j, fatia_ctlr_meta_str(r->job, "uid"), r->now);
        }
        status_write = true;
    }
    if (status_write)
        return true;
    /* 2. finalizers of recorded pods come off */
    for (size_t i = 0; i < r->ended.n; i++) {
        const json_t *p = r->ended.v[i].pod;
        if (fatia_ctlr_obj_has_finalizer(p, JOB_FINALIZER_TRACK) &&
            (uid_in(r->us, r->ended.v[i].uid) || uid_in(r->uf, r->ended.v[i].uid)))
            (void)remove_tracking(r->j, p, r->key);
    }
    /* 3. recorded uids whose pod lost the finalizer (or is gone) are counted */
    for (int pass = 0; pass < 2; pass++) {
        json_t *arr = pass ? r->uf : r->us;
        for (size_t i = json_array_size(arr); i-- > 0;) {
            const char *uid = json_string_value(json_array_get(arr, i));
            bool still = false;
            for (size_t k = 0; uid && k < r->ended.n; k++)
                if (!strcmp(r->ended.v[k].uid, uid) &&
                    fatia_ctlr_obj_has_finalizer(r->ended.v[k].pod, JOB_FINALIZER_TRACK))
                    still = true;
            if (!uid || still)
                continue;
            uid_remove(arr, uid);
            if (pass)
                r->failed++;
            else
                r->succeeded++;
        }
    }
    return false;
}

/* Deletes the active pods from index from on; event: a SuccessfulDelete Event for each. */
static void delete_active(struct jobrun *r, size_t from, bool event)
{
    for (size_t i = from; i < r->active.n; i++) {
        const json_t *p = r->active.v[i].pod;
        if (fatia_ctlr_delete(
                r->j->ctl, r->j->pods->kind, fatia_ctlr_meta_str(p, "namespace"),
                fatia_ctlr_meta_str(p, "name"), r->active.v[i].uid,
                &(struct op_opts){.wq = r->j->q, .key = r->key, .quiet_missing = true}) == 0 &&
            event)
            fatia_ctlr_event(r->j->ctl, r->job, COMPONENT, "Normal", "SuccessfulDelete",
                             "Deleted pod: %s", fatia_ctlr_meta_str(p, "name"));
    }
}

/* A running Job: the Suspended condition of a resumed Job goes, startTime is (re)set, and the
 * active deadline and the backoff limit are checked. The reason a Job must fail, or NULL. */
static const char *check_running(struct jobrun *r, const char **ret_msg)
{
    const json_t *sc = fatia_ctlr_cond_get(r->job, "Suspended");
    const char *start;

    *ret_msg = NULL;
    if (sc && !strcmp(fatia_json_str(sc, "status"), "True")) {
        /* upstream turns the condition False (JobResumed); fatia drops it, because the
           Status column of `kubectl get jobs` shows the newest condition and would read
           "Suspended" for a running Job (the Resumed event stays) */
        size_t ci;
        json_t *cv;
        json_array_foreach(r->conds, ci, cv)
        {
            const char *t = fatia_json_str(cv, "type");
            if (t && !strcmp(t, "Suspended")) {
                json_array_remove(r->conds, ci);
                break;
            }
        }
        json_object_set_new(r->st, "startTime", fatia_ctlr_json_time(r->now));
        fatia_ctlr_event(r->j->ctl, r->job, COMPONENT, "Normal", "Resumed", "Job resumed");
    }
    if (!json_object_get(r->st, "startTime"))
        json_object_set_new(r->st, "startTime", fatia_ctlr_json_time(r->now));
    start = fatia_json_str(r->st, "startTime");
    if (r->ads > 0 && start) {
        fatia_usec_t t0;
        if (fatia_time_parse_rfc3339(start, &t0) == 0) {
            if (r->now >= t0 + r->ads * FATIA_USEC_PER_SEC) {
                *ret_msg = "Job was active longer than specified deadline";
                return "DeadlineExceeded";
            }
            fatia_ctlr_wq_add_after(r->j->q, r->key,
                                    t0 + r->ads * FATIA_USEC_PER_SEC - r->now + 1000);
        }
    }
    if (r->failed > r->backoff) {
        *ret_msg = "Job has reached the specified backoff limit";
        return "BackoffLimitExceeded";
    }
    return NULL;
}

/* An ending Job (FailureTarget or SuccessCriteriaMet): no pod may keep running; once none
 * runs, the terminal condition. */
static void finish_job(struct jobrun *r)
{
    const json_t *ft;

    delete_active(r, 0, false);
    if (r->active.n || r->terminating)
        return;
    ft = fatia_ctlr_cond_get(r->nj, "FailureTarget");
    if (ft && !strcmp(fatia_json_str(ft, "status"), "True")) {
        fatia_ctlr_cond_set(r->conds, "Failed", "True", fatia_json_str(ft, "reason"),
                            fatia_json_str(ft, "message"), r->now);
    } else {
        fatia_ctlr_cond_set(r->conds, "Complete", "True", "CompletionsReached",
                            "Reached expected number of succeeded pods", r->now);
        json_object_set_new(r->st, "completionTime", fatia_ctlr_json_time(r->now));
    }
}

/* The failure back-off: how long before a failed pod may be replaced (0: now). */
static fatia_usec_t replace_delay(struct jobrun *r)
{
    fatia_usec_t *lf = fatia_strmap_get(&r->j->last_failure, fatia_ctlr_meta_str(r->job, "uid"));
    fatia_usec_t step = fatia_ctlr_opts(r->j->ctl)->job_backoff;

    if (!lf || r->failed <= 0)
        return 0;
    for (int64_t k = 1; k < r->failed && step < 360 * FATIA_USEC_PER_SEC; k++)
        step *= 2;
    if (step > 360 * FATIA_USEC_PER_SEC)
        step = 360 * FATIA_USEC_PER_SEC;
    return *lf + step > r->now ? *lf + step - r->now : 0;
}

/* Creates or removes pods to reach the wanted count. 0 or -ENOMEM. */
static int scale(struct jobrun *r)
{
    int64_t want = r->par;
    int64_t have = (int64_t)r->active.n + (int64_t)r->terminating;
    fatia_usec_t delay;

    if (r->has_comp && r->comp - r->succeeded < want)
        want = r->comp - r->succeeded;
    if (!r->has_comp && r->succeeded > 0)
        want = 0;
    if (want < 0)
        want = 0;
    if (want < (int64_t)r->active.n) {
        delete_active(r, (size_t)want, false);
        return 0;
    }
    if (want <= have)
        return 0;
    delay = replace_delay(r);
    if (delay > 0) {
        fatia_ctlr_wq_add_after(r->j->q, r->key, delay);
        return 0;
    }
    for (int64_t k = have; k < want; k++) {
        json_t *pod = new_pod(r->job);
        if (!pod)
            return -ENOMEM;
        if (fatia_ctlr_create(r->j->ctl, pod, &(struct op_opts){.wq = r->j->q, .key = r->key}) ==
            0) {
            fatia_ctlr_event(r->j->ctl, r->job, COMPONENT, "Normal", "SuccessfulCreate",
                             "Created pod for job %s", fatia_ctlr_meta_str(r->job, "name"));
            fatia_ctlr_metric_inc(fatia_ctlr_metrics(r->j->ctl), "fatia_job_pods_created_total", "",
                                  1);
        }
        json_decref(pod);
    }
    return 0;
}

/* A Job that is neither finished nor waiting for a status write: suspension, or the checks
 * of a running Job, then its end or its pod count. 0 or -ENOMEM. */
static int drive(struct jobrun *r)
{
    const char *reason, *msg;

    if (r->suspended) {
        fatia_ctlr_cond_set(r->conds, "Suspended", "True", "JobSuspended", "Job suspended", r->now);
        delete_active(r, 0, true);
        return 0;
    }
    reason = check_running(r, &msg);
    if (reason) {
        if (fatia_ctlr_cond_set(r->conds, "FailureTarget", "True", reason, msg, r->now))
            fatia_ctlr_event(r->j->ctl, r->job, COMPONENT, "Warning", reason, "%s", msg);
    } else if ((r->has_comp && r->succeeded >= r->comp) ||
               (!r->has_comp && r->succeeded > 0 && r->active.n == 0)) {
        if (fatia_ctlr_cond_set(r->conds, "SuccessCriteriaMet", "True", "CompletionsReached",
                                "Reached expected number of succeeded pods", r->now))
            fatia_ctlr_event(r->j->ctl, r->job, COMPONENT, "Normal", "Completed", "Job completed");
    }
    if (fatia_ctlr_cond_true(r->nj, "FailureTarget") ||
        fatia_ctlr_cond_true(r->nj, "SuccessCriteriaMet")) {
        finish_job(r);
        return 0;
    }
    return scale(r);
}

/* The status as computed (empty lists dropped), written when it differs from the stored one. */
static void write_status(struct jobrun *r)
{
    set_int(r->st, "active", (int64_t)r->active.n, true);
    set_int(r->st, "ready", (int64_t)r->ready, false);
    set_int(r->st, "terminating", (int64_t)r->terminating, true);
    if (!json_array_size(r->us))
        json_object_del(r->unc, "succeeded");
    if (!json_array_size(r->uf))
        json_object_del(r->unc, "failed");
    if (!json_array_size(r->conds))
        json_object_del(r->st, "conditions");
    if (!fatia_json_equal(json_object_get(r->nj, "status"), json_object_get(r->job, "status")))
        fatia_ctlr_update_status(r->j->ctl, r->nj, &(struct op_opts){.wq = r->j->q, .key = r->key});
}

static void reconcile_job(struct job_ctl *j, const char *key)
{
    const json_t *job = fatia_ctlr_informer_get_key(j->jobs, key);
    const json_t *spec = json_object_get(job, "spec");
    struct jobrun r = {.j = j, .key = key, .job = job, .now = fatia_ctlr_now(j->ctl)};
    bool status_write;

    if (job && fatia_ctlr_obj_deleting(job)) {
        release_pods_of_deleted(j, job);
        return;
    }
    if (!job)
        return;
    if (!json_object_get(spec, "selector") && !fatia_json_bool(spec, "manualSelector", false)) {
        /* kube-apiserver defaults these at creation, from the uid, which admission plugins do
           not know yet here: the first reconcile writes them (kubectl logs job/x needs them) */
        set_selector(j, job, key);
        return;
    }
    r.suspended = fatia_json_bool(spec, "suspend", false);
    r.finished = fatia_ctlr_cond_true(job, "Complete") || fatia_ctlr_cond_true(job, "Failed");
    r.par = get_int(spec, "parallelism", 1);
    r.has_comp = fatia_json_int(spec, "completions", &r.comp);
    r.backoff = get_int(spec, "backoffLimit", 6);
    r.ads = get_int(spec, "activeDeadlineSeconds", 0);

    r.nj = json_deep_copy(job);
    r.st = r.nj ? fatia_json_object_ensure(r.nj, "status") : NULL;
    r.unc = r.st ? fatia_json_object_ensure(r.st, "uncountedTerminatedPods") : NULL;
    r.us = r.unc ? fatia_json_array_ensure(r.unc, "succeeded") : NULL;
    r.uf = r.unc ? fatia_json_array_ensure(r.unc, "failed") : NULL;
    r.conds = r.st ? fatia_json_array_ensure(r.st, "conditions") : NULL;
    if (!r.conds || !r.us || !r.uf || collect_pods(&r) < 0)
        goto oom;
    r.succeeded = get_int(r.st, "succeeded", 0);
    r.failed = get_int(r.st, "failed", 0);

    status_write = track_ended(&r);
    set_int(r.st, "succeeded", r.succeeded, true);
    set_int(r.st, "failed", r.failed, true);
    /* decisions count the pods recorded but not yet counted too (upstream does the same) */
    r.succeeded += (int64_t)json_array_size(r.us);
    r.failed += (int64_t)json_array_size(r.uf);

    if (!r.finished && !status_write) {
        if (drive(&r) < 0)
            goto oom;
    } else if (r.finished) {
        delete_active(&r, 0, false); /* a finished job keeps no running pod */
    }
    write_status(&r);
    json_decref(r.nj);
    FATIA_VEC_RELEASE(&r.active);
    FATIA_VEC_RELEASE(&r.ended);
    return;
oom:
    fatia_error("job %s: out of memory", key);
    json_decref(r.nj);
    FATIA_VEC_RELEASE(&r.active);
    FATIA_VEC_RELEASE(&r.ended);
    fatia_ctlr_wq_add_after(j->q, key, FATIA_USEC_PER_SEC);
}

static void reconcile(void *arg, const char *key)
{
    struct job_ctl *j = arg;

    if (!strncmp(key, ORPHAN_PREFIX, strlen(ORPHAN_PREFIX)))
        reconcile_orphan(j, key);
    else
        reconcile_job(j, key);
}

int fatia_ctlr_job_ctl_new(struct ctl *c, struct job_ctl **ret)
{
    struct job_ctl *j = fatia_calloc(1, sizeof(*j));

    if (!j)
        return -ENOMEM;
    j->ctl = c;
    j->q = fatia_ctlr_wq_new(c, "job", reconcile, j);
    j->jobs = fatia_ctlr_informer(c, fatia_kind_find("batch/v1", "Job", NULL));
    j->pods = fatia_ctlr_informer(c, fatia_kind_find("v1", "Pod", NULL));
    if (!j->q || !j->jobs || !j->pods || fatia_ctlr_informer_on(j->jobs, on_job, j) < 0 ||
        fatia_ctlr_informer_on(j->pods, on_pod, j) < 0 ||
        fatia_ctlr_metric_define(fatia_ctlr_metrics(c), "fatia_job_pods_created_total", "counter",
                                 "Pods the job controller created", NULL, 0) < 0) {
        fatia_ctlr_job_ctl_free(j);
        return -ENOMEM;
    }
    fatia_ctlr_informer_index_owners(j->pods);
    *ret = j;
    return 0;
}

void fatia_ctlr_job_ctl_free(struct job_ctl *j)
{
    if (!j)
        return;
    fatia_ctlr_wq_free(j->q);
    for (size_t i = 0; i < j->last_failure.cap; i++)
        if (j->last_failure.slots[i].key)
            fatia_free(j->last_failure.slots[i].val);
    fatia_strmap_release(&j->last_failure);
    fatia_free(j);
}
