/*
 * control/status.c: what the engine tells its drivers about queues and workloads: Kueue's
 * ClusterQueue and LocalQueue status blocks, a workload's admission or pending state, the usage
 * table of `fatia schedule`, engine counters, and the invariant check the tests run after every
 * operation.
 *
 * Quantities come out as Kubernetes quantities in the unit family Kueue uses for each resource
 * (its ResourceFormatter): cpu in DecimalSI with milli-units, memory-like resources (memory,
 * ephemeral-storage, hugepages-*) in BinarySI, everything else in DecimalSI: "500m", "5Mi", "2".
 *
 * fairSharing.weightedShare is computed from a clean quota tree only: while the tree is dirty (an
 * object changed its structure and the next cycle rebuilds it) the usages in it are not summed,
 * so the share of the last clean computation is reported, never a 0 that the next call would
 * contradict. A status reported twice with nothing changed in between is the same status: the
 * admission controller writes it only when it differs from the stored one.
 *
 * Pending messages: a workload the scheduler looked at carries the message of its last attempt
 * (Kueue's QuotaReserved=False message), put into words here when its attempt left reasons
 * (objects.c fatia_control_wl_msg: the cycle formats none); a blocked one gets the workload controller's message
 * ("LocalQueue x doesn't exist", "ClusterQueue x is inactive"); one never evaluated (behind a
 * StrictFIFO head, or when a run stopped early) gets a fatia message that names what it waits for.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/str.h"
#include "control/internal.h"
#include "model/quantity.h"

void fatia_control_format_amount(const char *resource, int64_t milli, char *buf, size_t n)
{
    enum fatia_qformat f = FATIA_Q_DECIMAL_SI;
    struct fatia_quantity q;

    if (!strcmp(resource, "memory") || !strcmp(resource, "ephemeral-storage") ||
        fatia_str_has_prefix(resource, "hugepages-"))
        f = FATIA_Q_BINARY_SI;
    q = fatia_quantity_from_milli(milli, f);
    fatia_quantity_format(&q, buf, n);
}

static json_t *qty(const struct fatia_control *c, uint32_t res, amt_t milli)
{
    char buf[80];

    fatia_control_format_amount(fatia_control_res_name(c, res), milli, buf, sizeof(buf));
    return json_string(buf);
}

/* ---- pending messages ---- */

/* NULL only on -ENOMEM; lazy holds the last attempt's message when it is put into words here */
static const char *pending_message(const struct fatia_control *c, const struct ctl_wl *w,
                                   const char **reason, const struct ctl_cq **cq, char *buf,
                                   size_t n, struct fatia_buf *lazy)
{
    const struct ctl_lq *lq = w->lq;

    *cq = lq && lq->defined ? lq->cq : NULL;
    *reason = "Inadmissible";
    if (!w->active)
        return "The workload is deactivated";
    if (!lq || !lq->defined) {
        snprintf(buf, n, "LocalQueue %s doesn't exist", w->queue_name);
        return buf;
    }
    *cq = lq->cq;
    if (lq->stopped) {
        snprintf(buf, n, "LocalQueue %s is inactive", lq->name);
        return buf;
    }
    if (!lq->cq || !lq->cq->defined) {
        snprintf(buf, n, "ClusterQueue %s doesn't exist", lq->cq_name ? lq->cq_name : "");
        return buf;
    }
    if (!lq->cq->active && !c->tree_dirty) {
        snprintf(buf, n, "ClusterQueue %s is inactive", lq->cq->name);
        return buf;
    }
    *reason = "Pending";
    if (w->bad)
        return w->bad_msg ? w->bad_msg : "invalid workload";
    if (fatia_control_queue_bypassed(w))
        return "Bypassed scheduling evaluation because an equivalent workload recently failed";
    if (fatia_control_wl_has_msg(w)) {
        int err;
        *reason = w->reason ? w->reason : "Pending";
        return fatia_control_wl_msg(c, w, lazy, &err);
    }
    if (w->q == CTL_Q_BACKOFF) {
        char t[64];
        fatia_time_format_rfc3339(w->requeue_at, false, t, sizeof(t));
        snprintf(buf, n, "Workload is backing off until %s (status.requeueState.requeueAt)", t);
        return buf;
    }
    if (lq->cq->strategy == CTL_STRICT && fatia_control_queue_peek(lq->cq) &&
        fatia_control_queue_peek(lq->cq) != w) {
        snprintf(buf, n, "Workload is queued behind %s in StrictFIFO ClusterQueue %s",
                 fatia_control_queue_peek(lq->cq)->key, lq->cq->name);
        return buf;
    }
    snprintf(buf, n, "Workload is waiting to be evaluated by the scheduler in ClusterQueue %s",
             lq->cq->name);
    return buf;
}

