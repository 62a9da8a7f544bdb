/*
 * tests/agent/test_probe.c: the probe policy (agent/probe.h), after kubelet's
 * pkg/kubelet/prober/worker_test.go (TestInitialDelay, TestFailureThreshold,
 * TestSuccessThreshold, TestOnHoldOnLivenessOrStartupCheckFailure, TestStartupProbeSuccess,
 * TestLivenessProbeDisabledByStarted, TestResultRunOnLivenessCheckFailure), and the translation
 * of a Pod's probe fields with its validation (field paths, defaults, named ports).
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <jansson.h>
#include <stdbool.h>
#include <string.h>

#include "agent/probe.h"
#include "base/error.h"

#define S FATIA_USEC_PER_SEC

static const struct fatia_agent_probe_cfg deflt = {.initial_delay_s = 0,
                                                   .period_s = 10,
                                                   .timeout_s = 1,
                                                   .success_threshold = 1,
                                                   .failure_threshold = 3};

static void one(struct fatia_agent_probes *ps, enum fatia_agent_probe_kind k,
                const struct fatia_agent_probe_cfg *cfg)
{
    memset(ps, 0, sizeof(*ps));
    for (int i = 0; i < FATIA_PROBE_KINDS; i++)
        fatia_agent_probes_set(ps, (enum fatia_agent_probe_kind)i, i == (int)k ? cfg : NULL);
}

/* No probe: running is started and ready; nothing is ever due. */
static void test_none(void **state)
{
    struct fatia_agent_probes ps = {0};
    (void)state;

    for (int i = 0; i < FATIA_PROBE_KINDS; i++)
        fatia_agent_probes_set(&ps, (enum fatia_agent_probe_kind)i, NULL);
    assert_false(fatia_agent_probes_ready(&ps));
    fatia_agent_probes_start(&ps, 100 * S);
    assert_true(fatia_agent_probes_started(&ps));
    assert_true(fatia_agent_probes_ready(&ps));
    assert_int_equal(fatia_agent_probes_next(&ps), INT64_MAX);
    assert_int_equal(fatia_agent_probes_failed(&ps), FATIA_PROBE_KINDS);
    fatia_agent_probes_stop(&ps);
    assert_false(fatia_agent_probes_ready(&ps));
    assert_false(fatia_agent_probes_started(&ps));
}

/* TestInitialDelay: before initialDelaySeconds readiness is Failure, liveness Success, and no
 * probe runs; at it, they run. */
static void test_initial_delay(void **state)
{
    struct fatia_agent_probe_cfg cfg = deflt;
    struct fatia_agent_probes ps;
    (void)state;

    cfg.initial_delay_s = 10;
    one(&ps, FATIA_PROBE_READINESS, &cfg);
    fatia_agent_probes_start(&ps, 1000 * S);
    assert_false(fatia_agent_probes_due(&ps, FATIA_PROBE_READINESS, 1009 * S));
    assert_false(fatia_agent_probes_ready(&ps));
    assert_true(fatia_agent_probes_started(&ps)); /* no startup probe */
    assert_int_equal(fatia_agent_probes_next(&ps), 1010 * S);
    assert_true(fatia_agent_probes_due(&ps, FATIA_PROBE_READINESS, 1010 * S));
    fatia_agent_probes_ran(&ps, FATIA_PROBE_READINESS, 1010 * S);
    assert_false(fatia_agent_probes_due(&ps, FATIA_PROBE_READINESS, 1015 * S));
    assert_int_equal(fatia_agent_probes_next(&ps), 1020 * S);
    assert_true(fatia_agent_probes_result(&ps, FATIA_PROBE_READINESS, true));
    assert_true(fatia_agent_probes_ready(&ps));

    one(&ps, FATIA_PROBE_LIVENESS, &cfg);
    fatia_agent_probes_start(&ps, 0);
    assert_true(fatia_agent_probes_ready(&ps)); /* liveness starts as Success */
    assert_int_equal(fatia_agent_probes_failed(&ps), FATIA_PROBE_KINDS);
}

/* TestFailureThreshold: failureThreshold - 1 failures leave the result; the next changes it;
 * one success in between starts the count again. */
