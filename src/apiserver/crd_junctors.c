/*
 * apiserver/crd_junctors.c: the value validations inside a CRD schema's anyOf, allOf, oneOf and
 * not, as kube-openapi's SchemaValidator applies them (pkg/validation/validate/schema_props.go).
 *
 * Model: a structural schema keeps the junctors' sub-schemas out of the structure (no types but
 * under x-kubernetes-int-or-string, no defaults), so the compiled schema tables never see them;
 * crd_rules.c calls this file on the JSON node of every schema node that has a junctor, with the
 * value there. A sub-schema is checked by its value validations (type, enum, format, pattern,
 * minimum/maximum and their exclusive forms, multipleOf, minLength/maxLength,
 * minItems/maxItems, minProperties/maxProperties, required), its properties and items, and its
 * own junctors, recursively. The verdicts, as schema_props.go:
 *   - allOf: every sub-schema's errors, and when one failed "P in body must validate all the
 *     schemas (allOf)" (". None validated" when none did);
 *   - anyOf: none valid: "P in body must validate at least one schema (anyOf)" and the errors of
 *     the best failure (the sub-schema with the fewest errors, the first on ties);
 *   - oneOf: none valid: "... must validate one and only one schema (oneOf). Found none valid"
 *     and the best failure's errors; more than one: "... Found N valid alternatives";
 *   - not: valid: "P in body must not validate the schema (not)".
 * The composite messages go out as field.Invalid with an empty value, as apiextensions'
 * kubeOpenAPIResultToFieldErrors does for errors without a value.
 *
 * Rejected: translating sub-schemas into schema tables (model/crd_schema.c): they hold only
 * value validations, which a small interpreter over the JSON checks directly; patterns compile
 * per check (junctors with patterns are rare and the cost is bounded by the schema's size).
 */
#include "base/compat.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "apiserver/internal.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/json.h"
#include "cel/cel_regex.h"

#define MAX_DEPTH 32

struct jerr {
    char *sub, *msg;
};

struct jlist {
    struct jerr *v;
    size_t n, cap;
};

static void jl_add(struct jlist *l, const char *sub, const char *fmt, ...) FATIA_PRINTF(3, 4);

static void jl_add(struct jlist *l, const char *sub, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        struct jerr *v = fatia_realloc(l->v, cap * sizeof(*v));
        if (!v)
            return;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n].sub = fatia_strdup(sub);
    l->v[l->n].msg = fatia_strdup(msg);
    if (l->v[l->n].sub && l->v[l->n].msg)
        l->n++;
    else {
        fatia_free(l->v[l->n].sub);
        fatia_free(l->v[l->n].msg);
    }
}

static void jl_release(struct jlist *l)
{
    for (size_t i = 0; i < l->n; i++) {
        fatia_free(l->v[i].sub);
        fatia_free(l->v[i].msg);
    }
    fatia_free(l->v);
    memset(l, 0, sizeof(*l));
}

static void jl_move(struct jlist *dst, struct jlist *src)
{
    for (size_t i = 0; i < src->n; i++)
        jl_add(dst, src->v[i].sub, "%s", src->v[i].msg);
    jl_release(src);
}

static const char *type_of(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
        return "integer";
    case JSON_REAL:
        return "number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "boolean";
    default:
        return "null";
    }
}

static bool type_ok(const char *t, const json_t *v)
{
    if (!strcmp(t, "number"))
        return json_is_number(v);
    if (!strcmp(t, "integer"))
        return json_is_integer(v) ||
               (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)));
    return !strcmp(t, type_of(v));
}

