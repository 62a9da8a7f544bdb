/*
 * base/json_dec.c: a JSON parser that builds the same jansson tree as json_loadb(p, n, flags,
 * err) (see json.h: fatia_json_loadb), faster on the common case, and hands every other case to
 * json_loadb itself.
 *
 * Why: jansson's lexer pulls each byte through a stream callback, checks it for UTF-8 and
 * appends it to a string buffer (lex_get_save, strbuffer_append_byte): some 130 instructions a
 * byte, 42 % of a create's instructions (docs/perf-create.md). Here ASCII runs of a string are
 * scanned in a tight loop over the buffer and the tree is built with the same jansson calls the
 * parser makes.
 *
 * The invariant: the result is json_loadb's, tree and error alike. It is kept by parsing only
 * what is certain and by giving the whole input to json_loadb on anything else:
 *   - this parser either builds the tree json_loadb would build (the same calls in the same
 *     order: json_object, json_object_setn_new_nocheck with keys of known-valid UTF-8,
 *     json_array_append_new, json_stringn_nocheck, json_integer, the singletons), or gives up;
 *     giving up frees what it built and returns json_loadb(p, n, flags, err);
 *   - so every error, with its text, line, column and position (fatiad shows them in 400
 *     answers), is jansson's own: on any doubt or any error this parser has no error of its own;
 *   - it gives up on: anything not of JSON's grammar; invalid UTF-8 (jansson's rules are
 *     UTF-8's: no overlong forms, no surrogates, nothing above U+10FFFF, the checks below);
 *     control bytes in strings; \u0000 (an error without JSON_ALLOW_NUL, a NUL in a key always);
 *     a lone or mismatched surrogate escape; a duplicate key under JSON_REJECT_DUPLICATES
 *     (without it the later value replaces the earlier one, as jansson's set does); an integer
 *     of more than 19 digits or out of int64's range (jansson's strtoll gives ERANGE); nesting
 *     deeper than 512 (jansson's limit is 2,048); out of memory; any flag but
 *     JSON_REJECT_DUPLICATES, JSON_DECODE_ANY and JSON_ALLOW_NUL;
 *   - a real is parsed by jansson: json_loadb(token, JSON_DECODE_ANY) of the number's own text
 *     (a number's lexing does not depend on what is around it), so its double is jansson's;
 *   - on success, err is what json_loadb leaves: empty text, source "<buffer>", line and
 *     column -1, position n (its lexer has read to the end).
 * tests/unit/test_json_dec.c compares the two on random and mutated documents (trees, dumps,
 * errors); fuzz/fuzz_json_dec.c on arbitrary bytes.
 *
 * The depth and size limits of a request body are checked before parsing, by
 * fatia_api_body_check, as before: this parser changes nothing of that contract.
 */
#include "base/compat.h"

#include <errno.h>

#include "base/alloc.h"
#include "base/json.h"
#include "base/json_scan.h"

#define DEC_MAX_DEPTH 512
#define DEC_FLAGS     ((size_t)(JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_ALLOW_NUL))

struct dec {
    const unsigned char *p, *end;
    size_t flags;
    unsigned depth;
    char *scratch; /* decoded text of a string with escapes */
    size_t cap;
};

/* 1: a byte that stands for itself in a string (ASCII, not a control, '"' or '\\'). */
#define P1(c)  ((c) >= 0x20 && (c) < 0x80 && (c) != '"' && (c) != '\\')
#define P4(c)  P1(c), P1((c) + 1), P1((c) + 2), P1((c) + 3)
#define P16(c) P4(c), P4((c) + 4), P4((c) + 8), P4((c) + 12)
#define P64(c) P16(c), P16((c) + 16), P16((c) + 32), P16((c) + 48)
static const unsigned char plain[256] = {P64(0), P64(64), P64(128), P64(192)};
#undef P64
#undef P16
#undef P4
#undef P1

static bool is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void skip_ws(struct dec *d)
{
    while (d->p < d->end && is_ws(*d->p))
        d->p++;
}

/* Length of the valid UTF-8 sequence at s (first byte >= 0x80), 0 if none: the ranges of RFC
 * 3629 §4, which are jansson's utf8_check_first and utf8_check_full. */
static size_t utf8_seq(const unsigned char *s, const unsigned char *end)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;
    size_t n;

    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0; /* overlong */
        else if (c == 0xED)
            hi = 0x9F; /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90; /* overlong */
        else if (c == 0xF4)
            hi = 0x8F; /* above U+10FFFF */
    } else
        return 0;
    if ((size_t)(end - s) < n || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return n;
}

static int hex4(const unsigned char *s)
{
    int v = 0;

    for (int i = 0; i < 4; i++) {
        unsigned char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= c - '0';
        else if (c >= 'a' && c <= 'f')
            v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            v |= c - 'A' + 10;
        else
            return -1;
    }
    return v;
}

