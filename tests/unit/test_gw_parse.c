/*
 * tests/unit/test_gw_parse.c: the gateway's parsers: HTTP/1.1 heads (gateway/http1.c), the
 * chunked decoder, the SSE scanner (gateway/sse.c), the request body scanner
 * (gateway/reqbody.c) and the Prometheus scanner (gateway/prom.c).
 *
 * The incremental parsers are checked for split invariance: the same input fed in every
 * two-piece split and byte by byte gives the same result as fed whole.
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
#include "gateway/http1.h"
#include "gateway/prom.h"
#include "gateway/reqbody.h"
#include "gateway/sse.h"

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
    /* bare LF line ends are accepted */
    assert_true(dechunk("2\nab\n0\n\n", 8, 64, &out, &done) == 8 && done);
    assert_string_equal(out.p, "ab");
    fatia_buf_release(&out);
}

struct sse_seen {
    struct fatia_buf all;
    int n;
};

static void sse_cb(void *ud, const char *d, size_t n, bool trunc)
{
    struct sse_seen *s = ud;
    (void)trunc;
    fatia_buf_append(&s->all, d, n);
    fatia_buf_putc(&s->all, '|');
    s->n++;
}

static void test_sse(void **state)
{
    static const char text[] = ": comment\r\ndata: {\"a\":1}\r\n\r\nevent: x\ndata:two\ndata: lines"
                               "\n\ndata\n\nid: 5\r\rdata: [DONE]\n\n";
    struct sse_seen whole = {FATIA_BUF_INIT, 0};
    struct fatia_sse s;

    (void)state;
    fatia_sse_init(&s, sse_cb, &whole);
    assert_int_equal(fatia_sse_feed(&s, text, sizeof(text) - 1), 0);
    assert_int_equal(s.events, 3);
    assert_true(s.done);
    assert_string_equal(whole.all.p, "{\"a\":1}|two\nlines||[DONE]|");
    fatia_sse_release(&s);
    for (size_t step = 1; step < sizeof(text); step++) {
        struct sse_seen part = {FATIA_BUF_INIT, 0};
        struct fatia_sse p;
        fatia_sse_init(&p, sse_cb, &part);
        for (size_t off = 0; off < sizeof(text) - 1; off += step)
            fatia_sse_feed(&p, text + off,
                           sizeof(text) - 1 - off < step ? sizeof(text) - 1 - off : step);
        assert_int_equal(p.events, 3);
        assert_true(p.done);
        assert_string_equal(part.all.p, whole.all.p);
        fatia_sse_release(&p);
        fatia_buf_release(&part.all);
        /* count-only mode agrees */
        fatia_sse_init(&p, NULL, NULL);
        for (size_t off = 0; off < sizeof(text) - 1; off += step)
            fatia_sse_feed(&p, text + off,
                           sizeof(text) - 1 - off < step ? sizeof(text) - 1 - off : step);
        assert_int_equal(p.events, 3);
        assert_true(p.done);
        fatia_sse_release(&p);
    }
    /* "data: [DONE]x" is an ordinary event */
    fatia_sse_init(&s, NULL, NULL);
    fatia_sse_feed(&s, "data: [DONE]x\n\n", 15);
    assert_int_equal(s.events, 1);
    assert_false(s.done);
    fatia_sse_release(&s);
    fatia_buf_release(&whole.all);
}

