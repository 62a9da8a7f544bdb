/*
 * model/crd_schema.c: a CRD's structural openAPIV3Schema as the model's schema tables.
 *
 * Model: apiextensions-apiserver validates custom objects with the CRD's OpenAPI schema, prunes
 * the members it does not declare and applies its defaults. fatia has one walker for all of that
 * (schema.c) over struct fatia_schema trees, so a CRD's schema is translated once, when the CRD
 * is written, into such a tree; every write of a custom object then costs what a compiled kind's
 * does. The translation (the node's JSON is kept alive by the kind, names and descriptions point
 * into it; every table is allocated in the kind's arena):
 *   type string/integer/number/boolean/array/object -> STRING/INT/NUMBER/BOOL/ARRAY/OBJECT
 *   object with properties                          -> OBJECT, fields (required, default)
 *   object with additionalProperties: {schema}      -> MAP of that schema
 *   object without either                           -> OBJECT with no fields (all pruned)
 *   x-kubernetes-preserve-unknown-fields            -> OBJECT | OPEN (no type: ANY)
 *   x-kubernetes-int-or-string                      -> INT_OR_STRING
 *   x-kubernetes-embedded-resource                  -> apiVersion, kind, metadata added
 *   x-kubernetes-list-type: map + list-map-keys     -> list_key (the first key; SSA and the
 *                                                      duplicate check use it)
 *   nullable, enum (strings), minLength/maxLength, minimum/maximum (integers), minItems/
 *   maxItems, minProperties/maxProperties (maps), format: date-time -> the same flags
 * The root's apiVersion, kind and metadata are the server's (ObjectMeta), as upstream where a
 * CRD's metadata schema may only restrict name.
 *
 * pattern and x-kubernetes-validations are kept on the node (fatia_schema.crd) for the API
 * server, which checks them with src/cel (apiserver/crd_rules.c).
 *
 * A node with a format (but date-time), exclusiveMinimum/Maximum, number bounds, multipleOf or
 * anyOf/allOf/oneOf/not keeps its JSON there too (crd.node) for the same checks (the junctors'
 * value validations: apiserver/crd_junctors.c). uniqueItems: true is refused, as
 * upstream.
 *
 * Invariant: a translated tree accepts no value the CRD's schema refuses for the features
 * above, with the API server's checks, anyOf/allOf/oneOf/not value validations included. An array item's or map value's default replaces a null one (crd.def).
 *
 * Rejected: walking the JSON schema itself on every write (a second validator beside schema.c,
 * whose messages, defaults and pruning would drift from the compiled kinds').
 */
#include "base/compat.h"

#include <stdarg.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "model/crd_kind.h"

#define MAX_DEPTH 64

void *fatia_schema_arena_alloc(struct fatia_schema_arena *a, size_t size)
{
    void *p;

    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 16;
        void **v = fatia_realloc(a->v, cap * sizeof(*v));
        if (!v)
            return NULL;
        a->v = v;
        a->cap = cap;
    }
    p = fatia_calloc(1, size ? size : 1);
    if (p)
        a->v[a->n++] = p;
    return p;
}

void fatia_schema_arena_release(struct fatia_schema_arena *a)
{
    for (size_t i = 0; i < a->n; i++)
        fatia_free(a->v[i]);
    fatia_free(a->v);
    a->v = NULL;
    a->n = a->cap = 0;
}

struct tr {
    struct fatia_schema_arena *a;
    char *why;
    size_t why_n;
};

static int invalid(struct tr *t, const char *path, const char *member, const char *fmt, ...)
    FATIA_PRINTF(4, 5);

