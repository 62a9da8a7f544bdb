/*
 * apiserver/crd_formats.c: the string formats of kube-openapi's strfmt registry
 * (pkg/validation/strfmt/default.go) that crd_rules.c's has_format leaves to this file: uri,
 * isbn, isbn10, isbn13, creditcard, ssn, hexcolor, rgbcolor (their checks are the forked
 * govalidator's, kube-openapi third_party/forked/govalidator). Pure functions of the string.
 *
 * Model: each check is the Go one transcribed, with Go's regexps written out as loops:
 *   - uri: govalidator.IsRequestURI, Go's url.ParseRequestURI: "*", an absolute path, or a
 *     scheme ([A-Za-z][A-Za-z0-9+.-]*:) with anything after it; no control bytes; %-escapes
 *     well formed (path and host); an authority's port all digits;
 *   - isbn10/isbn13 (isbn: either): spaces and '-' removed, then 9 digits and a digit or X with
 *     the mod-11 sum, or 13 digits with the 1-3 weighted check digit;
 *   - creditcard: every non-digit removed, then the card-number pattern (Visa, MasterCard,
 *     Discover, Amex, Diners, JCB) and the Luhn sum;
 *   - ssn: 11 characters, \d{3}[- ]?\d{2}[- ]?\d{4};
 *   - hexcolor: ^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$;
 *   - rgbcolor: rgb(R, G, B), each 0-255 without leading zeros, spaces around them allowed.
 * bsonobjectid is not in kube-openapi's registry (the fork dropped it with the bson dependency),
 * so kube-apiserver accepts any string for it, and so does this server (an unknown format).
 *
 * Rejected: compiling these as RE2 patterns through cel_regex: the loops are shorter than the
 * patterns and need no cache.
 */
#include "base/compat.h"

#include <ctype.h>

#include "apiserver/internal.h"

static bool is_ctl(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}

static bool escapes_ok(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] == '%' && (i + 2 >= n || !isxdigit((unsigned char)s[i + 1]) ||
                            !isxdigit((unsigned char)s[i + 2])))
            return false;
    return true;
}

/* Go's url.ParseRequestURI accepts it. */
static bool is_request_uri(const char *s)
{
    size_t n = strlen(s), i = 0;
    const char *rest, *end, *q;

    if (!n)
        return false;
    for (size_t k = 0; k < n; k++)
        if (is_ctl((unsigned char)s[k]))
            return false;
    if (!strcmp(s, "*"))
        return true;
    if (isalpha((unsigned char)s[0])) {
        while (isalnum((unsigned char)s[i]) || s[i] == '+' || s[i] == '-' || s[i] == '.')
            i++;
        if (s[i] != ':')
            i = 0; /* no scheme: the whole is a path */
    } else if (s[0] == ':') {
        return false; /* missing protocol scheme */
    }
    if (!i) {
        /* no scheme: an absolute path is required of a request URI */
        q = strchr(s, '?');
        return s[0] == '/' && escapes_ok(s, q ? (size_t)(q - s) : n);
    }
    rest = s + i + 1;
    q = strchr(rest, '?');
    end = q ? q : s + n;
    if (rest[0] != '/')
        return true; /* opaque (mailto:x): Go keeps it as is */
    if (rest[1] == '/') {
        const char *auth = rest + 2, *slash = auth, *host, *colon = NULL;
        while (slash < end && *slash != '/')
            slash++;
        host = auth;
        for (const char *p = auth; p < slash; p++)
            if (*p == '@')
                host = p + 1;
        if (!escapes_ok(host, (size_t)(slash - host)))
            return false;
        if (*host == '[') {
            const char *rb = memchr(host, ']', (size_t)(slash - host));
            if (!rb)
                return false; /* missing ']' in host */
            if (rb + 1 < slash) {
                if (rb[1] != ':')
                    return false;
                colon = rb + 1;
            }
        } else {
            for (const char *p = host; p < slash; p++)
                if (*p == ':')
                    colon = p;
        }
        for (const char *p = colon ? colon + 1 : slash; p < slash; p++)
            if (!isdigit((unsigned char)*p))
                return false; /* invalid port */
        rest = slash;
    }
    return escapes_ok(rest, (size_t)(end - rest));
}

static size_t strip(const char *s, char *out, size_t n, bool digits_only)
{
    size_t k = 0;

    for (; *s && k + 1 < n; s++) {
        if (digits_only ? !isdigit((unsigned char)*s) : (isspace((unsigned char)*s) || *s == '-'))
            continue;
        out[k++] = *s;
    }
    out[k] = '\0';
    return *s ? 0 : k; /* too long for out: no match */
}

static bool all_digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return true;
}

