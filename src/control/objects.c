/*
 * control/objects.c: validated Kueue objects into the engine's structs, and the object-level
 * events (apply, delete, finished, released, evictions outside cycles).
 *
 * Every tree handed to fatia_control_apply has been validated and defaulted by the model layer
 * (model/kinds/kueue.c, fatia_config.c), so member types are as the schema promises, except the
 * pod template's affinity, which match.c parses defensively.
 *
 * Names that are referenced before (or after) their object exists are kept as "undefined"
 * entries: a LocalQueue named by workloads, a ClusterQueue named by a LocalQueue or by an
 * admission, a ResourceFlavor named by a quota, a Cohort named by a ClusterQueue. This keeps every
 * workload attached to one LocalQueue entry, and every admission to one ClusterQueue entry, so
 * that an object arriving later (watch events come in any order) simply defines its entry.
 *
 * What the engine derives from a Workload (requests per pod set, the shape hash, the usage of
 * an admission) is decoded in workload.c. apply_wl is wl_decode (a new struct from the tree),
 * then wl_update (a known workload: spec-derived fields only) or wl_insert (a new one: indexed,
 * admitted as its status says, or pending). Decided here:
 *   - priority: spec.priority, else the WorkloadPriorityClass value at the time the workload is
 *     first seen (later class changes do not move existing workloads, as upstream), else 0;
 *   - queue-order time: metadata.creationTimestamp, or the Evicted condition's time when it was
 *     evicted by PodsReadyTimeout or AdmissionCheck;
 *   - admission: status.admission with QuotaReserved=True.
 *
 * A ClusterQueue or Cohort applied again with the spec it was last applied with (the echo of a
 * status write, a label change) changes nothing: the tree stays clean and nothing is requeued.
 */
#include "base/compat.h"

#include <stdarg.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/hash.h"
#include "base/json.h"
#include "base/str.h"
#include "control/internal.h"
#include "model/quantity.h"

/* ---- small helpers ---- */

amt_t fatia_control_q_milli(const json_t *v)
{
    struct fatia_quantity q;

    if (!v || fatia_quantity_parse_json(v, &q, NULL, 0) < 0)
        return 0;
    return fatia_quantity_milli(&q);
}

static int64_t parse_time(const char *s, int64_t def)
{
    fatia_usec_t t;

    if (!s || fatia_time_parse_rfc3339(s, &t) < 0)
        return def;
    return t;
}

static const json_t *find_condition(const json_t *obj, const char *type)
{
    const json_t *conds = fatia_json_path(obj, "status.conditions");
    size_t i;
    json_t *cnd;

    json_array_foreach(conds, i, cnd)
    {
        const char *t = fatia_json_str(cnd, "type");
        if (t && !strcmp(t, type))
            return cnd;
    }
    return NULL;
}

static bool condition_true(const json_t *cnd)
{
    const char *s = fatia_json_str(cnd, "status");
    return s && !strcmp(s, "True");
}

static void quota_spec_release(struct ctl_quota_spec *qs)
{
    for (size_t i = 0; i < qs->n_rgs; i++) {
        fatia_free(qs->rgs[i].res);
        fatia_free(qs->rgs[i].flavors);
    }
    fatia_free(qs->rgs);
    fatia_free(qs->q);
    memset(qs, 0, sizeof(*qs));
}

/* spec.resourceGroups into qs; interns every flavor, resource and flavor-resource. */
static int quota_spec_parse(struct fatia_control *c, const json_t *groups,
                            struct ctl_quota_spec *ret)
{
    struct ctl_quota_spec qs = {0};
    size_t gi, fi, ri, nq = 0;
    json_t *g, *f, *rq;
    int r = -ENOMEM;

    json_array_foreach(groups, gi, g)
    {
        json_array_foreach(json_object_get(g, "flavors"), fi, f) nq +=
            json_array_size(json_object_get(f, "resources"));
    }
    if (json_array_size(groups)) {
        qs.rgs = fatia_calloc(json_array_size(groups), sizeof(*qs.rgs));
        if (!qs.rgs)
            goto fail;
    }
    if (nq) {
        qs.q = fatia_calloc(nq, sizeof(*qs.q));
        if (!qs.q)
            goto fail;
    }
    json_array_foreach(groups, gi, g)
    {
        struct ctl_rg *rg = &qs.rgs[qs.n_rgs++];
        const json_t *cov = json_object_get(g, "coveredResources");
        const json_t *flv = json_object_get(g, "flavors");
        json_t *x;
        size_t k;
        rg->res = fatia_calloc(json_array_size(cov) + 1, sizeof(*rg->res));
        rg->flavors = fatia_calloc(json_array_size(flv) + 1, sizeof(*rg->flavors));
        if (!rg->res || !rg->flavors)
            goto fail;
        json_array_foreach(cov, k, x)
        {
            if (fatia_control_res_intern(c, json_string_value(x), &rg->res[rg->n_res]) < 0)
                goto fail;
            rg->n_res++;
        }
        json_array_foreach(flv, fi, f)
        {
            struct ctl_flavor *fl;
            if (fatia_control_flavor_intern(c, fatia_json_str(f, "name"), &fl) < 0)
                goto fail;
            rg->flavors[rg->n_flavors++] = fl->id;
            json_array_foreach(json_object_get(f, "resources"), ri, rq)
            {
                struct ctl_rg_quota *q = &qs.q[qs.n_q];
                uint32_t res, fr;
                json_t *bl = json_object_get(rq, "borrowingLimit");
                json_t *ll = json_object_get(rq, "lendingLimit");
                if (fatia_control_res_intern(c, fatia_json_str(rq, "name"), &res) < 0 ||
                    fatia_control_fr_intern(c, fl->id, res, &fr) < 0)
                    goto fail;
                q->flavor = fl->id;
                q->res = res;
                q->nominal = fatia_control_q_milli(json_object_get(rq, "nominalQuota"));
                q->blimit = bl && !json_is_null(bl) ? fatia_control_q_milli(bl) : AMT_NONE;
                q->llimit = ll && !json_is_null(ll) ? fatia_control_q_milli(ll) : AMT_NONE;
                qs.n_q++;
            }
        }
    }
    *ret = qs;
    return 0;
fail:
    quota_spec_release(&qs);
    return r;
}

/* An object event whose spec is the one last applied (the echo of a status write: only status
 * and resourceVersion differ) changes nothing. Re-applying it would mark the tree dirty and
 * requeue every inadmissible workload, which Kueue does only when the spec changed
 * (clusterqueue_controller.go Update, specUpdated); the status reported next would come from a
 * dirty tree, its write would echo back, and so on. */
static bool spec_unchanged(const json_t *kept, bool defined, const json_t *spec)
{
    return defined && kept && spec && fatia_json_equal(kept, spec);
}

/* Keeps the spec an object was applied with, once it is applied (a failed apply keeps none). */
static int spec_keep(json_t **kept, const json_t *spec)
{
    json_decref(*kept);
    *kept = spec ? json_deep_copy(spec) : NULL;
    return spec && !*kept ? -ENOMEM : 0;
}

static double weight_of(const json_t *spec)
{
    const json_t *w = fatia_json_path(spec, "fairSharing.weight");

    if (!w)
        return 1.0;
    return (double)fatia_control_q_milli(w) / 1000.0;
}

/* ---- engine ---- */

int fatia_control_new(struct fatia_control **ret)
{
    struct fatia_control *c = fatia_calloc(1, sizeof(*c));

    if (!c)
        return -ENOMEM;
    fatia_strmap_init(&c->res_index);
    fatia_strmap_init(&c->flavor_index);
    fatia_strmap_init(&c->cq_index);
    fatia_strmap_init(&c->cohort_index);
    fatia_strmap_init(&c->lq_index);
    fatia_strmap_init(&c->ns_index);
    fatia_strmap_init(&c->wpc_index);
    fatia_strmap_init(&c->wl_index);
    c->cfg.partial_admission = true;
    c->cfg.n_strategies = 2;
    c->cfg.strategies[0] = 0;
    c->cfg.strategies[1] = 1;
    c->requeue_next = INT64_MAX;
    *ret = c;
    return 0;
}

static void flavor_clear(struct ctl_flavor *f)
{
    json_decref(f->labels);
    f->labels = NULL;
    for (size_t i = 0; i < f->n_taints; i++) {
        fatia_free(f->taints[i].key);
        fatia_free(f->taints[i].value);
        fatia_free(f->taints[i].effect);
    }
    fatia_free(f->taints);
    f->taints = NULL;
    f->n_taints = 0;
    for (size_t i = 0; i < f->n_tols; i++) {
        fatia_free(f->tols[i].key);
        fatia_free(f->tols[i].value);
        fatia_free(f->tols[i].effect);
    }
    fatia_free(f->tols);
    f->tols = NULL;
    f->n_tols = 0;
}

