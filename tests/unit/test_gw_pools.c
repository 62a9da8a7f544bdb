/*
 * tests/unit/test_gw_pools.c: the all-pools gateway's endpoint set (gateway/kubepool.c,
 * fatia_kubepool_all_endpoints): each pool's endpoints from the Ready pods of its own namespace,
 * labelled with the pool ("namespace/name") and the model (its name); the attacks of a hostile
 * tenant: pods in its namespace labelled like another namespace's pool (they never join it), and
 * a newer pool of its own aimed at another tenant's model server (the same address on the shared
 * 127.0.0.1: the older pool keeps it).
 */
#include "base/compat.h"

/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <jansson.h>

#include "base/json.h"
#include "gateway/gateway.h"
#include "gateway/kubepool.h"

static json_t *pool_at(const char *ns, const char *name, const char *app, int port,
                       const char *created)
{
    return json_pack("{s:{s:s,s:s,s:s},s:{s:{s:{s:s}},s:[{s:i}]}}", "metadata", "namespace", ns,
                     "name", name, "creationTimestamp", created, "spec", "selector", "matchLabels",
                     "app", app, "targetPorts", "number", port);
}

static json_t *pool(const char *ns, const char *name, const char *app, int port)
{
    return pool_at(ns, name, app, port, "2026-01-01T00:00:00Z");
}

static json_t *pod(const char *ns, const char *name, const char *app, const char *ip, bool ready)
{
    return json_pack("{s:{s:s,s:s,s:{s:s}},s:{s:s,s:[{s:s,s:s}]}}", "metadata", "namespace", ns,
                     "name", name, "labels", "app", app, "status", "podIP", ip, "conditions",
                     "type", "Ready", "status", ready ? "True" : "False");
}

/* "url pool model;" for every endpoint, in order. */
static void render(const json_t *eps, char *buf, size_t n)
{
    size_t i, off = 0;
    json_t *e;

    buf[0] = 0;
    json_array_foreach(eps, i, e)
    {
        const json_t *l = json_object_get(e, "labels");
        off += (size_t)snprintf(buf + off, n - off, "%s %s %s;", fatia_json_str(e, "url"),
                                fatia_json_str(l, FATIA_GATEWAY_POOL_LABEL),
                                fatia_json_str(l, FATIA_GATEWAY_MODEL_LABEL));
    }
}

static void test_pools_by_namespace(void **state)
{
    json_t *pools = json_array(), *pods = json_array(), *eps;
    char got[1024];

    (void)state;
    json_array_append_new(pools, pool("a", "llama", "llama", 8000));
    json_array_append_new(pools, pool("b", "evil", "evil", 9000));
    json_array_append_new(pods, pod("a", "p1", "llama", "10.0.0.1", true));
    json_array_append_new(pods, pod("a", "p2", "llama", "10.0.0.2", false)); /* not Ready */
    /* tenant b labels its pods like a's pool: they must not join a/llama */
    json_array_append_new(pods, pod("b", "p3", "llama", "10.0.0.3", true));
    json_array_append_new(pods, pod("b", "p4", "evil", "10.0.0.4", true));
    eps = fatia_kubepool_all_endpoints(pools, pods);
    render(eps, got, sizeof(got));
    assert_string_equal(got, "http://10.0.0.1:8000 a/llama llama;"
                             "http://10.0.0.4:9000 b/evil evil;");
    json_decref(eps);
    json_decref(pools);
    json_decref(pods);
}

