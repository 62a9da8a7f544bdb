/*
 * tests/unit/test_selector.c: model/selector.c.
 *
 * String-form tables are transcribed from k8s.io/apimachinery/pkg/labels/selector_test.go
 * (TestSelectorParse, TestSelectorMatches, TestSetSelectorParser, TestRequirementSelectorMatching,
 * TestLexerSequence, TestDeterministicParse, TestEverything); the compiled selector is compared
 * through describe(), which prints it as upstream's Selector.String() does. fatia rejects the
 * Gt/Lt operators (">" and "<") that labels.Parse accepts: those upstream cases are listed as
 * errors here. The JSON form follows metav1.LabelSelectorAsSelector and ValidateLabelSelector.
 */
#include "base/compat.h"

#include <errno.h>
/* cmocka.h needs these before it; keep clang-format from sorting it first. */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "base/alloc.h"
#include "model/labels.h"
#include "model/selector.h"

/* upstream Selector.String(): requirements sorted by key, joined with ','. */
static const char *describe(const struct fatia_selector *sel)
{
    static char buf[1024];
    size_t len = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < sel->n_reqs; i++) {
        const struct fatia_sel_req *r = &sel->reqs[i];
        static const char *const op_text[] = {
            [FATIA_SEL_IN] = " in (", [FATIA_SEL_NOT_IN] = " notin (",
            [FATIA_SEL_EXISTS] = "",  [FATIA_SEL_DOES_NOT_EXIST] = "",
            [FATIA_SEL_EQUALS] = "=", [FATIA_SEL_NOT_EQUALS] = "!=",
        };

        len +=
            (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s%s%s", i ? "," : "",
                             r->op == FATIA_SEL_DOES_NOT_EXIST ? "!" : "", r->key, op_text[r->op]);
        for (size_t j = 0; j < r->n_values; j++)
            len +=
                (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", j ? "," : "", r->values[j]);
        if (r->op == FATIA_SEL_IN || r->op == FATIA_SEL_NOT_IN)
            len += (size_t)snprintf(buf + len, sizeof(buf) - len, ")");
        assert_true(len < sizeof(buf));
        /* the invariants of the compiled form */
        if (r->op == FATIA_SEL_EXISTS || r->op == FATIA_SEL_DOES_NOT_EXIST)
            assert_int_equal(r->n_values, 0);
        else if (r->op == FATIA_SEL_EQUALS || r->op == FATIA_SEL_NOT_EQUALS)
            assert_int_equal(r->n_values, 1);
        else
            assert_true(r->n_values >= 1);
        if (i > 0)
            assert_true(strcmp(sel->reqs[i - 1].key, r->key) <= 0);
    }
    return buf;
}

static struct fatia_selector *must_parse(const char *s)
{
    struct fatia_selector *sel = NULL;
    char why[256] = "";

    if (fatia_selector_parse(s, &sel, why, sizeof(why)) != 0)
        fail_msg("parse '%s': %s", s, why);
    assert_non_null(sel);
    return sel;
}

