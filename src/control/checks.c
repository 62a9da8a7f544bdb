/*
 * control/checks.c: Kueue AdmissionChecks in the engine (docs/control.md "Admission checks").
 *
 * Model, after Kueue (pkg/cache/clusterqueue.go, pkg/controller/core/workload_controller.go,
 * pkg/workload/admissionchecks.go):
 *   - an AdmissionCheck is known by name, and is active when its status has Active=True (written
 *     by its controller: a check whose controller never ran has no condition and is inactive);
 *   - a ClusterQueue names checks in spec.admissionChecksStrategy.admissionChecks (v1beta1's
 *     spec.admissionChecks is converted to it by the model layer), each with onFlavors (empty:
 *     every flavor). A queue that names a missing check is inactive (AdmissionCheckNotFound), one
 *     that names an inactive check too (AdmissionCheckInactive): it reserves nothing;
 *   - the checks a workload needs are the rules of the ClusterQueue that reserved its quota whose
 *     onFlavors is empty or meets a flavor of its admission;
 *   - their states are the workload's status.admissionChecks, written by the checks' external
 *     controllers (fatia ships none). The engine reads them on every apply of the workload and
 *     decides: every needed check Ready → the workload is admitted (its pods may start); one in
 *     Retry → evicted with reason AdmissionCheck ("At least one admission check is false"), its
 *     quota released once its pods are gone, requeued after the latest lastTransitionTime +
 *     requeueAfterSeconds of its Retry checks (Kueue's NeedsRequeueAtUpdate); one Rejected → the
 *     workload is deactivated (evicted with DeactivatedDueToAdmissionCheck, kept inactive until a
 *     tree with spec.active=false confirms that the driver persisted the deactivation).
 *   - on its release the engine's copy of the states goes back to Pending, as Kueue resets them on
 *     eviction (resetChecksOnEviction); the driver writes the same reset into the status.
 *
 * Invariants: the engine never admits (checks_ready) a workload whose ClusterQueue has needed
 * checks not all Ready in the states it last applied; it reacts to Retry/Rejected only while the
 * workload holds quota and is not already evicting (Kueue's reconcileCheckBasedEviction).
 *
 * Rejected: deciding readiness in the driver (the admission controller) would split the one
 * verdict between `fatia schedule` and fatiad; keeping check objects' parameters (controllerName,
 * parameters) in the engine: only their activity matters to admission.
 */
#include "base/compat.h"

#include <stdio.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "base/str.h"
#include "control/internal.h"

/* ---- AdmissionCheck objects ---- */

static bool active_condition(const json_t *obj)
{
    const json_t *conds = fatia_json_path(obj, "status.conditions");
    size_t i;
    json_t *cnd;

    json_array_foreach(conds, i, cnd)
    {
        const char *t = fatia_json_str(cnd, "type"), *s = fatia_json_str(cnd, "status");
        if (t && !strcmp(t, "Active"))
            return s && !strcmp(s, "True");
    }
    return false;
}

int fatia_control_apply_check(struct fatia_control *c, const json_t *obj, int64_t now)
{
    const char *name = json_string_value(fatia_json_path(obj, "metadata.name"));
    struct ctl_check *k;
    bool active = active_condition(obj);

    if (!name)
        return -EINVAL;
    k = fatia_strmap_get(&c->check_index, name);
    if (!k) {
        k = fatia_calloc(1, sizeof(*k));
        if (!k)
            return -ENOMEM;
        k->name = fatia_strdup(name);
        if (!k->name || FATIA_VEC_PUSH(&c->checks, k) < 0) {
            fatia_free(k->name);
            fatia_free(k);
            return -ENOMEM;
        }
        if (fatia_strmap_put(&c->check_index, k->name, k) < 0) {
            c->checks.n--;
            fatia_free(k->name);
            fatia_free(k);
            return -ENOMEM;
        }
    } else if (k->defined && k->active == active) {
        return 0; /* an echo or a spec change: activity decides nothing else */
    }
    k->defined = true;
    k->active = active;
    c->tree_dirty = true;
    return fatia_control_queue_requeue_all(c, now);
}

int fatia_control_delete_check(struct fatia_control *c, const char *name, int64_t now)
{
    struct ctl_check *k = fatia_strmap_get(&c->check_index, name);

    if (!k || !k->defined)
        return -ENOENT;
    k->defined = false;
    k->active = false;
    c->tree_dirty = true;
    return fatia_control_queue_requeue_all(c, now);
}

void fatia_control_checks_release(struct fatia_control *c)
{
    for (size_t i = 0; i < c->checks.n; i++) {
        fatia_free(c->checks.v[i]->name);
        fatia_free(c->checks.v[i]);
    }
    FATIA_VEC_RELEASE(&c->checks);
    fatia_strmap_release(&c->check_index);
}

/* ---- a ClusterQueue's rules ---- */

