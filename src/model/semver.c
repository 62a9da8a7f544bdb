/*
 * model/semver.c: semantic versions (see semver.h).
 *
 * Parsing follows blang/semver/v4 Parse step by step (split on the first two dots, then cut the
 * build metadata at the first '+' and the prerelease at the first '-' of the rest), so that a
 * version accepted here is accepted by kube-apiserver's ResourceSlice validation and by the CEL
 * `semver()` function, with the same messages on failure. The prerelease is kept as text and
 * split again when comparing: versions are short (64 characters in a ResourceSlice) and compared
 * rarely, so a parsed identifier list would buy nothing.
 */
#include "base/compat.h"

#include "model/semver.h"

#include <errno.h>

static bool all_in(const char *s, size_t n, bool alnum)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = (c >= '0' && c <= '9') ||
                  (alnum && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-'));
        if (!ok)
            return false;
    }
    return true;
}

static int why_set(char *why, size_t why_n, const char *fmt, ...) FATIA_PRINTF(3, 4);

static int why_set(char *why, size_t why_n, const char *fmt, ...)
{
    va_list ap;

    if (why && why_n) {
        va_start(ap, fmt);
        vsnprintf(why, why_n, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

static int parse_num(const char *s, size_t n, const char *what, uint64_t *ret, char *why,
                     size_t why_n)
{
    uint64_t v = 0;

    if (!all_in(s, n, false))
        return why_set(why, why_n, "Invalid character(s) found in %s number \"%.*s\"", what, (int)n,
                       s);
    if (n > 1 && s[0] == '0')
        return why_set(why, why_n, "%c%s number must not contain leading zeroes \"%.*s\"",
                       what[0] - 32, what + 1, (int)n, s);
    if (n == 0)
        return why_set(why, why_n, "strconv.ParseUint: parsing \"\": invalid syntax");
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return why_set(why, why_n, "strconv.ParseUint: parsing \"%.*s\": value out of range",
                           (int)n, s);
        v = v * 10 + d;
    }
    *ret = v;
    return 0;
}

/* Checks a dot-separated identifier list (prerelease or build). */
static int check_idents(const char *s, size_t n, bool pre, char *why, size_t why_n)
{
    size_t start = 0;

    for (size_t i = 0; i <= n; i++) {
        const char *id;
        size_t len;
        if (i < n && s[i] != '.')
            continue;
        id = s + start;
        len = i - start;
        start = i + 1;
        if (len == 0)
            return why_set(why, why_n, pre ? "Prerelease is empty" : "Build meta data is empty");
        if (pre && all_in(id, len, false)) {
            if (len > 1 && id[0] == '0')
                return why_set(why, why_n,
                               "Numeric PreRelease version must not contain leading zeroes "
                               "\"%.*s\"",
                               (int)len, id);
            if (len > 19)
                return why_set(why, why_n,
                               "strconv.ParseUint: parsing \"%.*s\": value out of "
                               "range",
                               (int)len, id);
        } else if (!all_in(id, len, true)) {
            return why_set(why, why_n, "Invalid character(s) found in %s \"%.*s\"",
                           pre ? "prerelease" : "build meta data", (int)len, id);
        }
    }
    return 0;
}

/* normalizeAndParse: "v1.2" -> "1.2.0", "01.02.03" -> "1.2.3". */
static void normalize(const char *s, char *out, size_t out_n)
{
    const char *core_end;
    size_t parts = 1, len = 0;

    if (*s == 'v')
        s++;
    core_end = s + strcspn(s, "-+");
    for (const char *p = s; p < core_end; p++)
        parts += *p == '.';
    for (const char *p = s; p < core_end && len + 1 < out_n;) {
        const char *dot = memchr(p, '.', (size_t)(core_end - p));
        const char *end = dot ? dot : core_end;
        while (end - p > 1 && *p == '0')
            p++;
        len +=
            (size_t)snprintf(out + len, out_n - len, "%.*s%s", (int)(end - p), p, dot ? "." : "");
        p = dot ? dot + 1 : core_end;
        if (len >= out_n)
            len = out_n - 1;
    }
    for (; parts < 3 && len + 3 < out_n; parts++)
        len += (size_t)snprintf(out + len, out_n - len, ".0");
    snprintf(out + len, out_n - len, "%s", core_end);
}

int fatia_semver_parse(const char *s, bool normalize_first, struct fatia_semver *ret, char *why,
                       size_t why_n)
{
    char norm[FATIA_SEMVER_MAX + 8];
    const char *d1, *d2, *rest, *plus, *minus, *end;
    struct fatia_semver v = {0};
    int r;

    if (!s || !*s)
        return why_set(why, why_n, "Version string empty");
    if (strlen(s) >= FATIA_SEMVER_MAX)
        return why_set(why, why_n, "version longer than %d characters", FATIA_SEMVER_MAX - 1);
    if (normalize_first) {
        normalize(s, norm, sizeof(norm));
        s = norm;
    }
    d1 = strchr(s, '.');
    d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    if (!d2)
        return why_set(why, why_n, "No Major.Minor.Patch elements found");
    r = parse_num(s, (size_t)(d1 - s), "major", &v.major, why, why_n);
    if (r < 0)
        return r;
    r = parse_num(d1 + 1, (size_t)(d2 - d1 - 1), "minor", &v.minor, why, why_n);
    if (r < 0)
        return r;
    rest = d2 + 1;
    end = rest + strlen(rest);
    plus = strchr(rest, '+');
    if (plus) {
        r = check_idents(plus + 1, (size_t)(end - plus - 1), false, why, why_n);
        if (r < 0)
            return r;
        snprintf(v.build, sizeof(v.build), "%s", plus + 1);
        end = plus;
    }
    minus = memchr(rest, '-', (size_t)(end - rest));
    if (minus) {
        r = check_idents(minus + 1, (size_t)(end - minus - 1), true, why, why_n);
        if (r < 0)
            return r;
        snprintf(v.pre, sizeof(v.pre), "%.*s", (int)(end - minus - 1), minus + 1);
        end = minus;
    }
    r = parse_num(rest, (size_t)(end - rest), "patch", &v.patch, why, why_n);
    if (r < 0)
        return r;
    *ret = v;
    return 0;
}

static int cmp_u64(uint64_t a, uint64_t b)
{
    return a < b ? -1 : a > b;
}

static int cmp_ident(const char *a, size_t an, const char *b, size_t bn)
{
    bool anum = all_in(a, an, false), bnum = all_in(b, bn, false);
    int c;

    if (anum && bnum) {
        /* no leading zeros: the longer number is the larger */
        if (an != bn)
            return an < bn ? -1 : 1;
        c = memcmp(a, b, an);
        return c < 0 ? -1 : c > 0;
    }
    if (anum != bnum)
        return anum ? -1 : 1;
    c = memcmp(a, b, FATIA_MIN(an, bn));
    if (c)
        return c < 0 ? -1 : 1;
    return an < bn ? -1 : an > bn;
}

int fatia_semver_cmp(const struct fatia_semver *a, const struct fatia_semver *b)
{
    const char *pa = a->pre, *pb = b->pre;
    int c;

    if ((c = cmp_u64(a->major, b->major)) || (c = cmp_u64(a->minor, b->minor)) ||
        (c = cmp_u64(a->patch, b->patch)))
        return c;
    if (!*pa || !*pb)
        return (!*pa && !*pb) ? 0 : (!*pa ? 1 : -1);
    for (;;) {
        size_t an = strcspn(pa, "."), bn = strcspn(pb, ".");
        c = cmp_ident(pa, an, pb, bn);
        if (c)
            return c;
        pa += an;
        pb += bn;
        if (!*pa || !*pb)
            return (!*pa && !*pb) ? 0 : (!*pa ? -1 : 1);
        pa++;
        pb++;
    }
}

int fatia_semver_format(const struct fatia_semver *v, char *buf, size_t n)
{
    return snprintf(buf, n, "%" PRIu64 ".%" PRIu64 ".%" PRIu64 "%s%s%s%s", v->major, v->minor,
                    v->patch, v->pre[0] ? "-" : "", v->pre, v->build[0] ? "+" : "", v->build);
}