static void test_failure_threshold(void **state)
{
    struct fatia_agent_probe_cfg cfg = deflt;
    struct fatia_agent_probes ps;
    (void)state;

    one(&ps, FATIA_PROBE_READINESS, &cfg);
    fatia_agent_probes_start(&ps, 0);
    assert_true(fatia_agent_probes_result(&ps, FATIA_PROBE_READINESS, true));
    assert_true(fatia_agent_probes_ready(&ps));
    for (int round = 0; round < 2; round++) {
        assert_false(fatia_agent_probes_result(&ps, FATIA_PROBE_READINESS, false));
        assert_false(fatia_agent_probes_result(&ps, FATIA_PROBE_READINESS, false));
        assert_true(fatia_agent_probes_ready(&ps));
        if (round == 0) /* a success resets the run */
            assert_false(fatia_agent_probes_result(&ps, FATIA_PROBE_READINESS, true));
    }
    assert_true(fatia_agent_probes_result(&ps, FATIA_PROBE_READINESS, false));
    assert_false(fatia_agent_probes_ready(&ps));
    /* readiness failing kills nothing */
    assert_int_equal(fatia_agent_probes_failed(&ps), FATIA_PROBE_KINDS);
}

/* TestSuccessThreshold: successThreshold successes in a row make a readiness probe Success. */
static void test_success_threshold(void **state)
{
    struct fatia_agent_probe_cfg cfg = deflt;
    struct fatia_agent_probes ps;
    (void)state;

    cfg.success_threshold = 3;
    cfg.failure_threshold = 1;
    one(&ps, FATIA_PROBE_READINESS, &cfg);
    fatia_agent_probes_start(&ps, 0);
    assert_false(fatia_agent_probes_result(&ps, FATIA_PROBE_READINESS, true));
    assert_false(fatia_agent_probes_result(&ps, FATIA_PROBE_READINESS, true));
    assert_false(fatia_agent_probes_ready(&ps));
    assert_true(fatia_agent_probes_result(&ps, FATIA_PROBE_READINESS, true));
    assert_true(fatia_agent_probes_ready(&ps));
    /* one failure (failureThreshold 1) makes it unready, and three successes ready again */
    assert_true(fatia_agent_probes_result(&ps, FATIA_PROBE_READINESS, false));
    assert_false(fatia_agent_probes_ready(&ps));
    assert_false(fatia_agent_probes_result(&ps, FATIA_PROBE_READINESS, true));
    assert_false(fatia_agent_probes_result(&ps, FATIA_PROBE_READINESS, true));
    assert_true(fatia_agent_probes_result(&ps, FATIA_PROBE_READINESS, true));
}

/* TestOnHoldOnLivenessOrStartupCheckFailure, TestResultRunOnLivenessCheckFailure: a liveness
 * Failure asks for the kill; held, nothing runs and late answers are ignored until the next
 * instance, which starts with liveness Success and a fresh run count. */
static void test_liveness_hold(void **state)
{
    struct fatia_agent_probe_cfg cfg = deflt;
    struct fatia_agent_probes ps;
    (void)state;

    cfg.period_s = 1;
    one(&ps, FATIA_PROBE_LIVENESS, &cfg);
    fatia_agent_probes_start(&ps, 0);
    assert_false(fatia_agent_probes_result(&ps, FATIA_PROBE_LIVENESS, false));
    assert_false(fatia_agent_probes_result(&ps, FATIA_PROBE_LIVENESS, false));
    assert_int_equal(fatia_agent_probes_failed(&ps), FATIA_PROBE_KINDS);
    assert_true(fatia_agent_probes_result(&ps, FATIA_PROBE_LIVENESS, false));
    assert_int_equal(fatia_agent_probes_failed(&ps), FATIA_PROBE_LIVENESS);
    fatia_agent_probes_hold(&ps, FATIA_PROBE_LIVENESS);
    assert_int_equal(fatia_agent_probes_failed(&ps), FATIA_PROBE_KINDS);
    assert_false(fatia_agent_probes_due(&ps, FATIA_PROBE_LIVENESS, 100 * S));
    assert_int_equal(fatia_agent_probes_next(&ps), INT64_MAX);
    assert_false(fatia_agent_probes_result(&ps, FATIA_PROBE_LIVENESS, true));
    fatia_agent_probes_stop(&ps);
    fatia_agent_probes_start(&ps, 200 * S);
    assert_true(fatia_agent_probes_due(&ps, FATIA_PROBE_LIVENESS, 200 * S));
    assert_int_equal(fatia_agent_probes_failed(&ps), FATIA_PROBE_KINDS);
    /* the new instance needs failureThreshold failures of its own */
    assert_false(fatia_agent_probes_result(&ps, FATIA_PROBE_LIVENESS, false));
    assert_int_equal(fatia_agent_probes_failed(&ps), FATIA_PROBE_KINDS);
}