static bool is_isbn(const char *s, int version)
{
    char b[64];
    size_t n = strip(s, b, sizeof(b), false);
    int sum = 0;

    if (version == 10) {
        if (n != 10 || !all_digits(b, 9) || !(isdigit((unsigned char)b[9]) || b[9] == 'X'))
            return false;
        for (int i = 0; i < 9; i++)
            sum += (i + 1) * (b[i] - '0');
        sum += 10 * (b[9] == 'X' ? 10 : b[9] - '0');
        return sum % 11 == 0;
    }
    if (n != 13 || !all_digits(b, 13))
        return false;
    for (int i = 0; i < 12; i++)
        sum += (i % 2 ? 3 : 1) * (b[i] - '0');
    return b[12] - '0' == (10 - sum % 10) % 10;
}

static bool prefix_in(const char *s, const char *lo, const char *hi)
{
    size_t n = strlen(lo);

    return strncmp(s, lo, n) >= 0 && strncmp(s, hi, n) <= 0;
}

/* govalidator's rxCreditCard on the digits only. */
static bool card_pattern(const char *d, size_t n)
{
    if (d[0] == '4')
        return n == 13 || n == 16; /* 4[0-9]{12}(?:[0-9]{3})? */
    if (prefix_in(d, "51", "55"))
        return n == 16; /* 5[1-5][0-9]{14} */
    if (!strncmp(d, "6011", 4) || !strncmp(d, "65", 2))
        return n == 16; /* 6(?:011|5[0-9][0-9])[0-9]{12} */
    if (!strncmp(d, "34", 2) || !strncmp(d, "37", 2))
        return n == 15; /* 3[47][0-9]{13} */
    if (prefix_in(d, "300", "305") || !strncmp(d, "36", 2) || !strncmp(d, "38", 2))
        return n == 14; /* 3(?:0[0-5]|[68][0-9])[0-9]{11} */
    if (!strncmp(d, "2131", 4) || !strncmp(d, "1800", 4))
        return n == 15; /* (?:2131|1800)\d{11} */
    if (!strncmp(d, "35", 2))
        return n == 16; /* 35\d{3}\d{11} */
    return false;
}

static bool is_creditcard(const char *s)
{
    char d[64];
    size_t n = strip(s, d, sizeof(d), true);
    int sum = 0;
    bool dbl = false;

    if (!n || !card_pattern(d, n))
        return false;
    for (size_t i = n; i-- > 0;) {
        int v = d[i] - '0';
        if (dbl) {
            v *= 2;
            sum += v >= 10 ? v % 10 + 1 : v;
        } else {
            sum += v;
        }
        dbl = !dbl;
    }
    return sum % 10 == 0;
}

static bool is_ssn(const char *s)
{
    if (strlen(s) != 11 || !all_digits(s, 3))
        return false;
    s += 3;
    if (*s == '-' || *s == ' ')
        s++;
    if (!all_digits(s, 2))
        return false;
    s += 2;
    if (*s == '-' || *s == ' ')
        s++;
    return strlen(s) == 4 && all_digits(s, 4);
}

static bool is_hexcolor(const char *s)
{
    size_t n;

    if (*s == '#')
        s++;
    n = strlen(s);
    if (n != 3 && n != 6)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i]))
            return false;
    return true;
}

/* (0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5]) surrounded by \s*, then sep. */
static const char *rgb_part(const char *s, char sep)
{
    const char *d;
    int v = 0;
    size_t n;

    while (isspace((unsigned char)*s))
        s++;
    d = s;
    while (isdigit((unsigned char)*s))
        v = v * 10 + (*s++ - '0');
    n = (size_t)(s - d);
    if (!n || n > 3 || (n > 1 && d[0] == '0') || v > 255)
        return NULL;
    while (isspace((unsigned char)*s))
        s++;
    return *s == sep ? s + 1 : NULL;
}

static bool is_rgbcolor(const char *s)
{
    if (strncmp(s, "rgb(", 4))
        return false;
    s += 4;
    if (!(s = rgb_part(s, ',')) || !(s = rgb_part(s, ',')) || !(s = rgb_part(s, ')')))
        return false;
    return !*s;
}

int fatia_api_crd_format(const char *fmt, const char *s)
{
    if (!strcmp(fmt, "uri"))
        return is_request_uri(s);
    if (!strcmp(fmt, "isbn"))
        return is_isbn(s, 10) || is_isbn(s, 13);
    if (!strcmp(fmt, "isbn10"))
        return is_isbn(s, 10);
    if (!strcmp(fmt, "isbn13"))
        return is_isbn(s, 13);
    if (!strcmp(fmt, "creditcard"))
        return is_creditcard(s);
    if (!strcmp(fmt, "ssn"))
        return is_ssn(s);
    if (!strcmp(fmt, "hexcolor"))
        return is_hexcolor(s);
    if (!strcmp(fmt, "rgbcolor"))
        return is_rgbcolor(s);
    return -1;
}
