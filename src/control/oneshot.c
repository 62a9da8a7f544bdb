/*
 * control/oneshot.c: the driver of `fatia schedule`: objects in, cycles at a fixed clock, the
 * decisions out (docs/control.md "fatia schedule").
 *
 * Model: the clock is `--now` (default: the latest creationTimestamp or condition
 * lastTransitionTime in the input) and does not move between cycles. After each cycle the
 * workloads it evicted are released at once: their quota is freed and they requeue, which is
 * what happens in a cluster once their pods stop. With a cycle count the run does exactly that
 * many cycles; without, it runs until a cycle changes nothing (no admission, no eviction, no
 * workload parked) or no queue has a workload left to pop, and at most 1,000 cycles, which the
 * report says (capped).
 *
 * Output (`-o json`, sorted by workload key):
 *   admitted:  workloads this run admitted that are still admitted at the end; in a ClusterQueue
 *              with admission checks, those it reserved quota for, with the states of the
 *              checks they need ("admissionChecks") and "admitted": whether all are Ready;
 *   preempted: every eviction the run decided, with its reason;
 *   pending:   every workload not holding quota at the end, with Kueue's message.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "base/map.h"
#include "control/internal.h"
#include "model/objset.h"

static void scan_time(const char *s, int64_t *latest, bool *found)
{
    fatia_usec_t t;

    if (s && fatia_time_parse_rfc3339(s, &t) == 0 && (!*found || t > *latest)) {
        *latest = t;
        *found = true;
    }
}

static int64_t latest_timestamp(const struct fatia_objset *set)
{
    int64_t latest = 0;
    bool found = false;

    for (size_t i = 0; i < set->n; i++) {
        const json_t *o = set->v[i]->obj;
        size_t k;
        json_t *cnd;
        scan_time(json_string_value(fatia_json_path(o, "metadata.creationTimestamp")), &latest,
                  &found);
        json_array_foreach(fatia_json_path(o, "status.conditions"), k, cnd)
            scan_time(fatia_json_str(cnd, "lastTransitionTime"), &latest, &found);
    }
    return latest;
}

static const char *const load_order[] = {
    "SchedulerConfig", "Namespace", "WorkloadPriorityClass", "AdmissionCheck",
    "ResourceFlavor",  "Cohort",    "ClusterQueue",          "LocalQueue",
    "Workload",        NULL,
};

static int cmp_workload_key(const void *a, const void *b)
{
    const char *x = fatia_json_str(*(json_t *const *)a, "workload");
    const char *y = fatia_json_str(*(json_t *const *)b, "workload");
    return strcmp(x ? x : "", y ? y : "");
}

static int sort_by_workload(json_t *arr)
{
    size_t n = json_array_size(arr);
    json_t **v;

    if (n < 2)
        return 0;
    v = fatia_calloc(n, sizeof(*v));
    if (!v)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(arr, i));
    /* stable: insertion order breaks ties (a workload preempted twice) */
    for (size_t i = 1; i < n; i++) {
        json_t *x = v[i];
        size_t j = i;
        while (j > 0 && cmp_workload_key(&v[j - 1], &x) > 0) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
    json_array_clear(arr);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, v[i]);
    fatia_free(v);
    return 0;
}

static json_t *admitted_json(const struct fatia_control *c, const struct ctl_wl *w)
{
    json_t *ps = json_array();

    for (size_t i = 0; ps && i < w->n_ps; i++) {
        json_t *flv = json_object();
        for (size_t k = 0; flv && k < w->asg[i].n; k++)
            json_object_set_new(flv, fatia_control_res_name(c, w->asg[i].v[k].res),
                                json_string(fatia_control_flavor_name(c, w->asg[i].v[k].flavor)));
        json_array_append_new(ps, json_pack("{s:s,s:i,s:o}", "name", w->ps[i].name, "count",
                                            (int)w->asg[i].count, "flavors", flv));
    }
    json_t *out =
        json_pack("{s:s,s:s,s:o}", "workload", w->key, "clusterQueue", w->cq->name, "podSets", ps);
    json_t *checks = NULL;

    /* quota reserved in a queue with admission checks: their states, and whether it is admitted */
    if (out && w->cq->n_checks && fatia_control_wl_checks_json(c, w, &checks) == 0 &&
        json_array_size(checks)) {
        json_object_set_new(out, "admissionChecks", checks);
        json_object_set_new(out, "admitted", json_boolean(fatia_control_wl_checks_ready(c, w)));
    } else {
        json_decref(checks);
    }
    return out;
}

