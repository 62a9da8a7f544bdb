/*
 * control/usage.c: usage accounting (usage.h).
 *
 * Model: a record is an interval [start, end) (end: now while it runs) during which its
 * resources were reserved. Over a window [since, until) it contributes, for each resource,
 * quantity x |interval ∩ window| seconds. Sums are exact: quantities as milli-units (a
 * quantity finer than a milli-unit, such as 1n, is rounded up to one, as Kubernetes rounds
 * CPU), times whole seconds (the records' times are RFC 3339 to the second), in 128-bit integers,
 * so a year of 1 TiB of memory does not overflow. Hours are formatted from that integer with six
 * decimals (rounded half up), so equal inputs give equal text on every machine.
 *
 * A record of 0 s (started and ended within one second: a workbench stopped at once) whose
 * instant is in [since, until) counts in its group's records with no hours: it is a run, and
 * a report that dropped it would say a namespace ran fewer workloads than it did. A running
 * record that starts after now (clocks apart) is such a run at its start, never negative hours.
 *
 * Groups are namespace, ClusterQueue, profile or user ("" shows as "-" in tables). Rejected: floating
 * sums (the order of additions would change the last digits; a fixture could not be exact).
 */
#include "base/compat.h"

#include "control/usage.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "model/quantity.h"

int fatia_control_usage_rec_decode(const json_t *record, struct fatia_control_usage_rec *ret,
                                   char *why, size_t why_n)
{
    const json_t *spec = json_object_get(record, "spec");
    const char *ns = fatia_json_str(json_object_get(record, "metadata"), "namespace");
    const char *start = fatia_json_str(spec, "start"), *end = fatia_json_str(spec, "end");
    const char *q = fatia_json_str(spec, "clusterQueue"), *p = fatia_json_str(spec, "profile");

    memset(ret, 0, sizeof(*ret));
    if (!start || fatia_time_parse_rfc3339(start, &ret->start) < 0) {
        snprintf(why, why_n, "spec.start: not an RFC 3339 time");
        return -EINVAL;
    }
    if (end && fatia_time_parse_rfc3339(end, &ret->end) < 0) {
        snprintf(why, why_n, "spec.end: not an RFC 3339 time");
        return -EINVAL;
    }
    if (end && ret->end < ret->start) {
        snprintf(why, why_n, "spec.end: before spec.start");
        return -EINVAL;
    }
    ret->ns = ns ? ns : "";
    ret->queue = q ? q : "";
    ret->profile = p ? p : "";
    ret->user = fatia_json_str(spec, "user") ? fatia_json_str(spec, "user") : "";
    ret->resources = json_object_get(spec, "resources");
    return 0;
}

struct row {
    const char *group, *resource;
    fatia_i128 milli_sec;
    size_t records;
};

static int row_cmp(const void *a, const void *b)
{
    const struct row *x = a, *y = b;
    int c = strcmp(x->group, y->group);

    return c ? c : strcmp(x->resource, y->resource);
}

static fatia_i128 milli_of(const json_t *v)
{
    struct fatia_quantity q;
    fatia_i128 m;

    if (fatia_quantity_parse_json(v, &q, NULL, 0) < 0 || q.nano <= 0)
        return 0;
    m = q.nano / 1000000;
    if (q.nano % 1000000)
        m++;
    return m;
}

/* hours = milli_sec / 3,600,000, six decimals, rounded half up */
static void format_hours(fatia_i128 milli_sec, char *buf, size_t n)
{
    /* micro-hours = milli_sec / 3.6 (1 unit-hour = 3,600,000 milli-unit-seconds) */
    fatia_i128 micro = (milli_sec * 100 / 36 + 5) / 10;
    fatia_i128 whole = micro / 1000000;
    long long frac = (long long)(micro % 1000000);
    char digits[64];
    int k = 0;

    if (whole == 0) {
        digits[k++] = '0';
    } else {
        while (whole > 0 && k < 60) {
            digits[k++] = (char)('0' + (int)(whole % 10));
            whole /= 10;
        }
    }
    for (int i = 0; i < k / 2; i++) {
        char t = digits[i];
        digits[i] = digits[k - 1 - i];
        digits[k - 1 - i] = t;
    }
    digits[k] = '\0';
    snprintf(buf, n, "%s.%06lld", digits, frac);
}

json_t *fatia_control_usage_report(const struct fatia_control_usage_rec *recs, size_t n,
                                   fatia_usec_t since, fatia_usec_t until, fatia_usec_t now,
                                   enum fatia_control_usage_by by)
{
    struct row *rows = NULL;
    size_t n_rows = 0, cap = 0;
    json_t *out = json_array();
    int64_t w0 = since > 0 ? since / FATIA_USEC_PER_SEC : INT64_MIN;
    int64_t w1 = (until > 0 ? until : now) / FATIA_USEC_PER_SEC;

    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const struct fatia_control_usage_rec *r = &recs[i];
        int64_t a = r->start / FATIA_USEC_PER_SEC, b = (r->end ? r->end : now) / FATIA_USEC_PER_SEC;
        const char *g = by == FATIA_USAGE_BY_NAMESPACE ? r->ns
                        : by == FATIA_USAGE_BY_QUEUE   ? r->queue
                        : by == FATIA_USAGE_BY_USER    ? r->user
                                                       : r->profile;
        const char *res;
        json_t *v;

        /* a running record that starts after now (fatiad's clock ahead of the reader's) has
         * run 0 s so far: without this, a window ending after now gave it negative hours */
        if (b < a)
            b = a;
        /* a run that started and ended within one second (the records' resolution) is a
         * run of 0 s: counted in its window's records, adding no hours */
        if (a == b ? a < w0 || a >= w1 : b <= w0 || a >= w1)
            continue;
        if (a < w0)
            a = w0;
        if (b > w1)
            b = w1;
        json_object_foreach((json_t *)r->resources, res, v)
        {
            fatia_i128 m = milli_of(v);
            size_t k;
            if (!m)
                continue;
            for (k = 0; k < n_rows; k++)
                if (!strcmp(rows[k].group, g) && !strcmp(rows[k].resource, res))
                    break;
            if (k == n_rows) {
                if (n_rows == cap) {
                    size_t nc = cap ? cap * 2 : 16;
                    struct row *nr = fatia_realloc(rows, nc * sizeof(*rows));
                    if (!nr)
                        goto oom;
                    rows = nr;
                    cap = nc;
                }
                rows[n_rows++] = (struct row){g, res, 0, 0};
            }
            rows[k].milli_sec += m * (fatia_i128)(b - a);
            rows[k].records++;
        }
    }
    if (n_rows)
        qsort(rows, n_rows, sizeof(*rows), row_cmp);
    for (size_t k = 0; k < n_rows; k++) {
        char h[80];
        format_hours(rows[k].milli_sec, h, sizeof(h));
        if (json_array_append_new(out, json_pack("{s:s,s:s,s:s,s:f,s:I}", "group", rows[k].group,
                                                 "resource", rows[k].resource, "hours", h, "value",
                                                 strtod(h, NULL), "records",
                                                 (json_int_t)rows[k].records)) < 0)
            goto oom;
    }
    fatia_free(rows);
    return out;
oom:
    fatia_free(rows);
    json_decref(out);
    return NULL;
}
