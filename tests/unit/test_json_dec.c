/*
 * tests/unit/test_json_dec.c: base/json_dec.c's parser against jansson's json_loadb on random
 * JSON texts (every type; whitespace; every escape, \u with surrogate pairs, lone surrogates and
 * \u0000; raw valid and invalid UTF-8, control bytes, NULs; integers at and past int64's edges,
 * -0, leading zeros, reals, broken numbers; duplicate keys; deep nesting) and on truncated and
 * mutated copies of them, under the flags fatiad uses. Invariant: the same tree (json_equal and
 * the same dump, so the same key order) and the same json_error_t (text, source, line, column,
 * position), or both NULL with the same error.
 */
#include "base/compat.h"

/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "base/buf.h"
#include "base/json.h"

static uint64_t rnd_state = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

static void put(struct fatia_buf *b, const char *s)
{
    assert_int_equal(fatia_buf_append(b, s, s[0] ? strlen(s) : 1), 0); /* "": one NUL byte */
}

static void ws(struct fatia_buf *b)
{
    static const char *const w[] = {" ", "\n", "\t", "\r", "  \n  ", "\r\n"};
    if (rnd() % 4 == 0)
        put(b, w[rnd() % FATIA_ARRAY_SIZE(w)]);
}

static void gen_string(struct fatia_buf *b, bool bad)
{
    static const char *const pieces[] = {"a",
                                         "Z",
                                         "x",
                                         " ",
                                         "/",
                                         "\\\"",
                                         "\\\\",
                                         "\\/",
                                         "\\b",
                                         "\\f",
                                         "\\n",
                                         "\\r",
                                         "\\t",
                                         "\\u0041",
                                         "\\u00e9",
                                         "\\u00E9",
                                         "\\u20ac",
                                         "\\uFFFF",
                                         "\\u0001",
                                         "\\u001f",
                                         "\\u007f",
                                         "\\u0080",
                                         "\\u07ff",
                                         "\\u0800",
                                         "é",
                                         "€",
                                         "😀",
                                         "\x7f",
                                         "\\ud83d\\ude00",
                                         "\\uD83D\\uDE00",
                                         "{",
                                         "}",
                                         ",",
                                         ":",
                                         "0",
                                         "\\uDBFF\\uDFFF",
                                         "\\ud800\\udc00"};
    static const char *const wrong[] = {"\\u0000",
                                        "\\ud800",
                                        "\\udc00",
                                        "\\ud800\\u0041",
                                        "\\ud800x",
                                        "\\u12",
                                        "\\u12g4",
                                        "\\x",
                                        "\\",
                                        "\x01",
                                        "\n",
                                        "\t",
                                        "",
                                        "\xff",
                                        "\xc3",
                                        "\xc0\xaf",
                                        "\xed\xa0\x80",
                                        "\xf4\x90\x80\x80",
                                        "\xe0\x80\x80",
                                        "\xf5\x80",
                                        "\x80",
                                        "\xc3\x28",
                                        "\xf0\x9f\x98",
                                        "\xe2\x82",
                                        "\\U0041",
                                        "\"",
                                        "\x1f"};
    size_t n = rnd() % 10;

    if (rnd() % 12 == 0)
        n = 100 + rnd() % 1500; /* long runs, as an annotation */
    put(b, "\"");
    for (size_t i = 0; i < n; i++) {
        if (bad && rnd() % 48 == 0)
            put(b, wrong[rnd() % FATIA_ARRAY_SIZE(wrong)]);
        else if (n > 50 && rnd() % 8)
            put(b, "p");
        else
            put(b, pieces[rnd() % FATIA_ARRAY_SIZE(pieces)]);
    }
    put(b, "\"");
}

