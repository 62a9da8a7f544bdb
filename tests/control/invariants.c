/*
 * tests/control/invariants.c: long random sequences of engine operations, checking the engine's
 * invariants after every one of them.
 *
 * A seeded generator builds a random cluster (2-3 flavors; cpu, memory and a GPU resource; a
 * forest of cohorts, some hierarchical with their own quota, borrowing and lending limits; 4-12
 * ClusterQueues with random quotas, limits, preemption policies, flavor fungibility and
 * queueing strategies; fair sharing on or off) and then applies operations: submit a workload
 * (1-3 pod sets, random requests, counts, minCount, priority), run a cycle, finish or delete a
 * random workload, release the evictions, deactivate or reactivate a workload. Every generated
 * object goes through the model layer's decoder first, as real input does.
 *
 * After every operation: fatia_control_check (every node's usage is the sum of the admissions
 * below it, no workload admitted twice, each admission's usage equals its pod set assignments,
 * queue membership and heap order). Whenever no workload is being evicted, also the quota check:
 * no active ClusterQueue and no root cohort uses more than its quota tree allows. (While victims
 * are still stopping, a cycle may already have admitted another workload into the capacity they
 * will free, exactly as Kueue does, so the tree is over-committed by design until they go.) After
 * every cycle: its admissions are distinct, are held in the ClusterQueue the result names, and
 * every pod set's assignment covers what the pod set requests.
 *
 * Each new engine pair requeues inadmissible workloads at once or batched
 * (fatia_control_set_requeue_batch) over 3 or 50 clock steps, in turn.
 *
 * A twin engine with its caches off (fatia_control_set_caches: shares per node, formatted
 * amounts) gets the same operations, and every cycle's result (admissions with their flavors,
 * evictions with reasons and messages, pending workloads with their messages) must be the same
 * in both: the caches change the cost, never a decision.
 *
 * Usage: invariants OPS [SEED...]   (exit 1 on the first violation, with the seed and op number)
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "base/json.h"
#include "control/control.h"
#include "model/object.h"

static uint64_t rng;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int pick(int n)
{
    return (int)(rnd() % (uint64_t)n);
}

static bool chance(int percent)
{
    return pick(100) < percent;
}

static struct fatia_control *eng;
static struct fatia_control *ref; /* the twin without caches */
static uint64_t op_no, seed_now;
static int n_cqs, n_flavors;
static char wl_names[1 << 16][24];
static int n_wls;
static int64_t now = INT64_C(1767225600000000); /* 2026-01-01 */

static const char *const flavors[] = {"f0", "f1", "f2"};

static void die(const char *what, const char *why)
{
    fprintf(stderr, "invariants: seed %" PRIu64 " op %" PRIu64 ": %s: %s\n", seed_now, op_no, what,
            why);
    exit(1);
}

static void apply_json(json_t *root)
{
    struct fatia_diag diag;
    struct fatia_object *o = NULL;
    int r;

    fatia_diag_init(&diag);
    r = fatia_object_decode(root, &(struct fatia_decode_opts){0}, NULL, &diag, &o);
    if (r < 0) {
        char *t = json_dumps(root, JSON_COMPACT);
        fatia_diag_print(&diag, stderr);
        die("generated object does not validate", t ? t : "?");
    }
    r = fatia_control_apply(eng, o->obj, now, NULL);
    if (r < 0 || fatia_control_apply(ref, o->obj, now, NULL) != r)
        die("apply", "failed");
    fatia_object_free(o);
    fatia_diag_release(&diag);
    json_decref(root);
}

