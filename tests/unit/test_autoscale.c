/*
 * tests/unit/test_autoscale.c: controller/autoscale.c, the InferenceService autoscaler's decision
 * (Knative KPA's Scale). The cases follow knative/serving pkg/autoscaler/scaling/autoscaler_test.go
 * (stable mode at the target, panic on a burst at twice the ready count, no scale-down in panic,
 * the scale-down rate limit, no data keeps the count, scale to zero only after a whole stable
 * window without load, and only once the samples span a window), with target utilization 1 unless said, plus flapping: a load that
 * oscillates around the target every tick never moves the count.
 */
#include "base/compat.h"

/* cmocka.h needs these before it; keep clang-format from sorting it first. */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "controller/autoscale.h"

#define S FATIA_USEC_PER_SEC

static struct fatia_as_spec spec(int min, int max, double target)
{
    struct fatia_as_spec s = {.min = min, .max = max, .target = target, .utilization = 1};
    fatia_ctlr_as_defaults(&s);
    return s;
}

/* Records v every second over (from, to]. */
static void feed(struct fatia_as_state *st, fatia_usec_t from, fatia_usec_t to, double v)
{
    for (fatia_usec_t t = from + S; t <= to; t += S)
        fatia_ctlr_as_record(st, t, v);
}

static int decide(const struct fatia_as_spec *s, struct fatia_as_state *st, fatia_usec_t now,
                  int ready)
{
    struct fatia_as_decision d;
    fatia_ctlr_as_decide(s, st, now, ready, &d);
    return d.desired;
}

static void test_defaults(void **state)
{
    struct fatia_as_spec s = {.min = 1, .max = 3, .target = 4};
    (void)state;
    fatia_ctlr_as_defaults(&s);
    assert_true(s.utilization == 0.7);
    assert_int_equal(s.stable_window, 60 * S);
    assert_int_equal(s.panic_window, 6 * S);
    assert_true(s.panic_threshold == 2.0 && s.max_down_rate == 2 && s.max_up_rate == 1000);
}

/* TestAutoscalerStableModeNoChange / ...IncreaseWithConcurrencyDefault */
static void test_stable(void **state)
{
    struct fatia_as_spec s = spec(1, 10, 10);
    static struct fatia_as_state st;
    struct fatia_as_decision d;
    (void)state;
    feed(&st, 0, 60 * S, 50);
    fatia_ctlr_as_decide(&s, &st, 60 * S, 5, &d);
    assert_true(d.have_data && !d.panic);
    assert_true(d.stable == 50 && d.panicking == 50);
    assert_int_equal(d.desired, 5);
    /* 51 in flight: 6 replicas of 10 */
    feed(&st, 60 * S, 120 * S, 51);
    assert_int_equal(decide(&s, &st, 120 * S, 5), 6);
}

/* Knative's utilization: 70 % of the target is the aim per replica. */
static void test_utilization(void **state)
{
    struct fatia_as_spec s = {.min = 1, .max = 100, .target = 10};
    static struct fatia_as_state st;
    (void)state;
    fatia_ctlr_as_defaults(&s);
    feed(&st, 0, 60 * S, 70);
    assert_int_equal(decide(&s, &st, 60 * S, 10), 10); /* 70 / 7 */
    feed(&st, 60 * S, 120 * S, 71);
    assert_int_equal(decide(&s, &st, 120 * S, 10), 11);
}

/* TestAutoscalerPanicModeDoublePodCount, ...ExponentialTrackAndStablize: a burst in the panic
 * window at twice the ready count or more scales at once, and panic does not scale down. */
static void test_panic(void **state)
{
    struct fatia_as_spec s = spec(1, 100, 10);
    static struct fatia_as_state st;
    struct fatia_as_decision d;
    (void)state;
    feed(&st, 0, 54 * S, 10);
    feed(&st, 54 * S, 60 * S, 100); /* the last 6 s: 100 in flight */
    fatia_ctlr_as_decide(&s, &st, 60 * S, 1, &d);
    assert_true(d.panic);
    assert_int_equal(d.desired, 10); /* ceil(100 / 10); the stable mean is 19: 2 */
    /* the burst ends: in panic the count stays at the largest panic count */
    feed(&st, 60 * S, 70 * S, 0);
    fatia_ctlr_as_decide(&s, &st, 70 * S, 10, &d);
    assert_true(d.panic);
    assert_int_equal(d.desired, 10);
    /* a stable window after the last over-threshold tick: out of panic, the stable count, at
     * most halving (scale-down rate 2) */
    feed(&st, 70 * S, 121 * S, 0);
    fatia_ctlr_as_decide(&s, &st, 121 * S, 10, &d);
    assert_false(d.panic);
    assert_int_equal(d.desired, 5);
}

/* Under the threshold (less than twice the ready count): no panic, the stable count. */
static void test_no_panic_under_threshold(void **state)
{
    struct fatia_as_spec s = spec(1, 100, 10);
    static struct fatia_as_state st;
    struct fatia_as_decision d;
    (void)state;
    feed(&st, 0, 54 * S, 20);
    feed(&st, 54 * S, 60 * S, 39); /* dppc 4 with 2 ready: 2x, panic */
    fatia_ctlr_as_decide(&s, &st, 60 * S, 2, &d);
    assert_true(d.panic);
    static struct fatia_as_state st2;
    feed(&st2, 0, 54 * S, 20);
    feed(&st2, 54 * S, 60 * S, 30); /* dppc 3 with 2 ready: 1.5x, stable */
    fatia_ctlr_as_decide(&s, &st2, 60 * S, 2, &d);
    assert_false(d.panic);
    assert_int_equal(d.desired, 3); /* stable mean 21: ceil 2.1 */
}