void fatia_control_wl_drop_admission(struct ctl_wl *w)
{
    for (size_t i = 0; w->asg && i < w->n_ps; i++)
        fatia_free(w->asg[i].v);
    fatia_free(w->asg);
    w->asg = NULL;
    fatia_free(w->use);
    w->use = NULL;
    w->n_use = 0;
    w->fr_bits = 0;
}

void fatia_control_wl_drop_preemptor(struct ctl_wl *w)
{
    if (w->pre_a) {
        fatia_control_assignment_release(w->pre_a);
        fatia_free(w->pre_a);
        w->pre_a = NULL;
    }
    w->preempting = false;
}

void fatia_control_wl_free(struct ctl_wl *w)
{
    if (!w)
        return;
    fatia_control_wl_drop_admission(w);
    fatia_control_wl_drop_preemptor(w);
    fatia_control_podsets_free(w->ps, w->n_ps);
    fatia_free(w->key);
    fatia_free(w->ns);
    fatia_free(w->name);
    fatia_free(w->uid);
    fatia_free(w->job_uid);
    fatia_free(w->queue_name);
    fatia_free(w->bad_msg);
    fatia_control_wl_msg_clear(w);
    fatia_control_wl_checks_free(w);
    fatia_free(w);
}

static void cq_free(struct ctl_cq *cq)
{
    fatia_free(cq->name);
    fatia_free(cq->cohort_name);
    quota_spec_release(&cq->qs);
    fatia_free(cq->rg_of_res);
    fatia_selector_free(cq->ns_sel);
    fatia_free(cq->inactive_msg);
    fatia_control_cq_checks_free(cq);
    json_decref(cq->spec);
    fatia_control_queue_release(cq);
    FATIA_VEC_RELEASE(&cq->admitted);
    fatia_free(cq->adm_bits);
    FATIA_VEC_RELEASE(&cq->lqs);
    fatia_free(cq->node.slot);
    fatia_free(cq->node.frs);
    fatia_free(cq->node.lend);
    fatia_free(cq->node.drs_use);
    fatia_free(cq);
}

void fatia_control_cohort_free(struct ctl_cohort *co)
{
    if (!co)
        return;
    fatia_free(co->name);
    fatia_free(co->parent_name);
    json_decref(co->spec);
    quota_spec_release(&co->qs);
    FATIA_VEC_RELEASE(&co->child_cohorts);
    FATIA_VEC_RELEASE(&co->child_cqs);
    fatia_free(co->node.slot);
    fatia_free(co->node.frs);
    fatia_free(co->node.lend);
    fatia_free(co->node.drs_use);
    fatia_free(co);
}

static void lq_free(struct ctl_lq *lq)
{
    fatia_free(lq->key);
    fatia_free(lq->ns);
    fatia_free(lq->name);
    fatia_free(lq->cq_name);
    FATIA_VEC_RELEASE(&lq->wls);
    fatia_free(lq->consumed);
    fatia_free(lq->penalty);
    fatia_free(lq->usage);
    fatia_free(lq->reserve);
    fatia_free(lq);
}

static void config_release(struct ctl_config *cfg)
{
    fatia_free(cfg->afs_weight);
    for (size_t i = 0; i < cfg->n_tr; i++)
        fatia_free(cfg->tr[i].out);
    fatia_free(cfg->tr);
    for (size_t i = 0; i < cfg->n_exclude; i++)
        fatia_free(cfg->exclude_prefixes[i]);
    fatia_free(cfg->exclude_prefixes);
    memset(cfg, 0, sizeof(*cfg));
}

void fatia_control_set_caches(struct fatia_control *c, bool on)
{
    c->caches_off = !on;
}

void fatia_control_set_requeue_batch(struct fatia_control *c, int64_t period)
{
    c->requeue_batch = period > 0 ? period : 0;
}

void fatia_control_free(struct fatia_control *c)
{
    if (!c)
        return;
    fatia_control_memo_release(c);
    for (size_t i = 0; i < c->wls.n; i++)
        fatia_control_wl_free(c->wls.v[i]);
    FATIA_VEC_RELEASE(&c->wls);
    for (size_t i = 0; i < c->cqs.n; i++)
        cq_free(c->cqs.v[i]);
    FATIA_VEC_RELEASE(&c->cqs);
    FATIA_VEC_RELEASE(&c->ready);
    for (size_t i = 0; i < c->cohorts.n; i++)
        fatia_control_cohort_free(c->cohorts.v[i]);
    FATIA_VEC_RELEASE(&c->cohorts);
    for (size_t i = 0; i < c->lqs.n; i++)
        lq_free(c->lqs.v[i]);
    FATIA_VEC_RELEASE(&c->lqs);
    for (size_t i = 0; i < c->nss.n; i++) {
        fatia_free(c->nss.v[i]->name);
        json_decref(c->nss.v[i]->labels);
        fatia_free(c->nss.v[i]);
    }
    FATIA_VEC_RELEASE(&c->nss);
    for (size_t i = 0; i < c->wpcs.n; i++) {
        fatia_free(c->wpcs.v[i]->name);
        fatia_free(c->wpcs.v[i]);
    }
    FATIA_VEC_RELEASE(&c->wpcs);
    fatia_control_checks_release(c);
    for (size_t i = 0; i < c->flavors.n; i++) {
        flavor_clear(c->flavors.v[i]);
        fatia_free(c->flavors.v[i]->name);
        fatia_free(c->flavors.v[i]);
    }
    FATIA_VEC_RELEASE(&c->flavors);
    for (size_t i = 0; i < c->fr_rows; i++)
        fatia_free(c->fr_of[i]);
    fatia_free(c->fr_of);
    for (size_t i = 0; i < c->res_names.n; i++)
        fatia_free(c->res_names.v[i]);
    FATIA_VEC_RELEASE(&c->res_names);
    FATIA_VEC_RELEASE(&c->fr_flavor);
    FATIA_VEC_RELEASE(&c->fr_res);
    config_release(&c->cfg);
    fatia_strmap_release(&c->res_index);
    fatia_strmap_release(&c->flavor_index);
    fatia_strmap_release(&c->cq_index);
    fatia_strmap_release(&c->cohort_index);
    fatia_strmap_release(&c->lq_index);
    fatia_strmap_release(&c->ns_index);
    fatia_strmap_release(&c->wpc_index);
    fatia_strmap_release(&c->wl_index);
    fatia_control_arena_release(&c->arena);
    FATIA_VEC_RELEASE(&c->res_adm);
    FATIA_VEC_RELEASE(&c->res_ev);
    FATIA_VEC_RELEASE(&c->res_pend);
    for (size_t i = 0; i < c->pending_ev.n; i++) {
        struct fatia_control_eviction *e = &c->pending_ev.v[i];
        fatia_free((char *)e->ns);
        fatia_free((char *)e->name);
        fatia_free((char *)e->key);
        fatia_free((char *)e->cluster_queue);
        fatia_free((char *)e->message);
        fatia_free((char *)e->preemptor);
    }
    FATIA_VEC_RELEASE(&c->pending_ev);
    fatia_free(c->scratch_amt);
    fatia_free(c->scratch_dbl);
    fatia_free(c->scratch_dbl2);
    fatia_free(c->hl_cqs);
    fatia_free(c->cycle_entries);
    fatia_free(c->cycle_order);
    fatia_free(c->cycle_lvls);
    fatia_free(c);
}

/* ---- entries by name ---- */

struct ctl_cq *fatia_control_cq_get(const struct fatia_control *c, const char *name)
{
    return fatia_strmap_get(&c->cq_index, name);
}

static int node_alloc(struct fatia_control *c, struct ctl_node *n)
{
    if (c->n_fr_cap) {
        n->slot = fatia_calloc(c->n_fr_cap, sizeof(*n->slot));
        if (!n->slot)
            return -ENOMEM;
        for (size_t i = 0; i < c->n_fr_cap; i++)
            n->slot[i] = (struct ctl_slot){0, AMT_NONE, AMT_NONE, 0, 0, 0};
    }
    n->weight = 1.0;
    return 0;
}

static int cq_ensure(struct fatia_control *c, const char *name, struct ctl_cq **ret)
{
    struct ctl_cq *cq = fatia_control_cq_get(c, name);

    if (cq) {
        *ret = cq;
        return 0;
    }
    cq = fatia_calloc(1, sizeof(*cq));
    if (!cq)
        return -ENOMEM;
    cq->name = fatia_strdup(name);
    if (c->n_res_cap)
        cq->rg_of_res = fatia_reallocarray(NULL, c->n_res_cap, sizeof(int16_t));
    if (!cq->name || (c->n_res_cap && !cq->rg_of_res) || node_alloc(c, &cq->node) < 0)
        goto fail;
    if (cq->rg_of_res)
        memset(cq->rg_of_res, 0xff, c->n_res_cap * sizeof(int16_t));
    cq->node.is_cq = true;
    cq->node.name = cq->name;
    cq->active = false;
    cq->inactive_reason = "ClusterQueueNotFound";
    if (FATIA_VEC_PUSH(&c->cqs, cq) < 0)
        goto fail;
    cq->index = c->cqs.n - 1;
    if (fatia_strmap_put(&c->cq_index, cq->name, cq) < 0) {
        c->cqs.n--;
        goto fail;
    }
    c->tree_dirty = true;
    *ret = cq;
    return 0;
fail:
    cq_free(cq);
    return -ENOMEM;
}