static size_t utf8_put(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* The rest of a string with escapes, from d->p (at a '\\') on; s is the string's first byte.
 * The decoded text goes to d->scratch. -1 to give up. */
static int string_escaped(struct dec *d, const unsigned char *s, const char **ret, size_t *ret_n)
{
    size_t want = (size_t)(d->end - s), o = (size_t)(d->p - s);
    const unsigned char *p = d->p, *end = d->end;
    char *out;

    /* the decoded text is at most as long as the source (as jansson's own bound) */
    if (want > d->cap) {
        char *t = fatia_realloc(d->scratch, want);
        if (!t)
            return -1;
        d->scratch = t;
        d->cap = want;
    }
    out = d->scratch;
    memcpy(out, s, o);
    while (p < end) {
        unsigned char c = *p;
        if (plain[c]) {
            out[o++] = (char)c;
            p++;
        } else if (c == '"') {
            d->p = p + 1;
            *ret = out;
            *ret_n = o;
            return 0;
        } else if (c == '\\') {
            int cp;
            if (end - p < 2)
                return -1;
            switch (p[1]) {
            case '"':
            case '\\':
            case '/':
                out[o++] = (char)p[1];
                break;
            case 'b':
                out[o++] = '\b';
                break;
            case 'f':
                out[o++] = '\f';
                break;
            case 'n':
                out[o++] = '\n';
                break;
            case 'r':
                out[o++] = '\r';
                break;
            case 't':
                out[o++] = '\t';
                break;
            case 'u':
                if (end - p < 6 || (cp = hex4(p + 2)) <= 0)
                    return -1; /* \u0000: jansson's error (keys) or its NUL rules */
                if (cp >= 0xDC00 && cp <= 0xDFFF)
                    return -1;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    int lo;
                    if (end - p < 12 || p[6] != '\\' || p[7] != 'u' ||
                        (lo = hex4(p + 8)) < 0xDC00 || lo > 0xDFFF)
                        return -1;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    p += 6;
                }
                o += utf8_put((uint32_t)cp, out + o);
                p += 4;
                break;
            default:
                return -1;
            }
            p += 2;
        } else if (c >= 0x80) {
            size_t k = utf8_seq(p, end);
            if (!k)
                return -1;
            memcpy(out + o, p, k);
            o += k;
            p += k;
        } else
            return -1; /* a control byte */
    }
    return -1;
}

/* A string at d->p (just past its '"'): its text, borrowed from the input or from d->scratch
 * (valid until the next string). -1 to give up. */
static int string(struct dec *d, const char **ret, size_t *ret_n)
{
    const unsigned char *s = d->p, *p = s, *end = d->end;

    for (;;) {
        p += fatia_json_plain_run((const char *)p, (size_t)(end - p));
        if (p == end)
            return -1;
        if (*p == '"') {
            *ret = (const char *)s;
            *ret_n = (size_t)(p - s);
            d->p = p + 1;
            return 0;
        }
        if (*p < 0x80) {
            if (*p != '\\')
                return -1; /* a control byte */
            d->p = p;
            return string_escaped(d, s, ret, ret_n);
        }
        {
            size_t k = utf8_seq(p, end);
            if (!k)
                return -1;
            p += k;
        }
    }
}

static bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* A number at d->p: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? as jansson's lexer reads it.
 * After it the caller looks for what may follow a value, so "01" and "1x" are given up there. */
static json_t *number(struct dec *d)
{
    const unsigned char *s = d->p, *p = s, *end = d->end, *digits;
    bool neg = false, real = false;
    size_t nd;

    if (*p == '-') {
        neg = true;
        p++;
    }
    digits = p;
    if (p == end || !is_digit(*p))
        return NULL;
    if (*p == '0')
        p++;
    else
        while (p < end && is_digit(*p))
            p++;
    nd = (size_t)(p - digits);
    if (p < end && *p == '.') {
        real = true;
        if (++p == end || !is_digit(*p))
            return NULL;
        while (p < end && is_digit(*p))
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        real = true;
        if (++p < end && (*p == '+' || *p == '-'))
            p++;
        if (p == end || !is_digit(*p))
            return NULL;
        while (p < end && is_digit(*p))
            p++;
    }
    d->p = p;
    if (real) /* jansson's strtod of the same text: its double and its overflow rule */
        return json_loadb((const char *)s, (size_t)(p - s), JSON_DECODE_ANY, NULL);
    if (nd <= 18) {
        int64_t v = 0;
        for (size_t i = 0; i < nd; i++)
            v = v * 10 + (digits[i] - '0');
        return json_integer(neg ? -v : v);
    }
    if (nd == 19) {
        char tmp[24];
        long long v;
        char *e;
        memcpy(tmp, s, (size_t)(p - s));
        tmp[p - s] = '\0';
        errno = 0;
        v = strtoll(tmp, &e, 10);
        if (errno == ERANGE || *e)
            return NULL;
        return json_integer((json_int_t)v);
    }
    return NULL; /* too big for int64: jansson's error */
}