static json_t *quota_groups(bool cohort_ok, int scale)
{
    json_t *groups = json_array();
    /* one group of cpu+memory over 1-3 flavors, and one of the GPU over 1-2 flavors */
    for (int g = 0; g < 2; g++) {
        json_t *grp = json_object(), *cov = json_array(), *fls = json_array();
        int nf = g == 0 ? 1 + pick(n_flavors) : 1 + pick(2);
        int first = g == 0 ? 0 : 1;
        if (g == 0) {
            json_array_append_new(cov, json_string("cpu"));
            json_array_append_new(cov, json_string("memory"));
        } else {
            json_array_append_new(cov, json_string("example.com/gpu"));
        }
        for (int f = 0; f < nf && first + f < n_flavors + (g == 1); f++) {
            json_t *fl = json_object(), *rs = json_array();
            const char *fname = g == 0 ? flavors[f] : (f == 0 ? "gpu-a" : "gpu-b");
            (void)first;
            for (size_t k = 0; k < json_array_size(cov); k++) {
                const char *r = json_string_value(json_array_get(cov, k));
                json_t *q = json_object();
                char buf[32];
                int nominal = pick(8 * scale);
                snprintf(buf, sizeof(buf), strcmp(r, "memory") ? "%d" : "%dGi", nominal);
                json_object_set_new(q, "name", json_string(r));
                json_object_set_new(q, "nominalQuota", json_string(buf));
                if (cohort_ok && chance(30)) {
                    snprintf(buf, sizeof(buf), strcmp(r, "memory") ? "%d" : "%dGi",
                             pick(6 * scale));
                    json_object_set_new(q, "borrowingLimit", json_string(buf));
                }
                if (cohort_ok && chance(25)) {
                    snprintf(buf, sizeof(buf), strcmp(r, "memory") ? "%d" : "%dGi",
                             nominal ? pick(nominal + 1) : 0);
                    json_object_set_new(q, "lendingLimit", json_string(buf));
                }
                json_array_append_new(rs, q);
            }
            json_object_set_new(fl, "name", json_string(fname));
            json_object_set_new(fl, "resources", rs);
            json_array_append_new(fls, fl);
        }
        json_object_set_new(grp, "coveredResources", cov);
        json_object_set_new(grp, "flavors", fls);
        json_array_append_new(groups, grp);
    }
    return groups;
}

static void build_cluster(void)
{
    static const char *const within[] = {"Never", "LowerPriority", "LowerOrNewerEqualPriority"};
    static const char *const reclaim[] = {"Never", "LowerPriority", "Any"};
    int n_cohorts = 1 + pick(4);
    bool fair = chance(40);
    char name[32], parent[32];

    n_flavors = 2 + pick(2);
    n_cqs = 4 + pick(9);
    n_wls = 0;
    if (fair) {
        json_t *fs = json_object();
        if (chance(30))
            json_object_set_new(fs, "preemptionStrategies",
                                json_pack("[s]", chance(50) ? "LessThanInitialShare"
                                                            : "LessThanOrEqualToFinalShare"));
        apply_json(json_pack("{s:s,s:s,s:{s:s},s:{s:o,s:b}}", "apiVersion", "fatia.dev/v1alpha1",
                             "kind", "SchedulerConfig", "metadata", "name", "default", "spec",
                             "fairSharing", fs, "partialAdmission", chance(80)));
    }
    apply_json(json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata",
                         "name", "ns"));
    for (int f = 0; f < n_flavors; f++)
        apply_json(json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "kueue.x-k8s.io/v1beta2", "kind",
                             "ResourceFlavor", "metadata", "name", flavors[f]));
    apply_json(json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "kueue.x-k8s.io/v1beta2", "kind",
                         "ResourceFlavor", "metadata", "name", "gpu-a"));
    apply_json(json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "kueue.x-k8s.io/v1beta2", "kind",
                         "ResourceFlavor", "metadata", "name", "gpu-b"));
    for (int k = 0; k < n_cohorts; k++) {
        json_t *spec = json_object();
        bool has_parent = k > 0 && chance(50);
        snprintf(name, sizeof(name), "co%d", k);
        if (has_parent) {
            snprintf(parent, sizeof(parent), "co%d", pick(k));
            json_object_set_new(spec, "parentName", json_string(parent));
        }
        if (chance(50))
            json_object_set_new(spec, "resourceGroups", quota_groups(has_parent, 1));
        if (chance(30))
            json_object_set_new(spec, "fairSharing", json_pack("{s:s}", "weight", "2"));
        apply_json(json_pack("{s:s,s:s,s:{s:s},s:o}", "apiVersion", "kueue.x-k8s.io/v1beta2",
                             "kind", "Cohort", "metadata", "name", name, "spec", spec));
    }
    for (int q = 0; q < n_cqs; q++) {
        json_t *spec = json_object(), *pre = json_object();
        bool in_cohort = chance(85);
        int rc = pick(3);
        snprintf(name, sizeof(name), "cq%d", q);
        if (in_cohort) {
            snprintf(parent, sizeof(parent), "co%d", pick(n_cohorts));
            json_object_set_new(spec, "cohortName", json_string(parent));
        }
        json_object_set_new(spec, "namespaceSelector", json_object());
        json_object_set_new(spec, "resourceGroups", quota_groups(in_cohort, 2));
        json_object_set_new(spec, "queueingStrategy",
                            json_string(chance(30) ? "StrictFIFO" : "BestEffortFIFO"));
        json_object_set_new(pre, "withinClusterQueue", json_string(within[pick(3)]));
        json_object_set_new(pre, "reclaimWithinCohort", json_string(reclaim[rc]));
        if (rc && chance(40)) {
            json_t *bw = json_pack("{s:s}", "policy", "LowerPriority");
            if (chance(50))
                json_object_set_new(bw, "maxPriorityThreshold", json_integer(pick(5) - 2));
            json_object_set_new(pre, "borrowWithinCohort", bw);
        }
        json_object_set_new(spec, "preemption", pre);
        if (chance(40)) {
            json_t *fung = json_pack(
                "{s:s,s:s}", "whenCanBorrow", chance(50) ? "TryNextFlavor" : "MayStopSearch",
                "whenCanPreempt", chance(50) ? "TryNextFlavor" : "MayStopSearch");
            json_object_set_new(spec, "flavorFungibility", fung);
        }
        if (chance(20))
            json_object_set_new(spec, "fairSharing",
                                json_pack("{s:s}", "weight", chance(50) ? "0" : "3"));
        apply_json(json_pack("{s:s,s:s,s:{s:s},s:o}", "apiVersion", "kueue.x-k8s.io/v1beta2",
                             "kind", "ClusterQueue", "metadata", "name", name, "spec", spec));
        apply_json(json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s}}", "apiVersion",
                             "kueue.x-k8s.io/v1beta2", "kind", "LocalQueue", "metadata", "name",
                             name, "namespace", "ns", "spec", "clusterQueue", name));
    }
}