int fatia_control_cohort_ensure(struct fatia_control *c, const char *name, struct ctl_cohort **ret)
{
    struct ctl_cohort *co = fatia_strmap_get(&c->cohort_index, name);

    if (co) {
        *ret = co;
        return 0;
    }
    co = fatia_calloc(1, sizeof(*co));
    if (!co)
        return -ENOMEM;
    co->name = fatia_strdup(name);
    if (!co->name || node_alloc(c, &co->node) < 0 || FATIA_VEC_PUSH(&c->cohorts, co) < 0)
        goto fail;
    co->node.name = co->name;
    if (fatia_strmap_put(&c->cohort_index, co->name, co) < 0) {
        c->cohorts.n--;
        goto fail;
    }
    c->tree_dirty = true;
    *ret = co;
    return 0;
fail:
    fatia_control_cohort_free(co);
    return -ENOMEM;
}

static char *fatia_ctlr_make_key(const char *ns, const char *name)
{
    char *k;

    if (asprintf(&k, "%s/%s", ns ? ns : "", name ? name : "") < 0)
        return NULL;
    return k;
}

static int lq_ensure(struct fatia_control *c, const char *ns, const char *name, struct ctl_lq **ret)
{
    char *key = fatia_ctlr_make_key(ns, name);
    struct ctl_lq *lq;

    if (!key)
        return -ENOMEM;
    lq = fatia_strmap_get(&c->lq_index, key);
    if (lq) {
        free(key);
        *ret = lq;
        return 0;
    }
    lq = fatia_calloc(1, sizeof(*lq));
    if (!lq) {
        free(key);
        return -ENOMEM;
    }
    lq->key = fatia_strdup(key);
    free(key);
    lq->ns = fatia_strdup(ns ? ns : "");
    lq->name = fatia_strdup(name ? name : "");
    lq->weight = 1.0;
    if (c->n_fr_cap) {
        lq->usage = fatia_calloc(c->n_fr_cap, sizeof(*lq->usage));
        lq->reserve = fatia_calloc(c->n_fr_cap, sizeof(*lq->reserve));
    }
    if (c->n_res_cap) {
        lq->consumed = fatia_calloc(c->n_res_cap, sizeof(double));
        lq->penalty = fatia_calloc(c->n_res_cap, sizeof(double));
    }
    if (!lq->key || !lq->ns || !lq->name || (c->n_fr_cap && (!lq->usage || !lq->reserve)) ||
        (c->n_res_cap && (!lq->consumed || !lq->penalty)) || FATIA_VEC_PUSH(&c->lqs, lq) < 0)
        goto fail;
    if (fatia_strmap_put(&c->lq_index, lq->key, lq) < 0) {
        c->lqs.n--;
        goto fail;
    }
    *ret = lq;
    return 0;
fail:
    lq_free(lq);
    return -ENOMEM;
}

/* ---- messages ---- */

void fatia_control_set_msg(struct ctl_wl *w, struct ctl_cq *cq, const char *reason, const char *fmt,
                           ...)
{
    va_list ap;
    char buf[512], *m = NULL;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof(buf)) {
        m = fatia_strdup(buf);
    } else if (n >= 0) {
        char *t = NULL;
        va_start(ap, fmt);
        if (vasprintf(&t, fmt, ap) >= 0) {
            m = fatia_strdup(t);
            free(t);
        }
        va_end(ap);
    }
    fatia_control_wl_msg_text(w, m);
    w->reason = reason;
    w->msg_cq = cq;
}

void fatia_control_wl_msg_clear(struct ctl_wl *w)
{
    fatia_free(w->msg);
    w->msg = NULL;
    fatia_control_ps_results_free(w->msg_ps, w->msg_n_ps);
    w->msg_ps = NULL;
    w->msg_n_ps = 0;
}

void fatia_control_wl_msg_text(struct ctl_wl *w, char *m)
{
    fatia_control_wl_msg_clear(w);
    w->msg = m;
}

void fatia_control_wl_msg_reasons(struct ctl_wl *w, struct ctl_ps_result *ps, size_t n_ps)
{
    fatia_control_wl_msg_clear(w);
    w->msg_ps = ps;
    w->msg_n_ps = n_ps;
}

bool fatia_control_wl_has_msg(const struct ctl_wl *w)
{
    return w->msg || w->msg_ps;
}

const char *fatia_control_wl_msg(const struct fatia_control *c, const struct ctl_wl *w,
                                 struct fatia_buf *b, int *err)
{
    int r;

    *err = 0;
    if (w->msg || !w->msg_ps)
        return w->msg;
    fatia_buf_reset(b);
    /* (wl_update puts it into words before it replaces the pod sets) */
    r = fatia_control_reasons_message(c, w->msg_ps, w->msg_n_ps < w->n_ps ? w->msg_n_ps : w->n_ps,
                                      w->ps, b);
    if (r < 0) {
        *err = r;
        return NULL;
    }
    return b->p;
}

int fatia_control_wl_msg_freeze(const struct fatia_control *c, struct ctl_wl *w)
{
    struct fatia_buf b;
    int err;
    const char *m;
    char *copy;

    if (!w->msg_ps)
        return 0;
    fatia_buf_init(&b, 0);
    m = fatia_control_wl_msg(c, w, &b, &err);
    copy = m ? fatia_strdup(m) : NULL;
    fatia_buf_release(&b);
    if (!copy)
        return -ENOMEM;
    fatia_control_wl_msg_text(w, copy);
    return 0;
}

/* ---- namespaces ---- */

bool fatia_control_ns_matches(const struct fatia_control *c, const struct ctl_cq *cq,
                              const char *ns)
{
    struct ctl_ns *n;
    json_t *labels;
    bool ok;

    if (!cq->ns_sel)
        return false;
    if (fatia_selector_is_empty(cq->ns_sel))
        return true;
    n = fatia_strmap_get(&c->ns_index, ns);
    if (n)
        return fatia_selector_matches(cq->ns_sel, n->labels);
    /* A namespace not given: it has the label every namespace gets from the API server. */
    labels = json_pack("{s:s}", "kubernetes.io/metadata.name", ns);
    ok = labels && fatia_selector_matches(cq->ns_sel, labels);
    json_decref(labels);
    return ok;
}

/* ---- charging ---- */

int fatia_control_admitted_push(struct ctl_cq *cq, struct ctl_wl *w)
{
    if (fatia_vec_reserve_raw((void **)&cq->adm_bits, &cq->adm_bits_cap, cq->admitted.n + 1,
                              sizeof(*cq->adm_bits)) < 0)
        return -ENOMEM;
    if (FATIA_VEC_PUSH(&cq->admitted, w) < 0)
        return -ENOMEM;
    w->adm_idx = cq->admitted.n - 1;
    cq->adm_bits[w->adm_idx] = w->fr_bits;
    return 0;
}

void fatia_control_admitted_note(struct ctl_cq *cq, const struct ctl_wl *w, bool added)
{
    for (size_t i = 0; i < w->n_use; i++) {
        if (added)
            cq->node.slot[w->use[i].fr].users++;
        else
            cq->node.slot[w->use[i].fr].users--;
    }
    if (!cq->min_prio_valid)
        return;
    if (added && w->priority < cq->min_prio)
        cq->min_prio = w->priority;
    else if (!added && w->priority == cq->min_prio)
        cq->min_prio_valid = false;
}

int32_t fatia_control_cq_min_prio(struct ctl_cq *cq)
{
    if (!cq->min_prio_valid) {
        cq->min_prio = INT32_MAX;
        for (size_t i = 0; i < cq->admitted.n; i++)
            if (cq->admitted.v[i]->priority < cq->min_prio)
                cq->min_prio = cq->admitted.v[i]->priority;
        cq->min_prio_valid = true;
    }
    return cq->min_prio;
}

void fatia_control_wl_charge(struct fatia_control *c, struct ctl_wl *w)
{
    struct ctl_cq *cq = w->cq;

    if (fatia_control_admitted_push(cq, w) < 0) {
        /* cannot record it: force a rebuild, which will not count it either; the workload
         * is then reported pending. */
        c->tree_dirty = true;
        return;
    }
    fatia_control_admitted_note(cq, w, true);
    if (!c->tree_dirty)
        fatia_control_add_uses(&cq->node, w->use, w->n_use);
    if (w->lq && w->lq->usage)
        for (size_t i = 0; i < w->n_use; i++)
            w->lq->usage[w->use[i].fr] = amt_add(w->lq->usage[w->use[i].fr], w->use[i].v);
}

