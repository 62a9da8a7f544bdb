/*
 * tests/unit/test_usage.c: control/usage.c against hand-computed sums: clipping to the window,
 * a running record up to now, grouping, rounding of hours and of sub-milli quantities, a year of
 * 1 TiB (no overflow), a record of 0 s counted with no hours, a running record that starts after
 * now (0 s, not negative), and decoding errors.
 */
#include "base/compat.h"

/* cmocka.h needs these before it; keep clang-format from sorting it first. */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <errno.h>
#include <jansson.h>

#include "base/json.h"
#include "control/usage.h"

static json_t *rec(const char *ns, const char *q, const char *start, const char *end,
                   const char *res)
{
    json_t *r = json_pack("{s:{s:s},s:{s:s,s:s,s:o}}", "metadata", "namespace", ns, "spec",
                          "clusterQueue", q, "start", start, "resources", json_loads(res, 0, NULL));
    if (end)
        json_object_set_new(json_object_get(r, "spec"), "end", json_string(end));
    return r;
}

static fatia_usec_t at(const char *s)
{
    fatia_usec_t t = 0;
    assert_int_equal(fatia_time_parse_rfc3339(s, &t), 0);
    return t;
}

static const char *hours(const json_t *rows, const char *group, const char *res)
{
    for (size_t i = 0; i < json_array_size(rows); i++) {
        const json_t *r = json_array_get(rows, i);
        if (!strcmp(fatia_json_str(r, "group"), group) &&
            !strcmp(fatia_json_str(r, "resource"), res))
            return fatia_json_str(r, "hours");
    }
    return "absent";
}

static void test_sums(void **state)
{
    json_t *t[4];
    struct fatia_control_usage_rec r[4];
    char why[200];
    json_t *rows;
    fatia_usec_t now = at("2026-12-01T12:00:00Z");

    (void)state;
    t[0] = rec("a", "qa", "2026-12-01T10:00:00Z", "2026-12-01T11:30:00Z",
               "{\"nvidia.com/gpu\":\"2\",\"cpu\":\"500m\"}");
    t[1] = rec("a", "qa", "2026-12-01T11:00:00Z", NULL, "{\"nvidia.com/gpu\":\"1\"}");
    t[2] = rec("b", "qb", "2026-12-01T09:00:00Z", "2026-12-01T09:00:20Z",
               "{\"nvidia.com/gpu.shared\":\"1\",\"cpu\":\"1n\"}");
    t[3] = rec("b", "qb", "2025-12-01T12:00:00Z", "2026-12-01T12:00:00Z", "{\"memory\":\"1Ti\"}");
    for (int i = 0; i < 4; i++)
        assert_int_equal(fatia_control_usage_rec_decode(t[i], &r[i], why, sizeof(why)), 0);
    rows = fatia_control_usage_report(r, 4, 0, 0, now, FATIA_USAGE_BY_NAMESPACE);
    assert_string_equal(hours(rows, "a", "nvidia.com/gpu"), "4.000000"); /* 2 x 1.5 h + 1 x 1 h */
    assert_string_equal(hours(rows, "a", "cpu"), "0.750000");
    assert_string_equal(hours(rows, "b", "nvidia.com/gpu.shared"), "0.005556"); /* 20 s, rounded */
    assert_string_equal(hours(rows, "b", "cpu"), "0.000006"); /* 1n counts as 1m: 0.02 s */
    /* 2^40 bytes x 8760 h, exact */
    assert_string_equal(hours(rows, "b", "memory"), "9631721859317760.000000");
    json_decref(rows);
    /* the window [11:00, 11:15) */
    rows = fatia_control_usage_report(r, 4, at("2026-12-01T11:00:00Z"), at("2026-12-01T11:15:00Z"),
                                      now, FATIA_USAGE_BY_QUEUE);
    assert_string_equal(hours(rows, "qa", "nvidia.com/gpu"), "0.750000");
    /* 1 TiB over the whole window: 2^40 x 0.25 h */
    assert_string_equal(hours(rows, "qb", "memory"), "274877906944.000000");
    assert_string_equal(hours(rows, "qb", "nvidia.com/gpu.shared"), "absent");
    json_decref(rows);
    /* a window that ends before now: the running record stops at its end */
    rows = fatia_control_usage_report(r + 1, 1, 0, at("2026-12-01T11:30:00Z"), now,
                                      FATIA_USAGE_BY_NAMESPACE);
    assert_string_equal(hours(rows, "a", "nvidia.com/gpu"), "0.500000");
    json_decref(rows);
    for (int i = 0; i < 4; i++)
        json_decref(t[i]);
}

