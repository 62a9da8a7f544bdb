/*
 * base/json_enc.c: a compact JSON encoder for jansson trees, byte for byte jansson's own
 * json_dump_callback(v, ..., JSON_COMPACT [| JSON_REAL_PRECISION(n)]) output (see json.h).
 *
 * Why: jansson's dump looks at every byte of every string through utf8_iterate and hands the
 * text to its callback in many small pieces; on a create of a 2 KB object that was a quarter of
 * fatiad's instructions (docs/perf-create.md). Here a string's ASCII runs are scanned with a
 * tight loop and copied in one append.
 *
 * Equality with jansson is the invariant, kept by construction where it is cheap and by
 * delegation where it is not:
 *   - objects in jansson's iteration order (insertion order: what json_dump_callback uses
 *     without JSON_SORT_KEYS), keys with their length (a key may hold a NUL), "," and ":";
 *   - strings: '"' and '\\' escaped, \b \f \n \r \t, other bytes below 0x20 as \u00XX (upper
 *     case hex), '/' and DEL as they are;
 *   - a string with any byte >= 0x80 (UTF-8 to check), a real, and every flag but JSON_COMPACT
 *     and JSON_REAL_PRECISION go to jansson itself, so that its UTF-8 rules and its number
 *     formatting are not re-implemented;
 *   - integers as "%" JSON_INTEGER_FORMAT, true, false, null.
 * One difference, on purpose: a key of invalid UTF-8 (which only json_object_setn_nocheck can
 * make: parsed keys are checked) fails here, where jansson ignores its own error and writes
 * broken JSON ({":true}).
 * tests/unit/test_json_enc.c compares the two on random trees (and fuzz/fuzz_json_enc.c on
 * arbitrary documents).
 *
 * The parse side is json_dec.c; the ASCII runs of both are json_scan.h's.
 */
#include "base/compat.h"

#include "base/error.h"
#include "base/json.h"
#include "base/json_scan.h"

static int jansson_cb(const char *s, size_t n, void *data)
{
    return fatia_buf_append(data, s, n) < 0 ? -1 : 0;
}

static int via_jansson(const json_t *v, struct fatia_buf *b, size_t flags)
{
    return json_dump_callback(v, jansson_cb, b, flags | JSON_ENCODE_ANY) < 0 ? -1 : 0;
}

static int enc_string(const char *s, size_t n, struct fatia_buf *b, size_t flags)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t i = 0, run;

    if (!fatia_json_is_ascii(s, n)) {
        /* UTF-8 to validate: jansson's rules, by jansson */
        json_t *t = json_stringn_nocheck(s, n);
        int r = t ? via_jansson(t, b, flags) : -1;
        json_decref(t);
        return r;
    }
    if (fatia_buf_putc(b, '"') < 0)
        return -1;
    while (i < n) {
        run = i + fatia_json_plain_run(s + i, n - i); /* all ASCII: stops at an escape */
        if (run > i && fatia_buf_append(b, s + i, run - i) < 0)
            return -1;
        if (run == n)
            break;
        {
            unsigned char c = (unsigned char)s[run];
            char esc[7] = {'\\', 0};
            size_t len = 2;
            switch (c) {
            case '"':
                esc[1] = '"';
                break;
            case '\\':
                esc[1] = '\\';
                break;
            case '\b':
                esc[1] = 'b';
                break;
            case '\f':
                esc[1] = 'f';
                break;
            case '\n':
                esc[1] = 'n';
                break;
            case '\r':
                esc[1] = 'r';
                break;
            case '\t':
                esc[1] = 't';
                break;
            default:
                esc[1] = 'u';
                esc[2] = '0';
                esc[3] = '0';
                esc[4] = hex[c >> 4];
                esc[5] = hex[c & 0x0f];
                len = 6;
            }
            if (fatia_buf_append(b, esc, len) < 0)
                return -1;
        }
        i = run + 1;
    }
    return fatia_buf_putc(b, '"') < 0 ? -1 : 0;
}

static int enc(const json_t *v, struct fatia_buf *b, size_t flags, int depth)
{
    char num[32];
    int n;

    if (depth > 256)
        return via_jansson(v, b, flags); /* no recursion without bound here */
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        void *it = json_object_iter((json_t *)v);
        bool first = true;
        if (fatia_buf_putc(b, '{') < 0)
            return -1;
        for (; it; it = json_object_iter_next((json_t *)v, it), first = false) {
            if ((!first && fatia_buf_putc(b, ',') < 0) ||
                enc_string(json_object_iter_key(it), json_object_iter_key_len(it), b, flags) < 0 ||
                fatia_buf_putc(b, ':') < 0 || enc(json_object_iter_value(it), b, flags, depth + 1))
                return -1;
        }
        return fatia_buf_putc(b, '}') < 0 ? -1 : 0;
    }
    case JSON_ARRAY: {
        size_t len = json_array_size(v);
        if (fatia_buf_putc(b, '[') < 0)
            return -1;
        for (size_t i = 0; i < len; i++)
            if ((i && fatia_buf_putc(b, ',') < 0) || enc(json_array_get(v, i), b, flags, depth + 1))
                return -1;
        return fatia_buf_putc(b, ']') < 0 ? -1 : 0;
    }
    case JSON_STRING:
        return enc_string(json_string_value(v), json_string_length(v), b, flags);
    case JSON_INTEGER:
        n = snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return fatia_buf_append(b, num, (size_t)n) < 0 ? -1 : 0;
    case JSON_REAL:
        return via_jansson(v, b, flags);
    case JSON_TRUE:
        return fatia_buf_puts(b, "true") < 0 ? -1 : 0;
    case JSON_FALSE:
        return fatia_buf_puts(b, "false") < 0 ? -1 : 0;
    case JSON_NULL:
        return fatia_buf_puts(b, "null") < 0 ? -1 : 0;
    }
    return -1;
}

int fatia_json_encode_compact(const json_t *v, struct fatia_buf *b, size_t flags)
{
    size_t before = b->len;

    if (!(flags & JSON_COMPACT) || (flags & ~(size_t)(JSON_COMPACT | JSON_REAL_PRECISION(31))) ||
        !v || (!json_is_object(v) && !json_is_array(v))) {
        /* not the shape this encoder covers: jansson, with its own rules for the rest */
        if (json_dump_callback(v, jansson_cb, b, flags) < 0)
            goto out_fail;
        return 0;
    }
    if (enc(v, b, flags, 0) < 0)
        goto out_fail;
    return 0;

out_fail:
    fatia_buf_truncate(b, before);
    return -ENOMEM;
}