void fatia_control_wl_uncharge(struct fatia_control *c, struct ctl_wl *w)
{
    struct ctl_cq *cq = w->cq;
    size_t i = w->adm_idx;

    if (i >= cq->admitted.n || cq->admitted.v[i] != w)
        return;
    cq->admitted.v[i] = cq->admitted.v[--cq->admitted.n];
    cq->adm_bits[i] = cq->adm_bits[cq->admitted.n];
    cq->admitted.v[i]->adm_idx = i;
    fatia_control_admitted_note(cq, w, false);
    if (!c->tree_dirty)
        fatia_control_remove_uses(&cq->node, w->use, w->n_use);
    if (w->lq && w->lq->usage)
        for (size_t j = 0; j < w->n_use; j++)
            w->lq->usage[w->use[j].fr] = amt_sub(w->lq->usage[w->use[j].fr], w->use[j].v);
}

/* ---- queue resolution ---- */

void fatia_control_resolve_queue(struct fatia_control *c, struct ctl_wl *w)
{
    struct ctl_cq *target = NULL;

    if (w->state != CTL_WL_PENDING)
        return;
    if (w->active && w->lq && w->lq->defined && !w->lq->stopped && w->lq->cq &&
        w->lq->cq->defined && !w->bad)
        target = w->lq->cq;
    if (w->q != CTL_Q_NONE && w->cq == target)
        return;
    if (w->q != CTL_Q_NONE)
        fatia_control_queue_remove(c, w);
    w->cq = w->lq && w->lq->defined ? w->lq->cq : NULL;
    if (!target)
        return;
    w->cq = target;
    if (fatia_control_queue_push(c, target, w) < 0)
        c->tree_dirty = true; /* nothing better to do on OOM: it stays unqueued */
}

/* ---- evictions outside and inside cycles ---- */

void fatia_control_wl_set_state(struct fatia_control *c, struct ctl_wl *w, enum ctl_wl_state st)
{
    if (w->state == CTL_WL_EVICTING && st != CTL_WL_EVICTING) {
        if (w->ev_prev)
            w->ev_prev->ev_next = w->ev_next;
        else
            c->evicting = w->ev_next;
        if (w->ev_next)
            w->ev_next->ev_prev = w->ev_prev;
        w->ev_prev = w->ev_next = NULL;
        c->n_evicting--;
    } else if (w->state != CTL_WL_EVICTING && st == CTL_WL_EVICTING) {
        w->ev_prev = NULL;
        w->ev_next = c->evicting;
        if (c->evicting)
            c->evicting->ev_prev = w;
        c->evicting = w;
        c->n_evicting++;
    }
    w->state = st;
}

int fatia_control_evict(struct fatia_control *c, struct ctl_wl *w, const char *reason,
                        const char *msg, const struct ctl_wl *preemptor, bool in_cycle)
{
    if (w->state != CTL_WL_ADMITTED)
        return 0;
    fatia_control_wl_set_state(c, w, CTL_WL_EVICTING);
    w->evicted_cond = true;
    /* until the scheduler looks at it again, its pending message is the eviction's */
    fatia_control_set_msg(w, w->cq, preemptor ? "Preempted" : reason, "%s", msg);
    c->n_evictions++;
    if (preemptor) {
        c->n_preemptions++;
        w->was_preempted = true;
        w->preempted_at = c->now;
    }
    return fatia_control_result_add_eviction(c, w, reason, msg, preemptor, !in_cycle);
}

/* ---- ResourceFlavor ---- */

static int apply_flavor(struct fatia_control *c, const json_t *obj, int64_t now)
{
    const char *name = json_string_value(fatia_json_path(obj, "metadata.name"));
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *taints = json_object_get(spec, "nodeTaints");
    const json_t *tols = json_object_get(spec, "tolerations");
    struct ctl_flavor *f;
    size_t i;
    json_t *t;
    int r;

    if (!name)
        return -EINVAL;
    r = fatia_control_flavor_intern(c, name, &f);
    if (r < 0)
        return r;
    flavor_clear(f);
    f->defined = true;
    if (json_object_size(json_object_get(spec, "nodeLabels")))
        f->labels = json_deep_copy(json_object_get(spec, "nodeLabels"));
    if (json_array_size(taints)) {
        f->taints = fatia_calloc(json_array_size(taints), sizeof(*f->taints));
        if (!f->taints)
            return -ENOMEM;
        json_array_foreach(taints, i, t)
        {
            struct ctl_taint *x = &f->taints[f->n_taints++];
            x->key = fatia_strdup(fatia_json_str(t, "key") ? fatia_json_str(t, "key") : "");
            x->value = fatia_strdup(fatia_json_str(t, "value") ? fatia_json_str(t, "value") : "");
            x->effect =
                fatia_strdup(fatia_json_str(t, "effect") ? fatia_json_str(t, "effect") : "");
            if (!x->key || !x->value || !x->effect)
                return -ENOMEM;
        }
    }
    if (json_array_size(tols)) {
        f->tols = fatia_calloc(json_array_size(tols), sizeof(*f->tols));
        if (!f->tols)
            return -ENOMEM;
        json_array_foreach(tols, i, t)
        {
            if (fatia_control_toleration_parse(t, &f->tols[f->n_tols++]) < 0)
                return -ENOMEM;
        }
    }
    c->tree_dirty = true;
    return fatia_control_queue_requeue_all(c, now);
}

/* ---- ClusterQueue ---- */

static enum ctl_policy policy_of(const char *s)
{
    if (!s || !strcmp(s, "Never"))
        return CTL_NEVER;
    if (!strcmp(s, "LowerPriority"))
        return CTL_LOWER;
    if (!strcmp(s, "LowerOrNewerEqualPriority"))
        return CTL_LOWER_OR_NEWER_EQUAL;
    return CTL_ANY;
}

static void drain_cq(struct fatia_control *c, struct ctl_cq *cq)
{
    for (size_t i = 0; i < cq->admitted.n; i++)
        fatia_control_evict(c, cq->admitted.v[i], "ClusterQueueStopped",
                            "The ClusterQueue is stopped", NULL, false);
}

static int apply_cq(struct fatia_control *c, const json_t *obj, int64_t now,
                    struct fatia_diag *diag)
{
    const char *name = json_string_value(fatia_json_path(obj, "metadata.name"));
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *sel = json_object_get(spec, "namespaceSelector");
    const char *s;
    struct ctl_quota_spec qs;
    struct fatia_selector *ns_sel = NULL;
    struct ctl_cq *cq;
    char why[256];
    int r;