static void gen_number(struct fatia_buf *b, bool bad)
{
    static const char *const good[] = {"0",
                                       "-0",
                                       "1",
                                       "-1",
                                       "42",
                                       "9223372036854775807",
                                       "-9223372036854775808",
                                       "999999999999999999",
                                       "-999999999999999999",
                                       "1000000000000000000",
                                       "0.5",
                                       "-0.0",
                                       "1e5",
                                       "1E+5",
                                       "1e-5",
                                       "2.5e10",
                                       "0.1",
                                       "123456789.123456789",
                                       "1e400",
                                       "-1e400",
                                       "1e-400",
                                       "4.9e-324",
                                       "0e0",
                                       "-0E-0",
                                       "17976931348623157e292",
                                       "3.14159265358979323846264338327950288"};
    static const char *const wrong[] = {"9223372036854775808",
                                        "-9223372036854775809",
                                        "99999999999999999999",
                                        "01",
                                        "-",
                                        "-a",
                                        "1.",
                                        ".5",
                                        "1e",
                                        "1e+",
                                        "+1",
                                        "00",
                                        "1.5.3",
                                        "0x10",
                                        "1ee5",
                                        "--1",
                                        "-01",
                                        "1a"};

    if (bad && rnd() % 16 == 0)
        put(b, wrong[rnd() % FATIA_ARRAY_SIZE(wrong)]);
    else if (rnd() % 3 == 0) {
        char t[32];
        snprintf(t, sizeof(t), "%" PRId64, (int64_t)rnd());
        put(b, t);
    } else if (rnd() % 2) {
        char t[32];
        snprintf(t, sizeof(t), "%d", (int)(rnd() % 20001) - 10000);
        put(b, t);
    } else
        put(b, good[rnd() % FATIA_ARRAY_SIZE(good)]);
}

static void gen_value(struct fatia_buf *b, int depth, bool bad)
{
    unsigned t = (unsigned)(rnd() % (depth > 5 ? 6 : 9));

    ws(b);
    switch (t) {
    case 0:
    case 1:
        gen_string(b, bad);
        break;
    case 2:
        gen_number(b, bad);
        break;
    case 3: {
        static const char *const lits[] = {"true", "false", "null"};
        static const char *const wrong[] = {"tru", "True", "nul", "falsey", "nulll", "t"};
        put(b, bad && rnd() % 16 == 0 ? wrong[rnd() % FATIA_ARRAY_SIZE(wrong)]
                                      : lits[rnd() % FATIA_ARRAY_SIZE(lits)]);
        break;
    }
    case 4:
    case 5:
        if (depth > 5)
            gen_number(b, bad);
        else
            gen_string(b, bad);
        break;
    case 6: {
        size_t n = rnd() % 5;
        put(b, "[");
        for (size_t i = 0; i < n; i++) {
            if (i)
                put(b, ",");
            gen_value(b, depth + 1, bad);
        }
        if (bad && rnd() % 32 == 0)
            put(b, ",");
        ws(b);
        put(b, "]");
        break;
    }
    default: {
        static const char *const keys[] = {"\"a\"",        "\"b\"",    "\"metadata\"",      "\"\"",
                                           "\"k\\u00e9\"", "\"k\\n\"", "\"\\ud83d\\ude00\""};
        size_t n = rnd() % 6;
        put(b, "{");
        for (size_t i = 0; i < n; i++) {
            if (i)
                put(b, ",");
            ws(b);
            if (rnd() % 3 == 0)
                put(b, keys[rnd() % FATIA_ARRAY_SIZE(keys)]); /* duplicates, often */
            else
                gen_string(b, bad);
            ws(b);
            put(b, ":");
            gen_value(b, depth + 1, bad);
        }
        ws(b);
        put(b, "}");
        break;
    }
    }
    ws(b);
}

struct tally {
    unsigned fast, fallback, ok, failed;
};

static char *dump(const json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    assert_non_null(s);
    return s;
}

/* Both parsers on (p, n, flags): the same tree or the same error. */
static void check_same(const char *p, size_t n, size_t flags, struct tally *t)
{
    json_error_t ej, ef;
    json_t *want, *got, *fast;

    memset(&ej, 0x5a, sizeof(ej));
    memset(&ef, 0x5a, sizeof(ef));
    want = json_loadb(p, n, flags, &ej);
    got = fatia_json_loadb(p, n, flags, &ef);
    fast = fatia_json_loadb_fast(p, n, flags);
    if (fast) {
        t->fast++;
        assert_non_null(want); /* the fast parser succeeds only where jansson does */
        assert_true(json_equal(fast, want));
    } else
        t->fallback++;
    assert_string_equal(ef.text, ej.text);
    assert_string_equal(ef.source, ej.source);
    assert_int_equal(ef.line, ej.line);
    assert_int_equal(ef.column, ej.column);
    assert_int_equal(ef.position, ej.position);
    if (!want) {
        t->failed++;
        assert_null(got);
        assert_int_equal(json_error_code(&ef), json_error_code(&ej));
        return;
    }
    t->ok++;
    assert_non_null(got);
    assert_true(json_equal(got, want));
    {
        char *a = dump(got), *b = dump(want);
        assert_string_equal(a, b); /* the same key order too */
        free(a);
        free(b);
    }
    json_decref(want);
    json_decref(got);
    json_decref(fast);
}