static const struct {
    const char *in, *out;
} good_strings[] = {
    /* upstream TestSelectorParse: the input with blanks removed is the String() */
    {"x=a,y=b,z=c", "x=a,y=b,z=c"},
    {"", ""},
    {"x!=a,y=b", "x!=a,y=b"},
    {"x=", "x="},
    {"x= ", "x="},
    {"x=,z= ", "x=,z="},
    {"x= ,z= ", "x=,z="},
    {"!x", "!x"},
    /* upstream TestSetSelectorParser (valid rows; Gt/Lt rows are in bad_strings) */
    {"\rx", "x"},
    {"this-is-a-dns.domain.com/key-with-dash", "this-is-a-dns.domain.com/key-with-dash"},
    {"this-is-another-dns.domain.com/key-with-dash in (so,what)",
     "this-is-another-dns.domain.com/key-with-dash in (so,what)"},
    {"0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
     "0.1.2.domain/99 notin (10.10.100.1,tick.tack.clock)"},
    {"foo  in\t (abc)", "foo in (abc)"},
    {"x notin\n (abc)", "x notin (abc)"},
    {"x  notin\t\t\t(abc,def)", "x notin (abc,def)"},
    {"x in (abc,def)", "x in (abc,def)"},
    {"x in (abc,)", "x in (,abc)"},
    {"x in ()", "x in ()"},
    {"x notin (abc,,def),bar,z in (),w", "bar,w,x notin (,abc,def),z in ()"},
    {"x,y in (a)", "x,y in (a)"},
    {"x=a", "x=a"},
    {"x=a,y!=b", "x=a,y!=b"},
    {"x=a,y!=b,z in (h,i,j)", "x=a,y!=b,z in (h,i,j)"},
    {"x notin ( )", "x notin ()"},
    {"x notin (, a)", "x notin (,a)"},
    {"a ", "a"},
    {"a in (x,y,notin, z,in)", "a in (in,notin,x,y,z)"},
    /* upstream TestSelectorMatches / TestLexerSequence / TestDeterministicParse inputs */
    {"notin=in", "notin=in"},
    {"key in ( value )", "key in (value)"},
    {"key notin ( value1, value2 )", "key notin (value1,value2)"},
    {"x in (),y", "x in (),y"},
    {"x=a,a=x", "a=x,x=a"},
    {"a=x,x=a", "a=x,x=a"},
    /* beyond upstream's tables */
    {"x==a", "x=a"},
    {"x == a , y != b", "x=a,y!=b"},
    {"x in (b,a,b,a)", "x in (a,b)"},
    {"x in (,,,)", "x in ()"},
    {"x in (a,,b)", "x in (,a,b)"},
    {"in in (in)", "in in (in)"},
    {"x=in,notin!=notin", "notin!=notin,x=in"},
    {"! x", "!x"},
    {"!in", "!in"},
    {"\t\r\n", ""},
    {"x=A_b.C-9", "x=A_b.C-9"},
    {"example.com/app in (web), tier notin (db), !legacy, feature",
     "example.com/app in (web),feature,!legacy,tier notin (db)"},
};

static void test_parse_good(void **state)
{
    (void)state;
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(good_strings); i++) {
        struct fatia_selector *sel = must_parse(good_strings[i].in);

        if (strcmp(describe(sel), good_strings[i].out) != 0)
            fail_msg("'%s': got '%s', want '%s'", good_strings[i].in, describe(sel),
                     good_strings[i].out);
        assert_int_equal(fatia_selector_is_empty(sel), good_strings[i].out[0] == '\0');
        fatia_selector_free(sel);
    }
}

#define QN_MSG                                                                                  \
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an " \
    "alphanumeric character (e.g. 'MyName', or 'my.name', or '123-abc')"
#define LV_MSG                                                                                    \
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "   \
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue', or 'my_value', " \
    "or '12345')"
#define REQ "unable to parse requirement: "
#define OPS "in, notin, =, ==, !="

static const struct {
    const char *in, *why;
} bad_strings[] = {
    /* upstream TestSelectorParse */
    {"x=a||y=b", REQ "values[0][x]: invalid value \"a||y\": " LV_MSG},
    {"x==a==b", "found '==', expected: ',' or 'end of string'"},
    {"!x=a", "found '=', expected: ',' or 'end of string'"},
    {"x<a", REQ "found '<', expected: " OPS},
    /* upstream's valid Gt/Lt rows: fatia has no Gt/Lt */
    {"x>1", REQ "found '>', expected: " OPS},
    {"x>1,z<5", REQ "found '>', expected: " OPS},
    {"x<7", REQ "found '<', expected: " OPS},
    /* upstream TestSetSelectorParser (invalid rows) */
    {"x,,y", "found ',', expected: identifier after ','"},
    {",x,y", "found ',', expected: !, identifier, or 'end of string'"},
    {"x nott in (y)", REQ "found 'nott', expected: " OPS},
    {"a in (xyz),", "found '', expected: identifier after ','"},
    {"a in (xyz)b notin ()", "found 'b', expected: ',' or 'end of string'"},
    {"a in (xyz abc)", REQ "found 'abc', expected: ',' or ')'"},
    {"a notin(", REQ "found '', expected: ',', ')' or identifier"},
    {"a (", REQ "found '(', expected: " OPS},
    {"(", "found '(', expected: !, identifier, or 'end of string'"},
    /* every other error path */
    {"!", REQ "found '', expected: identifier"},
    {"!!x", REQ "found '!', expected: identifier"},
    {"x in a", REQ "found 'a' expected: '('"},
    {"x in", REQ "found '' expected: '('"},
    {"x in (a,=)", REQ "found '=', expected: ',', or identifier"},
    {"x in (a", REQ "found '', expected: ',' or ')'"},
    {"x in (=)", REQ "found '=', expected: ',', ')' or identifier"},
    {"x in (,", REQ "found '', expected: ',', or identifier"},
    {"x = (", REQ "found '(', expected: identifier"},
    {"x != ,", "found '', expected: identifier after ','"},
    {"x=a b", "found 'b', expected: ',' or 'end of string'"},
    {"x in (a))", "found ')', expected: ',' or 'end of string'"},
    {"x gt 1", REQ "found 'gt', expected: " OPS},
    {"x ! y", REQ "found '!', expected: " OPS},
    {"x notin", REQ "found '' expected: '('"},
    {")", "found ')', expected: !, identifier, or 'end of string'"},
    {"=", "found '=', expected: !, identifier, or 'end of string'"},
    {"-x", REQ "invalid value \"-x\": name part " QN_MSG},
    {"a/b/c", REQ "invalid value \"a/b/c\": a qualified name " QN_MSG},
    {"/x", REQ "invalid value \"/x\": prefix part must be non-empty"},
    {"x=-a", REQ "values[0][x]: invalid value \"-a\": " LV_MSG},
    {"x in (a,b,-c)", REQ "values[0][x]: invalid value \"-c\": " LV_MSG},
    {"x in (a,b,c-)", REQ "values[2][x]: invalid value \"c-\": " LV_MSG},
    {"x=\xc3\xa9", REQ "values[0][x]: invalid value \"\xc3\xa9\": " LV_MSG},
};