    if (!name)
        return -EINVAL;
    r = cq_ensure(c, name, &cq);
    if (r < 0)
        return r;
    if (spec_unchanged(cq->spec, cq->defined, spec))
        return 0;
    json_decref(cq->spec);
    cq->spec = NULL;
    r = quota_spec_parse(c, json_object_get(spec, "resourceGroups"), &qs);
    if (r < 0)
        return r;
    if (sel && !json_is_null(sel)) {
        r = fatia_selector_from_json(sel, &ns_sel, why, sizeof(why));
        if (r == -ENOMEM) {
            quota_spec_release(&qs);
            return r;
        }
        if (r < 0 && diag)
            fatia_diag_add(diag, FATIA_DIAG_ERROR, NULL, 0, 0, name, "spec.namespaceSelector", "%s",
                           why);
    }
    quota_spec_release(&cq->qs);
    cq->qs = qs;
    /* the CQ's resource-to-group map (rg_of_res may be NULL if no resource existed before) */
    if (!cq->rg_of_res && c->n_res_cap) {
        cq->rg_of_res = fatia_reallocarray(NULL, c->n_res_cap, sizeof(int16_t));
        if (!cq->rg_of_res)
            return -ENOMEM;
    }
    if (cq->rg_of_res)
        memset(cq->rg_of_res, 0xff, c->n_res_cap * sizeof(int16_t));
    cq->covers_pods = false;
    for (size_t g = 0; g < qs.n_rgs; g++) {
        for (size_t k = 0; k < qs.rgs[g].n_res; k++) {
            cq->rg_of_res[qs.rgs[g].res[k]] = (int16_t)g;
            if (!strcmp(fatia_control_res_name(c, qs.rgs[g].res[k]), "pods")) {
                cq->covers_pods = true;
                cq->pods_res = qs.rgs[g].res[k];
            }
        }
    }
    fatia_free(cq->cohort_name);
    s = fatia_json_str(spec, "cohortName");
    cq->cohort_name = s && *s ? fatia_strdup(s) : NULL;
    s = fatia_json_str(spec, "queueingStrategy");
    cq->strategy = s && !strcmp(s, "StrictFIFO") ? CTL_STRICT : CTL_BEST_EFFORT;
    fatia_selector_free(cq->ns_sel);
    cq->ns_sel = ns_sel;
    s = fatia_json_str(json_object_get(spec, "flavorFungibility"), "whenCanBorrow");
    cq->when_borrow = s && !strcmp(s, "TryNextFlavor") ? CTL_TRY_NEXT : CTL_MAY_STOP;
    s = fatia_json_str(json_object_get(spec, "flavorFungibility"), "whenCanPreempt");
    cq->when_preempt = s && !strcmp(s, "MayStopSearch") ? CTL_MAY_STOP : CTL_TRY_NEXT;
    s = fatia_json_str(json_object_get(spec, "flavorFungibility"), "preference");
    cq->pref_preemption_over_borrowing = s && !strcmp(s, "PreemptionOverBorrowing");
    cq->within =
        policy_of(fatia_json_str(json_object_get(spec, "preemption"), "withinClusterQueue"));
    cq->reclaim =
        policy_of(fatia_json_str(json_object_get(spec, "preemption"), "reclaimWithinCohort"));
    s = json_string_value(fatia_json_path(spec, "preemption.borrowWithinCohort.policy"));
    cq->borrow_within = s && !strcmp(s, "LowerPriority");
    {
        int64_t t = 0;
        cq->has_threshold = fatia_json_int(fatia_json_path(spec, "preemption.borrowWithinCohort"),
                                           "maxPriorityThreshold", &t);
        cq->threshold = (int32_t)t;
    }
    s = fatia_json_str(spec, "stopPolicy");
    {
        bool was_drain = cq->drain && cq->defined;
        cq->stopped = s && strcmp(s, "None");
        cq->drain = s && !strcmp(s, "HoldAndDrain");
        cq->defined = true;
        if (cq->drain && !was_drain)
            drain_cq(c, cq);
    }
    r = fatia_control_cq_parse_checks(cq, spec);
    if (r < 0)
        return r;
    s = json_string_value(fatia_json_path(spec, "admissionScope.admissionMode"));
    cq->afs = s && !strcmp(s, "UsageBasedAdmissionFairSharing");
    cq->node.weight = weight_of(spec);
    c->tree_dirty = true;
    /* LocalQueues that name it, and their workloads */
    for (size_t i = 0; i < c->lqs.n; i++) {
        struct ctl_lq *lq = c->lqs.v[i];
        if (lq->defined && lq->cq_name && !strcmp(lq->cq_name, name) && lq->cq != cq) {
            lq->cq = cq;
            if (FATIA_VEC_PUSH(&cq->lqs, lq) < 0)
                return -ENOMEM;
        }
        if (lq->cq == cq)
            for (size_t j = 0; j < lq->wls.n; j++)
                fatia_control_resolve_queue(c, lq->wls.v[j]);
    }
    r = spec_keep(&cq->spec, spec);
    if (r < 0)
        return r;
    return fatia_control_queue_requeue_all(c, now);
}

/* The Active condition of a ClusterQueue (Kueue clusterqueue.go updateQueueStatus). */
void fatia_control_cq_update_active(struct fatia_control *c, struct ctl_cq *cq)
{
    bool active = true;
    char buf[512];

    fatia_free(cq->inactive_msg);
    cq->inactive_msg = NULL;
    cq->inactive_reason = "Ready";
    if (!cq->defined) {
        active = false;
        cq->inactive_reason = "ClusterQueueNotFound";
        snprintf(buf, sizeof(buf), "ClusterQueue %s doesn't exist", cq->name);
    } else if (cq->stopped) {
        active = false;
        cq->inactive_reason = "Stopped";
        snprintf(buf, sizeof(buf), "Can't admit new workloads: ClusterQueue is stopped");
    } else if (cq->cohort && cq->cohort->in_cycle) {
        active = false;
        cq->inactive_reason = "CohortCycle";
        snprintf(buf, sizeof(buf), "Can't admit new workloads: cohort %s is part of a cycle",
                 cq->cohort->name);
    } else if (fatia_control_cq_checks_block(c, cq, &cq->inactive_reason, buf, sizeof(buf))) {
        active = false;
    } else {
        for (size_t i = 0; i < cq->qs.n_rgs && active; i++) {
            for (size_t j = 0; j < cq->qs.rgs[i].n_flavors; j++) {
                struct ctl_flavor *f = c->flavors.v[cq->qs.rgs[i].flavors[j]];
                if (!f->defined) {
                    active = false;
                    cq->inactive_reason = "FlavorNotFound";
                    snprintf(buf, sizeof(buf),
                             "Can't admit new workloads: references missing ResourceFlavor(s): "
                             "%s",
                             f->name);
                    break;
                }
            }
        }
    }
    if (!active)
        cq->inactive_msg = fatia_strdup(buf);
    cq->active = active;
}

/* ---- Cohort ---- */

static int apply_cohort(struct fatia_control *c, const json_t *obj, int64_t now)
{
    const char *name = json_string_value(fatia_json_path(obj, "metadata.name"));
    const json_t *spec = json_object_get(obj, "spec");
    const char *parent = fatia_json_str(spec, "parentName");
    struct ctl_quota_spec qs;
    struct ctl_cohort *co;
    int r;

    if (!name)
        return -EINVAL;
    r = fatia_control_cohort_ensure(c, name, &co);
    if (r < 0)
        return r;
    if (spec_unchanged(co->spec, co->defined, spec))
        return 0;
    json_decref(co->spec);
    co->spec = NULL;
    r = quota_spec_parse(c, json_object_get(spec, "resourceGroups"), &qs);
    if (r < 0)
        return r;
    quota_spec_release(&co->qs);
    co->qs = qs;
    fatia_free(co->parent_name);
    co->parent_name = parent && *parent ? fatia_strdup(parent) : NULL;
    co->defined = true;
    co->node.weight = weight_of(spec);
    c->tree_dirty = true;
    r = spec_keep(&co->spec, spec);
    if (r < 0)
        return r;
    return fatia_control_queue_requeue_all(c, now);
}

/* ---- LocalQueue ---- */

static void drain_lq(struct fatia_control *c, struct ctl_lq *lq)
{
    for (size_t i = 0; i < lq->wls.n; i++)
        fatia_control_evict(c, lq->wls.v[i], "LocalQueueStopped", "The LocalQueue is stopped", NULL,
                            false);
}

static int apply_lq(struct fatia_control *c, const json_t *obj, int64_t now)
{
    const char *ns = json_string_value(fatia_json_path(obj, "metadata.namespace"));
    const char *name = json_string_value(fatia_json_path(obj, "metadata.name"));
    const json_t *spec = json_object_get(obj, "spec");
    const char *cqn = fatia_json_str(spec, "clusterQueue");
    const char *stop = fatia_json_str(spec, "stopPolicy");
    struct ctl_lq *lq;
    struct ctl_cq *cq = NULL;
    bool was_drain;
    int r;

    if (!name || !cqn)
        return -EINVAL;
    r = lq_ensure(c, ns, name, &lq);
    if (r < 0)
        return r;
    r = cq_ensure(c, cqn, &cq);
    if (r < 0)
        return r;
    if (lq->cq && lq->cq != cq) {
        for (size_t i = 0; i < lq->cq->lqs.n; i++)
            if (lq->cq->lqs.v[i] == lq) {
                lq->cq->lqs.v[i] = lq->cq->lqs.v[--lq->cq->lqs.n];
                break;
            }
    }
    if (lq->cq != cq && FATIA_VEC_PUSH(&cq->lqs, lq) < 0)
        return -ENOMEM;
    lq->cq = cq;
    fatia_free(lq->cq_name);
    lq->cq_name = fatia_strdup(cqn);
    if (!lq->cq_name)
        return -ENOMEM;
    was_drain = lq->drain && lq->defined;
    lq->stopped = stop && strcmp(stop, "None");
    lq->drain = stop && !strcmp(stop, "HoldAndDrain");
    lq->weight = weight_of(spec);
    lq->defined = true;
    if (lq->drain && !was_drain)
        drain_lq(c, lq);
    for (size_t i = 0; i < lq->wls.n; i++)
        fatia_control_resolve_queue(c, lq->wls.v[i]);
    (void)now;
    return 0;
}

/* ---- Namespace, WorkloadPriorityClass ---- */

