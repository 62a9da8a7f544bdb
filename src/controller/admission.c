/*
 * controller/admission.c: the admission controller: the control layer's Kueue engine
 * (control/control.h) over the live objects.
 *
 * Feeding: every ResourceFlavor, Cohort, ClusterQueue, LocalQueue, WorkloadPriorityClass,
 * Namespace, SchedulerConfig and Workload event is applied to the engine as it arrives
 * (fatia_control_apply / _delete); a Workload that is Finished leaves it
 * (fatia_control_workload_finished). The engine's admission state is authoritative: the echo of
 * our own status writes changes nothing in it. After a restart the engine is rebuilt from the
 * stored Workloads: one with status.admission and QuotaReserved=True is charged at once.
 *
 * Cycles: any change schedules a Kueue scheduling cycle (fatia_control_cycle) on the loop; a cycle
 * that admitted or evicted something is followed by another at once, a quiet one that still has
 * heads to pop by one after a back-off (1 ms doubling to 1 s, reset by the next change), like
 * Kueue's scheduler loop; one with only requeue backoffs left wakes when the first expires
 * (fatia_control_next_wakeup).
 *
 * Writing back (level-triggered: a per-workload reconcile makes the stored status match the
 * engine's view; it never writes what is already there):
 *
 *   engine Admitted      status.admission (clusterQueue, podSetAssignments with flavors,
 *                        resourceUsage, count), QuotaReserved=True (QuotaReserved, "Quota reserved
 *                        in ClusterQueue X"), Admitted=True (Admitted, "The workload is admitted");
 *                        an earlier Evicted/Preempted turns False ("Previously: ...");
 *   engine Evicting      the admission stays; Evicted=True (Preempted, or ClusterQueueStopped,
 *                        LocalQueueStopped, Deactivated) and, for preemptions, Preempted=True
 *                        (InClusterQueue, InCohortReclamation, InCohortReclaimWhileBorrowing,
 *                        InCohortFairSharing) with Kueue's message;
 *   engine Pending       QuotaReserved=False (Pending, with Kueue's message saying why).
 *
 * Eviction is a hand-off: the workload controller stops the Job's pods and then clears
 * status.admission (QuotaReserved=False); seeing a Workload with Evicted=True and no admission,
 * this controller releases its quota in the engine (fatia_control_workload_released) and the
 * workload queues again. Until then the victim keeps its quota, so its slices are never promised
 * to the preemptor while its processes still run.
 *
 * ClusterQueue and LocalQueue status (pending, reserving and admitted workloads, flavorsReservation,
 * flavorsUsage, conditions): one reconcile (the queue-status work queue's single key "*")
 * computes every queue's status from the engine and writes the queues whose stored status
 * differs; it never writes what is already there. It is queued on every event of a fed kind but
 * Workload (an echo of its own writes included), on a Workload's deletion or Finished, after a
 * cycle that admitted, evicted or left something pending, and by a timer every status interval
 * (the controllers' status_interval, 1 s by default) as a resync. Queued again before it runs, it
 * runs once; queued while its writes are in flight, it runs once they are answered. So the writes
 * follow the events, not the interval: nothing limits them to one per interval, and a queue is
 * written again only when its computed status changed.
 */
#include "base/compat.h"

#include <event2/event.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "control/control.h"
#include "controller/ctl_internal.h"
#include "controller/kueue.h"
#include "controller/metrics.h"

#define COMPONENT "kueue-admission"

struct evict_rec {
    char *key;
    char *evicted_reason;   /* Preempted, ClusterQueueStopped, ... */
    char *preempted_reason; /* InClusterQueue, ...; NULL when not a preemption */
    char *message;
};

struct admission_ctl {
    struct ctl *ctl;
    struct fatia_control *eng;
    struct informer *wls, *cqs, *lqs;
    struct wq *status_q;
    struct wq *queue_status_q;
    struct event *cycle_ev;
    struct event *status_timer;
    fatia_usec_t backoff;
    bool cycle_pending;
    struct fatia_strmap evictions; /* workload key -> struct evict_rec */
    uint64_t cycles;
};

static const char *const kind_names[] = {
    "ResourceFlavor", "Cohort",          "ClusterQueue",   "LocalQueue", "WorkloadPriorityClass",
    "Namespace",      "SchedulerConfig", "AdmissionCheck", "Workload"};

/* ---- eviction records ---- */

static void rec_free(struct evict_rec *r)
{
    if (!r)
        return;
    fatia_free(r->key);
    fatia_free(r->evicted_reason);
    fatia_free(r->preempted_reason);
    fatia_free(r->message);
    fatia_free(r);
}

static void rec_drop(struct admission_ctl *a, const char *key)
{
    struct evict_rec *r = fatia_strmap_get(&a->evictions, key);

    if (!r)
        return;
    fatia_strmap_del(&a->evictions, key);
    rec_free(r);
}

static void rec_set(struct admission_ctl *a, const char *key, const char *ev_reason,
                    const char *pre_reason, const char *msg)
{
    struct evict_rec *r = fatia_calloc(1, sizeof(*r));

    if (!r)
        return;
    r->key = fatia_strdup(key);
    r->evicted_reason = fatia_strdup(ev_reason);
    r->preempted_reason = pre_reason ? fatia_strdup(pre_reason) : NULL;
    r->message = fatia_strdup(msg ? msg : "");
    if (!r->key || !r->evicted_reason || !r->message || (pre_reason && !r->preempted_reason)) {
        rec_free(r);
        return;
    }
    rec_drop(a, key);
    if (fatia_strmap_put(&a->evictions, r->key, r) < 0)
        rec_free(r);
}

