/*
 * model/schema.c: the schema walker (see schema.h for the model) and the primitive schemas.
 *
 * Paths are written as Kubernetes writes field paths: members with dots, array elements and map
 * keys in brackets: spec.containers[0].resources.requests[nvidia.com/gpu]. The walker keeps a
 * stack of (parent, key | index) beside the path so that any report can find its source position
 * in the srcmap; a value with no recorded position falls back to its nearest ancestor that has
 * one, then to the object's start.
 */
#include "base/compat.h"

#include "model/schema.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "model/labels.h"
#include "model/quantity.h"

void fatia_vctx_init(struct fatia_vctx *ctx, struct fatia_diag *diag,
                     const struct fatia_srcmap *map, const char *file)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->diag = diag;
    ctx->map = map;
    ctx->file = file;
    ctx->apply_defaults = true;
    ctx->warn_unknown = true;
    fatia_buf_init(&ctx->path, 0);
}

void fatia_vctx_release(struct fatia_vctx *ctx)
{
    fatia_buf_release(&ctx->path);
}

void fatia_vctx_set_object(struct fatia_vctx *ctx, const char *object, struct fatia_srcpos pos)
{
    snprintf(ctx->object, sizeof(ctx->object), "%s", object ? object : "");
    ctx->obj_pos = pos;
    fatia_buf_reset(&ctx->path);
    ctx->depth = 0;
}

static void push(struct fatia_vctx *ctx, const json_t *parent, const char *key, size_t index,
                 bool bracket_key)
{
    int d = ctx->depth;

    if (d < (int)FATIA_ARRAY_SIZE(ctx->stack)) {
        ctx->stack[d].parent = parent;
        ctx->stack[d].key = key;
        ctx->stack[d].index = index;
        ctx->stack[d].path_len = ctx->path.len;
    }
    ctx->depth++;
    /* A path that cannot grow (OOM) only loses precision in messages. Appended by hand: this
     * runs for every member of every object written (printf was a tenth of a CRD's walk). */
    if (key && !bracket_key) {
        if (ctx->path.len)
            (void)fatia_buf_putc(&ctx->path, '.');
        (void)fatia_buf_puts(&ctx->path, key);
    } else if (key) {
        (void)fatia_buf_putc(&ctx->path, '[');
        (void)fatia_buf_puts(&ctx->path, key);
        (void)fatia_buf_putc(&ctx->path, ']');
    } else {
        char digits[24];
        size_t n = sizeof(digits);
        digits[--n] = '\0';
        do
            digits[--n] = (char)('0' + index % 10);
        while ((index /= 10) && n);
        (void)fatia_buf_putc(&ctx->path, '[');
        (void)fatia_buf_puts(&ctx->path, digits + n);
        (void)fatia_buf_putc(&ctx->path, ']');
    }
}

void fatia_vctx_push_key(struct fatia_vctx *ctx, const json_t *parent, const char *key)
{
    push(ctx, parent, key, 0, false);
}

static void push_mapkey(struct fatia_vctx *ctx, const json_t *parent, const char *key)
{
    push(ctx, parent, key, 0, true);
}

void fatia_vctx_push_index(struct fatia_vctx *ctx, const json_t *parent, size_t index)
{
    push(ctx, parent, NULL, index, false);
}

void fatia_vctx_pop(struct fatia_vctx *ctx)
{
    FATIA_ASSERT(ctx->depth > 0);
    ctx->depth--;
    if (ctx->depth < (int)FATIA_ARRAY_SIZE(ctx->stack))
        fatia_buf_truncate(&ctx->path, ctx->stack[ctx->depth].path_len);
}

/* Position of the value at the top of the stack, or of its nearest ancestor with one. */
static struct fatia_srcpos current_pos(const struct fatia_vctx *ctx)
{
    struct fatia_srcpos pos;
    int d = FATIA_MIN(ctx->depth, (int)FATIA_ARRAY_SIZE(ctx->stack));

