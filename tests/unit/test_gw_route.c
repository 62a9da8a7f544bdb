/*
 * tests/unit/test_gw_route.c: prefix hashing and the approximate index (gateway/prefix.c), and
 * the scorers and picker (gateway/sched.c), checked against GIE's formulas
 * (reference/llm-routing.md §1.4-1.5).
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
#include "base/hash.h"
#include "gateway/prefix.h"
#include "gateway/sched.h"

static void text_of(char *buf, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)('a' + (seed * 31 + i * 7 + i / 64) % 26);
}

static void test_hash_chain(void **state)
{
    char a[640], b[640];
    uint64_t ha[16], hb[16], seed = fatia_prefix_seed(FATIA_STR("m"), FATIA_STR(""));

    (void)state;
    text_of(a, sizeof(a), 1);
    memcpy(b, a, sizeof(b));
    b[200] ^= 1; /* differs in block 3 */
    assert_int_equal(fatia_prefix_hash(seed, a, sizeof(a), 0, ha, 16), 10);
    assert_int_equal(fatia_prefix_hash(seed, b, sizeof(b), 0, hb, 16), 10);
    for (int i = 0; i < 3; i++)
        assert_true(ha[i] == hb[i]);
    for (int i = 3; i < 10; i++)
        assert_true(ha[i] != hb[i]); /* chained: everything after a difference differs */
    /* block 0 is XXH64(bytes, seed = XXH64(model)) */
    assert_true(ha[0] == fatia_hash_chain64(a, 64, fatia_hash_chain64("m", 1, 0)));
    assert_true(ha[1] == fatia_hash_chain64(a + 64, 64, ha[0]));
    /* partial blocks are not hashed; max bounds the work */
    assert_int_equal(fatia_prefix_hash(seed, a, 63, 0, ha, 16), 0);
    assert_int_equal(fatia_prefix_hash(seed, a, sizeof(a), 0, ha, 4), 4);
    /* model and cache_salt seed the chain */
    assert_true(seed != fatia_prefix_seed(FATIA_STR("n"), FATIA_STR("")));
    assert_true(seed != fatia_prefix_seed(FATIA_STR("m"), FATIA_STR("tenant")));
}

static void test_index_match(void **state)
{
    struct fatia_prefix_index *x;
    uint64_t h[8] = {11, 12, 13, 14, 15, 16, 17, 18}, other[3] = {11, 12, 99};
    uint32_t m[4];

    (void)state;
    assert_int_equal(fatia_prefix_index_new(&x), 0);
    assert_int_equal(fatia_prefix_index_insert(x, 1, h, 5), 0);
    assert_int_equal(fatia_prefix_index_insert(x, 2, other, 3), 0);
    fatia_prefix_index_match(x, h, 8, m, 4);
    assert_int_equal(m[0], 0);
    assert_int_equal(m[1], 5);
    assert_int_equal(m[2], 2);
    assert_int_equal(m[3], 0);
    assert_int_equal(fatia_prefix_index_size(x), 8);
    /* inserting again is a touch, not a duplicate */
    assert_int_equal(fatia_prefix_index_insert(x, 1, h, 5), 0);
    assert_int_equal(fatia_prefix_index_endpoint_size(x, 1), 5);
    /* a hole in an endpoint's run stops its count, even if later blocks are there */
    fatia_prefix_index_remove_endpoint(x, 1);
    assert_int_equal(fatia_prefix_index_insert(x, 1, h + 1, 4), 0);
    fatia_prefix_index_match(x, h, 8, m, 4);
    assert_int_equal(m[1], 0);
    assert_int_equal(m[2], 2);
    fatia_prefix_index_remove_endpoint(x, 2);
    assert_int_equal(fatia_prefix_index_size(x), 4);
    fatia_prefix_index_free(x);
}