static bool is_preemption(const char *reason)
{
    return reason && (!strcmp(reason, "InClusterQueue") || !strcmp(reason, "InCohortReclamation") ||
                      !strcmp(reason, "InCohortReclaimWhileBorrowing") ||
                      !strcmp(reason, "InCohortFairSharing"));
}

/* ---- cycles ---- */

static void schedule_cycle(struct admission_ctl *a, bool reset)
{
    struct timeval tv = {0, 0};

    if (reset)
        a->backoff = 0;
    if (a->cycle_pending && !reset)
        return;
    if (!fatia_ctlr_ready(a->ctl))
        return; /* the first cycle runs from the sync hook */
    tv.tv_sec = (time_t)(a->backoff / FATIA_USEC_PER_SEC);
    tv.tv_usec = (suseconds_t)(a->backoff % FATIA_USEC_PER_SEC);
    a->cycle_pending = true;
    evtimer_add(a->cycle_ev, &tv);
}

static void wl_enqueue(struct admission_ctl *a, const char *ns, const char *name)
{
    char key[600];

    fatia_ctlr_make_key(ns, name, key, sizeof(key));
    fatia_ctlr_wq_add(a->status_q, key);
}

static double wait_seconds(struct admission_ctl *a, const char *ns, const char *name,
                           fatia_usec_t now)
{
    const json_t *wl = fatia_ctlr_informer_get(a->wls, ns, name);
    const char *ts = fatia_ctlr_meta_str(wl, "creationTimestamp");
    fatia_usec_t t0;

    if (!ts || fatia_time_parse_rfc3339(ts, &t0) < 0 || t0 > now)
        return 0;
    return (double)(now - t0) / 1e6;
}

/* The engine's verdict on a workload holding quota: every admission check it needs is Ready. */
static bool checks_ready(struct admission_ctl *a, const char *ns, const char *name)
{
    json_t *st = NULL;
    bool ready;

    if (fatia_control_workload_status(a->eng, ns, name, &st) < 0)
        return false;
    ready = json_is_true(json_object_get(st, "checksReady"));
    json_decref(st);
    return ready;
}

