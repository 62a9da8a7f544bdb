/*
 * demand/place_match.c: may a pod go to a node at all? (kube-scheduler's NodeName, NodeAffinity
 * and TaintToleration filters, with their reasons.)
 *
 * In order: spec.nodeName ("didn't match the requested node name"); the nodeSelector, the admitted
 * flavors' node labels and the required node affinity ("didn't match Pod's node affinity/
 * selector"); every NoSchedule and NoExecute taint tolerated ("had untolerated taint {k: v}";
 * PreferNoSchedule is a preference and ignored). Affinity operators as upstream: In, NotIn
 * (also true when the label is absent), Exists, DoesNotExist, Gt and Lt (integers; false when the
 * label is absent or not an integer); terms are ORed, expressions of a term ANDed; a term with no
 * expression matches nothing; matchFields reads metadata.name only.
 *
 * Not implemented (documented in docs/demand.md): preferred affinity, pod (anti-)affinity and
 * topology spread constraints: they are scoring or multi-pod rules the policies here replace.
 */
#include "base/compat.h"

#include "base/json.h"
#include "base/str.h"
#include "demand/place_internal.h"

static bool tolerates(const struct pl_tol *t, const struct pl_taint *taint)
{
    if (*t->effect && strcmp(t->effect, taint->effect))
        return false;
    if (!*t->key) /* empty key with Exists tolerates everything */
        return t->exists;
    if (strcmp(t->key, taint->key))
        return false;
    return t->exists || !strcmp(t->value, taint->value);
}

static bool expr_matches(const struct pl_expr *e, const struct pl_node *n)
{
    const char *v;
    int64_t have, want;

    if (e->field) {
        bool in = false;
        for (size_t i = 0; i < e->n_values; i++)
            in |= !strcmp(e->values[i], n->name);
        return e->op == PL_OP_IN ? in : !in;
    }
    v = fatia_json_str(n->labels, e->key);
    switch (e->op) {
    case PL_OP_IN:
    case PL_OP_NOT_IN: {
        bool in = false;
        for (size_t i = 0; v && i < e->n_values; i++)
            in |= !strcmp(e->values[i], v);
        return e->op == PL_OP_IN ? in : !in;
    }
    case PL_OP_EXISTS:
        return v != NULL;
    case PL_OP_DOES_NOT_EXIST:
        return v == NULL;
    case PL_OP_GT:
    case PL_OP_LT:
        if (!v || e->n_values != 1 || fatia_parse_i64(v, &have) < 0 ||
            fatia_parse_i64(e->values[0], &want) < 0)
            return false;
        return e->op == PL_OP_GT ? have > want : have < want;
    }
    return false;
}

static bool affinity_matches(const struct fatia_place_pod *pod, const struct pl_node *n)
{
    if (!pod->n_terms)
        return true;
    for (size_t t = 0; t < pod->n_terms; t++) {
        const struct pl_term *term = &pod->terms[t];
        bool all = term->n > 0;
        for (size_t i = 0; all && i < term->n; i++)
            all = expr_matches(&term->e[i], n);
        if (all)
            return true;
    }
    return false;
}

const char *fatia_pl_node_mismatch(const struct fatia_place_state *st,
                                   const struct fatia_place_pod *pod, const struct pl_node *node)
{
    (void)st;
    if (pod->node_name && strcmp(pod->node_name, node->name))
        return "didn't match the requested node name";
    for (size_t i = 0; i < pod->n_sel; i++) {
        const char *v = fatia_json_str(node->labels, pod->sel_keys[i]);
        if (!v || strcmp(v, pod->sel_values[i]))
            return "didn't match Pod's node affinity/selector";
    }
    if (!affinity_matches(pod, node))
        return "didn't match Pod's node affinity/selector";
    for (size_t i = 0; i < node->n_taints; i++) {
        const struct pl_taint *t = &node->taints[i];
        bool ok = false;
        if (strcmp(t->effect, "NoSchedule") && strcmp(t->effect, "NoExecute"))
            continue;
        for (size_t j = 0; !ok && j < pod->n_tols; j++)
            ok = tolerates(&pod->tols[j], t);
        if (!ok)
            return t->desc;
    }
    return NULL;
}
