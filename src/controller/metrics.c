/*
 * controller/metrics.c: the counter and histogram families of /metrics (see metrics.h).
 *
 * Series are kept in a map from "family{labels}" and rendered sorted by that key, so the output is
 * stable from one scrape to the next (tests compare it). Histograms keep cumulative bucket counts
 * as Prometheus expects them (le="+Inf" equals _count). Rejected: a third-party client library
 * (none is packaged for C in Debian) and computing counters from the API objects at scrape time
 * (counters must survive objects being deleted).
 */
#include "base/compat.h"

#include "controller/metrics.h"

#include <math.h>
#include <stdarg.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/map.h"
#include "base/vec.h"

struct family {
    char *name, *type, *help;
    double *buckets;
    size_t n_buckets;
};

struct series {
    struct family *f;
    char *key; /* name{labels} */
    char *labels;
    double value; /* counter value, or histogram sum */
    uint64_t count;
    uint64_t *bucket_counts;
};

struct fatia_ctlr_metrics {
    FATIA_VEC(struct family *) families;
    struct fatia_strmap series; /* key -> struct series */
};

struct fatia_ctlr_metrics *fatia_ctlr_metrics_new(void)
{
    return fatia_calloc(1, sizeof(struct fatia_ctlr_metrics));
}

void fatia_ctlr_metrics_free(struct fatia_ctlr_metrics *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->series.cap; i++) {
        struct series *s = m->series.slots[i].key ? m->series.slots[i].val : NULL;
        if (!s)
            continue;
        fatia_free(s->key);
        fatia_free(s->labels);
        fatia_free(s->bucket_counts);
        fatia_free(s);
    }
    fatia_strmap_release(&m->series);
    for (size_t i = 0; i < m->families.n; i++) {
        struct family *f = m->families.v[i];
        fatia_free(f->name);
        fatia_free(f->type);
        fatia_free(f->help);
        fatia_free(f->buckets);
        fatia_free(f);
    }
    FATIA_VEC_RELEASE(&m->families);
    fatia_free(m);
}

static struct family *family_find(struct fatia_ctlr_metrics *m, const char *name)
{
    for (size_t i = 0; i < m->families.n; i++)
        if (!strcmp(m->families.v[i]->name, name))
            return m->families.v[i];
    return NULL;
}

int fatia_ctlr_metric_define(struct fatia_ctlr_metrics *m, const char *name, const char *type,
                             const char *help, const double *buckets, size_t n)
{
    struct family *f;

    if (family_find(m, name))
        return 0;
    f = fatia_calloc(1, sizeof(*f));
    if (!f)
        return -ENOMEM;
    f->name = fatia_strdup(name);
    f->type = fatia_strdup(type);
    f->help = fatia_strdup(help);
    if (n) {
        f->buckets = fatia_calloc(n, sizeof(double));
        if (f->buckets)
            memcpy(f->buckets, buckets, n * sizeof(double));
        f->n_buckets = n;
    }
    if (!f->name || !f->type || !f->help || (n && !f->buckets) ||
        FATIA_VEC_PUSH(&m->families, f) < 0) {
        fatia_free(f->name);
        fatia_free(f->type);
        fatia_free(f->help);
        fatia_free(f->buckets);
        fatia_free(f);
        return -ENOMEM;
    }
    return 0;
}

static struct series *series_get(struct fatia_ctlr_metrics *m, const char *name, const char *labels)
{
    struct family *f = family_find(m, name);
    struct series *s;
    char key[1024];

    if (!f)
        return NULL;
    snprintf(key, sizeof(key), "%s{%s}", name, labels ? labels : "");
    s = fatia_strmap_get(&m->series, key);
    if (s)
        return s;
    s = fatia_calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->f = f;
    s->key = fatia_strdup(key);
    s->labels = fatia_strdup(labels ? labels : "");
    if (f->n_buckets)
        s->bucket_counts = fatia_calloc(f->n_buckets, sizeof(uint64_t));
    if (!s->key || !s->labels || (f->n_buckets && !s->bucket_counts) ||
        fatia_strmap_put(&m->series, s->key, s) < 0) {
        fatia_free(s->key);
        fatia_free(s->labels);
        fatia_free(s->bucket_counts);
        fatia_free(s);
        return NULL;
    }
    return s;
}

void fatia_ctlr_metric_inc(struct fatia_ctlr_metrics *m, const char *name, const char *labels,
                           double v)
{
    struct series *s = series_get(m, name, labels);

    if (s)
        s->value += v;
}

