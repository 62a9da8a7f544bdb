/*
 * tests/unit/test_gw_engine.c: the vLLM replica model of engine-sim (gateway/engine.c): prefix
 * cache hits and LRU eviction, chunked prefill against the token budget, the sequence limit,
 * preemption when blocks run out, aborts, prefill-only requests, and the roofline step time
 * worked by hand for Llama-3.1-8B on the H200 calibration.
 */
#include "base/compat.h"

/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <math.h>

#include "base/error.h"
#include "gateway/engine.h"

static struct fatia_engine_config llama8b(uint64_t blocks)
{
    struct fatia_engine_config c = {0};

    c.model = (struct fatia_model_spec){.name = "llama-3.1-8b",
                                        .params = 8030261248,
                                        .layers = 32,
                                        .hidden = 4096,
                                        .intermediate = 14336,
                                        .heads = 32,
                                        .kv_heads = 8,
                                        .head_dim = 128,
                                        .vocab = 128256,
                                        .max_context = 131072};
    c.tp = 1;
    c.weights_bytes_per_gpu = 16060522496;
    c.kv_bytes_per_token_per_gpu = 131072;
    c.block_tokens = 16;
    c.num_gpu_blocks = blocks;
    c.max_num_seqs = 256;
    c.max_num_batched_tokens = 8192;
    c.max_model_len = 131072;
    c.prefix_caching = true;
    c.flops = 7.159e14;
    c.hbm_bw = 2.5186e12;
    c.kv_bw = 3.7872e12;
    c.step_overhead = 0;
    return c;
}

struct events {
    int tokens, finished;
    uint32_t last_generated;
};

static void on_emit(void *cbud, void *req_ud, uint32_t generated, bool finished)
{
    struct events *ev = cbud;
    (void)req_ud;
    ev->tokens += generated > 0;
    ev->finished += finished;
    ev->last_generated = generated;
}

/* Runs steps until idle; returns the number of steps. */
static int drain(struct fatia_engine *e, struct events *ev)
{
    int steps = 0;
    while (fatia_engine_step_begin(e) && steps < 100000) {
        fatia_engine_step_end(e, on_emit, ev);
        steps++;
    }
    return steps;
}

static void test_step_time(void **state)
{
    struct fatia_engine_config c = llama8b(1000);
    double t, compute, memory;

    (void)state;
    /* decode of one sequence with 1024 tokens of context: memory bound,
     * 16.06e9 / 2.5186e12 + 1025 x 131072 / 3.7872e12 seconds */
    t = fatia_engine_step_seconds(&c, 1, 1, 4.0 * 32 * 32 * 128 * 1 * 1024.5, 1025);
    memory = 16060522496.0 / 2.5186e12 + 1025.0 * 131072 / 3.7872e12;
    assert_true(fabs(t - memory) < 1e-9);
    /* prefill of 8192 tokens: compute bound, (2 x linear params x tokens + lm head + attention)
     * / flops, linear params = 8030261248 - 2 x 128256 x 4096 */
    double attn = 4.0 * 32 * 32 * 128 * 8192 * 4096;
    t = fatia_engine_step_seconds(&c, 8192, 1, attn, 8192);
    compute =
        (2.0 * (8030261248.0 - 2.0 * 128256 * 4096) * 8192 + 2.0 * 128256 * 4096 + attn) / 7.159e14;
    assert_true(fabs(t - compute) < 1e-9);
    assert_true(t > 0.17 && t < 0.20); /* the eager PyTorch upper bound measured 0.238 s */
}