static const json_t *row(const json_t *rows, const char *group, const char *res)
{
    for (size_t i = 0; i < json_array_size(rows); i++) {
        const json_t *r = json_array_get(rows, i);
        if (!strcmp(fatia_json_str(r, "group"), group) &&
            !strcmp(fatia_json_str(r, "resource"), res))
            return r;
    }
    return NULL;
}

/* a run of 0 s (start == end at the records' one-second resolution) is a run: counted in the
 * records of the window that holds its instant, with no hours; outside the window, not at all */
static void test_zero_length(void **state)
{
    json_t *t[2];
    struct fatia_control_usage_rec r[2];
    char why[200];
    json_t *rows;
    fatia_usec_t now = at("2026-12-01T12:00:00Z");

    (void)state;
    t[0] = rec("a", "qa", "2026-12-01T10:00:00Z", "2026-12-01T10:00:10Z",
               "{\"nvidia.com/gpu.shared\":\"1\"}");
    t[1] = rec("a", "qa", "2026-12-01T10:00:12Z", "2026-12-01T10:00:12Z",
               "{\"nvidia.com/gpu.shared\":\"1\"}");
    for (int i = 0; i < 2; i++)
        assert_int_equal(fatia_control_usage_rec_decode(t[i], &r[i], why, sizeof(why)), 0);
    rows = fatia_control_usage_report(r, 2, 0, 0, now, FATIA_USAGE_BY_NAMESPACE);
    assert_non_null(row(rows, "a", "nvidia.com/gpu.shared"));
    assert_int_equal(
        json_integer_value(json_object_get(row(rows, "a", "nvidia.com/gpu.shared"), "records")), 2);
    assert_string_equal(hours(rows, "a", "nvidia.com/gpu.shared"), "0.002778"); /* 10 s */
    json_decref(rows);
    /* a window holding only the 0 s run: one record, no hours */
    rows = fatia_control_usage_report(r, 2, at("2026-12-01T10:00:11Z"), at("2026-12-01T10:00:13Z"),
                                      now, FATIA_USAGE_BY_NAMESPACE);
    assert_int_equal(
        json_integer_value(json_object_get(row(rows, "a", "nvidia.com/gpu.shared"), "records")), 1);
    assert_string_equal(hours(rows, "a", "nvidia.com/gpu.shared"), "0.000000");
    json_decref(rows);
    /* a window that ends at its instant: [since, until) does not hold it */
    rows = fatia_control_usage_report(r + 1, 1, at("2026-12-01T10:00:00Z"),
                                      at("2026-12-01T10:00:12Z"), now, FATIA_USAGE_BY_NAMESPACE);
    assert_null(row(rows, "a", "nvidia.com/gpu.shared"));
    json_decref(rows);
    for (int i = 0; i < 2; i++)
        json_decref(t[i]);
}

/* a running record that starts after now (fatiad's clock ahead of the reader's), read over a
 * window that ends later: a run of 0 s at its start, not negative hours */
static void test_start_after_now(void **state)
{
    json_t *t = rec("a", "qa", "2026-12-01T12:10:00Z", NULL, "{\"nvidia.com/gpu\":\"1\"}");
    struct fatia_control_usage_rec r;
    char why[200];
    json_t *rows;

    (void)state;
    assert_int_equal(fatia_control_usage_rec_decode(t, &r, why, sizeof(why)), 0);
    rows = fatia_control_usage_report(&r, 1, at("2026-12-01T11:00:00Z"), at("2026-12-01T13:00:00Z"),
                                      at("2026-12-01T12:00:00Z"), FATIA_USAGE_BY_NAMESPACE);
    assert_string_equal(hours(rows, "a", "nvidia.com/gpu"), "0.000000");
    assert_int_equal(
        json_integer_value(json_object_get(row(rows, "a", "nvidia.com/gpu"), "records")), 1);
    json_decref(rows);
    json_decref(t);
}

static void test_decode_errors(void **state)
{
    struct fatia_control_usage_rec r;
    char why[200];
    json_t *bad = rec("a", "q", "2026-12-01T10:00:00Z", "2026-12-01T09:00:00Z", "{}");
    json_t *nostart = json_pack("{s:{s:s},s:{}}", "metadata", "namespace", "a", "spec");

    (void)state;
    assert_int_equal(fatia_control_usage_rec_decode(bad, &r, why, sizeof(why)), -EINVAL);
    assert_string_equal(why, "spec.end: before spec.start");
    assert_int_equal(fatia_control_usage_rec_decode(nostart, &r, why, sizeof(why)), -EINVAL);
    assert_string_equal(why, "spec.start: not an RFC 3339 time");
    json_decref(bad);
    json_decref(nostart);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sums),
        cmocka_unit_test(test_zero_length),
        cmocka_unit_test(test_start_after_now),
        cmocka_unit_test(test_decode_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
