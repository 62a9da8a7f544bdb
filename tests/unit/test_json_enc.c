/*
 * tests/unit/test_json_enc.c: base/json_enc.c's encoder against jansson's json_dumpb, byte for
 * byte, on random trees (every type, keys and strings with quotes, backslashes, control bytes,
 * NULs, DEL, '/', valid and invalid UTF-8, deep nesting) and the flags fatiad uses.
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
#include "base/json.h"

static uint64_t rnd_state = 88172645463325252ull;

static uint64_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

static size_t rand_bytes(char *out, size_t cap, bool allow_bad_utf8)
{
    static const char *const pieces[] = {"a",
                                         "Z",
                                         "\"",
                                         "\\",
                                         "/",
                                         "\n",
                                         "\t",
                                         "\b",
                                         "\f",
                                         "\r",
                                         "\x01",
                                         "\x1f",
                                         "\x7f",
                                         " ",
                                         "é",
                                         "€",
                                         "😀",
                                         "x",
                                         "0",
                                         "{",
                                         "}",
                                         "\\u0000",
                                         "\x00",
                                         "\x00"
                                         "b"};
    static const char *const bad[] = {"\xff", "\xc3", "\xed\xa0\x80", "\xc0\xaf",
                                      "\xf4\x90\x80\x80"};
    size_t n = 0, want = rnd() % 12;

    if (rnd() % 16 == 0)
        want = 200 + rnd() % 2000; /* long runs, as the bench's pad */
    for (size_t i = 0; i < want; i++) {
        const char *p;
        size_t len;
        if (allow_bad_utf8 && rnd() % 64 == 0)
            p = bad[rnd() % FATIA_ARRAY_SIZE(bad)];
        else if (want > 100 && rnd() % 8)
            p = "x";
        else
            p = pieces[rnd() % FATIA_ARRAY_SIZE(pieces)];
        len = p[0] ? strlen(p) : 1; /* "\x00": one NUL byte */
        if (n + len >= cap)
            break;
        memcpy(out + n, p, len);
        n += len;
    }
    return n;
}

static json_t *rand_tree(int depth, bool bad_utf8)
{
    char s[4096];
    size_t n;
    unsigned t = (unsigned)(rnd() % (depth > 6 ? 6 : 8));

    switch (t) {
    case 0:
        n = rand_bytes(s, sizeof(s), bad_utf8);
        return json_stringn_nocheck(s, n);
    case 1:
        return json_integer(
            (json_int_t)(rnd() % 3 == 0 ? (int64_t)rnd() : (int64_t)(rnd() % 2000) - 1000));
    case 2: {
        double d[] = {0.1, 1e300, -2.5, 3.0, 1.0 / 3.0, 123456789.123456789, 0.0};
        return json_real(d[rnd() % FATIA_ARRAY_SIZE(d)]);
    }
    case 3:
        return rnd() % 3 == 0 ? json_true() : rnd() % 2 ? json_false() : json_null();
    case 4:
    case 5: {
        json_t *a = json_array();
        for (size_t i = 0, m = rnd() % 5; i < m; i++)
            json_array_append_new(a, rand_tree(depth + 1, bad_utf8));
        return a;
    }
    default: {
        json_t *o = json_object();
        for (size_t i = 0, m = rnd() % 6; i < m; i++) {
            n = rand_bytes(s, 64, false); /* invalid keys: test_shapes */
            json_object_setn_new_nocheck(o, s, n, rand_tree(depth + 1, bad_utf8));
        }
        return o;
    }
    }
}

/* Both encoders on v with flags: the same result, or both fail. */
static void check_same(const json_t *v, size_t flags)
{
    struct fatia_buf b;
    char *want = NULL;
    size_t wn = json_dumpb(v, NULL, 0, flags);
    int r;

    if (wn) {
        want = malloc(wn);
        assert_non_null(want);
        assert_int_equal(json_dumpb(v, want, wn, flags), wn);
    }
    fatia_buf_init(&b, 0);
    assert_int_equal(fatia_buf_puts(&b, "pre"), 0);
    r = fatia_json_encode_compact(v, &b, flags);
    if (!wn) {
        assert_int_equal(r, -ENOMEM);
        assert_int_equal(b.len, 3); /* left as it was */
    } else {
        assert_int_equal(r, 0);
        assert_int_equal(b.len - 3, wn);
        assert_memory_equal(b.p + 3, want, wn);
    }
    free(want);
    fatia_buf_release(&b);
}

static void test_random_trees(void **state)
{
    (void)state;
    for (int i = 0; i < 4000; i++) {
        json_t *obj = json_object();
        json_object_set_new(obj, "v", rand_tree(0, i % 4 == 0));
        json_object_set_new(obj, "w", rand_tree(0, false));
        check_same(obj, JSON_COMPACT);
        check_same(obj, JSON_COMPACT | JSON_REAL_PRECISION(15));
        check_same(obj, JSON_COMPACT | JSON_REAL_PRECISION(3));
        check_same(json_object_get(obj, "v"), JSON_COMPACT);
        json_decref(obj);
    }
}

static void test_shapes(void **state)
{
    json_t *deep = json_array(), *cur = deep;

    (void)state;
    /* scalars at the top, other flags: jansson decides */
    {
        json_t *str = json_string("x"), *num = json_integer(5);
        check_same(str, JSON_COMPACT);
        check_same(num, JSON_COMPACT | JSON_ENCODE_ANY);
        json_decref(str);
        json_decref(num);
    }
    {
        json_t *o = json_pack("{s:s,s:[i,f,b,n],s:{}}", "a/b", "c\"d\\e\x01", "l", 1, 0.1, 1, "e");
        check_same(o, JSON_COMPACT);
        check_same(o, JSON_COMPACT | JSON_SORT_KEYS);
        check_same(o, JSON_COMPACT | JSON_ESCAPE_SLASH);
        check_same(o, JSON_COMPACT | JSON_ENSURE_ASCII);
        check_same(o, 0);
        json_decref(o);
    }
    /* a key of invalid UTF-8 (only json_object_setn_nocheck makes one): jansson ignores its
     * own failure there and writes broken JSON ({":true}); the encoder refuses instead */
    {
        json_t *o = json_object();
        struct fatia_buf b;
        json_object_setn_new_nocheck(o, "\xff", 1, json_true());
        fatia_buf_init(&b, 0);
        assert_int_equal(fatia_json_encode_compact(o, &b, JSON_COMPACT), -ENOMEM);
        assert_int_equal(b.len, 0);
        fatia_buf_release(&b);
        json_decref(o);
    }
    /* nesting past the encoder's own depth: the rest by jansson, the same bytes */
    for (int i = 0; i < 1000; i++) {
        json_t *n = json_array();
        json_array_append_new(cur, n);
        cur = n;
    }
    json_array_append_new(cur, json_string("bottom\n"));
    check_same(deep, JSON_COMPACT);
    json_decref(deep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_trees),
        cmocka_unit_test(test_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