void fatia_control_cq_checks_free(struct ctl_cq *cq)
{
    for (size_t i = 0; i < cq->n_checks; i++) {
        for (size_t j = 0; j < cq->checks[i].n_on; j++)
            fatia_free(cq->checks[i].on_flavors[j]);
        fatia_free(cq->checks[i].on_flavors);
        fatia_free(cq->checks[i].name);
    }
    fatia_free(cq->checks);
    cq->checks = NULL;
    cq->n_checks = 0;
}

int fatia_control_cq_parse_checks(struct ctl_cq *cq, const json_t *spec)
{
    const json_t *rules = fatia_json_path(spec, "admissionChecksStrategy.admissionChecks");
    size_t n = json_array_size(rules), i;
    json_t *rule;

    fatia_control_cq_checks_free(cq);
    if (!n)
        return 0;
    cq->checks = fatia_calloc(n, sizeof(*cq->checks));
    if (!cq->checks)
        return -ENOMEM;
    json_array_foreach(rules, i, rule)
    {
        struct ctl_check_rule *r = &cq->checks[cq->n_checks];
        const char *name = fatia_json_str(rule, "name");
        const json_t *on = json_object_get(rule, "onFlavors");
        size_t j;
        json_t *f;
        if (!name)
            continue;
        cq->n_checks++;
        r->name = fatia_strdup(name);
        if (!r->name)
            return -ENOMEM;
        if (!json_array_size(on))
            continue;
        r->on_flavors = fatia_calloc(json_array_size(on), sizeof(*r->on_flavors));
        if (!r->on_flavors)
            return -ENOMEM;
        json_array_foreach(on, j, f)
        {
            if (!json_is_string(f))
                continue;
            r->on_flavors[r->n_on] = fatia_strdup(json_string_value(f));
            if (!r->on_flavors[r->n_on++])
                return -ENOMEM;
        }
    }
    return 0;
}

/* Kueue's missingAdmissionChecks / inactiveAdmissionChecks, joined with "," in spec order. */
bool fatia_control_cq_checks_block(const struct fatia_control *c, const struct ctl_cq *cq,
                                   const char **ret_reason, char *msg, size_t msg_n)
{
    char missing[256] = "", inactive[256] = "";

    for (size_t i = 0; i < cq->n_checks; i++) {
        const struct ctl_check *k = fatia_strmap_get(&c->check_index, cq->checks[i].name);
        char *dst = !k || !k->defined ? missing : !k->active ? inactive : NULL;
        size_t len;
        if (!dst)
            continue;
        len = strlen(dst);
        snprintf(dst + len, sizeof(missing) - len, "%s%s", len ? "," : "", cq->checks[i].name);
    }
    if (!*missing && !*inactive)
        return false;
    if (*missing && *inactive) {
        *ret_reason = "AdmissionCheckNotFound";
        snprintf(msg, msg_n,
                 "Can't admit new workloads: references missing AdmissionCheck(s): %s, references "
                 "inactive AdmissionCheck(s): %s",
                 missing, inactive);
    } else if (*missing) {
        *ret_reason = "AdmissionCheckNotFound";
        snprintf(msg, msg_n, "Can't admit new workloads: references missing AdmissionCheck(s): %s",
                 missing);
    } else {
        *ret_reason = "AdmissionCheckInactive";
        snprintf(msg, msg_n, "Can't admit new workloads: references inactive AdmissionCheck(s): %s",
                 inactive);
    }
    return true;
}

/* ---- a workload's states ---- */

void fatia_control_wl_checks_free(struct ctl_wl *w)
{
    for (size_t i = 0; i < w->n_checks; i++)
        fatia_free(w->checks[i].name);
    fatia_free(w->checks);
    w->checks = NULL;
    w->n_checks = 0;
}

static enum ctl_check_state state_of(const char *s)
{
    if (!s)
        return CTL_CHECK_PENDING;
    if (!strcmp(s, "Ready"))
        return CTL_CHECK_READY;
    if (!strcmp(s, "Retry"))
        return CTL_CHECK_RETRY;
    if (!strcmp(s, "Rejected"))
        return CTL_CHECK_REJECTED;
    return CTL_CHECK_PENDING;
}

int fatia_control_wl_parse_checks(struct ctl_wl *w, const json_t *obj)
{
    const json_t *list = fatia_json_path(obj, "status.admissionChecks");
    size_t n = json_array_size(list), i;
    json_t *e;

    fatia_control_wl_checks_free(w);
    if (!n)
        return 0;
    w->checks = fatia_calloc(n, sizeof(*w->checks));
    if (!w->checks)
        return -ENOMEM;
    json_array_foreach(list, i, e)
    {
        struct ctl_wl_check *k = &w->checks[w->n_checks];
        const char *name = fatia_json_str(e, "name");
        fatia_usec_t t;
        int64_t after = 0;
        if (!name)
            continue;
        k->name = fatia_strdup(name);
        if (!k->name)
            return -ENOMEM;
        w->n_checks++;
        k->state = state_of(fatia_json_str(e, "state"));
        if (fatia_json_int(e, "requeueAfterSeconds", &after) && after > 0 &&
            fatia_time_parse_rfc3339(fatia_json_str(e, "lastTransitionTime"), &t) == 0)
            k->retry_at = t + after * FATIA_USEC_PER_SEC;
    }
    return 0;
}

