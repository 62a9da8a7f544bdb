/*
 * controller/cronjob.c: the CronJob controller (batch/v1), as kube-controller-manager's
 * (pkg/controller/cronjob/cronjob_controllerv2.go, syncCronJob): Jobs created on schedule,
 * concurrencyPolicy, startingDeadlineSeconds, suspend, history limits, status.
 *
 * Model, one pass per CronJob key:
 *   - its Jobs: those whose controller ownerReference is its uid; active = not finished
 *     (no Complete or Failed condition True);
 *   - status: active (references), lastSuccessfulTime (the latest completion);
 *   - history: finished Jobs past successfulJobsHistoryLimit / failedJobsHistoryLimit deleted,
 *     oldest first (background: the gc takes their pods);
 *   - the most recent fire time in (earliest, now] (model/cron.h; earliest is
 *     lastScheduleTime, else creationTimestamp, raised to now - startingDeadlineSeconds when
 *     set); more than 100 missed: a Warning event TooManyMissedTimes, as upstream; a time older
 *     than startingDeadlineSeconds is missed, not run;
 *   - suspend: nothing is started; Forbid with an active Job: this time is skipped; Replace:
 *     the active Jobs are deleted first; then the Job "<name>-<minutes since the epoch>" (the
 *     name makes a second create of one time a 409: no double run after a restart), with the
 *     template's labels and annotations, batch.kubernetes.io/cronjob-scheduled-timestamp, and a
 *     controller ownerReference; lastScheduleTime records the time;
 *   - the key runs again at the next fire time.
 * Time zone: UTC only (spec.timeZone is validated to UTC, docs/apiserver.md).
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "controller/ctl_internal.h"
#include "model/cron.h"

#define MAX_JOBS 256

struct cronjob_ctl {
    struct ctl *ctl;
    struct wq *q;
    struct informer *cronjobs, *jobs;
};

struct owned_job {
    const json_t *job;
    const char *start; /* creationTimestamp: RFC 3339 UTC compares as a string */
    int state;         /* 0 active, 1 complete, 2 failed */
};

static int cmp_jobs(const void *a, const void *b)
{
    const struct owned_job *x = a, *y = b;

    return strcmp(x->start ? x->start : "", y->start ? y->start : "");
}

static int64_t secs_of(const char *ts)
{
    fatia_usec_t t;

    return ts && fatia_time_parse_rfc3339(ts, &t) == 0 ? (int64_t)(t / FATIA_USEC_PER_SEC) : -1;
}

static json_t *time_json(int64_t secs)
{
    return fatia_ctlr_json_time((fatia_usec_t)secs * FATIA_USEC_PER_SEC);
}

static void create_job(struct cronjob_ctl *c, const char *key, const json_t *cj, int64_t when)
{
    const json_t *tmpl = fatia_json_path(cj, "spec.jobTemplate");
    const json_t *tmeta = json_object_get(tmpl, "metadata");
    json_t *job, *meta, *ann, *ts = time_json(when);
    char name[300];

    snprintf(name, sizeof(name), "%.200s-%" PRId64, fatia_ctlr_meta_str(cj, "name"), when / 60);
    meta = json_pack("{s:s,s:s,s:[{s:s,s:s,s:s,s:s,s:b,s:b}]}", "name", name, "namespace",
                     fatia_ctlr_meta_str(cj, "namespace"), "ownerReferences", "apiVersion",
                     "batch/v1", "kind", "CronJob", "name", fatia_ctlr_meta_str(cj, "name"), "uid",
                     fatia_ctlr_meta_str(cj, "uid"), "controller", 1, "blockOwnerDeletion", 1);
    if (!meta || !ts)
        goto out;
    if (json_object_get(tmeta, "labels"))
        json_object_set_new(meta, "labels", json_deep_copy(json_object_get(tmeta, "labels")));
    ann = json_object_get(tmeta, "annotations")
              ? json_deep_copy(json_object_get(tmeta, "annotations"))
              : json_object();
    json_object_set(ann, "batch.kubernetes.io/cronjob-scheduled-timestamp", ts);
    json_object_set_new(meta, "annotations", ann);
    job = json_pack("{s:s,s:s,s:O,s:o}", "apiVersion", "batch/v1", "kind", "Job", "metadata", meta,
                    "spec", json_deep_copy(json_object_get(tmpl, "spec")));
    if (job) {
        fatia_ctlr_create(c->ctl, job,
                          &(struct op_opts){.wq = c->q, .key = key, .quiet_conflict = true});
        fatia_ctlr_event(c->ctl, cj, "cronjob-controller", "Normal", "SuccessfulCreate",
                         "Created job %s", name);
    }
    json_decref(job);
out:
    json_decref(meta);
    json_decref(ts);
}