static void test_reqbody(void **state)
{
    static const char body[] =
        " {\"model\": \"llama\\\"3\", \"stream\": true, \"n\": [1, {\"x\": \"}\"}],"
        " \"prompt\": \"he said \\\\\\\"hi\\\\\\\"\", \"cache_salt\": \"s1\", \"max_tokens\": 128,"
        " \"other\": null} ";
    struct fatia_reqbody rb;
    char why[128];

    (void)state;
    assert_int_equal(fatia_reqbody_scan(body, sizeof(body) - 1, &rb, why, sizeof(why)), 0);
    assert_true(rb.has_model);
    assert_true(sv(rb.model, "llama\\\"3"));
    assert_true(sv(rb.prompt, "he said \\\\\\\"hi\\\\\\\""));
    assert_true(rb.prompt_is_string);
    assert_true(sv(rb.cache_salt, "s1"));
    assert_true(rb.stream);
    assert_int_equal(rb.max_tokens, 128);

    static const char chat[] = "{\"messages\":[{\"role\":\"user\",\"content\":\"a]b\"}],"
                               "\"model\":\"m\"}";
    assert_int_equal(fatia_reqbody_scan(chat, sizeof(chat) - 1, &rb, why, sizeof(why)), 0);
    assert_true(sv(rb.prompt, "[{\"role\":\"user\",\"content\":\"a]b\"}]"));
    assert_false(rb.prompt_is_string);
    assert_false(rb.stream);
    assert_int_equal(rb.max_tokens, -1);

    static const char *const bad[] = {"",
                                      "[]",
                                      "{\"a\":1",
                                      "{\"a\" 1}",
                                      "{\"a\":\"x}",
                                      "{\"a\":[1,}",
                                      "{\"a\":{]}",
                                      "{\"a\":1} x",
                                      "{\"a\":tru}",
                                      "{,}",
                                      "{\"a\":1,}",
                                      "{\"a\":@}",
                                      "{\"a\":[\x01]}"};
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(bad); i++)
        if (fatia_reqbody_scan(bad[i], strlen(bad[i]), &rb, why, sizeof(why)) != -FATIA_E_PARSE)
            fail_msg("accepted bad body %zu: %s", i, bad[i]);
    /* nesting is bounded */
    {
        struct fatia_buf deep = FATIA_BUF_INIT;
        fatia_buf_puts(&deep, "{\"a\":");
        for (int i = 0; i < FATIA_REQBODY_MAX_DEPTH + 2; i++)
            fatia_buf_putc(&deep, '[');
        for (int i = 0; i < FATIA_REQBODY_MAX_DEPTH + 2; i++)
            fatia_buf_putc(&deep, ']');
        fatia_buf_putc(&deep, '}');
        assert_int_equal(fatia_reqbody_scan(deep.p, deep.len, &rb, why, sizeof(why)),
                         -FATIA_E_PARSE);
        assert_non_null(strstr(why, "nested too deep"));
        fatia_buf_release(&deep);
    }
}

static void test_prom(void **state)
{
    static const char text[] =
        "# HELP vllm:num_requests_waiting x\n# TYPE vllm:num_requests_waiting gauge\n"
        "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 3\n"
        "vllm:num_requests_waiting{engine=\"1\",model_name=\"m\"} 2.0\n"
        "vllm:num_requests_running{model_name=\"m\"} 7\n"
        "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.9\n"
        "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.25\n"
        "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.5 1700000000000\n"
        "vllm:cache_config_info{block_size=\"32\",model=\"a\\\"b\",num_gpu_blocks=\"1000\"} 1.0\n"
        "vllm:prefix_cache_queries_total{m=\"x\"} 100\n"
        "vllm:prefix_cache_hits_total{m=\"x\"} 40\n"
        "vllm:num_requests_waiting{broken 5\n"
        "vllm:num_requests_waitingX 9\n"
        "vllm:num_requests_running{a=\"b\"} notanumber\n"
        "vllm:time_to_first_token_seconds_bucket{le=\"0.1\"} 5";
    struct fatia_engine_metrics m;

    (void)state;
    fatia_prom_scan_vllm(text, sizeof(text) - 1, &m);
    assert_true(m.have & FATIA_PROM_WAITING);
    assert_true(m.waiting == 5.0);
    assert_true(m.running == 7.0);
    assert_true(m.kv_usage == 0.5); /* the new name wins; the maximum over series */
    assert_int_equal(m.num_gpu_blocks, 1000);
    assert_int_equal(m.block_size, 32);
    assert_true(m.prefix_queries == 100 && m.prefix_hits == 40);
    /* the deprecated name is the fallback */
    fatia_prom_scan_vllm("vllm:gpu_cache_usage_perc 0.75\n", 31, &m);
    assert_true((m.have & FATIA_PROM_KV) && m.kv_usage == 0.75);
    assert_false(m.have & FATIA_PROM_WAITING);
    fatia_prom_scan_vllm("", 0, &m);
    assert_int_equal(m.have, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_head),   cmocka_unit_test(test_request_flags),
        cmocka_unit_test(test_request_errors), cmocka_unit_test(test_response_head),
        cmocka_unit_test(test_chunked),        cmocka_unit_test(test_sse),
        cmocka_unit_test(test_reqbody),        cmocka_unit_test(test_prom),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