/* ---- status blocks ---- */

static json_t *active_condition(bool active, const char *reason, const char *msg)
{
    return json_pack("[{s:s,s:s,s:s,s:s}]", "type", "Active", "status", active ? "True" : "False",
                     "reason", reason, "message", msg);
}

/* flavorsReservation / flavorsUsage over the flavors of a quota spec, in spec order. */
static json_t *flavors_block(const struct fatia_control *c, const struct ctl_quota_spec *qs,
                             const amt_t *usage, const struct ctl_node *node)
{
    json_t *out = json_array();

    if (!out)
        return NULL;
    for (size_t g = 0; g < qs->n_rgs; g++) {
        const struct ctl_rg *rg = &qs->rgs[g];
        for (size_t f = 0; f < rg->n_flavors; f++) {
            json_t *res = json_array();
            for (size_t k = 0; res && k < rg->n_res; k++) {
                int fr = fatia_control_fr_find(c, rg->flavors[f], rg->res[k]);
                amt_t u = fr >= 0 && usage ? usage[fr] : 0;
                amt_t nominal = fr >= 0 && node ? node->slot[fr].nominal : 0;
                json_array_append_new(
                    res, json_pack("{s:s,s:o,s:o}", "name", fatia_control_res_name(c, rg->res[k]),
                                   "total", qty(c, rg->res[k], u), "borrowed",
                                   qty(c, rg->res[k], amt_max(0, amt_sub(u, nominal)))));
            }
            json_array_append_new(out, json_pack("{s:s,s:o}", "name",
                                                 fatia_control_flavor_name(c, rg->flavors[f]),
                                                 "resources", res));
        }
    }
    return out;
}

int fatia_control_cq_status(const struct fatia_control *c, const char *name, int64_t now,
                            json_t **ret)
{
    struct ctl_cq *cq = fatia_control_cq_get(c, name);
    amt_t *res_use, *adm_use;
    size_t reserving = 0, admitted = 0;
    json_t *st;

    (void)now;
    if (!cq || !cq->defined)
        return -ENOENT;
    res_use = fatia_calloc(c->n_fr_cap ? c->n_fr_cap : 1, sizeof(*res_use));
    adm_use = fatia_calloc(c->n_fr_cap ? c->n_fr_cap : 1, sizeof(*adm_use));
    if (!res_use || !adm_use) {
        fatia_free(res_use);
        fatia_free(adm_use);
        return -ENOMEM;
    }
    for (size_t i = 0; i < cq->admitted.n; i++) {
        const struct ctl_wl *w = cq->admitted.v[i];
        reserving++;
        admitted += w->state == CTL_WL_ADMITTED;
        for (size_t k = 0; k < w->n_use; k++) {
            res_use[w->use[k].fr] = amt_add(res_use[w->use[k].fr], w->use[k].v);
            if (w->state == CTL_WL_ADMITTED)
                adm_use[w->use[k].fr] = amt_add(adm_use[w->use[k].fr], w->use[k].v);
        }
    }
    if (!c->tree_dirty) {
        struct fatia_control_drs d =
            fatia_control_drs((struct fatia_control *)c, &cq->node, NULL, 0);
        cq->share = fatia_control_drs_rounded(d);
    }
    st = json_pack("{s:I,s:I,s:I,s:o,s:o,s:{s:I},s:o}", "pendingWorkloads",
                   (json_int_t)fatia_control_queue_pending(cq), "reservingWorkloads",
                   (json_int_t)reserving, "admittedWorkloads", (json_int_t)admitted,
                   "flavorsReservation", flavors_block(c, &cq->qs, res_use, &cq->node),
                   "flavorsUsage", flavors_block(c, &cq->qs, adm_use, &cq->node), "fairSharing",
                   "weightedShare", (json_int_t)cq->share, "conditions",
                   active_condition(cq->active, cq->inactive_reason,
                                    cq->active ? "Can admit new workloads"
                                               : (cq->inactive_msg ? cq->inactive_msg : "")));
    fatia_free(res_use);
    fatia_free(adm_use);
    if (!st)
        return -ENOMEM;
    *ret = st;
    return 0;
}