    while (d-- > 0)
        if (fatia_srcmap_member(ctx->map, ctx->stack[d].parent, ctx->stack[d].key,
                                ctx->stack[d].index, &pos))
            return pos;
    return ctx->obj_pos;
}

static void vreport(struct fatia_vctx *ctx, enum fatia_diag_level level, struct fatia_srcpos pos,
                    const char *path, const char *fmt, va_list ap) FATIA_PRINTF(5, 0);

static void vreport(struct fatia_vctx *ctx, enum fatia_diag_level level, struct fatia_srcpos pos,
                    const char *path, const char *fmt, va_list ap)
{
    fatia_diag_vadd(ctx->diag, level, ctx->file, pos.line, pos.col,
                    ctx->object[0] ? ctx->object : NULL, path, fmt, ap);
}

static void report(struct fatia_vctx *ctx, enum fatia_diag_level level, const char *fmt, ...)
    FATIA_PRINTF(3, 4);

static void report(struct fatia_vctx *ctx, enum fatia_diag_level level, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vreport(ctx, level, current_pos(ctx), ctx->path.p, fmt, ap);
    va_end(ap);
}

/* Walks rel ("a.b[0][key]") from v, pushing each step that exists; returns the steps pushed and
 * appends the full textual rel to the path either way. */
static int push_rel(struct fatia_vctx *ctx, const json_t *v, const char *rel, size_t *path_len0)
{
    const json_t *cur = v;
    const char *p = rel;
    int pushed = 0;

    *path_len0 = ctx->path.len;
    while (*p && pushed < (int)FATIA_ARRAY_SIZE(ctx->relkeys)) {
        /* The stack keeps a pointer to the key: each step needs storage of its own. */
        char *key = ctx->relkeys[pushed];
        size_t key_n = sizeof(ctx->relkeys[pushed]);
        size_t n;
        bool bracket = false;
        if (*p == '.')
            p++;
        if (*p == '[') {
            const char *end = strchr(p, ']');
            if (!end)
                break;
            n = (size_t)(end - p - 1);
            snprintf(key, key_n, "%.*s", (int)n, p + 1);
            p = end + 1;
            bracket = true;
        } else {
            n = strcspn(p, ".[");
            snprintf(key, key_n, "%.*s", (int)n, p);
            p += n;
        }
        if (json_is_array(cur) && bracket) {
            char *end;
            unsigned long idx = strtoul(key, &end, 10);
            fatia_vctx_push_index(ctx, cur, idx);
            cur = *end ? NULL : json_array_get(cur, idx);
        } else {
            push(ctx, cur, key, 0, bracket);
            cur = json_is_object(cur) ? json_object_get(cur, key) : NULL;
        }
        pushed++;
    }
    return pushed;
}

static void vreport_at(struct fatia_vctx *ctx, enum fatia_diag_level level, const json_t *v,
                       const char *rel, const char *fmt, va_list ap) FATIA_PRINTF(5, 0);

static void vreport_at(struct fatia_vctx *ctx, enum fatia_diag_level level, const json_t *v,
                       const char *rel, const char *fmt, va_list ap)
{
    size_t len0;
    int pushed = push_rel(ctx, v, rel ? rel : "", &len0);
    struct fatia_srcpos pos = current_pos(ctx);

    vreport(ctx, level, pos, ctx->path.p, fmt, ap);
    while (pushed--)
        fatia_vctx_pop(ctx);
    fatia_buf_truncate(&ctx->path, len0);
}

void fatia_verr_at(struct fatia_vctx *ctx, const json_t *v, const char *rel, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vreport_at(ctx, FATIA_DIAG_ERROR, v, rel, fmt, ap);
    va_end(ap);
}

void fatia_vwarn_at(struct fatia_vctx *ctx, const json_t *v, const char *rel, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vreport_at(ctx, FATIA_DIAG_WARNING, v, rel, fmt, ap);
    va_end(ap);
}

