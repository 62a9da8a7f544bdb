/*
 * tests/unit/test_base.c: buffers, maps, vectors, strict parsers, time, errors, allocation faults,
 * back-off and log rate limits.
 */
#include "base/compat.h"

/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "base/alloc.h"
#include "base/backoff.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "base/map.h"
#include "base/str.h"
#include "base/vec.h"

static void test_buf(void **state)
{
    struct fatia_buf b;
    (void)state;

    fatia_buf_init(&b, 16);
    assert_string_equal(b.p, "");
    assert_int_equal(fatia_buf_puts(&b, "hello"), 0);
    assert_int_equal(fatia_buf_printf(&b, " %d", 42), 0);
    assert_string_equal(b.p, "hello 42");
    /* past max: refused and unchanged */
    assert_int_equal(fatia_buf_puts(&b, "0123456789"), -FATIA_E_LIMIT);
    assert_string_equal(b.p, "hello 42");
    fatia_buf_truncate(&b, 5);
    assert_string_equal(b.p, "hello");
    fatia_buf_release(&b);
    assert_int_equal(b.len, 0);
}

static void test_buf_oom(void **state)
{
    struct fatia_buf b = FATIA_BUF_INIT;
    (void)state;

    fatia_alloc_fail_at(1, 0);
    assert_int_equal(fatia_buf_puts(&b, "x"), -ENOMEM);
    assert_string_equal(b.p, "");
    fatia_alloc_fail_at(0, 0);
    assert_int_equal(fatia_buf_puts(&b, "x"), 0);
    fatia_buf_release(&b);
}

static void test_map(void **state)
{
    struct fatia_strmap m;
    char keys[2000][16];
    (void)state;

    fatia_strmap_init(&m);
    for (int i = 0; i < 2000; i++) {
        snprintf(keys[i], sizeof(keys[i]), "k%d", i);
        assert_int_equal(fatia_strmap_put(&m, keys[i], (void *)(intptr_t)(i + 1)), 0);
    }
    assert_int_equal(m.n, 2000);
    for (int i = 0; i < 2000; i += 2)
        assert_true(fatia_strmap_del(&m, keys[i]));
    assert_int_equal(m.n, 1000);
    for (int i = 0; i < 2000; i++) {
        intptr_t v = (intptr_t)fatia_strmap_get(&m, keys[i]);
        assert_int_equal(v, i % 2 ? i + 1 : 0);
        assert_int_equal(fatia_strmap_has(&m, keys[i]), i % 2 == 1);
    }
    assert_false(fatia_strmap_del(&m, "absent"));
    fatia_strmap_release(&m);
}

static void test_vec(void **state)
{
    FATIA_VEC(int) v = {0};
    (void)state;

    for (int i = 0; i < 100; i++)
        assert_int_equal(FATIA_VEC_PUSH(&v, i * i), 0);
    assert_int_equal(v.n, 100);
    assert_int_equal(v.v[99], 9801);
    FATIA_VEC_RELEASE(&v);
    assert_null(v.v);
}

static void test_parse(void **state)
{
    int64_t i;
    uint64_t u;
    int n;
    double d;
    (void)state;

    assert_int_equal(fatia_parse_i64("-42", &i), 0);
    assert_int_equal(i, -42);
    assert_int_equal(fatia_parse_i64("42x", &i), -EINVAL);
    assert_int_equal(fatia_parse_i64("", &i), -EINVAL);
    assert_int_equal(fatia_parse_i64(" 1", &i), -EINVAL);
    assert_int_equal(fatia_parse_i64("99999999999999999999", &i), -ERANGE);
    assert_int_equal(fatia_parse_u64("18446744073709551615", &u), 0);
    assert_int_equal(fatia_parse_u64("-1", &u), -EINVAL);
    assert_int_equal(fatia_parse_int("7", 1, 6, &n), -ERANGE);
    assert_int_equal(fatia_parse_int("6", 1, 6, &n), 0);
    assert_int_equal(fatia_parse_double("0.25", &d), 0);
    assert_true(d == 0.25);
    assert_int_equal(fatia_parse_double("nan", &d), -ERANGE);
    assert_int_equal(fatia_parse_duration_usec("1m30s", &i), 0);
    assert_int_equal(i, 90 * FATIA_USEC_PER_SEC);
    assert_int_equal(fatia_parse_duration_usec("50ms", &i), 0);
    assert_int_equal(i, 50000);
    assert_int_equal(fatia_parse_duration_usec("2", &i), -EINVAL);
    assert_int_equal(fatia_parse_duration_usec("1.5h", &i), 0);
    assert_int_equal(i, 5400 * FATIA_USEC_PER_SEC);
}