static void cycle_cb(evutil_socket_t fd, short what, void *arg)
{
    struct admission_ctl *a = arg;
    struct fatia_ctlr_metrics *m = fatia_ctlr_metrics(a->ctl);
    const struct fatia_control_result *res;
    fatia_usec_t now = fatia_ctlr_now(a->ctl), t0 = fatia_now_mono_usec();
    int64_t wake;
    char lab[512];
    int r;

    (void)fd;
    (void)what;
    a->cycle_pending = false;
    if (!fatia_ctlr_ready(a->ctl))
        return;
    r = fatia_control_cycle(a->eng, now, &res);
    a->cycles++;
    if (r < 0) {
        fatia_log_errno(FATIA_LOG_ERROR, r, "admission: scheduling cycle failed");
        a->backoff = FATIA_USEC_PER_SEC;
        schedule_cycle(a, false);
        return;
    }
    for (size_t i = 0; i < res->n_admitted; i++) {
        const struct fatia_control_admission *ad = &res->admitted[i];
        const json_t *wl = fatia_ctlr_informer_get(a->wls, ad->ns, ad->name);
        double wait = wait_seconds(a, ad->ns, ad->name, now);
        bool ready = checks_ready(a, ad->ns, ad->name);
        rec_drop(a, ad->key);
        fatia_ctlr_metric_labels(lab, sizeof(lab), "cluster_queue", ad->cluster_queue, NULL);
        fatia_ctlr_metric_inc(m, "kueue_quota_reserved_workloads_total", lab, 1);
        fatia_ctlr_metric_observe(m, "kueue_quota_reserved_wait_time_seconds", lab, wait);
        if (ready) {
            fatia_ctlr_metric_inc(m, "kueue_admitted_workloads_total", lab, 1);
            fatia_ctlr_metric_observe(m, "kueue_admission_wait_time_seconds", lab, wait);
        }
        if (wl) {
            fatia_ctlr_event(a->ctl, wl, COMPONENT, "Normal", "QuotaReserved",
                             "Quota reserved in ClusterQueue %s, wait time since queued was %.0fs",
                             ad->cluster_queue, wait);
            if (ready)
                fatia_ctlr_event(a->ctl, wl, COMPONENT, "Normal", "Admitted",
                                 "Admitted by ClusterQueue %s, wait time since reservation was 0s",
                                 ad->cluster_queue);
        }
        fatia_info("admission: %s admitted by ClusterQueue %s%s", ad->key, ad->cluster_queue,
                   ad->borrowing ? " (borrowing)" : "");
        wl_enqueue(a, ad->ns, ad->name);
    }
    for (size_t i = 0; i < res->n_evicted; i++) {
        const struct fatia_control_eviction *ev = &res->evicted[i];
        const json_t *wl = fatia_ctlr_informer_get(a->wls, ev->ns, ev->name);
        bool pre = is_preemption(ev->reason);
        const char *evr = pre                                       ? "Preempted"
                          : !strcmp(ev->reason, "InactiveWorkload") ? "Deactivated"
                                                                    : ev->reason;
        rec_set(a, ev->key, evr, pre ? ev->reason : NULL, ev->message);
        fatia_ctlr_metric_labels(lab, sizeof(lab), "cluster_queue", ev->cluster_queue, "reason",
                                 evr, NULL);
        fatia_ctlr_metric_inc(m, "kueue_evicted_workloads_total", lab, 1);
        if (pre) {
            const json_t *pw = NULL;
            const char *pcq = ev->cluster_queue;
            if (ev->preemptor) {
                char nsb[300];
                const char *pn = fatia_ctlr_split_key(ev->preemptor, nsb, sizeof(nsb));
                pw = fatia_ctlr_informer_get(a->wls, nsb, pn);
                if (pw && fatia_json_str(json_object_get(pw, "spec"), "queueName")) {
                    json_t *ps = NULL;
                    if (fatia_control_workload_status(a->eng, nsb, pn, &ps) == 0) {
                        const char *c = fatia_json_str(ps, "clusterQueue");
                        if (!c)
                            c = fatia_json_str(json_object_get(ps, "admission"), "clusterQueue");
                        fatia_ctlr_metric_labels(lab, sizeof(lab), "preempting_cluster_queue",
                                                 c ? c : pcq, "reason", ev->reason, NULL);
                        json_decref(ps);
                    } else {
                        fatia_ctlr_metric_labels(lab, sizeof(lab), "preempting_cluster_queue", pcq,
                                                 "reason", ev->reason, NULL);
                    }
                }
            } else {
                fatia_ctlr_metric_labels(lab, sizeof(lab), "preempting_cluster_queue", pcq,
                                         "reason", ev->reason, NULL);
            }
            fatia_ctlr_metric_inc(m, "kueue_preempted_workloads_total", lab, 1);
        }
        if (wl) {
            /* Kueue's ReportEvictedWorkload names the reason for admission check evictions */
            char evreason[96];
            snprintf(evreason, sizeof(evreason), "%s",
                     pre                                    ? "Preempted"
                     : strstr(ev->reason, "AdmissionCheck") ? ""
                                                            : "Evicted");
            if (!*evreason)
                snprintf(evreason, sizeof(evreason), "EvictedDueTo%s", ev->reason);
            fatia_ctlr_event(a->ctl, wl, COMPONENT, "Normal", evreason, "%s",
                             ev->message ? ev->message : ev->reason);
        }
        fatia_info("admission: %s evicted (%s): %s", ev->key, ev->reason,
                   ev->message ? ev->message : "");
        wl_enqueue(a, ev->ns, ev->name);
    }
    for (size_t i = 0; i < res->n_pending; i++)
        wl_enqueue(a, res->pending[i].ns, res->pending[i].name);
    fatia_ctlr_metric_inc(m, "kueue_admission_attempts_total", "result=\"success\"",
                          (double)res->n_admitted);
    fatia_ctlr_metric_inc(m, "kueue_admission_attempts_total", "result=\"inadmissible\"",
                          (double)res->n_pending);
    fatia_ctlr_metric_observe(m, "kueue_admission_attempt_duration_seconds",
                              res->n_admitted ? "result=\"success\"" : "result=\"inadmissible\"",
                              (double)(fatia_now_mono_usec() - t0) / 1e6);
    fatia_ctlr_metric_inc(m, "fatia_admission_cycles_total", "", 1);
    if (res->n_admitted || res->n_evicted || res->n_pending)
        fatia_ctlr_wq_add(a->queue_status_q, "*");
    if (res->n_admitted || res->n_evicted) {
        schedule_cycle(a, true);
    } else if (fatia_control_has_work(a->eng, now) && !res->quiet) {
        schedule_cycle(a, true);
    } else if (fatia_control_has_work(a->eng, now)) {
        a->backoff = a->backoff ? a->backoff * 2 : FATIA_USEC_PER_MSEC;
        if (a->backoff > FATIA_USEC_PER_SEC)
            a->backoff = FATIA_USEC_PER_SEC;
        schedule_cycle(a, false);
    } else if ((wake = fatia_control_next_wakeup(a->eng)) != INT64_MAX) {
        /* nothing to pop until a requeue backoff expires: wake up for it */
        a->backoff = wake > now ? (fatia_usec_t)(wake - now) : FATIA_USEC_PER_MSEC;
        schedule_cycle(a, false);
    }
}

/* ---- feeding the engine ---- */

static void apply(struct admission_ctl *a, const json_t *obj)
{
    struct fatia_diag diag;
    int r;

    fatia_diag_init(&diag);
    r = fatia_control_apply(a->eng, obj, fatia_ctlr_now(a->ctl), &diag);
    if (r < 0)
        fatia_warn("admission: %s %s: %s", fatia_json_str(obj, "kind"),
                   fatia_ctlr_meta_str(obj, "name"), fatia_strerror(r));
    for (size_t i = 0; i < diag.n; i++)
        fatia_debug("admission: %s", diag.v[i].msg);
    fatia_diag_release(&diag);
}

