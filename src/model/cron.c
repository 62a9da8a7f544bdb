/*
 * model/cron.c: CronJob schedule parsing and the next fire time (see cron.h).
 *
 * Model: a schedule compiles to one bit set per field; the next time walks days (not minutes)
 * from t, testing month and the day rule, then takes the first matching hour and minute of the
 * first matching day. Calendar arithmetic is days-from-civil (Howard Hinnant's algorithm), so no
 * libc time zone state is read: UTC only, and the code stays pure.
 *
 * Rejected: a minute-by-minute scan (2.6 million steps for a schedule that fires yearly) and
 * mktime/timegm (they read TZ and the process's locale state).
 */
#include "base/compat.h"

#include "model/cron.h"

#include <strings.h>

#include "base/error.h"

static const char *const month_names[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                          "jul", "aug", "sep", "oct", "nov", "dec"};
static const char *const dow_names[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

struct range {
    int min, max;
    const char *const *names; /* names[i] is min + i */
    int n_names;
};

static int parse_num(const char *s, size_t n, const struct range *r, int *ret, char *why,
                     size_t why_n)
{
    int v = 0;

    for (int i = 0; i < r->n_names; i++) {
        if (n == 3 && !strncasecmp(s, r->names[i], 3)) {
            *ret = r->min + i;
            return 0;
        }
    }
    if (n == 0 || n > 4) {
        snprintf(why, why_n, "failed to parse int from %.*s", (int)n, s);
        return -EINVAL;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            snprintf(why, why_n, "failed to parse int from %.*s", (int)n, s);
            return -EINVAL;
        }
        v = v * 10 + (s[i] - '0');
    }
    *ret = v;
    return 0;
}

/* One field into bits (bit i = value i). */
static int parse_field(const char *s, size_t n, const struct range *r, uint64_t *ret,
                       bool *ret_star, char *why, size_t why_n)
{
    uint64_t bits = 0;
    const char *end = s + n;

    *ret_star = n > 0 && (s[0] == '*' || s[0] == '?');
    while (s < end) {
        const char *comma = memchr(s, ',', (size_t)(end - s));
        const char *e = comma ? comma : end;
        const char *slash = memchr(s, '/', (size_t)(e - s));
        const char *re = slash ? slash : e;
        const char *dash = memchr(s, '-', (size_t)(re - s));
        int lo, hi, step = 1;

        if ((re - s == 1) && (*s == '*' || *s == '?')) {
            lo = r->min;
            hi = r->max;
        } else {
            if (parse_num(s, (size_t)((dash ? dash : re) - s), r, &lo, why, why_n) < 0)
                return -EINVAL;
            hi = lo;
            if (dash && parse_num(dash + 1, (size_t)(re - dash - 1), r, &hi, why, why_n) < 0)
                return -EINVAL;
        }
        if (slash) {
            if (parse_num(slash + 1, (size_t)(e - slash - 1), r, &step, why, why_n) < 0)
                return -EINVAL;
            if (step <= 0) {
                snprintf(why, why_n, "step of range should be a positive number: %.*s",
                         (int)(e - s), s);
                return -EINVAL;
            }
            if (!dash && !((re - s == 1) && (*s == '*' || *s == '?')))
                hi = r->max; /* "N/STEP" is "N-max/STEP" */
        }
        if (lo < r->min || hi > r->max + (r->names == dow_names) || lo > hi) {
            snprintf(why, why_n, "%s (%d) %s (%d)",
                     lo < r->min ? "beginning of range" : "end of range", lo < r->min ? lo : hi,
                     lo < r->min ? "below minimum" : "above maximum",
                     lo < r->min ? r->min : r->max);
            if (lo > hi && lo >= r->min && hi <= r->max)
                snprintf(why, why_n, "beginning of range (%d) beyond end of range (%d)", lo, hi);
            return -EINVAL;
        }
        for (int v = lo; v <= hi; v += step)
            bits |= 1ull << (r->names == dow_names && v == 7 ? 0 : v);
        s = comma ? comma + 1 : end;
        if (comma && s == end) {
            snprintf(why, why_n, "empty list element");
            return -EINVAL;
        }
    }
    *ret = bits;
    return 0;
}