static void test_parse_bad(void **state)
{
    (void)state;
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(bad_strings); i++) {
        struct fatia_selector *sel = (struct fatia_selector *)&sel;
        char why[FATIA_WHY_MAX + 64] = "";

        if (fatia_selector_parse(bad_strings[i].in, &sel, why, sizeof(why)) != -EINVAL)
            fail_msg("'%s' parsed", bad_strings[i].in);
        assert_true(sel == (struct fatia_selector *)&sel); /* ret untouched */
        if (strncmp(why, bad_strings[i].why, FATIA_MIN(strlen(bad_strings[i].why), 200)) != 0)
            fail_msg("'%s': why\n  '%s', want\n  '%s'", bad_strings[i].in, why, bad_strings[i].why);
        assert_int_equal(fatia_selector_parse(bad_strings[i].in, &sel, NULL, 0), -EINVAL);
    }
}

static void test_parse_long(void **state)
{
    char key[400], sel_text[600], why[FATIA_WHY_MAX];
    struct fatia_selector *sel;

    (void)state;
    /* a 253-character prefix and a 63-character name is the longest key */
    memset(key, 'a', 253);
    key[253] = '/';
    memset(key + 254, 'b', 63);
    key[317] = '\0';
    snprintf(sel_text, sizeof(sel_text), "%s in (v)", key);
    sel = must_parse(sel_text);
    assert_string_equal(sel->reqs[0].key, key);
    fatia_selector_free(sel);
    memset(key, 'c', 399);
    key[399] = '\0';
    assert_int_equal(fatia_selector_parse(key, &sel, why, sizeof(why)), -EINVAL);
    assert_string_equal(why,
                        REQ "invalid value \"cccccccccccccccccccccccccccccccccccccccccccccccc"
                            "cccccccccccccccc\": name part must be no more than 63 characters");
    /* many values stay linear-time and come out as a set */
    {
        size_t n = 20000 * 2 + 16, len;
        char *big = fatia_malloc(n);

        assert_non_null(big);
        len = (size_t)snprintf(big, n, "x in (");
        for (int i = 0; i < 20000; i++)
            len += (size_t)snprintf(big + len, n - len, "%c,", 'a' + i % 3);
        snprintf(big + len, n - len, ")");
        sel = must_parse(big);
        assert_string_equal(describe(sel), "x in (,a,b,c)");
        fatia_selector_free(sel);
        fatia_free(big);
    }
}

static json_t *labels(const char *text)
{
    json_error_t err;
    json_t *v = json_loads(text, 0, &err);

    if (!v)
        fail_msg("bad test JSON %s: %s", text, err.text);
    return v;
}

