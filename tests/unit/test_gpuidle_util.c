/*
 * tests/unit/test_gpuidle_util.c: what the GPU-idleness policy reads as a pod's utilisation
 * (controller/gpuidle_util.h): the agent's condition on an NVML node (fresh, stale, Unknown,
 * malformed, from the future), the synthetic annotation only on the simulated fleet (a tenant's
 * annotation on an NVML node is ignored).
 */
/* clang-format off */
#include "base/compat.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "controller/gpuidle_util.h"

#define NOW ((fatia_usec_t)1796000000 * FATIA_USEC_PER_SEC)

static json_t *node(const char *inv)
{
    return json_pack("{s:{s:{s:s}}}", "metadata", "labels", "fatia.dev/inventory", inv);
}

static json_t *pod(const char *ann, const char *status, const char *msg, fatia_usec_t at)
{
    char when[64];
    json_t *p =
        json_pack("{s:{s:{}}, s:{s:[]}}", "metadata", "annotations", "status", "conditions");

    if (ann)
        json_object_set_new(json_object_get(json_object_get(p, "metadata"), "annotations"),
                            "fatia.dev/synthetic-gpu-utilization", json_string(ann));
    if (status) {
        fatia_time_format_rfc3339(at, false, when, sizeof(when));
        json_array_append_new(json_object_get(json_object_get(p, "status"), "conditions"),
                              json_pack("{s:s, s:s, s:s, s:s}", "type", "fatia.dev/GPUUtilization",
                                        "status", status, "message", msg, "lastProbeTime", when));
    }
    return p;
}

static int util(const char *inv, const char *ann, const char *status, const char *msg,
                fatia_usec_t at)
{
    json_t *n = inv ? node(inv) : NULL, *p = pod(ann, status, msg, at);
    int v = fatia_ctlr_gpu_util_of(p, n, NOW);

    json_decref(n);
    json_decref(p);
    return v;
}

static void test_nvml_node(void **state)
{
    (void)state;
    assert_int_equal(util("nvml", NULL, "True", "0% SM utilization (NVML)", NOW), 0);
    assert_int_equal(util("nvml", NULL, "True", "50% SM utilization", NOW - 5 * FATIA_USEC_PER_SEC),
                     50);
    assert_int_equal(util("nvml", NULL, NULL, NULL, 0), -1);          /* not sampled yet */
    assert_int_equal(util("nvml", NULL, "Unknown", "0% x", NOW), -1); /* NVML cannot tell */
    assert_int_equal(util("nvml", NULL, "True", "idle", NOW), -1);    /* no percentage */
    assert_int_equal(util("nvml", NULL, "True", "101% x", NOW), -1);  /* not a percentage */
    assert_int_equal(util("nvml", NULL, "True", "5 % x", NOW), -1);
    assert_int_equal(util("nvml", NULL, "True", "0% x", NOW - 31 * FATIA_USEC_PER_SEC), -1);
    assert_int_equal(util("nvml", NULL, "True", "0% x", NOW + 31 * FATIA_USEC_PER_SEC), -1);
    assert_int_equal(util("nvml", NULL, "True", "0% x", NOW - 29 * FATIA_USEC_PER_SEC), 0);
    /* a tenant's annotation does not count on a real node, either way */
    assert_int_equal(util("nvml", "100", "True", "0% x", NOW), 0);
    assert_int_equal(util("nvml", "100", NULL, NULL, 0), -1);
}

static void test_simulated(void **state)
{
    (void)state;
    assert_int_equal(util("simulated", NULL, NULL, NULL, 0), 0);
    assert_int_equal(util(NULL, NULL, NULL, NULL, 0), 0);
    assert_int_equal(util("simulated", "80", NULL, NULL, 0), 80);
    assert_int_equal(util("simulated", "lots", NULL, NULL, 0), -1);
    /* the condition is the real node's; the simulated fleet reads the annotation */
    assert_int_equal(util("simulated", "70", "True", "0% x", NOW), 70);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nvml_node),
        cmocka_unit_test(test_simulated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