int fatia_cron_parse(const char *s, struct fatia_cron *ret, char *why, size_t why_n)
{
    static const struct {
        const char *name, *expr;
    } macros[] = {{"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
                  {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
                  {"@hourly", "0 * * * *"}};
    static const struct range ranges[5] = {{0, 59, NULL, 0},
                                           {0, 23, NULL, 0},
                                           {1, 31, NULL, 0},
                                           {1, 12, month_names, 12},
                                           {0, 6, dow_names, 7}};
    struct fatia_cron c = {0};
    const char *f[5];
    size_t fn[5], nf = 0;
    uint64_t bits[5];
    bool star[5];

    while (*s == ' ' || *s == '\t')
        s++;
    if (!strncmp(s, "TZ=", 3) || !strncmp(s, "CRON_TZ=", 8)) {
        snprintf(why, why_n, "TZ and CRON_TZ are not supported: use spec.timeZone");
        return -EINVAL;
    }
    for (size_t i = 0; i < sizeof(macros) / sizeof(macros[0]); i++) {
        size_t n = strlen(macros[i].name);
        if (!strncmp(s, macros[i].name, n) && (s[n] == '\0' || s[n] == ' '))
            return fatia_cron_parse(macros[i].expr, ret, why, why_n);
    }
    if (*s == '@') {
        snprintf(why, why_n, "unrecognized descriptor: %s", s);
        return -EINVAL;
    }
    while (*s) {
        const char *e = s;
        while (*e && *e != ' ' && *e != '\t')
            e++;
        if (nf == 5) {
            snprintf(why, why_n, "expected exactly 5 fields, found more: %s", s);
            return -EINVAL;
        }
        f[nf] = s;
        fn[nf++] = (size_t)(e - s);
        while (*e == ' ' || *e == '\t')
            e++;
        s = e;
    }
    if (nf != 5) {
        snprintf(why, why_n, "expected exactly 5 fields, found %zu", nf);
        return -EINVAL;
    }
    for (int i = 0; i < 5; i++)
        if (parse_field(f[i], fn[i], &ranges[i], &bits[i], &star[i], why, why_n) < 0)
            return -EINVAL;
    c.minute = bits[0];
    c.hour = (uint32_t)bits[1];
    c.dom = (uint32_t)bits[2];
    c.month = (uint16_t)bits[3];
    c.dow = (uint8_t)bits[4];
    c.dom_star = star[2];
    c.dow_star = star[4];
    *ret = c;
    return 0;
}

/* days since 1970-01-01 -> civil date (Hinnant's civil_from_days) */
static void civil(int64_t z, int *ret_y, int *ret_m, int *ret_d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int d = (int)(doy - (153 * mp + 2) / 5 + 1);
    int m = (int)(mp < 10 ? mp + 3 : mp - 9);

    *ret_y = (int)(yoe + era * 400 + (m <= 2));
    *ret_m = m;
    *ret_d = d;
}

static bool day_matches(const struct fatia_cron *c, int64_t day)
{
    int y, m, d;
    int wd = (int)(((day % 7) + 11) % 7); /* 1970-01-01 was a Thursday (4) */
    bool dm, wm;

    civil(day, &y, &m, &d);
    if (!(c->month & (1u << m)))
        return false;
    dm = c->dom & (1u << d);
    wm = c->dow & (1u << wd);
    if (!c->dom_star && !c->dow_star)
        return dm || wm;
    return dm && wm;
}

int64_t fatia_cron_next(const struct fatia_cron *c, int64_t t)
{
    int64_t start = (t >= 0 ? t / 60 : (t - 59) / 60) + 1; /* next whole minute */
    int64_t day = start >= 0 ? start / 1440 : (start - 1439) / 1440;
    int first = (int)(start - day * 1440);

    for (int64_t i = 0; i < 5 * 366 + 1; i++, day++, first = 0) {
        if (!day_matches(c, day))
            continue;
        for (int mm = first; mm < 1440; mm++) {
            if ((c->hour & (1u << (mm / 60))) && (c->minute & (1ull << (mm % 60))))
                return (day * 1440 + mm) * 60;
        }
    }
    return -1;
}

int64_t fatia_cron_most_recent(const struct fatia_cron *c, int64_t earliest, int64_t now,
                               int64_t *ret_missed)
{
    int64_t t = earliest, last = -1, missed = 0;

    for (;;) {
        int64_t n = fatia_cron_next(c, t);
        if (n < 0 || n > now)
            break;
        last = n;
        t = n;
        /* past a thousand, count the rest by the minute-period of the last two fires: enough
         * to say "too many" without walking years of minutes */
        if (++missed >= 1000)
            break;
    }
    if (ret_missed)
        *ret_missed = missed;
    if (missed >= 1000) {
        /* the latest fire time at or before now: walk back a day at a time */
        int64_t from = now - 86400;
        int64_t latest = -1;
        for (int i = 0; i < 366 * 5 && latest < 0; i++, from -= 86400) {
            int64_t x = from;
            for (;;) {
                int64_t n = fatia_cron_next(c, x);
                if (n < 0 || n > now)
                    break;
                latest = n;
                x = n;
            }
        }
        return latest >= 0 ? latest : last;
    }
    return last;
}
