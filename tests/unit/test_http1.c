/*
 * tests/unit/test_http1.c: the one HTTP/1.1 module (http/http1.c) that the API server, the
 * gateway, engine-sim and the gateway's upstream client share: request and response heads, the
 * RFC 9112 strictness a request smuggler would probe (conflicting Content-Length, transfer
 * codings other than exactly chunked, bare LF in the chunked framing), the chunked decoder's
 * split invariance (every split and byte by byte give what whole input gives), and the one
 * reason-phrase table.
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
#include "http/http1.h"

static bool sv(struct fatia_str s, const char *z)
{
    return fatia_str_eqz(s, z);
}

static void test_request_head(void **state)
{
    static const char req[] = "POST /v1/completions HTTP/1.1\r\nHost: a\r\n"
                              "Content-Length: 12\r\nX-Y:  spaced value \t\r\n\r\n{\"a\":1}....";
    struct fatia_http_head h;
    int n;

    (void)state;
    n = fatia_http_parse_request(req, sizeof(req) - 1, &h);
    assert_int_equal(n, (int)(strstr(req, "{") - req));
    assert_true(sv(h.method, "POST"));
    assert_true(sv(h.target, "/v1/completions"));
    assert_int_equal(h.minor, 1);
    assert_int_equal(h.content_length, 12);
    assert_int_equal(h.n_headers, 3);
    assert_true(sv(*fatia_http_header_get(&h, "x-y"), "spaced value"));
    assert_true(h.flags & FATIA_HTTP_KEEP_ALIVE);
    assert_false(h.flags & FATIA_HTTP_HOP_BY_HOP);
    assert_null(fatia_http_header_get(&h, "nope"));
    /* every prefix of the head is incomplete */
    for (size_t i = 0; i < (size_t)n; i++)
        assert_int_equal(fatia_http_parse_request(req, i, &h), -EAGAIN);
}

static void test_request_flags(void **state)
{
    struct fatia_http_head h;

    (void)state;
    assert_true(fatia_http_parse_request("GET / HTTP/1.0\r\n\r\n", 18, &h) > 0);
    assert_false(h.flags & FATIA_HTTP_KEEP_ALIVE);
    assert_true(fatia_http_parse_request("GET / HTTP/1.0\nConnection: Keep-Alive\n\n", 39, &h) > 0);
    assert_true(h.flags & FATIA_HTTP_KEEP_ALIVE);
    assert_true(h.flags & FATIA_HTTP_HOP_BY_HOP);
    assert_true(fatia_http_parse_request("GET / HTTP/1.1\r\nConnection: x, close\r\n\r\n", 41, &h) >
                0);
    assert_false(h.flags & FATIA_HTTP_KEEP_ALIVE);
    assert_true(fatia_http_parse_request("POST / HTTP/1.1\r\nExpect: 100-continue\r\n"
                                         "Content-Length: 5\r\n\r\n",
                                         61, &h) > 0);
    assert_true(h.flags & FATIA_HTTP_EXPECT_100);
    assert_true(fatia_http_parse_request("\r\nGET /x HTTP/1.1\r\n\r\n", 21, &h) > 0);
    assert_true(sv(h.target, "/x"));
}

