/*
 * apiserver/table.c: server-side printing (meta.k8s.io/v1 Table) and the JSONPath subset that
 * printer columns use.
 *
 * `kubectl get` asks for a Table; the server answers with column definitions and one row of
 * cells per object, which kubectl prints as is. Columns are those of the kind's upstream CRD
 * (model/kind.h columns): Name first, the kind's columns, Age last (unless the kind places Age
 * itself, or has "Created At" instead, as kubectl's built-in printers do); or, for a kind whose
 * columns are the whole row (columns_whole: Event, as kubectl's built-in printer), those columns
 * alone. Cells follow the CRD table
 * convertor of kube-apiserver: the first JSONPath result; strings printed like Go's fmt (a map
 * is "map[k:v]"), integers and numbers as JSON numbers, dates as a human age ("5m", "3d4h"),
 * missing values as null (kubectl shows <none>).
 *
 * JSONPath subset (what CRD printer columns use): .field (with \. for a dot inside a name),
 * [N] (negative from the end), [N:M] slices, [*], ['key'], [?(@.path==value)] and != filters
 * with string or number literals, and [?(@.path)] existence. Optional {} around the path.
 */
#include "base/compat.h"

#include <math.h>

#include "apiserver/internal.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"

#define JP_MAX 64

struct jpset {
    const json_t *v[JP_MAX];
    size_t n;
};

static void jp_add(struct jpset *s, const json_t *v)
{
    if (v && s->n < JP_MAX)
        s->v[s->n++] = v;
}

static int jp_eval_depth(const char *path, const json_t *root, struct jpset *out, int depth);

/* Reads a field name at p (up to an unescaped '.' or '['), unescaping into buf. */
static const char *jp_name(const char *p, char *buf, size_t n)
{
    size_t j = 0;

    while (*p && *p != '.' && *p != '[' && *p != '}') {
        if (*p == '\\' && p[1])
            p++;
        if (j + 1 < n)
            buf[j++] = *p;
        p++;
    }
    buf[j] = '\0';
    return p;
}

static bool literal_eq(const json_t *v, const char *lit)
{
    char num[64];

    if (json_is_string(v))
        return !strcmp(json_string_value(v), lit);
    if (json_is_number(v) && fatia_json_number_text(v, num, sizeof(num)) == 0)
        return !strcmp(num, lit);
    if (json_is_true(v))
        return !strcmp(lit, "true");
    if (json_is_false(v))
        return !strcmp(lit, "false");
    return false;
}

/* [ ... ] at p (p points past '['): applies it to every value of in. Returns the position past
 * ']' or NULL on a syntax error. */
