/*
 * base/str.h: string views and strict number parsing.
 *
 * struct fatia_str is a borrowed (pointer, length) view; it is not NUL-terminated in general.
 * The parsers accept the whole input or fail: no leading or trailing junk, no silent overflow,
 * no locale. They replace atoi/strtol at call sites (banned.h).
 */
#ifndef FATIA_BASE_STR_H
#define FATIA_BASE_STR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct fatia_str {
    const char *p;
    size_t n;
};

#define FATIA_STR(lit) ((struct fatia_str){(lit), sizeof(lit) - 1})

static inline struct fatia_str fatia_str_from(const char *s)
{
    return (struct fatia_str){s, s ? strlen(s) : 0};
}

static inline bool fatia_str_eq(struct fatia_str a, struct fatia_str b)
{
    return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0);
}

static inline bool fatia_str_eqz(struct fatia_str a, const char *z)
{
    return fatia_str_eq(a, fatia_str_from(z));
}

bool fatia_str_has_prefix(const char *s, const char *prefix);
bool fatia_str_has_suffix(const char *s, const char *suffix);

/* Decimal parsers: the whole string must be a number in range. 0 or -EINVAL / -ERANGE. */
int fatia_parse_i64(const char *s, int64_t *ret);
int fatia_parse_u64(const char *s, uint64_t *ret);
int fatia_parse_int(const char *s, int min, int max, int *ret);
int fatia_parse_double(const char *s, double *ret);

/* Durations like "500ms", "2s", "1m30s", "1h" (Go's time.ParseDuration subset) to microseconds. */
int fatia_parse_duration_usec(const char *s, int64_t *ret);

#endif
