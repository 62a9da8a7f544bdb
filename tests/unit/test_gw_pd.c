/*
 * tests/unit/test_gw_pd.c: prefill/decode disaggregation's pure parts: a decode engine admitting
 * a request whose prompt KV was loaded (gateway/engine.c, fatia_engine_add_loaded), the KV link
 * (gateway/kvxfer.c: FIFO, bandwidth, latency, the presets), and llm-d's decider and roles
 * (gateway/pd.c).
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
#include "gateway/kvxfer.h"
#include "gateway/pd.h"

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
    c.max_num_batched_tokens = 2048;
    c.max_model_len = 131072;
    c.prefix_caching = true;
    c.flops = 7.159e14;
    c.hbm_bw = 2.5186e12;
    c.kv_bw = 3.7872e12;
    return c;
}

struct events {
    int tokens, finished, first_token_step;
    int step;
};

static void on_emit(void *cbud, void *req_ud, uint32_t generated, bool finished)
{
    struct events *ev = cbud;
    (void)req_ud;
    if (generated == 1 && !ev->first_token_step)
        ev->first_token_step = ev->step;
    ev->tokens += generated > 0;
    ev->finished += finished;
}

static int drain(struct fatia_engine *e, struct events *ev)
{
    while (fatia_engine_step_begin(e) && ev->step < 100000) {
        ev->step++;
        fatia_engine_step_end(e, on_emit, ev);
    }
    return ev->step;
}

/* A loaded 8,000-token prompt: its first step computes one token and samples (a local prefill
 * would take four 2,048-token chunks), its prompt blocks are then cached, and nothing of the
 * prompt is counted as computed here but that last token. */
static void test_loaded_prompt(void **state)
{
    struct fatia_engine_config c = llama8b(2000);
    struct fatia_engine *e;
    struct fatia_engine_req *r;
    struct fatia_engine_stats st;
    struct events ev = {0};
    uint64_t h[500];
    fatia_usec_t d;

    (void)state;
    for (int i = 0; i < 500; i++)
        h[i] = (uint64_t)i + 100;
    assert_int_equal(fatia_engine_new(&c, &e), 0);
    assert_int_equal(fatia_engine_add_loaded(e, 8000, 3, h, 500, NULL, &r), 0);
    d = fatia_engine_step_begin(e);
    /* one token of a decode-shaped step: memory bound, about the weights' streaming time */
    assert_true(d > 6000 && d < 7500);
    fatia_engine_get_stats(e, &st);
    assert_int_equal(st.last_step_tokens, 1);
    ev.step = 1;
    fatia_engine_step_end(e, on_emit, &ev);
    assert_int_equal(ev.first_token_step, 1);
    drain(e, &ev);
    assert_int_equal(ev.tokens, 3);
    assert_int_equal(ev.finished, 1);
    fatia_engine_get_stats(e, &st);
    assert_int_equal(st.prompt_tokens, 1);
    assert_int_equal(st.remote_tokens, 7999);
    assert_int_equal(st.prefix_hits, 0);
    /* 7,999 loaded tokens fill 499 blocks, the recomputed last token the 500th */
    assert_int_equal(st.cached_blocks, 500);
    assert_int_equal(fatia_engine_cached_tokens(e, h, 500, false), 8000);
    /* the same prompt again, locally: 499 blocks hit (the last token is always computed) */
    assert_int_equal(fatia_engine_add(e, 8000, 1, h, 500, NULL, &r), 0);
    drain(e, &ev);
    fatia_engine_get_stats(e, &st);
    assert_int_equal(st.prefix_hits, 499 * 16);
    assert_int_equal(st.prompt_tokens, 1 + 16);
    fatia_engine_free(e);
}

/* Against the same prompt prefilled locally: the local one needs ceil(8000 / 2048) = 4 steps to
 * its first token. */
static void test_local_prompt_takes_chunks(void **state)
{
    struct fatia_engine_config c = llama8b(2000);
    struct fatia_engine *e;
    struct fatia_engine_req *r;
    struct events ev = {0};

    (void)state;
    assert_int_equal(fatia_engine_new(&c, &e), 0);
    assert_int_equal(fatia_engine_add(e, 8000, 2, NULL, 0, NULL, &r), 0);
    drain(e, &ev);
    assert_int_equal(ev.first_token_step, 4);
    fatia_engine_free(e);
}

/* A loaded request that is preempted has lost its KV: it is recomputed here in full. */
static void test_loaded_preempted(void **state)
{
    struct fatia_engine_config c = llama8b(70); /* 1,120 tokens */
    struct fatia_engine *e;
    struct fatia_engine_req *a, *b;
    struct fatia_engine_stats st;
    struct events ev = {0};

    (void)state;
    assert_int_equal(fatia_engine_new(&c, &e), 0);
    assert_int_equal(fatia_engine_add(e, 500, 100, NULL, 0, NULL, &a), 0);
    assert_int_equal(fatia_engine_add_loaded(e, 500, 100, NULL, 0, NULL, &b), 0);
    drain(e, &ev);
    assert_int_equal(ev.finished, 2);
    fatia_engine_get_stats(e, &st);
    assert_true(st.preemptions >= 1);
    /* the loaded one (admitted last) was the victim and recomputed its 500 tokens */
    assert_true(st.prompt_tokens >= 500 + 500);
    fatia_engine_free(e);
}

