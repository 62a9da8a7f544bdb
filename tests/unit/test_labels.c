/*
 * tests/unit/test_labels.c: model/labels.c against upstream's tables.
 *
 * The good/bad tables are transcribed from k8s.io/apimachinery/pkg/util/validation/
 * validation_test.go (TestIsDNS1123Label, TestIsDNS1123Subdomain, TestIsDNS1035Label,
 * TestIsQualifiedName, TestIsValidLabelValue; the same tables live on in
 * pkg/api/validate/content/{dns,kube}_test.go). The message tests pin upstream's wording.
 */
#include "base/compat.h"

/* cmocka.h needs these before it; keep clang-format from sorting it first. */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "model/labels.h"

typedef bool (*check_fn)(const char *s, char *why, size_t why_n);

static char rep_a63[64], rep_a64[65], rep_a253[254], rep_a254[255], key_253_63[320],
    key_254_abc[320];

static int setup(void **state)
{
    (void)state;
    memset(rep_a63, 'a', 63);
    memset(rep_a64, 'a', 64);
    memset(rep_a253, 'a', 253);
    memset(rep_a254, 'a', 254);
    snprintf(key_253_63, sizeof(key_253_63), "%s/%.63s", rep_a253,
             "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
    snprintf(key_254_abc, sizeof(key_254_abc), "%s/abc", rep_a254);
    return 0;
}

#define REP_A63  ((const char *)rep_a63)
#define REP_A64  ((const char *)rep_a64)
#define REP_A253 ((const char *)rep_a253)
#define REP_A254 ((const char *)rep_a254)

static void expect_all(check_fn fn, const char *name, const char *const *vals, size_t n, bool good)
{
    for (size_t i = 0; i < n; i++) {
        char why[FATIA_WHY_MAX] = "untouched";
        bool ok = fn(vals[i], why, sizeof(why));

        if (ok != good)
            fail_msg("%s('%s'): expected %s (%s)", name, vals[i], good ? "true" : "false", why);
        if (good)
            assert_string_equal(why, "untouched");
        else
            assert_true(why[0] != '\0' && strcmp(why, "untouched") != 0);
        /* why may be NULL */
        assert_int_equal(fn(vals[i], NULL, 0), good);
    }
}

#define EXPECT(fn, vals, good) expect_all(fn, #fn, vals, FATIA_ARRAY_SIZE(vals), good)

/* upstream TestIsDNS1123Label */
static void test_dns1123_label(void **state)
{
    const char *const good[] = {
        "a",  "ab",  "abc", "a1",  "a-1",        "a--1--2--b", "0",
        "01", "012", "1a",  "1-a", "1--a--b--2", REP_A63,
    };
    const char *const bad[] = {
        "",   "A",   "ABC", "aBc", "A1", "A-1", "1-A", "-",  "a-",  "-a",    "1-",  "-1",
        "_",  "a_",  "_a",  "a_b", "1_", "_1",  "1_2", ".",  "a.",  ".a",    "a.b", "1.",
        ".1", "1.2", " ",   "a ",  " a", "a b", "1 ",  " 1", "1 2", REP_A64,
    };

    (void)state;
    EXPECT(fatia_is_dns1123_label, good, true);
    EXPECT(fatia_is_dns1123_label, bad, false);
}

/* upstream TestIsDNS1123Subdomain */
static void test_dns1123_subdomain(void **state)
{
    const char *const good[] = {
        "a",         "ab",
        "abc",       "a1",
        "a-1",       "a--1--2--b",
        "0",         "01",
        "012",       "1a",
        "1-a",       "1--a--b--2",
        "a.a",       "ab.a",
        "abc.a",     "a1.a",
        "a-1.a",     "a--1--2--b.a",
        "a.1",       "ab.1",
        "abc.1",     "a1.1",
        "a-1.1",     "a--1--2--b.1",
        "0.a",       "01.a",
        "012.a",     "1a.a",
        "1-a.a",     "1--a--b--2",
        "0.1",       "01.1",
        "012.1",     "1a.1",
        "1-a.1",     "1--a--b--2.1",
        "a.b.c.d.e", "aa.bb.cc.dd.ee",
        "1.2.3.4.5", "11.22.33.44.55",
        REP_A253,
    };
    const char *const bad[] = {
        "",
        "A",
        "ABC",
        "aBc",
        "A1",
        "A-1",
        "1-A",
        "-",
        "a-",
        "-a",
        "1-",
        "-1",
        "_",
        "a_",
        "_a",
        "a_b",
        "1_",
        "_1",
        "1_2",
        ".",
        "a.",
        ".a",
        "a..b",
        "1.",
        ".1",
        "1..2",
        " ",
        "a ",
        " a",
        "a b",
        "1 ",
        " 1",
        "1 2",
        "A.a",
        "aB.a",
        "ab.A",
        "A1.a",
        "a1.A",
        "A.1",
        "aB.1",
        "A1.1",
        "1A.1",
        "0.A",
        "01.A",
        "012.A",
        "1A.a",
        "1a.A",
        "A.B.C.D.E",
        "AA.BB.CC.DD.EE",
        "a.B.c.d.e",
        "aa.bB.cc.dd.ee",
        "a@b",
        "a,b",
        "a_b",
        "a;b",
        "a:b",
        "a%b",
        "a?b",
        "a$b",
        REP_A254,
    };

    (void)state;
    EXPECT(fatia_is_dns1123_subdomain, good, true);
    EXPECT(fatia_is_dns1123_subdomain, bad, false);
}

/* upstream TestIsDNS1035Label */
static void test_dns1035_label(void **state)
{
    const char *const good[] = {"a", "ab", "abc", "a1", "a-1", "a--1--2--b", REP_A63};
    const char *const bad[] = {
        "0",  "01",  "012", "1a", "1-a", "1--a--b--2", "",   "A",  "ABC", "aBc",
        "A1", "A-1", "1-A", "-",  "a-",  "-a",         "1-", "-1", "_",   "a_",
        "_a", "a_b", "1_",  "_1", "1_2", ".",          "a.", ".a", "a.b", "1.",
        ".1", "1.2", " ",   "a ", " a",  "a b",        "1 ", " 1", "1 2", REP_A64,
    };

    (void)state;
    EXPECT(fatia_is_dns1035_label, good, true);
    EXPECT(fatia_is_dns1035_label, bad, false);
}

/* upstream TestIsQualifiedName; resource names follow the same rule. */
static void test_qualified_name(void **state)
{
    const char *const good[] = {
        "simple",
        "now-with-dashes",
        "1-starts-with-num",
        "1234",
        "simple/simple",
        "now-with-dashes/simple",
        "now-with-dashes/now-with-dashes",
        "now.with.dots/simple",
        "now-with.dashes-and.dots/simple",
        "1-num.2-num/3-num",
        "1234/5678",
        "1.2.3.4/5678",
        "Uppercase_Is_OK_123",
        "example.com/Uppercase_Is_OK_123",
        "requests.storage-foo",
        REP_A63,
        key_253_63,
    };
    const char *const bad[] = {
        "nospecialchars%^=@",
        "cantendwithadash-",
        "-cantstartwithadash-",
        "only/one/slash",
        "Example.com/abc",
        "example_com/abc",
        "example.com/",
        "/simple",
        REP_A64,
        key_254_abc,
        /* beyond upstream's table */
        "",
        "/",
        "a/b/",
        "example.com/_x",
        "example.com/x.",
        "exa mple.com/x",
        "nvidia.com/gpu\n",
    };
    const char *const resources[] = {
        "cpu",          "memory", "nvidia.com/gpu", "fatia.dev/gpu-milli", "nvidia.com/mig-1g.18gb",
        "hugepages-2Mi"};
    const char *const bad_resources[] = {"",      "nvidia.com/", "/gpu", "Nvidia.com/gpu",
                                         "a/b/c", "gpu memory"};

    (void)state;
    EXPECT(fatia_is_qualified_name, good, true);
    EXPECT(fatia_is_qualified_name, bad, false);
    EXPECT(fatia_is_resource_name, resources, true);
    EXPECT(fatia_is_resource_name, bad_resources, false);
}

/* upstream TestIsValidLabelValue */
static void test_label_value(void **state)
{
    const char *const good[] = {
        "simple", "now-with-dashes", "1-starts-with-num", "end-with-num-1", "1234", REP_A63, "",
    };
    const char *const bad[] = {
        "nospecialchars%^=@",
        "Tama-nui-te-r\xc4\x81.is.M\xc4\x81ori.sun",
        "\\backslashes\\are\\bad",
        "-starts-with-dash",
        "ends-with-dash-",
        ".starts.with.dot",
        "ends.with.dot.",
        REP_A64,
        /* beyond upstream's table */
        "_",
        "a b",
        "a\n",
    };

    (void)state;
    EXPECT(fatia_is_label_value, good, true);
    EXPECT(fatia_is_label_value, bad, false);
    assert_true(fatia_is_label_value(NULL, NULL, 0)); /* NULL is the empty value */
}

static void expect_why(check_fn fn, const char *s, const char *want)
{
    char why[FATIA_WHY_MAX];

    assert_false(fn(s, why, sizeof(why)));
    assert_string_equal(why, want);
}

/* Upstream's wording (RegexError condensed: examples kept, regex text dropped). */
static void test_messages(void **state)
{
    const char *label_msg = "a lowercase RFC 1123 label must consist of lower case alphanumeric "
                            "characters or '-', and must start and end with an alphanumeric "
                            "character (e.g. 'my-name', or '123-abc')";
    const char *sub_msg = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                          "characters, '-' or '.', and must start and end with an alphanumeric "
                          "character (e.g. 'example.com')";
    const char *qn_msg = "must consist of alphanumeric characters, '-', '_' or '.', and must "
                         "start and end with an alphanumeric character (e.g. 'MyName', or "
                         "'my.name', or '123-abc')";
    char want[FATIA_WHY_MAX * 2], why[FATIA_WHY_MAX];

    (void)state;
    expect_why(fatia_is_dns1123_label, "My-Name", label_msg);
    expect_why(fatia_is_dns1123_label, "a.b", "must not contain dots");
    snprintf(want, sizeof(want), "must be no more than 63 characters; %s", label_msg);
    memset(why, 'A', 70);
    why[70] = '\0';
    expect_why(fatia_is_dns1123_label, why, want);
    expect_why(fatia_is_dns1123_label, REP_A64, "must be no more than 63 characters");
    expect_why(fatia_is_dns1123_subdomain, "a..b", sub_msg);
    expect_why(fatia_is_dns1123_subdomain, REP_A254, "must be no more than 253 characters");
    expect_why(fatia_is_dns1035_label, "1abc",
               "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
               "with an alphabetic character, and end with an alphanumeric character (e.g. "
               "'my-name', or 'abc-123')");
    expect_why(fatia_is_dns1035_label, REP_A64, "must be no more than 63 characters");
    expect_why(fatia_is_label_value, "-x",
               "a valid label must be an empty string or consist of alphanumeric characters, "
               "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
               "'MyValue', or 'my_value', or '12345')");
    expect_why(fatia_is_label_value, REP_A64, "must be no more than 63 characters");
    expect_why(fatia_is_qualified_name, "/simple", "prefix part must be non-empty");
    snprintf(want, sizeof(want), "name part must be non-empty; name part %s", qn_msg);
    expect_why(fatia_is_qualified_name, "example.com/", want);
    expect_why(fatia_is_qualified_name, REP_A64, "name part must be no more than 63 characters");
    snprintf(want, sizeof(want), "name part %s", qn_msg);
    expect_why(fatia_is_qualified_name, "-x", want);
    snprintf(want, sizeof(want), "prefix part %s", sub_msg);
    expect_why(fatia_is_qualified_name, "Example.com/abc", want);
    snprintf(want, sizeof(want), "prefix part must be no more than 253 characters");
    expect_why(fatia_is_qualified_name, key_254_abc, want);
    snprintf(want, sizeof(want),
             "a qualified name %s with an optional DNS subdomain prefix and '/' (e.g. "
             "'example.com/MyName')",
             qn_msg);
    want[FATIA_WHY_MAX - 1] = '\0'; /* longer than why: truncated */
    expect_why(fatia_is_qualified_name, "only/one/slash", want);
    expect_why(fatia_is_resource_name, "a/b/c", want);
    /* a tiny buffer is truncated, never overrun */
    why[5] = 'Z';
    assert_false(fatia_is_dns1123_label("A", why, 5));
    assert_string_equal(why, "a lo");
    assert_int_equal(why[5], 'Z');
    assert_false(fatia_is_qualified_name("/", why, 1));
    assert_string_equal(why, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dns1123_label), cmocka_unit_test(test_dns1123_subdomain),
        cmocka_unit_test(test_dns1035_label), cmocka_unit_test(test_qualified_name),
        cmocka_unit_test(test_label_value),   cmocka_unit_test(test_messages),
    };

    return cmocka_run_group_tests(tests, setup, NULL);
}