static void test_index_lru(void **state)
{
    struct fatia_prefix_index *x;
    uint64_t p1[4] = {1, 2, 3, 4}, p2[4] = {5, 6, 7, 8}, one[1] = {1};
    uint32_t m[2];

    (void)state;
    assert_int_equal(fatia_prefix_index_new(&x), 0);
    fatia_prefix_index_set_capacity(x, 0, 6);
    fatia_prefix_index_insert(x, 0, p1, 4);
    fatia_prefix_index_insert(x, 0, p2, 4); /* evicts p1's least recent: its tail, 4 then 3 */
    assert_int_equal(fatia_prefix_index_endpoint_size(x, 0), 6);
    fatia_prefix_index_match(x, p1, 4, m, 1);
    assert_int_equal(m[0], 2);
    fatia_prefix_index_match(x, p2, 4, m, 1);
    assert_int_equal(m[0], 4);
    /* touching block 1 protects it; shrinking evicts the least recently used */
    fatia_prefix_index_insert(x, 0, one, 1);
    fatia_prefix_index_set_capacity(x, 0, 1);
    assert_int_equal(fatia_prefix_index_endpoint_size(x, 0), 1);
    fatia_prefix_index_match(x, p1, 4, m, 1);
    assert_int_equal(m[0], 1);
    /* many entries: the table grows and deletions keep lookups right */
    fatia_prefix_index_set_capacity(x, 1, 5000);
    for (uint64_t i = 0; i < 20000; i++) {
        uint64_t h = i * 0x9E3779B97F4A7C15ull + 7;
        fatia_prefix_index_insert(x, 1, &h, 1);
    }
    assert_int_equal(fatia_prefix_index_endpoint_size(x, 1), 5000);
    for (uint64_t i = 0; i < 20000; i++) {
        uint64_t h = i * 0x9E3779B97F4A7C15ull + 7;
        fatia_prefix_index_match(x, &h, 1, m, 2);
        assert_int_equal(m[1], i >= 15000 ? 1 : 0);
    }
    fatia_prefix_index_free(x);
}

static struct fatia_sched_endpoint ep(double waiting, double kv, uint32_t inflight, uint32_t pfx)
{
    struct fatia_sched_endpoint e = {.ready = true,
                                     .fresh = true,
                                     .waiting = waiting,
                                     .kv_usage = kv,
                                     .inflight = inflight,
                                     .prefix_match = pfx};
    return e;
}

static void test_scores(void **state)
{
    struct fatia_sched_config c;
    struct fatia_sched_endpoint e[3];
    struct fatia_sched_request rq = {10};
    struct fatia_sched_result r;
    uint64_t rng = 1;
    size_t rr = 0;

    (void)state;
    fatia_sched_config_default(&c);
    /* GIE: queue (maxQ-q)/(maxQ-minQ) x2 + (1-kv) x2 + matched/total x3 */
    e[0] = ep(0, 0.9, 0, 0);  /* 2*1 + 2*0.1 + 0 = 2.2 */
    e[1] = ep(4, 0.1, 0, 10); /* 2*0 + 2*0.9 + 3 = 4.8 */
    e[2] = ep(2, 0.5, 0, 5);  /* 2*0.5 + 2*0.5 + 1.5 = 3.5 */
    assert_int_equal(fatia_sched_pick(&c, e, 3, &rq, &rng, &rr, &r), 0);
    assert_int_equal(r.index, 1);
    assert_true(fabs(r.score - 4.8) < 1e-9);
    assert_int_equal(r.reason, FATIA_ROUTE_PREFIX);
    /* without the prefix term the queue wins */
    c.w.prefix = 0;
    assert_int_equal(fatia_sched_pick(&c, e, 3, &rq, &rng, &rr, &r), 0);
    assert_int_equal(r.index, 0);
    assert_int_equal(r.reason, FATIA_ROUTE_LOAD);
    /* stale metrics: kv counts 0.5, queue falls back to in-flight */
    fatia_sched_config_default(&c);
    e[0] = ep(100, 0.0, 1, 0); /* the stale 100 is not used: its queue is its 1 in flight */
    e[0].fresh = false;
    e[1] = ep(3, 0.5, 5, 0);
    assert_int_equal(fatia_sched_pick(&c, e, 2, &rq, &rng, &rr, &r), 0);
    assert_int_equal(r.index, 0);
    /* token load: 1 - min(1, tokens/threshold) */
    memset(&c.w, 0, sizeof(c.w));
    c.w.token_load = 1;
    c.token_load_threshold = 1000;
    e[0] = ep(0, 0, 0, 0);
    e[0].inflight_tokens = 900;
    e[1] = ep(0, 0, 0, 0);
    e[1].inflight_tokens = 100;
    assert_int_equal(fatia_sched_pick(&c, e, 2, &rq, &rng, &rr, &r), 0);
    assert_int_equal(r.index, 1);
    assert_true(fabs(r.score - 0.9) < 1e-9);
}