static int apply_ns(struct fatia_control *c, const json_t *obj, int64_t now)
{
    const char *name = json_string_value(fatia_json_path(obj, "metadata.name"));
    const json_t *labels = fatia_json_path(obj, "metadata.labels");
    struct ctl_ns *n;

    if (!name)
        return -EINVAL;
    n = fatia_strmap_get(&c->ns_index, name);
    if (!n) {
        n = fatia_calloc(1, sizeof(*n));
        if (!n)
            return -ENOMEM;
        n->name = fatia_strdup(name);
        if (!n->name || FATIA_VEC_PUSH(&c->nss, n) < 0) {
            fatia_free(n->name);
            fatia_free(n);
            return -ENOMEM;
        }
        if (fatia_strmap_put(&c->ns_index, n->name, n) < 0) {
            c->nss.n--;
            fatia_free(n->name);
            fatia_free(n);
            return -ENOMEM;
        }
    }
    json_decref(n->labels);
    n->labels = json_is_object(labels) ? json_deep_copy(labels) : json_object();
    if (!n->labels ||
        json_object_set_new(n->labels, "kubernetes.io/metadata.name", json_string(name)) < 0)
        return -ENOMEM;
    return fatia_control_queue_requeue_all(c, now);
}

static int apply_wpc(struct fatia_control *c, const json_t *obj)
{
    const char *name = json_string_value(fatia_json_path(obj, "metadata.name"));
    int64_t v = 0;
    struct ctl_wpc *p;

    if (!name)
        return -EINVAL;
    fatia_json_int(obj, "value", &v);
    p = fatia_strmap_get(&c->wpc_index, name);
    if (!p) {
        p = fatia_calloc(1, sizeof(*p));
        if (!p)
            return -ENOMEM;
        p->name = fatia_strdup(name);
        if (!p->name || FATIA_VEC_PUSH(&c->wpcs, p) < 0) {
            fatia_free(p->name);
            fatia_free(p);
            return -ENOMEM;
        }
        if (fatia_strmap_put(&c->wpc_index, p->name, p) < 0) {
            c->wpcs.n--;
            fatia_free(p->name);
            fatia_free(p);
            return -ENOMEM;
        }
    }
    p->value = (int32_t)v;
    return 0;
}

/* ---- SchedulerConfig ---- */

static int apply_config(struct fatia_control *c, const json_t *obj)
{
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *fs = json_object_get(spec, "fairSharing");
    const json_t *afs = json_object_get(spec, "admissionFairSharing");
    const json_t *res = json_object_get(spec, "resources");
    struct ctl_config cfg = {0};
    const char *s;
    size_t i;
    json_t *v;
    int64_t usec;

    cfg.fair_sharing = fs && fatia_json_bool(fs, "enable", true);
    cfg.n_strategies = 2;
    cfg.strategies[0] = 0;
    cfg.strategies[1] = 1;
    if (json_array_size(json_object_get(fs, "preemptionStrategies"))) {
        cfg.n_strategies = 0;
        json_array_foreach(json_object_get(fs, "preemptionStrategies"), i, v)
        {
            if (cfg.n_strategies < 2)
                cfg.strategies[cfg.n_strategies++] =
                    !strcmp(json_string_value(v), "LessThanInitialShare") ? 1 : 0;
        }
    }
    cfg.partial_admission = fatia_json_bool(spec, "partialAdmission", true);
    s = fatia_json_str(res, "quotaCheckStrategy");
    cfg.ignore_undeclared = s && !strcmp(s, "IgnoreUndeclared");
    if (afs) {
        cfg.afs = true;
        if (fatia_parse_duration_usec(fatia_json_str(afs, "usageHalfLifeTime"), &usec) == 0)
            cfg.afs_half_life = usec;
        cfg.afs_interval = 5 * 60 * INT64_C(1000000);
        if (fatia_json_str(afs, "usageSamplingInterval") &&
            fatia_parse_duration_usec(fatia_json_str(afs, "usageSamplingInterval"), &usec) == 0)
            cfg.afs_interval = usec;
    }
    if (json_array_size(json_object_get(res, "excludeResourcePrefixes"))) {
        const json_t *l = json_object_get(res, "excludeResourcePrefixes");
        cfg.exclude_prefixes = fatia_calloc(json_array_size(l), sizeof(char *));
        if (!cfg.exclude_prefixes)
            goto oom;
        json_array_foreach(l, i, v)
        {
            cfg.exclude_prefixes[cfg.n_exclude] = fatia_strdup(json_string_value(v));
            if (!cfg.exclude_prefixes[cfg.n_exclude++])
                goto oom;
        }
    }
    if (json_array_size(json_object_get(res, "transformations"))) {
        const json_t *l = json_object_get(res, "transformations");
        cfg.tr = fatia_calloc(json_array_size(l), sizeof(*cfg.tr));
        if (!cfg.tr)
            goto oom;
        json_array_foreach(l, i, v)
        {
            struct ctl_transform *t = &cfg.tr[cfg.n_tr++];
            const json_t *outs = json_object_get(v, "outputs");
            const char *k;
            json_t *q;
            s = fatia_json_str(v, "strategy");
            t->replace = s && !strcmp(s, "Replace");
            if (fatia_control_res_intern(c, fatia_json_str(v, "input"), &t->input) < 0)
                goto oom;
            if (json_object_size(outs)) {
                t->out = fatia_calloc(json_object_size(outs), sizeof(*t->out));
                if (!t->out)
                    goto oom;
            }
            json_object_foreach((json_t *)outs, k, q)
            {
                struct ctl_req *o = &t->out[t->n_out++];
                if (fatia_control_res_intern(c, k, &o->res) < 0)
                    goto oom;
                o->per_pod = fatia_control_q_milli(q);
            }
        }
    }
    /* weights last: interning above may have grown n_res_cap */
    if (afs) {
        const char *k;
        json_t *w;
        cfg.afs_weight = fatia_calloc(c->n_res_cap ? c->n_res_cap : 1, sizeof(double));
        if (!cfg.afs_weight)
            goto oom;
        cfg.n_afs_weight = c->n_res_cap ? c->n_res_cap : 1;
        for (i = 0; i < cfg.n_afs_weight; i++)
            cfg.afs_weight[i] = 1.0;
        json_object_foreach(json_object_get(afs, "resourceWeights"), k, w)
        {
            uint32_t r;
            if (fatia_control_res_intern(c, k, &r) < 0)
                goto oom;
            if (r < cfg.n_afs_weight)
                cfg.afs_weight[r] = json_number_value(w);
        }
    }
    config_release(&c->cfg);
    c->cfg = cfg;
    return 0;
oom:
    config_release(&cfg);
    return -ENOMEM;
}

/* ---- Workload (its decoding: workload.c) ---- */

static int wl_attach_lq(struct fatia_control *c, struct ctl_wl *w)
{
    struct ctl_lq *lq;
    int r = lq_ensure(c, w->ns, w->queue_name ? w->queue_name : "", &lq);

    if (r < 0)
        return r;
    if (FATIA_VEC_PUSH(&lq->wls, w) < 0)
        return -ENOMEM;
    w->lq_idx = lq->wls.n - 1;
    w->lq = lq;
    return 0;
}

static void wl_detach_lq(struct ctl_wl *w)
{
    struct ctl_lq *lq = w->lq;

    if (!lq)
        return;
    FATIA_ASSERT(w->lq_idx < lq->wls.n && lq->wls.v[w->lq_idx] == w);
    lq->wls.v[w->lq_idx] = lq->wls.v[--lq->wls.n];
    lq->wls.v[w->lq_idx]->lq_idx = w->lq_idx;
    w->lq = NULL;
}

static void wl_remove(struct fatia_control *c, struct ctl_wl *w, int64_t now)
{
    bool held = w->state != CTL_WL_PENDING;
    struct ctl_cq *cq = w->cq;

    if (w->q != CTL_Q_NONE)
        fatia_control_queue_remove(c, w);
    if (held) {
        fatia_control_wl_uncharge(c, w);
        fatia_control_wl_set_state(c, w, CTL_WL_PENDING);
        if (cq && cq->defined)
            fatia_control_queue_requeue_tree(c, cq, now);
    }
    wl_detach_lq(w);
    fatia_strmap_del(&c->wl_index, w->key);
    FATIA_ASSERT(w->wl_idx < c->wls.n && c->wls.v[w->wl_idx] == w);
    c->wls.v[w->wl_idx] = c->wls.v[--c->wls.n];
    c->wls.v[w->wl_idx]->wl_idx = w->wl_idx;
    fatia_control_wl_free(w);
}

/* A Workload's tree into a new struct (not yet in the engine): names, priority (old's when the
 * tree names none: a class change does not move a known workload), queue-order time, pod sets.
 * A pod set that cannot be decoded marks it bad (a warning in diag) rather than failing. 0 or
 * -ENOMEM. */
static int wl_decode(struct fatia_control *c, const json_t *obj, const char *key,
                     const struct ctl_wl *old, int64_t now, struct fatia_diag *diag,
                     struct ctl_wl **ret)
{
    const char *ns = json_string_value(fatia_json_path(obj, "metadata.namespace"));
    const char *name = json_string_value(fatia_json_path(obj, "metadata.name"));
    const char *uid = json_string_value(fatia_json_path(obj, "metadata.uid"));
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *ev = find_condition(obj, "Evicted");
    const char *qn = fatia_json_str(spec, "queueName");
    struct ctl_wl *w;
    char why[256] = "";
    int64_t prio;
    int r;

