/*
 * tests/unit/test_notebook.c: the pure parts of the workbench controllers: the pod a Notebook
 * runs as (what a tenant's template may not carry through a trusted writer), Kubeflow's status,
 * and the culler's decision against Jupyter's answers (controller/notebook.h).
 */
#include "base/compat.h"

/* cmocka.h needs these before it; keep clang-format from sorting it first. */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <jansson.h>

#include "base/clock.h"
#include "base/json.h"
#include "controller/notebook.h"

static json_t *load(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);

    if (!j)
        fail_msg("bad fixture: %s", e.text);
    return j;
}

static const char *NB =
    "{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"Notebook\","
    "\"metadata\":{\"name\":\"lab\",\"namespace\":\"team-b\",\"uid\":\"u-1\","
    "\"labels\":{\"kueue.x-k8s.io/queue-name\":\"gpu\",\"kueue.x-k8s.io/priority-class\":\"hi\","
    "\"other\":\"x\"}},"
    "\"spec\":{\"template\":{\"metadata\":{\"labels\":{\"app\":\"lab\","
    "\"kueue.x-k8s.io/managed\":\"true\",\"kueue.x-k8s.io/queue-name\":\"nowhere\"},"
    "\"annotations\":{\"fatia.dev/slices\":\"gpu-2\",\"fatia.dev/notebook-home\":\"other\","
    "\"opendatahub.io/hardware-profile-name\":\"p\",\"keep\":\"me\"}},"
    "\"spec\":{\"nodeName\":\"box-9\",\"containers\":[{\"name\":\"lab\",\"image\":\"i\"}]}}}}";

static void test_pod(void **state)
{
    json_t *nb = load(NB), *pod;
    const json_t *meta, *labels, *anns, *env;

    (void)state;
    pod = fatia_ctlr_notebook_pod(nb);
    assert_non_null(pod);
    meta = json_object_get(pod, "metadata");
    labels = json_object_get(meta, "labels");
    anns = json_object_get(meta, "annotations");
    assert_string_equal(fatia_json_str(meta, "name"), "lab-0");
    assert_string_equal(fatia_json_str(meta, "namespace"), "team-b");
    /* the Notebook's queue and priority, never the template's */
    assert_string_equal(fatia_json_str(labels, "kueue.x-k8s.io/queue-name"), "gpu");
    assert_string_equal(fatia_json_str(labels, "kueue.x-k8s.io/priority-class"), "hi");
    assert_null(json_object_get(labels, "kueue.x-k8s.io/managed"));
    assert_null(json_object_get(labels, "other")); /* the Notebook's own labels stay on it */
    assert_string_equal(fatia_json_str(labels, "app"), "lab");
    assert_string_equal(fatia_json_str(labels, "notebook-name"), "lab");
    assert_string_equal(fatia_json_str(labels, "statefulset"), "lab");
    assert_null(json_object_get(anns, "fatia.dev/slices"));
    assert_null(json_object_get(anns, "opendatahub.io/hardware-profile-name"));
    assert_string_equal(fatia_json_str(anns, "fatia.dev/notebook-home"), "lab");
    assert_string_equal(fatia_json_str(anns, "keep"), "me");
    assert_null(fatia_json_path(pod, "spec.nodeName"));
    assert_string_equal(
        fatia_json_str(json_array_get(fatia_json_path(pod, "metadata.ownerReferences"), 0), "uid"),
        "u-1");
    env = fatia_json_path(json_array_get(fatia_json_path(pod, "spec.containers"), 0), "env");
    assert_string_equal(fatia_json_str(json_array_get(env, 0), "name"), "NB_PREFIX");
    assert_string_equal(fatia_json_str(json_array_get(env, 0), "value"), "/notebook/team-b/lab");
    /* the template is not changed */
    assert_non_null(fatia_json_path(nb, "spec.template.spec.nodeName"));
    assert_null(fatia_json_path(
        json_array_get(fatia_json_path(nb, "spec.template.spec.containers"), 0), "env"));
    json_decref(pod);
    json_decref(nb);
}

