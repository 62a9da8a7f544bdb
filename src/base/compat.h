/*
 * base/compat.h: the first include of every .c file in fatia.
 *
 * It fixes the feature macros, gives the attribute macros one spelling, and pulls in banned.h so
 * that the functions we never use (strcpy, sprintf, atoi, strerror, ...) fail to compile. The
 * system headers that declare those functions are included here first, so the bans apply to our
 * code only and not to the declarations themselves.
 */
#ifndef FATIA_BASE_COMPAT_H
#define FATIA_BASE_COMPAT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FATIA_MUST_CHECK      __attribute__((warn_unused_result))
#define FATIA_PRINTF(fmt, va) __attribute__((format(printf, fmt, va)))
#define FATIA_NORETURN        __attribute__((noreturn))
#define FATIA_UNUSED          __attribute__((unused))
#define FATIA_MALLOC          __attribute__((malloc))
#define likely(x)             __builtin_expect(!!(x), 1)
#define unlikely(x)           __builtin_expect(!!(x), 0)

/* A deliberate fall-through between case labels: gcc accepts a comment, clang (the fuzz preset)
 * only the attribute. */
#define FATIA_FALLTHROUGH __attribute__((fallthrough))

#define FATIA_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define FATIA_MIN(a, b)     ((a) < (b) ? (a) : (b))
#define FATIA_MAX(a, b)     ((a) > (b) ? (a) : (b))

/* FATIA_ASSERT: an internal invariant whose failure means corrupt state. Always on. Never used on
 * outside input (YAML, HTTP, NVML answers, trace rows): those become errors. */
#define FATIA_ASSERT(x)                                          \
    do {                                                         \
        if (unlikely(!(x)))                                      \
            fatia_assert_fail(#x, __FILE__, __LINE__, __func__); \
    } while (0)

#ifdef FATIA_DEBUG
#define FATIA_DEBUG_ASSERT(x) FATIA_ASSERT(x)
#else
#define FATIA_DEBUG_ASSERT(x) ((void)0)
#endif

FATIA_NORETURN void fatia_assert_fail(const char *expr, const char *file, int line,
                                      const char *func);

#include "base/banned.h"

#endif