static const struct {
    const char *sel, *labels;
    bool match;
} matches[] = {
    /* upstream TestSelectorMatches (Gt/Lt rows dropped) */
    {"", "{\"x\": \"y\"}", true},
    {"x=y", "{\"x\": \"y\"}", true},
    {"x=y,z=w", "{\"x\": \"y\", \"z\": \"w\"}", true},
    {"x!=y,z!=w", "{\"x\": \"z\", \"z\": \"a\"}", true},
    {"notin=in", "{\"notin\": \"in\"}", true},
    {"x", "{\"x\": \"z\"}", true},
    {"!x", "{\"y\": \"z\"}", true},
    {"x=z", "{}", false},
    {"x=y", "{\"x\": \"z\"}", false},
    {"x=y,z=w", "{\"x\": \"w\", \"z\": \"w\"}", false},
    {"x!=y,z!=w", "{\"x\": \"z\", \"z\": \"w\"}", false},
    {"x", "{\"y\": \"z\"}", false},
    {"!x", "{\"x\": \"z\"}", false},
    {"foo=bar", "{\"foo\": \"bar\", \"baz\": \"blah\"}", true},
    {"baz=blah", "{\"foo\": \"bar\", \"baz\": \"blah\"}", true},
    {"foo=bar,baz=blah", "{\"foo\": \"bar\", \"baz\": \"blah\"}", true},
    {"foo=blah", "{\"foo\": \"bar\", \"baz\": \"blah\"}", false},
    {"baz=bar", "{\"foo\": \"bar\", \"baz\": \"blah\"}", false},
    {"foo=bar,foobar=bar,baz=blah", "{\"foo\": \"bar\", \"baz\": \"blah\"}", false},
    /* upstream TestRequirementSelectorMatching */
    {"x in (foo),y notin (alpha)", "{\"x\": \"foo\", \"y\": \"baz\"}", true},
    {"x in (foo),y in (alpha)", "{\"x\": \"foo\", \"y\": \"baz\"}", false},
    {"x notin (),y", "{\"y\": \"\"}", true},
    {"!x,y", "{\"y\": \"\"}", true},
    {"x notin (),!y", "{\"y\": \"\"}", false},
    {"x in ()", "{\"y\": \"baz\"}", false},
    /* NotIn and != match when the key is absent; In and = do not */
    {"x notin (a)", "{}", true},
    {"x!=a", "{}", true},
    {"x in (a)", "{}", false},
    {"x=", "{}", false},
    {"x=", "{\"x\": \"\"}", true},
    {"x in (a,b)", "{\"x\": \"b\"}", true},
    {"x notin (a,b)", "{\"x\": \"b\"}", false},
    {"x notin (a,b)", "{\"x\": \"c\"}", true},
    /* a label that is no string counts as absent */
    {"x", "{\"x\": 1}", false},
    {"x!=1", "{\"x\": 1}", true},
};

static void test_matches(void **state)
{
    (void)state;
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(matches); i++) {
        struct fatia_selector *sel = must_parse(matches[i].sel);
        json_t *l = labels(matches[i].labels);

        if (fatia_selector_matches(sel, l) != matches[i].match)
            fail_msg("'%s' on %s: want %d", matches[i].sel, matches[i].labels, matches[i].match);
        fatia_selector_free(sel);
        json_decref(l);
    }
}

/* upstream TestEverything; NULL selector and NULL labels. */
static void test_empty_and_null(void **state)
{
    struct fatia_selector *sel = must_parse("");
    json_t *l = labels("{\"x\": \"y\"}"), *arr = json_array();

    (void)state;
    assert_true(fatia_selector_is_empty(sel));
    assert_true(fatia_selector_matches(sel, l));
    assert_true(fatia_selector_matches(sel, NULL));
    fatia_selector_free(sel);
    assert_false(fatia_selector_matches(NULL, l));
    assert_false(fatia_selector_is_empty(NULL));
    fatia_selector_free(NULL);
    sel = must_parse(NULL); /* NULL text is the empty selector */
    assert_true(fatia_selector_is_empty(sel));
    fatia_selector_free(sel);
    sel = must_parse("!x,y notin (a)");
    assert_false(fatia_selector_is_empty(sel));
    assert_true(fatia_selector_matches(sel, NULL)); /* no labels at all */
    assert_true(fatia_selector_matches(sel, arr));  /* not an object: no labels */
    fatia_selector_free(sel);
    json_decref(l);
    json_decref(arr);
}

static struct fatia_selector *must_json(const char *text)
{
    struct fatia_selector *sel = NULL;
    json_t *v = labels(text);
    char why[512] = "";

    if (fatia_selector_from_json(v, &sel, why, sizeof(why)) != 0)
        fail_msg("%s: %s", text, why);
    json_decref(v);
    return sel;
}