int fatia_control_lq_status(const struct fatia_control *c, const char *ns, const char *name,
                            int64_t now, json_t **ret)
{
    char key[600];
    struct ctl_lq *lq;
    size_t pending = 0, reserving = 0, admitted = 0;
    amt_t *adm_use;
    bool active;
    const char *reason, *msg;
    json_t *st;

    (void)now;
    snprintf(key, sizeof(key), "%s/%s", ns ? ns : "", name);
    lq = fatia_strmap_get(&c->lq_index, key);
    if (!lq || !lq->defined)
        return -ENOENT;
    adm_use = fatia_calloc(c->n_fr_cap ? c->n_fr_cap : 1, sizeof(*adm_use));
    if (!adm_use)
        return -ENOMEM;
    for (size_t i = 0; i < lq->wls.n; i++) {
        const struct ctl_wl *w = lq->wls.v[i];
        if (w->state == CTL_WL_PENDING) {
            pending += w->active;
            continue;
        }
        reserving++;
        if (w->state == CTL_WL_ADMITTED) {
            admitted++;
            for (size_t k = 0; k < w->n_use; k++)
                adm_use[w->use[k].fr] = amt_add(adm_use[w->use[k].fr], w->use[k].v);
        }
    }
    active = lq->cq && lq->cq->defined && lq->cq->active && !lq->stopped;
    reason = active ? "Ready" : lq->stopped ? "Stopped" : "ClusterQueueIsInactive";
    msg = active        ? "Can submit new workloads to localQueue"
          : lq->stopped ? "LocalQueue is stopped"
                        : "Can't submit new workloads to clusterQueue";
    st = json_pack(
        "{s:I,s:I,s:I,s:o,s:o,s:o}", "pendingWorkloads", (json_int_t)pending, "reservingWorkloads",
        (json_int_t)reserving, "admittedWorkloads", (json_int_t)admitted, "flavorsReservation",
        flavors_block(c, lq->cq ? &lq->cq->qs : &(struct ctl_quota_spec){0}, lq->usage, NULL),
        "flavorsUsage",
        flavors_block(c, lq->cq ? &lq->cq->qs : &(struct ctl_quota_spec){0}, adm_use, NULL),
        "conditions", active_condition(active, reason, msg));
    fatia_free(adm_use);
    if (!st)
        return -ENOMEM;
    /* flavorsUsage/Reservation of a LocalQueue report no "borrowed" */
    for (int b = 0; b < 2; b++) {
        json_t *blk = json_object_get(st, b ? "flavorsUsage" : "flavorsReservation");
        size_t i, j;
        json_t *f, *r;
        json_array_foreach(blk, i, f)
        {
            json_array_foreach(json_object_get(f, "resources"), j, r)
                json_object_del(r, "borrowed");
        }
    }
    *ret = st;
    return 0;
}