static void write_status(struct cronjob_ctl *c, const char *key, const json_t *cj,
                         const struct owned_job *jobs, size_t n, int64_t scheduled,
                         const char *last_success)
{
    const json_t *old = json_object_get(cj, "status");
    json_t *st = json_object(), *active = json_array(), *obj;

    for (size_t i = 0; st && active && i < n; i++) {
        if (jobs[i].state)
            continue;
        json_array_append_new(active,
                              json_pack("{s:s,s:s,s:s,s:s,s:s}", "apiVersion", "batch/v1", "kind",
                                        "Job", "name", fatia_ctlr_meta_str(jobs[i].job, "name"),
                                        "namespace", fatia_ctlr_meta_str(jobs[i].job, "namespace"),
                                        "uid", fatia_ctlr_meta_str(jobs[i].job, "uid")));
    }
    if (!st || !active)
        goto out;
    if (json_array_size(active))
        json_object_set(st, "active", active);
    if (scheduled >= 0)
        json_object_set_new(st, "lastScheduleTime", time_json(scheduled));
    else if (json_object_get(old, "lastScheduleTime"))
        json_object_set(st, "lastScheduleTime", json_object_get(old, "lastScheduleTime"));
    if (last_success)
        json_object_set_new(st, "lastSuccessfulTime", json_string(last_success));
    else if (json_object_get(old, "lastSuccessfulTime"))
        json_object_set(st, "lastSuccessfulTime", json_object_get(old, "lastSuccessfulTime"));
    if (old ? json_equal(st, old) : !json_object_size(st))
        goto out;
    obj = json_deep_copy(cj);
    if (obj) {
        json_object_set(obj, "status", st);
        fatia_ctlr_update_status(
            c->ctl, obj,
            &(struct op_opts){
                .wq = c->q, .key = key, .quiet_conflict = true, .quiet_missing = true});
    }
    json_decref(obj);
out:
    json_decref(st);
    json_decref(active);
}

static void reconcile(void *arg, const char *key)
{
    struct cronjob_ctl *c = arg;
    const json_t *cj = fatia_ctlr_informer_get_key(c->cronjobs, key);
    const json_t *spec = json_object_get(cj, "spec");
    const struct fatia_strmap *owned;
    struct owned_job jobs[MAX_JOBS];
    size_t n = 0, n_ok = 0, n_failed = 0, n_active = 0;
    int64_t now = (int64_t)(fatia_ctlr_now(c->ctl) / FATIA_USEC_PER_SEC);
    int64_t keep_ok = 3, keep_failed = 1, deadline = -1, earliest, when, missed = 0, next;
    const char *policy = fatia_json_str(spec, "concurrencyPolicy"), *last_success = NULL;
    struct fatia_cron cron;
    char why[200];
    bool started = false;

    if (!cj || fatia_ctlr_obj_deleting(cj))
        return;
    fatia_json_int(spec, "successfulJobsHistoryLimit", &keep_ok);
    fatia_json_int(spec, "failedJobsHistoryLimit", &keep_failed);
    fatia_json_int(spec, "startingDeadlineSeconds", &deadline);
    owned = fatia_ctlr_informer_owned(c->jobs, fatia_ctlr_meta_str(cj, "uid"));
    for (size_t i = 0; owned && i < owned->cap && n < MAX_JOBS; i++) {
        const struct informer_item *it;
        const char *ruid;
        if (!owned->slots[i].key)
            continue;
        it = owned->slots[i].val;
        ruid = fatia_json_str(fatia_ctlr_obj_controller_ref(it->obj), "uid");
        if (!ruid || strcmp(ruid, fatia_ctlr_meta_str(cj, "uid")) ||
            fatia_ctlr_obj_deleting(it->obj))
            continue;
        jobs[n] = (struct owned_job){it->obj, fatia_ctlr_meta_str(it->obj, "creationTimestamp"),
                                     fatia_ctlr_cond_true(it->obj, "Complete") ? 1
                                     : fatia_ctlr_cond_true(it->obj, "Failed") ? 2
                                                                               : 0};
        if (jobs[n].state == 1) {
            const char *ct = fatia_json_str(json_object_get(it->obj, "status"), "completionTime");
            if (ct && (!last_success || strcmp(ct, last_success) > 0))
                last_success = ct;
        }
        n_ok += jobs[n].state == 1;
        n_failed += jobs[n].state == 2;
        n_active += jobs[n].state == 0;
        n++;
    }
    qsort(jobs, n, sizeof(jobs[0]), cmp_jobs);
    /* history limits, oldest first */
    for (size_t i = 0; i < n; i++) {
        size_t *count = jobs[i].state == 1 ? &n_ok : jobs[i].state == 2 ? &n_failed : NULL;
        int64_t keep = jobs[i].state == 1 ? keep_ok : keep_failed;
        if (!count || (int64_t)*count <= keep)
            continue;
        fatia_ctlr_delete(c->ctl, c->jobs->kind, fatia_ctlr_meta_str(jobs[i].job, "namespace"),
                          fatia_ctlr_meta_str(jobs[i].job, "name"),
                          fatia_ctlr_meta_str(jobs[i].job, "uid"),
                          &(struct op_opts){.wq = c->q, .key = key, .quiet_missing = true});
        (*count)--;
    }
    if (fatia_cron_parse(fatia_json_str(spec, "schedule") ? fatia_json_str(spec, "schedule") : "",
                         &cron, why, sizeof(why)) < 0) {
        fatia_ctlr_event(c->ctl, cj, "cronjob-controller", "Warning", "UnparseableSchedule",
                         "unparseable schedule: %s", why);
        return;
    }
    earliest = secs_of(fatia_json_str(json_object_get(cj, "status"), "lastScheduleTime"));
    if (earliest < 0)
        earliest = secs_of(fatia_ctlr_meta_str(cj, "creationTimestamp"));
    if (earliest < 0)
        earliest = now;
    if (deadline >= 0 && now - deadline > earliest)
        earliest = now - deadline;
    when = fatia_cron_most_recent(&cron, earliest, now, &missed);
    if (missed > 100)
        fatia_ctlr_event(c->ctl, cj, "cronjob-controller", "Warning", "TooManyMissedTimes",
                         "too many missed start times: %" PRId64
                         ". Set or decrease .spec.startingDeadlineSeconds or check clock skew",
                         missed);
    if (when >= 0 && !json_is_true(json_object_get(spec, "suspend"))) {
        if (policy && !strcmp(policy, "Forbid") && n_active) {
            /* skipped: lastScheduleTime stays, so this time is tried again until it is past
             * the deadline (upstream) */
            when = -1;
        } else {
            if (policy && !strcmp(policy, "Replace")) {
                for (size_t i = 0; i < n; i++) {
                    if (jobs[i].state)
                        continue;
                    fatia_ctlr_delete(
                        c->ctl, c->jobs->kind, fatia_ctlr_meta_str(jobs[i].job, "namespace"),
                        fatia_ctlr_meta_str(jobs[i].job, "name"),
                        fatia_ctlr_meta_str(jobs[i].job, "uid"),
                        &(struct op_opts){.wq = c->q, .key = key, .quiet_missing = true});
                    jobs[i].state = 3; /* going: not active any more */
                }
            }
            create_job(c, key, cj, when);
            started = true;
        }
    } else {
        when = -1;
    }
    write_status(c, key, cj, jobs, n, started ? when : -1, last_success);
    next = fatia_cron_next(&cron, now);
    if (next >= 0)
        fatia_ctlr_wq_add_after(c->q, key,
                                (fatia_usec_t)(next - now) * FATIA_USEC_PER_SEC + 100 * 1000);
    else if (policy && !strcmp(policy, "Forbid") && n_active)
        fatia_ctlr_wq_add_after(c->q, key, 10 * FATIA_USEC_PER_SEC);
}