static void test_json_good(void **state)
{
    static const struct {
        const char *json, *out;
    } cases[] = {
        {"{}", ""},
        {"{\"matchLabels\": null, \"matchExpressions\": null}", ""},
        {"{\"matchLabels\": {}, \"matchExpressions\": []}", ""},
        {"{\"matchLabels\": {\"b\": \"2\", \"a\": \"1\"}}", "a=1,b=2"},
        {"{\"matchLabels\": {\"app\": \"\"}}", "app="},
        {"{\"matchExpressions\": [{\"key\": \"x\", \"operator\": \"In\", \"values\": [\"b\", "
         "\"a\"]}]}",
         "x in (b,a)"},
        {"{\"matchExpressions\": [{\"key\": \"x\", \"operator\": \"NotIn\", \"values\": [\"\"]},"
         " {\"key\": \"e\", \"operator\": \"Exists\"},"
         " {\"key\": \"d\", \"operator\": \"DoesNotExist\", \"values\": []},"
         " {\"key\": \"c\", \"operator\": \"Exists\", \"values\": null}]}",
         "c,!d,e,x notin ()"},
        {"{\"matchLabels\": {\"tier\": \"gpu\"}, \"matchExpressions\": [{\"key\": "
         "\"nvidia.com/gpu.product\", \"operator\": \"In\", \"values\": [\"NVIDIA-H200\"]}], "
         "\"unknown\": 1}",
         "nvidia.com/gpu.product in (NVIDIA-H200),tier=gpu"},
    };

    json_t *l;

    (void)state;
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(cases); i++) {
        struct fatia_selector *sel = must_json(cases[i].json);

        if (strcmp(describe(sel), cases[i].out) != 0)
            fail_msg("%s: got '%s'", cases[i].json, describe(sel));
        fatia_selector_free(sel);
    }
    /* matching through the JSON form */
    struct fatia_selector *sel = must_json(cases[7].json);
    l = labels("{\"tier\": \"gpu\", \"nvidia.com/gpu.product\": \"NVIDIA-H200\"}");
    assert_true(fatia_selector_matches(sel, l));
    json_object_set_new(l, "tier", json_string("cpu"));
    assert_false(fatia_selector_matches(sel, l));
    json_decref(l);
    fatia_selector_free(sel);
}

