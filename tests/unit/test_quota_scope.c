/*
 * tests/unit/test_quota_scope.c: which pods a scoped ResourceQuota tracks (controller/
 * quota_scope.c), by the rules of kubernetes pkg/quota/v1/evaluator/core/pods.go
 * (podMatchesScopeFunc; the cases are written here, not transcribed): BestEffort (no cpu or
 * memory request or limit in any container, init containers included), NotBestEffort,
 * Terminating (activeDeadlineSeconds), NotTerminating, PriorityClass with In, NotIn, Exists and
 * DoesNotExist, several scopes ANDed; an unscoped quota tracks everything, a non-pod object is
 * outside every scoped quota, unknown scopes match nothing.
 */
#include "base/compat.h"

/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "base/json.h"
#include "controller/controller.h"

static json_t *quota(const char *spec_json)
{
    json_error_t e;
    json_t *spec = json_loads(spec_json, 0, &e);

    assert_non_null(spec);
    return json_pack("{s:s,s:s,s:{s:s},s:o}", "apiVersion", "v1", "kind", "ResourceQuota",
                     "metadata", "name", "q", "spec", spec);
}

static json_t *pod(const char *spec_json)
{
    json_error_t e;
    json_t *spec = json_loads(spec_json, 0, &e);

    assert_non_null(spec);
    return json_pack("{s:s,s:s,s:o}", "apiVersion", "v1", "kind", "Pod", "spec", spec);
}

static bool tracks(const char *q, const char *p)
{
    json_t *qq = quota(q), *pp = pod(p);
    bool r = fatia_controller_quota_tracks(qq, true, pp);

    json_decref(qq);
    json_decref(pp);
    return r;
}

#define BE  "{\"containers\":[{\"name\":\"c\"}]}"
#define NBE "{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}"
#define NBE_INIT                                                                            \
    "{\"containers\":[{\"name\":\"c\"}],\"initContainers\":[{\"name\":\"i\",\"resources\":" \
    "{\"limits\":{\"memory\":\"1Gi\"}}}]}"
#define GPU_ONLY                                                                      \
    "{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":" \
    "\"1\"}}}]}"
#define TERM "{\"activeDeadlineSeconds\":60,\"containers\":[{\"name\":\"c\"}]}"
#define HIGH "{\"priorityClassName\":\"high\",\"containers\":[{\"name\":\"c\"}]}"

static void test_unscoped(void **state)
{
    json_t *q = quota("{\"hard\":{\"pods\":\"1\"}}"), *cm = json_pack("{s:s}", "kind", "ConfigMap");

    (void)state;
    assert_false(fatia_controller_quota_scoped(q));
    assert_true(fatia_controller_quota_tracks(q, false, cm));
    assert_true(tracks("{\"hard\":{\"pods\":\"1\"}}", BE));
    json_decref(q);
    json_decref(cm);
}

static void test_best_effort(void **state)
{
    (void)state;
    assert_true(tracks("{\"scopes\":[\"BestEffort\"]}", BE));
    assert_false(tracks("{\"scopes\":[\"BestEffort\"]}", NBE));
    assert_false(tracks("{\"scopes\":[\"BestEffort\"]}", NBE_INIT));
    /* an extended resource alone does not make a pod Burstable (qos: cpu and memory only) */
    assert_true(tracks("{\"scopes\":[\"BestEffort\"]}", GPU_ONLY));
    assert_true(tracks("{\"scopes\":[\"NotBestEffort\"]}", NBE));
    assert_false(tracks("{\"scopes\":[\"NotBestEffort\"]}", BE));
}

static void test_terminating(void **state)
{
    (void)state;
    assert_true(tracks("{\"scopes\":[\"Terminating\"]}", TERM));
    assert_false(tracks("{\"scopes\":[\"Terminating\"]}", BE));
    assert_true(tracks("{\"scopes\":[\"NotTerminating\"]}", BE));
    assert_false(tracks("{\"scopes\":[\"NotTerminating\"]}", TERM));
    /* ANDed */
    assert_true(tracks("{\"scopes\":[\"Terminating\",\"BestEffort\"]}", TERM));
    assert_false(tracks("{\"scopes\":[\"Terminating\",\"NotBestEffort\"]}", TERM));
}

static void test_priority_class(void **state)
{
    (void)state;
    assert_true(tracks("{\"scopes\":[\"PriorityClass\"]}", HIGH));
    assert_false(tracks("{\"scopes\":[\"PriorityClass\"]}", BE));
#define SEL(op, vals)                                                                          \
    "{\"scopeSelector\":{\"matchExpressions\":[{\"scopeName\":\"PriorityClass\",\"operator\":" \
    "\"" op "\"" vals "}]}}"
    assert_true(tracks(SEL("In", ",\"values\":[\"low\",\"high\"]"), HIGH));
    assert_false(tracks(SEL("In", ",\"values\":[\"low\"]"), HIGH));
    assert_false(tracks(SEL("In", ",\"values\":[\"high\"]"), BE));
    assert_true(tracks(SEL("NotIn", ",\"values\":[\"low\"]"), HIGH));
    assert_false(tracks(SEL("NotIn", ",\"values\":[\"high\"]"), HIGH));
    assert_true(tracks(SEL("NotIn", ",\"values\":[\"high\"]"), BE));
    assert_true(tracks(SEL("Exists", ""), HIGH));
    assert_false(tracks(SEL("Exists", ""), BE));
    assert_true(tracks(SEL("DoesNotExist", ""), BE));
    assert_false(tracks(SEL("DoesNotExist", ""), HIGH));
    /* scopes and the selector together: both must match */
    assert_false(tracks("{\"scopes\":[\"Terminating\"],\"scopeSelector\":{\"matchExpressions\":"
                        "[{\"scopeName\":\"PriorityClass\",\"operator\":\"Exists\"}]}}",
                        HIGH));
}

static void test_outside(void **state)
{
    json_t *q = quota("{\"scopes\":[\"BestEffort\"]}"),
           *cm = json_pack("{s:s}", "kind", "ConfigMap");

    (void)state;
    assert_true(fatia_controller_quota_scoped(q));
    assert_false(fatia_controller_quota_tracks(q, false, cm));
    assert_false(tracks("{\"scopes\":[\"CrossNamespacePodAffinity\"]}", BE));
    assert_false(tracks("{\"scopes\":[\"NoSuchScope\"]}", BE));
    json_decref(q);
    json_decref(cm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unscoped),    cmocka_unit_test(test_best_effort),
        cmocka_unit_test(test_terminating), cmocka_unit_test(test_priority_class),
        cmocka_unit_test(test_outside),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