/* Moves the states of src (a freshly decoded tree) into dst. */
void fatia_control_wl_take_checks(struct ctl_wl *dst, struct ctl_wl *src)
{
    fatia_control_wl_checks_free(dst);
    dst->checks = src->checks;
    dst->n_checks = src->n_checks;
    src->checks = NULL;
    src->n_checks = 0;
}

void fatia_control_wl_checks_reset(struct ctl_wl *w)
{
    for (size_t i = 0; i < w->n_checks; i++) {
        w->checks[i].state = CTL_CHECK_PENDING;
        w->checks[i].retry_at = 0;
    }
}

bool fatia_control_wl_check_needed(const struct fatia_control *c, const struct ctl_wl *w,
                                   const struct ctl_check_rule *r)
{
    if (!r->n_on)
        return true;
    for (size_t p = 0; w->asg && p < w->n_ps; p++)
        for (size_t k = 0; k < w->asg[p].n; k++) {
            const char *fl = c->flavors.v[w->asg[p].v[k].flavor]->name;
            for (size_t j = 0; j < r->n_on; j++)
                if (!strcmp(fl, r->on_flavors[j]))
                    return true;
        }
    return false;
}

enum ctl_check_state fatia_control_wl_check_state(const struct ctl_wl *w, const char *name)
{
    for (size_t i = 0; i < w->n_checks; i++)
        if (!strcmp(w->checks[i].name, name))
            return w->checks[i].state;
    return CTL_CHECK_PENDING;
}

bool fatia_control_wl_checks_ready(const struct fatia_control *c, const struct ctl_wl *w)
{
    if (w->state == CTL_WL_PENDING || !w->cq)
        return false;
    for (size_t i = 0; i < w->cq->n_checks; i++)
        if (fatia_control_wl_check_needed(c, w, &w->cq->checks[i]) &&
            fatia_control_wl_check_state(w, w->cq->checks[i].name) != CTL_CHECK_READY)
            return false;
    return true;
}

int fatia_control_wl_checks_react(struct fatia_control *c, struct ctl_wl *w)
{
    char rejected[512] = "";
    bool retry = false;
    int64_t requeue_at = 0;

    if (w->state != CTL_WL_ADMITTED || !w->cq)
        return 0;
    for (size_t i = 0; i < w->cq->n_checks; i++) {
        const struct ctl_check_rule *r = &w->cq->checks[i];
        if (!fatia_control_wl_check_needed(c, w, r))
            continue;
        for (size_t j = 0; j < w->n_checks; j++) {
            const struct ctl_wl_check *k = &w->checks[j];
            size_t len = strlen(rejected);
            if (strcmp(k->name, r->name))
                continue;
            if (k->state == CTL_CHECK_REJECTED)
                snprintf(rejected + len, sizeof(rejected) - len, "%s%s", len ? "," : "", k->name);
            if (k->state == CTL_CHECK_RETRY) {
                retry = true;
                if (k->retry_at > requeue_at)
                    requeue_at = k->retry_at;
            }
        }
    }
    if (*rejected) {
        char msg[640];
        snprintf(msg, sizeof(msg),
                 "The workload is deactivated due to Admission check(s): %s, were rejected",
                 rejected);
        w->active = false;
        w->rejected = true;
        return fatia_control_evict(c, w, "DeactivatedDueToAdmissionCheck", msg, NULL, false);
    }
    if (retry) {
        if (requeue_at > w->requeue_at)
            w->requeue_at = requeue_at;
        return fatia_control_evict(c, w, "AdmissionCheck", "At least one admission check is false",
                                   NULL, false);
    }
    return 0;
}

int fatia_control_wl_checks_json(const struct fatia_control *c, const struct ctl_wl *w,
                                 json_t **ret)
{
    json_t *arr = json_array();

    if (!arr)
        return -ENOMEM;
    for (size_t i = 0; w->cq && i < w->cq->n_checks; i++) {
        const struct ctl_check_rule *r = &w->cq->checks[i];
        static const char *const names[] = {"Pending", "Ready", "Retry", "Rejected"};
        if (!fatia_control_wl_check_needed(c, w, r))
            continue;
        if (json_array_append_new(arr, json_pack("{s:s,s:s}", "name", r->name, "state",
                                                 names[fatia_control_wl_check_state(w, r->name)])) <
            0) {
            json_decref(arr);
            return -ENOMEM;
        }
    }
    *ret = arr;
    return 0;
}
