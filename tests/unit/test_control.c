/*
 * tests/unit/test_control.c: the admission engine's incremental API, as fatiad's admission
 * controller drives it: objects arriving in any order, changes and deletions between cycles,
 * evictions that complete later, and the status blocks written back to ClusterQueues,
 * LocalQueues and Workloads.
 */
#include "base/compat.h"

/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "base/error.h"
#include "base/json.h"
#include "control/control.h"
#include "demand/demand.h"
#include "model/doc.h"
#include "model/object.h"

static const int64_t NOW = INT64_C(1767225600000000);

/* Decodes one YAML document through the model layer and applies it. */
static void apply(struct fatia_control *c, const char *yaml)
{
    struct fatia_diag diag;
    struct fatia_object *o = NULL;
    json_t *root = NULL;
    char why[256];

    assert_int_equal(fatia_yaml_parse(yaml, strlen(yaml), &root, why, sizeof(why)), 0);
    fatia_diag_init(&diag);
    if (fatia_object_decode(root, &(struct fatia_decode_opts){0}, &fatia_demand_checks, &diag, &o) <
        0) {
        fatia_diag_print(&diag, stderr);
        fail_msg("invalid test object");
    }
    assert_int_equal(fatia_control_apply(c, o->obj, NOW, NULL), 0);
    fatia_object_free(o);
    fatia_diag_release(&diag);
    json_decref(root);
}

#define FLAVOR "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: gpu}\n"
#define CQ(name, cohort, gpus)                                                             \
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: " name "}\n" \
    "spec:\n  namespaceSelector: {}\n  cohortName: " cohort "\n"                           \
    "  preemption: {withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}\n"        \
    "  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n    flavors:\n"            \
    "    - {name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: " gpus "}]}\n"
#define LQ(name, cq)                                                               \
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: " name \
    ", namespace: ns}\nspec: {clusterQueue: " cq "}\n"
