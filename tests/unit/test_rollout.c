/*
 * tests/unit/test_rollout.c: controller/rollout.c, a Deployment's rolling-update arithmetic.
 *
 * The tables are transcribed from kubernetes/kubernetes pkg/controller/deployment/rolling_test.go
 * (TestDeploymentController_reconcileNewReplicaSet, _reconcileOldReplicaSets,
 * _cleanupUnhealthyReplicas, _scaleDownOldReplicaSetsForRollingUpdate), each with upstream's
 * surge/unavailable settings: the new-set test runs with maxUnavailable 0, the old-set tests with
 * maxSurge 0, and upstream's "a scale happened" becomes "the count changed". Then the percentage
 * rounding of GetScaledValueFromIntOrPercent and ResolveFenceposts, and a whole rollout stepped to
 * its end that never has fewer than replicas - maxUnavailable available.
 */
#include "base/compat.h"

/* cmocka.h needs these before it; keep clang-format from sorting it first. */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "controller/rollout.h"

/* TestDeploymentController_reconcileNewReplicaSet (maxUnavailable 0) */
static void test_new_replica_set(void **state)
{
    static const struct {
        int64_t replicas, surge, old_r, new_r, want;
    } t[] = {
        {10, 0, 10, 0, 0}, /* should not scale up */
        {10, 2, 10, 0, 2}, {10, 2, 5, 0, 7},
        {10, 2, 10, 2, 2}, {10, 2, 2, 11, 10}, /* should scale down */
    };

    (void)state;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        json_t *ms = json_integer(t[i].surge), *mu = json_integer(0);
        int64_t surge, unavail;
        fatia_ctlr_rollout_fenceposts(ms, mu, t[i].replicas, &surge, &unavail);
        int64_t got = fatia_ctlr_rollout_new_replicas(t[i].replicas, surge, t[i].old_r + t[i].new_r,
                                                      t[i].new_r);
        if (got != t[i].want)
            fail_msg("case %zu: new replicas %lld, want %lld", i, (long long)got,
                     (long long)t[i].want);
        json_decref(ms);
        json_decref(mu);
    }
}

/* TestDeploymentController_reconcileOldReplicaSets (maxSurge 0); want -1: no scaling */
static void test_old_replica_sets(void **state)
{
    static const struct {
        int64_t replicas, unavail, old_r, new_r, ready_old, ready_new, want_old;
    } t[] = {
        {10, 0, 10, 0, 10, 0, 9}, {10, 2, 10, 0, 10, 0, 8},
        {10, 2, 10, 0, 8, 0, 8}, /* unhealthy old replicas cleaned up */
        {10, 2, 10, 0, 9, 0, 8}, /* 1 unhealthy cleaned up, 1 ready scaled down */
        {10, 2, 8, 2, 8, 0, -1}, /* the new set's unavailable pods stop a further step */
    };

    (void)state;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        json_t *ms = json_integer(0), *mu = json_integer(t[i].unavail);
        struct fatia_rollout_rs old = {t[i].old_r, t[i].ready_old, 0};
        int64_t surge, unavail, n;
        fatia_ctlr_rollout_fenceposts(ms, mu, t[i].replicas, &surge, &unavail);
        n = fatia_ctlr_rollout_scale_old(t[i].replicas, unavail, t[i].new_r, t[i].ready_new, &old,
                                         1);
        if (t[i].want_old < 0 ? n != 0 : old.want != t[i].want_old)
            fail_msg("case %zu: old set to %lld (%lld scaled down), want %lld", i,
                     (long long)old.want, (long long)n, (long long)t[i].want_old);
        json_decref(ms);
        json_decref(mu);
    }
}

/* TestDeploymentController_cleanupUnhealthyReplicas */
static void test_cleanup_unhealthy(void **state)
{
    static const struct {
        int64_t old_r, ready, max_cleanup, want_cleaned;
    } t[] = {{10, 8, 1, 1}, {10, 8, 3, 2}, {10, 8, 0, 0}, {10, 10, 3, 0}};

    (void)state;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        struct fatia_rollout_rs old = {t[i].old_r, t[i].ready, t[i].old_r};
        int64_t n = fatia_ctlr_rollout_cleanup_unhealthy(&old, 1, t[i].max_cleanup);
        if (n != t[i].want_cleaned || old.want != t[i].old_r - n)
            fail_msg("case %zu: cleaned %lld, want %lld", i, (long long)n,
                     (long long)t[i].want_cleaned);
    }
}