/* why = "path[.member]: message" */
static int invalid(struct tr *t, const char *path, const char *member, const char *fmt, ...)
{
    int n = snprintf(t->why, t->why_n, "%s%s%s: ", path, member ? "." : "", member ? member : "");
    va_list ap;

    if (n >= 0 && (size_t)n < t->why_n) {
        va_start(ap, fmt);
        vsnprintf(t->why + n, t->why_n - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -FATIA_E_INVALID;
}

/* An integer member of js into *ret (and flag into *flags); false when absent. */
static bool int_member(const json_t *js, const char *key, int64_t *ret)
{
    const json_t *v = json_object_get(js, key);

    if (json_is_integer(v)) {
        *ret = json_integer_value(v);
        return true;
    }
    if (json_is_real(v)) {
        *ret = (int64_t)json_real_value(v);
        return true;
    }
    return false;
}

static void bounds(const json_t *js, const char *lo, const char *hi, struct fatia_schema *s)
{
    if (int_member(js, lo, &s->min))
        s->flags |= FATIA_S_MIN;
    if (int_member(js, hi, &s->max))
        s->flags |= FATIA_S_MAX;
}

static int node(struct tr *t, const json_t *js, bool root, const char *path, int depth,
                const struct fatia_schema **ret);

static int string_enums(struct tr *t, const json_t *en, struct fatia_schema *s)
{
    size_t i, n = json_array_size(en);
    const char **v;
    json_t *e;

    if (!n)
        return 0;
    json_array_foreach(en, i, e) if (!json_is_string(e)) return 0; /* not a string enum */
    v = fatia_schema_arena_alloc(t->a, (n + 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    json_array_foreach(en, i, e) v[i] = json_string_value(e);
    s->enums = v;
    return 0;
}

static bool is_required(const json_t *js, const char *name)
{
    size_t i;
    json_t *r;

    json_array_foreach(json_object_get(js, "required"), i,
                       r) if (json_is_string(r) && !strcmp(json_string_value(r), name)) return true;
    return false;
}

/* OBJECT with properties: the fields, in the schema's order; the root's and an embedded
 * resource's apiVersion, kind and metadata first. */
static int object_fields(struct tr *t, const json_t *js, bool root, bool embedded, const char *path,
                         int depth, struct fatia_schema *s)
{
    const json_t *props = json_object_get(js, "properties");
    size_t n = json_object_size(props) + 4, i = 0;
    struct fatia_field *f = fatia_schema_arena_alloc(t->a, (n + 1) * sizeof(*f));
    const char *key;
    json_t *p;
    char sub[1024];
    int r;

    if (!f)
        return -ENOMEM;
    if (root || embedded) {
        f[i++] =
            (struct fatia_field){"apiVersion", &fatia_s_string, root ? FATIA_F_REQUIRED : 0, NULL};
        f[i++] = (struct fatia_field){"kind", &fatia_s_string, root ? FATIA_F_REQUIRED : 0, NULL};
        f[i++] = (struct fatia_field){"metadata", &fatia_s_object_meta, root ? FATIA_F_REQUIRED : 0,
                                      NULL};
    }
    if (props && !json_is_object(props))
        return invalid(t, path, "properties", "must be an object");
    json_object_foreach((json_t *)props, key, p)
    {
        const json_t *def;
        if ((root || embedded) &&
            (!strcmp(key, "apiVersion") || !strcmp(key, "kind") || !strcmp(key, "metadata")))
            continue;
        snprintf(sub, sizeof(sub), "%s.properties[%s]", path, key);
        f[i].name = key;
        r = node(t, p, false, sub, depth + 1, &f[i].schema);
        if (r < 0)
            return r;
        if (is_required(js, key))
            f[i].flags |= FATIA_F_REQUIRED;
        def = json_object_get(p, "default");
        if (def) {
            char *text = json_dumps(def, JSON_ENCODE_ANY | JSON_COMPACT);
            char *copy = text ? fatia_schema_arena_alloc(t->a, strlen(text) + 1) : NULL;
            if (!copy) {
                free(text);
                return -ENOMEM;
            }
            memcpy(copy, text, strlen(text) + 1);
            free(text);
            f[i].def = copy;
        }
        i++;
    }
    s->fields = f;
    return 0;
}

static int node(struct tr *t, const json_t *js, bool root, const char *path, int depth,
                const struct fatia_schema **ret)
{
    struct fatia_schema *s;
    const char *type;
    bool preserve, embedded;
    char sub[1024];
    int r;

    if (depth > MAX_DEPTH)
        return invalid(t, path, NULL, "nested too deeply");
    if (!json_is_object(js))
        return invalid(t, path, NULL, "must be an object");
    s = fatia_schema_arena_alloc(t->a, sizeof(*s));
    if (!s)
        return -ENOMEM;
    type = fatia_json_str(js, "type");
    preserve = fatia_json_bool(js, "x-kubernetes-preserve-unknown-fields", false);
    embedded = fatia_json_bool(js, "x-kubernetes-embedded-resource", false);
    s->desc = fatia_json_str(js, "description");
    s->flags |= FATIA_S_KUBE;
    if (fatia_json_bool(js, "nullable", false))
        s->flags |= FATIA_S_NULLABLE;
    if (fatia_json_bool(js, "x-kubernetes-int-or-string", false)) {
        s->type = FATIA_T_INT_OR_STRING;
    } else if (!type || !*type) {
        if (!preserve && !root)
            return invalid(t, path, "type",
                           "Required value: must not be empty for specified object fields");
        s->type = root ? FATIA_T_OBJECT : FATIA_T_ANY;
        if (root) {
            s->flags |= FATIA_S_OPEN;
            r = object_fields(t, js, true, false, path, depth, s);
            if (r < 0)
                return r;
        }
    } else if (!strcmp(type, "string")) {
        const char *fmt = fatia_json_str(js, "format");
        s->type = fmt && !strcmp(fmt, "date-time") ? FATIA_T_TIME : FATIA_T_STRING;
        bounds(js, "minLength", "maxLength", s);
        r = string_enums(t, json_object_get(js, "enum"), s);
        if (r < 0)
            return r;
    } else if (!strcmp(type, "integer")) {
        s->type = FATIA_T_INT;
        bounds(js, "minimum", "maximum", s);
    } else if (!strcmp(type, "number")) {
        s->type = FATIA_T_NUMBER;
    } else if (!strcmp(type, "boolean")) {
        s->type = FATIA_T_BOOL;
    } else if (!strcmp(type, "array")) {
        const json_t *items = json_object_get(js, "items");
        if (json_is_true(json_object_get(js, "uniqueItems")))
            return invalid(t, path, "uniqueItems",
                           "Forbidden: uniqueItems cannot be set to true since the runtime "
                           "complexity becomes quadratic");
        const json_t *keys = json_object_get(js, "x-kubernetes-list-map-keys");
        s->type = FATIA_T_ARRAY;
        bounds(js, "minItems", "maxItems", s);
        if (!items)
            return invalid(t, path, "items", "Required value: must be specified");
        snprintf(sub, sizeof(sub), "%s.items", path);
        r = node(t, items, false, sub, depth + 1, &s->items);
        if (r < 0)
            return r;
        const char *lt = fatia_json_str(js, "x-kubernetes-list-type");
        if (lt && !strcmp(lt, "map") && json_is_string(json_array_get(keys, 0)))
            s->list_key = json_string_value(json_array_get(keys, 0));
    } else if (!strcmp(type, "object")) {
        const json_t *ap = json_object_get(js, "additionalProperties");
        if (json_is_object(ap) && !json_object_get(js, "properties")) {
            s->type = FATIA_T_MAP;
            bounds(js, "minProperties", "maxProperties", s);
            snprintf(sub, sizeof(sub), "%s.additionalProperties", path);
            r = node(t, ap, false, sub, depth + 1, &s->items);
            if (r < 0)
                return r;
        } else {
            s->type = FATIA_T_OBJECT;
            if (preserve || json_is_true(ap))
                s->flags |= FATIA_S_OPEN;
            r = object_fields(t, js, root, embedded, path, depth, s);
            if (r < 0)
                return r;
        }
    } else {
        return invalid(t, path, "type",
                       "Unsupported value: \"%s\": supported values: \"array\", "
                       "\"boolean\", \"integer\", \"number\", \"object\", \"string\"",
                       type);
    }
    {
        const char *pattern = fatia_json_str(js, "pattern");
        const char *format = fatia_json_str(js, "format");
        const json_t *rules = json_object_get(js, "x-kubernetes-validations");
        bool more = (format && s->type == FATIA_T_STRING && strcmp(format, "date-time")) ||
                    json_is_true(json_object_get(js, "exclusiveMinimum")) ||
                    json_is_true(json_object_get(js, "exclusiveMaximum")) ||
                    json_object_get(js, "multipleOf") ||
                    (s->type == FATIA_T_NUMBER &&
                     (json_object_get(js, "minimum") || json_object_get(js, "maximum"))) ||
                    json_array_size(json_object_get(js, "anyOf")) ||
                    json_array_size(json_object_get(js, "allOf")) ||
                    json_array_size(json_object_get(js, "oneOf")) ||
                    json_is_object(json_object_get(js, "not"));
        const json_t *def = json_object_get(js, "default");
        char *def_text = NULL;
        if (def) {
            char *text = json_dumps(def, JSON_ENCODE_ANY | JSON_COMPACT);
            def_text = text ? fatia_schema_arena_alloc(t->a, strlen(text) + 1) : NULL;
            if (!def_text) {
                free(text);
                return -ENOMEM;
            }
            memcpy(def_text, text, strlen(text) + 1);
            free(text);
        }
        if ((pattern && s->type == FATIA_T_STRING) || json_array_size(rules) || more || def) {
            struct fatia_schema_crd *x = fatia_schema_arena_alloc(t->a, sizeof(*x));
            if (!x)
                return -ENOMEM;
            x->pattern = s->type == FATIA_T_STRING ? pattern : NULL;
            x->rules = json_array_size(rules) ? rules : NULL;
            x->node = more ? js : NULL;
            x->def = def_text;
            s->crd = x;
        }
    }
    if (root && s->type != FATIA_T_OBJECT)
        return invalid(t, path, "type", "Invalid value: \"%s\": must be object at the root",
                       type ? type : "");
    *ret = s;
    return 0;
}

int fatia_schema_from_openapi(struct fatia_schema_arena *a, const json_t *js, bool root,
                              const char *path, const struct fatia_schema **ret, char *why,
                              size_t n)
{
    struct tr t = {a, why, n};

    return node(&t, js, root, path, 0, ret);
}