const char *fatia_stype_name(enum fatia_stype t)
{
    static const char *const names[] = {
        [FATIA_T_ANY] = "any value",
        [FATIA_T_STRING] = "string",
        [FATIA_T_INT] = "integer",
        [FATIA_T_NUMBER] = "number",
        [FATIA_T_BOOL] = "boolean",
        [FATIA_T_QUANTITY] = "quantity",
        [FATIA_T_INT_OR_STRING] = "integer or string",
        [FATIA_T_TIME] = "RFC 3339 time",
        [FATIA_T_OBJECT] = "object",
        [FATIA_T_ARRAY] = "array",
        [FATIA_T_MAP] = "object",
    };
    return names[t];
}

/* kube-openapi's names of a value's JSON type and of a schema's type (FATIA_S_KUBE). */
static const char *kube_value_type(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
        return "integer";
    case JSON_REAL:
        return "number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "boolean";
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_NULL:
        return "null";
    }
    return "null";
}

static const char *kube_schema_type(enum fatia_stype t)
{
    switch (t) {
    case FATIA_T_INT:
        return "integer";
    case FATIA_T_NUMBER:
        return "number";
    case FATIA_T_BOOL:
        return "boolean";
    case FATIA_T_OBJECT:
    case FATIA_T_MAP:
        return "object";
    case FATIA_T_ARRAY:
        return "array";
    case FATIA_T_INT_OR_STRING:
        return "integer,string";
    default:
        return "string";
    }
}

/* The message for a value of the wrong JSON type. YAML reads unquoted yes/no/on/off/y/n as
 * booleans, which surprises people: say so when that is the likely cause. */
static void type_error(struct fatia_vctx *ctx, const struct fatia_schema *s, const json_t *v)
{
    if (s->flags & FATIA_S_KUBE)
        report(ctx, FATIA_DIAG_ERROR,
               "Invalid value: \"%s\": %s in body must be of type %s: \"%s\"", kube_value_type(v),
               ctx->path.len ? ctx->path.p : "", kube_schema_type(s->type), kube_value_type(v));
    else if (json_is_boolean(v) && (s->type == FATIA_T_STRING || s->type == FATIA_T_QUANTITY ||
                                    s->type == FATIA_T_INT_OR_STRING))
        report(ctx, FATIA_DIAG_ERROR,
               "expected %s, got boolean %s (YAML reads unquoted true/false/yes/no/on/off as "
               "booleans: quote the value)",
               fatia_stype_name(s->type), json_is_true(v) ? "true" : "false");
    else
        report(ctx, FATIA_DIAG_ERROR, "expected %s, got %s", fatia_stype_name(s->type),
               fatia_json_type_name(v));
}

static bool check_format(enum fatia_sformat f, const char *s, char *why, size_t n)
{
    switch (f) {
    case FATIA_FMT_NONE:
        return true;
    case FATIA_FMT_DNS1123_LABEL:
        return fatia_is_dns1123_label(s, why, n);
    case FATIA_FMT_DNS1123_SUBDOMAIN:
        return fatia_is_dns1123_subdomain(s, why, n);
    case FATIA_FMT_DNS1035_LABEL:
        return fatia_is_dns1035_label(s, why, n);
    case FATIA_FMT_QUALIFIED_NAME:
        return fatia_is_qualified_name(s, why, n);
    case FATIA_FMT_LABEL_VALUE:
        return fatia_is_label_value(s, why, n);
    case FATIA_FMT_RESOURCE_NAME:
        return fatia_is_resource_name(s, why, n);
    }
    return true;
}

