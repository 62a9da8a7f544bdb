/*
 * gateway/hist.c: histograms (see hist.h). Observation is a binary search over at most 40
 * bounds; exposition prints the cumulative counts Prometheus expects.
 */
#include "base/compat.h"

#include "gateway/hist.h"

const double fatia_hist_ttft_buckets[] = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                          0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                          20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
const size_t fatia_hist_ttft_n = FATIA_ARRAY_SIZE(fatia_hist_ttft_buckets);
const double fatia_hist_itl_buckets[] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                         0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
const size_t fatia_hist_itl_n = FATIA_ARRAY_SIZE(fatia_hist_itl_buckets);
const double fatia_hist_e2e_buckets[] = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                         5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                         60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
const size_t fatia_hist_e2e_n = FATIA_ARRAY_SIZE(fatia_hist_e2e_buckets);
const double fatia_hist_overhead_buckets[] = {10e-6, 25e-6,  50e-6, 100e-6, 200e-6, 500e-6,
                                              1e-3,  2.5e-3, 5e-3,  10e-3,  50e-3,  100e-3};
const size_t fatia_hist_overhead_n = FATIA_ARRAY_SIZE(fatia_hist_overhead_buckets);

void fatia_hist_init(struct fatia_hist *h, const double *bounds, size_t n)
{
    memset(h, 0, sizeof(*h));
    h->bounds = bounds;
    h->n = n > FATIA_HIST_MAX_BUCKETS ? FATIA_HIST_MAX_BUCKETS : n;
}

void fatia_hist_observe(struct fatia_hist *h, double v)
{
    size_t lo = 0, hi = h->n;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v <= h->bounds[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    h->counts[lo]++;
    h->count++;
    h->sum += v;
}

int fatia_hist_write(const struct fatia_hist *h, struct fatia_buf *b, const char *name,
                     const char *labels)
{
    uint64_t cum = 0;
    const char *sep = labels && *labels ? "," : "";

    if (!labels)
        labels = "";
    for (size_t i = 0; i < h->n; i++) {
        cum += h->counts[i];
        fatia_buf_printf(b, "%s_bucket{%s%sle=\"%g\"} %" PRIu64 "\n", name, labels, sep,
                         h->bounds[i], cum);
    }
    cum += h->counts[h->n];
    fatia_buf_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %" PRIu64 "\n", name, labels, sep, cum);
    fatia_buf_printf(b, "%s_sum{%s} %.9g\n", name, labels, h->sum);
    return fatia_buf_printf(b, "%s_count{%s} %" PRIu64 "\n", name, labels, h->count);
}
