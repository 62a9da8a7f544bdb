/*
 * controller/metrics.h: counters and histograms for /metrics (Prometheus text format 0.0.4).
 *
 * Counters and histograms live here because they accumulate over time; gauges (queue lengths,
 * quota usage, free slices) are computed from the controllers' state when /metrics is read and
 * written by each controller's *_metrics function. A family is defined once (name, type, help,
 * buckets); its series are keyed by the label string, already formatted and escaped by the caller
 * (fatia_ctlr_metric_labels).
 */
#ifndef FATIA_CONTROLLER_METRICS_H
#define FATIA_CONTROLLER_METRICS_H

#include <stddef.h>

#include "base/buf.h"

struct fatia_ctlr_metrics;

struct fatia_ctlr_metrics *fatia_ctlr_metrics_new(void);
void fatia_ctlr_metrics_free(struct fatia_ctlr_metrics *m);

/* type "counter" or "histogram"; buckets (upper bounds, ascending, n of them) for histograms.
 * Defining a family twice is harmless. 0 or -ENOMEM. */
int fatia_ctlr_metric_define(struct fatia_ctlr_metrics *m, const char *name, const char *type,
                             const char *help, const double *buckets, size_t n);
void fatia_ctlr_metric_inc(struct fatia_ctlr_metrics *m, const char *name, const char *labels,
                           double v);
void fatia_ctlr_metric_observe(struct fatia_ctlr_metrics *m, const char *name, const char *labels,
                               double v);

/* Writes every family. */
void fatia_ctlr_metrics_render(struct fatia_ctlr_metrics *m, struct fatia_buf *out);

/* Formats k1="v1",k2="v2" (values escaped) from NULL-terminated pairs into buf. */
void fatia_ctlr_metric_labels(char *buf, size_t n, ...);

/* Writes "# HELP name help\n# TYPE name type\n". */
void fatia_ctlr_metric_header(struct fatia_buf *out, const char *name, const char *type,
                              const char *help);
/* Writes "name{labels} value\n" (labels may be "" or NULL). */
void fatia_ctlr_metric_sample(struct fatia_buf *out, const char *name, const char *labels,
                              double v);

#endif
