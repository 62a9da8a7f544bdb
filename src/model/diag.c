/*
 * model/diag.c: diagnostics (see diag.h).
 */
#include "base/compat.h"

#include "model/diag.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/vec.h"

void fatia_diag_init(struct fatia_diag *d)
{
    memset(d, 0, sizeof(*d));
}

static void entry_release(struct fatia_diag_entry *e)
{
    fatia_free(e->file);
    fatia_free(e->object);
    fatia_free(e->path);
    fatia_free(e->msg);
}

void fatia_diag_release(struct fatia_diag *d)
{
    for (size_t i = 0; i < d->n; i++)
        entry_release(&d->v[i]);
    fatia_free(d->v);
    fatia_diag_init(d);
}

static char *dup_or_null(const char *s, bool *failed)
{
    char *p;

    if (!s)
        return NULL;
    p = fatia_strdup(s);
    if (!p)
        *failed = true;
    return p;
}

void fatia_diag_vadd(struct fatia_diag *d, enum fatia_diag_level level, const char *file,
                     uint32_t line, uint32_t col, const char *object, const char *path,
                     const char *fmt, va_list ap)
{
    struct fatia_diag_entry e = {.level = level, .line = line, .col = col};
    struct fatia_buf msg = FATIA_BUF_INIT;
    bool failed = false;

    if (level == FATIA_DIAG_ERROR)
        d->n_errors++;
    if (d->n >= (d->max ? d->max : 1000))
        return;
    e.file = dup_or_null(file, &failed);
    e.object = dup_or_null(object, &failed);
    e.path = dup_or_null(path && *path ? path : NULL, &failed);
    if (fatia_buf_vprintf(&msg, fmt, ap) < 0)
        failed = true;
    e.msg = fatia_buf_steal(&msg);
    if (!e.msg)
        failed = true;
    if (failed || fatia_vec_reserve_raw((void **)&d->v, &d->cap, d->n + 1, sizeof(e)) < 0) {
        entry_release(&e);
        d->oom = true;
        return;
    }
    d->v[d->n++] = e;
}

void fatia_diag_add(struct fatia_diag *d, enum fatia_diag_level level, const char *file,
                    uint32_t line, uint32_t col, const char *object, const char *path,
                    const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fatia_diag_vadd(d, level, file, line, col, object, path, fmt, ap);
    va_end(ap);
}

int fatia_diag_format(const struct fatia_diag_entry *e, struct fatia_buf *out)
{
    int r = 0;

    if (e->file && e->line)
        r = fatia_buf_printf(out, "%s:%u:%u: ", e->file, e->line, e->col);
    else if (e->file)
        r = fatia_buf_printf(out, "%s: ", e->file);
    if (r >= 0)
        r = fatia_buf_puts(out, e->level == FATIA_DIAG_ERROR ? "error: " : "warning: ");
    if (r >= 0 && e->object)
        r = fatia_buf_printf(out, "%s: ", e->object);
    if (r >= 0 && e->path)
        r = fatia_buf_printf(out, "%s: ", e->path);
    if (r >= 0)
        r = fatia_buf_puts(out, e->msg);
    return r;
}

size_t fatia_diag_print(const struct fatia_diag *d, FILE *f)
{
    struct fatia_buf b = FATIA_BUF_INIT;

    for (size_t i = 0; i < d->n; i++) {
        fatia_buf_reset(&b);
        if (fatia_diag_format(&d->v[i], &b) == 0)
            fprintf(f, "%s\n", b.p);
    }
    if (d->oom)
        fprintf(f, "error: out of memory: some diagnostics were lost\n");
    else if (d->n < d->n_errors)
        fprintf(f, "error: %zu more errors not shown\n", d->n_errors - d->n);
    fatia_buf_release(&b);
    return d->n_errors;
}

void fatia_diag_move(struct fatia_diag *dst, struct fatia_diag *src)
{
    for (size_t i = 0; i < src->n; i++) {
        if (fatia_vec_reserve_raw((void **)&dst->v, &dst->cap, dst->n + 1, sizeof(*dst->v)) < 0) {
            entry_release(&src->v[i]);
            dst->oom = true;
            continue;
        }
        dst->v[dst->n++] = src->v[i];
    }
    dst->n_errors += src->n_errors;
    dst->oom |= src->oom;
    fatia_free(src->v);
    fatia_diag_init(src);
}
