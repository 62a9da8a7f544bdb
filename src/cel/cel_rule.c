/*
 * cel/cel_rule.c: CEL rules of CustomResourceDefinitions (x-kubernetes-validations; issue 17).
 *
 * Model: the same language, checker, evaluator and cost accounting as device selectors, with
 * the environment apiextensions-apiserver gives a rule: `self` (the value of the schema node the
 * rule sits on) and `oldSelf` (its value before the update, in transition rules), both dyn; no
 * `device`. A JSON value becomes a CEL value once per evaluation, in the evaluation's arena:
 * objects -> maps with string keys (field selection and has() work on them), arrays -> lists,
 * integers -> int, reals -> double, strings borrowed from the JSON (no copy), null -> null. The
 * conversion is charged a tenth of a unit per element, like any list or map the evaluation
 * builds, so a huge self counts against the cost limit.
 *
 * Rejected: typing self from the node's schema (cel-go's DeclType), which upstream does to catch
 * misspelt fields at CRD creation: dyn gives the same answers on valid objects, and reports a
 * misspelt field at evaluation ("no such key") instead.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "cel/cel_int.h"

#define MAX_JSON_DEPTH 64

int fatia_cel_compile_rule(const char *expr, size_t expr_n, bool want_string,
                           struct fatia_cel_program **ret, bool *ret_uses_old_self, char *why,
                           size_t why_n)
{
    struct fatia_cel_program *p;
    int r;

    if (why && why_n)
        why[0] = '\0';
    if (expr_n > FATIA_CEL_MAX_BYTES)
        return CEL_ERROR_AT(why, why_n, 1, 1, -FATIA_E_LIMIT, "expression longer than %d bytes",
                            FATIA_CEL_MAX_BYTES);
    p = fatia_calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->text = fatia_malloc(expr_n + 1);
    if (!p->text) {
        fatia_free(p);
        return -ENOMEM;
    }
    if (expr_n)
        memcpy(p->text, expr, expr_n);
    p->text[expr_n] = '\0';
    p->text_n = expr_n;
    p->rule = true;
    p->want_string = want_string;
    r = fatia_cel_parse(p, why, why_n);
    if (r == 0)
        r = fatia_cel_check(p, why, why_n);
    if (r < 0) {
        fatia_cel_program_free(p);
        return r;
    }
    if (ret_uses_old_self)
        *ret_uses_old_self = p->uses_old_self;
    *ret = p;
    return 0;
}

static int from_json(struct cel_eval *ev, const json_t *j, int depth, struct cel_val *ret)
{
    size_t i, n;
    int r;

    if (depth > MAX_JSON_DEPTH)
        return -FATIA_E_LIMIT;
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        struct cel_map *m;
        const char *key;
        json_t *v;
        n = json_object_size(j);
        r = fatia_cel_charge_tenth(ev, n);
        if (r < 0)
            return r;
        m = fatia_cel_alloc(ev, sizeof(*m) + 2 * n * sizeof(m->kv[0]));
        if (!m)
            return -ENOMEM;
        m->n = n;
        i = 0;
        json_object_foreach((json_t *)j, key, v)
        {
            m->kv[2 * i] = cel_str(key, strlen(key));
            r = from_json(ev, v, depth + 1, &m->kv[2 * i + 1]);
            if (r < 0)
                return r;
            i++;
        }
        *ret = (struct cel_val){.k = VK_MAP};
        ret->m = m;
        return 0;
    }
    case JSON_ARRAY: {
        struct cel_list *l;
        json_t *v;
        n = json_array_size(j);
        r = fatia_cel_charge_tenth(ev, n);
        if (r < 0)
            return r;
        l = fatia_cel_alloc(ev, sizeof(*l) + n * sizeof(l->v[0]));
        if (!l)
            return -ENOMEM;
        l->n = n;
        json_array_foreach(j, i, v)
        {
            r = from_json(ev, v, depth + 1, &l->v[i]);
            if (r < 0)
                return r;
        }
        *ret = (struct cel_val){.k = VK_LIST};
        ret->l = l;
        return 0;
    }
    case JSON_STRING:
        *ret = cel_str(json_string_value(j), json_string_length(j));
        return 0;
    case JSON_INTEGER:
        *ret = cel_int(json_integer_value(j));
        return 0;
    case JSON_REAL:
        *ret = (struct cel_val){.k = VK_DOUBLE};
        ret->d = json_real_value(j);
        return 0;
    case JSON_TRUE:
    case JSON_FALSE:
        *ret = cel_bool(json_is_true(j));
        return 0;
    case JSON_NULL:
        *ret = (struct cel_val){.k = VK_NULL};
        return 0;
    }
    return -EINVAL;
}

int fatia_cel_eval_rule(const struct fatia_cel_program *p, const json_t *self,
                        const json_t *old_self, uint64_t cost_limit, bool *ret_ok, char *msg,
                        size_t msg_n, uint64_t *ret_cost, char *why, size_t why_n)
{
    struct cel_eval ev = {.prog = p,
                          .limit = cost_limit ? cost_limit : FATIA_CEL_COST_LIMIT,
                          .why = why,
                          .why_n = why_n};
    struct cel_val slots[CEL_MAX_DEPTH], v;
    int r;

    if (why && why_n)
        why[0] = '\0';
    if (p->n_slots > (int)FATIA_ARRAY_SIZE(slots)) {
        ev.slots = fatia_calloc((size_t)p->n_slots, sizeof(*ev.slots));
        if (!ev.slots)
            return -ENOMEM;
    } else {
        ev.slots = slots;
    }
    ev.old_self = (struct cel_val){.k = VK_NULL};
    r = from_json(&ev, self, 0, &ev.self);
    if (r == 0 && old_self)
        r = from_json(&ev, old_self, 0, &ev.old_self);
    if (r == -FATIA_E_LIMIT)
        r = fatia_cel_runtime_error(&ev, p->root, "the value is nested too deeply");
    if (r == 0)
        r = fatia_cel_eval_root(&ev, &v);
    if (r == 0 && p->want_string) {
        if (v.k != VK_STRING)
            r = fatia_cel_runtime_error(&ev, p->root, "the expression returned %s, not string",
                                        fatia_cel_vk_name(&v));
        else if (msg && msg_n)
            snprintf(msg, msg_n, "%.*s", (int)FATIA_MIN(v.s.n, (size_t)INT32_MAX), v.s.p);
    } else if (r == 0) {
        if (v.k != VK_BOOL)
            r = fatia_cel_runtime_error(&ev, p->root, "the expression returned %s, not bool",
                                        fatia_cel_vk_name(&v));
        else if (ret_ok)
            *ret_ok = v.b;
    }
    if (ret_cost)
        *ret_cost = ev.cost;
    fatia_cel_eval_release(&ev);
    if (ev.slots != slots)
        fatia_free(ev.slots);
    return r;
}
