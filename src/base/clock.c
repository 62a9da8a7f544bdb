/*
 * base/clock.c: clocks and RFC 3339 (see clock.h).
 */
#include "base/compat.h"

#include "base/clock.h"

#include "base/error.h"

static fatia_usec_t read_clock(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (fatia_usec_t)ts.tv_sec * FATIA_USEC_PER_SEC + ts.tv_nsec / 1000;
}

fatia_usec_t fatia_now_mono_usec(void)
{
    return read_clock(CLOCK_MONOTONIC);
}

fatia_usec_t fatia_now_real_usec(void)
{
    return read_clock(CLOCK_REALTIME);
}

int fatia_time_format_rfc3339(fatia_usec_t t, bool micro, char *buf, size_t n)
{
    struct tm tm;
    time_t secs = (time_t)(t >= 0 ? t / FATIA_USEC_PER_SEC : (t - 999999) / FATIA_USEC_PER_SEC);
    long us = (long)(t - (fatia_usec_t)secs * FATIA_USEC_PER_SEC);

    if (!gmtime_r(&secs, &tm)) {
        if (n)
            buf[0] = '\0';
        return -EINVAL;
    }
    if (micro)
        return snprintf(buf, n, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
                        tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, us);
    return snprintf(buf, n, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                    tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

static int digits(const char **p, int n, int *ret)
{
    int v = 0;

    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return -EINVAL;
        v = v * 10 + (c - '0');
    }
    *p += n;
    *ret = v;
    return 0;
}

int fatia_time_parse_rfc3339(const char *s, fatia_usec_t *ret)
{
    struct tm tm = {0};
    int y, mo, d, h, mi, sec, off = 0;
    long frac = 0;
    const char *p = s;
    time_t t;

    if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) || *p++ != '-' ||
        digits(&p, 2, &d) || (*p != 'T' && *p != 't' && *p != ' '))
        return -EINVAL;
    p++;
    if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi) || *p++ != ':' ||
        digits(&p, 2, &sec))
        return -EINVAL;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        return -EINVAL;
    if (*p == '.') {
        long scale = 100000;
        p++;
        if (*p < '0' || *p > '9')
            return -EINVAL;
        while (*p >= '0' && *p <= '9') {
            frac += (*p - '0') * scale;
            scale /= 10;
            p++;
        }
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1, oh, om;
        p++;
        if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om))
            return -EINVAL;
        off = sign * (oh * 3600 + om * 60);
    } else {
        return -EINVAL;
    }
    if (*p)
        return -EINVAL;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    t = timegm(&tm);
    *ret = ((fatia_usec_t)t - off) * FATIA_USEC_PER_SEC + frac;
    return 0;
}
