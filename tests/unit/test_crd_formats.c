/*
 * tests/unit/test_crd_formats.c: the strfmt formats of apiserver/crd_formats.c. The samples of
 * kube-openapi pkg/validation/strfmt/default_test.go @8928e531 (TestFormatURI, TestFormatISBN,
 * TestFormatISBN10, TestFormatISBN13, TestFormatHexColor, TestFormatRGBColor, TestFormatSSN,
 * TestFormatCreditCard: the value, the "with" string, and the invalid samples), then cases of Go's
 * url.ParseRequestURI and govalidator's patterns that those tests leave out (each commented).
 */
#include "base/compat.h"

/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "apiserver/internal.h"

struct sample {
    const char *fmt, *s;
    int want;
};

static const struct sample upstream[] = {
    /* TestFormatURI */
    {"uri", "http://somewhere.com", 1},
    {"uri", "http://somewhereelse.com", 1},
    {"uri", "somewhere.com", 0},
    /* TestFormatISBN / ISBN10 / ISBN13 */
    {"isbn", "0321751043", 1},
    {"isbn", "836217463", 0},
    {"isbn10", "0321751043", 1},
    {"isbn10", "836217463", 0},
    {"isbn13", "978-0321751041", 1},
    {"isbn13", "978-0321751042", 0},
    /* TestFormatHexColor */
    {"hexcolor", "#FFFFFF", 1},
    {"hexcolor", "#000000", 1},
    {"hexcolor", "#fffffffz", 0},
    /* TestFormatRGBColor */
    {"rgbcolor", "rgb(255,255,255)", 1},
    {"rgbcolor", "rgb(0,0,0)", 1},
    {"rgbcolor", "rgb(300,0,0)", 0},
    /* TestFormatSSN */
    {"ssn", "111-11-1111", 1},
    {"ssn", "999 99 9999", 1},
    {"ssn", "999 99 999", 0},
    /* TestFormatCreditCard */
    {"creditcard", "4111-1111-1111-1111", 1},
    {"creditcard", "4012-8888-8888-1881", 1},
    {"creditcard", "9999-9999-9999-999", 0},
};

static const struct sample more[] = {
    /* url.ParseRequestURI: "*", absolute paths, opaque URIs, ports, escapes, control bytes */
    {"uri", "*", 1},
    {"uri", "/a/b?c=d", 1},
    {"uri", "urn:isbn:0451450523", 1},
    {"uri", "http://[::1]:8080/x", 1},
    {"uri", "http://h:80a/", 0},
    {"uri", "http://h/%zz", 0},
    {"uri", "a b", 0},
    {"uri", "", 0},
    {"uri", ":foo", 0},
    {"uri", "http://h/\x01", 0},
    /* isbn: X as the check digit, spaces; isbn is either */
    {"isbn10", "0-8044-2957-X", 1},
    {"isbn", "978-0321751041", 1},
    {"isbn13", "0321751043", 0},
    /* hexcolor without '#', three digits; rgbcolor spaces, leading zero */
    {"hexcolor", "fff", 1},
    {"hexcolor", "#ffff", 0},
    {"rgbcolor", "rgb( 1 , 22 , 255 )", 1},
    {"rgbcolor", "rgb(01,0,0)", 0},
    {"rgbcolor", "rgb(0,0,0) ", 0},
    /* ssn: length 11 exactly */
    {"ssn", "111111111", 0},
    {"ssn", "111-111111", 0},
    /* creditcard: Luhn, Amex length */
    {"creditcard", "4111111111111112", 0},
    {"creditcard", "378282246310005", 1},
    /* not one of this file's: left to the caller (bsonobjectid is not in kube-openapi's registry) */
    {"bsonobjectid", "zz", -1},
    {"password", "", -1},
};

static void check(const struct sample *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int got = fatia_api_crd_format(v[i].fmt, v[i].s);
        if (got != v[i].want)
            fail_msg("%s %s: got %d, want %d", v[i].fmt, v[i].s, got, v[i].want);
    }
}

static void test_upstream(void **state)
{
    (void)state;
    check(upstream, sizeof(upstream) / sizeof(upstream[0]));
}

static void test_more(void **state)
{
    (void)state;
    check(more, sizeof(more) / sizeof(more[0]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_upstream),
        cmocka_unit_test(test_more),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
