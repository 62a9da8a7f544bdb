/*
 * gateway/reqbody.c: the request body scanner (see reqbody.h).
 *
 * A recursive-descent skipper bounded by FATIA_REQBODY_MAX_DEPTH (an explicit depth counter, not
 * the C stack: nested containers are skipped by a loop that counts brackets and skips strings).
 * Strings are skipped with memchr for the next quote, then backslashes before it are counted: an
 * odd count means the quote is escaped. That keeps a 400 KB prompt at memchr speed.
 */
#include "base/compat.h"

#include "gateway/reqbody.h"

#include "base/error.h"

struct scan {
    const char *p, *end, *base;
    char *why;
    size_t why_n;
};

static int fail(struct scan *s, const char *what)
{
    snprintf(s->why, s->why_n, "%s at byte %zu", what, (size_t)(s->p - s->base));
    return -FATIA_E_PARSE;
}

static void ws(struct scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

/* At an opening quote: skips the string, returning its contents (escaped). */
static int string(struct scan *s, struct fatia_str *ret)
{
    const char *start = ++s->p;

    for (;;) {
        const char *q = memchr(s->p, '"', (size_t)(s->end - s->p));
        size_t bs = 0;
        if (!q)
            return fail(s, "unterminated string");
        for (const char *b = q; b > start && b[-1] == '\\'; b--)
            bs++;
        s->p = q + 1;
        if (bs % 2 == 0) {
            if (ret)
                *ret = (struct fatia_str){start, (size_t)(q - start)};
            return 0;
        }
    }
}

/* Skips a number or a literal, returning its text. */
static int scalar(struct scan *s, struct fatia_str *ret)
{
    const char *start = s->p;

    while (s->p < s->end && ((*s->p >= '0' && *s->p <= '9') || (*s->p >= 'a' && *s->p <= 'z') ||
                             *s->p == '-' || *s->p == '+' || *s->p == '.' || *s->p == 'E'))
        s->p++;
    if (s->p == start)
        return fail(s, "unexpected character");
    *ret = (struct fatia_str){start, (size_t)(s->p - start)};
    if (fatia_str_eqz(*ret, "true") || fatia_str_eqz(*ret, "false") ||
        fatia_str_eqz(*ret, "null") || (start[0] == '-' || (start[0] >= '0' && start[0] <= '9')))
        return 0;
    return fail(s, "invalid literal");
}

/* Skips any value; for a container, returns its raw text in ret. depth is that of the value. */
static int value(struct scan *s, int depth, struct fatia_str *ret)
{
    const char *start;
    int d = 0;

    ws(s);
    if (s->p >= s->end)
        return fail(s, "unexpected end of body");
    if (*s->p == '"')
        return string(s, ret);
    if (*s->p != '{' && *s->p != '[')
        return scalar(s, ret);
    /* a container: count brackets, skip strings; structure inside is checked loosely (the
     * brackets must balance and match) */
    start = s->p;
    {
        char stack[FATIA_REQBODY_MAX_DEPTH];
        while (s->p < s->end) {
            char c = *s->p;
            if (c == '"') {
                int r = string(s, NULL);
                if (r < 0)
                    return r;
                continue;
            }
            if (c == '{' || c == '[') {
                if (depth + d >= FATIA_REQBODY_MAX_DEPTH)
                    return fail(s, "nested too deep");
                stack[d++] = c == '{' ? '}' : ']';
            } else if (c == '}' || c == ']') {
                if (!d || stack[d - 1] != c)
                    return fail(s, "mismatched bracket");
                if (--d == 0) {
                    s->p++;
                    if (ret)
                        *ret = (struct fatia_str){start, (size_t)(s->p - start)};
                    return 0;
                }
            } else if ((unsigned char)c < 0x20 && c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                return fail(s, "control character");
            }
            s->p++;
        }
    }
    return fail(s, "unterminated container");
}

int fatia_reqbody_scan(const char *body, size_t n, struct fatia_reqbody *ret, char *why,
                       size_t why_n)
{
    struct scan s = {body, body + n, body, why, why_n};
    struct fatia_reqbody r = {.max_tokens = -1};
    bool first = true;
    int rc;

    ws(&s);
    if (s.p >= s.end || *s.p != '{')
        return fail(&s, "expected a JSON object");
    s.p++;
    for (;;) {
        struct fatia_str key, v;
        ws(&s);
        if (s.p < s.end && *s.p == '}' && first) {
            s.p++;
            break;
        }
        if (s.p >= s.end || *s.p != '"')
            return fail(&s, "expected a member name");
        if ((rc = string(&s, &key)) < 0)
            return rc;
        ws(&s);
        if (s.p >= s.end || *s.p != ':')
            return fail(&s, "expected ':'");
        s.p++;
        ws(&s);
        {
            bool is_str = s.p < s.end && *s.p == '"';
            if ((rc = value(&s, 1, &v)) < 0)
                return rc;
            if (fatia_str_eqz(key, "model") && is_str) {
                r.model = v;
                r.has_model = true;
            } else if (fatia_str_eqz(key, "prompt") || fatia_str_eqz(key, "messages") ||
                       fatia_str_eqz(key, "input")) {
                r.prompt = v;
                r.prompt_is_string = is_str;
            } else if (fatia_str_eqz(key, "cache_salt") && is_str) {
                r.cache_salt = v;
            } else if (fatia_str_eqz(key, "stream")) {
                r.stream = fatia_str_eqz(v, "true");
            } else if ((fatia_str_eqz(key, "max_tokens") ||
                        fatia_str_eqz(key, "max_completion_tokens")) &&
                       !is_str && v.n && v.n < 19 && v.p[0] >= '0' && v.p[0] <= '9') {
                int64_t t = 0;
                size_t k;
                for (k = 0; k < v.n && v.p[k] >= '0' && v.p[k] <= '9'; k++)
                    t = t * 10 + (v.p[k] - '0');
                if (k == v.n)
                    r.max_tokens = t;
            }
        }
        first = false;
        ws(&s);
        if (s.p < s.end && *s.p == ',') {
            s.p++;
            continue;
        }
        if (s.p < s.end && *s.p == '}') {
            s.p++;
            break;
        }
        return fail(&s, "expected ',' or '}'");
    }
    ws(&s);
    if (s.p != s.end)
        return fail(&s, "trailing bytes after the object");
    *ret = r;
    return 0;
}