void fatia_ctlr_metric_observe(struct fatia_ctlr_metrics *m, const char *name, const char *labels,
                               double v)
{
    struct series *s = series_get(m, name, labels);

    if (!s)
        return;
    s->value += v;
    s->count++;
    for (size_t i = 0; i < s->f->n_buckets; i++)
        if (v <= s->f->buckets[i])
            s->bucket_counts[i]++;
}

void fatia_ctlr_metric_header(struct fatia_buf *out, const char *name, const char *type,
                              const char *help)
{
    (void)fatia_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void put_value(struct fatia_buf *out, double v)
{
    if (isinf(v))
        (void)fatia_buf_puts(out, v > 0 ? "+Inf" : "-Inf");
    else if (v == floor(v) && fabs(v) < 1e15)
        (void)fatia_buf_printf(out, "%.0f", v);
    else
        (void)fatia_buf_printf(out, "%.9g", v);
}

void fatia_ctlr_metric_sample(struct fatia_buf *out, const char *name, const char *labels, double v)
{
    if (labels && *labels)
        (void)fatia_buf_printf(out, "%s{%s} ", name, labels);
    else
        (void)fatia_buf_printf(out, "%s ", name);
    put_value(out, v);
    (void)fatia_buf_putc(out, '\n');
}

static int cmp_series(const void *a, const void *b)
{
    const struct series *x = *(const struct series *const *)a;
    const struct series *y = *(const struct series *const *)b;

    return strcmp(x->key, y->key);
}

void fatia_ctlr_metrics_render(struct fatia_ctlr_metrics *m, struct fatia_buf *out)
{
    struct series **all = NULL;
    size_t n = 0;

    if (m->series.n)
        all = fatia_calloc(m->series.n, sizeof(*all));
    for (size_t i = 0; all && i < m->series.cap; i++)
        if (m->series.slots[i].key)
            all[n++] = m->series.slots[i].val;
    if (n)
        qsort(all, n, sizeof(*all), cmp_series);
    for (size_t fi = 0; fi < m->families.n; fi++) {
        struct family *f = m->families.v[fi];
        char name[256], lab[1200];
        fatia_ctlr_metric_header(out, f->name, f->type, f->help);
        for (size_t i = 0; i < n; i++) {
            struct series *s = all[i];
            if (s->f != f)
                continue;
            if (!f->n_buckets) {
                fatia_ctlr_metric_sample(out, f->name, s->labels, s->value);
                continue;
            }
            snprintf(name, sizeof(name), "%s_bucket", f->name);
            for (size_t b = 0; b < f->n_buckets; b++) {
                snprintf(lab, sizeof(lab), "%s%sle=\"%g\"", s->labels, *s->labels ? "," : "",
                         f->buckets[b]);
                fatia_ctlr_metric_sample(out, name, lab, (double)s->bucket_counts[b]);
            }
            snprintf(lab, sizeof(lab), "%s%sle=\"+Inf\"", s->labels, *s->labels ? "," : "");
            fatia_ctlr_metric_sample(out, name, lab, (double)s->count);
            snprintf(name, sizeof(name), "%s_sum", f->name);
            fatia_ctlr_metric_sample(out, name, s->labels, s->value);
            snprintf(name, sizeof(name), "%s_count", f->name);
            fatia_ctlr_metric_sample(out, name, s->labels, (double)s->count);
        }
    }
    fatia_free(all);
}

void fatia_ctlr_metric_labels(char *buf, size_t n, ...)
{
    va_list ap;
    size_t len = 0;
    const char *k;

    if (!n)
        return;
    buf[0] = '\0';
    va_start(ap, n);
    while ((k = va_arg(ap, const char *)) != NULL) {
        const char *v = va_arg(ap, const char *);
        if (!v)
            v = "";
        if (len && len + 1 < n)
            buf[len++] = ',';
        len += (size_t)snprintf(buf + len, len < n ? n - len : 0, "%s=\"", k);
        for (const char *p = v; *p && len + 3 < n; p++) {
            if (*p == '\\' || *p == '"') {
                buf[len++] = '\\';
                buf[len++] = *p;
            } else if (*p == '\n') {
                buf[len++] = '\\';
                buf[len++] = 'n';
            } else {
                buf[len++] = *p;
            }
        }
        if (len + 1 < n)
            buf[len++] = '"';
        if (len >= n)
            len = n - 1;
        buf[len] = '\0';
    }
    va_end(ap);
}