static const char *jp_bracket(const char *p, const struct jpset *in, struct jpset *out, int depth)
{
    const char *close = strchr(p, ']');
    char inner[256];
    size_t n;

    /* a filter may contain ']' inside quotes: find the ")]" that ends it */
    if (*p == '?') {
        const char *e = strstr(p, ")]");
        if (!e)
            return NULL;
        close = e + 1;
    }
    if (!close)
        return NULL;
    n = (size_t)(close - p);
    if (n >= sizeof(inner))
        return NULL;
    memcpy(inner, p, n);
    inner[n] = '\0';

    if (inner[0] == '?') {
        /* ?(@.path OP literal) or ?(@.path) */
        char sub[256] = "", lit[256] = "";
        bool neg = false, has_op = false;
        char *q = inner + 1, *op;
        if (*q != '(' || inner[n - 1] != ')')
            return NULL;
        q++;
        inner[n - 1] = '\0';
        if (*q != '@')
            return NULL;
        q++;
        op = strstr(q, "==");
        if (!op) {
            op = strstr(q, "!=");
            neg = op != NULL;
        }
        if (op) {
            char *l = op + 2;
            size_t ln;
            has_op = true;
            snprintf(sub, sizeof(sub), "%.*s", (int)(op - q), q);
            while (*l == ' ')
                l++;
            ln = strlen(l);
            while (ln && l[ln - 1] == ' ')
                ln--;
            if (ln >= 2 && (l[0] == '"' || l[0] == '\'') && l[ln - 1] == l[0]) {
                l++;
                ln -= 2;
            }
            snprintf(lit, sizeof(lit), "%.*s", (int)ln, l);
            for (size_t k = strlen(sub); k && sub[k - 1] == ' '; k--)
                sub[k - 1] = '\0';
        } else {
            snprintf(sub, sizeof(sub), "%s", q);
        }
        for (size_t i = 0; i < in->n; i++) {
            size_t k;
            const json_t *el;
            if (!json_is_array(in->v[i]))
                continue;
            json_array_foreach(in->v[i], k, el)
            {
                struct jpset r = {0};
                bool ok;
                jp_eval_depth(sub, el, &r, depth + 1);
                if (!has_op)
                    ok = r.n > 0;
                else
                    ok = (r.n > 0 && literal_eq(r.v[0], lit)) != neg;
                if (ok)
                    jp_add(out, el);
            }
        }
        return close + 1;
    }
    if (inner[0] == '\'' || inner[0] == '"') {
        size_t ln = strlen(inner);
        if (ln < 2 || inner[ln - 1] != inner[0])
            return NULL;
        inner[ln - 1] = '\0';
        for (size_t i = 0; i < in->n; i++)
            jp_add(out, json_object_get(in->v[i], inner + 1));
        return close + 1;
    }
    if (!strcmp(inner, "*")) {
        for (size_t i = 0; i < in->n; i++) {
            size_t k;
            const char *key;
            const json_t *el;
            if (json_is_array(in->v[i]))
                json_array_foreach(in->v[i], k, el) jp_add(out, el);
            else if (json_is_object(in->v[i]))
                json_object_foreach((json_t *)in->v[i], key, el) jp_add(out, el);
        }
        return close + 1;
    }
    {
        char *colon = strchr(inner, ':');
        for (size_t i = 0; i < in->n; i++) {
            long long len, a, b;
            if (!json_is_array(in->v[i]))
                continue;
            len = (long long)json_array_size(in->v[i]);
            if (colon) {
                char *end;
                a = colon == inner ? 0 : strtoll(inner, &end, 10);
                b = colon[1] ? strtoll(colon + 1, &end, 10) : len;
                if (a < 0)
                    a += len;
                if (b < 0)
                    b += len;
                if (a < 0)
                    a = 0;
                if (b > len)
                    b = len;
                for (long long k = a; k < b; k++)
                    jp_add(out, json_array_get(in->v[i], (size_t)k));
            } else {
                char *end;
                a = strtoll(inner, &end, 10);
                if (*end)
                    return NULL;
                if (a < 0)
                    a += len;
                if (a >= 0 && a < len)
                    jp_add(out, json_array_get(in->v[i], (size_t)a));
            }
        }
        return close + 1;
    }
}

static int jp_eval_depth(const char *path, const json_t *root, struct jpset *out, int depth)
{
    struct jpset cur = {0}, next;
    const char *p = path;
    char name[256];

    if (depth > 8)
        return -EINVAL;
    while (*p == ' ' || *p == '{')
        p++;
    jp_add(&cur, root);
    while (*p && *p != '}') {
        memset(&next, 0, sizeof(next));
        if (*p == '.') {
            p = jp_name(p + 1, name, sizeof(name));
            if (!name[0])
                continue; /* ".." or a trailing dot: nothing to select */
            for (size_t i = 0; i < cur.n; i++)
                jp_add(&next, json_object_get(cur.v[i], name));
        } else if (*p == '[') {
            p = jp_bracket(p + 1, &cur, &next, depth);
            if (!p)
                return -EINVAL;
        } else if (*p == '@' || *p == '$') {
            p++;
            continue;
        } else {
            /* a bare first name: "spec.x" */
            p = jp_name(p, name, sizeof(name));
            for (size_t i = 0; i < cur.n; i++)
                jp_add(&next, json_object_get(cur.v[i], name));
        }
        cur = next;
        if (!cur.n)
            break;
    }
    *out = cur;
    return 0;
}

static int fatia_jsonpath_eval(const char *path, const json_t *root, const json_t **ret,
                               size_t max);

static int fatia_jsonpath_eval(const char *path, const json_t *root, const json_t **ret, size_t max)
{
    struct jpset s;
    int r = jp_eval_depth(path, root, &s, 0);

    if (r < 0)
        return r;
    for (size_t i = 0; i < s.n && i < max; i++)
        ret[i] = s.v[i];
    return (int)FATIA_MIN(s.n, max);
}

/* ---- cells ---- */