/* TestDeploymentController_scaleDownOldReplicaSetsForRollingUpdate (maxSurge 0, one old set
 * that is all of the sets) */
static void test_scale_down_old(void **state)
{
    static const struct {
        int64_t replicas, unavail, ready, old_r, want_old;
    } t[] = {
        {10, 0, 10, 10, 9}, {10, 2, 10, 10, 8}, {10, 2, 8, 10, -1},
        {10, 2, 10, 0, -1}, {10, 2, 1, 10, -1},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        json_t *ms = json_integer(0), *mu = json_integer(t[i].unavail);
        struct fatia_rollout_rs old = {t[i].old_r, t[i].ready, 0};
        int64_t surge, unavail, min_available, avail;
        fatia_ctlr_rollout_fenceposts(ms, mu, t[i].replicas, &surge, &unavail);
        /* upstream's function alone: available pods above the minimum go, oldest set first */
        min_available = t[i].replicas - unavail;
        avail = t[i].ready;
        old.want = old.spec;
        if (avail > min_available && old.spec > 0) {
            int64_t c = avail - min_available < old.spec ? avail - min_available : old.spec;
            old.want -= c;
        }
        /* and through scale_old, whose cleanup step may only add unavailable pods to it */
        struct fatia_rollout_rs o2 = {t[i].old_r, t[i].ready, 0};
        fatia_ctlr_rollout_scale_old(t[i].replicas, unavail, 0, 0, &o2, 1);
        if (t[i].want_old < 0 ? old.want != old.spec : old.want != t[i].want_old)
            fail_msg("case %zu: old set to %lld, want %lld", i, (long long)old.want,
                     (long long)t[i].want_old);
        if (t[i].want_old >= 0 && o2.want != t[i].want_old)
            fail_msg("case %zu: scale_old set the old set to %lld, want %lld", i,
                     (long long)o2.want, (long long)t[i].want_old);
        json_decref(ms);
        json_decref(mu);
    }
}

/* GetScaledValueFromIntOrPercent and ResolveFenceposts */
static void test_percentages(void **state)
{
    json_t *p25 = json_string("25%"), *p0 = json_string("0%"), *bad = json_string("25");
    int64_t s, u;

    (void)state;
    assert_int_equal(fatia_ctlr_rollout_scaled(p25, 10, true), 3);
    assert_int_equal(fatia_ctlr_rollout_scaled(p25, 10, false), 2);
    assert_int_equal(fatia_ctlr_rollout_scaled(p25, 4, false), 1);
    assert_int_equal(fatia_ctlr_rollout_scaled(p25, 1, false), 0);
    assert_int_equal(fatia_ctlr_rollout_scaled(p25, 1, true), 1);
    assert_int_equal(fatia_ctlr_rollout_scaled(bad, 10, true), 0);
    fatia_ctlr_rollout_fenceposts(p0, p0, 10, &s, &u);
    assert_int_equal(s, 0);
    assert_int_equal(u, 1);
    fatia_ctlr_rollout_fenceposts(p25, p25, 3, &s, &u);
    assert_int_equal(s, 1);
    assert_int_equal(u, 0);
    json_decref(p25);
    json_decref(p0);
    json_decref(bad);
}

/* A whole rollout of 4 replicas at 25%/25%, pods becoming available at once when created: every
 * step keeps at least 3 available and at most 5 in all, and it ends with 4 new, 0 old. */
static void test_full_rollout(void **state)
{
    json_t *p25 = json_string("25%");
    struct fatia_rollout_rs old = {4, 4, 0};
    int64_t surge, unavail, new_spec = 0, steps = 0;

    (void)state;
    fatia_ctlr_rollout_fenceposts(p25, p25, 4, &surge, &unavail);
    while ((old.spec > 0 || new_spec < 4) && steps++ < 20) {
        new_spec = fatia_ctlr_rollout_new_replicas(4, surge, new_spec + old.spec, new_spec);
        assert_true(new_spec + old.spec <= 4 + surge);
        fatia_ctlr_rollout_scale_old(4, unavail, new_spec, new_spec, &old, 1);
        old.spec = old.available = old.want;
        assert_true(new_spec + old.available >= 4 - unavail);
    }
    assert_int_equal(new_spec, 4);
    assert_int_equal(old.spec, 0);
    json_decref(p25);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_replica_set),   cmocka_unit_test(test_old_replica_sets),
        cmocka_unit_test(test_cleanup_unhealthy), cmocka_unit_test(test_scale_down_old),
        cmocka_unit_test(test_percentages),       cmocka_unit_test(test_full_rollout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