static void check_string(struct fatia_vctx *ctx, const struct fatia_schema *s, const json_t *v)
{
    const char *str = json_string_value(v);
    size_t len = json_string_length(v);
    char why[FATIA_WHY_MAX];

    if (s->enums) {
        struct fatia_buf list = FATIA_BUF_INIT;
        for (const char *const *e = s->enums; *e; e++)
            if (strcmp(*e, str) == 0)
                return;
        for (const char *const *e = s->enums; *e; e++)
            (void)fatia_buf_printf(&list, "%s\"%s\"", e == s->enums ? "" : ", ", *e);
        report(ctx, FATIA_DIAG_ERROR, "%s \"%s\": supported values: %s",
               (s->flags & FATIA_S_KUBE) ? "Unsupported value:" : "unsupported value", str, list.p);
        fatia_buf_release(&list);
        return;
    }
    if ((s->flags & FATIA_S_KUBE) && (s->flags & FATIA_S_MIN) && (int64_t)len < s->min) {
        report(ctx, FATIA_DIAG_ERROR,
               "Invalid value: \"%s\": %s in body should be at least %" PRId64 " chars long", str,
               ctx->path.p, s->min);
        return;
    }
    if ((s->flags & FATIA_S_KUBE) && (s->flags & FATIA_S_MAX) && (int64_t)len > s->max) {
        report(ctx, FATIA_DIAG_ERROR, "Too long: may not be more than %" PRId64 " byte%s", s->max,
               s->max == 1 ? "" : "s");
        return;
    }
    if ((s->flags & FATIA_S_MIN) && (int64_t)len < s->min) {
        if (s->min == 1)
            report(ctx, FATIA_DIAG_ERROR, "must not be empty");
        else
            report(ctx, FATIA_DIAG_ERROR, "must be at least %" PRId64 " characters", s->min);
        return;
    }
    if ((s->flags & FATIA_S_MAX) && (int64_t)len > s->max) {
        report(ctx, FATIA_DIAG_ERROR, "must be no more than %" PRId64 " characters (is %zu)",
               s->max, len);
        return;
    }
    if (strlen(str) != len) {
        report(ctx, FATIA_DIAG_ERROR, "must not contain NUL characters");
        return;
    }
    if (!check_format(s->format, str, why, sizeof(why)))
        report(ctx, FATIA_DIAG_ERROR, "invalid value \"%s\": %s", str, why);
}

static void check_quantity(struct fatia_vctx *ctx, const struct fatia_schema *s, const json_t *v)
{
    struct fatia_quantity q;
    char why[FATIA_WHY_MAX] = "", text[64] = "";
    int r;

    if (json_is_string(v))
        snprintf(text, sizeof(text), "%s", json_string_value(v));
    else
        fatia_json_number_text(v, text, sizeof(text));
    r = fatia_quantity_parse_json(v, &q, why, sizeof(why));
    if (r == -ERANGE) {
        report(ctx, FATIA_DIAG_ERROR, "invalid quantity \"%s\": %s", text, why);
        return;
    }
    if (r < 0) {
        /* upstream's reason quotes a regular expression; say what is expected instead */
        report(ctx, FATIA_DIAG_ERROR,
               "invalid quantity \"%s\": expected a number with an optional suffix (m, k, M, "
               "G, T, Ki, Mi, Gi, Ti, ...) or exponent (1e3)",
               text);
        return;
    }
    if ((s->flags & FATIA_S_NONNEG) && fatia_quantity_is_negative(&q))
        report(ctx, FATIA_DIAG_ERROR, "must be greater than or equal to 0 (is \"%s\")", text);
    else if ((s->flags & FATIA_S_POSITIVE) &&
             (fatia_quantity_is_negative(&q) || fatia_quantity_is_zero(&q)))
        report(ctx, FATIA_DIAG_ERROR, "must be greater than 0 (is \"%s\")", text);
}

static void check_count(struct fatia_vctx *ctx, const struct fatia_schema *s, size_t n,
                        const char *what)
{
    if (s->flags & FATIA_S_KUBE) {
        if ((s->flags & FATIA_S_MIN) && (int64_t)n < s->min)
            report(ctx, FATIA_DIAG_ERROR,
                   "Invalid value: %zu: %s in body should have at least %" PRId64 " %s", n,
                   ctx->path.p, s->min, s->type == FATIA_T_MAP ? "properties" : "items");
        else if ((s->flags & FATIA_S_MAX) && (int64_t)n > s->max)
            report(ctx, FATIA_DIAG_ERROR, "Too many: %zu: must have at most %" PRId64 " items", n,
                   s->max);
        return;
    }
    if ((s->flags & FATIA_S_MIN) && (int64_t)n < s->min)
        report(ctx, FATIA_DIAG_ERROR, "must have at least %" PRId64 " %s (has %zu)", s->min, what,
               n);
    else if ((s->flags & FATIA_S_MAX) && (int64_t)n > s->max)
        report(ctx, FATIA_DIAG_ERROR, "must have at most %" PRId64 " %s (has %zu)", s->max, what,
               n);
}