static void test_kvxfer(void **state)
{
    struct fatia_kvxfer_link l;
    double t1, t2;

    (void)state;
    assert_int_equal(fatia_kvxfer_preset("nvlink", &l), 0);
    assert_true(fabs(l.bandwidth - 328e9) < 1);
    assert_int_equal(fatia_kvxfer_preset("rdma", &l), 0);
    assert_true(fabs(l.bandwidth - 45e9) < 1);
    assert_int_equal(fatia_kvxfer_preset("pcie", &l), -EINVAL);
    l = (struct fatia_kvxfer_link){.bandwidth = 1e9, .latency = 0.001};
    /* 1 GB at 1 GB/s ready at t = 10: lands at 11.001 */
    t1 = fatia_kvxfer_schedule(&l, 10, 1000000000);
    assert_true(fabs(t1 - 11.001) < 1e-9);
    /* a second one ready at 10.5 waits for the link: bytes from 11 to 11.5, lands 11.501 */
    t2 = fatia_kvxfer_schedule(&l, 10.5, 500000000);
    assert_true(fabs(t2 - 11.501) < 1e-9);
    /* an idle link: starts when ready */
    t2 = fatia_kvxfer_schedule(&l, 20, 0);
    assert_true(fabs(t2 - 20.001) < 1e-9);
    /* Qwen3-32B, 7,200 tokens x 256 KiB over NVLink: under 6 ms */
    assert_int_equal(fatia_kvxfer_preset("nvlink", &l), 0);
    t1 = fatia_kvxfer_schedule(&l, 0, 7200ull * 262144);
    assert_true(t1 > 0.0062 && t1 < 0.0064);
}

static void test_decider(void **state)
{
    struct fatia_pd_config c;
    enum fatia_pd_decider d;

    (void)state;
    fatia_pd_config_default(&c);
    assert_int_equal(c.decider, FATIA_PD_DECIDER_PREFIX);
    assert_int_equal(c.non_cached_tokens, 256);
    /* short prompts skip the prefill pool */
    assert_false(fatia_pd_disaggregate(&c, 100, 0));
    assert_false(fatia_pd_disaggregate(&c, 255, 0));
    assert_true(fatia_pd_disaggregate(&c, 256, 0));
    /* a long prompt the decode pod mostly holds: 7,200 - 440 x 16 = 160 uncached */
    assert_false(fatia_pd_disaggregate(&c, 7200, 440));
    assert_true(fatia_pd_disaggregate(&c, 7200, 400));  /* 800 uncached */
    assert_false(fatia_pd_disaggregate(&c, 100, 1000)); /* more cached than asked: 0 */
    /* llm-d's inverted zero: never */
    c.non_cached_tokens = 0;
    assert_false(fatia_pd_disaggregate(&c, 100000, 0));
    c.decider = FATIA_PD_DECIDER_ALWAYS;
    assert_true(fatia_pd_disaggregate(&c, 1, 0));
    c.decider = FATIA_PD_DECIDER_NEVER;
    assert_false(fatia_pd_disaggregate(&c, 100000, 0));
    assert_int_equal(fatia_pd_decider_parse("always", &d), 0);
    assert_int_equal(d, FATIA_PD_DECIDER_ALWAYS);
    assert_int_equal(fatia_pd_decider_parse("prefix-based", &d), 0);
    assert_int_equal(d, FATIA_PD_DECIDER_PREFIX);
    assert_int_equal(fatia_pd_decider_parse("sometimes", &d), -EINVAL);
    assert_string_equal(fatia_pd_decider_name(FATIA_PD_DECIDER_NEVER), "never");
}

static void test_roles(void **state)
{
    (void)state;
    assert_int_equal(fatia_pd_role_of("prefill"), FATIA_PD_ROLE_PREFILL);
    assert_int_equal(fatia_pd_role_of("decode"), FATIA_PD_ROLE_DECODE);
    assert_int_equal(fatia_pd_role_of("prefill-decode"), FATIA_PD_ROLE_DECODE);
    assert_int_equal(fatia_pd_role_of("both"), FATIA_PD_ROLE_DECODE);
    assert_int_equal(fatia_pd_role_of(NULL), FATIA_PD_ROLE_DECODE);
    assert_int_equal(fatia_pd_role_of("Prefill"), FATIA_PD_ROLE_DECODE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loaded_prompt),    cmocka_unit_test(test_local_prompt_takes_chunks),
        cmocka_unit_test(test_loaded_preempted), cmocka_unit_test(test_kvxfer),
        cmocka_unit_test(test_decider),          cmocka_unit_test(test_roles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