    w = fatia_calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->key = fatia_strdup(key);
    w->ns = fatia_strdup(ns ? ns : "");
    w->name = fatia_strdup(name);
    w->uid = fatia_strdup(uid ? uid : "");
    w->job_uid = fatia_strdup(
        fatia_json_str(fatia_json_path(obj, "metadata.labels"), "kueue.x-k8s.io/job-uid")
            ? fatia_json_str(fatia_json_path(obj, "metadata.labels"), "kueue.x-k8s.io/job-uid")
            : "");
    w->queue_name = fatia_strdup(qn ? qn : "");
    if (!w->key || !w->ns || !w->name || !w->uid || !w->job_uid || !w->queue_name) {
        fatia_control_wl_free(w);
        return -ENOMEM;
    }
    fatia_control_wl_order_init(w);
    if (fatia_json_int(spec, "priority", &prio)) {
        w->priority = (int32_t)prio;
    } else if (old) {
        w->priority = old->priority;
    } else {
        const char *pc = json_string_value(fatia_json_path(spec, "priorityClassRef.name"));
        const char *kind = json_string_value(fatia_json_path(spec, "priorityClassRef.kind"));
        struct ctl_wpc *p = pc && kind && !strcmp(kind, "WorkloadPriorityClass")
                                ? fatia_strmap_get(&c->wpc_index, pc)
                                : NULL;
        w->priority = p ? p->value : 0;
    }
    w->active = fatia_json_bool(spec, "active", true);
    w->created =
        parse_time(json_string_value(fatia_json_path(obj, "metadata.creationTimestamp")), now);
    if (ev) {
        const char *reason = fatia_json_str(ev, "reason");
        if (reason && (!strcmp(reason, "PodsReadyTimeout") || !strcmp(reason, "AdmissionCheck")))
            w->created = parse_time(fatia_json_str(ev, "lastTransitionTime"), w->created);
    }
    w->requeue_at =
        parse_time(json_string_value(fatia_json_path(obj, "status.requeueState.requeueAt")), 0);
    if (fatia_control_wl_parse_checks(w, obj) < 0) {
        fatia_control_wl_free(w);
        return -ENOMEM;
    }
    r = fatia_control_wl_parse_podsets(c, json_object_get(spec, "podSets"), &w->ps, &w->n_ps, why,
                                       sizeof(why));
    if (r == -ENOMEM) {
        fatia_control_wl_free(w);
        return r;
    }
    if (r < 0) {
        w->bad = true;
        w->bad_msg = fatia_strdup(why);
        if (diag)
            fatia_diag_add(diag, FATIA_DIAG_WARNING, NULL, 0, 0, w->key, "spec.podSets",
                           "%s, the workload cannot be admitted", why);
        w->ps = NULL;
        w->n_ps = 0;
    }
    w->shape_hash = fatia_control_wl_shape_hash(w, json_object_get(spec, "podSets"));
    *ret = w;
    return 0;
}

/* An update of a known workload old from its decoded tree w (consumed): the engine's own
 * admission state stays; spec-derived fields change, and a pending workload is queued again
 * when what decides its place changed. 0 or -ENOMEM. */
static int wl_update(struct fatia_control *c, struct ctl_wl *old, struct ctl_wl *w)
{
    bool requeue = false;
    int r;

    /* a pending message names the pod sets it was tried with: in words before they change */
    if (old->state == CTL_WL_PENDING && (r = fatia_control_wl_msg_freeze(c, old)) < 0) {
        fatia_control_wl_free(w);
        return r;
    }
    if (old->priority != w->priority && old->state != CTL_WL_PENDING && old->cq)
        old->cq->min_prio_valid = false;
    old->priority = w->priority;
    fatia_control_wl_take_checks(old, w);
    if (old->rejected) {
        /* deactivated by a Rejected check: inactive until the driver's spec.active=false shows */
        if (!w->active)
            old->rejected = false;
        w->active = false;
    }
    if (old->state == CTL_WL_PENDING) {
        fatia_control_podsets_free(old->ps, old->n_ps);
        old->ps = w->ps;
        old->n_ps = w->n_ps;
        w->ps = NULL;
        w->n_ps = 0;
        old->shape_hash = w->shape_hash;
        old->bad = w->bad;
        fatia_free(old->bad_msg);
        old->bad_msg = w->bad_msg;
        w->bad_msg = NULL;
        old->created = w->created;
        old->requeue_at = w->requeue_at;
        fatia_control_wl_drop_preemptor(old);
        requeue = true;
    }
    if (old->active != w->active) {
        old->active = w->active;
        if (!w->active && old->state == CTL_WL_ADMITTED)
            fatia_control_evict(c, old, "InactiveWorkload", "The workload is deactivated", NULL,
                                false);
        requeue = true;
    }
    r = fatia_control_wl_checks_react(c, old);
    if (r < 0) {
        fatia_control_wl_free(w);
        return r;
    }
    if (strcmp(old->queue_name, w->queue_name) && old->state == CTL_WL_PENDING) {
        char *t = old->queue_name;
        old->queue_name = w->queue_name;
        w->queue_name = t;
        wl_detach_lq(old);
        r = wl_attach_lq(c, old);
        if (r < 0) {
            fatia_control_wl_free(w);
            return r;
        }
        requeue = true;
    }
    fatia_control_wl_free(w);
    if (requeue && old->state == CTL_WL_PENDING) {
        if (old->q != CTL_Q_NONE)
            fatia_control_queue_remove(c, old);
        fatia_control_resolve_queue(c, old);
    }
    return 0;
}

/* A new workload w (decoded from obj) into the engine: indexed, attached to its LocalQueue,
 * and either admitted as its status says (charged; evicted at once when it is inactive or its
 * queue is stopped) or pending. 0 or -ENOMEM (w is removed again). */
static int wl_insert(struct fatia_control *c, struct ctl_wl *w, const json_t *obj, int64_t now)
{
    const json_t *qr = find_condition(obj, "QuotaReserved");
    const json_t *ev = find_condition(obj, "Evicted");
    const json_t *adm = fatia_json_path(obj, "status.admission");
    int r;

    if (FATIA_VEC_PUSH(&c->wls, w) < 0) {
        fatia_control_wl_free(w);
        return -ENOMEM;
    }
    w->wl_idx = c->wls.n - 1;
    if (fatia_strmap_put(&c->wl_index, w->key, w) < 0) {
        c->wls.n--;
        fatia_control_wl_free(w);
        return -ENOMEM;
    }
    r = wl_attach_lq(c, w);
    if (r < 0)
        goto fail;
    if (adm && condition_true(qr) && !w->bad) {
        const char *cqn = fatia_json_str(adm, "clusterQueue");
        struct ctl_cq *cq;
        r = cq_ensure(c, cqn ? cqn : "", &cq);
        if (r < 0)
            goto fail;
        r = fatia_control_wl_parse_admission(c, w, adm);
        if (r < 0)
            goto fail;
        w->cq = cq;
        w->qr_time = parse_time(fatia_json_str(qr, "lastTransitionTime"), now);
        w->state = CTL_WL_ADMITTED;
        if (condition_true(ev)) {
            fatia_control_wl_set_state(c, w, CTL_WL_EVICTING);
            w->evicted_cond = true;
        }
        fatia_control_wl_charge(c, w);
        if (!w->active && w->state == CTL_WL_ADMITTED)
            fatia_control_evict(c, w, "InactiveWorkload", "The workload is deactivated", NULL,
                                false);
        else if (w->state == CTL_WL_ADMITTED && cq->drain)
            fatia_control_evict(c, w, "ClusterQueueStopped", "The ClusterQueue is stopped", NULL,
                                false);
        else if (w->state == CTL_WL_ADMITTED && w->lq->drain)
            fatia_control_evict(c, w, "LocalQueueStopped", "The LocalQueue is stopped", NULL,
                                false);
        else if (w->state == CTL_WL_ADMITTED && (r = fatia_control_wl_checks_react(c, w)) < 0)
            goto fail;
        return 0;
    }
    w->state = CTL_WL_PENDING;
    fatia_control_resolve_queue(c, w);
    return 0;
fail:
    wl_remove(c, w, now);
    return r;
}

static int apply_wl(struct fatia_control *c, const json_t *obj, int64_t now,
                    struct fatia_diag *diag)
{
    const char *ns = json_string_value(fatia_json_path(obj, "metadata.namespace"));
    const char *name = json_string_value(fatia_json_path(obj, "metadata.name"));
    struct ctl_wl *w, *old;
    char *key;
    int r;

