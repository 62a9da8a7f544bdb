/*
 * base/log.c: leveled logging (see log.h).
 */
#include "base/compat.h"

#include "base/log.h"

#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"

static enum fatia_log_level cur_level = FATIA_LOG_WARNING;
static const char *cur_ident;
static bool cur_timestamps;

static const char *const level_names[] = {"error", "warning", "info", "debug"};

void fatia_log_set_level(enum fatia_log_level level)
{
    cur_level = level;
}

enum fatia_log_level fatia_log_get_level(void)
{
    return cur_level;
}

void fatia_log_set_ident(const char *ident)
{
    cur_ident = ident;
}

void fatia_log_set_timestamps(bool on)
{
    cur_timestamps = on;
}

int fatia_log_level_from_env(void)
{
    const char *s = getenv("FATIA_LOG");

    if (!s || !*s)
        return 0;
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(level_names); i++) {
        if (strcmp(s, level_names[i]) == 0) {
            cur_level = (enum fatia_log_level)i;
            return 0;
        }
    }
    return -EINVAL;
}

static void vlog(enum fatia_log_level level, int err, const char *fmt, va_list ap)
    FATIA_PRINTF(3, 0);

static void vlog(enum fatia_log_level level, int err, const char *fmt, va_list ap)
{
    char line[4096];
    size_t n = 0;
    int k;

    if (cur_timestamps) {
        char ts[40];
        fatia_time_format_rfc3339(fatia_now_real_usec(), true, ts, sizeof(ts));
        k = snprintf(line, sizeof(line), "%s ", ts);
        n += k > 0 ? (size_t)k : 0;
    }
    if (cur_ident) {
        k = snprintf(line + n, sizeof(line) - n, "%s: ", cur_ident);
        n += k > 0 ? (size_t)k : 0;
    }
    if (level != FATIA_LOG_INFO && n < sizeof(line)) {
        k = snprintf(line + n, sizeof(line) - n, "%s: ", level_names[level]);
        n += k > 0 ? (size_t)k : 0;
    }
    if (n < sizeof(line)) {
        k = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
        n += k > 0 ? (size_t)k : 0;
    }
    if (err && n < sizeof(line)) {
        k = snprintf(line + n, sizeof(line) - n, ": %s", fatia_strerror(err));
        n += k > 0 ? (size_t)k : 0;
    }
    if (n >= sizeof(line) - 1)
        n = sizeof(line) - 2;
    line[n++] = '\n';
    (void)!write(STDERR_FILENO, line, n);
}

void fatia_log(enum fatia_log_level level, const char *fmt, ...)
{
    va_list ap;

    if (level > cur_level)
        return;
    va_start(ap, fmt);
    vlog(level, 0, fmt, ap);
    va_end(ap);
}

int fatia_log_errno(enum fatia_log_level level, int err, const char *fmt, ...)
{
    va_list ap;

    if (level <= cur_level) {
        va_start(ap, fmt);
        vlog(level, err, fmt, ap);
        va_end(ap);
    }
    return err < 0 ? err : -err;
}
