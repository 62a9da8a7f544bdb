/*
 * base/str.c: strict parsers (see str.h).
 */
#include "base/compat.h"

#include "base/str.h"

#include <errno.h>
#include <math.h>

#include "base/error.h"

bool fatia_str_has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool fatia_str_has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

int fatia_parse_i64(const char *s, int64_t *ret)
{
    char *end;
    long long v;

    if (!s || !*s || (*s != '-' && *s != '+' && (*s < '0' || *s > '9')))
        return -EINVAL;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno == ERANGE)
        return -ERANGE;
    if (*end != '\0')
        return -EINVAL;
    *ret = v;
    return 0;
}

int fatia_parse_u64(const char *s, uint64_t *ret)
{
    char *end;
    unsigned long long v;

    if (!s || *s < '0' || *s > '9')
        return -EINVAL;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno == ERANGE)
        return -ERANGE;
    if (*end != '\0')
        return -EINVAL;
    *ret = v;
    return 0;
}

int fatia_parse_int(const char *s, int min, int max, int *ret)
{
    int64_t v;
    int r = fatia_parse_i64(s, &v);

    if (r < 0)
        return r;
    if (v < min || v > max)
        return -ERANGE;
    *ret = (int)v;
    return 0;
}

int fatia_parse_double(const char *s, double *ret)
{
    char *end;
    double v;

    if (!s || !*s)
        return -EINVAL;
    errno = 0;
    v = strtod(s, &end);
    if (*end != '\0' || end == s)
        return -EINVAL;
    if (errno == ERANGE || !isfinite(v))
        return -ERANGE;
    *ret = v;
    return 0;
}

int fatia_parse_duration_usec(const char *s, int64_t *ret)
{
    static const struct {
        const char *unit;
        double usec;
    } units[] = {{"ns", 1e-3}, {"us", 1},   {"µs", 1},    {"ms", 1e3},
                 {"s", 1e6},   {"m", 60e6}, {"h", 3600e6}};

    double total = 0;
    const char *p = s;

    if (!s || !*s)
        return -EINVAL;
    if (strcmp(s, "0") == 0) {
        *ret = 0;
        return 0;
    }
    while (*p) {
        char *end;
        double v;
        size_t best = 0, best_len = 0;

        if ((*p < '0' || *p > '9') && *p != '.')
            return -EINVAL;
        v = strtod(p, &end);
        if (end == p)
            return -EINVAL;
        p = end;
        for (size_t i = 0; i < FATIA_ARRAY_SIZE(units); i++) {
            size_t n = strlen(units[i].unit);
            if (strncmp(p, units[i].unit, n) == 0 && n > best_len) {
                best = i;
                best_len = n;
            }
        }
        if (!best_len)
            return -EINVAL;
        total += v * units[best].usec;
        p += best_len;
    }
    if (total > 9.2e18)
        return -ERANGE;
    *ret = (int64_t)llround(total);
    return 0;
}