static json_t *workload_json(const char *name, int prio, bool active)
{
    json_t *podsets = json_array();
    int nps = 1 + (chance(20) ? pick(3) : 0);
    bool used_min = false;
    char ts[40], qn[32];

    for (int i = 0; i < nps; i++) {
        json_t *req = json_object();
        char buf[32], psn[16];
        int count = 1 + pick(4);
        json_t *ps;
        if (chance(90)) {
            if (chance(30))
                snprintf(buf, sizeof(buf), "%dm", 100 * (1 + pick(30)));
            else
                snprintf(buf, sizeof(buf), "%d", 1 + pick(4));
            json_object_set_new(req, "cpu", json_string(buf));
        }
        if (chance(50)) {
            snprintf(buf, sizeof(buf), "%dGi", 1 + pick(3));
            json_object_set_new(req, "memory", json_string(buf));
        }
        if (chance(40)) {
            snprintf(buf, sizeof(buf), "%d", 1 + pick(2));
            json_object_set_new(req, "example.com/gpu", json_string(buf));
        }
        snprintf(psn, sizeof(psn), "ps%d", i);
        ps = json_pack("{s:s,s:i,s:{s:{s:[{s:s,s:s,s:{s:o}}]}}}", "name", psn, "count", count,
                       "template", "spec", "containers", "name", "c", "image", "x", "resources",
                       "requests", req);
        if (!used_min && count > 1 && chance(25)) {
            json_object_set_new(ps, "minCount", json_integer(1 + pick(count)));
            used_min = true;
        }
        json_array_append_new(podsets, ps);
    }
    snprintf(qn, sizeof(qn), "cq%d", pick(n_cqs + (chance(3) ? 1 : 0)));
    fatia_time_format_rfc3339(now - INT64_C(1000000) * (int64_t)pick(1000), true, ts, sizeof(ts));
    return json_pack("{s:s,s:s,s:{s:s,s:s,s:s},s:{s:s,s:i,s:b,s:o}}", "apiVersion",
                     "kueue.x-k8s.io/v1beta2", "kind", "Workload", "metadata", "name", name,
                     "namespace", "ns", "creationTimestamp", ts, "spec", "queueName", qn,
                     "priority", prio, "active", active, "podSets", podsets);
}