static void test_prefix_hits(void **state)
{
    struct fatia_engine_config c = llama8b(1000);
    struct fatia_engine *e;
    struct fatia_engine_req *r;
    struct fatia_engine_stats st;
    struct events ev = {0};
    uint64_t a[4] = {1, 2, 3, 4}, b[4] = {1, 2, 3, 9};

    (void)state;
    assert_int_equal(fatia_engine_new(&c, &e), 0);
    assert_int_equal(fatia_engine_add(e, 70, 2, a, 4, NULL, &r), 0);
    drain(e, &ev);
    assert_int_equal(ev.tokens, 2);
    assert_int_equal(ev.finished, 1);
    fatia_engine_get_stats(e, &st);
    assert_int_equal(st.prefix_queries, 70);
    assert_int_equal(st.prefix_hits, 0);
    assert_int_equal(st.cached_blocks, 4);
    assert_int_equal(st.free_blocks, 1000); /* finished: all blocks free, 4 still cached */
    assert_int_equal(fatia_engine_cached_tokens(e, b, 4, false), 48);
    assert_int_equal(fatia_engine_add(e, 70, 1, b, 4, NULL, &r), 0);
    drain(e, &ev);
    fatia_engine_get_stats(e, &st);
    assert_int_equal(st.prefix_hits, 48);
    assert_int_equal(st.prefix_queries, 140);
    assert_int_equal(st.prompt_tokens, 70 + 22);
    /* a fully cached prompt still computes its last token */
    assert_int_equal(fatia_engine_add(e, 64, 1, a, 4, NULL, &r), 0);
    drain(e, &ev);
    fatia_engine_get_stats(e, &st);
    assert_int_equal(st.prefix_hits, 48 + 48);
    fatia_engine_free(e);
}

static void test_lru_eviction(void **state)
{
    struct fatia_engine_config c = llama8b(8);
    struct fatia_engine *e;
    struct fatia_engine_req *r;
    struct events ev = {0};
    uint64_t a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, d[4] = {10, 11, 12, 13};

    (void)state;
    assert_int_equal(fatia_engine_new(&c, &e), 0);
    fatia_engine_add(e, 64, 1, a, 4, NULL, &r);
    drain(e, &ev);
    fatia_engine_add(e, 64, 1, b, 4, NULL, &r);
    drain(e, &ev);
    assert_int_equal(fatia_engine_cached_tokens(e, a, 4, false), 64);
    assert_int_equal(fatia_engine_cached_tokens(e, b, 4, false), 64);
    /* a third prompt needs blocks: a's are the least recently freed, tail first */
    fatia_engine_add(e, 64, 1, d, 4, NULL, &r);
    drain(e, &ev);
    assert_int_equal(fatia_engine_cached_tokens(e, d, 4, false), 64);
    assert_int_equal(fatia_engine_cached_tokens(e, b, 4, false), 64);
    assert_true(fatia_engine_cached_tokens(e, a, 4, false) < 64);
    /* a queued prompt counts as held for the oracle, not for the cache */
    {
        uint64_t q[4] = {21, 22, 23, 24};
        fatia_engine_add(e, 64, 1, q, 4, NULL, &r);
        assert_int_equal(fatia_engine_cached_tokens(e, q, 4, false), 0);
        assert_int_equal(fatia_engine_cached_tokens(e, q, 3, true), 48);
        drain(e, &ev);
    }
    fatia_engine_free(e);
}

static void test_chunked_prefill(void **state)
{
    struct fatia_engine_config c = llama8b(10000);
    struct fatia_engine *e;
    struct fatia_engine_req *r;
    struct fatia_engine_stats st;
    struct events ev = {0};

    (void)state;
    assert_int_equal(fatia_engine_new(&c, &e), 0);
    fatia_engine_add(e, 10000, 3, NULL, 0, NULL, &r);
    assert_true(fatia_engine_step_begin(e) > 0);
    fatia_engine_get_stats(e, &st);
    assert_int_equal(st.last_step_tokens, 8192);
    fatia_engine_step_end(e, on_emit, &ev);
    assert_int_equal(ev.tokens, 0); /* a chunk that does not finish the prompt emits nothing */
    fatia_engine_step_begin(e);
    fatia_engine_get_stats(e, &st);
    assert_int_equal(st.last_step_tokens, 1808);
    fatia_engine_step_end(e, on_emit, &ev);
    assert_int_equal(ev.tokens, 1);
    /* a second request joins while the first decodes: one step holds both */
    fatia_engine_add(e, 100, 2, NULL, 0, NULL, &r);
    fatia_engine_step_begin(e);
    fatia_engine_get_stats(e, &st);
    assert_int_equal(st.last_step_tokens, 1 + 100);
    assert_int_equal(st.running, 2);
    fatia_engine_step_end(e, on_emit, &ev);
    drain(e, &ev);
    assert_int_equal(ev.finished, 2);
    assert_int_equal(ev.tokens, 5);
    fatia_engine_free(e);
}