static void on_object(void *arg, const json_t *old, const json_t *obj)
{
    struct admission_ctl *a = arg;

    if (obj) {
        apply(a, obj);
    } else {
        const char *kind = fatia_json_str(old, "kind");
        if (kind)
            fatia_control_delete(a->eng, kind, fatia_ctlr_meta_str(old, "namespace"),
                                 fatia_ctlr_meta_str(old, "name"), fatia_ctlr_now(a->ctl));
    }
    schedule_cycle(a, true);
    fatia_ctlr_wq_add(a->queue_status_q, "*");
}

static const char *engine_state(struct admission_ctl *a, const char *ns, const char *name)
{
    json_t *st = NULL;
    const char *s;
    static char buf[16];

    if (fatia_control_workload_status(a->eng, ns, name, &st) < 0)
        return NULL;
    s = fatia_json_str(st, "state");
    snprintf(buf, sizeof(buf), "%s", s ? s : "");
    json_decref(st);
    return buf;
}

static void on_workload(void *arg, const json_t *old, const json_t *obj)
{
    struct admission_ctl *a = arg;
    const json_t *o = obj ? obj : old;
    const char *ns = fatia_ctlr_meta_str(o, "namespace"), *name = fatia_ctlr_meta_str(o, "name");
    fatia_usec_t now = fatia_ctlr_now(a->ctl);
    const char *state;
    char key[600];

    fatia_ctlr_make_key(ns, name, key, sizeof(key));
    if (!obj) {
        fatia_control_delete(a->eng, "Workload", ns, name, now);
        rec_drop(a, key);
        schedule_cycle(a, true);
        fatia_ctlr_wq_add(a->queue_status_q, "*");
        return;
    }
    if (fatia_ctlr_cond_true(obj, "Finished")) {
        if (fatia_control_workload_finished(a->eng, ns, name, now) == 0) {
            char lab[300];
            fatia_ctlr_metric_labels(
                lab, sizeof(lab), "cluster_queue",
                fatia_json_str(json_object_get(json_object_get(obj, "status"), "admission"),
                               "clusterQueue"),
                NULL);
            fatia_ctlr_metric_inc(fatia_ctlr_metrics(a->ctl), "kueue_finished_workloads_total", lab,
                                  1);
        }
        rec_drop(a, key);
        schedule_cycle(a, true);
        fatia_ctlr_wq_add(a->queue_status_q, "*");
        return;
    }
    state = engine_state(a, ns, name);
    if (!state) {
        apply(a, obj);
        /* a restart in the middle of an eviction: keep evicting */
        if (json_object_get(json_object_get(obj, "status"), "admission") &&
            fatia_ctlr_cond_true(obj, "Evicted")) {
            const json_t *e = fatia_ctlr_cond_get(obj, "Evicted"),
                         *p = fatia_ctlr_cond_get(obj, "Preempted");
            rec_set(a, key, fatia_json_str(e, "reason") ? fatia_json_str(e, "reason") : "Preempted",
                    p && fatia_ctlr_cond_true(obj, "Preempted") ? fatia_json_str(p, "reason")
                                                                : NULL,
                    fatia_json_str(e, "message"));
        }
    } else {
        bool has_adm = json_object_get(json_object_get(obj, "status"), "admission") != NULL;
        bool evicting = !strcmp(state, "Evicting");
        bool rec = fatia_strmap_get(&a->evictions, key) != NULL;
        if (!has_adm && fatia_ctlr_cond_true(obj, "Evicted") &&
            (evicting || (!strcmp(state, "Admitted") && rec))) {
            /* the workload controller stopped it and cleared the reservation */
            if (evicting) {
                fatia_control_workload_released(a->eng, ns, name, now);
            } else {
                fatia_control_delete(a->eng, "Workload", ns, name, now);
                apply(a, obj);
            }
            rec_drop(a, key);
            fatia_info("admission: %s released its quota after eviction", key);
        } else {
            apply(a, obj);
        }
    }
    fatia_ctlr_wq_add(a->status_q, key);
    schedule_cycle(a, true);
}

/* ---- workload status ---- */

/* Kueue's syncAdmissionCheckConditions: status.admissionChecks holds exactly the checks the
 * engine says are needed; a new one starts Pending, the states written by the checks'
 * controllers are kept. 0 or -ENOMEM. */
static int sync_checks(json_t *st, const json_t *needed, fatia_usec_t now)
{
    const json_t *have = json_object_get(st, "admissionChecks");
    json_t *out, *e;
    size_t i, j;
    char t[64];

    if (!json_array_size(needed) && !have)
        return 0;
    out = json_array();
    if (!out)
        return -ENOMEM;
    fatia_time_format_rfc3339(now, false, t, sizeof(t));
    json_array_foreach(needed, i, e)
    {
        const char *name = fatia_json_str(e, "name");
        json_t *found = NULL, *h;
        json_array_foreach(have, j, h)
        {
            const char *hn = fatia_json_str(h, "name");
            if (hn && name && !strcmp(hn, name)) {
                found = h;
                break;
            }
        }
        if (json_array_append_new(out, found ? json_incref(found)
                                             : json_pack("{s:s,s:s,s:s,s:s}", "name", name, "state",
                                                         "Pending", "message", "",
                                                         "lastTransitionTime", t)) < 0) {
            json_decref(out);
            return -ENOMEM;
        }
    }
    if (!json_array_size(out)) {
        json_decref(out);
        json_object_del(st, "admissionChecks");
        return 0;
    }
    return json_object_set_new(st, "admissionChecks", out) < 0 ? -ENOMEM : 0;
}