static void test_status(void **state)
{
    json_t *nb = load(NB), *st;
    json_t *pod = load("{\"metadata\":{\"name\":\"lab-0\"},\"status\":{\"phase\":\"Running\","
                       "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],"
                       "\"containerStatuses\":[{\"name\":\"side\",\"state\":{\"waiting\":{}}},"
                       "{\"name\":\"lab\",\"state\":{\"running\":{\"startedAt\":\"t\"}}}]}}");

    (void)state;
    st = fatia_ctlr_notebook_status(nb, pod);
    assert_int_equal(json_integer_value(json_object_get(st, "readyReplicas")), 1);
    assert_string_equal(fatia_json_str(fatia_json_path(st, "containerState.running"), "startedAt"),
                        "t");
    assert_int_equal(json_array_size(json_object_get(st, "conditions")), 1);
    json_decref(st);
    /* a pod being deleted is not ready */
    json_object_set_new(json_object_get(pod, "metadata"), "deletionTimestamp", json_string("x"));
    st = fatia_ctlr_notebook_status(nb, pod);
    assert_int_equal(json_integer_value(json_object_get(st, "readyReplicas")), 0);
    json_decref(st);
    st = fatia_ctlr_notebook_status(nb, NULL);
    assert_int_equal(json_integer_value(json_object_get(st, "readyReplicas")), 0);
    assert_int_equal(json_object_size(json_object_get(st, "containerState")), 0);
    json_decref(st);
    assert_false(fatia_ctlr_notebook_stopped(nb));
    json_object_set_new(fatia_json_object_ensure(json_object_get(nb, "metadata"), "annotations"),
                        "kubeflow-resource-stopped", json_string("2026-01-01T00:00:00Z"));
    assert_true(fatia_ctlr_notebook_stopped(nb));
    json_decref(pod);
    json_decref(nb);
}

static void test_cull(void **state)
{
    fatia_usec_t now, last, idle = 600 * FATIA_USEC_PER_SEC;
    json_t *status = load("{\"last_activity\":\"2026-12-01T10:00:00.5Z\"}");
    json_t *idle_k =
        load("[{\"execution_state\":\"idle\",\"last_activity\":\"2026-12-01T10:05:00Z\"}]");
    json_t *busy_k =
        load("[{\"execution_state\":\"idle\",\"last_activity\":\"2026-12-01T09:00:00Z\"},"
             "{\"execution_state\":\"busy\",\"last_activity\":\"2026-12-01T09:00:00Z\"}]");
    json_t *none = json_array(), *junk = load("{\"nothing\":1}");

    (void)state;
    assert_int_equal(fatia_time_parse_rfc3339("2026-12-01T10:15:00Z", &now), 0);
    /* last activity = the newest of the server's and the kernels': 10:05, 10 min before now */
    assert_true(fatia_ctlr_cull_decide(status, idle_k, now, idle, &last));
    assert_int_equal(now - last, 600 * FATIA_USEC_PER_SEC);
    /* one second less idle: kept */
    assert_false(fatia_ctlr_cull_decide(status, idle_k, now - FATIA_USEC_PER_SEC, idle, &last));
    /* a busy kernel is activity now, however old its last message */
    assert_false(fatia_ctlr_cull_decide(status, busy_k, now, idle, &last));
    assert_int_equal(last, now);
    /* no kernels: the server's last activity (10:00:00.5, 14 min 59.5 s ago) */
    assert_true(fatia_ctlr_cull_decide(status, none, now, idle, &last));
    assert_int_equal(now - last, 899500000);
    /* nothing readable: never culled */
    assert_false(fatia_ctlr_cull_decide(junk, none, now, idle, &last));
    assert_int_equal(last, 0);
    assert_false(fatia_ctlr_cull_decide(NULL, NULL, now, idle, &last));
    json_decref(status);
    json_decref(idle_k);
    json_decref(busy_k);
    json_decref(none);
    json_decref(junk);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pod),
        cmocka_unit_test(test_status),
        cmocka_unit_test(test_cull),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