/* ---- checks ---- */

static bool after_cycle; /* the last operation was a cycle */

static void check(bool quota)
{
    char why[512];
    struct fatia_control_stats st;
    int r;

    fatia_control_stats(eng, &st);
    r = fatia_control_check(eng,
                            (quota && st.evicting == 0 ? FATIA_CONTROL_CHECK_QUOTA : 0) |
                                (after_cycle ? FATIA_CONTROL_CHECK_REQUEUED : 0),
                            why, sizeof(why));
    if (r < 0)
        die("invariant", why);
}

static void check_result(const struct fatia_control_result *res)
{
    for (size_t i = 0; i < res->n_admitted; i++) {
        const struct fatia_control_admission *a = &res->admitted[i];
        json_t *st = NULL;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(res->admitted[j].key, a->key))
                die("admitted twice in one cycle", a->key);
        if (fatia_control_workload_status(eng, a->ns, a->name, &st) < 0)
            die("admitted workload unknown", a->key);
        if (strcmp(json_string_value(json_object_get(st, "state")), "Admitted") ||
            strcmp(json_string_value(fatia_json_path(st, "admission.clusterQueue")),
                   a->cluster_queue))
            die("admission not held where the result says", a->key);
        for (size_t p = 0; p < a->n_podsets; p++)
            if (a->podsets[p].count < 0)
                die("negative count", a->key);
        json_decref(st);
    }
}

/* A workload's status (its pending message included: the twin puts messages into words at
 * once, this engine when they are read) must be the twin's. */
static void same_status(const char *name)
{
    json_t *x = NULL, *y = NULL;
    int rx = fatia_control_workload_status(eng, "ns", name, &x);
    int ry = fatia_control_workload_status(ref, "ns", name, &y);

    if (rx != ry || (rx == 0 && !json_equal(x, y)))
        die("twin without caches: workload status differs", name);
    json_decref(x);
    json_decref(y);
}

/* ---- operations ---- */

static void op_submit(void)
{
    char name[24];

    if (n_wls >= (int)(sizeof(wl_names) / sizeof(wl_names[0])))
        return;
    snprintf(name, sizeof(name), "w%d", n_wls);
    snprintf(wl_names[n_wls++], sizeof(wl_names[0]), "%s", name);
    apply_json(workload_json(name, pick(5) - 2, true));
}

static const char *random_wl(void)
{
    for (int tries = 0; tries < 8 && n_wls; tries++) {
        const char *n = wl_names[pick(n_wls)];
        if (n[0])
            return n;
    }
    return NULL;
}

static void forget(const char *name)
{
    for (int i = 0; i < n_wls; i++)
        if (!strcmp(wl_names[i], name))
            wl_names[i][0] = '\0';
}

static void op_finish(void)
{
    const char *n = random_wl();
    char name[24];
    int st;

    if (!n || (st = fatia_control_workload_state(eng, "ns", n)) < 0)
        return;
    snprintf(name, sizeof(name), "%s", n);
    /* finish admitted ones, delete the others (a user cancels a pending job) */
    if (st == FATIA_CONTROL_ADMITTED || chance(30)) {
        if (fatia_control_workload_finished(eng, "ns", name, now) < 0 ||
            fatia_control_workload_finished(ref, "ns", name, now) < 0)
            die("finish", name);
        forget(name);
    }
}

static void op_release_all(void)
{
    if (fatia_control_release_all(eng, now) < 0 || fatia_control_release_all(ref, now) < 0)
        die("release", "failed");
}

static void op_toggle(void)
{
    const char *n = random_wl();

    if (!n)
        return;
    apply_json(workload_json(n, pick(5) - 2, chance(70)));
    same_status(n);
}