#define WL(name, queue, gpus, prio)                                                         \
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: " name            \
    ", namespace: ns}\nspec:\n  queueName: " queue "\n  priority: " prio "\n  podSets:\n"   \
    "  - name: main\n    count: 1\n    template: {spec: {containers: [{name: c, image: x, " \
    "resources: {requests: {nvidia.com/gpu: \"" gpus "\"}}}]}}\n"

static void checked(struct fatia_control *c)
{
    char why[512];

    if (fatia_control_check(c, FATIA_CONTROL_CHECK_QUOTA, why, sizeof(why)) < 0)
        fail_msg("%s", why);
}

static const struct fatia_control_result *cycle(struct fatia_control *c)
{
    const struct fatia_control_result *res;

    assert_int_equal(fatia_control_cycle(c, NOW, &res), 0);
    checked(c);
    return res;
}

static void test_any_order(void **state)
{
    struct fatia_control *c;
    const struct fatia_control_result *res;
    json_t *st;

    (void)state;
    assert_int_equal(fatia_control_new(&c), 0);
    /* the workload first, then its queue, then the ClusterQueue, then the flavor */
    apply(c, WL("w", "lq", "2", "0"));
    res = cycle(c);
    assert_int_equal(res->n_admitted, 0);
    assert_int_equal(fatia_control_workload_status(c, "ns", "w", &st), 0);
    assert_string_equal(json_string_value(json_object_get(st, "message")),
                        "LocalQueue lq doesn't exist");
    json_decref(st);
    apply(c, LQ("lq", "cq"));
    assert_int_equal(fatia_control_workload_status(c, "ns", "w", &st), 0);
    assert_string_equal(json_string_value(json_object_get(st, "message")),
                        "ClusterQueue cq doesn't exist");
    json_decref(st);
    apply(c, CQ("cq", "co", "4"));
    res = cycle(c);
    assert_int_equal(res->n_admitted, 0); /* the flavor does not exist: inactive */
    assert_int_equal(fatia_control_cq_status(c, "cq", NOW, &st), 0);
    assert_string_equal(json_string_value(fatia_json_path(st, "conditions[0].reason")),
                        "FlavorNotFound");
    json_decref(st);
    apply(c, FLAVOR);
    res = cycle(c);
    assert_int_equal(res->n_admitted, 1);
    assert_string_equal(res->admitted[0].key, "ns/w");
    assert_string_equal(res->admitted[0].podsets[0].v[0].flavor, "gpu");
    assert_int_equal(res->admitted[0].podsets[0].v[0].milli, 2000);
    assert_int_equal(fatia_control_workload_status(c, "ns", "w", &st), 0);
    assert_string_equal(json_string_value(json_object_get(st, "state")), "Admitted");
    assert_string_equal(
        json_string_value(
            fatia_json_path(st, "admission.podSetAssignments[0].resourceUsage")
                ? json_object_get(fatia_json_path(st, "admission.podSetAssignments[0]."
                                                      "resourceUsage"),
                                  "nvidia.com/gpu")
                : NULL),
        "2");
    json_decref(st);
    fatia_control_free(c);
}

static void test_status_blocks(void **state)
{
    struct fatia_control *c;
    json_t *st;

    (void)state;
    assert_int_equal(fatia_control_new(&c), 0);
    apply(c, FLAVOR);
    apply(c, CQ("a", "co", "4"));
    apply(c, CQ("b", "co", "4"));
    apply(c, LQ("a", "a"));
    apply(c, WL("w1", "a", "3", "0"));
    apply(c, WL("w2", "a", "3", "0"));
    apply(c, WL("w3", "a", "3", "0"));
    cycle(c);
    cycle(c);
    cycle(c);
    assert_int_equal(fatia_control_cq_status(c, "a", NOW, &st), 0);
    assert_int_equal(json_integer_value(json_object_get(st, "admittedWorkloads")), 2);
    assert_int_equal(json_integer_value(json_object_get(st, "pendingWorkloads")), 1);
    assert_string_equal(
        json_string_value(fatia_json_path(st, "flavorsReservation[0].resources[0].total")), "6");
    assert_string_equal(
        json_string_value(fatia_json_path(st, "flavorsReservation[0].resources[0].borrowed")), "2");
    /* borrowed 2 of the 8 the cohort can lend: 2 x 1000 / 8 = 250 */
    assert_int_equal(json_integer_value(fatia_json_path(st, "fairSharing.weightedShare")), 250);
    json_decref(st);
    assert_int_equal(fatia_control_lq_status(c, "ns", "a", NOW, &st), 0);
    assert_int_equal(json_integer_value(json_object_get(st, "admittedWorkloads")), 2);
    assert_string_equal(
        json_string_value(fatia_json_path(st, "flavorsUsage[0].resources[0].total")), "6");
    assert_null(fatia_json_path(st, "flavorsUsage[0].resources[0].borrowed"));
    json_decref(st);
    assert_int_equal(fatia_control_cq_status(c, "nope", NOW, &st), -ENOENT);
    fatia_control_free(c);
}

/* Kueue's integration test (fair_sharing_test.go): CQs a=3, b=1 and a lender with 4 CPUs;
 * a uses 8, so it borrows 5 of the 8 the cohort can lend it: 5 x 1000 / 8 = 625. */
static void test_weighted_share_625(void **state)
{
    struct fatia_control *c;
    json_t *st;

    (void)state;
    assert_int_equal(fatia_control_new(&c), 0);
    apply(c,
          "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: default}\n");
    for (int i = 0; i < 3; i++) {
        static const char *const n[] = {"a", "b", "shared"};
        static const char *const q[] = {"3", "1", "4"};
        char y[600];
        snprintf(y, sizeof(y),
                 "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: %s}\n"
                 "spec:\n  namespaceSelector: {}\n  cohortName: all\n  resourceGroups:\n"
                 "  - coveredResources: [cpu]\n    flavors:\n"
                 "    - {name: default, resources: [{name: cpu, nominalQuota: %s}]}\n",
                 n[i], q[i]);
        apply(c, y);
    }
    apply(c, LQ("a", "a"));
    for (int i = 0; i < 8; i++) {
        char y[600];
        snprintf(y, sizeof(y),
                 "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: w%d, "
                 "namespace: ns}\nspec:\n  queueName: a\n  podSets:\n  - template: {spec: "
                 "{containers: [{name: c, image: x, resources: {requests: {cpu: 1}}}]}}\n",
                 i);
        apply(c, y);
    }
    for (int i = 0; i < 8; i++)
        cycle(c);
    assert_int_equal(fatia_control_cq_status(c, "a", NOW, &st), 0);
    assert_int_equal(json_integer_value(json_object_get(st, "admittedWorkloads")), 8);
    assert_int_equal(json_integer_value(fatia_json_path(st, "fairSharing.weightedShare")), 625);
    json_decref(st);
    fatia_control_free(c);
}

static void test_eviction_takes_time(void **state)
{
    struct fatia_control *c;
    const struct fatia_control_result *res;

    (void)state;
    assert_int_equal(fatia_control_new(&c), 0);
    apply(c, FLAVOR);
    apply(c, CQ("a", "co", "4"));
    apply(c, LQ("a", "a"));
    apply(c, WL("low", "a", "4", "0"));
    cycle(c);
    apply(c, WL("high", "a", "4", "10"));
    res = cycle(c);
    assert_int_equal(res->n_evicted, 1);
    assert_string_equal(res->evicted[0].key, "ns/low");
    assert_string_equal(res->evicted[0].reason, "InClusterQueue");
    assert_string_equal(res->evicted[0].preemptor, "ns/high");
    assert_int_equal(fatia_control_workload_state(c, "ns", "low"), FATIA_CONTROL_EVICTING);
    /* the victim still holds its quota: the preemptor waits, nothing is evicted twice */
    res = cycle(c);
    assert_int_equal(res->n_admitted, 0);
    assert_int_equal(res->n_evicted, 0);
    assert_int_equal(fatia_control_workload_released(c, "ns", "high", NOW), -EINVAL);
    assert_int_equal(fatia_control_workload_released(c, "ns", "low", NOW), 0);
    checked(c);
    res = cycle(c);
    assert_int_equal(res->n_admitted, 1);
    assert_string_equal(res->admitted[0].key, "ns/high");
    assert_int_equal(fatia_control_workload_state(c, "ns", "low"), FATIA_CONTROL_PENDING);
    /* finishing frees the quota and requeues the victim at once */
    assert_int_equal(fatia_control_workload_finished(c, "ns", "high", NOW), 0);
    res = cycle(c);
    assert_int_equal(res->n_admitted, 1);
    assert_string_equal(res->admitted[0].key, "ns/low");
    assert_int_equal(fatia_control_workload_finished(c, "ns", "nope", NOW), -ENOENT);
    fatia_control_free(c);
}

static void test_changes_between_cycles(void **state)
{
    struct fatia_control *c;
    const struct fatia_control_result *res;
    json_t *st;

    (void)state;
    assert_int_equal(fatia_control_new(&c), 0);
    apply(c, FLAVOR);
    apply(c, CQ("a", "co", "2"));
    apply(c, LQ("a", "a"));
    apply(c, WL("w", "a", "4", "0"));
    res = cycle(c);
    assert_int_equal(res->n_admitted, 0);
    /* more quota: the parked workload is retried at once */
    apply(c, CQ("a", "co", "4"));
    res = cycle(c);
    assert_int_equal(res->n_admitted, 1);
    /* the ClusterQueue goes away: the admission stays, new work waits */
    assert_int_equal(fatia_control_delete(c, "ClusterQueue", NULL, "a", NOW), 0);
    apply(c, WL("w2", "a", "1", "0"));
    res = cycle(c);
    assert_int_equal(res->n_admitted, 0);
    assert_int_equal(fatia_control_workload_status(c, "ns", "w2", &st), 0);
    assert_string_equal(json_string_value(json_object_get(st, "message")),
                        "ClusterQueue a doesn't exist");
    json_decref(st);
    assert_int_equal(fatia_control_workload_state(c, "ns", "w"), FATIA_CONTROL_ADMITTED);
    /* it comes back */
    apply(c, CQ("a", "co", "8"));
    res = cycle(c);
    assert_int_equal(res->n_admitted, 1);
    assert_string_equal(res->admitted[0].key, "ns/w2");
    /* a deleted workload frees its quota */
    assert_int_equal(fatia_control_delete(c, "Workload", "ns", "w", NOW), 0);
    assert_int_equal(fatia_control_delete(c, "Workload", "ns", "w", NOW), -ENOENT);
    checked(c);
    fatia_control_free(c);
}

static void test_v1beta1_and_config(void **state)
{
    struct fatia_control *c;
    const struct fatia_control_result *res;

    (void)state;
    assert_int_equal(fatia_control_new(&c), 0);
    apply(c, FLAVOR);
    apply(c, "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: a}\n"
             "spec:\n  cohort: co\n  namespaceSelector: {}\n  resourceGroups:\n"
             "  - coveredResources: [nvidia.com/gpu]\n    flavors:\n"
             "    - {name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}\n");
    apply(c, LQ("a", "a"));
    apply(c, "apiVersion: kueue.x-k8s.io/v1beta1\nkind: WorkloadPriorityClass\n"
             "metadata: {name: urgent}\nvalue: 100\n");
    apply(c, "apiVersion: kueue.x-k8s.io/v1beta1\nkind: Workload\nmetadata: {name: u, "
             "namespace: ns, creationTimestamp: \"2026-01-01T00:00:05Z\"}\n"
             "spec:\n  queueName: a\n  priorityClassName: urgent\n"
             "  priorityClassSource: kueue.x-k8s.io/workloadpriorityclass\n  podSets:\n"
             "  - name: main\n    count: 1\n    template: {spec: {containers: [{name: c, image: "
             "x, resources: {requests: {nvidia.com/gpu: \"4\"}}}]}}\n");
    apply(c, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: o, "
             "namespace: ns, creationTimestamp: \"2026-01-01T00:00:00Z\"}\n"
             "spec:\n  queueName: a\n  podSets:\n"
             "  - name: main\n    count: 1\n    template: {spec: {containers: [{name: c, image: "
             "x, resources: {requests: {nvidia.com/gpu: \"4\"}}}]}}\n");
    res = cycle(c);
    assert_int_equal(res->n_admitted, 1);
    assert_string_equal(res->admitted[0].key, "ns/u"); /* priority 100 beats the older one */
    fatia_control_free(c);
}

static void test_saturation(void **state)
{
    struct fatia_control *c;
    const struct fatia_control_result *res;

    (void)state;
    assert_int_equal(fatia_control_new(&c), 0);
    apply(c, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: m}\n");
    apply(c, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: a}\n"
             "spec:\n  namespaceSelector: {}\n  resourceGroups:\n"
             "  - coveredResources: [memory]\n    flavors:\n"
             "    - {name: m, resources: [{name: memory, nominalQuota: 100Ei}]}\n");
    apply(c, LQ("a", "a"));
    apply(c, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: huge, "
             "namespace: ns}\nspec:\n  queueName: a\n  podSets:\n  - count: 1000000\n"
             "    template: {spec: {containers: [{name: c, image: x, resources: {requests: "
             "{memory: 8Ei}}}]}}\n");
    /* both sides saturate at the int64 ceiling: nothing wraps into a negative request */
    res = cycle(c);
    assert_int_equal(res->n_admitted + res->n_pending, 1);
    checked(c);
    fatia_control_free(c);
}

/* ---- fatia's preemption-loop guards (docs/control.md "Preemption loops") ---- */

#define FLV2                                                                               \
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f1}\n"     \
    "spec: {nodeLabels: {pool: f1}}\n",                                                    \
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f2}\n" \
        "spec: {nodeLabels: {pool: f2}}\n"
#define CQ2(name, n1, n2, extra)                                                           \
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: " name "}\n" \
    "spec:\n  namespaceSelector: {}\n  cohortName: co\n" extra "  resourceGroups:\n"       \
    "  - coveredResources: [cpu]\n    flavors:\n"                                          \
    "    - {name: f1, resources: [{name: cpu, nominalQuota: \"" n1 "\"}]}\n"               \
    "    - {name: f2, resources: [{name: cpu, nominalQuota: \"" n2 "\"}]}\n"
#define LQ2(name)                                                                  \
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: " name \
    ", namespace: ns}\nspec: {clusterQueue: " name "}\n"
/* a workload of 2 cpu, admitted in flavor `flv` when flv is not "" */
#define WL2(name, queue, prio, selector, flv, admitted)                                         \
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: " name                \
    ", namespace: ns, creationTimestamp: \"2026-01-01T00:00:00Z\"}\nspec:\n  queueName: " queue \
    "\n  priority: " prio                                                                       \
    "\n  podSets:\n  - name: main\n    count: 1\n    template: {spec: {" selector               \
    "containers: [{name: c, image: x, resources: {requests: {cpu: \"2\"}}}]}}\n" admitted
#define ADM(cq, flv)                                                                          \
    "status:\n  admission:\n    clusterQueue: " cq "\n    podSetAssignments: [{name: main, "  \
    "count: 1, flavors: {cpu: " flv "}, resourceUsage: {cpu: \"2\"}}]\n  conditions:\n"       \
    "  - {type: QuotaReserved, status: \"True\", reason: QuotaReserved, lastTransitionTime: " \
    "\"2026-01-01T00:00:01Z\"}\n"

static const struct fatia_control_result *cycle_at(struct fatia_control *c, int64_t now)
{
    const struct fatia_control_result *res;

    assert_int_equal(fatia_control_cycle(c, now, &res), 0);
    checked(c);
    return res;
}

/* A victim takes only free quota while the clock stands at its eviction (golden case 0064), and
 * preempts like anyone once it moves. */
static void test_victim_cooldown(void **state)
{
    static const char *const objs[] = {
        FLV2,
        CQ2("q", "2", "2",
            "  preemption: {withinClusterQueue: LowerPriority, "
            "reclaimWithinCohort: Any}\n"),
        CQ2("r", "0", "0", ""),
        LQ2("q"),
        LQ2("r"),
        WL2("v", "q", "5", "", "f1", ADM("q", "f1")),
        WL2("r1", "r", "0", "", "f2", ADM("r", "f2")),
        WL2("h", "q", "10", "nodeSelector: {pool: f1}, ", "", ""),
    };
    struct fatia_control *c;
    const struct fatia_control_result *res;

    (void)state;
    assert_int_equal(fatia_control_new(&c), 0);
    for (size_t i = 0; i < sizeof(objs) / sizeof(*objs); i++)
        apply(c, objs[i]);
    res = cycle_at(c, NOW);
    assert_int_equal(res->n_evicted, 1);
    assert_string_equal(res->evicted[0].key, "ns/v");
    assert_int_equal(fatia_control_release_all(c, NOW), 1);
    res = cycle_at(c, NOW);
    assert_int_equal(res->n_admitted, 1);
    assert_string_equal(res->admitted[0].key, "ns/h");
    res = cycle_at(c, NOW);
    assert_int_equal(res->n_evicted, 0); /* v preempts nobody at the instant it was preempted */
    /* v waits in the backoff list for its cooldown, and the driver is told when that ends */
    assert_false(fatia_control_has_work(c, NOW));
    assert_int_equal(fatia_control_next_wakeup(c), NOW + 1000000);
    assert_true(fatia_control_has_work(c, NOW + 1000000));
    /* one second later v reclaims f2 from r1, which borrows it */
    res = cycle_at(c, NOW + 1000000);
    assert_int_equal(res->n_evicted, 1);
    assert_string_equal(res->evicted[0].key, "ns/r1");
    assert_string_equal(res->evicted[0].reason, "InCohortReclamation");
    fatia_control_free(c);
}

/* Batched requeue (fatia_control_set_requeue_batch, Kueue's requeueBatchPeriod): capacity
 * events of a tree requeue its parked workloads one period after the first of them, all at
 * once; another tree's parked workloads stay parked. */
static void test_requeue_batched(void **state)
{
    static const char *const objs[] = {
        FLAVOR,
        CQ("a", "co", "4"),
        CQ("b", "co", "0"),
        CQ("d", "co2", "0"),
        LQ("a", "a"),
        LQ("b", "b"),
        LQ("d", "d"),
        WL("x1", "a", "2", "0"),
        WL("x2", "a", "2", "0"),
        WL("wz", "d", "1", "0"),
    };
    const int64_t S = 1000000;
    struct fatia_control *c;
    const struct fatia_control_result *res;

    (void)state;
    for (int batched = 0; batched < 2; batched++) {
        assert_int_equal(fatia_control_new(&c), 0);
        if (batched)
            fatia_control_set_requeue_batch(c, S);
        for (size_t i = 0; i < sizeof(objs) / sizeof(*objs); i++)
            apply(c, objs[i]);
        while (fatia_control_has_work(c, NOW))
            cycle_at(c, NOW); /* x1 and x2 fill the cohort; wz does not fit and is parked */
        assert_int_equal(fatia_control_workload_state(c, "ns", "x2"), FATIA_CONTROL_ADMITTED);
        apply(c, WL("wy", "b", "2", "0"));
        res = cycle_at(c, NOW);
        assert_int_equal(res->n_pending, 1); /* wy: parked */
        assert_false(fatia_control_has_work(c, NOW));
        assert_int_equal(fatia_control_workload_finished(c, "ns", "x1", NOW + S / 10), 0);
        if (!batched) {
            res = cycle_at(c, NOW + S / 10); /* at once: wy borrows x1's quota */
            assert_int_equal(res->n_admitted, 1);
            assert_string_equal(res->admitted[0].key, "ns/wy");
            fatia_control_free(c);
            continue;
        }
        assert_false(fatia_control_has_work(c, NOW + S / 10));
        assert_int_equal(fatia_control_next_wakeup(c), NOW + S / 10 + S);
        /* a second event of the tree joins the pending request, keeping its time */
        assert_int_equal(fatia_control_workload_finished(c, "ns", "x2", NOW + S / 2), 0);
        assert_int_equal(fatia_control_next_wakeup(c), NOW + S / 10 + S);
        res = cycle_at(c, NOW + S);
        assert_int_equal(res->n_heads, 0);
        assert_true(fatia_control_has_work(c, NOW + S / 10 + S));
        res = cycle_at(c, NOW + S / 10 + S);
        assert_int_equal(res->n_heads, 1); /* wy only: co2's wz stays parked */
        assert_int_equal(res->n_admitted, 1);
        assert_string_equal(res->admitted[0].key, "ns/wy");
        assert_int_equal(fatia_control_next_wakeup(c), INT64_MAX);
        assert_false(fatia_control_has_work(c, NOW + 10 * S));
        fatia_control_free(c);
    }
}

/* A preemptor is admitted with the flavors it preempted for, not the first flavor that
 * happens to be free when its victims are gone. */
static void test_preemptor_keeps_assignment(void **state)
{
    static const char *const objs[] = {
        FLV2,
        CQ2("q", "2", "2",
            "  preemption: {withinClusterQueue: LowerPriority}\n"
            "  flavorFungibility: {whenCanPreempt: TryNextFlavor}\n"),
        LQ2("q"),
        WL2("hi", "q", "20", "", "f1", ADM("q", "f1")),
        WL2("low", "q", "0", "", "f2", ADM("q", "f2")),
        WL2("p", "q", "10", "", "", ""),
    };
    struct fatia_control *c;
    const struct fatia_control_result *res;

    (void)state;
    assert_int_equal(fatia_control_new(&c), 0);
    for (size_t i = 0; i < sizeof(objs) / sizeof(*objs); i++)
        apply(c, objs[i]);
    res = cycle_at(c, NOW);
    assert_int_equal(res->n_evicted, 1);
    assert_string_equal(res->evicted[0].key, "ns/low");
    /* f1 frees up before the victim is gone */
    assert_int_equal(fatia_control_workload_finished(c, "ns", "hi", NOW), 0);
    assert_int_equal(fatia_control_release_all(c, NOW), 1);
    res = cycle_at(c, NOW);
    assert_int_equal(res->n_admitted, 1);
    assert_string_equal(res->admitted[0].key, "ns/p");
    assert_string_equal(res->admitted[0].podsets[0].v[0].flavor, "f2");
    /* and the victim takes the free f1 */
    res = cycle_at(c, NOW);
    assert_int_equal(res->n_admitted, 1);
    assert_string_equal(res->admitted[0].key, "ns/low");
    assert_string_equal(res->admitted[0].podsets[0].v[0].flavor, "f1");
    fatia_control_free(c);
}

/* The echo of a status write (the same ClusterQueue, with the status just written) and other
 * object events that change nothing leave the reported status as it was: the admission controller
 * compares it with the stored one and writes only a difference, so a status that moved with the
 * echo would be written again and again (weightedShare flipped between 500 and 0, hundreds of
 * writes a second, under starve.sh). A real change reports the share of the last clean tree until
 * the next cycle computes the new one. */
static void apply_echo(struct fatia_control *c, const char *yaml, const json_t *status)
{
    struct fatia_diag diag;
    struct fatia_object *o = NULL;
    json_t *root = NULL;
    char why[256];

    assert_int_equal(fatia_yaml_parse(yaml, strlen(yaml), &root, why, sizeof(why)), 0);
    fatia_diag_init(&diag);
    assert_int_equal(
        fatia_object_decode(root, &(struct fatia_decode_opts){0}, &fatia_demand_checks, &diag, &o),
        0);
    json_object_set_new(o->obj, "status", json_deep_copy(status));
    assert_int_equal(fatia_control_apply(c, o->obj, NOW, NULL), 0);
    fatia_object_free(o);
    fatia_diag_release(&diag);
    json_decref(root);
}

static void assert_cq_status(struct fatia_control *c, const char *cq, const json_t *want,
                             const char *after)
{
    json_t *st = NULL;

    assert_int_equal(fatia_control_cq_status(c, cq, NOW, &st), 0);
    if (!fatia_json_equal(st, want)) {
        char *a = json_dumps(want, JSON_COMPACT), *b = json_dumps(st, JSON_COMPACT);
        print_error("before: %s\nafter %s: %s\n", a, after, b);
        free(a);
        free(b);
        json_decref(st);
        fail_msg("ClusterQueue %s's status changed after %s", cq, after);
    }
    json_decref(st);
}

static void test_cq_status_stable(void **state)
{
    struct fatia_control *c;
    json_t *st0 = NULL, *st = NULL;

    (void)state;
    assert_int_equal(fatia_control_new(&c), 0);
    apply(c, FLAVOR);
    apply(c, CQ("a", "co", "4"));
    apply(c, CQ("b", "co", "4"));
    apply(c, LQ("a", "a"));
    apply(c, WL("w1", "a", "3", "0"));
    apply(c, WL("w2", "a", "3", "0"));
    apply(c, WL("w3", "a", "3", "0"));
    for (int i = 0; i < 4; i++)
        cycle(c);
    assert_int_equal(fatia_control_cq_status(c, "a", NOW, &st0), 0);
    assert_int_equal(json_integer_value(fatia_json_path(st0, "fairSharing.weightedShare")), 250);
    assert_int_equal(json_integer_value(json_object_get(st0, "pendingWorkloads")), 1);
    assert_cq_status(c, "a", st0, "a second call");
    /* the echo of the status write: the same spec, the status just written */
    apply_echo(c, CQ("a", "co", "4"), st0);
    assert_cq_status(c, "a", st0, "the echo of its status write");
    apply_echo(c, CQ("b", "co", "4"), st0);
    assert_cq_status(c, "a", st0, "the echo of the other ClusterQueue's status write");
    apply(c, LQ("a", "a"));
    apply(c, WL("w3", "a", "3", "0"));
    assert_cq_status(c, "a", st0, "a LocalQueue and a Workload event that change nothing");
    /* a cycle with nothing new to admit changes nothing either */
    cycle(c);
    assert_cq_status(c, "a", st0, "a quiet cycle");
    apply_echo(c, CQ("a", "co", "4"), st0);
    cycle(c);
    assert_cq_status(c, "a", st0, "an echo and a cycle");
    /* a real change (b lends 8 now): the last clean share until the cycle computes the new one,
     * never 0 */
    apply(c, CQ("b", "co", "8"));
    assert_cq_status(c, "a", st0, "a spec change, before the next cycle");
    cycle(c);
    assert_int_equal(fatia_control_cq_status(c, "a", NOW, &st), 0);
    /* w3 is admitted now (a uses 9); borrowed 5 of the 12 the cohort can lend: 5000 / 12 = 417 */
    assert_int_equal(json_integer_value(json_object_get(st, "admittedWorkloads")), 3);
    assert_int_equal(json_integer_value(fatia_json_path(st, "fairSharing.weightedShare")), 417);
    assert_cq_status(c, "a", st, "a second call after the change");
    apply_echo(c, CQ("a", "co", "4"), st);
    assert_cq_status(c, "a", st, "the echo of the new status");
    json_decref(st);
    json_decref(st0);
    fatia_control_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_any_order),
        cmocka_unit_test(test_status_blocks),
        cmocka_unit_test(test_weighted_share_625),
        cmocka_unit_test(test_eviction_takes_time),
        cmocka_unit_test(test_changes_between_cycles),
        cmocka_unit_test(test_v1beta1_and_config),
        cmocka_unit_test(test_saturation),
        cmocka_unit_test(test_victim_cooldown),
        cmocka_unit_test(test_requeue_batched),
        cmocka_unit_test(test_preemptor_keeps_assignment),
        cmocka_unit_test(test_cq_status_stable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
