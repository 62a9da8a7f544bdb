/*
 * tests/unit/test_leader.c: the leader election's decision (controller/leader.c), pure: a
 * missing Lease is taken; another holder's Lease is waited on until its record has stood still
 * for its leaseDurationSeconds on our clock (a renewal restarts the wait; its renewTime is never
 * compared with our clock); a leader renews until the renew deadline passes without a success,
 * or until the Lease names another; the Lease written on a takeover counts a transition and
 * sets acquireTime, a renewal keeps both; client-go's rule on the timings.
 */
#include "base/compat.h"

/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "base/error.h"
#include "base/json.h"
#include "controller/leader.h"

#define S FATIA_USEC_PER_SEC

static const struct fatia_ctlr_leader_timing T = {
    .lease = 15 * S, .renew_deadline = 10 * S, .retry = 2 * S};

static json_t *lease(const char *holder, const char *renew, int transitions)
{
    return json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s,s:i,s:s,s:s,s:i}}", "apiVersion",
                     "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name", "l",
                     "namespace", "kube-system", "spec", "holderIdentity", holder,
                     "leaseDurationSeconds", 15, "renewTime", renew, "acquireTime",
                     "2026-01-01T00:00:00.000000Z", "leaseTransitions", transitions);
}

static void test_take_missing(void **state)
{
    struct fatia_ctlr_leader_state st = {0};
    json_t *w;
    int64_t tr = -1;

    (void)state;
    assert_int_equal(fatia_ctlr_leader_decide(&st, "me", NULL, 100 * S, &T),
                     FATIA_CTLR_LEADER_TAKE);
    w = fatia_ctlr_leader_lease_json(NULL, "kube-system", "l", "me", &T, 1000 * S);
    assert_non_null(w);
    assert_string_equal(fatia_json_str(json_object_get(w, "spec"), "holderIdentity"), "me");
    assert_true(fatia_json_int(json_object_get(w, "spec"), "leaseTransitions", &tr));
    assert_int_equal(tr, 0);
    assert_true(fatia_json_int(json_object_get(w, "spec"), "leaseDurationSeconds", &tr));
    assert_int_equal(tr, 15);
    json_decref(w);
}

static void test_wait_for_other(void **state)
{
    struct fatia_ctlr_leader_state st = {0};
    json_t *a = lease("other", "2026-01-01T00:00:01.000000Z", 3);
    json_t *b = lease("other", "2026-01-01T00:00:03.000000Z", 3);
    json_t *w;
    int64_t tr = 0;

    (void)state;
    /* first seen at 100 s: waits until 115 s, whatever renewTime says */
    assert_int_equal(fatia_ctlr_leader_decide(&st, "me", a, 100 * S, &T), FATIA_CTLR_LEADER_WAIT);
    assert_int_equal(fatia_ctlr_leader_decide(&st, "me", a, 114 * S, &T), FATIA_CTLR_LEADER_WAIT);
    /* renewed meanwhile: the wait starts again */
    assert_int_equal(fatia_ctlr_leader_decide(&st, "me", b, 110 * S, &T), FATIA_CTLR_LEADER_WAIT);
    assert_int_equal(fatia_ctlr_leader_decide(&st, "me", b, 124 * S, &T), FATIA_CTLR_LEADER_WAIT);
    assert_int_equal(fatia_ctlr_leader_decide(&st, "me", b, 125 * S, &T), FATIA_CTLR_LEADER_TAKE);
    /* the takeover counts a transition and sets acquireTime */
    w = fatia_ctlr_leader_lease_json(b, "kube-system", "l", "me", &T, 1000 * S);
    assert_true(fatia_json_int(json_object_get(w, "spec"), "leaseTransitions", &tr));
    assert_int_equal(tr, 4);
    assert_string_not_equal(fatia_json_str(json_object_get(w, "spec"), "acquireTime"),
                            "2026-01-01T00:00:00.000000Z");
    json_decref(w);
    /* a released lease (no holder) is taken at once */
    memset(&st, 0, sizeof(st));
    json_decref(a);
    a = lease("", "2026-01-01T00:00:01.000000Z", 3);
    assert_int_equal(fatia_ctlr_leader_decide(&st, "me", a, 100 * S, &T), FATIA_CTLR_LEADER_TAKE);
    json_decref(a);
    json_decref(b);
}

static void test_leader_renews_then_loses(void **state)
{
    struct fatia_ctlr_leader_state st = {.leader = true, .renewed_at = 100 * S};
    json_t *mine = lease("me", "2026-01-01T00:00:01.000000Z", 1);
    json_t *theirs = lease("other", "2026-01-01T00:00:09.000000Z", 2);
    json_t *w;
    int64_t tr = 0;

    (void)state;
    assert_int_equal(fatia_ctlr_leader_decide(&st, "me", mine, 102 * S, &T),
                     FATIA_CTLR_LEADER_RENEW);
    assert_int_equal(fatia_ctlr_leader_decide(&st, "me", mine, 110 * S, &T),
                     FATIA_CTLR_LEADER_RENEW);
    assert_int_equal(fatia_ctlr_leader_decide(&st, "me", mine, 110 * S + 1, &T),
                     FATIA_CTLR_LEADER_LOST);
    st.renewed_at = 110 * S;
    assert_int_equal(fatia_ctlr_leader_decide(&st, "me", theirs, 111 * S, &T),
                     FATIA_CTLR_LEADER_LOST);
    /* a renewal keeps acquireTime and the transitions */
    w = fatia_ctlr_leader_lease_json(mine, "kube-system", "l", "me", &T, 1000 * S);
    assert_true(fatia_json_int(json_object_get(w, "spec"), "leaseTransitions", &tr));
    assert_int_equal(tr, 1);
    assert_string_equal(fatia_json_str(json_object_get(w, "spec"), "acquireTime"),
                        "2026-01-01T00:00:00.000000Z");
    json_decref(w);
    json_decref(mine);
    json_decref(theirs);
}

static void test_timing_rule(void **state)
{
    struct fatia_ctlr_leader_timing t = T;
    char why[200];

    (void)state;
    assert_int_equal(fatia_ctlr_leader_timing_check(&t, why, sizeof(why)), 0);
    t.lease = 10 * S;
    assert_int_equal(fatia_ctlr_leader_timing_check(&t, why, sizeof(why)), -EINVAL);
    assert_non_null(strstr(why, "--leader-elect-lease-duration"));
    t = T;
    t.retry = 9 * S; /* 1.2 x 9 > 10 */
    assert_int_equal(fatia_ctlr_leader_timing_check(&t, why, sizeof(why)), -EINVAL);
    assert_non_null(strstr(why, "--leader-elect-retry-period"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_take_missing),
        cmocka_unit_test(test_wait_for_other),
        cmocka_unit_test(test_leader_renews_then_loses),
        cmocka_unit_test(test_timing_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