static void validate_object(struct fatia_vctx *ctx, const struct fatia_schema *s, json_t *v)
{
    const char *key;
    json_t *member;
    size_t n_known = 0, n0 = json_object_size(v);

    for (const struct fatia_field *f = s->fields; f && f->name; f++) {
        member = json_object_get(v, f->name);
        n_known += member != NULL;
        /* null means unset unless the schema says nullable; an ANY member keeps its null, but
         * in a CRD's schema (a non-nullable null is defaulted or dropped, as upstream) */
        if (!member || (json_is_null(member) &&
                        (f->schema->type != FATIA_T_ANY || (f->schema->flags & FATIA_S_KUBE)) &&
                        !(f->schema->flags & FATIA_S_NULLABLE))) {
            if (f->flags & FATIA_F_REQUIRED) {
                size_t len0 = ctx->path.len;
                (void)fatia_buf_printf(&ctx->path, "%s%s", len0 ? "." : "", f->name);
                report(ctx, FATIA_DIAG_ERROR, "%s",
                       (s->flags & FATIA_S_KUBE) ? "Required value" : "required field is missing");
                fatia_buf_truncate(&ctx->path, len0);
                continue;
            }
            if (member && json_is_null(member)) {
                /* `field: null` (or `field:`) means unset, as upstream decodes it. */
                json_object_del(v, f->name);
            }
            if (f->def && ctx->apply_defaults) {
                json_t *d = json_loads(f->def, JSON_DECODE_ANY, NULL);
                FATIA_ASSERT(d); /* defaults are static text written by us */
                if (json_object_set_new(v, f->name, d) < 0) {
                    ctx->diag->oom = true;
                    continue;
                }
                /* A defaulted object gets the defaults of its own members ("{}" -> full). */
                fatia_vctx_push_key(ctx, v, f->name);
                fatia_schema_validate(ctx, f->schema, d);
                fatia_vctx_pop(ctx);
            }
            continue;
        }
        fatia_vctx_push_key(ctx, v, f->name);
        fatia_schema_validate(ctx, f->schema, member);
        fatia_vctx_pop(ctx);
    }
    /* every member the object came with is a field (defaults added since are fields too):
     * nothing to look for, and no fields x members string compares */
    if ((s->flags & FATIA_S_OPEN) || !ctx->warn_unknown || n_known == n0)
        return;
    json_object_foreach(v, key, member)
    {
        bool known = false;
        for (const struct fatia_field *f = s->fields; f && f->name && !known; f++)
            known = strcmp(f->name, key) == 0;
        if (!known) {
            fatia_vctx_push_key(ctx, v, key);
            report(ctx, FATIA_DIAG_WARNING, "unknown field, ignored");
            fatia_vctx_pop(ctx);
        }
    }
}

/* A null array item or map value of a CRD's non-nullable schema with a default: the default (as
 * apiextensions-apiserver's defaulting). Returns the value to check. */
static json_t *null_default(struct fatia_vctx *ctx, const struct fatia_schema *items,
                            json_t *parent, size_t index, const char *key, json_t *v)
{
    json_t *d;

    if (!json_is_null(v) || !items || !items->crd || !items->crd->def ||
        (items->flags & FATIA_S_NULLABLE) || !ctx->apply_defaults)
        return v;
    d = json_loads(items->crd->def, JSON_DECODE_ANY, NULL);
    if (!d)
        return v;
    if ((key ? json_object_set_new(parent, key, d) : json_array_set_new(parent, index, d)) < 0) {
        ctx->diag->oom = true;
        return v;
    }
    return key ? json_object_get(parent, key) : json_array_get(parent, index);
}

