/*
 * model/cron.h: CronJob schedules (the standard five-field cron syntax, as
 * github.com/robfig/cron/v3's ParseStandard reads them for the upstream CronJob controller).
 *
 * "minute hour day-of-month month day-of-week": each field a comma list of "*", "N", "N-M",
 * with an optional "/STEP"; month and weekday also take names (jan..dec, sun..sat, any case);
 * weekday 7 is Sunday too; "?" is "*" in the day fields; the macros @yearly (@annually),
 * @monthly, @weekly, @daily (@midnight) and @hourly. "TZ=" and "CRON_TZ=" prefixes are refused
 * as upstream validation refuses them (spec.timeZone is the field for that).
 *
 * Day matching is cron's: when both day-of-month and day-of-week are restricted (neither starts
 * with "*"), a day matches when either does; otherwise both must.
 *
 * Pure: times are seconds since the epoch in UTC, passed in.
 */
#ifndef FATIA_MODEL_CRON_H
#define FATIA_MODEL_CRON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fatia_cron {
    uint64_t minute; /* bit i: minute i matches (0..59) */
    uint32_t hour;   /* 0..23 */
    uint32_t dom;    /* 1..31 */
    uint16_t month;  /* 1..12 */
    uint8_t dow;     /* 0..6, Sunday 0 */
    bool dom_star, dow_star;
};

/* Parses s; -EINVAL with a message in why ("failed to parse int from x: ...") on error. */
int fatia_cron_parse(const char *s, struct fatia_cron *ret, char *why, size_t why_n);

/* The first matching minute strictly after t (seconds, UTC), or -1 when none within 5 years
 * (a schedule like "0 0 30 2 *" never fires). */
int64_t fatia_cron_next(const struct fatia_cron *c, int64_t t);

/* The latest fire time in (earliest, now], or -1 when none; *ret_missed (may be NULL) gets how
 * many fire times lie in that interval (upstream mostRecentScheduleTime: the controller warns
 * past 100). Pure. */
int64_t fatia_cron_most_recent(const struct fatia_cron *c, int64_t earliest, int64_t now,
                               int64_t *ret_missed);

#endif