static json_t *admission_json(const struct fatia_control *c, const struct ctl_wl *w)
{
    json_t *psas = json_array();

    for (size_t i = 0; psas && i < w->n_ps; i++) {
        json_t *flv = json_object(), *ru = json_object();
        for (size_t k = 0; flv && ru && k < w->asg[i].n; k++) {
            const char *res = fatia_control_res_name(c, w->asg[i].v[k].res);
            json_object_set_new(flv, res,
                                json_string(fatia_control_flavor_name(c, w->asg[i].v[k].flavor)));
            json_object_set_new(ru, res, qty(c, w->asg[i].v[k].res, w->asg[i].v[k].total));
        }
        json_array_append_new(psas,
                              json_pack("{s:s,s:o,s:o,s:i}", "name", w->ps[i].name, "flavors", flv,
                                        "resourceUsage", ru, "count", (int)w->asg[i].count));
    }
    return json_pack("{s:s,s:o}", "clusterQueue", w->cq->name, "podSetAssignments", psas);
}

int fatia_control_workload_status(const struct fatia_control *c, const char *ns, const char *name,
                                  json_t **ret)
{
    char key[600], buf[1024];
    const struct ctl_wl *w;
    json_t *st;

    snprintf(key, sizeof(key), "%s/%s", ns ? ns : "", name);
    w = fatia_strmap_get(&c->wl_index, key);
    if (!w)
        return -ENOENT;
    if (w->state != CTL_WL_PENDING) {
        st = json_pack("{s:s,s:o}", "state", w->state == CTL_WL_ADMITTED ? "Admitted" : "Evicting",
                       "admission", admission_json(c, w));
        if (st && w->cq && w->cq->n_checks) {
            json_t *checks = NULL;
            if (fatia_control_wl_checks_json(c, w, &checks) < 0) {
                json_decref(st);
                return -ENOMEM;
            }
            json_object_set_new(st, "admissionChecks", checks);
        }
        if (st)
            json_object_set_new(st, "checksReady",
                                json_boolean(fatia_control_wl_checks_ready(c, w)));
        if (st && w->requeue_at > 0) {
            char t[64];
            fatia_time_format_rfc3339(w->requeue_at, false, t, sizeof(t));
            json_object_set_new(st, "requeueAt", json_string(t));
        }
    } else {
        const char *reason, *msg;
        const struct ctl_cq *cq;
        struct fatia_buf lazy;
        fatia_buf_init(&lazy, 0);
        msg = pending_message(c, w, &reason, &cq, buf, sizeof(buf), &lazy);
        st = msg ? json_pack("{s:s,s:s?,s:s,s:s}", "state", "Pending", "clusterQueue",
                             cq ? cq->name : NULL, "reason", reason, "message", msg)
                 : NULL;
        fatia_buf_release(&lazy);
    }
    if (!st)
        return -ENOMEM;
    *ret = st;
    return 0;
}

/* For the one-shot driver: every pending workload with its message. */
int fatia_control_pending_list(const struct fatia_control *c, json_t *out)
{
    char buf[1024];
    struct fatia_buf lazy;
    int r = 0;

    fatia_buf_init(&lazy, 0);
    for (size_t i = 0; i < c->wls.n && r == 0; i++) {
        const struct ctl_wl *w = c->wls.v[i];
        const char *reason, *msg;
        const struct ctl_cq *cq;
        if (w->state != CTL_WL_PENDING)
            continue;
        msg = pending_message(c, w, &reason, &cq, buf, sizeof(buf), &lazy);
        if (!msg || json_array_append_new(out, json_pack("{s:s,s:s?,s:s}", "workload", w->key,
                                                         "clusterQueue", cq ? cq->name : NULL,
                                                         "message", msg)) < 0)
            r = -ENOMEM;
    }
    fatia_buf_release(&lazy);
    return r;
}