static void test_shared_address(void **state)
{
    json_t *pools = json_array(), *pods = json_array(), *eps;
    char got[1024];

    (void)state;
    /* processes share 127.0.0.1: tenant b aims a newer pool of its own at a's port 8000, listed
     * first; a's older pool keeps the address, b's gets nothing */
    json_array_append_new(pools, pool_at("b", "steal", "x", 8000, "2026-01-02T00:00:00Z"));
    json_array_append_new(pools, pool_at("a", "llama", "llama", 8000, "2026-01-01T00:00:00Z"));
    json_array_append_new(pools, pool_at("a", "llama2", "llama", 8000, "2026-01-01T00:00:00Z"));
    json_array_append_new(pools, pool_at("a", "other", "other", 8001, "2026-01-03T00:00:00Z"));
    json_array_append_new(pods, pod("b", "p1", "x", "127.0.0.1", true));
    json_array_append_new(pods, pod("a", "p2", "llama", "127.0.0.1", true));
    json_array_append_new(pods, pod("a", "p3", "other", "127.0.0.1", true));
    eps = fatia_kubepool_all_endpoints(pools, pods);
    render(eps, got, sizeof(got));
    assert_string_equal(got, "http://127.0.0.1:8000 a/llama llama;"
                             "http://127.0.0.1:8001 a/other other;");
    json_decref(eps);
    /* an older pool of b's would have it (first come): the rule is age, not the namespace */
    json_array_remove(pools, 0);
    json_array_append_new(pools, pool_at("b", "steal", "x", 8000, "2025-12-31T00:00:00Z"));
    eps = fatia_kubepool_all_endpoints(pools, pods);
    render(eps, got, sizeof(got));
    assert_string_equal(got, "http://127.0.0.1:8000 b/steal steal;"
                             "http://127.0.0.1:8001 a/other other;");
    json_decref(eps);
    json_decref(pools);
    json_decref(pods);
}

/* An LLMInferenceService's pool in process mode (controller/llmisvc.c): one pool, the decode and
 * prefill ports as targetPorts, each pod naming its own port; the model is the pool's
 * serving.fatia.io/model-name annotation, not its name; its serving.fatia.io/pd-decider goes to
 * its endpoints. */
static void test_pd_pool(void **state)
{
    json_t *pools = json_array(), *pods = json_array(), *eps, *p;
    char got[1024];
    const char *roles[3] = {"decode", "prefill", "prefill"};
    const char *ports[3] = {"8000", "8001", "8001"};

    (void)state;
    p = pool("a", "llama-pd-inference-pool", "llama-pd", 8000);
    json_array_append_new(json_object_get(json_object_get(p, "spec"), "targetPorts"),
                          json_pack("{s:i}", "number", 8001));
    json_object_set_new(json_object_get(p, "metadata"), "annotations",
                        json_pack("{s:s,s:s}", "serving.fatia.io/model-name", "llama-pd",
                                  "serving.fatia.io/pd-decider", "always"));
    json_array_append_new(pools, p);
    for (int i = 0; i < 3; i++) {
        json_t *q = pod("a", roles[i], "llama-pd", "127.0.0.1", true);
        json_t *md = json_object_get(q, "metadata");
        json_object_set_new(json_object_get(md, "labels"), "llm-d.ai/role", json_string(roles[i]));
        json_object_set_new(md, "annotations",
                            json_pack("{s:s}", "serving.fatia.io/port", ports[i]));
        json_array_append_new(pods, q);
    }
    eps = fatia_kubepool_all_endpoints(pools, pods);
    render(eps, got, sizeof(got));
    assert_string_equal(got, "http://127.0.0.1:8000 a/llama-pd-inference-pool llama-pd;"
                             "http://127.0.0.1:8001 a/llama-pd-inference-pool llama-pd;");
    /* each endpoint carries its own workload's role */
    assert_string_equal(
        fatia_json_str(json_object_get(json_array_get(eps, 0), "labels"), "llm-d.ai/role"),
        "decode");
    assert_string_equal(
        fatia_json_str(json_object_get(json_array_get(eps, 1), "labels"), "llm-d.ai/role"),
        "prefill");
    /* and the pool's own P/D decider (KServe's always-disagg for spec.prefill) */
    assert_string_equal(fatia_json_str(json_object_get(json_array_get(eps, 0), "labels"),
                                       "serving.fatia.io/pd-decider"),
                        "always");
    json_decref(eps);
    json_decref(pools);
    json_decref(pods);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pools_by_namespace),
        cmocka_unit_test(test_shared_address),
        cmocka_unit_test(test_pd_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
