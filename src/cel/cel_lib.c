/*
 * cel/cel_lib.c: the function library of DRA selectors: CEL's standard functions, the string
 * extension functions Kubernetes enables (cel-go ext.Strings), and the Kubernetes quantity and
 * semver libraries (k8s.io/apiserver/pkg/cel/library).
 *
 * Semantics are the upstream ones, function by function: string positions count Unicode
 * characters (charAt, indexOf, substring); replace and split follow Go's strings.Replace and
 * strings.SplitN (an empty separator splits between characters, a negative count means all);
 * int(), uint() and double() of strings parse decimal text as Go's strconv does, and conversions
 * out of range are errors; string(double) prints Go's shortest 'g' form ("1e+06", "0.1");
 * bool() accepts strconv.ParseBool's spellings; quantity.asInteger() fails unless the value is
 * a whole number that fits an int64; Semver precedence ignores build metadata.
 *
 * Each function charges its cost before its work: a tenth of a unit per byte it walks or builds
 * (contains and indexOf: text x pattern), one per list element it builds, and text x program
 * for a regex match, mirroring the static estimate in fatia_cel_check.c.
 */
#include "base/compat.h"

#include <math.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/str.h"
#include "cel/cel_int.h"

/* ---- UTF-8 helpers ---- */

/* Byte offset of code point index cp in s (n bytes); n if cp == count. */
static size_t cp_offset(const char *s, size_t n, size_t cp)
{
    size_t i = 0;

    for (; i < n && cp; i++)
        if (i + 1 >= n || ((unsigned char)s[i + 1] & 0xC0) != 0x80)
            cp--;
    return i;
}

static struct cel_val new_string(struct cel_eval *ev, const char *p, size_t n, int *err)
{
    char *s = fatia_cel_alloc(ev, n + 1);

    if (!s) {
        *err = -ENOMEM;
        return cel_str("", 0);
    }
    if (n)
        memcpy(s, p, n);
    s[n] = '\0';
    *err = 0;
    return cel_str(s, n);
}

static const char *find(const char *hay, size_t hay_n, const char *needle, size_t needle_n)
{
    if (needle_n == 0)
        return hay;
    if (needle_n > hay_n)
        return NULL;
    return memmem(hay, hay_n, needle, needle_n);
}