static json_t *value(struct dec *d);

static bool lit(struct dec *d, const char *w, size_t n)
{
    if ((size_t)(d->end - d->p) < n || memcmp(d->p, w, n))
        return false;
    d->p += n;
    return true;
}

static json_t *object(struct dec *d)
{
    json_t *o = json_object();

    if (!o)
        return NULL;
    skip_ws(d);
    if (d->p < d->end && *d->p == '}') {
        d->p++;
        return o;
    }
    for (;;) {
        const char *k;
        char *kcopy = NULL;
        size_t kn, before = json_object_size(o);
        json_t *v;
        int r;

        if (d->p == d->end || *d->p != '"')
            goto out_fail;
        d->p++;
        if (string(d, &k, &kn) < 0)
            goto out_fail;
        if (k == d->scratch) { /* the value's strings reuse the scratch */
            if (!(kcopy = fatia_malloc(kn ? kn : 1)))
                goto out_fail;
            memcpy(kcopy, k, kn);
            k = kcopy;
        }
        skip_ws(d);
        if (d->p == d->end || *d->p != ':') {
            fatia_free(kcopy);
            goto out_fail;
        }
        d->p++;
        v = value(d);
        if (!v) {
            fatia_free(kcopy);
            goto out_fail;
        }
        r = json_object_setn_new_nocheck(o, k, kn, v);
        fatia_free(kcopy);
        /* a duplicate key replaced a value (jansson's set does the same); refused under
         * JSON_REJECT_DUPLICATES, with jansson's error */
        if (r < 0 || ((d->flags & JSON_REJECT_DUPLICATES) && json_object_size(o) == before))
            goto out_fail;
        skip_ws(d);
        if (d->p == d->end)
            goto out_fail;
        if (*d->p == '}') {
            d->p++;
            return o;
        }
        if (*d->p != ',')
            goto out_fail;
        d->p++;
        skip_ws(d);
    }

out_fail:
    json_decref(o);
    return NULL;
}

static json_t *array(struct dec *d)
{
    json_t *a = json_array();

    if (!a)
        return NULL;
    skip_ws(d);
    if (d->p < d->end && *d->p == ']') {
        d->p++;
        return a;
    }
    for (;;) {
        json_t *v = value(d);
        if (!v || json_array_append_new(a, v) < 0)
            goto out_fail;
        skip_ws(d);
        if (d->p == d->end)
            goto out_fail;
        if (*d->p == ']') {
            d->p++;
            return a;
        }
        if (*d->p != ',')
            goto out_fail;
        d->p++;
    }

out_fail:
    json_decref(a);
    return NULL;
}

static json_t *value(struct dec *d)
{
    const char *s;
    size_t n;
    json_t *v = NULL;

    skip_ws(d);
    if (d->p == d->end)
        return NULL;
    switch (*d->p) {
    case '{':
    case '[':
        if (++d->depth > DEC_MAX_DEPTH)
            return NULL;
        d->p++;
        v = d->p[-1] == '{' ? object(d) : array(d);
        d->depth--;
        return v;
    case '"':
        d->p++;
        return string(d, &s, &n) < 0 ? NULL : json_stringn_nocheck(s, n);
    case 't':
        return lit(d, "true", 4) ? json_true() : NULL;
    case 'f':
        return lit(d, "false", 5) ? json_false() : NULL;
    case 'n':
        return lit(d, "null", 4) ? json_null() : NULL;
    default:
        return number(d);
    }
}

json_t *fatia_json_loadb_fast(const char *p, size_t n, size_t flags)
{
    struct dec d = {
        .p = (const unsigned char *)p, .end = (const unsigned char *)p + n, .flags = flags};
    json_t *v = NULL;

    if (!p || (flags & ~DEC_FLAGS))
        return NULL;
    skip_ws(&d);
    if ((flags & JSON_DECODE_ANY) || (d.p < d.end && (*d.p == '{' || *d.p == '[')))
        v = value(&d);
    skip_ws(&d);
    if (v && d.p != d.end) { /* jansson's "end of file expected" */
        json_decref(v);
        v = NULL;
    }
    fatia_free(d.scratch);
    return v;
}

json_t *fatia_json_loadb(const char *p, size_t n, size_t flags, json_error_t *err)
{
    json_t *v = fatia_json_loadb_fast(p, n, flags);

    if (!v)
        return json_loadb(p, n, flags, err); /* jansson's tree or jansson's error */
    if (err) {                               /* as json_loadb leaves it on success */
        err->text[0] = '\0';
        memcpy(err->source, "<buffer>", sizeof("<buffer>"));
        err->line = -1;
        err->column = -1;
        err->position = (int)n;
    }
    return v;
}