/* TestStartupProbeSuccess, TestLivenessProbeDisabledByStarted: until the startup probe
 * succeeds the container is not started, readiness and liveness are not run (a failing liveness
 * can not kill it); after, startup is not run again and the others are. */
static void test_startup(void **state)
{
    struct fatia_agent_probe_cfg cfg = deflt;
    struct fatia_agent_probes ps;
    (void)state;

    cfg.period_s = 1;
    memset(&ps, 0, sizeof(ps));
    fatia_agent_probes_set(&ps, FATIA_PROBE_STARTUP, &cfg);
    fatia_agent_probes_set(&ps, FATIA_PROBE_LIVENESS, &cfg);
    fatia_agent_probes_set(&ps, FATIA_PROBE_READINESS, &cfg);
    fatia_agent_probes_start(&ps, 0);
    assert_false(fatia_agent_probes_started(&ps));
    assert_false(fatia_agent_probes_ready(&ps));
    assert_true(fatia_agent_probes_due(&ps, FATIA_PROBE_STARTUP, 0));
    assert_false(fatia_agent_probes_due(&ps, FATIA_PROBE_LIVENESS, 5 * S));
    assert_false(fatia_agent_probes_due(&ps, FATIA_PROBE_READINESS, 5 * S));
    fatia_agent_probes_ran(&ps, FATIA_PROBE_STARTUP, 0);
    assert_int_equal(fatia_agent_probes_next(&ps), 1 * S);
    assert_true(fatia_agent_probes_result(&ps, FATIA_PROBE_STARTUP, true));
    assert_true(fatia_agent_probes_started(&ps));
    assert_false(fatia_agent_probes_ready(&ps)); /* readiness not yet Success */
    assert_false(fatia_agent_probes_due(&ps, FATIA_PROBE_STARTUP, 10 * S));
    assert_true(fatia_agent_probes_due(&ps, FATIA_PROBE_LIVENESS, 1 * S));
    assert_true(fatia_agent_probes_due(&ps, FATIA_PROBE_READINESS, 1 * S));
    assert_true(fatia_agent_probes_result(&ps, FATIA_PROBE_READINESS, true));
    assert_true(fatia_agent_probes_ready(&ps));

    /* a startup probe that fails failureThreshold times asks for the kill */
    one(&ps, FATIA_PROBE_STARTUP, &cfg);
    fatia_agent_probes_start(&ps, 0);
    assert_false(fatia_agent_probes_result(&ps, FATIA_PROBE_STARTUP, false));
    assert_false(fatia_agent_probes_result(&ps, FATIA_PROBE_STARTUP, false));
    assert_true(fatia_agent_probes_result(&ps, FATIA_PROBE_STARTUP, false));
    assert_int_equal(fatia_agent_probes_failed(&ps), FATIA_PROBE_STARTUP);
    assert_false(fatia_agent_probes_started(&ps));
}

static json_t *ctr(const char *text)
{
    json_error_t je;
    json_t *c = json_loads(text, 0, &je);

    assert_non_null(c);
    return c;
}