static bool is_go_space(uint32_t c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

static uint32_t decode_at(const char *s, size_t n, size_t *len)
{
    const unsigned char *u = (const unsigned char *)s;

    if (u[0] < 0x80 || n < 2) {
        *len = 1;
        return u[0];
    }
    if ((u[0] & 0xE0) == 0xC0) {
        *len = 2;
        return ((uint32_t)(u[0] & 0x1F) << 6) | (u[1] & 0x3F);
    }
    if ((u[0] & 0xF0) == 0xE0 && n >= 3) {
        *len = 3;
        return ((uint32_t)(u[0] & 0x0F) << 12) | ((uint32_t)(u[1] & 0x3F) << 6) | (u[2] & 0x3F);
    }
    if (n >= 4) {
        *len = 4;
        return ((uint32_t)(u[0] & 0x07) << 18) | ((uint32_t)(u[1] & 0x3F) << 12) |
               ((uint32_t)(u[2] & 0x3F) << 6) | (u[3] & 0x3F);
    }
    *len = 1;
    return 0xFFFD;
}

/* ---- Go's shortest 'g' formatting of a double ---- */

static void format_double(double d, char *buf, size_t n)
{
    char digits[40], tmp[64];
    int prec, exp, nd;

    if (isnan(d)) {
        snprintf(buf, n, "NaN");
        return;
    }
    if (isinf(d)) {
        snprintf(buf, n, d > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (d == 0) {
        snprintf(buf, n, signbit(d) ? "-0" : "0");
        return;
    }
    /* the fewest significant digits that read back to d */
    for (prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, d);
        if (strtod(tmp, NULL) == d)
            break;
    }
    /* tmp = [-]D.DDDDe[+-]XX */
    {
        const char *p = tmp;
        char *e = strchr(tmp, 'e');
        nd = 0;
        if (*p == '-')
            p++;
        for (; p < e; p++)
            if (*p != '.')
                digits[nd++] = *p;
        digits[nd] = '\0';
        exp = (int)strtol(e + 1, NULL, 10);
    }
    /* Go's %g (strconv 'g', shortest): %e when exp < -4 || exp >= 6 */
    {
        int eprec = 6;
        size_t len = 0;
        if (d < 0)
            len += (size_t)snprintf(buf + len, n - len, "-");
        if (exp < -4 || exp >= eprec) {
            len += (size_t)snprintf(buf + len, n - len, "%c", digits[0]);
            if (nd > 1)
                len += (size_t)snprintf(buf + len, n - len, ".%s", digits + 1);
            snprintf(buf + len, n - len, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
        } else if (exp < 0) {
            len += (size_t)snprintf(buf + len, n - len, "0.");
            for (int i = 0; i < -exp - 1; i++)
                len += (size_t)snprintf(buf + len, n - len, "0");
            snprintf(buf + len, n - len, "%s", digits);
        } else {
            for (int i = 0; i <= exp || i < nd; i++) {
                if (i == exp + 1)
                    len += (size_t)snprintf(buf + len, n - len, ".");
                len += (size_t)snprintf(buf + len, n - len, "%c", i < nd ? digits[i] : '0');
            }
        }
    }
}

/* ---- the functions ---- */

static int no_overload(struct cel_eval *ev, const struct cel_node *n, const struct cel_val *recv,
                       const struct cel_val *args, size_t n_args)
{
    char types[160];
    size_t len = 0;

    types[0] = '\0';
    if (recv)
        len += (size_t)snprintf(types + len, sizeof(types) - len, "%s.", fatia_cel_vk_name(recv));
    len += (size_t)snprintf(types + len, sizeof(types) - len, "(");
    for (size_t i = 0; i < n_args && len < sizeof(types); i++)
        len += (size_t)snprintf(types + len, sizeof(types) - len, "%s%s", i ? ", " : "",
                                fatia_cel_vk_name(&args[i]));
    if (len < sizeof(types))
        snprintf(types + len, sizeof(types) - len, ")");
    return fatia_cel_runtime_error(ev, n, "no such overload for '%s' applied to %s", n->name,
                                   types);
}

static bool all_kinds(const struct cel_val *args, size_t n, const uint8_t *kinds)
{
    for (size_t i = 0; i < n; i++)
        if (args[i].k != kinds[i])
            return false;
    return true;
}

#define KINDS(...) ((const uint8_t[]){__VA_ARGS__})

static int fn_index_of(struct cel_eval *ev, const struct cel_node *n, const struct cel_val *s,
                       const struct cel_val *args, size_t n_args, bool last, struct cel_val *out)
{
    size_t count = fatia_cel_utf8_count(s->s.p, s->s.n), sub_count;
    const struct cel_val *sub = &args[0];
    int64_t start = last ? (int64_t)count : 0;
    int r;

    if (n_args == 2)
        start = args[1].i;
    if (start < 0 || (uint64_t)start > count)
        return fatia_cel_runtime_error(ev, n, "index out of range: %" PRId64, start);
    r = fatia_cel_charge_tenth(ev, s->s.n * (sub->s.n ? sub->s.n : 1));
    if (r < 0)
        return r;
    sub_count = fatia_cel_utf8_count(sub->s.p, sub->s.n);
    if (!last) {
        size_t off = cp_offset(s->s.p, s->s.n, (size_t)start);
        const char *hit = find(s->s.p + off, s->s.n - off, sub->s.p, sub->s.n);
        *out = cel_int(hit ? (int64_t)fatia_cel_utf8_count(s->s.p, (size_t)(hit - s->s.p)) : -1);
        return 0;
    }
    /* lastIndexOf: the last occurrence starting at or before start */
    if (sub_count > count) {
        *out = cel_int(-1);
        return 0;
    }
    for (int64_t i = FATIA_MIN(start, (int64_t)(count - sub_count)); i >= 0; i--) {
        size_t off = cp_offset(s->s.p, s->s.n, (size_t)i);
        if (s->s.n - off >= sub->s.n && !memcmp(s->s.p + off, sub->s.p, sub->s.n)) {
            *out = cel_int(i);
            return 0;
        }
    }
    *out = cel_int(-1);
    return 0;
}

/* Go strings.Replace(s, old, new, n). */
static int fn_replace(struct cel_eval *ev, const struct cel_val *s, const struct cel_val *old,
                      const struct cel_val *with, int64_t limit, struct cel_val *out)
{
    size_t matches = 0, len, pos = 0, o = 0;
    char *p;
    int r;

    /* count the replacements first, to charge and size the result */
    if (old->s.n == 0) {
        matches = fatia_cel_utf8_count(s->s.p, s->s.n) + 1;
    } else {
        for (const char *h = s->s.p;
             (h = find(h, s->s.n - (size_t)(h - s->s.p), old->s.p, old->s.n)); h += old->s.n)
            matches++;
    }
    if (limit >= 0 && (uint64_t)limit < matches)
        matches = (size_t)limit;
    r = fatia_cel_charge_tenth(ev, s->s.n);
    if (r < 0)
        return r;
    if (matches && with->s.n > (SIZE_MAX / 2) / matches)
        return fatia_cel_charge(ev, UINT64_MAX);
    len = s->s.n - matches * old->s.n + matches * with->s.n;
    r = fatia_cel_charge_tenth(ev, len);
    if (r < 0)
        return r;
    p = fatia_cel_alloc(ev, len + 1);
    if (!p)
        return -ENOMEM;
    for (size_t done = 0; done < matches; done++) {
        size_t at;
        if (old->s.n == 0) {
            at = pos;
            if (done > 0) {
                size_t l;
                decode_at(s->s.p + pos, s->s.n - pos, &l);
                at = pos + (pos < s->s.n ? l : 0);
            }
        } else {
            at = (size_t)(find(s->s.p + pos, s->s.n - pos, old->s.p, old->s.n) - s->s.p);
        }
        memcpy(p + o, s->s.p + pos, at - pos);
        o += at - pos;
        memcpy(p + o, with->s.p, with->s.n);
        o += with->s.n;
        pos = at + old->s.n;
    }
    memcpy(p + o, s->s.p + pos, s->s.n - pos);
    o += s->s.n - pos;
    p[o] = '\0';
    *out = cel_str(p, o);
    return 0;
}

/* Go strings.SplitN(s, sep, n). */
static int fn_split(struct cel_eval *ev, const struct cel_val *s, const struct cel_val *sep,
                    int64_t limit, struct cel_val *out)
{
    size_t parts = 0, pos = 0;
    struct cel_list *l;
    int r;

    if (limit == 0) {
        parts = 0;
    } else if (sep->s.n == 0) {
        parts = fatia_cel_utf8_count(s->s.p, s->s.n);
    } else {
        parts = 1;
        for (const char *h = s->s.p;
             (h = find(h, s->s.n - (size_t)(h - s->s.p), sep->s.p, sep->s.n)); h += sep->s.n)
            parts++;
    }
    if (limit > 0 && (uint64_t)limit < parts)
        parts = (size_t)limit;
    r = fatia_cel_charge_tenth(ev, 2 * (uint64_t)s->s.n);
    if (r == 0)
        r = fatia_cel_charge(ev, parts);
    if (r < 0)
        return r;
    l = fatia_cel_alloc(ev, sizeof(*l) + (parts ? parts : 1) * sizeof(struct cel_val));
    if (!l)
        return -ENOMEM;
    for (size_t i = 0; i < parts; i++) {
        size_t end;
        if (i + 1 == parts && sep->s.n) {
            end = s->s.n;
        } else if (sep->s.n == 0) {
            size_t len;
            if (i + 1 == parts) {
                end = s->s.n;
            } else {
                decode_at(s->s.p + pos, s->s.n - pos, &len);
                end = pos + len;
            }
        } else {
            end = (size_t)(find(s->s.p + pos, s->s.n - pos, sep->s.p, sep->s.n) - s->s.p);
        }
        l->v[i] = new_string(ev, s->s.p + pos, end - pos, &r);
        if (r < 0)
            return r;
        pos = end + sep->s.n;
    }
    l->n = parts;
    *out = (struct cel_val){.k = VK_LIST};
    out->l = l;
    return 0;
}

static int fn_join(struct cel_eval *ev, const struct cel_node *n, const struct cel_val *list,
                   const struct cel_val *sep, struct cel_val *out)
{
    size_t len = 0, o = 0;
    char *p;
    int r;

    for (size_t i = 0; i < list->l->n; i++) {
        if (list->l->v[i].k != VK_STRING)
            return fatia_cel_runtime_error(ev, n, "join: list element %zu is %s, not string", i,
                                           fatia_cel_vk_name(&list->l->v[i]));
        len += list->l->v[i].s.n + (i && sep ? sep->s.n : 0);
    }
    r = fatia_cel_charge_tenth(ev, len);
    if (r < 0)
        return r;
    p = fatia_cel_alloc(ev, len + 1);
    if (!p)
        return -ENOMEM;
    for (size_t i = 0; i < list->l->n; i++) {
        if (i && sep) {
            memcpy(p + o, sep->s.p, sep->s.n);
            o += sep->s.n;
        }
        memcpy(p + o, list->l->v[i].s.p, list->l->v[i].s.n);
        o += list->l->v[i].s.n;
    }
    p[o] = '\0';
    *out = cel_str(p, o);
    return 0;
}

/* A CEL string as a C string (must not contain NUL) into buf; false if it does not fit. */
static bool c_string(const struct cel_val *s, char *buf, size_t n)
{
    if (s->s.n >= n || memchr(s->s.p, '\0', s->s.n))
        return false;
    memcpy(buf, s->s.p, s->s.n);
    buf[s->s.n] = '\0';
    return true;
}

static int fn_convert(struct cel_eval *ev, const struct cel_node *n, const struct cel_val *a,
                      struct cel_val *out)
{
    char text[512];
    int r;

    switch (n->fn) {
    case FN_INT:
        switch (a->k) {
        case VK_INT:
            *out = *a;
            return 0;
        case VK_UINT:
            if (a->u > INT64_MAX)
                return fatia_cel_runtime_error(ev, n, "range error converting %" PRIu64 " to int",
                                               a->u);
            *out = cel_int((int64_t)a->u);
            return 0;
        case VK_DOUBLE:
            if (isnan(a->d) || a->d <= -9223372036854775808.0 || a->d >= 9223372036854775807.0)
                return fatia_cel_runtime_error(ev, n, "range error converting %g to int", a->d);
            *out = cel_int((int64_t)a->d);
            return 0;
        case VK_STRING: {
            int64_t v;
            r = fatia_cel_charge_tenth(ev, a->s.n);
            if (r < 0)
                return r;
            if (!c_string(a, text, sizeof(text)) || fatia_parse_i64(text, &v) < 0)
                return fatia_cel_runtime_error(ev, n, "cannot convert string '%.*s' to int",
                                               (int)FATIA_MIN(a->s.n, 64), a->s.p);
            *out = cel_int(v);
            return 0;
        }
        default:
            break;
        }
        break;
    case FN_UINT:
        *out = (struct cel_val){.k = VK_UINT};
        switch (a->k) {
        case VK_INT:
            if (a->i < 0)
                return fatia_cel_runtime_error(ev, n, "range error converting %" PRId64 " to uint",
                                               a->i);
            out->u = (uint64_t)a->i;
            return 0;
        case VK_UINT:
            *out = *a;
            return 0;
        case VK_DOUBLE:
            if (isnan(a->d) || a->d < 0 || a->d >= 18446744073709551615.0)
                return fatia_cel_runtime_error(ev, n, "range error converting %g to uint", a->d);
            out->u = (uint64_t)a->d;
            return 0;
        case VK_STRING:
            r = fatia_cel_charge_tenth(ev, a->s.n);
            if (r < 0)
                return r;
            if (!c_string(a, text, sizeof(text)) || fatia_parse_u64(text, &out->u) < 0)
                return fatia_cel_runtime_error(ev, n, "cannot convert string '%.*s' to uint",
                                               (int)FATIA_MIN(a->s.n, 64), a->s.p);
            return 0;
        default:
            break;
        }
        break;
    case FN_DOUBLE:
        *out = (struct cel_val){.k = VK_DOUBLE};
        switch (a->k) {
        case VK_INT:
            out->d = (double)a->i;
            return 0;
        case VK_UINT:
            out->d = (double)a->u;
            return 0;
        case VK_DOUBLE:
            *out = *a;
            return 0;
        case VK_STRING:
            r = fatia_cel_charge_tenth(ev, a->s.n);
            if (r < 0)
                return r;
            if (!c_string(a, text, sizeof(text)) || fatia_parse_double(text, &out->d) < 0)
                return fatia_cel_runtime_error(ev, n, "cannot convert string '%.*s' to double",
                                               (int)FATIA_MIN(a->s.n, 64), a->s.p);
            return 0;
        default:
            break;
        }
        break;
    case FN_STRING:
        switch (a->k) {
        case VK_INT:
            snprintf(text, sizeof(text), "%" PRId64, a->i);
            break;
        case VK_UINT:
            snprintf(text, sizeof(text), "%" PRIu64, a->u);
            break;
        case VK_DOUBLE:
            format_double(a->d, text, sizeof(text));
            break;
        case VK_BOOL:
            snprintf(text, sizeof(text), "%s", a->b ? "true" : "false");
            break;
        case VK_STRING:
            *out = *a;
            return 0;
        default:
            return no_overload(ev, n, NULL, a, 1);
        }
        r = fatia_cel_charge_tenth(ev, strlen(text));
        if (r < 0)
            return r;
        *out = new_string(ev, text, strlen(text), &r);
        return r;
    case FN_BOOL:
        if (a->k == VK_BOOL) {
            *out = *a;
            return 0;
        }
        if (a->k == VK_STRING) {
            static const char *const t[] = {"1", "t", "T", "TRUE", "true", "True"};
            static const char *const f[] = {"0", "f", "F", "FALSE", "false", "False"};
            for (size_t i = 0; i < FATIA_ARRAY_SIZE(t); i++) {
                if (a->s.n == strlen(t[i]) && !memcmp(a->s.p, t[i], a->s.n)) {
                    *out = cel_bool(true);
                    return 0;
                }
                if (a->s.n == strlen(f[i]) && !memcmp(a->s.p, f[i], a->s.n)) {
                    *out = cel_bool(false);
                    return 0;
                }
            }
            return fatia_cel_runtime_error(ev, n, "cannot convert string '%.*s' to bool",
                                           (int)FATIA_MIN(a->s.n, 64), a->s.p);
        }
        break;
    default:
        break;
    }
    return no_overload(ev, n, NULL, a, 1);
}

static int fn_quantity(struct cel_eval *ev, const struct cel_node *n, const struct cel_val *recv,
                       const struct cel_val *args, size_t n_args, struct cel_val *out)
{
    const struct fatia_quantity *q;
    struct fatia_quantity *res;
    int c, r;

    if (!recv || recv->k != VK_QUANTITY)
        return no_overload(ev, n, recv, args, n_args);
    q = recv->q;
    switch (n->fn) {
    case FN_SIGN:
        *out = cel_int(fatia_quantity_is_zero(q) ? 0 : fatia_quantity_is_negative(q) ? -1 : 1);
        return 0;
    case FN_IS_INTEGER:
    case FN_AS_INTEGER: {
        bool ok = q->nano % FATIA_NANO == 0 && q->nano / FATIA_NANO <= INT64_MAX &&
                  q->nano / FATIA_NANO >= INT64_MIN;
        if (n->fn == FN_IS_INTEGER) {
            *out = cel_bool(ok);
            return 0;
        }
        if (!ok)
            return fatia_cel_runtime_error(ev, n, "cannot convert value to integer");
        *out = cel_int((int64_t)(q->nano / FATIA_NANO));
        return 0;
    }
    case FN_AS_APPROXIMATE_FLOAT:
        *out = (struct cel_val){.k = VK_DOUBLE};
        out->d = (double)q->nano / 1e9;
        return 0;
    default:
        break;
    }
    if (n_args != 1)
        return no_overload(ev, n, recv, args, n_args);
    if (n->fn == FN_ADD || n->fn == FN_SUB) {
        struct fatia_quantity other;
        if (args[0].k == VK_QUANTITY)
            other = *args[0].q;
        else if (args[0].k == VK_INT)
            other = fatia_quantity_from_int(args[0].i, FATIA_Q_DECIMAL_SI);
        else
            return no_overload(ev, n, recv, args, n_args);
        res = fatia_cel_alloc(ev, sizeof(*res));
        if (!res)
            return -ENOMEM;
        r = n->fn == FN_ADD ? fatia_quantity_add(q, &other, res)
                            : fatia_quantity_sub(q, &other, res);
        if (r < 0)
            return fatia_cel_runtime_error(ev, n, "quantity overflow");
        *out = (struct cel_val){.k = VK_QUANTITY};
        out->q = res;
        return 0;
    }
    if (args[0].k != VK_QUANTITY)
        return no_overload(ev, n, recv, args, n_args);
    c = fatia_quantity_cmp(q, args[0].q);
    if (n->fn == FN_COMPARE_TO)
        *out = cel_int(c);
    else if (n->fn == FN_IS_GREATER_THAN)
        *out = cel_bool(c > 0);
    else if (n->fn == FN_IS_LESS_THAN)
        *out = cel_bool(c < 0);
    else
        return no_overload(ev, n, recv, args, n_args);
    return 0;
}

static int fn_semver(struct cel_eval *ev, const struct cel_node *n, const struct cel_val *recv,
                     const struct cel_val *args, size_t n_args, struct cel_val *out)
{
    const struct fatia_semver *v;
    uint64_t part;
    int c;

    if (!recv || recv->k != VK_SEMVER)
        return no_overload(ev, n, recv, args, n_args);
    v = recv->sv;
    switch (n->fn) {
    case FN_MAJOR:
    case FN_MINOR:
    case FN_PATCH:
        part = n->fn == FN_MAJOR ? v->major : n->fn == FN_MINOR ? v->minor : v->patch;
        if (part > INT64_MAX)
            return fatia_cel_runtime_error(ev, n, "integer overflow");
        *out = cel_int((int64_t)part);
        return 0;
    default:
        break;
    }
    if (n_args != 1 || args[0].k != VK_SEMVER)
        return no_overload(ev, n, recv, args, n_args);
    c = fatia_semver_cmp(v, args[0].sv);
    if (n->fn == FN_COMPARE_TO)
        *out = cel_int(c);
    else if (n->fn == FN_IS_GREATER_THAN)
        *out = cel_bool(c > 0);
    else
        *out = cel_bool(c < 0);
    return 0;
}

static int fn_matches(struct cel_eval *ev, const struct cel_node *n, const struct cel_val *text,
                      const struct cel_val *pat, struct cel_val *out)
{
    struct fatia_cel_regex *re = n->re;
    char why[256];
    bool m = false;
    int r;

    if (!re) {
        r = fatia_cel_charge_tenth(ev, pat->s.n);
        if (r < 0)
            return r;
        r = fatia_cel_regex_compile(pat->s.p, pat->s.n, &re, why, sizeof(why));
        if (r == -ENOMEM)
            return r;
        if (r < 0)
            return fatia_cel_runtime_error(ev, n, "invalid regular expression: %s", why);
    }
    r = fatia_cel_charge_tenth(ev, (uint64_t)(text->s.n + 1) * fatia_cel_regex_size(re));
    if (r == 0)
        r = fatia_cel_regex_search(re, text->s.p, text->s.n, &m);
    if (re != n->re)
        fatia_cel_regex_free(re);
    if (r < 0)
        return r;
    *out = cel_bool(m);
    return 0;
}

int fatia_cel_call(struct cel_eval *ev, const struct cel_node *n, const struct cel_val *recv,
                   const struct cel_val *args, size_t n_args, struct cel_val *ret)
{
    const struct cel_val *s = recv ? recv : (n_args ? &args[0] : NULL);
    const struct cel_val *rest = recv ? args : args + 1;
    size_t n_rest = recv ? n_args : (n_args ? n_args - 1 : 0);
    struct cel_val tmp;
    char why[256], text[FATIA_SEMVER_MAX + 1];
    int r;

    switch (n->fn) {
    case FN_SIZE:
        if (!s)
            break;
        if (s->k == VK_DEVMAP) {
            r = fatia_cel_devmap_materialize(ev, s, &tmp);
            if (r < 0)
                return r;
            s = &tmp;
        }
        if (s->k == VK_STRING) {
            r = fatia_cel_charge_tenth(ev, s->s.n);
            if (r < 0)
                return r;
            *ret = cel_int((int64_t)fatia_cel_utf8_count(s->s.p, s->s.n));
            return 0;
        }
        if (s->k == VK_LIST) {
            *ret = cel_int((int64_t)s->l->n);
            return 0;
        }
        if (s->k == VK_MAP) {
            *ret = cel_int((int64_t)s->m->n);
            return 0;
        }
        break;
    case FN_STARTS_WITH:
    case FN_ENDS_WITH:
    case FN_CONTAINS:
        if (!recv || n_args != 1 || !all_kinds(recv, 1, KINDS(VK_STRING)) || args[0].k != VK_STRING)
            break;
        if (n->fn == FN_CONTAINS) {
            r = fatia_cel_charge_tenth(ev, s->s.n * (args[0].s.n ? args[0].s.n : 1));
            if (r < 0)
                return r;
            *ret = cel_bool(find(s->s.p, s->s.n, args[0].s.p, args[0].s.n) != NULL);
            return 0;
        }
        r = fatia_cel_charge_tenth(ev, args[0].s.n);
        if (r < 0)
            return r;
        if (args[0].s.n > s->s.n) {
            *ret = cel_bool(false);
            return 0;
        }
        *ret = cel_bool(!memcmp(n->fn == FN_STARTS_WITH ? s->s.p : s->s.p + s->s.n - args[0].s.n,
                                args[0].s.p, args[0].s.n));
        return 0;
    case FN_MATCHES:
        if (!s || n_rest != 1 || s->k != VK_STRING || rest[0].k != VK_STRING)
            break;
        return fn_matches(ev, n, s, &rest[0], ret);
    case FN_LOWER_ASCII:
    case FN_UPPER_ASCII:
    case FN_TRIM: {
        size_t start = 0, end;
        char *p;
        if (!recv || recv->k != VK_STRING || n_args)
            break;
        r = fatia_cel_charge_tenth(ev, s->s.n);
        if (r < 0)
            return r;
        end = s->s.n;
        if (n->fn == FN_TRIM) {
            size_t len;
            while (start < end && is_go_space(decode_at(s->s.p + start, end - start, &len)))
                start += len;
            while (end > start) {
                size_t b = end - 1;
                while (b > start && ((unsigned char)s->s.p[b] & 0xC0) == 0x80)
                    b--;
                if (!is_go_space(decode_at(s->s.p + b, end - b, &len)))
                    break;
                end = b;
            }
        }
        *ret = new_string(ev, s->s.p + start, end - start, &r);
        if (r < 0)
            return r;
        p = (char *)ret->s.p;
        for (size_t i = 0; n->fn != FN_TRIM && i < ret->s.n; i++) {
            if (n->fn == FN_LOWER_ASCII && p[i] >= 'A' && p[i] <= 'Z')
                p[i] = (char)(p[i] + 32);
            else if (n->fn == FN_UPPER_ASCII && p[i] >= 'a' && p[i] <= 'z')
                p[i] = (char)(p[i] - 32);
        }
        return 0;
    }
    case FN_INDEX_OF:
    case FN_LAST_INDEX_OF:
        if (!recv || recv->k != VK_STRING || !n_args || args[0].k != VK_STRING ||
            (n_args == 2 && args[1].k != VK_INT))
            break;
        return fn_index_of(ev, n, recv, args, n_args, n->fn == FN_LAST_INDEX_OF, ret);
    case FN_SUBSTRING:
    case FN_CHAR_AT: {
        size_t count, b, e;
        int64_t start, end;
        if (!recv || recv->k != VK_STRING || !n_args || args[0].k != VK_INT ||
            (n_args == 2 && args[1].k != VK_INT))
            break;
        r = fatia_cel_charge_tenth(ev, s->s.n);
        if (r < 0)
            return r;
        count = fatia_cel_utf8_count(s->s.p, s->s.n);
        start = args[0].i;
        end = n->fn == FN_CHAR_AT ? start + 1 : n_args == 2 ? args[1].i : (int64_t)count;
        if (start < 0 || (uint64_t)start > count)
            return fatia_cel_runtime_error(ev, n, "index out of range: %" PRId64, start);
        if (n->fn == FN_CHAR_AT && (uint64_t)start == count) {
            *ret = cel_str("", 0);
            return 0;
        }
        if (end < 0 || (uint64_t)end > count)
            return fatia_cel_runtime_error(ev, n, "index out of range: %" PRId64, end);
        if (end < start)
            return fatia_cel_runtime_error(
                ev, n, "invalid substring range. start: %" PRId64 ", end: %" PRId64, start, end);
        b = cp_offset(s->s.p, s->s.n, (size_t)start);
        e = cp_offset(s->s.p, s->s.n, (size_t)end);
        *ret = new_string(ev, s->s.p + b, e - b, &r);
        return r;
    }
    case FN_REPLACE:
        if (!recv || recv->k != VK_STRING || n_args < 2 || args[0].k != VK_STRING ||
            args[1].k != VK_STRING || (n_args == 3 && args[2].k != VK_INT))
            break;
        return fn_replace(ev, recv, &args[0], &args[1], n_args == 3 ? args[2].i : -1, ret);
    case FN_SPLIT:
        if (!recv || recv->k != VK_STRING || !n_args || args[0].k != VK_STRING ||
            (n_args == 2 && args[1].k != VK_INT))
            break;
        return fn_split(ev, recv, &args[0], n_args == 2 ? args[1].i : -1, ret);
    case FN_JOIN:
        if (!recv || recv->k != VK_LIST || (n_args == 1 && args[0].k != VK_STRING))
            break;
        return fn_join(ev, n, recv, n_args ? &args[0] : NULL, ret);
    case FN_INT:
    case FN_UINT:
    case FN_DOUBLE:
    case FN_STRING:
    case FN_BOOL:
        if (recv || n_args != 1)
            break;
        return fn_convert(ev, n, &args[0], ret);
    case FN_DYN:
        if (recv || n_args != 1)
            break;
        *ret = args[0];
        return 0;
    case FN_QUANTITY:
    case FN_IS_QUANTITY: {
        struct fatia_quantity q, *qp;
        if (recv || n_args != 1 || args[0].k != VK_STRING)
            break;
        if (n->q) {
            *ret = (struct cel_val){.k = VK_QUANTITY};
            ret->q = n->q;
            return 0;
        }
        r = fatia_cel_charge_tenth(ev, args[0].s.n);
        if (r < 0)
            return r;
        r = c_string(&args[0], text, sizeof(text))
                ? fatia_quantity_parse(text, &q, why, sizeof(why))
                : -EINVAL;
        if (r < 0 && r != -EINVAL && r != -ERANGE)
            return r;
        if (n->fn == FN_IS_QUANTITY) {
            *ret = cel_bool(r == 0);
            return 0;
        }
        if (r < 0)
            return fatia_cel_runtime_error(ev, n, "invalid quantity '%.*s'",
                                           (int)FATIA_MIN(args[0].s.n, 64), args[0].s.p);
        qp = fatia_cel_alloc(ev, sizeof(*qp));
        if (!qp)
            return -ENOMEM;
        *qp = q;
        *ret = (struct cel_val){.k = VK_QUANTITY};
        ret->q = qp;
        return 0;
    }
    case FN_SEMVER:
    case FN_IS_SEMVER: {
        struct fatia_semver v, *vp;
        bool normalize = false;
        if (recv || !n_args || args[0].k != VK_STRING || (n_args == 2 && args[1].k != VK_BOOL))
            break;
        if (n->sv) {
            *ret = (struct cel_val){.k = VK_SEMVER};
            ret->sv = n->sv;
            return 0;
        }
        if (n_args == 2)
            normalize = args[1].b;
        r = fatia_cel_charge_tenth(ev, args[0].s.n);
        if (r < 0)
            return r;
        r = c_string(&args[0], text, sizeof(text))
                ? fatia_semver_parse(text, normalize, &v, why, sizeof(why))
                : -EINVAL;
        if (n->fn == FN_IS_SEMVER) {
            *ret = cel_bool(r == 0);
            return 0;
        }
        if (r < 0)
            return fatia_cel_runtime_error(ev, n, "invalid semver '%.*s'",
                                           (int)FATIA_MIN(args[0].s.n, 64), args[0].s.p);
        vp = fatia_cel_alloc(ev, sizeof(*vp));
        if (!vp)
            return -ENOMEM;
        *vp = v;
        *ret = (struct cel_val){.k = VK_SEMVER};
        ret->sv = vp;
        return 0;
    }
    case FN_COMPARE_TO:
    case FN_IS_GREATER_THAN:
    case FN_IS_LESS_THAN:
        if (recv && recv->k == VK_SEMVER)
            return fn_semver(ev, n, recv, args, n_args, ret);
        return fn_quantity(ev, n, recv, args, n_args, ret);
    case FN_ADD:
    case FN_SUB:
    case FN_SIGN:
    case FN_IS_INTEGER:
    case FN_AS_INTEGER:
    case FN_AS_APPROXIMATE_FLOAT:
        return fn_quantity(ev, n, recv, args, n_args, ret);
    case FN_MAJOR:
    case FN_MINOR:
    case FN_PATCH:
        return fn_semver(ev, n, recv, args, n_args, ret);
    case FN_NONE:
        break;
    }
    return no_overload(ev, n, recv, args, n_args);
}
