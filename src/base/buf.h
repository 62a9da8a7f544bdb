/*
 * base/buf.h: a growable byte buffer.
 *
 * Invariants: p is never NULL after fatia_buf_init (it points at a static empty string until the
 * first append), p[len] == '\0' always, len <= max. Appending past max fails with -FATIA_E_LIMIT
 * and leaves the buffer as it was, so a buffer fed by outside input has a hard bound (curl's
 * dynbuf). max = 0 means SIZE_MAX / 2.
 */
#ifndef FATIA_BASE_BUF_H
#define FATIA_BASE_BUF_H

#include "base/compat.h"

#include <stdarg.h>
#include <stddef.h>

struct fatia_buf {
    char *p;
    size_t len;
    size_t cap; /* 0 while p points at the static empty string */
    size_t max;
};

#define FATIA_BUF_INIT                                \
    {                                                 \
        .p = (char *)"", .len = 0, .cap = 0, .max = 0 \
    }

void fatia_buf_init(struct fatia_buf *b, size_t max);
void fatia_buf_release(struct fatia_buf *b);              /* frees; the buffer is empty again */
void fatia_buf_reset(struct fatia_buf *b);                /* len = 0, memory kept */
int fatia_buf_reserve(struct fatia_buf *b, size_t extra); /* room for extra more bytes */
int fatia_buf_append(struct fatia_buf *b, const void *data, size_t n);
int fatia_buf_puts(struct fatia_buf *b, const char *s);
int fatia_buf_putc(struct fatia_buf *b, char c);
int fatia_buf_printf(struct fatia_buf *b, const char *fmt, ...) FATIA_PRINTF(2, 3);
int fatia_buf_vprintf(struct fatia_buf *b, const char *fmt, va_list ap) FATIA_PRINTF(2, 0);
void fatia_buf_truncate(struct fatia_buf *b, size_t len); /* len <= b->len */

/* Hands the contents to the caller (free with fatia_free) and leaves b empty. NULL on OOM. */
char *fatia_buf_steal(struct fatia_buf *b);

#endif