/* Kueue's resetChecksOnEviction: every state not Pending goes back to Pending, saying what it
 * was; a Retry counts in retryCount. */
static void reset_checks(json_t *st, fatia_usec_t now)
{
    json_t *list = json_object_get(st, "admissionChecks"), *e;
    size_t i;
    char t[64], m[300];

    fatia_time_format_rfc3339(now, false, t, sizeof(t));
    json_array_foreach(list, i, e)
    {
        const char *s = fatia_json_str(e, "state");
        int64_t n = 0;
        if (!s || !strcmp(s, "Pending"))
            continue;
        if (!strcmp(s, "Retry")) {
            fatia_json_int(e, "retryCount", &n);
            json_object_set_new(e, "retryCount", json_integer(n + 1));
        }
        snprintf(m, sizeof(m), "Reset to Pending after eviction. Previously: %s", s);
        json_object_set_new(e, "message", json_string(m));
        json_object_set_new(e, "state", json_string("Pending"));
        json_object_set_new(e, "lastTransitionTime", json_string(t));
        json_object_del(e, "requeueAfterSeconds");
    }
}

static void reconcile_status(void *arg, const char *key)
{
    struct admission_ctl *a = arg;
    const json_t *wl = fatia_ctlr_informer_get_key(a->wls, key);
    char nsbuf[300], msg[1200];
    const char *name = fatia_ctlr_split_key(key, nsbuf, sizeof(nsbuf)), *state;
    struct evict_rec *rec = fatia_strmap_get(&a->evictions, key);
    json_t *es = NULL, *nw = NULL, *st, *conds;
    fatia_usec_t now = fatia_ctlr_now(a->ctl);
    bool stored_adm;

    if (!wl || fatia_ctlr_cond_true(wl, "Finished") || fatia_ctlr_obj_deleting(wl))
        return;
    if (fatia_control_workload_status(a->eng, nsbuf, name, &es) < 0)
        return;
    state = fatia_json_str(es, "state");
    nw = json_deep_copy(wl);
    st = nw ? fatia_json_object_ensure(nw, "status") : NULL;
    conds = st ? fatia_json_array_ensure(st, "conditions") : NULL;
    if (!conds || !state)
        goto out;
    stored_adm = json_object_get(st, "admission") != NULL;
    if (rec && !strcmp(rec->evicted_reason, "DeactivatedDueToAdmissionCheck") &&
        fatia_json_bool(json_object_get(wl, "spec"), "active", true)) {
        /* a Rejected check: Kueue deactivates the workload (spec.active=false) */
        json_t *spec = fatia_json_object_ensure(nw, "spec");
        if (spec && json_object_set_new(spec, "active", json_false()) == 0 &&
            fatia_ctlr_update(a->ctl, nw, &(struct op_opts){.wq = a->status_q, .key = key}) == 0)
            fatia_ctlr_event(a->ctl, wl, COMPONENT, "Warning", "AdmissionCheckRejected",
                             "Deactivating workload because an AdmissionCheck was Rejected: %s",
                             rec->message);
        goto out;
    }
    if (!strcmp(state, "Admitted") && !rec) {
        const char *cq = fatia_json_str(json_object_get(es, "admission"), "clusterQueue");
        bool ready = json_is_true(json_object_get(es, "checksReady"));
        const json_t *c;
        json_object_set(st, "admission", json_object_get(es, "admission"));
        snprintf(msg, sizeof(msg), "Quota reserved in ClusterQueue %s", cq ? cq : "");
        fatia_ctlr_cond_set(conds, "QuotaReserved", "True", "QuotaReserved", msg, now);
        if (sync_checks(st, json_object_get(es, "admissionChecks"), now) < 0)
            goto out;
        for (int i = 0; i < 2; i++) {
            const char *t = i ? "Preempted" : "Evicted";
            if ((c = fatia_ctlr_cond_get(nw, t)) && !strcmp(fatia_json_str(c, "status"), "True")) {
                snprintf(msg, sizeof(msg), "Previously: %s",
                         fatia_json_str(c, "message") ? fatia_json_str(c, "message") : "");
                fatia_ctlr_cond_set(conds, t, "False", "QuotaReserved", msg, now);
            }
        }
        json_object_del(st, "requeueState");
        if (!ready) {
            /* quota reserved, checks not all Ready: no Admitted condition yet (Kueue's
             * SyncAdmittedCondition leaves it unset until it turns True) */
            if (!fatia_json_equal(st, json_object_get(wl, "status")))
                fatia_ctlr_update_status(a->ctl, nw,
                                         &(struct op_opts){.wq = a->status_q, .key = key});
            goto out;
        }
        if (!fatia_ctlr_cond_true(wl, "Admitted") &&
            json_array_size(json_object_get(es, "admissionChecks")))
            fatia_ctlr_event(a->ctl, wl, COMPONENT, "Normal", "Admitted",
                             "Admitted by ClusterQueue %s, all admission checks are Ready",
                             cq ? cq : "");
        fatia_ctlr_cond_set(conds, "Admitted", "True", "Admitted", "The workload is admitted", now);
    } else if (!strcmp(state, "Evicting") || !strcmp(state, "Admitted")) {
        if (!stored_adm) {
            const char *cq = fatia_json_str(json_object_get(es, "admission"), "clusterQueue");
            /* evicted before its admission was ever written: write both, so the hand-off runs */
            json_object_set(st, "admission", json_object_get(es, "admission"));
            snprintf(msg, sizeof(msg), "Quota reserved in ClusterQueue %s", cq ? cq : "");
            fatia_ctlr_cond_set(conds, "QuotaReserved", "True", "QuotaReserved", msg, now);
            if (json_is_true(json_object_get(es, "checksReady")))
                fatia_ctlr_cond_set(conds, "Admitted", "True", "Admitted",
                                    "The workload is admitted", now);
        }
        if (rec) {
            const char *rq = fatia_json_str(es, "requeueAt");
            if (!fatia_ctlr_cond_true(wl, "Evicted"))
                reset_checks(st, now);
            if (rq && !json_object_get(st, "requeueState"))
                json_object_set_new(st, "requeueState", json_pack("{s:s}", "requeueAt", rq));
            fatia_ctlr_cond_set(conds, "Evicted", "True", rec->evicted_reason, rec->message, now);
            if (rec->preempted_reason)
                fatia_ctlr_cond_set(conds, "Preempted", "True", rec->preempted_reason, rec->message,
                                    now);
        }
    } else {
        if (!stored_adm) {
            const char *reason = fatia_json_str(es, "reason");
            const char *m = fatia_json_str(es, "message");
            fatia_ctlr_cond_set(conds, "QuotaReserved", "False", reason ? reason : "Pending",
                                m ? m : "", now);
        }
    }
    if (!fatia_json_equal(st, json_object_get(wl, "status")))
        fatia_ctlr_update_status(a->ctl, nw, &(struct op_opts){.wq = a->status_q, .key = key});
out:
    json_decref(es);
    json_decref(nw);
}