static void on_cronjob(void *arg, const json_t *old, const json_t *obj)
{
    struct cronjob_ctl *c = arg;
    char key[600];

    fatia_ctlr_obj_key(obj ? obj : old, key, sizeof(key));
    fatia_ctlr_wq_add(c->q, key);
}

static void on_job(void *arg, const json_t *old, const json_t *obj)
{
    struct cronjob_ctl *c = arg;
    const json_t *j = obj ? obj : old;
    const json_t *ref = fatia_ctlr_obj_controller_ref(j);
    const char *kind = fatia_json_str(ref, "kind"), *name = fatia_json_str(ref, "name");
    char key[600];

    if (!kind || !name || strcmp(kind, "CronJob"))
        return;
    fatia_ctlr_make_key(fatia_ctlr_meta_str(j, "namespace"), name, key, sizeof(key));
    fatia_ctlr_wq_add(c->q, key);
}

int fatia_ctlr_cronjob_ctl_new(struct ctl *ctl, struct cronjob_ctl **ret)
{
    struct cronjob_ctl *c = fatia_calloc(1, sizeof(*c));
    int rc;

    if (!c)
        return -ENOMEM;
    c->ctl = ctl;
    c->q = fatia_ctlr_wq_new(ctl, "cronjob", reconcile, c);
    c->cronjobs = fatia_ctlr_informer(ctl, fatia_kind_find("batch/v1", "CronJob", NULL));
    c->jobs = fatia_ctlr_informer(ctl, fatia_kind_find("batch/v1", "Job", NULL));
    if (!c->q || !c->cronjobs || !c->jobs) {
        fatia_ctlr_cronjob_ctl_free(c);
        return -ENOMEM;
    }
    fatia_ctlr_informer_index_owners(c->jobs);
    if ((rc = fatia_ctlr_informer_on(c->cronjobs, on_cronjob, c)) < 0 ||
        (rc = fatia_ctlr_informer_on(c->jobs, on_job, c)) < 0) {
        fatia_ctlr_cronjob_ctl_free(c);
        return rc;
    }
    *ret = c;
    return 0;
}

void fatia_ctlr_cronjob_ctl_free(struct cronjob_ctl *c)
{
    if (!c)
        return;
    fatia_ctlr_wq_free(c->q);
    fatia_free(c);
}
