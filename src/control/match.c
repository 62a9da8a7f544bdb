/*
 * control/match.c: may a pod set use a ResourceFlavor? (Kueue flavorassigner.go
 * checkFlavorForPodSets and flavorSelector, reference/kueue.md §1.1.)
 *
 * Two checks, in this order, each giving Kueue's reason text:
 *   1. every NoSchedule / NoExecute taint of the flavor is tolerated by the pod's tolerations or
 *      the flavor's own spec.tolerations ("untolerated taint {key value effect <nil>} in flavor
 *      F", the Go %s of a corev1.Taint value); PreferNoSchedule is ignored;
 *   2. the pod's nodeSelector and required node affinity, reduced to the label keys this flavor
 *      defines, match a fake node that carries the flavor's nodeLabels ("flavor F doesn't match
 *      node affinity"). A required term that loses all its expressions drops the whole affinity
 *      (terms are ORed, so an emptied term matches any flavor); matchFields are dropped.
 * Operators: In, NotIn, Exists, DoesNotExist, Gt, Lt (integers), as kube-scheduler.
 *
 * The pod template's affinity is not typed by the model layer (it is kept as is), so parsing is
 * defensive: a malformed affinity is reported once, when the workload is applied, and makes the
 * workload inadmissible instead of being guessed at.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/str.h"
#include "control/internal.h"

enum sel_op {
    OP_IN,
    OP_NOT_IN,
    OP_EXISTS,
    OP_DOES_NOT_EXIST,
    OP_GT,
    OP_LT
};

struct expr {
    char *key;
    enum sel_op op;
    char **values;
    size_t n_values;
};

struct term {
    struct expr *e;
    size_t n;
};

struct fatia_ctlr_placement {
    struct ctl_toleration *tols;
    size_t n_tols;
    char **sel_keys, **sel_values; /* nodeSelector */
    size_t n_sel;
    struct term *terms; /* required node affinity; NULL/0 = none */
    size_t n_terms;
};

static void free_expr(struct expr *e)
{
    fatia_free(e->key);
    for (size_t i = 0; i < e->n_values; i++)
        fatia_free(e->values[i]);
    fatia_free(e->values);
}

void fatia_control_placement_free(struct fatia_ctlr_placement *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n_tols; i++) {
        fatia_free(p->tols[i].key);
        fatia_free(p->tols[i].value);
        fatia_free(p->tols[i].effect);
    }
    fatia_free(p->tols);
    for (size_t i = 0; i < p->n_sel; i++) {
        fatia_free(p->sel_keys[i]);
        fatia_free(p->sel_values[i]);
    }
    fatia_free(p->sel_keys);
    fatia_free(p->sel_values);
    for (size_t i = 0; i < p->n_terms; i++) {
        for (size_t j = 0; j < p->terms[i].n; j++)
            free_expr(&p->terms[i].e[j]);
        fatia_free(p->terms[i].e);
    }
    fatia_free(p->terms);
    fatia_free(p);
}

static char *dup_or_empty(const char *s)
{
    return fatia_strdup(s ? s : "");
}

int fatia_control_toleration_parse(const json_t *t, struct ctl_toleration *ret)
{
    const char *op = fatia_json_str(t, "operator");

    ret->key = dup_or_empty(fatia_json_str(t, "key"));
    ret->value = dup_or_empty(fatia_json_str(t, "value"));
    ret->effect = dup_or_empty(fatia_json_str(t, "effect"));
    ret->exists = op && !strcmp(op, "Exists");
    if (!ret->key || !ret->value || !ret->effect)
        return -ENOMEM;
    return 0;
}

