/*
 * gateway/hist.h: Prometheus histograms (cumulative buckets, sum, count) for the gateway's and
 * engine-sim's /metrics, and their text exposition.
 */
#ifndef FATIA_GATEWAY_HIST_H
#define FATIA_GATEWAY_HIST_H

#include "base/compat.h"

#include "base/buf.h"

#define FATIA_HIST_MAX_BUCKETS 40

struct fatia_hist {
    const double *bounds; /* upper bounds, increasing; +Inf is implicit */
    size_t n;
    uint64_t counts[FATIA_HIST_MAX_BUCKETS + 1]; /* per bucket, not cumulative */
    uint64_t count;
    double sum;
};

void fatia_hist_init(struct fatia_hist *h, const double *bounds, size_t n);
void fatia_hist_observe(struct fatia_hist *h, double v);
/* Appends `name_bucket{labels,le="..."} N` lines, name_sum and name_count. labels may be NULL
 * or "" (no labels) or `a="b"`. */
int fatia_hist_write(const struct fatia_hist *h, struct fatia_buf *b, const char *name,
                     const char *labels);

/* vLLM's bucket sets (vllm/v1/metrics/loggers.py). */
extern const double fatia_hist_ttft_buckets[];
extern const size_t fatia_hist_ttft_n;
extern const double fatia_hist_itl_buckets[];
extern const size_t fatia_hist_itl_n;
extern const double fatia_hist_e2e_buckets[];
extern const size_t fatia_hist_e2e_n;
/* Microsecond-scale buckets for the gateway's added latency (seconds). */
extern const double fatia_hist_overhead_buckets[];
extern const size_t fatia_hist_overhead_n;

#endif
