/*
 * tests/unit/test_doc.c: YAML/JSON loading with positions, scalar resolution as kubectl reads
 * YAML, limits, List expansion, and YAML output round trips.
 */
#include "base/compat.h"

/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "base/buf.h"
#include "base/error.h"
#include "model/doc.h"

static json_t *parse1(const char *text)
{
    json_t *v = NULL;
    char why[256];

    assert_int_equal(fatia_yaml_parse(text, strlen(text), &v, why, sizeof(why)), 0);
    return v;
}

static void test_scalars(void **state)
{
    static const struct {
        const char *yaml;
        json_type type;
        const char *text; /* for strings */
    } cases[] = {
        {"a: ~", JSON_NULL, NULL},          {"a:", JSON_NULL, NULL},
        {"a: null", JSON_NULL, NULL},       {"a: true", JSON_TRUE, NULL},
        {"a: yes", JSON_TRUE, NULL},        {"a: On", JSON_TRUE, NULL},
        {"a: n", JSON_FALSE, NULL},         {"a: FALSE", JSON_FALSE, NULL},
        {"a: 12", JSON_INTEGER, NULL},      {"a: -0x1f", JSON_INTEGER, NULL},
        {"a: 0o17", JSON_INTEGER, NULL},    {"a: 1_000", JSON_INTEGER, NULL},
        {"a: 1.5", JSON_REAL, NULL},        {"a: 1e3", JSON_REAL, NULL},
        {"a: .5", JSON_REAL, NULL},         {"a: \"12\"", JSON_STRING, "12"},
        {"a: '1.5'", JSON_STRING, "1.5"},   {"a: 12Gi", JSON_STRING, "12Gi"},
        {"a: 100m", JSON_STRING, "100m"},   {"a: \"true\"", JSON_STRING, "true"},
        {"a: !!str 42", JSON_STRING, "42"}, {"a: 0x", JSON_STRING, "0x"},
        {"a: 1.2.3", JSON_STRING, "1.2.3"}, {"a: 99999999999999999999", JSON_REAL, NULL},
    };

    (void)state;

    for (size_t i = 0; i < FATIA_ARRAY_SIZE(cases); i++) {
        json_t *root = parse1(cases[i].yaml);
        json_t *a = json_object_get(root, "a");
        if (!a || json_typeof(a) != cases[i].type)
            fail_msg("'%s': got %s", cases[i].yaml, a ? "another type" : "nothing");
        if (cases[i].text)
            assert_string_equal(json_string_value(a), cases[i].text);
        json_decref(root);
    }
}

static void test_integer_values(void **state)
{
    json_t *root = parse1("{a: -0x1f, b: 0o17, c: 010, d: 1_000, e: 9223372036854775807}");
    (void)state;

    assert_int_equal(json_integer_value(json_object_get(root, "a")), -31);
    assert_int_equal(json_integer_value(json_object_get(root, "b")), 15);
    assert_int_equal(json_integer_value(json_object_get(root, "c")), 8);
    assert_int_equal(json_integer_value(json_object_get(root, "d")), 1000);
    assert_true(json_integer_value(json_object_get(root, "e")) == INT64_MAX);
    json_decref(root);
}

static void test_positions(void **state)
{
    static const char text[] = "apiVersion: v1\n"
                               "kind: Pod\n"
                               "metadata:\n"
                               "  name: x\n"
                               "spec:\n"
                               "  containers:\n"
                               "  - name: main\n"
                               "    image: busybox\n"
                               "---\n"
                               "apiVersion: v1\n"
                               "kind: Namespace\n"
                               "metadata: {name: y}\n";
    struct fatia_docset set;
    struct fatia_diag diag;
    struct fatia_srcpos pos;
    json_t *ctrs, *c0;
    (void)state;

    fatia_docset_init(&set);
    fatia_diag_init(&diag);
    assert_int_equal(fatia_docset_load_buf(&set, "mem.yaml", text, strlen(text), &diag), 0);
    assert_int_equal(set.n, 2);
    assert_int_equal(set.docs[1].index, 1);
    ctrs = json_object_get(json_object_get(set.docs[0].root, "spec"), "containers");
    c0 = json_array_get(ctrs, 0);
    assert_true(fatia_srcmap_member(set.map, c0, "image", 0, &pos));
    assert_int_equal(pos.line, 8);
    assert_int_equal(pos.col, 12);
    assert_true(fatia_srcmap_member(set.map, ctrs, NULL, 0, &pos));
    assert_int_equal(pos.line, 7);
    /* a collection member points at its key */
    assert_true(fatia_srcmap_member(set.map, set.docs[0].root, "spec", 0, &pos));
    assert_int_equal(pos.line, 5);
    assert_int_equal(pos.col, 1);
    fatia_diag_release(&diag);
    fatia_docset_release(&set);
}

static void expect_error(const char *text, const char *substring, uint32_t line)
{
    struct fatia_docset set;
    struct fatia_diag diag;

    fatia_docset_init(&set);
    fatia_diag_init(&diag);
    assert_int_equal(fatia_docset_load_buf(&set, "bad.yaml", text, strlen(text), &diag),
                     -FATIA_E_PARSE);
    assert_int_equal(diag.n_errors, 1);
    if (!strstr(diag.v[0].msg, substring))
        fail_msg("'%s': message '%s' lacks '%s'", text, diag.v[0].msg, substring);
    assert_int_equal(diag.v[0].line, line);
    fatia_diag_release(&diag);
    fatia_docset_release(&set);
}

