/*
 * controller/autoscale.h: the InferenceService autoscaler's decision (autoscale.c), pure: no I/O,
 * the clock passed in.
 */
#ifndef FATIA_CONTROLLER_AUTOSCALE_H
#define FATIA_CONTROLLER_AUTOSCALE_H

#include <stdbool.h>

#include "base/clock.h"

#define FATIA_AS_SAMPLES 512

struct fatia_as_spec {
    int min, max;               /* replicas bounds, 0 <= min <= max */
    double target;              /* the metric's target per replica (> 0) */
    double utilization;         /* Knative's target utilization, (0, 1]: 0.7 by default */
    fatia_usec_t stable_window; /* Knative's stable window: 60 s by default */
    fatia_usec_t panic_window;  /* 10 % of the stable window by default */
    double panic_threshold;     /* 2.0: panic at twice the replicas the load needs */
    double max_up_rate;         /* 1000: at most rate x ready replicas after a step */
    double max_down_rate;       /* 2: at least ready / rate replicas after a step */
};

struct fatia_as_state {
    struct {
        fatia_usec_t at;
        double value;
    } s[FATIA_AS_SAMPLES];

    unsigned head, n;
    fatia_usec_t panic_since; /* 0: not in panic */
    int max_panic;
};

struct fatia_as_decision {
    bool have_data;   /* false: no sample in the stable window, keep the current count */
    bool panic;       /* in panic mode: no scale-down */
    double stable;    /* the metric averaged over the stable window (the pool's total) */
    double panicking; /* over the panic window */
    int desired;      /* clamped to [min, max] */
};

/* The defaults above for the fields left 0. */
void fatia_ctlr_as_defaults(struct fatia_as_spec *s);
/* One observation of the pool's total metric (the sum over the replicas) at now. */
void fatia_ctlr_as_record(struct fatia_as_state *st, fatia_usec_t now, double total);
/* The count the pool should have now, with ready replicas ready (Knative's KPA). */
void fatia_ctlr_as_decide(const struct fatia_as_spec *s, struct fatia_as_state *st,
                          fatia_usec_t now, int ready, struct fatia_as_decision *ret);

#endif
