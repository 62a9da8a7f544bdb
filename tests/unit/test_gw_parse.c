/*
 * tests/unit/test_gw_parse.c: the gateway's parsers: the SSE scanner (gateway/sse.c), the
 * request body scanner (gateway/reqbody.c) and the Prometheus scanner (gateway/prom.c). The
 * HTTP/1.1 parsers are the shared module's: tests/unit/test_http1.c.
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
#include "gateway/prom.h"
#include "gateway/reqbody.h"
#include "gateway/sse.h"

static bool sv(struct fatia_str s, const char *z)
{
    return fatia_str_eqz(s, z);
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

static void test_sse_boundary(void **state)
{
    static const char text[] = "data: {\"a\":1}\n\ndata: x\ndata: y\n\n";
    struct fatia_sse s;
    size_t ends[] = {15, 32}; /* after each event's blank line */
    size_t k = 0;

    (void)state;
    fatia_sse_init(&s, NULL, NULL);
    assert_true(fatia_gateway_sse_at_boundary(&s));
    for (size_t i = 0; i < sizeof(text) - 1; i++) {
        assert_int_equal(fatia_sse_feed(&s, text + i, 1), 0);
        bool want = k < FATIA_ARRAY_SIZE(ends) && i + 1 == ends[k];
        if (want)
            k++;
        if (fatia_gateway_sse_at_boundary(&s) != want)
            fail_msg("after byte %zu: at boundary %d, want %d", i, !want, want);
    }
    fatia_sse_release(&s);
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
        cmocka_unit_test(test_sse),
        cmocka_unit_test(test_sse_boundary),
        cmocka_unit_test(test_reqbody),
        cmocka_unit_test(test_prom),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