static void test_json_bad(void **state)
{
    static const struct {
        const char *json, *why;
    } cases[] = {
        {"[]", "must be an object"},
        {"null", "must be an object"},
        {"{\"matchLabels\": []}", "matchLabels: must be an object"},
        {"{\"matchLabels\": {\"-x\": \"a\"}}",
         "matchLabels: invalid value \"-x\": name part " QN_MSG},
        {"{\"matchLabels\": {\"x\": 1}}", "matchLabels[x]: must be a string"},
        {"{\"matchLabels\": {\"x\": \"a b\"}}", "matchLabels[x]: invalid value \"a b\": " LV_MSG},
        {"{\"matchExpressions\": {}}", "matchExpressions: must be an array"},
        {"{\"matchExpressions\": [1]}", "matchExpressions[0]: must be an object"},
        {"{\"matchExpressions\": [{\"operator\": \"Exists\"}]}",
         "matchExpressions[0].key: Required value"},
        {"{\"matchExpressions\": [{\"key\": 1, \"operator\": \"Exists\"}]}",
         "matchExpressions[0].key: must be a string"},
        {"{\"matchExpressions\": [{\"key\": \"a/b/c\", \"operator\": \"Exists\"}]}",
         "matchExpressions[0].key: invalid value \"a/b/c\": a qualified name"},
        {"{\"matchExpressions\": [{\"key\": \"x\"}]}",
         "matchExpressions[0].operator: Required value"},
        {"{\"matchExpressions\": [{\"key\": \"x\", \"operator\": 3}]}",
         "matchExpressions[0].operator: must be a string"},
        {"{\"matchExpressions\": [{\"key\": \"x\", \"operator\": \"Exists\"}, {\"key\": \"x\", "
         "\"operator\": \"Gt\", \"values\": [\"1\"]}]}",
         "matchExpressions[1].operator: \"Gt\" is not a valid label selector operator"},
        {"{\"matchExpressions\": [{\"key\": \"x\", \"operator\": \"in\", \"values\": [\"1\"]}]}",
         "matchExpressions[0].operator: \"in\" is not a valid label selector operator"},
        {"{\"matchExpressions\": [{\"key\": \"x\", \"operator\": \"In\"}]}",
         "matchExpressions[0].values: must be specified when `operator` is 'In' or 'NotIn'"},
        {"{\"matchExpressions\": [{\"key\": \"x\", \"operator\": \"NotIn\", \"values\": []}]}",
         "matchExpressions[0].values: must be specified when `operator` is 'In' or 'NotIn'"},
        {"{\"matchExpressions\": [{\"key\": \"x\", \"operator\": \"Exists\", \"values\": "
         "[\"a\"]}]}",
         "matchExpressions[0].values: may not be specified when `operator` is 'Exists' or "
         "'DoesNotExist'"},
        {"{\"matchExpressions\": [{\"key\": \"x\", \"operator\": \"DoesNotExist\", \"values\": "
         "[\"\"]}]}",
         "matchExpressions[0].values: may not be specified when `operator` is 'Exists' or "
         "'DoesNotExist'"},
        {"{\"matchExpressions\": [{\"key\": \"x\", \"operator\": \"In\", \"values\": \"a\"}]}",
         "matchExpressions[0].values: must be an array of strings"},
        {"{\"matchExpressions\": [{\"key\": \"x\", \"operator\": \"In\", \"values\": [\"a\", 2]}]}",
         "matchExpressions[0].values[1]: must be a string"},
        {"{\"matchExpressions\": [{\"key\": \"x\", \"operator\": \"In\", \"values\": [\"a\", "
         "\"b-\"]}]}",
         "matchExpressions[0].values[1]: invalid value \"b-\": " LV_MSG},
    };

    (void)state;
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(cases); i++) {
        json_error_t err;
        json_t *v = json_loads(cases[i].json, JSON_DECODE_ANY, &err);
        struct fatia_selector *sel = (struct fatia_selector *)&sel;
        char why[512] = "";

        assert_non_null(v);
        if (fatia_selector_from_json(v, &sel, why, sizeof(why)) != -EINVAL)
            fail_msg("%s compiled", cases[i].json);
        assert_true(sel == (struct fatia_selector *)&sel);
        if (strncmp(why, cases[i].why, FATIA_MIN(strlen(cases[i].why), 200)) != 0)
            fail_msg("%s: why\n  '%s', want\n  '%s'", cases[i].json, why, cases[i].why);
        assert_int_equal(fatia_selector_from_json(v, &sel, NULL, 0), -EINVAL);
        json_decref(v);
    }
    assert_int_equal(fatia_selector_from_json(NULL, &(struct fatia_selector *){NULL}, NULL, 0),
                     -EINVAL);
}

/* Every allocation failure is reported as -ENOMEM and leaks nothing (ASan checks). */
static void test_oom(void **state)
{
    static const char *const texts[] = {
        "x notin (abc,def),bar,z in (),w,!v,a=b,c!=d,e in (1,2,3,4,5,6,7,8,9)",
        "a,b,c,d,e,f,g,h,i,j",
    };
    const char *json_text =
        "{\"matchLabels\": {\"a\": \"1\", \"b\": \"2\", \"c\": \"3\", \"d\": \"4\", \"e\": "
        "\"5\"}, \"matchExpressions\": [{\"key\": \"x\", \"operator\": \"In\", \"values\": "
        "[\"a\", \"b\", \"c\"]}, {\"key\": \"y\", \"operator\": \"Exists\"}]}";
    json_t *jv = labels(json_text);

    (void)state;
    for (size_t t = 0; t < FATIA_ARRAY_SIZE(texts) + 1; t++) {
        bool done = false;

        for (uint64_t n = 1; !done && n < 1000; n++) {
            struct fatia_selector *sel = NULL;
            char why[256] = "";
            int r;

            fatia_alloc_fail_at(n, 0);
            if (t < FATIA_ARRAY_SIZE(texts))
                r = fatia_selector_parse(texts[t], &sel, why, sizeof(why));
            else
                r = fatia_selector_from_json(jv, &sel, why, sizeof(why));
            fatia_alloc_fail_at(0, 0);
            if (r == 0) {
                done = true;
                assert_non_null(sel);
                fatia_selector_free(sel);
            } else {
                assert_int_equal(r, -ENOMEM);
                assert_string_equal(why, "out of memory");
                assert_null(sel);
            }
        }
        assert_true(done);
    }
    json_decref(jv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_good),     cmocka_unit_test(test_parse_bad),
        cmocka_unit_test(test_parse_long),     cmocka_unit_test(test_matches),
        cmocka_unit_test(test_empty_and_null), cmocka_unit_test(test_json_good),
        cmocka_unit_test(test_json_bad),       cmocka_unit_test(test_oom),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