/* TestAutoscalerNoDataNoAutoscale: no sample in the window keeps the count (within bounds). */
static void test_no_data(void **state)
{
    struct fatia_as_spec s = spec(2, 4, 10);
    static struct fatia_as_state st;
    struct fatia_as_decision d;
    (void)state;
    fatia_ctlr_as_decide(&s, &st, 100 * S, 3, &d);
    assert_false(d.have_data);
    assert_int_equal(d.desired, 3);
    assert_int_equal(decide(&s, &st, 100 * S, 9), 4);
    assert_int_equal(decide(&s, &st, 100 * S, 0), 2);
    feed(&st, 0, 10 * S, 100); /* samples older than the window do not count */
    fatia_ctlr_as_decide(&s, &st, 100 * S, 3, &d);
    assert_false(d.have_data);
}

/* Scale-down rate 2: 10 ready replicas without load go to 5, 2, 1, 0 (KPA halves at most). */
static void test_scale_down_rate(void **state)
{
    struct fatia_as_spec s = spec(0, 20, 10);
    static struct fatia_as_state st;
    (void)state;
    feed(&st, 0, 61 * S, 0);
    assert_int_equal(decide(&s, &st, 61 * S, 10), 5);
    assert_int_equal(decide(&s, &st, 61 * S, 5), 2);
    assert_int_equal(decide(&s, &st, 61 * S, 2), 1);
    assert_int_equal(decide(&s, &st, 61 * S, 1), 0);
}

/* Scale to zero only after a whole stable window of zero load, and only with min 0. */
static void test_scale_to_zero(void **state)
{
    struct fatia_as_spec s = spec(0, 3, 1), s1 = spec(1, 3, 1);
    static struct fatia_as_state st;
    (void)state;
    feed(&st, 0, 30 * S, 1);
    feed(&st, 30 * S, 60 * S, 0);
    assert_int_equal(decide(&s, &st, 60 * S, 1), 1); /* mean 0.5 in the window */
    assert_int_equal(decide(&s, &st, 89 * S, 1), 1); /* one sample of 1 still in it */
    feed(&st, 60 * S, 91 * S, 0);
    assert_int_equal(decide(&s, &st, 91 * S, 1), 0);
    assert_int_equal(decide(&s1, &st, 91 * S, 1), 1);
}

/* A fresh autoscaler (or one after a restart) that has seen less than a stable window of zero
 * load keeps one replica: it has not watched the load long enough to drop the last. */
static void test_zero_needs_a_full_window(void **state)
{
    struct fatia_as_spec s = spec(0, 3, 1);
    static struct fatia_as_state st;
    (void)state;
    feed(&st, 100 * S, 101 * S, 0);
    assert_int_equal(decide(&s, &st, 101 * S, 1), 1);
    feed(&st, 101 * S, 160 * S, 0);
    assert_int_equal(decide(&s, &st, 160 * S, 1), 1); /* samples span 59 s */
    feed(&st, 160 * S, 161 * S, 0);
    assert_int_equal(decide(&s, &st, 161 * S, 1), 0);
    assert_int_equal(decide(&s, &st, 161 * S, 0), 0); /* stays at zero */
}

/* Flapping: a load alternating 15 / 25 every second around 2 replicas of 10 never moves the count
 * off 2, though each sample alone asks for 2 or 3. */
static void test_no_flapping(void **state)
{
    struct fatia_as_spec s = spec(1, 10, 10);
    static struct fatia_as_state st;
    int ready = 2;
    (void)state;
    for (int t = 1; t <= 300; t++) {
        fatia_ctlr_as_record(&st, t * S, t % 2 ? 15 : 25);
        if (t >= 60) {
            ready = decide(&s, &st, t * S, ready);
            assert_int_equal(ready, 2);
        }
    }
}

/* The bounds: max caps a panic, and the ring of samples wraps. */
static void test_bounds_and_ring(void **state)
{
    struct fatia_as_spec s = spec(1, 3, 1);
    static struct fatia_as_state st;
    (void)state;
    feed(&st, 0, 2000 * S, 100);
    assert_int_equal(st.n, FATIA_AS_SAMPLES);
    assert_int_equal(decide(&s, &st, 2000 * S, 1), 3);
    fatia_ctlr_as_record(&st, 2001 * S, -5); /* a negative reading counts as 0 */
    assert_true(st.s[(st.head + st.n - 1) % FATIA_AS_SAMPLES].value == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_stable),
        cmocka_unit_test(test_utilization),
        cmocka_unit_test(test_panic),
        cmocka_unit_test(test_no_panic_under_threshold),
        cmocka_unit_test(test_no_data),
        cmocka_unit_test(test_scale_down_rate),
        cmocka_unit_test(test_scale_to_zero),
        cmocka_unit_test(test_zero_needs_a_full_window),
        cmocka_unit_test(test_no_flapping),
        cmocka_unit_test(test_bounds_and_ring),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