/* ---- ClusterQueue and LocalQueue status ---- */

/* Copies lastTransitionTime from the stored conditions when a condition did not change, sets it
 * to now otherwise. */
static void stamp_conditions(json_t *st, const json_t *stored_st, fatia_usec_t now)
{
    json_t *conds = json_object_get(st, "conditions");
    json_t *out = json_deep_copy(json_object_get(stored_st, "conditions"));
    size_t i;
    json_t *c;

    if (!json_is_array(out)) {
        json_decref(out);
        out = json_array();
    }
    if (!out)
        return;
    json_array_foreach(conds, i, c)
    {
        const char *t = fatia_json_str(c, "type"), *s = fatia_json_str(c, "status");
        const char *r = fatia_json_str(c, "reason"), *m = fatia_json_str(c, "message");
        if (t && s)
            fatia_ctlr_cond_set(out, t, s, r ? r : "", m ? m : "", now);
    }
    json_object_set_new(st, "conditions", out);
}

static void write_queue_status(struct admission_ctl *a, const json_t *obj, json_t *st)
{
    json_t *nq;

    stamp_conditions(st, json_object_get(obj, "status"), fatia_ctlr_now(a->ctl));
    if (fatia_json_equal(st, json_object_get(obj, "status")))
        return;
    nq = json_deep_copy(obj);
    if (!nq)
        return;
    json_object_set(nq, "status", st);
    fatia_ctlr_update_status(
        a->ctl, nq, &(struct op_opts){.wq = a->queue_status_q, .key = "*", .quiet_conflict = true});
    json_decref(nq);
}

static void reconcile_queues(void *arg, const char *key)
{
    struct admission_ctl *a = arg;
    fatia_usec_t now = fatia_ctlr_now(a->ctl);

    (void)key;
    INFORMER_FOREACH(a->cqs, it)
    {
        json_t *st = NULL;
        if (fatia_control_cq_status(a->eng, fatia_ctlr_meta_str(it->obj, "name"), now, &st) == 0) {
            write_queue_status(a, it->obj, st);
            json_decref(st);
        }
    }
    INFORMER_FOREACH(a->lqs, it)
    {
        json_t *st = NULL;
        if (fatia_control_lq_status(a->eng, fatia_ctlr_meta_str(it->obj, "namespace"),
                                    fatia_ctlr_meta_str(it->obj, "name"), now, &st) == 0) {
            write_queue_status(a, it->obj, st);
            json_decref(st);
        }
    }
}

static void status_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct admission_ctl *a = arg;

    (void)fd;
    (void)what;
    fatia_ctlr_wq_add(a->queue_status_q, "*");
}

static void on_synced(void *arg)
{
    struct admission_ctl *a = arg;
    struct timeval tv = {0, 0};

    a->cycle_pending = true;
    evtimer_add(a->cycle_ev, &tv);
    INFORMER_FOREACH(a->wls, it)
    fatia_ctlr_wq_add(a->status_q, it->key);
    fatia_ctlr_wq_add(a->queue_status_q, "*");
}

/* ---- metrics ---- */

static double to_units(int64_t milli)
{
    return (double)milli / 1000.0;
}

