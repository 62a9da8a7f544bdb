/*
 * cli/output.c: output formats, usage errors, "did you mean" and the table printer (see cli.h).
 *
 * "Did you mean": a prefix wins (`fatia sched`), then the smallest optimal-string-alignment
 * distance up to 2 (`fatia pln`, `fatia paln`), never a name as far from the word as the word is
 * long (`fatia xy` suggests nothing rather than `sim`). Names are short: the distance is a
 * three-row table, capped at 32 characters.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/buf.h"
#include "base/error.h"
#include "base/json.h"
#include "base/vec.h"
#include "cli/cli.h"
#include "model/doc.h"

int fatia_cli_parse_output(const char *s, enum fatia_output *ret)
{
    if (!strcmp(s, "table") || !strcmp(s, "wide"))
        *ret = FATIA_OUT_TABLE;
    else if (!strcmp(s, "json"))
        *ret = FATIA_OUT_JSON;
    else if (!strcmp(s, "yaml"))
        *ret = FATIA_OUT_YAML;
    else
        return -EINVAL;
    return 0;
}

int fatia_cli_print(const json_t *v, enum fatia_output fmt)
{
    struct fatia_buf b = FATIA_BUF_INIT;
    int r;

    if (fmt == FATIA_OUT_YAML)
        r = fatia_yaml_dump(v, &b);
    else
        r = fatia_json_dump_buf(v, &b, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    if (r < 0) {
        fprintf(stderr, "fatia: cannot print output: %s\n", fatia_strerror(r));
        fatia_buf_release(&b);
        return FATIA_EXIT_FAIL;
    }
    fwrite(b.p, 1, b.len, stdout);
    if (fmt != FATIA_OUT_YAML)
        fputc('\n', stdout);
    fatia_buf_release(&b);
    return FATIA_EXIT_OK;
}

int fatia_cli_usage_error(const struct fatia_cli_cmd *cmd, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "fatia %s: ", cmd->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'fatia %s --help'.\n", cmd->name);
    return FATIA_EXIT_USAGE;
}

/* Optimal string alignment distance of a and b, capped at 3 (only "at most 2" matters). */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t d[3][33];

    if (la > 32 || lb > 32)
        return 3;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t *cur = d[i % 3], *prev = d[(i - 1) % 3], *prev2 = d[(i + 1) % 3];
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            size_t v = FATIA_MIN(prev[j] + 1, cur[j - 1] + 1);
            v = FATIA_MIN(v, prev[j - 1] + cost);
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                v = FATIA_MIN(v, prev2[j - 2] + 1);
            cur[j] = v;
        }
    }
    return FATIA_MIN(d[la % 3][lb], (size_t)3);
}

const char *fatia_cli_nearest(const char *word, const char *const *names, size_t n)
{
    const char *best = NULL;
    size_t best_d = 3, len = strlen(word);

    if (!len)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (!strncmp(names[i], word, len))
            return names[i];
    for (size_t i = 0; i < n; i++) {
        size_t d = edit_distance(word, names[i]);
        if (d < best_d && d < len) {
            best = names[i];
            best_d = d;
        }
    }
    return best;
}

int fatia_cli_help(const struct fatia_cli_cmd *cmd)
{
    fputs(cmd->usage, stdout);
    return FATIA_EXIT_OK;
}

/* ---- tables ---- */

struct fatia_table {
    size_t n_cols;
    char **cells; /* row-major, the header row first */
    size_t n_rows;
    size_t cap;
};

struct fatia_table *fatia_table_new(size_t n_cols, const char *const *headers)
{
    struct fatia_table *t = fatia_calloc(1, sizeof(*t));

    if (!t)
        return NULL;
    t->n_cols = n_cols;
    if (fatia_table_add(t, headers) < 0) {
        fatia_free(t);
        return NULL;
    }
    return t;
}

int fatia_table_add(struct fatia_table *t, const char *const *cells)
{
    size_t base = t->n_rows * t->n_cols;

    if (fatia_vec_reserve_raw((void **)&t->cells, &t->cap, base + t->n_cols, sizeof(*t->cells)) < 0)
        return -ENOMEM;
    for (size_t i = 0; i < t->n_cols; i++) {
        t->cells[base + i] = fatia_strdup(cells[i] ? cells[i] : "<none>");
        if (!t->cells[base + i]) {
            while (i--)
                fatia_free(t->cells[base + i]);
            return -ENOMEM;
        }
    }
    t->n_rows++;
    return 0;
}

int fatia_table_addf(struct fatia_table *t, const char *fmt, ...)
{
    struct fatia_buf b = FATIA_BUF_INIT;
    const char **cells;
    va_list ap;
    char *p;
    size_t i = 0;
    int r;

    va_start(ap, fmt);
    r = fatia_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    cells = fatia_calloc(t->n_cols, sizeof(*cells));
    if (r < 0 || !cells) {
        fatia_free(cells);
        fatia_buf_release(&b);
        return -ENOMEM;
    }
    for (p = b.cap ? b.p : NULL; p && i < t->n_cols; i++) {
        char *tab = strchr(p, '\t');
        cells[i] = p;
        if (!tab)
            break;
        *tab = '\0';
        p = tab + 1;
    }
    for (i = 0; i < t->n_cols; i++)
        if (!cells[i])
            cells[i] = "";
    r = fatia_table_add(t, cells);
    fatia_free(cells);
    fatia_buf_release(&b);
    return r;
}

/* Display width: count UTF-8 code points, not bytes. */
static size_t width(const char *s)
{
    size_t w = 0;

    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            w++;
    return w;
}

void fatia_table_print(const struct fatia_table *t, FILE *f)
{
    size_t *w = fatia_calloc(t->n_cols, sizeof(*w));

    if (!w)
        return;
    for (size_t r = 0; r < t->n_rows; r++)
        for (size_t c = 0; c < t->n_cols; c++)
            w[c] = FATIA_MAX(w[c], width(t->cells[r * t->n_cols + c]));
    for (size_t r = 0; r < t->n_rows; r++) {
        for (size_t c = 0; c < t->n_cols; c++) {
            const char *cell = t->cells[r * t->n_cols + c];
            bool last = c + 1 == t->n_cols;
            if (r == 0) {
                for (const char *p = cell; *p; p++)
                    fputc(*p >= 'a' && *p <= 'z' ? *p - 32 : *p, f);
            } else {
                fputs(cell, f);
            }
            if (!last)
                fprintf(f, "%*s", (int)(w[c] - width(cell) + 3), "");
        }
        fputc('\n', f);
    }
    fatia_free(w);
}

void fatia_table_free(struct fatia_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n_rows * t->n_cols; i++)
        fatia_free(t->cells[i]);
    fatia_free(t->cells);
    fatia_free(t);
}