/* Go's fmt %v of a JSON value (as the jsonpath printer of kube prints it). */
static void go_print(struct fatia_buf *b, const json_t *v, int depth)
{
    char num[64];

    if (depth > 16)
        return;
    switch (json_typeof(v)) {
    case JSON_STRING:
        (void)fatia_buf_append(b, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        (void)fatia_buf_printf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        break;
    case JSON_REAL:
        fatia_json_number_text(v, num, sizeof(num));
        (void)fatia_buf_puts(b, num);
        break;
    case JSON_TRUE:
        (void)fatia_buf_puts(b, "true");
        break;
    case JSON_FALSE:
        (void)fatia_buf_puts(b, "false");
        break;
    case JSON_NULL:
        (void)fatia_buf_puts(b, "<nil>");
        break;
    case JSON_ARRAY: {
        size_t i;
        const json_t *el;
        (void)fatia_buf_putc(b, '[');
        json_array_foreach(v, i, el)
        {
            if (i)
                (void)fatia_buf_putc(b, ' ');
            go_print(b, el, depth + 1);
        }
        (void)fatia_buf_putc(b, ']');
        break;
    }
    case JSON_OBJECT: {
        /* Go prints map keys sorted */
        size_t n = json_object_size(v), k = 0;
        const char **keys = fatia_calloc(n ? n : 1, sizeof(*keys));
        const char *key;
        json_t *el;
        if (!keys)
            return;
        json_object_foreach((json_t *)v, key, el) keys[k++] = key;
        for (size_t i = 1; i < n; i++)
            for (size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
                const char *t = keys[j];
                keys[j] = keys[j - 1];
                keys[j - 1] = t;
            }
        (void)fatia_buf_puts(b, "map[");
        for (size_t i = 0; i < n; i++) {
            if (i)
                (void)fatia_buf_putc(b, ' ');
            (void)fatia_buf_printf(b, "%s:", keys[i]);
            go_print(b, json_object_get(v, keys[i]), depth + 1);
        }
        (void)fatia_buf_putc(b, ']');
        fatia_free(keys);
        break;
    }
    }
}

/* upstream's duration.HumanDuration */
static void human_duration(fatia_usec_t d, char *buf, size_t n)
{
    int64_t sec = d / FATIA_USEC_PER_SEC;
    int64_t min = sec / 60, hours = sec / 3600;

    if (sec < -1)
        snprintf(buf, n, "<invalid>");
    else if (sec < 0)
        snprintf(buf, n, "0s");
    else if (sec < 120)
        snprintf(buf, n, "%" PRId64 "s", sec);
    else if (min < 10)
        sec % 60 ? snprintf(buf, n, "%" PRId64 "m%" PRId64 "s", min, sec % 60)
                 : snprintf(buf, n, "%" PRId64 "m", min);
    else if (min < 180)
        snprintf(buf, n, "%" PRId64 "m", min);
    else if (hours < 8)
        min % 60 ? snprintf(buf, n, "%" PRId64 "h%" PRId64 "m", hours, min % 60)
                 : snprintf(buf, n, "%" PRId64 "h", hours);
    else if (hours < 48)
        snprintf(buf, n, "%" PRId64 "h", hours);
    else if (hours < 24 * 8)
        hours % 24 ? snprintf(buf, n, "%" PRId64 "d%" PRId64 "h", hours / 24, hours % 24)
                   : snprintf(buf, n, "%" PRId64 "d", hours / 24);
    else if (hours < 24 * 365 * 2)
        snprintf(buf, n, "%" PRId64 "d", hours / 24);
    else if (hours < 24 * 365 * 8)
        (hours / 24) % 365
            ? snprintf(buf, n, "%" PRId64 "y%" PRId64 "d", hours / 24 / 365, (hours / 24) % 365)
            : snprintf(buf, n, "%" PRId64 "y", hours / 24 / 365);
    else
        snprintf(buf, n, "%" PRId64 "y", hours / 24 / 365);
}

static json_t *date_cell(const json_t *v, fatia_usec_t now)
{
    fatia_usec_t t;
    char age[32];

    if (!json_is_string(v) || fatia_time_parse_rfc3339(json_string_value(v), &t) < 0)
        return json_null();
    human_duration(now - t, age, sizeof(age));
    return json_string(age);
}

static json_t *cell(const struct fatia_column *col, const json_t *obj, fatia_usec_t now)
{
    const json_t *res[1];
    const json_t *v;
    int n;

    if (col->compute) {
        json_t *c = col->compute(obj, now), *age;
        /* a computed date is a timestamp, printed as an age; other text ("<unknown>") as is */
        if (c && !strcmp(col->type, "date") && (age = date_cell(c, now)) && !json_is_null(age)) {
            json_decref(c);
            return age;
        }
        return c ? c : json_null();
    }
    n = fatia_jsonpath_eval(col->json_path, obj, res, 1);
    if (n <= 0)
        return json_null();
    v = res[0];
    if (!strcmp(col->type, "integer")) {
        if (json_is_integer(v))
            return json_integer(json_integer_value(v));
        if (json_is_real(v))
            return json_integer((json_int_t)json_real_value(v));
        if (json_is_string(v)) {
            int64_t i;
            if (fatia_parse_i64(json_string_value(v), &i) == 0)
                return json_integer(i);
        }
        return json_null();
    }
    if (!strcmp(col->type, "number"))
        return json_is_number(v) ? json_real(json_number_value(v)) : json_null();
    if (!strcmp(col->type, "boolean"))
        return json_is_boolean(v) ? json_boolean(json_is_true(v)) : json_null();
    if (!strcmp(col->type, "date"))
        return date_cell(v, now);
    {
        struct fatia_buf b = FATIA_BUF_INIT;
        json_t *s;
        go_print(&b, v, 0);
        s = json_stringn(b.p, b.len);
        fatia_buf_release(&b);
        return s ? s : json_null();
    }
}

/* A kind whose columns include "Age" (kubectl's built-in printers put wide columns after it, and
 * ResourceQuota's REQUEST and LIMIT) or "Created At" (Role, ClusterRole, LimitRange: no Age at
 * all) places them itself; every other kind gets Age last. */
static bool kind_places_age(const struct fatia_kind *k)
{
    for (const struct fatia_column *c = k->columns; c && c->name; c++)
        if (!strcmp(c->name, "Age") || !strcmp(c->name, "Created At"))
            return true;
    return false;
}

json_t *fatia_api_table_columns(const struct fatia_kind *k)
{
    json_t *cols = json_array();

    if (k->columns_whole) {
        for (const struct fatia_column *c = k->columns; c && c->name; c++)
            json_array_append_new(cols,
                                  json_pack("{s:s,s:s,s:s,s:s,s:i}", "name", c->name, "type",
                                            strcmp(c->type, "date") ? c->type : "string", "format",
                                            strcmp(c->name, "Name") ? "" : "name", "description",
                                            c->desc ? c->desc : "", "priority", c->priority));
        return cols;
    }
    json_array_append_new(
        cols, json_pack("{s:s,s:s,s:s,s:s,s:i}", "name", "Name", "type", "string", "format", "name",
                        "description", "Name must be unique within a namespace.", "priority", 0));
    for (const struct fatia_column *c = k->columns; c && c->name; c++)
        json_array_append_new(cols, json_pack("{s:s,s:s,s:s,s:s,s:i}", "name", c->name, "type",
                                              c->type, "format", "", "description",
                                              c->desc ? c->desc : "", "priority", c->priority));
    if (!kind_places_age(k))
        json_array_append_new(cols, json_pack("{s:s,s:s,s:s,s:s,s:i}", "name", "Age", "type",
                                              "date", "format", "", "description",
                                              "CreationTimestamp is a timestamp representing the "
                                              "server time when this object was created.",
                                              "priority", 0));
    return cols;
}

json_t *fatia_api_table_row(const struct rtable *t, const struct fatia_kind_version *ver,
                            const struct objver *v, int include, fatia_usec_t now)
{
    const json_t *meta = json_object_get(v->tree, "metadata");
    json_t *cells = json_array(), *row, *obj = NULL;

    if (!t->kind->columns_whole)
        json_array_append_new(cells, json_string(nz(fatia_json_str(meta, "name"))));
    for (const struct fatia_column *c = t->kind->columns; c && c->name; c++)
        json_array_append_new(cells, cell(c, v->tree, now));
    if (!kind_places_age(t->kind) && !t->kind->columns_whole)
        json_array_append_new(cells, date_cell(json_object_get(meta, "creationTimestamp"), now));
    row = json_pack("{s:o}", "cells", cells);
    if (include == 1) {
        obj = json_pack("{s:s,s:s,s:O}", "kind", "PartialObjectMetadata", "apiVersion",
                        "meta.k8s.io/v1", "metadata", meta);
    } else if (include == 2) {
        obj = fatia_api_served_tree(t, ver, v);
    }
    if (obj)
        json_object_set_new(row, "object", obj);
    return row;
}
