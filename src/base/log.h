/*
 * base/log.h: leveled logging to stderr.
 *
 * Cores (model, supply, control, demand, store) never log above debug: they return errors and
 * the edge that decides what to do logs once (reference/c-style.md C7). Message style: lowercase
 * start, no final full stop, the failing thing first, user values in single quotes, non-fatal
 * messages end with ", ignoring".
 *
 * The CLI is quiet by default (FATIA_LOG_WARNING); fatiad logs at info. FATIA_LOG (env var:
 * error|warning|info|debug) overrides both. One line per call, written with a single write(2) so
 * lines from several threads do not interleave.
 */
#ifndef FATIA_BASE_LOG_H
#define FATIA_BASE_LOG_H

#include "base/compat.h"

enum fatia_log_level {
    FATIA_LOG_ERROR,
    FATIA_LOG_WARNING,
    FATIA_LOG_INFO,
    FATIA_LOG_DEBUG,
};

void fatia_log_set_level(enum fatia_log_level level);
enum fatia_log_level fatia_log_get_level(void);
/* Applies $FATIA_LOG if set; returns 0, or -EINVAL for an unknown level name (level unchanged). */
int fatia_log_level_from_env(void);
/* A prefix such as "fatiad" written before each line; NULL for none. The string is borrowed. */
void fatia_log_set_ident(const char *ident);
/* Prefix each line with an RFC 3339 UTC timestamp (daemons). */
void fatia_log_set_timestamps(bool on);

void fatia_log(enum fatia_log_level level, const char *fmt, ...) FATIA_PRINTF(2, 3);

/* Logs "<message>: <strerror(err)>" and returns err (negative), so that callers can
 * `return fatia_log_errno(FATIA_LOG_ERROR, r, "cannot open '%s'", path);` */
int fatia_log_errno(enum fatia_log_level level, int err, const char *fmt, ...) FATIA_PRINTF(3, 4);

#define fatia_error(...) fatia_log(FATIA_LOG_ERROR, __VA_ARGS__)
#define fatia_warn(...)  fatia_log(FATIA_LOG_WARNING, __VA_ARGS__)
#define fatia_info(...)  fatia_log(FATIA_LOG_INFO, __VA_ARGS__)
#define fatia_debug(...)                                        \
    do {                                                        \
        if (unlikely(fatia_log_get_level() >= FATIA_LOG_DEBUG)) \
            fatia_log(FATIA_LOG_DEBUG, __VA_ARGS__);            \
    } while (0)

#endif