static const size_t flag_sets[] = {JSON_REJECT_DUPLICATES, 0,
                                   JSON_DECODE_ANY | JSON_REJECT_DUPLICATES,
                                   JSON_DECODE_ANY | JSON_ALLOW_NUL};

static void check_all_flags(const char *p, size_t n, struct tally *t)
{
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(flag_sets); i++)
        check_same(p, n, flag_sets[i], t);
}

static void test_random_texts(void **state)
{
    struct tally t = {0};

    (void)state;
    for (int i = 0; i < 3000; i++) {
        struct fatia_buf b = FATIA_BUF_INIT;
        bool bad = i % 3 == 0;
        ws(&b);
        put(&b, "{\"v\":");
        gen_value(&b, 0, bad);
        put(&b, ",\"w\":");
        gen_value(&b, 0, false);
        put(&b, "}");
        ws(&b);
        check_all_flags(b.p, b.len, &t);
        /* a bare value (JSON_DECODE_ANY decides) */
        fatia_buf_truncate(&b, 0);
        gen_value(&b, 0, bad);
        check_all_flags(b.p, b.len, &t);
        fatia_buf_release(&b);
    }
    print_message("random: %u fast, %u fallback, %u parsed, %u errors\n", t.fast, t.fallback, t.ok,
                  t.failed);
    assert_true(t.fast > t.fallback);  /* the fast path is the common one */
    assert_true(t.failed > t.ok / 20); /* and errors are exercised */
}

static void test_mutated_texts(void **state)
{
    static const char alphabet[] = "{}[]\",:\\ \n0-1.eE+tfnu\x01\x80\xc3\xff";
    struct tally t = {0};

    (void)state;
    for (int i = 0; i < 3000; i++) {
        struct fatia_buf b = FATIA_BUF_INIT;
        char *m;
        size_t n, at;
        put(&b, "{\"v\":");
        gen_value(&b, 0, false);
        put(&b, "}");
        n = b.len;
        m = malloc(n + 8);
        assert_non_null(m);
        /* every prefix of a short text, some of a long one */
        for (size_t cut = 0; cut < n; cut += n < 64 ? 1 : 1 + rnd() % (n / 8))
            check_same(b.p, cut, JSON_REJECT_DUPLICATES, &t);
        for (int k = 0; k < 8; k++) {
            memcpy(m, b.p, n);
            at = rnd() % n;
            switch (rnd() % 3) {
            case 0: /* replace */
                m[at] = alphabet[rnd() % (sizeof(alphabet) - 1)];
                check_all_flags(m, n, &t);
                break;
            case 1: /* delete */
                memmove(m + at, m + at + 1, n - at - 1);
                check_all_flags(m, n - 1, &t);
                break;
            default: /* insert */
                memmove(m + at + 1, m + at, n - at);
                m[at] = alphabet[rnd() % (sizeof(alphabet) - 1)];
                check_all_flags(m, n + 1, &t);
                break;
            }
        }
        free(m);
        fatia_buf_release(&b);
    }
    print_message("mutated: %u fast, %u fallback, %u parsed, %u errors\n", t.fast, t.fallback, t.ok,
                  t.failed);
    assert_true(t.failed > 1000);
}