static void validate_array(struct fatia_vctx *ctx, const struct fatia_schema *s, json_t *v)
{
    size_t i;
    json_t *item;

    check_count(ctx, s, json_array_size(v), "items");
    json_array_foreach(v, i, item)
    {
        item = null_default(ctx, s->items, v, i, NULL, item);
        fatia_vctx_push_index(ctx, v, i);
        if (s->items)
            fatia_schema_validate(ctx, s->items, item);
        if (s->list_key) {
            const char *k = fatia_json_str(item, s->list_key);
            for (size_t j = 0; k && j < i; j++) {
                const char *kj = fatia_json_str(json_array_get(v, j), s->list_key);
                if (kj && strcmp(k, kj) == 0) {
                    fatia_verr_at(ctx, item, s->list_key,
                                  "duplicate value \"%s\" (also at index %zu)", k, j);
                    break;
                }
            }
        }
        fatia_vctx_pop(ctx);
    }
}

static void validate_map(struct fatia_vctx *ctx, const struct fatia_schema *s, json_t *v)
{
    const char *key;
    json_t *member;
    char why[FATIA_WHY_MAX];

    check_count(ctx, s, json_object_size(v), "entries");
    json_object_foreach(v, key, member)
    {
        member = null_default(ctx, s->items, v, 0, key, member);
        push_mapkey(ctx, v, key);
        if (!check_format(s->key_format, key, why, sizeof(why)))
            report(ctx, FATIA_DIAG_ERROR, "invalid key \"%s\": %s", key, why);
        else if (s->items)
            fatia_schema_validate(ctx, s->items, member);
        fatia_vctx_pop(ctx);
    }
}

size_t fatia_schema_validate(struct fatia_vctx *ctx, const struct fatia_schema *s, json_t *v)
{
    size_t before = ctx->diag->n_errors;
    int64_t iv;

    if (json_is_null(v) && (s->flags & FATIA_S_NULLABLE))
        return 0;
    switch (s->type) {
    case FATIA_T_ANY:
        break;
    case FATIA_T_STRING:
        if (!json_is_string(v))
            type_error(ctx, s, v);
        else
            check_string(ctx, s, v);
        break;
    case FATIA_T_INT:
        if (!json_is_integer(v)) {
            type_error(ctx, s, v);
            break;
        }
        iv = json_integer_value(v);
        if ((s->flags & FATIA_S_KUBE) && (s->flags & FATIA_S_MIN) && iv < s->min)
            report(ctx, FATIA_DIAG_ERROR,
                   "Invalid value: %" PRId64
                   ": %s in body should be greater than or equal to %" PRId64,
                   iv, ctx->path.p, s->min);
        else if ((s->flags & FATIA_S_KUBE) && (s->flags & FATIA_S_MAX) && iv > s->max)
            report(ctx, FATIA_DIAG_ERROR,
                   "Invalid value: %" PRId64
                   ": %s in body should be less than or equal to %" PRId64,
                   iv, ctx->path.p, s->max);
        else if ((s->flags & FATIA_S_MIN) && iv < s->min)
            report(ctx, FATIA_DIAG_ERROR,
                   "must be greater than or equal to %" PRId64 " (is %" PRId64 ")", s->min, iv);
        else if ((s->flags & FATIA_S_MAX) && iv > s->max)
            report(ctx, FATIA_DIAG_ERROR,
                   "must be less than or equal to %" PRId64 " (is %" PRId64 ")", s->max, iv);
        break;
    case FATIA_T_NUMBER:
        if (!json_is_number(v))
            type_error(ctx, s, v);
        break;
    case FATIA_T_BOOL:
        if (!json_is_boolean(v))
            type_error(ctx, s, v);
        break;
    case FATIA_T_QUANTITY:
        if (!json_is_string(v) && !json_is_number(v))
            type_error(ctx, s, v);
        else
            check_quantity(ctx, s, v);
        break;
    case FATIA_T_INT_OR_STRING:
        if (!json_is_string(v) && !json_is_integer(v))
            type_error(ctx, s, v);
        break;
    case FATIA_T_TIME: {
        fatia_usec_t t;
        if (!json_is_string(v))
            type_error(ctx, s, v);
        else if (fatia_time_parse_rfc3339(json_string_value(v), &t) < 0)
            report(ctx, FATIA_DIAG_ERROR,
                   "invalid time \"%s\": expected RFC 3339, e.g. 2026-11-29T15:04:05Z",
                   json_string_value(v));
        break;
    }
    case FATIA_T_OBJECT:
        if (!json_is_object(v))
            type_error(ctx, s, v);
        else
            validate_object(ctx, s, v);
        break;
    case FATIA_T_ARRAY:
        if (!json_is_array(v))
            type_error(ctx, s, v);
        else
            validate_array(ctx, s, v);
        break;
    case FATIA_T_MAP:
        if (!json_is_object(v))
            type_error(ctx, s, v);
        else
            validate_map(ctx, s, v);
        break;
    }
    /* Cross-field rules run even when a member below had an error, so that one run reports
     * everything; they only need the value itself to have its type, and read members through
     * type-checking accessors. */
    if (s->check && (s->type != FATIA_T_OBJECT || json_is_object(v)))
        s->check(ctx, v);
    return ctx->diag->n_errors - before;
}

