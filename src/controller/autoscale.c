/*
 * controller/autoscale.c: how many replicas an InferenceService should run, as Knative's Pod
 * Autoscaler (KPA) decides it (knative/serving pkg/autoscaler/scaling/autoscaler.go, Scale), the
 * autoscaler KServe uses in serverless mode. Pure: the samples and the clock come in, a count goes
 * out (the controller, isvc_scale.c, scrapes and writes).
 *
 * Model. The controller records, every tick, the pool's total metric (the sum over the ready
 * replicas: in-flight requests for concurrency, vllm:num_requests_waiting for queue depth, or the
 * KV-cache use). Two averages over the samples: the stable window (60 s) and the panic window
 * (6 s, 10 % of it). With ready replicas R (at least 1 in the arithmetic), target T and target
 * utilization U (Knative's container-concurrency-target-percentage, 70 %):
 *
 *   desired stable  dspc = ceil(stable / (T U)),  desired panic dppc = ceil(panic / (T U))
 *   both clamped to [floor(R / max_down_rate), ceil(R * max_up_rate)]   (KPA's rate limits: 2, 1000)
 *   over the panic threshold when dppc / R >= 2: enter panic (or extend it: panic_since = now)
 *   in panic: desired = max(dppc, the largest dppc of this panic): never down while panicking
 *   out of panic once under the threshold for a whole stable window since panic_since
 *   otherwise desired = dspc
 *
 * then clamped to [min, max]. The stable window is the anti-flapping rule: a burst raises the
 * count at once through the panic window, a lull lowers it only once the 60 s average has fallen,
 * at most halving per step. Zero replicas come only from a stable window of zero load with
 * min 0, and only once the samples span a whole stable window (KPA's scale to zero, its grace
 * period being the window itself here).
 *
 * No sample in the stable window (a fresh controller, a scrape that failed throughout): no data,
 * the caller keeps the count (KPA returns "no data" and does not scale).
 *
 * Rejected: Kubernetes HPA's algorithm (desired = ceil(R * current / target) with a 5-minute
 * scale-down stabilization): it needs a per-replica ratio, which at zero replicas is undefined,
 * and reacts to a burst no faster than its sync period; KPA's panic mode is what serving needs.
 * Knative's per-second buckets with weighted averaging: a plain mean of the samples of the window
 * is the same for the controller's fixed tick and simpler to test.
 */
#include "base/compat.h"

#include "controller/autoscale.h"

#include <math.h>

void fatia_ctlr_as_defaults(struct fatia_as_spec *s)
{
    if (s->utilization <= 0 || s->utilization > 1)
        s->utilization = 0.7;
    if (s->stable_window <= 0)
        s->stable_window = 60 * FATIA_USEC_PER_SEC;
    if (s->panic_window <= 0 || s->panic_window > s->stable_window)
        s->panic_window = s->stable_window / 10;
    if (s->panic_threshold <= 0)
        s->panic_threshold = 2.0;
    if (s->max_up_rate <= 1)
        s->max_up_rate = 1000;
    if (s->max_down_rate <= 1)
        s->max_down_rate = 2;
    if (s->target <= 0)
        s->target = 1;
}

void fatia_ctlr_as_record(struct fatia_as_state *st, fatia_usec_t now, double total)
{
    unsigned i = (st->head + st->n) % FATIA_AS_SAMPLES;

    if (st->n == FATIA_AS_SAMPLES) {
        i = st->head;
        st->head = (st->head + 1) % FATIA_AS_SAMPLES;
    } else {
        st->n++;
    }
    st->s[i].at = now;
    st->s[i].value = total < 0 ? 0 : total;
}

/* The mean of the samples in (now - window, now]; false when there is none. */
static bool window_mean(const struct fatia_as_state *st, fatia_usec_t now, fatia_usec_t window,
                        double *ret)
{
    double sum = 0;
    unsigned n = 0;

    for (unsigned k = 0; k < st->n; k++) {
        unsigned i = (st->head + k) % FATIA_AS_SAMPLES;
        if (st->s[i].at > now - window && st->s[i].at <= now) {
            sum += st->s[i].value;
            n++;
        }
    }
    *ret = n ? sum / n : 0;
    return n > 0;
}

static double clampd(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

void fatia_ctlr_as_decide(const struct fatia_as_spec *s, struct fatia_as_state *st,
                          fatia_usec_t now, int ready, struct fatia_as_decision *ret)
{
    double r = ready < 1 ? 1 : ready, per = s->target * s->utilization;
    double up = ceil(r * s->max_up_rate), down = floor(r / s->max_down_rate);
    double dspc, dppc;
    int desired;

    *ret = (struct fatia_as_decision){.desired = ready};
    if (!window_mean(st, now, s->stable_window, &ret->stable)) {
        ret->desired = ready < s->min ? s->min : ready > s->max ? s->max : ready;
        return;
    }
    window_mean(st, now, s->panic_window, &ret->panicking);
    ret->have_data = true;
    if (per <= 0)
        per = 1;
    dspc = clampd(ceil(ret->stable / per - 1e-9), down, up);
    dppc = clampd(ceil(ret->panicking / per - 1e-9), down, up);
    if (dppc / r >= s->panic_threshold) {
        st->panic_since = now; /* enter, or extend */
    } else if (st->panic_since && st->panic_since + s->stable_window <= now) {
        st->panic_since = 0;
        st->max_panic = 0;
    }
    desired = (int)dspc;
    if (st->panic_since) {
        if ((int)dppc > st->max_panic)
            st->max_panic = (int)dppc;
        desired = st->max_panic;
        ret->panic = true;
    }
    /* zero only once a whole stable window has been observed (a fresh or restarted autoscaler
     * has not seen the load before it: KPA's scale-to-zero grace) */
    if (desired == 0 && (!st->n || now - st->s[st->head].at < s->stable_window))
        desired = 1;
    if (desired < s->min)
        desired = s->min;
    if (desired > s->max)
        desired = s->max;
    ret->desired = desired;
}
