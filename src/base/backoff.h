/*
 * base/backoff.h: retry back-off with jitter, and a rate limit for log lines (header only, pure).
 *
 * Model. A retrier counts its consecutive failures; the delay before try n+1 is
 * base * 2^(n-1), capped at max, plus a jitter of up to half of it (so that many retriers that
 * failed together do not retry together: client-go's wait.Jitter with factor 0.5). The caller
 * passes the random bits and "now" in: nothing here reads a clock or a random source, so that the
 * delays are testable.
 *
 * A log limit is a token bucket per subsystem: `burst` lines at once, then `per_sec` a second;
 * lines over it are counted, and the next line let through says how many were suppressed.
 *
 * Rejected: a global limiter in log.c (one noisy subsystem would silence every other one's
 * errors), and sleeping between retries (there is one event loop).
 */
#ifndef FATIA_BASE_BACKOFF_H
#define FATIA_BASE_BACKOFF_H

#include <stdbool.h>
#include <stdint.h>

#include "base/clock.h"

/* The delay after `failures` consecutive failures (1: the first), in [d, 1.5 d) where
 * d = min(base * 2^(failures-1), max); rnd gives the jitter. 0 when failures is 0. */
static inline fatia_usec_t fatia_backoff_delay(fatia_usec_t base, fatia_usec_t max,
                                               unsigned failures, uint64_t rnd)
{
    fatia_usec_t d = base;

    if (failures == 0)
        return 0;
    for (unsigned i = 1; i < failures && d < max; i++)
        d *= 2;
    if (d > max)
        d = max;
    if (d / 2 > 0)
        d += (fatia_usec_t)(rnd % (uint64_t)(d / 2));
    return d;
}

/* A small, fast pseudo-random step (xorshift64*) for jitter; *state must start non-zero. */
static inline uint64_t fatia_backoff_rand(uint64_t *state)
{
    uint64_t x = *state ? *state : 0x9e3779b97f4a7c15ull;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545f4914f6cdd1dull;
}

struct fatia_ratelimit {
    double per_sec, burst; /* set by the owner */
    double tokens;
    fatia_usec_t last;   /* when tokens was last refilled; 0: never */
    uint64_t suppressed; /* lines refused since the last one let through */
};

/* Whether one more line may be logged now; when it may, *ret_suppressed (if not NULL) gets the
 * number of lines refused since the last one let through (and the count starts again). */
static inline bool fatia_ratelimit_take(struct fatia_ratelimit *rl, fatia_usec_t now,
                                        uint64_t *ret_suppressed)
{
    if (rl->last == 0) {
        rl->tokens = rl->burst;
    } else if (now > rl->last) {
        rl->tokens += (double)(now - rl->last) * rl->per_sec / (double)FATIA_USEC_PER_SEC;
        if (rl->tokens > rl->burst)
            rl->tokens = rl->burst;
    }
    rl->last = now;
    if (rl->tokens < 1.0) {
        rl->suppressed++;
        return false;
    }
    rl->tokens -= 1.0;
    if (ret_suppressed)
        *ret_suppressed = rl->suppressed;
    rl->suppressed = 0;
    return true;
}

#endif