static void test_request_errors(void **state)
{
    static const struct {
        const char *text;
        int err;
    } bad[] = {
        {"GET / HTTP/2.0\r\n\r\n", -FATIA_E_PARSE},
        {"GET  / HTTP/1.1\r\n\r\n", -FATIA_E_PARSE},
        {"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", -FATIA_E_PARSE},
        {"GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", -FATIA_E_PARSE},
        {"GET / HTTP/1.1\r\nA: b\x01\r\n\r\n", -FATIA_E_PARSE},
        {"GET / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", -FATIA_E_PARSE},
        {"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", -FATIA_E_PARSE},
        {"GET / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
         -FATIA_E_PARSE},
        {"GET / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", -FATIA_E_UNSUPPORTED},
        {"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", -FATIA_E_UNSUPPORTED},
        {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", -FATIA_E_UNSUPPORTED},
        {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
         -FATIA_E_UNSUPPORTED},
        {"POST / HTTP/1.1\r\nTransfer-Encoding: identity\r\n\r\n", -FATIA_E_UNSUPPORTED},
        {"POST / HTTP/1.1\r\nTransfer-Encoding:\r\n\r\n", -FATIA_E_UNSUPPORTED},
        {"POST / HTTP/1.1\r\nContent-Length: 1, 2\r\n\r\n", -FATIA_E_PARSE},
        {"POST / HTTP/1.1\r\nContent-Length: 1, 1\r\n\r\n", -FATIA_E_PARSE},
        {"POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\n", -FATIA_E_PARSE},
        {"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", -FATIA_E_PARSE},
        {"POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 20\r\n\r\n", -FATIA_E_PARSE},
        {"POST / HTTP/1.1\r\nContent-Length : 2\r\n\r\n", -FATIA_E_PARSE},
        {"G\x01T / HTTP/1.1\r\n\r\n", -FATIA_E_PARSE},
        {"GET /a\x7f HTTP/1.1\r\n\r\n", -FATIA_E_PARSE},
    };
    struct fatia_http_head h;
    struct fatia_buf many = FATIA_BUF_INIT;

    (void)state;
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(bad); i++) {
        int r = fatia_http_parse_request(bad[i].text, strlen(bad[i].text), &h);
        if (r != bad[i].err)
            fail_msg("case %zu: got %d, want %d", i, r, bad[i].err);
    }
    fatia_buf_puts(&many, "GET / HTTP/1.1\r\n");
    for (int i = 0; i < FATIA_HTTP_MAX_HEADERS + 1; i++)
        fatia_buf_printf(&many, "H%d: v\r\n", i);
    fatia_buf_puts(&many, "\r\n");
    assert_int_equal(fatia_http_parse_request(many.p, many.len, &h), -FATIA_E_LIMIT);
    /* a head that never ends is refused once it passes the bound */
    fatia_buf_reset(&many);
    fatia_buf_puts(&many, "GET / HTTP/1.1\r\nX: ");
    while (many.len <= FATIA_HTTP_MAX_HEAD)
        fatia_buf_putc(&many, 'a');
    assert_int_equal(fatia_http_parse_request(many.p, many.len, &h), -FATIA_E_LIMIT);
    fatia_buf_release(&many);
}

static void test_response_head(void **state)
{
    static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                             "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n";
    struct fatia_http_head h;
    int n;

    (void)state;
    n = fatia_http_parse_response(ok, sizeof(ok) - 1, false, &h);
    assert_int_equal(n, (int)(strstr(ok, "5\r\n") - ok));
    assert_int_equal(h.status, 200);
    assert_true(sv(h.reason, "OK"));
    assert_true(h.flags & FATIA_HTTP_CHUNKED);
    assert_int_equal(h.first_line_len, 17);
    assert_true(fatia_http_parse_response("HTTP/1.1 204 No Content\r\n\r\n", 27, false, &h) > 0);
    assert_true(h.flags & FATIA_HTTP_NO_BODY);
    assert_true(
        fatia_http_parse_response("HTTP/1.1 200\r\nContent-Length: 3\r\n\r\n", 36, true, &h) > 0);
    assert_true(h.flags & FATIA_HTTP_NO_BODY);
    assert_int_equal(h.content_length, 3);
    assert_true(fatia_http_parse_response("HTTP/1.1 100 Continue\r\n\r\n", 25, false, &h) > 0);
    assert_int_equal(h.status, 100);
    assert_int_equal(fatia_http_parse_response("HTTP/1.1 20 OK\r\n\r\n", 18, false, &h),
                     -FATIA_E_PARSE);
    assert_int_equal(fatia_http_parse_response("HTTP/1.1 099 X\r\n\r\n", 18, false, &h),
                     -FATIA_E_PARSE);
}

struct collect {
    struct fatia_buf b;
};

static void collect_cb(void *ud, const char *p, size_t n)
{
    fatia_buf_append(&((struct collect *)ud)->b, p, n);
}

/* Decodes text fed in pieces of at most `step` bytes; returns bytes consumed in all. */
static ssize_t dechunk(const char *text, size_t n, size_t step, struct fatia_buf *out, bool *done)
{
    struct fatia_http_chunked c;
    struct collect col;
    size_t off = 0;

    fatia_buf_init(&col.b, 0);
    fatia_http_chunked_init(&c);
    while (off < n && !fatia_http_chunked_done(&c)) {
        size_t len = n - off < step ? n - off : step;
        ssize_t r = fatia_http_chunked_feed(&c, text + off, len, collect_cb, &col);
        if (r < 0) {
            fatia_buf_release(&col.b);
            return r;
        }
        off += (size_t)r;
        if ((size_t)r < len)
            break;
    }
    *done = fatia_http_chunked_done(&c);
    fatia_buf_reset(out);
    fatia_buf_append(out, col.b.p, col.b.len);
    fatia_buf_release(&col.b);
    return (ssize_t)off;
}