int fatia_control_usage_table(const struct fatia_control *c, json_t **ret)
{
    json_t *rows = json_array();

    if (!rows)
        return -ENOMEM;
    for (size_t i = 0; i < c->cqs.n; i++) {
        const struct ctl_cq *cq = c->cqs.v[i];
        if (!cq->defined)
            continue;
        for (size_t g = 0; g < cq->qs.n_rgs; g++) {
            const struct ctl_rg *rg = &cq->qs.rgs[g];
            for (size_t f = 0; f < rg->n_flavors; f++)
                for (size_t k = 0; k < rg->n_res; k++) {
                    int fr = fatia_control_fr_find(c, rg->flavors[f], rg->res[k]);
                    const struct ctl_slot *s;
                    json_t *row;
                    if (fr < 0)
                        continue;
                    s = &cq->node.slot[fr];
                    row = json_pack(
                        "{s:s,s:s?,s:s,s:s,s:I,s:I,s:I}", "clusterQueue", cq->name, "cohort",
                        cq->cohort_name, "flavor", fatia_control_flavor_name(c, rg->flavors[f]),
                        "resource", fatia_control_res_name(c, rg->res[k]), "nominal",
                        (json_int_t)s->nominal, "usage", (json_int_t)s->usage, "borrowed",
                        (json_int_t)amt_max(0, amt_sub(s->usage, s->nominal)));
                    if (!row)
                        goto oom;
                    if (s->blimit != AMT_NONE)
                        json_object_set_new(row, "borrowingLimit", json_integer(s->blimit));
                    if (s->llimit != AMT_NONE)
                        json_object_set_new(row, "lendingLimit", json_integer(s->llimit));
                    if (json_array_append_new(rows, row) < 0)
                        goto oom;
                }
        }
    }
    *ret = rows;
    return 0;
oom:
    json_decref(rows);
    return -ENOMEM;
}

void fatia_control_stats(const struct fatia_control *c, struct fatia_control_stats *ret)
{
    memset(ret, 0, sizeof(*ret));
    ret->workloads = c->wls.n;
    for (size_t i = 0; i < c->wls.n; i++) {
        switch (c->wls.v[i]->state) {
        case CTL_WL_PENDING:
            ret->pending++;
            break;
        case CTL_WL_ADMITTED:
            ret->admitted++;
            break;
        case CTL_WL_EVICTING:
            ret->evicting++;
            break;
        }
    }
    for (size_t i = 0; i < c->cqs.n; i++)
        ret->cluster_queues += c->cqs.v[i]->defined;
    for (size_t i = 0; i < c->cohorts.n; i++)
        ret->cohorts++;
    for (size_t i = 0; i < c->lqs.n; i++)
        ret->local_queues += c->lqs.v[i]->defined;
    for (size_t i = 0; i < c->flavors.n; i++)
        ret->flavors += c->flavors.v[i]->defined;
    ret->cycles = c->n_cycles;
    ret->admissions = c->n_admissions;
    ret->evictions = c->n_evictions;
    ret->preemptions = c->n_preemptions;
}

void fatia_control_phase_counts(const struct fatia_control *c,
                                struct fatia_control_phase_counts *ret)
{
    *ret = c->phases;
}

/* ---- invariants ---- */

#define FAIL(...)                          \
    do {                                   \
        snprintf(why, why_n, __VA_ARGS__); \
        r = -EFAULT;                       \
        goto out;                          \
    } while (0)

