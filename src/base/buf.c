/*
 * base/buf.c: growable buffer (see buf.h for the invariants).
 */
#include "base/compat.h"

#include "base/buf.h"

#include "base/alloc.h"
#include "base/error.h"

static size_t limit(const struct fatia_buf *b)
{
    return b->max ? b->max : SIZE_MAX / 2;
}

void fatia_buf_init(struct fatia_buf *b, size_t max)
{
    b->p = (char *)"";
    b->len = 0;
    b->cap = 0;
    b->max = max;
}

void fatia_buf_release(struct fatia_buf *b)
{
    if (b->cap)
        fatia_free(b->p);
    fatia_buf_init(b, b->max);
}

void fatia_buf_reset(struct fatia_buf *b)
{
    b->len = 0;
    if (b->cap)
        b->p[0] = '\0';
}

int fatia_buf_reserve(struct fatia_buf *b, size_t extra)
{
    size_t need, cap;
    char *p;

    if (extra > limit(b) - b->len)
        return -FATIA_E_LIMIT;
    need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap < SIZE_MAX / 4 ? cap * 2 : need;
    p = fatia_realloc(b->cap ? b->p : NULL, cap);
    if (!p)
        return -ENOMEM;
    if (!b->cap)
        p[0] = '\0';
    b->p = p;
    b->cap = cap;
    return 0;
}

int fatia_buf_append(struct fatia_buf *b, const void *data, size_t n)
{
    int r = fatia_buf_reserve(b, n);

    if (r < 0)
        return r;
    if (n)
        memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

int fatia_buf_puts(struct fatia_buf *b, const char *s)
{
    return fatia_buf_append(b, s, strlen(s));
}

int fatia_buf_putc(struct fatia_buf *b, char c)
{
    return fatia_buf_append(b, &c, 1);
}

int fatia_buf_vprintf(struct fatia_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    int n, r;

    va_copy(ap2, ap);
    n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return -EINVAL;
    r = fatia_buf_reserve(b, (size_t)n);
    if (r < 0)
        return r;
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int fatia_buf_printf(struct fatia_buf *b, const char *fmt, ...)
{
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = fatia_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return r;
}

void fatia_buf_truncate(struct fatia_buf *b, size_t len)
{
    FATIA_ASSERT(len <= b->len);
    b->len = len;
    if (b->cap)
        b->p[len] = '\0';
}

char *fatia_buf_steal(struct fatia_buf *b)
{
    char *p = b->cap ? b->p : fatia_strdup("");

    fatia_buf_init(b, b->max);
    return p;
}