int fatia_control_schedule(const struct fatia_objset *set, const struct fatia_schedule_opts *opts,
                           struct fatia_schedule_report *ret, struct fatia_diag *diag)
{
    struct fatia_control *c = NULL;
    struct fatia_strmap admitted_here;
    json_t *preempted = NULL, *admitted = NULL, *pending = NULL;
    int64_t now = opts->have_now ? opts->now : latest_timestamp(set);
    size_t n_configs = 0;
    int limit = opts->cycles > 0 ? opts->cycles : FATIA_SCHEDULE_MAX_CYCLES;
    int r, cycles = 0;
    bool capped = false;

    memset(ret, 0, sizeof(*ret));
    fatia_strmap_init(&admitted_here);
    r = fatia_control_new(&c);
    if (r < 0)
        return r;
    fatia_control_set_requeue_batch(c, opts->requeue_batch);
    for (size_t k = 0; load_order[k]; k++) {
        size_t it = 0;
        struct fatia_object *o;
        while ((o = fatia_objset_next(set, load_order[k], &it))) {
            if (!strcmp(load_order[k], "SchedulerConfig") && ++n_configs > 1) {
                fatia_diag_add(diag, FATIA_DIAG_ERROR, o->file, o->pos.line, o->pos.col, o->id,
                               NULL,
                               "only one SchedulerConfig may be given (found another "
                               "before)");
                r = -EINVAL;
                goto out;
            }
            r = fatia_control_apply(c, o->obj, now, diag);
            if (r < 0)
                goto out;
        }
    }
    preempted = json_array();
    admitted = json_array();
    pending = json_array();
    if (!preempted || !admitted || !pending) {
        r = -ENOMEM;
        goto out;
    }
    while (cycles < limit) {
        const struct fatia_control_result *res;
        if (!fatia_control_has_work(c, now) && !c->pending_ev.n && !c->tree_dirty)
            break;
        r = fatia_control_cycle(c, now, &res);
        if (r < 0)
            goto out;
        cycles++;
        /* keys of the engine's workloads stay valid: a one-shot run deletes none */
        for (size_t i = 0; i < res->n_admitted; i++) {
            struct ctl_wl *w = fatia_strmap_get(&c->wl_index, res->admitted[i].key);
            if (w && fatia_strmap_put(&admitted_here, w->key, w) < 0) {
                r = -ENOMEM;
                goto out;
            }
        }
        for (size_t i = 0; i < res->n_evicted; i++)
            if (json_array_append_new(preempted,
                                      json_pack("{s:s,s:s}", "workload", res->evicted[i].key,
                                                "reason", res->evicted[i].reason)) < 0) {
                r = -ENOMEM;
                goto out;
            }
        r = fatia_control_release_all(c, now);
        if (r < 0)
            goto out;
        if (opts->cycles <= 0 && res->quiet)
            break;
    }
    if (opts->cycles <= 0 && cycles >= limit && fatia_control_has_work(c, now))
        capped = true;
    for (size_t i = 0; i < admitted_here.cap; i++) {
        struct ctl_wl *w = admitted_here.slots[i].val;
        if (admitted_here.slots[i].key && w && w->state == CTL_WL_ADMITTED &&
            json_array_append_new(admitted, admitted_json(c, w)) < 0) {
            r = -ENOMEM;
            goto out;
        }
    }
    r = fatia_control_pending_list(c, pending);
    if (r < 0)
        goto out;
    if (sort_by_workload(admitted) < 0 || sort_by_workload(preempted) < 0 ||
        sort_by_workload(pending) < 0) {
        r = -ENOMEM;
        goto out;
    }
    ret->result = json_pack("{s:O,s:O,s:O}", "admitted", admitted, "preempted", preempted,
                            "pending", pending);
    r = fatia_control_usage_table(c, &ret->usage);
    if (r < 0 || !ret->result) {
        json_decref(ret->result);
        ret->result = NULL;
        r = r < 0 ? r : -ENOMEM;
        goto out;
    }
    ret->cycles_run = cycles;
    ret->capped = capped;
    ret->now = now;
    fatia_control_stats(c, &ret->stats);
out:
    json_decref(admitted);
    json_decref(preempted);
    json_decref(pending);
    fatia_strmap_release(&admitted_here);
    fatia_control_free(c);
    return r;
}
