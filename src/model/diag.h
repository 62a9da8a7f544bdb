/*
 * model/diag.h: diagnostics, the error report of everything that reads outside input.
 *
 * A diagnostic names where (file, line, column), what (the object, "clusterqueue/team-a"), which
 * field (the path, "spec.resourceGroups[0].flavors[1].resources[0].nominalQuota") and says what was
 * expected. Validation collects all of them instead of stopping at the first, so one run of
 * `fatia validate` shows every error of a file. The API server turns the same list into the field
 * causes of a 422 Invalid status.
 *
 * Printed form, one per line (fatia_diag_format):
 *     examples/bad.yaml:12:9: error: clusterqueue/team-a: spec.queueingStrategy: unsupported
 *     value "Fast": expected one of BestEffortFIFO, StrictFIFO
 */
#ifndef FATIA_MODEL_DIAG_H
#define FATIA_MODEL_DIAG_H

#include "base/compat.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

enum fatia_diag_level {
    FATIA_DIAG_ERROR,
    FATIA_DIAG_WARNING,
};

struct fatia_diag_entry {
    enum fatia_diag_level level;
    char *file;    /* may be NULL (API bodies) */
    uint32_t line; /* 1-based; 0 = unknown */
    uint32_t col;
    char *object; /* "clusterqueue/team-a", or NULL */
    char *path;   /* field path, or NULL for the whole object */
    char *msg;
};

struct fatia_diag {
    struct fatia_diag_entry *v;
    size_t n, cap;
    size_t n_errors;
    size_t max; /* stop recording after this many entries (0 = 1000) */
    bool oom;   /* an entry was lost to OOM: the report is incomplete */
};

void fatia_diag_init(struct fatia_diag *d);
void fatia_diag_release(struct fatia_diag *d);

/* Records an entry. Never fails: on OOM it sets d->oom and drops the entry. */
void fatia_diag_add(struct fatia_diag *d, enum fatia_diag_level level, const char *file,
                    uint32_t line, uint32_t col, const char *object, const char *path,
                    const char *fmt, ...) FATIA_PRINTF(8, 9);
void fatia_diag_vadd(struct fatia_diag *d, enum fatia_diag_level level, const char *file,
                     uint32_t line, uint32_t col, const char *object, const char *path,
                     const char *fmt, va_list ap) FATIA_PRINTF(8, 0);

static inline bool fatia_diag_has_errors(const struct fatia_diag *d)
{
    return d->n_errors > 0;
}

/* Appends the printed form of one entry (no newline). */
int fatia_diag_format(const struct fatia_diag_entry *e, struct fatia_buf *out);

/* Prints every entry to f, one per line; returns the number of errors. */
size_t fatia_diag_print(const struct fatia_diag *d, FILE *f);

/* Moves all entries of src to the end of dst (src is left empty). */
void fatia_diag_move(struct fatia_diag *dst, struct fatia_diag *src);

#endif
