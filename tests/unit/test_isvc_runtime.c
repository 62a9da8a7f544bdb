/*
 * tests/unit/test_isvc_runtime.c: controller/isvc_runtime.c, a ServingRuntime's container as
 * KServe builds it: predictor.model merged over spec.containers[0] (args concatenated, env by
 * name, ports by containerPort, resources key by key, scalars replaced, model fields left out),
 * the metadata placeholders expanded, the port; a runtime without an image is the built-in
 * server; an unknown or unterminated placeholder is refused naming the field.
 */
#include "base/compat.h"

/* cmocka.h needs these before it; keep clang-format from sorting it first. */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "base/error.h"
#include "controller/isvc_runtime.h"

static json_t *load(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    if (!j)
        fail_msg("bad fixture: %s", e.text);
    return j;
}

static const char ISVC[] =
    "{\"metadata\":{\"name\":\"llama\",\"namespace\":\"team-a\",\"labels\":{\"tier\":\"gold\"},"
    "\"annotations\":{\"x.io/max\":\"77\"}},\"spec\":{\"predictor\":{\"model\":{"
    "\"modelFormat\":{\"name\":\"vLLM\"},\"runtime\":\"rt\",\"storageUri\":\"hf://a/b\","
    "\"image\":\"mine:2\",\"args\":[\"--x\",\"{{.Namespace}}\"],"
    "\"env\":[{\"name\":\"A\",\"value\":\"over\"},{\"name\":\"C\",\"value\":\"{{.Labels.tier}}\"}],"
    "\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}}}}";

static void test_merge(void **state)
{
    (void)state;
    json_t *rt = load(
        "{\"metadata\":{\"name\":\"rt\"},\"spec\":{\"containers\":[{\"name\":\"kserve-container\","
        "\"image\":\"vllm:1\",\"command\":[\"serve\"],\"args\":[\"--name\",\"{{.Name}}\","
        "\"--max={{index .Annotations \\\"x.io/max\\\"}}\",\"--none={{.Labels.missing}}\"],"
        "\"env\":[{\"name\":\"A\",\"value\":\"base\"},{\"name\":\"B\",\"value\":\"b\"}],"
        "\"ports\":[{\"containerPort\":9000}],\"resources\":{\"limits\":{\"cpu\":\"2\"}}}]}}");
    json_t *isvc = load(ISVC), *ctr = NULL;
    char err[512] = "";
    int port = 0;

    assert_int_equal(fatia_ctlr_isvc_runtime_container(rt, isvc, err, sizeof(err), &ctr, &port), 0);
    assert_non_null(ctr);
    assert_int_equal(port, 9000);
    json_t *want =
        load("{\"name\":\"kserve-container\",\"image\":\"mine:2\",\"command\":[\"serve\"],"
             "\"args\":[\"--name\",\"llama\",\"--max=77\",\"--none=\",\"--x\",\"team-a\"],"
             "\"env\":[{\"name\":\"A\",\"value\":\"over\"},{\"name\":\"B\",\"value\":\"b\"},"
             "{\"name\":\"C\",\"value\":\"gold\"}],\"ports\":[{\"containerPort\":9000}],"
             "\"resources\":{\"limits\":{\"cpu\":\"2\",\"nvidia.com/gpu\":1}}}");
    if (!json_equal(ctr, want)) {
        char *got = json_dumps(ctr, JSON_SORT_KEYS);
        fail_msg("merged container: %s", got);
    }
    json_decref(want);
    json_decref(ctr);
    json_decref(rt);
    json_decref(isvc);
}

static void test_no_image(void **state)
{
    (void)state;
    json_t *rt =
        load("{\"metadata\":{\"name\":\"rt\"},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}");
    json_t *isvc = load(ISVC), *ctr = (json_t *)1;
    char err[64];
    int port = 0;

    assert_int_equal(fatia_ctlr_isvc_runtime_container(rt, isvc, err, sizeof(err), &ctr, &port), 0);
    assert_null(ctr);
    assert_int_equal(port, FATIA_CTLR_RUNTIME_PORT);
    json_decref(rt);
    json_decref(isvc);
}

static void expect_bad(const char *arg, const char *field)
{
    char text[512], err[512] = "";
    json_t *rt,
        *isvc = load("{\"metadata\":{\"name\":\"n\"},\"spec\":{\"predictor\":{\"model\":{}}}}"),
        *ctr = NULL;
    int port = 0;

    snprintf(text, sizeof(text),
             "{\"metadata\":{\"name\":\"rt\"},\"spec\":{\"containers\":[{\"image\":\"i\","
             "\"args\":[\"ok\",\"%s\"]}]}}",
             arg);
    rt = load(text);
    assert_int_equal(fatia_ctlr_isvc_runtime_container(rt, isvc, err, sizeof(err), &ctr, &port),
                     -EINVAL);
    assert_null(ctr);
    if (!strstr(err, field) || !strstr(err, "runtime rt"))
        fail_msg("%s: message %s", arg, err);
    json_decref(rt);
    json_decref(isvc);
}

static void test_bad_templates(void **state)
{
    (void)state;
    expect_bad("{{.Spec}}", "spec.containers[0].args[1]");
    expect_bad("--a={{.Name", "spec.containers[0].args[1]");
    expect_bad("{{.Name | printf \\\"%s\\\"}}", "spec.containers[0].args[1]");
    expect_bad("{{index .Labels tier}}", "spec.containers[0].args[1]");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_no_image),
        cmocka_unit_test(test_bad_templates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
