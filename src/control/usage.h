/*
 * control/usage.h: usage accounting: UsageRecords (model/kinds/fatia_usage.c) -> resource-hours
 * per namespace, ClusterQueue, hardware profile or user, over a window (docs/selfservice.md, "Usage
 * metering"). Pure: trees in, a tree out; the clock is passed in.
 */
#ifndef FATIA_CONTROL_USAGE_H
#define FATIA_CONTROL_USAGE_H

#include <jansson.h>
#include <stddef.h>

#include "base/clock.h"

struct fatia_control_usage_rec {
    const char *ns, *queue, *profile, *user; /* borrowed from the record; "" when unset */
    fatia_usec_t start, end;                 /* end 0: still running (counted up to now) */
    const json_t *resources;                 /* borrowed: resource name -> quantity */
};

enum fatia_control_usage_by {
    FATIA_USAGE_BY_NAMESPACE,
    FATIA_USAGE_BY_QUEUE,
    FATIA_USAGE_BY_PROFILE,
    FATIA_USAGE_BY_USER, /* spec.user: the Workload's fatia.dev/creator */
};

/* A UsageRecord object decoded (borrowing from it). 0, or -EINVAL with why naming the field. */
int fatia_control_usage_rec_decode(const json_t *record, struct fatia_control_usage_rec *ret,
                                   char *why, size_t why_n);

/* The hours of each resource per group over [since, until) (since 0: from the start; until 0:
 * up to now), each record counted over its interval (an open one up to now) clipped to the
 * window, at second resolution: rows {"group", "resource", "hours" (exact decimal text, 6
 * places), "value" (the same, as a number), "records"} sorted by group then resource. A new
 * tree, or NULL when out of memory. */
json_t *fatia_control_usage_report(const struct fatia_control_usage_rec *recs, size_t n,
                                   fatia_usec_t since, fatia_usec_t until, fatia_usec_t now,
                                   enum fatia_control_usage_by by);

#endif
