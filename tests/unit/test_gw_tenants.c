/*
 * tests/unit/test_gw_tenants.c: the gateway's API keys and per-tenant buckets
 * (gateway/tenants.c) with a clock the test drives, and the gateway's timeouts being on by
 * default (a first-byte timeout of 0 would let a hung model server hold a client forever).
 */
#include "base/compat.h"

/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"
#include "gateway/gateway.h"
#include "gateway/tenants.h"

static struct fatia_gateway_tenants *load(const char *text, double rate, char *why, size_t why_n,
                                          int *r)
{
    char path[] = "/tmp/fatia-keys-XXXXXX";
    int fd = mkstemp(path);
    struct fatia_gateway_tenants *t = NULL;

    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    *r = fatia_gateway_tenants_load(path, rate, &t, why, why_n);
    unlink(path);
    return t;
}

static int auth(const struct fatia_gateway_tenants *t, const char *value, size_t *tenant)
{
    struct fatia_str v = {value, strlen(value)};
    return fatia_gateway_tenants_auth(t, value ? &v : NULL, tenant);
}

static void test_keys(void **state)
{
    char why[256];
    size_t tn = 99;
    int r;
    struct fatia_gateway_tenants *t =
        load("# k\nalice-key-0123456789 alice\nbob-key-0123456789ab bob\n"
             "alice-2-0123456789ab alice\n",
             0, why, sizeof(why), &r);

    (void)state;
    assert_int_equal(r, 0);
    assert_int_equal(t->n, 2);
    assert_int_equal(auth(t, "Bearer alice-key-0123456789", &tn), 0);
    assert_string_equal(t->v[tn].name, "alice");
    assert_int_equal(auth(t, "bearer alice-2-0123456789ab", &tn), 0);
    assert_string_equal(t->v[tn].name, "alice");
    assert_int_equal(auth(t, "Bearer bob-key-0123456789ab", &tn), 0);
    assert_string_equal(t->v[tn].name, "bob");
    /* what a guesser tries */
    assert_int_equal(auth(t, "Bearer alice-key-012345678", &tn), -EACCES);
    assert_int_equal(auth(t, "Bearer alice-key-01234567890", &tn), -EACCES);
    assert_int_equal(auth(t, "Bearer ", &tn), -EACCES);
    assert_int_equal(auth(t, "Bearer", &tn), -EACCES);
    assert_int_equal(auth(t, "alice-key-0123456789", &tn), -EACCES);
    assert_int_equal(auth(t, "Basic alice-key-0123456789", &tn), -EACCES);
    assert_int_equal(auth(t, "Bearer alice", &tn), -EACCES);
    assert_int_equal(fatia_gateway_tenants_auth(t, NULL, &tn), -EACCES);
    fatia_gateway_tenants_free(t);

    assert_null(load("short alice\n", 0, why, sizeof(why), &r));
    assert_int_equal(r, -EINVAL);
    assert_non_null(strstr(why, ":1: the key must be"));
    assert_null(load("alice-key-0123456789 a b\n", 0, why, sizeof(why), &r));
    assert_non_null(strstr(why, ":1: expected KEY TENANT"));
    assert_null(
        load("\nalice-key-0123456789 a\nalice-key-0123456789 b\n", 0, why, sizeof(why), &r));
    assert_non_null(strstr(why, ":3: this key is already given"));
    assert_null(load("alice-key-0123456789 a\"b\n", 0, why, sizeof(why), &r));
    assert_non_null(strstr(why, "expected 1 to 63 of"));
    assert_null(load("# none\n", 0, why, sizeof(why), &r));
    assert_non_null(strstr(why, "no keys"));
}

static void test_bucket(void **state)
{
    char why[256];
    int r, ok = 0;
    struct fatia_gateway_tenants *t =
        load("alice-key-0123456789 alice\nbob-key-0123456789ab bob\n", 2, why, sizeof(why), &r);
    fatia_usec_t now = 1000 * FATIA_USEC_PER_SEC;

    (void)state;
    assert_int_equal(r, 0);
    /* a burst of one second's worth (2), then one every 0.5 s */
    for (int i = 0; i < 10; i++)
        ok += fatia_gateway_tenants_admit(t, 0, now);
    assert_int_equal(ok, 2);
    assert_int_equal(t->v[0].limited, 8);
    assert_false(fatia_gateway_tenants_admit(t, 0, now + FATIA_USEC_PER_SEC / 4));
    assert_true(fatia_gateway_tenants_admit(t, 0, now + FATIA_USEC_PER_SEC * 3 / 4));
    /* bob's bucket is his own */
    assert_true(fatia_gateway_tenants_admit(t, 1, now));
    /* idle for an hour: still only the burst */
    now += 3600 * FATIA_USEC_PER_SEC;
    ok = 0;
    for (int i = 0; i < 10; i++)
        ok += fatia_gateway_tenants_admit(t, 1, now);
    assert_int_equal(ok, 2);
    fatia_gateway_tenants_free(t);
}

static void test_timeouts_default_on(void **state)
{
    struct fatia_gateway_config c;

    (void)state;
    fatia_gateway_config_default(&c);
    assert_true(c.connect_timeout > 0);
    assert_true(c.upstream_timeout > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_bucket),
        cmocka_unit_test(test_timeouts_default_on),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