static int parse_expr(const json_t *j, struct expr *e, char *why, size_t n)
{
    const char *key = fatia_json_str(j, "key"), *op = fatia_json_str(j, "operator");
    const json_t *vals = json_object_get(j, "values");
    size_t i;
    json_t *v;

    if (!key || !op) {
        snprintf(why, n, "node affinity requirement needs a key and an operator");
        return -EINVAL;
    }
    if (!strcmp(op, "In"))
        e->op = OP_IN;
    else if (!strcmp(op, "NotIn"))
        e->op = OP_NOT_IN;
    else if (!strcmp(op, "Exists"))
        e->op = OP_EXISTS;
    else if (!strcmp(op, "DoesNotExist"))
        e->op = OP_DOES_NOT_EXIST;
    else if (!strcmp(op, "Gt"))
        e->op = OP_GT;
    else if (!strcmp(op, "Lt"))
        e->op = OP_LT;
    else {
        snprintf(why, n,
                 "node affinity operator '%s' is not one of In, NotIn, Exists, "
                 "DoesNotExist, Gt, Lt",
                 op);
        return -EINVAL;
    }
    if (vals && !json_is_array(vals)) {
        snprintf(why, n, "node affinity values of '%s' must be a list", key);
        return -EINVAL;
    }
    e->key = fatia_strdup(key);
    if (!e->key)
        return -ENOMEM;
    if (json_array_size(vals)) {
        e->values = fatia_calloc(json_array_size(vals), sizeof(*e->values));
        if (!e->values)
            return -ENOMEM;
    }
    json_array_foreach(vals, i, v)
    {
        if (!json_is_string(v)) {
            snprintf(why, n, "node affinity values of '%s' must be strings", key);
            return -EINVAL;
        }
        e->values[e->n_values] = fatia_strdup(json_string_value(v));
        if (!e->values[e->n_values])
            return -ENOMEM;
        e->n_values++;
    }
    if ((e->op == OP_GT || e->op == OP_LT) && e->n_values != 1) {
        snprintf(why, n, "node affinity operator %s needs exactly one value", op);
        return -EINVAL;
    }
    return 0;
}

int fatia_control_placement_parse(const json_t *spec, struct fatia_ctlr_placement **ret, char *why,
                                  size_t n)
{
    const json_t *tols = json_object_get(spec, "tolerations");
    const json_t *sel = json_object_get(spec, "nodeSelector");
    const json_t *terms = fatia_json_path(
        spec, "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution");
    struct fatia_ctlr_placement *p;
    const char *k;
    json_t *v;
    size_t i;
    int r = -ENOMEM;

    *ret = NULL;
    if (json_array_size(tols) == 0 && json_object_size(sel) == 0 && !terms)
        return 0;
    p = fatia_calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    if (json_array_size(tols)) {
        p->tols = fatia_calloc(json_array_size(tols), sizeof(*p->tols));
        if (!p->tols)
            goto fail;
        json_array_foreach(tols, i, v)
        {
            if (fatia_control_toleration_parse(v, &p->tols[p->n_tols++]) < 0)
                goto fail;
        }
    }
    if (json_object_size(sel)) {
        p->sel_keys = fatia_calloc(json_object_size(sel), sizeof(char *));
        p->sel_values = fatia_calloc(json_object_size(sel), sizeof(char *));
        if (!p->sel_keys || !p->sel_values)
            goto fail;
        json_object_foreach((json_t *)sel, k, v)
        {
            p->sel_keys[p->n_sel] = fatia_strdup(k);
            p->sel_values[p->n_sel] = dup_or_empty(json_string_value(v));
            p->n_sel++;
            if (!p->sel_keys[p->n_sel - 1] || !p->sel_values[p->n_sel - 1])
                goto fail;
        }
    }
    if (terms) {
        const json_t *list = json_object_get(terms, "nodeSelectorTerms");
        if (!json_is_object(terms) || !json_is_array(list)) {
            snprintf(why, n,
                     "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuring"
                     "Execution.nodeSelectorTerms must be a list");
            r = -EINVAL;
            goto fail;
        }
        if (json_array_size(list)) {
            p->terms = fatia_calloc(json_array_size(list), sizeof(*p->terms));
            if (!p->terms)
                goto fail;
        }
        json_array_foreach(list, i, v)
        {
            const json_t *exprs = json_object_get(v, "matchExpressions");
            struct term *t = &p->terms[p->n_terms++];
            size_t j;
            json_t *e;
            if (exprs && !json_is_array(exprs)) {
                snprintf(why, n, "node affinity matchExpressions must be a list");
                r = -EINVAL;
                goto fail;
            }
            if (json_array_size(exprs)) {
                t->e = fatia_calloc(json_array_size(exprs), sizeof(*t->e));
                if (!t->e)
                    goto fail;
            }
            json_array_foreach(exprs, j, e)
            {
                r = parse_expr(e, &t->e[t->n++], why, n);
                if (r < 0)
                    goto fail;
            }
        }
    }
    *ret = p;
    return 0;
fail:
    fatia_control_placement_free(p);
    return r;
}

