/*
 * base/clock.h: the one unit of time, and the only place that reads clocks.
 *
 * Durations and instants are fatia_usec_t, microseconds. Monotonic time measures intervals; real
 * (wall-clock) time is for persistence and display only. Policy code (supply, control, demand
 * engines) never calls these readers: its caller passes "now" in, so that simulations and golden
 * tests are deterministic.
 */
#ifndef FATIA_BASE_CLOCK_H
#define FATIA_BASE_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef int64_t fatia_usec_t;

#define FATIA_USEC_PER_MSEC INT64_C(1000)
#define FATIA_USEC_PER_SEC  INT64_C(1000000)

fatia_usec_t fatia_now_mono_usec(void);
fatia_usec_t fatia_now_real_usec(void); /* since the Unix epoch */

/* RFC 3339 in UTC: "2026-11-29T15:19:57Z", or with micro = true "...57.123456Z".
 * Returns the length written (snprintf semantics; buf always terminated when n > 0). */
int fatia_time_format_rfc3339(fatia_usec_t t, bool micro, char *buf, size_t n);

/* Parses RFC 3339 ("2026-11-29T15:19:57Z", "...57.5+01:00") to microseconds since the epoch. */
int fatia_time_parse_rfc3339(const char *s, fatia_usec_t *ret);

#endif