void fatia_ctlr_admission_ctl_metrics(struct admission_ctl *a, struct fatia_buf *out)
{
    json_t *table = NULL;
    fatia_usec_t now = fatia_ctlr_now(a->ctl);
    char lab[600];
    size_t i;
    json_t *row;

    static const struct {
        const char *name, *field, *help;
        bool status_label; /* Kueue labels pending_workloads with status="active" */
    } counts[] = {
        {"kueue_pending_workloads", "pendingWorkloads",
         "The number of pending workloads, per 'cluster_queue' and 'status'", true},
        {"kueue_reserving_active_workloads", "reservingWorkloads",
         "The number of Workloads that are reserving quota, per 'cluster_queue'", false},
        {"kueue_admitted_active_workloads", "admittedWorkloads",
         "The number of admitted Workloads that are active (unsuspended and not finished), per "
         "'cluster_queue'",
         false},
    };

    /* each ClusterQueue's status once: [{name, status}] for the gauges below */
    json_t *cqs = json_array();

    INFORMER_FOREACH(a->cqs, it)
    {
        json_t *st = NULL;
        if (cqs &&
            fatia_control_cq_status(a->eng, fatia_ctlr_meta_str(it->obj, "name"), now, &st) == 0)
            json_array_append_new(
                cqs,
                json_pack("{s:s,s:o}", "name", fatia_ctlr_meta_str(it->obj, "name"), "status", st));
    }
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        fatia_ctlr_metric_header(out, counts[k].name, "gauge", counts[k].help);
        json_array_foreach(cqs, i, row)
        {
            const json_t *st = json_object_get(row, "status");
            fatia_ctlr_metric_labels(lab, sizeof(lab), "cluster_queue", fatia_json_str(row, "name"),
                                     counts[k].status_label ? "status" : NULL, "active", NULL);
            fatia_ctlr_metric_sample(
                out, counts[k].name, lab,
                (double)json_integer_value(json_object_get(st, counts[k].field)));
        }
    }
    fatia_ctlr_metric_header(
        out, "kueue_cluster_queue_status", "gauge",
        "Reports 'cluster_queue' with its 'status' (pending, active or terminated)");
    json_array_foreach(cqs, i, row)
    {
        const json_t *cond = json_array_get(fatia_json_path(row, "status.conditions"), 0);
        const char *cs = fatia_json_str(cond, "status");
        bool active = cs && !strcmp(cs, "True");
        for (int k = 0; k < 3; k++) {
            const char *state = k == 0 ? "pending" : k == 1 ? "active" : "terminating";
            fatia_ctlr_metric_labels(lab, sizeof(lab), "cluster_queue", fatia_json_str(row, "name"),
                                     "status", state, NULL);
            fatia_ctlr_metric_sample(out, "kueue_cluster_queue_status", lab,
                                     (k == 1 && active) || (k == 0 && !active) ? 1 : 0);
        }
    }
    json_decref(cqs);
    if (fatia_control_usage_table(a->eng, &table) == 0) {
        static const struct {
            const char *name, *field, *help;
        } g[] = {
            {"kueue_cluster_queue_resource_usage", "usage",
             "Reports the 'cluster_queue' total resource usage in the given 'flavor'"},
            {"kueue_cluster_queue_resource_reservation", "usage",
             "Reports the 'cluster_queue' total resource reservation in the given 'flavor'"},
            {"kueue_cluster_queue_nominal_quota", "nominal",
             "Reports the 'cluster_queue' resource nominal quota in the given 'flavor'"},
            {"kueue_cluster_queue_borrowing_limit", "borrowingLimit",
             "Reports the 'cluster_queue' resource borrowing limit in the given 'flavor'"},
            {"kueue_cluster_queue_lending_limit", "lendingLimit",
             "Reports the 'cluster_queue' resource lending limit in the given 'flavor'"},
        };

        for (size_t k = 0; k < sizeof(g) / sizeof(g[0]); k++) {
            fatia_ctlr_metric_header(out, g[k].name, "gauge", g[k].help);
            json_array_foreach(table, i, row)
            {
                json_int_t v;
                if (!json_is_integer(json_object_get(row, g[k].field)))
                    continue;
                v = json_integer_value(json_object_get(row, g[k].field));
                fatia_ctlr_metric_labels(lab, sizeof(lab), "cohort", fatia_json_str(row, "cohort"),
                                         "cluster_queue", fatia_json_str(row, "clusterQueue"),
                                         "flavor", fatia_json_str(row, "flavor"), "resource",
                                         fatia_json_str(row, "resource"), NULL);
                fatia_ctlr_metric_sample(out, g[k].name, lab, to_units(v));
            }
        }
        json_decref(table);
    }
    {
        struct fatia_control_stats s;
        fatia_control_stats(a->eng, &s);
        fatia_ctlr_metric_header(out, "fatia_admission_workloads", "gauge",
                                 "Workloads the admission engine knows, per 'state'");
        fatia_ctlr_metric_sample(out, "fatia_admission_workloads", "state=\"pending\"",
                                 (double)s.pending);
        fatia_ctlr_metric_sample(out, "fatia_admission_workloads", "state=\"admitted\"",
                                 (double)s.admitted);
        fatia_ctlr_metric_sample(out, "fatia_admission_workloads", "state=\"evicting\"",
                                 (double)s.evicting);
    }
}

/* ---- life cycle ---- */

static const double wait_buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,    2.5,
                                      5,     10,   30,    60,   120, 300,  600, 1800, 3600};
static const double attempt_buckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                         0.01,   0.025,   0.05,   0.1,   0.25,   0.5};

