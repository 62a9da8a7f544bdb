/*
 * base/json.c: jansson helpers (see json.h).
 */
#include "base/compat.h"

#include "base/json.h"

#include <math.h>

#include "base/error.h"

const char *fatia_json_type_name(const json_t *v)
{
    switch (v ? json_typeof(v) : JSON_NULL) {
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
    case JSON_NULL:
        return "null";
    }
    return "unknown";
}

int fatia_json_number_text(const json_t *v, char *buf, size_t n)
{
    if (json_is_integer(v)) {
        snprintf(buf, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return 0;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(buf, n, "%.*g", prec, d);
            if (strtod(buf, NULL) == d)
                return 0;
        }
        return 0;
    }
    return -EINVAL;
}

json_t *fatia_json_path(const json_t *root, const char *path)
{
    const json_t *cur = root;
    const char *p = path;

    while (cur && *p) {
        if (*p == '[') {
            char *end;
            unsigned long idx = strtoul(p + 1, &end, 10);
            if (*end != ']' || !json_is_array(cur))
                return NULL;
            cur = json_array_get(cur, idx);
            p = end + 1;
            if (*p == '.')
                p++;
        } else {
            size_t n = strcspn(p, ".[");
            if (!json_is_object(cur))
                return NULL;
            cur = json_object_getn(cur, p, n);
            p += n;
            if (*p == '.')
                p++;
        }
    }
    return (json_t *)cur;
}

const char *fatia_json_str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

bool fatia_json_int(const json_t *obj, const char *key, int64_t *ret)
{
    json_t *v = json_object_get(obj, key);

    if (!json_is_integer(v))
        return false;
    *ret = json_integer_value(v);
    return true;
}

bool fatia_json_bool(const json_t *obj, const char *key, bool def)
{
    json_t *v = json_object_get(obj, key);

    return json_is_boolean(v) ? json_is_true(v) : def;
}

static json_t *ensure(json_t *obj, const char *key, json_t *(*make)(void), json_type type)
{
    json_t *v = json_object_get(obj, key);

    if (v)
        return json_typeof(v) == type ? v : NULL;
    v = make();
    if (!v || json_object_set_new(obj, key, v) < 0)
        return NULL;
    return v;
}

json_t *fatia_json_object_ensure(json_t *obj, const char *key)
{
    return ensure(obj, key, json_object, JSON_OBJECT);
}

json_t *fatia_json_array_ensure(json_t *obj, const char *key)
{
    return ensure(obj, key, json_array, JSON_ARRAY);
}

static int dump_cb(const char *s, size_t n, void *data)
{
    return fatia_buf_append(data, s, n) < 0 ? -1 : 0;
}

int fatia_json_dump_buf(const json_t *v, struct fatia_buf *b, size_t flags)
{
    size_t before = b->len;

    if (flags & JSON_COMPACT)
        return fatia_json_encode_compact(v, b, flags); /* json_enc.c: the same bytes, faster */
    if (json_dump_callback(v, dump_cb, b, flags) < 0) {
        fatia_buf_truncate(b, before);
        return -ENOMEM;
    }
    return 0;
}

bool fatia_json_equal(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b) &&
               (json_is_integer(a) == json_is_integer(b) ||
                floor(json_number_value(a)) == json_number_value(a));
    if (!a || !b || json_typeof(a) != json_typeof(b))
        return a == b;
    if (json_is_object(a)) {
        const char *k;
        json_t *v;
        if (json_object_size(a) != json_object_size(b))
            return false;
        json_object_foreach((json_t *)a, k, v)
        {
            if (!fatia_json_equal(v, json_object_get(b, k)))
                return false;
        }
        return true;
    }
    if (json_is_array(a)) {
        if (json_array_size(a) != json_array_size(b))
            return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!fatia_json_equal(json_array_get(a, i), json_array_get(b, i)))
                return false;
        return true;
    }
    return json_equal(a, b);
}