static void test_spec(void **state)
{
    struct fatia_agent_probe_cfg cfg;
    char why[512];
    json_t *c, *out;
    (void)state;

    c = ctr("{\"name\":\"web\",\"ports\":[{\"name\":\"http\",\"containerPort\":8080}],"
            "\"readinessProbe\":{\"httpGet\":{\"port\":\"http\",\"path\":\"/healthz\","
            "\"httpHeaders\":[{\"name\":\"X-A\",\"value\":\"b\"}]},\"periodSeconds\":2},"
            "\"livenessProbe\":{\"tcpSocket\":{\"port\":8080},\"terminationGracePeriodSeconds\":7},"
            "\"startupProbe\":{\"exec\":{\"command\":[\"cat\",\"/tmp/ok\"]},"
            "\"failureThreshold\":30}}");
    assert_int_equal(fatia_agent_probe_spec(c, 0, &out, why, sizeof(why)), 0);
    assert_non_null(out);
    {
        json_t *r = json_object_get(out, "readiness");
        assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "httpGet"), "port")),
                         8080);
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(r, "httpGet"), "path")), "/healthz");
        assert_true(fatia_agent_probe_cfg_parse(r, &cfg));
        assert_int_equal(cfg.period_s, 2);
        assert_int_equal(cfg.timeout_s, 1);
        assert_int_equal(cfg.failure_threshold, 3);
        assert_int_equal(cfg.success_threshold, 1);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(out, "liveness"),
                                                            "terminationGracePeriodSeconds")),
                         7);
        assert_true(fatia_agent_probe_cfg_parse(json_object_get(out, "startup"), &cfg));
        assert_int_equal(cfg.failure_threshold, 30);
        assert_int_equal(cfg.period_s, 10);
    }
    json_decref(out);
    json_decref(c);

    c = ctr("{\"name\":\"web\"}");
    assert_int_equal(fatia_agent_probe_spec(c, 0, &out, why, sizeof(why)), 0);
    assert_null(out);
    json_decref(c);

    static const struct {
        const char *ctr, *why;
    } bad[] = {
        {"{\"readinessProbe\":{\"httpGet\":{\"port\":\"nope\"}}}",
         "spec.containers[1].readinessProbe.httpGet.port: Invalid value: \"nope\""},
        {"{\"livenessProbe\":{\"tcpSocket\":{\"port\":70000}}}",
         "spec.containers[1].livenessProbe.tcpSocket.port: Invalid value: 70000"},
        {"{\"livenessProbe\":{\"tcpSocket\":{\"port\":80},\"successThreshold\":2}}",
         "spec.containers[1].livenessProbe.successThreshold: Invalid value: 2: must be 1"},
        {"{\"readinessProbe\":{\"periodSeconds\":1}}",
         "spec.containers[1].readinessProbe: Required value: must specify a handler type"},
        {"{\"readinessProbe\":{\"exec\":{\"command\":[\"x\"]},\"tcpSocket\":{\"port\":1}}}",
         "spec.containers[1].readinessProbe: Forbidden: may not specify more than 1 handler"},
        {"{\"startupProbe\":{\"exec\":{\"command\":[]}}}",
         "spec.containers[1].startupProbe.exec.command: Required value"},
        {"{\"readinessProbe\":{\"exec\":{\"command\":[\"x\"]},\"timeoutSeconds\":-1}}",
         "spec.containers[1].readinessProbe.timeoutSeconds: Invalid value: -1"},
        {"{\"readinessProbe\":{\"exec\":{\"command\":[\"x\"]},"
         "\"terminationGracePeriodSeconds\":5}}",
         "spec.containers[1].readinessProbe.terminationGracePeriodSeconds: Invalid value: must "
         "not be set for readinessProbes"},
        {"{\"livenessProbe\":{\"exec\":{\"command\":[\"x\"]},"
         "\"terminationGracePeriodSeconds\":0}}",
         "spec.containers[1].livenessProbe.terminationGracePeriodSeconds: Invalid value"},
        {"{\"readinessProbe\":{\"grpc\":{\"port\":9000}}}",
         "spec.containers[1].readinessProbe.grpc: Unsupported value"},
        {"{\"readinessProbe\":{\"httpGet\":{\"port\":80,\"scheme\":\"HTTPS\"}}}",
         "spec.containers[1].readinessProbe.httpGet.scheme: Unsupported value: \"HTTPS\""},
        {"{\"readinessProbe\":{\"httpGet\":{\"port\":80,\"httpHeaders\":[{\"name\":\"A\","
         "\"value\":\"x\\r\\nInjected: 1\"}]}}}",
         "spec.containers[1].readinessProbe.httpGet.httpHeaders[0]: Invalid value"},
        {"{\"readinessProbe\":{\"httpGet\":{\"port\":80,\"path\":\"/ HTTP/1.0\\r\\n\"}}}",
         "spec.containers[1].readinessProbe.httpGet.path: Invalid value"},
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        c = ctr(bad[i].ctr);
        why[0] = '\0';
        out = (json_t *)1;
        assert_int_equal(fatia_agent_probe_spec(c, 1, &out, why, sizeof(why)), -FATIA_E_INVALID);
        assert_null(out);
        if (!strstr(why, bad[i].why))
            fail_msg("case %zu: '%s' does not contain '%s'", i, why, bad[i].why);
        json_decref(c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_none),
        cmocka_unit_test(test_initial_delay),
        cmocka_unit_test(test_failure_threshold),
        cmocka_unit_test(test_success_threshold),
        cmocka_unit_test(test_liveness_hold),
        cmocka_unit_test(test_startup),
        cmocka_unit_test(test_spec),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