static void test_errors(void **state)
{
    (void)state;
    expect_error("a: 1\na: 2\n", "duplicate key \"a\" (first defined at line 1)", 2);
    expect_error("a: [1, 2\n", "", 2);
    expect_error("a: *nope\n", "unknown anchor 'nope'", 1);
    expect_error("a: .inf\n", "cannot be represented in JSON", 1);
    expect_error("? [a]\n: 1\n", "mapping keys must be scalars", 1);
    expect_error("- 1\n- 2\n", "a manifest must be a mapping", 1);
    expect_error("a: !!int x1\n", "cannot read \"x1\" as int", 1);
}

static void test_billion_laughs(void **state)
{
    struct fatia_buf b = FATIA_BUF_INIT;
    struct fatia_docset set;
    struct fatia_diag diag;
    (void)state;

    fatia_buf_puts(&b, "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for (int i = 1; i < 12; i++)
        fatia_buf_printf(&b, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i,
                         i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
    fatia_docset_init(&set);
    fatia_diag_init(&diag);
    assert_int_equal(fatia_docset_load_buf(&set, "laughs.yaml", b.p, b.len, &diag), -FATIA_E_PARSE);
    assert_non_null(strstr(diag.v[0].msg, "expand"));
    fatia_diag_release(&diag);
    fatia_docset_release(&set);
    fatia_buf_release(&b);
}

static void test_deep_nesting(void **state)
{
    struct fatia_buf b = FATIA_BUF_INIT;
    json_t *v = NULL;
    char why[256];
    (void)state;

    for (int i = 0; i < 1000; i++)
        fatia_buf_putc(&b, '[');
    assert_int_equal(fatia_yaml_parse(b.p, b.len, &v, why, sizeof(why)), -FATIA_E_PARSE);
    fatia_buf_release(&b);
}

static void test_list_and_json(void **state)
{
    static const char list[] = "{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [\n"
                               "  {\"kind\": \"Namespace\", \"metadata\": {\"name\": \"a\"}},\n"
                               "  {\"kind\": \"Namespace\", \"metadata\": {\"name\": \"b\"}}]}\n";
    struct fatia_docset set;
    struct fatia_diag diag;
    (void)state;

    fatia_docset_init(&set);
    fatia_diag_init(&diag);
    assert_int_equal(fatia_docset_load_buf(&set, "list.json", list, strlen(list), &diag), 0);
    assert_int_equal(set.n, 2);
    assert_int_equal(set.docs[1].pos.line, 3);
    fatia_diag_release(&diag);
    fatia_docset_release(&set);
}

static void test_empty_docs_skipped(void **state)
{
    static const char text[] = "---\n---\n# comment only\n---\na: 1\n---\n";
    struct fatia_docset set;
    struct fatia_diag diag;
    (void)state;

    fatia_docset_init(&set);
    fatia_diag_init(&diag);
    assert_int_equal(fatia_docset_load_buf(&set, "e.yaml", text, strlen(text), &diag), 0);
    assert_int_equal(set.n, 1);
    fatia_diag_release(&diag);
    fatia_docset_release(&set);
}

static void test_dump_round_trip(void **state)
{
    static const char *const inputs[] = {
        "{\"a\": \"true\", \"b\": \"12\", \"c\": \"\", \"d\": \"null\", \"e\": \"yes\"}",
        "{\"n\": 1.5, \"i\": -3, \"t\": true, \"z\": null, \"s\": \"hello world\", \"r\": 2.0}",
        "{\"l\": [1, \"2\", {\"k\": [\"x: y\", \"- z\", \"#c\"]}], \"m\": \"a\\nb\\n\"}",
        "{\"weird key: x\": \"v\", \"123\": \"w\", \"nvidia.com/gpu\": \"8\"}",
    };
    (void)state;

    for (size_t i = 0; i < FATIA_ARRAY_SIZE(inputs); i++) {
        json_t *orig = json_loads(inputs[i], 0, NULL), *back = NULL;
        struct fatia_buf b = FATIA_BUF_INIT;
        char why[256];
        assert_non_null(orig);
        assert_int_equal(fatia_yaml_dump(orig, &b), 0);
        if (fatia_yaml_parse(b.p, b.len, &back, why, sizeof(why)) < 0)
            fail_msg("cannot re-read:\n%s\n%s", b.p, why);
        if (!json_equal(orig, back))
            fail_msg("round trip differs:\n%s", b.p);
        json_decref(orig);
        json_decref(back);
        fatia_buf_release(&b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scalars),         cmocka_unit_test(test_integer_values),
        cmocka_unit_test(test_positions),       cmocka_unit_test(test_errors),
        cmocka_unit_test(test_billion_laughs),  cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_list_and_json),   cmocka_unit_test(test_empty_docs_skipped),
        cmocka_unit_test(test_dump_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