static void test_chunked(void **state)
{
    static const char text[] = "5\r\nhello\r\n1a;ext=1\r\n abcdefghijklmnopqrstuvwxy\r\n"
                               "0\r\nTrailer: x\r\n\r\nNEXT";
    struct fatia_buf out = FATIA_BUF_INIT;
    bool done;
    ssize_t whole;

    (void)state;
    whole = dechunk(text, sizeof(text) - 1, SIZE_MAX, &out, &done);
    assert_true(done);
    assert_int_equal(whole, (ssize_t)(sizeof(text) - 1 - 4)); /* "NEXT" is not ours */
    assert_string_equal(out.p, "hello abcdefghijklmnopqrstuvwxy");
    for (size_t step = 1; step < sizeof(text); step++) {
        struct fatia_buf o2 = FATIA_BUF_INIT;
        bool d2;
        assert_int_equal(dechunk(text, sizeof(text) - 1, step, &o2, &d2), whole);
        assert_true(d2);
        assert_string_equal(o2.p, out.p);
        fatia_buf_release(&o2);
    }
    assert_int_equal(dechunk("zz\r\n", 4, 64, &out, &done), -FATIA_E_PARSE);
    assert_int_equal(dechunk("3\r\nabcX\r\n", 9, 64, &out, &done), -FATIA_E_PARSE);
    assert_int_equal(dechunk("1234567890123456\r\n", 18, 64, &out, &done), -FATIA_E_PARSE);
    /* RFC 9112 §7.1: every framing line ends in CRLF; a bare LF anywhere is refused */
    {
        static const char *const bare[] = {
            "2\nab\r\n0\r\n\r\n",         /* after the size */
            "2;x=y\nab\r\n0\r\n\r\n",     /* after an extension */
            "2\r\nab\n0\r\n\r\n",         /* after the data */
            "2\r\nab\r\n0\n\r\n",         /* after the last size */
            "2\r\nab\r\n0\r\nT: x\n\r\n", /* after a trailer */
            "2\r\nab\r\n0\r\n\n",         /* the final line */
            "2\r\nab\r\r\n0\r\n\r\n",     /* CR not followed by LF */
            "2\nab\n0\n\n",
        };
        for (size_t i = 0; i < FATIA_ARRAY_SIZE(bare); i++)
            for (size_t step = 1; step <= 64; step *= 4)
                if (dechunk(bare[i], strlen(bare[i]), step, &out, &done) != -FATIA_E_PARSE)
                    fail_msg("bare LF case %zu (step %zu) was accepted", i, step);
    }
    assert_true(dechunk("2\r\nab\r\n0\r\nT: x\r\n\r\n", 18, 64, &out, &done) == 18 && done);
    assert_string_equal(out.p, "ab");
    fatia_buf_release(&out);
}

static void test_chunked_boundary(void **state)
{
    static const char text[] = "3\r\nabc\r\n2\r\nde\r\n";
    struct fatia_http_chunked c;
    /* the positions after which a chunk may be inserted: the start and after each "\r\n" that
     * ends a chunk */
    size_t at[] = {0, 8, 15};
    size_t k = 0;

    (void)state;
    fatia_http_chunked_init(&c);
    assert_true(fatia_http_chunked_at_boundary(&c));
    for (size_t i = 0; i < sizeof(text) - 1; i++) {
        assert_int_equal(fatia_http_chunked_feed(&c, text + i, 1, NULL, NULL), 1);
        if (k + 1 < FATIA_ARRAY_SIZE(at) && i + 1 == at[k + 1]) {
            k++;
            assert_true(fatia_http_chunked_at_boundary(&c));
        } else {
            assert_false(fatia_http_chunked_at_boundary(&c));
        }
    }
}

static void test_reason_and_status(void **state)
{
    const char *why = NULL;

    (void)state;
    assert_string_equal(fatia_http_reason(413), "Content Too Large");
    assert_string_equal(fatia_http_reason(504), "Gateway Timeout");
    assert_string_equal(fatia_http_reason(422), "Unprocessable Content");
    assert_string_equal(fatia_http_reason(999), "Unknown");
    assert_int_equal(fatia_http_request_error_status(-FATIA_E_PARSE, &why), 400);
    assert_non_null(why);
    assert_int_equal(fatia_http_request_error_status(-FATIA_E_LIMIT, &why), 431);
    assert_int_equal(fatia_http_request_error_status(-FATIA_E_UNSUPPORTED, &why), 501);
    assert_non_null(strstr(why, "chunked"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_head),      cmocka_unit_test(test_request_flags),
        cmocka_unit_test(test_request_errors),    cmocka_unit_test(test_response_head),
        cmocka_unit_test(test_chunked),           cmocka_unit_test(test_chunked_boundary),
        cmocka_unit_test(test_reason_and_status),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