int fatia_ctlr_admission_ctl_new(struct ctl *c, struct admission_ctl **ret)
{
    struct admission_ctl *a = fatia_calloc(1, sizeof(*a));
    struct fatia_ctlr_metrics *m = fatia_ctlr_metrics(c);
    int r;

    if (!a)
        return -ENOMEM;
    a->ctl = c;
    r = fatia_control_new(&a->eng);
    if (r < 0)
        goto fail;
    r = -ENOMEM;
    a->status_q = fatia_ctlr_wq_new(c, "workload-status", reconcile_status, a);
    a->queue_status_q = fatia_ctlr_wq_new(c, "queue-status", reconcile_queues, a);
    a->cycle_ev = evtimer_new(fatia_ctlr_base(c), cycle_cb, a);
    a->status_timer = event_new(fatia_ctlr_base(c), -1, EV_PERSIST, status_timer_cb, a);
    if (!a->status_q || !a->queue_status_q || !a->cycle_ev || !a->status_timer)
        goto fail;
    for (size_t i = 0; i < sizeof(kind_names) / sizeof(kind_names[0]); i++) {
        const struct fatia_kind *k = fatia_kind_by_name(kind_names[i]);
        struct informer *inf = k ? fatia_ctlr_informer(c, k) : NULL;
        if (!inf)
            goto fail;
        if (!strcmp(kind_names[i], "Workload")) {
            a->wls = inf;
            if (fatia_ctlr_informer_on(inf, on_workload, a) < 0)
                goto fail;
            continue;
        }
        if (!strcmp(kind_names[i], "ClusterQueue"))
            a->cqs = inf;
        if (!strcmp(kind_names[i], "LocalQueue"))
            a->lqs = inf;
        if (fatia_ctlr_informer_on(inf, on_object, a) < 0)
            goto fail;
    }
    if (fatia_ctlr_on_synced(c, on_synced, a) < 0 ||
        fatia_ctlr_metric_define(m, "kueue_quota_reserved_workloads_total", "counter",
                                 "The total number of quota reserved workloads per 'cluster_queue'",
                                 NULL, 0) < 0 ||
        fatia_ctlr_metric_define(m, "kueue_admitted_workloads_total", "counter",
                                 "The total number of admitted workloads per 'cluster_queue'", NULL,
                                 0) < 0 ||
        fatia_ctlr_metric_define(m, "kueue_evicted_workloads_total", "counter",
                                 "The number of evicted workloads per 'cluster_queue' and 'reason'",
                                 NULL, 0) < 0 ||
        fatia_ctlr_metric_define(
            m, "kueue_preempted_workloads_total", "counter",
            "The number of preempted workloads per 'preempting_cluster_queue' and "
            "'reason'",
            NULL, 0) < 0 ||
        fatia_ctlr_metric_define(m, "kueue_finished_workloads_total", "counter",
                                 "The number of finished workloads per 'cluster_queue'", NULL,
                                 0) < 0 ||
        fatia_ctlr_metric_define(m, "kueue_admission_attempts_total", "counter",
                                 "The total number of attempts to admit workloads, per 'result'",
                                 NULL, 0) < 0 ||
        fatia_ctlr_metric_define(
            m, "kueue_quota_reserved_wait_time_seconds", "histogram",
            "The time between a workload was created or requeued until it got quota "
            "reservation, per 'cluster_queue'",
            wait_buckets, sizeof(wait_buckets) / sizeof(wait_buckets[0])) < 0 ||
        fatia_ctlr_metric_define(
            m, "kueue_admission_wait_time_seconds", "histogram",
            "The time between a workload was created or requeued until admission, per "
            "'cluster_queue'",
            wait_buckets, sizeof(wait_buckets) / sizeof(wait_buckets[0])) < 0 ||
        fatia_ctlr_metric_define(m, "kueue_admission_attempt_duration_seconds", "histogram",
                                 "The latency of an admission attempt, per 'result'",
                                 attempt_buckets,
                                 sizeof(attempt_buckets) / sizeof(attempt_buckets[0])) < 0 ||
        fatia_ctlr_metric_define(m, "fatia_admission_cycles_total", "counter",
                                 "Kueue scheduling cycles the admission controller ran", NULL,
                                 0) < 0)
        goto fail;
    {
        fatia_usec_t iv = fatia_ctlr_opts(c)->status_interval;
        struct timeval tv = {(time_t)(iv / FATIA_USEC_PER_SEC),
                             (suseconds_t)(iv % FATIA_USEC_PER_SEC)};
        event_add(a->status_timer, &tv);
    }
    *ret = a;
    return 0;
fail:
    fatia_ctlr_admission_ctl_free(a);
    return r;
}

void fatia_ctlr_admission_ctl_free(struct admission_ctl *a)
{
    if (!a)
        return;
    if (a->cycle_ev)
        event_free(a->cycle_ev);
    if (a->status_timer)
        event_free(a->status_timer);
    fatia_ctlr_wq_free(a->status_q);
    fatia_ctlr_wq_free(a->queue_status_q);
    for (size_t i = 0; i < a->evictions.cap; i++)
        if (a->evictions.slots[i].key)
            rec_free(a->evictions.slots[i].val);
    fatia_strmap_release(&a->evictions);
    fatia_control_free(a->eng);
    fatia_free(a);
}