static void num_text(const json_t *v, char *buf, size_t n)
{
    if (json_is_integer(v))
        snprintf(buf, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else
        snprintf(buf, n, "%g", json_number_value(v));
}

static void check(const json_t *js, const json_t *v, const char *path, struct jlist *e, int depth);

static void check_number(const json_t *js, const json_t *v, const char *p, struct jlist *e)
{
    const json_t *lo = json_object_get(js, "minimum"), *hi = json_object_get(js, "maximum");
    const json_t *mult = json_object_get(js, "multipleOf");
    bool xlo = json_is_true(json_object_get(js, "exclusiveMinimum"));
    bool xhi = json_is_true(json_object_get(js, "exclusiveMaximum"));
    double d = json_number_value(v);
    char vt[64], bt[64];

    num_text(v, vt, sizeof(vt));
    if (json_is_number(lo) && (xlo ? d <= json_number_value(lo) : d < json_number_value(lo))) {
        num_text(lo, bt, sizeof(bt));
        jl_add(e, p, "Invalid value: %s: %s in body should be greater than %s%s", vt, p,
               xlo ? "" : "or equal to ", bt);
    }
    if (json_is_number(hi) && (xhi ? d >= json_number_value(hi) : d > json_number_value(hi))) {
        num_text(hi, bt, sizeof(bt));
        jl_add(e, p, "Invalid value: %s: %s in body should be less than %s%s", vt, p,
               xhi ? "" : "or equal to ", bt);
    }
    if (json_is_number(mult) && json_number_value(mult) > 0) {
        double q = d / json_number_value(mult);
        if (q != floor(q)) {
            num_text(mult, bt, sizeof(bt));
            jl_add(e, p, "Invalid value: %s: %s in body should be a multiple of %s", vt, p, bt);
        }
    }
}

static void check_string(const json_t *js, const json_t *v, const char *p, struct jlist *e)
{
    const char *s = json_string_value(v), *pattern = fatia_json_str(js, "pattern");
    const char *fmt = fatia_json_str(js, "format");
    size_t len = 0;
    int64_t n;

    for (const unsigned char *c = (const unsigned char *)s; *c; c++)
        len += (*c & 0xc0) != 0x80; /* characters, as Go's utf8.RuneCountInString */
    if (fatia_json_int(js, "maxLength", &n) && (int64_t)len > n)
        jl_add(e, p, "Too long: may not be more than %" PRId64 " byte%s", n, n == 1 ? "" : "s");
    if (fatia_json_int(js, "minLength", &n) && (int64_t)len < n)
        jl_add(e, p, "Invalid value: \"%s\": %s in body should be at least %" PRId64 " chars long",
               s, p, n);
    if (pattern) {
        struct fatia_cel_regex *re = NULL;
        char why[128];
        bool match = true;
        if (fatia_cel_regex_compile(pattern, strlen(pattern), &re, why, sizeof(why)) == 0 &&
            fatia_cel_regex_search(re, s, json_string_length(v), &match) == 0 && !match)
            jl_add(e, p, "Invalid value: \"%s\": %s in body should match '%s'", s, p, pattern);
        fatia_cel_regex_free(re);
    }
    if (fmt && fatia_api_crd_format(fmt, s) == 0)
        jl_add(e, p, "Invalid value: \"%s\": %s in body must be of type %s: \"%s\"", s, p, fmt, s);
}

static void junctors(const json_t *js, const json_t *v, const char *p, struct jlist *e, int depth)
{
    const json_t *all = json_object_get(js, "allOf"), *any = json_object_get(js, "anyOf");
    const json_t *one = json_object_get(js, "oneOf"), *not = json_object_get(js, "not");
    const char *shown = *p ? p : ".";
    size_t i;
    json_t *sub;

    if (json_array_size(all)) {
        size_t ok = 0;
        json_array_foreach(all, i, sub)
        {
            struct jlist r = {0};
            check(sub, v, p, &r, depth + 1);
            ok += r.n == 0;
            jl_move(e, &r);
        }
        if (ok != json_array_size(all))
            jl_add(e, p, "Invalid value: \"\": %s in body must validate all the schemas (allOf)%s",
                   shown, ok ? "" : ". None validated");
    }
    for (int k = 0; k < 2; k++) {
        const json_t *list = k ? one : any;
        struct jlist best = {0};
        size_t ok = 0;
        bool have_best = false, best_typed = false;
        if (!json_array_size(list))
            continue;
        json_array_foreach(list, i, sub)
        {
            struct jlist r = {0};
            check(sub, v, p, &r, depth + 1);
            /* the best failure: its type matched (kube-openapi's higher MatchCount), then the
             * fewest errors, then the first */
            bool typed = !fatia_json_str(sub, "type") || type_ok(fatia_json_str(sub, "type"), v);
            if (!r.n) {
                ok++;
            } else if (!have_best || (typed && !best_typed) ||
                       (typed == best_typed && r.n < best.n)) {
                jl_release(&best);
                best = r;
                have_best = true;
                best_typed = typed;
                continue;
            }
            jl_release(&r);
        }
        if (!k && !ok) {
            jl_add(e, p,
                   "Invalid value: \"\": %s in body must validate at least one schema (anyOf)",
                   shown);
            jl_move(e, &best);
        } else if (k && ok != 1) {
            if (!ok)
                jl_add(e, p,
                       "Invalid value: \"\": %s in body must validate one and only one schema "
                       "(oneOf). Found none valid",
                       shown);
            else
                jl_add(e, p,
                       "Invalid value: \"\": %s in body must validate one and only one schema "
                       "(oneOf). Found %zu valid alternatives",
                       shown, ok);
            if (!ok)
                jl_move(e, &best);
        }
        jl_release(&best);
    }
    if (json_is_object(not )) {
        struct jlist r = {0};
        check(not, v, p, &r, depth + 1);
        if (!r.n)
            jl_add(e, p, "Invalid value: \"\": %s in body must not validate the schema (not)",
                   shown);
        jl_release(&r);
    }
}

/* Every value validation of js on v (at path p) into e. */
static void check(const json_t *js, const json_t *v, const char *p, struct jlist *e, int depth)
{
    const char *type = fatia_json_str(js, "type");
    const json_t *en = json_object_get(js, "enum"), *props = json_object_get(js, "properties");
    const json_t *items = json_object_get(js, "items"), *req = json_object_get(js, "required");
    int64_t n;
    size_t i;
    const char *key;
    json_t *m;
    char sub[1024];

    if (!json_is_object(js) || !v || depth > MAX_DEPTH)
        return;
    if (type && !type_ok(type, v)) {
        jl_add(e, p, "Invalid value: \"%s\": %s in body must be of type %s: \"%s\"", type_of(v),
               *p ? p : ".", type, type_of(v));
        return;
    }
    if (json_array_size(en)) {
        bool found = false;
        json_array_foreach(en, i, m) found = found || json_equal(m, v);
        if (!found) {
            struct fatia_buf list = FATIA_BUF_INIT;
            char *vt = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
            json_array_foreach(en, i, m)
            {
                char *t = json_dumps(m, JSON_ENCODE_ANY | JSON_COMPACT);
                (void)fatia_buf_printf(&list, "%s%s", i ? ", " : "", t ? t : "");
                free(t);
            }
            jl_add(e, p, "Unsupported value: %s: supported values: %s", vt ? vt : "",
                   list.p ? list.p : "");
            free(vt);
            fatia_buf_release(&list);
        }
    }
    if (json_is_number(v))
        check_number(js, v, p, e);
    if (json_is_string(v))
        check_string(js, v, p, e);
    if (json_is_array(v)) {
        size_t len = json_array_size(v);
        if (fatia_json_int(js, "maxItems", &n) && (int64_t)len > n)
            jl_add(e, p, "Too many: %zu: must have at most %" PRId64 " items", len, n);
        if (fatia_json_int(js, "minItems", &n) && (int64_t)len < n)
            jl_add(e, p, "Invalid value: %zu: %s in body should have at least %" PRId64 " items",
                   len, p, n);
        if (json_is_object(items))
            json_array_foreach(v, i, m)
            {
                snprintf(sub, sizeof(sub), "%s[%zu]", p, i);
                check(items, m, sub, e, depth + 1);
            }
    }
    if (json_is_object(v)) {
        size_t len = json_object_size(v);
        if (fatia_json_int(js, "maxProperties", &n) && (int64_t)len > n)
            jl_add(e, p, "Too many: %zu: must have at most %" PRId64 " items", len, n);
        if (fatia_json_int(js, "minProperties", &n) && (int64_t)len < n)
            jl_add(e, p,
                   "Invalid value: %zu: %s in body should have at least %" PRId64 " properties",
                   len, *p ? p : ".", n);
        json_array_foreach(req, i, m)
        {
            if (!json_is_string(m) || json_object_get(v, json_string_value(m)))
                continue;
            snprintf(sub, sizeof(sub), "%s%s%s", p, *p ? "." : "", json_string_value(m));
            jl_add(e, sub, "Required value");
        }
        json_object_foreach((json_t *)props, key, m)
        {
            const json_t *mv = json_object_get(v, key);
            if (!mv)
                continue;
            snprintf(sub, sizeof(sub), "%s%s%s", p, *p ? "." : "", key);
            check(m, mv, sub, e, depth + 1);
        }
    }
    junctors(js, v, p, e, depth);
}

bool fatia_api_crd_has_junctors(const json_t *js)
{
    return json_array_size(json_object_get(js, "allOf")) ||
           json_array_size(json_object_get(js, "anyOf")) ||
           json_array_size(json_object_get(js, "oneOf")) ||
           json_is_object(json_object_get(js, "not"));
}

size_t fatia_api_crd_junctors(const json_t *js, const json_t *v, const char *path,
                              void (*emit)(void *arg, const char *path, const char *msg), void *arg)
{
    struct jlist e = {0};
    size_t n;

    junctors(js, v, path ? path : "", &e, 0);
    for (size_t i = 0; i < e.n; i++)
        emit(arg, e.v[i].sub, e.v[i].msg);
    n = e.n;
    jl_release(&e);
    return n;
}