static void test_time(void **state)
{
    fatia_usec_t t;
    char buf[64];
    (void)state;

    assert_int_equal(fatia_time_parse_rfc3339("2026-11-29T15:19:57Z", &t), 0);
    fatia_time_format_rfc3339(t, false, buf, sizeof(buf));
    assert_string_equal(buf, "2026-11-29T15:19:57Z");
    assert_int_equal(fatia_time_parse_rfc3339("2026-11-29T16:19:57.5+01:00", &t), 0);
    fatia_time_format_rfc3339(t, true, buf, sizeof(buf));
    assert_string_equal(buf, "2026-11-29T15:19:57.500000Z");
    assert_int_equal(fatia_time_parse_rfc3339("2026-13-01T00:00:00Z", &t), -EINVAL);
    assert_int_equal(fatia_time_parse_rfc3339("2026-11-29 15:19:57", &t), -EINVAL);
    assert_int_equal(fatia_time_parse_rfc3339("2026-11-29T15:19:57Zjunk", &t), -EINVAL);
}

static void test_errors(void **state)
{
    (void)state;
    assert_string_equal(fatia_err_name(-FATIA_E_NOFIT), "FATIA_E_NOFIT");
    assert_string_equal(fatia_strerror(-FATIA_E_NOFIT), "request does not fit");
    assert_string_equal(fatia_err_name(-ENOMEM), "ENOMEM");
    assert_string_equal(fatia_strerror(ENOENT), "No such file or directory");
    assert_string_equal(fatia_err_name(-99999), "E?");
}

static void test_json_numbers(void **state)
{
    char buf[64];
    json_t *v;
    (void)state;

    v = json_real(0.1);
    fatia_json_number_text(v, buf, sizeof(buf));
    assert_string_equal(buf, "0.1");
    json_decref(v);
    v = json_real(1.5e-7);
    fatia_json_number_text(v, buf, sizeof(buf));
    assert_string_equal(buf, "1.5e-07");
    json_decref(v);
    v = json_integer(-12);
    fatia_json_number_text(v, buf, sizeof(buf));
    assert_string_equal(buf, "-12");
    json_decref(v);
    v = json_string("x");
    assert_int_equal(fatia_json_number_text(v, buf, sizeof(buf)), -EINVAL);
    json_decref(v);
}

static void test_json_path(void **state)
{
    json_t *root =
        json_loads("{\"spec\":{\"groups\":[{\"name\":\"a\"},{\"name\":\"b\"}]}}", 0, NULL);
    (void)state;

    assert_string_equal(json_string_value(fatia_json_path(root, "spec.groups[1].name")), "b");
    assert_null(fatia_json_path(root, "spec.groups[2].name"));
    assert_null(fatia_json_path(root, "spec.nope"));
    assert_null(fatia_json_path(root, "spec.groups.name"));
    json_decref(root);
}

static void test_backoff(void **state)
{
    const fatia_usec_t ms = FATIA_USEC_PER_MSEC, max = 30 * FATIA_USEC_PER_SEC;
    uint64_t rnd = 1;
    struct fatia_ratelimit rl = {.per_sec = 5, .burst = 20};
    uint64_t sup = 99;
    int ok = 0;

    (void)state;
    assert_int_equal(fatia_backoff_delay(100 * ms, max, 0, 7), 0);
    /* doubling from the base, capped, with a jitter below half of the delay */
    for (unsigned n = 1; n < 40; n++) {
        fatia_usec_t want = 100 * ms << (n < 20 ? n - 1 : 19), d;
        if (want > max)
            want = max;
        d = fatia_backoff_delay(100 * ms, max, n, fatia_backoff_rand(&rnd));
        assert_true(d >= want && d < want + want / 2);
    }
    /* jitter spreads retriers that failed together */
    assert_true(fatia_backoff_delay(100 * ms, max, 3, 1) !=
                fatia_backoff_delay(100 * ms, max, 3, 2));
    /* a burst, then per_sec; the next line let through counts the refused ones */
    for (int i = 0; i < 1000; i++)
        ok += fatia_ratelimit_take(&rl, 1000000 + i, NULL);
    assert_int_equal(ok, 20);
    assert_false(fatia_ratelimit_take(&rl, 1000000 + 1000, NULL));
    assert_true(fatia_ratelimit_take(&rl, 1000000 + 201000, &sup)); /* 0.2 s: one token */
    assert_int_equal(sup, 981);
    assert_true(!fatia_ratelimit_take(&rl, 1000000 + 201001, NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buf),       cmocka_unit_test(test_buf_oom),
        cmocka_unit_test(test_map),       cmocka_unit_test(test_vec),
        cmocka_unit_test(test_parse),     cmocka_unit_test(test_time),
        cmocka_unit_test(test_errors),    cmocka_unit_test(test_json_numbers),
        cmocka_unit_test(test_json_path), cmocka_unit_test(test_backoff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