    if (!name)
        return -EINVAL;
    key = fatia_ctlr_make_key(ns, name);
    if (!key)
        return -ENOMEM;
    old = fatia_strmap_get(&c->wl_index, key);
    if (condition_true(find_condition(obj, "Finished"))) {
        free(key);
        if (old)
            wl_remove(c, old, now);
        return 0;
    }
    r = wl_decode(c, obj, key, old, now, diag, &w);
    free(key);
    if (r < 0)
        return r;
    return old ? wl_update(c, old, w) : wl_insert(c, w, obj, now);
}

/* ---- public entry points ---- */

int fatia_control_apply(struct fatia_control *c, const json_t *obj, int64_t now,
                        struct fatia_diag *diag)
{
    const char *kind = fatia_json_str(obj, "kind");
    const char *api = fatia_json_str(obj, "apiVersion");

    c->result_valid = false;
    if (!kind || !api)
        return -EINVAL;
    if (!strcmp(api, "v1")) {
        if (!strcmp(kind, "Namespace"))
            return apply_ns(c, obj, now);
        return 0;
    }
    if (!strcmp(api, "fatia.dev/v1alpha1")) {
        if (!strcmp(kind, "SchedulerConfig"))
            return apply_config(c, obj);
        return 0;
    }
    if (strncmp(api, "kueue.x-k8s.io/", 15))
        return 0;
    if (!strcmp(kind, "ResourceFlavor"))
        return apply_flavor(c, obj, now);
    if (!strcmp(kind, "ClusterQueue"))
        return apply_cq(c, obj, now, diag);
    if (!strcmp(kind, "Cohort"))
        return apply_cohort(c, obj, now);
    if (!strcmp(kind, "LocalQueue"))
        return apply_lq(c, obj, now);
    if (!strcmp(kind, "WorkloadPriorityClass"))
        return apply_wpc(c, obj);
    if (!strcmp(kind, "AdmissionCheck"))
        return fatia_control_apply_check(c, obj, now);
    if (!strcmp(kind, "Workload"))
        return apply_wl(c, obj, now, diag);
    return 0;
}

int fatia_control_delete(struct fatia_control *c, const char *kind, const char *ns,
                         const char *name, int64_t now)
{
    c->result_valid = false;
    if (!strcmp(kind, "Workload")) {
        char *key = fatia_ctlr_make_key(ns, name);
        struct ctl_wl *w = key ? fatia_strmap_get(&c->wl_index, key) : NULL;
        free(key);
        if (!w)
            return -ENOENT;
        wl_remove(c, w, now);
        return 0;
    }
    if (!strcmp(kind, "AdmissionCheck"))
        return fatia_control_delete_check(c, name, now);
    if (!strcmp(kind, "ResourceFlavor")) {
        struct ctl_flavor *f = fatia_strmap_get(&c->flavor_index, name);
        if (!f || !f->defined)
            return -ENOENT;
        flavor_clear(f);
        f->defined = false;
        c->tree_dirty = true;
        return 0;
    }
    if (!strcmp(kind, "ClusterQueue")) {
        struct ctl_cq *cq = fatia_control_cq_get(c, name);
        if (!cq || !cq->defined)
            return -ENOENT;
        cq->defined = false;
        quota_spec_release(&cq->qs);
        fatia_free(cq->cohort_name);
        cq->cohort_name = NULL;
        c->tree_dirty = true;
        /* pending workloads leave its queue; admitted ones keep their (now uncounted) quota
         * until they finish, as Kueue keeps them admitted */
        for (size_t i = 0; i < c->wls.n; i++)
            if (c->wls.v[i]->state == CTL_WL_PENDING && c->wls.v[i]->cq == cq &&
                c->wls.v[i]->q != CTL_Q_NONE)
                fatia_control_queue_remove(c, c->wls.v[i]);
        return 0;
    }
    if (!strcmp(kind, "Cohort")) {
        struct ctl_cohort *co = fatia_strmap_get(&c->cohort_index, name);
        if (!co || !co->defined)
            return -ENOENT;
        co->defined = false;
        quota_spec_release(&co->qs);
        fatia_free(co->parent_name);
        co->parent_name = NULL;
        co->node.weight = 1.0;
        c->tree_dirty = true;
        return fatia_control_queue_requeue_all(c, now);
    }
    if (!strcmp(kind, "LocalQueue")) {
        char *key = fatia_ctlr_make_key(ns, name);
        struct ctl_lq *lq = key ? fatia_strmap_get(&c->lq_index, key) : NULL;
        free(key);
        if (!lq || !lq->defined)
            return -ENOENT;
        lq->defined = false;
        for (size_t i = 0; i < lq->wls.n; i++) {
            struct ctl_wl *w = lq->wls.v[i];
            if (w->state == CTL_WL_PENDING && w->q != CTL_Q_NONE)
                fatia_control_queue_remove(c, w);
        }
        return 0;
    }
    if (!strcmp(kind, "Namespace")) {
        struct ctl_ns *n = fatia_strmap_get(&c->ns_index, name);
        if (!n)
            return -ENOENT;
        fatia_strmap_del(&c->ns_index, n->name);
        for (size_t i = 0; i < c->nss.n; i++)
            if (c->nss.v[i] == n)
                c->nss.v[i] = c->nss.v[--c->nss.n];
        fatia_free(n->name);
        json_decref(n->labels);
        fatia_free(n);
        return 0;
    }
    if (!strcmp(kind, "WorkloadPriorityClass")) {
        struct ctl_wpc *p = fatia_strmap_get(&c->wpc_index, name);
        if (!p)
            return -ENOENT;
        fatia_strmap_del(&c->wpc_index, p->name);
        for (size_t i = 0; i < c->wpcs.n; i++)
            if (c->wpcs.v[i] == p)
                c->wpcs.v[i] = c->wpcs.v[--c->wpcs.n];
        fatia_free(p->name);
        fatia_free(p);
        return 0;
    }
    if (!strcmp(kind, "SchedulerConfig")) {
        config_release(&c->cfg);
        c->cfg.partial_admission = true;
        c->cfg.n_strategies = 2;
        c->cfg.strategies[1] = 1;
        return 0;
    }
    return -ENOENT;
}

static struct ctl_wl *wl_get(const struct fatia_control *c, const char *ns, const char *name)
{
    char *key = fatia_ctlr_make_key(ns, name);
    struct ctl_wl *w = key ? fatia_strmap_get(&c->wl_index, key) : NULL;

    free(key);
    return w;
}

int fatia_control_workload_finished(struct fatia_control *c, const char *ns, const char *name,
                                    int64_t now)
{
    struct ctl_wl *w = wl_get(c, ns, name);

    c->result_valid = false;
    if (!w)
        return -ENOENT;
    wl_remove(c, w, now);
    return 0;
}

static int wl_released(struct fatia_control *c, struct ctl_wl *w, int64_t now)
{
    struct ctl_cq *cq;

    c->result_valid = false;
    if (w->state != CTL_WL_EVICTING)
        return -EINVAL;
    cq = w->cq;
    fatia_control_wl_uncharge(c, w);
    fatia_control_wl_drop_admission(w);
    fatia_control_wl_set_state(c, w, CTL_WL_PENDING);
    w->evicted_cond = false;
    w->borrowing = false;
    w->qr_time = 0;
    w->sticky = false;
    w->q = CTL_Q_NONE;
    w->cq = NULL;
    fatia_control_wl_checks_reset(w); /* Kueue resets the check states on eviction */
    /* the freed capacity first makes the parked workloads of the tree retryable (and clears the
     * equivalence records), then the released workload queues like a new arrival */
    if (cq && cq->defined)
        fatia_control_queue_requeue_tree(c, cq, now);
    fatia_control_resolve_queue(c, w);
    return 0;
}

int fatia_control_workload_released(struct fatia_control *c, const char *ns, const char *name,
                                    int64_t now)
{
    struct ctl_wl *w = wl_get(c, ns, name);

    c->result_valid = false;
    if (!w)
        return -ENOENT;
    return wl_released(c, w, now);
}

int fatia_control_release_all(struct fatia_control *c, int64_t now)
{
    int n = 0;

    c->result_valid = false;
    while (c->evicting) {
        int r = wl_released(c, c->evicting, now);
        if (r < 0)
            return r;
        n++;
    }
    return n;
}

int fatia_control_workload_state(const struct fatia_control *c, const char *ns, const char *name)
{
    const struct ctl_wl *w = wl_get(c, ns, name);

    if (!w)
        return -ENOENT;
    switch (w->state) {
    case CTL_WL_PENDING:
        return FATIA_CONTROL_PENDING;
    case CTL_WL_ADMITTED:
        return FATIA_CONTROL_ADMITTED;
    case CTL_WL_EVICTING:
        return FATIA_CONTROL_EVICTING;
    }
    return -ENOENT;
}