int fatia_control_check(const struct fatia_control *c, unsigned flags, char *why, size_t why_n)
{
    amt_t *sum = fatia_calloc(c->n_fr_cap ? c->n_fr_cap : 1, sizeof(*sum));
    int r = 0;

    if (!sum)
        return -ENOMEM;
    /* a batched requeue is never missed: requeue_next bounds every pending request, and after
     * a cycle none is due at its clock */
    {
        size_t n_co = 0, n_cq = 0;
        for (size_t i = 0; i < c->cohorts.n; i++)
            n_co += c->cohorts.v[i]->requeue_due != 0;
        for (size_t i = 0; i < c->cqs.n; i++)
            n_cq += c->cqs.v[i]->requeue_due != 0;
        if (n_co > c->n_due_cohorts || n_cq > c->n_due_cqs)
            FAIL("%zu cohorts and %zu ClusterQueues wait for a batched requeue, counters say %zu "
                 "and %zu",
                 n_co, n_cq, c->n_due_cohorts, c->n_due_cqs);
    }
    for (size_t i = 0; i < c->cohorts.n; i++) {
        int64_t due = c->cohorts.v[i]->requeue_due;
        if (due &&
            (due < c->requeue_next || ((flags & FATIA_CONTROL_CHECK_REQUEUED) && due <= c->now)))
            FAIL("cohort %s: batched requeue missed", c->cohorts.v[i]->name);
    }
    for (size_t i = 0; i < c->cqs.n; i++) {
        int64_t due = c->cqs.v[i]->requeue_due;
        if (due &&
            (due < c->requeue_next || ((flags & FATIA_CONTROL_CHECK_REQUEUED) && due <= c->now)))
            FAIL("ClusterQueue %s: batched requeue missed", c->cqs.v[i]->name);
    }
    if (c->tree_dirty)
        goto out; /* usage is recomputed at the next rebuild */
    /* every workload holding quota is in its ClusterQueue's list exactly once */
    for (size_t i = 0; i < c->wls.n; i++) {
        const struct ctl_wl *w = c->wls.v[i];
        if (w->state == CTL_WL_PENDING) {
            if (w->n_use || w->asg)
                FAIL("workload %s is pending but has an admission", w->key);
            continue;
        }
        if (!w->cq)
            FAIL("workload %s holds quota without a ClusterQueue", w->key);
        if (w->adm_idx >= w->cq->admitted.n || w->cq->admitted.v[w->adm_idx] != w)
            FAIL("workload %s is not in the admitted list of %s", w->key, w->cq->name);
        if (w->cq->adm_bits[w->adm_idx] != w->fr_bits)
            FAIL("workload %s: stale flavor-resource filter in %s", w->key, w->cq->name);
        if (w->q != CTL_Q_NONE)
            FAIL("workload %s holds quota and is queued", w->key);
        /* usage equals its assignment */
        for (size_t k = 0; k < w->n_use; k++) {
            amt_t s = 0;
            for (size_t p = 0; p < w->n_ps; p++)
                for (size_t j = 0; j < w->asg[p].n; j++)
                    if (fatia_control_fr_find(c, w->asg[p].v[j].flavor, w->asg[p].v[j].res) ==
                        (int)w->use[k].fr)
                        s = amt_add(s, w->asg[p].v[j].total);
            if (s != w->use[k].v)
                FAIL("workload %s: usage of fr %u is %" PRId64 ", its assignment says %" PRId64,
                     w->key, w->use[k].fr, w->use[k].v, s);
        }
    }
    for (size_t i = 0; i < c->cqs.n; i++) {
        const struct ctl_cq *cq = c->cqs.v[i];
        for (size_t k = 0; k < c->n_fr_cap; k++)
            sum[k] = 0;
        for (size_t j = 0; j < cq->admitted.n; j++) {
            const struct ctl_wl *w = cq->admitted.v[j];
            if (w->cq != cq || w->state == CTL_WL_PENDING)
                FAIL("ClusterQueue %s lists %s, which is not admitted there", cq->name, w->key);
            /* a workload listed twice has one entry whose index is not its own */
            if (w->adm_idx != j)
                FAIL("workload %s is admitted twice in %s", w->key, cq->name);
            for (size_t k = 0; k < w->n_use; k++)
                sum[w->use[k].fr] = amt_add(sum[w->use[k].fr], w->use[k].v);
        }
        for (size_t k = 0; k < c->fr_flavor.n; k++) {
            uint32_t users = 0;
            for (size_t j = 0; j < cq->admitted.n; j++)
                for (size_t u = 0; u < cq->admitted.v[j]->n_use; u++)
                    users += cq->admitted.v[j]->use[u].fr == k;
            if (users != cq->node.slot[k].users)
                FAIL("ClusterQueue %s: %u admitted workloads use %s/%s, the count says %u",
                     cq->name, users, fatia_control_flavor_name(c, c->fr_flavor.v[k]),
                     fatia_control_res_name(c, c->fr_res.v[k]), cq->node.slot[k].users);
        }
        if (cq->min_prio_valid) {
            int32_t mp = INT32_MAX;
            for (size_t j = 0; j < cq->admitted.n; j++)
                if (cq->admitted.v[j]->priority < mp)
                    mp = cq->admitted.v[j]->priority;
            if (mp != cq->min_prio)
                FAIL("ClusterQueue %s: lowest admitted priority is %d, the cache says %d", cq->name,
                     (int)mp, (int)cq->min_prio);
        }
        for (size_t k = 0; k < c->fr_flavor.n; k++)
            if (sum[k] != cq->node.slot[k].usage)
                FAIL("ClusterQueue %s: usage of %s/%s is %" PRId64 ", its workloads use %" PRId64,
                     cq->name, fatia_control_flavor_name(c, c->fr_flavor.v[k]),
                     fatia_control_res_name(c, c->fr_res.v[k]), cq->node.slot[k].usage, sum[k]);
        if ((flags & FATIA_CONTROL_CHECK_QUOTA) && cq->defined && cq->active)
            for (size_t k = 0; k < cq->node.n_frs; k++) {
                uint32_t fr = cq->node.frs[k];
                if (fatia_control_available_raw(&cq->node, fr) < 0)
                    FAIL("ClusterQueue %s exceeds its quota tree on %s/%s (usage %" PRId64 ")",
                         cq->name, fatia_control_flavor_name(c, c->fr_flavor.v[fr]),
                         fatia_control_res_name(c, c->fr_res.v[fr]), cq->node.slot[fr].usage);
            }
    }
    for (size_t i = 0; i < c->cohorts.n; i++) {
        const struct ctl_cohort *co = c->cohorts.v[i];
        for (size_t k = 0; k < c->fr_flavor.n; k++) {
            amt_t u = 0;
            for (size_t j = 0; j < co->child_cqs.n; j++) {
                const struct ctl_node *ch = &co->child_cqs.v[j]->node;
                u = amt_add(
                    u, amt_max(0, amt_sub(ch->slot[k].usage, fatia_control_local_quota(ch, k))));
            }
            for (size_t j = 0; j < co->child_cohorts.n; j++) {
                const struct ctl_node *ch = &co->child_cohorts.v[j]->node;
                u = amt_add(
                    u, amt_max(0, amt_sub(ch->slot[k].usage, fatia_control_local_quota(ch, k))));
            }
            if (u != co->node.slot[k].usage)
                FAIL("Cohort %s: usage of %s/%s is %" PRId64 ", its children put %" PRId64,
                     co->name, fatia_control_flavor_name(c, c->fr_flavor.v[k]),
                     fatia_control_res_name(c, c->fr_res.v[k]), co->node.slot[k].usage, u);
            if ((flags & FATIA_CONTROL_CHECK_QUOTA) && !co->in_cycle && !co->parent &&
                co->node.slot[k].usage > co->node.slot[k].subtree)
                FAIL("Cohort %s uses %" PRId64 " of %s/%s, more than its subtree quota %" PRId64,
                     co->name, co->node.slot[k].usage,
                     fatia_control_flavor_name(c, c->fr_flavor.v[k]),
                     fatia_control_res_name(c, c->fr_res.v[k]), co->node.slot[k].subtree);
        }
    }
    /* the evicting list */
    {
        size_t n_ev = 0, n_list = 0;
        for (size_t i = 0; i < c->wls.n; i++)
            n_ev += c->wls.v[i]->state == CTL_WL_EVICTING;
        for (const struct ctl_wl *w = c->evicting; w && n_list <= c->wls.n; w = w->ev_next) {
            if (w->state != CTL_WL_EVICTING)
                FAIL("workload %s is in the evicting list but not evicting", w->key);
            n_list++;
        }
        if (n_ev != n_list || n_ev != c->n_evicting)
            FAIL("%zu workloads are evicting, the list holds %zu, the counter says %zu", n_ev,
                 n_list, c->n_evicting);
    }
    /* queue membership */
    for (size_t i = 0; i < c->cqs.n; i++) {
        const struct ctl_cq *cq = c->cqs.v[i];
        if (fatia_control_queue_check(cq, why, why_n) < 0) {
            r = -EFAULT;
            goto out;
        }
        if (!c->tree_dirty && cq->defined && cq->active && fatia_control_queue_has_head(cq) &&
            !cq->listed)
            FAIL("ClusterQueue %s has a head but is not in the ready list", cq->name);
    }
out:
    fatia_free(sum);
    return r;
}
