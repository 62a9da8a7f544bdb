/*
 * controller/metrics.h: counters and histograms for /metrics (Prometheus text format 0.0.4).
 *
 * Counters and histograms live here because they accumulate over time; gauges (queue lengths,
 * quota usage, free slices) are computed from the controllers' state when /metrics is read and
 * written by each controller's *_metrics function. A family is defined once (name, type, help,
 * buckets); its series are keyed by the label string, already formatted and escaped by the caller
 * (metric_labels).
 */
#ifndef FATIA_CONTROLLER_METRICS_H
#define FATIA_CONTROLLER_METRICS_H

#include <stddef.h>

#include "base/buf.h"

struct ctl_metrics;

struct ctl_metrics *ctl_metrics_new(void);
void ctl_metrics_free(struct ctl_metrics *m);

/* type "counter" or "histogram"; buckets (upper bounds, ascending, n of them) for histograms.
 * Defining a family twice is harmless. 0 or -ENOMEM. */
int metric_define(struct ctl_metrics *m, const char *name, const char *type, const char *help,
                  const double *buckets, size_t n);
void metric_inc(struct ctl_metrics *m, const char *name, const char *labels, double v);
void metric_observe(struct ctl_metrics *m, const char *name, const char *labels, double v);

/* Writes every family. */
void ctl_metrics_render(struct ctl_metrics *m, struct fatia_buf *out);

/* Formats k1="v1",k2="v2" (values escaped) from NULL-terminated pairs into buf. */
void metric_labels(char *buf, size_t n, ...);

/* Writes "# HELP name help\n# TYPE name type\n". */
void metric_header(struct fatia_buf *out, const char *name, const char *type, const char *help);
/* Writes "name{labels} value\n" (labels may be "" or NULL). */
void metric_sample(struct fatia_buf *out, const char *name, const char *labels, double v);

#endif