/* ---- primitive schemas ------------------------------------------------------------------- */

const struct fatia_schema fatia_s_any = {FATIA_T_ANY};
const struct fatia_schema fatia_s_string = {FATIA_T_STRING};
const struct fatia_schema fatia_s_nonempty_string = {FATIA_T_STRING, .flags = FATIA_S_MIN,
                                                     .min = 1};
const struct fatia_schema fatia_s_int = {FATIA_T_INT};
const struct fatia_schema fatia_s_int32 = {FATIA_T_INT, .flags = FATIA_S_MIN | FATIA_S_MAX,
                                           .min = INT32_MIN, .max = INT32_MAX};
const struct fatia_schema fatia_s_int_nonneg = {FATIA_T_INT, .flags = FATIA_S_MIN, .min = 0};
const struct fatia_schema fatia_s_bool = {FATIA_T_BOOL};
const struct fatia_schema fatia_s_number = {FATIA_T_NUMBER};
const struct fatia_schema fatia_s_time = {FATIA_T_TIME, .flags = FATIA_S_NULLABLE};
const struct fatia_schema fatia_s_quantity = {FATIA_T_QUANTITY};
const struct fatia_schema fatia_s_quantity_nonneg = {FATIA_T_QUANTITY, .flags = FATIA_S_NONNEG};
const struct fatia_schema fatia_s_int_or_string = {FATIA_T_INT_OR_STRING};
const struct fatia_schema fatia_s_dns_label = {FATIA_T_STRING, .format = FATIA_FMT_DNS1123_LABEL};
const struct fatia_schema fatia_s_dns_subdomain = {FATIA_T_STRING,
                                                   .format = FATIA_FMT_DNS1123_SUBDOMAIN};
const struct fatia_schema fatia_s_qualified_name = {FATIA_T_STRING,
                                                    .format = FATIA_FMT_QUALIFIED_NAME};
const struct fatia_schema fatia_s_resource_name = {FATIA_T_STRING,
                                                   .format = FATIA_FMT_RESOURCE_NAME};
const struct fatia_schema fatia_s_string_list = {FATIA_T_ARRAY, .items = &fatia_s_string};
const struct fatia_schema fatia_s_string_map = {FATIA_T_MAP, .items = &fatia_s_string};
static const struct fatia_schema label_value = {FATIA_T_STRING, .format = FATIA_FMT_LABEL_VALUE};
const struct fatia_schema fatia_s_label_map = {FATIA_T_MAP, .key_format = FATIA_FMT_QUALIFIED_NAME,
                                               .items = &label_value};
const struct fatia_schema fatia_s_annotation_map = {
    FATIA_T_MAP, .key_format = FATIA_FMT_QUALIFIED_NAME, .items = &fatia_s_string};
const struct fatia_schema fatia_s_resource_list = {
    FATIA_T_MAP, .key_format = FATIA_FMT_RESOURCE_NAME, .items = &fatia_s_quantity_nonneg};
