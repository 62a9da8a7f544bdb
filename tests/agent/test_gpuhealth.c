/*
 * tests/agent/test_gpuhealth.c: the GPU health policy (agent/gpuhealth.h): the device plugin's
 * ignored XIDs, every other XID critical, double-bit ECC critical, single-bit ignored, the
 * ignore/enable options with their errors (a rejected option changes nothing), and recovery.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "agent/gpuhealth.h"

static enum fatia_gpuhealth_verdict judge(const struct fatia_gpuhealth_policy *p, uint64_t type,
                                          uint64_t xid, char *msg)
{
    char reason[64];

    return fatia_gpuhealth_judge(p, type, xid, reason, sizeof(reason), msg, 300);
}

static void test_defaults(void **state)
{
    struct fatia_gpuhealth_policy p;
    char msg[300];
    static const unsigned app[] = {13, 31, 43, 45, 68, 109};

    (void)state;
    fatia_gpuhealth_policy_init(&p);
    for (size_t i = 0; i < sizeof(app) / sizeof(app[0]); i++) {
        assert_int_equal(judge(&p, FATIA_GPUHEALTH_EV_XID, app[i], msg), FATIA_GPUHEALTH_IGNORE);
        assert_non_null(strstr(msg, "application error"));
    }
    assert_int_equal(judge(&p, FATIA_GPUHEALTH_EV_XID, 79, msg), FATIA_GPUHEALTH_UNHEALTHY);
    assert_non_null(strstr(msg, "XID 79 (GPU has fallen off the bus)"));
    assert_int_equal(judge(&p, FATIA_GPUHEALTH_EV_XID, 48, msg), FATIA_GPUHEALTH_UNHEALTHY);
    assert_int_equal(judge(&p, FATIA_GPUHEALTH_EV_XID, 94, msg), FATIA_GPUHEALTH_UNHEALTHY);
    /* unknown XIDs, even past the listable range, are critical */
    assert_int_equal(judge(&p, FATIA_GPUHEALTH_EV_XID, 999, msg), FATIA_GPUHEALTH_UNHEALTHY);
    assert_int_equal(judge(&p, FATIA_GPUHEALTH_EV_XID, 5000, msg), FATIA_GPUHEALTH_UNHEALTHY);
    assert_int_equal(judge(&p, FATIA_GPUHEALTH_EV_DBE, 0, msg), FATIA_GPUHEALTH_UNHEALTHY);
    assert_int_equal(judge(&p, FATIA_GPUHEALTH_EV_SBE, 0, msg), FATIA_GPUHEALTH_IGNORE);
    assert_int_equal(judge(&p, 0x4 /* PState */, 0, msg), FATIA_GPUHEALTH_IGNORE);
}

static void test_options(void **state)
{
    struct fatia_gpuhealth_policy p, before;
    char why[200], msg[300];

    (void)state;
    fatia_gpuhealth_policy_init(&p);
    assert_int_equal(fatia_gpuhealth_policy_disable(&p, "74,79", why, sizeof(why)), 0);
    assert_int_equal(judge(&p, FATIA_GPUHEALTH_EV_XID, 79, msg), FATIA_GPUHEALTH_IGNORE);
    assert_int_equal(judge(&p, FATIA_GPUHEALTH_EV_XID, 48, msg), FATIA_GPUHEALTH_UNHEALTHY);
    /* enable lists XIDs to act on again, the defaults included */
    assert_int_equal(fatia_gpuhealth_policy_enable(&p, "79,31", why, sizeof(why)), 0);
    assert_int_equal(judge(&p, FATIA_GPUHEALTH_EV_XID, 79, msg), FATIA_GPUHEALTH_UNHEALTHY);
    assert_int_equal(judge(&p, FATIA_GPUHEALTH_EV_XID, 31, msg), FATIA_GPUHEALTH_UNHEALTHY);
    assert_int_equal(judge(&p, FATIA_GPUHEALTH_EV_XID, 74, msg), FATIA_GPUHEALTH_IGNORE);
    /* bad items are refused with the option and the item, and change nothing */
    before = p;
    assert_int_equal(fatia_gpuhealth_policy_disable(&p, "48,x", why, sizeof(why)), -EINVAL);
    assert_non_null(strstr(why, "gpu-health-ignore-xids: 'x' is not an XID"));
    assert_memory_equal(&p, &before, sizeof(p));
    assert_int_equal(fatia_gpuhealth_policy_disable(&p, "48,,49", why, sizeof(why)), -EINVAL);
    assert_int_equal(fatia_gpuhealth_policy_disable(&p, "-1", why, sizeof(why)), -EINVAL);
    assert_int_equal(fatia_gpuhealth_policy_disable(&p, "0", why, sizeof(why)), -EINVAL);
    assert_int_equal(fatia_gpuhealth_policy_enable(&p, "2000", why, sizeof(why)), -EINVAL);
    assert_non_null(strstr(why, "gpu-health-enable-xids: '2000'"));
    assert_memory_equal(&p, &before, sizeof(p));
    /* xids: XIDs off, ECC still acts; all: everything off */
    assert_int_equal(fatia_gpuhealth_policy_disable(&p, "xids", why, sizeof(why)), 0);
    assert_int_equal(judge(&p, FATIA_GPUHEALTH_EV_XID, 79, msg), FATIA_GPUHEALTH_IGNORE);
    assert_int_equal(judge(&p, FATIA_GPUHEALTH_EV_DBE, 0, msg), FATIA_GPUHEALTH_UNHEALTHY);
    assert_int_equal(fatia_gpuhealth_policy_disable(&p, "all", why, sizeof(why)), 0);
    assert_int_equal(judge(&p, FATIA_GPUHEALTH_EV_DBE, 0, msg), FATIA_GPUHEALTH_IGNORE);
    assert_non_null(strstr(msg, "health checks are off"));
}

static void test_recover(void **state)
{
    const int64_t s = 1000000;

    (void)state;
    assert_false(fatia_gpuhealth_may_recover(0, 299 * s, 300 * s, true));
    assert_true(fatia_gpuhealth_may_recover(0, 300 * s, 300 * s, true));
    assert_false(fatia_gpuhealth_may_recover(0, 900 * s, 300 * s, false)); /* NVML refuses it */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_recover),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