static void test_shapes(void **state)
{
    struct tally t = {0};
    static const char *const texts[] = {"{}",
                                        "[]",
                                        " { } ",
                                        "{\"a\":1,\"a\":2}",
                                        "{\"a\":{\"b\":1},\"a\":[]}",
                                        "[1,2,]",
                                        "{,}",
                                        "{\"a\" 1}",
                                        "{\"a\":1 \"b\":2}",
                                        "{\"a\":}",
                                        "[1 2]",
                                        "[",
                                        "{",
                                        "{\"a\"",
                                        "\"\"",
                                        "1",
                                        "-0",
                                        "[-0]",
                                        "[-0.0]",
                                        "[1e400]",
                                        "[1e-400]",
                                        "[9223372036854775807]",
                                        "[-9223372036854775808]",
                                        "[9223372036854775808]",
                                        "[-9223372036854775809]",
                                        "[1234567890123456789]",
                                        "[12345678901234567890]",
                                        "[01]",
                                        "[1.]",
                                        "[.1]",
                                        "[1e]",
                                        "[true,false,null]",
                                        "[truex]",
                                        "[true1]",
                                        "[nul]",
                                        "{\"\\u0000\":1}",
                                        "[\"\\u0000\"]",
                                        "[\"a\\u0000b\"]",
                                        "{\"k\":\"\\ud83d\\ude00\"}",
                                        "[\"\\udc00\"]",
                                        "[\"\\ud800\"]",
                                        "[\"\\ud800\\u0041\"]",
                                        "[\"\\uD800\\uDBFF\"]",
                                        "[\"\xed\xa0\x80\"]",
                                        "[\"\xc0\xaf\"]",
                                        "[\"\xf4\x8f\xbf\xbf\"]",
                                        "[\"\xf4\x90\x80\x80\"]",
                                        "[\"\xef\xbb\xbf\"]",
                                        "\xef\xbb\xbf[]",
                                        "[] x",
                                        "[] []",
                                        "[]\n\n",
                                        "\n[\n1\n,\n\"\x01\"]",
                                        "[\"tab\there\"]",
                                        "[\"\x7f\"]",
                                        "  ",
                                        ""};

    (void)state;
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(texts); i++) {
        check_all_flags(texts[i], strlen(texts[i]), &t);
    }
    check_all_flags("{\"a\":1}\0", 8, &t); /* a NUL after the value */
    check_all_flags("[\"a\0b\"]", 7, &t);  /* a raw NUL in a string */
    /* a NULL buffer: jansson's "wrong arguments" */
    {
        json_error_t e;
        assert_null(fatia_json_loadb(NULL, 0, 0, &e));
        assert_string_equal(e.text, "wrong arguments");
    }
    /* other flags: jansson itself */
    check_same("[1.5]", 5, JSON_DECODE_INT_AS_REAL, &t);
    check_same("[1] x", 5, JSON_DISABLE_EOF_CHECK, &t);
    /* nesting at and around the parser's depth (512) and jansson's (2,048) */
    {
        static const int depths[] = {511, 512, 513, 2047, 2048, 2049};
        for (size_t k = 0; k < FATIA_ARRAY_SIZE(depths); k++) {
            struct fatia_buf b = FATIA_BUF_INIT;
            for (int i = 0; i < depths[k]; i++)
                put(&b, i % 2 ? "{\"k\":" : "[");
            put(&b, "1");
            for (int i = depths[k] - 1; i >= 0; i--)
                put(&b, i % 2 ? "}" : "]");
            check_all_flags(b.p, b.len, &t);
            fatia_buf_release(&b);
        }
    }
    /* a body of the bench's shape: the fast path */
    {
        struct fatia_buf b = FATIA_BUF_INIT;
        json_t *v;
        put(&b, "{\"apiVersion\":\"kueue.x-k8s.io/v1beta1\",\"kind\":\"LocalQueue\",\"metadata\":{"
                "\"name\":\"q-1\",\"namespace\":\"bench\",\"annotations\":{\"pad\":\"");
        for (int i = 0; i < 1800; i++)
            put(&b, "x");
        put(&b, "\"}},\"spec\":{\"clusterQueue\":\"cq\"}}");
        v = fatia_json_loadb_fast(b.p, b.len, JSON_REJECT_DUPLICATES);
        assert_non_null(v);
        json_decref(v);
        check_all_flags(b.p, b.len, &t);
        fatia_buf_release(&b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_texts),
        cmocka_unit_test(test_mutated_texts),
        cmocka_unit_test(test_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