static void test_limits_and_preemption(void **state)
{
    struct fatia_engine_config c = llama8b(20);
    struct fatia_engine *e;
    struct fatia_engine_req *r[5];
    struct fatia_engine_stats st;
    struct events ev = {0};

    (void)state;
    c.max_num_seqs = 2;
    assert_int_equal(fatia_engine_new(&c, &e), 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(fatia_engine_add(e, 16, 100, NULL, 0, NULL, &r[i]), 0);
    fatia_engine_step_begin(e);
    fatia_engine_get_stats(e, &st);
    assert_int_equal(st.running, 2);
    assert_int_equal(st.waiting, 3);
    fatia_engine_step_end(e, on_emit, &ev);
    /* two sequences growing to 116 tokens need 2 x 8 blocks of 20: fine; with a third... */
    drain(e, &ev);
    assert_int_equal(ev.finished, 5);
    fatia_engine_free(e);

    /* 20 blocks = 320 tokens; two sequences of 16 + 200 tokens cannot both stay */
    c.max_num_seqs = 8;
    ev = (struct events){0};
    assert_int_equal(fatia_engine_new(&c, &e), 0);
    fatia_engine_add(e, 16, 200, NULL, 0, NULL, &r[0]);
    fatia_engine_add(e, 16, 200, NULL, 0, NULL, &r[1]);
    drain(e, &ev);
    fatia_engine_get_stats(e, &st);
    assert_true(st.preemptions > 0);
    assert_int_equal(ev.finished, 2);
    assert_int_equal(ev.tokens, 400);
    assert_int_equal(st.free_blocks, 20);
    /* too long for the context or the whole cache */
    assert_int_equal(fatia_engine_add(e, 300, 100, NULL, 0, NULL, &r[0]), -FATIA_E_LIMIT);
    fatia_engine_free(e);
}

static void test_abort_and_embed(void **state)
{
    struct fatia_engine_config c = llama8b(100);
    struct fatia_engine *e;
    struct fatia_engine_req *r, *q;
    struct fatia_engine_stats st;
    struct events ev = {0};

    (void)state;
    assert_int_equal(fatia_engine_new(&c, &e), 0);
    fatia_engine_add(e, 500, 50, NULL, 0, NULL, &r);
    fatia_engine_add(e, 40, 0, NULL, 0, NULL, &q); /* an embedding: prefill only */
    fatia_engine_step_begin(e);
    fatia_engine_step_end(e, on_emit, &ev);
    assert_int_equal(ev.finished, 1);
    assert_int_equal(ev.last_generated, 0);
    fatia_engine_get_stats(e, &st);
    assert_true(st.free_blocks < 100);
    fatia_engine_abort(e, r);
    fatia_engine_get_stats(e, &st);
    assert_int_equal(st.free_blocks, 100);
    assert_int_equal(st.running, 0);
    assert_int_equal(fatia_engine_step_begin(e), 0);
    fatia_engine_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_step_time),
        cmocka_unit_test(test_prefix_hits),
        cmocka_unit_test(test_lru_eviction),
        cmocka_unit_test(test_chunked_prefill),
        cmocka_unit_test(test_limits_and_preemption),
        cmocka_unit_test(test_abort_and_embed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