static bool tolerates(const struct ctl_toleration *t, const struct ctl_taint *taint)
{
    if (*t->effect && strcmp(t->effect, taint->effect))
        return false;
    if (*t->key && strcmp(t->key, taint->key))
        return false;
    if (t->exists)
        return true;
    return !strcmp(t->value, taint->value);
}

static bool has_key(const json_t *labels, const char *key)
{
    return json_object_get(labels, key) != NULL;
}

static bool expr_matches(const struct expr *e, const json_t *labels)
{
    const char *v = fatia_json_str(labels, e->key);
    int64_t a, b;

    switch (e->op) {
    case OP_IN:
    case OP_NOT_IN: {
        bool in = false;
        for (size_t i = 0; v && i < e->n_values; i++)
            in |= !strcmp(v, e->values[i]);
        return e->op == OP_IN ? in : !in;
    }
    case OP_EXISTS:
        return v != NULL;
    case OP_DOES_NOT_EXIST:
        return v == NULL;
    case OP_GT:
    case OP_LT:
        if (!v || fatia_parse_i64(v, &a) < 0 || fatia_parse_i64(e->values[0], &b) < 0)
            return false;
        return e->op == OP_GT ? a > b : a < b;
    }
    return false;
}

const char *fatia_control_flavor_mismatch(const struct ctl_podset *ps, const struct ctl_flavor *f,
                                          char *buf, size_t n)
{
    const struct fatia_ctlr_placement *p = ps->place;

    if (!f->defined) {
        snprintf(buf, n, "flavor %s not found", f->name);
        return buf;
    }
    for (size_t i = 0; i < f->n_taints; i++) {
        const struct ctl_taint *t = &f->taints[i];
        bool ok = false;
        if (strcmp(t->effect, "NoSchedule") && strcmp(t->effect, "NoExecute"))
            continue;
        for (size_t j = 0; p && !ok && j < p->n_tols; j++)
            ok = tolerates(&p->tols[j], t);
        for (size_t j = 0; !ok && j < f->n_tols; j++)
            ok = tolerates(&f->tols[j], t);
        if (!ok) {
            snprintf(buf, n, "untolerated taint {%s %s %s <nil>} in flavor %s", t->key, t->value,
                     t->effect, f->name);
            return buf;
        }
    }
    if (!p || !json_object_size(f->labels))
        goto match_if_no_keys;
    for (size_t i = 0; i < p->n_sel; i++) {
        const char *v;
        if (!has_key(f->labels, p->sel_keys[i]))
            continue;
        v = fatia_json_str(f->labels, p->sel_keys[i]);
        if (!v || strcmp(v, p->sel_values[i]))
            goto mismatch;
    }
    if (p->n_terms) {
        bool dropped = false, any = false;
        for (size_t i = 0; i < p->n_terms && !dropped; i++) {
            size_t kept = 0;
            for (size_t j = 0; j < p->terms[i].n; j++)
                kept += has_key(f->labels, p->terms[i].e[j].key);
            if (!kept)
                dropped = true;
        }
        if (!dropped) {
            for (size_t i = 0; i < p->n_terms && !any; i++) {
                bool all = true;
                for (size_t j = 0; j < p->terms[i].n && all; j++) {
                    const struct expr *e = &p->terms[i].e[j];
                    if (has_key(f->labels, e->key))
                        all = expr_matches(e, f->labels);
                }
                any = all;
            }
            if (!any)
                goto mismatch;
        }
    }
    return NULL;
match_if_no_keys:
    /* A flavor without node labels keeps no selector key: everything matches. An empty list
     * of required terms (nodeSelectorTerms: []) matches no node in kube-scheduler; Kueue keeps
     * no term either and so matches. */
    return NULL;
mismatch:
    snprintf(buf, n, "flavor %s doesn't match node affinity", f->name);
    return buf;
}