static void test_policies(void **state)
{
    struct fatia_sched_config c;
    struct fatia_sched_endpoint e[4];
    struct fatia_sched_request rq = {0};
    struct fatia_sched_result r;
    uint64_t rng = 42;
    size_t rr = 0;
    int hist[4] = {0};

    (void)state;
    fatia_sched_config_default(&c);
    for (int i = 0; i < 4; i++)
        e[i] = ep(0, 0, (uint32_t)i, 0);
    e[2].ready = false;
    c.policy = FATIA_POLICY_ROUND_ROBIN;
    for (int k = 0; k < 6; k++) {
        assert_int_equal(fatia_sched_pick(&c, e, 4, &rq, &rng, &rr, &r), 0);
        hist[r.index]++;
        assert_int_equal(r.reason, FATIA_ROUTE_ROUND_ROBIN);
    }
    assert_int_equal(hist[0], 2);
    assert_int_equal(hist[1], 2);
    assert_int_equal(hist[2], 0);
    assert_int_equal(hist[3], 2);
    c.policy = FATIA_POLICY_LEAST_REQUEST;
    assert_int_equal(fatia_sched_pick(&c, e, 4, &rq, &rng, &rr, &r), 0);
    assert_int_equal(r.index, 0);
    c.policy = FATIA_POLICY_ORACLE;
    e[3].prefix_match = 160; /* cached tokens win over load */
    assert_int_equal(fatia_sched_pick(&c, e, 4, &rq, &rng, &rr, &r), 0);
    assert_int_equal(r.index, 3);
    /* 503 and 429 */
    c.policy = FATIA_POLICY_CACHE_AWARE;
    for (int i = 0; i < 4; i++)
        e[i].ready = false;
    assert_int_equal(fatia_sched_pick(&c, e, 4, &rq, &rng, &rr, &r), -ENOENT);
    for (int i = 0; i < 4; i++)
        e[i] = ep(10 + i, 0, 0, 0);
    c.queue_limit = 12;
    assert_int_equal(fatia_sched_pick(&c, e, 4, &rq, &rng, &rr, &r), 0);
    assert_true(r.index <= 2);
    c.queue_limit = 9;
    assert_int_equal(fatia_sched_pick(&c, e, 4, &rq, &rng, &rr, &r), -FATIA_E_LIMIT);
    e[1].ready = false;
    e[0] = ep(1, 0, 0, 0);
    assert_int_equal(fatia_sched_pick(&c, e, 4, &rq, &rng, &rr, &r), 0);
    assert_int_equal(r.reason, FATIA_ROUTE_ONLY_CANDIDATE);
}

static void test_ties_random(void **state)
{
    struct fatia_sched_config c;
    struct fatia_sched_endpoint e[4];
    struct fatia_sched_request rq = {0};
    struct fatia_sched_result r;
    uint64_t rng = 7;
    size_t rr = 0;
    int hist[4] = {0};

    (void)state;
    fatia_sched_config_default(&c);
    for (int i = 0; i < 4; i++)
        e[i] = ep(3, 0.2, 0, 0);
    for (int k = 0; k < 4000; k++) {
        assert_int_equal(fatia_sched_pick(&c, e, 4, &rq, &rng, &rr, &r), 0);
        hist[r.index]++;
    }
    /* uniform within 15% (expected 1000 each) */
    for (int i = 0; i < 4; i++)
        assert_true(hist[i] > 850 && hist[i] < 1150);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash_chain), cmocka_unit_test(test_index_match),
        cmocka_unit_test(test_index_lru),  cmocka_unit_test(test_scores),
        cmocka_unit_test(test_policies),   cmocka_unit_test(test_ties_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