static bool str_eq(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

/* The twin's result must be the same decision for decision and message for message. */
static void same_result(const struct fatia_control_result *a, const struct fatia_control_result *b)
{
    if (a->n_admitted != b->n_admitted || a->n_evicted != b->n_evicted ||
        a->n_pending != b->n_pending)
        die("twin without caches", "a different number of decisions");
    for (size_t i = 0; i < a->n_admitted; i++) {
        const struct fatia_control_admission *x = &a->admitted[i], *y = &b->admitted[i];
        if (!str_eq(x->key, y->key) || !str_eq(x->cluster_queue, y->cluster_queue) ||
            x->borrowing != y->borrowing || x->n_podsets != y->n_podsets)
            die("twin without caches: admission differs", x->key);
        for (size_t p = 0; p < x->n_podsets; p++) {
            const struct fatia_control_podset *u = &x->podsets[p], *v = &y->podsets[p];
            if (u->count != v->count || u->n != v->n)
                die("twin without caches: pod set differs", x->key);
            for (size_t k = 0; k < u->n; k++)
                if (!str_eq(u->v[k].resource, v->v[k].resource) ||
                    !str_eq(u->v[k].flavor, v->v[k].flavor) || u->v[k].milli != v->v[k].milli)
                    die("twin without caches: flavor differs", x->key);
        }
    }
    for (size_t i = 0; i < a->n_evicted; i++) {
        const struct fatia_control_eviction *x = &a->evicted[i], *y = &b->evicted[i];
        if (!str_eq(x->key, y->key) || !str_eq(x->reason, y->reason) ||
            !str_eq(x->message, y->message) || !str_eq(x->preemptor, y->preemptor))
            die("twin without caches: eviction differs", x->key);
    }
    for (size_t i = 0; i < a->n_pending; i++) {
        const struct fatia_control_pending *x = &a->pending[i], *y = &b->pending[i];
        /* the twin puts messages into words at once, this engine only when they are read */
        char *mx = fatia_control_pending_message(eng, x),
             *my = fatia_control_pending_message(ref, y);
        if (!mx || !my)
            die("pending message", "out of memory");
        if (!str_eq(x->key, y->key) || !str_eq(x->cluster_queue, y->cluster_queue) ||
            !str_eq(x->reason, y->reason) || !str_eq(mx, my))
            die("twin without caches: pending differs", x->key);
        fatia_free(mx);
        fatia_free(my);
    }
}

static void op_cycle(void)
{
    const struct fatia_control_result *res, *res_ref;

    if (fatia_control_cycle(eng, now, &res) < 0 || fatia_control_cycle(ref, now, &res_ref) < 0)
        die("cycle", "failed");
    check_result(res);
    same_result(res, res_ref);
    now += 1000;
}

static void new_engines(void)
{
    /* requeue at once, or batched over 3 or 50 cycles (clock steps), in turn */
    static const int64_t batch[] = {0, 3000, 50000};
    static uint64_t n_engines;
    int64_t period = batch[(seed_now + n_engines++) % 3];

    if (fatia_control_new(&eng) < 0 || fatia_control_new(&ref) < 0)
        die("new", "out of memory");
    fatia_control_set_caches(ref, false);
    fatia_control_set_requeue_batch(eng, period);
    fatia_control_set_requeue_batch(ref, period);
}

static void run(uint64_t seed, uint64_t ops)
{
    seed_now = seed;
    rng = seed * 0x9E3779B97F4A7C15ULL + 1;
    new_engines();
    build_cluster();
    check(true);
    for (op_no = 0; op_no < ops; op_no++) {
        int p = pick(100);
        after_cycle = p >= 40 && p < 70;
        if (p < 40)
            op_submit();
        else if (p < 70)
            op_cycle();
        else if (p < 85)
            op_finish();
        else if (p < 95)
            op_release_all();
        else
            op_toggle();
        check(true);
        /* start over now and then: a fresh cluster shape */
        if (n_wls >= 4000) {
            fatia_control_free(eng);
            fatia_control_free(ref);
            new_engines();
            build_cluster();
        }
    }
    fatia_control_free(eng);
    fatia_control_free(ref);
    eng = ref = NULL;
}

int main(int argc, char **argv)
{
    uint64_t ops = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000;

    if (argc <= 2) {
        run(1, ops);
    } else {
        for (int i = 2; i < argc; i++)
            run(strtoull(argv[i], NULL, 10), ops);
    }
    printf("invariants: %" PRIu64 " operations per seed, all invariants held\n", ops);
    return 0;
}
